//! `attractor bench numeric`: our coordinator and the peer optimizers on the
//! same problems, seeds and evaluation budget, in one run, into one report;
//! `attractor bench outer`, `engine` and `fill` (see [`crate::bench`]).
//!
//! Results go to JSON lines in the output folder as they are made
//! (`attractor.jsonl`, `peers.jsonl`, `supervision.jsonl`), so an
//! interrupted benchmark resumes where it stopped; `report.md` is written at
//! the end and printed.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Failure, Global};
use crate::aso::llm_tier::LlmSupervisor;
use crate::aso::{AsoConfig, ModelSupervisor, SupervisionMode};
use crate::bench::numeric::{self, OURS, OursSettings, RunRecord, TARGET_PROBLEMS};
use crate::bench::report::{Report, SupervisionMetrics};
use crate::llm::scripted::{RecordedRequest, Scripted, ScriptedServer};
use crate::llm::{LlmClient, LlmConfig};

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The ASO coordinator against scipy and NLopt on the built-in constrained problems.
    Numeric(NumericArgs),
    /// The outer loop: baseline, evolve and tree at the same number of
    /// evaluations, and one textgrad epoch's wall time against its runs'.
    Outer(OuterArgs),
    /// Learning with a real model: baseline, textgrad, tree and screen on a
    /// text suite (and GEPA through bench/peers.py), every model call counted,
    /// held-out accuracy over seeds. Needs ATTRACTOR_LLM_BASE_URL and
    /// ATTRACTOR_LLM_MODEL (`eval "$(scripts/local-llm.sh start)"`).
    Learn(LearnArgs),
    /// Fill a fresh database with a synthetic suite history (500 epochs × 50
    /// tasks by default) to measure the app against (`npm run bench:ui`).
    Fill(FillArgs),
    /// The convergence engine: control overhead and throughput on real agent
    /// runs, and the engine against plain retries on a simulated population.
    Engine(EngineArgs),
    /// External evaluators: a process per point against persistent processes
    /// at several message sizes, and the cantilever example in each mode.
    Evaluator(EvaluatorArgs),
}

