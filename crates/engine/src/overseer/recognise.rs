//! Which test runner an overseer's command runs, and that command with what
//! makes the runner name every test.
//!
//! A verdict against a baseline needs each test's identity and outcome, and
//! some runners only name their failures unless asked: `python -m unittest`
//! prints a dot per passing test. Where the runner is recognised, the flag
//! that makes it name every test is added to the command as it runs (the
//! task file keeps the command as written).

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

/// A test runner Attractor knows how to ask for names (and for a
/// machine-readable report, and to plant canaries for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// `python -m unittest` (plain or `discover`).
    Unittest,
    /// `pytest` or `python -m pytest`.
    Pytest,
    /// `cargo test`.
    CargoTest,
    /// `go test`.
    GoTest,
    /// `jest` (or `npx jest`).
    Jest,
    /// `vitest` (or `vitest run`, `npx vitest`).
    Vitest,
}

impl Runner {
    /// Whether canary tests can be planted for it: a `unittest.TestCase`
    /// file, which Python's two runners both collect.
    pub fn takes_canaries(self) -> bool {
        matches!(self, Runner::Unittest | Runner::Pytest)
    }

    /// The extension of the report file the runner is asked to write
    /// (`None` for runners whose machine-readable form, if any, is their
    /// output itself).
    pub fn report_extension(self) -> Option<&'static str> {
        match self {
            Runner::Pytest => Some("xml"),
            Runner::Jest | Runner::Vitest => Some("json"),
            Runner::Unittest | Runner::CargoTest | Runner::GoTest => None,
        }
    }
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
static GO_TEST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|[\s;&|(])(?:\S*/)?go\s+test\b").expect("valid regex"));
// `jest-junit`, `jest.config.js` and `vitest.config.ts` are not the runner:
// the word must end at a space, an operator or the end.
static JEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s;&|(])(?:npx\s+(?:--\S+\s+)*)?(?:\S*/)?jest(?:$|[\s;&|)])").expect("valid regex")
});
static VITEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s;&|(])(?:npx\s+(?:--\S+\s+)*)?(?:\S*/)?vitest(?:\s+run)?(?:$|[\s;&|)])").expect("valid regex")
});

/// Compiles the runners' patterns now. A pattern compiles on its first use,
/// and compiling takes a deep stack: done here, where an overseer runner is
/// built, rather than at the first measurement, deep inside a trajectory
/// (a split's child's, in a debug build, overflowed a thread's 2 MiB).
pub fn prepare() {
    for re in [&*UNITTEST, &*PYTEST, &*CARGO_TEST, &*GO_TEST, &*JEST, &*VITEST] {
        let _ = re.as_str();
    }
}

/// The runner `command` runs, when it is one Attractor knows.
pub fn runner_of(command: &str) -> Option<Runner> {
    [
        (&*UNITTEST, Runner::Unittest),
        (&*PYTEST, Runner::Pytest),
        (&*CARGO_TEST, Runner::CargoTest),
        (&*GO_TEST, Runner::GoTest),
        (&*JEST, Runner::Jest),
        (&*VITEST, Runner::Vitest),
    ]
    .into_iter()
    .find(|(re, _)| re.is_match(command))
    .map(|(_, r)| r)
}

/// A test overseer's command as it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCommand {
    pub command: String,
    /// The report file the runner was asked to write, when it was.
    pub report: Option<PathBuf>,
}

/// `command` as a test overseer runs it: naming every test, and writing
/// the machine-readable report its runner can write to `report` (a path
/// with the extension [`Runner::report_extension`] gives) — JUnit XML for
/// pytest, the JSON report for jest and vitest; `go test` is asked for
/// `-json` on its output. A command that already asks for a report of its
/// own keeps it (and the overseer's `report:` field says where it is).
/// Rust's libtest writes JSON only on a nightly toolchain, so `cargo test`
/// is read from its `--format pretty` lines, and asked to go on past a
/// failing test binary (`--no-fail-fast`) so that every test is reported.
pub fn as_run(command: &str, report: Option<&Path>) -> TestCommand {
    let named = naming_every_test(command);
    let asked = match (runner_of(&named), report) {
        (Some(runner), Some(path)) => asking_for_report(&named, runner, path).map(|c| (c, path.to_path_buf())),
        _ => None,
    };
    match asked {
        Some((command, path)) => TestCommand { command, report: Some(path) },
        None => {
            let go_json = find(&GO_TEST, &named).map(|m| with_flag(&named, m, "test", "-json", |w| w == "-json"));
            TestCommand { command: go_json.unwrap_or(named), report: None }
        }
    }
}

