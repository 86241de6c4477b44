//! One round of the goal-gradient solver: loss, finite-difference gradient,
//! plateau detection and the directive table.
//!
//! The table (abandon wins whenever `Ω ≥ 0.8`):
//!
//! | ∇L              | D    | P           | directive         |
//! |-----------------|------|-------------|-------------------|
//! | < 0 (improving) | any  | any         | `refine`          |
//! | ≈ 0 (plateau)   | > δ  | ≤ 0.5       | `change_path`     |
//! | ≈ 0 (plateau)   | > δ  | > 0.5       | `break_symmetry`  |
//! | > 0 (worsening) | > δ  | ≤ 0.5       | `refine` (adjust the path) |
//! | > 0 (worsening) | > δ  | > 0.5       | `change_approach` |
//!
//! "≈ 0" is `|∇L| < ε`; a change smaller than that is noise, so it is read as
//! a plateau before its sign is looked at. Rows the seed leaves open — the
//! loss flat or rising while `D ≤ δ` — refine: the result is already close to
//! the intent, and escalating would throw that away. The first round has no
//! previous loss, so `∇L = 0`: a first failure far from the intent is a
//! plateau (never a blind `refine`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::config::GgsConfig;
use super::loss::{
    CriterionMode, CriterionVerdict, Loss, PlausibleRecord, ResourceUse, intent_distance, process_implausibility,
    record_plausible, resource_cost,
};

/// Which way the loss moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gradient {
    /// `∇L ≤ −ε`.
    Improving,
    /// `|∇L| < ε` with `D ≤ δ`: flat, but close to the intent.
    Stable,
    /// `∇L ≥ ε`.
    Worsening,
    /// `|∇L| < ε` with `D > δ`: a local minimum.
    Plateau,
}

pub use crate::domain::convergence::Directive;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureOrigin {
    Logical,
    Environmental,
    Mixed,
}

/// The solver's output for one round: the directive with everything that
/// explains it (seed 003's `PlanDirective`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanDirective {
    /// 1 for the first round.
    pub round: u32,
    pub loss: Loss,
    /// `∇L = L_t − L_{t−1}`; 0 on the first round.
    pub grad_l: f64,
    pub gradient: Gradient,
    pub directive: Directive,
    /// Tools this directive adds to the MUST-NOT set (empty unless it blocks tools).
    pub blocked_tools: Vec<String>,
    /// The criterion that drives `D` most (the first logical failure, verifiable first).
    pub failed_criterion: Option<String>,
    pub failure_class: Option<FailureOrigin>,
    /// `Ω`, repeated for display.
    pub budget_pressure: f64,
    /// Whether `D` was measured this round (else the previous round's `D` was carried).
    pub distance_measured: bool,
    /// Why this directive, in one or two sentences (shown to people and logged).
    pub rationale: String,
}

/// One round as the auditor and the final record see it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub round: u32,
    pub loss: Loss,
    pub grad_l: f64,
    pub directive: Directive,
}

/// What the solver carries from round to round for one task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GgsState {
    /// `L_{t−1}`; `None` before the first round.
    pub prev_loss: Option<f64>,
    /// The last measured `D`, carried into a round where nothing was measured.
    pub prev_distance: Option<f64>,
    pub rounds: u32,
    /// Per plausible criterion: how often judged, how often failed.
    pub plausible: BTreeMap<String, PlausibleRecord>,
    /// Every tool blocked so far in this task (the session's dynamic MUST-NOTs).
    pub blocked_tools: BTreeSet<String>,
    pub history: Vec<RoundRecord>,
}

/// The inputs of one round.
#[derive(Debug, Clone, Copy)]
pub struct RoundInput<'a> {
    pub verdicts: &'a [CriterionVerdict],
    pub resources: ResourceUse,
    /// Tools the attempt of this round used (blocked if the directive demands a new approach).
    pub tools_used: &'a [String],
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GoalGradientSolver {
    pub config: GgsConfig,
}

impl GoalGradientSolver {
    pub fn new(config: GgsConfig) -> Self {
        GoalGradientSolver { config }
    }

