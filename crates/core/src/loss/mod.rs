//! The scalar loss of one run (seed 004 §6).
//!
//! ```text
//! L = w_e·(1 − eval_score) + w_c·(1 − critique_score)
//!   + w_g·min(1, gate_rejection_count / max_rejections)
//!   + w_b·max(0, 1 − budget_remaining_pct / 100)
//!   + w_s·status_penalty            (complete 0, partial 0.5, failed 1, aborted 1)
//! ```
//!
//! Each component is clamped into [0, 1] on its own, and the loss is defined
//! for every run — even one that crashed before it wrote anything. A signal
//! a finished run did not report counts as a neutral 0.5; on a run that
//! failed or was aborted it counts as the worst, 1: a crash tells nothing
//! good about the artifacts, and with neutral scores it would cost less
//! (0.55) than an honest poor run (eval 0.2: 0.77), so an update that makes
//! tasks crash could lower the mean loss and be kept.

pub mod paired;

use serde::{Deserialize, Serialize};

/// The value a component takes when a finished run did not report its signal.
pub const NEUTRAL: f64 = 0.5;

/// The value a component takes when a failed or aborted run did not report
/// its signal: the worst.
pub const UNREPORTED_BY_A_FAILED_RUN: f64 = 1.0;

/// How many gate rejections saturate the gate component when a task does not
/// say otherwise (the seed leaves `max_rejections` open).
pub const DEFAULT_MAX_REJECTIONS: u32 = 5;

/// The weights of the five components. The defaults sum to 1, so L ∈ [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LossWeights {
    pub eval: f64,
    pub critique: f64,
    pub gate_rejections: f64,
    pub budget: f64,
    pub status: f64,
}

impl Default for LossWeights {
    fn default() -> Self {
        Self { eval: 0.4, critique: 0.3, gate_rejections: 0.15, budget: 0.05, status: 0.1 }
    }
}

impl LossWeights {
    pub fn sum(&self) -> f64 {
        self.eval + self.critique + self.gate_rejections + self.budget + self.status
    }
}

/// How a run ended, as the run reports it (or as Attractor judged it when the
/// run could not report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Complete,
    Partial,
    Failed,
    Aborted,
}

impl RunStatus {
    /// The status component of the loss.
    pub fn penalty(self) -> f64 {
        match self {
            RunStatus::Complete => 0.0,
            RunStatus::Partial => 0.5,
            RunStatus::Failed | RunStatus::Aborted => 1.0,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Complete => "complete",
            RunStatus::Partial => "partial",
            RunStatus::Failed => "failed",
            RunStatus::Aborted => "aborted",
        }
    }
}

/// The signals a run reports; any of them may be missing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LossSignals {
    pub eval_score: Option<f64>,
    pub critique_score: Option<f64>,
    pub gate_rejection_count: Option<f64>,
    pub budget_remaining_pct: Option<f64>,
    pub status: Option<RunStatus>,
}

/// The loss of one run and how it was made: stored with the run so every
/// number on a chart can be traced back to its parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LossBreakdown {
    pub total: f64,
    pub eval_component: f64,
    pub critique_component: f64,
    pub gate_component: f64,
    pub budget_component: f64,
    pub status_component: f64,
    pub weights: LossWeights,
    pub max_rejections: u32,
    /// Which signals were missing and took the value for a missing signal
    /// (neutral, or the worst on a failed run).
    pub neutral: Vec<String>,
}

fn clamp01(x: f64) -> f64 {
    // NaN from a careless harness must not poison the mean: treat it as worst.
    if x.is_nan() { 1.0 } else { x.clamp(0.0, 1.0) }
}

