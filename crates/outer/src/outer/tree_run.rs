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

mod ideate;
mod store;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::analyst::{self, Hint, HintKind};
use super::close::EpochMeans;
use super::ideation::{self, Idea, IdeaSource};
use super::optimizer;
use super::preverify::Guard;
use super::runner::{Flow, Strategy};
use super::state::{Halt, OuterState};
use super::tree::{self, Brief, Judgement, Node, NodeStatus, Steering};
use super::{EpochSummary, Plan, RunnerError, SuiteRunner, TaskResult};
use crate::artifact::compare;
use crate::bus::Event;
use crate::domain::EpochRecord;
pub use crate::domain::TREE_EPOCH;
use crate::loss;
use crate::store::{EpochClose, EpochRow, ProposalOutcome, StoreError, TreeNode, TreeNote};

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

/// What a tree search works with, fixed for the run.
struct TreeSetup {
    cfg: tree::TreeConfig,
    /// Evaluations behind each node.
    repeats: u32,
    /// Evaluations (epochs) the plan allows.
    budget: usize,
    proposer: Box<dyn optimizer::Optimizer>,
    /// The model that ideates when the search stalls, if any.
    ideator: Option<crate::llm::LlmClient>,
    /// The artifacts the proposer may change, by name.
    candidates: Vec<String>,
    guard: Guard,
}

/// How a round ended.
enum Round {
    Next,
    /// Nothing more to try: no briefs, or stalled with no ideation left.
    Stop,
    /// Cancelled mid-evaluation.
    Interrupted,
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
}

impl Search {
    /// A search with no nodes yet.
    fn new(ideation_rounds: u32) -> Search {
        Search {
            nodes: Vec::new(),
            results_of: BTreeMap::new(),
            best_mean: f64::INFINITY,
            round: 0,
            reported: BTreeSet::new(),
            evals: 0,
            stall: 0,
            ideation_left: ideation_rounds,
            replay: VecDeque::new(),
            orphans: VecDeque::new(),
        }
    }
}

/// The tree search as a strategy of the runner: its start plants (or
/// restores) the tree, each step is one round, its end makes the best
/// node's versions active.
pub(super) struct TreeSearch {
    setup: TreeSetup,
    search: Search,
    /// Ideation proposals for the next round, with the note each is stored as.
    ideas: Vec<(Idea, i64)>,
}

impl TreeSearch {
    pub(super) fn new(runner: &SuiteRunner, plan: &Plan) -> TreeSearch {
        let setup = runner.tree_setup(plan);
        TreeSearch { search: Search::new(setup.cfg.ideation_rounds), setup, ideas: Vec::new() }
    }
}

impl Strategy for TreeSearch {
    async fn start(&mut self, runner: &SuiteRunner, state: &mut OuterState) -> Result<Flow, RunnerError> {
        // An unrelated epoch an earlier run left unfinished is closed first,
        // as is; one of this plan's is taken up by its measurement.
        if !state.plan.continued
            && let Some(e) = state.take_open()
        {
            runner.run_epoch(state, &e, true).await?;
        }
        self.search = runner.restore(state.suite_id, &state.plan).await?;
        if self.search.nodes.is_empty()
            && self.search.replay.is_empty()
            && !runner.plant_root(state, &self.setup, &mut self.search).await?
        {
            return Ok(Flow::Interrupted);
        }
        Ok(Flow::Next)
    }

    async fn step(&mut self, runner: &SuiteRunner, state: &mut OuterState) -> Result<Flow, RunnerError> {
        // Evaluations stop at the plan's.
        if self.search.evals >= self.setup.budget {
            return Ok(Flow::Done);
        }
        Ok(match runner.tree_round(state, &self.setup, &mut self.search, &mut self.ideas).await? {
            Round::Next => Flow::Next,
            Round::Stop => Flow::Done,
            Round::Interrupted => Flow::Interrupted,
        })
    }

