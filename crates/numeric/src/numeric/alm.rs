//! The augmented-Lagrangian (ALM) optimizer for constrained numeric problems,
//! run in chunks of an evaluation budget that continue from the state the
//! previous chunk left (the worker contract of seed 000 §5).
//!
//! It minimises the PHR augmented Lagrangian
//!
//! ```text
//! L(x) = f(x) + Σ_j [ λ_j·h_j(x) + ρ_j/2·h_j(x)² ]
//!             + Σ_i 1/(2ρ_i)·[ max(0, μ_i + ρ_i·g_i(x))² − μ_i² ]
//! ```
//!
//! over a box: the problem's bounds intersected with a trust box around the
//! current point whose half-widths shrink by `bounds_reduction_factor` after
//! every outer iteration. The inner bound-constrained solve is SLSQP (the
//! `slsqp` crate) with forward-difference gradients and no constraints of its
//! own. After each inner solve the multipliers take their first-order step and
//! the penalty of every constraint whose violation did not fall enough is
//! multiplied by `penalty_parameters_increase_factor`, up to a ceiling.
//!
//! The objective and the constraints are scaled by their magnitude at the
//! seed point (never below 1), so one penalty scale suits a constraint of
//! order 1e6 and one of order 1e-2, and an objective of order 1e4 does not
//! drown the penalties; everything reported outside is unscaled. Every evaluation — gradient
//! probes included — is counted, and the best point *seen* (feasible first,
//! then lowest objective; else least violation) is kept, because the point a
//! solver returns can be worse than one it visited.

use std::cell::RefCell;

use serde::{Deserialize, Serialize};

use super::problem::{EvalError, Evaluation, Problem};
use crate::numeric::reading::{ConstraintKind, Snapshot, readings};

/// Settings of the ALM (seed 000 Appendix B names the first two).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AlmSettings {
    /// Factor a stubborn constraint's penalty is multiplied by.
    pub penalty_parameters_increase_factor: f64,
    /// Factor the trust box shrinks by after every outer iteration.
    pub bounds_reduction_factor: f64,
    /// Penalty every constraint starts with.
    pub initial_penalty: f64,
    /// Ceiling of any penalty (the coordinator's `max_penalty_parameter`).
    pub max_penalty: f64,
    /// A violation must fall below this fraction of the previous one, or its
    /// penalty rises.
    pub required_violation_reduction: f64,
    /// Max violation at which a point counts as feasible.
    pub feasibility_tolerance: f64,
    /// Relative step of the forward-difference gradient.
    pub gradient_step: f64,
}

impl Default for AlmSettings {
    fn default() -> Self {
        AlmSettings {
            penalty_parameters_increase_factor: 10.0,
            bounds_reduction_factor: 0.95,
            initial_penalty: 10.0,
            max_penalty: 1e6,
            required_violation_reduction: 0.25,
            feasibility_tolerance: 1e-4,
            gradient_step: 1e-7,
        }
    }
}

/// A point with its value and worst violation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub x: Vec<f64>,
    pub objective: f64,
    pub max_violation: f64,
}

impl Candidate {
    /// Whether `self` beats `other`: feasible before infeasible, then lower
    /// objective; between infeasible points, lower violation.
    pub fn better_than(&self, other: &Candidate, tol: f64) -> bool {
        let (a, b) = (self.max_violation <= tol, other.max_violation <= tol);
        match (a, b) {
            (true, false) => true,
            (false, true) => false,
            (true, true) => self.objective < other.objective,
            (false, false) => self.max_violation < other.max_violation,
        }
    }
}

/// Everything a chunk leaves for the next one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlmState {
    /// The current iterate and its (unscaled) evaluation.
    pub x: Vec<f64>,
    pub objective: f64,
    pub inequalities: Vec<f64>,
    pub equalities: Vec<f64>,
    pub ineq_multipliers: Vec<f64>,
    pub eq_multipliers: Vec<f64>,
    pub ineq_penalties: Vec<f64>,
    pub eq_penalties: Vec<f64>,
    /// Fixed scale of each constraint (1 / its magnitude at the seed, ≤ 1).
    pub ineq_scales: Vec<f64>,
    pub eq_scales: Vec<f64>,
    /// Fixed scale of the objective (1 / its magnitude at the seed, ≤ 1), so
    /// penalties weigh the same against an objective of 1e4 as of 1.
    #[serde(default = "unit")]
    pub objective_scale: f64,
    /// Half-widths of the trust box around `x`.
    pub radius: Vec<f64>,
    pub outer_iterations: u32,
    /// Evaluations since the seed, across chunks.
    pub evaluations: u64,
    /// The best point seen since the seed.
    pub best: Candidate,
    /// The evaluator sends exact gradients (seen at the seed): the
    /// Lagrangian's gradient is computed from them, not by differences.
    #[serde(default)]
    pub exact_gradients: bool,
}

