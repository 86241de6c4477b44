//! The convergence budget: a resource envelope in tokens, wall time and
//! iterations (iterations are a safety cap, not the main limit), sized by the
//! task's complexity and extensible when a trajectory is visibly converging.

use serde::{Deserialize, Serialize};

use super::strategy::StrategyKind;

/// How hard a task is expected to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Complexity {
    Trivial,
    Simple,
    Moderate,
    Complex,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConvergenceBudget {
    pub max_tokens: u64,
    pub max_wall_time_ms: u64,
    pub max_iterations: u32,
    pub tokens_used: u64,
    pub wall_time_used_ms: u64,
    pub iterations_used: u32,
    pub extensions_requested: u32,
    pub extensions_granted: u32,
    pub max_extensions: u32,
}

/// `1 − used/max`, where a zero maximum counts as spent.
fn left(used: f64, max: f64) -> f64 {
    if max <= 0.0 { 0.0 } else { 1.0 - used / max }
}

impl ConvergenceBudget {
    /// The scarcest dimension's remaining share (negative when overrun).
    pub fn remaining_fraction(&self) -> f64 {
        left(self.tokens_used as f64, self.max_tokens as f64)
            .min(left(self.wall_time_used_ms as f64, self.max_wall_time_ms as f64))
            .min(left(self.iterations_used as f64, self.max_iterations as f64))
    }

    pub fn has_remaining(&self) -> bool {
        self.remaining_fraction() > 0.0
    }

    /// Room for one more execution of `strategy` at its estimated cost.
    pub fn allows_strategy_cost(&self, strategy: StrategyKind) -> bool {
        self.tokens_used.saturating_add(strategy.estimated_cost()) <= self.max_tokens
            && self.iterations_used < self.max_iterations
    }

    pub fn consume(&mut self, tokens: u64, wall_time_ms: u64) {
        self.tokens_used = self.tokens_used.saturating_add(tokens);
        self.wall_time_used_ms = self.wall_time_used_ms.saturating_add(wall_time_ms);
        self.iterations_used = self.iterations_used.saturating_add(1);
    }

    pub fn extend(&mut self, extension: &BudgetExtension) {
        self.extensions_granted += 1;
        self.max_tokens = self.max_tokens.saturating_add(extension.additional_tokens);
        self.max_iterations = self.max_iterations.saturating_add(extension.additional_iterations);
        self.max_wall_time_ms = self.max_wall_time_ms.saturating_add(extension.additional_wall_time_ms);
    }

    /// What is left of this budget, as a fresh envelope: maxima are the
    /// unspent amounts, nothing used yet, the extensions still allowed kept.
    /// A reactive decomposition splits this, not the original budget.
    pub fn remaining(&self) -> ConvergenceBudget {
        ConvergenceBudget {
            max_tokens: self.max_tokens.saturating_sub(self.tokens_used),
            max_wall_time_ms: self.max_wall_time_ms.saturating_sub(self.wall_time_used_ms),
            max_iterations: self.max_iterations.saturating_sub(self.iterations_used),
            max_extensions: self.max_extensions.saturating_sub(self.extensions_requested),
            ..Default::default()
        }
    }

    /// This budget's maxima scaled by `factor` (rounded down, so shares
    /// never add up to more than the whole), nothing used yet.
    pub fn scale(&self, factor: f64) -> ConvergenceBudget {
        let f = if factor.is_finite() { factor.max(0.0) } else { 0.0 };
        ConvergenceBudget {
            max_tokens: (self.max_tokens as f64 * f).floor() as u64,
            max_wall_time_ms: (self.max_wall_time_ms as f64 * f).floor() as u64,
            max_iterations: (f64::from(self.max_iterations) * f).floor() as u32,
            max_extensions: self.max_extensions,
            ..Default::default()
        }
    }
}

/// More budget for a trajectory that is converging when it runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetExtension {
    pub additional_tokens: u64,
    pub additional_iterations: u32,
    pub additional_wall_time_ms: u64,
}

/// One row of the allocation table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetRow {
    pub tokens: u64,
    pub iterations: u32,
    pub wall_time_minutes: u64,
    pub max_extensions: u32,
}

