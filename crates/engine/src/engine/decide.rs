//! The engine's step: one observation in, one decision out, no I/O.
//!
//! In the argmin split this is the *solver* step and the [`Trajectory`] is
//! the state; the caller owns the loop (the executor: run the chosen
//! strategy, measure with the overseers, optionally verify intent, call
//! [`Engine::decide`], act on its [`LoopControl`]). A step:
//!
//! 1. records the observation: regressions by test name, metrics against
//!    the previous observation, budget, strategy log;
//! 2. re-estimates context health and classifies the attractor;
//! 3. credits the bandit (unless the strategy was forced, the overseers
//!    could not run, or there is no delta yet);
//! 4. runs one round of the goal-gradient solver on the criteria verdicts;
//! 5. decides loop control;
//! 6. if the loop goes on, picks the next strategy: forced, or the bandit's
//!    pick among the attractor-eligible strategies narrowed by the directive,
//!    minus a strategy whose returns have decayed.
//!
//! All randomness (Thompson sampling) comes from the `rng` passed in, so a
//! seeded generator makes a whole trajectory reproducible.

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::attractor::{AttractorKind, AttractorState, AttractorType, classify};
use super::bandit::{StrategyBandit, StrategyOutcome};
use super::basin::{SetupInputs, SetupPlan, plan_setup};
use super::budget::BudgetExtension;
use super::carry_forward::{CarryForward, extract_carry_forward};
use super::config::EngineConfig;
use super::context::{ContextHealth, context_degradation, estimate_context_health};
use super::control::{BestObservation, LoopControl};
use super::criteria::criteria_of;
use super::effectiveness::{current_streak, should_rotate};
use super::eligibility::{eligible_strategies, narrow_by_directive};
use super::metrics::{compute_metrics, regressions};
use super::model::{ConvergencePhase, Observation, ObservationMetrics, PendingSelection, StrategyEntry, Trajectory};
use super::policy::{InterventionKind, InterventionMode};
use super::strategy::StrategyKind;
use crate::ggs::{
    Directive, GoalGradientSolver, Gradient, NextMoveContext, PartialResult, PlanDirective, ResourceUse, RoundInput,
    ThrashingAlert, detect_thrashing,
};
use crate::workspace::ArtifactReference;

/// Criteria listed at most in a partial result's accomplished/remaining lists.
const MAX_LISTED_CRITERIA: usize = 50;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("trajectory `{id}` has already ended ({phase}); start a new trajectory to try again")]
    Finished { id: String, phase: String },
    #[error(
        "trajectory `{id}` is waiting for a budget extension to be approved or rejected; call \
         Engine::resolve_extension before recording another observation"
    )]
    ExtensionPending { id: String },
    #[error("trajectory `{id}` has no budget extension waiting for an answer")]
    NoPendingExtension { id: String },
    #[error("trajectory `{id}` is not trapped ({phase}); only a trapped trajectory is reopened with a hint")]
    NotTrapped { id: String, phase: String },
    #[error(
        "trajectory `{id}` has already started ({}); start() chooses only the first strategy",
        crate::counted(*.observations, "observation")
    )]
    AlreadyStarted { id: String, observations: usize },
}

/// Where to reset the workspace for `RevertAndBranch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevertTarget {
    pub sequence: u32,
    pub artifact: ArtifactReference,
}

/// The strategy to execute next, with the data it needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyChoice {
    pub kind: StrategyKind,
    /// Chosen by loop control, not the bandit.
    pub forced: bool,
    /// What the bandit chose among (empty when forced).
    pub candidates: Vec<StrategyKind>,
    /// The goal-gradient directive in force, and whether the choice follows it
    /// (false when the attractor's rules overrode it).
    pub directive: Option<Directive>,
    pub directive_honoured: bool,
    /// A strategy left out because its returns had decayed.
    pub rotated_out: Option<StrategyKind>,
    /// For `RevertAndBranch`: the best observation.
    pub revert_to: Option<RevertTarget>,
    /// For `FreshStart`: what the new context receives.
    pub carry_forward: Option<CarryForward>,
    /// Tools the execution must not use.
    pub blocked_tools: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttractorTransition {
    pub from: AttractorKind,
    pub to: AttractorKind,
}

