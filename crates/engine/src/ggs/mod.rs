//! The goal-gradient solver (seed 003, role R7): the controller that turns a
//! round of criteria verdicts into a *directed* instruction for the next
//! attempt instead of a bare "failed, try again".
//!
//! Every round it computes a scalar loss `L = α·D + β_eff·P + λ·Ω` from
//! three parts — how far the result is from the intent (`D`), how much the
//! failures point at a wrong approach rather than a hostile environment
//! (`P`), and how much of the budget is gone (`Ω`) — takes the finite
//! difference `∇L` against the previous round, and reads a directive off a
//! small decision table: `refine`, `change_path`, `change_approach`,
//! `break_symmetry` or `abandon`. Directives that demand a new approach also
//! block the tools the failing attempt used (dynamic MUST-NOTs); `abandon`
//! comes with a partial-result record and a few concrete next moves.
//!
//! The module is pure: no I/O, no clock. The convergence engine
//! ([`crate::engine`]) feeds it the overseers' verdicts each iteration and
//! narrows its strategy choice by the directive.

pub mod audit;
pub mod config;
pub mod loss;
pub mod partial;
pub mod solver;

pub use audit::{ThrashingAlert, detect_thrashing};
pub use config::GgsConfig;
pub use loss::{CriterionMode, CriterionVerdict, Loss, ResourceUse};
pub use partial::{NextMoveContext, PartialResult};
pub use solver::{
    Directive, FailureOrigin, GgsState, GoalGradientSolver, Gradient, PlanDirective, RoundInput, RoundRecord,
};
