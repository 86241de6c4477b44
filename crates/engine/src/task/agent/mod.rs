//! The `agent` task kind: a natural-language task carried out in a workspace
//! by an executor (a model, or any coding agent), measured by overseers, and
//! steered by the convergence engine (seed 002) with the goal gradient
//! (seed 003).
//!
//! In the argmin split this module is the *Executor*: it owns the loop
//! (`driver`), the budgets and the termination. The engine's [`Engine::decide`] is the
//! solver step, [`AgentState`] the state carried from one iteration to the
//! next (and across restarts), and the bus and the store are the observers.
//! One iteration:
//!
//! 1. execute the chosen strategy (RevertAndBranch first resets the
//!    workspace to the best observation; a FreshStart prompt carries only the
//!    carry-forward, never the earlier attempts);
//! 2. measure the workspace with the overseers, cheapest first;
//! 3. on the iterations the policy names, ask the intent verifier
//!    ([`verify`]);
//! 4. let the engine decide: metrics, attractor, bandit, goal gradient, loop
//!    control, next strategy;
//! 5. record the iteration (store + bus) and act on the loop control — go on,
//!    pause for a person at an intervention point (`intervene`), or end; the
//!    intervention points the iteration reached are then raised one by one,
//!    each as its mode says — a question, a notice, or only an event
//!    (`points`).
//!
//! A run usually drives one trajectory. Two things make it a tree of them
//! (every node a row of `trajectories` with its parent, role and place):
//!
//! - **Parallel samples** (`parallel`): a task with `parallel_samples: K`
//!   (or a narrow basin, when the engine's `parallel.follow_basin` is on)
//!   runs K trajectories side by side, each in its own workspace copy, all
//!   drawing on one shared budget. The first to converge wins and the others
//!   are stopped (their processes killed, their rows `superseded`); if none
//!   converges, the best observation across them is the result.
//! - **Decomposition** (`split`, `decompose`): before the first attempt
//!   (proactive) or when the engine chooses `decompose` (reactive), the model
//!   is asked for an ordered split into subtasks, each run as a child
//!   trajectory on its share of the budget, then the mandatory integration
//!   trajectory (a quarter of the budget) measures the whole with the task's
//!   own overseers; its result is the task's. A split that cannot be used
//!   is recorded and the trajectory goes on without it.
//!
//! `tree` says where a trajectory sits (its placement and role) and what it
//! hands back when it ends (its report).
//!
//! Around the loop, convergence memory ([`crate::memory`], via `remember`):
//! a new trajectory is primed from what earlier ones of its category left
//! (bandit nudges, prompt lessons, the category's convergence rate in
//! SETUP), and every trajectory that ends leaves a memory of its own. A
//! command of an iteration that leaves processes running behind it is
//! reported on the bus (`leftovers`) for the auditor.
//!
//! The run ends in a [`RunOutcome`]: the eval score is the final convergence
//! level, gate rejections count refused edits and replies, the remaining
//! budget is the scarcest dimension's share left, and the status is complete
//! (converged), partial (the best result accepted when the budget ran out) or
//! failed (exhausted, abandoned, trapped, or an error).
//!
//! A run stopped while a trajectory is unfinished (Ctrl-C, a crash, a pause
//! waiting for a person) leaves its state stored; the next run of the same
//! task in the same epoch continues it — same workspace, same question, and
//! for a tree the unfinished samples or the remaining subtasks.

mod baseline;
mod config;
mod decompose;
mod driver;
mod finish;
pub mod forbid;
pub mod intervene;
mod leftovers;
mod parallel;
mod points;
pub mod protect;
mod remember;
mod split;
mod state;
mod step;
mod supervise;
mod tree;
pub mod verify;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::watch;

pub use config::AgentConfig;
pub use decompose::{Coordination, DECOMPOSITION_CONTRACT, Decomposition, Subtask, parse_proposal};
use driver::{Driver, End, Ending, Start};
pub use intervene::Answer;
pub use state::{AgentState, AttemptRecord, Waiting};
pub use tree::Role;
use tree::{Placement, Report, is_terminal_status};
pub use verify::{IntentVerifier, VerifierConfig};

