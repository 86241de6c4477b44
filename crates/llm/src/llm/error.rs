//! [`LlmError`]: everything that can go wrong in a model call, each message
//! saying what happened and what to do about it.
//!
//! Callers that need to decide (the ASO coordinator falling back to tier 1, a
//! budget deciding whether to try again later) can match the variants; people
//! only ever see the `Display` text.

use std::time::Duration;

use reqwest::StatusCode;

use super::usage::TokenUsage;

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error(
        "no model is configured; set ATTRACTOR_LLM_MODEL (for example `llama3.2` for Ollama, `gpt-4o-mini` for OpenAI) or choose a model in the LLM settings"
    )]
    NoModel,

    #[error(
        "the model server URL {url:?} (from {source_name}) is not usable: {reason}; set ATTRACTOR_LLM_BASE_URL to an http(s) URL such as http://127.0.0.1:11434/v1"
    )]
    BadBaseUrl { url: String, source_name: String, reason: String },

    #[error(
        "the API key cannot be sent in an HTTP header (it contains a line break or another control character); check ATTRACTOR_LLM_API_KEY or OPENAI_API_KEY"
    )]
    BadApiKey,

    #[error("an LLM setting is out of range: {0}")]
    BadSetting(String),

    #[error("cannot set up the HTTP client: {0}")]
    HttpClient(String),

    #[error(
        "cannot reach the model server at {base_url} ({reason}) after {tries}; start Ollama or your model server there, or set ATTRACTOR_LLM_BASE_URL",
        tries = crate::counted(*.attempts, "attempt")
    )]
    Unreachable { base_url: String, reason: String, attempts: u32 },

    #[error(
        "the model server at {base_url} dropped the connection without answering ({reason}) after {tries}; it may have crashed or run out of memory: check its logs",
        tries = crate::counted(*.attempts, "attempt")
    )]
    ConnectionLost { base_url: String, reason: String, attempts: u32 },

    #[error(
        "the model server at {base_url} did not answer within {limit} ({tries}); raise the timeout, use a smaller model or a shorter prompt, or check the server's load",
        limit = fmt_duration(*.timeout),
        tries = crate::counted(*.attempts, "attempt")
    )]
    Timeout { base_url: String, timeout: Duration, attempts: u32 },

    #[error(
        "the model server at {base_url} is rate limiting (429 Too Many Requests{wait}) after {tries}; lower the concurrency, wait a while, or raise the account's rate limit",
        wait = retry_after.map(|d| format!(", asked to wait {}", fmt_duration(d))).unwrap_or_default(),
        tries = crate::counted(*.attempts, "attempt")
    )]
    RateLimited { base_url: String, retry_after: Option<Duration>, attempts: u32 },

    #[error(
        "the model server at {base_url} failed with {status} after {tries}: {message}; it may be overloaded or the model may have crashed: check its logs",
        status = status_text(*.status),
        tries = crate::counted(*.attempts, "attempt")
    )]
    ServerError { base_url: String, status: u16, message: String, attempts: u32 },

    #[error(
        "the model server at {base_url} rejected the request with {status}: {message}; {hint}",
        status = status_text(*.status),
        hint = rejected_hint(*.status)
    )]
    Rejected { base_url: String, status: u16, message: String },

    #[error(
        "the model server at {base_url} answered with something that is not an OpenAI chat completion ({detail}); check that the base URL points at an OpenAI-compatible API (it usually ends in /v1)"
    )]
    BadResponse { base_url: String, detail: String },

    #[error(
        "the model {model} did not reply with valid JSON, even after being told what was wrong: {error}; its last reply began {reply_start:?}; try a stronger model, a lower temperature or a simpler reply format"
    )]
    InvalidJson { model: String, error: String, reply_start: String, calls: u32, tokens: TokenUsage },

    #[error(
        "the model {model}'s reply was cut off at {max_tokens} tokens (finish_reason \"length\"); raise max_tokens for the {role} role or ask for less"
    )]
    CutOff { model: String, role: String, max_tokens: u32, calls: u32, tokens: TokenUsage },

    #[error(
        "the model server at {base_url} sent a reply larger than {limit} bytes; it was refused unread. Raise max_reply_bytes if such replies are expected"
    )]
    ReplyTooLarge { base_url: String, limit: usize },

    #[error(
        "this run has spent its model time ({spent} of {limit}); raise max_model_secs or use a faster model",
        spent = fmt_duration(*.spent),
        limit = fmt_duration(*.limit)
    )]
    ModelTimeSpent { spent: Duration, limit: Duration },

    #[error(
        "this run's model budget is spent: {spent} of max_cost {limit} used, and the next call could cost up to {next}; raise max_cost to go on",
        spent = super::price::format_cost(*.spent),
        limit = super::price::format_cost(*.limit),
        next = super::price::format_cost(*.next)
    )]
    CostSpent { spent: f64, limit: f64, next: f64 },

    #[error(
        "max_cost is set but the model {model} has no price, so what it costs cannot be kept under a budget\n  hint: set its price in the settings (prices: {model}: input_per_million, output_per_million), or remove max_cost"
    )]
    Unpriced { model: String },
}

