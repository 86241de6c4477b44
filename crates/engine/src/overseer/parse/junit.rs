//! JUnit XML, the lingua franca of test reports (JUnit and Surefire, pytest
//! `--junitxml`, jest-junit, go-junit-report, cargo2junit, …).
//!
//! Only `<testcase>` elements are read: one with a `<failure>` or `<error>`
//! child failed, one with `<skipped>` was skipped, any other passed. The
//! `tests=`/`failures=` totals on `<testsuite>` are ignored because tools
//! disagree on what they count; the test cases themselves do not lie.
//! Names are `classname.name` (or `name` without a class).

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};
use thiserror::Error;

use super::Tally;
use crate::overseer::signals::TestResults;

#[derive(Debug, Error)]
pub enum JunitError {
    #[error("not well-formed XML at byte {position}: {message}")]
    Xml { position: u64, message: String },
    #[error("the XML has no <testsuite> or <testcase> element")]
    NotJunit,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CaseState {
    Passed,
    Failed,
    Skipped,
}

pub fn parse_junit(xml: &str) -> Result<TestResults, JunitError> {
    let mut reader = Reader::from_str(xml);
    let mut tally = Tally::default();
    let mut saw_suite = false;
    // The test case being read, when inside one.
    let mut current: Option<(String, CaseState)> = None;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| JunitError::Xml { position: reader.error_position(), message: e.to_string() })?;
        match event {
            Event::Start(e) | Event::Empty(e) if is(&e, "testsuite") || is(&e, "testsuites") => saw_suite = true,
            Event::Start(e) if is(&e, "testcase") => current = Some((case_name(&e), CaseState::Passed)),
            Event::Empty(e) if is(&e, "testcase") => tally.pass(case_name(&e)),
            Event::Start(e) | Event::Empty(e) if current.is_some() => {
                if let Some((_, state)) = current.as_mut() {
                    // `flakyFailure`/`rerunFailure` (Surefire) are earlier tries
                    // of a test that passed in the end: not failures.
                    if is(&e, "failure") || is(&e, "error") {
                        *state = CaseState::Failed;
                    } else if is(&e, "skipped") && *state == CaseState::Passed {
                        *state = CaseState::Skipped;
                    }
                }
            }
            Event::End(e) if e.local_name().as_ref() == "testcase" => {
                if let Some((name, state)) = current.take() {
                    match state {
                        CaseState::Passed => tally.pass(name),
                        CaseState::Failed => tally.fail(name),
                        CaseState::Skipped => tally.skip(name),
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !saw_suite && tally.is_empty() {
        return Err(JunitError::NotJunit);
    }
    Ok(tally.results())
}

fn is(e: &BytesStart<'_>, name: &str) -> bool {
    e.local_name().as_ref() == name
}

fn attr(e: &BytesStart<'_>, key: &str) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == key)
        .and_then(|a| a.normalized_value(XmlVersion::Implicit1_0).ok().map(|v| v.into_owned()))
}

fn case_name(e: &BytesStart<'_>) -> String {
    let name = attr(e, "name").unwrap_or_else(|| "(unnamed test)".to_string());
    match attr(e, "classname").filter(|c| !c.is_empty()) {
        Some(class) => format!("{class}.{name}"),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_xml_is_an_error_with_its_place() {
        let err = parse_junit("<testsuite><testcase name='a'></testsuite>").unwrap_err();
        assert!(err.to_string().contains("not well-formed"), "{err}");
        assert!(matches!(parse_junit("<html/>"), Err(JunitError::NotJunit)));
    }

    #[test]
    fn an_error_after_a_skip_still_fails_and_flaky_reruns_pass() {
        let xml = r#"<testsuite>
            <testcase name="a" classname="C"><skipped/><error message="x"/></testcase>
            <testcase name="b"><flakyFailure message="first try"/></testcase>
        </testsuite>"#;
        let r = parse_junit(xml).unwrap();
        assert_eq!(r.failing, vec!["C.a"]);
        assert_eq!(r.passing, vec!["b"]);
    }
}
