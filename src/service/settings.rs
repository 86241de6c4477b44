//! The settings file: what a person chose on the settings screen.
//!
//! Settings live in a small JSON file, not in the database: one of them *is*
//! the database path, and the LLM endpoint and model must be readable before
//! any database is open. The API key is never written anywhere by Attractor:
//! it comes from the environment (later the operating system's keychain), and
//! the settings screen only learns whether one is present.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
}

impl Settings {
    /// What suites loaded under these settings may reach.
    pub fn access(&self) -> crate::suite::Access {
        crate::suite::Access { outside: self.allowed_outside.iter().map(PathBuf::from).collect() }
    }
}

/// What the settings file is, for the hints of its issues.
const FILE_HINT: &str = "the settings file is the JSON the Settings screen writes (db_path, llm_base_url, \
                         llm_model, llm_limits, model_prices, suite_paths, allowed_outside)";

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

    /// Reads the file; a missing file is the empty settings. Every number
    /// is checked against the bounds the Settings screen applies, so a
    /// hand-edited `1e300` is refused at its place before any launch.
    pub fn load(path: &Path) -> Result<Settings, SettingsError> {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(source) => return Err(SettingsError::Read { path: path.to_path_buf(), source }),
            Ok(_) => {}
        }
        let text = crate::suite::read_text(path, "settings file", FILE_HINT).map_err(SettingsError::Invalid)?;
        let settings: Settings = crate::suite::parse_strict(&text, path, FILE_HINT)
            .map_err(|issue| SettingsError::Invalid(crate::suite::SuiteError::one(issue)))?;
        let hint = "see \"Model calls: limits\" in the README for each limit and its bounds";
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
    pub fn save(&self, path: &Path) -> Result<(), SettingsError> {
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
