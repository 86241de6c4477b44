//! Helpers shared by the integration tests: temporary databases, suites
//! written to disk, and a runner wired the way the CLI wires it.
#![allow(dead_code)]

pub mod cli;
pub mod coordinator;
pub mod crafted;
pub mod http;
pub mod pg;
pub mod squares;
pub mod world;

use std::path::{Path, PathBuf};

use attractor::artifact::Registry;
use attractor::bus::{self, Bus};
use attractor::outer::{OptimizerKind, RunConfig, RunSummary, SuiteRunner};
use attractor::store::Store;
use tokio::sync::watch;

pub struct Env {
    pub dir: tempfile::TempDir,
    pub store: Store,
    /// The database's location: the file, or the PostgreSQL URL.
    pub db: PathBuf,
}

impl Env {
    pub async fn new() -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        // scripts/test.sh's PostgreSQL pass runs the same tests on a fresh
        // PostgreSQL database (see pg.rs).
        let db = pg::test_database().map_or_else(|| dir.path().join("attractor.db"), PathBuf::from);
        let store = Store::open(&db).await.expect("open store");
        Env { dir, store, db }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes a suite file into the temp dir and returns its path.
    pub fn suite(&self, file: &str, yaml: &str) -> PathBuf {
        let p = self.path(file);
        std::fs::write(&p, yaml).expect("write suite");
        p
    }

    pub fn config(&self, epochs: u32, optimizer: OptimizerKind) -> RunConfig {
        RunConfig {
            epochs,
            optimizer,
            learning_rate: 0.5,
            rollback_on_regression: true,
            concurrency: 2,
            seed: 7,
            runs_root: self.path("runs"),
            holdout_tolerance: attractor::outer::DEFAULT_HOLDOUT_TOLERANCE,
            verify_repeats: None,
            approve_updates: None,
            tree: attractor::outer::tree::TreeConfig::default(),
        }
    }

    /// Runs a suite to completion, persisting events like the CLI does.
    pub async fn run(&self, suite: &Path, config: RunConfig) -> RunSummary {
        let (_tx, rx) = watch::channel(false);
        self.run_with_cancel(suite, config, rx).await
    }

    pub async fn run_with_cancel(&self, suite: &Path, config: RunConfig, cancel: watch::Receiver<bool>) -> RunSummary {
        let suite = attractor::suite::load(suite).unwrap_or_else(|e| panic!("{e}"));
        let registry = Registry::load(self.store.clone()).await.expect("registry");
        let bus = Bus::new();
        let persister = bus::persist(&bus, self.store.clone());
        let summary = SuiteRunner::new(self.store.clone(), registry, bus.clone(), suite, config, cancel).run().await;
        bus.close();
        persister.await.expect("persister");
        summary.unwrap_or_else(|e| panic!("runner failed: {e}"))
    }

    /// Runs a suite with a model for a model-driven optimizer (`textgrad`).
    pub async fn run_with_model(
        &self,
        suite: &Path,
        config: RunConfig,
        model: attractor::llm::LlmClient,
    ) -> Result<RunSummary, attractor::outer::RunnerError> {
        let (_tx, cancel) = watch::channel(false);
        let suite = attractor::suite::load(suite).unwrap_or_else(|e| panic!("{e}"));
        let registry = Registry::load(self.store.clone()).await.expect("registry");
        let bus = Bus::new();
        let persister = bus::persist(&bus, self.store.clone());
        let summary = SuiteRunner::new(self.store.clone(), registry, bus.clone(), suite, config, cancel)
            .with_optimizer_llm(model)
            .run()
            .await;
        bus.close();
        persister.await.expect("persister");
        summary
    }

    pub async fn registry(&self) -> Registry {
        Registry::load(self.store.clone()).await.expect("registry")
    }
}

/// A pool of its own on the store's database, to check what it holds (and
/// refuses) independently of its API, on either backend.
pub async fn raw_pool(store: &Store) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    let url = match store.backend() {
        attractor::store::Backend::Sqlite => format!("sqlite://{}", store.path().display()),
        attractor::store::Backend::Postgres => store.path().display().to_string(),
    };
    sqlx::AnyPool::connect(&url).await.expect("connect")
}

/// A raw SQL count, to check what the store holds independently of its API.
pub async fn count(store: &Store, sql: &str) -> i64 {
    let pool = raw_pool(store).await;
    let n: i64 = sqlx::query_scalar(sql).fetch_one(&pool).await.expect(sql);
    pool.close().await;
    n
}

/// How long a test waits for something a run or the watcher does before it
/// fails (generous: a loaded CI machine is slow, never wrong).
pub const DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// Polls `check` until it returns `Some`, failing after [`DEADLINE`] with `what`.
pub async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = std::time::Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}
