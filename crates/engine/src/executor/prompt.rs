//! Turning a strategy and what the trajectory knows into an executor's prompt.
//!
//! A strategy is a way of moving toward the goal (seed 002 §4.1), and the
//! prompt is where that difference becomes real. Every prompt has the same
//! frame — the system message (preamble, pitfalls), a person's hints
//! *first*, the effective specification, the strategy's framing, the tools
//! it must not use, a bounded view of the files — and each strategy chooses
//! what evidence follows its framing:
//!
//! | strategy               | evidence shown                                              |
//! |------------------------|-------------------------------------------------------------|
//! | retry_with_feedback    | every failing check with its evidence, the attempts so far  |
//! | retry_augmented        | the same, and twice the file budget, documentation first    |
//! | focused_repair         | only the failing tests (and their evidence), related files  |
//! | incremental_refinement | one gap to close now; the others named as "later"           |
//! | reframe                | requirements and lessons learned, no raw failure output     |
//! | decompose              | the failing checks; asks for an ordered split into subtasks |
//! | alternative_approach   | the approaches already tried, to be avoided                 |
//! | architect_review       | everything, and a request for specification amendments      |
//! | revert_and_branch      | "reset to observation N", what came after it                |
//! | fresh_start            | only the carry-forward: hints, best signals, anti-patterns, |
//! |                        | remaining gaps — never the earlier attempts themselves      |
//!
//! The texts (preamble, pitfalls, framing, descriptions, templates, rubric,
//! the planning preamble of the strategies that re-plan) are learnable and
//! arrive as [`PromptTexts`]; the assembly here is fixed.

use serde::{Deserialize, Serialize};

use super::RevertTarget;
use super::defaults::PromptTexts;
use super::view::{Focus, ViewBudget, WorkspaceView};
use crate::engine::StrategyKind;
use crate::llm::ChatMessage;
use crate::overseer::signals::{FailureClass, OverseerSignals, Verdict};

/// Test names listed at most in one place; the rest are counted.
const MAX_NAMES: usize = 30;
/// Characters of one verdict's evidence shown at most.
const MAX_EVIDENCE_CHARS: usize = 1500;
/// Earlier attempts shown at most (the latest ones).
const MAX_HISTORY: usize = 8;

/// The task's specification as it stands: the original text and the
/// amendments made since (hints, discovered requirements, reviews).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Specification {
    pub original: String,
    #[serde(default)]
    pub amendments: Vec<String>,
}

impl Specification {
    pub fn new(original: impl Into<String>) -> Specification {
        Specification { original: original.into(), amendments: Vec::new() }
    }

    /// The original followed by the numbered amendments.
    pub fn effective(&self) -> String {
        let mut out = self.original.trim().to_string();
        if !self.amendments.is_empty() {
            out.push_str("\n\nAmendments made since (they take precedence):\n");
            for (i, a) in self.amendments.iter().enumerate() {
                out.push_str(&format!("{}. {}\n", i + 1, a.trim()));
            }
        }
        out
    }
}

/// One earlier attempt in this context, in a line or two.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptNote {
    /// The observation it produced.
    pub sequence: u32,
    pub strategy: StrategyKind,
    /// The executor's own summary of what it did.
    pub summary: String,
    /// What the overseers made of it, e.g. "7 of 10 tests passed".
    pub outcome: String,
    #[serde(default)]
    pub tools_used: Vec<String>,
    /// The edits of that attempt that were refused, each with its reason
    /// ("slug.py (replace): `search` does not match …"), so the next reply
    /// can do better.
    #[serde(default)]
    pub refused: Vec<String>,
}

/// What a fresh start (or a revert) carries from earlier attempts: the
/// knowledge, not the conversation (seed 002 §4.2).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CarryForwardInputs {
    /// The best observation so far and what the overseers measured there.
    pub best_sequence: Option<u32>,
    pub best_signals: Option<OverseerSignals>,
    pub attempts: u32,
    /// What was tried and failed, as prose.
    pub failure_summary: String,
    /// The same, one "do not" per entry.
    pub anti_patterns: Vec<String>,
    pub remaining_gaps: Vec<String>,
}

