//! The tiered supervisor against a real OpenAI-protocol server on loopback:
//! the LLM tier answers on significant events only, and every way it can
//! fail (timeout, invalid JSON, server down) falls back to the heuristic.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use attractor::aso::diagnostics::{ConstraintDiagnostic, OptimizerDiagnostics, Status, Trend};
use attractor::aso::llm_tier::LlmSupervisor;
use attractor::aso::{
    AsoConfig, DirectiveAction, DirectiveSource, ModelSupervisor, SupervisionContext, TieredSupervisor,
};
use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::llm::{LlmClient, LlmConfig};

fn diagnostics(status: Status) -> OptimizerDiagnostics {
    OptimizerDiagnostics {
        step: 4,
        trajectory_id: 1,
        objective: 12.5,
        objective_delta: Some(0.0),
        max_violation: 0.3,
        status,
        constraint_diagnostics: vec![ConstraintDiagnostic {
            name: "g1".into(),
            violation: 0.3,
            penalty: 10.0,
            trend: Trend::Stable,
            delta: 0.0,
        }],
        optimizer_health: BTreeMap::new(),
        narrative: vec!["Stagnation: minimal progress with constraint violations.".into()],
        steps_since_improvement: 2,
        steps_in_feasible_region: 0,
    }
}

fn client(base_url: &str) -> LlmClient {
    let config = LlmConfig::new(base_url, "supervisor-test")
        .with_retries(0, Duration::from_millis(10))
        .with_timeout(Duration::from_secs(5))
        .with_cache(false);
    LlmClient::new(config).unwrap()
}

fn tiered(base_url: &str, config: AsoConfig) -> TieredSupervisor {
    let model: Arc<dyn ModelSupervisor> = Arc::new(LlmSupervisor::new(client(base_url), "You supervise an optimizer."));
    TieredSupervisor::new(config, Some(model))
}

fn ctx() -> SupervisionContext {
    SupervisionContext {
        cycle: 2,
        problem: "g07".into(),
        human_hints: vec!["constraint g1 is the hard one".into()],
        timeout: None,
    }
}

const ADJUST: &str = r#"{"action": "ADJUST", "config_overrides": {"constraint_weights": {"g1": 40.0}}, "reasoning": "g1 stuck", "confidence": 0.7}"#;

#[tokio::test]
async fn a_significant_event_asks_the_model_and_its_directive_is_used() {
    let server = ScriptedServer::start(vec![Scripted::reply(ADJUST)]).await.unwrap();
    let sup = tiered(&server.base_url(), AsoConfig::default());
    let out = sup.supervise(&diagnostics(Status::Stagnation), &ctx()).await;
    assert!(out.llm_call_made && !out.llm_failed);
    assert_eq!(out.directive.action, DirectiveAction::Adjust);
    assert_eq!(out.directive.source, DirectiveSource::Llm);
    assert_eq!(out.directive.config_overrides.unwrap().constraint_weights.unwrap()["g1"], 40.0);

    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    let messages = sent[0].messages();
    assert!(messages[0].1.starts_with("You supervise an optimizer."), "the supervisor_prompt artifact leads");
    assert!(messages[0].1.contains("\"version\": \"1.0\""), "the control schema v1.0 is sent");
    assert!(messages[1].1.contains("\"status\":\"STAGNATION\""), "the diagnostics are sent");
    assert!(messages[1].1.contains("constraint g1 is the hard one"), "a person's hints are sent");
}

#[tokio::test]
async fn normal_progress_never_calls_the_model() {
    let server = ScriptedServer::start(vec![Scripted::reply(ADJUST)]).await.unwrap();
    let sup = tiered(&server.base_url(), AsoConfig::default());
    let mut d = diagnostics(Status::InProgress);
    d.steps_since_improvement = 0;
    let out = sup.supervise(&d, &ctx()).await;
    assert!(!out.llm_call_made);
    assert_eq!(out.directive.source, DirectiveSource::Heuristic);
    assert_eq!(out.directive.action, DirectiveAction::Continue);
    assert!(server.requests().is_empty());
    assert_eq!(sup.llm_calls(), 0);
}

