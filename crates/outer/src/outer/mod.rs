//! The outer loop: epochs over a suite (seed 004 §5).
//!
//! One epoch snapshots the active artifact versions, runs every task with
//! them, computes each run's loss and the mean, and then either rolls back
//! the last update (the mean got worse: the learning rate halves and the
//! optimizer sits the epoch out) or lets the optimizer propose the next one.
//!
//! On a noisy suite (`noisy: true`, or `--verify-repeats N` above 1) one
//! epoch cannot tell an update from luck, so the `verify_repeats` epochs after
//! an update form a series: all but the last are closed as `verify_sample`s
//! (no decision, no proposal), and the last decides on the series' mean
//! against the mean of the series that measured the versions before the
//! update, with the tree search's noise rule ([`noise::beyond_noise`]): a gain
//! within the larger standard error is not an improvement, and the update is
//! rolled back (reason `noise`) as a regression would be. Every sample is an
//! epoch, so `--epochs` counts them.
//!
//! A run has one shape whatever its optimizer (`runner.rs`): an executor
//! steps a strategy — the epoch chain (`chain.rs`) or the tree search
//! (`tree_run.rs`) — over one [`state::OuterState`] (the plan, η, the epoch
//! left open), and observers tell the bus and the log. Everything a step
//! needs beyond that state — the previous mean, the last update, the runs
//! already done — is read back from the store, and the state itself is
//! loaded from there when a run starts. That is what makes resuming an
//! interrupted suite a plain re-run of the same command.

pub mod analyst;
pub mod approval;
mod chain;
mod close;
pub mod estimate;
pub mod ideation;
mod items;
mod lease;
pub mod moves;
pub mod noise;
pub mod optimizer;
pub mod preflight;
pub mod preverify;
pub mod request;
pub use crate::domain::rollback;
mod runner;
pub mod screen;
mod screen_run;
pub mod settle;
mod state;
pub mod textgrad;
pub mod tree;
mod tree_run;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;

use crate::artifact::{Registry, RegistryError};
use crate::bus::{Bus, Event};
pub use crate::domain::{RollbackReason, epoch_seed};
use crate::loss::LossBreakdown;
use crate::store::{EpochRow, Store, StoreError};
use crate::suite::{SourceLocation, Suite, Task, TaskKind};
use crate::task::{self, ActiveArtifact};
pub use approval::ApprovalMode;
pub use items::{IDLE_POLL_MAX, ITEM_HEARTBEAT, ITEM_POLL, ITEM_STALE_AFTER, WorkerIdentity, owner_gone};
pub use tree_run::TREE_EPOCH;

pub use optimizer::{Optimizer, OptimizerKind};

/// How to run a suite.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Epochs to run (the tree search: evaluations). A run stopped before
    /// it was done is continued by the next run with the same settings, up
    /// to the epochs it planned; otherwise the plan starts at the suite's
    /// next epoch (an unfinished one counts as the first).
    pub epochs: u32,
    pub optimizer: OptimizerKind,
    pub learning_rate: f64,
    pub rollback_on_regression: bool,
    /// Runs in flight at once.
    pub concurrency: usize,
    /// Base seed; each epoch derives its own from it.
    pub seed: u64,
    /// Where run directories go.
    pub runs_root: PathBuf,
    /// How far the held-out mean loss may rise over the previous epoch's
    /// before the update that caused it is rolled back (run-to-run noise).
    pub holdout_tolerance: f64,
    /// Evaluations behind each keep/commit decision: in the tree search,
    /// of every node; in the linear optimizers, of the epochs after an
    /// update, whose mean and spread decide whether it stays. `None` takes
    /// the suite's (`verify_repeats:`, else 3 on a `noisy: true` suite, else 1).
    pub verify_repeats: Option<u32>,
    /// The approval gate for artifact updates; `None` takes the suite's
    /// (`approve_updates:`, else off).
    pub approve_updates: Option<ApprovalMode>,
    /// Settings of `--optimizer tree`.
    pub tree: tree::TreeConfig,
}

/// The most epochs (tree: evaluations) one run may plan.
pub const MAX_EPOCHS: u32 = 100_000;

