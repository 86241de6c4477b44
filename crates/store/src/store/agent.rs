//! Rows of agent tasks: trajectories, one observation row per iteration, and
//! the strategy bandit's state per task category.
//!
//! A trajectory row carries its resumable state (`state_json`), rewritten in
//! the same transaction as each new observation row, so what is stored is
//! always a consistent point to continue from.
//!
//! The trajectories of one run form a tree (`parent_id`, `role`, `ordinal`):
//! the run's own at the root, its parallel samples or its subtasks and
//! integration trajectory under it. Only a root is resumed directly; the
//! rest come with it.

use serde::Serialize;

use super::{Result, Store};
use crate::now_rfc3339;

/// A trajectory as stored.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct TrajectoryRow {
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub record: TrajectoryRecord,
    pub status: String,
    pub pending_intervention_id: Option<i64>,
    pub iterations: i64,
    pub tokens_used: i64,
    pub final_level: Option<f64>,
    pub best_sequence: Option<i64>,
    pub result_json: Option<String>,
    pub started_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
}

/// A trajectory as it starts (its place, task, workspace and setup): what
/// the engine writes and what [`TrajectoryRow`] reads back inside it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct TrajectoryRecord {
    pub id: String,
    pub run_id: i64,
    pub suite_id: i64,
    pub epoch_id: i64,
    pub task_name: String,
    pub category: String,
    pub workspace_dir: String,
    pub setup_json: String,
    pub state_json: String,
    /// The trajectory this one belongs to (a parallel group, a split task).
    pub parent_id: Option<String>,
    /// `root`, `parallel`, `sample`, `subtask` or `integration`.
    pub role: String,
    /// Its place among its siblings (1, 2, …; 0 for a root).
    pub ordinal: i64,
}

/// One iteration as stored.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ObservationRow {
    pub id: i64,
    pub trajectory_id: String,
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub record: ObservationRecord,
    pub created_at: String,
}

/// One iteration on its way in (the `id` and `created_at` of
/// [`ObservationRow`] are the store's), read back inside that row.
#[derive(Debug, Clone, Default, Serialize, sqlx::FromRow)]
pub struct ObservationRecord {
    pub sequence: i64,
    pub strategy: String,
    #[sqlx(try_from = "super::Flag")]
    pub forced: bool,
    pub commit_id: String,
    pub files_changed: i64,
    pub lines_changed: i64,
    pub level: f64,
    pub delta: Option<f64>,
    pub attractor: String,
    pub attractor_confidence: f64,
    pub loss_d: f64,
    pub loss_p: f64,
    pub loss_omega: f64,
    pub loss: f64,
    pub grad_l: f64,
    pub directive: String,
    pub rationale: String,
    pub loop_control: String,
    pub next_strategy: Option<String>,
    pub tokens: i64,
    pub wall_time_ms: i64,
    pub applied_edits: i64,
    pub rejected_edits: i64,
    pub summary: String,
    pub verdict_summary: String,
    pub verification_json: Option<String>,
    pub signals_json: String,
    pub overseer_runs_json: String,
    pub execution_json: String,
    pub decision_json: String,
}

/// Where a trajectory stands after an iteration or a pause.
#[derive(Debug, Clone)]
pub struct TrajectoryProgress<'a> {
    pub status: &'a str,
    pub state_json: &'a str,
    pub pending_intervention_id: Option<i64>,
    pub iterations: i64,
    pub tokens_used: i64,
}

/// How a trajectory ended.
#[derive(Debug, Clone)]
pub struct TrajectoryEnd<'a> {
    pub status: &'a str,
    pub state_json: &'a str,
    pub iterations: i64,
    pub tokens_used: i64,
    pub final_level: Option<f64>,
    pub best_sequence: Option<i64>,
    pub result_json: Option<&'a str>,
}

/// A category's bandit state.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct BanditStateRow {
    pub category: String,
    pub state_json: String,
    pub trajectories: i64,
    pub updated_at: String,
}

impl Store {
    pub async fn insert_trajectory(&self, t: &TrajectoryRecord) -> Result<()> {
        let now = now_rfc3339();
        sqlx::query(
            "INSERT INTO trajectories (id, run_id, suite_id, epoch_id, task_name, category, workspace_dir, status,
                 setup_json, state_json, started_at, updated_at, parent_id, role, ordinal)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', $8, $9, $10, $11, $12, $13, $14)",
        )
        .bind(&t.id)
        .bind(t.run_id)
        .bind(t.suite_id)
        .bind(t.epoch_id)
        .bind(&t.task_name)
        .bind(&t.category)
        .bind(&t.workspace_dir)
        .bind(&t.setup_json)
        .bind(&t.state_json)
        .bind(&now)
        .bind(&now)
        .bind(&t.parent_id)
        .bind(&t.role)
        .bind(t.ordinal)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    pub async fn trajectory(&self, id: &str) -> Result<Option<TrajectoryRow>> {
        Ok(sqlx::query_as("SELECT * FROM trajectories WHERE id = $1").bind(id).fetch_optional(&self.pool).await?)
    }

