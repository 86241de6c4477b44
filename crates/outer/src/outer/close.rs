//! Closing an epoch: what its runs measured decides what happens to the
//! artifacts before the next one.
//!
//! The close is a short pipeline, each stage one method: [`SuiteRunner::judge`]
//! compares the epoch with the one before it (on a noisy suite: the series of
//! epochs after the last update with the series before it) and says whether
//! the last update stays; a regression becomes rollback moves
//! ([`Judgement::rollback_moves`]); otherwise [`SuiteRunner::next_update`]
//! asks the approval gate and the optimizer for the next update; and
//! [`SuiteRunner::close`] writes every move, the proposals and the epoch's
//! record in one transaction and announces its moves. η is the run's
//! ([`OuterState`]): a rollback halves it there, in [`SuiteRunner::run_epoch`],
//! and the stages are handed the rate; everything else a stage needs is read
//! back from the store.

use std::collections::{BTreeMap, BTreeSet};

use super::approval::{self, ApprovalMode, GatedStep};
use super::noise;
use super::state::OuterState;
use super::{EpochEval, EpochSummary, RollbackReason, RunnerError, SuiteRunner, TaskResult, optimizer, rollback};
use crate::bus::Event;
use crate::domain::{ArtifactEvent, EpochEvent, EpochRecord, VerificationEvent};
use crate::loss;
use crate::loss::paired::PairedEvidence;
use crate::store::{
    ArtifactChange, EpochClose, EpochRow, ObservedEffect, ProposalListing, ProposalOutcome, ProposalRecord,
};

/// What an epoch measured.
#[derive(Debug, Clone, Copy)]
pub(super) struct EpochMeans {
    /// The training tasks' mean (the held-out tasks' on a suite of only
    /// held-out tasks, so it is still measured): what the optimizer follows.
    pub(super) mean_loss: Option<f64>,
    pub(super) holdout_mean: Option<f64>,
}

impl EpochMeans {
    pub(super) fn of(results: &[TaskResult]) -> EpochMeans {
        let training: Vec<f64> = results.iter().filter(|r| !r.holdout).map(|r| r.loss).collect();
        let holdout: Vec<f64> = results.iter().filter(|r| r.holdout).map(|r| r.loss).collect();
        EpochMeans {
            mean_loss: loss::mean(&training).or_else(|| loss::mean(&holdout)),
            holdout_mean: loss::mean(&holdout),
        }
    }
}

/// What [`SuiteRunner::judge`] found.
enum Judged {
    /// The epoch is one more sample of a noisy suite's update being
    /// verified: recorded, nothing decided.
    Sample(Verification),
    Decided(Judgement),
}

/// The decision about the last update: what was compared, and whether it stays.
struct Judgement {
    /// The series being verified, on a noisy suite.
    series: Option<Verification>,
    /// The series' gain, judged against their noise.
    gain: Option<noise::Gain>,
    prev_mean: Option<f64>,
    prev_holdout: Option<f64>,
    current_mean: Option<f64>,
    current_holdout: Option<f64>,
    /// The updates being judged: (artifact, from_version, to_version).
    last_updates: Vec<(String, i64, i64)>,
    /// The training loss rose (or a noisy gain was within the noise).
    regressed: bool,
    reason: RollbackReason,
    roll_back: bool,
    /// What this epoch says about the judged epoch's winner, for its proposal row.
    observed: Option<ObservedEffect>,
    /// The judged update's effect task by task.
    evidence: Option<PairedEvidence>,
}

/// Everything an epoch's close writes and announces.
#[derive(Default)]
struct EpochMoves {
    changes: Vec<ArtifactChange>,
    /// Proposal rows to write (empty when the gate wrote them already).
    proposals: Vec<ProposalRecord>,
    note: Option<String>,
    model: Option<crate::llm::ModelSpend>,
    applied_approval: Option<i64>,
    /// The events of the epoch's record (`child_artifacts_json`).
    events: Vec<EpochEvent>,
    bus_events: Vec<Event>,
}

impl Judgement {
    fn noise(&self) -> Option<f64> {
        self.gain?.noise()
    }

