//! A problem whose values come from an evaluator command, declared in a YAML
//! file:
//!
//! ```yaml
//! name: my-problem
//! command: python3 eval.py      # run with `sh -c` in the problem file's folder
//! mode: persistent              # or `once` (the default): see below
//! timeout: 10                   # seconds per point (default 30)
//! batch: 64                     # persistent: at most this many points per message
//! processes: 2                  # persistent: at most this many processes at once
//! variables:
//!   - { name: x1, min: 0, max: 10 }
//! inequalities: [g1]            # names; values must be ≤ 0 when feasible
//! equalities: [h1]              # names; values must be = 0 when feasible
//! best_known: 1.23              # optional
//! tolerance: 1e-6               # optional: max violation of a feasible result
//! ```
//!
//! Two ways to talk to the command ([`EvaluatorMode`]):
//!
//! - **once** ([`once`]): a process per point. It gets `{"x": [..], "names":
//!   [..]}` on stdin and prints one reply on stdout.
//! - **persistent** ([`persistent`]): processes that stay up for the whole
//!   run. Each reads request lines `{"id": 1, "names": [..], "points":
//!   [[..], ..]}` and prints, for each, one line `{"id": 1, "results": [..]}`
//!   with one reply per point, in order.
//!
//! A reply is `{"objective": <number>, "constraints": {"<name>": <number>,
//! ...}}` — every declared constraint, no other — optionally with
//! `"gradient": {"objective": [..], "constraints": {"<name>": [..], ...}}`
//! (exact gradients spare the solvers their finite differences), or
//! `{"error": "<why>"}` for a point the evaluator cannot evaluate. Other
//! keys are ignored ([`reply`]). A command past its timeout is killed with its
//! whole process group; bad output, an exit and a timeout are [`EvalError`]s
//! naming the command and what it printed.

mod file;
mod once;
pub mod persistent;
mod reply;

use std::fmt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use super::problem::{BestKnown, EvalError, Evaluation, Problem};
use persistent::Pool;
use reply::Shape;

/// How long one evaluation may take when the file does not say.
pub const DEFAULT_EVAL_TIMEOUT: Duration = Duration::from_secs(30);

/// Points per message in the persistent mode when the file does not say.
pub const DEFAULT_BATCH: usize = 64;

/// The most points one message may carry.
pub const MAX_BATCH: usize = 10_000;

/// The most evaluator processes a problem may keep at once.
pub const MAX_PROCESSES: usize = 64;

/// How the evaluator command is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvaluatorMode {
    /// A process per point (protocol 1).
    Once,
    /// Processes that live for the run and answer JSON lines, many points per
    /// message (protocol 2).
    Persistent,
}

/// One decision variable of an external problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    pub name: String,
    pub min: f64,
    pub max: f64,
}

/// A problem evaluated by an external command (see the module docs).
/// Clones share the persistent mode's processes.
#[derive(Debug, Clone)]
pub struct ExternalProblem {
    name: String,
    command: String,
    path: PathBuf,
    dir: PathBuf,
    timeout: Duration,
    mode: EvaluatorMode,
    batch: usize,
    processes: usize,
    variables: Vec<Variable>,
    inequalities: Vec<String>,
    equalities: Vec<String>,
    best_known: Option<f64>,
    tolerance: Option<f64>,
    pool: Arc<Pool>,
}

/// Why a problem file did not load: every problem found, in file order, each
/// with its file:line:column, field and a hint.
pub type ExternalError = crate::textfile::SuiteError;

/// Reads and validates a problem file.
pub fn load_external(path: &Path) -> Result<ExternalProblem, ExternalError> {
    let text = crate::textfile::read_text(path, "problem file", "problem files are YAML text")?;
    parse_external(&text, path)
}

/// Validates problem-file text as if it came from `path` (used in errors and
/// as the folder the command runs in).
pub fn parse_external(text: &str, path: &Path) -> Result<ExternalProblem, ExternalError> {
    let raw = file::parse_yaml(text, path)?;
    let mut v = file::Validator { file: path.to_path_buf(), issues: Vec::new() };
    let problem = v.validate(raw, path);
    if v.issues.is_empty() {
        Ok(problem)
    } else {
        v.issues.sort_by_key(|i| (i.location.line, i.location.column));
        Err(ExternalError { issues: v.issues })
    }
}

