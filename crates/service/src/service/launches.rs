//! Launches: a suite file validated and previewed, a run request queued and worked by
//! this process, the list of every launch on the database, and cancelling one.

use super::*;

/// A launch this process works: how to stop it at once, and its task.
pub(super) struct Launch {
    pub(super) cancel: watch::Sender<bool>,
    pub(super) task: Option<tokio::task::JoinHandle<()>>,
}

/// How many of the latest launches the Live screen lists.
pub(super) const LAUNCHES_SHOWN: u32 = 50;

/// A queued request as the app shows it. A running request whose worker
/// died reads as failed until a worker takes it over.
pub(super) fn launch_view(row: &crate::store::QueuedRequest, runs: Option<LaunchRuns>) -> LaunchView {
    let req: Option<RunRequest> = serde_json::from_str(&row.request_json).ok();
    let req = req.unwrap_or_else(|| RunRequest::new(""));
    let abandoned = crate::queue::is_abandoned(row);
    LaunchView {
        id: row.id,
        suite: row.suite_name.clone(),
        suite_path: req.suite_path.clone(),
        suite_id: row.suite_id,
        status: if abandoned { LaunchStatus::Failed } else { row.status },
        // What this launch set out to do: a resumed one continues a plan
        // with fewer epochs left than it asked for.
        epochs_requested: row.epochs_planned.and_then(|n| u32::try_from(n).ok()).unwrap_or(req.epochs),
        epochs_done: u32::try_from(row.epochs_done).unwrap_or(0),
        optimizer: req.optimizer,
        seed: row.seed.and_then(|s| u64::try_from(s).ok()),
        holder: row.holder.clone(),
        started_at: row.started_at.clone().unwrap_or_else(|| row.enqueued_at.clone()),
        finished_at: row.finished_at.clone(),
        error: if abandoned {
            Some("the process working it stopped; launch it again to resume the unfinished epoch".into())
        } else {
            row.error.clone()
        },
        request: req,
        epochs: epoch_span(row),
        runs,
    }
}

fn epoch_span(row: &crate::store::QueuedRequest) -> Option<EpochSpan> {
    let first = u32::try_from(row.first_epoch?).ok()?;
    let last = u32::try_from(row.last_epoch?).ok()?;
    Some(EpochSpan { first, last })
}

/// Some requests as the app shows them, with how their runs ended.
pub(super) async fn launch_views(
    store: &crate::store::Store,
    rows: &[crate::store::QueuedRequest],
) -> Result<Vec<LaunchView>> {
    let ids: Vec<i64> = rows.iter().filter(|r| r.first_epoch.is_some()).map(|r| r.id).collect();
    let tallies: HashMap<i64, LaunchRuns> = store
        .run_tallies(&ids)
        .await?
        .into_iter()
        .map(|t| {
            let count = |n: i64| u32::try_from(n).unwrap_or(u32::MAX);
            (t.id, LaunchRuns { ended: count(t.ended), failed: count(t.failed) })
        })
        .collect();
    Ok(rows.iter().map(|r| launch_view(r, Some(tallies.get(&r.id).copied().unwrap_or_default()))).collect())
}

impl Service {
    /// Checks a suite file the way a launch would, without running anything:
    /// the file, then what this database and model configuration would
    /// refuse a run of it for (`outer::preflight`).
    pub async fn validate(&self, path: &str) -> Validation {
        let resolved = resolve_path(path);
        let shown = resolved.display().to_string();
        match load_runnable(&resolved, &self.access()) {
            Ok(suite) => match self.refusals(&suite, &RunRequest::new(path)).await {
                Ok(Ok(())) => validation_of(&shown, Ok(&suite)),
                Ok(Err(e)) => validation_of(&shown, Err(&e)),
                // The database did not answer: the file's own verdict, the
                // launch reports the database's error.
                Err(e) => {
                    tracing::warn!("validate: the database's artifact names could not be read: {e}");
                    validation_of(&shown, Ok(&suite))
                }
            },
            Err(e) => validation_of(&shown, Err(&e)),
        }
    }

    /// What would refuse a run of a valid suite file here: an artifact name
    /// another suite holds, an agent task with no model to run it.
    async fn refusals(&self, suite: &suite::Suite, req: &RunRequest) -> Result<std::result::Result<(), SuiteError>> {
        // Only "no model at all" is a refusal here; a model setting that is
        // wrong is the preview's and the launch's error, in its own words.
        let has_model = !matches!(self.llm_client_with(&suite.llm, req), Ok(None));
        let declarations = self.store.declarations().await?;
        Ok(crate::outer::preflight::refusals(suite, has_model, &declarations))
    }

