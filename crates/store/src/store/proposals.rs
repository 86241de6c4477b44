//! Rows of the optimizers' proposals: every candidate update considered at
//! the end of an epoch, what it predicted, and what the next epoch observed.

use serde::Serialize;
use sqlx::Row;
use sqlx::any::AnyRow;

use super::{Result, Store};

/// How a considered proposal ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum ProposalOutcome {
    /// Applied: it became the artifact's next version.
    Winner,
    /// Valid, but another proposal scored higher.
    Candidate,
    /// Dropped by a rejection rule (the reason is kept).
    Rejected,
}

impl ProposalOutcome {
    /// The outcome as stored (the column's CHECK allows only the three).
    pub fn parse(s: &str) -> ProposalOutcome {
        match s {
            "winner" => ProposalOutcome::Winner,
            "candidate" => ProposalOutcome::Candidate,
            _ => ProposalOutcome::Rejected,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProposalOutcome::Winner => "winner",
            ProposalOutcome::Candidate => "candidate",
            ProposalOutcome::Rejected => "rejected",
        }
    }
}

/// A proposal as an optimizer made it: what an epoch's close (or the tree
/// search) writes, and what a [`ProposalRow`] reads back inside it — one
/// struct for the fact, so the two sides cannot drift apart.
#[derive(Debug, Clone, Serialize)]
pub struct ProposalRecord {
    pub optimizer: String,
    pub artifact: String,
    pub parent_version: i64,
    pub content: Option<String>,
    pub rationale: Option<String>,
    pub expected_loss_reduction: Option<f64>,
    pub confidence: Option<f64>,
    pub outcome: ProposalOutcome,
    pub rejection: Option<String>,
    pub learning_rate: f64,
    /// What the decision about it saw: a screening's minibatch when it was
    /// judged as it was stored (a tree search's child, a screened
    /// candidate), else the paired evidence of the epoch that judged it
    /// (a linear loop's winner is judged an epoch later).
    pub decision: Option<crate::loss::paired::PairedEvidence>,
}

/// Read from a `proposals` row: the outcome from its text, the decision
/// from its JSON column (`decision_json`; unreadable JSON reads as none).
impl<'r> sqlx::FromRow<'r, AnyRow> for ProposalRecord {
    fn from_row(row: &'r AnyRow) -> std::result::Result<Self, sqlx::Error> {
        let outcome: String = row.try_get("outcome")?;
        let decision: Option<String> = row.try_get("decision_json")?;
        Ok(ProposalRecord {
            optimizer: row.try_get("optimizer")?,
            artifact: row.try_get("artifact")?,
            parent_version: row.try_get("parent_version")?,
            content: row.try_get("content")?,
            rationale: row.try_get("rationale")?,
            expected_loss_reduction: row.try_get("expected_loss_reduction")?,
            confidence: row.try_get("confidence")?,
            outcome: ProposalOutcome::parse(&outcome),
            rejection: row.try_get("rejection")?,
            learning_rate: row.try_get("learning_rate")?,
            decision: decision.as_deref().and_then(|j| serde_json::from_str(j).ok()),
        })
    }
}

/// A stored proposal: the [`ProposalRecord`] with where it belongs and what
/// became of it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ProposalRow {
    pub id: i64,
    pub suite_id: i64,
    pub epoch_id: i64,
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub proposal: ProposalRecord,
    pub applied_version: Option<i64>,
    pub observed_loss_reduction: Option<f64>,
    #[sqlx(try_from = "super::Flag")]
    pub rolled_back: bool,
    pub created_at: String,
}

/// A proposal with its epoch number, for listings.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ProposalListing {
    pub epoch_num: i64,
    /// A winner a person edited in the Inbox before it was applied: the
    /// version it became is the person's content, not this row's.
    #[sqlx(try_from = "super::Flag")]
    pub edited_by_person: bool,
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub row: ProposalRow,
}

impl Store {
    /// Stores proposals made outside an epoch's close (the tree search's
    /// children), against the epoch that evaluated them.
    pub async fn insert_proposals(&self, epoch_id: i64, proposals: &[ProposalRecord]) -> Result<()> {
        // IMMEDIATE: a read-then-write transaction must hold the write lock
        // from the start, or a concurrent writer makes the upgrade fail.
        let mut tx = self.begin_write().await?;
        let suite_id: i64 =
            sqlx::query_scalar("SELECT suite_id FROM epochs WHERE id = $1").bind(epoch_id).fetch_one(&mut *tx).await?;
        for p in proposals {
            insert_proposal(&mut tx, suite_id, epoch_id, p, None).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Every proposal of a suite, oldest epoch first, the winner first within an epoch.
    pub async fn proposals(&self, suite_id: i64) -> Result<Vec<ProposalListing>> {
        Ok(sqlx::query_as(
            "SELECT e.epoch_num,
                 CAST(CASE WHEN p.outcome = 'winner' AND EXISTS (
                     SELECT 1 FROM update_approvals a
                     WHERE a.epoch_id = p.epoch_id AND a.artifact = p.artifact AND a.edited = 1
                 ) THEN 1 ELSE 0 END AS BIGINT) AS edited_by_person,
                 p.*
             FROM proposals p JOIN epochs e ON e.id = p.epoch_id
             WHERE p.suite_id = $1 ORDER BY e.epoch_num, p.outcome != 'winner', p.id",
        )
        .bind(suite_id)
        .fetch_all(&self.pool)
        .await?)
    }
}

/// One proposal row, inside the caller's transaction.
pub(super) async fn insert_proposal(
    tx: &mut sqlx::AnyConnection,
    suite_id: i64,
    epoch_id: i64,
    p: &ProposalRecord,
    applied_version: Option<i64>,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO proposals (suite_id, epoch_id, optimizer, artifact, parent_version, content, rationale,
            expected_loss_reduction, confidence, outcome, rejection, learning_rate, applied_version, created_at,
            decision_json)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(suite_id)
    .bind(epoch_id)
    .bind(&p.optimizer)
    .bind(&p.artifact)
    .bind(p.parent_version)
    .bind(&p.content)
    .bind(&p.rationale)
    .bind(p.expected_loss_reduction)
    .bind(p.confidence)
    .bind(p.outcome.as_str())
    .bind(&p.rejection)
    .bind(p.learning_rate)
    .bind(applied_version)
    .bind(crate::now_rfc3339())
    .bind(p.decision.as_ref().map(serde_json::to_string).transpose()?)
    .execute(&mut *tx)
    .await?;
    Ok(())
}
