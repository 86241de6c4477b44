//! The ledger of model calls: one row per call sent to the server (table
//! `model_calls`), with the run, epoch and suite it was made for, so what a
//! call, a run, an epoch or a suite cost can be read back at any time —
//! not only from the totals a run prints when it ends.
//!
//! A client writes to the ledger once given one ([`LlmClient::with_ledger`]).
//! Its scope (which suite, epoch and run the calls are for) is shared by the
//! client's clones, so the outer loop can move an optimizer's client from
//! epoch to epoch without rebuilding the optimizer; a task run gets a ledger
//! of its own.
//!
//! [`LlmClient::with_ledger`]: super::LlmClient::with_ledger

use std::sync::Mutex;

use crate::store::{ModelCall, Store};

/// What the calls are made for; `None` where it does not apply (an
/// optimizer's call belongs to an epoch, not a run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallScope {
    pub suite_id: Option<i64>,
    pub epoch_id: Option<i64>,
    pub run_id: Option<i64>,
}

/// Where a client records its calls.
#[derive(Debug)]
pub struct Ledger {
    store: Store,
    scope: Mutex<CallScope>,
}

impl Ledger {
    pub fn new(store: Store, scope: CallScope) -> Ledger {
        Ledger { store, scope: Mutex::new(scope) }
    }

    /// Moves the ledger to another scope (the next epoch).
    pub fn set_scope(&self, scope: CallScope) {
        *self.scope.lock().unwrap_or_else(|e| e.into_inner()) = scope;
    }

    /// Records one call. A failure to write is traced, not raised: the
    /// ledger must never fail the call it describes.
    pub async fn record(&self, mut call: ModelCall) {
        let scope = *self.scope.lock().unwrap_or_else(|e| e.into_inner());
        call.suite_id = scope.suite_id;
        call.epoch_id = scope.epoch_id;
        call.run_id = scope.run_id;
        if let Err(e) = self.store.insert_model_call(&call).await {
            tracing::debug!(error = %e, "could not record a model call in the ledger");
        }
    }
}