#[derive(Debug, Args)]
pub struct EvaluatorArgs {
    /// Points per persistent measurement.
    #[arg(long, default_value_t = 100_000, value_parser = super::between::<u64>(100, 10_000_000))]
    pub points: u64,
    /// Points in the one-shot measurement (a process start each).
    #[arg(long, default_value_t = 300, value_parser = super::between::<u64>(1, 100_000))]
    pub once_points: u64,
    /// Points per message, separated by commas (one measurement each).
    #[arg(long, default_value = "1,8,64,512")]
    pub batches: String,
    /// Evaluator processes, separated by commas (one measurement each per batch).
    #[arg(long, default_value = "1,2")]
    pub processes: String,
    /// Evaluations of each coordinator run on the cantilever example (0 skips them).
    #[arg(long, default_value_t = 3000, value_parser = super::between::<u64>(0, 10_000_000))]
    pub run_budget: u64,
    /// The folder holding `evaluator/cantilever.yaml`.
    #[arg(long, default_value = "examples")]
    pub examples: PathBuf,
    /// Where the scripts, problem files and report go.
    #[arg(long, default_value = "bench/results/evaluator")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct EngineArgs {
    /// Latency of the scripted model, in milliseconds.
    #[arg(long, default_value_t = 200)]
    pub latency_ms: u64,
    /// Iterations each real trajectory runs.
    #[arg(long, default_value_t = 4, value_parser = super::between::<u32>(1, 50))]
    pub iterations: u32,
    /// Trajectories at once, separated by commas (one measurement each).
    #[arg(long, default_value = "1,8,32")]
    pub concurrency: String,
    /// Simulated trajectories per shape and method (0 skips the simulation).
    #[arg(long, default_value_t = 200)]
    pub population: usize,
    /// The engine's iteration budget in the simulation.
    #[arg(long, default_value_t = 10, value_parser = super::between::<u32>(2, 100))]
    pub max_iterations: u32,
    /// Where the databases, workspaces and report go (replaced on every run).
    #[arg(long, default_value = "bench/results/engine")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct FillArgs {
    #[arg(long, default_value = "ui-bench")]
    pub suite: String,
    #[arg(long, default_value_t = 500, value_parser = super::between::<u32>(1, 100_000))]
    pub epochs: u32,
    #[arg(long, default_value_t = 50, value_parser = super::between::<u32>(2, 10_000))]
    pub tasks: u32,
    /// How many of the tasks are held out.
    #[arg(long, default_value_t = 5)]
    pub holdout: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct OuterArgs {
    /// The suite to optimize (offline: command tasks, no model needed).
    #[arg(long, default_value = "examples/descent.suite.yaml")]
    pub suite: PathBuf,
    /// Evaluations (epochs) each method may use.
    #[arg(long, default_value_t = 12, value_parser = super::between::<u32>(1, 500))]
    pub evaluations: u32,
    /// Seeds per method (1, 2, …).
    #[arg(long, default_value_t = 5, value_parser = super::between::<u64>(1, 100))]
    pub seeds: u64,
    /// Latency of the scripted model in the textgrad timing (0 skips the timing).
    #[arg(long, default_value_t = 200)]
    pub latency_ms: u64,
    /// Where the databases, runs and report go (replaced on every run).
    #[arg(long, default_value = "bench/results/outer")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct LearnArgs {
    /// The text suite (its command tasks' harness calls the model itself).
    #[arg(long, default_value = "examples/support-labels.suite.yaml")]
    pub suite: PathBuf,
    /// Epochs each method runs per seed (the tree: evaluations).
    #[arg(long, default_value_t = 6, value_parser = super::between::<u32>(1, 100))]
    pub epochs: u32,
    /// Seeds per method (1, 2, …).
    #[arg(long, default_value_t = 3, value_parser = super::between::<u64>(1, 20))]
    pub seeds: u64,
    /// Methods separated by commas, of baseline, evolve, textgrad, tree, screen.
    #[arg(long, default_value = "baseline,textgrad,tree,screen")]
    pub methods: String,
    /// `gepa` (GEPA from PyPI, through bench/peers.py) or `none`.
    #[arg(long, default_value = "gepa")]
    pub peers: String,
    /// GEPA's budget of task calls per seed [default: the most calls one of our methods used on average].
    #[arg(long, value_parser = super::between::<u64>(10, 1_000_000))]
    pub gepa_calls: Option<u64>,
    /// Where records and the report go; records already there are reused (a run resumes).
    #[arg(long, default_value = "bench/results/learn")]
    pub out: PathBuf,
    /// Forget the records already in the output folder.
    #[arg(long)]
    pub fresh: bool,
    /// The folder holding `peers.py` and `setup-peers.sh`.
    #[arg(long, default_value = "bench")]
    pub bench_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct NumericArgs {
    /// Runs per problem and method; run r uses seed `seed-base + r`.
    #[arg(long, default_value_t = 20, value_parser = super::between::<u32>(1, 100_000))]
    pub runs: u32,
    #[arg(long, default_value_t = 1)]
    pub seed_base: u64,
    /// Evaluations per run (objective and every constraint at one point = one).
    #[arg(long, default_value_t = 100_000, value_parser = super::between::<u64>(100, 1_000_000_000))]
    pub budget: u64,
    /// Max violation that counts as feasible (success needs a feasible point).
    #[arg(long, default_value_t = 1e-6)]
    pub tol: f64,
    /// Relative gap to the reference that counts as reaching it.
    #[arg(long, default_value_t = 1e-4)]
    pub gap: f64,
    /// `target` (the issue's 24 problems), `all` (every built-in), or names separated by commas.
    #[arg(long, default_value = "target")]
    pub problems: String,
    /// `all`, `none`, or peer methods separated by commas (as `bench/peers.py` names them).
    #[arg(long, default_value = "all")]
    pub peers: String,
    /// Peer runs in flight at once.
    #[arg(long, default_value_t = 2, value_parser = super::between::<u32>(1, 64))]
    pub jobs: u32,
    /// Seeds per supervision mode for the LLM-calls comparison (0 skips it).
    #[arg(long, default_value_t = 3)]
    pub llm_runs: u32,
    /// Where results and the report go; existing results there are kept and reused.
    #[arg(long, default_value = "bench/results/numeric")]
    pub out: PathBuf,
    /// Forget the results already in the output folder.
    #[arg(long)]
    pub fresh: bool,
    /// Our coordinator's settings, as the `aso_config` artifact's JSON [default: its v0].
    #[arg(long, value_name = "FILE")]
    pub aso_config: Option<PathBuf>,
    /// The folder holding `peers.py` and `setup-peers.sh`.
    #[arg(long, default_value = "bench")]
    pub bench_dir: PathBuf,
}

pub async fn run(g: &Global, command: &BenchCommand) -> Result<u8, Failure> {
    match command {
        BenchCommand::Numeric(args) => numeric_bench(g, args).await,
        BenchCommand::Outer(args) => outer_bench(g, args).await,
        BenchCommand::Learn(args) => super::bench_learn::learn_bench(g, args).await,
        BenchCommand::Engine(args) => engine_bench(g, args).await,
        BenchCommand::Fill(args) => fill(g, args).await,
        BenchCommand::Evaluator(args) => evaluator_bench(g, args).await,
    }
}

/// Counts separated by commas, each from 1 to `max`.
fn counts(flag: &str, text: &str, max: usize) -> Result<Vec<usize>, Failure> {
    text.split(',')
        .map(|c| c.trim().parse::<usize>().ok().filter(|n| (1..=max).contains(n)))
        .collect::<Option<Vec<_>>>()
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            Failure::input(format!("{flag} {text:?}: give counts from 1 to {max} separated by commas, e.g. 1,8,64"))
        })
}

