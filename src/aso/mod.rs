//! The ASO coordinator (Agent-Supervised Optimization, seed 000): several
//! trajectories per task under tiered supervision — tier 1 heuristics every
//! step, tier 2 an LLM only on significant events, tier 3 a human on
//! failures.
//!
//! - [`config`]: `AsoConfig` and `DiagnosticThresholds`;
//! - [`diagnostics`]: optimizer state → `OptimizerDiagnostics`;
//! - [`directive`]: what a supervisor decides, and the control schema;
//! - [`heuristic`]: the tier-1 decision tree.

pub mod config;
pub mod diagnostics;
pub mod directive;
pub mod heuristic;

pub use config::{AsoConfig, DiagnosticThresholds, SupervisionMode};
pub use diagnostics::{OptimizerDiagnostics, Snapshot, Status, Trend};
pub use directive::{Directive, DirectiveAction, DirectiveSource};
pub use heuristic::HeuristicSupervisor;
