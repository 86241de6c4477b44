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
        let counted = self.store.counted_results_of_epochs(&[before.id, after.id]).await?;
        let (b, a) = (scored(&counted, before.id, &tasks), scored(&counted, after.id, &tasks));
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
}

/// Each task's examples as the run `epoch_id` counted scored them, in the
/// suite's task order.
fn scored(counted: &[crate::store::CountedResult], epoch_id: i64, tasks: &[TaskInfo]) -> Vec<Scored> {
    tasks
        .iter()
        .filter_map(|t| {
            let c = counted.iter().find(|c| c.epoch_id == epoch_id && c.task_name == t.name)?;
            let examples = c.result_json.as_deref().map(crate::task::command::examples_of).unwrap_or_default();
            Some(Scored { task: t.name.clone(), holdout: t.holdout, examples })
        })
        .collect()
}
