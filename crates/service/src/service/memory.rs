//! What the app shows of what runs learned: the trajectory repository's aggregates,
//! similar past trajectories, and the convergence memories.

use super::*;

impl Service {
    /// Every aggregate of the agent trajectories: iterations by complexity,
    /// strategy effectiveness, the attractor distribution, convergence by
    /// category — over one category or all.
    pub async fn trajectory_stats(&self, category: Option<&str>) -> Result<TrajectoryStats> {
        let category = category.map(str::trim).filter(|c| !c.is_empty());
        let threshold = crate::engine::EngineConfig::default().bandit.success_threshold;
        Ok(crate::memory::repository::stats(&self.store, category, threshold).await?)
    }

    /// The finished trajectories whose task is most like a run's, a
    /// trajectory's or a described one.
    pub async fn similar_trajectories(&self, req: &SimilarRequest) -> Result<SimilarTrajectories> {
        use crate::memory::{SimilarError, SimilarTo};
        let text = |t: &Option<String>| t.as_deref().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string);
        let to = match (req.run_id, text(&req.trajectory_id), text(&req.task)) {
            (Some(id), None, None) => SimilarTo::Run(id),
            (None, Some(id), None) => SimilarTo::Trajectory(id),
            (None, None, Some(task)) => SimilarTo::Task(task),
            _ => {
                return Err(ServiceError::BadInput(
                    "give exactly one of `run_id` (an agent run), `trajectory_id` (one of its trajectories) or \
                     `task` (a task's text)"
                        .into(),
                ));
            }
        };
        let limit = req.limit.unwrap_or(10).clamp(1, 200) as usize;
        let category = req.category.as_deref().map(str::trim).filter(|c| !c.is_empty());
        crate::memory::repository::similar(&self.store, &to, category, limit).await.map_err(|e| match e {
            SimilarError::NoTrajectory(_) | SimilarError::UnknownTrajectory(_) => ServiceError::NotFound(e.to_string()),
            SimilarError::EmptyTask => ServiceError::BadInput(e.to_string()),
            SimilarError::Store(s) => s.into(),
        })
    }

    /// The newest convergence memories, of one category or of all.
    pub async fn memories(&self, category: Option<&str>, limit: Option<u32>) -> Result<Vec<MemoryItem>> {
        let category = category.map(str::trim).filter(|c| !c.is_empty());
        let limit = limit.unwrap_or(50).clamp(1, 500) as usize;
        Ok(crate::memory::repository::memories(&self.store, category, limit).await?)
    }

    // ----- watched folders ----------------------------------------------------
}
