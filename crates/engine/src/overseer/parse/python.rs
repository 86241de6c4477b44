//! Python test output: pytest and the standard library's unittest.
//!
//! pytest names tests by node id (`tests/test_x.py::TestY::test_z[param]`):
//! `-v` prints every test with its outcome, the short summary lists failures
//! (`FAILED node - message`), and the last line has the counts. unittest's
//! `-v` prints `test_z (module.Class.test_z) ... ok`, failures get a
//! `FAIL: …` header, and `Ran N tests` plus `FAILED (failures=…)` close the
//! run. Expected failures count as skipped, unexpected passes as passed for
//! pytest (its own exit status ignores them) and as failed for unittest (it
//! reports the run as unsuccessful).

use std::sync::LazyLock;

use regex::Regex;

use super::{Tally, num};
use crate::overseer::signals::TestResults;

static PYTEST_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<name>\S+::.+?) (?P<res>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?:\s|$)").expect("valid regex")
});
/// pytest-xdist's verbose form: `[gw0] [ 10%] PASSED tests/test_x.py::test_a`.
static PYTEST_XDIST_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\[gw\d+\] \[\s*\d+%\] (?P<res>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (?P<name>\S+::\S.*?)\s*$")
        .expect("valid regex")
});
/// The short test summary's lines: failures always, every outcome with
/// `-rA` (which Attractor adds, so that passing tests are named too).
/// `SKIPPED [1] file:line: reason` names no node and is left out.
static PYTEST_SHORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?P<res>FAILED|ERROR|PASSED|XPASS|XFAIL) (?P<name>\S+?)(?: - .*)?\s*$").expect("valid regex")
});
static PYTEST_SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^=*\s*(?P<body>(?:\d+ [a-z]+,? ?)+|no tests ran) in [\d.]+s(?: \([^)]*\))?\s*=*\s*$")
        .expect("valid regex")
});
static PYTEST_COUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?P<n>\d+) (?P<what>passed|failed|skipped|xfailed|xpassed|errors?)\b").expect("valid regex")
});

pub fn parse_pytest(output: &str) -> Option<TestResults> {
    let mut tally = Tally::default();
    let mut counts = None;
    for line in output.lines() {
        let line = line.trim_end();
        if let Some(c) = PYTEST_SUMMARY.captures(line) {
            let (mut p, mut f, mut s) = (0, 0, 0);
            for m in PYTEST_COUNT.captures_iter(&c["body"]) {
                let n = num(&m, "n");
                match &m["what"] {
                    "passed" | "xpassed" => p += n,
                    "skipped" | "xfailed" => s += n,
                    _ => f += n,
                }
            }
            counts = Some((p, f, s));
            continue;
        }
        let caps = PYTEST_LINE.captures(line).or_else(|| PYTEST_XDIST_LINE.captures(line));
        if let Some(c) = caps {
            let name = c["name"].to_string();
            match &c["res"] {
                "PASSED" | "XPASS" => tally.pass(name),
                "FAILED" | "ERROR" => tally.fail(name),
                _ => tally.skip(name),
            }
        } else if let Some(c) = PYTEST_SHORT.captures(line) {
            let name = c["name"].to_string();
            match &c["res"] {
                "PASSED" | "XPASS" => tally.pass(name),
                "XFAIL" => tally.skip(name),
                _ => tally.fail(name),
            }
        }
    }
    // Short-summary lines alone (`FAILED x`) are too generic to claim pytest;
    // the closing counts line is what identifies it.
    let (p, f, s) = counts?;
    Some(tally.with_counts(p, f, s))
}

static UNITTEST_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<m>\w+) \((?P<q>[\w.]+)\)(?:\s.*)? \.\.\. (?P<res>ok|FAIL|ERROR|skipped|expected failure|unexpected success)",
    )
    .expect("valid regex")
});
/// `-v` with a docstring: the name alone on its line, the docstring's
/// first line and the outcome on the next.
static UNITTEST_NAME_ALONE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?P<m>\w+) \((?P<q>[\w.]+)\)\s*$").expect("valid regex"));
static UNITTEST_OUTCOME_AFTER_DOC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r" \.\.\. (?P<res>ok|FAIL|ERROR|skipped|expected failure|unexpected success)(?:\s.*)?$")
        .expect("valid regex")
});
static UNITTEST_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:FAIL|ERROR): (?P<m>\w+) \((?P<q>[\w.]+)\)").expect("valid regex"));
static UNITTEST_RAN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^Ran (?P<n>\d+) tests? in ").expect("valid regex"));
static UNITTEST_END: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?P<st>OK|FAILED)(?: \((?P<body>[^)]*)\))?\s*$").expect("valid regex"));
static UNITTEST_COUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?P<what>failures|errors|skipped|expected failures|unexpected successes)=(?P<n>\d+)")
        .expect("valid regex")
});