/// Everything one step decided, for the caller and for the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The sequence number given to the observation.
    pub sequence: u32,
    pub metrics: Option<ObservationMetrics>,
    pub level: f64,
    pub attractor: AttractorState,
    /// Set when the attractor kind changed (an intervention point).
    pub transition: Option<AttractorTransition>,
    /// The goal gradient's round: loss, ∇L, directive, rationale.
    pub gradient: PlanDirective,
    /// Strategies the attractor allows now (before the directive narrows them).
    pub eligible: Vec<StrategyKind>,
    /// How the bandit credited the strategy that produced the observation.
    pub bandit_update: Option<StrategyOutcome>,
    pub context_health: ContextHealth,
    pub thrashing: Option<ThrashingAlert>,
    pub loop_control: LoopControl,
    /// The next strategy when the loop goes on.
    pub next: Option<StrategyChoice>,
    /// Tools the next attempts must not use.
    pub blocked_tools: Vec<String>,
}

/// The engine: its configuration and the step functions. Stateless between
/// calls — everything that changes lives in the [`Trajectory`] and the
/// [`StrategyBandit`] the caller passes in.
#[derive(Debug, Clone, Default)]
pub struct Engine {
    pub config: EngineConfig,
}

impl Engine {
    pub fn new(config: EngineConfig) -> Self {
        Engine { config }
    }

    /// SETUP: budget, policy, basin width, cost estimate, mode.
    pub fn setup(&self, inputs: &SetupInputs) -> SetupPlan {
        let c = &self.config;
        plan_setup(inputs, &c.policy, &c.budget, &c.basin, &c.priority, &c.estimate)
    }

    /// Chooses the first strategy (the attractor is still indeterminate).
    pub fn start<R: Rng + ?Sized>(
        &self,
        trajectory: &mut Trajectory,
        bandit: &StrategyBandit,
        rng: &mut R,
    ) -> Result<StrategyChoice, EngineError> {
        self.check_open(trajectory)?;
        if !trajectory.observations.is_empty() {
            return Err(EngineError::AlreadyStarted {
                id: trajectory.id.clone(),
                observations: trajectory.observations.len(),
            });
        }
        trajectory.phase = ConvergencePhase::Iterating;
        let eligible = self.eligible(trajectory);
        Ok(self.select_next(trajectory, bandit, None, &eligible, rng))
    }

    /// Whether to run the LLM intent verifier on the coming observation:
    /// always the first, then every `intent_verification_frequency`th.
    pub fn should_verify(&self, trajectory: &Trajectory) -> bool {
        let iteration = trajectory.observations.len() as u32;
        iteration == 0 || iteration.is_multiple_of(trajectory.policy.intent_verification_frequency.max(1))
    }

    /// The carry-forward a fresh start would get now (also the context of a
    /// human escalation).
    pub fn carry_forward(&self, trajectory: &Trajectory) -> Option<CarryForward> {
        extract_carry_forward(trajectory, &self.config.level)
    }

