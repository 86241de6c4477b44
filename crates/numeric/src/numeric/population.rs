//! A population optimizer for constrained problems: differential evolution
//! with the ε-constrained comparison (εDE, Takahama & Sakai; the design of
//! εDEag that won CEC 2010), run in chunks of an evaluation budget that
//! continue from the state the previous chunk left — the same worker
//! contract as the ALM (seed 000 §5: candidates, final state, evaluations
//! used, status).
//!
//! Why a population at all: multistart local search finds one basin per
//! start, and on a rugged problem in many variables (CEC 2006 g02: twenty
//! variables, a ratio of cosine sums) the number of basins grows faster than
//! any budget of starts. A population recombines what its members learned
//! about each variable, so it drifts towards the region of good basins
//! instead of sampling basins one at a time.
//!
//! The pieces, each a published choice:
//! - mutation and crossover: DE/rand/1/bin, F = 0.5 and CR = 0.9 to start,
//!   each member adapting its own F and CR (jDE, Brest et al. 2006: a member
//!   keeps the values its last successful child used, and tries new random
//!   ones with probability τ = 0.1);
//! - a component pushed out of the box lands halfway between its parent and
//!   the bound, so the box edge is reachable but not sticky;
//! - selection by the ε comparison: two points whose violations are both
//!   within ε (or equal) are compared by objective, otherwise the smaller
//!   violation wins. ε starts at the violation of the θ-quantile member of the
//!   first population and falls as ε₀·(1 − t/T_c)^cp to the feasibility
//!   tolerance, so early generations may cross infeasible valleys;
//! - gradient repair (the "g" of εDEag): an infeasible child is, with a small
//!   probability, moved by a few Gauss–Newton steps x ← x − J⁺c on its
//!   violated constraints, with a forward-difference Jacobian.
//!
//! In argmin's terms one trial evaluation is the smallest step, a generation
//! is the solver's step, [`PopulationState`] is the state (a generation cut by
//! the chunk's budget is finished by the next chunk) and [`run_chunk`] is the
//! executor that honours the budget exactly. Every evaluation — Jacobian
//! probes included — is counted, and the best point *seen* is kept.

use std::cmp::Ordering;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::alm::{Candidate, ChunkStatus};
use super::problem::{EvalError, Problem};
use crate::numeric::reading::{ConstraintKind, ConstraintReading, Snapshot};

/// DE/rand/1 needs a parent and three other distinct members.
pub const MIN_POPULATION: usize = 4;

/// Upper limit on a population, whatever the settings say: beyond it a
/// generation would not fit any sensible budget.
pub const MAX_POPULATION: usize = 10_000;

/// Settings of the population optimizer, with the published defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PopulationSettings {
    /// Members per variable (εDEag uses 4·n).
    pub size_per_dimension: f64,
    /// Smallest population, for problems with few variables.
    pub min_size: usize,
    /// Differential weight F a member starts with.
    pub scale_factor: f64,
    /// Crossover rate CR a member starts with.
    pub crossover_rate: f64,
    /// Whether each member adapts its own F and CR (jDE).
    pub self_adaptive: bool,
    /// Probability τ that a child tries a new random F (and, separately, CR).
    pub adaptation_probability: f64,
    /// θ: the first ε is the violation of the member at this quantile.
    pub epsilon_quantile: f64,
    /// cp: how fast ε falls.
    pub epsilon_exponent: f64,
    /// T_c as a share of the generations the planned budget affords; ε is at
    /// the feasibility tolerance from then on.
    pub epsilon_control_share: f64,
    /// Probability that an infeasible child is repaired.
    pub repair_probability: f64,
    /// Gauss–Newton steps of one repair (each costs dimension + 1 evaluations).
    pub repair_iterations: u32,
    /// Max violation at which a point counts as feasible.
    pub feasibility_tolerance: f64,
    /// Relative step of the forward-difference Jacobian.
    pub gradient_step: f64,
    /// The population has converged when every variable's spread is below
    /// this fraction of its range.
    pub convergence_spread: f64,
}

impl Default for PopulationSettings {
    fn default() -> Self {
        PopulationSettings {
            size_per_dimension: 4.0,
            min_size: 20,
            scale_factor: 0.5,
            crossover_rate: 0.9,
            self_adaptive: true,
            adaptation_probability: 0.1,
            epsilon_quantile: 0.2,
            epsilon_exponent: 5.0,
            epsilon_control_share: 0.2,
            repair_probability: 0.1,
            repair_iterations: 3,
            feasibility_tolerance: 1e-4,
            gradient_step: 1e-7,
            convergence_spread: 1e-9,
        }
    }
}

