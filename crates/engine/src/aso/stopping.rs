//! When a whole coordinator run has looked enough: how many trajectories
//! agree on the best value, what the independent starts say about the
//! basins of the feasible region (how many distinct minima they reached, how
//! many and how much of the region probably remain unseen), and whether a
//! round's ends disagree (the landscape evidence for a population) — with
//! the reason a run stopped, in words a person can check.

use serde::{Deserialize, Serialize};

use super::trajectory::{TrajectoryKind, TrajectoryStop, TrajectorySummary};
use crate::numeric::alm::Candidate;

/// Why a whole coordinator run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStop {
    /// The starts spread over the region say a better minimum is unlikely
    /// to remain unseen ([`BasinEvidence`]), after hops around the best had
    /// stopped paying. Older records call it `agreed`.
    #[serde(alias = "agreed")]
    Explored,
    /// `max_stalled_rounds` rounds in a row without a better point.
    Stalled,
    /// The evaluation budget ran out.
    Budget,
    Interrupted,
    /// The evaluator failed, or no point could be evaluated.
    Failed,
}

/// What the independent starts say about the basins of the feasible region
/// (Boender and Rinnooy Kan, 1987: the Bayesian view of multistart, where
/// each start lands in a minimum's region of attraction with a chance equal
/// to that region's share of the space).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BasinEvidence {
    /// Starts from global samples whose local search ended on its own at a
    /// feasible point.
    pub starts: usize,
    /// Distinct values among their ends (within the agreement tolerance).
    pub minima: usize,
    /// The posterior expected number of minima not yet found,
    /// w(N − 1)/(N − w − 2) − w; none while there are too few starts to say
    /// (N ≤ w + 2).
    pub unseen_minima: Option<f64>,
    /// The posterior expected share of the region whose minima no start
    /// has reached, w(w + 1)/(N(N − 1)): the chance that one more start
    /// finds a minimum not seen yet. 1 while N < 2.
    pub unseen_share: f64,
    /// The chance that one more start finds an unseen minimum better than
    /// every one seen: the unseen share times 1/(w + 1), the unseen
    /// minimum's value ranked at random among the w + 1 — w/(N(N − 1)).
    /// 1 while N < 2.
    #[serde(default = "one")]
    pub better_share: f64,
    /// Starts on the surface of an active constraint that ended on their own
    /// at a feasible point: not part of the estimate (it assumes starts
    /// spread over the whole region), told beside it.
    pub boundary_starts: usize,
    /// Distinct values only those reached.
    pub boundary_minima: usize,
}

fn one() -> f64 {
    1.0
}

/// The distinct values of sorted `ends`, within `tolerance` (relative).
fn distinct(ends: &[f64], tolerance: f64) -> Vec<f64> {
    let mut values: Vec<f64> = Vec::new();
    for &v in ends {
        if values.last().is_none_or(|last| !same(*last, v, tolerance)) {
            values.push(v);
        }
    }
    values
}

/// Whether `a` and `b` are one value within `tolerance`, relative to the
/// larger of them (or to 1 near zero).
pub(super) fn same(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * a.abs().max(b.abs()).max(1.0)
}

impl BasinEvidence {
    /// The evidence of `summaries`' independent starts: local trajectories
    /// from global samples (not hops around the best, not the population)
    /// that stopped of their own accord at a feasible point; starts on a
    /// constraint's surface are counted apart.
    pub fn of(summaries: &[TrajectorySummary], tol: f64, tolerance: f64) -> BasinEvidence {
        let ends = |boundary: bool| -> Vec<f64> {
            let mut ends: Vec<f64> = summaries
                .iter()
                .filter(|t| !t.around_best && t.on_boundary == boundary && t.kind != TrajectoryKind::Population)
                .filter(|t| {
                    matches!(
                        t.stop,
                        TrajectoryStop::Directive
                            | TrajectoryStop::Stationary
                            | TrajectoryStop::Flat
                            | TrajectoryStop::KnownMinimum
                    )
                })
                .filter_map(|t| t.best.as_ref().filter(|b| b.max_violation <= tol).map(|b| b.objective))
                .collect();
            ends.sort_by(f64::total_cmp);
            ends
        };
        let (global, boundary) = (ends(false), ends(true));
        let seen = distinct(&global, tolerance);
        let boundary_minima = distinct(&boundary, tolerance)
            .into_iter()
            .filter(|v| !seen.iter().any(|s| same(*s, *v, tolerance)))
            .count();
        let (n, w) = (global.len() as f64, seen.len() as f64);
        let unseen_minima = (n > w + 2.0).then(|| w * (n - 1.0) / (n - w - 2.0) - w);
        let unseen_share = if n < 2.0 { 1.0 } else { (w * (w + 1.0) / (n * (n - 1.0))).min(1.0) };
        let better_share = if n < 2.0 { 1.0 } else { unseen_share / (w + 1.0) };
        BasinEvidence {
            starts: global.len(),
            minima: seen.len(),
            unseen_minima,
            unseen_share,
            better_share,
            boundary_starts: boundary.len(),
            boundary_minima,
        }
    }

