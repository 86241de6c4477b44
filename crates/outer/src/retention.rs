//! Storage stays bounded: `attractor gc` prunes what grows with every run
//! and is not history — the run folders of old epochs (workspace copies,
//! outputs) and cached model replies — then vacuums the database. The rows
//! (losses, stored outputs, artifacts, trees) stay, so every screen and
//! export still answers. A plan is made first and shown; `--dry-run` stops
//! there.

use std::path::{Path, PathBuf};

use crate::store::{Store, StoreError};

/// What to keep.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Run folders of each suite's last this many epochs stay.
    pub keep_epochs: u32,
    /// Cached model replies younger than this many days stay.
    pub cache_days: u32,
    /// Only folders inside this one are removed (the runs folder).
    pub runs_root: PathBuf,
}

/// What a collection would do.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Plan {
    /// Run folders to remove, with their size in bytes.
    pub run_dirs: Vec<(PathBuf, u64)>,
    /// Folders of prunable runs left alone: outside the runs folder.
    pub outside: Vec<PathBuf>,
    pub cache_entries: i64,
    pub cache_bytes: i64,
    /// Cached replies made before this moment (RFC 3339) are dropped: fixed
    /// by the plan, so applying it drops exactly what it counted.
    pub cache_before: String,
    /// The database file's size now.
    pub db_bytes: u64,
}

impl Plan {
    pub fn run_bytes(&self) -> u64 {
        self.run_dirs.iter().map(|(_, b)| b).sum()
    }

    /// What the plan does, for people.
    pub fn describe(&self, done: bool) -> String {
        let verb = |would: &'static str, did: &'static str| if done { did } else { would };
        let mut lines = vec![
            format!(
                "{} {}, {}",
                verb("would remove", "removed"),
                crate::counted(self.run_dirs.len(), "run folder"),
                megabytes(self.run_bytes())
            ),
            format!(
                "{} {}, {}",
                verb("would drop", "dropped"),
                crate::counted_as(self.cache_entries, "cached model reply", "cached model replies"),
                megabytes(u64::try_from(self.cache_bytes).unwrap_or(0))
            ),
        ];
        if !self.outside.is_empty() {
            lines.push(format!(
                "left {} outside the runs folder alone (e.g. {})",
                crate::counted(self.outside.len(), "run folder"),
                self.outside[0].display()
            ));
        }
        lines.push(if done {
            format!("vacuumed the database (was {})", megabytes(self.db_bytes))
        } else {
            format!("would vacuum the database (now {})", megabytes(self.db_bytes))
        });
        lines.join("\n")
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

#[derive(Debug, thiserror::Error)]
pub enum GcError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "cannot remove the run folder {path}: {source}\n  hint: check its permissions; what was removed before it stays removed"
    )]
    Remove { path: PathBuf, source: std::io::Error },
}

/// Works out what a collection would remove.
pub async fn plan(store: &Store, policy: &Policy) -> Result<Plan, GcError> {
    let root = std::fs::canonicalize(&policy.runs_root).unwrap_or_else(|_| policy.runs_root.clone());
    let mut out = Plan { db_bytes: file_bytes(store.path()), ..Plan::default() };
    for run in store.prunable_runs(i64::from(policy.keep_epochs)).await? {
        let dir = PathBuf::from(&run.run_dir);
        let Ok(real) = std::fs::canonicalize(&dir) else { continue };
        if !real.is_dir() {
            continue;
        }
        if real.starts_with(&root) && real != root {
            out.run_dirs.push((real.clone(), folder_bytes(&real)));
        } else {
            out.outside.push(dir);
        }
    }
    out.cache_before = (chrono::Utc::now() - chrono::Duration::days(i64::from(policy.cache_days)))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    (out.cache_entries, out.cache_bytes) = store.stale_cache(&out.cache_before).await?;
    Ok(out)
}

/// Carries a plan out: removes the folders (and epoch folders left empty),
/// drops the stale cache, vacuums.
pub async fn apply(store: &Store, plan: &Plan) -> Result<(), GcError> {
    for (dir, _) in &plan.run_dirs {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(GcError::Remove { path: dir.clone(), source }),
        }
        // The epoch's folder goes with its last run (an error means it is not empty).
        if let Some(parent) = dir.parent() {
            let _ = std::fs::remove_dir(parent);
        }
    }
    store.drop_stale_cache(&plan.cache_before).await?;
    store.vacuum().await?;
    Ok(())
}

fn file_bytes(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Bytes of the files under `dir`; links are not followed.
fn folder_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}
