//! The tree search's analyst (seed 001's concurrent observer, the auditor of
//! the experiment tree): after every round it reads the tree and says where
//! the next briefs should not go.
//!
//! It is read-only and pure — nodes in, hints out, nothing stored or changed
//! here — so the runner can call it as often as it likes and every rule is
//! a unit test. Two hints:
//!
//! - a **dead direction**: one parent and one artifact whose children, at
//!   least `dead_after` of them, all failed (discarded as no better, or
//!   rejected before evaluation). Brief writing never picks that pair again;
//!   the same artifact from another parent is still open.
//! - a **saturated axis**: an artifact whose last `saturation_window`
//!   evaluated changes, from any parent, each gained at most `plateau` mean
//!   loss over their parent (seed 001's plateau: structurally different
//!   attempts all landing at about the same score). Brief writing moves it
//!   after every other artifact: the gain is likely elsewhere.
//!
//! The hints' text goes into the proposer's calls for that artifact, with
//! the rationales of the attempts that did not pay, so the model does not
//! propose them again. The text only uses what a model may see: training
//! losses and each node's prompt-safe feedback, never held-out scores.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::tree::{Node, NodeStatus};

/// The analyst's thresholds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalystConfig {
    /// Failed children of one parent and artifact that make it a dead
    /// direction (seed 001 counts a lineage exhausted at three).
    pub dead_after: usize,
    /// Recent evaluated changes of an artifact that must all have stalled
    /// before it counts as saturated (seed 001: three attempts on a plateau).
    pub saturation_window: usize,
    /// The largest mean-loss gain over its parent that still counts as "no
    /// longer improving".
    pub plateau: f64,
}

impl Default for AnalystConfig {
    fn default() -> Self {
        AnalystConfig { dead_after: 3, saturation_window: 3, plateau: 0.01 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HintKind {
    SaturatedAxis,
    DeadDirection,
}

impl HintKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HintKind::SaturatedAxis => "saturated_axis",
            HintKind::DeadDirection => "dead_direction",
        }
    }
}

/// One thing the analyst noticed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hint {
    pub kind: HintKind,
    pub artifact: String,
    /// The parent of a dead direction.
    pub parent: Option<i64>,
    /// What the proposer is told.
    pub text: String,
}

impl Hint {
    /// What makes a hint the same one in a later round (for storing it once).
    pub fn key(&self) -> (HintKind, String, Option<i64>) {
        (self.kind, self.artifact.clone(), self.parent)
    }
}

/// Reads the tree; dead directions first, then saturated axes, each in a
/// stable order.
pub fn analyse(nodes: &[Node], cfg: &AnalystConfig) -> Vec<Hint> {
    let by_id: BTreeMap<i64, &Node> = nodes.iter().map(|n| (n.id, n)).collect();
    let mut hints = Vec::new();

    let mut pairs: BTreeMap<(i64, &str), Vec<&Node>> = BTreeMap::new();
    for n in nodes {
        if let (Some(p), Some(f)) = (n.parent, n.focus.as_deref()) {
            pairs.entry((p, f)).or_default().push(n);
        }
    }
    for ((parent, artifact), children) in &pairs {
        let failed = |c: &&&Node| matches!(c.status, NodeStatus::Discarded | NodeStatus::Rejected);
        if children.len() < cfg.dead_after.max(1) || !children.iter().all(|c| failed(&c)) {
            continue;
        }
        let rejected = children.iter().filter(|c| c.status == NodeStatus::Rejected).count();
        let mut text = format!(
            "Dead direction: changing `{artifact}` from node {parent} failed {} times ({} no better than the parent, {rejected} rejected before evaluation); do not repeat these attempts:",
            children.len(),
            children.len() - rejected,
        );
        for c in children {
            text.push_str(&format!("\n  - {}", attempt(c)));
        }
        hints.push(Hint { kind: HintKind::DeadDirection, artifact: artifact.to_string(), parent: Some(*parent), text });
    }

    let mut by_focus: BTreeMap<&str, Vec<&Node>> = BTreeMap::new();
    for n in nodes.iter().filter(|n| n.evaluated() && n.parent.is_some()) {
        if let Some(f) = n.focus.as_deref() {
            by_focus.entry(f).or_default().push(n);
        }
    }
    let window = cfg.saturation_window.max(1);
    for (artifact, mut changes) in by_focus {
        if changes.len() < window {
            continue;
        }
        changes.sort_by_key(|n| n.id);
        let recent = &changes[changes.len() - window..];
        let gain = |n: &Node| {
            // A discarded change was not kept: whatever it measured, it gained nothing.
            if !n.kept() {
                return 0.0;
            }
            n.parent.and_then(|p| by_id.get(&p)).map_or(0.0, |p| p.mean - n.mean)
        };
        let best_gain = recent.iter().map(|n| gain(n)).fold(f64::NEG_INFINITY, f64::max);
        if best_gain > cfg.plateau {
            continue;
        }
        let mut text = format!(
            "Saturated axis: the last {window} changes to `{artifact}` each gained at most {:.4} mean loss (plateau {:.4}); the gain is likely elsewhere. If you change it, change it differently from:",
            best_gain.max(0.0),
            cfg.plateau
        );
        for c in recent {
            text.push_str(&format!("\n  - {}", attempt(c)));
        }
        hints.push(Hint { kind: HintKind::SaturatedAxis, artifact: artifact.to_string(), parent: None, text });
    }
    hints
}

