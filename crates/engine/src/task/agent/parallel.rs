//! Parallel samples of one task (seed 002 §6.6), as the run carries them
//! out: K trajectories side by side, each in its own copy of the workspace,
//! all drawing on one [`SharedBudget`].
//!
//! The group is a row of its own (role `parallel`, id `run-N`) holding the
//! samples' ids and the group's budget; each sample is a full trajectory
//! (role `sample`, id `run-N.sK`) with its own events, observations and
//! bandit learning. A sample claims each iteration from the shared budget
//! before starting it ([`Group::reserve`]) and records its observation
//! against the group's budget under the ledger's lock, so the group never
//! spends more iterations than it has, and every sample's engine sees the
//! group's spending when it decides (budget exhaustion, Ω, extensions).
//!
//! The first sample to converge signals the group ([`Group::converged`]):
//! every other sample's stop signal turns on, which kills its running
//! overseer or agent process and abandons its model call; each then records
//! itself `superseded` (an open question it was waiting on is closed). When
//! no sample converges, the one holding the best observation across the
//! group decides. The group's own workspace (the run's) receives the result.
//!
//! After a restart the group continues: finished samples are taken as they
//! ended, unfinished ones resume where they stopped, the ledger is rebuilt
//! from what the samples recorded.

use std::sync::{Arc, Mutex, MutexGuard};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::{
    AgentError, AgentRun, AgentState, Driver, Kit, Placement, Report, Role, Setup, Start, close_unresumable,
    derived_seed, is_terminal_status, nested_workspace_dir,
};
use crate::bus::Event;
use crate::domain::TrajectoryStatus;
use crate::engine::parallel::deciding_sample;
use crate::engine::{ConvergenceBudget, ConvergencePolicy, SampleEnd, SharedBudget, Trajectory};
use crate::loss::RunStatus;
use crate::store::{TrajectoryEnd, TrajectoryRecord, TrajectoryRow};
use crate::workspace::Workspace;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data that is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The samples running together: the shared budget, who won, and how to
/// stop each one.
pub(super) struct Group {
    ledger: Mutex<SharedBudget>,
    /// Each sample's id and stop signal, in order.
    members: Vec<(String, watch::Sender<bool>)>,
    winner: Mutex<Option<String>>,
}

impl Group {
    fn new(ledger: SharedBudget, ids: &[String]) -> Arc<Group> {
        let members = ids.iter().map(|id| (id.clone(), watch::channel(false).0)).collect();
        Arc::new(Group { ledger: Mutex::new(ledger), members, winner: Mutex::new(None) })
    }

    /// The stop signal of sample `id`.
    fn stop_signal(&self, id: &str) -> watch::Receiver<bool> {
        match self.members.iter().find(|(m, _)| m == id) {
            Some((_, tx)) => tx.subscribe(),
            // Not a member: a signal that never turns on.
            None => watch::channel(false).1,
        }
    }

    /// Claims the next iteration from the shared budget; `None` when it is spent.
    pub(super) fn reserve(group: &Arc<Group>) -> Option<Reservation> {
        lock(&group.ledger).reserve().then(|| Reservation { group: group.clone(), settled: false })
    }

    pub(super) fn with_ledger<R>(&self, f: impl FnOnce(&mut SharedBudget) -> R) -> R {
        f(&mut lock(&self.ledger))
    }

    /// Sample `id` converged. The first to do so wins: every other sample is
    /// told to stop.
    pub(super) fn converged(&self, id: &str) {
        let mut winner = lock(&self.winner);
        if winner.is_some() {
            return;
        }
        *winner = Some(id.to_string());
        drop(winner);
        for (member, stop) in &self.members {
            if member != id {
                stop.send_replace(true);
            }
        }
    }

    /// The sample that made `id` stop, if one did.
    pub(super) fn superseded(&self, id: &str) -> Option<String> {
        lock(&self.winner).clone().filter(|w| w != id)
    }

    fn winner(&self) -> Option<String> {
        lock(&self.winner).clone()
    }

    /// Stops every sample (the user stopped the run).
    fn stop_all(&self) {
        for (_, stop) in &self.members {
            stop.send_replace(true);
        }
    }
}

/// One iteration's claim on the shared budget: settled when the iteration
/// records its observation, given back if it never does.
pub(super) struct Reservation {
    group: Arc<Group>,
    settled: bool,
}

impl Reservation {
    /// Records the iteration's observation through `step` (the engine's
    /// decision) against the group's budget.
    pub(super) fn record<R>(mut self, trajectory: &mut Trajectory, step: impl FnOnce(&mut Trajectory) -> R) -> R {
        self.settled = true;
        self.group.with_ledger(|ledger| ledger.record(trajectory, step))
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.settled {
            self.group.with_ledger(SharedBudget::release);
        }
    }
}

