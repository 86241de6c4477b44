//! The suites as the app shows them: the overview, the Suites screen's rows, a suite's epochs,
//! charts, experiment graph and proposals, all read from the store.

use super::*;

impl Service {
    pub async fn overview(&self) -> Result<Overview> {
        let suites = self.store.suite_summaries().await?.len();
        // One suite runs one launch at a time: a running launch is its suite's latest.
        let running_launches = self
            .store
            .latest_request_per_suite()
            .await?
            .iter()
            .filter(|r| !r.status.ended() && !crate::queue::is_abandoned(r))
            .count();
        Ok(Overview {
            suites,
            running_launches,
            pending_interventions: self.store.pending_interventions().await?,
            db_path: crate::store::shown_location(&self.config.db_path).display().to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            examples_dir: crate::suite::examples::examples_dir().map(|d| d.display().to_string()),
        })
    }

    /// Every suite with its epoch count, latest mean loss and status.
    pub async fn suites(&self) -> Result<Vec<SuiteItem>> {
        let summaries = self.store.suite_summaries().await?;
        let paused = self.store.suites_waiting_on_a_person().await?;
        let approvals = self.store.suites_awaiting_approval().await?;
        // Each suite's latest launch, however many launches came after it.
        let launches =
            super::launches::launch_views(&self.store, &self.store.latest_request_per_suite().await?).await?;
        let mut out = Vec::with_capacity(summaries.len());
        for s in summaries {
            let row = self.store.suite_by_id(s.id).await?;
            let tasks = row.as_ref().map(task_infos).unwrap_or_default();
            let status = SuiteCounts {
                epochs: s.epochs,
                latest: s.latest_mean_loss,
                unfinished: s.unfinished,
                waiting_on_a_person: paused.contains(&s.id),
                awaiting_approval: approvals.contains(&s.id),
            };
            let head =
                SuiteHead { id: s.id, name: &s.name, created_at: &s.created_at, source: s.source_path.as_deref() };
            let mut item = self.suite_item(head, status, &tasks, &launches);
            item.model = self.suite_model(s.id).await?;
            out.push(item);
        }
        // A suite the watcher registered is launched from its watched file.
        if out.iter().any(|s| s.suite_path.is_none()) {
            let files = self.store.watched_files().await?;
            for item in out.iter_mut().filter(|s| s.suite_path.is_none()) {
                item.suite_path = files
                    .iter()
                    .find(|f| f.status != "removed" && f.suite_name.as_deref() == Some(item.name.as_str()))
                    .map(|f| f.path.clone());
            }
        }
        Ok(out)
    }

    pub(super) fn suite_item(
        &self,
        head: SuiteHead<'_>,
        counts: SuiteCounts,
        tasks: &[TaskInfo],
        launches: &[LaunchView],
    ) -> SuiteItem {
        let SuiteHead { id, name, created_at, source } = head;
        let SuiteCounts { epochs, latest: latest_mean_loss, unfinished, waiting_on_a_person, awaiting_approval } =
            counts;
        // Newest first: the suite's latest launch.
        let latest = launches.iter().find(|l| l.suite == name);
        let running = latest.filter(|l| matches!(l.status, LaunchStatus::Running | LaunchStatus::Queued));
        let failed = latest.filter(|l| l.status == LaunchStatus::Failed);
        // Waiting on a person comes first: it is what someone must act on.
        let status = if waiting_on_a_person {
            SuiteStatus::Paused
        } else if running.is_some() {
            SuiteStatus::Running
        } else if failed.is_some() {
            SuiteStatus::Failed
        } else if unfinished > 0 {
            SuiteStatus::Unfinished
        } else if awaiting_approval {
            SuiteStatus::AwaitingApproval
        } else {
            SuiteStatus::Idle
        };
        SuiteItem {
            id,
            name: name.to_string(),
            created_at: created_at.to_string(),
            epochs,
            latest_mean_loss,
            status,
            tasks: tasks.len(),
            holdout_tasks: tasks.iter().filter(|t| t.holdout).count(),
            // The last launch from here, else the last one recorded, else
            // the file the suite was last run from (`attractor run`).
            suite_path: latest
                .map(|l| l.suite_path.clone())
                .or_else(|| lock(&self.settings).suite_paths.get(name).cloned())
                .or_else(|| source.map(str::to_string)),
            last_error: failed.and_then(|l| l.error.clone()),
            launch_id: running.map(|l| l.id),
            last_launch_runs: latest.filter(|l| l.status.ended()).and_then(|l| l.runs),
            model: None,
        }
    }