    /// [`Self::refusals`] as a launch's or a preview's error: the file's
    /// verdict with the issues, as for a file that does not load.
    async fn refuse(&self, suite: &suite::Suite, req: &RunRequest) -> Result<()> {
        self.refusals(suite, req).await?.map_err(|e| {
            ServiceError::InvalidSuite(Box::new(validation_of(&suite.path.display().to_string(), Err(&e))))
        })
    }

    pub(super) fn validate_with(&self, path: &str, access: &suite::Access) -> Validation {
        let resolved = resolve_path(path);
        let loaded = load_runnable(&resolved, access);
        validation_of(&resolved.display().to_string(), loaded.as_ref())
    }

    /// The folders a request's suite may reach: the settings' and its own.
    pub(super) fn access_for(&self, req: &RunRequest) -> suite::Access {
        let mut access = self.access();
        access.outside.extend(req.allow_outside.iter().map(|p| resolve_path(p)));
        access
    }

    /// Loads a request's suite after checking the request's own options.
    pub(super) fn load_requested(&self, req: &RunRequest) -> Result<suite::Suite> {
        req.validate().map_err(|e| ServiceError::BadInput(e.to_string()))?;
        let access = self.access_for(req);
        load_runnable(&resolve_path(&req.suite_path), &access)
            .map_err(|_| ServiceError::InvalidSuite(Box::new(self.validate_with(&req.suite_path, &access))))
    }

    /// What launching `req` would do: how many runs, and what the model may
    /// cost (the same preview `attractor run` prints). Nothing runs.
    pub async fn preview(&self, req: &RunRequest) -> Result<LaunchPreview> {
        let suite = self.load_requested(req)?;
        let model = self.llm_client_with(&suite.llm, req)?;
        if req.optimizer.needs_model() && model.is_none() {
            return Err(needs_model(req.optimizer));
        }
        self.refuse(&suite, req).await?;
        let registry = Registry::load(self.store.clone()).await?;
        let agent = req.agent_config(|n| (self.config.env)(n)).map_err(|e| ServiceError::BadInput(e.to_string()))?;
        // A suite with history goes on at the learning rate its last epoch
        // left (halved by each rollback): the form's rate starts a suite.
        let stored = match self.store.suite_by_name(&suite.name).await? {
            Some(row) => self.store.last_learning_rate(row.id).await?,
            None => None,
        };
        let continues = stored.filter(|lr| (lr - req.learning_rate).abs() > 1e-12).map(|lr| {
            format!(
                "η continues at {lr} from the suite's last epoch (the learning rate set here, {}, starts a suite without history)",
                req.learning_rate
            )
        });
        // A request that continues a stopped launch's plan (same settings)
        // does what is left of it, not its whole count again.
        let left = self.plan_left(&suite, req).await?;
        let mut asked = req.clone();
        if let Some(l) = &left {
            asked.epochs = l.epochs;
        }
        let resumes = left.map(|l| {
            let done = if l.runs_done > 0 {
                format!(", its {} of epoch {} kept", crate::counted(l.runs_done, "finished run"), l.next)
            } else {
                String::new()
            };
            if l.next == l.first {
                format!("continues the stopped launch's plan of epochs {}–{}{done}", l.first, l.last)
            } else {
                format!(
                    "continues the stopped launch's plan (epochs {}–{}): epochs {}–{} are left{done}",
                    l.first, l.last, l.next, l.last
                )
            }
        });
        let continues = match (resumes, continues) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        let candidates = crate::outer::estimate::proposal_candidates(&suite, &registry);
        let run = crate::outer::estimate::PlannedRun {
            suite: &suite,
            optimizer: asked.optimizer,
            epochs: asked.epochs,
            proposal_candidates: candidates,
            ideation_rounds: asked.tree.ideation_rounds,
            agent: &agent,
            supervisor_tier: !asked.no_llm,
        };
        let runs = u64::from(asked.epochs) * suite.tasks.len() as u64;
        Ok(LaunchPreview {
            runs: runs.saturating_sub(left.map_or(0, |l| l.runs_done)),
            plan: asked.plan_line(&suite, candidates),
            model: model.as_ref().and_then(|m| crate::outer::estimate::preview_line(&run, m)),
            continues,
        })
    }

