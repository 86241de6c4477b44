//! Artifacts as the Artifacts screen and the diff drawer show them: versions,
//! their tree, and line or field diffs between two.

use super::*;

/// Where a line of a diff comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum DiffTag {
    Equal,
    Delete,
    Insert,
}

/// One line of a line-based diff. Line numbers are 1-based; a deleted line
/// has only an old number, an inserted one only a new number.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct DiffLine {
    pub tag: DiffTag,
    pub old_line: Option<u32>,
    pub new_line: Option<u32>,
    pub text: String,
}

/// The line diff between two versions of an artifact.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct LineDiff {
    pub artifact: String,
    pub from_version: i64,
    pub to_version: i64,
    pub basis: DiffBasis,
    pub added: usize,
    pub removed: usize,
    pub lines: Vec<DiffLine>,
}

/// One version of an artifact, with its diff against its parent.
#[derive(Debug, Clone, Serialize, TS)]
pub struct VersionView {
    pub version: i64,
    pub content: String,
    pub parent_version: Option<i64>,
    pub created_at: Option<String>,
    pub epoch_id: Option<i64>,
    pub epoch_num: Option<i64>,
    /// The suite whose epoch created this version.
    pub suite: Option<String>,
    pub is_active: bool,
    /// `None` for version 0, the default.
    pub diff_from_parent: Option<LineDiff>,
    /// The experiment-tree node that made this version (`--optimizer tree`),
    /// with what the search decided about it.
    pub tree_node: Option<VersionTreeNode>,
    /// How the epochs that ran with it as the active version did; none
    /// when no closed epoch ran with it yet (a version made by the last
    /// epoch of a run is active but not measured until the next run).
    pub measured: Option<VersionMeasure>,
    /// An epoch rolled it back: the loss rose after it became active.
    pub rolled_back: bool,
}

/// The closed epochs that ran with a version, and their mean loss.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, TS)]
pub struct VersionMeasure {
    pub epochs: u32,
    /// The mean of those epochs' mean losses; none when none had one.
    pub mean_loss: Option<f64>,
}

/// The tree node a version came from.
#[derive(Debug, Clone, Serialize, TS)]
pub struct VersionTreeNode {
    pub node_id: i64,
    pub status: crate::outer::tree::NodeStatus,
}

/// An artifact as the list on the artifact screen shows it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ArtifactItem {
    pub name: String,
    /// text or json.
    pub kind: crate::artifact::ArtifactKind,
    pub description: String,
    /// `built-in`, or the name of the suite that declares it.
    pub origin: String,
    pub active_version: i64,
    /// Versions including 0.
    pub versions: usize,
}

/// Every version of an artifact, version 0 first (seed 004 §11
/// `/api/artifacts/{name}/versions`).
#[derive(Debug, Clone, Serialize, TS)]
pub struct ArtifactHistory {
    pub artifact: ArtifactItem,
    pub versions: Vec<VersionView>,
}
