//! The multi-trajectory coordinator (seed 000 Part 4): prepare seeds, run
//! `n_trajectories` trajectories concurrently on a shared evaluation budget,
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
use super::diagnostics::{self, OptimizerDiagnostics, Snapshot, Status, TrajectoryView};
use super::directive::{Directive, DirectiveAction};
use super::seeds;
use super::solver::{AlmSolver, ChunkSolver, Names, PopulationSolver};
use super::supervisor::{SupervisionContext, TieredSupervisor};
use crate::numeric::alm::{AlmSettings, AlmState, Candidate, ChunkStatus};
use crate::numeric::problem::Problem;
use crate::store::{Store, TelemetryRow};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrajectoryStatus {
    Active,
    Converged,
    Stagnated,
    Abandoned,
}

/// What drives a trajectory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrajectoryKind {
    /// The ALM from one seed, finished with an SQP polish.
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
        }
    }

    /// A population trajectory (its members are drawn when it starts).
    pub fn population(id: u32, settings: AlmSettings) -> Self {
        TrajectoryState { kind: TrajectoryKind::Population, ..TrajectoryState::new(id, vec![], settings) }
    }

    /// The seed's bookkeeping of progress after a judged step: a lower
    /// violation, or a lower objective at no higher violation, resets the
    /// stagnation count; anything else adds to it.
    fn note_progress(&mut self, d: &OptimizerDiagnostics) {
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
}

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

/// SQP iterations (each about dimension + 1 evaluations) a trajectory's final
/// polish may use.
pub const POLISH_ITERATIONS: u64 = 60;

/// Perturbation scales (× each variable's range) of the rounds that start
/// around the best point, cycled: wide hops first, then ever closer looks.
const HOP_SCALES: [f64; 4] = [0.1, 0.03, 0.01, 0.003];

/// Shared across trajectories: what is left of the budget, and counters.
struct Shared {
    pool: AtomicU64,
    rejected: AtomicU64,
    errors: std::sync::Mutex<Option<String>>,
}

impl Shared {
    /// Records why the problem cannot be optimized (every trajectory stops).
    fn fail(&self, error: String) {
        *self.errors.lock().unwrap_or_else(|p| p.into_inner()) = Some(error);
    }

    /// Whether a trajectory recorded such an error (a poisoned lock counts).
    fn failed(&self) -> bool {
        self.errors.lock().map(|e| e.is_some()).unwrap_or(true)
    }
}

impl Coordinator {
    fn chunk(&self) -> u64 {
        if self.chunk_evaluations > 0 { self.chunk_evaluations } else { 30 * (self.problem.dimension() as u64 + 1) }
    }

