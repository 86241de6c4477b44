//! The auditor (seed 003 R6): a read-only observer of the bus that raises
//! alerts a person should see, without ever steering anything itself.
//!
//! It watches agent trajectories as the engine reports them and says when
//! - new approaches keep being demanded without progress (break_symmetry
//!   three times in a row with the loss not falling: thrashing);
//! - a trajectory spends far more tokens than its budget estimated;
//! - a trajectory runs far longer than its finished peers in the suite.
//!
//! Each alert is published once per trajectory and kind as an
//! [`Event::AuditAlert`], so the store keeps it and the CLI and the app show
//! it like any other event. The rules are pure ([`Auditor::observe`]) and
//! tested without a bus; [`spawn`] wires them to one.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::bus::{Bus, Event};

/// When the auditor speaks up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditConfig {
    /// break_symmetry directives in a row, without the loss falling, that count as thrashing.
    pub thrashing_repeats: u32,
    /// Tokens spent over the trajectory's token budget, as a multiple, that count as runaway.
    pub token_overrun: f64,
    /// Iterations over the median of the suite's finished trajectories, as a multiple, that count as stuck.
    pub stuck_factor: f64,
    /// Finished peers needed before a trajectory can be called stuck.
    pub min_peers: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig { thrashing_repeats: 3, token_overrun: 1.5, stuck_factor: 2.0, min_peers: 3 }
    }
}

#[derive(Debug, Default)]
struct Watched {
    suite_id: i64,
    run_id: i64,
    max_tokens: u64,
    tokens: u64,
    iterations: u32,
    /// (directive, loss) of each iteration, in order.
    rounds: Vec<(String, f64)>,
}

/// The auditor's memory of the trajectories it has seen.
#[derive(Debug, Default)]
pub struct Auditor {
    config: AuditConfig,
    live: BTreeMap<String, Watched>,
    /// Iterations of the finished trajectories, per suite.
    finished: BTreeMap<i64, Vec<u32>>,
    raised: BTreeSet<(String, &'static str)>,
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
            Event::IterationCompleted { suite_id, run_id, trajectory_id, directive, loss, tokens, .. } => {
                let w = self.live.entry(trajectory_id.clone()).or_default();
                (w.suite_id, w.run_id) = (*suite_id, *run_id);
                w.tokens += tokens;
                w.iterations += 1;
                w.rounds.push((directive.clone(), *loss));
                let w = &self.live[trajectory_id];
                let mut found: Vec<(&'static str, String)> = Vec::new();
                if let Some(message) = thrashing(&w.rounds, self.config.thrashing_repeats) {
                    found.push(("thrashing", message));
                }
                if w.max_tokens > 0 && w.tokens as f64 > self.config.token_overrun * w.max_tokens as f64 {
                    found.push((
                        "token_overrun",
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
                            "stuck",
                            format!(
                                "{} iterations, against a median of {median} for the suite's {} finished trajectories: it may be stuck",
                                w.iterations,
                                peers.len()
                            ),
                        ));
                    }
                }
                for (kind, message) in found {
                    alerts.push(self.alert(trajectory_id, kind, message));
                }
            }
            Event::TrajectoryConverged { suite_id, trajectory_id, iterations, .. } => {
                self.live.remove(trajectory_id);
                self.finished.entry(*suite_id).or_default().push(*iterations);
            }
            Event::TrajectoryExhausted { trajectory_id, .. } | Event::TrajectoryTrapped { trajectory_id, .. } => {
                self.live.remove(trajectory_id);
            }
            _ => {}
        }
        alerts.into_iter().flatten().collect()
    }

    fn alert(&mut self, trajectory_id: &str, kind: &'static str, message: String) -> Option<Event> {
        if !self.raised.insert((trajectory_id.to_string(), kind)) {
            return None;
        }
        let w = self.live.get(trajectory_id)?;
        Some(Event::AuditAlert {
            suite_id: w.suite_id,
            run_id: w.run_id,
            trajectory_id: trajectory_id.to_string(),
            kind: kind.to_string(),
            message,
        })
    }
}

