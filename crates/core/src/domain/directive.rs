//! The ASO supervisor's directive, in the shape its model tier answers in
//! (a JSON schema is generated from these enums) and the bus carries.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What a supervisor tells a trajectory to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, TS)]
#[serde(rename_all = "UPPERCASE")]
pub enum DirectiveAction {
    Continue,
    Adjust,
    Stop,
    Restart,
}

impl DirectiveAction {
    pub const fn as_str(self) -> &'static str {
        match self {
            DirectiveAction::Continue => "CONTINUE",
            DirectiveAction::Adjust => "ADJUST",
            DirectiveAction::Stop => "STOP",
            DirectiveAction::Restart => "RESTART",
        }
    }

    pub fn parse(s: &str) -> DirectiveAction {
        serde_json::from_value(serde_json::Value::from(s)).unwrap_or(DirectiveAction::Continue)
    }
}

/// Which tier of supervision a directive came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum DirectiveSource {
    Llm,
    Heuristic,
    Fallback,
    Convergence,
    Human,
}

impl DirectiveSource {
    pub const fn as_str(self) -> &'static str {
        match self {
            DirectiveSource::Llm => "llm",
            DirectiveSource::Heuristic => "heuristic",
            DirectiveSource::Fallback => "fallback",
            DirectiveSource::Convergence => "convergence",
            DirectiveSource::Human => "human",
        }
    }

    pub fn parse(s: &str) -> DirectiveSource {
        serde_json::from_value(serde_json::Value::from(s)).unwrap_or(DirectiveSource::Heuristic)
    }
}

impl std::fmt::Display for DirectiveAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for DirectiveSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::super::stored::*;
    use super::*;
    use crate::loss::RunStatus;

    /// The spelling a row stores is the one serde writes, and reads back.
    fn same<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug + Copy>(value: T, text: &str) {
        assert_eq!(serde_json::to_value(value).unwrap(), serde_json::Value::from(text));
        assert_eq!(serde_json::from_value::<T>(serde_json::Value::from(text)).unwrap(), value);
    }

    #[test]
    fn every_status_and_kind_is_spelled_as_its_serialized_name() {
        for t in [TaskType::Command, TaskType::Agent, TaskType::Optimize] {
            same(t, t.as_str());
        }
        for s in ["running", "complete", "partial", "failed", "aborted", "cancelled"] {
            same(RunState::parse(s), s);
        }
        for k in ["budget_extension", "human_escalation", "execution_approval", "artifact_update", "runs_waiting"] {
            same(InterventionKind::parse(k), k);
        }
        for s in ["IN_PROGRESS", "STAGNATION", "FEASIBLE_FOUND", "DIVERGING"] {
            same(NumericTrajectoryState::parse(s), s);
        }
        for a in [DirectiveAction::Continue, DirectiveAction::Adjust, DirectiveAction::Stop, DirectiveAction::Restart] {
            same(a, a.as_str());
            assert_eq!(DirectiveAction::parse(a.as_str()), a);
        }
        for s in [
            DirectiveSource::Llm,
            DirectiveSource::Heuristic,
            DirectiveSource::Fallback,
            DirectiveSource::Convergence,
            DirectiveSource::Human,
        ] {
            same(s, s.as_str());
        }
    }

    #[test]
    fn a_value_a_newer_version_wrote_reads_as_the_fallback() {
        let read = |text: &str| serde_json::from_value::<InterventionKind>(serde_json::Value::from(text)).unwrap();
        assert_eq!(read("asked_by_a_newer_version"), InterventionKind::Other);
        assert_eq!(InterventionKind::parse("x"), InterventionKind::Other);
        assert_eq!(WatchedRunStatus::parse("x"), WatchedRunStatus::Failed);
    }

    #[test]
    fn a_cancelled_run_is_cancelled_whatever_its_score_said() {
        assert_eq!(RunState::ended(Some(RunStatus::Complete), true), RunState::Cancelled);
        assert_eq!(RunState::ended(Some(RunStatus::Partial), false), RunState::Partial);
        assert_eq!(RunState::ended(None, false), RunState::Failed);
    }
}
