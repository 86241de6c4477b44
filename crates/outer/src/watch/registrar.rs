//! The watcher's actor: every decision about watched files and their runs.
//!
//! One task owns it, so two events about one path are never handled at the
//! same time. Each look at a path compares the disk with the store: the
//! outcome depends on what is there, not on which events arrived or in what
//! order — which is what makes bursts, renames, restarts and lost events safe.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify_debouncer_full::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::{mpsc, oneshot};

use super::commands::{self, PlannedCommand};
use super::{LaunchRefusal, Launcher, Request, WatchConfig, WatchError, is_watched_file};
use crate::artifact::{Registry, RegistryError};
use crate::bus::{Bus, Envelope, Event};
use crate::domain::stored::{WatchedFileKind, WatchedFileStatus};
use crate::store::{Store, StoreError, WatchedFileRow, WatchedFileWrite, WatchedFolderRow, WatchedRunRow};
use crate::suite::{self, RunMode, Suite, SuiteError, SuiteIssue};

mod runs;

type Result<T> = std::result::Result<T, WatchError>;

/// Watchers alive in this process, by owner name: a run owned by one of them
/// is in flight; a run owned by a watcher no longer here is an orphan.
static LIVE_OWNERS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

fn live_owners() -> std::sync::MutexGuard<'static, BTreeSet<String>> {
    LIVE_OWNERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether the watcher that took a run (`pid:nonce`) still exists.
fn owner_alive(owner: &str) -> bool {
    let Some(pid) = owner.split(':').next().and_then(|p| p.parse::<i32>().ok()) else { return false };
    if pid == std::process::id() as i32 {
        return live_owners().contains(owner);
    }
    crate::process::pid_alive(pid)
}

/// Runs one step of the watcher, turning a panic into an error.
async fn contained(step: impl std::future::Future<Output = Result<()>>) -> Result<()> {
    match futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(step)).await {
        Ok(result) => result,
        Err(panic) => {
            let why = crate::panic_message(panic.as_ref());
            tracing::error!("the watcher hit an internal error ({why}); it goes on watching — please report this bug");
            Ok(())
        }
    }
}

/// A batch of debounced file-system paths.
struct FsBatch {
    paths: Vec<PathBuf>,
    /// The event queue overflowed somewhere: scan everything.
    rescan: bool,
}

/// What checking a file's content came to, before it is saved.
struct Verdict {
    write: WatchedFileWrite,
    /// The suite, when the file is valid and registered.
    suite: Option<Suite>,
    /// Set when this look raised the approval question.
    asked: Option<(i64, Vec<PlannedCommand>)>,
    detail: Option<String>,
}

pub(super) struct Registrar {
    store: Store,
    bus: Bus,
    launcher: Arc<dyn Launcher>,
    config: WatchConfig,
    registry: Registry,
    owner: String,
    folders: Vec<WatchedFolderRow>,
    debouncer: Option<Debouncer<RecommendedWatcher, RecommendedCache>>,
    /// Folders whose events are followed now (a missing folder is not, until it is back).
    followed: BTreeSet<String>,
    fs_tx: mpsc::UnboundedSender<FsBatch>,
    fs_rx: Option<mpsc::UnboundedReceiver<FsBatch>>,
    /// Launch id → watched run id, for the runs this watcher started.
    running: HashMap<i64, i64>,
    /// A shutdown has begun: start nothing, and a cancelled run is queued again.
    paused: bool,
    idle_waiters: Vec<oneshot::Sender<()>>,
}

impl Registrar {
    pub(super) async fn new(store: Store, bus: Bus, launcher: Arc<dyn Launcher>, config: WatchConfig) -> Result<Self> {
        let registry = Registry::load(store.clone()).await.map_err(registry_error)?;
        // The start time and a counter tell apart the watchers of one process.
        static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let owner = format!("{}:{}-{n}", std::process::id(), crate::now_rfc3339());
        live_owners().insert(owner.clone());
        for r in store.requeue_orphaned_runs(owner_alive).await? {
            tracing::info!(suite = %r.suite_name, "a watched run its process left unfinished is queued again");
        }
        let (fs_tx, fs_rx) = mpsc::unbounded_channel();
        Ok(Registrar {
            store,
            bus,
            launcher,
            config,
            registry,
            owner,
            folders: Vec::new(),
            debouncer: None,
            followed: BTreeSet::new(),
            fs_tx,
            fs_rx: Some(fs_rx),
            running: HashMap::new(),
            paused: false,
            idle_waiters: Vec::new(),
        })
    }

