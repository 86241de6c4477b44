//! Telling a gain from noise: the one rule the outer loop's decisions use —
//! whether an update stays or is rolled back, whether the tree search
//! commits a child.
//!
//! A mean loss that went down is not yet an improvement. Two things can
//! fake one: a harness that scores the same version differently from run to
//! run (repeats show it), and a change that helped a few tasks by luck while
//! hurting others (pairing shows it, [`PairedEvidence`]). On a suite whose
//! harness is deterministic (one evaluation per side) every difference is
//! real, so the mean decides and the paired evidence is stated beside it;
//! where evaluations repeat, a gain counts only when it exceeds the
//! evaluations' noise *and* its paired interval lies above 0.

use crate::loss::paired::PairedEvidence;

/// How a new mean loss compares with an old one, given the evaluations
/// behind each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gain {
    /// Lower by more than the noise.
    Better { gain: f64, noise: f64 },
    /// Lower, but by no more than the noise: not counted as an improvement.
    WithinNoise { gain: f64, noise: f64 },
    /// Equal or higher.
    NotBetter { gain: f64 },
}

impl Gain {
    /// The noise a lower loss was judged against (none when it was not lower).
    pub fn noise(self) -> Option<f64> {
        match self {
            Gain::Better { noise, .. } | Gain::WithinNoise { noise, .. } => Some(noise),
            Gain::NotBetter { .. } => None,
        }
    }
}

/// The rule on evaluation means alone: a gain (old mean − new mean) counts
/// only when it exceeds the noise — the larger standard error of the two
/// sets of evaluations, and at least `min_improvement`. With one evaluation
/// on each side the noise is `min_improvement`.
pub fn beyond_noise(old_mean: f64, old: &[f64], new_mean: f64, new: &[f64], min_improvement: f64) -> Gain {
    let noise = standard_error(new).max(standard_error(old)).max(min_improvement);
    let gain = old_mean - new_mean;
    if gain <= 0.0 || gain.is_nan() {
        Gain::NotBetter { gain }
    } else if gain <= noise {
        Gain::WithinNoise { gain, noise }
    } else {
        Gain::Better { gain, noise }
    }
}

/// The standard error of the mean of `xs` (0 for fewer than two).
pub fn standard_error(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (var / n).sqrt()
}

/// The decision's rule. `gain` judges the evaluation means as
/// [`beyond_noise`] does; where the evaluations repeat (`repeated`: the
/// harness was declared noisy) a gain must also have its paired interval
/// above 0 to count.
pub fn judge(gain: Gain, evidence: Option<&PairedEvidence>, repeated: bool) -> Gain {
    match (gain, evidence) {
        (Gain::Better { gain, .. }, Some(e)) if repeated && e.pairs > 1 && e.low <= 0.0 => {
            Gain::WithinNoise { gain, noise: gain - e.low }
        }
        (g, _) => g,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn the_mean_rule_counts_a_gain_only_beyond_the_larger_standard_error() {
        assert!(matches!(beyond_noise(0.5, &[0.5], 0.4, &[0.4], 1e-9), Gain::Better { .. }));
        assert!(matches!(beyond_noise(0.5, &[0.5], 0.5, &[0.5], 1e-9), Gain::NotBetter { .. }));
        assert!(matches!(beyond_noise(0.45, &[0.45], 0.4, &[0.3, 0.5, 0.4], 1e-9), Gain::WithinNoise { .. }));
        assert!(matches!(beyond_noise(0.45, &[0.35, 0.55], 0.4, &[0.4], 1e-9), Gain::WithinNoise { .. }));
        assert!(matches!(beyond_noise(0.5, &[0.5], 0.49, &[0.49], 0.02), Gain::WithinNoise { .. }));
    }

    #[test]
    fn a_repeated_harness_needs_the_paired_interval_above_zero() {
        let better = Gain::Better { gain: 0.05, noise: 0.01 };
        // Half the tasks better, half worse: the interval straddles 0.
        let mixed = PairedEvidence::of(&[0.3, -0.2, 0.25, -0.2, 0.1, 0.05]).unwrap();
        assert!(mixed.low < 0.0, "{mixed:?}");
        assert!(matches!(judge(better, Some(&mixed), true), Gain::WithinNoise { .. }));
        // A deterministic harness: every difference is real, the mean decides.
        assert_eq!(judge(better, Some(&mixed), false), better);
        // Every pair better: it counts.
        let clear = PairedEvidence::of(&[0.05, 0.04, 0.06, 0.05]).unwrap();
        assert!(clear.low > 0.0);
        assert_eq!(judge(better, Some(&clear), true), better);
        // A loss that did not go down is never rescued by the pairs.
        let worse = Gain::NotBetter { gain: -0.1 };
        assert_eq!(judge(worse, Some(&clear), true), worse);
    }
}
