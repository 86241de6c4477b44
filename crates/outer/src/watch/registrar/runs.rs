//! The watcher's runs: a file's approved content queued as a run, started
//! while there is room (only if the file and its commands are still what
//! was approved), and ended as its launch ends — the bus brings that news,
//! and a person's answers to the files waiting for one.

use super::*;

impl Registrar {
    pub(super) async fn on_bus(&mut self, env: Envelope) -> Result<()> {
        match env.event {
            Event::InterventionAnswered { .. } => self.refresh_approvals().await,
            Event::LaunchEnded { launch_id, suite_id, status, error, .. } => {
                let Some(run_id) = self.running.remove(&launch_id) else { return Ok(()) };
                let (status, error) = match status.as_str() {
                    "finished" => ("finished", None),
                    "cancelled" if self.paused => ("queued", None),
                    "cancelled" => {
                        ("cancelled", Some("cancelled by a person; launch the suite to finish its epoch".to_string()))
                    }
                    _ => ("failed", error),
                };
                let launch = (status != "queued").then_some(launch_id);
                if let Some(run) =
                    self.store.update_watched_run(run_id, status, launch, suite_id, error.as_deref()).await?
                {
                    let path = self.store.watched_file(run.file_id).await?.map(|f| f.path).unwrap_or_default();
                    self.publish_run(&run, &path);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Starts queued runs while there is room.
    pub(super) async fn pump_runs(&mut self) -> Result<()> {
        if self.paused {
            return Ok(());
        }
        let mut busy = Vec::new();
        while self.running.len() < self.config.max_concurrent_runs.max(1) {
            let Some(run) = self.store.claim_watched_run(&self.owner, &busy).await? else { break };
            let Some(file) = self.store.watched_file(run.file_id).await? else {
                self.end_run(&run, "dropped", "its file record is gone", "").await?;
                continue;
            };
            // What runs is what was approved: the file is read again, and a
            // run whose content changed since it was queued does not start
            // (the new content is checked, and queued, on its own).
            let path = PathBuf::from(&file.path);
            let bytes = match read_capped(&path, self.config.max_file_bytes) {
                Ok(b) => b,
                Err(_) => {
                    self.end_run(&run, "dropped", "the file could not be read when its run was due", &file.path)
                        .await?;
                    continue;
                }
            };
            if commands::content_hash(&bytes) != run.content_hash {
                self.end_run(&run, "dropped", "the file changed before its run started", &file.path).await?;
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            let parsed = if file.kind == "task" {
                suite::parse_task_file_with(&text, &path, file.suite_name.as_deref(), &self.config.access)
            } else {
                suite::parse_with(&text, &path, &self.config.access)
            };
            let s = match parsed {
                Ok(s) => s,
                Err(e) => {
                    self.end_run(&run, "failed", &e.to_string(), &file.path).await?;
                    continue;
                }
            };
            // The commands are read again too: an evaluator command comes from
            // a problem file that may have changed since the approval.
            let key = commands::planned_commands(&s)
                .ok()
                .filter(|p| !p.is_empty())
                .map(|p| commands::approval_key(&run.content_hash, &p));
            if key != file.approval_key {
                self.end_run(
                    &run,
                    "dropped",
                    "its commands changed since they were approved; they are asked about again",
                    &file.path,
                )
                .await?;
                self.look_at(&path, true).await?;
                continue;
            }
            match self.launcher.launch(s).await {
                Ok(launch_id) => {
                    self.running.insert(launch_id, run.id);
                    if let Some(r) =
                        self.store.update_watched_run(run.id, "running", Some(launch_id), None, None).await?
                    {
                        self.publish_run(&r, &file.path);
                    }
                }
                Err(LaunchRefusal::Busy(_)) => {
                    self.store.update_watched_run(run.id, "queued", None, None, None).await?;
                    busy.push(run.id);
                }
                Err(LaunchRefusal::Failed(message)) => {
                    self.end_run(&run, "failed", &message, &file.path).await?;
                }
            }
        }
        Ok(())
    }

    pub(super) async fn end_run(&self, run: &WatchedRunRow, status: &str, error: &str, path: &str) -> Result<()> {
        if let Some(r) = self.store.update_watched_run(run.id, status, None, None, Some(error)).await? {
            self.publish_run(&r, path);
        }
        Ok(())
    }

    pub(super) fn publish_run(&self, r: &WatchedRunRow, path: &str) {
        self.bus.publish(Event::WatchedRunUpdated {
            watched_run_id: r.id,
            path: path.to_string(),
            suite: r.suite_name.clone(),
            status: crate::domain::stored::WatchedRunStatus::parse(&r.status),
            launch_id: r.launch_id,
            error: r.error.clone(),
        });
    }

    pub(super) fn wake_idle_waiters(&mut self) {
        if self.running.is_empty() || self.paused {
            for w in self.idle_waiters.drain(..) {
                let _ = w.send(());
            }
        }
    }
}
