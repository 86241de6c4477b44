//! Watched folders and the files and runs the watcher keeps for them.

use super::*;

/// A folder the watcher keeps an eye on.
#[derive(Debug, Clone, Serialize, TS)]
pub struct WatchedFolderView {
    pub id: i64,
    pub path: String,
    pub added_at: String,
    /// Whether the folder is there now (a missing one is remembered and
    /// scanned again when it is back).
    pub exists: bool,
    /// Files found in it (removed ones included).
    pub files: usize,
}

/// The approval question of a watched file's content.
#[derive(Debug, Clone, Serialize, TS)]
pub struct ApprovalView {
    pub intervention_id: i64,
    pub status: CommandApproval,
    pub commands: Vec<crate::watch::PlannedCommand>,
}

/// The run the watcher queued for a `run: auto` file's current content.
#[derive(Debug, Clone, Serialize, TS)]
pub struct WatchedRunView {
    pub id: i64,
    pub status: WatchedRunStatus,
    pub launch_id: Option<i64>,
    pub suite_id: Option<i64>,
    pub queued_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub error: Option<String>,
}

/// A suite or task file the watcher found.
#[derive(Debug, Clone, Serialize, TS)]
pub struct WatchedFileView {
    pub id: i64,
    pub folder_id: i64,
    pub path: String,
    pub kind: WatchedFileKind,
    pub status: WatchedFileStatus,
    pub suite: Option<String>,
    pub suite_id: Option<i64>,
    pub run_mode: WatchedRunMode,
    /// The first 12 hex digits of the content's SHA-256.
    pub content_hash: String,
    /// Every problem of an invalid file, located.
    pub issues: Vec<SuiteIssueView>,
    /// Why a valid file could not be registered.
    pub error: Option<String>,
    pub approval: Option<ApprovalView>,
    pub run: Option<WatchedRunView>,
    pub first_seen_at: String,
    pub updated_at: String,
    pub removed_at: Option<String>,
}

/// The Watched Folders screen: folders, their files, and whether this
/// process is watching at all.
#[derive(Debug, Clone, Serialize, TS)]
pub struct WatchedFolders {
    pub watching: bool,
    pub folders: Vec<WatchedFolderView>,
    pub files: Vec<WatchedFileView>,
}

/// A folder to watch.
#[derive(Debug, Clone, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct WatchFolderRequest {
    pub path: String,
}
