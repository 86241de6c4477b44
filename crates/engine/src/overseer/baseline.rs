//! The tests as they stood before the first execution, and the verdict
//! measured against them.
//!
//! The share of passing tests says little on a real project: one failing
//! test among 817 is 0.999, and an executor that changes nothing scores the
//! same as one that fixes the bug. So every agent trajectory first measures
//! its untouched workspace (its *baseline*) and records each test's outcome
//! by name. From then on a state is judged as SWE-bench's harness judges a
//! patch: the task is resolved only when every **target** passes (the tests
//! the task names, or else the tests that failed at baseline) and every test
//! that passed at baseline still passes — none may fail, none may vanish.
//! [`judge`] turns a measurement into that [`TestJudgement`]; the engine's
//! level, attractor, goal-gradient gaps and the run's loss are read from it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::signals::TestResults;

/// How a test ended at baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BaselineOutcome {
    Passed,
    Failed,
}

/// Where a trajectory's targets came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetSource {
    /// The task's `targets:`.
    Named,
    /// The task names none: the tests that failed at baseline.
    FailingAtBaseline,
    /// Neither: the task names none and every test passed at baseline, so
    /// nothing says what "done" means beyond "break nothing".
    None,
}

/// One target: a test id or pattern, and the tests it matched at baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub pattern: String,
    /// The baseline's tests it names (empty: a test that did not exist yet).
    pub matched: Vec<String>,
}

/// The untouched workspace's tests, by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestBaseline {
    /// Each named test's outcome (skipped tests are left out: they promise nothing).
    pub outcomes: BTreeMap<String, BaselineOutcome>,
    /// Tests counted at baseline, named or not.
    pub total: u32,
    pub skipped: u32,
    pub targets: Vec<Target>,
    pub target_source: Option<TargetSource>,
    /// The test overseers whose canaries were reported as they are at
    /// baseline: from then on, a measurement of theirs without that is void.
    #[serde(default)]
    pub canaries: Vec<String>,
}

impl TestBaseline {
    /// The baseline of `results` (`None`: no test evidence) with the task's
    /// `targets` (ids or patterns; none: the tests failing now).
    pub fn of(results: Option<&TestResults>, named_targets: &[String]) -> TestBaseline {
        let mut b = TestBaseline::default();
        if let Some(r) = results {
            for name in &r.passing {
                b.outcomes.insert(name.clone(), BaselineOutcome::Passed);
            }
            for name in &r.failing {
                b.outcomes.insert(name.clone(), BaselineOutcome::Failed);
            }
            b.total = r.total;
            b.skipped = r.skipped;
        }
        let names: Vec<&String> = b.outcomes.keys().collect();
        if !named_targets.is_empty() {
            b.targets = named_targets
                .iter()
                .map(|p| Target {
                    pattern: p.clone(),
                    matched: names.iter().filter(|n| matches_test(p, n)).map(|n| (*n).clone()).collect(),
                })
                .collect();
            b.target_source = Some(TargetSource::Named);
        } else {
            let failing: Vec<String> =
                b.outcomes.iter().filter(|(_, o)| **o == BaselineOutcome::Failed).map(|(n, _)| n.clone()).collect();
            b.target_source =
                Some(if failing.is_empty() { TargetSource::None } else { TargetSource::FailingAtBaseline });
            b.targets = failing.into_iter().map(|n| Target { matched: vec![n.clone()], pattern: n }).collect();
        }
        b
    }

    /// The baseline had tests to judge by (named ones: counts alone cannot
    /// say which test is which).
    pub fn has_evidence(&self) -> bool {
        !self.outcomes.is_empty()
    }

    /// Tests that passed at baseline and are not targets: they must keep passing.
    fn guarded(&self) -> impl Iterator<Item = &String> {
        let targeted: BTreeSet<&String> = self.targets.iter().flat_map(|t| &t.matched).collect();
        self.outcomes
            .iter()
            .filter(move |(n, o)| **o == BaselineOutcome::Passed && !targeted.contains(n))
            .map(|(n, _)| n)
    }

    /// One line for a person: what the baseline found and what the task is judged by.
    pub fn describe(&self) -> String {
        let passed = self.outcomes.values().filter(|o| **o == BaselineOutcome::Passed).count();
        let failed = self.outcomes.len() - passed;
        let tests = format!(
            "{} at baseline: {passed} passed, {failed} failed, {} skipped",
            crate::counted(self.total, "test"),
            self.skipped
        );
        let targets = match self.target_source {
            Some(TargetSource::Named) => {
                format!("targets: {} named by the task", crate::counted(self.targets.len() as u64, "test"))
            }
            Some(TargetSource::FailingAtBaseline) => {
                format!("targets: the {} failing at baseline", crate::counted(self.targets.len() as u64, "test"))
            }
            _ => "no targets: the task names none and no test failed at baseline, so only regressions are judged"
                .to_string(),
        };
        if self.has_evidence() { format!("{tests}; {targets}") } else { "no test evidence at baseline".to_string() }
    }
}

