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
    pub max_tokens: Option<u32>,
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
