//! What a coordinator run knows between its rounds — the best point, every
//! finished trajectory, the counters its stopping rules read — and those
//! rules: when the hops around the best give way to global starts, when a
//! population trajectory is due, when the run has looked enough. In
//! argmin's terms this is the run's State with its termination test; the
//! coordinator is the executor that plays the rounds.

use super::config::AsoConfig;
use super::round_starts::RoundPlan;
use super::seeds;
use super::stopping::{BasinEvidence, RunStop, agreeing, gained, same};
use super::trajectory::{TrajectoryKind, TrajectoryState, TrajectoryStop, TrajectorySummary};
use crate::numeric::alm::Candidate;

/// Perturbation scales (× each variable's range) of the rounds that start
/// around the best point, cycled: wide hops first, then ever closer looks,
/// down to 1e-4 of the range. The closest ones are what brings g17's runs
/// onto its optimum, which sits on a jump of its piecewise cost where
/// descents stop 1e-4 to 1e-3 above it: 73 of 100 runs against 62 when the
/// cycle ended at 0.003, no other problem changed (bench/HISTORY.md,
/// 2026-11-27).
const HOP_SCALES: [f64; 7] = [0.1, 0.03, 0.01, 0.003, 0.001, 3e-4, 1e-4];

/// A coordinator run between rounds.
#[derive(Default)]
pub(super) struct RunState {
    /// The best point any start, seed or polish has reached.
    pub(super) best: Option<Candidate>,
    /// Every finished trajectory, in the order they finished.
    pub(super) summaries: Vec<TrajectorySummary>,
    /// Evaluations the finished trajectories and the rounds' seeds used.
    pub(super) evals: u64,
    /// Judged steps of the finished trajectories.
    pub(super) steps: u32,
    /// Rounds played (the lead round included).
    pub(super) round: usize,
    /// The id the next trajectory gets.
    pub(super) next_id: u32,
    /// Population trajectories started.
    pub(super) populations: u32,
    /// Rounds in a row that did not improve a feasible best.
    pub(super) stalled_rounds: u32,
    /// Rounds in a row that improved the best by no more than the agreement
    /// tolerance: a gain that small does not pay for a round.
    unpaid_rounds: u32,
    /// Whether the rounds have moved from hops around the best to global
    /// starts only.
    exploring: bool,
    /// Rounds of global starts only, since the hops stopped paying.
    global_rounds: u32,
    /// Boundary starts in a row that found no new minimum
    /// (`dry_boundary_starts` of them end the boundary starts).
    dry_boundary: u32,
}

impl RunState {
    /// Where the next round's starts come from. Hops around the best point
    /// until they stop paying with the best agreed on; then every start is
    /// a global one (beside a few on the active constraints while those find
    /// new minima: `dry_boundary_starts`), which is what the estimate of
    /// unseen minima counts.
    pub(super) fn plan(&self, tol: f64, c: &AsoConfig) -> RoundPlan {
        let feasible_best = self.best.as_ref().filter(|b| b.max_violation <= tol).map(|b| b.x.clone());
        match feasible_best {
            Some(center) if !self.exploring => {
                RoundPlan::Hops { center, scale: HOP_SCALES[self.round.saturating_sub(1) % HOP_SCALES.len()] }
            }
            Some(at) if c.dry_boundary_starts == 0 || self.dry_boundary < c.dry_boundary_starts => {
                RoundPlan::Boundary { at, turn: self.global_rounds as usize }
            }
            Some(_) | None => RoundPlan::Global,
        }
    }

    /// Whether the next round's starts are all global ones.
    pub(super) fn exploring(&self) -> bool {
        self.exploring
    }

    /// A round's evaluated seeds: the best of them may be the best point yet.
    pub(super) fn seeded(&mut self, seeds: &[seeds::Seed], tol: f64) {
        for (s, _) in seeds {
            if self.best.as_ref().is_none_or(|cur| s.better_than(cur, tol)) {
                self.best = Some(s.clone());
            }
        }
    }

    /// Adds a finished trajectory to the run's totals, best point and summaries.
    pub(super) fn absorb(&mut self, t: TrajectoryState, tol: f64, c: &AsoConfig) {
        self.evals += t.evals_used;
        self.steps += t.steps;
        if let Some(b) = &t.best
            && self.best.as_ref().is_none_or(|cur| b.better_than(cur, tol))
        {
            self.best = Some(b.clone());
        }
        if t.on_boundary {
            self.dry_boundary =
                if self.found_new_minimum(&t, tol, c.agreement_tolerance) { 0 } else { self.dry_boundary + 1 };
        }
        self.summaries.push(TrajectorySummary {
            id: t.id,
            kind: t.kind,
            status: t.status,
            steps: t.steps,
            evals_used: t.evals_used,
            restarts: t.restarts,
            restarts_recovered: t.restarts_recovered,
            feasible: t.best.as_ref().is_some_and(|b| b.max_violation <= tol),
            stop: t.stop.unwrap_or(TrajectoryStop::Budget),
            around_best: t.around_best,
            on_boundary: t.on_boundary,
            best: t.best,
        });
    }