    /// Suites with an unfinished trajectory paused on a question to a
    /// person, or a run waiting for a person's decision on an update (the
    /// approval gate's `wait`).
    pub async fn suites_waiting_on_a_person(&self) -> Result<Vec<i64>> {
        Ok(sqlx::query_scalar(SUITES_WAITING_ON_A_PERSON).fetch_all(&self.pool).await?)
    }

    /// Every trajectory's id, start and finish (benchmarks time iterations by them).
    pub async fn trajectory_spans(&self) -> Result<Vec<(String, String, Option<String>)>> {
        Ok(sqlx::query_as("SELECT id, started_at, finished_at FROM trajectories ORDER BY started_at")
            .fetch_all(&self.pool)
            .await?)
    }

    /// The trajectories a run drove — its own, then the samples, subtasks
    /// and integration trajectories under it — oldest first.
    pub async fn trajectories_of_run(&self, run_id: i64) -> Result<Vec<TrajectoryRow>> {
        Ok(sqlx::query_as("SELECT * FROM trajectories WHERE run_id = $1 ORDER BY started_at, id")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// The trajectories directly under `parent_id`, in their order.
    pub async fn child_trajectories(&self, parent_id: &str) -> Result<Vec<TrajectoryRow>> {
        Ok(sqlx::query_as("SELECT * FROM trajectories WHERE parent_id = $1 ORDER BY ordinal, started_at, id")
            .bind(parent_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// An unfinished run-level trajectory of this task in this epoch whose
    /// run is over (it was cancelled or the process stopped): the one a new
    /// run of the task continues instead of starting afresh (its samples or
    /// subtasks come with it).
    pub async fn resumable_trajectory(&self, epoch_id: i64, task_name: &str) -> Result<Option<TrajectoryRow>> {
        Ok(sqlx::query_as(
            "SELECT t.* FROM trajectories t JOIN runs r ON r.id = t.run_id
             WHERE t.epoch_id = $1 AND t.task_name = $2 AND t.parent_id IS NULL
               AND t.status IN ('running', 'paused', 'coordinating')
               AND r.status <> 'running'
             ORDER BY t.updated_at DESC, t.id DESC LIMIT 1",
        )
        .bind(epoch_id)
        .bind(task_name)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Hands a trajectory, and every trajectory under it, to the run that
    /// continues it.
    pub async fn adopt_trajectory(&self, id: &str, run_id: i64) -> Result<()> {
        sqlx::query(
            "WITH RECURSIVE tree(id) AS (
                 SELECT $1 UNION ALL SELECT t.id FROM trajectories t JOIN tree ON t.parent_id = tree.id)
             UPDATE trajectories SET run_id = $2, updated_at = $3 WHERE id IN (SELECT id FROM tree)",
        )
        .bind(id)
        .bind(run_id)
        .bind(now_rfc3339())
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// Records one iteration and the trajectory's state after it, together.
    pub async fn record_iteration(
        &self,
        trajectory_id: &str,
        o: &ObservationRecord,
        progress: &TrajectoryProgress<'_>,
    ) -> Result<()> {
        let mut tx = self.begin_write().await?;
        let now = now_rfc3339();
        sqlx::query(
            "INSERT INTO trajectory_observations (trajectory_id, sequence, strategy, forced, commit_id, files_changed,
                 lines_changed, level, delta, attractor, attractor_confidence, loss_d, loss_p, loss_omega, loss,
                 grad_l, directive, rationale, loop_control, next_strategy, tokens, wall_time_ms, applied_edits,
                 rejected_edits, summary, verdict_summary, verification_json, signals_json, overseer_runs_json,
                 execution_json, decision_json, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32)",
        )
        .bind(trajectory_id)
        .bind(o.sequence)
        .bind(&o.strategy)
        .bind(i64::from(o.forced))
        .bind(&o.commit_id)
        .bind(o.files_changed)
        .bind(o.lines_changed)
        .bind(o.level)
        .bind(o.delta)
        .bind(&o.attractor)
        .bind(o.attractor_confidence)
        .bind(o.loss_d)
        .bind(o.loss_p)
        .bind(o.loss_omega)
        .bind(o.loss)
        .bind(o.grad_l)
        .bind(&o.directive)
        .bind(&o.rationale)
        .bind(&o.loop_control)
        .bind(&o.next_strategy)
        .bind(o.tokens)
        .bind(o.wall_time_ms)
        .bind(o.applied_edits)
        .bind(o.rejected_edits)
        .bind(&o.summary)
        .bind(&o.verdict_summary)
        .bind(&o.verification_json)
        .bind(&o.signals_json)
        .bind(&o.overseer_runs_json)
        .bind(&o.execution_json)
        .bind(&o.decision_json)
        .bind(&now)
        .execute(&mut *tx)
        .await?;
        update_progress(&mut tx, trajectory_id, progress, &now).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Rewrites a trajectory's state without a new observation (a pause, an answer).
    pub async fn update_trajectory(&self, trajectory_id: &str, progress: &TrajectoryProgress<'_>) -> Result<()> {
        let mut tx = self.begin_write().await?;
        update_progress(&mut tx, trajectory_id, progress, &now_rfc3339()).await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn finish_trajectory(&self, trajectory_id: &str, end: &TrajectoryEnd<'_>) -> Result<()> {
        let now = now_rfc3339();
        sqlx::query(
            "UPDATE trajectories SET status = $1, state_json = $2, pending_intervention_id = NULL, iterations = $3,
                 tokens_used = $4, final_level = $5, best_sequence = $6, result_json = $7, updated_at = $8, finished_at = $9
             WHERE id = $10",
        )
        .bind(end.status)
        .bind(end.state_json)
        .bind(end.iterations)
        .bind(end.tokens_used)
        .bind(end.final_level)
        .bind(end.best_sequence)
        .bind(end.result_json)
        .bind(&now)
        .bind(&now)
        .bind(trajectory_id)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// Every iteration of a trajectory, in order.
    /// A trajectory's iterations, in order — the executions, not the
    /// baseline (see [`Store::baseline_of_trajectory`]).
    pub async fn observations_of_trajectory(&self, trajectory_id: &str) -> Result<Vec<ObservationRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM trajectory_observations WHERE trajectory_id = $1 AND sequence >= 0 ORDER BY sequence",
        )
        .bind(trajectory_id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// A trajectory's iteration 0: its untouched workspace measured before
    /// the first execution (stored as sequence -1), when it was.
    pub async fn baseline_of_trajectory(&self, trajectory_id: &str) -> Result<Option<ObservationRow>> {
        Ok(sqlx::query_as("SELECT * FROM trajectory_observations WHERE trajectory_id = $1 AND sequence = -1")
            .bind(trajectory_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub async fn bandit_state(&self, category: &str) -> Result<Option<BanditStateRow>> {
        Ok(sqlx::query_as("SELECT * FROM bandit_states WHERE category = $1")
            .bind(category)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Rewrites a category's bandit state from what is stored now, under the
    /// write lock: `merge` gets the stored JSON (if any) and returns the new
    /// one. Trajectories of one category that end at the same time each
    /// merge their own learning instead of overwriting each other's.
    pub async fn merge_bandit_state<E>(
        &self,
        category: &str,
        merge: impl FnOnce(Option<&str>) -> std::result::Result<String, E>,
    ) -> Result<std::result::Result<(), E>> {
        let mut tx = self.begin_write().await?;
        let stored: Option<String> = sqlx::query_scalar("SELECT state_json FROM bandit_states WHERE category = $1")
            .bind(category)
            .fetch_optional(&mut *tx)
            .await?;
        let next = match merge(stored.as_deref()) {
            Ok(next) => next,
            Err(e) => return Ok(Err(e)),
        };
        sqlx::query(
            "INSERT INTO bandit_states (category, state_json, trajectories, updated_at) VALUES ($1, $2, 1, $3)
             ON CONFLICT(category) DO UPDATE SET state_json = excluded.state_json,
                 trajectories = bandit_states.trajectories + 1, updated_at = excluded.updated_at",
        )
        .bind(category)
        .bind(&next)
        .bind(now_rfc3339())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok(()))
    }
}

async fn update_progress(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    trajectory_id: &str,
    p: &TrajectoryProgress<'_>,
    now: &str,
) -> Result<()> {
    sqlx::query(
        "UPDATE trajectories SET status = $1, state_json = $2, pending_intervention_id = $3, iterations = $4,
             tokens_used = $5, updated_at = $6 WHERE id = $7",
    )
    .bind(p.status)
    .bind(p.state_json)
    .bind(p.pending_intervention_id)
    .bind(p.iterations)
    .bind(p.tokens_used)
    .bind(now)
    .bind(trajectory_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The ids of the suites waiting on a person (see
/// [`Store::suites_waiting_on_a_person`]); also a subquery of the suite's
/// state in one read (`Store::suite_state`).
pub(crate) const SUITES_WAITING_ON_A_PERSON: &str =
    "SELECT DISTINCT t.suite_id FROM trajectories t JOIN interventions i ON i.id = t.pending_intervention_id
     WHERE t.finished_at IS NULL AND i.status = 'pending'
     UNION
     SELECT DISTINCT suite_id FROM update_approvals WHERE status = 'pending' AND mode = 'wait'";
