//! A trajectory across restarts and people: a budget extension answered after a
//! restart, a trapped trajectory reopened by a hint, blocked tools, the CLI, an
//! architect review, a workspace that vanished.

use super::*;

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
    assert_eq!(question.raised.kind, "budget_extension");
    let context: Value = serde_json::from_str(&question.raised.context_json).unwrap();
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
            f.store.trajectory(&t1.record.id).await.unwrap().is_some_and(|t| t.record.run_id != run1.id)
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
    assert_eq!(t2.record.id, t1.record.id, "the same trajectory went on");
    assert_eq!((run2.status.as_str(), t2.status.as_str()), ("complete", "converged"), "{:?}", run2.error);
    let sequences: Vec<i64> = obs.iter().map(|o| o.record.sequence).collect();
    assert_eq!(sequences, vec![0, 1, 2, 3, 4]);
    assert_eq!(obs[2].record.loop_control, "extension_requested");
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
        assert_eq!(q.raised.kind, "human_escalation");
        let context: Value = serde_json::from_str(&q.raised.context_json).unwrap();
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
    let trapped = obs.iter().position(|o| o.record.loop_control == "trapped").expect("trapped");
    let reopened = &obs[trapped + 1];
    assert_eq!(reopened.record.strategy, "fresh_start");
    assert!(reopened.record.forced);
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
        .find(|o| serde_json::from_str::<Value>(&o.record.execution_json).unwrap()["status"]["status"] == "rejected")
        .expect("a reply using a blocked tool was refused");
    assert_eq!(refused.record.lines_changed, 0, "nothing of it was written");
    let prompt = user_message(&server, refused.record.sequence as usize);
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
    let seen: Vec<(&str, &str)> =
        obs.iter().map(|o| (o.record.strategy.as_str(), o.record.attractor.as_str())).collect();
    let review = obs.iter().position(|o| o.record.strategy == "architect_review").unwrap_or_else(|| panic!("{seen:?}"));
    assert_eq!(obs[review - 1].record.attractor, "plateau");
    let review_prompt = user_message(&server, review);
    assert!(review_prompt.contains("## Specification review"), "{review_prompt}");
    assert!(review_prompt.contains("## Plan before you change anything\n\nPlan before you act."), "{review_prompt}");
    assert!(!user_message(&server, 0).contains("Plan before you act."), "repairs get no planning preamble");
    let after = user_message(&server, review + 1);
    assert!(after.contains("Amendments made since"), "{after}");
    assert!(after.contains("AMENDMENT: square(n) is only called with 1 <= n <= 10."), "{after}");
    let state: Value = serde_json::from_str(&t.record.state_json).unwrap();
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
    std::fs::remove_dir_all(&old.record.workspace_dir).unwrap();

    f.run(&suite, &server, quick(), 1).await;
    let old = f.store.trajectory(&old.record.id).await.unwrap().unwrap();
    assert_eq!(old.status, "failed");
    assert!(old.result_json.unwrap().contains("could not be resumed"));
    let (run, new, obs) = f.last_trajectory().await;
    assert_ne!(new.record.id, old.record.id);
    assert_eq!((run.status.as_str(), new.status.as_str(), obs.len()), ("complete", "converged", 1));
    server.shutdown().await;
}
