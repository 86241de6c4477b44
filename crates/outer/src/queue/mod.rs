//! Runs as data: a launched run is a row in the store's queue, and a
//! [`Worker`] — in `attractor run`, in the app, or an `attractor worker`
//! process on any machine sharing the database — claims it, works it and
//! completes it.
//!
//! This is also the one place a [`RunRequest`] becomes a running
//! [`SuiteRunner`] ([`prepare`]): the suite loaded with the folders it may
//! reach, a watched file's approval checked, the model client built from
//! the machine's settings with the suite's and the request's limits over
//! them, the agent configuration loaded, the seed chosen. The CLI and the
//! service used to do this each their own way.
//!
//! A worker heartbeats the request while it runs and reads a person's
//! cancel from it. A request whose worker died (its process is gone, or its
//! heartbeat is old) is claimed again by the next worker, and its run
//! continues the plan the dead one left: the runs it finished are kept, the
//! ones it had in flight run again.

pub mod bundle;
pub mod offers;
mod serve;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::artifact::Registry;
use crate::bus::{Bus, Event};
use crate::llm::{LlmClient, LlmSettings};
use crate::outer::request::{InvalidRequest, RunRequest};
use crate::outer::{RunConfig, RunSummary, RunnerError, SuiteRunner, WorkerIdentity};
use crate::store::{Claimant, Completion, QueueStatus, QueuedRequest, RequestProgress, Store, StoreError};
use crate::suite::{self, Suite, SuiteError};
use crate::task::agent::AgentConfig;

/// How often a worker says it is alive and reads a cancel, and how old a
/// heartbeat may get before the request counts as abandoned (a worker on
/// another machine, whose process cannot be asked).
pub const HEARTBEAT: Duration = Duration::from_secs(2);
pub const STALE_AFTER: Duration = Duration::from_secs(60);

/// A name lookup for the environment (tests give their own).
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What belongs to the machine working a request, not to the request:
/// where run folders go, the model endpoint, key and the settings' limits,
/// the folders the settings allow every suite.
#[derive(Clone)]
pub struct Machine {
    pub runs_root: PathBuf,
    /// The endpoint, model and key, with the settings file's limits and prices.
    pub model: LlmSettings,
    pub access: suite::Access,
    pub env: Env,
}

