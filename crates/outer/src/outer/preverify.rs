//! Pre-verify: a child's new artifact content is checked before any run is
//! spent on it (seed 001's design-time cheating gate). An optimizer that
//! writes the answers into the prompt, or tells the runs to check less,
//! lowers the loss without getting better; such a child is rejected with a
//! reason and never evaluated.
//!
//! [`Guard::for_suite`] collects, once per run, what the suite's tasks are
//! checked against; [`Guard::check`] is pure and compares a proposed content
//! with it. Only what the child *adds* counts: a string its parent already
//! had (the suite author's own default, say) is not held against it.
//!
//! What is detected:
//! - **held-out tasks**: content quoting a held-out task's name or its whole
//!   `task:` text (6 characters or more; 12 for a one-word name, so a task
//!   called `hidden` does not ban the word), case and spacing ignored;
//! - **expected answers** of every task, training or held out:
//!   - command tasks: the values of `env:` and the quoted literals of
//!     `command:` (those without `$`, which are paths and variables);
//!   - agent tasks: the literal parts of custom overseers'
//!     `success_pattern` / `failure_pattern`, the quoted literals of every
//!     overseer command (`grep -q "…"`), and from the workspace's test files
//!     (`test_*`, `*_test.*`, `*.test.*`, `*.spec.*`, anything under `tests/`,
//!     `test/`, `spec/`, `__tests__/`) the lines that assert (a word like
//!     `assert…`, `expect…`, `should`, `check…`, `verify`), whole when 20
//!     characters or more, and the string literals on them;
//!   - optimize tasks: the problem's best-known objective value, its best
//!     known point's coordinates and the feasible reference value.
//! - **narrowing** what is evaluated: an instruction to skip, disable,
//!   delete, remove, ignore, bypass, weaken or comment out tests, checks,
//!   assertions, overseers, linters or the build (`skip the failing tests`,
//!   `failing tests may be deleted`), unless negated in the same sentence
//!   (`never skip tests` is good advice); and test-skipping markers
//!   (`@pytest.mark.skip`, `@unittest.skip`, `#[ignore]`, `it.skip(`, `xit(`,
//!   `t.Skip(`, `--skip`, `-k "not …"`).
//!
//! To keep short, common strings from tripping it: texts are compared
//! lowercased with runs of whitespace collapsed; an expected string must be
//! at least 8 characters, or 12 when it is a single identifier-like word
//! (`__main__`, `unittest` are not answers); a number counts only with 4 or
//! more significant digits (trailing zeros not counted: `1.000` is one) and
//! matches a number in the content that equals it to the content's own
//! precision, sign ignored (`-30665.54` matches −30665.5387; `0.75` does not
//! match 0.7499).
//!
//! Not detected: paraphrases and partial quotes of a held-out task, answers
//! shorter than the minimums (`"IV"`, `42`), expected values that live only
//! in a command task's harness script (Attractor does not read it), test
//! files outside the agent workspace, narrowing said in other words or in
//! the passive without `should/can/may be` (`tests that fail get
//! deleted`), and an artifact that games a check without naming it.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::suite::{Suite, TaskKind};

/// The shortest held-out name or text that counts as a quote.
pub const MIN_HOLDOUT_CHARS: usize = 6;
/// The shortest expected string that counts.
pub const MIN_ANSWER_CHARS: usize = 8;
/// The shortest expected string that is one identifier-like word.
pub const MIN_WORD_ANSWER_CHARS: usize = 12;
/// The shortest assertion line taken whole.
pub const MIN_LINE_CHARS: usize = 20;
/// Significant digits a number needs to be distinctive.
pub const MIN_SIGNIFICANT_DIGITS: usize = 4;
/// Test files read per agent workspace, and the largest read.
const MAX_TEST_FILES: usize = 200;
const MAX_TEST_FILE_BYTES: u64 = 256 * 1024;

