//! The convergence engine's decisions on synthetic overseer-signal sequences:
//! each test plays the executor loop by hand — the engine chooses a strategy,
//! the test says what the overseers measured after it, the engine decides —
//! and checks the behaviour the seeds prescribe for that shape of trajectory.

use attractor::engine::attractor::AttractorType;
use attractor::engine::bandit::StrategyBandit;
use attractor::engine::budget::ConvergenceBudget;
use attractor::engine::context::Degradation;
use attractor::engine::eligibility::EXPLOITATION;
use attractor::engine::{
    ConvergencePhase, ConvergencePolicy, Decision, Engine, EngineConfig, EngineError, LoopControl, Observation,
    PriorityHint, SpecificationEvolution, StrategyChoice, StrategyKind, Trajectory,
};
use attractor::ggs::Directive;
use attractor::overseer::signals::{BuildResult, LintResults, SecurityScanResult, TestResults, Verdict};
use attractor::overseer::{FailureClass, OverseerSignals};
use attractor::workspace::ArtifactReference;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use StrategyKind::*;

/// One trajectory driven by hand.
struct Run {
    engine: Engine,
    t: Trajectory,
    bandit: StrategyBandit,
    rng: ChaCha8Rng,
    next: StrategyChoice,
    commits: u32,
}

fn budget(iterations: u32, minutes: u64) -> ConvergenceBudget {
    ConvergenceBudget {
        max_tokens: 10_000_000,
        max_wall_time_ms: minutes * 60_000,
        max_iterations: iterations,
        max_extensions: 1,
        ..Default::default()
    }
}

impl Run {
    fn new(config: EngineConfig, budget: ConvergenceBudget, policy: ConvergencePolicy) -> Run {
        Run::seeded(config, budget, policy, 11)
    }

    fn seeded(config: EngineConfig, budget: ConvergenceBudget, policy: ConvergencePolicy, seed: u64) -> Run {
        let engine = Engine::new(config);
        let spec = SpecificationEvolution::from_submission("Implement the date parser.", &[], &[]);
        let mut t = Trajectory::new("traj-1", "task-1", spec, budget, policy);
        let bandit = StrategyBandit::default();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let next = engine.start(&mut t, &bandit, &mut rng).expect("start");
        Run { engine, t, bandit, rng, next, commits: 0 }
    }

    fn default() -> Run {
        Run::new(EngineConfig::default(), budget(30, 600), ConvergencePolicy::default())
    }

    /// The overseers measured `signals` after the chosen strategy ran.
    fn observe(&mut self, signals: OverseerSignals) -> Decision {
        self.observe_with(signals, |_| {})
    }

    fn observe_with(&mut self, signals: OverseerSignals, edit: impl FnOnce(&mut Observation)) -> Decision {
        self.commits += 1;
        let artifact = ArtifactReference { commit: format!("c{}", self.commits), files_changed: 1, lines_changed: 20 };
        let mut obs = Observation::new(self.next.kind, artifact, signals);
        obs.tokens_used = 10_000;
        obs.wall_time_ms = 60_000;
        edit(&mut obs);
        let d = self.engine.decide(&mut self.t, &mut self.bandit, obs, &mut self.rng).expect("decide");
        if let Some(next) = &d.next {
            self.next = next.clone();
        }
        d
    }
}

fn names(prefix: &str, n: u32) -> Vec<String> {
    (1..=n).map(|i| format!("{prefix}{i}")).collect()
}

/// Tests with names: `failing` fail, `passing` pass; the build is fine.
fn named(failing: &[&str], passing: &[&str]) -> OverseerSignals {
    let f: Vec<String> = failing.iter().map(|s| s.to_string()).collect();
    let p: Vec<String> = passing.iter().map(|s| s.to_string()).collect();
    OverseerSignals {
        test_results: Some(TestResults {
            passed: p.len() as u32,
            failed: f.len() as u32,
            total: (p.len() + f.len()) as u32,
            failing: f,
            passing: p,
            ..Default::default()
        }),
        build_result: Some(BuildResult { success: true, error_count: 0, warning_count: 0 }),
        ..Default::default()
    }
}

