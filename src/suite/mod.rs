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
mod raw;
mod runnable;
pub mod taskfile;
mod yaml;

pub use runnable::check_runnable;
pub use yaml::{decode_text, issues_at, locate, parse_strict, read_text};

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
    pub approve_updates: crate::outer::ApprovalMode,
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
    /// Where the task starts in the file, for errors found later (at run time).
    #[serde(skip)]
    pub location: SourceLocation,
}

impl Suite {
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

/// The pseudo-kind of [`Suite::task_kinds`] for agent tasks under the ASO coordinator.
pub const ASO_AGENT_KIND: &str = "agent:aso";

impl Task {
    pub fn kind_name(&self) -> &'static str {
        self.kind.name()
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
        match self {
            TaskKind::Command(_) => "command",
            TaskKind::Agent(_) => "agent",
            TaskKind::Optimize(_) => "optimize",
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

/// A place in a suite file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceLocation {
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// One problem found in a suite file.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteIssue {
    pub location: SourceLocation,
    /// Dotted path of the offending field, e.g. `tasks[1].weights.eval`.
    pub field: String,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for SuiteIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.location)?;
        if !self.field.is_empty() {
            write!(f, "field `{}`: ", self.field)?;
        }
        write!(f, "{}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// Why a suite did not load: every problem found, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteError {
    pub issues: Vec<SuiteIssue>,
}

impl SuiteError {
    pub(crate) fn one(issue: SuiteIssue) -> Self {
        SuiteError { issues: vec![issue] }
    }
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.issues.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{issue}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SuiteError {}

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

/// Checks what YAML types alone cannot: names, ranges, per-kind fields.
struct Validator {
    file: PathBuf,
    dir: PathBuf,
    access: Access,
    issues: Vec<SuiteIssue>,
}

impl Validator {
    fn new(path: &Path, access: &Access) -> Self {
        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        Validator { file: path.to_path_buf(), dir, access: access.clone(), issues: Vec::new() }
    }

    /// `rel` resolved from the suite's folder, refused (with an issue at
    /// `loc`) when it leads outside that folder — by `..`, an absolute path
    /// or a symbolic link. A suite from anyone must not read or copy the
    /// rest of the machine — unless the user allowed that folder.
    fn inside(&mut self, loc: Location, field: &str, rel: &str) -> Option<PathBuf> {
        match inside_folder(&self.dir, rel) {
            Ok(path) => Some(path),
            Err(outside) if self.access.allows(&outside) => Some(outside),
            Err(outside) => {
                self.issue(
                    loc,
                    field,
                    format!("`{rel}` leads outside the suite's folder (to {})", outside.display()),
                    "keep the file or folder inside the folder of the suite file, and give its path relative to it; to use a folder elsewhere on purpose, allow it with `--allow-outside DIR` (the app: `allowed_outside` in Settings)",
                );
                None
            }
        }
    }

    /// A count from the file, kept when it lies in `range`; otherwise an
    /// issue naming the range with an example (`example`, as YAML).
    fn count<T>(
        &mut self,
        value: Option<Spanned<T>>,
        field: &str,
        range: std::ops::RangeInclusive<T>,
        example: &str,
    ) -> Option<T>
    where
        T: PartialOrd + Copy + fmt::Display,
    {
        let v = value?;
        if range.contains(&v.value) {
            return Some(v.value);
        }
        self.issue(
            v.referenced,
            field,
            format!("{} is outside {}..={}", v.value, range.start(), range.end()),
            format!("use a count in that range, e.g. `{example}`"),
        );
        None
    }

    fn at(&self, loc: Location) -> SourceLocation {
        SourceLocation { file: self.file.clone(), line: loc.line() as u32, column: loc.column() as u32 }
    }

    fn issue(&mut self, loc: Location, field: impl Into<String>, message: impl Into<String>, hint: impl Into<String>) {
        let hint = hint.into();
        self.issues.push(SuiteIssue {
            location: self.at(loc),
            field: field.into(),
            message: message.into(),
            hint: (!hint.is_empty()).then_some(hint),
        });
    }

