//! Agent tasks end to end: a suite with a `kind: agent` task run by the outer
//! loop, the LLM executor talking to the scripted OpenAI-compatible server,
//! a real workspace (a small Python package under git) measured by real
//! overseer processes (`python3 -m unittest`, shell scripts), and the store
//! and the bus recording every iteration.
//!
//! The package has one function, `square(n)`, and ten unit tests (n = 1…10).
//! The scripted model answers with versions of `squares.py` that get a
//! chosen set of those tests right, so each test shapes the trajectory it
//! needs — converging, cycling, stalling, regressing — and checks what the
//! convergence engine did about it.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use attractor::artifact::Registry;
use attractor::engine::{InterventionConfig, InterventionMode};
use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::llm::{LlmClient, LlmConfig};
use attractor::outer::{RunConfig, RunSummary};
use attractor::store::{InterventionRow, ObservationRow, RunRow, Store, TrajectoryRow};
use attractor::task::agent::AgentConfig;
use serde_json::{Value, json};
use tokio::sync::watch;

use common::squares::{Fixture, first, passing, squares, writes, wrong};

const OVERSEER: &str =
    "      - name: tests\n        kind: test\n        command: python3 -m unittest -v\n        timeout: 30\n";

impl Fixture {
    /// A suite with one agent task; `extra` is more YAML for the task
    /// (indented four spaces), `overseers` its overseer list entries.
    fn suite(&self, extra: &str, overseers: &str) -> PathBuf {
        let yaml = format!(
            "name: agent-suite\ntasks:\n  - name: squares\n    kind: agent\n    task: >-\n      Implement square(n) in \
             squares.py so that it returns n squared for every n from 1 to 10; the unit tests in test_squares.py \
             say what is expected.\n    workspace: pkg\n    hints:\n      - Compute n * n rather than looking it \
             up.\n{extra}    overseers:\n{overseers}"
        );
        let path = self.path("agent.suite.yaml");
        std::fs::write(&path, yaml).unwrap();
        path
    }

    fn config(&self, epochs: u32) -> RunConfig {
        common::squares::run_config(self.path("runs"), epochs)
    }

    async fn run(&self, suite: &Path, server: &ScriptedServer, agent: AgentConfig, epochs: u32) -> RunSummary {
        let (_tx, rx) = watch::channel(false);
        self.run_with_cancel(suite, server, agent, epochs, rx).await
    }

    async fn run_with_cancel(
        &self,
        suite: &Path,
        server: &ScriptedServer,
        agent: AgentConfig,
        epochs: u32,
        cancel: watch::Receiver<bool>,
    ) -> RunSummary {
        self.run_agent(suite, self.config(epochs), client(server), agent, &[], true, cancel).await
    }

    async fn runs(&self) -> Vec<RunRow> {
        let suite = self.store.suite_by_name("agent-suite").await.unwrap().unwrap();
        let mut out = Vec::new();
        for e in self.store.epochs(suite.id).await.unwrap() {
            out.extend(self.store.runs_of_epoch(e.id).await.unwrap());
        }
        out
    }

    /// The only trajectory of the last run, with its iterations.
    async fn last_trajectory(&self) -> (RunRow, TrajectoryRow, Vec<ObservationRow>) {
        let run = self.runs().await.pop().expect("a run");
        let t = self.store.trajectories_of_run(run.id).await.unwrap().pop().expect("a trajectory");
        let obs = self.store.observations_of_trajectory(&t.id).await.unwrap();
        (run, t, obs)
    }

    fn workspace_file(&self, t: &TrajectoryRow, name: &str) -> String {
        std::fs::read_to_string(Path::new(&t.workspace_dir).join(name)).unwrap()
    }
}

fn client(server: &ScriptedServer) -> LlmClient {
    let config = LlmConfig::new(server.base_url(), "scripted-model")
        .with_retries(0, Duration::from_millis(10))
        .with_timeout(Duration::from_secs(20));
    LlmClient::new(config).unwrap()
}

/// Fast settings for tests: no intent verification unless a test turns it
/// on, quick retries and polls.
fn quick() -> AgentConfig {
    let mut c = AgentConfig::default();
    c.verifier.enabled = false;
    c.overseers.retry_delay_ms = 20;
    c.intervention_poll_ms = 50;
    c
}

/// `quick()` for a test about something other than intervention points:
/// every point decides alone, so the escalations, ambiguities and partial
/// results the priority hints' table would pause on never wait for a person.
fn unattended() -> AgentConfig {
    let mut c = quick();
    c.engine.interventions = InterventionConfig::all(InterventionMode::Auto);
    c
}

fn scores(run: &RunRow) -> Value {
    serde_json::from_str(run.result_json.as_deref().unwrap_or("null")).unwrap()
}

/// The user message of request `i`.
fn user_message(server: &ScriptedServer, i: usize) -> String {
    server.requests()[i].messages().into_iter().find(|(r, _)| r == "user").map(|(_, c)| c).unwrap_or_default()
}

fn git_show(workspace: &str, commit: &str, file: &str) -> String {
    let out = std::process::Command::new("git")
        .args(["show", &format!("{commit}:{file}")])
        .current_dir(workspace)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn a_model_that_writes_the_right_file_converges_in_a_few_iterations() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 6\n", OVERSEER);
    let server =
        ScriptedServer::start(vec![passing(6, "a table for six"), passing(10, "the full table")]).await.unwrap();
    f.run(&suite, &server, quick(), 1).await;

    let (run, t, obs) = f.last_trajectory().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    assert_eq!(t.status, "converged");
    assert_eq!(obs.len(), 2);
    assert_eq!((obs[0].level, obs[1].level), (0.55 * 0.6 + 0.45, 1.0));
    assert_eq!(obs[1].loop_control, "converged");
    assert!(obs[1].delta.unwrap() > 0.0);
    assert_eq!(f.workspace_file(&t, "squares.py"), squares(&first(10)));
    assert_eq!(obs[0].verdict_summary, "6 of 10 tests pass");
    assert!(!obs[0].directive.is_empty() && !obs[0].rationale.is_empty());

    // The loss signals: eval is the final level, nothing refused, budget left.
    let result: Value =
        serde_json::from_str(&f.store.epoch_runs_of_suite(run.suite_id).await.unwrap()[0].scores_json).unwrap();
    assert_eq!(result["status"], "complete");
    assert_eq!(result["eval_score"], 1.0);
    assert_eq!(result["gate_rejection_count"], 0.0);
    let left = result["budget_remaining_pct"].as_f64().unwrap();
    assert!((60.0..=70.0).contains(&left), "2 of 6 iterations used: {left}");
    assert_eq!(result["metrics"]["iterations"], 2);
    assert_eq!(result["metrics"]["strategies"].as_array().unwrap().len(), 2);
    assert_eq!(result["metrics"]["attractors"], json!(["indeterminate", "indeterminate"]));
    assert_eq!(result["metrics"]["directives"].as_array().unwrap().len(), 2);
    assert_eq!(result["metrics"]["final_level"], 1.0);
    assert_eq!(scores(&run)["trajectory_id"], t.id);

    // The prompt came with the hint first and the task's files.
    let first_prompt = user_message(&server, 0);
    assert!(first_prompt.starts_with("## Hints from a person"), "{first_prompt}");
    assert!(first_prompt.contains("raise NotImplementedError"), "{first_prompt}");
    // The second prompt saw the first attempt's measurement: test_7 fails there.
    let second = user_message(&server, 1);
    assert!(second.contains("test_7") && !second.contains("test_6 "), "{second}");

    // Every event of the catalogue that applies was persisted.
    assert_eq!(f.events("trajectory_started").await.len(), 1);
    assert_eq!(f.events("strategy_selected").await.len(), 2);
    let done = f.events("iteration_completed").await;
    assert_eq!(done.len(), 2);
    assert_eq!(done[1]["loop_control"], "converged");
    let converged = f.events("trajectory_converged").await;
    assert_eq!((converged[0]["iterations"].as_u64(), converged[0]["partial"].as_bool()), (Some(2), Some(false)));
    server.shutdown().await;
}

/// `squares.py` failing exactly the tests of `wrong`.
fn failing(wrong: &[u32]) -> Vec<u32> {
    (1..=10).filter(|n| !wrong.contains(n)).collect()
}

