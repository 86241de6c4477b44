//! Fuzz targets (bolero): every reader of text from outside — suite, task
//! and problem files, a model's reply, a tool's test output, an HTTP body —
//! gets inputs made by mutating real ones with hostile tokens (huge and
//! negative numbers, NaN, `..`, absolute paths, NUL, unbalanced brackets,
//! YAML anchors, long runs), plus plain random bytes. None may panic; a
//! rejected file must say where (line and column from 1) and what.
//!
//! `cargo test --test fuzz` runs each target for `ATTRACTOR_FUZZ_ITERATIONS`
//! inputs (default 2,000); `bench/fuzz.sh` runs them far longer. An input
//! that once failed goes into `tests/__fuzz__/fuzz/<target>/crashes/`, where
//! every run replays it first (bolero's corpus replay).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use bolero::{TypeGenerator, check};

/// A hostile value to put into a text.
#[derive(Debug, TypeGenerator)]
enum Token {
    Huge,
    Tiny,
    Negative,
    NotANumber,
    Infinite,
    Zero,
    Dots,
    Absolute,
    Tilde,
    Nul,
    Long,
    OpenBracket,
    CloseBrace,
    Colon,
    Anchor,
    Alias,
    Newline,
    Tab,
    Unicode,
    Quote,
    Int(i64),
    Float(f64),
    Text(String),
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Huge => "1e308".into(),
            Token::Tiny => "5e-324".into(),
            Token::Negative => "-1".into(),
            Token::NotANumber => ".nan".into(),
            Token::Infinite => ".inf".into(),
            Token::Zero => "0".into(),
            Token::Dots => "../../../../etc/passwd".into(),
            Token::Absolute => "/etc/passwd".into(),
            Token::Tilde => "~".into(),
            Token::Nul => "\0".into(),
            Token::Long => "x".repeat(70_000),
            Token::OpenBracket => "[".into(),
            Token::CloseBrace => "}".into(),
            Token::Colon => ": ".into(),
            Token::Anchor => "&a ".into(),
            Token::Alias => "*a".into(),
            Token::Newline => "\n".into(),
            Token::Tab => "\t".into(),
            Token::Unicode => "é⚙\u{202e}\u{feff}".into(),
            Token::Quote => "\"".into(),
            Token::Int(i) => i.to_string(),
            Token::Float(f) => f.to_string(),
            Token::Text(t) => t.clone(),
        }
    }
}

/// One change to a seed text; positions wrap around its length.
#[derive(Debug, TypeGenerator)]
enum Edit {
    Insert {
        at: u16,
        token: Token,
    },
    /// Replaces what follows the n-th `: ` on its line.
    Value {
        nth: u8,
        token: Token,
    },
    Delete {
        at: u16,
        len: u8,
    },
    DuplicateLine {
        nth: u8,
    },
    DropLine {
        nth: u8,
    },
}

/// A mutated seed: which seed, and the edits made to it.
#[derive(Debug, TypeGenerator)]
struct Mutant {
    seed: u8,
    edits: Vec<Edit>,
}

/// Cuts at the nearest char boundary at or before `at`.
fn boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

impl Mutant {
    /// The seed with the edits made, and the seed's index.
    fn apply(&self, seeds: &[String]) -> (usize, String) {
        let i = usize::from(self.seed) % seeds.len();
        let mut text = seeds[i].clone();
        for edit in self.edits.iter().take(8) {
            let len = text.len().max(1);
            match edit {
                Edit::Insert { at, token } => {
                    let at = boundary(&text, usize::from(*at) % len);
                    text.insert_str(at, &token.text());
                }
                Edit::Value { nth, token } => {
                    let colons: Vec<usize> = text.match_indices(": ").map(|(i, _)| i + 2).collect();
                    if let Some(&start) = colons.get(usize::from(*nth) % colons.len().max(1)) {
                        let end = text[start..].find('\n').map_or(text.len(), |e| start + e);
                        text.replace_range(start..end, &token.text());
                    }
                }
                Edit::Delete { at, len: n } => {
                    let start = boundary(&text, usize::from(*at) % len);
                    let end = boundary(&text, start + usize::from(*n));
                    text.replace_range(start..end, "");
                }
                Edit::DuplicateLine { nth } | Edit::DropLine { nth } => {
                    let mut lines: Vec<&str> = text.split('\n').collect();
                    let k = usize::from(*nth) % lines.len();
                    if matches!(edit, Edit::DuplicateLine { .. }) {
                        lines.insert(k, lines[k]);
                    } else {
                        lines.remove(k);
                    }
                    text = lines.join("\n");
                }
            }
        }
        (i, text)
    }
}

fn iterations() -> usize {
    std::env::var("ATTRACTOR_FUZZ_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000)
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The bundled example suites, the seeds of the suite target.
fn suite_seeds() -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".suite.yaml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no example suites to start from");
    out
}

