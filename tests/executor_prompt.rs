//! Each strategy's prompt, built from the same trajectory state, differs in
//! the way the strategy means (seed 002 §4.1), and the frame every prompt
//! shares holds: hints first, the effective specification, MUST NOT lines
//! for blocked tools, a bounded view of the files.

use attractor::engine::StrategyKind;
use attractor::executor::prompt::view_for;
use attractor::executor::{
    AttemptNote, CarryForwardInputs, MemoryLessons, PromptInputs, PromptTexts, RevertTarget, Specification, ViewBudget,
    WorkspaceView, build_prompt,
};
use attractor::overseer::signals::{BuildResult, FailureClass, OverseerSignals, TestResults, Verdict};
use attractor::workspace::{ArtifactReference, Workspace, WorkspaceConfig};

fn verdict(name: &str, passed: bool, evidence: &str) -> Verdict {
    Verdict {
        overseer: name.into(),
        passed,
        failure_class: (!passed).then_some(FailureClass::Logical),
        evidence: evidence.into(),
        skipped: false,
    }
}

fn latest() -> OverseerSignals {
    OverseerSignals {
        build_result: Some(BuildResult { success: true, error_count: 0, warning_count: 0 }),
        test_results: Some(TestResults {
            passed: 3,
            failed: 2,
            skipped: 0,
            total: 5,
            failing: vec!["tests::parses_negative".into(), "tests::rejects_overflow".into()],
            passing: vec!["tests::parses_zero".into(), "tests::parses_one".into(), "tests::parses_many".into()],
            regression_count: 0,
            missing: 0,
            new_skips: 0,
            judgement: None,
        }),
        verdicts: vec![
            verdict("build", true, "build passed"),
            verdict(
                "tests",
                false,
                "2 of 5 tests failed: tests::parses_negative, tests::rejects_overflow\n---- tests::parses_negative stdout ----\nASSERTION left: 4 right: -4",
            ),
            verdict("clippy", false, "lint failed: 1 error(s)\nerror: LINT-EVIDENCE needless_return"),
        ],
        ..OverseerSignals::default()
    }
}

fn inputs() -> PromptInputs {
    PromptInputs {
        task_name: "parser".into(),
        specification: Specification {
            original: "Implement `parse(s) -> Result<i64, Error>` for decimal integers.".into(),
            amendments: vec!["Negative numbers are allowed.".into()],
        },
        hints: vec!["Use i64::checked_mul for overflow.".into()],
        constraints: vec!["No new dependencies.".into()],
        anti_patterns: vec!["Do not parse with floating point.".into()],
        latest_sequence: Some(3),
        latest: Some(latest()),
        history: vec![
            AttemptNote {
                sequence: 1,
                strategy: StrategyKind::RetryWithFeedback,
                summary: "HISTORY-ONE: split on '-' and parsed the rest".into(),
                outcome: "2 of 5 tests pass".into(),
                tools_used: vec!["str::split".into()],
                refused: vec![],
            },
            AttemptNote {
                sequence: 2,
                strategy: StrategyKind::FocusedRepair,
                summary: "HISTORY-TWO: handled the sign with a flag".into(),
                outcome: "4 of 5 tests pass".into(),
                tools_used: vec!["regex".into()],
                refused: vec![],
            },
            AttemptNote {
                sequence: 3,
                strategy: StrategyKind::IncrementalRefinement,
                summary: "HISTORY-THREE: rewrote the digit loop".into(),
                outcome: "3 of 5 tests pass".into(),
                tools_used: vec![],
                refused: vec!["src/lib.rs (replace): REFUSED-THREE `search` does not match the file".into()],
            },
        ],
        carry_forward: Some(CarryForwardInputs {
            best_sequence: Some(2),
            best_signals: Some(OverseerSignals {
                test_results: Some(TestResults {
                    passed: 4,
                    failed: 1,
                    total: 5,
                    failing: vec!["tests::rejects_overflow".into()],
                    ..TestResults::default()
                }),
                ..OverseerSignals::default()
            }),
            attempts: 3,
            failure_summary: "CARRIED-SUMMARY: parsing through floats lost precision.".into(),
            anti_patterns: vec!["CARRIED-ANTI: do not accumulate in i32".into()],
            remaining_gaps: vec!["CARRIED-GAP: overflow is not rejected".into()],
        }),
        blocked_tools: vec!["regex".into()],
        available_tools: vec!["write_file".into(), "delete_file".into()],
        include_rubric: None,
        lessons: MemoryLessons::default(),
    }
}

