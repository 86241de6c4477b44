//! A final local polish of a trajectory's best point: SLSQP on the original
//! constrained problem (inequalities as they are, equalities as equalities —
//! through the vendored `slsqp` crate's `minimize_with_equalities`, see
//! `vendor/slsqp/README-attractor.md`), with forward-difference gradients.
//!
//! The augmented Lagrangian gets close and keeps the search robust; a
//! sequential-quadratic step from where it ended converges the last digits
//! fast when the active set is right. Objective, constraints and their
//! gradients at one point come from one evaluation plus one per variable — a
//! small cache shares them between the objective and every constraint, so
//! SLSQP asking for each separately costs nothing extra. The probes of one
//! gradient go to the problem as one batch (one message to a persistent
//! external evaluator), and an evaluator that sends exact gradients spares
//! them altogether. Every evaluation is counted and the best point seen is kept.

use std::cell::{Cell, RefCell};

use super::alm::Candidate;
use super::problem::{EvalError, Evaluation, Problem};

/// Values and forward-difference gradients at one point.
struct Cache<'p> {
    problem: &'p dyn Problem,
    evals: u64,
    budget: u64,
    /// The violation at which the best point seen counts as feasible: a
    /// tenth of the polish's tolerance.
    tol: f64,
    best: Option<Candidate>,
    /// The objective and constraints at `best`.
    at_best: Option<Evaluation>,
    error: Option<EvalError>,
    /// SLSQP stepped to a non-finite point (a singular subproblem): the
    /// polish is over, and the problem is not to blame for it.
    diverged: bool,
    at: Vec<f64>,
    value: Option<Evaluation>,
    /// Gradients: the objective's, then one per inequality, then one per equality.
    gradients: Option<Vec<Vec<f64>>>,
    /// Minima whose basin, once the best point reaches one, ends the descent.
    join: Option<(&'p KnownMinima, &'p [(f64, f64)])>,
    /// The minimum the best point reached (SLSQP is told to stop).
    joined: Option<Candidate>,
}

impl Cache<'_> {
    /// Evaluates `points` in one batch, or nothing when the budget cannot pay
    /// for all of them (a gradient cut short is of no use).
    fn eval_all(&mut self, points: &[Vec<f64>]) -> Option<Vec<Evaluation>> {
        if self.error.is_some() || self.diverged || self.evals + points.len() as u64 > self.budget {
            return None;
        }
        // Never hand a NaN point to the evaluator: an external one would
        // fail on it and the run would blame a healthy problem.
        if points.iter().flatten().any(|v| !v.is_finite()) {
            self.diverged = true;
            return None;
        }
        self.evals += points.len() as u64;
        let mut values = Vec::with_capacity(points.len());
        for (x, answer) in points.iter().zip(self.problem.evaluate_batch(points)) {
            match answer {
                Ok(e) => {
                    let c = Candidate { x: x.clone(), objective: e.objective, max_violation: e.max_violation() };
                    if e.is_finite() && self.best.as_ref().is_none_or(|b| c.better_than(b, self.tol)) {
                        self.best = Some(c);
                        self.at_best = Some(e.clone());
                    }
                    values.push(e);
                }
                Err(err) => {
                    self.error.get_or_insert(err);
                }
            }
        }
        (values.len() == points.len()).then_some(values)
    }

    fn value_at(&mut self, x: &[f64]) -> Option<Evaluation> {
        if self.at != x || self.value.is_none() {
            self.at = x.to_vec();
            self.gradients = None;
            self.value = self.eval_all(&[x.to_vec()]).and_then(|mut v| v.pop());
            if let (Some((minima, bounds)), Some(best)) = (&self.join, &self.best)
                && self.joined.is_none()
            {
                self.joined = minima.reached_one(best, bounds, 10.0 * self.tol).cloned();
            }
        }
        self.value.clone()
    }

    /// The gradient table at `x`: the evaluator's own when it sent one,
    /// else forward differences from one batch of `n` probes.
    fn gradients_at(&mut self, x: &[f64], bounds: &[(f64, f64)]) -> Option<Vec<Vec<f64>>> {
        let base = self.value_at(x)?;
        if self.gradients.is_some() {
            return self.gradients.clone();
        }
        if let Some(exact) = &base.gradients {
            let rows: Vec<Vec<f64>> = std::iter::once(exact.objective.clone())
                .chain(exact.inequalities.iter().cloned())
                .chain(exact.equalities.iter().cloned())
                .collect();
            self.gradients = Some(rows);
            return self.gradients.clone();
        }
        let steps: Vec<f64> = (0..x.len())
            .map(|k| {
                let (lo, hi) = bounds[k];
                let h = 1e-7 * x[k].abs().max(1.0);
                if x[k] + h > hi && x[k] - h >= lo { -h } else { h }
            })
            .collect();
        let probes: Vec<Vec<f64>> = (0..x.len())
            .map(|k| {
                let mut probe = x.to_vec();
                probe[k] = x[k] + steps[k];
                probe
            })
            .collect();
        let shifted = self.eval_all(&probes)?;
        let rows = 1 + base.inequalities.len() + base.equalities.len();
        let mut g = vec![vec![0.0; x.len()]; rows];
        let base_values: Vec<f64> = std::iter::once(base.objective)
            .chain(base.inequalities.iter().copied())
            .chain(base.equalities.iter().copied())
            .collect();
        for (k, e) in shifted.into_iter().enumerate() {
            let values = std::iter::once(e.objective).chain(e.inequalities).chain(e.equalities);
            for (row, (v, b)) in values.zip(&base_values).enumerate() {
                g[row][k] = (v - b) / steps[k];
            }
        }
        self.gradients = Some(g);
        self.gradients.clone()
    }
}

