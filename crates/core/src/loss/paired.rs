//! Two measurements of the same tasks compared task by task.
//!
//! Pairing the same task before and after a change removes how hard each
//! task is from the comparison, so a handful of tasks can show an effect
//! their means would hide in the spread. The evidence states how many pairs
//! got better, worse or stayed, the mean gain with a 95% bootstrap interval,
//! and an exact sign test's p-value: what a decision about an update shows
//! people (the epoch's events, the proposals table, the app).

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What the two sides looked like task by task: the evidence a decision
/// states (in the epoch's events, the proposals table and the app).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct PairedEvidence {
    /// Comparisons made: a task (or a task's evaluation) measured on both sides.
    pub pairs: u32,
    /// Pairs whose loss went down.
    pub better: u32,
    /// Pairs whose loss went up.
    pub worse: u32,
    /// Pairs whose loss did not move.
    pub tied: u32,
    /// The mean of the pairs' loss reductions (positive: the new side is better).
    pub mean_gain: f64,
    /// The 95% bootstrap interval of `mean_gain` (equal to it with one pair).
    pub low: f64,
    pub high: f64,
    /// The two-sided sign test's p-value over the untied pairs: how likely
    /// this many or more lopsided wins are if the change did nothing.
    pub sign_p: f64,
}

/// Losses below this apart are the same loss (floating-point sums differ
/// in the last bits).
const TIE: f64 = 1e-12;

/// Resamples of the bootstrap: enough for a stable 2.5% tail, cheap at
/// suite sizes (thousands of pairs at most).
const RESAMPLES: usize = 2000;

/// The bootstrap's draws are fixed, so a decision is the same however often
/// (and on whichever worker) it is made.
const BOOTSTRAP_SEED: u64 = 0x0a77_4ac7_0e5e_ed00;

impl PairedEvidence {
    /// The evidence of the pairs' loss reductions (`before − after`);
    /// `None` without a pair.
    pub fn of(gains: &[f64]) -> Option<PairedEvidence> {
        let gains: Vec<f64> = gains.iter().copied().filter(|g| g.is_finite()).collect();
        let mean_gain = super::mean(&gains)?;
        let better = gains.iter().filter(|g| **g > TIE).count();
        let worse = gains.iter().filter(|g| **g < -TIE).count();
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let (low, high) = bootstrap_interval(&gains, mean_gain);
        Some(PairedEvidence {
            pairs: count(gains.len()),
            better: count(better),
            worse: count(worse),
            tied: count(gains.len() - better - worse),
            mean_gain,
            low,
            high,
            sign_p: sign_test(better, worse),
        })
    }

    /// The pairs of two measurements by task: each task both sides ran, its
    /// evaluations paired in order (the first before with the first after…),
    /// so repeats add pairs rather than being averaged away.
    pub fn of_tasks(before: &BTreeMap<String, Vec<f64>>, after: &BTreeMap<String, Vec<f64>>) -> Option<PairedEvidence> {
        let mut gains = Vec::new();
        for (task, b) in before {
            if let Some(a) = after.get(task) {
                gains.extend(b.iter().zip(a).map(|(b, a)| b - a));
            }
        }
        PairedEvidence::of(&gains)
    }

    /// One line for people: "7 of 12 tasks better, 2 worse; gain +0.0500
    /// (95% interval +0.0100 … +0.0900), sign test p = 0.18".
    pub fn summary(&self) -> String {
        let unit = if self.pairs == 1 { "pair" } else { "pairs" };
        let mut s = format!(
            "{} of {} {unit} better, {} worse; gain {:+.4}",
            self.better, self.pairs, self.worse, self.mean_gain
        );
        if self.pairs > 1 {
            s.push_str(&format!(" (95% interval {:+.4} … {:+.4})", self.low, self.high));
        }
        if self.better + self.worse > 0 {
            s.push_str(&format!(", sign test p = {:.2}", self.sign_p));
        }
        s
    }
}

