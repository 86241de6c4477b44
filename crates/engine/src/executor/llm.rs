//! The built-in executor: one structured chat call per iteration.
//!
//! The model is shown the strategy's prompt and asked (JSON mode) for a
//! reply of a fixed shape — a summary, the tools it relied on, and edits:
//! search/replace blocks (what small models can produce: a few lines copied
//! from the file and what they become, matched tolerantly by [`patch`]),
//! whole-file writes for new and small files, and deletions. The reply is
//! then checked before anything touches the disk:
//!
//! - a reply that names a blocked tool is refused whole, nothing written;
//! - each edit goes through [`Workspace::write_file`] /
//!   [`Workspace::delete_file`], which refuse paths outside the workspace,
//!   into `.git`, through escaping links, or over the size limit; a whole-file
//!   write over an existing file above `max_whole_file_bytes` is refused (a
//!   model that rewrites a long file drops parts of it) — a refused edit is
//!   reported with its reason, which the next prompt shows, and the others
//!   are applied;
//! - the workspace is committed, so the iteration has its own state.
//!
//! [`patch`]: super::patch

use std::time::Instant;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::defaults::reply_contract;
use super::patch;
use super::{
    AppliedEdit, EditAction, Execution, ExecutionRequest, ExecutionStatus, Executor, ExecutorError, RejectedEdit,
    ViewBudget, blocked_tools_used, commit_message, prepare, prompt_for,
};
use crate::llm::{CallRole, ChatMessage, ChatRequest, LlmClient, bound_properties};
use crate::workspace::{Refusal, Workspace};

/// The tools the LLM executor offers the model.
const TOOLS: [&str; 3] = ["replace_in_file", "write_file", "delete_file"];

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
    /// A whole-file write may replace an existing file up to this size
    /// (bytes); larger files take search/replace edits.
    pub max_whole_file_bytes: u64,
    pub view: ViewBudget,
}

