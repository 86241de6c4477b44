//! Where the model server is and how patiently to talk to it: [`LlmConfig`],
//! resolved from explicit [`LlmSettings`] and the environment.
//!
//! Precedence, highest first: an explicit setting, then `ATTRACTOR_LLM_*`, then
//! the `OPENAI_*` variables many tools already export, then the default (a
//! local Ollama). Attractor's own variables win so that a user can point
//! Attractor somewhere else without disturbing other OpenAI tools in the same
//! shell. Empty variables count as unset.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Url;
use serde::{Deserialize, Serialize};

use super::error::LlmError;
use super::price::{ModelPrice, price_for, validate_max_cost};
use super::request::CallRole;
use crate::secrets::ApiKey;

/// Bounds on numbers a person or a file sets, so a typo cannot ask for a
/// year-long timeout or a reply budget no server has.
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;
pub const MAX_ATTEMPTS: u32 = 10;
pub const MAX_TOKENS_LIMIT: u32 = 1_000_000;
pub const MAX_REPLY_BYTES_LIMIT: usize = 64 << 20;

/// Ollama's OpenAI-compatible endpoint on this machine: the default because a
/// local model needs no key and sends nothing off the machine.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434/v1";
/// Base URL of the model server (wins over `OPENAI_BASE_URL`).
pub const ENV_BASE_URL: &str = "ATTRACTOR_LLM_BASE_URL";
/// Model name as the server knows it, e.g. `llama3.2` or `gpt-4o-mini`.
pub const ENV_MODEL: &str = "ATTRACTOR_LLM_MODEL";
pub use crate::secrets::{ENV_API_KEY, ENV_OPENAI_API_KEY};
pub const ENV_OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";

/// What a person or a settings file chose explicitly; every field is optional
/// and falls back to the environment, then to the defaults.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSettings {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<ApiKey>,
    /// Seconds one HTTP attempt may take.
    pub timeout_secs: Option<f64>,
    pub max_retries: Option<u32>,
    /// HTTP attempts per call, the first included (wins over `max_retries`).
    pub attempts: Option<u32>,
    pub json_mode: Option<bool>,
    pub cache: Option<bool>,
    /// Reply budgets per role, over [`CallRole::default_max_tokens`].
    pub max_tokens: Option<BTreeMap<CallRole, u32>>,
    /// The largest reply body accepted, in bytes.
    pub max_reply_bytes: Option<usize>,
    /// The longest model reply or rejection text kept in the database, in
    /// characters; longer ones are cut with a visible marker.
    pub max_stored_chars: Option<usize>,
    /// Seconds of model time one run may spend in total.
    pub max_model_secs: Option<f64>,
    /// What one run may spend on model calls, at `prices`.
    pub max_cost: Option<f64>,
    /// Prices per model name (merged over lower layers, model by model).
    pub prices: Option<BTreeMap<String, ModelPrice>>,
}

/// A limit out of its bounds: which one (`timeout_secs`, `max_tokens.executor`)
/// and a sentence saying what it must be.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct InvalidLimit {
    pub field: String,
    pub message: String,
}

impl InvalidLimit {
    /// `requirement` follows the field's name: "must be from 1 to 10, not 0".
    pub(crate) fn new(field: impl Into<String>, requirement: String) -> InvalidLimit {
        let field = field.into();
        InvalidLimit { message: format!("{field} {requirement}"), field }
    }
}

/// How patient and how generous model calls are — everything of
/// [`LlmSettings`] but the endpoint, the model and the key, which is what a
/// suite file (`llm:`), the settings screen and the API may set. A suite
/// from anyone must not be able to send the prompts, or the key, elsewhere.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(default, deny_unknown_fields)]
pub struct LlmLimits {
    /// Seconds one HTTP attempt may take.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<f64>,
    /// HTTP attempts per call, the first included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// Seconds of model time one run may spend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_model_secs: Option<f64>,
    /// Reply budgets per role over the defaults.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub max_tokens: BTreeMap<CallRole, u32>,
    /// The largest reply accepted, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(type = "number | null")]
    pub max_reply_bytes: Option<usize>,
    /// The longest model text kept in the database, in characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(type = "number | null")]
    pub max_stored_chars: Option<usize>,
    /// What one run may spend on model calls (at the prices in the settings);
    /// the run stops cleanly, with what it finished, when the next call
    /// could go over it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
}

