//! What the service facade hands out and takes in: plain data, serialized as
//! JSON by both transports (HTTP, the desktop's Tauri command).
//!
//! Every type here derives [`ts_rs::TS`], so the front end's TypeScript types
//! in `ui/src/generated/` are generated from these very definitions; a test
//! (`service::ts_export`) fails when the committed files are stale. 64-bit
//! integers are exported as `number`: ids and counts stay far below 2^53.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use crate::artifact::compare::DiffBasis;
pub use crate::outer::RollbackReason;
pub use crate::report::shape::SuiteCharts;

/// An enum of the API whose values the store keeps as text: `parse` reads
/// the stored text, and text this version does not know (a newer version
/// wrote it) reads as the variant after `else`. The front end then sees one
/// of the listed values, never a free string.
macro_rules! stored_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? } else $fallback:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub fn parse(s: &str) -> $name {
                match s {
                    $($text => $name::$variant,)+
                    _ => $name::$fallback,
                }
            }

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
}

stored_enum! {
    /// Where an agent trajectory stands.
    TrajectoryState {
        Running = "running",
        /// Paused on a question to a person.
        Paused = "paused",
        Converged = "converged",
        Partial = "partial",
        Exhausted = "exhausted",
        Abandoned = "abandoned",
        Trapped = "trapped",
        Failed = "failed",
        /// A group or split waiting on its children.
        Coordinating = "coordinating",
        /// A sample another one beat.
        Superseded = "superseded",
        Cancelled = "cancelled",
        /// A state this version does not know.
        Other = "other",
    } else Other
}

stored_enum! {
    /// What a trajectory is to its run.
    TrajectoryRole {
        Root = "root",
        /// The root of parallel samples; it makes no attempt itself.
        Parallel = "parallel",
        Sample = "sample",
        Subtask = "subtask",
        /// Measures the subtasks' combined work with the task's own overseers.
        Integration = "integration",
    } else Root
}

stored_enum! {
    /// What the diagnostics said of a numeric trajectory at a step.
    NumericTrajectoryState {
        InProgress = "IN_PROGRESS",
        Stagnation = "STAGNATION",
        FeasibleFound = "FEASIBLE_FOUND",
        Diverging = "DIVERGING",
    } else InProgress
}

stored_enum! {
    /// Who wrote a tree search's note.
    NoteSource {
        Analyst = "analyst",
        Ideation = "ideation",
    } else Analyst
}

stored_enum! {
    /// What a tree search's note says.
    NoteKind {
        DeadDirection = "dead_direction",
        SaturatedAxis = "saturated_axis",
        FrontierExtrapolation = "frontier_extrapolation",
        FailureAnalysis = "failure_analysis",
        /// A kind this version does not know.
        Other = "other",
    } else Other
}

stored_enum! {
    /// What a watched file defines.
    WatchedFileKind {
        Suite = "suite",
        Task = "task",
    } else Suite
}

stored_enum! {
    /// Where a watched file stands.
    WatchedFileStatus {
        Invalid = "invalid",
        Failed = "failed",
        AwaitingApproval = "awaiting_approval",
        Rejected = "rejected",
        Ready = "ready",
        Removed = "removed",
    } else Failed
}

stored_enum! {
    /// Whether the watcher runs a registered file by itself.
    WatchedRunMode {
        Manual = "manual",
        Auto = "auto",
    } else Manual
}

stored_enum! {
    /// Where the run the watcher queued for a file stands.
    WatchedRunStatus {
        Queued = "queued",
        Running = "running",
        Finished = "finished",
        Failed = "failed",
        Cancelled = "cancelled",
        Dropped = "dropped",
    } else Failed
}

stored_enum! {
    /// A watched file's approval to run commands.
    CommandApproval {
        Pending = "pending",
        Approved = "approved",
        Rejected = "rejected",
    } else Pending
}

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
    /// What every model call made for the suite cost (none: no call yet).
    pub model: Option<crate::llm::ModelSpend>,
}

/// What kind of task a task (or its run) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum TaskType {
    Command,
    Agent,
    Optimize,
}

