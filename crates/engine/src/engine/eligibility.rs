//! Which strategies may be tried next (seed 002 §4.3), and how a goal-gradient
//! directive narrows them.
//!
//! The attractor filter is deterministic and comes first: converging →
//! exploit only; cycling → explore only, never a strategy used during the
//! cycle; diverging → by cause; stalled → fresh start, then escalation. The
//! bandit ([`super::bandit`]) picks among what remains.
//!
//! A directive of the goal gradient then narrows the set to the kind of
//! change it demands: `refine` → exploitation, `change_path` → the same
//! approach aimed elsewhere, `change_approach` / `break_symmetry` →
//! exploration. When the two disagree completely (the intersection is
//! empty) the attractor's set stands: it encodes the hard rules (never
//! exploit inside a limit cycle, revert on accumulated regressions), while
//! the directive is a finer preference within them.

use std::collections::HashSet;

use super::attractor::{AttractorType, DivergenceCause};
use super::model::Trajectory;
use super::strategy::StrategyKind;
use crate::ggs::Directive;

use StrategyKind::*;

/// Exploitation: refine the current approach.
pub const EXPLOITATION: [StrategyKind; 4] = [RetryWithFeedback, RetryAugmented, FocusedRepair, IncrementalRefinement];
/// Exploration: try a different approach.
pub const EXPLORATION: [StrategyKind; 4] = [Reframe, Decompose, AlternativeApproach, ArchitectReview];
/// Same approach, another target: narrower focus, more context, one gap at a
/// time, or branching again from the best state.
pub const SAME_APPROACH_OTHER_TARGET: [StrategyKind; 4] =
    [RetryAugmented, FocusedRepair, IncrementalRefinement, RevertAndBranch];

/// The strategies the attractor allows (before disabled ones are removed).
pub fn eligible_strategies(trajectory: &Trajectory, attractor: &AttractorType) -> Vec<StrategyKind> {
    match attractor {
        AttractorType::FixedPoint { estimated_remaining_iterations, .. } => {
            if *estimated_remaining_iterations <= 2 {
                vec![RetryWithFeedback, IncrementalRefinement]
            } else {
                vec![RetryWithFeedback, FocusedRepair, IncrementalRefinement, RetryAugmented]
            }
        }
        AttractorType::LimitCycle { period, .. } => {
            // Whatever ran during the last two laps is part of the cycle.
            let laps = (*period as usize) * 2;
            let used: HashSet<StrategyKind> =
                trajectory.strategy_log.iter().rev().take(laps).map(|e| e.strategy_kind).collect();
            let mut candidates: Vec<StrategyKind> =
                [Reframe, AlternativeApproach, Decompose].into_iter().filter(|s| !used.contains(s)).collect();
            if candidates.is_empty() && trajectory.budget.allows_strategy_cost(Decompose) {
                candidates.push(Decompose);
            }
            candidates
        }
        AttractorType::Divergent { probable_cause, .. } => match probable_cause {
            DivergenceCause::SpecificationAmbiguity => vec![ArchitectReview, Reframe],
            DivergenceCause::WrongApproach => vec![AlternativeApproach, Reframe],
            DivergenceCause::AccumulatedRegression => vec![RevertAndBranch],
            DivergenceCause::Unknown => vec![Reframe, AlternativeApproach],
        },
        AttractorType::Plateau { stall_duration, plateau_level } => {
            if *stall_duration >= 3 && trajectory.fresh_starts_remaining() > 0 {
                vec![FreshStart]
            } else if *stall_duration >= 3 {
                // Fresh starts used up: escalate.
                vec![Decompose, AlternativeApproach, ArchitectReview]
            } else if *plateau_level > 0.8 {
                vec![FocusedRepair, IncrementalRefinement]
            } else if *plateau_level > 0.5 {
                vec![AlternativeApproach, Reframe, Decompose]
            } else {
                vec![Decompose, ArchitectReview]
            }
        }
        AttractorType::Indeterminate { .. } => vec![RetryAugmented, RetryWithFeedback, FocusedRepair],
    }
}

/// The strategies a directive allows; `abandon` allows none.
pub fn allowed_by_directive(directive: Directive) -> &'static [StrategyKind] {
    match directive {
        Directive::Refine => &EXPLOITATION,
        Directive::ChangePath => &SAME_APPROACH_OTHER_TARGET,
        Directive::ChangeApproach | Directive::BreakSymmetry => &EXPLORATION,
        Directive::Abandon => &[],
    }
}

/// `eligible ∩ allowed_by_directive`, or `eligible` unchanged when that is
/// empty; the flag says whether the directive was honoured.
pub fn narrow_by_directive(eligible: &[StrategyKind], directive: Directive) -> (Vec<StrategyKind>, bool) {
    let allowed = allowed_by_directive(directive);
    let narrowed: Vec<StrategyKind> = eligible.iter().copied().filter(|s| allowed.contains(s)).collect();
    if narrowed.is_empty() { (eligible.to_vec(), false) } else { (narrowed, true) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_a_directive_allows_is_of_its_kind() {
        assert!(allowed_by_directive(Directive::Refine).iter().all(|s| !s.is_exploration()));
        assert!(allowed_by_directive(Directive::BreakSymmetry).iter().all(|s| s.is_exploration()));
        assert!(allowed_by_directive(Directive::ChangeApproach).iter().all(|s| s.is_exploration()));
        assert!(allowed_by_directive(Directive::ChangePath).iter().all(|s| !s.is_exploration()));
        assert!(allowed_by_directive(Directive::Abandon).is_empty());
    }

    #[test]
    fn a_directive_narrows_the_attractor_set_where_they_agree() {
        let fixed = [RetryWithFeedback, FocusedRepair, IncrementalRefinement, RetryAugmented];
        assert_eq!(
            narrow_by_directive(&fixed, Directive::ChangePath),
            (vec![FocusedRepair, IncrementalRefinement, RetryAugmented], true)
        );
        let plateau = [AlternativeApproach, Reframe, Decompose];
        assert_eq!(narrow_by_directive(&plateau, Directive::BreakSymmetry), (plateau.to_vec(), true));
    }

    #[test]
    fn when_a_directive_and_the_attractor_disagree_the_attractor_stands() {
        let cycle = [Reframe, AlternativeApproach];
        assert_eq!(narrow_by_directive(&cycle, Directive::Refine), (cycle.to_vec(), false));
        assert_eq!(narrow_by_directive(&[FreshStart], Directive::BreakSymmetry), (vec![FreshStart], false));
    }
}
