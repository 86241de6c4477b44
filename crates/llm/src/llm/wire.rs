//! The OpenAI chat-completions wire format, reduced to the fields every
//! compatible server (Ollama, vLLM, llama.cpp, LM Studio, OpenAI, OpenRouter)
//! understands.
//!
//! The request carries only `model`, `messages`, `temperature` and, when set,
//! `max_tokens` and `response_format`: extra fields are where these servers
//! differ, and some reject what they do not know. The response side is
//! lenient: everything but `choices[0].message` may be missing.

use serde::{Deserialize, Serialize};

use super::request::ChatMessage;
use super::usage::TokenUsage;

#[derive(Debug, Serialize)]
pub(crate) struct WireRequest<'a> {
    pub model: &'a str,
    pub messages: &'a [ChatMessage],
    pub temperature: f64,
    pub max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat<'a>>,
}

/// How the server is asked to constrain a reply: `{"type": "json_object"}`
/// (any valid JSON) or `{"type": "json_schema", "json_schema": {"name": …,
/// "schema": …}}` (JSON of that shape; llama.cpp, vLLM and Ollama compile
/// the schema into a grammar, OpenAI checks it).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ResponseFormat<'a> {
    JsonObject,
    JsonSchema { json_schema: NamedSchema<'a> },
}

#[derive(Debug, Serialize)]
pub(crate) struct NamedSchema<'a> {
    pub name: &'a str,
    pub schema: &'a serde_json::Value,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireResponse {
    #[serde(default)]
    pub model: Option<String>,
    pub choices: Vec<WireChoice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireChoice {
    pub message: WireMessage,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireMessage {
    #[serde(default)]
    pub content: Option<String>,
}

/// Some servers send `usage` with fields missing or null; what is missing
/// counts as 0 and a missing total is the sum of the parts.
#[derive(Debug, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub total_tokens: Option<u64>,
}

impl From<WireUsage> for TokenUsage {
    fn from(u: WireUsage) -> TokenUsage {
        let prompt_tokens = u.prompt_tokens.unwrap_or(0);
        let completion_tokens = u.completion_tokens.unwrap_or(0);
        TokenUsage {
            prompt_tokens,
            completion_tokens,
            total_tokens: u.total_tokens.unwrap_or(prompt_tokens + completion_tokens),
        }
    }
}

/// The human-readable part of an error body: OpenAI-style
/// `{"error": {"message": …}}`, Ollama's `{"error": "…"}`, or the raw text,
/// cut to a length that fits an error message.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        let error = v.get("error")?;
        error.get("message").and_then(|m| m.as_str()).or_else(|| error.as_str()).map(str::to_string)
    });
    let text = message.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() { "(empty body)".to_string() } else { truncate(&text, 400) }
}

/// The first `max` characters of `text`, with an ellipsis when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}
