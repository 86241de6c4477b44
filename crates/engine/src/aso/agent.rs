//! The ASO coordinator over agent trajectories: seed 000's tiered
//! supervision applied to the convergence engine of seed 002 (an agent task
//! with `supervision: aso`).
//!
//! The coordinator treats an agent trajectory as it treats an ALM one. After
//! every iteration it turns the engine's state into the same
//! [`OptimizerDiagnostics`] — so the heuristic tree, the event triggers of
//! the model tier and the telemetry are the numeric ones — and applies the
//! directive as a change of the trajectory's policy:
//!
//! | numeric                         | agent                                                  |
//! |---------------------------------|--------------------------------------------------------|
//! | objective                       | `D`, the goal gradient's distance to the intent        |
//! | one constraint per g/h          | one per kind of check (`tests`, `build`, `check:NAME`, `intent`…), violation = its share of failing criteria |
//! | FEASIBLE_FOUND                  | every check passes                                     |
//! | DIVERGING                       | the engine classifies the attractor as divergent        |
//! | STAGNATION                      | a plateau or a limit cycle, or `D` flat while failing  |
//! | ADJUST: raise penalties         | raise the bandit's exploration weight                  |
//! | ADJUST: boost a constraint      | a focused repair of that check next, told as a hint   |
//! | ADJUST: `proposal_mix`          | set the exploration weight                             |
//! | RESTART from a new seed         | a fresh start carrying the hints and the best signals  |
//! | STOP, converged                 | end with the best result                               |
//! | STOP, hopeless; a new round     | a fresh start replaces the attempt, while fresh starts and budget last; then end with the best result |
//!
//! Two readings differ from the numeric ones on purpose. DIVERGING comes
//! from the engine's attractor (a sliding window over the observations), not
//! from one step's worsening constraints: with two or three checks, one
//! broken build would otherwise stop a trajectory that the engine's
//! RevertAndBranch repairs in the next iteration. And the objective is `D`
//! rather than the loss `L`, whose budget term moves every step and would
//! hide a flat distance.
//!
//! An abandoning STOP is the one directive whose agent form differs in kind.
//! The numeric coordinator stops a hopeless trajectory cheaply because its
//! budget goes to a new round from fresh seeds; an agent trajectory's
//! equivalent of a new seed is a fresh start with the carry-forward. Ending
//! it instead lost every oscillating task of `attractor bench engine` (0%
//! against the engine's 100%): the engine calls an oscillation between two
//! answers that each break the other's tests divergent, which tier 1 reads
//! as DIVERGING and case 5 stops.
//!
//! Safety clamps, as for the ALM: the exploration weight stays in [0, 1]; a
//! forced strategy the trajectory cannot run (disabled, set aside, no fresh
//! start left) is refused and counted; a directive that fails to apply is
//! logged and ignored, never fatal.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::config::AsoConfig;
use super::diagnostics::{
    self, ConstraintKind, ConstraintReading, OptimizerDiagnostics, Snapshot, Status, TrajectoryView,
};
use super::directive::{Directive, DirectiveAction};
use super::supervisor::{Supervised, SupervisionContext, TieredSupervisor};
use crate::engine::{
    AttractorType, Decision, Engine, LoopControl, StrategyBandit, StrategyChoice, StrategyKind, Trajectory,
};
use crate::ggs::CriterionVerdict;
use crate::store::{Store, TelemetryRow};

/// How much a "raise the penalties" directive multiplies the exploration
/// weight by at most, whatever factor it names: one directive nudges the
/// bandit, it does not turn it into a random search.
pub const MAX_EXPLORATION_STEP: f64 = 2.0;
/// The exploration weight a raise starts from when the policy's is zero.
pub const MIN_RAISED_EXPLORATION: f64 = 0.2;

/// The kind of check a criterion belongs to (a constraint of the diagnostics).
pub fn family(criterion: &str) -> String {
    if criterion.starts_with("test:")
        || criterion.starts_with("failing test #")
        || criterion.starts_with("passing test #")
    {
        return "tests".to_string();
    }
    match criterion {
        "build" | "type_check" | "security" => criterion.to_string(),
        c if c.starts_with("check:") || c.starts_with("overseer:") => c.to_string(),
        // What the intent verifier judged.
        _ => "intent".to_string(),
    }
}

