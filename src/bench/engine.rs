//! The convergence engine's benchmark (`attractor bench engine`).
//!
//! Part one, the control loop's cost on real agent runs: suites of small agent
//! tasks (a real git workspace each, a real test runner as the overseer —
//! `python3 -m unittest` on one test, measured with a baseline and canaries
//! as any real project's tests are) whose executor
//! talks to a scripted OpenAI-compatible server answering at a fixed latency.
//! From the stored iterations it reports the control overhead per iteration —
//! everything that is neither the model call nor the overseers: prompt
//! building, applying and committing the edits, the engine's decision, the
//! store and the bus — as a share of the iteration, and the throughput in
//! iterations per second with 1, 8 and 32 trajectories at once.
//!
//! Part two, the engine's decisions on a simulated population: tasks whose
//! overseer signals follow one of four shapes — converging (every attempt
//! gains), oscillating (two wrong answers in turn until an exploring strategy
//! breaks the cycle, far apart or close) and plateauing (stuck until a fresh
//! start or another approach) — run by the real [`Engine`] (attractor classification, bandit,
//! goal gradient, loop control) and by a plain loop of five retries with
//! feedback. Tokens per attempt are each strategy's estimated cost. The
//! shapes' rules are this module's model of how tasks respond to strategies,
//! stated in [`Shape`]; they are not measurements of a real model.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use tokio::sync::watch;

use super::outer::BenchError;
use crate::artifact::Registry;
use crate::bus::Bus;
use crate::engine::budget::ConvergenceBudget;
use crate::engine::{
    ConvergencePolicy, Engine, EngineConfig, LoopControl, Observation, SpecificationEvolution, StrategyBandit,
    StrategyKind, Trajectory,
};
use crate::llm::scripted::{Scripted, ScriptedServer};
use crate::llm::{LlmClient, LlmConfig};
use crate::outer::tree::TreeConfig;
use crate::outer::{DEFAULT_HOLDOUT_TOLERANCE, OptimizerKind, RunConfig, SuiteRunner};
use crate::overseer::OverseerSignals;
use crate::overseer::signals::{BuildResult, TestResults};
use crate::store::Store;
use crate::task::agent::AgentConfig;
use crate::workspace::ArtifactReference;

fn err(e: impl std::fmt::Display) -> BenchError {
    BenchError(e.to_string())
}

// ----- part one: the control loop on real runs ---------------------------------

/// One suite of `trajectories` agent tasks run at once.
#[derive(Debug, Clone, Serialize)]
pub struct LoopTiming {
    pub trajectories: usize,
    pub latency_ms: u64,
    pub iterations: usize,
    pub seconds: f64,
    /// Mean wall time of an iteration (a trajectory's span over its iterations).
    pub iteration_ms: f64,
    /// Mean time of the executor: the model call, applying and committing the edits.
    pub execution_ms: f64,
    /// Mean time of the overseer processes.
    pub overseer_ms: f64,
}

impl LoopTiming {
    /// Everything else in an iteration — the engine's decision, prompt
    /// building, the store, the bus, the trajectory's setup and end — in
    /// milliseconds.
    pub fn overhead_ms(&self) -> f64 {
        (self.iteration_ms - self.execution_ms - self.overseer_ms).max(0.0)
    }

    pub fn overhead_share(&self) -> f64 {
        self.overhead_ms() / self.iteration_ms.max(1e-9)
    }

    pub fn throughput(&self) -> f64 {
        self.iterations as f64 / self.seconds.max(1e-9)
    }
}

