//! Agent tasks that run as more than one trajectory, end to end: parallel
//! samples on one shared budget, and a task split into subtasks with the
//! mandatory integration trajectory — with the LLM executor talking to the
//! scripted OpenAI-compatible server, real workspaces (a small Python
//! package under git) measured by real `python3 -m unittest` processes, and
//! the store and the bus recording every trajectory.
//!
//! The package has `square(n)` and ten unit tests (n = 1…10), measured by
//! two overseers: `low` runs tests 1–5, `high` tests 6–10. A subtask can be
//! measured by one of them; the task as a whole by both.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::llm::{LlmClient, LlmConfig};
use attractor::outer::RunSummary;
use attractor::store::{ObservationRow, RunRow, TrajectoryRow};
use attractor::task::agent::{AgentConfig, AgentState};
use serde_json::{Value, json};
use tokio::sync::watch;

fn unittest(tests: std::ops::RangeInclusive<u32>) -> String {
    tests.map(|n| format!(" test_squares.SquareTest.test_{n}")).collect()
}

/// Both overseers: tests 1–5 (`low`) and 6–10 (`high`).
fn overseers() -> String {
    format!(
        "      - name: low\n        kind: test\n        command: python3 -m unittest -v{}\n        timeout: 30\n\
         \x20     - name: high\n        kind: test\n        command: python3 -m unittest -v{}\n        timeout: 30\n",
        unittest(1..=5),
        unittest(6..=10)
    )
}

/// The split of the task into its two halves, as a model would propose it.
fn halves() -> Scripted {
    Scripted::json(&json!({
        "rationale": "the two halves of the table are independent",
        "subtasks": [
            {"name": "low squares", "specification": "Make square(n) right for n from 1 to 5.",
             "overseers": ["low"], "criteria": ["test_1 to test_5 pass"]},
            {"name": "high squares", "specification": "Make square(n) right for n from 6 to 10.",
             "overseers": ["high"], "criteria": ["test_6 to test_10 pass"]},
        ],
    }))
}

use common::squares::{Fixture, first, passing, squares, writes, wrong};

impl Fixture {
    /// A suite with one agent task; `extra` is more YAML for the task.
    fn suite(&self, extra: &str) -> PathBuf {
        let yaml = format!(
            "name: agent-suite\ntasks:\n  - name: squares\n    kind: agent\n    task: >-\n      Implement square(n) in \
             squares.py so that it returns n squared for every n from 1 to 10; the unit tests in test_squares.py \
             say what is expected.\n    workspace: pkg\n{extra}    overseers:\n{}",
            overseers()
        );
        let path = self.path("agent.suite.yaml");
        std::fs::write(&path, yaml).unwrap();
        path
    }

    async fn run(&self, suite: &Path, server: &ScriptedServer, agent: AgentConfig) -> RunSummary {
        let (_tx, rx) = watch::channel(false);
        self.run_with_cancel(suite, server, agent, rx).await
    }

    async fn run_with_cancel(
        &self,
        suite: &Path,
        server: &ScriptedServer,
        agent: AgentConfig,
        cancel: watch::Receiver<bool>,
    ) -> RunSummary {
        // A new store handle on the same file each time, as a new process would open it.
        let config = common::squares::run_config(self.path("runs"), 1);
        self.run_agent(suite, config, client(server), agent, &[], false, cancel).await
    }

    /// The run's trajectories by id.
    async fn trajectory(&self, id: &str) -> TrajectoryRow {
        self.store.trajectory(id).await.unwrap().unwrap_or_else(|| panic!("no trajectory {id}"))
    }

    async fn observations(&self, id: &str) -> Vec<ObservationRow> {
        self.store.observations_of_trajectory(id).await.unwrap()
    }

    async fn scores(&self, run: &RunRow) -> Value {
        let rows = self.store.epoch_runs_of_suite(run.suite_id).await.unwrap();
        serde_json::from_str(&rows.iter().find(|r| r.run_id == run.id).unwrap().scores_json).unwrap()
    }
}