async fn evaluator_bench(g: &Global, a: &EvaluatorArgs) -> Result<u8, Failure> {
    use crate::bench::evaluator::{self, EvaluatorBench};
    let config = EvaluatorBench {
        points: usize::try_from(a.points).unwrap_or(usize::MAX),
        once_points: usize::try_from(a.once_points).unwrap_or(usize::MAX),
        batches: counts("--batches", &a.batches, crate::numeric::external::MAX_BATCH)?,
        processes: counts("--processes", &a.processes, crate::numeric::external::MAX_PROCESSES)?,
        run_budget: a.run_budget,
        work: a.out.clone(),
    };
    std::fs::create_dir_all(&a.out).map_err(|e| Failure::runtime(format!("cannot create {}: {e}", a.out.display())))?;
    let work = std::fs::canonicalize(&a.out).map_err(|e| Failure::runtime(e.to_string()))?;
    let config = EvaluatorBench { work: work.clone(), ..config };
    if !g.quiet {
        eprintln!("measuring throughput…");
    }
    let measured = config.clone();
    let rows = tokio::task::spawn_blocking(move || evaluator::throughput(&measured))
        .await
        .map_err(|e| Failure::runtime(e.to_string()))?
        .map_err(Failure::runtime)?;
    let runs = if a.run_budget > 0 {
        if !g.quiet {
            eprintln!("running the cantilever example…");
        }
        evaluator::example_runs(&config, &a.examples, 1).await.map_err(Failure::runtime)?
    } else {
        Vec::new()
    };
    let report = evaluator::report(&rows, &runs);
    let path = work.join("report.md");
    std::fs::write(&path, &report).map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))?;
    let json = serde_json::json!({ "throughput": rows, "runs": runs });
    if g.json {
        println!("{json}");
    } else {
        println!("{report}\nreport: {}", path.display());
    }
    Ok(0)
}

async fn fill(g: &Global, a: &FillArgs) -> Result<u8, Failure> {
    use crate::bench::ui::{FillConfig, FillError};
    // Synthetic data must never land in someone's own database by default.
    let Some(db) = &g.db else {
        return Err(Failure::input(
            "bench fill writes synthetic data: name the database with --db NEW.db (or ATTRACTOR_DB)",
        ));
    };
    let store = crate::store::Store::open(db).await?;
    let config =
        FillConfig { suite: a.suite.clone(), epochs: a.epochs, tasks: a.tasks, holdout: a.holdout, seed: a.seed };
    let started = std::time::Instant::now();
    let filled = crate::bench::ui::fill(&store, &config).await.map_err(|e| match e {
        e @ (FillError::Exists(_) | FillError::Holdout { .. }) => Failure::input(e.to_string()),
        e => Failure::runtime(e.to_string()),
    });
    store.close().await;
    let filled = filled?;
    if g.json {
        println!("{}", serde_json::to_string(&filled).unwrap_or_default());
    } else if !g.quiet {
        println!(
            "suite `{}` (id {}): {} epochs, {} runs, {} updates, {} rollbacks in {:.1} s into {}",
            filled.suite,
            filled.suite_id,
            filled.epochs,
            filled.runs,
            filled.updates,
            filled.rollbacks,
            started.elapsed().as_secs_f64(),
            db.display()
        );
    }
    Ok(0)
}

