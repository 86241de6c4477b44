//! The response cache: deterministic calls answered once are answered from
//! here afterwards, across processes when a [`Store`] backs it.
//!
//! The key is the SHA-256 of a canonical JSON of everything that decides the
//! answer — base URL, model, messages, temperature, `max_tokens`, JSON mode —
//! and of nothing else: the API key is not part of it (two keys for one
//! account get the same answer) and so never reaches the database. Only
//! successful replies are written; the client additionally holds back replies
//! that a structured call could not use (see `LlmClient::chat_json`).
//!
//! Cache failures never fail a call: a broken database only costs a warning
//! and a real request.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::request::ChatMessage;
use super::usage::TokenUsage;
use crate::store::Store;

/// Bumped when the key's contents change, so old rows simply stop matching.
/// 2: the reply format (with its schema) replaced the JSON-mode flag.
const KEY_VERSION: u32 = 2;
/// Upper bound of the in-memory cache (used when there is no store); when full
/// it starts over rather than growing without bound in a long run.
const MEMORY_LIMIT: usize = 4096;

/// What is stored for one reply.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct CachedReply {
    pub content: String,
    pub usage: Option<TokenUsage>,
    pub model: Option<String>,
    pub finish_reason: Option<String>,
}

/// A cache key and the canonical request JSON it was hashed from.
#[derive(Clone, Debug)]
pub(crate) struct CacheKey {
    pub key: String,
    pub request_json: String,
}

/// Everything that decides a reply, as one canonical JSON and its hash.
pub(crate) fn cache_key(
    base_url: &str,
    model: &str,
    messages: &[ChatMessage],
    temperature: f64,
    max_tokens: u32,
    format: &Value,
) -> CacheKey {
    let request = json!({
        "v": KEY_VERSION,
        "base_url": base_url,
        "model": model,
        "messages": messages,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "format": format,
    });
    let mut request_json = String::new();
    write_canonical(&request, &mut request_json);
    let key = format!("{:x}", Sha256::digest(request_json.as_bytes()));
    CacheKey { key, request_json }
}

/// Compact JSON with object keys sorted at every level, so one request always
/// gives one string whatever map order serde_json was built with.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The cache's backing: the project database, or this process's memory.
pub(crate) enum ResponseCache {
    Memory(Mutex<HashMap<String, CachedReply>>),
    Store(Store),
}

impl ResponseCache {
    pub fn memory() -> ResponseCache {
        ResponseCache::Memory(Mutex::new(HashMap::new()))
    }

    pub async fn get(&self, key: &CacheKey) -> Option<CachedReply> {
        match self {
            ResponseCache::Memory(map) => map.lock().unwrap_or_else(|e| e.into_inner()).get(&key.key).cloned(),
            ResponseCache::Store(store) => match store.llm_cache_get(&key.key).await {
                Ok(Some(json)) => match serde_json::from_str(&json) {
                    Ok(reply) => Some(reply),
                    Err(error) => {
                        tracing::warn!(%error, key = %key.key, "unreadable LLM cache row; asking the model");
                        None
                    }
                },
                Ok(None) => None,
                Err(error) => {
                    tracing::warn!(%error, "cannot read the LLM cache; asking the model");
                    None
                }
            },
        }
    }

    pub async fn put(&self, key: &CacheKey, base_url: &str, model: &str, reply: &CachedReply) {
        match self {
            ResponseCache::Memory(map) => {
                let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
                if map.len() >= MEMORY_LIMIT {
                    map.clear();
                }
                map.insert(key.key.clone(), reply.clone());
            }
            ResponseCache::Store(store) => {
                let response_json = match serde_json::to_string(reply) {
                    Ok(json) => json,
                    Err(error) => {
                        tracing::warn!(%error, "cannot encode an LLM reply for the cache");
                        return;
                    }
                };
                if let Err(error) =
                    store.llm_cache_put(&key.key, base_url, model, &key.request_json, &response_json).await
                {
                    tracing::warn!(%error, "cannot write the LLM cache; the reply is not cached");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_depends_on_what_decides_the_reply() {
        let msgs = vec![ChatMessage::user("hi")];
        let none = Value::Null;
        let object = json!({"type": "json_object"});
        let base = cache_key("http://a/v1", "m", &msgs, 0.0, 9, &none);
        assert_eq!(base.key, cache_key("http://a/v1", "m", &msgs, 0.0, 9, &none).key);
        assert_eq!(base.key.len(), 64);
        for other in [
            cache_key("http://b/v1", "m", &msgs, 0.0, 9, &none),
            cache_key("http://a/v1", "n", &msgs, 0.0, 9, &none),
            cache_key("http://a/v1", "m", &[ChatMessage::user("ho")], 0.0, 9, &none),
            cache_key("http://a/v1", "m", &msgs, 0.0, 5, &none),
            cache_key("http://a/v1", "m", &msgs, 0.0, 9, &object),
        ] {
            assert_ne!(base.key, other.key, "{}", other.request_json);
        }
    }

    #[test]
    fn canonical_json_sorts_keys() {
        let mut out = String::new();
        write_canonical(&json!({"b": [1, {"z": null, "a": "x\"y"}], "a": 2.5}), &mut out);
        assert_eq!(out, r#"{"a":2.5,"b":[1,{"a":"x\"y","z":null}]}"#);
    }
}
