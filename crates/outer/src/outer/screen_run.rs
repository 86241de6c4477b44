//! How the suite runner screens a candidate: the minibatch's command tasks
//! run with the candidate in place of the current version, in run folders of
//! their own, and only their losses are kept.
//!
//! A screening run is not one of the epoch's runs: it measures a text that is
//! not (yet) a version, on part of a task, so it would mix two things in the
//! epoch's loss and charts. Its numbers live in the proposal it screened
//! (`decision_json`); its folder is removed once its result is read.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;

use super::SuiteRunner;
use super::screen::{Minibatch, ScreenError, Screening, unit_key};
use crate::loss;
use crate::suite::{Task, TaskKind};
use crate::task::{self, ActiveArtifact};

/// A runner's view for one epoch's screening: the versions the epoch ran.
pub(super) struct TaskScreening<'a> {
    pub runner: &'a SuiteRunner,
    pub epoch_num: i64,
    pub artifacts: &'a [ActiveArtifact],
    /// Numbers the candidates' run folders.
    pub screened: AtomicUsize,
}

#[async_trait::async_trait]
impl Screening for TaskScreening<'_> {
    fn screenable(&self) -> BTreeSet<String> {
        // An agent's or a coordinator's run is recorded as it goes (its
        // trajectory, its supervision), so only a command can run aside.
        self.runner
            .suite
            .tasks
            .iter()
            .filter(|t| !t.holdout && matches!(t.kind, TaskKind::Command(_)))
            .map(|t| t.name.clone())
            .collect()
    }

    async fn measure(
        &self,
        artifact: &str,
        content: &str,
        batch: &Minibatch,
    ) -> Result<BTreeMap<String, f64>, ScreenError> {
        let n = self.screened.fetch_add(1, Ordering::Relaxed) + 1;
        let screen_dir = self
            .runner
            .config
            .runs_root
            .join(crate::suite::folder_name(&self.runner.suite.name))
            .join(format!("epoch-{:04}", self.epoch_num))
            .join(format!("screen-{n:03}"));
        let artifacts: Vec<ActiveArtifact> = self
            .artifacts
            .iter()
            .map(|a| {
                if a.name == artifact {
                    ActiveArtifact { content: content.to_string(), ..a.clone() }
                } else {
                    a.clone()
                }
            })
            .collect();
        let tasks: Vec<(&Task, &Vec<String>)> = batch
            .tasks
            .iter()
            .filter_map(|(name, ids)| self.runner.suite.tasks.iter().find(|t| &t.name == name).map(|t| (t, ids)))
            .collect();
        let concurrency = self.runner.config.concurrency.max(1);
        // Boxed as trait objects first: a stream of closures over borrowed
        // tasks would ask the compiler for lifetimes it cannot prove Send.
        let runs: Vec<std::pin::Pin<Box<dyn Future<Output = Result<Vec<(String, f64)>, ScreenError>> + Send + '_>>> =
            tasks.into_iter().map(|(t, ids)| Box::pin(self.run_one(t, ids, &artifacts, &screen_dir)) as _).collect();
        let results: Vec<Result<Vec<(String, f64)>, ScreenError>> =
            futures::stream::iter(runs).buffer_unordered(concurrency).collect().await;
        let _ = tokio::fs::remove_dir(&screen_dir).await;
        let mut out = BTreeMap::new();
        for r in results {
            out.extend(r?);
        }
        Ok(out)
    }
}

impl TaskScreening<'_> {
    /// One task of the minibatch: the losses of the examples asked for, or
    /// the task's loss when it was run whole.
    async fn run_one(
        &self,
        t: &Task,
        ids: &[String],
        artifacts: &[ActiveArtifact],
        screen_dir: &std::path::Path,
    ) -> Result<Vec<(String, f64)>, ScreenError> {
        let TaskKind::Command(spec) = &t.kind else {
            return Ok(Vec::new());
        };
        if *self.runner.cancel.borrow() {
            return Err(ScreenError::Cancelled);
        }
        let run_dir = screen_dir.join(crate::suite::folder_name(&t.name));
        let outcome = task::command::run(task::command::CommandRun {
            task: t,
            spec,
            run_dir: &run_dir,
            suite_dir: &self.runner.suite.dir,
            epoch_num: self.epoch_num,
            artifacts,
            example_ids: (!ids.is_empty()).then_some(ids),
            cancel: self.runner.cancel.clone(),
        })
        .await;
        // Nothing of it is kept but its losses.
        let _ = tokio::fs::remove_dir_all(&run_dir).await;
        if outcome.cancelled {
            return Err(ScreenError::Cancelled);
        }
        if ids.is_empty() {
            let total = loss::compute(&outcome.signals, &t.weights, t.budget.max_rejections).total;
            return Ok(vec![(unit_key(&t.name, None), total)]);
        }
        // A harness that ran more than it was asked for is read for the
        // examples asked for; one asked for that it left out is not measured.
        let examples = outcome.result_json.as_deref().map(task::command::examples_of).unwrap_or_default();
        if examples.is_empty() {
            // It failed before it scored anything: every example asked for
            // is as wrong as it can be.
            return Ok(ids.iter().map(|id| (unit_key(&t.name, Some(id)), 1.0)).collect());
        }
        Ok(examples
            .into_iter()
            .filter(|e| ids.contains(&e.id))
            .map(|e| (unit_key(&t.name, Some(&e.id)), 1.0 - e.score))
            .collect())
    }
}