    /// The suite's model spend from the ledger; `None` before its first call.
    pub(super) async fn suite_model(&self, suite_id: i64) -> Result<Option<crate::llm::ModelSpend>> {
        let spend = self.store.model_spend(crate::store::CallsOf::Suite(suite_id)).await?;
        Ok((spend.calls > 0).then_some(spend))
    }

    /// A suite by its id or, failing that, its name.
    pub(super) async fn find_suite(&self, key: &str) -> Result<SuiteRow> {
        let by_id = match key.parse::<i64>() {
            Ok(id) => self.store.suite_by_id(id).await?,
            Err(_) => None,
        };
        let found = match by_id {
            Some(s) => Some(s),
            None => self.store.suite_by_name(key).await?,
        };
        match found {
            Some(s) => Ok(s),
            None => {
                let known: Vec<String> = self.store.suite_summaries().await?.into_iter().map(|s| s.name).collect();
                Err(ServiceError::NotFound(format!(
                    "no suite `{key}` in {}\n  hint: known suites: {}",
                    crate::store::shown_location(&self.config.db_path).display(),
                    if known.is_empty() { "none yet".to_string() } else { known.join(", ") }
                )))
            }
        }
    }

    /// A suite's epochs with per-task losses, artifact events and, with
    /// `with_runs`, every run (at 500 epochs × 50 tasks the runs are most of
    /// the payload; the charts and the graph do without them).
    pub async fn suite_epochs(&self, key: &str, with_runs: bool, page: EpochPageArgs) -> Result<SuiteEpochs> {
        let limit = page.limit.unwrap_or(DEFAULT_EPOCH_PAGE);
        if !(1..=MAX_EPOCH_PAGE).contains(&limit) {
            return Err(ServiceError::BadInput(format!(
                "limit: {limit} is outside the range 1 to {MAX_EPOCH_PAGE} (epochs a page)\n  hint: page through a longer history with offset"
            )));
        }
        let offset = page.offset.unwrap_or(0);
        let Some(id) = page.launch else {
            return self.suite_epochs_in(key, with_runs, EpochWindow::Newest { offset, limit }).await;
        };
        let launch = self.store.queued_request(id).await?.ok_or_else(|| no_launch(id))?;
        let suite = self.find_suite(key).await?;
        if launch.suite_id != Some(suite.id) {
            return Err(ServiceError::BadInput(format!(
                "launch: launch {id} did not run suite {key:?}\n  hint: the Live screen lists every launch with its suite"
            )));
        }
        let window = match (launch.first_epoch, launch.last_epoch) {
            (Some(first), Some(last)) => EpochWindow::NewestOf { first, last, offset, limit },
            // Nothing started yet: an empty window.
            _ => EpochWindow::NewestOf { first: 1, last: 0, offset, limit },
        };
        let mut page = self.epochs_of(suite, with_runs, window).await?;
        for e in &mut page.epochs {
            e.runs.retain(|r| launch.started_run(&r.started_at));
        }
        Ok(page)
    }

    /// A suite's epochs in a window (all of them for the charts and the
    /// report, a page for the API, one for a run's epoch), with their runs
    /// when asked for.
    pub(super) async fn suite_epochs_in(&self, key: &str, with_runs: bool, window: EpochWindow) -> Result<SuiteEpochs> {
        self.epochs_of(self.find_suite(key).await?, with_runs, window).await
    }

