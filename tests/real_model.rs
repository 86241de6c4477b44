//! The real-model tier: Attractor against llama.cpp's `llama-server` serving
//! SmolLM2-135M-Instruct on loopback (built and fetched from the package
//! registries by `scripts/local-llm.sh`), every request passing through a
//! recording proxy so the test sees exactly what went over the wire.
//!
//! The assertions are about plumbing and honesty, never about how clever the
//! model is: every request is well-formed (a model, messages, a token budget,
//! the reply's schema for structured calls), every reply is accounted for
//! (the tokens Attractor records are the tokens the server reported, unusable
//! replies included), every epoch says truthfully what it did, exit codes are
//! right, and a server that dies mid-call ends the run with a stated reason.
//!
//! The tests are `#[ignore]`d so a plain `cargo test` needs no model;
//! `scripts/test.sh` installs the server and the model (cached in
//! `~/.cache/attractor/llm`) and runs them with
//! `cargo test --test real_model -- --ignored`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use attractor::store::ProposalOutcome;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

const REASON: &str = "needs the local model: scripts/local-llm.sh install (scripts/test.sh runs this tier)";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A `llama-server` of this test's own, on a free loopback port, stopped when
/// dropped. Its pid and port live in a private folder, so a server a
/// developer started with the same script is left alone.
struct LocalModel {
    state: tempfile::TempDir,
    base_url: String,
    model: String,
}

impl LocalModel {
    fn start() -> LocalModel {
        let state = tempfile::tempdir().expect("temp dir");
        let out = Command::new(repo().join("scripts/local-llm.sh"))
            .arg("start")
            .env("ATTRACTOR_LLM_STATE", state.path())
            .output()
            .expect("run scripts/local-llm.sh");
        assert!(
            out.status.success(),
            "the local model did not start ({}); run scripts/local-llm.sh install first:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let exports = String::from_utf8_lossy(&out.stdout).to_string();
        let var = |name: &str| {
            exports
                .lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .unwrap_or_else(|| panic!("no {name} in {exports}"))
                .to_string()
        };
        LocalModel { base_url: var("ATTRACTOR_LLM_BASE_URL"), model: var("ATTRACTOR_LLM_MODEL"), state }
    }

    fn pid(&self) -> i32 {
        std::fs::read_to_string(self.state.path().join("pid")).unwrap().trim().parse().unwrap()
    }
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("scripts/local-llm.sh"))
            .arg("stop")
            .env("ATTRACTOR_LLM_STATE", self.state.path())
            .output();
    }
}

/// One exchange the proxy saw.
#[derive(Clone, Debug)]
struct Exchange {
    user_agent: String,
    request: Value,
    status: u16,
    /// The upstream's answer, `Null` when it sent none (a dead server).
    response: Value,
}

impl Exchange {
    /// Sent by Attractor itself (not by a suite's harness calling the same server).
    fn from_attractor(&self) -> bool {
        self.user_agent.starts_with("attractor/")
    }

    fn tokens(&self) -> (u64, u64) {
        let u = &self.response["usage"];
        (u["prompt_tokens"].as_u64().unwrap_or(0), u["completion_tokens"].as_u64().unwrap_or(0))
    }
}

#[derive(Clone)]
struct ProxyState {
    upstream: String,
    http: reqwest::Client,
    log: Arc<Mutex<Vec<Exchange>>>,
    /// User agents of the requests as they arrive: a call the client gives
    /// up on mid-way (its budget ran out) never completes an exchange.
    arrived: Arc<Mutex<Vec<String>>>,
}