    /// Records `observation` and decides what happens next.
    pub fn decide<R: Rng + ?Sized>(
        &self,
        trajectory: &mut Trajectory,
        bandit: &mut StrategyBandit,
        observation: Observation,
        rng: &mut R,
    ) -> Result<Decision, EngineError> {
        self.check_open(trajectory)?;
        if trajectory.pending_extension.is_some() {
            return Err(EngineError::ExtensionPending { id: trajectory.id.clone() });
        }
        let c = &self.config;
        trajectory.phase = ConvergencePhase::Iterating;

        // 1. Record.
        let pending = trajectory.pending.take();
        let mut obs = observation;
        obs.sequence = trajectory.observations.len() as u32;
        // An observation of a strategy other than the one chosen was the
        // caller's choice, not the bandit's: it is not credited either.
        let was_forced = pending.as_ref().is_none_or(|p| p.forced || p.strategy != obs.strategy_used);
        let context_at_selection = pending.map_or(trajectory.attractor_state.kind(), |p| p.attractor);
        let prev = trajectory.observations.last();
        // The most tests any earlier iteration counted: fewer now means
        // some went missing (a test file emptied, tests no longer collected).
        let earlier = || trajectory.observations.iter().filter_map(|o| o.overseer_signals.test_results.as_ref());
        // The baseline (iteration 0) counts as the first of them.
        let baseline = trajectory.test_baseline.as_ref().filter(|b| b.has_evidence());
        let most_tests = earlier().map(|t| t.total).chain(baseline.map(|b| b.total)).max().unwrap_or(0);
        // Skips the suite had from the start are its own; more are new.
        let fewest_skips = earlier().map(|t| t.skipped).chain(baseline.map(|b| b.skipped)).min();
        if baseline.is_some() && obs.overseer_signals.test_results.is_none() {
            // No test evidence now, where the baseline had some: every test
            // it counted is gone (a process ended at import says nothing).
            obs.overseer_signals.test_results = Some(crate::overseer::signals::TestResults::default());
        }
        if let Some(t) = obs.overseer_signals.test_results.as_mut() {
            t.regression_count = regressions(prev.and_then(|p| p.overseer_signals.test_results.as_ref()), t);
            t.missing = most_tests.saturating_sub(t.total);
            t.new_skips = fewest_skips.map_or(0, |f| t.skipped.saturating_sub(f));
            t.judgement = baseline.map(|b| crate::overseer::baseline::judge(b, Some(t)));
        }
        obs.metrics = prev.map(|p| compute_metrics(p, &obs, &trajectory.context_health, &c.delta, &c.level));
        if obs.strategy_used == StrategyKind::FreshStart {
            trajectory.total_fresh_starts += 1;
            trajectory.context_start = obs.sequence as usize;
        }
        trajectory.budget.consume(obs.tokens_used, obs.wall_time_ms);
        trajectory.strategy_log.push(StrategyEntry {
            strategy_kind: obs.strategy_used,
            observation_sequence: obs.sequence,
            convergence_delta_achieved: obs.metrics.map(|m| m.convergence_delta),
            tokens_used: obs.tokens_used,
            was_forced,
            attractor_at_selection: context_at_selection,
        });
        let sequence = obs.sequence;
        let metrics = obs.metrics;
        let level = obs.level(&c.level);
        let unmeasured = obs.overseer_signals.has_environmental_failure();
        let strategy = obs.strategy_used;
        trajectory.observations.push(obs);

        // 2. Context health and attractor.
        trajectory.context_health = estimate_context_health(trajectory, &c.context);
        let previous = trajectory.attractor_state.clone();
        let mut attractor = classify(
            trajectory.context_observations(),
            &c.classification,
            &c.level,
            trajectory.policy.acceptance_threshold,
        );
        let transition = (previous.kind() != attractor.kind())
            .then_some(AttractorTransition { from: previous.kind(), to: attractor.kind() });
        if transition.is_none() && previous.detected_at.is_some() {
            attractor.detected_at = previous.detected_at;
        }
        trajectory.attractor_state = attractor;

        // 3. Learn.
        let bandit_update = match metrics {
            Some(m) if !was_forced && !unmeasured => {
                Some(bandit.update(strategy, context_at_selection, m.convergence_delta, &c.bandit))
            }
            _ => None,
        };

        // 4. Goal gradient.
        let latest = &trajectory.observations[trajectory.observations.len() - 1];
        let criteria = criteria_of(latest);
        let b = &trajectory.budget;
        let resources = ResourceUse {
            replans: b.iterations_used,
            max_replans: b.max_iterations,
            elapsed_ms: b.wall_time_used_ms,
            time_budget_ms: Some(b.max_wall_time_ms),
        };
        let solver = GoalGradientSolver::new(c.ggs.clone());
        let plan = solver.step(
            &mut trajectory.gradient,
            RoundInput { verdicts: &criteria, resources, tools_used: &latest.tools_used },
        );
        // "New approaches are not helping" only when new approaches ran:
        // rounds whose attempts were all retries are not thrashing.
        let thrashing = detect_thrashing(&trajectory.gradient.history, c.ggs.thrashing_repeats).filter(|alert| {
            trajectory.observations.iter().rev().take(alert.repeats as usize).any(|o| {
                o.strategy_used.is_exploration()
                    || matches!(o.strategy_used, StrategyKind::FreshStart | StrategyKind::RevertAndBranch)
            })
        });
        trajectory.last_directive = Some(plan.clone());

        // 5. Loop control.
        let eligible = self.eligible(trajectory);
        let loop_control = self.loop_control(trajectory, &plan, &eligible);

        // 6. Next strategy.
        let next = loop_control.continues().then(|| self.select_next(trajectory, bandit, Some(&plan), &eligible, rng));

        Ok(Decision {
            sequence,
            metrics,
            level,
            attractor: trajectory.attractor_state.clone(),
            transition,
            gradient: plan,
            eligible,
            bandit_update,
            context_health: trajectory.context_health,
            thrashing,
            loop_control,
            next,
            blocked_tools: trajectory.blocked_tools.iter().cloned().collect(),
        })
    }

