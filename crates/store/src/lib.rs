//! Attractor's store layer: the database (every SQL statement), the event bus it persists, the auditor that reads it, the artifact registry.
//!
//! One layer of the workspace (see `tests/layers.rs` at the root): it may use
//! the layers below it and none above, which the crates' dependencies enforce.

pub mod artifact;
pub mod auditor;
pub mod bus;
pub mod store;

// The layers below, at this crate's root, so `crate::store::Store` names
// the same thing in every layer.
use attractor_core::{counted_as, domain, loss, now_rfc3339, process, time};
