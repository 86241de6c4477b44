//! Attractor's core library.
//!
//! Attractor runs *suites* of tasks, scores every run with a scalar loss, and
//! learns across runs by versioning the artifacts (prompts and settings) that
//! steer each run. One folder per concept:
//!
//! - [`suite`]: the suite YAML files people write, parsed and validated with
//!   file:line:column errors.
//! - [`store`]: the SQLite database (the only module that speaks SQL).
//! - [`artifact`]: the registry of learnable artifacts and their versions.
//! - [`loss`]: the five-part scalar loss of one run.
//! - [`task`]: executing one task once (a *run*): `command`, `agent` and
//!   `optimize` tasks.
//! - [`bus`]: the in-process bus of typed events.
//! - [`llm`]: the client for OpenAI-compatible model servers (retries, usage,
//!   JSON replies, response cache) and a scripted test server.
//! - [`outer`]: the outer loop — epochs over a suite and the optimizers that
//!   move artifacts between epochs.
//! - [`aso`]: the ASO coordinator's supervision: diagnostics, directives,
//!   the tiered supervisors.
//! - [`bench`]: benchmarks measured side by side (`attractor bench`).
//! - [`http`]: `attractor serve`, the facade over HTTP + server-sent events.
//! - [`cli`]: the `attractor` command-line interface.
//! - [`service`]: the one facade every front end (HTTP, desktop) calls.
//! - [`auditor`]: the read-only observer that raises alerts (thrashing, token overruns, stuck runs,
//!   processes left running).
//! - [`engine`]: the convergence engine that drives agent tasks.
//! - [`memory`]: convergence memory — what finished agent trajectories teach
//!   the next ones of their category — and the trajectory repository's queries.
//! - [`ggs`]: the goal-gradient solver: loss, gradient and directives for the engine.
//! - [`executor`]: what carries out an agent task's iteration (the built-in
//!   LLM executor, external coding agents) and the prompt of each strategy.
//! - [`workspace`]: a trajectory's own copy of an agent task's files.
//! - [`overseer`]: the checks that measure an agent task's workspace.
//! - [`process`]: running a shell command with a timeout that kills its
//!   whole process group, keeping a bounded part of its output.
//! - [`numeric`]: constrained benchmark problems (CEC 2006, engineering designs, external evaluators).
//! - [`report`]: a suite's charts drawn to SVG and PNG with an `index.html`
//!   (`attractor report`, the app's Export).
//! - [`watch`]: the folder watcher — suite and task files dropped into a folder are
//!   validated, registered, approved by a person and optionally run.

// The layers, bottom first (`crates/`, one crate per layer; `tests/layers.rs`
// keeps each module's imports downward). Re-exported here so that the tests,
// the desktop shell and the CLI name every module as `attractor::<module>`.
pub use attractor_core::{counted, counted_as, now_rfc3339, panic_message};
pub use attractor_core::{domain, loss, process, secrets, textfile, time, workspace};
pub use attractor_engine::{aso, engine, executor, ggs, memory, overseer, task};
pub use attractor_llm::llm;
pub use attractor_numeric::numeric;
pub use attractor_outer::{outer, queue, retention, watch};
pub use attractor_service::{http, service};
pub use attractor_store::{artifact, auditor, bus, store};
pub use attractor_suite::suite;

// The top layer: the command line and the benchmarks it runs.
pub mod bench;
pub mod cli;