/// Writes a suite of `n` agent tasks, each asked to write `done` into its
/// own `answer.txt`, checked by a unittest test.
fn write_suite(dir: &Path, n: usize, iterations: u32) -> Result<PathBuf, BenchError> {
    let mut yaml = String::from("name: engine-bench\ntasks:\n");
    for i in 0..n {
        let ws = dir.join(format!("ws{i}"));
        std::fs::create_dir_all(&ws).map_err(err)?;
        std::fs::write(ws.join("answer.txt"), "todo\n").map_err(err)?;
        // A real test runner, so that every measurement is judged as a real
        // project's is: a baseline first, canaries planted, tests by name.
        std::fs::write(
            ws.join("test_answer.py"),
            "import unittest\n\n\nclass AnswerTest(unittest.TestCase):\n    def test_done(self):\n        \
             with open('answer.txt') as f:\n            self.assertEqual(f.read().strip(), 'done')\n",
        )
        .map_err(err)?;
        yaml.push_str(&format!(
            "  - name: t{i}\n    kind: agent\n    task: Write the word done into answer.txt.\n    workspace: ws{i}\n    \
             budget:\n      max_loops: {iterations}\n    overseers:\n      - name: tests\n        kind: test\n        \
             command: python3 -m unittest\n"
        ));
    }
    let path = dir.join("engine.suite.yaml");
    std::fs::write(&path, yaml).map_err(err)?;
    Ok(path)
}