async fn engine_bench(g: &Global, a: &EngineArgs) -> Result<u8, Failure> {
    use crate::bench::engine;
    let counts: Vec<usize> = a
        .concurrency
        .split(',')
        .map(|c| c.trim().parse::<usize>().ok().filter(|n| (1..=256).contains(n)))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            Failure::input(format!(
                "--concurrency {:?}: give counts from 1 to 256 separated by commas, e.g. 1,8,32",
                a.concurrency
            ))
        })?;
    std::fs::create_dir_all(&a.out).map_err(|e| Failure::runtime(format!("cannot create {}: {e}", a.out.display())))?;
    let work = std::fs::canonicalize(&a.out).map_err(|e| Failure::runtime(e.to_string()))?;
    let progress = bar(!g.quiet, counts.len() as u64, "engine");
    let mut timings = Vec::new();
    for n in counts {
        progress.set_message(format!("{n} trajectories"));
        let t = engine::loop_timing(&work, n, a.iterations, std::time::Duration::from_millis(a.latency_ms))
            .await
            .map_err(|e| Failure::runtime(format!("{n} trajectories: {e}")))?;
        timings.push(t);
        progress.inc(1);
    }
    progress.finish_and_clear();
    let rows = if a.population > 0 { engine::population(a.population, a.max_iterations) } else { Vec::new() };
    let report = engine::report(&timings, &rows, a.max_iterations);
    let path = work.join("report.md");
    std::fs::write(&path, &report).map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))?;
    let json = serde_json::json!({ "loop": timings, "population": rows });
    std::fs::write(work.join("results.json"), serde_json::to_string_pretty(&json).unwrap_or_default())
        .map_err(|e| Failure::runtime(e.to_string()))?;
    if g.json {
        println!("{json}");
    } else {
        println!("{report}\nreport: {}", path.display());
    }
    Ok(0)
}

async fn outer_bench(g: &Global, a: &OuterArgs) -> Result<u8, Failure> {
    use crate::bench::outer;
    use crate::outer::OptimizerKind;
    let suite = crate::suite::load(&a.suite).map_err(|e| Failure::input(e.to_string()))?;
    std::fs::create_dir_all(&a.out).map_err(|e| Failure::runtime(format!("cannot create {}: {e}", a.out.display())))?;
    let work = std::fs::canonicalize(&a.out).map_err(|e| Failure::runtime(e.to_string()))?;
    let methods = [OptimizerKind::Baseline, OptimizerKind::Evolve, OptimizerKind::Tree];
    let progress = bar(!g.quiet, methods.len() as u64 * a.seeds, "outer");
    let mut records = Vec::new();
    for method in methods {
        for seed in 1..=a.seeds {
            progress.set_message(format!("{} seed {seed}", method.name()));
            let r = outer::method_run(&work, &a.suite, method, a.evaluations, seed)
                .await
                .map_err(|e| Failure::runtime(format!("{} seed {seed}: {e}", method.name())))?;
            records.push(r);
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    let timing = if a.latency_ms > 0 {
        Some(
            outer::textgrad_timing(&work, &a.suite, std::time::Duration::from_millis(a.latency_ms))
                .await
                .map_err(|e| Failure::runtime(format!("textgrad timing: {e}")))?,
        )
    } else {
        None
    };
    let report = outer::report(&suite.name, &records, timing.as_ref());
    let path = work.join("report.md");
    std::fs::write(&path, &report).map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))?;
    let json = serde_json::to_string_pretty(&serde_json::json!({ "records": records, "textgrad_timing": timing }))
        .unwrap_or_default();
    std::fs::write(work.join("results.json"), json).map_err(|e| Failure::runtime(e.to_string()))?;
    if g.json {
        println!("{}", serde_json::json!({ "records": records, "textgrad_timing": timing }));
    } else {
        println!("{report}\nreport: {}", path.display());
    }
    Ok(0)
}

