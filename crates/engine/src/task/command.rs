//! The `command` task kind: a black-box run of any existing harness.
//!
//! Attractor writes the active artifact versions into a fresh run directory,
//! runs the task's shell command there with a timeout, and reads the scores the
//! command leaves in `run_completion.json`. Whatever goes wrong — a missing or
//! malformed result, a non-zero exit, a timeout — becomes a failed run with the
//! reason recorded, never a crash of the suite.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use ts_rs::TS;

use super::{ActiveArtifact, RunOutcome};
use crate::loss::{LossSignals, RunStatus};
use crate::process::{Capture, ProcessEnd, ShellCommand, fmt_duration};
use crate::suite::{CommandTask, Task};

/// The file a command writes its scores to, in its run directory.
pub const RESULT_FILE: &str = "run_completion.json";

/// How much of stdout and of stderr is kept with a run.
pub const OUTPUT_CAP: usize = 64 * 1024;

/// What a command reports in `run_completion.json`. Only `status` is required;
/// a missing score counts as neutral in the loss (as the worst when the
/// status is failed or aborted).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCompletion {
    pub status: RunStatus,
    #[serde(default)]
    pub eval_score: Option<f64>,
    #[serde(default)]
    pub critique_score: Option<f64>,
    #[serde(default)]
    pub gate_rejection_count: Option<f64>,
    #[serde(default)]
    pub budget_remaining_pct: Option<f64>,
    /// Free-form numbers or notes the harness wants kept with the run.
    #[serde(default)]
    pub metrics: Option<serde_json::Value>,
    /// The examples the harness scored, when it scores a dataset: what the
    /// optimizer learns from (the failing ones, of training tasks only) and
    /// what decisions pair (example by example, across versions).
    #[serde(default)]
    pub examples: Option<Vec<Example>>,
}

/// One scored example of a dataset harness: GEPA's reflective record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// Stable across runs: the same example under every version, so two
    /// versions can be compared example by example.
    pub id: String,
    #[serde(default)]
    pub input: Option<String>,
    #[serde(default)]
    pub expected: Option<String>,
    #[serde(default)]
    pub output: Option<String>,
    /// From 0 (wrong) to 1 (right).
    pub score: f64,
    /// Why it scored so, in words (a grader's note, a diff).
    #[serde(default)]
    pub feedback: Option<String>,
}

/// The most a result file may hold: a harness over a large dataset writes
/// its examples here, and a runaway one must not fill the database.
pub const RESULT_FILE_MAX: u64 = 8 << 20;
/// Examples kept per run; more is a harness that should sample.
pub const EXAMPLES_MAX: usize = 5000;
/// Characters kept of each text of an example.
pub const EXAMPLE_TEXT_MAX: usize = 2000;

impl Example {
    /// Counted right: a score of at least one half.
    pub fn right(&self) -> bool {
        self.score >= 0.5
    }
}

/// The examples of a stored result file (none when it lists none or cannot
/// be read: the run's own parse already said why).
pub fn examples_of(result_json: &str) -> Vec<Example> {
    serde_json::from_str::<RunCompletion>(result_json).ok().and_then(|c| c.examples).unwrap_or_default()
}

/// Checks a result file's examples: unique ids, scores within 0–1, at most
/// [`EXAMPLES_MAX`]; texts are cut to [`EXAMPLE_TEXT_MAX`] characters
/// (`Ok(true)` when one was).
fn check_examples(examples: &mut [Example]) -> Result<bool, String> {
    if examples.len() > EXAMPLES_MAX {
        return Err(format!(
            "{RESULT_FILE} lists {} examples; at most {EXAMPLES_MAX} are kept per run: score a sample of the dataset",
            examples.len()
        ));
    }
    let mut seen = std::collections::HashSet::new();
    let mut cut = false;
    for (i, e) in examples.iter_mut().enumerate() {
        if !(0.0..=1.0).contains(&e.score) {
            return Err(format!("{RESULT_FILE}: examples[{i}].score is {}; a score is from 0.0 to 1.0", e.score));
        }
        if e.id.trim().is_empty() || !seen.insert(e.id.clone()) {
            return Err(format!(
                "{RESULT_FILE}: examples[{i}].id {:?} is empty or repeats an earlier one; give every example its own stable id",
                e.id
            ));
        }
        for text in [&mut e.input, &mut e.expected, &mut e.output, &mut e.feedback].into_iter().flatten() {
            if text.chars().count() > EXAMPLE_TEXT_MAX {
                *text = text.chars().take(EXAMPLE_TEXT_MAX).collect::<String>() + "…";
                cut = true;
            }
        }
    }
    Ok(cut)
}

