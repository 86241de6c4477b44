//! Read queries behind the app's screens (the service facade): whole-suite
//! reads in one query each, so a chart of 500 epochs × 50 tasks costs three
//! round trips instead of one per epoch.
//!
//! The run rows read here leave out stdout, stderr and the raw result: those
//! are up to 64 KiB each and only the run detail screen shows them.

use serde::Serialize;

use super::{EpochRunRow, Result, Store, SuiteRow};

/// A run without its captured output: what tables and charts need.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct RunBrief {
    pub id: i64,
    pub suite_id: i64,
    pub epoch_id: i64,
    pub task_name: String,
    pub kind: String,
    pub status: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub duration_ms: Option<i64>,
    pub exit_code: Option<i64>,
    pub loss: Option<f64>,
    pub loss_breakdown_json: Option<String>,
    pub error: Option<String>,
}

/// A run an epoch counts, with the status of that run: everything the
/// charts need per task and epoch, and no more (no scores, no breakdown).
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct CountedRun {
    pub epoch_id: i64,
    pub run_id: i64,
    pub task_name: String,
    pub loss: f64,
    pub status: String,
}

/// A run an epoch counts, with what its harness wrote: what a decision pairs
/// and the flipped examples compare (the examples live in `result_json`),
/// without the output and the rest of the run row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CountedResult {
    pub epoch_id: i64,
    pub task_name: String,
    pub loss: f64,
    pub result_json: Option<String>,
}

/// Which of a suite's epochs a read covers: all of them, a page counted
/// from the newest (the API pages a long history), or one epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpochWindow {
    All,
    Newest {
        offset: u32,
        limit: u32,
    },
    /// The newest page of epochs `first..=last` (by number).
    NewestOf {
        first: i64,
        last: i64,
        offset: u32,
        limit: u32,
    },
    Epoch(i64),
}

/// A suite's state in one read: its epochs counted (all, closed), the last
/// closed epoch's mean loss, whether a person must act on it, and its model
/// spend. The Runs and Charts screens ask for it with every page, so it is
/// one statement rather than six (under 20 clients at once each round trip
/// through the pool's worker threads showed in the latency).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SuiteState {
    pub total: i64,
    pub completed: i64,
    pub latest_mean: Option<f64>,
    /// A trajectory paused on a question, or a run waiting on an update's approval.
    pub waiting_on_a_person: bool,
    /// Its watched file's commands wait for approval.
    pub awaiting_approval: bool,
    pub spend: crate::domain::ModelSpend,
}

/// [`SuiteState`] as its statement reads it.
#[derive(sqlx::FromRow)]
struct SuiteStateRow {
    total: i64,
    completed: i64,
    latest_mean: Option<f64>,
    waiting: i64,
    awaiting: i64,
    #[sqlx(flatten)]
    spend: super::model_calls::SpendSums,
}

impl Store {
    /// The epochs of a window, oldest first.
    pub async fn epochs_in(&self, suite_id: i64, window: EpochWindow) -> Result<Vec<super::EpochRow>> {
        match window {
            EpochWindow::All => self.epochs(suite_id).await,
            EpochWindow::Epoch(id) => Ok(sqlx::query_as("SELECT * FROM epochs WHERE suite_id = $1 AND id = $2")
                .bind(suite_id)
                .bind(id)
                .fetch_all(&self.pool)
                .await?),
            // The whole history is epochs 0..=MAX; a launch's, first..=last.
            EpochWindow::Newest { offset, limit } => self.newest_epochs(suite_id, (0, i64::MAX), offset, limit).await,
            EpochWindow::NewestOf { first, last, offset, limit } => {
                self.newest_epochs(suite_id, (first, last), offset, limit).await
            }
        }
    }

    /// A page of the newest epochs numbered `first..=last`, oldest first.
    async fn newest_epochs(
        &self,
        suite_id: i64,
        (first, last): (i64, i64),
        offset: u32,
        limit: u32,
    ) -> Result<Vec<super::EpochRow>> {
        let mut rows: Vec<super::EpochRow> = sqlx::query_as(
            "SELECT * FROM epochs WHERE suite_id = $1 AND epoch_num BETWEEN $2 AND $3
             ORDER BY epoch_num DESC LIMIT $4 OFFSET $5",
        )
        .bind(suite_id)
        .bind(first)
        .bind(last)
        .bind(i64::from(limit))
        .bind(i64::from(offset))
        .fetch_all(&self.pool)
        .await?;
        rows.reverse();
        Ok(rows)
    }

