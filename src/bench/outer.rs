//! The outer loop's benchmark (`attractor bench outer`).
//!
//! Part one, offline: `baseline`, `evolve` and `tree` on one suite with the
//! same number of evaluations (epochs) per run and the same seeds. After each
//! run one more epoch measures the artifact versions the method left active,
//! so every method is judged the same way: the training and held-out mean
//! loss of what it would hand a user.
//!
//! Part two: the cost of `textgrad`'s thinking. One textgrad epoch against a
//! scripted OpenAI-compatible server answering at a fixed latency, against
//! the same epoch under `baseline`: the difference is the optimizer's share
//! of the epoch's wall time.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;

use crate::artifact::Registry;
use crate::bus::Bus;
use crate::llm::scripted::{Scripted, ScriptedServer};
use crate::llm::{LlmClient, LlmConfig};
use crate::outer::tree::TreeConfig;
use crate::outer::{DEFAULT_HOLDOUT_TOLERANCE, OptimizerKind, RunConfig, RunSummary, SuiteRunner};
use crate::store::Store;

/// One method's run on one seed.
#[derive(Debug, Clone, Serialize)]
pub struct MethodRecord {
    pub method: String,
    pub seed: u64,
    /// Evaluations (epochs) the method used; the tree may stop early.
    pub evaluations: usize,
    pub runs: usize,
    /// The measurement epoch's means, with the versions the method left active.
    pub training_loss: Option<f64>,
    pub holdout_loss: Option<f64>,
    pub seconds: f64,
}

/// One textgrad epoch's wall time against the same epoch without an optimizer.
#[derive(Debug, Clone, Serialize)]
pub struct TextgradTiming {
    pub latency_ms: u64,
    pub calls: usize,
    pub epoch_seconds: f64,
    pub runs_seconds: f64,
}