/// Runs `n` trajectories at once for `iterations` iterations each (the model
/// never gets the answer right, so every trajectory uses its whole budget).
pub async fn loop_timing(work: &Path, n: usize, iterations: u32, latency: Duration) -> Result<LoopTiming, BenchError> {
    let dir = work.join(format!("loop-{n}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(err)?;
    let suite_path = write_suite(&dir, n, iterations)?;
    // Each reply rewrites the file with another wrong word, so every
    // iteration changes the workspace and commits, as real attempts do.
    let wrong = Scripted::json(&serde_json::json!({
        "summary": "write the answer", "tools_used": [],
        "edits": [{"path": "answer.txt", "action": "write", "content": "nearly\n"}]
    }));
    let server = ScriptedServer::start_repeating(vec![], Scripted::delayed(latency, wrong)).await.map_err(err)?;
    let client = LlmClient::new(
        LlmConfig::new(server.base_url(), "bench-scripted")
            .with_retries(0, Duration::from_millis(10))
            .with_timeout(latency + Duration::from_secs(60))
            .with_cache(false),
    )
    .map_err(err)?;
    let mut agent = AgentConfig::default();
    agent.verifier.enabled = false;
    agent.memory.enabled = false;
    // Nobody answers during a benchmark: every intervention point decides
    // alone (a stalled trajectory would otherwise pause on its escalation).
    agent.engine.interventions = crate::engine::InterventionConfig::all(crate::engine::InterventionMode::Auto);
    let config = RunConfig {
        epochs: 1,
        optimizer: OptimizerKind::Baseline,
        learning_rate: 0.5,
        rollback_on_regression: false,
        concurrency: n,
        seed: 1,
        runs_root: dir.join("runs"),
        holdout_tolerance: DEFAULT_HOLDOUT_TOLERANCE,
        verify_repeats: None,
        approve_updates: None,
        tree: TreeConfig::default(),
    };
    let store = Store::open(&dir.join("attractor.db")).await.map_err(err)?;
    let suite = crate::suite::load(&suite_path).map_err(err)?;
    let registry = Registry::load(store.clone()).await.map_err(err)?;
    let (_tx, cancel) = watch::channel(false);
    let runner = SuiteRunner::new(store.clone(), registry, Bus::new(), suite, config, cancel)
        .with_agent_llm(client)
        .with_agent_config(agent);
    let started = Instant::now();
    runner.run().await.map_err(err)?;
    let seconds = started.elapsed().as_secs_f64();
    server.shutdown().await;

    // Per trajectory: its whole span (start to finish) against what its
    // iterations spent in the executor and the overseers.
    let (mut iterations_done, mut iteration_ms, mut execution_ms, mut overseer_ms) = (0usize, 0.0, 0.0, 0.0);
    for (id, started_at, finished_at) in store.trajectory_spans().await.map_err(err)? {
        let Some(finished_at) = finished_at else { continue };
        let span = parse_time(&finished_at)? - parse_time(&started_at)?;
        iteration_ms += span.num_microseconds().unwrap_or(0) as f64 / 1000.0;
        // The baseline (iteration 0) is one more measurement: the overseers'
        // time, not the control loop's.
        if let Some(b) = store.baseline_of_trajectory(&id).await.map_err(err)? {
            overseer_ms += overseer_time_ms(&b.record.overseer_runs_json);
        }
        for o in store.observations_of_trajectory(&id).await.map_err(err)? {
            // An observation's wall time spans the executor, the overseers
            // and the verifier; the overseers' own durations are stored too.
            let overseers = overseer_time_ms(&o.record.overseer_runs_json);
            execution_ms += (o.record.wall_time_ms as f64 - overseers).max(0.0);
            overseer_ms += overseers;
            iterations_done += 1;
        }
    }
    store.close().await;
    let k = iterations_done.max(1) as f64;
    Ok(LoopTiming {
        trajectories: n,
        latency_ms: latency.as_millis() as u64,
        iterations: iterations_done,
        seconds,
        iteration_ms: iteration_ms / k,
        execution_ms: execution_ms / k,
        overseer_ms: overseer_ms / k,
    })
}

fn parse_time(s: &str) -> Result<chrono::DateTime<chrono::FixedOffset>, BenchError> {
    chrono::DateTime::parse_from_rfc3339(s).map_err(|e| BenchError(format!("bad timestamp {s:?}: {e}")))
}

/// The summed duration of the overseer runs stored with an observation.
fn overseer_time_ms(json: &str) -> f64 {
    let Ok(serde_json::Value::Array(runs)) = serde_json::from_str::<serde_json::Value>(json) else { return 0.0 };
    runs.iter()
        .map(|r| {
            let d = &r["duration"];
            d["secs"].as_f64().unwrap_or(0.0) * 1000.0 + d["nanos"].as_f64().unwrap_or(0.0) / 1e6
        })
        .sum()
}

// ----- part two: the engine's decisions on a simulated population ----------------

/// How a simulated task answers the strategies tried on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Shape {
    /// Every attempt passes two or three more of its ten tests.
    Converging,
    /// Exploiting strategies (retry, refine, focused repair) alternate
    /// between two wrong answers (6 of 10 each, different tests failing);
    /// after an exploring strategy (reframe, another approach, an architect
    /// review, a fresh start, a decomposition) every attempt gains three.
    Oscillating,
    /// Like `Oscillating`, but the two wrong answers are close: 6 and 7 of
    /// 10, with three failures shared.
    CloseOscillating,
    /// Stuck at 5 to 8 of 10 whatever is retried; a fresh start or another
    /// approach unlocks it, after which every attempt gains three.
    Plateauing,
}

impl Shape {
    pub const ALL: [Shape; 4] = [Shape::Converging, Shape::Oscillating, Shape::CloseOscillating, Shape::Plateauing];

    pub fn name(self) -> &'static str {
        match self {
            Shape::Converging => "converging",
            Shape::Oscillating => "oscillating",
            Shape::CloseOscillating => "close oscillation",
            Shape::Plateauing => "plateauing",
        }
    }

    fn unlocks(self, s: StrategyKind) -> bool {
        use StrategyKind::*;
        match self {
            Shape::Converging => true,
            Shape::Oscillating | Shape::CloseOscillating => {
                matches!(s, Reframe | AlternativeApproach | ArchitectReview | FreshStart | Decompose)
            }
            Shape::Plateauing => matches!(s, FreshStart | AlternativeApproach),
        }
    }
}

/// One simulated task: its shape, and where it is.
struct SimTask {
    shape: Shape,
    passed: u32,
    unlocked: bool,
    flip: bool,
    plateau: u32,
}

