//! The Attractor desktop app: the web front end (`ui/dist`) in a native
//! window, talking to the core's service facade through Tauri commands.
//!
//! This shell decides nothing. One command, `call`, runs any operation of the
//! facade by name through `attractor::service::operations::call` — the
//! function `attractor serve` runs for each HTTP route — so the window and a
//! browser cannot disagree: one declaration, one code path, two transports. Failures reach the front
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

use attractor::service::operations::{self, CallError, Input};
use attractor::service::types::{ApiError, ReportWritten};
use attractor::service::{Service, ServiceConfig};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tauri::{AppHandle, Emitter, Manager, RunEvent, State};
use tauri_plugin_dialog::DialogExt;
use tauri_plugin_notification::NotificationExt;

/// The Tauri event that carries bus events to the webview (the front end
/// listens to it instead of `/api/events`).
const BUS_EVENT: &str = "attractor:event";

type Facade<'a> = State<'a, Arc<Service>>;
type Reply<T> = Result<T, ApiError>;

/// Every operation of the facade, by name, with its arguments as one JSON
/// object (`attractor::service::operations`, where each is declared once for
/// both transports and the front end's client).
#[tauri::command(rename_all = "snake_case")]
async fn call(s: Facade<'_>, op: String, args: Option<Map<String, Value>>) -> Reply<Box<RawValue>> {
    let input = Input::Named(args.unwrap_or_default());
    match operations::call(s.inner(), &op, input).await {
        Ok(json) => RawValue::from_string(json)
            .map_err(|e| ApiError { error: format!("cannot send the answer: {e}"), validation: None }),
        Err(CallError::Input(message)) => Err(ApiError { error: message, validation: None }),
        Err(CallError::Service(e)) => Err(e.into()),
    }
}

// Only the desktop has these two: a report written into a folder the person
// picked (a browser downloads a zip instead), and the native picker.

/// Writes the suite's report (charts and `index.html`) into a folder: the
/// app's Export.
#[tauri::command(rename_all = "snake_case")]
async fn export_report(s: Facade<'_>, key: String, dir: String) -> Reply<ReportWritten> {
    Ok(s.write_report(&key, &dir).await?)
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

/// On a machine without a GPU to render with (no DRM render node: a virtual
/// machine, a remote or virtual display), WebKit would still paint and
/// composite the page through OpenGL — Mesa's software rasteriser (llvmpipe)
/// — and GDK and WebKit would load that GL stack into the window's own
/// process too, only to find no device: ~50 MiB of libraries (libLLVM alone
/// 44 MiB) resident in a process that never draws with them. Such a machine
/// gets WebKit's path without GL instead:
/// - `WEBKIT_SKIA_ENABLE_CPU_RENDERING`: Skia paints on the CPU (the first
///   frame took 0.6–1.6 s through llvmpipe, ~0.2 s this way);
/// - `WEBKIT_DISABLE_DMABUF_RENDERER`: frames reach the window without
///   GL-shared buffers (WebKit's non-composited mode);
/// - `GDK_GL=disable`: GDK does not set up GLX for the window;
/// - `WEBKIT_WEB_RENDER_DEVICE_FILE`: WebKit would open an EGL display in the
///   window's process only to ask it for the render node; there is none to
///   name, so it gets a placeholder and no EGL display is opened.
///
/// The four go together (the placeholder device is only safe without
/// DMA-BUFs): a person who set any of them chose their own rendering, and
/// the app sets none. The ones it sets are the window's alone: they are
/// named in [`attractor::process::WINDOW_ONLY_ENV`], and the commands the
/// app runs for tasks start without them.
///
/// Measured (bench/README.md, "The desktop window", session 20): the
/// window's process 171 → 115 MiB resident, all processes 490 → 367 MiB,
/// first screen 862 → 615 ms. With a GPU nothing changes.
#[cfg(target_os = "linux")]
fn render_without_gpu() {
    const NO_GPU: [(&str, &str); 4] = [
        ("WEBKIT_SKIA_ENABLE_CPU_RENDERING", "1"),
        ("WEBKIT_DISABLE_DMABUF_RENDERER", "1"),
        ("GDK_GL", "disable"),
        ("WEBKIT_WEB_RENDER_DEVICE_FILE", "/dev/null"),
    ];
    let gpu = std::fs::read_dir("/dev/dri")
        .map(|dir| dir.flatten().any(|e| e.file_name().to_string_lossy().starts_with("renderD")))
        .unwrap_or(false);
    if gpu || NO_GPU.iter().any(|(name, _)| std::env::var_os(name).is_some()) {
        return;
    }
    let names: Vec<&str> = NO_GPU.iter().map(|(name, _)| *name).collect();
    // SAFETY: called first thing in `main`, before any thread exists, so
    // nothing reads the environment meanwhile. WebKit's processes, which the
    // window starts later, inherit it.
    unsafe {
        for (name, value) in NO_GPU {
            std::env::set_var(name, value);
        }
        std::env::set_var(attractor::process::WINDOW_ONLY_ENV, names.join(","));
    }
}

/// The title of the dialog that says the app cannot start.
const CANNOT_START: &str = "Attractor cannot start";

/// Shows why the app cannot start in a native dialog, and waits for the
/// person to close it. Without a display (a terminal session), or should the
/// toolkit fail, the terminal's line is all there is.
fn tell_in_a_dialog(why: &str) {
    let text = format!(
        "{why}\n\nChoose another database with ATTRACTOR_DB=PATH, or fix db_path in the settings file ({}), \
         then start Attractor again.",
        attractor::service::settings::Settings::path_from_env().display()
    );
    let shown = std::panic::catch_unwind(|| {
        rfd::MessageDialog::new()
            .set_level(rfd::MessageLevel::Error)
            .set_title(CANNOT_START)
            .set_description(text.as_str())
            .set_buttons(rfd::MessageButtons::Ok)
            .show()
    });
    if shown.is_err() {
        eprintln!("attractor-desktop: (no dialog could be shown)");
    }
}

fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    render_without_gpu();

    // The facade opens before any window: a database that cannot be opened
    // is reported with its path instead of an empty window — on the
    // terminal, and in a dialog, since an app started from a desktop menu
    // has no terminal anyone reads.
    let opened = ServiceConfig::from_env().and_then(|c| tauri::async_runtime::block_on(Service::open(c)));
    let service = match opened {
        Ok(s) => s,
        Err(e) => {
            eprintln!("attractor-desktop: {e}");
            tell_in_a_dialog(&e.to_string());
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
                attractor::process::termination().await;
                handle.exit(0);
            });
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![call, export_report, pick_path])
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