/// `passed` of ten tests pass, the first ones by name (`t1`…), the rest fail.
fn passing_of_ten(passed: u32) -> OverseerSignals {
    let all = names("t", 10);
    let (p, f) = all.split_at(passed as usize);
    named(&f.iter().map(String::as_str).collect::<Vec<_>>(), &p.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn steady_improvement_is_a_fixed_point_that_converges_at_the_threshold() {
    let mut run = Run::default();
    let mut decisions = Vec::new();
    for passed in [2, 4, 6, 8] {
        decisions.push(run.observe(passing_of_ten(passed)));
    }
    let d = decisions.last().unwrap();
    assert!(matches!(d.attractor.classification, AttractorType::FixedPoint { .. }), "{:?}", d.attractor);
    assert_eq!(d.loop_control, LoopControl::Continue);
    let next = d.next.as_ref().unwrap();
    assert!(EXPLOITATION.contains(&next.kind), "converging means exploiting, got {:?}", next.kind);
    assert_eq!(d.gradient.directive, Directive::Refine, "{}", d.gradient.rationale);

    let done = run.observe(passing_of_ten(10));
    match &done.loop_control {
        LoopControl::Converged { result } => {
            assert_eq!(result.sequence, 4);
            assert_eq!(result.level, 1.0);
        }
        other => panic!("expected convergence, got {other:?}"),
    }
    assert!(done.next.is_none());
    assert_eq!(run.t.phase, ConvergencePhase::Converged);
    // A finished trajectory refuses more observations.
    let again = run.engine.decide(
        &mut run.t,
        &mut run.bandit,
        Observation::new(FocusedRepair, Default::default(), passing_of_ten(10)),
        &mut run.rng,
    );
    assert!(matches!(again, Err(EngineError::Finished { .. })));
}

#[test]
fn a_level_just_under_the_threshold_does_not_converge() {
    let mut run = Run::default();
    run.observe(passing_of_ten(8));
    // 9 of 10 with everything else passing: 0.55·0.9 + 0.45 = 0.945 < 0.95.
    let d = run.observe(passing_of_ten(9));
    assert!((d.level - 0.945).abs() < 1e-9);
    assert!(!d.loop_control.is_terminal());
}

#[test]
fn two_alternating_wrong_states_are_a_period_two_cycle_escaped_by_a_fresh_exploration_strategy() {
    let mut run = Run::default();
    let a = named(&["t1", "t2"], &["t3", "t4", "t5"]);
    let b = named(&["t4"], &["t1", "t2", "t3", "t5"]);
    run.observe(a.clone());
    // The caller ran Reframe here: part of the cycle too.
    run.observe_with(b.clone(), |o| o.strategy_used = Reframe);
    run.observe(a);
    let d = run.observe(b);
    match &d.attractor.classification {
        AttractorType::LimitCycle { period, cycle_signatures } => {
            assert_eq!(*period, 2);
            assert_eq!(cycle_signatures.len(), 4);
        }
        other => panic!("expected a limit cycle, got {other:?}"),
    }
    let used: Vec<StrategyKind> = run.t.strategy_log.iter().rev().take(4).map(|e| e.strategy_kind).collect();
    assert!(used.contains(&Reframe));
    let next = d.next.as_ref().expect("continues");
    assert!(next.kind.is_exploration(), "{:?}", next.kind);
    assert!(!used.contains(&next.kind), "{:?} led into the cycle", next.kind);
    assert!(d.eligible.iter().all(|s| s.is_exploration() && !used.contains(s)), "{:?}", d.eligible);
}

#[test]
fn a_cycle_with_every_escape_tried_starts_afresh_while_fresh_starts_are_left() {
    let config = EngineConfig { disabled_strategies: vec![Decompose], ..Default::default() };
    let mut run = Run::new(config, budget(30, 600), ConvergencePolicy::default());
    let a = named(&["t1", "t2"], &["t3", "t4", "t5"]);
    let b = named(&["t4"], &["t1", "t2", "t3", "t5"]);
    run.observe(a.clone());
    run.observe_with(b.clone(), |o| o.strategy_used = Reframe);
    run.observe_with(a, |o| o.strategy_used = AlternativeApproach);
    let d = run.observe(b);
    match &d.loop_control {
        LoopControl::ForceFreshStart { reason } => assert_eq!(*reason, Degradation::Cycling),
        other => panic!("expected a fresh start, got {other:?}"),
    }
    assert_eq!(d.next.as_ref().map(|n| n.kind), Some(FreshStart));
    assert_ne!(run.t.phase, ConvergencePhase::Trapped);
}

#[test]
fn a_cycle_with_every_escape_and_every_fresh_start_used_is_trapped_with_next_moves() {
    let config = EngineConfig { disabled_strategies: vec![Decompose], ..Default::default() };
    let policy = ConvergencePolicy { max_fresh_starts: 0, ..ConvergencePolicy::default() };
    let mut run = Run::new(config, budget(30, 600), policy);
    let a = named(&["t1", "t2"], &["t3", "t4", "t5"]);
    let b = named(&["t4"], &["t1", "t2", "t3", "t5"]);
    run.observe(a.clone());
    run.observe_with(b.clone(), |o| o.strategy_used = Reframe);
    run.observe_with(a, |o| o.strategy_used = AlternativeApproach);
    let d = run.observe(b);
    match &d.loop_control {
        LoopControl::Trapped { best, partial } => {
            assert!(best.is_some());
            assert!((2..=3).contains(&partial.next_moves.len()), "{:?}", partial.next_moves);
            assert!(partial.next_moves.iter().any(|m| m.contains("oscillated")), "{:?}", partial.next_moves);
        }
        other => panic!("expected trapped, got {other:?}"),
    }
    assert_eq!(run.t.phase, ConvergencePhase::Trapped);
}

#[test]
fn a_cycle_whose_last_escape_is_a_split_offers_it_and_once_set_aside_is_trapped() {
    let mut run = Run::default();
    let a = named(&["t1", "t2"], &["t3", "t4", "t5"]);
    let b = named(&["t4"], &["t1", "t2", "t3", "t5"]);
    run.observe(a.clone());
    run.observe_with(b.clone(), |o| o.strategy_used = Reframe);
    run.observe_with(a.clone(), |o| o.strategy_used = AlternativeApproach);
    let d = run.observe(b.clone());
    // Every other escape was used inside the cycle: a split is what is left.
    assert_eq!(d.loop_control, LoopControl::Continue);
    assert_eq!(d.eligible, vec![Decompose]);
    assert_eq!(d.next.as_ref().map(|n| n.kind), Some(Decompose));

    // The caller could not get a usable split: it is never offered again.
    let again = run.engine.set_aside(&mut run.t, &run.bandit, Decompose, &mut run.rng).expect("set aside");
    assert_ne!(again.kind, Decompose);
    assert!(run.t.unavailable.contains(&Decompose));
    run.next = again;
    let d = run.observe(a);
    // No escape left in this context: a fresh start before giving up.
    assert!(matches!(d.loop_control, LoopControl::ForceFreshStart { .. }), "{:?}", d.loop_control);
    assert!(!d.eligible.contains(&Decompose));
}

#[test]
fn a_trajectory_whose_shared_budget_is_spent_elsewhere_concludes_like_an_exhausted_one() {
    let mut run = Run::default();
    run.observe(passing_of_ten(8));
    // Its siblings took the rest of the budget: it cannot start another iteration.
    let control = run.engine.conclude_out_of_budget(&mut run.t).expect("conclude");
    match control {
        LoopControl::AcceptedPartial { result } => assert_eq!(result.sequence, 0),
        other => panic!("expected the best result accepted, got {other:?}"),
    }
    assert_eq!(run.t.phase, ConvergencePhase::Converged);
    assert!(matches!(run.engine.conclude_out_of_budget(&mut run.t), Err(EngineError::Finished { .. })));
}

/// Ten tests, `failing` of them failing; `lint` lint errors (a wobble that
/// keeps the state recognisable).
fn state(failing: &[&str], lint: u32) -> OverseerSignals {
    let passing: Vec<String> = names("t", 10).into_iter().filter(|n| !failing.contains(&n.as_str())).collect();
    let mut s = named(failing, &passing.iter().map(String::as_str).collect::<Vec<_>>());
    s.lint_results = Some(LintResults { error_count: lint, warning_count: 0 });
    s
}

#[test]
fn a_period_three_cycle_is_found_despite_small_differences_between_laps() {
    let mut run = Run::default();
    let laps = [
        state(&["t1", "t2", "t3"], 2),
        state(&["t4"], 0),
        state(&["t5", "t6", "t7", "t8", "t9"], 1),
        state(&["t1", "t2", "t3"], 3),
        state(&["t4"], 0),
        state(&["t5", "t6", "t7", "t8", "t9"], 2),
    ];
    let mut last = None;
    for s in laps {
        last = Some(run.observe(s));
    }
    let d = last.unwrap();
    let sigs = &d.attractor.evidence.recent_signatures;
    assert_ne!(sigs[sigs.len() - 6], sigs[sigs.len() - 3], "the laps are not identical");
    assert!(matches!(d.attractor.classification, AttractorType::LimitCycle { period: 3, .. }), "{:?}", d.attractor);
}

#[test]
fn a_period_four_cycle_is_found_despite_small_differences_between_laps() {
    let mut run = Run::default();
    let lap = |wobble: u32| {
        vec![
            state(&["t1", "t2", "t3"], 2 + wobble),
            state(&["t4"], 0),
            state(&["t5", "t6", "t7", "t8", "t9"], 1),
            state(&["t10", "t2"], 4 + wobble),
        ]
    };
    let mut decisions = Vec::new();
    for s in lap(0).into_iter().chain(lap(1)) {
        decisions.push(run.observe(s));
    }
    for d in &decisions[..7] {
        assert!(
            !matches!(d.attractor.classification, AttractorType::LimitCycle { .. }),
            "too early: {:?}",
            d.attractor
        );
    }
    let d = decisions.last().unwrap();
    assert!(matches!(d.attractor.classification, AttractorType::LimitCycle { period: 4, .. }), "{:?}", d.attractor);
}

#[test]
fn flat_progress_plateaus_into_a_fresh_start_carrying_hints_and_best_signals_but_no_history() {
    let mut run = Run::default();
    run.t.add_hint("Dates before 1970 must parse too.");
    let flat = || passing_of_ten(4);
    let d0 = run.observe_with(flat(), |o| {
        o.overseer_signals.verdicts = vec![Verdict {
            overseer: "tests".into(),
            passed: false,
            failure_class: Some(FailureClass::Logical),
            evidence: "stale-feedback-from-attempt-one".into(),
            skipped: false,
        }];
    });
    assert!(matches!(d0.attractor.classification, AttractorType::Indeterminate { .. }));
    run.observe(flat());
    let d2 = run.observe_with(flat(), |o| o.tools_used = vec!["sed".into()]);
    assert!(
        matches!(d2.attractor.classification, AttractorType::Plateau { stall_duration: 2, .. }),
        "{:?}",
        d2.attractor
    );
    // A plateau at level 0.67 escalates to exploration, which the goal
    // gradient's break_symmetry agrees with: the failing attempt's tools are blocked.
    assert_eq!(d2.gradient.directive, Directive::BreakSymmetry, "{}", d2.gradient.rationale);
    let next = d2.next.as_ref().unwrap();
    assert!(next.kind.is_exploration() && next.directive_honoured);
    assert_eq!(d2.blocked_tools, vec!["sed".to_string()]);

    let d3 = run.observe(flat());
    assert!(matches!(d3.attractor.classification, AttractorType::Plateau { stall_duration: 3, .. }));
    let next = d3.next.as_ref().unwrap();
    assert_eq!(next.kind, FreshStart);
    assert!(!next.forced, "chosen from the plateau's eligible set, not forced");
    let cf = next.carry_forward.as_ref().expect("a fresh start carries knowledge forward");
    assert_eq!(cf.hints, vec!["Dates before 1970 must parse too.".to_string()]);
    assert!(cf.specification.clarifications.iter().any(|c| c.contains("1970")));
    assert_eq!(cf.best_signals, run.t.observations[3].overseer_signals);
    assert_eq!(cf.best_artifact.commit, "c4");
    assert!(cf.remaining_gaps.iter().any(|g| g.description.contains("`t5`")), "{:?}", cf.remaining_gaps);
    assert!(cf.anti_patterns.iter().any(|a| a.contains("sed")), "{:?}", cf.anti_patterns);
    let filled = cf.fill_template("{attempts}\n{facts}\n{failures}");
    assert!(filled.contains("4 attempts") && filled.contains("1970"), "{filled}");
    let everything = serde_json::to_string(cf).unwrap();
    assert!(!everything.contains("stale-feedback-from-attempt-one"), "old history leaked into the carry-forward");

    // The fresh start opens a new context: classification starts over.
    let d4 = run.observe(flat());
    assert_eq!(run.t.total_fresh_starts, 1);
    assert_eq!(run.t.context_start, 4);
    assert!(matches!(d4.attractor.classification, AttractorType::Indeterminate { .. }), "{:?}", d4.attractor);
}

#[test]
fn accumulated_regressions_revert_and_branch_to_the_best_observation() {
    let mut run = Run::default();
    run.observe(passing_of_ten(5));
    run.observe(passing_of_ten(8));
    let d2 = run.observe(passing_of_ten(6));
    assert_eq!(d2.metrics.unwrap().test_regression_count, 2, "t7 and t8 broke");
    run.observe(passing_of_ten(4));
    let d4 = run.observe(passing_of_ten(3));
    match &d4.attractor.classification {
        AttractorType::Divergent { probable_cause, .. } => {
            assert_eq!(*probable_cause, attractor::engine::DivergenceCause::AccumulatedRegression)
        }
        other => panic!("expected divergence, got {other:?}"),
    }
    let next = d4.next.as_ref().unwrap();
    assert_eq!(next.kind, RevertAndBranch);
    let target = next.revert_to.as_ref().expect("a revert names its target");
    assert_eq!(target.sequence, 1);
    assert_eq!(target.artifact.commit, "c2");
}

#[test]
fn regressions_are_counted_by_name_even_when_the_counts_cancel_out() {
    let mut run = Run::default();
    run.observe(named(&["t4"], &["t1", "t2", "t3"]));
    let d = run.observe(named(&["t2"], &["t1", "t3", "t4"]));
    assert_eq!(d.metrics.unwrap().test_regression_count, 1);
    assert_eq!(d.metrics.unwrap().test_pass_delta, 0);
}

#[test]
fn a_new_security_finding_earns_no_convergence_credit_and_blocks_convergence() {
    let mut run = Run::default();
    run.observe(passing_of_ten(5));
    let mut risky = passing_of_ten(10);
    risky.security_scan = Some(SecurityScanResult { high_count: 1, ..Default::default() });
    let d = run.observe(risky.clone());
    let m = d.metrics.unwrap();
    assert_eq!(m.vulnerability_delta, 1);
    assert!(m.convergence_delta <= 0.0, "half the tests fixed, but a vulnerability added: {}", m.convergence_delta);
    assert_eq!(d.level, 1.0);
    assert!(!d.loop_control.is_terminal(), "{:?}", d.loop_control);
    assert_ne!(d.bandit_update, Some(attractor::engine::StrategyOutcome::Success));
    // The same finding again is not new: the level stands.
    let d = run.observe(risky);
    assert!(matches!(d.loop_control, LoopControl::Converged { .. }), "{:?}", d.loop_control);
}

#[test]
fn an_exhausted_budget_below_the_partial_threshold_ends_exhausted_with_next_moves() {
    let mut run = Run::new(EngineConfig::default(), budget(3, 60), ConvergencePolicy::default());
    run.observe(passing_of_ten(2));
    run.observe(passing_of_ten(2));
    let d = run.observe(passing_of_ten(2));
    match &d.loop_control {
        LoopControl::Exhausted { best, partial } => {
            assert!(best.as_ref().unwrap().level < 0.7);
            assert!((2..=3).contains(&partial.next_moves.len()), "{:?}", partial.next_moves);
            assert!(partial.remaining.iter().any(|r| r == "test:t3"), "{:?}", partial.remaining);
            assert!(partial.next_moves.iter().any(|m| m.contains("`test:t3`")), "{:?}", partial.next_moves);
        }
        other => panic!("expected exhausted, got {other:?}"),
    }
    assert_eq!(run.t.phase, ConvergencePhase::Exhausted);
}

#[test]
fn an_exhausted_budget_above_the_partial_threshold_accepts_the_best_result() {
    let mut run = Run::new(EngineConfig::default(), budget(3, 60), ConvergencePolicy::default());
    run.observe(passing_of_ten(8));
    run.observe(passing_of_ten(7));
    let d = run.observe(passing_of_ten(7));
    match &d.loop_control {
        LoopControl::AcceptedPartial { result } => {
            assert_eq!(result.sequence, 0, "the best observation, not the latest");
            assert!((result.level - 0.89).abs() < 1e-9);
        }
        other => panic!("expected partial acceptance, got {other:?}"),
    }
    assert_eq!(run.t.phase, ConvergencePhase::Converged);
}

#[test]
fn a_converging_trajectory_gets_one_extension_when_the_policy_allows_one() {
    let policy = ConvergencePolicy { partial_acceptance: false, ..Default::default() };
    let mut run = Run::new(EngineConfig::default(), budget(3, 60), policy);
    run.observe(passing_of_ten(2));
    run.observe(passing_of_ten(3));
    let d = run.observe(passing_of_ten(4));
    assert!(matches!(d.attractor.classification, AttractorType::FixedPoint { .. }), "{:?}", d.attractor);
    match &d.loop_control {
        LoopControl::ExtensionGranted { extension } => assert_eq!(extension.additional_iterations, 3),
        other => panic!("expected an extension, got {other:?}"),
    }
    assert!(d.next.is_some());
    assert_eq!((run.t.budget.max_iterations, run.t.budget.extensions_granted), (6, 1));

    run.observe(passing_of_ten(5));
    run.observe(passing_of_ten(6));
    let d = run.observe(passing_of_ten(7));
    assert!(matches!(d.attractor.classification, AttractorType::FixedPoint { .. }));
    assert!(matches!(d.loop_control, LoopControl::Exhausted { .. }), "no second extension: {:?}", d.loop_control);
    assert_eq!(run.t.budget.extensions_requested, 1);
}

#[test]
fn under_the_thorough_hint_an_extension_waits_for_a_person() {
    let policy = ConvergencePolicy {
        priority_hint: Some(PriorityHint::Thorough),
        partial_acceptance: false,
        ..Default::default()
    };
    let mut run = Run::new(EngineConfig::default(), budget(3, 60), policy);
    run.observe(passing_of_ten(2));
    run.observe(passing_of_ten(3));
    let d = run.observe(passing_of_ten(4));
    assert!(matches!(d.loop_control, LoopControl::ExtensionRequested { .. }), "{:?}", d.loop_control);
    assert!(d.next.is_none());
    let blocked = run.engine.decide(
        &mut run.t,
        &mut run.bandit,
        Observation::new(FocusedRepair, Default::default(), passing_of_ten(5)),
        &mut run.rng,
    );
    assert!(matches!(blocked, Err(EngineError::ExtensionPending { .. })));

    let (control, next) = run.engine.resolve_extension(&mut run.t, &run.bandit, false, &mut run.rng).unwrap();
    assert!(matches!(control, LoopControl::Exhausted { .. }), "{control:?}");
    assert!(next.is_none());
    assert_eq!(run.t.budget.extensions_granted, 0);
}

#[test]
fn an_approved_extension_grows_the_budget_and_picks_the_next_strategy() {
    let policy = ConvergencePolicy { priority_hint: Some(PriorityHint::Thorough), ..Default::default() };
    let mut run = Run::new(EngineConfig::default(), budget(3, 60), policy);
    for p in [2, 3, 4] {
        run.observe(passing_of_ten(p));
    }
    let (control, next) = run.engine.resolve_extension(&mut run.t, &run.bandit, true, &mut run.rng).unwrap();
    assert!(matches!(control, LoopControl::ExtensionGranted { .. }));
    assert!(next.is_some());
    assert_eq!(run.t.budget.max_iterations, 6);
    assert!(run.engine.resolve_extension(&mut run.t, &run.bandit, true, &mut run.rng).is_err());
}

#[test]
fn a_degraded_context_forces_fresh_starts_until_the_policy_allows_no_more() {
    let mut run = Run::default();
    let mut forced_fresh_starts = 0;
    let mut last = None;
    // Every execution leaves the code exactly as it was: duplicating.
    for _ in 0..12 {
        let d = run.observe_with(passing_of_ten(4), |o| o.artifact.lines_changed = 0);
        if let LoopControl::ForceFreshStart { reason } = &d.loop_control {
            assert_eq!(*reason, Degradation::Duplicating);
            let next = d.next.as_ref().unwrap();
            assert!(next.forced && next.kind == FreshStart && next.carry_forward.is_some());
            forced_fresh_starts += 1;
        }
        if run.t.observations.last().unwrap().strategy_used == FreshStart {
            assert_eq!(d.bandit_update, None, "forced selections are never credited to the bandit");
        }
        last = Some(d);
    }
    assert_eq!(forced_fresh_starts, 3);
    assert_eq!(run.t.total_fresh_starts, 3);
    let d = last.unwrap();
    assert_eq!(d.loop_control, LoopControl::Continue, "fresh starts used up: no more forcing");
    assert_ne!(d.next.as_ref().unwrap().kind, FreshStart);
    assert!(run.bandit.arms.values().all(|arms| !arms.contains_key(&FreshStart)), "{:?}", run.bandit.arms);
}

#[test]
fn a_context_filling_with_history_is_noisy_and_forces_a_fresh_start() {
    let mut run = Run::default();
    for (i, tokens) in [10_000u64, 20_000, 30_000].into_iter().enumerate() {
        let d = run.observe_with(passing_of_ten(3 + i as u32), |o| o.context_tokens = Some(tokens));
        if i == 2 {
            assert!(d.context_health.signal_to_noise < 0.4);
            assert_eq!(d.loop_control, LoopControl::ForceFreshStart { reason: Degradation::NoisyContext });
        }
    }
}

#[test]
fn budget_pressure_makes_the_goal_gradient_abandon_with_a_partial_result() {
    // 9 of 10 iterations and 70% of the time: Ω = 0.6·0.9 + 0.4·0.705 ≈ 0.82.
    let mut run = Run::new(EngineConfig::default(), budget(10, 10), ConvergencePolicy::default());
    let mut last = None;
    for i in 0..9 {
        let d = run.observe_with(passing_of_ten(3), |o| o.wall_time_ms = 47_000);
        if i < 8 {
            assert!(!d.loop_control.is_terminal(), "step {i}: {:?}", d.loop_control);
        }
        last = Some(d);
    }
    let d = last.unwrap();
    assert!(d.gradient.loss.omega >= 0.8, "{:?}", d.gradient.loss);
    assert_eq!(d.gradient.directive, Directive::Abandon);
    assert!(run.t.budget.has_remaining(), "abandoned before the budget itself ran out");
    match &d.loop_control {
        LoopControl::Abandoned { partial, .. } => {
            assert!((2..=3).contains(&partial.next_moves.len()), "{:?}", partial.next_moves);
            assert!(partial.loss.omega >= 0.8);
            assert_eq!(partial.replans, 8);
            assert!(partial.summary.contains("abandoned"), "{}", partial.summary);
        }
        other => panic!("expected abandon, got {other:?}"),
    }
    assert_eq!(run.t.phase, ConvergencePhase::Exhausted);
}

#[test]
fn an_environmental_failure_is_neither_progress_nor_blame() {
    let mut run = Run::default();
    run.observe(passing_of_ten(5));
    // The test runner could not start: no test results, an environmental verdict.
    let d = run.observe(OverseerSignals {
        build_result: Some(BuildResult { success: true, error_count: 0, warning_count: 0 }),
        verdicts: vec![
            Verdict {
                overseer: "build".into(),
                passed: true,
                failure_class: None,
                evidence: String::new(),
                skipped: false,
            },
            Verdict {
                overseer: "tests".into(),
                passed: false,
                failure_class: Some(FailureClass::Environmental),
                evidence: "pytest: command not found".into(),
                skipped: false,
            },
        ],
        ..Default::default()
    });
    assert_eq!(d.level, 1.0, "a missing measurement counts as passing in the level…");
    assert!(!d.loop_control.is_terminal(), "…so an unmeasured state is never accepted");
    assert_eq!(d.bandit_update, None, "the strategy is not blamed for the environment");
    assert_eq!(d.gradient.loss.d, 0.0, "only the build was measured, and it passed");
    assert_eq!(d.gradient.loss.p, 0.0, "the only failure is environmental");
    assert_eq!(d.gradient.failure_class, Some(attractor::ggs::FailureOrigin::Environmental));
}

#[test]
fn a_seeded_generator_makes_a_trajectory_reproducible_and_its_state_round_trips() {
    let play = |seed| {
        let mut run = Run::seeded(EngineConfig::default(), budget(30, 600), ConvergencePolicy::default(), seed);
        let mut kinds = vec![run.next.kind];
        for p in [3, 3, 4, 3, 3, 5, 5, 6] {
            kinds.push(run.observe(passing_of_ten(p)).next.map_or(RetryWithFeedback, |n| n.kind));
        }
        (kinds, run)
    };
    let (a, run) = play(5);
    let (b, _) = play(5);
    assert_eq!(a, b);

    let json = serde_json::to_string(&run.t).unwrap();
    let back: Trajectory = serde_json::from_str(&json).unwrap();
    assert_eq!(back, run.t);
    let bandit = StrategyBandit::from_json(&run.bandit.to_json()).unwrap();
    assert_eq!(bandit, run.bandit);
}

#[test]
fn tools_are_blocked_only_when_the_new_approach_the_directive_demands_is_taken() {
    let mut run = Run::default();
    // A first failure far from the intent: the goal gradient says break
    // symmetry, but three observations are needed before the attractor allows
    // exploration, so the directive is overridden and nothing is blocked.
    let d = run.observe_with(passing_of_ten(4), |o| o.tools_used = vec!["cargo".into()]);
    assert_eq!(d.gradient.directive, Directive::BreakSymmetry, "{}", d.gradient.rationale);
    assert_eq!(d.gradient.blocked_tools, vec!["cargo".to_string()]);
    let next = d.next.as_ref().unwrap();
    assert!(!next.directive_honoured && !next.kind.is_exploration(), "{next:?}");
    assert!(d.blocked_tools.is_empty() && next.blocked_tools.is_empty());
}

#[test]
fn an_intent_verifier_that_sees_gaps_holds_convergence_back_unless_every_check_passes() {
    use attractor::engine::{GapCategory, IntentGap, VerificationResult};
    let unsatisfied = || VerificationResult {
        satisfied: false,
        confidence: 0.8,
        gaps: vec![IntentGap { description: "time zones ignored".into(), category: GapCategory::Missing }],
        verdicts: vec![],
    };
    let mut config = EngineConfig::default();
    config.policy.acceptance_threshold = 0.9;
    let policy = config.policy.clone();
    let mut run = Run::new(config, budget(30, 600), policy);
    run.observe(passing_of_ten(5));
    // 0.55·0.9 + 0.45 = 0.945 ≥ 0.9, but one test fails and the verifier objects.
    let d = run.observe_with(passing_of_ten(9), |o| o.verification = Some(unsatisfied()));
    assert!(!d.loop_control.is_terminal(), "{:?}", d.loop_control);
    // With every check passing, the overseers outrank the verifier.
    let d = run.observe_with(passing_of_ten(10), |o| o.verification = Some(unsatisfied()));
    assert!(matches!(d.loop_control, LoopControl::Converged { .. }), "{:?}", d.loop_control);
}

#[test]
fn a_strategy_whose_returns_decay_is_rotated_out_even_when_the_bandit_loves_it() {
    use attractor::engine::{AttractorKind, BetaArm};
    let mut config = EngineConfig::default();
    // Keep the attractor indeterminate so the same three exploitation strategies stay eligible.
    config.classification.min_observations = 100;
    let mut run = Run::new(config, budget(30, 600), ConvergencePolicy::default());
    run.bandit
        .arms
        .entry(AttractorKind::Indeterminate)
        .or_default()
        .insert(FocusedRepair, BetaArm { alpha: 1000.0, beta: 1.0 });
    run.observe(passing_of_ten(2));
    // Gains halve each time: 0.215, 0.105, 0.05.
    let d1 = run.observe(passing_of_ten(6));
    assert_eq!(d1.next.as_ref().unwrap().kind, FocusedRepair);
    let d2 = run.observe(passing_of_ten(8));
    assert_eq!(d2.next.as_ref().unwrap().kind, FocusedRepair, "two uses: no curve to fit yet");
    let d3 = run.observe(passing_of_ten(9));
    let next = d3.next.as_ref().unwrap();
    assert_eq!(next.rotated_out, Some(FocusedRepair), "{next:?}");
    assert_ne!(next.kind, FocusedRepair);
    assert!(!next.candidates.contains(&FocusedRepair));
}

// ----- intervention points (seed 002 §7.3) ----------------------------------

#[test]
fn a_declined_escalation_gives_way_to_a_strategy_that_is_none_and_is_never_proposed_again() {
    // No fresh starts allowed: a stall escalates at once.
    let policy = ConvergencePolicy { max_fresh_starts: 0, ..Default::default() };
    let mut run = Run::new(EngineConfig::default(), budget(30, 600), policy);
    let mut d = run.observe(passing_of_ten(6));
    for _ in 0..3 {
        d = run.observe(passing_of_ten(6));
    }
    assert!(
        matches!(d.attractor.classification, AttractorType::Plateau { stall_duration: 3, .. }),
        "{:?}",
        d.attractor
    );
    assert_eq!(d.eligible, vec![Decompose, AlternativeApproach, ArchitectReview]);

    let next = run.engine.decline_escalation(&mut run.t, &run.bandit, ArchitectReview, &mut run.rng).unwrap();
    assert_eq!(next.kind, AlternativeApproach, "the one eligible strategy that is no escalation");
    assert_eq!(next.candidates, vec![AlternativeApproach]);
    assert!(run.t.declined.contains(&ArchitectReview));
    run.next = next;
    let d = run.observe(passing_of_ten(6));
    assert!(!d.eligible.contains(&ArchitectReview), "declined for good: {:?}", d.eligible);
    assert!(d.eligible.contains(&Decompose), "only what was declined: {:?}", d.eligible);

    // Everything eligible an escalation: retrying is what is left.
    let next = run.engine.decline_escalation(&mut run.t, &run.bandit, Decompose, &mut run.rng).unwrap();
    assert!(!next.kind.is_escalation(), "{:?}", next.kind);
}

#[test]
fn a_person_stopping_a_trajectory_traps_a_cycle_and_abandons_a_poor_stall_with_its_best_result() {
    let mut run = Run::default();
    let a = named(&["t1", "t2"], &["t3", "t4", "t5"]);
    let b = named(&["t4"], &["t1", "t2", "t3", "t5"]);
    for s in [&a, &b, &a, &b] {
        run.observe(s.clone());
    }
    assert_eq!(run.t.attractor_state.kind(), attractor::engine::AttractorKind::LimitCycle);
    match run.engine.stop_by_person(&mut run.t, "stopped at the cycle").unwrap() {
        LoopControl::Trapped { best, partial } => {
            assert_eq!(best.unwrap().sequence, 3, "the better of the two states, reached last at 3");
            assert!(partial.summary.contains("stopped at the cycle"), "{}", partial.summary);
        }
        other => panic!("expected trapped, got {other:?}"),
    }
    assert_eq!(run.t.phase, ConvergencePhase::Trapped);

    let mut run = Run::default();
    for _ in 0..3 {
        run.observe(passing_of_ten(2));
    }
    match run.engine.stop_by_person(&mut run.t, "a person stopped it when it became plateau").unwrap() {
        LoopControl::Abandoned { best, .. } => assert!(best.unwrap().level < 0.7),
        other => panic!("expected abandoned, got {other:?}"),
    }
    assert!(matches!(run.engine.stop_by_person(&mut run.t, "again"), Err(EngineError::Finished { .. })));

    // Good enough for partial acceptance: stopping keeps the best result.
    let mut run = Run::default();
    run.observe(passing_of_ten(8));
    run.observe(passing_of_ten(8));
    assert!(matches!(run.engine.stop_by_person(&mut run.t, "stop").unwrap(), LoopControl::AcceptedPartial { .. }));
}

#[test]
fn a_refused_partial_result_ends_exhausted_and_a_hint_buys_one_more_extension_while_one_is_left() {
    let partial_run = || {
        let mut run = Run::new(EngineConfig::default(), budget(3, 60), ConvergencePolicy::default());
        run.observe(passing_of_ten(8));
        run.observe(passing_of_ten(7));
        let d = run.observe(passing_of_ten(7));
        assert!(matches!(d.loop_control, LoopControl::AcceptedPartial { .. }), "{:?}", d.loop_control);
        run
    };
    let mut run = partial_run();
    match run.engine.refuse_partial(&mut run.t) {
        LoopControl::Exhausted { best, partial } => {
            assert_eq!(best.unwrap().sequence, 0);
            assert!(partial.summary.contains("refused the partial result"), "{}", partial.summary);
        }
        other => panic!("expected exhausted, got {other:?}"),
    }
    assert_eq!(run.t.phase, ConvergencePhase::Exhausted);

    let mut run = partial_run();
    let (extension, next) =
        run.engine.extend_for_hint(&mut run.t, &run.bandit, "t8 needs n * n", &mut run.rng).expect("one extension");
    assert_eq!(extension.additional_iterations, 3);
    assert_eq!((run.t.budget.max_iterations, run.t.budget.extensions_granted), (6, 1));
    assert_eq!(run.t.phase, ConvergencePhase::Iterating);
    assert_eq!(run.t.hints, vec!["t8 needs n * n"]);
    run.next = next;
    run.observe(passing_of_ten(7));
    run.observe(passing_of_ten(7));
    let d = run.observe(passing_of_ten(7));
    assert!(matches!(d.loop_control, LoopControl::AcceptedPartial { .. }), "{:?}", d.loop_control);
    assert!(run.engine.extend_for_hint(&mut run.t, &run.bandit, "more", &mut run.rng).is_none(), "none left");
}

#[test]
fn an_override_lets_a_thorough_trajectory_extend_its_budget_without_asking() {
    let policy = ConvergencePolicy {
        priority_hint: Some(PriorityHint::Thorough),
        partial_acceptance: false,
        ..Default::default()
    };
    let mut config = EngineConfig::default();
    config.interventions.budget_extension = Some(attractor::engine::InterventionMode::Auto);
    let mut run = Run::new(config, budget(3, 60), policy);
    for p in [2, 3, 4] {
        run.observe(passing_of_ten(p));
    }
    assert_eq!(run.t.budget.extensions_granted, 1, "granted, not requested");
    assert!(run.t.pending_extension.is_none());
}
