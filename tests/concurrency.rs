//! Two runners on one database file, as two processes at once: WAL and the
//! busy timeout must let both finish with every row recorded and the file
//! intact.
//!
//! And one process with the file open twice beside another process that
//! writes: each must see the other's rows.

use std::process::Command;

fn suite(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let mut yaml = format!(
        "name: {name}\nartifacts:\n  - name: {name}_knob\n    type: json\n    content: {{ x: 0.5 }}\n    fields:\n      x: {{ min: 0, max: 1 }}\ntasks:\n"
    );
    for i in 0..6 {
        yaml.push_str(&format!(
            "  - name: t{i}\n    command: |\n      echo '{{\"status\": \"complete\", \"eval_score\": 0.{i}}}' > \"$ATTRACTOR_RESULT_FILE\"\n"
        ));
    }
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, yaml).unwrap();
    p
}

#[tokio::test]
async fn two_runners_on_one_file_lose_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    let spawn = |name: &str| {
        Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(&db)
            .arg("--quiet")
            .args(["run", suite(dir.path(), name).to_str().unwrap(), "--epochs", "4", "--optimizer", "evolve"])
            .args(["--concurrency", "6", "--seed", "3"])
            .env("ATTRACTOR_RUNS_DIR", dir.path().join("runs"))
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn("alpha"), spawn("beta"));
    let (sa, sb) = (a.wait().unwrap(), b.wait().unwrap());
    assert!(sa.success() && sb.success(), "{sa:?} {sb:?}");

    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display())).await.unwrap();
    let n = |sql: &'static str| {
        let pool = pool.clone();
        async move { sqlx::query_scalar::<_, i64>(sql).fetch_one(&pool).await.unwrap() }
    };
    assert_eq!(n("SELECT COUNT(*) FROM runs WHERE status = 'complete'").await, 2 * 4 * 6);
    assert_eq!(n("SELECT COUNT(*) FROM epoch_runs").await, 2 * 4 * 6);
    assert_eq!(n("SELECT COUNT(*) FROM epochs WHERE completed_at IS NOT NULL").await, 2 * 4);
    assert_eq!(n("SELECT COUNT(*) FROM events WHERE kind = 'run_finished'").await, 2 * 4 * 6);
    // Each suite tuned only its own artifact, one update per epoch at most.
    assert!(n("SELECT COUNT(*) FROM artifact_versions WHERE artifact_name = 'alpha_knob'").await >= 1);
    assert!(n("SELECT COUNT(*) FROM artifact_versions WHERE artifact_name = 'beta_knob'").await >= 1);
    assert!(n("SELECT COUNT(*) FROM artifact_versions").await <= 2 * 4);
    let integrity: String = sqlx::query_scalar("PRAGMA integrity_check").fetch_one(&pool).await.unwrap();
    assert_eq!(integrity, "ok");
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&pool).await.unwrap();
    assert_eq!(mode, "wal");
    pool.close().await;
}

/// A process with the database open twice (the app's service beside a
/// run's store) still sees what another process wrote: opening the second
/// must not drop the first one's locks, or the other process, finding the
/// database unlocked when it ends, checkpoints and deletes the write-ahead
/// log under the first, which goes on reading the old rows.
#[tokio::test]
async fn a_dismissal_by_another_process_is_seen_where_the_database_is_open_twice() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    let first = attractor::store::Store::open(&db).await.unwrap();
    let notice = attractor::store::Intervention {
        kind: "attractor_transition".into(),
        suite_id: None,
        run_id: None,
        task_name: None,
        subject: "a notice".into(),
        context_json: "{}".into(),
    };
    let id = first.insert_notice(&notice).await.unwrap();
    assert_eq!(first.intervention(id).await.unwrap().unwrap().status, "notice");
    let second = attractor::store::Store::open(&db).await.unwrap();
    let dismissed = Command::new(env!("CARGO_BIN_EXE_attractor"))
        .arg("--db")
        .arg(&db)
        .args(["dismiss", &id.to_string()])
        .env_remove("ATTRACTOR_DB")
        .output()
        .unwrap();
    assert!(dismissed.status.success(), "{}", String::from_utf8_lossy(&dismissed.stderr));
    for store in [&first, &second] {
        assert_eq!(store.intervention(id).await.unwrap().unwrap().status, "dismissed");
    }
}