fn problem_list(spec: &str) -> Result<Vec<String>, Failure> {
    let known = crate::numeric::builtin_names();
    let names: Vec<String> = match spec {
        "target" => TARGET_PROBLEMS.iter().map(|s| s.to_string()).collect(),
        "all" => known.iter().map(|s| s.to_string()).collect(),
        list => list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
    };
    if let Some(bad) = names.iter().find(|n| !known.contains(&n.as_str())) {
        return Err(Failure::input(format!(
            "--problems: `{bad}` is not a built-in problem\n  hint: use `target`, `all`, or names from: {}",
            known.join(", ")
        )));
    }
    if names.is_empty() {
        return Err(Failure::input("--problems: no problem named\n  hint: use `target`, `all`, or g01,g02,…"));
    }
    Ok(names)
}

/// Reads the JSON lines of earlier runs; a line that does not parse (a run
/// cut off mid-write) is skipped with a warning, not fatal.
pub(super) fn read_records<T: serde::de::DeserializeOwned>(path: &Path) -> Vec<T> {
    let Ok(text) = std::fs::read_to_string(path) else { return vec![] };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .filter_map(|(i, l)| match serde_json::from_str(l) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!("{}:{}: skipping a line that is not a record: {e}", path.display(), i + 1);
                None
            }
        })
        .collect()
}

pub(super) fn append<T: serde::Serialize>(path: &Path, record: &T) -> Result<(), Failure> {
    let line = serde_json::to_string(record).map_err(|e| Failure::runtime(e.to_string()))?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))?;
    writeln!(f, "{line}").map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))
}

pub(super) fn bar(show: bool, len: u64, prefix: &str) -> ProgressBar {
    let target = if show { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
    let style = ProgressStyle::with_template("{prefix:>11} [{bar:30}] {pos}/{len} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    ProgressBar::with_draw_target(Some(len), target).with_style(style).with_prefix(prefix.to_string())
}

async fn numeric_bench(g: &Global, a: &NumericArgs) -> Result<u8, Failure> {
    for (flag, v) in [("--tol", a.tol), ("--gap", a.gap)] {
        if !(v > 0.0 && v < 1.0) {
            return Err(Failure::input(format!("{flag} {v} must be in (0, 1)")));
        }
    }
    let problems = problem_list(&a.problems)?;
    // The configuration is read once: its text keys the results folder, its
    // parsed form runs the coordinator.
    let (config_text, config) = match &a.aso_config {
        None => (String::new(), AsoConfig::default()),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::input(format!("cannot read --aso-config {}: {e}", path.display())))?;
            let config = AsoConfig::from_json(&text).map_err(|e| {
                Failure::input(format!(
                    "{}:{}:{}: not a valid aso_config: {e}\n  hint: `attractor inspect --artifact aso_config` shows the fields",
                    path.display(),
                    e.line(),
                    e.column()
                ))
            })?;
            (text, config)
        }
    };
    let show = !g.quiet && !g.json;
    if a.fresh && a.out.exists() {
        for f in ["attractor.jsonl", "peers.jsonl", "supervision.jsonl", "report.md", "settings.json"] {
            let _ = std::fs::remove_file(a.out.join(f));
        }
    }
    std::fs::create_dir_all(&a.out).map_err(|e| Failure::runtime(format!("cannot create {}: {e}", a.out.display())))?;
    check_settings(a, &config_text)?;
    let seeds: Vec<u64> = (0..u64::from(a.runs)).map(|r| a.seed_base + r).collect();

    // 1. Our coordinator, heuristics only (the LLM tier needs a model; its
    //    call counts are measured separately below).
    let ours_path = a.out.join("attractor.jsonl");
    let done: HashSet<(String, u64)> = read_records::<RunRecord>(&ours_path)
        .into_iter()
        .filter(|r| r.method == OURS)
        .map(|r| (r.problem, r.seed))
        .collect();
    let settings = OursSettings { budget: a.budget, tol: a.tol, gap: a.gap, config: config.clone(), model: None };
    let todo: Vec<(&String, u64)> = problems
        .iter()
        .flat_map(|p| seeds.iter().map(move |&s| (p, s)))
        .filter(|(p, s)| !done.contains(&((*p).clone(), *s)))
        .collect();
    let pb = bar(show, todo.len() as u64, "attractor");
    for (p, s) in todo {
        pb.set_message(format!("{p} seed {s}"));
        let record = numeric::run_ours(p, s, &settings).await;
        append(&ours_path, &record)?;
        pb.inc(1);
    }
    pb.finish_and_clear();

    // 2. LLM calls per run with the model tier answered by a scripted
    //    OpenAI-compatible server on loopback: event_triggered against every_step.
    let supervision_path = a.out.join("supervision.jsonl");
    if a.llm_runs > 0 {
        supervision_runs(a, &config, &problems, &supervision_path, show).await?;
    }

    // 3. The peers, by bench/peers.py in its own virtual environment.
    let peers_path = a.out.join("peers.jsonl");
    if a.peers != "none" {
        run_peers(a, &problems, &peers_path, show)?;
    }

    // 4. The report.
    let mut records: Vec<RunRecord> = read_records(&ours_path);
    records.extend(read_records(&peers_path));
    let seed_set: HashSet<u64> = seeds.iter().copied().collect();
    let problem_set: HashSet<&String> = problems.iter().collect();
    records.retain(|r| seed_set.contains(&r.seed) && problem_set.contains(&r.problem));
    let supervision = read_records(&supervision_path);
    let text = render(a, &problems, &records, &supervision);
    let report_path = a.out.join("report.md");
    std::fs::write(&report_path, &text)
        .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", report_path.display())))?;
    if !g.quiet {
        println!("{text}");
        eprintln!("report: {}", report_path.display());
    }
    Ok(0)
}