    /// The actor's loop; ends on [`Request::Stop`] or when every handle is gone.
    pub(super) async fn run(mut self, mut requests: mpsc::UnboundedReceiver<Request>) {
        let mut bus_rx = self.bus.subscribe();
        let mut bus_open = true;
        let mut fs_rx = self.fs_rx.take().expect("the file event queue is taken once");
        if self.config.follow_events {
            self.start_debouncer();
        }
        if let Err(e) = self.resume().await {
            tracing::error!(error = %e, "the watcher could not resume its folders");
        }
        let mut ticker = tokio::time::interval(self.config.poll.max(Duration::from_millis(10)));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let step = tokio::select! {
                req = requests.recv() => match req {
                    None | Some(Request::Stop) => break,
                    Some(r) => self.on_request(r).await,
                },
                // A file that trips a bug must not stop the watcher for good:
                // the panic is reported and the watcher goes on.
                Some(batch) = fs_rx.recv() => contained(self.on_paths(batch)).await,
                env = bus_rx.recv(), if bus_open => match env {
                    Some(env) => self.on_bus(env).await,
                    None => {
                        bus_open = false;
                        Ok(())
                    }
                },
                _ = ticker.tick() => contained(self.on_tick()).await,
            };
            if let Err(e) = step {
                tracing::error!(error = %e, "the watcher hit an error");
            }
            if let Err(e) = self.pump_runs().await {
                tracing::error!(error = %e, "the watcher could not start a queued run");
            }
            self.wake_idle_waiters();
        }
        // Whatever the bus delivered before the stop (the ends of runs a
        // shutdown cancelled) is still recorded.
        while let Ok(env) = bus_rx.try_recv() {
            let _ = self.on_bus(env).await;
        }
        if let Some(d) = self.debouncer.take() {
            d.stop_nonblocking();
        }
        live_owners().remove(&self.owner);
    }

    fn start_debouncer(&mut self) {
        let tx = self.fs_tx.clone();
        let handler = move |result: DebounceEventResult| match result {
            Ok(events) => {
                let rescan = events.iter().any(|e| e.need_rescan());
                let paths = events.into_iter().flat_map(|e| e.event.paths).collect();
                let _ = tx.send(FsBatch { paths, rescan });
            }
            Err(errors) => {
                for e in errors {
                    tracing::warn!(error = %e, "file watching reported an error; rescanning");
                }
                let _ = tx.send(FsBatch { paths: Vec::new(), rescan: true });
            }
        };
        match new_debouncer(self.config.debounce, None, handler) {
            Ok(d) => self.debouncer = Some(d),
            Err(e) => tracing::error!(error = %e, "cannot follow file events; folders are only scanned"),
        }
    }

    fn follow(&mut self, folder: &Path) -> Result<()> {
        if let Some(d) = &mut self.debouncer {
            d.watch(folder, RecursiveMode::Recursive)
                .map_err(|e| WatchError::Notify { path: folder.to_path_buf(), message: e.to_string() })?;
            self.followed.insert(folder.display().to_string());
        }
        Ok(())
    }

    async fn refollow(&mut self, folder: &WatchedFolderRow) -> Result<()> {
        let root = PathBuf::from(&folder.path);
        if self.followed.remove(&folder.path)
            && let Some(d) = &mut self.debouncer
        {
            let _ = d.unwatch(&root);
        }
        if root.is_dir()
            && let Err(e) = self.follow(&root)
        {
            tracing::warn!(error = %e, "cannot follow a watched folder's events");
        }
        // Records under a missing folder are marked removed; an existing one
        // is looked at whole.
        for f in self.store.present_files_of_folder(folder.id).await? {
            if !Path::new(&f.path).exists() {
                self.mark_removed(&f).await?;
            }
        }
        self.scan_folder(folder).await
    }

    /// Every poll: answers given elsewhere, and folders that are back on
    /// disk (followed again and scanned for what they hold now).
    async fn on_tick(&mut self) -> Result<()> {
        if self.debouncer.is_some() && !self.paused {
            let back: Vec<WatchedFolderRow> = self
                .folders
                .iter()
                .filter(|f| !self.followed.contains(&f.path) && Path::new(&f.path).is_dir())
                .cloned()
                .collect();
            for folder in back {
                match self.follow(Path::new(&folder.path)) {
                    Ok(()) => self.scan_folder(&folder).await?,
                    Err(e) => tracing::warn!(error = %e, "cannot follow a watched folder's events"),
                }
            }
        }
        self.refresh_approvals().await
    }

    /// On start: follow and scan every remembered folder, catch up on answers.
    async fn resume(&mut self) -> Result<()> {
        self.folders = self.store.watched_folders().await?;
        for folder in self.folders.clone() {
            let path = PathBuf::from(&folder.path);
            if !path.is_dir() {
                tracing::warn!(folder = %folder.path, "a watched folder is missing; it is remembered and scanned when it is back");
                continue;
            }
            if let Err(e) = self.follow(&path) {
                tracing::warn!(error = %e, "cannot follow a watched folder's events");
            }
            self.scan_folder(&folder).await?;
        }
        self.refresh_approvals().await
    }

    async fn on_request(&mut self, req: Request) -> Result<()> {
        match req {
            Request::Add(path, reply) => {
                let r = self.add_folder(&path).await;
                let _ = reply.send(r);
            }
            Request::Remove(path, reply) => {
                let r = self.remove_folder(&path).await;
                let _ = reply.send(r);
            }
            Request::Rescan(reply) => {
                self.folders = self.store.watched_folders().await?;
                for folder in self.folders.clone() {
                    self.scan_folder(&folder).await?;
                }
                self.refresh_approvals().await?;
                let _ = reply.send(());
            }
            Request::Recheck(path, reply) => {
                if path.is_file() && is_watched_file(&path) && self.folder_of(&path).is_some() {
                    self.look_at(&path, true).await?;
                }
                let _ = reply.send(());
            }
            Request::WhenIdle(reply) => self.idle_waiters.push(reply),
            Request::Pause(reply) => {
                self.paused = true;
                if let Some(d) = self.debouncer.take() {
                    d.stop_nonblocking();
                }
                let _ = reply.send(());
            }
            Request::Stop => {}
        }
        Ok(())
    }

    async fn add_folder(&mut self, path: &Path) -> Result<WatchedFolderRow> {
        let text = path.display().to_string();
        let row = self.store.add_watched_folder(&text).await?;
        self.follow(path)?;
        self.folders = self.store.watched_folders().await?;
        self.bus.publish(Event::WatchedFolderAdded { folder: text });
        self.scan_folder(&row).await?;
        self.refresh_approvals().await?;
        Ok(row)
    }

    async fn remove_folder(&mut self, path: &Path) -> Result<bool> {
        let text = path.display().to_string();
        if !self.store.remove_watched_folder(&text).await? {
            return Ok(false);
        }
        if let Some(d) = &mut self.debouncer {
            // A folder deleted from disk is no longer watched by the OS either.
            let _ = d.unwatch(path);
        }
        self.followed.remove(&text);
        self.folders = self.store.watched_folders().await?;
        self.bus.publish(Event::WatchedFolderRemoved { folder: text });
        Ok(true)
    }

    /// The watched folder a path lies in (the deepest, when folders nest).
    fn folder_of(&self, path: &Path) -> Option<WatchedFolderRow> {
        self.folders.iter().filter(|f| path.starts_with(&f.path)).max_by_key(|f| f.path.len()).cloned()
    }

    // ----- looking at files ---------------------------------------------------

    async fn on_paths(&mut self, batch: FsBatch) -> Result<()> {
        if self.paused {
            return Ok(());
        }
        if batch.rescan {
            for folder in self.folders.clone() {
                self.scan_folder(&folder).await?;
            }
            return Ok(());
        }
        let mut gone = BTreeSet::new();
        let mut present = BTreeSet::new();
        let mut dirs = BTreeSet::new();
        for p in batch.paths {
            let Some(folder) = self.folder_of(&p) else { continue };
            if p == Path::new(&folder.path) {
                // Something happened to the folder itself — deleted, maybe
                // made again already: the OS watch may be gone with the old
                // folder, so it is set up anew and the folder scanned whole.
                self.refollow(&folder).await?;
                continue;
            }
            if hidden_below(Path::new(&folder.path), &p) {
                continue;
            }
            match std::fs::metadata(&p) {
                Ok(m) if m.is_dir() => {
                    dirs.insert(p);
                }
                Ok(m) if m.is_file() && is_watched_file(&p) => {
                    present.insert(p);
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    gone.insert(p);
                }
                Err(e) => tracing::warn!(path = %p.display(), error = %e, "cannot look at a watched path"),
            }
        }
        // Disappearances first: a rename's new path then finds the old
        // record already marked and takes it over.
        for p in gone {
            self.on_gone(&p).await?;
        }
        for d in dirs {
            present.extend(find_files(&d));
        }
        for p in present {
            self.on_present(&p).await?;
        }
        Ok(())
    }

    /// A path (file or folder) is gone: every record at or under it whose
    /// file is really gone is marked removed.
    async fn on_gone(&mut self, path: &Path) -> Result<()> {
        let Some(folder) = self.folder_of(path) else { return Ok(()) };
        if path == Path::new(&folder.path) && self.followed.remove(&folder.path) {
            // The OS dropped its watch with the folder; it is followed again
            // when it is back (see `on_tick`).
            if let Some(d) = &mut self.debouncer {
                let _ = d.unwatch(path);
            }
        }
        for f in self.store.present_files_of_folder(folder.id).await? {
            let p = Path::new(&f.path);
            if p.starts_with(path) && !p.exists() {
                self.mark_removed(&f).await?;
            }
        }
        Ok(())
    }

    async fn mark_removed(&mut self, f: &WatchedFileRow) -> Result<()> {
        if self.store.mark_watched_file_removed(f.id).await? {
            self.bus.publish(Event::WatchedFileUpdated {
                file_id: f.id,
                path: f.path.clone(),
                kind: WatchedFileKind::parse(&f.kind),
                status: WatchedFileStatus::Removed,
                suite: f.suite_name.clone(),
                suite_id: f.suite_id,
                detail: Some("the file is gone; its suite and runs are kept".into()),
            });
        }
        Ok(())
    }

    /// Scans a folder whole: records whose file is gone are marked removed,
    /// then every watched file on disk is looked at.
    async fn scan_folder(&mut self, folder: &WatchedFolderRow) -> Result<()> {
        let root = PathBuf::from(&folder.path);
        if !root.is_dir() {
            return Ok(());
        }
        for f in self.store.present_files_of_folder(folder.id).await? {
            if !Path::new(&f.path).exists() {
                self.mark_removed(&f).await?;
            }
        }
        for p in find_files(&root) {
            self.on_present(&p).await?;
        }
        Ok(())
    }

    /// Looks at one file on disk and brings the store in line with it.
    async fn on_present(&mut self, path: &Path) -> Result<()> {
        self.look_at(path, false).await
    }

    /// [`Self::on_present`]; with `again`, a file whose bytes did not change
    /// is checked anyway (a problem file it names may have).
    async fn look_at(&mut self, path: &Path, again: bool) -> Result<()> {
        let Some(folder) = self.folder_of(path) else { return Ok(()) };
        let text_path = path.display().to_string();
        let kind = if suite::taskfile::is_task_file(path) { "task" } else { "suite" };
        let bytes = match read_capped(path, self.config.max_file_bytes) {
            Ok(b) => b,
            Err(Unreadable::Gone) => return self.on_gone(path).await,
            Err(Unreadable::Other(message)) => {
                let write = WatchedFileWrite {
                    folder_id: folder.id,
                    path: text_path,
                    kind: kind.into(),
                    content_hash: String::new(),
                    status: "invalid".into(),
                    issues_json: Some(issues_json(&[commands::file_issue(
                        path,
                        message.clone(),
                        "make the file a readable YAML file of at most 1 MiB",
                    )])),
                    run_mode: "manual".into(),
                    ..WatchedFileWrite::default()
                };
                let row = self.store.save_watched_file(&write).await?;
                self.publish_file(&row, Some(format!("{}:1:1: {message}", path.display())));
                return Ok(());
            }
        };
        let hash = commands::content_hash(&bytes);
        let existing = self.store.watched_file_by_path(&text_path).await?;
        if let Some(f) = &existing
            && f.content_hash == hash
            && f.status != "removed"
            && !again
        {
            // Unchanged: only what follows from it (a queued run) may be due.
            return self.follow_up(f).await;
        }

        // Same content as a file that just disappeared: that file, moved.
        let mut keep_name = None;
        let mut moved_from = None;
        for c in self.store.watched_files_with_hash(&hash, &text_path).await? {
            if Path::new(&c.path).exists() || c.path.contains("#removed-") {
                continue;
            }
            let recent = c.removed_at.as_deref().is_none_or(|at| removed_within(at, self.config.rename_window));
            if recent {
                self.store.move_watched_file(c.id, &text_path, folder.id, &c.status).await?;
                keep_name = c.suite_name.clone();
                moved_from = Some(c.path.clone());
                break;
            }
        }

        let mut verdict = self.check(&folder, path, &bytes, &hash, keep_name.as_deref()).await?;
        if let Some(from) = moved_from {
            verdict.detail = Some(format!("moved from {from}"));
        }
        let row = self.store.save_watched_file(&verdict.write).await?;
        self.publish_file(&row, verdict.detail.clone());
        if let (Some((intervention_id, planned)), Some(s)) = (&verdict.asked, &verdict.suite) {
            self.bus.publish(Event::ExecutionApprovalRequested {
                intervention_id: *intervention_id,
                path: row.path.clone(),
                suite: s.name.clone(),
                commands: planned.iter().map(commands::describe).collect(),
            });
        }
        self.follow_up(&row).await
    }

    /// Validates, registers and, where needed, asks for approval.
    async fn check(
        &mut self,
        folder: &WatchedFolderRow,
        path: &Path,
        bytes: &[u8],
        hash: &str,
        keep_name: Option<&str>,
    ) -> Result<Verdict> {
        let kind = if suite::taskfile::is_task_file(path) { "task" } else { "suite" };
        let mut write = WatchedFileWrite {
            folder_id: folder.id,
            path: path.display().to_string(),
            kind: kind.into(),
            content_hash: hash.to_string(),
            run_mode: "manual".into(),
            ..WatchedFileWrite::default()
        };
        let invalid = |mut write: WatchedFileWrite, e: SuiteError| {
            let detail = e.issues.first().map(|i| format!("{}: {}", i.location, i.message));
            write.status = "invalid".into();
            write.issues_json = Some(issues_json(&e.issues));
            Verdict { write, suite: None, asked: None, detail }
        };
        let what = if kind == "task" { "task file" } else { "suite file" };
        let text = match suite::decode_text(bytes.to_vec(), path, what, suite::SUITE_FILE_HINT) {
            Ok(text) => text,
            Err(e) => return Ok(invalid(write, e)),
        };
        let access = &self.config.access;
        let parsed = if kind == "task" {
            suite::parse_task_file_with(&text, path, keep_name, access)
        } else {
            suite::parse_with(&text, path, access)
        };
        let s = match parsed {
            Ok(s) => s,
            Err(e) => return Ok(invalid(write, e)),
        };
        let planned = match commands::planned_commands(&s) {
            Ok(p) => p,
            Err(e) => return Ok(invalid(write, e)),
        };
        write.suite_name = Some(s.name.clone());
        write.run_mode = s.run.as_str().to_string();

        let failed = |mut write: WatchedFileWrite, message: String| {
            write.status = "failed".into();
            write.error = Some(message.clone());
            Verdict { write, suite: None, asked: None, detail: Some(message) }
        };
        if let Some(other) = self.store.suite_claimed_elsewhere(&s.name, &write.path, hash).await? {
            return Ok(failed(
                write,
                format!(
                    "suite `{}` is already defined by {}\n  hint: give this file another suite name (`name:` in a suite file, `suite:` in a task file)",
                    s.name, other.path
                ),
            ));
        }
        for def in s.artifacts.clone() {
            match self.registry.declare(def).await {
                Ok(()) => {}
                Err(RegistryError::Store(StoreError::Conflict(m))) => return Ok(failed(write, m)),
                Err(e) => return Err(registry_error(e)),
            }
        }
        let tasks_json = serde_json::to_string(&s.tasks).map_err(StoreError::from)?;
        let baseline_json = serde_json::to_string(&s.baseline_artifacts).map_err(StoreError::from)?;
        let suite_id = self.store.upsert_suite(&s.name, &tasks_json, &baseline_json, Some(&write.path)).await?;
        write.suite_id = Some(suite_id);

        let mut asked = None;
        let detail;
        if planned.is_empty() {
            write.status = "ready".into();
            detail = Some(format!("registered as suite `{}` (runs no commands)", s.name));
        } else {
            let key = commands::approval_key(hash, &planned);
            let commands_json = serde_json::to_string(&planned).map_err(StoreError::from)?;
            let question = commands::question(path, &s, suite_id, hash, &planned);
            let (approval, created) =
                self.store.ensure_execution_approval(&key, hash, &commands_json, &question).await?;
            write.approval_key = Some(key);
            write.status = match (approval.status.as_str(), approval.approved()) {
                ("pending", _) => "awaiting_approval",
                (_, true) => "ready",
                _ => "rejected",
            }
            .into();
            detail = Some(match write.status.as_str() {
                "awaiting_approval" => format!(
                    "registered as suite `{}`; its {} for approval (intervention {})",
                    s.name,
                    if planned.len() == 1 {
                        "command waits".to_string()
                    } else {
                        format!("{} wait", crate::counted(planned.len(), "command"))
                    },
                    approval.intervention_id
                ),
                "ready" => format!("registered as suite `{}`; its commands were approved before", s.name),
                _ => format!("registered as suite `{}`; running its commands was rejected before", s.name),
            });
            if created {
                asked = Some((approval.intervention_id, planned));
            }
        }
        Ok(Verdict { write, suite: Some(s), asked, detail })
    }

    fn publish_file(&self, f: &WatchedFileRow, detail: Option<String>) {
        self.bus.publish(Event::WatchedFileUpdated {
            file_id: f.id,
            path: f.path.clone(),
            kind: WatchedFileKind::parse(&f.kind),
            status: WatchedFileStatus::parse(&f.status),
            suite: f.suite_name.clone(),
            suite_id: f.suite_id,
            detail,
        });
    }

    /// What a file's state makes due: one queued run for a ready `run: auto` file.
    async fn follow_up(&mut self, f: &WatchedFileRow) -> Result<()> {
        if f.status != "ready" || f.run_mode != RunMode::Auto.as_str() {
            return Ok(());
        }
        let Some(suite) = &f.suite_name else { return Ok(()) };
        if let Some(run) = self.store.queue_watched_run(f.id, suite, &f.content_hash).await? {
            self.publish_run(&run, &f.path);
        }
        Ok(())
    }

    /// Applies answers given since (here, in another process, or while no
    /// watcher ran) to the files waiting for them.
    async fn refresh_approvals(&mut self) -> Result<()> {
        for (file_id, answer) in self.store.answered_approvals_of_waiting_files().await? {
            let status = if answer == "approve" { "ready" } else { "rejected" };
            self.store.set_watched_file_status(file_id, status).await?;
            if let Some(f) = self.store.watched_file(file_id).await? {
                let detail = if status == "ready" {
                    "a person approved its commands"
                } else {
                    "a person rejected running its commands"
                };
                self.publish_file(&f, Some(detail.into()));
                self.follow_up(&f).await?;
            }
        }
        Ok(())
    }
}