    /// Answers a pending budget extension. Approved: the budget grows and the
    /// next strategy is chosen. Rejected: the trajectory ends as it would have
    /// without an extension (partial acceptance or exhausted).
    pub fn resolve_extension<R: Rng + ?Sized>(
        &self,
        trajectory: &mut Trajectory,
        bandit: &StrategyBandit,
        approved: bool,
        rng: &mut R,
    ) -> Result<(LoopControl, Option<StrategyChoice>), EngineError> {
        let extension = trajectory
            .pending_extension
            .take()
            .ok_or_else(|| EngineError::NoPendingExtension { id: trajectory.id.clone() })?;
        let plan = trajectory.last_directive.clone();
        if approved {
            trajectory.budget.extend(&extension);
            let eligible = self.eligible(trajectory);
            let next = self.select_next(trajectory, bandit, plan.as_ref(), &eligible, rng);
            return Ok((LoopControl::ExtensionGranted { extension }, Some(next)));
        }
        let abandon = plan.as_ref().is_some_and(|p| p.directive == Directive::Abandon);
        let control = self.conclude(trajectory, plan.as_ref(), abandon && trajectory.budget.has_remaining());
        Ok((control, None))
    }

    /// Reopens a trapped trajectory with a person's hint (the answer to a
    /// human escalation, seed 002 §7.3): the hint joins the specification
    /// and every later prompt, and the next attempt is a forced fresh start —
    /// a clean context carrying the hint, the best signals and what failed —
    /// so the cycle is not re-entered from the conversation that held it.
    pub fn reopen_with_hint<R: Rng + ?Sized>(
        &self,
        trajectory: &mut Trajectory,
        bandit: &StrategyBandit,
        hint: &str,
        rng: &mut R,
    ) -> Result<StrategyChoice, EngineError> {
        if trajectory.phase != ConvergencePhase::Trapped {
            return Err(EngineError::NotTrapped {
                id: trajectory.id.clone(),
                phase: format!("{:?}", trajectory.phase),
            });
        }
        trajectory.add_hint(hint);
        trajectory.phase = ConvergencePhase::Iterating;
        trajectory.forced_strategy = Some(StrategyKind::FreshStart);
        Ok(self.choose_again(trajectory, bandit, rng))
    }

    fn check_open(&self, trajectory: &Trajectory) -> Result<(), EngineError> {
        if trajectory.phase.is_terminal() {
            return Err(EngineError::Finished { id: trajectory.id.clone(), phase: format!("{:?}", trajectory.phase) });
        }
        Ok(())
    }

    /// Sets a chosen strategy aside for good — the caller found it cannot
    /// carry it out (say, the model proposed no usable split for
    /// `Decompose`) — and chooses again under the same directive.
    pub fn set_aside<R: Rng + ?Sized>(
        &self,
        trajectory: &mut Trajectory,
        bandit: &StrategyBandit,
        strategy: StrategyKind,
        rng: &mut R,
    ) -> Result<StrategyChoice, EngineError> {
        self.check_open(trajectory)?;
        trajectory.unavailable.insert(strategy);
        trajectory.pending = None;
        if trajectory.forced_strategy == Some(strategy) {
            trajectory.forced_strategy = None;
        }
        Ok(self.choose_again(trajectory, bandit, rng))
    }

    /// A person declined the escalation chosen next (seed 002 §7.3): it is
    /// never proposed to this trajectory again, and the next strategy is the
    /// bandit's pick among the eligible strategies that are not escalations
    /// (retrying with feedback when none is left).
    pub fn decline_escalation<R: Rng + ?Sized>(
        &self,
        trajectory: &mut Trajectory,
        bandit: &StrategyBandit,
        declined: StrategyKind,
        rng: &mut R,
    ) -> Result<StrategyChoice, EngineError> {
        self.check_open(trajectory)?;
        trajectory.declined.insert(declined);
        trajectory.pending = None;
        let plan = trajectory.last_directive.clone();
        let eligible: Vec<StrategyKind> =
            self.eligible(trajectory).into_iter().filter(|s| !s.is_escalation()).collect();
        Ok(self.select_next(trajectory, bandit, plan.as_ref(), &eligible, rng))
    }