#[tokio::test]
async fn two_alternating_wrong_answers_are_a_limit_cycle_escaped_by_a_new_exploration_strategy() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    priority: fast\n    budget:\n      max_loops: 6\n", OVERSEER);
    // Both below fast's acceptance threshold (0.85): 6 and 7 of 10 right.
    let (a, b) = (squares(&failing(&[1, 2, 3, 4])), squares(&failing(&[6, 7, 8])));
    let script: Vec<Scripted> = (0..6).map(|i| writes(if i % 2 == 0 { &a } else { &b }, &format!("try {i}"))).collect();
    let server = ScriptedServer::start(script).await.unwrap();
    // Fast pauses only on a partial result, which this test is not about.
    let mut config = quick();
    config.engine.interventions.partial_result = Some(InterventionMode::Auto);
    f.run(&suite, &server, config, 1).await;

    let (_, _, obs) = f.last_trajectory().await;
    let seen: Vec<(&str, &str, &str)> =
        obs.iter().map(|o| (o.strategy.as_str(), o.attractor.as_str(), o.verdict_summary.as_str())).collect();
    let at = obs.iter().position(|o| o.attractor == "limit_cycle").unwrap_or_else(|| panic!("no cycle: {seen:?}"));
    assert_eq!(at, 3, "two laps of A, B: {:?}", obs.iter().map(|o| &o.attractor).collect::<Vec<_>>());
    let next = obs[at].next_strategy.clone().expect("the loop goes on");
    assert!(["reframe", "alternative_approach"].contains(&next.as_str()), "an exploration strategy, got {next}");
    let in_cycle: Vec<&str> = obs[..=at].iter().map(|o| o.strategy.as_str()).collect();
    assert!(!in_cycle.contains(&next.as_str()), "{next} led into the cycle: {in_cycle:?}");
    // The escape was executed: the next observation used it, and its prompt said so.
    assert_eq!(obs[at + 1].strategy, next);
    assert!(user_message(&server, at + 1).contains(&format!("Strategy for this attempt: {next}")));
    let transitions = f.events("attractor_transition").await;
    assert!(transitions.iter().any(|e| e["to"] == "limit_cycle" && e["sequence"] == 3), "{transitions:?}");
    // Fast asks nothing about the cycle: the point is decided alone, with only an event.
    assert!(f.store.interventions(false).await.unwrap().is_empty());
    let points = f.points("attractor_transition").await;
    assert!(points.iter().any(|p| p["mode"] == "auto" && p["intervention_id"].is_null()), "{points:?}");
    // break_symmetry alternates with refine here: the auditor must not call it thrashing.
    let alerts = f.events("audit_alert").await;
    assert!(alerts.iter().all(|a| a["kind"] != "thrashing"), "{alerts:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_plateau_ends_in_a_fresh_start_that_carries_hints_and_best_signals_but_no_history() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 6\n", OVERSEER);
    let same = squares(&first(6));
    let script: Vec<Scripted> = (0..6).map(|i| writes(&same, &format!("stale-summary-{i}"))).collect();
    let server = ScriptedServer::start(script).await.unwrap();
    f.run(&suite, &server, unattended(), 1).await;

    let (_, _, obs) = f.last_trajectory().await;
    let fresh = obs.iter().position(|o| o.strategy == "fresh_start").expect("a fresh start");
    assert!(obs[..fresh].iter().any(|o| o.attractor == "plateau"), "it stalled first");
    let prompt = user_message(&server, fresh);
    assert!(prompt.contains("## Carried forward from earlier attempts"), "{prompt}");
    assert!(prompt.contains("Compute n * n rather than looking it up."), "the hint is carried: {prompt}");
    assert!(prompt.contains("6 of 10 pass"), "the best signals are carried: {prompt}");
    for i in 0..fresh {
        assert!(!prompt.contains(&format!("stale-summary-{i}")), "attempt {i} leaked into the fresh start: {prompt}");
    }
    assert!(!prompt.contains("Attempts so far"), "{prompt}");
    // Before the fresh start the history was shown.
    assert!(user_message(&server, fresh - 1).contains("stale-summary-0") || fresh == 1);
    let events = f.events("fresh_start").await;
    assert_eq!(events[0]["sequence"].as_u64(), Some(fresh as u64));
    assert!(events[0]["best_sequence"].as_u64().is_some());
    server.shutdown().await;
}

#[tokio::test]
async fn regressions_revert_the_workspace_to_the_best_observation_and_branch_from_there() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 8\n", OVERSEER);
    let mut script: Vec<Scripted> = [5, 8, 6, 4, 3].iter().map(|k| passing(*k, &format!("{k} right"))).collect();
    // The revert's own reply changes nothing: the workspace must then be the best state.
    script.push(Scripted::json(&json!({"summary": "looked again, changed nothing", "edits": []})));
    script.push(passing(10, "all right"));
    let server = ScriptedServer::start(script).await.unwrap();
    f.run(&suite, &server, quick(), 1).await;

    let (run, t, obs) = f.last_trajectory().await;
    let at = obs.iter().position(|o| o.strategy == "revert_and_branch").expect("a revert");
    assert_eq!(obs[at - 1].attractor, "divergent");
    let decision: Value = serde_json::from_str(&obs[at - 1].decision_json).unwrap();
    assert_eq!(decision["next"]["revert_to"]["sequence"], 1, "the best observation (8 right)");
    assert_eq!(git_show(&t.workspace_dir, &obs[at].commit_id, "squares.py"), squares(&first(8)));
    assert_eq!(obs[at].level, obs[1].level);
    let reverted = f.events("reverted").await;
    assert_eq!(
        (reverted[0]["to_sequence"].as_u64(), reverted[0]["commit"].as_str()),
        (Some(1), Some(obs[1].commit_id.as_str()))
    );
    assert!(user_message(&server, at).contains("reset to observation 1"), "{}", user_message(&server, at));
    assert_eq!(run.status, "complete", "{:?}", run.error);
    server.shutdown().await;
}

const SCANNER: &str = "      - name: scan\n        kind: security\n        cost: cheap\n        command: \"grep -n 'eval(' squares.py | sed 's/^/Severity: High /'; true\"\n";

#[tokio::test]
async fn a_security_finding_earns_no_convergence_credit_even_with_every_test_passing() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 5\n", &format!("{OVERSEER}{SCANNER}"));
    let risky = squares(&first(10)).replace("return ANSWERS[n]", "return eval(f\"ANSWERS[{n}]\")");
    let server = ScriptedServer::start(vec![
        passing(5, "half"),
        writes(&risky, "all, via eval"),
        passing(10, "all, without eval"),
    ])
    .await
    .unwrap();
    f.run(&suite, &server, quick(), 1).await;

    let (run, _, obs) = f.last_trajectory().await;
    assert_eq!(obs[1].level, 1.0, "every test passes");
    assert!(obs[1].verdict_summary.contains("security 0 critical / 1 high"), "{}", obs[1].verdict_summary);
    assert_ne!(obs[1].loop_control, "converged", "a new finding vetoes convergence");
    assert!(obs[1].delta.unwrap() <= 0.0, "no credit: {:?}", obs[1].delta);
    let decision: Value = serde_json::from_str(&obs[1].decision_json).unwrap();
    assert_ne!(decision["bandit_update"], "success");
    assert_eq!(obs[2].loop_control, "converged");
    assert_eq!(run.status, "complete");
    server.shutdown().await;
}

#[tokio::test]
async fn an_exhausted_budget_accepts_a_good_enough_best_result_as_partial() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 3\n", OVERSEER);
    let server = ScriptedServer::start(vec![passing(8, "8"), passing(7, "7"), passing(7, "7 again")]).await.unwrap();
    f.run(&suite, &server, unattended(), 1).await;

    let (run, t, obs) = f.last_trajectory().await;
    assert_eq!(obs.len(), 3);
    assert_eq!((run.status.as_str(), t.status.as_str()), ("partial", "accepted_partial"));
    assert_eq!(t.best_sequence, Some(0));
    // The workspace holds the accepted result, not the last attempt.
    assert_eq!(f.workspace_file(&t, "squares.py"), squares(&first(8)));
    let scores: Value =
        serde_json::from_str(&f.store.epoch_runs_of_suite(run.suite_id).await.unwrap()[0].scores_json).unwrap();
    assert!((scores["eval_score"].as_f64().unwrap() - 0.89).abs() < 1e-9, "{scores}");
    assert_eq!(scores["budget_remaining_pct"], 0.0);
    assert_eq!(f.events("trajectory_converged").await[0]["partial"], true);
    // Decided alone: no question, no notice, only the event.
    assert!(f.store.interventions(false).await.unwrap().is_empty());
    let points = f.points("partial_result").await;
    assert_eq!((points.len(), points[0]["mode"].as_str()), (1, Some("auto")));
    server.shutdown().await;
}

#[tokio::test]
async fn an_exhausted_budget_below_the_partial_threshold_fails_with_next_moves() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 3\n", OVERSEER);
    let server = ScriptedServer::start(vec![passing(2, "2"), passing(2, "2"), passing(2, "2")]).await.unwrap();
    f.run(&suite, &server, quick(), 1).await;

    let (run, t, _) = f.last_trajectory().await;
    assert_eq!((run.status.as_str(), t.status.as_str()), ("failed", "exhausted"));
    let result: Value = serde_json::from_str(t.result_json.as_deref().unwrap()).unwrap();
    let moves = result["partial_result"]["next_moves"].as_array().unwrap();
    assert!((2..=3).contains(&moves.len()), "{result}");
    assert!((t.final_level.unwrap() - (0.55 * 0.2 + 0.45)).abs() < 1e-9);
    let exhausted = f.events("trajectory_exhausted").await;
    assert_eq!(exhausted[0]["abandoned"], false);
    // The run directory holds the same summary.
    let file = std::fs::read_to_string(Path::new(&run.run_dir).join("agent_result.json")).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&file).unwrap()["status"], "exhausted");
    server.shutdown().await;
}

#[tokio::test]
async fn edits_outside_the_workspace_are_refused_and_count_as_gate_rejections() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 4\n", OVERSEER);
    let outside = f.path("outside.py");
    let server = ScriptedServer::start(vec![Scripted::json(&json!({
        "summary": "the fix, and a few files elsewhere",
        "edits": [
            {"path": "squares.py", "action": "write", "content": squares(&first(10))},
            {"path": "../outside.py", "action": "write", "content": "print('escaped')\n"},
            {"path": outside.display().to_string(), "action": "write", "content": "print('escaped')\n"},
        ],
    }))])
    .await
    .unwrap();
    f.run(&suite, &server, quick(), 1).await;

    assert!(!outside.exists(), "nothing is written outside the workspace");
    let (run, _, obs) = f.last_trajectory().await;
    assert_eq!((obs[0].applied_edits, obs[0].rejected_edits), (1, 2));
    let execution: Value = serde_json::from_str(&obs[0].execution_json).unwrap();
    assert_eq!(execution["rejected"].as_array().unwrap().len(), 2);
    let row = &f.store.epoch_runs_of_suite(run.suite_id).await.unwrap()[0];
    let scores: Value = serde_json::from_str(&row.scores_json).unwrap();
    assert_eq!(scores["gate_rejection_count"], 2.0);
    assert!(scores["breakdown"]["gate_component"].as_f64().unwrap() > 0.0, "{scores}");
    server.shutdown().await;
}