    /// The event that says a noisy suite's update survived its series.
    fn verified_event(&self) -> Option<EpochEvent> {
        let v = self.series.as_ref()?;
        (self.gain.is_some() && !self.roll_back).then(|| {
            EpochEvent::Verification(VerificationEvent::Verified {
                evaluations: evaluations(v),
                mean_loss_prev: self.prev_mean,
                mean_loss_current: self.current_mean,
                noise: self.noise(),
                kept: true,
                paired: self.evidence.clone(),
            })
        })
    }

    /// Every judged update goes back to the version it replaced; `lr` is η
    /// after the rollback (halved by the caller, who owns it).
    fn rollback_moves(&self, suite_id: i64, epoch_id: i64, lr: f64) -> EpochMoves {
        let mut moves = EpochMoves::default();
        let (m, p) = (self.current_mean.unwrap_or_default(), self.prev_mean.unwrap_or_default());
        let reason = if self.regressed { self.reason } else { RollbackReason::Holdout };
        for (artifact, from, to) in &self.last_updates {
            moves.changes.push(ArtifactChange::Activate { name: artifact.clone(), version: *from });
            let series = self.series.as_ref().filter(|_| self.gain.is_some());
            moves.events.push(EpochEvent::Artifact(ArtifactEvent::Rollback {
                artifact: artifact.clone(),
                from_version: *to,
                to_version: *from,
                mean_loss_prev: Some(p),
                mean_loss_current: Some(m),
                new_learning_rate: Some(lr),
                reason: Some(reason),
                holdout_mean_prev: self.prev_holdout,
                holdout_mean_current: self.current_holdout,
                evaluations: series.map(evaluations),
                noise: series.and_then(|_| self.noise()),
                paired: self.evidence.clone(),
            }));
            moves.bus_events.push(Event::ArtifactRolledBack {
                suite_id,
                epoch_id,
                artifact: artifact.clone(),
                from_version: *to,
                to_version: *from,
                mean_loss_prev: p,
                mean_loss_current: m,
                new_learning_rate: lr,
                reason,
                holdout_mean_prev: self.prev_holdout,
                holdout_mean_current: self.current_holdout,
                why: match (&self.evidence, reason) {
                    // Within the noise says little without what the noise was.
                    (Some(e), RollbackReason::Noise) => format!(" (the gain was within the noise: {})", e.summary()),
                    _ => rollback::why(Some(reason), (Some(p), Some(m)), (self.prev_holdout, self.current_holdout)),
                },
            });
        }
        moves
    }
}

impl EpochMoves {
    /// Adds the update `p` (from the version the epoch ran with, which a
    /// rollback returns to); its new version is filled in once stored.
    fn push_update(
        &mut self,
        suite_id: i64,
        epoch_id: i64,
        parent: &BTreeMap<String, i64>,
        p: optimizer::Proposal,
        lr: f64,
    ) {
        let from = parent.get(&p.artifact).copied().unwrap_or(p.parent_version);
        self.events.push(EpochEvent::Artifact(ArtifactEvent::Update {
            artifact: p.artifact.clone(),
            from_version: from,
            // Known once the new version is stored (see `close`).
            to_version: 0,
            rationale: p.rationale.clone(),
            expected_loss_reduction: p.expected_loss_reduction,
            confidence: p.confidence,
            learning_rate: Some(lr),
            details: p.details.clone().into_iter().collect(),
        }));
        self.changes.push(ArtifactChange::Update {
            name: p.artifact.clone(),
            content: p.content.clone(),
            parent_version: p.parent_version,
        });
        self.bus_events.push(Event::ArtifactUpdated {
            suite_id,
            epoch_id,
            artifact: p.artifact,
            from_version: from,
            to_version: 0,
            rationale: p.rationale,
            learning_rate: lr,
        });
    }
}

