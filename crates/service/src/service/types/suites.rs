//! The suites and their epochs as the lists, the Charts, Runs and Graph screens
//! read them: statuses, epochs with their runs and events, the experiment graph,
//! the optimizer's proposals.

use super::*;

pub use crate::domain::{RunState, TaskType};

/// What a suite is doing as far as this service can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum SuiteStatus {
    /// Nothing runs; every epoch is closed.
    Idle,
    /// A launch of this service is running it now.
    Running,
    /// An epoch is open and no launch of this service runs it: another
    /// process (`attractor run`) is running it, or it was interrupted (Ctrl-C,
    /// a crash, a cancel). The database cannot tell which; launching the
    /// suite again resumes it either way.
    Unfinished,
    /// The last launch of this service ended with an error.
    Failed,
    /// A trajectory of the suite waits for a person's answer in the inbox
    /// (a budget extension, a trapped trajectory), or its run waits for a
    /// decision on an artifact update (the approval gate); the run goes on
    /// once it is answered, from the app or `attractor answer`.
    Paused,
    /// Registered from a watched file whose commands wait for a person's
    /// approval in the inbox: nothing of it runs before that.
    AwaitingApproval,
}

/// One row of the suites screen.
#[derive(Debug, Clone, Serialize, TS)]
pub struct SuiteItem {
    pub id: i64,
    pub name: String,
    pub created_at: String,
    /// Completed epochs.
    pub epochs: i64,
    pub latest_mean_loss: Option<f64>,
    pub status: SuiteStatus,
    pub tasks: usize,
    pub holdout_tasks: usize,
    /// The suite file last launched from here (for "Launch again").
    pub suite_path: Option<String>,
    /// Why the last launch failed, when it did.
    pub last_error: Option<String>,
    /// The running launch, when there is one.
    pub launch_id: Option<i64>,
    /// How the runs of the suite's latest launch ended, once it has ended
    /// (a launch can finish with every run failed: the suite is idle, its
    /// results are not to be trusted). Given in the suites list (the Suites
    /// screen); `None` elsewhere.
    pub last_launch_runs: Option<super::LaunchRuns>,
    /// What every model call made for the suite cost (none: no call yet).
    pub model: Option<crate::llm::ModelSpend>,
}

/// A task as the suite declared it (the parts the screens show).
#[derive(Debug, Clone, Serialize, TS)]
pub struct TaskInfo {
    pub name: String,
    pub kind: TaskType,
    /// Evaluated every epoch, never shown to the optimizer.
    pub holdout: bool,
}

/// An artifact move recorded in an epoch's record (seed 004 §12): the
/// stored type itself.
pub use crate::domain::ArtifactEvent;

/// The five parts of a run's loss (seed 004 §6), or their weights: each
/// component is in [0, 1] before its weight, and the loss is Σ weight × component.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, TS)]
pub struct LossParts {
    pub eval: f64,
    pub critique: f64,
    pub gate_rejections: f64,
    pub budget: f64,
    pub status: f64,
}

/// A run as tables show it: no captured output.
#[derive(Debug, Clone, Serialize, TS)]
pub struct RunItem {
    pub id: i64,
    pub epoch_id: i64,
    pub epoch_num: i64,
    pub task: String,
    pub kind: TaskType,
    pub status: RunState,
    pub holdout: bool,
    /// Whether this run's loss is the one its epoch counts (a cancelled run
    /// that was re-run is not).
    pub counted: bool,
    pub loss: Option<f64>,
    /// The loss's components, each in [0, 1].
    pub parts: Option<LossParts>,
    /// The weights the components were multiplied by (the task's own or the defaults).
    pub weights: Option<LossParts>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub duration_ms: Option<i64>,
    pub exit_code: Option<i64>,
    pub error: Option<String>,
}

/// One task's counted loss in an epoch (the boxplot's points).
#[derive(Debug, Clone, Serialize, TS)]
pub struct TaskLoss {
    pub task: String,
    pub run_id: i64,
    pub loss: f64,
    pub status: RunState,
    pub holdout: bool,
}

