//! Resume is exact: a run killed with SIGKILL at a random point and started
//! again with the same command ends with the same history — every epoch's
//! losses, every artifact version and every tree node — as a run that was
//! never interrupted. The uninterrupted history is the reference; every trial
//! kills at a point drawn from a seeded generator, so a failing trial replays.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use serde_json::Value;

mod common;
use common::cli::Cli;

/// Task runs that have ended (any status), read straight from the file.
async fn ended_runs(w: &Cli) -> i64 {
    if !w.db().exists() {
        return 0;
    }
    let Ok(pool) = sqlx::SqlitePool::connect(&format!("sqlite://{}?mode=ro", w.db().display())).await else {
        return 0;
    };
    let n =
        sqlx::query_scalar("SELECT COUNT(*) FROM runs WHERE status <> 'running'").fetch_one(&pool).await.unwrap_or(0);
    pool.close().await;
    n
}

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/descent.suite.yaml").display().to_string()
}

/// Where two histories first part, as a path and the two values.
fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                first_difference(
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    format!("{at}.{k}"),
                )
            })
        }
        (Value::Array(x), Value::Array(y)) => {
            x.iter().zip(y).enumerate().find_map(|(i, (p, q))| first_difference(p, q, format!("{at}[{i}]"))).or_else(
                || {
                    (x.len() != y.len())
                        .then(|| format!("{at}: uninterrupted {} item(s), resumed {}", x.len(), y.len()))
                },
            )
        }
        _ if a == b => None,
        _ => Some(format!("{at}: uninterrupted {a}, resumed {b}")),
    }
}

/// Starts the run, kills it with SIGKILL once `after` task runs have ended
/// (or lets it finish if it gets there first), then runs the same command
/// again to the end.
async fn killed_and_resumed(args: &[&str], after: i64) -> (Value, bool) {
    let w = Cli::sqlite();
    let mut child: Child = w.cmd(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn attractor");
    let killed = loop {
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        if ended_runs(&w).await >= after {
            let _ = child.kill();
            break true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let status = child.wait().unwrap();
    assert!(killed || status.success(), "the run failed before it was killed");
    w.ok(args);
    (w.descent_history(), killed)
}

async fn resume_is_exact(optimizer: &str, epochs: u32, trials: u64) {
    let epochs = epochs.to_string();
    let example = example();
    let args = ["run", example.as_str(), "--epochs", epochs.as_str(), "--optimizer", optimizer, "--seed", "7"];
    // Kill points are drawn from the runs the uninterrupted run made.
    let (reference, runs) = {
        let w = Cli::sqlite();
        w.ok(&args);
        (w.descent_history(), ended_runs(&w).await)
    };
    assert!(runs >= 8, "{optimizer}: the reference made only {runs} runs");
    assert!(!reference["epochs"].as_array().unwrap().is_empty());
    let mut kills = 0;
    // ATTRACTOR_RESUME_TRIAL=N replays one trial.
    let only: Option<u64> = std::env::var("ATTRACTOR_RESUME_TRIAL").ok().and_then(|t| t.parse().ok());
    for trial in (0..trials).filter(|t| only.is_none_or(|o| o == *t)) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(trial);
        let after = rng.random_range(0..runs);
        let (resumed, killed) = killed_and_resumed(&args, after).await;
        kills += u32::from(killed);
        if let Some(diff) = first_difference(&reference, &resumed, String::new()) {
            panic!(
                "{optimizer}, trial {trial} (killed after {after} ended runs): the resumed history differs at {diff}"
            );
        }
    }
    // Most trials must really have interrupted the run, or the test proves nothing.
    assert!(
        only.is_some() || u64::from(kills) * 4 >= trials * 3,
        "{optimizer}: only {kills} of {trials} trials were killed before the end"
    );
}

#[tokio::test]
async fn an_evolve_run_killed_anywhere_resumes_to_the_uninterrupted_history() {
    resume_is_exact("evolve", 8, 20).await;
}

#[tokio::test]
async fn a_tree_search_killed_anywhere_resumes_to_the_uninterrupted_history() {
    resume_is_exact("tree", 10, 20).await;
}

/// The request of the queue as the database holds it: status, holder's
/// process id, claims so far.
async fn request_state(w: &Cli) -> Option<(String, Option<u32>, i64)> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}?mode=ro", w.db().display())).await.ok()?;
    let row: Option<(String, Option<String>, i64)> =
        sqlx::query_as("SELECT status, owner, attempts FROM run_requests ORDER BY id DESC LIMIT 1")
            .fetch_optional(&pool)
            .await
            .ok()?;
    pool.close().await;
    // The owner is "host:pid:nonce".
    row.map(|(status, owner, attempts)| {
        let pid = owner.and_then(|o| o.rsplit(':').nth(1).and_then(|p| p.parse().ok()));
        (status, pid, attempts)
    })
}