    /// A person stopped the trajectory (a rejected attractor transition):
    /// trapped when it is cycling, else its best result — accepted as
    /// partial when the policy allows, or abandoned with a partial-result
    /// record saying `reason`.
    pub fn stop_by_person(&self, trajectory: &mut Trajectory, reason: &str) -> Result<LoopControl, EngineError> {
        self.check_open(trajectory)?;
        trajectory.pending = None;
        trajectory.forced_strategy = None;
        let plan = trajectory.last_directive.clone();
        if trajectory.attractor_state.kind() == AttractorKind::LimitCycle {
            trajectory.phase = ConvergencePhase::Trapped;
            let partial = self.partial_result(trajectory, plan.as_ref(), reason);
            return Ok(LoopControl::Trapped { best: self.best(trajectory), partial });
        }
        let best = self.best(trajectory);
        if let Some(result) = best
            .as_ref()
            .filter(|b| trajectory.policy.partial_acceptance && b.level >= trajectory.policy.partial_threshold)
        {
            trajectory.phase = ConvergencePhase::Converged;
            return Ok(LoopControl::AcceptedPartial { result: result.clone() });
        }
        trajectory.phase = ConvergencePhase::Exhausted;
        let partial = self.partial_result(trajectory, plan.as_ref(), reason);
        Ok(LoopControl::Abandoned { best, partial })
    }

    /// A person refused the partial result partial acceptance would have
    /// taken (seed 002 §7.3, PartialResult): the trajectory ends exhausted.
    pub fn refuse_partial(&self, trajectory: &mut Trajectory) -> LoopControl {
        trajectory.pending = None;
        trajectory.phase = ConvergencePhase::Exhausted;
        let plan = trajectory.last_directive.clone();
        let partial = self.partial_result(
            trajectory,
            plan.as_ref(),
            "the budget ran out and a person refused the partial result",
        );
        LoopControl::Exhausted { best: self.best(trajectory), partial }
    }

    /// Reopens a trajectory whose partial result a person answered with a
    /// hint: one more budget extension, when the budget still allows one,
    /// and the next strategy. `None` when no extension is left (the partial
    /// result stands).
    pub fn extend_for_hint<R: Rng + ?Sized>(
        &self,
        trajectory: &mut Trajectory,
        bandit: &StrategyBandit,
        hint: &str,
        rng: &mut R,
    ) -> Option<(BudgetExtension, StrategyChoice)> {
        let b = &trajectory.budget;
        if b.extensions_requested >= b.max_extensions {
            return None;
        }
        trajectory.add_hint(hint);
        trajectory.budget.extensions_requested += 1;
        let extension = self.config.budget.extension_for(&trajectory.budget);
        trajectory.budget.extend(&extension);
        trajectory.phase = ConvergencePhase::Iterating;
        Some((extension, self.choose_again(trajectory, bandit, rng)))
    }

    /// Ends a trajectory that cannot start another iteration because the
    /// budget it draws on is spent elsewhere (siblings sharing it took the
    /// last iterations): partial acceptance or exhausted, as when its own
    /// step finds the budget gone.
    pub fn conclude_out_of_budget(&self, trajectory: &mut Trajectory) -> Result<LoopControl, EngineError> {
        self.check_open(trajectory)?;
        trajectory.pending = None;
        let plan = trajectory.last_directive.clone();
        Ok(self.conclude(trajectory, plan.as_ref(), false))
    }

    /// Replaces the chosen next strategy by `kind` — a supervisor's
    /// directive applied as a policy change (the ASO coordinator over agent
    /// trajectories). Refused, leaving the choice as it was, when the
    /// trajectory cannot run `kind`: it is disabled or set aside, a fresh
    /// start with none left, or a split where splitting is off.
    pub fn force_next<R: Rng + ?Sized>(
        &self,
        trajectory: &mut Trajectory,
        bandit: &StrategyBandit,
        kind: StrategyKind,
        rng: &mut R,
    ) -> Result<StrategyChoice, String> {
        self.check_open(trajectory).map_err(|e| e.to_string())?;
        if self.config.disabled_strategies.contains(&kind) || trajectory.unavailable.contains(&kind) {
            return Err(format!("`{kind}` is not available to this trajectory"));
        }
        if kind == StrategyKind::FreshStart && trajectory.total_fresh_starts >= trajectory.policy.max_fresh_starts {
            return Err(format!("no fresh start left ({} used)", trajectory.total_fresh_starts));
        }
        trajectory.pending = None;
        trajectory.forced_strategy = Some(kind);
        Ok(self.choose_again(trajectory, bandit, rng))
    }

