//! An epoch's runs as units of work any worker on the database can do
//! (issue 38), and the one place a task is run and its run recorded.
//!
//! The suite's holder does not run its epoch's tasks by itself: it enqueues
//! one item per task still to run ([`crate::store::RunItem`]), works items
//! of that epoch itself up to its concurrency, and waits for the ones other
//! workers claimed — an `attractor worker` with nothing of its own to do
//! claims items of any launch ([`SuiteRunner::work_item`]). The epoch closes
//! from what the store holds once every item is done, so its history is the
//! same whoever ran which run: each run's seed comes from the epoch and the
//! task, its artifacts from the epoch's parent versions in the store.
//!
//! A worker heartbeats each item it runs. One that stops (killed, cut off)
//! loses the item to the next claim after [`ITEM_STALE_AFTER`] on the
//! database's clock, or at once when it was a process of the claiming
//! machine; the run it had started is closed as cancelled, and a late finish
//! from it is fenced off (recorded as superseded, counted nowhere).

use std::time::Duration;

use serde_json::json;
use tokio::sync::watch;

use super::{RunnerError, SuiteRunner, duration_ms, epoch_seed, task_hash};
use crate::bus::Event;
use crate::loss;
use crate::store::{EpochRow, ItemScope, ItemStatus, NewItem, RunEnd, RunItem};
use crate::suite::{Task, TaskKind};
use crate::task::{self, ActiveArtifact};

/// How often a worker heartbeats an item it runs.
pub const ITEM_HEARTBEAT: Duration = Duration::from_secs(2);
/// How long an item's heartbeat may be quiet before another worker takes it.
pub const ITEM_STALE_AFTER: Duration = Duration::from_secs(60);
/// How often a holder looks at the items others run, and an idle worker at
/// the queue (backing off to [`IDLE_POLL_MAX`] while nothing comes).
pub const ITEM_POLL: Duration = Duration::from_millis(100);
pub const IDLE_POLL_MAX: Duration = Duration::from_secs(1);

/// Who works items: the worker's id in the queue, the words people see,
/// and the labels it offers (`--offers`).
#[derive(Debug, Clone)]
pub struct WorkerIdentity {
    pub owner: String,
    pub holder: String,
    pub offers: Vec<String>,
}

impl WorkerIdentity {
    /// This process, named by `role` ("attractor run", "attractor worker").
    pub fn of_process(role: &str, offers: Vec<String>) -> WorkerIdentity {
        WorkerIdentity {
            owner: crate::process::origin().to_string(),
            holder: format!("{role} (pid {} on {})", std::process::id(), crate::process::host()),
            offers,
        }
    }
}

/// Whether the worker that owns an item is gone: a process of this machine
/// that died (one elsewhere waits for its heartbeat to go stale).
pub fn owner_gone(owner: &str) -> bool {
    crate::process::origin_gone(owner) == Some(true)
}

impl SuiteRunner {
    /// Runs the tasks of `epoch` in `todo` as queue items: enqueues them,
    /// works them here up to the run's concurrency and waits for those other
    /// workers took. Returns once every item is done, or on a cancel (the
    /// items nobody claimed leave the queue; the epoch resumes later).
    pub(super) async fn run_epoch_items(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        todo: &[&Task],
        artifacts: &[ActiveArtifact],
        seed: u64,
    ) -> Result<(), RunnerError> {
        let digests: Vec<String> = todo.iter().map(|t| t.digest()).collect();
        let items: Vec<NewItem<'_>> = todo
            .iter()
            .zip(&digests)
            .map(|(t, d)| NewItem { task_name: &t.name, task_digest: d, needs: &t.needs })
            .collect();
        let stale = ITEM_STALE_AFTER.as_secs_f64();
        self.store.enqueue_items(self.request_id, suite_id, epoch.id, &items, stale).await?;
        let concurrency = self.config.concurrency.max(1);
        // Once workers had time to say they serve, runs nobody can take are
        // named (once), instead of waited on in silence.
        let name_waiting_at = tokio::time::Instant::now() + 2 * ITEM_HEARTBEAT;
        let mut named = false;
        loop {
            // `concurrency` slots, each claiming and running the epoch's
            // items until none is left to claim, polled by one future: a
            // slot waiting for SQLite's one writer connection must not
            // starve the slot that holds it. (Other workers publish their
            // runs' events themselves; the app follows them from the store.)
            futures::future::try_join_all((0..concurrency).map(|_| self.slot(suite_id, epoch, artifacts, seed)))
                .await?;
            if self.cancelled() {
                self.store.withdraw_items(epoch.id).await?;
                return Ok(());
            }
            if self.store.item_counts(epoch.id).await?.finished() {
                break;
            }
            // The rest is with other workers: take back what a dead one held.
            self.store.requeue_lost_items(epoch.id, stale, owner_gone).await?;
            if !named && tokio::time::Instant::now() >= name_waiting_at {
                named = true;
                self.name_unclaimable(suite_id, epoch).await?;
            }
            self.pause(ITEM_POLL).await;
        }
        Ok(())
    }

