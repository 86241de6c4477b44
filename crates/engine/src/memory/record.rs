//! What one finished trajectory teaches: a [`ConvergenceMemory`].
//!
//! Seed 002 §8.1 keeps, for a success, the task's category, the iterations,
//! the strategy sequence that made progress, the attractor path and the
//! overseer signals that drove convergence; for a failure, the terminal
//! attractor, the strategies tried and the gaps that persisted. Both are
//! read off the engine's trajectory here: its strategy log says what was
//! tried under which attractor and what delta it achieved, its observations
//! say what the overseers measured. On top of the seed's list a memory
//! keeps what escaped each trap (the strategy after which a limit cycle, a
//! plateau or a divergence gave way), the failure's causes in words, the
//! tools the goal gradient blocked, and the task's signature.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::signature;
use crate::engine::{AttractorKind, StrategyKind, Trajectory};
use crate::overseer::OverseerSignals;

/// Entries kept at most in one list of a memory.
const MAX_ITEMS: usize = 8;

/// Whether the trajectory got there.
pub use crate::domain::MemoryOutcome as Outcome;

/// A strategy after which the trajectory left a trap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Escape {
    /// limit_cycle, plateau or divergent.
    pub from: AttractorKind,
    pub strategy: StrategyKind,
    /// What the classification became after it.
    pub to: AttractorKind,
}

/// The structured memory of one trajectory (stored as `details_json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvergenceMemory {
    pub outcome: Outcome,
    pub category: String,
    pub task_name: String,
    /// The task text's keywords ([`signature::signature`]).
    pub signature: Vec<String>,
    pub complexity: Option<String>,
    /// The terminal status: converged, accepted_partial, exhausted, abandoned, trapped, failed.
    pub status: String,
    pub iterations: u32,
    pub tokens_used: u64,
    pub final_level: f64,
    /// Every strategy executed, in order.
    pub strategies: Vec<StrategyKind>,
    /// The strategies whose attempt made progress (a positive convergence
    /// delta), in order: the seed's effective strategy sequence.
    pub effective_strategies: Vec<StrategyKind>,
    /// Strategies that were tried and never made progress.
    pub unproductive_strategies: Vec<StrategyKind>,
    /// The attractor classifications met, in order, repeats collapsed.
    pub attractor_path: Vec<AttractorKind>,
    pub escapes: Vec<Escape>,
    /// Overseer signals that moved toward the goal, and after which strategy
    /// ("tests 6→10 of 10 after focused_repair (observation 1)").
    pub decisive_signals: Vec<String>,
    pub terminal_attractor: AttractorKind,
    /// Why it failed, in words (empty for a success).
    pub failure_causes: Vec<String>,
    /// What was still failing at the end.
    pub persistent_gaps: Vec<String>,
    /// Tools the goal gradient blocked (approaches that failed).
    pub blocked_tools: Vec<String>,
    pub fresh_starts: u32,
}

/// How a trajectory ended, as the agent driver knows it.
#[derive(Debug, Clone)]
pub struct Ending<'a> {
    pub trajectory: &'a Trajectory,
    pub category: &'a str,
    pub task_name: &'a str,
    /// The task's text as given (what the signature is taken from).
    pub description: &'a str,
    pub complexity: Option<String>,
    /// The terminal status as stored with the trajectory.
    pub status: &'a str,
    pub final_level: f64,
    /// Criteria the best result still fails (a partial result's `remaining`).
    pub remaining: &'a [String],
    /// The error the run stopped on, if it did.
    pub error: Option<&'a str>,
}