/// `command` asking `runner` to write its report to `path`; `None` when
/// the runner writes no report file, or the command asks for one of its own.
fn asking_for_report(command: &str, runner: Runner, path: &Path) -> Option<String> {
    let path = path.to_string_lossy();
    let path = shlex::try_quote(&path).ok()?;
    let changed = match runner {
        Runner::Pytest => {
            let has = |w: &str| w.starts_with("--junitxml") || w.starts_with("--junit-xml");
            with_flag(command, find(&PYTEST, command)?, "pytest", &format!("--junitxml={path}"), has)
        }
        Runner::Jest => {
            let has = |w: &str| w == "--json" || w.starts_with("--outputFile");
            with_flag(command, find(&JEST, command)?, "jest", &format!("--json --outputFile={path}"), has)
        }
        Runner::Vitest => {
            let m = find(&VITEST, command)?;
            let own = &command[m.start..simple_command_end(command, m.end)];
            // Naming a reporter replaces the default one: keep it, or the
            // user's, for the output a person reads.
            let default = if own.contains("--reporter") { "" } else { "--reporter=default " };
            let flag = format!("{default}--reporter=json --outputFile.json={path}");
            let runner = if own.split_whitespace().any(|w| w == "run") { "run" } else { "vitest" };
            with_flag(command, m, runner, &flag, |w| w.starts_with("--outputFile"))
        }
        Runner::Unittest | Runner::CargoTest | Runner::GoTest => return None,
    };
    (changed != command).then_some(changed)
}

/// `command` with the flag that makes its runner name every test: `-v` for
/// unittest, `-rA` for pytest (each outcome in the short summary, which
/// `-q` keeps), `--no-fail-fast … -- --format pretty` for `cargo test` (a
/// line per test, whatever `--quiet` says, from every test binary) — added
/// at the end of the runner's own command, where options after the test
/// names are still read. Commands already verbose, and runners that name
/// their tests anyway, are left as they are.
pub fn naming_every_test(command: &str) -> String {
    if let Some(m) = find(&CARGO_TEST, command) {
        // cargo stops at the first test binary that fails unless told not to.
        let own = &command[m.end..simple_command_end(command, m.end)];
        let cargo_own = own.split(" -- ").next().unwrap_or(own);
        let command = if cargo_own.split_whitespace().any(|w| w == "--no-fail-fast") {
            command.to_string()
        } else {
            format!("{} --no-fail-fast{}", &command[..m.end], &command[m.end..])
        };
        let Some(m) = find(&CARGO_TEST, &command) else { return command };
        // libtest's own options follow a `--`; `--format pretty` outdoes
        // `--quiet`'s dots (cargo passes that on to the harness too).
        let end = simple_command_end(&command, m.end);
        let own = &command[m.start..end];
        let words: Vec<&str> = own.split_whitespace().collect();
        return match words.iter().position(|w| *w == "--") {
            Some(i) if words[i + 1..].iter().any(|w| w.starts_with("--format") || *w == "-q" || *w == "--quiet") => {
                command.to_string()
            }
            Some(_) => with_flag(&command, m, "--", "--format pretty", |_| false),
            None => with_flag(&command, m, "test", "-- --format pretty", |_| false),
        };
    }
    if let Some(m) = find(&PYTEST, command) {
        return with_flag(command, m, "pytest", "-rA", |w| w.starts_with("-r") || w == "--report-chars");
    }
    let Some(m) = find(&UNITTEST, command) else { return command.to_string() };
    let verbose = |w: &str| w == "--verbose" || w.starts_with('-') && !w.starts_with("--") && w.contains('v');
    with_flag(command, m, "unittest", "-v", verbose)
}

/// `flag` added at the end of the runner's own command unless a word after
/// `runner` already `has` it (after a redirection such as `2>&1` is as
/// good: the shell reads those wherever they stand).
fn with_flag(command: &str, m: Span, runner: &str, flag: &str, has: impl Fn(&str) -> bool) -> String {
    let end = simple_command_end(command, m.end);
    let own = &command[m.start..end];
    if own.split_whitespace().skip_while(|w| !w.ends_with(runner)).skip(1).any(has) {
        return command.to_string();
    }
    let own_end = m.start + own.trim_end().len();
    format!("{} {flag}{}", &command[..own_end], &command[own_end..])
}

