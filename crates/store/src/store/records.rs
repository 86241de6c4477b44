//! Rows as they come out of (and go into) the database.

use serde::Serialize;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct SuiteRow {
    pub id: i64,
    pub name: String,
    pub tasks_json: String,
    pub baseline_artifacts_json: String,
    pub created_at: String,
    /// The suite file it was last run from.
    pub source_path: Option<String>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct SuiteSummary {
    pub id: i64,
    pub name: String,
    pub created_at: String,
    /// The suite file it was last run from.
    pub source_path: Option<String>,
    /// Completed epochs.
    pub epochs: i64,
    pub latest_mean_loss: Option<f64>,
    /// Epochs started but not finished (an interrupted run resumes them).
    pub unfinished: i64,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct VersionRow {
    pub id: i64,
    pub artifact_name: String,
    pub version: i64,
    pub content: String,
    pub parent_version: i64,
    pub created_at: String,
    pub epoch_id: Option<i64>,
    #[sqlx(try_from = "super::Flag")]
    pub is_active: bool,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct DeclarationRow {
    pub artifact_name: String,
    pub suite_name: String,
    pub kind: String,
    pub description: String,
    pub content: String,
    pub fields_json: String,
    pub declared_at: String,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct EpochRow {
    pub id: i64,
    pub suite_id: i64,
    pub epoch_num: i64,
    pub started_at: String,
    pub completed_at: Option<String>,
    pub mean_loss: Option<f64>,
    pub parent_artifacts_json: String,
    pub child_artifacts_json: Option<String>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct EpochRunRow {
    pub epoch_id: i64,
    pub run_id: i64,
    pub task_name: String,
    pub loss: f64,
    pub scores_json: String,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct RunRow {
    pub id: i64,
    pub suite_id: i64,
    pub epoch_id: i64,
    pub task_name: String,
    pub kind: String,
    pub status: String,
    pub run_dir: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub duration_ms: Option<i64>,
    pub exit_code: Option<i64>,
    pub loss: Option<f64>,
    pub loss_breakdown_json: Option<String>,
    pub result_json: Option<String>,
    pub error: Option<String>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    /// What its model calls cost (`ModelSpend` as JSON), when it made any.
    pub model_json: Option<String>,
}

/// How a run ended, as [`super::Store::finish_run`] records it.
#[derive(Debug, Clone, Default)]
pub struct RunEnd {
    pub task_name: String,
    /// complete / partial / failed / aborted, or cancelled for a run that
    /// was cut short and does not count.
    pub status: String,
    pub duration_ms: i64,
    pub exit_code: Option<i64>,
    /// Set for runs that count towards the epoch; `None` for cancelled ones.
    pub loss: Option<f64>,
    pub loss_breakdown_json: Option<String>,
    pub scores_json: Option<String>,
    pub result_json: Option<String>,
    pub error: Option<String>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    /// What its model calls cost, when it made any.
    pub model: Option<crate::domain::ModelSpend>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct EventRow {
    pub id: i64,
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub event: EventRecord,
    pub recorded_at: String,
}

/// A bus event as the `events` table keeps it: what the bus's writer
/// records and what [`EventRow`] reads back inside it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct EventRecord {
    pub kind: String,
    pub suite_id: Option<i64>,
    pub epoch_id: Option<i64>,
    pub run_id: Option<i64>,
    pub payload_json: String,
    pub occurred_at: String,
    /// The process that published it ([`crate::process::origin`]; none on
    /// events recorded before origins were kept).
    pub origin: Option<String>,
}
