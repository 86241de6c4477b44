//! An epoch's runs as queue items (table `run_items`): the unit of work that
//! lets one suite use many workers. The suite's holder enqueues one item per
//! task of an epoch it is about to measure; any worker on the database that
//! offers what the task needs claims one, runs it, and finishes it together
//! with the run's record, in one transaction. The holder closes the epoch
//! once every item is done.
//!
//! Three rules keep the history exact however many workers there are:
//! - a claim takes one row (PostgreSQL's `FOR UPDATE SKIP LOCKED`; SQLite
//!   has one writer anyway), never a lock on the whole database, so claims
//!   scale with workers;
//! - a finish is fenced: it lands only while the finishing worker still
//!   holds the item, so a worker thought dead that finishes late records its
//!   run as superseded instead of counting it a second time;
//! - liveness is judged on the database's clock (`heartbeat` is seconds
//!   since 1970 as the database says), not on each machine's.

use super::{Backend, Result, RunEnd, Store};

/// An item's life: queued → running (claimed) → done (its run counts), or
/// back to queued when its worker stops or is lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemStatus {
    Queued,
    Running,
    Done,
}

/// The status column as stored (its CHECK keeps it one of the three).
impl From<String> for ItemStatus {
    fn from(s: String) -> Self {
        match s.as_str() {
            "running" => ItemStatus::Running,
            "done" => ItemStatus::Done,
            _ => ItemStatus::Queued,
        }
    }
}

/// An item as stored.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct RunItem {
    pub id: i64,
    pub request_id: Option<i64>,
    pub suite_id: i64,
    pub epoch_id: i64,
    pub task_name: String,
    pub task_digest: String,
    pub needs_json: String,
    #[sqlx(try_from = "String")]
    pub status: ItemStatus,
    pub owner: Option<String>,
    pub holder: Option<String>,
    pub run_id: Option<i64>,
    pub attempts: i64,
    pub heartbeat: Option<f64>,
}

impl RunItem {
    /// The labels a worker must offer to claim it.
    pub fn needs(&self) -> Vec<String> {
        serde_json::from_str(&self.needs_json).unwrap_or_default()
    }

    /// Whether one of `offers` (each a worker's labels) covers what it
    /// needs — the rule a claim applies in SQL.
    pub fn offered_by(&self, offers: &[Vec<String>]) -> bool {
        let needs = self.needs();
        offers.iter().any(|o| needs.iter().all(|n| o.contains(n)))
    }
}

/// A task to enqueue for an epoch.
#[derive(Debug, Clone)]
pub struct NewItem<'a> {
    pub task_name: &'a str,
    pub task_digest: &'a str,
    pub needs: &'a [String],
}

/// Which items a claim may take.
#[derive(Debug, Clone, Copy)]
pub enum ItemScope<'a> {
    /// The items of one epoch: its holder working its own epoch.
    Epoch(i64),
    /// Any launch's items whose holder still runs it, but not those of
    /// `skip` (launches this worker found it cannot work).
    Any { skip: &'a [i64] },
    /// The items of one launch (a worker that prepared it goes on with it).
    Launch(i64),
}

/// How far an epoch's items are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ItemCounts {
    pub queued: i64,
    pub running: i64,
    pub done: i64,
}

impl ItemCounts {
    /// Whether nothing of the epoch is left to run.
    pub fn finished(&self) -> bool {
        self.queued == 0 && self.running == 0
    }
}

/// A worker on the database, as `attractor workers` and the Live screen show it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow, serde::Serialize)]
pub struct WorkerRow {
    pub owner: String,
    pub holder: String,
    pub host: String,
    pub pid: i64,
    pub offers_json: String,
    pub concurrency: i64,
    pub started: f64,
    pub heartbeat: f64,
    #[sqlx(try_from = "super::Flag")]
    pub stopped: bool,
}

impl Backend {
    /// The database's clock as seconds since 1970 (a double), for heartbeats.
    pub(crate) fn now_secs(self) -> &'static str {
        match self {
            Backend::Sqlite => "((julianday('now') - 2440587.5) * 86400.0)",
            Backend::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)",
        }
    }

    /// Whether the JSON array in `needs` is within the JSON array bound as `$n`.
    fn needs_within(self, needs: &str, n: usize) -> String {
        match self {
            Backend::Sqlite => format!(
                "NOT EXISTS (SELECT 1 FROM json_each({needs}) AS w WHERE w.value NOT IN (SELECT value FROM json_each(${n})))"
            ),
            Backend::Postgres => format!("CAST({needs} AS jsonb) <@ CAST(${n} AS jsonb)"),
        }
    }
}

