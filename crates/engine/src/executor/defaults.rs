//! Version 0 of the texts an executor's prompt is made of, and how a run's
//! active artifact versions become the [`PromptTexts`] it sends.
//!
//! Every text is a learnable artifact; version 0 lives in
//! [`crate::artifact::builtin`] so there is one source. The per-strategy
//! descriptions are sections of the `strategy_templates` artifact
//! ([`StrategyTemplates`]), so an optimizer can rewrite any one of them.
//! What the code fixes is only the reply contract of each executor.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::artifact::builtin;
use crate::engine::StrategyKind;

/// The opening of every executor prompt (version 0 of `executor_preamble`).
pub const EXECUTOR_PREAMBLE: &str = builtin::EXECUTOR_PREAMBLE;

/// What the built-in LLM executor must reply with.
pub const LLM_REPLY_CONTRACT: &str = r#"Reply with one JSON object and nothing else:
{
  "summary": "what you changed and why, in two or three sentences",
  "tools_used": ["the tools, libraries or techniques your change relies on"],
  "edits": [
    {"path": "{example_path}", "action": "replace", "search": "a few lines copied exactly from the file", "replace": "what those lines become"},
    {"path": "{example_path}", "action": "write", "content": "the complete new content of the file"}
  ],
  "subtasks": ["only when asked to decompose: the subtasks, in order"],
  "amendments": ["only when asked to review the specification: each change to it"]
}
Rules: use the paths of the files shown to you, relative to the workspace root (no absolute paths, no `..`,
nothing in `.git`). To change part of a file, use a replace: `search` holds a few lines copied from the file as
shown (enough to match one place) and `replace` what they become. A write replaces the whole file, so give its
complete content; use it for new files and small files. To remove a file: {"path": "...", "action": "delete"}.
List only files you change. An edit that breaks these rules or does not match is refused, and the next prompt
tells you why."#;

/// The reply contract with its example edits on `path`, a file of the
/// workspace: small models copy the example's path, so it had better be real.
pub fn reply_contract(path: &str) -> String {
    LLM_REPLY_CONTRACT.replace("{example_path}", path)
}

/// What an external coding agent (the command executor) is told besides the task.
pub const COMMAND_CONTRACT: &str = "Work directly on the files of the current directory (the workspace). Do not \
commit: the supervisor records the workspace after you finish. When you are done you may write a JSON object to \
the file named by the environment variable ATTRACTOR_EXECUTION_FILE: {\"summary\": \"what you changed\", \
\"tokens\": <tokens you used>, \"tools_used\": [\"tools you relied on\"]}.";

/// A problem in a `strategy_templates` text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("line {line}: `[{name}]` is not a strategy\n  hint: section names are {known}; write each on its own line")]
    UnknownStrategy { line: usize, name: String, known: String },
    #[error("line {line}: the section `[{name}]` appears twice; keep one")]
    Duplicate { line: usize, name: String },
    #[error("line {line}: the section `[{name}]` is empty; write the description under it or remove the header")]
    Empty { line: usize, name: String },
}

/// A `strategy_templates` text, parsed: the framing shown with every
/// attempt, and one description per strategy.
///
/// ```text
/// You are following the strategy "{strategy}": {description}
///
/// [retry_with_feedback]
/// Attempt the task again, using the feedback …
/// ```
///
/// A strategy without a section keeps its version-0 description, so a
/// learned text may carry only the descriptions it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrategyTemplates {
    pub framing: String,
    pub descriptions: BTreeMap<StrategyKind, String>,
}