    fn validate(mut self, raw: raw::Suite) -> Result<Suite, SuiteError> {
        let name = raw.name.value.trim().to_string();
        if !valid_name(&name) {
            self.issue(raw.name.referenced, "name", format!("suite name `{name}` is not allowed"), NAME_HINT);
        }

        let artifacts = self.artifacts(&name, raw.artifacts);
        let declared: BTreeSet<&str> = artifacts.iter().map(|a| a.name.as_str()).collect();

        let mut baseline = BTreeMap::new();
        for (artifact, version) in raw.baseline_artifacts {
            let field = format!("baseline_artifacts.{artifact}");
            if builtin::find(&artifact).is_none() && !declared.contains(artifact.as_str()) {
                let known: Vec<&str> =
                    builtin::BUILTINS.iter().map(|b| b.name).chain(declared.iter().copied()).collect();
                self.issue(
                    version.referenced,
                    field,
                    format!("unknown artifact `{artifact}`"),
                    format!("use one of: {}", known.join(", ")),
                );
            } else if version.value < 0 {
                self.issue(
                    version.referenced,
                    field,
                    format!("version {} is negative", version.value),
                    "use 0 for the default or a stored version number",
                );
            } else {
                baseline.insert(artifact, version.value);
            }
        }

        let (noisy, verify_repeats) = self.noise(raw.noisy, raw.verify_repeats);
        let llm = self.llm_limits(raw.llm);

        if raw.tasks.value.is_empty() {
            self.issue(raw.tasks.referenced, "tasks", "the suite has no tasks", "add at least one task under `tasks:`");
        }
        let mut seen: BTreeMap<String, Location> = BTreeMap::new();
        let mut tasks = Vec::new();
        for (i, t) in raw.tasks.value.into_iter().enumerate() {
            let prefix = format!("tasks[{i}].");
            // `suite` and `run` are task-file keys; inside a suite file they
            // would silently mean nothing, so they are errors here.
            if let Some(s) = &t.value.suite {
                self.issue(
                    s.referenced,
                    format!("{prefix}suite"),
                    "`suite:` belongs to task files (*.task.yaml), not to a task of a suite file",
                    "remove it: this task already belongs to the suite named at the top of the file",
                );
            }
            if let Some(r) = &t.value.run {
                self.issue(
                    r.referenced,
                    format!("{prefix}run"),
                    "`run:` is set for a whole suite, not per task",
                    "move `run:` to the top level of the suite file",
                );
            }
            if let Some(n) = &t.value.name {
                let task_name = n.value.trim().to_string();
                if let Some(first) = seen.get(&task_name) {
                    self.issue(
                        n.referenced,
                        format!("{prefix}name"),
                        format!("duplicate task name `{task_name}` (first used at line {})", first.line()),
                        "task names must be unique within a suite; rename one",
                    );
                } else {
                    seen.insert(task_name, n.referenced);
                }
            }
            if let Some(task) = self.task(&prefix, t, None) {
                tasks.push(task);
            }
        }

        if self.issues.is_empty() {
            Ok(Suite {
                name,
                description: raw.description,
                path: self.file.clone(),
                dir: self.dir.clone(),
                baseline_artifacts: baseline,
                artifacts,
                tasks,
                run: raw.run.unwrap_or_default(),
                noisy,
                verify_repeats,
                llm,
                approve_updates: raw.approve_updates.unwrap_or_default(),
            })
        } else {
            self.issues.sort_by_key(|i| (i.location.line, i.location.column));
            Err(SuiteError { issues: self.issues })
        }
    }

    /// `protected:` globs, each one a pattern `globset` can compile, relative
    /// to the workspace (no `..`, not absolute).
    fn protected_globs(&mut self, field: &str, raw: Option<Spanned<Vec<String>>>) -> Vec<String> {
        let Some(raw) = raw else { return Vec::new() };
        let mut out = Vec::new();
        for (i, glob) in raw.value.into_iter().enumerate() {
            let glob = glob.trim().to_string();
            let wrong = if glob.is_empty() {
                Some("an empty pattern".to_string())
            } else if glob.starts_with('/') || glob.split('/').any(|part| part == "..") {
                Some(format!("`{glob}` leads outside the workspace"))
            } else {
                crate::task::agent::protect::glob(&glob)
                    .err()
                    .map(|e| format!("`{glob}` is not a usable pattern ({})", e.kind()))
            };
            match wrong {
                Some(message) => self.issue(
                    raw.referenced,
                    format!("{field}[{i}]"),
                    message,
                    "write a glob relative to the workspace, e.g. `tests/**` or `**/conftest.py`",
                ),
                None => out.push(glob),
            }
        }
        out
    }

