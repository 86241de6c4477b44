//! The bridge from overseer measurements to the goal gradient's criteria.
//!
//! Each test case is a verifiable criterion (named when the test format
//! names it), as are the build, the type check, the security scan (no
//! critical findings) and every custom check. So `D` moves test by test
//! rather than jumping only when the whole suite flips.
//!
//! Overseer verdicts add what the aggregates cannot say: a verdict that
//! failed for *environmental* reasons becomes an environmental failure (so it
//! counts toward `P` and never toward `D`), and a verdict that failed
//! logically while every aggregate criterion passes (an overseer with no
//! structured result, say a pattern-matched custom command) is added as its
//! own failed criterion so no failure goes unseen. When the overseers gave
//! no structured results at all, the verdicts are the criteria.
//!
//! The intent verifier's per-criterion verdicts, when there are any, are
//! appended as they are.

use super::model::Observation;
use crate::ggs::{CriterionMode, CriterionVerdict};
use crate::overseer::FailureClass;

fn pass(name: String) -> CriterionVerdict {
    CriterionVerdict::pass(name, CriterionMode::Verifiable)
}

fn fail(name: String, evidence: String) -> CriterionVerdict {
    CriterionVerdict::fail(name, CriterionMode::Verifiable, FailureClass::Logical, evidence)
}

