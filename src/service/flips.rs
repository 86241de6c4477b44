//! Which examples flipped between two epochs of a suite (`crate::task::examples`):
//! what the app shows beside two versions of a dataset harness's prompt.

use super::*;
use crate::task::examples::{self, Scored};

impl Service {
    /// The examples right in one epoch and wrong in the other, with the
    /// artifact versions each epoch ran with.
    pub async fn suite_flips(&self, key: &str, from: i64, to: i64) -> Result<ExampleFlips> {
        let row = self.find_suite(key).await?;
        let tasks = task_infos(&row);
        let epochs = self.store.epochs(row.id).await?;
        let epoch = |num: i64| {
            epochs.iter().find(|e| e.epoch_num == num).ok_or_else(|| {
                ServiceError::NotFound(format!(
                    "suite `{}` has no epoch {num} (it has {}); pick two of its epochs",
                    row.name,
                    epochs.len()
                ))
            })
        };
        let (before, after) = (epoch(from)?, epoch(to)?);
        let b = self.scored_examples(before.id, &tasks).await?;
        let a = self.scored_examples(after.id, &tasks).await?;
        let (flips, compared) = examples::flips(&b, &a);
        let versions = |json: &str| serde_json::from_str(json).unwrap_or_default();
        Ok(ExampleFlips {
            suite: row.name,
            from_epoch: from,
            to_epoch: to,
            from_versions: versions(&before.parent_artifacts_json),
            to_versions: versions(&after.parent_artifacts_json),
            compared: u32::try_from(compared).unwrap_or(u32::MAX),
            flips,
        })
    }

    /// Each task's examples as the run an epoch counted scored them.
    async fn scored_examples(&self, epoch_id: i64, tasks: &[TaskInfo]) -> Result<Vec<Scored>> {
        let counted = self.store.epoch_runs(epoch_id).await?;
        let runs = self.store.runs_of_epoch(epoch_id).await?;
        let mut out = Vec::new();
        for t in tasks {
            let Some(c) = counted.iter().find(|c| c.task_name == t.name) else { continue };
            let json = runs.iter().find(|r| r.id == c.run_id).and_then(|r| r.result_json.as_deref());
            let examples = json.map(crate::task::command::examples_of).unwrap_or_default();
            out.push(Scored { task: t.name.clone(), holdout: t.holdout, examples });
        }
        Ok(out)
    }
}
