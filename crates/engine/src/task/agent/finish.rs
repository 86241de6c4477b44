//! The end of an agent trajectory (RESOLVE): the result left in the
//! workspace, the terminal event, what the bandit learnt merged into its
//! category, the trajectory's end and memory stored, and the report — with
//! the summary table a person reads — for whoever started it.

use serde_json::{Value, json};

use super::*;

impl<'r> Driver<'r> {
    /// RESOLVE: the result in the workspace, the terminal event, the bandit's
    /// learning merged into its category, the trajectory's end recorded, its
    /// memory stored (unless a sibling's win stopped it: that teaches nothing
    /// about the task), and the report for whoever started it.
    pub(super) async fn finish(mut self, ending: Ending, error: Option<String>) -> Report {
        let (suite_id, run_id, id) = (self.r.suite_id, self.r.run_id, self.place.id.clone());
        let iterations = self.state.trajectory.observations.len() as u32;
        let tokens = self.tokens_spent();
        let (status, run_status, result, partial): (String, RunStatus, Option<BestObservation>, Option<PartialResult>) =
            match &ending {
                _ if error.is_some() => ("failed".into(), RunStatus::Failed, self.best(), None),
                Ending::Control(LoopControl::Converged { result }) => {
                    ("converged".into(), RunStatus::Complete, Some(result.clone()), None)
                }
                Ending::Control(LoopControl::AcceptedPartial { result }) => {
                    ("accepted_partial".into(), RunStatus::Partial, Some(result.clone()), None)
                }
                Ending::Control(LoopControl::Exhausted { best, partial }) => {
                    ("exhausted".into(), RunStatus::Failed, best.clone(), Some(partial.clone()))
                }
                Ending::Control(LoopControl::Abandoned { best, partial }) => {
                    ("abandoned".into(), RunStatus::Failed, best.clone(), Some(partial.clone()))
                }
                Ending::Control(LoopControl::Trapped { best, partial }) => {
                    ("trapped".into(), RunStatus::Failed, best.clone(), Some(partial.clone()))
                }
                Ending::Control(_) => ("failed".into(), RunStatus::Failed, self.best(), None),
                Ending::Superseded { .. } => ("superseded".into(), RunStatus::Failed, self.best(), None),
                Ending::Decided(d) => (d.integration.status.clone(), d.integration.run_status, None, None),
            };
        let decided = match &ending {
            Ending::Decided(d) if error.is_none() => Some(d.as_ref()),
            _ => None,
        };
        let level = decided.map_or_else(|| result.as_ref().map_or(0.0, |r| r.level), |d| d.integration.level);

        // The workspace is left holding the result: the best state (which a
        // partial acceptance or an exhausted budget may have left behind), or
        // for a split trajectory what its integration trajectory made.
        let mut notes = std::mem::take(&mut self.state.notes);
        let mut adopted = None;
        if let Some(d) = decided {
            match self.ws.replace_with(&d.integration.workspace, "the integration trajectory's result").await {
                Ok(commit) => {
                    self.state.head_commit = commit.commit.clone();
                    adopted = Some(commit);
                }
                Err(e) => notes.push(format!("could not bring the integration's result into the workspace: {e}")),
            }
            self.state.trajectory.phase =
                if d.integration.converged { ConvergencePhase::Converged } else { ConvergencePhase::Exhausted };
        } else if let Some(r) = &result
            && self.ws.head() != Some(r.artifact.commit.as_str())
            && let Err(e) = self.ws.reset_to(&r.artifact.commit).await
        {
            notes.push(format!("could not put the result back into the workspace: {e}"));
        }

        // A superseded sample's open question no longer needs an answer.
        if let (Ending::Superseded { by }, Some(waiting)) = (&ending, self.state.waiting.take()) {
            let text = format!("no longer needed: sample `{by}` converged first");
            if let Err(e) = self.r.store.answer_intervention(waiting.intervention_id(), "reject", Some(&text)).await {
                notes.push(format!("could not close question #{}: {e}", waiting.intervention_id()));
            }
        }

        let tree = decided.map(|d| d.totals()).unwrap_or_default();
        if error.is_none() {
            let t = &self.state.trajectory;
            match &ending {
                Ending::Control(control @ (LoopControl::Converged { .. } | LoopControl::AcceptedPartial { .. })) => {
                    self.r.bus.publish(Event::TrajectoryConverged {
                        suite_id,
                        run_id,
                        trajectory_id: id.clone(),
                        iterations,
                        total_tokens: tokens,
                        level,
                        partial: matches!(control, LoopControl::AcceptedPartial { .. }),
                    })
                }
                Ending::Control(
                    control @ (LoopControl::Exhausted { best, .. } | LoopControl::Abandoned { best, .. }),
                ) => self.r.bus.publish(Event::TrajectoryExhausted {
                    suite_id,
                    run_id,
                    trajectory_id: id.clone(),
                    best_sequence: best.as_ref().map(|b| b.sequence),
                    budget_consumed: tokens,
                    abandoned: matches!(control, LoopControl::Abandoned { .. }),
                }),
                Ending::Control(LoopControl::Trapped { .. }) => self.r.bus.publish(Event::TrajectoryTrapped {
                    suite_id,
                    run_id,
                    trajectory_id: id.clone(),
                    cycle_period: match &t.attractor_state.classification {
                        AttractorType::LimitCycle { period, .. } => *period,
                        _ => 0,
                    },
                    escape_attempts: t.strategy_log.len() as u32,
                }),
                Ending::Control(_) => {}
                Ending::Superseded { by } => self.r.bus.publish(Event::TrajectorySuperseded {
                    suite_id,
                    run_id,
                    trajectory_id: id.clone(),
                    by: by.clone(),
                }),
                Ending::Decided(d) => {
                    if run_status != RunStatus::Failed {
                        self.r.bus.publish(Event::TrajectoryConverged {
                            suite_id,
                            run_id,
                            trajectory_id: id.clone(),
                            iterations: iterations + tree.iterations,
                            total_tokens: tokens.saturating_add(tree.tokens),
                            level,
                            partial: !d.integration.converged,
                        })
                    } else {
                        self.r.bus.publish(Event::TrajectoryExhausted {
                            suite_id,
                            run_id,
                            trajectory_id: id.clone(),
                            best_sequence: None,
                            budget_consumed: tokens.saturating_add(tree.tokens),
                            abandoned: false,
                        })
                    }
                }
            }
        }

        // What this trajectory learned joins its category's bandit.
        let (prior, learned) = (&self.state.bandit_prior, &self.state.bandit);
        let merged = self
            .r
            .store
            .merge_bandit_state(&self.kit.category, |stored| {
                let mut base = match stored {
                    Some(text) => StrategyBandit::from_json(text).map_err(|e| e.to_string())?,
                    None => StrategyBandit::default(),
                };
                base.merge_learning(prior, learned);
                Ok::<String, String>(base.to_json())
            })
            .await;
        match merged {
            Ok(Ok(())) => {}
            Ok(Err(e)) => notes.push(format!("the stored bandit state of `{}` is unusable: {e}", self.kit.category)),
            Err(e) => notes.push(format!("could not save the bandit state: {e}")),
        }

        let end_name = match &ending {
            Ending::Control(c) => c.name(),
            Ending::Superseded { .. } => "superseded",
            Ending::Decided(_) => "decomposed",
        };
        let mut summary =
            self.summary(end_name, &status, level, result.as_ref(), partial.as_ref(), error.as_deref(), &notes);
        if let Ending::Superseded { by } = &ending {
            summary["superseded_by"] = json!(by);
        }
        if let Some(d) = decided {
            summary["decomposition"] = d.summary();
            summary["result"] = json!({
                "trajectory_id": d.integration.id,
                "level": d.integration.level,
                "commit": adopted.as_ref().map(|a| a.commit.clone()),
            });
        }
        let result_text = serde_json::to_string_pretty(&summary).unwrap_or_default();
        let end = TrajectoryEnd {
            status: &status,
            state_json: &self.state.to_json(),
            iterations: i64::from(iterations),
            tokens_used: i64::try_from(tokens).unwrap_or(i64::MAX),
            final_level: Some(level),
            best_sequence: result.as_ref().map(|r| i64::from(r.sequence)),
            result_json: Some(&result_text),
        };
        if let Err(e) = self.r.store.finish_trajectory(&id, &end).await {
            tracing::warn!(error = %e, "could not record the trajectory's end");
        }
        if !matches!(ending, Ending::Superseded { .. }) {
            self.remember(&status, level, partial.as_ref(), error.as_deref()).await;
        }

        let t = &self.state.trajectory;
        let own_critique = t.observations.iter().rev().find_map(|o| o.verification.as_ref()).and_then(|v| {
            (!v.verdicts.is_empty())
                .then(|| v.verdicts.iter().filter(|c| c.passed).count() as f64 / v.verdicts.len() as f64)
        });
        let mut budget = t.budget.clone();
        budget.tokens_used = budget.tokens_used.saturating_add(tree.tokens);
        budget.iterations_used = budget.iterations_used.saturating_add(tree.iterations);
        budget.wall_time_used_ms = budget.wall_time_used_ms.saturating_add(tree.wall_time_ms);
        let weights = &self.kit.engine.config.level;
        let mut table = self.table();
        if let Some(d) = decided {
            for child in d.children.iter().chain(std::iter::once(&d.integration)) {
                table.push_str(&child.table);
            }
        }
        Report {
            id,
            status,
            run_status,
            converged: decided
                .map_or(matches!(ending, Ending::Control(LoopControl::Converged { .. })), |d| d.integration.converged),
            level,
            best_level: decided
                .map_or_else(|| t.best_observation(weights).map(|o| o.level(weights)), |d| d.integration.best_level),
            iterations: iterations + tree.iterations,
            tokens: tokens.saturating_add(tree.tokens),
            wall_time_ms: t.observations.iter().map(|o| o.wall_time_ms).fold(0, u64::saturating_add),
            gate_rejections: self.state.gate_rejections + tree.gate_rejections,
            critique_score: decided.map_or(own_critique, |d| d.integration.critique_score),
            budget_remaining: budget.remaining_fraction().clamp(0.0, 1.0),
            summary,
            table,
            error,
            workspace: self.ws.root().to_path_buf(),
            cancelled: false,
        }
    }

