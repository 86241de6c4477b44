//! Go test output: plain (`go test`, `go test -v`) and `go test -json`.
//!
//! Go reports a test with subtests as failing when any subtest fails, so a
//! parent and its failing child would count one defect twice. Only *leaf*
//! tests are counted: a test whose name is the prefix of another's
//! (`TestTable` of `TestTable/negative`) is left out. Names keep Go's own
//! form (`TestTable/negative`).

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;

use super::Tally;
use crate::overseer::signals::TestResults;

static GO_RESULT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*--- (?P<res>PASS|FAIL|SKIP): (?P<name>\S+) \([\d.]+s\)").expect("valid regex"));

#[derive(Clone, Copy, PartialEq, Eq)]
enum Res {
    Pass,
    Fail,
    Skip,
}

fn leaves(events: Vec<(String, Res)>) -> Option<TestResults> {
    if events.is_empty() {
        return None;
    }
    // Every name that has a child: the prefixes before each `/`.
    let parents: HashSet<&str> =
        events.iter().flat_map(|(n, _)| n.match_indices('/').map(move |(i, _)| &n[..i])).collect();
    let parents: HashSet<String> = parents.into_iter().map(str::to_string).collect();
    let mut tally = Tally::default();
    for (name, res) in events {
        if parents.contains(&name) {
            continue;
        }
        match res {
            Res::Pass => tally.pass(name),
            Res::Fail => tally.fail(name),
            Res::Skip => tally.skip(name),
        }
    }
    Some(tally.results())
}

pub fn parse_plain(output: &str) -> Option<TestResults> {
    let events = output
        .lines()
        .filter_map(|line| GO_RESULT.captures(line))
        .map(|c| {
            let res = match &c["res"] {
                "PASS" => Res::Pass,
                "FAIL" => Res::Fail,
                _ => Res::Skip,
            };
            (c["name"].to_string(), res)
        })
        .collect();
    leaves(events)
}

/// One line of `go test -json` (test2json's event).
#[derive(Deserialize)]
struct Event {
    #[serde(rename = "Action")]
    action: String,
    #[serde(rename = "Test", default)]
    test: Option<String>,
}

pub fn parse_json(output: &str) -> Option<TestResults> {
    let mut events = Vec::new();
    let mut json_lines = 0;
    for line in output.lines() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let Ok(event) = serde_json::from_str::<Event>(line) else { continue };
        json_lines += 1;
        // Package-level events have no Test; only a test's end counts.
        let Some(test) = event.test else { continue };
        let res = match event.action.as_str() {
            "pass" => Res::Pass,
            "fail" => Res::Fail,
            "skip" => Res::Skip,
            _ => continue,
        };
        events.push((test, res));
    }
    if json_lines == 0 {
        return None;
    }
    leaves(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_of_subtests_is_not_counted_itself() {
        let out = "--- FAIL: TestT (0.00s)\n    --- PASS: TestT/a (0.00s)\n    --- FAIL: TestT/b (0.00s)\n--- PASS: TestTx (0.00s)\n";
        let r = parse_plain(out).unwrap();
        assert_eq!((r.passed, r.failed, r.total), (2, 1, 3));
        assert_eq!(r.failing, vec!["TestT/b"]);
        // `TestTx` is not a child of `TestT`.
        assert!(r.passing.contains(&"TestTx".to_string()));
    }
}
