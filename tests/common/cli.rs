//! The `attractor` binary on a temporary database, runs folder and settings
//! file, for the tests that drive it as a person would.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Map, Value};

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

    /// On the database at `db` (a file or a PostgreSQL URL).
    pub fn at(db: impl Into<PathBuf>) -> Cli {
        Cli { dir: tempfile::tempdir().unwrap(), db: db.into() }
    }

    /// What a run of `examples/descent.suite.yaml` leaves behind, without what legitimately differs between an
    /// interrupted and an uninterrupted run: clock times, run ids and folders,
    /// and the runs a kill cut short (only the runs an epoch counted are kept).
    pub fn descent_history(&self) -> Value {
        let export: Value = serde_json::from_str(&self.ok(&["export", "descent-tuning"])).unwrap();
        let epochs: Vec<Value> = export["epochs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let mut e = e.as_object().unwrap().clone();
                e.remove("started_at");
                e.remove("completed_at");
                let mut runs: Vec<Value> = e["runs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|r| r["counted"] == true)
                    .map(|r| {
                        let keep = ["task", "status", "loss", "breakdown", "exit_code", "error"];
                        Value::Object(keep.iter().map(|k| (k.to_string(), r[*k].clone())).collect::<Map<_, _>>())
                    })
                    .collect();
                runs.sort_by_key(|r| r["task"].as_str().unwrap_or_default().to_string());
                e.insert("runs".into(), Value::Array(runs));
                Value::Object(e)
            })
            .collect();
        let versions: Value =
            serde_json::from_str(&self.ok(&["--json", "inspect", "descent-tuning", "--artifact", "descent_settings"]))
                .unwrap();
        let contents: Vec<Value> = versions["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| serde_json::json!([v["version"], v["content"]]))
            .collect();
        let tree: Value = serde_json::from_str(&self.ok(&["--json", "inspect", "descent-tuning", "--tree"])).unwrap();
        let nodes: Vec<Value> = tree["nodes"]
            .as_array()
            .map(|nodes| {
                nodes
                    .iter()
                    .map(|n| {
                        let mut n = n.as_object().unwrap().clone();
                        n.remove("created_at");
                        Value::Object(n)
                    })
                    .collect()
            })
            .unwrap_or_default();
        serde_json::json!({ "epochs": epochs, "versions": contents, "nodes": nodes })
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}
