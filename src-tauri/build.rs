//! Compiles the Tauri configuration (`tauri.conf.json`, a link to the one at
//! the repository root) and the app's access-control list into the binary.
//!
//! The app manifest names every command the shell defines, so each one gets an
//! `allow-…` permission and a window may call only those its capability in
//! `tauri.conf.json` grants — nothing is callable by default.

fn main() {
    let commands = &[
        "overview",
        "suites",
        "suite_epochs",
        "suite_charts",
        "suite_graph",
        "suite_proposals",
        "export_report",
        "watched",
        "add_watched_folder",
        "remove_watched_folder",
        "run_detail",
        "run_epoch",
        "artifacts",
        "artifact_versions",
        "artifact_diff",
        "rollback_artifact",
        "interventions",
        "answer",
        "dismiss",
        "validate",
        "preview",
        "launches",
        "launch",
        "launch_view",
        "cancel",
        "settings",
        "update_settings",
        "set_api_key",
        "delete_api_key",
        "pick_path",
        "test_llm",
        "trajectory_stats",
        "similar_trajectories",
        "memories",
    ];
    let attributes = tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(commands));
    if let Err(e) = tauri_build::try_build(attributes) {
        eprintln!("cannot build the Tauri context: {e:#}");
        std::process::exit(1);
    }
}
