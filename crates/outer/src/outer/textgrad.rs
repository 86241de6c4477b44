//! `textgrad`: the optimizer that asks a model to rewrite one artifact (seed
//! 004 §7).
//!
//! For every candidate artifact it makes one call carrying the artifact's
//! current content, the epoch's evidence (per-task losses with their
//! breakdowns and errors; held-out tasks never appear), the learning rate
//! verbatim, and — beyond the seed — what earlier applied proposals for that
//! artifact predicted and what they actually did, and in the tree search the
//! direction of an ideation proposal and the analyst's hints. Each reply is parsed
//! strictly, then leniently, then once more after telling the model what was
//! wrong (the LLM client does that). The seed's rejection rules drop a reply;
//! the winner is the argmax of expected loss reduction × confidence, so at
//! most one artifact changes per epoch and every change is easy to attribute
//! and to roll back.
//!
//! The optimizer's own system prompt is fixed here, not learnable: making it
//! learnable would need an optimizer for the optimizer.

use std::fmt::Write as _;

use serde::Deserialize;

use super::optimizer::{Candidate, Considered, Evidence, Optimizer, OptimizerError, Proposal, Step, TaskEvidence};
use crate::artifact::ArtifactKind;
use crate::llm::{CallRole, ChatMessage, ChatRequest, LlmClient, LlmError};

/// The longest proposed content accepted (seed 004 §7).
pub const MAX_CONTENT_CHARS: usize = 20_000;

/// Fixed on purpose: see the module docs.
pub const SYSTEM_PROMPT: &str = "\
You improve one text artifact (a prompt or a settings document) that steers an automated system. \
After each epoch the system runs a suite of tasks and scores every run with a loss in [0, 1] \
(lower is better). You see the artifact's current content, the epoch's per-task losses and what \
went wrong, earlier changes to this artifact with their predicted and observed effect, and a \
learning rate in (0, 1]: scale the size of your edit to it (small rate: a targeted edit; rate 1: a \
free rewrite). Do not repeat a change that was tried and did not help. Keep everything that is not \
the cause of a loss. For a JSON artifact, keep it valid JSON with the same fields and keep every \
value within its bounds.