impl Default for LlmExecutorConfig {
    fn default() -> Self {
        LlmExecutorConfig {
            temperature: 0.2,
            max_tokens: None,
            model: None,
            timeout_secs: None,
            max_edits: 20,
            max_whole_file_bytes: 16 * 1024,
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

/// One edit. Which fields it needs depends on `action`: `search` and
/// `replace` for a replace, `content` for a write, none for a delete.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ModelEdit {
    /// The file, relative to the workspace root.
    path: String,
    #[serde(default = "write_action")]
    action: EditAction,
    /// write: the complete new content of the file.
    #[serde(default)]
    content: Option<String>,
    /// replace: lines copied from the file, enough to match one place.
    #[serde(default)]
    search: Option<String>,
    /// replace: what those lines become.
    #[serde(default)]
    replace: Option<String>,
}

fn write_action() -> EditAction {
    EditAction::Write
}

/// How many characters of the summary and tool names the schema allows: a
/// server that enforces it makes a rambling model close the string.
const SUMMARY_CHARS: usize = 600;
const LIST_ITEMS: usize = 12;
const PATH_CHARS: usize = 300;
/// A search or replace block: a few lines, not a file.
const BLOCK_CHARS: usize = 8_000;

/// A file of the workspace for the reply contract's example: the first
/// that is neither a test (tests are what the task is measured by) nor
/// hidden (`.gitignore`), else any.
fn example_path(files: &[String]) -> String {
    let is_test = |p: &str| p.contains("test");
    files.iter().find(|f| !is_test(f)).or(files.first()).cloned().unwrap_or_else(|| "src/main.py".to_string())
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

    /// Applies one edit of the reply: `Ok` with how a replace matched, or
    /// the reason it was refused (told to the model next time).
    fn apply(&self, edit: &ModelEdit, ws: &Workspace) -> Result<Option<String>, String> {
        let refused = |e: crate::workspace::FileError| e.reason.to_string();
        match edit.action {
            EditAction::Delete => ws.delete_file(&edit.path).map(|()| None).map_err(refused),
            EditAction::Write => {
                let Some(content) = &edit.content else {
                    return Err("a write needs `content` (the complete new file); to change part of a file use \
                         a replace edit with `search` and `replace`"
                        .to_string());
                };
                if let Ok(existing) = ws.read_file(&edit.path) {
                    let limit = self.config.max_whole_file_bytes;
                    if existing.len() as u64 > limit && existing != *content {
                        return Err(format!(
                            "the file has {} bytes and a write replaces all of it; for files over {limit} bytes use \
                             a replace edit with `search` (lines copied from the file) and `replace`",
                            existing.len()
                        ));
                    }
                }
                ws.write_file(&edit.path, content.as_bytes()).map(|()| None).map_err(refused)
            }
            EditAction::Replace => {
                let (Some(search), Some(replacement)) = (&edit.search, &edit.replace) else {
                    return Err("a replace needs `search` (lines copied from the file) and `replace` (what they \
                         become)"
                        .to_string());
                };
                let original = match ws.read_file(&edit.path) {
                    Ok(text) => text,
                    // A replace with an empty search may create the file.
                    Err(e) if matches!(e.reason, Refusal::NotFound) && search.trim().is_empty() => String::new(),
                    Err(e) if matches!(e.reason, Refusal::NotFound) => {
                        return Err(
                            "no such file; to create it use a write edit with its complete `content`".to_string()
                        );
                    }
                    Err(e) => return Err(refused(e)),
                };
                let done = patch::apply(&original, search, replacement)?;
                ws.write_file(&edit.path, done.text.as_bytes()).map_err(refused)?;
                Ok(Some(done.matched.describe()))
            }
        }
    }
}

#[async_trait]
impl Executor for LlmExecutor {
    async fn execute(&self, request: &ExecutionRequest, ws: &mut Workspace) -> Result<Execution, ExecutorError> {
        let started = Instant::now();
        prepare(request, ws).await?;
        let (prompt, files) = prompt_for(request, ws, self.config.view, &TOOLS).await?;
        let example = example_path(&files);
        let system = format!("{}\n\n{}", prompt.system, reply_contract(&example));
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
            chat = chat.timeout(crate::time::secs(secs));
        }
        let prompt_chars = chat.messages.iter().map(|m| m.content.len()).sum::<usize>();
        let max_edits = self.config.max_edits;
        let whole_file = usize::try_from(self.config.max_whole_file_bytes).unwrap_or(usize::MAX);
        // Every string bounded: a server that enforces the schema makes a
        // small model close a runaway string instead of hitting the budget.
        let call = self.client.chat_json_shaped::<ModelReply>(chat, |schema| {
            bound_properties(
                schema,
                &[
                    ("summary", SUMMARY_CHARS),
                    ("tools_used", LIST_ITEMS),
                    ("subtasks", LIST_ITEMS),
                    ("amendments", LIST_ITEMS),
                    ("edits", max_edits),
                    ("path", PATH_CHARS),
                    ("search", BLOCK_CHARS),
                    ("replace", BLOCK_CHARS),
                    ("content", whole_file),
                ],
            );
        });
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
                let outcome = if i >= self.config.max_edits {
                    Err(format!("more than {} edits in one reply", self.config.max_edits))
                } else {
                    self.apply(&edit, ws)
                };
                match outcome {
                    Ok(note) => applied.push(AppliedEdit { path: edit.path, action: edit.action, note }),
                    Err(reason) => {
                        tracing::debug!(path = %edit.path, %reason, "edit refused");
                        rejected.push(RejectedEdit { path: edit.path, action: edit.action, reason })
                    }
                }
            }
            ExecutionStatus::Completed
        } else {
            let reason = format!(
                "the reply uses {} {}; nothing was written",
                if blocked.len() == 1 { "a blocked tool" } else { "blocked tools" },
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
