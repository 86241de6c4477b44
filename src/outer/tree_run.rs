//! The runner side of `--optimizer tree`: evaluates nodes (every evaluation
//! is an epoch, so runs, charts and resumption work as for any epoch),
//! asks the proposer for children, checks each before it runs
//! ([`super::preverify`]), reads the tree after every round
//! ([`super::analyst`]), ideates when the search stalls
//! ([`super::ideation`]), and stores the tree with the notes that steered
//! each round. The decisions come from [`super::tree`].
//!
//! What reaches a model is built here, so this is where held-out tasks are
//! kept out: node losses are training losses, a node's feedback never
//! carries a held-out score or a pre-verify finding's quote, and a
//! rationale that quotes a held-out task is not kept.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::analyst::{self, Hint, HintKind};
use super::ideation::{self, Idea, IdeaSource};
use super::optimizer::{self, OptimizerKind};
use super::preverify::Guard;
use super::tree::{self, Brief, Judgement, Node, NodeStatus, Steering};
use super::{EpochSummary, Plan, RunnerError, SuiteRunner, TaskResult};
use crate::artifact::compare;
use crate::bus::Event;
use crate::loss;
use crate::store::{EpochClose, EpochRow, NewTreeNode, NewTreeNote, ProposalOutcome, StoreError};

/// How a tree search's epoch note begins (each such epoch measured one
/// candidate); the store's latest-mean rule and the charts read it.
pub const TREE_EPOCH: &str = "tree search:";

/// The longest artifact diff shown to the frontier extrapolation call.
const MAX_DIFF_CHARS: usize = 1_500;
/// Frontier nodes and failed children shown to the ideation calls.
const IDEATION_FRONTIER: usize = 5;
const IDEATION_FAILURES: usize = 8;

/// One evaluation of an artifact set, as the tree sees it.
struct Measured {
    epoch_id: i64,
    /// Per training task loss.
    tasks: BTreeMap<String, f64>,
    mean: f64,
    holdout_mean: Option<f64>,
    /// The mean loss of each evaluation (several with verify repeats).
    samples: Vec<f64>,
    /// The last evaluation's results (the evidence for children).
    results: Vec<TaskResult>,
}

/// A node on its way into the store, with what it changed.
struct NodeRecord {
    parent: Option<i64>,
    artifacts: BTreeMap<String, i64>,
    /// (artifact, from version, to version).
    change: Option<(String, i64, i64)>,
    brief: Option<String>,
    status: NodeStatus,
    note: String,
    round: u32,
    rationale: Option<String>,
    feedback: Option<String>,
    guidance: Vec<String>,
}

/// What the search carries from round to round.
struct Search {
    nodes: Vec<Node>,
    results_of: BTreeMap<i64, Vec<TaskResult>>,
    best_mean: f64,
    round: u32,
    /// Analyst hints already stored (each is stored the round it first appears).
    reported: BTreeSet<(HintKind, String, Option<i64>)>,
    /// Evaluations (epochs) of the plan so far.
    evals: usize,
    /// Rounds in a row without a new best, and ideation rounds left in this stall episode.
    stall: u32,
    ideation_left: u32,
    /// Resuming: the children a stopped run made in the round it stopped in,
    /// handed back in order as the replayed round asks for them.
    replay: VecDeque<(Node, Option<Vec<TaskResult>>)>,
    /// Resuming: epochs of the plan no node holds yet (a child was being
    /// measured when the run stopped), taken up by the next measurement of
    /// the same artifact set.
    orphans: VecDeque<EpochRow>,
    /// The learning rate, for an unrelated unfinished epoch closed as is.
    lr: f64,
}

impl SuiteRunner {
    /// Evaluations behind each decision: the command line's, else the suite's.
    pub(super) fn verify_repeats(&self) -> u32 {
        self.config.verify_repeats.unwrap_or_else(|| self.suite.verify_repeats()).max(1)
    }

