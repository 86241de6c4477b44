//! Overseers: the external checks (tests, build, type check, lint, security
//! scan, custom commands) that measure an agent task's workspace after every
//! execution.
//!
//! - [`runner`]: runs a task's overseers cheapest first, skips what a
//!   blocking failure or the policy makes pointless, retries environmental
//!   failures, and gathers [`OverseerSignals`];
//! - [`baseline`]: the tests before the first execution, and the verdict
//!   against them (targets and regressions);
//! - [`canary`]: tests planted at each measurement to check the runner
//!   still reports the truth;
//! - [`classify`]: environmental versus logical failures;
//! - [`recognise`]: which test runner a command runs, asked to name every test;
//! - [`parse`]: reading test runners', compilers', linters' and scanners'
//!   output;
//! - [`signals`]: what was measured, shared with the convergence engine.

pub mod baseline;
pub mod canary;
pub mod classify;
pub mod parse;
pub mod recognise;
pub mod runner;
pub mod signals;

pub use runner::{CanaryMode, MeasurePolicy, Measurement, OverseerError, OverseerRun, OverseerRunner, RunnerConfig};
pub use signals::{FailureClass, OverseerSignals};
