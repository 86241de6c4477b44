//! One run of a suite at a time: the run takes the suite's lease in the
//! store before it writes anything, heartbeats it while it works, and gives
//! it back when it ends. A second run — from another terminal, `serve` or
//! the desktop app on the same database — is refused with who holds the
//! suite; a lease whose process died is taken over.

use std::time::Duration;

use super::RunnerError;
use crate::store::{LeaseRow, Store};

/// How often a holder says it is alive, and how old a heartbeat may get
/// before its lease counts as abandoned (a process that hangs without dying).
const HEARTBEAT: Duration = Duration::from_secs(15);
// No longer than the queue's (`queue::STALE_AFTER`): a worker that takes
// over a dead worker's request must find its suite's lease stale too.
const STALE_AFTER: Duration = Duration::from_secs(60);

/// A held lease; [`SuiteLease::release`] gives it back.
pub struct SuiteLease {
    suite_id: i64,
    owner: String,
    heartbeat: tokio::task::JoinHandle<()>,
}

impl SuiteLease {
    pub async fn take(store: &Store, suite_id: i64, suite: &str) -> Result<SuiteLease, RunnerError> {
        // "host:pid:nonce#run": the process among all on the database (see
        // `process::origin`), then the run within it.
        let owner = format!("{}#{}", crate::process::origin(), uuid_like());
        let holder = format!("attractor (pid {})", std::process::id());
        match store.acquire_lease(suite_id, &owner, &holder, is_stale).await? {
            Ok(()) => {}
            Err(row) => {
                return Err(RunnerError::Busy { suite: suite.to_string(), holder: row.holder, since: row.acquired_at });
            }
        }
        let beat = store.clone();
        let me = owner.clone();
        let heartbeat = tokio::spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT).await;
                if let Err(e) = beat.heartbeat_lease(suite_id, &me).await {
                    tracing::debug!(error = %e, "could not heartbeat the suite's lease");
                }
            }
        });
        Ok(SuiteLease { suite_id, owner, heartbeat })
    }

    pub async fn release(self, store: &Store) {
        self.heartbeat.abort();
        if let Err(e) = store.release_lease(self.suite_id, &self.owner).await {
            tracing::warn!("could not give back the lease of the suite: {e}; the next run takes it over");
        }
    }
}

impl Drop for SuiteLease {
    /// A run dropped without releasing (a panic in a server task) stops
    /// heartbeating, so its lease turns stale and the next run takes it over.
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

/// A lease is abandoned when its process is gone (one of this machine) or
/// its heartbeat stopped long ago (any, a process elsewhere included).
pub(super) fn is_stale(row: &LeaseRow) -> bool {
    let origin = row.owner.split('#').next().unwrap_or_default();
    let dead = crate::process::origin_gone(origin) == Some(true);
    dead || crate::time::older_than(Some(&row.heartbeat_at), STALE_AFTER)
}

/// A nonce telling apart two runs of one process.
fn uuid_like() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{nanos:x}-{}", COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}