    /// Runs the tree search; `true` when interrupted. Evaluations stop at
    /// the plan's; the best node's artifact versions end up active.
    pub(super) async fn run_tree(
        &mut self,
        suite_id: i64,
        plan: &Plan,
        pending: Option<EpochRow>,
        summaries: &mut Vec<EpochSummary>,
        lr: &mut f64,
    ) -> Result<bool, RunnerError> {
        let cfg = self.config.tree.clone();
        let repeats = self.verify_repeats();
        let budget = usize::try_from(plan.epochs).unwrap_or(0);
        let proposer = OptimizerKind::tree_proposer(self.optimizer_llm.clone());
        // Ideation needs a model; without one the search stops on stall as before.
        let ideator = self.optimizer_llm.clone().filter(|_| cfg.ideation_rounds > 0);
        // What the proposer can change: artifacts the suite's tasks read
        // (evolve only moves tunable JSON fields).
        let kinds = self.suite.task_kinds();
        let mut candidates: Vec<String> = self
            .registry
            .defs_for_suite(&self.suite.name)
            .filter(|d| d.steers_any(&kinds))
            .filter(|d| proposer.name() != "evolve" || !d.fields.is_empty())
            .map(|d| d.name.clone())
            .collect();
        candidates.sort();
        let guard = Guard::for_suite(&self.suite);

        // An unrelated epoch an earlier run left unfinished is closed first,
        // as is; one of this plan's is taken up by its measurement.
        if let Some(e) = pending.filter(|_| !plan.continued)
            && let Some(s) = self.run_epoch(suite_id, &e, true, lr).await?
        {
            summaries.push(s);
        }
        let mut search = self.restore(suite_id, plan, *lr).await?;
        if search.nodes.is_empty() && search.replay.is_empty() {
            let root_artifacts = self.snapshot().await?;
            let Some(root) = self.measure(suite_id, &root_artifacts, repeats, &mut search, budget, summaries).await?
            else {
                return Ok(true);
            };
            let record = NodeRecord {
                parent: None,
                artifacts: root_artifacts,
                change: None,
                brief: None,
                status: NodeStatus::Committed,
                note: "root: the active versions".into(),
                round: 0,
                rationale: None,
                feedback: None,
                guidance: Vec::new(),
            };
            let (root_node, root_results) = self.store_node(suite_id, record, root).await?;
            search.results_of.insert(root_node.id, root_results);
            search.best_mean = root_node.mean;
            search.nodes.push(root_node);
        }

        // Ideation proposals for the next round, with the note each is stored as.
        let mut ideas: Vec<(Idea, i64)> = Vec::new();
        loop {
            if search.evals >= budget || self.cancelled() || self.budget_spent().is_some() {
                break;
            }
            for id in tree::exhausted(&search.nodes, cfg.prune_after) {
                self.store.set_tree_node_status(id, "pruned", "exhausted: every child regressed").await?;
                if let Some(n) = search.nodes.iter_mut().find(|n| n.id == id) {
                    n.status = NodeStatus::Pruned;
                }
            }
            // The analyst reads the tree as the last round left it.
            let hints = analyst::analyse(&search.nodes, &cfg.analyst);
            if search.stall >= cfg.stall {
                // About to stop: ideate first, a bounded number of times per stall episode.
                let Some(client) = ideator.as_ref().filter(|_| search.ideation_left > 0) else { break };
                search.ideation_left -= 1;
                ideas = self.ideate(client, suite_id, &search, &hints, &candidates).await?;
                if ideas.is_empty() {
                    tracing::info!(suite = %self.suite.name, "ideation proposed nothing usable: the search stops");
                    break;
                }
            }
            search.round += 1;
            let round = search.round;
            for h in &hints {
                if search.reported.insert(h.key()) {
                    self.store
                        .insert_tree_note(
                            suite_id,
                            &NewTreeNote {
                                round: i64::from(round),
                                source: "analyst".into(),
                                kind: h.kind.as_str().into(),
                                artifact: Some(h.artifact.clone()),
                                parent_id: h.parent,
                                text: h.text.clone(),
                                ..NewTreeNote::default()
                            },
                        )
                        .await?;
                }
            }
            let parents = tree::frontier(&search.nodes, cfg.selection, draw(self.config.seed, Draw::Frontier, round));
            let ranked: Vec<Idea> = ideas.iter().map(|(i, _)| i.clone()).collect();
            let steering = Steering { hints: &hints, ideas: &ranked, max_idea_briefs: cfg.ideation_briefs };
            let briefs = tree::write_briefs(&parents, &candidates, cfg.width.max(1), &steering);
            let idea_notes = std::mem::take(&mut ideas);
            if briefs.is_empty() {
                break;
            }
            let mut improved = false;
            for brief in briefs {
                let note = brief.idea.as_ref().and_then(|i| idea_notes.iter().find(|(n, _)| n == i)).map(|(_, id)| *id);
                // The brief's lane: a committed child is the next child's
                // parent, same focus, up to the per-branch budget.
                let mut lane = brief;
                for depth in 0..cfg.branch_depth.max(1) {
                    if search.evals >= budget || self.cancelled() || self.budget_spent().is_some() {
                        break;
                    }
                    let child = self
                        .make_child(
                            suite_id,
                            &mut search,
                            &lane,
                            &hints,
                            &guard,
                            &*proposer,
                            repeats,
                            budget,
                            summaries,
                        )
                        .await?;
                    let Some(child) = child else { return Ok(true) };
                    if depth == 0
                        && let Some(note) = note
                    {
                        self.store.set_tree_note_node(note, child.id).await?;
                    }
                    improved |= child.new_best;
                    let committed = search.nodes.iter().any(|n| n.id == child.id && n.status == NodeStatus::Committed);
                    if !committed {
                        break;
                    }
                    lane = Brief { parent: child.id, focus: lane.focus.clone(), idea: None };
                }
            }
            if improved {
                search.stall = 0;
                search.ideation_left = cfg.ideation_rounds;
            } else {
                search.stall += 1;
            }
        }
        // A search that stopped (at its budget) before replaying every child
        // of its last round still counts them.
        while let Some((node, results)) = search.replay.pop_front() {
            search.adopt(node, results);
        }
        *lr = search.lr;

        // The best node's versions become the active ones (through a
        // person, under the approval gate).
        if let Some(best) = tree::best(&search.nodes)
            && self.approval_mode() != super::ApprovalMode::Off
        {
            let root = search.nodes.iter().find(|n| n.parent.is_none()).map(|n| n.mean);
            if !self.gate_tree_best(suite_id, best, root).await? {
                return Ok(true);
            }
        } else if let Some(best) = tree::best(&search.nodes) {
            for (name, version) in &best.artifacts {
                let active = self.registry.get_active(name).await?.version;
                if active != *version {
                    self.registry.set_active(name, *version).await?;
                    self.bus.publish(Event::ArtifactActivated {
                        artifact: name.clone(),
                        from_version: active,
                        to_version: *version,
                    });
                }
            }
            tracing::info!(suite = %self.suite.name, node = best.id, mean = best.mean, evaluations = search.evals, rounds = search.round, "tree search finished");
        }
        Ok(self.cancelled())
    }

