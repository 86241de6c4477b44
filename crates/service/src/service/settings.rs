//! The settings file: what a person chose on the settings screen.
//!
//! Settings live in a small JSON file, not in the database: one of them *is*
//! the database path, and the LLM endpoint and model must be readable before
//! any database is open. The API key is never written anywhere by Attractor:
//! it comes from the environment or the operating system's keychain, and
//! the settings screen only learns whether one is present.
//!
//! Below the file, the facade's settings methods: the settings in force and
//! where each comes from, saving a change, the API key in the keychain, and
//! the model client the settings make (with a test of its connection).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

// The facade's settings methods (the `impl Service` below) share the rest of
// the facade's names.
use super::*;

/// Environment variable that overrides where the settings file lives.
pub const SETTINGS_ENV: &str = "ATTRACTOR_SETTINGS";

/// The default settings file: `<platform config dir>/attractor/settings.json`.
pub fn default_path() -> PathBuf {
    dirs::config_dir()
        .or_else(|| dirs::home_dir().map(|h| h.join(".config")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("attractor")
        .join("settings.json")
}

/// The file's content. Unknown keys are kept out (`deny_unknown_fields`) so a
/// typo in a hand-edited file is reported instead of silently ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Database to open on the next start (the command line's `--db` and
    /// `ATTRACTOR_DB` still win).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_base_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_model: Option<String>,
    /// Limits of every launch's model calls (a suite's `llm:` goes over them).
    #[serde(skip_serializing_if = "is_default_limits")]
    pub llm_limits: crate::llm::LlmLimits,
    /// Prices per model name, per million tokens (a model on this machine
    /// is free unless listed): what costs and `max_cost` are computed with.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub model_prices: BTreeMap<String, crate::llm::ModelPrice>,
    /// The suite file each suite was last launched from, by suite name, so
    /// "Launch again" needs no typing.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub suite_paths: BTreeMap<String, String>,
    /// Folders outside a suite's own folder that suites may use (a
    /// workspace, an artifact file, a problem file): the user's explicit
    /// permission, which no suite file can give itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_outside: Vec<String>,
    /// The labels this machine's workers offer (`python`, `gpu`) when
    /// neither `--offers` nor ATTRACTOR_WORKER_OFFERS says (a task's
    /// `needs:` names them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worker_offers: Vec<String>,
}

impl Settings {
    /// What suites loaded under these settings may reach.
    pub fn access(&self) -> crate::suite::Access {
        crate::suite::Access { outside: self.allowed_outside.iter().map(PathBuf::from).collect() }
    }
}

/// What the settings file is, for the hints of its issues.
const FILE_HINT: &str = "the settings file is the JSON the Settings screen writes (db_path, llm_base_url, \
                         llm_model, llm_limits, model_prices, suite_paths, allowed_outside, worker_offers)";

fn is_default_limits(l: &crate::llm::LlmLimits) -> bool {
    *l == crate::llm::LlmLimits::default()
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read the settings file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error(
        "{0}\n  (the settings file is not usable: fix it by hand or on the Settings screen, or delete it to start over)"
    )]
    Invalid(crate::suite::SuiteError),
    #[error("cannot write the settings file {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

impl Settings {
    /// The settings file in use: `ATTRACTOR_SETTINGS`, else the default.
    pub fn path_from_env() -> PathBuf {
        std::env::var_os(SETTINGS_ENV).filter(|v| !v.is_empty()).map_or_else(default_path, PathBuf::from)
    }

    /// The layer of model-call settings this file adds under a suite's and
    /// the command line's: its limits and its prices.
    pub fn llm_layer(&self) -> crate::llm::LlmSettings {
        crate::llm::LlmSettings {
            prices: (!self.model_prices.is_empty()).then(|| self.model_prices.clone()),
            ..self.llm_limits.to_settings()
        }
    }

    /// What this machine gives every run's model calls, in the app and on
    /// the command line alike: the endpoint and model chosen here (the
    /// environment fills in what is not chosen), the key given, and the
    /// limits and prices. One function, so a suite the app runs on one
    /// model does not run on another from a terminal.
    pub fn machine_model(&self, api_key: Option<crate::llm::ApiKey>) -> crate::llm::LlmSettings {
        crate::llm::LlmSettings {
            base_url: self.llm_base_url.clone(),
            model: self.llm_model.clone(),
            api_key,
            ..Default::default()
        }
        .overlay(&self.llm_layer())
    }

    /// Whether these settings or the environment name a model (the
    /// keychain is only asked for a key when one does).
    pub fn names_model(&self, env: &dyn Fn(&str) -> Option<String>) -> bool {
        self.llm_model.as_deref().is_some_and(|m| !m.trim().is_empty())
            || env(crate::llm::ENV_MODEL).is_some_and(|m| !m.trim().is_empty())
    }

    /// Reads the file; a missing file is the empty settings. Every number
    /// is checked against the bounds the Settings screen applies, so a
    /// hand-edited `1e300` is refused at its place before any launch.
    pub fn load(path: &Path) -> std::result::Result<Settings, SettingsError> {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(source) => return Err(SettingsError::Read { path: path.to_path_buf(), source }),
            Ok(_) => {}
        }
        let text = crate::suite::read_text(path, "settings file", FILE_HINT).map_err(SettingsError::Invalid)?;
        let settings: Settings = crate::suite::parse_strict(&text, path, FILE_HINT)
            .map_err(|issue| SettingsError::Invalid(crate::suite::SuiteError::one(issue)))?;
        let hint = "see \"Model calls: limits\" in docs/models.md for each limit and its bounds";
        let wrong = settings.out_of_bounds().into_iter().map(|w| (w.field, w.message, hint.to_string()));
        crate::suite::issues_at(&text, path, wrong).map_err(SettingsError::Invalid)?;
        Ok(settings)
    }

    /// The model-call limits and prices outside their bounds, each named
    /// by its path in the file.
    pub fn out_of_bounds(&self) -> Vec<crate::llm::InvalidLimit> {
        let mut wrong = Vec::new();
        if let Err(mut invalid) = self.llm_limits.validate() {
            invalid.field = format!("llm_limits.{}", invalid.field);
            wrong.push(invalid);
        }
        for (model, price) in &self.model_prices {
            if let Err(mut invalid) = price.validate(model) {
                invalid.field = format!("model_prices.{}", invalid.field.trim_start_matches("prices."));
                wrong.push(invalid);
            }
        }
        wrong
    }

    /// Writes the file atomically (a temporary file renamed over it), so a
    /// crash mid-write never leaves half a file that the next start rejects.
    pub fn save(&self, path: &Path) -> std::result::Result<(), SettingsError> {
        let write = |source| SettingsError::Write { path: path.to_path_buf(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(write)?;
        }
        let tmp = path.with_extension("json.tmp");
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        std::fs::write(&tmp, text).map_err(write)?;
        std::fs::rename(&tmp, path).map_err(write)
    }
}

/// The keychain as last read. The key stays in memory only, like one from the
/// environment.
#[derive(Debug, Clone)]
pub(super) enum KeychainState {
    /// Not read yet.
    Unread,
    /// Turned off with `ATTRACTOR_KEYCHAIN=off`.
    Off,
    Unavailable(String),
    Empty,
    Holds(crate::llm::ApiKey),
}

impl Service {
    /// Reads the keychain again (on the blocking pool: D-Bus round trips, or
    /// a prompt to unlock the keyring).
    pub async fn refresh_keychain(&self) {
        let env = Arc::clone(&self.config.env);
        let state = tokio::task::spawn_blocking(move || {
            if !crate::secrets::keychain_enabled(&|n| env(n)) {
                return KeychainState::Off;
            }
            match crate::secrets::Keychain::api_key().read() {
                Ok(Some(key)) => KeychainState::Holds(crate::llm::ApiKey::new(key)),
                Ok(None) => KeychainState::Empty,
                Err(e) => KeychainState::Unavailable(e.to_string()),
            }
        })
        .await
        .unwrap_or_else(|e| KeychainState::Unavailable(e.to_string()));
        *lock(&self.keychain) = state;
    }

    /// Keeps `key` in the operating system's keychain for the next launches.
    pub async fn set_api_key(&self, req: &ApiKeyRequest) -> Result<SettingsView> {
        let key = req.key.trim().to_string();
        if key.is_empty() {
            return Err(ServiceError::BadInput("the API key is empty: paste the whole key".into()));
        }
        self.keychain_call(move |k| k.store(&key)).await?;
        self.refresh_keychain().await;
        Ok(self.settings())
    }

    /// Removes the key from the keychain (nothing stored is not an error).
    pub async fn delete_api_key(&self) -> Result<SettingsView> {
        self.keychain_call(|k| k.delete().map(|_| ())).await?;
        self.refresh_keychain().await;
        Ok(self.settings())
    }

    pub(super) async fn keychain_call(
        &self,
        f: impl FnOnce(&crate::secrets::Keychain) -> std::result::Result<(), crate::secrets::KeychainError> + Send + 'static,
    ) -> Result<()> {
        let env = Arc::clone(&self.config.env);
        tokio::task::spawn_blocking(move || {
            if !crate::secrets::keychain_enabled(&|n| env(n)) {
                return Err(crate::secrets::KeychainError::Off);
            }
            f(&crate::secrets::Keychain::api_key())
        })
        .await
        .map_err(|e| ServiceError::Internal(e.to_string()))?
        .map_err(|e| ServiceError::BadInput(e.to_string()))
    }

    /// Reads the keychain once, before a model call may need its key: only
    /// when a model is configured and the environment holds no key.
    pub(super) async fn ensure_keychain(&self) {
        let env = |n: &str| (self.config.env)(n).filter(|v| !v.trim().is_empty());
        let model = lock(&self.settings).names_model(&env);
        let unread = matches!(*lock(&self.keychain), KeychainState::Unread);
        if unread && model && crate::secrets::key_in_environment(&env).is_none() {
            self.refresh_keychain().await;
        }
    }

    /// The keychain's key, when the environment holds none.
    pub(super) fn keychain_key(&self) -> Option<crate::llm::ApiKey> {
        if crate::secrets::key_in_environment(&|n| (self.config.env)(n)).is_some() {
            return None;
        }
        match &*lock(&self.keychain) {
            KeychainState::Holds(k) => Some(k.clone()),
            _ => None,
        }
    }

    pub(super) fn llm_client(&self) -> Result<Option<crate::llm::LlmClient>> {
        self.llm_client_with(&crate::llm::LlmLimits::default(), &RunRequest::new("-"))
    }

    /// The model client of a launch: the app's settings and limits, a
    /// suite's `llm:` limits over them, the request's over those (never an
    /// endpoint or key from either: they have none).
    pub(super) fn llm_client_with(
        &self,
        suite: &crate::llm::LlmLimits,
        req: &RunRequest,
    ) -> Result<Option<crate::llm::LlmClient>> {
        let s = lock(&self.settings).clone();
        let llm_settings = self.model_settings(&s).overlay(&suite.to_settings()).overlay(&req.model.to_settings());
        let env = Arc::clone(&self.config.env);
        match crate::llm::LlmConfig::resolve(&llm_settings, |n| env(n)) {
            Ok(config) => {
                let client = crate::llm::LlmClient::new(config).map_err(|e| ServiceError::BadInput(e.to_string()))?;
                Ok(Some(client.with_store(self.store.clone())))
            }
            Err(crate::llm::LlmError::NoModel) => Ok(None),
            Err(e) => Err(ServiceError::BadInput(e.to_string())),
        }
    }

    /// Sends one tiny chat request to the configured model server (no retry,
    /// no cache, 30 s at most) and says whether and how it answered.
    pub async fn test_llm(&self) -> LlmCheck {
        self.ensure_keychain().await;
        let settings = self.settings();
        let base_url = settings.effective_base_url.clone();
        let model = settings.effective_model.clone();
        let client = match self.llm_client() {
            Ok(Some(c)) => c,
            failed => {
                let error = match failed {
                    Err(e) => e.to_string(),
                    _ => crate::llm::LlmError::NoModel.to_string(),
                };
                return LlmCheck { ok: false, base_url, model, latency_ms: None, reply: None, error: Some(error) };
            }
        };
        let req = crate::llm::ChatRequest::user("Reply with the single word: ok")
            .max_tokens(8)
            .no_cache()
            .timeout(std::time::Duration::from_secs(30));
        // A connection test reports the first failure instead of retrying it.
        let client = crate::llm::LlmClient::new(client.config().clone().with_retries(0, std::time::Duration::ZERO));
        let answer = match client {
            Ok(c) => c.chat(req).await,
            Err(e) => Err(e),
        };
        match answer {
            Ok(reply) => LlmCheck {
                ok: true,
                base_url,
                model: reply.model.clone().or(model),
                latency_ms: Some(u64::try_from(reply.latency.as_millis()).unwrap_or(u64::MAX)),
                reply: Some(reply.content.chars().take(200).collect()),
                error: None,
            },
            Err(e) => {
                LlmCheck { ok: false, base_url, model, latency_ms: None, reply: None, error: Some(e.to_string()) }
            }
        }
    }

    pub(super) fn remember_suite_path(&self, suite: &str, path: &str) {
        let mut s = lock(&self.settings);
        if s.suite_paths.get(suite).map(String::as_str) != Some(path) {
            s.suite_paths.insert(suite.to_string(), path.to_string());
            if let Err(e) = s.save(&self.config.settings_path) {
                tracing::warn!(error = %e, "could not remember the suite file");
            }
        }
    }

    // ----- settings -----------------------------------------------------------

    /// The folders outside their own that suites may use (the user's setting).
    pub(super) fn access(&self) -> suite::Access {
        lock(&self.settings).access()
    }

    pub fn settings(&self) -> SettingsView {
        let s = lock(&self.settings).clone();
        let env = |n: &str| (self.config.env)(n).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let settings = crate::llm::LlmSettings {
            base_url: s.llm_base_url.clone(),
            // Resolving needs a model; a stand-in lets the endpoint's own
            // precedence (setting, environment, default) be read even when no
            // model is configured yet.
            model: Some(String::from("-")),
            ..Default::default()
        };
        let effective_base_url = crate::llm::LlmConfig::resolve(&settings, env)
            .map_or_else(|_| s.llm_base_url.clone().unwrap_or_default(), |c| c.base_url);
        let effective_model = s.llm_model.clone().or_else(|| env(crate::llm::ENV_MODEL));
        let in_env = crate::secrets::key_in_environment(&|n| env(n));
        let keychain = lock(&self.keychain).clone();
        let api_key_source = match (in_env, &keychain) {
            (Some(var), _) => Some(var.to_string()),
            (None, KeychainState::Holds(_)) => Some("keychain".to_string()),
            _ => None,
        };
        let (keychain_available, keychain_note) = match (&keychain, in_env) {
            (KeychainState::Off, _) => (false, Some(crate::secrets::KeychainError::Off.to_string())),
            (KeychainState::Unavailable(why), _) => (false, Some(why.clone())),
            (_, Some(var)) => (true, Some(format!("{var} is set and wins over the keychain"))),
            _ => (true, None),
        };
        let current = crate::store::shown_location(&self.config.db_path).display().to_string();
        SettingsView {
            db_path: current.clone(),
            db_path_next_start: s
                .db_path
                .as_deref()
                .map(|p| crate::store::shown_location(Path::new(p)).display().to_string())
                .filter(|p| *p != current),
            llm_base_url: s.llm_base_url,
            llm_model: s.llm_model,
            effective_base_url,
            effective_model,
            llm_limits: s.llm_limits.clone(),
            model_prices: s.model_prices.clone(),
            allowed_outside: s.allowed_outside.clone(),
            api_key_present: api_key_source.is_some(),
            api_key_source,
            keychain_available,
            keychain_note,
            settings_file: self.config.settings_path.display().to_string(),
        }
    }

    /// Saves changed settings. The LLM ones apply to the next launch; a new
    /// database path to the next start of the app or server.
    pub fn update_settings(&self, update: &SettingsUpdate) -> Result<SettingsView> {
        let clean = |v: &Option<String>| v.as_ref().map(|s| s.trim().to_string());
        let mut next = lock(&self.settings).clone();
        if let Some(url) = clean(&update.llm_base_url) {
            next.llm_base_url = (!url.is_empty()).then_some(url);
        }
        if let Some(model) = clean(&update.llm_model) {
            next.llm_model = (!model.is_empty()).then_some(model);
        }
        // Every number out of bounds at once, one per line, so the form
        // marks each field instead of one per save.
        let mut wrong: Vec<String> = Vec::new();
        if let Some(limits) = &update.llm_limits {
            wrong.extend(limits.invalid_limits().iter().map(|e| format!("the model-call limits are not usable: {e}")));
            next.llm_limits = limits.clone();
        }
        if let Some(prices) = &update.model_prices {
            let named = prices.keys().find(|m| m.trim().is_empty());
            if named.is_some() {
                return Err(ServiceError::BadInput("a model price needs the model's name".to_string()));
            }
            for (model, price) in prices {
                wrong.extend(price.invalid(model).iter().map(|e| format!("the model prices are not usable: {e}")));
            }
            next.model_prices = prices.clone();
        }
        if !wrong.is_empty() {
            return Err(ServiceError::BadInput(wrong.join("\n")));
        }
        if let Some(db) = clean(&update.db_path) {
            // The form sends back the path as it was shown: a PostgreSQL
            // URL's password masked. That is no change, and must not
            // overwrite the real one.
            let shown = |p: &Path| crate::store::shown_location(p).display().to_string();
            let as_shown = db == shown(&self.config.db_path)
                || next.db_path.as_deref().is_some_and(|saved| db == shown(Path::new(saved)));
            if !as_shown {
                let chosen = (!db.is_empty()).then(|| resolve_path(&db));
                // Caught now, not at the next start: that would create the
                // whole mistyped folder chain and open an empty database there.
                if let Some(path) = &chosen
                    && crate::store::Backend::of(path) == crate::store::Backend::Sqlite
                {
                    let folder = path.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(Path::new("."));
                    if !folder.is_dir() {
                        return Err(ServiceError::BadInput(format!(
                            "database: the folder {} does not exist\n  hint: create it first, or choose a file in a \
                             folder that exists (the database file itself is created at the next start)",
                            folder.display()
                        )));
                    }
                }
                next.db_path = chosen.map(|p| p.display().to_string());
            }
        }
        if let Some(folders) = &update.allowed_outside {
            next.allowed_outside = allowed_folders(folders)?;
        }
        if let Some(url) = &next.llm_base_url {
            let probe = crate::llm::LlmSettings {
                base_url: Some(url.clone()),
                model: Some(String::from("-")),
                ..Default::default()
            };
            crate::llm::LlmConfig::resolve(&probe, |_| None)
                .map_err(|e| ServiceError::BadInput(format!("the LLM endpoint is not usable: {e}")))?;
        }
        next.save(&self.config.settings_path).map_err(|e| ServiceError::Internal(e.to_string()))?;
        *lock(&self.settings) = next;
        Ok(self.settings())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_a_missing_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/settings.json");
        assert_eq!(Settings::load(&path).unwrap(), Settings::default());
        let s = Settings { llm_model: Some("llama3.2".into()), ..Settings::default() };
        s.save(&path).unwrap();
        assert_eq!(Settings::load(&path).unwrap(), s);
        std::fs::write(&path, r#"{"llm_modle": "x"}"#).unwrap();
        let e = Settings::load(&path).unwrap_err().to_string();
        assert!(e.contains("settings.json:1:2") && e.contains("llm_modle") && e.contains("not usable"), "{e}");
    }

    #[test]
    fn a_limit_or_price_out_of_bounds_in_a_hand_edited_file_is_refused_at_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let text = "{\n  \"llm_limits\": {\"timeout_secs\": 1e300},\n  \"model_prices\": {\n    \"big\": {\"input_per_million\": -1, \"output_per_million\": 1}\n  }\n}\n";
        std::fs::write(&path, text).unwrap();
        let SettingsError::Invalid(err) = Settings::load(&path).unwrap_err() else { panic!("not an invalid file") };
        let places: Vec<String> =
            err.issues.iter().map(|i| format!("{}:{}|{}", i.location.line, i.location.column, i.field)).collect();
        assert_eq!(places, ["2:34|llm_limits.timeout_secs", "4:34|model_prices.big.input_per_million"], "{err}");
        assert!(err.issues.iter().all(|i| i.hint.is_some()), "{err}");
        assert!(err.to_string().contains("not 1e300"), "{err}");
        std::fs::write(&path, [0u8, 1, 2]).unwrap();
        let e = Settings::load(&path).unwrap_err().to_string();
        assert!(e.contains("binary file"), "{e}");
    }
}
