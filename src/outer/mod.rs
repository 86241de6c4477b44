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
//! update, with the tree search's noise rule ([`tree::beyond_noise`]): a gain
//! within the larger standard error is not an improvement, and the update is
//! rolled back (reason `noise`) as a regression would be. Every sample is an
//! epoch, so `--epochs` counts them.
//!
//! The runner keeps no state of its own between epochs: everything it needs
//! — the previous mean, the last update, the runs already done — is read back
//! from the store. That is what makes resuming an interrupted suite a plain
//! re-run of the same command.

pub mod analyst;
pub mod approval;
pub mod estimate;
pub mod ideation;
mod lease;
pub mod optimizer;
pub mod preverify;
pub mod request;
pub mod rollback;
pub mod textgrad;
pub mod tree;
mod tree_run;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt;
use serde::Serialize;
use serde_json::json;
use tokio::sync::watch;

use crate::artifact::{Registry, RegistryError};
use crate::bus::{Bus, Event};
use crate::loss::{self, LossBreakdown};
use crate::store::{
    ArtifactChange, EpochClose, EpochRow, NewProposal, ObservedEffect, ProposalOutcome, RunEnd, Store, StoreError,
};
use crate::suite::{SourceLocation, Suite, Task, TaskKind};
use crate::task::{self, ActiveArtifact};
pub use approval::ApprovalMode;
use approval::GatedStep;
pub use rollback::RollbackReason;
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
    /// The events written to `child_artifacts_json`.
    pub events: Vec<serde_json::Value>,
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
}

