//! The overseer runner with real processes in real temp workspaces: order,
//! skipping, retries of environmental failures, classification, reports,
//! and real runs of real tools (a TAP script, python's unittest, cargo test).

use std::path::{Path, PathBuf};
use std::time::Duration;

use attractor::overseer::parse::TestFormat;
use attractor::overseer::signals::{FailureClass, Verdict};
use attractor::overseer::{MeasurePolicy, Measurement, OverseerRunner, RunnerConfig};
use attractor::suite::{CostClass, Overseer, OverseerKind};

fn fast_config() -> RunnerConfig {
    RunnerConfig { retry_delay_ms: 10, ..RunnerConfig::default() }
}

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let f = Fixture { dir: tempfile::tempdir().unwrap() };
        std::fs::create_dir(f.ws()).unwrap();
        f
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// A log outside the workspace that scripts append to.
    fn log(&self) -> PathBuf {
        self.dir.path().join("log.txt")
    }

    fn log_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.log()).unwrap_or_default().lines().map(str::to_string).collect()
    }

    fn script(&self, name: &str, body: &str) {
        let path = self.ws().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    async fn measure(&self, overseers: Vec<Overseer>, policy: MeasurePolicy) -> Measurement {
        let runner =
            OverseerRunner::new(overseers, fast_config()).unwrap().env("LOG", self.log().display().to_string());
        runner.measure(&self.ws(), policy, None).await
    }
}

fn verdict<'a>(m: &'a Measurement, name: &str) -> &'a Verdict {
    m.signals.verdicts.iter().find(|v| v.overseer == name).unwrap_or_else(|| panic!("no verdict for {name}: {m:?}"))
}

fn attempts(m: &Measurement, name: &str) -> u32 {
    m.runs.iter().find(|r| r.overseer == name).map(|r| r.attempts).unwrap()
}

#[tokio::test]
async fn an_overseer_that_times_out_is_environmental_and_retried() {
    let f = Fixture::new();
    f.script("slow.sh", "echo attempt >> \"$LOG\"\nsleep 10\n");
    let o = Overseer::new("slow", OverseerKind::Test, "./slow.sh").timeout(Duration::from_millis(300));
    let m = f.measure(vec![o], MeasurePolicy::default()).await;
    // One run and the two default retries, each killed at its timeout.
    assert_eq!(f.log_lines().len(), 3);
    assert_eq!(attempts(&m, "slow"), 3);
    let v = verdict(&m, "slow");
    assert!(!v.passed);
    assert_eq!(v.failure_class, Some(FailureClass::Environmental));
    assert!(v.evidence.contains("timed out after 0.3 s") && v.evidence.contains("(3 attempts)"), "{}", v.evidence);
    // Not measured: no test results are made up.
    assert!(m.signals.test_results.is_none());
    assert!(m.signals.has_environmental_failure());
}

#[tokio::test]
async fn a_missing_binary_is_environmental() {
    let f = Fixture::new();
    let m = f
        .measure(
            vec![Overseer::new("lint", OverseerKind::Lint, "no-such-linter-xyz --check")],
            MeasurePolicy::default(),
        )
        .await;
    let v = verdict(&m, "lint");
    assert_eq!(v.failure_class, Some(FailureClass::Environmental));
    assert!(v.evidence.contains("not found"), "{}", v.evidence);
    assert_eq!(attempts(&m, "lint"), 3);
    assert!(m.signals.lint_results.is_none());
}

#[tokio::test]
async fn a_network_error_in_a_failing_build_is_environmental() {
    let f = Fixture::new();
    f.script("build.sh", "echo try >> \"$LOG\"\necho 'error: failed to download `serde v1.0.0`' >&2\necho 'Caused by: Could not resolve host: index.crates.io' >&2\nexit 101\n");
    let m = f.measure(vec![Overseer::new("build", OverseerKind::Build, "./build.sh")], MeasurePolicy::default()).await;
    assert_eq!(verdict(&m, "build").failure_class, Some(FailureClass::Environmental));
    assert_eq!(f.log_lines().len(), 3);
}

const TAP_SCRIPT: &str = r#"echo run >> "$LOG"
echo "TAP version 13"
echo "1..4"
echo "ok 1 - parses numbers"
echo "not ok 2 - parses negative numbers"
echo "  ---"
echo "  message: expected -3, got -4"
echo "  ..."
echo "ok 3 - skips blanks # SKIP not yet"
echo "not ok 4 - handles overflow"
exit 1
"#;

