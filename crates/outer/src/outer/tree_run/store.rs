//! The tree search's record: nodes, rejected children, proposals and
//! notes go into the store as the search makes them, and a search that
//! carries on (a run stopped before its plan was done) is rebuilt from
//! there — its nodes, the children of the round it stopped in to replay,
//! and the epochs no node holds yet.

use super::*;

impl SuiteRunner {
    /// The next epoch a stopped run left without a node, when it measured
    /// `artifacts`; one that measured something else cannot be this
    /// search's any more and is closed as is.
    pub(super) async fn orphan_of(
        &self,
        state: &mut OuterState,
        search: &mut Search,
        artifacts: &BTreeMap<String, i64>,
    ) -> Result<Option<EpochRow>, RunnerError> {
        while let Some(epoch) = search.orphans.pop_front() {
            let measured: BTreeMap<String, i64> =
                serde_json::from_str(&epoch.parent_artifacts_json).map_err(StoreError::from)?;
            if &measured == artifacts {
                return Ok(Some(epoch));
            }
            tracing::warn!(suite = %self.suite.name, epoch = epoch.epoch_num, "an epoch the stopped tree search left behind measured other versions; it is closed as is");
            if epoch.completed_at.is_none() {
                self.run_epoch(state, &epoch, true).await?;
            }
        }
        Ok(None)
    }

    /// An evaluated child of `parent` that made this very change: its id and mean loss.
    pub(super) async fn twin_of(
        &self,
        search: &Search,
        parent: i64,
        focus: &str,
        content: &str,
    ) -> Result<Option<(i64, f64)>, RunnerError> {
        for n in search.nodes.iter().filter(|n| n.parent == Some(parent) && n.evaluated()) {
            if n.focus.as_deref() == Some(focus)
                && let Some(version) = n.artifacts.get(focus)
                && self.registry.get(focus, *version).await?.content == content
            {
                return Ok(Some((n.id, n.mean)));
            }
        }
        Ok(None)
    }

    /// The version a child's content becomes: the newest version when it is
    /// this very change (a stopped run wrote it before it was measured),
    /// else a new one.
    pub(super) async fn child_version(&self, name: &str, content: &str, from_version: i64) -> Result<i64, RunnerError> {
        if let Some(newest) = self.registry.history(name).await?.pop()
            && newest.version != 0
            && newest.parent_version == Some(from_version)
            && newest.content == content
        {
            return Ok(newest.version);
        }
        Ok(self.registry.put_version(name, content, from_version, None).await?)
    }

