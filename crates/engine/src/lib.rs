//! Attractor's engine layer: one run of one task of any kind: the convergence engine, overseers, goal gradient, executors, memory, the ASO coordinator.
//!
//! One layer of the workspace (see `tests/layers.rs` at the root): it may use
//! the layers below it and none above, which the crates' dependencies enforce.

pub mod aso;
pub mod engine;
pub mod executor;
pub mod ggs;
pub mod memory;
pub mod overseer;
pub mod task;

// The layers below, at this crate's root, so `crate::store::Store` names
// the same thing in every layer.
use attractor_core::{counted, counted_as, domain, loss, now_rfc3339, process, time, workspace};
use attractor_llm::llm;
use attractor_numeric::numeric;
use attractor_store::{artifact, bus, store};
use attractor_suite::suite;
