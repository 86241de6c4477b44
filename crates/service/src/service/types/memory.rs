//! The trajectory repository (seed 002 §10.2) and memory: what past agent runs
//! teach, and the report a suite is exported as.

use super::*;

pub use crate::memory::repository::{MemoryItem, SimilarTrajectories, SimilarTrajectory, TrajectoryStats};
pub use crate::store::{AttractorCount, CategoryStats, ComplexityStats, StrategyStats, TrajectoryBrief};

/// What to find similar trajectories to: a run's (agent task's) trajectory,
/// a trajectory (any one of a run that drove several), or a task described
/// in words — exactly one of the three. (Also read from a URL's query, which
/// may carry `access_token`: unknown keys are ignored.)
#[derive(Debug, Clone, Default, Deserialize, TS)]
pub struct SimilarRequest {
    #[serde(default)]
    #[ts(optional)]
    pub run_id: Option<i64>,
    #[serde(default)]
    #[ts(optional)]
    pub trajectory_id: Option<String>,
    #[serde(default)]
    #[ts(optional)]
    pub task: Option<String>,
    /// Trajectories of this category count as more similar (a run's own
    /// category when the question is a run and this is not given).
    #[serde(default)]
    #[ts(optional)]
    pub category: Option<String>,
    /// At most this many answers [default 10, at most 200].
    #[serde(default)]
    #[ts(optional)]
    pub limit: Option<u32>,
}

/// A suite's report written into a folder (`attractor report`, the desktop
/// app's Export).
#[derive(Debug, Clone, Serialize, TS)]
pub struct ReportWritten {
    pub suite: String,
    /// The folder, absolute.
    pub dir: String,
    /// The page to open: `index.html` in `dir`.
    pub index: String,
    /// Every file written, by name.
    pub files: Vec<String>,
}
