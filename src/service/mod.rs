//! The service facade: one API over the store, the artifact registry, the
//! outer loop and the bus, for every front end.
//!
//! `attractor serve` puts it behind HTTP + server-sent events (`crate::http`);
//! the desktop shell will put the same methods behind Tauri commands. Both
//! transports only translate: every decision — what a suite's status is, how
//! an epoch's events read, what a diff looks like, whether a suite file is
//! valid — is made here once, so the browser and the app cannot disagree.
//!
//! The facade owns one long-lived [`Bus`]: launched suite runs publish on it,
//! the store persists every event from it, and each live-progress subscriber
//! (an SSE stream, a Tauri event channel) gets its own queue from it.
//!
//! Once [`Service::start_watching`] is called it also owns the folder watcher
//! (`crate::watch`), whose runs are ordinary launches of this facade.

mod diff;
pub mod notify;
pub mod operations;
pub mod settings;
#[cfg(test)]
mod ts_export;
pub mod types;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::artifact::{Origin, Registry, RegistryError};
use crate::bus::{self, Bus, Envelope, Event};
use crate::outer::RunnerError;
use crate::store::{CountedRun, EpochRow, InterventionRow, RunBrief, Store, StoreError, SuiteRow, TelemetryRow};
use crate::suite::{self, SourceLocation, SuiteError, SuiteIssue};
use crate::watch::{LaunchRefusal, Launcher, WatchConfig, WatchError, Watcher};

pub use diff::artifact_diff;
pub use settings::Settings;
use types::*;

/// How much of a run's stdout/stderr the run detail shows (the store keeps
/// up to 64 KiB of each).
const TAIL_BYTES: usize = 16 * 1024;

/// Why a request could not be served. The transports map each kind to their
/// own notion (an HTTP status, a rejected Tauri promise); the message is for
/// a person.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    BadInput(String),
    /// A suite file that does not validate, with every issue located.
    #[error("{}", invalid_message(.0))]
    InvalidSuite(Box<Validation>),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Internal(String),
}

fn invalid_message(v: &Validation) -> String {
    let first =
        v.issues.first().map_or_else(String::new, |i| format!(": {}:{}:{}: {}", i.file, i.line, i.column, i.message));
    format!("the suite file {} is not valid ({} issue(s)){first}", v.path, v.issues.len())
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict(m) => ServiceError::Conflict(m),
            e => ServiceError::Internal(e.to_string()),
        }
    }
}

impl From<RegistryError> for ServiceError {
    fn from(e: RegistryError) -> Self {
        match e {
            RegistryError::Store(s) => s.into(),
            e @ (RegistryError::Unknown { .. } | RegistryError::NoSuchVersion { .. }) => {
                ServiceError::NotFound(e.to_string())
            }
        }
    }
}

/// What a person sees when a request fails, whatever the transport: the
/// body of an HTTP error answer, the rejection of a desktop command.
impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> ApiError {
        let error = e.to_string();
        match e {
            ServiceError::InvalidSuite(v) => ApiError { error, validation: Some(*v) },
            _ => ApiError { error, validation: None },
        }
    }
}

pub type Result<T> = std::result::Result<T, ServiceError>;

/// Reads an environment variable; tests pass their own to stay independent
/// of the process environment.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Where the facade keeps things.
#[derive(Clone)]
pub struct ServiceConfig {
    pub db_path: PathBuf,
    pub settings_path: PathBuf,
    /// Where launched runs put their run directories [default: `runs/` beside the database].
    pub runs_root: Option<PathBuf>,
    pub env: EnvLookup,
}

impl ServiceConfig {
    /// The configuration of a real process: its environment, the default
    /// settings file (or `ATTRACTOR_SETTINGS`).
    pub fn new(db_path: PathBuf) -> ServiceConfig {
        let settings_path = std::env::var_os(settings::SETTINGS_ENV)
            .filter(|v| !v.is_empty())
            .map_or_else(settings::default_path, PathBuf::from);
        ServiceConfig { db_path, settings_path, runs_root: None, env: Arc::new(|name| std::env::var(name).ok()) }
    }
}

/// Environment variable naming the database (the CLI's `--db`).
pub const DB_ENV: &str = "ATTRACTOR_DB";
/// Environment variable naming where launched runs put their run directories.
pub const RUNS_DIR_ENV: &str = "ATTRACTOR_RUNS_DIR";

impl ServiceConfig {
    /// The configuration of an app that has no command line (the desktop
    /// shell): the database is `ATTRACTOR_DB`, else the one saved on the
    /// settings screen, else the default — the order `attractor serve`
    /// follows — and runs go to `ATTRACTOR_RUNS_DIR` when it is set.
    pub fn from_env() -> Result<ServiceConfig> {
        ServiceConfig::located(Arc::new(|name| std::env::var(name).ok()))
    }

    /// [`ServiceConfig::from_env`] over any environment (tests pass their own).
    pub fn located(env: EnvLookup) -> Result<ServiceConfig> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let settings_path = var(settings::SETTINGS_ENV).unwrap_or_else(settings::default_path);
        let saved = Settings::load(&settings_path).map_err(|e| ServiceError::BadInput(e.to_string()))?;
        let db_path = var(DB_ENV)
            .or_else(|| saved.db_path.as_ref().map(PathBuf::from))
            .unwrap_or_else(crate::store::default_path);
        let runs_root = var(RUNS_DIR_ENV);
        Ok(ServiceConfig { db_path, settings_path, runs_root, env })
    }
}

/// A launch this process works: how to stop it at once, and its task.
struct Launch {
    cancel: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// How many of the latest launches the Live screen lists.
const LAUNCHES_SHOWN: u32 = 50;

/// A queued request as the app shows it. A running request whose worker
/// died reads as failed until a worker takes it over.
fn launch_view(row: &crate::store::QueuedRequest) -> LaunchView {
    let req: Option<RunRequest> = serde_json::from_str(&row.request_json).ok();
    let req = req.unwrap_or_else(|| RunRequest::new(""));
    let abandoned = crate::queue::is_abandoned(row);
    LaunchView {
        id: row.id,
        suite: row.suite_name.clone(),
        suite_path: req.suite_path.clone(),
        suite_id: row.suite_id,
        status: if abandoned { LaunchStatus::Failed } else { row.status },
        epochs_requested: req.epochs,
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
    }
}

/// The facade. Cheap to share: hand out `Arc<Service>`.
pub struct Service {
    store: Store,
    config: ServiceConfig,
    bus: Bus,
    persister: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Follows other processes' events in the store ([`bus::tail`]).
    tail: Mutex<Option<tokio::task::JoinHandle<()>>>,
    launches: Mutex<BTreeMap<i64, Launch>>,
    settings: Mutex<Settings>,
    /// The folder watcher, once [`Service::start_watching`] started it.
    watcher: Mutex<Option<Watcher>>,
    /// What the keychain holds: read when first needed (a launch or a test
    /// of the model connection with a model configured, the settings screen)
    /// and after every change through the facade; a key stored by `attractor
    /// key set` meanwhile shows when the settings screen asks again
    /// ([`Service::refresh_keychain`]). Not read at start: a locked keyring
    /// would prompt people who never use a key.
    keychain: Mutex<KeychainState>,
}

/// The keychain as last read. The key stays in memory only, like one from the
/// environment.
#[derive(Debug, Clone)]
enum KeychainState {
    /// Not read yet.
    Unread,
    /// Turned off with `ATTRACTOR_KEYCHAIN=off`.
    Off,
    Unavailable(String),
    Empty,
    Holds(crate::llm::ApiKey),
}

impl Service {
    /// Opens (and migrates) the database and starts persisting bus events.
    pub async fn open(config: ServiceConfig) -> Result<Arc<Service>> {
        let settings = Settings::load(&config.settings_path).map_err(|e| ServiceError::BadInput(e.to_string()))?;
        let store = Store::open(&config.db_path).await?;
        let bus = Bus::new();
        let persister = bus::persist(&bus, store.clone());
        // The auditor watches every launch's trajectories and adds its
        // alerts to the bus; it ends when the bus closes.
        drop(crate::auditor::spawn(&bus, crate::auditor::AuditConfig::default()));
        // Runs other processes work on this database (`attractor run`, a
        // worker) show here live too.
        let tail = bus::tail(&bus, store.clone());
        let service = Arc::new(Service {
            store,
            config,
            bus,
            persister: Mutex::new(Some(persister)),
            tail: Mutex::new(Some(tail)),
            launches: Mutex::new(BTreeMap::new()),
            settings: Mutex::new(settings),
            watcher: Mutex::new(None),
            keychain: Mutex::new(KeychainState::Unread),
        });
        Ok(service)
    }

