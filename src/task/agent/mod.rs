//! The `agent` task kind: a natural-language task carried out in a workspace
//! by an executor (a model, or any coding agent), measured by overseers, and
//! steered by the convergence engine (seed 002) with the goal gradient
//! (seed 003).
//!
//! In the argmin split this module is the *Executor*: it owns the loop, the
//! budgets and the termination. The engine's [`Engine::decide`] is the
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

mod config;
mod decompose;
pub mod forbid;
pub(crate) mod intervene;
mod leftovers;
mod parallel;
mod points;
pub mod protect;
mod remember;
mod split;
mod state;
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
pub use intervene::{
    AMBIGUITY_DETECTED, ATTRACTOR_TRANSITION, Answer, BUDGET_EXTENSION, HUMAN_ESCALATION, PARTIAL_RESULT,
    STRATEGY_ESCALATION,
};
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
    NewObservation, NewTrajectory, Store, StoreError, TrajectoryEnd, TrajectoryProgress, TrajectoryRow,
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
        if row.role == Role::Parallel.as_str() {
            if let Some(report) = parallel::resume(r, kit, &row).await? {
                return Ok(report);
            }
        } else if let Some(driver) = Driver::reopen(r, kit, Placement::root(r, &row.id), &row).await? {
            r.store.adopt_trajectory(&row.id, r.run_id).await?;
            tracing::info!(task = %task, trajectory = %row.id, observations = driver.state.trajectory.observations.len(), "resuming a trajectory");
            return Ok(driver.drive().await);
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
    Ok(driver.drive().await)
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
                Arc::new(CommandExecutor::new(config).sandboxed(r.config.sandbox.for_command(spec.network)))
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

/// How the loop stopped.
enum End {
    Finished(LoopControl),
    /// Stopped by the user (or a crash): resumable.
    Cancelled,
    /// Stopped because a sibling sample converged first.
    Superseded {
        by: String,
    },
    /// The trajectory was split; its subtasks and integration decided.
    Decided(Box<split::Decided>),
}

/// How a trajectory ended, as its end is recorded.
enum Ending {
    Control(LoopControl),
    Superseded { by: String },
    Decided(Box<split::Decided>),
}

/// One deterministic generator per step, derived from the trajectory's seed:
/// a resumed trajectory draws exactly what an uninterrupted one would have.
fn rng_at(seed: u64, step: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(crate::outer::epoch_seed(seed, i64::try_from(step).unwrap_or(i64::MAX)))
}

/// A seed of its own for the `salt`-th trajectory under one with `seed`.
fn derived_seed(seed: u64, salt: u64) -> u64 {
    crate::outer::epoch_seed(seed ^ 0xA5A5_5A5A_0F0F_F0F0, i64::try_from(salt).unwrap_or(i64::MAX))
}

/// Steps of the generators used outside `decide` (answers to questions).
const ANSWER_STEP: u64 = 1 << 40;
/// Steps of the generators used when a split falls through.
const SPLIT_STEP: u64 = 1 << 41;

/// What a new trajectory starts from.
struct Start {
    place: Placement,
    /// The task as this trajectory sees it (a subtask's specification).
    task: Task,
    overseers: Vec<Overseer>,
    ws: Workspace,
    budget: ConvergenceBudget,
    policy: ConvergencePolicy,
    hints: Vec<String>,
    setup: Value,
    seed: u64,
}

struct Driver<'r> {
    r: &'r AgentRun<'r>,
    kit: &'r Kit,
    place: Placement,
    /// The task as this trajectory sees it.
    task: Task,
    /// Its overseers (a subtask's are some of the task's).
    overseer_specs: Vec<Overseer>,
    overseers: OverseerRunner,
    /// The held-out checks (`hidden: true`): run once the visible ones
    /// would let the state converge; their output never reaches a prompt.
    held_out: Option<OverseerRunner>,
    /// The files the executor may not change (`protect`).
    protection: protect::Protection,
    /// The anti-patterns with a `forbid:` check.
    anti_patterns: forbid::AntiPatterns,
    ws: Workspace,
    state: AgentState,
    resumed: bool,
    setup: Value,
    /// Why the next fresh start happens (for its event).
    fresh_start_reason: Option<String>,
    /// The latest verifier failure, kept with the iteration.
    verification_error: Option<String>,
    /// Tokens the last failed verification spent on unusable replies.
    unverified_tokens: u64,
}

/// The visible overseers' runner and, when some are `hidden`, the held-out
/// checks' — both in the sandbox.
fn runners(r: &AgentRun<'_>, specs: &[Overseer]) -> Result<(OverseerRunner, Option<OverseerRunner>), AgentError> {
    // The suite's folder, where held-out checks keep what the executor must
    // not see (the workspace is all it is shown).
    let suite_dir = std::fs::canonicalize(r.suite_dir).unwrap_or_else(|_| r.suite_dir.to_path_buf());
    let runner = |specs: Vec<Overseer>| {
        OverseerRunner::new(specs, r.config.overseers.clone())
            .map(|o| {
                o.sandboxed(&r.config.sandbox)
                    .reading(suite_dir.clone())
                    .env("ATTRACTOR_SUITE_DIR", suite_dir.display().to_string())
            })
            .map_err(|source| AgentError::Overseer { task: r.task.name.clone(), source })
    };
    let (hidden, visible): (Vec<Overseer>, Vec<Overseer>) = specs.iter().cloned().partition(|o| o.hidden);
    let held_out = if hidden.is_empty() { None } else { Some(runner(hidden)?) };
    Ok((runner(visible)?, held_out))
}

