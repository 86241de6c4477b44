//! Ideation on stall (seed 001's research escalation): when the tree search
//! is about to stop because `stall` rounds brought no new best, two model
//! calls look at the tree from two sides before it gives up.
//!
//! - **Frontier extrapolation** sees the frontier: each node's per-task
//!   training losses, its change against its parent (the artifact, a unified
//!   diff, the rationale) and what that change gained. Question: which of
//!   these directions is worth pushing further?
//! - **Failure analysis** sees the children that regressed or were rejected
//!   (what each tried and how it fared) and the best node's per-task
//!   evidence. Question: what went wrong, and what to try instead?
//!
//! Each answers with proposals (artifact, parent node, direction, expected
//! loss reduction, confidence), parsed strictly, then leniently, then once
//! more after telling the model what was wrong — as textgrad's replies are.
//! [`rank`] orders them by expected reduction × confidence (frontier
//! extrapolation first on a tie, as the seed ranks the ideators); the best
//! become the next round's first briefs, and the direction goes into that
//! child's text-gradient call.
//!
//! Both system prompts are fixed here, not learnable, like textgrad's. What
//! goes into the calls is built by the runner from prompt-safe parts only:
//! training tasks, node feedback that never quotes a pre-verify finding, no
//! held-out text or scores.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::optimizer::TaskEvidence;
use crate::llm::{CallRole, ChatMessage, ChatRequest, LlmClient};

/// Proposals kept from one call.
pub const MAX_PROPOSALS: usize = 5;
/// The longest direction kept (characters).
pub const MAX_DIRECTION_CHARS: usize = 1_000;

/// Fixed on purpose: see the module docs.
pub const FRONTIER_SYSTEM_PROMPT: &str = "\
You advise a tree search that improves text artifacts (prompts and settings documents) steering an \
automated system. Each node of the tree is a set of artifact versions, scored by a loss in [0, 1] per \
task (lower is better); a child changes one artifact of its parent. The search has stalled: recent \
rounds found no new best. You see the frontier — the best nodes — with each one's change against its \
parent and what that change gained. Extrapolate: which direction that already paid off is worth \
pushing further, or combining with another, and how exactly? Propose concrete directions for single \
artifacts, not rewrites of everything.

Answer with one JSON object and nothing else:
{\"proposals\": [{\"artifact\": \"<an artifact name from the list>\", \"parent\": <the node id to start \
from, or null for the best node>, \"direction\": \"<what to change and why, two or three sentences>\", \
\"expected_loss_reduction\": <number>, \"confidence\": <number in [0, 1]>}]}
Give at most five proposals; an empty list is a valid answer.";

/// Fixed on purpose: see the module docs.
pub const FAILURE_SYSTEM_PROMPT: &str = "\
You advise a tree search that improves text artifacts (prompts and settings documents) steering an \
automated system. Each node of the tree is a set of artifact versions, scored by a loss in [0, 1] per \
task (lower is better); a child changes one artifact of its parent. The search has stalled: recent \
rounds found no new best. You see the children that failed — no better than their parent, or rejected \
before evaluation — with what each tried, and the per-task results of the best node. Analyse: what do \
the failures have in common, what does the evidence say the real problem is, and what should be tried \
instead? Do not propose an attempt that already failed.

Answer with one JSON object and nothing else:
{\"proposals\": [{\"artifact\": \"<an artifact name from the list>\", \"parent\": <the node id to start \
from, or null for the best node>, \"direction\": \"<what to change and why, two or three sentences>\", \
\"expected_loss_reduction\": <number>, \"confidence\": <number in [0, 1]>}]}
Give at most five proposals; an empty list is a valid answer.";

/// Which ideation call a proposal came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdeaSource {
    FrontierExtrapolation,
    FailureAnalysis,
}

impl IdeaSource {
    pub const ALL: [IdeaSource; 2] = [IdeaSource::FrontierExtrapolation, IdeaSource::FailureAnalysis];

    pub fn as_str(self) -> &'static str {
        match self {
            IdeaSource::FrontierExtrapolation => "frontier_extrapolation",
            IdeaSource::FailureAnalysis => "failure_analysis",
        }
    }

    /// For people and prompts.
    pub fn label(self) -> &'static str {
        match self {
            IdeaSource::FrontierExtrapolation => "frontier extrapolation",
            IdeaSource::FailureAnalysis => "failure analysis",
        }
    }

    fn system_prompt(self) -> &'static str {
        match self {
            IdeaSource::FrontierExtrapolation => FRONTIER_SYSTEM_PROMPT,
            IdeaSource::FailureAnalysis => FAILURE_SYSTEM_PROMPT,
        }
    }
}

