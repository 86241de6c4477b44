//! Ideation when the tree search stalls: the two calls on the tree as it
//! stands (what it has tried, what held, what the analyst noticed), their
//! proposals kept as the coming round's notes.

use super::*;

impl SuiteRunner {
    /// The two ideation calls on the tree as it stands; their proposals are
    /// stored as notes of the coming round and returned best first, each
    /// with its note's id.
    pub(super) async fn ideate(
        &self,
        client: &crate::llm::LlmClient,
        suite_id: i64,
        search: &Search,
        hints: &[Hint],
        candidates: &[String],
    ) -> Result<Vec<(Idea, i64)>, RunnerError> {
        let input = self.ideation_input(search, hints, candidates).await?;
        let round = i64::from(search.round + 1);
        let known: BTreeSet<i64> = search.nodes.iter().map(|n| n.id).collect();
        let mut outcomes = Vec::new();
        for source in IdeaSource::ALL {
            outcomes.push(ideation::ideate(client, source, &input).await);
        }
        let mut out = Vec::new();
        for idea in ideation::rank(outcomes.iter().flat_map(|o| o.ideas.clone()).collect()) {
            let id = self
                .store
                .insert_tree_note(
                    suite_id,
                    &TreeNote {
                        round,
                        source: idea.source.as_str().into(),
                        kind: "proposal".into(),
                        artifact: Some(idea.artifact.clone()),
                        parent_id: idea.parent.filter(|p| known.contains(p)),
                        text: idea.direction.clone(),
                        expected_loss_reduction: Some(idea.expected_loss_reduction),
                        confidence: Some(idea.confidence),
                    },
                )
                .await?;
            out.push((idea, id));
        }
        // A call that gave nothing usable says why, once.
        for o in outcomes.iter().filter(|o| o.ideas.is_empty()) {
            let mut why = o.failure.clone().unwrap_or_else(|| "no usable proposal".into());
            if !o.dropped.is_empty() {
                why.push_str(&format!(" (dropped: {})", o.dropped.join("; ")));
            }
            self.store
                .insert_tree_note(
                    suite_id,
                    &TreeNote {
                        round,
                        source: o.source.as_str().into(),
                        kind: "nothing".into(),
                        text: why,
                        ..TreeNote::default()
                    },
                )
                .await?;
        }
        tracing::info!(suite = %self.suite.name, round, proposals = out.len(), "ideation on stall");
        Ok(out)
    }

    /// What the ideation calls may see: training losses, diffs of committed
    /// versions, prompt-safe feedback; nothing held out.
    pub(super) async fn ideation_input(
        &self,
        search: &Search,
        hints: &[Hint],
        candidates: &[String],
    ) -> Result<ideation::IdeationInput, RunnerError> {
        let nodes = &search.nodes;
        let mut artifacts = Vec::new();
        for name in candidates {
            artifacts.push((name.clone(), self.registry.def(name)?.description.clone()));
        }
        let best = tree::best(nodes);
        let mut frontier = Vec::new();
        for n in tree::frontier(nodes, tree::Selection::Pareto, 0.0).into_iter().take(IDEATION_FRONTIER) {
            let parent = n.parent.and_then(|p| nodes.iter().find(|x| x.id == p));
            let change = match (parent, n.focus.as_deref()) {
                (Some(parent), Some(focus)) => {
                    let from = parent.artifacts.get(focus).copied().unwrap_or(0);
                    let to = n.artifacts.get(focus).copied().unwrap_or(0);
                    let old = self.registry.get(focus, from).await?.content;
                    let new = self.registry.get(focus, to).await?.content;
                    let kind = self.registry.def(focus)?.kind;
                    let diff = compare::unified(kind, focus, (from, &old), (to, &new), 2);
                    Some(ideation::Change {
                        parent: parent.id,
                        artifact: focus.to_string(),
                        diff: truncate(&diff, MAX_DIFF_CHARS),
                        rationale: n.rationale.clone().unwrap_or_default(),
                        gain: parent.mean - n.mean,
                    })
                }
                _ => None,
            };
            frontier.push(ideation::FrontierNode {
                id: n.id,
                mean: n.mean,
                task_losses: n.task_losses.iter().map(|(t, l)| (t.clone(), *l)).collect(),
                change,
            });
        }
        let failures = nodes
            .iter()
            .rev()
            .filter(|n| matches!(n.status, NodeStatus::Discarded | NodeStatus::Rejected))
            .take(IDEATION_FAILURES)
            .filter_map(|n| {
                Some(ideation::Failure {
                    id: n.id,
                    parent: n.parent?,
                    artifact: n.focus.clone()?,
                    rationale: n.rationale.clone().filter(|_| n.evaluated()),
                    feedback: n.feedback.clone().unwrap_or_else(|| n.status.as_str().to_string()),
                })
            })
            .collect();
        Ok(ideation::IdeationInput {
            suite: self.suite.name.clone(),
            artifacts,
            best: best.map(|b| (b.id, b.mean)),
            frontier,
            failures,
            tasks: best
                .and_then(|b| search.results_of.get(&b.id))
                .map(|rs| crate::outer::close::task_evidence(rs))
                .unwrap_or_default(),
            hints: hints.iter().map(|h| h.text.clone()).collect(),
        })
    }
}