#[tokio::test]
async fn an_overseer_that_times_out_is_environmental_and_retried() {
    let f = Fixture::new("agent-suite").await;
    // In the workspace: the sandbox lets the overseer write nowhere else.
    let marker = ".first-attempt-done";
    let slow = format!(
        "      - name: tests\n        kind: test\n        timeout: 1\n        command: if [ ! -e {m} ]; then touch {m}; sleep 20; fi; python3 -m unittest -v\n",
        m = marker
    );
    let suite = f.suite("    budget:\n      max_loops: 3\n", &slow);
    let server = ScriptedServer::start(vec![passing(10, "all")]).await.unwrap();
    f.run(&suite, &server, quick(), 1).await;

    let (run, _, obs) = f.last_trajectory().await;
    let runs: Value = serde_json::from_str(&obs[0].overseer_runs_json).unwrap();
    assert_eq!(runs[0]["attempts"], 2, "{runs}");
    assert_eq!(obs[0].loop_control, "converged", "the retry measured the state");
    assert_eq!(run.status, "complete");
    server.shutdown().await;
}

#[tokio::test]
async fn an_overseer_that_never_finishes_leaves_the_state_unmeasured_and_blocks_convergence() {
    let f = Fixture::new("agent-suite").await;
    let hang = "      - name: hang\n        kind: custom\n        cost: cheap\n        timeout: 0.3\n        command: sleep 20\n";
    let suite = f.suite("    priority: fast\n    budget:\n      max_loops: 2\n", &format!("{OVERSEER}{hang}"));
    let server = ScriptedServer::start(vec![passing(10, "all"), passing(10, "all again")]).await.unwrap();
    f.run(&suite, &server, unattended(), 1).await;

    let (_, _, obs) = f.last_trajectory().await;
    let signals: Value = serde_json::from_str(&obs[0].signals_json).unwrap();
    let hang = signals["verdicts"].as_array().unwrap().iter().find(|v| v["overseer"] == "hang").unwrap().clone();
    assert_eq!(hang["failure_class"], "environmental", "{hang}");
    let runs: Value = serde_json::from_str(&obs[0].overseer_runs_json).unwrap();
    assert_eq!(runs[0]["attempts"], 3, "tried again twice: {runs}");
    assert!(obs.iter().all(|o| o.loop_control != "converged"), "an unmeasured state is never accepted");
    assert!(obs[0].verdict_summary.contains("could not run: hang"), "{}", obs[0].verdict_summary);
    server.shutdown().await;
}

#[tokio::test]
async fn the_bandit_state_is_saved_per_category_and_primes_the_next_run() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    workflow: python-functions\n    budget:\n      max_loops: 4\n", OVERSEER);
    let server = ScriptedServer::start(vec![
        passing(4, "epoch 1, first"),
        passing(10, "epoch 1, done"),
        passing(4, "epoch 2, first"),
        passing(10, "epoch 2, done"),
    ])
    .await
    .unwrap();
    f.run(&suite, &server, quick(), 1).await;

    let stored = f.store.bandit_state("python-functions").await.unwrap().expect("saved under the task's workflow");
    assert_eq!(stored.trajectories, 1);
    let after_one: Value = serde_json::from_str(&stored.state_json).unwrap();
    let (_, t1, obs1) = f.last_trajectory().await;
    // The second observation improved on the first: its strategy was credited as a success.
    let credited = &obs1[1].strategy;
    let context = serde_json::from_str::<Value>(&obs1[1].decision_json).unwrap();
    assert_eq!(context["bandit_update"], "success", "{context}");
    let arms = &after_one["arms"];
    let alpha: f64 = arms.as_object().unwrap().values().filter_map(|a| a[credited]["alpha"].as_f64()).sum();
    assert_eq!(alpha, 2.0, "{arms}");
    assert!(f.store.bandit_state("general").await.unwrap().is_none());

    // The next epoch's trajectory starts from what the first one learned, and adds to it.
    f.run(&suite, &server, quick(), 1).await;
    let (_, t2, _) = f.last_trajectory().await;
    assert_ne!(t1.id, t2.id);
    let state: Value = serde_json::from_str(&t2.state_json).unwrap();
    // Primed from the stored state, and from memory: the strategy that made
    // progress in the first trajectory gets 0.3 more α in every context.
    let strategy: attractor::engine::StrategyKind = serde_json::from_value(json!(credited)).unwrap();
    let mut primed = attractor::engine::StrategyBandit::from_json(&stored.state_json).unwrap();
    primed.nudge(strategy, 0.3);
    assert_eq!(state["bandit_prior"], serde_json::from_str::<Value>(&primed.to_json()).unwrap(), "primed");
    let stored = f.store.bandit_state("python-functions").await.unwrap().unwrap();
    assert_eq!(stored.trajectories, 2);
    let after_two: Value = serde_json::from_str(&stored.state_json).unwrap();
    // Evidence beyond the uniform Beta(1, 1) prior of each arm.
    let evidence = |v: &Value| -> f64 {
        v["arms"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|a| a.as_object().unwrap().values())
            .map(|arm| arm["alpha"].as_f64().unwrap() + arm["beta"].as_f64().unwrap() - 2.0)
            .sum()
    };
    // The nudge was priming, not evidence: only the credited outcome is merged back.
    assert_eq!((evidence(&after_one), evidence(&after_two)), (1.0, 2.0), "one more credited outcome: {after_two}");
    server.shutdown().await;
}

#[tokio::test]
async fn changing_the_active_version_of_a_prompt_artifact_changes_what_is_sent() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 2\n", OVERSEER);
    let server = ScriptedServer::start(vec![passing(10, "epoch 1"), passing(10, "epoch 2"), passing(10, "epoch 3")])
        .await
        .unwrap();
    f.run(&suite, &server, quick(), 1).await;
    let before = server.requests()[0].messages();
    assert!(before[1].1.contains("You are following the strategy"), "version 0's framing: {}", before[1].1);

    let registry = Registry::load(f.store.clone()).await.unwrap();
    let mut templates = registry.get_active("strategy_templates").await.unwrap().content;
    templates = templates.replace("You are following the strategy", "ZEBRA-FRAMING for the strategy");
    for kind in ["retry_with_feedback", "retry_augmented", "focused_repair"] {
        templates = templates.replace(&format!("[{kind}]\n"), &format!("[{kind}]\nZEBRA-DESCRIPTION of {kind}. "));
    }
    let v = registry.put_version("strategy_templates", &templates, 0, None).await.unwrap();
    registry.set_active("strategy_templates", v).await.unwrap();
    let pitfalls = registry.put_version("executor_pitfalls", "ZEBRA-PITFALL: never guess.\n", 0, None).await.unwrap();
    registry.set_active("executor_pitfalls", pitfalls).await.unwrap();
    f.run(&suite, &server, quick(), 1).await;

    let after = server.requests()[1].messages();
    assert!(after[0].1.contains("ZEBRA-PITFALL: never guess."), "{}", after[0].1);
    assert!(!after[0].1.contains("Before you answer, check these common mistakes"), "{}", after[0].1);
    assert!(after[1].1.contains("ZEBRA-FRAMING for the strategy"), "{}", after[1].1);
    assert!(after[1].1.contains("ZEBRA-DESCRIPTION of"), "{}", after[1].1);
    assert!(!before[1].1.contains("ZEBRA") && !before[0].1.contains("ZEBRA"));

    // Rolling back is a pointer flip, and what is sent follows it.
    registry.rollback_to("strategy_templates", 0).await.unwrap();
    registry.rollback_to("executor_pitfalls", 0).await.unwrap();
    f.run(&suite, &server, quick(), 1).await;
    let rolled = server.requests()[2].messages();
    assert!(!rolled[0].1.contains("ZEBRA") && !rolled[1].1.contains("ZEBRA"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_garbled_strategy_templates_version_fails_the_run_with_the_line() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 2\n", OVERSEER);
    let registry = Registry::load(f.store.clone()).await.unwrap();
    let v = registry.put_version("strategy_templates", "Frame: {description}\n\n[retry-with-feedback]\nx\n", 0, None);
    registry.set_active("strategy_templates", v.await.unwrap()).await.unwrap();
    let server = ScriptedServer::start(vec![]).await.unwrap();
    f.run(&suite, &server, quick(), 1).await;
    let run = f.runs().await.pop().unwrap();
    assert_eq!(run.status, "failed");
    let error = run.error.unwrap();
    assert!(error.contains("artifact `strategy_templates` v1: line 3"), "{error}");
    assert!(server.requests().is_empty(), "nothing was sent");
    server.shutdown().await;
}

fn verdicts(satisfied: bool) -> Value {
    json!({
        "satisfied": satisfied,
        "confidence": 0.9,
        "verdicts": [
            {"criterion": "square(n) is n squared for 1..10", "verdict": "pass", "failure_class": null,
             "evidence": "the table holds n*n"},
            {"criterion": "computes rather than looks up", "verdict": if satisfied { "pass" } else { "fail" },
             "failure_class": if satisfied { Value::Null } else { json!("logical") },
             "evidence": "ANSWERS is a lookup table"}
        ],
        "gaps": if satisfied { json!([]) } else { json!([{"description": "a lookup table, not n * n", "category": "incorrect"}]) }
    })
}

#[tokio::test]
async fn intent_verification_reads_the_rubric_artifact_and_is_parsed_strictly() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 3\n", OVERSEER);
    let mut broken = verdicts(false);
    broken["verdicts"][1]["failure_class"] = Value::Null;
    let server = ScriptedServer::start(vec![
        passing(10, "the table"),
        // The verifier forgets a failure class: refused, and corrected once.
        Scripted::json(&broken),
        Scripted::json(&verdicts(false)),
    ])
    .await
    .unwrap();
    let mut config = quick();
    config.verifier.enabled = true;
    f.run(&suite, &server, config, 1).await;

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "execute, verify, correct");
    let verify = requests[1].messages();
    assert!(verify[0].1.contains("Score the deliverable from 0 to 1"), "the rubric artifact: {}", verify[0].1);
    assert!(verify[0].1.contains("\"failure_class\""), "{}", verify[0].1);
    assert!(verify[1].1.contains("+    1: 1,"), "the diff is shown: {}", verify[1].1);
    assert!(verify[1].1.contains("tests: 10 of 10 pass"), "{}", verify[1].1);
    assert_eq!(requests[1].json()["model"], "scripted-model", "same model as the executor by default");
    let correction = requests[2].messages();
    assert!(correction.last().unwrap().1.contains("without a failure_class"), "{:?}", correction.last());

    let (run, _, obs) = f.last_trajectory().await;
    let v: Value = serde_json::from_str(obs[0].verification_json.as_deref().unwrap()).unwrap();
    assert_eq!(v["verdicts"][1]["criterion"], "intent:computes rather than looks up");
    assert_eq!(v["verdicts"][1]["mode"], "plausible");
    assert_eq!(v["verdicts"][1]["failure_class"], "logical");
    assert!(obs[0].verdict_summary.contains("intent not satisfied (1 of 2 criteria"), "{}", obs[0].verdict_summary);
    // The overseers outrank the verifier: every test passes, so it converged.
    assert_eq!(obs[0].loop_control, "converged");
    let scores: Value =
        serde_json::from_str(&f.store.epoch_runs_of_suite(run.suite_id).await.unwrap()[0].scores_json).unwrap();
    assert_eq!(scores["critique_score"], 0.5, "{scores}");
    server.shutdown().await;
}

