//! Every overseer parser against real output of its tool
//! (tests/fixtures/overseer/: cargo test, nextest, pytest, unittest and gcc
//! captured from real runs, as are jest's and vitest's JSON reports and
//! go 1.19's plain and `-json` output; TAP, tsc, eslint, ruff, mypy and the
//! scanners in their documented formats).

use std::path::Path;

use attractor::overseer::parse::{
    DiagnosticCounts, TestFormat, parse_diagnostics, parse_junit, parse_security, parse_tests,
};
use attractor::overseer::signals::{SecurityScanResult, TestResults};

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/overseer").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses a fixture with format detection and checks the format and counts.
fn tests_of(name: &str, format: TestFormat, counts: (u32, u32, u32)) -> TestResults {
    let (found, r) = parse_tests(&fixture(name)).unwrap_or_else(|| panic!("{name}: no format recognised"));
    assert_eq!(found, format, "{name}");
    assert_eq!((r.passed, r.failed, r.skipped), counts, "{name}: {r:?}");
    assert_eq!(r.total, counts.0 + counts.1 + counts.2, "{name}");
    r
}

#[test]
fn cargo_test_stopping_at_the_first_failing_binary() {
    let r = tests_of("cargo_test_fail_fast.txt", TestFormat::Libtest, (1, 2, 1));
    assert_eq!(r.failing, vec!["tests::adds_negative_numbers", "tests::handles_zero"]);
    assert_eq!(r.passing, vec!["tests::adds_small_numbers"]);
    assert!(!r.all_passing());
}

#[test]
fn cargo_test_no_fail_fast_adds_up_every_binary() {
    let r = tests_of("cargo_test_no_fail_fast.txt", TestFormat::Libtest, (2, 2, 1));
    assert_eq!(r.passing, vec!["tests::adds_small_numbers", "public_api_works"]);
}

#[test]
fn nextest_is_recognised_before_the_libtest_output_it_embeds() {
    let r = tests_of("nextest.txt", TestFormat::Nextest, (2, 2, 1));
    assert_eq!(r.failing, vec!["demo tests::handles_zero", "demo tests::adds_negative_numbers"]);
    assert_eq!(r.passing, vec!["demo tests::adds_small_numbers", "demo::api public_api_works"]);
}

#[test]
fn pytest_quiet_names_failures_from_the_short_summary() {
    let r = tests_of("pytest_quiet.txt", TestFormat::Pytest, (2, 2, 2));
    assert_eq!(r.failing, vec!["test_more.py::test_bad", "test_more.py::test_param[2]"]);
    assert!(r.passing.is_empty());
}

#[test]
fn pytest_verbose_names_every_test() {
    let r = tests_of("pytest_verbose.txt", TestFormat::Pytest, (3, 4, 3));
    assert_eq!(
        r.failing,
        vec![
            "test_more.py::test_bad",
            "test_more.py::test_param[2]",
            "test_calc.py::TestCalc::test_error",
            "test_calc.py::TestCalc::test_negative"
        ]
    );
    assert_eq!(
        r.passing,
        vec!["test_more.py::test_ok", "test_more.py::test_param[1]", "test_calc.py::TestCalc::test_adds"]
    );
}

#[test]
fn junit_from_pytest_and_from_surefire() {
    let r = tests_of("pytest_junit.xml", TestFormat::Junit, (3, 4, 3));
    assert_eq!(r.failing[0], "test_more.test_bad");
    assert!(r.failing.contains(&"test_calc.TestCalc.test_negative".to_string()));

    // Surefire: an <error> fails, a <flakyFailure> alone passed in the end.
    let r = parse_junit(&fixture("surefire.xml")).unwrap();
    assert_eq!((r.passed, r.failed, r.skipped), (2, 2, 1));
    assert_eq!(r.failing, vec!["com.example.CalcTest.dividesByZero", "com.example.CalcTest.subtracts"]);
    assert!(r.passing.contains(&"com.example.CalcTest.roundsHalfUp".to_string()));
}

/// A real project's run (more-itertools 10.5.0 with `ilen` off by one):
/// docstrings between a test's name and its outcome, doctests, subtests.
#[test]
fn unittest_verbose_on_a_real_project_names_every_test() {
    let r = tests_of("unittest_verbose_more_itertools.txt", TestFormat::Unittest, (807, 9, 1));
    let mut failing = r.failing.clone();
    failing.sort();
    assert_eq!(
        failing,
        vec![
            "more_itertools.more.ilen",
            "more_itertools.more.run_length",
            "tests.test_more.IlenTests.test_ilen",
            "tests.test_more.RunLengthTest.test_encode",
            "tests.test_recipes.SieveTests.test_prime_counts",
        ]
    );
    // The passing tests are named, those with a docstring too (809 of the
    // 807 + 5 subtests' passes the summary counts: two doctests print
    // their outcome after output of their own).
    assert_eq!(r.passing.len(), 809, "{}", r.passing.len());
    assert!(r.passing.iter().any(|n| n == "tests.test_more.AdjacentTests.test_call_once"));
}

