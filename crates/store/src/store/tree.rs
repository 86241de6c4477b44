//! Rows of the experiment tree (`--optimizer tree`): its nodes, and the
//! notes that steered each round (the analyst's hints, ideation proposals).

use serde::Serialize;

use super::{Result, Store};
use crate::now_rfc3339;

/// A version a tree node wrote, with the node's verdict and first epoch.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TreeVersionRow {
    pub version: i64,
    pub node_id: i64,
    pub status: String,
    pub epoch_num: Option<i64>,
    pub suite: String,
}

/// A node of the experiment tree as stored: the [`TreeNode`] with its suite.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct TreeNodeRow {
    pub id: i64,
    pub suite_id: i64,
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub node: TreeNode,
    pub created_at: String,
}

/// A node of the experiment tree: what the tree search writes and what
/// [`TreeNodeRow`] reads back inside it.
#[derive(Debug, Clone, Default, Serialize, sqlx::FromRow)]
pub struct TreeNode {
    pub parent_id: Option<i64>,
    pub epoch_id: Option<i64>,
    pub artifacts_json: String,
    pub changed_artifact: Option<String>,
    pub from_version: Option<i64>,
    pub to_version: Option<i64>,
    pub brief: Option<String>,
    pub mean_loss: Option<f64>,
    pub holdout_mean_loss: Option<f64>,
    pub task_losses_json: Option<String>,
    pub evaluations: i64,
    pub status: String,
    pub note: Option<String>,
    /// The round that made it (0: the root; `None` before rounds were kept).
    pub round: Option<i64>,
    pub rationale: Option<String>,
    pub feedback: Option<String>,
    pub guidance: Option<String>,
}

/// An analyst hint or an ideation proposal, as stored: the [`TreeNote`]
/// with the node it led to.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct TreeNoteRow {
    pub id: i64,
    pub suite_id: i64,
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub note: TreeNote,
    pub node_id: Option<i64>,
    pub created_at: String,
}

/// An analyst hint or an ideation proposal, and the round it fed: what the
/// tree search writes and what [`TreeNoteRow`] reads back inside it.
#[derive(Debug, Clone, Default, Serialize, sqlx::FromRow)]
pub struct TreeNote {
    pub round: i64,
    pub source: String,
    pub kind: String,
    pub artifact: Option<String>,
    pub parent_id: Option<i64>,
    pub text: String,
    pub expected_loss_reduction: Option<f64>,
    pub confidence: Option<f64>,
}

impl Store {
    pub async fn insert_tree_node(&self, suite_id: i64, n: &TreeNode) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "INSERT INTO tree_nodes (suite_id, parent_id, epoch_id, artifacts_json, changed_artifact, from_version,
                to_version, brief, mean_loss, holdout_mean_loss, task_losses_json, evaluations, status, note, created_at,
                round, rationale, feedback, guidance)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) RETURNING id",
        )
        .bind(suite_id)
        .bind(n.parent_id)
        .bind(n.epoch_id)
        .bind(&n.artifacts_json)
        .bind(&n.changed_artifact)
        .bind(n.from_version)
        .bind(n.to_version)
        .bind(&n.brief)
        .bind(n.mean_loss)
        .bind(n.holdout_mean_loss)
        .bind(&n.task_losses_json)
        .bind(n.evaluations)
        .bind(&n.status)
        .bind(&n.note)
        .bind(now_rfc3339())
        .bind(n.round)
        .bind(&n.rationale)
        .bind(&n.feedback)
        .bind(&n.guidance)
        .fetch_one(&self.writer)
        .await?)
    }

    /// Marks a node (a committed one that became exhausted: `pruned`).
    pub async fn set_tree_node_status(&self, id: i64, status: &str, note: &str) -> Result<()> {
        sqlx::query("UPDATE tree_nodes SET status = $1, note = $2 WHERE id = $3")
            .bind(status)
            .bind(note)
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Every node of a suite's tree, oldest first.
    pub async fn tree_nodes(&self, suite_id: i64) -> Result<Vec<TreeNodeRow>> {
        Ok(sqlx::query_as("SELECT * FROM tree_nodes WHERE suite_id = $1 ORDER BY id")
            .bind(suite_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// The tree nodes that made versions of `artifact`. A tree writes a
    /// version before the epoch that measures it, so the version row itself
    /// names no epoch.
    pub async fn tree_versions(&self, artifact: &str) -> Result<Vec<TreeVersionRow>> {
        Ok(sqlx::query_as(
            "SELECT n.to_version AS version, n.id AS node_id, n.status, e.epoch_num, s.name AS suite FROM tree_nodes n
             JOIN task_suites s ON s.id = n.suite_id LEFT JOIN epochs e ON e.id = n.epoch_id
             WHERE n.changed_artifact = $1 AND n.to_version IS NOT NULL ORDER BY n.id",
        )
        .bind(artifact)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn insert_tree_note(&self, suite_id: i64, n: &TreeNote) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "INSERT INTO tree_notes (suite_id, round, source, kind, artifact, parent_id, text, expected_loss_reduction,
                confidence, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
        )
        .bind(suite_id)
        .bind(n.round)
        .bind(&n.source)
        .bind(&n.kind)
        .bind(&n.artifact)
        .bind(n.parent_id)
        .bind(&n.text)
        .bind(n.expected_loss_reduction)
        .bind(n.confidence)
        .bind(now_rfc3339())
        .fetch_one(&self.writer)
        .await?)
    }

    /// Links an ideation proposal to the child it led to.
    pub async fn set_tree_note_node(&self, note_id: i64, node_id: i64) -> Result<()> {
        sqlx::query("UPDATE tree_notes SET node_id = $1 WHERE id = $2")
            .bind(node_id)
            .bind(note_id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// Every note of a suite's tree, by round.
    pub async fn tree_notes(&self, suite_id: i64) -> Result<Vec<TreeNoteRow>> {
        Ok(sqlx::query_as("SELECT * FROM tree_notes WHERE suite_id = $1 ORDER BY round, id")
            .bind(suite_id)
            .fetch_all(&self.pool)
            .await?)
    }
}