Answer with one JSON object and nothing else:
{\"artifact\": \"<the artifact's name>\", \
\"proposed_content\": \"<the complete new content; the current content unchanged if no change is worth making>\", \
\"rationale\": \"<one or two sentences>\", \
\"expected_loss_reduction\": <number: how much the mean loss should fall>, \
\"confidence\": <number in [0, 1]>}";

/// The reply the model is asked for. Every field is required: a reply
/// without one is a rejection that names it, never a silent "no change".
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Reply {
    /// The name of the artifact the proposal changes.
    artifact: String,
    /// The complete new content.
    proposed_content: String,
    /// Why the change should lower the loss, in one or two sentences.
    rationale: String,
    /// How much the mean loss should fall.
    expected_loss_reduction: f64,
    /// From 0 to 1.
    confidence: f64,
}

pub struct TextGrad {
    client: LlmClient,
}

impl TextGrad {
    pub fn new(client: LlmClient) -> Self {
        TextGrad { client }
    }

    /// The messages of the call for one candidate (public so tests and the
    /// app can show exactly what is sent).
    pub fn messages(ev: &Evidence, cand: &Candidate) -> Vec<ChatMessage> {
        Self::messages_for(ev, cand, None)
    }

    /// The messages of a call asked for one kind of change (a screening
    /// search's move): the instruction closes the user message.
    pub fn messages_for(ev: &Evidence, cand: &Candidate, instruction: Option<&str>) -> Vec<ChatMessage> {
        let mut user = String::new();
        let _ = writeln!(user, "Suite: {}\nEpoch: {}", ev.suite, ev.epoch_num);
        let _ = writeln!(user, "Learning rate: {}", ev.learning_rate);
        let _ = writeln!(user, "Mean loss this epoch: {:.4}\n", ev.mean_loss);
        let _ = writeln!(user, "Per-task results (loss, status, loss parts, error):");
        for t in &ev.tasks {
            let _ = write!(user, "- {}: loss {:.4}, {}", t.task, t.loss, t.status);
            if let Some(b) = &t.breakdown {
                let _ = write!(
                    user,
                    "; eval {:.3}, critique {:.3}, gate rejections {:.3}, budget {:.3}, status {:.3}",
                    b.eval_component, b.critique_component, b.gate_component, b.budget_component, b.status_component
                );
            }
            if let Some(e) = &t.error {
                let _ = write!(user, "; error: {}", one_line(e, 300));
            }
            user.push('\n');
            write_failing(&mut user, t);
        }
        let history = ev.history.get(&cand.def.name).map(Vec::as_slice).unwrap_or_default();
        if !history.is_empty() {
            let _ = writeln!(user, "\nEarlier changes to this artifact (oldest first):");
            for h in history {
                if let Some(why) = &h.rejection {
                    let _ = writeln!(
                        user,
                        "- epoch {}: {} — refused before it ran: {}",
                        h.epoch_num,
                        one_line(&h.rationale, 300),
                        one_line(why, 200)
                    );
                    continue;
                }
                let predicted = h.expected_loss_reduction.map_or("–".to_string(), |v| format!("{v:+.4}"));
                let observed = h.observed_loss_reduction.map_or("not yet measured".to_string(), |v| format!("{v:+.4}"));
                let _ = writeln!(
                    user,
                    "- epoch {}: {} — predicted reduction {predicted}, observed {observed}{}",
                    h.epoch_num,
                    one_line(&h.rationale, 300),
                    if h.rolled_back { ", rolled back" } else { "" }
                );
            }
        }
        if !ev.guidance.is_empty() {
            let _ = writeln!(user, "\nDirection from the tree search (follow it where the evidence agrees):");
            for g in &ev.guidance {
                let _ = writeln!(user, "- {g}");
            }
        }
        let kind = match cand.def.kind {
            ArtifactKind::Text => "text",
            ArtifactKind::Json => "JSON",
        };
        let _ = writeln!(user, "\nArtifact `{}` ({kind}, version {}).", cand.def.name, cand.version);
        if !cand.def.description.is_empty() {
            let _ = writeln!(user, "What it controls: {}", cand.def.description);
        }
        if !cand.def.fields.is_empty() {
            let _ = writeln!(user, "Tunable fields and bounds:");
            for (name, b) in &cand.def.fields {
                let _ = writeln!(user, "- {name}: {} to {}{}", b.min, b.max, if b.integer { ", integer" } else { "" });
            }
        }
        let _ = write!(user, "Current content:\n{OPEN}\n{}\n{CLOSE}", cand.content);
        if let Some(instruction) = instruction {
            let _ = write!(user, "\n\nMake this kind of change — {instruction}");
        }
        vec![ChatMessage::system(SYSTEM_PROMPT), ChatMessage::user(user)]
    }

    /// One candidate's call and the checks of its reply. The error is kept
    /// when the model could not be used at all (gone, silent, over a limit),
    /// which is not a verdict on the proposal.
    pub async fn consider(
        &self,
        ev: &Evidence,
        cand: &Candidate,
        instruction: Option<&str>,
    ) -> (Considered, Option<LlmError>) {
        match self.call(ev, cand, instruction).await {
            Ok(considered) => (considered, None),
            Err(e) => {
                let considered = Considered {
                    artifact: cand.def.name.clone(),
                    parent_version: cand.version,
                    proposal: None,
                    rejection: Some(self.client.clip(&rejection_of(&e))),
                    screening: None,
                };
                (considered, is_unavailable(&e).then_some(e))
            }
        }
    }

    /// One proposer call on `messages`.
    async fn ask(
        &self,
        messages: &[ChatMessage],
        budget: u32,
        shape: impl Fn(&mut serde_json::Value),
    ) -> Result<Reply, LlmError> {
        let request = ChatRequest::new(messages.to_vec()).temperature(0.0).role(CallRole::Proposer).max_tokens(budget);
        Ok(self.client.chat_json_shaped::<Reply>(request, shape).await?.value)
    }

    async fn call(&self, ev: &Evidence, cand: &Candidate, instruction: Option<&str>) -> Result<Considered, LlmError> {
        let rejected = |reason: String, proposal: Option<Proposal>| {
            Ok(Considered {
                artifact: cand.def.name.clone(),
                parent_version: cand.version,
                proposal,
                rejection: Some(reason),
                screening: None,
            })
        };
        let budget = reply_budget(&cand.content, self.client.config().max_tokens_for(Some(CallRole::Proposer)));
        // String lengths the budget leaves room for: a server that enforces
        // the schema closes the strings in time, so even a small model's
        // reply is whole (about three characters a token).
        let content_chars = (budget as usize).saturating_sub(200) * 3;
        let shape = |schema: &mut serde_json::Value| {
            crate::llm::bound_properties(
                schema,
                &[("proposed_content", content_chars.min(MAX_CONTENT_CHARS)), ("rationale", 400), ("artifact", 200)],
            );
        };
        let mut messages = Self::messages_for(ev, cand, instruction);
        let mut reply = self.ask(&messages, budget, &shape).await?;
        let mut content = without_framing(&reply.proposed_content, &cand.content);
        // A small proposer often hands the current text back unchanged
        // (Qwen2.5-Coder-1.5B did in every epoch of textgrad and the tree
        // on the support suites): told so once, in the same conversation,
        // it writes a change. One more call, and only then.
        if reply.artifact.trim() == cand.def.name && content == cand.content {
            messages.push(ChatMessage::assistant(
                serde_json::json!({ "artifact": reply.artifact, "proposed_content": reply.proposed_content })
                    .to_string(),
            ));
            messages.push(ChatMessage::user(AGAIN));
            reply = self.ask(&messages, budget, &shape).await?;
            content = without_framing(&reply.proposed_content, &cand.content);
        }
        let name = reply.artifact.trim().to_string();
        if name.is_empty() {
            return rejected("the model proposed no change (`artifact` is empty)".into(), None);
        }
        let proposal = Proposal {
            artifact: name.clone(),
            parent_version: cand.version,
            content: content.clone(),
            rationale: self.client.clip(&reply.rationale),
            expected_loss_reduction: Some(reply.expected_loss_reduction).filter(|v| v.is_finite()),
            confidence: Some(reply.confidence).filter(|v| v.is_finite()).map(|c| c.clamp(0.0, 1.0)),
            details: [("optimizer".to_string(), serde_json::json!("textgrad"))].into(),
        };
        if name != cand.def.name && !ev.candidates.iter().any(|c| c.def.name == name) {
            return rejected(format!("unknown artifact `{name}` (not a candidate)"), Some(proposal));
        }
        // A reply may name another candidate; it is judged against that one's content.
        let target = ev.candidates.iter().find(|c| c.def.name == name).unwrap_or(cand);
        let proposal = Proposal { parent_version: target.version, ..proposal };
        if content.trim().is_empty() {
            return rejected("the proposed content is empty".into(), Some(proposal));
        }
        if content == target.content {
            return rejected(
                "the model proposed no change: the content is identical to the current version".into(),
                Some(proposal),
            );
        }
        // The same words laid out otherwise are the same prompt.
        if target.seen.iter().any(|seen| same_words(seen) == same_words(&content)) {
            return rejected(
                "the proposed content repeats a version this artifact already had (measured before, in this run \
                 or an earlier one): its runs could only repeat a known measurement"
                    .into(),
                Some(proposal),
            );
        }
        let chars = content.chars().count();
        if chars > MAX_CONTENT_CHARS {
            return rejected(
                format!("the proposed content has {chars} characters, over the limit of {MAX_CONTENT_CHARS}"),
                Some(proposal),
            );
        }
        if target.def.kind == ArtifactKind::Json
            && let Err(e) = target.def.validate_json(&content)
        {
            return rejected(format!("invalid settings for `{name}`: {e}"), Some(proposal));
        }
        // A prompt artifact with a structure (the sectioned strategy
        // templates) must keep it, or every agent run would fail on it.
        if let Err(e) = crate::executor::check_prompt_artifact(&name, &content) {
            return rejected(format!("invalid `{name}`: {e}"), Some(proposal));
        }
        Ok(Considered {
            artifact: name,
            parent_version: target.version,
            proposal: Some(proposal),
            rejection: None,
            screening: None,
        })
    }
}

/// What the proposer is told when its reply is the current content unchanged.
const AGAIN: &str = "That is the current content, unchanged. Reply again in the same JSON form with a different \
content: the change the failing results above call for.";

/// The reply budget of a proposal for `content`: room for a rewrite about
/// twice as long (at about three characters a token) and the other fields,
/// never above the configured proposer budget. A small model that rambles
/// inside `proposed_content` is cut off after seconds, not minutes, and a
/// frontier model is not paid for room it does not need.
pub fn reply_budget(content: &str, ceiling: u32) -> u32 {
    let content_tokens = u32::try_from(content.chars().count() / 3).unwrap_or(u32::MAX);
    content_tokens.saturating_mul(2).saturating_add(384).min(ceiling.max(1))
}

/// Why a call gave no proposal, short enough for an epoch's outcome line:
/// "unusable reply: missing field `artifact`", "cut off at 4096 tokens",
/// "the call failed: no answer within 120.0 s (2 attempts)".
pub fn rejection_of(e: &LlmError) -> String {
    match e {
        LlmError::InvalidJson { .. } | LlmError::CutOff { .. } => format!("unusable reply: {}", e.short_reason()),
        _ => format!("the call failed: {}", e.short_reason()),
    }
}

/// The model could not be used at all: gone, silent, or answering too much.
/// Not a verdict on any proposal. (A spent model budget is no failure: the
/// epoch closes with that reason and the run ends cleanly.)
fn is_unavailable(e: &LlmError) -> bool {
    e.is_transient() || matches!(e, LlmError::ReplyTooLarge { .. })
}

/// The markers the proposer is shown the current content between.
const OPEN: &str = "<<<";
const CLOSE: &str = ">>>";

/// `proposed` without the markers the current content was shown between: a
/// small proposer copies them into its reply ("<<<Label the message.>>>"),
/// or pieces of them on lines of their own ("<\n<\nLabel the message."),
/// and a task model then reads them as part of its prompt. Kept when the
/// current content uses them itself.
fn without_framing(proposed: &str, current: &str) -> String {
    let marker_line = |l: &str| {
        let t = l.trim();
        !t.is_empty() && t.chars().all(|c| c == '<' || c == '>')
    };
    let marked = |s: &str| s.contains(OPEN) || s.contains(CLOSE) || s.lines().any(marker_line);
    if marked(current) || !marked(proposed) {
        return proposed.to_string();
    }
    let bare = proposed.replace(OPEN, "").replace(CLOSE, "");
    let lines: Vec<&str> = bare.lines().map(str::trim_end).collect();
    // Lines the markers stood alone on are gone, not left blank.
    let kept: Vec<&str> = lines
        .iter()
        .zip(proposed.lines())
        .filter(|(now, was)| !(now.trim().is_empty() && !was.trim().is_empty()) && !marker_line(now))
        .map(|(now, _)| *now)
        .collect();
    let text = kept.join("\n").trim().to_string();
    if current.ends_with('\n') { format!("{text}\n") } else { text }
}

/// The same words laid out otherwise are the same prompt: `s` with its
/// whitespace runs made single spaces, for comparing texts.
pub(super) fn same_words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The valid proposal with the highest [`score`]; the first of equal
/// scores wins, so the choice is reproducible.
pub(super) fn best_by_score(considered: &[Considered]) -> Option<Proposal> {
    considered
        .iter()
        .filter(|c| c.rejection.is_none())
        .filter_map(|c| c.proposal.as_ref())
        .fold(None::<&Proposal>, |best, p| match best {
            Some(b) if score(b) >= score(p) => Some(b),
            _ => Some(p),
        })
        .cloned()
}

/// Expected loss reduction × confidence; a missing number counts as 0.
pub fn score(p: &Proposal) -> f64 {
    p.expected_loss_reduction.unwrap_or(0.0) * p.confidence.unwrap_or(0.0)
}

/// A task's failing examples, under its line: what was asked, what was
/// expected and what came out — the evidence a proposer reasons from.
fn write_failing(user: &mut String, t: &TaskEvidence) {
    if t.failing.is_empty() {
        return;
    }
    let wrong = t.failing.len();
    let _ = writeln!(user, "  Examples it got wrong ({wrong} shown of {} scored, worst first):", t.examples);
    for e in &t.failing {
        let _ = write!(user, "  - [{}] score {:.2}", one_line(&e.id, 60), e.score);
        for (label, text) in
            [("input", &e.input), ("expected", &e.expected), ("output", &e.output), ("feedback", &e.feedback)]
        {
            if let Some(text) = text {
                let _ = write!(user, "; {label}: {}", one_line(text, 200));
            }
        }
        user.push('\n');
    }
}

/// `s` on one line, cut at `max` characters with an ellipsis.
pub(super) fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max { flat } else { flat.chars().take(max).collect::<String>() + "…" }
}

