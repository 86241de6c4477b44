//! The agent example suite (`examples/agent.suite.yaml`) end to end: both
//! tasks run from the repository's example folders — the Python package with
//! `python3 -m unittest`, the Rust crate with `cargo build` and `cargo test` —
//! against the scripted model server, which answers the way a capable model
//! would. A broken example (a path, an overseer command, a stub that already
//! passes) fails here.

use std::path::Path;
use std::time::Duration;

use attractor::artifact::Registry;
use attractor::bus::{self, Bus};
use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::llm::{LlmClient, LlmConfig};
use attractor::outer::{OptimizerKind, RunConfig, SuiteRunner};
use attractor::store::Store;
use attractor::task::agent::AgentConfig;
use serde_json::{Value, json};
use tokio::sync::watch;

const SLUGIFY: &str = r#""""Turning titles into URL slugs."""

import re
import unicodedata


def slugify(text):
    """Return `text` as a URL slug: lowercase ASCII words joined by single hyphens."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")
"#;

const TO_ROMAN: &str = r#"//! Roman numerals.

const SYMBOLS: [(u32, &str); 13] = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
    (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
];

/// `n` in Roman numerals (1 ≤ n ≤ 3999), e.g. 1994 → "MCMXCIV"; `None`
/// outside that range.
pub fn to_roman(n: u32) -> Option<String> {
    if !(1..=3999).contains(&n) {
        return None;
    }
    let (mut n, mut out) = (n, String::new());
    for (value, symbol) in SYMBOLS {
        while n >= value {
            out.push_str(symbol);
            n -= value;
        }
    }
    Some(out)
}
"#;

fn reply(path: &str, content: &str) -> Scripted {
    Scripted::json(&json!({
        "summary": format!("implemented {path}"),
        "tools_used": [],
        "edits": [{"path": path, "action": "write", "content": content}],
    }))
}

#[tokio::test]
async fn the_agent_examples_run_from_stubs_to_passing_tests() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("a.db")).await.unwrap();
    let suite_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/agent.suite.yaml");
    let suite = attractor::suite::load(&suite_path).unwrap_or_else(|e| panic!("{e}"));
    let server = ScriptedServer::start(vec![reply("slug.py", SLUGIFY), reply("src/lib.rs", TO_ROMAN)]).await.unwrap();
    let client = LlmClient::new(
        LlmConfig::new(server.base_url(), "scripted")
            .with_retries(0, Duration::ZERO)
            .with_timeout(Duration::from_secs(30)),
    )
    .unwrap();
    let mut agent = AgentConfig::default();
    agent.verifier.enabled = false;
    let config = RunConfig {
        epochs: 1,
        optimizer: OptimizerKind::Baseline,
        learning_rate: 0.5,
        rollback_on_regression: false,
        concurrency: 1,
        seed: 1,
        runs_root: dir.path().join("runs"),
        holdout_tolerance: attractor::outer::DEFAULT_HOLDOUT_TOLERANCE,
        verify_repeats: None,
        approve_updates: None,
        tree: attractor::outer::tree::TreeConfig::default(),
    };
    let bus = Bus::new();
    let persister = bus::persist(&bus, store.clone());
    let registry = Registry::load(store.clone()).await.unwrap();
    let (_tx, cancel) = watch::channel(false);
    let summary = SuiteRunner::new(store.clone(), registry, bus.clone(), suite, config, cancel)
        .with_agent_llm(client)
        .with_agent_config(agent)
        .run()
        .await
        .unwrap();
    bus.close();
    persister.await.unwrap();

    let runs = store.runs_of_epoch(summary.epochs[0].epoch_id).await.unwrap();
    assert_eq!(runs.len(), 2);
    for run in &runs {
        assert_eq!(
            run.status,
            "complete",
            "{}: {:?}\n{}",
            run.task_name,
            run.error,
            run.stdout.as_deref().unwrap_or("")
        );
        let t = store.trajectories_of_run(run.id).await.unwrap().remove(0);
        let obs = store.observations_of_trajectory(&t.record.id).await.unwrap();
        assert_eq!(obs.len(), 1, "{}", run.task_name);
        let signals: Value = serde_json::from_str(&obs[0].record.signals_json).unwrap();
        let tests = &signals["test_results"];
        assert!(tests["total"].as_u64().unwrap() >= 5 && tests["failed"] == 0, "{}: {signals}", run.task_name);
        assert_eq!(signals["build_result"]["success"], true, "{}", run.task_name);
    }
    let roman = store.trajectories_of_run(runs[1].id).await.unwrap().remove(0);
    assert_eq!(roman.record.category, "rust-functions");
    // The example folders themselves are untouched: each run works on its own copy.
    let stub =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/agent/slug/slug.py")).unwrap();
    assert!(stub.contains("raise NotImplementedError"));
    server.shutdown().await;
}
