//! The LLM API key in the operating system's keychain.
//!
//! Attractor never writes a key to its database, its settings file or a log.
//! A key comes from the environment (`ATTRACTOR_LLM_API_KEY`, then
//! `OPENAI_API_KEY`) or, when neither is set, from the keychain: Keychain
//! Services on macOS, the Credential Manager on Windows, the Secret Service
//! (GNOME Keyring, KWallet) on Linux and the BSDs. The environment wins so a
//! single shell can try another key without touching the stored one.
//!
//! Keychain calls block (D-Bus round trips, or a prompt to unlock the
//! keyring), so async callers run them on the blocking pool. A machine
//! without a keychain is not an error for anyone who does not ask for one:
//! reading reports "unavailable" and the key is simply absent.

mod key;

pub use key::ApiKey;

/// The API key's environment variable (wins over `OPENAI_API_KEY`).
pub const ENV_API_KEY: &str = "ATTRACTOR_LLM_API_KEY";
/// The API key's variable as OpenAI's own tools name it.
pub const ENV_OPENAI_API_KEY: &str = "OPENAI_API_KEY";

/// `ATTRACTOR_KEYCHAIN=off` stops Attractor from consulting the keychain
/// (for scripted runs on a desktop whose keyring would prompt).
pub const ENV_KEYCHAIN: &str = "ATTRACTOR_KEYCHAIN";

/// The keychain entry's service name.
pub const SERVICE: &str = "attractor";
/// The keychain entry's account name.
pub const ACCOUNT: &str = "llm-api-key";

#[derive(Debug, thiserror::Error)]
pub enum KeychainError {
    #[error(
        "no keychain is available here ({0})\n  hint: on Linux the Secret Service must be running (GNOME Keyring or \
         KWallet, unlocked); or put the key in the ATTRACTOR_LLM_API_KEY environment variable instead"
    )]
    Unavailable(String),
    #[error("the keychain refused: {0}\n  hint: unlock the keyring and try again")]
    Refused(String),
    #[error("the keychain is turned off (ATTRACTOR_KEYCHAIN=off)\n  hint: unset ATTRACTOR_KEYCHAIN to use it")]
    Off,
    #[error("an API key cannot be empty")]
    Empty,
}

/// Where the key a request would send comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// The named environment variable.
    Environment(&'static str),
    Keychain,
}

impl KeySource {
    pub fn describe(&self) -> String {
        match self {
            KeySource::Environment(name) => (*name).to_string(),
            KeySource::Keychain => "keychain".to_string(),
        }
    }
}

/// One keychain entry.
#[derive(Debug, Clone)]
pub struct Keychain {
    service: String,
    account: String,
}

impl Keychain {
    /// The entry that holds the LLM API key.
    pub fn api_key() -> Keychain {
        Keychain { service: SERVICE.into(), account: ACCOUNT.into() }
    }

    /// The stored secret, `None` when nothing is stored.
    pub fn read(&self) -> Result<Option<String>, KeychainError> {
        match self.entry()?.get_password() {
            Ok(s) => Ok(Some(s)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(classify(e)),
        }
    }

    /// Stores `secret`, replacing what was there.
    pub fn store(&self, secret: &str) -> Result<(), KeychainError> {
        let secret = secret.trim();
        if secret.is_empty() {
            return Err(KeychainError::Empty);
        }
        self.entry()?.set_password(secret).map_err(classify)
    }

    /// Deletes the entry; `false` when there was none.
    pub fn delete(&self) -> Result<bool, KeychainError> {
        match self.entry()?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(classify(e)),
        }
    }

    fn entry(&self) -> Result<keyring::Entry, KeychainError> {
        keyring::Entry::new(&self.service, &self.account).map_err(classify)
    }
}

fn classify(e: keyring::Error) -> KeychainError {
    match e {
        keyring::Error::NoDefaultStore => KeychainError::Unavailable("no credential store could be opened".into()),
        keyring::Error::PlatformFailure(p) => KeychainError::Unavailable(p.to_string()),
        keyring::Error::NoStorageAccess(p) => KeychainError::Refused(p.to_string()),
        other => KeychainError::Refused(other.to_string()),
    }
}

/// Whether the keychain may be consulted under this environment.
pub fn keychain_enabled(env: &dyn Fn(&str) -> Option<String>) -> bool {
    !env(ENV_KEYCHAIN).is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "false" | "no"))
}

/// The environment variable holding a key, if any (the first that is set wins).
pub fn key_in_environment(env: &dyn Fn(&str) -> Option<String>) -> Option<&'static str> {
    [ENV_API_KEY, ENV_OPENAI_API_KEY].into_iter().find(|n| env(n).is_some_and(|v| !v.trim().is_empty()))
}

/// The keychain's key when the environment has none and the keychain is on.
/// A keychain that cannot be read counts as holding nothing (logged at debug
/// level, without the key): a machine without one must still run local models.
/// Blocking.
pub fn fallback_key(env: &dyn Fn(&str) -> Option<String>) -> Option<ApiKey> {
    if key_in_environment(env).is_some() || !keychain_enabled(env) {
        return None;
    }
    match Keychain::api_key().read() {
        Ok(key) => key.map(ApiKey::new),
        Err(e) => {
            tracing::debug!("no API key from the keychain: {e}");
            None
        }
    }
}
