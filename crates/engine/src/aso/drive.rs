//! One trajectory's loop, whatever solver drives it (argmin's Executor for a
//! single trajectory): grant the solver's next step its evaluations from the
//! run's shared pool, run it, judge the state it reached, let the tiered
//! supervisor decide, record the step (the telemetry observer), act on the
//! directive — and end the trajectory on its own tests, then polish its best
//! point. A round's local trajectories take turns for their SQP descents
//! through a [`Gate`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::coordinator::{Coordinator, Shared};
use super::diagnostics::{self, OptimizerDiagnostics, Snapshot, Status, TrajectoryView};
use super::directive::{Directive, DirectiveAction};
use super::seeds;
use super::solver::{ChunkSolver, Names, Step};
use super::trajectory::{TrajectoryKind, TrajectoryState, TrajectoryStatus, TrajectoryStop};
use crate::numeric::alm::ChunkStatus;
use crate::store::TelemetryRow;

/// How a round's trajectories take turns for their SQP descents
/// (`descents_in_turn`): one descends at a time (the lock), and none goes on
/// with the ALM before every descent of the round is done (the barrier) —
/// a multistart of SQP first, the augmented Lagrangians after.
#[derive(Clone)]
pub(super) struct Gate {
    turn: Arc<tokio::sync::Mutex<()>>,
    descents_done: Arc<tokio::sync::Barrier>,
}

impl Gate {
    pub(super) fn new(trajectories: usize) -> Gate {
        Gate {
            turn: Arc::new(tokio::sync::Mutex::new(())),
            descents_done: Arc::new(tokio::sync::Barrier::new(trajectories)),
        }
    }
}

/// A trajectory's place in its round's turns (see [`Gate`]): the lock held
/// while its solver descends, and whether it has passed the barrier after
/// the round's descents.
struct Seat {
    gate: Option<Gate>,
    turn: Option<tokio::sync::OwnedMutexGuard<()>>,
    passed: bool,
}

impl Seat {
    fn new(gate: Option<Gate>) -> Seat {
        Seat { gate, turn: None, passed: false }
    }

    /// Whether the trajectory takes turns with others (and so may have waited).
    fn gated(&self) -> bool {
        self.gate.is_some()
    }

    /// Before a step: a descent that is over (its step recorded) gives the
    /// next trajectory its turn, and this one goes on once every descent of
    /// the round is done; a descent waits for its turn.
    async fn wait_turn(&mut self, descending: bool) {
        if let Some(g) = self.gate.as_ref().filter(|_| !self.passed && !descending) {
            self.turn = None;
            g.descents_done.wait().await;
            self.passed = true;
        }
        if let Some(g) = self.gate.as_ref().filter(|_| self.turn.is_none() && descending) {
            self.turn = Some(g.turn.clone().lock_owned().await);
        }
    }

    /// The trajectory has ended: if it ended while descending, the round's
    /// others may go on with their ALMs.
    async fn leave(mut self) {
        self.turn = None;
        if let Some(g) = self.gate.as_ref().filter(|_| !self.passed) {
            g.descents_done.wait().await;
        }
    }
}

