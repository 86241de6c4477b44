//! One iteration of an agent trajectory, the loop's body: announce the
//! strategy, execute it, measure the workspace, ask the intent verifier when
//! the policy says so, let the engine decide, record, and act on the loop
//! control (go on, wait for a person, end). The loop around it, the budgets
//! and the trajectory's start are in the module above; its end in `finish`.

use serde_json::json;

use super::*;

impl<'r> Driver<'r> {
    /// Tells the bus what is about to run.
    pub(super) fn announce(&mut self, choice: &StrategyChoice, sequence: u32) {
        let (suite_id, run_id, id) = (self.r.suite_id, self.r.run_id, self.place.id.clone());
        let t = &self.state.trajectory;
        self.r.bus.publish(Event::StrategySelected {
            suite_id,
            run_id,
            trajectory_id: id.clone(),
            sequence,
            strategy: choice.kind,
            forced: choice.forced,
            attractor: t.attractor_state.kind(),
            directive: choice.directive,
            budget_remaining: t.budget.remaining_fraction().clamp(0.0, 1.0),
        });
        match choice.kind {
            StrategyKind::FreshStart => {
                let reason = self.fresh_start_reason.take().unwrap_or_else(|| {
                    if choice.forced {
                        "loop control forced it".to_string()
                    } else {
                        format!("chosen under a {} attractor", t.attractor_state.kind())
                    }
                });
                self.r.bus.publish(Event::FreshStart {
                    suite_id,
                    run_id,
                    trajectory_id: id,
                    sequence,
                    forced: choice.forced,
                    reason,
                    best_sequence: choice.carry_forward.as_ref().map(|c| c.best_sequence),
                });
            }
            StrategyKind::RevertAndBranch => {
                if let Some(target) = &choice.revert_to {
                    self.r.bus.publish(Event::Reverted {
                        suite_id,
                        run_id,
                        trajectory_id: id,
                        sequence,
                        to_sequence: target.sequence,
                        commit: target.artifact.commit.clone(),
                    });
                }
            }
            _ => {}
        }
    }

