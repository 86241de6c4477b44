//! The multi-trajectory coordinator (seed 000 Part 4): rounds of
//! trajectories run concurrently on a shared evaluation budget until the
//! run has looked enough.
//!
//! Trajectories are of two kinds. *Local* ones descend from a seed with SQP
//! (the ALM after, where the descent needs it); rounds of them are a
//! multistart, later an iterated local search around the best point. A
//! *population* trajectory runs differential evolution with the ε comparison
//! ([`crate::numeric::population`]), polishing its best point as it improves;
//! the coordinator starts one when the rounds stall, or early on a problem in
//! many variables whose local trajectories end in different optima — a
//! rugged landscape, where one basin per start is a losing rate. Both kinds
//! report the same diagnostics, take the same directives and write the same
//! telemetry.
//!
//! In argmin's terms, for the run: this module is the executor (rounds,
//! budget, the final polish), [`super::run_state`] the state and its
//! termination test, `round_starts` where each round's starts come from;
//! for one trajectory: a solver's chunk is the step, [`TrajectoryState`] the
//! state, `drive` the executor and the telemetry writer the observer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use tokio::sync::watch;

use super::config::{AsoConfig, BudgetSplit};
use super::drive::Gate;
use super::finishing::FINAL_POLISH_ITERATIONS;
pub use super::finishing::POLISH_ITERATIONS;
use super::run_state::RunState;
use super::seeds;
use super::solver::{LocalSolver, PopulationSolver};
pub use super::stopping::{BasinEvidence, RunStop};
use super::stopping::{distinct_optima, same, stop_reason};
use super::supervisor::{SupervisionContext, TieredSupervisor};
pub use super::trajectory::{
    TrajectoryKind, TrajectoryState, TrajectoryStatus, TrajectoryStop, TrajectorySummary, apply_directive,
};
use crate::numeric::alm::{AlmSettings, Candidate};
use crate::numeric::polish::{KnownMinima, within_share_of_ranges};
use crate::numeric::problem::Problem;
use crate::store::Store;

/// What a whole coordinator invocation produced.
#[derive(Debug, Clone, Serialize)]
pub struct CoordinatorOutcome {
    pub best: Option<Candidate>,
    pub trajectories: Vec<TrajectorySummary>,
    pub evals_used: u64,
    pub budget: u64,
    pub steps: u32,
    pub llm_calls: u32,
    pub llm_failures: u32,
    /// Directive parts refused by the safety checks.
    pub rejected_directives: u32,
    /// The problem could not be evaluated (e.g. a broken external evaluator).
    pub error: Option<String>,
    pub interrupted: bool,
    pub stop: RunStop,
    /// What the independent starts said about the basins when the run stopped.
    pub basins: BasinEvidence,
    /// Why the run stopped, in a sentence ("1 distinct minimum from 14
    /// starts; estimated 1.1% chance that a further start finds one unseen,
    /// 0.55% one better than the best").
    pub stop_reason: String,
}

impl CoordinatorOutcome {
    /// Share of trajectories that ended feasible (seed 000 §8 "convergence rate").
    pub fn convergence_rate(&self) -> f64 {
        if self.trajectories.is_empty() {
            return 0.0;
        }
        self.trajectories.iter().filter(|t| t.feasible).count() as f64 / self.trajectories.len() as f64
    }
}

/// Everything a coordinator run needs.
pub struct Coordinator {
    pub problem: Arc<dyn Problem>,
    pub config: AsoConfig,
    pub alm: AlmSettings,
    pub supervisor: Arc<TieredSupervisor>,
    pub context: SupervisionContext,
    /// Where telemetry goes (one row per step), with the experiment it belongs to.
    pub telemetry: Option<(Store, i64)>,
    pub seed: u64,
    /// Evaluations per chunk; 0 picks 30 × (dimension + 1).
    pub chunk_evaluations: u64,
    pub cancel: watch::Receiver<bool>,
}

/// Shared across trajectories: what is left of the budget, and counters.
pub(super) struct Shared {
    pub(super) pool: AtomicU64,
    pub(super) rejected: AtomicU64,
    errors: std::sync::Mutex<Option<String>>,
    /// The feasible points local trajectories ended at, polished: the
    /// minima found so far.
    known: std::sync::Mutex<Vec<Candidate>>,
}

