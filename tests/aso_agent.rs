//! The ASO coordinator over agent trajectories (`supervision: aso`): the
//! engine's state read as the coordinator's diagnostics, directives applied
//! as policy changes, and whole supervised runs — the LLM executor and the
//! model tier talking to the scripted OpenAI-compatible server, a real
//! workspace (a small Python package under git) measured by real
//! `python3 -m unittest` processes, and telemetry rows in a real SQLite file.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use attractor::aso::agent::{self, Steering, SupervisionTrack};
use attractor::aso::{AsoConfig, Directive, DirectiveAction, DirectiveSource, Status};
use attractor::engine::bandit::StrategyBandit;
use attractor::engine::budget::ConvergenceBudget;
use attractor::engine::{
    ConvergencePolicy, Decision, Engine, EngineConfig, InterventionConfig, InterventionMode, LoopControl, Observation,
    SpecificationEvolution, StrategyChoice, StrategyKind, Trajectory,
};
use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::llm::{LlmClient, LlmConfig};
use attractor::overseer::OverseerSignals;
use attractor::overseer::signals::{BuildResult, TestResults};
use attractor::store::{RunRow, TelemetryRow};
use attractor::task::agent::{AgentConfig, AgentState};
use attractor::workspace::ArtifactReference;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use tokio::sync::watch;

// ---------------------------------------------------------------------------
// The engine's state as diagnostics, and directives as policy changes.

/// One trajectory driven by hand.
struct Hand {
    engine: Engine,
    t: Trajectory,
    bandit: StrategyBandit,
    rng: ChaCha8Rng,
    next: StrategyChoice,
    track: SupervisionTrack,
    commits: u32,
}

impl Hand {
    fn new() -> Hand {
        let engine = Engine::new(EngineConfig::default());
        let spec = SpecificationEvolution::from_submission("Implement square(n).", &[], &[]);
        let budget = ConvergenceBudget {
            max_tokens: 10_000_000,
            max_wall_time_ms: 600 * 60_000,
            max_iterations: 30,
            max_extensions: 1,
            ..Default::default()
        };
        let mut t = Trajectory::new("traj-1", "squares", spec, budget, ConvergencePolicy::default());
        let bandit = StrategyBandit::default();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let next = engine.start(&mut t, &bandit, &mut rng).unwrap();
        Hand { engine, t, bandit, rng, next, track: SupervisionTrack::default(), commits: 0 }
    }

    fn observe(&mut self, signals: OverseerSignals) -> Decision {
        self.commits += 1;
        let artifact = ArtifactReference { commit: format!("c{}", self.commits), files_changed: 1, lines_changed: 10 };
        let mut obs = Observation::new(self.next.kind, artifact, signals);
        obs.tokens_used = 1_000;
        obs.wall_time_ms = 1_000;
        let d = self.engine.decide(&mut self.t, &mut self.bandit, obs, &mut self.rng).unwrap();
        if let Some(next) = &d.next {
            self.next = next.clone();
        }
        d
    }

    fn diagnose(&mut self, d: &Decision) -> attractor::aso::OptimizerDiagnostics {
        agent::diagnose(&self.t, d, &mut self.track, 1, &AsoConfig::default())
    }

    fn apply(&mut self, directive: &Directive, d: &attractor::aso::OptimizerDiagnostics) -> agent::Applied {
        agent::apply(&self.engine, &mut self.t, &self.bandit, directive, d, &mut self.rng)
    }
}

/// `passed` of ten tests pass; the build passes unless `build` is false.
fn tests(passed: u32, build: bool) -> OverseerSignals {
    let names: Vec<String> = (1..=10).map(|i| format!("t{i}")).collect();
    let (p, f) = names.split_at(passed as usize);
    OverseerSignals {
        test_results: Some(TestResults {
            passed,
            failed: 10 - passed,
            total: 10,
            passing: p.to_vec(),
            failing: f.to_vec(),
            ..Default::default()
        }),
        build_result: Some(BuildResult { success: build, error_count: u32::from(!build), warning_count: 0 }),
        ..Default::default()
    }
}

