//! What the report's charts show, computed from a suite's epochs.
//!
//! The same shaping as the app's Charts screen (`ui/src/lib/charts.ts`), so a
//! report and the screen agree point for point: finished epochs only, a
//! trailing 3-epoch moving average that skips missing losses, the dot colour
//! from the epoch's artifact events (a rollback wins over an update), the
//! per-task spread over the training tasks with held-out tasks apart, and one
//! timeline mark per artifact event on the rows of the artifacts that moved.

use crate::service::types::{ArtifactEvent, EpochView};

/// What happened to the artifacts at the end of an epoch (the dot colour).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Update,
    Rollback,
    None,
}

impl Move {
    pub fn of(events: &[ArtifactEvent]) -> Move {
        if events.iter().any(|e| matches!(e, ArtifactEvent::Rollback { .. })) {
            Move::Rollback
        } else if events.iter().any(|e| matches!(e, ArtifactEvent::Update { .. })) {
            Move::Update
        } else {
            Move::None
        }
    }
}

/// `update knobs v1→v2` / `rollback knobs v2→v1`.
pub fn transition_label(e: &ArtifactEvent) -> String {
    match e {
        ArtifactEvent::Update { artifact, from_version, to_version, .. } => {
            format!("update {artifact} v{from_version}→v{to_version}")
        }
        ArtifactEvent::Rollback { artifact, from_version, to_version, .. } => {
            format!("rollback {artifact} v{from_version}→v{to_version}")
        }
    }
}

/// Trailing moving average over `window` values. Early points average what
/// exists so far; a missing value is skipped, and a window with no values at
/// all gives `None`.
pub fn moving_average(values: &[Option<f64>], window: usize) -> Vec<Option<f64>> {
    let window = window.max(1);
    (0..values.len())
        .map(|i| {
            let from = (i + 1).saturating_sub(window);
            let present: Vec<f64> = values[from..=i].iter().flatten().copied().collect();
            crate::loss::mean(&present)
        })
        .collect()
}

/// Median of sorted values (`None` when empty).
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    // Linear interpolation between the closest ranks (the common "type 7").
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

/// One finished epoch on the loss curve.
#[derive(Debug, Clone, PartialEq)]
pub struct LossPoint {
    pub epoch: i64,
    /// Mean training loss.
    pub loss: Option<f64>,
    /// The 3-epoch moving average of `loss`.
    pub average: Option<f64>,
    /// Mean loss of the held-out tasks.
    pub holdout: Option<f64>,
    pub movement: Move,
    pub transitions: Vec<String>,
}

/// The loss curve's points: one per finished epoch, in order.
pub fn loss_points(epochs: &[EpochView]) -> Vec<LossPoint> {
    let done: Vec<&EpochView> = epochs.iter().filter(|e| e.completed_at.is_some()).collect();
    let averages = moving_average(&done.iter().map(|e| e.mean_loss).collect::<Vec<_>>(), 3);
    done.iter()
        .zip(averages)
        .map(|(e, average)| LossPoint {
            epoch: e.epoch_num,
            loss: e.mean_loss,
            average,
            holdout: e.holdout_mean_loss,
            movement: Move::of(&e.events),
            transitions: e.events.iter().map(transition_label).collect(),
        })
        .collect()
}

/// One epoch of the per-task loss chart.
#[derive(Debug, Clone, PartialEq)]
pub struct SpreadPoint {
    pub epoch: i64,
    pub min: f64,
    pub max: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    /// Training tasks in the bar (held-out ones when the suite has only those).
    pub tasks: usize,
    /// Held-out tasks' losses: drawn apart, never part of the bar.
    pub holdout: Vec<f64>,
}

/// The spread of the task losses of every finished epoch that has any.
pub fn spread_points(epochs: &[EpochView]) -> Vec<SpreadPoint> {
    epochs
        .iter()
        .filter(|e| e.completed_at.is_some())
        .filter_map(|e| {
            let mut train: Vec<f64> = e.tasks.iter().filter(|t| !t.holdout).map(|t| t.loss).collect();
            let holdout: Vec<f64> = e.tasks.iter().filter(|t| t.holdout).map(|t| t.loss).collect();
            let mut base = if train.is_empty() { holdout.clone() } else { std::mem::take(&mut train) };
            base.retain(|l| l.is_finite());
            base.sort_by(f64::total_cmp);
            Some(SpreadPoint {
                epoch: e.epoch_num,
                min: *base.first()?,
                max: *base.last()?,
                q1: quantile(&base, 0.25)?,
                median: quantile(&base, 0.5)?,
                q3: quantile(&base, 0.75)?,
                tasks: base.len(),
                holdout,
            })
        })
        .collect()
}

/// One artifact event on the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineMark {
    pub epoch: i64,
    /// Row of the artifact.
    pub row: usize,
    pub rollback: bool,
    pub from: i64,
    pub to: i64,
}

