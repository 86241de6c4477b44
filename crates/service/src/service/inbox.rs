//! The inbox: questions a run asks a person, notices it leaves, and their answers.

use super::*;

impl Service {
    pub async fn interventions(&self) -> Result<Inbox> {
        let rows = self.store.interventions(false).await?;
        let mut inbox = Inbox { pending: Vec::new(), notices: Vec::new(), answered: Vec::new() };
        // Read once for every gated update the inbox shows.
        let mut registry = None;
        for row in rows {
            let item = self.with_review(intervention_item(row), &mut registry).await?;
            match item.status {
                InterventionStatus::Pending => inbox.pending.push(item),
                InterventionStatus::Notice => inbox.notices.push(item),
                InterventionStatus::Answered | InterventionStatus::Dismissed => inbox.answered.push(item),
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
        let item = row.map(intervention_item).ok_or_else(|| ServiceError::NotFound(format!("no intervention {id}")))?;
        self.with_review(item, &mut None).await
    }

    /// A gated artifact update's question with what a person judges it on
    /// (`registry`: the artifacts, read on the first such question).
    async fn with_review(
        &self,
        mut item: InterventionItem,
        registry: &mut Option<Registry>,
    ) -> Result<InterventionItem> {
        if item.kind != InterventionKind::ArtifactUpdate {
            return Ok(item);
        }
        let Some(a) = self.store.update_approval_of_question(item.id).await? else { return Ok(item) };
        let registry = match registry {
            Some(r) => r,
            None => registry.insert(Registry::load(self.store.clone()).await?),
        };
        let kind = registry.def(&a.update.artifact).map_or(crate::artifact::ArtifactKind::Text, |d| d.kind);
        let parent =
            registry.get(&a.update.artifact, a.update.parent_version).await.map(|v| v.content).unwrap_or_default();
        let evidence: Value = serde_json::from_str(&a.update.evidence_json).unwrap_or(Value::Null);
        let suite = self.store.suite_by_id(a.update.suite_id).await?.map(|s| s.name).unwrap_or_default();
        let shown = a.content();
        let next_version = match (a.applied_version, a.status) {
            (None, crate::store::ApprovalStatus::Pending | crate::store::ApprovalStatus::Approved) => {
                Some(self.store.next_version(&a.update.artifact).await?)
            }
            _ => None,
        };
        item.update = Some(UpdateReview {
            approval_id: a.id,
            suite,
            artifact: a.update.artifact.clone(),
            artifact_kind: kind,
            parent_version: a.update.parent_version,
            status: a.status,
            mode: if a.update.mode == "wait" {
                crate::outer::ApprovalMode::Wait
            } else {
                crate::outer::ApprovalMode::Continue
            },
            optimizer: a.update.optimizer.clone(),
            rationale: a.update.rationale.clone(),
            expected_loss_reduction: a.update.expected_loss_reduction,
            confidence: a.update.confidence,
            epoch_num: evidence["epoch_num"].as_i64().unwrap_or_default(),
            mean_loss: evidence["mean_loss"].as_f64(),
            tasks: serde_json::from_value(evidence["tasks"].clone()).unwrap_or_default(),
            diff: artifact_diff(
                kind,
                &a.update.artifact,
                a.update.parent_version,
                &parent,
                a.applied_version.unwrap_or(0),
                shown,
            ),
            proposed: a.update.proposed_content.clone(),
            edited: a.edited,
            reason: a.reason.clone(),
            next_version,
            applied_version: a.applied_version,
        });
        Ok(item)
    }

    /// A person's decision on a gated artifact update (question `id`):
    /// approve it as proposed or edited, or reject it. Applied at once when
    /// no run works the suite; else the run applies it.
    pub async fn decide_update(&self, id: i64, req: &UpdateDecision) -> Result<InterventionItem> {
        use crate::outer::approval::{self, DecideError, Decision};
        let decision = match req.verdict {
            UpdateVerdictKind::Approve => Decision::Approve { content: req.content.clone() },
            UpdateVerdictKind::Reject => Decision::Reject { reason: req.reason.clone() },
        };
        let decided = approval::decide(&self.store, id, decision).await.map_err(|e| match e {
            DecideError::NotAnUpdate(_) => ServiceError::NotFound(e.to_string()),
            DecideError::AlreadyDecided { .. } => ServiceError::Conflict(e.to_string()),
            DecideError::BadEdit(m) => ServiceError::BadInput(m),
            DecideError::Runner(e) => ServiceError::Internal(e.to_string()),
        })?;
        let answer = if req.verdict == UpdateVerdictKind::Approve { "approve" } else { "reject" };
        self.bus.publish(Event::InterventionAnswered { intervention_id: id, answer: answer.to_string() });
        if let Some((to, from)) = decided.applied {
            self.bus.publish(Event::ArtifactActivated {
                artifact: decided.approval.update.artifact,
                from_version: from,
                to_version: to,
            });
        }
        self.intervention_now(id).await
    }

    /// Records a person's answer; answers are final.
    pub async fn answer(&self, id: i64, req: &AnswerRequest) -> Result<InterventionItem> {
        let text = req.text.as_deref().map(str::trim).filter(|t| !t.is_empty());
        if req.answer == AnswerKind::Hint && text.is_none() {
            return Err(ServiceError::BadInput("a hint needs its text".into()));
        }
        if let Some(t) = text {
            crate::outer::approval::check_answer_text(t).map_err(ServiceError::BadInput)?;
        }
        let Some(row) = self.store.intervention(id).await? else {
            return Err(ServiceError::NotFound(format!("no intervention {id}")));
        };
        if matches!(row.status.as_str(), "notice" | "dismissed") {
            return Err(ServiceError::BadInput(format!(
                "intervention {id} is a notice: nothing waits on an answer; dismiss it instead"
            )));
        }
        if row.raised.kind == InterventionKind::ArtifactUpdate.as_str() {
            // The gate's own decision: approve as proposed, or reject with the text as the reason.
            let verdict = match req.answer {
                AnswerKind::Approve => UpdateVerdictKind::Approve,
                AnswerKind::Reject => UpdateVerdictKind::Reject,
                AnswerKind::Hint => {
                    return Err(ServiceError::BadInput(format!(
                        "intervention {id} asks whether an artifact update may become active: approve, edit or reject it"
                    )));
                }
            };
            let decision = UpdateDecision { verdict, content: None, reason: text.map(str::to_string) };
            return self.decide_update(id, &decision).await;
        }
        if row.raised.kind == InterventionKind::ExecutionApproval.as_str() && req.answer == AnswerKind::Hint {
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
    let c: Value = serde_json::from_str(&r.raised.context_json).unwrap_or(Value::Null);
    let text = |k: &str| c[k].as_str().map(String::from);
    InterventionItem {
        id: r.id,
        kind: InterventionKind::parse(&r.raised.kind),
        status: InterventionStatus::parse(&r.status),
        suite_id: r.raised.suite_id,
        run_id: r.raised.run_id,
        task: r.raised.task_name,
        subject: r.raised.subject,
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
        update: None,
    }
}
