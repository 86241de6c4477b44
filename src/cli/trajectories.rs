//! `attractor trajectories …`: the trajectory repository (seed 002 §10.2)
//! and the convergence memories (Part 8) on the terminal.
//!
//! - `stats [--category C]`: convergence by category, iterations by
//!   complexity, strategy effectiveness (overall and per attractor), the
//!   attractor distribution;
//! - `similar RUN_ID|TASK|--trajectory ID [--category C] [--limit N]`:
//!   finished trajectories whose task is most like a run's (a number), a
//!   trajectory's, or a described one (text);
//! - `memories [--category C] [--limit N]`: what finished trajectories left
//!   for the next ones of their category.
//!
//! Every verb prints JSON instead of tables with `--json`.

use clap::Subcommand;

use super::{Failure, Global};
use crate::memory::repository::{self, SimilarError, SimilarTo};
use crate::store::{Store, StrategyStats};

#[derive(Debug, Subcommand)]
pub enum TrajectoriesCommand {
    /// Aggregates over finished agent trajectories.
    Stats {
        /// Only this task category (a task's `workflow:`, `general` without one).
        #[arg(long)]
        category: Option<String>,
    },
    /// Finished trajectories whose task is most like a run's or a described one.
    Similar {
        /// A run id (an agent run), or the task's text in quotes.
        #[arg(required_unless_present = "trajectory", conflicts_with = "trajectory")]
        run_or_task: Option<String>,
        /// A trajectory's id instead (one of a run that drove several: a sample, a subtask).
        #[arg(long)]
        trajectory: Option<String>,
        /// Trajectories of this category count as more similar [default: the run's category].
        #[arg(long)]
        category: Option<String>,
        #[arg(long, default_value_t = 10, value_parser = super::between::<u32>(1, 200))]
        limit: u32,
    },
    /// The newest convergence memories.
    Memories {
        #[arg(long)]
        category: Option<String>,
        #[arg(long, default_value_t = 20, value_parser = super::between::<u32>(1, 500))]
        limit: u32,
    },
}

pub async fn run(g: &Global, store: &Store, command: &TrajectoriesCommand) -> Result<(), Failure> {
    match command {
        TrajectoriesCommand::Stats { category } => stats(g, store, category.as_deref()).await,
        TrajectoriesCommand::Similar { run_or_task, trajectory, category, limit } => {
            let to = match (trajectory, run_or_task) {
                (Some(id), _) => SimilarTo::Trajectory(id.clone()),
                (None, Some(given)) => match given.trim().parse::<i64>() {
                    Ok(id) => SimilarTo::Run(id),
                    Err(_) => SimilarTo::Task(given.clone()),
                },
                (None, None) => return Err(Failure::input("give a run id, a task's text, or --trajectory ID")),
            };
            similar(g, store, &to, category.as_deref(), *limit as usize).await
        }
        TrajectoriesCommand::Memories { category, limit } => memories(g, store, category.as_deref(), *limit).await,
    }
}

fn json(value: &impl serde::Serialize) {
    println!("{}", serde_json::to_string_pretty(value).unwrap_or_default());
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{:.0}%", 100.0 * v))
}