/// One proposal of an ideation call, checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Idea {
    pub source: IdeaSource,
    pub artifact: String,
    /// The node to start from, when the model named one.
    pub parent: Option<i64>,
    pub direction: String,
    pub expected_loss_reduction: f64,
    pub confidence: f64,
}

impl Idea {
    /// Expected loss reduction × confidence.
    pub fn score(&self) -> f64 {
        self.expected_loss_reduction * self.confidence
    }

    /// What the child's proposer is told about it.
    pub fn guidance(&self) -> String {
        format!(
            "Direction to try (from {}, expected reduction {:.3}, confidence {:.2}): {}",
            self.source.label(),
            self.expected_loss_reduction,
            self.confidence,
            self.direction
        )
    }
}

/// Best first: expected reduction × confidence, then frontier extrapolation
/// before failure analysis, then the order they came in.
pub fn rank(mut ideas: Vec<Idea>) -> Vec<Idea> {
    ideas.sort_by(|a, b| b.score().total_cmp(&a.score()).then(a.source.cmp(&b.source)));
    ideas
}

/// A frontier node as the frontier extrapolation call sees it.
#[derive(Debug, Clone)]
pub struct FrontierNode {
    pub id: i64,
    pub mean: f64,
    pub task_losses: Vec<(String, f64)>,
    /// `None` for the root.
    pub change: Option<Change>,
}

/// A node's change against its parent.
#[derive(Debug, Clone)]
pub struct Change {
    pub parent: i64,
    pub artifact: String,
    /// A unified diff of the artifact's content, truncated.
    pub diff: String,
    pub rationale: String,
    /// The parent's mean loss minus this node's.
    pub gain: f64,
}

/// A child that failed, as the failure analysis call sees it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub id: i64,
    pub parent: i64,
    pub artifact: String,
    /// What it tried (evaluated children only).
    pub rationale: Option<String>,
    /// How it fared, prompt-safe.
    pub feedback: String,
}

/// Everything the two calls may see.
#[derive(Debug, Clone, Default)]
pub struct IdeationInput {
    pub suite: String,
    /// The artifacts a proposal may name, with what each controls.
    pub artifacts: Vec<(String, String)>,
    pub best: Option<(i64, f64)>,
    pub frontier: Vec<FrontierNode>,
    pub failures: Vec<Failure>,
    /// The best node's per-task training evidence.
    pub tasks: Vec<TaskEvidence>,
    /// The analyst's current hints.
    pub hints: Vec<String>,
}

/// The messages of one ideation call (public so tests can see exactly what
/// is sent).
pub fn messages(source: IdeaSource, input: &IdeationInput) -> Vec<ChatMessage> {
    let mut user = String::new();
    let _ = writeln!(user, "Suite: {}", input.suite);
    if let Some((id, mean)) = input.best {
        let _ = writeln!(user, "Best node so far: {id} (mean loss {mean:.4})");
    }
    let _ = writeln!(user, "\nArtifacts a proposal may change:");
    for (name, description) in &input.artifacts {
        if description.is_empty() {
            let _ = writeln!(user, "- {name}");
        } else {
            let _ = writeln!(user, "- {name}: {}", one_line(description, 200));
        }
    }
    match source {
        IdeaSource::FrontierExtrapolation => {
            let _ = writeln!(user, "\nThe frontier:");
            for n in &input.frontier {
                let losses: Vec<String> = n.task_losses.iter().map(|(t, l)| format!("{t} {l:.4}")).collect();
                let _ = writeln!(user, "\nNode {}: mean loss {:.4}; per task: {}", n.id, n.mean, losses.join(", "));
                match &n.change {
                    None => {
                        let _ = writeln!(user, "The root: the versions the search started from.");
                    }
                    Some(c) => {
                        let _ = writeln!(
                            user,
                            "Changed `{}` against node {} (gain {:+.4}): {}",
                            c.artifact,
                            c.parent,
                            c.gain,
                            one_line(&c.rationale, 300)
                        );
                        if !c.diff.is_empty() {
                            let _ = writeln!(user, "Diff:\n{}", c.diff);
                        }
                    }
                }
            }
        }
        IdeaSource::FailureAnalysis => {
            let _ = writeln!(user, "\nChildren that failed (most recent first):");
            if input.failures.is_empty() {
                let _ = writeln!(user, "- none yet");
            }
            for f in &input.failures {
                let tried = f.rationale.as_deref().map_or_else(|| "-".to_string(), |r| one_line(r, 300));
                let _ = writeln!(
                    user,
                    "- node {} (changed `{}` of node {}): tried: {tried}; outcome: {}",
                    f.id,
                    f.artifact,
                    f.parent,
                    one_line(&f.feedback, 300)
                );
            }
            let _ = writeln!(user, "\nPer-task results of the best node (loss, status, loss parts, error):");
            for t in &input.tasks {
                let _ = write!(user, "- {}: loss {:.4}, {}", t.task, t.loss, t.status);
                if let Some(b) = &t.breakdown {
                    let _ = write!(
                        user,
                        "; eval {:.3}, critique {:.3}, gate rejections {:.3}, budget {:.3}, status {:.3}",
                        b.eval_component,
                        b.critique_component,
                        b.gate_component,
                        b.budget_component,
                        b.status_component
                    );
                }
                if let Some(e) = &t.error {
                    let _ = write!(user, "; error: {}", one_line(e, 300));
                }
                user.push('\n');
            }
        }
    }
    if !input.hints.is_empty() {
        let _ = writeln!(user, "\nWhat the analyst of the tree noticed:");
        for h in &input.hints {
            let _ = writeln!(user, "- {h}");
        }
    }
    vec![ChatMessage::system(source.system_prompt()), ChatMessage::user(user)]
}