/// Everything a prompt is built from besides the learnable texts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptInputs {
    pub task_name: String,
    pub specification: Specification,
    /// A person's hints: always carried, always first.
    pub hints: Vec<String>,
    /// From the task file: what the result must respect.
    pub constraints: Vec<String>,
    /// From the task file and from memory: what not to do.
    pub anti_patterns: Vec<String>,
    /// The latest observation and its signals.
    pub latest_sequence: Option<u32>,
    pub latest: Option<OverseerSignals>,
    /// Earlier attempts of this context, oldest first.
    pub history: Vec<AttemptNote>,
    pub carry_forward: Option<CarryForwardInputs>,
    /// Tools the goal gradient blocked (dynamic MUST NOT): the reply may not
    /// use them.
    pub blocked_tools: Vec<String>,
    /// The tools this executor offers (shown with the blocked ones).
    pub available_tools: Vec<String>,
    /// Show the verification rubric; `None`: the strategy's default.
    pub include_rubric: Option<bool>,
    /// What earlier trajectories of the same task category taught (seed 002
    /// §8.1), recalled once when the trajectory started.
    pub lessons: MemoryLessons,
}

/// Lessons from memory: a line per earlier trajectory of the same kind of
/// task. They are knowledge about the task category, not this trajectory's
/// history, so every strategy sees them — a fresh start too.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryLessons {
    /// From trajectories that converged: what moved them.
    pub worked: Vec<String>,
    /// From trajectories that failed: what did not help, what stayed broken.
    pub avoid: Vec<String>,
}

impl MemoryLessons {
    pub fn is_empty(&self) -> bool {
        self.worked.is_empty() && self.avoid.is_empty()
    }

    fn render(&self) -> String {
        let mut out = String::new();
        if !self.worked.is_empty() {
            out.push_str("What worked before:\n");
            out.push_str(&bullets(&self.worked));
            out.push('\n');
        }
        if !self.avoid.is_empty() {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str("What failed before (avoid repeating it):\n");
            out.push_str(&bullets(&self.avoid));
        }
        out
    }
}

/// A prompt: one system message and one user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prompt {
    pub system: String,
    pub user: String,
}

impl Prompt {
    pub fn messages(&self) -> Vec<ChatMessage> {
        vec![ChatMessage::system(self.system.clone()), ChatMessage::user(self.user.clone())]
    }

    /// Both messages as one text, for an agent that reads a prompt file.
    pub fn as_text(&self) -> String {
        format!("# Instructions\n\n{}\n\n# Task\n\n{}", self.system.trim_end(), self.user)
    }
}

/// Whether the verification rubric is shown by default: to the strategies
/// that restate the task, where the model has to judge the whole result.
pub fn rubric_by_default(strategy: StrategyKind) -> bool {
    matches!(
        strategy,
        StrategyKind::Reframe
            | StrategyKind::Decompose
            | StrategyKind::AlternativeApproach
            | StrategyKind::ArchitectReview
            | StrategyKind::FreshStart
    )
}

/// Whether `strategy` plans anew rather than repairing: it is shown the
/// planning preamble (artifact `planning_preamble`).
pub fn replans(strategy: StrategyKind) -> bool {
    matches!(
        strategy,
        StrategyKind::Reframe
            | StrategyKind::Decompose
            | StrategyKind::AlternativeApproach
            | StrategyKind::ArchitectReview
    )
}

/// How the workspace is shown to `strategy`: a budget factor and an order.
pub fn view_for(strategy: StrategyKind, inputs: &PromptInputs, base: ViewBudget) -> (ViewBudget, Focus) {
    match strategy {
        StrategyKind::RetryAugmented => (base.scaled(2.0), Focus::DocsFirst),
        StrategyKind::FocusedRepair => {
            let terms = related_terms(inputs.latest.as_ref());
            if terms.is_empty() { (base.scaled(0.5), Focus::All) } else { (base.scaled(0.5), Focus::Related(terms)) }
        }
        _ => (base, Focus::All),
    }
}

/// Words that identify the failing tests' code: the last part of each
/// failing test's name (`tests::parses_negative` → `parses_negative`).
fn related_terms(latest: Option<&OverseerSignals>) -> Vec<String> {
    let Some(t) = latest.and_then(|s| s.test_results.as_ref()) else { return Vec::new() };
    let mut terms: Vec<String> = t
        .failing
        .iter()
        .filter_map(|name| {
            let base = name.split('[').next().unwrap_or(name);
            base.rsplit([':', '.', '/', ' ']).find(|s| !s.is_empty()).map(str::to_string)
        })
        .collect();
    terms.sort();
    terms.dedup();
    terms
}

