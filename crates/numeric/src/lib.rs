//! Attractor's numeric layer: constrained numeric problems, external evaluators, the ALM optimizer and where its trajectories start.
//!
//! One layer of the workspace (see `tests/layers.rs` at the root): it may use
//! the layers below it and none above, which the crates' dependencies enforce.

pub mod numeric;

// The layers below, at this crate's root, so `crate::store::Store` names
// the same thing in every layer.
use attractor_core::{process, textfile};
