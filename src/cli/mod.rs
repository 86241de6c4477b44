//! The `attractor` command line: argument parsing and one function per verb.
//!
//! Exit codes: 0 success, 1 a failure while working, 2 bad input (a suite
//! file, an argument, an unknown name), 130 interrupted by Ctrl-C.

mod bench;
mod bench_learn;
mod inspect;
mod key;
pub mod log;
mod problems;
mod progress;
mod run;
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

pub use run::RunArgs;

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
    /// Database file [default: the one chosen on the Settings screen, else the platform data directory, e.g. ~/.local/share/attractor/attractor.db]
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
    /// The workers on the database: who they are, what they offer, whether
    /// they still heartbeat; and the runs queued per suite.
    Workers,
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
    #[arg(long, default_value_t = 30, value_name = "DAYS", value_parser = between::<u32>(0, 36_500))]
    pub cache_days: u32,
    /// The runs folder; only folders inside it are removed [default: `runs/<database name>` beside the database].
    #[arg(long, env = "ATTRACTOR_RUNS_DIR", value_name = "DIR")]
    pub runs_dir: Option<PathBuf>,
    /// Say what would go, change nothing.
    #[arg(long)]
    pub dry_run: bool,
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
        Command::Validate { suite, allow_outside } => validate(g, suite, allow_outside).await,
        Command::Problems { command } => problems::run(g, command),
        Command::Run(args) => run::run(g, args).await,
        Command::Worker(args) => worker::run(g, args).await,
        Command::Workers => {
            let store = open(g).await?;
            worker::list(g, &store).await?;
            Ok(0)
        }
        Command::Serve(args) => serve::serve(g, args).await,
        Command::Watch(args) => watching::watch(g, args).await,
        // Keychain calls block (D-Bus, or a prompt to unlock the keyring).
        Command::Key(command) => tokio::task::block_in_place(|| key::run(command)),
        Command::Inspect { suite: None, artifact: None, tree: false } if missing(&db_path(g)?) => {
            // Nothing run yet: said so, without creating the database.
            inspect::no_suites(g, &db_path(g)?);
            Ok(0)
        }
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
            if let Some(t) = text {
                crate::outer::approval::check_answer_text(t).map_err(Failure::input)?;
            }
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
            if row.raised.kind == crate::domain::InterventionKind::ExecutionApproval.as_str() && *answer == Answer::Hint
            {
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
    let service =
        Service::open(ServiceConfig::new(existing_db_path(g)?)).await.map_err(|e| Failure::runtime(e.to_string()))?;
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

/// The database the verbs use: `--db` (or `ATTRACTOR_DB`), else the one
/// chosen on the Settings screen, else the default — the order `serve` and
/// the desktop app follow, so the command line and the app see one database.
fn db_path(g: &Global) -> Result<PathBuf, Failure> {
    match &g.db {
        Some(db) => Ok(db.clone()),
        None => crate::service::ServiceConfig::from_env().map(|c| c.db_path).map_err(|e| Failure::input(e.to_string())),
    }
}

/// [`db_path`] for a verb that reads or changes what is already there: a
/// SQLite file that does not exist is refused, not created (a mistyped
/// `--db` would leave an empty database and its folders behind).
fn existing_db_path(g: &Global) -> Result<PathBuf, Failure> {
    let db = db_path(g)?;
    if missing(&db) {
        return Err(Failure::input(format!(
            "there is no database at {}\n  hint: run a suite first (`attractor run FILE`), or name the database \
             with --db (or ATTRACTOR_DB)",
            db.display()
        )));
    }
    Ok(db)
}

/// A SQLite database file that is not there (a PostgreSQL URL never is).
fn missing(db: &std::path::Path) -> bool {
    store::Backend::of(db) == store::Backend::Sqlite && !db.exists()
}

async fn open(g: &Global) -> Result<Store, Failure> {
    Ok(Store::open(&existing_db_path(g)?).await?)
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
    let db = existing_db_path(g)?;
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

async fn validate(g: &Global, path: &std::path::Path, allow_outside: &[PathBuf]) -> Result<u8, Failure> {
    let settings = crate::service::settings::Settings::load(&crate::service::settings::Settings::path_from_env())
        .map_err(|e| Failure::input(e.to_string()))?;
    let checked = check_suite(g, path, allow_outside, &settings).await?;
    if g.json {
        // The verdict either way, as the app's validation gives it: a
        // script reads the issues from stdout, not only the exit code.
        let verdict = crate::service::validation_of(&path.display().to_string(), checked.as_ref());
        println!("{}", serde_json::to_string_pretty(&verdict).unwrap_or_default());
    }
    let s = checked.map_err(|e| Failure::input(e.to_string()))?;
    if !g.json && !g.quiet {
        let holdout = s.tasks.iter().filter(|t| t.holdout).count();
        let noisy =
            if s.noisy { format!(", noisy ({} evaluations per decision)", s.verify_repeats()) } else { String::new() };
        println!(
            "{}: suite `{}` is valid: {} ({holdout} held out), {} of its own{noisy}",
            path.display(),
            s.name,
            crate::counted(s.tasks.len() as u64, "task"),
            crate::counted(s.artifacts.len() as u64, "artifact")
        );
        for note in s.notes() {
            println!("note: {note}");
        }
    }
    Ok(0)
}

/// The suite file as `run` would take it: its own issues, then what `run`
/// would still refuse here — an artifact name another suite of this
/// database holds (none when there is no database yet; a database that
/// cannot be opened is said and skipped: validate stays a check of the
/// file), an agent task with no model configured at all (the keychain is
/// not asked: a key is not what makes a model).
async fn check_suite(
    g: &Global,
    path: &std::path::Path,
    allow_outside: &[PathBuf],
    settings: &crate::service::settings::Settings,
) -> Result<Result<suite::Suite, suite::SuiteError>, Failure> {
    let access =
        suite::Access { outside: settings.access().outside.into_iter().chain(allow_outside.iter().cloned()).collect() };
    let s = match suite::load_with(path, &access).and_then(suite::check_runnable) {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    let db = db_path(g)?;
    let declarations = if missing(&db) {
        Vec::new()
    } else {
        let read = async {
            let store = Store::open(&db).await?;
            let rows = store.declarations().await;
            store.close().await;
            rows
        };
        read.await.unwrap_or_else(|e| {
            eprintln!("note: the artifact names of {} were not checked: {e}", store::shown_location(&db).display());
            Vec::new()
        })
    };
    let model = settings.machine_model(None).overlay(&s.llm.to_settings());
    let no_model =
        matches!(crate::llm::LlmConfig::resolve(&model, |n| std::env::var(n).ok()), Err(crate::llm::LlmError::NoModel));
    Ok(crate::outer::preflight::refusals(&s, !no_model, &declarations).map(|()| s))
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
            (Answer::Reject, _) => println!("update to `{}` rejected", a.update.artifact),
            (_, Some((to, from))) => {
                println!("update to `{}` approved: v{to} is active (was v{from})", a.update.artifact)
            }
            _ => println!(
                "update to `{}` approved: the run working the suite applies it at its next epoch's close",
                a.update.artifact
            ),
        }
    }
    Ok(0)
}

/// A flag's whole number from `lo` to `hi`, refused in plain words: clap's
/// own range parser says "0 is not in 1..=64", Rust's syntax.
pub(crate) fn between<T>(lo: T, hi: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy + Send + Sync + 'static,
{
    move |text: &str| match text.trim().parse::<T>() {
        Ok(n) if n >= lo && n <= hi => Ok(n),
        _ => Err(format!("must be a whole number from {lo} to {hi}")),
    }
}
