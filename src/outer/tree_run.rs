//! The runner side of `--optimizer tree`: evaluates nodes (every evaluation
//! is an epoch, so runs, charts and resumption work as for any epoch),
//! asks the proposer for children, and stores the tree. The decisions come
//! from [`super::tree`].

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::optimizer::{self, OptimizerKind};
use super::tree::{self, Judgement, Node, NodeStatus};
use super::{EpochSummary, RunnerError, SuiteRunner, TaskResult};
use crate::bus::Event;
use crate::loss;
use crate::store::{EpochClose, NewTreeNode, StoreError};

/// One evaluation of an artifact set, as the tree sees it.
struct Measured {
    epoch_id: i64,
    /// Per training task loss.
    tasks: BTreeMap<String, f64>,
    mean: f64,
    holdout_mean: Option<f64>,
    /// The mean loss of each evaluation (several with verify repeats).
    samples: Vec<f64>,
    /// The last evaluation's results (the evidence for children).
    results: Vec<TaskResult>,
}

impl SuiteRunner {
    /// Runs the tree search; `true` when interrupted. Evaluations stop at
    /// `--epochs`; the best node's artifact versions end up active.
    pub(super) async fn run_tree(
        &mut self,
        suite_id: i64,
        summaries: &mut Vec<EpochSummary>,
    ) -> Result<bool, RunnerError> {
        let cfg = self.config.tree.clone();
        let budget = self.config.epochs as usize;
        let proposer = OptimizerKind::tree_proposer(self.optimizer_llm.clone());
        let mut rng = ChaCha8Rng::seed_from_u64(self.config.seed);
        // What the proposer can change: artifacts the suite's tasks read
        // (evolve only moves tunable JSON fields).
        let kinds = self.suite.task_kinds();
        let mut candidates: Vec<String> = self
            .registry
            .defs_for_suite(&self.suite.name)
            .filter(|d| d.steers_any(&kinds))
            .filter(|d| proposer.name() != "evolve" || !d.fields.is_empty())
            .map(|d| d.name.clone())
            .collect();
        candidates.sort();
        let holdout_texts: Vec<String> =
            self.suite.tasks.iter().filter(|t| t.holdout).flat_map(|t| [t.name.clone(), t.task.clone()]).collect();

        let mut nodes: Vec<Node> = Vec::new();
        let mut results_of: BTreeMap<i64, Vec<TaskResult>> = BTreeMap::new();
        let mut evals = 0usize;

        // A tree grown by an earlier invocation carries on from its nodes;
        // otherwise the root is the active versions, measured like any child.
        let mut best_mean = f64::INFINITY;
        for row in self.store.tree_nodes(suite_id).await? {
            if let Some((node, results)) = node_from_row(&row) {
                if matches!(node.status, NodeStatus::Committed | NodeStatus::Pruned) {
                    best_mean = best_mean.min(node.mean);
                }
                results_of.insert(node.id, results);
                nodes.push(node);
            }
        }
        if nodes.is_empty() {
            let root_artifacts = self.snapshot().await?;
            let Some(root) = self.measure(suite_id, &root_artifacts, cfg.verify_repeats, &mut evals, summaries).await?
            else {
                return Ok(true);
            };
            let (root_node, root_results) = self
                .store_node(
                    suite_id,
                    None,
                    root_artifacts,
                    None,
                    None,
                    root,
                    NodeStatus::Committed,
                    "root: the active versions",
                )
                .await?;
            results_of.insert(root_node.id, root_results);
            best_mean = root_node.mean;
            nodes.push(root_node);
        }

        let mut stall = 0u32;
        while evals < budget && stall < cfg.stall {
            for id in tree::exhausted(&nodes, cfg.prune_after) {
                self.store.set_tree_node_status(id, "pruned", "exhausted: every child regressed").await?;
                if let Some(n) = nodes.iter_mut().find(|n| n.id == id) {
                    n.status = NodeStatus::Pruned;
                }
            }
            let parents = tree::frontier(&nodes, cfg.selection, rng.random());
            let briefs = tree::write_briefs(&parents, &candidates, cfg.width.max(1));
            if briefs.is_empty() {
                break;
            }
            let mut improved = false;
            for brief in briefs {
                if evals >= budget || self.cancelled() {
                    break;
                }
                let parent = nodes.iter().find(|n| n.id == brief.parent).cloned().ok_or_else(|| {
                    RunnerError::Optimizer(optimizer::OptimizerError(format!("tree node {} vanished", brief.parent)))
                })?;
                let from_version = parent.artifacts.get(&brief.focus).copied().unwrap_or(0);
                let content = self.registry.get(&brief.focus, from_version).await?.content;
                let evidence = optimizer::Evidence {
                    suite: self.suite.name.clone(),
                    epoch_num: nodes.len() as i64,
                    mean_loss: parent.mean,
                    learning_rate: self.config.learning_rate,
                    tasks: results_of.get(&parent.id).map(|rs| super::task_evidence(rs)).unwrap_or_default(),
                    candidates: vec![optimizer::Candidate {
                        def: self.registry.def(&brief.focus)?.clone(),
                        version: from_version,
                        content,
                    }],
                    seed: rng.random(),
                    history: BTreeMap::new(),
                };
                let step = proposer.propose(&evidence).await?;
                let brief_text = format!("change `{}` from node {}", brief.focus, parent.id);
                let Some(p) = step.winner.clone() else {
                    let reason = step
                        .considered
                        .iter()
                        .find_map(|c| c.rejection.clone())
                        .unwrap_or_else(|| "no proposal".into());
                    self.store_rejected(suite_id, &parent, &brief.focus, &brief_text, &reason).await?;
                    continue;
                };
                if let Some(reason) = tree::pre_verify(&p.content, &holdout_texts) {
                    self.store_rejected(suite_id, &parent, &brief.focus, &brief_text, &reason).await?;
                    continue;
                }
                let to_version = self.registry.put_version(&brief.focus, &p.content, from_version, None).await?;
                let mut artifacts = parent.artifacts.clone();
                artifacts.insert(brief.focus.clone(), to_version);
                let Some(measured) =
                    self.measure(suite_id, &artifacts, cfg.verify_repeats, &mut evals, summaries).await?
                else {
                    return Ok(true);
                };
                let first_epoch = measured.epoch_id;
                let mut child = node_of(0, Some(parent.id), artifacts.clone(), &measured, NodeStatus::Committed);
                let (status, note) =
                    match tree::judge(&parent, &child, cfg.min_improvement, self.config.holdout_tolerance) {
                        Judgement::Commit => (NodeStatus::Committed, format!("{brief_text}: {}", p.rationale)),
                        Judgement::Discard(why) => (NodeStatus::Discarded, why),
                    };
                child.status = status;
                let (child, results) = self
                    .store_node(
                        suite_id,
                        Some(parent.id),
                        artifacts,
                        Some((brief.focus.clone(), from_version, to_version)),
                        Some(brief_text.clone()),
                        measured,
                        status,
                        &note,
                    )
                    .await?;
                self.store_proposals(first_epoch, proposer.name(), &step).await?;
                if status == NodeStatus::Committed && child.mean < best_mean {
                    best_mean = child.mean;
                    improved = true;
                }
                results_of.insert(child.id, results);
                nodes.push(child);
            }
            stall = if improved { 0 } else { stall + 1 };
        }

        // The best node's versions become the active ones.
        if let Some(best) = tree::best(&nodes) {
            for (name, version) in &best.artifacts {
                let active = self.registry.get_active(name).await?.version;
                if active != *version {
                    self.registry.set_active(name, *version).await?;
                    self.bus.publish(Event::ArtifactActivated {
                        artifact: name.clone(),
                        from_version: active,
                        to_version: *version,
                    });
                }
            }
            tracing::info!(suite = %self.suite.name, node = best.id, mean = best.mean, evaluations = evals, "tree search finished");
        }
        Ok(self.cancelled())
    }