impl Shared {
    /// Whether `best` is feasible at `tol` at a minimum a trajectory already
    /// ended at: its value within `tolerance` (relative) and its point
    /// within a thousandth of each variable's range.
    pub(super) fn at_known_minimum(&self, best: &Candidate, tol: f64, tolerance: f64, bounds: &[(f64, f64)]) -> bool {
        if best.max_violation > tol {
            return false;
        }
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.iter().any(|k| {
            same(k.objective, best.objective, tolerance) && within_share_of_ranges(&k.x, &best.x, bounds, 1e-3)
        })
    }

    /// The minima found so far, for a descent to stop at (see
    /// `AsoConfig::join_radius`).
    pub(super) fn known_minima(&self, radius: f64) -> KnownMinima {
        let points = self.known.lock().unwrap_or_else(|p| p.into_inner()).clone();
        KnownMinima { points, radius }
    }

    /// Adds a trajectory's end to the minima found.
    pub(super) fn found(&self, end: Candidate) {
        self.known.lock().unwrap_or_else(|p| p.into_inner()).push(end);
    }

    /// Records why the problem cannot be optimized (every trajectory stops).
    pub(super) fn fail(&self, error: String) {
        *self.errors.lock().unwrap_or_else(|p| p.into_inner()) = Some(error);
    }

    /// Whether a trajectory recorded such an error (a poisoned lock counts).
    pub(super) fn failed(&self) -> bool {
        self.errors.lock().map(|e| e.is_some()).unwrap_or(true)
    }
}

/// Why a round could not start.
enum RoundFailure {
    /// Nothing has run yet: the whole run fails with this error.
    Run(String),
    /// The evaluator failed mid-run: the run stops with what it found.
    Stop,
}

/// What came of a population trajectory's turn between rounds.
enum PopulationRound {
    /// It ran; the rounds go on around whatever it found.
    Played,
    /// The evaluator failed while it ran.
    Failed,
    /// Too little budget is left for ten generations: it did not start.
    TooSmall,
}

impl Coordinator {
    /// The max violation of a feasible result on this problem (the search
    /// itself works to the looser `search_tolerance`).
    pub(super) fn tol(&self) -> f64 {
        self.config.tolerance_for(self.problem.as_ref())
    }

    pub(super) fn chunk(&self) -> u64 {
        if self.chunk_evaluations > 0 { self.chunk_evaluations } else { 30 * (self.problem.dimension() as u64 + 1) }
    }

