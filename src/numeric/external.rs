//! A problem whose values come from an evaluator command, declared in a YAML
//! file:
//!
//! ```yaml
//! name: my-problem
//! command: python3 eval.py      # run with `sh -c` in the problem file's folder
//! timeout: 10                   # seconds per evaluation (default 30)
//! variables:
//!   - { name: x1, min: 0, max: 10 }
//! inequalities: [g1]            # names; values must be ≤ 0 when feasible
//! equalities: [h1]              # names; values must be = 0 when feasible
//! best_known: 1.23              # optional
//! ```
//!
//! Each evaluation runs the command once. It gets `{"x": [..], "names": [..]}`
//! (the point and the variable names) as JSON on stdin and must print
//! `{"objective": <number>, "constraints": {"<name>": <number>, ...}}` on
//! stdout — the whole of stdout or its last non-empty line, so debug prints
//! above it are fine; other top-level keys are ignored. Every declared
//! constraint must be given, and no other. A command that runs past the
//! timeout is killed with its whole process group. Bad output, a non-zero
//! exit and a timeout are [`EvalError`]s naming the command and what was
//! wrong.

use std::collections::BTreeSet;
use std::fmt;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::{Location, Spanned};
use wait_timeout::ChildExt;

use super::problem::{BestKnown, EvalError, Evaluation, Problem};
use crate::suite::{SourceLocation, SuiteIssue};

/// How long one evaluation may take when the file does not say.
pub const DEFAULT_EVAL_TIMEOUT: Duration = Duration::from_secs(30);

/// At most this much of each of stdout and stderr is kept.
const OUTPUT_CAP: usize = 1 << 20;

/// How long to wait for the output pipes to close once the command has
/// exited (a background process it left behind may hold them open).
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// One decision variable of an external problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    pub name: String,
    pub min: f64,
    pub max: f64,
}

/// A problem evaluated by an external command (see the module docs).
#[derive(Debug, Clone)]
pub struct ExternalProblem {
    name: String,
    command: String,
    path: PathBuf,
    dir: PathBuf,
    timeout: Duration,
    variables: Vec<Variable>,
    inequalities: Vec<String>,
    equalities: Vec<String>,
    best_known: Option<f64>,
}

/// Why a problem file did not load: every problem found, in file order, each
/// with its file:line:column, field and a hint.
pub type ExternalError = crate::suite::SuiteError;

/// Reads and validates a problem file.
pub fn load_external(path: &Path) -> Result<ExternalProblem, ExternalError> {
    let text = crate::suite::read_text(path, "problem file", "problem files are YAML text")?;
    parse_external(&text, path)
}

/// Validates problem-file text as if it came from `path` (used in errors and
/// as the folder the command runs in).
pub fn parse_external(text: &str, path: &Path) -> Result<ExternalProblem, ExternalError> {
    let raw = parse_yaml(text, path)?;
    let mut v = Validator { file: path.to_path_buf(), issues: Vec::new() };
    let problem = v.validate(raw, path);
    if v.issues.is_empty() {
        Ok(problem)
    } else {
        v.issues.sort_by_key(|i| (i.location.line, i.location.column));
        Err(ExternalError { issues: v.issues })
    }
}

impl ExternalProblem {
    /// The shell command run for each evaluation.
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

