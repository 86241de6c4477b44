//! The goal-gradient solver's hyperparameters, with seed 003's v0.7 defaults.
//! They are starting points meant to be tuned, so every one is configurable.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GgsConfig {
    /// α: weight on the intent-result distance `D`.
    pub alpha: f64,
    /// β: weight on process implausibility `P` before it decays with `Ω`.
    pub beta: f64,
    /// λ: weight on the resource cost `Ω`.
    pub lambda: f64,
    /// w₁: share of `Ω` that comes from the replan (iteration) count.
    pub w_replans: f64,
    /// w₂: share of `Ω` that comes from elapsed wall time.
    pub w_time: f64,
    /// ε: `|∇L|` below this is a plateau (no real movement).
    pub epsilon: f64,
    /// δ: `D` above this is still far from the intent; below it, close enough to only refine.
    pub delta: f64,
    /// `P` above this pivot means the failures are logical (the approach is wrong).
    pub p_pivot: f64,
    /// `Ω` at or above this abandons, whatever the gradient says.
    pub abandon_omega: f64,
    /// Time budget for `Ω` when the caller has none of its own (seed: 5 minutes).
    pub time_budget_ms: u64,
    /// Beyond the seed: how many `break_symmetry` rounds in a row without `D`
    /// falling count as thrashing for the auditor (seed 003 R6).
    pub thrashing_repeats: u32,
}

impl Default for GgsConfig {
    fn default() -> Self {
        GgsConfig {
            alpha: 0.6,
            beta: 0.3,
            lambda: 0.4,
            w_replans: 0.6,
            w_time: 0.4,
            epsilon: 0.1,
            delta: 0.3,
            p_pivot: 0.5,
            abandon_omega: 0.8,
            time_budget_ms: 300_000,
            thrashing_repeats: 3,
        }
    }
}