/// What the group's row keeps (its `state_json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct GroupState {
    samples: Vec<String>,
    /// The group's budget as SETUP sized it.
    budget: ConvergenceBudget,
    policy: ConvergencePolicy,
    winner: Option<String>,
}

/// Starts `k` samples of the task and runs them to the group's end.
pub(super) async fn run<'r>(
    r: &'r AgentRun<'r>,
    kit: &'r Kit,
    id: &str,
    setup: Setup,
    ws: Workspace,
    k: u32,
) -> Result<Report, AgentError> {
    let ids: Vec<String> = (1..=k).map(|i| format!("{id}.s{i}")).collect();
    let state = GroupState {
        samples: ids.clone(),
        budget: setup.budget.clone(),
        policy: setup.plan.policy.clone(),
        winner: None,
    };
    r.store
        .insert_trajectory(&TrajectoryRecord {
            id: id.to_string(),
            run_id: r.run_id,
            suite_id: r.suite_id,
            epoch_id: r.epoch_id,
            task_name: r.task.name.clone(),
            category: kit.category.clone(),
            workspace_dir: ws.root().to_string_lossy().into_owned(),
            setup_json: setup.json.to_string(),
            state_json: serde_json::to_string(&state).unwrap_or_default(),
            parent_id: None,
            role: Role::Parallel.as_str().to_string(),
            ordinal: 0,
        })
        .await?;
    let group = Group::new(SharedBudget::new(setup.budget.clone()), &ids);
    let mut drivers = Vec::with_capacity(ids.len());
    for (i, sample) in ids.iter().enumerate() {
        match new_sample(r, kit, id, &group, &state, &setup.json, sample, i as u32 + 1).await {
            Ok(driver) => drivers.push(driver),
            Err(e) => {
                // The group cannot run as asked: it ends failed, and the
                // samples already started end with it (nothing would resume them).
                let result = json!({"status": "failed", "error": e.to_string()}).to_string();
                for d in &drivers {
                    close(r, &d.place.id, "cancelled", &d.state.to_json(), &result).await;
                }
                close(r, id, "failed", &serde_json::to_string(&state).unwrap_or_default(), &result).await;
                return Err(e);
            }
        }
    }
    publish_start(r, id, &ids, &setup.budget, false);
    run_group(r, kit, id, group, state, setup.json, ws, drivers, Vec::new()).await
}

/// Records the end of a trajectory that made no attempt.
async fn close(r: &AgentRun<'_>, id: &str, status: &str, state_json: &str, result: &str) {
    let end = TrajectoryEnd {
        status,
        state_json,
        iterations: 0,
        tokens_used: 0,
        final_level: None,
        best_sequence: None,
        result_json: Some(result),
    };
    if let Err(e) = r.store.finish_trajectory(id, &end).await {
        tracing::warn!(trajectory = %id, error = %e, "could not record the trajectory's end");
    }
}

/// Starts sample `ordinal` in a fresh copy of the task's workspace.
#[allow(clippy::too_many_arguments)]
async fn new_sample<'r>(
    r: &'r AgentRun<'r>,
    kit: &'r Kit,
    group_id: &str,
    group: &Arc<Group>,
    state: &GroupState,
    group_setup: &Value,
    id: &str,
    ordinal: u32,
) -> Result<Driver<'r>, AgentError> {
    let dest = nested_workspace_dir(r.run_dir, id);
    let ws = match &r.spec.workspace {
        Some(folder) => Workspace::create(&r.suite_dir.join(folder), &dest, r.config.workspace.clone()).await?,
        None => Workspace::init(&dest, r.config.workspace.clone()).await?,
    };
    let mut setup = group_setup.clone();
    setup["role"] = json!(Role::Sample);
    setup["parent_id"] = json!(group_id);
    setup["ordinal"] = json!(ordinal);
    Driver::create(
        r,
        kit,
        Start {
            place: sample_place(group_id, group, id, ordinal),
            task: r.task.clone(),
            overseers: r.spec.overseers.clone(),
            ws,
            budget: state.budget.clone(),
            policy: state.policy.clone(),
            hints: r.task.hints.clone(),
            setup,
            // Each sample draws differently: independent starts are the point.
            seed: derived_seed(r.seed, u64::from(ordinal)),
        },
    )
    .await
}

fn sample_place(group_id: &str, group: &Arc<Group>, id: &str, ordinal: u32) -> Placement {
    Placement {
        id: id.to_string(),
        parent_id: Some(group_id.to_string()),
        role: Role::Sample,
        ordinal,
        depth: 0,
        cancel: group.stop_signal(id),
        group: Some(group.clone()),
    }
}

