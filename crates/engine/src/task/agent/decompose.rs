//! Splitting an agent task into subtasks (seed 002 Part 9, seed 003's
//! planner): asking the model for the split, checking what it proposed, and
//! the specifications the subtask and integration trajectories work from.
//!
//! The split is asked for in one structured call. The reply is parsed like
//! every structured reply (strictly, then leniently, then one correction
//! round — [`LlmClient::chat_json`]) and then checked: at least two subtasks
//! and at most the configured number, each with a specification; the checks
//! (overseers) it names must be the task's own. A reply that fails is never
//! fatal: the caller goes on without splitting and records why.
//!
//! The subtasks run one after another, each in a copy of the workspace its
//! predecessor left, so each builds on the work before it; the integration
//! trajectory then starts from the last one's result and is measured by all
//! of the task's overseers. This chain is our reading of the seed's "merge":
//! nothing has to be merged because nothing ran apart.

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::engine::{DecomposedBudget, StrategyKind};
use crate::executor::{LlmExecutorConfig, PromptInputs, PromptTexts, WorkspaceView, build_prompt, view_for};
use crate::llm::{CallRole, ChatMessage, ChatRequest, LlmClient, LlmError};
use crate::suite::Overseer;
use crate::workspace::Workspace;

/// Characters of a subtask's specification kept at most.
const MAX_SPEC_CHARS: usize = 4000;
/// Characters of a subtask's name kept at most.
const MAX_NAME_CHARS: usize = 80;
/// Criteria of one subtask kept at most, and characters of each.
const MAX_CRITERIA: usize = 12;
const MAX_CRITERION_CHARS: usize = 400;

/// What the planner must reply with.
pub const DECOMPOSITION_CONTRACT: &str = r#"Reply with one JSON object and nothing else:
{
  "rationale": "why this split, in one or two sentences",
  "subtasks": [
    {
      "name": "a short name",
      "specification": "what this subtask must achieve, precise enough to be done on its own",
      "overseers": ["the names of the task's checks that measure this subtask"],
      "criteria": ["one falsifiable sentence per thing that holds when the subtask is done"]
    }
  ]
}
Rules: list the subtasks in the order they are to be done (each one continues from the work of those before it);
use only check names from the list you are given; do not edit any file in this reply."#;

/// One subtask as it will be run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subtask {
    pub name: String,
    pub specification: String,
    /// The task's overseers that measure it (by name).
    pub overseers: Vec<String>,
    pub criteria: Vec<String>,
}

/// A usable split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decomposition {
    pub rationale: String,
    pub subtasks: Vec<Subtask>,
    /// What the check changed in the proposal (unknown check names dropped…).
    pub notes: Vec<String>,
}

/// A split in progress, kept with the split trajectory's state so a
/// restarted run continues with the next subtask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coordination {
    /// Asked for before the first attempt (else the engine chose `decompose`).
    pub proactive: bool,
    pub decomposition: Decomposition,
    /// The subtasks' trajectory ids, in order.
    pub children: Vec<String>,
    pub integration: String,
    pub budgets: DecomposedBudget,
    /// The split trajectory's commit the first subtask starts from.
    pub start_commit: String,
}

/// The reply's shape, read leniently: a subtask may come as a bare sentence
/// (what the executor's own decompose reply used to hold), fields under
/// their common synonyms.
/// `subtasks` is required: an empty object is a rejection naming the
/// missing field, not an empty split.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Reply {
    #[serde(default)]
    rationale: String,
    subtasks: Vec<ReplySubtask>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum ReplySubtask {
    Sentence(String),
    Full {
        #[serde(default, alias = "title")]
        name: String,
        #[serde(default, alias = "spec", alias = "description", alias = "intent")]
        specification: String,
        #[serde(default, alias = "checks")]
        overseers: Vec<String>,
        #[serde(default, alias = "success_criteria")]
        criteria: Vec<String>,
    },
}

/// What asking for a split produced: the split or why there is none, and
/// the tokens spent either way.
#[derive(Debug)]
pub struct Proposal {
    pub result: Result<Decomposition, String>,
    pub tokens: u64,
}

/// Limits a proposal is checked against.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub min_subtasks: usize,
    pub max_subtasks: usize,
}

