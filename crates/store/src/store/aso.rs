//! Rows of the ASO coordinator: experiments, their step-by-step telemetry,
//! and the interventions it raises for a person.

use serde::Serialize;

use super::{Result, Store};
use crate::now_rfc3339;

/// One `aso_telemetry` row (seed 000 §2.3).
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct TelemetryRow {
    pub id: i64,
    pub timestamp: String,
    pub experiment_id: i64,
    pub cycle: i64,
    pub trajectory_id: i64,
    pub step: i64,
    pub status: String,
    pub objective: Option<f64>,
    pub max_violation: Option<f64>,
    pub directive_action: String,
    pub directive_source: String,
    pub evals_used: i64,
    pub wall_time_ms: Option<f64>,
    #[sqlx(try_from = "super::Flag")]
    pub llm_call_made: bool,
    pub diagnostics_json: Option<String>,
    pub directive_json: Option<String>,
}

/// An intervention as stored: what was raised, and the answer.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct InterventionRow {
    pub id: i64,
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub raised: Intervention,
    pub status: String,
    pub answer: Option<String>,
    pub answer_text: Option<String>,
    pub created_at: String,
    pub answered_at: Option<String>,
}

/// A question or notice for a person: what a run raises and what
/// [`InterventionRow`] reads back inside it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Intervention {
    pub kind: String,
    pub suite_id: Option<i64>,
    pub run_id: Option<i64>,
    pub task_name: Option<String>,
    pub subject: String,
    pub context_json: String,
}