/// One epoch with its losses and artifact moves (seed 004 §11 "per-epoch
/// details + per-task losses + artifact events").
#[derive(Debug, Clone, Serialize, TS)]
pub struct EpochView {
    pub epoch_id: i64,
    pub epoch_num: i64,
    pub started_at: String,
    pub completed_at: Option<String>,
    /// Mean over the training tasks (held-out ones when a suite has only those).
    pub mean_loss: Option<f64>,
    pub holdout_mean_loss: Option<f64>,
    /// Active versions the epoch's runs used.
    pub parent_artifacts: BTreeMap<String, i64>,
    /// Active versions after the epoch closed.
    pub child_artifacts: BTreeMap<String, i64>,
    pub events: Vec<ArtifactEvent>,
    /// Each event as the screens say it (`rollback knobs v2→v1 (held-out
    /// loss rose 0.0200 → 0.0354)`), in the order of `events`.
    pub transitions: Vec<String>,
    /// Why the epoch changed nothing, when an optimizer was asked and
    /// nothing it proposed could be used.
    pub note: Option<String>,
    /// What the optimizer's model calls cost at the end of the epoch.
    pub model: Option<crate::llm::ModelSpend>,
    pub tasks: Vec<TaskLoss>,
    /// Every run, counted or not; empty when the request left runs out.
    pub runs: Vec<RunItem>,
}

/// Everything the charts and the runs screen need about one suite.
#[derive(Debug, Clone, Serialize, TS)]
pub struct SuiteEpochs {
    pub suite: SuiteItem,
    pub tasks: Vec<TaskInfo>,
    /// Artifacts the suite's runs see, in name order (the timeline's rows).
    pub artifacts: Vec<String>,
    /// The page's epochs, oldest first.
    pub epochs: Vec<EpochView>,
    /// Which epochs these are of how many.
    pub page: EpochPage,
}

/// A page of a suite's epochs, counted from the newest: `offset` newest
/// epochs skipped, at most `limit` shown, `total` in the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
pub struct EpochPage {
    pub offset: u32,
    pub limit: u32,
    pub total: i64,
}

/// Which page of a suite's epochs to read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EpochPageArgs {
    /// Newest epochs to skip [default 0].
    pub offset: Option<u32>,
    /// Epochs on the page, 1 to 500 [default 20].
    pub limit: Option<u32>,
    /// Only the epochs this launch ran (its id, as the Live screen lists it).
    pub launch: Option<i64>,
}

/// Epochs a page of `GET /suites/{key}/epochs` holds unless it says.
pub const DEFAULT_EPOCH_PAGE: u32 = 20;
/// The most epochs one page may hold.
pub const MAX_EPOCH_PAGE: u32 = 500;

/// A suite's graph (seed 004 §11's Graph view). For a suite grown with
/// `--optimizer tree` it is the experiment tree: one node per tree node, one
/// edge from a parent to each child labelled with the artifact it changed.
/// Otherwise it is the chain of epochs: one node per epoch, one edge per step
/// to the next epoch labelled with the artifact moves made in between.
#[derive(Debug, Clone, Serialize, TS)]
pub struct SuiteGraph {
    pub suite: String,
    pub kind: GraphKind,
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
    /// A tree search's notes, oldest first: the analyst's hints and the
    /// ideation proposals of each round (empty for a chain of epochs).
    pub notes: Vec<TreeNoteView>,
}

