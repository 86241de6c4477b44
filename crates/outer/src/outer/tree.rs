//! `tree`: the outer loop as a tree search over artifact sets (seed 001).
//!
//! A node is a set of active artifact versions with its measured per-task
//! losses. Each round picks parents from the frontier, writes up to `width`
//! distinct briefs (a parent and the one artifact to change — never the same
//! pair twice in a round), makes one child per brief with the proposer
//! optimizer, checks it before spending runs on it ([`super::preverify`]),
//! evaluates it, and commits it only if it beats its parent beyond noise
//! without hurting the held-out tasks. A committed child becomes the parent
//! of the brief's next child at once, up to `branch_depth` children a brief,
//! and joins the frontier; a node whose three or more children all regressed
//! is pruned.
//!
//! Two readers steer the briefs. The analyst ([`super::analyst`]) reads the
//! tree after every round: a *dead direction* (a parent and artifact whose
//! children all failed) is not briefed again, a *saturated axis* (an
//! artifact whose recent changes stopped paying) goes last. Ideation
//! ([`super::ideation`]) runs when the search is about to stop on stall: its
//! best proposals become the first briefs of the next round. The search
//! stops after `stall` rounds without a new best once its ideation rounds
//! brought none either, at the evaluation budget, or when no brief is left.
//!
//! This module is the decision logic, free of I/O, so each rule is unit
//! tested; the runner (outer/tree_run.rs) evaluates nodes and stores the tree.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::analyst::{AnalystConfig, Hint, HintKind};
use super::ideation::Idea;
use super::noise::{self, Gain};
use crate::loss::paired::PairedEvidence;

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
    /// Rounds in a row without a new best after which the search stops
    /// (once its ideation rounds brought no new best either).
    pub stall: u32,
    pub selection: Selection,
    /// The smallest mean-loss improvement that counts when the repeats give
    /// no spread of their own.
    pub min_improvement: f64,
    /// Children after which a node whose children all regressed is pruned.
    pub prune_after: usize,
    /// Ideation calls (and the round they feed) per stall episode before the
    /// search gives up; 0 turns ideation off. Seed 001 ideates once per
    /// stall episode. Needs a model.
    pub ideation_rounds: u32,
    /// Ideation proposals that become briefs of the next round (seed 001:
    /// "the top 1-2"); the rest of the width is briefed as usual.
    pub ideation_briefs: usize,
    pub analyst: AnalystConfig,
    /// Children one brief may make in a round (seed 001's per-branch
    /// budget): each child that is committed becomes the parent of the next,
    /// with the same focus, so a branch that keeps improving deepens at once
    /// instead of waiting for the next round. 1 makes one child per brief.
    #[serde(default = "default_branch_depth")]
    pub branch_depth: u32,
}

fn default_branch_depth() -> u32 {
    5
}

impl Default for TreeConfig {
    fn default() -> Self {
        TreeConfig {
            width: 3,
            stall: 3,
            selection: Selection::Pareto,
            min_improvement: 1e-9,
            prune_after: 3,
            ideation_rounds: 1,
            ideation_briefs: 2,
            analyst: AnalystConfig::default(),
            branch_depth: default_branch_depth(),
        }
    }
}

/// What happened to a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
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
    /// The status as stored; `None` for text this version does not know.
    pub fn parse(s: &str) -> Option<NodeStatus> {
        match s {
            "committed" => Some(NodeStatus::Committed),
            "discarded" => Some(NodeStatus::Discarded),
            "pruned" => Some(NodeStatus::Pruned),
            "rejected" => Some(NodeStatus::Rejected),
            _ => None,
        }
    }

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
    /// The artifact it changed against its parent (`None` for a root).
    pub focus: Option<String>,
    /// The round that made it (0: the root).
    pub round: u32,
    /// The proposer's rationale for the change (evaluated nodes only).
    pub rationale: Option<String>,
    /// What a model may be told about how the change fared: never held-out
    /// text or scores, never the text a pre-verify finding quoted.
    pub feedback: Option<String>,
}

impl Node {
    /// A node that evaluated (as opposed to one rejected before any run).
    pub fn evaluated(&self) -> bool {
        self.status != NodeStatus::Rejected
    }

    /// Kept: committed, or committed and later pruned.
    pub fn kept(&self) -> bool {
        matches!(self.status, NodeStatus::Committed | NodeStatus::Pruned)
    }
}

/// One child to make: change `focus` starting from `parent`.
#[derive(Debug, Clone, PartialEq)]
pub struct Brief {
    pub parent: i64,
    pub focus: String,
    /// The ideation proposal this brief follows, if any.
    pub idea: Option<Idea>,
}

