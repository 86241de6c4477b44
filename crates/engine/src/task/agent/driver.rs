//! One trajectory's loop — the Executor of the argmin split: a [`Driver`]
//! is created for a new trajectory (or reopened from its stored state),
//! then `drive` iterates until the loop control, a cancel or a sibling ends
//! it. What happens within an iteration is in `step`, how an end is
//! recorded in `finish`.

use super::*;

/// How the loop stopped.
pub(super) enum End {
    Finished(LoopControl),
    /// Stopped by the user (or a crash): resumable.
    Cancelled,
    /// Stopped because a sibling sample converged first.
    Superseded {
        by: String,
    },
    /// The trajectory was split; its subtasks and integration decided.
    Decided(Box<split::Decided>),
}

/// How a trajectory ended, as its end is recorded.
pub(super) enum Ending {
    Control(LoopControl),
    Superseded { by: String },
    Decided(Box<split::Decided>),
}

/// What a new trajectory starts from.
pub(super) struct Start {
    pub(super) place: Placement,
    /// The task as this trajectory sees it (a subtask's specification).
    pub(super) task: Task,
    pub(super) overseers: Vec<Overseer>,
    pub(super) ws: Workspace,
    pub(super) budget: ConvergenceBudget,
    pub(super) policy: ConvergencePolicy,
    pub(super) hints: Vec<String>,
    pub(super) setup: Value,
    pub(super) seed: u64,
}

pub(super) struct Driver<'r> {
    pub(super) r: &'r AgentRun<'r>,
    pub(super) kit: &'r Kit,
    pub(super) place: Placement,
    /// The task as this trajectory sees it.
    pub(super) task: Task,
    /// Its overseers (a subtask's are some of the task's).
    pub(super) overseer_specs: Vec<Overseer>,
    pub(super) overseers: OverseerRunner,
    /// The held-out checks (`hidden: true`): run once the visible ones
    /// would let the state converge; their output never reaches a prompt.
    pub(super) held_out: Option<OverseerRunner>,
    /// The files the executor may not change (`protect`).
    pub(super) protection: protect::Protection,
    /// The anti-patterns with a `forbid:` check.
    pub(super) anti_patterns: forbid::AntiPatterns,
    pub(super) ws: Workspace,
    pub(super) state: AgentState,
    pub(super) resumed: bool,
    pub(super) setup: Value,
    /// Why the next fresh start happens (for its event).
    pub(super) fresh_start_reason: Option<String>,
    /// The latest verifier failure, kept with the iteration.
    pub(super) verification_error: Option<String>,
    /// Tokens the last failed verification spent on unusable replies.
    pub(super) unverified_tokens: u64,
}

/// The visible overseers' runner and, when some are `hidden`, the held-out
/// checks' — both in the sandbox.
pub(super) fn runners(
    r: &AgentRun<'_>,
    specs: &[Overseer],
) -> Result<(OverseerRunner, Option<OverseerRunner>), AgentError> {
    // The suite's folder, where held-out checks keep what the executor must
    // not see (the workspace is all it is shown).
    let suite_dir = std::fs::canonicalize(r.suite_dir).unwrap_or_else(|_| r.suite_dir.to_path_buf());
    let runner = |specs: Vec<Overseer>| {
        OverseerRunner::new(specs, r.config.overseers.clone())
            .map(|o| {
                o.sandboxed(&r.config.sandbox)
                    .reading(suite_dir.clone())
                    .env("ATTRACTOR_SUITE_DIR", suite_dir.display().to_string())
            })
            .map_err(|source| AgentError::Overseer { task: r.task.name.clone(), source })
    };
    let (hidden, visible): (Vec<Overseer>, Vec<Overseer>) = specs.iter().cloned().partition(|o| o.hidden);
    let held_out = if hidden.is_empty() { None } else { Some(runner(hidden)?) };
    Ok((runner(visible)?, held_out))
}

impl<'r> Driver<'r> {
    /// The held-out checks' verdict on the state, when the visible checks
    /// would let it converge (below that, nothing depends on them yet).
    pub(super) async fn held_out(
        &mut self,
        visible: &crate::overseer::OverseerSignals,
        policy: MeasurePolicy,
        execution: &mut Execution,
    ) -> Result<Option<crate::overseer::OverseerSignals>, AgentError> {
        let Some(runner) = &self.held_out else { return Ok(None) };
        let level = crate::engine::metrics::convergence_level(visible, &self.kit.engine.config.level);
        if level < self.state.trajectory.policy.acceptance_threshold {
            return Ok(None);
        }
        let mut hidden = runner.measure(self.ws.root(), policy, Some(self.place.cancel.clone())).await;
        self.protection.check_measurement(&mut self.ws, &mut hidden.signals, execution).await?;
        // A held-out check that failed — or could not run — disagrees, with
        // or without results to count: no convergence on its silence.
        let failed: Vec<String> = hidden
            .signals
            .verdicts
            .iter()
            .filter(|v| !v.passed && !v.skipped)
            .map(|v| format!("held-out:{}", v.overseer))
            .collect();
        for name in failed {
            hidden.signals.custom_checks.push(crate::overseer::signals::CustomCheckResult {
                name,
                passed: false,
                detail: String::new(),
                required: true,
            });
        }
        Ok(Some(hidden.signals))
    }

