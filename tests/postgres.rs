//! The store on PostgreSQL: a throwaway cluster started by the test
//! (tests/common/pg.rs), the real binary pointed at it with `--db
//! postgres://…`. The same suite run gives the same history as on SQLite;
//! two workers share its queue, and when the one working a request is killed
//! with SIGKILL the other finishes it with every run recorded once.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

mod common;
use common::cli::Cli;
use common::pg::PgCluster;

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/descent.suite.yaml").display().to_string()
}

#[tokio::test]
async fn a_suite_run_on_postgresql_has_the_history_it_has_on_sqlite() {
    let pg = PgCluster::start();
    let (sqlite, postgres) = (Cli::sqlite(), Cli::at(pg.database("same")));
    let example = example();
    let args = ["run", &example, "--epochs", "4", "--optimizer", "evolve", "--seed", "3"];
    sqlite.ok(&args);
    postgres.ok(&args);
    let (a, b) = (sqlite.descent_history(), postgres.descent_history());
    assert_eq!(a["epochs"].as_array().map(Vec::len), Some(4), "{a}");
    assert_eq!(a, b, "the histories differ");
    // A second run continues the history there as here.
    let more = ["run", &example, "--epochs", "1", "--optimizer", "evolve", "--seed", "4"];
    sqlite.ok(&more);
    postgres.ok(&more);
    assert_eq!(sqlite.descent_history(), postgres.descent_history());
    // A URL's password never shows: an unreachable server says where without it.
    let out = Cli::at("postgres://someone:s3cret@127.0.0.1:1/none").run(&["inspect"]);
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
    let example = example();
    let args = ["run", &example, "--epochs", "6", "--optimizer", "evolve", "--seed", "7"];
    let reference = Cli::at(pg.database("reference"));
    reference.ok(&args);
    let reference = reference.descent_history();

    let url = pg.database("shared");
    let w = Cli::at(&url);
    let mut queued = args.to_vec();
    queued.push("--queue");
    assert!(w.ok(&queued).contains("queued request 1"));
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let spawn = || w.cmd(&["worker"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
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
    let resumed = w.descent_history();
    assert_eq!(resumed, reference, "the taken-over run's history differs from the uninterrupted one");
    for e in resumed["epochs"].as_array().unwrap() {
        let tasks: Vec<&str> = e["runs"].as_array().unwrap().iter().map(|r| r["task"].as_str().unwrap()).collect();
        let unique: std::collections::BTreeSet<&str> = tasks.iter().copied().collect();
        assert_eq!(unique.len(), tasks.len(), "a task counted twice in {e}");
    }
}

/// The app on PostgreSQL shows the URL without its password, and saving the
/// settings form — which sends the URL back as shown — keeps the real one.
#[tokio::test]
async fn the_app_on_postgresql_never_shows_nor_saves_over_the_password_of_its_url() {
    let pg = PgCluster::start();
    let url = pg.database("app");
    // Trust authentication takes any password: the URL may carry one.
    let with_password = url.replacen("postgres@", "postgres:s3cret@", 1);
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let config = attractor::service::ServiceConfig {
        db_path: with_password.clone().into(),
        settings_path: settings.clone(),
        runs_root: Some(dir.path().join("runs")),
        env: std::sync::Arc::new(|_| None),
    };
    let service = attractor::service::Service::open(config).await.unwrap();
    let view = service.settings();
    assert!(view.db_path.contains("postgres:***@"), "{}", view.db_path);
    assert!(!view.db_path.contains("s3cret"));
    let overview = service.overview().await.unwrap();
    assert!(!overview.db_path.contains("s3cret"), "{}", overview.db_path);
    // The form sends everything back, the path as it was shown.
    let update = attractor::service::types::SettingsUpdate {
        db_path: Some(view.db_path.clone()),
        llm_model: Some("some-model".into()),
        ..Default::default()
    };
    let saved = service.update_settings(&update).unwrap();
    assert_eq!(saved.db_path_next_start, None, "the shown path is no change");
    let file = std::fs::read_to_string(&settings).unwrap_or_default();
    assert!(!file.contains("***"), "the masked URL was saved: {file}");
    service.shutdown().await;
}