fn registry_error(e: RegistryError) -> WatchError {
    match e {
        RegistryError::Store(s) => WatchError::Store(s),
        other => WatchError::Store(StoreError::Conflict(other.to_string())),
    }
}

enum Unreadable {
    Gone,
    Other(String),
}

/// Reads a file of at most `cap` bytes.
fn read_capped(path: &Path, cap: u64) -> std::result::Result<Vec<u8>, Unreadable> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Unreadable::Gone,
        _ => Unreadable::Other(format!("cannot read the file: {e}")),
    })?;
    if meta.len() > cap {
        return Err(Unreadable::Other(format!(
            "the file is {} bytes, more than the {cap} a suite file may have",
            meta.len()
        )));
    }
    std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Unreadable::Gone,
        _ => Unreadable::Other(format!("cannot read the file: {e}")),
    })
}

/// Every watched file under `root`, hidden folders and symlinked folders
/// left out (a link could loop or lead outside the folder).
fn find_files(root: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_str().is_some_and(|n| n.starts_with('.')))
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file() && is_watched_file(e.path()))
        .map(|e| e.into_path())
        .collect()
}

/// Whether a path lies in (or is) a hidden file or folder below `root`:
/// `.git`, editors' swap folders and the like are not looked at.
fn hidden_below(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root)
        .map(|rel| rel.components().any(|c| c.as_os_str().to_str().is_some_and(|n| n.starts_with('.'))))
        .unwrap_or(false)
}

fn removed_within(at: &str, window: Duration) -> bool {
    let Ok(at) = chrono::DateTime::parse_from_rfc3339(at) else { return false };
    let age = crate::time::now().signed_duration_since(at);
    age.to_std().map_or(true, |a| a <= window)
}

/// Issues as the store keeps them (the service's located-issue view).
fn issues_json(issues: &[SuiteIssue]) -> String {
    let list: Vec<serde_json::Value> = issues
        .iter()
        .map(|i| {
            serde_json::json!({
                "file": i.location.file.display().to_string(),
                "line": i.location.line,
                "column": i.location.column,
                "field": i.field,
                "message": i.message,
                "hint": i.hint,
            })
        })
        .collect();
    serde_json::Value::Array(list).to_string()
}
