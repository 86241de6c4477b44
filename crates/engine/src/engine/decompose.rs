//! Decomposition as convergence (seed 002 Part 9), the pure part: when a
//! task is split before its first attempt, whether a proposed split is worth
//! it, and how the budget is shared between the subtasks and the mandatory
//! integration trajectory.
//!
//! Convergence gets likelier faster than a specification gets simpler, so a
//! split into subtasks can cost fewer iterations in all than the task as a
//! whole. But subtasks that pass their own checks do not compose by
//! themselves, so a quarter of the budget (the seed's constant) is always
//! kept for an integration trajectory that measures the whole against the
//! task's own overseers — and the task's result is that trajectory's.
//!
//! - Proactive: at SETUP, [`should_propose`] says whether to ask for a split
//!   at all, and [`evaluate`] compares the estimated cost of the split
//!   with the monolith's.
//! - Reactive: the engine may choose `Decompose` like any strategy where the
//!   eligibility filter allows it (limit cycles, long plateaus); the caller
//!   then asks for a split and shares what is left of the budget.

use serde::{Deserialize, Serialize};

use super::basin::{BasinClassification, BasinWidth, ConvergenceEstimate};
use super::budget::{Complexity, ConvergenceBudget};
use super::policy::PriorityHint;

/// When to try splitting a task before its first attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProactiveDecomposition {
    /// The seed's rule: a narrow basin with a priority hint.
    Auto,
    /// Every task (the split is still checked for being usable).
    Always,
    Never,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecompositionConfig {
    pub proactive: ProactiveDecomposition,
    /// Whether the engine may choose `Decompose` during a trajectory (where
    /// the eligibility filter offers it).
    pub reactive: bool,
    /// The share of the budget kept for the integration trajectory (the
    /// seed's 25 %).
    pub integration_share: f64,
    /// Expected extra iterations each subtask costs in coordination.
    pub overhead_per_subtask: f64,
    /// A split is recommended when its estimate is below this share of the
    /// monolith's.
    pub savings_ratio: f64,
    /// Fewer subtasks than this is not a split; more is refused.
    pub min_subtasks: usize,
    pub max_subtasks: usize,
    /// How deep splits may nest: 1 means subtasks are not split again.
    pub max_depth: u32,
}

impl Default for DecompositionConfig {
    fn default() -> Self {
        DecompositionConfig {
            proactive: ProactiveDecomposition::Auto,
            reactive: true,
            integration_share: 0.25,
            overhead_per_subtask: 0.5,
            savings_ratio: 0.8,
            min_subtasks: 2,
            max_subtasks: 6,
            max_depth: 1,
        }
    }
}

/// Whether to ask for a split before the first attempt.
///
/// Departure from the seed: the seed asks for a split whenever the basin is
/// not wide but applies it only to narrow basins with a priority hint (it
/// otherwise just announces the recommendation). A proposal costs a model
/// call, so under `auto` it is asked for only when it could be applied.
pub fn should_propose(mode: ProactiveDecomposition, basin: &BasinWidth, priority: Option<PriorityHint>) -> bool {
    match mode {
        ProactiveDecomposition::Never => false,
        ProactiveDecomposition::Always => true,
        ProactiveDecomposition::Auto => basin.classification == BasinClassification::Narrow && priority.is_some(),
    }
}

/// The complexity a subtask's cost is estimated at: one step simpler than
/// its task (the seed infers each subtask's own; we have no inference).
pub fn subtask_complexity(parent: Complexity) -> Complexity {
    match parent {
        Complexity::Complex => Complexity::Moderate,
        Complexity::Moderate => Complexity::Simple,
        Complexity::Simple | Complexity::Trivial => Complexity::Trivial,
    }
}

/// Whether a proposed split pays off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum DecompositionDecision {
    NoDecomposition { monolithic_iterations: f64, decomposed_iterations: f64 },
    Recommend { monolithic_iterations: f64, decomposed_iterations: f64, savings_estimate: f64 },
}

impl DecompositionDecision {
    pub fn recommended(&self) -> bool {
        matches!(self, DecompositionDecision::Recommend { .. })
    }

    /// Iterations saved by the split (negative when it costs more).
    pub fn savings(&self) -> f64 {
        match self {
            DecompositionDecision::NoDecomposition { monolithic_iterations, decomposed_iterations }
            | DecompositionDecision::Recommend { monolithic_iterations, decomposed_iterations, .. } => {
                monolithic_iterations - decomposed_iterations
            }
        }
    }
}

/// The seed's comparison: the subtasks' expected iterations plus their
/// coordination overhead against the monolith's, with a margin.
pub fn evaluate(
    monolithic: &ConvergenceEstimate,
    subtasks: &[ConvergenceEstimate],
    config: &DecompositionConfig,
) -> DecompositionDecision {
    let monolithic_iterations = monolithic.expected_iterations;
    let decomposed_iterations = subtasks.iter().map(|e| e.expected_iterations).sum::<f64>()
        + subtasks.len() as f64 * config.overhead_per_subtask;
    if decomposed_iterations < monolithic_iterations * config.savings_ratio {
        DecompositionDecision::Recommend {
            monolithic_iterations,
            decomposed_iterations,
            savings_estimate: monolithic_iterations - decomposed_iterations,
        }
    } else {
        DecompositionDecision::NoDecomposition { monolithic_iterations, decomposed_iterations }
    }
}