    /// What a launch of `req` would have left of the suite's stopped plan,
    /// with the seed the queue would give it (`queue::prepare`).
    async fn plan_left(&self, suite: &suite::Suite, req: &RunRequest) -> Result<Option<crate::outer::PlanLeft>> {
        let mut config = req.run_config(PathBuf::new(), req.seed.unwrap_or(0));
        if req.seed.is_none() {
            match crate::outer::stopped_plan_seed(&self.store, &suite.name, &config).await? {
                Some(seed) => config.seed = seed,
                // A fresh seed: a plan of its own.
                None => return Ok(None),
            }
        }
        Ok(crate::outer::plan_left(&self.store, &suite.name, &config).await?)
    }

    /// Validates the request and its suite file, then runs it in the
    /// background. Progress arrives on the bus; the returned launch can be
    /// polled or cancelled.
    pub async fn launch(self: &Arc<Self>, req: &RunRequest) -> Result<LaunchView> {
        self.ensure_keychain().await;
        let suite = self.load_requested(req)?;
        let path = resolve_path(&req.suite_path);
        // A file found by the watcher runs nothing before a person approved it.
        if let Err(blocked) = crate::watch::launch_allowed(&self.store, &path, &suite).await {
            if blocked.unasked {
                // Its commands changed under an unchanged file (a problem
                // file): the watcher asks about them now.
                let watcher = lock(&self.watcher).clone();
                if let Some(w) = watcher {
                    let _ = w.recheck(&path).await;
                }
            }
            return Err(ServiceError::Conflict(blocked.message));
        }
        self.launch_loaded(suite, req).await
    }

    /// Queues a loaded (and, for watched files, approved) suite's request as
    /// this process's own and works it in the background. What can be known
    /// before it starts (the request's bounds, a model it needs, its agent
    /// configuration) is refused here, at once.
    pub(super) async fn launch_loaded(self: &Arc<Self>, suite: suite::Suite, req: &RunRequest) -> Result<LaunchView> {
        req.validate().map_err(|e| ServiceError::BadInput(e.to_string()))?;
        let suite = suite::check_runnable(suite)
            .map_err(|e| ServiceError::InvalidSuite(Box::new(validation_of(&suite_path_text(&e), Err(&e)))))?;
        let model = self.llm_client_with(&suite.llm, req)?;
        if req.optimizer.needs_model() && model.is_none() {
            return Err(needs_model(req.optimizer));
        }
        req.agent_config(|n| (self.config.env)(n)).map_err(|e| ServiceError::BadInput(e.to_string()))?;
        self.refuse(&suite, req).await?;
        // The worker loads the suite from its path: the one this launch read.
        let req = RunRequest { suite_path: suite.path.display().to_string(), ..req.clone() }.absolute();
        let worker =
            crate::queue::Worker::new(self.store.clone(), self.bus.clone(), self.machine(), "the Attractor app");
        let id = match worker.enqueue_own(&suite.name, &req).await? {
            Ok(id) => id,
            Err(busy) => {
                return Err(ServiceError::Conflict(format!(
                    "suite `{}` is already running (launch {}, by {}); cancel it or wait for it to finish",
                    suite.name,
                    busy.id,
                    busy.holder.as_deref().unwrap_or("the queue")
                )));
            }
        };
        let row = self.store.queued_request(id).await?.ok_or_else(|| no_launch(id))?;
        self.remember_suite_path(&suite.name, &req.suite_path);

        let (cancel_tx, cancel_rx) = watch::channel(false);
        let handle = tokio::runtime::Handle::current();
        let work = row.clone();
        // The runner's future borrows itself across awaits in a way the
        // compiler cannot prove `Send` (higher-ranked lifetimes in its
        // stream of task futures), so it cannot go to `tokio::spawn`. A
        // blocking-pool thread that drives it with `Handle::block_on` needs
        // no `Send`, and the runs it starts still use the shared runtime.
        let task = tokio::task::spawn_blocking(move || {
            handle.block_on(async move {
                let _ = worker.work(&work, cancel_rx).await;
            })
        });
        lock(&self.launches).insert(id, Launch { cancel: cancel_tx, task: Some(task) });
        self.one_view(row).await
    }

