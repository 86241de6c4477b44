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
mod artifacts;
mod aso;
mod history;
mod lease;
mod llm_cache;
mod memory;
mod model_calls;
mod plan;
mod proposals;
mod queue;
mod records;
mod retention;
mod run_items;
mod tree;
mod views;
mod watch;

pub use agent::*;
pub use approvals::*;
pub use aso::*;
pub use history::*;
pub use lease::*;
pub use memory::*;
pub use model_calls::*;
pub use plan::*;
pub use proposals::*;
pub use queue::*;
pub use records::*;
pub use retention::*;
pub use run_items::*;
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
        "cannot open the database {path}: {source}\n  hint: check the path and its permissions, or choose another database \
         (--db PATH on the command line; ATTRACTOR_DB or the Settings screen for the app)"
    )]
    Open { path: PathBuf, source: sqlx::Error },
    #[error(
        "the file {path} is not an Attractor database (not a SQLite file)\n  hint: choose another database \
         (--db PATH on the command line; ATTRACTOR_DB or the Settings screen for the app), or move this file away"
    )]
    NotSqlite { path: PathBuf },
    #[error(
        "cannot bring the database {path} up to date: {source}\n  hint: the file may belong to a newer Attractor; choose another database (--db PATH, or ATTRACTOR_DB for the app)"
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

/// Clocks closer than this are taken as agreeing: a machine whose clock is
/// kept (NTP), or the server's own, keeps it, and its timestamps keep
/// their order exactly; only a clock really off is corrected.
const CLOCK_TOLERANCE_MS: i64 = 250;

/// The PostgreSQL server's clock minus this machine's: of three round
/// trips, the shortest's (the least disturbed by load), read at its middle;
/// zero within [`CLOCK_TOLERANCE_MS`].
async fn clock_offset(pool: &AnyPool) -> Result<chrono::TimeDelta> {
    let sql = format!("SELECT {}", Backend::Postgres.now_secs());
    let mut best: Option<(chrono::TimeDelta, chrono::TimeDelta)> = None;
    for _ in 0..3 {
        let before = chrono::Utc::now();
        let server: f64 = sqlx::query_scalar(&sql).fetch_one(pool).await?;
        let after = chrono::Utc::now();
        let Some(at) = chrono::DateTime::from_timestamp_micros((server * 1e6).round() as i64) else { continue };
        let trip = after - before;
        let offset = at - (before + trip / 2);
        if best.is_none_or(|(t, _)| trip < t) {
            best = Some((trip, offset));
        }
    }
    let offset = best.map_or(chrono::TimeDelta::zero(), |(_, o)| o);
    Ok(if offset.num_milliseconds().abs() <= CLOCK_TOLERANCE_MS { chrono::TimeDelta::zero() } else { offset })
}

/// Whether the file at `url` is a SQLite database, an empty file, or none
/// yet (SQLite creates it) — asked of SQLite itself, through one connection
/// that says at once what a pool would only report as a timeout after 30 s.
///
/// The file is never opened here directly: closing a descriptor drops every
/// POSIX lock this process holds on the file, including those of SQLite's
/// own connections to it (a second `Store` on the same file: the app's
/// service beside a run's). Another process that then finds the database
/// unlocked checkpoints and deletes the write-ahead log under them, and
/// this process goes on reading the old data (SQLite's "How To Corrupt An
/// SQLite Database File", §2.2). SQLite's unix layer keeps such descriptors
/// open until no lock needs them.
async fn is_sqlite_or_empty(url: &str) -> bool {
    use sqlx::Connection;
    // SQLITE_NOTADB: "file is not a database".
    let not_a_database = |e: &sqlx::Error| matches!(e, sqlx::Error::Database(d) if d.code().as_deref() == Some("26"));
    let mut conn = match sqlx::AnyConnection::connect(url).await {
        Ok(conn) => conn,
        Err(e) => return !not_a_database(&e),
    };
    let read = sqlx::query_scalar::<_, i64>("PRAGMA schema_version").fetch_one(&mut conn).await;
    let _ = conn.close().await;
    !read.as_ref().is_err_and(not_a_database)
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
        // A file that is something else would fail every connection's set-up.
        if !is_sqlite_or_empty(&url).await {
            return Err(StoreError::NotSqlite { path: path.to_path_buf() });
        }
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
        // Heartbeats and timestamps go by the server's clock (see crate::time).
        crate::time::set_database_offset(clock_offset(&pool).await?);
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

    /// A write transaction that takes only the rows it touches on
    /// PostgreSQL (no database-wide lock: what many workers write at once,
    /// each to its own rows, as a run's finish); on SQLite the same as
    /// [`Store::begin_write`] (one writer anyway).
    pub(crate) async fn begin_row_write(&self) -> Result<sqlx::Transaction<'static, Any>> {
        match self.backend {
            Backend::Sqlite => self.begin_write().await,
            Backend::Postgres => Ok(self.writer.begin().await?),
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
