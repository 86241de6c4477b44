//! `optimize` tasks through the outer loop: the coordinator's run becomes a
//! loss, telemetry is written and shown, and tier 3 — a person — is asked
//! when a task finds nothing feasible or the model tier keeps failing, and
//! their answer steers the task's next run.

mod common;

use std::time::Duration;

use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::llm::{LlmClient, LlmConfig};
use attractor::outer::OptimizerKind;
use attractor::store::Store;
use common::{Env, count};
use serde_json::Value;

async fn metrics_of_runs(store: &Store, task: &str) -> Vec<Value> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", store.path().display())).await.unwrap();
    let rows: Vec<String> = sqlx::query_scalar("SELECT result_json FROM runs WHERE task_name = ? ORDER BY id")
        .bind(task)
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    rows.iter().map(|r| serde_json::from_str(r).unwrap()).collect()
}

#[tokio::test]
async fn builtin_problems_run_under_the_coordinator_and_become_losses() {
    let env = Env::new().await;
    let suite = env.suite(
        "n.yaml",
        "name: numeric\ntasks:\n  - name: g11\n    problem: g11\n    budget: { max_evaluations: 3000 }\n  - name: g24\n    problem: g24\n    budget: { max_evaluations: 3000 }\n",
    );
    let summary = env.run(&suite, env.config(1, OptimizerKind::Baseline)).await;
    let e = &summary.epochs[0];
    assert!(e.mean_loss.unwrap() < 0.2, "both problems are easy: {e:?}");
    let runs = env.store.runs_of_epoch(e.epoch_id).await.unwrap();
    for r in &runs {
        assert_eq!(r.kind, "optimize");
        assert_eq!(r.status, "complete", "{r:?}");
        let m: Value = serde_json::from_str(r.result_json.as_deref().unwrap()).unwrap();
        assert!(m["evaluations"].as_u64().unwrap() <= 3000);
        assert!(m["best"]["max_violation"].as_f64().unwrap() <= 1e-6, "reported at the strict tolerance");
        let exp = env.store.experiment_of_run(r.id).await.unwrap().expect("an experiment per run");
        let telemetry = env.store.telemetry_of_experiment(exp).await.unwrap();
        assert_eq!(telemetry.len() as u64, m["steps"].as_u64().unwrap(), "one telemetry row per step");
        assert!(std::path::Path::new(&r.run_dir).join("optimize_result.json").exists());
    }
}

#[tokio::test]
async fn the_external_example_is_solved_through_its_persistent_evaluator() {
    // examples/external.suite.yaml: the cantilever beam from a Python
    // process answering JSON lines with exact gradients.
    let env = Env::new().await;
    let suite = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/external.suite.yaml");
    let summary = env.run(&suite, env.config(1, OptimizerKind::Baseline)).await;
    let runs = env.store.runs_of_epoch(summary.epochs[0].epoch_id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, "complete", "{:?}", runs[0]);
    let m: Value = serde_json::from_str(runs[0].result_json.as_deref().unwrap()).unwrap();
    let best = m["best"]["objective"].as_f64().unwrap();
    assert!(m["best"]["max_violation"].as_f64().unwrap() <= 1e-6, "{m}");
    assert!((best - 1.339956).abs() / 1.339956 < 1e-4, "the beam's optimum is 1.339956, got {best}");
    assert!(m["evaluations"].as_u64().unwrap() <= 3000);
}

#[tokio::test]
async fn an_unknown_problem_is_refused_before_anything_runs() {
    let env = Env::new().await;
    let err = attractor::suite::load(&env.suite("u.yaml", "name: u\ntasks:\n  - name: x\n    problem: g99\n"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("u.yaml:4:14") && err.contains("`g99` is neither a built-in problem nor a file"), "{err}");
    assert!(err.contains("g01, g02"), "the built-in names: {err}");
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM runs").await, 0);
}

/// An external problem nobody can satisfy: g1 = 1 − x² − y² with both in [−0.5, 0.5].
fn infeasible_suite(env: &Env) -> std::path::PathBuf {
    // awk starts in a millisecond, so hundreds of evaluations stay cheap.
    std::fs::write(
        env.path("eval.sh"),
        r#"awk '{ match($0, /\[[^]]*\]/); split(substr($0, RSTART + 1, RLENGTH - 2), v, ","); x = v[1] + 0; y = v[2] + 0;
  printf "{\"objective\": %.17g, \"constraints\": {\"g1\": %.17g}}\n", x + y, 1 - x * x - y * y }'
"#,
    )
    .unwrap();
    std::fs::write(
        env.path("impossible.yaml"),
        "name: impossible\ncommand: sh eval.sh\ntimeout: 10\nvariables:\n  - { name: x, min: -0.5, max: 0.5 }\n  - { name: y, min: -0.5, max: 0.5 }\ninequalities: [g1]\n",
    )
    .unwrap();
    env.suite(
        "i.yaml",
        "name: hopeless\ntasks:\n  - name: ring\n    problem: impossible.yaml\n    budget: { max_evaluations: 150 }\n",
    )
}

