//! Compiles the Tauri configuration (`tauri.conf.json`, a link to the one at
//! the repository root) and the app's access-control list into the binary.
//!
//! The app manifest names every command the shell defines, so each one gets an
//! `allow-…` permission and a window may call only those its capability in
//! `tauri.conf.json` grants — nothing is callable by default.

fn main() {
    // `call` runs every facade operation (crates/service/src/service/operations.rs); the
    // other two are the desktop's own. The window is granted all three, so
    // it may run every operation, as a page of `attractor serve` may: the
    // window is the app's own UI, and the line the ACL draws is between it
    // and the rest of Tauri (plugins, the file system), which stays closed.
    // An operation that only some windows should reach would need a command
    // of its own.
    let commands = &["call", "export_report", "pick_path"];
    let attributes = tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(commands));
    if let Err(e) = tauri_build::try_build(attributes) {
        eprintln!("cannot build the Tauri context: {e:#}");
        std::process::exit(1);
    }
}
