//! The key never leaves the Authorization header: a model server that
//! echoes the request (its headers included) in errors and in replies gets
//! it into no log line, no database row, no run folder, no export and no
//! report — a whole `attractor run` with debug logging, then greps.

use std::path::Path;
use std::process::Command;

use attractor::llm::scripted::{Scripted, ScriptedServer};
use serde_json::json;

const KEY: &str = "sk-echo-SECRET-7d1e93";

/// Every file below `dir`, read as bytes.
fn files_below(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, bytes));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn an_echoing_server_gets_the_key_nowhere() {
    // Every other call fails with the request's headers quoted back (and is
    // retried); the rest answer a proposal whose every field quotes them.
    let calls = std::sync::atomic::AtomicU32::new(0);
    let server = ScriptedServer::start_responding(move |req| {
        let auth = req.header("authorization").unwrap_or_default().to_string();
        if calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2 == 0 {
            return Scripted::status(500, format!("upstream trouble; you sent Authorization: {auth}"));
        }
        Scripted::json(&json!({
            "artifact": "style", "proposed_content": format!("GOOD {auth}"),
            "rationale": format!("because {auth}"), "expected_loss_reduction": 0.2, "confidence": 0.9
        }))
    })
    .await
    .unwrap();

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("score.py"),
        "import json, os\ntext = open(os.path.join(os.environ['ATTRACTOR_ARTIFACTS_DIR'], 'style.txt')).read()\n\
         json.dump({'status': 'complete', 'eval_score': 0.9 if 'GOOD' in text else 0.4}, open(os.environ['ATTRACTOR_RESULT_FILE'], 'w'))\n",
    )
    .unwrap();
    let suite = dir.path().join("echo.suite.yaml");
    std::fs::write(
        &suite,
        "name: echo\nartifacts:\n  - name: style\n    type: text\n    content: plain\ntasks:\n  - name: a\n    command: python3 \"$ATTRACTOR_SUITE_DIR/score.py\"\n",
    )
    .unwrap();
    let db = dir.path().join("attractor.db");
    let out_dir = dir.path().join("out");
    let base_url = server.base_url();
    let runs_dir = dir.path().join("runs");
    let run = move |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(&db)
            .args(args)
            .env("ATTRACTOR_LLM_BASE_URL", &base_url)
            .env("ATTRACTOR_LLM_MODEL", "echo-model")
            .env("ATTRACTOR_LLM_API_KEY", KEY)
            .env("ATTRACTOR_KEYCHAIN", "off")
            .env("ATTRACTOR_RUNS_DIR", &runs_dir)
            .env("RUST_LOG", "attractor=debug")
            .output()
            .unwrap()
    };
    let outputs = tokio::task::spawn_blocking(move || {
        let mut outputs = Vec::new();
        outputs.push(run(&["run", suite.to_str().unwrap(), "--optimizer", "textgrad", "--epochs", "3"]));
        outputs.push(run(&["export", "echo", "--format", "json"]));
        outputs.push(run(&["export", "echo", "--format", "csv"]));
        outputs.push(run(&["proposals", "echo"]));
        outputs.push(run(&["report", "echo", "--out", out_dir.to_str().unwrap()]));
        outputs
    })
    .await
    .unwrap();

    let bearer = format!("Bearer {KEY}");
    assert!(server.requests().iter().all(|r| r.header("authorization") == Some(bearer.as_str())));
    assert!(server.requests().len() >= 4, "the model was asked, and retried");
    assert!(outputs[0].status.success(), "{}", String::from_utf8_lossy(&outputs[0].stderr));
    let logs = String::from_utf8_lossy(&outputs[0].stderr);
    assert!(logs.contains("DEBUG"), "debug logging was on:\n{logs}");
    for (i, o) in outputs.iter().enumerate() {
        for stream in [&o.stdout, &o.stderr] {
            let text = String::from_utf8_lossy(stream);
            assert!(!text.contains("SECRET"), "command {i} printed the key:\n{text}");
        }
    }
    // The database (with its write-ahead log), the run folders, the exports
    // and the report: not one byte sequence of the key.
    let mut leaks = Vec::new();
    for (path, bytes) in files_below(dir.path()) {
        if bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()) {
            leaks.push(path);
        }
    }
    assert!(leaks.is_empty(), "the key was written to {leaks:?}");
    server.shutdown().await;
}