/// The default of [`RunConfig::holdout_tolerance`].
pub const DEFAULT_HOLDOUT_TOLERANCE: f64 = 0.01;

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error(
        "{location}: task `{task}` uses the LLM executor, and no model is configured\n  hint: set ATTRACTOR_LLM_MODEL (and ATTRACTOR_LLM_BASE_URL for a server other than a local Ollama; OPENAI_API_KEY or ATTRACTOR_LLM_API_KEY for a key), or give the task `executor: {{type: command, command: …}}`"
    )]
    AgentNeedsModel { task: String, location: SourceLocation },
    #[error(transparent)]
    Sandbox(#[from] crate::process::sandbox::SandboxUnavailable),
    #[error(
        "{location}: task `{task}`: the workspace folder {path} does not exist\n  hint: `workspace:` is relative to the suite file's folder"
    )]
    AgentWorkspace { task: String, path: PathBuf, location: SourceLocation },
    #[error(
        "{location}: task `{task}`: {message}\n  hint: use a built-in problem name or a problem file path relative to the suite"
    )]
    Problem { task: String, message: String, location: SourceLocation },
    #[error("{0}")]
    Baseline(String),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the optimizer failed: {0}")]
    Optimizer(#[from] optimizer::OptimizerError),
    #[error(
        "suite `{suite}` is being run by {holder} (since {since}); one run of a suite at a time\n  hint: wait for it to finish, or stop it (Ctrl-C, or Cancel on the app's Live screen); a run whose process died is taken over by the next one"
    )]
    Busy { suite: String, holder: String, since: String },
    #[error(
        "the run stopped on an internal error ({0}); this is a bug, please report it\n  hint: the unfinished epoch resumes on the next run"
    )]
    Crashed(String),
    #[error(
        "the `{0}` optimizer needs a model, and none is configured\n  hint: set ATTRACTOR_LLM_MODEL (and ATTRACTOR_LLM_BASE_URL for a server other than a local Ollama), or pick `--optimizer evolve` or `baseline`"
    )]
    NeedsModel(&'static str),
}

/// What one epoch came to.
#[derive(Debug, Clone, Serialize)]
pub struct EpochSummary {
    pub epoch_id: i64,
    pub epoch_num: i64,
    pub mean_loss: Option<f64>,
    pub holdout_mean_loss: Option<f64>,
    pub learning_rate: f64,
    pub resumed: bool,
    /// The events written to the epoch's record.
    pub events: Vec<crate::domain::EpochEvent>,
    /// Why nothing changed, when nothing did (see [`optimizer::Step::no_change_reason`]).
    pub note: Option<String>,
    /// The optimizer's model calls at the end of this epoch.
    pub model: Option<crate::llm::ModelSpend>,
}

/// What a whole invocation came to.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub suite_id: i64,
    pub suite: String,
    pub epochs: Vec<EpochSummary>,
    pub interrupted: bool,
    pub learning_rate: f64,
    pub seed: u64,
    /// Why the run ended before its epochs were done (its model budget was
    /// spent); what it finished is kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The versions an epoch loop ended on, and why (not after an
    /// interruption: the run is not over).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settled: Option<settle::Settled>,
}

/// The settings that shape a run's history: a run started again with the
/// same ones continues the plan a stopped run left unfinished.
#[derive(Serialize)]
struct PlanKey<'a> {
    epochs: u32,
    optimizer: &'static str,
    learning_rate: f64,
    rollback_on_regression: bool,
    seed: u64,
    holdout_tolerance: f64,
    verify_repeats: Option<u32>,
    tree: Option<&'a tree::TreeConfig>,
}

impl PlanKey<'_> {
    fn of(c: &RunConfig) -> PlanKey<'_> {
        PlanKey {
            epochs: c.epochs,
            optimizer: c.optimizer.name(),
            learning_rate: c.learning_rate,
            rollback_on_regression: c.rollback_on_regression,
            seed: c.seed,
            holdout_tolerance: c.holdout_tolerance,
            verify_repeats: c.verify_repeats,
            tree: (c.optimizer == OptimizerKind::Tree).then_some(&c.tree),
        }
    }
}

