//! What `attractor gc` may prune, asked of the store: run folders of epochs
//! long closed, model replies cached long ago, and the file's free pages.
//! The rows themselves stay — losses, outputs and history are what the app
//! shows; the folders and the cache are what grows without bound.

use super::{Result, Store};

/// A run whose folder may go.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct PrunableRun {
    pub run_id: i64,
    pub run_dir: String,
}

impl Store {
    /// Runs that ended, in closed epochs older than the last `keep_epochs`
    /// of their suite. A run still going or waiting on a person, and any
    /// run of an unfinished epoch (a resume re-attaches to its folder), stays.
    pub async fn prunable_runs(&self, keep_epochs: i64) -> Result<Vec<PrunableRun>> {
        Ok(sqlx::query_as(
            "SELECT r.id AS run_id, r.run_dir FROM runs r JOIN epochs e ON e.id = r.epoch_id
             WHERE r.finished_at IS NOT NULL AND e.completed_at IS NOT NULL
               AND e.epoch_num <= (SELECT MAX(x.epoch_num) FROM epochs x WHERE x.suite_id = e.suite_id) - $1
             ORDER BY r.id",
        )
        .bind(keep_epochs.max(0))
        .fetch_all(&self.pool)
        .await?)
    }

    /// Cached model replies made before `before` (RFC 3339): how many, and
    /// the bytes of their requests and replies.
    pub async fn stale_cache(&self, before: &str) -> Result<(i64, i64)> {
        Ok(sqlx::query_as(
            "SELECT COUNT(*), CAST(COALESCE(SUM(LENGTH(request_json) + LENGTH(response_json)), 0) AS BIGINT)
             FROM llm_cache WHERE created_at < $1",
        )
        .bind(before)
        .fetch_one(&self.pool)
        .await?)
    }

    /// Drops the cached model replies made before `before`; how many went.
    pub async fn drop_stale_cache(&self, before: &str) -> Result<u64> {
        Ok(sqlx::query("DELETE FROM llm_cache WHERE created_at < $1")
            .bind(before)
            .execute(&self.writer)
            .await?
            .rows_affected())
    }

    /// Gives the file's free pages back to the file system (on PostgreSQL,
    /// to the server's free space map).
    pub async fn vacuum(&self) -> Result<()> {
        if self.backend == super::Backend::Sqlite {
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&self.writer).await?;
        }
        sqlx::query("VACUUM").execute(&self.writer).await?;
        Ok(())
    }
}