    /// Runs the trajectories on `budget` evaluations in all (seeds included).
    ///
    /// Rounds of trajectories: when every trajectory of a round has stopped
    /// and budget is left, a new round starts from fresh seeds (multi-start).
    /// Once a feasible point is known, `hops_per_round` of a round's
    /// trajectories start around it (iterated local search); the others
    /// keep exploring the box. The rounds end with the budget, on an
    /// evaluator failure, or when [`RunState::stop`] says the run has looked
    /// enough. Between rounds a population trajectory may run on its own
    /// (see the module doc); the rounds then go on around the best point it
    /// found.
    pub async fn produce_candidates(&self, budget: u64) -> CoordinatorOutcome {
        let n = self.config.round_size();
        let tol = self.tol();
        // Held back for the final polish of the reported best (see `finish`).
        let final_reserve = FINAL_POLISH_ITERATIONS * (self.problem.dimension() as u64 + 1);
        let final_reserve = final_reserve.min(budget / 20);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let shared = Arc::new(Shared {
            pool: AtomicU64::new(budget - final_reserve),
            rejected: AtomicU64::new(0),
            errors: std::sync::Mutex::new(None),
            known: std::sync::Mutex::new(Vec::new()),
        });
        let mut run = RunState::default();
        let mut stop = RunStop::Budget;
        loop {
            let left = shared.pool.load(Ordering::Acquire);
            if *self.cancel.borrow() {
                stop = RunStop::Interrupted;
                break;
            }
            // A round needs its seeds and at least one chunk per trajectory.
            if left < 2 * n as u64 + self.chunk().min(left) {
                break;
            }
            let seed_rng = ChaCha8Rng::seed_from_u64(rng.random());
            let all_global = run.exploring();
            let lead = run.round == 0 && self.config.descents_in_turn && self.config.lead_descent;
            let starts = match self.round_starts(&mut run, lead, seed_rng, &shared).await {
                Ok(starts) => starts,
                Err(RoundFailure::Run(error)) => return self.failed_outcome(budget, error),
                Err(RoundFailure::Stop) => {
                    stop = RunStop::Failed;
                    break;
                }
            };
            let mut finished = self.play_round(starts, &shared, &mut rng).await;
            // No trajectory of the lead round found a start it could evaluate.
            if lead && finished.iter().all(|t| t.best.is_none()) {
                let error = shared.errors.lock().ok().and_then(|e| e.clone());
                return self.failed_outcome(
                    budget,
                    error.unwrap_or_else(|| "no valid seed: the problem gave no finite value at any sample".into()),
                );
            }
            // The evaluator broke during this round: every trajectory of the
            // round ends abandoned, however far it got — which one met the
            // failure first is only a matter of scheduling.
            if shared.failed() {
                finished.iter_mut().for_each(|t| t.end(TrajectoryStatus::Abandoned, TrajectoryStop::Failed));
            }

            let before = run.best.clone();
            // Whether the round's local trajectories ended in different
            // optima: the landscape evidence for a population.
            let ends: Vec<f64> = finished
                .iter()
                .filter_map(|t| t.best.as_ref().filter(|b| b.max_violation <= tol).map(|b| b.objective))
                .collect();
            let rugged = distinct_optima(&ends);
            for t in finished {
                run.absorb(t, tol, &self.config);
            }
            if shared.failed() {
                stop = RunStop::Failed;
                break;
            }
            run.after_round(before.as_ref(), all_global, tol, &self.config);
            tracing::debug!(
                round = run.round,
                evaluations = budget - shared.pool.load(Ordering::Acquire),
                best = run.best.as_ref().map(|b| b.objective),
                stalled_rounds = run.stalled_rounds,
                "round finished"
            );
            // A population gets its look before the run may stop (see
            // `RunState::population_due`): a basin few starts reach, g17's,
            // is missed by any rule that reads only the ends, and there the
            // population is what finds it.
            if run.population_due(&self.config, self.problem.dimension(), rugged) {
                match self.population_round(&mut run, &shared, &mut rng).await {
                    PopulationRound::Played => continue,
                    PopulationRound::Failed => {
                        stop = RunStop::Failed;
                        break;
                    }
                    PopulationRound::TooSmall => {}
                }
            }
            if let Some(why) = run.stop(tol, &self.config) {
                stop = why;
                break;
            }
        }

        shared.pool.fetch_add(final_reserve, Ordering::AcqRel);
        if stop != RunStop::Failed && !shared.failed() {
            run.evals += self.finish(&mut run.best, &shared).await;
        }
        let error = shared.errors.lock().map(|e| e.clone()).unwrap_or_default();
        let stop = if *self.cancel.borrow() { RunStop::Interrupted } else { stop };
        let basins = BasinEvidence::of(&run.summaries, tol, self.config.agreement_tolerance);
        run.log_spending(&basins);
        CoordinatorOutcome {
            stop_reason: stop_reason(stop, &basins, run.stalled_rounds, run.evals, budget),
            basins,
            best: run.best,
            trajectories: run.summaries,
            evals_used: run.evals,
            budget,
            steps: run.steps,
            llm_calls: self.supervisor.llm_calls(),
            llm_failures: self.supervisor.failures(),
            rejected_directives: shared.rejected.load(Ordering::Relaxed) as u32,
            error,
            interrupted: *self.cancel.borrow(),
            stop,
        }
    }