/// The snapshot of one iteration: `D` as the objective, one constraint per
/// kind of check. A check not measured this time (skipped after a blocking
/// failure) keeps its previous reading, so trends compare like with like;
/// the order of the previous snapshot is kept for the same reason.
pub fn snapshot(criteria: &[CriterionVerdict], distance: f64, previous: Option<&Snapshot>) -> Snapshot {
    let mut counts: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for c in criteria {
        let e = counts.entry(family(&c.criterion)).or_default();
        e.1 += 1;
        if !c.passed {
            e.0 += 1;
        }
    }
    let reading = |name: &str, failed: u32, total: u32| ConstraintReading {
        name: name.to_string(),
        kind: ConstraintKind::Inequality,
        value: if total == 0 { 0.0 } else { f64::from(failed) / f64::from(total) },
        penalty: 1.0,
    };
    let mut constraints = Vec::new();
    if let Some(p) = previous {
        for c in &p.constraints {
            match counts.remove(&c.name) {
                Some((failed, total)) => constraints.push(reading(&c.name, failed, total)),
                None => constraints.push(c.clone()),
            }
        }
    }
    for (name, (failed, total)) in counts {
        constraints.push(reading(&name, failed, total));
    }
    Snapshot { objective: distance, constraints, bounds_norm: 1.0 }
}

/// What the coordinator keeps about one agent trajectory between iterations
/// (stored with the trajectory's state, so a resumed run goes on counting).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SupervisionTrack {
    /// Supervised iterations so far.
    pub steps: u32,
    pub previous: Option<Snapshot>,
    /// The lowest `D` seen.
    pub best_distance: Option<f64>,
    /// Iterations since `D` last fell (the seed's stagnation count).
    pub stagnation_count: u32,
    pub steps_in_feasible_region: u32,
    pub restarts: u32,
    /// Restarts after which every check passed.
    pub restarts_recovered: u32,
    /// The step of the latest restart not yet followed by success.
    pub restarted_at: Option<u32>,
    /// The directives applied, by action (for the run's summary).
    pub actions: BTreeMap<String, u32>,
}

/// Builds the diagnostics of the iteration `decision` just decided, and
/// advances the track. `ordinal` is the trajectory's place in its run.
pub fn diagnose(
    trajectory: &Trajectory,
    decision: &Decision,
    track: &mut SupervisionTrack,
    ordinal: u32,
    config: &AsoConfig,
) -> OptimizerDiagnostics {
    let criteria = trajectory.latest().map(crate::engine::criteria::criteria_of).unwrap_or_default();
    // `+ 0.0` turns a computed −0 into 0 for the record.
    let distance = decision.gradient.loss.d + 0.0;
    let now = snapshot(&criteria, distance, track.previous.as_ref());
    track.steps += 1;
    match track.best_distance {
        Some(best) if distance >= best - 1e-12 => track.stagnation_count += 1,
        _ => {
            track.best_distance = Some(distance);
            track.stagnation_count = 0;
        }
    }
    let view = TrajectoryView {
        id: ordinal,
        step: track.steps,
        stagnation_count: track.stagnation_count,
        steps_in_feasible_region: track.steps_in_feasible_region,
    };
    let mut d = diagnostics::generate(&now, track.previous.as_ref(), view, &config.thresholds());

    // The engine's classification decides divergence and adds stagnation.
    let attractor = &decision.attractor.classification;
    let engine_status = match attractor {
        _ if d.status == Status::FeasibleFound => Status::FeasibleFound,
        AttractorType::Divergent { .. } => Status::Diverging,
        AttractorType::Plateau { .. } | AttractorType::LimitCycle { .. } => Status::Stagnation,
        _ if d.status == Status::Diverging => Status::InProgress,
        _ => d.status,
    };
    if engine_status != d.status {
        d.narrative.push(format!("The engine reads the trajectory as {}.", decision.attractor.kind()));
        d.status = engine_status;
    }
    if d.status == Status::FeasibleFound {
        track.steps_in_feasible_region += 1;
        if let Some(at) = track.restarted_at.take() {
            tracing::debug!(trajectory = %trajectory.id, restart_step = at, "every check passes after a restart");
            track.restarts_recovered += 1;
        }
    }
    let b = &trajectory.budget;
    d.narrative.push(format!(
        "Attractor {} (confidence {:.2}); convergence level {:.0}%; goal-gradient directive {}; {:.0}% of the budget left.",
        decision.attractor.kind(),
        decision.attractor.confidence,
        decision.level * 100.0,
        decision.gradient.directive.as_str(),
        b.remaining_fraction().clamp(0.0, 1.0) * 100.0
    ));
    let h = &mut d.optimizer_health;
    h.remove("bounds_norm");
    h.insert("level".into(), decision.level);
    h.insert("convergence_delta".into(), decision.metrics.map_or(0.0, |m| m.convergence_delta));
    h.insert("loss".into(), decision.gradient.loss.l);
    h.insert("grad_l".into(), decision.gradient.grad_l);
    h.insert("budget_pressure".into(), decision.gradient.loss.omega);
    h.insert("budget_remaining".into(), b.remaining_fraction().clamp(0.0, 1.0));
    h.insert("iterations_used".into(), f64::from(b.iterations_used));
    h.insert("tokens_used".into(), b.tokens_used as f64);
    h.insert("context_signal_to_noise".into(), decision.context_health.signal_to_noise);
    h.insert("exploration_weight".into(), trajectory.policy.exploration_weight);
    track.previous = Some(now);
    d
}

