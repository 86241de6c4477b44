//! The approval gate for artifact updates: under `approve_updates` (a run's
//! option or the suite file's) an optimizer's winning update does not become
//! active when its epoch closes. It waits in the Inbox — the diff, the
//! rationale, the evidence and the predicted reduction — for a person to
//! approve it, edit it or reject it.
//!
//! Meanwhile the run either waits (`wait`: the epoch stays open until the
//! decision, then closes with the approved update, so the next epoch verifies
//! it like any other), or goes on with the versions it has (`continue`: no
//! new proposal while one waits; an update approved meanwhile is applied at
//! the next epoch's close). An update approved when no run works the suite
//! becomes active at once (the service does that); one approved while the
//! run was finishing is applied when the run ends.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

pub use crate::domain::ApprovalMode;

use super::tree::Node;
use super::{RunnerError, SuiteRunner, optimizer};
use crate::bus::Event;
use crate::store::{
    ApprovalStatus, EpochRow, Intervention, ProposalRecord, StoreError, UpdateApproval, UpdateApprovalRow,
    UpdateVerdict,
};

/// How often a waiting run looks at the decision (a decision may come from
/// another process, whose events this one does not see).
const DECISION_POLL: Duration = Duration::from_millis(250);

/// What an epoch's close does about the next update, once the gate had its say.
#[derive(Debug, Default)]
pub(super) struct GatedStep {
    /// The update to apply at this close.
    pub update: Option<optimizer::Proposal>,
    /// The gated update `update` is, when it is one.
    pub approval: Option<i64>,
    /// Why the close changes nothing, when it does not.
    pub note: Option<String>,
}

/// What an epoch's close does about the gate before the optimizer is asked.
#[derive(Debug)]
pub(super) enum Settled {
    /// An update a person approved meanwhile, or one still waiting that
    /// holds the optimizer back: this close's step.
    Step(GatedStep),
    /// The run was cancelled while it waited for a person: the epoch stays open.
    Cancelled,
    /// Nothing waits: the optimizer may propose.
    Open,
}

impl SuiteRunner {
    /// The gate's setting for this run: the run's option, else the suite's.
    pub(super) fn approval_mode(&self) -> ApprovalMode {
        self.config.approve_updates.unwrap_or(self.suite.approve_updates)
    }

    /// Before the optimizer is asked: an update a person approved meanwhile
    /// is this close's update; one still waiting holds the optimizer of a
    /// gated run back (and, under `wait`, the run).
    pub(super) async fn settled_update(&self, suite_id: i64) -> Result<Settled, RunnerError> {
        if let Some(a) = self.store.update_approvals_in(suite_id, ApprovalStatus::Approved).await?.into_iter().next() {
            return Ok(Settled::Step(approved_step(a)));
        }
        let Some(waiting) = self.store.update_approvals_in(suite_id, ApprovalStatus::Pending).await?.into_iter().next()
        else {
            return Ok(Settled::Open);
        };
        // A run with the gate off is not held back by a question an earlier
        // gated run left (approved later, it is still applied then).
        if self.approval_mode() == ApprovalMode::Off {
            return Ok(Settled::Open);
        }
        if self.approval_mode() == ApprovalMode::Wait {
            return Ok(self.wait_for_decision(&waiting).await?.map_or(Settled::Cancelled, Settled::Step));
        }
        let epoch = self.store.epoch_by_id(waiting.update.epoch_id).await?.map_or(0, |e| e.epoch_num);
        Ok(Settled::Step(GatedStep {
            note: Some(format!(
                "the update to `{}` proposed in epoch {epoch} waits for approval in the Inbox (question {})",
                waiting.update.artifact,
                waiting.intervention_id.unwrap_or_default()
            )),
            ..GatedStep::default()
        }))
    }

