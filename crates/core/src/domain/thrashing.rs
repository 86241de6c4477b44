//! The goal-gradient auditor's alert (seed 003, R6), as the bus carries it:
//! the solver's check ([`crate::ggs`]) raises it, the engine and the app show it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct ThrashingAlert {
    /// Consecutive `break_symmetry` rounds at the end of the history.
    pub repeats: u32,
    /// `D` when the run of rounds began and now.
    pub distance_from: f64,
    pub distance_to: f64,
    pub message: String,
}
