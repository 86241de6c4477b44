//! What crosses a fresh start (seed 002 §4.2): knowledge, not context.
//!
//! A fresh start throws the executor's conversation away — that history is
//! the noise that degraded it. The workspace keeps the code; the trajectory
//! keeps its metadata; the new context receives only a curated summary:
//! the effective specification, the best signals reached ("10 of 12 tests
//! passed; these two remain") with the artifact that reached them, what
//! failed compressed into anti-patterns, the remaining gaps, and every
//! hint a person gave. Never the attempts themselves.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::attractor::{AttractorType, Signature};
use super::effectiveness::effectiveness;
use super::metrics::LevelWeights;
use super::model::{GapCategory, IntentGap, Trajectory};
use super::spec::SpecificationSnapshot;
use crate::overseer::OverseerSignals;
use crate::workspace::ArtifactReference;

/// Remaining gaps listed at most; the rest are counted.
const MAX_GAPS: usize = 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CarryForward {
    /// The effective specification (original plus amendments).
    pub specification: SpecificationSnapshot,
    /// The best measurements reached — the signals, not the code.
    pub best_signals: OverseerSignals,
    pub best_artifact: ArtifactReference,
    pub best_sequence: u32,
    pub best_level: f64,
    /// Attempts made so far.
    pub attempts: u32,
    /// What was tried and failed, one anti-pattern per entry.
    pub anti_patterns: Vec<String>,
    /// The anti-patterns as one text.
    pub failure_summary: String,
    pub remaining_gaps: Vec<IntentGap>,
    /// A person's hints: always carried.
    pub hints: Vec<String>,
    pub blocked_tools: Vec<String>,
}

fn gap(description: String, category: GapCategory) -> IntentGap {
    IntentGap { description, category }
}

/// The gaps of the best state: the latest verifier's gaps first, then every failing measurement.
fn remaining_gaps(trajectory: &Trajectory, best: &OverseerSignals) -> Vec<IntentGap> {
    let mut gaps: Vec<IntentGap> =
        trajectory.latest().and_then(|o| o.verification.as_ref()).map(|v| v.gaps.clone()).unwrap_or_default();
    if let Some(b) = best.build_result.as_ref().filter(|b| !b.success) {
        gaps.push(gap(format!("the build fails ({})", crate::counted(b.error_count, "error")), GapCategory::Incorrect));
    }
    if let Some(t) = best.type_check.as_ref().filter(|t| !t.clean) {
        gaps.push(gap(
            format!("the type check fails ({})", crate::counted(t.error_count, "error")),
            GapCategory::Incorrect,
        ));
    }
    if let Some(t) = &best.test_results {
        for name in &t.failing {
            gaps.push(gap(format!("test `{name}` fails"), GapCategory::Incorrect));
        }
        let unnamed = t.failed.saturating_sub(t.failing.len() as u32);
        if unnamed > 0 {
            gaps.push(gap(format!("{} more", crate::counted(unnamed, "failing test")), GapCategory::Incorrect));
        }
    }
    for c in best.custom_checks.iter().filter(|c| !c.passed) {
        let detail = if c.detail.is_empty() { String::new() } else { format!(": {}", c.detail.trim()) };
        gaps.push(gap(format!("check `{}` fails{detail}", c.name), GapCategory::Incorrect));
    }
    if let Some(s) = best.security_scan.as_ref().filter(|s| s.critical_count + s.high_count > 0) {
        gaps.push(gap(
            format!(
                "{} critical and {} high security {}",
                s.critical_count,
                s.high_count,
                if s.critical_count + s.high_count == 1 { "finding" } else { "findings" }
            ),
            GapCategory::Incorrect,
        ));
    }
    if gaps.len() > MAX_GAPS {
        let more = gaps.len() - MAX_GAPS;
        gaps.truncate(MAX_GAPS);
        gaps.push(gap(format!("… and {more} more"), GapCategory::Incorrect));
    }
    gaps
}

