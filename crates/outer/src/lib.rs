//! Attractor's outer layer: the outer loop (epochs, optimizers, rollback, held-out), watched folders, the queue of runs and its workers, retention.
//!
//! One layer of the workspace (see `tests/layers.rs` at the root): it may use
//! the layers below it and none above, which the crates' dependencies enforce.

pub mod outer;
pub mod queue;
pub mod retention;
pub mod watch;

// The layers below, at this crate's root, so `crate::store::Store` names
// the same thing in every layer.
use attractor_core::{counted, counted_as, domain, loss, now_rfc3339, panic_message, process, time};
use attractor_engine::{executor, task};
use attractor_llm::llm;
use attractor_numeric::numeric;
use attractor_store::{artifact, bus, store};
use attractor_suite::suite;