/// `repeats` break_symmetry rounds in a row at the end, the loss no lower
/// than where they began.
fn thrashing(rounds: &[(String, f64)], repeats: u32) -> Option<String> {
    let run = rounds.iter().rev().take_while(|(d, _)| d == "break_symmetry").count();
    if run < repeats.max(2) as usize {
        return None;
    }
    let (from, to) = (rounds[rounds.len() - run].1, rounds[rounds.len() - 1].1);
    (to >= from).then(|| {
        format!(
            "{run} break_symmetry directives in a row without the loss falling ({from:.3} → {to:.3}): new approaches are not helping; the task may need a hint"
        )
    })
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
            for alert in auditor.observe(&envelope.event) {
                tracing::warn!(?alert, "auditor alert");
                out.publish(alert);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            basin: "moderate".into(),
        }
    }

    fn iteration(id: &str, directive: &str, loss: f64, tokens: u64) -> Event {
        Event::IterationCompleted {
            suite_id: 1,
            run_id: 7,
            trajectory_id: id.into(),
            sequence: 0,
            strategy: "reframe".into(),
            level: 0.2,
            delta: None,
            attractor: "plateau".into(),
            directive: directive.into(),
            loss,
            tokens,
            budget_remaining: 0.5,
            loop_control: "continue".into(),
        }
    }

    fn kinds(alerts: &[Event]) -> Vec<String> {
        alerts
            .iter()
            .map(|a| match a {
                Event::AuditAlert { kind, .. } => kind.clone(),
                _ => "?".into(),
            })
            .collect()
    }

    #[test]
    fn three_break_symmetry_rounds_without_the_loss_falling_is_thrashing_said_once() {
        let mut a = Auditor::new(AuditConfig::default());
        a.observe(&started("t1", 0));
        assert!(a.observe(&iteration("t1", "break_symmetry", 0.6, 10)).is_empty());
        assert!(a.observe(&iteration("t1", "break_symmetry", 0.5, 10)).is_empty());
        let alerts = a.observe(&iteration("t1", "break_symmetry", 0.6, 10));
        assert_eq!(kinds(&alerts), vec!["thrashing"]);
        assert!(a.observe(&iteration("t1", "break_symmetry", 0.7, 10)).is_empty(), "said once per trajectory");
    }

    #[test]
    fn break_symmetry_that_makes_progress_is_not_thrashing() {
        let mut a = Auditor::new(AuditConfig::default());
        for loss in [0.6, 0.5, 0.4] {
            assert!(a.observe(&iteration("t1", "break_symmetry", loss, 10)).is_empty());
        }
        assert!(a.observe(&iteration("t1", "refine", 0.9, 10)).is_empty());
    }

    #[test]
    fn tokens_far_over_the_budget_raise_an_overrun() {
        let mut a = Auditor::new(AuditConfig::default());
        a.observe(&started("t1", 1000));
        assert!(a.observe(&iteration("t1", "refine", 0.5, 1400)).is_empty(), "1.4× is within 1.5×");
        let alerts = a.observe(&iteration("t1", "refine", 0.4, 200));
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
            raised.extend(kinds(&a.observe(&iteration("slow", "refine", 0.5 - 0.01 * f64::from(k), 10))));
        }
        assert_eq!(raised, vec!["stuck"], "over 2 × the median of 4 iterations");
    }

    #[tokio::test]
    async fn the_spawned_auditor_publishes_its_alerts_on_the_bus() {
        let bus = Bus::new();
        let mut rx = bus.subscribe();
        let handle = spawn(&bus, AuditConfig { thrashing_repeats: 2, ..AuditConfig::default() });
        bus.publish(iteration("t1", "break_symmetry", 0.5, 1));
        bus.publish(iteration("t1", "break_symmetry", 0.5, 1));
        let mut seen = Vec::new();
        while let Ok(Some(env)) = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv()).await {
            if let Event::AuditAlert { kind, .. } = &env.event {
                seen.push(kind.clone());
                break;
            }
        }
        bus.close();
        let _ = handle.await;
        assert_eq!(seen, vec!["thrashing"]);
    }
}
