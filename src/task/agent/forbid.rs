//! Anti-patterns that are checked, not only said.
//!
//! `anti_patterns:` tells the model what to avoid; a sentence alone is a
//! request it may ignore (a table of the tests' answers instead of the
//! function, a `sleep` instead of a wait). An entry with `forbid:` is also a
//! check: every line the executor has added since the trajectory started
//! (to the files `paths:` names) is matched against the pattern, and a match
//! is a failing check of the measurement — the state cannot converge on it,
//! the loss counts it, and the model reads where it is. Only failing checks
//! are added: a passing one is no measurement (it would count as a signal
//! on its own, and dilute the share of failing overseer checks).

use globset::{GlobSet, GlobSetBuilder};
use regex::{Regex, RegexBuilder};

use crate::overseer::signals::CustomCheckResult;
use crate::suite::Forbidden;
use crate::workspace::{Workspace, WorkspaceError};

/// How much compiled automaton one pattern may take: a suite's pattern is
/// outside input, and the default (10 MiB) is generous for one line's check.
const SIZE_LIMIT: usize = 1 << 20;

/// The places of a check's matches that are named (the count says the rest).
const SHOWN: usize = 5;

/// The prefix of the checks' names (`anti-pattern: <avoid>`).
pub const CHECK_PREFIX: &str = "anti-pattern: ";

/// A `forbid:` pattern, compiled as the check uses it.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern).size_limit(SIZE_LIMIT).build().map_err(|e| match e {
        regex::Error::Syntax(text) => text.lines().last().unwrap_or_default().trim().to_string(),
        regex::Error::CompiledTooBig(_) => "the pattern is too large once compiled".to_string(),
        other => other.to_string(),
    })
}

struct Check {
    avoid: String,
    pattern: Regex,
    /// Empty: every file.
    paths: Option<GlobSet>,
}

/// The checked anti-patterns of one task.
pub struct AntiPatterns {
    checks: Vec<Check>,
}

impl AntiPatterns {
    /// The task's checks (patterns were checked when the suite was read;
    /// one that still does not compile checks nothing rather than failing
    /// the run).
    pub fn of(forbidden: &[Forbidden]) -> AntiPatterns {
        let checks = forbidden
            .iter()
            .filter_map(|f| {
                let pattern = compile(&f.pattern).ok()?;
                let paths = (!f.paths.is_empty()).then(|| {
                    let mut b = GlobSetBuilder::new();
                    for p in &f.paths {
                        match super::protect::glob(p) {
                            Ok(g) => {
                                b.add(g);
                            }
                            Err(e) => {
                                tracing::warn!(pattern = %p, error = %e, "an anti-pattern's path glob does not compile")
                            }
                        }
                    }
                    b.build().unwrap_or_else(|e| {
                        tracing::warn!(error = %e, "an anti-pattern's paths do not compile; it checks no file");
                        GlobSet::empty()
                    })
                });
                Some(Check { avoid: f.avoid.clone(), pattern, paths })
            })
            .collect();
        AntiPatterns { checks }
    }

    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }

    /// A failing check per anti-pattern that the lines added between `from`
    /// (where the trajectory started) and `to` (the measured state) match.
    /// A line that was there before (the same text, as many times) is not
    /// the executor's.
    pub async fn check(&self, ws: &Workspace, from: &str, to: &str) -> Result<Vec<CustomCheckResult>, WorkspaceError> {
        if self.checks.is_empty() || from.is_empty() {
            return Ok(Vec::new());
        }
        let mut hits: Vec<Vec<String>> = vec![Vec::new(); self.checks.len()];
        for change in ws.changes(from, to).await? {
            let path = change.path;
            let wanted: Vec<usize> = (0..self.checks.len())
                .filter(|&i| self.checks[i].paths.as_ref().is_none_or(|set| set.is_match(&path)))
                .collect();
            if wanted.is_empty() {
                continue;
            }
            let Some(after) = ws.file_at(to, &path).await?.filter(|t| !t.contains('\0')) else { continue };
            let before = ws.file_at(from, &path).await?.unwrap_or_default();
            for i in wanted {
                hits[i].extend(added_matches(&self.checks[i].pattern, &before, &after).into_iter().map(
                    |(line, text)| format!("{path}:{line}: {}", text.trim().chars().take(120).collect::<String>()),
                ));
            }
        }
        Ok(self
            .checks
            .iter()
            .zip(hits)
            .filter(|(_, hits)| !hits.is_empty())
            .map(|(c, hits)| CustomCheckResult {
                name: format!("{CHECK_PREFIX}{}", c.avoid),
                passed: false,
                detail: describe(&c.pattern, &hits),
                required: true,
            })
            .collect())
    }
}

