//! SETUP: predicting how hard convergence will be before the first attempt
//! (seed 002 Part 5 and §6.6).
//!
//! A task with acceptance tests, examples and invariants has a *wide basin*:
//! many starting points lead to a correct solution, so the budget can shrink
//! and the strategy mix can lean on exploitation. A short, vague task has a
//! *narrow basin*: more budget, more exploration, generated acceptance tests,
//! and possibly several parallel starts. [`plan_setup`] composes the steps in
//! the seed's order: budget by complexity, basin width, then the priority
//! hint on top.

use serde::{Deserialize, Serialize};

use super::budget::{BudgetConfig, Complexity, ConvergenceBudget};
use super::policy::{ConvergencePolicy, PriorityConfig, PriorityHint, apply_priority};

pub use crate::domain::convergence::BasinClassification;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BasinWidth {
    /// In [0, 1]; wider is easier.
    pub score: f64,
    pub classification: BasinClassification,
}

/// What the submission brings that widens or narrows the basin.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BasinInputs {
    pub description: String,
    pub acceptance_tests: usize,
    pub examples: usize,
    pub invariants: usize,
    pub anti_examples: usize,
    pub context_files: usize,
    /// Share of similar past tasks that converged, when there is history.
    pub historical_convergence_rate: Option<f64>,
}

/// The score contributions of seed 002 §5.2 and the effects of §5.3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BasinConfig {
    pub base_score: f64,
    pub acceptance_tests_bonus: f64,
    pub examples_bonus: f64,
    pub invariants_bonus: f64,
    pub anti_examples_bonus: f64,
    pub context_files_bonus: f64,
    /// Descriptions shorter than this many words narrow the basin.
    pub short_description_words: usize,
    pub short_description_penalty: f64,
    /// Descriptions longer than this many words narrow it too.
    pub long_description_words: usize,
    pub long_description_penalty: f64,
    /// Weight of the historical convergence rate when blended in.
    pub historical_weight: f64,
    /// Scores above this are wide; above `narrow_below`, moderate.
    pub wide_above: f64,
    pub narrow_below: f64,
    pub wide_iteration_factor: f64,
    pub narrow_iteration_factor: f64,
    pub narrow_token_factor: f64,
    pub wide_exploration_weight: f64,
    pub moderate_exploration_weight: f64,
    pub narrow_exploration_weight: f64,
}

impl Default for BasinConfig {
    fn default() -> Self {
        BasinConfig {
            base_score: 0.5,
            acceptance_tests_bonus: 0.15,
            examples_bonus: 0.10,
            invariants_bonus: 0.10,
            anti_examples_bonus: 0.05,
            context_files_bonus: 0.05,
            short_description_words: 20,
            short_description_penalty: 0.15,
            long_description_words: 500,
            long_description_penalty: 0.10,
            historical_weight: 0.6,
            wide_above: 0.7,
            narrow_below: 0.4,
            wide_iteration_factor: 0.75,
            narrow_iteration_factor: 1.5,
            narrow_token_factor: 1.3,
            wide_exploration_weight: 0.2,
            moderate_exploration_weight: 0.4,
            narrow_exploration_weight: 0.6,
        }
    }
}

pub fn estimate_basin_width(inputs: &BasinInputs, c: &BasinConfig) -> BasinWidth {
    let mut score = c.base_score;
    let bonus = |n: usize, b: f64| if n > 0 { b } else { 0.0 };
    score += bonus(inputs.acceptance_tests, c.acceptance_tests_bonus)
        + bonus(inputs.examples, c.examples_bonus)
        + bonus(inputs.invariants, c.invariants_bonus)
        + bonus(inputs.anti_examples, c.anti_examples_bonus)
        + bonus(inputs.context_files, c.context_files_bonus);
    let words = inputs.description.split_whitespace().count();
    if words < c.short_description_words {
        score -= c.short_description_penalty;
    }
    if words > c.long_description_words {
        score -= c.long_description_penalty;
    }
    if let Some(rate) = inputs.historical_convergence_rate.filter(|r| r.is_finite()) {
        score = c.historical_weight * rate.clamp(0.0, 1.0) + (1.0 - c.historical_weight) * score;
    }
    let score = score.clamp(0.0, 1.0);
    let classification = if score > c.wide_above {
        BasinClassification::Wide
    } else if score > c.narrow_below {
        BasinClassification::Moderate
    } else {
        BasinClassification::Narrow
    };
    BasinWidth { score, classification }
}