/// Everything a command run needs besides the task itself.
pub struct CommandRun<'a> {
    pub task: &'a Task,
    pub spec: &'a CommandTask,
    pub run_dir: &'a Path,
    pub suite_dir: &'a Path,
    pub epoch_num: i64,
    pub artifacts: &'a [ActiveArtifact],
    /// Screening asks for these examples only: the harness finds their ids,
    /// one per line, in `ATTRACTOR_EXAMPLE_IDS` (unset: every example).
    pub example_ids: Option<&'a [String]>,
    /// Flips to `true` when the run must stop now (Ctrl-C).
    pub cancel: watch::Receiver<bool>,
}

/// Prepares the run directory, runs the command, and reads its result.
pub async fn run(r: CommandRun<'_>) -> RunOutcome {
    let started = Instant::now();
    let mut outcome = match prepare(&r).await {
        Ok(()) => execute(&r).await,
        Err(e) => RunOutcome::failed(format!("could not prepare the run directory {}: {e}", r.run_dir.display())),
    };
    outcome.duration = started.elapsed();
    // A harness that does not report its budget use still used wall time.
    if outcome.signals.budget_remaining_pct.is_none()
        && !outcome.cancelled
        && let Some(limit) = r.task.budget.max_wall_time
    {
        let used = outcome.duration.as_secs_f64() / limit;
        outcome.signals.budget_remaining_pct = Some((100.0 * (1.0 - used)).max(0.0));
    }
    outcome
}

