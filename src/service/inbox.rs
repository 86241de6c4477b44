//! The inbox: questions a run asks a person, notices it leaves, and their answers.

use super::*;

impl Service {
    pub async fn interventions(&self) -> Result<Inbox> {
        let rows = self.store.interventions(false).await?;
        let mut inbox = Inbox { pending: Vec::new(), notices: Vec::new(), answered: Vec::new() };
        for item in rows.into_iter().map(intervention_item) {
            match item.status.as_str() {
                "pending" => inbox.pending.push(item),
                "notice" => inbox.notices.push(item),
                _ => inbox.answered.push(item),
            }
        }
        Ok(inbox)
    }

    /// Sets a notice aside (a notice waits on nobody: it can only be dismissed).
    pub async fn dismiss(&self, id: i64) -> Result<InterventionItem> {
        let Some(row) = self.store.intervention(id).await? else {
            return Err(ServiceError::NotFound(format!("no intervention {id}")));
        };
        match row.status.as_str() {
            "notice" => {}
            "dismissed" => return Err(ServiceError::Conflict(format!("notice {id} was already dismissed"))),
            _ => {
                return Err(ServiceError::BadInput(format!(
                    "intervention {id} is a question, not a notice: answer it (approve, reject or a hint)"
                )));
            }
        }
        if !self.store.dismiss_notice(id).await? {
            return Err(ServiceError::Conflict(format!("notice {id} was already dismissed")));
        }
        self.bus.publish(Event::InterventionDismissed { intervention_id: id });
        self.intervention_now(id).await
    }

    /// The intervention as the store holds it now (after a change).
    async fn intervention_now(&self, id: i64) -> Result<InterventionItem> {
        let row = self.store.intervention(id).await?;
        row.map(intervention_item).ok_or_else(|| ServiceError::NotFound(format!("no intervention {id}")))
    }

    /// Records a person's answer; answers are final.
    pub async fn answer(&self, id: i64, req: &AnswerRequest) -> Result<InterventionItem> {
        let text = req.text.as_deref().map(str::trim).filter(|t| !t.is_empty());
        if req.answer == AnswerKind::Hint && text.is_none() {
            return Err(ServiceError::BadInput("a hint needs its text".into()));
        }
        let Some(row) = self.store.intervention(id).await? else {
            return Err(ServiceError::NotFound(format!("no intervention {id}")));
        };
        if matches!(row.status.as_str(), "notice" | "dismissed") {
            return Err(ServiceError::BadInput(format!(
                "intervention {id} is a notice: nothing waits on an answer; dismiss it instead"
            )));
        }
        if row.kind == crate::watch::EXECUTION_APPROVAL && req.answer == AnswerKind::Hint {
            return Err(ServiceError::BadInput(format!(
                "intervention {id} asks whether commands may run: answer approve or reject"
            )));
        }
        if !self.store.answer_intervention(id, req.answer.as_str(), text).await? {
            return Err(ServiceError::Conflict(format!(
                "intervention {id} was already answered ({})",
                row.answer.unwrap_or_default()
            )));
        }
        self.bus.publish(Event::InterventionAnswered { intervention_id: id, answer: req.answer.as_str().to_string() });
        self.intervention_now(id).await
    }

    // ----- the trajectory repository and memory (seed 002 §8, §10.2) ----------
}

fn intervention_item(r: InterventionRow) -> InterventionItem {
    let c: Value = serde_json::from_str(&r.context_json).unwrap_or(Value::Null);
    let text = |k: &str| c[k].as_str().map(String::from);
    InterventionItem {
        id: r.id,
        kind: r.kind,
        status: r.status,
        suite_id: r.suite_id,
        run_id: r.run_id,
        task: r.task_name,
        subject: r.subject,
        context: InterventionContext {
            what: text("what"),
            why: text("why"),
            evidence: c.get("evidence").cloned(),
            proposed_action: text("proposed_action"),
            proposal: text("proposal"),
            commands: serde_json::from_value(c["commands"].clone()).unwrap_or_default(),
        },
        answer: r.answer,
        answer_text: r.answer_text,
        created_at: r.created_at,
        answered_at: r.answered_at,
    }
}
