//! `attractor bench learn` end to end against a scripted model that labels
//! every message `billing`: the harness's calls are counted through the
//! proxy, the optimizer's by its client, accuracy is read from the
//! measurement epoch's examples, and GEPA's peer writes the same record.

use std::path::Path;

use attractor::llm::scripted::{Scripted, ScriptedServer};
use serde_json::{Value, json};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

async fn bench(server: &ScriptedServer, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_attractor"));
    cmd.current_dir(repo())
        .args(["bench", "learn", "--seeds", "1", "--epochs", "1", "--out"])
        .arg(out)
        .args(extra)
        .env("ATTRACTOR_LLM_BASE_URL", server.base_url())
        .env("ATTRACTOR_LLM_MODEL", "scripted")
        .env_remove("ATTRACTOR_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env("ATTRACTOR_KEYCHAIN", "off")
        .env("ATTRACTOR_SETTINGS", out.join("no-settings.json"));
    cmd.output().await.expect("spawn attractor")
}

fn records(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Held-out messages labelled `billing` in sixty.json: 3 + 2 + 3.
const HELD_BILLING: u64 = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_call_and_optimizer_call_is_counted_and_accuracy_is_read_from_the_examples() {
    let server = ScriptedServer::start_repeating(vec![], Scripted::json(&json!({"label": "billing"}))).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("learn");
    let done = bench(&server, &out, &["--methods", "baseline,textgrad", "--peers", "none"]).await;
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let rs = records(&out);
    assert_eq!(rs.len(), 2, "{rs:?}");
    for r in &rs {
        assert_eq!(r["task_calls"], 60, "one epoch of 30 training and 30 held-out messages: {r}");
        assert_eq!(r["holdout"], json!({"correct": HELD_BILLING, "total": 30}));
        assert_eq!(r["training"]["total"], 30);
        let examples = r["holdout_examples"].as_object().unwrap();
        assert_eq!(examples.len(), 30);
        assert_eq!(examples.values().filter(|v| **v == json!(true)).count() as u64, HELD_BILLING);
        assert!(examples.contains_key("held-a/held-a-1"), "{examples:?}");
    }
    assert_eq!(rs[0]["method"], "baseline");
    assert_eq!(rs[0]["optimizer_calls"], 0);
    assert_eq!(rs[1]["method"], "textgrad");
    assert!(rs[1]["optimizer_calls"].as_u64().unwrap() >= 1, "{}", rs[1]);
    // The server saw the tasks' calls (two measured epochs each) and textgrad's.
    let asked = server.requests().len() as u64;
    assert_eq!(asked, 2 * 120 + rs[1]["optimizer_calls"].as_u64().unwrap());
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| baseline | 1 | 60 (60 + 0) | 26.7% | 26.7% | – |"), "{report}");
    assert!(report.contains("| textgrad | 1 |") && report.contains("+0.0 points"), "{report}");

    // Run again: every record is reused, nothing is asked.
    let before = server.requests().len();
    let again = bench(&server, &out, &["--methods", "baseline,textgrad", "--peers", "none"]).await;
    assert!(again.status.success());
    assert_eq!(server.requests().len(), before, "a finished record is not run again");
    assert_eq!(records(&out).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gepa_runs_on_the_same_suite_within_its_call_budget_and_writes_the_same_record() {
    let server = ScriptedServer::start_repeating(vec![], Scripted::json(&json!({"label": "billing"}))).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("learn");
    let done = bench(&server, &out, &["--methods", "baseline", "--peers", "gepa", "--gepa-calls", "40"]).await;
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let rs = records(&out);
    let gepa = rs.iter().find(|r| r["method"] == "gepa").expect("a GEPA record");
    let spent = gepa["task_calls"].as_u64().unwrap() + gepa["optimizer_calls"].as_u64().unwrap();
    // GEPA checks its budget between iterations: one minibatch and one
    // reflection may run past it.
    assert!((30..=40 + 3 + 1 + 3).contains(&spent), "{gepa}");
    assert_eq!(gepa["holdout"], json!({"correct": HELD_BILLING, "total": 30}));
    assert_eq!(gepa["holdout_examples"].as_object().unwrap().len(), 30);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| gepa | 1 |"), "{report}");
}

#[test]
fn without_a_model_it_says_how_to_start_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
        .current_dir(repo())
        .args(["bench", "learn", "--peers", "none", "--out"])
        .arg(dir.path())
        .env_remove("ATTRACTOR_LLM_MODEL")
        .env_remove("ATTRACTOR_LLM_BASE_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("scripts/local-llm.sh start"), "{stderr}");
}