    /// Starts a new trajectory in `s.ws`: the specification (with the
    /// hints), the bandit primed from its category, the first strategy, and
    /// its row.
    pub(super) async fn create(r: &'r AgentRun<'r>, kit: &'r Kit, s: Start) -> Result<Driver<'r>, AgentError> {
        let (overseers, held_out) = runners(r, &s.overseers)?;
        let t = &s.task;
        let spec = SpecificationEvolution::from_submission(&t.task, &t.constraints, &t.anti_patterns);
        let mut trajectory = Trajectory::new(&s.place.id, &r.task.name, spec, s.budget.clone(), s.policy);
        for hint in &s.hints {
            trajectory.add_hint(hint.clone());
        }
        // Samples do not split (their group would lose its shared budget),
        // nor does a trajectory as deep as splits may nest.
        if s.place.role == Role::Sample || s.place.depth >= kit.engine.config.decomposition.max_depth {
            trajectory.unavailable.insert(StrategyKind::Decompose);
        }
        let initial = s.ws.head().unwrap_or_default().to_string();
        let mut bandit = primed_bandit(&r.store, &kit.category).await?;
        kit.recall.prime(&mut bandit);
        let next = kit.engine.start(&mut trajectory, &bandit, &mut rng_at(s.seed, 0))?;
        let state = AgentState {
            trajectory,
            bandit_prior: bandit.clone(),
            bandit,
            next: Some(next),
            attempts: Vec::new(),
            initial_commit: initial.clone(),
            head_commit: initial,
            gate_rejections: 0,
            unusable_replies: 0,
            waiting: None,
            ended: None,
            seed: s.seed,
            coordination: None,
            notes: Vec::new(),
            supervision: Default::default(),
            focus: None,
            points: Vec::new(),
            told: Default::default(),
            stall_from: 0,
        };
        r.store
            .insert_trajectory(&TrajectoryRecord {
                id: s.place.id.clone(),
                run_id: r.run_id,
                suite_id: r.suite_id,
                epoch_id: r.epoch_id,
                task_name: r.task.name.clone(),
                category: kit.category.clone(),
                workspace_dir: s.ws.root().to_string_lossy().into_owned(),
                setup_json: s.setup.to_string(),
                state_json: state.to_json(),
                parent_id: s.place.parent_id.clone(),
                role: s.place.role.as_str().to_string(),
                ordinal: i64::from(s.place.ordinal),
            })
            .await?;
        remember::announce(r, &s.place.id, &kit.recall);
        Ok(Driver {
            r,
            kit,
            place: s.place,
            task: s.task,
            overseer_specs: s.overseers,
            overseers,
            held_out,
            protection: protect::Protection::of(r.spec, s.ws.root()),
            anti_patterns: forbid::AntiPatterns::for_task(r.spec),
            ws: s.ws,
            state,
            resumed: false,
            setup: s.setup,
            fresh_start_reason: None,
            verification_error: None,
            unverified_tokens: 0,
        })
    }

    /// The stored state and workspace of an unfinished trajectory, put back
    /// to its last recorded point. One that cannot be reopened (its state or
    /// its folder is gone or damaged) is closed as failed, with the reason,
    /// and `None` says to start afresh instead of failing on it every time.
    pub(super) async fn reopen(
        r: &'r AgentRun<'r>,
        kit: &'r Kit,
        place: Placement,
        row: &TrajectoryRow,
    ) -> Result<Option<Driver<'r>>, AgentError> {
        let attempt = async {
            let state: AgentState = serde_json::from_str(&row.record.state_json)
                .map_err(|e| format!("its stored state is invalid: {e}"))?;
            let mut ws = Workspace::open(Path::new(&row.record.workspace_dir), r.config.workspace.clone())
                .await
                .map_err(|e| format!("its workspace {}: {e}", row.record.workspace_dir))?;
            // Whatever an interrupted iteration left half-done is discarded.
            ws.reset_to(&state.head_commit)
                .await
                .map_err(|e| format!("its workspace could not be put back to {}: {e}", state.head_commit))?;
            Ok::<_, String>((state, ws))
        };
        let (state, ws) = match attempt.await {
            Ok(found) => found,
            Err(reason) => {
                tracing::warn!(trajectory = %row.record.id, %reason, "cannot resume the trajectory; starting afresh");
                close_unresumable(&r.store, row, &reason).await?;
                return Ok(None);
            }
        };
        let setup: Value = serde_json::from_str(&row.record.setup_json).unwrap_or_default();
        let (task, overseer_specs) = task_of(r, &setup);
        let (overseers, held_out) = runners(r, &overseer_specs)?;
        Ok(Some(Driver {
            r,
            kit,
            place,
            task,
            overseer_specs,
            overseers,
            held_out,
            protection: protect::Protection::of(r.spec, ws.root()),
            anti_patterns: forbid::AntiPatterns::for_task(r.spec),
            ws,
            state,
            resumed: true,
            setup,
            fresh_start_reason: None,
            verification_error: None,
            unverified_tokens: 0,
        }))
    }

