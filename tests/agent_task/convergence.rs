//! The convergence engine at work: converging, limit cycles, plateaus and fresh
//! starts, regressions reverted, security findings, budgets running out, edits
//! refused at the gate, overseers that time out.

use super::*;

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
    assert_eq!((obs[0].record.level, obs[1].record.level), (0.55 * 0.6 + 0.45, 1.0));
    assert_eq!(obs[1].record.loop_control, "converged");
    assert!(obs[1].record.delta.unwrap() > 0.0);
    assert_eq!(f.workspace_file(&t, "squares.py"), squares(&first(10)));
    assert_eq!(obs[0].record.verdict_summary, "6 of 10 tests pass");
    assert!(!obs[0].record.directive.is_empty() && !obs[0].record.rationale.is_empty());

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
    assert_eq!(scores(&run)["trajectory_id"], t.record.id);

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
    let seen: Vec<(&str, &str, &str)> = obs
        .iter()
        .map(|o| (o.record.strategy.as_str(), o.record.attractor.as_str(), o.record.verdict_summary.as_str()))
        .collect();
    let at =
        obs.iter().position(|o| o.record.attractor == "limit_cycle").unwrap_or_else(|| panic!("no cycle: {seen:?}"));
    assert_eq!(at, 3, "two laps of A, B: {:?}", obs.iter().map(|o| &o.record.attractor).collect::<Vec<_>>());
    let next = obs[at].record.next_strategy.clone().expect("the loop goes on");
    assert!(["reframe", "alternative_approach"].contains(&next.as_str()), "an exploration strategy, got {next}");
    let in_cycle: Vec<&str> = obs[..=at].iter().map(|o| o.record.strategy.as_str()).collect();
    assert!(!in_cycle.contains(&next.as_str()), "{next} led into the cycle: {in_cycle:?}");
    // The escape was executed: the next observation used it, and its prompt said so.
    assert_eq!(obs[at + 1].record.strategy, next);
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
    let fresh = obs.iter().position(|o| o.record.strategy == "fresh_start").expect("a fresh start");
    assert!(obs[..fresh].iter().any(|o| o.record.attractor == "plateau"), "it stalled first");
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
    let at = obs.iter().position(|o| o.record.strategy == "revert_and_branch").expect("a revert");
    assert_eq!(obs[at - 1].record.attractor, "divergent");
    let decision: Value = serde_json::from_str(&obs[at - 1].record.decision_json).unwrap();
    assert_eq!(decision["next"]["revert_to"]["sequence"], 1, "the best observation (8 right)");
    assert_eq!(git_show(&t.record.workspace_dir, &obs[at].record.commit_id, "squares.py"), squares(&first(8)));
    assert_eq!(obs[at].record.level, obs[1].record.level);
    let reverted = f.events("reverted").await;
    assert_eq!(
        (reverted[0]["to_sequence"].as_u64(), reverted[0]["commit"].as_str()),
        (Some(1), Some(obs[1].record.commit_id.as_str()))
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
    assert_eq!(obs[1].record.level, 1.0, "every test passes");
    assert!(
        obs[1].record.verdict_summary.contains("security 0 critical / 1 high"),
        "{}",
        obs[1].record.verdict_summary
    );
    assert_ne!(obs[1].record.loop_control, "converged", "a new finding vetoes convergence");
    assert!(obs[1].record.delta.unwrap() <= 0.0, "no credit: {:?}", obs[1].record.delta);
    let decision: Value = serde_json::from_str(&obs[1].record.decision_json).unwrap();
    assert_ne!(decision["bandit_update"], "success");
    assert_eq!(obs[2].record.loop_control, "converged");
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
    assert_eq!((obs[0].record.applied_edits, obs[0].record.rejected_edits), (1, 2));
    let execution: Value = serde_json::from_str(&obs[0].record.execution_json).unwrap();
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
    let runs: Value = serde_json::from_str(&obs[0].record.overseer_runs_json).unwrap();
    assert_eq!(runs[0]["attempts"], 2, "{runs}");
    assert_eq!(obs[0].record.loop_control, "converged", "the retry measured the state");
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
    let signals: Value = serde_json::from_str(&obs[0].record.signals_json).unwrap();
    let hang = signals["verdicts"].as_array().unwrap().iter().find(|v| v["overseer"] == "hang").unwrap().clone();
    assert_eq!(hang["failure_class"], "environmental", "{hang}");
    let runs: Value = serde_json::from_str(&obs[0].record.overseer_runs_json).unwrap();
    assert_eq!(runs[0]["attempts"], 3, "tried again twice: {runs}");
    assert!(obs.iter().all(|o| o.record.loop_control != "converged"), "an unmeasured state is never accepted");
    assert!(obs[0].record.verdict_summary.contains("could not run: hang"), "{}", obs[0].record.verdict_summary);
    server.shutdown().await;
}