impl PopulationSettings {
    /// Members for a problem of `dimension` variables.
    pub fn population_size(&self, dimension: usize) -> usize {
        let by_dimension = (self.size_per_dimension * dimension as f64).round();
        let n = if by_dimension.is_finite() && by_dimension > 0.0 { by_dimension.min(1e9) as usize } else { 0 };
        n.max(self.min_size).clamp(MIN_POPULATION, MAX_POPULATION)
    }
}

/// The ε comparison: within ε (or at equal violation) the lower objective
/// wins, otherwise the lower violation. Points are (objective, violation).
pub fn epsilon_order(a: (f64, f64), b: (f64, f64), epsilon: f64) -> Ordering {
    let ((fa, va), (fb, vb)) = (a, b);
    if (va <= epsilon && vb <= epsilon) || va == vb { fa.total_cmp(&fb) } else { va.total_cmp(&vb) }
}

/// One member of the population with its values and its own F and CR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub x: Vec<f64>,
    /// +∞ when the point could not be evaluated.
    pub objective: f64,
    /// Max violation; +∞ when the point could not be evaluated.
    pub violation: f64,
    /// Constraint values (empty when the point could not be evaluated).
    pub inequalities: Vec<f64>,
    pub equalities: Vec<f64>,
    pub scale_factor: f64,
    pub crossover_rate: f64,
}

impl Member {
    fn key(&self) -> (f64, f64) {
        (self.objective, self.violation)
    }
}

/// Everything a chunk leaves for the next one.
#[derive(Debug, Clone)]
pub struct PopulationState {
    pub members: Vec<Member>,
    /// Starting points not evaluated yet, last one first (a fresh population
    /// is evaluated one point at a time, across chunks if need be).
    pub pending: Vec<Vec<f64>>,
    /// Survivors of the generation in progress: slot `i` is settled once `cursor > i`.
    pub next: Vec<Member>,
    /// The member whose child is made next.
    pub cursor: usize,
    /// Completed generations.
    pub generation: u32,
    /// ε₀, set once the first population is evaluated.
    pub epsilon_start: f64,
    /// The ε level in force (never below the feasibility tolerance).
    pub epsilon: f64,
    /// T_c in generations.
    pub control_generations: f64,
    /// The evaluations planned for the whole run (sets T_c).
    pub planned_evaluations: u64,
    /// Evaluations since the start, across chunks.
    pub evaluations: u64,
    /// The best point seen since the start.
    pub best: Option<Candidate>,
    rng: ChaCha8Rng,
}

