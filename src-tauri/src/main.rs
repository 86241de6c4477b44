//! The Attractor desktop app: the web front end (`ui/dist`) in a native
//! window, talking to the core's service facade through Tauri commands.
//!
//! This shell decides nothing. Each command below hands its arguments to one
//! [`Service`] method and returns what it answers, exactly as `attractor
//! serve` does over HTTP (`attractor::http`), so the window and a browser
//! cannot disagree: one code path, two transports. Failures reach the front
//! end as the same [`ApiError`] body an HTTP error carries, and every bus
//! event is re-emitted to the webview as a [`BUS_EVENT`] Tauri event with the
//! payload the server-sent event stream sends.
//!
//! The database and the settings file are the ones the CLI and the server
//! use ([`ServiceConfig::from_env`]). Closing the window, Ctrl-C and SIGTERM
//! all end in [`Service::shutdown`], which cancels running launches cleanly.

// A release build on Windows opens no console window next to the app.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::process::ExitCode;
use std::sync::Arc;

use attractor::service::types::*;
use attractor::service::{Service, ServiceConfig};
use tauri::{AppHandle, Emitter, Manager, RunEvent, State};
use tauri_plugin_dialog::DialogExt;
use tauri_plugin_notification::NotificationExt;

/// The Tauri event that carries bus events to the webview (the front end
/// listens to it instead of `/api/events`).
const BUS_EVENT: &str = "attractor:event";

type Facade<'a> = State<'a, Arc<Service>>;
type Reply<T> = Result<T, ApiError>;

// Arguments keep the snake_case names of the HTTP API's JSON, so the front
// end sends the same field names over both transports.

