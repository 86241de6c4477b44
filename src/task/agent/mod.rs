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
//!    pause for a person at an intervention point (`intervene`), or end.
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
//! task in the same epoch continues it — same workspace, same question.

mod intervene;
mod leftovers;
mod remember;
mod state;
pub mod verify;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::watch;

pub use intervene::{Answer, BUDGET_EXTENSION, HUMAN_ESCALATION};
pub use state::{AgentState, AttemptRecord, Waiting};
pub use verify::{IntentVerifier, VerifierConfig};

use super::{ActiveArtifact, RunOutcome};
use crate::bus::{Bus, Event};
use crate::engine::basin::BasinInputs;
use crate::engine::policy::{InterventionKind, InterventionMode, intervention_mode};
use crate::engine::spec::AmendmentSource;
use crate::engine::{
    AttractorType, BestObservation, Complexity, Decision, Engine, EngineConfig, EngineError, LoopControl, Observation,
    SetupInputs, SpecificationEvolution, StrategyBandit, StrategyChoice, StrategyKind, Trajectory,
};
use crate::executor::{
    CommandExecutor, CommandExecutorConfig, Execution, ExecutionRequest, ExecutionStatus, Executor, ExecutorError,
    LlmExecutor, LlmExecutorConfig, PromptInputs, PromptTexts, PromptTextsError,
};
use crate::ggs::PartialResult;
use crate::llm::{LlmClient, LlmError};
use crate::loss::{LossSignals, RunStatus};
use crate::memory::{MemoryConfig, Recall};
use crate::overseer::OverseerRunner;
use crate::overseer::runner::{MeasurePolicy, Measurement, OverseerError, RunnerConfig};
use crate::store::{NewObservation, NewTrajectory, Store, StoreError, TrajectoryEnd, TrajectoryProgress};
use crate::suite::{AgentTask, ExecutorKind, OverseerKind, Task};
use crate::workspace::{ArtifactReference, Workspace, WorkspaceConfig, WorkspaceError};

/// The bandit category of a task without a `workflow:`.
pub const DEFAULT_CATEGORY: &str = "general";
/// The file an agent run leaves in its run directory: the trajectory's summary.
pub const RESULT_FILE: &str = "agent_result.json";

/// Everything about how agent tasks run that a suite file does not say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// The convergence engine's numbers (seed 002's constants by default).
    /// `decompose` is always among its disabled strategies: child
    /// trajectories are not built, so nothing could carry it out.
    pub engine: EngineConfig,
    pub overseers: RunnerConfig,
    pub executor: LlmExecutorConfig,
    pub workspace: WorkspaceConfig,
    /// The complexity SETUP sizes the budget by (a task's `budget:` overrides it).
    pub complexity: Complexity,
    pub verifier: VerifierConfig,
    /// How often a paused trajectory looks for an answer (milliseconds).
    pub intervention_poll_ms: u64,
    /// How long a paused trajectory waits for an answer before treating
    /// silence as a rejection; `None`: until answered or stopped.
    pub intervention_timeout_secs: Option<f64>,
    /// Executor replies in a row that cannot be used at all before the run
    /// fails (each one is a refused reply, counted as a gate rejection).
    pub max_unusable_replies: u32,
    /// How the category's memories prime a new trajectory.
    pub memory: MemoryConfig,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_config_keeps_the_defaults_and_an_unknown_key_is_named() {
        let c =
            AgentConfig::from_json(r#"{"engine": {"ggs": {"epsilon": 0.05}}, "intervention_poll_ms": 250}"#).unwrap();
        assert_eq!(c.engine.ggs.epsilon, 0.05);
        assert_eq!(c.intervention_poll_ms, 250);
        assert!(c.verifier.enabled);
        let err = AgentConfig::from_json(r#"{"verifier": {"modle": "x"}}"#).unwrap_err();
        assert!(err.contains("verifier") && err.contains("modle"), "{err}");
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            engine: EngineConfig::default(),
            overseers: RunnerConfig::default(),
            executor: LlmExecutorConfig::default(),
            workspace: WorkspaceConfig::default(),
            complexity: Complexity::Simple,
            verifier: VerifierConfig::default(),
            intervention_poll_ms: 1000,
            intervention_timeout_secs: None,
            max_unusable_replies: 2,
            memory: MemoryConfig::default(),
        }
    }
}

