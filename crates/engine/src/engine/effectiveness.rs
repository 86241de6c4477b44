//! Strategy effectiveness (seed 002 §4.5): exploitation strategies have a
//! shelf life. Repeating one strategy usually yields less each time, roughly
//! exponentially, so the engine fits `delta(t) ≈ e₀·e^(−λt)` to the deltas
//! of the current streak and rotates away once the projected gain drops
//! below a useful minimum — the number of uses `t_θ = ln(e₀/θ)/λ` has been
//! reached. When no decay curve fits, three uses with diminishing returns
//! are enough.
//!
//! The per-strategy summary ([`effectiveness`]) is for people and prompts:
//! what each strategy cost and achieved in this trajectory.

use serde::{Deserialize, Serialize};

use super::model::StrategyEntry;
use super::strategy::StrategyKind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RotationConfig {
    /// θ: the smallest projected delta still worth another use (the seed's
    /// `decay_rotation_threshold`, 0.05).
    pub minimum_useful_progress: f64,
    /// Uses after which diminishing returns rotate when no curve fits.
    pub fallback_uses: u32,
}

impl Default for RotationConfig {
    fn default() -> Self {
        RotationConfig { minimum_useful_progress: 0.05, fallback_uses: 3 }
    }
}

/// Fits `d(t) = e₀·e^(−λt)` (t = 0, 1, …) by least squares on `ln d`.
/// Needs at least three deltas, all positive, and a decaying fit (λ > 0).
pub fn fit_decay_curve(deltas: &[f64]) -> Option<(f64, f64)> {
    if deltas.len() < 3 || deltas.iter().any(|d| !(d.is_finite() && *d > 0.0)) {
        return None;
    }
    let n = deltas.len() as f64;
    let ts: Vec<f64> = (0..deltas.len()).map(|t| t as f64).collect();
    let ys: Vec<f64> = deltas.iter().map(|d| d.ln()).collect();
    let (mt, my) = (ts.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxx: f64 = ts.iter().map(|t| (t - mt).powi(2)).sum();
    let sxy: f64 = ts.iter().zip(&ys).map(|(t, y)| (t - mt) * (y - my)).sum();
    let slope = sxy / sxx;
    let lambda = -slope;
    let e0 = (my - slope * mt).exp();
    (lambda > 0.0 && lambda.is_finite() && e0.is_finite()).then_some((e0, lambda))
}

/// Each delta no larger than the one before, and the last below the first.
pub fn is_diminishing(deltas: &[f64]) -> bool {
    deltas.len() >= 2 && deltas.windows(2).all(|w| w[1] <= w[0]) && deltas[deltas.len() - 1] < deltas[0]
}

pub fn should_rotate(consecutive_uses: u32, streak_deltas: &[f64], c: &RotationConfig) -> bool {
    match fit_decay_curve(streak_deltas) {
        Some((e0, lambda)) => {
            let t_theta = (e0 / c.minimum_useful_progress).ln() / lambda;
            consecutive_uses as f64 >= t_theta
        }
        None => consecutive_uses >= c.fallback_uses && is_diminishing(streak_deltas),
    }
}

/// The strategy of the latest entry with how many times in a row it ran
/// (chosen by the bandit, not forced) and the deltas of that streak.
pub fn current_streak(log: &[StrategyEntry]) -> Option<(StrategyKind, u32, Vec<f64>)> {
    let last = log.last()?;
    if last.was_forced {
        return None;
    }
    let streak: Vec<&StrategyEntry> =
        log.iter().rev().take_while(|e| e.strategy_kind == last.strategy_kind && !e.was_forced).collect();
    let deltas: Vec<f64> = streak.iter().rev().filter_map(|e| e.convergence_delta_achieved).collect();
    Some((last.strategy_kind, streak.len() as u32, deltas))
}

/// What one strategy did in a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyEffectiveness {
    pub strategy: StrategyKind,
    pub uses: u32,
    pub forced_uses: u32,
    /// Mean delta over the uses that have one.
    pub mean_delta: Option<f64>,
    pub total_tokens: u64,
    /// Summed delta per 10,000 tokens spent.
    pub delta_per_10k_tokens: Option<f64>,
}