impl LlmError {
    /// Calls and tokens spent on the way to this error: a reply that came
    /// back unusable was still paid for.
    pub fn spent(&self) -> (u32, TokenUsage) {
        match self {
            LlmError::InvalidJson { calls, tokens, .. } | LlmError::CutOff { calls, tokens, .. } => (*calls, *tokens),
            _ => (0, TokenUsage::default()),
        }
    }

    /// A short reason for an outcome line ("cut off at 2048 tokens",
    /// "missing field `artifact`"), where the full message is too long.
    pub fn short_reason(&self) -> String {
        match self {
            LlmError::InvalidJson { error, .. } => error.clone(),
            LlmError::CutOff { max_tokens, .. } => format!("cut off at {max_tokens} tokens"),
            LlmError::Timeout { timeout, attempts, .. } => {
                format!("no answer within {} ({})", fmt_duration(*timeout), crate::counted(*attempts, "attempt"))
            }
            LlmError::Unreachable { reason, .. } => format!("model server unreachable ({reason})"),
            LlmError::ConnectionLost { reason, .. } => format!("model server dropped the connection ({reason})"),
            LlmError::ReplyTooLarge { limit, .. } => format!("reply over {limit} bytes"),
            LlmError::ModelTimeSpent { limit, .. } => format!("model time of {} spent", fmt_duration(*limit)),
            LlmError::CostSpent { limit, .. } => {
                format!("the run's model budget (max_cost {}) is spent", super::price::format_cost(*limit))
            }
            LlmError::ServerError { status, .. } | LlmError::Rejected { status, .. } => {
                format!("model server answered {}", status_text(*status))
            }
            LlmError::RateLimited { .. } => "rate limited".to_string(),
            other => other.to_string(),
        }
    }

    /// True when the run's cost or model-time budget stopped the call: not a
    /// fault of the model; the run ends cleanly with what it finished.
    pub fn is_budget_spent(&self) -> bool {
        matches!(self, LlmError::CostSpent { .. } | LlmError::ModelTimeSpent { .. })
    }

    /// True for failures that may go away by themselves (the server was down,
    /// slow, overloaded or rate limiting): worth trying again later, unlike a
    /// rejected request or a bad configuration.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            LlmError::Unreachable { .. }
                | LlmError::ConnectionLost { .. }
                | LlmError::Timeout { .. }
                | LlmError::RateLimited { .. }
                | LlmError::ServerError { .. }
        )
    }
}

/// `500 Internal Server Error`, or the bare number for unknown codes.
fn status_text(status: u16) -> String {
    match StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()) {
        Some(reason) => format!("{status} {reason}"),
        None => status.to_string(),
    }
}

fn rejected_hint(status: u16) -> &'static str {
    match status {
        300..=399 => {
            "the server redirects, and the API key is only sent to the configured address: set ATTRACTOR_LLM_BASE_URL to the final address"
        }
        401 | 403 => "check the API key (ATTRACTOR_LLM_API_KEY or OPENAI_API_KEY) and that it may use this model",
        404 => "check the base URL (it usually ends in /v1) and the model name; with Ollama, `ollama pull MODEL` first",
        413 => "the prompt is too large for this server; shorten it",
        _ => "the server's message says what it did not accept (often the context length or an unsupported parameter)",
    }
}

/// `250 ms`, `1.5 s`: short enough for one line of an error message.
pub(crate) fn fmt_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) { format!("{} ms", d.as_millis()) } else { format!("{:.1} s", d.as_secs_f64()) }
}