    /// [`Service::suite_epochs_in`] for a suite already read.
    async fn epochs_of(&self, row: SuiteRow, with_runs: bool, window: EpochWindow) -> Result<SuiteEpochs> {
        let tasks = task_infos(&row);
        let holdout: HashMap<&str, bool> = tasks.iter().map(|t| (t.name.as_str(), t.holdout)).collect();
        let epochs = self.store.epochs_in(row.id, window).await?;
        // The run rows are read only when asked for: the charts and the
        // graph need the counted losses alone, a fraction of the data.
        let views = if window == EpochWindow::All {
            let runs = if with_runs { self.store.run_briefs_of_suite(row.id).await? } else { Vec::new() };
            build_epochs(&epochs, &runs, &self.store.counted_runs_of_suite(row.id).await?, &holdout)
        } else if with_runs {
            self.epoch_views(&epochs, &holdout).await?
        } else {
            let ids: Vec<i64> = epochs.iter().map(|e| e.id).collect();
            build_epochs(&epochs, &[], &self.store.counted_runs_of_epochs(&ids).await?, &holdout)
        };
        let (suite, total) = self.suite_now(&row, &tasks).await?;
        let page = match window {
            EpochWindow::Newest { offset, limit } => EpochPage { offset, limit, total },
            EpochWindow::NewestOf { first, last, offset, limit } => {
                EpochPage { offset, limit, total: (last - first + 1).max(0) }
            }
            _ => EpochPage { offset: 0, limit: u32::try_from(views.len()).unwrap_or(u32::MAX), total },
        };
        Ok(SuiteEpochs { suite, tasks, artifacts: artifacts_of(&views), epochs: views, page })
    }

    /// Some epochs with their runs: closed ones from the cache when it
    /// holds them (a closed epoch never changes; a page of the Runs screen
    /// asked again and again read 250 runs each time), the rest from the store.
    async fn epoch_views(&self, epochs: &[EpochRow], holdout: &HashMap<&str, bool>) -> Result<Vec<EpochView>> {
        let mut views: Vec<Option<EpochView>> = {
            let mut cache = lock(&self.epoch_views);
            epochs.iter().map(|e| cache.get(&e.id).map(|v| v.as_ref().clone())).collect()
        };
        let missing: Vec<EpochRow> =
            epochs.iter().zip(&views).filter(|(_, v)| v.is_none()).map(|(e, _)| e.clone()).collect();
        if missing.is_empty() {
            return Ok(views.into_iter().flatten().collect());
        }
        let ids: Vec<i64> = missing.iter().map(|e| e.id).collect();
        let runs = self.store.run_briefs_of_epochs(&ids).await?;
        let counted = self.store.counted_runs_of_epochs(&ids).await?;
        let mut read = build_epochs(&missing, &runs, &counted, holdout).into_iter();
        let mut cache = lock(&self.epoch_views);
        for (slot, e) in views.iter_mut().zip(epochs) {
            if slot.is_none() {
                let view = read.next();
                if let (Some(v), Some(_)) = (&view, &e.completed_at) {
                    cache.put(e.id, Arc::new(v.clone()));
                }
                *slot = view;
            }
        }
        Ok(views.into_iter().flatten().collect())
    }

    /// The suite as the lists show it now (its status, counts and spend),
    /// and how many epochs it has.
    async fn suite_now(&self, row: &SuiteRow, tasks: &[TaskInfo]) -> Result<(SuiteItem, i64)> {
        let state = self.store.suite_state(row.id).await?;
        let counts = SuiteCounts {
            epochs: state.completed,
            latest: state.latest_mean,
            unfinished: state.total - state.completed,
            waiting_on_a_person: state.waiting_on_a_person,
            awaiting_approval: state.awaiting_approval,
        };
        // The suite's own latest launch is all its item reads of the launches
        // (its status, path and error: not its runs' tally, left uncounted
        // on this path the Runs screen asks for with every page).
        let latest: Vec<LaunchView> =
            self.store.latest_request_of_suite(&row.name).await?.iter().map(|r| launch_view(r, None)).collect();
        let mut suite = self.suite_item(SuiteHead::of(row), counts, tasks, &latest);
        suite.model = (state.spend.calls > 0).then_some(state.spend);
        Ok((suite, state.total))
    }

