//! Convergence memory (every trajectory leaves one; the next of its category is
//! primed with it) and the auditor's alerts (thrashing, processes left running).

use super::*;

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
        memories.iter().map(|m| (m.memory.outcome.as_str(), m.memory.status.as_str(), m.memory.iterations)).collect();
    assert_eq!(outcomes[0], ("success", "converged", 1));
    assert_eq!((outcomes[1].0, outcomes[1].2), ("failure", 3), "{outcomes:?}");
    assert_eq!(outcomes[2], ("success", "converged", 2));
    let first: Value = serde_json::from_str(&memories[2].memory.details_json).unwrap();
    let runs = f.runs().await;
    let obs1 = f.store.observations_of_trajectory(&format!("run-{}", runs[0].id)).await.unwrap();
    assert_eq!(first["effective_strategies"], json!([obs1[1].record.strategy]), "{first}");
    assert_eq!(
        first["decisive_signals"][0],
        format!("tests 4→10 of 10 after {} (observation 1)", obs1[1].record.strategy)
    );
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
    assert_eq!(
        memories[2].memory.signature,
        "expected implement returns say square squared squares test_squares tests unit"
    );
    assert!(memories[2].memory.content.starts_with("Task type 'python-functions' converged in 2 iterations"));
    let failed: Value = serde_json::from_str(&memories[1].memory.details_json).unwrap();
    assert_eq!(failed["status"], "exhausted", "{failed}");
    assert_eq!(failed["failure_causes"][0], "the budget ran out below the partial threshold", "{failed}");
    assert_eq!(failed["terminal_attractor"], "plateau", "{failed}");
    assert_eq!(failed["effective_strategies"], json!([]), "two tests passing throughout: {failed}");
    let gaps = failed["persistent_gaps"].as_array().unwrap();
    assert!(gaps.contains(&json!("test:test_squares.SquareTest.test_3")), "{failed}");
    assert!(!gaps.contains(&json!("test:test_squares.SquareTest.test_2")), "{failed}");
    assert_eq!(memories[1].memory.relevance, 0.9);
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
    assert_eq!(recalled[1]["nudged"], json!([obs1[1].record.strategy]));
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
    let setup: Value = serde_json::from_str(&t3.record.setup_json).unwrap();
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
    let runs: Value = serde_json::from_str(&obs[0].record.overseer_runs_json).unwrap();
    let helper = runs.as_array().unwrap().iter().find(|r| r["overseer"] == "helper").unwrap();
    assert_eq!(helper["left_running"][0]["command"], "sleep 40");
    server.shutdown().await;
}