#[tokio::test]
async fn a_slow_model_times_out_and_the_heuristic_answers() {
    let server =
        ScriptedServer::start(vec![Scripted::delayed(Duration::from_secs(3), Scripted::reply(ADJUST))]).await.unwrap();
    let config = AsoConfig { llm_timeout_seconds: 0.3, ..AsoConfig::default() };
    let sup = tiered(&server.base_url(), config);
    let out = sup.supervise(&diagnostics(Status::Stagnation), &ctx()).await;
    // Failed and answered by the heuristic: the slow reply was not waited for.
    assert!(out.llm_call_made && out.llm_failed);
    assert_eq!(out.directive.source, DirectiveSource::Fallback);
    // The heuristic's case 3: stagnation with a high violation raises penalties.
    assert_eq!(out.directive.action, DirectiveAction::Adjust);
    assert!(out.directive.reasoning.contains("LLM tier failed"));
    assert_eq!(sup.consecutive_failures(), 1);
}

#[tokio::test]
async fn invalid_json_then_valid_json_is_corrected_and_used() {
    let server = ScriptedServer::start(vec![
        Scripted::reply("{\"action\": \"ADJUST\", \"reasoning\": "),
        Scripted::reply(ADJUST),
    ])
    .await
    .unwrap();
    let sup = tiered(&server.base_url(), AsoConfig::default());
    let out = sup.supervise(&diagnostics(Status::Stagnation), &ctx()).await;
    assert!(!out.llm_failed, "{:?}", out.llm_error);
    assert_eq!(out.directive.source, DirectiveSource::Llm);
    assert_eq!(server.requests().len(), 2, "one correction round");
}

#[tokio::test]
async fn an_unknown_action_twice_falls_back() {
    let bad = r#"{"action": "JUMP", "reasoning": "?"}"#;
    let server = ScriptedServer::start(vec![Scripted::reply(bad), Scripted::reply(bad)]).await.unwrap();
    let sup = tiered(&server.base_url(), AsoConfig::default());
    let out = sup.supervise(&diagnostics(Status::Diverging), &ctx()).await;
    assert!(out.llm_failed);
    assert_eq!(out.directive.source, DirectiveSource::Fallback);
    assert_eq!(out.directive.action, DirectiveAction::Stop, "heuristic case 5");
}

#[tokio::test]
async fn a_server_that_is_down_falls_back_and_failures_accumulate_until_a_success() {
    // Bind a port, then free it: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let sup = tiered(&format!("http://127.0.0.1:{port}/v1"), AsoConfig::default());
    for n in 1..=3 {
        let out = sup.supervise(&diagnostics(Status::Stagnation), &ctx()).await;
        assert!(out.llm_failed);
        assert!(out.llm_error.as_deref().unwrap_or("").contains("127.0.0.1"), "{:?}", out.llm_error);
        assert_eq!(sup.consecutive_failures(), n);
    }
    assert_eq!(sup.failures(), 3);
}

/// Records every point evaluated, to see where a trajectory really went.
struct Recording {
    points: std::sync::Mutex<Vec<Vec<f64>>>,
}

impl attractor::numeric::Problem for Recording {
    fn name(&self) -> &str {
        "recording"
    }
    fn dimension(&self) -> usize {
        2
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(-5.0, 5.0), (-5.0, 5.0)]
    }
    fn inequality_names(&self) -> Vec<String> {
        vec!["g1".into()]
    }
    fn equality_names(&self) -> Vec<String> {
        vec![]
    }
    fn evaluate(&self, x: &[f64]) -> Result<attractor::numeric::Evaluation, attractor::numeric::EvalError> {
        self.points.lock().unwrap().push(x.to_vec());
        Ok(attractor::numeric::Evaluation {
            objective: (x[0] - 1.0).powi(2) + (x[1] - 2.0).powi(2),
            inequalities: vec![x[0] - 3.0],
            equalities: vec![],
            gradients: None,
        })
    }
    fn best_known(&self) -> Option<attractor::numeric::BestKnown> {
        None
    }
}