    /// Whether `t` settled, feasible, on a value no finished trajectory
    /// ended at (within `tolerance`, relative): a boundary start that did
    /// pays for the next. One that stopped unsettled found nothing — the
    /// pressure vessel's stuck descents end at values all their own.
    fn found_new_minimum(&self, t: &TrajectoryState, tol: f64, tolerance: f64) -> bool {
        let settled = matches!(t.stop, Some(TrajectoryStop::Stationary | TrajectoryStop::Flat));
        let Some(end) = t.best.as_ref().filter(|b| settled && b.max_violation <= tol) else { return false };
        !self
            .summaries
            .iter()
            .any(|s| s.feasible && s.best.as_ref().is_some_and(|b| same(b.objective, end.objective, tolerance)))
    }

    /// After a round whose starts were all global (`all_global`) or not,
    /// with the best point `before` it finished: the counters the stopping
    /// rules read. Once enough trajectories ended on the best value and the
    /// hops around it have stopped paying, the starts turn global.
    pub(super) fn after_round(&mut self, before: Option<&Candidate>, all_global: bool, tol: f64, c: &AsoConfig) {
        let feasible = self.best.as_ref().is_some_and(|b| b.max_violation <= tol);
        let improved = gained(self.best.as_ref(), before, tol, 1e-9);
        self.stalled_rounds = if improved || !feasible { 0 } else { self.stalled_rounds + 1 };
        let paid = gained(self.best.as_ref(), before, tol, c.agreement_tolerance);
        self.unpaid_rounds = if paid || !feasible { 0 } else { self.unpaid_rounds + 1 };
        // A better best is a new place to hop around.
        if paid {
            self.exploring = false;
            self.global_rounds = 0;
            self.dry_boundary = 0;
        } else if all_global {
            self.global_rounds += 1;
        }
        let agreed =
            agreeing(&self.summaries, self.best.as_ref(), tol, c.agreement_tolerance) >= c.agreement.max(1) as usize;
        if c.stop_after_agreed_rounds > 0 && agreed && self.unpaid_rounds >= c.stop_after_agreed_rounds {
            self.exploring = true;
        }
    }

    /// After a population trajectory, with the best point `before` it: the
    /// rounds take a fresh look around whatever it found.
    pub(super) fn after_population(&mut self, before: Option<&Candidate>, tol: f64, c: &AsoConfig) {
        self.stalled_rounds = 0;
        if gained(self.best.as_ref(), before, tol, c.agreement_tolerance) {
            self.exploring = false;
            self.unpaid_rounds = 0;
            self.global_rounds = 0;
        }
    }

    /// Whether a population trajectory is due now: the rounds stalled (or,
    /// with `population_before_stopping`, are about to stop), or on a
    /// problem in many variables the last round's ends disagreed (`rugged`).
    pub(super) fn population_due(&self, c: &AsoConfig, dimension: usize, rugged: bool) -> bool {
        let by_stall = (self.exploring && c.population_before_stopping)
            || (c.population_after_stalled_rounds > 0 && self.stalled_rounds >= c.population_after_stalled_rounds);
        let by_landscape = c.population_min_dimension > 0
            && dimension >= c.population_min_dimension as usize
            && self.round >= c.population_after_rounds as usize
            && rugged;
        self.populations < c.max_population_trajectories && (by_stall || by_landscape)
    }

    /// Where the run's evaluations went, by kind of start (debug log):
    /// what to look at when a run costs more than it should.
    pub(super) fn log_spending(&self, basins: &BasinEvidence) {
        // Only tallied for someone who reads it: it runs at every run's end.
        if !tracing::enabled!(tracing::Level::DEBUG) {
            return;
        }
        let spent = |keep: &dyn Fn(&TrajectorySummary) -> bool| {
            let ts: Vec<&TrajectorySummary> = self.summaries.iter().filter(|t| keep(t)).collect();
            (ts.len(), ts.iter().map(|t| t.evals_used).sum::<u64>())
        };
        let population = |t: &TrajectorySummary| t.kind == TrajectoryKind::Population;
        let global = spent(&|t| !t.around_best && !t.on_boundary && !population(t));
        let known = spent(&|t| !t.around_best && !t.on_boundary && t.stop == TrajectoryStop::KnownMinimum);
        let hops = spent(&|t| t.around_best);
        let boundary = spent(&|t| t.on_boundary);
        let populations = spent(&population);
        let trajectories: u64 = self.summaries.iter().map(|t| t.evals_used).sum();
        tracing::debug!(
            rounds = self.round,
            evaluations = self.evals,
            ?global,
            ?known,
            ?hops,
            ?boundary,
            ?populations,
            seeds_and_final_polish = self.evals.saturating_sub(trajectories),
            minima = basins.minima,
            starts = basins.starts,
            "run finished (starts, evaluations)"
        );
    }

