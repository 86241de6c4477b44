//! Run plans (table `suite_plans`): what the last run of a suite set out to
//! do. Resuming needs it: without the plan, "run the same command again"
//! would add its epochs to the ones already run instead of finishing them.

use super::{Result, Store};
use crate::now_rfc3339;

/// A suite's plan as stored.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct PlanRow {
    pub suite_id: i64,
    pub request_json: String,
    pub first_epoch: i64,
    pub epochs: i64,
    pub finished_at: Option<String>,
}

impl Store {
    /// The suite's latest plan, finished or not.
    pub async fn plan(&self, suite_id: i64) -> Result<Option<PlanRow>> {
        Ok(sqlx::query_as("SELECT * FROM suite_plans WHERE suite_id = $1")
            .bind(suite_id)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Records a new plan, replacing the suite's previous one.
    pub async fn start_plan(&self, suite_id: i64, request_json: &str, first_epoch: i64, epochs: i64) -> Result<()> {
        sqlx::query(
            "INSERT INTO suite_plans (suite_id, request_json, first_epoch, epochs, finished_at) VALUES ($1, $2, $3, $4, NULL)
             ON CONFLICT (suite_id) DO UPDATE SET request_json = excluded.request_json,
                 first_epoch = excluded.first_epoch, epochs = excluded.epochs, finished_at = NULL",
        )
        .bind(suite_id)
        .bind(request_json)
        .bind(first_epoch)
        .bind(epochs)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// Marks the suite's plan carried out.
    pub async fn finish_plan(&self, suite_id: i64) -> Result<()> {
        sqlx::query("UPDATE suite_plans SET finished_at = $1 WHERE suite_id = $2")
            .bind(now_rfc3339())
            .bind(suite_id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }
}