    /// `anti_patterns:` as the sentences the model reads (every entry) and
    /// the checks of those with a `forbid:` pattern (agent tasks only: they
    /// read what the executor changed in its workspace).
    fn anti_patterns(
        &mut self,
        field: &str,
        raw: Vec<Spanned<raw::AntiPattern>>,
        kind: raw::KindName,
    ) -> (Vec<String>, Vec<Forbidden>) {
        let mut said = Vec::new();
        let mut checked = Vec::new();
        for (i, entry) in raw.into_iter().enumerate() {
            let c = match entry.value {
                raw::AntiPattern::Said(text) => {
                    said.push(text);
                    continue;
                }
                raw::AntiPattern::Checked(c) => c,
            };
            let at = format!("{field}[{i}]");
            said.push(c.avoid.clone());
            if kind != raw::KindName::Agent {
                self.issue(
                    entry.referenced,
                    format!("{at}.forbid"),
                    format!(
                        "a checked anti-pattern reads an agent's changes, but this task is `kind: {}`",
                        kind.as_str()
                    ),
                    "write it as a sentence (`- avoid …`) or set `kind: agent`",
                );
                continue;
            }
            if c.avoid.trim().is_empty() || c.avoid.contains('\n') {
                self.issue(
                    entry.referenced,
                    format!("{at}.avoid"),
                    "`avoid:` must be one line of text",
                    "say in a few words what to avoid (it names the check)",
                );
                continue;
            }
            if checked.iter().any(|f: &Forbidden| f.avoid == c.avoid.trim()) {
                self.issue(
                    entry.referenced,
                    format!("{at}.avoid"),
                    format!("another checked anti-pattern is already called `{}`", c.avoid.trim()),
                    "give each checked anti-pattern its own `avoid:` words (they name its check)",
                );
                continue;
            }
            if let Err(e) = crate::task::agent::forbid::compile(&c.forbid) {
                self.issue(
                    entry.referenced,
                    format!("{at}.forbid"),
                    format!("`{}` is not a usable regular expression: {e}", c.forbid),
                    "write a pattern in Rust `regex` syntax, e.g. `time\\.sleep\\(` or `if n == \\d+`",
                );
                continue;
            }
            let paths = self.protected_globs(
                &format!("{at}.paths"),
                Some(Spanned { value: c.paths, referenced: entry.referenced, defined: entry.defined }),
            );
            checked.push(Forbidden { avoid: c.avoid.trim().to_string(), pattern: c.forbid, paths });
        }
        (said, checked)
    }

    /// `llm:` as settings, checked against the same bounds as the CLI's flags.
    fn llm_limits(&mut self, raw: Option<Spanned<crate::llm::LlmLimits>>) -> crate::llm::LlmLimits {
        let Some(raw) = raw else { return crate::llm::LlmLimits::default() };
        match raw.value.validate() {
            Ok(()) => raw.value,
            Err(invalid) => {
                self.issue(
                    raw.referenced,
                    format!("llm.{}", invalid.field),
                    invalid.message,
                    "see \"Model calls: limits\" in the README for each limit and its bounds",
                );
                crate::llm::LlmLimits::default()
            }
        }
    }

    /// `noisy` and `verify_repeats`: repeats only mean something on a noisy
    /// suite, and one evaluation cannot show its own spread.
    fn noise(&mut self, noisy: Option<Spanned<bool>>, repeats: Option<Spanned<u32>>) -> (bool, Option<u32>) {
        let is_noisy = noisy.as_ref().is_some_and(|n| n.value);
        let Some(r) = repeats else { return (is_noisy, None) };
        if !is_noisy {
            let said = if noisy.is_some() { "`noisy: false`" } else { "no `noisy: true`" };
            self.issue(
                r.referenced,
                "verify_repeats",
                format!("`verify_repeats` is set on a suite with {said}"),
                "add `noisy: true` (runs with the same artifacts give different losses), or remove `verify_repeats`",
            );
            return (is_noisy, None);
        }
        if !(2..=MAX_VERIFY_REPEATS).contains(&r.value) {
            self.issue(
                r.referenced,
                "verify_repeats",
                format!("{} is outside 2..={MAX_VERIFY_REPEATS}", r.value),
                "one evaluation cannot show its own noise: use e.g. `verify_repeats: 3`",
            );
            return (is_noisy, None);
        }
        (is_noisy, Some(r.value))
    }

