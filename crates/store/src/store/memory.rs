//! Rows of convergence memory, and the trajectory repository's queries
//! (seed 002 §8.1 and §10.2).
//!
//! A memory row is written once per finished trajectory (rewritten if the
//! end is recorded again) and read back, newest first, by category. The
//! queries aggregate finished trajectories — every status but `running` and
//! `paused` — optionally within one category; what the numbers mean is
//! documented on each row type, since the app shows them as they are.

use serde::Serialize;
use ts_rs::TS;

use super::{Result, Store};
use crate::now_rfc3339;

/// A memory as stored.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct MemoryRow {
    pub id: i64,
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub memory: Memory,
    pub created_at: String,
}

/// What a finished trajectory teaches its category: what RESOLVE writes
/// and what [`MemoryRow`] reads back inside it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Memory {
    pub trajectory_id: String,
    pub run_id: i64,
    pub suite_id: i64,
    pub category: String,
    /// `success` or `failure`.
    pub outcome: String,
    pub task_name: String,
    pub signature: String,
    pub complexity: Option<String>,
    pub status: String,
    pub iterations: i64,
    pub tokens_used: i64,
    pub final_level: f64,
    pub relevance: f64,
    pub content: String,
    pub details_json: String,
}

/// Finished trajectories of one complexity (from SETUP's record).
#[derive(Debug, Clone, PartialEq, Serialize, TS, sqlx::FromRow)]
pub struct ComplexityStats {
    /// trivial, simple, moderate, complex (or unknown).
    pub complexity: String,
    pub trajectories: i64,
    pub mean_iterations: f64,
    pub mean_tokens: f64,
    /// Of them, how many converged fully.
    pub converged: i64,
}

/// How one strategy did, over every observation it produced.
#[derive(Debug, Clone, PartialEq, Serialize, TS, sqlx::FromRow)]
pub struct StrategyStats {
    pub strategy: String,
    /// The attractor the strategy was chosen under (the classification after
    /// the previous observation; `indeterminate` for a first attempt), or
    /// `None` for the strategy over every attractor.
    pub attractor: Option<String>,
    /// Observations it produced.
    pub uses: i64,
    /// Of them, those with a convergence delta (every one but a trajectory's first).
    pub measured: i64,
    /// Of the measured, those whose delta was above the success threshold.
    pub successes: i64,
    /// `successes / measured`; `None` when nothing was measured.
    pub success_rate: Option<f64>,
    pub mean_delta: Option<f64>,
    pub tokens: i64,
}

/// How often an attractor was met.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct AttractorCount {
    /// fixed_point, limit_cycle, divergent, plateau, indeterminate.
    pub attractor: String,
    /// Finished trajectories whose last observation was classified so.
    pub trajectories: i64,
    /// Observations (of finished trajectories) classified so.
    pub observations: i64,
}

/// How the finished trajectories of one category ended.
#[derive(Debug, Clone, PartialEq, Serialize, TS, sqlx::FromRow)]
pub struct CategoryStats {
    pub category: String,
    pub finished: i64,
    pub converged: i64,
    /// Ended with the best result accepted as good enough when the budget ran out.
    pub accepted_partial: i64,
    /// `converged / finished`: the seed's convergence rate (a partial
    /// acceptance is not convergence).
    pub convergence_rate: f64,
    pub mean_iterations: f64,
    pub mean_tokens: f64,
}

/// A finished trajectory in a line: what the similarity search ranks.
#[derive(Debug, Clone, PartialEq, Serialize, TS, sqlx::FromRow)]
pub struct TrajectoryBrief {
    pub id: String,
    pub run_id: i64,
    pub suite_id: i64,
    pub task_name: String,
    pub category: String,
    pub status: String,
    pub iterations: i64,
    pub tokens_used: i64,
    pub final_level: Option<f64>,
    /// The task's text as given (the specification's original description).
    pub description: Option<String>,
    pub finished_at: Option<String>,
}

/// Trajectories that ended on their own: not running, paused or waiting for
/// subtasks, not stopped by their coordinator (a sample superseded by a
/// sibling, a cancelled one), and not a parallel group's own row (its
/// samples are counted).
const FINISHED: &str =
    "status NOT IN ('running', 'paused', 'coordinating', 'superseded', 'cancelled') AND role <> 'parallel'";