fn directive(json: Value) -> Directive {
    serde_json::from_value(json).unwrap()
}

#[test]
fn every_kind_of_check_is_a_constraint_whose_violation_is_its_share_of_failures() {
    let mut h = Hand::new();
    let d = h.observe(tests(3, true));
    let diag = h.diagnose(&d);
    let by_name = |n: &str| diag.constraint_diagnostics.iter().find(|c| c.name == n).unwrap().violation;
    assert!((by_name("tests") - 0.7).abs() < 1e-12);
    assert_eq!(by_name("build"), 0.0);
    assert!((diag.max_violation - 0.7).abs() < 1e-12);
    assert_eq!(diag.objective, d.gradient.loss.d, "the objective is the distance D");
    assert_eq!(diag.status, Status::InProgress);
    assert_eq!((diag.step, diag.trajectory_id), (1, 1));
    for key in ["level", "budget_remaining", "iterations_used", "tokens_used", "loss", "exploration_weight"] {
        assert!(diag.optimizer_health.contains_key(key), "{key} missing");
    }
    assert!(diag.narrative.iter().any(|n| n.contains("Attractor")), "{:?}", diag.narrative);

    // Worse tests: the trend says so, and the event asks for the model tier.
    let d = h.observe(tests(1, true));
    let diag = h.diagnose(&d);
    let t = diag.constraint_diagnostics.iter().find(|c| c.name == "tests").unwrap();
    assert_eq!(t.trend, attractor::aso::Trend::IncreasingViolation);
    assert!(diag.requires_llm_supervision(&AsoConfig::default()));
    assert_eq!(diag.steps_since_improvement, 1);
    // One step's worsening is not divergence: that is the engine's call.
    assert_ne!(diag.status, Status::Diverging);

    let d = h.observe(tests(10, true));
    assert!(matches!(d.loop_control, LoopControl::Converged { .. }));
    assert_eq!(h.diagnose(&d).status, Status::FeasibleFound);
}

#[test]
fn a_check_not_measured_this_time_keeps_its_last_reading() {
    let criteria = |names: &[(&str, bool)]| -> Vec<attractor::ggs::CriterionVerdict> {
        names
            .iter()
            .map(|(n, ok)| {
                if *ok {
                    attractor::ggs::CriterionVerdict::pass(*n, attractor::ggs::CriterionMode::Verifiable)
                } else {
                    attractor::ggs::CriterionVerdict::fail(
                        *n,
                        attractor::ggs::CriterionMode::Verifiable,
                        attractor::overseer::FailureClass::Logical,
                        "",
                    )
                }
            })
            .collect()
    };
    let first = agent::snapshot(&criteria(&[("test:a", true), ("test:b", false), ("build", true)]), 0.5, None);
    // The build broke, so the tests were skipped.
    let second = agent::snapshot(&criteria(&[("build", false), ("check:lint", true)]), 0.9, Some(&first));
    let names: Vec<&str> = second.constraints.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["build", "tests", "check:lint"], "the previous order first, new checks after");
    assert_eq!(second.constraints[0].value, 1.0);
    assert_eq!(second.constraints[1].value, 0.5, "the skipped tests keep their reading");
    assert_eq!(agent::family("passing test #3"), "tests");
    assert_eq!(agent::family("overseer:unit"), "overseer:unit");
    assert_eq!(agent::family("handles empty input"), "intent");
}

