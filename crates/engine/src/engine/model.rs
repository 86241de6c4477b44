//! The convergence engine's core model (seed 002 Part 1): a [`Trajectory`]
//! is the sequence of attempts at one task; each attempt leaves an
//! [`Observation`] — what the executor produced and what the overseers
//! measured about it, never the executor's own opinion of its work.
//!
//! Everything here is serde-serializable so a trajectory can be stored and
//! resumed.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::attractor::{AttractorKind, AttractorState};
use super::budget::{BudgetExtension, ConvergenceBudget};
use super::context::ContextHealth;
use super::metrics::{LevelWeights, convergence_level};
use super::policy::ConvergencePolicy;
use super::spec::{AmendmentSource, SpecificationEvolution};
use super::strategy::StrategyKind;
use crate::ggs::{CriterionVerdict, GgsState, PlanDirective};
use crate::overseer::OverseerSignals;
use crate::workspace::ArtifactReference;

/// The five steps of a trajectory's life (seed 002's convergence flow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowStage {
    /// Basin width, budget, policy.
    Setup,
    /// Acceptance tests, ambiguity, memories.
    Prepare,
    /// Proactive decomposition, sequential or parallel mode.
    Decide,
    /// Select, execute, measure, classify, learn, loop control.
    Iterate,
    /// Memory, bandit state, terminal event.
    Resolve,
}

/// Where a trajectory stands; the last three are terminal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum ConvergencePhase {
    Preparing,
    Iterating,
    /// Waiting for child trajectories (after a `Decompose`).
    Coordinating {
        children: Vec<String>,
    },
    Converged,
    Exhausted,
    Trapped,
}

impl ConvergencePhase {
    pub fn is_terminal(&self) -> bool {
        matches!(self, ConvergencePhase::Converged | ConvergencePhase::Exhausted | ConvergencePhase::Trapped)
    }
}

/// What kind of gap an intent verifier found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GapCategory {
    /// Something the task asks for is not there.
    Missing,
    /// It is there but wrong.
    Incorrect,
    /// The specification can be read more than one way.
    Ambiguity,
}

/// A specific way the result falls short of the intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntentGap {
    pub description: String,
    pub category: GapCategory,
}

/// An LLM's reading of whether the result does what the task means
/// (calibrated, run every few iterations; overseers outrank it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerificationResult {
    pub satisfied: bool,
    /// In [0, 1].
    #[serde(default)]
    pub confidence: f64,
    #[serde(default)]
    pub gaps: Vec<IntentGap>,
    /// Per-criterion verdicts for the goal gradient (usually `plausible`).
    #[serde(default)]
    pub verdicts: Vec<CriterionVerdict>,
}

impl VerificationResult {
    pub fn satisfied(&self) -> bool {
        self.satisfied
    }

    pub fn has_ambiguity_gaps(&self) -> bool {
        self.gaps.iter().any(|g| g.category == GapCategory::Ambiguity)
    }
}

/// How this observation differs from the previous one, and where it stands.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ObservationMetrics {
    /// Lines changed since the previous state (stands in for the seed's AST diff).
    pub lines_changed: u32,
    /// Passing tests now minus before.
    pub test_pass_delta: i32,
    /// Tests that passed before and fail now.
    pub test_regression_count: u32,
    /// Build, type and lint errors now minus before (negative is better).
    pub error_count_delta: i32,
    /// Critical and high findings now minus before (positive is a security regression).
    pub vulnerability_delta: i32,
    /// Composite progress: negative regressing, 0 stalled, positive converging.
    pub convergence_delta: f64,
    /// How close to done, in [0, 1].
    pub convergence_level: f64,
}

/// One attempt: a point in solution space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// 0, 1, … — assigned by the engine when it records the observation.
    pub sequence: u32,
    pub artifact: ArtifactReference,
    pub overseer_signals: OverseerSignals,
    pub verification: Option<VerificationResult>,
    /// `None` on the first observation (there is nothing to compare with).
    pub metrics: Option<ObservationMetrics>,
    pub tokens_used: u64,
    /// Prompt tokens of the execution, when the executor reports them; the
    /// context-health estimate uses them to see history piling up.
    #[serde(default)]
    pub context_tokens: Option<u64>,
    pub wall_time_ms: u64,
    pub strategy_used: StrategyKind,
    /// Tools (commands, functions) the executor used; blocked when a
    /// directive demands a different approach.
    #[serde(default)]
    pub tools_used: Vec<String>,
    /// What the held-out checks (overseers the executor never sees) said
    /// of this state, when they ran: they run once the visible checks
    /// would let it converge, and the verdict — level, convergence, the
    /// loss — is over both.
    #[serde(default)]
    pub held_out: Option<OverseerSignals>,
}

impl Observation {
    /// The signals a verdict is over: the visible checks', and the
    /// held-out ones' when they ran. Prompts only ever see the visible.
    pub fn judged_signals(&self) -> std::borrow::Cow<'_, OverseerSignals> {
        match &self.held_out {
            Some(hidden) => std::borrow::Cow::Owned(self.overseer_signals.combined(hidden)),
            None => std::borrow::Cow::Borrowed(&self.overseer_signals),
        }
    }

    /// An observation of `signals` produced by `strategy`, the rest empty.
    pub fn new(strategy: StrategyKind, artifact: ArtifactReference, signals: OverseerSignals) -> Self {
        Observation {
            sequence: 0,
            artifact,
            overseer_signals: signals,
            verification: None,
            metrics: None,
            tokens_used: 0,
            context_tokens: None,
            wall_time_ms: 0,
            strategy_used: strategy,
            tools_used: Vec::new(),
            held_out: None,
        }
    }

    /// The convergence level, from the stored metrics or the signals.
    pub fn level(&self, weights: &LevelWeights) -> f64 {
        self.metrics.map_or_else(|| convergence_level(&self.judged_signals(), weights), |m| m.convergence_level)
    }
}

