//! Iteration 0: the untouched workspace measured before the first
//! execution, and the end of a task the executor cannot honestly finish.
//!
//! The baseline records every test by name and picks the targets (see
//! [`crate::overseer::baseline`]); it also finds out which test runners
//! report planted canaries truthfully, so that a later measurement whose
//! runner stops doing so is void. It is recorded as the trajectory's first
//! row (sequence -1, shown as iteration 0) and told on the bus.

use super::*;
use crate::overseer::CanaryMode;
use crate::overseer::baseline::TestBaseline;

/// Iterations in a row without a target passing that, with enough refused
/// edits to protected files among them, end a trajectory as impossible.
pub(super) const STALLED_ITERATIONS: u32 = 4;
/// Refused edits to protected files that, over such a stall, say the
/// executor is trying to change the checks rather than the code.
pub(super) const REFUSED_PROTECTED_EDITS: u32 = 3;

impl<'r> Driver<'r> {
    /// The canaries this trajectory's measurements require: those the
    /// baseline's runners reported truthfully.
    pub(super) fn require_canaries(&mut self) {
        if let Some(b) = &self.state.trajectory.test_baseline {
            self.overseers.set_canaries(CanaryMode::Require(b.canaries.iter().cloned().collect()));
        }
    }

    /// Measures the untouched workspace once (a trajectory that already has
    /// a baseline, or has iterated, keeps what it has). `Some(end)` when the
    /// run was stopped meanwhile.
    pub(super) async fn measure_baseline(&mut self) -> Result<Option<End>, AgentError> {
        // A trajectory split into subtasks does not iterate itself; one that
        // has a baseline or has iterated keeps what it has.
        if self.state.trajectory.test_baseline.is_some()
            || !self.state.trajectory.observations.is_empty()
            || self.state.coordination.is_some()
        {
            self.require_canaries();
            return Ok(None);
        }
        let started = Instant::now();
        self.overseers.set_canaries(CanaryMode::Probe);
        let policy = MeasurePolicy { skip_expensive: false };
        let m = self.overseers.measure(self.ws.root(), policy, Some(self.place.cancel.clone())).await;
        if self.cancelled() {
            return Ok(Some(self.stopped()));
        }
        // What the checks left behind is not the executor's to commit.
        if let Some(head) = self.ws.head().map(str::to_string) {
            self.ws.reset_to(&head).await?;
        }
        let scope = leftovers::Scope {
            bus: &self.r.bus,
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: &self.place.id,
            sequence: 0,
        };
        leftovers::report_measurement(&scope, self.r.spec, &m);
        let mut baseline = TestBaseline::of(m.signals.test_results.as_ref(), &self.r.spec.targets);
        baseline.canaries = m.truthful.clone();
        let summary = baseline.describe();
        let tests = baseline.total;
        let targets = u32::try_from(baseline.targets.len()).unwrap_or(u32::MAX);
        self.state.trajectory.test_baseline = Some(baseline);
        self.require_canaries();
        self.record_baseline(&m, &summary, started.elapsed()).await?;
        self.r.bus.publish(Event::BaselineMeasured {
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: self.place.id.clone(),
            tests,
            targets,
            summary,
        });
        Ok(None)
    }

    async fn record_baseline(&mut self, m: &Measurement, summary: &str, took: Duration) -> Result<(), AgentError> {
        let mut signals = m.signals.clone();
        if let (Some(b), Some(t)) = (&self.state.trajectory.test_baseline, signals.test_results.as_mut()) {
            t.judgement = Some(crate::overseer::baseline::judge(b, Some(t)));
        }
        let level = crate::engine::metrics::convergence_level(&signals, &self.kit.engine.config.level);
        let row = NewObservation {
            sequence: -1,
            strategy: "baseline".to_string(),
            commit_id: self.state.initial_commit.clone(),
            level,
            attractor: "none".to_string(),
            directive: "none".to_string(),
            rationale: "the untouched workspace, measured before the first execution".to_string(),
            loop_control: "continue".to_string(),
            wall_time_ms: i64::try_from(took.as_millis()).unwrap_or(i64::MAX),
            summary: summary.to_string(),
            verdict_summary: state::outcome_line(&m.signals),
            signals_json: to_json(&signals),
            overseer_runs_json: to_json(&m.runs),
            execution_json: "null".to_string(),
            decision_json: "null".to_string(),
            ..Default::default()
        };
        let state_json = self.state.to_json();
        self.r.store.record_iteration(&self.place.id, &row, &self.progress("running", &state_json)).await?;
        Ok(())
    }

    /// After an iteration: whether the task looks impossible to finish
    /// honestly — its targets have not moved for [`STALLED_ITERATIONS`]
    /// iterations while at least [`REFUSED_PROTECTED_EDITS`] edits to
    /// protected files were refused — and, if so, the reason a person can
    /// act on.
    pub(super) fn impossible(&self) -> Option<String> {
        let t = &self.state.trajectory;
        let baseline = t.test_baseline.as_ref().filter(|b| !b.targets.is_empty())?;
        let n = STALLED_ITERATIONS as usize;
        if t.observations.len() < n {
            return None;
        }
        let passing = |o: &Observation| o.overseer_signals.judgement().map_or(0, |j| j.targets_passing);
        let recent = &t.observations[t.observations.len() - n..];
        let best_before = t.observations[..t.observations.len() - n].iter().map(passing).max().unwrap_or(0);
        if recent.iter().map(passing).max().unwrap_or(0) > best_before {
            return None;
        }
        let first = recent[0].sequence;
        let refused: u32 =
            self.state.attempts.iter().filter(|a| a.sequence >= first).map(|a| a.refused_protected).sum();
        if refused < REFUSED_PROTECTED_EDITS {
            return None;
        }
        let failing = baseline.targets.len() as u64 - u64::from(recent.last().map_or(0, passing));
        Some(format!(
            "the {} still {} after {} iterations; {} to protected test files {} refused — the task may need \
             its tests changed, which only a person may do",
            crate::counted(failing, "target test"),
            if failing == 1 { "fails" } else { "fail" },
            STALLED_ITERATIONS,
            crate::counted(u64::from(refused), "edit"),
            if refused == 1 { "was" } else { "were" },
        ))
    }
}
