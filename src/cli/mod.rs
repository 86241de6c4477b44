//! The `attractor` command line: argument parsing and one function per verb.
//!
//! Exit codes: 0 success, 1 a failure while working, 2 bad input (a suite
//! file, an argument, an unknown name), 130 interrupted by Ctrl-C.

mod bench;
mod inspect;
mod key;
mod problems;
mod progress;
mod serve;
mod trajectories;
mod watching;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use tokio::sync::watch;

use crate::artifact::{Registry, RegistryError};
use crate::bus::{self, Bus};
use crate::outer::request::{RunRequest, SelectionName, TreeRequest};
use crate::outer::{ApprovalMode, OptimizerKind, RunnerError};
use crate::store::{self, Store, StoreError};
use crate::suite;

#[derive(Debug, Parser)]
#[command(
    name = "attractor",
    version,
    about = "Run suites of tasks, score every run, and learn the artifacts that steer them."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct Global {
    /// Database file [default: the platform data directory, e.g. ~/.local/share/attractor/attractor.db]
    #[arg(long, global = true, env = store::DB_ENV, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Print nothing but errors (and the result with --json).
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Print machine-readable JSON on stdout instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a suite for some epochs (resuming an epoch an earlier run left unfinished).
    Run(RunArgs),
    /// Work the database's run queue: what the app launched, `run --queue`
    /// queued, or a dead worker left (any number of workers may share it).
    Worker(worker::WorkerArgs),
    /// Check a suite file without running it.
    Validate {
        /// The suite file (YAML).
        suite: PathBuf,
        /// A folder outside the suite's own that its paths may lead into (repeatable).
        #[arg(long = "allow-outside", value_name = "DIR")]
        allow_outside: Vec<PathBuf>,
    },
    /// Show suites, a suite's epochs, or an artifact's versions with diffs.
    Inspect {
        /// A suite name; without one, every suite is listed.
        suite: Option<String>,
        /// Show this artifact's versions with unified diffs instead.
        #[arg(long, value_name = "NAME")]
        artifact: Option<String>,
        /// Show the suite's experiment tree (`--optimizer tree`).
        #[arg(long, requires = "suite")]
        tree: bool,
    },
    /// Make an earlier version of an artifact the active one (0 = the default).
    Rollback { artifact: String, version: i64 },
    /// Export a suite's epochs and runs.
    Export {
        suite: String,
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
        /// Write to this file instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Draw a suite's loss curve, per-task loss and artifact timeline to PNG
    /// and SVG, with an index.html that shows them above the epoch table.
    Report {
        /// The suite's name (or id); `attractor inspect` lists them.
        suite: String,
        /// The folder to write into (created when missing; files of an older
        /// report there are replaced).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Every proposal the optimizer considered for a suite: predicted against
    /// observed loss reduction, and why the losers lost.
    Proposals { suite: String },
    /// Show an optimize run's step-by-step ASO telemetry (an agent run's
    /// trajectory for agent tasks).
    Telemetry {
        /// The run's id (`attractor inspect SUITE --json` lists them).
        run_id: i64,
    },
    /// Show an agent run's trajectory: every iteration's strategy, convergence
    /// level, attractor, goal-gradient directive and loop control.
    Trajectory {
        /// The run's id (`attractor inspect SUITE --json` lists them).
        run_id: i64,
    },
    /// The trajectory repository and convergence memory of agent tasks:
    /// `stats`, `similar RUN_ID|TASK`, `memories`.
    #[command(subcommand)]
    Trajectories(trajectories::TrajectoriesCommand),
    /// Benchmarks, measured side by side in one run (see bench/README.md).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Prune what grows with every run and is not history: run folders of
    /// old epochs and old cached model replies; then vacuum the database.
    Gc(GcArgs),
    /// List the questions waiting for a person and the open notices (with
    /// --all, the answered questions and dismissed notices too).
    Interventions {
        #[arg(long)]
        all: bool,
    },
    /// Dismiss a notice (a notice waits on nobody; dismissing clears it from the inbox).
    Dismiss { id: i64 },
    /// Answer an intervention: approve, reject, or give a hint.
    Answer {
        id: i64,
        #[arg(value_enum)]
        answer: Answer,
        /// The hint (required with `hint`); with `reject`, why.
        text: Option<String>,
        /// For an artifact update: approve this file's content (your edit
        /// of the proposal) instead of the proposal itself.
        #[arg(long, value_name = "FILE")]
        content: Option<PathBuf>,
    },
    /// List the numeric problems, or evaluate points of one over stdin/stdout.
    Problems {
        #[command(subcommand)]
        command: problems::ProblemsCommand,
    },
    /// Serve the web UI and its HTTP API (loopback by default).
    Serve(serve::ServeArgs),
    /// Watch folders for suite and task files: validate, register, ask before running commands.
    Watch(watching::WatchArgs),
    /// Keep the LLM API key in the operating system's keychain.
    #[command(subcommand)]
    Key(key::KeyCommand),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Answer {
    Approve,
    Reject,
    Hint,
}

/// `attractor gc`.
#[derive(Debug, clap::Args)]
pub struct GcArgs {
    /// Keep the run folders of each suite's last N epochs.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub keep_epochs: u32,
    /// Keep cached model replies younger than DAYS.
    #[arg(long, default_value_t = 30, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(0..=36_500))]
    pub cache_days: u32,
    /// The runs folder; only folders inside it are removed [default: `runs/<database name>` beside the database].
    #[arg(long, env = "ATTRACTOR_RUNS_DIR", value_name = "DIR")]
    pub runs_dir: Option<PathBuf>,
    /// Say what would go, change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `attractor run`'s flags: a [`RunRequest`] spelled as a command line
/// (bounds are checked once, by the request), plus where run folders go.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The suite file (YAML).
    pub suite: PathBuf,
    /// A folder outside the suite's own that its paths may lead into (repeatable).
    #[arg(long = "allow-outside", value_name = "DIR")]
    pub allow_outside: Vec<PathBuf>,
    /// Epochs to run; the same command after a stopped run finishes the
    /// epochs it planned (an unfinished epoch counts as one).
    #[arg(long, default_value_t = 1)]
    pub epochs: u32,
    /// How artifacts move between epochs.
    #[arg(long, value_enum, default_value_t = OptimizerKind::Baseline)]
    pub optimizer: OptimizerKind,
    /// Step size η in [0, 1]; halves after every rollback.
    #[arg(long, default_value_t = 0.5)]
    pub learning_rate: f64,
    /// Keep updates even when the mean loss gets worse.
    #[arg(long)]
    pub no_rollback: bool,
    /// Runs in flight at once (1 to 256).
    #[arg(long, default_value_t = 2)]
    pub concurrency: u32,
    /// Base seed for the optimizer's random choices [default: random, printed and recorded].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run optimize tasks on heuristics alone, even when an LLM is configured
    /// (ATTRACTOR_LLM_MODEL).
    #[arg(long)]
    pub no_llm: bool,
    /// Where run directories go [default: `runs/<database name>` beside the database].
    #[arg(long, env = "ATTRACTOR_RUNS_DIR", value_name = "DIR")]
    pub runs_dir: Option<PathBuf>,
    /// Only put the run in the database's queue, for `attractor worker`
    /// (or an app open on the database) to run; print its id.
    #[arg(long)]
    pub queue: bool,
    /// How far the held-out mean loss may rise over the previous epoch's
    /// before the update behind it is rolled back [default: 0.01].
    #[arg(long)]
    pub holdout_tolerance: Option<f64>,
    /// Settings of agent tasks as JSON over the defaults (engine numbers,
    /// overseer retries, intent verifier, how long a question waits).
    #[arg(long, value_name = "FILE")]
    pub agent_config: Option<PathBuf>,
    /// Run agent tasks' overseers and command executors without the
    /// sandbox, with your full rights (also ATTRACTOR_SANDBOX=off).
    #[arg(long)]
    pub no_sandbox: bool,
    /// Seconds one model call may take (each attempt) [default: 120].
    #[arg(long, value_name = "SECS")]
    pub llm_timeout: Option<f64>,
    /// HTTP attempts per model call, the first included [default: 3].
    #[arg(long, value_name = "N")]
    pub llm_attempts: Option<u32>,
    /// Seconds of model time the whole run may spend [default: no limit].
    #[arg(long, value_name = "SECS")]
    pub max_model_secs: Option<f64>,
    /// A reply budget per role, e.g. `--max-tokens proposer=1024`
    /// (roles: proposer, executor, verifier, decomposer, supervisor, ideation).
    #[arg(long, value_name = "ROLE=N", value_parser = parse_role_tokens)]
    pub max_tokens: Vec<(crate::llm::CallRole, u32)>,
    /// The largest model reply accepted, in bytes [default: 262144].
    #[arg(long, value_name = "BYTES")]
    pub max_reply_bytes: Option<usize>,
    /// What the run may spend on model calls, at the prices in the settings
    /// file (`model_prices`; a model on this machine is free). The run stops
    /// cleanly, keeping what it finished, before a call that could go over
    /// [default: no limit].
    #[arg(long, value_name = "AMOUNT")]
    pub max_cost: Option<f64>,
    /// Tree search: children per round (1 to 64).
    #[arg(long, default_value_t = 3)]
    pub width: u32,
    /// Tree search: rounds without a new best before stopping.
    #[arg(long, default_value_t = 3)]
    pub stall: u32,
    /// Evaluations behind each decision: every tree node, or the epochs after
    /// a textgrad/evolve update (1 to 20) [default: the suite's `verify_repeats`,
    /// 3 on a `noisy: true` suite, else 1].
    #[arg(long)]
    pub verify_repeats: Option<u32>,
    /// Whether each winning artifact update waits in the Inbox for a person
    /// to approve, edit or reject it: `wait` (the run waits too), `continue`
    /// (it goes on with the versions it has) or `off` [default: the suite's
    /// `approve_updates`, else off].
    #[arg(long, value_enum, value_name = "MODE")]
    pub approve_updates: Option<ApprovalMode>,
    /// Tree search: ideation calls (frontier extrapolation, failure analysis)
    /// before stopping on stall, each feeding one more round; 0 turns them off.
    #[arg(long, default_value_t = 1)]
    pub ideation_rounds: u32,
    /// Tree search: how parents are picked from the frontier.
    #[arg(long, value_enum, default_value_t = SelectionName::Pareto)]
    pub selection: SelectionName,
    /// Tree search: children one brief may make in a round, each from the
    /// last one committed (the per-branch budget); 1 turns deepening off.
    #[arg(long, default_value_t = 5)]
    pub branch_depth: u32,
}

impl RunArgs {
    /// The run these flags ask for (everything but `--runs-dir`, which is
    /// this machine's business).
    pub fn request(&self) -> RunRequest {
        RunRequest {
            suite_path: self.suite.display().to_string(),
            allow_outside: self.allow_outside.iter().map(|p| p.display().to_string()).collect(),
            epochs: self.epochs,
            optimizer: self.optimizer,
            learning_rate: self.learning_rate,
            rollback: !self.no_rollback,
            concurrency: self.concurrency,
            seed: self.seed,
            no_llm: self.no_llm,
            holdout_tolerance: self.holdout_tolerance,
            verify_repeats: self.verify_repeats,
            approve_updates: self.approve_updates,
            tree: TreeRequest {
                width: self.width,
                stall: self.stall,
                ideation_rounds: self.ideation_rounds,
                selection: self.selection,
                branch_depth: self.branch_depth,
            },
            agent_config: self.agent_config.as_ref().map(|p| p.display().to_string()),
            no_sandbox: self.no_sandbox,
            model: crate::llm::LlmLimits {
                timeout_secs: self.llm_timeout,
                attempts: self.llm_attempts,
                max_model_secs: self.max_model_secs,
                max_tokens: self.max_tokens.iter().copied().collect(),
                max_reply_bytes: self.max_reply_bytes,
                max_stored_chars: None,
                max_cost: self.max_cost,
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
}

/// The exit code of a run refused because another run holds its suite.
pub const EXIT_BUSY: u8 = 3;
/// The suite ran to the end, and some of its runs failed or were aborted.
pub const EXIT_RUNS_FAILED: u8 = 4;

/// An error on its way to the terminal, with the exit code it means.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn input(message: impl Into<String>) -> Self {
        Failure { code: 2, message: message.into() }
    }
    pub fn runtime(message: impl Into<String>) -> Self {
        Failure { code: 1, message: message.into() }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict(_) => Failure::input(e.to_string()),
            e => Failure::runtime(e.to_string()),
        }
    }
}

impl From<RegistryError> for Failure {
    fn from(e: RegistryError) -> Self {
        match e {
            RegistryError::Store(s) => s.into(),
            e => Failure::input(e.to_string()),
        }
    }
}

impl From<crate::queue::WorkError> for Failure {
    fn from(e: crate::queue::WorkError) -> Self {
        use crate::queue::{PrepareError, WorkError};
        match e {
            WorkError::Run(e) | WorkError::Prepare(PrepareError::Runner(e)) => e.into(),
            WorkError::Prepare(PrepareError::Store(e)) | WorkError::Store(e) => e.into(),
            WorkError::Prepare(e) => Failure::input(e.to_string()),
            e @ WorkError::Unreadable(..) => Failure::runtime(e.to_string()),
        }
    }
}

impl From<RunnerError> for Failure {
    fn from(e: RunnerError) -> Self {
        match e {
            RunnerError::Registry(r) => r.into(),
            RunnerError::Store(s) => s.into(),
            e @ (RunnerError::AgentNeedsModel { .. }
            | RunnerError::AgentWorkspace { .. }
            | RunnerError::Sandbox(_)
            | RunnerError::Baseline(_)) => Failure::input(e.to_string()),
            e @ RunnerError::Busy { .. } => Failure { code: EXIT_BUSY, message: e.to_string() },
            e => Failure::runtime(e.to_string()),
        }
    }
}

/// Runs the parsed command line and returns the process exit code.
pub async fn main(cli: Cli) -> ExitCode {
    match dispatch(cli).await {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

async fn dispatch(cli: Cli) -> Result<u8, Failure> {
    let g = &cli.global;
    match &cli.command {
        Command::Validate { suite, allow_outside } => validate(g, suite, allow_outside),
        Command::Problems { command } => problems::run(g, command),
        Command::Run(args) => run(g, args).await,
        Command::Worker(args) => worker::run(g, args).await,
        Command::Serve(args) => serve::serve(g, args).await,
        Command::Watch(args) => watching::watch(g, args).await,
        // Keychain calls block (D-Bus, or a prompt to unlock the keyring).
        Command::Key(command) => tokio::task::block_in_place(|| key::run(command)),
        Command::Inspect { suite, artifact, tree } => {
            let store = open(g).await?;
            match artifact {
                Some(name) => inspect::artifact(g, &store, name).await?,
                None if *tree => inspect::tree(g, &store, suite.as_deref().unwrap_or_default()).await?,
                None => match suite {
                    Some(s) => inspect::suite(g, &store, s).await?,
                    None => inspect::suites(g, &store).await?,
                },
            }
            Ok(0)
        }
        Command::Rollback { artifact, version } => {
            let store = open(g).await?;
            let registry = Registry::load(store.clone()).await?;
            let before = registry.get_active(artifact).await?.version;
            registry.rollback_to(artifact, *version).await?;
            if g.json {
                println!(
                    "{}",
                    serde_json::json!({ "artifact": artifact, "from_version": before, "to_version": version })
                );
            } else if !g.quiet {
                println!("{artifact}: active version is now v{version} (was v{before})");
            }
            Ok(0)
        }
        Command::Export { suite, format, output } => {
            let store = open(g).await?;
            inspect::export(&store, suite, *format, output.as_deref()).await?;
            Ok(0)
        }
        Command::Report { suite, out } => report(g, suite, out).await,
        Command::Proposals { suite } => {
            let store = open(g).await?;
            inspect::proposals(g, &store, suite).await?;
            Ok(0)
        }
        Command::Telemetry { run_id } => {
            let store = open(g).await?;
            if store.trajectories_of_run(*run_id).await?.is_empty() {
                inspect::telemetry(g, &store, *run_id).await?;
            } else {
                inspect::trajectory(g, &store, *run_id).await?;
            }
            Ok(0)
        }
        Command::Trajectory { run_id } => {
            let store = open(g).await?;
            inspect::trajectory(g, &store, *run_id).await?;
            Ok(0)
        }
        Command::Trajectories(command) => {
            let store = open(g).await?;
            trajectories::run(g, &store, command).await?;
            Ok(0)
        }
        Command::Bench(command) => bench::run(g, command).await,
        Command::Gc(args) => gc(g, args).await,
        Command::Interventions { all } => {
            let store = open(g).await?;
            inspect::interventions(g, &store, *all).await?;
            Ok(0)
        }
        Command::Answer { id, answer, text, content } => {
            let store = open(g).await?;
            if store.update_approval_of_question(*id).await?.is_some() {
                return answer_update(g, &store, *id, *answer, text.clone(), content.as_deref()).await;
            }
            if content.is_some() {
                return Err(Failure::input(format!(
                    "--content is for a question about an artifact update, and intervention {id} is not one"
                )));
            }
            let (word, text) = match (answer, text) {
                (Answer::Hint, None) => {
                    return Err(Failure::input("a hint needs its text: `attractor answer ID hint \"your hint\"`"));
                }
                (Answer::Hint, Some(t)) => ("hint", Some(t.as_str())),
                (Answer::Approve, t) => ("approve", t.as_deref()),
                (Answer::Reject, t) => ("reject", t.as_deref()),
            };
            let Some(row) = store.intervention(*id).await? else {
                return Err(Failure::input(format!(
                    "no intervention {id}\n  hint: `attractor interventions` lists the pending ones"
                )));
            };
            if matches!(row.status.as_str(), "notice" | "dismissed") {
                return Err(Failure::input(format!(
                    "intervention {id} is a notice: nothing waits on an answer\n  hint: `attractor dismiss {id}` \
                     clears it from the inbox"
                )));
            }
            if row.kind == crate::watch::EXECUTION_APPROVAL && *answer == Answer::Hint {
                return Err(Failure::input(format!(
                    "intervention {id} asks whether commands may run: answer approve or reject"
                )));
            }
            if !store.answer_intervention(*id, word, text).await? {
                return Err(Failure::input(format!(
                    "intervention {id} was already answered ({})",
                    row.answer.unwrap_or_default()
                )));
            }
            if !g.quiet {
                println!("intervention {id} answered: {word}");
            }
            Ok(0)
        }
        Command::Dismiss { id } => {
            let store = open(g).await?;
            let Some(row) = store.intervention(*id).await? else {
                return Err(Failure::input(format!(
                    "no intervention {id}\n  hint: `attractor interventions` lists the open notices"
                )));
            };
            if row.status == "pending" {
                return Err(Failure::input(format!(
                    "intervention {id} is a question waiting for an answer\n  hint: `attractor answer {id} \
                     approve|reject|hint \"…\"`"
                )));
            }
            if !store.dismiss_notice(*id).await? {
                return Err(Failure::input(format!("notice {id} was already dismissed")));
            }
            if !g.quiet {
                println!("notice {id} dismissed");
            }
            Ok(0)
        }
    }
}

/// `attractor report`: through the service facade, the same code as the
/// app's Export.
async fn report(g: &Global, suite: &str, out: &std::path::Path) -> Result<u8, Failure> {
    use crate::service::{Service, ServiceConfig, ServiceError};
    let service = Service::open(ServiceConfig::new(db_path(g))).await.map_err(|e| Failure::runtime(e.to_string()))?;
    let written = service.write_report(suite, &out.display().to_string()).await;
    service.shutdown().await;
    let written = written.map_err(|e| match e {
        ServiceError::Internal(m) => Failure::runtime(m),
        e => Failure::input(e.to_string()),
    })?;
    if g.json {
        println!("{}", serde_json::to_string_pretty(&written).unwrap_or_default());
    } else if !g.quiet {
        println!("report of `{}`: {} files in {}", written.suite, written.files.len(), written.dir);
        println!("open {}", written.index);
    }
    Ok(0)
}

/// The runs folder: the one asked for, else `runs/<database name>` beside the database.
fn runs_root(db: &std::path::Path, asked: Option<&PathBuf>) -> PathBuf {
    asked.cloned().unwrap_or_else(|| crate::store::default_runs_root(db))
}

fn db_path(g: &Global) -> PathBuf {
    g.db.clone().unwrap_or_else(store::default_path)
}

async fn open(g: &Global) -> Result<Store, Failure> {
    Ok(Store::open(&db_path(g)).await?)
}

/// Loads a suite with the folders outside its own the user allowed: the
/// flag's and the settings file's `allowed_outside`.
fn load_suite(path: &std::path::Path, allow_outside: &[PathBuf]) -> Result<suite::Suite, Failure> {
    let settings = crate::service::settings::Settings::load(&crate::service::settings::Settings::path_from_env())
        .map_err(|e| Failure::input(e.to_string()))?;
    let access =
        suite::Access { outside: settings.access().outside.into_iter().chain(allow_outside.iter().cloned()).collect() };
    suite::load_with(path, &access).and_then(suite::check_runnable).map_err(|e| Failure::input(e.to_string()))
}

async fn gc(g: &Global, args: &GcArgs) -> Result<u8, Failure> {
    let db = db_path(g);
    if store::Backend::of(&db) == store::Backend::Sqlite && !db.exists() {
        return Err(Failure::input(format!(
            "there is no database at {}\n  hint: give the one to clean with --db (or ATTRACTOR_DB)",
            db.display()
        )));
    }
    let store = Store::open(&db).await?;
    let runs_root = runs_root(&db, args.runs_dir.as_ref());
    let policy = crate::retention::Policy { keep_epochs: args.keep_epochs, cache_days: args.cache_days, runs_root };
    let plan = crate::retention::plan(&store, &policy).await.map_err(|e| Failure::runtime(e.to_string()))?;
    if !args.dry_run {
        crate::retention::apply(&store, &plan).await.map_err(|e| Failure::runtime(e.to_string()))?;
    }
    if g.json {
        println!("{}", serde_json::to_string_pretty(&plan).unwrap_or_default());
    } else if !g.quiet {
        println!("{}", plan.describe(!args.dry_run));
    }
    Ok(0)
}

fn validate(g: &Global, path: &std::path::Path, allow_outside: &[PathBuf]) -> Result<u8, Failure> {
    let s = load_suite(path, allow_outside)?;
    if g.json {
        println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
    } else if !g.quiet {
        let holdout = s.tasks.iter().filter(|t| t.holdout).count();
        let noisy =
            if s.noisy { format!(", noisy ({} evaluations per decision)", s.verify_repeats()) } else { String::new() };
        println!(
            "{}: suite `{}` is valid: {} tasks ({} held out), {} artifacts of its own{noisy}",
            path.display(),
            s.name,
            s.tasks.len(),
            holdout,
            s.artifacts.len()
        );
    }
    Ok(0)
}

/// The pre-run preview of the model's use: calls, tokens and cost at most.
fn model_line(
    suite: &crate::suite::Suite,
    registry: &Registry,
    req: &RunRequest,
    agent: &crate::task::agent::AgentConfig,
    model: &crate::llm::LlmClient,
) -> Option<String> {
    let run = crate::outer::estimate::PlannedRun {
        suite,
        optimizer: req.optimizer,
        epochs: req.epochs,
        proposal_candidates: crate::outer::estimate::proposal_candidates(suite, registry),
        ideation_rounds: req.tree.ideation_rounds,
        agent,
        supervisor_tier: !req.no_llm,
    };
    crate::outer::estimate::preview_line(&run, model)
}

async fn run(g: &Global, args: &RunArgs) -> Result<u8, Failure> {
    let req = args.request().absolute();
    req.validate().map_err(|e| Failure::input(e.to_string()))?;
    // Loaded here for its located errors before anything is queued, and
    // its name; the worker loads it again from the same path.
    let suite = load_suite(&args.suite, &req.outside())?;
    let db = db_path(g);
    let store = Store::open(&db).await?;

    if args.queue {
        return worker::enqueue(g, &store, &suite.name, &req).await;
    }
    // The LLM tier is on when a model is configured; without one, the
    // coordinator's heuristics answer every step. `--no-llm` turns the tier
    // off but leaves a model-driven optimizer its model.
    let machine = worker::machine(&db, args.runs_dir.as_ref())?;

    let bus = Bus::new();
    let persister = bus::persist(&bus, store.clone());
    // Read-only: it only adds alerts to the bus (agent tasks' trajectories).
    let auditor = crate::auditor::spawn(&bus, crate::auditor::AuditConfig::default());
    let show = !g.quiet && !g.json;
    let renderer = progress::spawn(&bus, show, args.epochs, suite.tasks.len());
    let worker = crate::queue::Worker::new(store.clone(), bus.clone(), machine, "attractor run");
    // The request goes into the store's queue as this process's own, so an
    // app open on the same database shows the run live.
    let row = match worker.enqueue_own(&suite.name, &req).await? {
        Ok(id) => store.queued_request(id).await?.ok_or_else(|| Failure::runtime(format!("request {id} vanished")))?,
        Err(busy) => {
            bus.close();
            return Err(RunnerError::Busy {
                suite: suite.name.clone(),
                holder: busy.holder.unwrap_or_else(|| format!("a queued request ({})", busy.id)),
                since: busy.started_at.unwrap_or(busy.enqueued_at),
            }
            .into());
        }
    };

    // Ctrl-C: stop launching runs, kill the ones in flight (they are marked
    // cancelled and run again on resume), close the epoch books cleanly.
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ninterrupted: stopping the runs in flight; run the same command again to resume");
            let _ = cancel_tx.send(true);
        }
    });

    // Every model client of the run shares these counters (clones of one client).
    let mut usage = None;
    let started = std::time::Instant::now();
    let worked = worker
        .work_with(&row, cancel_rx, |p, registry| {
            usage = p.model.as_ref().map(|c| std::sync::Arc::clone(c.usage()));
            if show {
                eprintln!(
                    "{}",
                    req.plan_line(&p.suite, crate::outer::estimate::proposal_candidates(&p.suite, registry))
                );
                if p.suite.tasks.iter().any(|t| matches!(t.kind, crate::suite::TaskKind::Agent(_))) {
                    eprintln!("sandbox: {}", p.agent.sandbox.describe());
                }
                if let Some(line) = p.model.as_ref().and_then(|m| model_line(&p.suite, registry, &req, &p.agent, m)) {
                    eprintln!("{line}");
                }
            }
        })
        .await;
    let result = worked.outcome;
    ctrl_c.abort();
    bus.close();
    let _ = auditor.await;
    let _ = persister.await;
    let _ = renderer.await;
    // What did not succeed, for the exit code: a suite whose runs failed
    // or were aborted did not do its job, whatever the loss says.
    let mut unsuccessful = Vec::new();
    if let Ok(s) = &result {
        for e in &s.epochs {
            unsuccessful.extend(store.unsuccessful_runs(e.epoch_id).await.unwrap_or_default());
        }
    }
    store.close().await;

    let by_role = usage.map(|u| u.by_role()).unwrap_or_default();
    let model_use = crate::llm::model_use_line(&by_role, started.elapsed());
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            // What the model cost is worth knowing most when the run failed.
            if let Some(line) = &model_use {
                eprintln!("{line}");
            }
            return Err(e.into());
        }
    };
    if g.json {
        let mut value = serde_json::to_value(&summary).unwrap_or_default();
        value["model_use"] = serde_json::to_value(&by_role).unwrap_or_default();
        println!("{}", serde_json::to_string_pretty(&value).unwrap_or_default());
    } else if !g.quiet {
        let first = summary.epochs.first().and_then(|e| e.mean_loss);
        let last = summary.epochs.last().and_then(|e| e.mean_loss);
        if let (Some(a), Some(b)) = (first, last) {
            println!(
                "suite `{}`: {} epoch(s), mean loss {a:.4} → {b:.4}, learning rate now {}, seed {}",
                summary.suite,
                summary.epochs.len(),
                summary.learning_rate,
                summary.seed
            );
        }
        if let Some(line) = &model_use {
            println!("{line}");
        }
        if let Some(reason) = &summary.stopped {
            println!("stopped after {} epoch(s): {reason}", summary.epochs.len());
        }
        println!("database: {}", store::shown_location(&db).display());
    }
    if summary.interrupted {
        return Ok(130);
    }
    if !unsuccessful.is_empty() {
        if !g.quiet {
            let runs: Vec<String> =
                unsuccessful.iter().map(|r| format!("{} (run {}, {})", r.task_name, r.id, r.status)).collect();
            eprintln!(
                "{} run(s) failed or were aborted: {}\n  hint: `attractor inspect {}` shows each run's error",
                unsuccessful.len(),
                runs.join(", "),
                summary.suite
            );
        }
        return Ok(EXIT_RUNS_FAILED);
    }
    Ok(0)
}

