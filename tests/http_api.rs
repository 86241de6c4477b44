//! The HTTP API of `attractor serve` read by a client, against a real server
//! on loopback over a database filled by really running suites with the
//! `attractor` binary: the seed 004 §11 endpoints, every operation at its
//! verb and path, compression, the report, diffs and rollback, the graphs,
//! run detail, the inbox and notices, the trajectory repository.

use std::process::Command;

mod common;

use common::http::{World, fixture};

use attractor::llm::scripted::{Scripted, ScriptedServer};
use reqwest::StatusCode;
use serde_json::{Value, json};

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
    // A harness that lists no examples: nothing compared, nothing flipped;
    // an epoch the suite does not have is named.
    let flips = s.ok("/api/suites/knobs/flips?from=1&to=8").await;
    assert_eq!((flips["compared"].as_u64(), flips["flips"].as_array().map(Vec::len)), (Some(0), Some(0)), "{flips}");
    assert_ne!(flips["from_versions"], flips["to_versions"], "evolve moved the knobs between epochs 1 and 8");
    let (status, body) = s.get("/api/suites/knobs/flips?from=1&to=9").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["error"].as_str().unwrap().contains("suite `knobs` has no epoch 9 (it has 8)"), "{body}");
    assert_eq!(s.get("/api/suites/knobs/flips?from=1").await.0, StatusCode::BAD_REQUEST);
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
    assert!(body["error"].as_str().unwrap().contains("limit: 0 is outside the range 1 to 500"), "{body}");
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
    let mut expected: Vec<String> =
        attractor::service::report::FILES.iter().map(|f| format!("knobs-report/{f}")).collect();
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
         workspace: ws\n    budget:\n      max_loops: 4\n    overseers:\n      - name: check\n        kind: custom\n        \
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
    // An answer has a length: a pasted log of megabytes is refused, said so.
    let long = "x".repeat(attractor::outer::approval::MAX_ANSWER_CHARS + 1);
    let (status, body) =
        s.post(&format!("/api/interventions/{id}/answer"), json!({"answer": "hint", "text": long})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].as_str().unwrap().contains("more than the 20000 an answer may have"), "{body}");

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
async fn a_notice_is_listed_apart_from_the_questions_and_can_only_be_dismissed() {
    let w = World::new();
    let store = attractor::store::Store::open(&w.db()).await.unwrap();
    let row = |kind: &str, subject: &str| attractor::store::Intervention {
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