/// The lines of `after` (1-based line number, text) that match `pattern`,
/// beyond the matching lines `before` already had (counted by text).
fn added_matches<'a>(pattern: &Regex, before: &str, after: &'a str) -> Vec<(usize, &'a str)> {
    let mut existing: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for line in before.lines().filter(|l| pattern.is_match(l)) {
        *existing.entry(line).or_default() += 1;
    }
    after
        .lines()
        .enumerate()
        .filter(|(_, line)| pattern.is_match(line))
        .filter(|(_, line)| match existing.get_mut(line) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .map(|(i, line)| (i + 1, line))
        .collect()
}

fn describe(pattern: &Regex, hits: &[String]) -> String {
    if hits.is_empty() {
        return String::new();
    }
    let shown: String = pattern.as_str().chars().take(80).collect();
    let mut out = format!("added lines match the forbidden pattern `{shown}`: ");
    out.push_str(&hits.iter().take(SHOWN).cloned().collect::<Vec<_>>().join("; "));
    if hits.len() > SHOWN {
        out.push_str(&format!(" (and {} more)", hits.len() - SHOWN));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forbidden(pattern: &str, paths: &[&str]) -> Forbidden {
        Forbidden {
            avoid: "special-casing inputs".into(),
            pattern: pattern.into(),
            paths: paths.iter().map(|p| (*p).to_string()).collect(),
        }
    }

    #[test]
    fn only_matching_lines_the_executor_added_count() {
        let re = compile(r"if n == \d+").unwrap();
        let before = "def f(n):\n    if n == 0:\n        return 0\n";
        let after = "def f(n):\n    if n == 0:\n        return 0\n    if n == 3:\n        return 9\n";
        let found = added_matches(&re, before, after);
        assert_eq!(found, vec![(4, "    if n == 3:")]);
        // The same line twice where it was once: the second is new.
        let twice = "    if n == 0:\n    if n == 0:\n";
        assert_eq!(
            added_matches(&re, "    if n == 0:\n", twice).into_iter().map(|(l, _)| l).collect::<Vec<_>>(),
            vec![2]
        );
    }

    #[test]
    fn a_pattern_that_does_not_compile_says_why_in_a_line() {
        let e = compile("(unclosed").unwrap_err();
        assert!(e.contains("unclosed"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[tokio::test]
    async fn a_check_fails_on_added_lines_in_its_paths_and_names_where() {
        let dir = tempfile::tempdir().unwrap();
        let mut ws = Workspace::init(dir.path(), Default::default()).await.unwrap();
        std::fs::write(dir.path().join("squares.py"), "def square(n):\n    pass\n").unwrap();
        std::fs::write(dir.path().join("notes.md"), "").unwrap();
        let from = ws.commit("start").await.unwrap().commit;
        std::fs::write(
            dir.path().join("squares.py"),
            "def square(n):\n    if n == 2:\n        return 4\n    return n * n\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.md"), "if n == 2 we return 4\n").unwrap();
        let to = ws.commit("table").await.unwrap().commit;

        let all = AntiPatterns::of(&[forbidden(r"if n == \d+", &[])]);
        let results = all.check(&ws, &from, &to).await.unwrap();
        assert_eq!(results.len(), 1);
        assert!(!results[0].passed && results[0].required);
        assert_eq!(results[0].name, "anti-pattern: special-casing inputs");
        assert!(results[0].detail.contains("squares.py:2: if n == 2:"), "{}", results[0].detail);
        assert!(results[0].detail.contains("notes.md:1"), "{}", results[0].detail);

        let python_only = AntiPatterns::of(&[forbidden(r"if n == \d+", &["**/*.py"])]);
        let results = python_only.check(&ws, &from, &to).await.unwrap();
        assert!(!results[0].detail.contains("notes.md"), "{}", results[0].detail);

        let clean = AntiPatterns::of(&[forbidden(r"time\.sleep", &[])]);
        assert!(clean.check(&ws, &from, &to).await.unwrap().is_empty(), "a passing check adds nothing");
    }
}
