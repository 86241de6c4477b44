//! Executors: what carries out one iteration of an agent task (seed 003's
//! R3) — turning a strategy into changes of the trajectory's workspace.
//!
//! An [`Executor`] receives an [`ExecutionRequest`] (which strategy, what the
//! trajectory knows, the learnable prompt texts) and the trajectory's
//! [`Workspace`], changes the workspace, commits it, and returns an
//! [`Execution`]: the commit, the tokens and time spent, what was changed
//! and what was refused. It never judges the result; the overseers do.
//!
//! - [`llm::LlmExecutor`]: the built-in executor; asks an OpenAI-compatible
//!   model for a structured reply and applies its edits through the
//!   workspace's safe writes.
//! - [`command::CommandExecutor`]: any external coding agent, given the
//!   prompt in a file and run in the workspace with a timeout.
//! - [`prompt`]: the prompt of each strategy; [`defaults`]: the version-0
//!   texts; [`view`]: the bounded view of the files.
//!
//! Both executors honour the goal gradient's blocked tools (dynamic MUST
//! NOT, seed 003): a reply or run that reports using one is rejected as a
//! whole and leaves the workspace as it was.

pub mod command;
pub mod defaults;
pub mod llm;
pub mod patch;
pub mod prompt;
pub mod view;

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use tokio::sync::watch;

pub use command::{CommandExecutor, CommandExecutorConfig};
pub use defaults::{
    PROMPT_ARTIFACTS, PromptTexts, PromptTextsError, StrategyTemplates, TemplateError, check_prompt_artifact,
};
pub use llm::{LlmExecutor, LlmExecutorConfig};
pub use prompt::{
    AttemptNote, CarryForwardInputs, MemoryLessons, Prompt, PromptInputs, Specification, build_prompt, view_for,
};
pub use view::{Focus, ViewBudget, WorkspaceView};

use crate::engine::StrategyKind;
use crate::llm::LlmError;
use crate::overseer::FailureClass;
use crate::workspace::{ArtifactReference, Workspace, WorkspaceError};

/// Where RevertAndBranch resets the workspace to: the best observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevertTarget {
    pub sequence: u32,
    pub artifact: ArtifactReference,
}

/// One iteration to carry out.
#[derive(Debug, Clone)]
pub struct ExecutionRequest {
    /// The observation this execution will produce (for commit messages and
    /// the prompt file's name).
    pub sequence: u32,
    pub strategy: StrategyKind,
    pub inputs: PromptInputs,
    pub texts: PromptTexts,
    /// Required by RevertAndBranch (ignored by the other strategies).
    pub revert_to: Option<RevertTarget>,
    /// Turns true when the run must stop now (Ctrl-C).
    pub cancel: Option<watch::Receiver<bool>>,
}

impl ExecutionRequest {
    pub fn new(sequence: u32, strategy: StrategyKind, inputs: PromptInputs) -> ExecutionRequest {
        ExecutionRequest { sequence, strategy, inputs, texts: PromptTexts::default(), revert_to: None, cancel: None }
    }
}

/// What an edit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EditAction {
    /// The whole file, as given.
    Write,
    /// One place of the file, found by a search block (see [`patch`]).
    Replace,
    Delete,
}

impl EditAction {
    /// The action's name as the model writes it.
    pub fn name(self) -> &'static str {
        match self {
            EditAction::Write => "write",
            EditAction::Replace => "replace",
            EditAction::Delete => "delete",
        }
    }
}

/// A change that reached the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedEdit {
    pub path: String,
    pub action: EditAction,
    /// How a replace found its place ("matched ignoring indentation").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A change that was refused, and why (reported back to the model and
/// counted as a gate rejection).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectedEdit {
    pub path: String,
    pub action: EditAction,
    pub reason: String,
}

/// How an execution ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ExecutionStatus {
    Completed,
    /// The reply (or the agent's run) was refused as a whole, e.g. for using
    /// a blocked tool; the workspace is as it was before.
    Rejected {
        reason: String,
    },
    /// The external agent ran past its timeout and was killed; what it had
    /// changed by then is committed.
    TimedOut {
        after_secs: f64,
    },
    /// The external agent failed (non-zero exit, killed); what it changed is
    /// committed.
    Failed {
        reason: String,
        exit_code: Option<i32>,
    },
    Cancelled,
}

/// What one execution produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Execution {
    /// The commit holding the workspace after the execution.
    pub artifact: ArtifactReference,
    /// Tokens spent (as reported; estimated at four characters a token when
    /// the server reports none).
    pub tokens: u64,
    pub wall_time: Duration,
    /// The executor's own account of what it did.
    pub summary: String,
    pub applied: Vec<AppliedEdit>,
    pub rejected: Vec<RejectedEdit>,
    /// Tools the executor says it relied on (the goal gradient blocks these
    /// after a failing attempt).
    pub tools_used: Vec<String>,
    pub status: ExecutionStatus,
    /// Decompose: the proposed subtasks, in order.
    pub subtasks: Vec<String>,
    /// ArchitectReview: the proposed specification amendments.
    pub amendments: Vec<String>,
    /// Processes an external agent left running after it ended (killed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_running: Vec<crate::process::LeftProcess>,
}