/// Assembles the prompt for `strategy`.
pub fn build_prompt(
    strategy: StrategyKind,
    inputs: &PromptInputs,
    texts: &PromptTexts,
    view: &WorkspaceView,
    revert: Option<&RevertTarget>,
) -> Prompt {
    let mut system = texts.preamble.trim().to_string();
    if !texts.pitfalls.trim().is_empty() {
        system.push_str("\n\n");
        system.push_str(texts.pitfalls.trim());
    }

    let mut u = String::new();
    // Hints first, always: they are the highest-signal input there is.
    if !inputs.hints.is_empty() {
        section(&mut u, "Hints from a person (follow these first)", &bullets(&inputs.hints));
    }
    let title = if inputs.task_name.is_empty() { "Task".to_string() } else { format!("Task: {}", inputs.task_name) };
    section(&mut u, &title, &inputs.specification.effective());
    if !inputs.constraints.is_empty() {
        section(&mut u, "Constraints (the result MUST respect these)", &bullets(&inputs.constraints));
    }
    let mut anti = inputs.anti_patterns.clone();
    if let Some(cf) = &inputs.carry_forward
        && strategy != StrategyKind::FreshStart
    {
        anti.extend(cf.anti_patterns.iter().cloned());
    }
    // (A fresh start carries the failed approaches in its own section, once;
    // the task's anti-patterns are still things to avoid, not things tried.)
    if !anti.is_empty() {
        section(&mut u, "Anti-patterns (do NOT do these)", &bullets(&anti));
    }
    if !inputs.lessons.is_empty() {
        section(&mut u, "Lessons from earlier tasks of this kind", &inputs.lessons.render());
    }

    let framing = texts
        .strategy_framing
        .replace("{strategy}", strategy.as_str())
        .replace("{description}", texts.description(strategy).trim());
    let framing = if texts.strategy_framing.contains("{description}") {
        framing
    } else {
        format!("{framing}\n{}", texts.description(strategy))
    };
    section(&mut u, &format!("Strategy for this attempt: {strategy}"), framing.trim());
    // The strategies that re-plan get the planning preamble before their evidence.
    if replans(strategy) && !texts.planning.trim().is_empty() {
        section(&mut u, "Plan before you change anything", texts.planning.trim());
    }

    strategy_sections(&mut u, strategy, inputs, texts, revert);

    if inputs.include_rubric.unwrap_or_else(|| rubric_by_default(strategy))
        && !texts.verification_rubric.trim().is_empty()
    {
        section(&mut u, "How the result will be judged", texts.verification_rubric.trim());
    }

    let must_not: Vec<String> =
        inputs.blocked_tools.iter().map(|t| format!("MUST NOT use `{}` in this attempt.", t.trim())).collect();
    if !must_not.is_empty() || !inputs.available_tools.is_empty() {
        let tools =
            if inputs.available_tools.is_empty() { "(any)".to_string() } else { bullets(&inputs.available_tools) };
        let blocked = if must_not.is_empty() { "(none)".to_string() } else { must_not.join("\n") };
        let mut body = texts.tool_template.replace("{tools}", &tools).replace("{blocked}", &blocked);
        // A learned template that lost its placeholder must not lose the constraint.
        if !texts.tool_template.contains("{blocked}") && !must_not.is_empty() {
            body.push('\n');
            body.push_str(&must_not.join("\n"));
        }
        if !must_not.is_empty() {
            body.push_str("\nA reply that uses a blocked tool is rejected as a whole.");
        }
        section(&mut u, "Tools", body.trim());
    }

    section(&mut u, "Workspace", view.render().trim_end());
    Prompt { system, user: u.trim_end().to_string() + "\n" }
}

