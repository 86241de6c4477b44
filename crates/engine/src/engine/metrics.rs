//! The two numbers every decision rests on (seed 002 §1.4):
//!
//! - `convergence_delta`, the derivative: did this attempt move toward the
//!   goal? It drives attractor classification and the bandit's learning.
//! - `convergence_level`, the position: how close to done is this state? It
//!   drives termination.
//!
//! Two deliberate departures from the seed's formula, both so that an
//! attempt that changes nothing scores 0 (else a stall could never be told
//! from progress): the regression and structural terms are *penalties*
//! measured from their ideal (no regressions, no churn) instead of bonuses
//! that are positive by default, and the error term is 0 when there were no
//! errors before or after (the seed's `max(1)` turned "still no errors" into
//! full credit) and is bounded to [−1, 1].

use serde::{Deserialize, Serialize};

use super::context::ContextHealth;
use super::model::{Observation, ObservationMetrics};
use crate::overseer::OverseerSignals;
use crate::overseer::signals::TestResults;

/// Weights of the convergence delta. The seed leaves them per task; these
/// defaults favour the tests, which say most about the intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeltaWeights {
    pub test: f64,
    pub error: f64,
    pub regression: f64,
    pub structural: f64,
    /// Lines changed at which the churn penalty is full (the seed's 200 AST nodes).
    pub churn_scale_lines: f64,
    /// Below this signal-to-noise ratio the delta is scaled down proportionally.
    pub noisy_context_below: f64,
}

impl Default for DeltaWeights {
    fn default() -> Self {
        DeltaWeights {
            test: 0.55,
            error: 0.25,
            regression: 0.15,
            structural: 0.05,
            churn_scale_lines: 200.0,
            noisy_context_below: 0.5,
        }
    }
}

/// Weights and hard gates of the convergence level (seed 002 §1.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LevelWeights {
    pub test: f64,
    pub build: f64,
    pub type_check: f64,
    pub custom: f64,
    /// A failing build caps the level here: nothing else can be trusted.
    pub build_failure_cap: f64,
    /// A failing type check caps it here.
    pub type_failure_cap: f64,
}

impl Default for LevelWeights {
    fn default() -> Self {
        LevelWeights {
            test: 0.55,
            build: 0.20,
            type_check: 0.10,
            custom: 0.15,
            build_failure_cap: 0.3,
            type_failure_cap: 0.6,
        }
    }
}

/// Tests that passed in `prev` and fail in `curr`. By name when both sides
/// name their tests; otherwise from the counts, as the net loss of passing
/// tests (a lower bound: a swap of one fixed and one broken test hides).
pub fn regressions(prev: Option<&TestResults>, curr: &TestResults) -> u32 {
    let Some(prev) = prev else { return 0 };
    let curr_named = !curr.failing.is_empty() || !curr.passing.is_empty();
    if !prev.passing.is_empty() && curr_named {
        curr.failing.iter().filter(|name| prev.passing.contains(name)).count() as u32
    } else {
        prev.passed.saturating_sub(curr.passed)
    }
}

pub fn convergence_delta(
    prev: &OverseerSignals,
    curr: &OverseerSignals,
    lines_changed: u32,
    health: &ContextHealth,
    w: &DeltaWeights,
) -> f64 {
    let prev_pass = prev.test_results.as_ref().map_or(0, |t| t.passed) as f64;
    let curr_pass = curr.test_results.as_ref().map_or(0, |t| t.passed) as f64;
    let total = curr.test_results.as_ref().map_or(1, |t| t.expected().max(1)) as f64;
    let test_delta = (curr_pass - prev_pass) / total;

    let (prev_err, curr_err) = (prev.error_count() as f64, curr.error_count() as f64);
    let error_delta = (prev_err - curr_err) / prev_err.max(curr_err).max(1.0);

    // Tests that went missing are regressions too: they no longer say anything.
    // (Without test names the regressions are already the lost passes, the
    // missing ones among them: counted once.)
    let lost = |t: &TestResults| {
        if t.passing.is_empty() && t.failing.is_empty() {
            t.regression_count.max(t.missing)
        } else {
            t.regression_count.saturating_add(t.missing)
        }
    };
    let regression_penalty = curr.test_results.as_ref().map_or(0.0, |t| f64::from(lost(t)) / total);
    let churn = if w.churn_scale_lines > 0.0 { (lines_changed as f64 / w.churn_scale_lines).min(1.0) } else { 0.0 };

    let mut delta =
        w.test * test_delta + w.error * error_delta - w.regression * regression_penalty - w.structural * churn;

    // Security veto: an attempt that adds vulnerabilities gets no credit for
    // progress, so the bandit learns to avoid approaches that introduce them.
    if curr.vulnerability_count() > prev.vulnerability_count() {
        delta = delta.min(0.0);
    }
    // A degraded context makes the signal itself unreliable: scale it down.
    if health.signal_to_noise < w.noisy_context_below && w.noisy_context_below > 0.0 {
        delta *= health.signal_to_noise.max(0.0) / w.noisy_context_below;
    }
    if delta.is_finite() { delta } else { 0.0 }
}

