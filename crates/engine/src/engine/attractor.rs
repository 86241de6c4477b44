//! Attractor classification (seed 002 Part 3): where is this trajectory
//! heading? After every observation a sliding window of recent observations
//! is read as one of five attractors:
//!
//! - **FixedPoint** — deltas mostly positive: converging on a solution.
//! - **LimitCycle** — the measured state repeats with period 2, 3 or 4: the
//!   executor oscillates between wrong answers.
//! - **Divergent** — deltas mostly negative: moving away, with a probable cause.
//! - **Plateau** — deltas near zero: stalled.
//! - **Indeterminate** — too few observations, or no clear pattern.
//!
//! Cycles are found by *signatures* of the overseer signals (which tests
//! fail, build and type status, error and vulnerability counts, which checks
//! fail), compared fuzzily so a cycle still shows when an error count or one
//! test name wobbles between laps.
//!
//! Two adjustments to the seed: cycle detection looks at the last
//! `2 × max_cycle_period` observations (the seed's five-observation window
//! can never hold two laps of a period-3 or period-4 cycle), and a cycle must
//! visit at least two distinct states — an unchanging signature is a stall
//! (Plateau), not an oscillation.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::metrics::LevelWeights;
use super::model::Observation;
use crate::overseer::OverseerSignals;