impl TaskType {
    /// As the store and the suite record it; a command task unless it says otherwise.
    pub fn parse(s: &str) -> TaskType {
        match s {
            "agent" => TaskType::Agent,
            "optimize" => TaskType::Optimize,
            _ => TaskType::Command,
        }
    }
}

/// Where a run is: still running, or how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Running,
    Complete,
    Partial,
    Failed,
    /// The task gave up (or Attractor stopped it) before an answer.
    Aborted,
    /// A person or a shutdown cancelled it; the epoch re-runs it on resume.
    Cancelled,
}

impl RunState {
    /// As the store records it. Every status is one this code wrote; one it
    /// does not know (a newer version's) reads as failed rather than as fine.
    pub fn parse(s: &str) -> RunState {
        match s {
            "running" => RunState::Running,
            "complete" => RunState::Complete,
            "partial" => RunState::Partial,
            "aborted" => RunState::Aborted,
            "cancelled" => RunState::Cancelled,
            _ => RunState::Failed,
        }
    }
}

/// A task as the suite declared it (the parts the screens show).
#[derive(Debug, Clone, Serialize, TS)]
pub struct TaskInfo {
    pub name: String,
    pub kind: TaskType,
    /// Evaluated every epoch, never shown to the optimizer.
    pub holdout: bool,
}

/// An artifact move recorded in an epoch's `child_artifacts_json` (seed 004 §12).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ArtifactEvent {
    Update {
        artifact: String,
        from_version: i64,
        to_version: i64,
        rationale: String,
        expected_loss_reduction: Option<f64>,
        confidence: Option<f64>,
        learning_rate: Option<f64>,
    },
    Rollback {
        artifact: String,
        from_version: i64,
        to_version: i64,
        mean_loss_prev: Option<f64>,
        mean_loss_current: Option<f64>,
        new_learning_rate: Option<f64>,
        /// Why the update went (`None` in epochs recorded before reasons were).
        reason: Option<RollbackReason>,
        holdout_mean_prev: Option<f64>,
        holdout_mean_current: Option<f64>,
    },
}

impl ArtifactEvent {
    pub fn artifact(&self) -> &str {
        match self {
            ArtifactEvent::Update { artifact, .. } | ArtifactEvent::Rollback { artifact, .. } => artifact,
        }
    }
}

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
    pub rejection: Option<String>,
    pub learning_rate: f64,
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

/// Where a line of a diff comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum DiffTag {
    Equal,
    Delete,
    Insert,
}

/// One line of a line-based diff. Line numbers are 1-based; a deleted line
/// has only an old number, an inserted one only a new number.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct DiffLine {
    pub tag: DiffTag,
    pub old_line: Option<u32>,
    pub new_line: Option<u32>,
    pub text: String,
}

/// The line diff between two versions of an artifact.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct LineDiff {
    pub artifact: String,
    pub from_version: i64,
    pub to_version: i64,
    pub basis: DiffBasis,
    pub added: usize,
    pub removed: usize,
    pub lines: Vec<DiffLine>,
}

/// One version of an artifact, with its diff against its parent.
#[derive(Debug, Clone, Serialize, TS)]
pub struct VersionView {
    pub version: i64,
    pub content: String,
    pub parent_version: Option<i64>,
    pub created_at: Option<String>,
    pub epoch_id: Option<i64>,
    pub epoch_num: Option<i64>,
    /// The suite whose epoch created this version.
    pub suite: Option<String>,
    pub is_active: bool,
    /// `None` for version 0, the default.
    pub diff_from_parent: Option<LineDiff>,
    /// The experiment-tree node that made this version (`--optimizer tree`),
    /// with what the search decided about it.
    pub tree_node: Option<VersionTreeNode>,
}

/// The tree node a version came from.
#[derive(Debug, Clone, Serialize, TS)]
pub struct VersionTreeNode {
    pub node_id: i64,
    pub status: crate::outer::tree::NodeStatus,
}

