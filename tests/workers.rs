//! One suite on many workers (issue 38), on a throwaway PostgreSQL cluster
//! with the real binary: an epoch's runs are queue items any `attractor
//! worker` claims, the suite's holder closes the epoch, and the history is
//! the one a single process gives — also when a worker running one of the
//! suite's runs is killed with SIGKILL, or when a task needs a label that
//! only some workers offer.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

mod common;
use common::cli::Cli;
use common::pg::PgCluster;
use common::wait_for;

/// `examples/descent.suite.yaml` with every task taking a second longer (a
/// run long enough for several workers to share an epoch), written beside
/// `cli`'s database; `needs` goes on its `valley` task when given.
fn slow_descent(cli: &Cli, needs: Option<&str>) -> PathBuf {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let text = std::fs::read_to_string(examples.join("descent.suite.yaml")).unwrap();
    let mut text = text.replace(
        "command: python3 \"$ATTRACTOR_SUITE_DIR/descent/score.py\"",
        &format!("command: sleep 1 && python3 \"{}/descent/score.py\"", examples.display()),
    );
    if let Some(label) = needs {
        text = text.replace("  - name: valley\n", &format!("  - name: valley\n    needs: [{label}]\n"));
    }
    assert!(text.matches("sleep 1 &&").count() >= 4, "the example's commands changed: {text}");
    cli.write("slow-descent.suite.yaml", &text)
}