    /// What this machine gives every run it works: run folders, the model
    /// endpoint and key with the settings' limits, the allowed folders.
    pub(super) fn machine(&self) -> crate::queue::Machine {
        let s = lock(&self.settings).clone();
        let model = self.model_settings(&s);
        crate::queue::Machine {
            runs_root: self
                .config
                .runs_root
                .clone()
                .unwrap_or_else(|| crate::store::default_runs_root(&self.config.db_path)),
            model,
            access: s.access(),
            env: Arc::clone(&self.config.env),
        }
    }

    /// The model endpoint, name and key with the settings' limits and prices:
    /// what this machine gives every run, before a suite's and a request's.
    pub(super) fn model_settings(&self, s: &Settings) -> crate::llm::LlmSettings {
        s.machine_model(self.keychain_key())
    }

    /// The workers on the database and the runs queued for them.
    pub async fn workers(&self) -> Result<WorkersView> {
        Ok(workers_view(&self.store).await?)
    }

    /// The latest launches on this database, whichever process made them.
    pub async fn launches(&self) -> Result<Vec<LaunchView>> {
        launch_views(&self.store, &self.store.queued_requests(LAUNCHES_SHOWN).await?).await
    }

    async fn one_view(&self, row: crate::store::QueuedRequest) -> Result<LaunchView> {
        let id = row.id;
        launch_views(&self.store, std::slice::from_ref(&row)).await?.into_iter().next().ok_or_else(|| no_launch(id))
    }

    /// A suite's latest launch (the Launch screen's "Launch again" and
    /// "Resume" start from its settings), however many launches of other
    /// suites came after it.
    pub async fn suite_last_launch(&self, key: &str) -> Result<Option<LaunchView>> {
        // By name first: the screen asks by name, and a suite's name may be
        // all digits (another suite's id).
        let suite = match self.store.suite_by_name(key).await? {
            Some(row) => row,
            None => self.find_suite(key).await?,
        };
        match self.store.latest_request_of_suite(&suite.name).await? {
            Some(row) => Ok(Some(self.one_view(row).await?)),
            None => Ok(None),
        }
    }

    pub async fn launch_view(&self, id: i64) -> Result<LaunchView> {
        let row = self.store.queued_request(id).await?.ok_or_else(|| no_launch(id))?;
        self.one_view(row).await
    }

    /// Asks a launch to stop, whichever process works it: runs in flight
    /// are killed and marked cancelled, the unfinished epoch resumes on the
    /// next launch. A queued launch is cancelled at once.
    pub async fn cancel(&self, id: i64) -> Result<LaunchView> {
        let row = self.store.queued_request(id).await?.ok_or_else(|| no_launch(id))?;
        if row.status.ended() {
            return Err(ServiceError::Conflict(format!("launch {id} is not running (it is {})", row.status.as_str())));
        }
        // One whose worker is gone ends at once (else the next worker would
        // take it over and resume it).
        let abandoned = crate::queue::is_abandoned(&row);
        let row = self.store.cancel_request(id, abandoned).await?.ok_or_else(|| no_launch(id))?;
        // One of ours stops now rather than at its next heartbeat.
        if let Some(l) = lock(&self.launches).get(&id) {
            let _ = l.cancel.send(true);
        }
        self.one_view(row).await
    }

    /// Waits until a launch of this process has ended (tests and the
    /// shutdown path use it).
    pub async fn wait(&self, id: i64) -> Result<LaunchView> {
        let task = lock(&self.launches).get_mut(&id).and_then(|l| l.task.take());
        if let Some(t) = task {
            let _ = t.await;
        }
        self.launch_view(id).await
    }
}

pub(super) fn no_launch(id: i64) -> ServiceError {
    ServiceError::NotFound(format!("no launch {id} in this session"))
}

/// The folders a person allowed suites to use outside their own: each an
/// existing folder, given as an absolute path (`~/…` expands), at most 32.
pub(super) fn allowed_folders(folders: &[String]) -> Result<Vec<String>> {
    const MAX_FOLDERS: usize = 32;
    if folders.len() > MAX_FOLDERS {
        return Err(ServiceError::BadInput(format!(
            "allowed_outside lists {} folders; at most {MAX_FOLDERS} are kept\n  hint: allow a common parent folder instead",
            folders.len()
        )));
    }
    let mut out = Vec::new();
    for (i, folder) in folders.iter().map(|f| f.trim()).filter(|f| !f.is_empty()).enumerate() {
        let path = resolve_path(folder);
        if !path.is_absolute() || !path.is_dir() {
            return Err(ServiceError::BadInput(format!(
                "allowed_outside[{i}]: `{folder}` is not an existing folder given by its full path\n  hint: write it as /home/you/data (or ~/data)"
            )));
        }
        out.push(path.display().to_string());
    }
    Ok(out)
}