use super::{ActiveArtifact, RunOutcome};
use crate::bus::{Bus, Event};
use crate::engine::basin::{BasinInputs, SetupPlan};
use crate::engine::spec::AmendmentSource;
use crate::engine::{
    AttractorType, BestObservation, ConvergenceBudget, ConvergencePhase, ConvergencePolicy, Decision, Engine,
    EngineError, InterventionKind, InterventionMode, LoopControl, Observation, SetupInputs, SpecificationEvolution,
    StrategyBandit, StrategyChoice, StrategyKind, Trajectory,
};
use crate::executor::{
    CommandExecutor, CommandExecutorConfig, Execution, ExecutionRequest, ExecutionStatus, Executor, ExecutorError,
    LlmExecutor, PromptInputs, PromptTexts, PromptTextsError,
};
use crate::ggs::PartialResult;
use crate::llm::{LlmClient, LlmError};
use crate::loss::{LossSignals, RunStatus};
use crate::memory::Recall;
use crate::overseer::OverseerRunner;
use crate::overseer::runner::{MeasurePolicy, Measurement, OverseerError};
use crate::store::{
    ObservationRecord, Store, StoreError, TrajectoryEnd, TrajectoryProgress, TrajectoryRecord, TrajectoryRow,
};
use crate::suite::{AgentTask, ExecutorKind, Overseer, OverseerKind, Task};
use crate::workspace::{ArtifactReference, Workspace, WorkspaceError};

/// The bandit category of a task without a `workflow:`.
pub const DEFAULT_CATEGORY: &str = "general";
/// The file an agent run leaves in its run directory: the trajectory's summary.
pub const RESULT_FILE: &str = "agent_result.json";

/// Whether the task's executor is the built-in LLM executor (the default).
pub fn needs_model(spec: &AgentTask) -> bool {
    spec.executor.as_ref().is_none_or(|e| e.kind == ExecutorKind::Llm)
}

