//! Suite files: the YAML people write to describe a set of tasks.
//!
//! The schema is seed 004 §9 (name, description, baseline_artifacts, tasks
//! with name, task, workflow, model, budget, weights) plus Attractor's
//! extensions: a task `kind` (command, agent, optimize) with its own fields,
//! `holdout`, `priority`, `hints`, `constraints`, `anti_patterns`,
//! `parallel_samples`, the suite's own learnable `artifacts`, and `noisy` /
//! `verify_repeats` (runs with the same artifacts give different losses, so
//! a change is judged on the mean of several evaluations and their spread).
//!
//! Loading is strict: unknown keys, wrong types, duplicate task names, weights
//! outside [0, 1] and empty suites are errors that name the file, line,
//! column and field, and say how to fix them. A suite that loads is valid.
//!
//! A *task file* (`*.task.yaml`, see [`taskfile`]) is a second way to write a
//! suite: one task on its own, registered as a one-task suite. [`load`] and
//! [`parse`] tell the two apart by the file name.

pub mod examples;
pub mod names;
pub mod patterns;
mod raw;
mod runnable;
pub mod taskfile;
mod validate;

pub use crate::domain::{ASO_AGENT_KIND, shown_number};
pub use crate::textfile::{
    SourceLocation, SuiteError, SuiteIssue, decode_text, issues_at, locate, parse_strict, read_text,
};
pub use names::{folder_name, valid_label, valid_name};
pub use runnable::check_runnable;
use validate::Validator;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_saphyr::{Location, Spanned};

use crate::artifact::{ArtifactDef, ArtifactKind, Origin, builtin};
use crate::loss::{DEFAULT_MAX_REJECTIONS, LossWeights};

/// Evaluations behind each decision on a suite marked `noisy: true` that
/// does not say `verify_repeats` (seed 001: 3 when variance is expected).
pub const DEFAULT_NOISY_VERIFY_REPEATS: u32 = 3;
/// The most evaluations a suite may ask for per decision.
pub const MAX_VERIFY_REPEATS: u32 = 20;

/// How long a command task may run when neither `timeout` nor
/// `budget.max_wall_time` says.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// A loaded, valid suite.
#[derive(Debug, Clone, Serialize)]
pub struct Suite {
    pub name: String,
    pub description: Option<String>,
    /// The file it came from, and its folder (relative paths resolve there).
    pub path: PathBuf,
    pub dir: PathBuf,
    /// Versions to activate before the first epoch (0 = the default).
    pub baseline_artifacts: BTreeMap<String, i64>,
    /// The suite's own learnable artifacts.
    pub artifacts: Vec<ArtifactDef>,
    pub tasks: Vec<Task>,
    /// Whether the folder watcher runs it by itself once registered (`run: auto`).
    pub run: RunMode,
    /// Runs with the same artifacts give different losses (`noisy: true`).
    pub noisy: bool,
    /// `verify_repeats:` as written (only on a noisy suite).
    pub verify_repeats: Option<u32>,
    /// `llm:`: limits of the model calls its runs make (over the app's
    /// settings; the CLI's flags go over these).
    pub llm: crate::llm::LlmLimits,
    /// `approve_updates:`: whether each winning artifact update waits in the
    /// Inbox for a person (a run's `--approve-updates` goes over it).
    pub approve_updates: crate::domain::ApprovalMode,
}

/// One task of a suite.
#[derive(Debug, Clone, Serialize)]
pub struct Task {
    pub name: String,
    /// What to do, in words (given to the run as `ATTRACTOR_TASK`).
    pub task: String,
    #[serde(flatten)]
    pub kind: TaskKind,
    pub workflow: Option<String>,
    pub model: Option<String>,
    pub budget: Budget,
    pub weights: LossWeights,
    /// Evaluated every epoch, never shown to an optimizer.
    pub holdout: bool,
    pub priority: Option<Priority>,
    pub hints: Vec<String>,
    pub constraints: Vec<String>,
    pub anti_patterns: Vec<String>,
    pub parallel_samples: u32,
    /// Labels a worker must offer to run it (`needs: [python, gpu]`); any
    /// worker runs a task that needs nothing. Left out of the digest when
    /// empty, so tasks written before it keep theirs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
    /// Where the task starts in the file, for errors found later (at run time).
    #[serde(skip)]
    pub location: SourceLocation,
}

impl Suite {
    /// What a person should know before running the suite, though nothing
    /// is wrong with it: agent tasks with tests and no `targets:`.
    pub fn notes(&self) -> Vec<String> {
        self.tasks
            .iter()
            .filter(|t| {
                matches!(&t.kind, TaskKind::Agent(a)
                    if a.targets.is_empty() && a.overseers.iter().any(|o| o.kind == OverseerKind::Test))
            })
            .map(|t| {
                format!(
                    "task `{}` names no `targets:`; the tests that fail before its first change will be its targets, \
                     and if none fails then only regressions are judged (name the tests the task is about with \
                     `targets:` to say what done means)",
                    t.name
                )
            })
            .collect()
    }

