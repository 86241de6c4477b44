//! One trajectory's optimizer, one chunk at a time — the Solver of argmin's
//! shape, where [`super::coordinator`] is the Executor (budget, directives,
//! termination) and the telemetry writer the Observer.
//!
//! The coordinator drives every kind of trajectory with the same loop: ask
//! the solver how many evaluations its next step wants, grant them from the
//! shared pool, run the step off the async runtime, read the state back as
//! a [`Snapshot`], let the supervisors decide, and hand the directive back
//! to the solver. What differs between an SQP descent ([`SqpSolver`]), the
//! augmented Lagrangian from one seed ([`AlmSolver`]), the two in turn
//! ([`LocalSolver`]) and differential evolution over a population
//! ([`PopulationSolver`]) lives here, behind [`ChunkSolver`].

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::config::{AsoConfig, UnsettledDescent};
use super::coordinator::{TrajectoryKind, TrajectoryState, apply_directive};
use super::diagnostics::{OptimizerDiagnostics, Snapshot, readings};
use super::directive::Directive;
use super::finishing::POLISH_ITERATIONS;
use super::seeds;
use crate::numeric::alm::{self, AlmSettings, AlmState, Candidate, ChunkStatus, Start};
use crate::numeric::polish::{self, KnownMinima, PolishEnd};
use crate::numeric::population::{self, PopulationSettings, PopulationStart, PopulationState};
use crate::numeric::problem::{Evaluation, Problem};

/// The names of a problem's inequalities and equalities, in order.
pub type Names = (Vec<String>, Vec<String>);

/// What one step did.
#[derive(Debug, Clone)]
pub struct Step {
    pub evals_used: u64,
    pub status: ChunkStatus,
    /// Why the problem could not be evaluated (with `ChunkStatus::Failed`).
    pub error: Option<String>,
    /// The solver cannot go on (nothing to start from): this trajectory
    /// ends, the others do not.
    pub ended: Option<String>,
    /// More steps would not help: the iterate stopped moving while
    /// feasible, or the population collapsed onto one point.
    pub converged: bool,
    /// The descent ended without settling and the trajectory ends there
    /// (`UnsettledDescent::End`): its best point goes to the end's polish.
    pub unsettled: bool,
    /// The descent reached a minimum another trajectory ended at
    /// ([`ChunkSolver::know_minima`]) and stopped there: the trajectory ends.
    pub joined: Option<Candidate>,
    /// Whether the step is judged (diagnostics, a directive, a telemetry
    /// row). A new population's first evaluation is not: its snapshot is
    /// what the first judged step is measured against.
    pub judged: bool,
}

impl Step {
    /// A step the problem failed in (`error`): the run ends.
    fn failed(evals_used: u64, error: String) -> Step {
        Step {
            evals_used,
            status: ChunkStatus::Failed,
            error: Some(error),
            ended: None,
            converged: false,
            unsettled: false,
            joined: None,
            judged: true,
        }
    }

    /// A step after which this trajectory cannot go on (`why`); the others go on.
    fn ended(evals_used: u64, why: impl Into<String>) -> Step {
        Step {
            evals_used,
            status: ChunkStatus::Skipped,
            error: None,
            ended: Some(why.into()),
            converged: false,
            unsettled: false,
            joined: None,
            judged: false,
        }
    }
}

