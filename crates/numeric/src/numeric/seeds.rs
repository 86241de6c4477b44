//! Seed preparation: where trajectories start. A Latin hypercube spreads the
//! samples over the box (every variable's range is cut into as many strata as
//! there are samples, each stratum used once), then a validity filter keeps
//! the points the problem can evaluate to finite values, best first
//! (least violation, then lowest objective).
//!
//! Later rounds of the coordinator also start trajectories [`around`] the
//! best point found so far (iterated local search): on rugged problems the
//! next basin is more often near a good one than anywhere in the box.

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
    use rand::SeedableRng;

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