    /// Runs the trajectories on `budget` evaluations in all (seeds included).
    pub async fn produce_candidates(&self, budget: u64) -> CoordinatorOutcome {
        let n = self.config.n_trajectories.max(1) as usize;
        let tol = self.alm.feasibility_tolerance;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let shared = Arc::new(Shared {
            pool: AtomicU64::new(budget),
            rejected: AtomicU64::new(0),
            errors: std::sync::Mutex::new(None),
        });
        let mut best: Option<Candidate> = None;
        let mut summaries = Vec::new();
        let (mut evals, mut steps) = (0, 0);
        let mut stalled_rounds = 0;
        let mut next_id = 0u32;
        let mut populations = 0u32;

        // Rounds of trajectories: when every trajectory of a round has stopped
        // and budget is left, a new round starts from fresh seeds (multi-start).
        // Once a feasible point is known, every round but one trajectory
        // starts around it (iterated local search); the last one keeps
        // exploring the box. The rounds end with the budget, on an evaluator
        // failure, or after `max_stalled_rounds` rounds in a row that did not
        // improve a feasible best. Between rounds a population trajectory may
        // run on its own (see the module doc); the rounds then go on around
        // the best point it found.
        let mut round = 0usize;
        loop {
            let left = shared.pool.load(Ordering::Acquire);
            // A round needs its seeds and at least one chunk per trajectory.
            if left < 2 * n as u64 + self.chunk().min(left) || *self.cancel.borrow() {
                break;
            }
            let problem = self.problem.clone();
            let seed_rng = ChaCha8Rng::seed_from_u64(rng.random());
            let incumbent = best.as_ref().filter(|b| b.max_violation <= tol).map(|b| b.x.clone());
            let scale = HOP_SCALES[round.saturating_sub(1) % HOP_SCALES.len()];
            round += 1;
            let prepared = tokio::task::spawn_blocking(move || {
                let mut r = seed_rng;
                match incumbent {
                    Some(center) if n > 1 => {
                        let bounds = problem.bounds();
                        let (mut local, used) = seeds::filter_valid(
                            problem.as_ref(),
                            seeds::around(&center, &bounds, n - 1, scale, &mut r),
                            n - 1,
                            tol,
                        )?;
                        let (global, more) = seeds::prepare(problem.as_ref(), 1, tol, &mut r)?;
                        local.extend(global);
                        Ok((local, used + more))
                    }
                    _ => seeds::prepare(problem.as_ref(), n, tol, &mut r),
                }
            })
            .await;
            let (seeds, seed_evals) = match prepared {
                Ok(Ok(s)) => s,
                Ok(Err(e)) if summaries.is_empty() => return self.failed_outcome(budget, e.0),
                Ok(Err(e)) => {
                    shared.fail(e.0);
                    break;
                }
                Err(e) => return self.failed_outcome(budget, e.to_string()),
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
                break;
            }
            for s in &seeds {
                if best.as_ref().is_none_or(|cur| s.better_than(cur, tol)) {
                    best = Some(s.clone());
                }
            }
            let remaining = shared.pool.load(Ordering::Acquire);
            let per_trajectory = remaining / seeds.len() as u64;
            let mut handles = Vec::new();
            for seed in &seeds {
                let traj = TrajectoryState::new(next_id, seed.x.clone(), self.alm.clone());
                next_id += 1;
                let allocation = match self.config.trajectory_budget_split {
                    BudgetSplit::Equal => per_trajectory,
                    BudgetSplit::Adaptive => remaining,
                };
                let rng = ChaCha8Rng::seed_from_u64(rng.random());
                handles.push(self.run_trajectory(traj, allocation, shared.clone(), rng));
            }
            let mut finished = futures::future::join_all(handles).await;
            // The evaluator broke during this round: every trajectory of the
            // round ends abandoned, however far it got — which one met the
            // failure first is only a matter of scheduling.
            if shared.failed() {
                finished.iter_mut().for_each(|t| t.status = TrajectoryStatus::Abandoned);
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
                break;
            }
            let feasible = best.as_ref().is_some_and(|b| b.max_violation <= tol);
            let improved = match (&best, &before) {
                (Some(b), Some(prev)) => {
                    b.better_than(prev, tol)
                        && (prev.objective - b.objective).abs() > 1e-9 * prev.objective.abs().max(1.0)
                }
                (Some(_), None) => true,
                _ => false,
            };
            stalled_rounds = if improved || !feasible { 0 } else { stalled_rounds + 1 };
            tracing::debug!(
                round,
                evaluations = budget - shared.pool.load(Ordering::Acquire),
                best = best.as_ref().map(|b| b.objective),
                stalled_rounds,
                "round finished"
            );
            let c = &self.config;
            let by_stall = c.population_after_stalled_rounds > 0 && stalled_rounds >= c.population_after_stalled_rounds;
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
                        }
                        break;
                    }
                    // The rounds take a fresh look around whatever it found.
                    stalled_rounds = 0;
                    if best != before {
                        tracing::debug!(best = best.as_ref().map(|b| b.objective), "the population improved the best");
                    }
                    continue;
                }
            }
            if stalled_rounds >= self.config.max_stalled_rounds.max(1) {
                break;
            }
        }

        let error = shared.errors.lock().map(|e| e.clone()).unwrap_or_default();
        CoordinatorOutcome {
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
        }
    }

    fn failed_outcome(&self, budget: u64, error: String) -> CoordinatorOutcome {
        CoordinatorOutcome {
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
        }
    }

    /// Takes up to `want` evaluations from the shared pool.
    fn reserve(shared: &Shared, want: u64) -> u64 {
        let mut got = 0;
        let _ = shared.pool.fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
            got = left.min(want);
            Some(left - got)
        });
        got
    }

    /// A local trajectory: a direct SQP descent from the seed, then the
    /// augmented Lagrangian from the best point it found.
    async fn run_trajectory(
        &self,
        mut traj: TrajectoryState,
        allocation: u64,
        shared: Arc<Shared>,
        rng: ChaCha8Rng,
    ) -> TrajectoryState {
        let tol = self.alm.feasibility_tolerance;
        // On smooth problems the descent lands in the seed's basin in a few
        // hundred evaluations, and on piecewise ones (g17) it often finds a
        // cheaper piece than the penalty path, which the ALM then starts from.
        if let Some(p) = self.polish_from(&traj.seed, &shared).await {
            traj.evals_used += p.evals_used;
            if let Some(e) = p.error {
                // The evaluator failed: as for a failed chunk, the trajectory ends
                // with the reason. (Known gap: a pole of a built-in — a single
                // unevaluable point — ends it too; EvalError should tell the two apart.)
                traj.status = TrajectoryStatus::Abandoned;
                traj.best = p.best.or(traj.best.take());
                shared.fail(e);
                return traj;
            }
            if let Some(b) = p.best.filter(|b| traj.best.as_ref().is_none_or(|cur| b.better_than(cur, tol))) {
                traj.seed = b.x.clone();
                traj.best = Some(b);
            }
        }
        let solver = AlmSolver::new(traj.seed.clone(), self.problem.dimension());
        self.drive(traj, Box::new(solver), allocation, shared, rng).await
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
        self.drive(traj, Box::new(solver), allocation, shared, rng).await
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
    ) -> TrajectoryState {
        let tol = self.alm.feasibility_tolerance;
        let names: Names = (self.problem.inequality_names(), self.problem.equality_names());
        let thresholds = self.config.thresholds();
        let mut restarted_at: Option<u32> = None;
        while traj.status == TrajectoryStatus::Active && traj.evals_used < allocation && !*self.cancel.borrow() {
            let want = solver.wants(self.chunk()).min(allocation - traj.evals_used);
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
                    traj.status = TrajectoryStatus::Abandoned;
                    shared.fail(format!("optimizer crashed: {e}"));
                    return traj;
                }
            };
            traj.evals_used += step.evals_used;
            shared.pool.fetch_add(granted.saturating_sub(step.evals_used), Ordering::AcqRel);
            if step.status == ChunkStatus::Failed {
                traj.status = TrajectoryStatus::Abandoned;
                shared.fail(step.error.unwrap_or_else(|| "the problem could not be evaluated".into()));
                break;
            }
            if let Some(reason) = &step.ended {
                tracing::warn!(trajectory = traj.id, %reason, "the trajectory cannot go on");
                traj.status = TrajectoryStatus::Abandoned;
                break;
            }
            if let Some(b) = solver.best().filter(|b| traj.best.as_ref().is_none_or(|cur| b.better_than(cur, tol))) {
                traj.best = Some(b.clone());
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
            traj.note_progress(&diag);
            if diag.status == Status::FeasibleFound
                && let Some(at) = restarted_at.take()
            {
                tracing::debug!(trajectory = traj.id, restart_step = at, "feasible again after a restart");
                traj.restarts_recovered += 1;
            }
            traj.history.push(snapshot);

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
                    traj.status = if diag.status == Status::FeasibleFound {
                        TrajectoryStatus::Converged
                    } else {
                        TrajectoryStatus::Stagnated
                    };
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
            if step.converged && solver.kind() == TrajectoryKind::Population {
                // The population collapsed onto one point.
                traj.status = TrajectoryStatus::Converged;
                break;
            }
            if traj.stagnation_count >= self.config.max_stagnation_steps {
                traj.status = TrajectoryStatus::Stagnated;
                break;
            }
        }
        // Finish the trajectory's best point with an SQP polish on the
        // original problem, from the shared budget.
        if let Some(best) = traj.best.clone().filter(|b| {
            !*self.cancel.borrow() && traj.status != TrajectoryStatus::Abandoned && solver.polish_at_end(b, tol)
        }) {
            self.polish_into(&mut traj, &best.x, &shared).await;
        }
        if traj.status == TrajectoryStatus::Active {
            // Out of budget (or interrupted) while still working.
            traj.status = if traj.best.as_ref().is_some_and(|b| b.max_violation <= tol) {
                TrajectoryStatus::Converged
            } else {
                TrajectoryStatus::Stagnated
            };
        }
        traj
    }

    /// Polishes from `x`; a better point becomes the trajectory's best.
    async fn polish_into(&self, traj: &mut TrajectoryState, x: &[f64], shared: &Shared) {
        let tol = self.alm.feasibility_tolerance;
        if let Some(p) = self.polish_from(x, shared).await {
            traj.evals_used += p.evals_used;
            if let Some(b) = p.best.filter(|b| traj.best.as_ref().is_none_or(|cur| b.better_than(cur, tol))) {
                tracing::debug!(trajectory = traj.id, objective = b.objective, "polish improved the best point");
                traj.best = Some(b);
            }
        }
    }

    /// An SQP polish on the original problem from `x`, with up to
    /// `POLISH_ITERATIONS` iterations' worth of evaluations from the shared
    /// pool (what it does not use goes back).
    async fn polish_from(&self, x: &[f64], shared: &Shared) -> Option<crate::numeric::polish::Polished> {
        if *self.cancel.borrow() {
            return None;
        }
        let want = POLISH_ITERATIONS * (self.problem.dimension() as u64 + 1);
        let granted = Self::reserve(shared, want);
        if granted == 0 {
            return None;
        }
        let (problem, x, tol) = (self.problem.clone(), x.to_vec(), self.alm.feasibility_tolerance);
        let polished =
            tokio::task::spawn_blocking(move || crate::numeric::polish::polish(problem.as_ref(), &x, granted, tol))
                .await;
        let used = polished.as_ref().map_or(0, |p| p.evals_used);
        shared.pool.fetch_add(granted.saturating_sub(used), Ordering::AcqRel);
        polished.ok()
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
        best: t.best,
    });
}

/// Whether feasible end values of local trajectories disagree beyond
/// rounding (relative 1e-3): they found different optima.
fn distinct_optima(ends: &[f64]) -> bool {
    let (min, max) = ends.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
    ends.len() >= 2 && max - min > 1e-3 * min.abs().max(max.abs()).max(1e-9)
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