/// One kind of trajectory's optimizer, a step at a time.
pub trait ChunkSolver: Send + 'static {
    fn kind(&self) -> TrajectoryKind;
    /// Evaluations the next step asks for, given the coordinator's chunk.
    fn wants(&self, chunk: u64) -> u64;
    /// The fewest evaluations a step can make progress with: fewer, and
    /// the trajectory is out of budget (a step that cannot evaluate
    /// anything would only repeat the last diagnosis).
    fn least(&self) -> u64;
    /// One step on at most `budget` evaluations (blocking: the coordinator
    /// runs it off the async runtime).
    fn step(&mut self, problem: &dyn Problem, budget: u64, settings: &AlmSettings) -> Step;
    /// The state as the diagnostics read it; `None` before there is one.
    fn snapshot(&self, names: &Names) -> Option<Snapshot>;
    /// The best point seen since the (re)start.
    fn best(&self) -> Option<&Candidate>;
    /// Adds what only this kind knows to the diagnostics.
    fn annotate(&self, _d: &mut OptimizerDiagnostics) {}
    /// Applies a directive's overrides; returns how many parts were refused.
    /// By default there are none to apply: the overrides are the ALM's.
    fn apply(&mut self, d: &Directive, _traj: &mut TrajectoryState, _config: &AsoConfig, _names: &Names) -> u32 {
        if d.config_overrides.is_some() {
            tracing::debug!(kind = ?self.kind(), "ALM overrides do not apply to this solver; continuing");
        }
        0
    }
    /// Whether a RESTART needs a point from the coordinator (the ALM
    /// restarts from one; a population draws its own).
    fn restarts_from_a_point(&self) -> bool;
    /// Starts over: from `point` when given, else from a fresh draw.
    fn restart(&mut self, point: Option<Vec<f64>>, rng: &mut ChaCha8Rng, evaluations_left: u64);
    /// A point worth polishing now, mid-run (the population's best when it
    /// has moved on far enough since the last polish).
    fn polish_now(&mut self, _tol: f64) -> Option<Vec<f64>> {
        None
    }
    /// Whether the solver is in an SQP descent (which a round's
    /// trajectories take in turn).
    fn descending(&self) -> bool {
        false
    }
    /// Whether the trajectory's best point still needs its final polish.
    fn polish_at_end(&self, _best: &Candidate, _tol: f64) -> bool {
        true
    }
    /// The minima other trajectories ended at, before a step: a descent
    /// that reaches one stops there (`Step::joined`). Other solvers ignore them.
    fn know_minima(&mut self, _minima: KnownMinima) {}
}

/// An SQP descent on the original problem (SLSQP, see
/// [`crate::numeric::polish`]): each step one SLSQP run of up to
/// `descent_iterations` iterations (`AsoConfig::descent_iterations`, 250)
/// from the best point so far. The cheap
/// local search: on a smooth problem its first step lands at the bottom of
/// the seed's basin for what SLSQP alone costs.
pub struct SqpSolver {
    /// Where the next step starts.
    at: Vec<f64>,
    best: Option<Candidate>,
    /// The objective and constraints at `best`, for the diagnostics.
    at_best: Option<Evaluation>,
    dimension: u64,
    /// The strict feasibility tolerance the polish's result is judged at (it stops within a twentieth of it).
    tol: f64,
    /// How the last step ended.
    last: Option<PolishEnd>,
    /// Whether the last step settled at a feasible point.
    settled: bool,
    /// How far the last step moved the best point.
    moved: f64,
    /// The problem's answer at `at`, when known before the first step (an
    /// evaluated seed): that step does not pay for it again.
    known: Option<Evaluation>,
    /// SLSQP iterations a step may take (each about dimension + 1 evaluations).
    iterations: u64,
    /// Minima whose basin ends the descent once its best point reaches one.
    join: Option<KnownMinima>,
}

impl SqpSolver {
    pub fn new(seed: Vec<f64>, dimension: usize, tol: f64) -> SqpSolver {
        SqpSolver {
            known: None,
            iterations: POLISH_ITERATIONS,
            at: seed,
            best: None,
            at_best: None,
            dimension: dimension as u64,
            tol,
            last: None,
            settled: false,
            moved: 0.0,
            join: None,
        }
    }

    /// Keeps a polish's best point if it beats ours, ranked as the polish
    /// ranks its own points: at a tenth of the tolerance.
    fn absorb(&mut self, best: Option<Candidate>, at_best: Option<Evaluation>) {
        let rank = 0.1 * self.tol;
        if let Some(b) = best.filter(|b| self.best.as_ref().is_none_or(|cur| b.better_than(cur, rank))) {
            self.at = b.x.clone();
            self.best = Some(b);
            self.at_best = at_best;
        }
    }