/// `~/…` expands to the home folder: people paste paths like that.
pub(super) fn resolve_path(path: &str) -> PathBuf {
    let path = path.trim();
    match path.strip_prefix("~/") {
        Some(rest) => dirs::home_dir().map_or_else(|| PathBuf::from(path), |h| h.join(rest)),
        None => PathBuf::from(path),
    }
}

/// Loads a suite and checks what the runner would refuse before its first
/// epoch (problems it cannot resolve, agent workspaces that do not exist), so
/// a launch fails up front with located issues instead of in the background.
pub(super) fn load_runnable(path: &Path, access: &suite::Access) -> std::result::Result<suite::Suite, SuiteError> {
    suite::check_runnable(suite::load_with(path, access)?)
}

/// The verdict on a suite file that did (or did not) load.
pub fn validation_of(path: &str, loaded: std::result::Result<&suite::Suite, &SuiteError>) -> Validation {
    match loaded {
        Ok(s) => Validation {
            valid: true,
            path: path.to_string(),
            suite: Some(s.name.clone()),
            tasks: s.tasks.len(),
            holdout_tasks: s.tasks.iter().filter(|t| t.holdout).count(),
            artifacts: s.artifacts.iter().map(|a| a.name.clone()).collect(),
            issues: Vec::new(),
            notes: s.notes(),
        },
        Err(e) => Validation {
            valid: false,
            path: path.to_string(),
            suite: None,
            tasks: 0,
            holdout_tasks: 0,
            artifacts: Vec::new(),
            issues: e.issues.iter().map(issue_view).collect(),
            notes: Vec::new(),
        },
    }
}

/// The file the first issue of an error is in.
pub(super) fn suite_path_text(e: &SuiteError) -> String {
    e.issues.first().map(|i| i.location.file.display().to_string()).unwrap_or_default()
}

pub(super) fn issue_view(i: &SuiteIssue) -> SuiteIssueView {
    let SourceLocation { file, line, column } = &i.location;
    SuiteIssueView {
        file: file.display().to_string(),
        line: *line,
        column: *column,
        field: i.field.clone(),
        message: i.message.clone(),
        hint: i.hint.clone(),
    }
}

/// An optimizer that needs a model, launched from the app with none set.
fn needs_model(optimizer: crate::outer::OptimizerKind) -> ServiceError {
    ServiceError::BadInput(format!(
        "the `{}` optimizer needs a model, and none is configured\n  hint: set one on the Settings screen (Model), or choose evolve or baseline",
        optimizer.name()
    ))
}

/// Workers that stopped cleanly are shown for an hour, the latest ten at
/// most: serving and quiet ones always (a quiet one may hold runs).
const STOPPED_SHOWN_SECS: f64 = 3600.0;
const STOPPED_SHOWN: usize = 10;

/// The workers on the database and the runs queued per suite: the Live
/// screen's and `attractor workers`' one source.
pub async fn workers_view(store: &crate::store::Store) -> std::result::Result<WorkersView, crate::store::StoreError> {
    let mut workers = Vec::new();
    let mut stopped = 0;
    for (w, quiet) in store.workers().await? {
        // Quiet: as long without a heartbeat as a run whose worker is taken for lost.
        let state = match (w.stopped, quiet > crate::outer::ITEM_STALE_AFTER.as_secs_f64()) {
            (true, _) => WorkerState::Stopped,
            (false, true) => WorkerState::Quiet,
            (false, false) => WorkerState::Serving,
        };
        if state == WorkerState::Stopped {
            stopped += 1;
            if stopped > STOPPED_SHOWN || quiet > STOPPED_SHOWN_SECS {
                continue;
            }
        }
        workers.push(WorkerView {
            offers: serde_json::from_str(&w.offers_json).unwrap_or_default(),
            holder: w.holder,
            host: w.host,
            pid: w.pid,
            concurrency: w.concurrency,
            state,
            quiet_secs: quiet.max(0.0),
        });
    }
    let mut queue = Vec::new();
    for (id, n) in store.queued_items_by_suite().await? {
        let suite = store.suite_by_id(id).await?.map_or_else(|| format!("#{id}"), |s| s.name);
        queue.push(SuiteQueueView { suite, queued_runs: n });
    }
    Ok(WorkersView { workers, queue })
}