/// Runs `n` workers with `extra` arguments until the queue is idle.
fn workers(cli: &Cli, n: usize, extra: &[&str]) -> Vec<Child> {
    (0..n)
        .map(|_| {
            let mut args = vec!["worker", "--until-idle"];
            args.extend_from_slice(extra);
            cli.cmd(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
        })
        .collect()
}

/// Who ran each counted run, by task, over the whole history.
async fn counted_workers(pool: &sqlx::PgPool) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT r.task_name, COALESCE(r.worker, '') FROM epoch_runs er JOIN runs r ON r.id = er.run_id
         ORDER BY er.epoch_id, r.task_name",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

/// What [`reference_then_queued`] sets up.
struct Queued {
    /// Holds the suite file the launch names: kept until the test ends.
    _reference: Cli,
    url: String,
    shared: Cli,
    /// What `run --queue` printed.
    answer: String,
    /// The history one process gave.
    alone: serde_json::Value,
}

/// The slow descent suite run by one process on its own database (the
/// history to match), then queued on a fresh `shared` database with the
/// same arguments.
fn reference_then_queued(pg: &PgCluster, epochs: &str, seed: &str) -> Queued {
    let reference = Cli::at(pg.database("reference"));
    let suite = slow_descent(&reference, None);
    let suite = suite.display().to_string();
    let args = ["run", &suite, "--epochs", epochs, "--optimizer", "evolve", "--seed", seed];
    reference.ok(&args);
    let alone = reference.descent_history();
    let url = pg.database("shared");
    let shared = Cli::at(&url);
    let mut queued = args.to_vec();
    queued.push("--queue");
    let answer = shared.ok(&queued);
    Queued { _reference: reference, url, shared, answer, alone }
}

#[tokio::test]
async fn one_suite_s_runs_spread_over_four_workers_with_the_history_one_process_gives() {
    let pg = PgCluster::start();
    let Queued { _reference, url, shared, answer, alone } = reference_then_queued(&pg, "3", "5");
    assert!(answer.contains("queued request 1"));
    for mut w in workers(&shared, 4, &[]) {
        assert!(w.wait().unwrap().success(), "a worker failed");
    }
    assert_eq!(shared.descent_history(), alone, "four workers gave another history than one process");
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let ran = counted_workers(&pool).await;
    let by: std::collections::BTreeSet<&str> = ran.iter().map(|(_, w)| w.as_str()).collect();
    assert_eq!(ran.len(), 12, "3 epochs of 4 tasks: {ran:?}");
    assert!(by.len() >= 2, "every run was worked by one worker: {ran:?}");
    assert!(by.iter().all(|w| w.starts_with("attractor worker (pid ")), "{by:?}");
    // Every worker said it served, and that it stopped.
    let (listed, stopped): (i64, i64) =
        sqlx::query_as("SELECT COUNT(*), CAST(SUM(stopped) AS BIGINT) FROM workers").fetch_one(&pool).await.unwrap();
    assert_eq!((listed, stopped), (4, 4));
    let out = shared.ok(&["workers"]);
    assert!(out.contains("attractor worker (pid") && out.contains("stopped"), "{out}");
    pool.close().await;
}

#[tokio::test]
async fn a_worker_killed_in_the_middle_of_a_run_loses_that_run_only_and_it_counts_once() {
    let pg = PgCluster::start();
    let Queued { _reference, url, shared, alone, .. } = reference_then_queued(&pg, "2", "9");
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let mut running = workers(&shared, 3, &[]);
    // A worker that is not the suite's holder, in the middle of a run.
    let (victim_pid, run_id) = wait_for("a run of a worker that does not hold the suite", || async {
        let row: Option<(String, i64)> = sqlx::query_as(
            "SELECT i.owner, i.run_id FROM run_items i JOIN run_requests r ON r.id = i.request_id
             WHERE i.status = 'running' AND i.run_id IS NOT NULL AND i.owner <> r.owner LIMIT 1",
        )
        .fetch_optional(&pool)
        .await
        .ok()
        .flatten();
        row.and_then(|(owner, run)| Some((owner.rsplit(':').nth(1)?.parse::<u32>().ok()?, run)))
    })
    .await;
    let at = running.iter().position(|c| c.id() == victim_pid).expect("the victim is one of the workers");
    let mut victim = running.remove(at);
    victim.kill().unwrap();
    victim.wait().unwrap();
    for mut w in running {
        assert!(w.wait().unwrap().success(), "a worker failed");
    }
    assert_eq!(shared.descent_history(), alone, "the history after the kill differs from the uninterrupted one");
    let (status, error): (String, Option<String>) =
        sqlx::query_as("SELECT status, error FROM runs WHERE id = $1").bind(run_id).fetch_one(&pool).await.unwrap();
    assert_eq!(status, "cancelled");
    assert!(error.as_deref().unwrap_or("").contains("its worker stopped heartbeating"), "{error:?}");
    let counted: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM epoch_runs WHERE run_id = $1")
        .bind(run_id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(counted, 0, "the killed run counts nowhere");
    let retried: i64 = sqlx::query_scalar("SELECT MAX(attempts) FROM run_items").fetch_one(&pool).await.unwrap();
    assert_eq!(retried, 2, "the lost run was claimed again once");
    pool.close().await;
}

#[tokio::test]
async fn a_task_that_needs_a_label_waits_named_in_the_inbox_then_runs_only_on_a_worker_that_offers_it() {
    let pg = PgCluster::start();
    let url = pg.database("labels");
    let cli = Cli::at(&url);
    let suite = slow_descent(&cli, Some("big-memory"));
    let suite = suite.display().to_string();
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    // `attractor run` holds the suite and offers nothing: `valley` waits,
    // and the inbox says why and what to start.
    let mut holder = cli
        .cmd(&["run", &suite, "--epochs", "2", "--optimizer", "evolve", "--seed", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let subject: String = wait_for("the notice naming the waiting run", || async {
        // (An error before the run created the tables.)
        sqlx::query_scalar("SELECT subject FROM interventions WHERE kind = 'runs_waiting'")
            .fetch_optional(&pool)
            .await
            .ok()
            .flatten()
    })
    .await;
    assert!(
        subject.contains("`valley` needs big-memory") && subject.contains("attractor worker --offers big-memory"),
        "{subject}"
    );
    let out = cli.ok(&["interventions"]);
    assert!(out.contains("`valley` needs big-memory"), "{out}");
    let out = cli.ok(&["inspect", "descent-tuning"]);
    assert!(out.contains("waits: it needs big-memory and no live worker offers it"), "{out}");
    // A plain worker and one that offers the label: only the last may run `valley`.
    let mut all = workers(&cli, 1, &[]);
    all.extend(workers(&cli, 1, &["--offers", "python,big-memory"]));
    let offering = all[1].id();
    assert!(holder.wait().unwrap().success(), "the run failed");
    for mut w in all {
        assert!(w.wait().unwrap().success(), "a worker failed");
    }
    let ran = counted_workers(&pool).await;
    let valley: Vec<&str> = ran.iter().filter(|(t, _)| t == "valley").map(|(_, w)| w.as_str()).collect();
    assert_eq!(valley.len(), 2, "{ran:?}");
    let by_offering = format!("attractor worker (pid {offering} on ");
    assert!(valley.iter().all(|w| w.starts_with(&by_offering)), "valley ran elsewhere: {ran:?}");
    let out = cli.ok(&["workers"]);
    assert!(out.contains("offers big-memory,python"), "{out}");
    pool.close().await;
    // A label a worker cannot offer is refused with how to write one, and
    // one naming a tool this machine lacks with what to install.
    let out = cli.run(&["worker", "--offers", "GPU!"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lowercase letters"), "{err}");
    let out = cli.cmd(&["worker", "--offers", "node"]).env("PATH", "/nonexistent").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("offers `node`, but `node` is not on this machine's PATH"), "{err}");
}

#[test]
fn a_needs_label_that_no_worker_could_offer_is_a_located_suite_error_and_run_offers_the_environment_s_labels() {
    let cli = Cli::sqlite();
    let text = "name: s\ntasks:\n  - name: t\n    command: 'true'\n    needs: [ok, 'Bad Label']\n";
    let suite = cli.write("s.suite.yaml", text);
    let out = cli.run(&["run", &suite.display().to_string(), "--epochs", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("s.suite.yaml:5:") && err.contains("tasks[0].needs[1]"), "{err}");
    assert!(err.contains("not a label a worker can offer"), "{err}");
    // `attractor run` offers what ATTRACTOR_WORKER_OFFERS says (checked) for
    // the runs it works itself.
    let suite = cli.write(
        "p.suite.yaml",
        "name: p\ntasks:\n  - name: t\n    needs: [python]\n    command: |\n      echo '{\"status\": \"complete\"}' > \"$ATTRACTOR_RESULT_FILE\"\n",
    );
    let suite = suite.display().to_string();
    let run = |offers: &str| {
        cli.cmd(&["run", &suite, "--epochs", "1"]).env("ATTRACTOR_WORKER_OFFERS", offers).output().unwrap()
    };
    let out = run("python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run("Py!");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ATTRACTOR_WORKER_OFFERS: `Py!` is not a label"), "{err}");
    // Without the variable, the settings file's worker_offers say it, for
    // `attractor run` and `attractor worker` alike.
    std::fs::write(cli.dir.path().join("no-settings.json"), r#"{"worker_offers": ["python", "team-a"]}"#).unwrap();
    cli.ok(&["run", &suite, "--epochs", "1"]);
    cli.ok(&["worker", "--until-idle"]);
    let listed: serde_json::Value = serde_json::from_str(&cli.ok(&["--json", "workers"])).unwrap();
    let offers = &listed["workers"][0]["offers"];
    assert!(
        offers.as_array().is_some_and(|o| o.contains(&"python".into()) && o.contains(&"team-a".into())),
        "{listed}"
    );
    // Workers that stopped cleanly are listed ten at most, newest first.
    for _ in 0..11 {
        cli.ok(&["worker", "--until-idle"]);
    }
    let listed: serde_json::Value = serde_json::from_str(&cli.ok(&["--json", "workers"])).unwrap();
    let shown = listed["workers"].as_array().unwrap();
    assert_eq!(shown.len(), 10, "{listed}");
    assert!(shown.iter().all(|w| w["state"] == "stopped"), "{listed}");
}

#[test]
fn the_deployment_examples_read_the_database_from_a_secret_and_start_workers_this_binary_accepts() {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let manifest = std::fs::read_to_string(deploy.join("kubernetes/worker.yaml")).unwrap();
    let k8s: serde_json::Value = serde_saphyr::from_str(&manifest).unwrap();
    assert_eq!(k8s["kind"], "Deployment");
    let container = &k8s["spec"]["template"]["spec"]["containers"][0];
    let env = container["env"].as_array().unwrap();
    let db = env.iter().find(|e| e["name"] == "ATTRACTOR_DB").expect("the database URL is given");
    assert_eq!(db["valueFrom"]["secretKeyRef"]["name"], "attractor-db", "from a Secret");
    let offers = env.iter().find(|e| e["name"] == "ATTRACTOR_WORKER_OFFERS").unwrap()["value"].as_str().unwrap();
    let containerfile = std::fs::read_to_string(deploy.join("worker.Containerfile")).unwrap();
    assert!(containerfile.contains(r#"ENTRYPOINT ["attractor", "worker"]"#), "{containerfile}");
    let sbatch = deploy.join("slurm/workers.sbatch");
    assert!(std::process::Command::new("bash").arg("-n").arg(&sbatch).status().unwrap().success());
    let script = std::fs::read_to_string(&sbatch).unwrap();
    assert!(script.contains("exec attractor worker --until-idle") && !script.contains("postgres://"), "{script}");
    // What the examples pass is what this binary's worker takes (and backs
    // here: python3 and git are installed): with nothing queued it exits 0.
    let cli = Cli::sqlite();
    let mut args: Vec<&str> = container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    args.splice(0..0, ["worker", "--until-idle", "--offers", offers]);
    cli.ok(&args);
}

/// Copies `examples/descent.suite.yaml` and its harness into `dir`, every
/// task needing the label `away`.
fn descent_copy(dir: &Path) -> PathBuf {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    std::fs::create_dir_all(dir.join("descent")).unwrap();
    for f in std::fs::read_dir(examples.join("descent")).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), dir.join("descent").join(f.file_name())).unwrap();
    }
    let text = std::fs::read_to_string(examples.join("descent.suite.yaml")).unwrap();
    let text = text.replace("    command: python3", "    needs: [away]\n    command: python3");
    assert_eq!(text.matches("needs: [away]").count(), 4, "{text}");
    let suite = dir.join("descent.suite.yaml");
    std::fs::write(&suite, text).unwrap();
    suite
}

#[tokio::test]
async fn a_worker_without_the_suite_s_folder_runs_its_runs_from_the_copy_in_the_store() {
    let pg = PgCluster::start();
    let reference = Cli::at(pg.database("reference"));
    let here = reference.dir.path().join("suites");
    let suite = descent_copy(&here).display().to_string();
    let args = ["run", &suite, "--epochs", "2", "--optimizer", "evolve", "--seed", "4"];
    let out = reference.cmd(&args).env("ATTRACTOR_WORKER_OFFERS", "away").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let alone = reference.descent_history();

    // The holder reads the folder and offers nothing; once it has put the
    // folder in the store, the folder goes away, as on another machine.
    let url = pg.database("shared");
    let shared = Cli::at(&url);
    let there = shared.dir.path().join("suites");
    let suite = descent_copy(&there).display().to_string();
    let args = ["run", &suite, "--epochs", "2", "--optimizer", "evolve", "--seed", "4"];
    let mut holder = shared.cmd(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let digest: String = wait_for("the suite's folder in the store", || async {
        sqlx::query_scalar("SELECT suite_bundle FROM run_requests WHERE suite_bundle IS NOT NULL")
            .fetch_optional(&pool)
            .await
            .ok()
            .flatten()
    })
    .await;
    std::fs::rename(&there, shared.dir.path().join("moved")).unwrap();
    let mut worker = workers(&shared, 1, &["--offers", "away"]).remove(0);
    assert!(holder.wait().unwrap().success(), "the run failed");
    assert!(worker.wait().unwrap().success(), "the worker failed");
    assert_eq!(shared.descent_history(), alone, "runs from the store's copy gave another history");
    let unpacked = shared.dir.path().join("runs/.suites").join(&digest);
    assert!(unpacked.join("descent.suite.yaml").is_file() && unpacked.join("descent/score.py").is_file());
    pool.close().await;
}
