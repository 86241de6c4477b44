//! PREPARE's recall: priming a new trajectory from its category's memories
//! (seed 002 §6.3 and §8.2).
//!
//! The newest memories of the category are read back (at most
//! `recall_limit`, the seed's 10), and they prime the trajectory three ways:
//!
//! - **the bandit**: every strategy that made progress in a remembered
//!   success gets `nudge` (0.3) more α in every attractor context, once per
//!   memory — on top of the category's persisted bandit state. The nudge is
//!   part of the prior the trajectory's learning is measured against, so it
//!   is never written back as evidence;
//! - **the prompts**: the `max_lessons` most similar successes and failures
//!   become the "what worked before / what failed before" lines every
//!   prompt of the trajectory carries;
//! - **SETUP**: once the category has `min_history` finished trajectories,
//!   its convergence rate is blended into the basin width (seed 002 §5.2),
//!   and its finished trajectories feed the convergence estimate (§5.4).
//!
//! What was recalled is recorded with the trajectory's SETUP and announced
//! on the bus ([`crate::bus::Event::MemoryRecalled`]), so a resumed
//! trajectory prompts with the same lessons and a person can see what the
//! trajectory was told.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::record::{ConvergenceMemory, Outcome};
use super::{MemoryConfig, signature};
use crate::engine::basin::PastTrajectory;
use crate::engine::{StrategyBandit, StrategyKind};
use crate::executor::MemoryLessons;
use crate::store::{Store, StoreError};

/// One recalled memory, as recorded with the trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recalled {
    pub id: i64,
    pub trajectory_id: String,
    pub outcome: Outcome,
    pub task_name: String,
    /// Jaccard similarity of the two tasks' signatures.
    pub similarity: f64,
}

/// What PREPARE recalled for one trajectory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Recall {
    pub category: String,
    pub memories: Vec<Recalled>,
    /// α added per strategy (every context), from the successes.
    pub nudges: BTreeMap<StrategyKind, f64>,
    pub lessons: MemoryLessons,
    /// The category's convergence rate, when it has enough history to count.
    pub historical_convergence_rate: Option<f64>,
    /// Finished trajectories of the category.
    pub finished_in_category: u32,
    /// The category's finished trajectories, for the convergence estimate (not recorded).
    #[serde(skip)]
    pub history: Vec<PastTrajectory>,
}

impl Recall {
    /// Nothing recalled (memory off, or a category never seen).
    pub fn empty(category: &str) -> Recall {
        Recall { category: category.to_string(), ..Recall::default() }
    }

    pub fn successes(&self) -> u32 {
        self.memories.iter().filter(|m| m.outcome == Outcome::Success).count() as u32
    }

    pub fn failures(&self) -> u32 {
        self.memories.iter().filter(|m| m.outcome == Outcome::Failure).count() as u32
    }

    /// Raises the arms of the strategies that worked before.
    pub fn prime(&self, bandit: &mut StrategyBandit) {
        for (&strategy, &amount) in &self.nudges {
            bandit.nudge(strategy, amount);
        }
    }

    /// What is recorded with the trajectory's SETUP.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// The lessons recorded in a trajectory's SETUP (none when it has no
    /// `memory` entry, as trajectories begun before memory had).
    pub fn lessons_of_setup(setup: &serde_json::Value) -> MemoryLessons {
        serde_json::from_value(setup["memory"]["lessons"].clone()).unwrap_or_default()
    }
}

/// Recalls what the category's past trajectories teach a new task
/// described by `description`. Memories whose details cannot be read are
/// skipped (with a warning), never fatal.
pub async fn recall(
    store: &Store,
    category: &str,
    description: &str,
    config: &MemoryConfig,
) -> Result<Recall, StoreError> {
    if !config.enabled {
        return Ok(Recall::empty(category));
    }
    let query = signature::signature(description);
    let rows = store.memories(Some(category), i64::try_from(config.recall_limit).unwrap_or(i64::MAX)).await?;
    let mut recalled: Vec<(Recalled, ConvergenceMemory)> = Vec::new();
    for row in rows {
        match serde_json::from_str::<ConvergenceMemory>(&row.memory.details_json) {
            Ok(m) => {
                let similarity = signature::jaccard(&query, &m.signature);
                let r = Recalled {
                    id: row.id,
                    trajectory_id: row.memory.trajectory_id,
                    outcome: m.outcome,
                    task_name: row.memory.task_name,
                    similarity,
                };
                recalled.push((r, m));
            }
            Err(e) => tracing::warn!(memory = row.id, "ignoring a memory whose details cannot be read: {e}"),
        }
    }

    let mut nudges: BTreeMap<StrategyKind, f64> = BTreeMap::new();
    if config.nudge.is_finite() && config.nudge > 0.0 {
        for (_, m) in recalled.iter().filter(|(r, _)| r.outcome == Outcome::Success) {
            let mut once: Vec<StrategyKind> = m.effective_strategies.clone();
            once.sort();
            once.dedup();
            for s in once {
                *nudges.entry(s).or_default() += config.nudge;
            }
        }
    }

    // The most similar first; among equals the newest (rows came newest first, the sort is stable).
    let mut ranked: Vec<&(Recalled, ConvergenceMemory)> = recalled.iter().collect();
    ranked.sort_by(|a, b| b.0.similarity.total_cmp(&a.0.similarity));
    let lines = |outcome: Outcome| -> Vec<String> {
        ranked.iter().filter(|(r, _)| r.outcome == outcome).take(config.max_lessons).map(|(_, m)| m.lesson()).collect()
    };
    let lessons = MemoryLessons { worked: lines(Outcome::Success), avoid: lines(Outcome::Failure) };

    let stats = store.convergence_by_category(Some(category)).await?;
    let (finished, rate) = stats.first().map_or((0, 0.0), |s| (s.finished, s.convergence_rate));
    let historical_convergence_rate =
        (finished > 0 && finished >= i64::try_from(config.min_history).unwrap_or(i64::MAX)).then_some(rate);
    let history = store
        .finished_trajectories(Some(category), i64::try_from(config.history_limit).unwrap_or(i64::MAX))
        .await?
        .into_iter()
        .map(|t| PastTrajectory {
            iterations: u32::try_from(t.iterations).unwrap_or(0),
            converged: t.status == "converged",
            tokens: u64::try_from(t.tokens_used).unwrap_or(0),
        })
        .collect();

    Ok(Recall {
        category: category.to_string(),
        memories: recalled.into_iter().map(|(r, _)| r).collect(),
        nudges,
        lessons,
        historical_convergence_rate,
        finished_in_category: u32::try_from(finished).unwrap_or(u32::MAX),
        history,
    })
}