/// An artifact as the list on the artifact screen shows it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ArtifactItem {
    pub name: String,
    /// text or json.
    pub kind: crate::artifact::ArtifactKind,
    pub description: String,
    /// `built-in`, or the name of the suite that declares it.
    pub origin: String,
    pub active_version: i64,
    /// Versions including 0.
    pub versions: usize,
}

/// Every version of an artifact, version 0 first (seed 004 §11
/// `/api/artifacts/{name}/versions`).
#[derive(Debug, Clone, Serialize, TS)]
pub struct ArtifactHistory {
    pub artifact: ArtifactItem,
    pub versions: Vec<VersionView>,
}

/// One step of a run's ASO telemetry (seed 000 §2.3): an optimize run's, or
/// a supervised agent run's (objective = the distance D, evaluations =
/// iterations, trajectory = its place among the run's samples).
#[derive(Debug, Clone, Serialize, TS)]
pub struct TelemetryStep {
    pub timestamp: String,
    pub cycle: i64,
    pub trajectory_id: i64,
    pub step: i64,
    pub status: NumericTrajectoryState,
    pub objective: Option<f64>,
    pub max_violation: Option<f64>,
    pub directive_action: crate::aso::directive::DirectiveAction,
    /// heuristic, llm, fallback (the heuristic after a failed model call),
    /// human, or convergence (the engine ended or paused the trajectory itself).
    pub directive_source: crate::aso::directive::DirectiveSource,
    pub evals_used: i64,
    pub wall_time_ms: Option<f64>,
    pub llm_call_made: bool,
}

/// The end of a captured stream, cut at a line boundary.
#[derive(Debug, Clone, Serialize, TS)]
pub struct OutputTail {
    pub text: String,
    /// Whether earlier output was left out.
    pub truncated: bool,
}

/// A run with everything the run detail screen shows.
#[derive(Debug, Clone, Serialize, TS)]
pub struct RunDetail {
    pub run: RunItem,
    pub suite_id: i64,
    pub suite: String,
    pub run_dir: String,
    /// What the run's model calls cost (none: it made none).
    pub model: Option<crate::llm::ModelSpend>,
    /// What the task reported (`run_completion.json` or the optimize result).
    #[ts(type = "unknown")]
    pub result: Option<serde_json::Value>,
    pub stdout: OutputTail,
    pub stderr: OutputTail,
    /// Empty for runs without a coordinator (command tasks).
    pub telemetry: Vec<TelemetryStep>,
    /// The convergence engine's trajectories of an agent run, oldest first
    /// (empty for other kinds).
    pub trajectories: Vec<TrajectoryView>,
}

/// One trajectory of an agent run with every iteration.
#[derive(Debug, Clone, Serialize, TS)]
pub struct TrajectoryView {
    pub id: String,
    /// The trajectory this one belongs to (a parallel group, a split task).
    pub parent_id: Option<String>,
    pub role: TrajectoryRole,
    /// Its place among its siblings (1, 2, …; 0 for a root).
    pub ordinal: i64,
    pub task_name: String,
    pub category: String,
    pub status: TrajectoryState,
    pub iterations: i64,
    pub tokens_used: i64,
    pub final_level: Option<f64>,
    /// The iteration whose work the trajectory's result is.
    pub best_sequence: Option<i64>,
    /// The question the trajectory waits on, when paused.
    pub pending_intervention_id: Option<i64>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub observations: Vec<IterationView>,
}

/// One iteration: what was tried, what the overseers and the engine made of it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct IterationView {
    pub sequence: i64,
    pub strategy: String,
    /// Chosen by a rule (a directive, a fresh start) rather than the bandit.
    pub forced: bool,
    pub attractor: String,
    pub attractor_confidence: f64,
    /// Convergence level in [0, 1].
    pub level: f64,
    pub delta: Option<f64>,
    /// The goal-gradient loss L = α·D + β·P + λ·Ω and its parts.
    pub loss: f64,
    pub loss_d: f64,
    pub loss_p: f64,
    pub loss_omega: f64,
    pub grad_l: f64,
    /// refine, change_path, change_approach, break_symmetry or abandon.
    pub directive: String,
    pub rationale: String,
    pub loop_control: String,
    pub next_strategy: Option<String>,
    pub tokens: i64,
    pub wall_time_ms: i64,
    pub files_changed: i64,
    pub lines_changed: i64,
    pub applied_edits: i64,
    pub rejected_edits: i64,
    pub commit_id: String,
    pub summary: String,
    pub verdict_summary: String,
}