/// One thing a task is checked against.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub task: String,
    /// The task is held out (its name never reaches a model).
    pub holdout: bool,
    /// Where it comes from, e.g. "env `EXPECTED`" or "test file `test_slug.py` line 8".
    pub source: String,
    pub value: Expected,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expected {
    /// Normalised (lowercase, single spaces).
    Text(String),
    Number(f64),
}

/// Why a child was rejected before evaluation.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// It quotes a held-out task's name or text.
    HoldoutText { quote: String },
    /// It contains what a task is checked against.
    ExpectedAnswer { task: String, holdout: bool, source: String, quote: String },
    /// It tells the runs to check less.
    Narrowing { phrase: String },
}

impl Finding {
    /// The reason stored with the rejected node, for people.
    pub fn reason(&self) -> String {
        match self {
            Finding::HoldoutText { quote } => format!("the content quotes held-out task text `{quote}`"),
            Finding::ExpectedAnswer { task, holdout, source, quote } => format!(
                "the content contains what {}task `{task}` is checked against ({source}): `{quote}`",
                if *holdout { "held-out " } else { "" }
            ),
            Finding::Narrowing { phrase } => {
                format!("the content narrows what is evaluated: `{phrase}` tells the runs to check less")
            }
        }
    }

    /// What a model may be told about it: never the quoted text, never a
    /// held-out task's name.
    pub fn feedback(&self) -> String {
        match self {
            Finding::HoldoutText { .. } => {
                "rejected before evaluation: it quoted a task the optimizer must not see".into()
            }
            Finding::ExpectedAnswer { holdout: true, .. } => {
                "rejected before evaluation: it wrote in an expected answer of a task (teaching to the test)".into()
            }
            Finding::ExpectedAnswer { task, .. } => format!(
                "rejected before evaluation: it wrote in an expected answer of task `{task}` (teaching to the test)"
            ),
            Finding::Narrowing { phrase } => {
                format!("rejected before evaluation: it told the runs to check less (`{phrase}`)")
            }
        }
    }
}

/// What a suite's tasks are checked against.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// Normalised held-out names and texts.
    pub holdout: Vec<String>,
    pub answers: Vec<Answer>,
}

impl Guard {
    /// Collects the held-out texts and every task's expected answers; reads
    /// the agent workspaces' test files and resolves optimize problems. What
    /// cannot be read is skipped (the run reports it on its own).
    pub fn for_suite(suite: &Suite) -> Guard {
        let mut g = Guard::default();
        for t in &suite.tasks {
            if t.holdout {
                for text in [&t.name, &t.task] {
                    let n = normalise(text);
                    let word = n.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-');
                    if n.chars().count() >= if word { MIN_WORD_ANSWER_CHARS } else { MIN_HOLDOUT_CHARS } {
                        g.holdout.push(n);
                    }
                }
            }
            let mut add = |source: String, value: Expected| {
                g.answers.push(Answer { task: t.name.clone(), holdout: t.holdout, source, value });
            };
            match &t.kind {
                TaskKind::Command(c) => {
                    for (key, value) in &c.env {
                        for v in expected_values(value) {
                            add(format!("env `{key}`"), v);
                        }
                    }
                    for lit in shell_literals(&c.command) {
                        add("a quoted literal of its command".into(), lit);
                    }
                }
                TaskKind::Agent(a) => {
                    for o in &a.overseers {
                        for (key, pattern) in
                            [("success_pattern", &o.success_pattern), ("failure_pattern", &o.failure_pattern)]
                        {
                            for piece in pattern.iter().flat_map(|p| regex_literals(p)) {
                                add(format!("overseer `{}` {key}", o.name), Expected::Text(piece));
                            }
                        }
                        for lit in shell_literals(&o.command) {
                            add(format!("a quoted literal of overseer `{}`", o.name), lit);
                        }
                    }
                    if let Some(ws) = &a.workspace {
                        let root = suite.dir.join(ws);
                        for (file, line, value) in test_file_answers(&root) {
                            add(format!("test file `{}` line {line}", file.display()), value);
                        }
                    }
                }
                TaskKind::Optimize(o) => {
                    if let Ok((problem, reference)) = crate::numeric::resolve_problem(&o.problem, &suite.dir) {
                        if let Some(best) = problem.best_known() {
                            add(format!("problem `{}`'s best-known value", o.problem), Expected::Number(best.value));
                            for (i, x) in best.x.iter().flatten().enumerate() {
                                add(
                                    format!("problem `{}`'s best-known point, x[{i}]", o.problem),
                                    Expected::Number(*x),
                                );
                            }
                        }
                        if let Some(r) = reference {
                            add(format!("problem `{}`'s reference value", o.problem), Expected::Number(r));
                        }
                    }
                }
            }
        }
        g.answers.retain(|a| distinctive(&a.value));
        g.answers.dedup();
        g
    }