impl Execution {
    /// Refusals in this execution (gate rejections for the loss): one for a
    /// reply refused as a whole, otherwise one per refused edit.
    pub fn rejection_count(&self) -> u32 {
        match self.status {
            ExecutionStatus::Rejected { .. } => 1,
            _ => u32::try_from(self.rejected.len()).unwrap_or(u32::MAX),
        }
    }

    /// Why the execution itself failed, if it did: an agent that timed out,
    /// was killed or could not run is environmental; a refused reply, or an
    /// agent that ran and reported failure, is logical.
    pub fn failure_class(&self) -> Option<FailureClass> {
        match &self.status {
            ExecutionStatus::Completed => None,
            ExecutionStatus::TimedOut { .. } | ExecutionStatus::Cancelled => Some(FailureClass::Environmental),
            ExecutionStatus::Failed { exit_code, .. } => match exit_code {
                Some(126 | 127) | None => Some(FailureClass::Environmental),
                Some(_) => Some(FailureClass::Logical),
            },
            ExecutionStatus::Rejected { .. } => Some(FailureClass::Logical),
        }
    }
}

#[derive(Debug, Error)]
pub enum ExecutorError {
    #[error("the model call failed: {0}")]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error("cancelled before the model answered; the workspace is unchanged")]
    Cancelled,
    #[error("strategy revert_and_branch needs a revert target (the best observation's commit)")]
    MissingRevertTarget,
    #[error("could not start the executor command `{command}`: {reason}")]
    Spawn { command: String, reason: String },
    #[error("could not {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Carries out one iteration on a workspace.
#[async_trait]
pub trait Executor: Send + Sync {
    async fn execute(&self, request: &ExecutionRequest, ws: &mut Workspace) -> Result<Execution, ExecutorError>;
}

/// What every executor does before it starts: RevertAndBranch resets the
/// workspace to its target.
async fn prepare(request: &ExecutionRequest, ws: &mut Workspace) -> Result<(), ExecutorError> {
    if request.strategy == StrategyKind::RevertAndBranch {
        let target = request.revert_to.as_ref().ok_or(ExecutorError::MissingRevertTarget)?;
        ws.reset_to(&target.artifact.commit).await?;
    }
    Ok(())
}

/// Builds the strategy's prompt with the view of the workspace it calls
/// for; also every file of the workspace, as listed for the view.
async fn prompt_for(
    request: &ExecutionRequest,
    ws: &Workspace,
    budget: ViewBudget,
    available_tools: &[&str],
) -> Result<(Prompt, Vec<String>), ExecutorError> {
    let mut inputs = request.inputs.clone();
    if inputs.available_tools.is_empty() {
        inputs.available_tools = available_tools.iter().map(|t| t.to_string()).collect();
    }
    let (budget, focus) = prompt::view_for(request.strategy, &inputs, budget);
    let view = WorkspaceView::gather(ws, budget, &focus).await?;
    let prompt = build_prompt(request.strategy, &inputs, &request.texts, &view, request.revert_to.as_ref());
    Ok((prompt, view.listing))
}

/// The tools in `used` that `blocked` forbids (names compared trimmed and
/// case-insensitively: the seed's exact match on the tool's name).
pub fn blocked_tools_used(used: &[String], blocked: &[String]) -> Vec<String> {
    let norm = |s: &str| s.trim().to_lowercase();
    let blocked: Vec<String> = blocked.iter().map(|b| norm(b)).filter(|b| !b.is_empty()).collect();
    used.iter().filter(|u| blocked.contains(&norm(u))).cloned().collect()
}

/// The commit message of an execution.
fn commit_message(request: &ExecutionRequest, summary: &str) -> String {
    let first = summary.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let first: String = first.chars().take(160).collect();
    format!(
        "observation {}: {}\n\n{}",
        request.sequence,
        request.strategy,
        if first.is_empty() { "(no summary)" } else { &first }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_tools_match_by_name_whatever_the_case_and_spacing() {
        let used = vec!["Regex".to_string(), "serde_json".to_string(), "sed".to_string()];
        let blocked = vec![" regex ".to_string(), "awk".to_string()];
        assert_eq!(blocked_tools_used(&used, &blocked), vec!["Regex"]);
        assert!(blocked_tools_used(&used, &[]).is_empty());
    }

    #[test]
    fn a_failed_agent_is_environmental_only_when_it_could_not_run() {
        let e = |status| Execution {
            artifact: ArtifactReference::default(),
            tokens: 0,
            wall_time: Duration::ZERO,
            summary: String::new(),
            applied: vec![],
            rejected: vec![],
            tools_used: vec![],
            status,
            subtasks: vec![],
            amendments: vec![],
            left_running: vec![],
        };
        let failed = |code| ExecutionStatus::Failed { reason: String::new(), exit_code: code };
        assert_eq!(e(failed(Some(127))).failure_class(), Some(FailureClass::Environmental));
        assert_eq!(e(failed(Some(1))).failure_class(), Some(FailureClass::Logical));
        assert_eq!(e(ExecutionStatus::TimedOut { after_secs: 1.0 }).failure_class(), Some(FailureClass::Environmental));
        assert_eq!(e(ExecutionStatus::Completed).failure_class(), None);
        assert_eq!(e(ExecutionStatus::Rejected { reason: "x".into() }).rejection_count(), 1);
    }
}
