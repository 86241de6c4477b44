//! Iteration 0: the untouched workspace measured before the first
//! execution, and the end of a task the executor cannot honestly finish.
//!
//! Tasks with a test overseer have one. The baseline records every test by name and picks the targets (see
//! [`crate::overseer::baseline`]); it also finds out which test runners
//! report planted canaries truthfully, so that a later measurement whose
//! runner stops doing so is void. It is recorded as the trajectory's first
//! row (sequence -1, shown as iteration 0) and told on the bus, and kept
//! beside the suite's epochs (`<runs>/<suite>/.baselines/`) so that a later
//! run of the same unchanged workspace with the same checks reuses it
//! instead of measuring again.

use serde::Deserialize;

use super::*;
use crate::overseer::CanaryMode;
use crate::overseer::OverseerSignals;
use crate::overseer::baseline::TestBaseline;

/// A baseline kept for later runs of the same unchanged workspace.
#[derive(Serialize, Deserialize)]
struct CachedBaseline {
    baseline: TestBaseline,
    signals: OverseerSignals,
}

/// Baselines kept per suite; the least recently written go first (each
/// is a few kilobytes to a few hundred: a test's name per test).
const KEPT_BASELINES: usize = 64;

/// Removes the oldest `.json` files of `dir` beyond the newest `keep`.
fn forget_oldest(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut kept: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if kept.len() <= keep {
        return;
    }
    kept.sort();
    for (_, path) in &kept[..kept.len() - keep] {
        let _ = std::fs::remove_file(path);
    }
}

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
        // Nor does a task without a test overseer need one: nothing would be
        // judged against it.
        if self.state.trajectory.test_baseline.is_some()
            || !self.state.trajectory.observations.is_empty()
            || self.state.coordination.is_some()
            || !self.overseer_specs.iter().any(|o| o.kind == OverseerKind::Test)
        {
            self.require_canaries();
            return Ok(None);
        }
        let started = Instant::now();
        let key = self.cache_key().await;
        if let Some(cached) = key.as_deref().and_then(|k| self.cached(k)) {
            // The same files measured by the same checks: reused, not run again.
            let summary =
                format!("{} (reused: the same workspace was measured by an earlier run)", cached.baseline.describe());
            self.state.trajectory.test_baseline = Some(cached.baseline);
            self.require_canaries();
            let m = Measurement { signals: cached.signals, ..Default::default() };
            self.record_baseline(&m, &summary, started.elapsed()).await?;
            self.publish_baseline(summary);
            return Ok(None);
        }
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
        // An environmental failure measured nothing: not worth keeping.
        if let Some(key) = key.filter(|_| !m.signals.has_environmental_failure()) {
            self.keep(&key, &CachedBaseline { baseline: baseline.clone(), signals: m.signals.clone() });
        }
        self.state.trajectory.test_baseline = Some(baseline);
        self.require_canaries();
        self.record_baseline(&m, &summary, started.elapsed()).await?;
        self.publish_baseline(summary);
        Ok(None)
    }

    fn publish_baseline(&self, summary: String) {
        let b = self.state.trajectory.test_baseline.as_ref();
        self.r.bus.publish(Event::BaselineMeasured {
            suite_id: self.r.suite_id,
            run_id: self.r.run_id,
            trajectory_id: self.place.id.clone(),
            tests: b.map_or(0, |b| b.total),
            targets: b.map_or(0, |b| u32::try_from(b.targets.len()).unwrap_or(u32::MAX)),
            summary,
        });
    }

    /// Where the suite's baselines are kept: beside its epochs' folders.
    fn cache_dir(&self) -> Option<PathBuf> {
        self.r.run_dir.parent()?.parent().map(|suite| suite.join(".baselines"))
    }

    /// What makes two baselines the same: the untouched workspace's files
    /// (its tree id), the checks (their commands and settings), the task's
    /// targets and whether canaries are planted. `None` when the tree
    /// cannot be read (nothing is reused then).
    async fn cache_key(&self) -> Option<String> {
        use sha2::{Digest, Sha256};
        let tree = self.ws.tree_id(&self.state.initial_commit).await.ok()?;
        let what = serde_json::json!({
            "version": 2,
            "tree": tree,
            "overseers": self.overseer_specs,
            "targets": self.r.spec.targets,
            "canaries": self.r.config.overseers.canaries,
            "sandbox": self.r.config.sandbox.enabled,
        });
        Some(format!("{:x}", Sha256::digest(what.to_string().as_bytes())))
    }

    fn cached(&self, key: &str) -> Option<CachedBaseline> {
        let text = std::fs::read_to_string(self.cache_dir()?.join(format!("{key}.json"))).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Keeps a baseline for later runs; a failure to write costs only the reuse.
    fn keep(&self, key: &str, cached: &CachedBaseline) {
        let Some(dir) = self.cache_dir() else { return };
        let write = std::fs::create_dir_all(&dir).and_then(|()| {
            // Written whole, then renamed: a reader never sees half a file.
            let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
            std::fs::write(&tmp, to_json(cached))?;
            std::fs::rename(&tmp, dir.join(format!("{key}.json")))
        });
        if let Err(e) = write {
            tracing::debug!(error = %e, "could not keep the baseline for later runs");
        }
        forget_oldest(&dir, KEPT_BASELINES);
    }

    async fn record_baseline(&mut self, m: &Measurement, summary: &str, took: Duration) -> Result<(), AgentError> {
        let mut signals = m.signals.clone();
        if let (Some(b), Some(t)) = (&self.state.trajectory.test_baseline, signals.test_results.as_mut()) {
            t.judgement = Some(crate::overseer::baseline::judge(b, Some(t)));
        }
        let level = crate::engine::metrics::convergence_level(&signals, &self.kit.engine.config.level);
        let row = ObservationRecord {
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
        // Counted from where a person last said to go on.
        if t.observations.len() < self.state.stall_from + n {
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

    /// Asks a person about a task that looks impossible, where the task's
    /// priority pauses at a human escalation (a notice otherwise, or
    /// nothing): `true` when the trajectory now waits on the answer.
    pub(super) async fn ask_whether_impossible(&mut self, reason: &str) -> Result<bool, AgentError> {
        let kind = InterventionKind::HumanEscalation;
        let mode = self.mode(kind);
        let proposal = match mode {
            InterventionMode::Pause => format!(
                "Approve or reject to end the trajectory unconverged; answer with a hint (what the executor should \
                 know, or that you changed the tests) to go on for {STALLED_ITERATIONS} more iterations."
            ),
            _ => "The trajectory ends unconverged; nothing waits on this notice.".to_string(),
        };
        let judgement = self.state.trajectory.observations.last().and_then(|o| o.overseer_signals.judgement());
        let context = serde_json::json!({
            "what": reason,
            "why": "The target tests do not move while the executor keeps trying to change protected test files; \
                    only a person may decide that the tests themselves are wrong.",
            "evidence": {"judgement": judgement, "trajectory_id": self.place.id},
            "proposed_action": "end",
            "proposal": proposal,
        });
        let subject = format!("Task `{}` looks impossible without changing its tests", self.r.task.name);
        let reason = reason.to_string();
        match self.intervene(kind, mode, subject, context).await? {
            Some(intervention_id) if mode == InterventionMode::Pause => {
                self.state.waiting = Some(Waiting::Impossible { intervention_id, reason });
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Ends the trajectory unconverged with `reason`.
    pub(super) async fn end_as_impossible(&mut self, reason: String) -> Result<End, AgentError> {
        tracing::info!(trajectory = %self.place.id, %reason, "ending the trajectory: the task looks impossible");
        let control = self.kit.engine.stop(&mut self.state.trajectory, &reason)?;
        self.state.notes.push(reason);
        self.state.next = None;
        self.state.ended = Some(control.clone());
        self.save("running").await?;
        Ok(End::Finished(control))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_newest_baselines_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5u64 {
            let path = dir.path().join(format!("{i}.json"));
            std::fs::write(&path, "{}").unwrap();
            let when = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000 + i);
            std::fs::File::options().write(true).open(&path).unwrap().set_modified(when).unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), "").unwrap();
        forget_oldest(dir.path(), 3);
        let mut left: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into()).collect();
        left.sort();
        assert_eq!(left, vec!["2.json", "3.json", "4.json", "notes.txt"]);
    }
}
