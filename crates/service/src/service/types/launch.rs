//! Launching a suite: its validation with located issues, the preview of what
//! a launch would do, and launches as the Live screen lists them.

use super::*;

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
    /// What to know though nothing is wrong (an agent task with no `targets:`).
    #[serde(default)]
    pub notes: Vec<String>,
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
    /// "plan: 3 epochs × 4 tasks = 12 runs; …", as `attractor run` prints it.
    pub plan: String,
    /// "model: about 16 call(s) (…), at most 210000 tokens, cost at most
    /// 0.41"; none when the run calls no model.
    pub model: Option<String>,
    /// What the request does not decide: "η continues at 0.125 from the
    /// suite's last epoch …" when the suite's history has its own rate.
    pub continues: Option<String>,
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
    /// The epochs it set out to do: the request's count, or what was left
    /// of the plan it continues (a resumed launch).
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
    /// The first and last epoch numbers of its suite it started; none
    /// before its first epoch. The Live screen reads their runs with
    /// `suite_epochs(.., launch)`.
    pub epochs: Option<EpochSpan>,
    /// How its runs ended so far; not counted (none) where a view of a
    /// suite names its latest launch.
    pub runs: Option<LaunchRuns>,
}

/// Epochs `first..=last` of a suite, by number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
pub struct EpochSpan {
    pub first: u32,
    pub last: u32,
}

/// A launch's runs that have ended, and how many of them failed (failed or
/// aborted: no result to learn from). A launch that finished with every
/// run failed did not do its work, whatever its own status says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, TS)]
pub struct LaunchRuns {
    pub ended: u32,
    pub failed: u32,
}

/// Where a worker on the database stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    /// It heartbeats: it claims launches and runs.
    Serving,
    /// It said nothing for a while without saying it stopped: killed, or
    /// cut off from the database. Its runs go to other workers.
    Quiet,
    /// It stopped serving (Ctrl-C, `--until-idle`).
    Stopped,
}

/// A worker that served on the database (`attractor worker`).
#[derive(Debug, Clone, Serialize, TS)]
pub struct WorkerView {
    /// "attractor worker (pid 4242 on host)".
    pub holder: String,
    pub host: String,
    pub pid: i64,
    /// The labels it offers: it runs tasks whose `needs:` they cover.
    pub offers: Vec<String>,
    /// Jobs it works at once.
    pub concurrency: i64,
    pub state: WorkerState,
    /// Seconds since its last heartbeat, on the database's clock.
    pub quiet_secs: f64,
}

/// Runs queued for workers, per suite.
#[derive(Debug, Clone, Serialize, TS)]
pub struct SuiteQueueView {
    pub suite: String,
    pub queued_runs: i64,
}

/// The workers on the database and the runs waiting for them.
#[derive(Debug, Clone, Serialize, TS)]
pub struct WorkersView {
    /// Newest first: serving and quiet ones, and those that stopped in the
    /// last hour (ten at most).
    pub workers: Vec<WorkerView>,
    pub queue: Vec<SuiteQueueView>,
}