impl SimTask {
    fn new(shape: Shape, rng: &mut ChaCha8Rng) -> SimTask {
        SimTask {
            shape,
            passed: rng.random_range(1..=3),
            unlocked: false,
            flip: false,
            plateau: rng.random_range(5..=8),
        }
    }

    /// The overseers' reading after `strategy` ran.
    fn attempt(&mut self, strategy: StrategyKind, rng: &mut ChaCha8Rng) -> OverseerSignals {
        if self.shape.unlocks(strategy) {
            self.unlocked = true;
        }
        match (self.shape, self.unlocked) {
            (Shape::Converging, _) => self.passed = (self.passed + rng.random_range(2..=3)).min(10),
            (_, true) => self.passed = (self.passed.max(5) + 3).min(10),
            (Shape::Oscillating, false) => {
                self.flip = !self.flip;
                return signals(6, self.flip);
            }
            (Shape::CloseOscillating, false) => {
                self.flip = !self.flip;
                return close(self.flip);
            }
            (Shape::Plateauing, false) => self.passed = self.plateau,
        }
        signals(self.passed, false)
    }
}

/// `passed` of ten tests pass: the first ones, or with `shifted` the last
/// ones (the other side of an oscillation fails other tests).
fn signals(passed: u32, shifted: bool) -> OverseerSignals {
    let names: Vec<String> = (1..=10).map(|i| format!("t{i}")).collect();
    let cut = if shifted { (10 - passed) as usize } else { passed as usize };
    let (first, last) = (names[..cut].to_vec(), names[cut..].to_vec());
    let (pass, fail) = if shifted { (last, first) } else { (first, last) };
    OverseerSignals {
        test_results: Some(TestResults {
            passed: pass.len() as u32,
            failed: fail.len() as u32,
            total: 10,
            failing: fail,
            passing: pass,
            ..Default::default()
        }),
        build_result: Some(BuildResult { success: true, error_count: 0, warning_count: 0 }),
        ..Default::default()
    }
}

/// One side of a close oscillation: 6 of 10 (t1, t8–t10 failing) or 7 of
/// 10 (t8–t10 failing).
fn close(six: bool) -> OverseerSignals {
    let mut s = signals(7, false);
    if six && let Some(t) = s.test_results.as_mut() {
        t.passing.retain(|n| n != "t1");
        t.failing.insert(0, "t1".into());
        t.passed = 6;
        t.failed = 4;
    }
    s
}

/// One simulated trajectory's end.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SimOutcome {
    pub solved: bool,
    pub attempts: u32,
    pub tokens: u64,
}

/// The engine on one task, with a budget of `max_iterations`.
pub fn simulate_engine(shape: Shape, seed: u64, max_iterations: u32) -> SimOutcome {
    simulate(shape, seed, max_iterations, None)
}

/// The engine under the ASO coordinator's tier 1 (`supervision: aso` with
/// `heuristics_only`): after every iteration the heuristic tree's directive
/// is applied as a policy change, as an agent run applies it.
pub fn simulate_supervised(shape: Shape, seed: u64, max_iterations: u32) -> SimOutcome {
    let config = crate::aso::AsoConfig::default();
    simulate(shape, seed, max_iterations, Some(&config))
}