/// The timeline: rows are the artifacts that ever moved (in the order of
/// `artifacts`, then any others), marks are every event of a finished epoch.
pub fn timeline(epochs: &[EpochView], artifacts: &[String]) -> (Vec<String>, Vec<TimelineMark>) {
    let done: Vec<&EpochView> = epochs.iter().filter(|e| e.completed_at.is_some()).collect();
    let moved: Vec<&str> = done.iter().flat_map(|e| e.events.iter().map(ArtifactEvent::artifact)).collect();
    let mut rows: Vec<String> = artifacts.iter().filter(|a| moved.contains(&a.as_str())).cloned().collect();
    for a in moved {
        if !rows.iter().any(|r| r == a) {
            rows.push(a.to_string());
        }
    }
    let mut marks = Vec::new();
    for e in &done {
        for ev in &e.events {
            let (from, to, rollback) = match ev {
                ArtifactEvent::Update { from_version, to_version, .. } => (*from_version, *to_version, false),
                ArtifactEvent::Rollback { from_version, to_version, .. } => (*from_version, *to_version, true),
            };
            let row = rows.iter().position(|r| r == ev.artifact()).unwrap_or(0);
            marks.push(TimelineMark { epoch: e.epoch_num, row, rollback, from, to });
        }
    }
    (rows, marks)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::service::types::TaskLoss;

    fn update(artifact: &str, from: i64, to: i64) -> ArtifactEvent {
        ArtifactEvent::Update {
            artifact: artifact.into(),
            from_version: from,
            to_version: to,
            rationale: String::new(),
            expected_loss_reduction: None,
            confidence: None,
            learning_rate: None,
        }
    }

    fn rollback(artifact: &str, from: i64, to: i64) -> ArtifactEvent {
        ArtifactEvent::Rollback {
            artifact: artifact.into(),
            from_version: from,
            to_version: to,
            mean_loss_prev: None,
            mean_loss_current: None,
            new_learning_rate: None,
        }
    }

    fn epoch(
        num: i64,
        done: bool,
        mean: Option<f64>,
        tasks: &[(&str, f64, bool)],
        events: Vec<ArtifactEvent>,
    ) -> EpochView {
        EpochView {
            epoch_id: num,
            epoch_num: num,
            started_at: String::new(),
            completed_at: done.then(String::new),
            mean_loss: mean,
            holdout_mean_loss: None,
            parent_artifacts: BTreeMap::new(),
            child_artifacts: BTreeMap::new(),
            events,
            note: None,
            model: None,
            tasks: tasks
                .iter()
                .map(|(t, l, h)| TaskLoss {
                    task: t.to_string(),
                    run_id: 0,
                    loss: *l,
                    status: "complete".into(),
                    holdout: *h,
                })
                .collect(),
            runs: vec![],
        }
    }

    #[test]
    fn the_moving_average_skips_missing_losses_and_starts_with_what_exists() {
        let avg = moving_average(&[Some(0.9), None, Some(0.3), Some(0.6), None, None, None], 3);
        assert_eq!(avg[0], Some(0.9));
        assert_eq!(avg[1], Some(0.9));
        assert!((avg[2].unwrap() - 0.6).abs() < 1e-12);
        assert!((avg[3].unwrap() - 0.45).abs() < 1e-12);
        assert_eq!(avg[6], None, "a window of nothing has no average");
    }

    #[test]
    fn a_rollback_colours_the_epoch_even_next_to_an_update() {
        assert_eq!(Move::of(&[update("a", 0, 1), rollback("b", 2, 1)]), Move::Rollback);
        assert_eq!(Move::of(&[update("a", 0, 1)]), Move::Update);
        assert_eq!(Move::of(&[]), Move::None);
        assert_eq!(transition_label(&rollback("knobs", 2, 1)), "rollback knobs v2→v1");
    }

    #[test]
    fn unfinished_epochs_are_left_out_of_every_chart() {
        let epochs = vec![
            epoch(
                1,
                true,
                Some(0.5),
                &[("a", 0.4, false), ("b", 0.6, false), ("h", 0.9, true)],
                vec![update("k", 0, 1)],
            ),
            epoch(
                2,
                true,
                Some(0.4),
                &[("a", 0.2, false), ("b", 0.3, false), ("c", 0.7, false)],
                vec![rollback("k", 1, 0)],
            ),
            epoch(3, false, None, &[("a", 0.1, false)], vec![]),
        ];
        let points = loss_points(&epochs);
        assert_eq!(points.iter().map(|p| p.epoch).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(points[1].transitions, ["rollback k v1→v0"]);

        let spread = spread_points(&epochs);
        assert_eq!(spread.len(), 2);
        assert_eq!((spread[0].min, spread[0].max, spread[0].median), (0.4, 0.6, 0.5));
        assert_eq!(spread[0].holdout, [0.9], "held-out tasks stay out of the bar");
        assert_eq!((spread[1].q1, spread[1].median, spread[1].q3), (0.25, 0.3, 0.5));

        let (rows, marks) = timeline(&epochs, &["k".to_string(), "still".to_string()]);
        assert_eq!(rows, ["k"], "only artifacts that moved get a row");
        assert_eq!(marks.iter().map(|m| (m.epoch, m.rollback)).collect::<Vec<_>>(), [(1, false), (2, true)]);
    }

    #[test]
    fn a_suite_of_only_held_out_tasks_still_gets_its_spread() {
        let epochs = vec![epoch(1, true, Some(0.5), &[("h1", 0.2, true), ("h2", 0.8, true)], vec![])];
        let spread = spread_points(&epochs);
        assert_eq!((spread[0].min, spread[0].max, spread[0].tasks), (0.2, 0.8, 2));
    }
}