/// Polls until `check` holds (every 20 ms, at most 30 s).
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_budget_extension_answered_after_a_restart_resumes_the_same_trajectory() {
    let f = Fixture::new("agent-suite").await;
    // Thorough: a converging trajectory out of budget asks a person for more.
    let suite = f.suite("    priority: thorough\n    budget:\n      max_loops: 3\n", OVERSEER);
    let server = ScriptedServer::start(vec![
        passing(2, "two"),
        passing(4, "four"),
        passing(6, "six"),
        passing(8, "eight"),
        passing(10, "ten"),
    ])
    .await
    .unwrap();

    // First process: runs until it pauses on the question, then is stopped (Ctrl-C).
    let (stop, cancel) = watch::channel(false);
    let watcher = async {
        until("the question", || async { !f.store.interventions(true).await.unwrap().is_empty() }).await;
        stop.send(true).unwrap();
    };
    let (summary, ()) = tokio::join!(f.run_with_cancel(&suite, &server, quick(), 1, cancel), watcher);
    assert!(summary.interrupted);
    let pending = f.store.interventions(true).await.unwrap();
    assert_eq!(pending.len(), 1);
    let question = &pending[0];
    assert_eq!(question.kind, "budget_extension");
    let context: Value = serde_json::from_str(&question.context_json).unwrap();
    assert_eq!(context["proposed_action"], "extend_budget");
    assert!(context["what"].as_str().unwrap().contains("3 of 3 iterations"), "{context}");
    let (run1, t1, obs) = f.last_trajectory().await;
    assert_eq!((run1.status.as_str(), t1.status.as_str()), ("cancelled", "paused"));
    assert_eq!(t1.pending_intervention_id, Some(question.id));
    assert_eq!(obs.len(), 3);
    // The app lists the suite as paused: it waits on a person.
    let service = attractor::service::Service::open(attractor::service::ServiceConfig {
        db_path: f.path("attractor.db"),
        settings_path: f.path("settings.json"),
        runs_root: Some(f.path("runs")),
        env: std::sync::Arc::new(|_| None),
    })
    .await
    .unwrap();
    let status = || async { service.suites().await.unwrap()[0].status };
    assert_eq!(status().await, attractor::service::types::SuiteStatus::Paused);

    // Second process: resumes the epoch, re-attaches to the same question,
    // and goes on once `attractor answer` (a third process) approves it.
    let db = f.path("attractor.db");
    let id = question.id;
    let answerer = async {
        until("the resumed run to adopt the trajectory", || async {
            f.store.trajectory(&t1.id).await.unwrap().is_some_and(|t| t.run_id != run1.id)
        })
        .await;
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(&db)
            .args(["answer", &id.to_string(), "approve"])
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let (summary, ()) = tokio::join!(f.run(&suite, &server, quick(), 1), answerer);
    assert!(!summary.interrupted && summary.epochs[0].resumed);

    let all = f.store.interventions(false).await.unwrap();
    assert_eq!(all.len(), 1, "the question was not asked again");
    assert_eq!(all[0].answer.as_deref(), Some("approve"));
    let (run2, t2, obs) = f.last_trajectory().await;
    assert_eq!(t2.id, t1.id, "the same trajectory went on");
    assert_eq!((run2.status.as_str(), t2.status.as_str()), ("complete", "converged"), "{:?}", run2.error);
    let sequences: Vec<i64> = obs.iter().map(|o| o.sequence).collect();
    assert_eq!(sequences, vec![0, 1, 2, 3, 4]);
    assert_eq!(obs[2].loop_control, "extension_requested");
    assert_eq!(f.workspace_file(&t2, "squares.py"), squares(&first(10)));
    let granted = f.events("budget_extension_granted").await;
    assert_eq!(granted.len(), 1);
    assert_eq!(granted[0]["by"], "person");
    let requested = f.events("budget_extension_requested").await;
    assert_eq!(requested[0]["intervention_id"].as_i64(), Some(id));
    let started = f.events("trajectory_started").await;
    assert_eq!(started.iter().map(|e| e["resumed"].as_bool().unwrap()).collect::<Vec<_>>(), vec![false, true]);
    assert_eq!(server.requests().len(), 5, "no iteration was repeated");
    assert_eq!(status().await, attractor::service::types::SuiteStatus::Idle, "answered and finished");
    service.shutdown().await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_trapped_trajectory_asks_a_person_and_a_hint_reopens_it_with_a_fresh_start() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 12\n", OVERSEER);
    let (a, b) = (squares(&failing(&[1, 2, 3, 4])), squares(&failing(&[6, 7, 8])));
    // Three laps of the cycle: the escapes (reframe, alternative_approach) are
    // used inside it, and the trajectory is trapped on the sixth answer.
    let mut script: Vec<Scripted> =
        (0..6).map(|i| writes(if i % 2 == 0 { &a } else { &b }, &format!("lap {i}"))).collect();
    script.insert(0, Scripted::reply("not json at all")); // one unusable reply on the way
    script.insert(1, Scripted::reply("still not json"));
    let server = ScriptedServer::start(script).await.unwrap();
    let answerer = async {
        until("the escalation", || async { !f.store.interventions(true).await.unwrap().is_empty() }).await;
        let q = f.store.interventions(true).await.unwrap().remove(0);
        assert_eq!(q.kind, "human_escalation");
        let context: Value = serde_json::from_str(&q.context_json).unwrap();
        assert!(context["evidence"]["carry_forward"]["best_signals"].is_object(), "{context}");
        // The model's next answer is the right one; the hint is what a person would say.
        let full = (1..=10).map(|n| format!("    {n}: {},\n", n * n)).collect::<String>();
        assert!(squares(&first(10)).contains(&full));
        server.push(passing(10, "computed"));
        f.store.answer_intervention(q.id, "hint", Some("Return n * n; the table is the trap.")).await.unwrap();
    };
    // Without decomposition (a split would be the last escape from the cycle)
    // and without fresh starts of its own (the engine's first answer to a
    // cycle no escape broke): the trap and the person's hint are the subject.
    let mut config = quick();
    config.engine.decomposition.reactive = false;
    config.engine.policy.max_fresh_starts = 0;
    let (_, ()) = tokio::join!(f.run(&suite, &server, config, 1), answerer);

    let (run, t, obs) = f.last_trajectory().await;
    let trapped = obs.iter().position(|o| o.loop_control == "trapped").expect("trapped");
    let reopened = &obs[trapped + 1];
    assert_eq!(reopened.strategy, "fresh_start");
    assert!(reopened.forced);
    assert_eq!((run.status.as_str(), t.status.as_str()), ("complete", "converged"), "{:?}", run.error);
    // The unusable replies were refused and counted.
    let scores: Value =
        serde_json::from_str(&f.store.epoch_runs_of_suite(run.suite_id).await.unwrap()[0].scores_json).unwrap();
    assert_eq!(scores["gate_rejection_count"], 1.0, "one reply refused after the correction round: {scores}");
    let prompt = user_message(&server, server.requests().len() - 1);
    assert!(prompt.contains("Return n * n; the table is the trap."), "{prompt}");
    assert!(prompt.contains("## Carried forward from earlier attempts"), "{prompt}");
    let fresh = f.events("fresh_start").await;
    assert!(fresh.iter().any(|e| e["reason"].as_str().unwrap().contains("hint")), "{fresh:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_directive_that_blocks_the_failing_tools_refuses_a_reply_that_still_uses_them() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    priority: fast\n    budget:\n      max_loops: 8\n", OVERSEER);
    let (a, b) = (squares(&failing(&[1, 2, 3, 4])), squares(&failing(&[6, 7, 8])));
    let reply = |content: &str, i: usize| {
        Scripted::json(&json!({
            "summary": format!("lap {i}"),
            "tools_used": ["lookup-table"],
            "edits": [{"path": "squares.py", "action": "write", "content": content}],
        }))
    };
    let script: Vec<Scripted> = (0..8).map(|i| reply(if i % 2 == 0 { &a } else { &b }, i)).collect();
    let server = ScriptedServer::start(script).await.unwrap();
    f.run(&suite, &server, unattended(), 1).await;

    let (run, _, obs) = f.last_trajectory().await;
    let refused = obs
        .iter()
        .find(|o| serde_json::from_str::<Value>(&o.execution_json).unwrap()["status"]["status"] == "rejected")
        .expect("a reply using a blocked tool was refused");
    assert_eq!(refused.lines_changed, 0, "nothing of it was written");
    let prompt = user_message(&server, refused.sequence as usize);
    assert!(prompt.contains("MUST NOT use `lookup-table` in this attempt."), "{prompt}");
    let scores: Value =
        serde_json::from_str(&f.store.epoch_runs_of_suite(run.suite_id).await.unwrap()[0].scores_json).unwrap();
    assert!(scores["gate_rejection_count"].as_f64().unwrap() >= 1.0, "{scores}");
    server.shutdown().await;
}

#[tokio::test]
async fn the_cli_runs_an_agent_suite_against_the_configured_model_and_shows_its_trajectory() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 4\n", OVERSEER);
    let server = ScriptedServer::start(vec![
        passing(3, "three"),
        // The intent verifier runs on the first iteration by default.
        Scripted::json(&verdicts(false)),
        passing(10, "all ten"),
    ])
    .await
    .unwrap();
    let db = f.path("cli.db");
    let cli = |args: &[&str]| {
        let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_attractor"));
        c.arg("--db")
            .arg(&db)
            .args(args)
            .env("ATTRACTOR_RUNS_DIR", f.path("cli-runs"))
            .env("ATTRACTOR_LLM_BASE_URL", server.base_url())
            .env("ATTRACTOR_LLM_MODEL", "scripted-model")
            .env_remove("ATTRACTOR_DB")
            .env_remove("OPENAI_BASE_URL");
        c
    };
    let bad = f.path("bad-agent.json");
    std::fs::write(&bad, r#"{"verifier": {"modle": "big"}}"#).unwrap();
    let out = cli(&["run", suite.to_str().unwrap(), "--agent-config", bad.to_str().unwrap()]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad-agent.json") && err.contains("modle"), "{err}");
    assert!(server.requests().is_empty());

    let settings = f.path("agent.json");
    std::fs::write(&settings, r#"{"overseers": {"retry_delay_ms": 10}, "intervention_poll_ms": 100}"#).unwrap();
    let out = cli(&["run", suite.to_str().unwrap(), "--seed", "5", "--agent-config", settings.to_str().unwrap()])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let store = Store::open(&db).await.unwrap();
    let suite_row = store.suite_by_name("agent-suite").await.unwrap().unwrap();
    let run = store.epoch_runs_of_suite(suite_row.id).await.unwrap().remove(0);
    let out = cli(&["trajectory", &run.run_id.to_string()]).output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("converged, 2 iterations"), "{text}");
    assert!(text.contains("sandbox: bubblewrap (workspace writable"), "the run shows its sandbox: {text}");
    assert!(text.contains("intent not satisfied"), "{text}");
    // Iteration 0 is the baseline, the executions 1 and 2.
    let lines: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with(['0', '1', '2'])).collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].contains("baseline") && lines[0].contains("targets: the 10 tests failing at baseline"), "{text}");
    assert!(lines[2].contains("converged") && lines[2].contains("1.000"), "{text}");

    let out = cli(&["--json", "telemetry", &run.run_id.to_string()]).output().await.unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The baseline apart (iteration 0), then the two executions.
    assert_eq!(v[0]["observations"].as_array().unwrap().len(), 2);
    assert!(v[0]["baseline"]["summary"].as_str().unwrap().contains("targets: the 10 tests failing"), "{v}");
    assert_eq!(v[0]["trajectory"]["status"], "converged");
    assert!(v[0]["observations"][0]["directive"].is_string());
    server.shutdown().await;
}

