//! Which examples of a dataset harness flipped between two measurements.
//!
//! A mean accuracy that moved from 14/30 to 15/30 may hide four examples
//! fixed and three broken; a person judging a new prompt wants to read
//! those seven. The examples come from the harness's `run_completion.json`
//! ([`super::command::Example`]), matched by task and example id.

use serde::Serialize;
use ts_rs::TS;

use super::command::Example;

/// One task's examples as one measurement scored them.
pub struct Scored {
    pub task: String,
    pub holdout: bool,
    pub examples: Vec<Example>,
}

/// An example right in one measurement and wrong in the other.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ExampleFlip {
    pub task: String,
    /// A held-out task's: shown to people, never to an optimizer.
    pub holdout: bool,
    pub id: String,
    pub input: Option<String>,
    pub expected: Option<String>,
    pub before_output: Option<String>,
    pub after_output: Option<String>,
    pub before_score: f64,
    pub after_score: f64,
    /// Wrong before, right after (else right before, wrong after).
    pub fixed: bool,
    /// The grader's note on the side that is wrong.
    pub feedback: Option<String>,
}

/// The examples whose verdict (right: score ≥ 0.5) differs between
/// `before` and `after`, in task order then the harness's order; the count
/// of examples both sides scored.
pub fn flips(before: &[Scored], after: &[Scored]) -> (Vec<ExampleFlip>, usize) {
    let mut out = Vec::new();
    let mut compared = 0;
    for a in after {
        let Some(b) = before.iter().find(|b| b.task == a.task) else { continue };
        for new in &a.examples {
            let Some(old) = b.examples.iter().find(|e| e.id == new.id) else { continue };
            compared += 1;
            if old.right() == new.right() {
                continue;
            }
            let fixed = new.right();
            out.push(ExampleFlip {
                task: a.task.clone(),
                holdout: a.holdout,
                id: new.id.clone(),
                input: new.input.clone().or_else(|| old.input.clone()),
                expected: new.expected.clone().or_else(|| old.expected.clone()),
                before_output: old.output.clone(),
                after_output: new.output.clone(),
                before_score: old.score,
                after_score: new.score,
                fixed,
                feedback: if fixed { old.feedback.clone() } else { new.feedback.clone() },
            });
        }
    }
    (out, compared)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(id: &str, output: &str, score: f64) -> Example {
        Example {
            id: id.into(),
            input: Some(format!("message {id}")),
            expected: Some("billing".into()),
            output: Some(output.into()),
            score,
            feedback: (score < 0.5).then(|| format!("said {output}")),
        }
    }

    #[test]
    fn an_example_that_changed_verdict_is_a_flip_either_way_and_the_rest_are_only_counted() {
        let before = [Scored {
            task: "train".into(),
            holdout: false,
            examples: vec![ex("1", "billing", 1.0), ex("2", "bug", 0.0), ex("3", "billing", 1.0), ex("4", "bug", 0.0)],
        }];
        let after = [Scored {
            task: "train".into(),
            holdout: false,
            // 1 stays right, 2 is fixed, 3 breaks, 4 stays wrong, 5 is new.
            examples: vec![
                ex("1", "billing", 1.0),
                ex("2", "billing", 1.0),
                ex("3", "account", 0.0),
                ex("4", "bug", 0.2),
                ex("5", "bug", 0.0),
            ],
        }];
        let (flips, compared) = flips(&before, &after);
        assert_eq!(compared, 4);
        assert_eq!(flips.len(), 2);
        assert_eq!((flips[0].id.as_str(), flips[0].fixed), ("2", true));
        assert_eq!(flips[0].before_output.as_deref(), Some("bug"));
        assert_eq!(flips[0].feedback.as_deref(), Some("said bug"), "the wrong side's note");
        assert_eq!((flips[1].id.as_str(), flips[1].fixed), ("3", false));
        assert_eq!(flips[1].after_output.as_deref(), Some("account"));
    }

    #[test]
    fn tasks_match_by_name_and_a_task_one_side_lacks_is_skipped() {
        let before = [Scored { task: "a".into(), holdout: false, examples: vec![ex("1", "bug", 0.0)] }];
        let after = [
            Scored { task: "b".into(), holdout: true, examples: vec![ex("1", "billing", 1.0)] },
            Scored { task: "a".into(), holdout: false, examples: vec![ex("1", "billing", 1.0)] },
        ];
        let (flips, compared) = flips(&before, &after);
        assert_eq!((flips.len(), compared), (1, 1));
        assert_eq!(flips[0].task, "a");
    }
}
