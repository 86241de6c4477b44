//! The HTTP API of `attractor serve` against a real server on loopback, over
//! a real SQLite file filled by really running suites with the `attractor`
//! binary: the seed 004 §11 endpoints, diffs, run detail, the inbox, launch
//! and cancel with live events over SSE, settings, tokens and bind refusal.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::service::{Service, ServiceConfig};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/app").join(name).display().to_string()
}

/// A temporary folder with a database filled by the real CLI: a SQLite
/// file in the folder or, in `scripts/test.sh`'s PostgreSQL pass
/// (`ATTRACTOR_TEST_PG`), a fresh database on its cluster.
struct World {
    dir: tempfile::TempDir,
    db: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let db = common::pg::test_database().map_or_else(|| dir.path().join("attractor.db"), PathBuf::from);
        World { dir, db }
    }

    fn db(&self) -> PathBuf {
        self.db.clone()
    }

    fn cli(&self, args: &[&str]) -> String {
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
    fn populated() -> World {
        let w = World::new();
        w.cli(&["run", &fixture("knobs.suite.yaml"), "--epochs", "8", "--optimizer", "evolve", "--seed", "1"]);
        w.cli(&["run", &fixture("inbox.suite.yaml"), "--seed", "1"]);
        w
    }

    /// The server as it runs for clients elsewhere (gzip on, so the tests
    /// see compression where it applies).
    async fn serve(&self, token: Option<&str>, env: &[(&str, &str)]) -> Server {
        self.serve_with(token, env, attractor::http::Gzip::On).await
    }

    async fn serve_with(&self, token: Option<&str>, env: &[(&str, &str)], gzip: attractor::http::Gzip) -> Server {
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

struct Server {
    base: String,
    service: Arc<Service>,
    client: reqwest::Client,
    token: Option<String>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Server {
    fn req(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.client.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let resp = self.req(reqwest::Method::GET, path).send().await.unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    async fn ok(&self, path: &str) -> Value {
        let (status, body) = self.get(path).await;
        assert_eq!(status, StatusCode::OK, "GET {path}: {body}");
        body
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Value) -> (StatusCode, Value) {
        let resp = self.req(method, path).json(&body).send().await.unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.send(reqwest::Method::POST, path, body).await
    }
}

#[tokio::test]
async fn suites_epochs_and_graph_show_what_the_cli_ran() {
    let w = World::populated();
    let s = w.serve(None, &[]).await;

    let suites = s.ok("/api/suites").await;
    let knobs = suites.as_array().unwrap().iter().find(|x| x["name"] == "knobs").expect("knobs listed").clone();
    assert_eq!(knobs["epochs"], 8);
    assert_eq!(knobs["status"], "idle");
    assert_eq!((knobs["tasks"].as_i64(), knobs["holdout_tasks"].as_i64()), (Some(4), Some(1)));
    let id = knobs["id"].as_i64().unwrap();

    // By id and by name alike.
    let epochs = s.ok(&format!("/api/suites/{id}/epochs")).await;
    assert_eq!(epochs, s.ok("/api/suites/knobs/epochs").await);
    // `?runs=false` leaves the run lists out and keeps everything else.
    let lean = s.ok("/api/suites/knobs/epochs?runs=false").await;
    assert!(lean["epochs"].as_array().unwrap().iter().all(|e| e["runs"].as_array().unwrap().is_empty()));
    assert_eq!(lean["epochs"][3]["tasks"], epochs["epochs"][3]["tasks"]);
    assert_eq!(s.get("/api/suites/knobs/epochs?runs=maybe").await.0, StatusCode::BAD_REQUEST);
    // A page of epochs, counted from the newest, oldest first on the page:
    // a long history is never read whole.
    assert_eq!(epochs["page"], json!({"offset": 0, "limit": 20, "total": 8}));
    let page = s.ok("/api/suites/knobs/epochs?offset=2&limit=3").await;
    let nums: Vec<i64> = page["epochs"].as_array().unwrap().iter().map(|e| e["epoch_num"].as_i64().unwrap()).collect();
    assert_eq!(nums, [4, 5, 6]);
    assert_eq!(page["page"], json!({"offset": 2, "limit": 3, "total": 8}));
    assert_eq!(page["epochs"][0], epochs["epochs"][3], "a page holds the same epochs, runs and all");
    assert_eq!(page["suite"]["epochs"], 8, "the suite's counts are the whole suite's");
    let past = s.ok("/api/suites/knobs/epochs?offset=8").await;
    assert_eq!(past["epochs"].as_array().unwrap().len(), 0);
    let (status, body) = s.get("/api/suites/knobs/epochs?limit=0").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("limit: 0 is outside 1..=500"), "{body}");
    // The Charts screen's data, shaped on the server: one column per
    // finished epoch, by id and by name alike; an unknown suite is a 404.
    let charts = s.ok(&format!("/api/suites/{id}/charts")).await;
    assert_eq!(charts, s.ok("/api/suites/knobs/charts").await);
    let finished: Vec<i64> = epochs["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["completed_at"].is_null())
        .map(|e| e["epoch_num"].as_i64().unwrap())
        .collect();
    assert!(!finished.is_empty());
    assert_eq!(charts["epochs"], json!(finished));
    assert_eq!(charts["loss"].as_array().unwrap().len(), finished.len());
    assert_eq!(charts["spread"].as_array().unwrap().len(), finished.len());
    // Drawn to 6 significant digits (a chart shows 4).
    let (drawn, exact) =
        (charts["loss"][0]["loss"].as_f64().unwrap(), epochs["epochs"][0]["mean_loss"].as_f64().unwrap());
    assert!((drawn - exact).abs() <= 1e-5 * exact.abs(), "{drawn} drawn for {exact}");
    assert_eq!(s.get("/api/suites/nope/charts").await.0, StatusCode::NOT_FOUND);
    // JSON goes out gzipped to a client that accepts it.
    let zipped =
        s.req(reqwest::Method::GET, "/api/suites/knobs/epochs").header("accept-encoding", "gzip").send().await.unwrap();
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    let plain_len = serde_json::to_vec(&epochs).unwrap().len();
    let zipped_len = zipped.bytes().await.unwrap().len();
    assert!(zipped_len * 4 < plain_len, "{zipped_len} bytes gzipped vs {plain_len} plain");
    let list = epochs["epochs"].as_array().unwrap();
    assert_eq!(list.len(), 8);
    assert!(epochs["artifacts"].as_array().unwrap().contains(&json!("knobs")));
    let mut updates = 0;
    let mut rollbacks = 0;
    for e in list {
        let tasks = e["tasks"].as_array().unwrap();
        assert_eq!(tasks.len(), 4, "{e}");
        let held: Vec<&Value> = tasks.iter().filter(|t| t["holdout"] == true).collect();
        assert_eq!(held.len(), 1);
        assert_eq!(held[0]["task"], "delta");
        // The stored mean is over the training tasks only.
        let training: Vec<f64> =
            tasks.iter().filter(|t| t["holdout"] == false).map(|t| t["loss"].as_f64().unwrap()).collect();
        let mean = training.iter().sum::<f64>() / training.len() as f64;
        assert!((mean - e["mean_loss"].as_f64().unwrap()).abs() < 1e-9, "{e}");
        assert!((held[0]["loss"].as_f64().unwrap() - e["holdout_mean_loss"].as_f64().unwrap()).abs() < 1e-12);
        assert_eq!(e["runs"].as_array().unwrap().len(), 4);
        for ev in e["events"].as_array().unwrap() {
            match ev["type"].as_str().unwrap() {
                "update" => updates += 1,
                "rollback" => rollbacks += 1,
                other => panic!("unexpected event {other}"),
            }
            assert_eq!(ev["artifact"], "knobs");
        }
    }
    assert!(updates >= 3 && rollbacks >= 1, "{updates} updates, {rollbacks} rollbacks");

    let graph = s.ok(&format!("/api/suites/{id}/graph")).await;
    assert_eq!(graph["nodes"].as_array().unwrap().len(), 8);
    assert_eq!(graph["edges"].as_array().unwrap().len(), 7);
    assert!(graph["edges"][0]["label"].as_str().unwrap().starts_with("update knobs v0→v1"), "{graph}");

    let (status, body) = s.get("/api/suites/no-such-suite/epochs").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["error"].as_str().unwrap().contains("no suite `no-such-suite`"), "{body}");
    // A request that names another host is refused (DNS rebinding), even on loopback.
    let rebound = s.req(reqwest::Method::GET, "/api/suites").header("host", "evil.example:7300").send().await.unwrap();
    assert_eq!(rebound.status(), StatusCode::FORBIDDEN);
    let localhost = s.req(reqwest::Method::GET, "/api/suites").header("host", "localhost:7300").send().await.unwrap();
    assert_eq!(localhost.status(), StatusCode::OK);
    // A body that is not declared JSON is refused (a cross-site form cannot declare it).
    let form = s
        .req(reqwest::Method::POST, "/api/interventions/1/answer")
        .header("content-type", "text/plain")
        .body(r#"{"answer": "approve"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), StatusCode::BAD_REQUEST);
    let (status, body) = s.get("/api/nowhere").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"], "no endpoint GET /api/nowhere");
    // The server keeps the closed epochs it charted: an epoch closed since
    // (here by the CLI, another process) is read and added, and the answer
    // is what a server reading everything afresh gives.
    w.cli(&["run", &fixture("knobs.suite.yaml"), "--epochs", "1", "--optimizer", "evolve", "--seed", "1"]);
    let grown = s.ok("/api/suites/knobs/charts").await;
    assert_eq!(grown["epochs"].as_array().unwrap().len(), finished.len() + 1);
    assert_eq!(grown["loss"].as_array().unwrap()[..finished.len()], charts["loss"].as_array().unwrap()[..]);
    let fresh = w.serve(None, &[]).await;
    assert_eq!(grown, fresh.ok("/api/suites/knobs/charts").await);
}

/// Each operation declared in `service::operations` is served at its verb
/// and path: nothing to add by hand for a new one. Asked with arguments it
/// cannot use, every one answers from the operation (a refusal that names
/// the argument, or "not found"), never the router's "no endpoint".
#[tokio::test]
async fn every_declared_operation_is_served_at_its_verb_and_path() {
    use attractor::service::operations::{OPERATIONS, Source, Verb};
    let w = World::populated();
    let s = w.serve(None, &[]).await;
    let mut reached = 0;
    for op in OPERATIONS {
        // These two act at once without arguments (the keychain, the model):
        // the settings tests call them for real.
        if ["delete_api_key", "test_llm"].contains(&op.name) {
            continue;
        }
        let path = op
            .params
            .iter()
            .filter(|p| p.source == Source::Path)
            .fold(op.path.to_string(), |path, p| path.replace(&format!("{{{}}}", p.name), "999999"));
        let method = match op.verb {
            Verb::Get => reqwest::Method::GET,
            Verb::Post => reqwest::Method::POST,
            Verb::Put => reqwest::Method::PUT,
            Verb::Delete => reqwest::Method::DELETE,
        };
        // A body not declared JSON: refused before anything happens.
        let answer =
            s.req(method, &format!("/api{path}")).header("content-type", "text/plain").body("x").send().await.unwrap();
        let status = answer.status();
        let body: Value = answer.json().await.unwrap_or(Value::Null);
        let error = body["error"].as_str().unwrap_or_default();
        assert!(
            !error.starts_with("no endpoint") && status != StatusCode::METHOD_NOT_ALLOWED,
            "{}: {status} {body}",
            op.name
        );
        if op.params.iter().any(|p| p.source == Source::Body) {
            assert_eq!(status, StatusCode::BAD_REQUEST, "{}: {body}", op.name);
            assert!(error.starts_with("the request body must be JSON"), "{}: {body}", op.name);
        }
        reached += 1;
    }
    assert!(reached >= 28, "{reached}");
}

#[tokio::test]
async fn a_server_for_this_machine_only_sends_answers_uncompressed() {
    // `attractor serve` on loopback: every client is local, so gzip would
    // only cost CPU on both sides.
    assert_eq!(attractor::http::Gzip::for_bind("127.0.0.1".parse().unwrap()), attractor::http::Gzip::Off);
    assert_eq!(attractor::http::Gzip::for_bind("::1".parse().unwrap()), attractor::http::Gzip::Off);
    assert_eq!(attractor::http::Gzip::for_bind("0.0.0.0".parse().unwrap()), attractor::http::Gzip::On);
    let w = World::populated();
    let s = w.serve_with(None, &[], attractor::http::Gzip::Off).await;
    let resp =
        s.req(reqwest::Method::GET, "/api/suites/knobs/epochs").header("accept-encoding", "gzip").send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers().get("content-encoding").is_none(), "{:?}", resp.headers());
    let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(body["epochs"].as_array().unwrap().len(), 8);
}

#[tokio::test]
async fn the_report_downloads_as_a_zip_of_the_charts_and_the_page() {
    let w = World::populated();
    let s = w.serve(None, &[]).await;

    // As a browser asks: a zip is compressed already, so it is sent as it is.
    let resp = s
        .req(reqwest::Method::GET, "/api/suites/knobs/report.zip")
        .header("accept-encoding", "gzip, deflate, br")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    assert_eq!(header("content-type"), "application/zip");
    assert_eq!(header("content-encoding"), "", "not compressed a second time");
    assert_eq!(header("content-disposition"), "attachment; filename=\"knobs-report.zip\"");
    let bytes = resp.bytes().await.unwrap();

    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
    let mut names: Vec<String> = zip.file_names().map(|n| n.unwrap().into_owned()).collect();
    names.sort();
    let mut expected: Vec<String> = attractor::report::FILES.iter().map(|f| format!("knobs-report/{f}")).collect();
    expected.sort();
    assert_eq!(names, expected);
    let mut page = String::new();
    std::io::Read::read_to_string(&mut zip.by_name("knobs-report/index.html").unwrap(), &mut page).unwrap();
    assert!(page.contains("Attractor report · <span data-field=\"suite\">knobs</span>"), "{page}");
    assert_eq!(page.matches("<tr data-epoch=").count(), 8, "one row per epoch");
    let mut svg = String::new();
    std::io::Read::read_to_string(&mut zip.by_name("knobs-report/loss-curve.svg").unwrap(), &mut svg).unwrap();
    assert_eq!(svg.matches("<circle").count(), 8, "a dot per epoch");
    let mut png = Vec::new();
    std::io::Read::read_to_end(&mut zip.by_name("knobs-report/task-loss.png").unwrap(), &mut png).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");

    // By id too; an unknown suite is a JSON 404 naming the known ones.
    let id = s.ok("/api/suites/knobs/epochs?runs=false").await["suite"]["id"].as_i64().unwrap();
    let by_id = s.req(reqwest::Method::GET, &format!("/api/suites/{id}/report.zip")).send().await.unwrap();
    assert_eq!(by_id.status(), StatusCode::OK);
    let (status, body) = s.get("/api/suites/no-such-suite/report.zip").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["error"].as_str().unwrap().contains("known suites: inbox, knobs"), "{body}");
}

#[tokio::test]
async fn artifact_versions_carry_their_diffs_and_a_rollback_flips_the_pointer() {
    let w = World::populated();
    let s = w.serve(None, &[]).await;

    let h = s.ok("/api/artifacts/knobs/versions").await;
    let versions = h["versions"].as_array().unwrap();
    assert!(versions.len() >= 4, "{h}");
    assert_eq!(versions[0]["version"], 0);
    assert!(versions[0]["diff_from_parent"].is_null(), "v0 is the default: nothing to diff against");
    assert_eq!(versions.iter().filter(|v| v["is_active"] == true).count(), 1);
    let v1 = &versions[1];
    assert_eq!((v1["parent_version"].as_i64(), v1["epoch_num"].as_i64()), (Some(0), Some(1)));
    assert_eq!(v1["suite"], "knobs");
    let d = &v1["diff_from_parent"];
    assert_eq!((d["from_version"].as_i64(), d["to_version"].as_i64()), (Some(0), Some(1)));
    assert!(d["added"].as_i64().unwrap() >= 1 && d["removed"].as_i64().unwrap() >= 1, "{d}");
    let inserted = d["lines"].as_array().unwrap().iter().find(|l| l["tag"] == "insert").unwrap();
    assert!(inserted["new_line"].is_number() && inserted["old_line"].is_null());
    assert!(v1["content"].as_str().unwrap().contains(inserted["text"].as_str().unwrap()));

    let diff = s.ok("/api/artifacts/knobs/diff?from=0&to=2").await;
    assert_eq!((diff["from_version"].as_i64(), diff["to_version"].as_i64()), (Some(0), Some(2)));
    let (status, body) = s.get("/api/artifacts/knobs/diff?from=0").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = s.get("/api/artifacts/knobs/diff?from=0&to=99").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["error"].as_str().unwrap().contains("has no version 99"), "{body}");
    let (status, body) = s.get("/api/artifacts/nonesuch/versions").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["error"].as_str().unwrap().contains("unknown artifact `nonesuch`"), "{body}");

    let list = s.ok("/api/artifacts").await;
    assert!(list.as_array().unwrap().iter().any(|a| a["name"] == "aso_config" && a["origin"] == "built-in"));

    let (status, item) = s.post("/api/artifacts/knobs/rollback", json!({"version": 1})).await;
    assert_eq!(status, StatusCode::OK, "{item}");
    assert_eq!(item["active_version"], 1);
    let h = s.ok("/api/artifacts/knobs/versions").await;
    let active: Vec<i64> = h["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["is_active"] == true)
        .map(|v| v["version"].as_i64().unwrap())
        .collect();
    assert_eq!(active, [1]);
    let (status, _) = s.post("/api/artifacts/knobs/rollback", json!({"version": 42})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = s.post("/api/artifacts/knobs/rollback", json!({"v": 1})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("unknown field `v`"), "{body}");
    // Our words and the request's place, never the HTTP library's own.
    assert!(error.starts_with("the request body is not what this endpoint takes: "), "{error}");
    assert!(!error.contains("Failed to deserialize"), "{error}");
    assert!(error.contains("hint: "), "{error}");
    let raw = s
        .req(reqwest::Method::POST, "/api/artifacts/knobs/rollback")
        .header("Content-Type", "application/json")
        .body("{\"version\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), StatusCode::BAD_REQUEST);
    let error = raw.json::<Value>().await.unwrap()["error"].as_str().unwrap().to_string();
    assert!(error.starts_with("the request body is not valid JSON: "), "{error}");
    assert!(!error.contains("Failed to parse"), "{error}");
}

#[tokio::test]
async fn the_graph_of_a_tree_search_is_its_experiment_tree() {
    let w = World::new();
    w.cli(&["run", &fixture("knobs.suite.yaml"), "--epochs", "6", "--optimizer", "tree", "--seed", "3"]);
    let s = w.serve(None, &[]).await;
    let graph = s.ok("/api/suites/knobs/graph").await;
    assert_eq!(graph["kind"], "tree", "{graph}");
    let nodes = graph["nodes"].as_array().unwrap();
    assert!(nodes.len() >= 2, "a root and at least one child: {graph}");
    let root = &nodes[0];
    assert!(root["tree"]["parent_id"].is_null());
    assert_eq!(root["epoch_num"], 1, "the root is the first evaluation");
    // One edge per child, from its parent, labelled with the artifact it changed.
    let edges = graph["edges"].as_array().unwrap();
    assert_eq!(edges.len(), nodes.len() - 1);
    for n in &nodes[1..] {
        let t = &n["tree"];
        let parent = format!("node-{}", t["parent_id"].as_i64().unwrap());
        let edge = edges.iter().find(|e| e["target"] == n["id"]).expect("an edge into every child");
        assert_eq!(edge["source"], parent);
        assert!(edge["label"].as_str().unwrap().starts_with("knobs v"), "{edge}");
        assert!(["committed", "discarded", "rejected", "pruned"].contains(&t["status"].as_str().unwrap()));
    }
    // Exactly one best node, the lowest mean among committed and pruned ones.
    let best: Vec<&Value> = nodes.iter().filter(|n| n["tree"]["best"] == true).collect();
    assert_eq!(best.len(), 1, "{graph}");
    let lowest = nodes
        .iter()
        .filter(|n| ["committed", "pruned"].contains(&n["tree"]["status"].as_str().unwrap()))
        .filter_map(|n| n["mean_loss"].as_f64())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(best[0]["mean_loss"].as_f64().unwrap(), lowest);
    // Per-task losses are the training tasks' (the held-out one stays out).
    let losses = root["tree"]["task_losses"].as_object().unwrap();
    assert_eq!(losses.len(), 3, "{root}");
    assert!(!losses.contains_key("delta"));

    // Every version the tree wrote names its node, the node's verdict, and
    // the epoch that measured it — none reads as made "by hand".
    let versions = s.ok("/api/artifacts/knobs/versions").await;
    let written: Vec<&Value> = versions["versions"].as_array().unwrap().iter().filter(|v| v["version"] != 0).collect();
    assert!(!written.is_empty(), "{versions}");
    for v in written {
        let node = nodes
            .iter()
            .find(|n| n["tree"]["node_id"] == v["tree_node"]["node_id"])
            .unwrap_or_else(|| panic!("version {} names no node of the graph: {v}", v["version"]));
        assert_eq!(v["tree_node"]["status"], node["tree"]["status"]);
        assert_eq!(v["epoch_num"], node["epoch_num"]);
        assert_eq!(v["suite"], "knobs");
    }
}

/// A launch from the API takes every option `attractor run` has: here the
/// tree search's width, which the app could not set before.
#[tokio::test]
async fn a_launch_sets_the_tree_search_as_the_command_line_would() {
    let children_per_round = |graph: &Value| {
        let mut per_round = std::collections::BTreeMap::<i64, usize>::new();
        for n in graph["nodes"].as_array().unwrap() {
            if let Some(r) = n["tree"]["round"].as_i64().filter(|r| *r > 0) {
                *per_round.entry(r).or_default() += 1;
            }
        }
        per_round
    };
    // Each on its own database: artifact names are shared by a database's suites.
    for (width, first_round) in [(None, 2), (Some(1), 1)] {
        let w = World::new();
        // Two JSON artifacts, so a round from one parent has two briefs to
        // give (knobs.py scores `knobs`; `spare` is there to be proposed).
        std::fs::copy(fixture("knobs.py"), w.dir.path().join("knobs.py")).unwrap();
        let knobs = std::fs::read_to_string(fixture("knobs.suite.yaml")).unwrap();
        let spare = "artifacts:\n  - name: spare\n    type: json\n    content: { level: 1.0 }\n    fields:\n      level: { min: 0.0, max: 2.0 }\n";
        let path = w.dir.path().join("two.suite.yaml");
        std::fs::write(&path, knobs.replacen("artifacts:\n", spare, 1)).unwrap();
        let s = w.serve(None, &[]).await;
        let mut req = json!({"suite_path": path.display().to_string(), "epochs": 5, "optimizer": "tree", "seed": 3,
                             "no_llm": true, "tree": {"branch_depth": 1, "stall": 1, "ideation_rounds": 0}});
        if let Some(width) = width {
            req["tree"]["width"] = json!(width);
        }
        let (status, preview) = s.post("/api/launches/preview", req.clone()).await;
        assert_eq!(status, StatusCode::OK, "{preview}");
        let children = format!("{} child(ren) a round", width.unwrap_or(3));
        assert!(preview["plan"].as_str().unwrap().contains(&children), "{preview}");
        let (status, launch) = s.post("/api/launches", req).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{launch}");
        assert_eq!(launch["request"]["tree"]["width"], width.unwrap_or(3), "the launch keeps what it was asked");
        let view = s.service.wait(launch["id"].as_i64().unwrap()).await.unwrap();
        assert_eq!(serde_json::to_value(view.status).unwrap(), "finished", "{view:?}");
        let per_round = children_per_round(&s.ok("/api/suites/knobs/graph").await);
        assert_eq!(per_round.get(&1), Some(&first_round), "width {width:?}: {per_round:?}");
        assert!(per_round.values().all(|&c| c <= first_round), "width {width:?}: {per_round:?}");
    }

    let w = World::new();
    let s = w.serve(None, &[]).await;
    // An option out of bounds or a missing agent configuration is refused
    // up front, naming the field.
    let (status, body) =
        s.post("/api/launches", json!({"suite_path": fixture("knobs.suite.yaml"), "tree": {"width": 0}})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("field `tree.width` (--width): 0 is outside 1..=64"), "{body}");
    let (status, body) = s
        .post("/api/launches", json!({"suite_path": fixture("knobs.suite.yaml"), "agent_config": "/no/such.json"}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("/no/such.json"), "{body}");
}

#[tokio::test]
async fn an_agent_run_shows_its_trajectory_iteration_by_iteration() {
    let w = World::new();
    let ws = w.dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("answer.txt"), "todo\n").unwrap();
    let suite = w.dir.path().join("agent.suite.yaml");
    std::fs::write(
        &suite,
        "name: answer\ntasks:\n  - name: write-it\n    kind: agent\n    task: Write the word done into answer.txt.\n    \
         workspace: ws\n    budget:\n      max_loops: 4\n    overseers:\n      - name: check\n        kind: test\n        \
         command: grep -qx done answer.txt\n",
    )
    .unwrap();
    let reply = |text: &str| {
        Scripted::json(&json!({"summary": "write the answer", "tools_used": [],
            "edits": [{"path": "answer.txt", "action": "write", "content": text}]}))
    };
    let model = ScriptedServer::start(vec![reply("nearly\n"), reply("done\n")]).await.unwrap();
    // The intent verifier stays off so the script is the executor's replies alone.
    let config = w.dir.path().join("agent.json");
    std::fs::write(&config, r#"{"verifier": {"enabled": false}}"#).unwrap();
    let (db, runs, base) = (w.db(), w.dir.path().join("runs"), model.base_url());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(db)
            .args(["run", suite.to_str().unwrap(), "--agent-config", config.to_str().unwrap()])
            .env("ATTRACTOR_RUNS_DIR", runs)
            .env("ATTRACTOR_LLM_BASE_URL", base)
            .env("ATTRACTOR_LLM_MODEL", "scripted")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let s = w.serve(None, &[]).await;
    let epochs = s.ok("/api/suites/answer/epochs").await;
    let id = epochs["epochs"][0]["runs"][0]["id"].as_i64().unwrap();
    let d = s.ok(&format!("/api/runs/{id}")).await;
    let ts = d["trajectories"].as_array().unwrap();
    assert_eq!(ts.len(), 1, "{d}");
    let t = &ts[0];
    assert_eq!(t["task_name"], "write-it");
    assert_eq!(t["status"], "converged", "{t}");
    let obs = t["observations"].as_array().unwrap();
    assert_eq!(obs.len(), 2, "a wrong answer, then the right one: {t}");
    assert_eq!(t["iterations"], 2);
    assert_eq!((obs[0]["sequence"].as_i64(), obs[1]["sequence"].as_i64()), (Some(0), Some(1)));
    assert!(obs[0]["level"].as_f64().unwrap() < obs[1]["level"].as_f64().unwrap());
    assert_eq!(obs[1]["loop_control"], "converged", "{}", obs[1]);
    for o in obs {
        assert!(o["loss"].is_number() && o["directive"].is_string() && o["strategy"].is_string(), "{o}");
        assert_eq!(o["commit_id"].as_str().unwrap().len(), 40, "every attempt is a commit: {o}");
    }
}

#[tokio::test]
async fn a_run_shows_its_output_telemetry_and_epoch() {
    let w = World::populated();
    let s = w.serve(None, &[]).await;
    let epochs = s.ok("/api/suites/knobs/epochs").await;
    let run = &epochs["epochs"][0]["runs"][0];
    let id = run["id"].as_i64().unwrap();
    let d = s.ok(&format!("/api/runs/{id}")).await;
    assert_eq!(d["suite"], "knobs");
    let task = d["run"]["task"].as_str().unwrap();
    assert!(d["stdout"]["text"].as_str().unwrap().starts_with(&format!("{task}: gain=")), "{d}");
    assert!(d["stderr"]["text"].as_str().unwrap().contains("target gain"), "{d}");
    assert_eq!(d["run"]["counted"], true);
    // The loss is the weighted sum of its components.
    let (p, w) = (&d["run"]["parts"], &d["run"]["weights"]);
    let sum: f64 = ["eval", "critique", "gate_rejections", "budget", "status"]
        .iter()
        .map(|k| p[k].as_f64().unwrap() * w[k].as_f64().unwrap())
        .sum();
    assert!((sum - d["run"]["loss"].as_f64().unwrap()).abs() < 1e-9, "{p} {w}");
    assert!(d["result"]["eval_score"].is_number());
    assert!(d["telemetry"].as_array().unwrap().is_empty(), "command tasks have no coordinator");
    assert!(d["trajectories"].as_array().unwrap().is_empty(), "nor trajectories");

    let ctx = s.ok(&format!("/api/runs/{id}/epoch")).await;
    assert_eq!(ctx["epoch"]["epoch_num"], 1);
    assert_eq!(ctx["suite"], "knobs");

    // The optimize task's run has the coordinator's step-by-step telemetry.
    let inbox_epochs = s.ok("/api/suites/inbox/epochs").await;
    let ring = inbox_epochs["epochs"][0]["runs"][0]["id"].as_i64().unwrap();
    let d = s.ok(&format!("/api/runs/{ring}")).await;
    let steps = d["telemetry"].as_array().unwrap();
    assert!(!steps.is_empty());
    assert!(steps.iter().all(|t| t["directive_source"].is_string() && t["evals_used"].is_number()));
    assert_eq!(d["run"]["status"], "failed");

    assert_eq!(s.get("/api/runs/99999").await.0, StatusCode::NOT_FOUND);
    let (status, body) = s.get("/api/runs/abc").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().starts_with("bad path"), "{body}");
}

#[tokio::test]
async fn the_inbox_answers_once_and_keeps_history() {
    let w = World::populated();
    let s = w.serve(None, &[]).await;
    let inbox = s.ok("/api/interventions").await;
    let pending = inbox["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1);
    let item = &pending[0];
    assert_eq!(item["task"], "ring");
    assert_eq!(item["context"]["proposed_action"], "double_budget");
    assert!(item["context"]["what"].as_str().unwrap().contains("without satisfying"));
    assert_eq!(s.ok("/api/overview").await["pending_interventions"], 1);
    let id = item["id"].as_i64().unwrap();

    let (status, body) = s.post(&format!("/api/interventions/{id}/answer"), json!({"answer": "hint"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "a hint needs its text");
    let (status, body) = s.post(&format!("/api/interventions/{id}/answer"), json!({"answer": "maybe"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    let (status, body) =
        s.post(&format!("/api/interventions/{id}/answer"), json!({"answer": "hint", "text": "widen the box"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!((body["status"].as_str(), body["answer_text"].as_str()), (Some("answered"), Some("widen the box")));
    let (status, body) = s.post(&format!("/api/interventions/{id}/answer"), json!({"answer": "approve"})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(body["error"].as_str().unwrap().contains("already answered"));
    assert_eq!(s.post("/api/interventions/777/answer", json!({"answer": "approve"})).await.0, StatusCode::NOT_FOUND);

    let inbox = s.ok("/api/interventions").await;
    assert!(inbox["pending"].as_array().unwrap().is_empty());
    assert_eq!(inbox["answered"][0]["id"], id);
    assert_eq!(s.ok("/api/overview").await["pending_interventions"], 0);
    // The CLI sees the same answer (one database, one truth).
    assert!(w.cli(&["interventions", "--all"]).contains("answered: hint — widen the box"));
}

/// Reads SSE `data:` lines from a streaming response until `done` says so.
async fn read_events(resp: &mut reqwest::Response, deadline: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let start = Instant::now();
    let mut buf = String::new();
    let mut events = Vec::new();
    while !done(&events) {
        let left = deadline.checked_sub(start.elapsed()).expect("timed out waiting for events");
        let chunk = tokio::time::timeout(left, resp.chunk()).await.expect("timed out").unwrap().expect("stream ended");
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            for line in frame.lines() {
                if let Some(data) = line.strip_prefix("data: ") {
                    events.push(serde_json::from_str(data).unwrap());
                }
            }
        }
    }
    events
}

/// A run started with `attractor run` in a terminal shows on the app's Live
/// screen: its request is in the queue the app lists, and its events, read
/// back from the store, stream to the app as they happen.
#[tokio::test]
async fn a_cli_run_on_the_same_database_streams_to_the_app_live() {
    let w = World::new();
    let s = w.serve(None, &[]).await;
    let mut stream = s.req(reqwest::Method::GET, "/api/events").send().await.unwrap();
    let db = w.db();
    let runs = w.dir.path().join("runs");
    let cli = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(db)
            .args(["run", &fixture("knobs.suite.yaml"), "--epochs", "2", "--optimizer", "evolve", "--seed", "4"])
            .env("ATTRACTOR_RUNS_DIR", runs)
            .env("KNOBS_DELAY", "0")
            .env_remove("ATTRACTOR_LLM_MODEL")
            .output()
            .unwrap()
    });
    let events = read_events(&mut stream, Duration::from_secs(120), |ev| {
        ev.iter().any(|e| e["type"] == "launch_ended" && e["suite"] == "knobs")
    })
    .await;
    let out = cli.await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "launch_started").count(), 1, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "run_finished").count(), 8, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "epoch_finished").count(), 2, "{kinds:?}");
    let started = events.iter().find(|e| e["type"] == "launch_started").unwrap();
    let id = started["launch_id"].as_i64().unwrap();
    // Once in the store: the app did not record the events it only relayed.
    let stored = w.cli(&["--json", "inspect", "knobs"]);
    assert!(stored.contains("\"epoch_num\": 2"), "{stored}");
    let launches = s.ok("/api/launches").await;
    let launch = launches.as_array().unwrap().iter().find(|l| l["id"] == id).expect("the CLI's launch is listed");
    assert_eq!(launch["status"], "finished", "{launch}");
    assert!(launch["holder"].as_str().unwrap().starts_with("attractor run (pid "), "{launch}");
    assert_eq!(launch["request"]["epochs"], 2);
    assert_eq!(launch["seed"], 4);
    let count = {
        let store = attractor::store::Store::open(&w.db()).await.unwrap();
        let suite = store.suite_by_name("knobs").await.unwrap().unwrap();
        let events = store.events_of_suite(suite.id).await.unwrap();
        store.close().await;
        events.iter().filter(|e| e.kind == "run_finished").count()
    };
    assert_eq!(count, 8, "each event is recorded once, by the process that published it");
}

/// Cancel on the app's Live screen stops a run another process works: the
/// flag goes into the store, the CLI's worker reads it at its next
/// heartbeat, stops its runs and exits as if interrupted.
#[tokio::test]
async fn the_app_cancels_a_run_the_command_line_is_working() {
    let w = World::new();
    let suite = w.dir.path().join("slow.suite.yaml");
    std::fs::write(&suite, "name: slow\ntasks:\n  - name: nap\n    command: sleep 60\n    timeout: 120\n").unwrap();
    let s = w.serve(None, &[]).await;
    let mut cli = Command::new(env!("CARGO_BIN_EXE_attractor"))
        .arg("--db")
        .arg(w.db())
        .args(["run", suite.to_str().unwrap(), "--epochs", "3"])
        .env("ATTRACTOR_RUNS_DIR", w.dir.path().join("runs"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the run is in flight, as the app sees it.
    let id = loop {
        let e = s.get("/api/suites/slow/epochs").await;
        if e.0 == StatusCode::OK && e.1["epochs"][0]["runs"].as_array().is_some_and(|r| !r.is_empty()) {
            let launches = s.ok("/api/launches").await;
            break launches[0]["id"].as_i64().unwrap();
        }
        assert!(cli.try_wait().unwrap().is_none(), "the CLI run ended early");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let (status, view) = s.post(&format!("/api/launches/{id}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{view}");
    let out = tokio::task::spawn_blocking(move || cli.wait_with_output().unwrap()).await.unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let view = s.ok(&format!("/api/launches/{id}")).await;
    assert_eq!(view["status"], "cancelled", "{view}");
    let e = s.ok("/api/suites/slow/epochs").await;
    assert_eq!(e["epochs"][0]["runs"][0]["status"], "cancelled");
    assert_eq!(s.ok("/api/suites").await[0]["status"], "unfinished");
}

#[tokio::test]
async fn a_launch_validates_first_then_streams_its_progress_and_adds_epochs() {
    let w = World::populated();
    let s = w.serve(None, &[]).await;

    // Invalid files come back as data: every issue with file, line and column.
    let (status, body) = s.post("/api/launches", json!({"suite_path": fixture("broken.suite.yaml")})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let issue = &body["validation"]["issues"][0];
    assert_eq!((issue["line"].as_i64(), issue["column"].as_i64()), (Some(4), Some(5)), "{body}");
    assert_eq!(issue["field"], "tasks[0].comand");
    assert!(issue["message"].as_str().unwrap().contains("unknown field `comand`"));
    let (status, v) = s.post("/api/validate", json!({"suite_path": fixture("knobs.suite.yaml")})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!((v["valid"].as_bool(), v["suite"].as_str(), v["tasks"].as_i64()), (Some(true), Some("knobs"), Some(4)));
    // What the runner would refuse before its first epoch is refused up front, located too.
    let later = w.dir.path().join("later.suite.yaml");
    std::fs::write(
        &later,
        "name: later\ntasks:\n  - name: fine\n    command: \"true\"\n  - name: agent\n    kind: agent\n    task: Write a haiku.\n    workspace: no-such-folder\n  - name: numeric\n    problem: g99\n",
    )
    .unwrap();
    let (status, v) = s.post("/api/validate", json!({"suite_path": later.display().to_string()})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["valid"], false);
    let issues = v["issues"].as_array().unwrap();
    assert_eq!(issues.len(), 2, "{v}");
    assert!(issues[0]["message"].as_str().unwrap().contains("no-such-folder"), "{v}");
    assert_eq!(issues[0]["field"], "tasks[1].workspace");
    assert_eq!((issues[0]["line"].as_i64(), issues[1]["line"].as_i64()), (Some(8), Some(10)), "{v}");
    assert_eq!(issues[1]["field"], "tasks[2].problem");
    let (status, _) = s.post("/api/launches", json!({"suite_path": later.display().to_string()})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, body) =
        s.post("/api/launches", json!({"suite_path": fixture("knobs.suite.yaml"), "learning_rate": 3})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("outside [0, 1]"));
    // Numbers from a request are bounded like the command line's.
    for (bad, says) in [
        (json!({"epochs": 4_000_000_000u64}), "field `epochs` (--epochs): 4000000000 is outside 1..=100000"),
        (json!({"holdout_tolerance": 1e300}), "holdout_tolerance"),
        (json!({"concurrency": 100_000}), "field `concurrency` (--concurrency): 100000 is outside 1..=256"),
    ] {
        let mut req = json!({"suite_path": fixture("knobs.suite.yaml")});
        req.as_object_mut().unwrap().extend(bad.as_object().unwrap().clone());
        let (status, body) = s.post("/api/launches", req).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body["error"].as_str().unwrap().contains(says), "{body}");
    }

    // Subscribe first, then launch: progress is pushed, not polled.
    let mut stream = s.req(reqwest::Method::GET, "/api/events").send().await.unwrap();
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let (status, launch) = s
        .post(
            "/api/launches",
            json!({"suite_path": fixture("knobs.suite.yaml"), "epochs": 2, "optimizer": "evolve", "learning_rate": 0.5,
                   "rollback": true, "concurrency": 4, "seed": 5, "no_llm": true}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{launch}");
    assert_eq!(launch["status"], "running");
    let id = launch["id"].as_i64().unwrap();
    let running = s.ok("/api/suites").await;
    let knobs = running.as_array().unwrap().iter().find(|x| x["name"] == "knobs").unwrap().clone();
    assert_eq!((knobs["status"].as_str(), knobs["launch_id"].as_i64()), (Some("running"), Some(id)));
    let (status, body) = s.post("/api/launches", json!({"suite_path": fixture("knobs.suite.yaml")})).await;
    assert_eq!(status, StatusCode::CONFLICT, "one launch per suite at a time: {body}");

    let events =
        read_events(&mut stream, Duration::from_secs(60), |ev| ev.iter().any(|e| e["type"] == "launch_ended")).await;
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds[0], "launch_started", "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "run_finished").count(), 8, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "epoch_finished").count(), 2);
    let epoch_nums: Vec<i64> =
        events.iter().filter(|e| e["type"] == "epoch_finished").map(|e| e["epoch_num"].as_i64().unwrap()).collect();
    assert_eq!(epoch_nums, [9, 10], "epochs continue the suite's history");
    let ended = events.last().unwrap();
    assert_eq!((ended["status"].as_str(), ended["launch_id"].as_i64()), (Some("finished"), Some(id)));
    assert!(ended["occurred_at"].is_string());

    let view = s.ok(&format!("/api/launches/{id}")).await;
    assert_eq!((view["status"].as_str(), view["epochs_done"].as_i64()), (Some("finished"), Some(2)));
    assert_eq!(s.ok("/api/suites/knobs/epochs").await["epochs"].as_array().unwrap().len(), 10);
    let suites = s.ok("/api/suites").await;
    let knobs = suites.as_array().unwrap().iter().find(|x| x["name"] == "knobs").unwrap().clone();
    assert_eq!((knobs["status"].as_str(), knobs["epochs"].as_i64()), (Some("idle"), Some(10)));
    assert_eq!(knobs["suite_path"].as_str(), Some(fixture("knobs.suite.yaml").as_str()));
    // The store persisted the launch's events too.
    assert!(w.cli(&["inspect", "knobs"]).contains("epoch 10"));
}

#[tokio::test]
async fn a_cancelled_launch_stops_its_runs_and_leaves_the_epoch_to_resume() {
    let w = World::new();
    let suite = w.dir.path().join("slow.suite.yaml");
    std::fs::write(&suite, "name: slow\ntasks:\n  - name: nap\n    command: sleep 30\n    timeout: 60\n").unwrap();
    let s = w.serve(None, &[]).await;
    assert!(s.ok("/api/suites").await.as_array().unwrap().is_empty());
    let (status, launch) = s.post("/api/launches", json!({"suite_path": suite.display().to_string()})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{launch}");
    let id = launch["id"].as_i64().unwrap();
    // Wait until the run is in flight, then cancel.
    let start = Instant::now();
    loop {
        let e = s.get("/api/suites/slow/epochs").await;
        if e.0 == StatusCode::OK && e.1["epochs"][0]["runs"].as_array().is_some_and(|r| !r.is_empty()) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the run never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, _) = s.post(&format!("/api/launches/{id}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let view = s.service.wait(id).await.unwrap();
    assert_eq!(serde_json::to_value(view.status).unwrap(), "cancelled");
    let (status, _) = s.post(&format!("/api/launches/{id}/cancel"), json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "a finished launch cannot be cancelled");
    let suites = s.ok("/api/suites").await;
    assert_eq!(suites[0]["status"], "unfinished");
    let e = s.ok("/api/suites/slow/epochs").await;
    assert_eq!(e["epochs"][0]["runs"][0]["status"], "cancelled");
    assert!(e["epochs"][0]["completed_at"].is_null());
    assert_eq!(s.post("/api/launches/55/cancel", json!({})).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn settings_are_saved_to_their_file_and_the_api_key_is_only_reported_present() {
    let w = World::new();
    let s = w.serve(None, &[("OPENAI_API_KEY", "sk-test-secret-123")]).await;
    let v = s.ok("/api/settings").await;
    assert_eq!((v["api_key_present"].as_bool(), v["api_key_source"].as_str()), (Some(true), Some("OPENAI_API_KEY")));
    assert_eq!(v["effective_base_url"], "http://127.0.0.1:11434/v1");
    assert!(v["effective_model"].is_null());
    assert_eq!(v["db_path"].as_str(), Some(w.db().display().to_string().as_str()));

    let (status, v) = s
        .send(
            reqwest::Method::PUT,
            "/api/settings",
            json!({"llm_base_url": "http://127.0.0.1:8080/v1/", "llm_model": "qwen2.5", "db_path": "/tmp/other.db"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        (v["effective_base_url"].as_str(), v["effective_model"].as_str()),
        (Some("http://127.0.0.1:8080/v1"), Some("qwen2.5"))
    );
    assert_eq!(v["db_path_next_start"], "/tmp/other.db");
    let file = std::fs::read_to_string(w.dir.path().join("settings.json")).unwrap();
    assert!(file.contains("qwen2.5") && !file.contains("sk-test"), "{file}");
    assert!(!v.to_string().contains("sk-test"), "the key is never sent back");

    let (status, body) = s.send(reqwest::Method::PUT, "/api/settings", json!({"llm_base_url": "ftp://x"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("http or https"), "{body}");
    let (status, _) = s.send(reqwest::Method::PUT, "/api/settings", json!({"api_key": "sk-nope"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "there is no API key setting to write");
    // Clearing a field hands it back to the environment.
    let (_, v) = s.send(reqwest::Method::PUT, "/api/settings", json!({"llm_model": ""})).await;
    assert!(v["llm_model"].is_null());

    // The model-call limits: saved to the file, shown back, checked with the field.
    let limits = json!({"timeout_secs": 300.0, "attempts": 2, "max_tokens": {"proposer": 900}});
    let (status, v) = s.send(reqwest::Method::PUT, "/api/settings", json!({"llm_limits": limits})).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["llm_limits"]["timeout_secs"], 300.0);
    assert_eq!(v["llm_limits"]["max_tokens"]["proposer"], 900);
    let file = std::fs::read_to_string(w.dir.path().join("settings.json")).unwrap();
    assert!(file.contains("\"llm_limits\"") && file.contains("\"proposer\": 900"), "{file}");
    for (bad, field) in [
        (json!({"timeout_secs": 1e20}), "timeout_secs"),
        (json!({"attempts": 0}), "attempts"),
        (json!({"max_tokens": {"executor": 0}}), "max_tokens.executor"),
    ] {
        let (status, body) = s.send(reqwest::Method::PUT, "/api/settings", json!({"llm_limits": bad})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body["error"].as_str().unwrap().contains(field), "{body}");
    }
    let v = s.ok("/api/settings").await;
    assert_eq!(v["llm_limits"]["attempts"], 2, "a refused update changes nothing");

    // "Test connection": without a model it says how to choose one.
    let (status, check) = s.post("/api/settings/test-llm", json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(check["ok"], false);
    assert!(check["error"].as_str().unwrap().contains("no model is configured"), "{check}");
    // Against a real (scripted) model server on loopback: one small call,
    // carrying the key from the environment and the model from the settings.
    let llm =
        ScriptedServer::start(vec![Scripted::reply("ok"), Scripted::status(401, "invalid api key")]).await.unwrap();
    let (status, _) = s
        .send(reqwest::Method::PUT, "/api/settings", json!({"llm_base_url": llm.base_url(), "llm_model": "tiny"}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, check) = s.post("/api/settings/test-llm", json!({})).await;
    assert_eq!((check["ok"].as_bool(), check["reply"].as_str()), (Some(true), Some("ok")), "{check}");
    assert!(check["latency_ms"].is_number());
    let seen = llm.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("authorization"), Some("Bearer sk-test-secret-123"));
    assert_eq!(seen[0].json()["model"], "tiny");
    let (_, check) = s.post("/api/settings/test-llm", json!({})).await;
    assert_eq!(check["ok"], false);
    assert!(check["error"].as_str().unwrap().contains("401"), "{check}");
    assert_eq!(llm.requests().len(), 2, "a connection test does not retry");
    assert!(!check.to_string().contains("sk-test"));

    // Prices and a cost budget: saved, checked with the model's name, and
    // the launch preview bounds what a launch may ask and cost.
    let prices = json!({"tiny": {"input_per_million": 1.0, "output_per_million": 2.0}});
    let (status, v) = s
        .send(reqwest::Method::PUT, "/api/settings", json!({"model_prices": prices, "llm_limits": {"max_cost": 5.0}}))
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["model_prices"]["tiny"]["output_per_million"], 2.0);
    let bad = json!({"tiny": {"input_per_million": -1.0, "output_per_million": 2.0}});
    let (status, body) = s.send(reqwest::Method::PUT, "/api/settings", json!({"model_prices": bad})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("prices.tiny.input_per_million"), "{body}");

    // A folder outside a suite's own is usable once the person allows it here.
    let shared = tempfile::tempdir().unwrap();
    std::fs::write(shared.path().join("notes.md"), "notes\n").unwrap();
    let outsider = w.dir.path().join("outsider.yaml");
    std::fs::write(
        &outsider,
        format!(
            "name: outsider\nartifacts:\n  - name: notes\n    type: text\n    file: {}/notes.md\ntasks:\n  - name: a\n    command: 'true'\n",
            shared.path().display()
        ),
    )
    .unwrap();
    let validate = json!({"suite_path": outsider.display().to_string()});
    let (_, v) = s.post("/api/validate", validate.clone()).await;
    assert_eq!(v["valid"], false, "{v}");
    assert!(v.to_string().contains("leads outside the suite's folder"), "{v}");
    let (status, body) =
        s.send(reqwest::Method::PUT, "/api/settings", json!({"allowed_outside": ["relative/folder"]})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("allowed_outside[0]"), "{body}");
    let dir = shared.path().display().to_string();
    let (status, v) = s.send(reqwest::Method::PUT, "/api/settings", json!({"allowed_outside": [dir]})).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["allowed_outside"][0], json!(dir));
    let (_, v) = s.post("/api/validate", validate).await;
    assert_eq!(v["valid"], true, "{v}");
    std::fs::create_dir_all(w.dir.path().join("ws")).unwrap();
    let suite = w.dir.path().join("agent.yaml");
    std::fs::write(
        &suite,
        "name: priced\ntasks:\n  - name: a\n    kind: agent\n    task: do it\n    workspace: ws\n    budget: { max_loops: 3 }\n    overseers:\n      - { name: t, kind: test, command: 'true' }\n",
    )
    .unwrap();
    let req = json!({"suite_path": suite.display().to_string(), "epochs": 2, "optimizer": "baseline"});
    let (status, preview) = s.post("/api/launches/preview", req).await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    assert_eq!(preview["runs"], 2);
    let line = preview["model"].as_str().unwrap_or_default();
    assert!(
        line.contains("executor 6") && line.contains("cost at most") && line.ends_with("(max_cost 5.00)"),
        "{line}"
    );
    assert_eq!(llm.requests().len(), 2, "a preview calls no model");
    llm.shutdown().await;
}

#[tokio::test]
async fn watched_folders_are_added_listed_and_removed_over_http() {
    let w = World::new();
    let drop = w.dir.path().join("drop");
    std::fs::create_dir_all(&drop).unwrap();
    let drop = std::fs::canonicalize(drop).unwrap();
    std::fs::write(drop.join("numbers.task.yaml"), "problem: g06\n").unwrap();
    std::fs::write(
        drop.join("broken.suite.yaml"),
        "name: b\ntasks:\n  - name: a\n    problem: g06\n    holdout: maybe\n",
    )
    .unwrap();
    let s = w.serve(None, &[]).await;
    let path = drop.display().to_string();

    // A service that does not watch says so instead of pretending.
    let (status, body) = s.post("/api/watch/folders", json!({ "path": path })).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body["error"].as_str().unwrap().contains("not watching"), "{body}");

    let config = attractor::watch::WatchConfig { debounce: Duration::from_millis(50), ..Default::default() };
    s.service.start_watching(config).await.unwrap();
    let (status, body) = s.post("/api/watch/folders", json!({ "path": w.dir.path().join("nowhere") })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].as_str().unwrap().contains("is not a folder"), "{body}");
    let (status, folder) = s.post("/api/watch/folders", json!({ "path": path })).await;
    assert_eq!(status, StatusCode::CREATED, "{folder}");
    assert_eq!((folder["path"].as_str(), folder["files"].as_i64()), (Some(path.as_str()), Some(2)));

    // The folder was scanned before the answer: both files are there.
    let watched = s.ok("/api/watch").await;
    assert_eq!(watched["watching"], json!(true));
    let files = watched["files"].as_array().unwrap();
    let by_name = |n: &str| files.iter().find(|f| f["path"].as_str().unwrap().ends_with(n)).unwrap().clone();
    let numbers = by_name("numbers.task.yaml");
    assert_eq!((numbers["status"].as_str(), numbers["suite"].as_str()), (Some("ready"), Some("numbers")));
    let broken = by_name("broken.suite.yaml");
    assert_eq!(broken["status"], json!("invalid"));
    assert_eq!(
        (broken["issues"][0]["line"].as_i64(), broken["issues"][0]["field"].as_str()),
        (Some(5), Some("tasks[0].holdout"))
    );
    let suites = s.ok("/api/suites").await;
    assert!(suites.as_array().unwrap().iter().any(|x| x["name"] == "numbers"), "{suites}");

    let (status, _) = s.send(reqwest::Method::DELETE, "/api/watch/folders/999", json!(null)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let id = folder["id"].as_i64().unwrap();
    let (status, left) = s.send(reqwest::Method::DELETE, &format!("/api/watch/folders/{id}"), json!(null)).await;
    assert_eq!(status, StatusCode::OK, "{left}");
    assert_eq!(left["folders"], json!([]));
}

#[tokio::test]
async fn the_trajectory_repository_and_the_memories_answer_over_http() {
    use attractor::engine::StrategyKind;
    use attractor::memory::Outcome;
    let w = World::new();
    let ids = {
        let store = attractor::store::Store::open(&w.db()).await.unwrap();
        let ids = common::crafted::scenario(&store).await;
        let m =
            common::crafted::memory(Outcome::Success, "decimal", "Parse decimal integers", &[StrategyKind::Reframe]);
        common::crafted::store_memory(&store, &ids[0], &m).await;
        store.close().await;
        ids
    };
    let s = w.serve(None, &[]).await;

    let stats = s.ok("/api/trajectories/stats").await;
    assert_eq!(stats["category"], Value::Null);
    let rates: Vec<(&str, f64)> = stats["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["category"].as_str().unwrap(), c["convergence_rate"].as_f64().unwrap()))
        .collect();
    assert_eq!(rates, vec![("charts", 1.0), ("parsers", 0.5)]);
    assert_eq!(stats["strategies"][0]["strategy"], "focused_repair");
    assert_eq!(stats["strategies"][0]["successes"], 2);
    assert_eq!(stats["attractors"][0], json!({"attractor": "fixed_point", "trajectories": 2, "observations": 2}));
    assert_eq!(stats["by_complexity"][0]["complexity"], "simple");
    let parsers = s.ok("/api/trajectories/stats?category=parsers").await;
    assert_eq!(parsers["categories"].as_array().unwrap().len(), 1);
    assert_eq!(parsers["success_threshold"], 0.05);

    let similar = s.ok("/api/trajectories/similar?task=Parse%20octal%20integers%20safely&limit=1").await;
    assert_eq!(similar["items"].as_array().unwrap().len(), 1);
    assert_eq!(similar["items"][0]["trajectory"]["task_name"], "hex");
    assert_eq!(similar["items"][0]["similarity"], 0.4);
    let by_run = s.ok(&format!("/api/trajectories/similar?run_id={}", ids[0].0)).await;
    assert_eq!((by_run["category"].as_str(), by_run["excluded"].as_str()), (Some("parsers"), Some(ids[0].1.as_str())));
    assert_eq!(by_run["items"][0]["trajectory"]["id"], ids[1].1);

    let (status, body) = s.get("/api/trajectories/similar").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("exactly one of `run_id`"), "{body}");
    let (status, body) =
        s.get(&format!("/api/trajectories/similar?run_id={}&trajectory_id={}", ids[0].0, ids[0].1)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let by_trajectory = s.ok(&format!("/api/trajectories/similar?trajectory_id={}", ids[1].1)).await;
    assert_eq!(by_trajectory["description"], "Parse hexadecimal integers");
    assert_eq!(by_trajectory["excluded"], ids[1].1);
    assert_eq!(by_trajectory["items"][0]["trajectory"]["id"], ids[0].1);
    let (status, body) = s.get("/api/trajectories/similar?trajectory_id=nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body["error"].as_str().unwrap().contains("no trajectory `nope`"), "{body}");
    let (status, body) = s.get("/api/trajectories/similar?run_id=4242").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _) = s.get("/api/trajectories/similar?run_id=many").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let memories = s.ok("/api/memories?category=parsers").await;
    assert_eq!(memories.as_array().unwrap().len(), 1);
    assert_eq!(memories[0]["outcome"], "success");
    assert_eq!(memories[0]["details"]["effective_strategies"], json!(["reframe"]));
    assert!(memories[0]["content"].as_str().unwrap().starts_with("Task type 'parsers' converged"));
    assert_eq!(s.ok("/api/memories?category=charts").await, json!([]));
}

#[tokio::test]
async fn with_a_token_the_api_needs_it_and_the_ui_files_do_not() {
    let w = World::populated();
    let s = w.serve(Some("t0k3n"), &[]).await;
    let bare = reqwest::Client::new();
    let r = bare.get(format!("{}/api/suites", s.base)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    let body: Value = r.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("Authorization: Bearer"));
    let wrong = bare.get(format!("{}/api/suites", s.base)).bearer_auth("t0k3m").send().await.unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(s.get("/api/suites").await.0, StatusCode::OK, "the right bearer token is accepted");
    let q = bare.get(format!("{}/api/overview?access_token=t0k3n", s.base)).send().await.unwrap();
    assert_eq!(q.status(), StatusCode::OK, "event streams pass the token in the query");
    let page = bare.get(format!("{}/", s.base)).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.unwrap().contains("Attractor test UI"));
}

/// The real binary: refuses a non-loopback bind without a token, serves on
/// loopback, and stops cleanly on Ctrl-C.
#[test]
fn the_serve_command_refuses_exposed_binds_and_stops_on_ctrl_c() {
    let w = World::populated();
    let refuse = Command::new(env!("CARGO_BIN_EXE_attractor"))
        .args(["--db", &w.db().display().to_string(), "serve", "--bind", "0.0.0.0", "--port", "0"])
        .env_remove("ATTRACTOR_TOKEN")
        .output()
        .unwrap();
    assert_eq!(refuse.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refuse.stderr);
    assert!(err.contains("refusing to listen on 0.0.0.0 without a token") && err.contains("--token"), "{err}");

    let missing = Command::new(env!("CARGO_BIN_EXE_attractor"))
        .args(["--db", &w.db().display().to_string(), "serve", "--port", "0", "--ui-dir", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("has no index.html"));

    let mut child = Command::new(env!("CARGO_BIN_EXE_attractor"))
        .args(["--db", &w.db().display().to_string(), "serve", "--port", "0", "--token", "abc"])
        .env("ATTRACTOR_SETTINGS", w.dir.path().join("settings.json"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    let url =
        line.trim().strip_prefix("attractor serve: listening on ").unwrap_or_else(|| panic!("{line}")).to_string();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let c = reqwest::Client::new();
        let r = c.get(format!("{url}api/suites")).bearer_auth("abc").send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let suites: Value = r.json().await.unwrap();
        assert_eq!(suites.as_array().unwrap().len(), 2);
        assert_eq!(c.get(format!("{url}api/suites")).send().await.unwrap().status(), StatusCode::UNAUTHORIZED);
    });
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(15), "serve did not stop on Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn every_hostile_file_is_refused_by_the_api_as_by_the_command_line() {
    let w = World::populated();
    let s = w.serve(None, &[]).await;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    let manifest = std::fs::read_to_string(dir.join("expected.txt")).unwrap();
    let cases: Vec<(&str, &str)> = manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once('\t'))
        .collect();
    assert!(cases.len() >= 10, "the hostile corpus is there");
    for (file, says) in cases {
        let path = dir.join(file).display().to_string();
        let (status, v) = s.post("/api/validate", json!({ "suite_path": path })).await;
        assert_eq!(status, StatusCode::OK, "{file}: {v}");
        assert_eq!(v["valid"], false, "{file}: {v}");
        let issue = &v["issues"][0];
        assert!(issue["line"].as_i64().is_some_and(|l| l >= 1), "{file}: {v}");
        assert!(issue["column"].as_i64().is_some_and(|c| c >= 1), "{file}: {v}");
        assert!(issue["hint"].as_str().is_some_and(|h| !h.is_empty()), "{file}: no hint in {v}");
        // The words the command line shows (the place aside) are in the message.
        let words = says.split(" | ").last().unwrap_or_default();
        assert!(issue["message"].as_str().unwrap_or_default().contains(words), "{file}: no `{words}` in {v}");
        let (status, _) = s.post("/api/launches", json!({ "suite_path": path })).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{file}: a launch is refused too");
    }
}

#[tokio::test]
async fn a_notice_is_listed_apart_from_the_questions_and_can_only_be_dismissed() {
    let w = World::new();
    let store = attractor::store::Store::open(&w.db()).await.unwrap();
    let row = |kind: &str, subject: &str| attractor::store::NewIntervention {
        kind: kind.into(),
        suite_id: None,
        run_id: None,
        task_name: Some("squares".into()),
        subject: subject.into(),
        context_json: json!({"what": "it cycles", "proposal": "nothing waits on this notice"}).to_string(),
    };
    let notice = store.insert_notice(&row("attractor_transition", "Task `squares` is going round")).await.unwrap();
    let question = store.insert_intervention(&row("partial_result", "Accept it?")).await.unwrap();
    store.close().await;
    let s = w.serve(None, &[]).await;

    let inbox = s.ok("/api/interventions").await;
    assert_eq!(inbox["pending"][0]["id"], question);
    assert_eq!(inbox["notices"][0]["id"], notice);
    assert_eq!(inbox["notices"][0]["status"], "notice");
    assert_eq!(inbox["notices"][0]["context"]["what"], "it cycles");
    assert_eq!(s.ok("/api/overview").await["pending_interventions"], 1, "a notice waits on nobody");

    let (status, body) = s.post(&format!("/api/interventions/{notice}/answer"), json!({"answer": "approve"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("is a notice"), "{body}");
    let (status, body) = s.post(&format!("/api/interventions/{question}/dismiss"), json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("is a question"), "{body}");
    let (status, body) = s.post(&format!("/api/interventions/{notice}/dismiss"), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "dismissed");
    assert!(body["answered_at"].is_string());
    assert_eq!(s.post(&format!("/api/interventions/{notice}/dismiss"), json!({})).await.0, StatusCode::CONFLICT);
    assert_eq!(s.post("/api/interventions/777/dismiss", json!({})).await.0, StatusCode::NOT_FOUND);

    let inbox = s.ok("/api/interventions").await;
    assert!(inbox["notices"].as_array().unwrap().is_empty());
    assert_eq!(inbox["answered"][0]["id"], notice, "kept as history");
    assert!(w.cli(&["interventions", "--all"]).contains("notice, dismissed"));
}

#[tokio::test]
async fn a_cross_site_request_changes_nothing_and_an_oversized_body_gets_413() {
    let w = World::new();
    let s = w.serve(None, &[]).await;
    let own = s.base.clone();
    let settings_before = s.ok("/api/settings").await;
    // What a page of another site can send without a preflight: a form post
    // (no JSON type, maybe no body), marked by the browser as cross-site.
    let attempts = [
        (reqwest::Method::POST, "/api/settings/test-llm", vec![("origin", "http://evil.example")]),
        (reqwest::Method::POST, "/api/launches/1/cancel", vec![("sec-fetch-site", "cross-site")]),
        (reqwest::Method::POST, "/api/interventions/1/dismiss", vec![("origin", "null")]),
        (
            reqwest::Method::PUT,
            "/api/settings",
            vec![("sec-fetch-site", "same-site"), ("origin", "http://localhost:9")],
        ),
        (reqwest::Method::DELETE, "/api/settings/api-key", vec![("origin", "http://127.0.0.1.evil.example")]),
    ];
    for (method, path, headers) in attempts {
        let mut r = s.req(method.clone(), path).header("content-type", "application/x-www-form-urlencoded");
        for (k, v) in &headers {
            r = r.header(*k, *v);
        }
        let resp = r.body("llm_model=attacker").send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{method} {path} {headers:?}");
        let body: Value = resp.json().await.unwrap();
        assert!(body["error"].as_str().unwrap().contains("its own pages"), "{body}");
    }
    assert_eq!(s.ok("/api/settings").await, settings_before, "nothing changed");

    // The app's own page, and clients that are no browser, still get in.
    let (status, _) = s.post("/api/settings/test-llm", json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let resp = s
        .req(reqwest::Method::POST, "/api/settings/test-llm")
        .header("origin", own.as_str())
        .header("sec-fetch-site", "same-origin")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    // Reading stays open to any page (the data is served to the app alone by CORS).
    let resp = s.req(reqwest::Method::GET, "/api/suites").header("sec-fetch-site", "cross-site").send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);

    let huge = format!("{{\"suite_path\": \"{}\"}}", "x".repeat(30 << 20));
    let resp = s
        .req(reqwest::Method::POST, "/api/validate")
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body: Value = resp.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("limit of 2 MB"), "{body}");
}

#[tokio::test]
async fn the_launch_preview_says_what_the_form_does_not_decide_and_refuses_a_model_optimizer_without_a_model() {
    let w = World::new();
    std::fs::copy(fixture("knobs.py"), w.dir.path().join("knobs.py")).unwrap();
    let path = w.dir.path().join("knobs.suite.yaml");
    std::fs::copy(fixture("knobs.suite.yaml"), &path).unwrap();
    let s = w.serve(None, &[("KNOBS_DELAY", "0")]).await;
    let req = |lr: f64| json!({"suite_path": path.display().to_string(), "epochs": 1, "optimizer": "evolve", "learning_rate": lr});

    // A suite without history starts at the form's rate: nothing to say.
    let (status, preview) = s.post("/api/launches/preview", req(0.5)).await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    assert_eq!(preview["continues"], Value::Null, "{preview}");
    let (status, launch) = s.post("/api/launches", req(0.2)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{launch}");
    let view = s.service.wait(launch["id"].as_i64().unwrap()).await.unwrap();
    assert_eq!(serde_json::to_value(view.status).unwrap(), "finished", "{view:?}");
    // Its history now has η 0.2: a form asking 0.5 is told the run goes on at 0.2.
    let (_, preview) = s.post("/api/launches/preview", req(0.5)).await;
    let line = preview["continues"].as_str().unwrap_or_default();
    assert!(line.starts_with("η continues at 0.2 from the suite's last epoch") && line.contains("0.5"), "{preview}");
    let (_, preview) = s.post("/api/launches/preview", req(0.2)).await;
    assert_eq!(preview["continues"], Value::Null, "the same rate: nothing to say");

    // textgrad with no model: refused in the preview, in the app's words.
    let mut textgrad = req(0.5);
    textgrad["optimizer"] = json!("textgrad");
    let (status, body) = s.post("/api/launches/preview", textgrad).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("needs a model") && error.contains("Settings screen"), "{error}");
    assert!(!error.contains("--optimizer"), "no command-line flag in the app: {error}");
}