    /// Makes, checks, evaluates and judges one child; `None` when
    /// interrupted mid-evaluation.
    #[allow(clippy::too_many_arguments)]
    async fn make_child(
        &self,
        suite_id: i64,
        search: &mut Search,
        brief: &Brief,
        hints: &[Hint],
        guard: &Guard,
        proposer: &dyn optimizer::Optimizer,
        repeats: u32,
        budget: usize,
        summaries: &mut Vec<EpochSummary>,
    ) -> Result<Option<ChildOutcome>, RunnerError> {
        let cfg = &self.config.tree;
        // Resuming: the child the stopped run made for this brief comes back as it was.
        if let Some((node, _)) = search.replay.front() {
            if node.parent == Some(brief.parent) && node.focus.as_deref() == Some(brief.focus.as_str()) {
                let Some((node, results)) = search.replay.pop_front() else { return Ok(None) };
                let id = node.id;
                let new_best = search.adopt(node, results);
                return Ok(Some(ChildOutcome { id, new_best }));
            }
            tracing::warn!(suite = %self.suite.name, node = node.id, "the resumed tree search took another turn than the stopped one (was the suite changed?); it goes on from here");
            while let Some((node, results)) = search.replay.pop_front() {
                search.adopt(node, results);
            }
        }
        let parent = search.nodes.iter().find(|n| n.id == brief.parent).cloned().ok_or_else(|| {
            RunnerError::Optimizer(optimizer::OptimizerError(format!("tree node {} vanished", brief.parent)))
        })?;
        let from_version = parent.artifacts.get(&brief.focus).copied().unwrap_or(0);
        let content = self.registry.get(&brief.focus, from_version).await?.content;
        // The proposer hears the idea this brief follows and what the analyst
        // said about this artifact.
        let mut guidance: Vec<String> = brief.idea.iter().map(Idea::guidance).collect();
        guidance.extend(hints.iter().filter(|h| h.artifact == brief.focus).map(|h| h.text.clone()));
        let evidence = optimizer::Evidence {
            suite: self.suite.name.clone(),
            epoch_num: search.nodes.len() as i64,
            mean_loss: parent.mean,
            learning_rate: self.config.learning_rate,
            tasks: search.results_of.get(&parent.id).map(|rs| super::close::task_evidence(rs)).unwrap_or_default(),
            candidates: vec![optimizer::Candidate {
                def: self.registry.def(&brief.focus)?.clone(),
                version: from_version,
                content: content.clone(),
            }],
            seed: draw_u64(self.config.seed, Draw::Child, search.nodes.len()),
            history: BTreeMap::new(),
            guidance: guidance.clone(),
        };
        let step = proposer.propose(&evidence).await?;
        let mut brief_text = format!("change `{}` from node {}", brief.focus, parent.id);
        if let Some(idea) = &brief.idea {
            brief_text.push_str(&format!(" — idea ({}): {}", idea.source.label(), idea.direction));
        }
        let rejected = |reason: String, feedback: String, guidance: Vec<String>| NodeRecord {
            parent: Some(parent.id),
            artifacts: parent.artifacts.clone(),
            change: None,
            brief: Some(brief_text.clone()),
            status: NodeStatus::Rejected,
            note: reason,
            round: search.round,
            rationale: None,
            feedback: Some(feedback),
            guidance,
        };
        let Some(p) = step.winner.clone() else {
            let reason =
                step.considered.iter().find_map(|c| c.rejection.clone()).unwrap_or_else(|| "no proposal".into());
            let record = rejected(reason.clone(), format!("rejected before evaluation: {reason}"), guidance);
            let id = self.store_rejected(suite_id, search, &brief.focus, from_version, record).await?;
            return Ok(Some(ChildOutcome { id, new_best: false }));
        };
        if let Some(finding) = guard.check(&p.content, &content) {
            tracing::info!(artifact = %brief.focus, reason = %finding.reason(), "pre-verify rejected a child");
            let record = rejected(finding.reason(), finding.feedback(), guidance);
            let id = self.store_rejected(suite_id, search, &brief.focus, from_version, record).await?;
            return Ok(Some(ChildOutcome { id, new_best: false }));
        }
        // The same change from the same parent was measured already: another
        // evaluation would only repeat it, so the proposer hears it instead.
        if let Some((twin, mean)) = self.twin_of(search, parent.id, &brief.focus, &p.content).await? {
            let reason = format!("the same change as node {twin} (mean loss {mean:.4})");
            let feedback = format!("rejected before evaluation: {reason}; propose a different change");
            let record = rejected(reason, feedback, guidance);
            let id = self.store_rejected(suite_id, search, &brief.focus, from_version, record).await?;
            return Ok(Some(ChildOutcome { id, new_best: false }));
        }
        let to_version = self.child_version(&brief.focus, &p.content, from_version).await?;
        let mut artifacts = parent.artifacts.clone();
        artifacts.insert(brief.focus.clone(), to_version);
        let Some(measured) = self.measure(suite_id, &artifacts, repeats, search, budget, summaries).await? else {
            return Ok(None);
        };
        let first_epoch = measured.epoch_id;
        let probe = node_of(0, Some(parent.id), artifacts.clone(), &measured, NodeStatus::Committed);
        let (status, note, feedback) = match tree::judge(
            &parent,
            &probe,
            cfg.min_improvement,
            self.config.holdout_tolerance,
        ) {
            Judgement::Commit => (
                NodeStatus::Committed,
                format!("{brief_text}: {}", p.rationale),
                format!("kept: mean loss {:.4} against the parent's {:.4}", probe.mean, parent.mean),
            ),
            Judgement::Discard(why) => (NodeStatus::Discarded, why.clone(), format!("discarded: {why}")),
            // The numbers stay with the node for people; a model only hears that it did not generalise.
            Judgement::HeldOutWorse(why) => (
                NodeStatus::Discarded,
                why,
                format!(
                    "discarded by the held-out gate: the training loss went from {:.4} to {:.4}, but the change did not generalise",
                    parent.mean, probe.mean
                ),
            ),
        };
        // A rationale that quotes a held-out task would carry it into later calls.
        let rationale = Some(p.rationale.clone()).filter(|r| !guard.quotes_holdout(r));
        let record = NodeRecord {
            parent: Some(parent.id),
            artifacts,
            change: Some((brief.focus.clone(), from_version, to_version)),
            brief: Some(brief_text),
            status,
            note,
            round: search.round,
            rationale,
            feedback: Some(feedback),
            guidance,
        };
        let verdict = (status != NodeStatus::Committed).then(|| record.note.clone());
        let (child, results) = self.store_node(suite_id, record, measured).await?;
        self.store_proposals(first_epoch, proposer.name(), &step, verdict).await?;
        let new_best = status == NodeStatus::Committed && child.mean < search.best_mean;
        if new_best {
            search.best_mean = child.mean;
        }
        let id = child.id;
        search.results_of.insert(child.id, results);
        search.nodes.push(child);
        Ok(Some(ChildOutcome { id, new_best }))
    }

