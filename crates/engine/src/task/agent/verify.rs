//! Intent verification: every few iterations (the policy's
//! `intent_verification_frequency`), a model reads the task, what the
//! overseers measured and what changed in the workspace, and says whether
//! the result does what the task *means* (seed 002 §6.3 step 4, seed 003 R4).
//!
//! The verifier is a check, so it leans the way a validator should: when in
//! doubt it fails a criterion (a false accept reaches the person, a false
//! reject costs one iteration). Its judgement is *plausible*, never
//! *verifiable*: the overseers outrank it when the two disagree.
//!
//! The reply is parsed strictly: a JSON object of a fixed shape whose every
//! failed criterion names its failure class (logical or environmental), a
//! confidence in [0, 1], and gaps of a known category. A reply that breaks
//! these rules gets one correction round (the client shows the model what
//! was wrong); a second failure leaves the observation unverified.
//!
//! The verifier's model is never a lower tier than the executor's: by
//! default it is the same model, and a configured one is used only when the
//! configured tier list ranks it at least as high.

use serde::{Deserialize, Serialize};

use crate::engine::{GapCategory, IntentGap, VerificationResult};
use crate::ggs::{CriterionMode, CriterionVerdict};
use crate::llm::{CallRole, ChatMessage, ChatRequest, LlmClient, LlmError};
use crate::overseer::{FailureClass, OverseerSignals};

/// Settings of the intent verifier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VerifierConfig {
    /// Run the verifier at all (on the iterations the policy names).
    pub enabled: bool,
    /// A model for the verifier; `None`: the executor's model.
    pub model: Option<String>,
    /// Model names from the weakest to the strongest. A configured verifier
    /// model is used only when both it and the executor's model are listed
    /// and it ranks at least as high; otherwise the executor's model is.
    pub model_tiers: Vec<String>,
    /// Bytes of the workspace diff shown to the verifier at most.
    pub max_diff_bytes: usize,
    pub max_tokens: Option<u32>,
}

impl Default for VerifierConfig {
    fn default() -> Self {
        VerifierConfig {
            enabled: true,
            model: None,
            model_tiers: Vec::new(),
            max_diff_bytes: 24 * 1024,
            max_tokens: None,
        }
    }
}

/// The verifier's model for an executor running `executor_model`, and why
/// a configured one was not taken.
pub fn verifier_model(config: &VerifierConfig, executor_model: &str) -> (String, Option<String>) {
    let Some(wanted) = config.model.as_deref().filter(|m| !m.trim().is_empty() && *m != executor_model) else {
        return (executor_model.to_string(), None);
    };
    let rank = |m: &str| config.model_tiers.iter().position(|t| t == m);
    match (rank(wanted), rank(executor_model)) {
        (Some(v), Some(e)) if v >= e => (wanted.to_string(), None),
        (Some(_), Some(_)) => (
            executor_model.to_string(),
            Some(format!(
                "verifier model `{wanted}` ranks below the executor's `{executor_model}` in model_tiers; \
                 verifying with `{executor_model}`"
            )),
        ),
        _ => (
            executor_model.to_string(),
            Some(format!(
                "verifier model `{wanted}` cannot be compared with the executor's `{executor_model}` (list both in \
                 model_tiers, weakest first); verifying with `{executor_model}`"
            )),
        ),
    }
}

/// What the verifier must answer, as the contract shown to it.
pub const VERIFIER_CONTRACT: &str = r#"Reply with one JSON object and nothing else:
{
  "satisfied": true or false,
  "confidence": a number from 0 to 1,
  "verdicts": [
    {"criterion": "one requirement of the task, in a few words",
     "verdict": "pass" or "fail",
     "failure_class": "logical" (the work is wrong or missing) or "environmental" (it could not be judged: a check could not run, a file is unreadable), required when the verdict is "fail", null when it is "pass",
     "evidence": "what in the diff or the measurements shows it"}
  ],
  "gaps": [{"description": "what falls short", "category": "missing" or "incorrect" or "ambiguity"}]
}
List one verdict per requirement the task states or clearly implies. When the evidence is not enough to be sure a
requirement is met, fail it: a wrong acceptance reaches the person, a wrong rejection costs only one more attempt."#;

