//! One trajectory of the coordinator: its state between steps (the State of
//! argmin's shape), how it ended and why, the bookkeeping of its progress,
//! its own termination test over a window of steps, and how a directive's
//! overrides are applied to it under the safety clamps.

use serde::Serialize;

use super::config::AsoConfig;
use super::diagnostics::{OptimizerDiagnostics, Snapshot, Status};
use super::directive::Directive;
use crate::numeric::alm::{AlmSettings, AlmState, Candidate};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrajectoryStatus {
    Active,
    Converged,
    Stagnated,
    Abandoned,
}

/// Why a trajectory stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrajectoryStop {
    /// A supervisor said STOP (its reasoning is in the telemetry).
    Directive,
    /// The solver's iterate stopped moving while feasible, or the
    /// population collapsed onto one point.
    Stationary,
    /// Feasible, with the objective and the best point unchanged over the
    /// last `stop_window` steps.
    Flat,
    /// Feasible at a minimum an earlier trajectory ended at (the same value
    /// and nearly the same point): going on would only find it again.
    KnownMinimum,
    /// Its SQP descent ended without settling, and the settings end a
    /// trajectory there (`unsettled_descent: end`).
    Unsettled,
    /// `max_stagnation_steps` steps without progress.
    Stagnation,
    /// Its share of the evaluations ran out.
    Budget,
    Interrupted,
    /// The evaluator failed, or the solver could not go on.
    Failed,
}

/// What drives a trajectory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrajectoryKind {
    /// An SQP descent from one seed, finished with an SQP polish unless it
    /// settled (with `unsettled_descent: alm`, the ALM goes on from its
    /// best point first).
    Local,
    /// Differential evolution with the ε comparison, its best point polished.
    Population,
}

/// One trajectory's state between steps.
#[derive(Debug, Clone)]
pub struct TrajectoryState {
    pub id: u32,
    pub kind: TrajectoryKind,
    pub seed: Vec<f64>,
    pub history: Vec<Snapshot>,
    pub evals_used: u64,
    pub steps: u32,
    pub status: TrajectoryStatus,
    pub best_objective: f64,
    pub best_violation: f64,
    pub stagnation_count: u32,
    pub steps_in_feasible_region: u32,
    pub restarts: u32,
    /// Restarts after which this trajectory reached feasibility.
    pub restarts_recovered: u32,
    pub best: Option<Candidate>,
    /// The trajectory's own ALM settings (directives change them).
    pub settings: AlmSettings,
    pub exploration_ratio: f64,
    /// Why it stopped, once it has.
    pub stop: Option<TrajectoryStop>,
    /// It started near the best point known (a hop), not from a global seed.
    pub around_best: bool,
    /// It started on the surface of a constraint active at the best point,
    /// not from a global seed.
    pub on_boundary: bool,
    /// The last judged steps (objective, feasible, best point), for the
    /// flat-window test.
    recent: Vec<(f64, bool, Option<Vec<f64>>)>,
}

impl TrajectoryState {
    pub fn new(id: u32, seed: Vec<f64>, settings: AlmSettings) -> Self {
        TrajectoryState {
            id,
            kind: TrajectoryKind::Local,
            seed,
            history: Vec::new(),
            evals_used: 0,
            steps: 0,
            status: TrajectoryStatus::Active,
            best_objective: f64::INFINITY,
            best_violation: f64::INFINITY,
            stagnation_count: 0,
            steps_in_feasible_region: 0,
            restarts: 0,
            restarts_recovered: 0,
            best: None,
            settings,
            exploration_ratio: 1.0,
            stop: None,
            around_best: false,
            on_boundary: false,
            recent: Vec::new(),
        }
    }

    /// A population trajectory (its members are drawn when it starts).
    pub fn population(id: u32, settings: AlmSettings) -> Self {
        TrajectoryState { kind: TrajectoryKind::Population, ..TrajectoryState::new(id, vec![], settings) }
    }

    /// Starts the flat-window test over (after a restart).
    pub(super) fn forget_window(&mut self) {
        self.recent.clear();
    }