    /// Claims and runs items of `epoch` one after another while any is queued.
    async fn slot(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        artifacts: &[ActiveArtifact],
        seed: u64,
    ) -> Result<(), RunnerError> {
        let me = &self.identity;
        while !self.cancelled() {
            let Some(item) =
                self.store.claim_item(ItemScope::Epoch(epoch.id), &me.owner, &me.holder, &me.offers).await?
            else {
                break;
            };
            self.run_item(suite_id, epoch, item, artifacts, seed).await?;
        }
        Ok(())
    }

    /// Leaves a notice in the inbox naming the epoch's queued runs whose
    /// `needs:` neither this worker nor any live one offers.
    async fn name_unclaimable(&self, suite_id: i64, epoch: &EpochRow) -> Result<(), RunnerError> {
        let mut offers = self.store.live_offers(ITEM_STALE_AFTER.as_secs_f64()).await?;
        offers.push(self.identity.offers.clone());
        let stuck: Vec<(String, Vec<String>)> = self
            .store
            .epoch_items(epoch.id)
            .await?
            .into_iter()
            .filter(|i| i.status == ItemStatus::Queued && !i.offered_by(&offers))
            .map(|i| (i.task_name.clone(), i.needs()))
            .collect();
        if stuck.is_empty() {
            return Ok(());
        }
        let named: Vec<String> = stuck.iter().map(|(t, n)| format!("`{t}` needs {}", n.join(", "))).collect();
        let mut labels: Vec<&str> = stuck.iter().flat_map(|(_, n)| n.iter().map(String::as_str)).collect();
        labels.sort_unstable();
        labels.dedup();
        let subject = format!(
            "suite `{}`, epoch {}: {} no worker on the database offers what it needs ({}); start one with `attractor worker --offers {}`",
            self.suite.name,
            epoch.epoch_num,
            if stuck.len() == 1 { "a run waits:".to_string() } else { format!("{} runs wait:", stuck.len()) },
            named.join("; "),
            labels.join(",")
        );
        tracing::warn!("{subject}");
        let notice = crate::store::Intervention {
            // Some of the epoch's runs need labels no live worker offers:
            // they wait until one that does starts.
            kind: crate::domain::InterventionKind::RunsWaiting.as_str().to_string(),
            suite_id: Some(suite_id),
            run_id: None,
            task_name: stuck.first().map(|(t, _)| t.clone()),
            subject,
            context_json: json!({ "epoch": epoch.epoch_num, "waiting": stuck }).to_string(),
        };
        self.store.insert_notice(&notice).await?;
        Ok(())
    }

    /// Sleeps `d`, or less if the run is cancelled meanwhile.
    async fn pause(&self, d: Duration) {
        let mut cancel = self.cancel.clone();
        tokio::select! {
            () = tokio::time::sleep(d) => {}
            _ = cancel.wait_for(|c| *c) => {}
        }
    }