/// Everything one run of an agent task needs.
pub struct AgentRun<'a> {
    pub task: &'a Task,
    pub spec: &'a AgentTask,
    pub suite_id: i64,
    pub epoch_id: i64,
    pub run_id: i64,
    pub run_dir: &'a Path,
    /// Where the task's `workspace:` is relative to.
    pub suite_dir: &'a Path,
    pub artifacts: &'a [ActiveArtifact],
    pub store: Store,
    pub bus: Bus,
    /// Base of the run's random choices (Thompson sampling).
    pub seed: u64,
    /// The model of the LLM executor and the intent verifier.
    pub llm: Option<LlmClient>,
    pub config: AgentConfig,
    pub cancel: watch::Receiver<bool>,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(
        "task `{task}` uses the LLM executor, and no model is configured\n  hint: set ATTRACTOR_LLM_MODEL (and \
         ATTRACTOR_LLM_BASE_URL for a server other than a local Ollama), or give the task \
         `executor: {{type: command, command: …}}`"
    )]
    NoModel { task: String },
    #[error("task `{task}`: the command executor needs `executor.command`")]
    NoCommand { task: String },
    #[error(transparent)]
    Prompt(#[from] PromptTextsError),
    #[error("task `{task}`: {source}")]
    Overseer {
        task: String,
        #[source]
        source: OverseerError,
    },
    #[error("the trajectory's workspace: {0}")]
    Workspace(#[from] WorkspaceError),
    #[error("recording the trajectory: {0}")]
    Store(#[from] StoreError),
    #[error("trajectory `{id}` cannot be resumed: {reason}\n  hint: start the task afresh in a new epoch")]
    Resume { id: String, reason: String },
    #[error("the convergence engine refused a step: {0}")]
    Engine(#[from] EngineError),
    #[error("the executor failed: {0}")]
    Executor(#[from] ExecutorError),
    #[error(
        "aso_config v{version} is not valid: {error}\n  hint: fix the artifact's JSON (`attractor artifacts show \
         aso_config`), or activate another version"
    )]
    AsoConfig { version: i64, error: String },
}

/// Runs one agent task once and reports how it went.
pub async fn run(r: AgentRun<'_>) -> RunOutcome {
    let started = Instant::now();
    let report = match Kit::build(&r).await {
        Ok(kit) => {
            let report = drive_run(&r, &kit).await;
            if let Some(sup) = &kit.supervision
                && !*r.cancel.borrow()
            {
                supervise::escalate(&r, sup).await;
            }
            report
        }
        Err(e) => Err(e),
    };
    let mut outcome = match report {
        Ok(report) => outcome_of(&r, report).await,
        Err(e) => RunOutcome::failed(e.to_string()),
    };
    outcome.duration = started.elapsed();
    outcome
}

/// Continues the run-level trajectory an earlier run of this task left
/// unfinished, or starts one: SETUP, then DECIDE (a split before the first
/// attempt, parallel samples, or one trajectory).
async fn drive_run<'r>(r: &'r AgentRun<'r>, kit: &'r Kit) -> Result<Report, AgentError> {
    let task = &r.task.name;
    if let Some(row) = r.store.resumable_trajectory(r.epoch_id, task).await? {
        if row.record.role == Role::Parallel.as_str() {
            if let Some(report) = parallel::resume(r, kit, &row).await? {
                return Ok(report);
            }
        } else if let Some(driver) = Driver::reopen(r, kit, Placement::root(r, &row.record.id), &row).await? {
            r.store.adopt_trajectory(&row.record.id, r.run_id).await?;
            tracing::info!(task = %task, trajectory = %row.record.id, observations = driver.state.trajectory.observations.len(), "resuming a trajectory");
            return Ok(Box::pin(driver.drive()).await);
        }
    }

    // SETUP.
    let mut setup = Setup::plan(r, kit);
    let dest = workspace_dir(r.run_dir);
    let ws = match &r.spec.workspace {
        Some(folder) => Workspace::create(&r.suite_dir.join(folder), &dest, r.config.workspace.clone()).await?,
        None => Workspace::init(&dest, r.config.workspace.clone()).await?,
    };
    let id = format!("run-{}", r.run_id);

    // DECIDE: a split before the first attempt, then sequential or parallel.
    let split = split::propose_at_setup(r, kit, &id, &mut setup, &ws).await;
    let mut samples = crate::engine::parallel::sample_count(
        r.task.parallel_samples,
        &setup.plan.basin,
        r.task.priority,
        &kit.engine.config.parallel,
    );
    if let Some(sup) = &kit.supervision {
        // The coordinator runs its trajectories side by side, as for numeric tasks.
        samples = samples.max(supervise::trajectories(r, sup));
        setup.json["supervision"] = json!("aso");
    }
    // What runs, next to what the seed's basin rule would have chosen.
    setup.json["basin_mode"] = setup.json["mode"].take();
    setup.json["mode"] = json!(match samples {
        1 => crate::engine::ConvergenceMode::Sequential,
        k => crate::engine::ConvergenceMode::Parallel { initial_samples: k },
    });
    setup.json["samples"] = json!(samples);
    if split.is_none() && samples > 1 {
        return parallel::run(r, kit, &id, setup, ws, samples).await;
    }
    let mut driver = Driver::create(
        r,
        kit,
        Start {
            place: Placement::root(r, &id),
            task: r.task.clone(),
            overseers: r.spec.overseers.clone(),
            ws,
            budget: setup.budget.clone(),
            policy: setup.plan.policy.clone(),
            hints: r.task.hints.clone(),
            setup: setup.json.clone(),
            seed: r.seed,
        },
    )
    .await?;
    if let Some(split) = split {
        driver.begin_split(split, true).await?;
    }
    // Boxed, like every trajectory's drive: the loop's future is large, and
    // inline it would sit in this function's frames too.
    Ok(Box::pin(driver.drive()).await)
}

/// What SETUP decided for a task: the plan, the budget after the task's
/// own `budget:`, and the record of both.
struct Setup {
    plan: SetupPlan,
    budget: ConvergenceBudget,
    json: Value,
}

impl Setup {
    fn plan(r: &AgentRun<'_>, kit: &Kit) -> Setup {
        let t = r.task;
        let inputs = SetupInputs {
            complexity: r.config.complexity,
            basin: BasinInputs {
                description: t.task.clone(),
                acceptance_tests: r.spec.overseers.iter().filter(|o| o.kind == OverseerKind::Test).count(),
                invariants: t.constraints.len(),
                anti_examples: t.anti_patterns.len(),
                // What the category's memories say, PREPARE's recall done first.
                historical_convergence_rate: kit.recall.historical_convergence_rate,
                ..BasinInputs::default()
            },
            priority: t.priority,
            parallel_samples: Some(t.parallel_samples),
            history: kit.recall.history.clone(),
        };
        let plan = kit.engine.setup(&inputs);
        let mut budget = plan.budget.clone();
        // What the task file says about its budget wins over SETUP's sizing.
        if let Some(n) = t.budget.max_loops {
            budget.max_iterations = n;
        }
        if let Some(n) = t.budget.max_total_tokens {
            budget.max_tokens = n;
        }
        if let Some(secs) = t.budget.max_wall_time.filter(|s| s.is_finite() && *s > 0.0) {
            budget.max_wall_time_ms = (secs * 1000.0) as u64;
        }
        let json = json!({
            "complexity": r.config.complexity,
            "category": kit.category,
            "basin": plan.basin,
            "estimate": plan.estimate,
            "mode": plan.mode,
            "budget": budget,
            "policy": plan.policy,
            "memory": kit.recall.to_json(),
            "sandbox": r.config.sandbox.describe(),
        });
        Setup { plan, budget, json }
    }
}

/// The parts every trajectory of one run shares.
struct Kit {
    engine: Engine,
    executor: Arc<dyn Executor>,
    verifier: Option<Arc<IntentVerifier>>,
    texts: PromptTexts,
    category: String,
    /// The model a split is asked of, when splitting is possible at all.
    planner: Option<LlmClient>,
    /// What the category's memories say (PREPARE's recall): it primes every
    /// new trajectory of the run.
    recall: Recall,
    /// The ASO coordinator's supervision (`supervision: aso`).
    supervision: Option<crate::aso::agent::AgentSupervision>,
}

impl Kit {
    /// Builds the executor, checks the overseers, builds the verifier and
    /// recalls the category's memories.
    async fn build(r: &AgentRun<'_>) -> Result<Kit, AgentError> {
        let task = &r.task.name;
        let texts = PromptTexts::from_artifacts(|name| {
            r.artifacts.iter().find(|a| a.name == name).map(|a| (a.content.as_str(), a.version))
        })?;
        let executor: Arc<dyn Executor> = match &r.spec.executor {
            Some(spec) if spec.kind == ExecutorKind::Command => {
                let config =
                    CommandExecutorConfig::from_spec(spec).ok_or(AgentError::NoCommand { task: task.clone() })?;
                Arc::new(CommandExecutor::new(config).sandboxed(executor_sandbox(r, spec.network)))
            }
            spec => {
                let client = r.llm.clone().ok_or(AgentError::NoModel { task: task.clone() })?;
                let mut config = r.config.executor.clone();
                if let Some(model) = &r.task.model {
                    config.model = Some(model.clone());
                }
                if let Some(secs) = spec.as_ref().and_then(|s| s.timeout) {
                    config.timeout_secs = Some(secs);
                }
                Arc::new(LlmExecutor::new(client, config))
            }
        };
        // Checked once here so a bad pattern fails the run before anything starts.
        OverseerRunner::new(r.spec.overseers.clone(), r.config.overseers.clone())
            .map_err(|source| AgentError::Overseer { task: task.clone(), source })?;
        let verifier = match &r.llm {
            Some(client) if r.config.verifier.enabled => {
                let executor_model = r.task.model.clone().unwrap_or_else(|| client.config().model.clone());
                let (model, warning) = verify::verifier_model(&r.config.verifier, &executor_model);
                if let Some(w) = warning {
                    tracing::warn!(task = %task, "{w}");
                }
                Some(Arc::new(IntentVerifier::new(
                    client.clone(),
                    model,
                    texts.verification_rubric.clone(),
                    r.config.verifier.clone(),
                )))
            }
            _ => None,
        };
        let category =
            r.task.workflow.clone().filter(|w| !w.trim().is_empty()).unwrap_or_else(|| DEFAULT_CATEGORY.to_string());
        let mut engine_config = r.config.engine.clone();
        // Splitting needs a model to propose the split.
        let planner = r.llm.clone();
        if (planner.is_none() || !engine_config.decomposition.reactive)
            && !engine_config.disabled_strategies.contains(&StrategyKind::Decompose)
        {
            engine_config.disabled_strategies.push(StrategyKind::Decompose);
        }
        let recall = remember::recall(r, &category).await;
        let supervision = supervise::build(r).await?;
        Ok(Kit {
            engine: Engine::new(engine_config),
            executor,
            verifier,
            texts,
            category,
            planner,
            recall,
            supervision,
        })
    }
}

/// The run's outcome from its run-level trajectory's report; writes the
/// result file.
async fn outcome_of(r: &AgentRun<'_>, report: Report) -> RunOutcome {
    if report.cancelled {
        // The stored state is the last consistent point; the next run continues from it.
        return RunOutcome { cancelled: true, ..RunOutcome::failed("cancelled (interrupted by the user)") };
    }
    let result_text = serde_json::to_string_pretty(&report.summary).unwrap_or_default();
    if let Err(e) = tokio::fs::write(r.run_dir.join(RESULT_FILE), &result_text).await {
        tracing::warn!(error = %e, "could not write {RESULT_FILE}");
    }
    RunOutcome {
        signals: LossSignals {
            eval_score: Some(report.level),
            critique_score: report.critique_score,
            gate_rejection_count: Some(f64::from(report.gate_rejections)),
            budget_remaining_pct: Some(100.0 * report.budget_remaining),
            status: Some(report.run_status),
        },
        metrics: Some(report.summary),
        result_json: Some(result_text),
        error: report.error,
        stdout: report.table,
        ..RunOutcome::default()
    }
}

/// One deterministic generator per step, derived from the trajectory's seed:
/// a resumed trajectory draws exactly what an uninterrupted one would have.
fn rng_at(seed: u64, step: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(crate::domain::epoch_seed(seed, i64::try_from(step).unwrap_or(i64::MAX)))
}

/// A seed of its own for the `salt`-th trajectory under one with `seed`.
fn derived_seed(seed: u64, salt: u64) -> u64 {
    crate::domain::epoch_seed(seed ^ 0xA5A5_5A5A_0F0F_F0F0, i64::try_from(salt).unwrap_or(i64::MAX))
}

/// Steps of the generators used outside `decide` (answers to questions).
const ANSWER_STEP: u64 = 1 << 40;
/// Steps of the generators used when a split falls through.
const SPLIT_STEP: u64 = 1 << 41;

/// The bandit a new trajectory starts from: its category's stored state, or
/// the uniform priors (a stored state that does not parse is ignored).
async fn primed_bandit(store: &Store, category: &str) -> Result<StrategyBandit, AgentError> {
    Ok(match store.bandit_state(category).await? {
        Some(row) => StrategyBandit::from_json(&row.state_json).unwrap_or_else(|e| {
            tracing::warn!(category = %category, "ignoring the stored bandit state: {e}");
            StrategyBandit::default()
        }),
        None => StrategyBandit::default(),
    })
}

/// The task and overseers a stored trajectory works with: a subtask's name,
/// specification and checks are in its setup record; the others have the run's.
fn task_of(r: &AgentRun<'_>, setup: &Value) -> (Task, Vec<Overseer>) {
    let mut task = r.task.clone();
    if let Some(name) = setup["task_name"].as_str() {
        task.name = name.to_string();
    }
    if let Some(text) = setup["specification"].as_str() {
        task.task = text.to_string();
    }
    let overseers = match setup["overseers"].as_array() {
        Some(names) => r
            .spec
            .overseers
            .iter()
            .filter(|o| names.iter().any(|n| n.as_str() == Some(o.name.as_str())))
            .cloned()
            .collect(),
        None => r.spec.overseers.clone(),
    };
    (task, overseers)
}

/// A record of an iteration as JSON text (plain data: serializing it cannot fail).
fn to_json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Where a run's trajectory workspace goes.
/// Closes a stored trajectory that cannot be resumed (its state or its
/// workspace is gone) as failed, saying why, so the task starts afresh.
pub(super) async fn close_unresumable(store: &Store, row: &TrajectoryRow, reason: &str) -> Result<(), StoreError> {
    let result = json!({"status": "failed", "error": format!("could not be resumed: {reason}")});
    store
        .finish_trajectory(
            &row.record.id,
            &TrajectoryEnd {
                status: "failed",
                state_json: &row.record.state_json,
                iterations: row.iterations,
                tokens_used: row.tokens_used,
                final_level: None,
                best_sequence: None,
                result_json: Some(&result.to_string()),
            },
        )
        .await
}

/// A command executor's sandbox: its workspace is all it is shown. The
/// suite's folder (held-out checks keep their files there) and the suite's
/// runs (other trajectories' workspaces, the baselines) are hidden from it.
fn executor_sandbox(r: &AgentRun<'_>, network: bool) -> Option<crate::process::sandbox::Sandbox> {
    let mut sandbox = r.config.sandbox.for_command(network)?;
    let runs = r.run_dir.parent().and_then(Path::parent);
    for dir in std::iter::once(r.suite_dir).chain(runs) {
        sandbox.hidden.push(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()));
    }
    Some(sandbox)
}

pub fn workspace_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("workspace")
}

/// Where the workspace of a trajectory under the run's own goes.
fn nested_workspace_dir(run_dir: &Path, id: &str) -> PathBuf {
    run_dir.join("trajectories").join(id)
}