/// What a directive does to an agent trajectory.
#[derive(Debug, Clone, PartialEq)]
pub enum Steering {
    /// The engine's choice stands.
    Continue,
    /// A different next attempt (a forced strategy, a fresh start, or the
    /// bandit's new choice under a changed exploration weight).
    Next(StrategyChoice),
    /// The trajectory ends here.
    Stop(LoopControl),
}

/// What applying a directive did: the steering, a hint for the executor
/// (a focus), and the parts refused.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub steering: Steering,
    pub hint: Option<String>,
    pub refused: Vec<String>,
}

/// Applies `directive` to the trajectory (its policy, its next strategy, or
/// its end), under the safety clamps. Never fails: a part that cannot apply
/// is refused and reported in [`Applied::refused`].
pub fn apply<R: Rng + ?Sized>(
    engine: &Engine,
    trajectory: &mut Trajectory,
    bandit: &StrategyBandit,
    directive: &Directive,
    diagnostics: &OptimizerDiagnostics,
    rng: &mut R,
) -> Applied {
    let mut refused = Vec::new();
    let mut hint = None;
    let steering = match directive.action {
        DirectiveAction::Continue => Steering::Continue,
        DirectiveAction::Stop => {
            let reason = format!("the ASO supervisor stopped the trajectory: {}", directive.reasoning.trim());
            let converged = diagnostics.status == Status::FeasibleFound;
            abandon(engine, trajectory, bandit, &reason, !converged, rng).unwrap_or_else(|e| {
                refused.push(format!("STOP: {e}"));
                Steering::Continue
            })
        }
        DirectiveAction::Restart => match engine.force_next(trajectory, bandit, StrategyKind::FreshStart, rng) {
            Ok(choice) => Steering::Next(choice),
            Err(e) => {
                refused.push(format!("RESTART: {e}"));
                Steering::Continue
            }
        },
        DirectiveAction::Adjust => {
            let mut forced = None;
            let mut reweighted = false;
            if let Some(o) = &directive.config_overrides {
                // Raising the penalties: the current approach is not closing
                // the gap, so explore more.
                if let Some(f) = o.alm_settings.as_ref().and_then(|a| a.penalty_parameters_increase_factor) {
                    if f.is_finite() && f > 0.0 {
                        let step = f.min(MAX_EXPLORATION_STEP);
                        let w = trajectory.policy.exploration_weight.max(MIN_RAISED_EXPLORATION / step);
                        trajectory.policy.exploration_weight = (w * step).clamp(0.0, 1.0);
                        reweighted = true;
                    } else {
                        refused.push(format!("penalty factor {f} is not a positive number"));
                    }
                }
                if o.alm_settings.as_ref().is_some_and(|a| a.bounds_reduction_factor.is_some()) {
                    refused.push("bounds_reduction_factor has no meaning for an agent trajectory".into());
                }
                let explicit = o.agent.as_ref().and_then(|a| a.exploration_weight);
                let mix = o.proposal_mix.as_ref().and_then(|m| m.exploration_ratio);
                if let Some(w) = explicit.or(mix) {
                    if w.is_finite() {
                        trajectory.policy.exploration_weight = w.clamp(0.0, 1.0);
                        reweighted = true;
                    } else {
                        refused.push(format!("exploration weight {w} is not a number"));
                    }
                }
                // Boosting a constraint: repair that check next, and say which.
                if let Some(weights) = &o.constraint_weights {
                    let known: Vec<&str> = diagnostics.constraint_diagnostics.iter().map(|c| c.name.as_str()).collect();
                    let target = weights
                        .iter()
                        .filter(|(name, w)| w.is_finite() && **w > 0.0 && known.contains(&name.as_str()))
                        .max_by(|a, b| a.1.total_cmp(b.1))
                        .map(|(name, _)| name.clone());
                    match target {
                        Some(name) => {
                            forced = Some(StrategyKind::FocusedRepair);
                            hint = Some(focus_hint(&name));
                        }
                        None => refused.push(format!(
                            "constraint_weights names no check of this trajectory ({})",
                            weights.keys().cloned().collect::<Vec<_>>().join(", ")
                        )),
                    }
                }
                if let Some(a) = &o.agent {
                    if let Some(kind) = a.forced_strategy {
                        forced = Some(kind);
                    }
                    if let Some(name) = a.focus.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
                        hint = Some(focus_hint(name));
                    }
                }
            }
            if hint.is_some() && forced.is_none() {
                forced = Some(StrategyKind::FocusedRepair);
            }
            let forced_choice = forced.map(|kind| engine.force_next(trajectory, bandit, kind, rng));
            match forced_choice {
                Some(Ok(choice)) => Steering::Next(choice),
                Some(Err(e)) => {
                    refused.push(format!("forced strategy: {e}"));
                    rechosen(engine, trajectory, bandit, reweighted, rng)
                }
                None => rechosen(engine, trajectory, bandit, reweighted, rng),
            }
        }
    };
    for r in &refused {
        tracing::warn!(trajectory = %trajectory.id, refused = %r, "a directive part could not be applied");
    }
    Applied { steering, hint, refused }
}

