//! What an epoch's close records, in one typed shape: the outer loop writes
//! it into the epochs table (`child_artifacts_json`), and the resume, the
//! service, the report and `attractor inspect` read it back with serde — no
//! one rebuilds an update or a rollback from loose JSON keys.
//!
//! The JSON is the one earlier versions wrote, so their records read as
//! they are; an event type this version does not know (written by a newer
//! one) reads as [`EpochEvent::Other`] and is kept, never dropped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{ModelSpend, RollbackReason};
use crate::loss::paired::PairedEvidence;

/// An epoch's record: the versions active after its close, what moved them,
/// why nothing moved (when nothing did), its model calls, and the learning
/// rate after it (a resumed or continued run starts from it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EpochRecord {
    #[serde(default)]
    pub artifacts: BTreeMap<String, i64>,
    #[serde(default)]
    pub events: Vec<EpochEvent>,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub model: Option<ModelSpend>,
    #[serde(default)]
    pub learning_rate: Option<f64>,
}

impl EpochRecord {
    /// The record stored as `json`; one that does not parse reads as empty
    /// (a record is never a reason for a screen or a resume to fail).
    pub fn parse(json: Option<&str>) -> EpochRecord {
        json.and_then(|j| serde_json::from_str(j).ok()).unwrap_or_default()
    }

    /// As stored.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The artifact moves, in order.
    pub fn artifact_events(&self) -> impl Iterator<Item = &ArtifactEvent> {
        self.events.iter().filter_map(|e| match e {
            EpochEvent::Artifact(a) => Some(a),
            _ => None,
        })
    }

    /// The updates it applied: (artifact, from_version, to_version).
    pub fn updates(&self) -> Vec<(String, i64, i64)> {
        self.artifact_events()
            .filter_map(|e| match e {
                ArtifactEvent::Update { artifact, from_version, to_version, .. } => {
                    Some((artifact.clone(), *from_version, *to_version))
                }
                ArtifactEvent::Rollback { .. } => None,
            })
            .collect()
    }

    /// Whether the epoch was one of the evaluations a noisy suite's update
    /// is verified on (it moves nothing).
    pub fn is_verify_sample(&self) -> bool {
        self.events.iter().any(|e| matches!(e, EpochEvent::Verification(VerificationEvent::VerifySample { .. })))
    }
}

/// One entry of an epoch's event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EpochEvent {
    /// An artifact moved: an update or a rollback.
    Artifact(ArtifactEvent),
    /// A step of a noisy suite's verification.
    Verification(VerificationEvent),
    /// A kind this version does not know, kept as written.
    Other(serde_json::Value),
}

impl EpochEvent {
    /// Its `type` as written: `update`, `rollback`, `verified`, `verify_sample`…
    pub fn kind(&self) -> &str {
        match self {
            EpochEvent::Artifact(ArtifactEvent::Update { .. }) => "update",
            EpochEvent::Artifact(ArtifactEvent::Rollback { .. }) => "rollback",
            EpochEvent::Verification(VerificationEvent::Verified { .. }) => "verified",
            EpochEvent::Verification(VerificationEvent::VerifySample { .. }) => "verify_sample",
            EpochEvent::Other(v) => v["type"].as_str().unwrap_or("?"),
        }
    }
}

/// An artifact move recorded in an epoch's record (seed 004 §12).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ArtifactEvent {
    Update {
        artifact: String,
        from_version: i64,
        to_version: i64,
        #[serde(default)]
        rationale: String,
        #[serde(default)]
        expected_loss_reduction: Option<f64>,
        #[serde(default)]
        confidence: Option<f64>,
        /// η when it was made (`None` in epochs recorded before it was kept).
        #[serde(default)]
        learning_rate: Option<f64>,
        /// What the optimizer said of its proposal beyond these (evolve's
        /// field and values, the tree's node).
        #[serde(flatten)]
        #[ts(skip)]
        details: BTreeMap<String, serde_json::Value>,
    },
    Rollback {
        artifact: String,
        from_version: i64,
        to_version: i64,
        #[serde(default)]
        mean_loss_prev: Option<f64>,
        #[serde(default)]
        mean_loss_current: Option<f64>,
        #[serde(default)]
        new_learning_rate: Option<f64>,
        /// Why the update went (`None` in epochs recorded before reasons were).
        #[serde(default)]
        reason: Option<RollbackReason>,
        #[serde(default)]
        holdout_mean_prev: Option<f64>,
        #[serde(default)]
        holdout_mean_current: Option<f64>,
        /// On a noisy suite: the evaluations behind the judgement, and the
        /// loss's run-to-run noise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional, type = "number")]
        evaluations: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        noise: Option<f64>,
        /// The paired evidence of the judgement, when there was any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        paired: Option<PairedEvidence>,
    },
}

impl ArtifactEvent {
    pub fn artifact(&self) -> &str {
        match self {
            ArtifactEvent::Update { artifact, .. } | ArtifactEvent::Rollback { artifact, .. } => artifact,
        }
    }
}

/// The steps of a noisy suite's verification of an update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum VerificationEvent {
    /// The update survived its series of evaluations.
    Verified {
        evaluations: u64,
        mean_loss_prev: Option<f64>,
        mean_loss_current: Option<f64>,
        noise: Option<f64>,
        kept: bool,
        paired: Option<PairedEvidence>,
    },
    /// One more evaluation of the versions an update made (`sample` of `of`).
    VerifySample { sample: u64, of: u64, update_epoch: i64, artifacts: Vec<String> },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_as_earlier_versions_wrote_it_reads_back_typed_and_unknown_kinds_are_kept() {
        let json = r#"{"artifacts":{"p":2},"events":[
            {"type":"update","artifact":"p","from_version":1,"to_version":2,"rationale":"r","confidence":0.5,
             "expected_loss_reduction":null,"learning_rate":0.5,"field":"step","old_value":1.0},
            {"type":"rollback","artifact":"q","from_version":3,"to_version":1,"mean_loss_prev":0.2,
             "mean_loss_current":0.3,"new_learning_rate":0.25,"reason":"holdout","holdout_mean_prev":null,
             "holdout_mean_current":null,"evaluations":4,"noise":0.01},
            {"type":"verify_sample","sample":2,"of":3,"update_epoch":7,"artifacts":["p"]},
            {"type":"from_the_future","x":1}],
            "note":null,"model":null,"learning_rate":0.25}"#;
        let record = EpochRecord::parse(Some(json));
        assert_eq!(record.updates(), vec![("p".to_string(), 1, 2)]);
        assert!(record.is_verify_sample());
        assert_eq!(record.learning_rate, Some(0.25));
        let Some(ArtifactEvent::Update { details, .. }) = record.artifact_events().next() else { panic!("{record:?}") };
        assert_eq!(details.get("field"), Some(&serde_json::json!("step")));
        let Some(ArtifactEvent::Rollback { reason, evaluations, .. }) = record.artifact_events().nth(1) else {
            panic!("{record:?}")
        };
        assert_eq!((*reason, *evaluations), (Some(RollbackReason::Holdout), Some(4)));
        assert!(matches!(&record.events[3], EpochEvent::Other(v) if v["type"] == "from_the_future"));
        // Written back, it reads the same.
        assert_eq!(EpochRecord::parse(Some(&record.to_json())), record);
    }

    #[test]
    fn a_record_that_does_not_parse_reads_as_empty() {
        assert_eq!(EpochRecord::parse(Some("{not json")), EpochRecord::default());
        assert_eq!(EpochRecord::parse(None), EpochRecord::default());
    }
}