/// Two workers share the queue; the one working the request is killed with
/// SIGKILL partway, the other takes the request over and finishes it, and
/// the history is the uninterrupted run's: every run recorded once.
#[tokio::test]
async fn a_worker_killed_mid_run_is_taken_over_by_another_and_the_history_is_the_uninterrupted_one() {
    let example = example();
    let args = ["run", example.as_str(), "--epochs", "6", "--optimizer", "evolve", "--seed", "7"];
    let (reference, runs) = {
        let w = Cli::sqlite();
        w.ok(&args);
        (w.descent_history(), ended_runs(&w).await)
    };
    let only: Option<u64> = std::env::var("ATTRACTOR_RESUME_TRIAL").ok().and_then(|t| t.parse().ok());
    let mut taken_over = 0;
    for trial in (0..3u64).filter(|t| only.is_none_or(|o| o == *t)) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(100 + trial);
        let after = rng.random_range(1..runs - 2);
        let w = Cli::sqlite();
        let mut queued = args.to_vec();
        queued.push("--queue");
        assert!(w.ok(&queued).contains("queued request 1"));
        let spawn = || w.cmd(&["worker"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn a worker");
        let mut workers: Vec<Child> = vec![spawn(), spawn()];
        // Kill whichever worker holds the request once `after` runs ended.
        let killed = loop {
            if let Some((status, Some(pid), _)) = request_state(&w).await {
                if status != "running" {
                    break None;
                }
                if ended_runs(&w).await >= after {
                    let at = workers.iter().position(|c| c.id() == pid).expect("the holder is one of the workers");
                    let mut victim = workers.remove(at);
                    victim.kill().unwrap();
                    victim.wait().unwrap();
                    break Some(pid);
                }
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        // The other worker finishes it.
        let (status, holder) = loop {
            match request_state(&w).await {
                Some((status, holder, _)) if status != "running" => break (status, holder),
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        for mut c in workers {
            c.kill().unwrap();
            c.wait().unwrap();
        }
        assert_eq!(status, "finished", "trial {trial}");
        if let Some(dead) = killed {
            taken_over += 1;
            assert_ne!(holder, Some(dead), "trial {trial}: the dead worker cannot have finished it");
            assert_eq!(request_state(&w).await.map(|s| s.2), Some(2), "trial {trial}: claimed twice");
        }
        let resumed = w.descent_history();
        if let Some(diff) = first_difference(&reference, &resumed, String::new()) {
            panic!("trial {trial} (killed after {after} ended runs): the taken-over history differs at {diff}");
        }
        // Every epoch counted each task exactly once.
        for e in resumed["epochs"].as_array().unwrap() {
            let tasks: Vec<&str> = e["runs"].as_array().unwrap().iter().map(|r| r["task"].as_str().unwrap()).collect();
            let unique: std::collections::BTreeSet<&str> = tasks.iter().copied().collect();
            assert_eq!(unique.len(), tasks.len(), "trial {trial}: a task counted twice in {e}");
        }
    }
    assert!(only.is_some() || taken_over >= 2, "only {taken_over} of 3 trials killed the worker before the end");
}

/// A worker stopped with Ctrl-C (SIGINT) gives its request back to the
/// queue instead of ending it: the next worker resumes it, and the history
/// is the uninterrupted one.
#[tokio::test]
async fn a_worker_stopped_with_ctrl_c_gives_its_request_back_and_the_next_worker_resumes_it() {
    let example = example();
    let args = ["run", example.as_str(), "--epochs", "4", "--optimizer", "evolve", "--seed", "9"];
    let reference = {
        let w = Cli::sqlite();
        w.ok(&args);
        w.descent_history()
    };
    let w = Cli::sqlite();
    let mut queued = args.to_vec();
    queued.push("--queue");
    w.ok(&queued);
    let worker = w.cmd(&["worker"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    loop {
        if matches!(request_state(&w).await, Some((s, _, _)) if s == "running") && ended_runs(&w).await >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(worker.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = worker.wait_with_output().unwrap();
    assert!(out.status.success(), "the worker stopped cleanly: {:?}", out.status);
    let (status, holder, attempts) = request_state(&w).await.unwrap();
    assert_eq!((status.as_str(), holder, attempts), ("queued", None, 1), "given back, not cancelled");
    w.ok(&["worker", "--until-idle"]);
    let (status, _, attempts) = request_state(&w).await.unwrap();
    assert_eq!((status.as_str(), attempts), ("finished", 2));
    if let Some(diff) = first_difference(&reference, &w.descent_history(), String::new()) {
        panic!("the resumed history differs at {diff}");
    }
}