fn strategy_sections(
    u: &mut String,
    strategy: StrategyKind,
    inputs: &PromptInputs,
    texts: &PromptTexts,
    revert: Option<&RevertTarget>,
) {
    let latest = inputs.latest.as_ref();
    let at = inputs.latest_sequence.map_or(String::new(), |n| format!(" (observation {n})"));
    match strategy {
        StrategyKind::RetryWithFeedback | StrategyKind::RetryAugmented | StrategyKind::ArchitectReview => {
            if let Some(s) = latest {
                section(u, &format!("Feedback from the last measurement{at}"), &feedback(s));
            }
            history(u, &inputs.history, "Attempts so far");
            if strategy == StrategyKind::RetryAugmented {
                section(
                    u,
                    "More context",
                    "Documentation and examples are shown first among the files below, with twice the usual room.",
                );
            }
            if strategy == StrategyKind::ArchitectReview {
                section(
                    u,
                    "Specification review",
                    "List every change the specification needs in `amendments`, each as one precise sentence, \
                     then implement the amended specification.",
                );
            }
        }
        StrategyKind::FocusedRepair => {
            let failing = latest.map(failing_tests).unwrap_or_default();
            if failing.is_empty() {
                // No test names: the failing checks are the targets.
                if let Some(s) = latest {
                    section(u, &format!("Failing checks to repair{at}"), &feedback(s));
                }
            } else {
                section(u, &format!("Failing tests to repair{at}"), &names_list(&failing));
                let test_evidence: Vec<&Verdict> = latest
                    .map(|s| {
                        failed_verdicts(s)
                            .into_iter()
                            .filter(|v| s.test_results.is_some() && verdict_mentions_any(v, &failing))
                            .collect()
                    })
                    .unwrap_or_default();
                if !test_evidence.is_empty() {
                    section(u, "Their output", &evidence_blocks(&test_evidence));
                }
            }
        }
        StrategyKind::IncrementalRefinement => {
            let failing = latest.map(failing_tests).unwrap_or_default();
            let mut gaps: Vec<String> = failing.iter().map(|n| format!("make test `{n}` pass")).collect();
            if let Some(s) = latest {
                gaps.extend(
                    other_failed_checks(s, &failing).iter().map(|v| format!("make the check `{}` pass", v.overseer)),
                );
            }
            if gaps.is_empty()
                && let Some(cf) = &inputs.carry_forward
            {
                gaps.extend(cf.remaining_gaps.iter().cloned());
            }
            match gaps.split_first() {
                Some((first, rest)) => {
                    section(u, "The one gap to close now", first);
                    if !rest.is_empty() {
                        section(u, "Later (do not work on these in this attempt)", &names_list(rest));
                    }
                    if let Some(s) = latest {
                        let first_failed: Vec<&Verdict> = failed_verdicts(s).into_iter().take(1).collect();
                        if !first_failed.is_empty() {
                            section(u, "Evidence", &evidence_blocks(&first_failed));
                        }
                    }
                }
                None => {
                    section(u, "The one gap to close now", "No check fails; complete what the task still asks for.")
                }
            }
        }
        StrategyKind::Reframe => {
            let failing = latest.map(failing_tests).unwrap_or_default();
            let mut reqs: Vec<String> = failing.iter().map(|n| format!("test `{n}` passes")).collect();
            if let Some(s) = latest {
                reqs.extend(
                    other_failed_checks(s, &failing).iter().map(|v| format!("the check `{}` passes", v.overseer)),
                );
                let passing = s.test_results.as_ref().map_or(0, |t| t.passed);
                if passing > 0 {
                    reqs.push(format!("the {passing} tests that pass now keep passing"));
                }
            }
            if !reqs.is_empty() {
                section(u, "Requirements the new implementation must meet", &bullets(&reqs));
            }
            let mut lessons: Vec<String> = inputs
                .history
                .iter()
                .rev()
                .take(MAX_HISTORY)
                .rev()
                .map(|a| format!("{} ({}): {}", a.strategy, a.outcome, first_line(&a.summary)))
                .collect();
            if let Some(cf) = &inputs.carry_forward
                && !cf.failure_summary.trim().is_empty()
            {
                lessons.push(cf.failure_summary.trim().to_string());
            }
            if !lessons.is_empty() {
                section(u, "Lessons from the attempts so far", &bullets(&lessons));
            }
        }
        StrategyKind::Decompose => {
            if let Some(s) = latest {
                section(u, &format!("Where things stand{at}"), &summary_with_names(s));
            }
            section(
                u,
                "Decomposition",
                "Split the task into subtasks and list them in `subtasks`, in the order they are to be done: \
                 each is carried out and checked on its own, one after another in this workspace, and then one \
                 integration pass makes the whole work and checks it against every check of the task. Describe \
                 each subtask precisely enough to be done alone, name the checks that measure it, and say when it \
                 is done. Do not edit any file now.",
            );
        }
        StrategyKind::AlternativeApproach => {
            let tried: Vec<String> = inputs
                .history
                .iter()
                .map(|a| {
                    let tools = if a.tools_used.is_empty() {
                        String::new()
                    } else {
                        format!(" using {}", a.tools_used.join(", "))
                    };
                    format!(
                        "observation {} — {}{tools}: {} → {}",
                        a.sequence,
                        a.strategy,
                        first_line(&a.summary),
                        a.outcome
                    )
                })
                .collect();
            if !tried.is_empty() {
                section(u, "Approaches already tried (do not repeat them)", &bullets(&tried));
            }
            if let Some(s) = latest {
                section(u, &format!("Where things stand{at}"), &summary_with_names(s));
            }
        }
        StrategyKind::RevertAndBranch => {
            let (n, commit) = revert.map_or((None, String::new()), |r| {
                (Some(r.sequence), r.artifact.commit.chars().take(12).collect::<String>())
            });
            let mut body = match n {
                Some(n) => format!(
                    "The workspace was reset to observation {n} (commit {commit}), the best state reached so far. \
                     Every change made after it has been discarded; the files below are as they were then."
                ),
                None => "The workspace was reset to the best state reached so far.".to_string(),
            };
            if let Some(best) = inputs.carry_forward.as_ref().and_then(|c| c.best_signals.as_ref()) {
                body.push_str("\n\nMeasured at that state:\n");
                body.push_str(&summary_with_names(best));
            }
            section(u, "Where you start", &body);
            let after: Vec<AttemptNote> =
                inputs.history.iter().filter(|a| n.is_none_or(|n| a.sequence > n)).cloned().collect();
            history(u, &after, "Attempts after that state (they did not help; go another way)");
        }
        StrategyKind::FreshStart => {
            let cf = inputs.carry_forward.clone().unwrap_or_default();
            let attempts = match cf.best_sequence {
                Some(best) => {
                    format!("{} so far; the best was observation {best}.", crate::counted(cf.attempts, "attempt"))
                }
                None => format!("{} so far.", crate::counted(cf.attempts, "attempt")),
            };
            let mut facts = String::new();
            if let Some(best) = &cf.best_signals {
                facts.push_str("Best measurements reached:\n");
                facts.push_str(&summary_with_names(best));
            }
            if !cf.remaining_gaps.is_empty() {
                facts.push_str("\nRemaining gaps:\n");
                facts.push_str(&bullets(&cf.remaining_gaps));
            }
            // The failure summary already lists each failed approach once.
            let failures = cf.failure_summary.trim().to_string();
            let (facts, failures) = (or_none(facts.trim()), or_none(&failures));
            let template = &texts.carry_forward_template;
            let mut body =
                template.replace("{attempts}", &attempts).replace("{facts}", &facts).replace("{failures}", &failures);
            // A learned template that dropped a placeholder must not drop the knowledge.
            for (key, value) in [("{attempts}", &attempts), ("{facts}", &facts), ("{failures}", &failures)] {
                if !template.contains(key) {
                    body.push_str(&format!("\n{value}\n"));
                }
            }
            section(u, "Carried forward from earlier attempts", body.trim());
        }
    }
}