/// Ends the trajectory — or, when `replace` and it can still start over
/// (a fresh start left, budget left), replaces the attempt with a fresh
/// start: the agent form of the numeric coordinator's next round.
pub fn abandon<R: Rng + ?Sized>(
    engine: &Engine,
    trajectory: &mut Trajectory,
    bandit: &StrategyBandit,
    reason: &str,
    replace: bool,
    rng: &mut R,
) -> Result<Steering, String> {
    if replace
        && trajectory.fresh_starts_remaining() > 0
        && trajectory.budget.has_remaining()
        && let Ok(choice) = engine.force_next(trajectory, bandit, StrategyKind::FreshStart, rng)
    {
        return Ok(Steering::Next(choice));
    }
    engine.stop(trajectory, reason).map(Steering::Stop).map_err(|e| e.to_string())
}

fn focus_hint(check: &str) -> String {
    format!("The supervisor asks you to concentrate on the `{check}` check: it is the one getting worse.")
}

/// After a new exploration weight, the bandit chooses again so the change
/// applies to the very next attempt.
fn rechosen<R: Rng + ?Sized>(
    engine: &Engine,
    trajectory: &mut Trajectory,
    bandit: &StrategyBandit,
    reweighted: bool,
    rng: &mut R,
) -> Steering {
    if !reweighted {
        return Steering::Continue;
    }
    match engine.rechoose(trajectory, bandit, rng) {
        Ok(choice) => Steering::Next(choice),
        Err(e) => {
            tracing::warn!(error = %e, "could not choose again after a policy change");
            Steering::Continue
        }
    }
}