impl AgentConfig {
    /// Reads a configuration from JSON over the defaults: a missing key keeps
    /// its default, an unknown one is an error naming its path.
    pub fn from_json(text: &str) -> Result<AgentConfig, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." { inner.to_string() } else { format!("at `{path}`: {inner}") }
        })
    }
}

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
}

/// Runs one agent task once and reports how it went.
pub async fn run(r: AgentRun<'_>) -> RunOutcome {
    let started = Instant::now();
    let mut outcome = match Driver::prepare(&r).await {
        Ok(driver) => driver.drive().await,
        Err(e) => RunOutcome::failed(e.to_string()),
    };
    outcome.duration = started.elapsed();
    outcome
}

/// How the loop stopped.
enum End {
    Finished(LoopControl),
    Cancelled,
}

/// One deterministic generator per step, derived from the trajectory's seed:
/// a resumed trajectory draws exactly what an uninterrupted one would have.
fn rng_at(seed: u64, step: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(crate::outer::epoch_seed(seed, i64::try_from(step).unwrap_or(i64::MAX)))
}

/// Steps of the generators used outside `decide` (answers to questions).
const ANSWER_STEP: u64 = 1 << 40;

struct Driver<'r> {
    r: &'r AgentRun<'r>,
    engine: Engine,
    executor: Box<dyn Executor>,
    overseers: OverseerRunner,
    verifier: Option<IntentVerifier>,
    texts: PromptTexts,
    ws: Workspace,
    state: AgentState,
    trajectory_id: String,
    category: String,
    resumed: bool,
    setup: serde_json::Value,
    /// Why the next fresh start happens (for its event).
    fresh_start_reason: Option<String>,
    /// The latest verifier failure, kept with the iteration.
    verification_error: Option<String>,
}

impl<'r> Driver<'r> {
    /// Builds the executor, the overseers and the verifier, then starts a
    /// new trajectory (SETUP: basin, budget, policy; a workspace copied from
    /// the task's folder; the bandit primed from its category and, with the
    /// prompts, from its memories) or continues
    /// the one an earlier run of this task left unfinished.
    async fn prepare(r: &'r AgentRun<'r>) -> Result<Driver<'r>, AgentError> {
        let task = &r.task.name;
        let texts = PromptTexts::from_artifacts(|name| {
            r.artifacts.iter().find(|a| a.name == name).map(|a| (a.content.as_str(), a.version))
        })?;
        let executor: Box<dyn Executor> = match &r.spec.executor {
            Some(spec) if spec.kind == ExecutorKind::Command => {
                let config =
                    CommandExecutorConfig::from_spec(spec).ok_or(AgentError::NoCommand { task: task.clone() })?;
                Box::new(CommandExecutor::new(config))
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
                Box::new(LlmExecutor::new(client, config))
            }
        };
        let overseers = OverseerRunner::new(r.spec.overseers.clone(), r.config.overseers.clone())
            .map_err(|source| AgentError::Overseer { task: task.clone(), source })?;
        let verifier = match &r.llm {
            Some(client) if r.config.verifier.enabled => {
                let executor_model = r.task.model.clone().unwrap_or_else(|| client.config().model.clone());
                let (model, warning) = verify::verifier_model(&r.config.verifier, &executor_model);
                if let Some(w) = warning {
                    tracing::warn!(task = %task, "{w}");
                }
                Some(IntentVerifier::new(
                    client.clone(),
                    model,
                    texts.verification_rubric.clone(),
                    r.config.verifier.clone(),
                ))
            }
            _ => None,
        };
        let category =
            r.task.workflow.clone().filter(|w| !w.trim().is_empty()).unwrap_or_else(|| DEFAULT_CATEGORY.to_string());
        let mut engine_config = r.config.engine.clone();
        if !engine_config.disabled_strategies.contains(&StrategyKind::Decompose) {
            engine_config.disabled_strategies.push(StrategyKind::Decompose);
        }
        let engine = Engine::new(engine_config);