impl PopulationState {
    /// Indices of the members, best first under the ε comparison in force.
    pub fn ranked(&self) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.members.len()).collect();
        idx.sort_by(|&a, &b| epsilon_order(self.members[a].key(), self.members[b].key(), self.epsilon));
        idx
    }

    /// Root of the summed per-variable variances: the population's spread,
    /// the analogue of the ALM's trust-box size.
    pub fn spread(&self) -> f64 {
        let m = self.members.len();
        if m == 0 {
            return 0.0;
        }
        let n = self.members[0].x.len();
        (0..n)
            .map(|k| {
                let mean = self.members.iter().map(|p| p.x[k]).sum::<f64>() / m as f64;
                self.members.iter().map(|p| (p.x[k] - mean).powi(2)).sum::<f64>() / m as f64
            })
            .sum::<f64>()
            .sqrt()
    }

    /// The state as the coordinator's diagnostics read it: the values of the
    /// median member under the ε comparison — a real point that moves as the
    /// population does, so its objective settles only when the population has
    /// (the best member can sit still for many generations while the rest
    /// still improve). A constraint's "penalty" is the ε level, the
    /// population's counterpart of a penalty: what violation is tolerated.
    pub fn snapshot(&self, ineq_names: &[String], eq_names: &[String]) -> Snapshot {
        let ranked = self.ranked();
        let median = ranked.get(ranked.len() / 2).map(|&i| &self.members[i]);
        let value =
            |values: Option<&Vec<f64>>, i: usize| values.and_then(|v| v.get(i)).copied().unwrap_or(f64::INFINITY);
        let mut constraints = Vec::with_capacity(ineq_names.len() + eq_names.len());
        for (i, name) in ineq_names.iter().enumerate() {
            constraints.push(ConstraintReading {
                name: name.clone(),
                kind: ConstraintKind::Inequality,
                value: value(median.map(|m| &m.inequalities), i),
                penalty: self.epsilon,
            });
        }
        for (j, name) in eq_names.iter().enumerate() {
            constraints.push(ConstraintReading {
                name: name.clone(),
                kind: ConstraintKind::Equality,
                value: value(median.map(|m| &m.equalities), j),
                penalty: self.epsilon,
            });
        }
        Snapshot { objective: median.map_or(f64::INFINITY, |m| m.objective), constraints, bounds_norm: self.spread() }
    }

    /// Whether every variable's spread is below `fraction` of its range.
    fn collapsed(&self, bounds: &[(f64, f64)], fraction: f64) -> bool {
        bounds.iter().enumerate().all(|(k, (lo, hi))| {
            let (min, max) = self
                .members
                .iter()
                .map(|m| m.x[k])
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
            max - min <= fraction * (hi - lo)
        })
    }

    /// ε₀ from the first population, and T_c from the planned budget.
    fn start_epsilon(&mut self, settings: &PopulationSettings) {
        let mut v: Vec<f64> = self.members.iter().map(|m| m.violation).filter(|v| v.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let at = ((settings.epsilon_quantile.clamp(0.0, 1.0) * self.members.len() as f64) as usize)
            .min(v.len().saturating_sub(1));
        self.epsilon_start = v.get(at).copied().unwrap_or(0.0);
        let generations = self.planned_evaluations as f64 / self.members.len().max(1) as f64;
        self.control_generations = (settings.epsilon_control_share.max(0.0) * generations).max(1.0);
        self.update_epsilon(settings);
    }

    fn update_epsilon(&mut self, settings: &PopulationSettings) {
        let t = f64::from(self.generation);
        let level = if t < self.control_generations {
            self.epsilon_start * (1.0 - t / self.control_generations).powf(settings.epsilon_exponent.max(0.0))
        } else {
            0.0
        };
        self.epsilon = level.max(settings.feasibility_tolerance);
    }
}

/// How a chunk starts: from starting points, or from where the last chunk ended.
#[derive(Debug, Clone)]
pub enum PopulationStart {
    /// A new population on these points (one member each). The planned
    /// budget of the whole run sets how fast ε falls; the seed makes the run
    /// reproducible.
    Fresh {
        points: Vec<Vec<f64>>,
        planned_evaluations: u64,
        seed: u64,
    },
    Continue(Box<PopulationState>),
}

/// What one chunk hands back (seed 000 §5).
#[derive(Debug, Clone)]
pub struct PopulationChunk {
    /// The best point seen so far, then the best member if that differs.
    pub candidates: Vec<Candidate>,
    pub state: Option<PopulationState>,
    pub evals_used: u64,
    pub status: ChunkStatus,
    pub error: Option<String>,
    /// The population has collapsed onto one point: more chunks would not help.
    pub converged: bool,
}

/// Counts evaluations against the chunk's budget and remembers the best point seen.
struct Evaluator<'p> {
    problem: &'p dyn Problem,
    evals: u64,
    budget: u64,
    tol: f64,
    best: Option<Candidate>,
    consecutive_errors: u32,
    /// The evaluator is broken (too many failures in a row): the chunk ends.
    error: Option<EvalError>,
}