    /// Whether `text` quotes a held-out task's name or text.
    pub fn quotes_holdout(&self, text: &str) -> bool {
        let t = normalise(text);
        self.holdout.iter().any(|h| t.contains(h.as_str()))
    }

    /// Checks `content` (the child's version of one artifact) against the
    /// guard; `parent` is the version it replaces. The first finding, if any.
    pub fn check(&self, content: &str, parent: &str) -> Option<Finding> {
        let text = normalise(content);
        let before = normalise(parent);
        let new = |needle: &str| text.contains(needle) && !before.contains(needle);

        if let Some(h) = self.holdout.iter().find(|h| new(h)) {
            return Some(Finding::HoldoutText { quote: h.chars().take(60).collect() });
        }
        let old_numbers: Vec<NumberToken> = numbers(parent);
        let added_numbers: Vec<NumberToken> =
            numbers(content).into_iter().filter(|n| !old_numbers.iter().any(|o| o.text == n.text)).collect();
        for a in &self.answers {
            let quote = match &a.value {
                Expected::Text(t) if new(t) => Some(t.chars().take(60).collect::<String>()),
                Expected::Number(v) => added_numbers.iter().find(|n| n.matches(*v)).map(|n| n.text.clone()),
                Expected::Text(_) => None,
            };
            if let Some(quote) = quote {
                return Some(Finding::ExpectedAnswer {
                    task: a.task.clone(),
                    holdout: a.holdout,
                    source: a.source.clone(),
                    quote,
                });
            }
        }
        narrowing(content, parent).map(|phrase| Finding::Narrowing { phrase })
    }
}

/// Lowercase, runs of whitespace as one space, trimmed.
pub fn normalise(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Long enough not to turn up by chance.
fn distinctive(e: &Expected) -> bool {
    match e {
        Expected::Number(v) => v.is_finite() && significant_digits(&format!("{}", v.abs())) >= MIN_SIGNIFICANT_DIGITS,
        Expected::Text(t) => {
            let n = t.chars().count();
            let word = t.chars().all(|c| c.is_alphanumeric() || c == '_');
            t.chars().any(char::is_alphanumeric) && n >= if word { MIN_WORD_ANSWER_CHARS } else { MIN_ANSWER_CHARS }
        }
    }
}

/// A value written in a file: a number when it reads as one, else text.
fn expected_values(raw: &str) -> Vec<Expected> {
    let trimmed = raw.trim();
    match trimmed.parse::<f64>() {
        Ok(v) if v.is_finite() => vec![Expected::Number(v)],
        _ => vec![Expected::Text(normalise(trimmed))],
    }
}

static QUOTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""((?:[^"\\\n]|\\.)*)"|'([^'\n]*)'"#).expect("a valid regex"));

/// The quoted literals of a shell command that are not paths or variables.
fn shell_literals(command: &str) -> Vec<Expected> {
    QUOTED
        .captures_iter(command)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)))
        .map(|m| m.as_str())
        .filter(|s| !s.contains('$'))
        .flat_map(expected_values)
        .collect()
}

