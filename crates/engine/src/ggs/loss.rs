//! The three parts of the goal-gradient loss and their weighted sum.
//!
//! - `D` (intent-result distance): the weighted share of criteria that fail.
//!   A failed *verifiable* criterion counts fully; a failed *plausible* one
//!   (a judgement, e.g. an LLM verifier's) counts by how consistently it has
//!   failed across rounds, so one noisy verdict does not weigh like a
//!   reproducible failure.
//! - `P` (process implausibility): of the failures, the share that are
//!   logical. Environmental failures (a check that could not run) say the
//!   environment blocked the approach, not that the approach is wrong.
//! - `Ω` (resource cost): how much of the replan and time budgets is spent.
//!
//! Environmental failures never count toward `D`: the criterion was not
//! measured, so it is neither passed nor failed and drops out of numerator
//! and denominator alike.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::config::GgsConfig;
use crate::overseer::FailureClass;

/// How a criterion is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CriterionMode {
    /// Checked mechanically (a test, a build, a command's exit status).
    Verifiable,
    /// Judged (an LLM verifier's reading of the intent).
    Plausible,
}

/// One criterion's verdict in one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriterionVerdict {
    pub criterion: String,
    pub mode: CriterionMode,
    pub passed: bool,
    /// Why it failed; `None` on a failure means the check ran and said no,
    /// which is read as logical.
    #[serde(default)]
    pub failure_class: Option<FailureClass>,
    #[serde(default)]
    pub evidence: String,
}

impl CriterionVerdict {
    pub fn pass(criterion: impl Into<String>, mode: CriterionMode) -> Self {
        CriterionVerdict {
            criterion: criterion.into(),
            mode,
            passed: true,
            failure_class: None,
            evidence: String::new(),
        }
    }

    pub fn fail(
        criterion: impl Into<String>,
        mode: CriterionMode,
        class: FailureClass,
        evidence: impl Into<String>,
    ) -> Self {
        CriterionVerdict {
            criterion: criterion.into(),
            mode,
            passed: false,
            failure_class: Some(class),
            evidence: evidence.into(),
        }
    }

    /// Failed because the check could not run: this round says nothing about the work.
    pub fn is_environmental(&self) -> bool {
        !self.passed && self.failure_class == Some(FailureClass::Environmental)
    }

    /// Failed, and the failure is about the work.
    pub fn is_logical_failure(&self) -> bool {
        !self.passed && !self.is_environmental()
    }
}

/// The loss of one round with its parts.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Loss {
    /// Intent-result distance, in [0, 1].
    pub d: f64,
    /// Process implausibility, in [0, 1].
    pub p: f64,
    /// Resource cost, in [0, 1].
    pub omega: f64,
    /// `α·D + β·(1 − Ω)·P + λ·Ω`.
    pub l: f64,
}

impl Loss {
    pub fn new(d: f64, p: f64, omega: f64, config: &GgsConfig) -> Loss {
        let beta_eff = config.beta * (1.0 - omega);
        Loss { d, p, omega, l: config.alpha * d + beta_eff * p + config.lambda * omega }
    }
}

/// How much of the budget a round has used, the inputs of `Ω`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ResourceUse {
    /// Replan rounds so far (for the convergence engine: iterations used).
    pub replans: u32,
    /// The most replans the budget allows.
    pub max_replans: u32,
    pub elapsed_ms: u64,
    /// The time budget; `None` uses [`GgsConfig::time_budget_ms`].
    pub time_budget_ms: Option<u64>,
}

/// How often a plausible criterion was judged and how often it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PlausibleRecord {
    pub evaluated: u32,
    pub failed: u32,
}

/// A fraction `used / budget` clamped to [0, 1]; a zero budget is spent.
fn spent(used: f64, budget: f64) -> f64 {
    if budget <= 0.0 { 1.0 } else { (used / budget).clamp(0.0, 1.0) }
}

/// `Ω = w₁·replans/max_replans + w₂·elapsed/time_budget`, in [0, 1].
pub fn resource_cost(resources: &ResourceUse, config: &GgsConfig) -> f64 {
    let time_budget = resources.time_budget_ms.unwrap_or(config.time_budget_ms);
    let omega = config.w_replans * spent(resources.replans as f64, resources.max_replans as f64)
        + config.w_time * spent(resources.elapsed_ms as f64, time_budget as f64);
    omega.clamp(0.0, 1.0)
}

/// Records this round's plausible verdicts in `history` (so the weights
/// include the current round, as "failed on k of N attempts" does).
pub fn record_plausible(verdicts: &[CriterionVerdict], history: &mut BTreeMap<String, PlausibleRecord>) {
    for v in verdicts.iter().filter(|v| v.mode == CriterionMode::Plausible && !v.is_environmental()) {
        let r = history.entry(v.criterion.clone()).or_default();
        r.evaluated += 1;
        if !v.passed {
            r.failed += 1;
        }
    }
}