impl Evaluator<'_> {
    fn remaining(&self) -> u64 {
        self.budget.saturating_sub(self.evals)
    }

    /// Evaluates `x` (one evaluation) into a member; a point the problem
    /// cannot evaluate becomes a member that loses every comparison.
    fn member(&mut self, x: Vec<f64>, scale_factor: f64, crossover_rate: f64) -> Member {
        let mut one = self.members(vec![(x, scale_factor, crossover_rate)]);
        one.pop().unwrap_or_else(|| Member::unevaluated(Vec::new(), scale_factor, crossover_rate))
    }

    /// Evaluates points (with the F and CR each was made with) as one batch
    /// — a generation goes to a persistent external evaluator in one message,
    /// spread over its processes.
    fn members(&mut self, trials: Vec<(Vec<f64>, f64, f64)>) -> Vec<Member> {
        self.evals += trials.len() as u64;
        let points: Vec<Vec<f64>> = trials.iter().map(|t| t.0.clone()).collect();
        let answers = self.problem.evaluate_batch(&points);
        // A batch counts once towards the errors in a row (`broken_after`).
        let mut failure = None;
        let mut any_ok = false;
        let members = trials
            .into_iter()
            .zip(answers)
            .map(|((x, scale_factor, crossover_rate), answer)| {
                let evaluated = answer.and_then(|e| {
                    if e.is_finite() { Ok(e) } else { Err(EvalError(format!("not a finite value at x = {x:?}"))) }
                });
                match evaluated {
                    Ok(e) => {
                        any_ok = true;
                        let violation = e.max_violation();
                        let c = Candidate { x: x.clone(), objective: e.objective, max_violation: violation };
                        if self.best.as_ref().is_none_or(|b| c.better_than(b, self.tol)) {
                            self.best = Some(c);
                        }
                        Member {
                            x,
                            objective: e.objective,
                            violation,
                            inequalities: e.inequalities,
                            equalities: e.equalities,
                            scale_factor,
                            crossover_rate,
                        }
                    }
                    Err(err) => {
                        failure = Some(err);
                        Member::unevaluated(x, scale_factor, crossover_rate)
                    }
                }
            })
            .collect();
        if let Some(err) = super::alm::broken_after(&mut self.consecutive_errors, any_ok, failure) {
            self.error.get_or_insert(err);
        }
        members
    }
}

impl Member {
    /// A point the problem could not evaluate: it loses every comparison.
    fn unevaluated(x: Vec<f64>, scale_factor: f64, crossover_rate: f64) -> Member {
        Member {
            x,
            objective: f64::INFINITY,
            violation: f64::INFINITY,
            inequalities: vec![],
            equalities: vec![],
            scale_factor,
            crossover_rate,
        }
    }
}

/// Runs the population for at most `budget` evaluations: exactly `budget`
/// unless the population converges or the problem fails.
pub fn run_chunk(
    problem: &dyn Problem,
    start: PopulationStart,
    budget: u64,
    settings: &PopulationSettings,
) -> PopulationChunk {
    let n = problem.dimension();
    let bounds = problem.bounds();
    let skipped = |state: Option<PopulationState>, error: Option<String>| PopulationChunk {
        candidates: vec![],
        state,
        evals_used: 0,
        status: ChunkStatus::Skipped,
        error,
        converged: false,
    };
    let mut state = match start {
        PopulationStart::Continue(s) => *s,
        PopulationStart::Fresh { points, planned_evaluations, seed } => {
            if points.len() < MIN_POPULATION || points.len() > MAX_POPULATION {
                return skipped(
                    None,
                    Some(format!(
                        "a population needs {MIN_POPULATION} to {MAX_POPULATION} starting points, got {}",
                        points.len()
                    )),
                );
            }
            if let Some(p) = points.iter().find(|p| p.len() != n) {
                return skipped(None, Some(format!("a starting point has {} coordinates, the problem {n}", p.len())));
            }
            let mut pending: Vec<Vec<f64>> = points
                .into_iter()
                .map(|p| p.iter().zip(&bounds).map(|(v, (lo, hi))| v.clamp(*lo, *hi)).collect())
                .collect();
            pending.reverse();
            PopulationState {
                members: Vec::with_capacity(pending.len()),
                pending,
                next: vec![],
                cursor: 0,
                generation: 0,
                epsilon_start: 0.0,
                epsilon: settings.feasibility_tolerance,
                control_generations: 1.0,
                planned_evaluations,
                evaluations: 0,
                best: None,
                rng: ChaCha8Rng::seed_from_u64(seed),
            }
        }
    };
    if budget == 0 || n == 0 {
        return skipped(Some(state), None);
    }

    let mut ev = Evaluator {
        problem,
        evals: 0,
        budget,
        tol: settings.feasibility_tolerance,
        best: state.best.take(),
        consecutive_errors: 0,
        error: None,
    };
    let tau = settings.adaptation_probability.clamp(0.0, 1.0);
    let mut converged = false;
    'chunk: while ev.remaining() > 0 && ev.error.is_none() {
        let room = usize::try_from(ev.remaining()).unwrap_or(usize::MAX);
        // The first population, as many of its points at once as the budget allows.
        if !state.pending.is_empty() {
            let take = room.min(state.pending.len());
            let first: Vec<_> = (0..take)
                .filter_map(|_| state.pending.pop())
                .map(|x| (x, settings.scale_factor, settings.crossover_rate))
                .collect();
            let members = ev.members(first);
            state.members.extend(members);
            if state.pending.is_empty() {
                state.start_epsilon(settings);
                state.next = state.members.clone();
            }
            continue;
        }
        // The rest of this generation's children in one batch: each is made
        // from the current members only, so none depends on another's value.
        let end = state.members.len().min(state.cursor.saturating_add(room));
        // Each child's repair coin is drawn with it, so a generation cut
        // across chunks draws the same numbers as an uncut one.
        let (trials, coins): (Vec<_>, Vec<f64>) = (state.cursor..end)
            .map(|i| {
                let t = trial(&mut state, i, &bounds, settings, tau);
                (t, state.rng.random::<f64>())
            })
            .unzip();
        let children = ev.members(trials);
        for ((i, mut child), coin) in (state.cursor..end).zip(children).zip(coins) {
            if child.violation > state.epsilon && child.violation.is_finite() && coin < settings.repair_probability {
                child = repair(&mut ev, child, &bounds, settings, state.epsilon);
            }
            if epsilon_order(child.key(), state.members[i].key(), state.epsilon) != Ordering::Greater {
                state.next[i] = child;
            }
            state.cursor += 1;
        }
        if state.cursor == state.members.len() {
            state.members.clone_from(&state.next);
            state.cursor = 0;
            state.generation += 1;
            state.update_epsilon(settings);
            if state.collapsed(&bounds, settings.convergence_spread) {
                converged = true;
                break 'chunk;
            }
        }
    }
    state.evaluations += ev.evals;
    state.best = ev.best.clone();
    let mut candidates: Vec<Candidate> = ev.best.iter().cloned().collect();
    if let Some(&top) = state.ranked().first() {
        let m = &state.members[top];
        if m.objective.is_finite() && candidates.first().is_none_or(|b| b.x != m.x) {
            candidates.push(Candidate { x: m.x.clone(), objective: m.objective, max_violation: m.violation });
        }
    }
    let (status, error) = match ev.error {
        Some(e) => (ChunkStatus::Failed, Some(e.0)),
        None => (ChunkStatus::Optimized, None),
    };
    PopulationChunk { candidates, state: Some(state), evals_used: ev.evals, status, error, converged }
}

