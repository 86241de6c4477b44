//! Agent tasks end to end: a suite with a `kind: agent` task run by the outer
//! loop, the LLM executor talking to the scripted OpenAI-compatible server,
//! a real workspace (a small Python package under git) measured by real
//! overseer processes (`python3 -m unittest`, shell scripts), and the store
//! and the bus recording every iteration.
//!
//! The package has one function, `square(n)`, and ten unit tests (n = 1…10).
//! The scripted model answers with versions of `squares.py` that get a
//! chosen set of those tests right, so each test shapes the trajectory it
//! needs — converging, cycling, stalling, regressing — and checks what the
//! convergence engine did about it.

#[path = "../common/mod.rs"]
mod common;

mod convergence;
mod intervention_points;
mod memory_and_audit;
mod restarts;
mod steering;

use std::path::{Path, PathBuf};
use std::time::Duration;

use attractor::artifact::Registry;
use attractor::engine::{InterventionConfig, InterventionMode};
use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::llm::{LlmClient, LlmConfig};
use attractor::outer::{RunConfig, RunSummary};
use attractor::store::{InterventionRow, ObservationRow, RunRow, Store, TrajectoryRow};
use attractor::task::agent::AgentConfig;
use serde_json::{Value, json};
use tokio::sync::watch;

use common::squares::{Fixture, first, passing, squares, writes, wrong};

const OVERSEER: &str =
    "      - name: tests\n        kind: test\n        command: python3 -m unittest -v\n        timeout: 30\n";

impl Fixture {
    /// A suite with one agent task; `extra` is more YAML for the task
    /// (indented four spaces), `overseers` its overseer list entries.
    fn suite(&self, extra: &str, overseers: &str) -> PathBuf {
        let yaml = format!(
            "name: agent-suite\ntasks:\n  - name: squares\n    kind: agent\n    task: >-\n      Implement square(n) in \
             squares.py so that it returns n squared for every n from 1 to 10; the unit tests in test_squares.py \
             say what is expected.\n    workspace: pkg\n    hints:\n      - Compute n * n rather than looking it \
             up.\n{extra}    overseers:\n{overseers}"
        );
        let path = self.path("agent.suite.yaml");
        std::fs::write(&path, yaml).unwrap();
        path
    }

    fn config(&self, epochs: u32) -> RunConfig {
        common::squares::run_config(self.path("runs"), epochs)
    }

    async fn run(&self, suite: &Path, server: &ScriptedServer, agent: AgentConfig, epochs: u32) -> RunSummary {
        let (_tx, rx) = watch::channel(false);
        self.run_with_cancel(suite, server, agent, epochs, rx).await
    }

    async fn run_with_cancel(
        &self,
        suite: &Path,
        server: &ScriptedServer,
        agent: AgentConfig,
        epochs: u32,
        cancel: watch::Receiver<bool>,
    ) -> RunSummary {
        self.run_agent(suite, self.config(epochs), client(server), agent, &[], true, cancel).await
    }

    async fn runs(&self) -> Vec<RunRow> {
        let suite = self.store.suite_by_name("agent-suite").await.unwrap().unwrap();
        let mut out = Vec::new();
        for e in self.store.epochs(suite.id).await.unwrap() {
            out.extend(self.store.runs_of_epoch(e.id).await.unwrap());
        }
        out
    }

    /// The only trajectory of the last run, with its iterations.
    async fn last_trajectory(&self) -> (RunRow, TrajectoryRow, Vec<ObservationRow>) {
        let run = self.runs().await.pop().expect("a run");
        let t = self.store.trajectories_of_run(run.id).await.unwrap().pop().expect("a trajectory");
        let obs = self.store.observations_of_trajectory(&t.record.id).await.unwrap();
        (run, t, obs)
    }

    fn workspace_file(&self, t: &TrajectoryRow, name: &str) -> String {
        std::fs::read_to_string(Path::new(&t.record.workspace_dir).join(name)).unwrap()
    }
}

