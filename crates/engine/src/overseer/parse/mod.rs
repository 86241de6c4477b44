//! Reading what checkers print: test runners' results, compilers' and
//! linters' diagnostics, security scanners' findings.
//!
//! Every parser is a pure function from text to numbers, so each one is
//! tested against real output of its tool (tests/fixtures/overseer/). Test
//! output is recognised automatically ([`parse_tests`]): the formats are
//! tried from the most specific to the most generic, and the first that
//! finds any test wins (nextest's output embeds libtest's, so nextest goes
//! first; TAP's `ok 1` lines are the easiest to match by accident, so it
//! goes last).

mod diagnostics;
mod go;
mod jest;
mod junit;
mod libtest;
mod python;
mod security;
mod tap;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::signals::TestResults;

pub use diagnostics::{DiagnosticCounts, parse_diagnostics};
pub use jest::parse_jest_json;
pub use junit::{JunitError, parse_junit};
pub use security::parse_security;

/// A test-output format Attractor can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestFormat {
    /// `go test -json`.
    GoJson,
    /// jest's `--json` report (vitest's `json` reporter writes the same).
    JestJson,
    /// JUnit XML (JUnit, Surefire, pytest `--junitxml`, many others).
    Junit,
    /// cargo-nextest.
    Nextest,
    /// Rust's built-in harness (`cargo test`).
    Libtest,
    Pytest,
    /// Python's `unittest`.
    Unittest,
    /// `go test` / `go test -v`.
    Go,
    /// The Test Anything Protocol (prove, node-tap, bats, many shell harnesses).
    Tap,
}

impl TestFormat {
    /// Detection order: most specific first.
    /// unittest comes before Rust's: it claims an output only by its
    /// closing `Ran N tests in`, and a verbose run's docstrings can read
    /// like libtest's `test … ... ok` lines.
    pub const DETECTION_ORDER: [TestFormat; 9] = [
        TestFormat::GoJson,
        TestFormat::JestJson,
        TestFormat::Junit,
        TestFormat::Unittest,
        TestFormat::Nextest,
        TestFormat::Libtest,
        TestFormat::Pytest,
        TestFormat::Go,
        TestFormat::Tap,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TestFormat::GoJson => "go test -json",
            TestFormat::JestJson => "jest/vitest JSON",
            TestFormat::Junit => "JUnit XML",
            TestFormat::Nextest => "cargo-nextest",
            TestFormat::Libtest => "cargo test",
            TestFormat::Pytest => "pytest",
            TestFormat::Unittest => "unittest",
            TestFormat::Go => "go test",
            TestFormat::Tap => "TAP",
        }
    }

    /// Parses `output` as this format; `None` when it does not look like it.
    pub fn parse(self, output: &str) -> Option<TestResults> {
        match self {
            TestFormat::GoJson => go::parse_json(output),
            TestFormat::JestJson => jest::parse_jest_json(output),
            TestFormat::Junit => {
                if output.contains("<testsuite") || output.contains("<testcase") {
                    // JUnit embedded in other output: from the first tag on.
                    let start = output.find("<?xml").or_else(|| output.find("<testsuite")).unwrap_or(0);
                    parse_junit(&output[start..]).ok()
                } else {
                    None
                }
            }
            TestFormat::Nextest => libtest::parse_nextest(output),
            TestFormat::Libtest => libtest::parse_libtest(output),
            TestFormat::Pytest => python::parse_pytest(output),
            TestFormat::Unittest => python::parse_unittest(output),
            TestFormat::Go => go::parse_plain(output),
            TestFormat::Tap => tap::parse_tap(output),
        }
    }
}

impl std::fmt::Display for TestFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Recognises the format of a test run's output and parses it.
pub fn parse_tests(output: &str) -> Option<(TestFormat, TestResults)> {
    TestFormat::DETECTION_ORDER.into_iter().find_map(|f| f.parse(output).map(|r| (f, r)))
}

/// Collects per-test outcomes by name, each name counted once, the last
/// word counting (a runner may print a test twice: a retried flaky test
/// fails, then passes; a failing test is listed again in a summary).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    order: Vec<(String, Outcome)>,
    index: HashMap<String, usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Pass,
    Fail,
    Skip,
}

impl Tally {
    fn record(&mut self, name: String, outcome: Outcome) {
        match self.index.get(&name) {
            Some(&i) => self.order[i].1 = outcome,
            None => {
                self.index.insert(name.clone(), self.order.len());
                self.order.push((name, outcome));
            }
        }
    }

    pub fn pass(&mut self, name: impl Into<String>) {
        self.record(name.into(), Outcome::Pass);
    }

    pub fn fail(&mut self, name: impl Into<String>) {
        self.record(name.into(), Outcome::Fail);
    }

    pub fn skip(&mut self, name: impl Into<String>) {
        self.record(name.into(), Outcome::Skip);
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Results from the named outcomes alone.
    pub fn results(self) -> TestResults {
        let names = |o: Outcome| -> Vec<String> {
            self.order.iter().filter(|(_, x)| *x == o).map(|(n, _)| n.clone()).collect()
        };
        let (passing, failing, skipped) = (names(Outcome::Pass), names(Outcome::Fail), count(&names(Outcome::Skip)));
        let (passed, failed) = (count(&passing), count(&failing));
        TestResults {
            passed,
            failed,
            skipped,
            total: passed + failed + skipped,
            failing,
            passing,
            regression_count: 0,
            missing: 0,
            new_skips: 0,
            judgement: None,
        }
    }

    /// Results whose counts come from the runner's own summary (which also
    /// counts tests whose names were not printed), names from the lines seen.
    pub fn with_counts(self, passed: u32, failed: u32, skipped: u32) -> TestResults {
        TestResults { passed, failed, skipped, total: passed + failed + skipped, ..self.results() }
    }
}

fn count(v: &[String]) -> u32 {
    u32::try_from(v.len()).unwrap_or(u32::MAX)
}

/// The first capture group of `re` in `text` parsed as a number.
pub(crate) fn num(caps: &regex::Captures<'_>, name: &str) -> u32 {
    caps.name(name).and_then(|m| m.as_str().parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_without_any_test_is_not_recognised() {
        assert_eq!(parse_tests("Compiling…\nall good\n"), None);
        assert_eq!(parse_tests(""), None);
    }

    #[test]
    fn a_name_counts_once_and_its_last_outcome_wins() {
        let mut t = Tally::default();
        t.pass("a");
        t.fail("a");
        t.fail("b");
        t.pass("b");
        t.fail("c");
        t.fail("c");
        let r = t.results();
        assert_eq!((r.passed, r.failed, r.total), (1, 2, 3));
        assert_eq!(r.failing, vec!["a", "c"]);
        assert_eq!(r.passing, vec!["b"]);
    }
}