/// Scales the base budget and sets the exploration balance by basin width.
pub fn apply_basin_width(
    basin: &BasinWidth,
    budget: &mut ConvergenceBudget,
    policy: &mut ConvergencePolicy,
    c: &BasinConfig,
) {
    match basin.classification {
        BasinClassification::Wide => {
            budget.max_iterations = ((budget.max_iterations as f64 * c.wide_iteration_factor) as u32).max(1);
            policy.exploration_weight = c.wide_exploration_weight;
        }
        BasinClassification::Moderate => policy.exploration_weight = c.moderate_exploration_weight,
        BasinClassification::Narrow => {
            budget.max_iterations = (budget.max_iterations as f64 * c.narrow_iteration_factor) as u32;
            budget.max_tokens = (budget.max_tokens as f64 * c.narrow_token_factor) as u64;
            policy.exploration_weight = c.narrow_exploration_weight;
            policy.generate_acceptance_tests = true;
        }
    }
}

/// Expected cost of converging (seed 002 §5.4), used to weigh decomposition.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConvergenceEstimate {
    pub expected_iterations: f64,
    pub p95_iterations: u32,
    pub convergence_probability: f64,
    pub expected_tokens: u64,
}

/// What one similar past trajectory cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PastTrajectory {
    pub iterations: u32,
    pub converged: bool,
    pub tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EstimateConfig {
    /// Similar past trajectories needed before history replaces the heuristic.
    pub min_history: usize,
    pub trivial_iterations: f64,
    pub simple_iterations: f64,
    pub moderate_iterations: f64,
    pub complex_iterations: f64,
    pub p95_factor: f64,
    pub tokens_per_iteration: f64,
    /// The basin score is floored here before dividing by it.
    pub min_basin_score: f64,
}

impl Default for EstimateConfig {
    fn default() -> Self {
        EstimateConfig {
            min_history: 10,
            trivial_iterations: 2.0,
            simple_iterations: 4.0,
            moderate_iterations: 6.0,
            complex_iterations: 9.0,
            p95_factor: 1.8,
            tokens_per_iteration: 30_000.0,
            min_basin_score: 0.05,
        }
    }
}

pub fn estimate_convergence(
    complexity: Complexity,
    basin: &BasinWidth,
    history: &[PastTrajectory],
    c: &EstimateConfig,
) -> ConvergenceEstimate {
    if history.len() >= c.min_history.max(1) {
        let n = history.len() as f64;
        let mut iterations: Vec<f64> = history.iter().map(|t| t.iterations as f64).collect();
        iterations.sort_by(f64::total_cmp);
        // Nearest-rank 95th percentile.
        let rank = ((0.95 * n).ceil() as usize).clamp(1, iterations.len());
        return ConvergenceEstimate {
            expected_iterations: iterations.iter().sum::<f64>() / n,
            p95_iterations: iterations[rank - 1] as u32,
            convergence_probability: history.iter().filter(|t| t.converged).count() as f64 / n,
            expected_tokens: (history.iter().map(|t| t.tokens as f64).sum::<f64>() / n) as u64,
        };
    }
    let base = match complexity {
        Complexity::Trivial => c.trivial_iterations,
        Complexity::Simple => c.simple_iterations,
        Complexity::Moderate => c.moderate_iterations,
        Complexity::Complex => c.complex_iterations,
    };
    let adjusted = base / basin.score.max(c.min_basin_score);
    ConvergenceEstimate {
        expected_iterations: adjusted,
        p95_iterations: (adjusted * c.p95_factor).ceil() as u32,
        convergence_probability: basin.score,
        expected_tokens: (adjusted * c.tokens_per_iteration) as u64,
    }
}

