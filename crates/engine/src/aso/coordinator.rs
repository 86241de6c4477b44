//! The multi-trajectory coordinator (seed 000 Part 4): prepare seeds, run
//! rounds of trajectories concurrently on a shared evaluation budget,
//! and after every chunk of ALM work build the diagnostics, ask the tiered
//! supervisor for a directive, apply it under the safety clamps, and record
//! one `aso_telemetry` row.
//!
//! Trajectories are of two kinds. *Local* ones run the ALM from a seed (and
//! polish with SQP); rounds of them are a multistart, later an iterated local
//! search around the best point. A *population* trajectory runs differential
//! evolution with the ε comparison ([`crate::numeric::population`]), polishing
//! its best point as it improves; the coordinator starts one when the rounds
//! stall, or early on a problem in many variables whose local trajectories end
//! in different optima — a rugged landscape, where one basin per start is a
//! losing rate. Both kinds report the same diagnostics, take the same
//! directives and write the same telemetry.
//!
//! In argmin's terms the ALM chunk (or a chunk of generations) is the solver
//! step, [`TrajectoryState`] is the state, this module is the executor
//! (budgets, termination) and the telemetry writer is the observer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use tokio::sync::watch;

use super::config::{AsoConfig, BudgetSplit};
use super::diagnostics::{self, OptimizerDiagnostics, Status, TrajectoryView};
use super::directive::{Directive, DirectiveAction};
use super::finishing::FINAL_POLISH_ITERATIONS;
pub use super::finishing::POLISH_ITERATIONS;
use super::round_starts::RoundPlan;
use super::seeds;
use super::solver::{ChunkSolver, LocalSolver, Names, PopulationSolver};
pub use super::stopping::{BasinEvidence, RunStop};
use super::stopping::{agreeing, distinct_optima, gained, same, stop_reason};
use super::supervisor::{SupervisionContext, TieredSupervisor};
pub use super::trajectory::{
    TrajectoryKind, TrajectoryState, TrajectoryStatus, TrajectoryStop, TrajectorySummary, apply_directive,
};
use crate::numeric::alm::{AlmSettings, Candidate, ChunkStatus};
use crate::numeric::problem::Problem;
use crate::store::{Store, TelemetryRow};

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

/// Perturbation scales (× each variable's range) of the rounds that start
/// around the best point, cycled: wide hops first, then ever closer looks,
/// down to 1e-4 of the range. The closest ones are what brings g17's runs
/// onto its optimum, which sits on a jump of its piecewise cost where
/// descents stop 1e-4 to 1e-3 above it: 73 of 100 runs against 62 when the
/// cycle ended at 0.003, no other problem changed (bench/HISTORY.md,
/// 2026-11-27).
const HOP_SCALES: [f64; 7] = [0.1, 0.03, 0.01, 0.003, 0.001, 3e-4, 1e-4];

/// Shared across trajectories: what is left of the budget, and counters.
pub(super) struct Shared {
    pub(super) pool: AtomicU64,
    rejected: AtomicU64,
    errors: std::sync::Mutex<Option<String>>,
    /// The feasible points local trajectories ended at, polished: the
    /// minima found so far.
    known: std::sync::Mutex<Vec<Candidate>>,
}

impl Shared {
    /// Whether `best` is feasible at `tol` at a minimum a trajectory already
    /// ended at: its value within `tolerance` (relative) and its point
    /// within a thousandth of each variable's range.
    fn at_known_minimum(&self, best: &Candidate, tol: f64, tolerance: f64, bounds: &[(f64, f64)]) -> bool {
        if best.max_violation > tol {
            return false;
        }
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.iter().any(|k| {
            same(k.objective, best.objective, tolerance)
                && k.x.iter().zip(&best.x).zip(bounds).all(|((a, b), (lo, hi))| (a - b).abs() <= 1e-3 * (hi - lo))
        })
    }

    /// Adds a trajectory's end to the minima found.
    fn found(&self, end: Candidate) {
        self.known.lock().unwrap_or_else(|p| p.into_inner()).push(end);
    }

    /// Records why the problem cannot be optimized (every trajectory stops).
    fn fail(&self, error: String) {
        *self.errors.lock().unwrap_or_else(|p| p.into_inner()) = Some(error);
    }