/// Why a request cannot run.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Request(#[from] InvalidRequest),
    /// The suite file is wrong (located issues).
    #[error(transparent)]
    Suite(SuiteError),
    /// A watched file waits for (or was refused) a person's approval.
    #[error("{message}")]
    Blocked { message: String, unasked: bool },
    #[error("{0}")]
    Model(String),
    /// The agent configuration file is wrong.
    #[error(transparent)]
    Agent(SuiteError),
    #[error(transparent)]
    Runner(#[from] RunnerError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A request made ready to run.
pub struct Prepared {
    pub suite: Suite,
    pub config: RunConfig,
    /// The model client, when one is configured (the optimizer's).
    pub model: Option<LlmClient>,
    /// The coordinator's LLM tier: the model unless the request said `no_llm`.
    pub llm: Option<LlmClient>,
    pub agent: AgentConfig,
}

/// Turns a request into a run ready to start on `machine`.
pub async fn prepare(store: &Store, req: &RunRequest, machine: &Machine) -> Result<Prepared, PrepareError> {
    req.validate()?;
    let mut access = machine.access.clone();
    access.outside.extend(req.outside());
    let path = PathBuf::from(&req.suite_path);
    let suite = suite::load_with(&path, &access).and_then(suite::check_runnable).map_err(PrepareError::Suite)?;
    // A file found by the watcher runs nothing before a person approved it,
    // whoever works the request.
    crate::watch::launch_allowed(store, &path, &suite)
        .await
        .map_err(|b| PrepareError::Blocked { message: b.message, unasked: b.unasked })?;
    let env = Arc::clone(&machine.env);
    let settings = machine.model.clone().overlay(&suite.llm.to_settings()).overlay(&req.model.to_settings());
    let model = match crate::llm::LlmConfig::resolve(&settings, |n| env(n)) {
        Ok(config) => {
            Some(LlmClient::new(config).map_err(|e| PrepareError::Model(e.to_string()))?.with_store(store.clone()))
        }
        Err(crate::llm::LlmError::NoModel) => None,
        Err(e) if req.no_llm && !req.optimizer.needs_model() => {
            tracing::debug!("ignoring the model settings (no_llm): {e}");
            None
        }
        Err(e) => return Err(PrepareError::Model(e.to_string())),
    };
    if req.optimizer.needs_model() && model.is_none() {
        return Err(RunnerError::NeedsModel(req.optimizer.name()).into());
    }
    // Before anything starts or is printed: what this database and model
    // configuration refuse a run of the suite for.
    crate::outer::preflight::refusals(&suite, model.is_some(), &store.declarations().await?)
        .map_err(PrepareError::Suite)?;
    let llm = if req.no_llm { None } else { model.clone() };
    let agent = req.agent_config(|n| env(n)).map_err(PrepareError::Agent)?;
    let mut config = req.run_config(machine.runs_root.clone(), 0);
    // Without a seed, the request continues the plan a stopped run of the
    // suite left unfinished with the same settings, with its seed.
    config.seed = match req.seed {
        Some(seed) => seed,
        None => {
            crate::outer::stopped_plan_seed(store, &suite.name, &config).await?.unwrap_or_else(crate::outer::fresh_seed)
        }
    };
    Ok(Prepared { suite, config, model, llm, agent })
}

impl Prepared {
    /// The runner of this run, publishing on `bus`, stopping on `cancel`.
    pub fn runner(self, store: &Store, registry: Registry, bus: &Bus, cancel: watch::Receiver<bool>) -> SuiteRunner {
        let mut runner = SuiteRunner::new(store.clone(), registry, bus.clone(), self.suite, self.config, cancel)
            .with_agent_config(self.agent);
        if let Some(client) = self.llm {
            runner = runner.with_llm(client);
        }
        if let Some(client) = self.model {
            runner = runner.with_optimizer_llm(client);
        }
        runner
    }
}

/// Whether a request's worker is gone: its process of this machine died, or
/// its heartbeat stopped long ago (a worker elsewhere, whose process cannot
/// be asked; a pid reused by another process; a worker that is alive but
/// stuck, or whose completion never reached the store).
pub fn is_abandoned(row: &QueuedRequest) -> bool {
    if row.status != QueueStatus::Running {
        return false;
    }
    let Some(owner) = row.owner.as_deref() else { return true };
    crate::time::older_than(row.heartbeat_at.as_deref(), STALE_AFTER)
        || crate::process::origin_gone(owner) == Some(true)
}

/// A request as it ended, for the caller.
#[derive(Debug)]
pub struct Worked {
    pub id: i64,
    pub outcome: Result<RunSummary, WorkError>,
}

/// Why working a request did not give a summary.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error(transparent)]
    Run(#[from] RunnerError),
    /// The stored request is not one this version can read.
    #[error("request {0} cannot be read: {1}")]
    Unreadable(i64, String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Works requests of the queue on one machine.
#[derive(Clone)]
pub struct Worker {
    store: Store,
    bus: Bus,
    machine: Arc<Machine>,
    /// Who this worker is in the queue ([`crate::process::origin`]), the
    /// words people see, and the labels it offers: it claims runs of tasks
    /// that need no more.
    me: WorkerIdentity,
    /// Whether a run this worker stopped (not a person) goes back to the
    /// queue: so in [`Worker::serve`]; `attractor run` and the app end it
    /// cancelled, to be resumed by launching it again.
    requeue_interrupted: bool,
}

impl Worker {
    pub fn new(store: Store, bus: Bus, machine: Machine, role: &str) -> Worker {
        Worker {
            store,
            bus,
            machine: Arc::new(machine),
            me: WorkerIdentity::of_process(role, Vec::new()),
            requeue_interrupted: false,
        }
    }

    /// Offers `labels` (`--offers`): runs of tasks that need them are this
    /// worker's to take too.
    pub fn with_offers(mut self, labels: Vec<String>) -> Worker {
        self.me.offers = labels;
        self
    }

    pub fn claimant(&self) -> Claimant<'_> {
        Claimant { owner: &self.me.owner, holder: &self.me.holder }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Enqueues `req` as this worker's own (it runs it now); `Err` names the
    /// request of the suite that is already queued or running.
    pub async fn enqueue_own(&self, suite: &str, req: &RunRequest) -> Result<Result<i64, QueuedRequest>, StoreError> {
        let json = serde_json::to_string(req)?;
        self.store.enqueue(suite, &json, Some(&self.claimant()), is_abandoned).await
    }

    /// Claims the next request this worker may take, if any.
    pub async fn claim(&self) -> Result<Option<QueuedRequest>, StoreError> {
        self.store.claim_request(&self.claimant(), is_abandoned).await
    }

    /// Works one request this worker holds to its end: prepares it, runs it
    /// while heartbeating (a person's cancel arrives through the
    /// heartbeat, or through `cancel` from this process), and completes it.
    pub async fn work(&self, row: &QueuedRequest, cancel: watch::Receiver<bool>) -> Worked {
        self.work_with(row, cancel, |_, _| {}).await
    }

    /// [`Worker::work`], showing the prepared run to `announce` before it
    /// starts (`attractor run` prints its plan and model preview).
    pub async fn work_with(
        &self,
        row: &QueuedRequest,
        cancel: watch::Receiver<bool>,
        announce: impl FnOnce(&Prepared, &Registry),
    ) -> Worked {
        // A panic in the run (a bug) must not leave the request "running"
        // forever: it ends failed, with the reason, and can be launched again.
        let work = std::panic::AssertUnwindSafe(self.work_inner(row, cancel, announce));
        let outcome = match futures::FutureExt::catch_unwind(work).await {
            Ok(outcome) => outcome,
            Err(panic) => Err(WorkError::Run(RunnerError::Crashed(crate::panic_message(panic.as_ref())))),
        };
        let mut done = match &outcome {
            Ok(summary) => Completion {
                status: if summary.interrupted { QueueStatus::Cancelled } else { QueueStatus::Finished },
                suite_id: Some(summary.suite_id),
                epochs_done: summary.epochs.len() as i64,
                error: None,
            },
            Err(e) => {
                Completion { status: QueueStatus::Failed, suite_id: None, epochs_done: 0, error: Some(e.to_string()) }
            }
        };
        // A worker that stops (Ctrl-C on `attractor worker`) gives the request
        // back for another to resume; only a person's cancel ends it cancelled.
        if done.status == QueueStatus::Cancelled && self.requeue_interrupted {
            let asked = self.store.queued_request(row.id).await.ok().flatten().is_some_and(|r| r.cancel_requested);
            if !asked {
                done.status = QueueStatus::Queued;
            }
        }
        if self.complete(row.id, &done).await {
            self.bus.publish(Event::LaunchEnded {
                launch_id: row.id,
                suite: row.suite_name.clone(),
                suite_id: done.suite_id,
                status: done.status,
                error: done.error.clone(),
            });
        }
        Worked { id: row.id, outcome }
    }

    /// Records how the request ended (or puts it back in the queue), a few
    /// times if the store is busy; `false` when another worker holds it now
    /// (it took it over: this one's end is not the request's).
    async fn complete(&self, id: i64, done: &Completion) -> bool {
        for attempt in 1..=3u32 {
            let result = if done.status == QueueStatus::Queued {
                self.store.requeue_request(id, &self.me.owner).await
            } else {
                self.store.complete_request(id, &self.me.owner, done).await
            };
            match result {
                Ok(true) => return true,
                Ok(false) => {
                    tracing::warn!(request = id, "the request was taken over before it was completed here");
                    return false;
                }
                Err(e) => {
                    tracing::warn!(request = id, attempt, "could not complete the request: {e}");
                    tokio::time::sleep(HEARTBEAT * attempt).await;
                }
            }
        }
        tracing::error!(request = id, "the request stays running; it counts as abandoned once its heartbeat is old");
        false
    }

    async fn work_inner(
        &self,
        row: &QueuedRequest,
        cancel: watch::Receiver<bool>,
        announce: impl FnOnce(&Prepared, &Registry),
    ) -> Result<RunSummary, WorkError> {
        let req: RunRequest =
            serde_json::from_str(&row.request_json).map_err(|e| WorkError::Unreadable(row.id, e.to_string()))?;
        self.bus.publish(Event::LaunchStarted {
            launch_id: row.id,
            suite: row.suite_name.clone(),
            suite_path: req.suite_path.clone(),
        });
        let prepared = prepare(&self.store, &req, &self.machine).await?;
        self.store.request_seed(row.id, &self.me.owner, prepared.config.seed).await?;
        self.share_suite_folder(row.id, &prepared.suite).await;
        let registry = Registry::load(self.store.clone()).await.map_err(RunnerError::from)?;
        announce(&prepared, &registry);
        // The heartbeat passes a person's cancel (set in the store by any
        // process) on to the run, as does `cancel` from this one.
        let (stop_tx, stop_rx) = watch::channel(false);
        // Aborted when this function returns or unwinds (a panic in the run).
        let _beat = AbortOnDrop(self.heartbeat(row.id, stop_tx.clone()));
        let _forward = AbortOnDrop(forward_cancel(cancel, stop_tx));
        let (progress, run_ended) = self.count_epochs(row.id, row.suite_name.clone());
        let progress = AbortOnDrop(progress);
        let runner =
            prepared.runner(&self.store, registry, &self.bus, stop_rx).as_worker(self.me.clone(), Some(row.id));
        let summary = runner.run().await;
        // The run's last events may still wait in the counter's queue (a
        // run that fails fast ends before they are read): it records them
        // before the request completes, so the launch names every epoch.
        let _ = run_ended.send(());
        progress.finish().await;
        Ok(summary?)
    }

    /// On a database other machines share, puts the suite's folder in the
    /// store for workers that do not have it ([`bundle`]). A folder that
    /// cannot be packed (too large) is said once; runs then need it at the
    /// launch's path.
    async fn share_suite_folder(&self, id: i64, suite: &Suite) {
        if self.store.backend() != crate::store::Backend::Postgres {
            return;
        }
        let dir = suite.dir.clone();
        let packed = tokio::task::spawn_blocking(move || bundle::pack(&dir)).await;
        match packed {
            Ok(Ok(b)) => {
                if let Err(e) = self.store.put_bundle(id, &self.me.owner, &b.digest, &b.zip).await {
                    tracing::warn!(request = id, "could not share the suite's folder through the store: {e}");
                }
            }
            Ok(Err(e)) => tracing::warn!(request = id, "{e}"),
            Err(e) => tracing::warn!(request = id, "could not pack the suite's folder: {e}"),
        }
    }

    /// Keeps the request's suite, the epochs it started and its count of
    /// finished epochs current while its run goes, from the run's own events
    /// (subscribed before it starts): the Live screen reads them after a
    /// reload, and for a run of another process. Once `run_ended` fires it
    /// records what is left in its queue and stops.
    fn count_epochs(&self, id: i64, suite: String) -> (tokio::task::JoinHandle<()>, tokio::sync::oneshot::Sender<()>) {
        let mut events = self.bus.subscribe();
        let store = self.store.clone();
        let owner = self.me.owner.clone();
        let (ended_tx, mut ended) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(async move {
            // One run of a suite at a time: the suite started under this
            // name in this process is this request's.
            let mut count = EpochCount::new(&suite);
            let mut draining = false;
            loop {
                let envelope = if draining {
                    match events.try_recv() {
                        Ok(envelope) => envelope,
                        Err(_) => break,
                    }
                } else {
                    tokio::select! {
                        next = events.recv() => match next {
                            Some(envelope) => envelope,
                            None => break,
                        },
                        _ = &mut ended => {
                            draining = true;
                            continue;
                        }
                    }
                };
                if envelope.replayed {
                    continue;
                }
                let Some(progress) = count.take(envelope.event) else { continue };
                if let Err(e) = store.request_progress(id, &owner, progress).await {
                    tracing::debug!(request = id, "could not record the request's progress: {e}");
                }
            }
        });
        (handle, ended_tx)
    }

    fn heartbeat(&self, id: i64, stop: watch::Sender<bool>) -> tokio::task::JoinHandle<()> {
        let store = self.store.clone();
        let owner = self.me.owner.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT).await;
                match store.heartbeat_request(id, &owner).await {
                    Ok(Some(true)) | Ok(None) => {
                        // Cancelled, or another worker took the request over
                        // (this one was thought dead): stop.
                        let _ = stop.send(true);
                    }
                    Ok(Some(false)) => {}
                    Err(e) => tracing::debug!(request = id, "could not heartbeat the request: {e}"),
                }
            }
        })
    }
}

