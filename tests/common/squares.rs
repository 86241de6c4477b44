//! The small Python package the agent tests work on: `squares.py` with
//! `square(n)` not written yet, and ten unit tests (`test_1` … `test_10`,
//! n = 1…10) that say what it must return; plus the run configuration those
//! tests share (one baseline epoch, one task at a time).

use std::path::{Path, PathBuf};

use attractor::llm::scripted::Scripted;
use attractor::outer::{OptimizerKind, RunConfig};
use serde_json::json;

const TESTS: &str = "import unittest\n\nfrom squares import square\n\n\nclass SquareTest(unittest.TestCase):\n";

/// Writes the package into `root/pkg` and returns that folder.
pub fn package(root: &Path) -> PathBuf {
    let pkg = root.join("pkg");
    std::fs::create_dir_all(&pkg).expect("create pkg");
    std::fs::write(pkg.join("squares.py"), "def square(n):\n    raise NotImplementedError\n")
        .expect("write squares.py");
    let mut tests = TESTS.to_string();
    for n in 1..=10 {
        tests.push_str(&format!("    def test_{n}(self):\n        self.assertEqual(square({n}), {})\n\n", n * n));
    }
    std::fs::write(pkg.join("test_squares.py"), tests).expect("write test_squares.py");
    pkg
}

/// `epochs` baseline epochs, one task at a time, seed 42, runs under `runs_root`.
pub fn run_config(runs_root: PathBuf, epochs: u32) -> RunConfig {
    RunConfig {
        epochs,
        optimizer: OptimizerKind::Baseline,
        learning_rate: 0.5,
        rollback_on_regression: false,
        concurrency: 1,
        seed: 42,
        runs_root,
        holdout_tolerance: attractor::outer::DEFAULT_HOLDOUT_TOLERANCE,
        verify_repeats: None,
        approve_updates: None,
        tree: attractor::outer::tree::TreeConfig::default(),
    }
}

/// An agent configuration for runs nobody watches: no intent verifier,
/// every intervention point deciding alone, quick environmental retries.
pub fn unwatched_agent() -> attractor::task::agent::AgentConfig {
    let mut agent = attractor::task::agent::AgentConfig::default();
    agent.verifier.enabled = false;
    agent.overseers.retry_delay_ms = 20;
    agent.engine.interventions = attractor::engine::InterventionConfig::all(attractor::engine::InterventionMode::Auto);
    agent
}

/// Runs `suite` to its end on `store` with `agent`, its events persisted.
pub async fn run_suite(
    store: &attractor::store::Store,
    suite: attractor::suite::Suite,
    config: RunConfig,
    agent: attractor::task::agent::AgentConfig,
) {
    use attractor::bus::{self, Bus};
    let bus = Bus::new();
    let persister = bus::persist(&bus, store.clone());
    let registry = attractor::artifact::Registry::load(store.clone()).await.expect("load the registry");
    let (_tx, cancel) = tokio::sync::watch::channel(false);
    attractor::outer::SuiteRunner::new(store.clone(), registry, bus.clone(), suite, config, cancel)
        .with_agent_config(agent)
        .run()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    bus.close();
    persister.await.expect("the persister");
}

/// A temporary folder holding the package and a store, for one suite.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub store: attractor::store::Store,
    /// The suite the tests run (its events and runs are the ones read back).
    pub suite_name: &'static str,
}