/// `D`: the weighted failures over the measured criteria, or `None` when no
/// criterion was measured this round (every one failed environmentally, or
/// there were none).
pub fn intent_distance(verdicts: &[CriterionVerdict], history: &BTreeMap<String, PlausibleRecord>) -> Option<f64> {
    let measured: Vec<&CriterionVerdict> = verdicts.iter().filter(|v| !v.is_environmental()).collect();
    if measured.is_empty() {
        return None;
    }
    let weighted: f64 = measured
        .iter()
        .filter(|v| !v.passed)
        .map(|v| match v.mode {
            CriterionMode::Verifiable => 1.0,
            CriterionMode::Plausible => match history.get(&v.criterion) {
                Some(r) if r.evaluated > 0 => r.failed as f64 / r.evaluated as f64,
                _ => 1.0,
            },
        })
        .sum();
    Some((weighted / measured.len() as f64).clamp(0.0, 1.0))
}

/// `P = logical / (logical + environmental)` over the failed criteria; 0
/// when nothing failed.
pub fn process_implausibility(verdicts: &[CriterionVerdict]) -> f64 {
    let logical = verdicts.iter().filter(|v| v.is_logical_failure()).count();
    let environmental = verdicts.iter().filter(|v| v.is_environmental()).count();
    let total = logical + environmental;
    if total == 0 { 0.0 } else { logical as f64 / total as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn loss_is_the_weighted_sum_with_beta_decaying_as_the_budget_goes() {
        let c = GgsConfig::default();
        // D = 0.5, P = 1, Ω = 0.25: β_eff = 0.3 · 0.75 = 0.225,
        // L = 0.6·0.5 + 0.225·1 + 0.4·0.25 = 0.3 + 0.225 + 0.1 = 0.625.
        let l = Loss::new(0.5, 1.0, 0.25, &c);
        assert!(close(l.l, 0.625), "{l:?}");
        // With the budget gone, P no longer matters: L = 0.6·0.5 + 0 + 0.4.
        assert!(close(Loss::new(0.5, 1.0, 1.0, &c).l, 0.7));
    }

    #[test]
    fn omega_weighs_replans_and_elapsed_time() {
        let c = GgsConfig::default();
        // 2 of 8 replans, 60 s of the seed's 300 s: 0.6·0.25 + 0.4·0.2 = 0.23.
        let r = ResourceUse { replans: 2, max_replans: 8, elapsed_ms: 60_000, time_budget_ms: None };
        assert!(close(resource_cost(&r, &c), 0.23));
        // A caller's own time budget replaces the default; overruns clamp to 1.
        let r = ResourceUse { replans: 10, max_replans: 8, elapsed_ms: 30_000, time_budget_ms: Some(60_000) };
        assert!(close(resource_cost(&r, &c), 0.6 + 0.2));
    }

    #[test]
    fn environmental_failures_are_excluded_from_the_distance() {
        let v = vec![
            CriterionVerdict::pass("build", CriterionMode::Verifiable),
            CriterionVerdict::pass("lint", CriterionMode::Verifiable),
            CriterionVerdict::fail("tests", CriterionMode::Verifiable, FailureClass::Logical, "2 failed"),
            CriterionVerdict::fail("e2e", CriterionMode::Verifiable, FailureClass::Environmental, "timed out"),
        ];
        // Three measured criteria, one failed: not 2/4 (env as failure), not 1/4 (env as pass).
        assert!(close(intent_distance(&v, &BTreeMap::new()).unwrap(), 1.0 / 3.0));
        // But P sees the environmental failure: one logical of two failures.
        assert!(close(process_implausibility(&v), 0.5));
    }

    #[test]
    fn a_round_where_nothing_could_be_measured_has_no_distance() {
        let v = vec![CriterionVerdict::fail("tests", CriterionMode::Verifiable, FailureClass::Environmental, "")];
        assert_eq!(intent_distance(&v, &BTreeMap::new()), None);
        assert!(close(process_implausibility(&v), 0.0));
    }

    #[test]
    fn a_plausible_failure_weighs_by_how_often_it_failed() {
        let mut history = BTreeMap::new();
        let pass = CriterionVerdict::pass("reads well", CriterionMode::Plausible);
        let fail = CriterionVerdict::fail("reads well", CriterionMode::Plausible, FailureClass::Logical, "");
        let tests = CriterionVerdict::pass("tests", CriterionMode::Verifiable);
        record_plausible(std::slice::from_ref(&pass), &mut history);
        record_plausible(std::slice::from_ref(&pass), &mut history);
        let round = vec![fail.clone(), tests];
        record_plausible(&round, &mut history);
        // Failed 1 of 3 times: weight 1/3, over 2 criteria.
        assert!(close(intent_distance(&round, &history).unwrap(), (1.0 / 3.0) / 2.0));
        // A failure with no history counts fully.
        assert!(close(intent_distance(&[fail], &BTreeMap::new()).unwrap(), 1.0));
    }
}
