//! Rust test output: the built-in harness (`cargo test`) and cargo-nextest.
//!
//! libtest prints one `test NAME ... ok|FAILED|ignored` line per test and a
//! `test result:` summary per test binary (unit tests, each integration test
//! file, doc tests); the counts are the sum of the summaries. nextest prints
//! `PASS [time] (i/n) BINARY NAME` lines and one `Summary` line; it repeats
//! failures at the end and embeds libtest's output of failing tests, which
//! is why it is recognised before libtest.

use std::sync::LazyLock;

use regex::Regex;

use super::{Tally, num};
use crate::overseer::signals::TestResults;

static LIBTEST_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^test (?P<name>.+?) \.\.\. (?P<res>ok|FAILED|ignored|bench:)").expect("valid regex"));
static LIBTEST_SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^test result: (?:ok|FAILED)\. (?P<p>\d+) passed; (?P<f>\d+) failed; (?P<i>\d+) ignored; (?P<m>\d+) measured",
    )
    .expect("valid regex")
});

static LIBTEST_FAILURE_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^---- (?P<name>.+?) stdout ----$").expect("valid regex"));

pub fn parse_libtest(output: &str) -> Option<TestResults> {
    let mut tally = Tally::default();
    let (mut passed, mut failed, mut ignored, mut summaries) = (0u32, 0u32, 0u32, 0u32);
    // Inside the `failures:` list that names every failing test (the only
    // place names appear with `--quiet`).
    let mut in_failure_list = false;
    for line in output.lines() {
        let line = line.trim_end();
        if in_failure_list {
            match line.strip_prefix("    ") {
                Some(name) if !name.trim().is_empty() && !name.starts_with(' ') => {
                    tally.fail(name.trim().to_string());
                    continue;
                }
                _ => in_failure_list = false,
            }
        }
        if line == "failures:" {
            in_failure_list = true;
        } else if let Some(c) = LIBTEST_FAILURE_HEADER.captures(line) {
            tally.fail(c["name"].to_string());
        } else if let Some(c) = LIBTEST_SUMMARY.captures(line) {
            summaries += 1;
            // Benchmarks run as tests ("measured") passed.
            passed += num(&c, "p") + num(&c, "m");
            failed += num(&c, "f");
            ignored += num(&c, "i");
        } else if let Some(c) = LIBTEST_LINE.captures(line) {
            let name = c["name"].to_string();
            match &c["res"] {
                "ok" | "bench:" => tally.pass(name),
                "FAILED" => tally.fail(name),
                _ => tally.skip(name),
            }
        }
    }
    match (summaries, tally.is_empty()) {
        (0, true) => None,
        (0, false) => Some(tally.results()),
        _ => Some(tally.with_counts(passed, failed, ignored)),
    }
}

static NEXTEST_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:TRY \d+ )?(?P<st>PASS|FAIL|SKIP|FLAKY(?: \d+/\d+)?|LEAK|LEAK-FAIL|TIMEOUT|ABORT|SIG[A-Z]+)\s+\[\s*[\d.]+m?s\]\s+(?:\(\s*\d+/\d+\)\s+)?(?P<name>\S.*?)\s*$",
    )
    .expect("valid regex")
});
static NEXTEST_SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*Summary \[\s*[\d.]+m?s\]\s+(?:\d+/)?\d+ tests? run:(?P<rest>.*)$").expect("valid regex")
});
static NEXTEST_COUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?P<n>\d+) (?P<what>passed|failed|timed out|exec failed|skipped)").expect("valid regex")
});

pub fn parse_nextest(output: &str) -> Option<TestResults> {
    let mut tally = Tally::default();
    let mut counts: Option<(u32, u32, u32)> = None;
    for line in output.lines() {
        if let Some(c) = NEXTEST_SUMMARY.captures(line) {
            // "4 tests run: 4 passed (1 slow, 1 flaky), 0 skipped": the
            // parenthesised numbers are part of "passed", so only the
            // top-level counts are read.
            let rest = strip_parens(&c["rest"]);
            let (mut p, mut f, mut s) = (0, 0, 0);
            for m in NEXTEST_COUNT.captures_iter(&rest) {
                let n = num(&m, "n");
                match &m["what"] {
                    "passed" => p += n,
                    "skipped" => s += n,
                    _ => f += n,
                }
            }
            counts = Some((p, f, s));
        } else if let Some(c) = NEXTEST_LINE.captures(line) {
            let name = c["name"].to_string();
            let status = &c["st"];
            if status == "PASS" || status == "LEAK" || status.starts_with("FLAKY") {
                tally.pass(name);
            } else if status == "SKIP" {
                tally.skip(name);
            } else {
                tally.fail(name);
            }
        }
    }
    match counts {
        Some((p, f, s)) => Some(tally.with_counts(p, f, s)),
        None if !tally.is_empty() => Some(tally.results()),
        None => None,
    }
}

fn strip_parens(s: &str) -> String {
    let mut depth = 0u32;
    s.chars()
        .filter(|&c| match c {
            '(' => {
                depth += 1;
                false
            }
            ')' => {
                depth = depth.saturating_sub(1);
                false
            }
            _ => depth == 0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flaky_and_slow_counts_inside_parentheses_are_not_added_twice() {
        let out = "    TRY 1 FAIL [   0.010s] (1/2) crate t::flaky\n   TRY 2 PASS [   0.011s] (1/2) crate t::flaky\n        PASS [   0.002s] (2/2) crate t::ok\n     Summary [   0.020s] 2 tests run: 2 passed (1 flaky), 0 skipped\n";
        let r = parse_nextest(out).unwrap();
        assert_eq!((r.passed, r.failed, r.skipped, r.total), (2, 0, 0, 2));
        assert_eq!(r.passing, vec!["crate t::flaky", "crate t::ok"]);
    }

    #[test]
    fn quiet_output_names_failures_in_its_failures_list() {
        let out = "running 3 tests\n.F.\nfailures:\n\n---- t::b stdout ----\npanicked\n\nfailures:\n    t::b\n    t::c\n\ntest result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
        let r = parse_libtest(out).unwrap();
        assert_eq!((r.passed, r.failed), (1, 2));
        assert_eq!(r.failing, vec!["t::b", "t::c"]);
    }

    #[test]
    fn libtest_without_a_summary_still_counts_its_lines() {
        let r = parse_libtest("test a ... ok\ntest b ... FAILED\n").unwrap();
        assert_eq!((r.passed, r.failed, r.total), (1, 1, 2));
    }
}