    async fn end(
        &mut self,
        runner: &SuiteRunner,
        state: &mut OuterState,
    ) -> Result<Option<super::settle::Settled>, RunnerError> {
        // A search that stopped (at its budget) before replaying every child
        // of its last round still counts them.
        while let Some((node, results)) = self.search.replay.pop_front() {
            self.search.adopt(node, results);
        }
        if !runner.activate_best(state.suite_id, &self.search).await? || runner.cancelled() {
            state.halt(Halt::Interrupted);
        } else if let Some(reason) = runner.budget_spent() {
            state.halt(Halt::Stopped(reason));
        }
        Ok(None)
    }
}

impl SuiteRunner {
    /// Evaluations behind each decision: the command line's, else the suite's.
    pub(super) fn verify_repeats(&self) -> u32 {
        self.config.verify_repeats.unwrap_or_else(|| self.suite.verify_repeats()).max(1)
    }

    /// What the search works with for the whole run.
    fn tree_setup(&self, plan: &Plan) -> TreeSetup {
        let cfg = self.config.tree.clone();
        let proposer = optimizer::tree_proposer(self.optimizer_llm.clone());
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
        TreeSetup {
            cfg,
            repeats: self.verify_repeats(),
            budget: usize::try_from(plan.epochs).unwrap_or(0),
            proposer,
            ideator,
            candidates,
            guard: Guard::for_suite(&self.suite),
        }
    }

    /// Whether the search may evaluate more: its budget, the run's cancel
    /// and its model budget allow.
    fn may_evaluate(&self, setup: &TreeSetup, search: &Search) -> bool {
        search.evals < setup.budget && !self.cancelled() && self.budget_spent().is_none()
    }

