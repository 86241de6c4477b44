//! What model calls cost, in the one shape the store keeps with an epoch, the
//! bus carries and every screen words the same way.

use super::words::counted;
use serde::{Deserialize, Serialize};

/// What the model calls of one stretch of work (an epoch's optimizer step, a
/// run) cost: stored with the epoch and shown beside its outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct ModelSpend {
    /// Calls sent to the server, failed and unusable ones included.
    #[ts(type = "number")]
    pub calls: u64,
    #[ts(type = "number")]
    pub prompt_tokens: u64,
    #[ts(type = "number")]
    pub completion_tokens: u64,
    /// Calls that ended in an error or an unusable reply.
    #[ts(type = "number")]
    pub failures: u64,
    /// Wall time spent waiting on the model.
    pub seconds: f64,
    /// What the calls cost at the configured prices (0 for a local model).
    #[serde(default)]
    pub cost: f64,
    /// Calls whose model has no price: when any, `cost` is a lower bound.
    #[serde(default)]
    #[ts(type = "number")]
    pub unpriced_calls: u64,
}

impl ModelSpend {
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// "3 model calls (1 failed or unusable), 2410 tokens, cost 0.0123, 41.2 s"
    pub fn summary(&self) -> String {
        self.counted("model call")
    }

    /// Calls (named `call`), failures, tokens, cost and time in one phrase.
    pub fn counted(&self, call: &str) -> String {
        let failed = if self.failures > 0 { format!(" ({} failed or unusable)", self.failures) } else { String::new() };
        format!(
            "{}{failed}, {} tokens, {}, {:.1} s",
            counted(self.calls, call),
            self.total_tokens(),
            self.cost_phrase(),
            self.seconds
        )
    }

    /// "cost 0.0123", or what is not known: "cost unknown (2 calls to an
    /// unpriced model)", "cost ≥ 0.0123 (…)".
    pub fn cost_phrase(&self) -> String {
        let amount = format_cost(self.cost);
        match self.unpriced_calls {
            0 => format!("cost {amount}"),
            n if self.cost == 0.0 => format!("cost unknown ({} to an unpriced model)", counted(n, "call")),
            n => format!("cost ≥ {amount} ({} to an unpriced model)", counted(n, "call")),
        }
    }
}

/// An amount for people: enough decimals to see a cheap call ($0.000042),
/// two for large sums.
pub fn format_cost(amount: f64) -> String {
    if amount == 0.0 {
        "0".to_string()
    } else if amount >= 1.0 {
        format!("{amount:.2}")
    } else {
        // Four significant digits.
        let digits = (3 - amount.log10().floor() as i32).clamp(2, 12) as usize;
        format!("{amount:.digits$}")
    }
}
