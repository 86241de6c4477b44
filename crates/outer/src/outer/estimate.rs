//! What a run may ask of the model, before it starts: calls per role, tokens
//! and cost, as upper bounds from the suite, the run's settings and the
//! model's reply budgets. It is the pre-run preview a person checks against
//! their budget (`max_cost`), so every number errs high, and what cannot be
//! bounded in advance is said in words instead of guessed.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::llm::{CallRole, LlmConfig, TokenUsage, format_cost};
use crate::suite::{Suite, TaskKind};
use crate::task::agent::AgentConfig;

use super::OptimizerKind;

/// A prompt's size in tokens, by role, as an upper estimate: the executor's
/// prompt carries the workspace view, the proposer's the epoch's evidence.
fn prompt_tokens(role: CallRole) -> u64 {
    match role {
        CallRole::Executor => 4_000,
        CallRole::Proposer | CallRole::Ideation => 3_000,
        CallRole::Verifier | CallRole::Decomposer => 2_500,
        CallRole::Supervisor => 1_200,
        _ => 200,
    }
}

/// What the run's settings are, as far as the estimate needs them.
pub struct PlannedRun<'a> {
    pub suite: &'a Suite,
    pub optimizer: OptimizerKind,
    /// Epochs, or the tree search's evaluations.
    pub epochs: u32,
    /// Artifacts a model-driven optimizer may propose for, each epoch.
    pub proposal_candidates: u64,
    /// Ideation rounds of a tree search.
    pub ideation_rounds: u32,
    pub agent: &'a AgentConfig,
    /// The ASO coordinator's model tier is on.
    pub supervisor_tier: bool,
}

/// The preview: at most these calls and tokens, at most this cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelEstimate {
    pub calls: BTreeMap<CallRole, u64>,
    pub tokens: u64,
    /// `None`: the model has no price.
    pub cost: Option<f64>,
    /// What is not in the numbers ("2 optimize tasks: up to 2 supervisor
    /// calls per supervision").
    pub unbounded: Vec<String>,
}

impl ModelEstimate {
    pub fn total_calls(&self) -> u64 {
        self.calls.values().sum()
    }

    /// "about 38 calls (executor 12, verifier 12, proposer 14), at most
    /// 196000 tokens, cost at most 0.59", or `None` when the run calls no
    /// model. Calls are "about": a reply cut off or malformed is asked again
    /// (the token bound counts that).
    pub fn line(&self) -> Option<String> {
        if self.total_calls() == 0 && self.unbounded.is_empty() {
            return None;
        }
        let unbounded = self.unbounded.join("; ");
        if self.total_calls() == 0 {
            return Some(format!("not bounded in advance: {unbounded}"));
        }
        let parts: Vec<String> =
            self.calls.iter().filter(|(_, n)| **n > 0).map(|(role, n)| format!("{role} {n}")).collect();
        let cost = match self.cost {
            Some(c) => format!("cost at most {}", format_cost(c)),
            None => "cost unknown (the model has no price)".to_string(),
        };
        let mut line = format!(
            "about {} ({}), at most {} tokens, {cost}",
            crate::counted(self.total_calls(), "call"),
            parts.join(", "),
            self.tokens
        );
        if !unbounded.is_empty() {
            line.push_str(&format!("; plus {unbounded}"));
        }
        Some(line)
    }
}

/// The artifacts a model-driven optimizer may propose for each epoch: the
/// built-in ones that steer the suite's task kinds, and the suite's own.
pub fn proposal_candidates(suite: &Suite, registry: &crate::artifact::Registry) -> u64 {
    let kinds = suite.task_kinds();
    let builtin = registry
        .defs_for_suite(&suite.name)
        .filter(|d| d.origin == crate::artifact::Origin::Builtin && d.steers_any(&kinds));
    (builtin.count() + suite.artifacts.len()) as u64
}

/// The preview line a person sees before a run starts (the CLI prints it,
/// the launch form shows it): "model: about 16 calls (…), at most 210000
/// tokens, cost at most 0.41 (max_cost 2.50)"; `None` when the run calls no
/// model.
pub fn preview_line(run: &PlannedRun, model: &crate::llm::LlmClient) -> Option<String> {
    let budget = model.config().max_cost.map(|c| format!(" (max_cost {})", format_cost(c))).unwrap_or_default();
    estimate(run, model.config()).line().map(|l| format!("model: {l}{budget}"))
}

