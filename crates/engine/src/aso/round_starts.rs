//! Where a round's starts come from: global samples of the box, hops
//! around the best point, and — once the hops stop paying — starts on the
//! surfaces of the constraints active at the best point, which reach a
//! basin at the tip of a narrow feasible band that box samples miss.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::coordinator::Coordinator;
use super::seeds;
use crate::numeric::problem::{EvalError, Problem};

/// Where a round's starts come from.
pub(super) enum RoundPlan {
    /// No feasible point yet, or the starts on the active constraints
    /// stopped finding new minima: every start is a global sample.
    Global,
    /// `hops_per_round` hops around the best point at `scale` of each
    /// variable's range; the rest global samples.
    Hops { center: Vec<f64>, scale: f64 },
    /// The hops stopped paying: `round_size` global samples — the starts
    /// the basin evidence counts — and besides them
    /// `boundary_starts_per_round` starts on the surfaces of the constraints
    /// active at the best point `at` (taken in turn, `turn` counting the
    /// rounds). Those are not counted as evidence: the estimate assumes
    /// starts spread over the whole region, and starts on a boundary that
    /// leads to the best point would vouch for it too readily.
    Boundary { at: Vec<f64>, turn: usize },
}

/// Up to `count` starts on the surfaces of the inequalities active at `at`
/// (one evaluation to learn which), each the farthest from `at` of
/// `oversampling` (at least 2) projected samples; none when no inequality
/// is active there.
fn boundary_starts(
    problem: &dyn Problem,
    at: &[f64],
    count: usize,
    oversampling: usize,
    turn: usize,
    tol: f64,
    rng: &mut ChaCha8Rng,
) -> Result<(Vec<seeds::Seed>, u64), EvalError> {
    let Some(Ok(here)) = problem.evaluate_batch(&[at.to_vec()]).pop() else { return Ok((vec![], 1)) };
    let active = seeds::active_inequalities(&here, tol.sqrt());
    let bounds = problem.bounds();
    let mut used = 1;
    let mut starts = Vec::new();
    if active.is_empty() {
        return Ok((starts, used));
    }
    // How far a point is from the best, each variable in its range's units.
    let distance = |x: &[f64]| -> f64 {
        x.iter().zip(at).zip(&bounds).map(|((a, b), (lo, hi))| ((a - b) / (hi - lo).max(1e-12)).powi(2)).sum()
    };
    for k in 0..count {
        let constraint = active[(turn * count + k) % active.len()];
        let (projected, evals) = seeds::on_constraint(problem, constraint, oversampling.max(2), tol, rng)?;
        used += evals;
        // The sample farthest from the best point along the surface: one
        // near it would descend into the basin already known.
        let projected = projected.into_iter().max_by(|(a, _), (b, _)| distance(&a.x).total_cmp(&distance(&b.x)));
        starts.extend(projected);
    }
    Ok((starts, used))
}

impl Coordinator {
    /// The starts of one round (see [`RoundPlan`]), with the evaluations
    /// spent choosing them and how many lead the list as hops, then as
    /// starts on a constraint's surface.
    pub(super) async fn round_seeds(
        &self,
        plan: RoundPlan,
        mut rng: ChaCha8Rng,
    ) -> Result<(Vec<seeds::Seed>, u64, (usize, usize)), String> {
        let n = self.config.round_size();
        let oversampling = self.config.seed_oversampling as usize;
        let hops = (self.config.hops_per_round as usize).min(n - 1);
        let boundary = (self.config.boundary_starts_per_round as usize).min(n);
        let tol = self.tol();
        let problem = self.problem.clone();
        let prepared = tokio::task::spawn_blocking(move || match plan {
            RoundPlan::Hops { center, scale } if hops > 0 => {
                let bounds = problem.bounds();
                let (mut local, used) = seeds::filter_valid(
                    problem.as_ref(),
                    seeds::around(&center, &bounds, hops, scale, &mut rng),
                    hops,
                    tol,
                )?;
                let (global, more) = seeds::prepare(problem.as_ref(), n - hops, oversampling, tol, &mut rng)?;
                let around = local.len();
                local.extend(global);
                Ok((local, used + more, (around, 0)))
            }
            RoundPlan::Boundary { at, turn } if boundary > 0 => {
                // The global samples first, from the round's stream as in a
                // round without boundary starts: these add to the box
                // samples, never displace them.
                let (global, used) = seeds::prepare(problem.as_ref(), n, oversampling, tol, &mut rng)?;
                let mut own = ChaCha8Rng::seed_from_u64(rng.random());
                let (mut starts, more) =
                    boundary_starts(problem.as_ref(), &at, boundary, oversampling, turn, tol, &mut own)?;
                let on_boundary = starts.len();
                starts.extend(global);
                Ok((starts, used + more, (0, on_boundary)))
            }
            _ => seeds::prepare(problem.as_ref(), n, oversampling, tol, &mut rng).map(|(s, used)| (s, used, (0, 0))),
        })
        .await;
        match prepared {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(e.0),
            Err(e) => Err(e.to_string()),
        }
    }
}