/// The reply the model is asked for. The fields are required, so an empty
/// or half-filled object is a rejection naming the missing field rather than
/// a reply with no ideas.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Reply {
    proposals: Vec<RawIdea>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct RawIdea {
    /// The artifact to change.
    artifact: String,
    /// The node to start from (its id); null for the best node.
    #[serde(default)]
    parent: Option<serde_json::Value>,
    /// What to change, in a sentence or two.
    direction: String,
    expected_loss_reduction: f64,
    /// From 0 to 1.
    confidence: f64,
}

/// What one ideation call came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub source: IdeaSource,
    /// The usable proposals, in the model's order.
    pub ideas: Vec<Idea>,
    /// Proposals dropped, each with why.
    pub dropped: Vec<String>,
    /// Set when the call or its parse failed.
    pub failure: Option<String>,
}

/// Makes one ideation call. A failed call or an unusable reply is an
/// outcome without ideas, never an error: ideation is advisory.
pub async fn ideate(client: &LlmClient, source: IdeaSource, input: &IdeationInput) -> Outcome {
    let request = ChatRequest::new(messages(source, input)).temperature(0.0).role(CallRole::Ideation);
    // A few short proposals: bounded in the schema, so a small model closes
    // its list and strings instead of running to the token budget.
    let shape = |schema: &mut serde_json::Value| {
        crate::llm::bound_properties(schema, &[("proposals", MAX_PROPOSALS), ("direction", 300), ("artifact", 200)]);
    };
    let failure = match client.chat_json_shaped::<Reply>(request, shape).await {
        Ok(r) => return check(source, r.value, input),
        Err(e) => client.clip(&super::textgrad::rejection_of(&e)),
    };
    Outcome { source, ideas: vec![], dropped: vec![], failure: Some(failure) }
}