/// The literal runs of a regular expression (what any match must contain).
fn regex_literals(pattern: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                // An escaped punctuation character is itself; `\d`, `\s`… end the run.
                Some(e) if !e.is_alphanumeric() => cur.push(e),
                _ => out.push(std::mem::take(&mut cur)),
            },
            '.' | '^' | '$' | '|' | '?' | '*' | '+' | '(' | ')' | '[' | ']' | '{' | '}' => {
                out.push(std::mem::take(&mut cur));
            }
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().map(|s| normalise(&s)).filter(|s| !s.is_empty()).collect()
}

static ASSERTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(assert\w*|expect\w*|should|check\w*|verify)\b").expect("a valid regex"));

/// Whether `rel` (relative to the workspace) names a test file.
fn is_test_file(rel: &Path) -> bool {
    let in_test_dir = rel
        .parent()
        .into_iter()
        .flat_map(|p| p.components())
        .any(|c| matches!(c.as_os_str().to_str(), Some("test" | "tests" | "spec" | "__tests__")));
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_lowercase();
    let stem = name.split('.').next().unwrap_or_default();
    in_test_dir
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// The assertion lines of a workspace's test files and the string literals
/// on them: (file relative to the workspace, line number, value).
fn test_file_answers(root: &Path) -> Vec<(PathBuf, usize, Expected)> {
    let mut out = Vec::new();
    let walker = walkdir::WalkDir::new(root).max_depth(8).into_iter().filter_entry(|e| {
        let name = e.file_name().to_str().unwrap_or_default();
        !(e.file_type().is_dir()
            && matches!(name, ".git" | "target" | "node_modules" | "__pycache__" | ".venv" | "venv" | "dist"))
    });
    let mut files = 0;
    for entry in walker.filter_map(Result::ok) {
        if !entry.file_type().is_file() || entry.metadata().map_or(true, |m| m.len() > MAX_TEST_FILE_BYTES) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else { continue };
        if !is_test_file(rel) {
            continue;
        }
        let Ok(source) = std::fs::read_to_string(entry.path()) else { continue };
        files += 1;
        if files > MAX_TEST_FILES {
            break;
        }
        out.extend(answers_in_test_source(&source).into_iter().map(|(line, v)| (rel.to_path_buf(), line, v)));
    }
    out
}

/// The assertion lines of one test file and the literals on them.
pub fn answers_in_test_source(source: &str) -> Vec<(usize, Expected)> {
    let mut out = Vec::new();
    for (i, line) in source.lines().enumerate() {
        if !ASSERTION.is_match(line) {
            continue;
        }
        let whole = normalise(line);
        if whole.chars().count() >= MIN_LINE_CHARS {
            out.push((i + 1, Expected::Text(whole)));
        }
        for c in QUOTED.captures_iter(line) {
            if let Some(m) = c.get(1).or_else(|| c.get(2)) {
                out.extend(expected_values(m.as_str()).into_iter().map(|v| (i + 1, v)));
            }
        }
    }
    out
}

/// A number as written in a content.
#[derive(Debug, Clone, PartialEq)]
struct NumberToken {
    text: String,
    value: f64,
    /// Half a unit of its last written digit.
    tolerance: f64,
    digits: usize,
}

impl NumberToken {
    /// Equal to `v` to the precision it is written with, sign ignored.
    fn matches(&self, v: f64) -> bool {
        self.digits >= MIN_SIGNIFICANT_DIGITS && (self.value.abs() - v.abs()).abs() <= self.tolerance * (1.0 + 1e-9)
    }
}

static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\d+(?:\.(\d+))?(?:[eE]([-+]?\d+))?").expect("a valid regex"));

fn numbers(content: &str) -> Vec<NumberToken> {
    NUMBER
        .captures_iter(content)
        .filter_map(|c| {
            let text = c.get(0)?.as_str().to_string();
            let value: f64 = text.parse().ok()?;
            let decimals = c.get(1).map_or(0, |d| d.as_str().len()) as i32;
            let exponent: i32 = c.get(2).and_then(|e| e.as_str().parse().ok()).unwrap_or(0);
            let tolerance = 0.5 * 10f64.powi(exponent - decimals);
            let mantissa = text.split(['e', 'E']).next().unwrap_or_default();
            Some(NumberToken { digits: significant_digits(mantissa), text, value, tolerance })
        })
        .collect()
}

/// Significant digits of a plain decimal: leading zeros and trailing zeros
/// (of the fraction, or of an integer) are not counted.
fn significant_digits(plain: &str) -> usize {
    let digits: String = plain.chars().filter(char::is_ascii_digit).collect();
    digits.trim_start_matches('0').trim_end_matches('0').len()
}

static NARROWING: LazyLock<Regex> = LazyLock::new(|| {
    let verb = r"skip(?:ping)?|disabl(?:e|ing)|delet(?:e|ing)|remov(?:e|ing)|comment(?:ing)?\s+out|ignor(?:e|ing)|bypass(?:ing)?|weaken(?:ing)?|stub(?:bing)?\s+out|loosen(?:ing)?|xfail";
    let object = r"tests?|test\s+cases?|test\s+suites?|test\s+files?|specs?|assertions?|asserts?|overseers?|checks?|linters?|lint(?:ing)?|type[\s-]?check(?:s|ing)?|(?:the\s+)?build";
    let passive = r"skipped|disabled|deleted|removed|commented\s+out|ignored|bypassed|weakened|stubbed\s+out|loosened";
    let marker = r#"@pytest\.mark\.(?:skip|xfail)|@unittest\.skip|#\[ignore\]|\b(?:it|describe|test)\.skip\(|\bxit\(|\bt\.Skip\(|--skip\b|-k\s+["']?not\b"#;
    Regex::new(&format!(
        r"(?i)\b(?:{verb})\b[^.!?\n]{{0,40}}?\b(?:{object})\b|\b(?:{object})\b[^.!?\n]{{0,40}}?\b(?:should|can|may|must|could)\s+be\s+(?:{passive})\b|{marker}"
    ))
    .expect("a valid regex")
});

static NEGATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:not|never|no|don't|dont|do\s+not|must\s+not|mustn't|avoid|without|instead\s+of|rather\s+than|nor)\b",
    )
    .expect("a valid regex")
});