impl AlmState {
    pub fn max_violation(&self) -> f64 {
        violation(&self.inequalities, &self.equalities)
    }

    /// The state as the coordinator's diagnostics read it. Penalties are
    /// reported in the unscaled units of each constraint's value.
    pub fn snapshot(&self, ineq_names: &[String], eq_names: &[String]) -> Snapshot {
        let constraints =
            readings((ineq_names, eq_names), &self.inequalities, &self.equalities, |kind, i| match kind {
                ConstraintKind::Inequality => self.ineq_penalties[i],
                ConstraintKind::Equality => self.eq_penalties[i],
            });
        let bounds_norm = self.radius.iter().map(|r| r * r).sum::<f64>().sqrt();
        Snapshot { objective: self.objective, constraints, bounds_norm }
    }

    /// Sets the penalty of a named constraint to at least `weight` (a soft-ALM
    /// constraint weight from a directive), capped at `ceiling`. Returns
    /// whether the name was known.
    pub fn raise_penalty(&mut self, name: &str, weight: f64, ceiling: f64, names: (&[String], &[String])) -> bool {
        let w = weight.min(ceiling);
        if let Some(i) = names.0.iter().position(|n| n == name) {
            self.ineq_penalties[i] = self.ineq_penalties[i].max(w);
            true
        } else if let Some(j) = names.1.iter().position(|n| n == name) {
            self.eq_penalties[j] = self.eq_penalties[j].max(w);
            true
        } else {
            false
        }
    }
}

fn violation(g: &[f64], h: &[f64]) -> f64 {
    g.iter().map(|v| v.max(0.0)).chain(h.iter().map(|v| v.abs())).fold(0.0, f64::max)
}

/// How a chunk starts: from a seed point, or from where the last chunk ended.
#[derive(Debug, Clone)]
pub enum Start {
    Seed(Vec<f64>),
    Continue(Box<AlmState>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkStatus {
    Optimized,
    /// Nothing to do (no budget, or nothing to start from).
    Skipped,
    /// The problem could not be evaluated; the state is the last good one.
    Failed,
}

/// What one chunk hands back (seed 000 §5).
#[derive(Debug, Clone)]
pub struct ChunkResult {
    pub candidates: Vec<Candidate>,
    pub state: Option<AlmState>,
    pub evals_used: u64,
    pub status: ChunkStatus,
    pub error: Option<String>,
    /// The iterate stopped moving while feasible: more chunks would not help.
    pub converged: bool,
}

/// Counts evaluations and remembers the best point seen.
struct Tracker<'p> {
    problem: &'p dyn Problem,
    evals: u64,
    best: Option<Candidate>,
    tol: f64,
    /// A failure that ends the chunk (the evaluator is broken, not one point).
    error: Option<EvalError>,
    /// Points in a row the problem could not evaluate.
    consecutive_errors: u32,
}

/// Evaluation errors in a row after which the evaluator counts as broken;
/// fewer are single bad points (a pole, a log of zero) and only repel the search.
pub const MAX_CONSECUTIVE_ERRORS: u32 = 10;

/// Keeps the count of batches in a row the problem could not evaluate at
/// all (one broken message fails all its points: that is one failure, not
/// k): reset by a batch with any value, and the error once the count
/// reaches [`MAX_CONSECUTIVE_ERRORS`].
pub(crate) fn broken_after(streak: &mut u32, any_ok: bool, failure: Option<EvalError>) -> Option<EvalError> {
    if any_ok {
        *streak = 0;
        return None;
    }
    let err = failure?;
    *streak += 1;
    (*streak >= MAX_CONSECUTIVE_ERRORS).then_some(err)
}

impl Tracker<'_> {
    fn eval(&mut self, x: &[f64]) -> Result<Evaluation, EvalError> {
        self.eval_batch(&[x.to_vec()]).pop().unwrap_or_else(|| Err(EvalError("no answer for the point".into())))
    }

