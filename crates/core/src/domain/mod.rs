//! The shared vocabulary: the small types and words every layer of Attractor
//! speaks — why an update was rolled back, whether it waits for a person,
//! what model calls cost, the auditor's alert, how seeds and numbers are
//! derived and worded.
//!
//! It sits at the bottom of the module graph and imports no other module of
//! the crate, so the store, the bus, the outer loop and the screens can all
//! name these things without importing one another (`tests/layers.rs` keeps
//! it so).

pub mod approval;
pub mod convergence;
pub mod directive;
pub mod epoch;
pub mod optimizer;
pub mod rollback;
pub mod seed;
pub mod spend;
pub mod stored;
pub mod thrashing;
pub mod words;

pub use approval::ApprovalMode;
pub use directive::{DirectiveAction, DirectiveSource};
pub use epoch::{ArtifactEvent, EpochEvent, EpochRecord, VerificationEvent};
pub use optimizer::OptimizerKind;
pub use rollback::RollbackReason;
pub use seed::epoch_seed;
pub use spend::{ModelSpend, format_cost};
pub use stored::{
    AuditKind, InterventionKind, InterventionMode, MemoryOutcome, NumericTrajectoryState, ProcessSource, RunState,
    TaskType, TrajectoryStatus,
};
pub use thrashing::ThrashingAlert;
pub use words::{counted, counted_as, drawn, shown_number};

/// How a tree search's epoch note begins (each such epoch measured one
/// candidate); the store's latest-mean rule and the charts read it.
pub const TREE_EPOCH: &str = "tree search:";

/// The pseudo-kind of a suite's task kinds (`Suite::task_kinds`) for agent
/// tasks under the ASO coordinator.
pub const ASO_AGENT_KIND: &str = "agent:aso";

/// What a caught panic said, as far as it is text: a bug caught in a server
/// or watcher task is reported with it instead of wedging the task.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "no message".to_string())
}
