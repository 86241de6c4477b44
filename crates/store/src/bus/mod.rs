//! The in-process event bus.
//!
//! Every component publishes typed [`Event`]s here; subscribers — the store,
//! the CLI's progress display, later the app and the auditor — each get every
//! event in publication order. Each subscriber has its own unbounded queue, so
//! a slow subscriber (the database) never makes the bus drop events for it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::domain::OptimizerKind;
use crate::domain::convergence::{AttractorKind, BasinClassification, Directive, LoopControlKind, StrategyKind};
use crate::domain::stored::{WatchedFileKind, WatchedFileStatus, WatchedRunStatus};
use crate::domain::{
    AuditKind, DirectiveAction, DirectiveSource, InterventionKind, InterventionMode, MemoryOutcome,
    NumericTrajectoryState, ProcessSource, RunState, TaskType, ThrashingAlert, TrajectoryStatus,
};
use crate::process::LeftProcess;
use crate::store::{EventRecord, QueueStatus, Store};

/// One artifact's active version moved at the end of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct ArtifactMove {
    pub artifact: String,
    pub from_version: i64,
    pub to_version: i64,
    /// The mean training loss of the version set moved away from, when the
    /// run measured it (`None`: proposed last, never measured — pending).
    pub from_mean_loss: Option<f64>,
}

