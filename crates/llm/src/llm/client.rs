//! [`LlmClient`]: one chat call over HTTP to an OpenAI-compatible server, with
//! retries, caching, usage accounting and typed (JSON) replies.
//!
//! Everything in Attractor that talks to a model goes through this type, so
//! the rules live in one place: what is retried, what is cached, what is
//! counted against a budget, and that the API key goes only into the
//! Authorization header of requests to the configured base URL.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::cache::{CacheKey, CachedReply, ResponseCache, cache_key};
use super::config::{LlmConfig, MAX_TOKENS_LIMIT, validate_base_url};
use super::error::LlmError;
use super::ledger::{CallScope, Ledger};
use super::price::ModelPrice;
use super::reply::{ChatReply, clip_stored};
use super::request::{CachePolicy, CallRole, ChatMessage, ChatRequest, Role};
use super::retry::{AttemptError, RetryPolicy, parse_retry_after};
use super::structured::{ParsedVia, Structured, correction_message, parse_reply, schema_of};
use super::usage::{TokenUsage, Usage};
use super::wire::{NamedSchema, ResponseFormat, WireRequest, WireResponse, error_message, truncate};
use crate::store::{ModelCall, Store};

/// How a server is asked for a structured reply, most constrained first. A
/// server that refuses one level is asked at the next one from then on: the
/// client finds out once per endpoint, and every client in the process that
/// talks to that endpoint remembers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReplyFormat {
    /// `response_format: json_schema` with the reply type's schema.
    Schema = 0,
    /// `response_format: json_object`, the schema described in the prompt.
    Object = 1,
    /// No `response_format`; the schema described in the prompt.
    Prompt = 2,
}

impl ReplyFormat {
    fn weaker(self) -> ReplyFormat {
        match self {
            ReplyFormat::Schema => ReplyFormat::Object,
            _ => ReplyFormat::Prompt,
        }
    }
}

/// What each endpoint was found to accept, for this process: the one place
/// this is kept, so every client (and clone) of an endpoint agrees.
static LEARNED_FORMATS: LazyLock<Mutex<HashMap<String, ReplyFormat>>> = LazyLock::new(Default::default);

/// How often a call that is still waiting says so.
const PROGRESS_EVERY: Duration = Duration::from_secs(30);

/// What a call wants back.
#[derive(Clone, Copy)]
enum Want<'a> {
    /// Text: no `response_format` (or `json_object` when the request asks).
    Text { json: bool },
    /// JSON of this schema.
    Schema { name: &'a str, schema: &'a serde_json::Value },
}

/// A client for one model server. Cheap to clone; clones share the cache and
/// the usage counters (what was learned about the server's reply formats is
/// shared by every client of the endpoint).
#[derive(Clone)]
pub struct LlmClient {
    config: Arc<LlmConfig>,
    http: reqwest::Client,
    endpoint: Url,
    /// `Bearer <key>`, marked sensitive so HTTP-level debug logs hide it.
    auth: Option<HeaderValue>,
    policy: RetryPolicy,
    cache: Arc<ResponseCache>,
    usage: Arc<Usage>,
    /// Where each call is recorded, when a run gave one.
    ledger: Option<Arc<Ledger>>,
}

/// A successful answer to one HTTP request, before it becomes a [`ChatReply`].
struct Completion {
    content: String,
    usage: Option<TokenUsage>,
    model: Option<String>,
    finish_reason: Option<String>,
}

/// A reply that may go into the cache once the caller has accepted it.
struct Pending {
    key: CacheKey,
    model: String,
    reply: CachedReply,
}

