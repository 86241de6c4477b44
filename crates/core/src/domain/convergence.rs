//! The convergence engine's kinds that other layers name: the strategy an
//! iteration took, the attractor it was classified into, the goal
//! gradient's directive, how the loop went on after it, and the basin a
//! task was given. The engine decides them; the bus carries them to the
//! store and the app, which is why they live below both.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema, TS,
)]
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

/// The attractor types without their data: the bandit's context key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum AttractorKind {
    FixedPoint,
    LimitCycle,
    Divergent,
    Plateau,
    Indeterminate,
}

impl AttractorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AttractorKind::FixedPoint => "fixed_point",
            AttractorKind::LimitCycle => "limit_cycle",
            AttractorKind::Divergent => "divergent",
            AttractorKind::Plateau => "plateau",
            AttractorKind::Indeterminate => "indeterminate",
        }
    }
}

impl std::fmt::Display for AttractorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of change the next attempt must make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Directive {
    /// Keep the approach, tighten the details.
    Refine,
    /// Same approach, a different target or parameters.
    ChangePath,
    /// An explicitly different approach; the failing attempt's tools are blocked.
    ChangeApproach,
    /// Escape a local minimum with a novel approach; the failing attempt's tools are blocked.
    BreakSymmetry,
    /// Stop: the cost of another round approaches the cost of the gap.
    Abandon,
}

impl Directive {
    pub fn as_str(self) -> &'static str {
        match self {
            Directive::Refine => "refine",
            Directive::ChangePath => "change_path",
            Directive::ChangeApproach => "change_approach",
            Directive::BreakSymmetry => "break_symmetry",
            Directive::Abandon => "abandon",
        }
    }

    /// The directives that add the failing attempt's tools to the MUST-NOT set.
    pub fn blocks_tools(self) -> bool {
        matches!(self, Directive::ChangeApproach | Directive::BreakSymmetry)
    }
}

impl std::fmt::Display for Directive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The dominant class of this round's failures.
/// How wide a task's basin of convergence is: how hard converging will be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum BasinClassification {
    Wide,
    Moderate,
    Narrow,
}

/// What loop control decided after an iteration, without its data (the
/// engine's `LoopControl` carries the data; its `kind()` is this).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum LoopControlKind {
    Continue,
    ForceFreshStart,
    ExtensionGranted,
    ExtensionRequested,
    Converged,
    AcceptedPartial,
    Exhausted,
    Abandoned,
    Trapped,
}

impl LoopControlKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LoopControlKind::Continue => "continue",
            LoopControlKind::ForceFreshStart => "force_fresh_start",
            LoopControlKind::ExtensionGranted => "extension_granted",
            LoopControlKind::ExtensionRequested => "extension_requested",
            LoopControlKind::Converged => "converged",
            LoopControlKind::AcceptedPartial => "accepted_partial",
            LoopControlKind::Exhausted => "exhausted",
            LoopControlKind::Abandoned => "abandoned",
            LoopControlKind::Trapped => "trapped",
        }
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

    #[test]
    fn every_loop_control_kind_serializes_as_its_name() {
        use LoopControlKind::*;
        let all = [
            Continue,
            ForceFreshStart,
            ExtensionGranted,
            ExtensionRequested,
            Converged,
            AcceptedPartial,
            Exhausted,
            Abandoned,
            Trapped,
        ];
        for k in all {
            assert_eq!(serde_json::to_value(k).unwrap(), serde_json::Value::String(k.as_str().to_string()));
        }
    }
}