fn cut(text: &str, max: usize) -> (String, bool) {
    let text = text.trim();
    if text.chars().count() <= max {
        (text.to_string(), false)
    } else {
        (text.chars().take(max).collect::<String>() + "…", true)
    }
}

/// Checks a parsed reply against the task's overseers and the limits.
fn check(reply: Reply, overseers: &[Overseer], limits: Limits) -> Result<Decomposition, String> {
    let n = reply.subtasks.len();
    if n == 0 {
        return Err("the model proposed no subtasks".to_string());
    }
    if n < limits.min_subtasks.max(1) {
        return Err(format!(
            "the model proposed {}; a split needs at least {}, else it is the task itself",
            crate::counted(n, "subtask"),
            limits.min_subtasks
        ));
    }
    if n > limits.max_subtasks {
        return Err(format!("the model proposed {n} subtasks; at most {} are run", limits.max_subtasks));
    }
    let known: Vec<&str> = overseers.iter().map(|o| o.name.as_str()).collect();
    let mut notes = Vec::new();
    let mut subtasks = Vec::with_capacity(n);
    for (i, s) in reply.subtasks.into_iter().enumerate() {
        let number = i + 1;
        let (name, specification, named, criteria) = match s {
            ReplySubtask::Sentence(text) => (String::new(), text, Vec::new(), Vec::new()),
            ReplySubtask::Full { name, specification, overseers, criteria } => {
                (name, specification, overseers, criteria)
            }
        };
        if specification.trim().is_empty() {
            return Err(format!("subtask {number} has no specification (field `specification`)"));
        }
        let (specification, cut_spec) = cut(&specification, MAX_SPEC_CHARS);
        if cut_spec {
            notes.push(format!("subtask {number}: the specification was cut at {MAX_SPEC_CHARS} characters"));
        }
        let name = if name.trim().is_empty() { format!("subtask {number}") } else { cut(&name, MAX_NAME_CHARS).0 };
        let mut chosen: Vec<String> = Vec::new();
        let mut unknown: Vec<String> = Vec::new();
        for wanted in named.iter().map(|w| w.trim()).filter(|w| !w.is_empty()) {
            match known.iter().find(|k| k.eq_ignore_ascii_case(wanted)) {
                Some(k) if !chosen.iter().any(|c| c == k) => chosen.push(k.to_string()),
                Some(_) => {}
                None => unknown.push(wanted.to_string()),
            }
        }
        if !unknown.is_empty() {
            notes.push(format!(
                "subtask {number}: ignored {} the task does not have: {} (it has: {})",
                if unknown.len() == 1 { "a check" } else { "checks" },
                unknown.join(", "),
                known.join(", ")
            ));
        }
        if chosen.is_empty() {
            // A subtask with no check could never be measured, so never converge.
            chosen = known.iter().map(|k| k.to_string()).collect();
            if !known.is_empty() {
                notes.push(format!("subtask {number}: named none of the task's checks, so all of them measure it"));
            }
        }
        let criteria: Vec<String> = criteria
            .iter()
            .map(|c| c.trim())
            .filter(|c| !c.is_empty())
            .take(MAX_CRITERIA)
            .map(|c| cut(c, MAX_CRITERION_CHARS).0)
            .collect();
        subtasks.push(Subtask { name, specification, overseers: chosen, criteria });
    }
    Ok(Decomposition { rationale: cut(&reply.rationale, MAX_SPEC_CHARS).0, subtasks, notes })
}

/// Parses a planner reply's text (strictly, then leniently) and checks it.
/// For replies that did not come through [`propose`] (tests, other callers).
pub fn parse_proposal(text: &str, overseers: &[Overseer], limits: Limits) -> Result<Decomposition, String> {
    let (reply, _) = crate::llm::parse_reply::<Reply>(text).map_err(|e| format!("the reply is not a split: {e}"))?;
    check(reply, overseers, limits)
}

/// Everything [`propose`] needs besides the workspace.
pub struct ProposalRequest<'a> {
    pub client: &'a LlmClient,
    pub executor: &'a LlmExecutorConfig,
    /// The task's `model:`, which overrides the executor's.
    pub model: Option<&'a str>,
    pub texts: &'a PromptTexts,
    pub inputs: &'a PromptInputs,
    pub overseers: &'a [Overseer],
    pub limits: Limits,
    pub cancel: Option<watch::Receiver<bool>>,
}

