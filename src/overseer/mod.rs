//! Overseers: the external checks (tests, build, type check, lint, security
//! scan, custom commands) that measure an agent task's workspace after every
//! execution.
//!
//! - [`runner`]: runs a task's overseers cheapest first, skips what a
//!   blocking failure or the policy makes pointless, retries environmental
//!   failures, and gathers [`OverseerSignals`];
//! - [`classify`]: environmental versus logical failures;
//! - [`parse`]: reading test runners', compilers', linters' and scanners'
//!   output;
//! - [`signals`]: what was measured, shared with the convergence engine.

pub mod classify;
pub mod parse;
pub mod runner;
pub mod signals;

pub use runner::{MeasurePolicy, Measurement, OverseerError, OverseerRun, OverseerRunner, RunnerConfig};
pub use signals::{FailureClass, OverseerSignals};