async fn prepare(r: &CommandRun<'_>) -> std::io::Result<()> {
    let artifacts_dir = r.run_dir.join("artifacts");
    tokio::fs::create_dir_all(&artifacts_dir).await?;
    let mut index = serde_json::Map::new();
    for a in r.artifacts {
        let file = format!("{}.{}", crate::suite::folder_name(&a.name), a.kind.extension());
        tokio::fs::write(artifacts_dir.join(&file), &a.content).await?;
        index
            .insert(a.name.clone(), serde_json::json!({ "version": a.version, "type": a.kind.as_str(), "file": file }));
    }
    let index = serde_json::to_string_pretty(&serde_json::Value::Object(index)).unwrap_or_default();
    tokio::fs::write(artifacts_dir.join("index.json"), index).await?;
    tokio::fs::write(r.run_dir.join("task.txt"), &r.task.task).await?;
    // A stale result from an earlier attempt in the same folder must not count.
    match tokio::fs::remove_file(r.run_dir.join(RESULT_FILE)).await {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    Ok(())
}

async fn execute(r: &CommandRun<'_>) -> RunOutcome {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let run_dir = abs(r.run_dir);
    let mut cmd = ShellCommand::new(&r.spec.command, &run_dir, r.spec.timeout)
        .capture(Capture::head(OUTPUT_CAP))
        .env("ATTRACTOR_RUN_DIR", &run_dir)
        .env("ATTRACTOR_TASK_NAME", &r.task.name)
        .env("ATTRACTOR_TASK", &r.task.task)
        .env("ATTRACTOR_TASK_FILE", run_dir.join("task.txt"))
        .env("ATTRACTOR_ARTIFACTS_DIR", run_dir.join("artifacts"))
        .env("ATTRACTOR_ARTIFACTS_INDEX", run_dir.join("artifacts").join("index.json"))
        .env("ATTRACTOR_RESULT_FILE", run_dir.join(RESULT_FILE))
        .env("ATTRACTOR_SUITE_DIR", abs(r.suite_dir))
        .env("ATTRACTOR_EPOCH", r.epoch_num.to_string());
    if let Some(ids) = r.example_ids {
        cmd = cmd.env("ATTRACTOR_EXAMPLE_IDS", ids.join("\n"));
    }
    for (k, v) in &r.spec.env {
        cmd = cmd.env(k, v);
    }
    let run = cmd.run(Some(r.cancel.clone())).await;

    let mut outcome = match &run.end {
        ProcessEnd::SpawnFailed(e) => {
            return RunOutcome::failed(format!("could not start `sh -c {}`: {e}", r.spec.command));
        }
        ProcessEnd::Cancelled => {
            RunOutcome { cancelled: true, ..RunOutcome::failed("cancelled (interrupted by the user)") }
        }
        ProcessEnd::TimedOut(after) => RunOutcome::failed(format!("timed out after {}", fmt_duration(*after))),
        ProcessEnd::WaitFailed(e) => RunOutcome::failed(format!("could not wait for the command: {e}")),
        ProcessEnd::Exited(status) => {
            let mut o = read_result(&run_dir.join(RESULT_FILE)).await;
            o.exit_code = status.code().map(i64::from);
            if !status.success() {
                let why = match status.code() {
                    Some(code) => format!("the command exited with code {code}"),
                    None => "the command was killed by a signal".to_string(),
                };
                o.error = Some(match o.error.take() {
                    Some(e) => format!("{why}; {e}"),
                    None => why,
                });
                o.signals.status = Some(RunStatus::Failed);
            }
            o
        }
    };
    outcome.stdout = run.stdout;
    outcome.stderr = run.stderr;
    // A command task has no trajectory for the auditor to file an alert
    // under; what it left running (and was killed) is said in its stderr.
    if !run.left_running.is_empty() {
        let listed: Vec<String> = run.left_running.iter().map(|p| format!("pid {} `{}`", p.pid, p.command)).collect();
        outcome.stderr.push_str(&format!(
            "\n[attractor: the command left {} running after it ended, now killed: {}]\n",
            crate::counted_as(run.left_running.len(), "process", "processes"),
            listed.join(", ")
        ));
    }
    outcome
}

async fn read_result(path: &Path) -> RunOutcome {
    match tokio::fs::metadata(path).await {
        Ok(m) if m.len() > RESULT_FILE_MAX => {
            return RunOutcome::failed(format!(
                "{RESULT_FILE} is {} bytes; at most {RESULT_FILE_MAX} are read: list fewer examples or shorter texts",
                m.len()
            ));
        }
        _ => {}
    }
    let text = match tokio::fs::read_to_string(path).await {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return RunOutcome::failed(format!(
                "the command wrote no {RESULT_FILE} (it must write one to $ATTRACTOR_RESULT_FILE)"
            ));
        }
        Err(e) => return RunOutcome::failed(format!("cannot read {}: {e}", path.display())),
    };
    match serde_json::from_str::<RunCompletion>(&text) {
        Ok(mut c) => {
            let cut = match c.examples.as_deref_mut().map_or(Ok(false), check_examples) {
                Ok(cut) => cut,
                Err(e) => return RunOutcome { result_json: Some(text), ..RunOutcome::failed(e) },
            };
            // Verbatim, unless a text was cut: then the database holds what was checked.
            let result_json = Some(if cut { reserialize(&text, &c) } else { text });
            RunOutcome {
                signals: LossSignals {
                    eval_score: c.eval_score,
                    critique_score: c.critique_score,
                    gate_rejection_count: c.gate_rejection_count,
                    budget_remaining_pct: c.budget_remaining_pct,
                    status: Some(c.status),
                },
                result_json,
                metrics: c.metrics,
                ..RunOutcome::default()
            }
        }
        Err(e) => RunOutcome {
            result_json: Some(text),
            ..RunOutcome::failed(format!(
                "{RESULT_FILE} is malformed at line {} column {}: {e} (expected {{\"status\": \"complete|partial|failed|aborted\", \"eval_score\": 0.0–1.0, …}})",
                e.line(),
                e.column()
            ))
        },
    }
}

/// The result file with its examples as checked (texts cut), everything
/// else as the harness wrote it.
fn reserialize(text: &str, checked: &RunCompletion) -> String {
    let Ok(mut v) = serde_json::from_str::<serde_json::Value>(text) else { return text.to_string() };
    if let (Some(obj), Ok(examples)) = (v.as_object_mut(), serde_json::to_value(&checked.examples)) {
        obj.insert("examples".into(), examples);
    }
    serde_json::to_string(&v).unwrap_or_else(|_| text.to_string())
}