    /// Evaluations behind each keep/commit decision when the command line
    /// does not say: the suite's `verify_repeats`, else 3 on a noisy suite,
    /// else 1.
    pub fn verify_repeats(&self) -> u32 {
        match (self.noisy, self.verify_repeats) {
            (_, Some(n)) => n,
            (true, None) => DEFAULT_NOISY_VERIFY_REPEATS,
            (false, None) => 1,
        }
    }

    /// The kinds of its tasks (`command`, `agent`, `optimize`), each once,
    /// plus `agent:aso` when an agent task runs under the ASO coordinator
    /// (it then reads the coordinator's artifacts too).
    pub fn task_kinds(&self) -> Vec<&'static str> {
        let mut kinds: Vec<&'static str> = self.tasks.iter().map(Task::kind_name).collect();
        if self.tasks.iter().any(|t| matches!(&t.kind, TaskKind::Agent(a) if a.supervision == Supervision::Aso)) {
            kinds.push(ASO_AGENT_KIND);
        }
        kinds.sort_unstable();
        kinds.dedup();
        kinds
    }
}

impl Task {
    pub fn kind_name(&self) -> &'static str {
        self.kind.name()
    }

    /// A digest of everything the task's runs depend on in the suite file
    /// (not where it stands in the file): a resumed epoch compares it with
    /// its recorded runs' to run a changed task again instead of counting a
    /// run of its old definition.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        // Serializing a struct of plain fields and ordered maps cannot fail;
        // were it to, an empty text still gives a digest (and a rerun).
        let text = serde_json::to_string(self).unwrap_or_default();
        format!("{:x}", Sha256::digest(text.as_bytes()))
    }
}

/// What kind of task it is, with the fields only that kind has.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TaskKind {
    /// A black-box run of any existing harness.
    Command(CommandTask),
    /// A natural-language task for an executor in a workspace (convergence engine).
    Agent(AgentTask),
    /// A constrained numeric problem (ALM under the ASO coordinator).
    Optimize(OptimizeTask),
}

