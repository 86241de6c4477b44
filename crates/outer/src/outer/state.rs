//! The outer loop's state: what one run of a suite carries from step to step.
//!
//! The runner owns one [`OuterState`] for the whole run, and every step of
//! either strategy (the epoch chain, the tree search) reads and changes it
//! through the methods here — the learning rate in particular has this one
//! home: read with [`OuterState::learning_rate`], changed only by
//! [`OuterState::halve_learning_rate`] when a rollback happens.
//!
//! The state is persisted where the store already keeps each part, and
//! [`OuterState`] is loaded back from there when a run starts: η from the
//! record of the suite's last closed epoch (every close writes the η after
//! it), the plan from the suite's plan row, the open epoch from the epoch an
//! earlier run left without a close. A noisy suite's verification in progress
//! is a fact of the closed epochs' records too; the judgement reads it there
//! (see `close.rs`), so no second copy can disagree with it.

use super::{EpochSummary, Plan};
use crate::store::EpochRow;

/// Why a run ended before its plan was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Halt {
    /// Cancelled (Ctrl-C, the app's Cancel, a lost lease): the run is not
    /// over, the next one carries on.
    Interrupted,
    /// A model budget was spent: what was finished is kept.
    Stopped(String),
}

/// One run's state; see the module doc.
pub(crate) struct OuterState {
    pub(crate) suite_id: i64,
    /// The epochs this run carries out.
    pub(crate) plan: Plan,
    /// The suite's last epoch when this run began (closed, or open: then
    /// the first step takes it up).
    pub(crate) last: Option<EpochRow>,
    /// η: how far a proposal may move an artifact.
    learning_rate: f64,
    /// The epochs this run closed, in order.
    epochs: Vec<EpochSummary>,
    halt: Option<Halt>,
}

impl OuterState {
    /// The state a run starts from: `last` is the suite's last epoch and
    /// `learning_rate` the η its history left (or the configured one).
    pub(crate) fn new(suite_id: i64, plan: Plan, last: Option<EpochRow>, learning_rate: f64) -> OuterState {
        OuterState { suite_id, plan, last, learning_rate, epochs: Vec::new(), halt: None }
    }

    /// η as it stands now.
    pub(crate) fn learning_rate(&self) -> f64 {
        self.learning_rate
    }

    /// A rollback halves η; the new rate, which the rollback's record carries.
    pub(crate) fn halve_learning_rate(&mut self) -> f64 {
        self.learning_rate /= 2.0;
        self.learning_rate
    }

    /// The epoch an earlier run left open, once: the step that takes it up.
    pub(crate) fn take_open(&mut self) -> Option<EpochRow> {
        self.last.take_if(|e| e.completed_at.is_none())
    }

    /// The suite's last closed epoch when this run began.
    pub(crate) fn last_closed(&self) -> Option<&EpochRow> {
        self.last.as_ref().filter(|e| e.completed_at.is_some())
    }

    /// Adds an epoch this run closed.
    pub(crate) fn record(&mut self, epoch: EpochSummary) {
        self.epochs.push(epoch);
    }

    /// The epochs this run closed so far.
    pub(crate) fn epochs(&self) -> &[EpochSummary] {
        &self.epochs
    }

    /// Ends the run early. An interruption outranks a spent budget: a run
    /// cancelled while it ended is not over, and the next one carries on.
    pub(crate) fn halt(&mut self, why: Halt) {
        if why == Halt::Interrupted || self.halt.is_none() {
            self.halt = Some(why);
        }
    }

    pub(crate) fn interrupted(&self) -> bool {
        self.halt == Some(Halt::Interrupted)
    }

    /// Why the run stopped early on a spent budget, if it did.
    pub(crate) fn stopped(&self) -> Option<&str> {
        match &self.halt {
            Some(Halt::Stopped(why)) => Some(why),
            _ => None,
        }
    }

    /// The run's closed epochs, handed over when it ends.
    pub(crate) fn into_epochs(self) -> Vec<EpochSummary> {
        self.epochs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(lr: f64) -> OuterState {
        OuterState::new(1, Plan { first_epoch: 1, epochs: 3, continued: false }, None, lr)
    }

    #[test]
    fn each_rollback_halves_the_learning_rate_the_state_reports() {
        let mut s = state(0.5);
        assert_eq!(s.learning_rate(), 0.5);
        assert_eq!(s.halve_learning_rate(), 0.25);
        assert_eq!(s.halve_learning_rate(), 0.125);
        assert_eq!(s.learning_rate(), 0.125);
    }

    #[test]
    fn an_interruption_outranks_a_spent_budget() {
        let mut s = state(0.5);
        assert!(!s.interrupted() && s.stopped().is_none());
        s.halt(Halt::Stopped("max_cost reached".into()));
        assert_eq!(s.stopped(), Some("max_cost reached"));
        s.halt(Halt::Interrupted);
        assert!(s.interrupted());
        assert_eq!(s.stopped(), None);
        s.halt(Halt::Stopped("later".into()));
        assert!(s.interrupted());
    }
}
