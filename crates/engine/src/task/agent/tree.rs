//! Where a trajectory sits in its run, and how it reports back.
//!
//! A run's trajectories form a tree: the run's own (`run-N`) at the root,
//! its parallel samples (`run-N.sK`) or its subtasks (`run-N.dK`) and
//! integration trajectory (`run-N.integration`) under it. [`Placement`] is
//! a trajectory's position — id, parent, [`Role`], place among siblings,
//! depth, its own stop signal — and [`Report`] is what it hands back to
//! whoever started it when it ends.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;

use super::{AgentRun, AgentState, parallel};
use crate::engine::metrics::LevelWeights;
use crate::loss::RunStatus;
use crate::store::TrajectoryRow;

/// What a trajectory is to its run (the `role` of its row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The run's own trajectory (it may split into subtasks).
    Root,
    /// The root of parallel samples; it makes no attempt itself.
    Parallel,
    Sample,
    Subtask,
    /// Measures the subtasks' combined work with the task's own overseers.
    Integration,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Root => "root",
            Role::Parallel => "parallel",
            Role::Sample => "sample",
            Role::Subtask => "subtask",
            Role::Integration => "integration",
        }
    }
}

/// Where one trajectory sits in its run.
pub(super) struct Placement {
    pub(super) id: String,
    pub(super) parent_id: Option<String>,
    pub(super) role: Role,
    /// Its place among its siblings (1, 2, …); 0 for the root.
    pub(super) ordinal: u32,
    /// How many splits above it (the root is 0).
    pub(super) depth: u32,
    /// Turns true when this trajectory must stop (the run's Ctrl-C, or its
    /// parallel group's winner).
    pub(super) cancel: watch::Receiver<bool>,
    /// The parallel group it samples for.
    pub(super) group: Option<Arc<parallel::Group>>,
}

impl Placement {
    pub(super) fn root(r: &AgentRun<'_>, id: &str) -> Placement {
        Placement {
            id: id.to_string(),
            parent_id: None,
            role: Role::Root,
            ordinal: 0,
            depth: 0,
            cancel: r.cancel.clone(),
            group: None,
        }
    }
}

/// How a trajectory ended, for whoever started it (the run, a parallel
/// group, a split trajectory).
#[derive(Debug, Clone)]
pub(super) struct Report {
    pub(super) id: String,
    /// The row's terminal status (`converged`, `exhausted`, `superseded`, …).
    pub(super) status: String,
    pub(super) run_status: RunStatus,
    /// Reached the acceptance threshold (a partial acceptance is not).
    pub(super) converged: bool,
    /// The result's level (0 without one).
    pub(super) level: f64,
    /// Its best observation's level, if it made any.
    pub(super) best_level: Option<f64>,
    pub(super) iterations: u32,
    pub(super) tokens: u64,
    pub(super) wall_time_ms: u64,
    pub(super) gate_rejections: u32,
    pub(super) critique_score: Option<f64>,
    /// The scarcest budget dimension's share left, in [0, 1].
    pub(super) budget_remaining: f64,
    pub(super) summary: Value,
    pub(super) table: String,
    pub(super) error: Option<String>,
    /// Where its result is.
    pub(super) workspace: PathBuf,
    /// Stopped by the user before it ended: its stored state is resumable
    /// and nothing about its end was recorded.
    pub(super) cancelled: bool,
}

impl Report {
    /// The report of a trajectory that ended in an earlier run, from its row.
    pub(super) fn from_row(row: &TrajectoryRow, weights: &LevelWeights) -> Report {
        let state: Option<AgentState> = serde_json::from_str(&row.record.state_json).ok();
        let summary: Value =
            row.result_json.as_deref().and_then(|t| serde_json::from_str(t).ok()).unwrap_or(Value::Null);
        let t = state.as_ref().map(|s| &s.trajectory);
        let best_level = t.and_then(|t| t.best_observation(weights).map(|o| o.level(weights))).or(row.final_level);
        Report {
            id: row.record.id.clone(),
            status: row.status.clone(),
            run_status: run_status_of(&row.status),
            converged: row.status == "converged",
            level: row.final_level.unwrap_or(0.0),
            best_level,
            iterations: u32::try_from(row.iterations).unwrap_or(0),
            tokens: u64::try_from(row.tokens_used).unwrap_or(0),
            wall_time_ms: t.map_or(0, |t| t.observations.iter().map(|o| o.wall_time_ms).sum()),
            gate_rejections: state.as_ref().map_or(0, |s| s.gate_rejections),
            critique_score: None,
            budget_remaining: t.map_or(0.0, |t| t.budget.remaining_fraction().clamp(0.0, 1.0)),
            error: summary["error"].as_str().map(str::to_string),
            summary,
            table: String::new(),
            workspace: PathBuf::from(&row.record.workspace_dir),
            cancelled: false,
        }
    }

    pub(super) fn cancelled(id: &str, workspace: &Path) -> Report {
        Report {
            id: id.to_string(),
            status: "cancelled".to_string(),
            run_status: RunStatus::Failed,
            converged: false,
            level: 0.0,
            best_level: None,
            iterations: 0,
            tokens: 0,
            wall_time_ms: 0,
            gate_rejections: 0,
            critique_score: None,
            budget_remaining: 0.0,
            summary: Value::Null,
            table: String::new(),
            error: None,
            workspace: workspace.to_path_buf(),
            cancelled: true,
        }
    }
}

/// The run status a trajectory status counts as.
pub(super) fn run_status_of(status: &str) -> RunStatus {
    match status {
        "converged" => RunStatus::Complete,
        "accepted_partial" => RunStatus::Partial,
        _ => RunStatus::Failed,
    }
}

/// Whether a stored status is an end (anything but running, paused, coordinating).
pub(super) fn is_terminal_status(status: &str) -> bool {
    !matches!(status, "running" | "paused" | "coordinating")
}
