//! The LLM client: everything in Attractor that talks to a model — the
//! built-in executor, the ASO coordinator's tier-2 supervisor, the `textgrad`
//! optimizer — goes through [`LlmClient`].
//!
//! It speaks the OpenAI chat-completions protocol over HTTP, which Ollama,
//! vLLM, the llama.cpp server, LM Studio, OpenAI and OpenRouter all understand,
//! and adds what every caller would otherwise re-invent:
//!
//! - configuration from settings or the environment ([`LlmConfig`]): base URL,
//!   model and API key; a local Ollama by default;
//! - a per-attempt timeout and bounded retries with exponential backoff and
//!   jitter on timeouts, connection errors, 429 (honouring `Retry-After`) and
//!   5xx — never on other 4xx;
//! - token usage and latency per call ([`ChatReply`]) and shared running totals
//!   for budgets ([`Usage`], [`UsageSnapshot`]);
//! - typed JSON replies ([`LlmClient::chat_json`]): the reply type's JSON
//!   Schema as `response_format` (then `json_object`, then the schema in the
//!   prompt, for servers that refuse it), a token budget per role on every
//!   call, cut-off replies retried once and never parsed as whole, strict
//!   then lenient parsing, and one correction round;
//! - a response cache for deterministic calls, persistent in the project
//!   database when a [`Store`](crate::store::Store) is given;
//! - an API key that is never logged, never stored, and sent only as the
//!   Authorization header to the configured base URL.
//!
//! [`scripted::ScriptedServer`] is a real loopback HTTP server that replays
//! scripted answers, for tests and benchmarks.
//!
//! ```no_run
//! # async fn demo() -> Result<(), attractor::llm::LlmError> {
//! use attractor::llm::{ChatMessage, ChatRequest, LlmClient, LlmConfig};
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Verdict { pass: bool, reason: String }
//!
//! let client = LlmClient::new(LlmConfig::from_env()?)?;
//! let req = ChatRequest::new(vec![
//!     ChatMessage::system("Answer as JSON: {\"pass\": bool, \"reason\": string}."),
//!     ChatMessage::user("Does 2 + 2 = 4?"),
//! ]);
//! let verdict = client.chat_json::<Verdict>(req).await?;
//! println!("{} ({:?}, {} tokens)", verdict.value.reason, verdict.via, verdict.usage.total_tokens);
//! # Ok(()) }
//! ```

mod cache;
mod client;
mod config;
mod error;
mod ledger;
mod lenient;
mod price;
mod reply;
mod request;
mod retry;
pub mod scripted;
mod structured;
mod usage;
mod wire;

pub use crate::secrets::ApiKey;
pub use client::{LlmClient, ReplyFormat, is_loopback};
pub use config::{
    DEFAULT_BASE_URL, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, ENV_OPENAI_API_KEY, ENV_OPENAI_BASE_URL, InvalidLimit,
    LlmConfig, LlmLimits, LlmSettings, MAX_TOKENS_LIMIT,
};
pub use error::LlmError;
pub use ledger::{CallScope, Ledger};
pub use lenient::{balanced_spans, fenced_blocks, strip_think};
pub use price::{MAX_COST_LIMIT, MAX_PRICE_PER_MILLION, ModelPrice, format_cost, is_local, price_for};
pub use reply::{ChatReply, clip_stored};
pub use request::{CachePolicy, CallRole, ChatMessage, ChatRequest, Role};
pub use structured::{ParsedVia, Structured, bound_properties, correction_message, parse_reply, schema_of};
pub use usage::{ModelSpend, TokenUsage, Usage, UsageSnapshot, model_use_line};