fn client(server: &ScriptedServer) -> LlmClient {
    let config = LlmConfig::new(server.base_url(), "scripted-model")
        .with_retries(0, Duration::from_millis(10))
        .with_timeout(Duration::from_secs(120));
    LlmClient::new(config).unwrap()
}

fn quick() -> AgentConfig {
    let mut c = AgentConfig::default();
    c.verifier.enabled = false;
    c.overseers.retry_delay_ms = 20;
    c.intervention_poll_ms = 50;
    c
}

fn file(dir: &str, name: &str) -> String {
    std::fs::read_to_string(Path::new(dir).join(name)).unwrap()
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// The `(role, content)` messages of request `i`.
fn message(server: &ScriptedServer, i: usize, role: &str) -> String {
    server.requests()[i].messages().into_iter().find(|(r, _)| r == role).map(|(_, c)| c).unwrap_or_default()
}

fn git_show(workspace: &str, commit: &str, file: &str) -> String {
    let out = std::process::Command::new("git")
        .args(["show", &format!("{commit}:{file}")])
        .current_dir(workspace)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn three_samples_share_one_budget_and_the_first_to_converge_stops_the_others() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    parallel_samples: 3\n    budget:\n      max_loops: 9\n");
    // The three samples ask at once and get one of the first three answers
    // each, in whatever order they ask. The one given all ten converges; the
    // others' next answers would take a minute: they must be stopped, not
    // waited for.
    let server = ScriptedServer::start_repeating(
        vec![passing(3, "three"), passing(10, "all ten"), passing(4, "four")],
        Scripted::delayed(Duration::from_secs(60), passing(5, "five, too late")),
    )
    .await
    .unwrap();
    f.run(&suite, &server, quick()).await;

    let run = f.last_run().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    let rows = f.store.trajectories_of_run(run.id).await.unwrap();
    let group = f.trajectory(&format!("run-{}", run.id)).await;
    assert_eq!(
        (group.record.role.as_str(), group.status.as_str(), group.record.parent_id.as_deref()),
        ("parallel", "converged", None)
    );
    assert!(f.observations(&group.record.id).await.is_empty(), "the group makes no attempt itself");
    assert_eq!(json_of(&group.record.setup_json)["mode"], json!({"mode": "parallel", "initial_samples": 3}));
    let samples: Vec<&TrajectoryRow> = rows.iter().filter(|t| t.record.role == "sample").collect();
    assert_eq!(samples.len(), 3);
    let mut ordinals: Vec<i64> = samples.iter().map(|s| s.record.ordinal).collect();
    ordinals.sort();
    assert_eq!(ordinals, vec![1, 2, 3]);
    assert!(samples.iter().all(|s| s.record.parent_id.as_deref() == Some(group.record.id.as_str())));
    let mut dirs: Vec<&str> = samples.iter().map(|s| s.record.workspace_dir.as_str()).collect();
    dirs.sort();
    dirs.dedup();
    assert_eq!(dirs.len(), 3, "each sample works in its own copy of the workspace");

    // One converged; the other two were stopped and say by whom.
    let winners: Vec<&&TrajectoryRow> = samples.iter().filter(|s| s.status == "converged").collect();
    assert_eq!(winners.len(), 1, "{:?}", samples.iter().map(|s| &s.status).collect::<Vec<_>>());
    let winner = winners[0];
    let answered = f
        .observations(&winner.record.id)
        .await
        .into_iter()
        .filter(|o| o.record.execution_json.contains("all ten"))
        .count();
    assert_eq!(answered, 1, "an iteration keeps the answer it acted on");
    for s in samples.iter().filter(|s| s.record.id != winner.record.id) {
        assert_eq!(s.status, "superseded");
        assert_eq!(json_of(s.result_json.as_deref().unwrap())["superseded_by"], winner.record.id.as_str());
        // Stopped, not waited for: the late answer never became an iteration.
        let late = f
            .observations(&s.record.id)
            .await
            .into_iter()
            .filter(|o| o.record.execution_json.contains("too late"))
            .count();
        assert_eq!(late, 0, "sample {} waited for its late answer", s.record.ordinal);
    }
    assert_eq!(file(&winner.record.workspace_dir, "squares.py"), squares(&first(10)));

    // One budget: the samples together stayed inside it, and the group's row says what they used.
    let mut total = 0;
    for s in &samples {
        total += f.observations(&s.record.id).await.len();
    }
    assert!((1..=9).contains(&total), "{total} iterations");
    assert_eq!(group.iterations as usize, total);

    // The result is the winner's, in the run's own workspace.
    let result = json_of(group.result_json.as_deref().unwrap());
    assert_eq!(result["winner"], winner.record.id.as_str());
    assert_eq!(result["result"]["trajectory_id"], winner.record.id.as_str());
    assert_eq!(file(&group.record.workspace_dir, "squares.py"), squares(&first(10)));
    let scores = f.scores(&run).await;
    assert_eq!(scores["eval_score"], 1.0);
    assert_eq!(scores["metrics"]["trajectory_id"], group.record.id.as_str());

    // Every sample spoke on the bus under its own id.
    let started = f.events("parallel_sampling_started").await;
    assert_eq!(started[0]["samples"].as_array().unwrap().len(), 3);
    let mut ids: Vec<String> =
        f.events("trajectory_started").await.iter().map(|e| e["trajectory_id"].as_str().unwrap().to_string()).collect();
    ids.sort();
    let mut expected: Vec<String> = samples.iter().map(|s| s.record.id.clone()).collect();
    expected.sort();
    assert_eq!(ids, expected);
    let superseded = f.events("trajectory_superseded").await;
    assert_eq!(superseded.len(), 2);
    assert!(superseded.iter().all(|e| e["by"] == winner.record.id.as_str()));
    let finished = f.events("parallel_sampling_finished").await;
    assert_eq!(finished[0]["result_trajectory"], winner.record.id.as_str());
    assert!(
        f.events("iteration_completed").await.iter().all(|e| e["trajectory_id"] != group.record.id.as_str()),
        "iterations belong to samples"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn when_the_shared_budget_runs_out_the_best_observation_across_the_samples_is_the_result() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    parallel_samples: 2\n    budget:\n      max_loops: 5\n");
    // Five answers for five shared iterations; whichever sample gets the
    // eight-right one holds the best observation of the group.
    let server = ScriptedServer::start_repeating(
        vec![passing(2, "two"), passing(8, "eight"), passing(3, "three"), passing(4, "four"), passing(2, "two again")],
        passing(1, "one"),
    )
    .await
    .unwrap();
    f.run(&suite, &server, quick()).await;

    let run = f.last_run().await;
    let group = f.trajectory(&format!("run-{}", run.id)).await;
    let samples = f.store.child_trajectories(&group.record.id).await.unwrap();
    assert_eq!(samples.len(), 2);
    let mut total = 0;
    let mut best: Option<(f64, String)> = None;
    let mut seen_by_any = 0;
    for s in &samples {
        let obs = f.observations(&s.record.id).await;
        total += obs.len();
        for o in &obs {
            if best.as_ref().is_none_or(|(l, _)| o.record.level > *l) {
                best = Some((o.record.level, s.record.id.clone()));
            }
        }
        // Each sample's engine saw the group's spending, not only its own.
        let state: AgentState = serde_json::from_str(&s.record.state_json).unwrap();
        seen_by_any = seen_by_any.max(state.trajectory.budget.iterations_used as usize);
        assert!(!obs.iter().any(|o| o.record.loop_control == "converged"));
    }
    assert!(total <= 5, "the samples together used {total} of 5 iterations");
    assert_eq!(seen_by_any, total, "the last sample to record saw every iteration of the group");
    let (best_level, holder) = best.unwrap();
    assert!((best_level - (0.55 * 0.8 + 0.45)).abs() < 1e-9, "the eight-right answer: {best_level}");

    // The group's result is that observation, accepted as partial (0.89 ≥ 0.7).
    assert_eq!((run.status.as_str(), group.status.as_str()), ("partial", "accepted_partial"), "{:?}", run.error);
    assert!((group.final_level.unwrap() - best_level).abs() < 1e-9);
    let result = json_of(group.result_json.as_deref().unwrap());
    assert_eq!(result["result"]["trajectory_id"], holder.as_str());
    assert_eq!(result["winner"], Value::Null);
    assert_eq!(file(&group.record.workspace_dir, "squares.py"), squares(&first(8)));
    let scores = f.scores(&run).await;
    assert!((scores["eval_score"].as_f64().unwrap() - best_level).abs() < 1e-9, "{scores}");
    assert_eq!(scores["budget_remaining_pct"], 0.0);
    assert!(f.events("trajectory_superseded").await.is_empty(), "nobody converged, nobody was superseded");
    server.shutdown().await;
}

#[tokio::test]
async fn a_split_task_runs_its_subtasks_in_order_then_the_integration_trajectory_decides() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 8\n");
    let mut config = quick();
    config.engine.decomposition.proactive = attractor::engine::ProactiveDecomposition::Always;
    let server = ScriptedServer::start(vec![
        halves(),
        // Subtask 1 gets its half right.
        passing(5, "low half"),
        // Subtask 2 gets its half right and breaks the other: its own check passes.
        writes(&squares(&[6, 7, 8, 9, 10]), "high half, low half dropped"),
        // The integration sees the whole broken, repairs part of it, then all.
        passing(7, "seven"),
        passing(10, "the whole table"),
    ])
    .await
    .unwrap();
    f.run(&suite, &server, config).await;

    let run = f.last_run().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    let root = f.trajectory(&format!("run-{}", run.id)).await;
    let (d1, d2, integration) = (
        f.trajectory(&format!("{}.d1", root.record.id)).await,
        f.trajectory(&format!("{}.d2", root.record.id)).await,
        f.trajectory(&format!("{}.integration", root.record.id)).await,
    );
    assert_eq!((root.record.role.as_str(), root.status.as_str()), ("root", "converged"));
    for (t, role, ordinal) in [(&d1, "subtask", 1), (&d2, "subtask", 2), (&integration, "integration", 3)] {
        assert_eq!(
            (t.record.role.as_str(), t.record.ordinal, t.record.parent_id.as_deref()),
            (role, ordinal, Some(root.record.id.as_str()))
        );
    }
    assert!(f.observations(&root.record.id).await.is_empty(), "split before its first attempt");

    // Budgets: a quarter of the 8 iterations for the integration, the rest shared by the subtasks.
    let budget = |t: &TrajectoryRow| json_of(&t.record.setup_json)["budget"]["max_iterations"].as_u64().unwrap();
    assert_eq!((budget(&d1), budget(&d2), budget(&integration)), (3, 3, 2));

    // Each subtask worked from its own specification and was measured by its own check.
    assert!(message(&server, 0, "system").contains("\"subtasks\""));
    assert!(message(&server, 0, "user").contains("`low` (test)"), "{}", message(&server, 0, "user"));
    let p1 = message(&server, 1, "user");
    assert!(p1.contains("subtask 1 of 2") && p1.contains("Make square(n) right for n from 1 to 5."), "{p1}");
    assert!(p1.contains("test_1 to test_5 pass"), "{p1}");
    assert!(message(&server, 2, "user").contains("Make square(n) right for n from 6 to 10."));
    let (o1, o2, oi) = (
        f.observations(&d1.record.id).await,
        f.observations(&d2.record.id).await,
        f.observations(&integration.record.id).await,
    );
    assert_eq!(
        (d1.status.as_str(), o1.len(), o1[0].record.verdict_summary.as_str()),
        ("converged", 1, "5 of 5 tests pass")
    );
    assert_eq!(
        (d2.status.as_str(), o2.len(), o2[0].record.verdict_summary.as_str()),
        ("converged", 1, "5 of 5 tests pass")
    );

    // Subtask 2 started from subtask 1's result, the integration from subtask 2's.
    let initial = |t: &TrajectoryRow| serde_json::from_str::<AgentState>(&t.record.state_json).unwrap().initial_commit;
    assert_eq!(git_show(&d2.record.workspace_dir, &initial(&d2), "squares.py"), squares(&first(5)));
    assert_eq!(
        git_show(&integration.record.workspace_dir, &initial(&integration), "squares.py"),
        squares(&[6, 7, 8, 9, 10])
    );

    // The integration is measured by every check, was told what the subtasks did, and decided.
    let pi = message(&server, 3, "user");
    assert!(pi.contains("1. low squares — Make square(n) right for n from 1 to 5. (ended converged"), "{pi}");
    // Judged against its own baseline (6 to 10 passing, 1 to 5 failing):
    // its first attempt fixed the five targets and broke three tests.
    assert_eq!(
        oi[0].record.verdict_summary,
        "7 of 10 tests pass, 5 of 5 target tests pass; 3 tests that passed before the first change now fail \
         (test_squares.SquareTest.test_10, test_squares.SquareTest.test_8, test_squares.SquareTest.test_9)"
    );
    assert_eq!((integration.status.as_str(), oi.len()), ("converged", 2), "it used its whole quarter");
    assert_eq!(root.final_level, integration.final_level);
    assert_eq!(file(&root.record.workspace_dir, "squares.py"), squares(&first(10)));
    let result = json_of(root.result_json.as_deref().unwrap());
    assert_eq!(result["end"], "decomposed");
    assert_eq!(result["result"]["trajectory_id"], integration.record.id.as_str());
    assert_eq!(result["decomposition"]["subtasks"][1]["name"], "high squares");
    assert_eq!(result["decomposition"]["subtasks"][1]["overseers"], json!(["high"]));
    assert_eq!(f.scores(&run).await["eval_score"], 1.0);

    let recommended = f.events("decomposition_recommended").await;
    assert_eq!((recommended[0]["subtask_count"].as_u64(), recommended[0]["applied"].as_bool()), (Some(2), Some(true)));
    let split = f.events("decomposition_started").await;
    assert_eq!(split[0]["proactive"], true);
    assert_eq!(split[0]["children"], json!([d1.record.id, d2.record.id]));
    assert_eq!(split[0]["integration"], integration.record.id.as_str());
    let converged: Vec<String> = f
        .events("trajectory_converged")
        .await
        .iter()
        .map(|e| e["trajectory_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        converged,
        vec![d1.record.id.clone(), d2.record.id.clone(), integration.record.id.clone(), root.record.id.clone()]
    );

    // `attractor trajectory RUN` shows the tree.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
        .arg("--db")
        .arg(f.path("attractor.db"))
        .args(["trajectory", &run.id.to_string()])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let heads: Vec<&str> = text.lines().filter(|l| l.contains(" — task `")).collect();
    assert_eq!(heads.len(), 4, "{text}");
    assert!(heads[0].starts_with(&format!("trajectory {} ", root.record.id)), "{text}");
    assert!(heads[1].starts_with(&format!("├─ subtask 1 {} ", d1.record.id)), "{text}");
    assert!(heads[2].starts_with(&format!("├─ subtask 2 {} ", d2.record.id)), "{text}");
    assert!(heads[3].starts_with(&format!("└─ integration {} ", integration.record.id)), "{text}");
    assert!(text.contains("split before its first attempt into 2 subtasks"), "{text}");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
        .arg("--db")
        .arg(f.path("attractor.db"))
        .args(["--json", "trajectory", &run.id.to_string()])
        .output()
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let order: Vec<(&str, u64)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["trajectory"]["role"].as_str().unwrap(), t["trajectory"]["depth"].as_u64().unwrap()))
        .collect();
    assert_eq!(order, vec![("root", 0), ("subtask", 1), ("subtask", 1), ("integration", 1)]);
    server.shutdown().await;
}