impl<'r> Driver<'r> {
    /// The held-out checks' verdict on the state, when the visible checks
    /// would let it converge (below that, nothing depends on them yet).
    async fn held_out(
        &mut self,
        visible: &crate::overseer::OverseerSignals,
        policy: MeasurePolicy,
        execution: &mut Execution,
    ) -> Result<Option<crate::overseer::OverseerSignals>, AgentError> {
        let Some(runner) = &self.held_out else { return Ok(None) };
        let level = crate::engine::metrics::convergence_level(visible, &self.kit.engine.config.level);
        if level < self.state.trajectory.policy.acceptance_threshold {
            return Ok(None);
        }
        let mut hidden = runner.measure(self.ws.root(), policy, Some(self.place.cancel.clone())).await;
        self.protection.check_measurement(&mut self.ws, &mut hidden.signals, execution).await?;
        // A held-out check that failed — or could not run — disagrees, with
        // or without results to count: no convergence on its silence.
        let failed: Vec<String> = hidden
            .signals
            .verdicts
            .iter()
            .filter(|v| !v.passed && !v.skipped)
            .map(|v| format!("held-out:{}", v.overseer))
            .collect();
        for name in failed {
            hidden.signals.custom_checks.push(crate::overseer::signals::CustomCheckResult {
                name,
                passed: false,
                detail: String::new(),
                required: true,
            });
        }
        Ok(Some(hidden.signals))
    }

    /// Starts a new trajectory in `s.ws`: the specification (with the
    /// hints), the bandit primed from its category, the first strategy, and
    /// its row.
    async fn create(r: &'r AgentRun<'r>, kit: &'r Kit, s: Start) -> Result<Driver<'r>, AgentError> {
        let (overseers, held_out) = runners(r, &s.overseers)?;
        let t = &s.task;
        let spec = SpecificationEvolution::from_submission(&t.task, &t.constraints, &t.anti_patterns);
        let mut trajectory = Trajectory::new(&s.place.id, &r.task.name, spec, s.budget.clone(), s.policy);
        for hint in &s.hints {
            trajectory.add_hint(hint.clone());
        }
        // Samples do not split (their group would lose its shared budget),
        // nor does a trajectory as deep as splits may nest.
        if s.place.role == Role::Sample || s.place.depth >= kit.engine.config.decomposition.max_depth {
            trajectory.unavailable.insert(StrategyKind::Decompose);
        }
        let initial = s.ws.head().unwrap_or_default().to_string();
        let mut bandit = primed_bandit(&r.store, &kit.category).await?;
        kit.recall.prime(&mut bandit);
        let next = kit.engine.start(&mut trajectory, &bandit, &mut rng_at(s.seed, 0))?;
        let state = AgentState {
            trajectory,
            bandit_prior: bandit.clone(),
            bandit,
            next: Some(next),
            attempts: Vec::new(),
            initial_commit: initial.clone(),
            head_commit: initial,
            gate_rejections: 0,
            unusable_replies: 0,
            waiting: None,
            ended: None,
            seed: s.seed,
            coordination: None,
            notes: Vec::new(),
            supervision: Default::default(),
            focus: None,
            points: Vec::new(),
            told: Default::default(),
        };
        r.store
            .insert_trajectory(&NewTrajectory {
                id: s.place.id.clone(),
                run_id: r.run_id,
                suite_id: r.suite_id,
                epoch_id: r.epoch_id,
                task_name: r.task.name.clone(),
                category: kit.category.clone(),
                workspace_dir: s.ws.root().to_string_lossy().into_owned(),
                setup_json: s.setup.to_string(),
                state_json: state.to_json(),
                parent_id: s.place.parent_id.clone(),
                role: s.place.role.as_str().to_string(),
                ordinal: i64::from(s.place.ordinal),
            })
            .await?;
        remember::announce(r, &s.place.id, &kit.recall);
        Ok(Driver {
            r,
            kit,
            place: s.place,
            task: s.task,
            overseer_specs: s.overseers,
            overseers,
            held_out,
            protection: protect::Protection::of(r.spec, s.ws.root()),
            anti_patterns: forbid::AntiPatterns::of(&r.spec.forbidden),
            ws: s.ws,
            state,
            resumed: false,
            setup: s.setup,
            fresh_start_reason: None,
            verification_error: None,
            unverified_tokens: 0,
        })
    }

    /// The stored state and workspace of an unfinished trajectory, put back
    /// to its last recorded point. One that cannot be reopened (its state or
    /// its folder is gone or damaged) is closed as failed, with the reason,
    /// and `None` says to start afresh instead of failing on it every time.
    async fn reopen(
        r: &'r AgentRun<'r>,
        kit: &'r Kit,
        place: Placement,
        row: &TrajectoryRow,
    ) -> Result<Option<Driver<'r>>, AgentError> {
        let attempt = async {
            let state: AgentState =
                serde_json::from_str(&row.state_json).map_err(|e| format!("its stored state is invalid: {e}"))?;
            let mut ws = Workspace::open(Path::new(&row.workspace_dir), r.config.workspace.clone())
                .await
                .map_err(|e| format!("its workspace {}: {e}", row.workspace_dir))?;
            // Whatever an interrupted iteration left half-done is discarded.
            ws.reset_to(&state.head_commit)
                .await
                .map_err(|e| format!("its workspace could not be put back to {}: {e}", state.head_commit))?;
            Ok::<_, String>((state, ws))
        };
        let (state, ws) = match attempt.await {
            Ok(found) => found,
            Err(reason) => {
                tracing::warn!(trajectory = %row.id, %reason, "cannot resume the trajectory; starting afresh");
                close_unresumable(&r.store, row, &reason).await?;
                return Ok(None);
            }
        };
        let setup: Value = serde_json::from_str(&row.setup_json).unwrap_or_default();
        let (task, overseer_specs) = task_of(r, &setup);
        let (overseers, held_out) = runners(r, &overseer_specs)?;
        Ok(Some(Driver {
            r,
            kit,
            place,
            task,
            overseer_specs,
            overseers,
            held_out,
            protection: protect::Protection::of(r.spec, ws.root()),
            anti_patterns: forbid::AntiPatterns::of(&r.spec.forbidden),
            ws,
            state,
            resumed: true,
            setup,
            fresh_start_reason: None,
            verification_error: None,
            unverified_tokens: 0,
        }))
    }

    fn cancelled(&self) -> bool {
        *self.place.cancel.borrow()
    }

    /// Why this trajectory was told to stop: a sibling's win, or the user.
    fn stopped(&self) -> End {
        match self.place.group.as_ref().and_then(|g| g.superseded(&self.place.id)) {
            Some(by) => End::Superseded { by },
            None => End::Cancelled,
        }
    }

