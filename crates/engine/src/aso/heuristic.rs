//! Tier 1: the rule-based supervisor that answers every step without an LLM
//! (`HeuristicSupervisor`, seed 000 Part 3), with the seven-case tree exactly:
//!
//! 1. FEASIBLE_FOUND and a flat objective → STOP (converged) — flat
//!    relative to the objective's magnitude (the seed's 1e-5 is absolute, so
//!    an objective of 3e4 was never flat), and only once there is a change
//!    to measure (not on a trajectory's first step)
//! 2. FEASIBLE_FOUND and still improving → CONTINUE
//! 3. STAGNATION with a high violation → ADJUST (raise penalties)
//! 4. STAGNATION near feasibility → RESTART (new seed)
//! 5. DIVERGING → STOP (abandon)
//! 6. a constraint getting worse → ADJUST (boost the worst one's weight)
//! 7. otherwise → CONTINUE

use std::collections::BTreeMap;

use super::config::AsoConfig;
use super::diagnostics::{OptimizerDiagnostics, Status, Trend};
use super::directive::{AlmSettingsOverride, ConfigOverrides, Directive, DirectiveAction, DirectiveSource};

/// The factor case 3 sets `penalty_parameters_increase_factor` to.
pub const STAGNATION_PENALTY_FACTOR: f64 = 2.0;

#[derive(Debug, Clone)]
pub struct HeuristicSupervisor {
    config: AsoConfig,
}

impl HeuristicSupervisor {
    pub fn new(config: AsoConfig) -> Self {
        HeuristicSupervisor { config }
    }

