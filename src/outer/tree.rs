//! `tree`: the outer loop as a tree search over artifact sets (seed 001).
//!
//! A node is a set of active artifact versions with its measured per-task
//! losses. Each round picks parents from the frontier, writes up to `width`
//! distinct briefs (a parent and the one artifact to change — never the same
//! pair twice in a round), makes one child per brief with the proposer optimizer, checks
//! it before spending runs on it, evaluates it, and commits it only if it
//! beats its parent beyond noise without hurting the held-out tasks. A
//! committed child joins the frontier, so a good branch deepens on the next
//! round; a node whose three or more children all regressed is pruned. The
//! search stops after `stall` rounds without a new best, at the evaluation
//! budget, or when no brief is left.
//!
//! This module is the decision logic, free of I/O, so each rule is unit
//! tested; the runner (outer/mod.rs) evaluates nodes and stores the tree.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How parents are picked from the frontier.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Selection {
    /// Every node no other node beats on every training task: a specialist
    /// that is best on one task stays, even with a worse mean.
    #[default]
    Pareto,
    /// The node with the lowest mean loss only.
    Argmax,
    /// The `k` nodes with the lowest mean loss.
    TopK(usize),
    /// The best node, except with probability ε a random frontier node.
    EpsGreedy(f64),
}

/// The tree search's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeConfig {
    /// Children per round.
    pub width: usize,
    /// Rounds in a row without a new best after which the search stops.
    pub stall: u32,
    /// Evaluations of each child before it counts (more than 1 on noisy suites).
    pub verify_repeats: u32,
    pub selection: Selection,
    /// The smallest mean-loss improvement that counts when the repeats give
    /// no spread of their own.
    pub min_improvement: f64,
    /// Children after which a node whose children all regressed is pruned.
    pub prune_after: usize,
}

impl Default for TreeConfig {
    fn default() -> Self {
        TreeConfig {
            width: 3,
            stall: 3,
            verify_repeats: 1,
            selection: Selection::Pareto,
            min_improvement: 1e-9,
            prune_after: 3,
        }
    }
}

/// What happened to a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// On the frontier (or was, before a better descendant).
    Committed,
    /// Evaluated and not better than its parent.
    Discarded,
    /// Refused before evaluation (pre-verify).
    Rejected,
    /// Committed, then exhausted: all of its (three or more) children regressed.
    Pruned,
}

impl NodeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeStatus::Committed => "committed",
            NodeStatus::Discarded => "discarded",
            NodeStatus::Rejected => "rejected",
            NodeStatus::Pruned => "pruned",
        }
    }
}

/// A node as the search sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The store's id.
    pub id: i64,
    pub parent: Option<i64>,
    pub artifacts: BTreeMap<String, i64>,
    /// Mean loss of each training task over the node's evaluations.
    pub task_losses: BTreeMap<String, f64>,
    pub mean: f64,
    pub holdout_mean: Option<f64>,
    /// Per-evaluation mean losses (more than one with verify repeats).
    pub samples: Vec<f64>,
    pub status: NodeStatus,
}

/// One child to make: change `focus` starting from `parent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brief {
    pub parent: i64,
    pub focus: String,
}

/// The frontier: committed nodes, minus pruned ones, picked by `selection`,
/// best mean first.
pub fn frontier(nodes: &[Node], selection: Selection, u: f64) -> Vec<&Node> {
    let mut live: Vec<&Node> = nodes.iter().filter(|n| n.status == NodeStatus::Committed).collect();
    live.sort_by(|a, b| a.mean.total_cmp(&b.mean).then(a.id.cmp(&b.id)));
    match selection {
        Selection::Argmax => live.into_iter().take(1).collect(),
        Selection::TopK(k) => live.into_iter().take(k.max(1)).collect(),
        Selection::EpsGreedy(eps) => {
            // `u` in [0, 1) is the caller's random draw, so the choice replays.
            if live.len() > 1 && u < eps {
                let i = 1 + ((u / eps.max(f64::MIN_POSITIVE)) * (live.len() - 1) as f64) as usize;
                vec![live[i.min(live.len() - 1)]]
            } else {
                live.into_iter().take(1).collect()
            }
        }
        Selection::Pareto => {
            let dominated = |n: &Node| live.iter().any(|o| o.id != n.id && dominates(o, n));
            live.iter().copied().filter(|n| !dominated(n)).collect()
        }
    }
}

/// `a` is at least as good as `b` on every task and better on one.
pub fn dominates(a: &Node, b: &Node) -> bool {
    let mut better = false;
    for (task, lb) in &b.task_losses {
        let Some(la) = a.task_losses.get(task) else { return false };
        if la > lb {
            return false;
        }
        better |= la < lb;
    }
    better
}