impl LlmLimits {
    /// These limits as settings (nothing else set), e.g. to overlay.
    pub fn to_settings(&self) -> LlmSettings {
        LlmSettings {
            timeout_secs: self.timeout_secs,
            attempts: self.attempts,
            max_model_secs: self.max_model_secs,
            max_tokens: (!self.max_tokens.is_empty()).then(|| self.max_tokens.clone()),
            max_reply_bytes: self.max_reply_bytes,
            max_stored_chars: self.max_stored_chars,
            max_cost: self.max_cost,
            ..LlmSettings::default()
        }
    }

    /// Checks every limit against its bounds; the error names the field.
    pub fn validate(&self) -> Result<(), InvalidLimit> {
        self.to_settings().validate()
    }

    /// Every limit out of its bounds.
    pub fn invalid_limits(&self) -> Vec<InvalidLimit> {
        self.to_settings().invalid_limits()
    }
}

impl LlmSettings {
    /// Overlays `other`'s explicit choices on these (a suite's `llm:` over
    /// the app's settings, a CLI flag over both).
    pub fn overlay(mut self, other: &LlmSettings) -> LlmSettings {
        macro_rules! take {
            ($($f:ident),*) => { $( if other.$f.is_some() { self.$f = other.$f.clone(); } )* };
        }
        take!(
            base_url,
            model,
            api_key,
            timeout_secs,
            max_retries,
            attempts,
            json_mode,
            cache,
            max_reply_bytes,
            max_stored_chars,
            max_model_secs,
            max_cost
        );
        if let Some(prices) = &other.prices {
            let mut merged = self.prices.take().unwrap_or_default();
            merged.extend(prices.iter().map(|(m, p)| (m.clone(), *p)));
            self.prices = Some(merged);
        }
        if let Some(budgets) = &other.max_tokens {
            let mut merged = self.max_tokens.take().unwrap_or_default();
            merged.extend(budgets.iter().map(|(r, n)| (*r, *n)));
            self.max_tokens = Some(merged);
        }
        self
    }

    /// Checks the numbers against their bounds; the error names the first
    /// field out of them.
    pub fn validate(&self) -> Result<(), InvalidLimit> {
        self.invalid_limits().into_iter().next().map_or(Ok(()), Err)
    }

    /// Every number out of its bounds, each naming its field (a form shows
    /// them all at once instead of one per save).
    pub fn invalid_limits(&self) -> Vec<InvalidLimit> {
        let mut wrong = Vec::new();
        if let Some(t) = self.timeout_secs
            && !(t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_SECS)
        {
            wrong.push(InvalidLimit::new(
                "timeout_secs",
                format!(
                    "must be a number of seconds above 0 and at most {MAX_TIMEOUT_SECS}, not {}",
                    crate::domain::shown_number(t)
                ),
            ));
        }
        if let Some(t) = self.max_model_secs
            && !(t.is_finite() && t > 0.0 && t <= 100.0 * MAX_TIMEOUT_SECS)
        {
            wrong.push(InvalidLimit::new(
                "max_model_secs",
                format!("must be a number of seconds above 0, not {}", crate::domain::shown_number(t)),
            ));
        }
        if let Some(c) = self.max_cost {
            wrong.extend(validate_max_cost(c).err());
        }
        for (model, price) in self.prices.iter().flatten() {
            wrong.extend(price.invalid(model));
        }
        if let Some(n) = self.attempts
            && !(1..=MAX_ATTEMPTS).contains(&n)
        {
            wrong.push(InvalidLimit::new("attempts", format!("must be from 1 to {MAX_ATTEMPTS}, not {n}")));
        }
        if let Some(n) = self.max_retries
            && n >= MAX_ATTEMPTS
        {
            wrong.push(InvalidLimit::new("max_retries", format!("must be below {MAX_ATTEMPTS}, not {n}")));
        }
        for (role, n) in self.max_tokens.iter().flatten() {
            if !(1..=MAX_TOKENS_LIMIT).contains(n) {
                wrong.push(InvalidLimit::new(
                    format!("max_tokens.{role}"),
                    format!("must be from 1 to {MAX_TOKENS_LIMIT}, not {n}"),
                ));
            }
        }
        if let Some(n) = self.max_reply_bytes
            && !(1024..=MAX_REPLY_BYTES_LIMIT).contains(&n)
        {
            wrong.push(InvalidLimit::new(
                "max_reply_bytes",
                format!("must be from 1024 to {MAX_REPLY_BYTES_LIMIT}, not {n}"),
            ));
        }
        if let Some(n) = self.max_stored_chars
            && !(200..=MAX_REPLY_BYTES_LIMIT).contains(&n)
        {
            wrong.push(InvalidLimit::new(
                "max_stored_chars",
                format!("must be from 200 to {MAX_REPLY_BYTES_LIMIT}, not {n}"),
            ));
        }
        wrong
    }
}

