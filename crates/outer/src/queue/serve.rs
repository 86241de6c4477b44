//! A worker's loop ([`Worker::serve`]): the jobs it works at once — a
//! launch it holds, or runs of a launch another worker holds — and how it
//! takes up those runs: the launch prepared here once (its suite file from
//! this machine or from the store, its model, its seed), then its runs one
//! after another while any is queued.

use std::path::PathBuf;

use tokio::sync::watch;

use super::{HEARTBEAT, RunRequest, WorkError, Worked, Worker, bundle, prepare};
use crate::artifact::Registry;
use crate::outer::RunnerError;
use crate::store::{ItemScope, QueuedRequest, RunItem};

/// What one of a worker's jobs was.
enum Job {
    /// A launch it held, to its end.
    Request(Worked),
    /// Runs of another worker's launch; `refused` when it cannot run them.
    Runs { request_id: Option<i64>, refused: bool },
}

impl Worker {
    /// Works the queue: up to `concurrency` jobs at once, claiming the next
    /// as one ends, until `stop` turns true (runs in flight are then
    /// cancelled, their epochs left to resume) or, with `until_idle`, until
    /// no launch is queued or running anywhere on the database. A job is a
    /// launch (this worker holds its suite: plans, closes epochs, proposes)
    /// or, when no launch waits, runs of a launch another worker holds.
    /// Returns the launches it held.
    pub async fn serve(&self, concurrency: usize, mut stop: watch::Receiver<bool>, until_idle: bool) -> Vec<Worked> {
        let concurrency = concurrency.max(1);
        let (cancel_tx, cancel_rx) = watch::channel(false);
        let mut jobs = tokio::task::JoinSet::new();
        let mut worked = Vec::new();
        // A stop whose sender is gone can no longer say stop.
        let mut stop_open = true;
        // Launches this worker found it cannot run runs of.
        let mut refused: Vec<i64> = Vec::new();
        let mut idle = crate::outer::ITEM_POLL;
        let mut next_request_claim = tokio::time::Instant::now();
        let mut next_beat = tokio::time::Instant::now();
        loop {
            if tokio::time::Instant::now() >= next_beat {
                next_beat = tokio::time::Instant::now() + HEARTBEAT;
                let n = i64::try_from(concurrency).unwrap_or(i64::MAX);
                if let Err(e) = self.store.worker_heartbeat(&self.me.owner, &self.me.holder, &self.me.offers, n).await {
                    tracing::debug!("could not heartbeat the worker: {e}");
                }
            }
            while jobs.len() < concurrency && !*stop.borrow() {
                // Launches first, at most every heartbeat while none comes: a
                // launch needs a holder before it has runs to share.
                if tokio::time::Instant::now() >= next_request_claim {
                    match self.claim().await {
                        Ok(Some(row)) => {
                            tracing::info!(request = row.id, suite = %row.suite_name, "claimed a run request");
                            let worker = Worker { requeue_interrupted: true, ..self.clone() };
                            let cancel = cancel_rx.clone();
                            let handle = tokio::runtime::Handle::current();
                            // The runner's future is not `Send` (see the
                            // service's launch), so each request runs on a
                            // blocking-pool thread that drives it.
                            jobs.spawn_blocking(move || Job::Request(handle.block_on(worker.work(&row, cancel))));
                            continue;
                        }
                        Ok(None) => next_request_claim = tokio::time::Instant::now() + HEARTBEAT,
                        Err(e) => {
                            tracing::warn!("could not claim a run request: {e}");
                            next_request_claim = tokio::time::Instant::now() + HEARTBEAT;
                        }
                    }
                }
                let scope = ItemScope::Any { skip: &refused };
                match self.store.claim_item(scope, &self.me.owner, &self.me.holder, &self.me.offers).await {
                    Ok(Some(item)) => {
                        idle = crate::outer::ITEM_POLL;
                        let worker = self.clone();
                        let cancel = cancel_rx.clone();
                        let handle = tokio::runtime::Handle::current();
                        jobs.spawn_blocking(move || handle.block_on(worker.work_runs(item, cancel)));
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!("could not claim a run: {e}");
                        break;
                    }
                }
            }
            if jobs.is_empty() && (*stop.borrow() || (until_idle && !self.launches_open().await)) {
                break;
            }
            tokio::select! {
                done = jobs.join_next(), if !jobs.is_empty() => {
                    // Just busy: the next epoch's runs come soon, so look often.
                    idle = crate::outer::ITEM_POLL;
                    match done {
                        Some(Ok(Job::Request(w))) => worked.push(w),
                        Some(Ok(Job::Runs { request_id: Some(id), refused: true })) => refused.push(id),
                        _ => {}
                    }
                }
                changed = stop.changed(), if stop_open => {
                    stop_open = changed.is_ok();
                }
                () = tokio::time::sleep(idle) => {
                    idle = (idle * 3 / 2).min(crate::outer::IDLE_POLL_MAX);
                }
            }
            if *stop.borrow() {
                let _ = cancel_tx.send(true);
            }
        }
        while let Some(done) = jobs.join_next().await {
            if let Ok(Job::Request(w)) = done {
                worked.push(w);
            }
        }
        if let Err(e) = self.store.worker_stopped(&self.me.owner).await {
            tracing::debug!("could not record the worker's stop: {e}");
        }
        worked
    }