impl SuiteRunner {
    /// Runs (or finishes) one epoch and records it in `state`; `false` when
    /// interrupted before it closed.
    pub(super) async fn run_epoch(
        &self,
        state: &mut OuterState,
        epoch: &EpochRow,
        resumed: bool,
    ) -> Result<bool, RunnerError> {
        let suite_id = state.suite_id;
        let Some(eval) = self.evaluate_epoch(suite_id, epoch, resumed).await? else {
            return Ok(false);
        };
        let measured = EpochMeans::of(&eval.results);
        let judgement = match self.judge(suite_id, epoch, &eval.parent, measured, &eval.results).await? {
            Judged::Sample(v) => {
                let (repeats, mean, held) = (self.verify_repeats(), measured.mean_loss, measured.holdout_mean);
                let lr = state.learning_rate();
                let summary = self.close_verify_sample(epoch, &eval.parent, mean, held, &v, repeats, lr).await?;
                self.epoch_closed(state, summary);
                return Ok(true);
            }
            Judged::Decided(j) => j,
        };
        let mut moves = if judgement.roll_back {
            // The one place η changes: a rollback halves it.
            let lr = state.halve_learning_rate();
            judgement.rollback_moves(suite_id, epoch.id, lr)
        } else if let Some(mean) = measured.mean_loss {
            match self.next_update(suite_id, epoch, &eval, mean, state.learning_rate()).await? {
                Some(moves) => moves,
                // Cancelled while waiting for a person: the epoch stays open.
                None => return Ok(false),
            }
        } else {
            EpochMoves::default()
        };
        moves.events.splice(0..0, judgement.verified_event());
        let lr = state.learning_rate();
        let summary = self.close(epoch, resumed, &eval.parent, measured, judgement.observed, moves, lr).await?;
        self.epoch_closed(state, summary);
        Ok(true)
    }

    /// Compares the epoch with what came before it and decides whether the
    /// last update stays.
    ///
    /// A noisy suite judges an update on several epochs of the versions it
    /// made: the epochs after it are a series of `verify_repeats`
    /// evaluations, and only the last of them decides, on the series' mean
    /// against the mean of the series before the update, with the noise rule
    /// of the tree search (`noise::beyond_noise`).
    ///
    /// Only an update the epoch ran with is judged: one a person undid
    /// meanwhile (another version made active on the Artifacts screen) was
    /// never measured, so it gets no observed effect and no rollback.
    async fn judge(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        parent: &BTreeMap<String, i64>,
        measured: EpochMeans,
        results: &[TaskResult],
    ) -> Result<Judged, RunnerError> {
        let EpochMeans { mean_loss, holdout_mean } = measured;
        let ran = |(artifact, _, to): &(String, i64, i64)| parent.get(artifact) == Some(to);
        let repeats = self.verify_repeats();
        let series = if repeats > 1 && mean_loss.is_some() {
            let history: Vec<EpochRow> = self
                .store
                .epochs(suite_id)
                .await?
                .into_iter()
                .filter(|e| e.completed_at.is_some() && e.epoch_num < epoch.epoch_num)
                .collect();
            pending_verification(&history).filter(|v| updates_of(&v.update).iter().all(ran))
        } else {
            None
        };
        if let Some(v) = series.as_ref().filter(|v| v.child.len() + 1 < repeats as usize) {
            return Ok(Judged::Sample(v.clone()));
        }

        // What the decision compares: the epoch before against this one, or
        // on a noisy suite the two series' means.
        let now_by_task = pairing_losses(results);
        let (decided, prev_mean, prev_holdout, current_mean, current_holdout, gain, evidence) = match &series {
            Some(v) => {
                let mut now: Vec<f64> = v.child.iter().map(|(_, m)| *m).collect();
                now.extend(mean_loss);
                let before: Vec<f64> = v.parent.iter().map(|(_, m)| *m).collect();
                let mut held_now = Vec::new();
                for (id, _) in &v.child {
                    held_now.extend(self.holdout_mean_of(*id).await?);
                }
                held_now.extend(holdout_mean);
                let mut held_before = Vec::new();
                for (id, _) in &v.parent {
                    held_before.extend(self.holdout_mean_of(*id).await?);
                }
                // Task by task: each evaluation before paired with one after.
                let before_ids: Vec<i64> = v.parent.iter().map(|(id, _)| *id).collect();
                let child_ids: Vec<i64> = v.child.iter().map(|(id, _)| *id).collect();
                let mut after_by_task = self.training_losses_of(&child_ids).await?;
                for (task, losses) in now_by_task {
                    after_by_task.entry(task).or_default().extend(losses);
                }
                let evidence = PairedEvidence::of_tasks(&self.training_losses_of(&before_ids).await?, &after_by_task);
                let (b, n) = (loss::mean(&before), loss::mean(&now));
                let gain = match (b, n) {
                    (Some(b), Some(n)) => {
                        let on_means = noise::beyond_noise(b, &before, n, &now, self.config.tree.min_improvement);
                        Some(noise::judge(on_means, evidence.as_ref(), true))
                    }
                    _ => None,
                };
                (Some(v.update.clone()), b, loss::mean(&held_before), n, loss::mean(&held_now), gain, evidence)
            }
            None => {
                let prev = self.store.last_completed_epoch(suite_id).await?.filter(|p| p.epoch_num < epoch.epoch_num);
                let prev_holdout = match &prev {
                    Some(p) => self.holdout_mean_of(p.id).await?,
                    None => None,
                };
                let prev_mean = prev.as_ref().and_then(|p| p.mean_loss);
                // Stated, not deciding: on a deterministic harness the mean does.
                let evidence = match &prev {
                    Some(p) => PairedEvidence::of_tasks(&self.training_losses_of(&[p.id]).await?, &now_by_task),
                    None => None,
                };
                (prev, prev_mean, prev_holdout, mean_loss, holdout_mean, None, evidence)
            }
        };
        let mut last_updates = decided.as_ref().map(updates_of).unwrap_or_default();
        last_updates.retain(ran);

        // On a noisy suite a gain within the noise does not count: the update goes.
        let (regressed, reason) = match gain {
            Some(noise::Gain::Better { .. }) => (false, RollbackReason::Training),
            Some(noise::Gain::WithinNoise { .. }) => (true, RollbackReason::Noise),
            Some(noise::Gain::NotBetter { .. }) => (true, RollbackReason::Training),
            None => (matches!((current_mean, prev_mean), (Some(m), Some(p)) if m > p), RollbackReason::Training),
        };
        // The held-out gate: an update may lower the training loss and still
        // be overfitting the optimizer's evidence; held-out tasks never reach
        // the optimizer, so a rise there beyond noise is the tell.
        let holdout_regressed = matches!(
            (current_holdout, prev_holdout),
            (Some(h), Some(p)) if h > p + self.config.holdout_tolerance
        );
        let roll_back =
            self.config.rollback_on_regression && (regressed || holdout_regressed) && !last_updates.is_empty();
        let observed = match (&decided, prev_mean, current_mean) {
            (Some(p), Some(before), Some(now)) if !last_updates.is_empty() => Some(ObservedEffect {
                epoch_id: p.id,
                loss_reduction: before - now,
                rolled_back: roll_back,
                evidence: evidence.clone(),
            }),
            _ => None,
        };
        Ok(Judged::Decided(Judgement {
            series,
            gain,
            prev_mean,
            prev_holdout,
            current_mean,
            current_holdout,
            last_updates,
            regressed,
            reason,
            roll_back,
            observed,
            evidence,
        }))
    }

