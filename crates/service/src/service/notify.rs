//! What the desktop app tells the operating system when something waits for
//! a person — a question from a paused trajectory or the coordinator, or a
//! watched file asking to run commands — or when a trajectory leaves a
//! notice (an intervention point in `notify` mode: it went on without
//! waiting). The shell only shows what this returns, so the wording is
//! tested here, without a notification daemon.

use crate::bus::Event;
use crate::domain::InterventionMode;

/// A desktop notification's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub title: String,
    pub body: String,
}

/// The notification for a bus event, for the events that wait on a person.
pub fn for_event(event: &Event) -> Option<Notification> {
    match event {
        Event::InterventionRaised { intervention_id, kind, subject, .. } => Some(Notification {
            title: "Attractor is waiting for an answer".into(),
            body: format!(
                "{}: {} (question {intervention_id}, in the Inbox)",
                humanize(kind.as_str()),
                clip(subject, 160)
            ),
        }),
        Event::InterventionPointReached { intervention_id: Some(id), point, mode, subject, .. }
            if *mode == InterventionMode::Notify =>
        {
            Some(Notification {
                title: "Attractor: for your information".into(),
                body: format!(
                    "{}: {} (notice {id}, in the Inbox; the run goes on)",
                    humanize(point.as_str()),
                    clip(subject, 160)
                ),
            })
        }
        Event::ExecutionApprovalRequested { intervention_id, path, commands, .. } => Some(Notification {
            title: "A watched file wants to run commands".into(),
            body: format!(
                "{} would run {} command{}: approve or reject it in the Inbox (question {intervention_id})",
                clip(path, 120),
                commands.len(),
                if commands.len() == 1 { "" } else { "s" }
            ),
        }),
        _ => None,
    }
}

/// `budget_extension` → `Budget extension`.
fn humanize(kind: &str) -> String {
    let words = kind.replace(['_', '-'], " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => "Question".into(),
    }
}

/// At most `max` characters, on a character boundary, with an ellipsis.
fn clip(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max { s.to_string() } else { format!("{}…", s.chars().take(max).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::InterventionKind;

    #[test]
    fn a_question_names_its_kind_subject_and_where_to_answer() {
        let n = for_event(&Event::InterventionRaised {
            intervention_id: 7,
            kind: InterventionKind::BudgetExtension,
            suite_id: Some(1),
            run_id: Some(3),
            subject: "squares: the budget ran out at level 0.80".into(),
            waits: true,
        })
        .unwrap();
        assert_eq!(n.title, "Attractor is waiting for an answer");
        assert_eq!(n.body, "Budget extension: squares: the budget ran out at level 0.80 (question 7, in the Inbox)");
    }

    #[test]
    fn an_approval_request_counts_its_commands_and_a_long_subject_is_clipped() {
        let n = for_event(&Event::ExecutionApprovalRequested {
            intervention_id: 2,
            path: "/drop/x.task.yaml".into(),
            suite: "x".into(),
            commands: vec!["make".into(), "make test".into()],
        })
        .unwrap();
        assert!(n.body.starts_with("/drop/x.task.yaml would run 2 commands"), "{}", n.body);
        let long = for_event(&Event::InterventionRaised {
            intervention_id: 1,
            kind: InterventionKind::parse("x"),
            suite_id: None,
            run_id: None,
            subject: "é".repeat(500),
            waits: true,
        })
        .unwrap();
        assert!(long.body.contains("é…"), "clipped on a character boundary");
        assert!(long.body.chars().count() < 220);
    }

    #[test]
    fn every_intervention_point_reads_as_words() {
        let kinds = [
            ("attractor_transition", "Attractor transition"),
            ("strategy_escalation", "Strategy escalation"),
            ("ambiguity_detected", "Ambiguity detected"),
            ("partial_result", "Partial result"),
            ("human_escalation", "Human escalation"),
        ];
        for (kind, words) in kinds {
            let n = for_event(&Event::InterventionRaised {
                intervention_id: 4,
                kind: InterventionKind::parse(kind),
                suite_id: None,
                run_id: None,
                subject: "s".into(),
                waits: true,
            })
            .unwrap();
            assert_eq!(n.body, format!("{words}: s (question 4, in the Inbox)"));
        }
    }

    fn point(mode: InterventionMode, intervention_id: Option<i64>) -> Event {
        Event::InterventionPointReached {
            suite_id: 1,
            run_id: 2,
            trajectory_id: "run-2".into(),
            point: InterventionKind::AttractorTransition,
            mode,
            intervention_id,
            subject: "Task `squares` is going round in a cycle of 2 states".into(),
        }
    }

    #[test]
    fn a_notice_says_the_run_goes_on_and_a_pause_or_auto_point_adds_nothing() {
        let n = for_event(&point(InterventionMode::Notify, Some(9))).unwrap();
        assert_eq!(n.title, "Attractor: for your information");
        assert_eq!(
            n.body,
            "Attractor transition: Task `squares` is going round in a cycle of 2 states (notice 9, in the Inbox; the \
             run goes on)"
        );
        // A pause has its own `intervention_raised` notification; auto tells nobody.
        assert_eq!(for_event(&point(InterventionMode::Pause, Some(9))), None);
        assert_eq!(for_event(&point(InterventionMode::Auto, None)), None);
    }

    #[test]
    fn events_that_wait_on_nobody_make_no_notification() {
        assert_eq!(for_event(&Event::ArtifactActivated { artifact: "a".into(), from_version: 1, to_version: 0 }), None);
    }
}
