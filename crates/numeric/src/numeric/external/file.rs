//! The problem file as written, and its validation: every mistake found in
//! one pass, each with its file:line:column, field and a hint.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_saphyr::{Location, Spanned};

use super::persistent::Pool;
use super::{
    DEFAULT_BATCH, DEFAULT_EVAL_TIMEOUT, EvaluatorMode, ExternalError, ExternalProblem, MAX_BATCH, MAX_PROCESSES,
    Variable,
};
use crate::textfile::{SourceLocation, SuiteIssue};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProblem {
    name: Spanned<String>,
    command: Spanned<String>,
    #[serde(default)]
    timeout: Option<Spanned<f64>>,
    #[serde(default)]
    mode: Option<Spanned<String>>,
    #[serde(default)]
    batch: Option<Spanned<i64>>,
    #[serde(default)]
    processes: Option<Spanned<i64>>,
    variables: Spanned<Vec<Spanned<RawVariable>>>,
    #[serde(default)]
    inequalities: Vec<Spanned<String>>,
    #[serde(default)]
    equalities: Vec<Spanned<String>>,
    #[serde(default)]
    best_known: Option<Spanned<f64>>,
    #[serde(default)]
    tolerance: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariable {
    name: Spanned<String>,
    min: Spanned<f64>,
    max: Spanned<f64>,
}

pub(super) fn parse_yaml(text: &str, path: &Path) -> Result<RawProblem, ExternalError> {
    crate::textfile::parse_strict(text, path, "add the missing key (name, command and variables are required)")
        .map_err(|issue| ExternalError { issues: vec![issue] })
}

pub(super) struct Validator {
    pub file: PathBuf,
    pub issues: Vec<SuiteIssue>,
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

    pub fn validate(&mut self, raw: RawProblem, path: &Path) -> ExternalProblem {
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

        let mode = self.mode(raw.mode.as_ref());
        let batch = self.count(raw.batch.as_ref(), "batch", MAX_BATCH, DEFAULT_BATCH, "points per message");
        let default_processes = std::thread::available_parallelism().map_or(1, usize::from).min(MAX_PROCESSES);
        let processes =
            self.count(raw.processes.as_ref(), "processes", MAX_PROCESSES, default_processes, "evaluator processes");
        // Only when the mode really is `once` (absent or written so): an
        // unknown mode is its own error.
        let once = raw.mode.as_ref().is_none_or(|m| m.value.trim() == "once");
        if once {
            for (value, field) in [(&raw.batch, "batch"), (&raw.processes, "processes")] {
                if let Some(v) = value {
                    self.issue(
                        v.referenced,
                        field,
                        format!("`{field}` applies to `mode: persistent` only"),
                        "add `mode: persistent` (processes that answer JSON lines) or remove the key",
                    );
                }
            }
        }

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

        let tolerance = raw.tolerance.and_then(|t| {
            if t.value.is_finite() && t.value > 0.0 && t.value < 1.0 {
                Some(t.value)
            } else {
                self.issue(
                    t.referenced,
                    "tolerance",
                    format!("tolerance {} is not a number between 0 and 1", t.value),
                    "give the max constraint violation a result may have, e.g. `tolerance: 1e-6`, or leave the key out",
                );
                None
            }
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
            mode,
            batch,
            processes,
            variables,
            inequalities,
            equalities,
            best_known,
            tolerance,
            pool: Arc::new(Pool::new(processes)),
        }
    }

    fn mode(&mut self, raw: Option<&Spanned<String>>) -> EvaluatorMode {
        match raw.map(|m| (m, m.value.trim())) {
            None => EvaluatorMode::Once,
            Some((_, "once")) => EvaluatorMode::Once,
            Some((_, "persistent")) => EvaluatorMode::Persistent,
            Some((m, other)) => {
                self.issue(
                    m.referenced,
                    "mode",
                    format!("unknown mode `{other}`"),
                    "use `once` (a process per point, the default) or `persistent` (processes that stay up and answer JSON lines)",
                );
                EvaluatorMode::Once
            }
        }
    }

    /// A whole number from 1 to `max`, or `default` when the key is absent.
    fn count(&mut self, raw: Option<&Spanned<i64>>, field: &str, max: usize, default: usize, what: &str) -> usize {
        let Some(v) = raw else { return default };
        match usize::try_from(v.value) {
            Ok(n) if (1..=max).contains(&n) => n,
            _ => {
                self.issue(
                    v.referenced,
                    field,
                    format!("{field} {} is out of range", v.value),
                    &format!("give the most {what} as a whole number from 1 to {max}"),
                );
                default
            }
        }
    }
}