    /// A task file: one task that is a whole suite (see [`taskfile`]).
    fn validate_task_file(mut self, raw: Spanned<raw::Task>, default_suite: Option<&str>) -> Result<Suite, SuiteError> {
        let top = raw.referenced;
        let (name, name_at) = match (&raw.value.suite, default_suite) {
            (Some(s), _) => (s.value.trim().to_string(), s.referenced),
            (None, Some(d)) => (d.to_string(), top),
            (None, None) => (taskfile::default_suite_name(&self.file), top),
        };
        if !valid_name(&name) {
            let message = if raw.value.suite.is_some() {
                format!("suite name `{name}` is not allowed")
            } else {
                format!("the file name makes the suite name `{name}`, which is not allowed")
            };
            self.issue(name_at, "suite", message, format!("set `suite:` or rename the file; {NAME_HINT}"));
        }
        let run = raw.value.run.as_ref().map(|r| r.value).unwrap_or_default();
        let task = self.task("", raw, Some(&name));
        match task {
            Some(task) if self.issues.is_empty() => Ok(Suite {
                name,
                description: None,
                path: self.file.clone(),
                dir: self.dir.clone(),
                baseline_artifacts: BTreeMap::new(),
                artifacts: Vec::new(),
                tasks: vec![task],
                run,
                noisy: false,
                verify_repeats: None,
                llm: crate::llm::LlmLimits::default(),
                approve_updates: crate::outer::ApprovalMode::Off,
            }),
            _ => {
                self.issues.sort_by_key(|i| (i.location.line, i.location.column));
                Err(SuiteError { issues: self.issues })
            }
        }
    }

    fn artifacts(&mut self, suite: &str, raw: Vec<Spanned<raw::Artifact>>) -> Vec<ArtifactDef> {
        let mut out: Vec<ArtifactDef> = Vec::new();
        for (i, a) in raw.into_iter().enumerate() {
            let at = a.referenced;
            let a = a.value;
            let field = format!("artifacts[{i}]");
            let name = a.name.value.trim().to_string();
            if !valid_name(&name) {
                self.issue(
                    a.name.referenced,
                    format!("{field}.name"),
                    format!("artifact name `{name}` is not allowed"),
                    NAME_HINT,
                );
                continue;
            }
            if builtin::find(&name).is_some() {
                self.issue(
                    a.name.referenced,
                    format!("{field}.name"),
                    format!("`{name}` is a built-in artifact"),
                    "pick another name; built-ins are pinned with `baseline_artifacts`",
                );
                continue;
            }
            if out.iter().any(|d| d.name == name) {
                self.issue(
                    a.name.referenced,
                    format!("{field}.name"),
                    format!("artifact `{name}` is declared twice"),
                    "remove or rename one",
                );
                continue;
            }
            let kind = a.kind.value;
            let content = match (a.content, a.file) {
                (Some(_), Some(f)) => {
                    self.issue(
                        f.referenced,
                        format!("{field}.file"),
                        "give either `content` or `file`, not both",
                        "remove one of them",
                    );
                    continue;
                }
                (None, None) => {
                    self.issue(
                        at,
                        &field,
                        "the artifact has no `content` or `file`",
                        "add `content:` inline or `file:` with a path relative to the suite",
                    );
                    continue;
                }
                (Some(c), None) => self.inline_content(&field, kind, c),
                (None, Some(f)) => {
                    let Some(path) = self.inside(f.referenced, &format!("{field}.file"), &f.value) else {
                        continue;
                    };
                    match std::fs::read_to_string(&path) {
                        Ok(text) if kind == ArtifactKind::Json => {
                            match serde_json::from_str::<serde_json::Value>(&text) {
                                Ok(v) => Some(v),
                                Err(e) => {
                                    self.issue(
                                        f.referenced,
                                        format!("{field}.file"),
                                        format!("{} is not valid JSON: {e}", path.display()),
                                        "fix the file or declare the artifact as `type: text`",
                                    );
                                    None
                                }
                            }
                        }
                        Ok(text) => Some(serde_json::Value::String(text)),
                        Err(e) => {
                            self.issue(
                                f.referenced,
                                format!("{field}.file"),
                                format!("cannot read {}: {e}", path.display()),
                                "paths are relative to the suite file's folder",
                            );
                            None
                        }
                    }
                }
            };
            let Some(content) = content else { continue };
            let mut fields = BTreeMap::new();
            for (fname, bounds) in a.fields {
                let ffield = format!("{field}.fields.{fname}");
                let b = bounds.value;
                if kind != ArtifactKind::Json {
                    self.issue(
                        bounds.referenced,
                        ffield,
                        "only JSON artifacts have tunable fields",
                        "declare the artifact with `type: json`",
                    );
                    continue;
                }
                if !(b.min.is_finite() && b.max.is_finite() && b.min < b.max) {
                    self.issue(
                        bounds.referenced,
                        ffield,
                        format!("bounds [{}, {}] are not a range", b.min, b.max),
                        "set finite `min` < `max`",
                    );
                    continue;
                }
                match content.get(&fname).and_then(serde_json::Value::as_f64) {
                    None => self.issue(
                        bounds.referenced,
                        ffield,
                        format!("the artifact's content has no numeric field `{fname}`"),
                        "tunable fields must be numbers at the top level of the JSON content",
                    ),
                    Some(x) if !b.contains(x) => self.issue(
                        bounds.referenced,
                        ffield,
                        format!("initial value {x} is outside [{}, {}]", b.min, b.max),
                        "widen the bounds or change the initial value",
                    ),
                    Some(_) => {
                        fields.insert(fname, b);
                    }
                }
            }
            let default_content = match kind {
                ArtifactKind::Json => serde_json::to_string_pretty(&content).unwrap_or_default() + "\n",
                ArtifactKind::Text => content.as_str().unwrap_or_default().to_string(),
            };
            out.push(ArtifactDef {
                name,
                kind,
                origin: Origin::Suite(suite.to_string()),
                description: a.description.unwrap_or_default(),
                default_content,
                fields,
            });
        }
        out
    }