/// The resolved configuration of an [`LlmClient`](super::LlmClient).
///
/// `Debug` is safe to log: the key prints as `ApiKey(<redacted>)`.
#[derive(Clone, Debug)]
pub struct LlmConfig {
    /// Base URL of an OpenAI-compatible API, without a trailing slash; the
    /// client posts to `{base_url}/chat/completions`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<ApiKey>,
    /// Limit for one HTTP attempt (a retry gets the full limit again). Local
    /// models on a CPU can take minutes for a long reply, hence the generous
    /// default of 120 s.
    pub timeout: Duration,
    /// Retries after the first attempt, for timeouts, connection errors, 429
    /// and 5xx. Other 4xx answers are never retried: asking again cannot help.
    pub max_retries: u32,
    /// First backoff delay; each retry doubles it (with jitter) up to
    /// `retry_max_delay`.
    pub retry_base_delay: Duration,
    pub retry_max_delay: Duration,
    /// The longest `Retry-After` the client is willing to wait; a server asking
    /// for more gets a clear error instead of a hung run.
    pub max_retry_after: Duration,
    /// Ask for `response_format: {"type": "json_object"}` in structured calls.
    /// Servers that reject it are remembered and asked without it.
    pub json_mode: bool,
    /// Cache deterministic (temperature 0) replies.
    pub cache: bool,
    /// Reply budgets per role that differ from the defaults.
    pub max_tokens: BTreeMap<CallRole, u32>,
    /// A reply body larger than this is refused unread (a broken or hostile
    /// server cannot fill the memory or the database).
    pub max_reply_bytes: usize,
    /// Model texts kept in the database (rejections, reasoning) are cut to
    /// this many characters, with a marker saying how much was cut.
    pub max_stored_chars: usize,
    /// Total model time (the sum of the calls' wall times) a client may
    /// spend; the call that would start past it fails with that reason.
    pub max_model_time: Option<Duration>,
    /// Prices per model name; see [`price_for`] for unpriced models.
    pub prices: BTreeMap<String, ModelPrice>,
    /// What the client may spend in total, at `prices`; a call whose worst
    /// case (its prompt and its whole reply budget) would go over it is not
    /// sent.
    pub max_cost: Option<f64>,
}