/// Keeps the proposals that name a known artifact and say something.
fn check(source: IdeaSource, reply: Reply, input: &IdeationInput) -> Outcome {
    let mut ideas = Vec::new();
    let mut dropped = Vec::new();
    for raw in reply.proposals {
        if ideas.len() >= MAX_PROPOSALS {
            dropped.push(format!("more than {MAX_PROPOSALS} proposals"));
            continue;
        }
        let artifact = raw.artifact.trim().to_string();
        if !input.artifacts.iter().any(|(name, _)| *name == artifact) {
            dropped.push(format!("unknown artifact `{}`", artifact.chars().take(80).collect::<String>()));
            continue;
        }
        let direction = raw.direction.trim().to_string();
        if direction.is_empty() {
            dropped.push(format!("no direction for `{artifact}`"));
            continue;
        }
        // A node id may come as a number or a string; anything else means "the best node".
        let parent = match raw.parent {
            Some(serde_json::Value::Number(n)) => n.as_i64(),
            Some(serde_json::Value::String(s)) => s.trim().trim_start_matches('#').parse().ok(),
            _ => None,
        };
        ideas.push(Idea {
            source,
            artifact,
            parent,
            direction: direction.chars().take(MAX_DIRECTION_CHARS).collect(),
            expected_loss_reduction: Some(raw.expected_loss_reduction).filter(|v| v.is_finite()).unwrap_or(0.0),
            confidence: Some(raw.confidence).filter(|v| v.is_finite()).map_or(0.0, |c| c.clamp(0.0, 1.0)),
        });
    }
    Outcome { source, ideas, dropped, failure: None }
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max { flat } else { flat.chars().take(max).collect::<String>() + "…" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> IdeationInput {
        IdeationInput {
            suite: "s".into(),
            artifacts: vec![("style".into(), "the tone".into()), ("knob".into(), String::new())],
            ..IdeationInput::default()
        }
    }

    #[test]
    fn proposals_naming_unknown_artifacts_or_saying_nothing_are_dropped() {
        let reply: Reply = serde_json::from_value(serde_json::json!({"proposals": [
            {"artifact": "style", "parent": 3, "direction": "shorter", "expected_loss_reduction": 0.1, "confidence": 2.0},
            {"artifact": "nope", "direction": "x", "expected_loss_reduction": 0.1, "confidence": 0.5},
            {"artifact": "knob", "direction": "  ", "expected_loss_reduction": 0.1, "confidence": 0.5},
            {"artifact": "knob", "parent": "#4", "direction": "raise x", "expected_loss_reduction": 0.2, "confidence": 0.0},
        ]}))
        .unwrap();
        let out = check(IdeaSource::FailureAnalysis, reply, &input());
        assert_eq!(out.ideas.len(), 2, "{out:#?}");
        assert_eq!(out.ideas[0].parent, Some(3));
        assert_eq!(out.ideas[0].confidence, 1.0, "clamped");
        assert_eq!(out.ideas[1].parent, Some(4));
        assert_eq!(out.ideas[1].score(), 0.0, "no confidence, no score");
        // A proposal without its numbers is not a proposal: the reply is refused.
        let half =
            serde_json::from_value::<Reply>(serde_json::json!({"proposals": [{"artifact": "knob", "direction": "x"}]}));
        assert!(half.unwrap_err().to_string().contains("missing field `expected_loss_reduction`"));
        assert_eq!(out.dropped.len(), 2);
        assert!(out.dropped[0].contains("unknown artifact `nope`"));
    }

    #[test]
    fn ranking_is_by_reduction_times_confidence_then_frontier_first() {
        let idea = |source, r: f64, c: f64, d: &str| Idea {
            source,
            artifact: "style".into(),
            parent: None,
            direction: d.into(),
            expected_loss_reduction: r,
            confidence: c,
        };
        let ranked = rank(vec![
            idea(IdeaSource::FailureAnalysis, 0.2, 0.5, "a"),
            idea(IdeaSource::FailureAnalysis, 0.3, 0.9, "b"),
            idea(IdeaSource::FrontierExtrapolation, 0.1, 1.0, "c"),
        ]);
        let order: Vec<&str> = ranked.iter().map(|i| i.direction.as_str()).collect();
        assert_eq!(order, vec!["b", "c", "a"], "0.27, then the 0.1 tie goes to frontier extrapolation");
    }

    #[test]
    fn each_call_has_its_fixed_system_prompt_and_its_own_evidence() {
        let mut inp = input();
        inp.frontier.push(FrontierNode {
            id: 4,
            mean: 0.25,
            task_losses: vec![("first".into(), 0.25)],
            change: Some(Change {
                parent: 1,
                artifact: "style".into(),
                diff: "-plain\n+GOOD".into(),
                rationale: "say GOOD".into(),
                gain: 0.25,
            }),
        });
        inp.failures.push(Failure {
            id: 5,
            parent: 4,
            artifact: "knob".into(),
            rationale: None,
            feedback: "rejected before evaluation".into(),
        });
        let f = messages(IdeaSource::FrontierExtrapolation, &inp);
        assert_eq!(f[0].content, FRONTIER_SYSTEM_PROMPT);
        assert!(f[1].content.contains("Changed `style` against node 1 (gain +0.2500): say GOOD"), "{}", f[1].content);
        assert!(f[1].content.contains("-plain\n+GOOD"));
        assert!(!f[1].content.contains("node 5"), "failures go to the other call");
        let a = messages(IdeaSource::FailureAnalysis, &inp);
        assert_eq!(a[0].content, FAILURE_SYSTEM_PROMPT);
        assert!(a[1].content.contains("node 5 (changed `knob` of node 4)"), "{}", a[1].content);
    }
}