/// Results are reused only under the settings they were made with: the
/// folder's `settings.json` records them.
fn check_settings(a: &NumericArgs, config_text: &str) -> Result<(), Failure> {
    let path = a.out.join("settings.json");
    let now = serde_json::json!({ "budget": a.budget, "tol": a.tol, "gap": a.gap, "aso_config": config_text });
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Ok(before) = serde_json::from_str::<serde_json::Value>(&text)
        && before != now
    {
        return Err(Failure::input(format!(
            "{} holds results made with {before}, not {now}\n  hint: pass --fresh to start over, or another --out",
            a.out.display()
        )));
    }
    std::fs::write(&path, now.to_string())
        .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))
}

/// The model tier's reply in the supervision runs: always a valid CONTINUE,
/// so what is counted is how often each mode asks, not what a model says.
const SCRIPTED_DIRECTIVE: &str = r#"{"action": "CONTINUE", "reasoning": "scripted benchmark reply"}"#;
/// The reply of the restarting model to a stagnating trajectory.
const SCRIPTED_RESTART: &str = r#"{"action": "RESTART", "reasoning": "scripted benchmark reply: stagnation"}"#;

/// One supervision row of the benchmark: when the model tier is asked, and
/// what the scripted model answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SupervisionRow {
    /// Asked on events, answers CONTINUE: how often events happen.
    EventTriggered,
    /// Asked every step, answers CONTINUE: the cost the tiers avoid.
    EveryStep,
    /// Asked on events, answers RESTART to every STAGNATION: the seed's
    /// stagnation recovery rate. (The heuristic tier alone never restarts:
    /// its diagnostics call STAGNATION only above the violation threshold
    /// that sends case 3 to ADJUST, so case 4 is the model's to reach.)
    RestartOnStagnation,
}

const SUPERVISION_ROWS: [SupervisionRow; 3] =
    [SupervisionRow::EventTriggered, SupervisionRow::EveryStep, SupervisionRow::RestartOnStagnation];

impl SupervisionRow {
    fn mode(self) -> SupervisionMode {
        match self {
            SupervisionRow::EveryStep => SupervisionMode::EveryStep,
            SupervisionRow::EventTriggered | SupervisionRow::RestartOnStagnation => SupervisionMode::EventTriggered,
        }
    }

    fn method(self) -> String {
        let name = match self {
            SupervisionRow::EventTriggered => "event_triggered",
            SupervisionRow::EveryStep => "every_step",
            SupervisionRow::RestartOnStagnation => "restart_on_stagnation",
        };
        format!("{OURS}+llm:{name}")
    }
}