fn revert() -> RevertTarget {
    RevertTarget {
        sequence: 2,
        artifact: ArtifactReference {
            commit: "abcdef0123456789abcdef0123456789abcdef01".into(),
            files_changed: 1,
            lines_changed: 4,
        },
    }
}

fn prompt(kind: StrategyKind) -> attractor::executor::Prompt {
    let view = WorkspaceView::default();
    build_prompt(kind, &inputs(), &PromptTexts::default(), &view, Some(&revert()))
}

/// The text of one `## title` section of the user message.
fn section(user: &str, title_start: &str) -> Option<String> {
    let start = user.find(&format!("## {title_start}"))?;
    let rest = &user[start..];
    let body_start = rest.find('\n').unwrap_or(rest.len());
    let end = rest[body_start..].find("\n## ").map_or(rest.len(), |i| body_start + i);
    Some(rest[..end].to_string())
}

#[test]
fn every_prompt_starts_with_the_hints_and_keeps_the_shared_frame() {
    let texts = PromptTexts::default();
    for kind in StrategyKind::ALL {
        let p = prompt(kind);
        assert!(p.user.starts_with("## Hints from a person"), "{kind}: {}", &p.user[..80]);
        assert!(p.user.contains("Use i64::checked_mul for overflow."), "{kind}");
        assert!(p.user.contains("decimal integers") && p.user.contains("1. Negative numbers are allowed."), "{kind}");
        assert!(p.user.contains("MUST NOT use `regex` in this attempt."), "{kind}");
        assert!(p.user.contains(&format!("## Strategy for this attempt: {kind}")), "{kind}");
        assert!(p.user.contains(texts.description(kind)), "{kind}: the strategy's description is shown");
        assert!(p.system.starts_with(texts.preamble.trim()) && p.system.contains(texts.pitfalls.trim()), "{kind}");
    }
}

#[test]
fn the_ten_strategies_give_ten_different_prompts() {
    let prompts: Vec<String> = StrategyKind::ALL.iter().map(|&k| prompt(k).user).collect();
    for i in 0..prompts.len() {
        for j in i + 1..prompts.len() {
            assert_ne!(prompts[i], prompts[j], "{} and {}", StrategyKind::ALL[i], StrategyKind::ALL[j]);
        }
    }
}

#[test]
fn retry_with_feedback_shows_every_failing_check_and_the_attempts() {
    let u = prompt(StrategyKind::RetryWithFeedback).user;
    let feedback = section(&u, "Feedback from the last measurement (observation 3)").unwrap();
    assert!(feedback.contains("tests::parses_negative") && feedback.contains("tests::rejects_overflow"));
    assert!(feedback.contains("ASSERTION left: 4") && feedback.contains("LINT-EVIDENCE"), "{feedback}");
    assert!(feedback.contains("tests: 3 of 5 pass, 2 fail"), "{feedback}");
    assert!(u.contains("HISTORY-ONE") && u.contains("HISTORY-THREE"));
    assert!(
        u.contains("edit refused: src/lib.rs (replace): REFUSED-THREE"),
        "a refused edit's reason reaches the next prompt: {u}"
    );
    assert!(u.contains("CARRIED-ANTI"), "the carried anti-patterns are listed as anti-patterns");
    assert!(!u.contains("How the result will be judged"), "no rubric for a plain retry");
}

#[test]
fn focused_repair_names_only_the_failing_tests() {
    let u = prompt(StrategyKind::FocusedRepair).user;
    let targets = section(&u, "Failing tests to repair (observation 3)").unwrap();
    assert!(targets.contains("- tests::parses_negative") && targets.contains("- tests::rejects_overflow"));
    for passing in ["tests::parses_zero", "tests::parses_one", "tests::parses_many"] {
        assert!(!u.contains(passing), "a passing test is named: {passing}");
    }
    assert!(u.contains("ASSERTION left: 4"), "the failing tests' output is shown");
    assert!(!u.contains("LINT-EVIDENCE"), "other checks' output is not");
    assert!(!u.contains("HISTORY-"), "no history: maximum focus");
}