#[async_trait::async_trait]
impl Optimizer for TextGrad {
    fn name(&self) -> &'static str {
        "textgrad"
    }

    async fn propose(&self, ev: &Evidence) -> Result<Step, OptimizerError> {
        // One call per candidate, in order: the calls are few and a local
        // model serves one at a time anyway.
        let mut considered = Vec::with_capacity(ev.candidates.len());
        let mut unavailable = Vec::new();
        for cand in &ev.candidates {
            let (c, error) = self.consider(ev, cand, None).await;
            considered.push(c);
            unavailable.extend(error);
        }
        // Not one call reached a usable model: the run cannot learn, and
        // closing epoch after epoch without an optimizer would only spend
        // the tasks' time. The epoch stays open; the next run resumes it.
        if let Some(last) = unavailable.last()
            && unavailable.len() == ev.candidates.len()
        {
            return Err(OptimizerError(format!(
                "textgrad could not use the model for any of the {}: {last}\n  hint: the epoch's runs are kept; \
                 once the model server answers again, `attractor run` on the same suite resumes the epoch",
                crate::counted(ev.candidates.len(), "artifact")
            )));
        }
        let winner = best_by_score(&considered);
        if let Some(w) = &winner {
            tracing::info!(artifact = %w.artifact, score = score(w), "textgrad picked a proposal");
        }
        Ok(Step { winner, considered, idle: None })
    }
}

