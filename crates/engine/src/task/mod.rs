//! Executing one task once — a *run* — and reporting how it went.
//!
//! Each task kind has its own module; all of them end in a [`RunOutcome`]
//! that the outer loop turns into a loss: [`command`] (a black-box harness),
//! [`agent`] (the convergence engine driving an executor in a workspace) and
//! [`optimize`] (the ASO coordinator over a numeric problem).

pub mod agent;
pub mod command;
pub mod examples;
pub mod optimize;

use std::time::Duration;

use crate::artifact::ArtifactKind;
use crate::loss::{LossSignals, RunStatus};

/// An artifact version as a run sees it.
#[derive(Debug, Clone)]
pub struct ActiveArtifact {
    pub name: String,
    pub kind: ArtifactKind,
    pub version: i64,
    pub content: String,
}

/// How one run went.
#[derive(Debug, Clone, Default)]
pub struct RunOutcome {
    /// The signals the loss is computed from (status included).
    pub signals: LossSignals,
    pub metrics: Option<serde_json::Value>,
    /// The result file as written, kept verbatim.
    pub result_json: Option<String>,
    /// Why the run failed, when it did.
    pub error: Option<String>,
    pub exit_code: Option<i64>,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
    /// The run was cut short (Ctrl-C): it does not count and runs again on resume.
    pub cancelled: bool,
}

impl RunOutcome {
    /// A failed run with its reason; every score is missing (the worst in the loss).
    pub fn failed(reason: impl Into<String>) -> Self {
        RunOutcome {
            signals: LossSignals { status: Some(RunStatus::Failed), ..LossSignals::default() },
            error: Some(reason.into()),
            ..RunOutcome::default()
        }
    }

    /// The state to record: the reported status, or cancelled.
    pub fn state(&self) -> crate::domain::RunState {
        crate::domain::RunState::ended(self.signals.status, self.cancelled)
    }
}
