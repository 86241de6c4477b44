//! Suite leases (table `suite_leases`): one run of a suite at a time, on
//! one database, whichever process starts it. The outer loop takes the
//! lease before it writes anything, heartbeats it, and gives it back at the
//! end; a lease left by a process that died is taken over.

use super::{Result, Store};
use crate::now_rfc3339;

/// A lease as stored.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct LeaseRow {
    pub suite_id: i64,
    pub owner: String,
    pub holder: String,
    pub acquired_at: String,
    pub heartbeat_at: String,
}

impl Store {
    /// Takes the suite's lease for `owner`, or taking over one `stale` calls
    /// dead; `Ok(Err(row))` names the live holder when it is not free.
    pub async fn acquire_lease(
        &self,
        suite_id: i64,
        owner: &str,
        holder: &str,
        stale: impl Fn(&LeaseRow) -> bool,
    ) -> Result<std::result::Result<(), LeaseRow>> {
        let mut tx = self.begin_write().await?;
        let current: Option<LeaseRow> = sqlx::query_as("SELECT * FROM suite_leases WHERE suite_id = $1")
            .bind(suite_id)
            .fetch_optional(&mut *tx)
            .await?;
        if let Some(row) = current.filter(|r| r.owner != owner && !stale(r)) {
            return Ok(Err(row));
        }
        let now = now_rfc3339();
        sqlx::query(
            "INSERT INTO suite_leases (suite_id, owner, holder, acquired_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (suite_id) DO UPDATE SET owner = excluded.owner, holder = excluded.holder,
                 acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at",
        )
        .bind(suite_id)
        .bind(owner)
        .bind(holder)
        .bind(&now)
        .bind(&now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Ok(()))
    }

    /// The suite's lease, when someone holds (or held and left) it.
    pub async fn suite_lease(&self, suite_id: i64) -> Result<Option<LeaseRow>> {
        Ok(sqlx::query_as("SELECT * FROM suite_leases WHERE suite_id = $1")
            .bind(suite_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Says the holder is alive; `false` when it no longer holds the lease.
    pub async fn heartbeat_lease(&self, suite_id: i64, owner: &str) -> Result<bool> {
        let done = sqlx::query("UPDATE suite_leases SET heartbeat_at = $1 WHERE suite_id = $2 AND owner = $3")
            .bind(now_rfc3339())
            .bind(suite_id)
            .bind(owner)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Gives the lease back (nothing when `owner` does not hold it).
    pub async fn release_lease(&self, suite_id: i64, owner: &str) -> Result<()> {
        sqlx::query("DELETE FROM suite_leases WHERE suite_id = $1 AND owner = $2")
            .bind(suite_id)
            .bind(owner)
            .execute(&self.writer)
            .await?;
        Ok(())
    }
}
