//! `attractor worker`: works the run queue of a database — requests the app
//! launched, `attractor run --queue` queued, or whose worker died — until
//! Ctrl-C (or, with `--until-idle`, until no launch is queued or running).
//! Any number of workers may share a database: one holds each suite's
//! launch, and the runs of its epochs go to whichever workers are free and
//! offer what each task needs (`--offers`).

use std::path::PathBuf;

use clap::Args;
use tokio::sync::watch;

use super::{Failure, Global};
use crate::bus::{self, Bus, Event};
use crate::queue::{Machine, Worker};
use crate::store::Store;

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Jobs worked at once: launches held, or runs of launches others hold.
    #[arg(long, default_value_t = 1, value_parser = super::between::<u32>(1, 64))]
    pub concurrency: u32,
    /// Stop once no launch is queued or running on the database, instead of
    /// waiting for more.
    #[arg(long)]
    pub until_idle: bool,
    /// Labels this worker offers, comma-separated (`python,gpu`): it runs
    /// tasks whose `needs:` it covers [default: the settings file's
    /// `worker_offers`, else none: it runs tasks that need nothing].
    #[arg(long, env = "ATTRACTOR_WORKER_OFFERS", value_delimiter = ',', value_parser = crate::queue::offers::label)]
    pub offers: Vec<String>,
    /// Where run directories go [default: `runs/<database name>` beside the database].
    #[arg(long, env = "ATTRACTOR_RUNS_DIR", value_name = "DIR")]
    pub runs_dir: Option<PathBuf>,
}

/// What this machine gives every run: run folders, the model endpoint and
/// name the Settings screen chose (else the environment's), the key from the
/// environment (the keychain when a model is configured and the environment
/// holds no key), the settings file's limits and prices, and the folders the
/// settings allow — what the app gives its runs.
pub(super) fn machine(
    db: &std::path::Path,
    runs_dir: Option<&PathBuf>,
    app: &crate::service::settings::Settings,
) -> Result<Machine, Failure> {
    let env = |n: &str| std::env::var(n).ok();
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

/// This machine's settings file (the one the app's Settings screen writes).
pub(super) fn settings() -> Result<crate::service::settings::Settings, Failure> {
    let path = crate::service::settings::Settings::path_from_env();
    crate::service::settings::Settings::load(&path).map_err(|e| Failure::input(e.to_string()))
}

pub(super) async fn run(g: &Global, args: &WorkerArgs) -> Result<u8, Failure> {
    let db = super::db_path(g)?;
    let app = settings()?;
    // What it offers (the flag or the environment, else the settings
    // file's worker_offers), checked here before it claims anything.
    let said = match args.offers.is_empty() {
        true => crate::queue::offers::from_settings(&app.worker_offers).map_err(Failure::input)?,
        false => args.offers.clone(),
    };
    let offers = crate::queue::offers::checked(&said).map_err(|e| Failure::input(e.to_string()))?;
    let store = Store::open(&db).await?;
    let machine = machine(&db, args.runs_dir.as_ref(), &app)?;
    let bus = Bus::new();
    let persister = bus::persist(&bus, store.clone());
    let auditor = crate::auditor::spawn(&bus, crate::auditor::AuditConfig::default());
    let printer = (!g.quiet && !g.json).then(|| announce(&bus));
    let worker = Worker::new(store.clone(), bus.clone(), machine, "attractor worker").with_offers(offers.clone());
    let (stop_tx, stop_rx) = watch::channel(false);
    let ctrl_c = tokio::spawn(async move {
        crate::process::termination().await;
        eprintln!("\ninterrupted: stopping the runs in flight; their epochs resume on the next claim");
        let _ = stop_tx.send(true);
    });
    if !g.quiet && !g.json {
        eprintln!(
            "worker: {} on {}, up to {} at once{}",
            crate::process::origin(),
            crate::store::shown_location(&db).display(),
            crate::counted(args.concurrency, "job"),
            if offers.is_empty() { String::new() } else { format!(", offering {}", offers.join(", ")) }
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

/// `attractor workers`: every worker that served on the database, newest
/// first, and the runs queued per suite.
pub(super) async fn list(g: &Global, store: &Store) -> Result<(), Failure> {
    let view = crate::service::workers_view(store).await?;
    if g.json {
        println!("{}", serde_json::to_string_pretty(&view).unwrap_or_default());
        return Ok(());
    }
    if view.workers.is_empty() {
        println!("no worker has served on this database (start one with `attractor worker`)");
    }
    for w in &view.workers {
        let state = match w.state {
            crate::service::types::WorkerState::Serving => "serving".to_string(),
            crate::service::types::WorkerState::Quiet => format!("quiet for {:.0} s", w.quiet_secs),
            crate::service::types::WorkerState::Stopped => "stopped".to_string(),
        };
        let offers = if w.offers.is_empty() { "-".to_string() } else { w.offers.join(",") };
        println!("{:<44} {:<16} offers {:<16} {}", w.holder, state, offers, crate::counted(w.concurrency, "slot"));
    }
    for q in &view.queue {
        println!("suite `{}`: {} queued", q.suite, crate::counted(q.queued_runs, "run"));
    }
    Ok(())
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