/// One analyst hint or ideation proposal of a tree search.
#[derive(Debug, Clone, Serialize, TS)]
pub struct TreeNoteView {
    pub round: i64,
    pub source: NoteSource,
    pub kind: NoteKind,
    pub artifact: Option<String>,
    pub parent_id: Option<i64>,
    pub text: String,
    pub expected_loss_reduction: Option<f64>,
    pub confidence: Option<f64>,
    /// The child this note led to, if any.
    pub node_id: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum GraphKind {
    Epochs,
    Tree,
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct GraphNode {
    /// `epoch-{epoch_num}`, or `node-{id}` in a tree.
    pub id: String,
    /// The epoch (a tree node's first evaluation; none for a node rejected
    /// before it was evaluated).
    pub epoch_num: Option<i64>,
    pub mean_loss: Option<f64>,
    pub holdout_mean_loss: Option<f64>,
    /// Only the artifacts not at version 0, e.g. `descent_settings v2`.
    pub label: String,
    pub artifacts: BTreeMap<String, i64>,
    /// Set on the nodes of an experiment tree.
    pub tree: Option<TreeNodeView>,
}

/// What the Graph view shows about one node of an experiment tree.
#[derive(Debug, Clone, Serialize, TS)]
pub struct TreeNodeView {
    pub node_id: i64,
    pub parent_id: Option<i64>,
    pub status: crate::outer::tree::NodeStatus,
    /// The artifact changed against the parent, with its versions (`to` is
    /// missing when the child was rejected before a version was written).
    pub changed_artifact: Option<String>,
    pub from_version: Option<i64>,
    pub to_version: Option<i64>,
    pub brief: Option<String>,
    /// Why it was committed, discarded, rejected or pruned.
    pub note: Option<String>,
    /// The search round that made it (none for a root).
    pub round: Option<i64>,
    /// The proposer's reason for the change.
    pub rationale: Option<String>,
    /// The direction ideation or the analyst gave the proposer, if any.
    pub guidance: Option<String>,
    pub evaluations: i64,
    /// Mean loss of each training task.
    pub task_losses: BTreeMap<String, f64>,
    /// The best node of the tree (lowest mean loss among committed and pruned).
    pub best: bool,
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct GraphEdge {
    pub source: String,
    pub target: String,
    /// `update descent_settings v1→v2`, or empty when nothing moved.
    pub label: String,
    pub events: Vec<ArtifactEvent>,
}

/// One proposal an optimizer considered at the end of an epoch: what it
/// predicted and, one epoch later, what happened.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ProposalItem {
    pub id: i64,
    pub epoch_num: i64,
    pub optimizer: String,
    pub artifact: String,
    pub outcome: crate::store::ProposalOutcome,
    pub parent_version: i64,
    pub applied_version: Option<i64>,
    pub rationale: Option<String>,
    pub expected_loss_reduction: Option<f64>,
    pub confidence: Option<f64>,
    /// Previous mean loss minus the next epoch's; set once that epoch closed.
    pub observed_loss_reduction: Option<f64>,
    pub rolled_back: bool,
    /// What the decision to keep or roll it back saw, task by task (a
    /// judged winner's).
    pub decision: Option<crate::loss::paired::PairedEvidence>,
    /// `decision` in the words the command line uses (one wording, made here).
    pub decision_summary: Option<String>,
    pub rejection: Option<String>,
    pub learning_rate: f64,
    /// A winner a person edited in the Inbox before it was applied: the
    /// version it became holds the person's content, not the rationale's.
    pub edited_by_person: bool,
}

/// The examples a dataset harness scored differently in two epochs of a suite.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ExampleFlips {
    pub suite: String,
    pub from_epoch: i64,
    pub to_epoch: i64,
    /// The artifact versions each epoch ran with.
    pub from_versions: BTreeMap<String, i64>,
    pub to_versions: BTreeMap<String, i64>,
    /// Examples both epochs scored (0: the harness lists none).
    pub compared: u32,
    /// Fixed and broken ones, in task order.
    pub flips: Vec<crate::task::examples::ExampleFlip>,
}

/// Every proposal of a suite, oldest epoch first.
#[derive(Debug, Clone, Serialize, TS)]
pub struct SuiteProposals {
    pub suite: String,
    pub proposals: Vec<ProposalItem>,
}

/// A run's epoch context (seed 004 §11 `/api/runs/{id}/epoch`).
#[derive(Debug, Clone, Serialize, TS)]
pub struct RunEpoch {
    pub run_id: i64,
    pub suite_id: i64,
    pub suite: String,
    pub epoch: EpochView,
}
