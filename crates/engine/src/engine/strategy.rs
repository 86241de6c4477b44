//! The strategies a trajectory can take on its next iteration.
//!
//! A strategy is a specific way of moving toward the goal, not just "retry":
//! exploitation strategies refine the current approach, exploration strategies
//! try a different one, and two strategies change what the executor starts
//! from (RevertAndBranch resets the workspace to the best observation,
//! FreshStart drops the conversation and keeps only curated knowledge). The
//! data a strategy needs (the target observation, the carry-forward) travels
//! beside the kind, so the kind stays a plain key for the bandit's arms.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StrategyKind {
    /// The task again, with the latest overseer feedback appended.
    RetryWithFeedback,
    /// The task again, with more context: related code, examples, docs.
    RetryAugmented,
    /// Only the failing checks and the code they touch, maximum focus.
    FocusedRepair,
    /// One gap at a time instead of all at once.
    IncrementalRefinement,
    /// The task restated as a fresh implementation problem with what was learned as constraints.
    Reframe,
    /// Split into subtasks solved by child trajectories, then integrated.
    Decompose,
    /// Explicitly a different implementation approach.
    AlternativeApproach,
    /// Re-planning: the specification is amended before the next attempt.
    ArchitectReview,
    /// Reset the workspace to the best observation and branch from there.
    RevertAndBranch,
    /// A clean context that carries forward only hints, best signals and anti-patterns.
    FreshStart,
}

impl StrategyKind {
    pub const ALL: [StrategyKind; 10] = [
        StrategyKind::RetryWithFeedback,
        StrategyKind::RetryAugmented,
        StrategyKind::FocusedRepair,
        StrategyKind::IncrementalRefinement,
        StrategyKind::Reframe,
        StrategyKind::Decompose,
        StrategyKind::AlternativeApproach,
        StrategyKind::ArchitectReview,
        StrategyKind::RevertAndBranch,
        StrategyKind::FreshStart,
    ];

    /// The seed's token estimate for one execution of this strategy; the
    /// bandit weighs expected progress against it.
    pub fn estimated_cost(self) -> u64 {
        match self {
            StrategyKind::FocusedRepair => 15_000,
            StrategyKind::RetryWithFeedback | StrategyKind::RevertAndBranch => 20_000,
            StrategyKind::IncrementalRefinement => 25_000,
            StrategyKind::RetryAugmented | StrategyKind::ArchitectReview | StrategyKind::FreshStart => 30_000,
            StrategyKind::AlternativeApproach => 35_000,
            StrategyKind::Reframe => 40_000,
            StrategyKind::Decompose => 50_000,
        }
    }

    /// Exploration strategies try a different approach instead of refining this one.
    pub fn is_exploration(self) -> bool {
        matches!(
            self,
            StrategyKind::Reframe
                | StrategyKind::Decompose
                | StrategyKind::AlternativeApproach
                | StrategyKind::ArchitectReview
        )
    }

    /// Escalations change the task rather than the attempt: `Decompose`
    /// replaces the trajectory by subtasks on shares of what is left of the
    /// budget, `ArchitectReview` amends the specification every later attempt
    /// follows. The seed escalates to them once fresh starts are used up
    /// (§4.3); they are the strategies a person is asked about (§7.3,
    /// StrategyEscalation). `AlternativeApproach`, also on the seed's
    /// escalation list, is left out on purpose: it is an ordinary exploration
    /// strategy for cycles and wrong approaches too, and only changes the
    /// prompt — asking about it would make every cycle a question.
    pub fn is_escalation(self) -> bool {
        matches!(self, StrategyKind::Decompose | StrategyKind::ArchitectReview)
    }

    /// The snake_case name used in prompts, the store and the app.
    pub fn as_str(self) -> &'static str {
        match self {
            StrategyKind::RetryWithFeedback => "retry_with_feedback",
            StrategyKind::RetryAugmented => "retry_augmented",
            StrategyKind::FocusedRepair => "focused_repair",
            StrategyKind::IncrementalRefinement => "incremental_refinement",
            StrategyKind::Reframe => "reframe",
            StrategyKind::Decompose => "decompose",
            StrategyKind::AlternativeApproach => "alternative_approach",
            StrategyKind::ArchitectReview => "architect_review",
            StrategyKind::RevertAndBranch => "revert_and_branch",
            StrategyKind::FreshStart => "fresh_start",
        }
    }
}

impl std::fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_serializes_as_its_name() {
        for s in StrategyKind::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), serde_json::Value::String(s.as_str().to_string()));
        }
    }
}
