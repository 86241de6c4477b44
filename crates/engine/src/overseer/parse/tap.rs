//! The Test Anything Protocol (TAP 12/13/14): `1..N` plans, `ok` / `not ok`
//! lines, `# SKIP` and `# TODO` directives, `Bail out!`.
//!
//! Output counts as TAP only with a plan line or a `TAP version` header, so
//! stray `ok` lines of other tools are not taken for tests. Indented lines
//! (subtests, YAML diagnostics) are not counted: the parent's line sums its
//! subtests up. A `not ok … # TODO` is a known gap, counted as skipped. Tests
//! the plan announced but that never reported (a crash, a bail-out) count as
//! failed, named `test N (did not run)`.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::Tally;
use crate::overseer::signals::TestResults;

static PLAN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^1\.\.(?P<n>\d+)\b").expect("valid regex"));
static LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<not>not )?ok\b(?:\s+(?P<num>\d+))?(?:\s*-)?\s*(?P<desc>[^#]*?)\s*(?:#\s*(?P<dir>[A-Za-z]+)\b.*)?$",
    )
    .expect("valid regex")
});

pub fn parse_tap(output: &str) -> Option<TestResults> {
    let mut tally = Tally::default();
    let mut plan: Option<u32> = None;
    let mut header = false;
    let mut seen_names = HashSet::new();
    let mut reported = 0u32;
    let mut highest = 0u32;
    for line in output.lines() {
        let line = line.trim_end();
        if line.starts_with("TAP version") {
            header = true;
        } else if let Some(c) = PLAN.captures(line) {
            plan = c["n"].parse().ok();
        } else if line.starts_with("Bail out!") {
            break;
        } else if let Some(c) = LINE.captures(line) {
            reported += 1;
            let number = c.name("num").and_then(|m| m.as_str().parse::<u32>().ok()).unwrap_or(reported);
            highest = highest.max(number);
            let desc = c["desc"].trim();
            let mut name = if desc.is_empty() { format!("test {number}") } else { desc.to_string() };
            if !seen_names.insert(name.clone()) {
                name = format!("{name} (#{number})");
            }
            let directive = c.name("dir").map(|d| d.as_str().to_ascii_lowercase());
            let failed = c.name("not").is_some();
            match directive.as_deref() {
                Some(d) if d.starts_with("skip") => tally.skip(name),
                Some("todo") if failed => tally.skip(name),
                _ if failed => tally.fail(name),
                _ => tally.pass(name),
            }
        }
    }
    if plan.is_none() && !header {
        return None;
    }
    if let Some(planned) = plan {
        for missing in highest.max(reported) + 1..=planned {
            tally.fail(format!("test {missing} (did not run)"));
        }
    }
    Some(tally.results())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ok_lines_without_a_plan_are_not_tap() {
        assert_eq!(parse_tap("ok  \texample.com/calc\t0.004s\n"), None);
    }

    #[test]
    fn a_bail_out_fails_the_tests_that_never_ran() {
        let r = parse_tap("1..4\nok 1 - a\nnot ok 2 - b\nBail out! database down\n").unwrap();
        assert_eq!((r.passed, r.failed, r.total), (1, 3, 4));
        assert_eq!(r.failing, vec!["b", "test 3 (did not run)", "test 4 (did not run)"]);
    }

    #[test]
    fn a_plan_at_the_end_and_unnumbered_lines() {
        let r = parse_tap("ok - first\nok\nnot ok - third # TODO later\n1..3\n").unwrap();
        assert_eq!((r.passed, r.failed, r.skipped), (2, 0, 1));
        assert_eq!(r.passing, vec!["first", "test 2"]);
    }
}