    /// Evaluates `points` as one batch (one message to a persistent external
    /// evaluator), counting each and keeping the best.
    fn eval_batch(&mut self, points: &[Vec<f64>]) -> Vec<Result<Evaluation, EvalError>> {
        self.evals += points.len() as u64;
        let answers = self.problem.evaluate_batch(points);
        for (x, e) in points.iter().zip(&answers) {
            let Ok(e) = e else { continue };
            let cand = Candidate { x: x.clone(), objective: e.objective, max_violation: e.max_violation() };
            if cand.objective.is_finite()
                && cand.max_violation.is_finite()
                && self.best.as_ref().is_none_or(|b| cand.better_than(b, self.tol))
            {
                self.best = Some(cand);
            }
        }
        answers
    }

    /// The augmented Lagrangian at each of `points` (BAD where the problem
    /// gave no value, NaN once the evaluator counts as broken), and the
    /// first point's evaluation.
    fn lagrangians(&mut self, points: &[Vec<f64>], s: &AlmState) -> (Vec<f64>, Option<Evaluation>) {
        if self.error.is_some() {
            return (vec![f64::NAN; points.len()], None);
        }
        let mut first = None;
        let answers = self.eval_batch(points);
        // A batch counts once towards the errors in a row (`broken_after`).
        let mut failure = None;
        let mut any_ok = false;
        let values: Vec<f64> = answers
            .into_iter()
            .enumerate()
            .map(|(i, answer)| match answer {
                Ok(e) => {
                    any_ok = true;
                    let v = augmented(&e, s);
                    if i == 0 {
                        first = Some(e);
                    }
                    if v.is_finite() { v } else { BAD }
                }
                Err(err) => {
                    failure = Some(err);
                    BAD
                }
            })
            .collect();
        if let Some(err) = broken_after(&mut self.consecutive_errors, any_ok, failure) {
            self.error = Some(err);
            return (vec![f64::NAN; values.len()], None);
        }
        (values, first)
    }
}

/// The penalty terms of the scaled constraints at one evaluation.
fn unit() -> f64 {
    1.0
}

fn augmented(e: &Evaluation, s: &AlmState) -> f64 {
    let mut l = e.objective * s.objective_scale;
    for (j, h) in e.equalities.iter().enumerate() {
        let h = h * s.eq_scales[j];
        l += s.eq_multipliers[j] * h + 0.5 * s.eq_penalties[j] * h * h;
    }
    for (i, g) in e.inequalities.iter().enumerate() {
        let (g, mu, rho) = (g * s.ineq_scales[i], s.ineq_multipliers[i], s.ineq_penalties[i]);
        let t = (mu + rho * g).max(0.0);
        l += (t * t - mu * mu) / (2.0 * rho);
    }
    l
}

/// The gradient of [`augmented`] from the evaluator's exact gradients, if it sent them.
fn augmented_gradient(e: &Evaluation, s: &AlmState) -> Option<Vec<f64>> {
    let exact = e.gradients.as_ref()?;
    let mut grad: Vec<f64> = exact.objective.iter().map(|v| v * s.objective_scale).collect();
    let mut add = |weight: f64, row: &[f64]| {
        grad.iter_mut().zip(row).for_each(|(g, v)| *g += weight * v);
    };
    for (j, h) in e.equalities.iter().enumerate() {
        let h = h * s.eq_scales[j];
        add((s.eq_multipliers[j] + s.eq_penalties[j] * h) * s.eq_scales[j], &exact.equalities[j]);
    }
    for (i, g) in e.inequalities.iter().enumerate() {
        let t = (s.ineq_multipliers[i] + s.ineq_penalties[i] * g * s.ineq_scales[i]).max(0.0);
        add(t * s.ineq_scales[i], &exact.inequalities[i]);
    }
    grad.iter().all(|v| v.is_finite()).then_some(grad)
}

/// A value SLSQP can work with when the problem gives none.
const BAD: f64 = 1e20;