/// Something that happened. The serialized form (`{"type": "run_finished", …}`)
/// is what the `events` table stores.
#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    SuiteStarted {
        suite_id: i64,
        suite: String,
        epochs: u32,
        optimizer: OptimizerKind,
        learning_rate: f64,
        rollback_on_regression: bool,
        concurrency: usize,
        seed: u64,
        tasks: usize,
        /// The plan's first epoch; with `continued`, this run carries on the
        /// plan a stopped run left unfinished, up to `first_epoch + epochs - 1`.
        first_epoch: i64,
        continued: bool,
    },
    EpochStarted {
        suite_id: i64,
        epoch_id: i64,
        epoch_num: i64,
        parent_artifacts: BTreeMap<String, i64>,
        tasks_total: usize,
        /// Runs already done before this start (a resumed epoch).
        tasks_done: usize,
        resumed: bool,
        /// Tasks edited in the suite file since their run in this epoch:
        /// those runs are set aside and the tasks run again.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changed: Vec<String>,
        /// This epoch's seed (derived from the run's base seed); an optimizer's
        /// random choices replay from it.
        seed: u64,
    },
    RunStarted {
        suite_id: i64,
        epoch_id: i64,
        run_id: i64,
        task: String,
        kind: TaskType,
        /// Who runs it: "attractor worker (pid 4242 on host)"; empty in
        /// events recorded before runs were shared among workers.
        #[serde(default)]
        worker: String,
    },
    RunFinished {
        suite_id: i64,
        epoch_id: i64,
        run_id: i64,
        task: String,
        status: RunState,
        loss: Option<f64>,
        duration_ms: i64,
        error: Option<String>,
    },
    EpochFinished {
        suite_id: i64,
        epoch_id: i64,
        epoch_num: i64,
        mean_loss: Option<f64>,
        holdout_mean_loss: Option<f64>,
        learning_rate: f64,
        /// Why the epoch changed nothing, when it did not and an optimizer
        /// was asked: "textgrad: no usable proposal — 3× unusable reply: …".
        note: Option<String>,
        /// What the optimizer's model calls cost at the end of this epoch.
        model: Option<crate::domain::ModelSpend>,
    },
    /// An epoch loop ended: every artifact is at the version the run
    /// measured best (`moved` says which were set back to it), and `line`
    /// says why. A move away from a proposal never measured leaves it
    /// pending: the next run of the suite measures it first.
    RunSettled {
        suite_id: i64,
        /// The suite's last epoch when the run ended.
        after_epoch: i64,
        /// The epochs that measured the versions now active.
        epochs: Vec<i64>,
        mean_loss: f64,
        holdout_mean_loss: Option<f64>,
        moved: Vec<ArtifactMove>,
        line: String,
    },
    ArtifactUpdated {
        suite_id: i64,
        epoch_id: i64,
        artifact: String,
        from_version: i64,
        to_version: i64,
        rationale: String,
        learning_rate: f64,
    },
    ArtifactRolledBack {
        suite_id: i64,
        epoch_id: i64,
        artifact: String,
        from_version: i64,
        to_version: i64,
        mean_loss_prev: f64,
        mean_loss_current: f64,
        new_learning_rate: f64,
        reason: crate::domain::RollbackReason,
        holdout_mean_prev: Option<f64>,
        holdout_mean_current: Option<f64>,
        /// The reason as the screens say it after the transition
        /// (` (held-out loss rose 0.0200 → 0.0354)`).
        why: String,
    },
    SuiteFinished {
        suite_id: i64,
        epochs_completed: u32,
        interrupted: bool,
        /// Why the run ended before its epochs were done, other than an
        /// interruption (its model budget spent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stopped: Option<String>,
    },
    /// The app (or the HTTP API) started a suite run in the background.
    LaunchStarted { launch_id: i64, suite: String, suite_path: String },
    /// A launched suite run ended: finished, cancelled, interrupted or failed
    /// (with the error a person should read).
    LaunchEnded { launch_id: i64, suite: String, suite_id: Option<i64>, status: QueueStatus, error: Option<String> },
    /// A person answered an intervention.
    InterventionAnswered { intervention_id: i64, answer: String },
    /// A person moved an artifact's active pointer by hand (a manual rollback).
    ArtifactActivated { artifact: String, from_version: i64, to_version: i64 },
    /// The system asked a person something (an agent trajectory pauses on it
    /// until it is answered).
    InterventionRaised {
        intervention_id: i64,
        kind: InterventionKind,
        suite_id: Option<i64>,
        run_id: Option<i64>,
        subject: String,
        /// Whether a run waits on the answer (a paused trajectory), or the
        /// answer only steers later runs (an optimize task's escalation).
        waits: bool,
    },
    /// A person set a notice aside (a notice waits on nobody; dismissing it
    /// only clears it from the inbox).
    InterventionDismissed { intervention_id: i64 },
    // ----- agent tasks: the convergence engine (seed 002 §10.1) --------------
    /// An agent task's trajectory entered its iteration loop (`resumed`: it
    /// continues one an earlier, stopped run left).
    TrajectoryStarted {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        task: String,
        resumed: bool,
        max_tokens: u64,
        max_iterations: u32,
        max_wall_time_ms: u64,
        /// Basin width: wide, moderate or narrow (none when a resumed
        /// trajectory's stored setup did not say).
        basin: Option<BasinClassification>,
    },
    /// Iteration 0: the untouched workspace was measured before the first
    /// execution, each test recorded by name, and the targets chosen (see
    /// `overseer::baseline`).
    BaselineMeasured {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        /// Tests counted at baseline.
        tests: u32,
        /// The targets: tests named by the task, or failing at baseline.
        targets: u32,
        /// For a person: the counts and where the targets came from.
        summary: String,
    },
    /// The strategy of the next iteration was chosen (by the bandit, or
    /// forced by loop control).
    StrategySelected {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        /// The observation this strategy will produce.
        sequence: u32,
        strategy: StrategyKind,
        forced: bool,
        attractor: AttractorKind,
        directive: Option<Directive>,
        budget_remaining: f64,
    },
    /// One iteration was executed, measured and decided (the seed's
    /// ObservationRecorded, with the attractor and the goal gradient's round).
    IterationCompleted {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        sequence: u32,
        strategy: StrategyKind,
        level: f64,
        delta: Option<f64>,
        attractor: AttractorKind,
        directive: Directive,
        loss: f64,
        tokens: u64,
        budget_remaining: f64,
        loop_control: LoopControlKind,
        /// The engine's thrashing verdict after this iteration (break_symmetry
        /// again and again without the distance D falling), when it sees
        /// thrashing; the auditor raises its alert from this.
        thrashing: Option<ThrashingAlert>,
    },
    /// A command of a trajectory (the external agent, an overseer) ended and
    /// left processes of its group running; they were killed. The auditor
    /// turns this into a `zombie_process` alert.
    ProcessLeftRunning {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        /// The iteration whose command it was.
        sequence: u32,
        /// `executor` or `overseer`.
        source: ProcessSource,
        /// The overseer's name, or the executor's kind.
        name: String,
        command: String,
        processes: Vec<LeftProcess>,
    },
    /// PREPARE recalled what earlier trajectories of the task's category
    /// learned (seed 002 Part 8): the strategies nudged in the bandit, the
    /// lessons the executor's prompts carry, the category's convergence rate.
    MemoryRecalled {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        category: String,
        /// Memories recalled, of success and of failure.
        successes: u32,
        failures: u32,
        /// Strategies whose arms were raised because they worked before.
        nudged: Vec<String>,
        /// "What worked before" and "what to avoid" lines of the prompts.
        worked: Vec<String>,
        avoid: Vec<String>,
        /// Blended into the basin width, when the category has enough history.
        historical_convergence_rate: Option<f64>,
    },
    /// RESOLVE stored what the trajectory teaches as a memory of its category.
    MemoryStored {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        category: String,
        /// `success` or `failure`.
        outcome: MemoryOutcome,
        memory_id: i64,
    },
    /// The attractor's kind changed (every change; the changes into trouble
    /// are also intervention points, see `intervention_point_reached`).
    AttractorTransition {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        sequence: u32,
        from: AttractorKind,
        to: AttractorKind,
        confidence: f64,
    },
    /// A trajectory reached an intervention point (seed 002 §7.3) — an
    /// attractor transition into trouble, a strategy escalation, a detected
    /// ambiguity, a partial result, a budget extension, a human escalation —
    /// and did what its mode says: `pause` (its question, `intervention_id`,
    /// waits for an answer), `notify` (its notice, `intervention_id`, is in
    /// the inbox and the run goes on) or `auto` (decided alone).
    InterventionPointReached {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        /// attractor_transition, strategy_escalation, budget_extension,
        /// ambiguity_detected, partial_result or human_escalation.
        point: InterventionKind,
        /// pause, notify or auto.
        mode: InterventionMode,
        intervention_id: Option<i64>,
        subject: String,
    },
    /// The specification can be read more than one way (seed 002 §10.1): the
    /// intent verifier named the contradictions, or the engine blamed a
    /// divergence on them. Raised once per contradiction.
    SpecificationAmbiguityDetected {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        task: String,
        contradictions: Vec<String>,
        suggested_clarifications: Vec<String>,
    },
    /// A fresh start: the executor's context was dropped and only the
    /// carry-forward goes on (`forced`: because the context had degraded).
    FreshStart {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        sequence: u32,
        forced: bool,
        reason: String,
        best_sequence: Option<u32>,
    },
    /// The ASO coordinator judged an agent trajectory's iteration
    /// (`supervision: aso`): the diagnostics' status, the directive, who
    /// decided it, and what it changed (`applied`: none when the engine's
    /// choice stood).
    SupervisorDirective {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        sequence: u32,
        status: NumericTrajectoryState,
        action: DirectiveAction,
        source: DirectiveSource,
        reasoning: String,
        llm_call_made: bool,
        applied: Option<String>,
        refused: Vec<String>,
    },
    /// The workspace was reset to an earlier observation (RevertAndBranch).
    Reverted { suite_id: i64, run_id: i64, trajectory_id: String, sequence: u32, to_sequence: u32, commit: String },
    /// The budget ran out while converging; an extension is asked for
    /// (`intervention_id` when a person must approve it).
    BudgetExtensionRequested {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        additional_tokens: u64,
        additional_iterations: u32,
        evidence: String,
        intervention_id: Option<i64>,
    },
    /// An extension was granted (`by`: auto or person).
    BudgetExtensionGranted {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        additional_tokens: u64,
        additional_iterations: u32,
        by: String,
    },
    /// The trajectory converged (`partial`: the best result was accepted
    /// when the budget ran out).
    TrajectoryConverged {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        iterations: u32,
        total_tokens: u64,
        level: f64,
        partial: bool,
    },
    /// The budget ran out below the partial threshold (`abandoned`: the goal
    /// gradient stopped it under budget pressure).
    TrajectoryExhausted {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        best_sequence: Option<u32>,
        budget_consumed: u64,
        abandoned: bool,
    },
    /// A limit cycle with every escape tried.
    TrajectoryTrapped { suite_id: i64, run_id: i64, trajectory_id: String, cycle_period: u32, escape_attempts: u32 },
    /// A task runs as several samples side by side on one shared budget
    /// (seed 002 §6.6); `trajectory_id` is the group's, `samples` its members'.
    ParallelSamplingStarted {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        samples: Vec<String>,
        resumed: bool,
        max_tokens: u64,
        max_iterations: u32,
    },
    /// A sample was stopped because another one converged first.
    TrajectorySuperseded { suite_id: i64, run_id: i64, trajectory_id: String, by: String },
    /// A parallel group ended; `result_trajectory` is the sample whose result
    /// is the task's (the first to converge, else the best observation).
    ParallelSamplingFinished {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        result_trajectory: Option<String>,
        status: TrajectoryStatus,
        level: f64,
        /// Iterations of all samples together.
        iterations: u32,
    },
    /// A split of the task into subtasks was proposed before its first
    /// attempt and judged (seed 002 §9.1); `applied`: the task is split.
    DecompositionRecommended {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        subtask_count: u32,
        savings_estimate: f64,
        applied: bool,
    },
    /// The trajectory was split (`proactive`: before its first attempt; else
    /// the engine chose `decompose`): the subtasks' trajectories run in
    /// order, then the integration trajectory, whose result is this one's.
    DecompositionStarted {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        proactive: bool,
        subtasks: Vec<String>,
        children: Vec<String>,
        integration: String,
    },
    /// A split could not be used (an unusable proposal, too little budget
    /// left): the trajectory goes on without it, for the reason given.
    DecompositionFailed { suite_id: i64, run_id: i64, trajectory_id: String, proactive: bool, reason: String },
    /// The auditor saw something a person should look at (thrashing, a
    /// token overrun, a stuck trajectory, a process left running); it
    /// changes nothing itself.
    AuditAlert {
        suite_id: i64,
        run_id: i64,
        trajectory_id: String,
        /// `thrashing`, `token_overrun`, `stuck` or `zombie_process`.
        kind: AuditKind,
        message: String,
    },
    /// The folder watcher started watching a folder (and remembers it).
    WatchedFolderAdded { folder: String },
    /// The folder watcher stopped watching a folder.
    WatchedFolderRemoved { folder: String },
    /// The watcher checked a suite or task file: registered, invalid (with
    /// the first located issue in `detail`), waiting for approval, removed…
    WatchedFileUpdated {
        file_id: i64,
        path: String,
        /// suite or task.
        kind: WatchedFileKind,
        /// invalid, failed, awaiting_approval, rejected, ready or removed.
        status: WatchedFileStatus,
        suite: Option<String>,
        suite_id: Option<i64>,
        /// What a person should read: the first issue, the error, or what changed.
        detail: Option<String>,
    },
    /// A watched file would run commands: a person must approve exactly these.
    ExecutionApprovalRequested { intervention_id: i64, path: String, suite: String, commands: Vec<String> },
    /// A run the watcher queued for a `run: auto` file moved on: queued,
    /// running, finished, failed, cancelled or dropped.
    WatchedRunUpdated {
        watched_run_id: i64,
        path: String,
        suite: String,
        status: WatchedRunStatus,
        launch_id: Option<i64>,
        error: Option<String>,
    },
}

