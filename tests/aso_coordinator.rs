//! The coordinator on a real SQLite file: trajectories (local and
//! population), budget, telemetry rows, directive clamps, evaluator failures.

use std::sync::Arc;

use attractor::aso::config::{AsoConfig, BudgetSplit};
use attractor::aso::coordinator::{
    TrajectoryKind, TrajectoryState, TrajectoryStatus, TrajectoryStop, TrajectorySummary, apply_directive,
};
use attractor::aso::directive::{AlmSettingsOverride, ConfigOverrides, Directive, DirectiveAction, DirectiveSource};
use attractor::aso::{Coordinator, SupervisionContext, TieredSupervisor};
use attractor::numeric::alm::{self, AlmSettings, Start};
use attractor::numeric::problem::Problem;
use attractor::numeric::toy::{Around, Breaking, Small};
use attractor::store::Store;

async fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("a.db")).await.unwrap();
    (dir, store)
}

fn coordinator(problem: Arc<dyn Problem>, config: AsoConfig, telemetry: Option<(Store, i64)>) -> Coordinator {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    Coordinator {
        problem,
        alm: config.alm_settings(),
        supervisor: Arc::new(TieredSupervisor::new(config.clone(), None)),
        config,
        context: SupervisionContext { cycle: 1, problem: "small".into(), human_hints: vec![], timeout: None },
        telemetry,
        seed: 11,
        chunk_evaluations: 0,
        cancel: rx,
    }
}

#[tokio::test]
async fn rounds_of_local_trajectories_reach_the_optimum_and_write_one_telemetry_row_per_step() {
    let (_dir, store) = store().await;
    let exp = store.insert_experiment(None, "small", "{}").await.unwrap();
    let c = coordinator(Arc::new(Small), AsoConfig::default(), Some((store.clone(), exp)));
    let out = c.produce_candidates(6000).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    let best = out.best.clone().unwrap();
    // Feasible at the strict tolerance, so the objective cannot ride a
    // looser one below the optimum.
    assert!(best.max_violation <= 1e-6 && (best.objective - 1.0).abs() < 1e-5, "{best:?}");
    // Not below the optimum by riding the tolerance: the final polish ranks
    // at a tenth of it (a point 1e-6 infeasible would sit ~2e-6 below 1).
    assert!(best.objective >= 1.0 - 2e-7, "{best:?}");
    // Rounds of `round_size` local trajectories from global samples or
    // hops (and, once the hops stop paying, starts on an active constraint
    // besides them), until the budget ends or rounds stop improving (a
    // population may run once before the run stops).
    let size = AsoConfig::default().round_size();
    let all_local = of_kind(&out, TrajectoryKind::Local);
    let local = all_local.iter().filter(|t| !t.on_boundary).count();
    assert!(local >= size && local % size == 0, "{local} in rounds of {size}");
    assert!(out.trajectories.len() - all_local.len() <= 1);
    let rounds = local / size;
    assert!(rounds <= 1 + AsoConfig::default().max_stalled_rounds as usize || out.evals_used > 5000);
    assert!(out.evals_used <= 6000, "{}", out.evals_used);
    assert!(out.convergence_rate() > 0.0);

    let rows = store.telemetry_of_experiment(exp).await.unwrap();
    assert_eq!(rows.len() as u32, out.steps, "one row per step");
    assert!(rows.iter().all(|r| r.directive_source == "heuristic" && !r.llm_call_made), "no model configured");
    assert!(rows.iter().any(|r| r.status == "FEASIBLE_FOUND"));
    for traj in 0..size as i64 {
        let steps: Vec<i64> = rows.iter().filter(|r| r.trajectory_id == traj).map(|r| r.step).collect();
        assert_eq!(steps, (1..=steps.len() as i64).collect::<Vec<_>>(), "trajectory {traj} steps are consecutive");
        let evals: Vec<i64> = rows.iter().filter(|r| r.trajectory_id == traj).map(|r| r.evals_used).collect();
        assert!(evals.windows(2).all(|w| w[0] < w[1]), "evals grow: {evals:?}");
    }
    let d: serde_json::Value = serde_json::from_str(rows[0].diagnostics_json.as_deref().unwrap()).unwrap();
    assert_eq!(d["constraint_diagnostics"].as_array().unwrap().len(), 2);
    // A converged trajectory stops: by the heuristic's STOP, or — an SQP
    // descent that settled at a feasible point (`stop_after_descent`) — by
    // its solver's own test.
    let stopped = rows.iter().any(|r| r.directive_action == "STOP")
        || out
            .trajectories
            .iter()
            .any(|t| t.status == TrajectoryStatus::Converged && t.stop == TrajectoryStop::Stationary);
    assert!(stopped, "a converged trajectory is stopped: {:?}", out.trajectories);
}