#[tokio::test]
async fn failing_tests_are_logical_with_their_exact_names_and_not_retried() {
    let f = Fixture::new();
    f.script("tests.sh", TAP_SCRIPT);
    let m = f.measure(vec![Overseer::new("tests", OverseerKind::Test, "./tests.sh")], MeasurePolicy::default()).await;
    let v = verdict(&m, "tests");
    assert_eq!(v.failure_class, Some(FailureClass::Logical));
    assert!(
        v.evidence.starts_with("2 of 4 tests failed [TAP]: parses negative numbers, handles overflow"),
        "{}",
        v.evidence
    );
    assert!(v.evidence.contains("not ok 4 - handles overflow"), "the output's end is the evidence: {}", v.evidence);
    let t = m.signals.test_results.as_ref().unwrap();
    assert_eq!((t.passed, t.failed, t.skipped, t.total), (1, 2, 1, 4));
    assert_eq!(t.failing, vec!["parses negative numbers", "handles overflow"]);
    assert_eq!(t.passing, vec!["parses numbers"]);
    assert_eq!(m.runs[0].test_format, Some(TestFormat::Tap));
    assert_eq!(f.log_lines().len(), 1, "a logical failure is not retried");
}

/// Three overseers written most expensive first; each logs its name.
fn three(build_exit: u8) -> Vec<Overseer> {
    vec![
        Overseer::new("tests", OverseerKind::Test, "echo tests >> \"$LOG\"; echo '1..1'; echo 'ok 1 - works'")
            .cost(CostClass::Expensive),
        Overseer::new("lint", OverseerKind::Lint, "echo lint >> \"$LOG\"").cost(CostClass::Moderate),
        Overseer::new(
            "build",
            OverseerKind::Build,
            match build_exit {
                0 => "echo build >> \"$LOG\"; echo 'warning: unused variable: `x`' >&2",
                _ => "echo build >> \"$LOG\"; echo 'error[E0425]: cannot find value `c` in this scope' >&2; exit 101",
            },
        )
        .cost(CostClass::Cheap),
    ]
}

#[tokio::test]
async fn overseers_run_cheapest_first() {
    let f = Fixture::new();
    let m = f.measure(three(0), MeasurePolicy::default()).await;
    assert_eq!(f.log_lines(), vec!["build", "lint", "tests"]);
    let order: Vec<&str> = m.signals.verdicts.iter().map(|v| v.overseer.as_str()).collect();
    assert_eq!(order, vec!["build", "lint", "tests"]);
    assert!(m.signals.verdicts.iter().all(|v| v.passed && !v.skipped));
    let b = m.signals.build_result.as_ref().unwrap();
    assert!(b.success);
    assert_eq!((b.error_count, b.warning_count), (0, 1));
    assert!(m.signals.all_passing());
}

#[tokio::test]
async fn a_failing_build_skips_the_rest() {
    let f = Fixture::new();
    let m = f.measure(three(1), MeasurePolicy::default()).await;
    assert_eq!(f.log_lines(), vec!["build"]);
    let b = verdict(&m, "build");
    assert_eq!(b.failure_class, Some(FailureClass::Logical));
    assert_eq!(m.signals.build_result.as_ref().map(|b| (b.success, b.error_count)), Some((false, 1)));
    for name in ["lint", "tests"] {
        let v = verdict(&m, name);
        assert!(v.skipped && !v.passed && v.failure_class.is_none(), "{v:?}");
        assert!(v.evidence.contains("`build` failed"), "{}", v.evidence);
        assert_eq!(attempts(&m, name), 0);
    }
    assert!(m.signals.test_results.is_none());
}

#[tokio::test]
async fn the_policy_can_skip_expensive_overseers() {
    let f = Fixture::new();
    let m = f.measure(three(0), MeasurePolicy { skip_expensive: true }).await;
    assert_eq!(f.log_lines(), vec!["build", "lint"]);
    let v = verdict(&m, "tests");
    assert!(v.skipped && v.evidence.contains("expensive"), "{v:?}");
}

#[tokio::test]
async fn custom_checks_follow_their_patterns_or_the_exit_status() {
    let f = Fixture::new();
    let m = f
        .measure(
            vec![
                Overseer::new("smoke", OverseerKind::Custom, "echo 'starting'; echo 'ALL OK'; exit 3")
                    .success_pattern("^ALL OK$"),
                Overseer::new("no-todo", OverseerKind::Custom, "echo 'src/lib.rs:3: TODO: finish'")
                    .failure_pattern("TODO")
                    .success_pattern("."),
                Overseer::new("exit", OverseerKind::Custom, "exit 2"),
            ],
            MeasurePolicy::default(),
        )
        .await;
    let checks = &m.signals.custom_checks;
    assert_eq!(checks.len(), 3);
    assert!(checks[0].passed && checks[0].detail.contains("ALL OK"), "{:?}", checks[0]);
    assert!(!checks[1].passed && checks[1].detail.contains("src/lib.rs:3: TODO"), "{:?}", checks[1]);
    assert!(!checks[2].passed && checks[2].detail.contains("exited with code 2"), "{:?}", checks[2]);
    assert_eq!(verdict(&m, "exit").failure_class, Some(FailureClass::Logical));
}

