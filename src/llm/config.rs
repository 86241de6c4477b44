//! Where the model server is and how patiently to talk to it: [`LlmConfig`],
//! resolved from explicit [`LlmSettings`] and the environment.
//!
//! Precedence, highest first: an explicit setting, then `ATTRACTOR_LLM_*`, then
//! the `OPENAI_*` variables many tools already export, then the default (a
//! local Ollama). Attractor's own variables win so that a user can point
//! Attractor somewhere else without disturbing other OpenAI tools in the same
//! shell. Empty variables count as unset.

use std::time::Duration;

use reqwest::Url;
use serde::Deserialize;

use super::error::LlmError;
use super::secret::ApiKey;

/// Ollama's OpenAI-compatible endpoint on this machine: the default because a
/// local model needs no key and sends nothing off the machine.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434/v1";
/// Base URL of the model server (wins over `OPENAI_BASE_URL`).
pub const ENV_BASE_URL: &str = "ATTRACTOR_LLM_BASE_URL";
/// Model name as the server knows it, e.g. `llama3.2` or `gpt-4o-mini`.
pub const ENV_MODEL: &str = "ATTRACTOR_LLM_MODEL";
/// API key (wins over `OPENAI_API_KEY`).
pub const ENV_API_KEY: &str = "ATTRACTOR_LLM_API_KEY";
pub const ENV_OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";
pub const ENV_OPENAI_API_KEY: &str = "OPENAI_API_KEY";

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
    pub json_mode: Option<bool>,
    pub cache: Option<bool>,
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
}

impl LlmConfig {
    /// A configuration with the given server and model and default limits.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> LlmConfig {
        LlmConfig {
            base_url: normalize_base_url(&base_url.into()),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(120),
            max_retries: 3,
            retry_base_delay: Duration::from_millis(500),
            retry_max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            json_mode: true,
            cache: true,
        }
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
        let api_key = settings
            .api_key
            .clone()
            .or_else(|| env(ENV_API_KEY).map(ApiKey::new))
            .or_else(|| env(ENV_OPENAI_API_KEY).map(ApiKey::new));

        let mut config = LlmConfig::new(base_url, model);
        config.api_key = api_key;
        if let Some(secs) = settings.timeout_secs.filter(|s| s.is_finite() && *s > 0.0) {
            config.timeout = Duration::from_secs_f64(secs);
        }
        if let Some(n) = settings.max_retries {
            config.max_retries = n;
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