    /// Ends the trajectory with `status` for `why`.
    pub(super) fn end(&mut self, status: TrajectoryStatus, why: TrajectoryStop) {
        self.status = status;
        self.stop = Some(why);
    }

    /// How a trajectory that ends on its own account ends: converged when
    /// its best point is feasible at `tol`, else stagnated.
    pub(super) fn status_at_end(&self, tol: f64) -> TrajectoryStatus {
        if self.best.as_ref().is_some_and(|b| b.max_violation <= tol) {
            TrajectoryStatus::Converged
        } else {
            TrajectoryStatus::Stagnated
        }
    }

    /// Whether, after this judged step, the last `window` steps were all
    /// feasible and changed neither the objective (relative to its size)
    /// nor the best point (relative to each variable's range) beyond the
    /// tolerances: the trajectory has converged as far as it will.
    pub(super) fn flat(&mut self, d: &OptimizerDiagnostics, bounds: &[(f64, f64)], c: &AsoConfig) -> bool {
        let window = c.stop_window as usize;
        if window == 0 {
            return false;
        }
        self.recent.push((d.objective, d.status == Status::FeasibleFound, self.best.as_ref().map(|b| b.x.clone())));
        if self.recent.len() > window + 1 {
            self.recent.remove(0);
        }
        let (Some(first), Some(last)) = (self.recent.first(), self.recent.last()) else { return false };
        if self.recent.len() <= window || !self.recent.iter().all(|r| r.1) {
            return false;
        }
        let objective_still = (last.0 - first.0).abs() <= c.stop_objective_tolerance * last.0.abs().max(1.0);
        let point_still = match (&first.2, &last.2) {
            (Some(a), Some(b)) => a
                .iter()
                .zip(b)
                .zip(bounds)
                .all(|((a, b), (lo, hi))| (a - b).abs() <= c.stop_step_tolerance * (hi - lo).abs().max(1e-300)),
            _ => false,
        };
        objective_still && point_still
    }

    /// The seed's bookkeeping of progress after a judged step: a lower
    /// violation, or a lower objective at no higher violation, resets the
    /// stagnation count; anything else adds to it.
    pub(super) fn note_progress(&mut self, d: &OptimizerDiagnostics) {
        if d.max_violation < self.best_violation {
            self.best_violation = d.max_violation;
            self.stagnation_count = 0;
        } else if d.objective < self.best_objective && d.max_violation <= self.best_violation {
            self.best_objective = d.objective;
            self.stagnation_count = 0;
        } else {
            self.stagnation_count += 1;
        }
        if d.status == Status::FeasibleFound {
            self.steps_in_feasible_region += 1;
        }
    }
}

/// How one trajectory ended.
#[derive(Debug, Clone, Serialize)]
pub struct TrajectorySummary {
    pub id: u32,
    pub kind: TrajectoryKind,
    pub status: TrajectoryStatus,
    pub steps: u32,
    pub evals_used: u64,
    pub restarts: u32,
    pub restarts_recovered: u32,
    pub best: Option<Candidate>,
    pub feasible: bool,
    pub stop: TrajectoryStop,
    pub around_best: bool,
    /// Started on a constraint's surface (see [`TrajectoryState::on_boundary`]).
    pub on_boundary: bool,
}