/// How close to done a state is, in [0, 1]; 0 without any signal (the
/// engine never assesses convergence without an external measurement).
pub fn convergence_level(signals: &OverseerSignals, w: &LevelWeights) -> f64 {
    if !signals.has_any_signal() {
        return 0.0;
    }
    // Passed over every test there is: a skipped test is not a pass, and a
    // test that went missing still counts in the denominator.
    // Against a baseline: the targets' share times the share of the tests
    // that passed before and still do — not the share of all tests.
    let test = signals
        .test_results
        .as_ref()
        .map_or(1.0, |t| match &t.judgement {
            Some(j) => j.share(),
            None => t.passed as f64 / t.expected().max(1) as f64,
        })
        .min(1.0);
    let build = signals.build_result.as_ref().map_or(1.0, |b| if b.success { 1.0 } else { 0.0 });
    let type_check = signals.type_check.as_ref().map_or(1.0, |t| if t.clean { 1.0 } else { 0.0 });
    let custom = if signals.custom_checks.is_empty() {
        1.0
    } else {
        signals.custom_checks.iter().filter(|c| c.passed).count() as f64 / signals.custom_checks.len() as f64
    };
    let level = w.test * test + w.build * build + w.type_check * type_check + w.custom * custom;
    if build < 1.0 {
        return level.min(w.build_failure_cap);
    }
    if type_check < 1.0 {
        return level.min(w.type_failure_cap);
    }
    level
}

