//! Loop control (seed 002 §6.4–6.5): after every observation, converge,
//! stop, extend, reset the context, or go on.
//!
//! In order:
//! 1. **Converged** — the level reaches the acceptance threshold, the latest
//!    attempt added no vulnerabilities, every overseer could run, and an
//!    intent verifier that sees gaps is outvoted only by a perfect level or
//!    all checks passing (external measurements outrank self-assessment).
//! 2. **Out of budget** — the budget is spent, or the goal gradient says
//!    abandon (`Ω ≥ 0.8`: the same budget pressure seen from the loss). A
//!    trajectory still converging gets an extension (auto-approved, or
//!    waiting for a person under the thorough hint) while extensions remain;
//!    otherwise the best result is accepted if partial acceptance is on and
//!    it reaches the partial threshold; otherwise the trajectory ends
//!    exhausted (or abandoned) with a partial-result record.
//! 3. **Context degraded** — force a fresh start (not terminal), unless the
//!    policy's fresh starts are used up.
//! 4. **Trapped** — a limit cycle with no escape strategy left.
//! 5. **Continue**.

use serde::{Deserialize, Serialize};

use super::budget::BudgetExtension;
use super::context::Degradation;
pub use crate::domain::convergence::LoopControlKind;
use crate::ggs::PartialResult;
use crate::workspace::ArtifactReference;

/// An observation chosen as a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BestObservation {
    pub sequence: u32,
    pub artifact: ArtifactReference,
    pub level: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "control", rename_all = "snake_case")]
pub enum LoopControl {
    /// Go on with the next strategy.
    Continue,
    /// Go on, with a forced fresh start (the context is degraded).
    ForceFreshStart { reason: Degradation },
    /// The budget ran out while converging; it was extended and the loop goes on.
    ExtensionGranted { extension: BudgetExtension },
    /// The budget ran out while converging; an extension waits for a person
    /// (answer with `Engine::resolve_extension`).
    ExtensionRequested { extension: BudgetExtension },
    /// Done: the latest observation is accepted.
    Converged { result: BestObservation },
    /// Out of budget, but the best observation is good enough to accept.
    AcceptedPartial { result: BestObservation },
    /// Out of budget below the partial threshold.
    Exhausted { best: Option<BestObservation>, partial: PartialResult },
    /// The goal gradient abandoned (budget pressure) below the partial threshold.
    Abandoned { best: Option<BestObservation>, partial: PartialResult },
    /// A limit cycle with every escape strategy tried.
    Trapped { best: Option<BestObservation>, partial: PartialResult },
}

impl LoopControl {
    /// The trajectory is over.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            LoopControl::Converged { .. }
                | LoopControl::AcceptedPartial { .. }
                | LoopControl::Exhausted { .. }
                | LoopControl::Abandoned { .. }
                | LoopControl::Trapped { .. }
        )
    }

    /// The loop goes on right away (a next strategy was chosen).
    pub fn continues(&self) -> bool {
        matches!(
            self,
            LoopControl::Continue | LoopControl::ForceFreshStart { .. } | LoopControl::ExtensionGranted { .. }
        )
    }

    /// What was decided, without its data: the bus's and the store's name for it.
    pub fn kind(&self) -> LoopControlKind {
        match self {
            LoopControl::Continue => LoopControlKind::Continue,
            LoopControl::ForceFreshStart { .. } => LoopControlKind::ForceFreshStart,
            LoopControl::ExtensionGranted { .. } => LoopControlKind::ExtensionGranted,
            LoopControl::ExtensionRequested { .. } => LoopControlKind::ExtensionRequested,
            LoopControl::Converged { .. } => LoopControlKind::Converged,
            LoopControl::AcceptedPartial { .. } => LoopControlKind::AcceptedPartial,
            LoopControl::Exhausted { .. } => LoopControlKind::Exhausted,
            LoopControl::Abandoned { .. } => LoopControlKind::Abandoned,
            LoopControl::Trapped { .. } => LoopControlKind::Trapped,
        }
    }

    /// The snake_case name of [`Self::kind`].
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }
}