    /// A suite's closed epochs (without run lists), read from the store only
    /// as far as the cache of them does not reach: a closed epoch never
    /// changes, so after the first request a refetch reads only the epochs
    /// closed since. At 500 epochs × 50 tasks reading them all was most of
    /// the Charts screen's request.
    async fn closed_epochs(&self, row: &SuiteRow, tasks: &[TaskInfo]) -> Result<Arc<Vec<EpochView>>> {
        let ids = self.store.closed_epoch_ids(row.id).await?;
        let cached = lock(&self.closed_epochs).get(&row.id).cloned().unwrap_or_default();
        let reusable = cached.len() <= ids.len() && cached.iter().zip(&ids).all(|(v, id)| v.epoch_id == *id);
        let known = if reusable { cached.len() } else { 0 };
        if known == ids.len() {
            return Ok(cached);
        }
        let holdout: HashMap<&str, bool> = tasks.iter().map(|t| (t.name.as_str(), t.holdout)).collect();
        let fresh = if known == 0 {
            // All of them: one read of the suite is cheaper than a list of ids.
            let epochs: Vec<EpochRow> =
                self.store.epochs(row.id).await?.into_iter().filter(|e| e.completed_at.is_some()).collect();
            build_epochs(&epochs, &[], &self.store.counted_runs_of_suite(row.id).await?, &holdout)
        } else {
            let new = &ids[known..];
            let epochs = self.store.epochs_by_ids(new).await?;
            build_epochs(&epochs, &[], &self.store.counted_runs_of_epochs(new).await?, &holdout)
        };
        let mut all = if known == 0 { Vec::new() } else { cached.as_ref().clone() };
        all.extend(fresh);
        let all = Arc::new(all);
        let mut cache = lock(&self.closed_epochs);
        if cache.len() >= CLOSED_EPOCHS_CACHED && !cache.contains_key(&row.id) {
            // A few suites at a time are charted; forget another one.
            if let Some(other) = cache.keys().next().copied() {
                cache.remove(&other);
            }
        }
        cache.insert(row.id, all.clone());
        Ok(all)
    }

    /// What the Charts screen draws, shaped on this side (the report draws
    /// the same points): one column per finished epoch, shared by the three
    /// charts.
    pub async fn suite_charts(&self, key: &str) -> Result<SuiteCharts> {
        let row = self.find_suite(key).await?;
        let tasks = task_infos(&row);
        let closed = self.closed_epochs(&row, &tasks).await?;
        let (suite, total) = self.suite_now(&row, &tasks).await?;
        let epochs = closed.as_ref().clone();
        let page = EpochPage { offset: 0, limit: u32::try_from(epochs.len()).unwrap_or(u32::MAX), total };
        let view = SuiteEpochs { suite, tasks, artifacts: artifacts_of(&epochs), epochs, page };
        Ok(crate::service::report::shape::suite_charts(view))
    }

    /// The suite's graph: its experiment tree when it has one, else the
    /// chain of its epochs.
    pub async fn suite_graph(&self, key: &str) -> Result<SuiteGraph> {
        let epochs = self.suite_epochs_in(key, false, EpochWindow::All).await?;
        let tree = self.store.tree_nodes(epochs.suite.id).await?;
        if !tree.is_empty() {
            let notes = self.store.tree_notes(epochs.suite.id).await?;
            return Ok(tree_graph(epochs, &tree, notes));
        }
        let nodes = epochs
            .epochs
            .iter()
            .map(|e| GraphNode {
                id: format!("epoch-{}", e.epoch_num),
                epoch_num: Some(e.epoch_num),
                mean_loss: e.mean_loss,
                holdout_mean_loss: e.holdout_mean_loss,
                label: versions_label(&e.parent_artifacts),
                artifacts: e.parent_artifacts.clone(),
                tree: None,
            })
            .collect();
        let edges = epochs
            .epochs
            .windows(2)
            .map(|w| GraphEdge {
                source: format!("epoch-{}", w[0].epoch_num),
                target: format!("epoch-{}", w[1].epoch_num),
                label: w[0]
                    .events
                    .iter()
                    .map(crate::service::report::shape::transition_label)
                    .chain(moved_between(&w[0].child_artifacts, &w[1].parent_artifacts))
                    .collect::<Vec<_>>()
                    .join("; "),
                events: w[0].events.clone(),
            })
            .collect();
        Ok(SuiteGraph { suite: epochs.suite.name, kind: GraphKind::Epochs, nodes, edges, notes: Vec::new() })
    }