    /// Puts the optimizer's winner before a person, with the rows of
    /// everything the epoch's optimizer step considered (`proposals`: written
    /// now, so a run cancelled while it waits keeps them, and a decision
    /// marks the winner's). Under `wait` the run waits for the decision
    /// (`None`: cancelled meanwhile); under `continue` the epoch closes
    /// without it.
    pub(super) async fn gate(
        &self,
        suite_id: i64,
        epoch: &EpochRow,
        winner: optimizer::Proposal,
        proposed_version: Option<i64>,
        evidence_json: String,
        proposals: &[ProposalRecord],
    ) -> Result<Option<GatedStep>, RunnerError> {
        let mode = self.approval_mode();
        let row = UpdateApproval {
            suite_id,
            epoch_id: epoch.id,
            artifact: winner.artifact.clone(),
            parent_version: winner.parent_version,
            proposed_content: winner.content.clone(),
            proposed_version,
            rationale: winner.rationale.clone(),
            expected_loss_reduction: winner.expected_loss_reduction,
            confidence: winner.confidence,
            optimizer: self.config.optimizer.name().to_string(),
            evidence_json,
            mode: mode.as_str().to_string(),
        };
        let question = question(suite_id, epoch, &winner, mode)?;
        let (id, intervention_id) = self.store.insert_update_approval(&row, &question, proposals).await?;
        tracing::info!(suite = %self.suite.name, epoch = epoch.epoch_num, artifact = %winner.artifact, approval = id, "update waits for approval");
        self.bus.publish(Event::InterventionRaised {
            intervention_id,
            kind: crate::domain::InterventionKind::ArtifactUpdate,
            suite_id: Some(suite_id),
            run_id: None,
            subject: question.subject.clone(),
            waits: mode == ApprovalMode::Wait,
        });
        if mode == ApprovalMode::Wait {
            let row = self.store.update_approval(id).await?.ok_or_else(|| gone(id))?;
            return self.wait_for_decision(&row).await;
        }
        Ok(Some(GatedStep {
            note: Some(format!(
                "the update to `{}` waits for approval in the Inbox (question {intervention_id}); the run goes on with v{}",
                winner.artifact, winner.parent_version
            )),
            ..GatedStep::default()
        }))
    }

    /// Waits until a person decides; `None` when the run is cancelled first
    /// (the update keeps waiting, and the resumed run waits on it again).
    async fn wait_for_decision(&self, waiting: &UpdateApprovalRow) -> Result<Option<GatedStep>, RunnerError> {
        let mut cancel = self.cancel.clone();
        loop {
            let now = self.store.update_approval(waiting.id).await?.ok_or_else(|| gone(waiting.id))?;
            match now.status {
                ApprovalStatus::Pending => {}
                ApprovalStatus::Approved => return Ok(Some(approved_step(now))),
                ApprovalStatus::Rejected => {
                    let why = now.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
                    return Ok(Some(GatedStep {
                        note: Some(format!("a person rejected the update to `{}`{why}", now.update.artifact)),
                        ..GatedStep::default()
                    }));
                }
                // Applied by someone else (the app, after this run had let
                // go of the suite): nothing left to apply here.
                ApprovalStatus::Applied => return Ok(Some(GatedStep::default())),
            }
            if self.cancelled() {
                return Ok(None);
            }
            tokio::select! {
                _ = cancel.changed() => {}
                _ = tokio::time::sleep(DECISION_POLL) => {}
            }
        }
    }

    /// The tree search's best node, put before a person instead of being
    /// made active: one gated update per artifact it changed. `false` when
    /// the run was cancelled while it waited.
    pub(super) async fn gate_tree_best(
        &self,
        suite_id: i64,
        best: &Node,
        root_mean: Option<f64>,
    ) -> Result<bool, RunnerError> {
        let Some(epoch) = self.store.last_epoch(suite_id).await? else { return Ok(true) };
        for (name, version) in &best.artifacts {
            let active = self.registry.get_active(name).await?.version;
            if active == *version {
                continue;
            }
            let content = self.registry.get(name, *version).await?.content;
            let mut details = BTreeMap::new();
            details.insert("node".to_string(), json!(best.id));
            let proposal = optimizer::Proposal {
                artifact: name.clone(),
                parent_version: active,
                content,
                rationale: format!(
                    "the tree search's best node (#{}, v{version} of `{name}`) has mean loss {:.4}{}",
                    best.id,
                    best.mean,
                    root_mean.map(|r| format!(" against {r:.4} for the versions it started from")).unwrap_or_default()
                ),
                expected_loss_reduction: root_mean.map(|r| r - best.mean),
                confidence: None,
                details,
            };
            let tasks: Vec<_> = best.task_losses.iter().map(|(t, l)| json!({"task": t, "loss": l})).collect();
            let evidence = serde_json::to_string(&json!({
                "epoch_num": epoch.epoch_num, "mean_loss": best.mean, "tasks": tasks, "details": {"node": best.id},
            }))
            .map_err(StoreError::from)?;
            match self.gate(suite_id, &epoch, proposal, Some(*version), evidence, &[]).await? {
                None => return Ok(false),
                Some(GatedStep { approval: Some(id), .. }) => {
                    if let Some(to) = self.store.apply_update_approval_now(id).await? {
                        self.bus.publish(Event::ArtifactActivated {
                            artifact: name.clone(),
                            from_version: active,
                            to_version: to,
                        });
                    }
                }
                Some(step) => {
                    if let Some(note) = step.note {
                        tracing::info!(suite = %self.suite.name, "{note}");
                    }
                }
            }
        }
        Ok(true)
    }