/// Minima other descents ended at, for a descent that should stop once it
/// reaches one of them: the rest of it would find that minimum again
/// (multi-level single linkage's rule, applied along the descent).
#[derive(Debug, Clone, Default)]
pub struct KnownMinima {
    pub points: Vec<Candidate>,
    /// How close a point must be to a minimum to be at it: within this
    /// share of each variable's range, and of the minimum's value (no
    /// absolute slack near zero: there a share of 1 would join minima a
    /// hundred times apart — g08's values are about 0.03 and 0.1).
    pub radius: f64,
}

impl KnownMinima {
    /// The minimum `c` is at, if any: `c` feasible within `tol`, its value
    /// and point within the radius of the minimum's.
    pub fn reached_one(&self, c: &Candidate, bounds: &[(f64, f64)], tol: f64) -> Option<&Candidate> {
        if c.max_violation > tol {
            return None;
        }
        self.points.iter().find(|k| {
            (c.objective - k.objective).abs() <= self.radius * k.objective.abs().max(c.objective.abs())
                && within_share_of_ranges(&k.x, &c.x, bounds, self.radius)
        })
    }
}

/// Whether `a` and `b` differ by at most `share` of each variable's range.
pub fn within_share_of_ranges(a: &[f64], b: &[f64], bounds: &[(f64, f64)], share: f64) -> bool {
    a.iter().zip(b).zip(bounds).all(|((a, b), (lo, hi))| (a - b).abs() <= share * (hi - lo))
}

/// What a polish produced.
#[derive(Debug, Clone)]
pub struct Polished {
    pub best: Option<Candidate>,
    /// The objective and constraints at `best` (from `polish`; `restore`
    /// leaves it empty).
    pub at_best: Option<Evaluation>,
    pub evals_used: u64,
    pub error: Option<String>,
    /// SLSQP ended on its own tolerances (not the budget, not a failure)
    /// at a point feasible within `tol`: a local optimum, as far as a
    /// gradient method can tell.
    pub converged: bool,
    /// How SLSQP ended.
    pub end: PolishEnd,
    /// The known minimum its best point reached ([`PolishEnd::Joined`]).
    pub joined: Option<Candidate>,
}

