//! The loop every run of a suite goes through, whatever spends its epochs.
//!
//! A run is shaped as an iterative solver is (argmin's Solver / State /
//! Executor / Observer): a [`Strategy`] knows how to take one step — the
//! epoch chain closes one epoch ([`super::chain`]), the tree search plays one
//! round ([`super::tree_run`]) — and the executor here ([`SuiteRunner::execute`])
//! owns the loop around it: it loads the [`OuterState`], stops on a cancel or
//! a spent model budget, lets the strategy end the run on its best, finishes
//! the plan and hands every closed epoch to the [`RunObserver`]s (the bus,
//! the log). Strategies never publish run-level events themselves, so what
//! the app hears about a run is the same whichever strategy ran it.
//!
//! The store is not an observer: an epoch's close writes its moves, its
//! proposals and its record in one transaction with the decision, which a
//! listener that heard of it afterwards could not.

use super::state::{Halt, OuterState};
use super::{EpochSummary, OptimizerKind, RunConfig, RunSummary, RunnerError, SuiteRunner, next_epoch, settle};
use crate::artifact::RegistryError;
use crate::bus::{Bus, Event};
use crate::suite::Suite;

/// What a step says about the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    /// Take another step.
    Next,
    /// The strategy has nothing left to do.
    Done,
    /// Cancelled mid-step: the run is not over.
    Interrupted,
}

/// One way of spending a run's epochs (see the module doc).
pub(super) trait Strategy {
    /// Takes up what an earlier run left before the first step.
    async fn start(&mut self, runner: &SuiteRunner, state: &mut OuterState) -> Result<Flow, RunnerError>;

    /// One step: an epoch of the chain, a round of the tree.
    async fn step(&mut self, runner: &SuiteRunner, state: &mut OuterState) -> Result<Flow, RunnerError>;

    /// Ends a run that was not interrupted on the versions it measured best;
    /// may itself be interrupted (a person's approval it waits for).
    async fn end(
        &mut self,
        runner: &SuiteRunner,
        state: &mut OuterState,
    ) -> Result<Option<settle::Settled>, RunnerError>;
}

/// Who hears about a run as it goes.
pub(super) trait RunObserver: Send + Sync {
    /// The run holds the suite and knows its plan.
    fn started(&self, suite: &Suite, config: &RunConfig, state: &OuterState);
    /// An epoch was closed (its moves are written and announced).
    fn epoch_closed(&self, suite: &Suite, suite_id: i64, epoch: &EpochSummary);
    /// The run is over (or stopped, or interrupted).
    fn finished(&self, summary: &RunSummary);
}

/// Tells the bus (and through it the store's event log and the app).
pub(super) struct BusObserver(pub(super) Bus);

impl RunObserver for BusObserver {
    fn started(&self, suite: &Suite, config: &RunConfig, state: &OuterState) {
        self.0.publish(Event::SuiteStarted {
            suite_id: state.suite_id,
            suite: suite.name.clone(),
            epochs: config.epochs,
            optimizer: config.optimizer,
            learning_rate: config.learning_rate,
            rollback_on_regression: config.rollback_on_regression,
            concurrency: config.concurrency,
            seed: config.seed,
            tasks: suite.tasks.len(),
            first_epoch: state.plan.first_epoch,
            continued: state.plan.continued,
        });
    }

    fn epoch_closed(&self, _suite: &Suite, suite_id: i64, e: &EpochSummary) {
        self.0.publish(Event::EpochFinished {
            suite_id,
            epoch_id: e.epoch_id,
            epoch_num: e.epoch_num,
            mean_loss: e.mean_loss,
            holdout_mean_loss: e.holdout_mean_loss,
            learning_rate: e.learning_rate,
            note: e.note.clone(),
            model: e.model,
        });
    }

    fn finished(&self, s: &RunSummary) {
        self.0.publish(Event::SuiteFinished {
            suite_id: s.suite_id,
            epochs_completed: s.epochs.len() as u32,
            interrupted: s.interrupted,
            stopped: s.stopped.clone(),
        });
    }
}

/// Writes the run's progress to the log.
pub(super) struct LogObserver;

impl RunObserver for LogObserver {
    fn started(&self, suite: &Suite, config: &RunConfig, state: &OuterState) {
        tracing::info!(suite = %suite.name, optimizer = config.optimizer.name(), first = state.plan.first_epoch, epochs = state.plan.epochs, lr = state.learning_rate(), "run started");
    }