#[tokio::test]
async fn an_architect_review_amends_the_specification_every_later_prompt_carries() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 5\n", OVERSEER);
    // Every answer different, every one wrong: a stall, not a duplicate.
    let wrong = |k: u32| squares(&[]).replace(": 0,", &format!(": {k},"));
    let nothing = wrong(6);
    let mut script: Vec<Scripted> = [2, 3, 5].iter().map(|k| writes(&wrong(*k), &format!("all {k}"))).collect();
    script.push(Scripted::json(&json!({
        "summary": "the task never says what to do outside 1..10",
        "edits": [{"path": "squares.py", "action": "write", "content": nothing}],
        "amendments": ["AMENDMENT: square(n) is only called with 1 <= n <= 10."],
    })));
    script.push(passing(10, "all"));
    let server = ScriptedServer::start(script).await.unwrap();
    let mut config = unattended();
    config.engine.decomposition.reactive = false;
    f.run(&suite, &server, config, 1).await;

    let (_, t, obs) = f.last_trajectory().await;
    // Stalled at a low level: with decomposition off, a review is what is left.
    let seen: Vec<(&str, &str)> = obs.iter().map(|o| (o.strategy.as_str(), o.attractor.as_str())).collect();
    let review = obs.iter().position(|o| o.strategy == "architect_review").unwrap_or_else(|| panic!("{seen:?}"));
    assert_eq!(obs[review - 1].attractor, "plateau");
    let review_prompt = user_message(&server, review);
    assert!(review_prompt.contains("## Specification review"), "{review_prompt}");
    assert!(review_prompt.contains("## Plan before you change anything\n\nPlan before you act."), "{review_prompt}");
    assert!(!user_message(&server, 0).contains("Plan before you act."), "repairs get no planning preamble");
    let after = user_message(&server, review + 1);
    assert!(after.contains("Amendments made since"), "{after}");
    assert!(after.contains("AMENDMENT: square(n) is only called with 1 <= n <= 10."), "{after}");
    let state: Value = serde_json::from_str(&t.state_json).unwrap();
    let amendments = state["trajectory"]["specification"]["amendments"].as_array().unwrap();
    let last = amendments.last().unwrap();
    assert_eq!(
        (last["source"].as_str(), last["observation_trigger"].as_u64()),
        (Some("architect_amendment"), Some(review as u64))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_trajectory_whose_workspace_is_gone_is_closed_and_the_task_starts_afresh() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    priority: thorough\n    budget:\n      max_loops: 3\n", OVERSEER);
    let server =
        ScriptedServer::start(vec![passing(2, "two"), passing(4, "four"), passing(6, "six"), passing(10, "ten")])
            .await
            .unwrap();
    let (stop, cancel) = watch::channel(false);
    let watcher = async {
        until("the question", || async { !f.store.interventions(true).await.unwrap().is_empty() }).await;
        stop.send(true).unwrap();
    };
    tokio::join!(f.run_with_cancel(&suite, &server, quick(), 1, cancel), watcher);
    let (_, old, _) = f.last_trajectory().await;
    assert_eq!(old.status, "paused");
    std::fs::remove_dir_all(&old.workspace_dir).unwrap();

    f.run(&suite, &server, quick(), 1).await;
    let old = f.store.trajectory(&old.id).await.unwrap().unwrap();
    assert_eq!(old.status, "failed");
    assert!(old.result_json.unwrap().contains("could not be resumed"));
    let (run, new, obs) = f.last_trajectory().await;
    assert_ne!(new.id, old.id);
    assert_eq!((run.status.as_str(), new.status.as_str(), obs.len()), ("complete", "converged", 1));
    server.shutdown().await;
}

