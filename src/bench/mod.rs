//! Benchmarks (`attractor bench …`): measured side by side in one run and
//! reported as tables, never asserted in timed tests.
//!
//! - [`numeric`]: the ASO coordinator against peer optimizers (scipy, NLopt)
//!   on the built-in constrained problems, same problems, seeds and budget.
//! - [`outer`]: the outer loop's optimizers against `baseline` at the same
//!   number of evaluations, and the cost of one `textgrad` epoch.
//! - [`engine`]: the convergence engine's control overhead and throughput on
//!   real agent runs, and its decisions against plain retries on a simulated
//!   population of trajectories.
//! - [`evaluator`]: what an external evaluator costs, a process per point
//!   against persistent processes answering many points per message.
//! - [`learn`]: whether the outer loop's methods (and GEPA) find a better
//!   prompt for a real model, with every model call counted.
//! - [`ui`]: the data the app is measured against (`bench/ui`): a suite
//!   history of 500 epochs × 50 tasks written through the store.

pub mod engine;
pub mod evaluator;
pub mod learn;
pub mod numeric;
pub mod outer;
pub mod report;
pub mod ui;