/// A loopback HTTP proxy in front of the model server that records every
/// chat request and its answer.
struct Proxy {
    base_url: String,
    log: Arc<Mutex<Vec<Exchange>>>,
    arrived: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: &str) -> Proxy {
        let log = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Mutex::new(Vec::new()));
        let state = ProxyState {
            upstream: upstream.trim_end_matches('/').to_string(),
            http: reqwest::Client::builder().no_proxy().build().unwrap(),
            log: Arc::clone(&log),
            arrived: Arc::clone(&arrived),
        };
        let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(forward)).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Proxy { base_url: format!("http://{addr}/v1"), log, arrived, task }
    }

    fn exchanges(&self) -> Vec<Exchange> {
        self.log.lock().unwrap().clone()
    }

    /// Requests Attractor sent, answered or abandoned.
    fn sent_by_attractor(&self) -> usize {
        self.arrived.lock().unwrap().iter().filter(|ua| ua.starts_with("attractor/")).count()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn forward(State(s): State<ProxyState>, headers: HeaderMap, body: Bytes) -> Response {
    let user_agent = headers.get("user-agent").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    s.arrived.lock().unwrap().push(user_agent.clone());
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut upstream = s.http.post(format!("{}/chat/completions", s.upstream)).body(body.to_vec());
    upstream = upstream.header("content-type", "application/json");
    let (status, text) = match upstream.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            (status, r.text().await.unwrap_or_default())
        }
        Err(_) => (502, String::new()),
    };
    let response: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    s.log.lock().unwrap().push(Exchange { user_agent, request, status, response });
    if status == 502 && text.is_empty() {
        // The upstream died: drop the connection as it did.
        return (StatusCode::BAD_GATEWAY, "upstream closed the connection").into_response();
    }
    (StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY), [("content-type", "application/json")], text)
        .into_response()
}