    async fn drive(mut self) -> Report {
        let b = &self.state.trajectory.budget;
        self.r.bus.publish(Event::TrajectoryStarted {
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: self.place.id.clone(),
            task: self.r.task.name.clone(),
            resumed: self.resumed,
            max_tokens: b.max_tokens,
            max_iterations: b.max_iterations,
            max_wall_time_ms: b.max_wall_time_ms,
            basin: self.setup["basin"]["classification"].as_str().unwrap_or("unknown").to_string(),
        });
        match self.iterate().await {
            Ok(End::Finished(control)) => {
                if let (LoopControl::Converged { .. }, Some(group)) = (&control, &self.place.group) {
                    // The siblings are stopped now, before this one's bookkeeping.
                    group.converged(&self.place.id);
                }
                self.finish(Ending::Control(control), None).await
            }
            Ok(End::Superseded { by }) => self.finish(Ending::Superseded { by }, None).await,
            Ok(End::Decided(decided)) => self.finish(Ending::Decided(decided), None).await,
            Ok(End::Cancelled) => Report::cancelled(&self.place.id, self.ws.root()),
            Err(e) => {
                tracing::warn!(task = %self.r.task.name, trajectory = %self.place.id, error = %e, "the agent run failed");
                let best = self.best();
                let control = LoopControl::Exhausted {
                    best,
                    partial: PartialResult {
                        summary: format!("The run stopped on an error: {e}"),
                        accomplished: Vec::new(),
                        remaining: Vec::new(),
                        loss: Default::default(),
                        grad_l: 0.0,
                        replans: 0,
                        next_moves: Vec::new(),
                    },
                };
                self.finish(Ending::Control(control), Some(e.to_string())).await
            }
        }
    }
    fn best(&self) -> Option<BestObservation> {
        let weights = &self.kit.engine.config.level;
        self.state.trajectory.best_observation(weights).map(|o| BestObservation {
            sequence: o.sequence,
            artifact: o.artifact.clone(),
            level: o.level(weights),
        })
    }

    /// The loop: settle an open question, or run the chosen strategy.
    async fn iterate(&mut self) -> Result<End, AgentError> {
        loop {
            if let Some(waiting) = self.state.waiting.clone() {
                match self.settle(waiting).await? {
                    Some(End::Finished(control)) => {
                        // Recorded before the end's bookkeeping, which a stop could interrupt.
                        self.state.ended = Some(control.clone());
                        self.save("running").await?;
                        return Ok(End::Finished(control));
                    }
                    Some(other) => return Ok(other),
                    None => continue,
                }
            }
            if let Some(control) = self.state.ended.clone() {
                return Ok(End::Finished(control));
            }
            if self.cancelled() {
                return Ok(self.stopped());
            }
            if !self.state.points.is_empty() {
                // Points the latest iteration reached, one at a time (a pause holds the rest back).
                self.raise_next_point().await?;
                continue;
            }
            if self.state.coordination.is_some() {
                // Split: the subtasks and the integration decide.
                return self.coordinate().await;
            }
            let Some(choice) = self.state.next.clone() else {
                return Err(AgentError::Resume {
                    id: self.place.id.clone(),
                    reason: "its state has neither a next strategy nor an open question".to_string(),
                });
            };
            if let Some(end) = self.step(choice).await? {
                return Ok(end);
            }
        }
    }

    /// Tells the bus what is about to run.
    fn announce(&mut self, choice: &StrategyChoice, sequence: u32) {
        let (suite_id, run_id, id) = (self.r.suite_id, self.r.run_id, self.place.id.clone());
        let t = &self.state.trajectory;
        self.r.bus.publish(Event::StrategySelected {
            suite_id,
            run_id,
            trajectory_id: id.clone(),
            sequence,
            strategy: choice.kind.as_str().to_string(),
            forced: choice.forced,
            attractor: t.attractor_state.kind().as_str().to_string(),
            directive: choice.directive.map(|d| d.as_str().to_string()),
            budget_remaining: t.budget.remaining_fraction().clamp(0.0, 1.0),
        });
        match choice.kind {
            StrategyKind::FreshStart => {
                let reason = self.fresh_start_reason.take().unwrap_or_else(|| {
                    if choice.forced {
                        "loop control forced it".to_string()
                    } else {
                        format!("chosen under a {} attractor", t.attractor_state.kind())
                    }
                });
                self.r.bus.publish(Event::FreshStart {
                    suite_id,
                    run_id,
                    trajectory_id: id,
                    sequence,
                    forced: choice.forced,
                    reason,
                    best_sequence: choice.carry_forward.as_ref().map(|c| c.best_sequence),
                });
            }
            StrategyKind::RevertAndBranch => {
                if let Some(target) = &choice.revert_to {
                    self.r.bus.publish(Event::Reverted {
                        suite_id,
                        run_id,
                        trajectory_id: id,
                        sequence,
                        to_sequence: target.sequence,
                        commit: target.artifact.commit.clone(),
                    });
                }
            }
            _ => {}
        }
    }

