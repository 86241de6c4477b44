//! The database: one SQLite file (the embedded default), opened with WAL,
//! `synchronous=NORMAL` and a 5 s busy timeout — or a PostgreSQL database
//! (`--db postgres://…`) that workers on several machines share. Either is
//! migrated on open, from its own folder of migrations.
//!
//! This is the only module that speaks SQL. Everything else calls the typed
//! methods of [`Store`]. The statements are written once for both backends
//! (sqlx's `Any` driver, `$N` placeholders, which SQLite accepts too); the
//! few that differ ask [`Backend`] for their dialect.
//!
//! Write transactions take the database's write lock up front
//! ([`Store::begin_write`]): `BEGIN IMMEDIATE` on SQLite, where a deferred
//! transaction that reads and then writes can fail at once with
//! `SQLITE_BUSY` when another process wrote in between; on PostgreSQL a
//! transaction-scoped advisory lock, so the read-then-write steps (claiming
//! a request, taking a lease) are just as exclusive across workers.
//!
//! On SQLite every write of this process goes through one connection of its
//! own (`writer`), and reads through a pool beside it. SQLite lets one writer
//! at a time in; a second connection that asks meanwhile is turned away and
//! retries after sleeps that grow to 100 ms (its busy handler), so with 32
//! trajectories recording at once most of an iteration's store time was
//! spent asleep. Waiting for the one writer connection is a fair queue that
//! wakes the next writer the moment the last one commits. (Other processes
//! on the same file still meet the busy handler.)

mod agent;
mod approvals;
mod aso;
mod lease;
mod llm_cache;
mod memory;
mod model_calls;
mod plan;
mod proposals;
mod queue;
mod records;
mod retention;
mod tree;
mod views;
mod watch;

pub use agent::*;
pub use approvals::*;
pub use aso::*;
pub use lease::*;
pub use memory::*;
pub use model_calls::*;
pub use plan::*;
pub use proposals::*;
pub use queue::*;
pub use records::*;
pub use retention::*;
pub use tree::*;
pub use views::*;
pub use watch::*;

use std::path::{Path, PathBuf};

use sqlx::any::AnyPoolOptions;
use sqlx::{Any, AnyPool, Row};

use crate::now_rfc3339;

/// Environment variable that overrides the default database path.
pub const DB_ENV: &str = "ATTRACTOR_DB";

