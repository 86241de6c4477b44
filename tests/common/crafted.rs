//! Agent trajectories written straight into a store through its public
//! API — suites, epochs, runs, trajectories, one observation row per
//! iteration — so the trajectory repository's queries can be checked
//! against numbers worked out by hand.

use attractor::engine::{AttractorKind, StrategyKind};
use attractor::memory::{ConvergenceMemory, Outcome, signature};
use attractor::store::{Memory, ObservationRecord, Store, TrajectoryEnd, TrajectoryProgress, TrajectoryRecord};
use serde_json::json;

/// One crafted iteration: strategy, convergence delta, attractor after it, tokens.
pub type Step = (&'static str, Option<f64>, &'static str, i64);

/// One crafted trajectory.
pub struct Crafted {
    pub category: &'static str,
    pub complexity: &'static str,
    pub description: &'static str,
    /// The terminal status, or `running` for an unfinished one.
    pub status: &'static str,
    pub steps: Vec<Step>,
}

/// Writes `t` as the only trajectory of a new run of task `task` and
/// returns (run id, trajectory id).
pub async fn write(store: &Store, task: &str, t: &Crafted) -> (i64, String) {
    let suite_id = store.upsert_suite("crafted", "[]", "{}", None).await.expect("suite");
    let epoch_num = store.epochs(suite_id).await.expect("epochs").len() as i64 + 1;
    let epoch = store.insert_epoch(suite_id, epoch_num, "{}").await.expect("epoch");
    let run_id = store.insert_run(suite_id, epoch.id, task, "agent", "/tmp/crafted", None).await.expect("run");
    let id = format!("run-{run_id}");
    let state = json!({"trajectory": {"specification": {"original": {"description": t.description}}}}).to_string();
    store
        .insert_trajectory(&TrajectoryRecord {
            id: id.clone(),
            run_id,
            suite_id,
            epoch_id: epoch.id,
            task_name: task.to_string(),
            category: t.category.to_string(),
            workspace_dir: "/tmp/crafted/workspace".into(),
            setup_json: json!({"complexity": t.complexity, "category": t.category}).to_string(),
            state_json: state.clone(),
            parent_id: None,
            role: "root".into(),
            ordinal: 0,
        })
        .await
        .expect("trajectory");
    let mut tokens = 0;
    for (i, (strategy, delta, attractor, spent)) in t.steps.iter().enumerate() {
        tokens += spent;
        let row = ObservationRecord {
            sequence: i as i64,
            strategy: strategy.to_string(),
            delta: *delta,
            attractor: attractor.to_string(),
            tokens: *spent,
            directive: "refine".into(),
            loop_control: "continue".into(),
            ..ObservationRecord::default()
        };
        let progress = TrajectoryProgress {
            status: "running",
            state_json: &state,
            pending_intervention_id: None,
            iterations: i as i64 + 1,
            tokens_used: tokens,
        };
        store.record_iteration(&id, &row, &progress).await.expect("iteration");
    }
    if t.status != "running" {
        let end = TrajectoryEnd {
            status: t.status,
            state_json: &state,
            iterations: t.steps.len() as i64,
            tokens_used: tokens,
            final_level: Some(if t.status == "converged" { 1.0 } else { 0.5 }),
            best_sequence: Some(t.steps.len() as i64 - 1),
            result_json: None,
        };
        store.finish_trajectory(&id, &end).await.expect("finish");
    }
    (run_id, id)
}

/// The scenario the repository tests work out by hand: two finished
/// `parsers` trajectories (one converged, one exhausted), a converged
/// `charts` one, and an unfinished `parsers` one. Returns their
/// (run id, trajectory id) in that order.
pub async fn scenario(store: &Store) -> Vec<(i64, String)> {
    let ts = [
        (
            "decimal",
            Crafted {
                category: "parsers",
                complexity: "simple",
                description: "Parse decimal integers with overflow checks",
                status: "converged",
                steps: vec![
                    ("retry_with_feedback", None, "indeterminate", 100),
                    ("focused_repair", Some(0.3), "fixed_point", 200),
                ],
            },
        ),
        (
            "hex",
            Crafted {
                category: "parsers",
                complexity: "simple",
                description: "Parse hexadecimal integers",
                status: "exhausted",
                steps: vec![
                    ("retry_with_feedback", None, "indeterminate", 100),
                    ("retry_with_feedback", Some(0.0), "plateau", 100),
                    ("reframe", Some(-0.1), "plateau", 100),
                    ("focused_repair", Some(0.02), "plateau", 100),
                ],
            },
        ),
        (
            "chart",
            Crafted {
                category: "charts",
                complexity: "moderate",
                description: "Render a bar chart of losses",
                status: "converged",
                steps: vec![
                    ("retry_with_feedback", None, "indeterminate", 50),
                    ("retry_with_feedback", Some(0.1), "indeterminate", 50),
                    ("focused_repair", Some(0.5), "fixed_point", 50),
                ],
            },
        ),
        (
            "octal",
            Crafted {
                category: "parsers",
                complexity: "simple",
                description: "Parse octal integers",
                status: "running",
                steps: vec![("reframe", None, "limit_cycle", 10)],
            },
        ),
    ];
    let mut out = Vec::new();
    for (task, t) in &ts {
        out.push(write(store, task, t).await);
    }
    out
}

/// A memory as a finished trajectory would leave it.
pub fn memory(outcome: Outcome, task: &str, description: &str, effective: &[StrategyKind]) -> ConvergenceMemory {
    ConvergenceMemory {
        outcome,
        category: "parsers".into(),
        task_name: task.into(),
        signature: signature::signature(description),
        complexity: Some("simple".into()),
        status: if outcome == Outcome::Success { "converged".into() } else { "trapped".into() },
        iterations: 3,
        tokens_used: 900,
        final_level: if outcome == Outcome::Success { 1.0 } else { 0.6 },
        strategies: effective.to_vec(),
        effective_strategies: effective.to_vec(),
        unproductive_strategies: vec![],
        attractor_path: vec![AttractorKind::Indeterminate],
        escapes: vec![],
        decisive_signals: vec![],
        terminal_attractor: AttractorKind::Indeterminate,
        failure_causes: if outcome == Outcome::Failure { vec!["CAUSE-OF-".to_string() + task] } else { vec![] },
        persistent_gaps: vec![],
        blocked_tools: vec![],
        fresh_starts: 0,
    }
}

pub async fn store_memory(store: &Store, trajectory: &(i64, String), m: &ConvergenceMemory) {
    store
        .insert_memory(&Memory {
            trajectory_id: trajectory.1.clone(),
            run_id: trajectory.0,
            suite_id: store.suite_by_name("crafted").await.unwrap().unwrap().id,
            category: m.category.clone(),
            outcome: m.outcome.as_str().into(),
            task_name: m.task_name.clone(),
            signature: signature::to_text(&m.signature),
            complexity: m.complexity.clone(),
            status: m.status.clone(),
            iterations: 3,
            tokens_used: 900,
            final_level: m.final_level,
            relevance: m.outcome.relevance(),
            content: m.content(),
            details_json: serde_json::to_string(m).unwrap(),
        })
        .await
        .unwrap();
}
