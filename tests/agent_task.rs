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

use std::path::{Path, PathBuf};
use std::time::Duration;

use attractor::artifact::Registry;
use attractor::bus::{self, Bus};
use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::llm::{LlmClient, LlmConfig};
use attractor::outer::{OptimizerKind, RunConfig, RunSummary, SuiteRunner};
use attractor::store::{ObservationRow, RunRow, Store, TrajectoryRow};
use attractor::task::agent::AgentConfig;
use serde_json::{Value, json};
use tokio::sync::watch;

const TESTS: &str = "import unittest\n\nfrom squares import square\n\n\nclass SquareTest(unittest.TestCase):\n";

/// `squares.py` getting exactly the tests of `right` right.
fn squares(right: &[u32]) -> String {
    let mut s = String::from("ANSWERS = {\n");
    for n in 1..=10u32 {
        let v = if right.contains(&n) { n * n } else { 0 };
        s.push_str(&format!("    {n}: {v},\n"));
    }
    s.push_str("}\n\n\ndef square(n):\n    return ANSWERS[n]\n");
    s
}

/// The first `k` tests right.
fn first(k: u32) -> Vec<u32> {
    (1..=k).collect()
}

/// A model reply writing `content` to `squares.py`.
fn writes(content: &str, summary: &str) -> Scripted {
    Scripted::json(&json!({
        "summary": summary,
        "tools_used": ["python"],
        "edits": [{"path": "squares.py", "action": "write", "content": content}],
    }))
}

fn passing(k: u32, summary: &str) -> Scripted {
    writes(&squares(&first(k)), summary)
}

struct Fixture {
    dir: tempfile::TempDir,
    store: Store,
}

const OVERSEER: &str =
    "      - name: tests\n        kind: test\n        command: python3 -m unittest -v\n        timeout: 30\n";

impl Fixture {
    async fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("pkg");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("squares.py"), "def square(n):\n    raise NotImplementedError\n").unwrap();
        let mut tests = TESTS.to_string();
        for n in 1..=10 {
            tests.push_str(&format!("    def test_{n}(self):\n        self.assertEqual(square({n}), {})\n\n", n * n));
        }
        std::fs::write(pkg.join("test_squares.py"), tests).unwrap();
        let store = Store::open(&dir.path().join("attractor.db")).await.unwrap();
        Fixture { dir, store }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

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
        RunConfig {
            epochs,
            optimizer: OptimizerKind::Baseline,
            learning_rate: 0.5,
            rollback_on_regression: false,
            concurrency: 1,
            seed: 42,
            runs_root: self.path("runs"),
            holdout_tolerance: attractor::outer::DEFAULT_HOLDOUT_TOLERANCE,
        }
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
        // A new store handle on the same file each time, as a new process would open it.
        let store = Store::open(&self.path("attractor.db")).await.unwrap();
        let suite = attractor::suite::load(suite).unwrap_or_else(|e| panic!("{e}"));
        let registry = Registry::load(store.clone()).await.unwrap();
        let bus = Bus::new();
        let persister = bus::persist(&bus, store.clone());
        let summary = SuiteRunner::new(store.clone(), registry, bus.clone(), suite, self.config(epochs), cancel)
            .with_agent_llm(client(server))
            .with_agent_config(agent)
            .run()
            .await;
        bus.close();
        persister.await.unwrap();
        summary.unwrap_or_else(|e| panic!("the runner failed: {e}"))
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

    async fn events(&self, kind: &str) -> Vec<Value> {
        let suite = self.store.suite_by_name("agent-suite").await.unwrap().unwrap();
        self.store
            .events_of_suite(suite.id)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == kind)
            .map(|e| serde_json::from_str(&e.payload_json).unwrap())
            .collect()
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
    let f = Fixture::new().await;
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