fn simulate(shape: Shape, seed: u64, max_iterations: u32, aso: Option<&crate::aso::AsoConfig>) -> SimOutcome {
    use crate::aso::agent::{self, SupervisionTrack};
    let heuristic = aso.map(|c| crate::aso::HeuristicSupervisor::new(c.clone()));
    let mut track = SupervisionTrack::default();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut task = SimTask::new(shape, &mut rng);
    let engine = Engine::new(EngineConfig::default());
    let budget = ConvergenceBudget {
        max_tokens: 10_000_000,
        max_wall_time_ms: 3_600_000,
        max_iterations,
        max_extensions: 0,
        ..Default::default()
    };
    let spec = SpecificationEvolution::from_submission("Make the ten tests pass.", &[], &[]);
    let mut t = Trajectory::new("sim", "sim", spec, budget, ConvergencePolicy::default());
    let mut bandit = StrategyBandit::default();
    let Ok(mut next) = engine.start(&mut t, &bandit, &mut rng) else {
        return SimOutcome { solved: false, attempts: 0, tokens: 0 };
    };
    let (mut attempts, mut tokens) = (0u32, 0u64);
    loop {
        attempts += 1;
        let cost = next.kind.estimated_cost();
        tokens += cost;
        let s = task.attempt(next.kind, &mut rng);
        let solved = s.test_results.as_ref().is_some_and(|r| r.passed == 10);
        let artifact =
            ArtifactReference { commit: format!("c{attempts}"), files_changed: 1, lines_changed: 10 + attempts };
        let mut obs = Observation::new(next.kind, artifact, s);
        obs.tokens_used = cost;
        obs.wall_time_ms = 60_000;
        let Ok(mut d) = engine.decide(&mut t, &mut bandit, obs, &mut rng) else {
            return SimOutcome { solved, attempts, tokens };
        };
        if let (Some(config), Some(tier1)) = (aso, &heuristic)
            && d.loop_control.continues()
        {
            let diagnostics = agent::diagnose(&t, &d, &mut track, 1, config);
            let directive = tier1.analyze(&diagnostics);
            agent::steer(&engine, &mut t, &bandit, &mut track, &directive, &diagnostics, config, &mut d, &mut rng);
        }
        match (&d.loop_control, &d.next) {
            (
                LoopControl::Continue | LoopControl::ForceFreshStart { .. } | LoopControl::ExtensionGranted { .. },
                Some(n),
            ) => next = n.clone(),
            _ => {
                let converged = matches!(d.loop_control, LoopControl::Converged { .. });
                return SimOutcome { solved: solved || converged, attempts, tokens };
            }
        }
        if attempts >= max_iterations * 2 {
            // A guard against a loop control that never ends (it should).
            return SimOutcome { solved, attempts, tokens };
        }
    }
}

/// A plain retry loop: retry with feedback up to `tries` times.
pub fn simulate_retry(shape: Shape, seed: u64, tries: u32) -> SimOutcome {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut task = SimTask::new(shape, &mut rng);
    let cost = StrategyKind::RetryWithFeedback.estimated_cost();
    for attempt in 1..=tries {
        let s = task.attempt(StrategyKind::RetryWithFeedback, &mut rng);
        if s.test_results.is_some_and(|r| r.passed == 10) {
            return SimOutcome { solved: true, attempts: attempt, tokens: cost * attempt as u64 };
        }
    }
    SimOutcome { solved: false, attempts: tries, tokens: cost * tries as u64 }
}

/// Success rate and mean tokens of one method on one shape.
#[derive(Debug, Clone, Serialize)]
pub struct PopulationRow {
    pub shape: &'static str,
    pub method: &'static str,
    pub runs: usize,
    pub success_rate: f64,
    pub mean_attempts: f64,
    pub mean_tokens: f64,
}

pub fn population(runs: usize, max_iterations: u32) -> Vec<PopulationRow> {
    let mut rows = Vec::new();
    for shape in Shape::ALL {
        for (method, outcomes) in [
            ("engine", (0..runs).map(|i| simulate_engine(shape, i as u64 + 1, max_iterations)).collect::<Vec<_>>()),
            (
                "engine + ASO tier 1",
                (0..runs).map(|i| simulate_supervised(shape, i as u64 + 1, max_iterations)).collect::<Vec<_>>(),
            ),
            ("retry ×5", (0..runs).map(|i| simulate_retry(shape, i as u64 + 1, 5)).collect::<Vec<_>>()),
        ] {
            let n = outcomes.len().max(1) as f64;
            rows.push(PopulationRow {
                shape: shape.name(),
                method,
                runs: outcomes.len(),
                success_rate: outcomes.iter().filter(|o| o.solved).count() as f64 / n,
                mean_attempts: outcomes.iter().map(|o| o.attempts as f64).sum::<f64>() / n,
                mean_tokens: outcomes.iter().map(|o| o.tokens as f64).sum::<f64>() / n,
            });
        }
    }
    rows
}

