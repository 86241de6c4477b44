//! The epoch chain: the linear optimizers' way of spending a run (seed 004 §5).
//!
//! Each step is one epoch — evaluated, judged against the one before, closed
//! with a rollback or the optimizer's next update (`close.rs`) — and the run
//! ends on the versions it measured best (`settle.rs`). An epoch an earlier
//! run left open is the first step; a proposal an earlier run left
//! unmeasured is made active again before it.

use super::runner::{Flow, Strategy};
use super::state::OuterState;
use super::{RunnerError, SuiteRunner, settle};
use crate::store::StoreError;

/// The chain's own progress: the epochs it has left to run.
pub(super) struct EpochChain {
    left: i64,
}

impl EpochChain {
    /// A chain over what is left of `state`'s plan.
    pub(super) fn new(state: &OuterState) -> EpochChain {
        let next = super::next_epoch(state.last.as_ref());
        EpochChain { left: (state.plan.last_epoch() - next + 1).max(0) }
    }
}

impl Strategy for EpochChain {
    async fn start(&mut self, runner: &SuiteRunner, state: &mut OuterState) -> Result<Flow, RunnerError> {
        // A proposal the last run left unmeasured is measured first.
        if let Some(closed) = state.last_closed() {
            Box::pin(runner.take_up_pending(state.suite_id, closed)).await?;
        }
        Ok(if self.left > 0 { Flow::Next } else { Flow::Done })
    }

    async fn step(&mut self, runner: &SuiteRunner, state: &mut OuterState) -> Result<Flow, RunnerError> {
        let (epoch, resumed) = match state.take_open() {
            Some(e) => (e, true),
            None => {
                let suite_id = state.suite_id;
                let next = runner.store.last_epoch(suite_id).await?.map_or(1, |e| e.epoch_num + 1);
                let parent = runner.snapshot().await?;
                let parent_json = serde_json::to_string(&parent).map_err(StoreError::from)?;
                (runner.store.insert_epoch(suite_id, next, &parent_json).await?, false)
            }
        };
        if !runner.run_epoch(state, &epoch, resumed).await? {
            return Ok(Flow::Interrupted);
        }
        self.left -= 1;
        Ok(if self.left > 0 { Flow::Next } else { Flow::Done })
    }

    async fn end(
        &mut self,
        runner: &SuiteRunner,
        state: &mut OuterState,
    ) -> Result<Option<settle::Settled>, RunnerError> {
        runner.settle_on_best(state.suite_id, state.epochs()).await
    }
}