/// Up to `width` briefs for one round, round-robin over the parents, each
/// parent taking the next artifact in order. No two briefs of a round share
/// their parent and focus (the non-overlap rule); a later round may try the
/// same pair again, from new evidence.
pub fn write_briefs(parents: &[&Node], candidates: &[String], width: usize) -> Vec<Brief> {
    let mut briefs = Vec::new();
    for k in 0..candidates.len() {
        for (pi, p) in parents.iter().enumerate() {
            if briefs.len() >= width {
                return briefs;
            }
            // Parents start at different artifacts so a round spreads its focus.
            let focus = candidates[(k + pi) % candidates.len()].clone();
            let brief = Brief { parent: p.id, focus };
            if !briefs.contains(&brief) {
                briefs.push(brief);
            }
        }
    }
    briefs
}

/// Checks a child's new artifact content before any run is spent on it:
/// content that quotes a held-out task (its name or its text) would let the
/// optimizer teach to the test. Returns the reason to reject.
pub fn pre_verify(content: &str, holdout_texts: &[String]) -> Option<String> {
    let lower = content.to_lowercase();
    holdout_texts
        .iter()
        .filter(|t| t.trim().chars().count() >= 6)
        .find(|t| lower.contains(&t.trim().to_lowercase()))
        .map(|t| format!("the content quotes held-out task text `{}`", t.chars().take(60).collect::<String>()))
}

/// How a child compares with its parent.
#[derive(Debug, Clone, PartialEq)]
pub enum Judgement {
    Commit,
    /// Not better beyond noise, or held-out worse: why.
    Discard(String),
}

/// Commits a child only if its mean loss beats the parent's by more than the
/// noise (the standard error of the child's repeats, at least
/// `min_improvement`) and its held-out mean does not rise beyond
/// `holdout_tolerance`.
pub fn judge(parent: &Node, child: &Node, min_improvement: f64, holdout_tolerance: f64) -> Judgement {
    let noise = standard_error(&child.samples).max(standard_error(&parent.samples)).max(min_improvement);
    let gain = parent.mean - child.mean;
    if gain <= 0.0 {
        return Judgement::Discard(format!(
            "mean loss {:.4} is no better than the parent's {:.4} ({:+.4})",
            child.mean, parent.mean, -gain
        ));
    }
    if gain <= noise {
        return Judgement::Discard(format!(
            "mean loss {:.4} against the parent's {:.4}: a gain of {gain:+.4} is within the noise ({noise:.4})",
            child.mean, parent.mean
        ));
    }
    if let (Some(c), Some(p)) = (child.holdout_mean, parent.holdout_mean)
        && c > p + holdout_tolerance
    {
        return Judgement::Discard(format!("held-out mean rose from {p:.4} to {c:.4}"));
    }
    Judgement::Commit
}

fn standard_error(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (var / n).sqrt()
}

/// Committed nodes to prune: `prune_after` or more children, every one of
/// them discarded (none committed, none still to judge).
pub fn exhausted(nodes: &[Node], prune_after: usize) -> Vec<i64> {
    nodes
        .iter()
        .filter(|n| n.status == NodeStatus::Committed)
        .filter(|n| {
            let children: Vec<&Node> = nodes.iter().filter(|c| c.parent == Some(n.id)).collect();
            children.len() >= prune_after.max(1) && children.iter().all(|c| c.status == NodeStatus::Discarded)
        })
        .map(|n| n.id)
        .collect()
}