#[cfg(test)]
mod tests {
    use super::{reply_budget, without_framing};

    #[test]
    fn the_markers_a_proposer_copies_from_its_request_are_taken_out() {
        let current = "Label the message.\n";
        assert_eq!(
            without_framing("<<<Label the message.>>>\n\nExamples:\n- a → b", current),
            "Label the message.\n\nExamples:\n- a → b\n"
        );
        assert_eq!(
            without_framing("<<<\nLabel the message.\nExamples:\n- x\n>>>\nExamples:\n- y\n>>>\n", current),
            "Label the message.\nExamples:\n- x\nExamples:\n- y\n"
        );
        // Pieces of them on lines of their own (Qwen2.5-Coder-1.5B's reply).
        assert_eq!(
            without_framing("<\n<\nLabel the message.\n\nPlease give more context.\n", current),
            "Label the message.\n\nPlease give more context.\n"
        );
        assert_eq!(without_framing("Label each message.", current), "Label each message.");
        assert_eq!(without_framing("Reply with a < b when unsure.", current), "Reply with a < b when unsure.");
        // A prompt that uses the markers itself keeps them.
        assert_eq!(without_framing("Quote it as <<<text>>>.", "Quote it as <<<x>>>."), "Quote it as <<<text>>>.");
    }

    #[test]
    fn the_reply_budget_grows_with_the_artifact_up_to_the_ceiling() {
        assert_eq!(reply_budget("Label the message.", 2048), 396);
        assert_eq!(reply_budget(&"x".repeat(1500), 2048), 1384);
        assert_eq!(reply_budget(&"x".repeat(30_000), 2048), 2048);
        assert_eq!(reply_budget("", 100), 100);
    }
}