/// The verifier's reply exactly as the contract describes it.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawReply {
    satisfied: bool,
    confidence: f64,
    verdicts: Vec<RawVerdict>,
    #[serde(default)]
    gaps: Vec<RawGap>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawVerdict {
    criterion: String,
    verdict: PassFail,
    #[serde(default)]
    failure_class: Option<FailureClass>,
    #[serde(default)]
    evidence: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum PassFail {
    Pass,
    Fail,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawGap {
    description: String,
    category: GapCategory,
}

/// A reply that passed every rule; what the engine records.
#[derive(Debug, Deserialize)]
#[serde(try_from = "RawReply")]
struct CheckedReply(VerificationResult);

/// The schema sent is the raw reply's: the rules `try_from` adds are checked
/// after parsing, and their message becomes the correction.
impl schemars::JsonSchema for CheckedReply {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        RawReply::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        RawReply::json_schema(generator)
    }
}

impl TryFrom<RawReply> for CheckedReply {
    type Error = String;

    /// The rules serde cannot express. The message becomes the correction
    /// the model is shown.
    fn try_from(r: RawReply) -> Result<Self, String> {
        if !(r.confidence.is_finite() && (0.0..=1.0).contains(&r.confidence)) {
            return Err(format!("`confidence` must be a number from 0 to 1, not {}", r.confidence));
        }
        if r.verdicts.is_empty() {
            return Err("`verdicts` is empty; give one verdict per requirement of the task".to_string());
        }
        let mut verdicts = Vec::with_capacity(r.verdicts.len());
        for (i, v) in r.verdicts.into_iter().enumerate() {
            let name = v.criterion.trim();
            if name.is_empty() {
                return Err(format!("`verdicts[{i}].criterion` is empty"));
            }
            let criterion = format!("intent:{name}");
            verdicts.push(match (v.verdict, v.failure_class) {
                (PassFail::Pass, None) => CriterionVerdict::pass(criterion, CriterionMode::Plausible),
                (PassFail::Pass, Some(_)) => {
                    return Err(format!("`verdicts[{i}]` passes but has a failure_class; use null for a pass"));
                }
                (PassFail::Fail, Some(class)) => {
                    CriterionVerdict::fail(criterion, CriterionMode::Plausible, class, v.evidence.trim())
                }
                (PassFail::Fail, None) => {
                    return Err(format!(
                        "`verdicts[{i}]` fails without a failure_class; say \"logical\" or \"environmental\""
                    ));
                }
            });
        }
        if r.satisfied && verdicts.iter().any(|v| !v.passed) {
            return Err("`satisfied` is true while a verdict fails; satisfied means every verdict passes".to_string());
        }
        let gaps = r
            .gaps
            .into_iter()
            .filter(|g| !g.description.trim().is_empty())
            .map(|g| IntentGap { description: g.description.trim().to_string(), category: g.category })
            .collect();
        Ok(CheckedReply(VerificationResult { satisfied: r.satisfied, confidence: r.confidence, gaps, verdicts }))
    }
}

/// What one verification produced.
#[derive(Debug, Clone)]
pub struct Verified {
    pub result: VerificationResult,
    pub tokens: u64,
    pub model: String,
}

/// Everything the verifier reads about one state of the workspace.
#[derive(Debug, Clone, Default)]
pub struct Evidence<'a> {
    pub task_name: &'a str,
    /// The effective specification.
    pub specification: &'a str,
    pub signals: Option<&'a OverseerSignals>,
    /// What changed since the task's files were copied (bounded).
    pub diff: &'a str,
    /// The workspace's files.
    pub files: &'a [String],
}

/// The LLM intent verifier.
pub struct IntentVerifier {
    client: LlmClient,
    model: String,
    rubric: String,
    config: VerifierConfig,
}