/// Member `i`'s child by DE/rand/1/bin, with the F and CR it tries.
fn trial(
    state: &mut PopulationState,
    i: usize,
    bounds: &[(f64, f64)],
    settings: &PopulationSettings,
    tau: f64,
) -> (Vec<f64>, f64, f64) {
    let np = state.members.len();
    let rng = &mut state.rng;
    let parent = &state.members[i];
    let (f, cr) = if settings.self_adaptive {
        let f = if rng.random::<f64>() < tau { 0.1 + 0.9 * rng.random::<f64>() } else { parent.scale_factor };
        let cr = if rng.random::<f64>() < tau { rng.random::<f64>() } else { parent.crossover_rate };
        (f, cr)
    } else {
        (settings.scale_factor, settings.crossover_rate)
    };
    let mut pick = |taken: &[usize]| loop {
        let r = rng.random_range(0..np);
        if !taken.contains(&r) {
            break r;
        }
    };
    let r1 = pick(&[i]);
    let r2 = pick(&[i, r1]);
    let r3 = pick(&[i, r1, r2]);
    let n = bounds.len();
    let forced = rng.random_range(0..n);
    let (a, b, c) = (&state.members[r1].x, &state.members[r2].x, &state.members[r3].x);
    let x = (0..n)
        .map(|k| {
            let (lo, hi) = bounds[k];
            if k != forced && rng.random::<f64>() >= cr {
                return parent.x[k];
            }
            let v = a[k] + f * (b[k] - c[k]);
            if v < lo {
                0.5 * (lo + parent.x[k])
            } else if v > hi {
                0.5 * (hi + parent.x[k])
            } else if v.is_finite() {
                v
            } else {
                parent.x[k]
            }
        })
        .collect();
    (x, f, cr)
}