/// `ROLE=N` for `--max-tokens`.
fn parse_role_tokens(s: &str) -> Result<(crate::llm::CallRole, u32), String> {
    let (role, n) = s.split_once('=').ok_or_else(|| format!("`{s}` is not ROLE=N (e.g. proposer=1024)"))?;
    let role = crate::llm::CallRole::ALL.into_iter().find(|r| r.as_str() == role.trim()).ok_or_else(|| {
        let names: Vec<&str> = crate::llm::CallRole::ALL.iter().map(|r| r.as_str()).collect();
        format!("unknown role `{}`; use one of {}", role.trim(), names.join(", "))
    })?;
    let n: u32 = n.trim().parse().map_err(|_| format!("`{}` is not a whole number of tokens", n.trim()))?;
    if !(1..=crate::llm::MAX_TOKENS_LIMIT).contains(&n) {
        return Err(format!("{n} tokens is out of range (1 to {})", crate::llm::MAX_TOKENS_LIMIT));
    }
    Ok((role, n))
}

/// `attractor answer` on a gated artifact update: approve (as proposed, or
/// a file's content as the edit) or reject (the text as the reason).
async fn answer_update(
    g: &Global,
    store: &Store,
    id: i64,
    answer: Answer,
    text: Option<String>,
    content: Option<&std::path::Path>,
) -> Result<u8, Failure> {
    use crate::outer::approval::{self, DecideError, Decision};
    let decision = match answer {
        Answer::Approve => {
            let content =
                match content {
                    Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
                        Failure::input(format!("{}: cannot read the edited content: {e}", path.display()))
                    })?),
                    None => None,
                };
            Decision::Approve { content }
        }
        Answer::Reject if content.is_some() => {
            return Err(Failure::input("--content goes with `approve` (the edit to approve), not with `reject`"));
        }
        Answer::Reject => Decision::Reject { reason: text },
        Answer::Hint => {
            return Err(Failure::input(format!(
                "intervention {id} asks whether an artifact update may become active: answer approve (with \
                 --content FILE for your edit of it) or reject \"why\""
            )));
        }
    };
    let decided = approval::decide(store, id, decision).await.map_err(|e| match e {
        DecideError::Runner(e) => Failure::from(e),
        e => Failure::input(e.to_string()),
    })?;
    if !g.quiet {
        let a = &decided.approval;
        match (answer, decided.applied) {
            (Answer::Reject, _) => println!("update to `{}` rejected", a.artifact),
            (_, Some((to, from))) => println!("update to `{}` approved: v{to} is active (was v{from})", a.artifact),
            _ => println!(
                "update to `{}` approved: the run working the suite applies it at its next epoch's close",
                a.artifact
            ),
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    fn run_args(extra: &[&str]) -> RunArgs {
        let mut argv = vec!["attractor", "run", "s.suite.yaml"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Command::Run(args)) => args,
            other => panic!("not a run: {other:?}"),
        }
    }

    /// Each flag of `attractor run` but `--runs-dir` (where this machine
    /// keeps run folders) is an option of the run request, so the app's
    /// launch form and the API can ask for everything the CLI can.
    #[test]
    fn every_run_flag_but_the_machines_own_changes_the_run_request() {
        let samples: &[(&str, &str)] = &[
            ("allow-outside", "/tmp/x"),
            ("epochs", "4"),
            ("optimizer", "tree"),
            ("learning-rate", "0.25"),
            ("no-rollback", ""),
            ("concurrency", "3"),
            ("seed", "9"),
            ("no-llm", ""),
            ("holdout-tolerance", "0.2"),
            ("agent-config", "a.json"),
            ("no-sandbox", ""),
            ("llm-timeout", "9"),
            ("llm-attempts", "2"),
            ("max-model-secs", "50"),
            ("max-tokens", "proposer=99"),
            ("max-reply-bytes", "4096"),
            ("max-cost", "1.5"),
            ("width", "2"),
            ("stall", "1"),
            ("verify-repeats", "2"),
            ("approve-updates", "wait"),
            ("ideation-rounds", "0"),
            ("selection", "argmax"),
            ("branch-depth", "1"),
        ];
        let machine = ["runs-dir", "queue"];
        let cli = Cli::command();
        let run = cli.find_subcommand("run").expect("a run subcommand");
        let flags: Vec<&str> = run.get_arguments().filter_map(|a| a.get_long()).collect();
        assert!(flags.len() > 20, "{flags:?}");
        for flag in &flags {
            assert!(
                machine.contains(flag) || samples.iter().any(|(f, _)| f == flag),
                "`--{flag}` is neither in the run request nor the machine's own"
            );
        }
        let plain = run_args(&[]).request();
        assert_eq!(plain, RunRequest::new("s.suite.yaml"), "the CLI's defaults are the request's");
        for (flag, value) in samples {
            let long = format!("--{flag}");
            let args: Vec<&str> = if value.is_empty() { vec![&long] } else { vec![&long, value] };
            let req = run_args(&args).request();
            assert_ne!(req, plain, "`{long} {value}` did not reach the request");
            assert!(req.validate().is_ok(), "`{long} {value}`: {:?}", req.validate());
        }
    }

    #[test]
    fn a_flag_out_of_bounds_is_refused_by_the_request_with_the_flag_named() {
        let e = run_args(&["--width", "0", "--learning-rate", "2"]).request().validate().unwrap_err().to_string();
        assert!(e.contains("field `tree.width` (--width): 0 is outside 1..=64"), "{e}");
        assert!(e.contains("field `learning_rate` (--learning-rate): 2 is outside [0, 1]"), "{e}");
    }
}
