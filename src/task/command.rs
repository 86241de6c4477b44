//! The `command` task kind: a black-box run of any existing harness.
//!
//! Attractor writes the active artifact versions into a fresh run directory,
//! runs the task's shell command there with a timeout, and reads the scores the
//! command leaves in `run_completion.json`. Whatever goes wrong — a missing or
//! malformed result, a non-zero exit, a timeout — becomes a failed run with the
//! reason recorded, never a crash of the suite.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::watch;

use super::{ActiveArtifact, RunOutcome};
use crate::loss::{LossSignals, RunStatus};
use crate::suite::{CommandTask, Task};

/// The file a command writes its scores to, in its run directory.
pub const RESULT_FILE: &str = "run_completion.json";

/// How much of stdout and of stderr is kept with a run.
pub const OUTPUT_CAP: usize = 64 * 1024;

/// What a command reports in `run_completion.json`. Only `status` is required;
/// a missing score counts as neutral in the loss.
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
}

/// Everything a command run needs besides the task itself.
pub struct CommandRun<'a> {
    pub task: &'a Task,
    pub spec: &'a CommandTask,
    pub run_dir: &'a Path,
    pub suite_dir: &'a Path,
    pub epoch_num: i64,
    pub artifacts: &'a [ActiveArtifact],
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
        let file = format!("{}.{}", a.name, a.kind.extension());
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
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&r.spec.command)
        .current_dir(&run_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("ATTRACTOR_RUN_DIR", &run_dir)
        .env("ATTRACTOR_TASK_NAME", &r.task.name)
        .env("ATTRACTOR_TASK", &r.task.task)
        .env("ATTRACTOR_TASK_FILE", run_dir.join("task.txt"))
        .env("ATTRACTOR_ARTIFACTS_DIR", run_dir.join("artifacts"))
        .env("ATTRACTOR_ARTIFACTS_INDEX", run_dir.join("artifacts").join("index.json"))
        .env("ATTRACTOR_RESULT_FILE", run_dir.join(RESULT_FILE))
        .env("ATTRACTOR_SUITE_DIR", abs(r.suite_dir))
        .env("ATTRACTOR_EPOCH", r.epoch_num.to_string())
        .envs(&r.spec.env)
        // Its own process group, so a timeout kills the whole pipeline the
        // shell started, not just the shell.
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return RunOutcome::failed(format!("could not start `sh -c {}`: {e}", r.spec.command));
        }
    };
    let pid = child.id();
    let stdout = tokio::spawn(read_capped(child.stdout.take()));
    let stderr = tokio::spawn(read_capped(child.stderr.take()));

    let mut cancel = r.cancel.clone();
    enum End {
        Exited(std::io::Result<std::process::ExitStatus>),
        TimedOut,
        Cancelled,
    }
    let end = tokio::select! {
        status = child.wait() => End::Exited(status),
        _ = tokio::time::sleep(r.spec.timeout) => End::TimedOut,
        _ = async { while !*cancel.borrow_and_update() { if cancel.changed().await.is_err() { std::future::pending::<()>().await } } } => End::Cancelled,
    };
    if !matches!(end, End::Exited(_)) {
        if let Some(pid) = pid {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
        }
        let _ = child.wait().await;
    }
    let stdout = stdout.await.unwrap_or_default();
    let stderr = stderr.await.unwrap_or_default();

    let mut outcome = match end {
        End::Cancelled => RunOutcome { cancelled: true, ..RunOutcome::failed("cancelled (interrupted by the user)") },
        End::TimedOut => RunOutcome::failed(format!("timed out after {}", fmt_duration(r.spec.timeout))),
        End::Exited(Err(e)) => RunOutcome::failed(format!("could not wait for the command: {e}")),
        End::Exited(Ok(status)) => {
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
    outcome.stdout = stdout;
    outcome.stderr = stderr;
    outcome
}

async fn read_result(path: &Path) -> RunOutcome {
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
        Ok(c) => RunOutcome {
            signals: LossSignals {
                eval_score: c.eval_score,
                critique_score: c.critique_score,
                gate_rejection_count: c.gate_rejection_count,
                budget_remaining_pct: c.budget_remaining_pct,
                status: Some(c.status),
            },
            result_json: Some(text),
            metrics: c.metrics,
            ..RunOutcome::default()
        },
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

/// Reads a pipe to the end, keeping at most [`OUTPUT_CAP`] bytes.
async fn read_capped<R: AsyncRead + Unpin>(pipe: Option<R>) -> String {
    let Some(mut pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut dropped = 0usize;
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                dropped += n.saturating_sub(room);
            }
        }
    }
    let mut s = String::from_utf8_lossy(&kept).into_owned();
    if dropped > 0 {
        s.push_str(&format!("\n[… {dropped} more bytes not kept]"));
    }
    s
}

fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 { format!("{s:.0} s") } else { format!("{s:.1} s") }
}

/// A fresh run directory for one attempt at a task:
/// `<runs root>/<suite>/epoch-<n>/<task>`, with `-attempt-<k>` appended when
/// an earlier attempt (an interrupted one) left its folder there.
pub fn fresh_run_dir(root: &Path, suite: &str, epoch_num: i64, task: &str) -> PathBuf {
    let epoch_dir = root.join(suite).join(format!("epoch-{epoch_num:04}"));
    let first = epoch_dir.join(task);
    if !first.exists() {
        return first;
    }
    (2..).map(|k| epoch_dir.join(format!("{task}-attempt-{k}"))).find(|p| !p.exists()).unwrap_or(first)
}