/// How an SQP polish ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolishEnd {
    /// On its own tolerances (function or step change).
    Settled,
    /// Its share of the evaluations ran out.
    Budget,
    /// It could not find a step that makes progress (SLSQP's
    /// `RoundoffLimited`: typically linearised constraints incompatible at
    /// active bounds, or a point already as good as the arithmetic allows).
    Stuck,
    /// It did not run, stepped to a non-finite point, or the problem failed.
    Failed,
    /// Its best point reached a known minimum ([`KnownMinima`]) and it stopped there.
    Joined,
}

/// Polishes from `x0` with at most `budget` evaluations.
pub fn polish(problem: &dyn Problem, x0: &[f64], budget: u64, tol: f64) -> Polished {
    polish_knowing(problem, x0, None, budget, tol)
}

/// [`polish`], given the problem's answer at `x0` when it is already known
/// (an evaluated seed): the polish then starts with the gradient, as a
/// multistart's SLSQP does from its first evaluation. `known` must be the
/// evaluation of exactly `x0`.
pub fn polish_knowing(problem: &dyn Problem, x0: &[f64], known: Option<Evaluation>, budget: u64, tol: f64) -> Polished {
    descend(problem, x0, known, budget, tol, None)
}

/// [`polish_knowing`] that stops once its best point reaches one of
/// `join`'s minima (ending [`PolishEnd::Joined`]).
pub fn descend(
    problem: &dyn Problem,
    x0: &[f64],
    known: Option<Evaluation>,
    budget: u64,
    tol: f64,
    join: Option<&KnownMinima>,
) -> Polished {
    let n = problem.dimension();
    let bounds = problem.bounds();
    tracing::trace!(known = known.is_some(), budget, x0 = ?x0, "polish start");
    if budget < n as u64 + 2 || x0.len() != n {
        return Polished {
            best: None,
            at_best: None,
            evals_used: 0,
            error: None,
            converged: false,
            end: PolishEnd::Failed,
            joined: None,
        };
    }
    let cache = RefCell::new(Cache {
        problem,
        evals: 0,
        budget,
        tol: 0.1 * tol,
        best: None,
        at_best: None,
        error: None,
        diverged: false,
        at: Vec::new(),
        value: None,
        gradients: None,
        join: join.filter(|j| !j.points.is_empty()).map(|j| (j, bounds.as_slice())),
        joined: None,
    });
    // Set once the best point reaches a known minimum: SLSQP stops after
    // that evaluation.
    let force_stop = Cell::new(0);
    if let Some(e) = known.filter(|e| e.is_finite() && x0.len() == n) {
        let mut c = cache.borrow_mut();
        let candidate = Candidate { x: x0.to_vec(), objective: e.objective, max_violation: e.max_violation() };
        (c.at, c.best, c.at_best, c.value) = (x0.to_vec(), Some(candidate), Some(e.clone()), Some(e));
    }
    let Some(first) = cache.borrow_mut().value_at(x0) else {
        let c = cache.into_inner();
        return Polished {
            best: c.best,
            at_best: c.at_best,
            evals_used: c.evals,
            error: c.error.map(|e| e.0),
            converged: false,
            end: PolishEnd::Failed,
            joined: None,
        };
    };
    let (n_ineq, n_eq) = (first.inequalities.len(), first.equalities.len());
    // SLSQP's feasibility tolerance for its stop test (and the half-width
    // of an equality written as a band): a twentieth of the tolerance, so
    // its converged point, which may sit up to that far outside an active
    // constraint, is well within the problem's tolerance; and the best
    // point seen is ranked at a tenth of it (see `Cache::tol`) — else a
    // line-search point that rides the tolerance, a hair infeasible with a
    // lower objective, would be reported instead of the converged one,
    // below the true optimum.
    let margin = 0.05 * tol;

    let objective = |x: &[f64], grad: Option<&mut [f64]>, _: &mut ()| -> f64 {
        let mut c = cache.borrow_mut();
        let Some(e) = c.value_at(x) else { return f64::NAN };
        if c.joined.is_some() {
            force_stop.set(1);
        }
        if let Some(g) = grad {
            match c.gradients_at(x, &bounds) {
                Some(rows) => g.copy_from_slice(&rows[0]),
                None => return f64::NAN,
            }
        }
        e.objective
    };
    // One SLSQP constraint: row `row` of the gradient table (objective first),
    // read from the evaluation as `sign · value − shift ≤ 0`.
    let make = |row: usize, sign: f64, shift: f64| {
        let (cache, bounds) = (&cache, &bounds);
        Box::new(move |x: &[f64], grad: Option<&mut [f64]>, _: &mut ()| -> f64 {
            let mut c = cache.borrow_mut();
            let Some(e) = c.value_at(x) else { return f64::NAN };
            if let Some(g) = grad {
                match c.gradients_at(x, bounds) {
                    Some(rows) => g.iter_mut().zip(&rows[row]).for_each(|(gk, v)| *gk = sign * v),
                    None => return f64::NAN,
                }
            }
            let i = row - 1;
            let value =
                if i < e.inequalities.len() { e.inequalities[i] } else { e.equalities[i - e.inequalities.len()] };
            sign * value - shift
        }) as Box<dyn Fn(&[f64], Option<&mut [f64]>, &mut ()) -> f64 + '_>
    };
    let mut constraints = Vec::new();
    // The inequalities as they are, not shifted inside: a constraint that
    // is a product vanishing on a bound (g18's −x₃x₉ ≤ 0 at x₉ = 0, where
    // its optimum lies) shifted to −x₃x₉ ≤ −ε has no feasible point on
    // that bound, its linearization there is inconsistent and SLSQP's
    // subproblem fails: from 200 random starts 21 g18 polishes ended
    // failed so, against 2 unshifted (bench/HISTORY.md, 2026-11-27 "The
    // polish's inequalities unshifted, its stop at 1e-8"). SLSQP converges
    // onto an active constraint to far below the margin either way.
    for i in 0..n_ineq {
        constraints.push(make(1 + i, 1.0, 0.0));
    }
    // Equalities go to SLSQP as equalities: it then solves for them with
    // the step (a Newton step on h = 0) rather than keeping the iterate
    // inside a band |h| ≤ ε of two nearly parallel inequalities, which
    // costs it many more iterations and often ends stuck (g03 took ~8× the
    // evaluations of scipy's SLSQP that way). SLSQP stops on ftol/xtol
    // only where it deems the point feasible: |h| within the margin. It
    // takes at most n equalities; more (a degenerate problem) are written
    // as bands, as before.
    let as_equalities = n_eq <= n;
    let mut equalities = Vec::new();
    for j in 0..n_eq {
        if as_equalities {
            equalities.push(make(1 + n_ineq + j, 1.0, 0.0));
        } else {
            constraints.push(make(1 + n_ineq + j, 1.0, margin));
            constraints.push(make(1 + n_ineq + j, -1.0, margin));
        }
    }
    // A point on an active inequality counts as feasible for SLSQP's stop
    // test within the margin: without it (NLopt's default is zero) an
    // iterate converging onto the constraint from a hair outside — every
    // other time — is never feasible, so ftol never stops it and it runs
    // on to its iteration budget at the optimum (g18: 60 SLSQP calls, ~250
    // evaluations, where it had arrived in ~100), then counted as not
    // settled.
    let inequality_tolerances = vec![margin; constraints.len()];
    let equality_tolerances = vec![margin; equalities.len()];
    // A gradient costs n + 1 evaluations by differences, one when exact.
    let per_call = if first.gradients.is_some() { 1 } else { n as u64 + 1 };
    // NLopt's count is of objective calls: two an iteration (the trial
    // point, then its gradient at the same point, which the cache answers
    // from the value it has), plus one per backtracking step.
    let maxeval = (2 * (budget / per_call)).max(1) as usize;
    let stop = slsqp::StopTols {
        ftol_rel: STOP_TOLERANCE,
        ftol_abs: STOP_ABSOLUTE,
        xtol_rel: STOP_TOLERANCE,
        ..slsqp::StopTols::default()
    };
    let outcome = slsqp::minimize_stoppable(
        objective,
        x0,
        &bounds,
        &constraints,
        &inequality_tolerances,
        &equalities,
        &equality_tolerances,
        (),
        maxeval,
        Some(stop),
        &force_stop,
    );
    drop((constraints, equalities));
    // SLSQP also stops "stuck" where its quasi-Newton model went bad, not
    // only at optima with active bounds: a first-order (KKT) test at the
    // best point tells the two apart.
    let stuck = matches!(&outcome, Err((slsqp::FailStatus::RoundoffLimited, _, _)));
    // What SLSQP itself spent, before the test's own evaluations.
    let spent = cache.borrow().evals;
    let best_x = cache.borrow().best.as_ref().filter(|b| b.max_violation <= tol).map(|b| b.x.clone());
    let stationary = match best_x.filter(|_| stuck) {
        Some(x) => {
            let mut c = cache.borrow_mut();
            match (c.value_at(&x), c.gradients_at(&x, &bounds)) {
                (Some(e), Some(g)) => kkt_residual(&x, &bounds, &e, &g, tol) <= KKT_TOLERANCE,
                _ => false,
            }
        }
        None => false,
    };
    let c = cache.into_inner();
    let end = match &outcome {
        _ if c.error.is_some() || c.diverged => PolishEnd::Failed,
        _ if c.joined.is_some() => PolishEnd::Joined,
        Ok((slsqp::SuccessStatus::MaxEvalReached, _, _)) => PolishEnd::Budget,
        Ok(_) => PolishEnd::Settled,
        // The budget ran out inside a gradient (the cache refuses a cut-short one).
        Err(_) if spent + per_call > budget => PolishEnd::Budget,
        Err((slsqp::FailStatus::RoundoffLimited, _, _)) => PolishEnd::Stuck,
        Err(_) => PolishEnd::Failed,
    };
    let converged = (end == PolishEnd::Settled || (end == PolishEnd::Stuck && stationary))
        && c.error.is_none()
        && !c.diverged
        && c.best.as_ref().is_some_and(|b| b.max_violation <= tol && b.objective.is_finite());
    tracing::trace!(evals = c.evals, spent, ?end, converged, best = ?c.best.as_ref().map(|b| (b.objective, b.max_violation)), "polish end");
    Polished {
        best: c.best,
        at_best: c.at_best,
        evals_used: c.evals,
        error: c.error.map(|e| e.0),
        converged,
        end,
        joined: c.joined,
    }
}

