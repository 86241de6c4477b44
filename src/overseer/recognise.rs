//! Which test runner an overseer's command runs, and that command with what
//! makes the runner name every test.
//!
//! A verdict against a baseline needs each test's identity and outcome, and
//! some runners only name their failures unless asked: `python -m unittest`
//! prints a dot per passing test. Where the runner is recognised, the flag
//! that makes it name every test is added to the command as it runs (the
//! task file keeps the command as written).

use std::sync::LazyLock;

use regex::Regex;

/// A test runner Attractor knows how to ask for names, and to plant
/// canaries for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// `python -m unittest` (plain or `discover`).
    Unittest,
    /// `pytest` or `python -m pytest`.
    Pytest,
}

static UNITTEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s;&|(])(?:\S*/)?python[\d.]*\s+(?:-\S+\s+)*-m\s+unittest\b").expect("valid regex")
});
static CARGO_TEST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|[\s;&|(])cargo\s+(?:\+\S+\s+)?test\b").expect("valid regex"));
static PYTEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s;&|(])(?:(?:\S*/)?pytest|(?:\S*/)?python[\d.]*\s+(?:-\S+\s+)*-m\s+pytest)\b")
        .expect("valid regex")
});

/// The runner `command` runs, when it is one Attractor knows.
pub fn runner_of(command: &str) -> Option<Runner> {
    if UNITTEST.is_match(command) {
        Some(Runner::Unittest)
    } else if PYTEST.is_match(command) {
        Some(Runner::Pytest)
    } else {
        None
    }
}

/// `command` with the flag that makes its runner name every test: `-v` for
/// unittest, `-rA` for pytest (each outcome in the short summary, which
/// `-q` keeps), `-- --format pretty` for `cargo test` (a line per test,
/// whatever `--quiet` says) — added at the end of the runner's own command, where
/// options after the test names are still read. Commands already verbose, and
/// runners that name their tests anyway, are left as they are.
pub fn naming_every_test(command: &str) -> String {
    if let Some(m) = CARGO_TEST.find(command) {
        // libtest's own options follow a `--`; `--format pretty` outdoes
        // `--quiet`'s dots (cargo passes that on to the harness too).
        let end = simple_command_end(command, m.end());
        let own = &command[m.start()..end];
        let words: Vec<&str> = own.split_whitespace().collect();
        return match words.iter().position(|w| *w == "--") {
            Some(i) if words[i + 1..].iter().any(|w| w.starts_with("--format") || *w == "-q" || *w == "--quiet") => {
                command.to_string()
            }
            Some(_) => with_flag(command, m, "--", "--format pretty", |_| false),
            None => with_flag(command, m, "test", "-- --format pretty", |_| false),
        };
    }
    if let Some(m) = PYTEST.find(command) {
        return with_flag(command, m, "pytest", "-rA", |w| w.starts_with("-r") || w == "--report-chars");
    }
    let Some(m) = UNITTEST.find(command) else { return command.to_string() };
    let verbose = |w: &str| w == "--verbose" || w.starts_with('-') && !w.starts_with("--") && w.contains('v');
    with_flag(command, m, "unittest", "-v", verbose)
}

/// `flag` added at the end of the runner's own command unless a word after
/// `runner` already `has` it (after a redirection such as `2>&1` is as
/// good: the shell reads those wherever they stand).
fn with_flag(command: &str, m: regex::Match<'_>, runner: &str, flag: &str, has: impl Fn(&str) -> bool) -> String {
    let end = simple_command_end(command, m.end());
    let own = &command[m.start()..end];
    if own.split_whitespace().skip_while(|w| !w.ends_with(runner)).skip(1).any(has) {
        return command.to_string();
    }
    let own_end = m.start() + own.trim_end().len();
    format!("{} {flag}{}", &command[..own_end], &command[own_end..])
}

/// Where the simple command that goes on at `from` ends: at `;`, `|`, a
/// newline, or an `&` that is not part of a redirection (`2>&1`, `&>`).
fn simple_command_end(command: &str, from: usize) -> usize {
    let bytes = command.as_bytes();
    for i in from..bytes.len() {
        match bytes[i] {
            b';' | b'|' | b'\n' => return i,
            b'&' => {
                let redirection = i > 0 && matches!(bytes[i - 1], b'>' | b'<') || bytes.get(i + 1) == Some(&b'>');
                if !redirection {
                    return i;
                }
            }
            _ => {}
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unittest_and_pytest_are_recognised_in_their_usual_spellings() {
        assert_eq!(runner_of("python3 -m unittest"), Some(Runner::Unittest));
        assert_eq!(runner_of("cd pkg && python -m unittest discover -s tests"), Some(Runner::Unittest));
        assert_eq!(runner_of(".venv/bin/python3.11 -B -m unittest tests.test_more"), Some(Runner::Unittest));
        assert_eq!(runner_of("pytest -q"), Some(Runner::Pytest));
        assert_eq!(runner_of("python3 -m pytest tests/"), Some(Runner::Pytest));
        assert_eq!(runner_of("cargo test"), None);
        assert_eq!(runner_of("./run_unittests.sh"), None);
    }

    #[test]
    fn unittest_is_made_to_name_every_test_once() {
        assert_eq!(naming_every_test("python3 -m unittest"), "python3 -m unittest -v");
        assert_eq!(
            naming_every_test("python3 -m unittest discover -s tests && echo done"),
            "python3 -m unittest discover -s tests -v && echo done"
        );
        assert_eq!(naming_every_test("python3 -m unittest -v"), "python3 -m unittest -v");
        assert_eq!(naming_every_test("python3 -m unittest -vb"), "python3 -m unittest -vb");
        assert_eq!(naming_every_test("python3 -m unittest 2>&1 | tail -50"), "python3 -m unittest 2>&1 -v | tail -50");
        assert_eq!(naming_every_test("pytest -q"), "pytest -q -rA");
        assert_eq!(naming_every_test("python3 -m pytest -q tests/ -x"), "python3 -m pytest -q tests/ -x -rA");
        assert_eq!(naming_every_test("pytest -ra"), "pytest -ra");
        assert_eq!(
            naming_every_test("cargo test --quiet --offline"),
            "cargo test --quiet --offline -- --format pretty"
        );
        assert_eq!(
            naming_every_test("cargo test -- --test-threads 1"),
            "cargo test -- --test-threads 1 --format pretty"
        );
        assert_eq!(naming_every_test("cargo test -- --format json"), "cargo test -- --format json");
        assert_eq!(naming_every_test("cargo test 2>&1 | tail"), "cargo test 2>&1 -- --format pretty | tail");
    }
}