/// Computes the loss of one run from its signals.
pub fn compute(signals: &LossSignals, weights: &LossWeights, max_rejections: u32) -> LossBreakdown {
    let mut neutral = Vec::new();
    let missing = match signals.status {
        Some(RunStatus::Failed | RunStatus::Aborted) => UNREPORTED_BY_A_FAILED_RUN,
        _ => NEUTRAL,
    };
    let mut component = |name: &str, value: Option<f64>, f: &dyn Fn(f64) -> f64| match value {
        Some(v) => clamp01(f(v)),
        None => {
            neutral.push(name.to_string());
            missing
        }
    };
    let eval_component = component("eval_score", signals.eval_score, &|s| 1.0 - s);
    let critique_component = component("critique_score", signals.critique_score, &|s| 1.0 - s);
    let max_rej = f64::from(max_rejections.max(1));
    let gate_component = component("gate_rejection_count", signals.gate_rejection_count, &|n| (n / max_rej).min(1.0));
    let budget_component =
        component("budget_remaining_pct", signals.budget_remaining_pct, &|p| (1.0 - p / 100.0).max(0.0));
    let status_component = component("status", signals.status.map(RunStatus::penalty), &|p| p);
    let total = weights.eval * eval_component
        + weights.critique * critique_component
        + weights.gate_rejections * gate_component
        + weights.budget * budget_component
        + weights.status * status_component;
    LossBreakdown {
        total,
        eval_component,
        critique_component,
        gate_component,
        budget_component,
        status_component,
        weights: *weights,
        max_rejections,
        neutral,
    }
}