impl LlmConfig {
    /// A configuration with the given server and model and default limits.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> LlmConfig {
        LlmConfig {
            base_url: normalize_base_url(&base_url.into()),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(120),
            max_retries: 2,
            retry_base_delay: Duration::from_millis(500),
            retry_max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            json_mode: true,
            cache: true,
            max_tokens: BTreeMap::new(),
            max_reply_bytes: 256 << 10,
            max_stored_chars: 20_000,
            max_model_time: None,
            prices: BTreeMap::new(),
            max_cost: None,
        }
    }

    /// The price of `model` on this client's server (`None`: unknown).
    pub fn price(&self, model: &str) -> Option<ModelPrice> {
        price_for(&self.prices, &self.base_url, model)
    }

    /// The reply budget of a call made for `role` (the general default when
    /// the caller named none).
    pub fn max_tokens_for(&self, role: Option<CallRole>) -> u32 {
        let role = role.unwrap_or(CallRole::Proposer);
        self.max_tokens.get(&role).copied().unwrap_or_else(|| role.default_max_tokens())
    }

    /// Resolves the configuration from the process environment alone.
    pub fn from_env() -> Result<LlmConfig, LlmError> {
        LlmConfig::resolve(&LlmSettings::default(), |name| std::env::var(name).ok())
    }

    /// Resolves explicit settings over an environment given as a lookup
    /// function (`|name| std::env::var(name).ok()` for the real one), so that
    /// callers and tests can resolve without touching the process environment.
    pub fn resolve(settings: &LlmSettings, env: impl Fn(&str) -> Option<String>) -> Result<LlmConfig, LlmError> {
        let env = |name: &str| env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let (base_url, source) = match &settings.base_url {
            Some(url) => (url.clone(), "the base_url setting"),
            None => match env(ENV_BASE_URL) {
                Some(url) => (url, ENV_BASE_URL),
                None => match env(ENV_OPENAI_BASE_URL) {
                    Some(url) => (url, ENV_OPENAI_BASE_URL),
                    None => (DEFAULT_BASE_URL.to_string(), "the default"),
                },
            },
        };
        validate_base_url(&base_url).map_err(|reason| LlmError::BadBaseUrl {
            url: base_url.clone(),
            source_name: source.to_string(),
            reason,
        })?;
        let model = settings
            .model
            .clone()
            .filter(|m| !m.trim().is_empty())
            .or_else(|| env(ENV_MODEL))
            .ok_or(LlmError::NoModel)?;
        // A key from the environment goes only to the server the
        // environment names beside it (when it names one): a key exported
        // for one provider never reaches the server chosen on the Settings
        // screen. It is left out, not refused — the chosen server may need
        // no key (a local one); one that does answers 401, and this warning
        // says why.
        let from_env = |key_var: &str, url_var: &str| -> Option<ApiKey> {
            let key = env(key_var)?;
            match env(url_var) {
                Some(env_url) if !same_server(&env_url, &base_url) => {
                    tracing::warn!(
                        "{key_var} is set for the server in {url_var}, not for {base_url} ({source}) where model calls \
                         go: the key is not sent there (unset {url_var} to send it, or choose that server)"
                    );
                    None
                }
                _ => Some(ApiKey::new(key)),
            }
        };
        let api_key = settings
            .api_key
            .clone()
            .or_else(|| from_env(ENV_API_KEY, ENV_BASE_URL))
            .or_else(|| from_env(ENV_OPENAI_API_KEY, ENV_OPENAI_BASE_URL));

        settings.validate().map_err(|e| LlmError::BadSetting(e.message))?;
        let mut config = LlmConfig::new(base_url, model);
        config.api_key = api_key;
        if let Some(secs) = settings.timeout_secs {
            config.timeout = Duration::try_from_secs_f64(secs).unwrap_or(config.timeout);
        }
        if let Some(n) = settings.max_retries {
            config.max_retries = n;
        }
        if let Some(n) = settings.attempts {
            config.max_retries = n.saturating_sub(1);
        }
        if let Some(budgets) = &settings.max_tokens {
            config.max_tokens.extend(budgets.iter().map(|(r, n)| (*r, *n)));
        }
        if let Some(n) = settings.max_reply_bytes {
            config.max_reply_bytes = n;
        }
        if let Some(n) = settings.max_stored_chars {
            config.max_stored_chars = n;
        }
        if let Some(secs) = settings.max_model_secs {
            config.max_model_time = Duration::try_from_secs_f64(secs).ok();
        }
        if let Some(prices) = &settings.prices {
            config.prices = prices.clone();
        }
        config.max_cost = settings.max_cost;
        // A budget that cannot be kept is refused now, not at the first call.
        if config.max_cost.is_some() && config.price(&config.model).is_none() {
            return Err(LlmError::Unpriced { model: config.model.clone() });
        }
        if let Some(on) = settings.json_mode {
            config.json_mode = on;
        }
        if let Some(on) = settings.cache {
            config.cache = on;
        }
        Ok(config)
    }

    pub fn with_api_key(mut self, key: impl Into<ApiKey>) -> LlmConfig {
        self.api_key = Some(key.into());
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> LlmConfig {
        self.timeout = timeout;
        self
    }

    /// Sets the retry budget: `max_retries` after the first attempt, backing
    /// off from `base_delay` (tests use a few milliseconds).
    pub fn with_retries(mut self, max_retries: u32, base_delay: Duration) -> LlmConfig {
        self.max_retries = max_retries;
        self.retry_base_delay = base_delay;
        self
    }

    pub fn with_json_mode(mut self, on: bool) -> LlmConfig {
        self.json_mode = on;
        self
    }

    pub fn with_cache(mut self, on: bool) -> LlmConfig {
        self.cache = on;
        self
    }

    /// The URL every chat call is posted to.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }
}

/// Drops trailing slashes so `…/v1` and `…/v1/` give one endpoint and one
/// cache key.
pub(crate) fn normalize_base_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_string()
}

/// Checks that `url` is an absolute http(s) URL with a host.
pub(crate) fn validate_base_url(url: &str) -> Result<Url, String> {
    let parsed = Url::parse(&normalize_base_url(url)).map_err(|e| e.to_string())?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("the scheme must be http or https, not {}", parsed.scheme()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("it has no host".to_string());
    }
    Ok(parsed)
}

/// Whether two base URLs name the same server and path (`…/v1` and `…/v1/`
/// are one).
fn same_server(a: &str, b: &str) -> bool {
    normalize_base_url(a).eq_ignore_ascii_case(&normalize_base_url(b))
}