#[tokio::test]
async fn a_security_scan_fails_on_a_critical_finding_whatever_its_exit_status() {
    let f = Fixture::new();
    let scan = "echo 'Total: 3 (UNKNOWN: 0, LOW: 1, MEDIUM: 0, HIGH: 1, CRITICAL: 1)'; exit 1";
    let m = f.measure(vec![Overseer::new("scan", OverseerKind::Security, scan)], MeasurePolicy::default()).await;
    let s = m.signals.security_scan.as_ref().unwrap();
    assert_eq!((s.critical_count, s.high_count, s.low_count), (1, 1, 1));
    assert_eq!(verdict(&m, "scan").failure_class, Some(FailureClass::Logical));
    assert_eq!(m.signals.vulnerability_count(), 2);

    let clean = "echo 'Total: 1 (UNKNOWN: 0, LOW: 1, MEDIUM: 0, HIGH: 0, CRITICAL: 0)'; exit 1";
    let m = f.measure(vec![Overseer::new("scan", OverseerKind::Security, clean)], MeasurePolicy::default()).await;
    assert!(verdict(&m, "scan").passed);
}

#[tokio::test]
async fn a_junit_report_written_by_the_run_is_read_and_a_stale_one_is_not() {
    let f = Fixture::new();
    let junit = r#"<testsuite><testcase classname="calc" name="adds"/><testcase classname="calc" name="divides"><failure message="boom"/></testcase></testsuite>"#;
    std::fs::create_dir_all(f.ws().join("reports")).unwrap();
    // The command writes the report, prints nothing useful, exits 1.
    let cmd = format!("printf '%s' '{junit}' > reports/junit.xml; echo 'see the report'; exit 1");
    let o = Overseer::new("tests", OverseerKind::Test, cmd).report("reports/junit.xml");
    let m = f.measure(vec![o], MeasurePolicy::default()).await;
    let t = m.signals.test_results.as_ref().unwrap();
    assert_eq!((t.passed, t.failed), (1, 1));
    assert_eq!(t.failing, vec!["calc.divides"]);
    assert_eq!(m.runs[0].test_format, Some(TestFormat::Junit));

    // A report from an earlier run (two minutes old) is ignored: the output decides.
    let old = f.ws().join("reports/old.xml");
    std::fs::write(&old, junit).unwrap();
    let two_minutes_ago = std::time::SystemTime::now() - Duration::from_secs(120);
    std::fs::File::options().write(true).open(&old).unwrap().set_modified(two_minutes_ago).unwrap();
    let o = Overseer::new("tests", OverseerKind::Test, "echo '1..1'; echo 'ok 1 - fine'").report("reports/old.xml");
    let m = f.measure(vec![o], MeasurePolicy::default()).await;
    assert_eq!(m.runs[0].test_format, Some(TestFormat::Tap));
    assert!(m.signals.test_results.as_ref().unwrap().all_passing());
}

#[tokio::test]
async fn output_in_no_known_format_is_no_test_evidence_and_never_a_passing_test() {
    let f = Fixture::new();
    for (command, exit) in [("echo 'checked 3 pages, 1 broken'; exit 1", 1), ("echo 'all good, trust me'", 0)] {
        let m = f.measure(vec![Overseer::new("e2e", OverseerKind::Test, command)], MeasurePolicy::default()).await;
        assert_eq!(m.signals.test_results, None, "exit {exit}: no test was counted");
        let v = verdict(&m, "e2e");
        assert!(!v.passed, "exit {exit}: an unreadable run is not a pass");
        assert!(v.evidence.starts_with("no test evidence"), "{}", v.evidence);
        assert!(!m.signals.has_any_signal(), "the verdict rests on the other overseers");
    }
}

#[tokio::test]
async fn python_unittest_really_run() {
    let f = Fixture::new();
    std::fs::write(
        f.ws().join("test_calc.py"),
        "import unittest\n\nclass TestCalc(unittest.TestCase):\n    def test_adds(self):\n        self.assertEqual(2 + 2, 4)\n\n    def test_subtracts(self):\n        self.assertEqual(5 - 3, 3)\n",
    )
    .unwrap();
    let o = Overseer::new("unit", OverseerKind::Test, "python3 -m unittest -v").timeout(Duration::from_secs(60));
    let m = f.measure(vec![o], MeasurePolicy::default()).await;
    assert_eq!(m.runs[0].test_format, Some(TestFormat::Unittest), "{m:?}");
    let t = m.signals.test_results.as_ref().unwrap();
    assert_eq!(t.failing, vec!["test_calc.TestCalc.test_subtracts"]);
    assert_eq!(t.passing, vec!["test_calc.TestCalc.test_adds"]);
    assert_eq!(verdict(&m, "unit").failure_class, Some(FailureClass::Logical));
}