/// Gauss–Newton steps x ← x − Jᵀ(JJᵀ)⁻¹c on the violated constraints, each
/// kept only if it lowers the violation; stops when the point is within ε or
/// the chunk's budget cannot pay for another Jacobian (a repair never spans
/// two chunks: a cut one leaves the child as far as it got).
fn repair(
    ev: &mut Evaluator,
    mut current: Member,
    bounds: &[(f64, f64)],
    settings: &PopulationSettings,
    epsilon: f64,
) -> Member {
    let n = bounds.len();
    for _ in 0..settings.repair_iterations {
        if current.violation <= epsilon || ev.remaining() < n as u64 + 1 || ev.error.is_some() {
            break;
        }
        // The violated rows: inequalities above zero, every equality off zero.
        let rows: Vec<(bool, usize, f64)> = current
            .inequalities
            .iter()
            .enumerate()
            .filter(|(_, g)| **g > 0.0)
            .map(|(i, g)| (true, i, *g))
            .chain(current.equalities.iter().enumerate().filter(|(_, h)| **h != 0.0).map(|(j, h)| (false, j, *h)))
            .collect();
        if rows.is_empty() {
            break;
        }
        let steps: Vec<f64> = (0..n)
            .map(|k| {
                let (lo, hi) = bounds[k];
                let h = settings.gradient_step * current.x[k].abs().max(1.0);
                if current.x[k] + h > hi && current.x[k] - h >= lo { -h } else { h }
            })
            .collect();
        let probes: Vec<_> = (0..n)
            .map(|k| {
                let mut probe = current.x.clone();
                probe[k] += steps[k];
                (probe, current.scale_factor, current.crossover_rate)
            })
            .collect();
        let mut jacobian = vec![vec![0.0; n]; rows.len()];
        for (k, p) in ev.members(probes).into_iter().enumerate() {
            if !p.objective.is_finite() {
                return current;
            }
            for (r, &(inequality, idx, value)) in rows.iter().enumerate() {
                let shifted = if inequality { p.inequalities[idx] } else { p.equalities[idx] };
                jacobian[r][k] = (shifted - value) / steps[k];
            }
        }
        let values: Vec<f64> = rows.iter().map(|r| r.2).collect();
        let Some(step) = minimum_norm_step(&jacobian, &values) else { return current };
        let x: Vec<f64> =
            current.x.iter().zip(&step).zip(bounds).map(|((v, s), (lo, hi))| (v - s).clamp(*lo, *hi)).collect();
        if x.iter().any(|v| !v.is_finite()) {
            return current;
        }
        let moved = ev.member(x, current.scale_factor, current.crossover_rate);
        if moved.violation < current.violation {
            current = moved;
        } else {
            break;
        }
    }
    current
}