#[test]
fn unittest_verbose_and_plain() {
    let r = tests_of("unittest_verbose.txt", TestFormat::Unittest, (1, 2, 1));
    assert_eq!(r.failing, vec!["test_calc.TestCalc.test_error", "test_calc.TestCalc.test_negative"]);
    assert_eq!(r.passing, vec!["test_calc.TestCalc.test_adds"]);
    let r = tests_of("unittest_plain.txt", TestFormat::Unittest, (1, 2, 1));
    assert_eq!(r.failing, vec!["test_calc.TestCalc.test_error", "test_calc.TestCalc.test_negative"]);
}

#[test]
fn jest_json_names_every_test_by_file_and_titles_and_a_file_that_failed_to_run_fails() {
    // jest 29.7.0 --json: a file that cannot import, a skip, a todo.
    let r = tests_of("jest_json.json", TestFormat::JestJson, (3, 2, 2));
    assert_eq!(
        r.failing,
        vec!["/tmp/jt/src/sum.test.js > sum > adds negatives", "/tmp/jt/src/broken.test.js (the file failed to run)"]
    );
    assert!(r.passing.contains(&"/tmp/jt/src/sum.test.js > sum > nested > zero is neutral".to_string()), "{r:?}");
    assert!(r.passing.contains(&"/tmp/jt/src/sum.test.js > top level".to_string()), "{r:?}");
}

#[test]
fn vitest_json_is_read_as_jest_json() {
    // vitest 4 --reporter=json: the same shape, the same names.
    let r = tests_of("vitest_json.json", TestFormat::JestJson, (3, 2, 1));
    assert_eq!(
        r.failing,
        vec!["/tmp/vt/src/broken.test.ts (the file failed to run)", "/tmp/vt/src/sum.test.ts > sum > adds negatives"]
    );
}

#[test]
fn go_test_plain_and_json_agree() {
    let plain = tests_of("go_test_verbose.txt", TestFormat::Go, (3, 2, 1));
    let json = tests_of("go_test.json", TestFormat::GoJson, (3, 2, 1));
    assert_eq!(plain.failing, vec!["TestSub", "TestTable/negative"]);
    assert_eq!(json.failing, plain.failing);
    assert_eq!(json.passing, plain.passing);
}

#[test]
fn go_test_json_with_a_package_that_did_not_build_reads_the_packages_that_did() {
    // go 1.19: the build failure is plain text before the other packages' JSON.
    let r = tests_of("go_test_json_build_failed.json", TestFormat::GoJson, (1, 0, 0));
    assert_eq!(r.passing, vec!["TestParse"]);
}

#[test]
fn tap_with_yaml_diagnostics_subtests_skip_and_todo() {
    let r = tests_of("tap13.txt", TestFormat::Tap, (4, 1, 2));
    assert_eq!(r.failing, vec!["rejects a trailing comma"]);
    assert!(r.passing.contains(&"nested objects".to_string()));
    // The indented subtest's failure is summed up by its parent's `ok 6`.
    assert!(!r.failing.iter().any(|n| n.contains("two levels")));
}

fn diag(name: &str) -> DiagnosticCounts {
    parse_diagnostics(&fixture(name))
}

#[test]
fn compiler_type_checker_and_linter_diagnostics_are_counted() {
    let d = |errors, warnings| DiagnosticCounts { errors, warnings };
    assert_eq!(diag("rustc_errors.txt"), d(2, 0));
    assert_eq!(diag("rustc_warnings.txt"), d(0, 2));
    assert_eq!(diag("gcc.txt"), d(1, 3));
    assert_eq!(diag("tsc.txt"), d(3, 0));
    assert_eq!(diag("tsc_pretty.txt"), d(2, 0));
    assert_eq!(diag("eslint.txt"), d(2, 2));
    assert_eq!(diag("ruff.txt"), d(3, 0));
    assert_eq!(diag("ruff_full.txt"), d(2, 0));
    assert_eq!(diag("mypy.txt"), d(3, 0));
}

fn sec(critical: u32, high: u32, medium: u32, low: u32) -> SecurityScanResult {
    SecurityScanResult { critical_count: critical, high_count: high, medium_count: medium, low_count: low }
}

#[test]
fn security_findings_are_counted_by_severity() {
    assert_eq!(parse_security(&fixture("trivy_table.txt")), sec(1, 2, 1, 1));
    assert_eq!(parse_security(&fixture("bandit.txt")), sec(0, 1, 1, 1));
    assert_eq!(parse_security(&fixture("npm_audit.json")), sec(1, 1, 1, 0));
    assert_eq!(parse_security(&fixture("semgrep.sarif")), sec(1, 1, 1, 1));
    assert_eq!(parse_security(&fixture("grype.json")), sec(1, 1, 1, 0));
}

#[test]
fn the_other_formats_do_not_claim_each_others_output() {
    // Each fixture is recognised as its own format and no other format
    // parses a diagnostics-only output as tests.
    for name in ["rustc_errors.txt", "gcc.txt", "eslint.txt", "mypy.txt", "bandit.txt", "trivy_table.txt"] {
        assert_eq!(parse_tests(&fixture(name)), None, "{name}");
    }
}
