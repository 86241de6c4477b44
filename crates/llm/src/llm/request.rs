//! What a caller asks for: the conversation ([`ChatMessage`]s) and the knobs of
//! one call ([`ChatRequest`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Who said a message, in the OpenAI chat format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One message of the conversation sent to the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage { role: Role::System, content: content.into() }
    }

    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage { role: Role::User, content: content.into() }
    }

    pub fn assistant(content: impl Into<String>) -> ChatMessage {
        ChatMessage { role: Role::Assistant, content: content.into() }
    }
}

/// What a call is for. Each role has its own reply budget (`max_tokens`,
/// see [`LlmConfig::max_tokens_for`](super::LlmConfig::max_tokens_for)): a
/// supervisor's directive needs a few hundred tokens, a rewritten prompt or a
/// file edit a few thousand, and a cap that suits one would starve or
/// overpay the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum CallRole {
    /// textgrad and the tree search: a rewritten artifact.
    Proposer,
    /// The built-in agent executor: edits to a workspace.
    Executor,
    /// The intent verifier: verdicts per requirement.
    Verifier,
    /// Splitting an agent task into subtasks.
    Decomposer,
    /// The ASO coordinator's model tier: one directive.
    Supervisor,
    /// The tree search's frontier extrapolation and failure analysis.
    Ideation,
    /// A connection test.
    Probe,
}

impl CallRole {
    pub const ALL: [CallRole; 7] = [
        CallRole::Proposer,
        CallRole::Executor,
        CallRole::Verifier,
        CallRole::Decomposer,
        CallRole::Supervisor,
        CallRole::Ideation,
        CallRole::Probe,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CallRole::Proposer => "proposer",
            CallRole::Executor => "executor",
            CallRole::Verifier => "verifier",
            CallRole::Decomposer => "decomposer",
            CallRole::Supervisor => "supervisor",
            CallRole::Ideation => "ideation",
            CallRole::Probe => "probe",
        }
    }

    /// The reply budget when nothing is configured: enough for the role's
    /// reply from a verbose small model, small enough that a model rambling
    /// to its context limit is cut off early.
    pub fn default_max_tokens(self) -> u32 {
        match self {
            CallRole::Proposer => 2048,
            CallRole::Executor => 3072,
            CallRole::Verifier => 768,
            CallRole::Decomposer => 1024,
            CallRole::Supervisor => 384,
            CallRole::Ideation => 1024,
            CallRole::Probe => 16,
        }
    }
}

impl std::fmt::Display for CallRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a call may use the response cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CachePolicy {
    /// Read and write the cache when the call is deterministic (temperature 0)
    /// and the client's cache is on.
    #[default]
    Auto,
    /// Neither read nor write: always ask the model (e.g. to re-sample).
    Bypass,
}

/// One chat call. Built with [`ChatRequest::new`] and the chained setters:
///
/// ```
/// use attractor::llm::{ChatMessage, ChatRequest};
/// let req = ChatRequest::new(vec![ChatMessage::system("Be brief."), ChatMessage::user("2+2?")])
///     .temperature(0.0)
///     .max_tokens(16);
/// assert_eq!(req.messages.len(), 2);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature; 0 (the default) makes the call deterministic and
    /// therefore cacheable.
    pub temperature: f64,
    /// The reply budget; `None` takes the configured budget of `role`, so
    /// every request the client sends carries one.
    pub max_tokens: Option<u32>,
    /// What the call is for; decides the default `max_tokens`.
    pub role: Option<CallRole>,
    /// The most HTTP calls a structured call may make in all (the first,
    /// the ask after a cut-off, the correction); `None`: up to four.
    pub call_limit: Option<u32>,
    /// Overrides the configured model for this call.
    pub model: Option<String>,
    /// Whether to send `response_format: {"type": "json_object"}`. `None`
    /// means: off for [`chat`](super::LlmClient::chat), the configured
    /// `json_mode` for [`chat_json`](super::LlmClient::chat_json).
    pub json_mode: Option<bool>,
    pub cache: CachePolicy,
    /// Overrides the configured per-attempt timeout for this call.
    pub timeout: Option<Duration>,
}

impl ChatRequest {
    pub fn new(messages: Vec<ChatMessage>) -> ChatRequest {
        ChatRequest {
            messages,
            temperature: 0.0,
            max_tokens: None,
            role: None,
            call_limit: None,
            model: None,
            json_mode: None,
            cache: CachePolicy::Auto,
            timeout: None,
        }
    }

    /// A request made of one user message.
    pub fn user(content: impl Into<String>) -> ChatRequest {
        ChatRequest::new(vec![ChatMessage::user(content)])
    }

    pub fn temperature(mut self, temperature: f64) -> ChatRequest {
        self.temperature = temperature;
        self
    }

    pub fn max_tokens(mut self, max_tokens: u32) -> ChatRequest {
        self.max_tokens = Some(max_tokens);
        self
    }

    pub fn role(mut self, role: CallRole) -> ChatRequest {
        self.role = Some(role);
        self
    }

    /// Caps the calls a structured reply may take (see [`ChatRequest::call_limit`]).
    pub fn call_limit(mut self, calls: u32) -> ChatRequest {
        self.call_limit = Some(calls.max(1));
        self
    }

    pub fn model(mut self, model: impl Into<String>) -> ChatRequest {
        self.model = Some(model.into());
        self
    }

    pub fn json_mode(mut self, on: bool) -> ChatRequest {
        self.json_mode = Some(on);
        self
    }

    /// Skips the response cache for this call.
    pub fn no_cache(mut self) -> ChatRequest {
        self.cache = CachePolicy::Bypass;
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> ChatRequest {
        self.timeout = Some(timeout);
        self
    }

    /// Appends a message (used to continue a conversation, e.g. with a
    /// correction).
    pub fn push(mut self, message: ChatMessage) -> ChatRequest {
        self.messages.push(message);
        self
    }
}