    fn epoch_closed(&self, suite: &Suite, _suite_id: i64, e: &EpochSummary) {
        tracing::info!(suite = %suite.name, epoch = e.epoch_num, mean_loss = ?e.mean_loss, holdout_mean = ?e.holdout_mean_loss, lr = e.learning_rate, note = ?e.note, "epoch finished");
    }

    fn finished(&self, s: &RunSummary) {
        tracing::info!(suite = %s.suite, epochs = s.epochs.len(), interrupted = s.interrupted, stopped = ?s.stopped, lr = s.learning_rate, "run finished");
    }
}

impl SuiteRunner {
    /// The run, once it holds the suite's lease: loads the state and runs
    /// the configured strategy over it.
    pub(super) async fn run_held(&self, suite_id: i64) -> Result<RunSummary, RunnerError> {
        let state = self.load_state(suite_id).await?;
        if self.config.optimizer == OptimizerKind::Tree {
            // The tree's proposals belong to the suite, not to an epoch.
            if let Some(c) = &self.optimizer_llm {
                c.set_scope(crate::llm::CallScope { suite_id: Some(suite_id), ..Default::default() });
            }
            let search = super::tree_run::TreeSearch::new(self, &state.plan);
            return self.execute(state, search).await;
        }
        let chain = super::chain::EpochChain::new(&state);
        self.execute(state, chain).await
    }

    /// The state a run starts from, read back from the store (see
    /// [`super::state`]); a suite without history gets its pinned versions.
    async fn load_state(&self, suite_id: i64) -> Result<OuterState, RunnerError> {
        let last = self.store.last_epoch(suite_id).await?;
        if last.is_none() {
            // Pins apply once, when the suite's history starts.
            for (name, version) in &self.suite.baseline_artifacts {
                self.registry.set_active(name, *version).await.map_err(|e| match e {
                    RegistryError::NoSuchVersion { .. } => RunnerError::Baseline(format!(
                        "{}: baseline_artifacts pins `{name}` to version {version}, which does not exist\n  hint: `attractor inspect --artifact {name}` lists its versions; 0 is the default",
                        self.suite.path.display()
                    )),
                    other => other.into(),
                })?;
            }
        }
        // η continues where the suite's last closed epoch left it (halved by
        // each rollback), so a resumed or continued run is the run that would
        // have gone on uninterrupted; the configured rate starts a suite.
        let lr = self.store.last_learning_rate(suite_id).await?.unwrap_or(self.config.learning_rate);
        let plan = self.plan(suite_id, next_epoch(last.as_ref())).await?;
        Ok(OuterState::new(suite_id, plan, last, lr))
    }

    /// The executor: steps `strategy` until it is done, the run is
    /// cancelled or a model budget is spent, then ends the run.
    async fn execute(&self, mut state: OuterState, mut strategy: impl Strategy) -> Result<RunSummary, RunnerError> {
        for o in &self.observers {
            o.started(&self.suite, &self.config, &state);
        }
        let mut flow = strategy.start(self, &mut state).await?;
        while flow == Flow::Next {
            if self.cancelled() {
                flow = Flow::Interrupted;
            } else if let Some(reason) = self.budget_spent() {
                state.halt(Halt::Stopped(reason));
                break;
            } else {
                flow = strategy.step(self, &mut state).await?;
            }
        }
        if flow == Flow::Interrupted {
            state.halt(Halt::Interrupted);
        }
        // The last proposal may never have been measured: the run ends on
        // its best. (Boxed, as rare paths are: the loop's future nests every
        // task's.)
        let settled = if state.interrupted() { None } else { Box::pin(strategy.end(self, &mut state)).await? };
        if !state.interrupted() && state.stopped().is_none() {
            self.store.finish_plan(state.suite_id).await?;
        }
        // A person's approval given meanwhile is theirs to overrule that with.
        self.apply_approved_at_end(state.suite_id).await?;
        let (suite_id, interrupted, learning_rate) = (state.suite_id, state.interrupted(), state.learning_rate());
        let stopped = state.stopped().map(str::to_string);
        let summary = RunSummary {
            suite_id,
            suite: self.suite.name.clone(),
            epochs: state.into_epochs(),
            interrupted,
            learning_rate,
            seed: self.config.seed,
            stopped,
            settled,
        };
        for o in &self.observers {
            o.finished(&summary);
        }
        Ok(summary)
    }

    /// Records an epoch the run closed and tells the observers.
    pub(super) fn epoch_closed(&self, state: &mut OuterState, epoch: EpochSummary) {
        for o in &self.observers {
            o.epoch_closed(&self.suite, state.suite_id, &epoch);
        }
        state.record(epoch);
    }
}