fn anti_patterns(trajectory: &Trajectory) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in effectiveness(&trajectory.strategy_log) {
        if let Some(mean) = e.mean_delta.filter(|m| *m <= 0.0) {
            out.push(format!(
                "`{}` was tried {} and did not move the measurements (mean delta {mean:.3}).",
                e.strategy,
                crate::counted(e.uses, "time")
            ));
        }
    }
    match &trajectory.attractor_state.classification {
        AttractorType::LimitCycle { period, cycle_signatures } => {
            let lap = &cycle_signatures[..(*period as usize).min(cycle_signatures.len())];
            out.push(format!(
                "Attempts oscillated between {period} states ({}); do not return to them.",
                lap.join(" → ")
            ));
        }
        AttractorType::Divergent { probable_cause, .. } => {
            out.push(format!("Recent attempts moved away from the goal (probable cause: {probable_cause:?})."));
        }
        _ => {}
    }
    // Tests some attempt broke: whatever that attempt did is to be avoided.
    let mut broken: BTreeSet<&str> = BTreeSet::new();
    for w in trajectory.observations.windows(2) {
        if let (Some(prev), Some(curr)) = (&w[0].overseer_signals.test_results, &w[1].overseer_signals.test_results) {
            broken.extend(curr.failing.iter().filter(|n| prev.passing.contains(n)).map(String::as_str));
        }
    }
    if !broken.is_empty() {
        let names: Vec<&str> = broken.into_iter().collect();
        out.push(format!("Changes broke tests that were passing ({}); keep them passing.", names.join(", ")));
    }
    if trajectory.observations.iter().any(|o| o.metrics.is_some_and(|m| m.vulnerability_delta > 0)) {
        out.push("An attempt introduced security findings; do not repeat how it handled input or secrets.".into());
    }
    if !trajectory.blocked_tools.is_empty() {
        let tools: Vec<&str> = trajectory.blocked_tools.iter().map(String::as_str).collect();
        out.push(format!("Do not use: {} (every failing attempt relied on them).", tools.join(", ")));
    }
    out
}

/// The carry-forward for a fresh start now; `None` before any observation.
pub fn extract_carry_forward(trajectory: &Trajectory, weights: &LevelWeights) -> Option<CarryForward> {
    let best = trajectory.best_observation(weights)?;
    let anti_patterns = anti_patterns(trajectory);
    let failure_summary = if anti_patterns.is_empty() {
        "No failed approach recorded yet.".to_string()
    } else {
        anti_patterns.iter().map(|a| format!("- {a}")).collect::<Vec<_>>().join("\n")
    };
    Some(CarryForward {
        specification: trajectory.specification.effective.clone(),
        best_signals: best.overseer_signals.clone(),
        best_artifact: best.artifact.clone(),
        best_sequence: best.sequence,
        best_level: best.level(weights),
        attempts: trajectory.observations.len() as u32,
        remaining_gaps: remaining_gaps(trajectory, &best.overseer_signals),
        anti_patterns,
        failure_summary,
        hints: trajectory.hints.clone(),
        blocked_tools: trajectory.blocked_tools.iter().cloned().collect(),
    })
}

impl CarryForward {
    /// What is established: the best state, what remains, the hints.
    pub fn facts(&self) -> String {
        let mut out = format!(
            "Best measured state (attempt {}, {:.0}% converged): {}.",
            self.best_sequence + 1,
            self.best_level * 100.0,
            Signature::of(&self.best_signals)
        );
        if !self.remaining_gaps.is_empty() {
            out.push_str("\nStill open:");
            for g in &self.remaining_gaps {
                out.push_str(&format!("\n- {}", g.description));
            }
        }
        if !self.hints.is_empty() {
            out.push_str("\nHints (high priority):");
            for h in &self.hints {
                out.push_str(&format!("\n- {h}"));
            }
        }
        out
    }

    /// Fills the `carry_forward_template` artifact's `{attempts}`, `{facts}`
    /// and `{failures}` placeholders.
    pub fn fill_template(&self, template: &str) -> String {
        template
            .replace(
                "{attempts}",
                &format!("{} so far; the workspace holds the latest code.", crate::counted(self.attempts, "attempt")),
            )
            .replace("{facts}", &self.facts())
            .replace("{failures}", &self.failure_summary)
    }
}