/// What the optimizer made of an epoch.
struct Proposed {
    winner: Option<optimizer::Proposal>,
    /// Everything it considered, for the store.
    rows: Vec<NewProposal>,
    /// Why there is no winner, when there is none.
    note: Option<String>,
    model: Option<crate::llm::ModelSpend>,
    evidence: optimizer::Evidence,
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
            bus,
            suite,
            config,
            optimizer: None,
            llm: None,
            optimizer_llm: None,
            agent_llm: None,
            agent_config: task::agent::AgentConfig::default(),
            cancel,
        }
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
        self.optimizer = Some(self.config.optimizer.build(self.optimizer_llm.clone())?);
        for t in &self.suite.tasks {
            if let TaskKind::Optimize(o) = &t.kind
                && let Err(message) = task::optimize::resolve_problem(&o.problem, &self.suite.dir)
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

    /// The run, once it holds the suite's lease.
    async fn run_held(&mut self, suite_id: i64) -> Result<RunSummary, RunnerError> {
        let last = self.store.last_epoch(suite_id).await?;
        if last.is_none() {
            // Pins apply once, when the suite's history starts.
            for (name, version) in &self.suite.baseline_artifacts {
                self.registry.set_active(name, *version).await.map_err(|e| match e {
                    RegistryError::NoSuchVersion { .. } => RunnerError::Baseline(format!(
                        "{}: baseline_artifacts pins `{name}` to version {version}, which does not exist\n  hint: `attractor inspect --artifact {name}` lists its versions; 0 is the default",
                        self.suite.path.display()
                    )),
                    other => other.into(),
                })?;
            }
        }

        // η continues where the suite's last closed epoch left it (halved by
        // each rollback), so a resumed or continued run is the run that would
        // have gone on uninterrupted; the configured rate starts a suite.
        let mut lr = self.store.last_learning_rate(suite_id).await?.unwrap_or(self.config.learning_rate);
        let mut summaries = Vec::new();
        let mut pending = last.as_ref().filter(|e| e.completed_at.is_none()).cloned();
        let next_num =
            last.as_ref().map_or(1, |e| if e.completed_at.is_none() { e.epoch_num } else { e.epoch_num + 1 });
        let plan = self.plan(suite_id, next_num).await?;
        self.bus.publish(Event::SuiteStarted {
            suite_id,
            suite: self.suite.name.clone(),
            epochs: self.config.epochs,
            optimizer: self.config.optimizer.name().to_string(),
            learning_rate: self.config.learning_rate,
            rollback_on_regression: self.config.rollback_on_regression,
            concurrency: self.config.concurrency,
            seed: self.config.seed,
            tasks: self.suite.tasks.len(),
            first_epoch: plan.first_epoch,
            continued: plan.continued,
        });
        if self.config.optimizer == OptimizerKind::Tree {
            // The tree's proposals belong to the suite, not to an epoch.
            if let Some(c) = &self.optimizer_llm {
                c.set_scope(crate::llm::CallScope { suite_id: Some(suite_id), ..Default::default() });
            }
            let interrupted = self.run_tree(suite_id, &plan, pending, &mut summaries, &mut lr).await?;
            let stopped = if interrupted { None } else { self.budget_spent() };
            if !interrupted && stopped.is_none() {
                self.store.finish_plan(suite_id).await?;
            }
            self.apply_approved_at_end(suite_id).await?;
            return Ok(self.finish(suite_id, summaries, interrupted, stopped, lr));
        }
        let mut interrupted = false;
        let mut stopped = None;
        for _ in next_num..=plan.last_epoch() {
            if self.cancelled() {
                interrupted = true;
                break;
            }
            if let Some(reason) = self.budget_spent() {
                stopped = Some(reason);
                break;
            }
            let (epoch, resumed) = match pending.take() {
                Some(e) => (e, true),
                None => {
                    let next = self.store.last_epoch(suite_id).await?.map_or(1, |e| e.epoch_num + 1);
                    let parent = self.snapshot().await?;
                    let parent_json = serde_json::to_string(&parent).map_err(StoreError::from)?;
                    (self.store.insert_epoch(suite_id, next, &parent_json).await?, false)
                }
            };
            match self.run_epoch(suite_id, &epoch, resumed, &mut lr).await? {
                Some(s) => summaries.push(s),
                None => {
                    interrupted = true;
                    break;
                }
            }
        }
        if !interrupted && stopped.is_none() {
            self.store.finish_plan(suite_id).await?;
        }
        self.apply_approved_at_end(suite_id).await?;
        Ok(self.finish(suite_id, summaries, interrupted, stopped, lr))
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

    /// Announces the end of the invocation and sums it up.
    fn finish(
        &self,
        suite_id: i64,
        epochs: Vec<EpochSummary>,
        interrupted: bool,
        stopped: Option<String>,
        lr: f64,
    ) -> RunSummary {
        self.bus.publish(Event::SuiteFinished {
            suite_id,
            epochs_completed: epochs.len() as u32,
            interrupted,
            stopped: stopped.clone(),
        });
        RunSummary {
            suite_id,
            suite: self.suite.name.clone(),
            epochs,
            interrupted,
            learning_rate: lr,
            seed: self.config.seed,
            stopped,
        }
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
        let parent: BTreeMap<String, i64> =
            serde_json::from_str(&epoch.parent_artifacts_json).map_err(StoreError::from)?;
        // Runs always see the epoch's parent versions, even when resuming after
        // someone moved an active pointer in between.
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
        if resumed {
            self.store.cancel_unfinished_runs(epoch.id, "the process stopped before this run finished").await?;
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
            seed: epoch_seed,
        });
        let concurrency = self.config.concurrency.max(1);
        let results: Vec<Result<(), RunnerError>> = futures::stream::iter(todo)
            .map(|t| self.run_task(suite_id, epoch, t, &artifacts, epoch_seed))
            .buffer_unordered(concurrency)
            .collect()
            .await;
        for r in results {
            r?;
        }
        if self.cancelled() {
            return Ok(None);
        }

        // Close the epoch from what the store holds: resumed runs included.
        let results = self.epoch_results(epoch.id).await?;
        Ok(Some(EpochEval { parent, artifacts, results, epoch_seed }))
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
            });
        }
        Ok(results)
    }

    /// Runs (or finishes) one epoch; `None` when interrupted before it closed.
    async fn run_epoch(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        resumed: bool,
        lr: &mut f64,
    ) -> Result<Option<EpochSummary>, RunnerError> {
        let Some(EpochEval { parent, artifacts, results, epoch_seed }) =
            self.evaluate_epoch(suite_id, epoch, resumed).await?
        else {
            return Ok(None);
        };
        let training: Vec<f64> = results.iter().filter(|r| !r.holdout).map(|r| r.loss).collect();
        let holdout: Vec<f64> = results.iter().filter(|r| r.holdout).map(|r| r.loss).collect();
        // The optimizer follows the training tasks; a suite of only held-out
        // tasks is still measured.
        let mean_loss = loss::mean(&training).or_else(|| loss::mean(&holdout));
        let holdout_mean = loss::mean(&holdout);

        let prev = self.store.last_completed_epoch(suite_id).await?.filter(|p| p.epoch_num < epoch.epoch_num);

        // A noisy suite judges an update on several epochs of the versions it
        // made: the epochs after it are a series of `verify_repeats`
        // evaluations, and only the last of them decides, on the series' mean
        // against the mean of the series before the update, with the noise
        // rule of the tree search (`tree::beyond_noise`).
        let repeats = self.verify_repeats();
        let series = if repeats > 1 && mean_loss.is_some() {
            let history: Vec<EpochRow> = self
                .store
                .epochs(suite_id)
                .await?
                .into_iter()
                .filter(|e| e.completed_at.is_some() && e.epoch_num < epoch.epoch_num)
                .collect();
            pending_verification(&history)
        } else {
            None
        };
        if let Some(v) = &series
            && v.child.len() + 1 < repeats as usize
        {
            return self.close_verify_sample(suite_id, epoch, &parent, mean_loss, holdout_mean, v, repeats, *lr).await;
        }

        // What the decision compares: the epoch before against this one, or
        // on a noisy suite the two series' means.
        let (decided, prev_mean, prev_holdout, current_mean, current_holdout, gain) = match &series {
            Some(v) => {
                let mut now: Vec<f64> = v.child.iter().map(|(_, m)| *m).collect();
                now.extend(mean_loss);
                let before: Vec<f64> = v.parent.iter().map(|(_, m)| *m).collect();
                let mut held_now = Vec::new();
                for (id, _) in &v.child {
                    held_now.extend(self.holdout_mean_of(*id).await?);
                }
                held_now.extend(holdout_mean);
                let mut held_before = Vec::new();
                for (id, _) in &v.parent {
                    held_before.extend(self.holdout_mean_of(*id).await?);
                }
                let (b, n) = (loss::mean(&before), loss::mean(&now));
                let gain = match (b, n) {
                    (Some(b), Some(n)) => {
                        Some(tree::beyond_noise(b, &before, n, &now, self.config.tree.min_improvement))
                    }
                    _ => None,
                };
                (Some(v.update.clone()), b, loss::mean(&held_before), n, loss::mean(&held_now), gain)
            }
            None => {
                let prev_holdout = match &prev {
                    Some(p) => self.holdout_mean_of(p.id).await?,
                    None => None,
                };
                (prev.clone(), prev.as_ref().and_then(|p| p.mean_loss), prev_holdout, mean_loss, holdout_mean, None)
            }
        };
        let last_updates = decided.as_ref().map(updates_of).unwrap_or_default();

        let mut changes = Vec::new();
        let mut proposals = Vec::new();
        let mut note = None;
        let mut model = None;
        let mut applied_approval = None;
        let mut events: Vec<serde_json::Value> = Vec::new();
        let mut bus_events = Vec::new();
        // On a noisy suite a gain within the noise does not count: the update goes.
        let (regressed, reason) = match gain {
            Some(tree::Gain::Better { .. }) => (false, RollbackReason::Training),
            Some(tree::Gain::WithinNoise { .. }) => (true, RollbackReason::Noise),
            Some(tree::Gain::NotBetter { .. }) => (true, RollbackReason::Training),
            None => (matches!((current_mean, prev_mean), (Some(m), Some(p)) if m > p), RollbackReason::Training),
        };
        // The held-out gate: an update may lower the training loss and still
        // be overfitting the optimizer's evidence; held-out tasks never reach
        // the optimizer, so a rise there beyond noise is the tell.
        let holdout_regressed = matches!(
            (current_holdout, prev_holdout),
            (Some(h), Some(p)) if h > p + self.config.holdout_tolerance
        );
        let roll_back =
            self.config.rollback_on_regression && (regressed || holdout_regressed) && !last_updates.is_empty();
        // What this epoch says about the previous epoch's applied proposal.
        let observed = match (&decided, prev_mean, current_mean) {
            (Some(p), Some(before), Some(now)) if !last_updates.is_empty() => {
                Some(ObservedEffect { epoch_id: p.id, loss_reduction: before - now, rolled_back: roll_back })
            }
            _ => None,
        };
        if let (Some(v), Some(g), false) = (&series, gain, roll_back) {
            let noise = match g {
                tree::Gain::Better { noise, .. } | tree::Gain::WithinNoise { noise, .. } => Some(noise),
                tree::Gain::NotBetter { .. } => None,
            };
            events.push(json!({
                "type": "verified", "evaluations": v.child.len() + 1, "mean_loss_prev": prev_mean,
                "mean_loss_current": current_mean, "noise": noise, "kept": true,
            }));
        }
        if roll_back {
            let (m, p) = (current_mean.unwrap_or_default(), prev_mean.unwrap_or_default());
            *lr /= 2.0;
            let reason = if regressed { reason } else { RollbackReason::Holdout };
            for (artifact, from, to) in &last_updates {
                changes.push(ArtifactChange::Activate { name: artifact.clone(), version: *from });
                let mut event = json!({
                    "type": "rollback", "artifact": artifact, "from_version": to, "to_version": from,
                    "mean_loss_prev": p, "mean_loss_current": m, "new_learning_rate": *lr,
                    "reason": reason, "holdout_mean_prev": prev_holdout, "holdout_mean_current": current_holdout,
                });
                if let (Some(v), Some(g)) = (&series, gain) {
                    event["evaluations"] = json!(v.child.len() + 1);
                    event["noise"] = json!(match g {
                        tree::Gain::Better { noise, .. } | tree::Gain::WithinNoise { noise, .. } => Some(noise),
                        tree::Gain::NotBetter { .. } => None,
                    });
                }
                events.push(event);
                bus_events.push(Event::ArtifactRolledBack {
                    suite_id,
                    epoch_id: epoch.id,
                    artifact: artifact.clone(),
                    from_version: *to,
                    to_version: *from,
                    mean_loss_prev: p,
                    mean_loss_current: m,
                    new_learning_rate: *lr,
                    reason,
                    holdout_mean_prev: prev_holdout,
                    holdout_mean_current: current_holdout,
                    why: rollback::why(Some(reason), (Some(p), Some(m)), (prev_holdout, current_holdout)),
                });
            }
        } else if let Some(m) = mean_loss {
            let gated = match self.settled_update(suite_id).await? {
                approval::Settled::Step(step) => step,
                // Cancelled while waiting for a person: the epoch stays open.
                approval::Settled::Cancelled => return Ok(None),
                approval::Settled::Open => {
                    let proposed =
                        self.propose(suite_id, epoch, &parent, &artifacts, &results, epoch_seed, m, *lr).await?;
                    model = proposed.model;
                    proposals = proposed.rows;
                    note = proposed.note;
                    match proposed.winner {
                        Some(w) if self.approval_mode() != ApprovalMode::Off => {
                            let evidence = approval::evidence_json(&proposed.evidence, &w.details)?;
                            match self.gate(suite_id, epoch, w, None, evidence).await? {
                                Some(step) => step,
                                None => return Ok(None),
                            }
                        }
                        winner => GatedStep { update: winner, ..GatedStep::default() },
                    }
                }
            };
            if gated.note.is_some() {
                note = gated.note;
            }
            if let Some(why) = gated.rejection {
                // This close's own winner, which a person turned down.
                for row in proposals.iter_mut().filter(|r| r.outcome == ProposalOutcome::Winner) {
                    row.outcome = ProposalOutcome::Rejected;
                    row.rejection = Some(why.clone());
                }
            }
            applied_approval = gated.approval;
            if let Some(p) = gated.update {
                // The version the epoch ran with is what a rollback returns to.
                let from = parent.get(&p.artifact).copied().unwrap_or(p.parent_version);
                let mut event = serde_json::Map::new();
                event.insert("type".into(), json!("update"));
                event.insert("artifact".into(), json!(p.artifact));
                event.insert("from_version".into(), json!(from));
                event.insert("to_version".into(), serde_json::Value::Null); // filled in once stored
                event.insert("rationale".into(), json!(p.rationale));
                event.insert("expected_loss_reduction".into(), json!(p.expected_loss_reduction));
                event.insert("confidence".into(), json!(p.confidence));
                event.insert("learning_rate".into(), json!(*lr));
                for (k, v) in &p.details {
                    event.insert(k.clone(), v.clone());
                }
                events.push(serde_json::Value::Object(event));
                changes.push(ArtifactChange::Update {
                    name: p.artifact.clone(),
                    content: p.content.clone(),
                    parent_version: p.parent_version,
                });
                bus_events.push(Event::ArtifactUpdated {
                    suite_id,
                    epoch_id: epoch.id,
                    artifact: p.artifact,
                    from_version: from,
                    to_version: 0,
                    rationale: p.rationale,
                    learning_rate: *lr,
                });
            }
        }

        let mut child = parent.clone();
        // The update events learn their `to_version` inside the transaction.
        let mut final_events = events;
        let versions = self
            .store
            .complete_epoch(
                epoch.id,
                mean_loss,
                &EpochClose { changes: changes.clone(), proposals, observed, applied_approval },
                |versions| {
                    for (change, v) in changes.iter().zip(versions) {
                        match change {
                            ArtifactChange::Update { name, .. } | ArtifactChange::Activate { name, .. } => {
                                child.insert(name.clone(), *v);
                            }
                        }
                    }
                    for (event, v) in final_events.iter_mut().zip(versions) {
                        if event["type"] == "update" {
                            event["to_version"] = json!(v);
                        }
                    }
                    // η after this epoch: a resumed or continued run starts from it.
                    json!({
                        "artifacts": child, "events": final_events, "note": note, "model": model,
                        "learning_rate": *lr,
                    })
                    .to_string()
                },
            )
            .await?;
        for (mut e, v) in bus_events.into_iter().zip(&versions) {
            if let Event::ArtifactUpdated { to_version, .. } = &mut e {
                *to_version = *v;
            }
            self.bus.publish(e);
        }
        tracing::info!(suite = %self.suite.name, epoch = epoch.epoch_num, ?mean_loss, ?holdout_mean, lr = *lr, "epoch finished");
        self.bus.publish(Event::EpochFinished {
            suite_id,
            epoch_id: epoch.id,
            epoch_num: epoch.epoch_num,
            mean_loss,
            holdout_mean_loss: holdout_mean,
            learning_rate: *lr,
            note: note.clone(),
            model,
        });
        Ok(Some(EpochSummary {
            epoch_id: epoch.id,
            epoch_num: epoch.epoch_num,
            mean_loss,
            holdout_mean_loss: holdout_mean,
            learning_rate: *lr,
            resumed,
            events: final_events,
            note,
            model,
        }))
    }

    /// Asks the optimizer for the next update, from the epoch's evidence.
    #[allow(clippy::too_many_arguments)]
    async fn propose(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        parent: &BTreeMap<String, i64>,
        artifacts: &[ActiveArtifact],
        results: &[TaskResult],
        epoch_seed: u64,
        mean_loss: f64,
        lr: f64,
    ) -> Result<Proposed, RunnerError> {
        let mut candidates = Vec::new();
        let mut history = self.past_proposals(suite_id).await?;
        let kinds = self.suite.task_kinds();
        for (name, version) in parent {
            let def = self.registry.def(name)?.clone();
            if !def.steers_any(&kinds) {
                continue;
            }
            let content = artifacts.iter().find(|a| &a.name == name).map(|a| a.content.clone()).unwrap_or_default();
            candidates.push(optimizer::Candidate { def, version: *version, content });
        }
        history.retain(|name, _| candidates.iter().any(|c| &c.def.name == name));
        let evidence = optimizer::Evidence {
            suite: self.suite.name.clone(),
            epoch_num: epoch.epoch_num,
            mean_loss,
            learning_rate: lr,
            tasks: task_evidence(results),
            candidates,
            seed: epoch_seed,
            history,
            guidance: Vec::new(),
        };
        let optimizer = self.optimizer.as_ref().ok_or(RunnerError::NeedsModel("unknown"))?;
        let before = self.optimizer_llm.as_ref().map(|c| {
            c.set_scope(crate::llm::CallScope { suite_id: Some(suite_id), epoch_id: Some(epoch.id), run_id: None });
            c.usage().snapshot()
        });
        let step = optimizer.propose(&evidence).await?;
        // Every reply is counted, usable or not: the client's counters
        // saw each call this step made.
        let model = self
            .optimizer_llm
            .as_ref()
            .zip(before)
            .map(|(c, before)| crate::llm::ModelSpend::from(c.usage().snapshot().since(&before)));
        Ok(Proposed {
            note: step.no_change_reason(optimizer.name()),
            rows: proposal_rows(&step, optimizer.name(), lr),
            winner: step.winner,
            model,
            evidence,
        })
    }

    /// Closes an epoch that is one more evaluation of a noisy suite's last
    /// update: its mean is recorded, nothing is decided or proposed.
    #[allow(clippy::too_many_arguments)]
    async fn close_verify_sample(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        parent: &BTreeMap<String, i64>,
        mean_loss: Option<f64>,
        holdout_mean: Option<f64>,
        v: &Verification,
        repeats: u32,
        learning_rate: f64,
    ) -> Result<Option<EpochSummary>, RunnerError> {
        let updates = updates_of(&v.update);
        let events = vec![json!({
            "type": "verify_sample", "sample": v.child.len() + 1, "of": repeats,
            "update_epoch": v.update.epoch_num,
            "artifacts": updates.iter().map(|(a, _, _)| a).collect::<Vec<_>>(),
        })];
        self.store
            .complete_epoch(epoch.id, mean_loss, &EpochClose::default(), |_| {
                json!({ "artifacts": parent, "events": events, "learning_rate": learning_rate }).to_string()
            })
            .await?;
        tracing::info!(suite = %self.suite.name, epoch = epoch.epoch_num, ?mean_loss, sample = v.child.len() + 1, of = repeats, "verification epoch");
        self.bus.publish(Event::EpochFinished {
            suite_id,
            epoch_id: epoch.id,
            epoch_num: epoch.epoch_num,
            mean_loss,
            holdout_mean_loss: holdout_mean,
            learning_rate,
            note: Some(format!("verification sample {} of {repeats}", v.child.len() + 1)),
            model: None,
        });
        Ok(Some(EpochSummary {
            epoch_id: epoch.id,
            epoch_num: epoch.epoch_num,
            mean_loss,
            holdout_mean_loss: holdout_mean,
            learning_rate,
            resumed: false,
            events,
            note: Some(format!("verification sample {} of {repeats}", v.child.len() + 1)),
            model: None,
        }))
    }

    /// The mean loss of an epoch's held-out tasks, from the store.
    async fn holdout_mean_of(&self, epoch_id: i64) -> Result<Option<f64>, RunnerError> {
        let held: BTreeSet<&str> = self.suite.tasks.iter().filter(|t| t.holdout).map(|t| t.name.as_str()).collect();
        if held.is_empty() {
            return Ok(None);
        }
        let losses: Vec<f64> = self
            .store
            .epoch_runs(epoch_id)
            .await?
            .into_iter()
            .filter(|r| held.contains(r.task_name.as_str()))
            .map(|r| r.loss)
            .collect();
        Ok(loss::mean(&losses))
    }

    /// Earlier applied proposals of this suite per artifact, oldest first,
    /// with their effect (one query for every candidate).
    async fn past_proposals(
        &self,
        suite_id: i64,
    ) -> Result<BTreeMap<String, Vec<optimizer::PastProposal>>, RunnerError> {
        let mut out: BTreeMap<String, Vec<optimizer::PastProposal>> = BTreeMap::new();
        for l in self.store.proposals(suite_id).await? {
            let p = l.proposal;
            if p.outcome != ProposalOutcome::Winner.as_str() {
                continue;
            }
            out.entry(p.artifact).or_default().push(optimizer::PastProposal {
                epoch_num: l.epoch_num,
                rationale: p.rationale.unwrap_or_default(),
                expected_loss_reduction: p.expected_loss_reduction,
                observed_loss_reduction: p.observed_loss_reduction,
                rolled_back: p.rolled_back,
            });
        }
        Ok(out)
    }

    /// Runs one task once and records the run.
    async fn run_task(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        t: &Task,
        artifacts: &[ActiveArtifact],
        seed: u64,
    ) -> Result<(), RunnerError> {
        if self.cancelled() {
            return Ok(());
        }
        let run_dir = task::command::fresh_run_dir(&self.config.runs_root, &self.suite.name, epoch.epoch_num, &t.name);
        let run_id =
            self.store.insert_run(suite_id, epoch.id, &t.name, t.kind_name(), &run_dir.to_string_lossy()).await?;
        self.bus.publish(Event::RunStarted {
            suite_id,
            epoch_id: epoch.id,
            run_id,
            task: t.name.clone(),
            kind: t.kind_name().to_string(),
        });
        // The run's model calls are counted on their own too (and in the
        // whole run's totals, where its budgets are kept).
        let scope = crate::llm::CallScope { suite_id: Some(suite_id), epoch_id: Some(epoch.id), run_id: Some(run_id) };
        let metered = |client: Option<&crate::llm::LlmClient>| {
            client.map(|c| {
                let usage = std::sync::Arc::new(crate::llm::Usage::under(std::sync::Arc::clone(c.usage())));
                let client = c.clone().with_usage(std::sync::Arc::clone(&usage)).with_ledger(self.store.clone(), scope);
                (client, usage)
            })
        };
        let (coordinator_llm, agent_llm) = match &t.kind {
            TaskKind::Optimize(_) => (metered(self.llm.as_ref()), None),
            TaskKind::Agent(_) => (None, metered(self.agent_model())),
            TaskKind::Command(_) => (None, None),
        };
        let run_usage = coordinator_llm.as_ref().or(agent_llm.as_ref()).map(|(_, u)| std::sync::Arc::clone(u));
        let outcome = match &t.kind {
            TaskKind::Command(spec) => {
                task::command::run(task::command::CommandRun {
                    task: t,
                    spec,
                    run_dir: &run_dir,
                    suite_dir: &self.suite.dir,
                    epoch_num: epoch.epoch_num,
                    artifacts,
                    cancel: self.cancel.clone(),
                })
                .await
            }
            TaskKind::Optimize(spec) => {
                task::optimize::run(task::optimize::OptimizeRun {
                    task: t,
                    spec,
                    suite_id,
                    run_id,
                    run_dir: &run_dir,
                    suite_dir: &self.suite.dir,
                    epoch_num: epoch.epoch_num,
                    artifacts,
                    store: self.store.clone(),
                    bus: self.bus.clone(),
                    seed: epoch_seed(seed, task_hash(&t.name)),
                    llm: coordinator_llm.map(|(c, _)| c),
                    cancel: self.cancel.clone(),
                })
                .await
            }
            TaskKind::Agent(spec) => {
                task::agent::run(task::agent::AgentRun {
                    task: t,
                    spec,
                    suite_id,
                    epoch_id: epoch.id,
                    run_id,
                    run_dir: &run_dir,
                    suite_dir: &self.suite.dir,
                    artifacts,
                    store: self.store.clone(),
                    bus: self.bus.clone(),
                    seed: epoch_seed(seed, task_hash(&t.name)),
                    llm: agent_llm.map(|(c, _)| c),
                    config: self.agent_config.clone(),
                    cancel: self.cancel.clone(),
                })
                .await
            }
        };
        let breakdown =
            (!outcome.cancelled).then(|| loss::compute(&outcome.signals, &t.weights, t.budget.max_rejections));
        let scores = json!({
            "status": outcome.status_label(),
            "eval_score": outcome.signals.eval_score,
            "critique_score": outcome.signals.critique_score,
            "gate_rejection_count": outcome.signals.gate_rejection_count,
            "budget_remaining_pct": outcome.signals.budget_remaining_pct,
            "metrics": outcome.metrics,
            "breakdown": breakdown,
        });
        let end = RunEnd {
            task_name: t.name.clone(),
            status: outcome.status_label().to_string(),
            duration_ms: duration_ms(outcome.duration),
            exit_code: outcome.exit_code,
            loss: breakdown.as_ref().map(|b| b.total),
            loss_breakdown_json: breakdown.as_ref().and_then(|b| serde_json::to_string(b).ok()),
            scores_json: breakdown.as_ref().map(|_| scores.to_string()),
            result_json: outcome.result_json.clone(),
            error: outcome.error.clone(),
            stdout: Some(outcome.stdout.clone()),
            stderr: Some(outcome.stderr.clone()),
            model: run_usage.map(|u| crate::llm::ModelSpend::from(u.snapshot())).filter(|m| m.calls > 0),
        };
        tracing::debug!(task = %t.name, run_id, status = %end.status, loss = ?end.loss, error = ?end.error, "run finished");
        self.store.finish_run(run_id, epoch.id, &end).await?;
        self.bus.publish(Event::RunFinished {
            suite_id,
            epoch_id: epoch.id,
            run_id,
            task: t.name.clone(),
            status: end.status,
            loss: end.loss,
            duration_ms: end.duration_ms,
            error: end.error,
        });
        Ok(())
    }
}