/// The 2.5% and 97.5% percentiles of the mean over resamples with
/// replacement (`mean` itself for a single pair).
fn bootstrap_interval(gains: &[f64], mean: f64) -> (f64, f64) {
    if gains.len() < 2 {
        return (mean, mean);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(BOOTSTRAP_SEED);
    let mut means: Vec<f64> = (0..RESAMPLES)
        .map(|_| (0..gains.len()).map(|_| gains[rng.random_range(0..gains.len())]).sum::<f64>() / gains.len() as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
    (at(0.025), at(0.975))
}

/// The exact two-sided sign test: P(a split at least this lopsided) when
/// each untied pair is equally likely to go either way.
fn sign_test(better: usize, worse: usize) -> f64 {
    let n = better + worse;
    if n == 0 {
        return 1.0;
    }
    let k = better.min(worse);
    // Σ_{i ≤ k} C(n, i) / 2^n, in logarithms so large n does not overflow.
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_c = 0.0f64; // ln C(n, 0)
    let mut tail = 0.0f64;
    for i in 0..=k {
        if i > 0 {
            ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_c + ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn the_sign_test_matches_the_binomial_tails() {
        // 10 wins, 0 losses: 2 · 2^-10.
        assert!((sign_test(10, 0) - 2.0 / 1024.0).abs() < 1e-12);
        // 8 of 10: 2 · (1 + 10 + 45) / 1024 = 0.109375.
        assert!((sign_test(8, 2) - 0.109_375).abs() < 1e-12);
        // An even split is no evidence at all.
        assert_eq!(sign_test(5, 5), 1.0);
        assert_eq!(sign_test(0, 0), 1.0);
        // Large n stays finite and small.
        let p = sign_test(900, 100);
        assert!(p.is_finite() && p < 1e-100, "{p}");
    }

    #[test]
    fn evidence_counts_the_pairs_and_brackets_the_mean_gain() {
        let e = PairedEvidence::of(&[0.1, 0.2, 0.0, -0.05, 0.15, 0.1]).unwrap();
        assert_eq!((e.pairs, e.better, e.worse, e.tied), (6, 4, 1, 1));
        assert!((e.mean_gain - 0.5 / 6.0).abs() < 1e-12);
        assert!(e.low < e.mean_gain && e.mean_gain < e.high, "{e:?}");
        assert!(e.low >= -0.05 && e.high <= 0.2, "{e:?}");
        // Deterministic: the same pairs give the same interval.
        assert_eq!(PairedEvidence::of(&[0.1, 0.2, 0.0, -0.05, 0.15, 0.1]).unwrap(), e);
        assert!(PairedEvidence::of(&[]).is_none());
        assert!(PairedEvidence::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn tasks_pair_by_name_and_repeats_pair_in_order() {
        let before = BTreeMap::from([
            ("a".to_string(), vec![0.5, 0.7]),
            ("b".to_string(), vec![0.4]),
            ("gone".to_string(), vec![0.9]),
        ]);
        let after = BTreeMap::from([("a".to_string(), vec![0.4, 0.6, 0.1]), ("b".to_string(), vec![0.4])]);
        let e = PairedEvidence::of_tasks(&before, &after).unwrap();
        // a: two pairs (the third evaluation after has no partner), b: one.
        assert_eq!((e.pairs, e.better, e.worse, e.tied), (3, 2, 0, 1));
    }

    #[test]
    fn the_summary_states_counts_interval_and_p() {
        let e = PairedEvidence::of(&[0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]).unwrap();
        let s = e.summary();
        assert!(s.starts_with("8 of 8 pairs better, 0 worse; gain +0.1000"), "{s}");
        assert!(s.contains("95% interval +0.1000 … +0.1000") && s.contains("sign test p = 0.01"), "{s}");
        let one = PairedEvidence::of(&[0.0]).unwrap().summary();
        assert_eq!(one, "0 of 1 pair better, 0 worse; gain +0.0000");
    }
}