async fn stats(g: &Global, store: &Store, category: Option<&str>) -> Result<(), Failure> {
    let threshold = crate::engine::EngineConfig::default().bandit.success_threshold;
    let s = repository::stats(store, category, threshold).await?;
    if g.json {
        json(&s);
        return Ok(());
    }
    let scope = category.map_or_else(|| "every category".to_string(), |c| format!("category `{c}`"));
    if s.categories.is_empty() && s.strategies.is_empty() {
        println!("no agent trajectories yet ({scope})");
        return Ok(());
    }
    println!("agent trajectories, {scope}\n");
    println!("convergence by category");
    println!(
        "  {:<24} {:>8} {:>9} {:>7} {:>6} {:>10} {:>11}",
        "category", "finished", "converged", "partial", "rate", "mean iter", "mean tokens"
    );
    for c in &s.categories {
        println!(
            "  {:<24} {:>8} {:>9} {:>7} {:>6} {:>10.1} {:>11.0}",
            c.category,
            c.finished,
            c.converged,
            c.accepted_partial,
            pct(Some(c.convergence_rate)),
            c.mean_iterations,
            c.mean_tokens
        );
    }
    println!("\niterations by complexity");
    println!(
        "  {:<12} {:>12} {:>10} {:>11} {:>9}",
        "complexity", "trajectories", "mean iter", "mean tokens", "converged"
    );
    for c in &s.by_complexity {
        println!(
            "  {:<12} {:>12} {:>10.1} {:>11.0} {:>9}",
            c.complexity, c.trajectories, c.mean_iterations, c.mean_tokens, c.converged
        );
    }
    println!("\nstrategy effectiveness (a success is a convergence delta above {threshold})");
    println!(
        "  {:<34} {:>5} {:>8} {:>9} {:>12} {:>10} {:>9}",
        "strategy", "uses", "measured", "successes", "success rate", "mean delta", "tokens"
    );
    let row = |name: String, x: &StrategyStats| {
        println!(
            "  {:<34} {:>5} {:>8} {:>9} {:>12} {:>10} {:>9}",
            name,
            x.uses,
            x.measured,
            x.successes,
            pct(x.success_rate),
            x.mean_delta.map_or_else(|| "-".into(), |d| format!("{d:+.3}")),
            x.tokens
        );
    };
    for st in &s.strategies {
        row(st.strategy.clone(), st);
        for by in s.strategies_by_attractor.iter().filter(|b| b.strategy == st.strategy) {
            row(format!("  under {}", by.attractor.as_deref().unwrap_or("?")), by);
        }
    }
    println!("\nattractor distribution (finished trajectories)");
    println!("  {:<14} {:>8} {:>12}", "attractor", "ended in", "observations");
    for a in &s.attractors {
        println!("  {:<14} {:>8} {:>12}", a.attractor, a.trajectories, a.observations);
    }
    Ok(())
}

async fn similar(
    g: &Global,
    store: &Store,
    to: &SimilarTo,
    category: Option<&str>,
    limit: usize,
) -> Result<(), Failure> {
    let found = repository::similar(store, to, category, limit).await.map_err(|e| match e {
        SimilarError::Store(s) => s.into(),
        e => Failure::input(e.to_string()),
    })?;
    if g.json {
        json(&found);
        return Ok(());
    }
    println!("finished trajectories like \"{}\"", one_line(&found.description, 100));
    println!("similarity: {}", found.measure);
    if found.items.is_empty() {
        println!("none has a keyword in common with it");
        return Ok(());
    }
    println!(
        "  {:>10} {:>5} {:<16} {:<20} {:<18} {:<16} {:>5} {:>6}",
        "similarity", "run", "trajectory", "task", "category", "status", "iter", "level"
    );
    for s in &found.items {
        let t = &s.trajectory;
        println!(
            "  {:>10.3} {:>5} {:<16} {:<20} {:<18} {:<16} {:>5} {:>6}",
            s.similarity,
            t.run_id,
            t.id,
            t.task_name,
            t.category,
            t.status,
            t.iterations,
            t.final_level.map_or_else(|| "-".into(), |l| format!("{l:.3}"))
        );
        println!("             shared: {}", s.shared_words.join(", "));
    }
    Ok(())
}

async fn memories(g: &Global, store: &Store, category: Option<&str>, limit: u32) -> Result<(), Failure> {
    let items = repository::memories(store, category, limit as usize).await?;
    if g.json {
        json(&items);
        return Ok(());
    }
    if items.is_empty() {
        println!("no memories yet: every agent trajectory leaves one when it ends");
        return Ok(());
    }
    for m in &items {
        println!(
            "#{} {} memory of `{}` ({}, trajectory {}, run {}): {}, {}, level {:.3}",
            m.id,
            m.outcome,
            m.task_name,
            m.category,
            m.trajectory_id,
            m.run_id,
            m.status,
            crate::counted(m.iterations, "iteration"),
            m.final_level
        );
        println!("   {}", m.content);
    }
    Ok(())
}

fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max { flat } else { format!("{}…", flat.chars().take(max).collect::<String>()) }
}