impl ConvergenceMemory {
    /// Reads the memory off a finished trajectory.
    pub fn of(e: &Ending<'_>) -> ConvergenceMemory {
        let t = e.trajectory;
        let outcome = Outcome::of_status(e.status);
        let mut log = t.strategy_log.clone();
        log.sort_by_key(|s| s.observation_sequence);
        let terminal = t.attractor_state.kind();

        let strategies: Vec<StrategyKind> = log.iter().map(|s| s.strategy_kind).collect();
        let effective_strategies: Vec<StrategyKind> = log
            .iter()
            .filter(|s| s.convergence_delta_achieved.is_some_and(|d| d > 0.0))
            .map(|s| s.strategy_kind)
            .collect();
        let productive: BTreeSet<StrategyKind> = effective_strategies.iter().copied().collect();
        let unproductive_strategies = distinct(
            log.iter()
                .filter(|s| s.convergence_delta_achieved.is_some() && !productive.contains(&s.strategy_kind))
                .map(|s| s.strategy_kind),
        );

        // The classification each strategy was chosen under, then where the last one left it.
        let mut path: Vec<AttractorKind> = log.iter().map(|s| s.attractor_at_selection).collect();
        path.push(terminal);
        path.dedup();
        let escapes: Vec<Escape> = log
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let from = s.attractor_at_selection;
                let to = log.get(i + 1).map_or(terminal, |n| n.attractor_at_selection);
                let trap =
                    matches!(from, AttractorKind::LimitCycle | AttractorKind::Plateau | AttractorKind::Divergent);
                (trap && to != from).then_some(Escape { from, strategy: s.strategy_kind, to })
            })
            .take(MAX_ITEMS)
            .collect();

        let mut decisive_signals = Vec::new();
        for pair in t.observations.windows(2) {
            let (prev, cur) = (&pair[0], &pair[1]);
            for change in signal_gains(&prev.overseer_signals, &cur.overseer_signals) {
                decisive_signals.push(format!("{change} after {} (observation {})", cur.strategy_used, cur.sequence));
            }
        }
        decisive_signals.truncate(MAX_ITEMS);

        let mut persistent_gaps: Vec<String> = e.remaining.iter().map(|r| r.trim().to_string()).collect();
        if (outcome == Outcome::Failure || e.status == "accepted_partial")
            && let Some(last) = t.observations.last()
        {
            persistent_gaps.extend(open_gaps(&last.overseer_signals));
        }
        let persistent_gaps =
            distinct(persistent_gaps.into_iter().filter(|g| !g.is_empty())).into_iter().take(MAX_ITEMS).collect();

        let mut failure_causes = Vec::new();
        if outcome == Outcome::Failure {
            failure_causes.push(match e.status {
                "trapped" => {
                    let period = match &t.attractor_state.classification {
                        crate::engine::AttractorType::LimitCycle { period, .. } => *period,
                        _ => 0,
                    };
                    format!("trapped in a cycle of {period} states with every escape strategy tried")
                }
                "exhausted" => "the budget ran out below the partial threshold".to_string(),
                "abandoned" => "the goal gradient abandoned it under budget pressure".to_string(),
                other => match e.error {
                    Some(err) => format!("the run stopped on an error: {}", err.lines().next().unwrap_or(err)),
                    None => format!("it ended {other}"),
                },
            });
            if !matches!(terminal, AttractorKind::FixedPoint | AttractorKind::Indeterminate) {
                failure_causes.push(format!("it ended in a {terminal} attractor"));
            }
        }

        ConvergenceMemory {
            outcome,
            category: e.category.to_string(),
            task_name: e.task_name.to_string(),
            signature: signature::signature(e.description),
            complexity: e.complexity.clone(),
            status: e.status.to_string(),
            iterations: u32::try_from(t.observations.len()).unwrap_or(u32::MAX),
            tokens_used: t.budget.tokens_used,
            final_level: e.final_level,
            strategies,
            effective_strategies,
            unproductive_strategies,
            attractor_path: path,
            escapes,
            decisive_signals,
            terminal_attractor: terminal,
            failure_causes,
            persistent_gaps,
            blocked_tools: t.blocked_tools.iter().take(MAX_ITEMS).cloned().collect(),
            fresh_starts: t.total_fresh_starts,
        }
    }

    /// The memory as a paragraph (the seed's wording, completed).
    pub fn content(&self) -> String {
        let seq = |s: &[StrategyKind]| {
            if s.is_empty() {
                "none".to_string()
            } else {
                s.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(" → ")
            }
        };
        let path = self.attractor_path.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(" → ");
        let list = |items: &[String]| if items.is_empty() { "none".to_string() } else { items.join("; ") };
        match self.outcome {
            Outcome::Success => {
                let mut s = format!(
                    "Task type '{}' {} in {} (task `{}`, level {:.2}, {} tokens). Effective strategy \
                     sequence: {}. Attractor path: {path}. Key overseer signals that drove convergence: {}.",
                    self.category,
                    if self.status == "accepted_partial" { "was accepted as partial" } else { "converged" },
                    crate::counted(self.iterations, "iteration"),
                    self.task_name,
                    self.final_level,
                    self.tokens_used,
                    seq(&self.effective_strategies),
                    list(&self.decisive_signals),
                );
                if !self.escapes.is_empty() {
                    s.push_str(&format!(" Escapes: {}.", self.escapes_text()));
                }
                if !self.persistent_gaps.is_empty() {
                    s.push_str(&format!(" Still open: {}.", self.persistent_gaps.join("; ")));
                }
                s
            }
            Outcome::Failure => format!(
                "Task type '{}' failed to converge after {} (task `{}`, {}, level {:.2}, {} tokens). \
                 Terminal attractor: {}. Strategies attempted: {}. Persistent gaps: {}. Causes: {}.",
                self.category,
                crate::counted(self.iterations, "iteration"),
                self.task_name,
                self.status,
                self.final_level,
                self.tokens_used,
                self.terminal_attractor,
                seq(&distinct(self.strategies.iter().copied())),
                list(&self.persistent_gaps),
                list(&self.failure_causes),
            ),
        }
    }

    fn escapes_text(&self) -> String {
        self.escapes.iter().map(|e| format!("{} left by {}", e.from, e.strategy)).collect::<Vec<_>>().join(", ")
    }

    /// One line for an executor's prompt: what worked (a success) or what to
    /// avoid (a failure).
    pub fn lesson(&self) -> String {
        let names = |s: &[StrategyKind]| s.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(" → ");
        let mut parts = Vec::new();
        match self.outcome {
            Outcome::Success => {
                let what = if self.status == "accepted_partial" { "accepted as partial" } else { "converged" };
                parts.push(format!("`{}` {what} in {}", self.task_name, crate::counted(self.iterations, "iteration")));
                if !self.effective_strategies.is_empty() {
                    parts.push(format!("progress came from {}", names(&self.effective_strategies)));
                }
                if let Some(first) = self.decisive_signals.first() {
                    parts.push(first.clone());
                }
                if !self.escapes.is_empty() {
                    parts.push(format!("escaped by: {}", self.escapes_text()));
                }
            }
            Outcome::Failure => {
                parts.push(format!(
                    "`{}` ended {} after {} at level {:.2}",
                    self.task_name,
                    self.status,
                    crate::counted(self.iterations, "iteration"),
                    self.final_level
                ));
                if let Some(cause) = self.failure_causes.first() {
                    parts.push(cause.clone());
                }
                if !self.unproductive_strategies.is_empty() {
                    parts.push(format!(
                        "no progress from {}",
                        names(&self.unproductive_strategies).replace(" → ", ", ")
                    ));
                }
                if !self.persistent_gaps.is_empty() {
                    let gaps: Vec<&str> = self.persistent_gaps.iter().take(3).map(String::as_str).collect();
                    parts.push(format!("still failing: {}", gaps.join(", ")));
                }
                if !self.blocked_tools.is_empty() {
                    parts.push(format!("approaches that failed used {}", self.blocked_tools.join(", ")));
                }
            }
        }
        parts.join("; ")
    }
}

