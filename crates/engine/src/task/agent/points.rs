//! The intervention points of seed 002 §7.3 as a trajectory raises and
//! settles them.
//!
//! After an iteration whose loop goes on, the engine names the points it
//! reached ([`crate::engine::intervention::points_after`]): an attractor that
//! turned into trouble, an ambiguous specification, an escalation chosen next.
//! They wait in the state's queue and are raised one at a time, so a pause
//! on the first holds the others back until it is answered — and a restart
//! finds them where they were. When the loop ends, the end itself may be a
//! point: a partial result partial acceptance would take, or a trapped
//! trajectory (human escalation).
//!
//! Each point does what its mode says ([`InterventionConfig::mode`]: the
//! priority hint's table, or the engine config's override):
//!
//! - **pause** — a question (what, why, evidence, proposed action, proposal)
//!   the trajectory waits on; the answer changes what happens next;
//! - **notify** — the same record as a notice: visible in the inbox, waited
//!   on by nobody, dismissable;
//! - **auto** — decided alone; only the `intervention_point_reached` event.
//!
//! [`InterventionConfig::mode`]: crate::engine::InterventionConfig::mode

use serde_json::{Value, json};

use super::intervene::{self, Answer};
use super::{AgentError, Driver, End, Role, Waiting, rng_at};
use crate::bus::Event;
use crate::engine::{
    AttractorKind, AttractorType, BudgetExtension, InterventionKind, InterventionMode, LoopControl, PointReached,
    StrategyKind, Trajectory,
};

/// `specification_ambiguity` → `specification ambiguity`.
fn words<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(|s| s.replace('_', " "))).unwrap_or_default()
}