        if let Some(row) = r.store.resumable_trajectory(r.epoch_id, task).await?
            && let Some((state, ws)) = Self::reopen(r, &row).await?
        {
            r.store.adopt_trajectory(&row.id, r.run_id).await?;
            tracing::info!(task = %task, trajectory = %row.id, observations = state.trajectory.observations.len(), "resuming a trajectory");
            let setup = serde_json::from_str(&row.setup_json).unwrap_or_default();
            return Ok(Driver {
                r,
                engine,
                executor,
                overseers,
                verifier,
                texts,
                ws,
                state,
                trajectory_id: row.id,
                category,
                resumed: true,
                setup,
                fresh_start_reason: None,
                verification_error: None,
            });
        }

        // SETUP, with what the category's memories say (PREPARE's recall, done first).
        let t = r.task;
        let recall = remember::recall(r, &category).await;
        let inputs = SetupInputs {
            complexity: r.config.complexity,
            basin: BasinInputs {
                description: t.task.clone(),
                acceptance_tests: r.spec.overseers.iter().filter(|o| o.kind == OverseerKind::Test).count(),
                invariants: t.constraints.len(),
                anti_examples: t.anti_patterns.len(),
                historical_convergence_rate: recall.historical_convergence_rate,
                ..BasinInputs::default()
            },
            priority: t.priority,
            parallel_samples: Some(t.parallel_samples),
            history: recall.history.clone(),
        };
        let plan = engine.setup(&inputs);
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
        if matches!(plan.mode, crate::engine::ConvergenceMode::Parallel { .. }) {
            tracing::info!(task = %task, mode = ?plan.mode, "parallel sampling is not built yet; running one trajectory");
        }
        let trajectory_id = format!("run-{}", r.run_id);
        let spec = SpecificationEvolution::from_submission(&t.task, &t.constraints, &t.anti_patterns);
        let mut trajectory = Trajectory::new(&trajectory_id, task, spec, budget.clone(), plan.policy.clone());
        for hint in &t.hints {
            trajectory.add_hint(hint.clone());
        }

        let dest = workspace_dir(r.run_dir);
        let ws = match &r.spec.workspace {
            Some(folder) => Workspace::create(&r.suite_dir.join(folder), &dest, r.config.workspace.clone()).await?,
            None => Workspace::init(&dest, r.config.workspace.clone()).await?,
        };
        let initial = ws.head().unwrap_or_default().to_string();

