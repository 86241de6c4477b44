//! The persistent LLM response cache (table `llm_cache`), used by
//! [`crate::llm`] so that a deterministic call answered once is not paid for
//! again, in this process or the next.
//!
//! Rows are written only for successful replies; the client decides what is
//! cacheable. Each row holds the request's canonical JSON, which never contains
//! the API key (that travels only in the Authorization header).

use super::{Result, Store};
use crate::now_rfc3339;

impl Store {
    /// The cached response JSON for `key`, counting the hit; `None` on a miss.
    pub async fn llm_cache_get(&self, key: &str) -> Result<Option<String>> {
        // One statement both counts the hit and reads the row, so concurrent
        // readers never lose an increment.
        Ok(sqlx::query_scalar("UPDATE llm_cache SET hits = hits + 1 WHERE key = $1 RETURNING response_json")
            .bind(key)
            .fetch_optional(&self.writer)
            .await?)
    }

    /// Stores a reply under `key`. A row already there is kept: two concurrent
    /// misses of one deterministic call carry equivalent replies.
    pub async fn llm_cache_put(
        &self,
        key: &str,
        base_url: &str,
        model: &str,
        request_json: &str,
        response_json: &str,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO llm_cache (key, base_url, model, request_json, response_json, created_at, hits)
             VALUES ($1, $2, $3, $4, $5, $6, 0)
             ON CONFLICT(key) DO NOTHING",
        )
        .bind(key)
        .bind(base_url)
        .bind(model)
        .bind(request_json)
        .bind(response_json)
        .bind(now_rfc3339())
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// How many replies the cache holds.
    pub async fn llm_cache_len(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM llm_cache").fetch_one(&self.pool).await?)
    }
}
