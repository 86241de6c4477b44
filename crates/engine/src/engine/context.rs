//! Context health (seed 002 §1.5): as iterations pile up, the executor's
//! working context fills with stale attempts and feedback, the useful signal
//! drowns, and more iterations stop helping. When that shows, the engine
//! forces a fresh start: a clean context carrying forward only curated
//! knowledge ([`super::carry_forward`]).
//!
//! Everything is measured over the *current context* — the observations
//! since the latest fresh start — because a fresh start is exactly what
//! clears the noise.
//!
//! Signal-to-noise is estimated from token counts rather than guessed from
//! text: the cleanest prompt of the current context (its smallest, normally
//! the first) is what spec, code and feedback cost without history, and the
//! latest prompt is that plus whatever history piled up. Their ratio falls as
//! history accumulates and stays at 1 for an executor that starts every
//! iteration from a clean prompt. Executors that report prompt tokens
//! (`Observation::context_tokens`) are measured on those; otherwise total
//! tokens stand in; with no token data at all the context counts as healthy.

use serde::{Deserialize, Serialize};

use super::model::{Observation, Trajectory};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ContextHealth {
    /// Useful context over total context, in [0, 1].
    pub signal_to_noise: f64,
    /// Mean lines changed per iteration over the recent window.
    pub structural_churn_rate: f64,
    /// Share of recent iterations that left the code exactly as it was.
    pub artifact_self_similarity: f64,
}

impl Default for ContextHealth {
    fn default() -> Self {
        ContextHealth { signal_to_noise: 1.0, structural_churn_rate: 0.0, artifact_self_similarity: 0.0 }
    }
}

/// Why the context counts as degraded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Degradation {
    /// Lots of code changing while the measurements do not move.
    HighChurnNoProgress,
    /// Useful context below the threshold share.
    NoisyContext,
    /// Vulnerabilities piling up fast.
    SecurityRegressing,
    /// Regenerating the same code.
    Duplicating,
    /// A limit cycle no escape strategy broke: the context keeps leading
    /// back into it.
    Cycling,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextThresholds {
    /// Recent observations looked at (the seed's 3).
    pub window: usize,
    pub noisy_below: f64,
    /// Mean lines changed above which churn counts as high.
    pub churn_above: f64,
    /// `|convergence_delta|` below this counts as no progress.
    pub no_progress_below: f64,
    /// A vulnerability delta above this in the window counts as security regressing.
    pub vulnerability_jump_above: i32,
    pub duplicating_above: f64,
}

impl Default for ContextThresholds {
    fn default() -> Self {
        ContextThresholds {
            window: 3,
            noisy_below: 0.4,
            churn_above: 50.0,
            no_progress_below: 0.03,
            vulnerability_jump_above: 2,
            duplicating_above: 0.9,
        }
    }
}

fn context_size(o: &Observation) -> u64 {
    o.context_tokens.unwrap_or(o.tokens_used)
}

/// Whether an execution left the workspace exactly as it found it.
fn unchanged(prev: &Observation, curr: &Observation) -> bool {
    curr.artifact.lines_changed == 0
        || (!curr.artifact.commit.is_empty() && curr.artifact.commit == prev.artifact.commit)
}

/// Health of the executor's current context.
pub fn estimate_context_health(trajectory: &Trajectory, t: &ContextThresholds) -> ContextHealth {
    let context = trajectory.context_observations();
    let window = t.window.max(1);

    let sizes: Vec<u64> = context.iter().map(context_size).filter(|s| *s > 0).collect();
    let signal_to_noise = match (sizes.iter().min(), context.last().map(context_size)) {
        (Some(&clean), Some(latest)) if latest > 0 => (clean as f64 / latest as f64).min(1.0),
        _ => 1.0,
    };

    let recent = &context[context.len().saturating_sub(window)..];
    let measured: Vec<f64> = recent.iter().filter_map(|o| o.metrics.map(|m| m.lines_changed as f64)).collect();
    let structural_churn_rate =
        if measured.is_empty() { 0.0 } else { measured.iter().sum::<f64>() / measured.len() as f64 };

    // Transitions inside the window (the first context observation's
    // predecessor belongs to the previous context). Fewer than two say nothing.
    let pairs: Vec<bool> = recent.windows(2).map(|w| unchanged(&w[0], &w[1])).collect();
    let artifact_self_similarity =
        if pairs.len() < 2 { 0.0 } else { pairs.iter().filter(|u| **u).count() as f64 / pairs.len() as f64 };

    ContextHealth { signal_to_noise, structural_churn_rate, artifact_self_similarity }
}

/// Whether the context is degraded enough to force a fresh start. Never
/// once the policy's fresh starts are used up (no infinite reset loops).
pub fn context_degradation(trajectory: &Trajectory, t: &ContextThresholds) -> Option<Degradation> {
    if trajectory.total_fresh_starts >= trajectory.policy.max_fresh_starts {
        return None;
    }
    let health = &trajectory.context_health;
    let context = trajectory.context_observations();
    let window = t.window.max(1);
    let recent = &context[context.len().saturating_sub(window)..];

    // Judged on a full window only: the first attempt after a fresh start is
    // usually a large rewrite and must not count as churn on its own.
    let high_churn_no_progress = recent.len() >= window
        && health.structural_churn_rate > t.churn_above
        && recent.iter().all(|o| o.metrics.is_none_or(|m| m.convergence_delta.abs() < t.no_progress_below));
    if high_churn_no_progress {
        return Some(Degradation::HighChurnNoProgress);
    }
    if health.signal_to_noise < t.noisy_below {
        return Some(Degradation::NoisyContext);
    }
    if recent.iter().any(|o| o.metrics.is_some_and(|m| m.vulnerability_delta > t.vulnerability_jump_above)) {
        return Some(Degradation::SecurityRegressing);
    }
    if health.artifact_self_similarity > t.duplicating_above && context.len() >= 2 {
        return Some(Degradation::Duplicating);
    }
    None
}