impl LlmClient {
    /// A client with an in-memory cache and its own usage counters.
    pub fn new(config: LlmConfig) -> Result<LlmClient, LlmError> {
        let endpoint_base = validate_base_url(&config.base_url).map_err(|reason| LlmError::BadBaseUrl {
            url: config.base_url.clone(),
            source_name: "the configuration".to_string(),
            reason,
        })?;
        if config.model.trim().is_empty() {
            return Err(LlmError::NoModel);
        }
        let endpoint = Url::parse(&config.endpoint()).map_err(|e| LlmError::BadBaseUrl {
            url: config.base_url.clone(),
            source_name: "the configuration".to_string(),
            reason: e.to_string(),
        })?;
        let auth = match &config.api_key {
            Some(key) => {
                let mut value =
                    HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| LlmError::BadApiKey)?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        // No redirects: following one would send the request (and the key)
        // to an address nobody configured. A redirect becomes a clear error.
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.timeout.min(Duration::from_secs(15)))
            .user_agent(concat!("attractor/", env!("CARGO_PKG_VERSION")));
        // A model server on this machine is never behind the user's HTTP proxy.
        if is_loopback(&endpoint_base) {
            builder = builder.no_proxy();
        }
        let http = builder.build().map_err(|e| LlmError::HttpClient(e.to_string()))?;
        Ok(LlmClient {
            policy: RetryPolicy::from_config(&config),
            config: Arc::new(config),
            http,
            auth,
            cache: Arc::new(ResponseCache::memory()),
            usage: Arc::new(Usage::new()),
            ledger: None,
            endpoint,
        })
    }

    /// Keeps the response cache in the project database (table `llm_cache`),
    /// so it survives the process.
    pub fn with_store(mut self, store: Store) -> LlmClient {
        self.cache = Arc::new(ResponseCache::Store(store));
        self
    }

    /// Records every call of this client (and of its clones) in the
    /// store's ledger of model calls, under `scope`.
    pub fn with_ledger(mut self, store: Store, scope: CallScope) -> LlmClient {
        self.ledger = Some(Arc::new(Ledger::new(store, scope)));
        self
    }

    /// Moves the ledger (shared with this client's clones) to another scope;
    /// nothing without a ledger.
    pub fn set_scope(&self, scope: CallScope) {
        if let Some(l) = &self.ledger {
            l.set_scope(scope);
        }
    }

    /// Counts this client's calls in `usage`, e.g. one budget shared by
    /// several clients.
    pub fn with_usage(mut self, usage: Arc<Usage>) -> LlmClient {
        self.usage = usage;
        self
    }

    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The running totals; `usage().snapshot()` reads them.
    pub fn usage(&self) -> &Arc<Usage> {
        &self.usage
    }

    /// False once the server has refused every `response_format`.
    pub fn json_mode_supported(&self) -> bool {
        self.reply_format() != ReplyFormat::Prompt
    }

    /// The strongest reply format this server is known to accept.
    pub fn reply_format(&self) -> ReplyFormat {
        lock_formats().get(self.endpoint.as_str()).copied().unwrap_or(ReplyFormat::Schema)
    }

    /// `text` cut to the configured size for the database, with a marker
    /// saying how much was cut.
    pub fn clip(&self, text: &str) -> String {
        clip_stored(text, self.config.max_stored_chars)
    }

    /// One chat call: the model's text reply, from the cache when the call is
    /// deterministic and was answered before. A reply cut off by its token
    /// budget comes back as it is, with `finish_reason: "length"`.
    pub async fn chat(&self, req: ChatRequest) -> Result<ChatReply, LlmError> {
        let json = req.json_mode.unwrap_or(false);
        let (reply, pending) = self.call(&req, Want::Text { json }).await?;
        self.remember(pending).await;
        Ok(reply)
    }

    /// A chat call whose reply must be JSON of type `T`.
    ///
    /// Sends `T`'s JSON Schema as `response_format: json_schema` (falling
    /// back to `json_object`, then to the schema in the prompt, for servers
    /// that refuse it), with the role's `max_tokens`. A reply cut off by that
    /// budget is asked again once with twice the budget, and is never parsed
    /// as if it were whole: a second cut-off is [`LlmError::CutOff`]. The
    /// reply is parsed strictly, then leniently (reasoning blocks, code
    /// fences and prose removed): a missing or wrong-typed required field is
    /// a failure that names the field. After a failure, one more call shows
    /// the model its reply and exactly what was wrong with it; a second
    /// failure is [`LlmError::InvalidJson`]. Both errors carry the calls and
    /// tokens spent, since unusable replies are paid for too.
    ///
    /// Replies go into the cache only when they led to a value, so an unusable
    /// reply is never replayed.
    pub async fn chat_json<T: DeserializeOwned + JsonSchema>(
        &self,
        req: ChatRequest,
    ) -> Result<Structured<T>, LlmError> {
        self.chat_json_shaped(req, |_| {}).await
    }