#[tauri::command(rename_all = "snake_case")]
async fn overview(s: Facade<'_>) -> Reply<Overview> {
    Ok(s.overview().await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn suites(s: Facade<'_>) -> Reply<Vec<SuiteItem>> {
    Ok(s.suites().await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn suite_epochs(s: Facade<'_>, key: String, with_runs: bool) -> Reply<SuiteEpochs> {
    Ok(s.suite_epochs(&key, with_runs).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn suite_charts(s: Facade<'_>, key: String) -> Reply<SuiteCharts> {
    Ok(s.suite_charts(&key).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn suite_graph(s: Facade<'_>, key: String) -> Reply<SuiteGraph> {
    Ok(s.suite_graph(&key).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn suite_proposals(s: Facade<'_>, key: String) -> Reply<SuiteProposals> {
    Ok(s.suite_proposals(&key).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn watched(s: Facade<'_>) -> Reply<WatchedFolders> {
    Ok(s.watched().await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn add_watched_folder(s: Facade<'_>, path: String) -> Reply<WatchedFolderView> {
    Ok(s.add_watched_folder(&path).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn remove_watched_folder(s: Facade<'_>, id: i64) -> Reply<WatchedFolders> {
    Ok(s.remove_watched_folder(id).await?)
}

/// Writes the suite's report (charts and `index.html`) into a folder: the
/// app's Export.
#[tauri::command(rename_all = "snake_case")]
async fn export_report(s: Facade<'_>, key: String, dir: String) -> Reply<ReportWritten> {
    Ok(s.write_report(&key, &dir).await?)
}

/// A run with its output tails and its ASO telemetry steps.
#[tauri::command(rename_all = "snake_case")]
async fn run_detail(s: Facade<'_>, id: i64) -> Reply<RunDetail> {
    Ok(s.run_detail(id).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn run_epoch(s: Facade<'_>, id: i64) -> Reply<RunEpoch> {
    Ok(s.run_epoch(id).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn artifacts(s: Facade<'_>) -> Reply<Vec<ArtifactItem>> {
    Ok(s.artifacts().await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn artifact_versions(s: Facade<'_>, name: String) -> Reply<ArtifactHistory> {
    Ok(s.artifact_versions(&name).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn artifact_diff(s: Facade<'_>, name: String, from: i64, to: i64) -> Reply<LineDiff> {
    Ok(s.artifact_diff(&name, from, to).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn rollback_artifact(s: Facade<'_>, name: String, version: i64) -> Reply<ArtifactItem> {
    Ok(s.rollback_artifact(&name, version).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn interventions(s: Facade<'_>) -> Reply<Inbox> {
    Ok(s.interventions().await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn answer(s: Facade<'_>, id: i64, request: AnswerRequest) -> Reply<InterventionItem> {
    Ok(s.answer(id, &request).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn dismiss(s: Facade<'_>, id: i64) -> Reply<InterventionItem> {
    Ok(s.dismiss(id).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn validate(s: Facade<'_>, suite_path: String) -> Reply<Validation> {
    Ok(s.validate(&suite_path))
}

#[tauri::command(rename_all = "snake_case")]
async fn preview(s: Facade<'_>, request: RunRequest) -> Reply<LaunchPreview> {
    Ok(s.preview(&request).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn launches(s: Facade<'_>) -> Reply<Vec<LaunchView>> {
    Ok(s.launches().await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn launch(s: Facade<'_>, request: RunRequest) -> Reply<LaunchView> {
    Ok(s.launch(&request).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn launch_view(s: Facade<'_>, id: i64) -> Reply<LaunchView> {
    Ok(s.launch_view(id).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn cancel(s: Facade<'_>, id: i64) -> Reply<LaunchView> {
    Ok(s.cancel(id).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn settings(s: Facade<'_>) -> Reply<SettingsView> {
    // A key stored from the command line meanwhile shows at once.
    s.refresh_keychain().await;
    Ok(s.settings())
}

#[tauri::command(rename_all = "snake_case")]
async fn update_settings(s: Facade<'_>, update: SettingsUpdate) -> Reply<SettingsView> {
    Ok(s.update_settings(&update)?)
}

#[tauri::command(rename_all = "snake_case")]
async fn set_api_key(s: Facade<'_>, request: ApiKeyRequest) -> Reply<SettingsView> {
    Ok(s.set_api_key(&request).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn delete_api_key(s: Facade<'_>) -> Reply<SettingsView> {
    Ok(s.delete_api_key().await?)
}

/// The native picker: `suite` for a suite or task file, `folder` for a
/// folder. `None` when the person cancels.
#[tauri::command(rename_all = "snake_case")]
async fn pick_path(app: AppHandle, kind: String) -> Reply<Option<String>> {
    let dialog = app.dialog().file();
    // The blocking pickers wait on the GTK main loop, so they run off the
    // async runtime's threads.
    let picked = tauri::async_runtime::spawn_blocking(move || match kind.as_str() {
        "folder" => Ok(dialog.set_title("Choose a folder").blocking_pick_folder()),
        "suite" => Ok(dialog
            .set_title("Choose a suite or task file")
            .add_filter("Suite and task files", &["yaml", "yml"])
            .blocking_pick_file()),
        other => {
            Err(ApiError { error: format!("no picker for `{other}`: ask for `suite` or `folder`"), validation: None })
        }
    })
    .await
    .map_err(|e| ApiError { error: format!("the file picker failed: {e}"), validation: None })??;
    Ok(picked.and_then(|p| p.into_path().ok()).map(|p| p.display().to_string()))
}

#[tauri::command(rename_all = "snake_case")]
async fn test_llm(s: Facade<'_>) -> Reply<LlmCheck> {
    Ok(s.test_llm().await)
}

#[tauri::command(rename_all = "snake_case")]
async fn trajectory_stats(s: Facade<'_>, category: Option<String>) -> Reply<TrajectoryStats> {
    Ok(s.trajectory_stats(category.as_deref()).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn similar_trajectories(s: Facade<'_>, request: SimilarRequest) -> Reply<SimilarTrajectories> {
    Ok(s.similar_trajectories(&request).await?)
}

#[tauri::command(rename_all = "snake_case")]
async fn memories(s: Facade<'_>, category: Option<String>, limit: Option<u32>) -> Reply<Vec<MemoryItem>> {
    Ok(s.memories(category.as_deref(), limit).await?)
}

/// Resolves on the first Ctrl-C or (on Unix) SIGTERM; never when the signal
/// cannot be watched.
async fn termination() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

fn main() -> ExitCode {
    // The facade opens before any window: a database that cannot be opened
    // is reported on the terminal with its path instead of an empty window.
    let opened = ServiceConfig::from_env().and_then(|c| tauri::async_runtime::block_on(Service::open(c)));
    let service = match opened {
        Ok(s) => s,
        Err(e) => {
            eprintln!("attractor-desktop: {e}");
            return ExitCode::FAILURE;
        }
    };

    let app = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_notification::init())
        .manage(service.clone())
        .setup(|app| {
            // One bus subscription for the app's lifetime; the webview
            // re-attaches its listener on reload, the queue stays.
            let handle = app.handle().clone();
            let mut events = app.state::<Arc<Service>>().subscribe();
            tauri::async_runtime::spawn(async move {
                while let Some(envelope) = events.recv().await {
                    if let Err(e) = handle.emit(BUS_EVENT, &envelope) {
                        eprintln!("attractor-desktop: cannot forward an event to the window: {e}");
                    }
                    // A question waiting for a person also reaches the desktop,
                    // so it is seen while the window is in the background.
                    if let Some(n) = attractor::service::notify::for_event(&envelope.event) {
                        if let Err(e) = handle.notification().builder().title(&n.title).body(&n.body).show() {
                            eprintln!("attractor-desktop: cannot show a notification: {e}");
                        }
                    }
                }
            });
            // Folders remembered by `attractor watch`, the server or an
            // earlier session are watched again, as `attractor serve` does.
            let watching = app.state::<Arc<Service>>().inner().clone();
            tauri::async_runtime::spawn(async move {
                if let Err(e) = watching.start_watching(attractor::watch::WatchConfig::default()).await {
                    eprintln!("attractor-desktop: cannot watch the remembered folders: {e}");
                }
            });
            // Ctrl-C in the terminal that started the app, or SIGTERM from a
            // logout or a service manager, ends it the way closing the window
            // does, so running launches close their books instead of dying.
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move {
                termination().await;
                handle.exit(0);
            });
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            overview,
            suites,
            suite_epochs,
            suite_charts,
            suite_graph,
            suite_proposals,
            export_report,
            watched,
            add_watched_folder,
            remove_watched_folder,
            run_detail,
            run_epoch,
            artifacts,
            artifact_versions,
            artifact_diff,
            rollback_artifact,
            interventions,
            answer,
            dismiss,
            validate,
            preview,
            launches,
            launch,
            launch_view,
            cancel,
            settings,
            update_settings,
            set_api_key,
            delete_api_key,
            pick_path,
            test_llm,
            trajectory_stats,
            similar_trajectories,
            memories,
        ])
        .build(tauri::generate_context!());
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            eprintln!("attractor-desktop: cannot start the window: {e}");
            return ExitCode::FAILURE;
        }
    };

    app.run(move |_, event| {
        if let RunEvent::Exit = event {
            // Running launches are cancelled and close their books (their
            // unfinished epochs resume on the next launch), and every queued
            // event is written before the process ends.
            tauri::async_runtime::block_on(service.shutdown());
        }
    });
    ExitCode::SUCCESS
}