/// The seed a run that was not given one should use: the seed of the
/// suite's unfinished plan when that plan was made with the same other
/// settings (the same command started again continues it), else `None`.
pub async fn stopped_plan_seed(store: &Store, suite: &str, config: &RunConfig) -> Result<Option<u64>, StoreError> {
    let Some(row) = store.suite_by_name(suite).await? else { return Ok(None) };
    let Some(plan) = store.plan(row.id).await?.filter(|p| p.finished_at.is_none()) else { return Ok(None) };
    let Ok(mut stored) = serde_json::from_str::<serde_json::Value>(&plan.request_json) else { return Ok(None) };
    let mut asked = serde_json::to_value(PlanKey::of(config))?;
    let seed = stored.get("seed").and_then(serde_json::Value::as_u64);
    for key in [&mut stored, &mut asked] {
        if let Some(map) = key.as_object_mut() {
            map.remove("seed");
        }
    }
    Ok(seed.filter(|_| stored == asked))
}

/// What is left of a suite's unfinished plan for a run that continues it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanLeft {
    /// The plan's first epoch, the epoch the run starts at, the plan's last.
    pub first: i64,
    pub next: i64,
    pub last: i64,
    /// Epochs from `next` to `last`.
    pub epochs: u32,
    /// Runs the open epoch `next` already counted (kept on resume).
    pub runs_done: u64,
}

/// What a run with `config` would have left to do of the suite's unfinished
/// plan, decided as the runner decides it (same settings, epochs left);
/// `None` when such a run starts a plan of its own.
pub async fn plan_left(store: &Store, suite: &str, config: &RunConfig) -> Result<Option<PlanLeft>, StoreError> {
    let Some(row) = store.suite_by_name(suite).await? else { return Ok(None) };
    let Some(plan) = store.plan(row.id).await?.filter(|p| p.finished_at.is_none()) else { return Ok(None) };
    if plan.request_json != serde_json::to_string(&PlanKey::of(config))? {
        return Ok(None);
    }
    let open = store.last_epoch(row.id).await?;
    let next = next_epoch(open.as_ref());
    let last = plan.first_epoch + plan.epochs - 1;
    if last < next {
        return Ok(None);
    }
    let runs_done = match open.filter(|e| e.completed_at.is_none()) {
        Some(e) => store.epoch_runs(e.id).await?.len() as u64,
        None => 0,
    };
    let epochs = u32::try_from(last - next + 1).unwrap_or(u32::MAX);
    Ok(Some(PlanLeft { first: plan.first_epoch, next, last, epochs, runs_done }))
}

/// The epoch a run of a suite starts at: its last one when that is still
/// open (a resume), else the one after it.
fn next_epoch(last: Option<&crate::store::EpochRow>) -> i64 {
    last.map_or(1, |e| if e.completed_at.is_none() { e.epoch_num } else { e.epoch_num + 1 })
}

/// The epochs a run that starts at `started` has left of a plan of `epochs`
/// from `first_epoch` (at least one): what a resumed launch's bar counts.
pub fn epochs_left(first_epoch: i64, epochs: u32, started: i64) -> i64 {
    (first_epoch + i64::from(epochs) - started).max(1)
}

/// The largest integer a JavaScript number holds exactly (2^53 − 1).
pub const MAX_SAFE_SEED: u64 = (1 << 53) - 1;

/// A seed for runs that did not ask for one: the clock and the process id,
/// mixed. It is printed and recorded, so any run can be replayed, and kept
/// below 2^53 so that a browser shows it exactly (people copy it from the
/// screen to replay a launch).
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    epoch_seed(nanos, i64::from(std::process::id())) & MAX_SAFE_SEED
}

/// The epochs a run carries out: `epochs` from `first_epoch` on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    pub first_epoch: i64,
    pub epochs: i64,
    /// Whether this run continues a plan a stopped run left unfinished.
    pub continued: bool,
}

impl Plan {
    /// The plan's last epoch number.
    pub fn last_epoch(&self) -> i64 {
        self.first_epoch + self.epochs - 1
    }
}