#[tokio::test]
async fn every_trajectory_leaves_a_memory_and_the_next_of_its_category_is_primed_with_it() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    workflow: python-functions\n    budget:\n      max_loops: 3\n", OVERSEER);
    let server = ScriptedServer::start(vec![
        // Epoch 1 converges on its second attempt.
        passing(4, "epoch 1, four"),
        passing(10, "epoch 1, all ten"),
        // Epoch 2 never gets past two tests: the budget runs out.
        passing(2, "epoch 2, two"),
        passing(2, "epoch 2, two again"),
        passing(2, "epoch 2, still two"),
        // Epoch 3 converges at once.
        passing(10, "epoch 3, all ten"),
    ])
    .await
    .unwrap();
    f.run(&suite, &server, quick(), 3).await;
    assert_eq!(server.requests().len(), 6);

    // Newest first: epoch 3's success, epoch 2's failure, epoch 1's success.
    let memories = f.store.memories(Some("python-functions"), 10).await.unwrap();
    let outcomes: Vec<(&str, &str, i64)> =
        memories.iter().map(|m| (m.outcome.as_str(), m.status.as_str(), m.iterations)).collect();
    assert_eq!(outcomes[0], ("success", "converged", 1));
    assert_eq!((outcomes[1].0, outcomes[1].2), ("failure", 3), "{outcomes:?}");
    assert_eq!(outcomes[2], ("success", "converged", 2));
    let first: Value = serde_json::from_str(&memories[2].details_json).unwrap();
    let runs = f.runs().await;
    let obs1 = f.store.observations_of_trajectory(&format!("run-{}", runs[0].id)).await.unwrap();
    assert_eq!(first["effective_strategies"], json!([obs1[1].strategy]), "{first}");
    assert_eq!(first["decisive_signals"][0], format!("tests 4→10 of 10 after {} (observation 1)", obs1[1].strategy));
    // The task text's keywords: "Implement square(n) in squares.py so that it returns n squared …".
    let words = json!([
        "expected",
        "implement",
        "returns",
        "say",
        "square",
        "squared",
        "squares",
        "test_squares",
        "tests",
        "unit"
    ]);
    assert_eq!(first["signature"], words, "{first}");
    assert_eq!(memories[2].signature, "expected implement returns say square squared squares test_squares tests unit");
    assert!(memories[2].content.starts_with("Task type 'python-functions' converged in 2 iterations"));
    let failed: Value = serde_json::from_str(&memories[1].details_json).unwrap();
    assert_eq!(failed["status"], "exhausted", "{failed}");
    assert_eq!(failed["failure_causes"][0], "the budget ran out below the partial threshold", "{failed}");
    assert_eq!(failed["terminal_attractor"], "plateau", "{failed}");
    assert_eq!(failed["effective_strategies"], json!([]), "two tests passing throughout: {failed}");
    let gaps = failed["persistent_gaps"].as_array().unwrap();
    assert!(gaps.contains(&json!("test:test_squares.SquareTest.test_3")), "{failed}");
    assert!(!gaps.contains(&json!("test:test_squares.SquareTest.test_2")), "{failed}");
    assert_eq!(memories[1].relevance, 0.9);
    let stored = f.events("memory_stored").await;
    assert_eq!(
        stored.iter().map(|e| e["outcome"].as_str().unwrap()).collect::<Vec<_>>(),
        vec!["success", "failure", "success"]
    );

    // What each trajectory was told when it started.
    let recalled = f.events("memory_recalled").await;
    let counts: Vec<(u64, u64)> =
        recalled.iter().map(|e| (e["successes"].as_u64().unwrap(), e["failures"].as_u64().unwrap())).collect();
    assert_eq!(counts, vec![(0, 0), (1, 0), (1, 1)]);
    assert_eq!(recalled[0]["nudged"], json!([]));
    assert_eq!(recalled[1]["nudged"], json!([obs1[1].strategy]));
    assert_eq!(recalled[1]["historical_convergence_rate"], Value::Null, "two finished trajectories are too few");
    let worked = recalled[2]["worked"][0].as_str().unwrap();
    assert!(worked.starts_with("`squares` converged in 2 iterations"), "{worked}");
    let avoid = recalled[2]["avoid"][0].as_str().unwrap();
    assert!(avoid.starts_with("`squares` ended "), "{avoid}");

    // ... and what its prompts said: nothing in epoch 1, then the lessons.
    assert!(!user_message(&server, 0).contains("Lessons from earlier tasks"));
    let second = user_message(&server, 2);
    assert!(
        second.contains("## Lessons from earlier tasks of this kind\n\nWhat worked before:\n- `squares` converged"),
        "{second}"
    );
    assert!(!second.contains("What failed before"), "{second}");
    let third = user_message(&server, 5);
    assert!(
        third.contains(&format!("- {worked}"))
            && third.contains(&format!("What failed before (avoid repeating it):\n- {avoid}")),
        "{third}"
    );
    assert!(third.starts_with("## Hints from a person"), "hints stay first");
    // The trajectory's SETUP records the recall (a resumed run prompts with the same lessons).
    let (_, t3, _) = f.last_trajectory().await;
    let setup: Value = serde_json::from_str(&t3.setup_json).unwrap();
    assert_eq!(setup["memory"]["lessons"]["avoid"][0], avoid);
    assert_eq!(setup["memory"]["memories"].as_array().unwrap().len(), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn the_auditor_raises_thrashing_from_the_engines_verdict_once() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 5\n", OVERSEER);
    // The same wrong answer again and again: the tests' verdict never moves,
    // so the distance D to the intent never falls.
    let same = squares(&first(3));
    let script: Vec<Scripted> = (0..5).map(|i| writes(&same, &format!("again {i}"))).collect();
    let server = ScriptedServer::start(script).await.unwrap();
    f.run(&suite, &server, unattended(), 1).await;

    let done = f.events("iteration_completed").await;
    let verdicts: Vec<bool> = done.iter().map(|e| !e["thrashing"].is_null()).collect();
    let directives: Vec<&str> = done.iter().map(|e| e["directive"].as_str().unwrap()).collect();
    let first_thrashing =
        verdicts.iter().position(|v| *v).unwrap_or_else(|| panic!("the engine saw no thrashing: {directives:?}"));
    assert!(directives[..=first_thrashing].iter().rev().take(3).all(|d| *d == "break_symmetry"), "{directives:?}");
    let alerts: Vec<Value> = f.events("audit_alert").await.into_iter().filter(|a| a["kind"] == "thrashing").collect();
    assert_eq!(alerts.len(), 1, "once per trajectory: {alerts:?}");
    let verdict = &done[first_thrashing]["thrashing"];
    assert_eq!(alerts[0]["message"], verdict["message"], "the engine's words");
    assert!(verdict["message"].as_str().unwrap().contains("without the distance falling"), "{verdict}");
    assert_eq!(verdict["distance_from"], verdict["distance_to"]);
    server.shutdown().await;
}

#[tokio::test]
async fn an_overseer_that_leaves_a_process_running_raises_one_zombie_alert_and_the_process_dies() {
    let f = Fixture::new("agent-suite").await;
    let pid_file = f.path("helper.pids");
    let overseers = format!(
        "{OVERSEER}      - name: helper\n        kind: custom\n        command: sleep 40 >/dev/null 2>&1 & echo $! >> {} ; echo ready\n        success_pattern: ready\n",
        pid_file.display()
    );
    let suite = f.suite("    budget:\n      max_loops: 4\n", &overseers);
    let server = ScriptedServer::start(vec![passing(6, "six"), passing(10, "ten")]).await.unwrap();
    // Without the sandbox: inside it nothing outlives its command (see
    // process::sandbox's tests), so there would be nothing to report.
    let mut config = quick();
    config.sandbox.enabled = false;
    f.run(&suite, &server, config, 1).await;

    let (run, t, obs) = f.last_trajectory().await;
    assert_eq!((run.status.as_str(), t.status.as_str(), obs.len()), ("complete", "converged", 2), "{:?}", run.error);
    // Every measurement left one (the baseline's, iteration 0, too); each
    // was reported with its pid and killed.
    let left = f.events("process_left_running").await;
    let pids: Vec<i64> =
        std::fs::read_to_string(&pid_file).unwrap().lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(left.len(), 3, "{left:?}");
    for (event, pid) in left.iter().zip(&pids) {
        assert_eq!((event["source"].as_str(), event["name"].as_str()), (Some("overseer"), Some("helper")));
        assert_eq!(event["processes"], json!([{"pid": pid, "command": "sleep 40"}]));
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(state.is_empty() || state.contains(") Z "), "pid {pid} still runs: {state}");
    }
    let zombies: Vec<Value> =
        f.events("audit_alert").await.into_iter().filter(|a| a["kind"] == "zombie_process").collect();
    assert_eq!(zombies.len(), 1, "once per trajectory and command: {zombies:?}");
    let message = zombies[0]["message"].as_str().unwrap();
    assert!(
        message.contains("the overseer `helper`") && message.contains(&format!("pid {} `sleep 40`", pids[0])),
        "{message}"
    );
    // The run's overseer record keeps them too.
    let runs: Value = serde_json::from_str(&obs[0].overseer_runs_json).unwrap();
    let helper = runs.as_array().unwrap().iter().find(|r| r["overseer"] == "helper").unwrap();
    assert_eq!(helper["left_running"][0]["command"], "sleep 40");
    server.shutdown().await;
}

// ----- intervention points (seed 002 §7.3) -------------------------------------

/// The intent verifier's reply: not satisfied, with one gap of the
/// `ambiguity` category.
fn ambiguous(contradiction: &str) -> Scripted {
    let mut v = verdicts(false);
    v["gaps"] = json!([{"description": contradiction, "category": "ambiguity"}]);
    Scripted::json(&v)
}

impl Fixture {
    /// Runs the suite once while playing the person: every question the run
    /// raises is answered as `decide` says, until the run is over. Returns
    /// the questions, as they were asked.
    async fn run_answering(
        &self,
        suite: &Path,
        server: &ScriptedServer,
        agent: AgentConfig,
        mut decide: impl FnMut(&InterventionRow) -> (&'static str, Option<&'static str>),
    ) -> Vec<InterventionRow> {
        let done = std::sync::atomic::AtomicBool::new(false);
        let run = async {
            self.run(suite, server, agent, 1).await;
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        };
        let person = async {
            let mut asked = Vec::new();
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                for q in self.store.interventions(true).await.unwrap() {
                    let (answer, text) = decide(&q);
                    assert!(self.store.answer_intervention(q.id, answer, text).await.unwrap());
                    asked.push(q);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            asked
        };
        tokio::join!(run, person).1
    }

    async fn interventions_of_kind(&self, kind: &str) -> Vec<InterventionRow> {
        self.store.interventions(false).await.unwrap().into_iter().filter(|i| i.kind == kind).collect()
    }

    /// The `intervention_point_reached` events of one point.
    async fn points(&self, point: &str) -> Vec<Value> {
        self.events("intervention_point_reached").await.into_iter().filter(|e| e["point"] == point).collect()
    }
}

fn context(q: &InterventionRow) -> Value {
    serde_json::from_str(&q.context_json).unwrap()
}

/// Every question carries what the inbox shows: what, why, evidence, the proposed action and the proposal.
fn assert_explained(q: &InterventionRow) {
    let c = context(q);
    for key in ["what", "why", "proposed_action", "proposal"] {
        assert!(c[key].as_str().is_some_and(|t| !t.is_empty()), "#{} has no {key}: {c}", q.id);
    }
    assert!(c["evidence"].is_object(), "{c}");
}

/// Every point decides alone except `pause_on`, which keeps the table's mode.
fn attended_only(point: &str) -> AgentConfig {
    let mut c = unattended();
    let i = &mut c.engine.interventions;
    match point {
        "attractor_transition" => i.attractor_transition = None,
        "strategy_escalation" => i.strategy_escalation = None,
        "ambiguity_detected" => i.ambiguity_detected = None,
        "partial_result" => i.partial_result = None,
        other => panic!("no point {other}"),
    }
    c
}

#[tokio::test]
async fn under_thorough_a_cycle_asks_a_person_and_a_rejection_stops_the_trajectory_trapped() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    priority: thorough\n    budget:\n      max_loops: 8\n", OVERSEER);
    let (a, b) = (squares(&failing(&[1, 2, 3, 4])), squares(&failing(&[6, 7, 8])));
    let script: Vec<Scripted> = (0..8).map(|i| writes(if i % 2 == 0 { &a } else { &b }, &format!("try {i}"))).collect();
    let server = ScriptedServer::start(script).await.unwrap();
    // Thorough pauses at every point: anything else is approved, the cycle is refused.
    let asked = f
        .run_answering(&suite, &server, quick(), |q| {
            if q.kind == "attractor_transition" && context(q)["evidence"]["to"] == "limit_cycle" {
                ("reject", None)
            } else {
                ("approve", None)
            }
        })
        .await;