    /// One iteration: execute, measure, verify, decide, record. A split
    /// (`decompose`) is no iteration: the model is asked for subtasks instead.
    pub(super) async fn step(&mut self, choice: StrategyChoice) -> Result<Option<End>, AgentError> {
        if choice.kind == StrategyKind::Decompose {
            return self.split(choice).await;
        }
        // A sample claims its iteration from the group's budget first; when
        // the siblings took the last ones, it ends as out of budget.
        let reservation = match &self.place.group {
            Some(group) => match parallel::Group::reserve(group) {
                Some(reservation) => Some(reservation),
                None => {
                    let mut control = None;
                    group.with_ledger(|ledger| ledger.lend(&mut self.state.trajectory));
                    if !self.state.trajectory.phase.is_terminal() {
                        control = Some(self.kit.engine.conclude_out_of_budget(&mut self.state.trajectory)?);
                    }
                    let control = control.unwrap_or_else(|| LoopControl::Exhausted {
                        best: self.best(),
                        partial: PartialResult::summary_only("the shared budget ran out"),
                    });
                    self.state.next = None;
                    self.state.ended = Some(control.clone());
                    self.save("running").await?;
                    return Ok(Some(End::Finished(control)));
                }
            },
            None => None,
        };
        let sequence = self.state.trajectory.observations.len() as u32;
        self.announce(&choice, sequence);
        let started = Instant::now();

        let revert_carry = (choice.kind == StrategyKind::RevertAndBranch)
            .then(|| self.kit.engine.carry_forward(&self.state.trajectory))
            .flatten();
        let request = ExecutionRequest {
            sequence,
            strategy: choice.kind,
            inputs: PromptInputs {
                lessons: Recall::lessons_of_setup(&self.setup),
                ..state::prompt_inputs(&self.task, &self.state, &choice, revert_carry.as_ref())
            },
            texts: self.kit.texts.clone(),
            revert_to: choice.revert_to.as_ref().map(state::revert_target),
            cancel: Some(self.place.cancel.clone()),
        };
        // A supervisor's focus is for this attempt only.
        self.state.focus = None;
        let before = self.ws.head().map(str::to_string);
        let mut execution = match self.kit.executor.execute(&request, &mut self.ws).await {
            Ok(e) => {
                self.state.unusable_replies = 0;
                e
            }
            Err(ExecutorError::Cancelled) => return Ok(Some(self.stopped())),
            Err(ExecutorError::Llm(e)) if e.is_budget_spent() => {
                // The run's model budget cannot pay for another attempt: the
                // trajectory ends here with its best result, like one out of
                // its own budget, and says why.
                let control = self.kit.engine.stop(&mut self.state.trajectory, &e.short_reason())?;
                self.state.next = None;
                self.state.ended = Some(control.clone());
                self.save("running").await?;
                return Ok(Some(End::Finished(control)));
            }
            Err(ExecutorError::Llm(e @ (LlmError::InvalidJson { .. } | LlmError::CutOff { .. })))
                if self.state.unusable_replies < self.r.config.max_unusable_replies =>
            {
                // A reply that is not the structured answer asked for is
                // refused as a whole: the state stays as it was, and the
                // refusal counts like any other.
                self.state.unusable_replies += 1;
                let message = format!("observation {sequence}: {} (the reply could not be used)", choice.kind);
                let artifact = self.ws.commit(&message).await?;
                Execution {
                    artifact,
                    // An unusable reply was paid for all the same.
                    tokens: e.spent().1.total_tokens,
                    wall_time: started.elapsed(),
                    summary: format!("(the reply could not be used: {})", e.short_reason()),
                    applied: Vec::new(),
                    rejected: Vec::new(),
                    tools_used: Vec::new(),
                    status: ExecutionStatus::Rejected { reason: e.to_string() },
                    subtasks: Vec::new(),
                    amendments: Vec::new(),
                    left_running: Vec::new(),
                }
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(before) = &before {
            let undone = self.protection.enforce(&mut self.ws, before, &mut execution).await?;
            if !undone.is_empty() {
                tracing::info!(trajectory = %self.place.id, files = ?undone, "undid changes to protected files");
            }
        }
        if self.cancelled() {
            return Ok(Some(self.stopped()));
        }

        let policy = MeasurePolicy { skip_expensive: self.state.trajectory.policy.skip_expensive_overseers };
        let mut measurement = self.overseers.measure(self.ws.root(), policy, Some(self.place.cancel.clone())).await;
        let tampered =
            self.protection.check_measurement(&mut self.ws, &mut measurement.signals, &mut execution).await?;
        if !tampered.is_empty() {
            tracing::warn!(trajectory = %self.place.id, files = ?tampered, "protected files changed while the checks ran");
        }
        // A check that cannot read the history is skipped with a warning, not
        // a failed iteration.
        match self.anti_patterns.check(&self.ws, &self.state.initial_commit, &execution.artifact.commit).await {
            Ok(failing) => measurement.signals.custom_checks.extend(failing),
            Err(e) => tracing::warn!(trajectory = %self.place.id, error = %e, "could not check the anti-patterns"),
        }
        let held_out = self.held_out(&measurement.signals, policy, &mut execution).await?;
        let scope = leftovers::Scope {
            bus: &self.r.bus,
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: &self.place.id,
            sequence,
        };
        leftovers::report(&scope, self.r.spec, &execution, &measurement);
        if self.cancelled() {
            return Ok(Some(self.stopped()));
        }
        let verified = match &self.kit.verifier {
            Some(_) if self.kit.engine.should_verify(&self.state.trajectory) => {
                self.verify(&measurement, &execution.artifact).await
            }
            _ => None,
        };

        let mut observation = Observation::new(choice.kind, execution.artifact.clone(), measurement.signals.clone());
        observation.verification = verified.as_ref().map(|v| v.result.clone());
        observation.tokens_used = execution.tokens + verified.as_ref().map_or(self.unverified_tokens, |v| v.tokens);
        observation.wall_time_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        observation.tools_used = execution.tools_used.clone();
        observation.held_out = held_out;

        self.state.gate_rejections += execution.rejection_count();
        self.state.attempts.push(AttemptRecord::of(sequence, &execution));
        if choice.kind == StrategyKind::ArchitectReview {
            for a in execution.amendments.iter().map(|a| a.trim()).filter(|a| !a.is_empty()) {
                self.state.trajectory.specification.amend(
                    AmendmentSource::ArchitectAmendment,
                    a,
                    "proposed by an architect review",
                    Some(sequence),
                );
            }
        }

        let mut rng = rng_at(self.state.seed, u64::from(sequence) + 1);
        let (engine, trajectory, bandit) = (&self.kit.engine, &mut self.state.trajectory, &mut self.state.bandit);
        let mut decision = match reservation {
            // A sample records against the group's budget, under its lock.
            Some(reservation) => reservation.record(trajectory, |t| engine.decide(t, bandit, observation, &mut rng))?,
            None => engine.decide(trajectory, bandit, observation, &mut rng)?,
        };
        self.state.head_commit = execution.artifact.commit.clone();
        self.state.next = decision.next.clone();
        let kit = self.kit;
        if let Some(sup) = &kit.supervision {
            if decision.loop_control.continues() {
                self.supervise(sup, &mut decision, started).await;
            } else {
                self.observe_engine_control(sup, &decision, started).await;
            }
        }
        if let Some(attempt) = self.state.attempts.last_mut() {
            attempt.attractor = Some(decision.attractor.kind());
        }

        let end = self.act_on(&decision).await?;
        if let Some(End::Finished(control)) = &end {
            self.state.ended = Some(control.clone());
        }
        if end.is_none() && self.state.waiting.is_none() {
            // Raised from the loop, after this iteration is recorded.
            let points =
                crate::engine::intervention::points_after(&decision, &self.state.trajectory, &mut self.state.told);
            self.state.points.extend(points);
        }
        self.record(&choice, &execution, &measurement, verified.as_ref(), &decision).await?;
        Ok(end)
    }

    /// Events and intervention points of a decision; the end, if it is one.
    pub(super) async fn act_on(&mut self, d: &Decision) -> Result<Option<End>, AgentError> {
        let (suite_id, run_id, id) = (self.r.suite_id, self.r.run_id, self.place.id.clone());
        match &d.loop_control {
            LoopControl::Continue => Ok(None),
            LoopControl::ForceFreshStart { reason } => {
                self.fresh_start_reason = Some(format!("the executor's context degraded ({reason:?})"));
                Ok(None)
            }
            LoopControl::ExtensionGranted { extension } => {
                let evidence = self.convergence_evidence(d);
                self.r.bus.publish(Event::BudgetExtensionRequested {
                    suite_id,
                    run_id,
                    trajectory_id: id.clone(),
                    additional_tokens: extension.additional_tokens,
                    additional_iterations: extension.additional_iterations,
                    evidence: evidence.clone(),
                    intervention_id: None,
                });
                self.r.bus.publish(Event::BudgetExtensionGranted {
                    suite_id,
                    run_id,
                    trajectory_id: id,
                    additional_tokens: extension.additional_tokens,
                    additional_iterations: extension.additional_iterations,
                    by: "auto".to_string(),
                });
                self.tell_extension(extension, evidence).await?;
                Ok(None)
            }
            LoopControl::ExtensionRequested { extension } => {
                let evidence = self.convergence_evidence(d);
                let b = &self.state.trajectory.budget;
                let subject = format!(
                    "Task `{}` is converging and out of budget: extend it by {} and {} tokens?",
                    self.r.task.name,
                    crate::counted(extension.additional_iterations, "iteration"),
                    extension.additional_tokens
                );
                let context = json!({
                    "what": format!("The trajectory used {} of {} iterations and {} of {} tokens while still converging.",
                        b.iterations_used, b.max_iterations, b.tokens_used, b.max_tokens),
                    "why": format!("{} asks a person before spending more than planned.",
                        if self.kit.engine.config.interventions.budget_extension.is_some() {
                            "The engine configuration (`interventions.budget_extension: pause`)"
                        } else {
                            "The task's priority (thorough)"
                        }),
                    "evidence": {"convergence": evidence, "level": d.level, "attractor": d.attractor.kind(),
                                 "loss": d.gradient.loss, "trajectory_id": id},
                    "proposed_action": "extend_budget",
                    "extension": extension,
                    "proposal": "Approve to extend the budget and go on; reject to end with the best result so far; \
                                 or answer with a hint, which extends the budget and is followed from the next attempt.",
                });
                // The engine asks only when the point's mode is `pause`.
                let kind = InterventionKind::BudgetExtension;
                let intervention_id = self.intervene(kind, InterventionMode::Pause, subject, context).await?;
                self.r.bus.publish(Event::BudgetExtensionRequested {
                    suite_id,
                    run_id,
                    trajectory_id: id,
                    additional_tokens: extension.additional_tokens,
                    additional_iterations: extension.additional_iterations,
                    evidence,
                    intervention_id,
                });
                if let Some(intervention_id) = intervention_id {
                    self.state.waiting = Some(Waiting::BudgetExtension { intervention_id, extension: *extension });
                }
                Ok(None)
            }
            terminal => self.conclude_at_point(terminal.clone()).await,
        }
    }

    pub(super) fn convergence_evidence(&self, d: &Decision) -> String {
        format!(
            "attractor {} (confidence {:.2}), convergence level {:.0}%",
            d.attractor.kind(),
            d.attractor.confidence,
            d.level * 100.0
        )
    }

    /// Waits for the answer to the open question and acts on it.
    pub(super) async fn settle(&mut self, waiting: Waiting) -> Result<Option<End>, AgentError> {
        let id = waiting.intervention_id();
        let poll = Duration::from_millis(self.r.config.intervention_poll_ms);
        let timeout =
            self.r.config.intervention_timeout_secs.filter(|s| s.is_finite() && *s >= 0.0).map(crate::time::secs);
        tracing::info!(task = %self.r.task.name, intervention = id, "waiting for a person's answer");
        let answer = intervene::wait(&self.r.store, id, poll, timeout, self.place.cancel.clone()).await?;
        if answer == Answer::Cancelled {
            return Ok(Some(self.stopped()));
        }
        let step = ANSWER_STEP + self.state.trajectory.observations.len() as u64;
        self.state.waiting = None;
        self.settle_point(waiting, answer, step).await
    }

    /// Asks the intent verifier about the state just measured; a failure
    /// leaves the observation unverified (and is kept with the iteration).
    pub(super) async fn verify(&mut self, m: &Measurement, head: &ArtifactReference) -> Option<verify::Verified> {
        let verifier = self.kit.verifier.as_ref()?;
        let diff = match self.ws.diff(&self.state.initial_commit, &head.commit).await {
            Ok(d) => d,
            Err(e) => format!("(the diff could not be read: {e})"),
        };
        let files = self.ws.list_files().await.map(|l| l.files).unwrap_or_default();
        let spec = self.state.trajectory.specification.effective.render();
        let evidence = verify::Evidence {
            task_name: &self.task.name,
            specification: &spec,
            signals: Some(&m.signals),
            diff: &diff,
            files: &files,
        };
        match verifier.verify(&evidence).await {
            Ok(v) => {
                self.verification_error = None;
                self.unverified_tokens = 0;
                Some(v)
            }
            Err(e) => {
                tracing::warn!(
                    "the intent verification of task {} failed ({}); going on unverified",
                    self.r.task.name,
                    e.short_reason()
                );
                self.verification_error = Some(e.to_string());
                self.unverified_tokens = e.spent().1.total_tokens;
                None
            }
        }
    }

    /// What the trajectory's row says between iterations: `state_json` is
    /// the state as [`AgentState::to_json`] wrote it.
    pub(super) fn progress<'s>(&self, status: &'s str, state_json: &'s str) -> TrajectoryProgress<'s> {
        TrajectoryProgress {
            status,
            state_json,
            pending_intervention_id: self.state.waiting.as_ref().map(Waiting::intervention_id),
            iterations: self.state.trajectory.observations.len() as i64,
            tokens_used: i64::try_from(self.tokens_spent()).unwrap_or(i64::MAX),
        }
    }

    /// Stores the state (no new observation).
    pub(super) async fn save(&self, status: &str) -> Result<(), AgentError> {
        let state_json = self.state.to_json();
        self.r.store.update_trajectory(&self.place.id, &self.progress(status, &state_json)).await?;
        Ok(())
    }

    /// Records the iteration and its state together, then tells the bus.
    pub(super) async fn record(
        &mut self,
        choice: &StrategyChoice,
        e: &Execution,
        m: &Measurement,
        verified: Option<&verify::Verified>,
        d: &Decision,
    ) -> Result<(), AgentError> {
        let t = &self.state.trajectory;
        let Some(obs) = t.observations.last() else { return Ok(()) };
        // The signals as the engine judged them (against the baseline).
        let mut verdict_summary = state::outcome_line(&obs.overseer_signals);
        match (verified, &self.verification_error) {
            (Some(v), _) => {
                let passed = v.result.verdicts.iter().filter(|c| c.passed).count();
                verdict_summary.push_str(&format!(
                    "; intent {} ({passed} of {} criteria, confidence {:.2})",
                    if v.result.satisfied { "satisfied" } else { "not satisfied" },
                    v.result.verdicts.len(),
                    v.result.confidence
                ));
            }
            (None, Some(err)) => verdict_summary.push_str(&format!("; intent verification failed: {err}")),
            (None, None) => {}
        }
        let row = ObservationRecord {
            sequence: i64::from(d.sequence),
            strategy: choice.kind.as_str().to_string(),
            forced: choice.forced,
            commit_id: e.artifact.commit.clone(),
            files_changed: i64::from(e.artifact.files_changed),
            lines_changed: i64::from(e.artifact.lines_changed),
            level: d.level,
            delta: d.metrics.map(|x| x.convergence_delta),
            attractor: d.attractor.kind().as_str().to_string(),
            attractor_confidence: d.attractor.confidence,
            loss_d: d.gradient.loss.d,
            loss_p: d.gradient.loss.p,
            loss_omega: d.gradient.loss.omega,
            loss: d.gradient.loss.l,
            grad_l: d.gradient.grad_l,
            directive: d.gradient.directive.as_str().to_string(),
            rationale: d.gradient.rationale.clone(),
            loop_control: d.loop_control.name().to_string(),
            next_strategy: d.next.as_ref().map(|n| n.kind.as_str().to_string()),
            tokens: i64::try_from(obs.tokens_used).unwrap_or(i64::MAX),
            wall_time_ms: i64::try_from(obs.wall_time_ms).unwrap_or(i64::MAX),
            applied_edits: e.applied.len() as i64,
            rejected_edits: i64::from(e.rejection_count()),
            summary: e.summary.clone(),
            verdict_summary,
            verification_json: verified.map(|v| to_json(&v.result)),
            signals_json: to_json(&obs.overseer_signals),
            overseer_runs_json: to_json(&m.runs),
            execution_json: to_json(e),
            decision_json: to_json(d),
        };
        let status = if self.state.waiting.is_some() { "paused" } else { "running" };
        let state_json = self.state.to_json();
        self.r.store.record_iteration(&self.place.id, &row, &self.progress(status, &state_json)).await?;
        let (suite_id, run_id, id) = (self.r.suite_id, self.r.run_id, self.place.id.clone());
        if let Some(tr) = d.transition {
            self.r.bus.publish(Event::AttractorTransition {
                suite_id,
                run_id,
                trajectory_id: id.clone(),
                sequence: d.sequence,
                from: tr.from,
                to: tr.to,
                confidence: d.attractor.confidence,
            });
        }
        self.r.bus.publish(Event::IterationCompleted {
            suite_id,
            run_id,
            trajectory_id: id,
            sequence: d.sequence,
            strategy: choice.kind,
            level: d.level,
            delta: d.metrics.map(|x| x.convergence_delta),
            attractor: d.attractor.kind(),
            directive: d.gradient.directive,
            loss: d.gradient.loss.l,
            tokens: obs.tokens_used,
            budget_remaining: t.budget.remaining_fraction().clamp(0.0, 1.0),
            loop_control: d.loop_control.kind(),
            thrashing: d.thrashing.clone(),
        });
        Ok(())
    }

    /// Tokens this trajectory spent itself (a sample's budget shows its group's).
    pub(super) fn tokens_spent(&self) -> u64 {
        let t = &self.state.trajectory;
        if self.place.group.is_some() {
            t.observations.iter().map(|o| o.tokens_used).fold(0, u64::saturating_add)
        } else {
            t.budget.tokens_used
        }
    }
}