/// Runs a suite's epochs.
pub struct SuiteRunner {
    store: Store,
    registry: Registry,
    bus: Bus,
    suite: Suite,
    config: RunConfig,
    /// Built when the run starts, once the model (if any) is known.
    optimizer: Option<Box<dyn Optimizer>>,
    /// The model for the ASO coordinator's LLM tier, when one is configured.
    llm: Option<crate::llm::LlmClient>,
    /// The model a model-driven optimizer (`textgrad`) calls.
    optimizer_llm: Option<crate::llm::LlmClient>,
    /// The model of agent tasks' LLM executor and intent verifier; when not
    /// given, the optimizer's model, else the coordinator's.
    agent_llm: Option<crate::llm::LlmClient>,
    agent_config: task::agent::AgentConfig,
    cancel: watch::Receiver<bool>,
    /// Who works the epoch's runs here, in the queue of runs.
    identity: WorkerIdentity,
    /// The launch this run works, when it came through the queue: other
    /// workers prepare it to run its epochs' runs.
    request_id: Option<i64>,
    /// Who hears about the run as it goes (the bus, the log).
    observers: Vec<Box<dyn runner::RunObserver>>,
}

/// An evaluated epoch, before it is closed.
struct EpochEval {
    /// The artifact versions its runs saw.
    parent: BTreeMap<String, i64>,
    artifacts: Vec<ActiveArtifact>,
    results: Vec<TaskResult>,
    epoch_seed: u64,
}

/// One finished task of the epoch being closed.
struct TaskResult {
    task: String,
    holdout: bool,
    loss: f64,
    status: String,
    breakdown: Option<LossBreakdown>,
    error: Option<String>,
    /// The examples its harness scored (a dataset harness's), in its order.
    examples: Vec<task::command::Example>,
}

impl SuiteRunner {
    pub fn new(
        store: Store,
        registry: Registry,
        bus: Bus,
        suite: Suite,
        config: RunConfig,
        cancel: watch::Receiver<bool>,
    ) -> Self {
        SuiteRunner {
            store,
            registry,
            bus: bus.clone(),
            suite,
            config,
            optimizer: None,
            llm: None,
            optimizer_llm: None,
            agent_llm: None,
            agent_config: task::agent::AgentConfig::default(),
            cancel,
            identity: WorkerIdentity::of_process("attractor", Vec::new()),
            request_id: None,
            observers: vec![Box::new(runner::BusObserver(bus)), Box::new(runner::LogObserver)],
        }
    }

    /// Works the epochs' runs as `identity`, for the launch `request_id`
    /// (through the queue, other workers on the database take runs too).
    pub fn as_worker(mut self, identity: WorkerIdentity, request_id: Option<i64>) -> Self {
        self.identity = identity;
        self.request_id = request_id;
        self
    }

    /// Gives agent tasks their model (the LLM executor and the intent verifier).
    pub fn with_agent_llm(mut self, client: crate::llm::LlmClient) -> Self {
        self.agent_llm = Some(client);
        self
    }

    /// How agent tasks run (engine numbers, overseer retries, pauses).
    pub fn with_agent_config(mut self, config: task::agent::AgentConfig) -> Self {
        self.agent_config = config;
        self
    }

    /// The model agent tasks use.
    fn agent_model(&self) -> Option<&crate::llm::LlmClient> {
        self.agent_llm.as_ref().or(self.optimizer_llm.as_ref()).or(self.llm.as_ref())
    }

    /// Gives optimize tasks' coordinators an LLM tier.
    pub fn with_llm(mut self, client: crate::llm::LlmClient) -> Self {
        self.llm = Some(client);
        self
    }

    /// Gives a model-driven optimizer (`textgrad`) its model.
    pub fn with_optimizer_llm(mut self, client: crate::llm::LlmClient) -> Self {
        self.optimizer_llm = Some(client);
        self
    }

    fn cancelled(&self) -> bool {
        *self.cancel.borrow()
    }

    /// Why the run must end now: a model client's budget (`max_cost` or
    /// `max_model_secs`) stopped a call. The epoch in flight is finished
    /// first (its tasks end with their partial results), then no new one
    /// starts.
    fn budget_spent(&self) -> Option<String> {
        [&self.optimizer_llm, &self.llm, &self.agent_llm].into_iter().flatten().find_map(|c| c.budget_spent())
    }

