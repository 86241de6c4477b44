//! The `attractor` binary on a temporary database, runs folder and settings
//! file, for the tests that drive it as a person would.

use std::path::PathBuf;
use std::process::{Command, Output};

pub struct Cli {
    pub dir: tempfile::TempDir,
    db: PathBuf,
}

impl Cli {
    /// On a SQLite file in a temporary folder or, in `scripts/test.sh`'s
    /// PostgreSQL pass, on a fresh PostgreSQL database.
    pub fn new() -> Cli {
        let dir = tempfile::tempdir().unwrap();
        let db = super::pg::test_database().map_or_else(|| dir.path().join("a.db"), PathBuf::from);
        Cli { dir, db }
    }

    /// On a SQLite file, whatever the pass (tests that read the file itself).
    pub fn sqlite() -> Cli {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("a.db");
        Cli { dir, db }
    }

    pub fn db(&self) -> PathBuf {
        self.db.clone()
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_attractor"));
        c.arg("--db")
            .arg(self.db())
            .args(args)
            .env_remove("ATTRACTOR_DB")
            .env("ATTRACTOR_RUNS_DIR", self.dir.path().join("runs"))
            .env("ATTRACTOR_SETTINGS", self.dir.path().join("no-settings.json"));
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("spawn attractor")
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "attractor {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}
