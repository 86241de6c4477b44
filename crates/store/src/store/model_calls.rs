//! The ledger of model calls (table `model_calls`), written by
//! [`crate::llm::Ledger`]: what each call was for, what it cost, how it
//! ended; and the sums a suite, an epoch or a run is shown with.

use super::{Result, Store};
use crate::domain::ModelSpend;
use crate::now_rfc3339;

/// One call, as the client saw it: what the ledger writes and what
/// [`ModelCallRow`] reads back inside it.
#[derive(Debug, Clone, Default, PartialEq, sqlx::FromRow)]
pub struct ModelCall {
    pub suite_id: Option<i64>,
    pub epoch_id: Option<i64>,
    pub run_id: Option<i64>,
    pub role: String,
    pub model: String,
    #[sqlx(try_from = "i64")]
    pub prompt_tokens: u64,
    #[sqlx(try_from = "i64")]
    pub completion_tokens: u64,
    /// `None`: the model has no price.
    pub cost: Option<f64>,
    pub seconds: f64,
    /// `ok`, `cut_off`, or the failure's short reason.
    pub outcome: String,
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ModelCallRow {
    pub id: i64,
    #[sqlx(flatten)]
    pub call: ModelCall,
    pub created_at: String,
}

/// Which calls to sum.
#[derive(Debug, Clone, Copy)]
pub enum CallsOf {
    Suite(i64),
    Epoch(i64),
    Run(i64),
}

impl Store {
    pub async fn insert_model_call(&self, c: &ModelCall) -> Result<i64> {
        // Token counts from a server are bounded when stored: SQLite integers are i64.
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        Ok(sqlx::query_scalar(
            "INSERT INTO model_calls (suite_id, epoch_id, run_id, role, model, prompt_tokens, completion_tokens,
                                      cost, seconds, outcome, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
        )
        .bind(c.suite_id)
        .bind(c.epoch_id)
        .bind(c.run_id)
        .bind(&c.role)
        .bind(&c.model)
        .bind(count(c.prompt_tokens))
        .bind(count(c.completion_tokens))
        .bind(c.cost)
        .bind(c.seconds)
        .bind(&c.outcome)
        .bind(now_rfc3339())
        .fetch_one(&self.writer)
        .await?)
    }

    /// The calls of a suite, an epoch or a run, oldest first.
    pub async fn model_calls(&self, of: CallsOf) -> Result<Vec<ModelCallRow>> {
        let (column, id) = scope_column(of);
        Ok(sqlx::query_as(&format!("SELECT * FROM model_calls WHERE {column} = $1 ORDER BY id"))
            .bind(id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// What the calls of a suite, an epoch or a run cost in all.
    pub async fn model_spend(&self, of: CallsOf) -> Result<ModelSpend> {
        let (column, id) = scope_column(of);
        let sums: SpendSums = sqlx::query_as(&format!("SELECT {SPEND_COLUMNS} FROM model_calls WHERE {column} = $1"))
            .bind(id)
            .fetch_one(&self.pool)
            .await?;
        Ok(sums.into())
    }
}

/// The sums a spend is made of, read by the names [`SPEND_COLUMNS`] gives them.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct SpendSums {
    calls: i64,
    prompt_tokens: i64,
    completion_tokens: i64,
    failures: i64,
    seconds: f64,
    cost: f64,
    unpriced_calls: i64,
}

/// The aggregate columns of a spend over some `model_calls` rows.
pub(crate) const SPEND_COLUMNS: &str =
    "COUNT(*) AS calls, CAST(COALESCE(SUM(prompt_tokens), 0) AS BIGINT) AS prompt_tokens,
     CAST(COALESCE(SUM(completion_tokens), 0) AS BIGINT) AS completion_tokens,
     CAST(COALESCE(SUM(CASE WHEN outcome NOT IN ('ok') THEN 1 ELSE 0 END), 0) AS BIGINT) AS failures,
     CAST(COALESCE(SUM(seconds), 0.0) AS DOUBLE PRECISION) AS seconds,
     CAST(COALESCE(SUM(cost), 0.0) AS DOUBLE PRECISION) AS cost,
     CAST(COALESCE(SUM(CASE WHEN cost IS NULL THEN 1 ELSE 0 END), 0) AS BIGINT) AS unpriced_calls";

impl From<SpendSums> for ModelSpend {
    /// Negative counts, which no sum of rows gives, read as 0.
    fn from(s: SpendSums) -> ModelSpend {
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        ModelSpend {
            calls: count(s.calls),
            prompt_tokens: count(s.prompt_tokens),
            completion_tokens: count(s.completion_tokens),
            failures: count(s.failures),
            seconds: s.seconds,
            cost: s.cost,
            unpriced_calls: count(s.unpriced_calls),
        }
    }
}

/// The column a scope filters on (never user text: the SQL is built from
/// these three names only).
fn scope_column(of: CallsOf) -> (&'static str, i64) {
    match of {
        CallsOf::Suite(id) => ("suite_id", id),
        CallsOf::Epoch(id) => ("epoch_id", id),
        CallsOf::Run(id) => ("run_id", id),
    }
}
