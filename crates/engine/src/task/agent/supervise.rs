//! An agent task under `supervision: aso`: the ASO coordinator's tiered
//! supervisor judges every iteration of every trajectory
//! ([`crate::aso::agent`] says how the engine's state maps onto its
//! diagnostics and its directives onto policy changes).
//!
//! The run starts `n_trajectories` samples (the `aso_config` artifact) on a
//! shared budget unless the task names its own `parallel_samples`; after each
//! iteration a trajectory builds its diagnostics, asks tier 1 (heuristics) or
//! tier 2 (the model, on significant events), applies the directive, writes
//! one `aso_telemetry` row and tells the bus. Tier 3 is a person: when the
//! model tier keeps failing, the run ends with a question whose answer
//! steers the task's later runs, exactly as for numeric tasks
//! ([`crate::task::optimize::Guidance`]).

use std::sync::Arc;
use std::time::Instant;

use super::{AgentError, AgentRun, Driver, intervene, rng_at};
use crate::aso::agent::{self, AgentSupervision, Steering};
use crate::aso::llm_tier::LlmSupervisor;
use crate::aso::supervisor::Supervised;
use crate::aso::{
    AsoConfig, Directive, DirectiveAction, DirectiveSource, ModelSupervisor, SupervisionContext, TieredSupervisor,
};
use crate::bus::Event;
use crate::engine::{Decision, StrategyKind};
use crate::suite::Supervision;
use crate::task::optimize::{Guidance, model_failing_question};

/// Offset of the random streams of supervision steps (apart from the
/// iterations' and the answers').
const SUPERVISION_STEP: u64 = 2_000_000;

/// The coordinator's parts for this run, when the task asks for them.
pub(super) async fn build(r: &AgentRun<'_>) -> Result<Option<AgentSupervision>, AgentError> {
    if r.spec.supervision != Supervision::Aso {
        return Ok(None);
    }
    let config = match r.artifacts.iter().find(|a| a.name == "aso_config") {
        Some(a) => AsoConfig::from_json(&a.content)
            .map_err(|e| AgentError::AsoConfig { version: a.version, error: e.to_string() })?,
        None => AsoConfig::default(),
    };
    let guidance = Guidance::read(&r.store, &r.task.name).await;
    let prompt =
        r.artifacts.iter().find(|a| a.name == "supervisor_prompt").map(|a| a.content.clone()).unwrap_or_default();
    let model: Option<Arc<dyn ModelSupervisor>> = match (&r.llm, guidance.heuristics_only) {
        (Some(client), false) => Some(Arc::new(LlmSupervisor::for_agents(client.clone(), prompt))),
        _ => None,
    };
    let telemetry = match r
        .store
        .insert_experiment(Some(r.run_id), &r.task.name, &serde_json::to_string(&config).unwrap_or_default())
        .await
    {
        Ok(id) => Some((r.store.clone(), id)),
        Err(e) => {
            tracing::warn!(error = %e, "could not record the experiment; supervising without telemetry");
            None
        }
    };
    let problem = {
        let text: String = r.task.task.chars().take(300).collect();
        format!("agent task `{}`: {}", r.task.name, text.trim())
    };
    Ok(Some(AgentSupervision {
        supervisor: Arc::new(TieredSupervisor::new(config.clone(), model)),
        context: SupervisionContext { cycle: 0, problem, human_hints: guidance.hints, timeout: None },
        config,
        telemetry,
    }))
}

/// How many trajectories the coordinator runs: the task's own
/// `parallel_samples` when it names more than one, else `n_trajectories`.
pub(super) fn trajectories(r: &AgentRun<'_>, sup: &AgentSupervision) -> u32 {
    if r.task.parallel_samples > 1 { r.task.parallel_samples } else { sup.config.n_trajectories.max(1) }
}