#[test]
fn incremental_refinement_targets_one_gap_and_defers_the_rest() {
    let u = prompt(StrategyKind::IncrementalRefinement).user;
    let now = section(&u, "The one gap to close now").unwrap();
    assert!(now.contains("make test `tests::parses_negative` pass"), "{now}");
    assert!(!now.contains("rejects_overflow"));
    let later = section(&u, "Later (do not work on these in this attempt)").unwrap();
    assert!(later.contains("tests::rejects_overflow") && later.contains("`clippy`"), "{later}");
}

#[test]
fn reframe_states_requirements_and_lessons_without_raw_output() {
    let u = prompt(StrategyKind::Reframe).user;
    let reqs = section(&u, "Requirements the new implementation must meet").unwrap();
    assert!(reqs.contains("test `tests::parses_negative` passes"));
    assert!(reqs.contains("the check `clippy` passes"));
    assert!(reqs.contains("the 3 tests that pass now keep passing"));
    assert!(section(&u, "Lessons from the attempts so far").unwrap().contains("CARRIED-SUMMARY"));
    assert!(!u.contains("ASSERTION left: 4") && !u.contains("LINT-EVIDENCE"));
    assert!(u.contains("## How the result will be judged"));
}

#[test]
fn alternative_approach_lists_what_was_tried_with_its_tools() {
    let u = prompt(StrategyKind::AlternativeApproach).user;
    let tried = section(&u, "Approaches already tried (do not repeat them)").unwrap();
    assert!(tried.contains("observation 2 — focused_repair using regex: HISTORY-TWO"), "{tried}");
    assert!(tried.contains("→ 4 of 5 tests pass"));
}

#[test]
fn decompose_and_architect_review_ask_for_their_own_fields() {
    assert!(section(&prompt(StrategyKind::Decompose).user, "Decomposition").unwrap().contains("`subtasks`"));
    assert!(
        section(&prompt(StrategyKind::ArchitectReview).user, "Specification review").unwrap().contains("`amendments`")
    );
}

#[test]
fn revert_and_branch_says_where_the_workspace_was_reset_to() {
    let u = prompt(StrategyKind::RevertAndBranch).user;
    let start = section(&u, "Where you start").unwrap();
    assert!(start.contains("The workspace was reset to observation 2 (commit abcdef012345)"), "{start}");
    assert!(start.contains("tests: 4 of 5 pass"), "the best state's measurements: {start}");
    let after = section(&u, "Attempts after that state").unwrap();
    assert!(after.contains("HISTORY-THREE") && !after.contains("HISTORY-ONE") && !after.contains("HISTORY-TWO"));
}

#[test]
fn fresh_start_carries_knowledge_never_the_conversation() {
    let u = prompt(StrategyKind::FreshStart).user;
    let carried = section(&u, "Carried forward from earlier attempts").unwrap();
    for expected in [
        "3 attempts so far; the best was observation 2.",
        "tests: 4 of 5 pass",
        "tests::rejects_overflow",
        "CARRIED-GAP",
        "CARRIED-SUMMARY",
    ] {
        assert!(carried.contains(expected), "missing {expected}: {carried}");
    }
    // Each failed approach once (the summary lists them), and the task's
    // anti-patterns as things to avoid — not as approaches already tried.
    assert_eq!(u.matches("CARRIED-SUMMARY").count(), 1, "{u}");
    assert!(!carried.contains("Do not parse with floating point."), "{carried}");
    let avoid = section(&u, "Anti-patterns (do NOT do these)").expect("the task's anti-patterns");
    assert!(avoid.contains("Do not parse with floating point."), "{avoid}");
    assert!(!u.contains("HISTORY-"), "earlier attempts are not carried");
    assert!(!u.contains("ASSERTION left: 4") && !u.contains("LINT-EVIDENCE"), "nor the latest raw output");
    assert!(u.starts_with("## Hints from a person"));
    assert!(u.contains("## How the result will be judged"));
}

