//! The Inbox: questions to a person (and the updates the approval gate holds),
//! their answers and decisions, and the requests that make them.

use super::*;

/// What the system wants a person to know about a question it asks.
#[derive(Debug, Clone, Default, Serialize, TS)]
pub struct InterventionContext {
    pub what: Option<String>,
    pub why: Option<String>,
    #[ts(type = "unknown")]
    pub evidence: Option<serde_json::Value>,
    /// Machine name of what an approval does, e.g. `double_budget`.
    pub proposed_action: Option<String>,
    /// The proposal in words.
    pub proposal: Option<String>,
    /// For an execution approval: exactly the commands approving allows.
    pub commands: Vec<crate::watch::PlannedCommand>,
}

#[derive(Debug, Clone, Serialize, TS)]
pub struct InterventionItem {
    pub id: i64,
    pub kind: InterventionKind,
    pub status: InterventionStatus,
    pub suite_id: Option<i64>,
    pub run_id: Option<i64>,
    pub task: Option<String>,
    pub subject: String,
    pub context: InterventionContext,
    pub answer: Option<String>,
    pub answer_text: Option<String>,
    pub created_at: String,
    pub answered_at: Option<String>,
    /// For a gated artifact update (`artifact_update`): what a person
    /// judges it on, and what became of it.
    pub update: Option<UpdateReview>,
}

/// What an intervention is about.
pub use crate::domain::InterventionKind;

/// Where an intervention stands. A question is `pending` until
/// `answered`; a notice (an intervention point in `notify` mode, waited on
/// by nobody) is `notice` until `dismissed` (then `answered_at` is when).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum InterventionStatus {
    Pending,
    Answered,
    Notice,
    Dismissed,
}

impl InterventionStatus {
    pub fn parse(s: &str) -> InterventionStatus {
        match s {
            "answered" => InterventionStatus::Answered,
            "notice" => InterventionStatus::Notice,
            "dismissed" => InterventionStatus::Dismissed,
            _ => InterventionStatus::Pending,
        }
    }
}

/// An artifact update the approval gate holds, as the Inbox shows it.
#[derive(Debug, Clone, Serialize, TS)]
pub struct UpdateReview {
    pub approval_id: i64,
    pub suite: String,
    pub artifact: String,
    pub artifact_kind: crate::artifact::ArtifactKind,
    /// The version the proposal starts from.
    pub parent_version: i64,
    pub status: crate::store::ApprovalStatus,
    /// What the run did meanwhile: waited, or went on with the versions it had.
    pub mode: crate::outer::ApprovalMode,
    pub optimizer: String,
    pub rationale: String,
    pub expected_loss_reduction: Option<f64>,
    pub confidence: Option<f64>,
    /// The epoch whose results the proposal answers, and its mean loss.
    pub epoch_num: i64,
    pub mean_loss: Option<f64>,
    /// The training tasks' losses in that epoch (the evidence the optimizer saw).
    pub tasks: Vec<ReviewTask>,
    /// The proposed content: what an edit starts from.
    pub proposed: String,
    /// The parent version against the proposal, or against a person's edit once approved with one.
    pub diff: LineDiff,
    pub edited: bool,
    pub reason: Option<String>,
    /// The version it will most likely become while it is not applied
    /// (the artifact's next free number; another update landing first
    /// would take it).
    pub next_version: Option<i64>,
    /// The version it became, once applied.
    pub applied_version: Option<i64>,
}

/// One task's loss in the evidence of a gated update.
#[derive(Debug, Clone, Serialize, Deserialize, TS)]
pub struct ReviewTask {
    pub task: String,
    pub loss: f64,
}

/// A person's decision on a gated artifact update.
#[derive(Debug, Clone, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct UpdateDecision {
    pub verdict: UpdateVerdictKind,
    /// Approve this content instead of the proposal (an edit of it).
    #[serde(default)]
    #[ts(optional)]
    pub content: Option<String>,
    /// Why, in a person's words (kept with a rejection).
    #[serde(default)]
    #[ts(optional)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum UpdateVerdictKind {
    Approve,
    Reject,
}

/// The inbox: pending questions first, then the open notices, then the
/// settled ones — answered questions and dismissed notices (history).
#[derive(Debug, Clone, Serialize, TS)]
pub struct Inbox {
    pub pending: Vec<InterventionItem>,
    /// What the system wants a person to know without waiting for them:
    /// newest first, until dismissed.
    pub notices: Vec<InterventionItem>,
    pub answered: Vec<InterventionItem>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    Approve,
    Reject,
    Hint,
}

impl AnswerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerKind::Approve => "approve",
            AnswerKind::Reject => "reject",
            AnswerKind::Hint => "hint",
        }
    }
}

/// A person's answer to an intervention; a hint needs its text.
#[derive(Debug, Clone, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    pub answer: AnswerKind,
    #[serde(default)]
    #[ts(optional)]
    pub text: Option<String>,
}

/// A request to move an artifact's active pointer.
#[derive(Debug, Clone, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RollbackRequest {
    pub version: i64,
}
