//! Jest's `--json` report, which vitest's `json` reporter writes too.
//!
//! Each test file has its assertions (one per test) with a status; a file
//! that failed before any test ran (a syntax error, a missing import) has
//! none and a message: it counts as one failing test named after the file,
//! or a broken file would make its tests vanish silently. Names are the
//! file, then the `describe` titles and the test's, joined by ` > ` as the
//! runners print them (`src/sum.test.ts > sum > adds negatives`); the file
//! is as the runner wrote it (absolute: the overseer runner makes it
//! relative to the workspace).

use serde::Deserialize;

use super::Tally;
use crate::overseer::signals::TestResults;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    test_results: Vec<FileResult>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileResult {
    name: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    assertion_results: Vec<Assertion>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Assertion {
    #[serde(default)]
    ancestor_titles: Vec<String>,
    title: String,
    status: String,
}

/// The tests of a jest/vitest JSON report; `None` when `text` is not one.
pub fn parse_jest_json(text: &str) -> Option<TestResults> {
    let text = text.trim_start();
    if !text.starts_with('{') || !text.contains("\"testResults\"") {
        return None;
    }
    let report: Report = serde_json::from_str(text).ok()?;
    let mut tally = Tally::default();
    for file in report.test_results {
        if file.assertion_results.is_empty() {
            if file.status == "failed" {
                tally.fail(format!("{} (the file failed to run)", file.name));
            }
            continue;
        }
        for a in file.assertion_results {
            let mut name = file.name.clone();
            for part in a.ancestor_titles.iter().chain(std::iter::once(&a.title)) {
                name.push_str(" > ");
                name.push_str(part);
            }
            match a.status.as_str() {
                "passed" => tally.pass(name),
                "failed" => tally.fail(name),
                // pending, skipped, todo, disabled, focused-away.
                _ => tally.skip(name),
            }
        }
    }
    if tally.is_empty() {
        return None;
    }
    Some(tally.results())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_json_is_not_a_jest_report() {
        assert!(parse_jest_json(r#"{"Action":"pass","Test":"TestA"}"#).is_none());
        assert!(parse_jest_json(r#"{"testResults": 3}"#).is_none());
        assert!(parse_jest_json("not json").is_none());
    }

    #[test]
    fn a_file_that_failed_to_run_counts_as_one_failing_test() {
        let json = r#"{"testResults":[{"name":"/w/a.test.js","status":"failed","message":"Cannot find module","assertionResults":[]},
            {"name":"/w/b.test.js","status":"passed","assertionResults":[{"ancestorTitles":["b"],"title":"works","status":"passed"}]}]}"#;
        let r = parse_jest_json(json).unwrap();
        assert_eq!(r.failing, vec!["/w/a.test.js (the file failed to run)"]);
        assert_eq!(r.passing, vec!["/w/b.test.js > b > works"]);
    }
}
