//! What steers a trajectory from outside the engine: the bandit state a category
//! keeps, the prompt artifacts, the strategy templates, the intent verifier and its rubric.

use super::*;

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
    let credited = &obs1[1].record.strategy;
    let context = serde_json::from_str::<Value>(&obs1[1].record.decision_json).unwrap();
    assert_eq!(context["bandit_update"], "success", "{context}");
    let arms = &after_one["arms"];
    let alpha: f64 = arms.as_object().unwrap().values().filter_map(|a| a[credited]["alpha"].as_f64()).sum();
    assert_eq!(alpha, 2.0, "{arms}");
    assert!(f.store.bandit_state("general").await.unwrap().is_none());

    // The next epoch's trajectory starts from what the first one learned, and adds to it.
    f.run(&suite, &server, quick(), 1).await;
    let (_, t2, _) = f.last_trajectory().await;
    assert_ne!(t1.record.id, t2.record.id);
    let state: Value = serde_json::from_str(&t2.record.state_json).unwrap();
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
    let v: Value = serde_json::from_str(obs[0].record.verification_json.as_deref().unwrap()).unwrap();
    assert_eq!(v["verdicts"][1]["criterion"], "intent:computes rather than looks up");
    assert_eq!(v["verdicts"][1]["mode"], "plausible");
    assert_eq!(v["verdicts"][1]["failure_class"], "logical");
    assert!(
        obs[0].record.verdict_summary.contains("intent not satisfied (1 of 2 criteria"),
        "{}",
        obs[0].record.verdict_summary
    );
    // The overseers outrank the verifier: every test passes, so it converged.
    assert_eq!(obs[0].record.loop_control, "converged");
    let scores: Value =
        serde_json::from_str(&f.store.epoch_runs_of_suite(run.suite_id).await.unwrap()[0].scores_json).unwrap();
    assert_eq!(scores["critique_score"], 0.5, "{scores}");
    server.shutdown().await;
}
