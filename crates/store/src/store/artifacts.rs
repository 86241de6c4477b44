//! Artifacts: what a suite declares about its own, their versions, and which
//! version is active. A version is never changed once written; moving the
//! active one is how an update, a rollback and an approval take effect.

use super::*;

impl Store {
    /// Records what a suite declares about its own artifacts. A name already
    /// declared by another suite is a conflict: two suites would silently tune
    /// one shared parameter.
    pub async fn declare_artifact(&self, decl: &DeclarationRow) -> Result<()> {
        let mut tx = self.begin_write().await?;
        let owner: Option<String> =
            sqlx::query_scalar("SELECT suite_name FROM artifact_declarations WHERE artifact_name = $1")
                .bind(&decl.artifact_name)
                .fetch_optional(&mut *tx)
                .await?;
        if let Some(owner) = owner.filter(|o| o != &decl.suite_name) {
            return Err(StoreError::Conflict(format!(
                "artifact `{}` is already declared by suite `{owner}`\n  hint: give this suite's artifact another name (artifact names are shared across suites)",
                decl.artifact_name
            )));
        }
        sqlx::query(
            "INSERT INTO artifact_declarations (artifact_name, suite_name, kind, description, content, fields_json, declared_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT(artifact_name) DO UPDATE SET kind = excluded.kind, description = excluded.description,
                 content = excluded.content,
                 fields_json = excluded.fields_json, declared_at = excluded.declared_at",
        )
        .bind(&decl.artifact_name)
        .bind(&decl.suite_name)
        .bind(&decl.kind)
        .bind(&decl.description)
        .bind(&decl.content)
        .bind(&decl.fields_json)
        .bind(&decl.declared_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn declarations(&self) -> Result<Vec<DeclarationRow>> {
        Ok(sqlx::query_as("SELECT * FROM artifact_declarations ORDER BY artifact_name").fetch_all(&self.pool).await?)
    }

    /// Stored versions (1, 2, …) of one artifact, oldest first.
    pub async fn artifact_versions(&self, name: &str) -> Result<Vec<VersionRow>> {
        Ok(sqlx::query_as("SELECT * FROM artifact_versions WHERE artifact_name = $1 ORDER BY version")
            .bind(name)
            .fetch_all(&self.pool)
            .await?)
    }

    pub async fn artifact_version(&self, name: &str, version: i64) -> Result<Option<VersionRow>> {
        Ok(sqlx::query_as("SELECT * FROM artifact_versions WHERE artifact_name = $1 AND version = $2")
            .bind(name)
            .bind(version)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// The active stored version of an artifact; `None` means version 0 is active.
    pub async fn active_version(&self, name: &str) -> Result<Option<VersionRow>> {
        Ok(sqlx::query_as("SELECT * FROM artifact_versions WHERE artifact_name = $1 AND is_active = 1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Writes a new version (not yet active) and returns its number.
    pub async fn put_version(
        &self,
        name: &str,
        content: &str,
        parent_version: i64,
        epoch_id: Option<i64>,
    ) -> Result<i64> {
        let mut tx = self.begin_write().await?;
        let version = insert_version(&mut tx, name, content, parent_version, epoch_id).await?;
        tx.commit().await?;
        Ok(version)
    }

    /// Makes `version` the active one (0 means the built-in default). The flip
    /// is one transaction, so readers never see two active versions or none
    /// half-way. Returns `false` when that version does not exist.
    pub async fn set_active(&self, name: &str, version: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let ok = activate(&mut tx, name, version).await?;
        if ok {
            tx.commit().await?;
        }
        Ok(ok)
    }
}

/// The number an artifact's next version gets.
pub(super) const NEXT_VERSION: &str =
    "SELECT COALESCE(MAX(version), 0) + 1 FROM artifact_versions WHERE artifact_name = $1";

pub(super) async fn insert_version(
    tx: &mut sqlx::AnyConnection,
    name: &str,
    content: &str,
    parent_version: i64,
    epoch_id: Option<i64>,
) -> Result<i64> {
    let next: i64 = sqlx::query_scalar(NEXT_VERSION).bind(name).fetch_one(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO artifact_versions (artifact_name, version, content, parent_version, created_at, epoch_id, is_active)
         VALUES ($1, $2, $3, $4, $5, $6, 0)",
    )
    .bind(name)
    .bind(next)
    .bind(content)
    .bind(parent_version)
    .bind(now_rfc3339())
    .bind(epoch_id)
    .execute(&mut *tx)
    .await?;
    Ok(next)
}

pub(super) async fn activate(tx: &mut sqlx::AnyConnection, name: &str, version: i64) -> Result<bool> {
    if version != 0 {
        let exists: Option<i64> =
            sqlx::query_scalar("SELECT id FROM artifact_versions WHERE artifact_name = $1 AND version = $2")
                .bind(name)
                .bind(version)
                .fetch_optional(&mut *tx)
                .await?;
        if exists.is_none() {
            return Ok(false);
        }
    }
    // Clear first, then set: the partial unique index allows one active row.
    sqlx::query("UPDATE artifact_versions SET is_active = 0 WHERE artifact_name = $1 AND is_active = 1")
        .bind(name)
        .execute(&mut *tx)
        .await?;
    if version != 0 {
        sqlx::query("UPDATE artifact_versions SET is_active = 1 WHERE artifact_name = $1 AND version = $2")
            .bind(name)
            .bind(version)
            .execute(&mut *tx)
            .await?;
    }
    Ok(true)
}
