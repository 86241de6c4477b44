//! The trajectory repository (seed 002 §10.2) and convergence memory's
//! recall (Part 8) on a real SQLite file holding crafted trajectories whose
//! numbers are worked out by hand: iterations by complexity, strategy
//! effectiveness overall and per attractor, the attractor distribution,
//! convergence by category, similar trajectories, recall's priming — and the
//! `attractor trajectories` command printing them.

mod common;

use std::process::Command;

use attractor::engine::{AttractorKind, StrategyBandit, StrategyKind};
use attractor::memory::repository::{self, SimilarError, SimilarTo};
use attractor::memory::{self, ConvergenceMemory, MemoryConfig, Outcome};
use common::Env;
use common::crafted::{self, Crafted, memory, store_memory};
use serde_json::Value;

const THRESHOLD: f64 = 0.05;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[tokio::test]
async fn iterations_by_complexity_and_convergence_by_category_count_finished_trajectories_only() {
    let env = Env::new().await;
    crafted::scenario(&env.store).await;

    let all = env.store.iterations_by_complexity(None).await.unwrap();
    let rows: Vec<(&str, i64, f64, i64)> =
        all.iter().map(|c| (c.complexity.as_str(), c.trajectories, c.mean_iterations, c.converged)).collect();
    // simple: decimal (2) and hex (4); the unfinished octal one does not count.
    assert_eq!(rows, vec![("simple", 2, 3.0, 1), ("moderate", 1, 3.0, 1)]);
    assert!(close(all[0].mean_tokens, (300.0 + 400.0) / 2.0), "{:?}", all[0]);
    let charts = env.store.iterations_by_complexity(Some("charts")).await.unwrap();
    assert_eq!(charts.iter().map(|c| c.complexity.as_str()).collect::<Vec<_>>(), vec!["moderate"]);

    let by_category = env.store.convergence_by_category(None).await.unwrap();
    let rows: Vec<(&str, i64, i64, i64, f64)> = by_category
        .iter()
        .map(|c| (c.category.as_str(), c.finished, c.converged, c.accepted_partial, c.convergence_rate))
        .collect();
    assert_eq!(rows, vec![("charts", 1, 1, 0, 1.0), ("parsers", 2, 1, 0, 0.5)]);
    assert!(close(by_category[1].mean_iterations, 3.0));
    assert_eq!(env.store.convergence_by_category(Some("nothing")).await.unwrap(), vec![]);
}

#[tokio::test]
async fn strategy_effectiveness_counts_successes_per_strategy_and_per_attractor_it_was_chosen_under() {
    let env = Env::new().await;
    crafted::scenario(&env.store).await;
    let (overall, by_attractor) = env.store.strategy_effectiveness(None, THRESHOLD).await.unwrap();

    let rows: Vec<(&str, i64, i64, i64)> =
        overall.iter().map(|s| (s.strategy.as_str(), s.uses, s.measured, s.successes)).collect();
    // focused_repair: +0.3, +0.02, +0.5 (two above 0.05); reframe: the
    // unfinished trajectory's first attempt (no delta) and -0.1; retry: five
    // uses, two with a delta (0.0 and +0.1).
    assert_eq!(rows, vec![("focused_repair", 3, 3, 2), ("reframe", 2, 1, 0), ("retry_with_feedback", 5, 2, 1)]);
    assert!(close(overall[0].success_rate.unwrap(), 2.0 / 3.0));
    assert!(close(overall[0].mean_delta.unwrap(), (0.3 + 0.02 + 0.5) / 3.0));
    assert_eq!(overall[1].success_rate, Some(0.0));
    assert!(close(overall[2].mean_delta.unwrap(), 0.05));
    assert_eq!(overall[0].tokens, 350);
    assert!(overall.iter().all(|s| s.attractor.is_none()));

    // The attractor a strategy was chosen under is the one after the previous observation.
    let rows: Vec<(&str, &str, i64, i64, Option<f64>)> = by_attractor
        .iter()
        .map(|s| (s.strategy.as_str(), s.attractor.as_deref().unwrap(), s.uses, s.successes, s.success_rate))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("focused_repair", "indeterminate", 2, 2, Some(1.0)),
            ("focused_repair", "plateau", 1, 0, Some(0.0)),
            ("reframe", "indeterminate", 1, 0, None),
            ("reframe", "plateau", 1, 0, Some(0.0)),
            ("retry_with_feedback", "indeterminate", 5, 1, Some(0.5)),
        ]
    );

    let (charts, _) = env.store.strategy_effectiveness(Some("charts"), THRESHOLD).await.unwrap();
    assert_eq!(
        charts.iter().map(|s| (s.strategy.as_str(), s.uses)).collect::<Vec<_>>(),
        vec![("focused_repair", 1), ("retry_with_feedback", 2)]
    );
}

