//! Any external coding agent as an executor.
//!
//! The task file names the agent's command line (`executor.command`). Each
//! iteration the strategy's prompt is written to a file — outside the
//! committed files, in the workspace's `.git/attractor/` — whose path is in
//! `$ATTRACTOR_PROMPT_FILE` and replaces `{prompt_file}` in the command. The
//! command runs in the workspace (shell, own process group, killed whole at
//! its timeout; see [`crate::process`]), then the workspace is committed and
//! the commit's changed files are the execution's edits.
//!
//! The agent may report back by writing JSON to `$ATTRACTOR_EXECUTION_FILE`:
//! `{"summary": …, "tokens": …, "tools_used": […]}`. Reported tools that the
//! goal gradient blocked make the run rejected: the workspace is put back as
//! it was before the run.
//!
//! The agent is a program with the user's rights: the workspace's path
//! rules cannot confine it. That is why a task file found by the watcher
//! needs a person's approval before its commands run.

use std::collections::BTreeMap;
use std::time::Instant;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::defaults::COMMAND_CONTRACT;
use super::{
    AppliedEdit, EditAction, Execution, ExecutionRequest, ExecutionStatus, Executor, ExecutorError, ViewBudget,
    blocked_tools_used, commit_message, prepare, prompt_for,
};
use crate::process::{Capture, ProcessEnd, ShellCommand, shell_quote};
use crate::suite::{Executor as ExecutorSpec, ExecutorKind};
use crate::workspace::Workspace;

/// How long an agent may run when the task file does not say (seconds).
pub const DEFAULT_AGENT_TIMEOUT_SECS: f64 = 900.0;

/// Settings of the command executor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CommandExecutorConfig {
    /// Shell command; `{prompt_file}` is replaced by the prompt file's path.
    pub command: String,
    pub timeout_secs: f64,
    /// Extra environment variables for the agent.
    pub env: BTreeMap<String, String>,
    /// Put file contents in the prompt (an agent can read the files itself,
    /// so by default the prompt only lists them).
    pub include_file_contents: bool,
    pub view: ViewBudget,
}

impl Default for CommandExecutorConfig {
    fn default() -> Self {
        CommandExecutorConfig {
            command: String::new(),
            timeout_secs: DEFAULT_AGENT_TIMEOUT_SECS,
            env: BTreeMap::new(),
            include_file_contents: false,
            view: ViewBudget::default(),
        }
    }
}

impl CommandExecutorConfig {
    /// The configuration a task file's `executor:` describes, when it is a
    /// command executor with a command.
    pub fn from_spec(spec: &ExecutorSpec) -> Option<CommandExecutorConfig> {
        let command = spec.command.as_deref().filter(|c| !c.trim().is_empty())?;
        (spec.kind == ExecutorKind::Command).then(|| CommandExecutorConfig {
            command: command.to_string(),
            timeout_secs: spec.timeout.filter(|t| t.is_finite() && *t > 0.0).unwrap_or(DEFAULT_AGENT_TIMEOUT_SECS),
            ..CommandExecutorConfig::default()
        })
    }
}

/// What an agent may report in `$ATTRACTOR_EXECUTION_FILE`.
#[derive(Debug, Default, Deserialize)]
struct AgentReport {
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    tokens: Option<u64>,
    #[serde(default)]
    tools_used: Vec<String>,
}

/// Executes iterations by running an external coding agent.
pub struct CommandExecutor {
    config: CommandExecutorConfig,
    sandbox: Option<crate::process::sandbox::Sandbox>,
}

impl CommandExecutor {
    pub fn new(config: CommandExecutorConfig) -> CommandExecutor {
        CommandExecutor { config, sandbox: None }
    }

    /// Runs the agent in `sandbox` (`None`: with the user's full rights).
    pub fn sandboxed(mut self, sandbox: Option<crate::process::sandbox::Sandbox>) -> CommandExecutor {
        self.sandbox = sandbox;
        self
    }
}