impl Fixture {
    pub async fn new(suite_name: &'static str) -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        package(dir.path());
        let store = attractor::store::Store::open(&dir.path().join("attractor.db")).await.expect("open store");
        Fixture { dir, store, suite_name }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs `suite` as a new process would: a new store handle on the same
    /// file, the registry with `artifacts` (name, content) made active first,
    /// the bus persisted — and watched by the auditor when `audit`, as the
    /// CLI wires it — and the runner given `llm` and `agent`.
    #[allow(clippy::too_many_arguments)]
    pub async fn run_agent(
        &self,
        suite: &Path,
        config: RunConfig,
        llm: attractor::llm::LlmClient,
        agent: attractor::task::agent::AgentConfig,
        artifacts: &[(&str, String)],
        audit: bool,
        cancel: tokio::sync::watch::Receiver<bool>,
    ) -> attractor::outer::RunSummary {
        use attractor::bus::{self, Bus};
        let store = attractor::store::Store::open(&self.path("attractor.db")).await.expect("open store");
        let suite = attractor::suite::load(suite).unwrap_or_else(|e| panic!("{e}"));
        let registry = attractor::artifact::Registry::load(store.clone()).await.expect("registry");
        for (name, content) in artifacts {
            let version = registry.put_version(name, content, 0, None).await.expect("put version");
            registry.set_active(name, version).await.expect("set active");
        }
        let bus = Bus::new();
        let persister = bus::persist(&bus, store.clone());
        let auditor = audit.then(|| attractor::auditor::spawn(&bus, attractor::auditor::AuditConfig::default()));
        let summary = attractor::outer::SuiteRunner::new(store.clone(), registry, bus.clone(), suite, config, cancel)
            .with_agent_llm(llm)
            .with_agent_config(agent)
            .run()
            .await;
        bus.close();
        if let Some(auditor) = auditor {
            auditor.await.expect("auditor");
        }
        persister.await.expect("persister");
        summary.unwrap_or_else(|e| panic!("the runner failed: {e}"))
    }

    /// The suite's latest run.
    pub async fn last_run(&self) -> attractor::store::RunRow {
        let suite = self.store.suite_by_name(self.suite_name).await.unwrap().unwrap();
        let mut out = Vec::new();
        for e in self.store.epochs(suite.id).await.unwrap() {
            out.extend(self.store.runs_of_epoch(e.id).await.unwrap());
        }
        out.pop().expect("a run")
    }

    /// The suite's stored events of one kind, as JSON.
    pub async fn events(&self, kind: &str) -> Vec<serde_json::Value> {
        let suite = self.store.suite_by_name(self.suite_name).await.unwrap().unwrap();
        self.store
            .events_of_suite(suite.id)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.event.kind == kind)
            .map(|e| serde_json::from_str(&e.event.payload_json).unwrap())
            .collect()
    }
}

/// `squares.py` getting exactly the tests of `right` right; the others
/// return `wrong`.
pub fn answers(right: &[u32], wrong: u32) -> String {
    let mut s = String::from("ANSWERS = {\n");
    for n in 1..=10u32 {
        let v = if right.contains(&n) { n * n } else { wrong };
        s.push_str(&format!("    {n}: {v},\n"));
    }
    s.push_str("}\n\n\ndef square(n):\n    return ANSWERS[n]\n");
    s
}

/// `squares.py` getting exactly the tests of `right` right (the others 0).
pub fn squares(right: &[u32]) -> String {
    answers(right, 0)
}

/// The first `k` tests.
pub fn first(k: u32) -> Vec<u32> {
    (1..=k).collect()
}

/// A model reply writing `content` to `squares.py` (naming no tools: a
/// directive that blocks the failing attempts' tools would refuse a reply
/// that uses one).
pub fn writes(content: &str, summary: &str) -> Scripted {
    Scripted::json(&json!({
        "summary": summary,
        "tools_used": [],
        "edits": [{"path": "squares.py", "action": "write", "content": content}],
    }))
}

/// A reply getting the first `k` tests right.
pub fn passing(k: u32, summary: &str) -> Scripted {
    writes(&squares(&first(k)), summary)
}

/// A reply writing `squares.py` with every answer `k` (all wrong, each time a
/// different file: a stall, not a duplicate).
pub fn wrong(k: u32) -> Scripted {
    writes(&squares(&[]).replace(": 0,", &format!(": {k},")), &format!("all {k}"))
}