#[tokio::test]
async fn the_engine_choosing_decompose_splits_a_stalled_trajectory_into_children() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 11\n");
    // Stalled at a low level the seed offers decompose or an architect review;
    // with the review off, the engine's choice is the split.
    let mut config = quick();
    config.engine.disabled_strategies = vec![attractor::engine::StrategyKind::ArchitectReview];
    // The engine's own choice, taken without asking (a split is an escalation a person is asked about by default).
    config.engine.interventions.strategy_escalation = Some(attractor::engine::InterventionMode::Auto);
    let server = ScriptedServer::start(vec![
        wrong(2),
        wrong(3),
        wrong(5),
        halves(),
        passing(5, "low half"),
        passing(10, "both halves"),
        passing(10, "checked the whole"),
    ])
    .await
    .unwrap();
    f.run(&suite, &server, config).await;

    let run = f.last_run().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    let root = f.trajectory(&format!("run-{}", run.id)).await;
    let obs = f.observations(&root.record.id).await;
    assert_eq!(obs.len(), 3);
    assert_eq!(
        (obs[2].record.attractor.as_str(), obs[2].record.next_strategy.as_deref()),
        ("plateau", Some("decompose"))
    );
    let proposal = message(&server, 3, "user");
    assert!(proposal.contains("Strategy for this attempt: decompose"), "{proposal}");

    // What was left (8 of 11 iterations) was shared: 3 + 3 for the subtasks, 2 for the integration.
    let children = f.store.child_trajectories(&root.record.id).await.unwrap();
    let roles: Vec<&str> = children.iter().map(|c| c.record.role.as_str()).collect();
    assert_eq!(roles, vec!["subtask", "subtask", "integration"]);
    let budget = |t: &TrajectoryRow| json_of(&t.record.setup_json)["budget"]["max_iterations"].as_u64().unwrap();
    assert_eq!(children.iter().map(budget).collect::<Vec<_>>(), vec![3, 3, 2]);
    assert!(children.iter().all(|c| c.status == "converged"));
    assert_eq!(root.status, "converged");
    assert_eq!(file(&root.record.workspace_dir, "squares.py"), squares(&first(10)));

    let state: AgentState = serde_json::from_str(&root.record.state_json).unwrap();
    let split = state.coordination.expect("the split is kept with the state");
    assert!(!split.proactive);
    assert_eq!(split.start_commit, obs[2].record.commit_id, "the subtasks start from where the trajectory stood");
    let started = f.events("decomposition_started").await;
    assert_eq!(started[0]["proactive"], false);
    assert_eq!(started[0]["trajectory_id"], root.record.id.as_str());
    assert!(f.events("decomposition_recommended").await.is_empty(), "not asked for at setup");
    server.shutdown().await;
}