    /// Whether the best point is better than `before` by more than rounding.
    fn gained_on(&self, before: Option<&Candidate>) -> bool {
        match (&self.best, before) {
            (Some(b), Some(prev)) => {
                b.better_than(prev, 0.1 * self.tol)
                    && (b.max_violation < prev.max_violation
                        || prev.objective - b.objective > 1e-9 * prev.objective.abs().max(1.0))
            }
            (Some(_), None) => true,
            _ => false,
        }
    }
}

impl ChunkSolver for SqpSolver {
    /// (Within a run a descent is the first phase of a local trajectory.)
    fn kind(&self) -> TrajectoryKind {
        TrajectoryKind::Local
    }

    fn wants(&self, _chunk: u64) -> u64 {
        self.iterations * (self.dimension + 1)
    }

    fn least(&self) -> u64 {
        // A value, a gradient by differences, and one step.
        self.dimension + 2
    }

    fn step(&mut self, problem: &dyn Problem, budget: u64, _settings: &AlmSettings) -> Step {
        let from = self.at.clone();
        let mut used = 0;
        // SLSQP also stops stuck (no step makes progress) short of a
        // first-order point, where its quasi-Newton model went bad: one
        // fresh start from the best point resets the model. Stuck again
        // without a gain, SQP has nothing more to offer from here.
        let mut ended = None;
        // The known minimum the descent stopped at, if it did.
        let mut joined = None;
        for attempt in 0..2 {
            // Too little left for a fresh start to take a step.
            if budget - used < self.least() {
                break;
            }
            let before = self.best.clone();
            let p = polish::descend(problem, &self.at, self.known.take(), budget - used, self.tol, self.join.as_ref());
            used += p.evals_used;
            // The best point reached counts even when the problem then failed.
            self.absorb(p.best, p.at_best);
            if let Some(e) = p.error {
                return Step::failed(used, e);
            }
            self.settled = p.converged;
            self.last = Some(p.end);
            joined = p.joined.clone();
            if p.end != PolishEnd::Stuck || p.converged {
                break;
            }
            if attempt == 1 && !self.gained_on(before.as_ref()) {
                ended = Some("SQP finds no step from its best point".to_string());
            }
        }
        self.moved = distance(&from, &self.at);
        Step {
            evals_used: used,
            status: ChunkStatus::Optimized,
            error: None,
            ended,
            converged: self.settled,
            unsettled: false,
            joined,
            judged: true,
        }
    }

    fn snapshot(&self, names: &Names) -> Option<Snapshot> {
        let (b, e) = (self.best.as_ref()?, self.at_best.as_ref()?);
        // SQP has no penalties.
        let constraints = readings((&names.0, &names.1), &e.inequalities, &e.equalities, |_, _| 0.0);
        Some(Snapshot { objective: b.objective, constraints, bounds_norm: self.moved })
    }

    fn best(&self) -> Option<&Candidate> {
        self.best.as_ref()
    }

    fn annotate(&self, d: &mut OptimizerDiagnostics) {
        let end = match self.last {
            Some(PolishEnd::Settled) => "settled on its tolerances",
            Some(PolishEnd::Budget) => "used its evaluations",
            Some(PolishEnd::Stuck) => "found no step that makes progress",
            Some(PolishEnd::Joined) => "reached a minimum another trajectory ended at",
            Some(PolishEnd::Failed) | None => "could not step",
        };
        d.narrative.push(format!(
            "SQP descent: SLSQP {end}; the best point moved by {:.3e}; objective and constraints are the best point's.",
            self.moved
        ));
    }

    fn restarts_from_a_point(&self) -> bool {
        true
    }

    fn restart(&mut self, point: Option<Vec<f64>>, _rng: &mut ChaCha8Rng, _left: u64) {
        if let Some(x) = point {
            self.at = x;
            self.known = None;
        }
        (self.best, self.at_best, self.last, self.settled, self.moved) = (None, None, None, false, 0.0);
    }

    /// Unless the descent settled: its steps are polishes already.
    fn polish_at_end(&self, best: &Candidate, tol: f64) -> bool {
        !self.settled || best.max_violation > 0.1 * tol
    }

    fn know_minima(&mut self, minima: KnownMinima) {
        self.join = Some(minima);
    }
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt()
}

