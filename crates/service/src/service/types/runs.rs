//! One run in detail: its output, its trajectories iteration by iteration, and
//! a supervisor's telemetry.

use super::*;

/// One step of a run's ASO telemetry (seed 000 §2.3): an optimize run's, or
/// a supervised agent run's (objective = the distance D, evaluations =
/// iterations, trajectory = its place among the run's samples).
#[derive(Debug, Clone, Serialize, TS)]
pub struct TelemetryStep {
    pub timestamp: String,
    pub cycle: i64,
    pub trajectory_id: i64,
    pub step: i64,
    pub status: NumericTrajectoryState,
    pub objective: Option<f64>,
    pub max_violation: Option<f64>,
    pub directive_action: crate::aso::directive::DirectiveAction,
    /// heuristic, llm, fallback (the heuristic after a failed model call),
    /// human, or convergence (the engine ended or paused the trajectory itself).
    pub directive_source: crate::aso::directive::DirectiveSource,
    pub evals_used: i64,
    pub wall_time_ms: Option<f64>,
    pub llm_call_made: bool,
}

/// The end of a captured stream, cut at a line boundary.
#[derive(Debug, Clone, Serialize, TS)]
pub struct OutputTail {
    pub text: String,
    /// Whether earlier output was left out.
    pub truncated: bool,
}

/// A run with everything the run detail screen shows.
#[derive(Debug, Clone, Serialize, TS)]
pub struct RunDetail {
    pub run: RunItem,
    pub suite_id: i64,
    pub suite: String,
    pub run_dir: String,
    /// What the run's model calls cost (none: it made none).
    pub model: Option<crate::llm::ModelSpend>,
    /// What the task reported (`run_completion.json` or the optimize result).
    #[ts(type = "unknown")]
    pub result: Option<serde_json::Value>,
    pub stdout: OutputTail,
    pub stderr: OutputTail,
    /// Empty for runs without a coordinator (command tasks).
    pub telemetry: Vec<TelemetryStep>,
    /// The convergence engine's trajectories of an agent run, oldest first
    /// (empty for other kinds).
    pub trajectories: Vec<TrajectoryView>,
}

/// One trajectory of an agent run with every iteration.
#[derive(Debug, Clone, Serialize, TS)]
pub struct TrajectoryView {
    pub id: String,
    /// The trajectory this one belongs to (a parallel group, a split task).
    pub parent_id: Option<String>,
    pub role: TrajectoryRole,
    /// Its place among its siblings (1, 2, …; 0 for a root).
    pub ordinal: i64,
    pub task_name: String,
    pub category: String,
    pub status: TrajectoryState,
    pub iterations: i64,
    pub tokens_used: i64,
    pub final_level: Option<f64>,
    /// The iteration whose work the trajectory's result is.
    pub best_sequence: Option<i64>,
    /// The question the trajectory waits on, when paused.
    pub pending_intervention_id: Option<i64>,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Iteration 0: the untouched workspace measured before the first
    /// execution (its tests by name, the targets); none for trajectories
    /// older than the baseline or split before they iterated.
    pub baseline: Option<IterationView>,
    /// The executions, iteration 1 on (`sequence` counts them from 0).
    pub observations: Vec<IterationView>,
}

/// One iteration: what was tried, what the overseers and the engine made of it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct IterationView {
    pub sequence: i64,
    pub strategy: String,
    /// Chosen by a rule (a directive, a fresh start) rather than the bandit.
    pub forced: bool,
    pub attractor: String,
    pub attractor_confidence: f64,
    /// Convergence level in [0, 1].
    pub level: f64,
    pub delta: Option<f64>,
    /// The goal-gradient loss L = α·D + β·P + λ·Ω and its parts.
    pub loss: f64,
    pub loss_d: f64,
    pub loss_p: f64,
    pub loss_omega: f64,
    pub grad_l: f64,
    /// refine, change_path, change_approach, break_symmetry or abandon.
    pub directive: String,
    pub rationale: String,
    pub loop_control: String,
    pub next_strategy: Option<String>,
    pub tokens: i64,
    pub wall_time_ms: i64,
    pub files_changed: i64,
    pub lines_changed: i64,
    pub applied_edits: i64,
    pub rejected_edits: i64,
    pub commit_id: String,
    pub summary: String,
    pub verdict_summary: String,
}
