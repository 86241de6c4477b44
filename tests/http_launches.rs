//! Launching over the HTTP API of `attractor serve`, against a real server on
//! loopback: validate then launch, live events over SSE (the app's own runs
//! and a command line's on the same database), cancel, the preview, and a
//! tree search launched as the command line would.

use std::process::Command;
use std::time::{Duration, Instant};

mod common;

use common::http::{World, fixture};

use reqwest::StatusCode;
use serde_json::{Value, json};

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
        let children = match width.unwrap_or(3) {
            1 => "1 child a round".to_string(),
            n => format!("{n} children a round"),
        };
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
    assert!(
        body["error"].as_str().unwrap().contains("field `tree.width` (--width): 0 is outside the range 1 to 64"),
        "{body}"
    );
    let (status, body) = s
        .post("/api/launches", json!({"suite_path": fixture("knobs.suite.yaml"), "agent_config": "/no/such.json"}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("/no/such.json"), "{body}");
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
    // The suite's latest launch, asked for by the suite ("Launch again"
    // starts from it however many launches of other suites came after).
    assert_eq!(&s.ok("/api/suites/knobs/launches/latest").await, launch);
    assert_eq!(s.get("/api/suites/nope/launches/latest").await.0, reqwest::StatusCode::NOT_FOUND);
    let count = {
        let store = attractor::store::Store::open(&w.db()).await.unwrap();
        let suite = store.suite_by_name("knobs").await.unwrap().unwrap();
        let events = store.events_of_suite(suite.id).await.unwrap();
        store.close().await;
        events.iter().filter(|e| e.event.kind == "run_finished").count()
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
    // A copy of it under another name: its artifact's name is knobs', which
    // this database knows — refused (the Launch screen showed ✓ and the
    // launch failed), at the artifact's `name:`.
    let copy = w.dir.path().join("copy.suite.yaml");
    let knobs = std::fs::read_to_string(fixture("knobs.suite.yaml")).unwrap();
    std::fs::write(&copy, knobs.replacen("name: knobs\ndescription", "name: knobs-copy\ndescription", 1)).unwrap();
    let (status, v) = s.post("/api/validate", json!({"suite_path": copy.display().to_string()})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["valid"], false, "{v}");
    let issue = &v["issues"][0];
    assert_eq!((issue["field"].as_str(), issue["line"].as_i64()), (Some("artifacts[0].name"), Some(10)), "{v}");
    assert!(issue["message"].as_str().unwrap().contains("already declared by suite `knobs`"), "{v}");
    let (status, body) = s.post("/api/launches", json!({"suite_path": copy.display().to_string()})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["validation"]["issues"][0]["field"], "artifacts[0].name");
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
        (json!({"epochs": 4_000_000_000u64}), "field `epochs` (--epochs): 4000000000 is outside the range 1 to 100000"),
        (json!({"holdout_tolerance": 1e300}), "holdout_tolerance"),
        (json!({"concurrency": 100_000}), "field `concurrency` (--concurrency): 100000 is outside the range 1 to 256"),
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
async fn a_resumed_launch_previews_and_counts_only_what_is_left_of_its_plan() {
    let w = World::new();
    let (count, mark) = (w.dir.path().join("naps"), w.dir.path().join("napping"));
    // `nap` hangs on its second run (epoch 2), so a cancel leaves epoch 2
    // open with `quick` done in it; every other run completes.
    let suite = w.dir.path().join("plan.suite.yaml");
    std::fs::write(
        &suite,
        format!(
            r#"name: plan
tasks:
  - name: quick
    command: |
      echo '{{"status": "complete", "eval_score": 1}}' > "$ATTRACTOR_RESULT_FILE"
  - name: nap
    command: |
      n=$(cat "$COUNT" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$COUNT"
      if [ "$n" = 2 ]; then touch "$MARK"; sleep 60; fi
      echo '{{"status": "complete", "eval_score": 1}}' > "$ATTRACTOR_RESULT_FILE"
    env: {{ COUNT: "{}", MARK: "{}" }}
    timeout: 120
"#,
            count.display(),
            mark.display()
        ),
    )
    .unwrap();
    let s = w.serve(None, &[]).await;
    let req = json!({"suite_path": suite.display().to_string(), "epochs": 3, "seed": 5, "concurrency": 1, "optimizer": "baseline"});
    let (status, preview) = s.post("/api/launches/preview", req.clone()).await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    assert_eq!(preview["runs"], 6, "a new plan: 3 epochs × 2 tasks");
    let (status, launch) = s.post("/api/launches", req.clone()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{launch}");
    let id = launch["id"].as_i64().unwrap();
    common::wait_for("the second nap", || async { mark.exists().then_some(()) }).await;
    assert_eq!(s.post(&format!("/api/launches/{id}/cancel"), json!({})).await.0, StatusCode::OK);
    let view = s.service.wait(id).await.unwrap();
    assert_eq!((view.epochs_requested, view.epochs_done), (3, 1), "{view:?}");

    // The same request again continues the plan: epochs 2–3, `quick` of
    // epoch 2 kept — 3 runs, not 6.
    let (_, preview) = s.post("/api/launches/preview", req.clone()).await;
    assert_eq!(preview["runs"], 3, "{preview}");
    assert!(preview["plan"].as_str().unwrap().starts_with("plan: 2 epochs × 2 tasks"), "{preview}");
    let note = preview["continues"].as_str().unwrap_or_default();
    assert!(note.contains("epochs 2–3 are left") && note.contains("1 finished run of epoch 2 kept"), "{preview}");
    let (status, again) = s.post("/api/launches", req).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{again}");
    let view = s.service.wait(again["id"].as_i64().unwrap()).await.unwrap();
    assert_eq!(serde_json::to_value(view.status).unwrap(), "finished", "{view:?}");
    // Its bar is full: it set out to do two epochs and did them (it said 2/3).
    assert_eq!((view.epochs_requested, view.epochs_done), (2, 2), "{view:?}");
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