    /// The two ideation calls on the tree as it stands; their proposals are
    /// stored as notes of the coming round and returned best first, each
    /// with its note's id.
    async fn ideate(
        &self,
        client: &crate::llm::LlmClient,
        suite_id: i64,
        search: &Search,
        hints: &[Hint],
        candidates: &[String],
    ) -> Result<Vec<(Idea, i64)>, RunnerError> {
        let input = self.ideation_input(search, hints, candidates).await?;
        let round = i64::from(search.round + 1);
        let known: BTreeSet<i64> = search.nodes.iter().map(|n| n.id).collect();
        let mut outcomes = Vec::new();
        for source in IdeaSource::ALL {
            outcomes.push(ideation::ideate(client, source, &input).await);
        }
        let mut out = Vec::new();
        for idea in ideation::rank(outcomes.iter().flat_map(|o| o.ideas.clone()).collect()) {
            let id = self
                .store
                .insert_tree_note(
                    suite_id,
                    &NewTreeNote {
                        round,
                        source: idea.source.as_str().into(),
                        kind: "proposal".into(),
                        artifact: Some(idea.artifact.clone()),
                        parent_id: idea.parent.filter(|p| known.contains(p)),
                        text: idea.direction.clone(),
                        expected_loss_reduction: Some(idea.expected_loss_reduction),
                        confidence: Some(idea.confidence),
                    },
                )
                .await?;
            out.push((idea, id));
        }
        // A call that gave nothing usable says why, once.
        for o in outcomes.iter().filter(|o| o.ideas.is_empty()) {
            let mut why = o.failure.clone().unwrap_or_else(|| "no usable proposal".into());
            if !o.dropped.is_empty() {
                why.push_str(&format!(" (dropped: {})", o.dropped.join("; ")));
            }
            self.store
                .insert_tree_note(
                    suite_id,
                    &NewTreeNote {
                        round,
                        source: o.source.as_str().into(),
                        kind: "nothing".into(),
                        text: why,
                        ..NewTreeNote::default()
                    },
                )
                .await?;
        }
        tracing::info!(suite = %self.suite.name, round, proposals = out.len(), "ideation on stall");
        Ok(out)
    }

