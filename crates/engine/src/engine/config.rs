//! All of the engine's numbers in one place. Defaults are seed 002's
//! constants (and seed 003's for the goal gradient); where a seed names a
//! constant without a value, the default is ours and says so. Read from JSON
//! or YAML over these defaults: a missing key keeps its default, an unknown
//! one is an error.

use serde::{Deserialize, Serialize};

use super::attractor::ClassificationConfig;
use super::bandit::BanditConfig;
use super::basin::{BasinConfig, EstimateConfig};
use super::budget::BudgetConfig;
use super::context::ContextThresholds;
use super::decompose::DecompositionConfig;
use super::effectiveness::RotationConfig;
use super::intervention::InterventionConfig;
use super::metrics::{DeltaWeights, LevelWeights};
use super::parallel::ParallelConfig;
use super::policy::{ConvergencePolicy, PriorityConfig};
use super::strategy::StrategyKind;
use crate::ggs::GgsConfig;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    pub classification: ClassificationConfig,
    pub delta: DeltaWeights,
    pub level: LevelWeights,
    pub context: ContextThresholds,
    pub bandit: BanditConfig,
    pub rotation: RotationConfig,
    pub budget: BudgetConfig,
    pub basin: BasinConfig,
    pub estimate: EstimateConfig,
    pub priority: PriorityConfig,
    /// The policy a trajectory starts from before basin width and priority shape it.
    pub policy: ConvergencePolicy,
    pub ggs: GgsConfig,
    /// Splitting a task into subtasks and an integration (seed 002 Part 9).
    pub decomposition: DecompositionConfig,
    /// Several samples of one task on a shared budget (seed 002 §6.6).
    pub parallel: ParallelConfig,
    /// Strategies the surrounding system cannot execute (say, `decompose`
    /// without child trajectories, `architect_review` without an architect);
    /// they are never offered.
    pub disabled_strategies: Vec<StrategyKind>,
    /// Per intervention point, what to do instead of what the priority hint
    /// says (seed 002 §7.3): `pause`, `notify` or `auto`. Say
    /// `{"strategy_escalation": "auto", "partial_result": "auto"}` for a run
    /// nobody watches.
    pub interventions: InterventionConfig,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_constants_are_the_defaults() {
        let c = EngineConfig::default();
        assert_eq!(c.classification.window, 5);
        assert_eq!(c.classification.plateau_epsilon, 0.02);
        assert_eq!(c.classification.cycle_similarity_threshold, 0.85);
        assert_eq!(c.classification.min_observations, 3);
        assert_eq!(c.rotation.minimum_useful_progress, 0.05);
        assert_eq!(c.policy.partial_threshold, 0.7);
        assert_eq!(c.policy.max_fresh_starts, 3);
        assert_eq!((c.ggs.alpha, c.ggs.beta, c.ggs.lambda), (0.6, 0.3, 0.4));
        assert_eq!((c.ggs.epsilon, c.ggs.delta, c.ggs.abandon_omega), (0.1, 0.3, 0.8));
        assert_eq!(c.decomposition.integration_share, 0.25);
        assert_eq!((c.decomposition.overhead_per_subtask, c.decomposition.savings_ratio), (0.5, 0.8));
    }

    #[test]
    fn a_partial_config_keeps_the_other_defaults_and_unknown_keys_are_refused() {
        let c: EngineConfig =
            serde_json::from_str(r#"{"ggs":{"epsilon":0.05},"disabled_strategies":["decompose"]}"#).unwrap();
        assert_eq!(c.ggs.epsilon, 0.05);
        assert_eq!(c.ggs.alpha, 0.6);
        assert_eq!(c.disabled_strategies, vec![StrategyKind::Decompose]);
        let err = serde_json::from_str::<EngineConfig>(r#"{"ggs":{"epsilom":0.05}}"#).unwrap_err();
        assert!(err.to_string().contains("epsilom"), "{err}");
    }
}