    /// Reads the keychain again (on the blocking pool: D-Bus round trips, or
    /// a prompt to unlock the keyring).
    pub async fn refresh_keychain(&self) {
        let env = Arc::clone(&self.config.env);
        let state = tokio::task::spawn_blocking(move || {
            if !crate::secrets::keychain_enabled(&|n| env(n)) {
                return KeychainState::Off;
            }
            match crate::secrets::Keychain::api_key().read() {
                Ok(Some(key)) => KeychainState::Holds(crate::llm::ApiKey::new(key)),
                Ok(None) => KeychainState::Empty,
                Err(e) => KeychainState::Unavailable(e.to_string()),
            }
        })
        .await
        .unwrap_or_else(|e| KeychainState::Unavailable(e.to_string()));
        *lock(&self.keychain) = state;
    }

    /// Keeps `key` in the operating system's keychain for the next launches.
    pub async fn set_api_key(&self, req: &ApiKeyRequest) -> Result<SettingsView> {
        let key = req.key.trim().to_string();
        if key.is_empty() {
            return Err(ServiceError::BadInput("the API key is empty: paste the whole key".into()));
        }
        self.keychain_call(move |k| k.store(&key)).await?;
        self.refresh_keychain().await;
        Ok(self.settings())
    }

    /// Removes the key from the keychain (nothing stored is not an error).
    pub async fn delete_api_key(&self) -> Result<SettingsView> {
        self.keychain_call(|k| k.delete().map(|_| ())).await?;
        self.refresh_keychain().await;
        Ok(self.settings())
    }

    async fn keychain_call(
        &self,
        f: impl FnOnce(&crate::secrets::Keychain) -> std::result::Result<(), crate::secrets::KeychainError> + Send + 'static,
    ) -> Result<()> {
        let env = Arc::clone(&self.config.env);
        tokio::task::spawn_blocking(move || {
            if !crate::secrets::keychain_enabled(&|n| env(n)) {
                return Err(crate::secrets::KeychainError::Off);
            }
            f(&crate::secrets::Keychain::api_key())
        })
        .await
        .map_err(|e| ServiceError::Internal(e.to_string()))?
        .map_err(|e| ServiceError::BadInput(e.to_string()))
    }

    /// Reads the keychain once, before a model call may need its key: only
    /// when a model is configured and the environment holds no key.
    async fn ensure_keychain(&self) {
        let env = |n: &str| (self.config.env)(n).filter(|v| !v.trim().is_empty());
        let model = lock(&self.settings).llm_model.is_some() || env(crate::llm::ENV_MODEL).is_some();
        let unread = matches!(*lock(&self.keychain), KeychainState::Unread);
        if unread && model && crate::secrets::key_in_environment(&env).is_none() {
            self.refresh_keychain().await;
        }
    }