    /// Chooses the next strategy again under the same directive — after a
    /// policy change such as a new exploration weight, so it applies now.
    pub fn rechoose<R: Rng + ?Sized>(
        &self,
        trajectory: &mut Trajectory,
        bandit: &StrategyBandit,
        rng: &mut R,
    ) -> Result<StrategyChoice, EngineError> {
        self.check_open(trajectory)?;
        trajectory.pending = None;
        Ok(self.choose_again(trajectory, bandit, rng))
    }

    /// Ends a trajectory a supervisor stopped: its best result is accepted
    /// when partial acceptance allows it, else it ends abandoned with a
    /// partial-result record that says `reason`.
    pub fn stop(&self, trajectory: &mut Trajectory, reason: &str) -> Result<LoopControl, EngineError> {
        self.check_open(trajectory)?;
        trajectory.pending = None;
        trajectory.forced_strategy = None;
        let plan = trajectory.last_directive.clone();
        Ok(match self.conclude(trajectory, plan.as_ref(), true) {
            LoopControl::Abandoned { best, .. } => {
                let partial = self.partial_result(trajectory, plan.as_ref(), reason);
                LoopControl::Abandoned { best, partial }
            }
            other => other,
        })
    }

    /// Chooses the next strategy again, under the directive in force, from
    /// what the trajectory may run now (after a hint, a set-aside, a forced
    /// strategy, a new exploration weight…).
    fn choose_again<R: Rng + ?Sized>(
        &self,
        trajectory: &mut Trajectory,
        bandit: &StrategyBandit,
        rng: &mut R,
    ) -> StrategyChoice {
        let plan = trajectory.last_directive.clone();
        let eligible = self.eligible(trajectory);
        self.select_next(trajectory, bandit, plan.as_ref(), &eligible, rng)
    }

    /// The attractor's eligible strategies, minus those the system cannot run
    /// and those this trajectory set aside.
    fn eligible(&self, trajectory: &Trajectory) -> Vec<StrategyKind> {
        eligible_strategies(trajectory, &trajectory.attractor_state.classification)
            .into_iter()
            .filter(|s| {
                !self.config.disabled_strategies.contains(s)
                    && !trajectory.unavailable.contains(s)
                    && !trajectory.declined.contains(s)
            })
            .collect()
    }

    fn best(&self, trajectory: &Trajectory) -> Option<BestObservation> {
        trajectory.best_observation(&self.config.level).map(|o| BestObservation {
            sequence: o.sequence,
            artifact: o.artifact.clone(),
            level: o.level(&self.config.level),
        })
    }

    fn converged(&self, trajectory: &Trajectory) -> bool {
        let Some(latest) = trajectory.latest() else { return false };
        let level = latest.level(&self.config.level);
        if level < trajectory.policy.acceptance_threshold {
            return false;
        }
        // Security veto, and no acceptance of a state an overseer could not measure.
        // Nor of a state one of our own checks refuses (a protected file
        // changed while the checks ran, a checked anti-pattern, the held-out
        // checks disagreeing): however high the level, with a lenient
        // threshold one failing check among passing tests would pass it.
        if latest.metrics.is_some_and(|m| m.vulnerability_delta > 0)
            || latest.overseer_signals.has_environmental_failure()
            || latest.judged_signals().has_failing_required_check()
        {
            return false;
        }
        match &latest.verification {
            Some(v) if !v.satisfied() => level >= 1.0 || latest.judged_signals().all_passing(),
            _ => true,
        }
    }