/// Whether `pattern` names the test `id`: the id itself, a glob (`*` for
/// any run of characters), or its last parts (`CollapseTests.test_collapse`
/// names `tests.test_more.CollapseTests.test_collapse`; `test_a` names
/// `tests/test_x.py::test_a`). A pytest node id and the JUnit report's
/// dotted name are the same test (`tests/test_x.py::C::test_a` names
/// `tests.test_x.C.test_a`), and ` > ` joins jest's and vitest's titles.
pub fn matches_test(pattern: &str, id: &str) -> bool {
    if pattern == id {
        return true;
    }
    let (pattern, id) = (dotted(pattern), dotted(id));
    if pattern.contains('*') {
        return glob_match(&pattern, &id);
    }
    id == pattern || [".", " > "].iter().any(|sep| id.ends_with(&format!("{sep}{pattern}")))
}

/// A test id with Python's path and node separators as dots.
fn dotted(id: &str) -> String {
    id.replace(".py::", ".").replace("::", ".").replace('/', ".")
}

/// `*` matches any run of characters; everything else itself.
fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

/// A measurement judged against the baseline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestJudgement {
    pub targets: u32,
    pub targets_passing: u32,
    /// Targets not passing now (their patterns).
    #[serde(default)]
    pub failing_targets: Vec<String>,
    /// Targets passing now.
    #[serde(default)]
    pub passing_targets: Vec<String>,
    /// Tests that passed at baseline (targets apart) and must keep passing.
    pub guarded: u32,
    /// Of those, the ones failing or skipped now.
    #[serde(default)]
    pub regressed: Vec<String>,
    /// Of those, the ones not reported at all now.
    #[serde(default)]
    pub vanished: Vec<String>,
}

impl TestJudgement {
    /// Every target passes and nothing that passed at baseline was lost.
    pub fn resolved(&self) -> bool {
        self.targets_passing == self.targets && self.regressed.is_empty() && self.vanished.is_empty()
    }

    /// Guarded tests lost (failing, skipped or gone).
    pub fn lost(&self) -> u32 {
        u32::try_from(self.regressed.len() + self.vanished.len()).unwrap_or(u32::MAX)
    }

    /// The share of the work done, in [0, 1]: the targets' share times the
    /// share of the guarded tests kept, so that neither can buy the other.
    pub fn share(&self) -> f64 {
        let targets = if self.targets == 0 { 1.0 } else { f64::from(self.targets_passing) / f64::from(self.targets) };
        let kept = if self.guarded == 0 {
            1.0
        } else {
            f64::from(self.guarded.saturating_sub(self.lost())) / f64::from(self.guarded)
        };
        targets * kept
    }

    /// One line for the model and a person.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("{} of {} target tests pass", self.targets_passing, self.targets)];
        if !self.failing_targets.is_empty() {
            parts.push(format!("failing: {}", shortlist(&self.failing_targets)));
        }
        if !self.regressed.is_empty() {
            parts.push(format!(
                "{} that passed before the first change now {} ({})",
                crate::counted(self.regressed.len() as u64, "test"),
                if self.regressed.len() == 1 { "fails" } else { "fail" },
                shortlist(&self.regressed)
            ));
        }
        if !self.vanished.is_empty() {
            parts.push(format!(
                "{} that passed before the first change no longer {} ({})",
                crate::counted(self.vanished.len() as u64, "test"),
                if self.vanished.len() == 1 { "runs" } else { "run" },
                shortlist(&self.vanished)
            ));
        }
        parts.join("; ")
    }
}