    pub(super) fn cancelled(&self) -> bool {
        *self.place.cancel.borrow()
    }

    /// Why this trajectory was told to stop: a sibling's win, or the user.
    pub(super) fn stopped(&self) -> End {
        match self.place.group.as_ref().and_then(|g| g.superseded(&self.place.id)) {
            Some(by) => End::Superseded { by },
            None => End::Cancelled,
        }
    }

    pub(super) async fn drive(mut self) -> Report {
        let b = &self.state.trajectory.budget;
        self.r.bus.publish(Event::TrajectoryStarted {
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: self.place.id.clone(),
            task: self.r.task.name.clone(),
            resumed: self.resumed,
            max_tokens: b.max_tokens,
            max_iterations: b.max_iterations,
            max_wall_time_ms: b.max_wall_time_ms,
            basin: serde_json::from_value(self.setup["basin"]["classification"].clone()).ok(),
        });
        match self.iterate().await {
            Ok(End::Finished(control)) => {
                if let (LoopControl::Converged { .. }, Some(group)) = (&control, &self.place.group) {
                    // The siblings are stopped now, before this one's bookkeeping.
                    group.converged(&self.place.id);
                }
                self.finish(Ending::Control(control), None).await
            }
            Ok(End::Superseded { by }) => self.finish(Ending::Superseded { by }, None).await,
            Ok(End::Decided(decided)) => self.finish(Ending::Decided(decided), None).await,
            Ok(End::Cancelled) => Report::cancelled(&self.place.id, self.ws.root()),
            Err(e) => {
                tracing::warn!(task = %self.r.task.name, trajectory = %self.place.id, error = %e, "the agent run failed");
                let best = self.best();
                let control = LoopControl::Exhausted {
                    best,
                    partial: PartialResult::summary_only(format!("The run stopped on an error: {e}")),
                };
                self.finish(Ending::Control(control), Some(e.to_string())).await
            }
        }
    }
    pub(super) fn best(&self) -> Option<BestObservation> {
        let weights = &self.kit.engine.config.level;
        self.state.trajectory.best_observation(weights).map(|o| BestObservation {
            sequence: o.sequence,
            artifact: o.artifact.clone(),
            level: o.level(weights),
        })
    }

    /// The loop: settle an open question, or run the chosen strategy.
    pub(super) async fn iterate(&mut self) -> Result<End, AgentError> {
        // Iteration 0: the untouched workspace, before anything runs on it.
        if let Some(end) = self.measure_baseline().await? {
            return Ok(end);
        }
        loop {
            if let Some(waiting) = self.state.waiting.clone() {
                match self.settle(waiting).await? {
                    Some(End::Finished(control)) => {
                        // Recorded before the end's bookkeeping, which a stop could interrupt.
                        self.state.ended = Some(control.clone());
                        self.save("running").await?;
                        return Ok(End::Finished(control));
                    }
                    Some(other) => return Ok(other),
                    None => continue,
                }
            }
            if let Some(control) = self.state.ended.clone() {
                return Ok(End::Finished(control));
            }
            if self.cancelled() {
                return Ok(self.stopped());
            }
            if self.state.waiting.is_none()
                && self.state.points.is_empty()
                && let Some(reason) = self.impossible()
            {
                // The targets do not move while the executor keeps trying to
                // change the tests: more iterations would only spend budget,
                // unless a person (where the priority asks one) says otherwise.
                // Boxed: rare paths kept out of the loop's own future, which
                // a split trajectory's subtasks nest (debug builds' stacks).
                if Box::pin(self.ask_whether_impossible(&reason)).await? {
                    self.save("paused").await?;
                    continue;
                }
                return Box::pin(self.end_as_impossible(reason)).await;
            }
            // Each stage boxed: the loop's own future stays small, so a
            // split trajectory's children (driven from inside `coordinate`)
            // nest in few stack frames.
            if !self.state.points.is_empty() {
                // Points the latest iteration reached, one at a time (a pause holds the rest back).
                Box::pin(self.raise_next_point()).await?;
                continue;
            }
            if self.state.coordination.is_some() {
                // Split: the subtasks and the integration decide.
                return Box::pin(self.coordinate()).await;
            }
            let Some(choice) = self.state.next.clone() else {
                return Err(AgentError::Resume {
                    id: self.place.id.clone(),
                    reason: "its state has neither a next strategy nor an open question".to_string(),
                });
            };
            if let Some(end) = Box::pin(self.step(choice)).await? {
                return Ok(end);
            }
        }
    }
}
