//! What an agent run carries from iteration to iteration — and across a
//! restart — and how the engine's view of it becomes an executor's request.
//!
//! [`AgentState`] is stored with the trajectory after every iteration and at
//! every pause, so a run stopped by Ctrl-C, a crash or a question waiting
//! for a person continues from the last recorded point: the engine's
//! trajectory, the bandit (and the prior it was primed with), the strategy
//! chosen next, the executor's notes of earlier attempts, the workspace
//! commit to continue from, the question being waited on, and — for a
//! trajectory split into subtasks — the split and where it stands.

use serde::{Deserialize, Serialize};

use super::decompose::Coordination;
use crate::engine::spec::AmendmentSource;
use crate::engine::{
    AttractorKind, BudgetExtension, CarryForward, LoopControl, PointReached, StrategyBandit, StrategyChoice,
    StrategyKind, Told, Trajectory,
};
use crate::executor::{
    AttemptNote, CarryForwardInputs, Execution, ExecutionStatus, PromptInputs, RevertTarget, Specification,
};
use crate::overseer::OverseerSignals;
use crate::suite::Task;

/// The executor's side of one attempt, kept for later prompts (the engine
/// keeps the measurements).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub sequence: u32,
    pub summary: String,
    #[serde(default)]
    pub tools_used: Vec<String>,
    pub applied: u32,
    pub rejected: u32,
    /// Each refused edit: its path, action and reason.
    #[serde(default)]
    pub refused: Vec<String>,
    /// How the execution ended: completed, rejected, timed_out, failed.
    pub status: String,
    /// The attractor the engine saw after this attempt.
    #[serde(default)]
    pub attractor: Option<AttractorKind>,
    /// Of the refused edits, those to protected files (tests, their
    /// configuration, the checks' scripts).
    #[serde(default)]
    pub refused_protected: u32,
}

impl AttemptRecord {
    pub fn of(sequence: u32, e: &Execution) -> AttemptRecord {
        let status = match &e.status {
            ExecutionStatus::Completed => "completed",
            ExecutionStatus::Rejected { .. } => "rejected",
            ExecutionStatus::TimedOut { .. } => "timed_out",
            ExecutionStatus::Failed { .. } => "failed",
            ExecutionStatus::Cancelled => "cancelled",
        };
        AttemptRecord {
            sequence,
            summary: e.summary.clone(),
            tools_used: e.tools_used.clone(),
            applied: u32::try_from(e.applied.len()).unwrap_or(u32::MAX),
            rejected: e.rejection_count(),
            refused: e.rejected.iter().map(|r| format!("{} ({}): {}", r.path, r.action.name(), r.reason)).collect(),
            status: status.to_string(),
            attractor: None,
            refused_protected: u32::try_from(
                e.rejected.iter().filter(|r| r.reason.starts_with(super::protect::REASON)).count(),
            )
            .unwrap_or(u32::MAX),
        }
    }
}

/// A question a trajectory waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "point", rename_all = "snake_case")]
pub enum Waiting {
    /// Approve or reject more budget for a converging trajectory.
    BudgetExtension { intervention_id: i64, extension: BudgetExtension },
    /// A trapped trajectory: a hint reopens it, anything else ends it.
    HumanEscalation { intervention_id: i64, control: LoopControl },
    /// The attractor turned into trouble: go on (with a hint), or stop here
    /// with the best result.
    AttractorTransition { intervention_id: i64, from: AttractorKind, to: AttractorKind },
    /// The escalation chosen next (`proposed`, the state's next strategy):
    /// use it (with a hint), or choose a strategy that is no escalation.
    StrategyEscalation { intervention_id: i64, proposed: StrategyKind },
    /// The specification is ambiguous: a hint clarifies it (an amendment),
    /// anything else goes on as it stands.
    AmbiguityDetected { intervention_id: i64, contradictions: Vec<String> },
    /// Out of budget with a result partial acceptance would take
    /// (`control`): accept it, end exhausted, or try once more with a hint.
    PartialResult { intervention_id: i64, control: LoopControl },
    /// The targets do not move while edits to the tests keep being refused
    /// (`reason`): a hint goes on, anything else ends the trajectory.
    Impossible { intervention_id: i64, reason: String },
}

