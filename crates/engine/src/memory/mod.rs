//! Convergence memory (seed 002 Part 8) and the trajectory repository's
//! queries (seed 002 §10.2): what finished agent trajectories teach the
//! next ones, and what they add up to.
//!
//! Every trajectory that ends leaves one memory of its task category
//! ([`remember`], in RESOLVE): a *success* memory keeps the strategies that
//! made progress and their order, the attractors met and what escaped them,
//! the overseer signals that moved; a *failure* memory keeps the terminal
//! attractor, the strategies that did not help, the causes and the gaps that
//! stayed open ([`record`]). The next trajectory of the category recalls the
//! newest of them in PREPARE ([`recall()`]): the strategies that worked get a
//! head start in the bandit (beyond the bandit state the category already
//! persists), the executor's prompts carry a short "what worked before /
//! what failed before" section, and with enough history the category's
//! convergence rate widens or narrows the basin.
//!
//! Tasks are compared by their signature, the keyword set of their text
//! ([`signature`]); [`repository`] answers the seed's repository questions —
//! iterations by complexity, strategy effectiveness, attractor distribution,
//! convergence rate by category, similar trajectories — for the CLI, the
//! HTTP API and the desktop app.

pub mod recall;
pub mod record;
pub mod repository;
pub mod signature;

use serde::{Deserialize, Serialize};

pub use recall::{Recall, Recalled, recall};
pub use record::{ConvergenceMemory, Ending, Escape, Outcome};
pub use repository::{MemoryItem, SimilarError, SimilarTo, SimilarTrajectories, SimilarTrajectory, TrajectoryStats};

use crate::store::{Memory, Store, StoreError};

/// How memory primes new trajectories (seed 002's numbers by default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Off: no memory is recalled (memories are still written).
    pub enabled: bool,
    /// Memories of the category recalled at most (the newest).
    pub recall_limit: usize,
    /// α added to a strategy's arms per remembered success it made progress in.
    pub nudge: f64,
    /// Lines of "what worked" and of "what failed" in a prompt, at most each.
    pub max_lessons: usize,
    /// Finished trajectories a category needs before its convergence rate
    /// is blended into the basin width.
    pub min_history: usize,
    /// Finished trajectories of the category given to the convergence estimate.
    pub history_limit: usize,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig { enabled: true, recall_limit: 10, nudge: 0.3, max_lessons: 3, min_history: 5, history_limit: 50 }
    }
}

/// Where a memory belongs.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    pub trajectory_id: &'a str,
    pub run_id: i64,
    pub suite_id: i64,
}

/// RESOLVE: stores what the ended trajectory teaches; returns the memory's
/// id and the memory.
pub async fn remember(
    store: &Store,
    owner: Owner<'_>,
    ending: &Ending<'_>,
) -> Result<(i64, ConvergenceMemory), StoreError> {
    let m = ConvergenceMemory::of(ending);
    let row = Memory {
        trajectory_id: owner.trajectory_id.to_string(),
        run_id: owner.run_id,
        suite_id: owner.suite_id,
        category: m.category.clone(),
        outcome: m.outcome.as_str().to_string(),
        task_name: m.task_name.clone(),
        signature: signature::to_text(&m.signature),
        complexity: m.complexity.clone(),
        status: m.status.clone(),
        iterations: i64::from(m.iterations),
        tokens_used: i64::try_from(m.tokens_used).unwrap_or(i64::MAX),
        final_level: m.final_level,
        relevance: m.outcome.relevance(),
        content: m.content(),
        details_json: serde_json::to_string(&m)?,
    };
    let id = store.insert_memory(&row).await?;
    Ok((id, m))
}