    /// The search as the plan's earlier runs left it: the tree up to the
    /// round a stopped run was in, that round's children to replay, the
    /// epochs no node holds yet, and the stall counters.
    pub(super) async fn restore(&self, suite_id: i64, plan: &Plan) -> Result<Search, RunnerError> {
        let cfg = &self.config.tree;
        let mut search = Search::new(cfg.ideation_rounds);
        for note in self.store.tree_notes(suite_id).await? {
            let kind = match note.note.kind.as_str() {
                "dead_direction" => HintKind::DeadDirection,
                "saturated_axis" => HintKind::SaturatedAxis,
                _ => continue,
            };
            search.reported.insert((kind, note.note.artifact.unwrap_or_default(), note.note.parent_id));
        }
        let epochs = self.store.epochs(suite_id).await?;
        let num_of: BTreeMap<i64, &EpochRow> = epochs.iter().map(|e| (e.id, e)).collect();
        let mut stored = Vec::new();
        // The epochs each node holds: its first and the ones after it.
        let mut held_through = 0i64;
        for row in self.store.tree_nodes(suite_id).await? {
            let Some((mut node, mut results)) = node_from_row(&row) else { continue };
            if let Some(first) = row.node.epoch_id.and_then(|id| num_of.get(&id)) {
                let last = first.epoch_num + row.node.evaluations.max(1) - 1;
                held_through = held_through.max(last);
                let own: Vec<&EpochRow> =
                    epochs.iter().filter(|e| (first.epoch_num..=last).contains(&e.epoch_num)).collect();
                // The evidence and samples the node had when it was made.
                let samples: Vec<f64> = own.iter().filter_map(|e| e.mean_loss).collect();
                if !samples.is_empty() {
                    node.samples = samples;
                }
                if let Some(e) = own.last() {
                    results = Some(self.epoch_results(e.id).await?).filter(|r| !r.is_empty()).or(results);
                }
            }
            stored.push((node, results, row.node.epoch_id.and_then(|id| num_of.get(&id)).map(|e| e.epoch_num)));
        }
        if plan.continued {
            search.evals = epochs
                .iter()
                .filter(|e| e.epoch_num >= plan.first_epoch && e.epoch_num <= held_through && e.completed_at.is_some())
                .count();
            search.orphans = epochs
                .iter()
                .filter(|e| e.epoch_num >= plan.first_epoch && e.epoch_num > held_through)
                .cloned()
                .collect();
        }
        let last_round = stored.iter().map(|(n, _, _)| n.round).max().unwrap_or(0);
        // The round before this plan's first: where its stall count starts.
        let before = stored
            .iter()
            .filter(|(_, _, num)| num.is_some_and(|n| n < plan.first_epoch))
            .map(|(n, _, _)| n.round)
            .max();
        let replaying = plan.continued && last_round > 0 && before.is_none_or(|b| b < last_round);
        let mut improved_in: BTreeSet<u32> = BTreeSet::new();
        let mut best = f64::INFINITY;
        for (mut node, results, _) in stored {
            // A prune is decided at the start of a round from the tree as it
            // stands, and the replayed rounds decide it again; a node pruned
            // when the run stopped may not have been when its round began.
            if replaying && node.status == NodeStatus::Pruned {
                node.status = NodeStatus::Committed;
            }
            if node.kept() && node.mean < best {
                best = node.mean;
                improved_in.insert(node.round);
            }
            if replaying && node.round == last_round {
                search.replay.push_back((node, results));
                continue;
            }
            search.adopt(node, results);
        }
        search.round = if replaying { last_round - 1 } else { last_round };
        if replaying {
            // Replays the stall counter over the plan's finished rounds.
            for round in before.map_or(1, |b| b + 1)..last_round {
                if search.stall >= cfg.stall {
                    search.ideation_left = search.ideation_left.saturating_sub(1);
                }
                if improved_in.contains(&round) {
                    search.stall = 0;
                    search.ideation_left = cfg.ideation_rounds;
                } else {
                    search.stall += 1;
                }
            }
        }
        Ok(search)
    }

    pub(super) async fn store_node(
        &self,
        suite_id: i64,
        r: NodeRecord,
        m: Measured,
    ) -> Result<(Node, Vec<TaskResult>), RunnerError> {
        let id = self
            .store
            .insert_tree_node(
                suite_id,
                &TreeNode {
                    parent_id: r.parent,
                    epoch_id: Some(m.epoch_id),
                    artifacts_json: serde_json::to_string(&r.artifacts).map_err(StoreError::from)?,
                    changed_artifact: r.change.as_ref().map(|c| c.0.clone()),
                    from_version: r.change.as_ref().map(|c| c.1),
                    to_version: r.change.as_ref().map(|c| c.2),
                    brief: r.brief,
                    mean_loss: Some(m.mean),
                    holdout_mean_loss: m.holdout_mean,
                    task_losses_json: Some(serde_json::to_string(&m.tasks).map_err(StoreError::from)?),
                    evaluations: m.samples.len().max(1) as i64,
                    status: r.status.as_str().into(),
                    note: Some(r.note),
                    round: Some(i64::from(r.round)),
                    rationale: r.rationale.clone(),
                    feedback: r.feedback.clone(),
                    guidance: guidance_text(&r.guidance),
                },
            )
            .await?;
        let mut node = node_of(id, r.parent, r.artifacts, &m, r.status);
        node.focus = r.change.map(|c| c.0);
        node.round = r.round;
        node.rationale = r.rationale;
        node.feedback = r.feedback;
        Ok((node, m.results))
    }

