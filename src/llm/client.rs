//! [`LlmClient`]: one chat call over HTTP to an OpenAI-compatible server, with
//! retries, caching, usage accounting and typed (JSON) replies.
//!
//! Everything in Attractor that talks to a model goes through this type, so
//! the rules live in one place: what is retried, what is cached, what is
//! counted against a budget, and that the API key goes only into the
//! Authorization header of requests to the configured base URL.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::de::DeserializeOwned;

use super::cache::{CacheKey, CachedReply, ResponseCache, cache_key};
use super::config::{LlmConfig, validate_base_url};
use super::error::LlmError;
use super::reply::ChatReply;
use super::request::{CachePolicy, ChatMessage, ChatRequest};
use super::retry::{AttemptError, RetryPolicy, parse_retry_after};
use super::structured::{ParsedVia, Structured, correction_message, parse_reply};
use super::usage::{TokenUsage, Usage};
use super::wire::{ResponseFormat, WireRequest, WireResponse, error_message, truncate};
use crate::store::Store;

/// A client for one model server. Cheap to clone; clones share the cache, the
/// usage counters and what was learned about the server (JSON mode support).
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
    /// Cleared the first time the server rejects `response_format`, so later
    /// calls do not pay for the same rejection.
    json_mode_supported: Arc<AtomicBool>,
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
            endpoint,
            auth,
            cache: Arc::new(ResponseCache::memory()),
            usage: Arc::new(Usage::new()),
            json_mode_supported: Arc::new(AtomicBool::new(true)),
        })
    }

    /// Keeps the response cache in the project database (table `llm_cache`),
    /// so it survives the process.
    pub fn with_store(mut self, store: Store) -> LlmClient {
        self.cache = Arc::new(ResponseCache::Store(store));
        self
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

    /// False once the server has rejected `response_format`.
    pub fn json_mode_supported(&self) -> bool {
        self.json_mode_supported.load(Ordering::Relaxed)
    }

    /// One chat call: the model's text reply, from the cache when the call is
    /// deterministic and was answered before.
    pub async fn chat(&self, req: ChatRequest) -> Result<ChatReply, LlmError> {
        let json_mode = req.json_mode.unwrap_or(false);
        let (reply, pending) = self.call(&req, json_mode).await?;
        self.remember(pending).await;
        Ok(reply)
    }

    /// A chat call whose reply must be JSON of type `T`.
    ///
    /// Asks for JSON mode (when configured and the server accepts it), parses
    /// strictly, then leniently (reasoning blocks, code fences and prose
    /// removed). If that fails, makes one more call that shows the model its
    /// reply and exactly what was wrong with it, and asks for valid JSON only.
    /// A second failure is [`LlmError::InvalidJson`].
    ///
    /// Replies go into the cache only when they led to a value, so an unusable
    /// reply is never replayed.
    pub async fn chat_json<T: DeserializeOwned>(&self, req: ChatRequest) -> Result<Structured<T>, LlmError> {
        let json_mode = req.json_mode.unwrap_or(self.config.json_mode);
        let (first, first_pending) = self.call(&req, json_mode).await?;
        let mut usage = first.usage.unwrap_or_default();
        let problem = match parse_reply::<T>(&first.content) {
            Ok((value, via)) => {
                self.remember(first_pending).await;
                return Ok(Structured { value, via, reply: first, usage, calls: 1 });
            }
            Err(problem) => problem,
        };
        tracing::debug!(%problem, "the model's reply is not the JSON asked for; asking it to correct it");
        let correction = req
            .clone()
            .push(ChatMessage::assistant(first.content.clone()))
            .push(ChatMessage::user(correction_message(&problem)));
        let (second, second_pending) = self.call(&correction, json_mode).await?;
        usage += second.usage.unwrap_or_default();
        match parse_reply::<T>(&second.content) {
            Ok((value, _)) => {
                self.remember(first_pending).await;
                self.remember(second_pending).await;
                Ok(Structured { value, via: ParsedVia::Corrected, reply: second, usage, calls: 2 })
            }
            Err(problem) => {
                self.usage.record_invalid_reply();
                Err(LlmError::InvalidJson {
                    model: req.model.clone().unwrap_or_else(|| self.config.model.clone()),
                    error: problem,
                    reply_start: truncate(&second.content, 160),
                })
            }
        }
    }

    /// Answers from the cache or the server, counting usage; the reply is
    /// returned with what to cache if the caller accepts it.
    async fn call(&self, req: &ChatRequest, json_mode: bool) -> Result<(ChatReply, Option<Pending>), LlmError> {
        let model = req.model.as_deref().unwrap_or(&self.config.model);
        let started = Instant::now();
        let key = self.cacheable(req).then(|| {
            cache_key(&self.config.base_url, model, &req.messages, req.temperature, req.max_tokens, json_mode)
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

        let (result, retries) = self.send(req, model, json_mode).await;
        let latency = started.elapsed();
        let completion = match result {
            Ok(completion) => completion,
            Err(error) => {
                self.usage.record_failed_call(latency, retries);
                // The caller decides what a failure means (the ASO coordinator falls
                // back to tier 1), so it is only traced here, not reported.
                tracing::debug!(model, retries, latency_ms = latency.as_millis() as u64, %error, "LLM call failed");
                return Err(error);
            }
        };
        self.usage.record_call(completion.usage, latency, retries);
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

    /// Sends with retries; falls back once to plain mode when the server
    /// rejects `response_format`. Returns the outcome and the retries made.
    async fn send(&self, req: &ChatRequest, model: &str, json_mode: bool) -> (Result<Completion, LlmError>, u32) {
        let timeout = req.timeout.unwrap_or(self.config.timeout);
        let mut use_json = json_mode && self.json_mode_supported();
        let mut retries = 0;
        loop {
            let body = WireRequest {
                model,
                messages: &req.messages,
                temperature: req.temperature,
                max_tokens: req.max_tokens,
                response_format: use_json.then(ResponseFormat::json_object),
            };
            let (result, attempt_retries) = self.policy.run(|| self.send_once(&body, timeout)).await;
            retries += attempt_retries;
            match result {
                Ok(completion) => return (Ok(completion), retries),
                Err(AttemptError::Status { status: 400 | 422, ref body, .. })
                    if use_json && body.to_ascii_lowercase().contains("response_format") =>
                {
                    tracing::warn!(
                        base_url = %self.config.base_url,
                        "the model server does not accept response_format; asking without JSON mode from now on"
                    );
                    self.json_mode_supported.store(false, Ordering::Relaxed);
                    use_json = false;
                    retries += 1;
                }
                Err(error) => return (Err(self.to_error(error, attempt_retries + 1, timeout)), retries),
            }
        }
    }

    /// One HTTP request and its answer.
    async fn send_once(&self, body: &WireRequest<'_>, timeout: Duration) -> Result<Completion, AttemptError> {
        let mut request = self.http.post(self.endpoint.clone()).timeout(timeout).json(body);
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let response = request.send().await.map_err(AttemptError::from_reqwest)?;
        let status = response.status();
        let retry_after = parse_retry_after(response.headers());
        let text = response.text().await.map_err(AttemptError::from_reqwest)?;
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
            .field("cache", &cache)
            .finish_non_exhaustive()
    }
}

fn is_loopback(url: &Url) -> bool {
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
