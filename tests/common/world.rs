//! The app's service on a real database for a test: a temporary folder
//! with a SQLite file in it or, in `scripts/test.sh`'s PostgreSQL pass
//! (`ATTRACTOR_TEST_PG`), a fresh database on its cluster; settings and
//! run folders in the temporary folder, no model in the environment.

use std::path::PathBuf;
use std::sync::Arc;

use attractor::service::{Service, ServiceConfig};

pub struct World {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
}

impl World {
    pub fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let db = super::pg::test_database().map_or_else(|| dir.path().join("attractor.db"), PathBuf::from);
        World { dir, db }
    }

    pub async fn service(&self) -> Arc<Service> {
        Service::open(ServiceConfig {
            db_path: self.db.clone(),
            settings_path: self.dir.path().join("settings.json"),
            runs_root: Some(self.dir.path().join("runs")),
            env: Arc::new(|_| None),
        })
        .await
        .unwrap()
    }
}