/// A local trajectory: an SQP descent from the seed; a descent that settled
/// at a feasible point ends there (`stop_after_descent`), one that did not
/// either ends too (`UnsettledDescent::End`, the default: the end's polish
/// takes its best point on) or hands over to the augmented Lagrangian from
/// the best point it found (`UnsettledDescent::Alm`). On smooth problems
/// the descent lands in the seed's basin in a few hundred evaluations; on
/// piecewise ones (g17) it often finds a cheaper piece than the penalty
/// path would.
pub struct LocalSolver {
    phase: Phase,
    dimension: usize,
    stop_after_descent: bool,
    /// What follows a descent that did not settle.
    unsettled: UnsettledDescent,
    /// The strict feasibility tolerance (the descent's, and the rank of the samples).
    tol: f64,
    /// SLSQP iterations the descent may take (see `AsoConfig::descent_iterations`).
    descent_iterations: u64,
    /// The minima the descent stops at (see [`ChunkSolver::know_minima`]).
    join: Option<KnownMinima>,
}

enum Phase {
    /// The start is not chosen yet: the first step evaluates the samples
    /// (see [`seeds::SeedSource`]) and descends from the best at once.
    Seeding(Option<seeds::SeedSource>),
    Descent(SqpSolver),
    /// The ALM, with the descent it took over from: the diagnostics read the
    /// descent's end until the ALM has a state of its own.
    Alm(AlmSolver, Option<Box<SqpSolver>>),
}

impl LocalSolver {
    pub fn new(seed: Vec<f64>, dimension: usize, tol: f64, stop_after_descent: bool) -> LocalSolver {
        LocalSolver {
            phase: Phase::Descent(SqpSolver::new(seed, dimension, tol)),
            dimension,
            stop_after_descent,
            unsettled: UnsettledDescent::End,
            tol,
            descent_iterations: POLISH_ITERATIONS,
            join: None,
        }
    }

    /// The descent may take `iterations` SLSQP iterations (at least one).
    pub fn descent_iterations(mut self, iterations: u64) -> LocalSolver {
        self.descent_iterations = iterations.max(1);
        if let Phase::Descent(d) = &mut self.phase {
            d.iterations = self.descent_iterations;
        }
        self
    }

    /// What follows a descent that does not settle.
    pub fn when_unsettled(mut self, unsettled: UnsettledDescent) -> LocalSolver {
        self.unsettled = unsettled;
        self
    }

    /// A descent from `x` with this trajectory's settings.
    fn descent_from(&self, x: Vec<f64>) -> SqpSolver {
        SqpSolver {
            iterations: self.descent_iterations,
            join: self.join.clone(),
            ..SqpSolver::new(x, self.dimension, self.tol)
        }
    }

    /// A local trajectory whose start is chosen on its first step, from
    /// `source`'s samples (which that step evaluates).
    pub fn seeding(source: seeds::SeedSource, dimension: usize, tol: f64, stop_after_descent: bool) -> LocalSolver {
        LocalSolver {
            phase: Phase::Seeding(Some(source)),
            dimension,
            stop_after_descent,
            unsettled: UnsettledDescent::End,
            tol,
            descent_iterations: POLISH_ITERATIONS,
            join: None,
        }
    }

    /// Evaluations the samples not yet evaluated may take.
    fn seeding_evaluations(&self) -> u64 {
        match &self.phase {
            Phase::Seeding(Some(source)) => source.pending(),
            _ => 0,
        }
    }

    /// Chooses the start (evaluating the samples): the descent from it
    /// takes over, knowing its value. The evaluations used, or the step
    /// that ends the trajectory (the problem failed, or no sample had a
    /// finite value).
    fn choose_start(&mut self, problem: &dyn Problem) -> Result<u64, Step> {
        let Phase::Seeding(source) = &mut self.phase else { return Ok(0) };
        let Some(source) = source.take() else { return Ok(0) };
        let own = matches!(source, seeds::SeedSource::Own(_));
        match source.choose(problem, self.tol) {
            Ok((Some((start, value)), used)) => {
                let mut descent = self.descent_from(start.x);
                descent.known = Some(value);
                self.phase = Phase::Descent(descent);
                Ok(used)
            }
            Ok((None, used)) => Err(Step::ended(used, "no sample gave the problem's values a start can use")),
            // Its own few samples failing need not mean a broken problem:
            // the round's other trajectories try theirs.
            Err(e) if own => Err(Step::ended(0, format!("no sample could be evaluated: {}", e.0))),
            Err(e) => Err(Step::failed(0, e.0)),
        }
    }

