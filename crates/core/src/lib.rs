//! Attractor's core layer: the shared vocabulary and the machine: clocks, the loss, domain types and wording, text-file errors, the API key, processes and workspaces.
//!
//! One layer of the workspace (see `tests/layers.rs` at the root): it may use
//! the layers below it and none above, which the crates' dependencies enforce.

pub mod domain;
pub mod loss;
pub mod process;
pub mod secrets;
pub mod textfile;
pub mod time;
pub mod workspace;

pub use domain::{counted, counted_as, panic_message};
pub use time::now_rfc3339;