/// What the system wants a person to know about a question it asks.
#[derive(Debug, Clone, Default, Serialize, TS)]
pub struct InterventionContext {
    pub what: Option<String>,
    pub why: Option<String>,
    #[ts(type = "unknown")]
    pub evidence: Option<serde_json::Value>,
    /// Machine name of what an approval does, e.g. `double_budget`.
    pub proposed_action: Option<String>,
    /// The proposal in words.
    pub proposal: Option<String>,
    /// For an execution approval: exactly the commands approving allows.
    pub commands: Vec<crate::watch::PlannedCommand>,
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct InterventionItem {
    pub id: i64,
    pub kind: InterventionKind,
    pub status: InterventionStatus,
    pub suite_id: Option<i64>,
    pub run_id: Option<i64>,
    pub task: Option<String>,
    pub subject: String,
    pub context: InterventionContext,
    pub answer: Option<String>,
    pub answer_text: Option<String>,
    pub created_at: String,
    pub answered_at: Option<String>,
    /// For a gated artifact update (`artifact_update`): what a person
    /// judges it on, and what became of it.
    pub update: Option<UpdateReview>,
}

/// Where an intervention stands. A question is `pending` until
/// `answered`; a notice (an intervention point in `notify` mode, waited on
/// by nobody) is `notice` until `dismissed` (then `answered_at` is when).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum InterventionStatus {
    Pending,
    Answered,
    Notice,
    Dismissed,
}

impl InterventionStatus {
    pub fn parse(s: &str) -> InterventionStatus {
        match s {
            "answered" => InterventionStatus::Answered,
            "notice" => InterventionStatus::Notice,
            "dismissed" => InterventionStatus::Dismissed,
            _ => InterventionStatus::Pending,
        }
    }
}

/// What an intervention is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum InterventionKind {
    /// A trajectory asks for more budget.
    BudgetExtension,
    /// A trapped trajectory, or an optimize task whose model tier keeps failing.
    HumanEscalation,
    /// An attractor turned into trouble.
    AttractorTransition,
    /// The escalation strategy chosen next.
    StrategyEscalation,
    /// An ambiguous specification.
    AmbiguityDetected,
    /// Accepting a partial result.
    PartialResult,
    /// A watched file asks to run commands.
    ExecutionApproval,
    /// An optimizer's update waits for approval (the approval gate).
    ArtifactUpdate,
    /// A kind this version does not know (written by a newer one).
    Other,
}

impl InterventionKind {
    pub fn parse(s: &str) -> InterventionKind {
        use crate::task::agent::intervene as i;
        match s {
            i::BUDGET_EXTENSION => InterventionKind::BudgetExtension,
            i::HUMAN_ESCALATION => InterventionKind::HumanEscalation,
            i::ATTRACTOR_TRANSITION => InterventionKind::AttractorTransition,
            i::STRATEGY_ESCALATION => InterventionKind::StrategyEscalation,
            i::AMBIGUITY_DETECTED => InterventionKind::AmbiguityDetected,
            i::PARTIAL_RESULT => InterventionKind::PartialResult,
            crate::watch::EXECUTION_APPROVAL => InterventionKind::ExecutionApproval,
            crate::outer::approval::QUESTION_KIND => InterventionKind::ArtifactUpdate,
            _ => InterventionKind::Other,
        }
    }
}