impl Waiting {
    pub fn intervention_id(&self) -> i64 {
        match self {
            Waiting::BudgetExtension { intervention_id, .. }
            | Waiting::HumanEscalation { intervention_id, .. }
            | Waiting::AttractorTransition { intervention_id, .. }
            | Waiting::StrategyEscalation { intervention_id, .. }
            | Waiting::AmbiguityDetected { intervention_id, .. }
            | Waiting::PartialResult { intervention_id, .. }
            | Waiting::Impossible { intervention_id, .. } => *intervention_id,
        }
    }
}

/// Everything needed to continue a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    pub trajectory: Trajectory,
    pub bandit: StrategyBandit,
    /// The bandit as it was primed: what this trajectory learned is the
    /// difference, merged into the stored state when it ends.
    pub bandit_prior: StrategyBandit,
    /// The strategy to execute next (none while waiting or after the end).
    pub next: Option<StrategyChoice>,
    pub attempts: Vec<AttemptRecord>,
    /// The workspace's first commit (the task's files as given).
    pub initial_commit: String,
    /// The commit to continue from: the latest observation's (or the first).
    pub head_commit: String,
    /// Edits and replies refused so far.
    pub gate_rejections: u32,
    /// Executor replies in a row that could not be used at all.
    pub unusable_replies: u32,
    pub waiting: Option<Waiting>,
    /// The terminal loop control, once there is one: a run stopped between
    /// the last iteration and the bookkeeping of the end finishes that
    /// bookkeeping when resumed instead of iterating again.
    #[serde(default)]
    pub ended: Option<LoopControl>,
    /// Base of every random choice of this trajectory.
    pub seed: u64,
    /// The split in progress, once the trajectory is split into subtasks.
    #[serde(default)]
    pub coordination: Option<Coordination>,
    /// What went differently than asked, for the record (a split that could
    /// not be used, and why).
    #[serde(default)]
    pub notes: Vec<String>,
    /// What the ASO coordinator knows of this trajectory (under `supervision: aso`).
    #[serde(default)]
    pub supervision: crate::aso::agent::SupervisionTrack,
    /// A check the supervisor asked the next attempt to concentrate on: told
    /// to that attempt only, then cleared.
    #[serde(default)]
    pub focus: Option<String>,
    /// Intervention points the latest iteration reached that are still to
    /// be raised, in order (one may pause, the rest wait their turn).
    #[serde(default)]
    pub points: Vec<PointReached>,
    /// What this trajectory already told a person (never twice).
    #[serde(default)]
    pub told: Told,
    /// Iterations a person's answer to "the task looks impossible" let go
    /// on with: the stall is counted from here.
    #[serde(default)]
    pub stall_from: usize,
}

