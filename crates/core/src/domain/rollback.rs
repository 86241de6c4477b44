//! Why an update was rolled back, in one type the outer loop records, the bus
//! carries and every screen (the CLI's progress and `inspect`, the app's
//! charts, the report) words the same way — a rollback by the held-out gate
//! happens while the training loss *falls*, so "the loss rose" would be false.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Why an update was rolled back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RollbackReason {
    /// The training loss rose (or, on a suite measured against its noise, did
    /// not fall beyond it).
    Training,
    /// The training loss fell, but by less than its run-to-run noise.
    Noise,
    /// The held-out gate: the held-out loss rose beyond its tolerance.
    Holdout,
}

/// Why a rollback happened, in words: `held-out loss rose 0.0200 → 0.0354`.
/// `training` and `holdout` are the means before and after the update; an
/// epoch recorded before reasons were has none.
pub fn reason(
    reason: Option<RollbackReason>,
    training: (Option<f64>, Option<f64>),
    holdout: (Option<f64>, Option<f64>),
) -> Option<String> {
    // A loss that stayed put is rolled back too (no gain is no reason to keep
    // a change): "rose" would be false then.
    let rose = |what: &str, (a, b): (Option<f64>, Option<f64>)| match (a, b) {
        (Some(a), Some(b)) if b > a => format!("{what} rose {}", apart(a, b)),
        (Some(a), Some(b)) => format!("{what} did not fall: {}", apart(a, b)),
        _ => format!("{what} did not fall"),
    };
    Some(match reason? {
        RollbackReason::Holdout => rose("held-out loss", holdout),
        RollbackReason::Training => rose("training loss", training),
        RollbackReason::Noise => "the gain was within the noise".to_string(),
    })
}

/// "a → b" with four decimals, or as many more as it takes for two
/// different numbers not to read the same ("0.0357 → 0.0357" said nothing).
fn apart(a: f64, b: f64) -> String {
    let digits = (4..=12).find(|&p| a == b || format!("{a:.p$}") != format!("{b:.p$}")).unwrap_or(12);
    format!("{a:.digits$} → {b:.digits$}")
}

/// [`reason`] as said after a transition: ` (held-out loss rose …)`, or
/// nothing.
pub fn why(
    reason: Option<RollbackReason>,
    training: (Option<f64>, Option<f64>),
    holdout: (Option<f64>, Option<f64>),
) -> String {
    self::reason(reason, training, holdout).map(|r| format!(" ({r})")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollback_says_rose_only_when_the_loss_rose() {
        let training = |a, b| why(Some(RollbackReason::Training), (Some(a), Some(b)), (None, None));
        assert_eq!(training(0.4, 0.5), " (training loss rose 0.4000 → 0.5000)");
        assert_eq!(training(0.4, 0.4), " (training loss did not fall: 0.4000 → 0.4000)");
        // Close numbers get the decimals that tell them apart.
        assert_eq!(training(0.035_712, 0.035_748), " (training loss rose 0.03571 → 0.03575)");
        assert_eq!(
            why(Some(RollbackReason::Holdout), (None, None), (Some(0.02), None)),
            " (held-out loss did not fall)"
        );
    }
}