/// The metrics of `curr` against the observation before it. `curr`'s
/// regression count must already be filled in (see [`regressions`]).
pub fn compute_metrics(
    prev: &Observation,
    curr: &Observation,
    health: &ContextHealth,
    delta_weights: &DeltaWeights,
    level_weights: &LevelWeights,
) -> ObservationMetrics {
    let (p, c) = (&prev.overseer_signals, &curr.overseer_signals);
    let passed = |s: &OverseerSignals| s.test_results.as_ref().map_or(0, |t| t.passed) as i64;
    let lines_changed = curr.artifact.lines_changed;
    ObservationMetrics {
        lines_changed,
        test_pass_delta: (passed(c) - passed(p)).clamp(i32::MIN as i64, i32::MAX as i64) as i32,
        test_regression_count: c.test_results.as_ref().map_or(0, |t| t.regression_count),
        error_count_delta: (c.error_count() as i64 - p.error_count() as i64) as i32,
        vulnerability_delta: (c.vulnerability_count() as i64 - p.vulnerability_count() as i64) as i32,
        convergence_delta: convergence_delta(p, c, lines_changed, health, delta_weights),
        // The level is over every check, the held-out ones included.
        convergence_level: convergence_level(&curr.judged_signals(), level_weights),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overseer::signals::{BuildResult, CustomCheckResult, SecurityScanResult, TypeCheckResult};

    fn tests(passed: u32, total: u32) -> TestResults {
        TestResults { passed, failed: total - passed, total, ..Default::default() }
    }

    fn signals(passed: u32, total: u32) -> OverseerSignals {
        OverseerSignals { test_results: Some(tests(passed, total)), ..Default::default() }
    }

    #[test]
    fn more_passing_tests_is_positive_progress() {
        let d =
            convergence_delta(&signals(4, 10), &signals(7, 10), 0, &ContextHealth::default(), &DeltaWeights::default());
        assert!((d - 0.55 * 0.3).abs() < 1e-9, "{d}");
    }

    #[test]
    fn an_attempt_that_changes_nothing_scores_zero() {
        let s = signals(4, 10);
        assert_eq!(convergence_delta(&s, &s, 0, &ContextHealth::default(), &DeltaWeights::default()), 0.0);
    }

    #[test]
    fn churn_and_regressions_are_penalties() {
        let w = DeltaWeights::default();
        let prev = signals(5, 10);
        let mut curr = signals(5, 10);
        curr.test_results.as_mut().unwrap().regression_count = 2;
        let d = convergence_delta(&prev, &curr, 100, &ContextHealth::default(), &w);
        assert!((d - (-0.15 * 0.2 - 0.05 * 0.5)).abs() < 1e-9, "{d}");
    }

    #[test]
    fn fewer_errors_is_progress_and_new_errors_are_bounded() {
        let w = DeltaWeights::default();
        let with_errors = |n| OverseerSignals {
            build_result: Some(BuildResult { success: n == 0, error_count: n, warning_count: 0 }),
            ..Default::default()
        };
        let h = ContextHealth::default();
        assert!((convergence_delta(&with_errors(4), &with_errors(1), 0, &h, &w) - 0.25 * 0.75).abs() < 1e-9);
        assert!((convergence_delta(&with_errors(0), &with_errors(5), 0, &h, &w) + 0.25).abs() < 1e-9);
    }

    #[test]
    fn a_new_security_finding_gets_no_convergence_credit() {
        let prev = signals(2, 10);
        let mut curr = signals(9, 10);
        curr.security_scan = Some(SecurityScanResult { high_count: 1, ..Default::default() });
        let d = convergence_delta(&prev, &curr, 0, &ContextHealth::default(), &DeltaWeights::default());
        assert_eq!(d, 0.0);
    }

    #[test]
    fn a_noisy_context_scales_the_delta_down() {
        let h = ContextHealth { signal_to_noise: 0.25, ..Default::default() };
        let d = convergence_delta(&signals(0, 10), &signals(10, 10), 0, &h, &DeltaWeights::default());
        assert!((d - 0.55 * 0.5).abs() < 1e-9, "{d}");
    }

    #[test]
    fn level_weighs_the_checks_and_a_broken_build_caps_it() {
        let w = LevelWeights::default();
        assert_eq!(convergence_level(&OverseerSignals::default(), &w), 0.0);
        let mut s = signals(8, 10);
        s.custom_checks = vec![
            CustomCheckResult { name: "a".into(), passed: true, detail: String::new(), required: false },
            CustomCheckResult { name: "b".into(), passed: false, detail: String::new(), required: false },
        ];
        assert!((convergence_level(&s, &w) - (0.55 * 0.8 + 0.2 + 0.1 + 0.15 * 0.5)).abs() < 1e-9);
        s.build_result = Some(BuildResult { success: false, error_count: 1, warning_count: 0 });
        assert_eq!(convergence_level(&s, &w), 0.3);
        s.build_result = None;
        s.type_check = Some(TypeCheckResult { clean: false, error_count: 1 });
        assert_eq!(convergence_level(&s, &w), 0.6);
    }

    #[test]
    fn regressions_come_from_test_names_when_both_sides_have_them() {
        let prev = TestResults {
            passing: vec!["a".into(), "b".into(), "c".into()],
            passed: 3,
            total: 4,
            ..Default::default()
        };
        // b broke, d got fixed: the counts cancel out, the names do not.
        let curr = TestResults {
            passing: vec!["a".into(), "c".into(), "d".into()],
            failing: vec!["b".into()],
            passed: 3,
            failed: 1,
            total: 4,
            ..Default::default()
        };
        assert_eq!(regressions(Some(&prev), &curr), 1);
    }

    #[test]
    fn tests_that_went_missing_lower_the_level_and_count_as_regressions() {
        let w = LevelWeights::default();
        let all = |t: TestResults| OverseerSignals { test_results: Some(t), ..Default::default() };
        let whole = all(tests(10, 10));
        let fewer = all(TestResults { missing: 6, ..tests(4, 4) });
        assert_eq!(convergence_level(&whole, &w), convergence_level(&all(tests(10, 10)), &w));
        assert!(convergence_level(&fewer, &w) < convergence_level(&all(tests(5, 10)), &w), "4 of 10, not 4 of 4");
        assert!(!fewer.all_passing());
        let d = convergence_delta(&whole, &fewer, 0, &ContextHealth::default(), &DeltaWeights::default());
        assert!(d < 0.0, "a drop from 10 tests to 4 is a step back: {d}");
        let skipped = all(TestResults { skipped: 6, ..tests(4, 10) });
        assert!(convergence_level(&skipped, &w) < convergence_level(&all(tests(5, 10)), &w), "a skip is no pass");
    }

    #[test]
    fn regressions_fall_back_to_counts_without_names() {
        assert_eq!(regressions(Some(&tests(7, 10)), &tests(4, 10)), 3);
        assert_eq!(regressions(Some(&tests(4, 10)), &tests(7, 10)), 0);
        assert_eq!(regressions(None, &tests(4, 10)), 0);
    }
}