impl Driver<'_> {
    /// What `point` does for this trajectory: its priority hint's table, or
    /// the engine config's override. A sample never asks about a partial
    /// result: its group takes the best across samples.
    pub(super) fn mode(&self, point: InterventionKind) -> InterventionMode {
        if point == InterventionKind::PartialResult && self.place.role == Role::Sample {
            return InterventionMode::Auto;
        }
        self.kit.engine.config.interventions.mode(self.state.trajectory.policy.priority_hint, point)
    }

    /// Records the point as its mode says — a question (pause), a notice
    /// (notify), nothing (auto) — and tells the bus; the row's id, if any.
    pub(super) async fn intervene(
        &self,
        point: InterventionKind,
        mode: InterventionMode,
        subject: String,
        context: Value,
    ) -> Result<Option<i64>, AgentError> {
        let (store, bus) = (&self.r.store, &self.r.bus);
        let question = intervene::Question {
            kind: intervene::kind_of(point),
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            task: &self.r.task.name,
            subject: subject.clone(),
            context,
        };
        let id = match mode {
            InterventionMode::Pause => Some(intervene::raise(store, bus, question).await?),
            InterventionMode::Notify => Some(intervene::notice(store, &question).await?),
            InterventionMode::Auto => None,
        };
        bus.publish(Event::InterventionPointReached {
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: self.place.id.clone(),
            point: intervene::kind_of(point),
            mode,
            intervention_id: id,
            subject,
        });
        Ok(id)
    }

    fn level_now(&self) -> Option<f64> {
        self.state.trajectory.latest().map(|o| o.level(&self.kit.engine.config.level))
    }

    fn next_strategy(&self) -> Option<&'static str> {
        self.state.next.as_ref().map(|n| n.kind.as_str())
    }

    /// Raises the next queued point and stores the state (paused when it
    /// waits on the point's question now).
    pub(super) async fn raise_next_point(&mut self) -> Result<(), AgentError> {
        if self.state.points.is_empty() {
            return Ok(());
        }
        let point = self.state.points.remove(0);
        match point {
            PointReached::AttractorTransition { from, to, sequence } => self.transition(from, to, sequence).await?,
            PointReached::StrategyEscalation { proposed_strategy, reason } => {
                // An earlier answer (a hint, a refusal) may have changed the plan.
                if self.state.next.as_ref().map(|n| n.kind) == Some(proposed_strategy) {
                    self.escalation(proposed_strategy, &reason).await?;
                }
            }
            PointReached::AmbiguityDetected { contradictions, sequence } => {
                self.ambiguity(contradictions, sequence).await?
            }
        }
        self.save(if self.state.waiting.is_some() { "paused" } else { "running" }).await
    }

    async fn transition(&mut self, from: AttractorKind, to: AttractorKind, sequence: u32) -> Result<(), AgentError> {
        let kind = InterventionKind::AttractorTransition;
        let mode = self.mode(kind);
        let task = &self.r.task.name;
        let a = &self.state.trajectory.attractor_state;
        let level = self.level_now().unwrap_or(0.0);
        let (subject, why) = match &a.classification {
            AttractorType::LimitCycle { period, .. } => (
                format!("Task `{task}` is going round in a cycle of {period} states"),
                "Its attempts keep coming back to the same results, so more of the same will not help: the engine \
                 turns to other approaches, and a person often knows what is missing.",
            ),
            AttractorType::Divergent { probable_cause, .. } => (
                format!("Task `{task}` is moving away from its goal (probable cause: {})", words(probable_cause)),
                "Each attempt measures worse than the one before; going on spends the budget on getting worse unless \
                 the approach changes.",
            ),
            AttractorType::Plateau { .. } => (
                format!("Task `{task}` has stalled at level {level:.2}"),
                "The attempts no longer make progress: the budget is being spent without getting closer to the goal.",
            ),
            other => (format!("Task `{task}` is now {}", other.kind()), "The trajectory changed course."),
        };
        let next = self.next_strategy().unwrap_or("the next strategy");
        let proposal = match mode {
            InterventionMode::Pause => format!(
                "Approve to go on with `{next}`; reject to stop the trajectory now with its best result; or answer \
                 with a hint, which every later attempt sees."
            ),
            _ => format!("The trajectory goes on with `{next}`; nothing waits on this notice."),
        };
        let context = json!({
            "what": format!("After observation {sequence} the attractor changed from {from} to {to}: {}",
                a.evidence.rationale),
            "why": why,
            "evidence": {"from": from, "to": to, "sequence": sequence, "level": level, "confidence": a.confidence,
                         "attractor": a.classification, "recent_deltas": a.evidence.recent_deltas,
                         "recent_signatures": a.evidence.recent_signatures, "next_strategy": self.next_strategy(),
                         "trajectory_id": self.place.id},
            "proposed_action": "continue",
            "proposal": proposal,
        });
        if let Some(intervention_id) = self.intervene(kind, mode, subject, context).await?
            && mode == InterventionMode::Pause
        {
            self.state.waiting = Some(Waiting::AttractorTransition { intervention_id, from, to });
        }
        Ok(())
    }

    async fn escalation(&mut self, proposed: StrategyKind, reason: &str) -> Result<(), AgentError> {
        let kind = InterventionKind::StrategyEscalation;
        let mode = self.mode(kind);
        let task = &self.r.task.name;
        let pause = mode == InterventionMode::Pause;
        let (ask, tell, effect) = match proposed {
            StrategyKind::Decompose => (
                format!("Task `{task}`: split it into subtasks?"),
                format!("Task `{task}` is being split into subtasks"),
                "A split hands what is left of the budget to subtasks run one after another and an integration \
                 trajectory that measures their combined work; the task's own attempts end there.",
            ),
            _ => (
                format!("Task `{task}`: re-plan its specification with an architect review?"),
                format!("Task `{task}` gets an architect review of its specification"),
                "An architect review amends the specification, and every later attempt follows the amended one.",
            ),
        };
        let alternatives: Vec<&str> = self
            .state
            .next
            .iter()
            .flat_map(|n| n.candidates.iter())
            .filter(|s| !s.is_escalation())
            .map(|s| s.as_str())
            .collect();
        let instead = if alternatives.is_empty() {
            "a retry: nothing else is eligible now".to_string()
        } else {
            format!("such as {}", alternatives.join(", "))
        };
        let proposal = if pause {
            format!(
                "Approve to go on with `{proposed}`; reject to go on with a strategy that is no escalation \
                 ({instead}) — `{proposed}` is then not proposed again; or answer with a hint, which goes with \
                 `{proposed}` and every later attempt."
            )
        } else {
            format!("The trajectory goes on with `{proposed}`; nothing waits on this notice.")
        };
        let t = &self.state.trajectory;
        let context = json!({
            "what": format!("The engine chose `{proposed}`, {reason}."),
            "why": effect,
            "evidence": {"proposed_strategy": proposed, "reason": reason, "attractor": t.attractor_state.classification,
                         "level": self.level_now(), "candidates": self.state.next.as_ref().map(|n| &n.candidates),
                         "fresh_starts": t.total_fresh_starts, "budget": t.budget, "trajectory_id": self.place.id},
            "proposed_action": proposed,
            "proposal": proposal,
        });
        let subject = if pause { ask } else { tell };
        if let Some(intervention_id) = self.intervene(kind, mode, subject, context).await?
            && pause
        {
            self.state.waiting = Some(Waiting::StrategyEscalation { intervention_id, proposed });
        }
        Ok(())
    }

    async fn ambiguity(&mut self, contradictions: Vec<String>, sequence: u32) -> Result<(), AgentError> {
        let kind = InterventionKind::AmbiguityDetected;
        let mode = self.mode(kind);
        let suggestions: Vec<String> = contradictions
            .iter()
            .map(|c| format!("Say in the specification which reading is meant: {}", c.trim_end_matches(['.', '?'])))
            .collect();
        self.r.bus.publish(Event::SpecificationAmbiguityDetected {
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: self.place.id.clone(),
            task: self.task.name.clone(),
            contradictions: contradictions.clone(),
            suggested_clarifications: suggestions.clone(),
        });
        let blamed = matches!(self.state.trajectory.attractor_state.kind(), AttractorKind::Divergent);
        let proposal = match mode {
            InterventionMode::Pause => "Answer with a hint to clarify: it becomes an amendment of the specification \
                                        that every later attempt and the intent verifier see; approve or reject to \
                                        go on with the specification as it stands."
                .to_string(),
            _ => "The trajectory goes on with the specification as it stands; nothing waits on this notice. A hint \
                  for later runs belongs in the task's `hints:`."
                .to_string(),
        };
        let context = json!({
            "what": format!("The intent verifier found the specification open to more than one reading after \
                             observation {sequence}: {}", contradictions.join("; ")),
            "why": "Attempts that guess at an ambiguous specification chase a moving target: each reading passes \
                    some checks and fails others, and the trajectory oscillates or drifts.",
            "evidence": {"contradictions": contradictions, "suggested_clarifications": suggestions,
                         "sequence": sequence, "diverging": blamed,
                         "specification": self.state.trajectory.specification.effective.render(),
                         "trajectory_id": self.place.id},
            "proposed_action": "clarify",
            "proposal": proposal,
        });
        let n = contradictions.len();
        let subject = format!(
            "Task `{}`: the specification can be read more than one way ({n} point{})",
            self.r.task.name,
            if n == 1 { "" } else { "s" }
        );
        if let Some(intervention_id) = self.intervene(kind, mode, subject, context).await?
            && mode == InterventionMode::Pause
        {
            self.state.waiting = Some(Waiting::AmbiguityDetected { intervention_id, contradictions });
        }
        Ok(())
    }

    /// An automatic budget extension, told as its mode says (the engine
    /// already granted it: only a `pause` would have waited).
    pub(super) async fn tell_extension(
        &mut self,
        extension: &BudgetExtension,
        evidence: String,
    ) -> Result<(), AgentError> {
        let kind = InterventionKind::BudgetExtension;
        let mode = self.mode(kind);
        let b = &self.state.trajectory.budget;
        let context = json!({
            "what": format!("The trajectory ran out of budget while converging and was given {} more \
                             and {} more tokens (extension {} of {}).", crate::counted(extension.additional_iterations, "iteration"),
                             extension.additional_tokens, b.extensions_granted, b.max_extensions),
            "why": "A trajectory still converging usually needs only a little more to finish.",
            "evidence": {"convergence": evidence, "budget": b, "extension": extension, "trajectory_id": self.place.id},
            "proposed_action": "extend_budget",
            "proposal": "Granted automatically; nothing waits on this notice.",
        });
        let subject = format!(
            "Task `{}` got {} more to finish converging",
            self.r.task.name,
            crate::counted(extension.additional_iterations, "iteration")
        );
        self.intervene(kind, mode, subject, context).await?;
        Ok(())
    }

    /// A terminal loop control, through its intervention point: a trapped
    /// trajectory (human escalation) or a partial result may wait on a
    /// person (`None`: the question is set, the state not yet stored);
    /// anything else ends the trajectory.
    pub(super) async fn conclude_at_point(&mut self, control: LoopControl) -> Result<Option<End>, AgentError> {
        match &control {
            LoopControl::Trapped { best, partial } => {
                let kind = InterventionKind::HumanEscalation;
                let mode = self.mode(kind);
                let a = &self.state.trajectory.attractor_state;
                let period = match &a.classification {
                    AttractorType::LimitCycle { period, .. } => *period,
                    _ => 0,
                };
                let carry = self.kit.engine.carry_forward(&self.state.trajectory);
                let proposal = match mode {
                    InterventionMode::Pause => {
                        "Answer with a hint to go on with a fresh start that carries it; approve or reject to end \
                         the trajectory as trapped with its best result."
                    }
                    _ => "The trajectory ends as trapped with its best result; nothing waits on this notice.",
                };
                let context = json!({
                    "what": partial.summary,
                    "why": "The executor keeps returning to the same wrong answers; another attempt without new \
                            information would repeat them.",
                    "evidence": {"cycle": a.evidence.recent_signatures, "best": best,
                                 "remaining": partial.remaining, "carry_forward": carry, "trajectory_id": self.place.id},
                    "proposed_action": "hint",
                    "next_moves": partial.next_moves,
                    "proposal": proposal,
                });
                let subject = format!(
                    "Task `{}` is trapped in a cycle of {period} states; every escape strategy was tried",
                    self.r.task.name
                );
                if let Some(intervention_id) = self.intervene(kind, mode, subject, context).await?
                    && mode == InterventionMode::Pause
                {
                    self.state.waiting = Some(Waiting::HumanEscalation { intervention_id, control });
                    return Ok(None);
                }
                Ok(Some(End::Finished(control)))
            }
            LoopControl::AcceptedPartial { result } => {
                let kind = InterventionKind::PartialResult;
                let mode = self.mode(kind);
                let t = &self.state.trajectory;
                let (b, p) = (&t.budget, &t.policy);
                let gaps = self.kit.engine.carry_forward(t).map(|c| c.remaining_gaps).unwrap_or_default();
                let left = b.max_extensions.saturating_sub(b.extensions_requested);
                let proposal = match mode {
                    InterventionMode::Pause => format!(
                        "Approve to accept the best result as partial; reject to end the task as exhausted; or \
                         answer with a hint to go on with it {}",
                        if left > 0 {
                            format!("for one more budget extension ({left} left)")
                        } else {
                            "— no budget extension is left, so the result is then accepted".to_string()
                        }
                    ),
                    _ => "The best result was accepted as partial; nothing waits on this notice.".to_string(),
                };
                let ran_out = if b.has_remaining() {
                    "The goal gradient gave up under budget pressure"
                } else {
                    "The budget ran out"
                };
                let context = json!({
                    "what": format!("{ran_out} ({} of {} iterations, {} of {} tokens used) below the acceptance \
                                     threshold {:.2}; the best observation, #{}, reached level {:.2} (partial \
                                     threshold {:.2}).", b.iterations_used, b.max_iterations, b.tokens_used,
                                     b.max_tokens, p.acceptance_threshold, result.sequence, result.level,
                                     p.partial_threshold),
                    "why": format!("A partial result is handed on as the task's result although {} {}.",
                                   crate::counted(gaps.len(), "gap"), if gaps.len() == 1 { "remains" } else { "remain" }),
                    "evidence": {"best_observation": result, "remaining_gaps": gaps,
                                 "partial_threshold": p.partial_threshold,
                                 "acceptance_threshold": p.acceptance_threshold, "budget": b,
                                 "trajectory_id": self.place.id},
                    "proposed_action": "accept_partial",
                    "proposal": proposal,
                });
                let subject = match mode {
                    InterventionMode::Pause => format!(
                        "Task `{}` is out of budget at level {:.2}: accept its best result as partial?",
                        self.r.task.name, result.level
                    ),
                    _ => {
                        format!("Task `{}` ended with a partial result at level {:.2}", self.r.task.name, result.level)
                    }
                };
                if let Some(intervention_id) = self.intervene(kind, mode, subject, context).await?
                    && mode == InterventionMode::Pause
                {
                    self.state.waiting = Some(Waiting::PartialResult { intervention_id, control });
                    return Ok(None);
                }
                Ok(Some(End::Finished(control)))
            }
            _ => Ok(Some(End::Finished(control))),
        }
    }

    /// Acts on the answer to the question the trajectory waited on (the
    /// caller has cleared it); an end, or `None` to go on. A timeout counts
    /// as a rejection.
    pub(super) async fn settle_point(
        &mut self,
        waiting: Waiting,
        answer: Answer,
        step: u64,
    ) -> Result<Option<End>, AgentError> {
        let hint = match &answer {
            Answer::Hint(h) if !h.trim().is_empty() => Some(h.trim().to_string()),
            _ => None,
        };
        let go_on = matches!(answer, Answer::Approve) || hint.is_some();
        match waiting {
            Waiting::AttractorTransition { to, .. } => {
                if !go_on {
                    let reason = format!("a person stopped the trajectory when it became {to}");
                    let control = self.kit.engine.stop_by_person(&mut self.state.trajectory, &reason)?;
                    self.state.next = None;
                    self.state.points.clear();
                    return Ok(Some(End::Finished(control)));
                }
                if let Some(h) = hint {
                    self.state.trajectory.add_hint(h);
                }
            }
            Waiting::StrategyEscalation { proposed, .. } => {
                if let Some(h) = hint {
                    self.state.trajectory.add_hint(h);
                } else if !go_on {
                    let next = self.kit.engine.decline_escalation(
                        &mut self.state.trajectory,
                        &self.state.bandit,
                        proposed,
                        &mut rng_at(self.state.seed, step),
                    )?;
                    self.state.next = Some(next);
                }
            }
            Waiting::AmbiguityDetected { contradictions, .. } => {
                if let Some(h) = hint {
                    self.state.trajectory.clarify(h, &contradictions);
                }
            }
            Waiting::PartialResult { control, .. } => {
                let Some(h) = hint else {
                    return Ok(Some(End::Finished(if go_on {
                        control
                    } else {
                        self.kit.engine.refuse_partial(&mut self.state.trajectory)
                    })));
                };
                let extended = self.kit.engine.extend_for_hint(
                    &mut self.state.trajectory,
                    &self.state.bandit,
                    &h,
                    &mut rng_at(self.state.seed, step),
                );
                let Some((extension, next)) = extended else {
                    // No extension left: the hint is kept for the record, the result stands.
                    self.state.trajectory.add_hint(h);
                    return Ok(Some(End::Finished(control)));
                };
                self.r.bus.publish(Event::BudgetExtensionGranted {
                    suite_id: self.r.suite_id,
                    run_id: self.r.run_id,
                    trajectory_id: self.place.id.clone(),
                    additional_tokens: extension.additional_tokens,
                    additional_iterations: extension.additional_iterations,
                    by: "person".to_string(),
                });
                self.state.next = Some(next);
            }
            Waiting::BudgetExtension { .. } => {
                if let Some(h) = hint {
                    self.state.trajectory.add_hint(h);
                }
                let (engine, trajectory, bandit) = (&self.kit.engine, &mut self.state.trajectory, &self.state.bandit);
                let mut rng = rng_at(self.state.seed, step);
                let mut resolve = |t: &mut Trajectory| engine.resolve_extension(t, bandit, go_on, &mut rng);
                let (control, next) = match &self.place.group {
                    // A sample's extension is its group's.
                    Some(group) => group.with_ledger(|ledger| ledger.apply(trajectory, resolve))?,
                    None => resolve(trajectory)?,
                };
                let LoopControl::ExtensionGranted { extension } = &control else {
                    // Refused: the end partial acceptance or the budget decides — itself maybe a question.
                    let end = self.conclude_at_point(control).await?;
                    if end.is_none() {
                        self.save("paused").await?;
                    }
                    return Ok(end);
                };
                self.r.bus.publish(Event::BudgetExtensionGranted {
                    suite_id: self.r.suite_id,
                    run_id: self.r.run_id,
                    trajectory_id: self.place.id.clone(),
                    additional_tokens: extension.additional_tokens,
                    additional_iterations: extension.additional_iterations,
                    by: "person".to_string(),
                });
                self.state.next = next;
            }
            Waiting::Impossible { reason, .. } => {
                let Some(h) = hint else {
                    let control = self.kit.engine.stop(&mut self.state.trajectory, &reason)?;
                    self.state.notes.push(reason);
                    self.state.next = None;
                    return Ok(Some(End::Finished(control)));
                };
                // Go on: the hint is the executor's to read, and the stall
                // is counted afresh.
                self.state.trajectory.add_hint(h);
                self.state.stall_from = self.state.trajectory.observations.len();
            }
            Waiting::HumanEscalation { control, .. } => {
                let Some(h) = hint else { return Ok(Some(End::Finished(control))) };
                let next = self.kit.engine.reopen_with_hint(
                    &mut self.state.trajectory,
                    &self.state.bandit,
                    &h,
                    &mut rng_at(self.state.seed, step),
                )?;
                self.fresh_start_reason = Some("a person's hint reopened the trapped trajectory".to_string());
                self.state.next = Some(next);
            }
        }
        self.save("running").await?;
        Ok(None)
    }
}
