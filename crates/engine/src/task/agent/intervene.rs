//! Intervention points of an agent trajectory (seed 002 §7.3): asking a
//! person and waiting for the answer, or telling them without waiting.
//!
//! A question is a row of the `interventions` table with what happened, why
//! it matters, the evidence and the proposed action. The trajectory records
//! the question's id with its state and then polls the store for the answer,
//! so an answer given from anywhere — `attractor answer` in another process,
//! the app, the HTTP API — is seen, and a run that stops while waiting
//! re-attaches to the same question when it is resumed instead of asking again.
//!
//! A point in `notify` mode leaves a *notice* instead: the same row and
//! context with status `notice`, which nobody waits on and which a person
//! can only dismiss.

use crate::domain::InterventionKind as Kind;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::watch;

use crate::bus::{Bus, Event};
use crate::engine::InterventionKind;
use crate::store::{Intervention, Store, StoreError};

/// The intervention a point asks, as stored and shown.
pub fn kind_of(point: InterventionKind) -> Kind {
    match point {
        InterventionKind::AttractorTransition => Kind::AttractorTransition,
        InterventionKind::StrategyEscalation => Kind::StrategyEscalation,
        InterventionKind::BudgetExtension => Kind::BudgetExtension,
        InterventionKind::AmbiguityDetected => Kind::AmbiguityDetected,
        InterventionKind::PartialResult => Kind::PartialResult,
        InterventionKind::HumanEscalation => Kind::HumanEscalation,
    }
}

/// How a question was settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Approve,
    Reject,
    Hint(String),
    /// Nobody answered within the configured time: treated as a rejection.
    TimedOut,
    /// The run was stopped while waiting; the question stays open.
    Cancelled,
}

/// What to ask.
pub struct Question<'a> {
    pub kind: Kind,
    pub suite_id: i64,
    pub run_id: i64,
    pub task: &'a str,
    pub subject: String,
    /// `what`, `why`, `evidence`, `proposed_action`, `proposal`.
    pub context: Value,
}

impl Question<'_> {
    fn row(&self) -> Intervention {
        Intervention {
            kind: self.kind.as_str().to_string(),
            suite_id: Some(self.suite_id),
            run_id: Some(self.run_id),
            task_name: Some(self.task.to_string()),
            subject: self.subject.clone(),
            context_json: self.context.to_string(),
        }
    }
}

/// Records the question and tells the bus; returns its id.
pub async fn raise(store: &Store, bus: &Bus, q: Question<'_>) -> Result<i64, StoreError> {
    let id = store.insert_intervention(&q.row()).await?;
    bus.publish(Event::InterventionRaised {
        intervention_id: id,
        kind: q.kind,
        suite_id: Some(q.suite_id),
        run_id: Some(q.run_id),
        subject: q.subject,
        waits: true,
    });
    Ok(id)
}

/// Records the question as a notice — shown, not waited on; returns its id.
/// (The caller's `intervention_point_reached` event announces it.)
pub async fn notice(store: &Store, q: &Question<'_>) -> Result<i64, StoreError> {
    store.insert_notice(&q.row()).await
}

/// Waits until intervention `id` is answered (polling every `poll`), the run
/// is cancelled, or `timeout` passes.
pub async fn wait(
    store: &Store,
    id: i64,
    poll: Duration,
    timeout: Option<Duration>,
    mut cancel: watch::Receiver<bool>,
) -> Result<Answer, StoreError> {
    let started = Instant::now();
    let poll = poll.max(Duration::from_millis(10));
    loop {
        if *cancel.borrow_and_update() {
            return Ok(Answer::Cancelled);
        }
        if let Some(row) = store.intervention(id).await? {
            if row.status == "answered" {
                return Ok(match row.answer.as_deref() {
                    Some("approve") => Answer::Approve,
                    Some("hint") => Answer::Hint(row.answer_text.unwrap_or_default()),
                    _ => Answer::Reject,
                });
            }
        } else {
            // The question is gone (a database edited by hand): nobody can answer it.
            return Ok(Answer::Reject);
        }
        if let Some(t) = timeout.filter(|t| started.elapsed() >= *t) {
            // The trajectory goes on without an answer: the question is
            // closed with that reason rather than left waiting for nobody.
            let reason = format!(
                "closed unanswered: no answer within {:.0} s, so the run went on as if it was rejected",
                t.as_secs_f64()
            );
            store.close_question(id, &reason).await?;
            return Ok(Answer::TimedOut);
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            changed = cancel.changed() => {
                if changed.is_err() {
                    // The sender is gone: nobody can cancel any more; keep polling.
                    tokio::time::sleep(poll).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_question_nobody_answers_in_time_is_closed_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("a.db")).await.unwrap();
        let row = Intervention {
            kind: Kind::HumanEscalation.as_str().to_string(),
            suite_id: None,
            run_id: None,
            task_name: Some("t".into()),
            subject: "stuck".into(),
            context_json: "{}".into(),
        };
        let id = store.insert_intervention(&row).await.unwrap();
        let (_tx, cancel) = watch::channel(false);
        let answer =
            wait(&store, id, Duration::from_millis(10), Some(Duration::from_millis(30)), cancel).await.unwrap();
        assert!(matches!(answer, Answer::TimedOut));
        let q = store.intervention(id).await.unwrap().unwrap();
        assert_eq!(q.status, "dismissed");
        assert!(q.answer_text.as_deref().unwrap_or_default().starts_with("closed unanswered"), "{:?}", q.answer_text);
        assert!(store.interventions(true).await.unwrap().is_empty(), "nothing left pending");
        assert!(!store.answer_intervention(id, "approve", None).await.unwrap(), "a closed question takes no answer");
    }
}