/// An artifact update the approval gate holds, as the Inbox shows it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct UpdateReview {
    pub approval_id: i64,
    pub suite: String,
    pub artifact: String,
    pub artifact_kind: crate::artifact::ArtifactKind,
    /// The version the proposal starts from.
    pub parent_version: i64,
    pub status: crate::store::ApprovalStatus,
    /// What the run did meanwhile: waited, or went on with the versions it had.
    pub mode: crate::outer::ApprovalMode,
    pub optimizer: String,
    pub rationale: String,
    pub expected_loss_reduction: Option<f64>,
    pub confidence: Option<f64>,
    /// The epoch whose results the proposal answers, and its mean loss.
    pub epoch_num: i64,
    pub mean_loss: Option<f64>,
    /// The training tasks' losses in that epoch (the evidence the optimizer saw).
    pub tasks: Vec<ReviewTask>,
    /// The proposed content: what an edit starts from.
    pub proposed: String,
    /// The parent version against the proposal, or against a person's edit once approved with one.
    pub diff: LineDiff,
    pub edited: bool,
    pub reason: Option<String>,
    /// The version it became, once applied.
    pub applied_version: Option<i64>,
}

/// One task's loss in the evidence of a gated update.
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct ReviewTask {
    pub task: String,
    pub loss: f64,
}

/// A person's decision on a gated artifact update.
#[derive(Debug, Clone, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct UpdateDecision {
    pub verdict: UpdateVerdictKind,
    /// Approve this content instead of the proposal (an edit of it).
    #[serde(default)]
    #[ts(optional)]
    pub content: Option<String>,
    /// Why, in a person's words (kept with a rejection).
    #[serde(default)]
    #[ts(optional)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum UpdateVerdictKind {
    Approve,
    Reject,
}

/// The inbox: pending questions first, then the open notices, then the
/// settled ones — answered questions and dismissed notices (history).
#[derive(Debug, Clone, Serialize, TS)]
pub struct Inbox {
    pub pending: Vec<InterventionItem>,
    /// What the system wants a person to know without waiting for them:
    /// newest first, until dismissed.
    pub notices: Vec<InterventionItem>,
    pub answered: Vec<InterventionItem>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    Approve,
    Reject,
    Hint,
}

impl AnswerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerKind::Approve => "approve",
            AnswerKind::Reject => "reject",
            AnswerKind::Hint => "hint",
        }
    }
}

/// A person's answer to an intervention; a hint needs its text.
#[derive(Debug, Clone, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    pub answer: AnswerKind,
    #[serde(default)]
    #[ts(optional)]
    pub text: Option<String>,
}

/// A request to move an artifact's active pointer.
#[derive(Debug, Clone, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RollbackRequest {
    pub version: i64,
}

/// One problem in a suite file, located to the character.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SuiteIssueView {
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// Dotted path of the field, e.g. `tasks[1].weights.eval`; may be empty.
    pub field: String,
    pub message: String,
    pub hint: Option<String>,
}

/// The verdict on a suite file.
#[derive(Debug, Clone, Serialize, TS)]
pub struct Validation {
    pub valid: bool,
    pub path: String,
    pub suite: Option<String>,
    pub tasks: usize,
    pub holdout_tasks: usize,
    pub artifacts: Vec<String>,
    pub issues: Vec<SuiteIssueView>,
}

#[derive(Debug, Clone, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct ValidateRequest {
    pub suite_path: String,
}

/// What `attractor run` takes, as a request body (same defaults): one
/// type for the CLI, the API, the desktop app and the queue.
pub use crate::outer::request::RunRequest;

/// What a launch would do, before it starts: the runs, and what the model
/// may cost.
#[derive(Debug, Clone, Serialize, TS)]
pub struct LaunchPreview {
    /// Epochs × tasks (for a tree search, evaluations × tasks at most).
    #[ts(type = "number")]
    pub runs: u64,
    /// "plan: 3 epoch(s) × 4 task(s) = 12 run(s); …", as `attractor run` prints it.
    pub plan: String,
    /// "model: about 16 call(s) (…), at most 210000 tokens, cost at most
    /// 0.41"; none when the run calls no model.
    pub model: Option<String>,
}

/// A launch's life: queued, running, then finished, cancelled or failed.
pub use crate::store::QueueStatus as LaunchStatus;