    /// Every proposal an optimizer considered for a suite, for the
    /// predicted-against-observed view.
    pub async fn suite_proposals(&self, key: &str) -> Result<SuiteProposals> {
        let row = self.find_suite(key).await?;
        let proposals = self
            .store
            .proposals(row.id)
            .await?
            .into_iter()
            .map(|l| {
                let row = l.row;
                let p = row.proposal;
                ProposalItem {
                    id: row.id,
                    epoch_num: l.epoch_num,
                    optimizer: p.optimizer,
                    artifact: p.artifact,
                    outcome: p.outcome,
                    parent_version: p.parent_version,
                    applied_version: row.applied_version,
                    rationale: p.rationale,
                    expected_loss_reduction: p.expected_loss_reduction,
                    confidence: p.confidence,
                    observed_loss_reduction: row.observed_loss_reduction,
                    rolled_back: row.rolled_back,
                    decision_summary: p.decision.as_ref().map(crate::loss::paired::PairedEvidence::summary),
                    decision: p.decision,
                    rejection: p.rejection,
                    learning_rate: p.learning_rate,
                    edited_by_person: l.edited_by_person,
                }
            })
            .collect();
        Ok(SuiteProposals { suite: row.name, proposals })
    }

    // ----- reports --------------------------------------------------------------
}

/// The tasks a suite declared, read from the stored `tasks_json`.
pub(super) fn task_infos(row: &SuiteRow) -> Vec<TaskInfo> {
    let tasks: Vec<Value> = serde_json::from_str(&row.tasks_json).unwrap_or_default();
    tasks
        .iter()
        .filter_map(|t| {
            Some(TaskInfo {
                name: t["name"].as_str()?.to_string(),
                kind: TaskType::parse(t["kind"].as_str().unwrap_or("command")),
                holdout: t["holdout"].as_bool().unwrap_or(false),
            })
        })
        .collect()
}

/// The components and the weights of a stored loss breakdown (the JSON of
/// [`crate::loss::LossBreakdown`]).
pub(super) fn parts(breakdown_json: Option<&str>) -> (Option<LossParts>, Option<LossParts>) {
    let Some(b) = breakdown_json.and_then(|j| serde_json::from_str::<crate::loss::LossBreakdown>(j).ok()) else {
        return (None, None);
    };
    let components = LossParts {
        eval: b.eval_component,
        critique: b.critique_component,
        gate_rejections: b.gate_component,
        budget: b.budget_component,
        status: b.status_component,
    };
    let w = b.weights;
    let weights = LossParts {
        eval: w.eval,
        critique: w.critique,
        gate_rejections: w.gate_rejections,
        budget: w.budget,
        status: w.status,
    };
    (Some(components), Some(weights))
}

pub(super) fn run_item(r: &RunBrief, epoch_num: i64, holdout: bool, counted: bool) -> RunItem {
    let (parts, weights) = parts(r.loss_breakdown_json.as_deref());
    RunItem {
        id: r.id,
        epoch_id: r.epoch_id,
        epoch_num,
        task: r.task_name.clone(),
        kind: TaskType::parse(&r.kind),
        status: RunState::parse(&r.status),
        holdout,
        counted,
        loss: r.loss,
        parts,
        weights,
        started_at: r.started_at.clone(),
        finished_at: r.finished_at.clone(),
        duration_ms: r.duration_ms,
        exit_code: r.exit_code,
        error: r.error.clone(),
    }
}

/// The artifacts whose active version changed between one epoch's close
/// and the next epoch's start — a person activated another version on the
/// Artifacts screen, or another suite's run moved a shared artifact — told
/// as `knobs v4→v3 between epochs`. Without it the edge would say only the
/// update the next epoch did not run with.
fn moved_between(closed: &BTreeMap<String, i64>, next: &BTreeMap<String, i64>) -> Vec<String> {
    next.iter()
        .filter_map(|(name, to)| {
            let from = closed.get(name)?;
            (from != to).then(|| format!("{name} v{from}→v{to} between epochs"))
        })
        .collect()
}