    /// Works one item a worker claimed of a launch it does not hold: the
    /// epoch's parent artifacts are read from the store. `Ok(false)` when
    /// this worker cannot run it (its suite file here defines the task
    /// otherwise, or lacks it): the item goes back to the queue.
    pub async fn work_item(&self, item: RunItem) -> Result<bool, RunnerError> {
        let here = self.suite.tasks.iter().find(|t| t.name == item.task_name);
        let Some(epoch) = self.store.epoch_by_id(item.epoch_id).await? else {
            self.store.release_item(item.id, &self.identity.owner).await?;
            return Ok(false);
        };
        if here.is_none_or(|t| t.digest() != item.task_digest) {
            tracing::warn!(task = %item.task_name, suite = %self.suite.name, "the suite file here defines the task otherwise than its holder's; leaving the run to another worker");
            self.store.release_item(item.id, &self.identity.owner).await?;
            return Ok(false);
        }
        let (_, artifacts) = self.epoch_artifacts(&epoch).await?;
        let seed = epoch_seed(self.config.seed, epoch.epoch_num);
        self.run_item(item.suite_id, &epoch, item, &artifacts, seed).await?;
        Ok(true)
    }

    /// Runs the task of a claimed item while heartbeating it: a person's
    /// cancel of the launch, or the item taken over, stops the run.
    async fn run_item(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        item: RunItem,
        artifacts: &[ActiveArtifact],
        seed: u64,
    ) -> Result<(), RunnerError> {
        let Some(t) = self.suite.tasks.iter().find(|t| t.name == item.task_name) else {
            self.store.release_item(item.id, &self.identity.owner).await?;
            return Ok(());
        };
        let (stop_tx, stop_rx) = watch::channel(*self.cancel.borrow());
        let beat = {
            let store = self.store.clone();
            let owner = self.identity.owner.clone();
            let mut cancel = self.cancel.clone();
            let id = item.id;
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = tokio::time::sleep(ITEM_HEARTBEAT) => {}
                        _ = cancel.wait_for(|c| *c) => {
                            let _ = stop_tx.send(true);
                            return;
                        }
                    }
                    match store.heartbeat_item(id, &owner).await {
                        Ok(Some(true) | None) => {
                            let _ = stop_tx.send(true);
                        }
                        Ok(Some(false)) => {}
                        Err(e) => tracing::debug!(item = id, "could not heartbeat the run: {e}"),
                    }
                }
            })
        };
        // Stopped however the run ends, its future dropped included: a
        // heartbeat outliving its run would keep the item from other workers.
        let _beat = AbortOnDrop(beat);
        self.run_task(suite_id, epoch, t, &item, artifacts, seed, stop_rx).await
    }

    /// Runs one task once and records the run, as the item's: it counts only
    /// if this worker still holds the item when it ends.
    #[allow(clippy::too_many_arguments)]
    async fn run_task(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        t: &Task,
        item: &RunItem,
        artifacts: &[ActiveArtifact],
        seed: u64,
        cancel: watch::Receiver<bool>,
    ) -> Result<(), RunnerError> {
        if *cancel.borrow() {
            self.store.release_item(item.id, &self.identity.owner).await?;
            return Ok(());
        }
        let run_dir = task::command::fresh_run_dir(&self.config.runs_root, &self.suite.name, epoch.epoch_num, &t.name);
        let run_id = self
            .store
            .insert_run(suite_id, epoch.id, &t.name, t.kind_name(), &run_dir.to_string_lossy(), Some(&item.task_digest))
            .await?;
        self.store.item_run(item.id, &self.identity.owner, &self.identity.holder, run_id).await?;
        self.bus.publish(Event::RunStarted {
            suite_id,
            epoch_id: epoch.id,
            run_id,
            task: t.name.clone(),
            kind: t.kind.task_type(),
            worker: self.identity.holder.clone(),
        });
        // The run's model calls are counted on their own too (and in the
        // whole run's totals, where its budgets are kept).
        let scope = crate::llm::CallScope { suite_id: Some(suite_id), epoch_id: Some(epoch.id), run_id: Some(run_id) };
        let metered = |client: Option<&crate::llm::LlmClient>| {
            client.map(|c| {
                let usage = std::sync::Arc::new(crate::llm::Usage::under(std::sync::Arc::clone(c.usage())));
                let client = c.clone().with_usage(std::sync::Arc::clone(&usage)).with_ledger(self.store.clone(), scope);
                (client, usage)
            })
        };
        let (coordinator_llm, agent_llm) = match &t.kind {
            TaskKind::Optimize(_) => (metered(self.llm.as_ref()), None),
            TaskKind::Agent(_) => (None, metered(self.agent_model())),
            TaskKind::Command(_) => (None, None),
        };
        let run_usage = coordinator_llm.as_ref().or(agent_llm.as_ref()).map(|(_, u)| std::sync::Arc::clone(u));
        let outcome = match &t.kind {
            TaskKind::Command(spec) => {
                task::command::run(task::command::CommandRun {
                    task: t,
                    spec,
                    run_dir: &run_dir,
                    suite_dir: &self.suite.dir,
                    epoch_num: epoch.epoch_num,
                    artifacts,
                    example_ids: None,
                    cancel: cancel.clone(),
                })
                .await
            }
            TaskKind::Optimize(spec) => {
                task::optimize::run(task::optimize::OptimizeRun {
                    task: t,
                    spec,
                    suite_id,
                    run_id,
                    run_dir: &run_dir,
                    suite_dir: &self.suite.dir,
                    epoch_num: epoch.epoch_num,
                    artifacts,
                    store: self.store.clone(),
                    bus: self.bus.clone(),
                    seed: epoch_seed(seed, task_hash(&t.name)),
                    llm: coordinator_llm.map(|(c, _)| c),
                    cancel: cancel.clone(),
                })
                .await
            }
            // Boxed: an agent run's future is large (its trajectory loop, its
            // splits' subtasks), and inline it would sit in every frame that
            // polls the epoch loop.
            TaskKind::Agent(spec) => {
                Box::pin(task::agent::run(task::agent::AgentRun {
                    task: t,
                    spec,
                    suite_id,
                    epoch_id: epoch.id,
                    run_id,
                    run_dir: &run_dir,
                    suite_dir: &self.suite.dir,
                    artifacts,
                    store: self.store.clone(),
                    bus: self.bus.clone(),
                    seed: epoch_seed(seed, task_hash(&t.name)),
                    llm: agent_llm.map(|(c, _)| c),
                    config: self.agent_config.clone(),
                    cancel: cancel.clone(),
                }))
                .await
            }
        };
        let state = outcome.state();
        let breakdown =
            (!outcome.cancelled).then(|| loss::compute(&outcome.signals, &t.weights, t.budget.max_rejections));
        let scores = json!({
            "status": state,
            "eval_score": outcome.signals.eval_score,
            "critique_score": outcome.signals.critique_score,
            "gate_rejection_count": outcome.signals.gate_rejection_count,
            "budget_remaining_pct": outcome.signals.budget_remaining_pct,
            "metrics": outcome.metrics,
            "breakdown": breakdown,
        });
        let end = RunEnd {
            task_name: t.name.clone(),
            status: state.as_str().to_string(),
            duration_ms: duration_ms(outcome.duration),
            exit_code: outcome.exit_code,
            loss: breakdown.as_ref().map(|b| b.total),
            loss_breakdown_json: breakdown.as_ref().and_then(|b| serde_json::to_string(b).ok()),
            scores_json: breakdown.as_ref().map(|_| scores.to_string()),
            result_json: outcome.result_json.clone(),
            error: outcome.error.clone(),
            stdout: Some(outcome.stdout.clone()),
            stderr: Some(outcome.stderr.clone()),
            model: run_usage.map(|u| crate::llm::ModelSpend::from(u.snapshot())).filter(|m| m.calls > 0),
        };
        tracing::debug!(task = %t.name, run_id, status = %end.status, loss = ?end.loss, error = ?end.error, "run finished");
        let counted = self.store.finish_item(item.id, &self.identity.owner, run_id, epoch.id, &end).await?;
        if !counted {
            tracing::warn!(task = %t.name, run_id, "another worker took this run over; it does not count");
            return Ok(());
        }
        self.bus.publish(Event::RunFinished {
            suite_id,
            epoch_id: epoch.id,
            run_id,
            task: t.name.clone(),
            status: state,
            loss: end.loss,
            duration_ms: end.duration_ms,
            error: end.error,
        });
        Ok(())
    }
}

/// A spawned task that ends with its owner.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