/// SLSQP's relative stop tolerances on the objective's and the point's
/// change (at a point feasible within the margin). 1e-8, not 1e-12: from
/// the same 100 uniform starts per problem, the success of a start is the
/// same (spring 87 of 100 against 88, g21 85 against 86, every other
/// problem equal) for 5–30 % fewer evaluations a polish (g01 42 against 60
/// at the median, g04 30 against 46, g14 369 against 448) — SciPy's SLSQP
/// stops about as soon (g01: 42) — and a multistart pays for every start
/// that ends in the wrong basin (bench/HISTORY.md, 2026-11-27 "The polish's
/// inequalities unshifted, its stop at 1e-8").
const STOP_TOLERANCE: f64 = 1e-8;

/// SLSQP's absolute stop tolerance on the objective's change (at a feasible
/// point), beside the relative one: where the objective itself is next to
/// nothing a relative test never stops. g08's descents drift into a tail
/// where sin(2πx₁) → 0 and the objective is about 1e-29 (a flat end, not
/// an optimum), each step still changing it by a large relative amount:
/// with a longer descent (`AsoConfig::descent_iterations`) such a descent
/// crept on for 600 evaluations where SciPy's SLSQP — absolute 1e-10 in
/// the bench's multistart — stops at once. Below what the relative test
/// asks of any objective larger than 1e-4.
const STOP_ABSOLUTE: f64 = 1e-12;

