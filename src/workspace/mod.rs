//! A trajectory's own copy of an agent task's workspace, with a git history of
//! its own so every executor output is a commit and a trajectory can go back
//! to any earlier state (RevertAndBranch) without touching its siblings.

use serde::{Deserialize, Serialize};

/// What one execution produced: the commit holding the workspace state after
/// it, and how much it changed (structural churn for the convergence delta).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactReference {
    /// The git commit id of the workspace state.
    pub commit: String,
    pub files_changed: u32,
    /// Lines added plus lines removed against the previous state.
    pub lines_changed: u32,
}
