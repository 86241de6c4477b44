//! The folder watcher: suite and task files dropped into a watched folder
//! are validated, registered and — once a person allowed their commands —
//! optionally run.
//!
//! File-system events come from the `notify` crate through its debouncer, so
//! a file written in several bursts, an editor's save-by-rename or a copy of
//! a thousand files each become one look at the final state. The watcher
//! never trusts events alone: for every path it reads what is on disk now,
//! hashes it (SHA-256) and compares with what the store remembers, so a
//! missed or duplicated event, an overflowing event queue or a restart all
//! converge to the same result. On start and when a folder is added, the
//! folder is scanned whole, which picks up files that arrived while nothing
//! was watching.
//!
//! For each `*.suite.yaml` or `*.task.yaml` (see [`crate::suite::taskfile`]):
//!
//! - invalid → recorded with every issue located (file:line:column); the
//!   file is never modified;
//! - valid → the suite is registered in `task_suites` at once (it shows on
//!   the Suites screen); when it would run commands, an ExecutionApproval
//!   intervention lists exactly those commands, and nothing runs before a
//!   person approves. Approvals are remembered per content (an edit asks
//!   again; the same content elsewhere does not);
//! - `run: auto` → one run of one epoch is queued after approval, never a
//!   second for the same suite and content;
//! - renamed (same content at a new path, the old path gone) → the same
//!   record moves; deleted → marked removed, a run in progress goes on.
//!
//! The watcher is one task (an actor) that owns every decision, fed by the
//! debounced file events, requests from its [`Watcher`] handle, and the bus
//! (answers to approvals, ends of launches). It launches runs through a
//! [`Launcher`] — the service facade — so a watched run is an ordinary
//! launch, visible and cancellable like any other.

pub mod commands;
mod registrar;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use crate::bus::Bus;
use crate::store::{Store, StoreError, WatchedFolderRow};
use crate::suite::Suite;

pub use commands::{PlannedCommand, approval_key, content_hash, planned_commands};

/// How the watcher behaves. The defaults suit people; tests shorten the times.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct WatchConfig {
    /// Quiet time after a path's last event before it is looked at.
    #[serde(with = "millis")]
    pub debounce: Duration,
    /// How often answers given by another process (`attractor answer`) and
    /// runs that waited for a busy suite are checked.
    #[serde(with = "millis")]
    pub poll: Duration,
    /// Watched runs in flight at once from this process.
    pub max_concurrent_runs: usize,
    /// Larger files are refused (a suite file is a few kilobytes).
    pub max_file_bytes: u64,
    /// A file whose content matches one that disappeared at most this long
    /// ago is taken as that file, moved.
    #[serde(with = "millis")]
    pub rename_window: Duration,
    /// Follow file-system events; off, folders are only scanned (`--once`).
    pub follow_events: bool,
    /// Folders outside a watched file's own that its paths may lead into:
    /// the user's `allowed_outside` setting, never the file's own say.
    #[serde(skip)]
    pub access: crate::suite::Access,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            debounce: Duration::from_millis(500),
            poll: Duration::from_secs(2),
            max_concurrent_runs: 1,
            max_file_bytes: 1 << 20,
            rename_window: Duration::from_secs(10),
            follow_events: true,
            access: crate::suite::Access::default(),
        }
    }
}

mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

/// Why a launch did not start.
#[derive(Debug, Clone)]
pub enum LaunchRefusal {
    /// Not now: the suite is already running; the run stays queued.
    Busy(String),
    /// Never as it is: the run fails with this reason.
    Failed(String),
}

/// Starts suite runs for the watcher: one epoch of a suite already loaded
/// from the very bytes that were approved. Its end arrives on the bus as
/// [`crate::bus::Event::LaunchEnded`] with the returned launch id.
#[async_trait::async_trait]
pub trait Launcher: Send + Sync {
    async fn launch(&self, suite: Suite) -> Result<i64, LaunchRefusal>;
}

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("{path} is not a folder{}\n  hint: give the path of an existing folder", reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default())]
    NotAFolder { path: PathBuf, reason: Option<String> },
    #[error("{0} is not watched\n  hint: `attractor watch --list` shows the watched folders")]
    NotWatched(PathBuf),
    #[error("cannot watch {path}: {message}")]
    Notify { path: PathBuf, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the watcher has stopped")]
    Stopped,
}

/// Requests from the handle to the actor.
enum Request {
    Add(PathBuf, oneshot::Sender<Result<WatchedFolderRow, WatchError>>),
    Remove(PathBuf, oneshot::Sender<Result<bool, WatchError>>),
    Rescan(oneshot::Sender<()>),
    Recheck(PathBuf, oneshot::Sender<()>),
    WhenIdle(oneshot::Sender<()>),
    /// Stop starting runs and following files: a shutdown begins.
    Pause(oneshot::Sender<()>),
    Stop,
}