impl Store {
    /// Enqueues the tasks of an epoch not yet counted. An item already there
    /// that a live worker runs is left to it; one queued, done without
    /// counting (cancelled), or whose worker went quiet is queued again.
    /// `request` is the launch the holder works, so others can prepare it.
    pub async fn enqueue_items(
        &self,
        request: Option<i64>,
        suite_id: i64,
        epoch_id: i64,
        items: &[NewItem<'_>],
        stale_after_secs: f64,
    ) -> Result<()> {
        let now = self.backend.now_secs();
        let mut tx = self.writer.begin().await?;
        for item in items {
            let needs = serde_json::to_string(item.needs)?;
            let sql = format!(
                "INSERT INTO run_items (request_id, suite_id, epoch_id, task_name, task_digest, needs_json, status)
                 VALUES ($1, $2, $3, $4, $5, $6, 'queued')
                 ON CONFLICT (epoch_id, task_name) DO UPDATE SET
                     request_id = excluded.request_id, task_digest = excluded.task_digest,
                     needs_json = excluded.needs_json, status = 'queued', owner = NULL, holder = NULL,
                     heartbeat = NULL
                 WHERE run_items.status <> 'running' OR run_items.heartbeat IS NULL
                    OR run_items.heartbeat < {now} - $7"
            );
            sqlx::query(&sql)
                .bind(request)
                .bind(suite_id)
                .bind(epoch_id)
                .bind(item.task_name)
                .bind(item.task_digest)
                .bind(&needs)
                .bind(stale_after_secs)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Claims one queued item within `scope` for `owner`, if one is there
    /// and `offers` covers what it needs; the claim sets its heartbeat.
    pub async fn claim_item(
        &self,
        scope: ItemScope<'_>,
        owner: &str,
        holder: &str,
        offers: &[String],
    ) -> Result<Option<RunItem>> {
        let now = self.backend.now_secs();
        let within = self.backend.needs_within("i.needs_json", 3);
        // Every parameter is used by the statement (PostgreSQL cannot type
        // one it never sees): $4 is the epoch, or the launches to skip.
        let filter = match scope {
            ItemScope::Epoch(_) => "i.epoch_id = $4".to_string(),
            ItemScope::Launch(_) => "i.request_id = $4
                 AND EXISTS (SELECT 1 FROM run_requests r WHERE r.id = i.request_id AND r.status = 'running')"
                .to_string(),
            ItemScope::Any { .. } => format!(
                "i.request_id IS NOT NULL AND i.request_id NOT IN ({})
                 AND EXISTS (SELECT 1 FROM run_requests r WHERE r.id = i.request_id AND r.status = 'running')",
                self.backend.json_ids(4)
            ),
        };
        // PostgreSQL locks the row it takes and skips rows another claim
        // holds: claims of many workers do not wait on one another. SQLite
        // has one writer, so the select and the update see one state.
        let lock = match self.backend {
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let sql = format!(
            "UPDATE run_items SET status = 'running', owner = $1, holder = $2, heartbeat = {now},
                 attempts = attempts + 1, run_id = NULL
             WHERE id = (SELECT i.id FROM run_items i WHERE i.status = 'queued' AND {within} AND {filter}
                         ORDER BY i.id LIMIT 1{lock})
               AND status = 'queued'
             RETURNING *"
        );
        let query = sqlx::query_as::<_, RunItem>(&sql).bind(owner).bind(holder).bind(serde_json::to_string(offers)?);
        let query = match scope {
            ItemScope::Epoch(id) | ItemScope::Launch(id) => query.bind(id),
            ItemScope::Any { skip } => query.bind(serde_json::to_string(skip)?),
        };
        Ok(query.fetch_optional(&self.writer).await?)
    }

    /// Says the worker is alive on the item; `None` when it no longer holds
    /// it (another worker took it over, or the holder gave up the epoch),
    /// else whether a person asked to cancel the launch.
    pub async fn heartbeat_item(&self, id: i64, owner: &str) -> Result<Option<bool>> {
        let now = self.backend.now_secs();
        let sql = format!("UPDATE run_items SET heartbeat = {now} WHERE id = $1 AND owner = $2 AND status = 'running'");
        let held = sqlx::query(&sql).bind(id).bind(owner).execute(&self.writer).await?.rows_affected() == 1;
        if !held {
            return Ok(None);
        }
        let cancel: Option<i64> = sqlx::query_scalar(
            "SELECT r.cancel_requested FROM run_items i JOIN run_requests r ON r.id = i.request_id WHERE i.id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(Some(cancel.is_some_and(|c| c != 0)))
    }

    /// Records the run the claim started, so a takeover can close it, and
    /// which worker runs it, for people.
    pub async fn item_run(&self, id: i64, owner: &str, holder: &str, run_id: i64) -> Result<()> {
        let mut tx = self.writer.begin().await?;
        sqlx::query("UPDATE run_items SET run_id = $1 WHERE id = $2 AND owner = $3 AND status = 'running'")
            .bind(run_id)
            .bind(id)
            .bind(owner)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE runs SET worker = $1 WHERE id = $2").bind(holder).bind(run_id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Finishes the item's run: the run's record, its row in `epoch_runs`
    /// when it counts, in one transaction — if `owner` still holds the item.
    /// A run that counts makes the item done; one that does not (cancelled:
    /// its worker stopped) puts the item back in the queue. `false` when
    /// `owner` no longer holds it (another worker took it over): the run is
    /// then recorded as superseded and counts nothing.
    pub async fn finish_item(&self, id: i64, owner: &str, run_id: i64, epoch_id: i64, end: &RunEnd) -> Result<bool> {
        // The item's row lock fences a late finish; `epoch_runs`' key keeps
        // a task counted once per epoch.
        let mut tx = self.begin_row_write().await?;
        let status = if end.loss.is_some() { "done" } else { "queued" };
        let held = sqlx::query(
            "UPDATE run_items SET status = $1, heartbeat = NULL,
                 owner = CASE WHEN $1 = 'done' THEN owner END, holder = CASE WHEN $1 = 'done' THEN holder END
             WHERE id = $2 AND owner = $3 AND status = 'running'",
        )
        .bind(status)
        .bind(id)
        .bind(owner)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        let end = if held {
            std::borrow::Cow::Borrowed(end)
        } else {
            std::borrow::Cow::Owned(RunEnd {
                status: "cancelled".into(),
                loss: None,
                scores_json: None,
                error: Some(format!(
                    "superseded: another worker ran `{}` again after this one stopped heartbeating; its run counts",
                    end.task_name
                )),
                ..end.clone()
            })
        };
        super::history::write_run_end(&mut tx, run_id, epoch_id, &end).await?;
        tx.commit().await?;
        Ok(held)
    }

    /// Gives an item back to the queue (its worker stops without running it).
    pub async fn release_item(&self, id: i64, owner: &str) -> Result<()> {
        sqlx::query(
            "UPDATE run_items SET status = 'queued', owner = NULL, holder = NULL, heartbeat = NULL, run_id = NULL
             WHERE id = $1 AND owner = $2 AND status = 'running'",
        )
        .bind(id)
        .bind(owner)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// Puts back in the queue the running items of an epoch whose worker is gone: its
    /// heartbeat older than `stale_after_secs` on the database's clock, or
    /// `gone` says so (a process of this machine that died). The run each
    /// had started is closed as cancelled. Returns how many were put back.
    pub async fn requeue_lost_items(
        &self,
        epoch_id: i64,
        stale_after_secs: f64,
        gone: impl Fn(&str) -> bool,
    ) -> Result<u64> {
        let now = self.backend.now_secs();
        let sql = format!(
            "SELECT id, owner, run_id, CASE WHEN heartbeat IS NULL OR heartbeat < {now} - $1 THEN 1 ELSE 0 END
             FROM run_items WHERE status = 'running' AND epoch_id = $2"
        );
        let running: Vec<(i64, Option<String>, Option<i64>, i64)> =
            sqlx::query_as(&sql).bind(stale_after_secs).bind(epoch_id).fetch_all(&self.pool).await?;
        let mut put_back = 0;
        for (id, owner, run_id, stale) in running {
            if stale == 0 && !owner.as_deref().is_some_and(&gone) {
                continue;
            }
            let mut tx = self.writer.begin().await?;
            let taken = sqlx::query(
                "UPDATE run_items SET status = 'queued', owner = NULL, holder = NULL, heartbeat = NULL, run_id = NULL
                 WHERE id = $1 AND status = 'running' AND owner IS NOT DISTINCT FROM $2",
            )
            .bind(id)
            .bind(owner.as_deref())
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if taken == 1
                && let Some(run_id) = run_id
            {
                sqlx::query(
                    "UPDATE runs SET status = 'cancelled', finished_at = $1, error = COALESCE(error, $2)
                     WHERE id = $3 AND status = 'running'",
                )
                .bind(crate::now_rfc3339())
                .bind("its worker stopped heartbeating; another worker runs the task again")
                .bind(run_id)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            put_back += taken;
        }
        Ok(put_back)
    }

    /// Where an epoch's items are.
    pub async fn item_counts(&self, epoch_id: i64) -> Result<ItemCounts> {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, COUNT(*) FROM run_items WHERE epoch_id = $1 GROUP BY status")
                .bind(epoch_id)
                .fetch_all(&self.pool)
                .await?;
        let mut counts = ItemCounts::default();
        for (status, n) in rows {
            match ItemStatus::from(status) {
                ItemStatus::Queued => counts.queued = n,
                ItemStatus::Running => counts.running = n,
                ItemStatus::Done => counts.done = n,
            }
        }
        Ok(counts)
    }

    /// The items of an epoch, in id order.
    pub async fn epoch_items(&self, epoch_id: i64) -> Result<Vec<RunItem>> {
        Ok(sqlx::query_as("SELECT * FROM run_items WHERE epoch_id = $1 ORDER BY id")
            .bind(epoch_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Takes an epoch's items nobody runs out of the queue (its holder
    /// stopped before they were claimed); running ones end on their own.
    pub async fn withdraw_items(&self, epoch_id: i64) -> Result<u64> {
        Ok(sqlx::query("DELETE FROM run_items WHERE epoch_id = $1 AND status = 'queued'")
            .bind(epoch_id)
            .execute(&self.writer)
            .await?
            .rows_affected())
    }

    /// The running items of an epoch whose runs are still live (a resumed
    /// holder must not cancel them): their run ids.
    pub async fn live_item_runs(&self, epoch_id: i64, stale_after_secs: f64) -> Result<Vec<i64>> {
        let now = self.backend.now_secs();
        let sql = format!(
            "SELECT run_id FROM run_items WHERE epoch_id = $1 AND status = 'running' AND run_id IS NOT NULL
               AND heartbeat >= {now} - $2"
        );
        Ok(sqlx::query_scalar(&sql).bind(epoch_id).bind(stale_after_secs).fetch_all(&self.pool).await?)
    }

    /// Queued items per suite (the queue's depth), for the Live screen.
    pub async fn queued_items_by_suite(&self) -> Result<Vec<(i64, i64)>> {
        Ok(sqlx::query_as(
            "SELECT suite_id, COUNT(*) FROM run_items WHERE status = 'queued' GROUP BY suite_id ORDER BY suite_id",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    // ----- workers -------------------------------------------------------

    /// Says a worker serves (first call) or is still alive (later ones).
    pub async fn worker_heartbeat(&self, owner: &str, holder: &str, offers: &[String], concurrency: i64) -> Result<()> {
        let now = self.backend.now_secs();
        let sql = format!(
            "INSERT INTO workers (owner, holder, host, pid, offers_json, concurrency, started, heartbeat, stopped)
             VALUES ($1, $2, $3, $4, $5, $6, {now}, {now}, 0)
             ON CONFLICT (owner) DO UPDATE SET heartbeat = {now}, holder = excluded.holder,
                 offers_json = excluded.offers_json, concurrency = excluded.concurrency, stopped = 0"
        );
        sqlx::query(&sql)
            .bind(owner)
            .bind(holder)
            .bind(crate::process::host())
            .bind(i64::from(std::process::id()))
            .bind(serde_json::to_string(offers)?)
            .bind(concurrency)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Says a worker stopped serving.
    pub async fn worker_stopped(&self, owner: &str) -> Result<()> {
        sqlx::query("UPDATE workers SET stopped = 1 WHERE owner = $1").bind(owner).execute(&self.writer).await?;
        Ok(())
    }

    /// The workers on the database, newest first, with how many seconds ago
    /// each last heartbeat was (on the database's clock).
    pub async fn workers(&self) -> Result<Vec<(WorkerRow, f64)>> {
        let now = self.backend.now_secs();
        let sql = format!("SELECT *, {now} - heartbeat AS quiet FROM workers ORDER BY started DESC");
        let rows = sqlx::query(&sql).fetch_all(&self.pool).await?;
        let mut out = Vec::new();
        for row in rows {
            use sqlx::{FromRow, Row};
            let worker = WorkerRow::from_row(&row)?;
            let quiet: f64 = row.try_get("quiet")?;
            out.push((worker, quiet));
        }
        Ok(out)
    }

    /// The offers of the workers that heartbeat within `live_secs`.
    pub async fn live_offers(&self, live_secs: f64) -> Result<Vec<Vec<String>>> {
        let now = self.backend.now_secs();
        let sql = format!("SELECT offers_json FROM workers WHERE stopped = 0 AND heartbeat >= {now} - $1");
        let rows: Vec<String> = sqlx::query_scalar(&sql).bind(live_secs).fetch_all(&self.pool).await?;
        Ok(rows.into_iter().map(|j| serde_json::from_str(&j).unwrap_or_default()).collect())
    }
}