fn or_none(s: &str) -> String {
    if s.trim().is_empty() { "(none)".to_string() } else { s.to_string() }
}

fn section(out: &mut String, title: &str, body: &str) {
    out.push_str("## ");
    out.push_str(title);
    out.push_str("\n\n");
    out.push_str(body.trim_end());
    out.push_str("\n\n");
}

fn bullets(items: &[String]) -> String {
    items.iter().map(|i| format!("- {}", i.trim())).collect::<Vec<_>>().join("\n")
}

fn names_list(names: &[String]) -> String {
    let mut shown: Vec<String> = names.iter().take(MAX_NAMES).map(|n| format!("- {n}")).collect();
    if names.len() > MAX_NAMES {
        shown.push(format!("- … and {} more", names.len() - MAX_NAMES));
    }
    shown.join("\n")
}

fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).map_or("", str::trim)
}

fn failing_tests(s: &OverseerSignals) -> Vec<String> {
    s.test_results.as_ref().map(|t| t.failing.clone()).unwrap_or_default()
}

fn failed_verdicts(s: &OverseerSignals) -> Vec<&Verdict> {
    s.verdicts.iter().filter(|v| !v.passed && !v.skipped).collect()
}

/// The failed checks other than the test runs whose failing tests are
/// already named (their evidence names those tests).
fn other_failed_checks<'a>(s: &'a OverseerSignals, failing: &[String]) -> Vec<&'a Verdict> {
    failed_verdicts(s).into_iter().filter(|v| failing.is_empty() || !verdict_mentions_any(v, failing)).collect()
}

fn verdict_mentions_any(v: &Verdict, names: &[String]) -> bool {
    names.iter().any(|n| v.evidence.contains(n.as_str()))
}