    let cycle = asked.iter().find(|q| q.kind == "attractor_transition").expect("the transition was asked about");
    assert_explained(cycle);
    let c = context(cycle);
    assert_eq!(
        (c["evidence"]["from"].as_str(), c["evidence"]["to"].as_str()),
        (Some("indeterminate"), Some("limit_cycle"))
    );
    assert_eq!(c["evidence"]["sequence"], 3);
    assert!(cycle.subject.contains("cycle of 2 states"), "{}", cycle.subject);
    let (run, t, obs) = f.last_trajectory().await;
    assert_eq!(obs.len(), 4, "stopped where the person said: no fifth attempt");
    assert_eq!(server.requests().len(), 4);
    assert_eq!((run.status.as_str(), t.status.as_str()), ("failed", "trapped"));
    let result: Value = serde_json::from_str(t.result_json.as_deref().unwrap()).unwrap();
    assert!(result["partial_result"]["summary"].as_str().unwrap().contains("a person stopped"), "{result}");
    // The workspace holds the best of the two states (seven right).
    assert_eq!(f.workspace_file(&t, "squares.py"), b);
    let points = f.points("attractor_transition").await;
    assert_eq!((points[0]["mode"].as_str(), points[0]["intervention_id"].as_i64()), (Some("pause"), Some(cycle.id)));
    server.shutdown().await;
}

#[tokio::test]
async fn without_a_hint_a_transition_leaves_one_notice_the_run_does_not_wait_on() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 6\n", OVERSEER);
    let (a, b) = (squares(&failing(&[1, 2, 3, 4])), squares(&failing(&[6, 7, 8])));
    let script: Vec<Scripted> = (0..6).map(|i| writes(if i % 2 == 0 { &a } else { &b }, &format!("try {i}"))).collect();
    let server = ScriptedServer::start(script).await.unwrap();
    // Only the transition keeps the table's mode (no hint: notify).
    let mut config = attended_only("attractor_transition");
    config.engine.decomposition.reactive = false;
    f.run(&suite, &server, config, 1).await;

    let (run, t, obs) = f.last_trajectory().await;
    assert_ne!(t.status, "paused");
    assert!(matches!(run.status.as_str(), "partial" | "failed"), "{}", run.status);
    let cycling = obs.iter().filter(|o| o.attractor == "limit_cycle").count();
    assert!(cycling >= 2, "the cycle lasted: {:?}", obs.iter().map(|o| &o.attractor).collect::<Vec<_>>());
    let notices = f.interventions_of_kind("attractor_transition").await;
    let told: Vec<String> =
        notices.iter().map(|n| context(n)["evidence"]["to"].as_str().unwrap().to_string()).collect();
    assert_eq!(told.iter().filter(|t| *t == "limit_cycle").count(), 1, "told once: {told:?}");
    assert!(notices.iter().all(|n| n.status == "notice" && n.answer.is_none()), "{notices:?}");
    assert_explained(&notices[0]);
    assert!(context(&notices[0])["proposal"].as_str().unwrap().contains("nothing waits"));
    assert!(f.store.interventions(true).await.unwrap().is_empty(), "nothing was asked");
    let points = f.points("attractor_transition").await;
    assert_eq!(points.len(), notices.len());
    assert!(points.iter().all(|p| p["mode"] == "notify"));

    // The inbox lists the notice apart from the questions, and it can be dismissed once.
    let service = attractor::service::Service::open(attractor::service::ServiceConfig {
        db_path: f.path("attractor.db"),
        settings_path: f.path("settings.json"),
        runs_root: Some(f.path("runs")),
        env: std::sync::Arc::new(|_| None),
    })
    .await
    .unwrap();
    let inbox = service.interventions().await.unwrap();
    assert!(inbox.pending.is_empty());
    assert_eq!(inbox.notices.len(), notices.len());
    assert_eq!(service.suites().await.unwrap()[0].status, attractor::service::types::SuiteStatus::Idle);
    let id = notices[0].id;
    let answer =
        attractor::service::types::AnswerRequest { answer: attractor::service::types::AnswerKind::Approve, text: None };
    let refused = service.answer(id, &answer).await.unwrap_err().to_string();
    assert!(refused.contains("is a notice"), "{refused}");

    let cli = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(f.path("attractor.db"))
            .args(args)
            .output()
            .unwrap()
    };
    let listed = String::from_utf8_lossy(&cli(&["interventions"]).stdout).into_owned();
    assert!(listed.contains(&format!("#{id}  [attractor_transition]")), "{listed}");
    assert!(listed.contains("notice: nothing waits on it") && listed.contains(&format!("attractor dismiss {id}")));
    let out = cli(&["answer", &id.to_string(), "approve"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("attractor dismiss {id}")));
    let out = cli(&["dismiss", &id.to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = cli(&["dismiss", &id.to_string()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("already dismissed"));
    let inbox = service.interventions().await.unwrap();
    assert_eq!(inbox.notices.len(), notices.len() - 1);
    let settled = inbox.answered.iter().find(|i| i.id == id).expect("kept as history");
    assert!(
        settled.status == attractor::service::types::InterventionStatus::Dismissed && settled.answered_at.is_some()
    );
    service.shutdown().await;
    server.shutdown().await;
}

/// Three stalled attempts, the review's reply amending the specification,
/// then the right answer: with decomposition off, a low stall escalates to
/// an architect review.
fn review_script() -> Vec<Scripted> {
    let mut script: Vec<Scripted> = [2, 3, 5].iter().map(|k| wrong(*k)).collect();
    script.push(Scripted::json(&json!({
        "summary": "the task never says what to do outside 1..10",
        "edits": [{"path": "squares.py", "action": "write", "content": squares(&[]).replace(": 0,", ": 6,")}],
        "amendments": ["square(n) is only called with 1 <= n <= 10."],
    })));
    script.push(passing(10, "all"));
    script
}

#[tokio::test]
async fn a_strategy_escalation_waits_across_a_restart_and_a_rejection_picks_a_strategy_that_is_none() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 6\n", OVERSEER);
    let server = ScriptedServer::start(vec![wrong(2), wrong(3), wrong(5), passing(10, "all")]).await.unwrap();
    let mut config = quick();
    config.engine.decomposition.reactive = false;

    // First process: runs until it pauses on the escalation, then is stopped.
    let (stop, cancel) = watch::channel(false);
    let watcher = async {
        until("the question", || async { !f.store.interventions(true).await.unwrap().is_empty() }).await;
        stop.send(true).unwrap();
    };
    let (summary, ()) = tokio::join!(f.run_with_cancel(&suite, &server, config.clone(), 1, cancel), watcher);
    assert!(summary.interrupted);
    let pending = f.store.interventions(true).await.unwrap();
    assert_eq!(pending.len(), 1);
    let question = pending[0].clone();
    assert_eq!(question.kind, "strategy_escalation");
    assert_explained(&question);
    let c = context(&question);
    assert_eq!(c["proposed_action"], "architect_review");
    assert!(c["what"].as_str().unwrap().contains("stalled at level 0.45"), "{c}");
    assert!(question.subject.contains("architect review"), "{}", question.subject);
    let (run1, t1, obs) = f.last_trajectory().await;
    assert_eq!((t1.status.as_str(), t1.pending_intervention_id, obs.len()), ("paused", Some(question.id), 3));
    assert_eq!(obs[2].next_strategy.as_deref(), Some("architect_review"));
    // Before it, the stall itself was told, without waiting (no hint: notify).
    let told = f.interventions_of_kind("attractor_transition").await;
    assert_eq!((told.len(), told[0].status.as_str()), (1, "notice"));

    // Second process: re-attaches to the same question; `attractor answer` refuses the review.
    let db = f.path("attractor.db");
    let answerer = async {
        until("the resumed run to adopt the trajectory", || async {
            f.store.trajectory(&t1.id).await.unwrap().is_some_and(|t| t.run_id != run1.id)
        })
        .await;
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(&db)
            .args(["answer", &question.id.to_string(), "reject"])
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let (summary, ()) = tokio::join!(f.run(&suite, &server, config, 1), answerer);
    assert!(!summary.interrupted && summary.epochs[0].resumed);

    assert_eq!(f.interventions_of_kind("strategy_escalation").await.len(), 1, "not asked again");
    let (run2, t2, obs) = f.last_trajectory().await;
    assert_eq!(t2.id, t1.id);
    assert_eq!((run2.status.as_str(), t2.status.as_str()), ("complete", "converged"), "{:?}", run2.error);
    assert_eq!(obs.len(), 4);
    assert!(
        ["retry_with_feedback", "retry_augmented", "focused_repair"].contains(&obs[3].strategy.as_str()),
        "no escalation instead of the review: {}",
        obs[3].strategy
    );
    assert!(user_message(&server, 3).contains(&format!("Strategy for this attempt: {}", obs[3].strategy)));
    let state: Value = serde_json::from_str(&t2.state_json).unwrap();
    assert_eq!(state["trajectory"]["declined"], json!(["architect_review"]));
    // The first run stays inspectable: its trajectory, every iteration of it.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
        .arg("--db")
        .arg(&db)
        .args(["trajectory", &run1.id.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("run {} continued its trajectory", run2.id)), "{text}");
    assert!(text.contains("converged, 4 iterations"), "{text}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_strategy_escalation_in_notify_mode_goes_ahead_and_leaves_a_notice() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 6\n", OVERSEER);
    let server = ScriptedServer::start(review_script()).await.unwrap();
    let mut config = quick();
    config.engine.decomposition.reactive = false;
    config.engine.interventions.strategy_escalation = Some(InterventionMode::Notify);
    f.run(&suite, &server, config, 1).await;

    let (run, _, obs) = f.last_trajectory().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    assert_eq!(obs[3].strategy, "architect_review");
    assert!(f.store.interventions(true).await.unwrap().is_empty());
    let notices = f.interventions_of_kind("strategy_escalation").await;
    assert_eq!(notices.len(), 1);
    assert_eq!(
        (notices[0].status.as_str(), context(&notices[0])["proposed_action"].as_str()),
        ("notice", Some("architect_review"))
    );
    assert_explained(&notices[0]);
    server.shutdown().await;
}

#[tokio::test]
async fn under_fast_an_escalation_is_decided_alone_with_only_an_event() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    priority: fast\n    budget:\n      max_loops: 6\n", OVERSEER);
    let server = ScriptedServer::start(review_script()).await.unwrap();
    let mut config = quick();
    config.engine.decomposition.reactive = false;
    f.run(&suite, &server, config, 1).await;

    let (run, _, obs) = f.last_trajectory().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    assert_eq!(obs[3].strategy, "architect_review");
    assert!(f.store.interventions(false).await.unwrap().is_empty(), "fast asks and tells nothing here");
    let points = f.points("strategy_escalation").await;
    assert_eq!(points.len(), 1);
    assert_eq!((points[0]["mode"].as_str(), points[0]["intervention_id"].as_i64()), (Some("auto"), None));
    assert!(f.points("attractor_transition").await.iter().all(|p| p["mode"] == "auto"));
    server.shutdown().await;
}

const AMBIGUITY: &str = "Should square(0) be 0 or an error?";
const CLARIFICATION: &str = "square(0) is never called: only n from 1 to 10 matter.";

#[tokio::test]
async fn an_ambiguity_is_asked_once_and_a_hint_becomes_an_amendment_every_later_prompt_carries() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 6\n", OVERSEER);
    let server = ScriptedServer::start(vec![
        passing(6, "six"),
        ambiguous(AMBIGUITY),
        passing(7, "seven"),
        passing(8, "eight"),
        // The verifier names the same contradiction again, written differently.
        ambiguous("should square(0)  be 0 or an ERROR?"),
        passing(10, "all ten"),
    ])
    .await
    .unwrap();
    let mut config = attended_only("ambiguity_detected");
    config.verifier.enabled = true;
    let asked = f.run_answering(&suite, &server, config, |_| ("hint", Some(CLARIFICATION))).await;

    assert_eq!(asked.len(), 1, "asked once: {asked:?}");
    let q = &asked[0];
    assert_eq!(q.kind, "ambiguity_detected");
    assert_explained(q);
    assert_eq!(context(q)["evidence"]["contradictions"], json!([AMBIGUITY]));
    assert_eq!(context(q)["proposed_action"], "clarify");
    let (run, t, obs) = f.last_trajectory().await;
    assert_eq!((run.status.as_str(), obs.len()), ("complete", 4), "{:?}", run.error);
    // Request 0 executed, 1 verified; every later prompt carries the clarification.
    assert!(!user_message(&server, 0).contains(CLARIFICATION));
    for i in [2, 3, 5] {
        assert!(user_message(&server, i).contains(CLARIFICATION), "request {i}: {}", user_message(&server, i));
    }
    // ... and the verifier judged against the amended specification.
    assert!(user_message(&server, 4).contains(CLARIFICATION), "{}", user_message(&server, 4));
    let state: Value = serde_json::from_str(&t.state_json).unwrap();
    let spec = &state["trajectory"]["specification"];
    let last = spec["amendments"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["description"].as_str(), last["source"].as_str()), (Some(CLARIFICATION), Some("user_hint")));
    assert!(last["rationale"].as_str().unwrap().contains(AMBIGUITY), "{last}");
    assert!(spec["effective"]["clarifications"].as_array().unwrap().contains(&json!(CLARIFICATION)));
    let detected = f.events("specification_ambiguity_detected").await;
    assert_eq!(detected.len(), 1);
    assert_eq!(detected[0]["contradictions"], json!([AMBIGUITY]));
    assert!(detected[0]["suggested_clarifications"][0].as_str().unwrap().contains("square(0)"));
    server.shutdown().await;
}