impl IntentVerifier {
    /// `rubric` is the active `verification_rubric` artifact.
    pub fn new(client: LlmClient, model: String, rubric: String, config: VerifierConfig) -> IntentVerifier {
        IntentVerifier { client, model, rubric, config }
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// The messages of one verification (public so tests can see what is sent).
    pub fn messages(&self, e: &Evidence<'_>) -> Vec<ChatMessage> {
        let system = format!(
            "You verify whether the work done on a task does what the task means, not only what its checks test. \
             You are independent of the executor that did the work and you are skeptical by design.\n\n\
             Rubric:\n{}\n\n{VERIFIER_CONTRACT}",
            self.rubric.trim()
        );
        let mut user = format!("## Task: {}\n\n{}\n\n", e.task_name, e.specification.trim());
        user.push_str("## What the checks measured\n\n");
        user.push_str(&e.signals.map_or_else(|| "Nothing was measured.".to_string(), measured));
        user.push_str("\n\n## Files in the workspace\n\n");
        if e.files.is_empty() {
            user.push_str("(none)\n");
        }
        for f in e.files.iter().take(200) {
            user.push_str(&format!("- {f}\n"));
        }
        let diff = cut(e.diff, self.config.max_diff_bytes);
        let fence = if diff.contains("```") { "````" } else { "```" };
        user.push_str(&format!(
            "\n## What changed since the task's files were given\n\n{fence}diff\n{}\n{fence}\n",
            if diff.trim().is_empty() { "(nothing)" } else { diff.trim_end() }
        ));
        vec![ChatMessage::system(system), ChatMessage::user(user)]
    }

    /// One verification call. Deterministic (temperature 0): the same state
    /// gets the same reading, from the cache when it was asked before.
    pub async fn verify(&self, e: &Evidence<'_>) -> Result<Verified, LlmError> {
        let mut request = ChatRequest::new(self.messages(e))
            .temperature(0.0)
            .json_mode(true)
            .model(self.model.clone())
            .role(CallRole::Verifier);
        if let Some(max) = self.config.max_tokens {
            request = request.max_tokens(max);
        }
        let reply = self.client.chat_json::<CheckedReply>(request).await?;
        // A cached reading spent nothing now.
        let tokens = match reply.usage.total_tokens {
            _ if reply.reply.cached => 0,
            0 if reply.reply.usage.is_none() => (reply.reply.content.len() / 4) as u64,
            n => n,
        };
        Ok(Verified { result: reply.value.0, tokens, model: self.model.clone() })
    }
}

/// The overseers' measurements, one line each, with failing test names.
fn measured(s: &OverseerSignals) -> String {
    let mut lines = Vec::new();
    if let Some(t) = &s.test_results {
        lines.push(format!("- tests: {} of {} pass, {} fail", t.passed, t.total, t.failed));
        for name in t.failing.iter().take(30) {
            lines.push(format!("  - failing: {name}"));
        }
    }
    if let Some(b) = &s.build_result {
        let errors = crate::counted(b.error_count, "error");
        lines.push(format!("- build: {} ({errors})", if b.success { "succeeds" } else { "fails" }));
    }
    if let Some(t) = &s.type_check {
        let errors = crate::counted(t.error_count, "error");
        lines.push(format!("- type check: {} ({errors})", if t.clean { "clean" } else { "fails" }));
    }
    if let Some(l) = &s.lint_results {
        lines.push(format!(
            "- lint: {}, {}",
            crate::counted(l.error_count, "error"),
            crate::counted(l.warning_count, "warning")
        ));
    }
    if let Some(x) = &s.security_scan {
        lines.push(format!("- security: {} critical, {} high", x.critical_count, x.high_count));
    }
    for c in &s.custom_checks {
        lines.push(format!("- check `{}`: {}", c.name, if c.passed { "passes" } else { "fails" }));
    }
    for v in s.verdicts.iter().filter(|v| v.failure_class == Some(FailureClass::Environmental)) {
        lines.push(format!("- `{}` could not run", v.overseer));
    }
    if lines.is_empty() { "No check produced a measurement.".to_string() } else { lines.join("\n") }
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[… {} more bytes of diff not shown]", &s[..end], s.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::parse_reply;

    fn parse(text: &str) -> Result<VerificationResult, String> {
        parse_reply::<CheckedReply>(text).map(|(r, _)| r.0)
    }

    #[test]
    fn a_well_formed_reply_becomes_plausible_criteria_with_their_failure_class() {
        let r = parse(
            r#"{"satisfied": false, "confidence": 0.8, "verdicts": [
                {"criterion": "adds numbers", "verdict": "pass", "failure_class": null, "evidence": "add()"},
                {"criterion": "handles negatives", "verdict": "fail", "failure_class": "logical", "evidence": "abs()"}
            ], "gaps": [{"description": "negatives are made positive", "category": "incorrect"}]}"#,
        )
        .unwrap();
        assert!(!r.satisfied);
        assert_eq!(r.verdicts.len(), 2);
        assert_eq!(r.verdicts[1].criterion, "intent:handles negatives");
        assert_eq!(r.verdicts[1].mode, CriterionMode::Plausible);
        assert_eq!(r.verdicts[1].failure_class, Some(FailureClass::Logical));
        assert_eq!(r.gaps[0].category, GapCategory::Incorrect);
    }

    #[test]
    fn replies_that_break_the_contract_are_refused_with_the_reason() {
        let no_class = r#"{"satisfied": false, "confidence": 0.5,
            "verdicts": [{"criterion": "x", "verdict": "fail", "evidence": "e"}]}"#;
        assert!(parse(no_class).unwrap_err().contains("without a failure_class"));
        let unknown_class = r#"{"satisfied": false, "confidence": 0.5,
            "verdicts": [{"criterion": "x", "verdict": "fail", "failure_class": "cosmic"}]}"#;
        assert!(parse(unknown_class).is_err());
        let maybe = r#"{"satisfied": true, "confidence": 0.5, "verdicts": [{"criterion": "x", "verdict": "maybe"}]}"#;
        assert!(parse(maybe).is_err());
        let sure = r#"{"satisfied": true, "confidence": 1.5, "verdicts": [{"criterion": "x", "verdict": "pass"}]}"#;
        assert!(parse(sure).unwrap_err().contains("confidence"));
        let contradiction = r#"{"satisfied": true, "confidence": 0.9,
            "verdicts": [{"criterion": "x", "verdict": "fail", "failure_class": "logical"}]}"#;
        assert!(parse(contradiction).unwrap_err().contains("satisfied"));
        let extra = r#"{"satisfied": true, "confidence": 0.9, "score": 1,
            "verdicts": [{"criterion": "x", "verdict": "pass"}]}"#;
        assert!(parse(extra).unwrap_err().contains("score"));
        assert!(parse(r#"{"satisfied": true, "confidence": 0.9, "verdicts": []}"#).is_err());
    }

    #[test]
    fn the_verifier_is_never_a_lower_tier_than_the_executor() {
        let tiers = VerifierConfig {
            model: Some("small".into()),
            model_tiers: vec!["small".into(), "large".into()],
            ..Default::default()
        };
        assert_eq!(verifier_model(&tiers, "large").0, "large");
        assert!(verifier_model(&tiers, "large").1.is_some());
        assert_eq!(verifier_model(&tiers, "small"), ("small".to_string(), None));
        let up = VerifierConfig { model: Some("large".into()), ..tiers.clone() };
        assert_eq!(verifier_model(&up, "small"), ("large".to_string(), None));
        let unranked = VerifierConfig { model: Some("other".into()), ..tiers };
        assert_eq!(verifier_model(&unranked, "small").0, "small");
        assert_eq!(verifier_model(&VerifierConfig::default(), "m"), ("m".to_string(), None));
    }
}