    /// "3 distinct minima from 24 starts, 1 more from 3 starts on active
    /// constraints; estimated 2.2% chance that a further start finds one
    /// unseen, 0.5% one better than the best".
    pub fn sentence(&self) -> String {
        let count = |n: usize, one: &str, many: &str| if n == 1 { format!("1 {one}") } else { format!("{n} {many}") };
        let boundary = match (self.boundary_starts, self.boundary_minima) {
            (0, _) => String::new(),
            (b, 0) => format!(", none other from {} on active constraints", count(b, "start", "starts")),
            (b, m) => format!(", {m} more from {} on active constraints", count(b, "start", "starts")),
        };
        format!(
            "{} from {}{boundary}; estimated {} chance that a further start finds one unseen, {} one better than the best",
            count(self.minima, "distinct minimum", "distinct minima"),
            count(self.starts, "start", "starts"),
            percent(self.unseen_share),
            percent(self.better_share)
        )
    }
}

/// A share as a percentage with the digits that matter: 40%, 2.2%, 0.04%.
fn percent(share: f64) -> String {
    let p = 100.0 * share;
    if p >= 10.0 {
        format!("{p:.0}%")
    } else if p >= 0.1 {
        format!("{p:.1}%")
    } else {
        format!("{p:.2}%")
    }
}

/// Why a run stopped, in a sentence: the basin evidence for a run that
/// explored enough, the rule or limit otherwise.
pub fn stop_reason(
    stop: RunStop,
    evidence: &BasinEvidence,
    stalled_rounds: u32,
    evals_used: u64,
    budget: u64,
) -> String {
    match stop {
        RunStop::Explored => evidence.sentence(),
        RunStop::Stalled => {
            format!("{stalled_rounds} rounds of starts in a row found no better point ({})", evidence.sentence())
        }
        RunStop::Budget => {
            format!("the evaluation budget ran out ({evals_used} of {budget} used; {})", evidence.sentence())
        }
        RunStop::Interrupted => "cancelled".to_string(),
        RunStop::Failed => "the problem could not be evaluated".to_string(),
    }
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
            on_boundary: false,
        }
    }

    #[test]
    fn unseen_minima_fall_as_ends_repeat_the_values_found() {
        let ends = |values: &[f64]| -> Vec<TrajectorySummary> { values.iter().map(|v| end(*v, 0.0)).collect() };
        let unseen_minima =
            |e: &[TrajectorySummary], tol, t| BasinEvidence::of(e, tol, t).unseen_minima.unwrap_or(f64::INFINITY);
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
    fn the_unseen_share_falls_with_starts_and_rises_with_minima_found() {
        let ends = |values: &[f64]| -> Vec<TrajectorySummary> { values.iter().map(|v| end(*v, 0.0)).collect() };
        let e = BasinEvidence::of(&ends(&[1.0; 24]), 1e-4, 1e-4);
        assert_eq!((e.starts, e.minima), (24, 1));
        assert!((e.unseen_share - 2.0 / (24.0 * 23.0)).abs() < 1e-12);
        let mut three = vec![1.0; 20];
        three.extend([2.0, 2.0, 3.0, 3.0]);
        let e3 = BasinEvidence::of(&ends(&three), 1e-4, 1e-4);
        assert_eq!(e3.minima, 3);
        assert!(e3.unseen_share > e.unseen_share);
        assert_eq!(
            e3.sentence(),
            "3 distinct minima from 24 starts; estimated 2.2% chance that a further start finds one unseen, 0.5% one better than the best"
        );
        // One of the w + 1 values is the lowest: the unseen one is better
        // than every one seen with a chance 1/(w + 1).
        assert!((e3.better_share - e3.unseen_share / 4.0).abs() < 1e-12);
        assert!((e.better_share - 1.0 / (24.0 * 23.0)).abs() < 1e-12);
        // Infeasible ends and hops around the best are not independent starts.
        let mut mixed = ends(&[1.0, 1.0]);
        mixed.push(end(0.5, 1.0));
        mixed[0].around_best = true;
        let e = BasinEvidence::of(&mixed, 1e-4, 1e-4);
        assert_eq!((e.starts, e.minima, e.unseen_share), (1, 1, 1.0));
        assert_eq!(e.unseen_minima, None);
        assert_eq!(
            BasinEvidence::of(&[], 1e-4, 1e-4).sentence(),
            "0 distinct minima from 0 starts; estimated 100% chance that a further start finds one unseen, 100% one better than the best"
        );
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