    /// The time one evaluation may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn variables(&self) -> &[Variable] {
        &self.variables
    }

    fn fail(&self, what: impl fmt::Display) -> EvalError {
        EvalError(format!("external problem `{}`: `{}` {what}", self.name, self.command))
    }

    /// Runs the command once with `input` on stdin: its stdout, or why not.
    fn run(&self, input: Vec<u8>) -> Result<String, EvalError> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so a timeout kills whatever the shell started.
            .process_group(0)
            .spawn()
            .map_err(|e| self.fail(format_args!("could not be started in {}: {e}", self.dir.display())))?;

        // Write and read on threads: the command may not read its input, and
        // may print more than a pipe holds before it exits.
        if let Some(mut stdin) = child.stdin.take() {
            std::thread::spawn(move || {
                // A command that exits without reading its input is not an error here.
                let _ = stdin.write_all(&input);
            });
        }
        let stdout = Drain::start(child.stdout.take());
        let stderr = Drain::start(child.stderr.take());

        let status = match child.wait_timeout(self.timeout) {
            Ok(Some(status)) => status,
            Ok(None) => {
                kill_group(&mut child);
                return Err(self.fail(format_args!("timed out after {} and was killed", fmt_secs(self.timeout))));
            }
            Err(e) => {
                kill_group(&mut child);
                return Err(self.fail(format_args!("could not be waited for: {e}")));
            }
        };
        let stdout = stdout.finish(DRAIN_GRACE);
        let stderr = stderr.finish(DRAIN_GRACE);
        if !status.success() {
            let how = match (status.code(), status.signal()) {
                (Some(code), _) => format!("exited with code {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                (None, None) => "failed".to_string(),
            };
            let stderr = String::from_utf8_lossy(&stderr);
            return Err(if stderr.trim().is_empty() {
                self.fail(how)
            } else {
                self.fail(format_args!("{how}; stderr: {}", excerpt(&stderr)))
            });
        }
        String::from_utf8(stdout).map_err(|e| {
            self.fail(format_args!(
                "printed output that is not UTF-8: {}",
                excerpt(&String::from_utf8_lossy(e.as_bytes()))
            ))
        })
    }

    /// Reads the values the command printed.
    fn parse_output(&self, stdout: &str) -> Result<Evaluation, EvalError> {
        let expected = r#"it must print {"objective": <number>, "constraints": {"<name>": <number>, ...}}"#;
        let trimmed = stdout.trim();
        if trimmed.is_empty() {
            return Err(self.fail(format_args!("printed nothing on stdout; {expected}")));
        }
        let parsed = serde_json::from_str::<Value>(trimmed).or_else(|whole| {
            let last = trimmed.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            serde_json::from_str::<Value>(last.trim()).map_err(|_| whole)
        });
        let value = parsed.map_err(|e| {
            let non_finite = ["NaN", "Infinity"].iter().any(|t| trimmed.contains(t));
            let why = if non_finite {
                "printed a non-finite number (NaN and Infinity are not JSON numbers)".to_string()
            } else {
                format!("did not print JSON ({e}); {expected}")
            };
            self.fail(format_args!("{why}; output: {}", excerpt(stdout)))
        })?;
        let Value::Object(object) = &value else {
            return Err(
                self.fail(format_args!("printed JSON that is not an object; {expected}; output: {}", excerpt(stdout)))
            );
        };
        let number = |what: &str, v: &Value| -> Result<f64, EvalError> {
            match v.as_f64() {
                Some(n) if n.is_finite() => Ok(n),
                Some(n) => Err(self.fail(format_args!("printed a non-finite {what}: {n}"))),
                None => {
                    Err(self.fail(format_args!("printed a {what} that is not a number: {}", excerpt(&v.to_string()))))
                }
            }
        };
        let objective = match object.get("objective") {
            Some(v) => number("objective", v)?,
            None => {
                return Err(
                    self.fail(format_args!("printed no \"objective\"; {expected}; output: {}", excerpt(stdout)))
                );
            }
        };

        let empty = serde_json::Map::new();
        let constraints = match object.get("constraints") {
            Some(Value::Object(c)) => c,
            None | Some(Value::Null) if self.inequalities.is_empty() && self.equalities.is_empty() => &empty,
            None => {
                return Err(self.fail(format_args!(
                    "printed no \"constraints\" (it must give {}); output: {}",
                    self.constraint_list(),
                    excerpt(stdout)
                )));
            }
            Some(other) => {
                return Err(self.fail(format_args!(
                    "printed \"constraints\" that is not an object of numbers by name: {}",
                    excerpt(&other.to_string())
                )));
            }
        };
        let declared: BTreeSet<&str> = self.inequalities.iter().chain(&self.equalities).map(String::as_str).collect();
        let unknown: Vec<&str> = constraints.keys().map(String::as_str).filter(|k| !declared.contains(k)).collect();
        if !unknown.is_empty() {
            return Err(self.fail(format_args!(
                "printed unknown constraint {} (the problem file declares {})",
                quote_list(&unknown),
                self.constraint_list()
            )));
        }
        let missing: Vec<&str> = declared.iter().copied().filter(|k| !constraints.contains_key(*k)).collect();
        if !missing.is_empty() {
            return Err(self.fail(format_args!(
                "printed no value for constraint {}; output: {}",
                quote_list(&missing),
                excerpt(stdout)
            )));
        }
        let values = |names: &[String]| -> Result<Vec<f64>, EvalError> {
            names.iter().map(|n| number(&format!("value for constraint \"{n}\""), &constraints[n.as_str()])).collect()
        };
        Ok(Evaluation { objective, inequalities: values(&self.inequalities)?, equalities: values(&self.equalities)? })
    }

    fn constraint_list(&self) -> String {
        let all: Vec<&str> = self.inequalities.iter().chain(&self.equalities).map(String::as_str).collect();
        if all.is_empty() { "no constraints".to_string() } else { quote_list(&all) }
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
        if x.len() != self.variables.len() {
            return Err(EvalError(format!(
                "external problem `{}`: expected a point with {} coordinates, got {}",
                self.name,
                self.variables.len(),
                x.len()
            )));
        }
        if let Some(bad) = x.iter().find(|v| !v.is_finite()) {
            return Err(EvalError(format!(
                "external problem `{}`: cannot evaluate a point with a non-finite coordinate ({bad})",
                self.name
            )));
        }
        let names: Vec<&str> = self.variables.iter().map(|v| v.name.as_str()).collect();
        let input = serde_json::to_vec(&serde_json::json!({ "x": x, "names": names }))
            .map_err(|e| EvalError(format!("external problem `{}`: {e}", self.name)))?;
        let stdout = self.run(input)?;
        self.parse_output(&stdout)
    }

    fn best_known(&self) -> Option<BestKnown> {
        self.best_known.map(|value| BestKnown { value, x: None })
    }
}