/// The best committed (or pruned: it was once the best) node by mean loss.
pub fn best(nodes: &[Node]) -> Option<&Node> {
    nodes
        .iter()
        .filter(|n| matches!(n.status, NodeStatus::Committed | NodeStatus::Pruned))
        .min_by(|a, b| a.mean.total_cmp(&b.mean).then(a.id.cmp(&b.id)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn node(id: i64, parent: Option<i64>, losses: &[(&str, f64)], status: NodeStatus) -> Node {
        let task_losses: BTreeMap<String, f64> = losses.iter().map(|(t, l)| (t.to_string(), *l)).collect();
        let mean = task_losses.values().sum::<f64>() / task_losses.len().max(1) as f64;
        Node {
            id,
            parent,
            artifacts: BTreeMap::new(),
            task_losses,
            mean,
            holdout_mean: None,
            samples: vec![mean],
            status,
        }
    }

    #[test]
    fn pareto_keeps_a_specialist_that_is_best_on_one_task_despite_a_worse_mean() {
        let nodes = vec![
            node(1, None, &[("a", 0.3), ("b", 0.3)], NodeStatus::Committed),
            // Worse mean, but the best on `a`.
            node(2, Some(1), &[("a", 0.1), ("b", 0.9)], NodeStatus::Committed),
            // Dominated by 1 on both tasks.
            node(3, Some(1), &[("a", 0.4), ("b", 0.35)], NodeStatus::Committed),
        ];
        let ids: Vec<i64> = frontier(&nodes, Selection::Pareto, 0.0).iter().map(|n| n.id).collect();
        assert_eq!(ids, vec![1, 2]);
        let argmax: Vec<i64> = frontier(&nodes, Selection::Argmax, 0.0).iter().map(|n| n.id).collect();
        assert_eq!(argmax, vec![1], "argmax would lose the specialist");
        let top2: Vec<i64> = frontier(&nodes, Selection::TopK(2), 0.0).iter().map(|n| n.id).collect();
        assert_eq!(top2, vec![1, 3]);
    }

    #[test]
    fn eps_greedy_mostly_takes_the_best_and_sometimes_another_frontier_node() {
        let nodes = vec![
            node(1, None, &[("a", 0.2)], NodeStatus::Committed),
            node(2, None, &[("a", 0.5)], NodeStatus::Committed),
            node(3, None, &[("a", 0.9)], NodeStatus::Committed),
        ];
        assert_eq!(frontier(&nodes, Selection::EpsGreedy(0.2), 0.5)[0].id, 1);
        let explored: BTreeSet<i64> =
            [0.01, 0.15, 0.19].iter().map(|u| frontier(&nodes, Selection::EpsGreedy(0.2), *u)[0].id).collect();
        assert!(explored.iter().all(|id| *id != 1), "{explored:?}");
    }

    #[test]
    fn pruned_and_discarded_nodes_leave_the_frontier() {
        let nodes = vec![
            node(1, None, &[("a", 0.5)], NodeStatus::Pruned),
            node(2, Some(1), &[("a", 0.1)], NodeStatus::Discarded),
            node(3, Some(1), &[("a", 0.6)], NodeStatus::Committed),
        ];
        let ids: Vec<i64> = frontier(&nodes, Selection::Pareto, 0.0).iter().map(|n| n.id).collect();
        assert_eq!(ids, vec![3]);
    }

    #[test]
    fn the_briefs_of_a_round_never_share_a_parent_and_focus() {
        let nodes =
            [node(1, None, &[("a", 0.5)], NodeStatus::Committed), node(2, None, &[("a", 0.6)], NodeStatus::Committed)];
        let parents: Vec<&Node> = nodes.iter().collect();
        let cands = vec!["x".to_string(), "y".to_string()];
        let briefs = write_briefs(&parents, &cands, 5);
        assert_eq!(briefs.len(), 4, "two parents × two artifacts; width 5 does not pad with repeats: {briefs:?}");
        let pairs: BTreeSet<(i64, String)> = briefs.iter().map(|b| (b.parent, b.focus.clone())).collect();
        assert_eq!(pairs.len(), 4);
        assert_ne!(briefs[0].focus, briefs[1].focus, "the first two briefs attack different artifacts");
        let one = write_briefs(&parents[..1], &cands, 3);
        assert_eq!(one, vec![Brief { parent: 1, focus: "x".into() }, Brief { parent: 1, focus: "y".into() }]);
    }

    #[test]
    fn a_gain_inside_the_noise_of_the_repeats_is_not_committed() {
        let parent = node(1, None, &[("a", 0.50)], NodeStatus::Committed);
        let mut child = node(2, Some(1), &[("a", 0.47)], NodeStatus::Committed);
        child.samples = vec![0.40, 0.54, 0.47];
        assert!(matches!(judge(&parent, &child, 1e-9, 0.01), Judgement::Discard(r) if r.contains("within the noise")));
        child.samples = vec![0.469, 0.471, 0.470];
        assert_eq!(judge(&parent, &child, 1e-9, 0.01), Judgement::Commit);
    }

    #[test]
    fn a_child_that_hurts_the_held_out_tasks_is_not_committed() {
        let mut parent = node(1, None, &[("a", 0.5)], NodeStatus::Committed);
        let mut child = node(2, Some(1), &[("a", 0.3)], NodeStatus::Committed);
        parent.holdout_mean = Some(0.2);
        child.holdout_mean = Some(0.4);
        assert!(matches!(judge(&parent, &child, 1e-9, 0.01), Judgement::Discard(r) if r.contains("held-out")));
    }

    #[test]
    fn a_node_whose_three_children_all_regressed_is_exhausted() {
        let mut nodes = vec![node(1, None, &[("a", 0.5)], NodeStatus::Committed)];
        for id in 2..=3 {
            nodes.push(node(id, Some(1), &[("a", 0.6)], NodeStatus::Discarded));
        }
        assert!(exhausted(&nodes, 3).is_empty(), "two children are not enough");
        nodes.push(node(4, Some(1), &[("a", 0.7)], NodeStatus::Discarded));
        assert_eq!(exhausted(&nodes, 3), vec![1]);
        nodes.push(node(5, Some(1), &[("a", 0.4)], NodeStatus::Committed));
        assert!(exhausted(&nodes, 3).is_empty(), "one child improved: not exhausted");
    }

    #[test]
    fn pre_verify_rejects_content_that_quotes_a_held_out_task() {
        let held = vec!["Score the knobs against gain 2.2".to_string(), "delta".to_string()];
        assert!(pre_verify("Prefer gain 2.0.", &held).is_none());
        assert!(pre_verify("Hint: SCORE THE KNOBS AGAINST GAIN 2.2, always", &held).is_some());
        assert!(pre_verify("mentions delta only", &held).is_none(), "names under six characters are too common");
    }
}