    /// The problem's answer at the seed, already evaluated (see `SqpSolver::known`).
    pub fn knowing(mut self, value: Option<Evaluation>) -> LocalSolver {
        if let Phase::Descent(d) = &mut self.phase {
            d.known = value;
        }
        self
    }

    /// The ALM from where the descent got to (its best point, else its start).
    fn hand_over(&mut self) {
        let Phase::Descent(d) = &self.phase else { return };
        let alm = AlmSolver::new(d.at.clone(), self.dimension);
        if let Phase::Descent(d) = std::mem::replace(&mut self.phase, Phase::Alm(alm, None))
            && let Phase::Alm(_, handed_over) = &mut self.phase
        {
            *handed_over = Some(Box::new(d));
        }
    }

    /// The solver that steps now (a trajectory still choosing its start
    /// has none: `None`).
    fn current(&self) -> Option<&dyn ChunkSolver> {
        match &self.phase {
            Phase::Seeding(_) => None,
            Phase::Descent(d) => Some(d),
            Phase::Alm(a, _) => Some(a),
        }
    }

    /// The solver whose state the diagnostics read.
    fn shown(&self) -> Option<&dyn ChunkSolver> {
        match &self.phase {
            Phase::Alm(a, Some(d)) if a.state.is_none() => Some(d.as_ref()),
            _ => self.current(),
        }
    }
}

impl ChunkSolver for LocalSolver {
    fn kind(&self) -> TrajectoryKind {
        TrajectoryKind::Local
    }

    fn descending(&self) -> bool {
        matches!(self.phase, Phase::Descent(_) | Phase::Seeding(_))
    }

    /// (A trajectory choosing its start asks for its samples and the
    /// descent from the best of them: one step.)
    fn wants(&self, chunk: u64) -> u64 {
        match self.current() {
            Some(s) => s.wants(chunk),
            None => self.seeding_evaluations() + self.descent_iterations * (self.dimension as u64 + 1),
        }
    }

    fn least(&self) -> u64 {
        match self.current() {
            Some(s) => s.least(),
            None => self.seeding_evaluations() + self.dimension as u64 + 2,
        }
    }

    fn step(&mut self, problem: &dyn Problem, budget: u64, settings: &AlmSettings) -> Step {
        let seeding = match self.choose_start(problem) {
            Ok(used) => used,
            Err(step) => return step,
        };
        if seeding > 0 {
            let mut step = self.step(problem, budget.saturating_sub(seeding), settings);
            step.evals_used += seeding;
            return step;
        }
        let mut step = match &mut self.phase {
            // (Chosen above: a start that is not there ends the trajectory.)
            Phase::Seeding(_) => {
                return Step::ended(0, "the trajectory has no start");
            }
            Phase::Alm(alm, handed_over) => {
                let mut step = alm.step(problem, budget, settings);
                if alm.state.is_some() && handed_over.take().is_some() {
                    // The ALM's first chunk is what its later ones are measured
                    // against, not the descent's end (a penalty path leaves the
                    // feasible region first: no sign of diverging).
                    step.judged = false;
                }
                return step;
            }
            Phase::Descent(d) => d.step(problem, budget, settings),
        };
        if step.status == ChunkStatus::Failed || step.joined.is_some() || (step.converged && self.stop_after_descent) {
            return step;
        }
        // The trajectory goes on (with the ALM) or ends as unsettled: not
        // as a solver that cannot go on.
        step.ended = None;
        if !step.converged {
            if let Phase::Descent(d) = &self.phase {
                let best = d.best.as_ref().map(|b| (b.objective, b.max_violation));
                tracing::debug!(end = ?d.last, evals = step.evals_used, ?best, "the descent did not settle");
            }
            if self.unsettled == UnsettledDescent::End {
                step.unsettled = true;
                return step;
            }
        }
        self.hand_over();
        step.converged = false;
        step
    }