pub use crate::domain::convergence::AttractorKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConvergenceTendency {
    Improving,
    Declining,
    Flat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DivergenceCause {
    SpecificationAmbiguity,
    WrongApproach,
    AccumulatedRegression,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AttractorType {
    FixedPoint { estimated_remaining_iterations: u32, estimated_remaining_tokens: u64 },
    LimitCycle { period: u32, cycle_signatures: Vec<String> },
    Divergent { divergence_rate: f64, probable_cause: DivergenceCause },
    Indeterminate { tendency: ConvergenceTendency },
    Plateau { stall_duration: u32, plateau_level: f64 },
}

impl AttractorType {
    pub fn kind(&self) -> AttractorKind {
        match self {
            AttractorType::FixedPoint { .. } => AttractorKind::FixedPoint,
            AttractorType::LimitCycle { .. } => AttractorKind::LimitCycle,
            AttractorType::Divergent { .. } => AttractorKind::Divergent,
            AttractorType::Indeterminate { .. } => AttractorKind::Indeterminate,
            AttractorType::Plateau { .. } => AttractorKind::Plateau,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AttractorEvidence {
    pub recent_deltas: Vec<f64>,
    pub recent_signatures: Vec<String>,
    pub rationale: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttractorState {
    pub classification: AttractorType,
    /// In [0, 1]: the share of deltas that agree (converging, diverging), the
    /// signature similarity (cycle), or how far under the stall threshold (plateau).
    pub confidence: f64,
    /// The observation at which this kind of attractor was first seen (in the current run of it).
    pub detected_at: Option<u32>,
    pub evidence: AttractorEvidence,
}

impl Default for AttractorState {
    fn default() -> Self {
        AttractorState {
            classification: AttractorType::Indeterminate { tendency: ConvergenceTendency::Flat },
            confidence: 0.0,
            detected_at: None,
            evidence: AttractorEvidence::default(),
        }
    }
}

impl AttractorState {
    pub fn kind(&self) -> AttractorKind {
        self.classification.kind()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClassificationConfig {
    /// Observations in the sliding window for deltas (seed default 5).
    pub window: usize,
    /// Fewer observations than this are Indeterminate (seed default 3).
    pub min_observations: usize,
    /// Mean `|delta|` below this is a plateau (seed default 0.02).
    pub plateau_epsilon: f64,
    /// Signatures at least this similar count as the same state (seed default 0.85).
    pub cycle_similarity_threshold: f64,
    /// Longest cycle period looked for (the seed tries 2, 3 and 4).
    pub max_cycle_period: usize,
    /// Share of negative deltas above which the trajectory is divergent.
    pub divergence_ratio: f64,
    /// Share of positive deltas above which it is converging.
    pub fixed_point_ratio: f64,
    /// Cap on the estimated remaining iterations of a fixed point.
    pub max_remaining_iterations: u32,
    /// Token cost per iteration assumed when the observations report none.
    pub default_tokens_per_iteration: u64,
}

impl Default for ClassificationConfig {
    fn default() -> Self {
        ClassificationConfig {
            window: 5,
            min_observations: 3,
            plateau_epsilon: 0.02,
            cycle_similarity_threshold: 0.85,
            max_cycle_period: 4,
            divergence_ratio: 0.7,
            fixed_point_ratio: 0.6,
            max_remaining_iterations: 50,
            default_tokens_per_iteration: 20_000,
        }
    }
}

/// The measured state of one observation, for spotting repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct Signature {
    tests: Option<TestSignature>,
    build_ok: Option<bool>,
    type_ok: Option<bool>,
    /// Build, type and lint errors, when any of those overseers ran.
    errors: Option<u32>,
    vulnerabilities: Option<u32>,
    /// Failing custom checks and failing overseer verdicts, when there are any checks.
    failing_checks: Option<BTreeSet<String>>,
}

#[derive(Debug, Clone, PartialEq)]
struct TestSignature {
    passed: u32,
    failed: u32,
    total: u32,
    /// Failing test names, when every failure is named.
    failing: Option<BTreeSet<String>>,
}

/// Component weights of signature similarity: which tests fail says the most.
const W_TESTS: f64 = 0.5;
const W_STATUS: f64 = 0.2;
const W_ERRORS: f64 = 0.15;
const W_CHECKS: f64 = 0.1;
const W_VULNS: f64 = 0.05;

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 { 1.0 } else { a.intersection(b).count() as f64 / union as f64 }
}

/// 1 for equal counts, falling linearly with their relative difference.
fn closeness(a: u32, b: u32) -> f64 {
    1.0 - (a as f64 - b as f64).abs() / (a.max(b).max(1)) as f64
}

impl Signature {
    pub fn of(s: &OverseerSignals) -> Signature {
        let tests = s.test_results.as_ref().map(|t| TestSignature {
            passed: t.passed,
            failed: t.failed,
            total: t.total,
            failing: (t.failing.len() as u32 >= t.failed).then(|| t.failing.iter().cloned().collect()),
        });
        let has_error_source = s.build_result.is_some() || s.type_check.is_some() || s.lint_results.is_some();
        let has_checks = !s.custom_checks.is_empty() || !s.verdicts.is_empty();
        let failing_checks = has_checks.then(|| {
            s.custom_checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| format!("check:{}", c.name))
                .chain(
                    s.verdicts.iter().filter(|v| !v.passed && !v.skipped).map(|v| format!("overseer:{}", v.overseer)),
                )
                .collect()
        });
        Signature {
            tests,
            build_ok: s.build_result.as_ref().map(|b| b.success),
            type_ok: s.type_check.as_ref().map(|t| t.clean),
            errors: has_error_source.then(|| s.error_count()),
            vulnerabilities: s.security_scan.as_ref().map(|_| s.vulnerability_count()),
            failing_checks,
        }
    }

    /// Similarity in [0, 1] over the components either side measured.
    pub fn similarity(&self, other: &Signature) -> f64 {
        let mut parts: Vec<(f64, f64)> = Vec::new();
        match (&self.tests, &other.tests) {
            (None, None) => {}
            (Some(a), Some(b)) => {
                let s = match (&a.failing, &b.failing) {
                    (Some(fa), Some(fb)) => jaccard(fa, fb),
                    _ => 0.5 * closeness(a.failed, b.failed) + 0.5 * closeness(a.passed, b.passed),
                };
                parts.push((W_TESTS, s));
            }
            _ => parts.push((W_TESTS, 0.0)),
        }
        let statuses: Vec<f64> = [(self.build_ok, other.build_ok), (self.type_ok, other.type_ok)]
            .into_iter()
            .filter(|(a, b)| a.is_some() || b.is_some())
            .map(|(a, b)| if a == b { 1.0 } else { 0.0 })
            .collect();
        if !statuses.is_empty() {
            parts.push((W_STATUS, statuses.iter().sum::<f64>() / statuses.len() as f64));
        }
        let counted = |a: Option<u32>, b: Option<u32>| match (a, b) {
            (None, None) => None,
            (Some(a), Some(b)) => Some(closeness(a, b)),
            _ => Some(0.0),
        };
        if let Some(s) = counted(self.errors, other.errors) {
            parts.push((W_ERRORS, s));
        }
        if let Some(s) = counted(self.vulnerabilities, other.vulnerabilities) {
            parts.push((W_VULNS, s));
        }
        match (&self.failing_checks, &other.failing_checks) {
            (None, None) => {}
            (Some(a), Some(b)) => parts.push((W_CHECKS, jaccard(a, b))),
            (Some(x), None) | (None, Some(x)) => parts.push((W_CHECKS, if x.is_empty() { 1.0 } else { 0.0 })),
        }
        let weight: f64 = parts.iter().map(|(w, _)| w).sum();
        if weight == 0.0 { 1.0 } else { parts.iter().map(|(w, s)| w * s).sum::<f64>() / weight }
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if let Some(t) = &self.tests {
            let mut s = format!("tests {}/{}", t.passed, t.total);
            if let Some(names) = t.failing.as_ref().filter(|n| !n.is_empty()) {
                s.push_str(&format!(" failing[{}]", names.iter().cloned().collect::<Vec<_>>().join(",")));
            }
            parts.push(s);
        }
        let status = |ok: bool| if ok { "ok" } else { "failed" };
        if let Some(b) = self.build_ok {
            parts.push(format!("build {}", status(b)));
        }
        if let Some(t) = self.type_ok {
            parts.push(format!("types {}", status(t)));
        }
        if let Some(e) = self.errors {
            parts.push(format!("errors {e}"));
        }
        if let Some(v) = self.vulnerabilities {
            parts.push(format!("vulnerabilities {v}"));
        }
        if let Some(c) = self.failing_checks.as_ref().filter(|c| !c.is_empty()) {
            parts.push(format!("failing[{}]", c.iter().cloned().collect::<Vec<_>>().join(",")));
        }
        if parts.is_empty() { f.write_str("no signal") } else { f.write_str(&parts.join(" | ")) }
    }
}

/// The shortest period (2 up to `max_period`) whose last two laps match pair
/// by pair at `threshold`, with at least two distinct states in a lap (any
/// difference counts when the laps repeat exactly); returns it with the mean
/// similarity of the matched pairs.
pub fn detect_cycle(signatures: &[Signature], threshold: f64, max_period: usize) -> Option<(u32, f64)> {
    for period in 2..=max_period.max(2) {
        if signatures.len() < period * 2 {
            continue;
        }
        let recent = &signatures[signatures.len() - period * 2..];
        let (first, second) = recent.split_at(period);
        let sims: Vec<f64> = first.iter().zip(second).map(|(a, b)| a.similarity(b)).collect();
        if sims.iter().any(|s| *s < threshold) {
            continue;
        }
        // States in a lap are distinct when they differ by more than a
        // wobble — or, when the laps repeat exactly, when they differ at all:
        // two close wrong answers visited in turn (6 and 7 of 10 tests, most
        // failures shared) are a cycle too, not progress and not a stall.
        let exact = sims.iter().all(|s| *s >= 1.0 - 1e-9);
        let distinct = |a: &Signature, b: &Signature| {
            let s = a.similarity(b);
            s < threshold || (exact && s < 1.0 - 1e-9)
        };
        let distinct_states = first.iter().enumerate().any(|(i, a)| first[i + 1..].iter().any(|b| distinct(a, b)));
        if distinct_states {
            return Some((period as u32, sims.iter().sum::<f64>() / sims.len() as f64));
        }
    }
    None
}

fn infer_divergence_cause(recent: &[Observation], threshold: f64) -> DivergenceCause {
    if recent.iter().filter_map(|o| o.metrics).any(|m| m.test_regression_count > 0) {
        return DivergenceCause::AccumulatedRegression;
    }
    if recent.iter().any(|o| o.verification.as_ref().is_some_and(|v| v.has_ambiguity_gaps())) {
        return DivergenceCause::SpecificationAmbiguity;
    }
    let sigs: Vec<Signature> = recent.iter().map(|o| Signature::of(&o.overseer_signals)).collect();
    if sigs.len() >= 2 && sigs.windows(2).all(|w| w[0].similarity(&w[1]) < threshold) {
        return DivergenceCause::WrongApproach;
    }
    DivergenceCause::Unknown
}

fn estimate_remaining(
    recent: &[Observation],
    mean_delta: f64,
    level: f64,
    target: f64,
    weights: &LevelWeights,
    c: &ClassificationConfig,
) -> (u32, u64) {
    let iterations = if level >= target {
        0
    } else {
        // Prefer the level's own slope over the window; the delta is a
        // composite in other units, used only when the level did not move.
        let first = recent.first().map_or(level, |o| o.level(weights));
        let slope = if recent.len() > 1 { (level - first) / (recent.len() - 1) as f64 } else { 0.0 };
        let rate = if slope > 0.0 { slope } else { mean_delta };
        if rate > 0.0 {
            (((target - level) / rate).ceil() as u32).min(c.max_remaining_iterations)
        } else {
            c.max_remaining_iterations
        }
    };
    let spent: Vec<u64> = recent.iter().map(|o| o.tokens_used).filter(|t| *t > 0).collect();
    let per_iteration =
        if spent.is_empty() { c.default_tokens_per_iteration } else { spent.iter().sum::<u64>() / spent.len() as u64 };
    (iterations, per_iteration.saturating_mul(iterations as u64))
}

/// Classifies the observations of the current context; `target` is the
/// acceptance threshold the fixed-point estimate counts toward.
pub fn classify(
    observations: &[Observation],
    c: &ClassificationConfig,
    weights: &LevelWeights,
    target: f64,
) -> AttractorState {
    let window = c.window.max(1);
    let recent = &observations[observations.len().saturating_sub(window)..];
    let state = |classification, confidence: f64, deltas: Vec<f64>, signatures: Vec<String>, rationale: String| {
        AttractorState {
            classification,
            confidence: confidence.clamp(0.0, 1.0),
            detected_at: observations.last().map(|o| o.sequence),
            evidence: AttractorEvidence { recent_deltas: deltas, recent_signatures: signatures, rationale },
        }
    };

    if recent.len() < c.min_observations {
        let tendency = match recent.last().and_then(|o| o.metrics).map(|m| m.convergence_delta) {
            Some(d) if d > 0.0 => ConvergenceTendency::Improving,
            Some(d) if d < 0.0 => ConvergenceTendency::Declining,
            _ => ConvergenceTendency::Flat,
        };
        let why = format!("{}; {} needed to classify", crate::counted(recent.len(), "observation"), c.min_observations);
        return state(AttractorType::Indeterminate { tendency }, 0.0, vec![], vec![], why);
    }

    let deltas: Vec<f64> = recent.iter().filter_map(|o| o.metrics.map(|m| m.convergence_delta)).collect();
    if deltas.len() < 2 {
        let why = "fewer than two measured deltas".to_string();
        return state(AttractorType::Indeterminate { tendency: ConvergenceTendency::Flat }, 0.0, deltas, vec![], why);
    }

    let cycle_span = (2 * c.max_cycle_period).max(window);
    let signatures: Vec<Signature> = observations[observations.len().saturating_sub(cycle_span)..]
        .iter()
        .map(|o| Signature::of(&o.overseer_signals))
        .collect();
    let shown: Vec<String> = signatures.iter().map(|s| s.to_string()).collect();

    if let Some((period, similarity)) = detect_cycle(&signatures, c.cycle_similarity_threshold, c.max_cycle_period) {
        let lap = shown[shown.len() - 2 * period as usize..].to_vec();
        let why = format!("the measured state repeats every {period} observations (similarity {similarity:.2})");
        return state(AttractorType::LimitCycle { period, cycle_signatures: lap }, similarity, deltas, shown, why);
    }

    let n = deltas.len() as f64;
    let mean = deltas.iter().sum::<f64>() / n;
    let mean_abs = deltas.iter().map(|d| d.abs()).sum::<f64>() / n;
    let last_level = recent.last().map_or(0.0, |o| o.level(weights));
    if mean_abs < c.plateau_epsilon {
        let why = format!("mean |delta| {mean_abs:.4} < {} over {} deltas", c.plateau_epsilon, deltas.len());
        let confidence = 1.0 - mean_abs / c.plateau_epsilon.max(f64::MIN_POSITIVE);
        let classification = AttractorType::Plateau { stall_duration: deltas.len() as u32, plateau_level: last_level };
        return state(classification, confidence, deltas, shown, why);
    }

    let negative = deltas.iter().filter(|d| **d < 0.0).count() as f64 / n;
    if negative > c.divergence_ratio {
        let cause = infer_divergence_cause(recent, c.cycle_similarity_threshold);
        let why =
            format!("{:.0}% of recent deltas negative (mean {mean:.3}); probable cause {cause:?}", negative * 100.0);
        let classification = AttractorType::Divergent { divergence_rate: mean, probable_cause: cause };
        return state(classification, negative, deltas, shown, why);
    }

    let positive = deltas.iter().filter(|d| **d > 0.0).count() as f64 / n;
    if positive > c.fixed_point_ratio {
        let (iterations, tokens) = estimate_remaining(recent, mean, last_level, target, weights, c);
        let why = format!(
            "{:.0}% of recent deltas positive (mean {mean:.3}), level {last_level:.2}; about {iterations} more",
            positive * 100.0
        );
        let classification = AttractorType::FixedPoint {
            estimated_remaining_iterations: iterations,
            estimated_remaining_tokens: tokens,
        };
        return state(classification, positive, deltas, shown, why);
    }

    let tendency = if mean > c.plateau_epsilon {
        ConvergenceTendency::Improving
    } else if mean < -c.plateau_epsilon {
        ConvergenceTendency::Declining
    } else {
        ConvergenceTendency::Flat
    };
    let why = format!("no clear pattern (mean delta {mean:.3})");
    state(AttractorType::Indeterminate { tendency }, 0.0, deltas, shown, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overseer::signals::{BuildResult, TestResults};

    fn failing(names: &[&str], total: u32, errors: u32) -> Signature {
        Signature::of(&OverseerSignals {
            test_results: Some(TestResults {
                passed: total - names.len() as u32,
                failed: names.len() as u32,
                total,
                failing: names.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            }),
            build_result: Some(BuildResult { success: true, error_count: errors, warning_count: 0 }),
            ..Default::default()
        })
    }

    #[test]
    fn identical_signals_have_identical_signatures() {
        let a = failing(&["a", "b"], 10, 0);
        assert_eq!(a.similarity(&a.clone()), 1.0);
        assert!(a.to_string().contains("tests 8/10 failing[a,b]"), "{a}");
    }

    #[test]
    fn a_small_wobble_is_still_the_same_state_but_other_failures_are_not() {
        let a = failing(&["t1", "t2", "t3", "t4", "t5", "t6"], 20, 3);
        let wobble = failing(&["t1", "t2", "t3", "t4", "t5", "t6", "t9"], 20, 4);
        let other = failing(&["t7", "t8"], 20, 0);
        assert!(a.similarity(&wobble) >= 0.85, "{}", a.similarity(&wobble));
        assert!(a.similarity(&other) < 0.5, "{}", a.similarity(&other));
    }

    #[test]
    fn a_constant_signature_is_not_a_cycle() {
        let a = failing(&["x"], 5, 0);
        assert_eq!(detect_cycle(&vec![a; 8], 0.85, 4), None);
    }

    #[test]
    fn two_close_states_visited_in_turn_exactly_are_a_cycle_but_a_wobbling_climb_is_not() {
        let six = failing(&["t1", "t8", "t9", "t10"], 10, 0);
        let seven = failing(&["t8", "t9", "t10"], 10, 0);
        assert!(six.similarity(&seven) >= 0.85, "close enough to be one state alone");
        let sigs = vec![six.clone(), seven.clone(), six.clone(), seven.clone()];
        assert_eq!(detect_cycle(&sigs, 0.85, 4).map(|(p, _)| p), Some(2));
        // Small steps that never repeat exactly are not a cycle.
        let eight = failing(&["t9", "t10"], 10, 0);
        let nine = failing(&["t10"], 10, 0);
        assert_eq!(detect_cycle(&[six, seven, eight, nine], 0.85, 4), None);
    }

    #[test]
    fn alternating_signatures_are_a_period_two_cycle() {
        let (a, b) = (failing(&["x"], 5, 0), failing(&["y", "z"], 5, 2));
        let sigs = vec![a.clone(), b.clone(), a, b];
        assert_eq!(detect_cycle(&sigs, 0.85, 4).map(|(p, _)| p), Some(2));
    }
}
