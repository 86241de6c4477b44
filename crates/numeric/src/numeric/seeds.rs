//! Seed preparation: where trajectories start. A Latin hypercube spreads the
//! samples over the box (every variable's range is cut into as many strata as
//! there are samples, each stratum used once), then a validity filter keeps
//! the points the problem can evaluate to finite values, best first
//! (least violation, then lowest objective).
//!
//! Later rounds of the coordinator also start trajectories [`around`] the
//! best point found so far (iterated local search): on rugged problems the
//! next basin is more often near a good one than anywhere in the box.
//!
//! Once its searches keep ending in the same minima, the coordinator also
//! starts [`on_constraint`]: on the surface where a constraint active at a
//! minimum found is zero. A global optimum in the corner of a narrow
//! feasible band has a basin few box samples fall into — a Rosenbrock valley
//! cut by a cubic ends at f = 1 by the origin, while f = 0 waits at the tip
//! of the band, reached along the cubic — but the boundary leads there.

use rand::Rng;
use rand::seq::SliceRandom;

use crate::numeric::alm::Candidate;
use crate::numeric::problem::{EvalError, Evaluation, Problem};

/// `count` Latin-hypercube points in `bounds`.
pub fn latin_hypercube<R: Rng>(bounds: &[(f64, f64)], count: usize, rng: &mut R) -> Vec<Vec<f64>> {
    let mut points = vec![vec![0.0; bounds.len()]; count];
    for (k, (lo, hi)) in bounds.iter().enumerate() {
        let mut strata: Vec<usize> = (0..count).collect();
        strata.shuffle(rng);
        for (p, s) in points.iter_mut().zip(strata) {
            let u: f64 = rng.random();
            p[k] = lo + (hi - lo) * (s as f64 + u) / count as f64;
        }
    }
    points
}

/// A start with the problem's answer there (which its first SQP step
/// reuses instead of evaluating the point again).
pub type Seed = (Candidate, Evaluation);

/// Samples `oversampling × wanted` points, evaluates them (each counts as
/// one evaluation) and returns up to `wanted` valid ones, best first, with
/// the evaluations used.
pub fn prepare<R: Rng>(
    problem: &dyn Problem,
    wanted: usize,
    oversampling: usize,
    tol: f64,
    rng: &mut R,
) -> Result<(Vec<Seed>, u64), EvalError> {
    let samples = latin_hypercube(&problem.bounds(), (oversampling.max(1) * wanted).max(1), rng);
    filter_valid(problem, samples, wanted, tol)
}

/// `count` points near `center`: each variable moved by a normal step of
/// `scale` × its range, clamped to the box.
pub fn around<R: Rng>(center: &[f64], bounds: &[(f64, f64)], count: usize, scale: f64, rng: &mut R) -> Vec<Vec<f64>> {
    (0..count)
        .map(|_| {
            center
                .iter()
                .zip(bounds)
                .map(|(v, (lo, hi))| {
                    let step: f64 = rand_distr::Distribution::sample(&rand_distr::StandardNormal, rng);
                    (v + scale * (hi - lo) * step).clamp(*lo, *hi)
                })
                .collect()
        })
        .collect()
}

