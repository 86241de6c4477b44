//! The numeric benchmark's runs of our coordinator, and the record every run
//! leaves — ours and the peers' (`bench/peers.py` writes the same fields).
//!
//! A run is one coordinator invocation on one problem with one seed and the
//! whole evaluation budget, exactly what an `optimize` task run does, minus
//! the store. The problem is wrapped in a [`Recorder`] that counts every
//! evaluation and keeps the best feasible point *seen*: what a solver returns
//! can be worse than the best point it visited (the benchmark notes' pitfall
//! 7), and the peers are judged the same way.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::aso::{AsoConfig, Coordinator, ModelSupervisor, RunStop, SupervisionContext, TieredSupervisor};
use crate::numeric::problem::{BestKnown, EvalError, Evaluation, Problem};
use crate::numeric::resolve_problem;
use crate::task::optimize::relative_scale;

/// The method name our coordinator's rows carry.
pub const OURS: &str = "attractor";

/// The problems the targets are judged on: g01–g11, g13–g15,
/// g17–g19, g21, g23, g24 and the four engineering designs. g12, g16, g20
/// and g22 are left out (g20 has no known feasible point; g22 is
/// numerically degenerate; g12 and g16 are easy for everyone).
pub const TARGET_PROBLEMS: [&str; 24] = [
    "g01",
    "g02",
    "g03",
    "g04",
    "g05",
    "g06",
    "g07",
    "g08",
    "g09",
    "g10",
    "g11",
    "g13",
    "g14",
    "g15",
    "g17",
    "g18",
    "g19",
    "g21",
    "g23",
    "g24",
    "pressure_vessel",
    "welded_beam",
    "spring",
    "speed_reducer",
];

/// One run of one method on one problem with one seed. Peers' rows (from
/// `bench/peers.py`) have the same fields; `coordinator` is ours alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub problem: String,
    pub method: String,
    pub seed: u64,
    /// A point with max violation ≤ tol and objective within tol (relative)
    /// of the reference was evaluated within the budget.
    pub success: bool,
    /// The 1-based index of the first evaluation that was a success.
    pub evals_to_success: Option<u64>,
    /// Best objective among the evaluated points with max violation ≤ tol.
    pub best_feasible: Option<f64>,
    /// Evaluations made (objective and every constraint at one point = one).
    pub evals: u64,
    /// Max violation and objective of the point the method returned.
    pub final_violation: Option<f64>,
    pub final_objective: Option<f64>,
    pub seconds: f64,
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinator: Option<CoordinatorCounters>,
    /// The 1-based index of the first evaluation whose feasible objective
    /// was within `gap` of the run's final best feasible one (the same
    /// one-sided gap success is judged at): where the run found what it
    /// ends with. The evaluations after it went to confirming it (issue
    /// 17 asks a run that stopped on its own to spend at most 10 % there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evals_to_final_best: Option<u64>,
}

impl RunRecord {
    /// The share of a run's evaluations made after its final best
    /// (`evals_to_final_best`), when it has one.
    pub fn share_after_final_best(&self) -> Option<f64> {
        let at = self.evals_to_final_best?;
        (self.evals > 0).then(|| self.evals.saturating_sub(at) as f64 / self.evals as f64)
    }
}

/// Seed 000 §8's raw counts for one coordinator run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CoordinatorCounters {
    pub trajectories: u32,
    /// Trajectories whose best point is feasible (the "convergence rate" numerator).
    pub feasible_trajectories: u32,
    pub restarts: u32,
    /// RESTARTs after which the trajectory reached feasibility.
    pub restarts_recovered: u32,
    /// Supervision steps (one per ALM chunk).
    pub steps: u32,
    pub llm_calls: u32,
    pub llm_failures: u32,
    /// Why the run stopped (`agreed`, `stalled`: on its own; `budget`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<RunStop>,
}

/// Whether `objective` counts as reaching `reference`: a gap of at most `tol`
/// relative to the reference's magnitude. One-sided, because a point may
/// use the violation tolerance to go slightly below an exactly feasible
/// optimum (the notes' pitfall 1); that is not a miss.
pub fn reaches(objective: f64, reference: f64, tol: f64) -> bool {
    (objective - reference) / relative_scale(reference) <= tol
}

/// Wraps a problem: counts evaluations, keeps the best feasible objective
/// seen and the index of the first successful evaluation. Shared by the
/// coordinator's concurrent trajectories, hence the atomics and the lock.
pub struct Recorder {
    inner: Arc<dyn Problem>,
    reference: Option<f64>,
    tol: f64,
    gap: f64,
    evals: AtomicU64,
    seen: Mutex<Seen>,
}