#[tokio::test]
async fn the_budget_is_never_exceeded_in_either_split() {
    for split in [BudgetSplit::Equal, BudgetSplit::Adaptive] {
        for budget in [50, 333, 2000] {
            let config = AsoConfig { trajectory_budget_split: split, ..AsoConfig::default() };
            let out = coordinator(Arc::new(Small), config, None).produce_candidates(budget).await;
            assert!(out.evals_used <= budget, "{split:?} {budget}: used {}", out.evals_used);
            let sum: u64 = out.trajectories.iter().map(|t| t.evals_used).sum();
            assert!(sum <= out.evals_used);
        }
    }
}

#[tokio::test]
async fn a_broken_evaluator_abandons_its_trajectories_with_the_reason() {
    let out =
        coordinator(Arc::new(Breaking::after(30, Small, "evaluator printed garbage")), AsoConfig::default(), None)
            .produce_candidates(5000)
            .await;
    assert_eq!(out.error.as_deref(), Some("evaluator printed garbage"));
    assert!(out.trajectories.iter().all(|t| t.status == attractor::aso::coordinator::TrajectoryStatus::Abandoned));
    assert!(out.best.is_some(), "what was seen before the failure is kept");
}

#[tokio::test]
async fn an_interrupt_stops_the_trajectories() {
    let (tx, rx) = tokio::sync::watch::channel(true);
    let mut c = coordinator(Arc::new(Small), AsoConfig::default(), None);
    c.cancel = rx;
    let out = c.produce_candidates(100_000).await;
    assert!(out.interrupted);
    assert_eq!(out.steps, 0);
    drop(tx);
}

#[test]
fn directives_are_clamped_and_bad_parts_are_refused_not_fatal() {
    let config = AsoConfig::default();
    let names = (Small.inequality_names(), Small.equality_names());
    let mut state = alm::run_chunk(&Small, Start::Seed(vec![0.0, 0.0]), 50, &AlmSettings::default()).state.unwrap();
    let mut traj = TrajectoryState::new(0, vec![0.0, 0.0], AlmSettings::default());
    let d = Directive::new(DirectiveAction::Adjust, DirectiveSource::Llm, "test").with_overrides(ConfigOverrides {
        constraint_weights: Some([("g1".to_string(), 1e9), ("nope".to_string(), 5.0), ("h1".to_string(), -3.0)].into()),
        alm_settings: Some(AlmSettingsOverride {
            penalty_parameters_increase_factor: Some(1e6),
            bounds_reduction_factor: Some(0.1),
        }),
        proposal_mix: None,
        agent: Some(Default::default()),
    });
    let rejected = apply_directive(&d, &mut state, &mut traj, &config, &names);
    assert_eq!(rejected, 3, "unknown constraint, negative weight, and agent overrides on a numeric trajectory");
    assert_eq!(state.ineq_penalties[0], config.max_constraint_weight, "weight clamped to max_constraint_weight");
    assert_eq!(traj.settings.penalty_parameters_increase_factor, 100.0);
    assert_eq!(traj.settings.bounds_reduction_factor, 0.5);
    assert!(state.eq_penalties[0] < 1000.0, "the refused weight changed nothing");
}

/// The coordinator's summaries of one kind.
fn of_kind(out: &attractor::aso::CoordinatorOutcome, kind: TrajectoryKind) -> Vec<&TrajectorySummary> {
    out.trajectories.iter().filter(|t| t.kind == kind).collect()
}