/// A task that ends with its owner.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl AbortOnDrop {
    /// Waits for the task to end on its own (it is not aborted then).
    async fn finish(mut self) {
        let _ = (&mut self.0).await;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What a request's run has done, counted from its events.
struct EpochCount {
    suite: String,
    suite_id: Option<i64>,
    done: i64,
    /// The plan the run works (a continued plan's too): first epoch, epochs.
    plan: Option<(i64, u32)>,
    /// The epochs from its first to the plan's last: what it set out to do.
    planned: Option<i64>,
}

impl EpochCount {
    fn new(suite: &str) -> EpochCount {
        EpochCount { suite: suite.to_string(), suite_id: None, done: 0, plan: None, planned: None }
    }

    /// The progress an event means for the request, if it means any.
    fn take(&mut self, event: Event) -> Option<RequestProgress> {
        let (suite_id, started_epoch) = match event {
            Event::SuiteStarted { suite_id: started, suite: name, first_epoch, epochs, .. } if name == self.suite => {
                self.suite_id = Some(started);
                self.plan = Some((first_epoch, epochs));
                (started, None)
            }
            Event::EpochStarted { suite_id, epoch_num, .. } if Some(suite_id) == self.suite_id => {
                // The first epoch it starts: a continued plan's next one.
                if self.planned.is_none() {
                    self.planned = self.plan.map(|(first, n)| crate::outer::epochs_left(first, n, epoch_num));
                }
                (suite_id, Some(epoch_num))
            }
            Event::EpochFinished { suite_id, .. } if Some(suite_id) == self.suite_id => {
                self.done += 1;
                (suite_id, None)
            }
            _ => return None,
        };
        Some(RequestProgress { suite_id, epochs_done: self.done, started_epoch, epochs_planned: self.planned })
    }
}

/// Passes a cancel from this process on to the run.
fn forward_cancel(mut from: watch::Receiver<bool>, to: watch::Sender<bool>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if *from.borrow_and_update() {
                let _ = to.send(true);
                return;
            }
            if from.changed().await.is_err() {
                return;
            }
        }
    })
}