#[derive(Debug, Default, Clone)]
struct Seen {
    best_feasible: Option<f64>,
    first_success: Option<u64>,
    /// Every improvement of `best_feasible`: (evaluation index, objective).
    improvements: Vec<(u64, f64)>,
}

impl Recorder {
    /// Judges feasibility at `tol` (max violation) and success at `gap` (relative to the reference).
    pub fn new(inner: Arc<dyn Problem>, reference: Option<f64>, tol: f64, gap: f64) -> Recorder {
        Recorder { inner, reference, tol, gap, evals: AtomicU64::new(0), seen: Mutex::new(Seen::default()) }
    }

    pub fn evaluations(&self) -> u64 {
        self.evals.load(Ordering::Acquire)
    }

    pub fn best_feasible(&self) -> Option<f64> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).best_feasible
    }

    pub fn first_success(&self) -> Option<u64> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).first_success
    }

    /// The index of the first evaluation that came within `gap` of the
    /// final best feasible objective. The concurrent trajectories' batches
    /// may record their indices out of order, hence the least index.
    pub fn final_best_at(&self) -> Option<u64> {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let last = seen.best_feasible?;
        seen.improvements.iter().filter(|(_, f)| reaches(*f, last, self.gap)).map(|(i, _)| *i).min()
    }
}

impl Problem for Recorder {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        self.inner.bounds()
    }
    fn inequality_names(&self) -> Vec<String> {
        self.inner.inequality_names()
    }
    fn equality_names(&self) -> Vec<String> {
        self.inner.equality_names()
    }
    fn best_known(&self) -> Option<BestKnown> {
        self.inner.best_known()
    }
    fn feasibility_tolerance(&self) -> Option<f64> {
        self.inner.feasibility_tolerance()
    }

    fn evaluate(&self, x: &[f64]) -> Result<Evaluation, EvalError> {
        let index = self.evals.fetch_add(1, Ordering::AcqRel) + 1;
        let e = self.inner.evaluate(x)?;
        tracing::trace!(index, x = ?x, f = e.objective, v = e.max_violation(), "eval");
        self.note(index, &e);
        Ok(e)
    }

    /// The inner problem's own batch (one message to a persistent external
    /// evaluator), each point counted in order.
    fn evaluate_batch(&self, points: &[Vec<f64>]) -> Vec<Result<Evaluation, EvalError>> {
        let first = self.evals.fetch_add(points.len() as u64, Ordering::AcqRel) + 1;
        let answers = self.inner.evaluate_batch(points);
        for (i, e) in answers.iter().enumerate() {
            if let Ok(e) = e {
                tracing::trace!(index = first + i as u64, x = ?points[i], f = e.objective, v = e.max_violation(), "eval");
                self.note(first + i as u64, e);
            }
        }
        answers
    }
}

impl Recorder {
    /// Records evaluation number `index` if it is feasible.
    fn note(&self, index: u64, e: &Evaluation) {
        if e.is_finite() && e.max_violation() <= self.tol {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            if seen.best_feasible.is_none_or(|b| e.objective < b) {
                seen.best_feasible = Some(e.objective);
                seen.improvements.push((index, e.objective));
            }
            if seen.first_success.is_none() && self.reference.is_some_and(|r| reaches(e.objective, r, self.gap)) {
                seen.first_success = Some(index);
            }
        }
    }
}

/// How our runs are made.
#[derive(Clone)]
pub struct OursSettings {
    pub budget: u64,
    /// Max violation of a feasible point.
    pub tol: f64,
    /// Relative gap that reaches the reference.
    pub gap: f64,
    pub config: AsoConfig,
    /// Tier 2; `None` runs on heuristics alone.
    pub model: Option<Arc<dyn ModelSupervisor>>,
}