    /// Whether a trajectory recorded such an error (a poisoned lock counts).
    fn failed(&self) -> bool {
        self.errors.lock().map(|e| e.is_some()).unwrap_or(true)
    }
}

/// How a round's trajectories take turns for their SQP descents
/// (`descents_in_turn`): one descends at a time (the lock), and none goes on
/// with the ALM before every descent of the round is done (the barrier) —
/// a multistart of SQP first, the augmented Lagrangians after.
#[derive(Clone)]
struct Gate {
    turn: Arc<tokio::sync::Mutex<()>>,
    descents_done: Arc<tokio::sync::Barrier>,
}

impl Gate {
    fn new(trajectories: usize) -> Gate {
        Gate {
            turn: Arc::new(tokio::sync::Mutex::new(())),
            descents_done: Arc::new(tokio::sync::Barrier::new(trajectories)),
        }
    }
}

impl Coordinator {
    /// The max violation of a feasible result on this problem (the search
    /// itself works to the looser `search_tolerance`).
    pub(super) fn tol(&self) -> f64 {
        self.config.tolerance_for(self.problem.as_ref())
    }

    fn chunk(&self) -> u64 {
        if self.chunk_evaluations > 0 { self.chunk_evaluations } else { 30 * (self.problem.dimension() as u64 + 1) }
    }

    /// Runs the trajectories on `budget` evaluations in all (seeds included).
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
        let mut best: Option<Candidate> = None;
        let mut summaries = Vec::new();
        let (mut evals, mut steps) = (0, 0);
        let mut stalled_rounds = 0;
        // Rounds in a row that improved the best by no more than the
        // agreement tolerance: a gain that small does not pay for a round.
        let mut unpaid_rounds = 0;
        // Whether the rounds have moved from hops around the best to global
        // starts only.
        let mut exploring = false;
        // Rounds of global starts only, since the hops stopped paying.
        let mut global_rounds = 0u32;
        let mut next_id = 0u32;
        let mut populations = 0u32;

        // Rounds of trajectories: when every trajectory of a round has stopped
        // and budget is left, a new round starts from fresh seeds (multi-start).
        // Once a feasible point is known, `hops_per_round` of a round's
        // trajectories start around it (iterated local search); the others
        // keep exploring the box. The rounds end with the budget, on an evaluator
        // failure, or after `max_stalled_rounds` rounds in a row that did not
        // improve a feasible best. Between rounds a population trajectory may
        // run on its own (see the module doc); the rounds then go on around
        // the best point it found.
        let mut round = 0usize;
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
            let mut seed_rng = ChaCha8Rng::seed_from_u64(rng.random());
            let all_global = exploring;
            // The first round gives one descent the lead: it evaluates only
            // its own samples and descends at once; the others evaluate the
            // rest of the round's samples (one batch) when their turns come.
            // The first answer does not wait for every start of the round.
            let lead = round == 0 && self.config.descents_in_turn && self.config.lead_descent;
            let starts = if lead {
                round += 1;
                self.lead_round(&mut seed_rng, &mut next_id)
            } else {
                // Hops around the best point until they stop paying with the best
                // agreed on; then every start is a global one, which is what the
                // estimate of unseen minima counts.
                let feasible_best = best.as_ref().filter(|b| b.max_violation <= tol).map(|b| b.x.clone());
                let plan = match feasible_best {
                    Some(center) if !exploring => {
                        RoundPlan::Hops { center, scale: HOP_SCALES[round.saturating_sub(1) % HOP_SCALES.len()] }
                    }
                    Some(at) => RoundPlan::Boundary { at, turn: global_rounds as usize },
                    None => RoundPlan::Global,
                };
                round += 1;
                let (seeds, seed_evals, (around, boundary)) = match self.round_seeds(plan, seed_rng).await {
                    Ok(s) => s,
                    Err(e) if summaries.is_empty() => return self.failed_outcome(budget, e),
                    Err(e) => {
                        shared.fail(e);
                        stop = RunStop::Failed;
                        break;
                    }
                };
                Self::reserve(&shared, seed_evals);
                evals += seed_evals;
                if seeds.is_empty() {
                    if summaries.is_empty() {
                        return self.failed_outcome(
                            budget,
                            "no valid seed: the problem gave no finite value at any sample".into(),
                        );
                    }
                    stop = RunStop::Failed;
                    break;
                }
                for (s, _) in &seeds {
                    if best.as_ref().is_none_or(|cur| s.better_than(cur, tol)) {
                        best = Some(s.clone());
                    }
                }
                self.seeded_round(seeds, around, boundary, &mut next_id)
            };
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
            let mut finished = futures::future::join_all(handles).await;
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