/// One summary per strategy used, in order of first use.
pub fn effectiveness(log: &[StrategyEntry]) -> Vec<StrategyEffectiveness> {
    let mut order: Vec<StrategyKind> = Vec::new();
    for e in log {
        if !order.contains(&e.strategy_kind) {
            order.push(e.strategy_kind);
        }
    }
    order
        .into_iter()
        .map(|s| {
            let entries: Vec<&StrategyEntry> = log.iter().filter(|e| e.strategy_kind == s).collect();
            let deltas: Vec<f64> = entries.iter().filter_map(|e| e.convergence_delta_achieved).collect();
            let total_tokens: u64 = entries.iter().map(|e| e.tokens_used).sum();
            let sum: f64 = deltas.iter().sum();
            StrategyEffectiveness {
                strategy: s,
                uses: entries.len() as u32,
                forced_uses: entries.iter().filter(|e| e.was_forced).count() as u32,
                mean_delta: (!deltas.is_empty()).then(|| sum / deltas.len() as f64),
                total_tokens,
                delta_per_10k_tokens: (total_tokens > 0 && !deltas.is_empty())
                    .then(|| sum / (total_tokens as f64 / 10_000.0)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::attractor::AttractorKind;

    #[test]
    fn a_clean_exponential_decay_is_recovered() {
        let deltas: Vec<f64> = (0..4).map(|t| 0.4 * (-0.7 * t as f64).exp()).collect();
        let (e0, lambda) = fit_decay_curve(&deltas).unwrap();
        assert!((e0 - 0.4).abs() < 1e-9 && (lambda - 0.7).abs() < 1e-9);
    }

    #[test]
    fn rotation_happens_once_the_projected_gain_falls_below_the_minimum() {
        let c = RotationConfig::default();
        // e₀ = 0.4, λ = 0.7: t_θ = ln(8)/0.7 ≈ 2.97 uses.
        let deltas: Vec<f64> = (0..3).map(|t| 0.4 * (-0.7 * t as f64).exp()).collect();
        assert!(should_rotate(3, &deltas, &c));
        assert!(!should_rotate(2, &deltas, &c));
        // A strategy still gaining steadily is kept.
        assert!(!should_rotate(3, &[0.1, 0.1, 0.12], &c));
    }

    #[test]
    fn without_a_fit_three_diminishing_uses_rotate() {
        let c = RotationConfig::default();
        assert!(should_rotate(3, &[0.0, -0.01, -0.02], &c));
        assert!(!should_rotate(2, &[0.0, -0.01], &c));
        assert!(!should_rotate(3, &[0.0, 0.02, -0.01], &c));
    }

    fn entry(s: StrategyKind, delta: Option<f64>, forced: bool, tokens: u64) -> StrategyEntry {
        StrategyEntry {
            strategy_kind: s,
            observation_sequence: 0,
            convergence_delta_achieved: delta,
            tokens_used: tokens,
            was_forced: forced,
            attractor_at_selection: AttractorKind::Indeterminate,
        }
    }

    #[test]
    fn the_streak_is_the_run_of_the_latest_strategy() {
        use StrategyKind::*;
        let log = vec![
            entry(FocusedRepair, Some(0.3), false, 0),
            entry(Reframe, Some(0.2), false, 0),
            entry(FocusedRepair, Some(0.1), false, 0),
            entry(FocusedRepair, Some(0.05), false, 0),
        ];
        assert_eq!(current_streak(&log), Some((FocusedRepair, 2, vec![0.1, 0.05])));
    }

    #[test]
    fn effectiveness_sums_up_each_strategy() {
        use StrategyKind::*;
        let log = vec![
            entry(FocusedRepair, None, false, 10_000),
            entry(FocusedRepair, Some(0.2), false, 10_000),
            entry(FreshStart, Some(-0.1), true, 30_000),
        ];
        let e = effectiveness(&log);
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].uses, e[0].mean_delta, e[0].delta_per_10k_tokens), (2, Some(0.2), Some(0.1)));
        assert_eq!((e[1].strategy, e[1].forced_uses), (FreshStart, 1));
    }
}
