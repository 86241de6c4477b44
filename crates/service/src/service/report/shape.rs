//! What the charts show, computed from a suite's epochs — once, for both the
//! app's Charts screen (served as [`SuiteCharts`]) and the report's files, so
//! the two agree point for point: finished epochs only, on one epoch axis the
//! three charts share; a trailing 3-epoch moving average that skips missing
//! losses; the dot colour from the epoch's artifact events (a rollback wins
//! over an update); the per-task spread (min, quartiles, max) over the
//! training tasks with held-out tasks apart; and one timeline mark per
//! artifact event on the rows of the artifacts that moved.

use std::collections::HashMap;

use serde::Serialize;
use ts_rs::TS;

pub(crate) use crate::domain::drawn;
use crate::outer::rollback;
use crate::service::types::{ArtifactEvent, EpochView, SuiteEpochs, SuiteItem};

/// What happened to the artifacts at the end of an epoch (the dot colour).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
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

/// `update knobs v1→v2` / `rollback knobs v2→v1`, and for a rollback why:
/// `(held-out loss rose 0.3100 → 0.3800)`.
pub fn transition_label(e: &ArtifactEvent) -> String {
    match e {
        ArtifactEvent::Update { artifact, from_version, to_version, .. } => {
            format!("update {artifact} v{from_version}→v{to_version}")
        }
        ArtifactEvent::Rollback { artifact, from_version, to_version, .. } => {
            format!("rollback {artifact} v{from_version}→v{to_version}{}", rollback_why(e))
        }
    }
}

/// A rollback's reason as said after its transition; empty for an update.
pub fn rollback_why(e: &ArtifactEvent) -> String {
    rollback_reason(e).map(|r| format!(" ({r})")).unwrap_or_default()
}

/// A rollback's reason in words, when it has one (an update has none).
pub fn rollback_reason(e: &ArtifactEvent) -> Option<String> {
    match e {
        ArtifactEvent::Update { .. } => None,
        ArtifactEvent::Rollback {
            reason,
            mean_loss_prev,
            mean_loss_current,
            holdout_mean_prev,
            holdout_mean_current,
            ..
        } => rollback::reason(
            *reason,
            (*mean_loss_prev, *mean_loss_current),
            (*holdout_mean_prev, *holdout_mean_current),
        ),
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

/// The `q` quantile of sorted values (`None` when empty).
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

fn finished(epochs: &[EpochView]) -> impl Iterator<Item = &EpochView> {
    epochs.iter().filter(|e| e.completed_at.is_some())
}

/// One finished epoch on the loss curve.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
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
    let done: Vec<&EpochView> = finished(epochs).collect();
    let averages = moving_average(&done.iter().map(|e| e.mean_loss).collect::<Vec<_>>(), 3);
    done.iter()
        .zip(averages)
        .map(|(e, average)| LossPoint {
            epoch: e.epoch_num,
            loss: e.mean_loss.map(drawn),
            average: average.map(drawn),
            holdout: e.holdout_mean_loss.map(drawn),
            movement: Move::of(&e.events),
            transitions: match &e.note {
                // A tree search's epoch changed nothing: it measured a candidate.
                Some(note) if e.events.is_empty() && note.starts_with(crate::domain::TREE_EPOCH) => vec![note.clone()],
                _ => e.events.iter().map(transition_label).collect(),
            },
        })
        .collect()
}

/// A task's loss in an epoch: the task as an index into the task names sent
/// alongside ([`SuiteCharts::tasks`]), to keep 500 epochs × 50 tasks small.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, TS)]
pub struct Ranked(pub u32, pub f64);

/// One epoch of the per-task loss chart: a box plot of the training tasks.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SpreadPoint {
    pub epoch: i64,
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: f64,
    /// The tasks in the box, by loss (held-out ones when the suite has only those).
    pub tasks: Vec<Ranked>,
    /// Held-out tasks: drawn apart, never part of the box.
    pub holdout: Vec<Ranked>,
}

/// The task names [`Ranked`] points into: the suite's tasks, then any task
/// an epoch ran that the suite no longer lists — with the index of each
/// (looked up once per task per epoch: 25,000 times at 500 × 50).
struct TaskNames {
    names: Vec<String>,
    index: HashMap<String, u32>,
}

