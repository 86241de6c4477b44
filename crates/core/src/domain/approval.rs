//! Whether an optimizer's winning update waits for a person: a suite's
//! `approve_updates:`, a run's `--approve-updates`, the outer loop's gate.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What happens to an optimizer's winning update.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// It becomes active when its epoch closes.
    #[default]
    Off,
    /// It waits for a person, and the run waits with it.
    Wait,
    /// It waits for a person; the run goes on with the versions it has.
    Continue,
}

impl ApprovalMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Off => "off",
            ApprovalMode::Wait => "wait",
            ApprovalMode::Continue => "continue",
        }
    }
}