/// Runs the ALM for at most `budget` evaluations.
pub fn run_chunk(problem: &dyn Problem, start: Start, budget: u64, settings: &AlmSettings) -> ChunkResult {
    let n = problem.dimension();
    let bounds = problem.bounds();
    let tracker = RefCell::new(Tracker {
        problem,
        evals: 0,
        best: None,
        tol: settings.feasibility_tolerance,
        error: None,
        consecutive_errors: 0,
    });
    let skipped = |state: Option<AlmState>| ChunkResult {
        candidates: vec![],
        state,
        evals_used: 0,
        status: ChunkStatus::Skipped,
        error: None,
        converged: false,
    };
    if budget == 0 || n == 0 {
        return skipped(match start {
            Start::Continue(s) => Some(*s),
            Start::Seed(_) => None,
        });
    }
    let failed = |state: Option<AlmState>, evals: u64, e: EvalError| ChunkResult {
        candidates: vec![],
        state,
        evals_used: evals,
        status: ChunkStatus::Failed,
        error: Some(e.0),
        converged: false,
    };

    let mut state = match start {
        Start::Continue(s) => *s,
        Start::Seed(x0) => {
            let x0: Vec<f64> = x0.iter().zip(&bounds).map(|(x, (lo, hi))| x.clamp(*lo, *hi)).collect();
            let evaluated = tracker.borrow_mut().eval(&x0);
            let e = match evaluated {
                Ok(e) => e,
                Err(err) => return failed(None, 1, err),
            };
            let scale = |v: &f64| 1.0 / v.abs().max(1.0);
            let best = Candidate { x: x0.clone(), objective: e.objective, max_violation: e.max_violation() };
            AlmState {
                x: x0,
                objective: e.objective,
                ineq_multipliers: vec![0.0; e.inequalities.len()],
                eq_multipliers: vec![0.0; e.equalities.len()],
                ineq_penalties: vec![settings.initial_penalty; e.inequalities.len()],
                eq_penalties: vec![settings.initial_penalty; e.equalities.len()],
                ineq_scales: e.inequalities.iter().map(scale).collect(),
                eq_scales: e.equalities.iter().map(scale).collect(),
                objective_scale: scale(&e.objective),
                radius: bounds.iter().map(|(lo, hi)| 0.5 * (hi - lo)).collect(),
                inequalities: e.inequalities,
                equalities: e.equalities,
                outer_iterations: 0,
                evaluations: 0,
                best,
                exact_gradients: e.gradients.is_some(),
            }
        }
    };
    tracker.borrow_mut().best = Some(state.best.clone());

    let mut converged = false;
    let mut candidates = Vec::new();
    // One outer iteration needs at least a gradient and a step.
    while budget.saturating_sub(tracker.borrow().evals) > n as u64 + 1 {
        let remaining = budget - tracker.borrow().evals - 1; // keep one for the final evaluation
        // A gradient costs n + 1 evaluations by differences, one when exact;
        // SLSQP makes two calls an iteration (the trial point, then its
        // gradient there, which reuses the trial's value: `last` below) but
        // one at its start (value and gradient): 2q − 1 calls for the q
        // gradients the chunk can pay.
        let per_call = if state.exact_gradients { 1 } else { n as u64 + 1 };
        let maxeval = (2 * (remaining / per_call)).saturating_sub(1).max(1) as usize;
        let lower: Vec<(f64, f64)> = state
            .x
            .iter()
            .zip(&bounds)
            .zip(&state.radius)
            .map(|((x, (lo, hi)), r)| ((x - r).max(*lo), (x + r).min(*hi)))
            .collect();
        let frozen = state.clone();
        // The last point evaluated without a gradient (a line search's trial
        // point), its value and evaluation: SLSQP asks for the gradient at
        // the point it accepts right after, which then costs only the probes.
        let last: RefCell<Option<(Vec<f64>, f64, Option<Evaluation>)>> = RefCell::new(None);
        let lagrangian = |x: &[f64], grad: Option<&mut [f64]>, _: &mut ()| -> f64 {
            let mut t = tracker.borrow_mut();
            let Some(g) = grad else {
                let (values, e) = t.lagrangians(&[x.to_vec()], &frozen);
                *last.borrow_mut() = Some((x.to_vec(), values[0], e));
                return values[0];
            };
            let known = last.borrow_mut().take().filter(|(at, value, _)| at == x && value.is_finite());
            // Forward-difference steps, inwards at the upper bound so the
            // probe stays inside the box.
            let steps: Vec<f64> = (0..x.len())
                .map(|k| {
                    let (lo, hi) = bounds[k];
                    let h = settings.gradient_step * x[k].abs().max(1.0);
                    if x[k] + h > hi && x[k] - h >= lo { -h } else { h }
                })
                .collect();
            let probes = |x: &[f64]| -> Vec<Vec<f64>> {
                (0..x.len())
                    .map(|k| {
                        let mut probe = x.to_vec();
                        probe[k] = x[k] + steps[k];
                        probe
                    })
                    .collect()
            };
            if frozen.exact_gradients {
                let (values, e) = match known {
                    Some((_, value, Some(e))) => (vec![value], Some(e)),
                    _ => t.lagrangians(&[x.to_vec()], &frozen),
                };
                if let Some(exact) = e.as_ref().and_then(|e| augmented_gradient(e, &frozen)) {
                    g.copy_from_slice(&exact);
                    return values[0];
                }
                // This answer came without a gradient: differences from the
                // value just read, if the chunk can still pay for them (its
                // SLSQP budget counted one evaluation per call).
                if t.error.is_some() || e.is_none() || t.evals + x.len() as u64 >= budget {
                    g.iter_mut().for_each(|v| *v = 0.0);
                    return values[0];
                }
                let (shifted, _) = t.lagrangians(&probes(x), &frozen);
                for (k, step) in steps.iter().enumerate() {
                    g[k] = (shifted[k] - values[0]) / step;
                }
                return values[0];
            }
            // The point (unless just evaluated) and its n probes in one batch.
            let values = match known {
                Some((_, value, _)) => {
                    let (shifted, _) = t.lagrangians(&probes(x), &frozen);
                    std::iter::once(value).chain(shifted).collect::<Vec<f64>>()
                }
                None => {
                    let mut points = vec![x.to_vec()];
                    points.extend(probes(x));
                    t.lagrangians(&points, &frozen).0
                }
            };
            for (k, step) in steps.iter().enumerate() {
                g[k] = (values[k + 1] - values[0]) / step;
            }
            values[0]
        };
        let no_constraints: Vec<&dyn slsqp::Func<()>> = Vec::new();
        let stop = slsqp::StopTols { ftol_rel: 1e-10, xtol_rel: 1e-10, ..slsqp::StopTols::default() };
        let outcome = slsqp::minimize(lagrangian, &state.x, &lower, &no_constraints, (), maxeval, Some(stop));
        let error = tracker.borrow_mut().error.take();
        if let Some(err) = error {
            let evals = tracker.borrow().evals;
            state.evaluations += evals;
            return failed(Some(state), evals, err);
        }
        // An inner solve cut short by the chunk's budget is not a solution of
        // the subproblem: its point is kept, but judging the multipliers and
        // penalties on it would inflate them, so that waits for a finished one.
        let solved = matches!(&outcome, Ok((status, _, _)) if !matches!(status, slsqp::SuccessStatus::MaxEvalReached));
        let x_new = match outcome {
            Ok((_, x, _)) | Err((_, x, _)) => x,
        };
        let x_new: Vec<f64> = if x_new.iter().all(|v| v.is_finite()) {
            x_new.iter().zip(&bounds).map(|(x, (lo, hi))| x.clamp(*lo, *hi)).collect()
        } else {
            state.x.clone()
        };
        let evaluated = tracker.borrow_mut().eval(&x_new);
        let (x_new, e) = match evaluated {
            Ok(e) => (x_new, e),
            // A bad point: stay where we are for this iteration.
            Err(_) => (
                state.x.clone(),
                Evaluation {
                    objective: state.objective,
                    inequalities: state.inequalities.clone(),
                    equalities: state.equalities.clone(),
                    gradients: None,
                },
            ),
        };

        // First-order multiplier steps and penalty increases, on scaled values.
        let factor = settings.penalty_parameters_increase_factor.max(1.0);
        for (i, g) in e.inequalities.iter().enumerate().filter(|_| solved) {
            let (gs, prev) = (g * state.ineq_scales[i], state.inequalities[i].max(0.0) * state.ineq_scales[i]);
            state.ineq_multipliers[i] = (state.ineq_multipliers[i] + state.ineq_penalties[i] * gs).max(0.0);
            let v = gs.max(0.0);
            if v > settings.feasibility_tolerance && v > settings.required_violation_reduction * prev {
                state.ineq_penalties[i] = (state.ineq_penalties[i] * factor).min(settings.max_penalty);
            }
        }
        for (j, h) in e.equalities.iter().enumerate().filter(|_| solved) {
            let (hs, prev) = (h * state.eq_scales[j], (state.equalities[j] * state.eq_scales[j]).abs());
            state.eq_multipliers[j] += state.eq_penalties[j] * hs;
            let v = hs.abs();
            if v > settings.feasibility_tolerance && v > settings.required_violation_reduction * prev {
                state.eq_penalties[j] = (state.eq_penalties[j] * factor).min(settings.max_penalty);
            }
        }
        let moved = state
            .x
            .iter()
            .zip(&x_new)
            .zip(&bounds)
            .map(|((a, b), (lo, hi))| (a - b).abs() / (hi - lo).max(1e-300))
            .fold(0.0, f64::max);
        let objective_change = (e.objective - state.objective).abs() / state.objective.abs().max(1.0);
        let feasible = e.max_violation() <= settings.feasibility_tolerance;
        state.x = x_new;
        state.objective = e.objective;
        state.inequalities = e.inequalities;
        state.equalities = e.equalities;
        state.outer_iterations += 1;
        // The trust box shrinks around an iterate that settled inside it; an
        // iterate pressed against its edge still has ground to cover, so the
        // box keeps its size (a shrinking box would strangle the approach).
        let shrink = settings.bounds_reduction_factor.clamp(0.01, 1.0);
        for (k, (r, (lo, hi))) in state.radius.iter_mut().zip(&bounds).enumerate() {
            let (box_lo, box_hi) = lower[k];
            let edge = 1e-9 * (hi - lo);
            let at_trust_edge =
                (state.x[k] - box_lo <= edge && box_lo > *lo) || (box_hi - state.x[k] <= edge && box_hi < *hi);
            if !at_trust_edge {
                *r = (*r * shrink).max(1e-9 * (hi - lo));
            }
        }
        if solved && feasible && moved < 1e-9 && objective_change < 1e-12 {
            converged = true;
            break;
        }
    }

    let t = tracker.into_inner();
    if let Some(best) = t.best {
        state.best = best;
    }
    state.evaluations += t.evals;
    candidates.push(state.best.clone());
    if state.best.x != state.x {
        candidates.push(Candidate {
            x: state.x.clone(),
            objective: state.objective,
            max_violation: state.max_violation(),
        });
    }
    ChunkResult {
        candidates,
        state: Some(state),
        evals_used: t.evals,
        status: ChunkStatus::Optimized,
        error: None,
        converged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::toy::Small;

    #[test]
    fn the_exact_lagrangian_gradient_matches_finite_differences() {
        // Small with its gradients, at a point where g1 and h1 are both off zero.
        let with_gradients = |x: &[f64]| {
            let mut e = Small.evaluate(x).unwrap();
            e.gradients = Some(crate::numeric::Gradients {
                objective: vec![2.0 * (x[0] - 2.0), 2.0 * (x[1] - 1.0)],
                inequalities: vec![vec![2.0 * x[0], -1.0]],
                equalities: vec![vec![1.0, 1.0]],
            });
            e
        };
        let x = [1.7, 0.4];
        let state = AlmState {
            x: x.to_vec(),
            objective: 0.0,
            inequalities: vec![0.0],
            equalities: vec![0.0],
            ineq_multipliers: vec![0.3],
            eq_multipliers: vec![-0.7],
            ineq_penalties: vec![12.0],
            eq_penalties: vec![5.0],
            ineq_scales: vec![0.5],
            eq_scales: vec![0.25],
            objective_scale: 0.8,
            radius: vec![1.0, 1.0],
            outer_iterations: 0,
            evaluations: 0,
            best: Candidate { x: x.to_vec(), objective: 0.0, max_violation: 0.0 },
            exact_gradients: true,
        };
        let exact = augmented_gradient(&with_gradients(&x), &state).unwrap();
        for k in 0..2 {
            let h = 1e-6;
            let (mut up, mut down) = (x, x);
            up[k] += h;
            down[k] -= h;
            let numeric =
                (augmented(&with_gradients(&up), &state) - augmented(&with_gradients(&down), &state)) / (2.0 * h);
            assert!(
                (exact[k] - numeric).abs() < 1e-6 * numeric.abs().max(1.0),
                "∂/∂x{k}: {} against {numeric}",
                exact[k]
            );
        }
        assert_eq!(augmented_gradient(&Small.evaluate(&x).unwrap(), &state), None, "no gradients, no exact gradient");
    }

    #[test]
    fn alm_solves_a_small_problem_to_tolerance() {
        let s = AlmSettings::default();
        let r = run_chunk(&Small, Start::Seed(vec![-3.0, 4.0]), 3000, &s);
        assert_eq!(r.status, ChunkStatus::Optimized);
        let st = r.state.unwrap();
        assert!(st.best.max_violation <= 1e-4, "{:?}", st.best);
        assert!((st.best.objective - 1.0).abs() < 1e-4, "{:?}", st.best);
        assert!((st.best.x[0] - 1.0).abs() < 1e-3 && (st.best.x[1] - 1.0).abs() < 1e-3);
        assert!(r.evals_used <= 3000);
        assert_eq!(st.evaluations, r.evals_used);
        assert!(st.eq_multipliers[0].abs() > 0.0, "the equality multiplier moved");
    }

    #[test]
    fn chunks_continue_where_the_last_one_stopped_and_count_every_evaluation() {
        let s = AlmSettings::default();
        let mut start = Start::Seed(vec![4.0, -4.0]);
        let mut total = 0;
        let mut last = None;
        for _ in 0..40 {
            let r = run_chunk(&Small, start, 60, &s);
            assert!(r.evals_used <= 60, "a chunk stays inside its budget: {}", r.evals_used);
            total += r.evals_used;
            let st = r.state.unwrap();
            assert_eq!(st.evaluations, total, "evaluations accumulate across chunks");
            if let Some(prev) = &last {
                let prev: &AlmState = prev;
                assert!(st.outer_iterations >= prev.outer_iterations);
                assert!(!st.best.better_than(&st.best, 1e-4));
                assert!(!prev.best.better_than(&st.best, 1e-4), "the best point never gets worse");
            }
            last = Some(st.clone());
            start = Start::Continue(Box::new(st));
            if r.converged {
                break;
            }
        }
        let st = last.unwrap();
        assert!(st.best.max_violation <= 1e-4 && (st.best.objective - 1.0).abs() < 1e-3, "{:?}", st.best);
    }

    #[test]
    fn a_zero_budget_chunk_is_skipped() {
        let r = run_chunk(&Small, Start::Seed(vec![0.0, 0.0]), 0, &AlmSettings::default());
        assert_eq!(r.status, ChunkStatus::Skipped);
        assert_eq!(r.evals_used, 0);
    }

    #[test]
    fn an_evaluation_error_fails_the_chunk_and_keeps_the_last_state() {
        let p = crate::numeric::toy::Breaking::after(20, Small, "evaluator crashed");
        let r = run_chunk(&p, Start::Seed(vec![-3.0, 4.0]), 500, &AlmSettings::default());
        assert_eq!(r.status, ChunkStatus::Failed);
        assert_eq!(r.error.as_deref(), Some("evaluator crashed"));
        assert!(r.state.is_some());
        // Failed batches in a row (a gradient's n + 1 = 3 points each) end it.
        assert!(r.evals_used <= 21 + 3 * u64::from(MAX_CONSECUTIVE_ERRORS), "{}", r.evals_used);
    }

    #[test]
    fn penalties_never_exceed_the_ceiling_and_soft_weights_raise_them() {
        let s = AlmSettings { max_penalty: 50.0, penalty_parameters_increase_factor: 100.0, ..AlmSettings::default() };
        let r = run_chunk(&Small, Start::Seed(vec![-3.0, 4.0]), 400, &s);
        let mut st = r.state.unwrap();
        assert!(st.ineq_penalties.iter().chain(&st.eq_penalties).all(|p| *p <= 50.0));
        let names = (Small.inequality_names(), Small.equality_names());
        assert!(st.raise_penalty("h1", 5000.0, 1000.0, (&names.0, &names.1)));
        assert_eq!(st.eq_penalties[0], 1000.0);
        assert!(!st.raise_penalty("nope", 1.0, 1000.0, (&names.0, &names.1)));
        let snap = st.snapshot(&names.0, &names.1);
        assert_eq!(snap.constraints.len(), 2);
        assert_eq!(snap.constraints[1].penalty, 1000.0);
    }
}