    /// Applies what a person approved while the run was ending (no epoch
    /// closes after it to carry the update).
    pub(super) async fn apply_approved_at_end(&self, suite_id: i64) -> Result<(), RunnerError> {
        for a in self.store.update_approvals_in(suite_id, ApprovalStatus::Approved).await? {
            let from = self.registry.get_active(&a.update.artifact).await?.version;
            if let Some(version) = self.store.apply_update_approval_now(a.id).await? {
                self.bus.publish(Event::ArtifactActivated {
                    artifact: a.update.artifact.clone(),
                    from_version: from,
                    to_version: version,
                });
            }
        }
        Ok(())
    }
}

/// An approved update as this close's update: the proposal, or a person's
/// edit of it, with the decision in the update event.
fn approved_step(a: UpdateApprovalRow) -> GatedStep {
    let mut details = BTreeMap::new();
    details.insert("approval".to_string(), json!(a.id));
    details.insert("approved_at".to_string(), json!(a.decided_at));
    details.insert("edited".to_string(), json!(a.edited));
    GatedStep {
        update: Some(optimizer::Proposal {
            artifact: a.update.artifact.clone(),
            parent_version: a.update.parent_version,
            content: a.content().to_string(),
            rationale: a.update.rationale.clone(),
            expected_loss_reduction: a.update.expected_loss_reduction,
            confidence: a.update.confidence,
            details,
        }),
        approval: Some(a.id),
        note: None,
    }
}

/// What a person judges the update on, kept with it: the epoch's losses,
/// η, and the optimizer's own facts.
pub(super) fn evidence_json(
    e: &optimizer::Evidence,
    details: &BTreeMap<String, serde_json::Value>,
) -> Result<String, RunnerError> {
    let tasks: Vec<_> = e.tasks.iter().map(|t| json!({"task": t.task, "loss": t.loss, "status": t.status})).collect();
    Ok(serde_json::to_string(&json!({
        "epoch_num": e.epoch_num,
        "mean_loss": e.mean_loss,
        "learning_rate": e.learning_rate,
        "tasks": tasks,
        "details": details,
    }))
    .map_err(StoreError::from)?)
}

/// The Inbox question beside a gated update.
fn question(
    suite_id: i64,
    epoch: &EpochRow,
    winner: &optimizer::Proposal,
    mode: ApprovalMode,
) -> Result<Intervention, RunnerError> {
    let predicted =
        winner.expected_loss_reduction.map(|r| format!(", predicted loss reduction {r:.4}")).unwrap_or_default();
    let meanwhile = match mode {
        ApprovalMode::Wait => "the run waits for the decision",
        _ => "the run goes on with the current version meanwhile",
    };
    let context = json!({
        "what": format!("The optimizer proposes a new version of `{}` (from v{}) after epoch {}", winner.artifact, winner.parent_version, epoch.epoch_num),
        "why": winner.rationale,
        "evidence": {"artifact": winner.artifact, "parent_version": winner.parent_version, "epoch_num": epoch.epoch_num,
                     "expected_loss_reduction": winner.expected_loss_reduction, "confidence": winner.confidence},
        "proposed_action": "update_artifact",
        "proposal": format!("Approve (as proposed or edited) or reject the update{predicted}; {meanwhile}."),
    });
    Ok(Intervention {
        kind: crate::domain::InterventionKind::ArtifactUpdate.as_str().to_string(),
        suite_id: Some(suite_id),
        run_id: None,
        task_name: None,
        subject: format!("update `{}` from v{}{predicted}", winner.artifact, winner.parent_version),
        context_json: serde_json::to_string(&context).map_err(StoreError::from)?,
    })
}

fn gone(id: i64) -> RunnerError {
    RunnerError::Store(StoreError::Conflict(format!("the gated update {id} is no longer in the database")))
}