impl Brief {
    /// A brief from the usual rotation, without an ideation proposal.
    pub fn plain(parent: i64, focus: impl Into<String>) -> Brief {
        Brief { parent, focus: focus.into(), idea: None }
    }

    fn same_direction(&self, parent: i64, focus: &str) -> bool {
        self.parent == parent && self.focus == focus
    }
}

/// What steers a round's briefs besides the frontier: the analyst's hints
/// and the ranked ideation proposals.
#[derive(Debug, Clone, Default)]
pub struct Steering<'a> {
    pub hints: &'a [Hint],
    /// Best first (see [`super::ideation::rank`]).
    pub ideas: &'a [Idea],
    /// How many ideas may become briefs.
    pub max_idea_briefs: usize,
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

/// Up to `width` briefs for one round. The best ideation proposals come
/// first (from the parent they name when it is on the frontier, else from the
/// first frontier parent that may still take that artifact); then the usual
/// rotation, round-robin over the parents, each parent taking the next
/// artifact in order, saturated artifacts last. No two briefs of a round
/// share their parent and focus (the non-overlap rule), and a dead direction
/// is never briefed; a later round may try a live pair again, from new
/// evidence.
pub fn write_briefs(parents: &[&Node], candidates: &[String], width: usize, steering: &Steering) -> Vec<Brief> {
    let dead: BTreeSet<(i64, &str)> = steering
        .hints
        .iter()
        .filter(|h| h.kind == HintKind::DeadDirection)
        .filter_map(|h| Some((h.parent?, h.artifact.as_str())))
        .collect();
    let saturated: BTreeSet<&str> =
        steering.hints.iter().filter(|h| h.kind == HintKind::SaturatedAxis).map(|h| h.artifact.as_str()).collect();
    let open = |briefs: &[Brief], parent: i64, focus: &str| {
        !dead.contains(&(parent, focus)) && !briefs.iter().any(|b| b.same_direction(parent, focus))
    };

    let mut briefs: Vec<Brief> = Vec::new();
    for idea in steering.ideas.iter().take(steering.max_idea_briefs) {
        if briefs.len() >= width {
            return briefs;
        }
        if !candidates.contains(&idea.artifact) {
            continue;
        }
        let named = idea.parent.and_then(|id| parents.iter().find(|p| p.id == id));
        let parent = named.into_iter().chain(parents.iter()).find(|p| open(&briefs, p.id, &idea.artifact));
        if let Some(p) = parent {
            briefs.push(Brief { parent: p.id, focus: idea.artifact.clone(), idea: Some(idea.clone()) });
        }
    }

    // Every live pair on a fresh artifact before any on a saturated one.
    let (fresh, tired): (Vec<&String>, Vec<&String>) = candidates.iter().partition(|c| !saturated.contains(c.as_str()));
    for group in [fresh, tired] {
        for k in 0..group.len() {
            for (pi, p) in parents.iter().enumerate() {
                if briefs.len() >= width {
                    return briefs;
                }
                // Parents start at different artifacts so a round spreads its focus.
                let focus = group[(k + pi) % group.len()];
                if open(&briefs, p.id, focus) {
                    briefs.push(Brief::plain(p.id, focus.clone()));
                }
            }
        }
    }
    briefs
}

/// How a child compares with its parent.
#[derive(Debug, Clone, PartialEq)]
pub enum Judgement {
    Commit,
    /// Not better beyond noise: why (training losses only).
    Discard(String),
    /// Better on training, worse on the held-out tasks: why (with held-out
    /// numbers — for people, never for a model).
    HeldOutWorse(String),
}

/// Commits a child only if its mean loss beats the parent's beyond the
/// noise ([`noise::beyond_noise`]; with repeated evaluations, also task by
/// task: [`noise::judge`]) and its held-out mean does not rise beyond
/// `holdout_tolerance`. A discard's reason states the paired evidence.
pub fn judge(parent: &Node, child: &Node, min_improvement: f64, holdout_tolerance: f64) -> Judgement {
    judge_on(parent, child, paired(parent, child).as_ref(), min_improvement, holdout_tolerance)
}