    /// The update this close applies, if any: one a person approved
    /// meanwhile, else the optimizer's winner (put before a person first
    /// when the gate is on). `None` when the run was cancelled while it
    /// waited for a person.
    async fn next_update(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        eval: &EpochEval,
        mean_loss: f64,
        lr: f64,
    ) -> Result<Option<EpochMoves>, RunnerError> {
        let mut moves = EpochMoves::default();
        let gated = match self.settled_update(suite_id).await? {
            approval::Settled::Step(step) => step,
            approval::Settled::Cancelled => return Ok(None),
            approval::Settled::Open => {
                let Some(proposed) = self.propose(suite_id, epoch, eval, mean_loss, lr).await? else {
                    return Ok(None);
                };
                moves.model = proposed.model;
                moves.note = proposed.note;
                match proposed.winner {
                    Some(w) if self.approval_mode() != ApprovalMode::Off => {
                        // The gate writes the epoch's proposal rows with the
                        // question: they are kept even if the run is
                        // cancelled while it waits, and a decision updates them.
                        let evidence = approval::evidence_json(&proposed.evidence, &w.details)?;
                        match self.gate(suite_id, epoch, w, None, evidence, &proposed.rows).await? {
                            Some(step) => step,
                            None => return Ok(None),
                        }
                    }
                    winner => {
                        moves.proposals = proposed.rows;
                        GatedStep { update: winner, ..GatedStep::default() }
                    }
                }
            }
        };
        if gated.note.is_some() {
            moves.note = gated.note;
        }
        moves.applied_approval = gated.approval;
        if let Some(p) = gated.update {
            moves.push_update(suite_id, epoch.id, &eval.parent, p, lr);
        }
        Ok(Some(moves))
    }

