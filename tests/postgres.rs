//! The store on PostgreSQL: a throwaway cluster started by the test
//! (tests/common/pg.rs), the real binary pointed at it with `--db
//! postgres://…`. The same suite run gives the same history as on SQLite;
//! two workers share its queue, and when the one working a request is killed
//! with SIGKILL the other finishes it with every run recorded once.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Map, Value};

mod common;
use common::pg::PgCluster;

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/descent.suite.yaml").display().to_string()
}

/// The binary on `db` (a file or a URL), with its own runs folder and no
/// settings file.
fn cmd(dir: &Path, db: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_attractor"));
    c.arg("--db")
        .arg(db)
        .args(args)
        .env_remove("ATTRACTOR_DB")
        .env_remove("ATTRACTOR_LLM_MODEL")
        .env("ATTRACTOR_RUNS_DIR", dir.join("runs"))
        .env("ATTRACTOR_SETTINGS", dir.join("no-settings.json"));
    c
}

fn ok(dir: &Path, db: &str, args: &[&str]) -> String {
    let out = cmd(dir, db, args).output().expect("spawn attractor");
    assert!(out.status.success(), "attractor {args:?} on {db}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// What a run leaves behind, without clock times, ids and folders, and with
/// only the runs each epoch counted.
fn history(dir: &Path, db: &str) -> Value {
    let export: Value = serde_json::from_str(&ok(dir, db, &["export", "descent-tuning"])).unwrap();
    let epochs: Vec<Value> = export["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let mut runs: Vec<Value> = e["runs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["counted"] == true)
                .map(|r| {
                    let keep = ["task", "status", "loss", "breakdown", "exit_code", "error"];
                    Value::Object(keep.iter().map(|k| (k.to_string(), r[*k].clone())).collect::<Map<_, _>>())
                })
                .collect();
            runs.sort_by_key(|r| r["task"].as_str().unwrap_or_default().to_string());
            serde_json::json!({
                "epoch_num": e["epoch_num"], "mean_loss": e["mean_loss"], "runs": runs,
                "child_artifacts": e["child_artifacts"],
            })
        })
        .collect();
    let versions: Value =
        serde_json::from_str(&ok(dir, db, &["--json", "inspect", "descent-tuning", "--artifact", "descent_settings"]))
            .unwrap();
    let contents: Vec<Value> = versions["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| serde_json::json!([v["version"], v["content"]]))
        .collect();
    serde_json::json!({ "epochs": epochs, "versions": contents })
}

#[tokio::test]
async fn a_suite_run_on_postgresql_has_the_history_it_has_on_sqlite() {
    let pg = PgCluster::start();
    let url = pg.database("same");
    let dir = tempfile::tempdir().unwrap();
    let sqlite = dir.path().join("a.db").display().to_string();
    let args = ["run", &example(), "--epochs", "4", "--optimizer", "evolve", "--seed", "3"];
    ok(dir.path(), &sqlite, &args);
    ok(dir.path(), &url, &args);
    let (a, b) = (history(dir.path(), &sqlite), history(dir.path(), &url));
    assert_eq!(a["epochs"].as_array().map(Vec::len), Some(4), "{a}");
    assert_eq!(a, b, "the histories differ");
    // A second run continues the history there as here.
    let more = ["run", &example(), "--epochs", "1", "--optimizer", "evolve", "--seed", "4"];
    ok(dir.path(), &sqlite, &more);
    ok(dir.path(), &url, &more);
    assert_eq!(history(dir.path(), &sqlite), history(dir.path(), &url));
    // The URL's password never shows (here there is none; an unreachable
    // server with one says where without it).
    let out = cmd(dir.path(), "postgres://someone:s3cret@127.0.0.1:1/none", &["inspect"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot open the database postgres://someone:***@127.0.0.1:1/none"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
}

/// The request's status, its holder's pid and its claims, and the runs
/// ended so far.
async fn queue_state(pool: &sqlx::PgPool) -> (Option<(String, Option<u32>, i64)>, i64) {
    let row: Option<(String, Option<String>, i64)> =
        sqlx::query_as("SELECT status, owner, attempts FROM run_requests ORDER BY id DESC LIMIT 1")
            .fetch_optional(pool)
            .await
            .ok()
            .flatten();
    let ended: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM runs WHERE status <> 'running'").fetch_one(pool).await.unwrap_or(0);
    let row = row.map(|(status, owner, attempts)| {
        let pid = owner.and_then(|o| o.rsplit(':').nth(1).and_then(|p| p.parse().ok()));
        (status, pid, attempts)
    });
    (row, ended)
}

#[tokio::test]
async fn two_workers_share_a_postgresql_queue_and_one_finishes_what_a_killed_one_started() {
    let pg = PgCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let args = ["run", &example(), "--epochs", "6", "--optimizer", "evolve", "--seed", "7"];
    let reference_url = pg.database("reference");
    ok(dir.path(), &reference_url, &args);
    let reference = history(dir.path(), &reference_url);

    let url = pg.database("shared");
    let mut queued = args.to_vec();
    queued.push("--queue");
    assert!(ok(dir.path(), &url, &queued).contains("queued request 1"));
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let spawn = || cmd(dir.path(), &url, &["worker"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let mut workers: Vec<Child> = vec![spawn(), spawn()];
    // Kill the worker holding the request once a few runs ended.
    let dead = loop {
        let (row, ended) = queue_state(&pool).await;
        if let Some((status, Some(pid), _)) = row {
            assert_eq!(status, "running", "the request ended before the kill");
            if ended >= 5 {
                let at = workers.iter().position(|c| c.id() == pid).expect("the holder is one of the workers");
                let mut victim = workers.remove(at);
                victim.kill().unwrap();
                victim.wait().unwrap();
                break pid;
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let (status, holder, attempts) = loop {
        match queue_state(&pool).await.0 {
            Some((status, holder, attempts)) if status != "running" => break (status, holder, attempts),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    for mut c in workers {
        c.kill().unwrap();
        c.wait().unwrap();
    }
    pool.close().await;
    assert_eq!(status, "finished");
    assert_ne!(holder, Some(dead), "the killed worker cannot have finished it");
    assert_eq!(attempts, 2, "claimed by the first worker, then taken over");
    let resumed = history(dir.path(), &url);
    assert_eq!(resumed, reference, "the taken-over run's history differs from the uninterrupted one");
    for e in resumed["epochs"].as_array().unwrap() {
        let tasks: Vec<&str> = e["runs"].as_array().unwrap().iter().map(|r| r["task"].as_str().unwrap()).collect();
        let unique: std::collections::BTreeSet<&str> = tasks.iter().copied().collect();
        assert_eq!(unique.len(), tasks.len(), "a task counted twice in {e}");
    }
}