    pub fn analyze(&self, d: &OptimizerDiagnostics) -> Directive {
        let h = DirectiveSource::Heuristic;
        match d.status {
            Status::FeasibleFound => {
                // Flat relative to the objective's size, and measured: on a
                // trajectory's first step there is no change to speak of.
                let flat = self.config.stagnation_objective_threshold * d.objective.abs().max(1.0);
                if d.objective_delta.is_some_and(|delta| delta.abs() < flat) {
                    Directive::new(DirectiveAction::Stop, h, "Converged: feasible with stable objective")
                } else {
                    Directive::new(DirectiveAction::Continue, h, "Feasible and still improving")
                }
            }
            Status::Stagnation => {
                if d.max_violation > self.config.stagnation_violation_threshold {
                    Directive::new(
                        DirectiveAction::Adjust,
                        h,
                        format!("Stagnation with high violation ({:.4}), increasing penalties", d.max_violation),
                    )
                    .with_overrides(ConfigOverrides {
                        alm_settings: Some(AlmSettingsOverride {
                            penalty_parameters_increase_factor: Some(STAGNATION_PENALTY_FACTOR),
                            bounds_reduction_factor: None,
                        }),
                        ..ConfigOverrides::default()
                    })
                } else {
                    Directive::new(DirectiveAction::Restart, h, "Stagnation near feasibility, trying new seed")
                }
            }
            Status::Diverging => Directive::new(DirectiveAction::Stop, h, "Trajectory diverging, abandoning"),
            Status::InProgress => {
                let worst = d
                    .constraint_diagnostics
                    .iter()
                    .filter(|c| c.trend == Trend::IncreasingViolation)
                    .max_by(|a, b| a.violation.total_cmp(&b.violation));
                match worst {
                    Some(w) => {
                        let boost = (w.penalty * 2.0).min(self.config.max_constraint_weight);
                        Directive::new(
                            DirectiveAction::Adjust,
                            h,
                            format!("Constraint '{}' worsening, boosting weight", w.name),
                        )
                        .with_overrides(ConfigOverrides {
                            constraint_weights: Some(BTreeMap::from([(w.name.clone(), boost)])),
                            ..ConfigOverrides::default()
                        })
                    }
                    None => Directive::new(DirectiveAction::Continue, h, "Normal progress"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aso::diagnostics::ConstraintDiagnostic;

    fn d(status: Status, objective_delta: f64, max_violation: f64) -> OptimizerDiagnostics {
        let objective_delta = Some(objective_delta);
        OptimizerDiagnostics {
            step: 3,
            trajectory_id: 0,
            objective: 1.0,
            objective_delta,
            max_violation,
            status,
            constraint_diagnostics: vec![],
            optimizer_health: BTreeMap::new(),
            narrative: vec![],
            steps_since_improvement: 0,
            steps_in_feasible_region: 0,
        }
    }

    fn c(name: &str, violation: f64, penalty: f64, trend: Trend) -> ConstraintDiagnostic {
        ConstraintDiagnostic { name: name.into(), violation, penalty, trend, delta: 0.0 }
    }

    fn sup() -> HeuristicSupervisor {
        HeuristicSupervisor::new(AsoConfig::default())
    }

    #[test]
    fn case_1_feasible_and_flat_stops_as_converged() {
        let out = sup().analyze(&d(Status::FeasibleFound, 1e-7, 0.0));
        assert_eq!(out.action, DirectiveAction::Stop);
        assert_eq!(out.source, DirectiveSource::Heuristic);
        assert!(out.reasoning.starts_with("Converged"));
    }

    #[test]
    fn a_first_feasible_step_is_not_converged_whatever_its_objective() {
        // The cantilever beam's telemetry: feasible after one chunk at
        // f = 7.23 (the optimum is 1.34), stopped as converged because the
        // unknown change read as zero.
        let mut first = d(Status::FeasibleFound, 0.0, 0.0);
        first.objective = 7.2268;
        first.objective_delta = None;
        assert_eq!(sup().analyze(&first).action, DirectiveAction::Continue);
    }

    #[test]
    fn flat_is_relative_to_the_objectives_size() {
        let mut big = d(Status::FeasibleFound, -1.0, 0.0);
        big.objective = -30665.5;
        assert_eq!(sup().analyze(&big).action, DirectiveAction::Continue, "1 in 3e4 is still progress");
        big.objective_delta = Some(-0.01);
        assert_eq!(sup().analyze(&big).action, DirectiveAction::Stop, "3e-7 relative is flat (absolute: not)");
    }

    #[test]
    fn case_2_feasible_and_improving_continues() {
        let out = sup().analyze(&d(Status::FeasibleFound, -0.3, 0.0));
        assert_eq!(out.action, DirectiveAction::Continue);
    }

    #[test]
    fn case_3_stagnation_with_high_violation_raises_penalties() {
        let out = sup().analyze(&d(Status::Stagnation, 0.0, 0.2));
        assert_eq!(out.action, DirectiveAction::Adjust);
        let alm = out.config_overrides.unwrap().alm_settings.unwrap();
        assert_eq!(alm.penalty_parameters_increase_factor, Some(2.0));
    }

    #[test]
    fn case_4_stagnation_near_feasibility_restarts() {
        let out = sup().analyze(&d(Status::Stagnation, 0.0, 0.01));
        assert_eq!(out.action, DirectiveAction::Restart);
    }

    #[test]
    fn case_5_diverging_stops() {
        let out = sup().analyze(&d(Status::Diverging, 0.0, 5.0));
        assert_eq!(out.action, DirectiveAction::Stop);
        assert!(out.reasoning.contains("diverging"));
    }

    #[test]
    fn case_6_boosts_the_worst_worsening_constraint_within_the_clamp() {
        let mut diag = d(Status::InProgress, -0.1, 0.5);
        diag.constraint_diagnostics = vec![
            c("g1", 0.2, 30.0, Trend::IncreasingViolation),
            c("g2", 0.5, 40.0, Trend::IncreasingViolation),
            c("g3", 0.9, 10.0, Trend::DecreasingViolation),
        ];
        let out = sup().analyze(&diag);
        assert_eq!(out.action, DirectiveAction::Adjust);
        assert_eq!(out.config_overrides.as_ref().unwrap().constraint_weights.as_ref().unwrap()["g2"], 80.0);
        diag.constraint_diagnostics[1].penalty = 900.0;
        let out = sup().analyze(&diag);
        assert_eq!(
            out.config_overrides.unwrap().constraint_weights.unwrap()["g2"],
            1000.0,
            "clamped to max_constraint_weight"
        );
    }

    #[test]
    fn case_7_otherwise_continues() {
        let mut diag = d(Status::InProgress, -0.1, 0.5);
        diag.constraint_diagnostics = vec![c("g1", 0.2, 30.0, Trend::Stable)];
        let out = sup().analyze(&diag);
        assert_eq!(out.action, DirectiveAction::Continue);
        assert!(out.config_overrides.is_none());
    }
}
