//! Attractor's llm layer: the client for OpenAI-compatible model servers: retries, limits, usage and cost, the response cache, a scripted test server.
//!
//! One layer of the workspace (see `tests/layers.rs` at the root): it may use
//! the layers below it and none above, which the crates' dependencies enforce.

pub mod llm;

// The layers below, at this crate's root, so `crate::store::Store` names
// the same thing in every layer.
use attractor_core::{counted, domain, secrets};
use attractor_store::store;