impl Store {
    /// Stores (or rewrites) the memory of a trajectory; returns its id.
    pub async fn insert_memory(&self, m: &Memory) -> Result<i64> {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO memories (trajectory_id, run_id, suite_id, category, outcome, task_name, signature,
                 complexity, status, iterations, tokens_used, final_level, relevance, content, details_json, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
             ON CONFLICT(trajectory_id) DO UPDATE SET run_id = excluded.run_id, outcome = excluded.outcome,
                 signature = excluded.signature, complexity = excluded.complexity, status = excluded.status,
                 iterations = excluded.iterations, tokens_used = excluded.tokens_used,
                 final_level = excluded.final_level, relevance = excluded.relevance, content = excluded.content,
                 details_json = excluded.details_json
             RETURNING id",
        )
        .bind(&m.trajectory_id)
        .bind(m.run_id)
        .bind(m.suite_id)
        .bind(&m.category)
        .bind(&m.outcome)
        .bind(&m.task_name)
        .bind(&m.signature)
        .bind(&m.complexity)
        .bind(&m.status)
        .bind(m.iterations)
        .bind(m.tokens_used)
        .bind(m.final_level)
        .bind(m.relevance)
        .bind(&m.content)
        .bind(&m.details_json)
        .bind(now_rfc3339())
        .fetch_one(&self.writer)
        .await?;
        Ok(id)
    }