#[tokio::test]
async fn a_proposal_that_is_not_json_leaves_the_task_whole_with_the_reason_recorded() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 4\n");
    let mut config = quick();
    config.engine.decomposition.proactive = attractor::engine::ProactiveDecomposition::Always;
    let server = ScriptedServer::start(vec![
        Scripted::reply("Sure! First do the low half, then the high half."),
        // The correction round gets no better.
        Scripted::reply("{\"subtasks\": [\"low\", "),
        passing(10, "all ten"),
    ])
    .await
    .unwrap();
    f.run(&suite, &server, config).await;

    let run = f.last_run().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    let rows = f.store.trajectories_of_run(run.id).await.unwrap();
    assert_eq!(rows.len(), 1, "no subtask was started");
    let root = &rows[0];
    assert_eq!((root.record.role.as_str(), root.status.as_str()), ("root", "converged"));
    let setup = json_of(&root.record.setup_json);
    assert_eq!(setup["decomposition"]["applied"], false);
    let reason = setup["decomposition"]["reason"].as_str().unwrap();
    assert!(reason.contains("not a usable split"), "{reason}");
    let failed = f.events("decomposition_failed").await;
    assert_eq!((failed[0]["proactive"].as_bool(), failed[0]["reason"].as_str()), (Some(true), Some(reason)));
    assert_eq!(server.requests().len(), 3);
    server.shutdown().await;
}

