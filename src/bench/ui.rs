//! The UI benchmark's data: a suite history of the size the app must stay
//! responsive at (500 epochs × 50 tasks by default), written through the
//! store the way real runs write it — a run row per task and epoch with its
//! loss breakdown, an epoch close with the artifact moves and the optimizer's
//! proposals, new artifact versions on updates, pointer flips on rollbacks.
//!
//! The losses follow a simple model so the charts look like a learning run:
//! a slowly falling trend, a fixed difficulty per task, noise, and a latent
//! effect per artifact version (mostly helpful, sometimes harmful). An update
//! whose next epoch's mean loss is worse is rolled back, exactly the outer
//! loop's rule, so updates and rollbacks appear where a real run would put
//! them. A few runs fail. `bench/ui` (see bench/README.md) fills a database
//! with this and measures the app against it.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde_json::json;

use crate::artifact::{ArtifactDef, ArtifactKind, FieldBounds, Origin, Registry, RegistryError};
use crate::domain::{ArtifactEvent, EpochEvent, EpochRecord, RollbackReason};
use crate::loss::{LossSignals, LossWeights, RunStatus};
use crate::store::{
    ArtifactChange, EpochClose, ObservedEffect, ProposalOutcome, ProposalRecord, RunEnd, Store, StoreError,
};

/// What to generate.
#[derive(Debug, Clone)]
pub struct FillConfig {
    pub suite: String,
    pub epochs: u32,
    pub tasks: u32,
    /// How many of the tasks are held out.
    pub holdout: u32,
    pub seed: u64,
}

impl Default for FillConfig {
    fn default() -> Self {
        FillConfig { suite: "ui-bench".into(), epochs: 500, tasks: 50, holdout: 5, seed: 1 }
    }
}