    /// The next round's trajectories, their seeds evaluated and charged to
    /// the run. The first round gives one descent the lead (`lead`): it
    /// evaluates only its own samples and descends at once; the others
    /// evaluate the rest of the round's samples (one batch) when their turns
    /// come, so the first answer does not wait for every start of the round.
    async fn round_starts(
        &self,
        run: &mut RunState,
        lead: bool,
        mut seed_rng: ChaCha8Rng,
        shared: &Shared,
    ) -> Result<Vec<(TrajectoryState, LocalSolver)>, RoundFailure> {
        if lead {
            run.round += 1;
            return Ok(self.lead_round(&mut seed_rng, &mut run.next_id));
        }
        let plan = run.plan(self.tol(), &self.config);
        run.round += 1;
        let (seeds, seed_evals, (around, boundary)) = match self.round_seeds(plan, seed_rng).await {
            Ok(s) => s,
            Err(e) if run.summaries.is_empty() => return Err(RoundFailure::Run(e)),
            Err(e) => {
                shared.fail(e);
                return Err(RoundFailure::Stop);
            }
        };
        Self::reserve(shared, seed_evals);
        run.evals += seed_evals;
        if seeds.is_empty() {
            if run.summaries.is_empty() {
                return Err(RoundFailure::Run("no valid seed: the problem gave no finite value at any sample".into()));
            }
            return Err(RoundFailure::Stop);
        }
        run.seeded(&seeds, self.tol());
        Ok(self.seeded_round(seeds, around, boundary, &mut run.next_id))
    }

    /// Drives a round's trajectories side by side, each with an equal share
    /// of what is left (or all of it, `BudgetSplit::Adaptive`), until every
    /// one has ended.
    async fn play_round(
        &self,
        starts: Vec<(TrajectoryState, LocalSolver)>,
        shared: &Arc<Shared>,
        rng: &mut ChaCha8Rng,
    ) -> Vec<TrajectoryState> {
        let remaining = shared.pool.load(Ordering::Acquire);
        let per_trajectory = remaining / starts.len() as u64;
        // The round's SQP descents take turns (their ALM phases run
        // together, after all of them): the first seed's descent is done
        // before the second's starts, as in a multistart, so on an easy
        // problem the first answer comes after one SLSQP run rather than
        // after three descents sharing the evaluations.
        let gate = self.config.descents_in_turn.then(|| Gate::new(starts.len()));
        let mut handles = Vec::new();
        for (traj, solver) in starts {
            let allocation = match self.config.trajectory_budget_split {
                BudgetSplit::Equal => per_trajectory,
                BudgetSplit::Adaptive => remaining,
            };
            let rng = ChaCha8Rng::seed_from_u64(rng.random());
            handles.push(self.drive(traj, Box::new(solver), allocation, shared.clone(), rng, gate.clone()));
        }
        futures::future::join_all(handles).await
    }

    /// A population trajectory on `population_budget_share` of what is
    /// left, when that is at least ten generations' worth.
    async fn population_round(
        &self,
        run: &mut RunState,
        shared: &Arc<Shared>,
        rng: &mut ChaCha8Rng,
    ) -> PopulationRound {
        let c = &self.config;
        let tol = self.tol();
        let left = shared.pool.load(Ordering::Acquire);
        let allocation = (c.population_budget_share.clamp(0.0, 1.0) * left as f64) as u64;
        let size = c.population_settings().population_size(self.problem.dimension()) as u64;
        // Fewer than ten generations would not be a search.
        if allocation < 10 * size || *self.cancel.borrow() {
            return PopulationRound::TooSmall;
        }
        run.populations += 1;
        tracing::debug!(round = run.round, allocation, "starting a population trajectory");
        let traj = TrajectoryState::population(run.next_id, self.alm.clone());
        run.next_id += 1;
        let prng = ChaCha8Rng::seed_from_u64(rng.random());
        let t = self.run_population_trajectory(traj, allocation, shared.clone(), prng).await;
        let before = run.best.clone();
        run.absorb(t, tol, &self.config);
        if shared.failed() {
            if let Some(s) = run.summaries.last_mut() {
                s.status = TrajectoryStatus::Abandoned;
                s.stop = TrajectoryStop::Failed;
            }
            return PopulationRound::Failed;
        }
        run.after_population(before.as_ref(), tol, c);
        if run.best != before {
            tracing::debug!(best = run.best.as_ref().map(|b| b.objective), "the population improved the best");
        }
        PopulationRound::Played
    }

