//! Settings, the model check, the overview's counts and the API's error body.

use super::*;

/// Settings as the settings screen shows them.
#[derive(Debug, Clone, Serialize, TS)]
pub struct SettingsView {
    /// The database this service has open.
    pub db_path: String,
    /// A database path saved for the next start, when it differs.
    pub db_path_next_start: Option<String>,
    /// The LLM endpoint and model saved in the settings file (empty: the
    /// environment decides).
    pub llm_base_url: Option<String>,
    pub llm_model: Option<String>,
    /// What a launch would use now: the settings over the environment.
    pub effective_base_url: String,
    pub effective_model: Option<String>,
    /// Limits of every launch's model calls; empty fields take the defaults.
    pub llm_limits: crate::llm::LlmLimits,
    /// Prices per model, per million tokens.
    pub model_prices: std::collections::BTreeMap<String, crate::llm::ModelPrice>,
    /// Folders outside a suite's own that suites may use (full paths).
    pub allowed_outside: Vec<String>,
    /// Whether a launch would send an API key, and where it comes from: an
    /// environment variable's name or `keychain`. The key itself is never
    /// read back, stored or sent anywhere but the model server.
    pub api_key_present: bool,
    pub api_key_source: Option<String>,
    /// Whether the operating system's keychain can hold the key here.
    pub keychain_available: bool,
    /// Why it cannot, with what to do (or that the environment wins over it).
    pub keychain_note: Option<String>,
    pub settings_file: String,
}

/// A key to keep in the keychain. Its `Debug` never shows the key.
#[derive(Clone, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyRequest {
    pub key: String,
}

impl std::fmt::Debug for ApiKeyRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKeyRequest { key: <redacted> }")
    }
}

/// A change to the settings; a missing field keeps its value, an empty
/// string clears it.
#[derive(Debug, Clone, Default, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct SettingsUpdate {
    #[serde(default)]
    #[ts(optional)]
    pub db_path: Option<String>,
    #[serde(default)]
    #[ts(optional)]
    pub llm_base_url: Option<String>,
    #[serde(default)]
    #[ts(optional)]
    pub llm_model: Option<String>,
    /// Replaces the model-call limits (checked against their bounds).
    #[serde(default)]
    #[ts(optional)]
    pub llm_limits: Option<crate::llm::LlmLimits>,
    /// Replaces the model prices (each checked against its bounds).
    #[serde(default)]
    #[ts(optional)]
    pub model_prices: Option<std::collections::BTreeMap<String, crate::llm::ModelPrice>>,
    /// Replaces the folders suites may use outside their own (each an existing folder's full path).
    #[serde(default)]
    #[ts(optional)]
    pub allowed_outside: Option<Vec<String>>,
}

/// The answer to "test connection" on the settings screen: one tiny chat
/// call through the same client launches use.
#[derive(Debug, Clone, Serialize, TS)]
pub struct LlmCheck {
    pub ok: bool,
    pub base_url: String,
    pub model: Option<String>,
    pub latency_ms: Option<u64>,
    /// The start of the model's reply.
    pub reply: Option<String>,
    /// Why it failed, with what to do about it.
    pub error: Option<String>,
}

/// Counts for the navigation bar's badges.
#[derive(Debug, Clone, Serialize, TS)]
pub struct Overview {
    pub suites: usize,
    pub running_launches: usize,
    pub pending_interventions: i64,
    pub db_path: String,
    pub version: String,
    /// The bundled example suites' folder on this machine (a checkout's
    /// `examples/`, or an installed package's copy), for the first-run hints.
    pub examples_dir: Option<String>,
}

/// The body of every error answer of the HTTP API.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ApiError {
    pub error: String,
    /// Set when a suite file did not validate: every issue, located.
    pub validation: Option<Validation>,
}
