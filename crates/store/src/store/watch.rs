//! Rows of the folder watcher: watched folders, the files found in them, the
//! approvals their commands need, and the runs queued for `run: auto` files.
//!
//! Every decision that two processes watching one database could race on —
//! raising an approval question, queueing a run, taking a queued run — is one
//! statement or one `BEGIN IMMEDIATE` transaction, so it happens once.

use serde::Serialize;

use super::{Intervention, Result, Store};
use crate::now_rfc3339;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct WatchedFolderRow {
    pub id: i64,
    pub path: String,
    #[sqlx(try_from = "super::Flag")]
    pub active: bool,
    pub added_at: String,
    pub removed_at: Option<String>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct WatchedFileRow {
    pub id: i64,
    pub folder_id: i64,
    pub path: String,
    pub kind: String,
    pub content_hash: String,
    pub status: String,
    pub issues_json: Option<String>,
    pub error: Option<String>,
    pub suite_id: Option<i64>,
    pub suite_name: Option<String>,
    pub run_mode: String,
    pub approval_key: Option<String>,
    pub first_seen_at: String,
    pub updated_at: String,
    pub removed_at: Option<String>,
}

/// What the watcher learned about a file, on its way into `watched_files`.
#[derive(Debug, Clone, Default)]
pub struct WatchedFileWrite {
    pub folder_id: i64,
    pub path: String,
    pub kind: String,
    pub content_hash: String,
    pub status: String,
    pub issues_json: Option<String>,
    pub error: Option<String>,
    pub suite_id: Option<i64>,
    pub suite_name: Option<String>,
    pub run_mode: String,
    pub approval_key: Option<String>,
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct WatchedRunRow {
    pub id: i64,
    pub file_id: i64,
    pub suite_name: String,
    pub content_hash: String,
    pub status: String,
    pub owner: Option<String>,
    pub launch_id: Option<i64>,
    pub suite_id: Option<i64>,
    pub queued_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub error: Option<String>,
}

/// The approval question of one content, with its state.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ApprovalRow {
    pub approval_key: String,
    pub intervention_id: i64,
    pub commands_json: String,
    /// pending or answered.
    pub status: String,
    /// approve or reject once answered.
    pub answer: Option<String>,
}

impl ApprovalRow {
    pub fn approved(&self) -> bool {
        self.answer.as_deref() == Some("approve")
    }
}

const APPROVAL_SELECT: &str = "SELECT a.approval_key, a.intervention_id, a.commands_json, i.status, i.answer
     FROM execution_approvals a JOIN interventions i ON i.id = a.intervention_id";

impl Store {
    // ----- folders ------------------------------------------------------------

    /// Remembers a folder (or makes a removed one active again).
    pub async fn add_watched_folder(&self, path: &str) -> Result<WatchedFolderRow> {
        Ok(sqlx::query_as(
            "INSERT INTO watched_folders (path, active, added_at) VALUES ($1, 1, $2)
             ON CONFLICT(path) DO UPDATE SET active = 1, removed_at = NULL
             RETURNING *",
        )
        .bind(path)
        .bind(now_rfc3339())
        .fetch_one(&self.writer)
        .await?)
    }

    /// Stops remembering a folder; `false` when it was not watched.
    pub async fn remove_watched_folder(&self, path: &str) -> Result<bool> {
        let done = sqlx::query("UPDATE watched_folders SET active = 0, removed_at = $1 WHERE path = $2 AND active = 1")
            .bind(now_rfc3339())
            .bind(path)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The folders being watched, in the order they were added.
    pub async fn watched_folders(&self) -> Result<Vec<WatchedFolderRow>> {
        Ok(sqlx::query_as("SELECT * FROM watched_folders WHERE active = 1 ORDER BY id").fetch_all(&self.pool).await?)
    }

    // ----- files --------------------------------------------------------------

    pub async fn watched_file_by_path(&self, path: &str) -> Result<Option<WatchedFileRow>> {
        Ok(sqlx::query_as("SELECT * FROM watched_files WHERE path = $1").bind(path).fetch_optional(&self.pool).await?)
    }

    pub async fn watched_file(&self, id: i64) -> Result<Option<WatchedFileRow>> {
        Ok(sqlx::query_as("SELECT * FROM watched_files WHERE id = $1").bind(id).fetch_optional(&self.pool).await?)
    }

    /// The files of the active folders (removed ones included), by path.
    pub async fn watched_files(&self) -> Result<Vec<WatchedFileRow>> {
        Ok(sqlx::query_as(
            "SELECT f.* FROM watched_files f JOIN watched_folders d ON d.id = f.folder_id
             WHERE d.active = 1 AND f.path NOT LIKE '%#removed-%' ORDER BY f.path",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Suites registered from a watched file whose commands wait for a
    /// person's approval.
    pub async fn suites_awaiting_approval(&self) -> Result<Vec<i64>> {
        Ok(sqlx::query_scalar(SUITES_AWAITING_APPROVAL).fetch_all(&self.pool).await?)
    }

    /// The files recorded under one folder that are not marked removed.
    pub async fn present_files_of_folder(&self, folder_id: i64) -> Result<Vec<WatchedFileRow>> {
        Ok(sqlx::query_as("SELECT * FROM watched_files WHERE folder_id = $1 AND status != 'removed' ORDER BY path")
            .bind(folder_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Recorded files with this content at another path: the candidates for
    /// "this new path is that file, moved".
    pub async fn watched_files_with_hash(&self, content_hash: &str, except_path: &str) -> Result<Vec<WatchedFileRow>> {
        Ok(sqlx::query_as("SELECT * FROM watched_files WHERE content_hash = $1 AND path != $2 ORDER BY id")
            .bind(content_hash)
            .bind(except_path)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Another present file that registers `suite_name` with other content:
    /// two files cannot both define one suite.
    pub async fn suite_claimed_elsewhere(
        &self,
        suite_name: &str,
        path: &str,
        content_hash: &str,
    ) -> Result<Option<WatchedFileRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM watched_files
             WHERE suite_name = $1 AND path != $2 AND content_hash != $3
               AND status IN ('awaiting_approval', 'rejected', 'ready')
             ORDER BY id LIMIT 1",
        )
        .bind(suite_name)
        .bind(path)
        .bind(content_hash)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Records what was found at a path (insert or replace by path) and
    /// returns the row.
    pub async fn save_watched_file(&self, f: &WatchedFileWrite) -> Result<WatchedFileRow> {
        let now = now_rfc3339();
        Ok(sqlx::query_as(
            "INSERT INTO watched_files (folder_id, path, kind, content_hash, status, issues_json, error, suite_id,
                 suite_name, run_mode, approval_key, first_seen_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
             ON CONFLICT(path) DO UPDATE SET folder_id = excluded.folder_id, kind = excluded.kind,
                 content_hash = excluded.content_hash, status = excluded.status, issues_json = excluded.issues_json,
                 error = excluded.error, suite_id = excluded.suite_id, suite_name = excluded.suite_name,
                 run_mode = excluded.run_mode, approval_key = excluded.approval_key,
                 updated_at = excluded.updated_at, removed_at = NULL
             RETURNING *",
        )
        .bind(f.folder_id)
        .bind(&f.path)
        .bind(&f.kind)
        .bind(&f.content_hash)
        .bind(&f.status)
        .bind(&f.issues_json)
        .bind(&f.error)
        .bind(f.suite_id)
        .bind(&f.suite_name)
        .bind(&f.run_mode)
        .bind(&f.approval_key)
        .bind(&now)
        .bind(&now)
        .fetch_one(&self.writer)
        .await?)
    }

    /// Moves a file's row to a new path (a rename: same content). A row that
    /// was marked removed comes back with `status`. Any older row at the new
    /// path gives way first (paths are unique).
    pub async fn move_watched_file(
        &self,
        id: i64,
        new_path: &str,
        folder_id: i64,
        status: &str,
    ) -> Result<WatchedFileRow> {
        let mut tx = self.begin_write().await?;
        let now = now_rfc3339();
        // A stale row at the destination (a file deleted there earlier) is
        // parked under a tombstone path so the moved row can take its place.
        sqlx::query(
            "UPDATE watched_files SET path = path || '#removed-' || id, status = 'removed',
                 removed_at = COALESCE(removed_at, $1)
             WHERE path = $2 AND id != $3",
        )
        .bind(&now)
        .bind(new_path)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let row = sqlx::query_as(
            "UPDATE watched_files SET path = $1, folder_id = $2, status = $3, removed_at = NULL, updated_at = $4
             WHERE id = $5 RETURNING *",
        )
        .bind(new_path)
        .bind(folder_id)
        .bind(status)
        .bind(&now)
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(row)
    }

    /// Marks a file removed and drops its queued (not started) runs; a run
    /// in progress goes on. `false` when it was already marked.
    pub async fn mark_watched_file_removed(&self, id: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let now = now_rfc3339();
        let done = sqlx::query(
            "UPDATE watched_files SET status = 'removed', removed_at = $1, updated_at = $2
             WHERE id = $3 AND status != 'removed'",
        )
        .bind(&now)
        .bind(&now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE watched_runs SET status = 'dropped', finished_at = $1,
                 error = 'the file was removed before its run started'
             WHERE file_id = $2 AND status = 'queued'",
        )
        .bind(&now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn set_watched_file_status(&self, id: i64, status: &str) -> Result<()> {
        sqlx::query("UPDATE watched_files SET status = $1, updated_at = $2 WHERE id = $3")
            .bind(status)
            .bind(now_rfc3339())
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    // ----- approvals ----------------------------------------------------------

    /// The approval question for `approval_key`, raising it (the intervention
    /// built by `question`) when there is none yet. Returns the question and
    /// whether this call raised it. One transaction: two watchers of one
    /// database never ask twice.
    pub async fn ensure_execution_approval(
        &self,
        approval_key: &str,
        content_hash: &str,
        commands_json: &str,
        question: &Intervention,
    ) -> Result<(ApprovalRow, bool)> {
        let mut tx = self.begin_write().await?;
        let existing: Option<ApprovalRow> = sqlx::query_as(&format!("{APPROVAL_SELECT} WHERE a.approval_key = $1"))
            .bind(approval_key)
            .fetch_optional(&mut *tx)
            .await?;
        if let Some(row) = existing {
            tx.commit().await?;
            return Ok((row, false));
        }
        let now = now_rfc3339();
        let intervention_id = super::aso::insert_question(&mut tx, question).await?;
        sqlx::query(
            "INSERT INTO execution_approvals (approval_key, content_hash, intervention_id, commands_json, created_at)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(approval_key)
        .bind(content_hash)
        .bind(intervention_id)
        .bind(commands_json)
        .bind(&now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let row = ApprovalRow {
            approval_key: approval_key.to_string(),
            intervention_id,
            commands_json: commands_json.to_string(),
            status: "pending".into(),
            answer: None,
        };
        Ok((row, true))
    }

    pub async fn execution_approval(&self, approval_key: &str) -> Result<Option<ApprovalRow>> {
        Ok(sqlx::query_as(&format!("{APPROVAL_SELECT} WHERE a.approval_key = $1"))
            .bind(approval_key)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Every approval question with its state.
    pub async fn execution_approvals(&self) -> Result<Vec<ApprovalRow>> {
        Ok(sqlx::query_as(&format!("{APPROVAL_SELECT} ORDER BY a.intervention_id")).fetch_all(&self.pool).await?)
    }

    /// Files waiting for an approval that has been answered since (here or
    /// by another process), with the answer.
    pub async fn answered_approvals_of_waiting_files(&self) -> Result<Vec<(i64, String)>> {
        Ok(sqlx::query_as(
            "SELECT f.id, i.answer FROM watched_files f
             JOIN execution_approvals a ON a.approval_key = f.approval_key
             JOIN interventions i ON i.id = a.intervention_id
             WHERE f.status = 'awaiting_approval' AND i.status = 'answered'",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    // ----- runs ---------------------------------------------------------------

    /// Queues one run of a suite's content. Nothing happens when that suite
    /// and content already has a run (queued, running or done), except that a
    /// run dropped because its file disappeared is queued again (the file is
    /// back: a rename). Returns the run when it is newly queued.
    pub async fn queue_watched_run(
        &self,
        file_id: i64,
        suite_name: &str,
        content_hash: &str,
    ) -> Result<Option<WatchedRunRow>> {
        let now = now_rfc3339();
        let inserted: Option<WatchedRunRow> = sqlx::query_as(
            "INSERT INTO watched_runs (file_id, suite_name, content_hash, status, queued_at)
             VALUES ($1, $2, $3, 'queued', $4)
             ON CONFLICT(suite_name, content_hash) DO NOTHING RETURNING *",
        )
        .bind(file_id)
        .bind(suite_name)
        .bind(content_hash)
        .bind(&now)
        .fetch_optional(&self.writer)
        .await?;
        if inserted.is_some() {
            return Ok(inserted);
        }
        Ok(sqlx::query_as(
            "UPDATE watched_runs SET status = 'queued', file_id = $1, queued_at = $2, finished_at = NULL, error = NULL
             WHERE suite_name = $3 AND content_hash = $4 AND status = 'dropped' RETURNING *",
        )
        .bind(file_id)
        .bind(&now)
        .bind(suite_name)
        .bind(content_hash)
        .fetch_optional(&self.writer)
        .await?)
    }

    /// Takes the oldest queued run whose file is present, ready and in an
    /// active folder, marking it running for `owner`. Runs in `skip` are
    /// passed over (their suite is busy right now).
    pub async fn claim_watched_run(&self, owner: &str, skip: &[i64]) -> Result<Option<WatchedRunRow>> {
        let skip = serde_json::to_string(skip)?;
        Ok(sqlx::query_as(&format!(
            "UPDATE watched_runs SET status = 'running', owner = $1, started_at = $2
             WHERE id = (
                 SELECT r.id FROM watched_runs r
                 JOIN watched_files f ON f.id = r.file_id
                 JOIN watched_folders d ON d.id = f.folder_id
                 WHERE r.status = 'queued' AND f.status = 'ready' AND d.active = 1
                   AND r.id NOT IN ({})
                 ORDER BY r.id LIMIT 1)
               AND status = 'queued'
             RETURNING *",
            self.backend.json_ids(3)
        ))
        .bind(owner)
        .bind(now_rfc3339())
        .bind(skip)
        .fetch_optional(&self.writer)
        .await?)
    }

    /// Records where a run got to. `finished` stamps the end time.
    pub async fn update_watched_run(
        &self,
        id: i64,
        status: &str,
        launch_id: Option<i64>,
        suite_id: Option<i64>,
        error: Option<&str>,
    ) -> Result<Option<WatchedRunRow>> {
        let ended = matches!(status, "finished" | "failed" | "cancelled" | "dropped");
        Ok(sqlx::query_as(
            "UPDATE watched_runs SET status = $1, launch_id = COALESCE($2, launch_id), suite_id = COALESCE($3, suite_id),
                 error = $4, finished_at = CASE WHEN $5 THEN $6 ELSE NULL END,
                 owner = CASE WHEN $7 = 'queued' THEN NULL ELSE owner END
             WHERE id = $8 RETURNING *",
        )
        .bind(status)
        .bind(launch_id)
        .bind(suite_id)
        .bind(error)
        .bind(ended)
        .bind(now_rfc3339())
        .bind(status)
        .bind(id)
        .fetch_optional(&self.writer)
        .await?)
    }

    /// Runs marked running by an owner that `alive` says is gone (a crash, or
    /// a stop that cancelled them) go back to the queue: the unfinished
    /// epoch resumes, so nothing is lost and nothing runs twice.
    pub async fn requeue_orphaned_runs(&self, alive: impl Fn(&str) -> bool) -> Result<Vec<WatchedRunRow>> {
        let running: Vec<WatchedRunRow> =
            sqlx::query_as("SELECT * FROM watched_runs WHERE status = 'running'").fetch_all(&self.pool).await?;
        let mut out = Vec::new();
        for r in running {
            if r.owner.as_deref().is_some_and(&alive) {
                continue;
            }
            let back: Option<WatchedRunRow> = sqlx::query_as(
                "UPDATE watched_runs SET status = 'queued', owner = NULL, launch_id = NULL
                 WHERE id = $1 AND status = 'running' AND owner IS NOT DISTINCT FROM $2 RETURNING *",
            )
            .bind(r.id)
            .bind(&r.owner)
            .fetch_optional(&self.writer)
            .await?;
            out.extend(back);
        }
        Ok(out)
    }

    pub async fn watched_run(&self, id: i64) -> Result<Option<WatchedRunRow>> {
        Ok(sqlx::query_as("SELECT * FROM watched_runs WHERE id = $1").bind(id).fetch_optional(&self.pool).await?)
    }

    /// Every watched run, oldest first.
    pub async fn watched_runs(&self) -> Result<Vec<WatchedRunRow>> {
        Ok(sqlx::query_as("SELECT * FROM watched_runs ORDER BY id").fetch_all(&self.pool).await?)
    }
}

/// The ids of the suites whose watched file's commands wait for approval
/// (see [`Store::suites_awaiting_approval`]); also a subquery of
/// `Store::suite_state`.
pub(crate) const SUITES_AWAITING_APPROVAL: &str =
    "SELECT DISTINCT f.suite_id FROM watched_files f JOIN watched_folders d ON d.id = f.folder_id
     WHERE d.active = 1 AND f.status = 'awaiting_approval' AND f.suite_id IS NOT NULL";