/// A rejection says where, from 1, and what.
fn assert_located(e: &attractor::suite::SuiteError, input: &str) {
    assert!(!e.issues.is_empty(), "a rejection without an issue for {input:?}");
    for issue in &e.issues {
        assert!(issue.location.line >= 1 && issue.location.column >= 1, "{issue} for {input:?}");
        assert!(!issue.message.trim().is_empty(), "an empty message for {input:?}");
        assert!(issue.hint.as_deref().is_some_and(|h| !h.trim().is_empty()), "no hint: {issue}");
        // Never a library's own wording: Rust types, its options.
        let rustisms = ["panicked", "Option<", "DuplicateKeyPolicy", "serde", "__", "budget breached"];
        let types = ["u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize", "f32", "f64"];
        // What the file itself said is quoted in backticks: a key the user
        // spelled `max__million` is theirs, not a library's wording.
        let ours: String = issue.message.split('`').step_by(2).collect::<Vec<_>>().join("`…`");
        for rustism in rustisms.into_iter().map(String::from).chain(types.iter().map(|t| format!("invalid {t}"))) {
            assert!(!ours.contains(&rustism), "library wording `{rustism}` in: {issue}");
        }
    }
}

#[test]
fn suite_files() {
    let seeds = suite_seeds();
    let texts: Vec<String> = seeds.iter().map(|(_, t)| t.clone()).collect();
    check!().with_type::<Mutant>().with_iterations(iterations()).for_each(|m| {
        let (i, text) = m.apply(&texts);
        if let Err(e) = attractor::suite::parse(&text, &seeds[i].0) {
            assert_located(&e, &text);
        }
    });
}

#[test]
fn task_files() {
    let seeds = vec![
        "task: Make the tests pass.\nworkspace: .\noverseers:\n  - { name: tests, kind: test, command: 'python3 -m pytest -q' }\nbudget: { max_loops: 4, max_wall_time: 60 }\n".to_string(),
        "suite: shared\nname: one\ncommand: echo '{\"status\": \"complete\"}' > \"$ATTRACTOR_RESULT_FILE\"\ntimeout: 30\nweights: { eval: 0.5 }\n".to_string(),
        "name: numeric\nproblem: g08\nbudget: { max_evaluations: 500 }\n".to_string(),
    ];
    let path = root().join("examples/fuzzed.task.yaml");
    check!().with_type::<Mutant>().with_iterations(iterations()).for_each(|m| {
        let (_, text) = m.apply(&seeds);
        if let Err(e) = attractor::suite::parse_task_file(&text, &path, None) {
            assert_located(&e, &text);
        }
    });
}

#[test]
fn problem_files() {
    let seeds = vec![
        "name: ring\ncommand: python3 eval.py\ntimeout: 10\nvariables:\n  - { name: x, min: -5, max: 5 }\n  - { name: y, min: 0, max: 10, integer: true }\ninequalities: [g1]\nequalities: [h1]\nbest_known: { value: 1.5, x: [0.1, 2] }\n".to_string(),
        "name: box\ncommand: sh eval.sh\nvariables:\n  - name: a\n    min: 0\n    max: 1\n".to_string(),
    ];
    let path = root().join("examples/fuzzed-problem.yaml");
    check!().with_type::<Mutant>().with_iterations(iterations()).for_each(|m| {
        let (_, text) = m.apply(&seeds);
        if let Err(e) = attractor::numeric::external::parse_external(&text, &path) {
            assert_located(&e, &text);
        }
    });
}

#[test]
fn agent_configuration_and_settings_files() {
    let seeds = vec![
        "{\n  \"engine\": {\"ggs\": {\"epsilon\": 0.05, \"time_budget_ms\": 60000}, \"classification\": {\"window\": 5}},\n  \"overseers\": {\"retry_delay_ms\": 10, \"default_timeout_secs\": 30},\n  \"executor\": {\"temperature\": 0.2, \"max_tokens\": 900},\n  \"intervention_timeout_secs\": 60\n}\n".to_string(),
        "engine:\n  decomposition: { min_subtasks: 2, max_subtasks: 4 }\n  parallel: { max_samples: 3 }\nmemory: { recall_limit: 5, nudge: 0.3 }\n".to_string(),
        "{\"llm_model\": \"m\", \"llm_limits\": {\"timeout_secs\": 30, \"attempts\": 2, \"max_cost\": 1.5}, \"model_prices\": {\"m\": {\"input_per_million\": 1, \"output_per_million\": 2}}, \"allowed_outside\": [\"/tmp\"]}".to_string(),
    ];
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    let path = root().join("examples/fuzzed-agent.json");
    check!().with_type::<Mutant>().with_iterations(iterations()).for_each(|m| {
        let (_, text) = m.apply(&seeds);
        if let Err(e) = attractor::task::agent::AgentConfig::parse(&text, &path) {
            assert_located(&e, &text);
        }
        std::fs::write(&settings, &text).unwrap();
        if let Err(attractor::service::settings::SettingsError::Invalid(e)) =
            attractor::service::settings::Settings::load(&settings)
        {
            assert_located(&e, &text);
        }
    });
}