/// The budgets of a split: one per subtask, and the integration's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecomposedBudget {
    pub subtasks: Vec<ConvergenceBudget>,
    pub integration: ConvergenceBudget,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AllocationError {
    #[error("a split needs at least one subtask")]
    NoSubtasks,
    #[error(
        "what is left of the budget ({}, {tokens} tokens) cannot give {} \
         and the integration at least one iteration and some tokens each",
        crate::counted(*.iterations, "iteration"),
        crate::counted(*.subtasks, "subtask")
    )]
    TooSmall { iterations: u32, tokens: u64, subtasks: usize },
}

/// Shares `total` (seed 002 §9.3): `integration_share` of it for the
/// integration trajectory, the rest evenly between the subtasks. Shares are
/// rounded down, so they never add up to more than `total`; each must get
/// at least one iteration and some tokens and time.
pub fn allocate(
    total: &ConvergenceBudget,
    subtasks: usize,
    integration_share: f64,
) -> Result<DecomposedBudget, AllocationError> {
    if subtasks == 0 {
        return Err(AllocationError::NoSubtasks);
    }
    let share = if integration_share.is_finite() { integration_share.clamp(0.0, 1.0) } else { 0.25 };
    let integration = total.scale(share);
    let each = total.scale((1.0 - share) / subtasks as f64);
    let usable = |b: &ConvergenceBudget| b.max_iterations >= 1 && b.max_tokens > 0 && (b.max_wall_time_ms > 0);
    if !usable(&integration) || !usable(&each) {
        return Err(AllocationError::TooSmall { iterations: total.max_iterations, tokens: total.max_tokens, subtasks });
    }
    Ok(DecomposedBudget { subtasks: vec![each; subtasks], integration })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(iterations: f64) -> ConvergenceEstimate {
        ConvergenceEstimate {
            expected_iterations: iterations,
            p95_iterations: 0,
            convergence_probability: 0.5,
            expected_tokens: 0,
        }
    }

    #[test]
    fn a_quarter_goes_to_the_integration_and_the_rest_is_shared_evenly() {
        let total = ConvergenceBudget {
            max_tokens: 400_000,
            max_iterations: 8,
            max_wall_time_ms: 3_600_000,
            max_extensions: 1,
            ..Default::default()
        };
        let split = allocate(&total, 2, 0.25).unwrap();
        assert_eq!(split.integration.max_iterations, 2);
        assert_eq!(split.integration.max_tokens, 100_000);
        assert_eq!(split.integration.max_wall_time_ms, 900_000);
        assert_eq!(split.subtasks.len(), 2);
        assert_eq!((split.subtasks[0].max_iterations, split.subtasks[0].max_tokens), (3, 150_000));
        let iterations: u32 =
            split.subtasks.iter().map(|b| b.max_iterations).sum::<u32>() + split.integration.max_iterations;
        assert!(iterations <= total.max_iterations);
    }

    #[test]
    fn a_budget_too_small_to_split_is_refused_with_the_numbers() {
        let total =
            ConvergenceBudget { max_tokens: 1_000, max_iterations: 3, max_wall_time_ms: 1_000, ..Default::default() };
        let err = allocate(&total, 4, 0.25).unwrap_err();
        assert!(err.to_string().contains("3 iterations"), "{err}");
        assert_eq!(allocate(&total, 0, 0.25), Err(AllocationError::NoSubtasks));
    }

    #[test]
    fn what_is_left_of_a_budget_is_what_a_reactive_split_shares() {
        let mut b =
            ConvergenceBudget { max_tokens: 100, max_iterations: 10, max_wall_time_ms: 50, ..Default::default() };
        b.consume(40, 20);
        b.consume(10, 5);
        let left = b.remaining();
        assert_eq!((left.max_tokens, left.max_iterations, left.max_wall_time_ms, left.iterations_used), (50, 8, 25, 0));
    }

    #[test]
    fn a_split_is_recommended_only_when_clearly_cheaper() {
        let c = DecompositionConfig::default();
        // 12 as a monolith; 3 + 3 + 2 plus 1.5 overhead = 9.5 < 9.6.
        let d = evaluate(&estimate(12.0), &[estimate(3.0), estimate(3.0), estimate(2.0)], &c);
        assert!(d.recommended(), "{d:?}");
        assert!((d.savings() - 2.5).abs() < 1e-9);
        let d = evaluate(&estimate(8.0), &[estimate(4.0), estimate(3.0)], &c);
        assert!(!d.recommended(), "{d:?}");
    }

    #[test]
    fn auto_asks_for_a_split_only_where_the_seed_would_apply_it() {
        let narrow = BasinWidth { score: 0.2, classification: BasinClassification::Narrow };
        let moderate = BasinWidth { score: 0.5, classification: BasinClassification::Moderate };
        let auto = ProactiveDecomposition::Auto;
        assert!(should_propose(auto, &narrow, Some(PriorityHint::Fast)));
        assert!(!should_propose(auto, &narrow, None));
        assert!(!should_propose(auto, &moderate, Some(PriorityHint::Thorough)));
        assert!(should_propose(ProactiveDecomposition::Always, &moderate, None));
        assert!(!should_propose(ProactiveDecomposition::Never, &narrow, Some(PriorityHint::Fast)));
    }
}
