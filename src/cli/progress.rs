//! Progress on the terminal, rendered from bus events: a bar for epochs, a bar
//! for the runs of the current epoch, and one line per finished epoch.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::bus::{Bus, Event};

/// Starts rendering; the task ends when the bus closes.
pub fn spawn(bus: &Bus, show: bool, epochs: u32, tasks: usize) -> tokio::task::JoinHandle<()> {
    let mut rx = bus.subscribe();
    tokio::spawn(async move {
        let multi = MultiProgress::with_draw_target(if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        let style = ProgressStyle::with_template("{prefix:>7} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let epoch_bar = multi.add(ProgressBar::new(u64::from(epochs)).with_style(style.clone()).with_prefix("epochs"));
        let run_bar = multi.add(ProgressBar::new(tasks as u64).with_style(style).with_prefix("runs"));
        let mut updates: Vec<String> = Vec::new();
        // The plan (first epoch, epochs), until the first epoch starts: a run that
        // continues a stopped plan has only the epochs from there left.
        let mut plan: Option<(i64, u32)> = None;
        while let Some(env) = rx.recv().await {
            match env.event {
                Event::EpochStarted { epoch_num, tasks_total, tasks_done, resumed, changed, .. } => {
                    if let Some((first, n)) = plan.take() {
                        let left = crate::outer::epochs_left(first, n, epoch_num);
                        epoch_bar.set_length(u64::try_from(left).unwrap_or(1));
                    }
                    run_bar.set_length(tasks_total as u64);
                    run_bar.set_position(tasks_done as u64);
                    let note = if resumed { format!(" (resumed, {tasks_done} done)") } else { String::new() };
                    for task in changed.iter().filter(|_| show) {
                        multi.suspend(|| {
                            eprintln!(
                                "epoch {epoch_num}: the task `{task}` changed in the suite file since its run in this epoch; that run is set aside and the task runs again"
                            )
                        });
                    }
                    epoch_bar.set_message(format!("epoch {epoch_num}{note}"));
                    updates.clear();
                }
                Event::SuiteStarted { continued, first_epoch, epochs, optimizer, .. } => {
                    let last = first_epoch + i64::from(epochs) - 1;
                    plan = Some((first_epoch, epochs));
                    if continued && show {
                        let span = if optimizer == crate::outer::OptimizerKind::Tree {
                            format!("{} from epoch {first_epoch} on", crate::counted(epochs, "evaluation"))
                        } else {
                            format!("epochs {first_epoch}–{last}")
                        };
                        multi.suspend(|| {
                            eprintln!(
                                "continuing the run that stopped before its plan ({span}) was done; other settings start a new plan"
                            )
                        });
                    }
                }
                Event::RunStarted { task, .. } => run_bar.set_message(task),
                // An agent task's iteration: where the trajectory stands.
                // Iteration 0: the untouched workspace, before the first execution.
                Event::BaselineMeasured { summary, .. } => run_bar.set_message(format!("#0 baseline: {summary}")),
                // Executions are iterations 1, 2, … (the baseline is 0).
                Event::IterationCompleted { sequence, strategy, level, attractor, .. } => {
                    let n = u64::from(sequence) + 1;
                    run_bar.set_message(format!("#{n} {strategy}: level {level:.2}, {attractor}"));
                }
                // The ASO coordinator changed an agent trajectory's course.
                Event::SupervisorDirective { trajectory_id, sequence, action, source, reasoning, applied, .. }
                    if show && applied.is_some() =>
                {
                    let applied = applied.unwrap_or_default();
                    multi.suspend(|| {
                        eprintln!(
                            "  supervisor ({source}) {trajectory_id} #{sequence}: {action} → {applied}: {reasoning}"
                        )
                    });
                }
                // An optimizer's update waits for a person (the approval gate).
                Event::InterventionRaised { intervention_id, subject, kind, waits, .. }
                    if show && kind == crate::domain::InterventionKind::ArtifactUpdate =>
                {
                    let meanwhile = if waits { "the run waits" } else { "the run goes on with the current version" };
                    multi.suspend(|| {
                        eprintln!("  approval #{intervention_id}: {subject} ({meanwhile})");
                        eprintln!(
                            "    attractor answer {intervention_id} approve [--content FILE] | reject \"why\"  (or in the app's Inbox)"
                        );
                    });
                }
                // A trajectory waits for a person: say how to answer.
                Event::InterventionRaised { intervention_id, subject, waits: true, .. } if show => {
                    multi.suspend(|| {
                        eprintln!("  waiting for an answer to #{intervention_id}: {subject}");
                        eprintln!(
                            "    attractor answer {intervention_id} approve|reject|hint \"…\"  (from another terminal)"
                        );
                    });
                }
                // A question whose answer steers the task's later runs: the
                // run does not wait for it.
                Event::InterventionRaised { intervention_id, subject, waits: false, .. } if show => {
                    multi.suspend(|| {
                        eprintln!("  question #{intervention_id} for a person (the run goes on): {subject}");
                        eprintln!("    attractor answer {intervention_id} approve|reject|hint \"…\" steers the task's next runs");
                    });
                }
                // A notice: told, not waited on.
                Event::InterventionPointReached { intervention_id: Some(id), mode, subject, .. }
                    if show && mode == crate::domain::InterventionMode::Notify =>
                {
                    multi.suspend(|| eprintln!("  notice #{id}: {subject}  (attractor dismiss {id})"));
                }
                Event::RunFinished { task, status, loss, error, .. } => {
                    run_bar.inc(1);
                    if show && let Some(error) = error.filter(|_| status != crate::domain::RunState::Complete) {
                        let loss = loss.map_or_else(|| "-".into(), |l| format!("{l:.4}"));
                        multi.suspend(|| eprintln!("  {task}: {status} (loss {loss}): {}", first_line(&error)));
                    }
                }
                Event::AuditAlert { kind, message, trajectory_id, .. } => {
                    if show {
                        multi.suspend(|| eprintln!("  auditor ({kind}, trajectory {trajectory_id}): {message}"));
                    }
                }
                Event::ArtifactUpdated { artifact, from_version, to_version, .. } => {
                    updates.push(format!("update {artifact} v{from_version}→v{to_version}"));
                }
                Event::ArtifactRolledBack { artifact, from_version, to_version, new_learning_rate, why, .. } => {
                    updates
                        .push(format!("rollback {artifact} v{from_version}→v{to_version}{why}, η={new_learning_rate}"));
                }
                Event::EpochFinished { epoch_num, mean_loss, holdout_mean_loss, note, model, .. } => {
                    epoch_bar.inc(1);
                    if show {
                        let mean = mean_loss.map_or_else(|| "-".into(), |m| format!("{m:.4}"));
                        let held = holdout_mean_loss.map_or_else(String::new, |h| format!(", held-out {h:.4}"));
                        let moves = match (updates.is_empty(), &note) {
                            (true, Some(why)) => format!("no change ({why})"),
                            (true, None) => "no change".to_string(),
                            (false, _) => updates.join("; "),
                        };
                        let cost =
                            model.filter(|m| m.calls > 0).map_or_else(String::new, |m| format!("  [{}]", m.summary()));
                        multi.suspend(|| println!("epoch {epoch_num:>3}  mean loss {mean}{held}  {moves}{cost}"));
                    }
                }
                _ => {}
            }
        }
        run_bar.finish_and_clear();
        epoch_bar.finish_and_clear();
    })
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}