/// The least-norm s with J s = c: s = Jᵀ y where (JJᵀ + δI) y = c, a tiny δ
/// keeping dependent rows solvable. `None` when the system is singular anyway.
pub(crate) fn minimum_norm_step(jacobian: &[Vec<f64>], c: &[f64]) -> Option<Vec<f64>> {
    let m = jacobian.len();
    let n = jacobian.first().map_or(0, Vec::len);
    let mut a = vec![vec![0.0; m + 1]; m];
    for r in 0..m {
        for s in 0..m {
            a[r][s] = jacobian[r].iter().zip(&jacobian[s]).map(|(p, q)| p * q).sum();
        }
        a[r][m] = c[r];
    }
    let trace: f64 = (0..m).map(|r| a[r][r]).sum();
    let delta = 1e-12 * trace.max(f64::MIN_POSITIVE) / m.max(1) as f64;
    for (r, row) in a.iter_mut().enumerate() {
        row[r] += delta;
    }
    // Gaussian elimination with partial pivoting on the augmented matrix.
    for col in 0..m {
        let pivot = (col..m).max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))?;
        if a[pivot][col].abs() < 1e-300 || !a[pivot][col].is_finite() {
            return None;
        }
        a.swap(col, pivot);
        let (upper, lower) = a.split_at_mut(col + 1);
        let pivot_row = &upper[col];
        for row in lower.iter_mut() {
            let factor = row[col] / pivot_row[col];
            for (v, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                *v -= factor * p;
            }
        }
    }
    let mut y = vec![0.0; m];
    for r in (0..m).rev() {
        let tail: f64 = (r + 1..m).map(|k| a[r][k] * y[k]).sum();
        y[r] = (a[r][m] - tail) / a[r][r];
    }
    let s: Vec<f64> = (0..n).map(|k| (0..m).map(|r| jacobian[r][k] * y[r]).sum()).collect();
    s.iter().all(|v| v.is_finite()).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::alm::MAX_CONSECUTIVE_ERRORS;
    use crate::numeric::toy::{Breaking, Plane, SmallInequalities as Small};

    fn points(problem: &dyn Problem, count: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        crate::numeric::seeds::latin_hypercube(&problem.bounds(), count, &mut rng)
    }

    fn fresh(problem: &dyn Problem, planned: u64, seed: u64) -> PopulationStart {
        let size = PopulationSettings::default().population_size(problem.dimension());
        PopulationStart::Fresh { points: points(problem, size, seed), planned_evaluations: planned, seed }
    }

    #[test]
    fn the_epsilon_comparison_follows_takahama_and_sakai() {
        let eps = 0.1;
        // Both within ε: the objective decides, whatever the violations.
        assert_eq!(epsilon_order((1.0, 0.09), (2.0, 0.0), eps), Ordering::Less);
        // Equal violations, even beyond ε: the objective decides.
        assert_eq!(epsilon_order((5.0, 3.0), (4.0, 3.0), eps), Ordering::Greater);
        // Otherwise the smaller violation wins, whatever the objectives.
        assert_eq!(epsilon_order((100.0, 0.05), (-100.0, 0.2), eps), Ordering::Less);
        assert_eq!(epsilon_order((-100.0, 0.5), (100.0, 0.2), eps), Ordering::Greater);
        // With ε = 0 it is the feasibility rule: feasible beats infeasible.
        assert_eq!(epsilon_order((9.0, 0.0), (1.0, 1e-9), 0.0), Ordering::Less);
        // An unevaluable point loses to any evaluable one.
        assert_eq!(epsilon_order((1e300, 1e300), (f64::INFINITY, f64::INFINITY), eps), Ordering::Less);
    }

    #[test]
    fn the_population_solves_a_small_constrained_problem_to_tolerance() {
        let r = run_chunk(&Small, fresh(&Small, 8000, 3), 8000, &PopulationSettings::default());
        assert_eq!(r.status, ChunkStatus::Optimized);
        let best = r.state.unwrap().best.unwrap();
        // Judged as the benchmark judges: within the violation tolerance and
        // at most 1e-4 above the optimum (the tolerance's slack may put it a
        // hair below).
        assert!(best.max_violation <= 1e-4, "{best:?}");
        assert!(best.objective <= 1.0 + 1e-4 && best.objective > 1.0 - 1e-3, "{best:?}");
        assert!((best.x[0] - 1.0).abs() < 1e-3 && (best.x[1] - 1.0).abs() < 1e-3, "{best:?}");
    }

    #[test]
    fn an_equality_is_met_through_the_epsilon_level_and_repair() {
        let r = run_chunk(&Plane, fresh(&Plane, 6000, 5), 6000, &PopulationSettings::default());
        let best = r.state.unwrap().best.unwrap();
        assert!(best.max_violation <= 1e-4, "{best:?}");
        assert!((best.objective - 3.0).abs() < 1e-2, "{best:?}");
    }

    #[test]
    fn a_repair_step_lands_on_a_linear_equality() {
        let settings = PopulationSettings::default();
        let mut ev = Evaluator {
            problem: &Plane,
            evals: 0,
            budget: 100,
            tol: 1e-4,
            best: None,
            consecutive_errors: 0,
            error: None,
        };
        let start = ev.member(vec![4.0, -2.0, 5.0], 0.5, 0.9);
        assert!(start.violation > 3.0);
        let repaired = repair(&mut ev, start, &Plane.bounds(), &settings, 1e-4);
        assert!(repaired.violation < 1e-6, "{repaired:?}");
        // One Jacobian (3 probes) and one step (1 evaluation) beyond the start.
        assert_eq!(ev.evals, 1 + 4);
    }

    #[test]
    fn chunks_spend_their_budget_exactly_and_continue_where_they_stopped() {
        // Without repair: a repair needs its whole Jacobian inside one chunk,
        // so a chunk boundary can cut one short and the cut would show.
        let s = PopulationSettings { repair_probability: 0.0, ..PopulationSettings::default() };
        let budgets = [7, 1, 33, 100, 250, 19];
        let mut start = fresh(&Small, 410, 11);
        let mut total = 0;
        let mut last_best: Option<Candidate> = None;
        for b in budgets {
            let r = run_chunk(&Small, start, b, &s);
            assert_eq!(r.evals_used, b, "a chunk uses exactly its budget");
            total += r.evals_used;
            let st = r.state.unwrap();
            assert_eq!(st.evaluations, total, "evaluations accumulate across chunks");
            let best = st.best.clone().unwrap();
            if let Some(prev) = &last_best {
                assert!(!prev.better_than(&best, 1e-4), "the best point never gets worse");
            }
            last_best = Some(best);
            start = PopulationStart::Continue(Box::new(st));
        }
        // A population cut into chunks ends where one uncut run does.
        let whole = run_chunk(&Small, fresh(&Small, 410, 11), total, &s).state.unwrap();
        let PopulationStart::Continue(pieces) = start else { unreachable!() };
        assert_eq!(pieces.members, whole.members);
        assert_eq!((pieces.generation, pieces.cursor), (whole.generation, whole.cursor));
    }

    #[test]
    fn the_same_seed_gives_the_same_run_and_another_seed_another() {
        let s = PopulationSettings::default();
        let a = run_chunk(&Small, fresh(&Small, 1000, 2), 1000, &s).state.unwrap();
        let b = run_chunk(&Small, fresh(&Small, 1000, 2), 1000, &s).state.unwrap();
        let c = run_chunk(&Small, fresh(&Small, 1000, 3), 1000, &s).state.unwrap();
        assert_eq!(a.members, b.members);
        assert_eq!(a.best, b.best);
        assert_ne!(a.members, c.members);
    }

    #[test]
    fn too_few_starting_points_or_a_zero_budget_is_skipped() {
        let s = PopulationSettings::default();
        let few = PopulationStart::Fresh { points: vec![vec![0.0, 0.0]; 3], planned_evaluations: 100, seed: 1 };
        let r = run_chunk(&Small, few, 100, &s);
        assert_eq!((r.status, r.evals_used), (ChunkStatus::Skipped, 0));
        assert!(r.error.unwrap().contains("got 3"));
        let wrong = PopulationStart::Fresh { points: vec![vec![0.0; 3]; 8], planned_evaluations: 100, seed: 1 };
        assert!(run_chunk(&Small, wrong, 100, &s).error.unwrap().contains("3 coordinates"));
        let r = run_chunk(&Small, fresh(&Small, 100, 1), 0, &s);
        assert_eq!((r.status, r.evals_used), (ChunkStatus::Skipped, 0));
        assert!(r.state.is_some());
    }

    #[test]
    fn a_broken_evaluator_fails_the_chunk_and_keeps_the_state() {
        let p = Breaking::after(50, Small, "evaluator crashed");
        let r = run_chunk(&p, fresh(&p, 1000, 1), 1000, &PopulationSettings::default());
        assert_eq!(r.status, ChunkStatus::Failed);
        assert_eq!(r.error.as_deref(), Some("evaluator crashed"));
        // The batch in flight when it broke is counted, then the chunk ends.
        assert_eq!(r.evals_used, u64::from(p.calls()));
        assert!(r.evals_used >= 50 + u64::from(MAX_CONSECUTIVE_ERRORS) && r.evals_used < 1000, "{}", r.evals_used);
        assert!(r.state.unwrap().best.is_some());
    }

    #[test]
    fn the_snapshot_reads_the_median_member_and_the_epsilon_level() {
        let r = run_chunk(&Small, fresh(&Small, 2000, 4), 500, &PopulationSettings::default());
        let st = r.state.unwrap();
        let snap = st.snapshot(&Small.inequality_names(), &[]);
        assert_eq!(snap.constraints.len(), 2);
        assert!(snap.constraints.iter().all(|c| c.penalty == st.epsilon));
        let median = &st.members[st.ranked()[st.members.len() / 2]];
        assert_eq!(snap.objective, median.objective);
        assert_eq!(snap.bounds_norm, st.spread());
        assert!(st.epsilon >= 1e-4);
    }

    #[test]
    fn the_population_size_follows_the_dimension_within_limits() {
        let s = PopulationSettings::default();
        assert_eq!(s.population_size(20), 80);
        assert_eq!(s.population_size(2), 20);
        let odd = PopulationSettings { size_per_dimension: f64::NAN, min_size: 0, ..s.clone() };
        assert_eq!(odd.population_size(5), MIN_POPULATION);
        let huge = PopulationSettings { size_per_dimension: 1e12, ..s };
        assert_eq!(huge.population_size(5), MAX_POPULATION);
    }
}
