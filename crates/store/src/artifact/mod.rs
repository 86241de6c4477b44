//! The artifact registry: named, versioned texts and JSON settings that steer
//! runs and that the outer loop learns.
//!
//! Version 0 of an artifact is its default — built into the code for the
//! built-ins ([`builtin`]), or the content a suite declares for its own. It is
//! never stored and always available. Versions 1, 2, … are rows in the store.
//! At most one version is active at a time; rolling back is a pointer flip and
//! nothing is ever deleted.

pub mod builtin;
pub mod compare;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::store::{DeclarationRow, Store, StoreError, VersionRow};

/// Text (prompts) or JSON (structured settings with tunable numeric fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum ArtifactKind {
    Text,
    Json,
}

impl ArtifactKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactKind::Text => "text",
            ArtifactKind::Json => "json",
        }
    }

    /// File extension used when the artifact is written into a run directory.
    pub fn extension(self) -> &'static str {
        match self {
            ArtifactKind::Text => "txt",
            ArtifactKind::Json => "json",
        }
    }
}

/// Bounds of one tunable numeric field of a JSON artifact.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldBounds {
    pub min: f64,
    pub max: f64,
    /// Whether the field only takes whole numbers.
    #[serde(default)]
    pub integer: bool,
}

impl FieldBounds {
    pub fn contains(&self, x: f64) -> bool {
        x >= self.min && x <= self.max
    }
}

/// Where an artifact's version 0 comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "suite", rename_all = "lowercase")]
pub enum Origin {
    Builtin,
    Suite(String),
}

/// Everything about an artifact except its stored versions.
#[derive(Debug, Clone, Serialize)]
pub struct ArtifactDef {
    pub name: String,
    pub kind: ArtifactKind,
    pub origin: Origin,
    /// What the artifact steers.
    pub description: String,
    /// Version 0.
    pub default_content: String,
    pub fields: BTreeMap<String, FieldBounds>,
}

impl ArtifactDef {
    /// Whether a change to this artifact can affect a suite whose tasks are
    /// of these kinds: the suite's own artifacts always can, a built-in one
    /// only through the kinds of task that read it.
    pub fn steers_any(&self, task_kinds: &[&str]) -> bool {
        match &self.origin {
            Origin::Suite(_) => true,
            Origin::Builtin => builtin::task_kinds_steered(&self.name).iter().any(|k| task_kinds.contains(k)),
        }
    }

    /// Checks new content for a JSON artifact: a JSON object whose tunable
    /// fields are all present, numeric, whole where they must be, and within
    /// their bounds. The error says which field and why.
    pub fn validate_json(&self, content: &str) -> Result<(), String> {
        let doc: serde_json::Value = serde_json::from_str(content).map_err(|e| format!("not valid JSON ({e})"))?;
        let obj = doc.as_object().ok_or("not a JSON object")?;
        for (field, b) in &self.fields {
            let v = obj.get(field).ok_or_else(|| format!("field `{field}` is missing"))?;
            let x = v.as_f64().ok_or_else(|| format!("field `{field}` is not a number"))?;
            if b.integer && x.fract() != 0.0 {
                return Err(format!("field `{field}` = {x} must be a whole number"));
            }
            if !b.contains(x) {
                return Err(format!("field `{field}` = {x} is outside its bounds {} to {}", b.min, b.max));
            }
        }
        Ok(())
    }