/// The relative first-order residual below which a point counts as a
/// local optimum: forward differences carry about 1e-7 of relative error.
const KKT_TOLERANCE: f64 = 1e-4;

/// How far `x` is from a first-order (KKT) point, relative to the
/// objective's gradient: the least |∇f + Σλ∇g + Σμ∇h − ν| over multipliers
/// λ ≥ 0 of the near-active inequalities, free μ of the equalities and ν of
/// the active bounds (signed to push outward), divided by |∇f|. `g` is the
/// gradient table (objective, inequalities, equalities) at `x`, `e` the
/// values, `tol` the feasibility tolerance.
pub fn kkt_residual(x: &[f64], bounds: &[(f64, f64)], e: &Evaluation, g: &[Vec<f64>], tol: f64) -> f64 {
    let norm = |v: &[f64]| v.iter().map(|a| a * a).sum::<f64>().sqrt();
    let scale = norm(x).max(1.0);
    // Columns with whether their multiplier must be nonnegative.
    let mut columns: Vec<(Vec<f64>, bool)> = Vec::new();
    for (i, value) in e.inequalities.iter().enumerate() {
        let grad = &g[1 + i];
        // Near-active: within 1e-6 of the point's size of the constraint's
        // surface, or within ten tolerances of it (the polish stops within a
        // twentieth of one); a bound within 1e-6 of its range. A wider window
        // takes in constraints the point is not on, and their gradients
        // can then absorb an objective gradient that still points downhill.
        if *value >= -(1e-6 * scale * norm(grad)).max(10.0 * tol) {
            columns.push((grad.clone(), true));
        }
    }
    for j in 0..e.equalities.len() {
        columns.push((g[1 + e.inequalities.len() + j].clone(), false));
    }
    for (k, (&xk, &(lo, hi))) in x.iter().zip(bounds).enumerate() {
        let at = 1e-6 * (hi - lo).max(1e-300);
        let unit = |sign: f64| (0..x.len()).map(|i| if i == k { sign } else { 0.0 }).collect::<Vec<f64>>();
        if xk - lo <= at {
            columns.push((unit(-1.0), true));
        }
        if hi - xk <= at {
            columns.push((unit(1.0), true));
        }
    }
    let objective = &g[0];
    // Relative to the objective's gradient, but not below what moving by
    // 1e-6 of the point's size could change the objective by: at an
    // interior optimum the gradient is itself rounding noise.
    let size = norm(objective).max(1e-6 * e.objective.abs().max(1.0) / scale);
    if !size.is_finite() {
        return f64::INFINITY;
    }
    // Cyclic coordinate descent on |∇f + Σ m·column|², each multiplier
    // projected onto its sign: the problems are small (active columns ≤ a
    // few dozen) and a residual to 1e-4 is all that is asked.
    let mut residual = objective.clone();
    let mut multipliers = vec![0.0; columns.len()];
    let squares: Vec<f64> = columns.iter().map(|(c, _)| c.iter().map(|a| a * a).sum()).collect();
    for _ in 0..20_000 {
        let mut moved = 0.0f64;
        for (((column, nonnegative), m), &squared) in columns.iter().zip(multipliers.iter_mut()).zip(&squares) {
            if squared == 0.0 {
                continue;
            }
            let along: f64 = column.iter().zip(&residual).map(|(a, r)| a * r).sum();
            let mut next = *m - along / squared;
            if *nonnegative {
                next = next.max(0.0);
            }
            let delta = next - *m;
            if delta != 0.0 {
                residual.iter_mut().zip(column).for_each(|(r, a)| *r += delta * a);
                *m = next;
                moved = moved.max(delta.abs() * squared.sqrt());
            }
        }
        // Converged, or already stationary enough for the test.
        if moved <= 1e-12 * size || norm(&residual) <= 0.01 * KKT_TOLERANCE * size {
            break;
        }
    }
    norm(&residual) / size
}