/// `module.Class.test_m` from Python 3.11's `(module.Class.test_m)` or the
/// older `(module.Class)`.
fn unittest_name(method: &str, qualified: &str) -> String {
    if qualified.ends_with(&format!(".{method}")) { qualified.to_string() } else { format!("{qualified}.{method}") }
}

pub fn parse_unittest(output: &str) -> Option<TestResults> {
    let mut tally = Tally::default();
    let mut ran = None;
    let (mut failed, mut skipped) = (0u32, 0u32);
    // A test named alone on its line (its docstring follows), waiting for its outcome.
    let mut named: Option<String> = None;
    let record = |tally: &mut Tally, name: String, res: &str| match res {
        "ok" => tally.pass(name),
        "FAIL" | "ERROR" | "unexpected success" => tally.fail(name),
        _ => tally.skip(name),
    };
    for line in output.lines() {
        let line = line.trim_end();
        if let Some(name) = named.take()
            && let Some(c) = UNITTEST_OUTCOME_AFTER_DOC.captures(line)
        {
            record(&mut tally, name, &c["res"]);
            continue;
        }
        if let Some(c) = UNITTEST_LINE.captures(line) {
            record(&mut tally, unittest_name(&c["m"], &c["q"]), &c["res"]);
        } else if let Some(c) = UNITTEST_NAME_ALONE.captures(line) {
            named = Some(unittest_name(&c["m"], &c["q"]));
        } else if let Some(c) = UNITTEST_HEADER.captures(line) {
            tally.fail(unittest_name(&c["m"], &c["q"]));
        } else if let Some(c) = UNITTEST_RAN.captures(line) {
            ran = Some(num(&c, "n"));
        } else if ran.is_some()
            && let Some(c) = UNITTEST_END.captures(line)
        {
            for m in c.name("body").map(|b| UNITTEST_COUNT.captures_iter(b.as_str()).collect()).unwrap_or_else(Vec::new)
            {
                let n = num(&m, "n");
                match &m["what"] {
                    "skipped" | "expected failures" => skipped += n,
                    _ => failed += n,
                }
            }
        }
    }
    let ran = ran?;
    let passed = ran.saturating_sub(failed).saturating_sub(skipped);
    Some(tally.with_counts(passed, failed, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_with_xdist_and_collection_errors() {
        let out = "[gw0] [ 50%] PASSED tests/test_a.py::test_one\n[gw1] [100%] FAILED tests/test_a.py::test_two\nERROR tests/test_b.py - ImportError: no module named x\n==== 1 failed, 1 passed, 1 error in 0.30s ====\n";
        let r = parse_pytest(out).unwrap();
        assert_eq!((r.passed, r.failed, r.total), (1, 2, 3));
        assert_eq!(r.failing, vec!["tests/test_a.py::test_two", "tests/test_b.py"]);
    }

    #[test]
    fn pytest_with_every_outcome_in_the_short_summary_names_the_passing_tests() {
        let out = "..F                                                  [100%]\n=========================== short test summary info ============================\nPASSED test_inflection.py::test_pluralize_plurals\nPASSED test_inflection.py::test_uncountability[equipment]\nFAILED test_inflection.py::test_dasherize[street_address-street-address] - As...\n1 failed, 2 passed in 0.52s\n";
        let r = parse_pytest(out).unwrap();
        assert_eq!((r.passed, r.failed, r.total), (2, 1, 3));
        assert_eq!(
            r.passing,
            vec!["test_inflection.py::test_pluralize_plurals", "test_inflection.py::test_uncountability[equipment]"]
        );
        assert_eq!(r.failing, vec!["test_inflection.py::test_dasherize[street_address-street-address]"]);
    }

    #[test]
    fn pytest_with_nothing_collected() {
        let r = parse_pytest("collected 0 items\n\n============ no tests ran in 0.01s ============\n").unwrap();
        assert_eq!(r.total, 0);
    }

    #[test]
    fn unittest_verbose_names_a_test_whose_docstring_comes_between_its_name_and_its_outcome() {
        let out = "test_call_once (tests.test_more.AdjacentTests.test_call_once)\nTest that the predicate is only called once per item. ... ok\ntest_distance (tests.test_more.AdjacentTests.test_distance) ... FAIL\n\n----\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n";
        let r = parse_unittest(out).unwrap();
        assert_eq!(r.passing, vec!["tests.test_more.AdjacentTests.test_call_once"]);
        assert_eq!(r.failing, vec!["tests.test_more.AdjacentTests.test_distance"]);
        assert_eq!((r.passed, r.failed, r.total), (1, 1, 2));
    }

    #[test]
    fn unittest_old_style_names_get_their_method() {
        let out = "test_a (pkg.TestX) ... ok\n\n----\nRan 1 test in 0.001s\n\nOK\n";
        let r = parse_unittest(out).unwrap();
        assert_eq!(r.passing, vec!["pkg.TestX.test_a"]);
        assert_eq!((r.passed, r.total), (1, 1));
    }
}
