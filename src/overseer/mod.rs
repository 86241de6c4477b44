//! Overseers: the external checks (tests, build, type check, lint, security
//! scan, custom commands) that measure an agent task's workspace after every
//! execution. [`signals`] holds what they measured, [`parse`] reads their
//! output.

pub mod parse;
pub mod signals;

pub use signals::{FailureClass, OverseerSignals};