/// Gauss–Newton steps that move `x0` onto its near-active constraints —
/// each violated or nearly active inequality to a twentieth of `tol`
/// inside, each equality to zero — by the least change of `x` (the
/// minimum-norm step), until the point is feasible at a tenth of `tol`.
/// For a point the search left riding the tolerance where SLSQP cannot
/// step (its linearised constraints incompatible at active bounds): the
/// objective moves by what feasibility costs, no more. At most `budget`
/// evaluations; `best` is the restored point, if it got there.
pub fn restore(problem: &dyn Problem, x0: &[f64], budget: u64, tol: f64) -> Polished {
    let n = problem.dimension();
    let bounds = problem.bounds();
    let (target, margin) = (0.1 * tol, 0.05 * tol);
    let mut used = 0u64;
    let eval = |points: &[Vec<f64>], used: &mut u64| -> Option<Vec<Evaluation>> {
        *used += points.len() as u64;
        problem.evaluate_batch(points).into_iter().collect::<Result<Vec<_>, _>>().ok()
    };
    let done = |used: u64, best: Option<Candidate>| Polished {
        best,
        at_best: None,
        evals_used: used,
        error: None,
        converged: false,
        end: PolishEnd::Failed,
        joined: None,
    };
    if budget < n as u64 + 2 || x0.len() != n {
        return done(0, None);
    }
    let Some(mut current) = eval(&[x0.to_vec()], &mut used).and_then(|mut v| v.pop()) else {
        return done(used, None);
    };
    let mut x = x0.to_vec();
    for _ in 0..8 {
        if current.max_violation() <= target {
            let c = Candidate { x: x.clone(), objective: current.objective, max_violation: current.max_violation() };
            return Polished { converged: true, ..done(used, Some(c)) };
        }
        if used + n as u64 + 1 > budget {
            break;
        }
        // Rows: inequalities above −margin (pushed to −margin), every equality (to 0).
        let rows: Vec<(bool, usize, f64)> = current
            .inequalities
            .iter()
            .enumerate()
            .filter(|(_, g)| **g > -margin)
            .map(|(i, g)| (true, i, g + margin))
            .chain(current.equalities.iter().enumerate().map(|(j, h)| (false, j, *h)))
            .collect();
        let steps: Vec<f64> = (0..n)
            .map(|k| {
                let (lo, hi) = bounds[k];
                let h = 1e-7 * x[k].abs().max(1.0);
                if x[k] + h > hi && x[k] - h >= lo { -h } else { h }
            })
            .collect();
        let probes: Vec<Vec<f64>> = (0..n)
            .map(|k| {
                let mut p = x.clone();
                p[k] += steps[k];
                p
            })
            .collect();
        let Some(shifted) = eval(&probes, &mut used) else { break };
        let value = |e: &Evaluation, inequality: bool, idx: usize| {
            if inequality { e.inequalities[idx] } else { e.equalities[idx] }
        };
        let jacobian: Vec<Vec<f64>> = rows
            .iter()
            .map(|&(inequality, idx, _)| {
                (0..n)
                    .map(|k| (value(&shifted[k], inequality, idx) - value(&current, inequality, idx)) / steps[k])
                    .collect()
            })
            .collect();
        let c: Vec<f64> = rows.iter().map(|r| r.2).collect();
        let Some(step) = super::population::minimum_norm_step(&jacobian, &c) else { break };
        let moved: Vec<f64> =
            x.iter().zip(&step).zip(&bounds).map(|((v, s), (lo, hi))| (v - s).clamp(*lo, *hi)).collect();
        if moved.iter().any(|v| !v.is_finite()) {
            break;
        }
        let Some(e) = eval(&[moved.clone()], &mut used).and_then(|mut v| v.pop()) else { break };
        if !(e.max_violation() < current.max_violation()) {
            break;
        }
        x = moved;
        current = e;
    }
    let reached = current.max_violation() <= target;
    let c = Candidate { x, objective: current.objective, max_violation: current.max_violation() };
    Polished { converged: reached, ..done(used, reached.then_some(c)) }
}

#[cfg(test)]
#[path = "polish_tests.rs"]
mod tests;