impl AgentState {
    pub fn to_json(&self) -> String {
        // Plain data with string keys; serializing it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The specification as the executor sees it: the task's own text, then the
/// amendments made since, except the person's hints (shown first, on their
/// own) and the constraints given with the task (their own section).
pub fn specification(t: &Trajectory) -> Specification {
    Specification {
        original: t.specification.original.render(),
        amendments: t
            .specification
            .amendments
            .iter()
            .filter(|a| !matches!(a.source, AmendmentSource::UserHint | AmendmentSource::SubmissionConstraint))
            .map(|a| a.description.clone())
            .collect(),
    }
}

/// One line saying what the overseers made of a state.
pub fn outcome_line(s: &OverseerSignals) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &s.test_results {
        parts.push(format!("{} of {} tests pass", t.passed, t.total));
        // Against a baseline with tests beyond the targets, the plain count
        // misleads (816 of 817 pass, and the one failing is the task).
        if let Some(j) = t.judgement.as_ref().filter(|j| j.guarded > 0) {
            parts.push(j.describe());
        }
    }
    if let Some(b) = &s.build_result {
        parts.push(if b.success { "build ok".to_string() } else { format!("build fails ({} errors)", b.error_count) });
    }
    if let Some(t) = &s.type_check {
        parts.push(if t.clean { "types ok".to_string() } else { format!("{} type errors", t.error_count) });
    }
    if let Some(l) = &s.lint_results {
        parts.push(format!("lint {} errors", l.error_count));
    }
    if let Some(x) = &s.security_scan {
        parts.push(format!("security {} critical / {} high", x.critical_count, x.high_count));
    }
    let failing_checks: Vec<&str> = s.custom_checks.iter().filter(|c| !c.passed).map(|c| c.name.as_str()).collect();
    if !s.custom_checks.is_empty() {
        parts.push(format!(
            "{} of {} checks pass",
            s.custom_checks.len() - failing_checks.len(),
            s.custom_checks.len()
        ));
    }
    let unmeasured: Vec<&str> = s
        .verdicts
        .iter()
        .filter(|v| v.failure_class == Some(crate::overseer::FailureClass::Environmental))
        .map(|v| v.overseer.as_str())
        .collect();
    if !unmeasured.is_empty() {
        parts.push(format!("could not run: {}", unmeasured.join(", ")));
    }
    if parts.is_empty() { "nothing measured".to_string() } else { parts.join(", ") }
}

/// The engine's carry-forward in the executor's terms.
pub fn carry_forward_inputs(cf: &CarryForward) -> CarryForwardInputs {
    CarryForwardInputs {
        best_sequence: Some(cf.best_sequence),
        best_signals: Some(cf.best_signals.clone()),
        attempts: cf.attempts,
        failure_summary: cf.failure_summary.clone(),
        anti_patterns: cf.anti_patterns.clone(),
        remaining_gaps: cf.remaining_gaps.iter().map(|g| g.description.clone()).collect(),
    }
}

pub fn revert_target(t: &crate::engine::RevertTarget) -> RevertTarget {
    RevertTarget { sequence: t.sequence, artifact: t.artifact.clone() }
}

/// What the executor is told for `choice`. A fresh start sees no earlier
/// attempt — only the carry-forward; a revert sees the best state's
/// measurements and the attempts made after it.
pub fn prompt_inputs(
    task: &Task,
    state: &AgentState,
    choice: &StrategyChoice,
    revert_carry: Option<&CarryForward>,
) -> PromptInputs {
    let t = &state.trajectory;
    let history: Vec<AttemptNote> = if choice.kind == StrategyKind::FreshStart {
        Vec::new()
    } else {
        t.context_observations()
            .iter()
            .map(|o| {
                let note = state.attempts.iter().find(|a| a.sequence == o.sequence);
                AttemptNote {
                    sequence: o.sequence,
                    strategy: o.strategy_used,
                    summary: note.map(|n| n.summary.clone()).unwrap_or_default(),
                    outcome: outcome_line(&o.overseer_signals),
                    tools_used: o.tools_used.clone(),
                    refused: note.map(|n| n.refused.clone()).unwrap_or_default(),
                }
            })
            .collect()
    };
    let carry_forward = match choice.kind {
        StrategyKind::FreshStart => choice.carry_forward.as_ref().map(carry_forward_inputs),
        StrategyKind::RevertAndBranch => revert_carry.map(carry_forward_inputs),
        _ => None,
    };
    PromptInputs {
        task_name: task.name.clone(),
        specification: specification(t),
        hints: t.hints.iter().chain(&state.focus).cloned().collect(),
        constraints: task.constraints.clone(),
        anti_patterns: task.anti_patterns.clone(),
        latest_sequence: t.latest().map(|o| o.sequence),
        latest: t.latest().map(|o| o.overseer_signals.clone()),
        history,
        carry_forward,
        blocked_tools: choice.blocked_tools.clone(),
        available_tools: Vec::new(),
        include_rubric: None,
        lessons: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{
        ConvergenceBudget, ConvergencePolicy, Engine, Observation, SpecificationEvolution, StrategyBandit,
    };
    use crate::overseer::signals::TestResults;
    use crate::suite::{AgentTask, Budget, Task, TaskKind};
    use rand::SeedableRng;

    fn task() -> Task {
        Task {
            name: "t".into(),
            task: "Do it.".into(),
            kind: TaskKind::Agent(AgentTask {
                workspace: None,
                executor: None,
                overseers: vec![],
                supervision: Default::default(),
                protected: vec![],
                infer_protected: true,
                targets: Vec::new(),
                forbidden: vec![],
            }),
            workflow: None,
            model: None,
            budget: Budget::default(),
            weights: Default::default(),
            holdout: false,
            priority: None,
            hints: vec![],
            constraints: vec!["stdlib only".into()],
            anti_patterns: vec!["editing tests".into()],
            parallel_samples: 1,
            needs: vec![],
            location: Default::default(),
        }
    }

    fn state() -> AgentState {
        let spec =
            SpecificationEvolution::from_submission("Do it.", &["stdlib only".into()], &["editing tests".into()]);
        let budget = ConvergenceBudget {
            max_tokens: 1_000_000,
            max_iterations: 10,
            max_wall_time_ms: 1 << 30,
            ..Default::default()
        };
        let mut t = Trajectory::new("x", "t", spec, budget, ConvergencePolicy::default());
        t.add_hint("use n * n");
        t.specification.amend(AmendmentSource::ArchitectAmendment, "accept 0 too", "review", Some(0));
        AgentState {
            trajectory: t,
            bandit: StrategyBandit::default(),
            bandit_prior: StrategyBandit::default(),
            next: None,
            attempts: vec![AttemptRecord {
                sequence: 0,
                summary: "summary of attempt zero".into(),
                tools_used: vec![],
                applied: 1,
                rejected: 0,
                refused: vec![],
                status: "completed".into(),
                attractor: None,
                refused_protected: 0,
            }],
            initial_commit: String::new(),
            head_commit: String::new(),
            gate_rejections: 0,
            unusable_replies: 0,
            waiting: None,
            ended: None,
            seed: 1,
            coordination: None,
            notes: Vec::new(),
            supervision: Default::default(),
            focus: None,
            points: Vec::new(),
            told: Told::default(),
            stall_from: 0,
        }
    }

    fn observed(s: &mut AgentState) -> StrategyChoice {
        let engine = Engine::default();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut bandit = StrategyBandit::default();
        engine.start(&mut s.trajectory, &bandit, &mut rng).unwrap();
        let signals = OverseerSignals {
            test_results: Some(TestResults { passed: 3, failed: 1, total: 4, ..Default::default() }),
            ..Default::default()
        };
        let obs = Observation::new(StrategyKind::RetryWithFeedback, Default::default(), signals);
        engine.decide(&mut s.trajectory, &mut bandit, obs, &mut rng).unwrap().next.unwrap()
    }

    #[test]
    fn the_specification_shows_amendments_but_not_hints_or_submitted_constraints_twice() {
        let spec = specification(&state().trajectory);
        assert_eq!(spec.original.trim(), "Do it.");
        assert_eq!(spec.amendments, vec!["accept 0 too".to_string()]);
    }

    #[test]
    fn a_retry_sees_earlier_attempts_and_a_fresh_start_only_its_carry_forward() {
        let mut s = state();
        let mut choice = observed(&mut s);
        choice.kind = StrategyKind::RetryWithFeedback;
        let inputs = prompt_inputs(&task(), &s, &choice, None);
        assert_eq!(inputs.hints, vec!["use n * n"]);
        assert_eq!(inputs.constraints, vec!["stdlib only"]);
        assert_eq!(inputs.history.len(), 1);
        assert_eq!(inputs.history[0].summary, "summary of attempt zero");
        assert_eq!(inputs.history[0].outcome, "3 of 4 tests pass");
        assert!(inputs.carry_forward.is_none());

        choice.kind = StrategyKind::FreshStart;
        choice.carry_forward = Engine::default().carry_forward(&s.trajectory);
        let inputs = prompt_inputs(&task(), &s, &choice, None);
        assert!(inputs.history.is_empty(), "a fresh start sees no earlier attempt");
        let cf = inputs.carry_forward.unwrap();
        assert_eq!((cf.best_sequence, cf.attempts), (Some(0), 1));
        assert_eq!(inputs.hints, vec!["use n * n"], "hints always survive");
    }

    #[test]
    fn a_question_waited_on_survives_a_restart_and_an_older_state_still_loads() {
        let mut s = state();
        s.points = vec![PointReached::StrategyEscalation {
            proposed_strategy: StrategyKind::ArchitectReview,
            reason: "stalled".into(),
        }];
        s.told.attractors.insert(AttractorKind::Plateau);
        for waiting in [
            Waiting::AttractorTransition {
                intervention_id: 1,
                from: AttractorKind::Indeterminate,
                to: AttractorKind::Plateau,
            },
            Waiting::StrategyEscalation { intervention_id: 2, proposed: StrategyKind::Decompose },
            Waiting::AmbiguityDetected { intervention_id: 3, contradictions: vec!["0 or an error?".into()] },
        ] {
            s.waiting = Some(waiting);
            let back: AgentState = serde_json::from_str(&s.to_json()).unwrap();
            assert_eq!(back, s);
        }
        // A state stored before intervention points were queued has neither field.
        let mut old: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        old.as_object_mut().unwrap().retain(|k, _| k != "points" && k != "told");
        let back: AgentState = serde_json::from_value(old).unwrap();
        assert!(back.points.is_empty() && back.told == Told::default());
    }

    #[test]
    fn the_state_round_trips_through_json() {
        let mut s = state();
        s.next = Some(observed(&mut s));
        let back: AgentState = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(back, s);
    }
}