/// A narrowing instruction on a line the child added, not negated in its
/// sentence.
fn narrowing(content: &str, parent: &str) -> Option<String> {
    let old: std::collections::BTreeSet<String> = parent.lines().map(normalise).collect();
    for line in content.lines().filter(|l| !old.contains(&normalise(l))) {
        for m in NARROWING.find_iter(line) {
            // The sentence so far: from the last sentence end before the match.
            let head = &line[..m.start()];
            let sentence_start = head.rfind(['.', '!', '?', ';']).map_or(0, |i| i + 1);
            let before = &line[sentence_start..m.start()];
            if NEGATION.is_match(before) {
                continue;
            }
            return Some(m.as_str().split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(answers: &[(&str, Expected)]) -> Guard {
        Guard {
            holdout: vec![],
            answers: answers
                .iter()
                .map(|(task, v)| Answer {
                    task: task.to_string(),
                    holdout: false,
                    source: "test".into(),
                    value: v.clone(),
                })
                .filter(|a| distinctive(&a.value))
                .collect(),
        }
    }

    #[test]
    fn content_that_quotes_a_held_out_task_is_rejected() {
        let g = Guard {
            holdout: ["Score the knobs against gain 2.2", "delta"].iter().map(|s| normalise(s)).collect(),
            answers: vec![],
        };
        assert!(g.check("Prefer gain 2.0.", "").is_none());
        let f = g.check("Hint: SCORE THE KNOBS   AGAINST GAIN 2.2, always", "").unwrap();
        assert!(f.reason().contains("held-out task text `score the knobs"), "{}", f.reason());
        assert!(!f.feedback().contains("knobs"), "the feedback never quotes it: {}", f.feedback());
        // The guard itself drops short names when built from a suite; here the check is literal.
        assert!(
            g.check("already said: score the knobs against gain 2.2", "score the knobs against gain 2.2").is_none()
        );
    }

    #[test]
    fn an_expected_answer_in_the_content_is_found_and_short_common_strings_are_not() {
        let g = guard(&[
            ("slug", Expected::Text("creme-brulee-a-la-unicode".into())),
            ("slug", Expected::Text("hello-world".into())),
            ("roman", Expected::Text("iv".into())),
            ("roman", Expected::Text("__main__".into())),
            ("roman", Expected::Text("unittest".into())),
            ("opt", Expected::Number(-30665.5386717834)),
            ("opt", Expected::Number(-15.0)),
            ("opt", Expected::Number(0.7499)),
        ]);
        assert_eq!(g.answers.len(), 4, "IV, __main__, unittest and -15 are too common: {:?}", g.answers);
        let f = g.check("Remember: accents fold, e.g. Crème Brûlée → CREME-BRULEE-A-LA-UNICODE.", "").unwrap();
        assert!(
            matches!(&f, Finding::ExpectedAnswer { task, quote, .. } if task == "slug" && quote == "creme-brulee-a-la-unicode"),
            "{f:?}"
        );
        assert!(g.check("Aim for an objective near -30665.54.", "").is_some());
        assert!(g.check("Aim for an objective near 30665.539 (sign aside).", "").is_some());
        for clean in [
            "Use IV for four. Run unittest. if __name__ == '__main__'.",
            "Keep -15 in mind; the step is 0.75; tolerance 1.000e-4; 30665.6 is a different number.",
            "Say hello to the world.",
        ] {
            assert!(g.check(clean, "").is_none(), "flagged: {clean}");
        }
        // What the parent already had is not the child's doing.
        assert!(g.check("hello-world, kept", "an example: hello-world").is_none());
        assert!(g.check("near -30665.54", "near -30665.54 already").is_none());
    }

    #[test]
    fn telling_the_runs_to_check_less_is_narrowing_unless_negated() {
        let g = Guard::default();
        for bad in [
            "When a test keeps failing, skip the failing tests and move on.",
            "Disable the type checks for speed.",
            "Comment out the assertions that fail.",
            "Failing tests may be deleted.",
            "Add @pytest.mark.skip above slow tests.",
            "Run pytest -k 'not slow' only.",
            "Mark it #[ignore] if flaky.",
        ] {
            let f = g.check(bad, "").unwrap_or_else(|| panic!("missed: {bad}"));
            assert!(f.reason().contains("narrows what is evaluated"), "{}", f.reason());
        }
        for good in [
            "Never skip tests.",
            "Do not delete or weaken the tests; fix the code instead.",
            "Avoid disabling lint checks.",
            "Fix the build before running the tests.",
            "Remove dead code. Tests must pass.",
            "Skip the preamble and get to the point.",
        ] {
            assert!(g.check(good, "").is_none(), "flagged: {good}");
        }
        // A line the parent already had is not the child's.
        assert!(g.check("Skip the flaky tests.\nBe brief.", "Skip the flaky tests.").is_none());
    }

    #[test]
    fn test_files_give_their_assertion_lines_and_the_literals_on_them() {
        let src = "import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(slugify(\"Hello World\"), \"hello-world\")\n\nif __name__ == \"__main__\":\n    unittest.main()\n";
        let found = answers_in_test_source(src);
        let texts: Vec<String> = found
            .iter()
            .filter_map(|(_, v)| match v {
                Expected::Text(t) => Some(t.clone()),
                Expected::Number(_) => None,
            })
            .collect();
        assert!(texts.contains(&"hello-world".to_string()), "{texts:?}");
        assert!(texts.contains(&"self.assertequal(slugify(\"hello world\"), \"hello-world\")".to_string()));
        assert!(found.iter().all(|(line, _)| *line == 4), "only the assertion line: {found:?}");
        assert!(is_test_file(Path::new("tests/roman.rs")));
        assert!(is_test_file(Path::new("test_slug.py")));
        assert!(is_test_file(Path::new("src/app.spec.ts")));
        assert!(!is_test_file(Path::new("src/lib.rs")));
        assert!(!is_test_file(Path::new("contest.py")));
    }

    #[test]
    fn regex_patterns_give_their_literal_runs() {
        assert_eq!(regex_literals(r"^All \d+ checks passed\.$"), vec!["all".to_string(), "checks passed.".into()]);
        assert_eq!(
            regex_literals("result: (ok|fine)"),
            vec!["result: ".trim().to_string(), "ok".into(), "fine".into()]
        );
    }

    #[test]
    fn the_guard_collects_what_each_kind_of_task_is_checked_against_from_a_suite_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws/tests")).unwrap();
        std::fs::write(
            dir.path().join("ws/tests/greet.rs"),
            "#[test]\nfn greets() {\n    assert_eq!(greet(), \"hello, traveller\");\n    assert_eq!(roman(1994), \"MCMXCIV\");\n}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("ws/lib.rs"), "assert!(\"not a test file at all\".len() > 0);").unwrap();
        let path = dir.path().join("g.yaml");
        std::fs::write(
            &path,
            r#"
name: g
tasks:
  - name: cmd
    command: python3 "$ATTRACTOR_SUITE_DIR/x.py" 'the quick brown fox'
    env: { TARGET: "3.14159", MODE: "fast" }
  - name: agent
    task: do it
    workspace: ws
    overseers:
      - { name: out, kind: custom, command: "grep -q 'release notes ready' out.txt", success_pattern: "^All \\d+ checks passed$" }
  - name: opt
    problem: g04
  - name: hidden
    task: "a held-out riddle about lanterns"
    holdout: true
    command: "true"
"#,
        )
        .unwrap();
        let suite = crate::suite::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let g = Guard::for_suite(&suite);
        let found = |content: &str| g.check(content, "").map(|f| f.reason());
        let expect = |content: &str, needle: &str| {
            let reason = found(content).unwrap_or_else(|| panic!("missed: {content}"));
            assert!(reason.contains(needle), "{content}: {reason}");
        };
        expect("say the quick brown fox", "task `cmd` is checked against (a quoted literal of its command)");
        expect("use 3.14159 for pi", "task `cmd` is checked against (env `TARGET`)");
        expect(
            "print RELEASE NOTES READY when done",
            "task `agent` is checked against (a quoted literal of overseer `out`)",
        );
        expect("finish with: all 3 checks passed", "overseer `out` success_pattern");
        expect("Greet with Hello,  Traveller!", "test file `tests/greet.rs` line 3");
        expect("the optimum is near -30665.539", "problem `g04`'s best-known value");
        expect("Remember: a held-out riddle about lanterns.", "held-out task text");
        for clean in
            ["be fast", "MCMXCIV is 1994", "not a test file at all", "hidden gems", "the optimum is near -30000"]
        {
            assert_eq!(found(clean), None, "{clean}");
        }
    }

    #[test]
    fn the_built_in_prompts_are_not_flagged_as_narrowing() {
        for b in crate::artifact::builtin::BUILTINS {
            assert_eq!(narrowing(b.content, ""), None, "built-in `{}` would trip the narrowing check", b.name);
        }
    }
}