/// Estimates the model use of `run` with the model `model` (its reply
/// budgets and price).
pub fn estimate(run: &PlannedRun, model: &LlmConfig) -> ModelEstimate {
    let mut calls: BTreeMap<CallRole, u64> = BTreeMap::new();
    let mut unbounded = Vec::new();
    let epochs = u64::from(run.epochs);
    // An iteration limit a task does not set comes from SETUP's sizing; the
    // largest row bounds it.
    let default_loops = u64::from(run.agent.engine.budget.complex.iterations);
    let mut optimize_tasks = 0;
    for task in &run.suite.tasks {
        match &task.kind {
            TaskKind::Agent(a) if crate::task::agent::needs_model(a) => {
                let loops = task.budget.max_loops.map_or(default_loops, u64::from);
                let samples = u64::from(task.parallel_samples.max(1));
                let iterations = epochs * loops * samples;
                *calls.entry(CallRole::Executor).or_default() += iterations;
                if run.agent.verifier.enabled {
                    *calls.entry(CallRole::Verifier).or_default() += iterations;
                }
            }
            TaskKind::Optimize(_) if run.supervisor_tier => optimize_tasks += 1,
            _ => {}
        }
    }
    if optimize_tasks > 0 {
        unbounded.push(format!(
            "up to 2 supervisor calls per supervision of {} (only on significant events)",
            crate::counted(optimize_tasks, "optimize task")
        ));
    }
    match run.optimizer {
        OptimizerKind::Textgrad => *calls.entry(CallRole::Proposer).or_default() += epochs * run.proposal_candidates,
        OptimizerKind::Tree => {
            *calls.entry(CallRole::Proposer).or_default() += epochs;
            *calls.entry(CallRole::Ideation).or_default() += u64::from(run.ideation_rounds);
        }
        // At most: every round of every epoch finds nothing to take.
        OptimizerKind::Screen => {
            let per_epoch = u64::try_from(super::screen::ROUNDS * super::screen::MODEL_CANDIDATES).unwrap_or(u64::MAX);
            *calls.entry(CallRole::Proposer).or_default() += epochs * per_epoch;
        }
        OptimizerKind::Baseline | OptimizerKind::Evolve => {}
    }
    let mut usage = TokenUsage::default();
    for (role, n) in &calls {
        // A reply cut off is asked again once with twice the budget: three
        // budgets' worth at most.
        usage.prompt_tokens += n * prompt_tokens(*role) * 2;
        usage.completion_tokens += n * u64::from(model.max_tokens_for(Some(*role))) * 3;
    }
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    ModelEstimate {
        calls,
        tokens: usage.total_tokens,
        cost: model.price(&model.model).map(|p| p.cost(usage)),
        unbounded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ModelPrice;

    fn suite(yaml: &str) -> Suite {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.yaml");
        std::fs::write(&path, yaml).unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        crate::suite::load(&path).unwrap()
    }

    #[test]
    fn agent_loops_and_textgrad_proposals_bound_the_calls_and_the_price_the_cost() {
        let s = suite(
            "name: e\ntasks:\n  - name: a\n    kind: agent\n    task: do it\n    workspace: ws\n    budget: { max_loops: 4 }\n    overseers:\n      - name: t\n        kind: test\n        command: 'true'\n  - name: c\n    command: 'true'\n",
        );
        let agent = AgentConfig::default();
        let run = PlannedRun {
            suite: &s,
            optimizer: OptimizerKind::Textgrad,
            epochs: 3,
            proposal_candidates: 5,
            ideation_rounds: 0,
            agent: &agent,
            supervisor_tier: false,
        };
        let mut model = LlmConfig::new("https://models.example.com/v1", "m");
        let e = estimate(&run, &model);
        assert_eq!(e.calls[&CallRole::Executor], 12, "3 epochs × 4 loops");
        assert_eq!(e.calls.get(&CallRole::Verifier).copied().unwrap_or(0), if agent.verifier.enabled { 12 } else { 0 });
        assert_eq!(e.calls[&CallRole::Proposer], 15, "3 epochs × 5 artifacts");
        assert_eq!(e.cost, None, "a remote model without a price");
        assert!(e.line().unwrap().contains("cost unknown"), "{:?}", e.line());

        model.prices.insert("m".into(), ModelPrice { input_per_million: 1.0, output_per_million: 2.0 });
        let priced = estimate(&run, &model);
        let cost = priced.cost.unwrap();
        assert!(cost > 0.0 && cost.is_finite());
        assert!(priced.tokens >= 12 * 3072, "at least every executor reply budget");
        let local = estimate(&run, &LlmConfig::new("http://127.0.0.1:8080/v1", "m"));
        assert_eq!(local.cost, Some(0.0), "a model on this machine is free");
    }

    #[test]
    fn a_run_without_model_work_has_no_line() {
        let s = suite("name: e\ntasks:\n  - name: c\n    command: 'true'\n");
        let agent = AgentConfig::default();
        let run = PlannedRun {
            suite: &s,
            optimizer: OptimizerKind::Baseline,
            epochs: 3,
            proposal_candidates: 0,
            ideation_rounds: 0,
            agent: &agent,
            supervisor_tier: true,
        };
        assert_eq!(estimate(&run, &LlmConfig::new("http://127.0.0.1:1/v1", "m")).line(), None);
    }
}