impl Coordinator {
    /// The one trajectory loop, whatever drives it: grant the solver's next
    /// step its evaluations, run it, judge the state it reached, let the
    /// supervisors decide, record the step, act on the directive — until a
    /// STOP, the trajectory's own tests, the allocation, an interrupt or a
    /// failure; then finish its best point.
    pub(super) async fn drive(
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
        let mut seat = Seat::new(gate);
        let names: Names = (self.problem.inequality_names(), self.problem.equality_names());
        let bounds = self.problem.bounds();
        let mut restarted_at: Option<u32> = None;
        while traj.status == TrajectoryStatus::Active && traj.evals_used < allocation && !*self.cancel.borrow() {
            seat.wait_turn(solver.descending()).await;
            // Either wait can be long: the run may have been stopped meanwhile.
            if seat.gated() && (*self.cancel.borrow() || shared.failed()) {
                break;
            }
            // A global start's descent stops once it reaches a minimum
            // another trajectory ended at (hops close in on the best: not theirs).
            let c = &self.config;
            if c.stop_at_known_minima && c.join_radius > 0.0 && !traj.around_best && solver.descending() {
                solver.know_minima(shared.known_minima(c.join_radius));
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
                    seat.leave().await;
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
                shared.fail(step.error.clone().unwrap_or_else(|| "the problem could not be evaluated".into()));
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
            let cut_short = granted < full;
            let (diag, directive) =
                self.judge(&mut traj, solver.as_mut(), snapshot, cut_short, &mut restarted_at, &shared, started).await;
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
                    self.restart(&mut traj, solver.as_mut(), &directive, allocation, &shared, &mut rng).await;
                    restarted_at = Some(traj.steps);
                    continue;
                }
                DirectiveAction::Adjust | DirectiveAction::Continue => {
                    let rejected = solver.apply(&directive, &mut traj, &self.config, &names);
                    shared.rejected.fetch_add(u64::from(rejected), Ordering::Relaxed);
                }
            }
            // A descent stopped at a known minimum ends there: the minimum
            // is what its search reached, and what the basin evidence counts.
            if let Some(minimum) = step.joined.clone() {
                traj.best = Some(minimum);
            }
            if let Some((status, why)) = self.own_stop(&mut traj, solver.as_ref(), &step, &diag, &bounds, &shared) {
                traj.end(status, why);
                break;
            }
        }
        seat.leave().await;
        self.end_trajectory(traj, solver.as_ref(), &shared).await
    }

    /// Judges the state a step reached: the diagnostics (with the history
    /// and the solver's own annotations), the trajectory's progress, a
    /// mid-run polish where the solver asks for one, the supervisors'
    /// directive, and the step's telemetry row.
    #[allow(clippy::too_many_arguments)]
    async fn judge(
        &self,
        traj: &mut TrajectoryState,
        solver: &mut dyn ChunkSolver,
        snapshot: Snapshot,
        cut_short: bool,
        restarted_at: &mut Option<u32>,
        shared: &Shared,
        started: Instant,
    ) -> (OptimizerDiagnostics, Directive) {
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
            &self.config.thresholds(),
        );
        solver.annotate(&mut diag);
        // A step cut short by the budget (its own share or the run's pool
        // near its end) measured no change worth the name: an objective
        // that did not move on a handful of evaluations says nothing about
        // convergence, and read as "flat" it ended trajectories as
        // converged far from the optimum (cantilever at f = 8.9 against
        // 1.34). It is supervised as a first step is: without a delta.
        if cut_short {
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
        if let Some(x) = solver.polish_now(self.alm.feasibility_tolerance) {
            self.polish_into(traj, &x, shared).await;
        }

        let supervised = self.supervisor.supervise(&diag, &self.context).await;
        self.record(traj, &diag, &supervised.directive, supervised.llm_call_made, started).await;
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
        (diag, directive)
    }

    /// RESTART: the solver starts afresh — from a point the problem can
    /// evaluate, where it restarts from one — and the trajectory forgets
    /// its window.
    async fn restart(
        &self,
        traj: &mut TrajectoryState,
        solver: &mut dyn ChunkSolver,
        directive: &Directive,
        allocation: u64,
        shared: &Shared,
        rng: &mut ChaCha8Rng,
    ) {
        let point = if solver.restarts_from_a_point() {
            let (x, probes) = self.valid_restart_point(directive, traj, rng).await;
            traj.evals_used += probes;
            Self::reserve(shared, probes);
            traj.seed = x.clone();
            Some(x)
        } else {
            None
        };
        solver.restart(point, rng, allocation.saturating_sub(traj.evals_used));
        traj.history.clear();
        traj.forget_window();
        traj.stagnation_count = 0;
        traj.restarts += 1;
    }

    /// The trajectory's own tests after a step it went on from: how it
    /// ends, if it does.
    fn own_stop(
        &self,
        traj: &mut TrajectoryState,
        solver: &dyn ChunkSolver,
        step: &Step,
        diag: &OptimizerDiagnostics,
        bounds: &[(f64, f64)],
        shared: &Shared,
    ) -> Option<(TrajectoryStatus, TrajectoryStop)> {
        let tol = self.alm.feasibility_tolerance;
        // The descent reached a minimum another trajectory ended at.
        if step.joined.is_some() {
            return Some((TrajectoryStatus::Converged, TrajectoryStop::KnownMinimum));
        }
        // Back at a minimum another trajectory ended at: what is left of
        // this one's search would find it again (multi-level single
        // linkage's rule, applied after the descent rather than before).
        if self.config.stop_at_known_minima
            && solver.kind() == TrajectoryKind::Local
            && traj
                .best
                .as_ref()
                .is_some_and(|b| shared.at_known_minimum(b, self.tol(), self.config.agreement_tolerance, bounds))
        {
            return Some((TrajectoryStatus::Converged, TrajectoryStop::KnownMinimum));
        }
        // A descent that did not settle, where the settings end the
        // trajectory there: the end's polish takes its best point on.
        if step.unsettled {
            return Some((traj.status_at_end(tol), TrajectoryStop::Unsettled));
        }
        // The solver's own test: the ALM's iterate stopped moving while
        // feasible, or the population collapsed onto one point.
        if step.converged && (diag.status == Status::FeasibleFound || solver.kind() == TrajectoryKind::Population) {
            return Some((traj.status_at_end(tol), TrajectoryStop::Stationary));
        }
        // (A population has its own test, the collapse: its median can sit
        // still for generations while ε tightens and a member finds a
        // better basin.)
        if solver.kind() != TrajectoryKind::Population && traj.flat(diag, bounds, &self.config) {
            return Some((TrajectoryStatus::Converged, TrajectoryStop::Flat));
        }
        if traj.stagnation_count >= self.config.max_stagnation_steps {
            return Some((TrajectoryStatus::Stagnated, TrajectoryStop::Stagnation));
        }
        None
    }

    /// A trajectory that has stopped: its best point polished with SQP on
    /// the original problem (from the shared budget) and, still short of the
    /// strict tolerance, restored onto its constraints; a minimum it
    /// converged to joins the run's known ones.
    async fn end_trajectory(
        &self,
        mut traj: TrajectoryState,
        solver: &dyn ChunkSolver,
        shared: &Shared,
    ) -> TrajectoryState {
        // (Not at a known minimum: that one was polished when it was found.)
        let known = traj.stop == Some(TrajectoryStop::KnownMinimum);
        if let Some(best) = traj.best.clone().filter(|b| {
            !*self.cancel.borrow()
                && !known
                && traj.status != TrajectoryStatus::Abandoned
                && solver.polish_at_end(b, self.tol())
        }) {
            let settled = self.polish_into(&mut traj, &best.x, shared).await;
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
                let (restored, used) = self.restore_from(&b, shared).await;
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