/// A person's decision on a gated update, as the app and `attractor answer` take it.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Approve it; with content, that content (a person's edit) instead of the proposal.
    Approve {
        content: Option<String>,
    },
    Reject {
        reason: Option<String>,
    },
}

/// Why a decision was refused.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("question {0} is not about an artifact update")]
    NotAnUpdate(i64),
    #[error("the update to `{artifact}` (question {question}) was already decided: it is {status}")]
    AlreadyDecided { artifact: String, question: i64, status: &'static str },
    #[error("{0}")]
    BadEdit(String),
    #[error(transparent)]
    Runner(#[from] RunnerError),
}

impl From<StoreError> for DecideError {
    fn from(e: StoreError) -> Self {
        DecideError::Runner(e.into())
    }
}

impl From<crate::artifact::RegistryError> for DecideError {
    fn from(e: crate::artifact::RegistryError) -> Self {
        DecideError::Runner(e.into())
    }
}

/// What a decision did: the update as it stands now, and the version it
/// became with the one it replaced, when it was applied at once.
#[derive(Debug)]
pub struct Decided {
    pub approval: UpdateApprovalRow,
    pub applied: Option<(i64, i64)>,
}

/// The longest answer a person may give (a hint, a rejection's reason):
/// pages of text, far past any answer, short of filling the database or
/// every prompt a hint is given to.
pub const MAX_ANSWER_CHARS: usize = 20_000;

/// A person's answer text, checked: refused past [`MAX_ANSWER_CHARS`].
pub fn check_answer_text(text: &str) -> Result<(), String> {
    let n = text.chars().count();
    if n > MAX_ANSWER_CHARS {
        return Err(format!(
            "the answer is {n} characters long, more than the {MAX_ANSWER_CHARS} an answer may have\n  hint: \
             shorten it to what the run needs to know"
        ));
    }
    Ok(())
}

/// Records a person's decision on the gated update question `question`
/// asks about, and applies an approval at once when no run works the suite
/// (else the run applies it). An edit is checked before anything is written.
pub async fn decide(store: &crate::store::Store, question: i64, decision: Decision) -> Result<Decided, DecideError> {
    let a = store.update_approval_of_question(question).await?.ok_or(DecideError::NotAnUpdate(question))?;
    let decided = |a: &UpdateApprovalRow| DecideError::AlreadyDecided {
        artifact: a.update.artifact.clone(),
        question,
        status: a.status.as_str(),
    };
    if a.status != ApprovalStatus::Pending {
        return Err(decided(&a));
    }
    let verdict = match decision {
        Decision::Approve { content } => {
            let edited = content.filter(|c| *c != a.update.proposed_content);
            if let Some(c) = &edited {
                check_edit(store, &a.update.artifact, c).await?;
            }
            UpdateVerdict::Approve { edited }
        }
        Decision::Reject { reason } => {
            let reason = reason.map(|r| r.trim().to_string()).filter(|r| !r.is_empty());
            if let Some(r) = &reason {
                check_answer_text(r).map_err(DecideError::BadEdit)?;
            }
            UpdateVerdict::Reject { reason }
        }
    };
    let approve = matches!(verdict, UpdateVerdict::Approve { .. });
    if !store.decide_update_approval(a.id, &verdict).await? {
        return Err(decided(&a));
    }
    let applied = if approve {
        let from = crate::artifact::Registry::load(store.clone()).await?.get_active(&a.update.artifact).await?.version;
        store.apply_update_approval_unless_held(a.id, super::lease::is_stale).await?.map(|v| (v, from))
    } else {
        None
    };
    let approval = store.update_approval(a.id).await?.ok_or_else(|| gone(a.id))?;
    Ok(Decided { approval, applied })
}

/// A person's edit of a proposal must be usable as the artifact's content.
async fn check_edit(store: &crate::store::Store, artifact: &str, content: &str) -> Result<(), DecideError> {
    if content.trim().is_empty() {
        return Err(DecideError::BadEdit(format!(
            "the edited `{artifact}` is empty: write the content to approve, or reject the update"
        )));
    }
    let registry = crate::artifact::Registry::load(store.clone()).await?;
    let def = registry.def(artifact).map_err(RunnerError::from)?;
    if def.kind == crate::artifact::ArtifactKind::Json
        && let Err(e) = def.validate_json(content)
    {
        return Err(DecideError::BadEdit(format!(
            "the edited `{artifact}` cannot be used: {e}; correct it and approve again, or approve the proposal as it is"
        )));
    }
    Ok(())
}