#[tokio::test]
async fn pytest_is_read_from_the_junit_report_it_was_asked_to_write_and_the_report_is_gone_after() {
    let f = Fixture::new();
    // pytest from scripts/real-project.sh's cache, beside the workspace.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/real-project.sh");
    let out = std::process::Command::new(script).arg("pytest").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pylib = String::from_utf8(out.stdout).unwrap().trim().to_string();
    std::fs::create_dir(f.ws().join("tests")).unwrap();
    std::fs::write(
        f.ws().join("tests/test_calc.py"),
        "import pytest\n\nclass TestCalc:\n    def test_adds(self):\n        assert 2 + 2 == 4\n\n    @pytest.mark.parametrize('x', [1, 2])\n    def test_halves(self, x):\n        assert x / 2 == 0.5\n",
    )
    .unwrap();
    let o = Overseer::new("unit", OverseerKind::Test, &format!("PYTHONPATH={pylib} python3 -m pytest -q"))
        .timeout(Duration::from_secs(120));
    let m = f.measure(vec![o], MeasurePolicy::default()).await;
    assert_eq!(m.runs[0].test_format, Some(TestFormat::Junit), "{m:?}");
    let t = m.signals.test_results.as_ref().unwrap();
    assert_eq!(t.failing, vec!["tests.test_calc.TestCalc.test_halves[2]"]);
    assert_eq!(t.passing, vec!["tests.test_calc.TestCalc.test_adds", "tests.test_calc.TestCalc.test_halves[1]"]);
    let left: Vec<_> = std::fs::read_dir(f.ws()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().starts_with(".attractor-report")), "{left:?}");
}

#[tokio::test]
async fn vitest_is_read_from_its_json_report_with_names_relative_to_the_workspace() {
    let f = Fixture::new();
    // The project's own vitest (scripts/test.sh installs node_modules first).
    let vitest = Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/.bin/vitest");
    assert!(vitest.exists(), "{} is missing: run `npm ci`", vitest.display());
    std::fs::write(f.ws().join("package.json"), "{}\n").unwrap();
    std::fs::write(
        f.ws().join("sum.test.mjs"),
        "import { describe, expect, it } from 'vitest';\n\ndescribe('sum', () => {\n  it('adds', () => { expect(1 + 2).toBe(3); });\n  it('adds negatives', () => { expect(-1 + -2).toBe(-4); });\n});\n",
    )
    .unwrap();
    let command = format!("{} run --root . 2>&1", vitest.display());
    let o = Overseer::new("unit", OverseerKind::Test, &command).timeout(Duration::from_secs(120));
    let m = f.measure(vec![o], MeasurePolicy::default()).await;
    assert_eq!(m.runs[0].test_format, Some(TestFormat::JestJson), "{m:?}");
    let t = m.signals.test_results.as_ref().unwrap();
    assert_eq!(t.failing, vec!["sum.test.mjs > sum > adds negatives"], "{t:?}");
    assert_eq!(t.passing, vec!["sum.test.mjs > sum > adds"]);
}

#[tokio::test]
async fn cargo_test_really_run_on_a_tiny_crate() {
    let f = Fixture::new();
    let ws = f.ws();
    std::fs::write(
        ws.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir(ws.join("src")).unwrap();
    std::fs::write(
        ws.join("src/lib.rs"),
        "pub fn double(x: i32) -> i32 { x * 2 }\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() { assert_eq!(super::double(2), 4); }\n    #[test]\n    fn doubles_negative() { assert_eq!(super::double(-2), -3); }\n}\n",
    )
    .unwrap();
    let target = f.dir.path().join("target");
    let o = Overseer::new("cargo", OverseerKind::Test, "cargo test --offline --quiet 2>&1")
        .timeout(Duration::from_secs(240));
    let runner = OverseerRunner::new(vec![o], fast_config())
        .unwrap()
        .env("CARGO_TARGET_DIR", target.display().to_string())
        .env("RUST_BACKTRACE", "0");
    let m = runner.measure(Path::new(&ws), MeasurePolicy::default(), None).await;
    assert_eq!(m.runs[0].test_format, Some(TestFormat::Libtest), "{m:?}");
    let t = m.signals.test_results.as_ref().unwrap();
    assert_eq!((t.passed, t.failed), (1, 1), "{t:?}");
    assert_eq!(t.failing, vec!["tests::doubles_negative"]);
}