#[tokio::test]
async fn a_stalled_run_starts_a_population_trajectory_and_records_its_telemetry() {
    let (_dir, store) = store().await;
    let exp = store.insert_experiment(None, "small", "{}").await.unwrap();
    let config = AsoConfig {
        population_after_stalled_rounds: 2,
        max_stalled_rounds: 4,
        population_min_dimension: 0,
        ..AsoConfig::default()
    };
    let c = coordinator(Arc::new(Small), config, Some((store.clone(), exp)));
    let out = c.produce_candidates(20_000).await;
    assert!(out.error.is_none(), "{:?}", out.error);
    assert!(out.evals_used <= 20_000, "{}", out.evals_used);
    let best = out.best.clone().unwrap();
    assert!(best.max_violation <= 1e-4 && (best.objective - 1.0).abs() < 1e-3, "{best:?}");

    // One population, after the local rounds that stalled (two at least, three trajectories each).
    let populations = of_kind(&out, TrajectoryKind::Population);
    assert_eq!(populations.len(), 1, "{:?}", out.trajectories);
    let pop = populations[0];
    let position = out.trajectories.iter().position(|t| t.id == pop.id).unwrap();
    assert!(position >= 6, "the population came after stalled rounds, not at {position}");
    assert!(out.trajectories[..position].iter().all(|t| t.kind == TrajectoryKind::Local));
    assert!(pop.steps >= 1 && pop.evals_used > 20 * 10, "{pop:?}");
    assert!(pop.feasible, "{pop:?}");

    // Its steps are in the telemetry like any trajectory's, marked as a population's.
    let rows = store.telemetry_of_experiment(exp).await.unwrap();
    assert_eq!(rows.len() as u32, out.steps, "one row per step, population steps included");
    let mine: Vec<_> = rows.iter().filter(|r| r.trajectory_id == i64::from(pop.id)).collect();
    assert_eq!(mine.len() as u32, pop.steps);
    let steps: Vec<i64> = mine.iter().map(|r| r.step).collect();
    assert_eq!(steps, (1..=steps.len() as i64).collect::<Vec<_>>());
    assert!(mine.windows(2).all(|w| w[0].evals_used < w[1].evals_used));
    for r in &mine {
        let d: serde_json::Value = serde_json::from_str(r.diagnostics_json.as_deref().unwrap()).unwrap();
        // Small has two variables: the population is at its minimum size, 20.
        assert_eq!(d["optimizer_health"]["population_size"], 20.0);
        assert!(d["optimizer_health"]["epsilon_level"].as_f64().unwrap() >= 1e-4);
        assert!(d["narrative"].to_string().contains("Population trajectory"), "{}", d["narrative"]);
        assert_eq!(d["constraint_diagnostics"].as_array().unwrap().len(), 2);
        assert_eq!(r.directive_source, "heuristic");
    }
    // Local trajectories' rows carry no population fields.
    let local_rows: Vec<_> = rows.iter().filter(|r| r.trajectory_id != i64::from(pop.id)).collect();
    assert!(!local_rows.is_empty(), "some local trajectory went past its first descent");
    for r in local_rows {
        assert!(!r.diagnostics_json.as_deref().unwrap().contains("population_size"));
    }
}

#[tokio::test]
async fn a_rugged_problem_in_many_variables_gets_a_population_after_its_first_round() {
    // g02: twenty variables, local trajectories ending in different optima.
    let g02: Arc<dyn Problem> = Arc::from(attractor::numeric::builtin("g02").unwrap());
    let config = AsoConfig { population_after_stalled_rounds: 0, ..AsoConfig::default() };
    let out = coordinator(g02.clone(), config.clone(), None).produce_candidates(30_000).await;
    assert!(out.evals_used <= 30_000, "{}", out.evals_used);
    let populations = of_kind(&out, TrajectoryKind::Population);
    assert_eq!(populations.len(), 1, "{:?}", out.trajectories);
    let position = out.trajectories.iter().position(|t| t.id == populations[0].id).unwrap();
    assert_eq!(position, config.round_size(), "right after the first round of local trajectories");
    assert!(populations[0].feasible);
    assert!(populations[0].steps > 1, "not stopped on its first step: {:?}", populations[0]);
    // It had all that the first round left.
    assert!(populations[0].evals_used > 15_000, "{:?}", populations[0]);

    // Off when the problem has fewer variables than the threshold.
    let off = AsoConfig { population_min_dimension: 21, ..config };
    let out = coordinator(g02, off, None).produce_candidates(30_000).await;
    assert!(of_kind(&out, TrajectoryKind::Population).is_empty());
}

#[tokio::test]
async fn the_budget_is_never_exceeded_with_a_population_trajectory() {
    for budget in [300, 1_000, 5_000] {
        let config = AsoConfig {
            population_after_stalled_rounds: 1,
            max_stalled_rounds: 2,
            population_budget_share: 1.0,
            ..AsoConfig::default()
        };
        let out = coordinator(Arc::new(Small), config, None).produce_candidates(budget).await;
        assert!(out.evals_used <= budget, "{budget}: used {}", out.evals_used);
        let sum: u64 = out.trajectories.iter().map(|t| t.evals_used).sum();
        assert!(sum <= out.evals_used);
        if budget == 5_000 {
            assert_eq!(of_kind(&out, TrajectoryKind::Population).len(), 1);
        }
    }
}