/// Something went wrong talking to the database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the folder for the database at {path}: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error(
        "cannot open the database {path}: {source}\n  hint: check the path and its permissions, or pass another one with --db PATH"
    )]
    Open { path: PathBuf, source: sqlx::Error },
    #[error(
        "cannot bring the database {path} up to date: {source}\n  hint: the file may belong to a newer Attractor; use a fresh --db PATH"
    )]
    Migrate { path: PathBuf, source: sqlx::migrate::MigrateError },
    #[error("database error: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("stored JSON is invalid: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Conflict(String),
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// The default database path: `<platform data dir>/attractor/attractor.db`
/// (for example `~/.local/share/attractor/attractor.db` on Linux).
pub fn default_path() -> PathBuf {
    dirs::data_dir()
        .or_else(|| dirs::home_dir().map(|h| h.join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("attractor")
        .join("attractor.db")
}

/// Where the runs of the database at `db` keep their folders when nobody
/// said otherwise: `runs/<database name>/` beside it, so two databases in
/// one folder never write into each other's run folders.
pub fn default_runs_root(db: &Path) -> PathBuf {
    if Backend::of(db) == Backend::Postgres {
        // A database on a server has no folder beside it: runs go to this
        // machine's data folder, under the database's name.
        let name = url::Url::parse(&db.to_string_lossy())
            .ok()
            .and_then(|u| u.path_segments().and_then(|mut p| p.next_back().map(str::to_string)))
            .filter(|n| !n.is_empty() && !n.contains(['/', '\\']) && n != ".." && n != ".")
            .unwrap_or_else(|| "postgres".into());
        return default_path().with_file_name("runs").join(format!("postgres-{name}"));
    }
    let stem = db.file_stem().map_or_else(|| "attractor".into(), |s| s.to_string_lossy().into_owned());
    db.parent().map_or_else(|| PathBuf::from("runs"), |d| d.join("runs")).join(stem)
}

/// A 0/1 flag column read back as a `bool` (`#[sqlx(try_from = "Flag")]`
/// on a row's field). Both backends store flags as integers, and sqlx's
/// `Any` driver reads an integer only into an integer type.
pub struct Flag(bool);

impl sqlx::Type<Any> for Flag {
    fn type_info() -> sqlx::any::AnyTypeInfo {
        <i64 as sqlx::Type<Any>>::type_info()
    }

    fn compatible(ty: &sqlx::any::AnyTypeInfo) -> bool {
        <i64 as sqlx::Type<Any>>::compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, Any> for Flag {
    fn decode(value: sqlx::any::AnyValueRef<'r>) -> std::result::Result<Self, sqlx::error::BoxDynError> {
        Ok(Flag(<i64 as sqlx::Decode<'r, Any>>::decode(value)? != 0))
    }
}

impl From<Flag> for bool {
    fn from(f: Flag) -> bool {
        f.0
    }
}

/// Which database a [`Store`] speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// A text field of a JSON column at `path` (NULL when missing; on
    /// SQLite also when the column is not JSON).
    pub(crate) fn json_text(self, column: &str, path: &[&str]) -> String {
        match self {
            Backend::Sqlite => {
                format!("CASE WHEN json_valid({column}) THEN json_extract({column}, '$.{}') END", path.join("."))
            }
            Backend::Postgres => format!("(CAST({column} AS jsonb) #>> '{{{}}}')", path.join(",")),
        }
    }

    /// A number field of a JSON column, as a double.
    pub(crate) fn json_number(self, column: &str, key: &str) -> String {
        match self {
            Backend::Sqlite => format!("CAST(json_extract({column}, '$.{key}') AS DOUBLE PRECISION)"),
            Backend::Postgres => format!("CAST(CAST({column} AS jsonb) ->> '{key}' AS DOUBLE PRECISION)"),
        }
    }

    /// The ids of a JSON array bound as parameter `$n`, as a subquery
    /// (the statement stays the same whatever the number of ids).
    pub(crate) fn json_ids(self, n: usize) -> String {
        match self {
            Backend::Sqlite => format!("SELECT value FROM json_each(${n})"),
            Backend::Postgres => {
                format!("SELECT CAST(value AS BIGINT) FROM jsonb_array_elements_text(CAST(${n} AS jsonb))")
            }
        }
    }

    /// Whether `location` (a `--db` value) names a PostgreSQL database.
    pub fn of(location: &Path) -> Backend {
        let text = location.to_string_lossy();
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Backend::Postgres
        } else {
            Backend::Sqlite
        }
    }
}

/// A handle to the database; cheap to clone (it wraps a connection pool).
#[derive(Clone, Debug)]
pub struct Store {
    /// Reads (and, on PostgreSQL, writes too).
    pool: AnyPool,
    /// Writes: on SQLite a pool of one connection (see the module's doc); on
    /// PostgreSQL the same pool as `pool`.
    writer: AnyPool,
    /// The file, or the PostgreSQL URL (shown without its password).
    path: PathBuf,
    backend: Backend,
}

/// The SQLite migrations, and PostgreSQL's (one schema, the same tables).
static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// A PostgreSQL URL as it may be shown: without its password, whether in
/// its user part or as a `password=` parameter; one that does not even
/// parse shows nothing of what stands before its `@`.
pub fn shown_location(location: &Path) -> PathBuf {
    if Backend::of(location) != Backend::Postgres {
        return location.to_path_buf();
    }
    let text = location.to_string_lossy();
    let Ok(mut u) = url::Url::parse(&text) else {
        let host = text.rsplit_once('@').map_or("", |(_, h)| h);
        return PathBuf::from(format!("postgres://***@{host}"));
    };
    if u.password().is_some() {
        let _ = u.set_password(Some("***"));
    }
    if u.query_pairs().any(|(k, _)| k == "password") {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let v = if k == "password" { "***".to_string() } else { v.into_owned() };
                (k.into_owned(), v)
            })
            .collect();
        u.query_pairs_mut().clear().extend_pairs(pairs);
    }
    PathBuf::from(u.to_string())
}

impl Store {
    /// Opens (creating if needed) the database at `path` — a SQLite file, or
    /// a `postgres://` URL — and applies pending migrations.
    pub async fn open(path: &Path) -> Result<Store> {
        sqlx::any::install_default_drivers();
        match Backend::of(path) {
            Backend::Sqlite => Store::open_sqlite(path).await,
            Backend::Postgres => Store::open_postgres(path).await,
        }
    }

    async fn open_sqlite(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir { path: dir.to_path_buf(), source })?;
        }
        // Two processes opening a fresh file at once would both try to switch
        // the journal mode and create the tables; an OS file lock held over the
        // whole set-up makes them take turns. It is released before any work.
        let lock_path = path.with_extension("db.setup-lock");
        let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path);
        let lock = match lock {
            Ok(file) => file.lock().map(|_| file).ok(),
            Err(_) => None,
        };
        // The file name goes into a URL: `%`, `?` and `#` are escaped (sqlx
        // decodes them back). sqlx's SQLite defaults are a 5 s busy timeout
        // and foreign keys on; `synchronous` is set on every connection.
        let name = path.display().to_string().replace('%', "%25").replace('?', "%3F").replace('#', "%23");
        let url = format!("sqlite://{name}?mode=rwc");
        let connect = |connections: u32| {
            let pool = AnyPoolOptions::new()
                .max_connections(connections)
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        sqlx::Executor::execute(&mut *conn, "PRAGMA synchronous = NORMAL").await?;
                        Ok(())
                    })
                })
                .connect(&url);
            async move { pool.await.map_err(|source| StoreError::Open { path: path.to_path_buf(), source }) }
        };
        let pool = connect(4).await?;

        // WAL is a property of the file, so setting it once covers every
        // connection. SQLite answers with the mode it actually chose; anything
        // other than "wal" means the host cannot do it (some network file
        // systems), and the default rollback journal still works.
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode = WAL").fetch_one(&pool).await?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(path = %path.display(), mode, "WAL journal mode is not available here; using the default journal");
        }
        let migrated = SQLITE_MIGRATIONS.run(&pool).await;
        drop(lock);
        migrated.map_err(|source| StoreError::Migrate { path: path.to_path_buf(), source })?;
        let writer = connect(1).await?;
        Ok(Store { pool, writer, path: path.to_path_buf(), backend: Backend::Sqlite })
    }

    async fn open_postgres(location: &Path) -> Result<Store> {
        let url = location;
        let shown = shown_location(url);
        // No cached prepared statements: sqlx's Any driver declares a NULL
        // double as a float4 parameter (it swaps the two float kinds), and a
        // statement cached with that declaration then refuses the 8 bytes
        // of a real value the next time. Prepared afresh, each statement is
        // declared from the values it is given.
        let mut url = url::Url::parse(&url.to_string_lossy()).map_err(|e| StoreError::Open {
            path: shown.clone(),
            source: sqlx::Error::Configuration(format!("not a PostgreSQL URL: {e}").into()),
        })?;
        if !url.query_pairs().any(|(k, _)| k == "statement-cache-capacity") {
            url.query_pairs_mut().append_pair("statement-cache-capacity", "0");
        }
        let pool = AnyPoolOptions::new()
            .max_connections(8)
            .connect(url.as_str())
            .await
            .map_err(|source| StoreError::Open { path: shown.clone(), source })?;
        // Migrations take PostgreSQL's advisory lock: workers starting at
        // once take turns.
        POSTGRES_MIGRATIONS.run(&pool).await.map_err(|source| StoreError::Migrate { path: shown.clone(), source })?;
        Ok(Store { writer: pool.clone(), pool, path: shown, backend: Backend::Postgres })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// A transaction holding the database's write lock from its start (see
    /// the module's doc).
    pub(crate) async fn begin_write(&self) -> Result<sqlx::Transaction<'static, Any>> {
        match self.backend {
            Backend::Sqlite => Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?),
            Backend::Postgres => {
                let mut tx = self.writer.begin().await?;
                // Selected as a number: the lock function returns `void`, a type
                // the `Any` driver cannot carry.
                sqlx::query("SELECT 1 FROM (SELECT pg_advisory_xact_lock(7300)) AS locked").execute(&mut *tx).await?;
                Ok(tx)
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The journal mode in force (`wal` normally; SQLite only).
    pub async fn journal_mode(&self) -> Result<String> {
        Ok(sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&self.pool).await?)
    }

    /// Names of the tables in the database, for checks and `inspect`.
    pub async fn table_columns(&self, table: &str) -> Result<Vec<String>> {
        let sql = match self.backend {
            Backend::Sqlite => "SELECT name FROM pragma_table_info($1) ORDER BY cid",
            Backend::Postgres => {
                "SELECT column_name::text FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position"
            }
        };
        let rows = sqlx::query(sql).bind(table).fetch_all(&self.pool).await?;
        Ok(rows.into_iter().map(|r| r.get::<String, _>(0)).collect())
    }

    pub async fn close(&self) {
        self.writer.close().await;
        self.pool.close().await;
    }

    // ----- suites -------------------------------------------------------------

    /// Records a suite (or refreshes its task list) and returns its id. The
    /// suite's name is its identity across runs. `source` is the file it was
    /// read from, when there is one (kept from an earlier run otherwise).
    pub async fn upsert_suite(
        &self,
        name: &str,
        tasks_json: &str,
        baseline_json: &str,
        source: Option<&str>,
    ) -> Result<i64> {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO task_suites (name, tasks_json, baseline_artifacts_json, created_at, source_path)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT(name) DO UPDATE SET tasks_json = excluded.tasks_json,
                 baseline_artifacts_json = excluded.baseline_artifacts_json,
                 source_path = COALESCE(excluded.source_path, task_suites.source_path)
             RETURNING id",
        )
        .bind(name)
        .bind(tasks_json)
        .bind(baseline_json)
        .bind(now_rfc3339())
        .bind(source)
        .fetch_one(&self.writer)
        .await?;
        Ok(id)
    }

    pub async fn suite_by_name(&self, name: &str) -> Result<Option<SuiteRow>> {
        Ok(sqlx::query_as("SELECT * FROM task_suites WHERE name = $1").bind(name).fetch_optional(&self.pool).await?)
    }

    /// Every suite with its epoch count and latest mean loss.
    pub async fn suite_summaries(&self) -> Result<Vec<SuiteSummary>> {
        Ok(sqlx::query_as(&format!(
            "SELECT s.id, s.name, s.created_at, s.source_path,
                    (SELECT COUNT(*) FROM epochs e WHERE e.suite_id = s.id AND e.completed_at IS NOT NULL) AS epochs,
                    {} AS latest_mean_loss,
                    (SELECT COUNT(*) FROM epochs e WHERE e.suite_id = s.id AND e.completed_at IS NULL) AS unfinished
             FROM task_suites s ORDER BY s.name",
            self.latest_mean_sql("s.id")
        ))
        .fetch_all(&self.pool)
        .await?)
    }

    /// The suite's latest mean loss: its last closed epoch's — unless a tree
    /// search closed it, whose epochs each measured one candidate (most of
    /// them discarded): then the best node it kept, whose versions the
    /// search made active.
    pub(crate) fn latest_mean_sql(&self, suite_id: &str) -> String {
        let note = self.backend.json_text("e.child_artifacts_json", &["note"]);
        let tree = crate::outer::TREE_EPOCH;
        format!(
            "(SELECT CASE WHEN {note} LIKE '{tree}%'
                          THEN (SELECT MIN(n.mean_loss) FROM tree_nodes n
                                WHERE n.suite_id = e.suite_id AND n.status IN ('committed', 'pruned'))
                          ELSE e.mean_loss END
              FROM epochs e WHERE e.suite_id = {suite_id} AND e.completed_at IS NOT NULL
              ORDER BY e.epoch_num DESC LIMIT 1)"
        )
    }

    // ----- artifacts ----------------------------------------------------------

    /// Records what a suite declares about its own artifacts. A name already
    /// declared by another suite is a conflict: two suites would silently tune
    /// one shared parameter.
    pub async fn declare_artifact(&self, decl: &DeclarationRow) -> Result<()> {
        let mut tx = self.begin_write().await?;
        let owner: Option<String> =
            sqlx::query_scalar("SELECT suite_name FROM artifact_declarations WHERE artifact_name = $1")
                .bind(&decl.artifact_name)
                .fetch_optional(&mut *tx)
                .await?;
        if let Some(owner) = owner.filter(|o| o != &decl.suite_name) {
            return Err(StoreError::Conflict(format!(
                "artifact `{}` is already declared by suite `{owner}`\n  hint: give this suite's artifact another name (artifact names are shared across suites)",
                decl.artifact_name
            )));
        }
        sqlx::query(
            "INSERT INTO artifact_declarations (artifact_name, suite_name, kind, description, content, fields_json, declared_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT(artifact_name) DO UPDATE SET kind = excluded.kind, description = excluded.description,
                 content = excluded.content,
                 fields_json = excluded.fields_json, declared_at = excluded.declared_at",
        )
        .bind(&decl.artifact_name)
        .bind(&decl.suite_name)
        .bind(&decl.kind)
        .bind(&decl.description)
        .bind(&decl.content)
        .bind(&decl.fields_json)
        .bind(&decl.declared_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn declarations(&self) -> Result<Vec<DeclarationRow>> {
        Ok(sqlx::query_as("SELECT * FROM artifact_declarations ORDER BY artifact_name").fetch_all(&self.pool).await?)
    }

    /// Stored versions (1, 2, …) of one artifact, oldest first.
    pub async fn artifact_versions(&self, name: &str) -> Result<Vec<VersionRow>> {
        Ok(sqlx::query_as("SELECT * FROM artifact_versions WHERE artifact_name = $1 ORDER BY version")
            .bind(name)
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn artifact_version(&self, name: &str, version: i64) -> Result<Option<VersionRow>> {
        Ok(sqlx::query_as("SELECT * FROM artifact_versions WHERE artifact_name = $1 AND version = $2")
            .bind(name)
            .bind(version)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The active stored version of an artifact; `None` means version 0 is active.
    pub async fn active_version(&self, name: &str) -> Result<Option<VersionRow>> {
        Ok(sqlx::query_as("SELECT * FROM artifact_versions WHERE artifact_name = $1 AND is_active = 1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Writes a new version (not yet active) and returns its number.
    pub async fn put_version(
        &self,
        name: &str,
        content: &str,
        parent_version: i64,
        epoch_id: Option<i64>,
    ) -> Result<i64> {
        let mut tx = self.begin_write().await?;
        let version = insert_version(&mut tx, name, content, parent_version, epoch_id).await?;
        tx.commit().await?;
        Ok(version)
    }

    /// Makes `version` the active one (0 means the built-in default). The flip
    /// is one transaction, so readers never see two active versions or none
    /// half-way. Returns `false` when that version does not exist.
    pub async fn set_active(&self, name: &str, version: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let ok = activate(&mut tx, name, version).await?;
        if ok {
            tx.commit().await?;
        }
        Ok(ok)
    }

    // ----- epochs -------------------------------------------------------------

    pub async fn insert_epoch(&self, suite_id: i64, epoch_num: i64, parent_artifacts_json: &str) -> Result<EpochRow> {
        Ok(sqlx::query_as(
            "INSERT INTO epochs (suite_id, epoch_num, started_at, parent_artifacts_json)
             VALUES ($1, $2, $3, $4) RETURNING *",
        )
        .bind(suite_id)
        .bind(epoch_num)
        .bind(now_rfc3339())
        .bind(parent_artifacts_json)
        .fetch_one(&self.writer)
        .await?)
    }

    pub async fn epochs(&self, suite_id: i64) -> Result<Vec<EpochRow>> {
        Ok(sqlx::query_as("SELECT * FROM epochs WHERE suite_id = $1 ORDER BY epoch_num")
            .bind(suite_id)
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn last_epoch(&self, suite_id: i64) -> Result<Option<EpochRow>> {
        Ok(sqlx::query_as("SELECT * FROM epochs WHERE suite_id = $1 ORDER BY epoch_num DESC LIMIT 1")
            .bind(suite_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// η as the suite's last closed epoch left it (`None` before the first,
    /// or for records written before η was kept); a value outside [0, 1] —
    /// a database edited by hand — is not used.
    pub async fn last_learning_rate(&self, suite_id: i64) -> Result<Option<f64>> {
        let lr_of = self.backend.json_number("child_artifacts_json", "learning_rate");
        let lr: Option<f64> = sqlx::query_scalar(&format!(
            "SELECT {lr_of} FROM epochs
             WHERE suite_id = $1 AND completed_at IS NOT NULL AND {lr_of} IS NOT NULL
             ORDER BY epoch_num DESC LIMIT 1"
        ))
        .bind(suite_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(lr.filter(|v| (0.0..=1.0).contains(v)))
    }

    /// The last completed epoch of a suite.
    pub async fn last_completed_epoch(&self, suite_id: i64) -> Result<Option<EpochRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM epochs WHERE suite_id = $1 AND completed_at IS NOT NULL ORDER BY epoch_num DESC LIMIT 1",
        )
        .bind(suite_id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Closes an epoch in one transaction: applies the artifact changes the
    /// optimizer decided on, then writes the mean loss and the child artifact
    /// log that `child_json` builds from the version numbers the changes got.
    /// A crash leaves either the whole step or none of it.
    pub async fn complete_epoch(
        &self,
        epoch_id: i64,
        mean_loss: Option<f64>,
        close: &EpochClose,
        child_json: impl FnOnce(&[i64]) -> String,
    ) -> Result<Vec<i64>> {
        let changes = &close.changes;
        let mut tx = self.begin_write().await?;
        let mut versions = Vec::with_capacity(changes.len());
        for change in changes {
            match change {
                ArtifactChange::Update { name, content, parent_version } => {
                    let v = insert_version(&mut tx, name, content, *parent_version, Some(epoch_id)).await?;
                    activate(&mut tx, name, v).await?;
                    versions.push(v);
                }
                ArtifactChange::Activate { name, version } => {
                    if !activate(&mut tx, name, *version).await? {
                        return Err(StoreError::Conflict(format!("artifact `{name}` has no version {version}")));
                    }
                    versions.push(*version);
                }
            }
        }
        // The winner (if any) became the version of the first update.
        let applied = changes.iter().zip(&versions).find_map(|(c, v)| match c {
            ArtifactChange::Update { name, .. } => Some((name.clone(), *v)),
            ArtifactChange::Activate { .. } => None,
        });
        if let (Some(id), Some((_, v))) = (close.applied_approval, &applied) {
            approvals::mark_applied(&mut tx, id, *v, Some(epoch_id)).await?;
        }
        let suite_id: i64 =
            sqlx::query_scalar("SELECT suite_id FROM epochs WHERE id = $1").bind(epoch_id).fetch_one(&mut *tx).await?;
        for p in &close.proposals {
            let applied_version = match (&applied, p.outcome) {
                (Some((name, v)), ProposalOutcome::Winner) if *name == p.artifact => Some(*v),
                _ => None,
            };
            proposals::insert_proposal(&mut tx, suite_id, epoch_id, p, applied_version).await?;
        }
        if let Some(o) = &close.observed {
            sqlx::query(
                // The judged epoch's own winner, or the gated update it
                // applied (proposed in an earlier epoch, approved later).
                "UPDATE proposals SET observed_loss_reduction = $1, rolled_back = $2
                 WHERE outcome = 'winner' AND (epoch_id = $3 OR EXISTS (
                     SELECT 1 FROM update_approvals a WHERE a.applied_epoch_id = $3
                         AND a.epoch_id = proposals.epoch_id AND a.artifact = proposals.artifact))",
            )
            .bind(o.loss_reduction)
            .bind(i64::from(o.rolled_back))
            .bind(o.epoch_id)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query("UPDATE epochs SET completed_at = $1, mean_loss = $2, child_artifacts_json = $3 WHERE id = $4")
            .bind(now_rfc3339())
            .bind(mean_loss)
            .bind(child_json(&versions))
            .bind(epoch_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(versions)
    }

    // ----- runs ---------------------------------------------------------------

    /// Records that a run started and returns its id.
    pub async fn insert_run(
        &self,
        suite_id: i64,
        epoch_id: i64,
        task_name: &str,
        kind: &str,
        run_dir: &str,
    ) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "INSERT INTO runs (suite_id, epoch_id, task_name, kind, status, run_dir, started_at)
             VALUES ($1, $2, $3, $4, 'running', $5, $6) RETURNING id",
        )
        .bind(suite_id)
        .bind(epoch_id)
        .bind(task_name)
        .bind(kind)
        .bind(run_dir)
        .bind(now_rfc3339())
        .fetch_one(&self.writer)
        .await?)
    }

    /// Records how a run ended and, for a run that counts, its row in
    /// `epoch_runs` — both in one transaction.
    pub async fn finish_run(&self, run_id: i64, epoch_id: i64, end: &RunEnd) -> Result<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query(
            "UPDATE runs SET status = $1, finished_at = $2, duration_ms = $3, exit_code = $4, loss = $5,
                 loss_breakdown_json = $6, result_json = $7, error = $8, stdout = $9, stderr = $10, model_json = $11
             WHERE id = $12",
        )
        .bind(&end.status)
        .bind(now_rfc3339())
        .bind(end.duration_ms)
        .bind(end.exit_code)
        .bind(end.loss)
        .bind(&end.loss_breakdown_json)
        .bind(&end.result_json)
        .bind(&end.error)
        .bind(&end.stdout)
        .bind(&end.stderr)
        .bind(end.model.and_then(|m| serde_json::to_string(&m).ok()))
        .bind(run_id)
        .execute(&mut *tx)
        .await?;
        if let (Some(loss), Some(scores)) = (end.loss, &end.scores_json) {
            sqlx::query(
                "INSERT INTO epoch_runs (epoch_id, run_id, task_name, loss, scores_json) VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(epoch_id)
            .bind(run_id)
            .bind(&end.task_name)
            .bind(loss)
            .bind(scores)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Marks runs of an epoch that never finished (the process died or was
    /// interrupted) as cancelled, so they are run again and never counted.
    pub async fn cancel_unfinished_runs(&self, epoch_id: i64, reason: &str) -> Result<u64> {
        let done = sqlx::query(
            "UPDATE runs SET status = 'cancelled', finished_at = $1, error = COALESCE(error, $2)
             WHERE epoch_id = $3 AND status = 'running'",
        )
        .bind(now_rfc3339())
        .bind(reason)
        .bind(epoch_id)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected())
    }

    pub async fn epoch_runs(&self, epoch_id: i64) -> Result<Vec<EpochRunRow>> {
        Ok(sqlx::query_as("SELECT * FROM epoch_runs WHERE epoch_id = $1 ORDER BY task_name")
            .bind(epoch_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// The counted runs of an epoch that failed or were aborted.
    pub async fn unsuccessful_runs(&self, epoch_id: i64) -> Result<Vec<RunRow>> {
        Ok(sqlx::query_as(
            "SELECT runs.* FROM runs JOIN epoch_runs ON epoch_runs.run_id = runs.id \
             WHERE runs.epoch_id = $1 AND runs.status IN ('failed', 'aborted') ORDER BY runs.task_name",
        )
        .bind(epoch_id)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn runs_of_epoch(&self, epoch_id: i64) -> Result<Vec<RunRow>> {
        Ok(sqlx::query_as("SELECT * FROM runs WHERE epoch_id = $1 ORDER BY id")
            .bind(epoch_id)
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn run(&self, run_id: i64) -> Result<Option<RunRow>> {
        Ok(sqlx::query_as("SELECT * FROM runs WHERE id = $1").bind(run_id).fetch_optional(&self.pool).await?)
    }

    // ----- events -------------------------------------------------------------

    pub async fn insert_event(&self, event: &NewEvent) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "INSERT INTO events (kind, suite_id, epoch_id, run_id, payload_json, occurred_at, recorded_at, origin)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        )
        .bind(&event.kind)
        .bind(event.suite_id)
        .bind(event.epoch_id)
        .bind(event.run_id)
        .bind(&event.payload_json)
        .bind(&event.occurred_at)
        .bind(now_rfc3339())
        .bind(&event.origin)
        .fetch_one(&self.writer)
        .await?)
    }

    /// Events after `after` that another process published, oldest first
    /// (the app tails them to show a CLI run live).
    pub async fn events_from_elsewhere(&self, after: i64, origin: &str, limit: u32) -> Result<Vec<EventRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM events WHERE id > $1 AND (origin IS NULL OR origin != $2) ORDER BY id LIMIT $3",
        )
        .bind(after)
        .bind(origin)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?)
    }

    /// The newest event's id (0 when there is none).
    pub async fn last_event_id(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM events").fetch_one(&self.pool).await?)
    }

    pub async fn events_of_suite(&self, suite_id: i64) -> Result<Vec<EventRow>> {
        Ok(sqlx::query_as("SELECT * FROM events WHERE suite_id = $1 ORDER BY id")
            .bind(suite_id)
            .fetch_all(&self.pool)
            .await?)
    }
}

/// One artifact move decided at the end of an epoch.
#[derive(Debug, Clone)]
pub enum ArtifactChange {
    /// Write a new version from `parent_version` and make it active.
    Update { name: String, content: String, parent_version: i64 },
    /// Make an existing version active (a rollback; 0 is the default).
    Activate { name: String, version: i64 },
}

/// Everything decided when an epoch closes, written in one transaction.
#[derive(Debug, Clone, Default)]
pub struct EpochClose {
    /// Artifact moves: at most one update, or the rollbacks.
    pub changes: Vec<ArtifactChange>,
    /// Every proposal the optimizer considered.
    pub proposals: Vec<NewProposal>,
    /// What this epoch says about the previous epoch's winner.
    pub observed: Option<ObservedEffect>,
    /// The approved update (the approval gate's) the update of `changes` applies.
    pub applied_approval: Option<i64>,
}

/// The effect of an epoch's applied proposal, seen one epoch later.
#[derive(Debug, Clone, Copy)]
pub struct ObservedEffect {
    /// The epoch whose winner is judged.
    pub epoch_id: i64,
    /// Previous mean loss minus the new one (positive = it helped).
    pub loss_reduction: f64,
    pub rolled_back: bool,
}

/// The number an artifact's next version gets.
const NEXT_VERSION: &str = "SELECT COALESCE(MAX(version), 0) + 1 FROM artifact_versions WHERE artifact_name = $1";

async fn insert_version(
    tx: &mut sqlx::AnyConnection,
    name: &str,
    content: &str,
    parent_version: i64,
    epoch_id: Option<i64>,
) -> Result<i64> {
    let next: i64 = sqlx::query_scalar(NEXT_VERSION).bind(name).fetch_one(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO artifact_versions (artifact_name, version, content, parent_version, created_at, epoch_id, is_active)
         VALUES ($1, $2, $3, $4, $5, $6, 0)",
    )
    .bind(name)
    .bind(next)
    .bind(content)
    .bind(parent_version)
    .bind(now_rfc3339())
    .bind(epoch_id)
    .execute(&mut *tx)
    .await?;
    Ok(next)
}

async fn activate(tx: &mut sqlx::AnyConnection, name: &str, version: i64) -> Result<bool> {
    if version != 0 {
        let exists: Option<i64> =
            sqlx::query_scalar("SELECT id FROM artifact_versions WHERE artifact_name = $1 AND version = $2")
                .bind(name)
                .bind(version)
                .fetch_optional(&mut *tx)
                .await?;
        if exists.is_none() {
            return Ok(false);
        }
    }
    // Clear first, then set: the partial unique index allows one active row.
    sqlx::query("UPDATE artifact_versions SET is_active = 0 WHERE artifact_name = $1 AND is_active = 1")
        .bind(name)
        .execute(&mut *tx)
        .await?;
    if version != 0 {
        sqlx::query("UPDATE artifact_versions SET is_active = 1 WHERE artifact_name = $1 AND version = $2")
            .bind(name)
            .bind(version)
            .execute(&mut *tx)
            .await?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgresql_url_is_shown_without_its_password_and_a_file_as_it_is() {
        let url = Path::new("postgres://ana:s3cret@db.example:5432/attractor");
        assert_eq!(shown_location(url), PathBuf::from("postgres://ana:***@db.example:5432/attractor"));
        let plain = Path::new("postgres://ana@db.example/attractor");
        assert_eq!(shown_location(plain), plain);
        let file = Path::new("/data/my db?.db");
        assert_eq!(shown_location(file), file);
        let param = Path::new("postgres://ana@db.example/attractor?password=s3cret&sslmode=require");
        let shown = shown_location(param).display().to_string();
        assert!(!shown.contains("s3cret") && shown.contains("sslmode=require"), "{shown}");
        let broken = Path::new("postgres://ana:s3#cr/et@db.example:5432/attractor");
        let shown = shown_location(broken).display().to_string();
        assert!(!shown.contains("s3"), "{shown}");
        assert_eq!(Backend::of(url), Backend::Postgres);
        assert_eq!(Backend::of(Path::new("postgresql://x/y")), Backend::Postgres);
        assert_eq!(Backend::of(file), Backend::Sqlite);
    }

    #[test]
    fn a_postgresql_database_keeps_its_run_folders_in_the_data_folder_not_in_a_folder_named_after_the_url() {
        let runs = default_runs_root(Path::new("postgres://ana:s3cret@db.example:5432/team"));
        assert!(runs.ends_with("attractor/runs/postgres-team"), "{}", runs.display());
        assert!(!runs.to_string_lossy().contains("postgres:"), "{}", runs.display());
        assert!(!runs.to_string_lossy().contains("s3cret"));
        let odd = default_runs_root(Path::new("postgres://db.example/"));
        assert!(odd.ends_with("runs/postgres-postgres"), "{}", odd.display());
        assert_eq!(default_runs_root(Path::new("/data/a.db")), PathBuf::from("/data/runs/a"));
    }

    #[tokio::test]
    async fn a_sqlite_file_whose_name_has_url_characters_opens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("odd #1 100%?.db");
        let store = Store::open(&path).await.unwrap();
        assert_eq!(store.backend(), Backend::Sqlite);
        assert!(path.exists(), "the file is where it was asked");
        store.close().await;
    }
}
