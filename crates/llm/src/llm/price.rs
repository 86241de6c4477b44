//! What model calls cost: a price per model, the cost of a call, and the
//! rule for models nobody priced.
//!
//! Prices are set per model name (input and output, per million tokens, in
//! the user's currency — Attractor never converts). A model served from this
//! machine (a loopback base URL) costs nothing unless a price says otherwise;
//! any other model without a price has an unknown cost: shown as such, and
//! refused by a cost budget, which cannot be kept without a price.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::config::InvalidLimit;
use super::usage::TokenUsage;
pub use crate::domain::format_cost;

/// The largest price per million tokens accepted: far above any model's, so
/// only a typo (a price per token entered per million, say) is refused.
pub const MAX_PRICE_PER_MILLION: f64 = 100_000.0;
/// The largest cost budget accepted for one run.
pub const MAX_COST_LIMIT: f64 = 1_000_000.0;

/// The price of one model, per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, ts_rs::TS, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Per million prompt tokens.
    pub input_per_million: f64,
    /// Per million completion tokens.
    pub output_per_million: f64,
}

impl ModelPrice {
    pub const FREE: ModelPrice = ModelPrice { input_per_million: 0.0, output_per_million: 0.0 };

    /// The cost of `tokens` at this price.
    pub fn cost(&self, tokens: TokenUsage) -> f64 {
        cost_of(tokens.prompt_tokens, self.input_per_million)
            + cost_of(tokens.completion_tokens, self.output_per_million)
    }

    /// Checks both prices; the error names `prices.MODEL.FIELD`.
    pub fn validate(&self, model: &str) -> Result<(), InvalidLimit> {
        self.invalid(model).into_iter().next().map_or(Ok(()), Err)
    }

    /// Each side of the price out of its bounds.
    pub fn invalid(&self, model: &str) -> Vec<InvalidLimit> {
        [("input_per_million", self.input_per_million), ("output_per_million", self.output_per_million)]
            .into_iter()
            .filter(|(_, value)| !(value.is_finite() && (0.0..=MAX_PRICE_PER_MILLION).contains(value)))
            .map(|(field, value)| {
                InvalidLimit::new(
                    format!("prices.{model}.{field}"),
                    format!(
                        "must be a price per million tokens from 0 to {MAX_PRICE_PER_MILLION}, not {}",
                        crate::domain::shown_number(value)
                    ),
                )
            })
            .collect()
    }
}

fn cost_of(tokens: u64, per_million: f64) -> f64 {
    // u64 → f64 loses precision only beyond 2^53 tokens, far past any run.
    tokens as f64 * per_million / 1_000_000.0
}

/// The price of `model` served at `base_url`: the one set for it, else free
/// for a server on this machine, else unknown (`None`).
pub fn price_for(prices: &BTreeMap<String, ModelPrice>, base_url: &str, model: &str) -> Option<ModelPrice> {
    if let Some(p) = prices.get(model) {
        return Some(*p);
    }
    is_local(base_url).then_some(ModelPrice::FREE)
}

/// A base URL whose host is this machine (`localhost`, 127.0.0.0/8, `::1`).
pub fn is_local(base_url: &str) -> bool {
    reqwest::Url::parse(base_url).is_ok_and(|url| super::client::is_loopback(&url))
}

/// Checks a cost budget; the error names `max_cost`.
pub fn validate_max_cost(value: f64) -> Result<(), InvalidLimit> {
    if value.is_finite() && value > 0.0 && value <= MAX_COST_LIMIT {
        Ok(())
    } else {
        Err(InvalidLimit::new(
            "max_cost",
            format!(
                "must be an amount above 0 and at most {MAX_COST_LIMIT}, not {}",
                crate::domain::shown_number(value)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_costs_its_tokens_at_the_model_price() {
        let p = ModelPrice { input_per_million: 2.5, output_per_million: 10.0 };
        let t = TokenUsage { prompt_tokens: 1_000, completion_tokens: 200, total_tokens: 1_200 };
        assert!((p.cost(t) - 0.0045).abs() < 1e-12);
        assert_eq!(ModelPrice::FREE.cost(t), 0.0);
    }

    #[test]
    fn local_models_are_free_unless_priced_and_remote_ones_unknown() {
        let mut prices = BTreeMap::new();
        assert_eq!(price_for(&prices, "http://127.0.0.1:8080/v1", "smol"), Some(ModelPrice::FREE));
        assert_eq!(price_for(&prices, "http://localhost:11434/v1", "smol"), Some(ModelPrice::FREE));
        assert_eq!(price_for(&prices, "http://[::1]:11434/v1", "smol"), Some(ModelPrice::FREE));
        assert_eq!(price_for(&prices, "https://api.openai.com/v1", "gpt-4o"), None);
        assert_eq!(price_for(&prices, "http://127.0.0.1.evil.example/v1", "x"), None);
        let p = ModelPrice { input_per_million: 1.0, output_per_million: 2.0 };
        prices.insert("gpt-4o".to_string(), p);
        assert_eq!(price_for(&prices, "https://api.openai.com/v1", "gpt-4o"), Some(p));
    }

    #[test]
    fn prices_and_budgets_out_of_range_name_their_field() {
        let bad = ModelPrice { input_per_million: -1.0, output_per_million: 1.0 };
        assert_eq!(bad.validate("gpt-4o").unwrap_err().field, "prices.gpt-4o.input_per_million");
        let bad = ModelPrice { input_per_million: 1.0, output_per_million: f64::NAN };
        assert_eq!(bad.validate("m").unwrap_err().field, "prices.m.output_per_million");
        assert_eq!(validate_max_cost(0.0).unwrap_err().field, "max_cost");
        assert!(validate_max_cost(1e300).is_err());
        assert!(validate_max_cost(2.5).is_ok());
    }

    #[test]
    fn costs_are_shown_with_the_digits_that_matter() {
        assert_eq!(format_cost(0.0), "0");
        assert_eq!(format_cost(12.345), "12.35");
        assert_eq!(format_cost(0.0045), "0.004500");
        assert_eq!(format_cost(0.000042), "0.00004200");
    }
}
