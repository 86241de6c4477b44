//! What a supervisor tells a trajectory to do next (`OptimizationDirective`,
//! seed 000 §2.2) and the versioned control schema the LLM tier answers in
//! (Appendix B).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::domain::{DirectiveAction, DirectiveSource};

/// ALM settings a directive may change (Appendix B).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AlmSettingsOverride {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub penalty_parameters_increase_factor: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds_reduction_factor: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposalMix {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exploration_ratio: Option<f64>,
}

/// The settings a directive overrides; every part is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigOverrides {
    /// Per-constraint weights (soft ALM): raise a struggling constraint's penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint_weights: Option<BTreeMap<String, f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alm_settings: Option<AlmSettingsOverride>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_mix: Option<ProposalMix>,
    /// Policy changes for an agent trajectory (see [`crate::aso::agent`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentOverrides>,
}

impl ConfigOverrides {
    pub fn is_empty(&self) -> bool {
        self.constraint_weights.is_none()
            && self.alm_settings.is_none()
            && self.proposal_mix.is_none()
            && self.agent.is_none()
    }
}

/// What a directive may change in an agent trajectory's policy: the
/// convergence engine's own levers, named as the engine names them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentOverrides {
    /// The bandit's exploration weight, 0.0–1.0 (higher favours exploring strategies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exploration_weight: Option<f64>,
    /// The strategy of the next attempt, e.g. `focused_repair`, `reframe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced_strategy: Option<crate::engine::StrategyKind>,
    /// A check to concentrate on (a constraint's name, e.g. `tests`), told
    /// to the executor as a hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
}

/// The directive as a model is asked to write it: the action and the
/// reasoning are required (a reply without them is a rejection naming the
/// field), the confidence is 1 when not given, and the source is not the
/// model's to say.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "Directive")]
pub struct ModelDirective {
    pub action: DirectiveAction,
    #[serde(default)]
    pub config_overrides: Option<ConfigOverrides>,
    /// A starting point for a RESTART, by variable index.
    #[serde(default)]
    pub suggested_params: Option<Vec<f64>>,
    /// Why, in a sentence or two.
    pub reasoning: String,
    /// From 0 to 1.
    #[serde(default = "one")]
    pub confidence: f64,
}

impl From<ModelDirective> for Directive {
    fn from(m: ModelDirective) -> Directive {
        Directive {
            action: m.action,
            config_overrides: m.config_overrides,
            suggested_params: m.suggested_params,
            reasoning: m.reasoning,
            confidence: m.confidence,
            source: DirectiveSource::Llm,
        }
    }
}

/// A supervisor's decision for one trajectory step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Directive {
    pub action: DirectiveAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_overrides: Option<ConfigOverrides>,
    /// Optional starting point for a RESTART, by variable index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_params: Option<Vec<f64>>,
    #[serde(default)]
    pub reasoning: String,
    #[serde(default = "one")]
    pub confidence: f64,
    #[serde(default = "heuristic")]
    pub source: DirectiveSource,
}

fn one() -> f64 {
    1.0
}

fn heuristic() -> DirectiveSource {
    DirectiveSource::Heuristic
}

impl Directive {
    pub fn new(action: DirectiveAction, source: DirectiveSource, reasoning: impl Into<String>) -> Self {
        Directive {
            action,
            config_overrides: None,
            suggested_params: None,
            reasoning: reasoning.into(),
            confidence: 1.0,
            source,
        }
    }

    pub fn with_overrides(mut self, overrides: ConfigOverrides) -> Self {
        self.config_overrides = Some(overrides);
        self
    }
}

/// The control schema v1.0 the LLM tier is shown and must answer in.
pub fn control_schema_v1() -> serde_json::Value {
    serde_json::json!({
        "version": "1.0",
        "actions": {
            "CONTINUE": "Proceed with current settings",
            "ADJUST": "Modify optimization parameters",
            "STOP": "Terminate this trajectory (converged or hopeless)",
            "RESTART": "Abandon trajectory, start with new seed"
        },
        "config_overrides": {
            "constraint_weights": {
                "description": "Increase the weight (penalty) of struggling constraints, by constraint name",
                "example": {"g1": 100.0}
            },
            "alm_settings": {
                "description": "Adjust ALM hyperparameters",
                "penalty_parameters_increase_factor": "Multiply penalties (default 10)",
                "bounds_reduction_factor": "Shrink search space (default 0.95)"
            },
            "proposal_mix": {
                "description": "Adjust exploration/exploitation balance",
                "exploration_ratio": "0.0-1.0"
            }
        },
        "output_format": {
            "action": "CONTINUE | ADJUST | STOP | RESTART",
            "config_overrides": "optional object, keys as above",
            "reasoning": "brief explanation",
            "confidence": "0.0-1.0"
        }
    })
}

/// The control schema the LLM tier answers in when it supervises agent
/// trajectories: the same actions and output, with the engine's levers as
/// the overrides.
pub fn control_schema_agent_v1() -> serde_json::Value {
    serde_json::json!({
        "version": "1.0-agent",
        "actions": {
            "CONTINUE": "Proceed with the engine's choice of the next strategy",
            "ADJUST": "Change the trajectory's policy (config_overrides.agent), then proceed",
            "STOP": "End this trajectory with its best result (done, or hopeless)",
            "RESTART": "Fresh start: a clean context carrying only the hints and the best result's signals"
        },
        "config_overrides": {
            "agent": {
                "exploration_weight": "0.0-1.0: how strongly the strategy bandit favours exploring strategies",
                "forced_strategy": "the next attempt's strategy: retry_with_feedback, retry_augmented, \
                    focused_repair, incremental_refinement, reframe, alternative_approach, architect_review, \
                    revert_and_branch",
                "focus": "the name of a constraint (a check) the executor should concentrate on"
            }
        },
        "constraints": "one per kind of check (tests, build, type_check, security, check:NAME, intent); \
            violation = the share of its criteria failing",
        "output_format": {
            "action": "CONTINUE | ADJUST | STOP | RESTART",
            "config_overrides": "optional object, keys as above",
            "reasoning": "brief explanation",
            "confidence": "0.0-1.0"
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_round_trip_in_the_schema_shape() {
        let d: Directive = serde_json::from_str(
            r#"{"action": "ADJUST", "config_overrides": {"constraint_weights": {"g2": 50}}, "reasoning": "boost"}"#,
        )
        .unwrap();
        assert_eq!(d.action, DirectiveAction::Adjust);
        assert_eq!(d.config_overrides.unwrap().constraint_weights.unwrap()["g2"], 50.0);
        assert_eq!(d.confidence, 1.0);
        let bad = serde_json::from_str::<Directive>(r#"{"action": "JUMP"}"#);
        assert!(bad.is_err());
        let unknown = serde_json::from_str::<Directive>(r#"{"action": "ADJUST", "config_overrides": {"speed": 1}}"#);
        assert!(unknown.is_err(), "unknown override keys are rejected");
    }
}