#[tokio::test]
async fn a_split_into_no_subtasks_is_set_aside_and_the_trajectory_goes_on() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 8\n");
    let mut config = quick();
    config.engine.disabled_strategies = vec![attractor::engine::StrategyKind::ArchitectReview];
    // The engine's own choice, taken without asking (a split is an escalation a person is asked about by default).
    config.engine.interventions.strategy_escalation = Some(attractor::engine::InterventionMode::Auto);
    let server = ScriptedServer::start(vec![
        wrong(2),
        wrong(3),
        wrong(5),
        Scripted::json(&json!({"rationale": "nothing to split", "subtasks": []})),
        passing(10, "all ten"),
    ])
    .await
    .unwrap();
    f.run(&suite, &server, config).await;

    let run = f.last_run().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    let root = f.trajectory(&format!("run-{}", run.id)).await;
    assert!(f.store.child_trajectories(&root.record.id).await.unwrap().is_empty());
    let obs = f.observations(&root.record.id).await;
    assert_eq!(obs[2].record.next_strategy.as_deref(), Some("decompose"));
    assert_eq!(obs.len(), 4);
    assert_ne!(obs[3].record.strategy, "decompose", "another strategy was chosen instead");
    assert_eq!(obs[3].record.loop_control, "converged");
    let state: AgentState = serde_json::from_str(&root.record.state_json).unwrap();
    assert!(state.trajectory.unavailable.contains(&attractor::engine::StrategyKind::Decompose));
    assert!(state.coordination.is_none());
    let result = json_of(root.result_json.as_deref().unwrap());
    let notes = result["notes"].as_array().unwrap();
    assert!(notes.iter().any(|n| n.as_str().unwrap().contains("the model proposed no subtasks")), "{result}");
    let failed = f.events("decomposition_failed").await;
    assert_eq!(failed.len(), 1);
    assert_eq!(
        (failed[0]["proactive"].as_bool(), failed[0]["reason"].as_str()),
        (Some(false), Some("the model proposed no subtasks"))
    );
    server.shutdown().await;
}