    /// Writes the epoch's moves and record in one transaction, then
    /// announces the moves (the epoch itself is announced by the observers).
    #[allow(clippy::too_many_arguments)]
    async fn close(
        &self,
        epoch: &EpochRow,
        resumed: bool,
        parent: &BTreeMap<String, i64>,
        measured: EpochMeans,
        observed: Option<ObservedEffect>,
        moves: EpochMoves,
        lr: f64,
    ) -> Result<EpochSummary, RunnerError> {
        let EpochMoves { changes, proposals, note, model, applied_approval, mut events, bus_events } = moves;
        let EpochMeans { mean_loss, holdout_mean } = measured;
        let mut child = parent.clone();
        let close = EpochClose { changes, proposals, observed, applied_approval };
        // The update events learn their `to_version` inside the transaction.
        let versions = self
            .store
            .complete_epoch(epoch.id, mean_loss, &close, |versions| {
                for (change, v) in close.changes.iter().zip(versions) {
                    match change {
                        ArtifactChange::Update { name, .. } | ArtifactChange::Activate { name, .. } => {
                            child.insert(name.clone(), *v);
                        }
                    }
                }
                let moved = events.iter_mut().filter_map(|e| match e {
                    EpochEvent::Artifact(a) => Some(a),
                    _ => None,
                });
                for (event, v) in moved.zip(versions) {
                    if let ArtifactEvent::Update { to_version, .. } = event {
                        *to_version = *v;
                    }
                }
                // η after this epoch: a resumed or continued run starts from it.
                let record = EpochRecord {
                    artifacts: child.clone(),
                    events: events.clone(),
                    note: note.clone(),
                    model,
                    learning_rate: Some(lr),
                };
                record.to_json()
            })
            .await?;
        for (mut e, v) in bus_events.into_iter().zip(&versions) {
            if let Event::ArtifactUpdated { to_version, .. } = &mut e {
                *to_version = *v;
            }
            self.bus.publish(e);
        }
        Ok(EpochSummary {
            epoch_id: epoch.id,
            epoch_num: epoch.epoch_num,
            mean_loss,
            holdout_mean_loss: holdout_mean,
            learning_rate: lr,
            resumed,
            events,
            note,
            model,
        })
    }

