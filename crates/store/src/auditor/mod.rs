//! The auditor (seed 003 R6): a read-only observer of the bus that raises
//! alerts a person should see, without ever steering anything itself.
//!
//! It watches agent trajectories as the engine reports them and says when
//! - new approaches keep being demanded without progress: thrashing,
//!   break_symmetry again and again without the distance D to the intent
//!   falling. The engine judges this on D, which only it sees, and carries
//!   its verdict on every [`Event::IterationCompleted`]; the auditor raises
//!   the alert from that verdict instead of guessing from the loss L (which
//!   also moves with the resource cost Ω, and so would hide a flat D);
//! - a trajectory spends far more tokens than its budget estimated;
//! - a trajectory runs far longer than its finished peers in the suite;
//! - a command of a trajectory (the external agent, an overseer) left a
//!   process running behind it ([`Event::ProcessLeftRunning`]: the process
//!   runner found and killed it).
//!
//! Each alert is published once per trajectory and kind (a left-running
//! process once per trajectory and command) as an [`Event::AuditAlert`], so
//! the store keeps it and the CLI and the app show it like any other event.
//! The rules are pure ([`Auditor::observe`]) and tested without a bus;
//! [`spawn`] wires them to one.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::bus::{Bus, Event};
use crate::domain::{AuditKind, ProcessSource};

/// When the auditor speaks up. (How many break_symmetry rounds make
/// thrashing is the engine's `ggs.thrashing_repeats`: the engine judges it.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditConfig {
    /// Tokens spent over the trajectory's token budget, as a multiple, that count as runaway.
    pub token_overrun: f64,
    /// Iterations over the median of the suite's finished trajectories, as a multiple, that count as stuck.
    pub stuck_factor: f64,
    /// Finished peers needed before a trajectory can be called stuck.
    pub min_peers: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig { token_overrun: 1.5, stuck_factor: 2.0, min_peers: 3 }
    }
}

#[derive(Debug, Default)]
struct Watched {
    suite_id: i64,
    run_id: i64,
    max_tokens: u64,
    tokens: u64,
    iterations: u32,
}

/// The auditor's memory of the trajectories it has seen.
#[derive(Debug, Default)]
pub struct Auditor {
    config: AuditConfig,
    live: BTreeMap<String, Watched>,
    /// Iterations of the finished trajectories, per suite.
    finished: BTreeMap<i64, Vec<u32>>,
    /// (trajectory, what was raised): a kind, or a kind and a command.
    raised: BTreeSet<(String, String)>,
}

impl Auditor {
    pub fn new(config: AuditConfig) -> Self {
        Auditor { config, ..Auditor::default() }
    }

    /// Takes one event; returns the alerts it gives rise to (each at most
    /// once per trajectory and kind).
    pub fn observe(&mut self, event: &Event) -> Vec<Event> {
        let mut alerts = Vec::new();
        match event {
            Event::TrajectoryStarted { suite_id, run_id, trajectory_id, max_tokens, .. } => {
                let w = self.live.entry(trajectory_id.clone()).or_default();
                (w.suite_id, w.run_id, w.max_tokens) = (*suite_id, *run_id, *max_tokens);
            }
            Event::IterationCompleted { suite_id, run_id, trajectory_id, tokens, thrashing, .. } => {
                let w = self.live.entry(trajectory_id.clone()).or_default();
                (w.suite_id, w.run_id) = (*suite_id, *run_id);
                w.tokens += tokens;
                w.iterations += 1;
                let w = &self.live[trajectory_id];
                let mut found: Vec<(AuditKind, String)> = Vec::new();
                if let Some(verdict) = thrashing {
                    found.push((AuditKind::Thrashing, verdict.message.clone()));
                }
                if w.max_tokens > 0 && w.tokens as f64 > self.config.token_overrun * w.max_tokens as f64 {
                    found.push((
                        AuditKind::TokenOverrun,
                        format!(
                            "{} tokens spent against a budget of {} ({:.1}×): check the model's replies and the task's size",
                            w.tokens,
                            w.max_tokens,
                            w.tokens as f64 / w.max_tokens as f64
                        ),
                    ));
                }
                let peers = self.finished.get(suite_id).map(Vec::as_slice).unwrap_or_default();
                if peers.len() >= self.config.min_peers.max(1) {
                    let median = median(peers);
                    if f64::from(w.iterations) > self.config.stuck_factor * median {
                        found.push((
                            AuditKind::Stuck,
                            format!(
                                "{} iterations, against a median of {median} for the suite's {} finished trajectories: it may be stuck",
                                w.iterations,
                                peers.len()
                            ),
                        ));
                    }
                }
                for (kind, message) in found {
                    alerts.push(self.alert(
                        *suite_id,
                        *run_id,
                        trajectory_id,
                        kind,
                        kind.as_str().to_string(),
                        message,
                    ));
                }
            }
            Event::ProcessLeftRunning {
                suite_id,
                run_id,
                trajectory_id,
                sequence,
                source,
                name,
                command,
                processes,
                ..
            } => {
                let listed: Vec<String> = processes.iter().map(|p| format!("pid {} `{}`", p.pid, p.command)).collect();
                let what = if *source == ProcessSource::Overseer {
                    format!("the overseer `{name}`")
                } else {
                    format!("the {name} executor")
                };
                let message = format!(
                    "{what} (`{command}`, iteration {sequence}) left {} running after it ended: {}; \
                     {} killed. A command should wait for or stop the background jobs it starts.",
                    crate::counted_as(processes.len(), "process", "processes"),
                    listed.join(", "),
                    if processes.len() == 1 { "it was" } else { "they were" }
                );
                let key = format!("zombie_process:{source}:{command}");
                alerts.push(self.alert(*suite_id, *run_id, trajectory_id, AuditKind::ZombieProcess, key, message));
            }
            Event::TrajectoryConverged { suite_id, trajectory_id, iterations, .. } => {
                self.live.remove(trajectory_id);
                self.finished.entry(*suite_id).or_default().push(*iterations);
            }
            Event::TrajectoryExhausted { trajectory_id, .. }
            | Event::TrajectoryTrapped { trajectory_id, .. }
            | Event::TrajectorySuperseded { trajectory_id, .. } => {
                self.live.remove(trajectory_id);
            }
            _ => {}
        }
        alerts.into_iter().flatten().collect()
    }