impl TextgradTiming {
    /// The share of the epoch's wall time spent on the optimizer's calls.
    pub fn optimizer_share(&self) -> f64 {
        ((self.epoch_seconds - self.runs_seconds) / self.epoch_seconds.max(1e-9)).clamp(0.0, 1.0)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BenchError(pub String);

fn err(e: impl std::fmt::Display) -> BenchError {
    BenchError(e.to_string())
}

async fn run_suite(
    db: &Path,
    suite_path: &Path,
    config: RunConfig,
    model: Option<LlmClient>,
) -> Result<RunSummary, BenchError> {
    let store = Store::open(db).await.map_err(err)?;
    let suite = crate::suite::load(suite_path).map_err(err)?;
    let out = run_on(&store, suite, config, model).await;
    store.close().await;
    out
}

/// One run of `suite` on an open store, the model (if any) given to its optimizer.
pub(super) async fn run_on(
    store: &Store,
    suite: crate::suite::Suite,
    config: RunConfig,
    model: Option<LlmClient>,
) -> Result<RunSummary, BenchError> {
    let registry = Registry::load(store.clone()).await.map_err(err)?;
    let (_tx, cancel) = watch::channel(false);
    let mut runner = SuiteRunner::new(store.clone(), registry, Bus::new(), suite, config, cancel);
    if let Some(m) = model {
        runner = runner.with_optimizer_llm(m);
    }
    runner.run().await.map_err(err)
}

/// The settings every benchmark run shares (η 0.5, rollback on, 2 runs at once).
pub(super) fn config(optimizer: OptimizerKind, epochs: u32, seed: u64, runs_root: PathBuf) -> RunConfig {
    RunConfig {
        epochs,
        optimizer,
        learning_rate: 0.5,
        rollback_on_regression: true,
        concurrency: 2,
        seed,
        runs_root,
        holdout_tolerance: DEFAULT_HOLDOUT_TOLERANCE,
        verify_repeats: None,
        approve_updates: None,
        tree: TreeConfig::default(),
    }
}

/// Part one: `method` on `suite` for `evaluations` epochs, then one
/// measurement epoch, in a database of its own under `work`.
pub async fn method_run(
    work: &Path,
    suite: &Path,
    method: OptimizerKind,
    evaluations: u32,
    seed: u64,
) -> Result<MethodRecord, BenchError> {
    let dir = work.join(format!("{}-{seed}", method.name()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(err)?;
    let db = dir.join("attractor.db");
    let started = Instant::now();
    let run = run_suite(&db, suite, config(method, evaluations, seed, dir.join("runs")), None).await?;
    let measured = run_suite(&db, suite, config(OptimizerKind::Baseline, 1, seed, dir.join("runs")), None).await?;
    let last = measured.epochs.last();
    let tasks = crate::suite::load(suite).map_err(err)?.tasks.len();
    Ok(MethodRecord {
        method: method.name().to_string(),
        seed,
        evaluations: run.epochs.len(),
        runs: run.epochs.len() * tasks,
        training_loss: last.and_then(|e| e.mean_loss),
        holdout_loss: last.and_then(|e| e.holdout_mean_loss),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Part two: one textgrad epoch with every call answered after `latency`,
/// against one baseline epoch.
pub async fn textgrad_timing(work: &Path, suite: &Path, latency: Duration) -> Result<TextgradTiming, BenchError> {
    let no_change = Scripted::json(&serde_json::json!({
        "artifact": "", "proposed_content": "", "rationale": "keep", "expected_loss_reduction": 0.0, "confidence": 0.0
    }));
    let server = ScriptedServer::start_repeating(vec![], Scripted::delayed(latency, no_change)).await.map_err(err)?;
    let model = LlmClient::new(
        LlmConfig::new(server.base_url(), "bench-scripted")
            .with_retries(0, Duration::from_millis(10))
            .with_timeout(latency + Duration::from_secs(30))
            .with_cache(false),
    )
    .map_err(err)?;
    let mut timings = Vec::new();
    for (name, optimizer, model) in
        [("textgrad", OptimizerKind::Textgrad, Some(model)), ("baseline", OptimizerKind::Baseline, None)]
    {
        let dir = work.join(format!("timing-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(err)?;
        let started = Instant::now();
        run_suite(&dir.join("attractor.db"), suite, config(optimizer, 1, 1, dir.join("runs")), model).await?;
        timings.push(started.elapsed().as_secs_f64());
    }
    let calls = server.requests().len();
    server.shutdown().await;
    Ok(TextgradTiming {
        latency_ms: latency.as_millis() as u64,
        calls,
        epoch_seconds: timings[0],
        runs_seconds: timings[1],
    })
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = xs.collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The report: a table of mean losses per method, and the timing.
pub fn report(suite: &str, records: &[MethodRecord], timing: Option<&TextgradTiming>) -> String {
    let mut out = format!("## Outer loop on `{suite}`\n\n");
    out.push_str(
        "Each method runs with the same evaluation budget and seeds; one more epoch then measures the artifact versions it left active.\n\n",
    );
    out.push_str(
        "| method | seeds | evaluations (mean) | runs (mean) | training loss | held-out loss | seconds per run |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|\n");
    let mut methods: Vec<&str> = records.iter().map(|r| r.method.as_str()).collect();
    methods.dedup();
    for m in methods {
        let rs: Vec<&MethodRecord> = records.iter().filter(|r| r.method == m).collect();
        let f = |v: Option<f64>| v.map_or("–".into(), |x| format!("{x:.4}"));
        let c = |v: Option<f64>| v.map_or("–".into(), |x| format!("{x:.1}"));
        out.push_str(&format!(
            "| {m} | {} | {} | {} | {} | {} | {} |\n",
            rs.len(),
            c(mean(rs.iter().map(|r| r.evaluations as f64))),
            c(mean(rs.iter().map(|r| r.runs as f64))),
            f(mean(rs.iter().filter_map(|r| r.training_loss))),
            f(mean(rs.iter().filter_map(|r| r.holdout_loss))),
            c(mean(rs.iter().map(|r| r.seconds))),
        ));
    }
    if let Some(t) = timing {
        out.push_str(&format!(
            "\n## One textgrad epoch against a model answering in {} ms\n\n| | seconds |\n|---|---|\n| epoch with textgrad ({} calls) | {:.2} |\n| the same epoch without an optimizer | {:.2} |\n| optimizer share of the epoch | {:.0}% |\n",
            t.latency_ms,
            t.calls,
            t.epoch_seconds,
            t.runs_seconds,
            100.0 * t.optimizer_share()
        ));
    }
    out
}
