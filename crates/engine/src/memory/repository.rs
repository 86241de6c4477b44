//! The trajectory repository's questions (seed 002 §10.2), answered from the
//! store for every front end (CLI, HTTP, desktop):
//!
//! - average iterations (and tokens) by complexity;
//! - strategy effectiveness: per strategy, and per strategy and the
//!   attractor it was chosen under — uses, success rate (a delta above the
//!   bandit's success threshold), mean delta, tokens;
//! - the attractor distribution: where finished trajectories ended, and how
//!   often each attractor was met on the way;
//! - the convergence rate by category;
//! - similar trajectories: finished trajectories ranked by how alike their
//!   task is to a given one ([`super::signature::similarity`]).
//!
//! Every number comes from the stored trajectories and observations; nothing
//! is cached, so they are current whenever asked.

use serde::Serialize;
use ts_rs::TS;

use super::signature;
use crate::store::{
    AttractorCount, CategoryStats, ComplexityStats, MemoryRow, Store, StoreError, StrategyStats, TrajectoryBrief,
    TrajectoryRow,
};

/// Finished trajectories compared at most by a similarity search (the newest).
pub const SIMILARITY_SCAN: i64 = 2000;

/// Every aggregate of the repository at once (the stats screen's data).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct TrajectoryStats {
    /// The category the numbers are limited to; `None`: every category.
    pub category: Option<String>,
    /// A convergence delta above this counts as a strategy's success.
    pub success_threshold: f64,
    pub by_complexity: Vec<ComplexityStats>,
    pub strategies: Vec<StrategyStats>,
    pub strategies_by_attractor: Vec<StrategyStats>,
    pub attractors: Vec<AttractorCount>,
    pub categories: Vec<CategoryStats>,
}

/// Reads every aggregate, for one category or for all.
pub async fn stats(
    store: &Store,
    category: Option<&str>,
    success_threshold: f64,
) -> Result<TrajectoryStats, StoreError> {
    let (strategies, strategies_by_attractor) = store.strategy_effectiveness(category, success_threshold).await?;
    Ok(TrajectoryStats {
        category: category.map(str::to_string),
        success_threshold,
        by_complexity: store.iterations_by_complexity(category).await?,
        strategies,
        strategies_by_attractor,
        attractors: store.attractor_distribution(category).await?,
        categories: store.convergence_by_category(category).await?,
    })
}

/// What to find similar trajectories to.
#[derive(Debug, Clone, PartialEq)]
pub enum SimilarTo {
    /// The task of this run's trajectory (the trajectory itself is left out).
    Run(i64),
    /// The task of this trajectory (left out itself): a sample's, a
    /// subtask's, or any trajectory of a run that drove several.
    Trajectory(String),
    /// A task described in words.
    Task(String),
}

/// One similar trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SimilarTrajectory {
    pub trajectory: TrajectoryBrief,
    /// In [0, 1] (see `SimilarTrajectories::measure`).
    pub similarity: f64,
    /// The signature words the two tasks share.
    pub shared_words: Vec<String>,
}

/// The answer to a similarity search.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SimilarTrajectories {
    /// The task text compared against.
    pub description: String,
    /// The category that adds to the similarity, when there is one.
    pub category: Option<String>,
    /// The trajectory asked about (left out of the list).
    pub excluded: Option<String>,
    /// How the similarity is computed, for people.
    pub measure: String,
    pub items: Vec<SimilarTrajectory>,
}