/// One attempt in a hint: what it tried and how it fared, prompt-safe.
fn attempt(n: &Node) -> String {
    let tried = n.rationale.as_deref().filter(|r| !r.trim().is_empty()).map_or("(no rationale)", str::trim);
    let fared = n.feedback.as_deref().unwrap_or(match n.status {
        NodeStatus::Rejected => "rejected before evaluation",
        NodeStatus::Discarded => "no better than its parent",
        _ => "kept",
    });
    let tried: String = tried.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(240).collect();
    format!("node {}: {tried} — {fared}", n.id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outer::tree::tests::node;

    fn child(id: i64, parent: i64, focus: &str, loss: f64, status: NodeStatus) -> Node {
        let mut n = node(id, Some(parent), &[("a", loss)], status);
        n.focus = Some(focus.into());
        n.rationale = Some(format!("attempt {id}"));
        n
    }

    #[test]
    fn a_parent_and_artifact_whose_children_all_failed_is_a_dead_direction() {
        let mut nodes = vec![node(1, None, &[("a", 0.5)], NodeStatus::Committed)];
        nodes.push(child(2, 1, "x", 0.6, NodeStatus::Discarded));
        nodes.push(child(3, 1, "x", 0.5, NodeStatus::Rejected));
        let cfg = AnalystConfig { dead_after: 3, ..AnalystConfig::default() };
        assert!(analyse(&nodes, &cfg).iter().all(|h| h.kind != HintKind::DeadDirection), "two are not enough");
        nodes.push(child(4, 1, "x", 0.7, NodeStatus::Discarded));
        // Another artifact from the same parent, with one success, stays open.
        nodes.push(child(5, 1, "y", 0.6, NodeStatus::Discarded));
        nodes.push(child(6, 1, "y", 0.6, NodeStatus::Discarded));
        nodes.push(child(7, 1, "y", 0.4, NodeStatus::Committed));
        let dead: Vec<Hint> = analyse(&nodes, &cfg).into_iter().filter(|h| h.kind == HintKind::DeadDirection).collect();
        assert_eq!(dead.len(), 1, "{dead:#?}");
        assert_eq!((dead[0].artifact.as_str(), dead[0].parent), ("x", Some(1)));
        let text = &dead[0].text;
        assert!(text.contains("failed 3 times (2 no better than the parent, 1 rejected"), "{text}");
        assert!(text.contains("attempt 2") && text.contains("attempt 4"), "the failed attempts are named: {text}");
    }

    #[test]
    fn an_artifact_whose_recent_changes_stopped_paying_is_a_saturated_axis() {
        let mut nodes = vec![node(1, None, &[("a", 0.5)], NodeStatus::Committed)];
        // A real gain, then three changes that gained at most 0.005.
        nodes.push(child(2, 1, "x", 0.3, NodeStatus::Committed));
        nodes.push(child(3, 2, "x", 0.295, NodeStatus::Committed));
        nodes.push(child(4, 3, "x", 0.31, NodeStatus::Discarded));
        let cfg = AnalystConfig::default();
        assert!(
            analyse(&nodes, &cfg).iter().all(|h| h.kind != HintKind::SaturatedAxis),
            "the window still holds the real gain"
        );
        nodes.push(child(5, 3, "x", 0.2, NodeStatus::Discarded));
        let hints = analyse(&nodes, &cfg);
        let sat: Vec<&Hint> = hints.iter().filter(|h| h.kind == HintKind::SaturatedAxis).collect();
        assert_eq!(sat.len(), 1, "{hints:#?}");
        assert_eq!(sat[0].artifact, "x");
        assert!(sat[0].text.contains("gained at most 0.0050"), "{}", sat[0].text);
        // A discarded child (node 5 measured lower, but was not kept) gained nothing.
        assert!(sat[0].text.contains("node 5: attempt 5"), "{}", sat[0].text);

        // A fresh gain on the axis ends the plateau.
        nodes.push(child(6, 3, "x", 0.2, NodeStatus::Committed));
        assert!(analyse(&nodes, &cfg).iter().all(|h| h.kind != HintKind::SaturatedAxis));
    }

    #[test]
    fn rejected_children_count_toward_a_dead_direction_but_not_toward_a_plateau() {
        let mut nodes = vec![node(1, None, &[("a", 0.5)], NodeStatus::Committed)];
        for id in 2..=4 {
            nodes.push(child(id, 1, "x", 0.5, NodeStatus::Rejected));
        }
        let hints = analyse(&nodes, &AnalystConfig::default());
        assert_eq!(hints.len(), 1);
        assert_eq!(hints[0].kind, HintKind::DeadDirection);
    }
}