    /// Runs the configured number of epochs, resuming an unfinished one first.
    pub async fn run(mut self) -> Result<RunSummary, RunnerError> {
        // The optimizer's calls go to the ledger, scoped to each epoch below.
        let ledger = |c: crate::llm::LlmClient| c.with_ledger(self.store.clone(), crate::llm::CallScope::default());
        self.optimizer_llm = self.optimizer_llm.take().map(ledger);
        self.optimizer = Some(optimizer::build(self.config.optimizer, self.optimizer_llm.clone())?);
        for t in &self.suite.tasks {
            if let TaskKind::Optimize(o) = &t.kind
                && let Err(message) = crate::numeric::resolve_problem(&o.problem, &self.suite.dir)
            {
                return Err(RunnerError::Problem { task: t.name.clone(), message, location: t.location.clone() });
            }
            if let TaskKind::Agent(a) = &t.kind {
                if task::agent::needs_model(a) && self.agent_model().is_none() {
                    return Err(RunnerError::AgentNeedsModel { task: t.name.clone(), location: t.location.clone() });
                }
                if self.agent_config.sandbox.enabled {
                    crate::process::sandbox::available()?;
                }
                if let Some(folder) = &a.workspace
                    && !self.suite.dir.join(folder).is_dir()
                {
                    return Err(RunnerError::AgentWorkspace {
                        task: t.name.clone(),
                        path: self.suite.dir.join(folder),
                        location: t.location.clone(),
                    });
                }
            }
        }
        for def in self.suite.artifacts.clone() {
            self.registry.declare(def).await?;
        }
        let tasks_json = serde_json::to_string(&self.suite.tasks).map_err(StoreError::from)?;
        let baseline_json = serde_json::to_string(&self.suite.baseline_artifacts).map_err(StoreError::from)?;
        // Where the suite came from, for "Launch again" in the app.
        let source = std::fs::canonicalize(&self.suite.path).ok().and_then(|p| p.to_str().map(str::to_string));
        let suite_id =
            self.store.upsert_suite(&self.suite.name, &tasks_json, &baseline_json, source.as_deref()).await?;
        if let Some(c) = &self.optimizer_llm {
            c.set_scope(crate::llm::CallScope { suite_id: Some(suite_id), ..Default::default() });
        }
        // Nothing of the run is written before it holds the suite.
        let lease = lease::SuiteLease::take(&self.store, suite_id, &self.suite.name).await?;
        let result = self.run_held(suite_id).await;
        lease.release(&self.store).await;
        result
    }

    /// The plan this run carries out: the suite's unfinished one when it was
    /// made with the same settings (a stopped run started again), else a new
    /// one starting at `next_num`, the epoch the suite would run next.
    async fn plan(&self, suite_id: i64, next_num: i64) -> Result<Plan, RunnerError> {
        let request = serde_json::to_string(&PlanKey::of(&self.config)).map_err(StoreError::from)?;
        if let Some(row) = self.store.plan(suite_id).await?
            && row.finished_at.is_none()
            && row.request_json == request
            && row.first_epoch + row.epochs > next_num
        {
            tracing::info!(suite = %self.suite.name, first = row.first_epoch, epochs = row.epochs, "continuing the run stopped before its plan was done");
            return Ok(Plan { first_epoch: row.first_epoch, epochs: row.epochs, continued: true });
        }
        let epochs = i64::from(self.config.epochs);
        self.store.start_plan(suite_id, &request, next_num, epochs).await?;
        Ok(Plan { first_epoch: next_num, epochs, continued: false })
    }

    /// The active version of every artifact the suite's runs see.
    async fn snapshot(&self) -> Result<BTreeMap<String, i64>, RunnerError> {
        let mut out = BTreeMap::new();
        for def in self.registry.defs_for_suite(&self.suite.name) {
            out.insert(def.name.clone(), self.registry.get_active(&def.name).await?.version);
        }
        Ok(out)
    }