    /// What the ideation calls may see: training losses, diffs of committed
    /// versions, prompt-safe feedback; nothing held out.
    async fn ideation_input(
        &self,
        search: &Search,
        hints: &[Hint],
        candidates: &[String],
    ) -> Result<ideation::IdeationInput, RunnerError> {
        let nodes = &search.nodes;
        let mut artifacts = Vec::new();
        for name in candidates {
            artifacts.push((name.clone(), self.registry.def(name)?.description.clone()));
        }
        let best = tree::best(nodes);
        let mut frontier = Vec::new();
        for n in tree::frontier(nodes, tree::Selection::Pareto, 0.0).into_iter().take(IDEATION_FRONTIER) {
            let parent = n.parent.and_then(|p| nodes.iter().find(|x| x.id == p));
            let change = match (parent, n.focus.as_deref()) {
                (Some(parent), Some(focus)) => {
                    let from = parent.artifacts.get(focus).copied().unwrap_or(0);
                    let to = n.artifacts.get(focus).copied().unwrap_or(0);
                    let old = self.registry.get(focus, from).await?.content;
                    let new = self.registry.get(focus, to).await?.content;
                    let kind = self.registry.def(focus)?.kind;
                    let diff = compare::unified(kind, focus, (from, &old), (to, &new), 2);
                    Some(ideation::Change {
                        parent: parent.id,
                        artifact: focus.to_string(),
                        diff: truncate(&diff, MAX_DIFF_CHARS),
                        rationale: n.rationale.clone().unwrap_or_default(),
                        gain: parent.mean - n.mean,
                    })
                }
                _ => None,
            };
            frontier.push(ideation::FrontierNode {
                id: n.id,
                mean: n.mean,
                task_losses: n.task_losses.iter().map(|(t, l)| (t.clone(), *l)).collect(),
                change,
            });
        }
        let failures = nodes
            .iter()
            .rev()
            .filter(|n| matches!(n.status, NodeStatus::Discarded | NodeStatus::Rejected))
            .take(IDEATION_FAILURES)
            .filter_map(|n| {
                Some(ideation::Failure {
                    id: n.id,
                    parent: n.parent?,
                    artifact: n.focus.clone()?,
                    rationale: n.rationale.clone().filter(|_| n.evaluated()),
                    feedback: n.feedback.clone().unwrap_or_else(|| n.status.as_str().to_string()),
                })
            })
            .collect();
        Ok(ideation::IdeationInput {
            suite: self.suite.name.clone(),
            artifacts,
            best: best.map(|b| (b.id, b.mean)),
            frontier,
            failures,
            tasks: best
                .and_then(|b| search.results_of.get(&b.id))
                .map(|rs| super::close::task_evidence(rs))
                .unwrap_or_default(),
            hints: hints.iter().map(|h| h.text.clone()).collect(),
        })
    }

    /// Evaluates an artifact set `repeats` times (one epoch each), within
    /// the evaluation budget; the per-task losses are averaged. An epoch of
    /// the same set a stopped run left behind is taken up, not run again.
    async fn measure(
        &self,
        suite_id: i64,
        artifacts: &BTreeMap<String, i64>,
        repeats: u32,
        search: &mut Search,
        budget: usize,
        summaries: &mut Vec<EpochSummary>,
    ) -> Result<Option<Measured>, RunnerError> {
        let mut samples: Vec<(i64, Vec<TaskResult>, Option<f64>)> = Vec::new();
        for _ in 0..repeats.max(1) {
            if search.evals >= budget && !samples.is_empty() {
                break;
            }
            let (epoch, adopted) = match self.orphan_of(search, artifacts).await? {
                Some(e) => (e, true),
                None => {
                    let next = self.store.last_epoch(suite_id).await?.map_or(1, |e| e.epoch_num + 1);
                    let parent_json = serde_json::to_string(artifacts).map_err(StoreError::from)?;
                    (self.store.insert_epoch(suite_id, next, &parent_json).await?, false)
                }
            };
            let Some(eval) = self.evaluate_epoch(suite_id, &epoch, adopted).await? else {
                return Ok(None);
            };
            search.evals += 1;
            let training: Vec<f64> = eval.results.iter().filter(|r| !r.holdout).map(|r| r.loss).collect();
            let holdout: Vec<f64> = eval.results.iter().filter(|r| r.holdout).map(|r| r.loss).collect();
            let mean = loss::mean(&training).or_else(|| loss::mean(&holdout));
            if epoch.completed_at.is_none() {
                self.close_tree_epoch(suite_id, &epoch, artifacts, mean, loss::mean(&holdout), summaries).await?;
            }
            samples.push((epoch.id, eval.results, mean));
        }
        let Some((epoch_id, _, _)) = samples.first() else { return Ok(None) };
        let epoch_id = *epoch_id;
        let mut per_task: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut holdout = Vec::new();
        for (_, results, _) in &samples {
            for r in results {
                if r.holdout {
                    holdout.push(r.loss);
                } else {
                    per_task.entry(r.task.clone()).or_default().push(r.loss);
                }
            }
        }
        let tasks: BTreeMap<String, f64> =
            per_task.into_iter().map(|(t, ls)| (t, ls.iter().sum::<f64>() / ls.len() as f64)).collect();
        let means: Vec<f64> = samples.iter().filter_map(|s| s.2).collect();
        let mean = loss::mean(&means).unwrap_or(f64::INFINITY);
        let results = samples.pop().map(|s| s.1).unwrap_or_default();
        Ok(Some(Measured { epoch_id, tasks, mean, holdout_mean: loss::mean(&holdout), samples: means, results }))
    }

