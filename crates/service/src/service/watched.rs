//! Watched folders: the watcher the facade owns, what it found, and the folders a
//! person adds or removes.

use super::*;

impl Service {
    /// Starts the folder watcher on the remembered folders (`attractor serve`
    /// and `attractor watch` call this once). Watched runs are launched here,
    /// like any launch.
    pub async fn start_watching(self: &Arc<Self>, mut config: WatchConfig) -> Result<()> {
        config.access = self.access();
        if lock(&self.watcher).is_some() {
            return Ok(());
        }
        let launcher = Arc::new(WatchLauncher(Arc::downgrade(self)));
        let watcher =
            Watcher::start(self.store.clone(), self.bus.clone(), launcher, config).await.map_err(watch_error)?;
        *lock(&self.watcher) = Some(watcher);
        Ok(())
    }

    pub(super) fn watcher(&self) -> Result<Watcher> {
        lock(&self.watcher).clone().ok_or_else(|| {
            ServiceError::Conflict(
                "this process is not watching folders (start it with `attractor serve` or `attractor watch`)".into(),
            )
        })
    }

    /// Scans every watched folder now; returns when the scan is done.
    pub async fn rescan_watched(&self) -> Result<()> {
        self.watcher()?.rescan().await.map_err(watch_error)
    }

    /// Waits until the watcher has nothing in flight (`attractor watch --once`).
    pub async fn watch_until_idle(&self) -> Result<()> {
        self.watcher()?.until_idle().await.map_err(watch_error)
    }

    /// The watched folders and every file found in them.
    pub async fn watched(&self) -> Result<WatchedFolders> {
        let folders = self.store.watched_folders().await?;
        let files = self.store.watched_files().await?;
        let approvals: HashMap<String, crate::store::ApprovalRow> =
            self.store.execution_approvals().await?.into_iter().map(|a| (a.approval_key.clone(), a)).collect();
        let runs: HashMap<(String, String), crate::store::WatchedRunRow> = self
            .store
            .watched_runs()
            .await?
            .into_iter()
            .map(|r| ((r.suite_name.clone(), r.content_hash.clone()), r))
            .collect();
        let folder_views = folders
            .iter()
            .map(|f| WatchedFolderView {
                id: f.id,
                path: f.path.clone(),
                added_at: f.added_at.clone(),
                exists: Path::new(&f.path).is_dir(),
                files: files.iter().filter(|x| x.folder_id == f.id).count(),
            })
            .collect();
        let file_views = files
            .into_iter()
            .map(|f| {
                let approval = f.approval_key.as_ref().and_then(|k| approvals.get(k)).map(|a| ApprovalView {
                    intervention_id: a.intervention_id,
                    status: match (a.status.as_str(), a.approved()) {
                        ("pending", _) => CommandApproval::Pending,
                        (_, true) => CommandApproval::Approved,
                        _ => CommandApproval::Rejected,
                    },
                    commands: serde_json::from_str(&a.commands_json).unwrap_or_default(),
                });
                let run = f.suite_name.as_ref().and_then(|s| runs.get(&(s.clone(), f.content_hash.clone()))).map(|r| {
                    WatchedRunView {
                        id: r.id,
                        status: WatchedRunStatus::parse(&r.status),
                        launch_id: r.launch_id,
                        suite_id: r.suite_id,
                        queued_at: r.queued_at.clone(),
                        started_at: r.started_at.clone(),
                        finished_at: r.finished_at.clone(),
                        error: r.error.clone(),
                    }
                });
                WatchedFileView {
                    id: f.id,
                    folder_id: f.folder_id,
                    issues: f.issues_json.as_deref().and_then(|j| serde_json::from_str(j).ok()).unwrap_or_default(),
                    content_hash: f.content_hash.chars().take(12).collect(),
                    path: f.path,
                    kind: WatchedFileKind::parse(&f.kind),
                    status: WatchedFileStatus::parse(&f.status),
                    suite: f.suite_name,
                    suite_id: f.suite_id,
                    run_mode: WatchedRunMode::parse(&f.run_mode),
                    error: f.error,
                    approval,
                    run,
                    first_seen_at: f.first_seen_at,
                    updated_at: f.updated_at,
                    removed_at: f.removed_at,
                }
            })
            .collect();
        Ok(WatchedFolders { watching: lock(&self.watcher).is_some(), folders: folder_views, files: file_views })
    }

    /// Watches a folder from now on (remembered across restarts) and scans it
    /// at once: its files are in [`Service::watched`] when this returns.
    pub async fn add_watched_folder(&self, path: &str) -> Result<WatchedFolderView> {
        let path = resolve_path(path);
        if path.as_os_str().is_empty() {
            return Err(ServiceError::BadInput("give the path of a folder to watch".into()));
        }
        let row = self.watcher()?.add_folder(&path).await.map_err(watch_error)?;
        let watched = self.watched().await?;
        watched
            .folders
            .into_iter()
            .find(|f| f.id == row.id)
            .ok_or_else(|| ServiceError::Internal(format!("folder {} vanished from the store", row.path)))
    }

    /// Stops watching a folder (by id); its files and suites stay recorded.
    pub async fn remove_watched_folder(&self, id: i64) -> Result<WatchedFolders> {
        let folders = self.store.watched_folders().await?;
        let Some(folder) = folders.into_iter().find(|f| f.id == id) else {
            return Err(ServiceError::NotFound(format!("no watched folder {id}")));
        };
        self.watcher()?.remove_folder(Path::new(&folder.path)).await.map_err(watch_error)?;
        self.watched().await
    }

    // ----- validation and launches ---------------------------------------------
}

/// Launches the watcher's runs through the facade. It holds the service
/// weakly: the service owns the watcher, not the other way round.
struct WatchLauncher(std::sync::Weak<Service>);

#[async_trait::async_trait]
impl Launcher for WatchLauncher {
    async fn launch(&self, suite: suite::Suite) -> std::result::Result<i64, LaunchRefusal> {
        let Some(service) = self.0.upgrade() else {
            return Err(LaunchRefusal::Busy("the service is shutting down".into()));
        };
        service.ensure_keychain().await;
        // One epoch with every other setting at its default, exactly as a
        // launch request naming only the file would get.
        let req = RunRequest::new(suite.path.display().to_string());
        match service.launch_loaded(suite, &req).await {
            Ok(view) => Ok(view.id),
            Err(ServiceError::Conflict(m)) => Err(LaunchRefusal::Busy(m)),
            Err(ServiceError::InvalidSuite(v)) => Err(LaunchRefusal::Failed(
                v.issues
                    .iter()
                    .map(|i| format!("{}:{}:{}: {}", i.file, i.line, i.column, i.message))
                    .collect::<Vec<_>>()
                    .join("\n"),
            )),
            Err(e) => Err(LaunchRefusal::Failed(e.to_string())),
        }
    }
}

fn watch_error(e: WatchError) -> ServiceError {
    match e {
        e @ (WatchError::NotAFolder { .. } | WatchError::Notify { .. }) => ServiceError::BadInput(e.to_string()),
        e @ WatchError::NotWatched(_) => ServiceError::NotFound(e.to_string()),
        WatchError::Store(s) => s.into(),
        e @ WatchError::Stopped => ServiceError::Conflict(e.to_string()),
    }
}