/// Polls until `check` holds (every 20 ms, at most 30 s).
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn parallel_samples_stopped_by_a_restart_resume_where_they_were() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    parallel_samples: 2\n    budget:\n      max_loops: 8\n");
    // First process: each sample makes one attempt, then waits on a slow
    // model until the run is stopped (Ctrl-C).
    let server = ScriptedServer::start_repeating(
        vec![passing(3, "three"), passing(4, "four")],
        Scripted::delayed(Duration::from_secs(60), passing(5, "never answered")),
    )
    .await
    .unwrap();
    let (stop, cancel) = watch::channel(false);
    let watcher = async {
        until("one observation in each sample", || async {
            let Some(suite) = f.store.suite_by_name("agent-suite").await.unwrap() else { return false };
            let Some(epoch) = f.store.epochs(suite.id).await.unwrap().pop() else { return false };
            let Some(run) = f.store.runs_of_epoch(epoch.id).await.unwrap().pop() else { return false };
            let samples = f.store.child_trajectories(&format!("run-{}", run.id)).await.unwrap();
            let mut with_one = 0;
            for s in &samples {
                with_one += usize::from(f.store.observations_of_trajectory(&s.record.id).await.unwrap().len() == 1);
            }
            samples.len() == 2 && with_one == 2
        })
        .await;
        stop.send(true).unwrap();
    };
    let (summary, ()) = tokio::join!(f.run_with_cancel(&suite, &server, quick(), cancel), watcher);
    assert!(summary.interrupted);
    let first_run = f.last_run().await;
    let group_id = format!("run-{}", first_run.id);
    let group = f.trajectory(&group_id).await;
    assert_eq!((first_run.status.as_str(), group.status.as_str()), ("cancelled", "running"));
    let samples = f.store.child_trajectories(&group_id).await.unwrap();
    assert!(samples.iter().all(|s| s.status == "running"), "stopped, not ended");
    server.shutdown().await;

    // Second process: the same group goes on; the samples continue at their
    // second attempt, and the one given all ten wins.
    let server = ScriptedServer::start_repeating(
        vec![passing(10, "all ten"), passing(6, "six")],
        Scripted::delayed(Duration::from_secs(60), passing(7, "never answered")),
    )
    .await
    .unwrap();
    let summary = f.run(&suite, &server, quick()).await;
    assert!(!summary.interrupted && summary.epochs[0].resumed);
    let run = f.last_run().await;
    assert_ne!(run.id, first_run.id);
    let group = f.trajectory(&group_id).await;
    assert_eq!((group.record.run_id, group.status.as_str()), (run.id, "converged"), "the group was continued");
    let samples = f.store.child_trajectories(&group_id).await.unwrap();
    assert!(samples.iter().all(|s| s.record.run_id == run.id), "its samples moved to the new run with it");
    let statuses: Vec<&str> = samples.iter().map(|s| s.status.as_str()).collect();
    assert!(statuses.contains(&"converged"), "{statuses:?}");
    for s in &samples {
        let obs = f.observations(&s.record.id).await;
        assert_eq!(obs[0].record.sequence, 0);
        if s.status == "converged" {
            assert_eq!(
                obs.iter().map(|o| o.record.sequence).collect::<Vec<_>>(),
                vec![0, 1],
                "continued, not restarted"
            );
        }
    }
    let started = f.events("parallel_sampling_started").await;
    assert_eq!(started.iter().map(|e| e["resumed"].as_bool().unwrap()).collect::<Vec<_>>(), vec![false, true]);
    assert_eq!(f.scores(&run).await["eval_score"], 1.0);
    server.shutdown().await;
}