/// What was written.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Filled {
    pub suite: String,
    pub suite_id: i64,
    pub epochs: u32,
    pub runs: u64,
    pub updates: u32,
    pub rollbacks: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum FillError {
    #[error("suite `{0}` is already in this database\n  hint: fill a fresh database (--db NEW.db)")]
    Exists(String),
    #[error("--holdout {holdout} must be smaller than --tasks {tasks}")]
    Holdout { holdout: u32, tasks: u32 },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// The suite's own artifacts: one JSON settings document and two texts.
const ARTIFACTS: [(&str, ArtifactKind); 3] = [
    ("bench_settings", ArtifactKind::Json),
    ("bench_preamble", ArtifactKind::Text),
    ("bench_rubric", ArtifactKind::Text),
];

fn artifact_content(name: &str, version: i64) -> String {
    if name == "bench_settings" {
        json!({ "temperature": (0.2 + 0.01 * (version % 50) as f64), "retries": version % 4 }).to_string()
    } else {
        format!(
            "{name}, version {version}\n\nKeep the answer short.\nCheck the result before reporting it.\nStep {version}: try the next idea.\n"
        )
    }
}

/// Writes the history into `store`. Refuses a database that already has the suite.
pub async fn fill(store: &Store, config: &FillConfig) -> Result<Filled, FillError> {
    if config.holdout >= config.tasks {
        return Err(FillError::Holdout { holdout: config.holdout, tasks: config.tasks });
    }
    if store.suite_by_name(&config.suite).await?.is_some() {
        return Err(FillError::Exists(config.suite.clone()));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let tasks: Vec<(String, bool)> =
        (0..config.tasks).map(|i| (format!("task-{:02}", i + 1), i >= config.tasks - config.holdout)).collect();
    let tasks_json = serde_json::Value::Array(
        tasks
            .iter()
            .map(|(name, holdout)| {
                json!({ "name": name, "kind": "command", "task": format!("Benchmark task {name}"), "holdout": holdout })
            })
            .collect(),
    );
    let suite_id = store.upsert_suite(&config.suite, &tasks_json.to_string(), "{}", None).await?;

    let mut registry = Registry::load(store.clone()).await?;
    for (name, kind) in ARTIFACTS {
        let fields = match kind {
            ArtifactKind::Json => BTreeMap::from([
                ("temperature".to_string(), FieldBounds { min: 0.0, max: 1.0, integer: false }),
                ("retries".to_string(), FieldBounds { min: 0.0, max: 5.0, integer: true }),
            ]),
            ArtifactKind::Text => BTreeMap::new(),
        };
        registry
            .declare(ArtifactDef {
                name: name.to_string(),
                kind,
                origin: Origin::Suite(config.suite.clone()),
                description: format!("Synthetic artifact of the UI benchmark ({})", kind.as_str()),
                default_content: artifact_content(name, 0),
                fields,
            })
            .await?;
    }

    let noise = Normal::new(0.0, 0.04).unwrap_or_else(|_| unreachable!("a positive deviation"));
    let effect = Normal::new(-0.008, 0.012).unwrap_or_else(|_| unreachable!("a positive deviation"));
    let difficulty: Vec<f64> = tasks.iter().map(|_| rng.random_range(-0.15..0.2)).collect();
    let weights = LossWeights::default();

    // The active version of each artifact, its latent effect, and the
    // versions written so far.
    let mut active: BTreeMap<&str, i64> = ARTIFACTS.iter().map(|(n, _)| (*n, 0)).collect();
    let mut effects: BTreeMap<(&str, i64), f64> = BTreeMap::new();
    let mut last_update: Option<(&str, i64, i64, i64)> = None; // artifact, from, to, epoch id
    let mut prev_mean: Option<f64> = None;
    let mut learning_rate = 0.5;
    let (mut runs, mut updates, mut rollbacks) = (0u64, 0u32, 0u32);

    for num in 1..=i64::from(config.epochs) {
        let parent = serde_json::to_string(&active).map_err(StoreError::from)?;
        let epoch = store.insert_epoch(suite_id, num, &parent).await?;
        let level = 0.18
            + 0.45 * (-(num as f64) / 150.0).exp()
            + active.iter().map(|(n, v)| effects.get(&(*n, *v)).copied().unwrap_or(0.0)).sum::<f64>();

        let mut train = Vec::new();
        for ((task, holdout), bias) in tasks.iter().zip(&difficulty) {
            let run_id =
                store.insert_run(suite_id, epoch.id, task, "command", &format!("runs/{num}/{task}"), None).await?;
            let failed = rng.random_bool(0.01);
            let score = (1.0 - (level + bias + noise.sample(&mut rng))).clamp(0.0, 1.0);
            let signals = LossSignals {
                eval_score: Some(if failed { 0.0 } else { score }),
                critique_score: None,
                gate_rejection_count: Some(f64::from(rng.random_range(0..3u8))),
                budget_remaining_pct: Some(rng.random_range(20.0..90.0)),
                status: Some(if failed { RunStatus::Failed } else { RunStatus::Complete }),
            };
            let breakdown = crate::loss::compute(&signals, &weights, 5);
            let status = if failed { "failed" } else { "complete" };
            store
                .finish_run(
                    run_id,
                    epoch.id,
                    &RunEnd {
                        task_name: task.clone(),
                        status: status.into(),
                        duration_ms: rng.random_range(200..4000),
                        exit_code: Some(i64::from(failed)),
                        loss: Some(breakdown.total),
                        loss_breakdown_json: Some(serde_json::to_string(&breakdown).map_err(StoreError::from)?),
                        scores_json: Some(serde_json::to_string(&signals).map_err(StoreError::from)?),
                        result_json: Some(json!({ "status": status, "scores": signals }).to_string()),
                        error: failed.then(|| "the harness exited with status 1".to_string()),
                        stdout: Some(format!("{task}: score {score:.4}\n")),
                        stderr: failed.then(|| "error: synthetic failure\n".to_string()),
                        model: None,
                    },
                )
                .await?;
            runs += 1;
            if !holdout {
                train.push(breakdown.total);
            }
        }
        let mean = crate::loss::mean(&train);

        // The outer loop's rule: a worse mean after an update rolls it back
        // (and halves the learning rate); otherwise an update may follow.
        let regressed = matches!((mean, prev_mean), (Some(m), Some(p)) if m > p);
        let mut close = EpochClose::default();
        let mut events = Vec::new();
        if let (Some((_, _, _, epoch_id)), Some(m), Some(p)) = (last_update, mean, prev_mean) {
            close.observed =
                Some(ObservedEffect { epoch_id, loss_reduction: p - m, rolled_back: regressed, evidence: None });
        }
        match last_update.take() {
            Some((name, from, to, _)) if regressed => {
                learning_rate /= 2.0;
                close.changes.push(ArtifactChange::Activate { name: name.to_string(), version: from });
                events.push(EpochEvent::Artifact(ArtifactEvent::Rollback {
                    artifact: name.to_string(),
                    from_version: to,
                    to_version: from,
                    mean_loss_prev: prev_mean,
                    mean_loss_current: mean,
                    new_learning_rate: Some(learning_rate),
                    reason: Some(RollbackReason::Training),
                    holdout_mean_prev: None,
                    holdout_mean_current: None,
                    evaluations: None,
                    noise: None,
                    paired: None,
                }));
                active.insert(name, from);
                rollbacks += 1;
            }
            _ if rng.random_bool(0.6) => {
                let (name, _) = ARTIFACTS[rng.random_range(0..ARTIFACTS.len())];
                let from = active[name];
                let expected = rng.random_range(0.005..0.05);
                let confidence = rng.random_range(0.3..0.9);
                let rationale = format!("epoch {num}: tighten {name} where the worst tasks failed");
                close.changes.push(ArtifactChange::Update {
                    name: name.to_string(),
                    content: artifact_content(name, num),
                    parent_version: from,
                });
                let proposal = |outcome, artifact: &str, expected: f64, rejection: Option<&str>| ProposalRecord {
                    optimizer: "textgrad".into(),
                    artifact: artifact.to_string(),
                    parent_version: active[artifact],
                    content: Some(artifact_content(artifact, num)),
                    rationale: Some(rationale.clone()),
                    expected_loss_reduction: Some(expected),
                    confidence: Some(confidence),
                    outcome,
                    rejection: rejection.map(String::from),
                    learning_rate,
                    decision: None,
                };
                close.proposals.push(proposal(ProposalOutcome::Winner, name, expected, None));
                let other = ARTIFACTS.iter().map(|(n, _)| *n).find(|n| *n != name).unwrap_or(name);
                close.proposals.push(proposal(ProposalOutcome::Candidate, other, expected / 2.0, None));
                if rng.random_bool(0.2) {
                    close.proposals.push(proposal(
                        ProposalOutcome::Rejected,
                        other,
                        0.0,
                        Some("the proposed content is identical to the current version"),
                    ));
                }
                events.push(EpochEvent::Artifact(ArtifactEvent::Update {
                    artifact: name.to_string(),
                    from_version: from,
                    to_version: 0,
                    rationale,
                    expected_loss_reduction: Some(expected),
                    confidence: Some(confidence),
                    learning_rate: Some(learning_rate),
                    details: Default::default(),
                }));
            }
            _ => {}
        }

        let mut child = active.clone();
        let versions = store
            .complete_epoch(epoch.id, mean, &close, |versions| {
                for (event, v) in events.iter_mut().zip(versions) {
                    if let EpochEvent::Artifact(ArtifactEvent::Update { to_version, .. }) = event {
                        *to_version = *v;
                    }
                }
                for (change, v) in close.changes.iter().zip(versions) {
                    if let ArtifactChange::Update { name, .. } = change
                        && let Some((key, _)) = ARTIFACTS.iter().find(|(n, _)| n == name)
                    {
                        child.insert(key, *v);
                    }
                }
                let artifacts = child.iter().map(|(k, v)| (k.to_string(), *v)).collect();
                EpochRecord { artifacts, events: events.clone(), ..EpochRecord::default() }.to_json()
            })
            .await?;
        for (change, v) in close.changes.iter().zip(&versions) {
            if let ArtifactChange::Update { name, parent_version, .. } = change
                && let Some((key, _)) = ARTIFACTS.iter().find(|(n, _)| n == name)
            {
                effects.insert((key, *v), effect.sample(&mut rng));
                active.insert(key, *v);
                last_update = Some((key, *parent_version, *v, epoch.id));
                updates += 1;
            }
        }
        prev_mean = mean;
    }
    Ok(Filled { suite: config.suite.clone(), suite_id, epochs: config.epochs, runs, updates, rollbacks })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_filled_history_reads_like_a_real_run() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("a.db")).await.unwrap();
        let config = FillConfig { epochs: 30, tasks: 6, holdout: 2, ..FillConfig::default() };
        let filled = fill(&store, &config).await.unwrap();
        assert_eq!((filled.epochs, filled.runs), (30, 180));
        assert!(filled.updates > 5 && filled.rollbacks > 0, "{filled:?}");

        let epochs = store.epochs(filled.suite_id).await.unwrap();
        assert_eq!(epochs.len(), 30);
        assert!(epochs.iter().all(|e| e.completed_at.is_some() && e.mean_loss.is_some()));
        let child: serde_json::Value =
            serde_json::from_str(epochs[0].child_artifacts_json.as_deref().unwrap()).unwrap();
        assert!(child["artifacts"].is_object() && child["events"].is_array(), "{child}");
        // Every update wrote a version; a rollback flipped the pointer back.
        let versions: usize = {
            let mut n = 0;
            for (name, _) in ARTIFACTS {
                n += store.artifact_versions(name).await.unwrap().len();
            }
            n
        };
        assert_eq!(versions, filled.updates as usize);
        assert_eq!(store.epoch_runs_of_suite(filled.suite_id).await.unwrap().len(), 180);

        let again = fill(&store, &config).await.unwrap_err();
        assert!(again.to_string().contains("already in this database"), "{again}");
    }
}