            let before = best.clone();
            // Whether the round's local trajectories ended in different
            // optima: the landscape evidence for a population.
            let ends: Vec<f64> = finished
                .iter()
                .filter_map(|t| t.best.as_ref().filter(|b| b.max_violation <= tol).map(|b| b.objective))
                .collect();
            let rugged = distinct_optima(&ends);
            for t in finished {
                absorb(t, tol, &mut best, &mut summaries, &mut evals, &mut steps);
            }
            if shared.failed() {
                stop = RunStop::Failed;
                break;
            }
            let feasible = best.as_ref().is_some_and(|b| b.max_violation <= tol);
            let improved = gained(best.as_ref(), before.as_ref(), tol, 1e-9);
            stalled_rounds = if improved || !feasible { 0 } else { stalled_rounds + 1 };
            let paid = gained(best.as_ref(), before.as_ref(), tol, self.config.agreement_tolerance);
            unpaid_rounds = if paid || !feasible { 0 } else { unpaid_rounds + 1 };
            // A better best is a new place to hop around.
            if paid {
                exploring = false;
                global_rounds = 0;
            } else if all_global {
                global_rounds += 1;
            }
            tracing::debug!(
                round,
                evaluations = budget - shared.pool.load(Ordering::Acquire),
                best = best.as_ref().map(|b| b.objective),
                stalled_rounds,
                "round finished"
            );
            let c = &self.config;
            // Enough trajectories ended on the best value, and hops around it
            // have stopped paying: from now on the starts are global, and the
            // run stops once they say no other minimum is likely left — after
            // the population has had its look (`population_before_stopping`):
            // a basin few starts reach, g17's, is missed by any rule that
            // reads only the ends, and there the population is what finds it.
            let agreed = agreeing(&summaries, best.as_ref(), tol, c.agreement_tolerance) >= c.agreement.max(1) as usize;
            if c.stop_after_agreed_rounds > 0 && agreed && unpaid_rounds >= c.stop_after_agreed_rounds {
                exploring = true;
            }
            let by_stall = (exploring && c.population_before_stopping)
                || (c.population_after_stalled_rounds > 0 && stalled_rounds >= c.population_after_stalled_rounds);
            let by_landscape = c.population_min_dimension > 0
                && self.problem.dimension() >= c.population_min_dimension as usize
                && round >= c.population_after_rounds as usize
                && rugged;
            if populations < c.max_population_trajectories && (by_stall || by_landscape) {
                let left = shared.pool.load(Ordering::Acquire);
                let allocation = (c.population_budget_share.clamp(0.0, 1.0) * left as f64) as u64;
                let size = c.population_settings().population_size(self.problem.dimension()) as u64;
                // Fewer than ten generations would not be a search.
                if allocation >= 10 * size && !*self.cancel.borrow() {
                    populations += 1;
                    tracing::debug!(round, allocation, by_stall, by_landscape, "starting a population trajectory");
                    let traj = TrajectoryState::population(next_id, self.alm.clone());
                    next_id += 1;
                    let prng = ChaCha8Rng::seed_from_u64(rng.random());
                    let t = self.run_population_trajectory(traj, allocation, shared.clone(), prng).await;
                    let before = best.clone();
                    absorb(t, tol, &mut best, &mut summaries, &mut evals, &mut steps);
                    if shared.failed() {
                        if let Some(s) = summaries.last_mut() {
                            s.status = TrajectoryStatus::Abandoned;
                            s.stop = TrajectoryStop::Failed;
                        }
                        stop = RunStop::Failed;
                        break;
                    }
                    // The rounds take a fresh look around whatever it found.
                    stalled_rounds = 0;
                    if gained(best.as_ref(), before.as_ref(), tol, self.config.agreement_tolerance) {
                        exploring = false;
                        unpaid_rounds = 0;
                        global_rounds = 0;
                    }
                    if best != before {
                        tracing::debug!(best = best.as_ref().map(|b| b.objective), "the population improved the best");
                    }
                    continue;
                }
            }
            if stalled_rounds >= self.config.max_stalled_rounds.max(1) {
                stop = RunStop::Stalled;
                break;
            }
            // The estimate asks the global starts; at least
            // `global_rounds_before_stopping` rounds of them after the hops
            // stopped paying: the hop rounds' two global starts each are too
            // few to find a basin few starts reach (g17's).
            if exploring && global_rounds >= c.global_rounds_before_stopping {
                let evidence = BasinEvidence::of(&summaries, tol, c.agreement_tolerance);
                let few_unseen =
                    c.max_unseen_minima > 0.0 && evidence.unseen_minima.is_some_and(|u| u < c.max_unseen_minima);
                let better_unlikely = c.max_better_share > 0.0 && evidence.better_share <= c.max_better_share;
                if evidence.unseen_share <= c.max_unseen_share || few_unseen || better_unlikely {
                    stop = RunStop::Explored;
                    break;
                }
            }
        }

        shared.pool.fetch_add(final_reserve, Ordering::AcqRel);
        if stop != RunStop::Failed && !shared.failed() {
            evals += self.finish(&mut best, &shared).await;
        }
        let error = shared.errors.lock().map(|e| e.clone()).unwrap_or_default();
        let stop = if *self.cancel.borrow() { RunStop::Interrupted } else { stop };
        let basins = BasinEvidence::of(&summaries, tol, self.config.agreement_tolerance);
        CoordinatorOutcome {
            stop_reason: stop_reason(stop, &basins, stalled_rounds, evals, budget),
            basins,
            best,
            trajectories: summaries,
            evals_used: evals,
            budget,
            steps,
            llm_calls: self.supervisor.llm_calls(),
            llm_failures: self.supervisor.failures(),
            rejected_directives: shared.rejected.load(Ordering::Relaxed) as u32,
            error,
            interrupted: *self.cancel.borrow(),
            stop,
        }
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

    /// The one trajectory loop, whatever drives it: grant the solver's next
    /// step its evaluations, run it, judge the state it reached, let the
    /// supervisors decide, record the step, act on the directive — until a
    /// STOP, stagnation, the allocation, an interrupt or a failure; then
    /// polish the best point.
    async fn drive(
        &self,
        mut traj: TrajectoryState,
        mut solver: Box<dyn ChunkSolver>,
        allocation: u64,
        shared: Arc<Shared>,
        mut rng: ChaCha8Rng,
        gate: Option<Gate>,
    ) -> TrajectoryState {
        // The search's tolerance: a trajectory's best is the point its search
        // believes best; the polishes drive it to the strict one.
        let tol = self.alm.feasibility_tolerance;
        // Held while this trajectory's solver descends, and whether it has
        // passed the barrier after the round's descents (see `Gate`).
        let (mut turn, mut passed) = (None, false);
        let names: Names = (self.problem.inequality_names(), self.problem.equality_names());
        let thresholds = self.config.thresholds();
        let bounds = self.problem.bounds();
        let mut restarted_at: Option<u32> = None;
        while traj.status == TrajectoryStatus::Active && traj.evals_used < allocation && !*self.cancel.borrow() {
            // The descent is over (its step recorded): the next trajectory's
            // turn; this one goes on once every descent of the round is done.
            if let Some(g) = gate.as_ref().filter(|_| !passed && !solver.descending()) {
                turn = None;
                g.descents_done.wait().await;
                passed = true;
            }
            if let Some(g) = gate.as_ref().filter(|_| turn.is_none() && solver.descending()) {
                turn = Some(g.turn.clone().lock_owned().await);
            }
            // Either wait can be long: the run may have been stopped meanwhile.
            if gate.is_some() && (*self.cancel.borrow() || shared.failed()) {
                break;
            }
            let full = solver.wants(self.chunk());
            let want = full.min(allocation - traj.evals_used);
            // Too few evaluations for a step that can move: out of budget. (A
            // step that evaluates nothing would only repeat the last diagnosis
            // and its directive.)
            if want < solver.least() {
                break;
            }
            let granted = Self::reserve(&shared, want);
            if granted < solver.least() {
                shared.pool.fetch_add(granted, Ordering::AcqRel);
                break;
            }
            let started = Instant::now();
            let (problem, settings) = (self.problem.clone(), traj.settings.clone());
            let joined = tokio::task::spawn_blocking(move || {
                let step = solver.step(problem.as_ref(), granted, &settings);
                (solver, step)
            })
            .await;
            let step = match joined {
                Ok((back, step)) => {
                    solver = back;
                    step
                }
                Err(e) => {
                    shared.pool.fetch_add(granted, Ordering::AcqRel);
                    traj.end(TrajectoryStatus::Abandoned, TrajectoryStop::Failed);
                    shared.fail(format!("optimizer crashed: {e}"));
                    // The round's other trajectories wait for this one's descent.
                    if let Some(g) = gate.as_ref().filter(|_| !passed) {
                        drop(turn);
                        g.descents_done.wait().await;
                    }
                    return traj;
                }
            };
            traj.evals_used += step.evals_used;
            shared.pool.fetch_add(granted.saturating_sub(step.evals_used), Ordering::AcqRel);
            // What the step saw counts even when the problem then failed
            // (the lead trajectory's first step is all the run has seen).
            if let Some(b) = solver.best().filter(|b| traj.best.as_ref().is_none_or(|cur| b.better_than(cur, tol))) {
                traj.best = Some(b.clone());
            }
            if step.status == ChunkStatus::Failed {
                traj.end(TrajectoryStatus::Abandoned, TrajectoryStop::Failed);
                shared.fail(step.error.unwrap_or_else(|| "the problem could not be evaluated".into()));
                break;
            }
            if let Some(reason) = &step.ended {
                tracing::warn!(trajectory = traj.id, %reason, "the trajectory cannot go on");
                traj.end(TrajectoryStatus::Abandoned, TrajectoryStop::Failed);
                break;
            }
            // A step that evaluated nothing would repeat itself forever.
            if step.evals_used == 0 {
                break;
            }
            let Some(snapshot) = solver.snapshot(&names) else { continue };
            if !step.judged {
                traj.history.push(snapshot);
                continue;
            }

            traj.steps += 1;
            let mut diag = diagnostics::generate(
                &snapshot,
                traj.history.last(),
                TrajectoryView {
                    id: traj.id,
                    step: traj.steps,
                    stagnation_count: traj.stagnation_count,
                    steps_in_feasible_region: traj.steps_in_feasible_region,
                },
                &thresholds,
            );
            solver.annotate(&mut diag);
            // A step cut short by the budget (its own share or the run's pool
            // near its end) measured no change worth the name: an objective
            // that did not move on a handful of evaluations says nothing about
            // convergence, and read as "flat" it ended trajectories as
            // converged far from the optimum (cantilever at f = 8.9 against
            // 1.34). It is supervised as a first step is: without a delta.
            if granted < full {
                diag.objective_delta = None;
            }
            traj.note_progress(&diag);
            if diag.status == Status::FeasibleFound
                && let Some(at) = restarted_at.take()
            {
                tracing::debug!(trajectory = traj.id, restart_step = at, "feasible again after a restart");
                traj.restarts_recovered += 1;
            }
            traj.history.push(snapshot);

            // Mid-run polishes follow the search: a best feasible to its tolerance.
            if let Some(x) = solver.polish_now(tol) {
                self.polish_into(&mut traj, &x, &shared).await;
            }

            let supervised = self.supervisor.supervise(&diag, &self.context).await;
            self.record(&traj, &diag, &supervised.directive, supervised.llm_call_made, started).await;
            let directive = supervised.directive;
            tracing::debug!(
                trajectory = traj.id,
                kind = ?solver.kind(),
                step = traj.steps,
                status = diag.status.as_str(),
                objective = diag.objective,
                best = traj.best.as_ref().map(|b| b.objective),
                action = directive.action.as_str(),
                "trajectory step"
            );
            match directive.action {
                DirectiveAction::Stop => {
                    let status = if diag.status == Status::FeasibleFound {
                        TrajectoryStatus::Converged
                    } else {
                        TrajectoryStatus::Stagnated
                    };
                    traj.end(status, TrajectoryStop::Directive);
                    break;
                }
                DirectiveAction::Restart => {
                    let point = if solver.restarts_from_a_point() {
                        let (x, probes) = self.valid_restart_point(&directive, &traj, &mut rng).await;
                        traj.evals_used += probes;
                        Self::reserve(&shared, probes);
                        traj.seed = x.clone();
                        Some(x)
                    } else {
                        None
                    };
                    solver.restart(point, &mut rng, allocation.saturating_sub(traj.evals_used));
                    traj.history.clear();
                    traj.forget_window();
                    traj.stagnation_count = 0;
                    traj.restarts += 1;
                    restarted_at = Some(traj.steps);
                    continue;
                }
                DirectiveAction::Adjust | DirectiveAction::Continue => {
                    let rejected = solver.apply(&directive, &mut traj, &self.config, &names);
                    shared.rejected.fetch_add(u64::from(rejected), Ordering::Relaxed);
                }
            }
            // Back at a minimum another trajectory ended at: what is left of
            // this one's search would find it again (multi-level single
            // linkage's rule, applied after the descent rather than before).
            if self.config.stop_at_known_minima
                && solver.kind() == TrajectoryKind::Local
                && traj
                    .best
                    .as_ref()
                    .is_some_and(|b| shared.at_known_minimum(b, self.tol(), self.config.agreement_tolerance, &bounds))
            {
                traj.end(TrajectoryStatus::Converged, TrajectoryStop::KnownMinimum);
                break;
            }
            // A descent that did not settle, where the settings end the
            // trajectory there: the end's polish takes its best point on.
            if step.unsettled {
                let status = traj.status_at_end(tol);
                traj.end(status, TrajectoryStop::Unsettled);
                break;
            }
            // The solver's own test: the ALM's iterate stopped moving while
            // feasible, or the population collapsed onto one point.
            if step.converged && (diag.status == Status::FeasibleFound || solver.kind() == TrajectoryKind::Population) {
                let status = traj.status_at_end(tol);
                traj.end(status, TrajectoryStop::Stationary);
                break;
            }
            // (A population has its own test, the collapse: its median can sit
            // still for generations while ε tightens and a member finds a
            // better basin.)
            if solver.kind() != TrajectoryKind::Population && traj.flat(&diag, &bounds, &self.config) {
                traj.end(TrajectoryStatus::Converged, TrajectoryStop::Flat);
                break;
            }
            if traj.stagnation_count >= self.config.max_stagnation_steps {
                traj.end(TrajectoryStatus::Stagnated, TrajectoryStop::Stagnation);
                break;
            }
        }
        drop(turn);
        // Ended while descending: the others may go on with their ALMs.
        if let Some(g) = gate.as_ref().filter(|_| !passed) {
            g.descents_done.wait().await;
        }
        // Finish the trajectory's best point with an SQP polish on the
        // original problem, from the shared budget.
        // (Not at a known minimum: that one was polished when it was found.)
        let known = traj.stop == Some(TrajectoryStop::KnownMinimum);
        if let Some(best) = traj.best.clone().filter(|b| {
            !*self.cancel.borrow()
                && !known
                && traj.status != TrajectoryStatus::Abandoned
                && solver.polish_at_end(b, self.tol())
        }) {
            let settled = self.polish_into(&mut traj, &best.x, &shared).await;
            // A descent that did not settle, whose polish (SLSQP afresh) did:
            // the trajectory ended at a minimum after all, which the
            // evidence about basins counts.
            if settled && traj.stop == Some(TrajectoryStop::Unsettled) {
                traj.end(TrajectoryStatus::Converged, TrajectoryStop::Stationary);
            }
            // Still short of the strict tolerance (SLSQP could not step):
            // restored onto its constraints, so its end counts as feasible.
            if let Some(b) = traj.best.clone().filter(|b| b.max_violation > 0.1 * self.tol() && !*self.cancel.borrow())
            {
                let (restored, used) = self.restore_from(&b, &shared).await;
                traj.evals_used += used;
                if let Some(r) = restored {
                    traj.best = Some(r);
                }
            }
        }
        if traj.status == TrajectoryStatus::Converged
            && !known
            && traj.kind == TrajectoryKind::Local
            && let Some(end) = traj.best.clone().filter(|b| b.max_violation <= self.tol())
        {
            shared.found(end);
        }
        if traj.status == TrajectoryStatus::Active {
            // Out of budget (or interrupted) while still working.
            let status = traj.status_at_end(self.tol());
            let why = if *self.cancel.borrow() { TrajectoryStop::Interrupted } else { TrajectoryStop::Budget };
            traj.end(status, why);
        }
        traj
    }

    /// A restart point the problem can evaluate: up to five tries (each one
    /// evaluation, counted), else the last one tried.
    async fn valid_restart_point(
        &self,
        d: &Directive,
        traj: &TrajectoryState,
        rng: &mut ChaCha8Rng,
    ) -> (Vec<f64>, u64) {
        let mut x = self.restart_point(d, traj, rng);
        for tries in 1..=5u64 {
            let problem = self.problem.clone();
            let probe = x.clone();
            let ok =
                tokio::task::spawn_blocking(move || problem.evaluate(&probe).map(|e| e.is_finite()).unwrap_or(false))
                    .await
                    .unwrap_or(false);
            if ok || tries == 5 {
                return (x, tries);
            }
            x = seeds::latin_hypercube(&self.problem.bounds(), 1, rng).remove(0);
        }
        (x, 5)
    }

    /// A new start for RESTART: the directive's suggestion if it fits the box;
    /// otherwise a global sample, or — with probability 1 − exploration_ratio —
    /// a point near the trajectory's best.
    fn restart_point(&self, d: &Directive, traj: &TrajectoryState, rng: &mut ChaCha8Rng) -> Vec<f64> {
        let bounds = self.problem.bounds();
        if let Some(x) =
            d.suggested_params.as_ref().filter(|x| x.len() == bounds.len() && x.iter().all(|v| v.is_finite()))
        {
            return x.iter().zip(&bounds).map(|(v, (lo, hi))| v.clamp(*lo, *hi)).collect();
        }
        let local = rng.random::<f64>() >= traj.exploration_ratio;
        match (&traj.best, local) {
            (Some(best), true) => best
                .x
                .iter()
                .zip(&bounds)
                .map(|(v, (lo, hi))| (v + 0.1 * (hi - lo) * (rng.random::<f64>() * 2.0 - 1.0)).clamp(*lo, *hi))
                .collect(),
            _ => seeds::latin_hypercube(&bounds, 1, rng).remove(0),
        }
    }

    async fn record(
        &self,
        traj: &TrajectoryState,
        d: &OptimizerDiagnostics,
        directive: &Directive,
        llm: bool,
        started: Instant,
    ) {
        let Some((store, experiment_id)) = &self.telemetry else {
            return;
        };
        let row = TelemetryRow {
            id: 0,
            timestamp: crate::now_rfc3339(),
            experiment_id: *experiment_id,
            cycle: i64::from(self.context.cycle),
            trajectory_id: i64::from(traj.id),
            step: i64::from(traj.steps),
            status: d.status.as_str().to_string(),
            objective: d.objective.is_finite().then_some(d.objective),
            max_violation: d.max_violation.is_finite().then_some(d.max_violation),
            directive_action: directive.action.as_str().to_string(),
            directive_source: directive.source.as_str().to_string(),
            evals_used: traj.evals_used as i64,
            wall_time_ms: Some(started.elapsed().as_secs_f64() * 1000.0),
            llm_call_made: llm,
            diagnostics_json: serde_json::to_string(d).ok(),
            directive_json: serde_json::to_string(directive).ok(),
        };
        // Telemetry is an observer: losing a row must not stop the optimization.
        if let Err(e) = store.insert_telemetry(&[row]).await {
            tracing::warn!(error = %e, "could not record an aso_telemetry row");
        }
    }
}

/// Adds a finished trajectory to the run's totals, best point and summaries.
fn absorb(
    t: TrajectoryState,
    tol: f64,
    best: &mut Option<Candidate>,
    summaries: &mut Vec<TrajectorySummary>,
    evals: &mut u64,
    steps: &mut u32,
) {
    *evals += t.evals_used;
    *steps += t.steps;
    if let Some(b) = &t.best
        && best.as_ref().is_none_or(|cur| b.better_than(cur, tol))
    {
        *best = Some(b.clone());
    }
    summaries.push(TrajectorySummary {
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

#[cfg(test)]
mod tests {
    use super::HOP_SCALES;

    #[test]
    fn hops_go_from_wide_to_a_ten_thousandth_of_the_range() {
        assert!(HOP_SCALES.windows(2).all(|w| w[1] < w[0]), "{HOP_SCALES:?}");
        assert_eq!((HOP_SCALES[0], HOP_SCALES[HOP_SCALES.len() - 1]), (0.1, 1e-4));
    }
}