    fn snapshot(&self, names: &Names) -> Option<Snapshot> {
        self.shown()?.snapshot(names)
    }

    fn best(&self) -> Option<&Candidate> {
        self.shown()?.best()
    }

    fn annotate(&self, d: &mut OptimizerDiagnostics) {
        if let Some(s) = self.shown() {
            s.annotate(d)
        }
    }

    fn apply(&mut self, d: &Directive, traj: &mut TrajectoryState, config: &AsoConfig, names: &Names) -> u32 {
        match &mut self.phase {
            Phase::Seeding(_) => 0,
            Phase::Descent(s) => s.apply(d, traj, config, names),
            Phase::Alm(a, _) => a.apply(d, traj, config, names),
        }
    }

    fn restarts_from_a_point(&self) -> bool {
        true
    }

    /// The ALM restarts from the point (a descent in progress starts its
    /// next step there).
    fn restart(&mut self, point: Option<Vec<f64>>, rng: &mut ChaCha8Rng, left: u64) {
        match &mut self.phase {
            Phase::Seeding(_) => {
                if let Some(x) = point {
                    self.phase = Phase::Descent(self.descent_from(x));
                }
            }
            Phase::Descent(s) => s.restart(point, rng, left),
            Phase::Alm(a, handed_over) => {
                *handed_over = None;
                a.restart(point, rng, left);
            }
        }
    }

    fn know_minima(&mut self, minima: KnownMinima) {
        if let Phase::Descent(d) = &mut self.phase {
            d.know_minima(minima.clone());
        }
        self.join = Some(minima);
    }

    fn polish_at_end(&self, best: &Candidate, tol: f64) -> bool {
        match &self.phase {
            Phase::Seeding(_) => false,
            Phase::Descent(d) => d.polish_at_end(best, tol),
            Phase::Alm(..) => true,
        }
    }
}

/// The augmented Lagrangian from one seed (a local trajectory).
pub struct AlmSolver {
    state: Option<AlmState>,
    /// Where the next step starts afresh (the seed, or a restart point).
    seed: Option<Vec<f64>>,
    dimension: u64,
}

impl AlmSolver {
    pub fn new(seed: Vec<f64>, dimension: usize) -> AlmSolver {
        AlmSolver { state: None, seed: Some(seed), dimension: dimension as u64 }
    }
}

impl ChunkSolver for AlmSolver {
    fn kind(&self) -> TrajectoryKind {
        TrajectoryKind::Local
    }

    fn wants(&self, chunk: u64) -> u64 {
        chunk.max(self.least())
    }

    fn least(&self) -> u64 {
        // One outer iteration: a gradient (n probes), a step, the final evaluation.
        self.dimension + 2
    }

    fn step(&mut self, problem: &dyn Problem, budget: u64, settings: &AlmSettings) -> Step {
        let start = match (self.seed.take(), self.state.take()) {
            (Some(x), _) => Start::Seed(x),
            (None, Some(s)) => Start::Continue(Box::new(s)),
            (None, None) => {
                return Step::ended(0, "the augmented Lagrangian has nothing to go on from");
            }
        };
        let r = alm::run_chunk(problem, start, budget, settings);
        let ended = r.state.is_none().then(|| "the augmented Lagrangian has no state to go on from".to_string());
        self.state = r.state;
        Step {
            evals_used: r.evals_used,
            status: r.status,
            error: r.error,
            ended,
            converged: r.converged,
            unsettled: false,
            joined: None,
            judged: true,
        }
    }

    fn snapshot(&self, names: &Names) -> Option<Snapshot> {
        self.state.as_ref().map(|s| s.snapshot(&names.0, &names.1))
    }

    fn best(&self) -> Option<&Candidate> {
        self.state.as_ref().map(|s| &s.best)
    }

    fn apply(&mut self, d: &Directive, traj: &mut TrajectoryState, config: &AsoConfig, names: &Names) -> u32 {
        match self.state.as_mut() {
            Some(state) => apply_directive(d, state, traj, config, names),
            None => 0,
        }
    }

    fn restarts_from_a_point(&self) -> bool {
        true
    }