/// Sequential iteration, or several independent starts with the budget
/// invested in the most promising one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ConvergenceMode {
    Sequential,
    Parallel { initial_samples: u32 },
}

pub fn select_convergence_mode(
    basin: &BasinWidth,
    priority: Option<PriorityHint>,
    parallel_samples: Option<u32>,
) -> ConvergenceMode {
    if let Some(samples) = parallel_samples.filter(|s| *s > 1) {
        return ConvergenceMode::Parallel { initial_samples: samples };
    }
    match (basin.classification, priority) {
        (BasinClassification::Narrow, Some(PriorityHint::Thorough)) => ConvergenceMode::Parallel { initial_samples: 3 },
        (BasinClassification::Narrow, Some(PriorityHint::Fast) | None) => {
            ConvergenceMode::Parallel { initial_samples: 2 }
        }
        _ => ConvergenceMode::Sequential,
    }
}

/// Everything SETUP needs to know about a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupInputs {
    pub complexity: Complexity,
    pub basin: BasinInputs,
    pub priority: Option<PriorityHint>,
    /// Parallel starts asked for explicitly (1 or none: decide from the basin).
    pub parallel_samples: Option<u32>,
    /// Similar past trajectories, for the cost estimate.
    #[serde(default)]
    pub history: Vec<PastTrajectory>,
}

/// What SETUP decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupPlan {
    pub budget: ConvergenceBudget,
    pub policy: ConvergencePolicy,
    pub basin: BasinWidth,
    pub estimate: ConvergenceEstimate,
    pub mode: ConvergenceMode,
}