#[tokio::test]
async fn the_attractor_distribution_says_where_finished_trajectories_ended_and_what_they_met() {
    let env = Env::new().await;
    crafted::scenario(&env.store).await;
    let d = env.store.attractor_distribution(None).await.unwrap();
    let rows: Vec<(&str, i64, i64)> =
        d.iter().map(|a| (a.attractor.as_str(), a.trajectories, a.observations)).collect();
    // Ended: decimal and chart at a fixed point, hex on a plateau; the
    // unfinished trajectory's limit cycle is not counted.
    assert_eq!(rows, vec![("fixed_point", 2, 2), ("plateau", 1, 3), ("indeterminate", 0, 4)]);
    let parsers = env.store.attractor_distribution(Some("parsers")).await.unwrap();
    // Ties on trajectories go to the attractor met more often.
    assert_eq!(
        parsers.iter().map(|a| (a.attractor.as_str(), a.trajectories, a.observations)).collect::<Vec<_>>(),
        vec![("plateau", 1, 3), ("fixed_point", 1, 1), ("indeterminate", 0, 2)]
    );
}

#[tokio::test]
async fn similar_trajectories_rank_by_shared_keywords_and_category() {
    let env = Env::new().await;
    let ids = crafted::scenario(&env.store).await;
    let (decimal, hex) = (&ids[0], &ids[1]);

    let found = repository::similar(&env.store, &SimilarTo::Task("Parse octal integers safely".into()), None, 10)
        .await
        .unwrap();
    let ranked: Vec<(&str, f64)> = found.items.iter().map(|s| (s.trajectory.id.as_str(), s.similarity)).collect();
    // {integers, octal, parse, safely} against hex's {hexadecimal, integers,
    // parse}: 2 shared of 5; against decimal's 5 words: 2 of 7. The chart
    // shares nothing; the unfinished octal one is not finished.
    assert_eq!(ranked.len(), 2, "{ranked:?}");
    assert_eq!((ranked[0].0, ranked[1].0), (hex.1.as_str(), decimal.1.as_str()));
    assert!(close(ranked[0].1, 0.4) && close(ranked[1].1, 2.0 / 7.0), "{ranked:?}");
    assert_eq!(found.items[0].shared_words, vec!["integers", "parse"]);
    assert_eq!(found.items[0].trajectory.description.as_deref(), Some("Parse hexadecimal integers"));

    // A category adds a quarter to its own.
    let found =
        repository::similar(&env.store, &SimilarTo::Task("Render integers".into()), Some("charts"), 10).await.unwrap();
    let ranked: Vec<(&str, f64)> =
        found.items.iter().map(|s| (s.trajectory.task_name.as_str(), s.similarity)).collect();
    // "render" with the chart: 1 of 5 words → 0.75/5 + 0.25; "integers" with
    // hex (1 of 4) and decimal (1 of 6), no category bonus.
    assert_eq!(ranked.iter().map(|r| r.0).collect::<Vec<_>>(), vec!["chart", "hex", "decimal"]);
    assert!(close(ranked[0].1, 0.75 / 5.0 + 0.25) && close(ranked[1].1, 0.75 / 4.0), "{ranked:?}");
    assert!(close(ranked[2].1, 0.75 / 6.0), "{ranked:?}");
    assert!(found.measure.contains("0.25 if the category is `charts`"), "{}", found.measure);

    // By run: the run's own task and category; the trajectory itself is left out.
    let found = repository::similar(&env.store, &SimilarTo::Run(decimal.0), None, 10).await.unwrap();
    assert_eq!(found.description, "Parse decimal integers with overflow checks");
    assert_eq!((found.category.as_deref(), found.excluded.as_deref()), (Some("parsers"), Some(decimal.1.as_str())));
    assert_eq!(found.items.iter().map(|s| s.trajectory.id.as_str()).collect::<Vec<_>>(), vec![hex.1.as_str()]);
    assert!(close(found.items[0].similarity, 0.75 * 2.0 / 6.0 + 0.25));

    let one = repository::similar(&env.store, &SimilarTo::Task("parse integers".into()), None, 1).await.unwrap();
    assert_eq!(one.items.len(), 1);
    let missing = repository::similar(&env.store, &SimilarTo::Run(9999), None, 10).await.unwrap_err();
    assert!(matches!(missing, SimilarError::NoTrajectory(9999)), "{missing}");
    let empty = repository::similar(&env.store, &SimilarTo::Task("  ".into()), None, 10).await.unwrap_err();
    assert!(matches!(empty, SimilarError::EmptyTask));
}