impl Store {
    pub async fn insert_experiment(&self, run_id: Option<i64>, task_name: &str, config_json: &str) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "INSERT INTO experiments (run_id, task_name, config_json, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
        )
        .bind(run_id)
        .bind(task_name)
        .bind(config_json)
        .bind(now_rfc3339())
        .fetch_one(&self.writer)
        .await?)
    }

    /// The experiment (coordinator invocation) of a run, if it had one.
    pub async fn experiment_of_run(&self, run_id: i64) -> Result<Option<i64>> {
        Ok(sqlx::query_scalar("SELECT id FROM experiments WHERE run_id = $1 ORDER BY id DESC LIMIT 1")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Writes telemetry rows (the `id` field is ignored) in one transaction.
    pub async fn insert_telemetry(&self, rows: &[TelemetryRow]) -> Result<()> {
        let mut tx = self.begin_write().await?;
        for r in rows {
            sqlx::query(
                "INSERT INTO aso_telemetry (timestamp, experiment_id, cycle, trajectory_id, step, status, objective,
                     max_violation, directive_action, directive_source, evals_used, wall_time_ms, llm_call_made,
                     diagnostics_json, directive_json)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
            )
            .bind(&r.timestamp)
            .bind(r.experiment_id)
            .bind(r.cycle)
            .bind(r.trajectory_id)
            .bind(r.step)
            .bind(&r.status)
            .bind(r.objective)
            .bind(r.max_violation)
            .bind(&r.directive_action)
            .bind(&r.directive_source)
            .bind(r.evals_used)
            .bind(r.wall_time_ms)
            .bind(i64::from(r.llm_call_made))
            .bind(&r.diagnostics_json)
            .bind(&r.directive_json)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    pub async fn telemetry_of_experiment(&self, experiment_id: i64) -> Result<Vec<TelemetryRow>> {
        Ok(sqlx::query_as("SELECT * FROM aso_telemetry WHERE experiment_id = $1 ORDER BY trajectory_id, step, id")
            .bind(experiment_id)
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn insert_intervention(&self, i: &Intervention) -> Result<i64> {
        let mut conn = self.writer.acquire().await?;
        insert_question(&mut conn, i).await
    }

    /// Whether a question of `kind` about `task` proposing `action` (its
    /// context's `proposed_action`) still waits for an answer.
    pub async fn pending_question_exists(&self, kind: &str, task: &str, action: &str) -> Result<bool> {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM interventions WHERE status = 'pending' AND kind = $1 AND task_name = $2
             AND {} = $3",
            self.backend.json_text("context_json", &["proposed_action"])
        ))
        .bind(kind)
        .bind(task)
        .bind(action)
        .fetch_one(&self.pool)
        .await?;
        Ok(n > 0)
    }

    /// Records a notice: an intervention nobody waits on (status `notice`),
    /// shown in the inbox until dismissed.
    pub async fn insert_notice(&self, i: &Intervention) -> Result<i64> {
        let mut conn = self.writer.acquire().await?;
        insert_row(&mut conn, i, "notice").await
    }

    /// Interventions: pending questions, then open notices, then the settled
    /// ones (answered questions, dismissed notices), each newest first;
    /// `pending_only` keeps the questions waiting for an answer (oldest first).
    pub async fn interventions(&self, pending_only: bool) -> Result<Vec<InterventionRow>> {
        let sql = if pending_only {
            "SELECT * FROM interventions WHERE status = 'pending' ORDER BY id"
        } else {
            "SELECT * FROM interventions
             ORDER BY CASE status WHEN 'pending' THEN 0 WHEN 'notice' THEN 1 ELSE 2 END, id DESC"
        };
        Ok(sqlx::query_as(sql).fetch_all(&self.pool).await?)
    }

    /// The notices not yet dismissed, oldest first.
    pub async fn open_notices(&self) -> Result<Vec<InterventionRow>> {
        Ok(sqlx::query_as("SELECT * FROM interventions WHERE status = 'notice' ORDER BY id")
            .fetch_all(&self.pool)
            .await?)
    }

    /// Sets a notice aside; `false` when it does not exist, is a question, or
    /// was dismissed already.
    pub async fn dismiss_notice(&self, id: i64) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE interventions SET status = 'dismissed', answered_at = $1 WHERE id = $2 AND status = 'notice'",
        )
        .bind(now_rfc3339())
        .bind(id)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Closes a question nobody answered in time (status `dismissed`, the
    /// reason kept as its answer text), so no question stays open after the
    /// run that asked it went on without it; `false` when it was not pending.
    pub async fn close_question(&self, id: i64, reason: &str) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE interventions SET status = 'dismissed', answer_text = $1, answered_at = $2
             WHERE id = $3 AND status = 'pending'",
        )
        .bind(reason)
        .bind(now_rfc3339())
        .bind(id)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn intervention(&self, id: i64) -> Result<Option<InterventionRow>> {
        Ok(sqlx::query_as("SELECT * FROM interventions WHERE id = $1").bind(id).fetch_optional(&self.pool).await?)
    }

    /// Records an answer; `false` when the intervention does not exist or was
    /// already answered (answers are never overwritten).
    pub async fn answer_intervention(&self, id: i64, answer: &str, text: Option<&str>) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE interventions SET status = 'answered', answer = $1, answer_text = $2, answered_at = $3
             WHERE id = $4 AND status = 'pending'",
        )
        .bind(answer)
        .bind(text)
        .bind(now_rfc3339())
        .bind(id)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Answered interventions of one kind about one task, oldest first: a
    /// person's answers keep steering later runs of that task.
    pub async fn answered_for_task(&self, task_name: &str, kind: &str) -> Result<Vec<InterventionRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM interventions WHERE task_name = $1 AND kind = $2 AND status = 'answered' ORDER BY id",
        )
        .bind(task_name)
        .bind(kind)
        .fetch_all(&self.pool)
        .await?)
    }
}

/// Writes a question to the inbox on `conn` — alone, or inside the
/// transaction that writes what it asks about; returns its id.
pub(super) async fn insert_question(conn: &mut sqlx::AnyConnection, i: &Intervention) -> Result<i64> {
    insert_row(conn, i, "pending").await
}

/// One row of `interventions` in `status` (a `pending` question or a `notice`).
async fn insert_row(conn: &mut sqlx::AnyConnection, i: &Intervention, status: &str) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "INSERT INTO interventions (kind, status, suite_id, run_id, task_name, subject, context_json, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
    )
    .bind(&i.kind)
    .bind(status)
    .bind(i.suite_id)
    .bind(i.run_id)
    .bind(&i.task_name)
    .bind(&i.subject)
    .bind(&i.context_json)
    .bind(now_rfc3339())
    .fetch_one(&mut *conn)
    .await?)
}
