//! Attractor's suite layer: suite and task files: the specification of work, validated with file:line:column errors.
//!
//! One layer of the workspace (see `tests/layers.rs` at the root): it may use
//! the layers below it and none above, which the crates' dependencies enforce.

pub mod suite;

// The layers below, at this crate's root, so `crate::store::Store` names
// the same thing in every layer.
use attractor_core::{domain, loss, textfile, time};
use attractor_llm::llm;
use attractor_numeric::numeric;
use attractor_store::artifact;