impl TaskKind {
    pub fn name(&self) -> &'static str {
        self.task_type().as_str()
    }

    /// Its kind, as events and views name it.
    pub fn task_type(&self) -> crate::domain::TaskType {
        match self {
            TaskKind::Command(_) => crate::domain::TaskType::Command,
            TaskKind::Agent(_) => crate::domain::TaskType::Agent,
            TaskKind::Optimize(_) => crate::domain::TaskType::Optimize,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CommandTask {
    /// Shell command, run with `sh -c` in the run directory.
    pub command: String,
    #[serde(with = "secs")]
    pub timeout: Duration,
    /// Extra environment variables for the command.
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AgentTask {
    pub workspace: Option<String>,
    pub executor: Option<raw::Executor>,
    pub overseers: Vec<Overseer>,
    /// `aso`: the ASO coordinator supervises the trajectories (seed 000 over
    /// agent tasks); `engine` (the default): the convergence engine alone.
    pub supervision: Supervision,
    /// Globs (relative to the workspace) of files the executor may not
    /// change, on top of the inferred ones.
    pub protected: Vec<String>,
    /// Whether test files, test configuration, CI files and the overseers'
    /// own scripts are protected without being listed.
    pub infer_protected: bool,
    /// The tests the task is about: test ids or patterns (`*` for any run
    /// of characters, or the id's last parts). None named: the tests that
    /// fail before the first change. See `overseer::baseline`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// The anti-patterns with a check (`forbid:`).
    pub forbidden: Vec<Forbidden>,
}

/// An anti-pattern that is checked, not only said: no line the executor
/// adds (to the files `paths` names, all when empty) may match `pattern`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Forbidden {
    /// What to avoid, in words (what the model and the check are named by).
    pub avoid: String,
    /// A regular expression (Rust `regex` syntax), checked to compile.
    pub pattern: String,
    /// Globs relative to the workspace.
    pub paths: Vec<String>,
}

/// A validated overseer: a command that measures the workspace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overseer {
    /// Unique within its task.
    pub name: String,
    /// Shell command, run with `sh -c` in the workspace.
    pub command: String,
    pub kind: OverseerKind,
    pub cost: CostClass,
    /// Custom overseers: output matching this regex passes (`^` and `$`
    /// match at line boundaries).
    pub success_pattern: Option<String>,
    /// Custom overseers: output matching this regex fails (checked first).
    pub failure_pattern: Option<String>,
    /// `None`: the runner's default.
    #[serde(with = "opt_secs")]
    pub timeout: Option<Duration>,
    /// A report file the command writes, relative to the workspace.
    pub report: Option<String>,
    /// Whether the sandbox lets the command use the network.
    #[serde(default)]
    pub network: bool,
    /// A held-out check: the executor never sees its output; the verdict,
    /// the level and the loss include it once the visible checks pass.
    #[serde(default)]
    pub hidden: bool,
}

impl Overseer {
    /// An overseer with the defaults of the suite file (moderate cost, no
    /// patterns, the runner's timeout, no report).
    pub fn new(name: impl Into<String>, kind: OverseerKind, command: impl Into<String>) -> Overseer {
        Overseer {
            name: name.into(),
            command: command.into(),
            kind,
            cost: CostClass::Moderate,
            success_pattern: None,
            failure_pattern: None,
            timeout: None,
            report: None,
            network: false,
            hidden: false,
        }
    }

    pub fn cost(mut self, cost: CostClass) -> Overseer {
        self.cost = cost;
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Overseer {
        self.timeout = Some(timeout);
        self
    }

    pub fn success_pattern(mut self, pattern: impl Into<String>) -> Overseer {
        self.success_pattern = Some(pattern.into());
        self
    }

    pub fn failure_pattern(mut self, pattern: impl Into<String>) -> Overseer {
        self.failure_pattern = Some(pattern.into());
        self
    }

    pub fn report(mut self, path: impl Into<String>) -> Overseer {
        self.report = Some(path.into());
        self
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct OptimizeTask {
    /// A built-in problem name or the path of a problem file.
    pub problem: String,
}

pub use raw::{CostClass, Executor, ExecutorKind, OverseerKind, Priority, RunMode, Supervision};

/// Per-task budget overrides (seed 004 §9) plus the gate-rejection scale.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Budget {
    pub max_loops: Option<u32>,
    pub max_total_workers: Option<u32>,
    pub max_total_tokens: Option<u64>,
    /// Seconds.
    pub max_wall_time: Option<f64>,
    /// Gate rejections that saturate the gate component of the loss.
    pub max_rejections: u32,
    /// Problem evaluations (optimize tasks).
    pub max_evaluations: Option<u64>,
}

/// What suite and task files are, for the hints of a file that is not one.
pub const SUITE_FILE_HINT: &str = "suite files are YAML text (see examples/)";

/// Reads and validates a suite file.
pub fn load(path: &Path) -> Result<Suite, SuiteError> {
    load_with(path, &Access::default())
}

/// Folders outside a suite's own that its paths may lead into. Only the
/// user grants this (`--allow-outside DIR`, the `allowed_outside` setting),
/// never a suite or task file on its own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Access {
    pub outside: Vec<PathBuf>,
}

impl Access {
    /// Whether `resolved` (links followed) lies in an allowed folder.
    fn allows(&self, resolved: &Path) -> bool {
        self.outside.iter().any(|dir| {
            let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
            resolved.starts_with(dir)
        })
    }
}

/// [`load`] with the user's [`Access`].
pub fn load_with(path: &Path, access: &Access) -> Result<Suite, SuiteError> {
    let text = read_text(path, "suite file", SUITE_FILE_HINT)?;
    parse_with(&text, path, access)
}

/// Validates suite text as if it came from `path` (used for errors and to
/// resolve relative paths). A path named `*.task.yaml` is read as a task file.
pub fn parse(text: &str, path: &Path) -> Result<Suite, SuiteError> {
    parse_with(text, path, &Access::default())
}

/// [`parse`] with the user's [`Access`].
pub fn parse_with(text: &str, path: &Path, access: &Access) -> Result<Suite, SuiteError> {
    if taskfile::is_task_file(path) {
        return parse_task_file_with(text, path, None, access);
    }
    let raw = parse_yaml(text, path)?;
    Validator::new(path, access).validate(raw)
}

/// Validates a task file. `default_suite` names the suite when the file does
/// not say `suite:` [default: from the file name] — the watcher passes the
/// name a renamed file was first registered under, so it stays one suite.
pub fn parse_task_file(text: &str, path: &Path, default_suite: Option<&str>) -> Result<Suite, SuiteError> {
    parse_task_file_with(text, path, default_suite, &Access::default())
}

/// [`parse_task_file`] with the user's [`Access`].
pub fn parse_task_file_with(
    text: &str,
    path: &Path,
    default_suite: Option<&str>,
    access: &Access,
) -> Result<Suite, SuiteError> {
    let raw = parse_strict::<Spanned<raw::Task>>(text, path, taskfile::MISSING_HINT).map_err(SuiteError::one)?;
    Validator::new(path, access).validate_task_file(raw, default_suite)
}

fn parse_yaml(text: &str, path: &Path) -> Result<raw::Suite, SuiteError> {
    parse_strict(text, path, "add the missing key; see examples/ for a complete suite").map_err(SuiteError::one)
}

mod opt_secs {
    use serde::Serializer;
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }
}

mod secs {
    use serde::Serializer;
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

/// `rel` joined to `dir` when the result stays inside `dir`, links resolved
/// as far as the path exists; else the outside place it leads to.
pub fn inside_folder(dir: &Path, rel: &str) -> Result<PathBuf, PathBuf> {
    use std::path::Component;
    let base = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut resolved = base.clone();
    for part in Path::new(rel).components() {
        match part {
            Component::RootDir | Component::Prefix(_) => resolved = PathBuf::from(part.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                resolved.push(name);
                // An existing part may be a link: follow it to where it lands.
                if let Ok(real) = std::fs::canonicalize(&resolved) {
                    resolved = real;
                }
            }
        }
    }
    if resolved.starts_with(&base) { Ok(resolved) } else { Err(resolved) }
}

#[cfg(test)]
mod tests;