    /// Closed epochs whose artifacts name `artifact` (a text match on the
    /// recorded JSON, which the caller parses to be sure: a `_` or `%` in
    /// the name only widens the match), in no order.
    pub async fn closed_epochs_naming(&self, artifact: &str) -> Result<Vec<super::EpochRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM epochs WHERE completed_at IS NOT NULL
             AND (parent_artifacts_json LIKE $1 OR child_artifacts_json LIKE $1)",
        )
        .bind(format!("%\"{artifact}\"%"))
        .fetch_all(&self.pool)
        .await?)
    }

    /// The kinds of task each of these epochs ran (`command`, `agent`,
    /// `optimize`…), as (epoch id, kind) pairs.
    pub async fn run_kinds_of_epochs(&self, epoch_ids: &[i64]) -> Result<Vec<(i64, String)>> {
        if epoch_ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(&format!(
            "SELECT DISTINCT epoch_id, kind FROM runs WHERE epoch_id IN ({})",
            self.backend.json_ids(1)
        ))
        .bind(serde_json::to_string(epoch_ids)?)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The ids of a suite's closed epochs, in epoch order.
    pub async fn closed_epoch_ids(&self, suite_id: i64) -> Result<Vec<i64>> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM epochs WHERE suite_id = $1 AND completed_at IS NOT NULL ORDER BY epoch_num",
        )
        .bind(suite_id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Some epochs by id, in epoch order.
    pub async fn epochs_by_ids(&self, ids: &[i64]) -> Result<Vec<super::EpochRow>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(&format!(
            "SELECT * FROM epochs WHERE id IN ({}) ORDER BY epoch_num",
            self.backend.json_ids(1)
        ))
        .bind(serde_json::to_string(ids)?)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The suite's state ([`SuiteState`]) in one statement.
    pub async fn suite_state(&self, suite_id: i64) -> Result<SuiteState> {
        let row: SuiteStateRow = sqlx::query_as(&format!(
            "SELECT t.total, t.completed, {latest} AS latest_mean,
                    CAST(CASE WHEN $1 IN ({waiting}) THEN 1 ELSE 0 END AS BIGINT) AS waiting,
                    CAST(CASE WHEN $1 IN ({awaiting}) THEN 1 ELSE 0 END AS BIGINT) AS awaiting,
                    m.*
             FROM (SELECT COUNT(*) AS total,
                          CAST(COALESCE(SUM(CASE WHEN completed_at IS NOT NULL THEN 1 ELSE 0 END), 0) AS BIGINT) AS completed
                   FROM epochs WHERE suite_id = $1) t,
                  (SELECT {spend} FROM model_calls WHERE suite_id = $1) m",
            latest = self.latest_mean_sql("$1"),
            waiting = super::agent::SUITES_WAITING_ON_A_PERSON,
            awaiting = super::watch::SUITES_AWAITING_APPROVAL,
            spend = super::model_calls::SPEND_COLUMNS,
        ))
        .bind(suite_id)
        .fetch_one(&self.pool)
        .await?;
        Ok(SuiteState {
            total: row.total,
            completed: row.completed,
            latest_mean: row.latest_mean,
            waiting_on_a_person: row.waiting != 0,
            awaiting_approval: row.awaiting != 0,
            spend: row.spend.into(),
        })
    }

    /// The runs of some epochs (counted or not), in start order, without output.
    pub async fn run_briefs_of_epochs(&self, epoch_ids: &[i64]) -> Result<Vec<RunBrief>> {
        if epoch_ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(&format!(
            "SELECT id, suite_id, epoch_id, task_name, kind, status, started_at, finished_at, duration_ms,
                    exit_code, loss, loss_breakdown_json, error
             FROM runs WHERE epoch_id IN ({}) ORDER BY id",
            self.backend.json_ids(1)
        ))
        .bind(serde_json::to_string(epoch_ids)?)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The runs some epochs count, with their statuses (see [`Self::counted_runs_of_suite`]).
    pub async fn counted_runs_of_epochs(&self, epoch_ids: &[i64]) -> Result<Vec<CountedRun>> {
        if epoch_ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(&format!(
            "SELECT er.epoch_id, er.run_id, er.task_name, er.loss, r.status
             FROM epoch_runs er JOIN runs r ON r.id = er.run_id
             WHERE er.epoch_id IN ({}) ORDER BY er.epoch_id, er.task_name",
            self.backend.json_ids(1)
        ))
        .bind(serde_json::to_string(epoch_ids)?)
        .fetch_all(&self.pool)
        .await?)
    }

    /// [`CountedResult`]s of some epochs, in epoch then task order.
    pub async fn counted_results_of_epochs(&self, epoch_ids: &[i64]) -> Result<Vec<CountedResult>> {
        if epoch_ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(&format!(
            "SELECT er.epoch_id, er.task_name, er.loss, r.result_json
             FROM epoch_runs er JOIN runs r ON r.id = er.run_id
             WHERE er.epoch_id IN ({}) ORDER BY er.epoch_id, er.task_name",
            self.backend.json_ids(1)
        ))
        .bind(serde_json::to_string(epoch_ids)?)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn suite_by_id(&self, id: i64) -> Result<Option<SuiteRow>> {
        Ok(sqlx::query_as("SELECT * FROM task_suites WHERE id = $1").bind(id).fetch_optional(&self.pool).await?)
    }

    /// Every run of a suite (counted or not), in start order, without output.
    pub async fn run_briefs_of_suite(&self, suite_id: i64) -> Result<Vec<RunBrief>> {
        Ok(sqlx::query_as(
            "SELECT id, suite_id, epoch_id, task_name, kind, status, started_at, finished_at, duration_ms,
                    exit_code, loss, loss_breakdown_json, error
             FROM runs WHERE suite_id = $1 ORDER BY id",
        )
        .bind(suite_id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The `epoch_runs` rows (the runs that count) of every epoch of a suite.
    pub async fn epoch_runs_of_suite(&self, suite_id: i64) -> Result<Vec<EpochRunRow>> {
        Ok(sqlx::query_as(
            "SELECT er.* FROM epoch_runs er JOIN epochs e ON e.id = er.epoch_id
             WHERE e.suite_id = $1 ORDER BY e.epoch_num, er.task_name",
        )
        .bind(suite_id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The runs every epoch of a suite counts, with their statuses, in one
    /// lean read: at 500 epochs × 50 tasks this is what keeps the charts'
    /// request fast (the run rows with their loss breakdowns are several
    /// times the data).
    pub async fn counted_runs_of_suite(&self, suite_id: i64) -> Result<Vec<CountedRun>> {
        Ok(sqlx::query_as(
            "SELECT er.epoch_id, er.run_id, er.task_name, er.loss, r.status
             FROM epoch_runs er JOIN epochs e ON e.id = er.epoch_id JOIN runs r ON r.id = er.run_id
             WHERE e.suite_id = $1 ORDER BY e.epoch_num, er.task_name",
        )
        .bind(suite_id)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn epoch_by_id(&self, epoch_id: i64) -> Result<Option<super::EpochRow>> {
        Ok(sqlx::query_as("SELECT * FROM epochs WHERE id = $1").bind(epoch_id).fetch_optional(&self.pool).await?)
    }

    /// The epoch number each stored artifact version was created in, keyed by
    /// epoch id (for the artifact history screen).
    pub async fn epoch_nums(&self, epoch_ids: &[i64]) -> Result<Vec<(i64, i64, String)>> {
        if epoch_ids.is_empty() {
            return Ok(Vec::new());
        }
        // json_each keeps the statement fixed whatever the number of ids.
        let ids = serde_json::to_string(epoch_ids)?;
        Ok(sqlx::query_as(&format!(
            "SELECT e.id, e.epoch_num, s.name FROM epochs e JOIN task_suites s ON s.id = e.suite_id
             WHERE e.id IN ({})",
            self.backend.json_ids(1)
        ))
        .bind(ids)
        .fetch_all(&self.pool)
        .await?)
    }

    /// How many interventions wait for an answer (the inbox badge).
    pub async fn pending_interventions(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM interventions WHERE status = 'pending'")
            .fetch_one(&self.pool)
            .await?)
    }
}
