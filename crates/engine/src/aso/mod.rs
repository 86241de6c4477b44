//! The ASO coordinator (Agent-Supervised Optimization, seed 000): several
//! trajectories per task under tiered supervision — tier 1 heuristics every
//! step, tier 2 an LLM only on significant events, tier 3 a human on
//! failures.
//!
//! - [`config`]: `AsoConfig` and `DiagnosticThresholds`;
//! - [`diagnostics`]: optimizer state → `OptimizerDiagnostics`;
//! - [`directive`]: what a supervisor decides, and the control schema;
//! - [`heuristic`]: the tier-1 decision tree;
//! - [`supervisor`]: tiers 1 and 2 together, with the fallback;
//! - [`seeds`]: where trajectories start;
//! - `round_starts`: which starts a round of the coordinator takes;
//! - [`trajectory`]: one trajectory's state, progress, own stop and
//!   directive clamps;
//! - [`solver`]: one trajectory's optimizer a step at a time (ALM, εDE);
//! - [`stopping`]: when a whole run has looked enough;
//! - `finishing`: the polishes and restoration a trajectory and a run end with;
//! - [`coordinator`]: the rounds of trajectories on a shared budget;
//! - `run_state`: what a run knows between rounds, and when it stops;
//! - `drive`: the one loop that drives each trajectory (budget,
//!   directives, its own stop, telemetry);
//! - [`agent`]: the same supervision over agent trajectories (diagnostics
//!   from the convergence engine, directives as policy changes).

pub mod agent;
pub mod config;
pub mod coordinator;
pub mod diagnostics;
pub mod directive;
mod drive;
mod finishing;
pub mod heuristic;
pub mod llm_tier;
mod round_starts;
mod run_state;
pub use crate::numeric::seeds;
pub mod solver;
pub mod stopping;
pub mod supervisor;
pub mod trajectory;

pub use config::{AsoConfig, DiagnosticThresholds, SupervisionMode, UnsettledDescent};
pub use coordinator::{Coordinator, CoordinatorOutcome, RunStop, TrajectoryKind};
pub use diagnostics::{OptimizerDiagnostics, Snapshot, Status, Trend};
pub use directive::{Directive, DirectiveAction, DirectiveSource};
pub use heuristic::HeuristicSupervisor;
pub use supervisor::{ModelSupervisor, SupervisionContext, TieredSupervisor};
