//! `attractor watch`: the folder watcher in the foreground.
//!
//! `attractor watch DIR…` remembers the folders and watches them together
//! with the ones remembered before, printing each registration, invalid file
//! (file:line:column), approval question and watched run as it happens,
//! until Ctrl-C (exit 130, like `run`). `--once` scans, starts the runs that
//! are approved and due, waits for them and exits — 2 when a watched file is
//! invalid, so scripts can check a folder. `--list` and `--remove DIR` show
//! and change what is remembered. The work itself is the service facade's
//! watcher, the same one `attractor serve` runs.

use std::path::PathBuf;

use clap::Args;

use super::{Failure, Global, db_path};
use crate::bus::{Envelope, Event};
use crate::service::types::WatchedFolders;
use crate::service::{Service, ServiceConfig};
use crate::watch::WatchConfig;

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Folders to watch, remembered across restarts [default: the remembered ones].
    pub dirs: Vec<PathBuf>,
    /// Scan once, run what is approved and due, wait for it, then exit (2 when a file is invalid).
    #[arg(long)]
    pub once: bool,
    /// List the watched folders and their files, then exit.
    #[arg(long, conflicts_with_all = ["once", "remove", "dirs"])]
    pub list: bool,
    /// Stop watching a folder (its files' history and suites stay), then exit.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["once", "dirs"])]
    pub remove: Vec<PathBuf>,
    /// Quiet time after a file's last change before it is looked at.
    #[arg(long, default_value_t = 500, value_name = "MS")]
    pub debounce_ms: u64,
    /// Where run directories go [default: a `runs` folder beside the database].
    #[arg(long, env = "ATTRACTOR_RUNS_DIR", value_name = "DIR")]
    pub runs_dir: Option<PathBuf>,
}

pub async fn watch(g: &Global, args: &WatchArgs) -> Result<u8, Failure> {
    let mut config = ServiceConfig::new(db_path(g)?);
    config.runs_root = args.runs_dir.clone();
    let service = Service::open(config).await.map_err(|e| Failure::runtime(e.to_string()))?;
    // Subscribed before anything starts, so the first scan is printed too.
    let printer = spawn_printer(service.subscribe(), g);
    let code = drive(g, args, &service).await;
    // Cancels watched runs in flight (they resume on the next start) and
    // closes the bus, which ends the printer once it has printed everything.
    service.shutdown().await;
    let _ = printer.await;
    code
}

async fn drive(g: &Global, args: &WatchArgs, service: &std::sync::Arc<Service>) -> Result<u8, Failure> {
    if args.list {
        let watched = service.watched().await.map_err(|e| Failure::runtime(e.to_string()))?;
        print_list(g, &watched);
        return Ok(0);
    }
    if !args.remove.is_empty() {
        return remove(g, args, service).await;
    }

    let config = WatchConfig {
        debounce: std::time::Duration::from_millis(args.debounce_ms),
        follow_events: !args.once,
        ..WatchConfig::default()
    };
    service.start_watching(config).await.map_err(|e| Failure::runtime(e.to_string()))?;
    for dir in &args.dirs {
        service.add_watched_folder(&dir.display().to_string()).await.map_err(|e| Failure::input(e.to_string()))?;
    }
    let watched = service.watched().await.map_err(|e| Failure::runtime(e.to_string()))?;
    if watched.folders.is_empty() {
        return Err(Failure::input(
            "no folder to watch\n  hint: `attractor watch DIR` watches DIR (and remembers it for next time)",
        ));
    }

    let interrupted = if args.once {
        tokio::select! {
            _ = service.watch_until_idle() => false,
            () = crate::process::termination() => true,
        }
    } else {
        if !g.quiet && !g.json {
            let names: Vec<&str> = watched.folders.iter().map(|f| f.path.as_str()).collect();
            println!("watching {} (Ctrl-C to stop)", names.join(", "));
        }
        crate::process::termination().await;
        true
    };
    let invalid = service
        .watched()
        .await
        .map(|w| w.files.iter().filter(|f| matches!(f.status.as_str(), "invalid" | "failed")).count())
        .unwrap_or(0);
    if interrupted {
        eprintln!("\ninterrupted: stopping; watched runs in flight resume on the next start");
    }
    Ok(if interrupted {
        130
    } else if invalid > 0 {
        2
    } else {
        0
    })
}