#[tokio::test]
async fn a_restart_directive_replaces_the_trajectory_seed() {
    let restart = r#"{"action": "RESTART", "suggested_params": [-4.25, 4.75], "reasoning": "try the far corner"}"#;
    let stop = r#"{"action": "STOP", "reasoning": "enough"}"#;
    let server = ScriptedServer::start_repeating(vec![Scripted::reply(restart)], Scripted::reply(stop)).await.unwrap();
    let config = AsoConfig {
        n_trajectories: 1,
        round_trajectories: 1,
        supervision_mode: attractor::aso::SupervisionMode::EveryStep,
        ..AsoConfig::default()
    };
    let problem = Arc::new(Recording { points: Default::default() });
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let coordinator = attractor::aso::Coordinator {
        problem: problem.clone(),
        supervisor: Arc::new(tiered(&server.base_url(), config.clone())),
        config,
        alm: attractor::numeric::alm::AlmSettings::default(),
        context: ctx(),
        telemetry: None,
        seed: 5,
        chunk_evaluations: 40,
        cancel: rx,
    };
    let out = coordinator.produce_candidates(200).await;
    let first = &out.trajectories[0];
    assert_eq!(first.restarts, 1, "{:?}", out.trajectories);
    let points = problem.points.lock().unwrap();
    let at = points.iter().position(|p| p == &vec![-4.25, 4.75]).expect("the suggested seed was evaluated");
    // After the two seed samples and the first chunk; the next chunk starts there.
    assert!(at > 2, "evaluated at {at}");
    let after: Vec<&Vec<f64>> = points[at..].iter().take(3).collect();
    assert!(after.iter().all(|p| (p[0] + 4.25).abs() < 0.1 && (p[1] - 4.75).abs() < 0.1), "{after:?}");
    assert!(server.requests().len() >= 2, "supervised after the restart too");
}

#[tokio::test]
async fn a_restart_directive_draws_a_new_population() {
    // One local trajectory per round, every step asked: round 1 (request 1)
    // finds the optimum, round 2 (request 2) cannot better it and stalls, and
    // the population that starts then is told to restart on its first step.
    let stop = r#"{"action": "STOP", "reasoning": "enough"}"#;
    let restart = r#"{"action": "RESTART", "reasoning": "draw a new population"}"#;
    let script = vec![Scripted::reply(stop), Scripted::reply(stop), Scripted::reply(restart)];
    let server = ScriptedServer::start_repeating(script, Scripted::reply(stop)).await.unwrap();
    let config = AsoConfig {
        n_trajectories: 1,
        round_trajectories: 1,
        supervision_mode: attractor::aso::SupervisionMode::EveryStep,
        population_after_stalled_rounds: 1,
        population_min_dimension: 0,
        // Every local trajectory goes on to be supervised, whatever its descent found.
        stop_after_descent: false,
        ..AsoConfig::default()
    };
    let problem = Arc::new(Recording { points: Default::default() });
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let coordinator = attractor::aso::Coordinator {
        problem: problem.clone(),
        supervisor: Arc::new(tiered(&server.base_url(), config.clone())),
        config,
        alm: attractor::numeric::alm::AlmSettings::default(),
        context: ctx(),
        telemetry: None,
        seed: 5,
        chunk_evaluations: 0,
        cancel: rx,
    };
    let out = coordinator.produce_candidates(6000).await;
    let asked: Vec<String> = server.requests().iter().map(|r| r.json().to_string()).collect();
    assert!(asked.len() >= 4, "{} requests", asked.len());
    assert!(!asked[1].contains("Population trajectory"), "the second request is the second round's");
    assert!(asked[2].contains("Population trajectory"), "the third request is the population's first step");
    assert!(asked[3].contains("Population trajectory"), "and the restarted population is asked again");
    let pop = out.trajectories.iter().find(|t| t.kind == attractor::aso::TrajectoryKind::Population).unwrap();
    assert_eq!(pop.restarts, 1, "{pop:?}");
    assert_eq!(pop.steps, 2, "one step, the restart, one step and STOP: {pop:?}");
    // A new population is a new Latin hypercube: twenty fresh points of the
    // whole box evaluated after the restart (the 2-variable problem's minimum
    // population), before any child.
    assert!(pop.evals_used >= 2 * 20, "{pop:?}");
    assert!(out.evals_used <= 6000);
}