    /// Stores a child rejected before evaluation and adds it to the tree
    /// (the analyst counts it toward a dead direction).
    pub(super) async fn store_rejected(
        &self,
        suite_id: i64,
        search: &mut Search,
        focus: &str,
        from_version: i64,
        r: NodeRecord,
    ) -> Result<i64, RunnerError> {
        let id = self
            .store
            .insert_tree_node(
                suite_id,
                &TreeNode {
                    parent_id: r.parent,
                    artifacts_json: serde_json::to_string(&r.artifacts).map_err(StoreError::from)?,
                    changed_artifact: Some(focus.to_string()),
                    from_version: Some(from_version),
                    brief: r.brief,
                    status: NodeStatus::Rejected.as_str().into(),
                    note: Some(r.note),
                    round: Some(i64::from(r.round)),
                    feedback: r.feedback.clone(),
                    guidance: guidance_text(&r.guidance),
                    ..TreeNode::default()
                },
            )
            .await?;
        search.nodes.push(Node {
            id,
            parent: r.parent,
            artifacts: r.artifacts,
            task_losses: BTreeMap::new(),
            mean: f64::INFINITY,
            holdout_mean: None,
            samples: Vec::new(),
            status: NodeStatus::Rejected,
            focus: Some(focus.to_string()),
            round: r.round,
            rationale: None,
            feedback: r.feedback,
        });
        Ok(id)
    }

    /// Keeps the proposer's proposals with the child's first evaluation. A
    /// child the search did not keep (`discarded`: its verdict) is no
    /// winner: its proposal is stored rejected, with the verdict as the reason.
    pub(super) async fn store_proposals(
        &self,
        epoch_id: i64,
        optimizer: &str,
        step: &optimizer::Step,
        discarded: Option<String>,
        decision: Option<crate::loss::paired::PairedEvidence>,
        learning_rate: f64,
    ) -> Result<(), RunnerError> {
        // η as it stands, as the proposer was told (not as configured).
        let mut rows = crate::outer::close::proposal_rows(step, optimizer, learning_rate);
        // The child's judgement, on the proposal that made it.
        for r in rows.iter_mut().filter(|r| r.outcome == ProposalOutcome::Winner) {
            r.decision = decision.clone();
        }
        if let Some(why) = discarded {
            for r in rows.iter_mut().filter(|r| r.outcome == ProposalOutcome::Winner) {
                r.outcome = ProposalOutcome::Rejected;
                r.rejection = Some(format!("discarded by the tree search: {why}"));
            }
        }
        self.store.insert_proposals(epoch_id, &rows).await?;
        Ok(())
    }
}

/// A stored node, for a search that carries on; its evidence is the stored
/// per-task losses (the runs' details stay in their epoch). A rejected node
/// was never measured: it comes back without losses or evidence.
pub(super) fn node_from_row(row: &crate::store::TreeNodeRow) -> Option<(Node, Option<Vec<TaskResult>>)> {
    let status = NodeStatus::parse(&row.node.status)?;
    let artifacts: BTreeMap<String, i64> = serde_json::from_str(&row.node.artifacts_json).ok()?;
    let round = row.node.round.and_then(|r| u32::try_from(r).ok()).unwrap_or(0);
    let mut node = Node {
        id: row.id,
        parent: row.node.parent_id,
        artifacts,
        task_losses: BTreeMap::new(),
        mean: f64::INFINITY,
        holdout_mean: None,
        samples: Vec::new(),
        status,
        focus: row.node.changed_artifact.clone(),
        round,
        rationale: row.node.rationale.clone(),
        feedback: row.node.feedback.clone(),
    };
    if status == NodeStatus::Rejected {
        return Some((node, None));
    }
    let tasks: BTreeMap<String, f64> = serde_json::from_str(row.node.task_losses_json.as_deref()?).ok()?;
    let mean = row.node.mean_loss?;
    let results = tasks
        .iter()
        .map(|(task, loss)| TaskResult {
            task: task.clone(),
            holdout: false,
            loss: *loss,
            status: "complete".into(),
            breakdown: None,
            error: None,
            examples: Vec::new(),
        })
        .collect();
    node.task_losses = tasks;
    node.mean = mean;
    node.holdout_mean = row.node.holdout_mean_loss;
    node.samples = vec![mean];
    Some((node, Some(results)))
}