/// The base budget per complexity (seed 002 §5.1) and how extensions are sized (§6.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BudgetConfig {
    pub trivial: BudgetRow,
    pub simple: BudgetRow,
    pub moderate: BudgetRow,
    pub complex: BudgetRow,
    /// An extension adds this share of the current token maximum.
    pub extension_token_fraction: f64,
    pub extension_iterations: u32,
    /// Beyond the seed (which extends tokens and iterations only): an
    /// extension also adds this share of the wall-time maximum, else one
    /// granted after the clock ran out would buy nothing.
    pub extension_wall_time_fraction: f64,
    /// Extensions are considered once the remaining share drops below this.
    pub extension_trigger_fraction: f64,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        let row = |tokens, iterations, wall_time_minutes, max_extensions| BudgetRow {
            tokens,
            iterations,
            wall_time_minutes,
            max_extensions,
        };
        BudgetConfig {
            trivial: row(50_000, 3, 15, 1),
            simple: row(150_000, 5, 30, 1),
            moderate: row(400_000, 8, 60, 1),
            complex: row(1_000_000, 12, 120, 3),
            extension_token_fraction: 0.25,
            extension_iterations: 3,
            extension_wall_time_fraction: 0.25,
            extension_trigger_fraction: 0.15,
        }
    }
}

impl BudgetConfig {
    pub fn row(&self, complexity: Complexity) -> BudgetRow {
        match complexity {
            Complexity::Trivial => self.trivial,
            Complexity::Simple => self.simple,
            Complexity::Moderate => self.moderate,
            Complexity::Complex => self.complex,
        }
    }

    /// The base budget for a task of this complexity.
    pub fn allocate(&self, complexity: Complexity) -> ConvergenceBudget {
        let r = self.row(complexity);
        ConvergenceBudget {
            max_tokens: r.tokens,
            max_iterations: r.iterations,
            max_wall_time_ms: r.wall_time_minutes.saturating_mul(60_000),
            max_extensions: r.max_extensions,
            ..Default::default()
        }
    }

    /// The extension to offer a budget now.
    pub fn extension_for(&self, budget: &ConvergenceBudget) -> BudgetExtension {
        BudgetExtension {
            additional_tokens: (budget.max_tokens as f64 * self.extension_token_fraction) as u64,
            additional_iterations: self.extension_iterations,
            additional_wall_time_ms: (budget.max_wall_time_ms as f64 * self.extension_wall_time_fraction) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complexity_sizes_the_budget_and_complex_tasks_get_more_extensions() {
        let c = BudgetConfig::default();
        let b = c.allocate(Complexity::Moderate);
        assert_eq!((b.max_tokens, b.max_iterations, b.max_wall_time_ms, b.max_extensions), (400_000, 8, 3_600_000, 1));
        assert_eq!(c.allocate(Complexity::Complex).max_extensions, 3);
    }

    #[test]
    fn the_scarcest_dimension_decides_what_remains() {
        let mut b = BudgetConfig::default().allocate(Complexity::Trivial);
        b.consume(10_000, 60_000);
        // Tokens 0.8 left, time 14/15 left, iterations 2/3 left.
        assert!((b.remaining_fraction() - 2.0 / 3.0).abs() < 1e-9);
        b.consume(0, 0);
        b.consume(0, 0);
        assert!(!b.has_remaining());
        assert!(!b.allows_strategy_cost(StrategyKind::FocusedRepair));
    }

    #[test]
    fn a_zero_budget_is_spent_not_a_division_by_zero() {
        let b = ConvergenceBudget::default();
        assert_eq!(b.remaining_fraction(), 0.0);
        assert!(!b.has_remaining());
    }

    #[test]
    fn an_extension_raises_every_limit_and_counts_itself() {
        let c = BudgetConfig::default();
        let mut b = c.allocate(Complexity::Simple);
        let e = c.extension_for(&b);
        assert_eq!((e.additional_tokens, e.additional_iterations), (37_500, 3));
        b.extend(&e);
        assert_eq!((b.max_tokens, b.max_iterations, b.extensions_granted), (187_500, 8, 1));
        assert_eq!(b.max_wall_time_ms, 30 * 60_000 + 30 * 60_000 / 4);
    }
}