    /// [`chat_json`](Self::chat_json) with the schema adjusted for this call
    /// first, e.g. a `maxLength` on a string that depends on the input: a
    /// server that enforces the schema then makes a rambling model close the
    /// string instead of running into the token budget.
    pub async fn chat_json_shaped<T: DeserializeOwned + JsonSchema>(
        &self,
        req: ChatRequest,
        shape: impl FnOnce(&mut serde_json::Value),
    ) -> Result<Structured<T>, LlmError> {
        let (name, mut schema) = schema_of::<T>();
        shape(&mut schema);
        let want = if req.json_mode.unwrap_or(self.config.json_mode) {
            Want::Schema { name: &name, schema: &schema }
        } else {
            Want::Text { json: false }
        };
        let mut spent = Spent::default();
        let (first, first_pending) = self.complete(&req, want, &mut spent).await?;
        let problem = match parse_reply::<T>(&first.content) {
            Ok((value, via)) => {
                self.remember(first_pending).await;
                return Ok(Structured { value, via, reply: first, usage: spent.tokens, calls: spent.calls });
            }
            Err(problem) => problem,
        };
        if spent.calls >= req.call_limit.unwrap_or(u32::MAX) {
            return Err(self.unusable(&req, problem, &first, &spent));
        }
        tracing::debug!(%problem, "the model's reply is not the JSON asked for; asking it to correct it");
        let correction = req
            .clone()
            .push(ChatMessage::assistant(first.content.clone()))
            .push(ChatMessage::user(correction_message(&problem)));
        let (second, second_pending) = self.complete(&correction, want, &mut spent).await?;
        match parse_reply::<T>(&second.content) {
            Ok((value, _)) => {
                self.remember(first_pending).await;
                self.remember(second_pending).await;
                Ok(Structured {
                    value,
                    via: ParsedVia::Corrected,
                    reply: second,
                    usage: spent.tokens,
                    calls: spent.calls,
                })
            }
            Err(problem) => Err(self.unusable(&req, problem, &second, &spent)),
        }
    }

    /// The error for a reply that stayed unusable, counted as such.
    fn unusable(&self, req: &ChatRequest, problem: String, last: &ChatReply, spent: &Spent) -> LlmError {
        self.usage.record_invalid_reply(role_of(req));
        LlmError::InvalidJson {
            model: self.model_of(req).to_string(),
            error: problem,
            reply_start: truncate(&last.content, 160),
            calls: spent.calls,
            tokens: spent.tokens,
        }
    }

    /// The error for a reply cut off at `max_tokens`, counted as unusable.
    fn cut_off(&self, req: &ChatRequest, max_tokens: u32, spent: &Spent) -> LlmError {
        self.usage.record_invalid_reply(role_of(req));
        LlmError::CutOff {
            model: self.model_of(req).to_string(),
            role: req.role.map_or_else(|| "default".to_string(), |r| r.to_string()),
            max_tokens,
            calls: spent.calls,
            tokens: spent.tokens,
        }
    }

    /// One call whose reply must be whole: a reply cut off by `max_tokens`
    /// is asked again once with twice the budget, then refused.
    async fn complete(
        &self,
        req: &ChatRequest,
        want: Want<'_>,
        spent: &mut Spent,
    ) -> Result<(ChatReply, Option<Pending>), LlmError> {
        let (reply, pending) = self.call(req, want).await?;
        spent.add(&reply);
        if !is_cut_off(&reply) {
            return Ok((reply, pending));
        }
        let budget = self.max_tokens_of(req);
        if spent.calls >= req.call_limit.unwrap_or(u32::MAX) {
            return Err(self.cut_off(req, budget, spent));
        }
        let larger = budget.saturating_mul(2).min(MAX_TOKENS_LIMIT);
        tracing::debug!(
            budget,
            larger,
            "the reply was cut off by its token budget; asking once more with a larger one"
        );
        let again = req.clone().max_tokens(larger).no_cache();
        let (reply, pending) = self.call(&again, want).await?;
        spent.add(&reply);
        if !is_cut_off(&reply) {
            return Ok((reply, pending));
        }
        Err(self.cut_off(req, larger, spent))
    }

