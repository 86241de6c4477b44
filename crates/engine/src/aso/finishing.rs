//! How trajectories and runs end: the SQP polishes that drive a point to
//! the strict feasibility tolerance, the Gauss–Newton restoration where SLSQP
//! cannot step, and which of two points a polish leaves as the best — so a
//! reported result is feasible at `feasibility_tolerance` and does not sit
//! below the true optimum by riding it. Every evaluation comes from the
//! run's shared pool.

use std::sync::atomic::Ordering;

use super::coordinator::{Coordinator, Shared};
use super::trajectory::TrajectoryState;
use crate::numeric::alm::Candidate;

/// SQP iterations (each about dimension + 1 evaluations) a trajectory's final
/// polish may use.
pub const POLISH_ITERATIONS: u64 = 60;

/// SQP iterations held back from the start for the final polish of the
/// reported best (at most a twentieth of the budget).
pub(super) const FINAL_POLISH_ITERATIONS: u64 = 20;

impl Coordinator {
    /// Polishes from `x`; a better point becomes the trajectory's best.
    /// Whether SLSQP settled at a feasible point (a local minimum, as far
    /// as a gradient method can tell).
    pub(super) async fn polish_into(&self, traj: &mut TrajectoryState, x: &[f64], shared: &Shared) -> bool {
        let Some(p) = self.polish_from(x, shared).await else { return false };
        traj.evals_used += p.evals_used;
        if let Some(b) = p.best.filter(|b| traj.best.as_ref().is_none_or(|cur| self.polished_wins(b, cur))) {
            tracing::debug!(trajectory = traj.id, objective = b.objective, "polish improved the best point");
            traj.best = Some(b);
        }
        p.converged
    }

    /// The reported best, polished once more from where the search left it
    /// and ranked as the polish ranks (at a tenth of the tolerance): a point
    /// that rides the tolerance — feasible by a hair, its objective below
    /// the true optimum — gives way to the converged one. The evaluations used.
    pub(super) async fn finish(&self, best: &mut Option<Candidate>, shared: &Shared) -> u64 {
        let Some(start) = best.clone().filter(|b| b.max_violation > 0.1 * self.tol()) else { return 0 };
        let Some(p) = self.polish_from(&start.x, shared).await else { return 0 };
        let used = p.evals_used;
        if let Some(b) = p.best.filter(|b| self.polished_wins(b, &start)) {
            tracing::debug!(objective = b.objective, violation = b.max_violation, "the final polish replaced the best");
            *best = Some(b);
            return used;
        }
        // SLSQP could not step from there (at active bounds its linearised
        // constraints can be incompatible): Gauss–Newton onto the constraints.
        let (restored, more) = self.restore_from(&start, shared).await;
        if let Some(b) = restored {
            tracing::debug!(
                objective = b.objective,
                violation = b.max_violation,
                "restored the best onto its constraints"
            );
            *best = Some(b);
        }
        used + more
    }

    /// Gauss–Newton restoration of `start` onto its constraints
    /// ([`crate::numeric::polish::restore`]) from the shared pool: the
    /// restored point if it beats `start` by [`Self::polished_wins`], and
    /// the evaluations used.
    pub(super) async fn restore_from(&self, start: &Candidate, shared: &Shared) -> (Option<Candidate>, u64) {
        let want = 4 * (self.problem.dimension() as u64 + 1);
        let granted = Self::reserve(shared, want);
        if granted == 0 {
            return (None, 0);
        }
        let (problem, x, tol) = (self.problem.clone(), start.x.clone(), self.tol());
        let restored =
            tokio::task::spawn_blocking(move || crate::numeric::polish::restore(problem.as_ref(), &x, granted, tol))
                .await;
        let Ok(r) = restored else {
            shared.pool.fetch_add(granted, Ordering::AcqRel);
            return (None, 0);
        };
        shared.pool.fetch_add(granted.saturating_sub(r.evals_used), Ordering::AcqRel);
        (r.best.filter(|b| self.polished_wins(b, start)), r.evals_used)
    }

    /// Whether a polished point replaces `current`: when it is better at the
    /// strict tolerance, or when it is feasible at a tenth of it where
    /// `current` is not, for an objective at most `agreement_tolerance` ×
    /// max(|objective|, 1) worse — the price of not riding the tolerance. A polish
    /// that failed far from `current` does not replace it.
    fn polished_wins(&self, polished: &Candidate, current: &Candidate) -> bool {
        let (tol, inner) = (self.tol(), 0.1 * self.tol());
        let slack = self.config.agreement_tolerance * current.objective.abs().max(1.0);
        polished.better_than(current, tol)
            || (polished.max_violation <= inner
                && current.max_violation > inner
                && polished.objective <= current.objective + slack)
    }

    /// An SQP polish on the original problem from `x`, with up to
    /// `POLISH_ITERATIONS` iterations' worth of evaluations from the shared
    /// pool (what it does not use goes back).
    pub(super) async fn polish_from(&self, x: &[f64], shared: &Shared) -> Option<crate::numeric::polish::Polished> {
        if *self.cancel.borrow() {
            return None;
        }
        let want = POLISH_ITERATIONS * (self.problem.dimension() as u64 + 1);
        let granted = Self::reserve(shared, want);
        if granted == 0 {
            return None;
        }
        let (problem, x, tol) = (self.problem.clone(), x.to_vec(), self.tol());
        let polished =
            tokio::task::spawn_blocking(move || crate::numeric::polish::polish(problem.as_ref(), &x, granted, tol))
                .await;
        let used = polished.as_ref().map_or(0, |p| p.evals_used);
        shared.pool.fetch_add(granted.saturating_sub(used), Ordering::AcqRel);
        polished.ok()
    }
}