#[derive(Debug, thiserror::Error)]
pub enum SimilarError {
    #[error(
        "run {0} has no trajectory: only agent tasks have one\n  hint: `attractor inspect SUITE --json` lists run ids"
    )]
    NoTrajectory(i64),
    #[error(
        "there is no trajectory `{0}`\n  hint: a run's page, or `attractor trajectory RUN_ID`, lists its trajectories"
    )]
    UnknownTrajectory(String),
    #[error("the task text is empty: describe the task, or give a run id")]
    EmptyTask,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The `limit` finished trajectories most similar to `to`, best first (ties:
/// the newest first); trajectories with nothing in common are left out.
/// `category`, or the run's own category, adds to the similarity of
/// trajectories of that category.
pub async fn similar(
    store: &Store,
    to: &SimilarTo,
    category: Option<&str>,
    limit: usize,
) -> Result<SimilarTrajectories, SimilarError> {
    let (description, category, excluded) = match to {
        SimilarTo::Task(text) => {
            if text.trim().is_empty() {
                return Err(SimilarError::EmptyTask);
            }
            (text.clone(), category.map(str::to_string), None)
        }
        SimilarTo::Run(run_id) => {
            let Some(t) = store.trajectories_of_run(*run_id).await?.into_iter().next() else {
                return Err(SimilarError::NoTrajectory(*run_id));
            };
            asked_about(t, category)
        }
        SimilarTo::Trajectory(id) => {
            let Some(t) = store.trajectory(id).await? else {
                return Err(SimilarError::UnknownTrajectory(id.clone()));
            };
            asked_about(t, category)
        }
    };
    let query = signature::signature(&description);
    let mut items: Vec<SimilarTrajectory> = store
        .finished_trajectories(None, SIMILARITY_SCAN)
        .await?
        .into_iter()
        .filter(|t| excluded.as_deref() != Some(t.id.as_str()))
        .filter_map(|t| {
            let theirs = signature::signature(t.description.as_deref().unwrap_or(&t.task_name));
            let text = signature::jaccard(&query, &theirs);
            if text <= 0.0 {
                return None;
            }
            let similarity = signature::similarity(&query, category.as_deref(), &theirs, &t.category);
            let shared_words = query.iter().filter(|w| theirs.contains(w)).cloned().collect();
            Some(SimilarTrajectory { trajectory: t, similarity, shared_words })
        })
        .collect();
    // Stable: the store's order (newest first) breaks ties.
    items.sort_by(|a, b| b.similarity.total_cmp(&a.similarity));
    items.truncate(limit);
    let measure = match &category {
        Some(c) => format!("0.75 × the Jaccard index of the tasks' keyword sets + 0.25 if the category is `{c}`"),
        None => "the Jaccard index of the tasks' keyword sets (shared words / words in either)".to_string(),
    };
    Ok(SimilarTrajectories { description, category, excluded, measure, items })
}

/// The task text, category and id of a stored trajectory asked about: its
/// own category unless `category` overrides it.
fn asked_about(t: TrajectoryRow, category: Option<&str>) -> (String, Option<String>, Option<String>) {
    let description = serde_json::from_str::<serde_json::Value>(&t.record.state_json)
        .ok()
        .and_then(|s| s["trajectory"]["specification"]["original"]["description"].as_str().map(str::to_string))
        .unwrap_or_else(|| t.record.task_name.clone());
    (description, Some(category.map_or(t.record.category.clone(), str::to_string)), Some(t.record.id))
}

/// A stored memory for people (the app's list, the CLI).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct MemoryItem {
    pub id: i64,
    pub trajectory_id: String,
    pub run_id: i64,
    pub category: String,
    /// `success` or `failure`.
    pub outcome: String,
    pub task_name: String,
    pub status: String,
    pub iterations: i64,
    pub tokens_used: i64,
    pub final_level: f64,
    pub relevance: f64,
    pub content: String,
    /// The structured memory: strategies, attractor path, escapes, signals, gaps.
    #[ts(type = "unknown")]
    pub details: serde_json::Value,
    pub created_at: String,
}

impl From<MemoryRow> for MemoryItem {
    fn from(r: MemoryRow) -> MemoryItem {
        MemoryItem {
            details: serde_json::from_str(&r.memory.details_json).unwrap_or(serde_json::Value::Null),
            id: r.id,
            trajectory_id: r.memory.trajectory_id,
            run_id: r.memory.run_id,
            category: r.memory.category,
            outcome: r.memory.outcome,
            task_name: r.memory.task_name,
            status: r.memory.status,
            iterations: r.memory.iterations,
            tokens_used: r.memory.tokens_used,
            final_level: r.memory.final_level,
            relevance: r.memory.relevance,
            content: r.memory.content,
            created_at: r.created_at,
        }
    }
}

/// The newest memories, of one category or of all.
pub async fn memories(store: &Store, category: Option<&str>, limit: usize) -> Result<Vec<MemoryItem>, StoreError> {
    let rows = store.memories(category, i64::try_from(limit).unwrap_or(i64::MAX)).await?;
    Ok(rows.into_iter().map(MemoryItem::from).collect())
}