/// What was tried, and what it achieved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyEntry {
    pub strategy_kind: StrategyKind,
    pub observation_sequence: u32,
    pub convergence_delta_achieved: Option<f64>,
    pub tokens_used: u64,
    /// Chosen by loop control rather than the bandit (never credited to the bandit).
    pub was_forced: bool,
    /// The attractor the strategy was selected under (the bandit's context).
    pub attractor_at_selection: AttractorKind,
}

/// The strategy the engine chose and is waiting to see the result of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingSelection {
    pub strategy: StrategyKind,
    pub forced: bool,
    pub attractor: AttractorKind,
}

/// The unit of convergence: every attempt at one task, and the state that
/// steers the next one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    pub id: String,
    pub task_id: String,
    pub specification: SpecificationEvolution,
    pub observations: Vec<Observation>,
    pub attractor_state: AttractorState,
    pub budget: ConvergenceBudget,
    pub policy: ConvergencePolicy,
    pub strategy_log: Vec<StrategyEntry>,
    pub phase: ConvergencePhase,
    pub context_health: ContextHealth,
    /// A person's hints; they always survive fresh starts.
    pub hints: Vec<String>,
    /// Executed next, bypassing selection (set by loop control).
    pub forced_strategy: Option<StrategyKind>,
    pub total_fresh_starts: u32,
    /// Index of the first observation made in the executor's current context
    /// (the latest fresh start); health and classification look from here.
    pub context_start: usize,
    /// The goal-gradient solver's state for this task.
    pub gradient: GgsState,
    /// The solver's latest directive (kept to steer a selection made after a pause).
    pub last_directive: Option<PlanDirective>,
    /// Tools the next attempts must not use (dynamic MUST-NOTs).
    pub blocked_tools: BTreeSet<String>,
    pub pending: Option<PendingSelection>,
    /// An extension waiting for a person's approval.
    pub pending_extension: Option<BudgetExtension>,
    /// Strategies this trajectory found it cannot carry out (a split the
    /// model could not propose): never offered to it again.
    #[serde(default)]
    pub unavailable: BTreeSet<StrategyKind>,
    /// Escalations a person declined (seed 002 §7.3): never proposed to
    /// this trajectory again.
    #[serde(default)]
    pub declined: BTreeSet<StrategyKind>,
    /// The tests before the first execution (iteration 0), by name, and the
    /// targets: every later measurement is judged against it.
    #[serde(default)]
    pub test_baseline: Option<crate::overseer::baseline::TestBaseline>,
}

impl Trajectory {
    pub fn new(
        id: impl Into<String>,
        task_id: impl Into<String>,
        specification: SpecificationEvolution,
        budget: ConvergenceBudget,
        policy: ConvergencePolicy,
    ) -> Self {
        Trajectory {
            id: id.into(),
            task_id: task_id.into(),
            specification,
            observations: Vec::new(),
            attractor_state: AttractorState::default(),
            budget,
            policy,
            strategy_log: Vec::new(),
            phase: ConvergencePhase::Preparing,
            context_health: ContextHealth::default(),
            hints: Vec::new(),
            forced_strategy: None,
            total_fresh_starts: 0,
            context_start: 0,
            gradient: GgsState::default(),
            last_directive: None,
            blocked_tools: BTreeSet::new(),
            pending: None,
            pending_extension: None,
            unavailable: BTreeSet::new(),
            declined: BTreeSet::new(),
            test_baseline: None,
        }
    }

    /// Records a person's hint: kept for every fresh start and folded into the specification.
    pub fn add_hint(&mut self, hint: impl Into<String>) {
        let hint = hint.into();
        let trigger = self.observations.last().map(|o| o.sequence);
        self.specification.amend(AmendmentSource::UserHint, hint.clone(), "hint from a person", trigger);
        self.hints.push(hint);
    }

    /// Records a person's clarification of an ambiguous specification: an
    /// amendment saying what it clarifies, and — like every word from a
    /// person — a hint that survives fresh starts.
    pub fn clarify(&mut self, clarification: impl Into<String>, clarifies: &[String]) {
        let clarification = clarification.into();
        let trigger = self.observations.last().map(|o| o.sequence);
        let rationale = format!("a person's answer to an ambiguity: {}", clarifies.join("; "));
        self.specification.amend(AmendmentSource::UserHint, clarification.clone(), rationale, trigger);
        self.hints.push(clarification);
    }

    pub fn latest(&self) -> Option<&Observation> {
        self.observations.last()
    }

    /// The observations made in the executor's current context.
    pub fn context_observations(&self) -> &[Observation] {
        &self.observations[self.context_start.min(self.observations.len())..]
    }

    /// The observation with the highest convergence level. Fully measured
    /// observations come first: one where an overseer could not run has an
    /// inflated level (a missing measurement counts as passing). Among equals
    /// the most recent wins (`max_by` keeps the last), as it carries the later work.
    pub fn best_observation(&self, weights: &LevelWeights) -> Option<&Observation> {
        let key = |o: &Observation| (!o.overseer_signals.has_environmental_failure(), o.level(weights));
        self.observations.iter().max_by(|a, b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
        })
    }

    /// Fresh starts still allowed by the policy.
    pub fn fresh_starts_remaining(&self) -> u32 {
        self.policy.max_fresh_starts.saturating_sub(self.total_fresh_starts)
    }
}