/// [`judge`] with the pairs' evidence already drawn ([`paired`]), for a
/// caller that keeps it.
pub fn judge_on(
    parent: &Node,
    child: &Node,
    evidence: Option<&PairedEvidence>,
    min_improvement: f64,
    holdout_tolerance: f64,
) -> Judgement {
    let repeated = parent.samples.len() > 1 || child.samples.len() > 1;
    let on_means = noise::beyond_noise(parent.mean, &parent.samples, child.mean, &child.samples, min_improvement);
    let stated = evidence.map(|e| format!("; {}", e.summary())).unwrap_or_default();
    match noise::judge(on_means, evidence, repeated) {
        Gain::NotBetter { gain } => {
            return Judgement::Discard(format!(
                "mean loss {:.4} is no better than the parent's {:.4} ({:+.4}){stated}",
                child.mean, parent.mean, -gain
            ));
        }
        Gain::WithinNoise { gain, noise } => {
            return Judgement::Discard(format!(
                "mean loss {:.4} against the parent's {:.4}: a gain of {gain:+.4} is within the noise ({noise:.4}){stated}",
                child.mean, parent.mean
            ));
        }
        Gain::Better { .. } => {}
    }
    if let (Some(c), Some(p)) = (child.holdout_mean, parent.holdout_mean)
        && c > p + holdout_tolerance
    {
        return Judgement::HeldOutWorse(format!("held-out mean rose from {p:.4} to {c:.4}"));
    }
    Judgement::Commit
}

/// The child against its parent task by task (training tasks' mean losses).
pub fn paired(parent: &Node, child: &Node) -> Option<PairedEvidence> {
    let side = |n: &Node| n.task_losses.iter().map(|(t, l)| (t.clone(), vec![*l])).collect::<BTreeMap<_, _>>();
    PairedEvidence::of_tasks(&side(parent), &side(child))
}

/// Committed nodes to prune: `prune_after` or more evaluated children, every
/// one of them discarded (none committed). Children rejected before any run
/// did not regress and do not count.
pub fn exhausted(nodes: &[Node], prune_after: usize) -> Vec<i64> {
    nodes
        .iter()
        .filter(|n| n.status == NodeStatus::Committed)
        .filter(|n| {
            let children: Vec<&Node> = nodes.iter().filter(|c| c.parent == Some(n.id) && c.evaluated()).collect();
            children.len() >= prune_after.max(1) && children.iter().all(|c| c.status == NodeStatus::Discarded)
        })
        .map(|n| n.id)
        .collect()
}