async fn remove(g: &Global, args: &WatchArgs, service: &Service) -> Result<u8, Failure> {
    let folders = service.store().watched_folders().await?;
    let mut code = 0;
    for dir in &args.remove {
        let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        let text = canonical.display().to_string();
        match folders.iter().find(|f| f.path == text || Some(f.path.as_str()) == dir.to_str()) {
            Some(f) => {
                service.store().remove_watched_folder(&f.path).await?;
                if !g.quiet {
                    println!("no longer watching {} (its files' history and suites stay)", f.path);
                }
            }
            None => {
                eprintln!("error: {} is not watched\n  hint: `attractor watch --list` shows the watched folders", text);
                code = 2;
            }
        }
    }
    Ok(code)
}

fn print_list(g: &Global, w: &WatchedFolders) {
    if g.json {
        println!("{}", serde_json::to_string_pretty(w).unwrap_or_default());
        return;
    }
    if w.folders.is_empty() {
        println!("no watched folders (`attractor watch DIR` adds one)");
        return;
    }
    for folder in &w.folders {
        let missing = if folder.exists { "" } else { " — missing on disk" };
        println!("{} ({}){missing}", folder.path, crate::counted(folder.files, "file"));
        for f in w.files.iter().filter(|f| f.folder_id == folder.id) {
            let name = f.path.strip_prefix(&folder.path).unwrap_or(&f.path).trim_start_matches('/');
            let approval = f
                .approval
                .as_ref()
                .map_or(String::new(), |a| format!(" [approval {}: intervention {}]", a.status, a.intervention_id));
            let run = f.run.as_ref().map_or(String::new(), |r| format!(" [run {}]", r.status));
            println!(
                "  {:<18} {:<5} {:<24} {name}{approval}{run}",
                f.status,
                f.kind,
                f.suite.as_deref().unwrap_or("-")
            );
            for i in &f.issues {
                println!("      {}:{}:{}: {}", i.file, i.line, i.column, i.message);
            }
            if let Some(e) = &f.error {
                println!("      {}", e.lines().next().unwrap_or_default());
            }
        }
    }
}

/// Prints the watcher's events as they come (one JSON object per line with --json).
fn spawn_printer(mut rx: tokio::sync::mpsc::UnboundedReceiver<Envelope>, g: &Global) -> tokio::task::JoinHandle<()> {
    let (quiet, json) = (g.quiet, g.json);
    tokio::spawn(async move {
        while let Some(env) = rx.recv().await {
            if quiet && !json {
                continue;
            }
            let Some(line) = describe(&env.event) else { continue };
            if json {
                println!("{}", serde_json::to_string(&env).unwrap_or_default());
            } else {
                println!("{line}");
            }
        }
    })
}

/// One event as a person reads it; `None` for events that are not the watcher's.
fn describe(e: &Event) -> Option<String> {
    Some(match e {
        Event::WatchedFolderAdded { folder } => format!("folder      {folder}"),
        Event::WatchedFolderRemoved { folder } => format!("unwatched   {folder}"),
        Event::WatchedFileUpdated { path, status, suite, detail, .. } => {
            let detail = detail.clone().unwrap_or_default();
            match status.as_str() {
                "invalid" => format!("invalid     {detail}"),
                "failed" => format!("failed      {path}: {detail}"),
                "removed" => format!("removed     {path}"),
                _ => format!("{:<11} {path} → suite `{}`: {detail}", status, suite.as_deref().unwrap_or("?")),
            }
        }
        Event::ExecutionApprovalRequested { intervention_id, path, commands, .. } => {
            let list: Vec<String> = commands.iter().map(|c| format!("              - {c}")).collect();
            format!(
                "approval    intervention {intervention_id}: {path} would run {}:\n{}\n              answer with `attractor answer {intervention_id} approve` (or reject), or in the app's inbox",
                crate::counted(commands.len(), "command"),
                list.join("\n")
            )
        }
        Event::WatchedRunUpdated { suite, status, launch_id, error, .. } => {
            let launch = launch_id.map(|l| format!(" (launch {l})")).unwrap_or_default();
            let error =
                error.as_deref().map(|e| format!(": {}", e.lines().next().unwrap_or_default())).unwrap_or_default();
            format!("run         suite `{suite}` {status}{launch}{error}")
        }
        _ => return None,
    })
}