/// A fresh run directory for one attempt at a task:
/// `<runs root>/<suite>/epoch-<n>/<task>`, with `-attempt-<k>` appended when
/// an earlier attempt (an interrupted one) left its folder there.
pub fn fresh_run_dir(root: &Path, suite: &str, epoch_num: i64, task: &str) -> PathBuf {
    use crate::suite::folder_name;
    let epoch_dir = root.join(folder_name(suite)).join(format!("epoch-{epoch_num:04}"));
    let task = folder_name(task);
    let first = epoch_dir.join(&task);
    if !first.exists() {
        return first;
    }
    (2..).map(|k| epoch_dir.join(format!("{task}-attempt-{k}"))).find(|p| !p.exists()).unwrap_or(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read(text: &str) -> RunOutcome {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RESULT_FILE);
        std::fs::write(&path, text).unwrap();
        read_result(&path).await
    }

    #[tokio::test]
    async fn a_result_lists_its_examples_with_long_texts_cut() {
        let long = "x".repeat(EXAMPLE_TEXT_MAX + 10);
        let text = serde_json::json!({
            "status": "complete", "eval_score": 0.5,
            "examples": [
                {"id": "m1", "input": "refund please", "expected": "billing", "output": "bug", "score": 0.0, "feedback": "wrong label"},
                {"id": "m2", "input": long, "score": 1.0},
            ],
        })
        .to_string();
        let outcome = read(&text).await;
        assert!(outcome.error.is_none(), "{:?}", outcome.error);
        let examples = examples_of(outcome.result_json.as_deref().unwrap());
        assert_eq!(examples.len(), 2);
        assert_eq!(examples[0].expected.as_deref(), Some("billing"));
        assert!(!examples[0].right() && examples[1].right());
        assert_eq!(examples[1].input.as_ref().unwrap().chars().count(), EXAMPLE_TEXT_MAX + 1, "cut, with an ellipsis");
    }

    #[tokio::test]
    async fn bad_examples_fail_the_run_with_where_and_how_to_fix() {
        let cases = [
            (r#"[{"id": "a", "score": 1.5}]"#, "examples[0].score is 1.5; a score is from 0.0 to 1.0"),
            (r#"[{"id": "a", "score": 1}, {"id": "a", "score": 0}]"#, "examples[1].id \"a\" is empty or repeats"),
            (r#"[{"id": " ", "score": 1}]"#, "examples[0].id"),
            (r#"[{"id": "a", "score": 1, "colour": "red"}]"#, "unknown field `colour`"),
            (r#"[{"id": "a"}]"#, "missing field `score`"),
        ];
        for (examples, says) in cases {
            let outcome = read(&format!(r#"{{"status": "complete", "examples": {examples}}}"#)).await;
            let error = outcome.error.unwrap_or_default();
            assert!(error.contains(says), "{examples}: {error}");
            assert_eq!(outcome.signals.status, Some(RunStatus::Failed));
        }
        let many: Vec<_> = (0..=EXAMPLES_MAX).map(|i| serde_json::json!({"id": i.to_string(), "score": 1})).collect();
        let outcome = read(&serde_json::json!({"status": "complete", "examples": many}).to_string()).await;
        assert!(outcome.error.unwrap_or_default().contains("at most 5000 are kept per run"));
    }

    #[tokio::test]
    async fn a_result_file_too_big_to_keep_is_refused_unread() {
        let text =
            format!(r#"{{"status": "complete", "metrics": {{"pad": "{}"}}}}"#, "p".repeat(RESULT_FILE_MAX as usize));
        let outcome = read(&text).await;
        assert!(outcome.error.unwrap_or_default().contains("at most 8388608 are read"));
        assert!(outcome.result_json.is_none());
    }

    #[test]
    fn a_result_without_examples_has_none() {
        assert!(examples_of(r#"{"status": "complete", "eval_score": 1}"#).is_empty());
        assert!(examples_of("not json").is_empty());
    }
}