fn publish_start(r: &AgentRun<'_>, id: &str, samples: &[String], budget: &ConvergenceBudget, resumed: bool) {
    r.bus.publish(Event::ParallelSamplingStarted {
        suite_id: r.suite_id,
        run_id: r.run_id,
        trajectory_id: id.to_string(),
        samples: samples.to_vec(),
        resumed,
        max_tokens: budget.max_tokens,
        max_iterations: budget.max_iterations,
    });
}

/// Continues a group an earlier run left unfinished; `None` when it cannot
/// be (it is then closed as failed and the task starts afresh).
pub(super) async fn resume<'r>(
    r: &'r AgentRun<'r>,
    kit: &'r Kit,
    row: &TrajectoryRow,
) -> Result<Option<Report>, AgentError> {
    let opened = async {
        let state: GroupState =
            serde_json::from_str(&row.record.state_json).map_err(|e| format!("its stored state is invalid: {e}"))?;
        let ws = Workspace::open(std::path::Path::new(&row.record.workspace_dir), r.config.workspace.clone())
            .await
            .map_err(|e| format!("its workspace {}: {e}", row.record.workspace_dir))?;
        Ok::<_, String>((state, ws))
    };
    let (state, ws) = match opened.await {
        Ok(found) => found,
        Err(reason) => {
            tracing::warn!(trajectory = %row.record.id, %reason, "cannot resume the parallel samples; starting afresh");
            close_unresumable(&r.store, row, &reason).await?;
            return Ok(None);
        }
    };
    r.store.adopt_trajectory(&row.record.id, r.run_id).await?;
    tracing::info!(task = %r.task.name, trajectory = %row.record.id, samples = state.samples.len(), "resuming parallel samples");
    let setup: Value = serde_json::from_str(&row.record.setup_json).unwrap_or_default();
    let group = Group::new(SharedBudget::new(state.budget.clone()), &state.samples);
    let mut drivers = Vec::new();
    let mut finished = Vec::new();
    let mut recorded: Vec<Trajectory> = Vec::new();
    for (i, sample) in state.samples.iter().enumerate() {
        let ordinal = i as u32 + 1;
        let stored = r.store.trajectory(sample).await?;
        let driver = match stored {
            Some(s) if is_terminal_status(&s.status) => None,
            Some(s) => Driver::reopen(r, kit, sample_place(&row.record.id, &group, sample, ordinal), &s).await?,
            None => Some(new_sample(r, kit, &row.record.id, &group, &state, &setup, sample, ordinal).await?),
        };
        match driver {
            Some(d) => {
                recorded.push(d.state.trajectory.clone());
                drivers.push(d);
            }
            None => {
                // Ended (or closed as failed just now): taken as it is.
                if let Some(s) = r.store.trajectory(sample).await? {
                    if let Ok(st) = serde_json::from_str::<AgentState>(&s.record.state_json) {
                        recorded.push(st.trajectory);
                    }
                    if s.status == "converged" {
                        group.converged(&s.record.id);
                    }
                    finished.push(Report::from_row(&s, &kit.engine.config.level));
                }
            }
        }
    }
    let ledger = SharedBudget::rebuild(state.budget.clone(), recorded.iter());
    group.with_ledger(|l| *l = ledger);
    if let Some(w) = &state.winner {
        group.converged(w);
    }
    publish_start(r, &row.record.id, &state.samples, &state.budget, true);
    Ok(Some(run_group(r, kit, &row.record.id, group, state, setup, ws, drivers, finished).await?))
}

