//! What the service facade hands out and takes in: plain data, serialized as
//! JSON by both transports (HTTP, the desktop's Tauri command).
//!
//! Every type here derives [`ts_rs::TS`], so the front end's TypeScript types
//! in `ui/src/generated/` are generated from these very definitions; a test
//! (`service::ts_export`) fails when the committed files are stale. 64-bit
//! integers are exported as `number`: ids and counts stay far below 2^53.
//!
//! This file holds the enums the store keeps as text (`stored_enum!`); the
//! rest lives beside the part of the app it serves: `suites`, `artifacts`,
//! `runs`, `inbox`, `launch`, `settings`, `watch`, `memory` — all
//! re-exported here, so a type is `service::types::Name` wherever it lives.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use crate::artifact::compare::DiffBasis;
pub use crate::outer::RollbackReason;
pub use crate::service::report::shape::SuiteCharts;

/// An enum of the API whose values the store keeps as text: `parse` reads
/// the stored text, and text this version does not know (a newer version
/// wrote it) reads as the variant after `else`. The front end then sees one
/// of the listed values, never a free string.
macro_rules! stored_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? } else $fallback:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub fn parse(s: &str) -> $name {
                match s {
                    $($text => $name::$variant,)+
                    _ => $name::$fallback,
                }
            }

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
}

stored_enum! {
    /// Where an agent trajectory stands.
    TrajectoryState {
        Running = "running",
        /// Paused on a question to a person.
        Paused = "paused",
        Converged = "converged",
        Partial = "partial",
        Exhausted = "exhausted",
        Abandoned = "abandoned",
        Trapped = "trapped",
        Failed = "failed",
        /// A group or split waiting on its children.
        Coordinating = "coordinating",
        /// A sample another one beat.
        Superseded = "superseded",
        Cancelled = "cancelled",
        /// A state this version does not know.
        Other = "other",
    } else Other
}

stored_enum! {
    /// What a trajectory is to its run.
    TrajectoryRole {
        Root = "root",
        /// The root of parallel samples; it makes no attempt itself.
        Parallel = "parallel",
        Sample = "sample",
        Subtask = "subtask",
        /// Measures the subtasks' combined work with the task's own overseers.
        Integration = "integration",
    } else Root
}

stored_enum! {
    /// What the diagnostics said of a numeric trajectory at a step.
    NumericTrajectoryState {
        InProgress = "IN_PROGRESS",
        Stagnation = "STAGNATION",
        FeasibleFound = "FEASIBLE_FOUND",
        Diverging = "DIVERGING",
    } else InProgress
}

stored_enum! {
    /// Who wrote a tree search's note.
    NoteSource {
        Analyst = "analyst",
        Ideation = "ideation",
    } else Analyst
}

stored_enum! {
    /// What a tree search's note says.
    NoteKind {
        DeadDirection = "dead_direction",
        SaturatedAxis = "saturated_axis",
        FrontierExtrapolation = "frontier_extrapolation",
        FailureAnalysis = "failure_analysis",
        /// A kind this version does not know.
        Other = "other",
    } else Other
}

stored_enum! {
    /// What a watched file defines.
    WatchedFileKind {
        Suite = "suite",
        Task = "task",
    } else Suite
}

stored_enum! {
    /// Where a watched file stands.
    WatchedFileStatus {
        Invalid = "invalid",
        Failed = "failed",
        AwaitingApproval = "awaiting_approval",
        Rejected = "rejected",
        Ready = "ready",
        Removed = "removed",
    } else Failed
}

stored_enum! {
    /// Whether the watcher runs a registered file by itself.
    WatchedRunMode {
        Manual = "manual",
        Auto = "auto",
    } else Manual
}

stored_enum! {
    /// Where the run the watcher queued for a file stands.
    WatchedRunStatus {
        Queued = "queued",
        Running = "running",
        Finished = "finished",
        Failed = "failed",
        Cancelled = "cancelled",
        Dropped = "dropped",
    } else Failed
}

stored_enum! {
    /// A watched file's approval to run commands.
    CommandApproval {
        Pending = "pending",
        Approved = "approved",
        Rejected = "rejected",
    } else Pending
}

mod suites;
pub use suites::*;
mod artifacts;
pub use artifacts::*;
mod runs;
pub use runs::*;
mod inbox;
pub use inbox::*;
mod launch;
pub use launch::*;
mod settings;
pub use settings::*;
mod watch;
pub use watch::*;
mod memory;
pub use memory::*;