    fn from_builtin(b: &builtin::Builtin) -> Self {
        ArtifactDef {
            name: b.name.to_string(),
            kind: b.kind,
            origin: Origin::Builtin,
            description: b.purpose.to_string(),
            default_content: b.content.to_string(),
            fields: b.fields.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    fn from_declaration(row: &DeclarationRow) -> Result<Self, RegistryError> {
        let kind = match row.kind.as_str() {
            "json" => ArtifactKind::Json,
            _ => ArtifactKind::Text,
        };
        Ok(ArtifactDef {
            name: row.artifact_name.clone(),
            kind,
            origin: Origin::Suite(row.suite_name.clone()),
            description: row.description.clone(),
            default_content: row.content.clone(),
            fields: serde_json::from_str(&row.fields_json).map_err(StoreError::from)?,
        })
    }
}

/// One version of an artifact with its content.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArtifactVersion {
    pub name: String,
    pub version: i64,
    pub content: String,
    pub parent_version: Option<i64>,
    pub created_at: Option<String>,
    pub epoch_id: Option<i64>,
    pub is_active: bool,
}

impl ArtifactVersion {
    fn from_row(row: VersionRow) -> Self {
        ArtifactVersion {
            name: row.artifact_name,
            version: row.version,
            content: row.content,
            parent_version: Some(row.parent_version),
            created_at: Some(row.created_at),
            epoch_id: row.epoch_id,
            is_active: row.is_active,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("unknown artifact `{name}`\n  hint: known artifacts are: {known}")]
    Unknown { name: String, known: String },
    #[error(
        "artifact `{name}` has no version {version}\n  hint: `attractor inspect --artifact {name}` lists its versions"
    )]
    NoSuchVersion { name: String, version: i64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The registry: artifact definitions plus the store that holds their versions.
#[derive(Debug, Clone)]
pub struct Registry {
    store: Store,
    defs: BTreeMap<String, ArtifactDef>,
}

impl Registry {
    /// Loads the built-ins and every suite declaration recorded in the store.
    pub async fn load(store: Store) -> Result<Registry, RegistryError> {
        let mut defs: BTreeMap<String, ArtifactDef> =
            builtin::BUILTINS.iter().map(|b| (b.name.to_string(), ArtifactDef::from_builtin(b))).collect();
        for row in store.declarations().await? {
            defs.insert(row.artifact_name.clone(), ArtifactDef::from_declaration(&row)?);
        }
        Ok(Registry { store, defs })
    }

    /// Records a suite's own artifact (its content becomes version 0).
    pub async fn declare(&mut self, def: ArtifactDef) -> Result<(), RegistryError> {
        let Origin::Suite(suite) = &def.origin else {
            return Ok(());
        };
        self.store
            .declare_artifact(&DeclarationRow {
                artifact_name: def.name.clone(),
                suite_name: suite.clone(),
                kind: def.kind.as_str().to_string(),
                description: def.description.clone(),
                content: def.default_content.clone(),
                fields_json: serde_json::to_string(&def.fields).map_err(StoreError::from)?,
                declared_at: crate::now_rfc3339(),
            })
            .await?;
        self.defs.insert(def.name.clone(), def);
        Ok(())
    }

    pub fn def(&self, name: &str) -> Result<&ArtifactDef, RegistryError> {
        self.defs.get(name).ok_or_else(|| RegistryError::Unknown {
            name: name.to_string(),
            known: self.defs.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }

    pub fn defs(&self) -> impl Iterator<Item = &ArtifactDef> {
        self.defs.values()
    }

    /// The built-in artifacts plus those the named suite declares.
    pub fn defs_for_suite<'a>(&'a self, suite: &'a str) -> impl Iterator<Item = &'a ArtifactDef> {
        self.defs.values().filter(move |d| match &d.origin {
            Origin::Builtin => true,
            Origin::Suite(s) => s == suite,
        })
    }

    /// The active version of an artifact, falling back to version 0.
    pub async fn get_active(&self, name: &str) -> Result<ArtifactVersion, RegistryError> {
        let def = self.def(name)?;
        Ok(match self.store.active_version(name).await? {
            Some(row) => ArtifactVersion::from_row(row),
            None => self.version_zero(def, true),
        })
    }

    /// One version of an artifact (0 is the default).
    pub async fn get(&self, name: &str, version: i64) -> Result<ArtifactVersion, RegistryError> {
        let def = self.def(name)?;
        if version == 0 {
            let active = self.store.active_version(name).await?.is_none();
            return Ok(self.version_zero(def, active));
        }
        self.store
            .artifact_version(name, version)
            .await?
            .map(ArtifactVersion::from_row)
            .ok_or(RegistryError::NoSuchVersion { name: name.to_string(), version })
    }

    /// Every version, version 0 first.
    pub async fn history(&self, name: &str) -> Result<Vec<ArtifactVersion>, RegistryError> {
        let def = self.def(name)?;
        let rows = self.store.artifact_versions(name).await?;
        let zero_active = !rows.iter().any(|r| r.is_active);
        let mut out = vec![self.version_zero(def, zero_active)];
        out.extend(rows.into_iter().map(ArtifactVersion::from_row));
        Ok(out)
    }

    /// Writes a new version derived from `parent_version`; it is not active
    /// until [`Registry::set_active`].
    pub async fn put_version(
        &self,
        name: &str,
        content: &str,
        parent_version: i64,
        epoch_id: Option<i64>,
    ) -> Result<i64, RegistryError> {
        self.def(name)?;
        Ok(self.store.put_version(name, content, parent_version, epoch_id).await?)
    }

    /// Makes `version` the one runs use.
    pub async fn set_active(&self, name: &str, version: i64) -> Result<(), RegistryError> {
        self.def(name)?;
        if self.store.set_active(name, version).await? {
            Ok(())
        } else {
            Err(RegistryError::NoSuchVersion { name: name.to_string(), version })
        }
    }

    /// A person's move of an artifact to another version (a rollback, or
    /// forward again): a pointer flip, the later versions kept. Recorded at
    /// once as an `artifact_activated` event (returned, for the caller to
    /// show on its bus as already recorded): a run that set a proposal
    /// aside as pending leaves it there once a person has chosen.
    pub async fn rollback_to(&self, name: &str, version: i64) -> Result<crate::bus::Event, RegistryError> {
        let from = self.get_active(name).await?.version;
        self.set_active(name, version).await?;
        let event = crate::bus::Event::ArtifactActivated {
            artifact: name.to_string(),
            from_version: from,
            to_version: version,
        };
        crate::bus::record(&self.store, &event, &crate::now_rfc3339()).await?;
        Ok(event)
    }

    fn version_zero(&self, def: &ArtifactDef, is_active: bool) -> ArtifactVersion {
        ArtifactVersion {
            name: def.name.clone(),
            version: 0,
            content: def.default_content.clone(),
            parent_version: None,
            created_at: None,
            epoch_id: None,
            is_active,
        }
    }
}