/// The attractor binary with the model at `base_url` and nothing else of
/// the developer's environment that could steer it.
fn attractor_cmd(db: &Path, base_url: &str, model: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_attractor"));
    cmd.arg("--db")
        .arg(db)
        .args(args)
        .current_dir(repo())
        .env("ATTRACTOR_LLM_BASE_URL", base_url)
        .env("ATTRACTOR_LLM_MODEL", model)
        .env("ATTRACTOR_KEYCHAIN", "off")
        .env_remove("ATTRACTOR_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("RUST_LOG");
    cmd
}

/// Runs the attractor binary with the model at `base_url`.
fn attractor(db: &Path, base_url: &str, model: &str, args: &[&str]) -> Output {
    attractor_cmd(db, base_url, model, args).output().expect("run attractor")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every request Attractor sent is well-formed: the model, messages, a
/// token budget, and for structured calls the schema with its required
/// fields; every answer it got carries usage.
fn assert_well_formed(exchanges: &[Exchange], model: &str) {
    let ours: Vec<&Exchange> = exchanges.iter().filter(|e| e.from_attractor()).collect();
    assert!(!ours.is_empty(), "Attractor made no model call");
    for e in &ours {
        let r = &e.request;
        assert_eq!(r["model"], model, "{r}");
        assert!(r["messages"].as_array().is_some_and(|m| !m.is_empty()), "{r}");
        assert!(r["max_tokens"].as_u64().is_some_and(|n| n > 0), "every call has a token budget: {r}");
        if let Some(format) = r.get("response_format") {
            assert_eq!(format["type"], "json_schema", "llama-server takes schemas: {format}");
            let schema = &format["json_schema"]["schema"];
            assert!(schema["required"].as_array().is_some_and(|f| !f.is_empty()), "{schema}");
        }
        assert_eq!(e.status, 200, "{}", e.response);
        assert!(e.response["usage"]["completion_tokens"].as_u64().is_some(), "{}", e.response);
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the local model: scripts/local-llm.sh install (scripts/test.sh runs this tier)"]
async fn textgrad_on_the_text_suite_runs_three_epochs_and_states_every_outcome_truthfully() {
    let _ = REASON;
    let server = LocalModel::start();
    let proxy = Proxy::start(&server.base_url).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("attractor.db");
    let runs = dir.path().join("runs");
    let out = attractor(
        &db,
        &proxy.base_url,
        &server.model,
        &[
            "run",
            "examples/support-triage.suite.yaml",
            "--epochs",
            "3",
            "--optimizer",
            "textgrad",
            "--runs-dir",
            runs.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let exchanges = proxy.exchanges();
    assert_well_formed(&exchanges, &server.model);
    assert!(
        exchanges.iter().any(|e| !e.from_attractor()),
        "the suite's harness labels the messages with the same model"
    );
    assert!(!stderr.contains('\u{1b}'), "no terminal codes when stderr is not a terminal:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // Every epoch: an update, a rollback, or "no change" with a reason.
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("epoch")).collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    for line in &lines {
        assert!(
            line.contains("update ") || line.contains("rollback ") || line.contains("no change (textgrad: "),
            "an epoch that states no reason: {line}"
        );
    }

    // The records: each epoch that asked the model holds what it cost, and
    // the tokens add up to what the server reported for Attractor's calls.
    let store = attractor::store::Store::open(&db).await.unwrap();
    let suite = store.suite_by_name("support-triage").await.unwrap().unwrap();
    let epochs = store.epochs(suite.id).await.unwrap();
    assert_eq!(epochs.len(), 3);
    let (mut recorded_calls, mut recorded_prompt, mut recorded_completion) = (0, 0, 0);
    for e in &epochs {
        let child: Value = serde_json::from_str(e.child_artifacts_json.as_deref().unwrap()).unwrap();
        let rolled_back = child["events"].as_array().unwrap().iter().any(|ev| ev["type"] == "rollback");
        let updated = child["events"].as_array().unwrap().iter().any(|ev| ev["type"] == "update");
        if rolled_back {
            // A rollback epoch makes no proposal: nothing asked, nothing spent.
            assert!(child["model"].is_null(), "{child}");
            continue;
        }
        let model = &child["model"];
        let calls = model["calls"].as_u64().unwrap();
        assert!(calls >= 1, "a proposing epoch called the model: {child}");
        assert!(model["prompt_tokens"].as_u64().unwrap() > 0 && model["completion_tokens"].as_u64().unwrap() > 0);
        assert_eq!(updated, child["note"].is_null(), "a note exactly when nothing was applied: {child}");
        recorded_calls += calls;
        recorded_prompt += model["prompt_tokens"].as_u64().unwrap();
        recorded_completion += model["completion_tokens"].as_u64().unwrap();
    }
    let ours: Vec<&Exchange> = exchanges.iter().filter(|e| e.from_attractor()).collect();
    let served_prompt: u64 = ours.iter().map(|e| e.tokens().0).sum();
    let served_completion: u64 = ours.iter().map(|e| e.tokens().1).sum();
    assert_eq!(recorded_calls, ours.len() as u64, "every call accounted for");
    assert_eq!((recorded_prompt, recorded_completion), (served_prompt, served_completion));

    // One proposal row per proposing epoch (the suite has one artifact),
    // each a winner or a rejection with its reason.
    let proposing =
        epochs.iter().filter(|e| !e.child_artifacts_json.as_deref().unwrap().contains("\"rollback\"")).count();
    let proposals = store.proposals(suite.id).await.unwrap();
    assert_eq!(proposals.len(), proposing);
    for p in &proposals {
        let p = &p.row.proposal;
        assert!(p.outcome == ProposalOutcome::Winner || p.rejection.as_deref().is_some_and(|r| !r.is_empty()), "{p:?}");
    }
}

/// A suite whose one task needs no model (a command scoring a text
/// artifact's length), so the only model calls are the optimizer's.
fn prompt_length_suite(dir: &Path) -> PathBuf {
    let path = dir.join("length.suite.yaml");
    std::fs::write(
        &path,
        r#"name: prompt-length
artifacts:
  - name: note
    type: text
    description: A note to the reader. Shorter is better.
    content: |
      This note explains, at some length and with several examples, how the
      reader should go about filing a ticket, whom to contact, and what to
      include in the description so that the team can reproduce the problem.
tasks:
  - name: shorter
    task: Keep the note short.
    command: >-
      python3 -c "import json, os; n = len(open(os.path.join(os.environ['ATTRACTOR_ARTIFACTS_DIR'], 'note.txt')).read());
      json.dump({'status': 'complete', 'eval_score': max(0.0, 1 - n / 400)}, open(os.environ['ATTRACTOR_RESULT_FILE'], 'w'))"
    timeout: 30
"#,
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the local model: scripts/local-llm.sh install (scripts/test.sh runs this tier)"]
async fn the_command_line_calls_the_model_chosen_on_the_settings_screen() {
    // The app reads its endpoint and model from the settings file; the
    // command line used to read only the environment, so a person who chose
    // a model on the Settings screen got "no model configured" in a terminal
    // (or, with ATTRACTOR_LLM_MODEL set, another model than the app's).
    let server = LocalModel::start();
    let proxy = Proxy::start(&server.base_url).await;
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let chosen = serde_json::json!({ "llm_base_url": proxy.base_url, "llm_model": server.model });
    std::fs::write(&settings, chosen.to_string()).unwrap();
    let suite = prompt_length_suite(dir.path());
    let mut cmd = attractor_cmd(
        &dir.path().join("attractor.db"),
        "http://127.0.0.1:9/v1",
        "not-the-chosen-model",
        &["run", suite.to_str().unwrap(), "--epochs", "1", "--optimizer", "textgrad", "--runs-dir"],
    );
    cmd.arg(dir.path().join("runs")).env("ATTRACTOR_SETTINGS", &settings);
    // The environment names nothing: the settings file alone decides.
    cmd.env_remove("ATTRACTOR_LLM_BASE_URL").env_remove("ATTRACTOR_LLM_MODEL");
    let out = cmd.output().expect("run attractor");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_well_formed(&proxy.exchanges(), &server.model);
    assert!(proxy.sent_by_attractor() >= 1, "textgrad asked the chosen model");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the local model: scripts/local-llm.sh install (scripts/test.sh runs this tier)"]
async fn a_model_server_killed_mid_call_ends_the_run_with_a_stated_reason() {
    let server = LocalModel::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("attractor.db");
    let runs = dir.path().join("runs");
    let suite = prompt_length_suite(dir.path());
    let pid = server.pid();
    let started = Instant::now();
    let killer = std::thread::spawn(move || {
        // Kill the server as soon as it is busy with the optimizer's call.
        while started.elapsed() < Duration::from_secs(600) {
            if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status"))
                && status.contains("State:\tR")
            {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    });
    let out = attractor(
        &db,
        &server.base_url,
        &server.model,
        &[
            "run",
            suite.to_str().unwrap(),
            "--epochs",
            "2",
            "--optimizer",
            "textgrad",
            "--runs-dir",
            runs.to_str().unwrap(),
        ],
    );
    assert!(killer.join().unwrap(), "the server was never seen busy");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Without a model the run cannot learn: it stops with the reason and
    // exit 1 (a failure while working), and leaves the epoch open with its
    // runs kept, for the next run to resume.
    assert_eq!(out.status.code(), Some(1), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let error = stderr.lines().find(|l| l.starts_with("error: ")).unwrap_or_else(|| panic!("no error line:\n{stderr}"));
    assert!(error.contains("textgrad could not use the model"), "{error}");
    assert!(error.contains("dropped the connection") || error.contains("cannot reach the model server"), "{error}");
    assert!(stderr.contains("attractor run` on the same suite resumes the epoch"), "{stderr}");
    let store = attractor::store::Store::open(&db).await.unwrap();
    let suite = store.suite_by_name("prompt-length").await.unwrap().unwrap();
    let epochs = store.epochs(suite.id).await.unwrap();
    assert_eq!(epochs.len(), 1);
    assert!(epochs[0].completed_at.is_none(), "the epoch stays open");
    let size = std::fs::metadata(&db).unwrap().len();
    assert!(size < 50 << 20, "database of {size} bytes");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the local model: scripts/local-llm.sh install (scripts/test.sh runs this tier)"]
async fn the_aso_model_tier_makes_at_most_two_calls_per_supervision_and_reports_the_model_time() {
    let server = LocalModel::start();
    let proxy = Proxy::start(&server.base_url).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("attractor.db");
    let runs = dir.path().join("runs");
    // The bundled constrained example, all seven tasks; 90 s of model time
    // (summed over overlapping calls) keeps it inside the tier's time, the
    // heuristic supervising alone once it is spent.
    let args = [
        "run",
        "examples/constrained.suite.yaml",
        "--epochs",
        "1",
        "--max-model-secs",
        "90",
        "--runs-dir",
        runs.to_str().unwrap(),
    ];
    let out = attractor(&db, &proxy.base_url, &server.model, &args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let exchanges = proxy.exchanges();
    assert_well_formed(&exchanges, &server.model);

    // Calls per supervision: the telemetry marks each supervision that
    // asked the model; the proxy saw every call.
    let store = attractor::store::Store::open(&db).await.unwrap();
    let suite_row = store.suite_by_name("constrained-benchmarks").await.unwrap().unwrap();
    let epochs = store.epochs(suite_row.id).await.unwrap();
    let runs = store.runs_of_epoch(epochs[0].id).await.unwrap();
    assert_eq!(runs.len(), 7, "every task ran");
    assert!(runs.iter().all(|r| r.status != "failed" || r.error.is_none()), "{runs:?}");
    let mut supervisions = 0;
    for run in &runs {
        let experiment = store.experiment_of_run(run.id).await.unwrap().expect("the run's experiment");
        let telemetry = store.telemetry_of_experiment(experiment).await.unwrap();
        supervisions += telemetry.iter().filter(|t| t.llm_call_made).count();
    }
    assert!(supervisions > 0, "the model tier was asked");
    // Calls sent, including one the run's model time cut short in flight.
    let calls = proxy.sent_by_attractor();
    assert!(calls <= 2 * supervisions, "{calls} model calls for {supervisions} supervisions");
    assert!(
        !stderr.contains("failed (this run has spent its model time"),
        "a spent budget is no model failure:\n{stderr}"
    );

    // The split of wall time, and honest console output.
    // The line counts each call once, however many HTTP attempts it took
    // (the proxy sees every attempt; those it answered are whole calls).
    let usage = stdout.lines().find(|l| l.starts_with("model use: supervisor ")).unwrap_or_else(|| panic!("{stdout}"));
    let counted: usize = usage["model use: supervisor ".len()..].split(' ').next().unwrap().parse().unwrap();
    let answered = exchanges.iter().filter(|e| e.from_attractor()).count();
    assert!(answered <= counted && counted <= calls, "{answered} answered ≤ {counted} counted ≤ {calls} sent: {usage}");
    assert!(usage.contains("wall time waiting on the model"), "{usage}");
    assert!(!stderr.contains("waiting for an answer"), "the run never waits for a person:\n{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning: ")).collect();
    let mut unique = warnings.clone();
    unique.dedup();
    assert_eq!(warnings.len(), unique.len(), "a warning repeated:\n{stderr}");
    assert!(!warnings.iter().any(|w| w.contains('{') || w.contains("AuditAlert")), "{warnings:?}");
    // Questions are for the task's next runs: one per task and proposal at
    // most, and none blames the model for a budget that ran out.
    let pending = store.interventions(true).await.unwrap();
    assert!(pending.len() <= 2 * runs.len(), "{pending:?}");
    assert!(!pending.iter().any(|q| q.raised.context_json.contains("spent its model time")), "{pending:?}");
}

/// The bundled agent example with two loops per task (six would take the
/// tier past its time), copied so its workspaces stay untouched.
fn agent_example(dir: &Path) -> PathBuf {
    let copy = |from: &Path, to: &Path| {
        let status = Command::new("cp").arg("-r").arg(from).arg(to).status().unwrap();
        assert!(status.success());
    };
    copy(&repo().join("examples/agent"), &dir.join("agent"));
    let suite = std::fs::read_to_string(repo().join("examples/agent.suite.yaml")).unwrap();
    assert_eq!(suite.matches("max_loops: 6").count(), 2, "the example's budgets moved; update this test");
    let path = dir.join("agent.suite.yaml");
    std::fs::write(&path, suite.replace("max_loops: 6", "max_loops: 2")).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the local model: scripts/local-llm.sh install (scripts/test.sh runs this tier)"]
async fn the_agent_example_applies_model_edits_measures_them_and_leaves_no_question_open() {
    let server = LocalModel::start();
    let proxy = Proxy::start(&server.base_url).await;
    let dir = tempfile::tempdir().unwrap();
    let suite = agent_example(dir.path());
    let db = dir.path().join("attractor.db");
    // Small edits and short replies suit a 135M model on two cores; a
    // question nobody is there to answer waits a second, then is closed.
    let config = dir.path().join("agent.json");
    std::fs::write(
        &config,
        r#"{"executor": {"max_edits": 2, "max_whole_file_bytes": 2000}, "intervention_timeout_secs": 1}"#,
    )
    .unwrap();
    let runs = dir.path().join("runs");
    let args = [
        "run",
        suite.to_str().unwrap(),
        "--agent-config",
        config.to_str().unwrap(),
        "--max-tokens",
        "executor=1000",
        "--max-tokens",
        "verifier=300",
        "--llm-timeout",
        "300",
        "--runs-dir",
        runs.to_str().unwrap(),
    ];
    let out = attractor_cmd(&db, &proxy.base_url, &server.model, &args)
        // The Rust task's overseers build into a folder of their own.
        .env("CARGO_TARGET_DIR", dir.path().join("target"))
        .output()
        .expect("run attractor");
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // A 135M model seldom converges in two iterations: runs that end failed
    // are the model's, and the exit code says so (4) and names them.
    match out.status.code() {
        Some(0) => {}
        Some(4) => assert!(stderr.contains(" failed or w") && stderr.contains(" aborted: "), "{stderr}"),
        other => panic!("exit {other:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"),
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("model: about "), "the pre-run preview: {stderr}");
    assert!(stdout.contains("model use: executor"), "{stdout}");
    assert_well_formed(&proxy.exchanges(), &server.model);

    let pool = sqlx::SqlitePool::connect(&format!("sqlite:{}", db.display())).await.unwrap();
    // Every iteration was measured by the overseers; at least one applied a
    // model edit, and each edit the reply held is applied or refused.
    let rows: Vec<(i64, i64, String, String)> = sqlx::query_as(
        "SELECT applied_edits, rejected_edits, verdict_summary, execution_json FROM trajectory_observations",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(!rows.is_empty(), "no iteration ran");
    assert!(rows.iter().any(|(applied, ..)| *applied > 0), "no model edit was applied: {rows:?}\nstderr:\n{stderr}");
    for (applied, rejected, verdicts, execution) in &rows {
        assert!(!verdicts.is_empty(), "an iteration the overseers did not measure");
        let e: Value = serde_json::from_str(execution).unwrap();
        assert_eq!(e["applied"].as_array().map_or(0, Vec::len) as i64, *applied, "{e}");
        for r in e["rejected"].as_array().into_iter().flatten() {
            assert!(r["reason"].as_str().is_some_and(|s| !s.is_empty()), "a refusal without a reason: {r}");
        }
        assert!(*rejected >= e["rejected"].as_array().map_or(0, Vec::len) as i64);
    }
    let pending: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM interventions WHERE status = 'pending'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(pending, 0, "a question left open after the run");
    // Each run holds what its own calls cost; together they are every call
    // Attractor sent (the baseline optimizer sends none), tokens as served.
    let runs: Vec<(Option<String>,)> = sqlx::query_as("SELECT model_json FROM runs").fetch_all(&pool).await.unwrap();
    assert_eq!(runs.len(), 2, "one run per task");
    let spends: Vec<Value> =
        runs.iter().map(|(m,)| serde_json::from_str(m.as_deref().expect("a run's model spend")).unwrap()).collect();
    let sum = |field: &str| spends.iter().map(|m| m[field].as_u64().unwrap()).sum::<u64>();
    let exchanges = proxy.exchanges();
    let ours: Vec<&Exchange> = exchanges.iter().filter(|e| e.from_attractor()).collect();
    assert_eq!(sum("calls"), ours.len() as u64, "every call counted in its run");
    let served = ours.iter().fold((0, 0), |(p, c), e| (p + e.tokens().0, c + e.tokens().1));
    assert_eq!((sum("prompt_tokens"), sum("completion_tokens")), served);
    assert!(spends.iter().all(|m| m["cost"] == 0.0), "a local model is free: {spends:?}");
    // The suite's total, as `attractor inspect` shows it.
    let inspect = attractor_cmd(&db, &proxy.base_url, &server.model, &["inspect", "agent-examples"]).output().unwrap();
    let shown = text(&inspect.stdout);
    assert!(
        shown.contains(&format!("model calls so far: {}", attractor::counted(ours.len(), "model call"))),
        "{shown}"
    );
    // And the ledger has each of those calls, with its run.
    let ledger: Vec<(Option<i64>, String, Option<f64>)> =
        sqlx::query_as("SELECT run_id, role, cost FROM model_calls").fetch_all(&pool).await.unwrap();
    assert_eq!(ledger.len(), ours.len());
    assert!(
        ledger
            .iter()
            .all(|(run, role, cost)| run.is_some() && (role == "executor" || role == "verifier") && *cost == Some(0.0)),
        "{ledger:?}"
    );
}