/// SETUP: budget by complexity, then basin width, then the priority hint.
pub fn plan_setup(
    inputs: &SetupInputs,
    base_policy: &ConvergencePolicy,
    budget_config: &BudgetConfig,
    basin_config: &BasinConfig,
    priority_config: &PriorityConfig,
    estimate_config: &EstimateConfig,
) -> SetupPlan {
    let basin = estimate_basin_width(&inputs.basin, basin_config);
    let mut budget = budget_config.allocate(inputs.complexity);
    let mut policy = base_policy.clone();
    apply_basin_width(&basin, &mut budget, &mut policy, basin_config);
    if let Some(hint) = inputs.priority {
        apply_priority(hint, &mut policy, &mut budget, priority_config);
    }
    SetupPlan {
        estimate: estimate_convergence(inputs.complexity, &basin, &inputs.history, estimate_config),
        mode: select_convergence_mode(&basin, inputs.priority, inputs.parallel_samples),
        budget,
        policy,
        basin,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: usize) -> String {
        vec!["word"; n].join(" ")
    }

    #[test]
    fn tests_and_examples_widen_the_basin_and_a_terse_task_narrows_it() {
        let c = BasinConfig::default();
        let rich = BasinInputs {
            description: words(60),
            acceptance_tests: 4,
            examples: 2,
            invariants: 1,
            ..Default::default()
        };
        let b = estimate_basin_width(&rich, &c);
        assert!((b.score - 0.85).abs() < 1e-9);
        assert_eq!(b.classification, BasinClassification::Wide);

        let terse = BasinInputs { description: words(5), ..Default::default() };
        let b = estimate_basin_width(&terse, &c);
        assert!((b.score - 0.35).abs() < 1e-9);
        assert_eq!(b.classification, BasinClassification::Narrow);
    }

    #[test]
    fn history_is_blended_into_the_basin_score() {
        let inputs =
            BasinInputs { description: words(60), historical_convergence_rate: Some(1.0), ..Default::default() };
        // 0.6 · 1.0 + 0.4 · 0.5 = 0.8.
        assert!((estimate_basin_width(&inputs, &BasinConfig::default()).score - 0.8).abs() < 1e-9);
    }

    #[test]
    fn a_narrow_basin_gets_more_budget_and_more_exploration() {
        let c = BasinConfig::default();
        let mut budget = BudgetConfig::default().allocate(Complexity::Moderate);
        let mut policy = ConvergencePolicy::default();
        let narrow = BasinWidth { score: 0.2, classification: BasinClassification::Narrow };
        apply_basin_width(&narrow, &mut budget, &mut policy, &c);
        assert_eq!((budget.max_iterations, budget.max_tokens), (12, 520_000));
        assert_eq!(policy.exploration_weight, 0.6);
        assert!(policy.generate_acceptance_tests);

        let mut budget = BudgetConfig::default().allocate(Complexity::Moderate);
        let wide = BasinWidth { score: 0.9, classification: BasinClassification::Wide };
        apply_basin_width(&wide, &mut budget, &mut policy, &c);
        assert_eq!(budget.max_iterations, 6);
        assert_eq!(policy.exploration_weight, 0.2);
    }

    #[test]
    fn without_history_the_estimate_divides_the_base_by_the_basin_score() {
        let basin = BasinWidth { score: 0.5, classification: BasinClassification::Moderate };
        let e = estimate_convergence(Complexity::Simple, &basin, &[], &EstimateConfig::default());
        assert_eq!(e.expected_iterations, 8.0);
        assert_eq!(e.p95_iterations, 15);
        assert_eq!(e.expected_tokens, 240_000);
        assert_eq!(e.convergence_probability, 0.5);
    }

    #[test]
    fn with_enough_history_the_estimate_is_empirical() {
        let basin = BasinWidth { score: 0.5, classification: BasinClassification::Moderate };
        let history: Vec<PastTrajectory> =
            (1..=10).map(|i| PastTrajectory { iterations: i, converged: i <= 7, tokens: 10_000 * i as u64 }).collect();
        let e = estimate_convergence(Complexity::Simple, &basin, &history, &EstimateConfig::default());
        assert_eq!(e.expected_iterations, 5.5);
        assert_eq!(e.p95_iterations, 10);
        assert!((e.convergence_probability - 0.7).abs() < 1e-9);
        assert_eq!(e.expected_tokens, 55_000);
    }

    #[test]
    fn narrow_basins_sample_in_parallel_unless_cheap() {
        let narrow = BasinWidth { score: 0.2, classification: BasinClassification::Narrow };
        assert_eq!(select_convergence_mode(&narrow, None, None), ConvergenceMode::Parallel { initial_samples: 2 });
        assert_eq!(
            select_convergence_mode(&narrow, Some(PriorityHint::Thorough), None),
            ConvergenceMode::Parallel { initial_samples: 3 }
        );
        assert_eq!(select_convergence_mode(&narrow, Some(PriorityHint::Cheap), None), ConvergenceMode::Sequential);
        let wide = BasinWidth { score: 0.9, classification: BasinClassification::Wide };
        assert_eq!(select_convergence_mode(&wide, None, Some(4)), ConvergenceMode::Parallel { initial_samples: 4 });
    }

    #[test]
    fn setup_applies_the_priority_hint_after_the_basin_width() {
        let inputs = SetupInputs {
            complexity: Complexity::Moderate,
            basin: BasinInputs { description: words(5), ..Default::default() },
            priority: Some(PriorityHint::Fast),
            parallel_samples: None,
            history: vec![],
        };
        let plan = plan_setup(
            &inputs,
            &ConvergencePolicy::default(),
            &BudgetConfig::default(),
            &BasinConfig::default(),
            &PriorityConfig::default(),
            &EstimateConfig::default(),
        );
        // Narrow: 8 → 12 iterations, then fast caps at 5 and sets exploration 0.1.
        assert_eq!(plan.budget.max_iterations, 5);
        assert_eq!(plan.policy.exploration_weight, 0.1);
        assert_eq!(plan.mode, ConvergenceMode::Parallel { initial_samples: 2 });
    }
}