impl StrategyTemplates {
    /// Parses the framing and the `[strategy_name]` sections. Unknown,
    /// duplicate and empty sections are errors (a learned version that
    /// garbled a header must not silently lose a description).
    pub fn parse(text: &str) -> Result<StrategyTemplates, TemplateError> {
        let mut framing = String::new();
        let mut descriptions = BTreeMap::new();
        let mut current: Option<(StrategyKind, usize, String)> = None;
        let close = |current: Option<(StrategyKind, usize, String)>,
                     descriptions: &mut BTreeMap<StrategyKind, String>|
         -> Result<(), TemplateError> {
            if let Some((kind, line, body)) = current {
                let body = body.trim().to_string();
                if body.is_empty() {
                    return Err(TemplateError::Empty { line, name: kind.as_str().to_string() });
                }
                descriptions.insert(kind, body);
            }
            Ok(())
        };
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let trimmed = raw.trim();
            // Any `[word]` alone on a line is a header: a misspelt one must
            // be reported, not read as framing text.
            let header = trimmed
                .strip_prefix('[')
                .and_then(|r| r.strip_suffix(']'))
                .filter(|n| !n.is_empty() && !n.contains(char::is_whitespace));
            if let Some(name) = header {
                let kind = StrategyKind::ALL.into_iter().find(|k| k.as_str() == name).ok_or_else(|| {
                    TemplateError::UnknownStrategy {
                        line,
                        name: name.to_string(),
                        known: StrategyKind::ALL.map(|k| format!("[{k}]")).join(", "),
                    }
                })?;
                if descriptions.contains_key(&kind) || current.as_ref().is_some_and(|c| c.0 == kind) {
                    return Err(TemplateError::Duplicate { line, name: name.to_string() });
                }
                close(current.take(), &mut descriptions)?;
                current = Some((kind, line, String::new()));
                continue;
            }
            let target = match current.as_mut() {
                Some((_, _, body)) => body,
                None => &mut framing,
            };
            target.push_str(raw);
            target.push('\n');
        }
        close(current, &mut descriptions)?;
        Ok(StrategyTemplates { framing: framing.trim().to_string() + "\n", descriptions })
    }

    /// Version 0, parsed once.
    pub fn builtin() -> &'static StrategyTemplates {
        static V0: OnceLock<StrategyTemplates> = OnceLock::new();
        V0.get_or_init(|| {
            // Covered by a unit test: version 0 parses and names every strategy.
            StrategyTemplates::parse(builtin::STRATEGY_TEMPLATES)
                .unwrap_or_else(|_| StrategyTemplates { framing: String::new(), descriptions: BTreeMap::new() })
        })
    }
}

/// Version 0 of one strategy's description (a section of `strategy_templates`).
pub fn strategy_description(kind: StrategyKind) -> &'static str {
    StrategyTemplates::builtin().descriptions.get(&kind).map_or("", String::as_str)
}

/// Checks new content for one of the prompt artifacts before it becomes a
/// version (an optimizer's proposal): a `strategy_templates` text must parse.
/// Other names and other prompt artifacts are free text.
pub fn check_prompt_artifact(name: &str, content: &str) -> Result<(), TemplateError> {
    if name == "strategy_templates" {
        StrategyTemplates::parse(content)?;
    }
    Ok(())
}

/// An active artifact version whose text cannot be used in a prompt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("artifact `{artifact}` v{version}: {error}")]
pub struct PromptTextsError {
    pub artifact: String,
    pub version: i64,
    #[source]
    pub error: TemplateError,
}

/// The learnable texts one prompt is assembled from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptTexts {
    /// Opens the system message.
    pub preamble: String,
    /// Mistakes to avoid (artifact `executor_pitfalls`).
    pub pitfalls: String,
    /// Frames the strategy (artifact `strategy_templates`): `{strategy}` is
    /// replaced by the strategy's name, `{description}` by its description.
    pub strategy_framing: String,
    /// One description per strategy.
    pub strategy_descriptions: BTreeMap<StrategyKind, String>,
    /// What a fresh start carries (artifact `carry_forward_template`):
    /// `{attempts}`, `{facts}`, `{failures}`.
    pub carry_forward_template: String,
    /// How the result will be judged (artifact `verification_rubric`).
    pub verification_rubric: String,
    /// Tools and blocked tools (artifact `tool_description_templates`):
    /// `{tools}`, `{blocked}`.
    pub tool_template: String,
    /// How to plan (artifact `planning_preamble`), shown to the strategies
    /// that re-plan: reframe, decompose, alternative approach, architect review.
    pub planning: String,
}

fn builtin_text(name: &str) -> String {
    builtin::find(name).map(|b| b.content.to_string()).unwrap_or_default()
}

impl Default for PromptTexts {
    fn default() -> Self {
        let templates = StrategyTemplates::builtin();
        PromptTexts {
            preamble: builtin_text("executor_preamble"),
            pitfalls: builtin_text("executor_pitfalls"),
            strategy_framing: templates.framing.clone(),
            strategy_descriptions: templates.descriptions.clone(),
            carry_forward_template: builtin_text("carry_forward_template"),
            verification_rubric: builtin_text("verification_rubric"),
            tool_template: builtin_text("tool_description_templates"),
            planning: builtin_text("planning_preamble"),
        }
    }
}

/// The artifacts a prompt is made of, by name.
pub const PROMPT_ARTIFACTS: [&str; 7] = [
    "executor_preamble",
    "executor_pitfalls",
    "planning_preamble",
    "strategy_templates",
    "carry_forward_template",
    "verification_rubric",
    "tool_description_templates",
];

