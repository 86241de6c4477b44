//! What the overseers measured about one state of a workspace.
//!
//! An agent task's progress is never self-assessed: after every execution the
//! overseers (tests, build, type check, lint, security scan, custom checks)
//! run against the workspace and their results are gathered here. The engine
//! computes convergence delta and level from these numbers, the goal gradient
//! computes its loss from the per-criterion verdicts, and regressions and
//! fingerprints come from the test names. Every field is optional because not
//! every task configures every kind of overseer.

use serde::{Deserialize, Serialize};

/// Why an overseer failed. The distinction matters for the goal gradient
/// (seed 003): an *environmental* failure says nothing about the work — the
/// command could not run (missing binary, timeout, crashed tool, no network) —
/// so it is retried before it counts and is never blamed on the strategy. A
/// *logical* failure means the check ran and the work is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    Environmental,
    Logical,
}

/// Parsed test results, exact where the output format was recognised.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestResults {
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
    pub total: u32,
    /// Names of the failing tests, when the format gives them.
    #[serde(default)]
    pub failing: Vec<String>,
    /// Names of the passing tests, when the format gives them (regressions are
    /// tests in the previous observation's `passing` that are now `failing`).
    #[serde(default)]
    pub passing: Vec<String>,
    /// Tests that passed in the previous observation and fail now; filled in by
    /// the engine, which knows the previous observation.
    #[serde(default)]
    pub regression_count: u32,
    /// Tests that ran in an earlier observation of the trajectory and no
    /// longer do (the most counted before, less this total): a test file
    /// emptied, a test no longer collected. Filled in by the engine; they
    /// count as failing everywhere a verdict is made.
    #[serde(default)]
    pub missing: u32,
    /// Skipped tests beyond the fewest an earlier observation of the
    /// trajectory skipped (a test that was run and now is not); filled in by
    /// the engine. Skips the suite always had are not counted.
    #[serde(default)]
    pub new_skips: u32,
    /// This measurement judged against the trajectory's baseline (targets
    /// and regressions); filled in by the engine when there is one. When
    /// present, it is the verdict on the tests: the share of all tests
    /// passing is not (see [`super::baseline`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgement: Option<super::baseline::TestJudgement>,
}

impl TestResults {
    /// Every test ran and passed (an empty run does not count as passing,
    /// nor one with fewer tests than before).
    pub fn all_passing(&self) -> bool {
        if let Some(j) = &self.judgement {
            return j.resolved();
        }
        self.failed == 0
            && self.total > 0
            && self.missing == 0
            && self.passed == self.total.saturating_sub(self.skipped)
    }

    /// The tests a verdict is over: those counted now and those gone missing.
    pub fn expected(&self) -> u32 {
        self.total.saturating_add(self.missing)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BuildResult {
    pub success: bool,
    pub error_count: u32,
    pub warning_count: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TypeCheckResult {
    pub clean: bool,
    pub error_count: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LintResults {
    pub error_count: u32,
    pub warning_count: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SecurityScanResult {
    pub critical_count: u32,
    pub high_count: u32,
    pub medium_count: u32,
    pub low_count: u32,
}

/// A custom check: a command whose success or failure is read from its exit
/// status or from success/failure patterns in its output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomCheckResult {
    pub name: String,
    pub passed: bool,
    /// A short excerpt saying why, for prompts and the app.
    #[serde(default)]
    pub detail: String,
    /// One of Attractor's own checks of the verdict (protected files, a
    /// checked anti-pattern, the held-out checks): while it fails the state
    /// cannot converge, whatever the level says, and its detail is ours to
    /// show the model.
    #[serde(default)]
    pub required: bool,
}

/// One overseer's verdict, kept beside the aggregated numbers so prompts,
/// fingerprints and the goal gradient can cite exactly which check failed and
/// whether the failure was environmental.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The overseer's name from the task file.
    pub overseer: String,
    pub passed: bool,
    /// Set when `passed` is false.
    pub failure_class: Option<FailureClass>,
    /// The tail of the output that explains the verdict (bounded in size).
    #[serde(default)]
    pub evidence: String,
    /// The overseer did not run (skipped after a blocking failure or by policy).
    #[serde(default)]
    pub skipped: bool,
}

/// Everything the overseers measured about one workspace state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OverseerSignals {
    pub test_results: Option<TestResults>,
    pub type_check: Option<TypeCheckResult>,
    pub lint_results: Option<LintResults>,
    pub build_result: Option<BuildResult>,
    pub security_scan: Option<SecurityScanResult>,
    #[serde(default)]
    pub custom_checks: Vec<CustomCheckResult>,
    /// One verdict per configured overseer, in the order they were considered.
    #[serde(default)]
    pub verdicts: Vec<Verdict>,
}

impl OverseerSignals {
    /// These measurements and `other`'s as one: counts added, a check
    /// passing only when both sides pass. How held-out checks join the
    /// visible ones in a verdict.
    pub fn combined(&self, other: &OverseerSignals) -> OverseerSignals {
        fn both<T: Clone>(a: &Option<T>, b: &Option<T>, join: impl Fn(&T, &T) -> T) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(join(a, b)),
                (a, b) => a.clone().or_else(|| b.clone()),
            }
        }
        OverseerSignals {
            test_results: both(&self.test_results, &other.test_results, |a, b| TestResults {
                passed: a.passed + b.passed,
                failed: a.failed + b.failed,
                skipped: a.skipped + b.skipped,
                total: a.total + b.total,
                failing: a.failing.iter().chain(&b.failing).cloned().collect(),
                passing: a.passing.iter().chain(&b.passing).cloned().collect(),
                regression_count: a.regression_count + b.regression_count,
                missing: a.missing + b.missing,
                new_skips: a.new_skips + b.new_skips,
                // Held-out tests are not in the baseline: the visible judgement stands.
                judgement: a.judgement.clone().or_else(|| b.judgement.clone()),
            }),
            type_check: both(&self.type_check, &other.type_check, |a, b| TypeCheckResult {
                clean: a.clean && b.clean,
                error_count: a.error_count + b.error_count,
            }),
            lint_results: both(&self.lint_results, &other.lint_results, |a, b| LintResults {
                error_count: a.error_count + b.error_count,
                warning_count: a.warning_count + b.warning_count,
            }),
            build_result: both(&self.build_result, &other.build_result, |a, b| BuildResult {
                success: a.success && b.success,
                error_count: a.error_count + b.error_count,
                warning_count: a.warning_count + b.warning_count,
            }),
            security_scan: both(&self.security_scan, &other.security_scan, |a, b| SecurityScanResult {
                critical_count: a.critical_count + b.critical_count,
                high_count: a.high_count + b.high_count,
                medium_count: a.medium_count + b.medium_count,
                low_count: a.low_count + b.low_count,
            }),
            custom_checks: self.custom_checks.iter().chain(&other.custom_checks).cloned().collect(),
            verdicts: self.verdicts.iter().chain(&other.verdicts).cloned().collect(),
        }
    }