    /// Asks the optimizer for the next update, from the epoch's evidence.
    async fn propose(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        eval: &EpochEval,
        mean_loss: f64,
        lr: f64,
    ) -> Result<Option<Proposed>, RunnerError> {
        let EpochEval { parent, artifacts, results, epoch_seed } = eval;
        let mut candidates = Vec::new();
        // One read of the suite's proposals: what the proposer is shown and
        // which texts were screened before.
        let listings = self.store.proposals(suite_id).await?;
        let mut history = Self::past_proposals(&listings);
        let kinds = self.suite.task_kinds();
        // Only evolve reads what was measured (textgrad sees its history).
        // Every optimizer is told what was measured before: a proposal that
        // repeats it could only repeat a known measurement.
        let measured = self.measured_versions(suite_id).await?;
        let screened = Self::screened_texts(&listings);
        for (name, version) in parent {
            let def = self.registry.def(name)?.clone();
            if !def.steers_any(&kinds) {
                continue;
            }
            let content = artifacts.iter().find(|a| &a.name == name).map(|a| a.content.clone()).unwrap_or_default();
            let mut seen = Vec::new();
            for v in measured.get(name).into_iter().flatten().filter(|v| *v != version) {
                seen.push(self.registry.get(name, *v).await?.content);
            }
            seen.push(content.clone());
            seen.extend(screened.get(name).into_iter().flatten().cloned());
            candidates.push(optimizer::Candidate { def, version: *version, content, seen });
        }
        history.retain(|name, _| candidates.iter().any(|c| &c.def.name == name));
        let evidence = optimizer::Evidence {
            suite: self.suite.name.clone(),
            epoch_num: epoch.epoch_num,
            mean_loss,
            learning_rate: lr,
            tasks: task_evidence(results),
            candidates,
            seed: *epoch_seed,
            history,
            guidance: Vec::new(),
        };
        let optimizer = self.optimizer.as_ref().ok_or(RunnerError::NeedsModel("unknown"))?;
        let before = self.optimizer_llm.as_ref().map(|c| {
            c.set_scope(crate::llm::CallScope { suite_id: Some(suite_id), epoch_id: Some(epoch.id), run_id: None });
            c.usage().snapshot()
        });
        let screening = super::screen_run::TaskScreening {
            runner: self,
            epoch_num: epoch.epoch_num,
            artifacts,
            screened: Default::default(),
        };
        let step = match optimizer.propose_screened(&evidence, &screening).await {
            Ok(step) => step,
            // Stopped while screening: the epoch stays open and the next
            // run proposes again.
            Err(_) if self.cancelled() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        // Every reply is counted, usable or not: the client's counters
        // saw each call this step made.
        let model = self
            .optimizer_llm
            .as_ref()
            .zip(before)
            .map(|(c, before)| crate::llm::ModelSpend::from(c.usage().snapshot().since(&before)));
        Ok(Some(Proposed {
            note: step.no_change_reason(optimizer.name()),
            rows: proposal_rows(&step, optimizer.name(), lr),
            winner: step.winner,
            model,
            evidence,
        }))
    }

    /// Closes an epoch that is one more evaluation of a noisy suite's last
    /// update: its mean is recorded, nothing is decided or proposed.
    #[allow(clippy::too_many_arguments)]
    async fn close_verify_sample(
        &self,
        epoch: &EpochRow,
        parent: &BTreeMap<String, i64>,
        mean_loss: Option<f64>,
        holdout_mean: Option<f64>,
        v: &Verification,
        repeats: u32,
        learning_rate: f64,
    ) -> Result<EpochSummary, RunnerError> {
        let updates = updates_of(&v.update);
        let events = vec![EpochEvent::Verification(VerificationEvent::VerifySample {
            sample: evaluations(v),
            of: u64::from(repeats),
            update_epoch: v.update.epoch_num,
            artifacts: updates.iter().map(|(a, _, _)| a.clone()).collect(),
        })];
        self.store
            .complete_epoch(epoch.id, mean_loss, &EpochClose::default(), |_| {
                let record = EpochRecord {
                    artifacts: parent.clone(),
                    events: events.clone(),
                    learning_rate: Some(learning_rate),
                    ..EpochRecord::default()
                };
                record.to_json()
            })
            .await?;
        Ok(EpochSummary {
            epoch_id: epoch.id,
            epoch_num: epoch.epoch_num,
            mean_loss,
            holdout_mean_loss: holdout_mean,
            learning_rate,
            resumed: false,
            events,
            note: Some(format!("verification sample {} of {repeats}", v.child.len() + 1)),
            model: None,
        })
    }

    /// What closed epochs pair ([`add_pairs`]), in epoch order, read in one
    /// query that leaves the runs' output out.
    async fn training_losses_of(&self, epoch_ids: &[i64]) -> Result<BTreeMap<String, Vec<f64>>, RunnerError> {
        let training: BTreeSet<&str> =
            self.suite.tasks.iter().filter(|t| !t.holdout).map(|t| t.name.as_str()).collect();
        let mut by_key: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in self.store.counted_results_of_epochs(epoch_ids).await? {
            if training.contains(r.task_name.as_str()) {
                let examples = r.result_json.as_deref().map(crate::task::command::examples_of).unwrap_or_default();
                add_pairs(&mut by_key, &r.task_name, r.loss, &examples);
            }
        }
        Ok(by_key)
    }

    /// Per artifact, the texts a screening search measured on a minibatch
    /// and did not take: a later step (or run) does not measure them again.
    fn screened_texts(listings: &[ProposalListing]) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in listings.iter().map(|l| &l.row.proposal).filter(|p| p.decision.is_some()) {
            if let Some(content) = &p.content {
                out.entry(p.artifact.clone()).or_default().push(content.clone());
            }
        }
        out
    }

    /// The mean loss of an epoch's held-out tasks, from the store.
    async fn holdout_mean_of(&self, epoch_id: i64) -> Result<Option<f64>, RunnerError> {
        let held: BTreeSet<&str> = self.suite.tasks.iter().filter(|t| t.holdout).map(|t| t.name.as_str()).collect();
        if held.is_empty() {
            return Ok(None);
        }
        let losses: Vec<f64> = self
            .store
            .epoch_runs(epoch_id)
            .await?
            .into_iter()
            .filter(|r| held.contains(r.task_name.as_str()))
            .map(|r| r.loss)
            .collect();
        Ok(loss::mean(&losses))
    }