/// What an epoch's record says beyond its numbers: the versions it ran
/// with, those active after its close, its moves (updates, rollbacks), why
/// it changed nothing, and what its model calls cost.
pub(super) struct EpochRecord {
    pub(super) parent: BTreeMap<String, i64>,
    pub(super) child: BTreeMap<String, i64>,
    pub(super) events: Vec<ArtifactEvent>,
    pub(super) note: Option<String>,
    pub(super) model: Option<crate::llm::ModelSpend>,
}

impl EpochRecord {
    /// Reads them from the epoch's row; a record that does not parse reads
    /// as none.
    pub(super) fn of(e: &EpochRow) -> EpochRecord {
        let record = crate::domain::EpochRecord::parse(e.child_artifacts_json.as_deref());
        EpochRecord {
            parent: serde_json::from_str(&e.parent_artifacts_json).unwrap_or_default(),
            events: record.artifact_events().cloned().collect(),
            child: record.artifacts,
            note: record.note,
            model: record.model,
        }
    }
}

/// `descent_settings v2 · supervisor_prompt v1`: the artifacts moved off v0.
pub(super) fn versions_label(artifacts: &BTreeMap<String, i64>) -> String {
    artifacts.iter().filter(|(_, v)| **v != 0).map(|(k, v)| format!("{k} v{v}")).collect::<Vec<_>>().join(" · ")
}

/// The experiment tree as a graph. Stored rows that do not parse (a hand-edited
/// database) still show, with what could be read.
pub(super) fn tree_graph(
    epochs: SuiteEpochs,
    rows: &[crate::store::TreeNodeRow],
    notes: Vec<crate::store::TreeNoteRow>,
) -> SuiteGraph {
    let epoch_num: BTreeMap<i64, i64> = epochs.epochs.iter().map(|e| (e.epoch_id, e.epoch_num)).collect();
    // Same rule as the search's own `best`: a pruned node was once the best.
    let best = rows
        .iter()
        .filter(|n| (n.node.status == "committed" || n.node.status == "pruned") && n.node.mean_loss.is_some())
        .min_by(|a, b| a.node.mean_loss.unwrap_or(f64::INFINITY).total_cmp(&b.node.mean_loss.unwrap_or(f64::INFINITY)))
        .map(|n| n.id);
    let nodes = rows
        .iter()
        .map(|r| {
            let artifacts: BTreeMap<String, i64> = serde_json::from_str(&r.node.artifacts_json).unwrap_or_default();
            let task_losses: BTreeMap<String, f64> =
                r.node.task_losses_json.as_deref().and_then(|t| serde_json::from_str(t).ok()).unwrap_or_default();
            GraphNode {
                id: format!("node-{}", r.id),
                epoch_num: r.node.epoch_id.and_then(|id| epoch_num.get(&id).copied()),
                mean_loss: r.node.mean_loss,
                holdout_mean_loss: r.node.holdout_mean_loss,
                label: versions_label(&artifacts),
                artifacts,
                tree: Some(TreeNodeView {
                    node_id: r.id,
                    parent_id: r.node.parent_id,
                    status: crate::outer::tree::NodeStatus::parse(&r.node.status)
                        .unwrap_or(crate::outer::tree::NodeStatus::Rejected),
                    changed_artifact: r.node.changed_artifact.clone(),
                    from_version: r.node.from_version,
                    to_version: r.node.to_version,
                    brief: r.node.brief.clone(),
                    note: r.node.note.clone(),
                    round: r.node.round,
                    rationale: r.node.rationale.clone(),
                    guidance: r.node.guidance.clone(),
                    evaluations: r.node.evaluations,
                    task_losses,
                    best: Some(r.id) == best,
                }),
            }
        })
        .collect();
    let edges = rows
        .iter()
        .filter_map(|r| {
            let parent = r.node.parent_id?;
            let label = match (&r.node.changed_artifact, r.node.from_version, r.node.to_version) {
                (Some(a), Some(f), Some(t)) => format!("{a} v{f}→v{t}"),
                (Some(a), _, None) => format!("{a} (no version written)"),
                _ => String::new(),
            };
            Some(GraphEdge {
                source: format!("node-{parent}"),
                target: format!("node-{}", r.id),
                label,
                events: Vec::new(),
            })
        })
        .collect();
    let notes = notes
        .into_iter()
        .map(|n| TreeNoteView {
            round: n.note.round,
            source: NoteSource::parse(&n.note.source),
            kind: NoteKind::parse(&n.note.kind),
            artifact: n.note.artifact,
            parent_id: n.note.parent_id,
            text: n.note.text,
            expected_loss_reduction: n.note.expected_loss_reduction,
            confidence: n.note.confidence,
            node_id: n.node_id,
        })
        .collect();
    SuiteGraph { suite: epochs.suite.name, kind: GraphKind::Tree, nodes, edges, notes }
}