#[tokio::test]
async fn a_trajectory_asked_about_by_id_is_compared_by_its_own_task_not_its_runs_first() {
    let env = Env::new().await;
    let ids = crafted::scenario(&env.store).await;
    let (decimal_run, decimal) = &ids[0];
    // A subtask under the decimal run, about charts: the run's first
    // trajectory is still the decimal one.
    let run = env.store.trajectory(decimal).await.unwrap().unwrap();
    let state = serde_json::json!({"trajectory": {"specification": {"original": {"description": "Render the bar chart of parsed integers"}}}});
    env.store
        .insert_trajectory(&attractor::store::TrajectoryRecord {
            id: format!("{decimal}-s1"),
            run_id: *decimal_run,
            suite_id: run.record.suite_id,
            epoch_id: run.record.epoch_id,
            task_name: "decimal-chart".into(),
            category: "charts".into(),
            workspace_dir: "/tmp/crafted/workspace".into(),
            setup_json: "{}".into(),
            state_json: state.to_string(),
            parent_id: Some(decimal.clone()),
            role: "subtask".into(),
            ordinal: 1,
        })
        .await
        .unwrap();

    let sub = SimilarTo::Trajectory(format!("{decimal}-s1"));
    let found = repository::similar(&env.store, &sub, None, 10).await.unwrap();
    assert_eq!(found.description, "Render the bar chart of parsed integers");
    assert_eq!((found.category.as_deref(), found.excluded), (Some("charts"), Some(format!("{decimal}-s1"))));
    // {bar, chart, integers, parsed, render} against the chart's {bar, chart,
    // losses, render}: 3 of 6, plus the category; the decimal and hex tasks
    // share only "integers" (parse ≠ parsed).
    let ranked: Vec<&str> = found.items.iter().map(|s| s.trajectory.task_name.as_str()).collect();
    assert_eq!(ranked[0], "chart", "{ranked:?}");
    assert!(close(found.items[0].similarity, 0.75 * 3.0 / 6.0 + 0.25), "{:?}", found.items[0]);
    // The same run asked about by its id compares the decimal task.
    let by_run = repository::similar(&env.store, &SimilarTo::Run(*decimal_run), None, 10).await.unwrap();
    assert_eq!(by_run.description, "Parse decimal integers with overflow checks");

    let missing = repository::similar(&env.store, &SimilarTo::Trajectory("nope".into()), None, 10).await.unwrap_err();
    assert!(matches!(&missing, SimilarError::UnknownTrajectory(id) if id == "nope"), "{missing}");
    assert!(missing.to_string().contains("there is no trajectory `nope`"), "{missing}");
}

#[tokio::test]
async fn recall_nudges_what_worked_ranks_lessons_by_similarity_and_waits_for_enough_history() {
    use StrategyKind::*;
    let env = Env::new().await;
    let ids = crafted::scenario(&env.store).await;
    store_memory(&env.store, &ids[0], &memory(Outcome::Success, "decimal", "Parse decimal integers", &[FocusedRepair]))
        .await;
    store_memory(
        &env.store,
        &ids[1],
        &memory(Outcome::Success, "hex", "Render hexadecimal charts", &[FocusedRepair, Reframe, FocusedRepair]),
    )
    .await;
    store_memory(&env.store, &ids[3], &memory(Outcome::Failure, "octal", "Parse octal integers", &[])).await;
    // A memory of another category is not recalled.
    store_memory(
        &env.store,
        &ids[2],
        &ConvergenceMemory {
            category: "charts".into(),
            ..memory(Outcome::Success, "chart", "x", &[AlternativeApproach])
        },
    )
    .await;

    let config = MemoryConfig { max_lessons: 1, ..MemoryConfig::default() };
    let r = memory::recall(&env.store, "parsers", "Parse binary integers", &config).await.unwrap();
    assert_eq!((r.successes(), r.failures()), (2, 1));
    // Once per memory it helped in: focused_repair twice, reframe once.
    assert!(close(r.nudges[&FocusedRepair], 0.6) && close(r.nudges[&Reframe], 0.3), "{:?}", r.nudges);
    assert!(!r.nudges.contains_key(&AlternativeApproach));
    // The most similar success ("parse", "integers" shared) wins the one line.
    assert_eq!(r.lessons.worked.len(), 1);
    assert!(r.lessons.worked[0].starts_with("`decimal` converged in 3 iterations"), "{:?}", r.lessons.worked);
    assert!(r.lessons.avoid[0].contains("CAUSE-OF-octal"), "{:?}", r.lessons.avoid);
    // Two finished parsers trajectories: below the five needed for the basin.
    assert_eq!((r.finished_in_category, r.historical_convergence_rate), (2, None));
    assert_eq!(r.history.len(), 2);

    let mut bandit = StrategyBandit::default();
    r.prime(&mut bandit);
    for context in [AttractorKind::Plateau, AttractorKind::LimitCycle] {
        assert!(close(bandit.arm(context, FocusedRepair).alpha, 1.6));
        assert!(close(bandit.arm(context, Reframe).alpha, 1.3));
        assert_eq!(bandit.arm(context, FocusedRepair).beta, 1.0);
    }

    // Three more finished parsers trajectories (2 converged): 3 of 5 converged.
    for status in ["converged", "converged", "trapped"] {
        let t = Crafted {
            category: "parsers",
            complexity: "simple",
            description: "Parse roman numerals",
            status,
            steps: vec![("focused_repair", None, "indeterminate", 10)],
        };
        crafted::write(&env.store, "roman", &t).await;
    }
    let r = memory::recall(&env.store, "parsers", "Parse binary integers", &config).await.unwrap();
    assert_eq!(r.finished_in_category, 5);
    assert!(close(r.historical_convergence_rate.unwrap(), 3.0 / 5.0));

    let off = MemoryConfig { enabled: false, ..MemoryConfig::default() };
    let r = memory::recall(&env.store, "parsers", "Parse binary integers", &off).await.unwrap();
    assert!(r.memories.is_empty() && r.nudges.is_empty() && r.lessons.is_empty());
}