    fn loop_control(
        &self,
        trajectory: &mut Trajectory,
        plan: &PlanDirective,
        eligible: &[StrategyKind],
    ) -> LoopControl {
        if self.converged(trajectory) {
            trajectory.phase = ConvergencePhase::Converged;
            let latest = &trajectory.observations[trajectory.observations.len() - 1];
            return LoopControl::Converged {
                result: BestObservation {
                    sequence: latest.sequence,
                    artifact: latest.artifact.clone(),
                    level: latest.level(&self.config.level),
                },
            };
        }

        let exhausted = !trajectory.budget.has_remaining();
        let abandon = plan.directive == Directive::Abandon;
        if exhausted || abandon {
            let b = &trajectory.budget;
            let converging = trajectory.attractor_state.kind() == AttractorKind::FixedPoint;
            if converging
                && b.remaining_fraction() < self.config.budget.extension_trigger_fraction
                && b.extensions_requested < b.max_extensions
            {
                trajectory.budget.extensions_requested += 1;
                let extension = self.config.budget.extension_for(&trajectory.budget);
                let mode =
                    self.config.interventions.mode(trajectory.policy.priority_hint, InterventionKind::BudgetExtension);
                if mode == InterventionMode::Pause {
                    trajectory.pending_extension = Some(extension);
                    return LoopControl::ExtensionRequested { extension };
                }
                trajectory.budget.extend(&extension);
                return LoopControl::ExtensionGranted { extension };
            }
            return self.conclude(trajectory, Some(plan), !exhausted);
        }

        if let Some(reason) = context_degradation(trajectory, &self.config.context) {
            trajectory.forced_strategy = Some(StrategyKind::FreshStart);
            return LoopControl::ForceFreshStart { reason };
        }

        if trajectory.attractor_state.kind() == AttractorKind::LimitCycle && eligible.is_empty() {
            // Every escape inside the context failed: before giving up with
            // budget left, start afresh with only what was learned — as a
            // plateau would.
            if trajectory.total_fresh_starts < trajectory.policy.max_fresh_starts
                && !self.config.disabled_strategies.contains(&StrategyKind::FreshStart)
                && !trajectory.unavailable.contains(&StrategyKind::FreshStart)
            {
                trajectory.forced_strategy = Some(StrategyKind::FreshStart);
                return LoopControl::ForceFreshStart { reason: super::context::Degradation::Cycling };
            }
            trajectory.phase = ConvergencePhase::Trapped;
            let partial = self.partial_result(trajectory, Some(plan), "trapped in a limit cycle, every escape tried");
            return LoopControl::Trapped { best: self.best(trajectory), partial };
        }

        LoopControl::Continue
    }

    /// The end of a trajectory out of budget: partial acceptance or a partial result.
    fn conclude(&self, trajectory: &mut Trajectory, plan: Option<&PlanDirective>, abandoned: bool) -> LoopControl {
        let best = self.best(trajectory);
        if let Some(result) = best
            .as_ref()
            .filter(|b| trajectory.policy.partial_acceptance && b.level >= trajectory.policy.partial_threshold)
        {
            trajectory.phase = ConvergencePhase::Converged;
            return LoopControl::AcceptedPartial { result: result.clone() };
        }
        trajectory.phase = ConvergencePhase::Exhausted;
        if abandoned {
            let partial = self.partial_result(trajectory, plan, "the goal gradient abandoned under budget pressure");
            LoopControl::Abandoned { best, partial }
        } else {
            let partial = self.partial_result(trajectory, plan, "the budget ran out");
            LoopControl::Exhausted { best, partial }
        }
    }