#[test]
fn model_replies() {
    let seeds = vec![
        "```json\n{\"summary\": \"fix\", \"edits\": [{\"kind\": \"replace\", \"path\": \"slug.py\", \"search\": \"a\", \"replace\": \"b\"}]}\n```".to_string(),
        "<think>hmm: {</think>Here it is: {\"rationale\": \"x\", \"content\": \"y\"} and more }".to_string(),
        "{\"subtasks\": [{\"title\": \"a\", \"description\": \"b\", \"overseers\": [\"tests\"]}]}".to_string(),
    ];
    check!().with_type::<Mutant>().with_iterations(iterations()).for_each(|m| {
        let (_, text) = m.apply(&seeds);
        let _ = attractor::llm::parse_reply::<serde_json::Value>(&text);
        let _ = attractor::llm::balanced_spans(&text, 16);
        let _ = attractor::llm::fenced_blocks(&text);
        // A search/replace edit from such a reply, on a file like the one it names.
        let original = "def slug(s):\n    return s.lower()\n";
        let _ = attractor::executor::patch::apply(original, &text, "x");
        let _ = attractor::executor::patch::apply(&text, "return s.lower()", "return s");
    });
}

#[test]
fn test_outputs() {
    let dir = root().join("tests/fixtures/overseer");
    let mut seeds: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no tool output to start from");
    check!().with_type::<Mutant>().with_iterations(iterations()).for_each(|m| {
        let (_, text) = m.apply(&seeds);
        if let Some((_, r)) = attractor::overseer::parse::parse_tests(&text) {
            assert!(r.total >= r.passed && r.total >= r.failed, "{r:?}");
        }
        let _ = attractor::overseer::parse::parse_junit(&text);
        let _ = attractor::overseer::parse::parse_diagnostics(&text);
        let _ = attractor::overseer::parse::parse_security(&text);
    });
}

#[test]
fn random_bytes_as_any_file() {
    let path = root().join("examples/fuzzed.suite.yaml");
    check!().with_iterations(iterations()).for_each(|bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        if let Err(e) = attractor::suite::parse(&text, &path) {
            assert_located(&e, &text);
        }
        let _ = attractor::numeric::external::parse_external(&text, &path);
        let _ = attractor::llm::parse_reply::<serde_json::Value>(&text);
        let _ = attractor::overseer::parse::parse_tests(&text);
    });
}

/// The HTTP API in process: the real router over a real service on a
/// temporary database, no socket.
struct Api {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    _dir: tempfile::TempDir,
}

fn api() -> &'static Api {
    static API: OnceLock<Api> = OnceLock::new();
    API.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let config = attractor::service::ServiceConfig {
            db_path: dir.path().join("a.db"),
            settings_path: dir.path().join("settings.json"),
            runs_root: Some(dir.path().join("runs")),
            env: Arc::new(|_| None),
        };
        let service = runtime.block_on(attractor::service::Service::open(config)).unwrap();
        let router = attractor::http::router(service, None, None, attractor::http::Gzip::Off);
        Api { runtime, router, _dir: dir }
    })
}

#[test]
fn http_request_bodies() {
    // Bodies every state-changing route takes, to mutate; the suite paths
    // lead nowhere, so no launch can start.
    let routes = [
        ("POST", "/api/validate", r#"{"suite_path": "/nonexistent/a.suite.yaml"}"#),
        (
            "POST",
            "/api/launches/preview",
            r#"{"suite_path": "/nonexistent/a.suite.yaml", "epochs": 2, "optimizer": "evolve"}"#,
        ),
        (
            "POST",
            "/api/launches",
            r#"{"suite_path": "/nonexistent/a.suite.yaml", "epochs": 2, "optimizer": "evolve", "learning_rate": 0.5, "seed": 7}"#,
        ),
        (
            "PUT",
            "/api/settings",
            r#"{"llm_limits": {"timeout_secs": 30, "attempts": 3, "max_cost": 1.5}, "model_prices": {"m": {"input_per_million": 1, "output_per_million": 2}}, "allowed_outside": []}"#,
        ),
        ("POST", "/api/interventions/1/answer", r#"{"decision": "hint", "text": "try again"}"#),
        ("POST", "/api/artifacts/executor_preamble/rollback", r#"{"version": 0}"#),
    ];
    let seeds: Vec<String> = routes.iter().map(|(_, _, body)| body.to_string()).collect();
    // The router is only read; a failing input fails the test either way.
    let api = std::panic::AssertUnwindSafe(api());
    check!().with_type::<Mutant>().with_iterations(iterations() / 4).for_each(|m| {
        let (i, body) = m.apply(&seeds);
        let (method, uri, _) = routes[i];
        let request = axum::http::Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.clone()))
            .unwrap();
        let response = api.runtime.block_on(tower::ServiceExt::oneshot(api.router.clone(), request)).unwrap();
        assert!(!response.status().is_server_error(), "{method} {uri} {body:?}: {}", response.status());
    });
}