    /// Whether the run has looked enough: `max_stalled_rounds` rounds
    /// without a better point, or — after at least
    /// `global_rounds_before_stopping` rounds of global starts once the hops
    /// stopped paying (the hop rounds' two global starts each are too few
    /// to find a basin few starts reach, g17's) — the global starts say a
    /// better minimum is unlikely to remain unseen.
    pub(super) fn stop(&self, tol: f64, c: &AsoConfig) -> Option<RunStop> {
        if self.stalled_rounds >= c.max_stalled_rounds.max(1) {
            return Some(RunStop::Stalled);
        }
        if self.exploring && self.global_rounds >= c.global_rounds_before_stopping {
            let evidence = BasinEvidence::of(&self.summaries, tol, c.agreement_tolerance);
            let few_unseen =
                c.max_unseen_minima > 0.0 && evidence.unseen_minima.is_some_and(|u| u < c.max_unseen_minima);
            let better_unlikely = c.max_better_share > 0.0 && evidence.better_share <= c.max_better_share;
            if evidence.unseen_share <= c.max_unseen_share || few_unseen || better_unlikely {
                return Some(RunStop::Explored);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{HOP_SCALES, RunState};
    use crate::aso::config::AsoConfig;
    use crate::aso::round_starts::RoundPlan;
    use crate::aso::trajectory::{TrajectoryState, TrajectoryStop};
    use crate::numeric::alm::{AlmSettings, Candidate};

    /// A finished trajectory that ended, feasible, at `objective`.
    fn ended(id: u32, objective: f64, stop: TrajectoryStop, on_boundary: bool) -> TrajectoryState {
        let mut t = TrajectoryState::new(id, vec![0.0], AlmSettings::default());
        t.best = Some(Candidate { x: vec![objective], objective, max_violation: 0.0 });
        t.stop = Some(stop);
        t.on_boundary = on_boundary;
        t
    }

    /// The defaults, with `dry` boundary starts ending them.
    fn dry(dry_boundary_starts: u32) -> AsoConfig {
        AsoConfig { dry_boundary_starts, ..AsoConfig::default() }
    }

    fn takes_boundary_starts(run: &RunState) -> bool {
        matches!(run.plan(1e-6, &dry(1)), RoundPlan::Boundary { .. })
    }

    #[test]
    fn boundary_starts_go_on_while_they_find_new_minima_and_end_at_the_first_that_does_not() {
        let mut run = RunState { exploring: true, ..RunState::default() };
        run.absorb(ended(0, 2.0, TrajectoryStop::Stationary, false), 1e-6, &dry(1));
        assert!(takes_boundary_starts(&run), "no boundary start yet");
        // A new value pays for the next boundary start.
        run.absorb(ended(1, 1.0, TrajectoryStop::Stationary, true), 1e-6, &dry(1));
        assert!(takes_boundary_starts(&run));
        // One that settles on a value seen before ends them…
        run.absorb(ended(2, 2.0 + 1e-6, TrajectoryStop::Stationary, true), 1e-6, &dry(1));
        assert!(!takes_boundary_starts(&run));
        assert!(matches!(run.plan(1e-6, &dry(0)), RoundPlan::Boundary { .. }), "0: every round takes them");
        assert!(matches!(run.plan(1e-6, &dry(2)), RoundPlan::Boundary { .. }), "two dry ones end them");
    }

    #[test]
    fn a_boundary_start_that_does_not_settle_finds_nothing_new() {
        let mut run = RunState { exploring: true, ..RunState::default() };
        run.absorb(ended(0, 2.0, TrajectoryStop::Stationary, false), 1e-6, &dry(1));
        // The pressure vessel's stuck descents end at values all their own.
        run.absorb(ended(1, 7209.5, TrajectoryStop::Unsettled, true), 1e-6, &dry(1));
        assert!(!takes_boundary_starts(&run));
    }

    #[test]
    fn hops_go_from_wide_to_a_ten_thousandth_of_the_range() {
        assert!(HOP_SCALES.windows(2).all(|w| w[1] < w[0]), "{HOP_SCALES:?}");
        assert_eq!((HOP_SCALES[0], HOP_SCALES[HOP_SCALES.len() - 1]), (0.1, 1e-4));
    }
}