impl Event {
    fn ids(&self) -> (Option<i64>, Option<i64>, Option<i64>) {
        match self {
            Event::SuiteStarted { suite_id, .. } | Event::SuiteFinished { suite_id, .. } => {
                (Some(*suite_id), None, None)
            }
            Event::EpochStarted { suite_id, epoch_id, .. }
            | Event::EpochFinished { suite_id, epoch_id, .. }
            | Event::ArtifactUpdated { suite_id, epoch_id, .. }
            | Event::ArtifactRolledBack { suite_id, epoch_id, .. } => (Some(*suite_id), Some(*epoch_id), None),
            Event::RunStarted { suite_id, epoch_id, run_id, .. }
            | Event::RunFinished { suite_id, epoch_id, run_id, .. } => {
                (Some(*suite_id), Some(*epoch_id), Some(*run_id))
            }
            Event::LaunchEnded { suite_id, .. } | Event::WatchedFileUpdated { suite_id, .. } => (*suite_id, None, None),
            Event::RunSettled { suite_id, .. } => (Some(*suite_id), None, None),
            Event::LaunchStarted { .. }
            | Event::InterventionAnswered { .. }
            | Event::InterventionDismissed { .. }
            | Event::ArtifactActivated { .. }
            | Event::WatchedFolderAdded { .. }
            | Event::WatchedFolderRemoved { .. }
            | Event::ExecutionApprovalRequested { .. }
            | Event::WatchedRunUpdated { .. } => (None, None, None),
            Event::InterventionRaised { suite_id, run_id, .. } => (*suite_id, None, *run_id),
            Event::TrajectoryStarted { suite_id, run_id, .. }
            | Event::BaselineMeasured { suite_id, run_id, .. }
            | Event::StrategySelected { suite_id, run_id, .. }
            | Event::IterationCompleted { suite_id, run_id, .. }
            | Event::ProcessLeftRunning { suite_id, run_id, .. }
            | Event::MemoryRecalled { suite_id, run_id, .. }
            | Event::MemoryStored { suite_id, run_id, .. }
            | Event::AttractorTransition { suite_id, run_id, .. }
            | Event::InterventionPointReached { suite_id, run_id, .. }
            | Event::SpecificationAmbiguityDetected { suite_id, run_id, .. }
            | Event::FreshStart { suite_id, run_id, .. }
            | Event::SupervisorDirective { suite_id, run_id, .. }
            | Event::Reverted { suite_id, run_id, .. }
            | Event::BudgetExtensionRequested { suite_id, run_id, .. }
            | Event::BudgetExtensionGranted { suite_id, run_id, .. }
            | Event::TrajectoryConverged { suite_id, run_id, .. }
            | Event::TrajectoryExhausted { suite_id, run_id, .. }
            | Event::TrajectoryTrapped { suite_id, run_id, .. }
            | Event::ParallelSamplingStarted { suite_id, run_id, .. }
            | Event::TrajectorySuperseded { suite_id, run_id, .. }
            | Event::ParallelSamplingFinished { suite_id, run_id, .. }
            | Event::DecompositionRecommended { suite_id, run_id, .. }
            | Event::DecompositionStarted { suite_id, run_id, .. }
            | Event::DecompositionFailed { suite_id, run_id, .. }
            | Event::AuditAlert { suite_id, run_id, .. } => (Some(*suite_id), None, Some(*run_id)),
        }
    }
}

