//! What a chat call returns: [`ChatReply`], the model's text with the cost and
//! latency of getting it.

use std::time::Duration;

use super::usage::TokenUsage;

/// The model's answer to one [`ChatRequest`](super::ChatRequest).
#[derive(Clone, Debug, PartialEq)]
pub struct ChatReply {
    /// The assistant message's text, exactly as the server sent it (an absent
    /// or null content is an empty string).
    pub content: String,
    /// Tokens as the server reported them; `None` when it sent no `usage`
    /// (some local servers do not).
    pub usage: Option<TokenUsage>,
    /// Wall time of the call, retries and backoff included; near zero for a
    /// cache hit.
    pub latency: Duration,
    /// The model the server says answered, when it says.
    pub model: Option<String>,
    /// `stop`, `length`, …; `length` means the reply was cut off by
    /// `max_tokens` or the context window.
    pub finish_reason: Option<String>,
    /// True when the reply came from the response cache (no tokens spent; the
    /// `usage` shown is that of the original call).
    pub cached: bool,
    /// Attempts beyond the first that this call needed.
    pub retries: u32,
}