    fn model_of<'r>(&'r self, req: &'r ChatRequest) -> &'r str {
        req.model.as_deref().unwrap_or(&self.config.model)
    }

    fn max_tokens_of(&self, req: &ChatRequest) -> u32 {
        req.max_tokens.unwrap_or_else(|| self.config.max_tokens_for(req.role)).clamp(1, MAX_TOKENS_LIMIT)
    }

    /// Answers from the cache or the server, counting usage; the reply is
    /// returned with what to cache if the caller accepts it.
    async fn call(&self, req: &ChatRequest, want: Want<'_>) -> Result<(ChatReply, Option<Pending>), LlmError> {
        let model = self.model_of(req);
        let max_tokens = self.max_tokens_of(req);
        let started = Instant::now();
        let key = self.cacheable(req).then(|| {
            let format = match want {
                Want::Text { json } => serde_json::json!({ "json": json }),
                Want::Schema { name, schema } => serde_json::json!({ "name": name, "schema": schema }),
            };
            cache_key(&self.config.base_url, model, &req.messages, req.temperature, max_tokens, &format)
        });
        if let Some(key) = &key
            && let Some(hit) = self.cache.get(key).await
        {
            self.usage.record_cache_hit();
            tracing::debug!(model, "LLM reply from the cache");
            let reply = ChatReply {
                content: hit.content,
                usage: hit.usage,
                latency: started.elapsed(),
                model: hit.model,
                finish_reason: hit.finish_reason,
                cached: true,
                retries: 0,
            };
            return Ok((reply, None));
        }

        let timeout = req.timeout.unwrap_or(self.config.timeout);
        let left = self.model_time_left().inspect_err(|e| self.usage.record_budget_refusal(&e.short_reason()))?;
        let price = self.config.price(model);
        self.check_cost(req, price, model, max_tokens)?;
        let sending = self.send(req, model, max_tokens, want, left.map_or(timeout, |l| timeout.min(l)));
        // The run's model time bounds the whole call, retries and backoff included.
        let (result, retries) = match (left, self.config.max_model_time) {
            (Some(left), Some(limit)) => tokio::time::timeout(left, sending).await.unwrap_or_else(|_| {
                let error = LlmError::ModelTimeSpent { spent: self.usage.root().snapshot().latency + left, limit };
                self.usage.record_budget_refusal(&error.short_reason());
                (Err(error), 0)
            }),
            _ => sending.await,
        };
        let latency = started.elapsed();
        let completion = match result {
            // A server that echoes the request would hand the key back in
            // the reply; it must not reach a log, the cache or a proposal.
            Ok(completion) => Completion { content: self.redact(completion.content), ..completion },
            Err(error) => {
                self.usage.record_failed_call(role_of(req), latency, retries);
                // A failed call is free at a known price, unknown without one.
                self.log_call(req, model, None, price.map(|_| 0.0), latency, error.short_reason()).await;
                // The caller decides what a failure means (the ASO coordinator falls
                // back to tier 1), so it is only traced here, not reported.
                tracing::debug!(model, retries, latency_ms = latency.as_millis() as u64, %error, "LLM call failed");
                return Err(error);
            }
        };
        let cost = price.map(|p| p.cost(completion.usage.unwrap_or_default()));
        self.usage.record_call(role_of(req), completion.usage, latency, retries, cost);
        let outcome = if completion.finish_reason.as_deref() == Some("length") { "cut_off" } else { "ok" };
        self.log_call(req, model, completion.usage, cost.or(price.map(|_| 0.0)), latency, outcome.to_string()).await;
        tracing::debug!(
            model,
            retries,
            latency_ms = latency.as_millis() as u64,
            prompt_tokens = completion.usage.map(|u| u.prompt_tokens),
            completion_tokens = completion.usage.map(|u| u.completion_tokens),
            "LLM call"
        );
        let pending = key.map(|key| Pending {
            key,
            model: model.to_string(),
            reply: CachedReply {
                content: completion.content.clone(),
                usage: completion.usage,
                model: completion.model.clone(),
                finish_reason: completion.finish_reason.clone(),
            },
        });
        let reply = ChatReply {
            content: completion.content,
            usage: completion.usage,
            latency,
            model: completion.model,
            finish_reason: completion.finish_reason,
            cached: false,
            retries,
        };
        Ok((reply, pending))
    }

