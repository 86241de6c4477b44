//! The built-in executor: one structured chat call per iteration.
//!
//! The model is shown the strategy's prompt and asked (JSON mode) for a
//! reply of a fixed shape — a summary, the tools it relied on, and whole-file
//! edits. The reply is then checked before anything touches the disk:
//!
//! - a reply that names a blocked tool is refused whole, nothing written;
//! - each edit goes through [`Workspace::write_file`] /
//!   [`Workspace::delete_file`], which refuse paths outside the workspace,
//!   into `.git`, through escaping links, or over the size limit — a refused
//!   edit is reported with its reason, the others are applied;
//! - the workspace is committed, so the iteration has its own state.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::defaults::LLM_REPLY_CONTRACT;
use super::{
    AppliedEdit, EditAction, Execution, ExecutionRequest, ExecutionStatus, Executor, ExecutorError, RejectedEdit,
    ViewBudget, blocked_tools_used, commit_message, prepare, prompt_for,
};
use crate::llm::{CallRole, ChatMessage, ChatRequest, LlmClient};
use crate::workspace::Workspace;

/// The tools the LLM executor offers the model.
const TOOLS: [&str; 2] = ["write_file", "delete_file"];

/// Settings of the LLM executor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmExecutorConfig {
    /// Sampling temperature: above 0 so a retry is a new draw.
    pub temperature: f64,
    pub max_tokens: Option<u32>,
    /// Overrides the client's model (a task's `model:`).
    pub model: Option<String>,
    /// Per-call timeout override (seconds).
    pub timeout_secs: Option<f64>,
    /// Edits applied from one reply at most; the rest are refused.
    pub max_edits: usize,
    pub view: ViewBudget,
}

impl Default for LlmExecutorConfig {
    fn default() -> Self {
        LlmExecutorConfig {
            temperature: 0.2,
            max_tokens: None,
            model: None,
            timeout_secs: None,
            max_edits: 100,
            view: ViewBudget::default(),
        }
    }
}

/// The reply the model is asked for. Unknown fields are ignored: models add
/// commentary fields, and they do no harm.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ModelReply {
    /// What this attempt did, in a sentence or two (required: an empty
    /// object is refused, not taken for an attempt that changed nothing).
    summary: String,
    #[serde(default)]
    tools_used: Vec<String>,
    edits: Vec<ModelEdit>,
    #[serde(default)]
    subtasks: Vec<String>,
    #[serde(default)]
    amendments: Vec<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ModelEdit {
    path: String,
    #[serde(default = "write_action")]
    action: EditAction,
    #[serde(default)]
    content: Option<String>,
}

fn write_action() -> EditAction {
    EditAction::Write
}

/// Executes iterations by asking a model.
pub struct LlmExecutor {
    client: LlmClient,
    config: LlmExecutorConfig,
}

impl LlmExecutor {
    pub fn new(client: LlmClient, config: LlmExecutorConfig) -> LlmExecutor {
        LlmExecutor { client, config }
    }
}

#[async_trait]
impl Executor for LlmExecutor {
    async fn execute(&self, request: &ExecutionRequest, ws: &mut Workspace) -> Result<Execution, ExecutorError> {
        let started = Instant::now();
        prepare(request, ws).await?;
        let prompt = prompt_for(request, ws, self.config.view, &TOOLS).await?;
        let system = format!("{}\n\n{LLM_REPLY_CONTRACT}", prompt.system);
        let mut chat = ChatRequest::new(vec![ChatMessage::system(system), ChatMessage::user(prompt.user.clone())])
            .temperature(self.config.temperature)
            .json_mode(true)
            .role(CallRole::Executor)
            // Each iteration is a fresh draw; a cached reply would repeat the last one.
            .no_cache();
        if let Some(model) = &self.config.model {
            chat = chat.model(model.clone());
        }
        if let Some(max) = self.config.max_tokens {
            chat = chat.max_tokens(max);
        }
        if let Some(secs) = self.config.timeout_secs.filter(|s| s.is_finite() && *s > 0.0) {
            chat = chat.timeout(Duration::from_secs_f64(secs));
        }
        let prompt_chars = chat.messages.iter().map(|m| m.content.len()).sum::<usize>();
        let call = self.client.chat_json::<ModelReply>(chat);
        let reply = match request.cancel.clone() {
            None => call.await?,
            Some(mut cancel) => {
                let cancelled = async move {
                    loop {
                        if *cancel.borrow_and_update() {
                            return;
                        }
                        if cancel.changed().await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    }
                };
                tokio::select! {
                    reply = call => reply?,
                    _ = cancelled => return Err(ExecutorError::Cancelled),
                }
            }
        };
        let tokens = match reply.usage.total_tokens {
            0 if reply.reply.usage.is_none() => ((prompt_chars + reply.reply.content.len()) / 4) as u64,
            n => n,
        };
        let ModelReply { summary, tools_used, edits, subtasks, amendments } = reply.value;

        let mut applied = Vec::new();
        let mut rejected = Vec::new();
        let blocked = blocked_tools_used(&tools_used, &request.inputs.blocked_tools);
        let status = if blocked.is_empty() {
            for (i, edit) in edits.into_iter().enumerate() {
                if i >= self.config.max_edits {
                    rejected.push(RejectedEdit {
                        path: edit.path,
                        action: edit.action,
                        reason: format!("more than {} edits in one reply", self.config.max_edits),
                    });
                    continue;
                }
                let result = match (edit.action, &edit.content) {
                    (EditAction::Write, Some(content)) => ws.write_file(&edit.path, content.as_bytes()),
                    (EditAction::Write, None) => {
                        rejected.push(RejectedEdit {
                            path: edit.path,
                            action: edit.action,
                            reason: "a write needs `content` (the complete new file)".to_string(),
                        });
                        continue;
                    }
                    (EditAction::Delete, _) => ws.delete_file(&edit.path),
                };
                match result {
                    Ok(()) => applied.push(AppliedEdit { path: edit.path, action: edit.action }),
                    Err(e) => {
                        tracing::debug!(path = %edit.path, reason = %e.reason, "edit refused");
                        rejected.push(RejectedEdit {
                            path: edit.path,
                            action: edit.action,
                            reason: e.reason.to_string(),
                        })
                    }
                }
            }
            ExecutionStatus::Completed
        } else {
            let reason = format!(
                "the reply uses blocked tool(s) {}; nothing was written",
                blocked.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
            );
            for edit in edits {
                rejected.push(RejectedEdit { path: edit.path, action: edit.action, reason: reason.clone() });
            }
            ExecutionStatus::Rejected { reason }
        };

        let artifact = ws.commit(&commit_message(request, &summary)).await?;
        Ok(Execution {
            artifact,
            tokens,
            wall_time: started.elapsed(),
            summary,
            applied,
            rejected,
            tools_used,
            status,
            subtasks,
            amendments,
            left_running: Vec::new(),
        })
    }
}
