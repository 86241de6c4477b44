//! The service facade: one API over the store, the artifact registry, the
//! outer loop and the bus, for every front end.
//!
//! `attractor serve` puts it behind HTTP + server-sent events (`crate::http`),
//! the desktop shell behind one Tauri command; both reach it through the
//! operations declared once in [`operations`]. The transports only
//! translate: every decision — what a suite's status is, how an epoch's
//! events read, what a diff looks like, whether a suite file is valid — is
//! made here once, so the browser and the app cannot disagree.
//!
//! The methods live beside the part of the app they serve: `suites`,
//! `runs`, `artifacts`, `inbox`, `memory`, `launches`, `watched`, `reports`
//! and `settings` (each an `impl Service` block); this file holds the facade
//! itself — opening, the bus, shutting down — and its errors.
//!
//! The facade owns one long-lived [`Bus`]: launched suite runs publish on it,
//! the store persists every event from it, and each live-progress subscriber
//! (an SSE stream, a Tauri event channel) gets its own queue from it.
//!
//! Once [`Service::start_watching`] is called it also owns the folder watcher
//! (`crate::watch`), whose runs are ordinary launches of this facade.

// The facade's methods, one file per part of the app (each an `impl
// Service` block), and what they share.
mod artifacts;
mod diff;
mod flips;
mod inbox;
mod launches;
mod memory;
pub mod notify;
pub mod operations;
pub mod report;
mod reports;
mod runs;
pub mod settings;
mod suites;
#[cfg(test)]
mod ts_export;
pub mod types;
mod watched;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::artifact::{Origin, Registry, RegistryError};
use crate::bus::{self, Bus, Envelope, Event};
use crate::store::{
    CountedRun, EpochRow, EpochWindow, InterventionRow, RunBrief, Store, StoreError, SuiteRow, TelemetryRow,
};
use crate::suite::{self, SourceLocation, SuiteError, SuiteIssue};
use crate::watch::{LaunchRefusal, Launcher, WatchConfig, WatchError, Watcher};

pub use diff::artifact_diff;
pub use launches::validation_of;
pub use launches::workers_view;
use launches::*;
pub use reports::ReportArchive;
pub use settings::Settings;
use settings::*;
use suites::*;
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
    format!("the suite file {} is not valid ({}){first}", v.path, crate::counted(v.issues.len(), "issue"))
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
    /// Each charted suite's closed epochs, as far as read ([`Service::suite_charts`]).
    closed_epochs: Mutex<HashMap<i64, Arc<Vec<EpochView>>>>,
    /// Closed epochs with their runs, the most recently asked for first.
    epoch_views: Mutex<lru::LruCache<i64, Arc<EpochView>>>,
}

/// Closed epochs (with their runs) the service keeps: a few pages of the
/// Runs screen of a few suites, ~10 MB at 50 tasks an epoch.
const EPOCH_VIEWS_CACHED: std::num::NonZeroUsize = std::num::NonZeroUsize::new(256).expect("not zero");

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
            closed_epochs: Mutex::new(HashMap::new()),
            epoch_views: Mutex::new(lru::LruCache::new(EPOCH_VIEWS_CACHED)),
        });
        Ok(service)
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
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave the data half-changed.
    m.lock().unwrap_or_else(|p| p.into_inner())
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
            notes: vec![],
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
    fn the_event_log_reads_updates_and_rollbacks_and_skips_unknown_kinds() {
        let child = serde_json::json!({"events": [
            {"type": "update", "artifact": "a", "from_version": 0, "to_version": 1, "rationale": "r", "learning_rate": 0.5},
            {"type": "rollback", "artifact": "a", "from_version": 1, "to_version": 0, "mean_loss_prev": 0.2,
             "mean_loss_current": 0.3, "new_learning_rate": 0.25},
            {"type": "prune", "artifact": "a", "from_version": 1, "to_version": 1}
        ]});
        let row = |json: String| crate::store::EpochRow {
            id: 1,
            suite_id: 1,
            epoch_num: 1,
            started_at: String::new(),
            completed_at: None,
            mean_loss: None,
            parent_artifacts_json: "{}".into(),
            child_artifacts_json: Some(json),
        };
        let events = suites::EpochRecord::of(&row(child.to_string())).events;
        assert_eq!(events.len(), 2);
        assert_eq!(crate::service::report::shape::transition_label(&events[0]), "update a v0→v1");
        assert!(matches!(events[1], ArtifactEvent::Rollback { new_learning_rate: Some(r), .. } if r == 0.25));
    }
}