/// One line per measurement, with counts.
fn measurements(s: &OverseerSignals) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(b) = &s.build_result {
        out.push(format!(
            "build: {} ({}, {})",
            if b.success { "succeeds" } else { "FAILS" },
            crate::counted(b.error_count, "error"),
            crate::counted(b.warning_count, "warning")
        ));
    }
    if let Some(t) = &s.type_check {
        let errors = crate::counted(t.error_count, "error");
        out.push(format!("type check: {} ({errors})", if t.clean { "clean" } else { "FAILS" }));
    }
    if let Some(l) = &s.lint_results {
        out.push(format!(
            "lint: {}, {}",
            crate::counted(l.error_count, "error"),
            crate::counted(l.warning_count, "warning")
        ));
    }
    if let Some(t) = &s.test_results {
        out.push(format!("tests: {} of {} pass, {} fail, {} skipped", t.passed, t.total, t.failed, t.skipped));
    }
    if let Some(x) = &s.security_scan {
        out.push(format!(
            "security: {} critical, {} high, {} medium, {} low",
            x.critical_count, x.high_count, x.medium_count, x.low_count
        ));
    }
    for c in &s.custom_checks {
        match (c.passed, c.detail.trim()) {
            (true, _) => out.push(format!("check `{}`: passes", c.name)),
            // What our own checks found, where they say it (an overseer's
            // output reaches the model through its verdict, not here).
            (false, detail) if c.required && !detail.is_empty() => {
                out.push(format!("check `{}`: FAILS — {detail}", c.name))
            }
            (false, _) => out.push(format!("check `{}`: FAILS", c.name)),
        }
    }
    for v in s.verdicts.iter().filter(|v| v.failure_class == Some(FailureClass::Environmental)) {
        out.push(format!("`{}` could not run (environmental; not your change's fault)", v.overseer));
    }
    out
}

/// Counts and failing test names, without raw output.
fn summary_with_names(s: &OverseerSignals) -> String {
    let mut out = bullets(&measurements(s));
    let failing = failing_tests(s);
    if !failing.is_empty() {
        out.push_str("\nFailing tests:\n");
        out.push_str(&names_list(&failing));
    }
    if out.trim().is_empty() { "Nothing was measured.".to_string() } else { out }
}

/// Counts, failing test names and the evidence of every failed check.
fn feedback(s: &OverseerSignals) -> String {
    let mut out = summary_with_names(s);
    let failed = failed_verdicts(s);
    if !failed.is_empty() {
        out.push_str("\n\n");
        out.push_str(&evidence_blocks(&failed));
    }
    out
}

fn evidence_blocks(verdicts: &[&Verdict]) -> String {
    verdicts
        .iter()
        .map(|v| {
            let class = match v.failure_class {
                Some(FailureClass::Environmental) => "environmental: the check could not run",
                _ => "logical",
            };
            let evidence = tail_chars(v.evidence.trim(), MAX_EVIDENCE_CHARS);
            let fence = if evidence.contains("```") { "````" } else { "```" };
            format!("### `{}` failed ({class})\n{fence}\n{evidence}\n{fence}", v.overseer)
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn history(u: &mut String, notes: &[AttemptNote], title: &str) {
    if notes.is_empty() {
        return;
    }
    let start = notes.len().saturating_sub(MAX_HISTORY);
    let lines: Vec<String> = notes[start..]
        .iter()
        .map(|a| {
            let mut line =
                format!("observation {} — {}: {} → {}", a.sequence, a.strategy, first_line(&a.summary), a.outcome);
            for refused in a.refused.iter().take(MAX_REFUSED_SHOWN) {
                line.push_str(&format!("\n  edit refused: {}", clip_chars(refused, MAX_REFUSED_CHARS)));
            }
            line
        })
        .collect();
    let mut body = bullets(&lines);
    if start > 0 {
        body = format!("({} not shown)\n{body}", crate::counted(start, "earlier attempt"));
    }
    section(u, title, &body);
}

/// Refused edits shown per attempt, and the characters of each reason.
const MAX_REFUSED_SHOWN: usize = 4;
const MAX_REFUSED_CHARS: usize = 700;

fn clip_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}…", &s[..cut]),
    }
}

/// The first line and the last `max` characters, for long evidence.
fn tail_chars(s: &str, max: usize) -> String {
    let count = s.chars().count();
    if count <= max {
        return s.to_string();
    }
    let head = first_line(s);
    let tail: String = s.chars().skip(count - max).collect();
    format!("{head}\n[…]\n{tail}")
}