    fn inline_content(
        &mut self,
        field: &str,
        kind: ArtifactKind,
        c: Spanned<serde_json::Value>,
    ) -> Option<serde_json::Value> {
        match (kind, &c.value) {
            (ArtifactKind::Json, serde_json::Value::Object(_)) => Some(c.value),
            (ArtifactKind::Text, serde_json::Value::String(_)) => Some(c.value),
            (ArtifactKind::Json, _) => {
                self.issue(
                    c.referenced,
                    format!("{field}.content"),
                    "a JSON artifact's content must be a mapping",
                    "write the settings as `key: value` lines under `content:`",
                );
                None
            }
            (ArtifactKind::Text, _) => {
                self.issue(
                    c.referenced,
                    format!("{field}.content"),
                    "a text artifact's content must be text",
                    "quote it, or use a `|` block",
                );
                None
            }
        }
    }

    fn weight(&mut self, field: &str, w: Option<Spanned<f64>>, default: f64) -> f64 {
        match w {
            None => default,
            Some(w) if (0.0..=1.0).contains(&w.value) => w.value,
            Some(w) => {
                self.issue(
                    w.referenced,
                    field,
                    format!("weight {} is outside [0, 1]", shown_number(w.value)),
                    "weights are fractions between 0 and 1",
                );
                default
            }
        }
    }

    fn executor(&mut self, prefix: &str, e: &Spanned<raw::Executor>) {
        let field = format!("{prefix}executor");
        match (e.value.kind, e.value.command.as_deref().map(str::trim)) {
            (raw::ExecutorKind::Command, None | Some("")) => self.issue(
                e.referenced,
                format!("{field}.command"),
                "a command executor needs `command:`",
                "give the coding agent's command line; `{prompt_file}` is replaced by the prompt's path",
            ),
            (raw::ExecutorKind::Llm, Some(_)) => self.issue(
                e.referenced,
                format!("{field}.command"),
                "`command` belongs to `type: command` executors",
                "remove `command` or set `type: command`",
            ),
            _ => {}
        }
        if let Some(t) = e.value.timeout
            && !crate::time::valid_secs(t)
        {
            self.issue(e.referenced, format!("{field}.timeout"), seconds_out_of_range(t), "use e.g. `timeout: 900`");
        }
    }