#[tokio::test]
async fn an_ambiguity_in_notify_mode_leaves_a_notice_and_the_specification_as_it_stands() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 4\n", OVERSEER);
    let server =
        ScriptedServer::start(vec![passing(6, "six"), ambiguous(AMBIGUITY), passing(10, "all ten")]).await.unwrap();
    let mut config = unattended();
    config.verifier.enabled = true;
    config.engine.interventions.ambiguity_detected = Some(InterventionMode::Notify);
    f.run(&suite, &server, config, 1).await;

    let (run, t, _) = f.last_trajectory().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    let notices = f.interventions_of_kind("ambiguity_detected").await;
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].status, "notice");
    assert_eq!(context(&notices[0])["evidence"]["contradictions"], json!([AMBIGUITY]));
    let state: Value = serde_json::from_str(&t.state_json).unwrap();
    let amendments = state["trajectory"]["specification"]["amendments"].as_array().unwrap();
    assert_eq!(amendments.len(), 1, "only the task's own hint: {amendments:?}");
    assert_eq!(f.events("specification_ambiguity_detected").await.len(), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn under_fast_an_ambiguity_is_only_an_event() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    priority: fast\n    budget:\n      max_loops: 4\n", OVERSEER);
    let server =
        ScriptedServer::start(vec![passing(6, "six"), ambiguous(AMBIGUITY), passing(10, "all ten")]).await.unwrap();
    let mut config = quick();
    config.verifier.enabled = true;
    f.run(&suite, &server, config, 1).await;

    let (run, _, _) = f.last_trajectory().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    assert!(f.store.interventions(false).await.unwrap().is_empty());
    assert_eq!(f.events("specification_ambiguity_detected").await.len(), 1);
    let points = f.points("ambiguity_detected").await;
    assert_eq!((points.len(), points[0]["mode"].as_str()), (1, Some("auto")));
    server.shutdown().await;
}

#[tokio::test]
async fn under_fast_a_partial_result_is_the_one_question_and_a_rejection_ends_exhausted() {
    let f = Fixture::new("agent-suite").await;
    // Below fast's acceptance (0.85), above the partial threshold (0.7).
    let suite = f.suite("    priority: fast\n    budget:\n      max_loops: 3\n", OVERSEER);
    let server = ScriptedServer::start(vec![passing(7, "7"), passing(6, "6"), passing(6, "6 again")]).await.unwrap();
    let asked = f.run_answering(&suite, &server, quick(), |_| ("reject", None)).await;

    assert_eq!(asked.len(), 1, "{asked:?}");
    let q = &asked[0];
    assert_eq!(q.kind, "partial_result");
    assert_explained(q);
    let c = context(q);
    assert_eq!(c["proposed_action"], "accept_partial");
    assert_eq!(c["evidence"]["best_observation"]["sequence"], 0);
    let gaps = c["evidence"]["remaining_gaps"].as_array().unwrap();
    assert!(gaps.iter().any(|g| g["description"].as_str().unwrap().contains("test_8")), "{c}");
    assert!(q.subject.contains("accept its best result as partial"), "{}", q.subject);
    let (run, t, _) = f.last_trajectory().await;
    assert_eq!((run.status.as_str(), t.status.as_str()), ("failed", "exhausted"));
    assert_eq!(server.requests().len(), 3);
    assert_eq!(f.events("trajectory_exhausted").await.len(), 1);
    assert!(f.events("trajectory_converged").await.is_empty());
    server.shutdown().await;
}

#[tokio::test]
async fn a_hint_to_a_partial_result_buys_one_more_extension_that_carries_it() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 3\n", OVERSEER);
    let server =
        ScriptedServer::start(vec![passing(8, "8"), passing(7, "7"), passing(7, "7 again"), passing(10, "10")])
            .await
            .unwrap();
    let hint = "Return n * n instead of the table.";
    let asked = f.run_answering(&suite, &server, attended_only("partial_result"), |_| ("hint", Some(hint))).await;

    assert_eq!(asked.iter().map(|q| q.kind.as_str()).collect::<Vec<_>>(), vec!["partial_result"]);
    let (run, t, obs) = f.last_trajectory().await;
    assert_eq!((run.status.as_str(), t.status.as_str(), obs.len()), ("complete", "converged", 4), "{:?}", run.error);
    assert!(user_message(&server, 3).contains(hint), "{}", user_message(&server, 3));
    let granted = f.events("budget_extension_granted").await;
    assert_eq!((granted.len(), granted[0]["by"].as_str()), (1, Some("person")));
    server.shutdown().await;
}

#[tokio::test]
async fn a_partial_result_in_notify_mode_is_accepted_with_a_notice() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 3\n", OVERSEER);
    let server = ScriptedServer::start(vec![passing(8, "8"), passing(7, "7"), passing(7, "7 again")]).await.unwrap();
    let mut config = unattended();
    config.engine.interventions.partial_result = Some(InterventionMode::Notify);
    f.run(&suite, &server, config, 1).await;

    let (run, t, _) = f.last_trajectory().await;
    assert_eq!((run.status.as_str(), t.status.as_str()), ("partial", "accepted_partial"));
    let notices = f.interventions_of_kind("partial_result").await;
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].status, "notice");
    assert!(notices[0].subject.contains("ended with a partial result at level 0.89"), "{}", notices[0].subject);
    assert_explained(&notices[0]);
    server.shutdown().await;
}
