//! When a whole coordinator run has looked enough: how many trajectories
//! agree on the best value, how many local minima their ends leave probably
//! unseen, and whether a round's ends disagree (the landscape evidence for a
//! population) — with the reason a run stopped.

use serde::{Deserialize, Serialize};

use super::trajectory::{TrajectoryKind, TrajectoryStop, TrajectorySummary};
use crate::numeric::alm::Candidate;

/// Why a whole coordinator run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStop {
    /// Enough trajectories agreed on the best value, and rounds since did
    /// not improve it (`stop_after_agreed_rounds`).
    Agreed,
    /// `max_stalled_rounds` rounds in a row without a better point.
    Stalled,
    /// The evaluation budget ran out.
    Budget,
    Interrupted,
    /// The evaluator failed, or no point could be evaluated.
    Failed,
}

/// Whether the best point moved from `before` to `best` by more than
/// `relative` of the objective's size (a first best always counts).
pub(super) fn gained(best: Option<&Candidate>, before: Option<&Candidate>, tol: f64, relative: f64) -> bool {
    match (best, before) {
        (Some(b), Some(prev)) => {
            b.better_than(prev, tol) && (prev.objective - b.objective).abs() > relative * prev.objective.abs().max(1.0)
        }
        (Some(_), None) => true,
        _ => false,
    }
}

/// How many trajectories ended feasible on `best`'s value, within
/// `tolerance` relative to its size.
pub(super) fn agreeing(summaries: &[TrajectorySummary], best: Option<&Candidate>, tol: f64, tolerance: f64) -> usize {
    let Some(best) = best.filter(|b| b.max_violation <= tol) else { return 0 };
    let within = tolerance * best.objective.abs().max(1.0);
    summaries
        .iter()
        .filter_map(|t| t.best.as_ref().filter(|b| b.max_violation <= tol))
        .filter(|b| (b.objective - best.objective).abs() <= within)
        .count()
}

/// How many more local minima there probably are than the trajectories
/// have found: the Bayesian estimate of Boender and Rinnooy Kan (1987) for
/// multistart, ŵ = w(N − 1)/(N − w − 2) with N feasible ends and w distinct
/// end values among them (within `tolerance`, relative), minus w. Infinite
/// until there are enough ends to say (N ≤ w + 2). With one value found it
/// falls below 0.5 at eight ends; every other value found asks for more.
pub(super) fn unseen_minima(summaries: &[TrajectorySummary], tol: f64, tolerance: f64) -> f64 {
    // Independent starts that ended of their own accord: not hops around the
    // best, not the population, not trajectories cut short.
    let mut ends: Vec<f64> = summaries
        .iter()
        .filter(|t| !t.around_best && t.kind != TrajectoryKind::Population)
        .filter(|t| matches!(t.stop, TrajectoryStop::Directive | TrajectoryStop::Stationary | TrajectoryStop::Flat))
        .filter_map(|t| t.best.as_ref().filter(|b| b.max_violation <= tol).map(|b| b.objective))
        .collect();
    ends.sort_by(f64::total_cmp);
    let n = ends.len() as f64;
    let distinct = ends.windows(2).filter(|w| w[1] - w[0] > tolerance * w[0].abs().max(w[1].abs()).max(1.0)).count()
        + usize::from(!ends.is_empty());
    let w = distinct as f64;
    if n <= w + 2.0 {
        return f64::INFINITY;
    }
    w * (n - 1.0) / (n - w - 2.0) - w
}

/// Whether feasible end values of local trajectories disagree beyond
/// rounding (relative 1e-3): they found different optima.
pub(super) fn distinct_optima(ends: &[f64]) -> bool {
    let (min, max) = ends.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
    ends.len() >= 2 && max - min > 1e-3 * min.abs().max(max.abs()).max(1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aso::trajectory::TrajectoryStatus;

    /// A local trajectory from a global start that stopped on its own at
    /// `objective` with `violation`.
    fn end(objective: f64, violation: f64) -> TrajectorySummary {
        TrajectorySummary {
            id: 0,
            kind: TrajectoryKind::Local,
            status: TrajectoryStatus::Converged,
            steps: 1,
            evals_used: 1,
            restarts: 0,
            restarts_recovered: 0,
            best: Some(Candidate { x: vec![], objective, max_violation: violation }),
            feasible: violation <= 1e-4,
            stop: TrajectoryStop::Flat,
            around_best: false,
        }
    }

    #[test]
    fn unseen_minima_fall_as_ends_repeat_the_values_found() {
        let ends = |values: &[f64]| -> Vec<TrajectorySummary> { values.iter().map(|v| end(*v, 0.0)).collect() };
        let one = |n: usize| unseen_minima(&ends(&vec![1.0; n]), 1e-4, 1e-4);
        assert!(one(3).is_infinite(), "three ends of one value prove little");
        assert!(one(7) >= 0.5 && one(8) < 0.5, "{} {}", one(7), one(8));
        // g17's ends: a second value found keeps the estimate up.
        let g17 = [8927.6, 8927.6, 8853.5, 8927.6, 8927.6, 8927.6, 8927.6, 8927.6];
        assert!(unseen_minima(&ends(&g17), 1e-4, 1e-4) >= 0.5);
        // Within the tolerance is one value.
        assert!(unseen_minima(&ends(&[1.0, 1.00001, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]), 1e-4, 1e-4) < 0.5);
    }

    #[test]
    fn agreement_counts_feasible_trajectories_on_the_best_value() {
        let summary = end;
        let best = Candidate { x: vec![], objective: -30665.54, max_violation: 0.0 };
        let ends = [summary(-30665.54, 0.0), summary(-30665.0, 0.0), summary(-30665.545, 0.0), summary(-30666.0, 0.5)];
        assert_eq!(agreeing(&ends, Some(&best), 1e-4, 1e-6), 2, "the infeasible one and the one 0.54 off do not agree");
        assert_eq!(agreeing(&ends, None, 1e-4, 1e-6), 0);
    }

    #[test]
    fn optima_count_as_distinct_beyond_a_relative_thousandth() {
        assert!(distinct_optima(&[-0.30, -0.24, -0.21]));
        assert!(!distinct_optima(&[-30665.5387, -30665.5386]), "rounding, not another optimum");
        assert!(!distinct_optima(&[1.0]), "one end proves nothing");
        assert!(!distinct_optima(&[]));
        assert!(distinct_optima(&[0.0, 1e-3]));
        assert!(!distinct_optima(&[0.0, 0.0]));
    }
}