/// Asks the model for a split of the task as `inputs` describe it. Never
/// fails: a model error, an unusable reply or a split that does not pass
/// the checks comes back as the reason there is no split. `Err` only when
/// cancelled.
pub async fn propose(req: ProposalRequest<'_>, ws: &Workspace) -> Result<Proposal, Cancelled> {
    let (budget, focus) = view_for(StrategyKind::Decompose, req.inputs, req.executor.view);
    let view = match WorkspaceView::gather(ws, budget, &focus).await {
        Ok(v) => v,
        Err(e) => return Ok(Proposal { result: Err(format!("the workspace could not be read: {e}")), tokens: 0 }),
    };
    let prompt = build_prompt(StrategyKind::Decompose, req.inputs, req.texts, &view, None);
    let system = format!("{}\n\n{DECOMPOSITION_CONTRACT}", prompt.system);
    let mut checks = String::from("\n## Checks of this task (name the ones that measure each subtask)\n\n");
    for o in req.overseers {
        checks.push_str(&format!("- `{}` ({}): `{}`\n", o.name, o.kind.as_str(), o.command));
    }
    if req.overseers.is_empty() {
        checks.push_str("(none)\n");
    }
    let user = format!("{}{checks}", prompt.user);
    let mut chat = ChatRequest::new(vec![ChatMessage::system(system), ChatMessage::user(user)])
        .temperature(req.executor.temperature)
        .json_mode(true)
        .role(CallRole::Decomposer)
        .no_cache();
    if let Some(model) = req.model.map(str::to_string).or_else(|| req.executor.model.clone()) {
        chat = chat.model(model);
    }
    if let Some(max) = req.executor.max_tokens {
        chat = chat.max_tokens(max);
    }
    if let Some(secs) = req.executor.timeout_secs.filter(|s| s.is_finite() && *s > 0.0) {
        chat = chat.timeout(crate::time::secs(secs));
    }
    let prompt_chars = chat.messages.iter().map(|m| m.content.len()).sum::<usize>();
    let call = req.client.chat_json::<Reply>(chat);
    let reply = match req.cancel {
        None => call.await,
        Some(mut cancel) => {
            let cancelled = async move {
                loop {
                    if *cancel.borrow_and_update() {
                        return;
                    }
                    if cancel.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
            };
            tokio::select! {
                reply = call => reply,
                _ = cancelled => return Err(Cancelled),
            }
        }
    };
    Ok(match reply {
        Ok(s) => {
            let tokens = match s.usage.total_tokens {
                0 if s.reply.usage.is_none() => ((prompt_chars + s.reply.content.len()) / 4) as u64,
                n => n,
            };
            Proposal { result: check(s.value, req.overseers, req.limits), tokens }
        }
        Err(e @ (LlmError::InvalidJson { .. } | LlmError::CutOff { .. })) => Proposal {
            result: Err(format!("the model's reply is not a usable split: {}", e.short_reason())),
            tokens: e.spent().1.total_tokens,
        },
        Err(e) => Proposal { result: Err(format!("the model could not be asked for a split: {e}")), tokens: 0 },
    })
}

/// The run was stopped while waiting for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

/// The specification of subtask `index` (0-based) of `of`.
pub fn subtask_specification(parent: &str, subtask: &Subtask, index: usize, of: usize) -> String {
    let mut s = format!(
        "This is subtask {} of {of} of a larger task: do this part only; the other subtasks and a final \
         integration pass do the rest.\n\nSubtask — {}:\n{}\n",
        index + 1,
        subtask.name,
        subtask.specification.trim()
    );
    if !subtask.criteria.is_empty() {
        s.push_str("\nDone when:\n");
        for c in &subtask.criteria {
            s.push_str(&format!("- {c}\n"));
        }
    }
    s.push_str(&format!("\nThe larger task, for context:\n{}\n", parent.trim()));
    s
}

/// How one subtask went, for the integration's specification.
pub struct SubtaskOutcome<'a> {
    pub subtask: &'a Subtask,
    pub status: &'a str,
    pub level: f64,
}