/// Applies a directive's overrides under the safety clamps (seed 000
/// `_apply_directive`). A part that cannot be applied is logged and skipped,
/// never fatal; returns how many parts were refused.
pub fn apply_directive(
    d: &Directive,
    state: &mut AlmState,
    traj: &mut TrajectoryState,
    config: &AsoConfig,
    names: &(Vec<String>, Vec<String>),
) -> u32 {
    let Some(o) = &d.config_overrides else { return 0 };
    let mut rejected = 0;
    if o.agent.is_some() {
        tracing::warn!("ignoring agent overrides in a directive for a numeric trajectory");
        rejected += 1;
    }
    if let Some(weights) = &o.constraint_weights {
        for (name, w) in weights {
            if !w.is_finite() || *w <= 0.0 {
                tracing::warn!(constraint = %name, weight = w, "ignoring a constraint weight that is not a positive number");
                rejected += 1;
                continue;
            }
            let w = w.min(config.max_constraint_weight);
            if !state.raise_penalty(name, w, config.max_penalty_parameter, (&names.0, &names.1)) {
                tracing::warn!(constraint = %name, "ignoring a weight for a constraint this problem does not have");
                rejected += 1;
            }
        }
    }
    if let Some(alm) = &o.alm_settings {
        match alm.penalty_parameters_increase_factor {
            Some(f) if f.is_finite() && f > 0.0 => {
                traj.settings.penalty_parameters_increase_factor = f.clamp(1.0, 100.0)
            }
            Some(f) => {
                tracing::warn!(value = f, "ignoring penalty_parameters_increase_factor");
                rejected += 1;
            }
            None => {}
        }
        match alm.bounds_reduction_factor {
            Some(f) if f.is_finite() && f > 0.0 => traj.settings.bounds_reduction_factor = f.clamp(0.5, 1.0),
            Some(f) => {
                tracing::warn!(value = f, "ignoring bounds_reduction_factor");
                rejected += 1;
            }
            None => {}
        }
    }
    if let Some(r) = o.proposal_mix.as_ref().and_then(|m| m.exploration_ratio) {
        if r.is_finite() {
            traj.exploration_ratio = r.clamp(0.0, 1.0);
        } else {
            rejected += 1;
        }
    }
    traj.settings.max_penalty = config.max_penalty_parameter;
    rejected
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(objective: f64, status: Status) -> OptimizerDiagnostics {
        OptimizerDiagnostics {
            step: 1,
            trajectory_id: 0,
            objective,
            objective_delta: None,
            max_violation: 0.0,
            status,
            constraint_diagnostics: vec![],
            optimizer_health: Default::default(),
            narrative: vec![],
            steps_since_improvement: 0,
            steps_in_feasible_region: 0,
        }
    }

    #[test]
    fn a_trajectory_is_flat_after_a_window_of_feasible_steps_that_changed_nothing() {
        let config = AsoConfig { stop_window: 3, ..AsoConfig::default() };
        let bounds = [(0.0, 10.0), (0.0, 10.0)];
        let mut t = TrajectoryState::new(0, vec![1.0, 1.0], AlmSettings::default());
        t.best = Some(Candidate { x: vec![1.0, 2.0], objective: 5.0, max_violation: 0.0 });
        let steps: Vec<bool> = (0..4).map(|_| t.flat(&diag(5.0, Status::FeasibleFound), &bounds, &config)).collect();
        assert_eq!(steps, [false, false, false, true], "three unchanged steps after the first");

        // One infeasible step in the window, or a best point still moving: not flat.
        let mut t = TrajectoryState::new(0, vec![1.0, 1.0], AlmSettings::default());
        t.best = Some(Candidate { x: vec![1.0, 2.0], objective: 5.0, max_violation: 0.0 });
        for status in [Status::FeasibleFound, Status::InProgress, Status::FeasibleFound] {
            assert!(!t.flat(&diag(5.0, status), &bounds, &config));
        }
        assert!(
            !t.flat(&diag(5.0, Status::FeasibleFound), &bounds, &config),
            "the window still holds the infeasible step"
        );
        let mut t = TrajectoryState::new(0, vec![1.0, 1.0], AlmSettings::default());
        for i in 0..5 {
            t.best = Some(Candidate { x: vec![1.0, 2.0 + 1e-3 * f64::from(i)], objective: 5.0, max_violation: 0.0 });
            assert!(!t.flat(&diag(5.0, Status::FeasibleFound), &bounds, &config), "the point moved at step {i}");
        }
        // Off: never.
        let off = AsoConfig { stop_window: 0, ..AsoConfig::default() };
        assert!((0..10).all(|_| !t.flat(&diag(5.0, Status::FeasibleFound), &bounds, &off)));
    }
}