/// The best committed (or pruned: it was once the best) node by mean loss.
pub fn best(nodes: &[Node]) -> Option<&Node> {
    nodes.iter().filter(|n| n.kept()).min_by(|a, b| a.mean.total_cmp(&b.mean).then(a.id.cmp(&b.id)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::outer::ideation::IdeaSource;

    pub(crate) fn node(id: i64, parent: Option<i64>, losses: &[(&str, f64)], status: NodeStatus) -> Node {
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
            focus: parent.map(|_| "x".to_string()),
            round: 0,
            rationale: None,
            feedback: None,
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
        let briefs = write_briefs(&parents, &cands, 5, &Steering::default());
        assert_eq!(briefs.len(), 4, "two parents × two artifacts; width 5 does not pad with repeats: {briefs:?}");
        let pairs: BTreeSet<(i64, String)> = briefs.iter().map(|b| (b.parent, b.focus.clone())).collect();
        assert_eq!(pairs.len(), 4);
        assert_ne!(briefs[0].focus, briefs[1].focus, "the first two briefs attack different artifacts");
        let one = write_briefs(&parents[..1], &cands, 3, &Steering::default());
        assert_eq!(one, vec![Brief::plain(1, "x"), Brief::plain(1, "y")]);
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
    fn with_repeats_a_gain_one_task_carries_is_not_committed_and_the_reason_states_the_pairs() {
        let parent = node(1, None, &[("a", 0.50), ("b", 0.50), ("c", 0.50), ("d", 0.50)], NodeStatus::Committed);
        let mut child = node(2, Some(1), &[("a", 0.10), ("b", 0.55), ("c", 0.55), ("d", 0.55)], NodeStatus::Committed);
        // Its repeats agree closely: on the means the gain is far beyond the noise.
        child.samples = vec![child.mean - 0.001, child.mean + 0.001];
        let reason = match judge(&parent, &child, 1e-9, 0.01) {
            Judgement::Discard(r) => r,
            other => panic!("{other:?}"),
        };
        assert!(reason.contains("within the noise") && reason.contains("1 of 4 pairs better, 3 worse"), "{reason}");
        // A deterministic harness (one evaluation each): the mean decides, and
        // the same evidence is there to read.
        child.samples = vec![child.mean];
        assert_eq!(judge(&parent, &child, 1e-9, 0.01), Judgement::Commit);
        assert_eq!(paired(&parent, &child).map(|e| (e.better, e.worse)), Some((1, 3)));
    }

    #[test]
    fn a_child_that_hurts_the_held_out_tasks_is_not_committed() {
        let mut parent = node(1, None, &[("a", 0.5)], NodeStatus::Committed);
        let mut child = node(2, Some(1), &[("a", 0.3)], NodeStatus::Committed);
        parent.holdout_mean = Some(0.2);
        child.holdout_mean = Some(0.4);
        assert!(matches!(judge(&parent, &child, 1e-9, 0.01), Judgement::HeldOutWorse(r) if r.contains("held-out")));
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
    fn a_dead_direction_is_not_briefed_and_a_saturated_axis_goes_last() {
        let nodes =
            [node(1, None, &[("a", 0.5)], NodeStatus::Committed), node(2, None, &[("a", 0.6)], NodeStatus::Committed)];
        let parents: Vec<&Node> = nodes.iter().collect();
        let cands = vec!["x".to_string(), "y".to_string(), "z".to_string()];
        let hints = vec![
            Hint { kind: HintKind::DeadDirection, artifact: "x".into(), parent: Some(1), text: String::new() },
            Hint { kind: HintKind::SaturatedAxis, artifact: "y".into(), parent: None, text: String::new() },
        ];
        let steering = Steering { hints: &hints, ..Steering::default() };
        let briefs = write_briefs(&parents, &cands, 10, &steering);
        assert!(!briefs.iter().any(|b| b.parent == 1 && b.focus == "x"), "dead: {briefs:?}");
        assert!(briefs.iter().any(|b| b.parent == 2 && b.focus == "x"), "only that parent's direction is dead");
        // x and z come before the saturated y for each parent.
        let first_y = briefs.iter().position(|b| b.focus == "y").unwrap();
        assert!(briefs[..first_y].iter().filter(|b| b.focus != "y").count() >= 3, "{briefs:?}");
        assert_eq!(briefs.len(), 5, "six pairs minus the dead one: {briefs:?}");
        let narrow = write_briefs(&parents, &cands, 3, &steering);
        assert!(narrow.iter().all(|b| b.focus != "y"), "a narrow round spends its width elsewhere: {narrow:?}");
    }

    #[test]
    fn the_best_ideas_become_the_first_briefs_without_reviving_a_dead_direction() {
        let nodes =
            [node(1, None, &[("a", 0.5)], NodeStatus::Committed), node(2, None, &[("a", 0.6)], NodeStatus::Committed)];
        let parents: Vec<&Node> = nodes.iter().collect();
        let cands = vec!["x".to_string(), "y".to_string()];
        let idea = |artifact: &str, parent: Option<i64>| Idea {
            source: IdeaSource::FrontierExtrapolation,
            artifact: artifact.into(),
            parent,
            direction: format!("push {artifact}"),
            expected_loss_reduction: 0.1,
            confidence: 0.5,
        };
        let ideas = vec![idea("y", Some(2)), idea("x", Some(1)), idea("nope", None), idea("x", None)];
        let hints =
            vec![Hint { kind: HintKind::DeadDirection, artifact: "x".into(), parent: Some(1), text: String::new() }];
        let steering = Steering { hints: &hints, ideas: &ideas, max_idea_briefs: 2 };
        let briefs = write_briefs(&parents, &cands, 3, &steering);
        assert_eq!((briefs[0].parent, briefs[0].focus.as_str()), (2, "y"));
        assert_eq!(briefs[0].idea.as_ref().map(|i| i.direction.as_str()), Some("push y"));
        // The second idea names a dead direction: it moves to the other parent.
        assert_eq!((briefs[1].parent, briefs[1].focus.as_str()), (2, "x"));
        assert!(briefs[1].idea.is_some());
        // Only two ideas may brief; the rest is the usual rotation.
        assert_eq!(briefs.len(), 3);
        assert!(briefs[2].idea.is_none() && briefs[2].parent == 1 && briefs[2].focus == "y", "{briefs:?}");
    }

    #[test]
    fn rejected_children_do_not_make_a_node_exhausted() {
        let mut nodes = vec![node(1, None, &[("a", 0.5)], NodeStatus::Committed)];
        for id in 2..=3 {
            nodes.push(node(id, Some(1), &[("a", 0.6)], NodeStatus::Discarded));
        }
        nodes.push(node(4, Some(1), &[], NodeStatus::Rejected));
        assert!(exhausted(&nodes, 3).is_empty());
    }
}