/// The mean of a set of losses; `None` when there are none.
pub fn mean(losses: &[f64]) -> Option<f64> {
    if losses.is_empty() { None } else { Some(losses.iter().sum::<f64>() / losses.len() as f64) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn default_weights_sum_to_one_and_match_the_seed() {
        let w = LossWeights::default();
        assert!(close(w.sum(), 1.0));
        assert_eq!((w.eval, w.critique, w.gate_rejections, w.budget, w.status), (0.4, 0.3, 0.15, 0.05, 0.1));
    }

    #[test]
    fn a_perfect_complete_run_has_zero_loss() {
        let s = LossSignals {
            eval_score: Some(1.0),
            critique_score: Some(1.0),
            gate_rejection_count: Some(0.0),
            budget_remaining_pct: Some(100.0),
            status: Some(RunStatus::Complete),
        };
        let b = compute(&s, &LossWeights::default(), 5);
        assert!(close(b.total, 0.0));
        assert!(b.neutral.is_empty());
    }

    #[test]
    fn worked_example_with_every_component() {
        // eval 0.7 → 0.3, critique 0.6 → 0.4, 2 of 4 rejections → 0.5,
        // 40 % budget left → 0.6, partial → 0.5.
        let s = LossSignals {
            eval_score: Some(0.7),
            critique_score: Some(0.6),
            gate_rejection_count: Some(2.0),
            budget_remaining_pct: Some(40.0),
            status: Some(RunStatus::Partial),
        };
        let b = compute(&s, &LossWeights::default(), 4);
        let expected = 0.4 * 0.3 + 0.3 * 0.4 + 0.15 * 0.5 + 0.05 * 0.6 + 0.1 * 0.5;
        assert!(close(b.total, expected), "{} vs {}", b.total, expected);
        assert!(close(b.total, 0.395));
    }

    #[test]
    fn missing_signals_are_neutral() {
        let b = compute(&LossSignals::default(), &LossWeights::default(), 5);
        assert!(close(b.total, 0.5));
        assert_eq!(b.neutral.len(), 5);
    }

    #[test]
    fn components_are_clamped_independently() {
        let s = LossSignals {
            eval_score: Some(1.7),             // 1 − 1.7 < 0 → 0
            critique_score: Some(-3.0),        // 1 + 3 > 1 → 1
            gate_rejection_count: Some(50.0),  // saturates at 1
            budget_remaining_pct: Some(250.0), // max(0, negative) → 0
            status: Some(RunStatus::Aborted),  // 1
        };
        let b = compute(&s, &LossWeights::default(), 5);
        assert_eq!(b.eval_component, 0.0);
        assert_eq!(b.critique_component, 1.0);
        assert_eq!(b.gate_component, 1.0);
        assert_eq!(b.budget_component, 0.0);
        assert_eq!(b.status_component, 1.0);
        assert!(close(b.total, 0.3 + 0.15 + 0.1));
    }

    #[test]
    fn status_penalties_follow_the_seed() {
        assert_eq!(RunStatus::Complete.penalty(), 0.0);
        assert_eq!(RunStatus::Partial.penalty(), 0.5);
        assert_eq!(RunStatus::Failed.penalty(), 1.0);
        assert_eq!(RunStatus::Aborted.penalty(), 1.0);
    }

    #[test]
    fn per_task_weight_overrides_change_the_total() {
        // The seed's example override (0.5, 0.3, 0.15, 0.02, 0.03) on a failed run
        // with eval 0.2 and nothing else reported (the worst for what it left out).
        let w = LossWeights { eval: 0.5, critique: 0.3, gate_rejections: 0.15, budget: 0.02, status: 0.03 };
        let s = LossSignals { eval_score: Some(0.2), status: Some(RunStatus::Failed), ..Default::default() };
        let b = compute(&s, &w, 5);
        let expected = 0.5 * 0.8 + 0.3 * 1.0 + 0.15 * 1.0 + 0.02 * 1.0 + 0.03 * 1.0;
        assert!(close(b.total, expected));
    }

    #[test]
    fn a_run_that_failed_without_reporting_costs_more_than_any_run_that_finished() {
        let crashed = compute(
            &LossSignals { status: Some(RunStatus::Failed), ..LossSignals::default() },
            &LossWeights::default(),
            5,
        );
        assert!(close(crashed.total, 1.0), "{crashed:?}");
        assert_eq!(crashed.neutral.len(), 4, "status was known, the four scores were not");
        // The worst honest run that finished: everything reported, all bad, partial.
        let poor = LossSignals {
            eval_score: Some(0.0),
            critique_score: Some(0.0),
            gate_rejection_count: Some(5.0),
            budget_remaining_pct: Some(0.0),
            status: Some(RunStatus::Partial),
        };
        assert!(compute(&poor, &LossWeights::default(), 5).total < crashed.total);
        // What a failed run did report still counts.
        let said = LossSignals { eval_score: Some(0.9), status: Some(RunStatus::Aborted), ..LossSignals::default() };
        let b = compute(&said, &LossWeights::default(), 5);
        assert!(close(b.eval_component, 0.1), "{b:?}");
        assert!(close(b.critique_component, 1.0), "{b:?}");
    }

    #[test]
    fn nan_scores_count_as_worst_not_as_poison() {
        let s = LossSignals { eval_score: Some(f64::NAN), ..Default::default() };
        let b = compute(&s, &LossWeights::default(), 5);
        assert_eq!(b.eval_component, 1.0);
        assert!(b.total.is_finite());
    }

    #[test]
    fn epoch_means_of_the_seed_trace() {
        // Seed 004 §1.4: epoch 1 [0.40, 0.53, 0.31] → 0.413; epoch 2
        // [0.045, 0.62, 0.365] → 0.343, which is no regression.
        let m1 = mean(&[0.40, 0.53, 0.31]).unwrap();
        let m2 = mean(&[0.045, 0.62, 0.365]).unwrap();
        assert!((m1 - 0.41333).abs() < 1e-4);
        assert!((m2 - 0.34333).abs() < 1e-4);
        assert!(m2 < m1);
        // §13: the fact-card suite's per-task losses give a mean of 0.4133 and 0.3435.
        assert!((mean(&[0.4038, 0.5250, 0.3110]).unwrap() - 0.4133).abs() < 1e-4);
        assert!((mean(&[0.0454, 0.6200, 0.3650]).unwrap() - 0.3435).abs() < 1e-4);
        assert_eq!(mean(&[]), None);
    }
}