/// Each item once, in order of first appearance.
fn distinct<T: Ord + Clone>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut seen = BTreeSet::new();
    items.into_iter().filter(|i| seen.insert(i.clone())).collect()
}

/// What got better from `prev` to `cur`: more tests passing, a failing
/// check passing.
fn signal_gains(prev: &OverseerSignals, cur: &OverseerSignals) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(a), Some(b)) = (&prev.test_results, &cur.test_results)
        && b.passed > a.passed
    {
        out.push(format!("tests {}→{} of {}", a.passed, b.passed, b.total));
    }
    for v in cur.verdicts.iter().filter(|v| v.passed && !v.skipped) {
        let failed_before = prev.verdicts.iter().any(|p| p.overseer == v.overseer && !p.passed && !p.skipped);
        if failed_before {
            out.push(format!("`{}` passed", v.overseer));
        }
    }
    out
}

/// What is still failing in a measurement: tests by name, checks by overseer.
fn open_gaps(s: &OverseerSignals) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if let Some(t) = &s.test_results {
        out.extend(t.failing.iter().map(|n| format!("test `{n}`")));
        if t.failing.is_empty() && t.failed > 0 {
            out.push(format!("{} of {} tests", t.failed, t.total));
        }
    }
    out.extend(s.verdicts.iter().filter(|v| !v.passed && !v.skipped).map(|v| format!("check `{}`", v.overseer)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{ConvergenceBudget, ConvergencePolicy, Observation, SpecificationEvolution, StrategyEntry};
    use crate::overseer::signals::{TestResults, Verdict};

    fn signals(passed: u32, failing: &[&str]) -> OverseerSignals {
        OverseerSignals {
            test_results: Some(TestResults {
                passed,
                failed: failing.len() as u32,
                total: passed + failing.len() as u32,
                failing: failing.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            }),
            verdicts: vec![Verdict {
                overseer: "tests".into(),
                passed: failing.is_empty(),
                failure_class: None,
                evidence: String::new(),
                skipped: false,
            }],
            ..Default::default()
        }
    }

    /// One step: (strategy, attractor it was chosen under, delta, tests
    /// passing, failing test names).
    type Step<'a> = (StrategyKind, AttractorKind, Option<f64>, u32, &'a [&'a str]);

    fn trajectory(steps: &[Step<'_>], end: AttractorKind) -> Trajectory {
        let spec = SpecificationEvolution::from_submission("Implement square", &[], &[]);
        let mut t = Trajectory::new("t", "squares", spec, ConvergenceBudget::default(), ConvergencePolicy::default());
        for (i, (strategy, context, delta, passed, failing)) in steps.iter().enumerate() {
            let mut o = Observation::new(*strategy, Default::default(), signals(*passed, failing));
            o.sequence = i as u32;
            t.observations.push(o);
            t.strategy_log.push(StrategyEntry {
                strategy_kind: *strategy,
                observation_sequence: i as u32,
                convergence_delta_achieved: *delta,
                tokens_used: 100,
                was_forced: false,
                attractor_at_selection: *context,
            });
        }
        t.budget.tokens_used = 100 * steps.len() as u64;
        t.attractor_state.classification = match end {
            AttractorKind::FixedPoint => crate::engine::AttractorType::FixedPoint {
                estimated_remaining_iterations: 0,
                estimated_remaining_tokens: 0,
            },
            _ => crate::engine::AttractorType::LimitCycle { period: 2, cycle_signatures: vec![] },
        };
        t
    }

    fn ending<'a>(t: &'a Trajectory, status: &'a str, level: f64, remaining: &'a [String]) -> Ending<'a> {
        Ending {
            trajectory: t,
            category: "python-functions",
            task_name: "squares",
            description: "Implement square(n) returning n squared",
            complexity: Some("simple".into()),
            status,
            final_level: level,
            remaining,
            error: None,
        }
    }

    use AttractorKind::*;
    use StrategyKind::*;

    #[test]
    fn a_success_keeps_what_made_progress_the_attractor_path_and_the_escape() {
        let t = trajectory(
            &[
                (RetryWithFeedback, Indeterminate, None, 4, &["t5", "t6"]),
                (RetryWithFeedback, Plateau, Some(0.0), 4, &["t5", "t6"]),
                (Reframe, Plateau, Some(0.3), 5, &["t6"]),
                (FocusedRepair, Indeterminate, Some(0.2), 6, &[]),
            ],
            FixedPoint,
        );
        let m = ConvergenceMemory::of(&ending(&t, "converged", 1.0, &[]));
        assert_eq!(m.outcome, Outcome::Success);
        assert_eq!(m.effective_strategies, vec![Reframe, FocusedRepair]);
        assert_eq!(m.unproductive_strategies, vec![RetryWithFeedback]);
        assert_eq!(m.attractor_path, vec![Indeterminate, Plateau, Indeterminate, FixedPoint]);
        assert_eq!(m.escapes, vec![Escape { from: Plateau, strategy: Reframe, to: Indeterminate }]);
        assert_eq!(
            m.decisive_signals,
            vec![
                "tests 4→5 of 6 after reframe (observation 2)".to_string(),
                "tests 5→6 of 6 after focused_repair (observation 3)".to_string(),
                "`tests` passed after focused_repair (observation 3)".to_string(),
            ]
        );
        assert!(m.failure_causes.is_empty() && m.persistent_gaps.is_empty());
        assert_eq!(m.signature, ["implement", "returning", "square", "squared"]);
        let content = m.content();
        assert!(content.starts_with("Task type 'python-functions' converged in 4 iterations"), "{content}");
        assert!(content.contains("Effective strategy sequence: reframe → focused_repair"), "{content}");
        let lesson = m.lesson();
        assert!(lesson.contains("progress came from reframe → focused_repair"), "{lesson}");
        assert!(lesson.contains("escaped by: plateau left by reframe"), "{lesson}");
    }

    #[test]
    fn a_failure_keeps_its_cause_the_strategies_tried_and_the_gaps() {
        let mut t = trajectory(
            &[
                (RetryWithFeedback, Indeterminate, None, 6, &["t1", "t2"]),
                (RetryWithFeedback, Indeterminate, Some(-0.1), 7, &["t3"]),
                (Reframe, LimitCycle, Some(-0.1), 6, &["t1", "t2"]),
            ],
            LimitCycle,
        );
        t.blocked_tools.insert("sed".into());
        let remaining = vec!["tests".to_string()];
        let m = ConvergenceMemory::of(&ending(&t, "trapped", 0.7, &remaining));
        assert_eq!(m.outcome, Outcome::Failure);
        assert!(m.effective_strategies.is_empty());
        assert_eq!(m.unproductive_strategies, vec![RetryWithFeedback, Reframe]);
        assert_eq!(m.terminal_attractor, LimitCycle);
        assert_eq!(
            m.failure_causes,
            vec![
                "trapped in a cycle of 2 states with every escape strategy tried".to_string(),
                "it ended in a limit_cycle attractor".to_string()
            ]
        );
        assert_eq!(m.persistent_gaps, vec!["tests", "test `t1`", "test `t2`", "check `tests`"]);
        assert_eq!(m.blocked_tools, vec!["sed"]);
        let lesson = m.lesson();
        for part in [
            "`squares` ended trapped after 3 iterations at level 0.70",
            "no progress from retry_with_feedback, reframe",
            "still failing: tests, test `t1`, test `t2`",
            "approaches that failed used sed",
        ] {
            assert!(lesson.contains(part), "{part}: {lesson}");
        }
        assert!(m.content().contains("Terminal attractor: limit_cycle"), "{}", m.content());
        assert_eq!(Outcome::Failure.relevance(), 0.9);
    }

    #[test]
    fn the_memory_round_trips_through_json() {
        let t = trajectory(&[(FocusedRepair, Indeterminate, None, 1, &[])], FixedPoint);
        let m = ConvergenceMemory::of(&ending(&t, "converged", 1.0, &[]));
        let back: ConvergenceMemory = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }
}