    /// Runs the epoch's tasks not run yet with the epoch's parent artifact
    /// versions and reads every task's result back from the store; `None`
    /// when interrupted.
    async fn evaluate_epoch(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        resumed: bool,
    ) -> Result<Option<EpochEval>, RunnerError> {
        // Runs always see the epoch's parent versions, even when resuming after
        // someone moved an active pointer in between.
        let (parent, artifacts) = self.epoch_artifacts(epoch).await?;
        let mut changed = Vec::new();
        if resumed {
            // Runs other workers still heartbeat go on; the rest ended with
            // the process that ran them.
            let live = self.store.live_item_runs(epoch.id, ITEM_STALE_AFTER.as_secs_f64()).await?;
            self.store.cancel_unfinished_runs(epoch.id, "the process stopped before this run finished", &live).await?;
            // A task edited since the epoch opened runs again: counting its
            // old run would mix two definitions in one epoch's loss. (A
            // closed epoch a resumed tree search measures again keeps its
            // runs: its loss is on record.)
            if epoch.completed_at.is_none() {
                let current = self.suite.tasks.iter().map(|t| (t.name.clone(), t.digest())).collect();
                changed = self.store.set_aside_changed_runs(epoch.id, &current).await?;
            }
        }
        let done: BTreeSet<String> = self.store.epoch_runs(epoch.id).await?.into_iter().map(|r| r.task_name).collect();
        let todo: Vec<&Task> = self.suite.tasks.iter().filter(|t| !done.contains(&t.name)).collect();
        let epoch_seed = epoch_seed(self.config.seed, epoch.epoch_num);
        self.bus.publish(Event::EpochStarted {
            suite_id,
            epoch_id: epoch.id,
            epoch_num: epoch.epoch_num,
            parent_artifacts: parent.clone(),
            tasks_total: self.suite.tasks.len(),
            tasks_done: self.suite.tasks.len() - todo.len(),
            resumed,
            changed,
            seed: epoch_seed,
        });
        self.run_epoch_items(suite_id, epoch, &todo, &artifacts, epoch_seed).await?;
        if self.cancelled() {
            return Ok(None);
        }

        // Close the epoch from what the store holds: resumed runs included.
        let results = self.epoch_results(epoch.id).await?;
        Ok(Some(EpochEval { parent, artifacts, results, epoch_seed }))
    }

    /// The artifact versions an epoch's runs see, with their content.
    async fn epoch_artifacts(
        &self,
        epoch: &EpochRow,
    ) -> Result<(BTreeMap<String, i64>, Vec<ActiveArtifact>), RunnerError> {
        let parent: BTreeMap<String, i64> =
            serde_json::from_str(&epoch.parent_artifacts_json).map_err(StoreError::from)?;
        let mut artifacts = Vec::new();
        for (name, version) in &parent {
            let def = self.registry.def(name)?;
            let v = self.registry.get(name, *version).await?;
            artifacts.push(ActiveArtifact {
                name: name.clone(),
                kind: def.kind,
                version: *version,
                content: v.content,
            });
        }
        Ok((parent, artifacts))
    }

    /// The results an epoch counted, in the suite's task order, read from the store.
    async fn epoch_results(&self, epoch_id: i64) -> Result<Vec<TaskResult>, RunnerError> {
        let by_task: BTreeMap<String, crate::store::EpochRunRow> =
            self.store.epoch_runs(epoch_id).await?.into_iter().map(|r| (r.task_name.clone(), r)).collect();
        let runs = self.store.runs_of_epoch(epoch_id).await?;
        let mut results = Vec::new();
        for t in &self.suite.tasks {
            let Some(er) = by_task.get(&t.name) else {
                continue;
            };
            let run = runs.iter().find(|r| r.id == er.run_id);
            results.push(TaskResult {
                task: t.name.clone(),
                holdout: t.holdout,
                loss: er.loss,
                status: run.map_or_else(|| "unknown".into(), |r| r.status.clone()),
                breakdown: run
                    .and_then(|r| r.loss_breakdown_json.as_deref())
                    .and_then(|j| serde_json::from_str(j).ok()),
                error: run.and_then(|r| r.error.clone()),
                examples: run
                    .and_then(|r| r.result_json.as_deref())
                    .map(task::command::examples_of)
                    .unwrap_or_default(),
            });
        }
        Ok(results)
    }
}

/// A task's name as a number, to derive its own seed from an epoch's.
fn task_hash(name: &str) -> i64 {
    name.bytes().fold(0i64, |h, b| h.wrapping_mul(31).wrapping_add(i64::from(b)))
}

fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
