//! The agent driver's side of convergence memory ([`crate::memory`]):
//! recall in PREPARE, announced on the bus; a memory written in RESOLVE.
//!
//! Memory only advises: a store error while recalling or remembering is
//! logged and the trajectory goes on as if there were nothing to recall.

use super::{AgentRun, Driver};
use crate::bus::Event;
use crate::ggs::PartialResult;
use crate::memory::{self, Ending, Owner, Recall};

/// What the category's memories say about a new trajectory of `r`'s task.
pub(super) async fn recall(r: &AgentRun<'_>, category: &str) -> Recall {
    match memory::recall(&r.store, category, &r.task.task, &r.config.memory).await {
        Ok(recall) => recall,
        Err(e) => {
            tracing::warn!(task = %r.task.name, category, error = %e, "could not recall memories; starting without");
            Recall::empty(category)
        }
    }
}

/// Tells the bus what was recalled (when memory is on).
pub(super) fn announce(r: &AgentRun<'_>, trajectory_id: &str, recall: &Recall) {
    if !r.config.memory.enabled {
        return;
    }
    r.bus.publish(Event::MemoryRecalled {
        suite_id: r.suite_id,
        run_id: r.run_id,
        trajectory_id: trajectory_id.to_string(),
        category: recall.category.clone(),
        successes: recall.successes(),
        failures: recall.failures(),
        nudged: recall.nudges.keys().map(|s| s.as_str().to_string()).collect(),
        worked: recall.lessons.worked.clone(),
        avoid: recall.lessons.avoid.clone(),
        historical_convergence_rate: recall.historical_convergence_rate,
    });
}

impl Driver<'_> {
    /// RESOLVE: what this trajectory teaches becomes a memory of its
    /// category. A run that stopped on an error before any attempt teaches
    /// nothing about the task and leaves none.
    pub(super) async fn remember(
        &self,
        status: &str,
        level: f64,
        partial: Option<&PartialResult>,
        error: Option<&str>,
    ) {
        let t = &self.state.trajectory;
        if error.is_some() && t.observations.is_empty() {
            return;
        }
        let ending = Ending {
            trajectory: t,
            category: &self.kit.category,
            task_name: &self.r.task.name,
            description: &self.task.task,
            complexity: self.setup["complexity"].as_str().map(str::to_string),
            status,
            final_level: level,
            remaining: partial.map(|p| p.remaining.as_slice()).unwrap_or_default(),
            error,
        };
        let owner = Owner { trajectory_id: &self.place.id, run_id: self.r.run_id, suite_id: self.r.suite_id };
        match memory::remember(&self.r.store, owner, &ending).await {
            Ok((memory_id, m)) => self.r.bus.publish(Event::MemoryStored {
                suite_id: self.r.suite_id,
                run_id: self.r.run_id,
                trajectory_id: self.place.id.clone(),
                category: self.kit.category.clone(),
                outcome: m.outcome,
                memory_id,
            }),
            Err(e) => {
                tracing::warn!(trajectory = %self.place.id, error = %e, "could not store the trajectory's memory")
            }
        }
    }
}