/// A handle to a running watcher; cheap to clone.
#[derive(Clone)]
pub struct Watcher {
    requests: mpsc::UnboundedSender<Request>,
    task: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

impl Watcher {
    /// Starts watching the remembered folders: runs left "running" by a
    /// process that is gone are queued again, each folder is scanned, and
    /// file events are followed from then on.
    pub async fn start(
        store: Store,
        bus: Bus,
        launcher: Arc<dyn Launcher>,
        config: WatchConfig,
    ) -> Result<Watcher, WatchError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let actor = registrar::Registrar::new(store, bus, launcher, config).await?;
        let task = tokio::spawn(actor.run(rx));
        Ok(Watcher { requests: tx, task: Arc::new(Mutex::new(Some(task))) })
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Request) -> Result<T, WatchError> {
        let (tx, rx) = oneshot::channel();
        self.requests.send(make(tx)).map_err(|_| WatchError::Stopped)?;
        rx.await.map_err(|_| WatchError::Stopped)
    }

    /// Watches a folder from now on (remembered across restarts) and scans it.
    pub async fn add_folder(&self, path: &Path) -> Result<WatchedFolderRow, WatchError> {
        let folder = canonical_folder(path)?;
        self.ask(|tx| Request::Add(folder, tx)).await?
    }

    /// Stops watching a folder; `false` when it was not watched.
    pub async fn remove_folder(&self, path: &Path) -> Result<bool, WatchError> {
        let folder = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.ask(|tx| Request::Remove(folder, tx)).await?
    }

    /// Scans every watched folder now and returns when it is done.
    pub async fn rescan(&self) -> Result<(), WatchError> {
        self.ask(Request::Rescan).await
    }

    /// Checks one file again even when its bytes did not change (a problem
    /// file it names may have), raising a new approval question if needed.
    pub async fn recheck(&self, path: &Path) -> Result<(), WatchError> {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.ask(|tx| Request::Recheck(path, tx)).await
    }

    /// Returns once no watched run of this process is in flight and none
    /// could start now.
    pub async fn until_idle(&self) -> Result<(), WatchError> {
        self.ask(Request::WhenIdle).await
    }

    /// First step of a shutdown: no new runs start and file events are no
    /// longer followed; runs cancelled from now on are queued again for the
    /// next start instead of counting as cancelled by a person.
    pub async fn pause(&self) {
        let _ = self.ask(Request::Pause).await;
    }

    /// Stops the watcher after it has read what the bus already delivered.
    pub async fn stop(&self) {
        let _ = self.requests.send(Request::Stop);
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = task {
            let _ = t.await;
        }
    }
}

/// The absolute, symlink-free form of an existing folder.
pub fn canonical_folder(path: &Path) -> Result<PathBuf, WatchError> {
    match std::fs::canonicalize(path) {
        Ok(p) if p.is_dir() => Ok(p),
        Ok(p) => Err(WatchError::NotAFolder { path: p, reason: Some("it is a file".into()) }),
        Err(e) => Err(WatchError::NotAFolder { path: path.to_path_buf(), reason: Some(e.to_string()) }),
    }
}

/// Whether the watcher looks at a file with this name: `*.suite.yaml` or
/// `*.task.yaml`, not hidden (editors' lock and swap files start with a dot).
pub fn is_watched_file(path: &Path) -> bool {
    let hidden = path.file_name().and_then(|n| n.to_str()).is_none_or(|n| n.starts_with('.'));
    !hidden && (crate::suite::taskfile::is_task_file(path) || crate::suite::taskfile::is_suite_file(path))
}

/// Why a manual launch of a watched file may not go ahead.
#[derive(Debug, Clone)]
pub struct LaunchBlocked {
    /// What to do, for a person.
    pub message: String,
    /// No question covers the file's current content and commands yet: the
    /// watcher should look at it again (a problem file may have changed).
    pub unasked: bool,
}

/// Whether a manual launch of `path` may go ahead: a file in a watched folder
/// that would run commands needs its approval first.
pub async fn launch_allowed(store: &Store, path: &Path, suite: &Suite) -> Result<(), LaunchBlocked> {
    let blocked = |message: String| LaunchBlocked { message, unasked: false };
    if !is_watched_file(path) {
        return Ok(());
    }
    let Ok(path) = std::fs::canonicalize(path) else { return Ok(()) };
    let folders = store.watched_folders().await.map_err(|e| blocked(e.to_string()))?;
    if !folders.iter().any(|f| path.starts_with(&f.path)) {
        return Ok(());
    }
    let Ok(planned) = planned_commands(suite) else { return Ok(()) };
    if planned.is_empty() {
        return Ok(());
    }
    let bytes = std::fs::read(&path).map_err(|e| blocked(format!("cannot read {}: {e}", path.display())))?;
    let key = approval_key(&content_hash(&bytes), &planned);
    match store.execution_approval(&key).await.map_err(|e| blocked(e.to_string()))? {
        Some(a) if a.approved() => Ok(()),
        Some(a) if a.status == "pending" => Err(blocked(format!(
            "{} is in a watched folder and its commands wait for a person's approval\n  hint: answer intervention {} in the inbox (`attractor answer {} approve`)",
            path.display(),
            a.intervention_id,
            a.intervention_id
        ))),
        Some(a) => Err(blocked(format!(
            "{} is in a watched folder and running its commands was rejected (intervention {})\n  hint: edit the file to ask again",
            path.display(),
            a.intervention_id
        ))),
        None => Err(LaunchBlocked {
            message: format!(
                "{} is in a watched folder and no approval covers the commands it would run now (new content, or a problem file it names changed)\n  hint: answer the approval question in the inbox, then launch again",
                path.display()
            ),
            unasked: true,
        }),
    }
}