    /// Closes a tree epoch: it says what it measured; what becomes active is
    /// decided at the end of the search.
    async fn close_tree_epoch(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        artifacts: &BTreeMap<String, i64>,
        mean: Option<f64>,
        holdout_mean: Option<f64>,
        summaries: &mut Vec<EpochSummary>,
    ) -> Result<(), RunnerError> {
        let changed: Vec<String> =
            artifacts.iter().filter(|(_, v)| **v != 0).map(|(name, v)| format!("{name} v{v}")).collect();
        let note = if changed.is_empty() {
            format!("{TREE_EPOCH} evaluated the starting versions")
        } else {
            format!("{TREE_EPOCH} evaluated {}", changed.join(", "))
        };
        self.store
            .complete_epoch(epoch.id, mean, &EpochClose::default(), |_| {
                json!({ "artifacts": artifacts, "events": [], "note": note }).to_string()
            })
            .await?;
        self.bus.publish(Event::EpochFinished {
            suite_id,
            epoch_id: epoch.id,
            epoch_num: epoch.epoch_num,
            mean_loss: mean,
            holdout_mean_loss: holdout_mean,
            learning_rate: self.config.learning_rate,
            note: Some(note.clone()),
            model: None,
        });
        summaries.push(EpochSummary {
            epoch_id: epoch.id,
            epoch_num: epoch.epoch_num,
            mean_loss: mean,
            holdout_mean_loss: holdout_mean,
            learning_rate: self.config.learning_rate,
            resumed: false,
            events: vec![],
            note: Some(note),
            model: None,
        });
        Ok(())
    }

    /// The next epoch a stopped run left without a node, when it measured
    /// `artifacts`; one that measured something else cannot be this
    /// search's any more and is closed as is.
    async fn orphan_of(
        &self,
        search: &mut Search,
        artifacts: &BTreeMap<String, i64>,
    ) -> Result<Option<EpochRow>, RunnerError> {
        while let Some(epoch) = search.orphans.pop_front() {
            let measured: BTreeMap<String, i64> =
                serde_json::from_str(&epoch.parent_artifacts_json).map_err(StoreError::from)?;
            if &measured == artifacts {
                return Ok(Some(epoch));
            }
            tracing::warn!(suite = %self.suite.name, epoch = epoch.epoch_num, "an epoch the stopped tree search left behind measured other versions; it is closed as is");
            if epoch.completed_at.is_none() {
                self.run_epoch(epoch.suite_id, &epoch, true, &mut search.lr).await?;
            }
        }
        Ok(None)
    }

    /// An evaluated child of `parent` that made this very change: its id and mean loss.
    async fn twin_of(
        &self,
        search: &Search,
        parent: i64,
        focus: &str,
        content: &str,
    ) -> Result<Option<(i64, f64)>, RunnerError> {
        for n in search.nodes.iter().filter(|n| n.parent == Some(parent) && n.evaluated()) {
            if n.focus.as_deref() == Some(focus)
                && let Some(version) = n.artifacts.get(focus)
                && self.registry.get(focus, *version).await?.content == content
            {
                return Ok(Some((n.id, n.mean)));
            }
        }
        Ok(None)
    }

    /// The version a child's content becomes: the newest version when it is
    /// this very change (a stopped run wrote it before it was measured),
    /// else a new one.
    async fn child_version(&self, name: &str, content: &str, from_version: i64) -> Result<i64, RunnerError> {
        if let Some(newest) = self.registry.history(name).await?.pop()
            && newest.version != 0
            && newest.parent_version == Some(from_version)
            && newest.content == content
        {
            return Ok(newest.version);
        }
        Ok(self.registry.put_version(name, content, from_version, None).await?)
    }

