//! The API key: a secret that must never reach a log line, a debug print or the
//! database.
//!
//! [`ApiKey`] deliberately has no `Display` and no `Serialize`, and its `Debug`
//! prints a placeholder, so the only way to read it is [`ApiKey::expose`] —
//! which the client calls in exactly one place, to build the Authorization
//! header for the configured base URL.

use std::fmt;

use serde::Deserialize;

/// A bearer token for the model server, redacted in every `Debug` output.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    /// The key itself. Only for putting it where it belongs (the Authorization
    /// header) or for comparing it in tests; never for printing.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> ApiKey {
        ApiKey(key)
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> ApiKey {
        ApiKey(key.to_string())
    }
}
