//! The approval gate's ledger. Under a run's or a suite's `approve_updates`
//! setting an optimizer's winning update is not applied when its epoch
//! closes: it is written here, with an Inbox question beside it, and waits
//! for a person. A decision is recorded here and on the question in one
//! transaction; the run applies an approved update at an epoch's close (so
//! the next epoch verifies it like any other update), or the app applies it
//! at once when no run works the suite.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::artifacts::{NEXT_VERSION, activate, insert_version};
use super::{Intervention, ProposalRecord, Result, Store, StoreError, now_rfc3339};

/// Where a gated update stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waits for a person.
    Pending,
    /// A person approved it; the run applies it at its next epoch's close.
    Approved,
    /// A person rejected it; it is never applied.
    Rejected,
    /// It is a version of its artifact and was made active.
    Applied,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Rejected => "rejected",
            ApprovalStatus::Applied => "applied",
        }
    }
}

impl From<String> for ApprovalStatus {
    fn from(s: String) -> Self {
        match s.as_str() {
            "approved" => ApprovalStatus::Approved,
            "rejected" => ApprovalStatus::Rejected,
            "applied" => ApprovalStatus::Applied,
            _ => ApprovalStatus::Pending,
        }
    }
}

/// A gated update as stored.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct UpdateApprovalRow {
    pub id: i64,
    #[sqlx(flatten)]
    pub update: UpdateApproval,
    #[sqlx(try_from = "String")]
    pub status: ApprovalStatus,
    pub created_at: String,
    pub decided_at: Option<String>,
    pub decided_content: Option<String>,
    #[sqlx(try_from = "super::Flag")]
    pub edited: bool,
    pub reason: Option<String>,
    pub applied_version: Option<i64>,
    pub applied_epoch_id: Option<i64>,
    pub intervention_id: Option<i64>,
}

impl UpdateApprovalRow {
    /// The content a decision made the update: a person's edit or the proposal.
    pub fn content(&self) -> &str {
        self.decided_content.as_deref().unwrap_or(&self.update.proposed_content)
    }
}

/// An update put before a person (the approval gate): what the gate writes
/// and what [`UpdateApprovalRow`] reads back inside it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct UpdateApproval {
    pub suite_id: i64,
    pub epoch_id: i64,
    pub artifact: String,
    pub parent_version: i64,
    pub proposed_content: String,
    /// A version that exists already (the tree search's best): approving it
    /// unedited activates it instead of writing a copy.
    pub proposed_version: Option<i64>,
    pub rationale: String,
    pub expected_loss_reduction: Option<f64>,
    pub confidence: Option<f64>,
    pub optimizer: String,
    pub evidence_json: String,
    /// `wait` or `continue`: what the run did meanwhile.
    pub mode: String,
}

/// A person's decision on a gated update.
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateVerdict {
    /// Approve it; `edited` replaces the proposed content.
    Approve {
        edited: Option<String>,
    },
    Reject {
        reason: Option<String>,
    },
}