/// The criteria verdicts of one observation.
pub fn criteria_of(observation: &Observation) -> Vec<CriterionVerdict> {
    let s = &observation.overseer_signals;
    let mut out: Vec<CriterionVerdict> = Vec::new();

    if let Some(j) = s.judgement() {
        // Against a baseline the criteria are the targets and the tests that
        // must keep passing — not every test of the project, which would
        // drown one failing target among hundreds of passes.
        for pattern in &j.failing_targets {
            out.push(fail(format!("test:{pattern}"), "a target test of the task, not passing yet".into()));
        }
        for pattern in &j.passing_targets {
            out.push(pass(format!("test:{pattern}")));
        }
        for name in &j.regressed {
            out.push(fail(format!("test:{name}"), "passed before the first change; fails now".into()));
        }
        for name in &j.vanished {
            out.push(fail(format!("test:{name}"), "passed before the first change; no longer runs".into()));
        }
        if j.guarded > 0 && j.lost() == 0 {
            out.push(pass(format!("the {} that passed before the first change", crate::counted(j.guarded, "test"))));
        }
    } else if let Some(t) = &s.test_results {
        for name in &t.failing {
            out.push(fail(format!("test:{name}"), String::new()));
        }
        // Failures and passes the format did not name still count, one criterion each.
        for i in t.failing.len() as u32..t.failed {
            out.push(fail(format!("failing test #{}", i + 1), String::new()));
        }
        for name in &t.passing {
            out.push(pass(format!("test:{name}")));
        }
        for i in t.passing.len() as u32..t.passed {
            out.push(pass(format!("passing test #{}", i + 1)));
        }
        // A test newly skipped shows nothing, and a test that no longer runs
        // even less: the goal gradient sees both as gaps, as the level does.
        for i in 0..t.new_skips {
            out.push(fail(
                format!("skipped test #{}", i + 1),
                "skipped: a test that does not run shows nothing".into(),
            ));
        }
        for i in 0..t.missing {
            out.push(fail(
                format!("missing test #{}", i + 1),
                format!(
                    "{} that ran in an earlier iteration no longer {}",
                    crate::counted(t.missing, "test"),
                    if t.missing == 1 { "runs" } else { "run" }
                ),
            ));
        }
    }
    if let Some(b) = &s.build_result {
        out.push(if b.success {
            pass("build".into())
        } else {
            fail("build".into(), crate::counted(b.error_count, "build error"))
        });
    }
    if let Some(t) = &s.type_check {
        out.push(if t.clean {
            pass("type_check".into())
        } else {
            fail("type_check".into(), crate::counted(t.error_count, "type error"))
        });
    }
    if let Some(sec) = &s.security_scan {
        out.push(if sec.critical_count == 0 {
            pass("security".into())
        } else {
            fail("security".into(), crate::counted(sec.critical_count, "critical finding"))
        });
    }
    for c in &s.custom_checks {
        out.push(if c.passed {
            pass(format!("check:{}", c.name))
        } else {
            fail(format!("check:{}", c.name), c.detail.clone())
        });
    }

    let structured = !out.is_empty();
    let any_structured_failure = out.iter().any(|v| !v.passed);
    for v in s.verdicts.iter().filter(|v| !v.skipped) {
        let name = format!("overseer:{}", v.overseer);
        if v.failure_class == Some(FailureClass::Environmental) && !v.passed {
            out.push(CriterionVerdict::fail(
                name,
                CriterionMode::Verifiable,
                FailureClass::Environmental,
                v.evidence.clone(),
            ));
        } else if !structured {
            out.push(if v.passed { pass(name) } else { fail(name, v.evidence.clone()) });
        } else if !v.passed && !any_structured_failure {
            out.push(fail(name, v.evidence.clone()));
        }
    }
    // Test failures carry no text of their own: lend them the first logical
    // verdict's output, so the partial result can quote why.
    let logical_evidence = s
        .verdicts
        .iter()
        .find(|v| !v.passed && !v.skipped && v.failure_class != Some(FailureClass::Environmental))
        .map(|v| v.evidence.clone());
    if let (Some(evidence), Some(first)) =
        (logical_evidence, out.iter_mut().find(|c| !c.passed && c.evidence.is_empty()))
    {
        first.evidence = evidence;
    }

    // Held-out checks: one criterion, named and never explained, so the
    // gradient sees the gap and nothing about the checks leaks.
    if let Some(hidden) = &observation.held_out {
        out.push(if hidden.all_passing() {
            pass("held-out checks".into())
        } else {
            fail("held-out checks".into(), "checks the executor does not see disagree".into())
        });
    }
    if let Some(v) = &observation.verification {
        out.extend(v.verdicts.iter().cloned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::strategy::StrategyKind;
    use crate::overseer::OverseerSignals;
    use crate::overseer::signals::{BuildResult, TestResults, Verdict};
    use crate::workspace::ArtifactReference;

    fn obs(signals: OverseerSignals) -> Observation {
        Observation::new(StrategyKind::RetryWithFeedback, ArtifactReference::default(), signals)
    }

    fn verdict(name: &str, passed: bool, class: Option<FailureClass>) -> Verdict {
        Verdict {
            overseer: name.into(),
            passed,
            failure_class: class,
            evidence: format!("{name} says"),
            skipped: false,
        }
    }

    #[test]
    fn every_test_case_is_a_criterion_named_when_possible() {
        let c = criteria_of(&obs(OverseerSignals {
            test_results: Some(TestResults {
                passed: 3,
                failed: 2,
                total: 5,
                failing: vec!["parse_empty".into()],
                ..Default::default()
            }),
            build_result: Some(BuildResult { success: true, ..Default::default() }),
            verdicts: vec![verdict("tests", false, Some(FailureClass::Logical)), verdict("build", true, None)],
            ..Default::default()
        }));
        assert_eq!(c.len(), 6, "{c:#?}");
        assert_eq!(c.iter().filter(|v| !v.passed).count(), 2);
        assert!(c.iter().any(|v| v.criterion == "test:parse_empty" && v.evidence == "tests says"));
    }

    #[test]
    fn skipped_and_missing_tests_are_gaps_the_goal_gradient_sees() {
        // Every test newly skipped: nothing failed, nothing passed — and no
        // gap would be left without counting the skips.
        let skipped = criteria_of(&obs(OverseerSignals {
            test_results: Some(TestResults { skipped: 10, new_skips: 10, total: 10, ..Default::default() }),
            ..Default::default()
        }));
        assert_eq!(skipped.iter().filter(|v| !v.passed).count(), 10, "{skipped:#?}");
        let missing = criteria_of(&obs(OverseerSignals {
            test_results: Some(TestResults { passed: 4, total: 4, missing: 6, ..Default::default() }),
            ..Default::default()
        }));
        let gaps: Vec<&str> = missing.iter().filter(|v| !v.passed).map(|v| v.criterion.as_str()).collect();
        assert_eq!(gaps.len(), 6);
        assert!(gaps.iter().all(|g| g.starts_with("missing test #")), "{gaps:?}");
        let d = crate::ggs::loss::intent_distance(&missing, &Default::default()).unwrap();
        assert!((d - 0.6).abs() < 1e-9, "D = {d}");
    }

    #[test]
    fn an_environmental_verdict_becomes_an_environmental_failure() {
        let c = criteria_of(&obs(OverseerSignals {
            build_result: Some(BuildResult { success: true, ..Default::default() }),
            verdicts: vec![verdict("build", true, None), verdict("e2e", false, Some(FailureClass::Environmental))],
            ..Default::default()
        }));
        assert_eq!(c.len(), 2);
        assert!(c.iter().any(|v| v.criterion == "overseer:e2e" && v.is_environmental()));
    }

    #[test]
    fn a_failing_overseer_without_a_structured_result_is_not_lost() {
        let c = criteria_of(&obs(OverseerSignals {
            build_result: Some(BuildResult { success: true, ..Default::default() }),
            verdicts: vec![verdict("build", true, None), verdict("lint", false, None)],
            ..Default::default()
        }));
        assert!(c.iter().any(|v| v.criterion == "overseer:lint" && v.is_logical_failure()), "{c:#?}");
    }

    #[test]
    fn with_only_verdicts_the_verdicts_are_the_criteria() {
        let c = criteria_of(&obs(OverseerSignals {
            verdicts: vec![verdict("a", true, None), verdict("b", false, Some(FailureClass::Logical))],
            ..Default::default()
        }));
        assert_eq!(c.len(), 2);
        assert_eq!(c.iter().filter(|v| v.passed).count(), 1);
    }
}