    /// The search as the plan's earlier runs left it: the tree up to the
    /// round a stopped run was in, that round's children to replay, the
    /// epochs no node holds yet, and the stall counters.
    async fn restore(&self, suite_id: i64, plan: &Plan, lr: f64) -> Result<Search, RunnerError> {
        let cfg = &self.config.tree;
        let mut search = Search {
            nodes: Vec::new(),
            results_of: BTreeMap::new(),
            best_mean: f64::INFINITY,
            round: 0,
            reported: BTreeSet::new(),
            evals: 0,
            stall: 0,
            ideation_left: cfg.ideation_rounds,
            replay: VecDeque::new(),
            orphans: VecDeque::new(),
            lr,
        };
        for note in self.store.tree_notes(suite_id).await? {
            let kind = match note.kind.as_str() {
                "dead_direction" => HintKind::DeadDirection,
                "saturated_axis" => HintKind::SaturatedAxis,
                _ => continue,
            };
            search.reported.insert((kind, note.artifact.unwrap_or_default(), note.parent_id));
        }
        let epochs = self.store.epochs(suite_id).await?;
        let num_of: BTreeMap<i64, &EpochRow> = epochs.iter().map(|e| (e.id, e)).collect();
        let mut stored = Vec::new();
        // The epochs each node holds: its first and the ones after it.
        let mut held_through = 0i64;
        for row in self.store.tree_nodes(suite_id).await? {
            let Some((mut node, mut results)) = node_from_row(&row) else { continue };
            if let Some(first) = row.epoch_id.and_then(|id| num_of.get(&id)) {
                let last = first.epoch_num + row.evaluations.max(1) - 1;
                held_through = held_through.max(last);
                let own: Vec<&EpochRow> =
                    epochs.iter().filter(|e| (first.epoch_num..=last).contains(&e.epoch_num)).collect();
                // The evidence and samples the node had when it was made.
                let samples: Vec<f64> = own.iter().filter_map(|e| e.mean_loss).collect();
                if !samples.is_empty() {
                    node.samples = samples;
                }
                if let Some(e) = own.last() {
                    results = Some(self.epoch_results(e.id).await?).filter(|r| !r.is_empty()).or(results);
                }
            }
            stored.push((node, results, row.epoch_id.and_then(|id| num_of.get(&id)).map(|e| e.epoch_num)));
        }
        if plan.continued {
            search.evals = epochs
                .iter()
                .filter(|e| e.epoch_num >= plan.first_epoch && e.epoch_num <= held_through && e.completed_at.is_some())
                .count();
            search.orphans = epochs
                .iter()
                .filter(|e| e.epoch_num >= plan.first_epoch && e.epoch_num > held_through)
                .cloned()
                .collect();
        }
        let last_round = stored.iter().map(|(n, _, _)| n.round).max().unwrap_or(0);
        // The round before this plan's first: where its stall count starts.
        let before = stored
            .iter()
            .filter(|(_, _, num)| num.is_some_and(|n| n < plan.first_epoch))
            .map(|(n, _, _)| n.round)
            .max();
        let replaying = plan.continued && last_round > 0 && before.is_none_or(|b| b < last_round);
        let mut improved_in: BTreeSet<u32> = BTreeSet::new();
        let mut best = f64::INFINITY;
        for (mut node, results, _) in stored {
            // A prune is decided at the start of a round from the tree as it
            // stands, and the replayed rounds decide it again; a node pruned
            // when the run stopped may not have been when its round began.
            if replaying && node.status == NodeStatus::Pruned {
                node.status = NodeStatus::Committed;
            }
            if node.kept() && node.mean < best {
                best = node.mean;
                improved_in.insert(node.round);
            }
            if replaying && node.round == last_round {
                search.replay.push_back((node, results));
                continue;
            }
            search.adopt(node, results);
        }
        search.round = if replaying { last_round - 1 } else { last_round };
        if replaying {
            // Replays the stall counter over the plan's finished rounds.
            for round in before.map_or(1, |b| b + 1)..last_round {
                if search.stall >= cfg.stall {
                    search.ideation_left = search.ideation_left.saturating_sub(1);
                }
                if improved_in.contains(&round) {
                    search.stall = 0;
                    search.ideation_left = cfg.ideation_rounds;
                } else {
                    search.stall += 1;
                }
            }
        }
        Ok(search)
    }

    async fn store_node(
        &self,
        suite_id: i64,
        r: NodeRecord,
        m: Measured,
    ) -> Result<(Node, Vec<TaskResult>), RunnerError> {
        let id = self
            .store
            .insert_tree_node(
                suite_id,
                &NewTreeNode {
                    parent_id: r.parent,
                    epoch_id: Some(m.epoch_id),
                    artifacts_json: serde_json::to_string(&r.artifacts).map_err(StoreError::from)?,
                    changed_artifact: r.change.as_ref().map(|c| c.0.clone()),
                    from_version: r.change.as_ref().map(|c| c.1),
                    to_version: r.change.as_ref().map(|c| c.2),
                    brief: r.brief,
                    mean_loss: Some(m.mean),
                    holdout_mean_loss: m.holdout_mean,
                    task_losses_json: Some(serde_json::to_string(&m.tasks).map_err(StoreError::from)?),
                    evaluations: m.samples.len().max(1) as i64,
                    status: r.status.as_str().into(),
                    note: Some(r.note),
                    round: Some(i64::from(r.round)),
                    rationale: r.rationale.clone(),
                    feedback: r.feedback.clone(),
                    guidance: guidance_text(&r.guidance),
                },
            )
            .await?;
        let mut node = node_of(id, r.parent, r.artifacts, &m, r.status);
        node.focus = r.change.map(|c| c.0);
        node.round = r.round;
        node.rationale = r.rationale;
        node.feedback = r.feedback;
        Ok((node, m.results))
    }

    /// Stores a child rejected before evaluation and adds it to the tree
    /// (the analyst counts it toward a dead direction).
    async fn store_rejected(
        &self,
        suite_id: i64,
        search: &mut Search,
        focus: &str,
        from_version: i64,
        r: NodeRecord,
    ) -> Result<i64, RunnerError> {
        let id = self
            .store
            .insert_tree_node(
                suite_id,
                &NewTreeNode {
                    parent_id: r.parent,
                    artifacts_json: serde_json::to_string(&r.artifacts).map_err(StoreError::from)?,
                    changed_artifact: Some(focus.to_string()),
                    from_version: Some(from_version),
                    brief: r.brief,
                    status: NodeStatus::Rejected.as_str().into(),
                    note: Some(r.note),
                    round: Some(i64::from(r.round)),
                    feedback: r.feedback.clone(),
                    guidance: guidance_text(&r.guidance),
                    ..NewTreeNode::default()
                },
            )
            .await?;
        search.nodes.push(Node {
            id,
            parent: r.parent,
            artifacts: r.artifacts,
            task_losses: BTreeMap::new(),
            mean: f64::INFINITY,
            holdout_mean: None,
            samples: Vec::new(),
            status: NodeStatus::Rejected,
            focus: Some(focus.to_string()),
            round: r.round,
            rationale: None,
            feedback: r.feedback,
        });
        Ok(id)
    }