    fn restart(&mut self, point: Option<Vec<f64>>, _rng: &mut ChaCha8Rng, _left: u64) {
        self.state = None;
        self.seed = point;
    }
}

/// Whether a population's best feasible `objective` is due a polish: the
/// first, or better than the one `last` polished by `gain` of its size.
pub fn polish_due(objective: f64, last: Option<f64>, gain: f64) -> bool {
    last.is_none_or(|p| objective < p - gain * p.abs().max(1e-12))
}

/// Differential evolution with the ε comparison over a population drawn
/// from the whole box; its best point polished as it improves.
pub struct PopulationSolver {
    state: Option<PopulationState>,
    /// A fresh population to evaluate next (at the start and on RESTART).
    fresh: Option<PopulationStart>,
    settings: PopulationSettings,
    bounds: Vec<(f64, f64)>,
    size: usize,
    /// Generations per step.
    generations: u64,
    /// Relative gain of the best point since the last polish that makes
    /// another one worth its evaluations.
    gain: f64,
    /// The objective of the last point polished.
    polished: Option<f64>,
}

impl PopulationSolver {
    pub fn new(
        problem: &dyn Problem,
        config: &AsoConfig,
        planned_evaluations: u64,
        rng: &mut ChaCha8Rng,
    ) -> PopulationSolver {
        let settings = config.population_settings();
        let size = settings.population_size(problem.dimension());
        let mut solver = PopulationSolver {
            state: None,
            fresh: None,
            settings,
            bounds: problem.bounds(),
            size,
            generations: u64::from(config.population_chunk_generations.max(1)),
            gain: config.population_polish_gain.max(0.0),
            polished: None,
        };
        solver.restart(None, rng, planned_evaluations);
        solver
    }
}

impl ChunkSolver for PopulationSolver {
    fn kind(&self) -> TrajectoryKind {
        TrajectoryKind::Population
    }

    fn wants(&self, _chunk: u64) -> u64 {
        // A new population is first evaluated on its own.
        let pending = self.state.as_ref().map_or(0, |s| s.pending.len());
        if self.fresh.is_some() {
            self.size as u64
        } else if pending > 0 {
            pending as u64
        } else {
            self.generations * self.size as u64
        }
    }

    fn least(&self) -> u64 {
        1
    }

    fn step(&mut self, problem: &dyn Problem, budget: u64, _settings: &AlmSettings) -> Step {
        let initializing = self.fresh.is_some() || self.state.as_ref().is_some_and(|s| !s.pending.is_empty());
        let start = match (self.fresh.take(), self.state.take()) {
            (Some(fresh), _) => fresh,
            (None, Some(s)) => PopulationStart::Continue(Box::new(s)),
            (None, None) => {
                return Step::ended(0, "the population has nothing to go on from");
            }
        };
        let r = population::run_chunk(problem, start, budget, &self.settings);
        // Nothing to start from (e.g. a population below four members).
        let ended =
            r.state.is_none().then(|| r.error.clone().unwrap_or_else(|| "the population could not start".into()));
        let error = if r.status == ChunkStatus::Failed { r.error } else { None };
        self.state = r.state;
        Step {
            evals_used: r.evals_used,
            status: r.status,
            error,
            ended,
            converged: r.converged,
            unsettled: false,
            joined: None,
            judged: !initializing,
        }
    }

    fn snapshot(&self, names: &Names) -> Option<Snapshot> {
        // An incomplete population has no median to speak of yet.
        self.state.as_ref().filter(|s| s.pending.is_empty()).map(|s| s.snapshot(&names.0, &names.1))
    }

    fn best(&self) -> Option<&Candidate> {
        self.state.as_ref().and_then(|s| s.best.as_ref())
    }

    fn annotate(&self, d: &mut OptimizerDiagnostics) {
        let Some(state) = &self.state else { return };
        d.optimizer_health.insert("population_size".into(), state.members.len() as f64);
        d.optimizer_health.insert("generation".into(), f64::from(state.generation));
        d.optimizer_health.insert("epsilon_level".into(), state.epsilon);
        d.narrative.push(format!(
            "Population trajectory (εDE): generation {}, {} members, ε = {:.3e}; objective and constraints \
             are the median member's.",
            state.generation,
            state.members.len(),
            state.epsilon
        ));
    }