impl PromptTexts {
    /// The texts of a run: each prompt artifact's active version as
    /// `active(name)` gives it (content, version), version 0 for the ones it
    /// does not know. A `strategy_templates` version that does not parse is
    /// an error naming the artifact, the version and the line.
    pub fn from_artifacts<'a>(
        active: impl Fn(&str) -> Option<(&'a str, i64)>,
    ) -> Result<PromptTexts, PromptTextsError> {
        let mut texts = PromptTexts::default();
        if let Some((content, _)) = active("executor_preamble") {
            texts.preamble = content.to_string();
        }
        if let Some((content, _)) = active("executor_pitfalls") {
            texts.pitfalls = content.to_string();
        }
        if let Some((content, version)) = active("strategy_templates") {
            let parsed = StrategyTemplates::parse(content).map_err(|error| PromptTextsError {
                artifact: "strategy_templates".to_string(),
                version,
                error,
            })?;
            texts.strategy_framing = parsed.framing;
            // Sections a version leaves out keep their version-0 text.
            texts.strategy_descriptions.extend(parsed.descriptions);
        }
        if let Some((content, _)) = active("carry_forward_template") {
            texts.carry_forward_template = content.to_string();
        }
        if let Some((content, _)) = active("verification_rubric") {
            texts.verification_rubric = content.to_string();
        }
        if let Some((content, _)) = active("tool_description_templates") {
            texts.tool_template = content.to_string();
        }
        if let Some((content, _)) = active("planning_preamble") {
            texts.planning = content.to_string();
        }
        Ok(texts)
    }

    /// The description of `kind`, falling back to version 0 when a learned
    /// set of descriptions lacks it.
    pub fn description(&self, kind: StrategyKind) -> &str {
        self.strategy_descriptions.get(&kind).map_or_else(|| strategy_description(kind), String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_zero_of_the_strategy_templates_parses_and_names_every_strategy() {
        let v0 = StrategyTemplates::parse(builtin::STRATEGY_TEMPLATES).unwrap();
        assert_eq!(v0.descriptions.len(), StrategyKind::ALL.len());
        assert!(v0.framing.contains("{strategy}") && v0.framing.contains("{description}"), "{}", v0.framing);
        assert!(!v0.framing.contains('['), "{}", v0.framing);
        assert!(strategy_description(StrategyKind::FocusedRepair).starts_with("Repair only the failing tests"));
    }

    #[test]
    fn a_learned_template_may_change_one_description_and_keeps_the_others() {
        let text = "Do it: {description}\n\n[focused_repair]\nFix only `{strategy}` targets.\n";
        let texts = PromptTexts::from_artifacts(|n| (n == "strategy_templates").then_some((text, 3))).unwrap();
        assert_eq!(texts.strategy_framing, "Do it: {description}\n");
        assert_eq!(texts.description(StrategyKind::FocusedRepair), "Fix only `{strategy}` targets.");
        assert_eq!(texts.description(StrategyKind::Reframe), strategy_description(StrategyKind::Reframe));
        assert_eq!(texts.pitfalls, PromptTexts::default().pitfalls);
    }

    #[test]
    fn garbled_sections_are_refused_with_the_line() {
        let err = StrategyTemplates::parse("x\n[retry]\nagain\n").unwrap_err();
        assert!(matches!(err, TemplateError::UnknownStrategy { line: 2, .. }), "{err}");
        assert!(err.to_string().contains("[focused_repair]"), "{err}");
        let err = StrategyTemplates::parse("[reframe]\na\n[reframe]\nb\n").unwrap_err();
        assert!(matches!(err, TemplateError::Duplicate { line: 3, .. }), "{err}");
        let err = StrategyTemplates::parse("[reframe]\n\n[fresh_start]\nb\n").unwrap_err();
        assert!(matches!(err, TemplateError::Empty { line: 1, .. }), "{err}");
        let wrapped = PromptTexts::from_artifacts(|n| (n == "strategy_templates").then_some(("[nope]\nx", 7)));
        assert_eq!(
            wrapped.unwrap_err().to_string().lines().next().unwrap(),
            "artifact `strategy_templates` v7: line 1: `[nope]` is not a strategy"
        );
    }

    #[test]
    fn every_strategy_has_its_own_description_and_the_builtins_are_found() {
        let t = PromptTexts::default();
        let mut seen = std::collections::BTreeSet::new();
        for k in StrategyKind::ALL {
            assert!(seen.insert(t.description(k).to_string()), "{k} shares its description");
        }
        for text in [
            &t.pitfalls,
            &t.strategy_framing,
            &t.carry_forward_template,
            &t.verification_rubric,
            &t.tool_template,
            &t.planning,
        ] {
            assert!(!text.is_empty());
        }
        assert!(t.strategy_framing.contains("{description}"));
    }
}
