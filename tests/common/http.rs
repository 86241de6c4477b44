//! `attractor serve` for the HTTP tests (tests/http_*.rs): a temporary
//! folder with a database filled by the real CLI — a SQLite file in the
//! folder or, in `scripts/test.sh`'s PostgreSQL pass (`ATTRACTOR_TEST_PG`),
//! a fresh database on its cluster — and a real server on loopback over it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use attractor::service::{Service, ServiceConfig};
use reqwest::StatusCode;
use serde_json::Value;

pub fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/app").join(name).display().to_string()
}

/// The tests' world (tests/common/world.rs) filled by the real CLI, and
/// served over HTTP.
pub use super::world::World;

impl World {
    pub fn db(&self) -> PathBuf {
        self.db.clone()
    }

    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(self.db())
            .args(args)
            .env("ATTRACTOR_RUNS_DIR", self.dir.path().join("runs"))
            .env("KNOBS_DELAY", "0")
            .env_remove("ATTRACTOR_LLM_MODEL")
            .output()
            .unwrap();
        // 4: it ran, and some runs failed — as some fixtures' tasks do by design.
        assert!(
            matches!(out.status.code(), Some(0 | 4)),
            "attractor {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// 8 epochs of `evolve` on the knobs suite (updates and rollbacks) and one
    /// run of the inbox suite (one pending intervention).
    pub fn populated() -> World {
        let w = World::new();
        w.cli(&["run", &fixture("knobs.suite.yaml"), "--epochs", "8", "--optimizer", "evolve", "--seed", "1"]);
        w.cli(&["run", &fixture("inbox.suite.yaml"), "--seed", "1"]);
        w
    }

    /// The server as it runs for clients elsewhere (gzip on, so the tests
    /// see compression where it applies).
    pub async fn serve(&self, token: Option<&str>, env: &[(&str, &str)]) -> Server {
        self.serve_with(token, env, attractor::http::Gzip::On).await
    }

    pub async fn serve_with(&self, token: Option<&str>, env: &[(&str, &str)], gzip: attractor::http::Gzip) -> Server {
        let vars: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let config = ServiceConfig {
            db_path: self.db(),
            settings_path: self.dir.path().join("settings.json"),
            runs_root: Some(self.dir.path().join("runs")),
            env: Arc::new(move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())),
        };
        let service = Service::open(config).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let ui = self.dir.path().join("ui");
        std::fs::create_dir_all(&ui).unwrap();
        std::fs::write(ui.join("index.html"), "<!doctype html><title>Attractor test UI</title>").unwrap();
        let app = attractor::http::router(service.clone(), token.map(String::from), Some(ui), gzip);
        let stop = service.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(attractor::http::serve(listener, app, async move {
            let _ = rx.await;
            stop.shutdown().await;
        }));
        Server { base, service, client: reqwest::Client::new(), token: token.map(String::from), _stop: tx }
    }
}

pub struct Server {
    pub base: String,
    pub service: Arc<Service>,
    pub client: reqwest::Client,
    pub token: Option<String>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Server {
    pub fn req(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.client.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        let resp = self.req(reqwest::Method::GET, path).send().await.unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    pub async fn ok(&self, path: &str) -> Value {
        let (status, body) = self.get(path).await;
        assert_eq!(status, StatusCode::OK, "GET {path}: {body}");
        body
    }

    pub async fn send(&self, method: reqwest::Method, path: &str, body: Value) -> (StatusCode, Value) {
        let resp = self.req(method, path).json(&body).send().await.unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(reqwest::Method::POST, path, body).await
    }
}