impl Driver<'_> {
    /// Records an iteration the engine itself ended or paused (converged,
    /// out of budget, a question for a person): the diagnostics and a
    /// telemetry row with the engine as the directive's source, so every
    /// iteration has its row and a restart that ends in success is counted.
    pub(super) async fn observe_engine_control(
        &mut self,
        sup: &AgentSupervision,
        decision: &Decision,
        started: Instant,
    ) {
        let d = agent::diagnose(
            &self.state.trajectory,
            decision,
            &mut self.state.supervision,
            self.place.ordinal,
            &sup.config,
        );
        let control = &decision.loop_control;
        let action = if control.is_terminal() { DirectiveAction::Stop } else { DirectiveAction::Continue };
        let supervised = Supervised {
            directive: Directive::new(action, DirectiveSource::Convergence, format!("the engine: {}", control.name())),
            llm_call_made: false,
            llm_failed: false,
            llm_error: None,
        };
        let applied = agent::Applied { steering: Steering::Continue, hint: None, refused: Vec::new() };
        let iterations = u64::from(self.state.trajectory.budget.iterations_used);
        let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
        sup.record(&self.place.id, &d, &supervised, &applied, iterations, wall_ms).await;
        self.publish_directive(decision.sequence, &d, &supervised, None, Vec::new());
    }

    fn publish_directive(
        &self,
        sequence: u32,
        d: &crate::aso::OptimizerDiagnostics,
        supervised: &Supervised,
        applied: Option<String>,
        refused: Vec<String>,
    ) {
        self.r.bus.publish(Event::SupervisorDirective {
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: self.place.id.clone(),
            sequence,
            status: d.status,
            action: supervised.directive.action,
            source: supervised.directive.source,
            reasoning: supervised.directive.reasoning.clone(),
            llm_call_made: supervised.llm_call_made,
            applied,
            refused,
        });
    }

    /// Supervises the iteration `decision` just decided (only one that goes
    /// on: an ending or a question is the engine's), and changes `decision`
    /// to what the directive made of it.
    pub(super) async fn supervise(&mut self, sup: &AgentSupervision, decision: &mut Decision, started: Instant) {
        let track = &mut self.state.supervision;
        let d = agent::diagnose(&self.state.trajectory, decision, track, self.place.ordinal, &sup.config);
        let supervised = sup.supervisor.supervise(&d, &sup.context).await;
        let mut rng = rng_at(self.state.seed, SUPERVISION_STEP + u64::from(decision.sequence));
        let (engine, trajectory, bandit) = (&self.kit.engine, &mut self.state.trajectory, &self.state.bandit);
        let directive = &supervised.directive;
        let applied = agent::steer(engine, trajectory, bandit, track, directive, &d, &sup.config, decision, &mut rng);
        self.state.focus = applied.hint.clone();
        self.state.next = decision.next.clone();
        if let Steering::Next(choice) = &applied.steering
            && choice.kind == StrategyKind::FreshStart
        {
            self.fresh_start_reason = Some(format!("the ASO supervisor restarted it: {}", directive.reasoning.trim()));
        }
        let iterations = u64::from(self.state.trajectory.budget.iterations_used);
        let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
        sup.record(&self.place.id, &d, &supervised, &applied, iterations, wall_ms).await;
        let outcome = match &applied.steering {
            Steering::Continue => None,
            Steering::Next(choice) => Some(format!("next: {}", choice.kind)),
            Steering::Stop(control) => Some(format!("end: {}", control.name())),
        };
        self.publish_directive(decision.sequence, &d, &supervised, outcome, applied.refused);
    }
}

/// Tier 3 after the run: when the model tier failed too often in a row, a
/// person is asked whether this task should run on heuristics only (the
/// answer is read by the next run's [`Guidance`]).
pub(super) async fn escalate(r: &AgentRun<'_>, sup: &AgentSupervision) {
    let Some((subject, context)) = model_failing_question(&r.task.name, &sup.supervisor, &sup.config) else {
        return;
    };
    let question = intervene::Question {
        kind: crate::domain::InterventionKind::HumanEscalation,
        suite_id: r.suite_id,
        run_id: r.run_id,
        task: &r.task.name,
        subject,
        context,
    };
    if let Err(e) = intervene::raise(&r.store, &r.bus, question).await {
        tracing::warn!(error = %e, "could not record an intervention");
    }
}
