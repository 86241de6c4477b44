//! Keeps `ui/src/generated/` in step with the Rust types.
//!
//! The front end imports its API types from there. This test exports every
//! type the API sends or takes (and what they reference) into a temporary
//! folder and compares it with the committed files, so a change on the Rust
//! side that was not regenerated fails `cargo test` instead of failing in a
//! browser. To regenerate:
//!
//! ```sh
//! ATTRACTOR_UPDATE_GENERATED=1 cargo test --lib ts_export
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ts_rs::{Config, TS};

use super::operations;
use super::types::{ApiError, ReportWritten};
use crate::bus::Envelope;

/// Every type of the facade's operations (from their declarations), what
/// only one transport has (the event stream's `Envelope`, the error body,
/// the desktop's report export), and the operations' table itself.
fn export_all(cfg: &Config, dir: &Path) {
    operations::export_types(cfg).expect("the operations' types");
    for export in [ApiError::export_all, Envelope::export_all, ReportWritten::export_all] {
        export(cfg).expect("a transport's own type");
    }
    std::fs::write(dir.join("operations.ts"), operations::typescript(cfg)).unwrap();
}

fn read_dir(dir: &Path) -> BTreeMap<String, String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return BTreeMap::new() };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "ts"))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read_to_string(e.path()).unwrap_or_default()))
        .collect()
}

#[test]
fn the_committed_typescript_types_match_the_rust_types() {
    let tmp = tempfile::tempdir().unwrap();
    export_all(&Config::new().with_large_int("number").with_out_dir(tmp.path()), tmp.path());
    let fresh = read_dir(tmp.path());
    assert!(
        ["SuiteEpochs.ts", "Envelope.ts", "operations.ts"].iter().all(|f| fresh.contains_key(*f)),
        "{:?}",
        fresh.keys()
    );

    let committed_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ui/src/generated");
    if std::env::var_os("ATTRACTOR_UPDATE_GENERATED").is_some() {
        std::fs::create_dir_all(&committed_dir).unwrap();
        for stale in read_dir(&committed_dir).keys().filter(|k| !fresh.contains_key(*k)) {
            std::fs::remove_file(committed_dir.join(stale)).unwrap();
        }
        for (name, text) in &fresh {
            std::fs::write(committed_dir.join(name), text).unwrap();
        }
    }
    let committed = read_dir(&committed_dir);
    let differing: Vec<&String> = fresh
        .keys()
        .chain(committed.keys())
        .filter(|k| fresh.get(*k) != committed.get(*k))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(
        differing.is_empty(),
        "ui/src/generated is stale ({differing:?} differ)\n  hint: run `ATTRACTOR_UPDATE_GENERATED=1 cargo test --lib ts_export` and commit the result"
    );
}