/// The scripted model of the restarting row: RESTART when the diagnostics it
/// is shown say STAGNATION, CONTINUE otherwise.
fn restart_on_stagnation(request: &RecordedRequest) -> Scripted {
    let stagnating =
        request.messages().iter().any(|(role, c)| role == "user" && c.contains(r#""status":"STAGNATION""#));
    Scripted::reply(if stagnating { SCRIPTED_RESTART } else { SCRIPTED_DIRECTIVE })
}

async fn supervision_runs(
    a: &NumericArgs,
    base: &AsoConfig,
    problems: &[String],
    path: &Path,
    show: bool,
) -> Result<(), Failure> {
    let done: HashSet<(String, String, u64)> =
        read_records::<RunRecord>(path).into_iter().map(|r| (r.method, r.problem, r.seed)).collect();
    let seeds: Vec<u64> = (0..u64::from(a.llm_runs)).map(|r| a.seed_base + r).collect();
    let mut todo: Vec<(SupervisionRow, &String, u64)> = Vec::new();
    for &row in &SUPERVISION_ROWS {
        for p in problems {
            for &s in &seeds {
                if !done.contains(&(row.method(), p.clone(), s)) {
                    todo.push((row, p, s));
                }
            }
        }
    }
    if todo.is_empty() {
        return Ok(());
    }
    let unreachable =
        |e: std::io::Error| Failure::runtime(format!("cannot start the scripted model server on loopback: {e}"));
    let continuing =
        ScriptedServer::start_repeating(vec![], Scripted::reply(SCRIPTED_DIRECTIVE)).await.map_err(unreachable)?;
    let restarting = ScriptedServer::start_responding(restart_on_stagnation).await.map_err(unreachable)?;
    let model_of = |server: &ScriptedServer| -> Result<Arc<dyn ModelSupervisor>, Failure> {
        let client = LlmClient::new(LlmConfig::new(server.base_url(), "scripted-supervisor").with_cache(false))
            .map_err(|e| Failure::runtime(e.to_string()))?;
        Ok(Arc::new(LlmSupervisor::new(client, "")))
    };
    let (continue_model, restart_model) = (model_of(&continuing)?, model_of(&restarting)?);
    let pb = bar(show, todo.len() as u64, "supervision");
    for (row, p, s) in todo {
        pb.set_message(format!("{} {p} seed {s}", row.method()));
        let config = AsoConfig { supervision_mode: row.mode(), ..base.clone() };
        let model = if row == SupervisionRow::RestartOnStagnation { &restart_model } else { &continue_model };
        let settings = OursSettings { budget: a.budget, tol: a.tol, gap: a.gap, config, model: Some(model.clone()) };
        let mut record = numeric::run_ours(p, s, &settings).await;
        record.method = row.method();
        append(path, &record)?;
        pb.inc(1);
    }
    pb.finish_and_clear();
    continuing.shutdown().await;
    restarting.shutdown().await;
    Ok(())
}

fn run_peers(a: &NumericArgs, problems: &[String], out: &Path, show: bool) -> Result<(), Failure> {
    let script = a.bench_dir.join("peers.py");
    let setup = a.bench_dir.join("setup-peers.sh");
    if !script.is_file() || !setup.is_file() {
        return Err(Failure::input(format!(
            "no {} or {}\n  hint: run from the repository root, pass --bench-dir, or skip the peers with --peers none",
            script.display(),
            setup.display()
        )));
    }
    if show {
        eprintln!("setting up the peers' Python environment ({})", setup.display());
    }
    let setup_out = std::process::Command::new("bash")
        .arg(&setup)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| Failure::runtime(format!("cannot run {}: {e}", setup.display())))?;
    if !setup_out.status.success() {
        return Err(Failure::runtime(format!(
            "{} failed ({})\n  hint: it installs scipy and nlopt from PyPI; or skip the peers with --peers none",
            setup.display(),
            setup_out.status
        )));
    }
    let python = String::from_utf8_lossy(&setup_out.stdout).lines().last().unwrap_or("").trim().to_string();
    if python.is_empty() {
        return Err(Failure::runtime(format!("{} printed no Python path", setup.display())));
    }
    let exe =
        std::env::current_exe().map_err(|e| Failure::runtime(format!("cannot find the attractor binary: {e}")))?;
    let mut cmd = std::process::Command::new(&python);
    cmd.arg(&script)
        .arg("--attractor")
        .arg(&exe)
        .arg("--problems")
        .arg(problems.join(","))
        .arg("--runs")
        .arg(a.runs.to_string())
        .arg("--seed-base")
        .arg(a.seed_base.to_string())
        .arg("--budget")
        .arg(a.budget.to_string())
        .arg("--tol")
        .arg(a.tol.to_string())
        .arg("--gap")
        .arg(a.gap.to_string())
        .arg("--out")
        .arg(out)
        .arg("--jobs")
        .arg(a.jobs.to_string());
    if a.peers != "all" {
        cmd.arg("--methods").arg(&a.peers);
    }
    if !show {
        cmd.arg("--quiet");
    }
    let status =
        cmd.status().map_err(|e| Failure::runtime(format!("cannot run {python} {}: {e}", script.display())))?;
    if !status.success() {
        return Err(Failure::runtime(format!(
            "the peers' benchmark failed ({status}); results so far are in {}\n  hint: rerun to resume",
            out.display()
        )));
    }
    Ok(())
}

fn render(a: &NumericArgs, problems: &[String], records: &[RunRecord], supervision: &[RunRecord]) -> String {
    use std::fmt::Write as _;
    let report = Report::new(records, problems);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Numeric benchmark\n\n{} runs per problem and method (seeds {}–{}), {} evaluations per run; success = a point with \
         max violation ≤ {} and relative gap ≤ {} to the reference, judged at the best feasible point seen.\n",
        a.runs,
        a.seed_base,
        a.seed_base + u64::from(a.runs) - 1,
        a.budget,
        a.tol,
        a.gap
    );
    let _ = writeln!(s, "## Successes (median evaluations to success)\n\n{}", report.success_table());
    let (ok, n) = report.overall(OURS);
    if n > 0 {
        let _ = writeln!(s, "- {OURS}: {ok}/{n} runs ({:.1}%)", 100.0 * f64::from(ok) / f64::from(n));
    }
    if let Some(best) = report.best_peer_per_problem() {
        let _ = writeln!(s, "- best peer picked per problem after the fact: {:.1}%", 100.0 * best);
    }
    let behind = report.behind_best_peer();
    if behind.is_empty() {
        let _ = writeln!(s, "- {OURS} is at or above the best peer on every problem");
    }
    for (p, ours, peer, best) in behind {
        let _ = writeln!(s, "- behind on {p}: {:.0}% against {peer}'s {:.0}%", 100.0 * ours, 100.0 * best);
    }
    let _ = writeln!(s, "\n## Evaluations spent (median of every run, success or not)\n\n{}", report.spent_table());
    let _ = writeln!(s, "\n## Median best feasible value\n\n{}", report.best_table());
    if report.methods.iter().any(|m| m == OURS) {
        let _ = writeln!(
            s,
            "\n## Evaluations after the final best ({OURS}'s runs that stopped on their own)\n\nThe share of a run's \
             evaluations made after the first one within the gap of its final best feasible value.\n\n{}",
            report.after_final_best_table()
        );
    }

    let ours: Vec<&RunRecord> = records.iter().filter(|r| r.method == OURS).collect();
    let mut rows = vec![("heuristics only".to_string(), SupervisionMetrics::of(ours.iter().copied()))];
    for row in SUPERVISION_ROWS {
        let m = row.method();
        let rs: Vec<&RunRecord> = supervision.iter().filter(|r| r.method == m).collect();
        if !rs.is_empty() {
            rows.push((m.trim_start_matches(&format!("{OURS}+")).to_string(), SupervisionMetrics::of(rs)));
        }
    }
    let _ = writeln!(
        s,
        "## Supervision (seed 000 §8)\n\nThe model tier in the `llm:` rows is a scripted OpenAI-compatible server on \
         loopback. In `event_triggered` and `every_step` it always answers CONTINUE: the rows count how often each \
         mode asks. In `restart_on_stagnation` (asked on events) it answers RESTART whenever the diagnostics say \
         STAGNATION: the heuristic tier alone never restarts (its STAGNATION needs a violation above the threshold \
         that sends case 3 of the tree to ADJUST), so this row measures the seed's stagnation recovery rate.\n\n\
         | supervision | runs | LLM calls per run | LLM calls per step | convergence rate | restarts | stagnation recovery | seconds per run |\n\
         |---|---|---|---|---|---|---|---|"
    );
    for (name, m) in rows {
        let recovery = m.stagnation_recovery_rate.map_or_else(|| "–".to_string(), |r| format!("{:.0}%", 100.0 * r));
        let _ = writeln!(
            s,
            "| {name} | {} | {:.1} | {:.3} | {:.0}% | {} | {recovery} | {:.2} |",
            m.runs,
            m.llm_calls_per_run,
            m.llm_calls_per_step,
            100.0 * m.convergence_rate,
            m.restarts,
            m.seconds_per_run
        );
    }
    s
}