#[test]
fn raising_the_penalties_raises_the_exploration_weight_within_its_clamp() {
    let mut h = Hand::new();
    let d = h.observe(tests(3, true));
    let diag = h.diagnose(&d);
    let before = h.t.policy.exploration_weight;
    let adjust = directive(
        json!({"action": "ADJUST", "config_overrides": {"alm_settings": {"penalty_parameters_increase_factor": 1000.0}}}),
    );
    let applied = h.apply(&adjust, &diag);
    let after = h.t.policy.exploration_weight;
    assert!(
        after > before && after <= (before.max(agent::MIN_RAISED_EXPLORATION / 2.0) * 2.0) + 1e-12,
        "{before} → {after}"
    );
    assert!(matches!(applied.steering, Steering::Next(_)), "the bandit chooses again under the new weight");
    for _ in 0..5 {
        h.apply(&adjust, &diag);
    }
    assert_eq!(h.t.policy.exploration_weight, 1.0, "clamped at 1");
    let set = directive(json!({"action": "ADJUST", "config_overrides": {"agent": {"exploration_weight": -3.0}}}));
    h.apply(&set, &diag);
    assert_eq!(h.t.policy.exploration_weight, 0.0, "clamped at 0");
}

#[test]
fn boosting_a_constraint_repairs_that_check_next_and_an_unknown_one_is_refused() {
    let mut h = Hand::new();
    let d = h.observe(tests(3, true));
    let diag = h.diagnose(&d);
    let boost = directive(json!({"action": "ADJUST", "config_overrides": {"constraint_weights": {"tests": 50.0}}}));
    let applied = h.apply(&boost, &diag);
    match &applied.steering {
        Steering::Next(c) => assert_eq!((c.kind, c.forced), (StrategyKind::FocusedRepair, true)),
        other => panic!("expected a forced focused repair, got {other:?}"),
    }
    assert!(applied.hint.as_deref().is_some_and(|h| h.contains("`tests`")), "{:?}", applied.hint);
    assert!(applied.refused.is_empty());

    let unknown = directive(json!({"action": "ADJUST", "config_overrides": {"constraint_weights": {"g7": 50.0}}}));
    let applied = h.apply(&unknown, &diag);
    assert_eq!(applied.steering, Steering::Continue);
    assert!(applied.refused[0].contains("g7"), "{:?}", applied.refused);

    let forced = directive(json!({"action": "ADJUST", "config_overrides": {"agent": {"forced_strategy": "reframe"}}}));
    match h.apply(&forced, &diag).steering {
        Steering::Next(c) => assert_eq!(c.kind, StrategyKind::Reframe),
        other => panic!("{other:?}"),
    }
}

#[test]
fn restart_is_a_fresh_start_until_none_are_left_then_it_is_refused() {
    let mut h = Hand::new();
    h.t.policy.max_fresh_starts = 1;
    let d = h.observe(tests(8, true));
    let diag = h.diagnose(&d);
    let restart = Directive::new(DirectiveAction::Restart, DirectiveSource::Heuristic, "stuck");
    let choice = match h.apply(&restart, &diag).steering {
        Steering::Next(c) => c,
        other => panic!("{other:?}"),
    };
    assert_eq!(choice.kind, StrategyKind::FreshStart);
    assert!(choice.carry_forward.is_some(), "a fresh start carries the best signals forward");
    h.next = choice;
    let d = h.observe(tests(8, true));
    let diag = h.diagnose(&d);
    let applied = h.apply(&restart, &diag);
    assert_eq!(applied.steering, Steering::Continue);
    assert!(applied.refused[0].contains("fresh start"), "{:?}", applied.refused);
}

#[test]
fn a_hopeless_stop_starts_over_while_a_fresh_start_is_left() {
    // The numeric coordinator's next round from a new seed, in agent form.
    let mut h = Hand::new();
    let d = h.observe(tests(4, true));
    let diag = h.diagnose(&d);
    let stop = Directive::new(DirectiveAction::Stop, DirectiveSource::Heuristic, "Trajectory diverging, abandoning");
    match h.apply(&stop, &diag).steering {
        Steering::Next(c) => assert_eq!((c.kind, c.forced), (StrategyKind::FreshStart, true)),
        other => panic!("expected a fresh start, got {other:?}"),
    }
    assert!(!h.t.phase.is_terminal());
}