    /// Whether any launch is queued or running on the database (its holder
    /// may still share runs).
    async fn launches_open(&self) -> bool {
        match self.store.launches_open().await {
            Ok(open) => open,
            Err(e) => {
                tracing::debug!("could not read the queue: {e}");
                true
            }
        }
    }

    /// Runs of another worker's launch, starting with `first`: the launch is
    /// prepared here once (its suite file, model, agent settings, seed), then
    /// this worker goes on with that launch's runs while any is queued.
    async fn work_runs(self, first: RunItem, cancel: watch::Receiver<bool>) -> Job {
        let request_id = first.request_id;
        let refused = match self.runs_of_launch(first, cancel).await {
            Ok(refused) => refused,
            Err(e) => {
                tracing::warn!(request = ?request_id, "could not run a run of the launch: {e}");
                true
            }
        };
        Job::Runs { request_id, refused }
    }

    /// The request with a suite file this machine has: the launch's own
    /// path when it is here, else the suite's folder from the store unpacked
    /// into this worker's cache. `None` when neither is to be had.
    async fn local_suite(&self, row: &QueuedRequest, mut req: RunRequest) -> Option<RunRequest> {
        let path = PathBuf::from(&req.suite_path);
        if path.is_file() {
            return Some(req);
        }
        let Some(digest) = row.suite_bundle.clone() else {
            tracing::warn!(request = row.id, path = %path.display(), "the launch's suite file is not on this machine, and its folder is not in the store; leaving its runs to other workers");
            return None;
        };
        let zip = match self.store.bundle(&digest).await {
            Ok(Some(zip)) => zip,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(request = row.id, "could not read the suite's folder from the store: {e}");
                return None;
            }
        };
        let cache = self.machine.runs_root.join(".suites");
        let unpacked = tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&cache).map_err(|e| bundle::BundleError::Damaged(e.to_string()))?;
            bundle::unpack_into(&cache, &digest, &zip)
        })
        .await;
        let dir = match unpacked {
            Ok(Ok(dir)) => dir,
            Ok(Err(e)) => {
                tracing::warn!(request = row.id, "{e}");
                return None;
            }
            Err(e) => {
                tracing::warn!(request = row.id, "could not unpack the suite's folder: {e}");
                return None;
            }
        };
        let file = path.file_name()?;
        req.suite_path = dir.join(file).display().to_string();
        Some(req)
    }

    /// [`Worker::work_runs`]; `Ok(true)` when this worker cannot run the
    /// launch's runs (the run it claimed went back to the queue).
    async fn runs_of_launch(&self, first: RunItem, cancel: watch::Receiver<bool>) -> Result<bool, WorkError> {
        let release = |item: &RunItem| self.store.release_item(item.id, &self.me.owner);
        let request = match first.request_id {
            Some(id) => self.store.queued_request(id).await?,
            None => None,
        };
        let (Some(row), Some(seed)) = (request.as_ref(), request.as_ref().and_then(|r| r.seed)) else {
            release(&first).await?;
            return Ok(true);
        };
        let req: RunRequest =
            serde_json::from_str(&row.request_json).map_err(|e| WorkError::Unreadable(row.id, e.to_string()))?;
        let req = match self.local_suite(row, req).await {
            Some(req) => req,
            None => {
                release(&first).await?;
                return Ok(true);
            }
        };
        let mut prepared = match prepare(&self.store, &req, &self.machine).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(request = row.id, suite = %row.suite_name, "cannot run runs of this launch here: {e}");
                release(&first).await?;
                return Ok(true);
            }
        };
        // The holder's seed, so every run is the run the holder would do.
        prepared.config.seed = u64::try_from(seed).unwrap_or_default();
        let registry = Registry::load(self.store.clone()).await.map_err(RunnerError::from)?;
        let runner =
            prepared.runner(&self.store, registry, &self.bus, cancel.clone()).as_worker(self.me.clone(), Some(row.id));
        let mut item = first;
        loop {
            if !runner.work_item(item).await? {
                return Ok(true);
            }
            if *cancel.borrow() {
                return Ok(false);
            }
            match self
                .store
                .claim_item(ItemScope::Launch(row.id), &self.me.owner, &self.me.holder, &self.me.offers)
                .await?
            {
                Some(next) => item = next,
                None => return Ok(false),
            }
        }
    }
}