    fn failed_outcome(&self, budget: u64, error: String) -> CoordinatorOutcome {
        let basins = BasinEvidence::of(&[], self.tol(), self.config.agreement_tolerance);
        CoordinatorOutcome {
            stop_reason: stop_reason(RunStop::Failed, &basins, 0, 0, budget),
            basins,
            best: None,
            trajectories: vec![],
            evals_used: 0,
            budget,
            steps: 0,
            llm_calls: 0,
            llm_failures: 0,
            rejected_directives: 0,
            error: Some(error),
            interrupted: false,
            stop: RunStop::Failed,
        }
    }

    /// Takes up to `want` evaluations from the shared pool.
    pub(super) fn reserve(shared: &Shared, want: u64) -> u64 {
        let mut got = 0;
        let _ = shared.pool.fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
            got = left.min(want);
            Some(left - got)
        });
        got
    }

    /// A round's trajectories from its evaluated seeds (the first `around`
    /// hop around the best): each descends from its seed, knowing its value.
    fn seeded_round(
        &self,
        seeds: Vec<seeds::Seed>,
        around: usize,
        boundary: usize,
        next_id: &mut u32,
    ) -> Vec<(TrajectoryState, LocalSolver)> {
        seeds
            .into_iter()
            .enumerate()
            .map(|(i, (seed, value))| {
                let solver = LocalSolver::new(
                    seed.x.clone(),
                    self.problem.dimension(),
                    self.tol(),
                    self.config.stop_after_descent,
                )
                .descent_iterations(self.config.descent_iterations())
                .when_unsettled(self.config.unsettled_descent)
                .knowing(Some(value));
                let mut traj = TrajectoryState::new(*next_id, seed.x, self.alm.clone());
                traj.around_best = i < around;
                traj.on_boundary = (around..around + boundary).contains(&i);
                *next_id += 1;
                (traj, solver)
            })
            .collect()
    }

    /// The first round's trajectories (see `produce_candidates`): the first
    /// with `seed_oversampling` samples of its own, the others sharing the
    /// rest of the round's Latin hypercube, the best first.
    fn lead_round(&self, rng: &mut ChaCha8Rng, next_id: &mut u32) -> Vec<(TrajectoryState, LocalSolver)> {
        let n = self.config.round_size();
        let k = (self.config.seed_oversampling as usize).max(1);
        let mut own = seeds::latin_hypercube(&self.problem.bounds(), n * k, rng);
        let pool = Arc::new(seeds::SeedPool::new(own.split_off(k), n - 1));
        (0..n)
            .map(|i| {
                let source = if i == 0 {
                    seeds::SeedSource::Own(std::mem::take(&mut own))
                } else {
                    seeds::SeedSource::Shared(pool.clone())
                };
                let solver =
                    LocalSolver::seeding(source, self.problem.dimension(), self.tol(), self.config.stop_after_descent)
                        .descent_iterations(self.config.descent_iterations())
                        .when_unsettled(self.config.unsettled_descent);
                let traj = TrajectoryState::new(*next_id, vec![], self.alm.clone());
                *next_id += 1;
                (traj, solver)
            })
            .collect()
    }

    /// A population trajectory: εDE on `allocation` evaluations from the
    /// shared pool, in chunks of `population_chunk_generations` generations.
    /// Whenever the population's best feasible point has improved by
    /// `population_polish_gain` since the last polish it is polished with
    /// SQP (the population finds the basin, SQP its bottom), and once more at
    /// the end. ALM overrides (penalties, constraint weights) do not apply to it.
    async fn run_population_trajectory(
        &self,
        traj: TrajectoryState,
        allocation: u64,
        shared: Arc<Shared>,
        mut rng: ChaCha8Rng,
    ) -> TrajectoryState {
        let solver = PopulationSolver::new(self.problem.as_ref(), &self.config, allocation, &mut rng);
        self.drive(traj, Box::new(solver), allocation, shared, rng, None).await
    }
}