    /// What is left of the run's model time (`None`: no limit), or an error
    /// when nothing is.
    fn model_time_left(&self) -> Result<Option<Duration>, LlmError> {
        let Some(limit) = self.config.max_model_time else { return Ok(None) };
        let spent = self.usage.root().snapshot().latency;
        match limit.checked_sub(spent) {
            Some(left) if !left.is_zero() => Ok(Some(left)),
            _ => Err(LlmError::ModelTimeSpent { spent, limit }),
        }
    }

    /// Refuses a call that could take the client over its cost budget: its
    /// worst case is the prompt (about a token per 3 characters, generous
    /// for English and code) plus the whole reply budget.
    fn check_cost(
        &self,
        req: &ChatRequest,
        price: Option<ModelPrice>,
        model: &str,
        max_tokens: u32,
    ) -> Result<(), LlmError> {
        let Some(limit) = self.config.max_cost else { return Ok(()) };
        let Some(price) = price else { return Err(LlmError::Unpriced { model: model.to_string() }) };
        let prompt_chars: usize = req.messages.iter().map(|m| m.content.len()).sum();
        let worst = TokenUsage {
            prompt_tokens: (prompt_chars / 3) as u64,
            completion_tokens: u64::from(max_tokens),
            total_tokens: 0,
        };
        let next = price.cost(worst);
        let spent = self.usage.root().snapshot().cost;
        if spent + next > limit {
            let error = LlmError::CostSpent { spent, limit, next };
            self.usage.record_budget_refusal(&format!(
                "the model budget is spent ({} of max_cost {})",
                super::price::format_cost(spent),
                super::price::format_cost(limit)
            ));
            return Err(error);
        }
        Ok(())
    }

    /// Writes one call to the ledger, when there is one.
    async fn log_call(
        &self,
        req: &ChatRequest,
        model: &str,
        tokens: Option<TokenUsage>,
        cost: Option<f64>,
        latency: Duration,
        outcome: String,
    ) {
        let Some(ledger) = &self.ledger else { return };
        let tokens = tokens.unwrap_or_default();
        ledger
            .record(ModelCall {
                role: role_of(req).as_str().to_string(),
                model: model.to_string(),
                prompt_tokens: tokens.prompt_tokens,
                completion_tokens: tokens.completion_tokens,
                cost,
                seconds: latency.as_secs_f64(),
                outcome,
                ..ModelCall::default()
            })
            .await;
    }

    /// Why the run must stop now that its budget (cost or model time)
    /// stopped a call (`None` while it has not).
    pub fn budget_spent(&self) -> Option<String> {
        self.usage.root().budget_note().map(|note| format!("{note}; the work finished before is kept"))
    }

    fn cacheable(&self, req: &ChatRequest) -> bool {
        // Only temperature 0 is deterministic enough to replay; a sampled
        // reply is one draw among many and a cached draw would hide variance.
        self.config.cache && req.cache == CachePolicy::Auto && req.temperature == 0.0
    }

    async fn remember(&self, pending: Option<Pending>) {
        if let Some(p) = pending {
            self.cache.put(&p.key, &self.config.base_url, &p.model, &p.reply).await;
        }
    }