    /// Per artifact, the versions this suite's closed epochs ran with:
    /// what has been measured. Read from the closed epochs, not from the
    /// registry, so a version a killed run made but never measured does not
    /// count, and a resumed run proposes what the uninterrupted one did.
    async fn measured_versions(
        &self,
        suite_id: i64,
    ) -> Result<BTreeMap<String, std::collections::BTreeSet<i64>>, RunnerError> {
        let mut out: BTreeMap<String, std::collections::BTreeSet<i64>> = BTreeMap::new();
        for e in self.store.epochs(suite_id).await?.into_iter().filter(|e| e.completed_at.is_some()) {
            let parent: BTreeMap<String, i64> =
                serde_json::from_str(&e.parent_artifacts_json).map_err(crate::store::StoreError::from)?;
            for (name, version) in parent {
                out.entry(name).or_default().insert(version);
            }
        }
        Ok(out)
    }

    /// Earlier proposals of this suite per artifact, oldest first: the
    /// applied ones with their effect, and the latest ones a rejection rule
    /// dropped with its reason (one query for every candidate), so that the
    /// proposer neither repeats a rolled-back change nor a refused one.
    fn past_proposals(listings: &[ProposalListing]) -> BTreeMap<String, Vec<optimizer::PastProposal>> {
        let mut out: BTreeMap<String, Vec<optimizer::PastProposal>> = BTreeMap::new();
        let mut refused: BTreeMap<String, usize> = BTreeMap::new();
        for l in listings.iter().rev() {
            let (row, p) = (&l.row, &l.row.proposal);
            let rejection = match p.outcome {
                ProposalOutcome::Winner => None,
                // Only replies that said something (a failed call has no rationale).
                ProposalOutcome::Rejected if p.rationale.as_deref().is_some_and(|r| !r.trim().is_empty()) => {
                    let n = refused.entry(p.artifact.clone()).or_default();
                    *n += 1;
                    if *n > REFUSED_SHOWN {
                        continue;
                    }
                    p.rejection.clone()
                }
                _ => continue,
            };
            out.entry(p.artifact.clone()).or_default().push(optimizer::PastProposal {
                epoch_num: l.epoch_num,
                rationale: p.rationale.clone().unwrap_or_default(),
                expected_loss_reduction: p.expected_loss_reduction,
                observed_loss_reduction: row.observed_loss_reduction,
                rolled_back: row.rolled_back,
                rejection,
            });
        }
        for list in out.values_mut() {
            list.reverse();
        }
        out
    }
}

/// Refused proposals per artifact shown to the proposer (the latest).
const REFUSED_SHOWN: usize = 5;

/// What the optimizer made of an epoch.
struct Proposed {
    winner: Option<optimizer::Proposal>,
    /// Everything it considered, for the store.
    rows: Vec<ProposalRecord>,
    /// Why there is no winner, when there is none.
    note: Option<String>,
    model: Option<crate::llm::ModelSpend>,
    evidence: optimizer::Evidence,
}

/// What a decision pairs across two measurements, training tasks only: each
/// scored example (its loss 1 − score) where the harness lists examples,
/// else the task's loss. A dataset of 30 examples in one task is 30 pairs,
/// not one.
fn pairing_losses(results: &[TaskResult]) -> BTreeMap<String, Vec<f64>> {
    let mut by_key: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in results.iter().filter(|r| !r.holdout) {
        add_pairs(&mut by_key, &r.task, r.loss, &r.examples);
    }
    by_key
}

/// One training task's entries of [`pairing_losses`].
fn add_pairs(
    by_key: &mut BTreeMap<String, Vec<f64>>,
    task: &str,
    loss: f64,
    examples: &[crate::task::command::Example],
) {
    if examples.is_empty() {
        by_key.entry(task.to_string()).or_default().push(loss);
    }
    for e in examples {
        // The unit separator cannot occur in a task name.
        by_key.entry(format!("{task}\u{1f}{}", e.id)).or_default().push(1.0 - e.score);
    }
}

