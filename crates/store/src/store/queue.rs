//! The run queue (table `run_requests`): launches as rows any process on the
//! database can pick up. A worker claims the oldest queued request of a
//! suite nobody else is running (or one whose worker died), heartbeats it,
//! and completes it; a person's cancel is a flag the worker reads.

use super::{Result, Store};
use crate::now_rfc3339;

/// A request's life: queued → running → finished, cancelled or failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "LaunchStatus")]
pub enum QueueStatus {
    Queued,
    Running,
    Finished,
    /// Cancelled by a person; the unfinished epoch resumes on the next launch.
    Cancelled,
    Failed,
}

impl QueueStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueStatus::Queued => "queued",
            QueueStatus::Running => "running",
            QueueStatus::Finished => "finished",
            QueueStatus::Cancelled => "cancelled",
            QueueStatus::Failed => "failed",
        }
    }

    fn parse(s: &str) -> QueueStatus {
        match s {
            "queued" => QueueStatus::Queued,
            "running" => QueueStatus::Running,
            "finished" => QueueStatus::Finished,
            "cancelled" => QueueStatus::Cancelled,
            _ => QueueStatus::Failed,
        }
    }

    /// Whether the request is done with, one way or another.
    pub fn ended(self) -> bool {
        matches!(self, QueueStatus::Finished | QueueStatus::Cancelled | QueueStatus::Failed)
    }
}

/// The status column as stored (its CHECK keeps it one of the five).
impl std::fmt::Display for QueueStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<String> for QueueStatus {
    fn from(s: String) -> Self {
        QueueStatus::parse(&s)
    }
}

/// A request as stored.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct QueuedRequest {
    pub id: i64,
    pub suite_name: String,
    pub request_json: String,
    #[sqlx(try_from = "String")]
    pub status: QueueStatus,
    pub owner: Option<String>,
    pub holder: Option<String>,
    pub enqueued_at: String,
    pub started_at: Option<String>,
    pub heartbeat_at: Option<String>,
    pub finished_at: Option<String>,
    #[sqlx(try_from = "super::Flag")]
    pub cancel_requested: bool,
    pub attempts: i64,
    pub suite_id: Option<i64>,
    pub epochs_done: i64,
    /// The base seed the run chose, once it started.
    pub seed: Option<i64>,
    pub error: Option<String>,
    /// The first and last of its suite's epochs it started (epoch numbers).
    pub first_epoch: Option<i64>,
    pub last_epoch: Option<i64>,
    /// The epochs it set out to do: fewer than requested when it continues
    /// a plan a stopped launch left unfinished. None before its run starts.
    pub epochs_planned: Option<i64>,
    /// The digest of its suite's folder in `suite_bundles`, for workers
    /// that do not have the folder (on a shared database only).
    #[sqlx(default)]
    pub suite_bundle: Option<String>,
}

impl QueuedRequest {
    /// Whether this request started a run of its epochs (started at
    /// `run_started_at`): an epoch a cancel left open is finished by the next
    /// launch, and each launch owns the runs it started. The timestamps are
    /// fixed-width UTC, so they compare as text; [`Store::run_tallies`]
    /// applies the same rule in SQL.
    pub fn started_run(&self, run_started_at: &str) -> bool {
        let started = self.started_at.as_deref().unwrap_or(&self.enqueued_at);
        run_started_at >= started && self.finished_at.as_deref().is_none_or(|end| run_started_at <= end)
    }
}

/// How a launch's runs ended, counted over the epochs it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct RunTally {
    pub id: i64,
    /// Runs that have ended (a running one is not counted).
    pub ended: i64,
    /// Of them, failed or aborted: no result to learn from.
    pub failed: i64,
}

/// Claims of one request after which a worker that stopped with it leaves
/// it failed instead of handing it on.
pub const MAX_ATTEMPTS: i64 = 5;

/// Who claims: the worker's owner id and the words people see.
#[derive(Debug, Clone)]
pub struct Claimant<'a> {
    pub owner: &'a str,
    pub holder: &'a str,
}

/// What a running request has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestProgress {
    pub suite_id: i64,
    pub epochs_done: i64,
    /// The epoch it has just started, if that is what it reports.
    pub started_epoch: Option<i64>,
    /// The epochs it set out to do, once its first epoch started.
    pub epochs_planned: Option<i64>,
}

/// How a request ended.
#[derive(Debug, Clone)]
pub struct Completion {
    pub status: QueueStatus,
    pub suite_id: Option<i64>,
    pub epochs_done: i64,
    pub error: Option<String>,
}