/// What the coordinator does after a supervised iteration: applies the
/// directive ([`apply`]), then its own auto-stop — `D` has not fallen for
/// `max_stagnation_steps`, which, like a hopeless STOP, starts over while
/// it can ([`abandon`]) — keeps the track's books, and changes `decision`
/// (its next strategy, or its end) to what all that made of it.
#[allow(clippy::too_many_arguments)]
pub fn steer<R: Rng + ?Sized>(
    engine: &Engine,
    trajectory: &mut Trajectory,
    bandit: &StrategyBandit,
    track: &mut SupervisionTrack,
    directive: &Directive,
    diagnostics: &OptimizerDiagnostics,
    config: &AsoConfig,
    decision: &mut Decision,
    rng: &mut R,
) -> Applied {
    let mut applied = apply(engine, trajectory, bandit, directive, diagnostics, rng);
    if !matches!(applied.steering, Steering::Stop(_)) && track.stagnation_count >= config.max_stagnation_steps {
        let reason = format!(
            "stagnated: the distance to the intent has not fallen in {} supervised iterations",
            track.stagnation_count
        );
        match abandon(engine, trajectory, bandit, &reason, true, rng) {
            Ok(steering) => applied.steering = steering,
            Err(e) => applied.refused.push(format!("auto-stop: {e}")),
        }
    }
    *track.actions.entry(directive.action.as_str().to_string()).or_default() += 1;
    match &applied.steering {
        Steering::Continue => {}
        Steering::Next(choice) => {
            if choice.kind == StrategyKind::FreshStart {
                // A restart, or an abandoned attempt replaced: either way a
                // new start whose success the recovery rate counts.
                track.restarts += 1;
                track.restarted_at = Some(track.steps);
                track.stagnation_count = 0;
            }
            decision.next = Some(choice.clone());
        }
        Steering::Stop(control) => {
            decision.next = None;
            decision.loop_control = control.clone();
        }
    }
    applied
}

/// The coordinator's parts one agent run shares across its trajectories:
/// the tiered supervisor, its configuration and context, and where the
/// telemetry goes.
pub struct AgentSupervision {
    pub supervisor: Arc<TieredSupervisor>,
    pub config: AsoConfig,
    pub context: SupervisionContext,
    /// The store and the experiment the telemetry rows belong to.
    pub telemetry: Option<(Store, i64)>,
}

impl AgentSupervision {
    /// Writes the step's `aso_telemetry` row; `evals_used` is the
    /// trajectory's iterations so far (an agent's evaluations).
    pub async fn record(
        &self,
        trajectory_id: &str,
        d: &OptimizerDiagnostics,
        supervised: &Supervised,
        applied: &Applied,
        evals_used: u64,
        wall_time_ms: f64,
    ) {
        let Some((store, experiment_id)) = &self.telemetry else {
            return;
        };
        let mut diagnostics = serde_json::to_value(d).unwrap_or_default();
        diagnostics["trajectory"] = serde_json::json!(trajectory_id);
        let mut directive = serde_json::to_value(&supervised.directive).unwrap_or_default();
        directive["applied"] = serde_json::json!(match &applied.steering {
            Steering::Continue => "engine's choice".to_string(),
            Steering::Next(c) => format!("next: {}", c.kind),
            Steering::Stop(control) => format!("end: {}", control.name()),
        });
        if !applied.refused.is_empty() {
            directive["refused"] = serde_json::json!(applied.refused);
        }
        if let Some(e) = &supervised.llm_error {
            directive["llm_error"] = serde_json::json!(e);
        }
        let row = TelemetryRow {
            id: 0,
            timestamp: crate::now_rfc3339(),
            experiment_id: *experiment_id,
            cycle: i64::from(self.context.cycle),
            trajectory_id: i64::from(d.trajectory_id),
            step: i64::from(d.step),
            status: d.status.as_str().to_string(),
            objective: d.objective.is_finite().then_some(d.objective),
            max_violation: d.max_violation.is_finite().then_some(d.max_violation),
            directive_action: supervised.directive.action.as_str().to_string(),
            directive_source: supervised.directive.source.as_str().to_string(),
            evals_used: i64::try_from(evals_used).unwrap_or(i64::MAX),
            wall_time_ms: Some(wall_time_ms),
            llm_call_made: supervised.llm_call_made,
            diagnostics_json: Some(diagnostics.to_string()),
            directive_json: Some(directive.to_string()),
        };
        // Telemetry is an observer: losing a row must not stop the trajectory.
        if let Err(e) = store.insert_telemetry(&[row]).await {
            tracing::warn!(error = %e, "could not record an aso_telemetry row");
        }
    }
}
