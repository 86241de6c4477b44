//! The `optimize` task kind: a constrained numeric problem solved by the ASO
//! coordinator (several ALM trajectories under tiered supervision).
//!
//! The problem is a built-in (`g01` … `g24`, `pressure_vessel`, `welded_beam`,
//! `spring`, `speed_reducer`) or a problem file with an external evaluator.
//! The coordinator reads its settings from the run's `aso_config` artifact,
//! so the outer loop can tune them. The outcome becomes loss signals:
//!
//! - eval_score from the relative gap of the best feasible point to the
//!   reference value: 1 at or below it, falling by 0.25 per decade of gap
//!   above 1e-4 (0.92 at 1e-4, 0.5 at 1e-2, 0 at 1); 0 with no feasible point;
//! - critique_score: the share of trajectories that ended feasible;
//! - gate_rejection_count: directive parts refused by the safety clamps;
//! - budget_remaining_pct: evaluations left;
//! - status: complete (feasible and within 1e-4 of the reference, or
//!   feasible with no reference), partial (feasible), failed (no feasible
//!   point), aborted (the evaluator broke before anything feasible was seen).

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use tokio::sync::watch;

use super::{ActiveArtifact, RunOutcome};
use crate::aso::llm_tier::LlmSupervisor;
use crate::aso::{AsoConfig, Coordinator, CoordinatorOutcome, ModelSupervisor, SupervisionContext, TieredSupervisor};
use crate::domain::InterventionKind;
use crate::llm::LlmClient;
use crate::loss::{LossSignals, RunStatus};
use crate::store::Store;
use crate::suite::{OptimizeTask, Task};

/// Evaluations an optimize task gets when its budget does not say.
pub const DEFAULT_MAX_EVALUATIONS: u64 = 20_000;

/// Relative gap counted as reaching the reference (the benchmark's 1e-4).
pub const GAP_TOLERANCE: f64 = 1e-4;

/// Everything an optimize run needs.
pub struct OptimizeRun<'a> {
    pub task: &'a Task,
    pub spec: &'a OptimizeTask,
    pub suite_id: i64,
    pub run_id: i64,
    pub run_dir: &'a Path,
    pub suite_dir: &'a Path,
    pub epoch_num: i64,
    pub artifacts: &'a [ActiveArtifact],
    pub store: Store,
    /// Where a question raised for a person is announced (the inbox badge,
    /// the desktop notification).
    pub bus: crate::bus::Bus,
    pub seed: u64,
    /// The LLM for tier 2; `None` runs on heuristics alone.
    pub llm: Option<LlmClient>,
    pub cancel: watch::Receiver<bool>,
}

/// What a gap is relative to: the reference's magnitude (1 for a zero reference).
pub fn relative_scale(reference: f64) -> f64 {
    if reference.abs() > 1e-12 { reference.abs() } else { 1.0 }
}

/// Turns a coordinator outcome into the loss signals (see the module docs).
pub fn signals(outcome: &CoordinatorOutcome, reference: Option<f64>, tol: f64) -> LossSignals {
    let feasible = outcome.best.as_ref().filter(|b| b.max_violation <= tol);
    let gap = match (feasible, reference) {
        (Some(b), Some(r)) => Some(((b.objective - r) / relative_scale(r)).max(0.0)),
        _ => None,
    };
    let eval_score = match (feasible, gap) {
        (None, _) => Some(0.0),
        (Some(_), Some(g)) if g <= GAP_TOLERANCE => Some(1.0),
        (Some(_), Some(g)) => Some((1.0 - (1.0 + g / GAP_TOLERANCE).log10() / 4.0).clamp(0.0, 1.0)),
        (Some(_), None) => None,
    };
    let status = match (feasible, gap) {
        (None, _) if outcome.error.is_some() => RunStatus::Aborted,
        (None, _) => RunStatus::Failed,
        (Some(_), Some(g)) if g > GAP_TOLERANCE => RunStatus::Partial,
        (Some(_), _) => RunStatus::Complete,
    };
    let budget_remaining_pct =
        (outcome.budget > 0).then(|| 100.0 * (1.0 - outcome.evals_used as f64 / outcome.budget as f64).max(0.0));
    LossSignals {
        eval_score,
        critique_score: (!outcome.trajectories.is_empty()).then(|| outcome.convergence_rate()),
        gate_rejection_count: Some(f64::from(outcome.rejected_directives)),
        budget_remaining_pct,
        status: Some(status),
    }
}