/// One coordinator run on `problem` (a built-in name) with `seed`.
pub async fn run_ours(problem: &str, seed: u64, s: &OursSettings) -> RunRecord {
    let started = Instant::now();
    let mut record = RunRecord {
        problem: problem.to_string(),
        method: OURS.to_string(),
        seed,
        success: false,
        evals_to_success: None,
        best_feasible: None,
        evals: 0,
        final_violation: None,
        final_objective: None,
        seconds: 0.0,
        error: None,
        coordinator: None,
        evals_to_final_best: None,
    };
    let (inner, reference) = match resolve_problem(problem, std::path::Path::new(".")) {
        Ok(p) => p,
        Err(e) => {
            record.error = Some(e);
            return record;
        }
    };
    let recorder = Arc::new(Recorder::new(inner, reference, s.tol, s.gap));
    // The sender must outlive the run: a dropped sender reads as "cancelled" nowhere,
    // but keeping it makes the intent plain.
    let (_cancel_tx, cancel) = watch::channel(false);
    let alm = s.config.alm_settings();
    let supervisor = Arc::new(TieredSupervisor::new(s.config.clone(), s.model.clone()));
    let coordinator = Coordinator {
        problem: recorder.clone(),
        config: s.config.clone(),
        alm,
        supervisor,
        context: SupervisionContext { cycle: 0, problem: problem.to_string(), human_hints: vec![], timeout: None },
        telemetry: None,
        seed,
        chunk_evaluations: 0,
        cancel,
    };
    let outcome = coordinator.produce_candidates(s.budget).await;
    record.evals = recorder.evaluations();
    record.best_feasible = recorder.best_feasible();
    record.evals_to_success = recorder.first_success().filter(|&i| i <= s.budget);
    record.success = record.evals_to_success.is_some();
    record.evals_to_final_best = recorder.final_best_at();
    record.final_violation = outcome.best.as_ref().map(|b| b.max_violation);
    record.final_objective = outcome.best.as_ref().map(|b| b.objective);
    record.error = outcome.error.clone();
    record.coordinator = Some(CoordinatorCounters {
        trajectories: outcome.trajectories.len() as u32,
        feasible_trajectories: outcome.trajectories.iter().filter(|t| t.feasible).count() as u32,
        restarts: outcome.trajectories.iter().map(|t| t.restarts).sum(),
        restarts_recovered: outcome.trajectories.iter().map(|t| t.restarts_recovered).sum(),
        steps: outcome.steps,
        llm_calls: outcome.llm_calls,
        llm_failures: outcome.llm_failures,
        stop: Some(outcome.stop),
    });
    record.seconds = started.elapsed().as_secs_f64();
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reaching_the_reference_is_one_sided_and_relative() {
        assert!(reaches(-15.0, -15.0, 1e-4));
        assert!(reaches(-15.0 + 1e-3, -15.0, 1e-4));
        assert!(!reaches(-15.0 + 2e-3, -15.0, 1e-4));
        // Below the exactly feasible optimum (equality slack) still counts.
        assert!(reaches(5126.0, 5126.4981, 1e-4));
        // A zero reference is judged on an absolute gap.
        assert!(reaches(5e-5, 0.0, 1e-4));
        assert!(!reaches(2e-4, 0.0, 1e-4));
    }

    #[test]
    fn the_recorder_counts_every_evaluation_and_keeps_the_best_feasible_one() {
        let (p, r) = resolve_problem("g06", std::path::Path::new(".")).unwrap();
        let best = p.best_known().unwrap().x.unwrap();
        let rec = Recorder::new(p, r, 1e-4, 1e-4);
        let lower: Vec<f64> = rec.bounds().iter().map(|b| b.0).collect();
        rec.evaluate(&lower).unwrap();
        assert_eq!((rec.evaluations(), rec.best_feasible(), rec.first_success()), (1, None, None));
        rec.evaluate(&best).unwrap();
        rec.evaluate(&best).unwrap();
        assert_eq!(rec.evaluations(), 3);
        assert!(rec.best_feasible().is_some_and(|f| reaches(f, r.unwrap(), 1e-4)));
        assert_eq!(rec.first_success(), Some(2));
        assert_eq!(rec.final_best_at(), Some(2), "the repeat is no improvement");
    }

    #[test]
    fn the_final_best_is_where_the_run_first_came_within_the_gap_of_its_end() {
        let (p, r) = resolve_problem("g06", std::path::Path::new(".")).unwrap();
        let best = p.best_known().unwrap().x.unwrap();
        let rec = Recorder::new(p, r, 1e-4, 1e-4);
        // A feasible point well above the optimum, then the optimum, then
        // the optimum again: the final best was found at the second.
        let above = vec![15.01, 5.0];
        assert!(rec.inner.evaluate(&above).unwrap().max_violation() <= 1e-4);
        rec.evaluate(&above).unwrap();
        assert_eq!(rec.final_best_at(), Some(1));
        rec.evaluate(&best).unwrap();
        rec.evaluate(&best).unwrap();
        assert_eq!(rec.final_best_at(), Some(2));
        let mut record = RunRecord {
            problem: "g06".into(),
            method: OURS.into(),
            seed: 0,
            success: true,
            evals_to_success: Some(2),
            best_feasible: rec.best_feasible(),
            evals: 10,
            final_violation: None,
            final_objective: None,
            seconds: 0.0,
            error: None,
            coordinator: None,
            evals_to_final_best: rec.final_best_at(),
        };
        assert_eq!(record.share_after_final_best(), Some(0.8));
        record.evals_to_final_best = None;
        assert_eq!(record.share_after_final_best(), None);
    }
}