/// Runs the samples until each has ended, then ends the group: the deciding
/// sample's result in the group's workspace, the group's row and event.
#[allow(clippy::too_many_arguments)]
async fn run_group<'r>(
    r: &'r AgentRun<'r>,
    kit: &'r Kit,
    id: &str,
    group: Arc<Group>,
    mut state: GroupState,
    setup: Value,
    mut ws: Workspace,
    drivers: Vec<Driver<'r>>,
    mut reports: Vec<Report>,
) -> Result<Report, AgentError> {
    let mut running: FuturesUnordered<_> = drivers.into_iter().map(|d| d.drive()).collect();
    let mut cancel = r.cancel.clone();
    let mut watching = true;
    if *cancel.borrow() {
        group.stop_all();
        watching = false;
    }
    loop {
        tokio::select! {
            next = running.next() => match next {
                Some(report) => reports.push(report),
                None => break,
            },
            changed = cancel.changed(), if watching => {
                // The user's stop reaches every sample (a dropped sender means no stop can come).
                watching = false;
                if changed.is_ok() && *cancel.borrow() {
                    group.stop_all();
                } else if changed.is_ok() {
                    watching = true;
                }
            }
        }
    }
    drop(running);
    reports.sort_by_key(|rep| state.samples.iter().position(|s| *s == rep.id).unwrap_or(usize::MAX));

    let winner = group.winner();
    if winner.is_none() && reports.iter().any(|rep| rep.cancelled) {
        // Stopped by the user: the group and its unfinished samples stay resumable.
        return Ok(Report::cancelled(id, ws.root()));
    }
    state.winner = winner.clone();

    let ordinal_of = |sample: &str| state.samples.iter().position(|s| s == sample).map_or(0, |i| i as u32 + 1);
    let ends: Vec<SampleEnd> = reports
        .iter()
        .map(|rep| SampleEnd { ordinal: ordinal_of(&rep.id), converged: rep.converged, level: rep.best_level })
        .collect();
    let deciding = deciding_sample(&ends, winner.as_deref().map(ordinal_of)).map(|i| &reports[i]);
    let policy = &state.policy;
    let (status, run_status, level) = match deciding {
        Some(d) if d.converged => (TrajectoryStatus::Converged, RunStatus::Complete, d.level),
        Some(d) if d.status == TrajectoryStatus::AcceptedPartial.as_str() => {
            (TrajectoryStatus::AcceptedPartial, RunStatus::Partial, d.level)
        }
        Some(d) => {
            let level = d.best_level.unwrap_or(d.level);
            if policy.partial_acceptance && level >= policy.partial_threshold {
                (TrajectoryStatus::AcceptedPartial, RunStatus::Partial, level)
            } else {
                (TrajectoryStatus::Exhausted, RunStatus::Failed, level)
            }
        }
        None => (TrajectoryStatus::Failed, RunStatus::Failed, 0.0),
    };
    let mut notes = Vec::new();
    let mut commit = None;
    if let Some(d) = deciding {
        match ws.replace_with(&d.workspace, &format!("the result of sample {}", d.id)).await {
            Ok(c) => commit = Some(c.commit),
            Err(e) => notes.push(format!("could not bring sample {}'s result into the workspace: {e}", d.id)),
        }
    }
    let error = match (deciding, status) {
        (None, _) => Some(
            reports
                .iter()
                .find_map(|rep| rep.error.clone())
                .unwrap_or_else(|| "no sample made an observation".to_string()),
        ),
        _ => None,
    };
    let ledger = group.with_ledger(|l| l.budget.clone());
    let iterations: u32 = reports.iter().map(|rep| rep.iterations).sum();
    let samples: Vec<Value> = reports
        .iter()
        .map(|rep| {
            json!({
                "trajectory_id": rep.id, "status": rep.status, "level": rep.level, "best_level": rep.best_level,
                "iterations": rep.iterations, "tokens": rep.tokens, "error": rep.error,
            })
        })
        .collect();
    let summary = json!({
        "trajectory_id": id,
        "role": Role::Parallel,
        "status": status,
        "end": "parallel",
        "error": error,
        "final_level": level,
        "result": deciding.map(|d| json!({"trajectory_id": d.id, "level": level, "commit": commit})),
        "winner": winner,
        "samples": samples,
        "iterations": iterations,
        "tokens_used": ledger.tokens_used,
        "budget": ledger,
        "gate_rejections": reports.iter().map(|rep| rep.gate_rejections).sum::<u32>(),
        "category": kit.category,
        "setup": setup,
        "workspace": ws.root(),
        "notes": notes,
    });
    let result_text = serde_json::to_string_pretty(&summary).unwrap_or_default();
    let end = TrajectoryEnd {
        status: status.as_str(),
        state_json: &serde_json::to_string(&state).unwrap_or_default(),
        iterations: i64::from(iterations),
        tokens_used: i64::try_from(ledger.tokens_used).unwrap_or(i64::MAX),
        final_level: Some(level),
        best_sequence: None,
        result_json: Some(&result_text),
    };
    if let Err(e) = r.store.finish_trajectory(id, &end).await {
        tracing::warn!(error = %e, "could not record the parallel group's end");
    }
    r.bus.publish(Event::ParallelSamplingFinished {
        suite_id: r.suite_id,
        run_id: r.run_id,
        trajectory_id: id.to_string(),
        result_trajectory: deciding.map(|d| d.id.clone()),
        status,
        level,
        iterations,
    });
    let table = reports.iter().map(|rep| rep.table.as_str()).collect::<String>();
    Ok(Report {
        id: id.to_string(),
        status: status.as_str().to_string(),
        run_status,
        converged: status == TrajectoryStatus::Converged,
        level,
        best_level: deciding.and_then(|d| d.best_level),
        iterations,
        tokens: ledger.tokens_used,
        wall_time_ms: ledger.wall_time_used_ms,
        gate_rejections: reports.iter().map(|rep| rep.gate_rejections).sum(),
        critique_score: deciding.and_then(|d| d.critique_score),
        budget_remaining: ledger.remaining_fraction().clamp(0.0, 1.0),
        summary,
        table,
        error,
        workspace: ws.root().to_path_buf(),
        cancelled: false,
    })
}
