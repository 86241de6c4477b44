//! What the service facade hands out and takes in: plain data, serialized as
//! JSON by both transports (HTTP, the desktop's Tauri command).
//!
//! Every type here derives [`ts_rs::TS`], so the front end's TypeScript types
//! in `ui/src/generated/` are generated from these very definitions; a test
//! (`service::ts_export`) fails when the committed files are stale. 64-bit
//! integers are exported as `number`: ids and counts stay far below 2^53.
//!
//! The enums the store keeps as text are in `crate::domain::stored`; the
//! rest lives beside the part of the app it serves: `suites`, `artifacts`,
//! `runs`, `inbox`, `launch`, `settings`, `watch`, `memory` — all
//! re-exported here, so a type is `service::types::Name` wherever it lives.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use crate::artifact::compare::DiffBasis;
pub use crate::outer::RollbackReason;
pub use crate::service::report::shape::SuiteCharts;

// The enums the store keeps as text live with the shared vocabulary, where
// the bus events that carry them can name them too.
pub use crate::domain::stored::{
    CommandApproval, NoteKind, NoteSource, NumericTrajectoryState, TrajectoryRole, TrajectoryState, WatchedFileKind,
    WatchedFileStatus, WatchedRunMode, WatchedRunStatus,
};

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