/// An event with the time it was published.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct Envelope {
    pub occurred_at: String,
    #[serde(flatten)]
    pub event: Event,
    /// Published by another process and read back from the store (see
    /// [`tail`]): already recorded and audited there, so the store and the
    /// auditor here skip it; what shows events (the app) shows it.
    #[serde(skip)]
    #[ts(skip)]
    pub replayed: bool,
}

/// A cheap-to-clone handle to the bus.
#[derive(Clone, Default)]
pub struct Bus {
    subscribers: Arc<Mutex<Vec<mpsc::UnboundedSender<Envelope>>>>,
}

impl Bus {
    pub fn new() -> Self {
        Self::default()
    }

    /// A queue that receives every event published from now on, until
    /// [`Bus::close`].
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Envelope> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock().push(tx);
        rx
    }

    pub fn publish(&self, event: Event) {
        self.send(Envelope { occurred_at: crate::now_rfc3339(), event, replayed: false });
    }

    /// Publishes an event another process published (see [`tail`]).
    pub fn replay(&self, event: Event, occurred_at: String) {
        self.send(Envelope { occurred_at, event, replayed: true });
    }

    fn send(&self, envelope: Envelope) {
        // A subscriber that went away is simply dropped from the list.
        self.lock().retain(|s| s.send(envelope.clone()).is_ok());
    }

    /// Ends every subscription; subscribers drain what is queued, then stop.
    pub fn close(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<mpsc::UnboundedSender<Envelope>>> {
        // A panic while holding this lock cannot leave the list inconsistent.
        self.subscribers.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The `events` row of `event`: its kind (the serialized `type` tag), the
/// ids it names, its payload.
fn row_of(event: &Event, occurred_at: &str) -> EventRecord {
    let (suite_id, epoch_id, run_id) = event.ids();
    // Serialized once: the payload carries its own `type` tag.
    let payload = serde_json::to_value(event).unwrap_or_default();
    EventRecord {
        kind: payload["type"].as_str().unwrap_or("unknown").to_string(),
        suite_id,
        epoch_id,
        run_id,
        payload_json: payload.to_string(),
        occurred_at: occurred_at.to_string(),
        origin: Some(crate::process::origin().to_string()),
    }
}

/// Writes `event` to the store at once, rather than through the bus's
/// writer, which may lag behind: for an event that what runs next reads
/// back (a settled run, a person's move of an artifact). Show it on a bus
/// with [`Bus::replay`], which the writer skips.
pub async fn record(store: &Store, event: &Event, occurred_at: &str) -> Result<(), crate::store::StoreError> {
    store.insert_event(&row_of(event, occurred_at)).await.map(|_| ())
}

/// Subscribes the store to the bus: every event becomes a row of `events`.
/// The task ends after [`Bus::close`] once the queue is written out.
pub fn persist(bus: &Bus, store: Store) -> tokio::task::JoinHandle<()> {
    let mut rx = bus.subscribe();
    tokio::spawn(async move {
        while let Some(env) = rx.recv().await {
            if env.replayed {
                continue;
            }
            let row = row_of(&env.event, &env.occurred_at);
            if let Err(e) = store.insert_event(&row).await {
                tracing::error!(error = %e, kind = %row.kind, "could not record an event");
            }
        }
    })
}

/// How often [`tail`] looks for other processes' events, and how far behind
/// the newest it looks again for ones committed late.
const TAIL_EVERY: std::time::Duration = std::time::Duration::from_millis(500);
const TAIL_WINDOW: i64 = 500;

/// Republishes on `bus` the events other processes on the same database
/// record from now on — a run started with `attractor run` or worked by
/// `attractor worker` — so the app shows it live as if it ran here. It runs
/// until aborted.
pub fn tail(bus: &Bus, store: Store) -> tokio::task::JoinHandle<()> {
    let bus = bus.clone();
    tokio::spawn(async move {
        let mut last = match store.last_event_id().await {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!("cannot follow other processes' events: {e}");
                return;
            }
        };
        let me = crate::process::origin();
        // On PostgreSQL ids come from a sequence, and two processes'
        // transactions may commit id N+1 before N: each read goes back
        // `TAIL_WINDOW` ids behind the newest seen, and what was seen is
        // remembered so nothing is replayed twice.
        // Events recorded before this process started are history, not news.
        let start = last;
        let mut seen = std::collections::BTreeSet::new();
        loop {
            tokio::time::sleep(TAIL_EVERY).await;
            let from = (last - TAIL_WINDOW).max(start);
            let rows = match store.events_from_elsewhere(from, me, 1_000).await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::debug!("could not read other processes' events: {e}");
                    continue;
                }
            };
            for row in rows {
                last = last.max(row.id);
                if row.id <= from || !seen.insert(row.id) {
                    continue;
                }
                // An event of a newer version this one does not know is skipped.
                if let Ok(event) = serde_json::from_str::<Event>(&row.event.payload_json) {
                    bus.replay(event, row.event.occurred_at);
                }
            }
            seen = seen.split_off(&(last - TAIL_WINDOW).max(start));
        }
    })
}