/// A pipe read to its end on a thread, keeping at most [`OUTPUT_CAP`] bytes.
struct Drain {
    kept: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
}

impl Drain {
    fn start(pipe: Option<impl Read + Send + 'static>) -> Self {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        if let Some(mut pipe) = pipe {
            let kept = kept.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                loop {
                    match pipe.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                            let room = OUTPUT_CAP.saturating_sub(kept.len());
                            kept.extend_from_slice(&buf[..n.min(room)]);
                        }
                    }
                }
                let _ = tx.send(());
            });
        }
        Drain { kept, done }
    }

    /// What was read, once the pipe is closed or `grace` has passed (a
    /// background process the command left behind may hold the pipe open).
    fn finish(self, grace: Duration) -> Vec<u8> {
        let _ = self.done.recv_timeout(grace);
        std::mem::take(&mut *self.kept.lock().unwrap_or_else(|e| e.into_inner()))
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

/// At most 200 characters of `text`, on one line (line breaks and other
/// control characters escaped), between « ».
fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    let text = text.trim();
    let mut out = String::new();
    for c in text.chars().take(MAX) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if text.chars().count() > MAX {
        out.push('…');
    }
    format!("«{out}»")
}

fn quote_list(names: &[&str]) -> String {
    names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
}

// ---------------------------------------------------------------------------
// The file as written.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProblem {
    name: Spanned<String>,
    command: Spanned<String>,
    #[serde(default)]
    timeout: Option<Spanned<f64>>,
    variables: Spanned<Vec<Spanned<RawVariable>>>,
    #[serde(default)]
    inequalities: Vec<Spanned<String>>,
    #[serde(default)]
    equalities: Vec<Spanned<String>>,
    #[serde(default)]
    best_known: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariable {
    name: Spanned<String>,
    min: Spanned<f64>,
    max: Spanned<f64>,
}

fn parse_yaml(text: &str, path: &Path) -> Result<RawProblem, ExternalError> {
    crate::suite::parse_strict(text, path, "add the missing key (name, command and variables are required)")
        .map_err(|issue| ExternalError { issues: vec![issue] })
}

struct Validator {
    file: PathBuf,
    issues: Vec<SuiteIssue>,
}