/// The integration trajectory's specification: the task itself, with what
/// the subtasks did and how each ended.
pub fn integration_specification(parent: &str, outcomes: &[SubtaskOutcome<'_>]) -> String {
    let mut s = String::from(
        "Integrate and verify the whole task. It was split into subtasks, carried out one after another in this \
         workspace:\n",
    );
    for (i, o) in outcomes.iter().enumerate() {
        s.push_str(&format!(
            "{}. {} — {} (ended {}, level {:.2})\n",
            i + 1,
            o.subtask.name,
            first_line(&o.subtask.specification),
            o.status,
            o.level
        ));
    }
    s.push_str(
        "\nParts that pass their own checks do not always work together. Make the whole satisfy the task below and \
         pass every one of its checks; repair whatever a part left unfinished or broke.\n\nThe task:\n",
    );
    s.push_str(parent.trim());
    s.push('\n');
    s
}

fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    cut(line, 200).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::OverseerKind;

    fn checks() -> Vec<Overseer> {
        vec![Overseer::new("low", OverseerKind::Test, "true"), Overseer::new("high", OverseerKind::Test, "true")]
    }

    const LIMITS: Limits = Limits { min_subtasks: 2, max_subtasks: 4 };

    #[test]
    fn a_full_reply_is_taken_with_its_checks_matched_by_name() {
        let text = r#"{"rationale": "halves", "subtasks": [
            {"name": "low", "specification": "1..5", "overseers": ["LOW"], "criteria": ["1..5 pass", " "]},
            {"name": "high", "specification": "6..10", "overseers": ["high", "lint"], "criteria": []}]}"#;
        let d = parse_proposal(text, &checks(), LIMITS).unwrap();
        assert_eq!(d.subtasks.len(), 2);
        assert_eq!(d.subtasks[0].overseers, vec!["low"]);
        assert_eq!(d.subtasks[0].criteria, vec!["1..5 pass"]);
        assert_eq!(d.subtasks[1].overseers, vec!["high"]);
        assert!(d.notes[0].contains("lint"), "{:?}", d.notes);
    }

    #[test]
    fn bare_sentences_and_fenced_replies_are_read_leniently() {
        let text = "Here you go:\n```json\n{\"subtasks\": [\"first part\", \"second part\"]}\n```";
        let d = parse_proposal(text, &checks(), LIMITS).unwrap();
        assert_eq!(d.subtasks[0].name, "subtask 1");
        assert_eq!(d.subtasks[1].specification, "second part");
        assert_eq!(d.subtasks[1].overseers, vec!["low", "high"], "no check named: all of them");
    }

    #[test]
    fn unusable_splits_are_refused_with_the_reason() {
        let err = |t: &str| parse_proposal(t, &checks(), LIMITS).unwrap_err();
        assert!(err("not json at all").contains("not a split"));
        assert!(err(r#"{"subtasks": []}"#).contains("no subtasks"));
        assert!(err(r#"{"rationale": "x"}"#).contains("missing field `subtasks`"));
        assert!(err(r#"{"subtasks": ["only one"]}"#).contains("at least 2"));
        assert!(err(r#"{"subtasks": ["a", "b", "c", "d", "e"]}"#).contains("at most 4"));
        assert!(err(r#"{"subtasks": [{"name": "a", "specification": " "}, "b"]}"#).contains("subtask 1"));
    }

    #[test]
    fn a_subtask_specification_carries_its_criteria_and_the_larger_task() {
        let s = Subtask {
            name: "low".into(),
            specification: "Make 1..5 right.".into(),
            overseers: vec![],
            criteria: vec!["tests 1 to 5 pass".into()],
        };
        let text = subtask_specification("Implement square(n).", &s, 0, 2);
        assert!(text.starts_with("This is subtask 1 of 2"));
        assert!(text.contains("Done when:\n- tests 1 to 5 pass"));
        assert!(text.contains("Implement square(n)."));
        let integration = integration_specification(
            "Implement square(n).",
            &[SubtaskOutcome { subtask: &s, status: "converged", level: 1.0 }],
        );
        assert!(integration.contains("1. low — Make 1..5 right. (ended converged, level 1.00)"), "{integration}");
        assert!(integration.ends_with("Implement square(n).\n"));
    }
}