#[tokio::test]
async fn a_task_without_a_feasible_point_asks_a_person_and_an_approval_doubles_its_budget() {
    let env = Env::new().await;
    let suite = infeasible_suite(&env);
    let summary = env.run(&suite, env.config(1, OptimizerKind::Baseline)).await;
    let run = &env.store.runs_of_epoch(summary.epochs[0].epoch_id).await.unwrap()[0];
    assert_eq!(run.status, "failed");

    let pending = env.store.interventions(true).await.unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    let i = &pending[0];
    assert_eq!(i.raised.kind, "human_escalation");
    assert_eq!(i.raised.task_name.as_deref(), Some("ring"));
    assert!(i.raised.subject.contains("found no feasible point"), "{}", i.raised.subject);
    let context: Value = serde_json::from_str(&i.raised.context_json).unwrap();
    for key in ["what", "why", "evidence", "proposal"] {
        assert!(context.get(key).is_some(), "context lacks `{key}`: {context}");
    }
    assert_eq!(context["proposed_action"], "double_budget");
    // The question is announced on the bus (the app's badge, the desktop notification) with its suite.
    assert_eq!(i.raised.suite_id, Some(run.suite_id));
    let announced = format!(
        "SELECT COUNT(*) FROM events WHERE kind = 'intervention_raised' AND json_extract(payload_json, \
         '$.intervention_id') = {} AND json_extract(payload_json, '$.run_id') = {}",
        i.id, run.id
    );
    assert_eq!(count(&env.store, &announced).await, 1);

    assert!(env.store.answer_intervention(i.id, "approve", None).await.unwrap());
    assert!(!env.store.answer_intervention(i.id, "reject", None).await.unwrap(), "answers are never overwritten");
    env.run(&suite, env.config(1, OptimizerKind::Baseline)).await;
    let budgets: Vec<u64> =
        metrics_of_runs(&env.store, "ring").await.iter().map(|m| m["budget"].as_u64().unwrap()).collect();
    assert_eq!(budgets, [150, 300], "the approved escalation doubled the next run's budget");
}

#[tokio::test]
async fn a_failing_model_tier_escalates_and_an_approval_turns_it_off_for_the_task() {
    let env = Env::new().await;
    let server = ScriptedServer::start_repeating(vec![], Scripted::server_error()).await.unwrap();
    let client = || {
        LlmClient::new(
            LlmConfig::new(server.base_url(), "flaky-model")
                .with_retries(0, Duration::from_millis(5))
                .with_timeout(Duration::from_secs(5)),
        )
        .unwrap()
    };
    let suite = attractor::suite::load(&env.suite(
        "l.yaml",
        "name: llm\ntasks:\n  - name: g11\n    problem: g11\n    budget: { max_evaluations: 1500 }\n",
    ))
    .unwrap();
    let run = |client: LlmClient| {
        let suite = suite.clone();
        let env = &env;
        async move {
            let (_tx, rx) = tokio::sync::watch::channel(false);
            attractor::outer::SuiteRunner::new(
                env.store.clone(),
                env.registry().await,
                attractor::bus::Bus::new(),
                suite,
                env.config(1, OptimizerKind::Baseline),
                rx,
            )
            .with_llm(client)
            .run()
            .await
            .unwrap()
        }
    };
    run(client()).await;
    let m = &metrics_of_runs(&env.store, "g11").await[0];
    assert!(m["llm_calls"].as_u64().unwrap() >= 3, "{m}");
    assert_eq!(m["llm_calls"], m["llm_failures"]);
    let exp = env.store.experiment_of_run(env.store.runs_of_epoch(1).await.unwrap()[0].id).await.unwrap().unwrap();
    let rows = env.store.telemetry_of_experiment(exp).await.unwrap();
    assert!(rows.iter().any(|r| r.llm_call_made && r.directive_source == "fallback"), "failed calls fall back");

    let pending = env.store.interventions(true).await.unwrap();
    let i = pending.iter().find(|i| i.raised.subject.contains("LLM supervision failed")).expect("an escalation");
    assert!(env.store.answer_intervention(i.id, "approve", None).await.unwrap());

    let before = server.requests().len();
    run(client()).await;
    assert_eq!(server.requests().len(), before, "approved: the task no longer asks the model");
    let m = &metrics_of_runs(&env.store, "g11").await[1];
    assert_eq!(m["llm_calls"], 0);
}

#[tokio::test]
async fn a_broken_evaluator_fails_only_its_own_run() {
    let env = Env::new().await;
    std::fs::write(
        env.path("garbage.yaml"),
        "name: garbage\ncommand: echo 'not json at all'\nvariables:\n  - { name: x, min: 0, max: 1 }\ninequalities: []\n",
    )
    .unwrap();
    std::fs::write(
        env.path("slow.yaml"),
        "name: slow\ncommand: sleep 5\ntimeout: 0.2\nvariables:\n  - { name: x, min: 0, max: 1 }\n",
    )
    .unwrap();
    let suite = env.suite(
        "b.yaml",
        "name: broken\ntasks:\n  - name: garbage\n    problem: garbage.yaml\n  - name: slow\n    problem: slow.yaml\n  - name: g11\n    problem: g11\n    budget: { max_evaluations: 2000 }\n",
    );
    let summary = env.run(&suite, env.config(1, OptimizerKind::Baseline)).await;
    let runs = env.store.runs_of_epoch(summary.epochs[0].epoch_id).await.unwrap();
    let by = |t: &str| runs.iter().find(|r| r.task_name == t).unwrap();
    for bad in ["garbage", "slow"] {
        let r = by(bad);
        // Aborted, not failed: the evaluator broke before anything was learned.
        assert_eq!(r.status, "aborted", "{r:?}");
        assert!(r.error.as_deref().unwrap().contains("could not be evaluated"), "{:?}", r.error);
    }
    assert!(by("garbage").error.as_deref().unwrap().contains("not json at all"), "the bad output is quoted");
    assert!(
        by("slow").error.as_deref().unwrap().contains("timed out")
            || by("slow").error.as_deref().unwrap().contains("time")
    );
    assert_eq!(by("g11").status, "complete");
    assert!(summary.epochs[0].mean_loss.is_some());
}