    /// One iteration: execute, measure, verify, decide, record. A split
    /// (`decompose`) is no iteration: the model is asked for subtasks instead.
    async fn step(&mut self, choice: StrategyChoice) -> Result<Option<End>, AgentError> {
        if choice.kind == StrategyKind::Decompose {
            return self.split(choice).await;
        }
        // A sample claims its iteration from the group's budget first; when
        // the siblings took the last ones, it ends as out of budget.
        let reservation = match &self.place.group {
            Some(group) => match parallel::Group::reserve(group) {
                Some(reservation) => Some(reservation),
                None => {
                    let mut control = None;
                    group.with_ledger(|ledger| ledger.lend(&mut self.state.trajectory));
                    if !self.state.trajectory.phase.is_terminal() {
                        control = Some(self.kit.engine.conclude_out_of_budget(&mut self.state.trajectory)?);
                    }
                    let control = control.unwrap_or_else(|| LoopControl::Exhausted {
                        best: self.best(),
                        partial: PartialResult {
                            summary: "the shared budget ran out".to_string(),
                            accomplished: Vec::new(),
                            remaining: Vec::new(),
                            loss: Default::default(),
                            grad_l: 0.0,
                            replans: 0,
                            next_moves: Vec::new(),
                        },
                    });
                    self.state.next = None;
                    self.state.ended = Some(control.clone());
                    self.save("running").await?;
                    return Ok(Some(End::Finished(control)));
                }
            },
            None => None,
        };
        let sequence = self.state.trajectory.observations.len() as u32;
        self.announce(&choice, sequence);
        let started = Instant::now();

        let revert_carry = (choice.kind == StrategyKind::RevertAndBranch)
            .then(|| self.kit.engine.carry_forward(&self.state.trajectory))
            .flatten();
        let request = ExecutionRequest {
            sequence,
            strategy: choice.kind,
            inputs: PromptInputs {
                lessons: Recall::lessons_of_setup(&self.setup),
                ..state::prompt_inputs(&self.task, &self.state, &choice, revert_carry.as_ref())
            },
            texts: self.kit.texts.clone(),
            revert_to: choice.revert_to.as_ref().map(state::revert_target),
            cancel: Some(self.place.cancel.clone()),
        };
        // A supervisor's focus is for this attempt only.
        self.state.focus = None;
        let before = self.ws.head().map(str::to_string);
        let mut execution = match self.kit.executor.execute(&request, &mut self.ws).await {
            Ok(e) => {
                self.state.unusable_replies = 0;
                e
            }
            Err(ExecutorError::Cancelled) => return Ok(Some(self.stopped())),
            Err(ExecutorError::Llm(e)) if e.is_budget_spent() => {
                // The run's model budget cannot pay for another attempt: the
                // trajectory ends here with its best result, like one out of
                // its own budget, and says why.
                let control = self.kit.engine.stop(&mut self.state.trajectory, &e.short_reason())?;
                self.state.next = None;
                self.state.ended = Some(control.clone());
                self.save("running").await?;
                return Ok(Some(End::Finished(control)));
            }
            Err(ExecutorError::Llm(e @ (LlmError::InvalidJson { .. } | LlmError::CutOff { .. })))
                if self.state.unusable_replies < self.r.config.max_unusable_replies =>
            {
                // A reply that is not the structured answer asked for is
                // refused as a whole: the state stays as it was, and the
                // refusal counts like any other.
                self.state.unusable_replies += 1;
                let message = format!("observation {sequence}: {} (the reply could not be used)", choice.kind);
                let artifact = self.ws.commit(&message).await?;
                Execution {
                    artifact,
                    // An unusable reply was paid for all the same.
                    tokens: e.spent().1.total_tokens,
                    wall_time: started.elapsed(),
                    summary: format!("(the reply could not be used: {})", e.short_reason()),
                    applied: Vec::new(),
                    rejected: Vec::new(),
                    tools_used: Vec::new(),
                    status: ExecutionStatus::Rejected { reason: e.to_string() },
                    subtasks: Vec::new(),
                    amendments: Vec::new(),
                    left_running: Vec::new(),
                }
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(before) = &before {
            let undone = self.protection.enforce(&mut self.ws, before, &mut execution).await?;
            if !undone.is_empty() {
                tracing::info!(trajectory = %self.place.id, files = ?undone, "undid changes to protected files");
            }
        }
        if self.cancelled() {
            return Ok(Some(self.stopped()));
        }

        let policy = MeasurePolicy { skip_expensive: self.state.trajectory.policy.skip_expensive_overseers };
        let mut measurement = self.overseers.measure(self.ws.root(), policy, Some(self.place.cancel.clone())).await;
        let tampered =
            self.protection.check_measurement(&mut self.ws, &mut measurement.signals, &mut execution).await?;
        if !tampered.is_empty() {
            tracing::warn!(trajectory = %self.place.id, files = ?tampered, "protected files changed while the checks ran");
        }
        // A check that cannot read the history is skipped with a warning, not
        // a failed iteration.
        match self.anti_patterns.check(&self.ws, &self.state.initial_commit, &execution.artifact.commit).await {
            Ok(failing) => measurement.signals.custom_checks.extend(failing),
            Err(e) => tracing::warn!(trajectory = %self.place.id, error = %e, "could not check the anti-patterns"),
        }
        let held_out = self.held_out(&measurement.signals, policy, &mut execution).await?;
        let scope = leftovers::Scope {
            bus: &self.r.bus,
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: &self.place.id,
            sequence,
        };
        leftovers::report(&scope, self.r.spec, &execution, &measurement);
        if self.cancelled() {
            return Ok(Some(self.stopped()));
        }
        let verified = match &self.kit.verifier {
            Some(_) if self.kit.engine.should_verify(&self.state.trajectory) => {
                self.verify(&measurement, &execution.artifact).await
            }
            _ => None,
        };

        let mut observation = Observation::new(choice.kind, execution.artifact.clone(), measurement.signals.clone());
        observation.verification = verified.as_ref().map(|v| v.result.clone());
        observation.tokens_used = execution.tokens + verified.as_ref().map_or(self.unverified_tokens, |v| v.tokens);
        observation.wall_time_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        observation.tools_used = execution.tools_used.clone();
        observation.held_out = held_out;

        self.state.gate_rejections += execution.rejection_count();
        self.state.attempts.push(AttemptRecord::of(sequence, &execution));
        if choice.kind == StrategyKind::ArchitectReview {
            for a in execution.amendments.iter().map(|a| a.trim()).filter(|a| !a.is_empty()) {
                self.state.trajectory.specification.amend(
                    AmendmentSource::ArchitectAmendment,
                    a,
                    "proposed by an architect review",
                    Some(sequence),
                );
            }
        }

        let mut rng = rng_at(self.state.seed, u64::from(sequence) + 1);
        let (engine, trajectory, bandit) = (&self.kit.engine, &mut self.state.trajectory, &mut self.state.bandit);
        let mut decision = match reservation {
            // A sample records against the group's budget, under its lock.
            Some(reservation) => reservation.record(trajectory, |t| engine.decide(t, bandit, observation, &mut rng))?,
            None => engine.decide(trajectory, bandit, observation, &mut rng)?,
        };
        self.state.head_commit = execution.artifact.commit.clone();
        self.state.next = decision.next.clone();
        let kit = self.kit;
        if let Some(sup) = &kit.supervision {
            if decision.loop_control.continues() {
                self.supervise(sup, &mut decision, started).await;
            } else {
                self.observe_engine_control(sup, &decision, started).await;
            }
        }
        if let Some(attempt) = self.state.attempts.last_mut() {
            attempt.attractor = Some(decision.attractor.kind());
        }

        let end = self.act_on(&decision).await?;
        if let Some(End::Finished(control)) = &end {
            self.state.ended = Some(control.clone());
        }
        if end.is_none() && self.state.waiting.is_none() {
            // Raised from the loop, after this iteration is recorded.
            let points =
                crate::engine::intervention::points_after(&decision, &self.state.trajectory, &mut self.state.told);
            self.state.points.extend(points);
        }
        self.record(&choice, &execution, &measurement, verified.as_ref(), &decision).await?;
        Ok(end)
    }

    /// Events and intervention points of a decision; the end, if it is one.
    async fn act_on(&mut self, d: &Decision) -> Result<Option<End>, AgentError> {
        let (suite_id, run_id, id) = (self.r.suite_id, self.r.run_id, self.place.id.clone());
        match &d.loop_control {
            LoopControl::Continue => Ok(None),
            LoopControl::ForceFreshStart { reason } => {
                self.fresh_start_reason = Some(format!("the executor's context degraded ({reason:?})"));
                Ok(None)
            }
            LoopControl::ExtensionGranted { extension } => {
                let evidence = self.convergence_evidence(d);
                self.r.bus.publish(Event::BudgetExtensionRequested {
                    suite_id,
                    run_id,
                    trajectory_id: id.clone(),
                    additional_tokens: extension.additional_tokens,
                    additional_iterations: extension.additional_iterations,
                    evidence: evidence.clone(),
                    intervention_id: None,
                });
                self.r.bus.publish(Event::BudgetExtensionGranted {
                    suite_id,
                    run_id,
                    trajectory_id: id,
                    additional_tokens: extension.additional_tokens,
                    additional_iterations: extension.additional_iterations,
                    by: "auto".to_string(),
                });
                self.tell_extension(extension, evidence).await?;
                Ok(None)
            }
            LoopControl::ExtensionRequested { extension } => {
                let evidence = self.convergence_evidence(d);
                let b = &self.state.trajectory.budget;
                let subject = format!(
                    "Task `{}` is converging and out of budget: extend it by {} iteration(s) and {} tokens?",
                    self.r.task.name, extension.additional_iterations, extension.additional_tokens
                );
                let context = json!({
                    "what": format!("The trajectory used {} of {} iterations and {} of {} tokens while still converging.",
                        b.iterations_used, b.max_iterations, b.tokens_used, b.max_tokens),
                    "why": format!("{} asks a person before spending more than planned.",
                        if self.kit.engine.config.interventions.budget_extension.is_some() {
                            "The engine configuration (`interventions.budget_extension: pause`)"
                        } else {
                            "The task's priority (thorough)"
                        }),
                    "evidence": {"convergence": evidence, "level": d.level, "attractor": d.attractor.kind(),
                                 "loss": d.gradient.loss, "trajectory_id": id},
                    "proposed_action": "extend_budget",
                    "extension": extension,
                    "proposal": "Approve to extend the budget and go on; reject to end with the best result so far; \
                                 or answer with a hint, which extends the budget and is followed from the next attempt.",
                });
                // The engine asks only when the point's mode is `pause`.
                let kind = InterventionKind::BudgetExtension;
                let intervention_id = self.intervene(kind, InterventionMode::Pause, subject, context).await?;
                self.r.bus.publish(Event::BudgetExtensionRequested {
                    suite_id,
                    run_id,
                    trajectory_id: id,
                    additional_tokens: extension.additional_tokens,
                    additional_iterations: extension.additional_iterations,
                    evidence,
                    intervention_id,
                });
                if let Some(intervention_id) = intervention_id {
                    self.state.waiting = Some(Waiting::BudgetExtension { intervention_id, extension: *extension });
                }
                Ok(None)
            }
            terminal => self.conclude_at_point(terminal.clone()).await,
        }
    }

    fn convergence_evidence(&self, d: &Decision) -> String {
        format!(
            "attractor {} (confidence {:.2}), convergence level {:.0}%",
            d.attractor.kind(),
            d.attractor.confidence,
            d.level * 100.0
        )
    }

    /// Waits for the answer to the open question and acts on it.
    async fn settle(&mut self, waiting: Waiting) -> Result<Option<End>, AgentError> {
        let id = waiting.intervention_id();
        let poll = Duration::from_millis(self.r.config.intervention_poll_ms);
        let timeout =
            self.r.config.intervention_timeout_secs.filter(|s| s.is_finite() && *s >= 0.0).map(crate::time::secs);
        tracing::info!(task = %self.r.task.name, intervention = id, "waiting for a person's answer");
        let answer = intervene::wait(&self.r.store, id, poll, timeout, self.place.cancel.clone()).await?;
        if answer == Answer::Cancelled {
            return Ok(Some(self.stopped()));
        }
        let step = ANSWER_STEP + self.state.trajectory.observations.len() as u64;
        self.state.waiting = None;
        self.settle_point(waiting, answer, step).await
    }

    /// Asks the intent verifier about the state just measured; a failure
    /// leaves the observation unverified (and is kept with the iteration).
    async fn verify(&mut self, m: &Measurement, head: &ArtifactReference) -> Option<verify::Verified> {
        let verifier = self.kit.verifier.as_ref()?;
        let diff = match self.ws.diff(&self.state.initial_commit, &head.commit).await {
            Ok(d) => d,
            Err(e) => format!("(the diff could not be read: {e})"),
        };
        let files = self.ws.list_files().await.map(|l| l.files).unwrap_or_default();
        let spec = self.state.trajectory.specification.effective.render();
        let evidence = verify::Evidence {
            task_name: &self.task.name,
            specification: &spec,
            signals: Some(&m.signals),
            diff: &diff,
            files: &files,
        };
        match verifier.verify(&evidence).await {
            Ok(v) => {
                self.verification_error = None;
                self.unverified_tokens = 0;
                Some(v)
            }
            Err(e) => {
                tracing::warn!(
                    "the intent verification of task {} failed ({}); going on unverified",
                    self.r.task.name,
                    e.short_reason()
                );
                self.verification_error = Some(e.to_string());
                self.unverified_tokens = e.spent().1.total_tokens;
                None
            }
        }
    }

    /// Stores the state (no new observation).
    async fn save(&self, status: &str) -> Result<(), AgentError> {
        let t = &self.state.trajectory;
        self.r
            .store
            .update_trajectory(
                &self.place.id,
                &TrajectoryProgress {
                    status,
                    state_json: &self.state.to_json(),
                    pending_intervention_id: self.state.waiting.as_ref().map(Waiting::intervention_id),
                    iterations: t.observations.len() as i64,
                    tokens_used: i64::try_from(self.tokens_spent()).unwrap_or(i64::MAX),
                },
            )
            .await?;
        Ok(())
    }

    /// Records the iteration and its state together, then tells the bus.
    async fn record(
        &mut self,
        choice: &StrategyChoice,
        e: &Execution,
        m: &Measurement,
        verified: Option<&verify::Verified>,
        d: &Decision,
    ) -> Result<(), AgentError> {
        let t = &self.state.trajectory;
        let Some(obs) = t.observations.last() else { return Ok(()) };
        let mut verdict_summary = state::outcome_line(&m.signals);
        match (verified, &self.verification_error) {
            (Some(v), _) => {
                let passed = v.result.verdicts.iter().filter(|c| c.passed).count();
                verdict_summary.push_str(&format!(
                    "; intent {} ({passed} of {} criteria, confidence {:.2})",
                    if v.result.satisfied { "satisfied" } else { "not satisfied" },
                    v.result.verdicts.len(),
                    v.result.confidence
                ));
            }
            (None, Some(err)) => verdict_summary.push_str(&format!("; intent verification failed: {err}")),
            (None, None) => {}
        }
        let row = NewObservation {
            sequence: i64::from(d.sequence),
            strategy: choice.kind.as_str().to_string(),
            forced: choice.forced,
            commit_id: e.artifact.commit.clone(),
            files_changed: i64::from(e.artifact.files_changed),
            lines_changed: i64::from(e.artifact.lines_changed),
            level: d.level,
            delta: d.metrics.map(|x| x.convergence_delta),
            attractor: d.attractor.kind().as_str().to_string(),
            attractor_confidence: d.attractor.confidence,
            loss_d: d.gradient.loss.d,
            loss_p: d.gradient.loss.p,
            loss_omega: d.gradient.loss.omega,
            loss: d.gradient.loss.l,
            grad_l: d.gradient.grad_l,
            directive: d.gradient.directive.as_str().to_string(),
            rationale: d.gradient.rationale.clone(),
            loop_control: d.loop_control.name().to_string(),
            next_strategy: d.next.as_ref().map(|n| n.kind.as_str().to_string()),
            tokens: i64::try_from(obs.tokens_used).unwrap_or(i64::MAX),
            wall_time_ms: i64::try_from(obs.wall_time_ms).unwrap_or(i64::MAX),
            applied_edits: e.applied.len() as i64,
            rejected_edits: i64::from(e.rejection_count()),
            summary: e.summary.clone(),
            verdict_summary,
            verification_json: verified.map(|v| to_json(&v.result)),
            signals_json: to_json(&m.signals),
            overseer_runs_json: to_json(&m.runs),
            execution_json: to_json(e),
            decision_json: to_json(d),
        };
        let status = if self.state.waiting.is_some() { "paused" } else { "running" };
        self.r
            .store
            .record_iteration(
                &self.place.id,
                &row,
                &TrajectoryProgress {
                    status,
                    state_json: &self.state.to_json(),
                    pending_intervention_id: self.state.waiting.as_ref().map(Waiting::intervention_id),
                    iterations: t.observations.len() as i64,
                    tokens_used: i64::try_from(self.tokens_spent()).unwrap_or(i64::MAX),
                },
            )
            .await?;
        let (suite_id, run_id, id) = (self.r.suite_id, self.r.run_id, self.place.id.clone());
        if let Some(tr) = d.transition {
            self.r.bus.publish(Event::AttractorTransition {
                suite_id,
                run_id,
                trajectory_id: id.clone(),
                sequence: d.sequence,
                from: tr.from.as_str().to_string(),
                to: tr.to.as_str().to_string(),
                confidence: d.attractor.confidence,
            });
        }
        self.r.bus.publish(Event::IterationCompleted {
            suite_id,
            run_id,
            trajectory_id: id,
            sequence: d.sequence,
            strategy: choice.kind.as_str().to_string(),
            level: d.level,
            delta: d.metrics.map(|x| x.convergence_delta),
            attractor: d.attractor.kind().as_str().to_string(),
            directive: d.gradient.directive.as_str().to_string(),
            loss: d.gradient.loss.l,
            tokens: obs.tokens_used,
            budget_remaining: t.budget.remaining_fraction().clamp(0.0, 1.0),
            loop_control: d.loop_control.name().to_string(),
            thrashing: d.thrashing.clone(),
        });
        Ok(())
    }

    /// Tokens this trajectory spent itself (a sample's budget shows its group's).
    fn tokens_spent(&self) -> u64 {
        let t = &self.state.trajectory;
        if self.place.group.is_some() {
            t.observations.iter().map(|o| o.tokens_used).fold(0, u64::saturating_add)
        } else {
            t.budget.tokens_used
        }
    }

    /// RESOLVE: the result in the workspace, the terminal event, the bandit's
    /// learning merged into its category, the trajectory's end recorded, its
    /// memory stored (unless a sibling's win stopped it: that teaches nothing
    /// about the task), and the report for whoever started it.
    async fn finish(mut self, ending: Ending, error: Option<String>) -> Report {
        let (suite_id, run_id, id) = (self.r.suite_id, self.r.run_id, self.place.id.clone());
        let iterations = self.state.trajectory.observations.len() as u32;
        let tokens = self.tokens_spent();
        let (status, run_status, result, partial): (String, RunStatus, Option<BestObservation>, Option<PartialResult>) =
            match &ending {
                _ if error.is_some() => ("failed".into(), RunStatus::Failed, self.best(), None),
                Ending::Control(LoopControl::Converged { result }) => {
                    ("converged".into(), RunStatus::Complete, Some(result.clone()), None)
                }
                Ending::Control(LoopControl::AcceptedPartial { result }) => {
                    ("accepted_partial".into(), RunStatus::Partial, Some(result.clone()), None)
                }
                Ending::Control(LoopControl::Exhausted { best, partial }) => {
                    ("exhausted".into(), RunStatus::Failed, best.clone(), Some(partial.clone()))
                }
                Ending::Control(LoopControl::Abandoned { best, partial }) => {
                    ("abandoned".into(), RunStatus::Failed, best.clone(), Some(partial.clone()))
                }
                Ending::Control(LoopControl::Trapped { best, partial }) => {
                    ("trapped".into(), RunStatus::Failed, best.clone(), Some(partial.clone()))
                }
                Ending::Control(_) => ("failed".into(), RunStatus::Failed, self.best(), None),
                Ending::Superseded { .. } => ("superseded".into(), RunStatus::Failed, self.best(), None),
                Ending::Decided(d) => (d.integration.status.clone(), d.integration.run_status, None, None),
            };
        let decided = match &ending {
            Ending::Decided(d) if error.is_none() => Some(d.as_ref()),
            _ => None,
        };
        let level = decided.map_or_else(|| result.as_ref().map_or(0.0, |r| r.level), |d| d.integration.level);

        // The workspace is left holding the result: the best state (which a
        // partial acceptance or an exhausted budget may have left behind), or
        // for a split trajectory what its integration trajectory made.
        let mut notes = std::mem::take(&mut self.state.notes);
        let mut adopted = None;
        if let Some(d) = decided {
            match self.ws.replace_with(&d.integration.workspace, "the integration trajectory's result").await {
                Ok(commit) => {
                    self.state.head_commit = commit.commit.clone();
                    adopted = Some(commit);
                }
                Err(e) => notes.push(format!("could not bring the integration's result into the workspace: {e}")),
            }
            self.state.trajectory.phase =
                if d.integration.converged { ConvergencePhase::Converged } else { ConvergencePhase::Exhausted };
        } else if let Some(r) = &result
            && self.ws.head() != Some(r.artifact.commit.as_str())
            && let Err(e) = self.ws.reset_to(&r.artifact.commit).await
        {
            notes.push(format!("could not put the result back into the workspace: {e}"));
        }

        // A superseded sample's open question no longer needs an answer.
        if let (Ending::Superseded { by }, Some(waiting)) = (&ending, self.state.waiting.take()) {
            let text = format!("no longer needed: sample `{by}` converged first");
            if let Err(e) = self.r.store.answer_intervention(waiting.intervention_id(), "reject", Some(&text)).await {
                notes.push(format!("could not close question #{}: {e}", waiting.intervention_id()));
            }
        }

        let tree = decided.map(|d| d.totals()).unwrap_or_default();
        if error.is_none() {
            let t = &self.state.trajectory;
            match &ending {
                Ending::Control(control @ (LoopControl::Converged { .. } | LoopControl::AcceptedPartial { .. })) => {
                    self.r.bus.publish(Event::TrajectoryConverged {
                        suite_id,
                        run_id,
                        trajectory_id: id.clone(),
                        iterations,
                        total_tokens: tokens,
                        level,
                        partial: matches!(control, LoopControl::AcceptedPartial { .. }),
                    })
                }
                Ending::Control(
                    control @ (LoopControl::Exhausted { best, .. } | LoopControl::Abandoned { best, .. }),
                ) => self.r.bus.publish(Event::TrajectoryExhausted {
                    suite_id,
                    run_id,
                    trajectory_id: id.clone(),
                    best_sequence: best.as_ref().map(|b| b.sequence),
                    budget_consumed: tokens,
                    abandoned: matches!(control, LoopControl::Abandoned { .. }),
                }),
                Ending::Control(LoopControl::Trapped { .. }) => self.r.bus.publish(Event::TrajectoryTrapped {
                    suite_id,
                    run_id,
                    trajectory_id: id.clone(),
                    cycle_period: match &t.attractor_state.classification {
                        AttractorType::LimitCycle { period, .. } => *period,
                        _ => 0,
                    },
                    escape_attempts: t.strategy_log.len() as u32,
                }),
                Ending::Control(_) => {}
                Ending::Superseded { by } => self.r.bus.publish(Event::TrajectorySuperseded {
                    suite_id,
                    run_id,
                    trajectory_id: id.clone(),
                    by: by.clone(),
                }),
                Ending::Decided(d) => {
                    if run_status != RunStatus::Failed {
                        self.r.bus.publish(Event::TrajectoryConverged {
                            suite_id,
                            run_id,
                            trajectory_id: id.clone(),
                            iterations: iterations + tree.iterations,
                            total_tokens: tokens.saturating_add(tree.tokens),
                            level,
                            partial: !d.integration.converged,
                        })
                    } else {
                        self.r.bus.publish(Event::TrajectoryExhausted {
                            suite_id,
                            run_id,
                            trajectory_id: id.clone(),
                            best_sequence: None,
                            budget_consumed: tokens.saturating_add(tree.tokens),
                            abandoned: false,
                        })
                    }
                }
            }
        }

        // What this trajectory learned joins its category's bandit.
        let (prior, learned) = (&self.state.bandit_prior, &self.state.bandit);
        let merged = self
            .r
            .store
            .merge_bandit_state(&self.kit.category, |stored| {
                let mut base = match stored {
                    Some(text) => StrategyBandit::from_json(text).map_err(|e| e.to_string())?,
                    None => StrategyBandit::default(),
                };
                base.merge_learning(prior, learned);
                Ok::<String, String>(base.to_json())
            })
            .await;
        match merged {
            Ok(Ok(())) => {}
            Ok(Err(e)) => notes.push(format!("the stored bandit state of `{}` is unusable: {e}", self.kit.category)),
            Err(e) => notes.push(format!("could not save the bandit state: {e}")),
        }

        let end_name = match &ending {
            Ending::Control(c) => c.name(),
            Ending::Superseded { .. } => "superseded",
            Ending::Decided(_) => "decomposed",
        };
        let mut summary =
            self.summary(end_name, &status, level, result.as_ref(), partial.as_ref(), error.as_deref(), &notes);
        if let Ending::Superseded { by } = &ending {
            summary["superseded_by"] = json!(by);
        }
        if let Some(d) = decided {
            summary["decomposition"] = d.summary();
            summary["result"] = json!({
                "trajectory_id": d.integration.id,
                "level": d.integration.level,
                "commit": adopted.as_ref().map(|a| a.commit.clone()),
            });
        }
        let result_text = serde_json::to_string_pretty(&summary).unwrap_or_default();
        let end = TrajectoryEnd {
            status: &status,
            state_json: &self.state.to_json(),
            iterations: i64::from(iterations),
            tokens_used: i64::try_from(tokens).unwrap_or(i64::MAX),
            final_level: Some(level),
            best_sequence: result.as_ref().map(|r| i64::from(r.sequence)),
            result_json: Some(&result_text),
        };
        if let Err(e) = self.r.store.finish_trajectory(&id, &end).await {
            tracing::warn!(error = %e, "could not record the trajectory's end");
        }
        if !matches!(ending, Ending::Superseded { .. }) {
            self.remember(&status, level, partial.as_ref(), error.as_deref()).await;
        }

        let t = &self.state.trajectory;
        let own_critique = t.observations.iter().rev().find_map(|o| o.verification.as_ref()).and_then(|v| {
            (!v.verdicts.is_empty())
                .then(|| v.verdicts.iter().filter(|c| c.passed).count() as f64 / v.verdicts.len() as f64)
        });
        let mut budget = t.budget.clone();
        budget.tokens_used = budget.tokens_used.saturating_add(tree.tokens);
        budget.iterations_used = budget.iterations_used.saturating_add(tree.iterations);
        budget.wall_time_used_ms = budget.wall_time_used_ms.saturating_add(tree.wall_time_ms);
        let weights = &self.kit.engine.config.level;
        let mut table = self.table();
        if let Some(d) = decided {
            for child in d.children.iter().chain(std::iter::once(&d.integration)) {
                table.push_str(&child.table);
            }
        }
        Report {
            id,
            status,
            run_status,
            converged: decided
                .map_or(matches!(ending, Ending::Control(LoopControl::Converged { .. })), |d| d.integration.converged),
            level,
            best_level: decided
                .map_or_else(|| t.best_observation(weights).map(|o| o.level(weights)), |d| d.integration.best_level),
            iterations: iterations + tree.iterations,
            tokens: tokens.saturating_add(tree.tokens),
            wall_time_ms: t.observations.iter().map(|o| o.wall_time_ms).fold(0, u64::saturating_add),
            gate_rejections: self.state.gate_rejections + tree.gate_rejections,
            critique_score: decided.map_or(own_critique, |d| d.integration.critique_score),
            budget_remaining: budget.remaining_fraction().clamp(0.0, 1.0),
            summary,
            table,
            error,
            workspace: self.ws.root().to_path_buf(),
            cancelled: false,
        }
    }

    /// The trajectory in a few numbers (the run's metrics and result file).
    #[allow(clippy::too_many_arguments)]
    fn summary(
        &self,
        end: &str,
        status: &str,
        level: f64,
        result: Option<&BestObservation>,
        partial: Option<&PartialResult>,
        error: Option<&str>,
        notes: &[String],
    ) -> Value {
        let t = &self.state.trajectory;
        let observations: Vec<Value> = t
            .observations
            .iter()
            .map(|o| {
                let attempt = self.state.attempts.iter().find(|a| a.sequence == o.sequence);
                json!({
                    "sequence": o.sequence,
                    "strategy": o.strategy_used,
                    "attractor": attempt.and_then(|a| a.attractor),
                    "summary": attempt.map(|a| a.summary.as_str()),
                    "level": o.level(&self.kit.engine.config.level),
                    "delta": o.metrics.map(|m| m.convergence_delta),
                    "commit": o.artifact.commit,
                    "tokens": o.tokens_used,
                })
            })
            .collect();
        let directives: Vec<&str> = t.gradient.history.iter().map(|r| r.directive.as_str()).collect();
        json!({
            "trajectory_id": self.place.id,
            "role": self.place.role,
            "parent_id": self.place.parent_id,
            "ordinal": self.place.ordinal,
            "status": status,
            "end": end,
            "error": error,
            "resumed": self.resumed,
            "iterations": t.observations.len(),
            "final_level": level,
            "result": result,
            "partial_result": partial,
            "strategies": t.strategy_log.iter().map(|e| e.strategy_kind).collect::<Vec<_>>(),
            "attractor": t.attractor_state.kind(),
            "attractors": self.state.attempts.iter().map(|a| a.attractor).collect::<Vec<_>>(),
            "directives": directives,
            "observations": observations,
            "fresh_starts": t.total_fresh_starts,
            "reverts": t.strategy_log.iter().filter(|e| e.strategy_kind == StrategyKind::RevertAndBranch).count(),
            "extensions_granted": t.budget.extensions_granted,
            "gate_rejections": self.state.gate_rejections,
            "tokens_used": self.tokens_spent(),
            "budget": t.budget,
            "blocked_tools": t.blocked_tools,
            "hints": t.hints,
            "category": self.kit.category,
            "setup": self.setup,
            "workspace": self.ws.root(),
            "notes": notes,
        })
    }

    /// One line per iteration, for the run's stdout.
    fn table(&self) -> String {
        let t = &self.state.trajectory;
        let mut out = format!("trajectory {} ({} iteration(s))\n", self.place.id, t.observations.len());
        for (o, plan) in t.observations.iter().zip(&t.gradient.history) {
            out.push_str(&format!(
                "#{:<3} {:<22} level {:.3}  {:<14} {}\n",
                o.sequence,
                o.strategy_used.as_str(),
                o.level(&self.kit.engine.config.level),
                plan.directive.as_str(),
                state::outcome_line(&o.overseer_signals),
            ));
        }
        out
    }
}

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
            &row.id,
            &TrajectoryEnd {
                status: "failed",
                state_json: &row.state_json,
                iterations: row.iterations,
                tokens_used: row.tokens_used,
                final_level: None,
                best_sequence: None,
                result_json: Some(&result.to_string()),
            },
        )
        .await
}

pub fn workspace_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("workspace")
}

/// Where the workspace of a trajectory under the run's own goes.
fn nested_workspace_dir(run_dir: &Path, id: &str) -> PathBuf {
    run_dir.join("trajectories").join(id)
}