/// Evaluates `samples` as one batch (each counts as one evaluation) and returns up to
/// `wanted` valid ones, best first, with the evaluations used.
pub fn filter_valid(
    problem: &dyn Problem,
    samples: Vec<Vec<f64>>,
    wanted: usize,
    tol: f64,
) -> Result<(Vec<Seed>, u64), EvalError> {
    let mut valid = Vec::new();
    let evals = samples.len() as u64;
    tracing::trace!(evals, wanted, "seed batch");
    let mut last_error = None;
    // One batch: a persistent external evaluator answers it in one message.
    let answers = problem.evaluate_batch(&samples);
    for (x, answer) in samples.into_iter().zip(answers) {
        // A point the problem cannot evaluate is simply not a seed.
        let e = match answer {
            Ok(e) => e,
            Err(err) => {
                last_error = Some(err);
                continue;
            }
        };
        let c = Candidate { objective: e.objective, max_violation: e.max_violation(), x };
        if c.objective.is_finite() && c.max_violation.is_finite() {
            valid.push((c, e));
        }
    }
    if valid.is_empty()
        && let Some(err) = last_error
    {
        return Err(err);
    }
    valid.sort_by(|(a, _), (b, _)| {
        if a.better_than(b, tol) {
            std::cmp::Ordering::Less
        } else if b.better_than(a, tol) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    valid.truncate(wanted);
    Ok((valid, evals))
}

/// Whether inequality `i` is active at a point: zero within `slack` (or
/// violated). A minimum on a constraint's boundary names that constraint as
/// a place to look for others.
pub fn active_inequalities(e: &Evaluation, slack: f64) -> Vec<usize> {
    e.inequalities.iter().enumerate().filter(|(_, g)| **g >= -slack).map(|(i, _)| i).collect()
}

/// Newton steps a projection onto a constraint surface may take before the
/// point is given up (a curved surface needs a few; a linear one, one).
const PROJECTION_STEPS: usize = 8;

/// `count` starts on the surface where inequality `constraint` is zero:
/// Latin-hypercube samples of the box, each moved onto the surface by Newton
/// steps along the constraint's gradient (the evaluator's when it sends one,
/// forward differences otherwise), clamped to the box. A sample whose
/// projection does not reach |g| ≤ `tol` within a few steps (a flat
/// gradient, the surface outside the box) is dropped. Every point evaluated
/// counts; the steps of all samples go to the problem as one batch each, so
/// a persistent evaluator answers a step in one message. Returns the starts
/// with their evaluations (the last step's, at the start itself) and the
/// evaluations used.
pub fn on_constraint<R: Rng>(
    problem: &dyn Problem,
    constraint: usize,
    count: usize,
    tol: f64,
    rng: &mut R,
) -> Result<(Vec<Seed>, u64), EvalError> {
    let bounds = problem.bounds();
    let steps: Vec<f64> = bounds.iter().map(|(lo, hi)| 1e-7 * (hi - lo).max(1e-12)).collect();
    // Each point with |g| where it was before its last step (a step that
    // does not halve it — the box's clamp in the way, a surface that bends
    // away — gives the point up).
    let mut moving: Vec<(Vec<f64>, f64)> =
        latin_hypercube(&bounds, count, rng).into_iter().map(|x| (x, f64::INFINITY)).collect();
    let mut done = Vec::new();
    let mut used = 0u64;
    let mut last_error = None;
    for _ in 0..PROJECTION_STEPS {
        if moving.is_empty() {
            break;
        }
        used += moving.len() as u64;
        let points: Vec<Vec<f64>> = moving.iter().map(|(x, _)| x.clone()).collect();
        let answers = problem.evaluate_batch(&points);
        // The points still off the surface: where they are, g there, and the
        // gradient when the evaluator sent it.
        let mut off = Vec::new();
        for ((x, before), answer) in moving.into_iter().zip(answers) {
            let at = match answer {
                Ok(e) => e,
                Err(e) => {
                    last_error = Some(e);
                    continue;
                }
            };
            let Some(&g) = at.inequalities.get(constraint) else { continue };
            if !g.is_finite() || !at.objective.is_finite() {
                continue;
            }
            if g.abs() <= tol {
                let c = Candidate { objective: at.objective, max_violation: at.max_violation(), x };
                done.push((c, at));
                continue;
            }
            if g.abs() > 0.5 * before {
                continue;
            }
            let exact = at.gradients.as_ref().and_then(|gr| gr.inequalities.get(constraint).cloned());
            off.push((x, g, exact));
        }
        // Forward differences for those without an exact gradient, as one batch.
        // A step past the upper bound goes the other way: an evaluator may
        // refuse points outside the box.
        let step = |x: &[f64], j: usize| if x[j] + steps[j] > bounds[j].1 { -steps[j] } else { steps[j] };
        let differenced: Vec<Vec<f64>> = off
            .iter()
            .filter(|(_, _, exact)| exact.is_none())
            .flat_map(|(x, _, _)| {
                (0..x.len()).map(move |j| {
                    let mut y = x.clone();
                    y[j] += step(x, j);
                    y
                })
            })
            .collect();
        used += differenced.len() as u64;
        let mut answers = problem.evaluate_batch(&differenced).into_iter();
        moving = off
            .into_iter()
            .filter_map(|(x, g, exact)| {
                let gradient: Option<Vec<f64>> = match exact {
                    Some(gr) => Some(gr),
                    // Every one of the point's d answers is taken, even after a
                    // failed one, so the next point reads its own.
                    None => (0..x.len())
                        .map(|j| {
                            let e = answers.next()?.ok()?;
                            e.inequalities.get(constraint).map(|gh| (gh - g) / step(&x, j))
                        })
                        .collect::<Vec<_>>()
                        .into_iter()
                        .collect(),
                };
                let gradient = gradient.filter(|gr| gr.len() == x.len() && gr.iter().all(|v| v.is_finite()))?;
                let norm2: f64 = gradient.iter().map(|v| v * v).sum();
                (norm2 > f64::MIN_POSITIVE).then(|| {
                    let next = x
                        .iter()
                        .zip(&gradient)
                        .zip(&bounds)
                        .map(|((v, gv), (lo, hi))| (v - g * gv / norm2).clamp(*lo, *hi))
                        .collect();
                    (next, g.abs())
                })
            })
            .collect();
    }
    if done.is_empty()
        && let Some(err) = last_error
    {
        return Err(err);
    }
    Ok((done, used))
}

/// Where a local trajectory starts when its start is chosen on its own
/// first step rather than before the round: the first round's lead
/// trajectory evaluates its own samples only and descends at once; the
/// others share the rest of the round's samples.
pub enum SeedSource {
    /// Samples of its own, evaluated as one batch, the best kept.
    Own(Vec<Vec<f64>>),
    /// The round's shared samples: the first trajectory to need a start
    /// evaluates them all as one batch; each takes the best one left.
    Shared(std::sync::Arc<SeedPool>),
}

/// The shared samples of a round (see [`SeedSource::Shared`]).
pub struct SeedPool {
    state: std::sync::Mutex<PoolState>,
}

struct PoolState {
    /// Not evaluated yet.
    samples: Vec<Vec<f64>>,
    /// Evaluated and valid, best last (taken from the end).
    seeds: Vec<Seed>,
    /// How many starts the pool is for: the best `wanted` of its samples.
    wanted: usize,
}

impl SeedPool {
    pub fn new(samples: Vec<Vec<f64>>, wanted: usize) -> SeedPool {
        SeedPool { state: std::sync::Mutex::new(PoolState { samples, seeds: Vec::new(), wanted }) }
    }

    /// Evaluations the next [`SeedPool::take`] may make.
    pub fn pending(&self) -> u64 {
        self.state.lock().map(|s| s.samples.len() as u64).unwrap_or(0)
    }
}

impl SeedSource {
    /// Evaluations choosing the start may take.
    pub fn pending(&self) -> u64 {
        match self {
            SeedSource::Own(samples) => samples.len() as u64,
            SeedSource::Shared(pool) => pool.pending(),
        }
    }

    /// The start: the best valid sample (of its own, or the best one left
    /// of the round's), with the evaluations spent; `None` when no sample
    /// could be evaluated to finite values.
    pub fn choose(self, problem: &dyn Problem, tol: f64) -> Result<(Option<Seed>, u64), EvalError> {
        match self {
            SeedSource::Own(samples) => {
                let (mut seeds, used) = filter_valid(problem, samples, 1, tol)?;
                Ok((seeds.pop(), used))
            }
            SeedSource::Shared(pool) => {
                let mut state = pool.state.lock().unwrap_or_else(|p| p.into_inner());
                let mut used = 0;
                if !state.samples.is_empty() {
                    let samples = std::mem::take(&mut state.samples);
                    let (mut seeds, evals) = filter_valid(problem, samples, state.wanted, tol)?;
                    seeds.reverse();
                    state.seeds = seeds;
                    used = evals;
                }
                Ok((state.seeds.pop(), used))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::toy::Disk;
    use rand::SeedableRng;

    #[test]
    fn starts_on_a_constraint_lie_on_its_surface_spread_around_it() {
        for exact in [false, true] {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
            let (starts, used) = on_constraint(&Disk { exact_gradients: exact }, 0, 12, 1e-9, &mut rng).unwrap();
            assert!(starts.len() >= 10, "exact {exact}: {} of 12 reached the circle", starts.len());
            for (c, e) in &starts {
                let r = (c.x[0] * c.x[0] + c.x[1] * c.x[1]).sqrt();
                assert!((r - 1.0).abs() < 1e-9, "exact {exact}: {:?} is off the circle", c.x);
                assert_eq!(e.inequalities.len(), 1, "the start carries its evaluation");
            }
            // Starts on both sides of the circle, not all in one place.
            assert!(starts.iter().any(|(c, _)| c.x[0] > 0.3) && starts.iter().any(|(c, _)| c.x[0] < -0.3));
            // Differences cost two more evaluations per point and step.
            assert!(used >= starts.len() as u64 * if exact { 2 } else { 6 }, "exact {exact}: {used}");
        }
    }

    #[test]
    fn active_inequalities_are_those_at_or_past_zero_within_the_slack() {
        let e = Evaluation {
            objective: 0.0,
            inequalities: vec![-1.0, -1e-5, 0.0, 0.3],
            equalities: vec![],
            gradients: None,
        };
        assert_eq!(active_inequalities(&e, 1e-3), vec![1, 2, 3]);
        assert_eq!(active_inequalities(&e, 0.0), vec![2, 3]);
    }

    #[test]
    fn every_stratum_of_every_variable_is_used_once() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let b = [(0.0, 10.0), (-1.0, 1.0)];
        let pts = latin_hypercube(&b, 10, &mut rng);
        for (k, (lo, hi)) in b.iter().enumerate() {
            let mut strata: Vec<usize> =
                pts.iter().map(|p| ((p[k] - lo) / (hi - lo) * 10.0).floor() as usize).collect();
            strata.sort();
            assert_eq!(strata, (0..10).collect::<Vec<_>>());
        }
    }
}