#[async_trait]
impl Executor for CommandExecutor {
    async fn execute(&self, request: &ExecutionRequest, ws: &mut Workspace) -> Result<Execution, ExecutorError> {
        let started = Instant::now();
        prepare(request, ws).await?;
        let before = ws.head().map(str::to_string);
        let budget = if self.config.include_file_contents {
            self.config.view
        } else {
            ViewBudget { max_total_bytes: 0, ..self.config.view }
        };
        let (prompt, _) = prompt_for(request, ws, budget, &[]).await?;
        let text = format!("{}\n\n{COMMAND_CONTRACT}\n", prompt.as_text().trim_end());

        let scratch = ws.scratch_dir().await?;
        let prompt_file = scratch.join(format!("prompt-{}.md", request.sequence));
        let report_file = scratch.join(format!("execution-{}.json", request.sequence));
        let io = |action, path: &std::path::Path| {
            let path = path.to_path_buf();
            move |source| ExecutorError::Io { action, path, source }
        };
        tokio::fs::write(&prompt_file, &text).await.map_err(io("write", &prompt_file))?;
        match tokio::fs::remove_file(&report_file).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io("remove", &report_file)(e)),
            _ => {}
        }

        let command = self.config.command.replace("{prompt_file}", &shell_quote(&prompt_file.to_string_lossy()));
        let timeout = crate::time::secs(if crate::time::valid_secs(self.config.timeout_secs) {
            self.config.timeout_secs
        } else {
            DEFAULT_AGENT_TIMEOUT_SECS
        });
        let mut cmd = ShellCommand::new(&command, ws.root(), timeout)
            .capture(Capture::head_and_tail(64 * 1024, 64 * 1024))
            .env("ATTRACTOR_PROMPT_FILE", &prompt_file)
            .env("ATTRACTOR_EXECUTION_FILE", &report_file)
            .env("ATTRACTOR_WORKSPACE", ws.root())
            .env("ATTRACTOR_STRATEGY", request.strategy.as_str())
            .env("ATTRACTOR_SEQUENCE", request.sequence.to_string())
            .sandboxed(self.sandbox.clone());
        for (k, v) in &self.config.env {
            cmd = cmd.env(k, v);
        }
        let run = cmd.run(request.cancel.clone()).await;
        if let ProcessEnd::SpawnFailed(reason) = &run.end {
            return Err(ExecutorError::Spawn { command, reason: reason.clone() });
        }

        let mut notes = Vec::new();
        let report = match tokio::fs::read_to_string(&report_file).await {
            Ok(text) => serde_json::from_str::<AgentReport>(&text).unwrap_or_else(|e| {
                notes.push(format!("the agent's report in $ATTRACTOR_EXECUTION_FILE was not usable: {e}"));
                AgentReport::default()
            }),
            Err(_) => AgentReport::default(),
        };
        let mut status = match &run.end {
            ProcessEnd::Exited(s) if s.success() => ExecutionStatus::Completed,
            ProcessEnd::TimedOut(after) => ExecutionStatus::TimedOut { after_secs: after.as_secs_f64() },
            ProcessEnd::Cancelled => ExecutionStatus::Cancelled,
            other => ExecutionStatus::Failed {
                reason: format!("the agent {}", other.describe()),
                exit_code: other.exit_code(),
            },
        };
        let blocked = blocked_tools_used(&report.tools_used, &request.inputs.blocked_tools);
        if !blocked.is_empty() {
            let reason = format!(
                "the agent used {} {}; its changes were discarded",
                if blocked.len() == 1 { "a blocked tool" } else { "blocked tools" },
                blocked.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
            );
            if let Some(before) = &before {
                ws.reset_to(before).await?;
            }
            status = ExecutionStatus::Rejected { reason };
        }

        let summary = match report.summary.filter(|s| !s.trim().is_empty()) {
            Some(s) => s,
            None => {
                let out = run.combined_output();
                let out = out.trim();
                let tail: String = out.chars().rev().take(800).collect::<Vec<_>>().into_iter().rev().collect();
                if tail.is_empty() {
                    "(the agent printed nothing)".to_string()
                } else {
                    format!("agent output: {tail}")
                }
            }
        };
        let summary = if notes.is_empty() { summary } else { format!("{summary}\n{}", notes.join("\n")) };

        let artifact = ws.commit(&commit_message(request, &summary)).await?;
        let applied = match &before {
            Some(before) => ws
                .changes(before, &artifact.commit)
                .await?
                .into_iter()
                .map(|c| {
                    let exists = std::fs::symlink_metadata(ws.root().join(&c.path)).is_ok();
                    AppliedEdit {
                        path: c.path,
                        action: if exists { EditAction::Write } else { EditAction::Delete },
                        note: None,
                    }
                })
                .collect(),
            None => Vec::new(),
        };
        Ok(Execution {
            artifact,
            tokens: report.tokens.unwrap_or(0),
            wall_time: started.elapsed(),
            summary,
            applied,
            rejected: Vec::new(),
            tools_used: report.tools_used,
            status,
            subtasks: Vec::new(),
            amendments: Vec::new(),
            left_running: run.left_running,
        })
    }
}