/// Where a runner's name stands in a command.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
}

/// Where `re` finds its runner in `command`: a match that had to take the
/// character after the runner's name (to know the name ended) gives it back.
fn find(re: &Regex, command: &str) -> Option<Span> {
    let m = re.find(command)?;
    let end = match command[..m.end()].chars().next_back() {
        Some(c) if !c.is_alphanumeric() && c != '_' => m.end() - c.len_utf8(),
        _ => m.end(),
    };
    Some(Span { start: m.start(), end })
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
            "cargo test --no-fail-fast --quiet --offline -- --format pretty"
        );
        assert_eq!(
            naming_every_test("cargo test -- --test-threads 1"),
            "cargo test --no-fail-fast -- --test-threads 1 --format pretty"
        );
        assert_eq!(
            naming_every_test("cargo test --no-fail-fast -- --format json"),
            "cargo test --no-fail-fast -- --format json"
        );
        assert_eq!(
            naming_every_test("cargo test 2>&1 | tail"),
            "cargo test --no-fail-fast 2>&1 -- --format pretty | tail"
        );
    }

    #[test]
    fn go_jest_and_vitest_are_recognised_but_not_their_plugins_or_configs() {
        assert_eq!(runner_of("go test ./..."), Some(Runner::GoTest));
        assert_eq!(runner_of("cd svc && go test -run TestX ./pkg"), Some(Runner::GoTest));
        assert_eq!(runner_of("npx jest --ci"), Some(Runner::Jest));
        assert_eq!(runner_of("node_modules/.bin/jest"), Some(Runner::Jest));
        assert_eq!(runner_of("npx vitest run"), Some(Runner::Vitest));
        assert_eq!(runner_of("vitest run --config ui/vite.config.ts"), Some(Runner::Vitest));
        assert_eq!(runner_of("cat jest.config.js"), None);
        assert_eq!(runner_of("npx jest-junit"), None);
        assert_eq!(runner_of("npm test"), None);
        assert_eq!(runner_of("cargo test"), Some(Runner::CargoTest));
        assert!(runner_of("pytest").is_some_and(Runner::takes_canaries));
        assert!(!runner_of("cargo test").is_some_and(Runner::takes_canaries));
    }

    #[test]
    fn a_runner_that_can_write_a_report_is_asked_to_write_it_where_attractor_reads_it() {
        let at = Path::new("/w s/.attractor-report-x.xml");
        let run = as_run("pytest -q", Some(at));
        assert_eq!(run.command, "pytest -q -rA --junitxml='/w s/.attractor-report-x.xml'");
        assert_eq!(run.report.as_deref(), Some(at));
        let json = Path::new("/w/r.json");
        assert_eq!(
            as_run("npx jest --ci; echo done", Some(json)).command,
            "npx jest --ci --json --outputFile=/w/r.json; echo done"
        );
        assert_eq!(
            as_run("npx vitest run", Some(json)).command,
            "npx vitest run --reporter=default --reporter=json --outputFile.json=/w/r.json"
        );
        assert_eq!(
            as_run("vitest run --reporter=verbose", Some(json)).command,
            "vitest run --reporter=verbose --reporter=json --outputFile.json=/w/r.json"
        );
        assert_eq!(as_run("go test ./... 2>&1", None).command, "go test ./... 2>&1 -json");
        assert_eq!(as_run("go test -json ./...", None).command, "go test -json ./...");
    }

    #[test]
    fn a_command_that_asks_for_its_own_report_keeps_it_and_attractor_reads_its_output() {
        let at = Path::new("/w/r.xml");
        let run = as_run("pytest --junitxml=out.xml", Some(at));
        assert_eq!((run.command.as_str(), run.report), ("pytest --junitxml=out.xml -rA", None));
        let run = as_run("npx jest --json", Some(at));
        assert_eq!((run.command.as_str(), run.report), ("npx jest --json", None));
        let run = as_run("python3 -m unittest", Some(at));
        assert_eq!((run.command.as_str(), run.report), ("python3 -m unittest -v", None));
    }
}