fn cli(env: &Env, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_attractor")).arg("--db").arg(&env.db).args(args).output().unwrap();
    assert!(out.status.success(), "attractor {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn the_trajectories_command_prints_the_stats_the_similar_ones_and_the_memories() {
    let env = Env::new().await;
    let ids = crafted::scenario(&env.store).await;
    store_memory(
        &env.store,
        &ids[0],
        &memory(Outcome::Success, "decimal", "Parse decimal integers", &[StrategyKind::FocusedRepair]),
    )
    .await;

    let out = cli(&env, &["trajectories", "stats"]);
    for line in
        ["convergence by category", "iterations by complexity", "attractor distribution (finished trajectories)"]
    {
        assert!(out.contains(line), "{line}: {out}");
    }
    let row = |prefix: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {out}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row("parsers"), "parsers 2 1 0 50% 3.0 350");
    assert_eq!(row("focused_repair"), "focused_repair 3 3 2 67% +0.273 350");
    assert_eq!(row("under plateau"), "under plateau 1 1 0 0% +0.020 100");
    assert_eq!(row("fixed_point"), "fixed_point 2 2");

    let json: Value =
        serde_json::from_str(&cli(&env, &["--json", "trajectories", "stats", "--category", "charts"])).unwrap();
    assert_eq!(json["category"], "charts");
    assert_eq!(json["categories"][0]["convergence_rate"], 1.0);
    assert_eq!(json["by_complexity"][0]["complexity"], "moderate");

    let out = cli(&env, &["trajectories", "similar", &ids[0].0.to_string()]);
    assert!(out.contains("finished trajectories like \"Parse decimal integers with overflow checks\""), "{out}");
    assert!(out.contains(&ids[1].1) && out.contains("shared: integers, parse"), "{out}");
    assert!(!out.lines().skip(2).any(|l| l.contains(&format!(" {} ", ids[0].1))), "the run itself is left out: {out}");
    let json: Value =
        serde_json::from_str(&cli(&env, &["--json", "trajectories", "similar", "Render a chart", "--limit", "1"]))
            .unwrap();
    assert_eq!(json["items"].as_array().unwrap().len(), 1);
    assert_eq!(json["items"][0]["trajectory"]["task_name"], "chart");

    let out = cli(&env, &["trajectories", "memories", "--category", "parsers"]);
    assert!(out.contains("success memory of `decimal` (parsers"), "{out}");
    assert!(out.contains("Task type 'parsers' converged in 3 iterations"), "{out}");

    let err = Command::new(env!("CARGO_BIN_EXE_attractor"))
        .arg("--db")
        .arg(&env.db)
        .args(["trajectories", "similar", "424242"])
        .output()
        .unwrap();
    assert_eq!(err.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&err.stderr).contains("run 424242 has no trajectory"));

    let json: Value =
        serde_json::from_str(&cli(&env, &["--json", "trajectories", "similar", "--trajectory", &ids[1].1])).unwrap();
    assert_eq!(
        (json["description"].as_str(), json["excluded"].as_str()),
        (Some("Parse hexadecimal integers"), Some(ids[1].1.as_str()))
    );
    assert_eq!(json["items"][0]["trajectory"]["id"], ids[0].1);
}