/// A launched suite run: a request of the store's queue, whichever process
/// (the app, `attractor run`, a worker) launched and works it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct LaunchView {
    pub id: i64,
    pub suite: String,
    pub suite_path: String,
    pub suite_id: Option<i64>,
    pub status: LaunchStatus,
    pub epochs_requested: u32,
    pub epochs_done: u32,
    pub optimizer: crate::outer::OptimizerKind,
    /// The base seed, once the run chose it.
    #[ts(type = "number | null")]
    pub seed: Option<u64>,
    /// Who works it: "the Attractor app (pid 42 on host)", "attractor run (…)".
    pub holder: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub error: Option<String>,
    /// Every option the launch was asked for.
    pub request: RunRequest,
}

/// Settings as the settings screen shows them.
#[derive(Debug, Clone, Serialize, TS)]
pub struct SettingsView {
    /// The database this service has open.
    pub db_path: String,
    /// A database path saved for the next start, when it differs.
    pub db_path_next_start: Option<String>,
    /// The LLM endpoint and model saved in the settings file (empty: the
    /// environment decides).
    pub llm_base_url: Option<String>,
    pub llm_model: Option<String>,
    /// What a launch would use now: the settings over the environment.
    pub effective_base_url: String,
    pub effective_model: Option<String>,
    /// Limits of every launch's model calls; empty fields take the defaults.
    pub llm_limits: crate::llm::LlmLimits,
    /// Prices per model, per million tokens.
    pub model_prices: std::collections::BTreeMap<String, crate::llm::ModelPrice>,
    /// Folders outside a suite's own that suites may use (full paths).
    pub allowed_outside: Vec<String>,
    /// Whether a launch would send an API key, and where it comes from: an
    /// environment variable's name or `keychain`. The key itself is never
    /// read back, stored or sent anywhere but the model server.
    pub api_key_present: bool,
    pub api_key_source: Option<String>,
    /// Whether the operating system's keychain can hold the key here.
    pub keychain_available: bool,
    /// Why it cannot, with what to do (or that the environment wins over it).
    pub keychain_note: Option<String>,
    pub settings_file: String,
}

/// A key to keep in the keychain. Its `Debug` never shows the key.
#[derive(Clone, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyRequest {
    pub key: String,
}

impl std::fmt::Debug for ApiKeyRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKeyRequest { key: <redacted> }")
    }
}

/// A change to the settings; a missing field keeps its value, an empty
/// string clears it.
#[derive(Debug, Clone, Default, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct SettingsUpdate {
    #[serde(default)]
    #[ts(optional)]
    pub db_path: Option<String>,
    #[serde(default)]
    #[ts(optional)]
    pub llm_base_url: Option<String>,
    #[serde(default)]
    #[ts(optional)]
    pub llm_model: Option<String>,
    /// Replaces the model-call limits (checked against their bounds).
    #[serde(default)]
    #[ts(optional)]
    pub llm_limits: Option<crate::llm::LlmLimits>,
    /// Replaces the model prices (each checked against its bounds).
    #[serde(default)]
    #[ts(optional)]
    pub model_prices: Option<std::collections::BTreeMap<String, crate::llm::ModelPrice>>,
    /// Replaces the folders suites may use outside their own (each an existing folder's full path).
    #[serde(default)]
    #[ts(optional)]
    pub allowed_outside: Option<Vec<String>>,
}

/// The answer to "test connection" on the settings screen: one tiny chat
/// call through the same client launches use.
#[derive(Debug, Clone, Serialize, TS)]
pub struct LlmCheck {
    pub ok: bool,
    pub base_url: String,
    pub model: Option<String>,
    pub latency_ms: Option<u64>,
    /// The start of the model's reply.
    pub reply: Option<String>,
    /// Why it failed, with what to do about it.
    pub error: Option<String>,
}

/// Counts for the navigation bar's badges.
#[derive(Debug, Clone, Serialize, TS)]
pub struct Overview {
    pub suites: usize,
    pub running_launches: usize,
    pub pending_interventions: i64,
    pub db_path: String,
    pub version: String,
    /// The bundled example suites' folder on this machine (a checkout's
    /// `examples/`, or an installed package's copy), for the first-run hints.
    pub examples_dir: Option<String>,
}