/// What a suite's row counts and what it waits on, from the store.
pub(super) struct SuiteCounts {
    /// Finished epochs.
    epochs: i64,
    /// The latest finished epoch's mean loss.
    latest: Option<f64>,
    /// Epochs started and not finished.
    unfinished: i64,
    /// A trajectory of the suite waits for a person's answer.
    waiting_on_a_person: bool,
    /// Its watched file's commands wait for a person's approval.
    awaiting_approval: bool,
}

/// What identifies a suite on its row of the Suites screen.
pub(super) struct SuiteHead<'a> {
    id: i64,
    name: &'a str,
    created_at: &'a str,
    /// The suite file it was last run from.
    source: Option<&'a str>,
}

impl<'a> SuiteHead<'a> {
    pub(super) fn of(row: &'a SuiteRow) -> Self {
        SuiteHead { id: row.id, name: &row.name, created_at: &row.created_at, source: row.source_path.as_deref() }
    }
}

/// Builds every epoch's view from whole-suite reads (`runs` may be empty:
/// then the views have no run lists).
/// The artifacts some epochs' runs saw or moved, in name order (the timeline's rows).
fn artifacts_of(views: &[EpochView]) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> =
        views.iter().flat_map(|e| e.parent_artifacts.keys().chain(e.child_artifacts.keys())).collect();
    names.into_iter().cloned().collect()
}

/// Suites whose closed epochs [`Service::closed_epochs`] keeps at once.
const CLOSED_EPOCHS_CACHED: usize = 8;

pub(super) fn build_epochs(
    epochs: &[EpochRow],
    runs: &[RunBrief],
    counted: &[CountedRun],
    holdout: &HashMap<&str, bool>,
) -> Vec<EpochView> {
    let is_holdout = |task: &str| holdout.get(task).copied().unwrap_or(false);
    let mut runs_by_epoch: HashMap<i64, Vec<&RunBrief>> = HashMap::new();
    for r in runs {
        runs_by_epoch.entry(r.epoch_id).or_default().push(r);
    }
    let mut counted_by_epoch: HashMap<i64, Vec<&CountedRun>> = HashMap::new();
    for c in counted {
        counted_by_epoch.entry(c.epoch_id).or_default().push(c);
    }
    epochs
        .iter()
        .map(|e| {
            let counted = counted_by_epoch.remove(&e.id).unwrap_or_default();
            let counted_ids: Vec<i64> = counted.iter().map(|c| c.run_id).collect();
            let tasks: Vec<TaskLoss> = counted
                .iter()
                .map(|c| TaskLoss {
                    task: c.task_name.clone(),
                    run_id: c.run_id,
                    loss: c.loss,
                    status: RunState::parse(&c.status),
                    holdout: is_holdout(&c.task_name),
                })
                .collect();
            let held: Vec<f64> = tasks.iter().filter(|t| t.holdout).map(|t| t.loss).collect();
            let EpochRecord { parent, child: child_artifacts, events, note, model } = EpochRecord::of(e);
            EpochView {
                epoch_id: e.id,
                epoch_num: e.epoch_num,
                started_at: e.started_at.clone(),
                completed_at: e.completed_at.clone(),
                mean_loss: e.mean_loss,
                holdout_mean_loss: crate::loss::mean(&held),
                parent_artifacts: parent,
                child_artifacts,
                transitions: events.iter().map(crate::service::report::shape::transition_label).collect(),
                events,
                note,
                model,
                tasks,
                runs: runs_by_epoch
                    .remove(&e.id)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|r| run_item(r, e.epoch_num, is_holdout(&r.task_name), counted_ids.contains(&r.id)))
                    .collect(),
            }
        })
        .collect()
}