    fn overseers(&mut self, prefix: &str, raw: Vec<Spanned<raw::Overseer>>) -> Vec<Overseer> {
        let mut out: Vec<Overseer> = Vec::new();
        let mut seen: BTreeMap<String, Location> = BTreeMap::new();
        for (j, o) in raw.into_iter().enumerate() {
            let o = o.value;
            let field = |f: &str| format!("{prefix}overseers[{j}].{f}");
            let before = self.issues.len();
            let name = o.name.value.trim().to_string();
            if !valid_name(&name) {
                self.issue(
                    o.name.referenced,
                    field("name"),
                    format!("overseer name `{name}` is not allowed"),
                    NAME_HINT,
                );
            } else if let Some(first) = seen.get(&name) {
                self.issue(
                    o.name.referenced,
                    field("name"),
                    format!("duplicate overseer name `{name}` (first used at line {})", first.line()),
                    "overseer names must be unique within a task; rename one",
                );
            } else {
                seen.insert(name.clone(), o.name.referenced);
            }
            if o.command.value.trim().is_empty() {
                self.issue(
                    o.command.referenced,
                    field("command"),
                    "the command is empty",
                    "write the shell command to run",
                );
            }
            let kind = o.kind.as_ref().map_or(OverseerKind::Custom, |k| k.value);
            let timeout = match &o.timeout {
                None => None,
                Some(s) if crate::time::valid_secs(s.value) => Some(crate::time::secs(s.value)),
                Some(s) => {
                    self.issue(
                        s.referenced,
                        field("timeout"),
                        seconds_out_of_range(s.value),
                        "use e.g. `timeout: 120`",
                    );
                    None
                }
            };
            for (key, pattern) in [("success_pattern", &o.success_pattern), ("failure_pattern", &o.failure_pattern)] {
                let Some(p) = pattern else { continue };
                if kind != OverseerKind::Custom {
                    self.issue(
                        p.referenced,
                        field(key),
                        format!("`{key}` is for custom overseers, but this one is `kind: {}`", kind.as_str()),
                        format!("remove `{key}` or set `kind: custom`"),
                    );
                } else if let Err(e) = regex::Regex::new(&p.value) {
                    self.issue(
                        p.referenced,
                        field(key),
                        format!("`{}` is not a valid regular expression: {e}", p.value),
                        "patterns use Rust regex syntax (like Perl's, without look-around)",
                    );
                }
            }
            if let Some(r) = &o.report {
                if !matches!(kind, OverseerKind::Test | OverseerKind::Security) {
                    self.issue(
                        r.referenced,
                        field("report"),
                        format!(
                            "`report` is read for test and security overseers, but this one is `kind: {}`",
                            kind.as_str()
                        ),
                        "remove `report`, or set `kind: test` (JUnit XML) or `kind: security` (JSON or SARIF)",
                    );
                } else if let Err(why) = relative_inside(&r.value) {
                    self.issue(
                        r.referenced,
                        field("report"),
                        format!("report path `{}` {why}", r.value),
                        "give a path relative to the workspace, e.g. `target/junit.xml`",
                    );
                }
            }
            if self.issues.len() == before {
                out.push(Overseer {
                    name,
                    command: o.command.value,
                    kind,
                    cost: o.cost,
                    success_pattern: o.success_pattern.map(|p| p.value),
                    failure_pattern: o.failure_pattern.map(|p| p.value),
                    timeout,
                    report: o.report.map(|r| r.value),
                    network: o.network,
                    hidden: o.hidden,
                });
            }
        }
        out
    }

