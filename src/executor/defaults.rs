//! Version 0 of the texts an executor's prompt is made of.
//!
//! These are the floor the outer loop's optimizers improve on: each text is
//! learnable (the lead wires them to the artifact registry), so the code
//! only ever receives them as strings in [`PromptTexts`]. Where a built-in
//! artifact already holds a text (pitfalls, the carry-forward template, the
//! verification rubric, the tool template, the strategy framing), its
//! version 0 comes from [`crate::artifact::builtin`] so there is one source.
//! The strategy descriptions, one per [`StrategyKind`], live here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::artifact::builtin;
use crate::engine::StrategyKind;

/// The opening of every executor prompt: who the model is and how it works.
pub const EXECUTOR_PREAMBLE: &str = "You are the executor of a supervised coding loop. You change the files of a \
workspace so that it does what the task asks. You do not judge your own result: after you reply, independent \
checks (builds, tests, linters, scanners) measure the workspace, and their verdicts decide what happens next. \
Make the smallest change that moves those checks toward passing, keep what already works working, and say \
plainly what you changed and why.";

/// What the built-in LLM executor must reply with.
pub const LLM_REPLY_CONTRACT: &str = r#"Reply with one JSON object and nothing else:
{
  "summary": "what you changed and why, in two or three sentences",
  "tools_used": ["the tools, libraries or techniques your change relies on"],
  "edits": [
    {"path": "relative/path/to/file", "action": "write", "content": "the complete new content of the file"},
    {"path": "relative/path/to/obsolete_file", "action": "delete"}
  ],
  "subtasks": ["only when asked to decompose: the subtasks, in order"],
  "amendments": ["only when asked to review the specification: each change to it"]
}
Rules: paths are relative to the workspace root and stay inside it (no absolute paths, no `..`, nothing in `.git`);
a write replaces the whole file, so give its complete content; list only files you change; an edit that breaks
these rules is refused and reported back to you."#;

/// What an external coding agent (the command executor) is told besides the task.
pub const COMMAND_CONTRACT: &str = "Work directly on the files of the current directory (the workspace). Do not \
commit: the supervisor records the workspace after you finish. When you are done you may write a JSON object to \
the file named by the environment variable ATTRACTOR_EXECUTION_FILE: {\"summary\": \"what you changed\", \
\"tokens\": <tokens you used>, \"tools_used\": [\"tools you relied on\"]}.";

/// One description per strategy: what this attempt should do differently.
/// Rendered into the strategy framing's `{description}`.
pub fn strategy_description(kind: StrategyKind) -> &'static str {
    match kind {
        StrategyKind::RetryWithFeedback => {
            "Attempt the task again, using the feedback of the last measurement. Every failing check below is \
             evidence about what is still wrong; address each of them, and do not undo what passed."
        }
        StrategyKind::RetryAugmented => {
            "Attempt the task again with more context than before. Read the related code, the documentation and \
             the examples shown below before changing anything, and let them decide how the change should look."
        }
        StrategyKind::FocusedRepair => {
            "Repair only the failing tests named below. Change nothing that is not needed to make them pass: no \
             refactoring, no new features, no renames. Read each failure, find its cause, fix that cause."
        }
        StrategyKind::IncrementalRefinement => {
            "Close exactly one gap in this attempt: the one named below. Leave every other gap for later attempts, \
             even when you see how to fix it; a small change that is verified beats a large one that is not."
        }
        StrategyKind::Reframe => {
            "Treat the task as a fresh implementation problem rather than a repair. Forget how the current code \
             happens to be organised; design the solution from the requirements and the lessons listed below, \
             then write it."
        }
        StrategyKind::Decompose => {
            "Split the task into small subtasks that can each be checked on its own, list them in order in \
             `subtasks`, and carry out only the first one now."
        }
        StrategyKind::AlternativeApproach => {
            "Solve the task with an approach that differs in kind from the ones already tried (listed below): \
             another algorithm, another library, another structure. Repeating a tried approach with small \
             changes does not count."
        }
        StrategyKind::ArchitectReview => {
            "Step back and review the specification itself. Where the attempts so far show that it is ambiguous, \
             incomplete or contradictory, propose precise changes in `amendments`, then make the change the \
             amended specification calls for."
        }
        StrategyKind::RevertAndBranch => {
            "The workspace has been put back to its best state so far. Continue from there in a different \
             direction than the attempts that came after it, which made things worse or no better."
        }
        StrategyKind::FreshStart => {
            "This is a fresh start: the earlier conversation is gone on purpose, and only the knowledge carried \
             forward below remains. The files in the workspace are as the earlier attempts left them; read them \
             with fresh eyes before changing them."
        }
    }
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
}

fn builtin_text(name: &str) -> String {
    builtin::find(name).map(|b| b.content.to_string()).unwrap_or_default()
}

impl Default for PromptTexts {
    fn default() -> Self {
        PromptTexts {
            preamble: EXECUTOR_PREAMBLE.to_string(),
            pitfalls: builtin_text("executor_pitfalls"),
            strategy_framing: builtin_text("strategy_templates"),
            strategy_descriptions: StrategyKind::ALL
                .iter()
                .map(|&k| (k, strategy_description(k).to_string()))
                .collect(),
            carry_forward_template: builtin_text("carry_forward_template"),
            verification_rubric: builtin_text("verification_rubric"),
            tool_template: builtin_text("tool_description_templates"),
        }
    }
}

impl PromptTexts {
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
    fn every_strategy_has_its_own_description_and_the_builtins_are_found() {
        let t = PromptTexts::default();
        let mut seen = std::collections::BTreeSet::new();
        for k in StrategyKind::ALL {
            assert!(seen.insert(t.description(k).to_string()), "{k} shares its description");
        }
        for text in
            [&t.pitfalls, &t.strategy_framing, &t.carry_forward_template, &t.verification_rubric, &t.tool_template]
        {
            assert!(!text.is_empty());
        }
        assert!(t.strategy_framing.contains("{description}"));
    }
}