    /// The alert, unless `key` was already raised for this trajectory.
    fn alert(
        &mut self,
        suite_id: i64,
        run_id: i64,
        trajectory_id: &str,
        kind: AuditKind,
        key: String,
        message: String,
    ) -> Option<Event> {
        if !self.raised.insert((trajectory_id.to_string(), key)) {
            return None;
        }
        Some(Event::AuditAlert { suite_id, run_id, trajectory_id: trajectory_id.to_string(), kind, message })
    }
}

fn median(xs: &[u32]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 { f64::from(v[n / 2]) } else { (f64::from(v[n / 2 - 1]) + f64::from(v[n / 2])) / 2.0 }
}

/// Runs an auditor on `bus` until the bus closes; its alerts go back onto
/// the bus.
pub fn spawn(bus: &Bus, config: AuditConfig) -> tokio::task::JoinHandle<()> {
    let mut rx = bus.subscribe();
    let out = bus.clone();
    tokio::spawn(async move {
        let mut auditor = Auditor::new(config);
        while let Some(envelope) = rx.recv().await {
            // Another process's run was audited there.
            if envelope.replayed {
                continue;
            }
            for alert in auditor.observe(&envelope.event) {
                // The alert goes onto the bus, and what shows the run (the
                // CLI's progress, the app) tells it once, as a sentence; a
                // log line here would say it a second time.
                tracing::debug!(?alert, "auditor alert");
                out.publish(alert);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ThrashingAlert;
    use crate::domain::convergence::{AttractorKind, BasinClassification, Directive, LoopControlKind, StrategyKind};
    use crate::process::LeftProcess;

    fn started(id: &str, max_tokens: u64) -> Event {
        Event::TrajectoryStarted {
            suite_id: 1,
            run_id: 7,
            trajectory_id: id.into(),
            task: "t".into(),
            resumed: false,
            max_tokens,
            max_iterations: 10,
            max_wall_time_ms: 60_000,
            basin: Some(BasinClassification::Moderate),
        }
    }

    /// An iteration with the engine's verdict on thrashing (`Some` when the
    /// engine saw break_symmetry repeated without D falling).
    fn judged(id: &str, directive: Directive, loss: f64, tokens: u64, thrashing: Option<ThrashingAlert>) -> Event {
        Event::IterationCompleted {
            suite_id: 1,
            run_id: 7,
            trajectory_id: id.into(),
            sequence: 0,
            strategy: StrategyKind::Reframe,
            level: 0.2,
            delta: None,
            attractor: AttractorKind::Plateau,
            directive,
            loss,
            tokens,
            budget_remaining: 0.5,
            loop_control: LoopControlKind::Continue,
            thrashing,
        }
    }

    fn iteration(id: &str, directive: Directive, loss: f64, tokens: u64) -> Event {
        judged(id, directive, loss, tokens, None)
    }

    fn verdict(repeats: u32) -> ThrashingAlert {
        ThrashingAlert {
            repeats,
            distance_from: 1.0,
            distance_to: 1.0,
            message: format!(
                "{repeats} break_symmetry directives in a row without the distance falling (D 1.00 → 1.00)"
            ),
        }
    }

    fn kinds(alerts: &[Event]) -> Vec<String> {
        alerts
            .iter()
            .map(|a| match a {
                Event::AuditAlert { kind, .. } => kind.as_str().to_string(),
                _ => "?".into(),
            })
            .collect()
    }

    #[test]
    fn the_engines_thrashing_verdict_raises_the_alert_once_with_its_message() {
        let mut a = Auditor::new(AuditConfig::default());
        a.observe(&started("t1", 0));
        assert!(a.observe(&iteration("t1", Directive::BreakSymmetry, 0.6, 10)).is_empty());
        assert!(a.observe(&iteration("t1", Directive::BreakSymmetry, 0.7, 10)).is_empty());
        let alerts = a.observe(&judged("t1", Directive::BreakSymmetry, 0.8, 10, Some(verdict(3))));
        assert_eq!(kinds(&alerts), vec!["thrashing"]);
        let Event::AuditAlert { message, run_id, suite_id, .. } = &alerts[0] else { unreachable!() };
        assert!(message.contains("without the distance falling"), "{message}");
        assert_eq!((*suite_id, *run_id), (1, 7));
        let again = a.observe(&judged("t1", Directive::BreakSymmetry, 0.9, 10, Some(verdict(4))));
        assert!(again.is_empty(), "said once per trajectory");
        // Another trajectory gets its own.
        assert_eq!(
            kinds(&a.observe(&judged("t2", Directive::BreakSymmetry, 0.5, 1, Some(verdict(3))))),
            vec!["thrashing"]
        );
    }

    #[test]
    fn without_the_engines_verdict_no_run_of_break_symmetry_is_thrashing() {
        // The loss rises through five break_symmetry rounds (Ω grows), but the
        // engine, which sees D, did not call it thrashing: neither does the auditor.
        let mut a = Auditor::new(AuditConfig::default());
        for loss in [0.5, 0.6, 0.7, 0.8, 0.9] {
            assert!(a.observe(&iteration("t1", Directive::BreakSymmetry, loss, 10)).is_empty());
        }
    }

    #[test]
    fn tokens_far_over_the_budget_raise_an_overrun() {
        let mut a = Auditor::new(AuditConfig::default());
        a.observe(&started("t1", 1000));
        assert!(a.observe(&iteration("t1", Directive::Refine, 0.5, 1400)).is_empty(), "1.4× is within 1.5×");
        let alerts = a.observe(&iteration("t1", Directive::Refine, 0.4, 200));
        assert_eq!(kinds(&alerts), vec!["token_overrun"]);
    }

    #[test]
    fn a_trajectory_far_longer_than_its_finished_peers_is_stuck() {
        let mut a = Auditor::new(AuditConfig::default());
        for (i, n) in [3u32, 4, 5].iter().enumerate() {
            a.observe(&Event::TrajectoryConverged {
                suite_id: 1,
                run_id: i as i64,
                trajectory_id: format!("p{i}"),
                iterations: *n,
                total_tokens: 0,
                level: 1.0,
                partial: false,
            });
        }
        let mut raised = Vec::new();
        for k in 0..9 {
            raised.extend(kinds(&a.observe(&iteration("slow", Directive::Refine, 0.5 - 0.01 * f64::from(k), 10))));
        }
        assert_eq!(raised, vec!["stuck"], "over 2 × the median of 4 iterations");
    }

    fn left(command: &str, pid: i32) -> Event {
        Event::ProcessLeftRunning {
            suite_id: 3,
            run_id: 9,
            trajectory_id: "t1".into(),
            sequence: 2,
            source: ProcessSource::Overseer,
            name: "tests".into(),
            command: command.into(),
            processes: vec![LeftProcess { pid, command: "sleep 30".into() }],
        }
    }

    #[test]
    fn a_process_left_running_is_a_zombie_alert_once_per_command() {
        let mut a = Auditor::new(AuditConfig::default());
        let alerts = a.observe(&left("./run-tests.sh", 4242));
        assert_eq!(kinds(&alerts), vec!["zombie_process"]);
        let Event::AuditAlert { message, suite_id, run_id, trajectory_id, .. } = &alerts[0] else { unreachable!() };
        assert_eq!((*suite_id, *run_id, trajectory_id.as_str()), (3, 9, "t1"));
        for part in ["the overseer `tests`", "./run-tests.sh", "pid 4242 `sleep 30`", "killed"] {
            assert!(message.contains(part), "{part} missing: {message}");
        }
        assert!(a.observe(&left("./run-tests.sh", 4300)).is_empty(), "the same command is reported once");
        assert_eq!(kinds(&a.observe(&left("./lint.sh", 4400))), vec!["zombie_process"]);
    }

    #[tokio::test]
    async fn the_spawned_auditor_publishes_its_alerts_on_the_bus() {
        let bus = Bus::new();
        let mut rx = bus.subscribe();
        let handle = spawn(&bus, AuditConfig::default());
        bus.publish(iteration("t1", Directive::BreakSymmetry, 0.5, 1));
        bus.publish(judged("t1", Directive::BreakSymmetry, 0.5, 1, Some(verdict(2))));
        let mut seen = Vec::new();
        while let Ok(Some(env)) = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv()).await {
            if let Event::AuditAlert { kind, .. } = &env.event {
                seen.push(kind.clone());
                break;
            }
        }
        bus.close();
        let _ = handle.await;
        assert_eq!(seen, vec![AuditKind::Thrashing]);
    }
}