    fn restarts_from_a_point(&self) -> bool {
        false
    }

    /// A Latin hypercube of the whole box, not a cloud around the rounds'
    /// best point: one good member would pull the whole population into
    /// the basin the local searches already know.
    fn restart(&mut self, _point: Option<Vec<f64>>, rng: &mut ChaCha8Rng, evaluations_left: u64) {
        self.state = None;
        self.fresh = Some(PopulationStart::Fresh {
            points: seeds::latin_hypercube(&self.bounds, self.size, rng),
            planned_evaluations: evaluations_left,
            seed: rng.random(),
        });
    }

    fn polish_now(&mut self, tol: f64) -> Option<Vec<f64>> {
        let gain = self.gain;
        let polished = self.polished;
        let due = self.best().filter(|b| b.max_violation <= tol && polish_due(b.objective, polished, gain))?.clone();
        self.polished = Some(due.objective);
        Some(due.x)
    }

    /// Unless the best point is the one polished last.
    fn polish_at_end(&self, best: &Candidate, tol: f64) -> bool {
        self.polished.is_none_or(|p| best.objective < p || best.max_violation > tol)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::builtin;

    /// A start of g17's (the bench's lead descent, seed 1) from which SLSQP
    /// crawls along the jump of the piecewise cost at x₂ = 100 to the
    /// optimum: about 150 iterations.
    const G17_CRAWL: [f64; 6] = [
        296.2907059897033,
        661.7248184053769,
        410.367193590214,
        394.6688058260246,
        -709.2210452036766,
        0.3417966554848687,
    ];

    #[test]
    fn a_local_trajectory_s_descent_takes_the_configured_slsqp_iterations() {
        let p = builtin("g17").unwrap();
        let settings = AlmSettings::default();
        let local = |iterations: u64| {
            let mut s = LocalSolver::new(G17_CRAWL.to_vec(), 6, 1e-6, true).descent_iterations(iterations);
            let wants = s.wants(210);
            let step = s.step(p.as_ref(), wants, &settings);
            (wants, step, s.best().cloned().expect("a best point"))
        };
        // The default: the descent crawls on to the optimum and settles there.
        let (wants, step, best) = local(AsoConfig::default().descent_iterations());
        assert_eq!(wants, AsoConfig::default().descent_iterations() * 7);
        assert!(step.converged, "{step:?}");
        assert!(best.max_violation <= 1e-6 && (best.objective - 8853.5398913523) / 8853.5398913523 <= 1e-4, "{best:?}");
        // Cut at 60 iterations (the polish's), it stops on the way, 24 above
        // the optimum.
        let (_, step, best) = local(POLISH_ITERATIONS);
        assert!(!step.converged && best.objective > 8860.0, "{step:?} {best:?}");
    }

    #[test]
    fn a_descent_that_does_not_settle_ends_the_trajectory_or_hands_over_to_the_alm_as_configured() {
        let p = builtin("g17").unwrap();
        let settings = AlmSettings::default();
        let cut = |unsettled: UnsettledDescent| {
            let mut s = LocalSolver::new(G17_CRAWL.to_vec(), 6, 1e-6, true)
                .descent_iterations(POLISH_ITERATIONS)
                .when_unsettled(unsettled);
            let step = s.step(p.as_ref(), s.wants(210), &settings);
            (step, s)
        };
        // Ending: the step says so, and the solver is still the descent's
        // (its best point is what the end's polish starts from).
        let (step, solver) = cut(UnsettledDescent::End);
        assert!(step.unsettled && !step.converged && step.ended.is_none(), "{step:?}");
        assert!(solver.descending());
        assert!(solver.polish_at_end(solver.best().expect("a best point"), 1e-6));
        // Handing over: the next step is the augmented Lagrangian's.
        let (step, solver) = cut(UnsettledDescent::Alm);
        assert!(!step.unsettled && !step.converged && step.ended.is_none(), "{step:?}");
        assert!(!solver.descending());
    }
}