impl TaskNames {
    fn of(view: &SuiteEpochs) -> TaskNames {
        let mut t = TaskNames { names: Vec::new(), index: HashMap::new() };
        let all =
            view.tasks.iter().map(|t| &t.name).chain(view.epochs.iter().flat_map(|e| e.tasks.iter().map(|t| &t.task)));
        for name in all {
            if !t.index.contains_key(name) {
                let Ok(i) = u32::try_from(t.names.len()) else { break };
                t.index.insert(name.clone(), i);
                t.names.push(name.clone());
            }
        }
        t
    }
}

/// The spread of one epoch's task losses, `None` when it counted none.
fn spread_point(e: &EpochView, names: &TaskNames) -> Option<SpreadPoint> {
    let rank = |held: bool| {
        let mut v: Vec<Ranked> = e
            .tasks
            .iter()
            .filter(|t| t.holdout == held && t.loss.is_finite())
            .filter_map(|t| Some(Ranked(*names.index.get(&t.task)?, drawn(t.loss))))
            .collect();
        v.sort_by(|a, b| a.1.total_cmp(&b.1));
        v
    };
    let train = rank(false);
    let held = rank(true);
    // A suite of only held-out tasks gets its box from them, once.
    let (tasks, holdout) = if train.is_empty() { (held, Vec::new()) } else { (train, held) };
    let sorted: Vec<f64> = tasks.iter().map(|r| r.1).collect();
    Some(SpreadPoint {
        epoch: e.epoch_num,
        min: *sorted.first()?,
        q1: drawn(quantile(&sorted, 0.25)?),
        median: drawn(quantile(&sorted, 0.5)?),
        q3: drawn(quantile(&sorted, 0.75)?),
        max: *sorted.last()?,
        tasks,
        holdout,
    })
}

/// The spread of the task losses of every finished epoch that has any.
pub fn spread_points(view: &SuiteEpochs) -> Vec<SpreadPoint> {
    let names = TaskNames::of(view);
    finished(&view.epochs).filter_map(|e| spread_point(e, &names)).collect()
}

/// One artifact event on the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct TimelineMark {
    pub epoch: i64,
    /// The epoch's place on the shared axis (an index into [`SuiteCharts::epochs`]).
    pub column: usize,
    /// Row of the artifact (an index into the rows).
    pub row: usize,
    pub artifact: String,
    pub rollback: bool,
    pub from: i64,
    pub to: i64,
    /// What the tooltip says, with a rollback's reason.
    pub label: String,
    /// A rollback's reason alone (` (held-out loss rose 0.0200 → 0.0354)`),
    /// empty for an update.
    pub why: String,
}

/// The timeline: rows are the artifacts that ever moved (in the order of
/// `artifacts`, then any others), marks are every event of a finished epoch.
pub fn timeline(epochs: &[EpochView], artifacts: &[String]) -> (Vec<String>, Vec<TimelineMark>) {
    let done: Vec<&EpochView> = finished(epochs).collect();
    let moved: Vec<&str> = done.iter().flat_map(|e| e.events.iter().map(ArtifactEvent::artifact)).collect();
    let mut rows: Vec<String> = artifacts.iter().filter(|a| moved.contains(&a.as_str())).cloned().collect();
    for a in moved {
        if !rows.iter().any(|r| r == a) {
            rows.push(a.to_string());
        }
    }
    let mut marks = Vec::new();
    for (column, e) in done.iter().enumerate() {
        for ev in &e.events {
            let (from, to, rollback) = match ev {
                ArtifactEvent::Update { from_version, to_version, .. } => (*from_version, *to_version, false),
                ArtifactEvent::Rollback { from_version, to_version, .. } => (*from_version, *to_version, true),
            };
            let why = rollback_why(ev);
            let row = rows.iter().position(|r| r == ev.artifact()).unwrap_or(0);
            marks.push(TimelineMark {
                epoch: e.epoch_num,
                column,
                row,
                artifact: ev.artifact().to_string(),
                rollback,
                from,
                to,
                label: transition_label(ev),
                why,
            });
        }
    }
    (rows, marks)
}