impl Store {
    /// Adds a request to the queue; `claim` makes it the caller's at once
    /// (`attractor run` works its own request). Refused while another request
    /// of the suite is queued or running under a live worker.
    pub async fn enqueue(
        &self,
        suite_name: &str,
        request_json: &str,
        claim: Option<&Claimant<'_>>,
        stale: impl Fn(&QueuedRequest) -> bool,
    ) -> Result<std::result::Result<i64, QueuedRequest>> {
        let mut tx = self.begin_write().await?;
        let open: Vec<QueuedRequest> = sqlx::query_as(
            "SELECT * FROM run_requests WHERE suite_name = $1 AND status IN ('queued', 'running') ORDER BY id",
        )
        .bind(suite_name)
        .fetch_all(&mut *tx)
        .await?;
        if let Some(busy) = open.into_iter().find(|r| !stale(r)) {
            return Ok(Err(busy));
        }
        // Requests of the suite left by dead workers are superseded by this one.
        let now = now_rfc3339();
        sqlx::query(
            "UPDATE run_requests SET status = 'failed', finished_at = $1,
                 error = 'its worker stopped; a later request of the suite took its place'
             WHERE suite_name = $2 AND status IN ('queued', 'running')",
        )
        .bind(&now)
        .bind(suite_name)
        .execute(&mut *tx)
        .await?;
        let (status, owner, holder, started) = match claim {
            Some(c) => ("running", Some(c.owner), Some(c.holder), Some(now.as_str())),
            None => ("queued", None, None, None),
        };
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO run_requests (suite_name, request_json, status, owner, holder, enqueued_at, started_at,
                 heartbeat_at, attempts)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )
        .bind(suite_name)
        .bind(request_json)
        .bind(status)
        .bind(owner)
        .bind(holder)
        .bind(&now)
        .bind(started)
        .bind(started)
        .bind(i64::from(claim.is_some()))
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok(id))
    }

    /// Claims the oldest request a worker may take: a queued one of a suite
    /// no live worker is running, or a running one whose worker `stale`
    /// calls dead (its run continues the plan the dead worker left).
    pub async fn claim_request(
        &self,
        by: &Claimant<'_>,
        stale: impl Fn(&QueuedRequest) -> bool,
    ) -> Result<Option<QueuedRequest>> {
        let mut tx = self.begin_write().await?;
        let open: Vec<QueuedRequest> = sqlx::query_as::<_, QueuedRequest>(
            "SELECT * FROM run_requests WHERE status IN ('queued', 'running') ORDER BY id",
        )
        .fetch_all(&mut *tx)
        .await?;
        let busy: std::collections::HashSet<&str> = open
            .iter()
            .filter(|r| r.status == QueueStatus::Running && !stale(r))
            .map(|r| r.suite_name.as_str())
            .collect();
        let now = now_rfc3339();
        // A request whose workers kept dying (one that exhausts a machine's
        // memory, say) is not handed to the next one for ever.
        let (spent, open): (Vec<&QueuedRequest>, Vec<&QueuedRequest>) =
            open.iter().partition(|r| r.status == QueueStatus::Running && stale(r) && r.attempts >= MAX_ATTEMPTS);
        for r in spent {
            sqlx::query(
                "UPDATE run_requests SET status = 'failed', finished_at = $1, error = $2
                 WHERE id = $3 AND status = 'running' AND owner IS NOT DISTINCT FROM $4",
            )
            .bind(&now)
            .bind(format!(
                "its worker stopped {} times before finishing it; launch it again to resume the unfinished epoch",
                r.attempts
            ))
            .bind(r.id)
            .bind(r.owner.as_deref())
            .execute(&mut *tx)
            .await?;
        }
        let Some(pick) = open
            .into_iter()
            .find(|r| !busy.contains(r.suite_name.as_str()) && (r.status == QueueStatus::Queued || stale(r)))
        else {
            tx.commit().await?;
            return Ok(None);
        };
        // Only if the row is still as it was read: its worker's completion
        // does not take the write lock and may have landed meanwhile.
        let taken = sqlx::query(
            "UPDATE run_requests SET status = 'running', owner = $1, holder = $2, started_at = COALESCE(started_at, $3),
                 heartbeat_at = $4, attempts = attempts + 1
             WHERE id = $5 AND status = $6 AND owner IS NOT DISTINCT FROM $7",
        )
        .bind(by.owner)
        .bind(by.holder)
        .bind(&now)
        .bind(&now)
        .bind(pick.id)
        .bind(pick.status.as_str())
        .bind(pick.owner.as_deref())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let id = pick.id;
        tx.commit().await?;
        if taken != 1 {
            return Ok(None);
        }
        self.queued_request(id).await
    }

    /// Puts a request its worker stopped (not a person) back in the queue,
    /// if `owner` still holds it: another worker resumes it.
    pub async fn requeue_request(&self, id: i64, owner: &str) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE run_requests SET status = 'queued', owner = NULL, holder = NULL, heartbeat_at = NULL
             WHERE id = $1 AND owner = $2 AND status = 'running'",
        )
        .bind(id)
        .bind(owner)
        .execute(&self.writer)
        .await?
        .rows_affected();
        Ok(changed == 1)
    }

    /// Says the worker is alive; `None` when it no longer holds the request
    /// (another worker took it over), else whether a person asked to cancel.
    pub async fn heartbeat_request(&self, id: i64, owner: &str) -> Result<Option<bool>> {
        let cancel: Option<i64> = sqlx::query_scalar(
            "UPDATE run_requests SET heartbeat_at = $1 WHERE id = $2 AND owner = $3 AND status = 'running'
             RETURNING cancel_requested",
        )
        .bind(now_rfc3339())
        .bind(id)
        .bind(owner)
        .fetch_optional(&self.writer)
        .await?;
        Ok(cancel.map(|c| c != 0))
    }

    /// Records the base seed the run chose (seeds stay below 2^53).
    pub async fn request_seed(&self, id: i64, owner: &str, seed: u64) -> Result<()> {
        sqlx::query("UPDATE run_requests SET seed = $1 WHERE id = $2 AND owner = $3")
            .bind(i64::try_from(seed).unwrap_or(i64::MAX))
            .bind(id)
            .bind(owner)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// The suite the request's run works and how many epochs it has
    /// finished so far, kept current while it runs (if `owner` still holds it).
    pub async fn request_progress(&self, id: i64, owner: &str, progress: RequestProgress) -> Result<()> {
        sqlx::query(
            "UPDATE run_requests SET suite_id = $1, epochs_done = $2,
                 first_epoch = COALESCE(first_epoch, $3), last_epoch = COALESCE($3, last_epoch),
                 epochs_planned = COALESCE(epochs_planned, $6)
             WHERE id = $4 AND owner = $5 AND status = 'running'",
        )
        .bind(progress.suite_id)
        .bind(progress.epochs_done)
        .bind(progress.started_epoch)
        .bind(id)
        .bind(owner)
        .bind(progress.epochs_planned)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// Ends the request, if `owner` still holds it.
    pub async fn complete_request(&self, id: i64, owner: &str, done: &Completion) -> Result<bool> {
        let changed = sqlx::query(
            "UPDATE run_requests SET status = $1, finished_at = $2, suite_id = COALESCE($3, suite_id),
                 epochs_done = $4, error = $5
             WHERE id = $6 AND owner = $7 AND status = 'running'",
        )
        .bind(done.status.as_str())
        .bind(now_rfc3339())
        .bind(done.suite_id)
        .bind(done.epochs_done)
        .bind(&done.error)
        .bind(id)
        .bind(owner)
        .execute(&self.writer)
        .await?
        .rows_affected();
        Ok(changed == 1)
    }

    /// Asks for a request to stop: a queued one — or, with `abandoned`, a
    /// running one whose worker is gone — is cancelled at once, a running
    /// one when its worker next heartbeats. `None` when there is no such
    /// request; the request as it is now otherwise.
    pub async fn cancel_request(&self, id: i64, abandoned: bool) -> Result<Option<QueuedRequest>> {
        let now = now_rfc3339();
        let ends = if abandoned { "('queued', 'running')" } else { "('queued')" };
        sqlx::query(&format!(
            "UPDATE run_requests SET status = 'cancelled', finished_at = $1, cancel_requested = 1
             WHERE id = $2 AND status IN {ends}"
        ))
        .bind(&now)
        .bind(id)
        .execute(&self.writer)
        .await?;
        sqlx::query("UPDATE run_requests SET cancel_requested = 1 WHERE id = $1 AND status = 'running'")
            .bind(id)
            .execute(&self.writer)
            .await?;
        self.queued_request(id).await
    }

    pub async fn queued_request(&self, id: i64) -> Result<Option<QueuedRequest>> {
        Ok(sqlx::query_as::<_, QueuedRequest>("SELECT * FROM run_requests WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The newest request of one suite.
    pub async fn latest_request_of_suite(&self, suite_name: &str) -> Result<Option<QueuedRequest>> {
        Ok(sqlx::query_as::<_, QueuedRequest>(
            "SELECT * FROM run_requests WHERE suite_name = $1 ORDER BY id DESC LIMIT 1",
        )
        .bind(suite_name)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Every suite's newest request, newest first: what the Suites screen
    /// reads a suite's status from, however long ago it was launched.
    pub async fn latest_request_per_suite(&self) -> Result<Vec<QueuedRequest>> {
        Ok(sqlx::query_as::<_, QueuedRequest>(
            "SELECT * FROM run_requests
             WHERE id IN (SELECT MAX(id) FROM run_requests GROUP BY suite_name)
             ORDER BY id DESC",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// How the runs of some requests' epochs ended, one row per request
    /// that has started an epoch; each counts the runs it started (the SQL
    /// form of [`QueuedRequest::started_run`]).
    pub async fn run_tallies(&self, ids: &[i64]) -> Result<Vec<RunTally>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(&format!(
            "SELECT q.id AS id,
                    COUNT(r.id) AS ended,
                    COALESCE(SUM(CASE WHEN r.status IN ('failed', 'aborted') THEN 1 ELSE 0 END), 0) AS failed
             FROM run_requests q
             JOIN epochs e ON e.suite_id = q.suite_id AND e.epoch_num BETWEEN q.first_epoch AND q.last_epoch
             JOIN runs r ON r.epoch_id = e.id AND r.status NOT IN ('running', 'queued')
                 AND r.started_at >= COALESCE(q.started_at, q.enqueued_at)
                 AND (q.finished_at IS NULL OR r.started_at <= q.finished_at)
             WHERE q.id IN ({})
             GROUP BY q.id",
            self.backend.json_ids(1)
        ))
        .bind(serde_json::to_string(ids)?)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The latest requests, newest first.
    /// Keeps a suite folder's bundle (once per content) and names it as the
    /// request's.
    pub async fn put_bundle(&self, request_id: i64, owner: &str, digest: &str, zip: &[u8]) -> Result<()> {
        let mut tx = self.writer.begin().await?;
        sqlx::query(
            "INSERT INTO suite_bundles (digest, content, size, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (digest) DO NOTHING",
        )
        .bind(digest)
        .bind(zip)
        .bind(i64::try_from(zip.len()).unwrap_or(i64::MAX))
        .bind(now_rfc3339())
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE run_requests SET suite_bundle = $1 WHERE id = $2 AND owner = $3")
            .bind(digest)
            .bind(request_id)
            .bind(owner)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// A suite folder's bundle by its digest.
    pub async fn bundle(&self, digest: &str) -> Result<Option<Vec<u8>>> {
        Ok(sqlx::query_scalar("SELECT content FROM suite_bundles WHERE digest = $1")
            .bind(digest)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Whether any launch is queued or running.
    pub async fn launches_open(&self) -> Result<bool> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM run_requests WHERE status IN ('queued', 'running')")
            .fetch_one(&self.pool)
            .await?;
        Ok(n > 0)
    }

    pub async fn queued_requests(&self, limit: u32) -> Result<Vec<QueuedRequest>> {
        Ok(sqlx::query_as::<_, QueuedRequest>("SELECT * FROM run_requests ORDER BY id DESC LIMIT $1")
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("q.db")).await.unwrap();
        (dir, store)
    }

    const A: Claimant = Claimant { owner: "h:1:a", holder: "worker a" };
    const B: Claimant = Claimant { owner: "h:2:b", holder: "worker b" };

    #[tokio::test]
    async fn a_worker_claims_the_oldest_request_and_one_suite_runs_on_one_worker_at_a_time() {
        let (_d, s) = store().await;
        let alive = |_: &QueuedRequest| false;
        let one = s.enqueue("knobs", "{}", None, alive).await.unwrap().unwrap();
        let busy = s.enqueue("knobs", "{}", None, alive).await.unwrap().unwrap_err();
        assert_eq!(busy.id, one, "a second request of a queued suite is refused");
        let two = s.enqueue("tune", "{}", None, alive).await.unwrap().unwrap();
        let first = s.claim_request(&A, alive).await.unwrap().unwrap();
        assert_eq!((first.id, first.status, first.attempts), (one, QueueStatus::Running, 1));
        let second = s.claim_request(&B, alive).await.unwrap().unwrap();
        assert_eq!(second.id, two);
        assert!(s.claim_request(&B, alive).await.unwrap().is_none(), "nothing left to claim");
        assert_eq!(s.heartbeat_request(one, A.owner).await.unwrap(), Some(false));
        assert_eq!(s.heartbeat_request(one, B.owner).await.unwrap(), None, "b does not hold it");
        let done = Completion { status: QueueStatus::Finished, suite_id: Some(1), epochs_done: 2, error: None };
        assert!(s.complete_request(one, A.owner, &done).await.unwrap());
        let row = s.queued_request(one).await.unwrap().unwrap();
        assert_eq!((row.status, row.epochs_done), (QueueStatus::Finished, 2));
        assert!(row.finished_at.is_some());
    }

    #[tokio::test]
    async fn a_request_whose_worker_died_is_taken_over_and_its_first_worker_can_no_longer_complete_it() {
        let (_d, s) = store().await;
        let id = s.enqueue("knobs", "{}", Some(&A), |_| false).await.unwrap().unwrap();
        assert!(s.claim_request(&B, |_| false).await.unwrap().is_none(), "a's request is running");
        let dead_a = |r: &QueuedRequest| r.owner.as_deref() == Some(A.owner);
        let taken = s.claim_request(&B, dead_a).await.unwrap().unwrap();
        assert_eq!((taken.id, taken.owner.as_deref(), taken.attempts), (id, Some(B.owner), 2));
        let done = Completion { status: QueueStatus::Failed, suite_id: None, epochs_done: 0, error: None };
        assert!(!s.complete_request(id, A.owner, &done).await.unwrap(), "a lost it");
        assert_eq!(s.heartbeat_request(id, A.owner).await.unwrap(), None);
        assert_eq!(s.heartbeat_request(id, B.owner).await.unwrap(), Some(false));
    }

    #[tokio::test]
    async fn a_cancel_ends_a_queued_request_at_once_and_flags_a_running_one_for_its_worker() {
        let (_d, s) = store().await;
        let queued = s.enqueue("a", "{}", None, |_| false).await.unwrap().unwrap();
        let running = s.enqueue("b", "{}", Some(&A), |_| false).await.unwrap().unwrap();
        assert_eq!(s.cancel_request(queued, false).await.unwrap().unwrap().status, QueueStatus::Cancelled);
        let flagged = s.cancel_request(running, false).await.unwrap().unwrap();
        assert_eq!((flagged.status, flagged.cancel_requested), (QueueStatus::Running, true));
        assert_eq!(s.heartbeat_request(running, A.owner).await.unwrap(), Some(true));
        assert!(s.cancel_request(999, false).await.unwrap().is_none());
        // A request of a suite whose last one was cancelled is taken.
        assert!(s.enqueue("a", "{}", None, |_| false).await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn a_request_its_worker_gave_back_is_claimed_again_and_an_abandoned_one_can_be_cancelled() {
        let (_d, s) = store().await;
        let id = s.enqueue("knobs", "{}", Some(&A), |_| false).await.unwrap().unwrap();
        assert!(!s.requeue_request(id, B.owner).await.unwrap(), "only its worker gives it back");
        assert!(s.requeue_request(id, A.owner).await.unwrap());
        let again = s.claim_request(&B, |_| false).await.unwrap().unwrap();
        assert_eq!((again.id, again.owner.as_deref(), again.attempts), (id, Some(B.owner), 2));
        // B dies: a person's cancel ends it at once instead of waiting for a takeover.
        let ended = s.cancel_request(id, true).await.unwrap().unwrap();
        assert_eq!(ended.status, QueueStatus::Cancelled);
        assert!(s.claim_request(&A, |_| true).await.unwrap().is_none(), "nothing to take over");
    }

    #[tokio::test]
    async fn a_request_whose_workers_keep_dying_is_failed_instead_of_handed_on_for_ever() {
        let (_d, s) = store().await;
        let id = s.enqueue("hungry", "{}", Some(&A), |_| false).await.unwrap().unwrap();
        let dead = |r: &QueuedRequest| r.status == QueueStatus::Running;
        for claims in 2..=MAX_ATTEMPTS {
            let taken = s.claim_request(&B, dead).await.unwrap().unwrap();
            assert_eq!((taken.id, taken.attempts), (id, claims));
        }
        assert!(s.claim_request(&B, dead).await.unwrap().is_none(), "the fifth worker's death ends it");
        let row = s.queued_request(id).await.unwrap().unwrap();
        assert_eq!(row.status, QueueStatus::Failed);
        assert!(row.error.unwrap().contains("its worker stopped 5 times"));
    }
}
