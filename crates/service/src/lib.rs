//! Attractor's service layer: the one facade every front end calls, the report, and its HTTP server.
//!
//! One layer of the workspace (see `tests/layers.rs` at the root): it may use
//! the layers below it and none above, which the crates' dependencies enforce.

pub mod http;
pub mod service;

// The layers below, at this crate's root, so `crate::store::Store` names
// the same thing in every layer.
use attractor_core::{counted, domain, loss, now_rfc3339, secrets};
use attractor_engine::{aso, engine, memory, task};
use attractor_llm::llm;
use attractor_outer::{outer, queue, watch};
use attractor_store::{artifact, auditor, bus, store};
use attractor_suite::suite;