    /// The newest `limit` memories, of one category or of all, newest first.
    pub async fn memories(&self, category: Option<&str>, limit: i64) -> Result<Vec<MemoryRow>> {
        Ok(sqlx::query_as("SELECT * FROM memories WHERE ($1 IS NULL OR category = $1) ORDER BY id DESC LIMIT $2")
            .bind(category)
            .bind(limit.max(0))
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn memory_of_trajectory(&self, trajectory_id: &str) -> Result<Option<MemoryRow>> {
        Ok(sqlx::query_as("SELECT * FROM memories WHERE trajectory_id = $1")
            .bind(trajectory_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Average iterations (and tokens) of finished trajectories by the
    /// complexity SETUP sized them for, simplest first.
    pub async fn iterations_by_complexity(&self, category: Option<&str>) -> Result<Vec<ComplexityStats>> {
        Ok(sqlx::query_as(&format!(
            "SELECT complexity, trajectories, mean_iterations, mean_tokens, converged FROM (
                 SELECT COALESCE({complexity}, 'unknown') AS complexity,
                        COUNT(*) AS trajectories,
                        CAST(AVG(iterations) AS DOUBLE PRECISION) AS mean_iterations,
                        CAST(AVG(tokens_used) AS DOUBLE PRECISION) AS mean_tokens,
                        CAST(SUM(CASE WHEN status = 'converged' THEN 1 ELSE 0 END) AS BIGINT) AS converged
                 FROM trajectories
                 WHERE {FINISHED} AND ($1 IS NULL OR category = $1)
                 GROUP BY 1
             ) AS by_complexity
             ORDER BY CASE complexity WHEN 'trivial' THEN 0 WHEN 'simple' THEN 1 WHEN 'moderate' THEN 2
                                      WHEN 'complex' THEN 3 ELSE 4 END",
            complexity = self.backend.json_text("setup_json", &["complexity"])
        ))
        .bind(category)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Every strategy's record over all observations (of any trajectory,
    /// finished or not), once over every attractor and once per attractor it
    /// was chosen under. A delta above `success_threshold` is a success (the
    /// bandit's threshold).
    pub async fn strategy_effectiveness(
        &self,
        category: Option<&str>,
        success_threshold: f64,
    ) -> Result<(Vec<StrategyStats>, Vec<StrategyStats>)> {
        let query = |by_attractor: bool| {
            let (select, group) = if by_attractor {
                ("context AS attractor", "GROUP BY strategy, context ORDER BY strategy, context")
            } else {
                ("NULL AS attractor", "GROUP BY strategy ORDER BY strategy")
            };
            format!(
                "WITH obs AS (
                     SELECT o.strategy, o.delta, o.tokens,
                            COALESCE(LAG(o.attractor) OVER (PARTITION BY o.trajectory_id ORDER BY o.sequence),
                                     'indeterminate') AS context
                     FROM trajectory_observations o JOIN trajectories t ON t.id = o.trajectory_id
                     WHERE $1 IS NULL OR t.category = $1
                 )
                 SELECT strategy, {select}, COUNT(*) AS uses, COUNT(delta) AS measured,
                        CAST(SUM(CASE WHEN delta > $2 THEN 1 ELSE 0 END) AS BIGINT) AS successes,
                        CASE WHEN COUNT(delta) > 0
                             THEN CAST(SUM(CASE WHEN delta > $2 THEN 1 ELSE 0 END) AS DOUBLE PRECISION) / COUNT(delta) END
                             AS success_rate,
                        CAST(AVG(delta) AS DOUBLE PRECISION) AS mean_delta, CAST(SUM(tokens) AS BIGINT) AS tokens
                 FROM obs {group}"
            )
        };
        let overall =
            sqlx::query_as(&query(false)).bind(category).bind(success_threshold).fetch_all(&self.pool).await?;
        let by_attractor =
            sqlx::query_as(&query(true)).bind(category).bind(success_threshold).fetch_all(&self.pool).await?;
        Ok((overall, by_attractor))
    }

    /// How often each attractor was where finished trajectories ended, and
    /// how often it was met along the way.
    pub async fn attractor_distribution(&self, category: Option<&str>) -> Result<Vec<AttractorCount>> {
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(&format!(
            "WITH obs AS (
                 SELECT o.attractor,
                        ROW_NUMBER() OVER (PARTITION BY o.trajectory_id ORDER BY o.sequence DESC) AS from_end
                 FROM trajectory_observations o JOIN trajectories t ON t.id = o.trajectory_id
                 WHERE t.{FINISHED} AND ($1 IS NULL OR t.category = $1)
             )
             SELECT attractor, CAST(SUM(CASE WHEN from_end = 1 THEN 1 ELSE 0 END) AS BIGINT) AS trajectories,
                    COUNT(*) AS observations
             FROM obs GROUP BY attractor ORDER BY trajectories DESC, observations DESC, attractor"
        ))
        .bind(category)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(attractor, trajectories, observations)| AttractorCount { attractor, trajectories, observations })
            .collect())
    }

    /// How the finished trajectories of each category (or of one) ended.
    pub async fn convergence_by_category(&self, category: Option<&str>) -> Result<Vec<CategoryStats>> {
        Ok(sqlx::query_as(&format!(
            "SELECT category, COUNT(*) AS finished,
                    CAST(SUM(CASE WHEN status = 'converged' THEN 1 ELSE 0 END) AS BIGINT) AS converged,
                    CAST(SUM(CASE WHEN status = 'accepted_partial' THEN 1 ELSE 0 END) AS BIGINT) AS accepted_partial,
                    CAST(SUM(CASE WHEN status = 'converged' THEN 1 ELSE 0 END) AS DOUBLE PRECISION) / COUNT(*)
                        AS convergence_rate,
                    CAST(AVG(iterations) AS DOUBLE PRECISION) AS mean_iterations,
                    CAST(AVG(tokens_used) AS DOUBLE PRECISION) AS mean_tokens
             FROM trajectories
             WHERE {FINISHED} AND ($1 IS NULL OR category = $1)
             GROUP BY category ORDER BY category"
        ))
        .bind(category)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The newest `limit` finished trajectories (of one category or all),
    /// with their task's text.
    pub async fn finished_trajectories(&self, category: Option<&str>, limit: i64) -> Result<Vec<TrajectoryBrief>> {
        Ok(sqlx::query_as(&format!(
            "SELECT id, run_id, suite_id, task_name, category, status, iterations, tokens_used, final_level,
                    {description} AS description,
                    finished_at
             FROM trajectories
             WHERE {FINISHED} AND ($1 IS NULL OR category = $1)
             ORDER BY finished_at DESC, id DESC LIMIT $2",
            description =
                self.backend.json_text("state_json", &["trajectory", "specification", "original", "description"])
        ))
        .bind(category)
        .bind(limit.max(0))
        .fetch_all(&self.pool)
        .await?)
    }
}