    /// Evaluates an artifact set `repeats` times (one epoch each), within
    /// the evaluation budget; the per-task losses are averaged.
    async fn measure(
        &self,
        suite_id: i64,
        artifacts: &BTreeMap<String, i64>,
        repeats: u32,
        evals: &mut usize,
        summaries: &mut Vec<EpochSummary>,
    ) -> Result<Option<Measured>, RunnerError> {
        let mut samples: Vec<(i64, Vec<TaskResult>, Option<f64>)> = Vec::new();
        for _ in 0..repeats.max(1) {
            if *evals >= self.config.epochs as usize && !samples.is_empty() {
                break;
            }
            let next = self.store.last_epoch(suite_id).await?.map_or(1, |e| e.epoch_num + 1);
            let parent_json = serde_json::to_string(artifacts).map_err(StoreError::from)?;
            let epoch = self.store.insert_epoch(suite_id, next, &parent_json).await?;
            let Some(eval) = self.evaluate_epoch(suite_id, &epoch, false).await? else {
                return Ok(None);
            };
            *evals += 1;
            let training: Vec<f64> = eval.results.iter().filter(|r| !r.holdout).map(|r| r.loss).collect();
            let holdout: Vec<f64> = eval.results.iter().filter(|r| r.holdout).map(|r| r.loss).collect();
            let mean = loss::mean(&training).or_else(|| loss::mean(&holdout));
            let holdout_mean = loss::mean(&holdout);
            self.store
                .complete_epoch(epoch.id, mean, &EpochClose::default(), |_| {
                    json!({ "artifacts": artifacts, "events": [] }).to_string()
                })
                .await?;
            self.bus.publish(Event::EpochFinished {
                suite_id,
                epoch_id: epoch.id,
                epoch_num: epoch.epoch_num,
                mean_loss: mean,
                holdout_mean_loss: holdout_mean,
                learning_rate: self.config.learning_rate,
            });
            summaries.push(EpochSummary {
                epoch_id: epoch.id,
                epoch_num: epoch.epoch_num,
                mean_loss: mean,
                holdout_mean_loss: holdout_mean,
                learning_rate: self.config.learning_rate,
                resumed: false,
                events: vec![],
            });
            samples.push((epoch.id, eval.results, mean));
        }
        let Some((epoch_id, _, _)) = samples.first() else { return Ok(None) };
        let epoch_id = *epoch_id;
        let mut per_task: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut holdout = Vec::new();
        for (_, results, _) in &samples {
            for r in results {
                if r.holdout {
                    holdout.push(r.loss);
                } else {
                    per_task.entry(r.task.clone()).or_default().push(r.loss);
                }
            }
        }
        let tasks: BTreeMap<String, f64> =
            per_task.into_iter().map(|(t, ls)| (t, ls.iter().sum::<f64>() / ls.len() as f64)).collect();
        let means: Vec<f64> = samples.iter().filter_map(|s| s.2).collect();
        let mean = loss::mean(&means).unwrap_or(f64::INFINITY);
        let results = samples.pop().map(|s| s.1).unwrap_or_default();
        Ok(Some(Measured { epoch_id, tasks, mean, holdout_mean: loss::mean(&holdout), samples: means, results }))
    }