/// Runs the coordinator on the task's problem and reports the outcome.
pub async fn run(r: OptimizeRun<'_>) -> RunOutcome {
    let started = std::time::Instant::now();
    let mut outcome = solve(r).await;
    outcome.duration = started.elapsed();
    outcome
}

async fn solve(r: OptimizeRun<'_>) -> RunOutcome {
    let (problem, reference) = match crate::numeric::resolve_problem(&r.spec.problem, r.suite_dir) {
        Ok(p) => p,
        Err(e) => return RunOutcome::failed(e),
    };
    let config = match r.artifacts.iter().find(|a| a.name == "aso_config") {
        Some(a) => match AsoConfig::from_json(&a.content) {
            Ok(c) => c,
            Err(e) => return RunOutcome::failed(format!("aso_config v{} is not valid: {e}", a.version)),
        },
        None => AsoConfig::default(),
    };
    let budget = r.task.budget.max_evaluations.unwrap_or(DEFAULT_MAX_EVALUATIONS);
    let experiment = r
        .store
        .insert_experiment(Some(r.run_id), &r.task.name, &serde_json::to_string(&config).unwrap_or_default())
        .await;
    let telemetry = match experiment {
        Ok(id) => Some((r.store.clone(), id)),
        Err(e) => {
            tracing::warn!(error = %e, "could not record the experiment; running without telemetry");
            None
        }
    };
    // Tier 3: what a person answered about this task steers this run.
    let guidance = Guidance::read(&r.store, &r.task.name).await;
    let budget = budget.saturating_mul(guidance.budget_factor);
    let prompt =
        r.artifacts.iter().find(|a| a.name == "supervisor_prompt").map(|a| a.content.clone()).unwrap_or_default();
    let model: Option<Arc<dyn ModelSupervisor>> = match (&r.llm, guidance.heuristics_only) {
        (Some(client), false) => Some(Arc::new(LlmSupervisor::new(client.clone(), prompt))),
        _ => None,
    };
    let alm = config.alm_settings();
    let tol = config.tolerance_for(problem.as_ref());
    let supervisor = Arc::new(TieredSupervisor::new(config.clone(), model));
    let coordinator = Coordinator {
        problem: problem.clone(),
        supervisor: supervisor.clone(),
        config: config.clone(),
        alm,
        context: SupervisionContext {
            cycle: u32::try_from(r.epoch_num).unwrap_or(0),
            problem: problem.name().to_string(),
            human_hints: guidance.hints,
            timeout: None,
        },
        telemetry,
        seed: r.seed,
        chunk_evaluations: 0,
        cancel: r.cancel.clone(),
    };
    let outcome = coordinator.produce_candidates(budget).await;
    let signals = signals(&outcome, reference, tol);
    if !outcome.interrupted {
        escalate(&r, &outcome, &supervisor, &config, budget, tol).await;
    }
    let metrics = json!({
        "problem": problem.name(),
        "reference": reference,
        "best": outcome.best,
        "evaluations": outcome.evals_used,
        "budget": budget,
        "stopped": outcome.stop,
        "stop_reason": outcome.stop_reason,
        "basins": outcome.basins,
        "steps": outcome.steps,
        "llm_calls": outcome.llm_calls,
        "llm_failures": outcome.llm_failures,
        "convergence_rate": outcome.convergence_rate(),
        "restarts": outcome.trajectories.iter().map(|t| t.restarts).sum::<u32>(),
        "restarts_recovered": outcome.trajectories.iter().map(|t| t.restarts_recovered).sum::<u32>(),
        "trajectories": outcome.trajectories,
    });
    let result_json = serde_json::to_string_pretty(&metrics).unwrap_or_default();
    if let Err(e) = tokio::fs::create_dir_all(r.run_dir)
        .await
        .and(tokio::fs::write(r.run_dir.join("optimize_result.json"), &result_json).await)
    {
        tracing::warn!(error = %e, "could not write optimize_result.json");
    }
    let error = outcome.error.clone().map(|e| format!("the problem could not be evaluated: {e}"));
    RunOutcome {
        signals,
        metrics: Some(metrics),
        result_json: Some(result_json),
        error,
        cancelled: outcome.interrupted,
        ..RunOutcome::default()
    }
}