    /// The keychain's key, when the environment holds none.
    fn keychain_key(&self) -> Option<crate::llm::ApiKey> {
        if crate::secrets::key_in_environment(&|n| (self.config.env)(n)).is_some() {
            return None;
        }
        match &*lock(&self.keychain) {
            KeychainState::Holds(k) => Some(k.clone()),
            _ => None,
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A queue of every bus event from now on (live progress). Dropping the
    /// receiver ends the subscription.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Envelope> {
        self.bus.subscribe()
    }

    /// Cancels running launches, waits for them to close their books, then
    /// writes out the event queue. Call once, before the process exits.
    pub async fn shutdown(&self) {
        // The watcher first stops starting runs, so the launches cancelled
        // below are queued again for the next start instead of counting as
        // cancelled by a person; it records their ends before it stops.
        let watcher = lock(&self.watcher).take();
        if let Some(w) = &watcher {
            w.pause().await;
        }
        let tasks: Vec<_> = {
            let mut launches = lock(&self.launches);
            launches
                .values_mut()
                .filter_map(|l| {
                    let _ = l.cancel.send(true);
                    l.task.take()
                })
                .collect()
        };
        for t in tasks {
            let _ = t.await;
        }
        if let Some(w) = watcher {
            w.stop().await;
        }
        if let Some(t) = lock(&self.tail).take() {
            t.abort();
        }
        self.bus.close();
        let persister = lock(&self.persister).take();
        if let Some(p) = persister {
            let _ = p.await;
        }
        self.store.close().await;
    }

    // ----- overview and suites ------------------------------------------------

    pub async fn overview(&self) -> Result<Overview> {
        let suites = self.store.suite_summaries().await?.len();
        let running_launches = self
            .store
            .queued_requests(LAUNCHES_SHOWN)
            .await?
            .iter()
            .filter(|r| !r.status.ended() && !crate::queue::is_abandoned(r))
            .count();
        Ok(Overview {
            suites,
            running_launches,
            pending_interventions: self.store.pending_interventions().await?,
            db_path: crate::store::shown_location(&self.config.db_path).display().to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        })
    }

    /// Every suite with its epoch count, latest mean loss and status.
    pub async fn suites(&self) -> Result<Vec<SuiteItem>> {
        let summaries = self.store.suite_summaries().await?;
        let paused = self.store.suites_waiting_on_a_person().await?;
        let approvals = self.store.suites_awaiting_approval().await?;
        let launches: Vec<LaunchView> = self.launches().await?;
        let mut out = Vec::with_capacity(summaries.len());
        for s in summaries {
            let row = self.store.suite_by_id(s.id).await?;
            let tasks = row.as_ref().map(task_infos).unwrap_or_default();
            let status = SuiteCounts {
                epochs: s.epochs,
                latest: s.latest_mean_loss,
                unfinished: s.unfinished,
                waiting_on_a_person: paused.contains(&s.id),
                awaiting_approval: approvals.contains(&s.id),
            };
            let head =
                SuiteHead { id: s.id, name: &s.name, created_at: &s.created_at, source: s.source_path.as_deref() };
            let mut item = self.suite_item(head, status, &tasks, &launches);
            item.model = self.suite_model(s.id).await?;
            out.push(item);
        }
        // A suite the watcher registered is launched from its watched file.
        if out.iter().any(|s| s.suite_path.is_none()) {
            let files = self.store.watched_files().await?;
            for item in out.iter_mut().filter(|s| s.suite_path.is_none()) {
                item.suite_path = files
                    .iter()
                    .find(|f| f.status != "removed" && f.suite_name.as_deref() == Some(item.name.as_str()))
                    .map(|f| f.path.clone());
            }
        }
        Ok(out)
    }

    fn suite_item(
        &self,
        head: SuiteHead<'_>,
        counts: SuiteCounts,
        tasks: &[TaskInfo],
        launches: &[LaunchView],
    ) -> SuiteItem {
        let SuiteHead { id, name, created_at, source } = head;
        let SuiteCounts { epochs, latest: latest_mean_loss, unfinished, waiting_on_a_person, awaiting_approval } =
            counts;
        // Newest first: the suite's latest launch.
        let latest = launches.iter().find(|l| l.suite == name);
        let running = latest.filter(|l| matches!(l.status, LaunchStatus::Running | LaunchStatus::Queued));
        let failed = latest.filter(|l| l.status == LaunchStatus::Failed);
        // Waiting on a person comes first: it is what someone must act on.
        let status = if waiting_on_a_person {
            SuiteStatus::Paused
        } else if running.is_some() {
            SuiteStatus::Running
        } else if failed.is_some() {
            SuiteStatus::Failed
        } else if unfinished > 0 {
            SuiteStatus::Unfinished
        } else if awaiting_approval {
            SuiteStatus::AwaitingApproval
        } else {
            SuiteStatus::Idle
        };
        SuiteItem {
            id,
            name: name.to_string(),
            created_at: created_at.to_string(),
            epochs,
            latest_mean_loss,
            status,
            tasks: tasks.len(),
            holdout_tasks: tasks.iter().filter(|t| t.holdout).count(),
            // The last launch from here, else the last one recorded, else
            // the file the suite was last run from (`attractor run`).
            suite_path: latest
                .map(|l| l.suite_path.clone())
                .or_else(|| lock(&self.settings).suite_paths.get(name).cloned())
                .or_else(|| source.map(str::to_string)),
            last_error: failed.and_then(|l| l.error.clone()),
            launch_id: running.map(|l| l.id),
            model: None,
        }
    }

    /// The suite's model spend from the ledger; `None` before its first call.
    async fn suite_model(&self, suite_id: i64) -> Result<Option<crate::llm::ModelSpend>> {
        let spend = self.store.model_spend(crate::store::CallsOf::Suite(suite_id)).await?;
        Ok((spend.calls > 0).then_some(spend))
    }

    /// A suite by its id or, failing that, its name.
    async fn find_suite(&self, key: &str) -> Result<SuiteRow> {
        let by_id = match key.parse::<i64>() {
            Ok(id) => self.store.suite_by_id(id).await?,
            Err(_) => None,
        };
        let found = match by_id {
            Some(s) => Some(s),
            None => self.store.suite_by_name(key).await?,
        };
        match found {
            Some(s) => Ok(s),
            None => {
                let known: Vec<String> = self.store.suite_summaries().await?.into_iter().map(|s| s.name).collect();
                Err(ServiceError::NotFound(format!(
                    "no suite `{key}` in {}\n  hint: known suites: {}",
                    crate::store::shown_location(&self.config.db_path).display(),
                    if known.is_empty() { "none yet".to_string() } else { known.join(", ") }
                )))
            }
        }
    }

    /// A suite's epochs with per-task losses, artifact events and, with
    /// `with_runs`, every run (at 500 epochs × 50 tasks the runs are most of
    /// the payload; the charts and the graph do without them).
    pub async fn suite_epochs(&self, key: &str, with_runs: bool) -> Result<SuiteEpochs> {
        let row = self.find_suite(key).await?;
        let tasks = task_infos(&row);
        let holdout: HashMap<&str, bool> = tasks.iter().map(|t| (t.name.as_str(), t.holdout)).collect();
        let epochs = self.store.epochs(row.id).await?;
        // The run rows are read only when asked for: the charts and the
        // graph need the counted losses alone, a fraction of the data.
        let runs = if with_runs { self.store.run_briefs_of_suite(row.id).await? } else { Vec::new() };
        let counted = self.store.counted_runs_of_suite(row.id).await?;
        let views = build_epochs(&epochs, &runs, &counted, &holdout);

        let mut artifacts: Vec<String> = Vec::new();
        for e in &views {
            for name in e.parent_artifacts.keys().chain(e.child_artifacts.keys()) {
                if !artifacts.contains(name) {
                    artifacts.push(name.clone());
                }
            }
        }
        artifacts.sort();
        let completed = epochs.iter().filter(|e| e.completed_at.is_some()).count() as i64;
        let latest = epochs.iter().rev().find(|e| e.completed_at.is_some()).and_then(|e| e.mean_loss);
        let unfinished = epochs.iter().filter(|e| e.completed_at.is_none()).count() as i64;
        let counts = SuiteCounts {
            epochs: completed,
            latest,
            unfinished,
            waiting_on_a_person: self.store.suites_waiting_on_a_person().await?.contains(&row.id),
            awaiting_approval: self.store.suites_awaiting_approval().await?.contains(&row.id),
        };
        let launches = self.launches().await?;
        let mut suite = self.suite_item(SuiteHead::of(&row), counts, &tasks, &launches);
        suite.model = self.suite_model(row.id).await?;
        Ok(SuiteEpochs { suite, tasks, artifacts, epochs: views })
    }

    /// What the Charts screen draws, shaped on this side (the report draws
    /// the same points): one column per finished epoch, shared by the three
    /// charts.
    pub async fn suite_charts(&self, key: &str) -> Result<SuiteCharts> {
        Ok(crate::report::shape::suite_charts(self.suite_epochs(key, false).await?))
    }

    /// The suite's graph: its experiment tree when it has one, else the
    /// chain of its epochs.
    pub async fn suite_graph(&self, key: &str) -> Result<SuiteGraph> {
        let epochs = self.suite_epochs(key, false).await?;
        let tree = self.store.tree_nodes(epochs.suite.id).await?;
        if !tree.is_empty() {
            let notes = self.store.tree_notes(epochs.suite.id).await?;
            return Ok(tree_graph(epochs, &tree, notes));
        }
        let nodes = epochs
            .epochs
            .iter()
            .map(|e| GraphNode {
                id: format!("epoch-{}", e.epoch_num),
                epoch_num: Some(e.epoch_num),
                mean_loss: e.mean_loss,
                holdout_mean_loss: e.holdout_mean_loss,
                label: versions_label(&e.parent_artifacts),
                artifacts: e.parent_artifacts.clone(),
                tree: None,
            })
            .collect();
        let edges = epochs
            .epochs
            .windows(2)
            .map(|w| GraphEdge {
                source: format!("epoch-{}", w[0].epoch_num),
                target: format!("epoch-{}", w[1].epoch_num),
                label: w[0].events.iter().map(crate::report::shape::transition_label).collect::<Vec<_>>().join("; "),
                events: w[0].events.clone(),
            })
            .collect();
        Ok(SuiteGraph { suite: epochs.suite.name, kind: GraphKind::Epochs, nodes, edges, notes: Vec::new() })
    }

    /// Every proposal an optimizer considered for a suite, for the
    /// predicted-against-observed view.
    pub async fn suite_proposals(&self, key: &str) -> Result<SuiteProposals> {
        let row = self.find_suite(key).await?;
        let proposals = self
            .store
            .proposals(row.id)
            .await?
            .into_iter()
            .map(|l| {
                let p = l.proposal;
                ProposalItem {
                    id: p.id,
                    epoch_num: l.epoch_num,
                    optimizer: p.optimizer,
                    artifact: p.artifact,
                    outcome: p.outcome,
                    parent_version: p.parent_version,
                    applied_version: p.applied_version,
                    rationale: p.rationale,
                    expected_loss_reduction: p.expected_loss_reduction,
                    confidence: p.confidence,
                    observed_loss_reduction: p.observed_loss_reduction,
                    rolled_back: p.rolled_back,
                    rejection: p.rejection,
                    learning_rate: p.learning_rate,
                }
            })
            .collect();
        Ok(SuiteProposals { suite: row.name, proposals })
    }

    // ----- reports --------------------------------------------------------------

    /// A suite's report (`crate::report`), rendered in memory from the same
    /// view the Charts screen draws. Drawing is CPU work: it runs on the
    /// blocking pool, not on the threads that serve requests.
    pub async fn report(&self, key: &str) -> Result<crate::report::Report> {
        // The counted losses are all a report draws: the run lists (most of
        // the payload at 500 epochs × 50 tasks) stay out, as for the charts.
        let view = self.suite_epochs(key, false).await?;
        let generated_at = crate::now_rfc3339();
        tokio::task::spawn_blocking(move || crate::report::render(&view, &generated_at))
            .await
            .map_err(|e| ServiceError::Internal(format!("drawing the report stopped: {e}")))?
            .map_err(report_error)
    }

    /// Writes a suite's report into a folder (created when missing; `~/` is
    /// the home folder). The CLI's `attractor report` and the desktop app's
    /// Export.
    pub async fn write_report(&self, key: &str, dir: &str) -> Result<ReportWritten> {
        let dir = resolve_path(dir);
        if dir.as_os_str().is_empty() {
            return Err(ServiceError::BadInput("give the folder to write the report into".into()));
        }
        let report = self.report(key).await?;
        let target = dir.clone();
        let written = tokio::task::spawn_blocking(move || report.write_to(&target).map(|files| (report.suite, files)))
            .await
            .map_err(|e| ServiceError::Internal(format!("writing the report stopped: {e}")))?;
        let (suite, files) = written.map_err(report_error)?;
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        Ok(ReportWritten {
            suite,
            index: dir.join("index.html").display().to_string(),
            dir: dir.display().to_string(),
            files: files.iter().filter_map(|f| f.file_name()).map(|n| n.to_string_lossy().into_owned()).collect(),
        })
    }

    /// A suite's report as a zip archive, with the file name to offer for it
    /// (the browser's Export downloads it).
    pub async fn report_zip(&self, key: &str) -> Result<ReportArchive> {
        let report = self.report(key).await?;
        tokio::task::spawn_blocking(move || {
            let bytes = report.zip().map_err(report_error)?;
            Ok(ReportArchive { file_name: format!("{}.zip", report.folder_name()), bytes })
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("packing the report stopped: {e}")))?
    }

    // ----- runs ---------------------------------------------------------------

    /// The epoch a run belongs to, with the suite's name.
    pub async fn run_epoch(&self, run_id: i64) -> Result<RunEpoch> {
        let run = self.store.run(run_id).await?.ok_or_else(|| no_run(run_id))?;
        let suite = self.store.suite_by_id(run.suite_id).await?.ok_or_else(|| no_run(run_id))?;
        let epochs = self.suite_epochs(&suite.id.to_string(), true).await?;
        let epoch = epochs.epochs.into_iter().find(|e| e.epoch_id == run.epoch_id).ok_or_else(|| no_run(run_id))?;
        Ok(RunEpoch { run_id, suite_id: suite.id, suite: suite.name, epoch })
    }

    /// A run with its output tails and ASO telemetry.
    pub async fn run_detail(&self, run_id: i64) -> Result<RunDetail> {
        let run = self.store.run(run_id).await?.ok_or_else(|| no_run(run_id))?;
        let suite = self.store.suite_by_id(run.suite_id).await?.ok_or_else(|| no_run(run_id))?;
        let epoch = self.store.epoch_by_id(run.epoch_id).await?;
        let counted = self.store.epoch_runs(run.epoch_id).await?.iter().any(|c| c.run_id == run.id);
        let holdout = task_infos(&suite).iter().any(|t| t.name == run.task_name && t.holdout);
        let telemetry = match self.store.experiment_of_run(run_id).await? {
            Some(experiment) => self.store.telemetry_of_experiment(experiment).await?.into_iter().map(step).collect(),
            None => Vec::new(),
        };
        let mut trajectories = Vec::new();
        for t in self.store.trajectories_of_run(run_id).await? {
            let observations = self.store.observations_of_trajectory(&t.id).await?;
            trajectories.push(trajectory_view(t, observations));
        }
        let brief = RunBrief {
            id: run.id,
            suite_id: run.suite_id,
            epoch_id: run.epoch_id,
            task_name: run.task_name.clone(),
            kind: run.kind.clone(),
            status: run.status.clone(),
            started_at: run.started_at.clone(),
            finished_at: run.finished_at.clone(),
            duration_ms: run.duration_ms,
            exit_code: run.exit_code,
            loss: run.loss,
            loss_breakdown_json: run.loss_breakdown_json.clone(),
            error: run.error.clone(),
        };
        Ok(RunDetail {
            run: run_item(&brief, epoch.map_or(0, |e| e.epoch_num), holdout, counted),
            suite_id: suite.id,
            suite: suite.name,
            run_dir: run.run_dir,
            model: run.model_json.as_deref().and_then(|j| serde_json::from_str(j).ok()),
            result: run.result_json.as_deref().and_then(|j| serde_json::from_str(j).ok()),
            stdout: tail(run.stdout.as_deref().unwrap_or("")),
            stderr: tail(run.stderr.as_deref().unwrap_or("")),
            telemetry,
            trajectories,
        })
    }

    // ----- artifacts ----------------------------------------------------------

    pub async fn artifacts(&self) -> Result<Vec<ArtifactItem>> {
        let registry = Registry::load(self.store.clone()).await?;
        let mut out = Vec::new();
        for def in registry.defs() {
            let history = registry.history(&def.name).await?;
            out.push(artifact_item(def, &history));
        }
        Ok(out)
    }

    /// Every version of an artifact (0 first), each with its diff against
    /// the version it was derived from.
    pub async fn artifact_versions(&self, name: &str) -> Result<ArtifactHistory> {
        let registry = Registry::load(self.store.clone()).await?;
        let def = registry.def(name)?.clone();
        let history = registry.history(name).await?;
        let ids: Vec<i64> = history.iter().filter_map(|v| v.epoch_id).collect();
        let epochs: HashMap<i64, (i64, String)> =
            self.store.epoch_nums(&ids).await?.into_iter().map(|(id, num, suite)| (id, (num, suite))).collect();
        // A tree's versions name no epoch of their own: their node does.
        let nodes: HashMap<i64, crate::store::TreeVersionRow> =
            self.store.tree_versions(name).await?.into_iter().map(|n| (n.version, n)).collect();
        let versions = history
            .iter()
            .map(|v| {
                let parent = v.parent_version.and_then(|p| history.iter().find(|h| h.version == p));
                let at = v.epoch_id.and_then(|id| epochs.get(&id));
                let node = if v.version == 0 { None } else { nodes.get(&v.version) };
                VersionView {
                    version: v.version,
                    content: v.content.clone(),
                    parent_version: v.parent_version,
                    created_at: v.created_at.clone(),
                    epoch_id: v.epoch_id,
                    epoch_num: at.map(|(n, _)| *n).or_else(|| node.and_then(|n| n.epoch_num)),
                    suite: at.map(|(_, s)| s.clone()).or_else(|| node.map(|n| n.suite.clone())),
                    is_active: v.is_active,
                    tree_node: node.map(|n| VersionTreeNode { node_id: n.node_id, status: n.status.clone() }),
                    diff_from_parent: parent
                        .map(|p| artifact_diff(def.kind, name, p.version, &p.content, v.version, &v.content)),
                }
            })
            .collect();
        Ok(ArtifactHistory { artifact: artifact_item(&def, &history), versions })
    }

    /// The diff between any two versions of an artifact.
    pub async fn artifact_diff(&self, name: &str, from: i64, to: i64) -> Result<LineDiff> {
        let registry = Registry::load(self.store.clone()).await?;
        let kind = registry.def(name)?.kind;
        let old = registry.get(name, from).await?;
        let new = registry.get(name, to).await?;
        Ok(artifact_diff(kind, name, from, &old.content, to, &new.content))
    }

    /// Makes an earlier (or later) version the active one: a pointer flip.
    pub async fn rollback_artifact(&self, name: &str, version: i64) -> Result<ArtifactItem> {
        let registry = Registry::load(self.store.clone()).await?;
        let from = registry.get_active(name).await?.version;
        registry.rollback_to(name, version).await?;
        self.bus.publish(Event::ArtifactActivated {
            artifact: name.to_string(),
            from_version: from,
            to_version: version,
        });
        let history = registry.history(name).await?;
        Ok(artifact_item(registry.def(name)?, &history))
    }

    // ----- interventions ------------------------------------------------------

    pub async fn interventions(&self) -> Result<Inbox> {
        let rows = self.store.interventions(false).await?;
        let mut inbox = Inbox { pending: Vec::new(), notices: Vec::new(), answered: Vec::new() };
        for item in rows.into_iter().map(intervention_item) {
            match item.status.as_str() {
                "pending" => inbox.pending.push(item),
                "notice" => inbox.notices.push(item),
                _ => inbox.answered.push(item),
            }
        }
        Ok(inbox)
    }

    /// Sets a notice aside (a notice waits on nobody: it can only be dismissed).
    pub async fn dismiss(&self, id: i64) -> Result<InterventionItem> {
        let Some(row) = self.store.intervention(id).await? else {
            return Err(ServiceError::NotFound(format!("no intervention {id}")));
        };
        match row.status.as_str() {
            "notice" => {}
            "dismissed" => return Err(ServiceError::Conflict(format!("notice {id} was already dismissed"))),
            _ => {
                return Err(ServiceError::BadInput(format!(
                    "intervention {id} is a question, not a notice: answer it (approve, reject or a hint)"
                )));
            }
        }
        if !self.store.dismiss_notice(id).await? {
            return Err(ServiceError::Conflict(format!("notice {id} was already dismissed")));
        }
        self.bus.publish(Event::InterventionDismissed { intervention_id: id });
        let row = self
            .store
            .intervention(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no intervention {id}")))?;
        Ok(intervention_item(row))
    }

    /// Records a person's answer; answers are final.
    pub async fn answer(&self, id: i64, req: &AnswerRequest) -> Result<InterventionItem> {
        let text = req.text.as_deref().map(str::trim).filter(|t| !t.is_empty());
        if req.answer == AnswerKind::Hint && text.is_none() {
            return Err(ServiceError::BadInput("a hint needs its text".into()));
        }
        let Some(row) = self.store.intervention(id).await? else {
            return Err(ServiceError::NotFound(format!("no intervention {id}")));
        };
        if matches!(row.status.as_str(), "notice" | "dismissed") {
            return Err(ServiceError::BadInput(format!(
                "intervention {id} is a notice: nothing waits on an answer; dismiss it instead"
            )));
        }
        if row.kind == crate::watch::EXECUTION_APPROVAL && req.answer == AnswerKind::Hint {
            return Err(ServiceError::BadInput(format!(
                "intervention {id} asks whether commands may run: answer approve or reject"
            )));
        }
        if !self.store.answer_intervention(id, req.answer.as_str(), text).await? {
            return Err(ServiceError::Conflict(format!(
                "intervention {id} was already answered ({})",
                row.answer.unwrap_or_default()
            )));
        }
        self.bus.publish(Event::InterventionAnswered { intervention_id: id, answer: req.answer.as_str().to_string() });
        let row = self
            .store
            .intervention(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no intervention {id}")))?;
        Ok(intervention_item(row))
    }

    // ----- the trajectory repository and memory (seed 002 §8, §10.2) ----------

    /// Every aggregate of the agent trajectories: iterations by complexity,
    /// strategy effectiveness, the attractor distribution, convergence by
    /// category — over one category or all.
    pub async fn trajectory_stats(&self, category: Option<&str>) -> Result<TrajectoryStats> {
        let category = category.map(str::trim).filter(|c| !c.is_empty());
        let threshold = crate::engine::EngineConfig::default().bandit.success_threshold;
        Ok(crate::memory::repository::stats(&self.store, category, threshold).await?)
    }

    /// The finished trajectories whose task is most like a run's, a
    /// trajectory's or a described one.
    pub async fn similar_trajectories(&self, req: &SimilarRequest) -> Result<SimilarTrajectories> {
        use crate::memory::{SimilarError, SimilarTo};
        let text = |t: &Option<String>| t.as_deref().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string);
        let to = match (req.run_id, text(&req.trajectory_id), text(&req.task)) {
            (Some(id), None, None) => SimilarTo::Run(id),
            (None, Some(id), None) => SimilarTo::Trajectory(id),
            (None, None, Some(task)) => SimilarTo::Task(task),
            _ => {
                return Err(ServiceError::BadInput(
                    "give exactly one of `run_id` (an agent run), `trajectory_id` (one of its trajectories) or \
                     `task` (a task's text)"
                        .into(),
                ));
            }
        };
        let limit = req.limit.unwrap_or(10).clamp(1, 200) as usize;
        let category = req.category.as_deref().map(str::trim).filter(|c| !c.is_empty());
        crate::memory::repository::similar(&self.store, &to, category, limit).await.map_err(|e| match e {
            SimilarError::NoTrajectory(_) | SimilarError::UnknownTrajectory(_) => ServiceError::NotFound(e.to_string()),
            SimilarError::EmptyTask => ServiceError::BadInput(e.to_string()),
            SimilarError::Store(s) => s.into(),
        })
    }

    /// The newest convergence memories, of one category or of all.
    pub async fn memories(&self, category: Option<&str>, limit: Option<u32>) -> Result<Vec<MemoryItem>> {
        let category = category.map(str::trim).filter(|c| !c.is_empty());
        let limit = limit.unwrap_or(50).clamp(1, 500) as usize;
        Ok(crate::memory::repository::memories(&self.store, category, limit).await?)
    }

    // ----- watched folders ----------------------------------------------------

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

    fn watcher(&self) -> Result<Watcher> {
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
                        ("pending", _) => "pending",
                        (_, true) => "approved",
                        _ => "rejected",
                    }
                    .into(),
                    commands: serde_json::from_str(&a.commands_json).unwrap_or_default(),
                });
                let run = f.suite_name.as_ref().and_then(|s| runs.get(&(s.clone(), f.content_hash.clone()))).map(|r| {
                    WatchedRunView {
                        id: r.id,
                        status: r.status.clone(),
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
                    kind: f.kind,
                    status: f.status,
                    suite: f.suite_name,
                    suite_id: f.suite_id,
                    run_mode: f.run_mode,
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

    /// Checks a suite file the way a launch would, without running anything.
    pub fn validate(&self, path: &str) -> Validation {
        self.validate_with(path, &self.access())
    }

    fn validate_with(&self, path: &str, access: &suite::Access) -> Validation {
        let resolved = resolve_path(path);
        let loaded = load_runnable(&resolved, access);
        validation_of(&resolved.display().to_string(), loaded.as_ref())
    }

    /// The folders a request's suite may reach: the settings' and its own.
    fn access_for(&self, req: &RunRequest) -> suite::Access {
        let mut access = self.access();
        access.outside.extend(req.allow_outside.iter().map(|p| resolve_path(p)));
        access
    }

    /// Loads a request's suite after checking the request's own options.
    fn load_requested(&self, req: &RunRequest) -> Result<suite::Suite> {
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
        let registry = Registry::load(self.store.clone()).await?;
        let agent = req.agent_config(|n| (self.config.env)(n)).map_err(|e| ServiceError::BadInput(e.to_string()))?;
        let candidates = crate::outer::estimate::proposal_candidates(&suite, &registry);
        let run = crate::outer::estimate::PlannedRun {
            suite: &suite,
            optimizer: req.optimizer,
            epochs: req.epochs,
            proposal_candidates: candidates,
            ideation_rounds: req.tree.ideation_rounds,
            agent: &agent,
            supervisor_tier: !req.no_llm,
        };
        Ok(LaunchPreview {
            runs: u64::from(req.epochs) * suite.tasks.len() as u64,
            plan: req.plan_line(&suite, candidates),
            model: model.as_ref().and_then(|m| crate::outer::estimate::preview_line(&run, m)),
        })
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
    async fn launch_loaded(self: &Arc<Self>, suite: suite::Suite, req: &RunRequest) -> Result<LaunchView> {
        req.validate().map_err(|e| ServiceError::BadInput(e.to_string()))?;
        let suite = suite::check_runnable(suite)
            .map_err(|e| ServiceError::InvalidSuite(Box::new(validation_of(&suite_path_text(&e), Err(&e)))))?;
        let model = self.llm_client_with(&suite.llm, req)?;
        if req.optimizer.needs_model() && model.is_none() {
            return Err(ServiceError::BadInput(RunnerError::NeedsModel(req.optimizer.name()).to_string()));
        }
        req.agent_config(|n| (self.config.env)(n)).map_err(|e| ServiceError::BadInput(e.to_string()))?;
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
        Ok(launch_view(&row))
    }

    /// What this machine gives every run it works: run folders, the model
    /// endpoint and key with the settings' limits, the allowed folders.
    fn machine(&self) -> crate::queue::Machine {
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
    fn model_settings(&self, s: &Settings) -> crate::llm::LlmSettings {
        crate::llm::LlmSettings {
            base_url: s.llm_base_url.clone(),
            model: s.llm_model.clone(),
            api_key: self.keychain_key(),
            ..Default::default()
        }
        .overlay(&s.llm_layer())
    }

    /// The latest launches on this database, whichever process made them.
    pub async fn launches(&self) -> Result<Vec<LaunchView>> {
        Ok(self.store.queued_requests(LAUNCHES_SHOWN).await?.iter().map(launch_view).collect())
    }

    pub async fn launch_view(&self, id: i64) -> Result<LaunchView> {
        Ok(launch_view(&self.store.queued_request(id).await?.ok_or_else(|| no_launch(id))?))
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
        Ok(launch_view(&row))
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

    fn llm_client(&self) -> Result<Option<crate::llm::LlmClient>> {
        self.llm_client_with(&crate::llm::LlmLimits::default(), &RunRequest::new("-"))
    }

    /// The model client of a launch: the app's settings and limits, a
    /// suite's `llm:` limits over them, the request's over those (never an
    /// endpoint or key from either: they have none).
    fn llm_client_with(
        &self,
        suite: &crate::llm::LlmLimits,
        req: &RunRequest,
    ) -> Result<Option<crate::llm::LlmClient>> {
        let s = lock(&self.settings).clone();
        let llm_settings = self.model_settings(&s).overlay(&suite.to_settings()).overlay(&req.model.to_settings());
        let env = Arc::clone(&self.config.env);
        match crate::llm::LlmConfig::resolve(&llm_settings, |n| env(n)) {
            Ok(config) => {
                let client = crate::llm::LlmClient::new(config).map_err(|e| ServiceError::BadInput(e.to_string()))?;
                Ok(Some(client.with_store(self.store.clone())))
            }
            Err(crate::llm::LlmError::NoModel) => Ok(None),
            Err(e) => Err(ServiceError::BadInput(e.to_string())),
        }
    }

    /// Sends one tiny chat request to the configured model server (no retry,
    /// no cache, 30 s at most) and says whether and how it answered.
    pub async fn test_llm(&self) -> LlmCheck {
        self.ensure_keychain().await;
        let settings = self.settings();
        let base_url = settings.effective_base_url.clone();
        let model = settings.effective_model.clone();
        let client = match self.llm_client() {
            Ok(Some(c)) => c,
            Ok(None) => {
                return LlmCheck {
                    ok: false,
                    base_url,
                    model,
                    latency_ms: None,
                    reply: None,
                    error: Some(crate::llm::LlmError::NoModel.to_string()),
                };
            }
            Err(e) => {
                return LlmCheck {
                    ok: false,
                    base_url,
                    model,
                    latency_ms: None,
                    reply: None,
                    error: Some(e.to_string()),
                };
            }
        };
        let req = crate::llm::ChatRequest::user("Reply with the single word: ok")
            .max_tokens(8)
            .no_cache()
            .timeout(std::time::Duration::from_secs(30));
        // A connection test reports the first failure instead of retrying it.
        let client = crate::llm::LlmClient::new(client.config().clone().with_retries(0, std::time::Duration::ZERO));
        let answer = match client {
            Ok(c) => c.chat(req).await,
            Err(e) => Err(e),
        };
        match answer {
            Ok(reply) => LlmCheck {
                ok: true,
                base_url,
                model: reply.model.clone().or(model),
                latency_ms: Some(u64::try_from(reply.latency.as_millis()).unwrap_or(u64::MAX)),
                reply: Some(reply.content.chars().take(200).collect()),
                error: None,
            },
            Err(e) => {
                LlmCheck { ok: false, base_url, model, latency_ms: None, reply: None, error: Some(e.to_string()) }
            }
        }
    }

    fn remember_suite_path(&self, suite: &str, path: &str) {
        let mut s = lock(&self.settings);
        if s.suite_paths.get(suite).map(String::as_str) != Some(path) {
            s.suite_paths.insert(suite.to_string(), path.to_string());
            if let Err(e) = s.save(&self.config.settings_path) {
                tracing::warn!(error = %e, "could not remember the suite file");
            }
        }
    }

    // ----- settings -----------------------------------------------------------

    /// The folders outside their own that suites may use (the user's setting).
    fn access(&self) -> suite::Access {
        lock(&self.settings).access()
    }

    pub fn settings(&self) -> SettingsView {
        let s = lock(&self.settings).clone();
        let env = |n: &str| (self.config.env)(n).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let settings = crate::llm::LlmSettings {
            base_url: s.llm_base_url.clone(),
            // Resolving needs a model; a stand-in lets the endpoint's own
            // precedence (setting, environment, default) be read even when no
            // model is configured yet.
            model: Some(String::from("-")),
            ..Default::default()
        };
        let effective_base_url = crate::llm::LlmConfig::resolve(&settings, env)
            .map_or_else(|_| s.llm_base_url.clone().unwrap_or_default(), |c| c.base_url);
        let effective_model = s.llm_model.clone().or_else(|| env(crate::llm::ENV_MODEL));
        let in_env = crate::secrets::key_in_environment(&|n| env(n));
        let keychain = lock(&self.keychain).clone();
        let api_key_source = match (in_env, &keychain) {
            (Some(var), _) => Some(var.to_string()),
            (None, KeychainState::Holds(_)) => Some("keychain".to_string()),
            _ => None,
        };
        let (keychain_available, keychain_note) = match (&keychain, in_env) {
            (KeychainState::Off, _) => (false, Some(crate::secrets::KeychainError::Off.to_string())),
            (KeychainState::Unavailable(why), _) => (false, Some(why.clone())),
            (_, Some(var)) => (true, Some(format!("{var} is set and wins over the keychain"))),
            _ => (true, None),
        };
        let current = crate::store::shown_location(&self.config.db_path).display().to_string();
        SettingsView {
            db_path: current.clone(),
            db_path_next_start: s
                .db_path
                .as_deref()
                .map(|p| crate::store::shown_location(Path::new(p)).display().to_string())
                .filter(|p| *p != current),
            llm_base_url: s.llm_base_url,
            llm_model: s.llm_model,
            effective_base_url,
            effective_model,
            llm_limits: s.llm_limits.clone(),
            model_prices: s.model_prices.clone(),
            allowed_outside: s.allowed_outside.clone(),
            api_key_present: api_key_source.is_some(),
            api_key_source,
            keychain_available,
            keychain_note,
            settings_file: self.config.settings_path.display().to_string(),
        }
    }

    /// Saves changed settings. The LLM ones apply to the next launch; a new
    /// database path to the next start of the app or server.
    pub fn update_settings(&self, update: &SettingsUpdate) -> Result<SettingsView> {
        let clean = |v: &Option<String>| v.as_ref().map(|s| s.trim().to_string());
        let mut next = lock(&self.settings).clone();
        if let Some(url) = clean(&update.llm_base_url) {
            next.llm_base_url = (!url.is_empty()).then_some(url);
        }
        if let Some(model) = clean(&update.llm_model) {
            next.llm_model = (!model.is_empty()).then_some(model);
        }
        if let Some(limits) = &update.llm_limits {
            limits
                .validate()
                .map_err(|e| ServiceError::BadInput(format!("the model-call limits are not usable: {e}")))?;
            next.llm_limits = limits.clone();
        }
        if let Some(prices) = &update.model_prices {
            let named = prices.keys().find(|m| m.trim().is_empty());
            if named.is_some() {
                return Err(ServiceError::BadInput("a model price needs the model's name".to_string()));
            }
            for (model, price) in prices {
                price
                    .validate(model)
                    .map_err(|e| ServiceError::BadInput(format!("the model prices are not usable: {e}")))?;
            }
            next.model_prices = prices.clone();
        }
        if let Some(db) = clean(&update.db_path) {
            // The form sends back the path as it was shown: a PostgreSQL
            // URL's password masked. That is no change, and must not
            // overwrite the real one.
            let shown = |p: &Path| crate::store::shown_location(p).display().to_string();
            let as_shown = db == shown(&self.config.db_path)
                || next.db_path.as_deref().is_some_and(|saved| db == shown(Path::new(saved)));
            if !as_shown {
                next.db_path = (!db.is_empty()).then(|| resolve_path(&db).display().to_string());
            }
        }
        if let Some(folders) = &update.allowed_outside {
            next.allowed_outside = allowed_folders(folders)?;
        }
        if let Some(url) = &next.llm_base_url {
            let probe = crate::llm::LlmSettings {
                base_url: Some(url.clone()),
                model: Some(String::from("-")),
                ..Default::default()
            };
            crate::llm::LlmConfig::resolve(&probe, |_| None)
                .map_err(|e| ServiceError::BadInput(format!("the LLM endpoint is not usable: {e}")))?;
        }
        next.save(&self.config.settings_path).map_err(|e| ServiceError::Internal(e.to_string()))?;
        *lock(&self.settings) = next;
        Ok(self.settings())
    }
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

/// A report packed for a download.
pub struct ReportArchive {
    /// `SUITE-report.zip`, with only letters, digits, `-`, `_` and `.`.
    pub file_name: String,
    pub bytes: Vec<u8>,
}

fn report_error(e: crate::report::ReportError) -> ServiceError {
    use crate::report::ReportError;
    match e {
        e @ ReportError::NoEpochs(_) => ServiceError::Conflict(e.to_string()),
        e @ ReportError::Write { .. } => ServiceError::BadInput(e.to_string()),
        e @ (ReportError::Draw { .. } | ReportError::Zip(_)) => ServiceError::Internal(e.to_string()),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave the data half-changed.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn no_run(id: i64) -> ServiceError {
    ServiceError::NotFound(format!("no run {id}"))
}

fn no_launch(id: i64) -> ServiceError {
    ServiceError::NotFound(format!("no launch {id} in this session"))
}

/// The folders a person allowed suites to use outside their own: each an
/// existing folder, given as an absolute path (`~/…` expands), at most 32.
fn allowed_folders(folders: &[String]) -> Result<Vec<String>> {
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
fn resolve_path(path: &str) -> PathBuf {
    let path = path.trim();
    match path.strip_prefix("~/") {
        Some(rest) => dirs::home_dir().map_or_else(|| PathBuf::from(path), |h| h.join(rest)),
        None => PathBuf::from(path),
    }
}

/// Loads a suite and checks what the runner would refuse before its first
/// epoch (problems it cannot resolve, agent workspaces that do not exist), so
/// a launch fails up front with located issues instead of in the background.
fn load_runnable(path: &Path, access: &suite::Access) -> std::result::Result<suite::Suite, SuiteError> {
    suite::check_runnable(suite::load_with(path, access)?)
}

/// The verdict on a suite file that did (or did not) load.
fn validation_of(path: &str, loaded: std::result::Result<&suite::Suite, &SuiteError>) -> Validation {
    match loaded {
        Ok(s) => Validation {
            valid: true,
            path: path.to_string(),
            suite: Some(s.name.clone()),
            tasks: s.tasks.len(),
            holdout_tasks: s.tasks.iter().filter(|t| t.holdout).count(),
            artifacts: s.artifacts.iter().map(|a| a.name.clone()).collect(),
            issues: Vec::new(),
        },
        Err(e) => Validation {
            valid: false,
            path: path.to_string(),
            suite: None,
            tasks: 0,
            holdout_tasks: 0,
            artifacts: Vec::new(),
            issues: e.issues.iter().map(issue_view).collect(),
        },
    }
}

/// The file the first issue of an error is in.
fn suite_path_text(e: &SuiteError) -> String {
    e.issues.first().map(|i| i.location.file.display().to_string()).unwrap_or_default()
}

fn issue_view(i: &SuiteIssue) -> SuiteIssueView {
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

/// The tasks a suite declared, read from the stored `tasks_json`.
fn task_infos(row: &SuiteRow) -> Vec<TaskInfo> {
    let tasks: Vec<Value> = serde_json::from_str(&row.tasks_json).unwrap_or_default();
    tasks
        .iter()
        .filter_map(|t| {
            Some(TaskInfo {
                name: t["name"].as_str()?.to_string(),
                kind: TaskType::parse(t["kind"].as_str().unwrap_or("command")),
                holdout: t["holdout"].as_bool().unwrap_or(false),
            })
        })
        .collect()
}

/// The components and the weights of a stored loss breakdown (the JSON of
/// [`crate::loss::LossBreakdown`]).
fn parts(breakdown_json: Option<&str>) -> (Option<LossParts>, Option<LossParts>) {
    let Some(b) = breakdown_json.and_then(|j| serde_json::from_str::<crate::loss::LossBreakdown>(j).ok()) else {
        return (None, None);
    };
    let components = LossParts {
        eval: b.eval_component,
        critique: b.critique_component,
        gate_rejections: b.gate_component,
        budget: b.budget_component,
        status: b.status_component,
    };
    let w = b.weights;
    let weights = LossParts {
        eval: w.eval,
        critique: w.critique,
        gate_rejections: w.gate_rejections,
        budget: w.budget,
        status: w.status,
    };
    (Some(components), Some(weights))
}

fn run_item(r: &RunBrief, epoch_num: i64, holdout: bool, counted: bool) -> RunItem {
    let (parts, weights) = parts(r.loss_breakdown_json.as_deref());
    RunItem {
        id: r.id,
        epoch_id: r.epoch_id,
        epoch_num,
        task: r.task_name.clone(),
        kind: TaskType::parse(&r.kind),
        status: RunState::parse(&r.status),
        holdout,
        counted,
        loss: r.loss,
        parts,
        weights,
        started_at: r.started_at.clone(),
        finished_at: r.finished_at.clone(),
        duration_ms: r.duration_ms,
        exit_code: r.exit_code,
        error: r.error.clone(),
    }
}

/// Reads the event log of `child_artifacts_json`. Unknown event types are
/// skipped: a newer Attractor may write kinds this one does not draw.
fn parse_events(child: &Value) -> Vec<ArtifactEvent> {
    child["events"].as_array().into_iter().flatten().filter_map(parse_event).collect()
}

/// One artifact event of an epoch's event log; `None` for another kind of
/// event (a verification) or one this version does not know.
pub(crate) fn parse_event(e: &Value) -> Option<ArtifactEvent> {
    let num = |v: &Value| v.as_f64();
    let artifact = e["artifact"].as_str()?.to_string();
    let from_version = e["from_version"].as_i64()?;
    let to_version = e["to_version"].as_i64()?;
    match e["type"].as_str()? {
        "update" => Some(ArtifactEvent::Update {
            artifact,
            from_version,
            to_version,
            rationale: e["rationale"].as_str().unwrap_or_default().to_string(),
            expected_loss_reduction: num(&e["expected_loss_reduction"]),
            confidence: num(&e["confidence"]),
            learning_rate: num(&e["learning_rate"]),
        }),
        "rollback" => Some(ArtifactEvent::Rollback {
            artifact,
            from_version,
            to_version,
            mean_loss_prev: num(&e["mean_loss_prev"]),
            mean_loss_current: num(&e["mean_loss_current"]),
            new_learning_rate: num(&e["new_learning_rate"]),
            reason: serde_json::from_value(e["reason"].clone()).ok(),
            holdout_mean_prev: num(&e["holdout_mean_prev"]),
            holdout_mean_current: num(&e["holdout_mean_current"]),
        }),
        _ => None,
    }
}

fn trajectory_view(t: crate::store::TrajectoryRow, obs: Vec<crate::store::ObservationRow>) -> TrajectoryView {
    TrajectoryView {
        id: t.id,
        parent_id: t.parent_id,
        role: t.role,
        ordinal: t.ordinal,
        task_name: t.task_name,
        category: t.category,
        status: t.status,
        iterations: t.iterations,
        tokens_used: t.tokens_used,
        final_level: t.final_level,
        best_sequence: t.best_sequence,
        pending_intervention_id: t.pending_intervention_id,
        started_at: t.started_at,
        finished_at: t.finished_at,
        observations: obs
            .into_iter()
            .map(|o| IterationView {
                sequence: o.sequence,
                strategy: o.strategy,
                forced: o.forced,
                attractor: o.attractor,
                attractor_confidence: o.attractor_confidence,
                level: o.level,
                delta: o.delta,
                loss: o.loss,
                loss_d: o.loss_d,
                loss_p: o.loss_p,
                loss_omega: o.loss_omega,
                grad_l: o.grad_l,
                directive: o.directive,
                rationale: o.rationale,
                loop_control: o.loop_control,
                next_strategy: o.next_strategy,
                tokens: o.tokens,
                wall_time_ms: o.wall_time_ms,
                files_changed: o.files_changed,
                lines_changed: o.lines_changed,
                applied_edits: o.applied_edits,
                rejected_edits: o.rejected_edits,
                commit_id: o.commit_id,
                summary: o.summary,
                verdict_summary: o.verdict_summary,
            })
            .collect(),
    }
}

/// `descent_settings v2 · supervisor_prompt v1`: the artifacts moved off v0.
fn versions_label(artifacts: &BTreeMap<String, i64>) -> String {
    artifacts.iter().filter(|(_, v)| **v != 0).map(|(k, v)| format!("{k} v{v}")).collect::<Vec<_>>().join(" · ")
}

/// The experiment tree as a graph. Stored rows that do not parse (a hand-edited
/// database) still show, with what could be read.
fn tree_graph(
    epochs: SuiteEpochs,
    rows: &[crate::store::TreeNodeRow],
    notes: Vec<crate::store::TreeNoteRow>,
) -> SuiteGraph {
    let epoch_num: BTreeMap<i64, i64> = epochs.epochs.iter().map(|e| (e.epoch_id, e.epoch_num)).collect();
    // Same rule as the search's own `best`: a pruned node was once the best.
    let best = rows
        .iter()
        .filter(|n| (n.status == "committed" || n.status == "pruned") && n.mean_loss.is_some())
        .min_by(|a, b| a.mean_loss.unwrap_or(f64::INFINITY).total_cmp(&b.mean_loss.unwrap_or(f64::INFINITY)))
        .map(|n| n.id);
    let nodes = rows
        .iter()
        .map(|r| {
            let artifacts: BTreeMap<String, i64> = serde_json::from_str(&r.artifacts_json).unwrap_or_default();
            let task_losses: BTreeMap<String, f64> =
                r.task_losses_json.as_deref().and_then(|t| serde_json::from_str(t).ok()).unwrap_or_default();
            GraphNode {
                id: format!("node-{}", r.id),
                epoch_num: r.epoch_id.and_then(|id| epoch_num.get(&id).copied()),
                mean_loss: r.mean_loss,
                holdout_mean_loss: r.holdout_mean_loss,
                label: versions_label(&artifacts),
                artifacts,
                tree: Some(TreeNodeView {
                    node_id: r.id,
                    parent_id: r.parent_id,
                    status: r.status.clone(),
                    changed_artifact: r.changed_artifact.clone(),
                    from_version: r.from_version,
                    to_version: r.to_version,
                    brief: r.brief.clone(),
                    note: r.note.clone(),
                    round: r.round,
                    rationale: r.rationale.clone(),
                    guidance: r.guidance.clone(),
                    evaluations: r.evaluations,
                    task_losses,
                    best: Some(r.id) == best,
                }),
            }
        })
        .collect();
    let edges = rows
        .iter()
        .filter_map(|r| {
            let parent = r.parent_id?;
            let label = match (&r.changed_artifact, r.from_version, r.to_version) {
                (Some(a), Some(f), Some(t)) => format!("{a} v{f}→v{t}"),
                (Some(a), _, None) => format!("{a} (no version written)"),
                _ => String::new(),
            };
            Some(GraphEdge {
                source: format!("node-{parent}"),
                target: format!("node-{}", r.id),
                label,
                events: Vec::new(),
            })
        })
        .collect();
    let notes = notes
        .into_iter()
        .map(|n| TreeNoteView {
            round: n.round,
            source: n.source,
            kind: n.kind,
            artifact: n.artifact,
            parent_id: n.parent_id,
            text: n.text,
            expected_loss_reduction: n.expected_loss_reduction,
            confidence: n.confidence,
            node_id: n.node_id,
        })
        .collect();
    SuiteGraph { suite: epochs.suite.name, kind: GraphKind::Tree, nodes, edges, notes }
}

/// What a suite's row counts and what it waits on, from the store.
struct SuiteCounts {
    /// Finished epochs.
    epochs: i64,
    /// The latest finished epoch's mean loss.
    latest: Option<f64>,
    /// Epochs started and not finished.
    unfinished: i64,
    /// A trajectory of the suite waits for a person's answer.
    waiting_on_a_person: bool,
    /// Its watched file's commands wait for a person's approval.
    awaiting_approval: bool,
}

/// What identifies a suite on its row of the Suites screen.
struct SuiteHead<'a> {
    id: i64,
    name: &'a str,
    created_at: &'a str,
    /// The suite file it was last run from.
    source: Option<&'a str>,
}

impl<'a> SuiteHead<'a> {
    fn of(row: &'a SuiteRow) -> Self {
        SuiteHead { id: row.id, name: &row.name, created_at: &row.created_at, source: row.source_path.as_deref() }
    }
}

/// Builds every epoch's view from whole-suite reads (`runs` may be empty:
/// then the views have no run lists).
fn build_epochs(
    epochs: &[EpochRow],
    runs: &[RunBrief],
    counted: &[CountedRun],
    holdout: &HashMap<&str, bool>,
) -> Vec<EpochView> {
    let is_holdout = |task: &str| holdout.get(task).copied().unwrap_or(false);
    let mut runs_by_epoch: HashMap<i64, Vec<&RunBrief>> = HashMap::new();
    for r in runs {
        runs_by_epoch.entry(r.epoch_id).or_default().push(r);
    }
    let mut counted_by_epoch: HashMap<i64, Vec<&CountedRun>> = HashMap::new();
    for c in counted {
        counted_by_epoch.entry(c.epoch_id).or_default().push(c);
    }
    epochs
        .iter()
        .map(|e| {
            let counted = counted_by_epoch.remove(&e.id).unwrap_or_default();
            let counted_ids: Vec<i64> = counted.iter().map(|c| c.run_id).collect();
            let tasks: Vec<TaskLoss> = counted
                .iter()
                .map(|c| TaskLoss {
                    task: c.task_name.clone(),
                    run_id: c.run_id,
                    loss: c.loss,
                    status: RunState::parse(&c.status),
                    holdout: is_holdout(&c.task_name),
                })
                .collect();
            let held: Vec<f64> = tasks.iter().filter(|t| t.holdout).map(|t| t.loss).collect();
            let parent: BTreeMap<String, i64> = serde_json::from_str(&e.parent_artifacts_json).unwrap_or_default();
            let child: Value =
                e.child_artifacts_json.as_deref().and_then(|j| serde_json::from_str(j).ok()).unwrap_or(Value::Null);
            let child_artifacts: BTreeMap<String, i64> =
                serde_json::from_value(child["artifacts"].clone()).unwrap_or_default();
            let events = parse_events(&child);
            EpochView {
                epoch_id: e.id,
                epoch_num: e.epoch_num,
                started_at: e.started_at.clone(),
                completed_at: e.completed_at.clone(),
                mean_loss: e.mean_loss,
                holdout_mean_loss: crate::loss::mean(&held),
                parent_artifacts: parent,
                child_artifacts,
                transitions: events.iter().map(crate::report::shape::transition_label).collect(),
                events,
                note: child["note"].as_str().map(str::to_string),
                model: serde_json::from_value(child["model"].clone()).ok(),
                tasks,
                runs: runs_by_epoch
                    .remove(&e.id)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|r| run_item(r, e.epoch_num, is_holdout(&r.task_name), counted_ids.contains(&r.id)))
                    .collect(),
            }
        })
        .collect()
}

fn artifact_item(def: &crate::artifact::ArtifactDef, history: &[crate::artifact::ArtifactVersion]) -> ArtifactItem {
    ArtifactItem {
        name: def.name.clone(),
        kind: def.kind,
        description: def.description.clone(),
        origin: match &def.origin {
            Origin::Builtin => "built-in".to_string(),
            Origin::Suite(s) => s.clone(),
        },
        active_version: history.iter().find(|v| v.is_active).map_or(0, |v| v.version),
        versions: history.len(),
    }
}

fn step(r: TelemetryRow) -> TelemetryStep {
    TelemetryStep {
        timestamp: r.timestamp,
        cycle: r.cycle,
        trajectory_id: r.trajectory_id,
        step: r.step,
        status: r.status,
        objective: r.objective,
        max_violation: r.max_violation,
        directive_action: crate::aso::directive::DirectiveAction::parse(&r.directive_action),
        directive_source: crate::aso::directive::DirectiveSource::parse(&r.directive_source),
        evals_used: r.evals_used,
        wall_time_ms: r.wall_time_ms,
        llm_call_made: r.llm_call_made,
    }
}

fn intervention_item(r: InterventionRow) -> InterventionItem {
    let c: Value = serde_json::from_str(&r.context_json).unwrap_or(Value::Null);
    let text = |k: &str| c[k].as_str().map(String::from);
    InterventionItem {
        id: r.id,
        kind: r.kind,
        status: r.status,
        suite_id: r.suite_id,
        run_id: r.run_id,
        task: r.task_name,
        subject: r.subject,
        context: InterventionContext {
            what: text("what"),
            why: text("why"),
            evidence: c.get("evidence").cloned(),
            proposed_action: text("proposed_action"),
            proposal: text("proposal"),
            commands: serde_json::from_value(c["commands"].clone()).unwrap_or_default(),
        },
        answer: r.answer,
        answer_text: r.answer_text,
        created_at: r.created_at,
        answered_at: r.answered_at,
    }
}

/// The last [`TAIL_BYTES`] of a captured stream, starting at a line.
fn tail(text: &str) -> OutputTail {
    if text.len() <= TAIL_BYTES {
        return OutputTail { text: text.to_string(), truncated: false };
    }
    let mut start = text.len() - TAIL_BYTES;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let cut = &text[start..];
    let cut = cut.find('\n').map_or(cut, |i| &cut[i + 1..]);
    OutputTail { text: cut.to_string(), truncated: true }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&'static str, String)]) -> EnvLookup {
        let map: HashMap<&'static str, String> = pairs.iter().cloned().collect();
        Arc::new(move |name| map.get(name).cloned())
    }

    #[test]
    fn an_app_without_a_command_line_finds_its_database_like_serve_does() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("settings.json");
        let settings_var = (settings::SETTINGS_ENV, settings.display().to_string());

        // Nothing chosen: the platform default, runs beside the database.
        let c = ServiceConfig::located(env_of(std::slice::from_ref(&settings_var))).unwrap();
        assert_eq!(c.db_path, crate::store::default_path());
        assert_eq!(c.settings_path, settings);
        assert_eq!(c.runs_root, None);

        // The settings screen's choice counts…
        let saved = Settings { db_path: Some("/data/saved.db".into()), ..Default::default() };
        saved.save(&settings).unwrap();
        let c = ServiceConfig::located(env_of(std::slice::from_ref(&settings_var))).unwrap();
        assert_eq!(c.db_path, PathBuf::from("/data/saved.db"));

        // …and ATTRACTOR_DB wins over it; an empty variable is no choice.
        let c = ServiceConfig::located(env_of(&[
            settings_var.clone(),
            (DB_ENV, "/tmp/explicit.db".into()),
            (RUNS_DIR_ENV, "/tmp/runs".into()),
        ]))
        .unwrap();
        assert_eq!(c.db_path, PathBuf::from("/tmp/explicit.db"));
        assert_eq!(c.runs_root, Some(PathBuf::from("/tmp/runs")));
        let c = ServiceConfig::located(env_of(&[settings_var.clone(), (DB_ENV, String::new())])).unwrap();
        assert_eq!(c.db_path, PathBuf::from("/data/saved.db"));

        // A broken settings file is reported with its path, not ignored.
        std::fs::write(&settings, "{ not json").unwrap();
        let e = ServiceConfig::located(env_of(&[settings_var])).err().unwrap().to_string();
        assert!(e.contains("settings.json") && e.contains("not usable"), "{e}");
    }

    #[test]
    fn a_failed_request_reads_the_same_on_every_transport() {
        let e: ApiError = ServiceError::NotFound("no run 7".into()).into();
        assert_eq!(e.error, "no run 7");
        assert!(e.validation.is_none());
        let v = Validation {
            valid: false,
            path: "s.yaml".into(),
            suite: None,
            tasks: 0,
            holdout_tasks: 0,
            artifacts: vec![],
            issues: vec![SuiteIssueView {
                file: "s.yaml".into(),
                line: 3,
                column: 5,
                field: "tasks".into(),
                message: "missing".into(),
                hint: None,
            }],
        };
        let e: ApiError = ServiceError::InvalidSuite(Box::new(v)).into();
        assert!(e.error.contains("s.yaml:3:5: missing"), "{}", e.error);
        assert_eq!(e.validation.map(|v| v.issues.len()), Some(1));
    }

    #[test]
    fn fresh_seeds_survive_a_trip_through_javascript() {
        for _ in 0..100 {
            let seed = crate::outer::fresh_seed();
            assert!(seed <= crate::outer::MAX_SAFE_SEED);
            assert_eq!(seed as f64 as u64, seed, "an f64 (a JS number) holds it exactly");
        }
    }

    #[test]
    fn a_long_output_keeps_its_last_whole_lines() {
        let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let t = tail(&text);
        assert!(t.truncated);
        assert!(t.text.len() <= TAIL_BYTES);
        assert!(t.text.starts_with("line ") && t.text.ends_with("line 4999\n"), "{}", &t.text[..20]);
        assert_eq!(tail("short\n").text, "short\n");
    }

    #[test]
    fn the_event_log_reads_updates_and_rollbacks_and_skips_unknown_kinds() {
        let child = serde_json::json!({"events": [
            {"type": "update", "artifact": "a", "from_version": 0, "to_version": 1, "rationale": "r", "learning_rate": 0.5},
            {"type": "rollback", "artifact": "a", "from_version": 1, "to_version": 0, "mean_loss_prev": 0.2,
             "mean_loss_current": 0.3, "new_learning_rate": 0.25},
            {"type": "prune", "artifact": "a", "from_version": 1, "to_version": 1}
        ]});
        let events = parse_events(&child);
        assert_eq!(events.len(), 2);
        assert_eq!(crate::report::shape::transition_label(&events[0]), "update a v0→v1");
        assert!(matches!(events[1], ArtifactEvent::Rollback { new_learning_rate: Some(r), .. } if r == 0.25));
    }
}