/// The updates an epoch applied: (artifact, from_version, to_version).
/// What an optimizer may see of an epoch's results: the training tasks only.
fn task_evidence(results: &[TaskResult]) -> Vec<optimizer::TaskEvidence> {
    results
        .iter()
        .filter(|r| !r.holdout)
        .map(|r| optimizer::TaskEvidence {
            task: r.task.clone(),
            loss: r.loss,
            status: r.status.clone(),
            breakdown: r.breakdown.clone(),
            error: r.error.clone(),
        })
        .collect()
}

/// The rows to store for everything an optimizer step considered.
fn proposal_rows(step: &optimizer::Step, optimizer: &str, learning_rate: f64) -> Vec<NewProposal> {
    step.considered
        .iter()
        .map(|c| {
            let is_winner = step.winner.as_ref().is_some_and(|w| Some(w) == c.proposal.as_ref());
            let outcome = match (&c.rejection, is_winner) {
                (Some(_), _) => ProposalOutcome::Rejected,
                (None, true) => ProposalOutcome::Winner,
                (None, false) => ProposalOutcome::Candidate,
            };
            let p = c.proposal.as_ref();
            NewProposal {
                optimizer: optimizer.to_string(),
                artifact: c.artifact.clone(),
                parent_version: c.parent_version,
                content: p.map(|p| p.content.clone()),
                rationale: p.map(|p| p.rationale.clone()),
                expected_loss_reduction: p.and_then(|p| p.expected_loss_reduction),
                confidence: p.and_then(|p| p.confidence),
                outcome,
                rejection: c.rejection.clone(),
                learning_rate,
            }
        })
        .collect()
}