    #[allow(clippy::too_many_arguments)]
    async fn store_node(
        &self,
        suite_id: i64,
        parent: Option<i64>,
        artifacts: BTreeMap<String, i64>,
        change: Option<(String, i64, i64)>,
        brief: Option<String>,
        m: Measured,
        status: NodeStatus,
        note: &str,
    ) -> Result<(Node, Vec<TaskResult>), RunnerError> {
        let id = self
            .store
            .insert_tree_node(
                suite_id,
                &NewTreeNode {
                    parent_id: parent,
                    epoch_id: Some(m.epoch_id),
                    artifacts_json: serde_json::to_string(&artifacts).map_err(StoreError::from)?,
                    changed_artifact: change.as_ref().map(|c| c.0.clone()),
                    from_version: change.as_ref().map(|c| c.1),
                    to_version: change.as_ref().map(|c| c.2),
                    brief,
                    mean_loss: Some(m.mean),
                    holdout_mean_loss: m.holdout_mean,
                    task_losses_json: Some(serde_json::to_string(&m.tasks).map_err(StoreError::from)?),
                    evaluations: m.samples.len().max(1) as i64,
                    status: status.as_str().into(),
                    note: Some(note.to_string()),
                },
            )
            .await?;
        let node = node_of(id, parent, artifacts, &m, status);
        Ok((node, m.results))
    }

    async fn store_rejected(
        &self,
        suite_id: i64,
        parent: &Node,
        focus: &str,
        brief: &str,
        reason: &str,
    ) -> Result<(), RunnerError> {
        self.store
            .insert_tree_node(
                suite_id,
                &NewTreeNode {
                    parent_id: Some(parent.id),
                    artifacts_json: serde_json::to_string(&parent.artifacts).map_err(StoreError::from)?,
                    changed_artifact: Some(focus.to_string()),
                    from_version: parent.artifacts.get(focus).copied(),
                    brief: Some(brief.to_string()),
                    status: NodeStatus::Rejected.as_str().into(),
                    note: Some(reason.to_string()),
                    ..NewTreeNode::default()
                },
            )
            .await?;
        Ok(())
    }

    /// Keeps the proposer's proposals with the child's first evaluation.
    async fn store_proposals(&self, epoch_id: i64, optimizer: &str, step: &optimizer::Step) -> Result<(), RunnerError> {
        let rows = super::proposal_rows(step, optimizer, self.config.learning_rate);
        self.store.insert_proposals(epoch_id, &rows).await?;
        Ok(())
    }
}

fn node_of(id: i64, parent: Option<i64>, artifacts: BTreeMap<String, i64>, m: &Measured, status: NodeStatus) -> Node {
    Node {
        id,
        parent,
        artifacts,
        task_losses: m.tasks.clone(),
        mean: m.mean,
        holdout_mean: m.holdout_mean,
        samples: if m.samples.is_empty() { vec![m.mean] } else { m.samples.clone() },
        status,
    }
}

/// A stored node, for a search that carries on; its evidence is the stored
/// per-task losses (the runs' details stay in their epoch). Rejected nodes
/// were never measured and are left out.
fn node_from_row(row: &crate::store::TreeNodeRow) -> Option<(Node, Vec<TaskResult>)> {
    let status = match row.status.as_str() {
        "committed" => NodeStatus::Committed,
        "discarded" => NodeStatus::Discarded,
        "pruned" => NodeStatus::Pruned,
        _ => return None,
    };
    let artifacts: BTreeMap<String, i64> = serde_json::from_str(&row.artifacts_json).ok()?;
    let tasks: BTreeMap<String, f64> = serde_json::from_str(row.task_losses_json.as_deref()?).ok()?;
    let mean = row.mean_loss?;
    let results = tasks
        .iter()
        .map(|(task, loss)| TaskResult {
            task: task.clone(),
            holdout: false,
            loss: *loss,
            status: "complete".into(),
            breakdown: None,
            error: None,
        })
        .collect();
    let node = Node {
        id: row.id,
        parent: row.parent_id,
        artifacts,
        task_losses: tasks,
        mean,
        holdout_mean: row.holdout_mean_loss,
        samples: vec![mean],
        status,
    };
    Some((node, results))
}
