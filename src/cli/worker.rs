//! `attractor worker`: works the run queue of a database — requests the app
//! launched, `attractor run --queue` queued, or whose worker died — until
//! Ctrl-C (or, with `--until-idle`, until nothing is left). Any number of
//! workers may share a database; one suite runs on one worker at a time.

use std::path::PathBuf;

use clap::Args;
use tokio::sync::watch;

use super::{Failure, Global};
use crate::bus::{self, Bus, Event};
use crate::queue::{Machine, Worker};
use crate::store::Store;

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Requests worked at once (each a different suite).
    #[arg(long, default_value_t = 1, value_parser = super::between::<u32>(1, 64))]
    pub concurrency: u32,
    /// Stop once nothing is left to claim, instead of waiting for more.
    #[arg(long)]
    pub until_idle: bool,
    /// Where run directories go [default: `runs/<database name>` beside the database].
    #[arg(long, env = "ATTRACTOR_RUNS_DIR", value_name = "DIR")]
    pub runs_dir: Option<PathBuf>,
}

/// What this machine gives every run: run folders, the model endpoint and
/// name the Settings screen chose (else the environment's), the key from the
/// environment (the keychain when a model is configured and the environment
/// holds no key), the settings file's limits and prices, and the folders the
/// settings allow — what the app gives its runs.
pub(super) fn machine(db: &std::path::Path, runs_dir: Option<&PathBuf>) -> Result<Machine, Failure> {
    let env = |n: &str| std::env::var(n).ok();
    let settings_path = crate::service::settings::Settings::path_from_env();
    let app = crate::service::settings::Settings::load(&settings_path).map_err(|e| Failure::input(e.to_string()))?;
    let api_key = match app.names_model(&env) {
        true => tokio::task::block_in_place(|| crate::secrets::fallback_key(&env)),
        false => None,
    };
    Ok(Machine {
        runs_root: super::runs_root(db, runs_dir),
        model: app.machine_model(api_key),
        access: app.access(),
        env: std::sync::Arc::new(|n: &str| std::env::var(n).ok()),
    })
}

pub(super) async fn run(g: &Global, args: &WorkerArgs) -> Result<u8, Failure> {
    let db = super::db_path(g)?;
    let store = Store::open(&db).await?;
    let machine = machine(&db, args.runs_dir.as_ref())?;
    let bus = Bus::new();
    let persister = bus::persist(&bus, store.clone());
    let auditor = crate::auditor::spawn(&bus, crate::auditor::AuditConfig::default());
    let printer = (!g.quiet && !g.json).then(|| announce(&bus));
    let worker = Worker::new(store.clone(), bus.clone(), machine, "attractor worker");
    let (stop_tx, stop_rx) = watch::channel(false);
    let ctrl_c = tokio::spawn(async move {
        crate::process::termination().await;
        eprintln!("\ninterrupted: stopping the runs in flight; their epochs resume on the next claim");
        let _ = stop_tx.send(true);
    });
    if !g.quiet && !g.json {
        eprintln!(
            "worker: {} on {}, up to {} at once",
            crate::process::origin(),
            crate::store::shown_location(&db).display(),
            crate::counted(args.concurrency, "request")
        );
    }
    let worked = worker.serve(args.concurrency as usize, stop_rx, args.until_idle).await;
    ctrl_c.abort();
    bus.close();
    let _ = auditor.await;
    let _ = persister.await;
    if let Some(p) = printer {
        let _ = p.await;
    }
    store.close().await;
    let failed = worked.iter().filter(|w| w.outcome.is_err()).count();
    if g.json {
        let ids: Vec<i64> = worked.iter().map(|w| w.id).collect();
        println!("{}", serde_json::json!({ "worked": ids, "failed": failed }));
    }
    Ok(if failed > 0 { 1 } else { 0 })
}

/// One line per request claimed and ended.
fn announce(bus: &Bus) -> tokio::task::JoinHandle<()> {
    let mut rx = bus.subscribe();
    tokio::spawn(async move {
        while let Some(env) = rx.recv().await {
            match env.event {
                Event::LaunchStarted { launch_id, suite, .. } => {
                    eprintln!("request {launch_id}: suite `{suite}` started")
                }
                Event::LaunchEnded { launch_id, suite, status, error, .. } => match error {
                    Some(e) => eprintln!("request {launch_id}: suite `{suite}` {status}: {e}"),
                    None => eprintln!("request {launch_id}: suite `{suite}` {status}"),
                },
                _ => {}
            }
        }
    })
}

/// `attractor run --queue`: puts the request in the queue for a worker and
/// prints its id.
pub(super) async fn enqueue(
    g: &Global,
    store: &Store,
    suite: &str,
    req: &crate::outer::request::RunRequest,
) -> Result<u8, Failure> {
    let json = serde_json::to_string(req).map_err(|e| Failure::runtime(e.to_string()))?;
    match store.enqueue(suite, &json, None, crate::queue::is_abandoned).await? {
        Ok(id) => {
            if g.json {
                println!("{}", serde_json::json!({ "queued": id, "suite": suite }));
            } else if !g.quiet {
                println!("queued request {id} for suite `{suite}`; `attractor worker` runs it");
            }
            Ok(0)
        }
        Err(busy) => Err(Failure {
            code: super::EXIT_BUSY,
            message: format!(
                "suite `{suite}` already has request {} {} (by {})\n  hint: wait for it to finish, or cancel it on the app's Live screen",
                busy.id,
                busy.status.as_str(),
                busy.holder.as_deref().unwrap_or("nobody yet")
            ),
        }),
    }
}