/// The state of a noisy suite's verification, read back from the store.
#[derive(Debug, Clone)]
struct Verification {
    /// The epoch that applied the update being verified.
    update: EpochRow,
    /// (epoch id, mean loss) of the evaluations of the versions before the
    /// update: the update epoch and the verification samples just before it.
    parent: Vec<(i64, f64)>,
    /// (epoch id, mean loss) of the verification samples since the update.
    child: Vec<(i64, f64)>,
}

fn is_verify_sample(epoch: &EpochRow) -> bool {
    epoch_events(epoch).iter().any(|e| e["type"] == "verify_sample")
}

fn epoch_events(epoch: &EpochRow) -> Vec<serde_json::Value> {
    epoch
        .child_artifacts_json
        .as_deref()
        .and_then(|c| serde_json::from_str::<serde_json::Value>(c).ok())
        .and_then(|v| v["events"].as_array().cloned())
        .unwrap_or_default()
}

/// An update still being verified, from the completed epochs (oldest
/// first): the samples since the last update-applying epoch, and that
/// epoch's own series. `None` when the last decision applied no update.
fn pending_verification(completed: &[EpochRow]) -> Option<Verification> {
    let mut i = completed.len();
    let mut child = Vec::new();
    while i > 0 && is_verify_sample(&completed[i - 1]) {
        i -= 1;
        child.push((completed[i].id, completed[i].mean_loss?));
    }
    child.reverse();
    let update = completed.get(i.checked_sub(1)?)?.clone();
    if updates_of(&update).is_empty() {
        return None;
    }
    let mut parent = vec![(update.id, update.mean_loss?)];
    let mut j = i - 1;
    while j > 0 && is_verify_sample(&completed[j - 1]) {
        j -= 1;
        if let Some(m) = completed[j].mean_loss {
            parent.push((completed[j].id, m));
        }
    }
    Some(Verification { update, parent, child })
}

fn updates_of(epoch: &EpochRow) -> Vec<(String, i64, i64)> {
    let Some(child) = epoch.child_artifacts_json.as_deref() else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(child) else {
        return Vec::new();
    };
    v["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["type"] == "update")
        .filter_map(|e| {
            Some((e["artifact"].as_str()?.to_string(), e["from_version"].as_i64()?, e["to_version"].as_i64()?))
        })
        .collect()
}

/// A task's name as a number, to derive its own seed from an epoch's.
fn task_hash(name: &str) -> i64 {
    name.bytes().fold(0i64, |h, b| h.wrapping_mul(31).wrapping_add(i64::from(b)))
}

/// Each epoch's own seed, derived from the base seed (SplitMix64 step), so an
/// epoch's random choices replay from the base seed and the epoch number alone.
pub fn epoch_seed(base: u64, epoch_num: i64) -> u64 {
    let mut z = base.wrapping_add((epoch_num as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