#[tokio::test]
async fn a_rounds_descents_take_turns_and_its_augmented_lagrangians_wait_for_all_of_them() {
    let (_dir, store) = store().await;
    let mut went_on = 0;
    // g11: from some starts SLSQP creeps onto its curved equality and does
    // not settle within 60 iterations, so a descent hands over to the ALM
    // where the settings say so (on g04 every descent settles; with the
    // default 250 iterations so do g11's).
    for seed in 1..=3 {
        let exp = store.insert_experiment(None, "g11", "{}").await.unwrap();
        let g11: Arc<dyn Problem> = Arc::from(attractor::numeric::problem::builtin("g11").unwrap());
        let config = AsoConfig {
            descent_iterations: 60,
            unsettled_descent: attractor::aso::UnsettledDescent::Alm,
            ..AsoConfig::default()
        };
        let n = config.round_size() as i64;
        let mut c = coordinator(g11, config, Some((store.clone(), exp)));
        c.seed = seed;
        let out = c.produce_candidates(20_000).await;
        assert!(out.error.is_none(), "{:?}", out.error);
        // The first round: trajectories 0 to n − 1. Each one's first step is
        // its SQP descent; they come in turn, and every later step (the ALM
        // of a descent that did not settle) after all of them.
        let mut rows = store.telemetry_of_experiment(exp).await.unwrap();
        rows.sort_by_key(|r| r.id); // in the order they were written
        let first_round: Vec<(i64, i64)> =
            rows.iter().filter(|r| r.trajectory_id < n).map(|r| (r.trajectory_id, r.step)).collect();
        let descents: Vec<i64> = first_round.iter().filter(|r| r.1 == 1).map(|r| r.0).collect();
        assert_eq!(descents, (0..n).collect::<Vec<_>>(), "seed {seed}: {first_round:?}");
        let last_descent = first_round.iter().position(|&r| r == (n - 1, 1)).unwrap();
        assert!(first_round[..last_descent].iter().all(|r| r.1 == 1), "seed {seed}: {first_round:?}");
        went_on += first_round.iter().filter(|r| r.1 > 1).count();
    }
    assert!(went_on > 0, "some descent handed over to the ALM: the barrier was put to the test");
}

#[tokio::test]
async fn hops_per_round_sets_how_many_of_a_rounds_starts_hop_around_the_best() {
    for hops in [0u32, 1, 2] {
        let config = AsoConfig { hops_per_round: hops, stop_after_agreed_rounds: 0, ..AsoConfig::default() };
        let size = config.round_size();
        let c = coordinator(Arc::new(Small), config, None);
        let out = c.produce_candidates(6000).await;
        let local = of_kind(&out, TrajectoryKind::Local);
        let rounds: Vec<usize> = local.chunks(size).map(|r| r.iter().filter(|t| t.around_best).count()).collect();
        assert!(rounds.len() >= 3, "{rounds:?}");
        assert_eq!(rounds[0], 0, "the first round has no best to hop around");
        assert!(rounds[1..].iter().all(|&h| h == hops as usize), "hops {hops}: {rounds:?}");
    }
}

/// `Small`, and every point evaluated, in order.
fn logging() -> (Arc<dyn Problem>, Arc<std::sync::Mutex<Vec<Vec<f64>>>>) {
    let points = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = points.clone();
    let before = move |x: &[f64]| {
        kept.lock().unwrap().push(x.to_vec());
        Ok(())
    };
    (Arc::new(Around { name: "logged", known: Small.best_known(), inner: Small, before }), points)
}

/// Whether `probe` is a forward-difference probe of `base`: one variable
/// moved by a hair.
fn probes(base: &[f64], probe: &[f64]) -> bool {
    let moved: Vec<f64> = base.iter().zip(probe).filter(|(a, b)| a != b).map(|(a, b)| (a - b).abs()).collect();
    moved.len() == 1 && moved[0] < 1e-5
}

#[tokio::test]
async fn the_first_descent_starts_after_its_own_two_samples_not_the_whole_rounds_eight() {
    let config = AsoConfig::default();
    assert_eq!((config.round_size(), config.seed_oversampling), (4, 2));
    let (problem, logged) = logging();
    let out = coordinator(problem, config.clone(), None).produce_candidates(6000).await;
    assert!(out.best.is_some_and(|b| (b.objective - 1.0).abs() < 1e-5));
    let points = logged.lock().unwrap().clone();
    // Two samples, then the gradient at the better of them.
    assert!(probes(&points[0], &points[2]) || probes(&points[1], &points[2]), "{:?}", &points[..4]);
    let rounds = out.trajectories.iter().filter(|t| !t.on_boundary).count();
    assert_eq!(rounds % 4, 0, "the lead round is a round of four");

    // Without the lead, the round's eight samples come first.
    let (problem, logged) = logging();
    let config = AsoConfig { lead_descent: false, ..config };
    coordinator(problem, config, None).produce_candidates(6000).await;
    let points = logged.lock().unwrap().clone();
    assert!((1..8).all(|i| (0..i).all(|j| !probes(&points[j], &points[i]))), "{:?}", &points[..9]);
}