impl Store {
    /// Writes a gated update, the Inbox question that asks for it and the
    /// proposal rows of the optimizer step that made it, in one transaction;
    /// returns the approval's id and the question's.
    pub async fn insert_update_approval(
        &self,
        a: &UpdateApproval,
        question: &Intervention,
        proposals: &[ProposalRecord],
    ) -> Result<(i64, i64)> {
        let mut tx = self.begin_write().await?;
        let now = now_rfc3339();
        for p in proposals {
            super::proposals::insert_proposal(&mut tx, a.suite_id, a.epoch_id, p, None).await?;
        }
        let intervention_id = super::aso::insert_question(&mut tx, question).await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO update_approvals (suite_id, epoch_id, artifact, parent_version, proposed_content, rationale,
                 expected_loss_reduction, confidence, optimizer, evidence_json, mode, status, created_at, intervention_id,
                 proposed_version)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13, $14) RETURNING id",
        )
        .bind(a.suite_id)
        .bind(a.epoch_id)
        .bind(&a.artifact)
        .bind(a.parent_version)
        .bind(&a.proposed_content)
        .bind(&a.rationale)
        .bind(a.expected_loss_reduction)
        .bind(a.confidence)
        .bind(&a.optimizer)
        .bind(&a.evidence_json)
        .bind(&a.mode)
        .bind(&now)
        .bind(intervention_id)
        .bind(a.proposed_version)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok((id, intervention_id))
    }

    pub async fn update_approval(&self, id: i64) -> Result<Option<UpdateApprovalRow>> {
        Ok(sqlx::query_as("SELECT * FROM update_approvals WHERE id = $1").bind(id).fetch_optional(&self.pool).await?)
    }

    /// The version an artifact's next update would get (what a pending
    /// update will most likely become, unless another lands first).
    pub async fn next_version(&self, artifact: &str) -> Result<i64> {
        Ok(sqlx::query_scalar(NEXT_VERSION).bind(artifact).fetch_one(&self.pool).await?)
    }

    /// The gated update an Inbox question asks about, if it asks about one.
    pub async fn update_approval_of_question(&self, intervention_id: i64) -> Result<Option<UpdateApprovalRow>> {
        Ok(sqlx::query_as("SELECT * FROM update_approvals WHERE intervention_id = $1")
            .bind(intervention_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// A suite's gated updates in one state, oldest first.
    pub async fn update_approvals_in(&self, suite_id: i64, status: ApprovalStatus) -> Result<Vec<UpdateApprovalRow>> {
        Ok(sqlx::query_as("SELECT * FROM update_approvals WHERE suite_id = $1 AND status = $2 ORDER BY id")
            .bind(suite_id)
            .bind(status.as_str())
            .fetch_all(&self.pool)
            .await?)
    }

    /// Every gated update of a suite, oldest first.
    pub async fn update_approvals_of_suite(&self, suite_id: i64) -> Result<Vec<UpdateApprovalRow>> {
        Ok(sqlx::query_as("SELECT * FROM update_approvals WHERE suite_id = $1 ORDER BY id")
            .bind(suite_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Records a person's decision on a pending update and answers its
    /// question, in one transaction. `false` when it was decided already.
    pub async fn decide_update_approval(&self, id: i64, verdict: &UpdateVerdict) -> Result<bool> {
        let (status, content, edited, reason, answer) = match verdict {
            UpdateVerdict::Approve { edited } => {
                (ApprovalStatus::Approved, edited.as_deref(), edited.is_some(), None, "approve")
            }
            UpdateVerdict::Reject { reason } => (ApprovalStatus::Rejected, None, false, reason.as_deref(), "reject"),
        };
        let now = now_rfc3339();
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(
            "UPDATE update_approvals SET status = $1, decided_at = $2, decided_content = $3, edited = $4, reason = $5
             WHERE id = $6 AND status = 'pending'",
        )
        .bind(status.as_str())
        .bind(&now)
        .bind(content)
        .bind(i64::from(edited))
        .bind(reason)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            return Ok(false);
        }
        // The question's answer text: what a person wrote (the edit is in
        // the ledger; the Inbox's history shows the reason).
        let text = match verdict {
            UpdateVerdict::Approve { edited: Some(_) } => Some("approved with edits"),
            UpdateVerdict::Approve { edited: None } => None,
            UpdateVerdict::Reject { reason } => reason.as_deref(),
        };
        sqlx::query(
            "UPDATE interventions SET status = 'answered', answer = $1, answer_text = $2, answered_at = $3
             WHERE id = (SELECT intervention_id FROM update_approvals WHERE id = $4) AND status = 'pending'",
        )
        .bind(answer)
        .bind(text)
        .bind(&now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        // The optimizer's winner, told as what became of it.
        if let UpdateVerdict::Reject { reason } = verdict {
            sqlx::query(&format!(
                "UPDATE proposals SET outcome = 'rejected', rejection = $1 WHERE outcome = 'winner' AND {GATED_WINNER}"
            ))
            .bind(person_rejection(reason.as_deref()))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Applies an approved update outside an epoch's close (no run works its
    /// suite, or the run that would have applied it ended): a new version
    /// of the artifact, made active. `None` when it is not approved (any
    /// more).
    pub async fn apply_update_approval_now(&self, id: i64) -> Result<Option<i64>> {
        self.apply_update_approval_unless_held(id, |_| true).await
    }

    /// Applies an approved update at once unless a run holds its suite (a
    /// lease `stale` does not call abandoned) — checked in the transaction
    /// that applies it, so a run starting meanwhile either comes first (and
    /// applies it itself) or starts on the new version. `None` when held or
    /// not approved (any more).
    pub async fn apply_update_approval_unless_held(
        &self,
        id: i64,
        stale: impl Fn(&super::LeaseRow) -> bool,
    ) -> Result<Option<i64>> {
        let mut tx = self.begin_write().await?;
        let lease: Option<super::LeaseRow> = sqlx::query_as(
            "SELECT l.* FROM suite_leases l JOIN update_approvals a ON a.suite_id = l.suite_id WHERE a.id = $1",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        if lease.is_some_and(|l| !stale(&l)) {
            return Ok(None);
        }
        let row: Option<UpdateApprovalRow> =
            sqlx::query_as("SELECT * FROM update_approvals WHERE id = $1 AND status = 'approved'")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(row) = row else { return Ok(None) };
        let version = match (row.update.proposed_version, row.edited) {
            (Some(v), false) => v,
            _ => insert_version(&mut tx, &row.update.artifact, row.content(), row.update.parent_version, None).await?,
        };
        if !activate(&mut tx, &row.update.artifact, version).await? {
            return Err(StoreError::Conflict(format!("artifact `{}` has no version {version}", row.update.artifact)));
        }
        mark_applied(&mut tx, id, version, None).await?;
        tx.commit().await?;
        Ok(Some(version))
    }
}

/// Marks an approved update applied as `version` (inside the transaction
/// that made the version); an update that is no longer approved is a
/// conflict, so it is never applied twice.
pub(super) async fn mark_applied(
    tx: &mut sqlx::AnyConnection,
    id: i64,
    version: i64,
    epoch_id: Option<i64>,
) -> Result<()> {
    let done = sqlx::query(
        "UPDATE update_approvals SET status = 'applied', applied_version = $1, applied_epoch_id = $2
         WHERE id = $3 AND status = 'approved'",
    )
    .bind(version)
    .bind(epoch_id)
    .bind(id)
    .execute(&mut *tx)
    .await?;
    if done.rows_affected() == 1 {
        // The winner's row says which version it became (an update applied
        // after its epoch closed: at a later close, or at once by the app).
        sqlx::query(&format!(
            "UPDATE proposals SET applied_version = $1 WHERE outcome = 'winner' AND applied_version IS NULL AND {GATED_WINNER}"
        ))
        .bind(version)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        Ok(())
    } else {
        Err(StoreError::Conflict(format!("the approved update {id} was applied or withdrawn meanwhile")))
    }
}

/// The proposal row of a gated update (`$2`: the update's id): the
/// optimizer's winner for its artifact in the epoch that proposed it.
const GATED_WINNER: &str = "epoch_id = (SELECT epoch_id FROM update_approvals WHERE id = $2)
     AND artifact = (SELECT artifact FROM update_approvals WHERE id = $2)";

/// How a proposal a person rejected in the Inbox reads in the proposals list.
pub fn person_rejection(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => format!("rejected by a person in the Inbox: {r}"),
        None => "rejected by a person in the Inbox".to_string(),
    }
}