/// Everything the Charts screen draws, shaped here so the screen only styles
/// it: the finished epochs are the columns every chart shares, so hovering
/// one epoch in one chart shows the same epoch in the others.
#[derive(Debug, Clone, Serialize, TS)]
pub struct SuiteCharts {
    pub suite: SuiteItem,
    /// The finished epochs' numbers, in order: the shared x axis.
    pub epochs: Vec<i64>,
    /// One point per column.
    pub loss: Vec<LossPoint>,
    /// One box per column; `None` for an epoch that counted no task.
    pub spread: Vec<Option<SpreadPoint>>,
    /// The names the spread's [`Ranked`] entries point into.
    pub tasks: Vec<String>,
    /// The timeline's rows: the artifacts that moved.
    pub rows: Vec<String>,
    pub marks: Vec<TimelineMark>,
    /// A tree search measured these epochs (each one candidate: nothing
    /// changes per epoch; the Graph screen shows its tree).
    pub searched: bool,
}

/// Shapes a suite's epochs for the Charts screen.
pub fn suite_charts(view: SuiteEpochs) -> SuiteCharts {
    let loss = loss_points(&view.epochs);
    let names = TaskNames::of(&view);
    let spread = finished(&view.epochs).map(|e| spread_point(e, &names)).collect();
    let (rows, marks) = timeline(&view.epochs, &view.artifacts);
    let tasks = names.names;
    let searched =
        finished(&view.epochs).any(|e| e.note.as_deref().is_some_and(|n| n.starts_with(crate::domain::TREE_EPOCH)));
    SuiteCharts {
        epochs: loss.iter().map(|p| p.epoch).collect(),
        loss,
        spread,
        tasks,
        rows,
        marks,
        searched,
        suite: view.suite,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::outer::RollbackReason;
    use crate::service::types::{RunState, SuiteStatus, TaskInfo, TaskLoss, TaskType};

    #[test]
    fn drawn_numbers_keep_six_significant_digits_at_any_scale() {
        assert_eq!(drawn(0.430_440_429_222_882_17), 0.43044);
        assert_eq!(serde_json::to_string(&Ranked(3, drawn(2.0 / 3.0))).unwrap(), "[3,0.666667]");
        assert_eq!(drawn(1.234_567_89e-9), 1.234_57e-9);
        assert_eq!(drawn(98_765_432.1), 98_765_400.0);
        assert_eq!(drawn(0.0), 0.0);
        assert!(drawn(f64::NAN).is_nan());
    }

    fn update(artifact: &str, from: i64, to: i64) -> ArtifactEvent {
        ArtifactEvent::Update {
            artifact: artifact.into(),
            from_version: from,
            to_version: to,
            rationale: String::new(),
            expected_loss_reduction: None,
            confidence: None,
            learning_rate: None,
            details: Default::default(),
        }
    }

    fn suite(epochs: Vec<EpochView>) -> SuiteEpochs {
        let tasks = ["a", "b", "c", "h"]
            .iter()
            .map(|n| TaskInfo { name: n.to_string(), kind: TaskType::Command, holdout: *n == "h" })
            .collect();
        let suite = SuiteItem {
            id: 1,
            name: "s".into(),
            created_at: String::new(),
            epochs: 0,
            latest_mean_loss: None,
            status: SuiteStatus::Idle,
            tasks: 4,
            holdout_tasks: 1,
            suite_path: None,
            last_error: None,
            launch_id: None,
            last_launch_runs: None,
            model: None,
        };
        let n = epochs.len();
        let page = crate::service::types::EpochPage { offset: 0, limit: n as u32, total: n as i64 };
        SuiteEpochs { suite, tasks, artifacts: vec!["k".into()], epochs, page }
    }

    fn rollback(artifact: &str, from: i64, to: i64) -> ArtifactEvent {
        ArtifactEvent::Rollback {
            artifact: artifact.into(),
            from_version: from,
            to_version: to,
            mean_loss_prev: None,
            mean_loss_current: None,
            new_learning_rate: None,
            reason: None,
            holdout_mean_prev: None,
            holdout_mean_current: None,
            evaluations: None,
            noise: None,
            paired: None,
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
            transitions: events.iter().map(transition_label).collect(),
            events,
            note: None,
            model: None,
            tasks: tasks
                .iter()
                .map(|(t, l, h)| TaskLoss {
                    task: t.to_string(),
                    run_id: 0,
                    loss: *l,
                    status: RunState::Complete,
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

        let spread = spread_points(&suite(epochs.clone()));
        assert_eq!(spread.len(), 2);
        assert_eq!((spread[0].min, spread[0].max, spread[0].median), (0.4, 0.6, 0.5));
        assert_eq!(spread[0].holdout, [Ranked(3, 0.9)], "held-out tasks stay out of the box");
        assert_eq!((spread[1].q1, spread[1].median, spread[1].q3), (0.25, 0.3, 0.5));
        assert_eq!(spread[1].tasks, [Ranked(0, 0.2), Ranked(1, 0.3), Ranked(2, 0.7)], "by loss, named by index");

        let (rows, marks) = timeline(&epochs, &["k".to_string(), "still".to_string()]);
        assert_eq!(rows, ["k"], "only artifacts that moved get a row");
        assert_eq!(marks.iter().map(|m| (m.epoch, m.rollback)).collect::<Vec<_>>(), [(1, false), (2, true)]);
    }

    #[test]
    fn a_suite_of_only_held_out_tasks_still_gets_its_spread() {
        let epochs = vec![epoch(1, true, Some(0.5), &[("h1", 0.2, true), ("h2", 0.8, true)], vec![])];
        let spread = spread_points(&suite(epochs));
        assert_eq!((spread[0].min, spread[0].max, spread[0].tasks.len()), (0.2, 0.8, 2));
        assert!(spread[0].holdout.is_empty(), "the box holds them: not listed twice");
    }

    #[test]
    fn every_chart_shares_one_column_per_finished_epoch_even_one_without_tasks() {
        // Epoch 2 counted no task (all of its runs failed to start): the
        // spread has a hole there, not a shift of every later epoch.
        let epochs = vec![
            epoch(1, true, Some(0.5), &[("a", 0.4, false), ("b", 0.6, false)], vec![update("k", 0, 1)]),
            epoch(2, true, None, &[], vec![]),
            epoch(3, true, Some(0.3), &[("a", 0.2, false), ("b", 0.4, false)], vec![rollback("k", 1, 0)]),
            epoch(4, false, None, &[("a", 0.1, false)], vec![]),
        ];
        let charts = suite_charts(suite(epochs));
        assert_eq!(charts.epochs, [1, 2, 3]);
        assert_eq!(charts.loss.iter().map(|p| p.epoch).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(
            charts.spread.iter().map(|s| s.as_ref().map(|s| s.epoch)).collect::<Vec<_>>(),
            [Some(1), None, Some(3)]
        );
        assert_eq!(charts.marks.iter().map(|m| (m.epoch, m.column)).collect::<Vec<_>>(), [(1, 0), (3, 2)]);
        assert_eq!(charts.tasks, ["a", "b", "c", "h"], "the suite's tasks, in its order");
    }

    #[test]
    fn a_rollback_label_says_why_the_update_went() {
        let with = |reason| ArtifactEvent::Rollback {
            artifact: "knobs".into(),
            from_version: 3,
            to_version: 2,
            mean_loss_prev: Some(0.4),
            mean_loss_current: Some(0.5),
            new_learning_rate: Some(0.25),
            reason,
            holdout_mean_prev: Some(0.31),
            holdout_mean_current: Some(0.38),
            evaluations: None,
            noise: None,
            paired: None,
        };
        let label = |reason| transition_label(&with(reason));
        assert_eq!(label(Some(RollbackReason::Holdout)), "rollback knobs v3→v2 (held-out loss rose 0.3100 → 0.3800)");
        assert_eq!(label(Some(RollbackReason::Training)), "rollback knobs v3→v2 (training loss rose 0.4000 → 0.5000)");
        assert_eq!(label(Some(RollbackReason::Noise)), "rollback knobs v3→v2 (the gain was within the noise)");
        assert_eq!(label(None), "rollback knobs v3→v2", "an epoch recorded before reasons were");
    }
}