/// The report: the loop's cost, then the population table.
pub fn report(timings: &[LoopTiming], rows: &[PopulationRow], max_iterations: u32) -> String {
    let mut out = String::from("## The control loop on real agent runs\n\n");
    if let Some(t) = timings.first() {
        out.push_str(&format!(
            "A scripted model answering in {} ms, a real git workspace and a real overseer process per task; every trajectory runs its whole budget.\n\n",
            t.latency_ms
        ));
    }
    out.push_str("| trajectories at once | iterations | iteration (ms) | executor (ms) | overseers (ms) | control overhead (ms) | overhead share | iterations / s |\n");
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for t in timings {
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.1} | {:.1}% | {:.2} |\n",
            t.trajectories,
            t.iterations,
            t.iteration_ms,
            t.execution_ms,
            t.overseer_ms,
            t.overhead_ms(),
            100.0 * t.overhead_share(),
            t.throughput()
        ));
    }
    out.push_str(&format!(
        "\n## The engine against five plain retries on a simulated population\n\nThe engine's budget is {max_iterations} iterations; tokens are each strategy's estimated cost. `engine + ASO tier 1` is the engine under `supervision: aso` with `heuristics_only`: the heuristic tree's directive applied after every iteration.\n\n"
    ));
    out.push_str("| shape | method | runs | success | attempts (mean) | tokens (mean) |\n|---|---|---|---|---|---|\n");
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {:.0}% | {:.1} | {:.0} |\n",
            r.shape,
            r.method,
            r.runs,
            100.0 * r.success_rate,
            r.mean_attempts,
            r.mean_tokens
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_converging_task_is_solved_by_both_and_an_oscillating_one_only_by_exploring() {
        for seed in 1..=10 {
            assert!(simulate_retry(Shape::Converging, seed, 5).solved);
            assert!(simulate_engine(Shape::Converging, seed, 10).solved);
            // Retrying never leaves the cycle.
            assert!(!simulate_retry(Shape::Oscillating, seed, 5).solved);
            assert!(!simulate_retry(Shape::CloseOscillating, seed, 5).solved);
            assert!(!simulate_retry(Shape::Plateauing, seed, 5).solved);
        }
    }

    #[test]
    fn tier_one_supervision_keeps_the_engine_escaping_an_oscillation() {
        // Tier 1 reads the engine's divergent oscillation as DIVERGING and
        // stops it (case 5); the agent form of that stop starts over.
        for seed in 1..=10 {
            assert!(simulate_supervised(Shape::Oscillating, seed, 10).solved, "seed {seed}");
            assert!(simulate_supervised(Shape::Plateauing, seed, 10).solved, "seed {seed}");
        }
    }

    #[test]
    fn the_oscillation_fails_different_tests_on_each_side() {
        let a = signals(6, true).test_results.unwrap();
        let b = signals(6, false).test_results.unwrap();
        assert_eq!((a.passed, b.passed, a.failed), (6, 6, 4));
        assert_eq!(a.failing, ["t1", "t2", "t3", "t4"]);
        assert_eq!(b.failing, ["t7", "t8", "t9", "t10"]);
    }

    #[test]
    fn the_population_table_has_a_row_per_shape_and_method() {
        let rows = population(3, 10);
        assert_eq!(rows.len(), 12, "four shapes × engine, engine + ASO tier 1, retry ×5");
        assert!(rows.iter().all(|r| r.runs == 3 && (0.0..=1.0).contains(&r.success_rate)));
        let text = report(&[], &rows, 10);
        assert!(text.contains("| oscillating | retry ×5 | 3 | 0% |"), "{text}");
    }
}
