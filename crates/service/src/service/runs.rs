//! One run as the app shows it: its epoch, its output tails, its trajectories and its
//! ASO telemetry.

use super::*;

impl Service {
    /// The epoch a run belongs to, with the suite's name.
    pub async fn run_epoch(&self, run_id: i64) -> Result<RunEpoch> {
        let run = self.store.run(run_id).await?.ok_or_else(|| no_run(run_id))?;
        let suite = self.store.suite_by_id(run.suite_id).await?.ok_or_else(|| no_run(run_id))?;
        let window = crate::store::EpochWindow::Epoch(run.epoch_id);
        let epochs = self.suite_epochs_in(&suite.id.to_string(), true, window).await?;
        let epoch = epochs.epochs.into_iter().find(|e| e.epoch_id == run.epoch_id).ok_or_else(|| no_run(run_id))?;
        Ok(RunEpoch { run_id, suite_id: suite.id, suite: suite.name, epoch })
    }

    /// A run with its output tails and ASO telemetry.
    pub async fn run_detail(&self, run_id: i64) -> Result<RunDetail> {
        let run = self.store.run(run_id).await?.ok_or_else(|| no_run(run_id))?;
        let suite = self.store.suite_by_id(run.suite_id).await?.ok_or_else(|| no_run(run_id))?;
        let epoch = self.store.epoch_by_id(run.epoch_id).await?;
        let counted = self.store.epoch_runs(run.epoch_id).await?.iter().any(|c| c.run_id == run.id);
        let holdout = task_infos(&suite).iter().any(|t| t.name == run.task_name && t.holdout);
        let telemetry = match self.store.experiment_of_run(run_id).await? {
            Some(experiment) => self.store.telemetry_of_experiment(experiment).await?.into_iter().map(step).collect(),
            None => Vec::new(),
        };
        let mut trajectories = Vec::new();
        for t in self.store.trajectories_of_run(run_id).await? {
            let baseline = self.store.baseline_of_trajectory(&t.record.id).await?;
            let observations = self.store.observations_of_trajectory(&t.record.id).await?;
            trajectories.push(trajectory_view(t, baseline, observations));
        }
        let brief = RunBrief {
            id: run.id,
            suite_id: run.suite_id,
            epoch_id: run.epoch_id,
            task_name: run.task_name.clone(),
            kind: run.kind.clone(),
            status: run.status.clone(),
            started_at: run.started_at.clone(),
            finished_at: run.finished_at.clone(),
            duration_ms: run.duration_ms,
            exit_code: run.exit_code,
            loss: run.loss,
            loss_breakdown_json: run.loss_breakdown_json.clone(),
            error: run.error.clone(),
        };
        Ok(RunDetail {
            run: run_item(&brief, epoch.map_or(0, |e| e.epoch_num), holdout, counted),
            suite_id: suite.id,
            suite: suite.name,
            run_dir: run.run_dir,
            model: run.model_json.as_deref().and_then(|j| serde_json::from_str(j).ok()),
            result: run.result_json.as_deref().and_then(|j| serde_json::from_str(j).ok()),
            stdout: tail(run.stdout.as_deref().unwrap_or("")),
            stderr: tail(run.stderr.as_deref().unwrap_or("")),
            telemetry,
            trajectories,
        })
    }

    // ----- artifacts ----------------------------------------------------------
}

fn trajectory_view(
    t: crate::store::TrajectoryRow,
    baseline: Option<crate::store::ObservationRow>,
    obs: Vec<crate::store::ObservationRow>,
) -> TrajectoryView {
    TrajectoryView {
        baseline: baseline.map(iteration_view),
        id: t.record.id,
        parent_id: t.record.parent_id,
        role: TrajectoryRole::parse(&t.record.role),
        ordinal: t.record.ordinal,
        task_name: t.record.task_name,
        category: t.record.category,
        status: TrajectoryState::parse(&t.status),
        iterations: t.iterations,
        tokens_used: t.tokens_used,
        final_level: t.final_level,
        best_sequence: t.best_sequence,
        pending_intervention_id: t.pending_intervention_id,
        started_at: t.started_at,
        finished_at: t.finished_at,
        observations: obs.into_iter().map(iteration_view).collect(),
    }
}

fn iteration_view(o: crate::store::ObservationRow) -> IterationView {
    IterationView {
        sequence: o.record.sequence,
        strategy: o.record.strategy,
        forced: o.record.forced,
        attractor: o.record.attractor,
        attractor_confidence: o.record.attractor_confidence,
        level: o.record.level,
        delta: o.record.delta,
        loss: o.record.loss,
        loss_d: o.record.loss_d,
        loss_p: o.record.loss_p,
        loss_omega: o.record.loss_omega,
        grad_l: o.record.grad_l,
        directive: o.record.directive,
        rationale: o.record.rationale,
        loop_control: o.record.loop_control,
        next_strategy: o.record.next_strategy,
        tokens: o.record.tokens,
        wall_time_ms: o.record.wall_time_ms,
        files_changed: o.record.files_changed,
        lines_changed: o.record.lines_changed,
        applied_edits: o.record.applied_edits,
        rejected_edits: o.record.rejected_edits,
        commit_id: o.record.commit_id,
        summary: o.record.summary,
        verdict_summary: o.record.verdict_summary,
    }
}

fn step(r: TelemetryRow) -> TelemetryStep {
    TelemetryStep {
        timestamp: r.timestamp,
        cycle: r.cycle,
        trajectory_id: r.trajectory_id,
        step: r.step,
        status: NumericTrajectoryState::parse(&r.status),
        objective: r.objective,
        max_violation: r.max_violation,
        directive_action: crate::aso::directive::DirectiveAction::parse(&r.directive_action),
        directive_source: crate::aso::directive::DirectiveSource::parse(&r.directive_source),
        evals_used: r.evals_used,
        wall_time_ms: r.wall_time_ms,
        llm_call_made: r.llm_call_made,
    }
}

/// The last [`TAIL_BYTES`] of a captured stream, starting at a line.
fn tail(text: &str) -> OutputTail {
    if text.len() <= TAIL_BYTES {
        return OutputTail { text: text.to_string(), truncated: false };
    }
    let mut start = text.len() - TAIL_BYTES;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let cut = &text[start..];
    let cut = cut.find('\n').map_or(cut, |i| &cut[i + 1..]);
    OutputTail { text: cut.to_string(), truncated: true }
}

fn no_run(id: i64) -> ServiceError {
    ServiceError::NotFound(format!("no run {id}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_output_keeps_its_last_whole_lines() {
        let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let t = tail(&text);
        assert!(t.truncated);
        assert!(t.text.len() <= TAIL_BYTES);
        assert!(t.text.starts_with("line ") && t.text.ends_with("line 4999\n"), "{}", &t.text[..20]);
        assert_eq!(tail("short\n").text, "short\n");
    }
}