    /// At least one overseer produced a measurement (lint alone does not
    /// count: it cannot say whether the task is done).
    pub fn has_any_signal(&self) -> bool {
        self.test_results.is_some()
            || self.type_check.is_some()
            || self.build_result.is_some()
            || self.security_scan.is_some()
            || !self.custom_checks.is_empty()
    }

    /// Every measurement that exists is passing.
    pub fn all_passing(&self) -> bool {
        self.test_results.as_ref().is_none_or(TestResults::all_passing)
            && self.type_check.as_ref().is_none_or(|t| t.clean)
            && self.build_result.as_ref().is_none_or(|b| b.success)
            && self.security_scan.as_ref().is_none_or(|s| s.critical_count == 0)
            && self.custom_checks.iter().all(|c| c.passed)
    }

    /// Build, type and lint errors together.
    pub fn error_count(&self) -> u32 {
        self.build_result.as_ref().map_or(0, |b| b.error_count)
            + self.type_check.as_ref().map_or(0, |t| t.error_count)
            + self.lint_results.as_ref().map_or(0, |l| l.error_count)
    }

    /// Critical and high findings of the security scan.
    pub fn vulnerability_count(&self) -> u32 {
        self.security_scan.as_ref().map_or(0, |s| s.critical_count + s.high_count)
    }

    /// Some overseer failed for environmental reasons: this state was not
    /// really measured.
    pub fn has_environmental_failure(&self) -> bool {
        self.verdicts.iter().any(|v| v.failure_class == Some(FailureClass::Environmental))
    }

    /// Whether one of Attractor's own checks of the verdict fails — the
    /// judgement against the baseline among them: a target still failing,
    /// or a test that passed before the first change lost.
    pub fn has_failing_required_check(&self) -> bool {
        self.custom_checks.iter().any(|c| c.required && !c.passed)
            || self.test_results.as_ref().and_then(|t| t.judgement.as_ref()).is_some_and(|j| !j.resolved())
    }

    /// The judgement against the baseline, when there is one.
    pub fn judgement(&self) -> Option<&super::baseline::TestJudgement> {
        self.test_results.as_ref().and_then(|t| t.judgement.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_overseer_means_no_signal_and_vacuously_passing() {
        let s = OverseerSignals::default();
        assert!(!s.has_any_signal());
        assert!(s.all_passing());
    }

    #[test]
    fn an_empty_test_run_is_not_passing() {
        let s = OverseerSignals { test_results: Some(TestResults::default()), ..Default::default() };
        assert!(s.has_any_signal());
        assert!(!s.all_passing());
    }

    #[test]
    fn errors_and_vulnerabilities_add_up_across_overseers() {
        let s = OverseerSignals {
            build_result: Some(BuildResult { success: false, error_count: 2, warning_count: 9 }),
            type_check: Some(TypeCheckResult { clean: false, error_count: 3 }),
            lint_results: Some(LintResults { error_count: 1, warning_count: 4 }),
            security_scan: Some(SecurityScanResult { critical_count: 1, high_count: 2, medium_count: 5, low_count: 0 }),
            ..Default::default()
        };
        assert_eq!(s.error_count(), 6);
        assert_eq!(s.vulnerability_count(), 3);
        assert!(!s.all_passing());
    }
}