fn shortlist(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
    match names.len().saturating_sub(shown.len()) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// `now` judged against `baseline` (`None`: this measurement had no test evidence).
pub fn judge(baseline: &TestBaseline, now: Option<&TestResults>) -> TestJudgement {
    let empty = TestResults::default();
    let now = now.unwrap_or(&empty);
    let named: BTreeSet<&str> = now.passing.iter().map(String::as_str).collect();
    let failing: BTreeSet<&str> = now.failing.iter().map(String::as_str).collect();
    // A format that counts passes without naming them (cargo test's
    // `--quiet` dots): a test passes when it is not named failing and no
    // test went missing by the counts.
    let unnamed = now.passed as usize > now.passing.len() && now.total >= baseline.total;
    let passes = |name: &str| named.contains(name) || unnamed && !failing.contains(name);
    let mut j =
        TestJudgement { targets: u32::try_from(baseline.targets.len()).unwrap_or(u32::MAX), ..Default::default() };
    for t in &baseline.targets {
        let ok = if t.matched.is_empty() {
            // A test that did not exist at baseline: it must exist now, and pass.
            let matching: Vec<&String> =
                now.passing.iter().chain(&now.failing).filter(|n| matches_test(&t.pattern, n)).collect();
            !matching.is_empty() && matching.iter().all(|n| named.contains(n.as_str()))
        } else {
            t.matched.iter().all(|n| passes(n))
        };
        if ok {
            j.targets_passing += 1;
            j.passing_targets.push(t.pattern.clone());
        } else {
            j.failing_targets.push(t.pattern.clone());
        }
    }
    for name in baseline.guarded() {
        j.guarded += 1;
        if passes(name) {
            continue;
        }
        if failing.contains(name.as_str()) || now.total > 0 && now.passing.is_empty() && now.failing.is_empty() {
            j.regressed.push(name.clone());
        } else {
            j.vanished.push(name.clone());
        }
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(passing: &[&str], failing: &[&str]) -> TestResults {
        TestResults {
            passed: passing.len() as u32,
            failed: failing.len() as u32,
            total: (passing.len() + failing.len()) as u32,
            passing: passing.iter().map(|s| s.to_string()).collect(),
            failing: failing.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn without_named_targets_the_tests_failing_at_baseline_are_the_targets() {
        let b = TestBaseline::of(Some(&results(&["a", "b"], &["c"])), &[]);
        assert_eq!(b.target_source, Some(TargetSource::FailingAtBaseline));
        assert_eq!(b.targets.len(), 1);
        // Changing nothing resolves nothing.
        let idle = judge(&b, Some(&results(&["a", "b"], &["c"])));
        assert!(!idle.resolved());
        assert_eq!(idle.share(), 0.0);
        let fixed = judge(&b, Some(&results(&["a", "b", "c"], &[])));
        assert!(fixed.resolved());
        assert_eq!(fixed.share(), 1.0);
    }

    #[test]
    fn a_test_that_passed_at_baseline_may_neither_fail_nor_vanish() {
        let b = TestBaseline::of(Some(&results(&["a", "b", "d"], &["c"])), &[]);
        let j = judge(&b, Some(&results(&["c", "a"], &["b"])));
        assert_eq!(j.regressed, vec!["b"]);
        assert_eq!(j.vanished, vec!["d"]);
        assert!(!j.resolved());
        assert!(j.describe().contains("no longer runs"), "{}", j.describe());
        // No test evidence at all: every guarded test vanished, no target passes.
        let none = judge(&b, None);
        assert_eq!((none.targets_passing, none.vanished.len()), (0, 3));
    }

    #[test]
    fn a_named_target_is_matched_by_id_pattern_or_last_parts() {
        let ids = ["tests.test_more.CollapseTests.test_collapse", "tests/test_x.py::test_a"];
        assert!(matches_test("CollapseTests.test_collapse", ids[0]));
        assert!(matches_test("tests.test_more.Collapse*", ids[0]));
        assert!(matches_test("test_a", ids[1]));
        assert!(!matches_test("test_coll", ids[0]));
        assert!(!matches_test("*Chunked*", ids[0]));
        // A pytest node id names the test its JUnit report calls by dots.
        assert!(matches_test("tests/test_x.py::C::test_a", "tests.test_x.C.test_a"));
        assert!(matches_test("test_x.py::C::test_a", "tests.test_x.C.test_a"));
        assert!(matches_test("sum > adds negatives", "src/sum.test.ts > sum > adds negatives"));
        assert!(!matches_test("tests/test_x.py::test_b", "tests.test_x.C.test_a"));
        let b = TestBaseline::of(Some(&results(&[ids[0], ids[1]], &[])), &["Collapse*".into(), "test_new".into()]);
        assert_eq!(b.targets[0].matched.len(), 0, "a glob matches the whole id");
        let b = TestBaseline::of(Some(&results(&[ids[0], ids[1]], &[])), &["*Collapse*".into(), "test_new".into()]);
        assert_eq!(b.targets[0].matched, vec![ids[0].to_string()]);
        // A target that did not exist at baseline must exist and pass.
        assert_eq!(judge(&b, Some(&results(&[ids[0], ids[1]], &[]))).targets_passing, 1);
        let j = judge(&b, Some(&results(&[ids[0], ids[1], "tests/test_x.py::test_new"], &[])));
        assert!(j.resolved(), "{}", j.describe());
    }

    #[test]
    fn passes_counted_but_not_named_pass_the_targets_not_named_failing_while_no_test_went_missing() {
        let b = TestBaseline::of(Some(&results(&["a"], &["b", "c"])), &[]);
        let quiet = |passed: u32, failing: &[&str]| TestResults {
            passed,
            failed: failing.len() as u32,
            total: passed + failing.len() as u32,
            failing: failing.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        assert!(judge(&b, Some(&quiet(3, &[]))).resolved());
        let half = judge(&b, Some(&quiet(2, &["c"])));
        assert_eq!((half.targets_passing, half.failing_targets.clone()), (1, vec!["c".to_string()]));
        // Fewer tests than at baseline: the unnamed passes prove nothing.
        assert!(!judge(&b, Some(&quiet(2, &[]))).resolved());
    }

    #[test]
    fn a_baseline_where_everything_passes_and_no_target_is_named_has_none() {
        let b = TestBaseline::of(Some(&results(&["a"], &[])), &[]);
        assert_eq!(b.target_source, Some(TargetSource::None));
        assert!(b.describe().contains("no targets"), "{}", b.describe());
    }
}
