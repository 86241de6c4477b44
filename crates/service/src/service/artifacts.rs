//! The versioned artifacts: each one's history, the diff between two versions, and a
//! rollback to an earlier one.

use super::*;
use std::collections::HashSet;

impl Service {
    pub async fn artifacts(&self) -> Result<Vec<ArtifactItem>> {
        let registry = Registry::load(self.store.clone()).await?;
        let mut out = Vec::new();
        for def in registry.defs() {
            let history = registry.history(&def.name).await?;
            out.push(artifact_item(def, &history));
        }
        Ok(out)
    }

    /// Every version of an artifact (0 first), each with its diff against
    /// the version it was derived from.
    pub async fn artifact_versions(&self, name: &str) -> Result<ArtifactHistory> {
        let registry = Registry::load(self.store.clone()).await?;
        let def = registry.def(name)?.clone();
        let history = registry.history(name).await?;
        let ids: Vec<i64> = history.iter().filter_map(|v| v.epoch_id).collect();
        let epochs: HashMap<i64, (i64, String)> =
            self.store.epoch_nums(&ids).await?.into_iter().map(|(id, num, suite)| (id, (num, suite))).collect();
        // A tree's versions name no epoch of their own: their node does.
        let nodes: HashMap<i64, crate::store::TreeVersionRow> =
            self.store.tree_versions(name).await?.into_iter().map(|n| (n.version, n)).collect();
        let (measures, rolled_back) = self.version_measures(&def).await?;
        let versions = history
            .iter()
            .map(|v| {
                let parent = v.parent_version.and_then(|p| history.iter().find(|h| h.version == p));
                let at = v.epoch_id.and_then(|id| epochs.get(&id));
                let node = if v.version == 0 { None } else { nodes.get(&v.version) };
                VersionView {
                    version: v.version,
                    content: v.content.clone(),
                    parent_version: v.parent_version,
                    created_at: v.created_at.clone(),
                    epoch_id: v.epoch_id,
                    epoch_num: at.map(|(n, _)| *n).or_else(|| node.and_then(|n| n.epoch_num)),
                    suite: at.map(|(_, s)| s.clone()).or_else(|| node.map(|n| n.suite.clone())),
                    is_active: v.is_active,
                    tree_node: node.and_then(|n| {
                        let status = crate::outer::tree::NodeStatus::parse(&n.status)?;
                        Some(VersionTreeNode { node_id: n.node_id, status })
                    }),
                    diff_from_parent: parent
                        .map(|p| artifact_diff(def.kind, name, p.version, &p.content, v.version, &v.content)),
                    measured: measures.get(&v.version).map(|(epochs, losses)| VersionMeasure {
                        epochs: *epochs,
                        mean_loss: crate::loss::mean(losses),
                    }),
                    rolled_back: rolled_back.contains(&v.version),
                }
            })
            .collect();
        Ok(ArtifactHistory { artifact: artifact_item(&def, &history), versions })
    }

    /// Per version of an artifact, the closed epochs that ran with it
    /// active (how many, and their mean losses), and the versions an epoch
    /// rolled back.
    async fn version_measures(
        &self,
        def: &crate::artifact::ArtifactDef,
    ) -> Result<(HashMap<i64, (u32, Vec<f64>)>, HashSet<i64>)> {
        let name = def.name.as_str();
        let mut measures: HashMap<i64, (u32, Vec<f64>)> = HashMap::new();
        let mut rolled_back = HashSet::new();
        let epochs = self.store.closed_epochs_naming(name).await?;
        // A built-in artifact is named by every suite's epochs, but only the
        // kinds of task that read it feel it: a suite of command tasks says
        // nothing about the executor's prompt.
        let steered: Option<HashSet<i64>> = match def.origin {
            crate::artifact::Origin::Suite(_) => None,
            crate::artifact::Origin::Builtin => {
                let ids: Vec<i64> = epochs.iter().map(|e| e.id).collect();
                let kinds = self.store.run_kinds_of_epochs(&ids).await?;
                Some(
                    kinds
                        .into_iter()
                        .filter(|(_, kind)| {
                            // Runs record an agent task under ASO as `agent`.
                            let kind = kind.as_str();
                            def.steers_any(&[kind])
                                || (kind == "agent" && def.steers_any(&[crate::suite::ASO_AGENT_KIND]))
                        })
                        .map(|(id, _)| id)
                        .collect(),
                )
            }
        };
        for e in epochs {
            if steered.as_ref().is_some_and(|ids| !ids.contains(&e.id)) {
                continue;
            }
            let record = super::suites::EpochRecord::of(&e);
            if let Some(version) = record.parent.get(name) {
                let m = measures.entry(*version).or_default();
                m.0 += 1;
                m.1.extend(e.mean_loss);
            }
            for event in record.events {
                if let ArtifactEvent::Rollback { artifact, from_version, .. } = event
                    && artifact == name
                {
                    rolled_back.insert(from_version);
                }
            }
        }
        Ok((measures, rolled_back))
    }

    /// The diff between any two versions of an artifact.
    pub async fn artifact_diff(&self, name: &str, from: i64, to: i64) -> Result<LineDiff> {
        let registry = Registry::load(self.store.clone()).await?;
        let kind = registry.def(name)?.kind;
        let old = registry.get(name, from).await?;
        let new = registry.get(name, to).await?;
        Ok(artifact_diff(kind, name, from, &old.content, to, &new.content))
    }

    /// Makes an earlier (or later) version the active one: a pointer flip.
    pub async fn rollback_artifact(&self, name: &str, version: i64) -> Result<ArtifactItem> {
        let registry = Registry::load(self.store.clone()).await?;
        // Recorded by the registry already: shown, not written again.
        let event = registry.rollback_to(name, version).await?;
        self.bus.replay(event, crate::now_rfc3339());
        let history = registry.history(name).await?;
        Ok(artifact_item(registry.def(name)?, &history))
    }

    // ----- interventions ------------------------------------------------------
}

fn artifact_item(def: &crate::artifact::ArtifactDef, history: &[crate::artifact::ArtifactVersion]) -> ArtifactItem {
    ArtifactItem {
        name: def.name.clone(),
        kind: def.kind,
        description: def.description.clone(),
        origin: match &def.origin {
            Origin::Builtin => "built-in".to_string(),
            Origin::Suite(s) => s.clone(),
        },
        active_version: history.iter().find(|v| v.is_active).map_or(0, |v| v.version),
        versions: history.len(),
    }
}