impl ExternalProblem {
    /// The shell command that evaluates points.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The problem file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder the command runs in (the problem file's).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The time one point may take (a persistent message of k points: k times it).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn mode(&self) -> EvaluatorMode {
        self.mode
    }

    /// The most points in one persistent message.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// The most persistent evaluator processes at once.
    pub fn processes(&self) -> usize {
        self.processes
    }

    /// Persistent evaluator processes started so far (restarts included).
    pub fn processes_started(&self) -> u64 {
        self.pool.started()
    }

    pub fn variables(&self) -> &[Variable] {
        &self.variables
    }

    fn fail(&self, what: impl fmt::Display) -> EvalError {
        EvalError(format!("external problem `{}`: `{}` {what}", self.name, self.command))
    }

    /// Starts the command in the problem's folder with every stdio piped,
    /// `ATTRACTOR_EVALUATOR_PROTOCOL` set to `protocol` (1 once, 2
    /// persistent), in its own process group so a kill reaches whatever the
    /// shell started.
    fn spawn(&self, protocol: &str) -> Result<Child, EvalError> {
        let mut cmd = Command::new("sh");
        for name in crate::process::window_only_env() {
            cmd.env_remove(name);
        }
        cmd.arg("-c")
            .arg(&self.command)
            .current_dir(&self.dir)
            .env("ATTRACTOR_EVALUATOR_PROTOCOL", protocol)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| self.fail(format_args!("could not be started in {}: {e}", self.dir.display())))
    }

    fn shape(&self) -> Shape<'_> {
        Shape { inequalities: &self.inequalities, equalities: &self.equalities, dimension: self.variables.len() }
    }

    /// Why `x` cannot be sent to the evaluator, if it cannot.
    fn refuse(&self, x: &[f64]) -> Option<EvalError> {
        if x.len() != self.variables.len() {
            return Some(EvalError(format!(
                "external problem `{}`: expected a point with {} coordinates, got {}",
                self.name,
                self.variables.len(),
                x.len()
            )));
        }
        x.iter().find(|v| !v.is_finite()).map(|bad| {
            EvalError(format!(
                "external problem `{}`: cannot evaluate a point with a non-finite coordinate ({bad})",
                self.name
            ))
        })
    }
}

impl Problem for ExternalProblem {
    fn name(&self) -> &str {
        &self.name
    }

    fn dimension(&self) -> usize {
        self.variables.len()
    }

    fn bounds(&self) -> Vec<(f64, f64)> {
        self.variables.iter().map(|v| (v.min, v.max)).collect()
    }

    fn inequality_names(&self) -> Vec<String> {
        self.inequalities.clone()
    }

    fn equality_names(&self) -> Vec<String> {
        self.equalities.clone()
    }

    fn evaluate(&self, x: &[f64]) -> Result<Evaluation, EvalError> {
        if let Some(refused) = self.refuse(x) {
            return Err(refused);
        }
        match self.mode {
            EvaluatorMode::Once => once::evaluate(self, x),
            EvaluatorMode::Persistent => persistent::evaluate(self, std::slice::from_ref(&x.to_vec()))
                .pop()
                .unwrap_or_else(|| Err(self.fail("answered no result for the point"))),
        }
    }

    fn evaluate_batch(&self, points: &[Vec<f64>]) -> Vec<Result<Evaluation, EvalError>> {
        match self.mode {
            EvaluatorMode::Once => points.iter().map(|x| self.evaluate(x)).collect(),
            EvaluatorMode::Persistent => {
                // Refused points never reach the evaluator; the rest go in one batch.
                let mut answers: Vec<Option<Result<Evaluation, EvalError>>> =
                    points.iter().map(|x| self.refuse(x).map(Err)).collect();
                let sent: Vec<Vec<f64>> =
                    points.iter().zip(&answers).filter(|(_, a)| a.is_none()).map(|(x, _)| x.clone()).collect();
                let mut replies = persistent::evaluate(self, &sent).into_iter();
                answers
                    .iter_mut()
                    .map(|a| {
                        a.take()
                            .or_else(|| replies.next())
                            .unwrap_or_else(|| Err(self.fail("answered too few results")))
                    })
                    .collect()
            }
        }
    }

    fn best_known(&self) -> Option<BestKnown> {
        self.best_known.map(|value| BestKnown { value, x: None })
    }

    fn feasibility_tolerance(&self) -> Option<f64> {
        self.tolerance
    }
}

/// Kills the command and everything in its process group, then reaps it.
fn kill_group(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 { format!("{s:.0} s") } else { format!("{s} s") }
}