    /// Sends with retries; when the server refuses the reply format, lowers
    /// it (and remembers that) and asks again. Returns the outcome and the
    /// retries made.
    async fn send(
        &self,
        req: &ChatRequest,
        model: &str,
        max_tokens: u32,
        want: Want<'_>,
        timeout: Duration,
    ) -> (Result<Completion, LlmError>, u32) {
        let mut retries = 0;
        loop {
            let level = match want {
                Want::Text { json: false } => ReplyFormat::Prompt,
                Want::Text { json: true } => self.reply_format().max(ReplyFormat::Object),
                Want::Schema { .. } => self.reply_format(),
            };
            let response_format = match (level, want) {
                (ReplyFormat::Schema, Want::Schema { name, schema }) => {
                    Some(ResponseFormat::JsonSchema { json_schema: NamedSchema { name, schema } })
                }
                (ReplyFormat::Schema | ReplyFormat::Object, _) => Some(ResponseFormat::JsonObject),
                (ReplyFormat::Prompt, _) => None,
            };
            // Without the schema in `response_format`, the prompt carries it.
            let messages = match want {
                Want::Schema { schema, .. } if level != ReplyFormat::Schema => {
                    Cow::Owned(with_schema_in_prompt(&req.messages, schema))
                }
                _ => Cow::Borrowed(req.messages.as_slice()),
            };
            let body =
                WireRequest { model, messages: &messages, temperature: req.temperature, max_tokens, response_format };
            let (result, attempt_retries) = self.policy.run(|| self.send_once(&body, timeout)).await;
            retries += attempt_retries;
            match result {
                Ok(completion) => return (Ok(completion), retries),
                Err(AttemptError::Status { status: 400 | 422, ref body, .. })
                    if level != ReplyFormat::Prompt && refuses_format(body) =>
                {
                    let next = level.weaker();
                    tracing::warn!(
                        "the model server at {} refused {} replies; asking for {} from now on",
                        self.config.base_url,
                        format_name(level),
                        format_name(next)
                    );
                    self.lower_format(next);
                    retries += 1;
                }
                Err(error) => return (Err(self.to_error(error, attempt_retries + 1, timeout)), retries),
            }
        }
    }

    fn lower_format(&self, to: ReplyFormat) {
        let mut learned = lock_formats();
        let entry = learned.entry(self.endpoint.as_str().to_string()).or_insert(to);
        *entry = (*entry).max(to);
    }

    /// One HTTP request and its answer.
    async fn send_once(&self, body: &WireRequest<'_>, timeout: Duration) -> Result<Completion, AttemptError> {
        let started = Instant::now();
        let attempt = self.read_answer(body, timeout);
        let mut attempt = std::pin::pin!(attempt);
        // A slow local model can take minutes: say what is happening instead
        // of sitting silent, and stop at the limit with that reason.
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        loop {
            tokio::select! {
                answer = &mut attempt => return answer,
                _ = ticks.tick() => tracing::info!(
                    "waiting on the model at {}: {} s of {} s",
                    self.config.base_url,
                    started.elapsed().as_secs(),
                    timeout.as_secs()
                ),
            }
        }
    }

    /// The HTTP exchange of one attempt, the body read up to the size limit.
    async fn read_answer(&self, body: &WireRequest<'_>, timeout: Duration) -> Result<Completion, AttemptError> {
        let mut request = self.http.post(self.endpoint.clone()).timeout(timeout).json(body);
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let mut response = request.send().await.map_err(AttemptError::from_reqwest)?;
        let status = response.status();
        let retry_after = parse_retry_after(response.headers());
        let limit = self.config.max_reply_bytes;
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(AttemptError::TooLarge);
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(AttemptError::from_reqwest)? {
            if bytes.len() + chunk.len() > limit {
                return Err(AttemptError::TooLarge);
            }
            bytes.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if !status.is_success() {
            return Err(AttemptError::Status { status: status.as_u16(), body: text, retry_after });
        }
        let wire: WireResponse = serde_json::from_str(&text)
            .map_err(|e| AttemptError::BadResponse(format!("{e}; the body began {:?}", truncate(&text, 200))))?;
        let choice = wire
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| AttemptError::BadResponse("it has no choices".to_string()))?;
        Ok(Completion {
            content: choice.message.content.unwrap_or_default(),
            usage: wire.usage.map(TokenUsage::from),
            model: wire.model,
            finish_reason: choice.finish_reason,
        })
    }