/// Kind of the interventions this module raises and reads.
const ESCALATION: InterventionKind = InterventionKind::HumanEscalation;

/// What earlier answers of a person say about the next run of a task.
#[derive(Debug, Clone, PartialEq)]
pub struct Guidance {
    pub hints: Vec<String>,
    /// Approved "stop asking the model" escalations.
    pub heuristics_only: bool,
    /// 2 per approved "give it more budget" escalation (at most 8×).
    pub budget_factor: u64,
}

impl Guidance {
    pub async fn read(store: &Store, task: &str) -> Guidance {
        let mut g = Guidance { hints: Vec::new(), heuristics_only: false, budget_factor: 1 };
        let Ok(rows) = store.answered_for_task(task, ESCALATION.as_str()).await else {
            return g;
        };
        for row in rows {
            let proposed = serde_json::from_str::<serde_json::Value>(&row.raised.context_json)
                .ok()
                .and_then(|c| c["proposed_action"].as_str().map(String::from));
            match (row.answer.as_deref(), proposed.as_deref()) {
                (Some("hint"), _) => g.hints.extend(row.answer_text),
                (Some("approve"), Some("heuristics_only")) => g.heuristics_only = true,
                (Some("approve"), Some("double_budget")) => g.budget_factor = (g.budget_factor * 2).min(8),
                _ => {}
            }
        }
        g
    }
}

/// Tier 3's question when the model tier failed `llm_failures_before_human`
/// times in a row (for an optimize task or a supervised agent task alike):
/// its subject and context, proposing heuristics only from now on — the
/// answer [`Guidance`] reads for the task's next runs. `None` below the limit.
pub fn model_failing_question(
    task: &str,
    supervisor: &TieredSupervisor,
    config: &AsoConfig,
) -> Option<(String, serde_json::Value)> {
    let failures = supervisor.consecutive_failures();
    (failures >= config.llm_failures_before_human.max(1)).then(|| {
        (
            format!("LLM supervision failed {failures} times in a row on task `{task}`"),
            json!({
                "what": "The model tier of the ASO coordinator keeps failing; the heuristic tier answered instead.",
                "why": "Every failed call costs time and tokens without guiding the search.",
                "evidence": {"consecutive_failures": failures, "llm_calls": supervisor.llm_calls()},
                "proposed_action": "heuristics_only",
                "proposal": "Approve to supervise this task with heuristics only from now on; reject to keep asking the model; or answer with a hint for the model.",
            }),
        )
    })
}