#[tokio::test]
async fn a_split_stopped_by_a_restart_goes_on_with_the_next_subtask() {
    let f = Fixture::new("agent-suite").await;
    let suite = f.suite("    budget:\n      max_loops: 8\n");
    let mut config = quick();
    config.engine.decomposition.proactive = attractor::engine::ProactiveDecomposition::Always;
    // First process: the split and subtask 1, then subtask 2 waits on a slow model until stopped.
    let server = ScriptedServer::start_repeating(
        vec![halves(), passing(5, "low half")],
        Scripted::delayed(Duration::from_secs(60), passing(10, "never answered")),
    )
    .await
    .unwrap();
    let (stop, cancel) = watch::channel(false);
    let watcher = async {
        until("subtask 2 to start", || async {
            let Some(suite) = f.store.suite_by_name("agent-suite").await.unwrap() else { return false };
            let Some(epoch) = f.store.epochs(suite.id).await.unwrap().pop() else { return false };
            let Some(run) = f.store.runs_of_epoch(epoch.id).await.unwrap().pop() else { return false };
            f.store.trajectory(&format!("run-{}.d2", run.id)).await.unwrap().is_some() && server.requests().len() == 3
        })
        .await;
        stop.send(true).unwrap();
    };
    let (summary, ()) = tokio::join!(f.run_with_cancel(&suite, &server, config.clone(), cancel), watcher);
    assert!(summary.interrupted);
    let first_run = f.last_run().await;
    let root_id = format!("run-{}", first_run.id);
    assert_eq!(f.trajectory(&root_id).await.status, "coordinating");
    assert_eq!(f.trajectory(&format!("{root_id}.d1")).await.status, "converged");
    assert_eq!(f.trajectory(&format!("{root_id}.d2")).await.status, "running");
    server.shutdown().await;

    // Second process: subtask 1 is not done again; subtask 2 and the integration run.
    let server = ScriptedServer::start(vec![passing(10, "high half"), passing(10, "checked")]).await.unwrap();
    let summary = f.run(&suite, &server, config).await;
    assert!(!summary.interrupted && summary.epochs[0].resumed);
    let run = f.last_run().await;
    assert_eq!(run.status, "complete", "{:?}", run.error);
    let root = f.trajectory(&root_id).await;
    assert_eq!((root.record.run_id, root.status.as_str()), (run.id, "converged"));
    assert_eq!(f.observations(&format!("{root_id}.d1")).await.len(), 1);
    let d2 = f.trajectory(&format!("{root_id}.d2")).await;
    assert_eq!((d2.status.as_str(), d2.record.run_id), ("converged", run.id));
    assert_eq!(f.trajectory(&format!("{root_id}.integration")).await.status, "converged");
    assert_eq!(server.requests().len(), 2, "no proposal again, no subtask repeated");
    assert!(message(&server, 0, "user").contains("Make square(n) right for n from 6 to 10."));
    assert_eq!(f.events("decomposition_started").await.len(), 1);
    assert_eq!(file(&root.record.workspace_dir, "squares.py"), squares(&first(10)));
    server.shutdown().await;
}
