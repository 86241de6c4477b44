//! A suite's history as the outer loop records it: the suite, its epochs
//! (an epoch closes in one transaction with its artifact moves and
//! proposals), the runs of each epoch, and the events published meanwhile.

use super::artifacts::{activate, insert_version};
use super::*;

impl Store {
    /// Records a suite (or refreshes its task list) and returns its id. The
    /// suite's name is its identity across runs. `source` is the file it was
    /// read from, when there is one (kept from an earlier run otherwise).
    pub async fn upsert_suite(
        &self,
        name: &str,
        tasks_json: &str,
        baseline_json: &str,
        source: Option<&str>,
    ) -> Result<i64> {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO task_suites (name, tasks_json, baseline_artifacts_json, created_at, source_path)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT(name) DO UPDATE SET tasks_json = excluded.tasks_json,
                 baseline_artifacts_json = excluded.baseline_artifacts_json,
                 source_path = COALESCE(excluded.source_path, task_suites.source_path)
             RETURNING id",
        )
        .bind(name)
        .bind(tasks_json)
        .bind(baseline_json)
        .bind(now_rfc3339())
        .bind(source)
        .fetch_one(&self.writer)
        .await?;
        Ok(id)
    }

    pub async fn suite_by_name(&self, name: &str) -> Result<Option<SuiteRow>> {
        Ok(sqlx::query_as("SELECT * FROM task_suites WHERE name = $1").bind(name).fetch_optional(&self.pool).await?)
    }

    /// Every suite with its epoch count and latest mean loss.
    pub async fn suite_summaries(&self) -> Result<Vec<SuiteSummary>> {
        Ok(sqlx::query_as(&format!(
            "SELECT s.id, s.name, s.created_at, s.source_path,
                    (SELECT COUNT(*) FROM epochs e WHERE e.suite_id = s.id AND e.completed_at IS NOT NULL) AS epochs,
                    {} AS latest_mean_loss,
                    (SELECT COUNT(*) FROM epochs e WHERE e.suite_id = s.id AND e.completed_at IS NULL) AS unfinished
             FROM task_suites s ORDER BY s.name",
            self.latest_mean_sql("s.id")
        ))
        .fetch_all(&self.pool)
        .await?)
    }

    /// The suite's latest mean loss: its last closed epoch's — unless a tree
    /// search closed it, whose epochs each measured one candidate (most of
    /// them discarded): then the best node it kept, whose versions the
    /// search made active.
    pub(crate) fn latest_mean_sql(&self, suite_id: &str) -> String {
        let note = self.backend.json_text("e.child_artifacts_json", &["note"]);
        let tree = crate::domain::TREE_EPOCH;
        format!(
            "(SELECT CASE WHEN {note} LIKE '{tree}%'
                          THEN (SELECT MIN(n.mean_loss) FROM tree_nodes n
                                WHERE n.suite_id = e.suite_id AND n.status IN ('committed', 'pruned'))
                          ELSE e.mean_loss END
              FROM epochs e WHERE e.suite_id = {suite_id} AND e.completed_at IS NOT NULL
              ORDER BY e.epoch_num DESC LIMIT 1)"
        )
    }

    // ----- epochs -------------------------------------------------------------

    pub async fn insert_epoch(&self, suite_id: i64, epoch_num: i64, parent_artifacts_json: &str) -> Result<EpochRow> {
        Ok(sqlx::query_as(
            "INSERT INTO epochs (suite_id, epoch_num, started_at, parent_artifacts_json)
             VALUES ($1, $2, $3, $4) RETURNING *",
        )
        .bind(suite_id)
        .bind(epoch_num)
        .bind(now_rfc3339())
        .bind(parent_artifacts_json)
        .fetch_one(&self.writer)
        .await?)
    }

    pub async fn epochs(&self, suite_id: i64) -> Result<Vec<EpochRow>> {
        Ok(sqlx::query_as("SELECT * FROM epochs WHERE suite_id = $1 ORDER BY epoch_num")
            .bind(suite_id)
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn last_epoch(&self, suite_id: i64) -> Result<Option<EpochRow>> {
        Ok(sqlx::query_as("SELECT * FROM epochs WHERE suite_id = $1 ORDER BY epoch_num DESC LIMIT 1")
            .bind(suite_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// η as the suite's last closed epoch left it (`None` before the first,
    /// or for records written before η was kept); a value outside [0, 1] —
    /// a database edited by hand — is not used.
    pub async fn last_learning_rate(&self, suite_id: i64) -> Result<Option<f64>> {
        let lr_of = self.backend.json_number("child_artifacts_json", "learning_rate");
        let lr: Option<f64> = sqlx::query_scalar(&format!(
            "SELECT {lr_of} FROM epochs
             WHERE suite_id = $1 AND completed_at IS NOT NULL AND {lr_of} IS NOT NULL
             ORDER BY epoch_num DESC LIMIT 1"
        ))
        .bind(suite_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(lr.filter(|v| (0.0..=1.0).contains(v)))
    }

    /// The last completed epoch of a suite.
    pub async fn last_completed_epoch(&self, suite_id: i64) -> Result<Option<EpochRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM epochs WHERE suite_id = $1 AND completed_at IS NOT NULL ORDER BY epoch_num DESC LIMIT 1",
        )
        .bind(suite_id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Closes an epoch in one transaction: applies the artifact changes the
    /// optimizer decided on, then writes the mean loss and the child artifact
    /// log that `child_json` builds from the version numbers the changes got.
    /// A crash leaves either the whole step or none of it.
    pub async fn complete_epoch(
        &self,
        epoch_id: i64,
        mean_loss: Option<f64>,
        close: &EpochClose,
        child_json: impl FnOnce(&[i64]) -> String,
    ) -> Result<Vec<i64>> {
        let changes = &close.changes;
        let mut tx = self.begin_write().await?;
        let mut versions = Vec::with_capacity(changes.len());
        for change in changes {
            match change {
                ArtifactChange::Update { name, content, parent_version } => {
                    let v = insert_version(&mut tx, name, content, *parent_version, Some(epoch_id)).await?;
                    activate(&mut tx, name, v).await?;
                    versions.push(v);
                }
                ArtifactChange::Activate { name, version } => {
                    if !activate(&mut tx, name, *version).await? {
                        return Err(StoreError::Conflict(format!("artifact `{name}` has no version {version}")));
                    }
                    versions.push(*version);
                }
            }
        }
        // The winner (if any) became the version of the first update.
        let applied = changes.iter().zip(&versions).find_map(|(c, v)| match c {
            ArtifactChange::Update { name, .. } => Some((name.clone(), *v)),
            ArtifactChange::Activate { .. } => None,
        });
        if let (Some(id), Some((_, v))) = (close.applied_approval, &applied) {
            approvals::mark_applied(&mut tx, id, *v, Some(epoch_id)).await?;
        }
        let suite_id: i64 =
            sqlx::query_scalar("SELECT suite_id FROM epochs WHERE id = $1").bind(epoch_id).fetch_one(&mut *tx).await?;
        for p in &close.proposals {
            let applied_version = match (&applied, p.outcome) {
                (Some((name, v)), ProposalOutcome::Winner) if *name == p.artifact => Some(*v),
                _ => None,
            };
            proposals::insert_proposal(&mut tx, suite_id, epoch_id, p, applied_version).await?;
        }
        if let Some(o) = &close.observed {
            sqlx::query(
                // The judged epoch's own winner, or the gated update it
                // applied (proposed in an earlier epoch, approved later).
                "UPDATE proposals SET observed_loss_reduction = $1, rolled_back = $2, decision_json = $3
                 WHERE outcome = 'winner' AND (epoch_id = $4 OR EXISTS (
                     SELECT 1 FROM update_approvals a WHERE a.applied_epoch_id = $4
                         AND a.epoch_id = proposals.epoch_id AND a.artifact = proposals.artifact))",
            )
            .bind(o.loss_reduction)
            .bind(i64::from(o.rolled_back))
            .bind(o.evidence.as_ref().map(serde_json::to_string).transpose()?)
            .bind(o.epoch_id)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query("UPDATE epochs SET completed_at = $1, mean_loss = $2, child_artifacts_json = $3 WHERE id = $4")
            .bind(now_rfc3339())
            .bind(mean_loss)
            .bind(child_json(&versions))
            .bind(epoch_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(versions)
    }

    // ----- runs ---------------------------------------------------------------

    /// Records that a run started and returns its id. `task_digest` is the
    /// digest of the task's definition it runs (`Task::digest`).
    pub async fn insert_run(
        &self,
        suite_id: i64,
        epoch_id: i64,
        task_name: &str,
        kind: &str,
        run_dir: &str,
        task_digest: Option<&str>,
    ) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "INSERT INTO runs (suite_id, epoch_id, task_name, kind, status, run_dir, started_at, task_digest)
             VALUES ($1, $2, $3, $4, 'running', $5, $6, $7) RETURNING id",
        )
        .bind(suite_id)
        .bind(epoch_id)
        .bind(task_name)
        .bind(kind)
        .bind(run_dir)
        .bind(now_rfc3339())
        .bind(task_digest)
        .fetch_one(&self.writer)
        .await?)
    }

    /// Sets aside the counted runs of an open epoch whose task has changed
    /// since they ran: each leaves `epoch_runs` (so the epoch runs the task
    /// again) and is marked cancelled with the reason, its result kept.
    /// `current` maps each task of the suite as it is now to its digest; a
    /// task no longer in the suite, or a run recorded without a digest, is
    /// left as it is. Returns the tasks set aside, in name order.
    pub async fn set_aside_changed_runs(
        &self,
        epoch_id: i64,
        current: &std::collections::BTreeMap<String, String>,
    ) -> Result<Vec<String>> {
        let mut tx = self.begin_write().await?;
        let counted: Vec<(String, i64, Option<String>)> = sqlx::query_as(
            "SELECT er.task_name, er.run_id, r.task_digest FROM epoch_runs er JOIN runs r ON r.id = er.run_id
             WHERE er.epoch_id = $1 ORDER BY er.task_name",
        )
        .bind(epoch_id)
        .fetch_all(&mut *tx)
        .await?;
        let mut set_aside = Vec::new();
        for (task, run_id, digest) in counted {
            let (Some(was), Some(now)) = (digest, current.get(&task)) else {
                continue;
            };
            if was == *now {
                continue;
            }
            sqlx::query("DELETE FROM epoch_runs WHERE epoch_id = $1 AND task_name = $2")
                .bind(epoch_id)
                .bind(&task)
                .execute(&mut *tx)
                .await?;
            // Its own error, if it had one, stays after the reason.
            sqlx::query("UPDATE runs SET status = 'cancelled', error = CAST($1 AS TEXT) || COALESCE(' (it had: ' || error || ')', '') WHERE id = $2")
                .bind(format!(
                    "set aside: the task `{task}` changed in the suite file after this run; the epoch ran it again"
                ))
                .bind(run_id)
                .execute(&mut *tx)
                .await?;
            set_aside.push(task);
        }
        tx.commit().await?;
        Ok(set_aside)
    }

    /// Records how a run ended and, for a run that counts, its row in
    /// `epoch_runs` — both in one transaction.
    pub async fn finish_run(&self, run_id: i64, epoch_id: i64, end: &RunEnd) -> Result<()> {
        let mut tx = self.begin_write().await?;
        write_run_end(&mut tx, run_id, epoch_id, end).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Marks runs of an epoch that never finished (the process died or was
    /// interrupted) as cancelled, so they are run again and never counted.
    /// Runs in `live` (ones other workers still run) are left to them.
    pub async fn cancel_unfinished_runs(&self, epoch_id: i64, reason: &str, live: &[i64]) -> Result<u64> {
        let sql = format!(
            "UPDATE runs SET status = 'cancelled', finished_at = $1, error = COALESCE(error, $2)
             WHERE epoch_id = $3 AND status = 'running' AND id NOT IN ({})",
            self.backend.json_ids(4)
        );
        let done = sqlx::query(&sql)
            .bind(now_rfc3339())
            .bind(reason)
            .bind(epoch_id)
            .bind(serde_json::to_string(live)?)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    pub async fn epoch_runs(&self, epoch_id: i64) -> Result<Vec<EpochRunRow>> {
        Ok(sqlx::query_as("SELECT * FROM epoch_runs WHERE epoch_id = $1 ORDER BY task_name")
            .bind(epoch_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// The counted runs of an epoch that failed or were aborted.
    pub async fn unsuccessful_runs(&self, epoch_id: i64) -> Result<Vec<RunRow>> {
        Ok(sqlx::query_as(
            "SELECT runs.* FROM runs JOIN epoch_runs ON epoch_runs.run_id = runs.id \
             WHERE runs.epoch_id = $1 AND runs.status IN ('failed', 'aborted') ORDER BY runs.task_name",
        )
        .bind(epoch_id)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn runs_of_epoch(&self, epoch_id: i64) -> Result<Vec<RunRow>> {
        Ok(sqlx::query_as("SELECT * FROM runs WHERE epoch_id = $1 ORDER BY id")
            .bind(epoch_id)
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn run(&self, run_id: i64) -> Result<Option<RunRow>> {
        Ok(sqlx::query_as("SELECT * FROM runs WHERE id = $1").bind(run_id).fetch_optional(&self.pool).await?)
    }

    // ----- events -------------------------------------------------------------

    pub async fn insert_event(&self, event: &EventRecord) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "INSERT INTO events (kind, suite_id, epoch_id, run_id, payload_json, occurred_at, recorded_at, origin)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        )
        .bind(&event.kind)
        .bind(event.suite_id)
        .bind(event.epoch_id)
        .bind(event.run_id)
        .bind(&event.payload_json)
        .bind(&event.occurred_at)
        .bind(now_rfc3339())
        .bind(&event.origin)
        .fetch_one(&self.writer)
        .await?)
    }

    /// Events after `after` that another process published, oldest first
    /// (the app tails them to show a CLI run live).
    pub async fn events_from_elsewhere(&self, after: i64, origin: &str, limit: u32) -> Result<Vec<EventRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM events WHERE id > $1 AND (origin IS NULL OR origin != $2) ORDER BY id LIMIT $3",
        )
        .bind(after)
        .bind(origin)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?)
    }

    /// The newest event's id (0 when there is none).
    pub async fn last_event_id(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM events").fetch_one(&self.pool).await?)
    }

    /// A suite's newest event of one kind.
    pub async fn last_event_of_suite(&self, suite_id: i64, kind: &str) -> Result<Option<EventRow>> {
        Ok(sqlx::query_as("SELECT * FROM events WHERE suite_id = $1 AND kind = $2 ORDER BY id DESC LIMIT 1")
            .bind(suite_id)
            .bind(kind)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Events of one kind recorded after the event `after`, oldest first.
    pub async fn events_after(&self, after: i64, kind: &str) -> Result<Vec<EventRow>> {
        Ok(sqlx::query_as("SELECT * FROM events WHERE id > $1 AND kind = $2 ORDER BY id")
            .bind(after)
            .bind(kind)
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn events_of_suite(&self, suite_id: i64) -> Result<Vec<EventRow>> {
        Ok(sqlx::query_as("SELECT * FROM events WHERE suite_id = $1 ORDER BY id")
            .bind(suite_id)
            .fetch_all(&self.pool)
            .await?)
    }
}

/// One artifact move decided at the end of an epoch.
#[derive(Debug, Clone)]
pub enum ArtifactChange {
    /// Write a new version from `parent_version` and make it active.
    Update { name: String, content: String, parent_version: i64 },
    /// Make an existing version active (a rollback; 0 is the default).
    Activate { name: String, version: i64 },
}

/// Everything decided when an epoch closes, written in one transaction.
#[derive(Debug, Clone, Default)]
pub struct EpochClose {
    /// Artifact moves: at most one update, or the rollbacks.
    pub changes: Vec<ArtifactChange>,
    /// Every proposal the optimizer considered.
    pub proposals: Vec<ProposalRecord>,
    /// What this epoch says about the previous epoch's winner.
    pub observed: Option<ObservedEffect>,
    /// The approved update (the approval gate's) the update of `changes` applies.
    pub applied_approval: Option<i64>,
}

/// The effect of an epoch's applied proposal, seen one epoch later.
#[derive(Debug, Clone)]
pub struct ObservedEffect {
    /// The epoch whose winner is judged.
    pub epoch_id: i64,
    /// Previous mean loss minus the new one (positive = it helped).
    pub loss_reduction: f64,
    pub rolled_back: bool,
    /// The effect task by task: what the decision to keep or roll back saw.
    pub evidence: Option<crate::loss::paired::PairedEvidence>,
}

/// Writes how a run ended and, for a run that counts, its row in
/// `epoch_runs`, inside the caller's transaction.
pub(super) async fn write_run_end(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    run_id: i64,
    epoch_id: i64,
    end: &RunEnd,
) -> Result<()> {
    sqlx::query(
        "UPDATE runs SET status = $1, finished_at = $2, duration_ms = $3, exit_code = $4, loss = $5,
             loss_breakdown_json = $6, result_json = $7, error = $8, stdout = $9, stderr = $10, model_json = $11
         WHERE id = $12",
    )
    .bind(&end.status)
    .bind(now_rfc3339())
    .bind(end.duration_ms)
    .bind(end.exit_code)
    .bind(end.loss)
    .bind(&end.loss_breakdown_json)
    .bind(&end.result_json)
    .bind(&end.error)
    .bind(&end.stdout)
    .bind(&end.stderr)
    .bind(end.model.and_then(|m| serde_json::to_string(&m).ok()))
    .bind(run_id)
    .execute(&mut **tx)
    .await?;
    if let (Some(loss), Some(scores)) = (end.loss, &end.scores_json) {
        sqlx::query(
            "INSERT INTO epoch_runs (epoch_id, run_id, task_name, loss, scores_json) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(epoch_id)
        .bind(run_id)
        .bind(&end.task_name)
        .bind(loss)
        .bind(scores)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