    /// Reads the gradient and the directive off the table for given loss parts.
    pub fn classify(&self, grad_l: f64, d: f64, p: f64, omega: f64) -> (Gradient, Directive) {
        let c = &self.config;
        let far = d > c.delta;
        let logical = p > c.p_pivot;
        let gradient = if grad_l.abs() < c.epsilon {
            if far { Gradient::Plateau } else { Gradient::Stable }
        } else if grad_l < 0.0 {
            Gradient::Improving
        } else {
            Gradient::Worsening
        };
        if omega >= c.abandon_omega {
            return (gradient, Directive::Abandon);
        }
        let directive = match gradient {
            Gradient::Improving | Gradient::Stable => Directive::Refine,
            Gradient::Plateau if logical => Directive::BreakSymmetry,
            Gradient::Plateau => Directive::ChangePath,
            Gradient::Worsening if far && logical => Directive::ChangeApproach,
            Gradient::Worsening => Directive::Refine,
        };
        (gradient, directive)
    }

    /// Runs one round: updates `state` and returns the directive.
    pub fn step(&self, state: &mut GgsState, input: RoundInput<'_>) -> PlanDirective {
        let c = &self.config;
        record_plausible(input.verdicts, &mut state.plausible);
        let measured = intent_distance(input.verdicts, &state.plausible);
        // Nothing measured (all environmental): the distance is unknown, not
        // zero; carry the last one, or assume nothing works yet.
        let d = measured.or(state.prev_distance).unwrap_or(1.0);
        let p = process_implausibility(input.verdicts);
        let omega = resource_cost(&input.resources, c);
        let loss = Loss::new(d, p, omega, c);
        let first_round = state.prev_loss.is_none();
        let grad_l = state.prev_loss.map_or(0.0, |prev| loss.l - prev);
        let (gradient, directive) = self.classify(grad_l, d, p, omega);

        let blocked_tools: Vec<String> = if directive.blocks_tools() {
            input.tools_used.iter().cloned().collect::<BTreeSet<_>>().into_iter().collect()
        } else {
            Vec::new()
        };
        state.blocked_tools.extend(blocked_tools.iter().cloned());

        let failed_criterion = input
            .verdicts
            .iter()
            .filter(|v| v.is_logical_failure())
            .min_by_key(|v| v.mode != CriterionMode::Verifiable)
            .map(|v| v.criterion.clone());
        let logical = input.verdicts.iter().any(|v| v.is_logical_failure());
        let environmental = input.verdicts.iter().any(|v| v.is_environmental());
        let failure_class = match (logical, environmental) {
            (true, true) => Some(FailureOrigin::Mixed),
            (true, false) => Some(FailureOrigin::Logical),
            (false, true) => Some(FailureOrigin::Environmental),
            (false, false) => None,
        };

        state.rounds += 1;
        state.prev_loss = Some(loss.l);
        if measured.is_some() {
            state.prev_distance = measured;
        }
        state.history.push(RoundRecord { round: state.rounds, loss, grad_l, directive });

        let mut rationale = self.rationale(gradient, directive, &loss, grad_l);
        if first_round {
            rationale.push_str(" First round: no previous loss, so ∇L is taken as 0.");
        }
        if measured.is_none() {
            rationale.push_str(" Nothing could be measured this round; D carried over.");
        }

        PlanDirective {
            round: state.rounds,
            loss,
            grad_l,
            gradient,
            directive,
            blocked_tools,
            failed_criterion,
            failure_class,
            budget_pressure: omega,
            distance_measured: measured.is_some(),
            rationale,
        }
    }