    /// Keeps the proposer's proposals with the child's first evaluation. A
    /// child the search did not keep (`discarded`: its verdict) is no
    /// winner: its proposal is stored rejected, with the verdict as the reason.
    async fn store_proposals(
        &self,
        epoch_id: i64,
        optimizer: &str,
        step: &optimizer::Step,
        discarded: Option<String>,
    ) -> Result<(), RunnerError> {
        let mut rows = super::close::proposal_rows(step, optimizer, self.config.learning_rate);
        if let Some(why) = discarded {
            for r in rows.iter_mut().filter(|r| r.outcome == ProposalOutcome::Winner) {
                r.outcome = ProposalOutcome::Rejected;
                r.rejection = Some(format!("discarded by the tree search: {why}"));
            }
        }
        self.store.insert_proposals(epoch_id, &rows).await?;
        Ok(())
    }
}

impl Search {
    /// Puts a stored node back into the tree; `true` when it was a new best.
    fn adopt(&mut self, node: Node, results: Option<Vec<TaskResult>>) -> bool {
        let new_best = node.kept() && node.mean < self.best_mean;
        if new_best {
            self.best_mean = node.mean;
        }
        if let Some(results) = results {
            self.results_of.insert(node.id, results);
        }
        self.nodes.push(node);
        new_best
    }
}

/// The random draws of the search, each from its own stream.
#[derive(Clone, Copy)]
enum Draw {
    /// The frontier's tie-break, once per round.
    Frontier = 1,
    /// A child's proposer seed, by the number of nodes before it.
    Child = 2,
}

/// A draw fixed by where the search is (a round, a node count), not by how
/// many draws came before, so a resumed search draws what the uninterrupted
/// one did.
fn draw_u64(seed: u64, stream: Draw, index: impl TryInto<u64>) -> u64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream as u64);
    rng.set_word_pos(u128::from(index.try_into().unwrap_or(u64::MAX)) * 2);
    rng.random()
}

/// [`draw_u64`] as a uniform number in [0, 1).
fn draw(seed: u64, stream: Draw, index: impl TryInto<u64>) -> f64 {
    (draw_u64(seed, stream, index) >> 11) as f64 / (1u64 << 53) as f64
}

/// What became of one brief.
struct ChildOutcome {
    /// The stored node.
    id: i64,
    /// Committed with the lowest mean loss so far.
    new_best: bool,
}

fn node_of(id: i64, parent: Option<i64>, artifacts: BTreeMap<String, i64>, m: &Measured, status: NodeStatus) -> Node {
    Node {
        id,
        parent,
        artifacts,
        task_losses: m.tasks.clone(),
        mean: m.mean,
        holdout_mean: m.holdout_mean,
        samples: if m.samples.is_empty() { vec![m.mean] } else { m.samples.clone() },
        status,
        focus: None,
        round: 0,
        rationale: None,
        feedback: None,
    }
}

fn guidance_text(lines: &[String]) -> Option<String> {
    (!lines.is_empty()).then(|| lines.join("\n"))
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max { s.to_string() } else { s.chars().take(max).collect::<String>() + "\n…" }
}

/// A stored node, for a search that carries on; its evidence is the stored
/// per-task losses (the runs' details stay in their epoch). A rejected node
/// was never measured: it comes back without losses or evidence.
fn node_from_row(row: &crate::store::TreeNodeRow) -> Option<(Node, Option<Vec<TaskResult>>)> {
    let status = NodeStatus::parse(&row.status)?;
    let artifacts: BTreeMap<String, i64> = serde_json::from_str(&row.artifacts_json).ok()?;
    let round = row.round.and_then(|r| u32::try_from(r).ok()).unwrap_or(0);
    let mut node = Node {
        id: row.id,
        parent: row.parent_id,
        artifacts,
        task_losses: BTreeMap::new(),
        mean: f64::INFINITY,
        holdout_mean: None,
        samples: Vec::new(),
        status,
        focus: row.changed_artifact.clone(),
        round,
        rationale: row.rationale.clone(),
        feedback: row.feedback.clone(),
    };
    if status == NodeStatus::Rejected {
        return Some((node, None));
    }
    let tasks: BTreeMap<String, f64> = serde_json::from_str(row.task_losses_json.as_deref()?).ok()?;
    let mean = row.mean_loss?;
    let results = tasks
        .iter()
        .map(|(task, loss)| TaskResult {
            task: task.clone(),
            holdout: false,
            loss: *loss,
            status: "complete".into(),
            breakdown: None,
            error: None,
        })
        .collect();
    node.task_losses = tasks;
    node.mean = mean;
    node.holdout_mean = row.holdout_mean_loss;
    node.samples = vec![mean];
    Some((node, Some(results)))
}