/// The body of every error answer of the HTTP API.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ApiError {
    pub error: String,
    /// Set when a suite file did not validate: every issue, located.
    pub validation: Option<Validation>,
}

/// A folder the watcher keeps an eye on.
#[derive(Debug, Clone, Serialize, TS)]
pub struct WatchedFolderView {
    pub id: i64,
    pub path: String,
    pub added_at: String,
    /// Whether the folder is there now (a missing one is remembered and
    /// scanned again when it is back).
    pub exists: bool,
    /// Files found in it (removed ones included).
    pub files: usize,
}

/// The approval question of a watched file's content.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ApprovalView {
    pub intervention_id: i64,
    pub status: CommandApproval,
    pub commands: Vec<crate::watch::PlannedCommand>,
}

/// The run the watcher queued for a `run: auto` file's current content.
#[derive(Debug, Clone, Serialize, TS)]
pub struct WatchedRunView {
    pub id: i64,
    pub status: WatchedRunStatus,
    pub launch_id: Option<i64>,
    pub suite_id: Option<i64>,
    pub queued_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub error: Option<String>,
}

/// A suite or task file the watcher found.
#[derive(Debug, Clone, Serialize, TS)]
pub struct WatchedFileView {
    pub id: i64,
    pub folder_id: i64,
    pub path: String,
    pub kind: WatchedFileKind,
    pub status: WatchedFileStatus,
    pub suite: Option<String>,
    pub suite_id: Option<i64>,
    pub run_mode: WatchedRunMode,
    /// The first 12 hex digits of the content's SHA-256.
    pub content_hash: String,
    /// Every problem of an invalid file, located.
    pub issues: Vec<SuiteIssueView>,
    /// Why a valid file could not be registered.
    pub error: Option<String>,
    pub approval: Option<ApprovalView>,
    pub run: Option<WatchedRunView>,
    pub first_seen_at: String,
    pub updated_at: String,
    pub removed_at: Option<String>,
}

/// The Watched Folders screen: folders, their files, and whether this
/// process is watching at all.
#[derive(Debug, Clone, Serialize, TS)]
pub struct WatchedFolders {
    pub watching: bool,
    pub folders: Vec<WatchedFolderView>,
    pub files: Vec<WatchedFileView>,
}

/// A folder to watch.
#[derive(Debug, Clone, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct WatchFolderRequest {
    pub path: String,
}

// ----- the trajectory repository (seed 002 §10.2) and memory -------------------

pub use crate::memory::repository::{MemoryItem, SimilarTrajectories, SimilarTrajectory, TrajectoryStats};
pub use crate::store::{AttractorCount, CategoryStats, ComplexityStats, StrategyStats, TrajectoryBrief};

/// What to find similar trajectories to: a run's (agent task's) trajectory,
/// a trajectory (any one of a run that drove several), or a task described
/// in words — exactly one of the three. (Also read from a URL's query, which
/// may carry `access_token`: unknown keys are ignored.)
#[derive(Debug, Clone, Default, Deserialize, TS)]
pub struct SimilarRequest {
    #[serde(default)]
    #[ts(optional)]
    pub run_id: Option<i64>,
    #[serde(default)]
    #[ts(optional)]
    pub trajectory_id: Option<String>,
    #[serde(default)]
    #[ts(optional)]
    pub task: Option<String>,
    /// Trajectories of this category count as more similar (a run's own
    /// category when the question is a run and this is not given).
    #[serde(default)]
    #[ts(optional)]
    pub category: Option<String>,
    /// At most this many answers [default 10, at most 200].
    #[serde(default)]
    #[ts(optional)]
    pub limit: Option<u32>,
}

/// A suite's report written into a folder (`attractor report`, the desktop
/// app's Export).
#[derive(Debug, Clone, Serialize, TS)]
pub struct ReportWritten {
    pub suite: String,
    /// The folder, absolute.
    pub dir: String,
    /// The page to open: `index.html` in `dir`.
    pub index: String,
    /// Every file written, by name.
    pub files: Vec<String>,
}