    /// Validates one task. `prefix` starts its field paths (`tasks[2].` in a
    /// suite file, nothing in a task file); `default_name` stands in for a
    /// missing `name:` (task files only).
    fn task(&mut self, prefix: &str, t: Spanned<raw::Task>, default_name: Option<&str>) -> Option<Task> {
        let at = t.referenced;
        let mut t = t.value;
        let field = |f: &str| format!("{prefix}{f}");
        let (name, name_at) = match (&t.name, default_name) {
            (Some(n), _) => (n.value.trim().to_string(), n.referenced),
            (None, Some(d)) => (d.to_string(), at),
            (None, None) => {
                self.issue(at, field("name"), "the task has no `name:`", "add `name:` with a name unique in the suite");
                (String::new(), at)
            }
        };
        if !name.is_empty() && !valid_name(&name) {
            self.issue(name_at, field("name"), format!("task name `{name}` is not allowed"), NAME_HINT);
        }

        let d = LossWeights::default();
        let weights = match t.weights {
            None => d,
            Some(w) => {
                let w = w.value;
                LossWeights {
                    eval: self.weight(&field("weights.eval"), w.eval, d.eval),
                    critique: self.weight(&field("weights.critique"), w.critique, d.critique),
                    gate_rejections: self.weight(
                        &field("weights.gate_rejections"),
                        w.gate_rejections,
                        d.gate_rejections,
                    ),
                    budget: self.weight(&field("weights.budget"), w.budget, d.budget),
                    status: self.weight(&field("weights.status"), w.status, d.status),
                }
            }
        };

        let mut budget = Budget { max_rejections: DEFAULT_MAX_REJECTIONS, ..Budget::default() };
        if let Some(b) = t.budget {
            let b = b.value;
            budget.max_loops = self.count(b.max_loops, &field("budget.max_loops"), 1..=10_000, "max_loops: 6");
            budget.max_total_workers =
                self.count(b.max_total_workers, &field("budget.max_total_workers"), 1..=1_000, "max_total_workers: 8");
            budget.max_total_tokens = self.count(
                b.max_total_tokens,
                &field("budget.max_total_tokens"),
                1..=1_000_000_000_000,
                "max_total_tokens: 200000",
            );
            if let Some(w) = b.max_wall_time {
                if crate::time::valid_secs(w.value) {
                    budget.max_wall_time = Some(w.value);
                } else {
                    self.issue(
                        w.referenced,
                        field("budget.max_wall_time"),
                        seconds_out_of_range(w.value),
                        "use e.g. `max_wall_time: 240`",
                    );
                }
            }
            budget.max_evaluations = self.count(
                b.max_evaluations,
                &field("budget.max_evaluations"),
                1..=1_000_000_000,
                "max_evaluations: 20000",
            );
            // The rejection count that counts as fully failed.
            if let Some(r) =
                self.count(b.max_rejections, &field("budget.max_rejections"), 1..=10_000, "max_rejections: 5")
            {
                budget.max_rejections = r;
            }
        }

        // Each sample is a workspace of its own, run at the same time.
        let parallel_samples = self
            .count(t.parallel_samples, &field("parallel_samples"), 1..=MAX_PARALLEL_SAMPLES, "parallel_samples: 3")
            .unwrap_or(1);

        // The kind: stated, or inferred from the fields only one kind has.
        let kind_name = match &t.kind {
            Some(k) => k.value,
            None if t.command.is_some() => raw::KindName::Command,
            None if t.problem.is_some() => raw::KindName::Optimize,
            None => raw::KindName::Agent,
        };
        let kind_at = t.kind.as_ref().map_or(at, |k| k.referenced);
        let wrong_kind = |v: &mut Self, loc: Location, f: &str, belongs: &str| {
            v.issue(
                loc,
                field(f),
                format!("`{f}` belongs to `kind: {belongs}` tasks, but this task is `kind: {}`", kind_name.as_str()),
                format!("remove `{f}` or set `kind: {belongs}`"),
            );
        };
        if kind_name != raw::KindName::Command {
            if let Some(c) = &t.command {
                wrong_kind(self, c.referenced, "command", "command");
            }
            if let Some(c) = &t.timeout {
                wrong_kind(self, c.referenced, "timeout", "command");
            }
            if let Some(c) = &t.env {
                wrong_kind(self, c.referenced, "env", "command");
            }
        }
        if kind_name != raw::KindName::Agent {
            if let Some(c) = &t.workspace {
                wrong_kind(self, c.referenced, "workspace", "agent");
            }
            if let Some(c) = &t.executor {
                wrong_kind(self, c.referenced, "executor", "agent");
            }
            if let Some(c) = &t.overseers {
                wrong_kind(self, c.referenced, "overseers", "agent");
            }
            if let Some(c) = &t.supervision {
                wrong_kind(self, c.referenced, "supervision", "agent");
            }
            if let Some(c) = &t.protected {
                wrong_kind(self, c.referenced, "protected", "agent");
            }
            if let Some(c) = &t.infer_protected {
                wrong_kind(self, c.referenced, "infer_protected", "agent");
            }
        }
        if kind_name != raw::KindName::Optimize
            && let Some(c) = &t.problem
        {
            wrong_kind(self, c.referenced, "problem", "optimize");
        }
        let (anti_patterns, forbidden) =
            self.anti_patterns(&field("anti_patterns"), std::mem::take(&mut t.anti_patterns), kind_name);

        let task_text = t.task.as_ref().map(|s| s.value.clone()).unwrap_or_default();
        let mut location_at = kind_at;
        let kind = match kind_name {
            raw::KindName::Command => {
                let Some(command) = t.command else {
                    self.issue(
                        kind_at,
                        field("command"),
                        "a command task needs `command:`",
                        "add the shell command that runs the harness, e.g. `command: python3 score.py`",
                    );
                    return None;
                };
                if command.value.trim().is_empty() {
                    self.issue(
                        command.referenced,
                        field("command"),
                        "the command is empty",
                        "write the shell command to run",
                    );
                }
                let timeout = match t.timeout {
                    Some(s) if crate::time::valid_secs(s.value) => crate::time::secs(s.value),
                    Some(s) => {
                        self.issue(
                            s.referenced,
                            field("timeout"),
                            seconds_out_of_range(s.value),
                            "use e.g. `timeout: 60`",
                        );
                        DEFAULT_COMMAND_TIMEOUT
                    }
                    None => budget.max_wall_time.map_or(DEFAULT_COMMAND_TIMEOUT, crate::time::secs),
                };
                TaskKind::Command(CommandTask {
                    command: command.value,
                    timeout,
                    env: t.env.map(|e| e.value).unwrap_or_default(),
                })
            }
            raw::KindName::Agent => {
                if task_text.trim().is_empty() {
                    self.issue(
                        name_at,
                        field("task"),
                        "an agent task needs `task:` saying what to do",
                        "describe the work in a sentence or two",
                    );
                }
                if let Some(e) = &t.executor {
                    self.executor(prefix, e);
                }
                let overseers = match t.overseers {
                    Some(o) => {
                        let at = o.referenced;
                        let list = self.overseers(prefix, o.value);
                        if !list.is_empty() && list.iter().all(|o| o.hidden) {
                            self.issue(
                                at,
                                field("overseers"),
                                "every overseer is hidden: the executor would work blind",
                                "keep at least one check visible (`hidden: false`); held-out checks join the verdict once the visible ones pass",
                            );
                        }
                        list
                    }
                    None => Vec::new(),
                };
                TaskKind::Agent(AgentTask {
                    workspace: match t.workspace {
                        Some(w) => {
                            let folder = self.inside(w.referenced, &field("workspace"), &w.value)?;
                            // (Text checked on its own, with no folder behind it, skips this.)
                            if self.dir.is_dir() && !folder.is_dir() {
                                self.issue(
                                    w.referenced,
                                    field("workspace"),
                                    format!("the workspace folder {} does not exist", folder.display()),
                                    "`workspace:` is a folder relative to the suite file's folder",
                                );
                                return None;
                            }
                            Some(w.value)
                        }
                        None => None,
                    },
                    executor: t.executor.map(|e| e.value),
                    overseers,
                    supervision: t.supervision.map(|s| s.value).unwrap_or_default(),
                    protected: self.protected_globs(&field("protected"), t.protected),
                    infer_protected: t.infer_protected.is_none_or(|b| b.value),
                    forbidden,
                })
            }
            raw::KindName::Optimize => {
                let Some(problem) = t.problem else {
                    self.issue(
                        kind_at,
                        field("problem"),
                        "an optimize task needs `problem:`",
                        "name a built-in problem (e.g. `g01`) or a problem file",
                    );
                    return None;
                };
                // Errors found later (an unknown problem) point at the `problem:` value.
                location_at = problem.referenced;
                if crate::numeric::builtin(&problem.value).is_none() {
                    let path = self.inside(problem.referenced, &field("problem"), &problem.value)?;
                    if self.dir.is_dir() && !path.is_file() {
                        self.issue(
                            problem.referenced,
                            field("problem"),
                            format!(
                                "`{}` is neither a built-in problem nor a file ({})",
                                problem.value,
                                path.display()
                            ),
                            format!(
                                "name a built-in problem ({}) or the path of a problem file relative to the suite",
                                crate::numeric::builtin_names().join(", ")
                            ),
                        );
                        return None;
                    }
                }
                TaskKind::Optimize(OptimizeTask { problem: problem.value })
            }
        };

        Some(Task {
            name,
            task: task_text,
            kind,
            workflow: t.workflow,
            model: t.model,
            budget,
            weights,
            holdout: t.holdout,
            priority: t.priority,
            hints: t.hints,
            constraints: t.constraints,
            anti_patterns,
            parallel_samples,
            location: SourceLocation {
                file: self.file.clone(),
                line: location_at.line() as u32,
                column: location_at.column() as u32,
            },
        })
    }
}

const NAME_HINT: &str =
    "use letters, digits, `_`, `-` and `.` (they become folder names), starting with a letter or digit";

/// Names become folder and file names, so keep them to a safe alphabet.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// A path that stays inside the folder it is relative to.
fn relative_inside(path: &str) -> Result<(), &'static str> {
    let p = Path::new(path);
    if path.trim().is_empty() {
        Err("is empty")
    } else if p.is_absolute() {
        Err("is absolute")
    } else if p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        Err("climbs out with `..`")
    } else {
        Ok(())
    }
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

/// Parallel samples of one agent task at most: each is a workspace and a
/// trajectory running at once.
const MAX_PARALLEL_SAMPLES: u32 = 64;

/// Why a number of seconds from a suite file is refused.
fn seconds_out_of_range(value: f64) -> String {
    format!(
        "{} is not a usable number of seconds: it must be above 0 and at most {} (30 days)",
        shown_number(value),
        crate::time::MAX_SECONDS
    )
}

/// A number from a file as people wrote it: 1e308, not 309 digits.
pub fn shown_number(value: f64) -> String {
    if value.abs() >= 1e9 { format!("{value:e}") } else { value.to_string() }
}

#[cfg(test)]
mod tests;