    fn partial_result(&self, trajectory: &Trajectory, plan: Option<&PlanDirective>, reason: &str) -> PartialResult {
        let cap = |mut v: Vec<String>| {
            if v.len() > MAX_LISTED_CRITERIA {
                let more = v.len() - MAX_LISTED_CRITERIA;
                v.truncate(MAX_LISTED_CRITERIA);
                v.push(format!("… and {more} more"));
            }
            v
        };
        let best = trajectory.best_observation(&self.config.level);
        let best_criteria = best.map(criteria_of).unwrap_or_default();
        let passing = cap(best_criteria.iter().filter(|v| v.passed).map(|v| v.criterion.clone()).collect());
        let mut failing: Vec<(String, String)> = best_criteria
            .iter()
            .filter(|v| v.is_logical_failure())
            .map(|v| (v.criterion.clone(), v.evidence.clone()))
            .collect();
        if failing.len() > MAX_LISTED_CRITERIA {
            let more = failing.len() - MAX_LISTED_CRITERIA;
            failing.truncate(MAX_LISTED_CRITERIA);
            failing.push((format!("… and {more} more"), String::new()));
        }
        // What blocks measurement now is what the latest observation met.
        let environmental = trajectory
            .latest()
            .map(criteria_of)
            .unwrap_or_default()
            .into_iter()
            .filter(|v| v.is_environmental())
            .map(|v| (v.criterion, v.evidence))
            .collect();
        let (cycle_period, stalled, converging) = match &trajectory.attractor_state.classification {
            AttractorType::LimitCycle { period, .. } => (Some(*period), false, false),
            AttractorType::Plateau { .. } => (None, true, false),
            AttractorType::FixedPoint { .. } => (None, false, true),
            _ => (None, false, false),
        };
        PartialResult::build(&NextMoveContext {
            reason: reason.to_string(),
            best_level: best.map_or(0.0, |o| o.level(&self.config.level)),
            passing,
            failing,
            environmental,
            still_improving: converging || plan.is_some_and(|p| p.gradient == Gradient::Improving),
            cycle_period,
            stalled,
            blocked_tools: trajectory.blocked_tools.iter().cloned().collect(),
            loss: plan.map(|p| p.loss).unwrap_or_default(),
            grad_l: plan.map_or(0.0, |p| p.grad_l),
            replans: trajectory.gradient.rounds.saturating_sub(1),
        })
    }

    fn select_next<R: Rng + ?Sized>(
        &self,
        trajectory: &mut Trajectory,
        bandit: &StrategyBandit,
        plan: Option<&PlanDirective>,
        eligible: &[StrategyKind],
        rng: &mut R,
    ) -> StrategyChoice {
        let c = &self.config;
        let context = trajectory.attractor_state.kind();
        let directive = plan.map(|p| p.directive);
        let (kind, forced, candidates, honoured, rotated_out) = if let Some(kind) = trajectory.forced_strategy.take() {
            (kind, true, Vec::new(), false, None)
        } else {
            let (mut candidates, honoured) = match directive {
                Some(d) => narrow_by_directive(eligible, d),
                None => (eligible.to_vec(), false),
            };
            // Decay-aware rotation: drop the current streak's strategy once
            // its projected returns fall below the useful minimum.
            let mut rotated_out = None;
            if let Some((current, uses, deltas)) = current_streak(&trajectory.strategy_log)
                && candidates.len() > 1
                && candidates.contains(&current)
                && should_rotate(uses, &deltas, &c.rotation)
            {
                candidates.retain(|s| *s != current);
                rotated_out = Some(current);
            }
            if candidates.is_empty() {
                // Everything eligible is disabled: retrying with feedback is always possible.
                candidates =
                    [StrategyKind::RetryWithFeedback, StrategyKind::RetryAugmented, StrategyKind::FocusedRepair]
                        .into_iter()
                        .filter(|s| !c.disabled_strategies.contains(s) && !trajectory.unavailable.contains(s))
                        .collect();
                if candidates.is_empty() {
                    candidates.push(StrategyKind::RetryWithFeedback);
                }
            }
            let kind = bandit
                .select(context, &candidates, &trajectory.policy, &c.bandit, rng)
                .unwrap_or(StrategyKind::RetryWithFeedback);
            (kind, false, candidates, honoured, rotated_out)
        };

        // Dynamic MUST-NOTs take effect only when the new approach the
        // directive demands is actually taken.
        if let Some(p) = plan.filter(|p| honoured && p.directive.blocks_tools()) {
            trajectory.blocked_tools.extend(p.blocked_tools.iter().cloned());
        }
        let revert_to = (kind == StrategyKind::RevertAndBranch)
            .then(|| trajectory.best_observation(&c.level))
            .flatten()
            .map(|o| RevertTarget { sequence: o.sequence, artifact: o.artifact.clone() });
        let carry_forward =
            (kind == StrategyKind::FreshStart).then(|| extract_carry_forward(trajectory, &c.level)).flatten();
        trajectory.pending = Some(PendingSelection { strategy: kind, forced, attractor: context });
        StrategyChoice {
            kind,
            forced,
            candidates,
            directive,
            directive_honoured: honoured,
            rotated_out,
            revert_to,
            carry_forward,
            blocked_tools: trajectory.blocked_tools.iter().cloned().collect(),
        }
    }
}