/// Tier 3: asks a person when the model tier keeps failing or the task found
/// no feasible point, with what happened, why it matters, the evidence and a
/// proposed action. The answer steers the task's later runs ([`Guidance`]).
async fn escalate(
    r: &OptimizeRun<'_>,
    outcome: &CoordinatorOutcome,
    supervisor: &TieredSupervisor,
    config: &AsoConfig,
    budget: u64,
    tol: f64,
) {
    let mut raise: Vec<(String, serde_json::Value)> =
        model_failing_question(&r.task.name, supervisor, config).into_iter().collect();
    let feasible = outcome.best.as_ref().is_some_and(|b| b.max_violation <= tol);
    if !feasible && outcome.error.is_none() {
        let trajectories: Vec<_> = outcome
            .trajectories
            .iter()
            .map(|t| json!({"id": t.id, "status": t.status, "restarts": t.restarts}))
            .collect();
        raise.push((
            format!("Task `{}` found no feasible point in {} evaluations", r.task.name, outcome.evals_used),
            json!({
                "what": "Every trajectory ended without satisfying the constraints.",
                "why": "The run counts as failed; more budget or a hint about where feasible points lie may help.",
                "evidence": {"best": outcome.best, "trajectories": trajectories, "budget": budget},
                "proposed_action": "double_budget",
                "proposal": "Approve to double this task's evaluation budget on its next runs; reject to leave it; or answer with a hint for the supervisor.",
            }),
        ));
    }
    for (subject, context) in raise {
        // One open question per task and proposal: a person who has not
        // answered the last one needs no second copy of it.
        let action = context["proposed_action"].as_str().unwrap_or_default();
        if r.store.pending_question_exists(ESCALATION.as_str(), &r.task.name, action).await.unwrap_or(false) {
            continue;
        }
        let new = crate::store::Intervention {
            kind: ESCALATION.as_str().to_string(),
            suite_id: Some(r.suite_id),
            run_id: Some(r.run_id),
            task_name: Some(r.task.name.clone()),
            subject: subject.clone(),
            context_json: context.to_string(),
        };
        match r.store.insert_intervention(&new).await {
            Ok(id) => r.bus.publish(crate::bus::Event::InterventionRaised {
                intervention_id: id,
                kind: ESCALATION,
                suite_id: Some(r.suite_id),
                run_id: Some(r.run_id),
                subject,
                waits: false,
            }),
            Err(e) => tracing::warn!(error = %e, "could not record an intervention"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aso::coordinator::TrajectorySummary;
    use crate::numeric::alm::Candidate;

    fn outcome(best: Option<(f64, f64)>, error: Option<&str>) -> CoordinatorOutcome {
        let best = best.map(|(objective, max_violation)| Candidate { x: vec![0.0], objective, max_violation });
        CoordinatorOutcome {
            trajectories: vec![TrajectorySummary {
                id: 0,
                kind: crate::aso::coordinator::TrajectoryKind::Local,
                status: crate::aso::coordinator::TrajectoryStatus::Converged,
                steps: 3,
                evals_used: 100,
                restarts: 0,
                restarts_recovered: 0,
                feasible: best.as_ref().is_some_and(|b| b.max_violation <= 1e-4),
                best: best.clone(),
                stop: crate::aso::coordinator::TrajectoryStop::Flat,
                around_best: false,
                on_boundary: false,
            }],
            best,
            evals_used: 250,
            budget: 1000,
            steps: 3,
            llm_calls: 0,
            llm_failures: 0,
            rejected_directives: 1,
            error: error.map(String::from),
            interrupted: false,
            stop: crate::aso::coordinator::RunStop::Explored,
            basins: crate::aso::coordinator::BasinEvidence {
                starts: 1,
                minima: 1,
                unseen_minima: None,
                unseen_share: 1.0,
                better_share: 1.0,
                boundary_starts: 0,
                boundary_minima: 0,
            },
            stop_reason: String::new(),
        }
    }

    #[test]
    fn reaching_the_reference_is_a_complete_run_with_full_eval() {
        let s = signals(&outcome(Some((100.00001, 0.0)), None), Some(100.0), 1e-4);
        assert_eq!(s.status, Some(RunStatus::Complete));
        assert_eq!(s.eval_score, Some(1.0));
        assert_eq!(s.budget_remaining_pct, Some(75.0));
        assert_eq!(s.gate_rejection_count, Some(1.0));
        assert_eq!(s.critique_score, Some(1.0));
    }

    #[test]
    fn a_gap_lowers_eval_by_decades() {
        let s = signals(&outcome(Some((101.0, 0.0)), None), Some(100.0), 1e-4);
        assert_eq!(s.status, Some(RunStatus::Partial));
        // gap 1e-2 → 1 − log10(101)/4 ≈ 0.499
        assert!((s.eval_score.unwrap() - (1.0 - 101f64.log10() / 4.0)).abs() < 1e-12);
        let far = signals(&outcome(Some((1e6, 0.0)), None), Some(100.0), 1e-4);
        assert_eq!(far.eval_score, Some(0.0));
    }

    #[test]
    fn no_feasible_point_fails_and_a_broken_evaluator_aborts() {
        let s = signals(&outcome(Some((1.0, 0.5)), None), Some(100.0), 1e-4);
        assert_eq!((s.status, s.eval_score), (Some(RunStatus::Failed), Some(0.0)));
        assert_eq!(s.critique_score, Some(0.0));
        let s = signals(&outcome(None, Some("garbage")), Some(100.0), 1e-4);
        assert_eq!(s.status, Some(RunStatus::Aborted));
    }

    #[test]
    fn without_a_reference_feasibility_is_complete_and_eval_neutral() {
        let s = signals(&outcome(Some((5.0, 0.0)), None), None, 1e-4);
        assert_eq!(s.status, Some(RunStatus::Complete));
        assert_eq!(s.eval_score, None);
    }
}