    fn rationale(&self, gradient: Gradient, directive: Directive, loss: &Loss, grad_l: f64) -> String {
        let c = &self.config;
        match (directive, gradient) {
            (Directive::Abandon, _) => format!(
                "Budget nearly spent (Ω={:.2} ≥ {:.2}): another round costs about as much as the gap; \
                 stop and hand over the partial result.",
                loss.omega, c.abandon_omega
            ),
            (Directive::Refine, Gradient::Improving) => {
                format!("Loss falling (∇L={grad_l:.3}): on the right track, tighten the details.")
            }
            (Directive::Refine, Gradient::Worsening) if loss.d > c.delta => format!(
                "Loss rising (∇L={grad_l:.3}) but the failures are environmental (P={:.2} ≤ {:.2}): \
                 keep the approach, adjust the path.",
                loss.p, c.p_pivot
            ),
            (Directive::Refine, _) => {
                format!("Close to the intent (D={:.2} ≤ δ={:.2}): refine what remains.", loss.d, c.delta)
            }
            (Directive::ChangePath, _) => format!(
                "Plateau (|∇L|={:.3} < ε, D={:.2} > δ) of environmental origin (P={:.2}): \
                 same approach, a different target or parameters.",
                grad_l.abs(),
                loss.d,
                loss.p
            ),
            (Directive::BreakSymmetry, _) => format!(
                "Local minimum (|∇L|={:.3} < ε, D={:.2} > δ, P={:.2}): block the tools tried and demand a \
                 novel approach.",
                grad_l.abs(),
                loss.d,
                loss.p
            ),
            (Directive::ChangeApproach, _) => format!(
                "Loss rising (∇L={grad_l:.3}) with logical failures (P={:.2} > {:.2}): use an explicitly \
                 different approach.",
                loss.p, c.p_pivot
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overseer::FailureClass;

    fn solver() -> GoalGradientSolver {
        GoalGradientSolver::default()
    }

    fn res(replans: u32) -> ResourceUse {
        ResourceUse { replans, max_replans: 10, elapsed_ms: 0, time_budget_ms: Some(1_000_000) }
    }

    fn verdicts(pass: usize, logical: usize, env: usize) -> Vec<CriterionVerdict> {
        let mut v = Vec::new();
        for i in 0..pass {
            v.push(CriterionVerdict::pass(format!("ok{i}"), CriterionMode::Verifiable));
        }
        for i in 0..logical {
            v.push(CriterionVerdict::fail(format!("bad{i}"), CriterionMode::Verifiable, FailureClass::Logical, "no"));
        }
        for i in 0..env {
            v.push(CriterionVerdict::fail(
                format!("env{i}"),
                CriterionMode::Verifiable,
                FailureClass::Environmental,
                "",
            ));
        }
        v
    }

    #[test]
    fn an_improving_gradient_refines_whatever_d_and_p_are() {
        assert_eq!(solver().classify(-0.2, 0.9, 1.0, 0.1), (Gradient::Improving, Directive::Refine));
        assert_eq!(solver().classify(-0.2, 0.1, 0.0, 0.1), (Gradient::Improving, Directive::Refine));
    }

    #[test]
    fn a_plateau_far_from_the_intent_changes_path_when_environmental() {
        assert_eq!(solver().classify(0.05, 0.6, 0.5, 0.1), (Gradient::Plateau, Directive::ChangePath));
    }

    #[test]
    fn a_plateau_far_from_the_intent_breaks_symmetry_when_logical() {
        assert_eq!(solver().classify(-0.05, 0.6, 0.51, 0.1), (Gradient::Plateau, Directive::BreakSymmetry));
    }

    #[test]
    fn a_worsening_loss_with_environmental_failures_still_refines() {
        assert_eq!(solver().classify(0.2, 0.6, 0.4, 0.1), (Gradient::Worsening, Directive::Refine));
    }

    #[test]
    fn a_worsening_loss_with_logical_failures_changes_approach() {
        assert_eq!(solver().classify(0.2, 0.6, 0.9, 0.1), (Gradient::Worsening, Directive::ChangeApproach));
    }

    #[test]
    fn close_to_the_intent_a_flat_or_rising_loss_only_refines() {
        assert_eq!(solver().classify(0.0, 0.2, 1.0, 0.1), (Gradient::Stable, Directive::Refine));
        assert_eq!(solver().classify(0.3, 0.2, 1.0, 0.1), (Gradient::Worsening, Directive::Refine));
    }

    #[test]
    fn omega_at_the_threshold_abandons_whatever_the_gradient() {
        for (g, d, p) in [(-0.5, 0.9, 1.0), (0.0, 0.9, 0.0), (0.5, 0.1, 1.0)] {
            assert_eq!(solver().classify(g, d, p, 0.8).1, Directive::Abandon);
        }
        assert_ne!(solver().classify(-0.5, 0.9, 1.0, 0.79).1, Directive::Abandon);
    }

    #[test]
    fn the_first_round_is_a_plateau_so_a_far_first_failure_never_refines() {
        let s = solver();
        let mut state = GgsState::default();
        let logical = verdicts(1, 3, 0);
        let d = s.step(&mut state, RoundInput { verdicts: &logical, resources: res(1), tools_used: &[] });
        assert_eq!(d.grad_l, 0.0);
        assert_eq!(d.gradient, Gradient::Plateau);
        assert_eq!(d.directive, Directive::BreakSymmetry);

        let mut state = GgsState::default();
        let env = verdicts(1, 1, 2);
        let d = s.step(&mut state, RoundInput { verdicts: &env, resources: res(1), tools_used: &[] });
        assert_eq!(d.directive, Directive::ChangePath, "{}", d.rationale);
    }

    #[test]
    fn gradient_is_the_difference_of_consecutive_losses() {
        let s = solver();
        let mut state = GgsState::default();
        // Round 1: D = 3/4, P = 1, Ω = 0.6·0.1 = 0.06.
        let r1 = s.step(&mut state, RoundInput { verdicts: &verdicts(1, 3, 0), resources: res(1), tools_used: &[] });
        let l1 = 0.6 * 0.75 + 0.3 * (1.0 - 0.06) * 1.0 + 0.4 * 0.06;
        assert!((r1.loss.l - l1).abs() < 1e-9, "{:?}", r1.loss);
        // Round 2: D = 0, P = 0, Ω = 0.12: L = 0.048, ∇L = 0.048 − l1.
        let r2 = s.step(&mut state, RoundInput { verdicts: &verdicts(4, 0, 0), resources: res(2), tools_used: &[] });
        assert!((r2.loss.l - 0.048).abs() < 1e-9);
        assert!((r2.grad_l - (0.048 - l1)).abs() < 1e-9);
        assert_eq!(r2.directive, Directive::Refine);
        assert_eq!(state.rounds, 2);
        assert_eq!(state.history.len(), 2);
    }

    #[test]
    fn breaking_symmetry_blocks_the_tools_of_the_failing_attempt() {
        let s = solver();
        let mut state = GgsState::default();
        let tools = vec!["sed".to_string(), "cargo".to_string(), "sed".to_string()];
        let d = s.step(&mut state, RoundInput { verdicts: &verdicts(0, 2, 0), resources: res(1), tools_used: &tools });
        assert_eq!(d.directive, Directive::BreakSymmetry);
        assert_eq!(d.blocked_tools, vec!["cargo".to_string(), "sed".to_string()]);
        assert!(state.blocked_tools.contains("sed"));
    }

    #[test]
    fn changing_path_or_refining_blocks_no_tools() {
        let s = solver();
        let mut state = GgsState::default();
        let tools = vec!["curl".to_string()];
        let d = s.step(&mut state, RoundInput { verdicts: &verdicts(0, 1, 2), resources: res(1), tools_used: &tools });
        assert_eq!(d.directive, Directive::ChangePath);
        assert!(d.blocked_tools.is_empty());
        assert!(state.blocked_tools.is_empty());
    }

    #[test]
    fn a_round_with_only_environmental_failures_carries_the_last_distance() {
        let s = solver();
        let mut state = GgsState::default();
        s.step(&mut state, RoundInput { verdicts: &verdicts(1, 1, 0), resources: res(1), tools_used: &[] });
        let d = s.step(&mut state, RoundInput { verdicts: &verdicts(0, 0, 2), resources: res(2), tools_used: &[] });
        assert!(!d.distance_measured);
        assert!((d.loss.d - 0.5).abs() < 1e-9);
        assert_eq!(d.loss.p, 0.0);
        assert_eq!(d.failure_class, Some(FailureOrigin::Environmental));
    }
}
