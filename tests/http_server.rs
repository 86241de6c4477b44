//! What `attractor serve` guards, against a real server on loopback: the
//! settings and the API key, watched folders, the token, the loopback-only
//! bind, hostile suite files, cross-site requests and oversized bodies.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::http::World;

use attractor::llm::scripted::{Scripted, ScriptedServer};
use reqwest::StatusCode;
use serde_json::{Value, json};

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

    // A database in a folder that is not there is refused now, not created
    // (with every missing folder above it) at the next start.
    let typo = w.dir.path().join("no/such/folder/typo.db");
    let (status, body) =
        s.send(reqwest::Method::PUT, "/api/settings", json!({"db_path": typo.display().to_string()})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.starts_with("database: the folder ") && error.contains("does not exist") && error.contains("hint:"),
        "{body}"
    );
    assert_eq!(s.ok("/api/settings").await["db_path_next_start"], "/tmp/other.db", "a refused path changes nothing");

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
/// loopback, and stops cleanly on SIGTERM (a service manager's stop; Ctrl-C
/// goes the same way, `crate::process::termination`).
#[test]
fn the_serve_command_refuses_exposed_binds_and_stops_on_sigterm() {
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
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(15), "serve did not stop on SIGTERM");
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
