//! Counting errors and warnings in compiler, type-checker and linter output.
//!
//! Two independent readings are made and the larger wins for each count:
//!
//! - diagnostic lines in the styles of rustc/cargo (`error[E0425]: …`),
//!   gcc/clang and mypy (`file:line:col: error: …`), tsc (`file(l,c): error
//!   TS…` and `file:l:c - error TS…`), eslint's stylish format
//!   (`  3:10  error  …`) and ruff/flake8/pylint (`file:l:c: F401 …`, always
//!   errors: these tools have no warning level);
//! - the tools' own summaries: cargo's `generated N warnings` and `due to N
//!   previous errors`, eslint's `✖ N problems (E errors, W warnings)`,
//!   `Found N errors` (tsc, mypy, ruff).
//!
//! Taking the larger means a tool that prints both lines and a summary is
//! not counted twice, and one that prints only one of them is still counted.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::num;

/// Errors and warnings found in some output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosticCounts {
    pub errors: u32,
    pub warnings: u32,
}

static RUST_ERROR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^error(?:\[E\d+\])?: ").expect("valid regex"));
static RUST_WARNING: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^warning(?:\[[\w-]+\])?: ").expect("valid regex"));
/// Cargo's closing lines look like diagnostics but only summarise them.
static RUST_NOT_A_DIAGNOSTIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:error|warning): (?:could not compile|aborting due to|test failed|\d+ targets? failed|build failed|`[^`]+` \([^)]*\) generated \d+ warnings?|unused manifest key)")
        .expect("valid regex")
});
static FILE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\S[^:(]*(?::\d+(?::\d+)?: (?:fatal )?(?P<a>error|warning)\b|\(\d+,\d+\): (?P<b>error|warning) TS\d+|:\d+:\d+ - (?P<c>error|warning) TS\d+)")
        .expect("valid regex")
});
static ESLINT_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s+\d+:\d+\s+(?P<sev>error|warning)\s{2,}\S").expect("valid regex"));
static CODE_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\S+:\d+:\d+: [A-Z]{1,4}\d{2,4}:? ").expect("valid regex"));

static CARGO_WARNINGS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"generated (?P<n>\d+) warnings?").expect("valid regex"));
static CARGO_ERRORS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"due to (?P<n>\d+) previous errors?").expect("valid regex"));
static CARGO_EMITTED_WARNINGS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"due to \d+ previous errors?; (?P<n>\d+) warnings? emitted").expect("valid regex"));
static ESLINT_SUMMARY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\d+ problems? \((?P<e>\d+) errors?, (?P<w>\d+) warnings?\)").expect("valid regex"));
static FOUND_ERRORS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^Found (?P<n>\d+) errors?\b").expect("valid regex"));

pub fn parse_diagnostics(output: &str) -> DiagnosticCounts {
    let mut lines = DiagnosticCounts::default();
    let mut summary = DiagnosticCounts::default();
    for line in output.lines() {
        let line = line.trim_end();
        if RUST_NOT_A_DIAGNOSTIC.is_match(line) {
            if let Some(c) = CARGO_WARNINGS.captures(line) {
                summary.warnings += num(&c, "n");
            }
            if let Some(c) = CARGO_ERRORS.captures(line) {
                summary.errors += num(&c, "n");
            }
            if let Some(c) = CARGO_EMITTED_WARNINGS.captures(line) {
                summary.warnings += num(&c, "n");
            }
            continue;
        }
        if RUST_ERROR.is_match(line) {
            lines.errors += 1;
        } else if RUST_WARNING.is_match(line) {
            lines.warnings += 1;
        } else if let Some(c) = FILE_LINE.captures(line) {
            let sev = c.name("a").or(c.name("b")).or(c.name("c")).map_or("", |m| m.as_str());
            if sev == "error" {
                lines.errors += 1;
            } else {
                lines.warnings += 1;
            }
        } else if let Some(c) = ESLINT_LINE.captures(line) {
            if &c["sev"] == "error" {
                lines.errors += 1;
            } else {
                lines.warnings += 1;
            }
        } else if CODE_LINE.is_match(line) {
            lines.errors += 1;
        } else if let Some(c) = ESLINT_SUMMARY.captures(line) {
            summary.errors += num(&c, "e");
            summary.warnings += num(&c, "w");
        } else if let Some(c) = FOUND_ERRORS.captures(line) {
            summary.errors += num(&c, "n");
        }
    }
    DiagnosticCounts { errors: lines.errors.max(summary.errors), warnings: lines.warnings.max(summary.warnings) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_are_not_diagnostics() {
        let c = parse_diagnostics("no errors found\nthe warning light is off\nCompiling x v0.1.0\n");
        assert_eq!(c, DiagnosticCounts::default());
    }

    #[test]
    fn cargo_summary_with_warnings_emitted() {
        let c = parse_diagnostics("error: could not compile `x` (lib) due to 3 previous errors; 2 warnings emitted\n");
        assert_eq!(c, DiagnosticCounts { errors: 3, warnings: 2 });
    }
}