/// How many of a task's failing examples an optimizer is shown: the worst
/// first, enough to see a pattern, few enough for a small model's context.
pub(super) const EXAMPLES_SHOWN: usize = 8;

/// What an optimizer may see of an epoch's results: the training tasks only.
pub(super) fn task_evidence(results: &[TaskResult]) -> Vec<optimizer::TaskEvidence> {
    results
        .iter()
        .filter(|r| !r.holdout)
        .map(|r| optimizer::TaskEvidence {
            task: r.task.clone(),
            loss: r.loss,
            status: r.status.clone(),
            breakdown: r.breakdown.clone(),
            error: r.error.clone(),
            failing: {
                let mut wrong: Vec<_> = r.examples.iter().filter(|e| e.score < 1.0).cloned().collect();
                wrong.sort_by(|a, b| a.score.total_cmp(&b.score));
                wrong.truncate(EXAMPLES_SHOWN);
                wrong
            },
            examples: r.examples.len(),
            scored: r.examples.clone(),
        })
        .collect()
}

/// The rows to store for everything an optimizer step considered.
pub(super) fn proposal_rows(step: &optimizer::Step, optimizer: &str, learning_rate: f64) -> Vec<ProposalRecord> {
    step.considered
        .iter()
        .map(|c| {
            let is_winner = step.winner.as_ref().is_some_and(|w| Some(w) == c.proposal.as_ref());
            let outcome = match (&c.rejection, is_winner) {
                (Some(_), _) => ProposalOutcome::Rejected,
                (None, true) => ProposalOutcome::Winner,
                (None, false) => ProposalOutcome::Candidate,
            };
            let p = c.proposal.as_ref();
            ProposalRecord {
                optimizer: optimizer.to_string(),
                artifact: c.artifact.clone(),
                parent_version: c.parent_version,
                content: p.map(|p| p.content.clone()),
                rationale: p.map(|p| p.rationale.clone()),
                expected_loss_reduction: p.and_then(|p| p.expected_loss_reduction),
                confidence: p.and_then(|p| p.confidence),
                outcome,
                rejection: c.rejection.clone(),
                learning_rate,
                decision: c.screening.clone(),
            }
        })
        .collect()
}

/// The state of a noisy suite's verification, read back from the store.
#[derive(Debug, Clone)]
struct Verification {
    /// The epoch that applied the update being verified.
    update: EpochRow,
    /// (epoch id, mean loss) of the evaluations of the versions before the
    /// update: the update epoch and the verification samples just before it.
    parent: Vec<(i64, f64)>,
    /// (epoch id, mean loss) of the verification samples since the update.
    child: Vec<(i64, f64)>,
}

fn is_verify_sample(epoch: &EpochRow) -> bool {
    EpochRecord::parse(epoch.child_artifacts_json.as_deref()).is_verify_sample()
}

/// The evaluations behind a verification's judgement: the samples since the
/// update and the update's own epoch.
fn evaluations(v: &Verification) -> u64 {
    u64::try_from(v.child.len()).unwrap_or(u64::MAX).saturating_add(1)
}

/// An update still being verified, from the completed epochs (oldest
/// first): the samples since the last update-applying epoch, and that
/// epoch's own series. `None` when the last decision applied no update.
fn pending_verification(completed: &[EpochRow]) -> Option<Verification> {
    let mut i = completed.len();
    let mut child = Vec::new();
    while i > 0 && is_verify_sample(&completed[i - 1]) {
        i -= 1;
        child.push((completed[i].id, completed[i].mean_loss?));
    }
    child.reverse();
    let update = completed.get(i.checked_sub(1)?)?.clone();
    if updates_of(&update).is_empty() {
        return None;
    }
    let mut parent = vec![(update.id, update.mean_loss?)];
    let mut j = i - 1;
    while j > 0 && is_verify_sample(&completed[j - 1]) {
        j -= 1;
        if let Some(m) = completed[j].mean_loss {
            parent.push((completed[j].id, m));
        }
    }
    Some(Verification { update, parent, child })
}

/// The updates an epoch applied: (artifact, from_version, to_version).
fn updates_of(epoch: &EpochRow) -> Vec<(String, i64, i64)> {
    EpochRecord::parse(epoch.child_artifacts_json.as_deref()).updates()
}