fn client(server: &ScriptedServer) -> LlmClient {
    let config = LlmConfig::new(server.base_url(), "scripted-model")
        .with_retries(0, Duration::from_millis(10))
        .with_timeout(Duration::from_secs(20));
    LlmClient::new(config).unwrap()
}

/// Fast settings for tests: no intent verification unless a test turns it
/// on, quick retries and polls.
fn quick() -> AgentConfig {
    let mut c = AgentConfig::default();
    c.verifier.enabled = false;
    c.overseers.retry_delay_ms = 20;
    c.intervention_poll_ms = 50;
    c
}

/// `quick()` for a test about something other than intervention points:
/// every point decides alone, so the escalations, ambiguities and partial
/// results the priority hints' table would pause on never wait for a person.
fn unattended() -> AgentConfig {
    let mut c = quick();
    c.engine.interventions = InterventionConfig::all(InterventionMode::Auto);
    c
}

fn scores(run: &RunRow) -> Value {
    serde_json::from_str(run.result_json.as_deref().unwrap_or("null")).unwrap()
}

/// The user message of request `i`.
fn user_message(server: &ScriptedServer, i: usize) -> String {
    server.requests()[i].messages().into_iter().find(|(r, _)| r == "user").map(|(_, c)| c).unwrap_or_default()
}

fn git_show(workspace: &str, commit: &str, file: &str) -> String {
    let out = std::process::Command::new("git")
        .args(["show", &format!("{commit}:{file}")])
        .current_dir(workspace)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `squares.py` failing exactly the tests of `wrong`.
fn failing(wrong: &[u32]) -> Vec<u32> {
    (1..=10).filter(|n| !wrong.contains(n)).collect()
}

fn verdicts(satisfied: bool) -> Value {
    json!({
        "satisfied": satisfied,
        "confidence": 0.9,
        "verdicts": [
            {"criterion": "square(n) is n squared for 1..10", "verdict": "pass", "failure_class": null,
             "evidence": "the table holds n*n"},
            {"criterion": "computes rather than looks up", "verdict": if satisfied { "pass" } else { "fail" },
             "failure_class": if satisfied { Value::Null } else { json!("logical") },
             "evidence": "ANSWERS is a lookup table"}
        ],
        "gaps": if satisfied { json!([]) } else { json!([{"description": "a lookup table, not n * n", "category": "incorrect"}]) }
    })
}

/// Polls until `check` holds (every 20 ms, at most 30 s).
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

impl Fixture {
    /// Runs the suite once while playing the person: every question the run
    /// raises is answered as `decide` says, until the run is over. Returns
    /// the questions, as they were asked.
    async fn run_answering(
        &self,
        suite: &Path,
        server: &ScriptedServer,
        agent: AgentConfig,
        mut decide: impl FnMut(&InterventionRow) -> (&'static str, Option<&'static str>),
    ) -> Vec<InterventionRow> {
        let done = std::sync::atomic::AtomicBool::new(false);
        let run = async {
            self.run(suite, server, agent, 1).await;
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        };
        let person = async {
            let mut asked = Vec::new();
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                for q in self.store.interventions(true).await.unwrap() {
                    let (answer, text) = decide(&q);
                    assert!(self.store.answer_intervention(q.id, answer, text).await.unwrap());
                    asked.push(q);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            asked
        };
        tokio::join!(run, person).1
    }

    async fn interventions_of_kind(&self, kind: &str) -> Vec<InterventionRow> {
        self.store.interventions(false).await.unwrap().into_iter().filter(|i| i.raised.kind == kind).collect()
    }

    /// The `intervention_point_reached` events of one point.
    async fn points(&self, point: &str) -> Vec<Value> {
        self.events("intervention_point_reached").await.into_iter().filter(|e| e["point"] == point).collect()
    }
}