    fn to_error(&self, error: AttemptError, attempts: u32, timeout: Duration) -> LlmError {
        let base_url = self.config.base_url.clone();
        match error {
            AttemptError::Timeout => LlmError::Timeout { base_url, timeout, attempts },
            AttemptError::Connect(reason) => LlmError::Unreachable { base_url, reason, attempts },
            AttemptError::Broken(reason) => LlmError::ConnectionLost { base_url, reason, attempts },
            AttemptError::Status { status: 429, retry_after, .. } => {
                LlmError::RateLimited { base_url, retry_after, attempts }
            }
            AttemptError::Status { status, body, .. } if status >= 500 => {
                LlmError::ServerError { base_url, status, message: self.redact(error_message(&body)), attempts }
            }
            AttemptError::Status { status, body, .. } => {
                LlmError::Rejected { base_url, status, message: self.redact(error_message(&body)) }
            }
            AttemptError::BadResponse(detail) => LlmError::BadResponse { base_url, detail: self.redact(detail) },
            AttemptError::TooLarge => LlmError::ReplyTooLarge { base_url, limit: self.config.max_reply_bytes },
        }
    }

    /// Some servers quote the key back in an error; it must not reach a log.
    fn redact(&self, text: String) -> String {
        match &self.config.api_key {
            Some(key) if !key.expose().is_empty() && text.contains(key.expose()) => {
                text.replace(key.expose(), "<redacted>")
            }
            _ => text,
        }
    }
}

impl fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cache = match (self.config.cache, self.cache.as_ref()) {
            (false, _) => "off",
            (true, ResponseCache::Memory(_)) => "memory",
            (true, ResponseCache::Store(_)) => "database",
        };
        f.debug_struct("LlmClient")
            .field("base_url", &self.config.base_url)
            .field("model", &self.config.model)
            .field("api_key", &self.config.api_key)
            .field("json_mode", &(self.config.json_mode && self.json_mode_supported()))
            .field("reply_format", &self.reply_format())
            .field("cache", &cache)
            .finish_non_exhaustive()
    }
}

/// Calls and tokens spent on one structured value, usable or not.
#[derive(Default)]
struct Spent {
    calls: u32,
    tokens: TokenUsage,
}

impl Spent {
    fn add(&mut self, reply: &ChatReply) {
        self.calls += 1;
        self.tokens += reply.usage.unwrap_or_default();
    }
}

/// The role a call is counted under (a call that names none counts as the
/// default budget's role).
fn role_of(req: &ChatRequest) -> CallRole {
    req.role.unwrap_or(CallRole::Proposer)
}

fn is_cut_off(reply: &ChatReply) -> bool {
    reply.finish_reason.as_deref() == Some("length")
}

/// Whether a 400/422 body says the reply format (rather than something
/// else in the request) is what the server does not accept.
fn refuses_format(body: &str) -> bool {
    let body = body.to_ascii_lowercase();
    ["response_format", "json_schema", "schema", "grammar"].iter().any(|w| body.contains(w))
}

fn format_name(f: ReplyFormat) -> &'static str {
    match f {
        ReplyFormat::Schema => "JSON-schema",
        ReplyFormat::Object => "JSON-object",
        ReplyFormat::Prompt => "unconstrained",
    }
}

/// The messages with the reply's schema appended to the system message (or
/// as a system message of its own when there is none).
fn with_schema_in_prompt(messages: &[ChatMessage], schema: &serde_json::Value) -> Vec<ChatMessage> {
    let note = format!("\n\nReply with one JSON object that follows this JSON Schema, and nothing else:\n{schema}");
    let mut out = messages.to_vec();
    match out.iter_mut().find(|m| m.role == Role::System) {
        Some(system) => system.content.push_str(&note),
        None => out.insert(0, ChatMessage::system(note.trim_start())),
    }
    out
}

fn lock_formats() -> std::sync::MutexGuard<'static, HashMap<String, ReplyFormat>> {
    LEARNED_FORMATS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A URL whose host is this machine (`localhost`, 127.0.0.0/8, `::1`).
pub fn is_loopback(url: &Url) -> bool {
    match url.host_str() {
        Some(host) if host.eq_ignore_ascii_case("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}