#[test]
fn lessons_from_memory_reach_every_strategy_after_the_task_and_before_the_strategy() {
    let mut with = inputs();
    with.lessons = MemoryLessons {
        worked: vec!["MEMORY-WORKED: `parser` converged in 2 iterations with focused_repair".into()],
        avoid: vec!["MEMORY-AVOID: `lexer` ended trapped in a limit_cycle".into()],
    };
    for kind in StrategyKind::ALL {
        let p = build_prompt(kind, &with, &PromptTexts::default(), &WorkspaceView::default(), Some(&revert()));
        let lessons = section(&p.user, "Lessons from earlier tasks of this kind").unwrap_or_else(|| panic!("{kind}"));
        assert!(lessons.contains("What worked before:\n- MEMORY-WORKED"), "{kind}: {lessons}");
        assert!(lessons.contains("What failed before (avoid repeating it):\n- MEMORY-AVOID"), "{kind}: {lessons}");
        let (task, memory, strategy) =
            (p.user.find("## Task").unwrap(), p.user.find("## Lessons").unwrap(), p.user.find("## Strategy").unwrap());
        assert!(task < memory && memory < strategy, "{kind}");
        assert!(p.user.starts_with("## Hints from a person"), "{kind}: hints stay first");
    }
    // Without memories there is no such section.
    assert!(!prompt(StrategyKind::FreshStart).user.contains("Lessons from earlier tasks"));
}

#[test]
fn learned_texts_that_lose_a_placeholder_do_not_lose_the_content() {
    let texts = PromptTexts {
        strategy_framing: "Follow the plan.".into(),
        tool_template: "Be careful with tools.".into(),
        carry_forward_template: "Start over.".into(),
        ..PromptTexts::default()
    };
    let view = WorkspaceView::default();
    let fresh = build_prompt(StrategyKind::FreshStart, &inputs(), &texts, &view, None);
    assert!(fresh.user.contains("MUST NOT use `regex`"));
    assert!(fresh.user.contains(texts.description(StrategyKind::FreshStart)));
    assert!(fresh.user.contains("CARRIED-GAP") && fresh.user.contains("CARRIED-SUMMARY"));
}

#[tokio::test]
async fn the_view_follows_the_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("task");
    std::fs::create_dir_all(src.join("src")).unwrap();
    std::fs::create_dir_all(src.join("docs")).unwrap();
    std::fs::write(src.join("src/parse.rs"), "fn parses_negative_helper() {}\n").unwrap();
    std::fs::write(src.join("src/unrelated.rs"), "UNRELATED-CONTENT\n").unwrap();
    std::fs::write(src.join("docs/guide.md"), "GUIDE-CONTENT\n").unwrap();
    std::fs::write(src.join("big.txt"), "x".repeat(40_000)).unwrap();
    let ws = Workspace::create(&src, &dir.path().join("ws"), WorkspaceConfig::default()).await.unwrap();
    let base = ViewBudget { max_files_listed: 50, max_file_bytes: 10_000, max_total_bytes: 12_000 };

    // FocusedRepair: the files that mention a failing test come first; the others are only listed.
    let (budget, focus) = view_for(StrategyKind::FocusedRepair, &inputs(), base);
    let view = WorkspaceView::gather(&ws, budget, &focus).await.unwrap();
    let text = view.render();
    assert!(text.contains("fn parses_negative_helper"), "{text}");
    assert!(!text.contains("UNRELATED-CONTENT") && text.contains("src/unrelated.rs (not related"), "{text}");

    // RetryAugmented: documentation first, with twice the room.
    let (budget, focus) = view_for(StrategyKind::RetryAugmented, &inputs(), base);
    assert_eq!(budget.max_total_bytes, 24_000);
    let view = WorkspaceView::gather(&ws, budget, &focus).await.unwrap();
    assert_eq!(view.files[0].path, "docs/guide.md");

    // A plain retry: path order, a long file cut at its limit, and the rest listed once the budget is spent.
    let (budget, focus) = view_for(StrategyKind::RetryWithFeedback, &inputs(), base);
    let view = WorkspaceView::gather(&ws, budget, &focus).await.unwrap();
    assert_eq!(view.files[0].path, "big.txt");
    assert_eq!(view.files[0].content.as_ref().map(String::len), Some(10_000));
    assert_eq!(view.files[0].note.as_deref(), Some("first 10000 of 40000 bytes"));
    let rendered = view.render();
    assert!(rendered.contains("GUIDE-CONTENT"));
    assert!(rendered.len() < 14_000, "bounded: {}", rendered.len());
}