    /// The trajectory in a few numbers (the run's metrics and result file).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn summary(
        &self,
        end: &str,
        status: &str,
        level: f64,
        result: Option<&BestObservation>,
        partial: Option<&PartialResult>,
        error: Option<&str>,
        notes: &[String],
    ) -> Value {
        let t = &self.state.trajectory;
        let observations: Vec<Value> = t
            .observations
            .iter()
            .map(|o| {
                let attempt = self.state.attempts.iter().find(|a| a.sequence == o.sequence);
                json!({
                    "sequence": o.sequence,
                    "strategy": o.strategy_used,
                    "attractor": attempt.and_then(|a| a.attractor),
                    "summary": attempt.map(|a| a.summary.as_str()),
                    "level": o.level(&self.kit.engine.config.level),
                    "delta": o.metrics.map(|m| m.convergence_delta),
                    "commit": o.artifact.commit,
                    "tokens": o.tokens_used,
                })
            })
            .collect();
        let directives: Vec<&str> = t.gradient.history.iter().map(|r| r.directive.as_str()).collect();
        json!({
            "trajectory_id": self.place.id,
            "role": self.place.role,
            "parent_id": self.place.parent_id,
            "ordinal": self.place.ordinal,
            "status": status,
            "end": end,
            "error": error,
            "resumed": self.resumed,
            "iterations": t.observations.len(),
            "final_level": level,
            "result": result,
            "partial_result": partial,
            "strategies": t.strategy_log.iter().map(|e| e.strategy_kind).collect::<Vec<_>>(),
            "attractor": t.attractor_state.kind(),
            "attractors": self.state.attempts.iter().map(|a| a.attractor).collect::<Vec<_>>(),
            "directives": directives,
            "observations": observations,
            "fresh_starts": t.total_fresh_starts,
            "reverts": t.strategy_log.iter().filter(|e| e.strategy_kind == StrategyKind::RevertAndBranch).count(),
            "extensions_granted": t.budget.extensions_granted,
            "gate_rejections": self.state.gate_rejections,
            "tokens_used": self.tokens_spent(),
            "budget": t.budget,
            "blocked_tools": t.blocked_tools,
            "hints": t.hints,
            "category": self.kit.category,
            "setup": self.setup,
            "workspace": self.ws.root(),
            "notes": notes,
        })
    }

    /// One line per iteration, for the run's stdout: the baseline as #0,
    /// then the executions from #1.
    pub(super) fn table(&self) -> String {
        let t = &self.state.trajectory;
        let mut out = format!("trajectory {} ({})\n", self.place.id, crate::counted(t.observations.len(), "iteration"));
        if let Some(b) = &t.test_baseline {
            out.push_str(&format!("#{:<3} {:<22} {}\n", 0, "baseline", b.describe()));
        }
        for (o, plan) in t.observations.iter().zip(&t.gradient.history) {
            out.push_str(&format!(
                "#{:<3} {:<22} level {:.3}  {:<14} {}\n",
                o.sequence + 1,
                o.strategy_used.as_str(),
                o.level(&self.kit.engine.config.level),
                plan.directive.as_str(),
                state::outcome_line(&o.overseer_signals),
            ));
        }
        out
    }
}