    /// Measures the active versions as the tree's root; `false` when interrupted.
    async fn plant_root(
        &self,
        state: &mut OuterState,
        setup: &TreeSetup,
        search: &mut Search,
    ) -> Result<bool, RunnerError> {
        let suite_id = state.suite_id;
        let root_artifacts = self.snapshot().await?;
        let Some(root) = self.measure(state, &root_artifacts, setup.repeats, search, setup.budget).await? else {
            return Ok(false);
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
        Ok(true)
    }

    /// One round: prune exhausted nodes, read the tree (the analyst), ideate
    /// when the search has stalled, then follow each brief's lane — a
    /// committed child becomes the next child's parent, same focus, up to
    /// the per-branch depth.
    async fn tree_round(
        &self,
        state: &mut OuterState,
        setup: &TreeSetup,
        search: &mut Search,
        ideas: &mut Vec<(Idea, i64)>,
    ) -> Result<Round, RunnerError> {
        let suite_id = state.suite_id;
        let cfg = &setup.cfg;
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
            let Some(client) = setup.ideator.as_ref().filter(|_| search.ideation_left > 0) else {
                return Ok(Round::Stop);
            };
            search.ideation_left -= 1;
            *ideas = self.ideate(client, suite_id, search, &hints, &setup.candidates).await?;
            if ideas.is_empty() {
                tracing::info!(suite = %self.suite.name, "ideation proposed nothing usable: the search stops");
                return Ok(Round::Stop);
            }
        }
        search.round += 1;
        self.store_hints(suite_id, search, &hints).await?;
        let parents =
            tree::frontier(&search.nodes, cfg.selection, draw(self.config.seed, Draw::Frontier, search.round));
        let ranked: Vec<Idea> = ideas.iter().map(|(i, _)| i.clone()).collect();
        let steering = Steering { hints: &hints, ideas: &ranked, max_idea_briefs: cfg.ideation_briefs };
        let briefs = tree::write_briefs(&parents, &setup.candidates, cfg.width.max(1), &steering);
        let idea_notes = std::mem::take(ideas);
        if briefs.is_empty() {
            return Ok(Round::Stop);
        }
        let mut improved = false;
        for brief in briefs {
            let note = brief.idea.as_ref().and_then(|i| idea_notes.iter().find(|(n, _)| n == i)).map(|(_, id)| *id);
            let mut lane = brief;
            for depth in 0..cfg.branch_depth.max(1) {
                if !self.may_evaluate(setup, search) {
                    break;
                }
                let Some(child) = self.make_child(suite_id, search, &lane, &hints, setup, state).await? else {
                    return Ok(Round::Interrupted);
                };
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
        Ok(Round::Next)
    }

    /// Stores the analyst's hints that are new this round.
    async fn store_hints(&self, suite_id: i64, search: &mut Search, hints: &[Hint]) -> Result<(), RunnerError> {
        for h in hints {
            if search.reported.insert(h.key()) {
                self.store
                    .insert_tree_note(
                        suite_id,
                        &TreeNote {
                            round: i64::from(search.round),
                            source: "analyst".into(),
                            kind: h.kind.as_str().into(),
                            artifact: Some(h.artifact.clone()),
                            parent_id: h.parent,
                            text: h.text.clone(),
                            ..TreeNote::default()
                        },
                    )
                    .await?;
            }
        }
        Ok(())
    }

    /// The best node's versions become the active ones (through a person,
    /// under the approval gate); `false` when the run was cancelled while
    /// it waited for that person.
    async fn activate_best(&self, suite_id: i64, search: &Search) -> Result<bool, RunnerError> {
        let Some(best) = tree::best(&search.nodes) else { return Ok(true) };
        if self.approval_mode() != super::ApprovalMode::Off {
            let root = search.nodes.iter().find(|n| n.parent.is_none()).map(|n| n.mean);
            return self.gate_tree_best(suite_id, best, root).await;
        }
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
        Ok(true)
    }

    /// The contents of the versions of `artifact` the tree's nodes hold,
    /// the root's included: a child equal to one of them would only measure
    /// it again. Read from the search (replayed exactly on resume), not
    /// from the registry, which keeps versions a killed run made.
    async fn tree_versions(&self, search: &Search, artifact: &str) -> Result<Vec<String>, RunnerError> {
        let versions: std::collections::BTreeSet<i64> =
            search.nodes.iter().map(|n| n.artifacts.get(artifact).copied().unwrap_or(0)).collect();
        let mut out = Vec::with_capacity(versions.len());
        for v in versions {
            out.push(self.registry.get(artifact, v).await?.content);
        }
        Ok(out)
    }

    /// Makes, checks, evaluates and judges one child; `None` when
    /// interrupted mid-evaluation.
    async fn make_child(
        &self,
        suite_id: i64,
        search: &mut Search,
        brief: &Brief,
        hints: &[Hint],
        setup: &TreeSetup,
        state: &mut OuterState,
    ) -> Result<Option<ChildOutcome>, RunnerError> {
        let cfg = &self.config.tree;
        let TreeSetup { guard, proposer, .. } = setup;
        let (repeats, budget) = (setup.repeats, setup.budget);
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
            // η as it stands (halved by the rollbacks before the search), not as configured.
            learning_rate: state.learning_rate(),
            tasks: search.results_of.get(&parent.id).map(|rs| super::close::task_evidence(rs)).unwrap_or_default(),
            candidates: vec![optimizer::Candidate {
                def: self.registry.def(&brief.focus)?.clone(),
                version: from_version,
                content: content.clone(),
                seen: self.tree_versions(search, &brief.focus).await?,
            }],
            seed: draw_u64(self.config.seed, Draw::Child, search.nodes.len()),
            history: BTreeMap::new(),
            guidance: guidance.clone(),
        };
        let step = or_worked_examples(proposer.propose(&evidence).await?, &evidence);
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
        let Some(measured) = self.measure(state, &artifacts, repeats, search, budget).await? else {
            return Ok(None);
        };
        let first_epoch = measured.epoch_id;
        let probe = node_of(0, Some(parent.id), artifacts.clone(), &measured, NodeStatus::Committed);
        // Drawn once: the judgement states it, the proposal row keeps it.
        let decision = tree::paired(&parent, &probe);
        let (status, note, feedback) = match tree::judge_on(
            &parent,
            &probe,
            decision.as_ref(),
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
        let lr = state.learning_rate();
        self.store_proposals(first_epoch, proposer.name(), &step, verdict, decision, lr).await?;
        let new_best = status == NodeStatus::Committed && child.mean < search.best_mean;
        if new_best {
            search.best_mean = child.mean;
        }
        let id = child.id;
        search.results_of.insert(child.id, results);
        search.nodes.push(child);
        Ok(Some(ChildOutcome { id, new_best }))
    }

    /// Evaluates an artifact set `repeats` times (one epoch each), within
    /// the evaluation budget; the per-task losses are averaged. An epoch of
    /// the same set a stopped run left behind is taken up, not run again.
    async fn measure(
        &self,
        state: &mut OuterState,
        artifacts: &BTreeMap<String, i64>,
        repeats: u32,
        search: &mut Search,
        budget: usize,
    ) -> Result<Option<Measured>, RunnerError> {
        let suite_id = state.suite_id;
        let mut samples: Vec<(i64, Vec<TaskResult>, Option<f64>)> = Vec::new();
        for _ in 0..repeats.max(1) {
            if search.evals >= budget && !samples.is_empty() {
                break;
            }
            let (epoch, adopted) = match self.orphan_of(state, search, artifacts).await? {
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
            let EpochMeans { mean_loss: mean, holdout_mean } = EpochMeans::of(&eval.results);
            if epoch.completed_at.is_none() {
                self.close_tree_epoch(state, &epoch, artifacts, (mean, holdout_mean)).await?;
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
        state: &mut OuterState,
        epoch: &EpochRow,
        artifacts: &BTreeMap<String, i64>,
        (mean, holdout_mean): (Option<f64>, Option<f64>),
    ) -> Result<(), RunnerError> {
        let lr = state.learning_rate();
        let changed: Vec<String> =
            artifacts.iter().filter(|(_, v)| **v != 0).map(|(name, v)| format!("{name} v{v}")).collect();
        let note = if changed.is_empty() {
            format!("{TREE_EPOCH} evaluated the starting versions")
        } else {
            format!("{TREE_EPOCH} evaluated {}", changed.join(", "))
        };
        self.store
            .complete_epoch(epoch.id, mean, &EpochClose::default(), |_| {
                let record = EpochRecord {
                    artifacts: artifacts.clone(),
                    note: Some(note.clone()),
                    learning_rate: Some(lr),
                    ..EpochRecord::default()
                };
                record.to_json()
            })
            .await?;
        self.epoch_closed(
            state,
            EpochSummary {
                epoch_id: epoch.id,
                epoch_num: epoch.epoch_num,
                mean_loss: mean,
                holdout_mean_loss: holdout_mean,
                learning_rate: lr,
                resumed: false,
                events: vec![],
                note: Some(note),
                model: None,
            },
        );
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

/// A brief whose proposer wrote no usable child — a small model hands the
/// current text back unchanged, even when told so (Qwen2.5-Coder-1.5B did
/// for every brief on the support suites) — still gets one when the
/// evidence has labelled examples: the worked-examples move, which needs no
/// model (the screening search's), drawn with the child's seed, unless the
/// artifact had that text before.
fn or_worked_examples(step: optimizer::Step, ev: &optimizer::Evidence) -> optimizer::Step {
    if step.winner.is_some() {
        return step;
    }
    let Some(cand) = ev.candidates.first().filter(|c| c.def.kind == crate::artifact::ArtifactKind::Text) else {
        return step;
    };
    let Some(mut c) = super::screen::worked_examples(ev, cand, ev.seed) else { return step };
    let Some(p) = c.proposal.as_mut() else { return step };
    let text = super::textgrad::same_words(&p.content);
    if cand.seen.iter().any(|seen| super::textgrad::same_words(seen) == text) {
        return step;
    }
    p.details.insert("optimizer".into(), serde_json::json!("tree"));
    p.details.insert("move".into(), serde_json::json!("examples"));
    let winner = c.proposal.clone();
    let mut considered = step.considered;
    considered.push(c);
    optimizer::Step { winner, considered, idle: None }
}