impl Validator {
    fn issue(&mut self, loc: Location, field: impl Into<String>, message: impl Into<String>, hint: &str) {
        self.issues.push(SuiteIssue {
            location: SourceLocation { file: self.file.clone(), line: loc.line() as u32, column: loc.column() as u32 },
            field: field.into(),
            message: message.into(),
            hint: (!hint.is_empty()).then(|| hint.to_string()),
        });
    }

    /// A name that is not blank and not used before; `seen` collects them.
    fn name(&mut self, s: &Spanned<String>, field: String, kind: &str, seen: &mut BTreeSet<String>) -> String {
        let name = s.value.trim().to_string();
        if name.is_empty() {
            self.issue(s.referenced, field, format!("the {kind} name is empty"), "give it a name");
        } else if !seen.insert(name.clone()) {
            self.issue(
                s.referenced,
                field,
                format!("`{name}` is declared twice"),
                "variable names and constraint names must each be unique",
            );
        }
        name
    }

    fn validate(&mut self, raw: RawProblem, path: &Path) -> ExternalProblem {
        let name = raw.name.value.trim().to_string();
        if name.is_empty() {
            self.issue(raw.name.referenced, "name", "the problem name is empty", "give the problem a name");
        }
        let command = raw.command.value.trim().to_string();
        if command.is_empty() {
            self.issue(
                raw.command.referenced,
                "command",
                "the command is empty",
                "give the shell command that evaluates one point, e.g. `python3 eval.py`",
            );
        }
        let timeout = match raw.timeout {
            None => DEFAULT_EVAL_TIMEOUT,
            Some(t) => match Duration::try_from_secs_f64(t.value) {
                Ok(d) if t.value > 0.0 => d,
                _ => {
                    self.issue(
                        t.referenced,
                        "timeout",
                        format!("timeout {} is not a positive number of seconds", t.value),
                        "give the seconds one evaluation may take, e.g. `timeout: 10`",
                    );
                    DEFAULT_EVAL_TIMEOUT
                }
            },
        };

        if raw.variables.value.is_empty() {
            self.issue(
                raw.variables.referenced,
                "variables",
                "the problem has no variables",
                "list them as `- { name: x1, min: 0, max: 10 }`",
            );
        }
        let mut seen = BTreeSet::new();
        let mut variables = Vec::new();
        for (i, v) in raw.variables.value.iter().enumerate() {
            let v = &v.value;
            let name = self.name(&v.name, format!("variables[{i}].name"), "variable", &mut seen);
            for (bound, which) in [(&v.min, "min"), (&v.max, "max")] {
                if !bound.value.is_finite() {
                    self.issue(
                        bound.referenced,
                        format!("variables[{i}].{which}"),
                        format!("bound {} is not a finite number", bound.value),
                        "give finite bounds",
                    );
                }
            }
            if v.min.value > v.max.value {
                self.issue(
                    v.max.referenced,
                    format!("variables[{i}].max"),
                    format!("max {} is below min {}", v.max.value, v.min.value),
                    "swap the bounds",
                );
            }
            variables.push(Variable { name, min: v.min.value, max: v.max.value });
        }

        let mut seen = BTreeSet::new();
        let mut names = |list: &[Spanned<String>], field: &str, this: &mut Self| -> Vec<String> {
            list.iter()
                .enumerate()
                .map(|(i, s)| this.name(s, format!("{field}[{i}]"), "constraint", &mut seen))
                .collect()
        };
        let inequalities = names(&raw.inequalities, "inequalities", self);
        let equalities = names(&raw.equalities, "equalities", self);

        let best_known = raw.best_known.map(|b| {
            if !b.value.is_finite() {
                self.issue(
                    b.referenced,
                    "best_known",
                    format!("best_known {} is not a finite number", b.value),
                    "give the best objective value known, or leave the key out",
                );
            }
            b.value
        });

        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        // Absolute, so evaluations later run in the same folder whatever the
        // working directory is by then.
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        ExternalProblem {
            name,
            command,
            path: path.to_path_buf(),
            dir,
            timeout,
            variables,
            inequalities,
            equalities,
            best_known,
        }
    }
}