#[test]
fn stop_ends_the_trajectory_with_its_best_result_and_says_why() {
    let mut h = Hand::new();
    h.t.policy.partial_acceptance = false;
    h.t.policy.max_fresh_starts = 0;
    let d = h.observe(tests(4, true));
    let diag = h.diagnose(&d);
    let stop = Directive::new(DirectiveAction::Stop, DirectiveSource::Llm, "hopeless");
    match h.apply(&stop, &diag).steering {
        Steering::Stop(LoopControl::Abandoned { best, partial }) => {
            assert_eq!(best.unwrap().sequence, 0);
            assert!(
                partial.summary.contains("supervisor") && partial.summary.contains("hopeless"),
                "{}",
                partial.summary
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(h.t.phase.is_terminal());
}

// ---------------------------------------------------------------------------
// Whole supervised runs.

/// A reply getting the first `k` tests right; `wrong` is what the others return.
fn writes(k: u32, wrong: u32) -> Scripted {
    squares::writes(&squares::answers(&squares::first(k), wrong), &format!("{k} right"))
}

use common::squares::{self, Fixture};

impl Fixture {
    /// A suite with one supervised agent task; `extra` is more YAML for the task.
    fn suite(&self, extra: &str) -> PathBuf {
        let yaml = format!(
            "name: aso-agent\ntasks:\n  - name: squares\n    kind: agent\n    supervision: aso\n    task: >-\n      \
             Implement square(n) in squares.py for every n from 1 to 10.\n    workspace: pkg\n{extra}    overseers:\n      \
             - name: unit\n        kind: test\n        command: python3 -m unittest -v test_squares\n        timeout: 30\n"
        );
        let path = self.path("aso.suite.yaml");
        std::fs::write(&path, yaml).unwrap();
        path
    }

    /// Runs the suite once with `aso_config` set to `aso` (over the defaults).
    async fn run(&self, suite: &Path, server: &ScriptedServer, aso: Value) {
        let config = common::squares::run_config(self.path("runs"), 1);
        let (_tx, cancel) = watch::channel(false);
        let mut agent = AgentConfig::default();
        agent.verifier.enabled = false;
        agent.overseers.retry_delay_ms = 20;
        // Nobody answers questions here: these runs are about the supervisor.
        agent.engine.interventions = InterventionConfig::all(InterventionMode::Auto);
        let artifacts = [("aso_config", aso.to_string())];
        self.run_agent(suite, config, client(server), agent, &artifacts, false, cancel).await;
    }

    async fn telemetry(&self, run: &RunRow) -> Vec<TelemetryRow> {
        let experiment = self.store.experiment_of_run(run.id).await.unwrap().expect("an experiment per run");
        self.store.telemetry_of_experiment(experiment).await.unwrap()
    }

    async fn strategies(&self, trajectory: &str) -> Vec<String> {
        self.store
            .observations_of_trajectory(trajectory)
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.record.strategy)
            .collect()
    }

    async fn state(&self, trajectory: &str) -> AgentState {
        let row = self.store.trajectory(trajectory).await.unwrap().unwrap();
        serde_json::from_str(&row.record.state_json).unwrap()
    }
}

fn client(server: &ScriptedServer) -> LlmClient {
    let config = LlmConfig::new(server.base_url(), "scripted-model")
        .with_retries(0, Duration::from_millis(10))
        .with_timeout(Duration::from_secs(60))
        .with_cache(false);
    LlmClient::new(config).unwrap()
}

fn json_of(text: Option<&str>) -> Value {
    serde_json::from_str(text.unwrap_or("null")).unwrap()
}

#[tokio::test]
async fn a_worsening_check_asks_the_model_tier_and_its_forced_strategy_runs_next() {
    let f = Fixture::new("aso-agent").await;
    let suite = f.suite("    budget:\n      max_loops: 6\n");
    // Executor, executor (worse: an event), the model tier, executor.
    let server = ScriptedServer::start(vec![
        writes(3, 0),
        writes(2, 0),
        Scripted::json(&json!({
            "action": "ADJUST",
            "config_overrides": {"agent": {"forced_strategy": "reframe", "focus": "tests"}},
            "reasoning": "the tests got worse; look at the problem afresh",
            "confidence": 0.8,
        })),
        writes(10, 0),
    ])
    .await
    .unwrap();
    f.run(&suite, &server, json!({"n_trajectories": 1})).await;

    let run = f.last_run().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    let id = format!("run-{}", run.id);
    assert_eq!(f.strategies(&id).await[2], "reframe", "the model's forced strategy ran third");
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "the model tier was asked once, on the event");
    let (system, user) = {
        let m = requests[2].messages();
        (m[0].1.clone(), m[1].1.clone())
    };
    assert!(system.contains("1.0-agent") && system.contains("forced_strategy"), "{system}");
    assert!(user.contains("agent task `squares`") && user.contains("\"tests\""), "{user}");
    // The focus reached the reframed attempt's prompt, and that attempt only.
    let focus = "concentrate on the `tests` check";
    assert!(requests[3].messages().iter().any(|(_, c)| c.contains(focus)));
    assert!(!requests[1].messages().iter().any(|(_, c)| c.contains(focus)));

    // One telemetry row per iteration, the last one the engine's own ending.
    let rows = f.telemetry(&run).await;
    let actions: Vec<(&str, &str, bool)> =
        rows.iter().map(|r| (r.directive_action.as_str(), r.directive_source.as_str(), r.llm_call_made)).collect();
    assert_eq!(
        actions,
        [("CONTINUE", "heuristic", false), ("ADJUST", "llm", true), ("STOP", "convergence", false)],
        "{rows:#?}"
    );
    assert_eq!(rows.iter().map(|r| r.step).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(rows[2].status, "FEASIBLE_FOUND");
    assert!((rows[0].objective.unwrap() - 0.7).abs() < 1e-9, "D after three of ten");
    let diagnostics = json_of(rows[1].diagnostics_json.as_deref());
    assert_eq!(diagnostics["trajectory"], id.as_str());
    assert_eq!(json_of(rows[1].directive_json.as_deref())["applied"], "next: reframe");

    let events = f.events("supervisor_directive").await;
    assert_eq!(events.len(), 3);
    assert_eq!((events[1]["action"].as_str(), events[1]["source"].as_str()), (Some("ADJUST"), Some("llm")));
    let setup = json_of(Some(&f.store.trajectory(&id).await.unwrap().unwrap().record.setup_json));
    assert_eq!(setup["supervision"], "aso");
    server.shutdown().await;
}

#[tokio::test]
async fn a_cycle_near_passing_is_restarted_by_the_heuristic_tier_and_the_restart_recovers() {
    let f = Fixture::new("aso-agent").await;
    let suite = f.suite("    budget:\n      max_loops: 12\n");
    // Two wrong answers in turn, each nine of ten right: a limit cycle close
    // to passing (violation 0.1 ≤ the stagnation threshold 0.2) — case 4 of
    // the heuristic tree, RESTART; then the right answer.
    let mut script = Vec::new();
    for _ in 0..4 {
        script.push(writes(9, 0));
        script.push(writes(9, 7));
    }
    let server = ScriptedServer::start_repeating(script, writes(10, 0)).await.unwrap();
    // Heuristics only: no model tier, so the scripted answers are the executor's.
    let aso = json!({"n_trajectories": 1, "stagnation_violation_threshold": 0.2, "max_stagnation_steps": 20,
                     "supervision_mode": "heuristics_only"});
    f.run(&suite, &server, aso).await;

    let run = f.last_run().await;
    let id = format!("run-{}", run.id);
    let rows = f.telemetry(&run).await;
    let restart = rows.iter().position(|r| r.directive_action == "RESTART").unwrap_or_else(|| panic!("{rows:#?}"));
    assert_eq!(rows[restart].directive_source, "heuristic");
    assert_eq!(rows[restart].status, "STAGNATION");
    let strategies = f.strategies(&id).await;
    assert_eq!(strategies[restart + 1], "fresh_start", "{strategies:?}");
    let fresh = f.events("fresh_start").await;
    assert!(fresh.iter().any(|e| e["reason"].as_str().unwrap().starts_with("the ASO supervisor restarted it")));
    assert_eq!(run.status, "complete", "{:?}", run.error);
    let track = f.state(&id).await.supervision;
    // The script kept cycling after the first restart; success came after a later one.
    assert!(track.restarts >= 1 && track.restarts_recovered == 1, "{track:?}");
    assert_eq!(track.actions["RESTART"], track.restarts);
    server.shutdown().await;
}

#[tokio::test]
async fn a_trajectory_whose_distance_stops_falling_starts_over_then_stops_at_the_stagnation_limit() {
    let f = Fixture::new("aso-agent").await;
    let suite = f.suite("    budget:\n      max_loops: 20\n");
    // Four of ten right, whatever is tried.
    let server = ScriptedServer::start_repeating(vec![writes(4, 0)], writes(4, 1)).await.unwrap();
    let aso = json!({"n_trajectories": 1, "max_stagnation_steps": 2, "supervision_mode": "heuristics_only"});
    f.run(&suite, &server, aso).await;
    let run = f.last_run().await;
    assert_eq!(run.status, "failed");
    let id = format!("run-{}", run.id);
    let rows = f.telemetry(&run).await;
    assert!(rows.len() < 20, "stopped before the budget ran out: {} iterations", rows.len());
    // Every fresh start the policy allows was used before the end.
    let strategies = f.strategies(&id).await;
    assert_eq!(strategies.iter().filter(|s| *s == "fresh_start").count(), 3, "{strategies:?}");
    assert_eq!(f.state(&id).await.trajectory.fresh_starts_remaining(), 0);
    let row = f.store.trajectory(&id).await.unwrap().unwrap();
    let result = json_of(row.result_json.as_deref());
    assert!(result.to_string().contains("stagnated"), "{result}");
    server.shutdown().await;
}

#[tokio::test]
async fn the_coordinator_runs_its_trajectories_side_by_side() {
    let f = Fixture::new("aso-agent").await;
    let suite = f.suite("    budget:\n      max_loops: 6\n");
    let server = ScriptedServer::start_repeating(vec![], writes(10, 0)).await.unwrap();
    f.run(&suite, &server, json!({"n_trajectories": 2, "supervision_mode": "heuristics_only"})).await;
    let run = f.last_run().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    let rows = f.store.trajectories_of_run(run.id).await.unwrap();
    assert_eq!(rows.iter().filter(|t| t.record.role == "sample").count(), 2);
    let telemetry = f.telemetry(&run).await;
    assert!(telemetry.iter().any(|r| r.directive_source == "convergence" && r.status == "FEASIBLE_FOUND"));
    let ordinals: Vec<i64> = telemetry.iter().map(|r| r.trajectory_id).collect();
    assert!(ordinals.iter().all(|o| [1, 2].contains(o)), "{ordinals:?}");
    server.shutdown().await;
}

#[test]
fn supervision_is_an_agent_field_and_a_wrong_value_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.suite.yaml");
    std::fs::write(&path, "name: s\ntasks:\n  - name: a\n    kind: agent\n    task: do it\n    supervision: tiered\n")
        .unwrap();
    let err = attractor::suite::load(&path).unwrap_err().to_string();
    assert!(err.contains(":6:") && err.contains("supervision"), "{err}");
    std::fs::write(&path, "name: s\ntasks:\n  - name: c\n    command: 'true'\n    supervision: aso\n").unwrap();
    let err = attractor::suite::load(&path).unwrap_err().to_string();
    assert!(err.contains("supervision") && err.contains("agent"), "{err}");
}