        let mut bandit = match r.store.bandit_state(&category).await? {
            Some(row) => StrategyBandit::from_json(&row.state_json).unwrap_or_else(|e| {
                tracing::warn!(category = %category, "ignoring the stored bandit state: {e}");
                StrategyBandit::default()
            }),
            None => StrategyBandit::default(),
        };
        recall.prime(&mut bandit);
        let next = engine.start(&mut trajectory, &bandit, &mut rng_at(r.seed, 0))?;
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
            seed: r.seed,
        };
        let setup = json!({
            "complexity": r.config.complexity,
            "category": category,
            "basin": plan.basin,
            "estimate": plan.estimate,
            "mode": plan.mode,
            "budget": budget,
            "policy": plan.policy,
            "memory": recall.to_json(),
        });
        r.store
            .insert_trajectory(&NewTrajectory {
                id: trajectory_id.clone(),
                run_id: r.run_id,
                suite_id: r.suite_id,
                epoch_id: r.epoch_id,
                task_name: task.clone(),
                category: category.clone(),
                workspace_dir: ws.root().to_string_lossy().into_owned(),
                setup_json: setup.to_string(),
                state_json: state.to_json(),
            })
            .await?;
        remember::announce(r, &trajectory_id, &recall);
        Ok(Driver {
            r,
            engine,
            executor,
            overseers,
            verifier,
            texts,
            ws,
            state,
            trajectory_id,
            category,
            resumed: false,
            setup,
            fresh_start_reason: None,
            verification_error: None,
        })
    }

    /// The stored state and workspace of an unfinished trajectory, put back
    /// to its last recorded point. One that cannot be reopened (its state or
    /// its folder is gone or damaged) is closed as failed, with the reason,
    /// and the run starts afresh instead of failing on it every time.
    async fn reopen(
        r: &AgentRun<'_>,
        row: &crate::store::TrajectoryRow,
    ) -> Result<Option<(AgentState, Workspace)>, AgentError> {
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
        match attempt.await {
            Ok(found) => Ok(Some(found)),
            Err(reason) => {
                tracing::warn!(trajectory = %row.id, %reason, "cannot resume the trajectory; starting afresh");
                let result = json!({"status": "failed", "error": format!("could not be resumed: {reason}")});
                r.store
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
                    .await?;
                Ok(None)
            }
        }
    }

    fn cancelled(&self) -> bool {
        *self.r.cancel.borrow()
    }

    async fn drive(mut self) -> RunOutcome {
        let b = &self.state.trajectory.budget;
        self.r.bus.publish(Event::TrajectoryStarted {
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: self.trajectory_id.clone(),
            task: self.r.task.name.clone(),
            resumed: self.resumed,
            max_tokens: b.max_tokens,
            max_iterations: b.max_iterations,
            max_wall_time_ms: b.max_wall_time_ms,
            basin: self.setup["basin"]["classification"].as_str().unwrap_or("unknown").to_string(),
        });
        match self.iterate().await {
            Ok(End::Finished(control)) => self.finalize(control, None).await,
            Ok(End::Cancelled) => {
                // The stored state is the last consistent point; the next run continues from it.
                RunOutcome { cancelled: true, ..RunOutcome::failed("cancelled (interrupted by the user)") }
            }
            Err(e) => {
                tracing::warn!(task = %self.r.task.name, error = %e, "the agent run failed");
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
                self.finalize(control, Some(e.to_string())).await
            }
        }
    }

    fn best(&self) -> Option<BestObservation> {
        let weights = &self.engine.config.level;
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
                    Some(End::Cancelled) => return Ok(End::Cancelled),
                    None => continue,
                }
            }
            if let Some(control) = self.state.ended.clone() {
                return Ok(End::Finished(control));
            }
            if self.cancelled() {
                return Ok(End::Cancelled);
            }
            let Some(choice) = self.state.next.clone() else {
                return Err(AgentError::Resume {
                    id: self.trajectory_id.clone(),
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
        let (suite_id, run_id, id) = (self.r.suite_id, self.r.run_id, self.trajectory_id.clone());
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

    /// One iteration: execute, measure, verify, decide, record.
    async fn step(&mut self, choice: StrategyChoice) -> Result<Option<End>, AgentError> {
        let sequence = self.state.trajectory.observations.len() as u32;
        self.announce(&choice, sequence);
        let started = Instant::now();

        let revert_carry = (choice.kind == StrategyKind::RevertAndBranch)
            .then(|| self.engine.carry_forward(&self.state.trajectory))
            .flatten();
        let request = ExecutionRequest {
            sequence,
            strategy: choice.kind,
            inputs: PromptInputs {
                lessons: Recall::lessons_of_setup(&self.setup),
                ..state::prompt_inputs(self.r.task, &self.state, &choice, revert_carry.as_ref())
            },
            texts: self.texts.clone(),
            revert_to: choice.revert_to.as_ref().map(state::revert_target),
            cancel: Some(self.r.cancel.clone()),
        };
        let execution = match self.executor.execute(&request, &mut self.ws).await {
            Ok(e) => {
                self.state.unusable_replies = 0;
                e
            }
            Err(ExecutorError::Cancelled) => return Ok(Some(End::Cancelled)),
            Err(ExecutorError::Llm(e @ LlmError::InvalidJson { .. }))
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
                    tokens: 0,
                    wall_time: started.elapsed(),
                    summary: format!("(the reply could not be used: {e})"),
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
        if self.cancelled() {
            return Ok(Some(End::Cancelled));
        }

        let policy = MeasurePolicy { skip_expensive: self.state.trajectory.policy.skip_expensive_overseers };
        let measurement = self.overseers.measure(self.ws.root(), policy, Some(self.r.cancel.clone())).await;
        let scope = leftovers::Scope {
            bus: &self.r.bus,
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: &self.trajectory_id,
            sequence,
        };
        leftovers::report(&scope, self.r.spec, &execution, &measurement);
        if self.cancelled() {
            return Ok(Some(End::Cancelled));
        }
        let verified = match &self.verifier {
            Some(_) if self.engine.should_verify(&self.state.trajectory) => {
                self.verify(&measurement, &execution.artifact).await
            }
            _ => None,
        };

        let mut observation = Observation::new(choice.kind, execution.artifact.clone(), measurement.signals.clone());
        observation.verification = verified.as_ref().map(|v| v.result.clone());
        observation.tokens_used = execution.tokens + verified.as_ref().map_or(0, |v| v.tokens);
        observation.wall_time_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        observation.tools_used = execution.tools_used.clone();

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
        let decision = self.engine.decide(&mut self.state.trajectory, &mut self.state.bandit, observation, &mut rng)?;
        self.state.head_commit = execution.artifact.commit.clone();
        self.state.next = decision.next.clone();
        if let Some(attempt) = self.state.attempts.last_mut() {
            attempt.attractor = Some(decision.attractor.kind());
        }

        let end = self.act_on(&decision).await?;
        if let Some(End::Finished(control)) = &end {
            self.state.ended = Some(control.clone());
        }
        self.record(&choice, &execution, &measurement, verified.as_ref(), &decision).await?;
        Ok(end)
    }

    /// Events and intervention points of a decision; the end, if it is one.
    async fn act_on(&mut self, d: &Decision) -> Result<Option<End>, AgentError> {
        let (suite_id, run_id, id) = (self.r.suite_id, self.r.run_id, self.trajectory_id.clone());
        match &d.loop_control {
            LoopControl::Continue => Ok(None),
            LoopControl::ForceFreshStart { reason } => {
                self.fresh_start_reason = Some(format!("the executor's context degraded ({reason:?})"));
                Ok(None)
            }
            LoopControl::ExtensionGranted { extension } => {
                self.r.bus.publish(Event::BudgetExtensionRequested {
                    suite_id,
                    run_id,
                    trajectory_id: id.clone(),
                    additional_tokens: extension.additional_tokens,
                    additional_iterations: extension.additional_iterations,
                    evidence: self.convergence_evidence(d),
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
                Ok(None)
            }
            LoopControl::ExtensionRequested { extension } => {
                let evidence = self.convergence_evidence(d);
                let b = &self.state.trajectory.budget;
                let question = intervene::Question {
                    kind: BUDGET_EXTENSION,
                    suite_id,
                    run_id,
                    task: &self.r.task.name,
                    subject: format!(
                        "Task `{}` is converging and out of budget: extend it by {} iteration(s) and {} tokens?",
                        self.r.task.name, extension.additional_iterations, extension.additional_tokens
                    ),
                    context: json!({
                        "what": format!("The trajectory used {} of {} iterations and {} of {} tokens while still converging.",
                            b.iterations_used, b.max_iterations, b.tokens_used, b.max_tokens),
                        "why": "The task's priority (thorough) asks a person before spending more than planned.",
                        "evidence": {"convergence": evidence, "level": d.level, "attractor": d.attractor.kind(),
                                     "loss": d.gradient.loss, "trajectory_id": id},
                        "proposed_action": "extend_budget",
                        "extension": extension,
                        "proposal": "Approve to extend the budget and go on; reject to end with the best result so far; \
                                     or answer with a hint, which extends the budget and is followed from the next attempt.",
                    }),
                };
                let intervention_id = intervene::raise(&self.r.store, &self.r.bus, question).await?;
                self.r.bus.publish(Event::BudgetExtensionRequested {
                    suite_id,
                    run_id,
                    trajectory_id: id,
                    additional_tokens: extension.additional_tokens,
                    additional_iterations: extension.additional_iterations,
                    evidence,
                    intervention_id: Some(intervention_id),
                });
                self.state.waiting = Some(Waiting::BudgetExtension { intervention_id, extension: *extension });
                Ok(None)
            }
            LoopControl::Trapped { best, partial }
                if intervention_mode(self.state.trajectory.policy.priority_hint, InterventionKind::HumanEscalation)
                    == InterventionMode::Pause =>
            {
                let period = match &d.attractor.classification {
                    AttractorType::LimitCycle { period, .. } => *period,
                    _ => 0,
                };
                let carry = self.engine.carry_forward(&self.state.trajectory);
                let question = intervene::Question {
                    kind: HUMAN_ESCALATION,
                    suite_id,
                    run_id,
                    task: &self.r.task.name,
                    subject: format!(
                        "Task `{}` is trapped in a cycle of {period} states; every escape strategy was tried",
                        self.r.task.name
                    ),
                    context: json!({
                        "what": partial.summary,
                        "why": "The executor keeps returning to the same wrong answers; another attempt without new \
                                information would repeat them.",
                        "evidence": {"cycle": d.attractor.evidence.recent_signatures, "best": best,
                                     "remaining": partial.remaining, "carry_forward": carry, "trajectory_id": id},
                        "proposed_action": "hint",
                        "next_moves": partial.next_moves,
                        "proposal": "Answer with a hint to go on with a fresh start that carries it; approve or reject \
                                     to end the trajectory as trapped with its best result.",
                    }),
                };
                let intervention_id = intervene::raise(&self.r.store, &self.r.bus, question).await?;
                self.state.waiting =
                    Some(Waiting::HumanEscalation { intervention_id, control: d.loop_control.clone() });
                Ok(None)
            }
            terminal => Ok(Some(End::Finished(terminal.clone()))),
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
            self.r.config.intervention_timeout_secs.filter(|s| s.is_finite() && *s >= 0.0).map(Duration::from_secs_f64);
        tracing::info!(task = %self.r.task.name, intervention = id, "waiting for a person's answer");
        let answer = intervene::wait(&self.r.store, id, poll, timeout, self.r.cancel.clone()).await?;
        if answer == Answer::Cancelled {
            return Ok(Some(End::Cancelled));
        }
        let step = ANSWER_STEP + self.state.trajectory.observations.len() as u64;
        self.state.waiting = None;
        match waiting {
            Waiting::BudgetExtension { .. } => {
                if let Answer::Hint(h) = &answer
                    && !h.trim().is_empty()
                {
                    self.state.trajectory.add_hint(h.trim());
                }
                let approved = matches!(answer, Answer::Approve | Answer::Hint(_));
                let (control, next) = self.engine.resolve_extension(
                    &mut self.state.trajectory,
                    &self.state.bandit,
                    approved,
                    &mut rng_at(self.state.seed, step),
                )?;
                if let LoopControl::ExtensionGranted { extension } = &control {
                    self.r.bus.publish(Event::BudgetExtensionGranted {
                        suite_id: self.r.suite_id,
                        run_id: self.r.run_id,
                        trajectory_id: self.trajectory_id.clone(),
                        additional_tokens: extension.additional_tokens,
                        additional_iterations: extension.additional_iterations,
                        by: "person".to_string(),
                    });
                    self.state.next = next;
                    self.save("running").await?;
                    return Ok(None);
                }
                Ok(Some(End::Finished(control)))
            }
            Waiting::HumanEscalation { control, .. } => match answer {
                Answer::Hint(h) if !h.trim().is_empty() => {
                    let next = self.engine.reopen_with_hint(
                        &mut self.state.trajectory,
                        &self.state.bandit,
                        h.trim(),
                        &mut rng_at(self.state.seed, step),
                    )?;
                    self.fresh_start_reason = Some("a person's hint reopened the trapped trajectory".to_string());
                    self.state.next = Some(next);
                    self.save("running").await?;
                    Ok(None)
                }
                _ => Ok(Some(End::Finished(control))),
            },
        }
    }

    /// Asks the intent verifier about the state just measured; a failure
    /// leaves the observation unverified (and is kept with the iteration).
    async fn verify(&mut self, m: &Measurement, head: &ArtifactReference) -> Option<verify::Verified> {
        let verifier = self.verifier.as_ref()?;
        let diff = match self.ws.diff(&self.state.initial_commit, &head.commit).await {
            Ok(d) => d,
            Err(e) => format!("(the diff could not be read: {e})"),
        };
        let files = self.ws.list_files().await.map(|l| l.files).unwrap_or_default();
        let spec = self.state.trajectory.specification.effective.render();
        let evidence = verify::Evidence {
            task_name: &self.r.task.name,
            specification: &spec,
            signals: Some(&m.signals),
            diff: &diff,
            files: &files,
        };
        match verifier.verify(&evidence).await {
            Ok(v) => {
                self.verification_error = None;
                Some(v)
            }
            Err(e) => {
                tracing::warn!(task = %self.r.task.name, error = %e, "intent verification failed; going on unverified");
                self.verification_error = Some(e.to_string());
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
                &self.trajectory_id,
                &TrajectoryProgress {
                    status,
                    state_json: &self.state.to_json(),
                    pending_intervention_id: self.state.waiting.as_ref().map(Waiting::intervention_id),
                    iterations: t.observations.len() as i64,
                    tokens_used: i64::try_from(t.budget.tokens_used).unwrap_or(i64::MAX),
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
                &self.trajectory_id,
                &row,
                &TrajectoryProgress {
                    status,
                    state_json: &self.state.to_json(),
                    pending_intervention_id: self.state.waiting.as_ref().map(Waiting::intervention_id),
                    iterations: t.observations.len() as i64,
                    tokens_used: i64::try_from(t.budget.tokens_used).unwrap_or(i64::MAX),
                },
            )
            .await?;
        let (suite_id, run_id, id) = (self.r.suite_id, self.r.run_id, self.trajectory_id.clone());
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

    /// RESOLVE: the result in the workspace, the terminal event, the bandit's
    /// learning merged into its category, the trajectory's end recorded, its
    /// memory stored, and the outcome the loss is computed from.
    async fn finalize(mut self, control: LoopControl, error: Option<String>) -> RunOutcome {
        let (suite_id, run_id, id) = (self.r.suite_id, self.r.run_id, self.trajectory_id.clone());
        let t = &self.state.trajectory;
        let iterations = t.observations.len() as u32;
        let tokens = t.budget.tokens_used;
        let (status, run_status, result, partial): (&str, RunStatus, Option<BestObservation>, Option<&PartialResult>) =
            match &control {
                _ if error.is_some() => ("failed", RunStatus::Failed, self.best(), None),
                LoopControl::Converged { result } => ("converged", RunStatus::Complete, Some(result.clone()), None),
                LoopControl::AcceptedPartial { result } => {
                    ("accepted_partial", RunStatus::Partial, Some(result.clone()), None)
                }
                LoopControl::Exhausted { best, partial } => {
                    ("exhausted", RunStatus::Failed, best.clone(), Some(partial))
                }
                LoopControl::Abandoned { best, partial } => {
                    ("abandoned", RunStatus::Failed, best.clone(), Some(partial))
                }
                LoopControl::Trapped { best, partial } => ("trapped", RunStatus::Failed, best.clone(), Some(partial)),
                _ => ("failed", RunStatus::Failed, self.best(), None),
            };
        let level = result.as_ref().map_or(0.0, |r| r.level);

        // The workspace is left holding the result (the best state, which a
        // partial acceptance or an exhausted budget may have left behind).
        let mut notes = Vec::new();
        if let Some(r) = &result
            && self.ws.head() != Some(r.artifact.commit.as_str())
            && let Err(e) = self.ws.reset_to(&r.artifact.commit).await
        {
            notes.push(format!("could not put the result back into the workspace: {e}"));
        }

        if error.is_none() {
            match &control {
                LoopControl::Converged { .. } | LoopControl::AcceptedPartial { .. } => {
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
                LoopControl::Exhausted { best, .. } | LoopControl::Abandoned { best, .. } => {
                    self.r.bus.publish(Event::TrajectoryExhausted {
                        suite_id,
                        run_id,
                        trajectory_id: id.clone(),
                        best_sequence: best.as_ref().map(|b| b.sequence),
                        budget_consumed: tokens,
                        abandoned: matches!(control, LoopControl::Abandoned { .. }),
                    })
                }
                LoopControl::Trapped { .. } => self.r.bus.publish(Event::TrajectoryTrapped {
                    suite_id,
                    run_id,
                    trajectory_id: id.clone(),
                    cycle_period: match &t.attractor_state.classification {
                        AttractorType::LimitCycle { period, .. } => *period,
                        _ => 0,
                    },
                    escape_attempts: t.strategy_log.len() as u32,
                }),
                _ => {}
            }
        }

        // What this trajectory learned joins its category's bandit.
        let (prior, learned) = (&self.state.bandit_prior, &self.state.bandit);
        let merged = self
            .r
            .store
            .merge_bandit_state(&self.category, |stored| {
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
            Ok(Err(e)) => notes.push(format!("the stored bandit state of `{}` is unusable: {e}", self.category)),
            Err(e) => notes.push(format!("could not save the bandit state: {e}")),
        }

        let summary = self.summary(&control, status, level, result.as_ref(), partial, error.as_deref(), &notes);
        let result_text = serde_json::to_string_pretty(&summary).unwrap_or_default();
        let end = TrajectoryEnd {
            status,
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
        self.remember(status, level, partial, error.as_deref()).await;
        if let Err(e) = tokio::fs::write(self.r.run_dir.join(RESULT_FILE), &result_text).await {
            tracing::warn!(error = %e, "could not write {RESULT_FILE}");
        }

        let t = &self.state.trajectory;
        let critique_score = t.observations.iter().rev().find_map(|o| o.verification.as_ref()).and_then(|v| {
            (!v.verdicts.is_empty())
                .then(|| v.verdicts.iter().filter(|c| c.passed).count() as f64 / v.verdicts.len() as f64)
        });
        RunOutcome {
            signals: LossSignals {
                eval_score: Some(level),
                critique_score,
                gate_rejection_count: Some(f64::from(self.state.gate_rejections)),
                budget_remaining_pct: Some(100.0 * t.budget.remaining_fraction().clamp(0.0, 1.0)),
                status: Some(run_status),
            },
            metrics: Some(summary),
            result_json: Some(result_text),
            error,
            stdout: self.table(),
            ..RunOutcome::default()
        }
    }

    /// The trajectory in a few numbers (the run's metrics and result file).
    #[allow(clippy::too_many_arguments)]
    fn summary(
        &self,
        control: &LoopControl,
        status: &str,
        level: f64,
        result: Option<&BestObservation>,
        partial: Option<&PartialResult>,
        error: Option<&str>,
        notes: &[String],
    ) -> serde_json::Value {
        let t = &self.state.trajectory;
        let observations: Vec<serde_json::Value> = t
            .observations
            .iter()
            .map(|o| {
                let attempt = self.state.attempts.iter().find(|a| a.sequence == o.sequence);
                json!({
                    "sequence": o.sequence,
                    "strategy": o.strategy_used,
                    "attractor": attempt.and_then(|a| a.attractor),
                    "summary": attempt.map(|a| a.summary.as_str()),
                    "level": o.level(&self.engine.config.level),
                    "delta": o.metrics.map(|m| m.convergence_delta),
                    "commit": o.artifact.commit,
                    "tokens": o.tokens_used,
                })
            })
            .collect();
        let directives: Vec<&str> = t.gradient.history.iter().map(|r| r.directive.as_str()).collect();
        json!({
            "trajectory_id": self.trajectory_id,
            "status": status,
            "end": control.name(),
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
            "tokens_used": t.budget.tokens_used,
            "budget": t.budget,
            "blocked_tools": t.blocked_tools,
            "hints": t.hints,
            "category": self.category,
            "setup": self.setup,
            "workspace": self.ws.root(),
            "notes": notes,
        })
    }

    /// One line per iteration, for the run's stdout.
    fn table(&self) -> String {
        let t = &self.state.trajectory;
        let mut out = format!("trajectory {} ({} iteration(s))\n", self.trajectory_id, t.observations.len());
        for (o, plan) in t.observations.iter().zip(&t.gradient.history) {
            out.push_str(&format!(
                "#{:<3} {:<22} level {:.3}  {:<14} {}\n",
                o.sequence,
                o.strategy_used.as_str(),
                o.level(&self.engine.config.level),
                plan.directive.as_str(),
                state::outcome_line(&o.overseer_signals),
            ));
        }
        out
    }
}

/// A record of an iteration as JSON text (plain data: serializing it cannot fail).
fn to_json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Where a run's trajectory workspace goes.
pub fn workspace_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("workspace")
}
