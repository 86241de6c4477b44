//! PostgreSQL for the tests that run the store on it: a throwaway cluster
//! started by `scripts/pg-cluster.sh` in a temporary folder (initdb and
//! pg_ctl, as the `postgres` user when the tests run as root), stopped when
//! dropped; and fresh databases on it, or on the cluster `scripts/test.sh`
//! started for its PostgreSQL pass (`ATTRACTOR_TEST_PG`). Debian's
//! `postgresql` package provides the programs (`scripts/setup.sh` installs
//! it); no server is set up by hand.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The base URL of the cluster `scripts/test.sh` started for the tests'
/// PostgreSQL pass, when it did.
pub const TEST_PG_ENV: &str = "ATTRACTOR_TEST_PG";

pub struct PgCluster {
    dir: tempfile::TempDir,
    /// `postgres://postgres@127.0.0.1:PORT`, without a database.
    pub base: String,
}

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-cluster.sh")
}

impl PgCluster {
    pub fn start() -> PgCluster {
        let dir = tempfile::Builder::new().prefix("attractor-pg-").tempdir().expect("temp dir");
        let out = Command::new(script()).arg("start").arg(dir.path()).output().expect("run scripts/pg-cluster.sh");
        assert!(out.status.success(), "pg-cluster.sh start: {}", String::from_utf8_lossy(&out.stderr));
        let base = String::from_utf8(out.stdout).unwrap().trim().to_string();
        PgCluster { dir, base }
    }

    /// A fresh database of this cluster, as the URL `--db` takes.
    pub fn database(&self, name: &str) -> String {
        create_database(&self.base, name)
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("stop").arg(self.dir.path()).output();
    }
}

/// Creates database `name` on the cluster at `base`; its URL.
pub fn create_database(base: &str, name: &str) -> String {
    let out = Command::new("psql")
        .arg(format!("{base}/postgres"))
        .args(["-v", "ON_ERROR_STOP=1", "-q", "-c", &format!("CREATE DATABASE \"{name}\"")])
        .output()
        .expect("run psql");
    assert!(out.status.success(), "CREATE DATABASE {name}: {}", String::from_utf8_lossy(&out.stderr));
    format!("{base}/{name}")
}

/// A fresh database on the test pass's cluster, when there is one: each
/// test world gets its own.
pub fn test_database() -> Option<String> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = std::env::var(TEST_PG_ENV).ok().filter(|b| !b.is_empty())?;
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    Some(create_database(&base, &format!("t{}_{n}", std::process::id())))
}
