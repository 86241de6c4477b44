//! Read-only views of the database: `inspect` and `export`.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::{ExportFormat, Failure, Global};
use crate::artifact::{Registry, compare};
use crate::domain::{ArtifactEvent, EpochEvent, EpochRecord};
use crate::service::report::shape::transition_label;
use crate::store::{EpochRow, Store, SuiteRow, TrajectoryRow};

/// Every suite with its epoch count and latest mean loss.
pub async fn suites(g: &Global, store: &Store) -> Result<(), Failure> {
    let rows = store.suite_summaries().await?;
    if g.json {
        println!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
        return Ok(());
    }
    if rows.is_empty() {
        no_suites(g, store.path());
        return Ok(());
    }
    println!("{:<32} {:>7} {:>12}  status", "suite", "epochs", "latest loss");
    for r in rows {
        let loss = r.latest_mean_loss.map_or_else(|| "-".into(), |l| format!("{l:.4}"));
        let status = if r.unfinished > 0 { "unfinished (run again to resume)" } else { "idle" };
        println!("{:<32} {:>7} {:>12}  {status}", r.name, r.epochs, loss);
    }
    Ok(())
}

/// What `inspect` says of a database with no suite yet (or none at all).
pub fn no_suites(g: &Global, db: &Path) {
    if g.json {
        println!("[]");
    } else {
        println!(
            "no suites yet in {}\n  hint: `attractor run examples/<suite>.yaml` runs one",
            crate::store::shown_location(db).display()
        );
    }
}

async fn find_suite(store: &Store, name: &str) -> Result<SuiteRow, Failure> {
    match store.suite_by_name(name).await? {
        Some(s) => Ok(s),
        None => {
            let known: Vec<String> = store.suite_summaries().await?.into_iter().map(|s| s.name).collect();
            Err(Failure::input(format!(
                "no suite named `{name}` in {}\n  hint: known suites: {}",
                store.path().display(),
                if known.is_empty() { "none yet".to_string() } else { known.join(", ") }
            )))
        }
    }
}

fn parse(json: Option<&str>) -> Value {
    json.and_then(|j| serde_json::from_str(j).ok()).unwrap_or(Value::Null)
}

/// One epoch with its runs, as `inspect --json` and `export` give it.
async fn epoch_json(store: &Store, e: &EpochRow) -> Result<Value, Failure> {
    let runs = store.runs_of_epoch(e.id).await?;
    let counted = store.epoch_runs(e.id).await?;
    let runs: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({
                "run_id": r.id,
                "task": r.task_name,
                "status": r.status,
                "counted": counted.iter().any(|c| c.run_id == r.id),
                "loss": r.loss,
                "breakdown": parse(r.loss_breakdown_json.as_deref()),
                "duration_ms": r.duration_ms,
                "exit_code": r.exit_code,
                "error": r.error,
                "run_dir": r.run_dir,
            })
        })
        .collect();
    Ok(json!({
        "epoch_id": e.id,
        "epoch_num": e.epoch_num,
        "started_at": e.started_at,
        "completed_at": e.completed_at,
        "mean_loss": e.mean_loss,
        "parent_artifacts": parse(Some(&e.parent_artifacts_json)),
        "child_artifacts": parse(e.child_artifacts_json.as_deref()),
        "runs": runs,
    }))
}

/// An open epoch's runs queued for a worker, and why one waits when no
/// live worker offers what its task needs.
async fn waiting_runs(store: &Store, epoch_id: i64) -> Result<Vec<String>, Failure> {
    let offers = store.live_offers(crate::outer::ITEM_STALE_AFTER.as_secs_f64()).await?;
    let mut lines = Vec::new();
    use crate::store::ItemStatus;
    for item in store.epoch_items(epoch_id).await?.into_iter().filter(|i| i.status != ItemStatus::Done) {
        let needs = item.needs();
        let line = match item.status {
            ItemStatus::Running => {
                format!("{:<28} running on {}", item.task_name, item.holder.as_deref().unwrap_or("a worker"))
            }
            _ if needs.is_empty() || item.offered_by(&offers) => format!("{:<28} queued for a worker", item.task_name),
            _ => format!(
                "{:<28} waits: it needs {} and no live worker offers it (start `attractor worker --offers {}`)",
                item.task_name,
                needs.join(", "),
                needs.join(",")
            ),
        };
        lines.push(line);
    }
    Ok(lines)
}

/// A suite's epochs: mean loss, per-task losses and artifact events.
pub async fn suite(g: &Global, store: &Store, name: &str) -> Result<(), Failure> {
    let s = find_suite(store, name).await?;
    let epochs = store.epochs(s.id).await?;
    let model = store.model_spend(crate::store::CallsOf::Suite(s.id)).await?;
    if g.json {
        let mut out = Vec::new();
        for e in &epochs {
            out.push(epoch_json(store, e).await?);
        }
        let value = json!({ "suite": s.name, "epochs": out, "model": model });
        println!("{}", serde_json::to_string_pretty(&value).unwrap_or_default());
        return Ok(());
    }
    println!("suite `{}` — {}", s.name, crate::counted(epochs.len() as u64, "epoch"));
    if model.calls > 0 {
        println!("model calls so far: {}", model.summary());
    }
    for e in &epochs {
        let mean = e.mean_loss.map_or_else(|| "-".into(), |m| format!("{m:.4}"));
        let state = if e.completed_at.is_some() { "" } else { "  (unfinished: run again to resume)" };
        println!("\nepoch {}  mean loss {mean}{state}", e.epoch_num);
        if e.completed_at.is_none() {
            for line in waiting_runs(store, e.id).await? {
                println!("    {line}");
            }
        }
        let rows = store.runs_of_epoch(e.id).await?;
        for r in store.epoch_runs(e.id).await? {
            let status = parse(Some(&r.scores_json))["status"].as_str().unwrap_or("?").to_string();
            println!("    {:<28} {:>8.4}  {status}", r.task_name, r.loss);
            // Why a run failed: its error, and the end of what it wrote to
            // stderr (often the real cause: "no model configured", a traceback).
            if let Some(row) =
                rows.iter().find(|row| row.id == r.run_id && matches!(row.status.as_str(), "failed" | "aborted"))
            {
                for line in why_it_failed(row) {
                    println!("        {line}");
                }
            }
        }
        // η as JSON writes it ("null" for a record made before it was kept).
        let eta = |lr: &Option<f64>| serde_json::to_string(lr).unwrap_or_default();
        for ev in &EpochRecord::parse(e.child_artifacts_json.as_deref()).events {
            let line = match ev {
                EpochEvent::Artifact(ArtifactEvent::Update {
                    artifact,
                    from_version,
                    to_version,
                    learning_rate,
                    rationale,
                    ..
                }) => {
                    format!("update   {artifact} v{from_version}→v{to_version}  η={}  {rationale}", eta(learning_rate))
                }
                EpochEvent::Artifact(a @ ArtifactEvent::Rollback { new_learning_rate, .. }) => {
                    format!("{}, η now {}", transition_label(a), eta(new_learning_rate))
                }
                other => other.kind().to_string(),
            };
            println!("  → {line}");
        }
    }
    Ok(())
}

/// A failed run's error and the last lines of its stderr, as `inspect` shows them.
fn why_it_failed(run: &crate::store::RunRow) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(error) = run.error.as_deref().filter(|e| !e.trim().is_empty()) {
        lines.extend(error.lines().map(|l| format!("error: {l}")));
    }
    let stderr: Vec<&str> =
        run.stderr.as_deref().unwrap_or_default().lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect();
    let tail = &stderr[stderr.len().saturating_sub(3)..];
    if !tail.is_empty() {
        lines.push("stderr (last lines):".to_string());
        lines.extend(tail.iter().map(|l| format!("  {l}")));
    }
    lines.push(format!("run folder: {}", run.run_dir));
    lines
}

/// One artifact's versions with unified diffs between consecutive ones.
pub async fn artifact(g: &Global, store: &Store, name: &str) -> Result<(), Failure> {
    let registry = Registry::load(store.clone()).await?;
    let def = registry.def(name)?.clone();
    let history = registry.history(name).await?;
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "artifact": def, "versions": history })).unwrap_or_default()
        );
        return Ok(());
    }
    println!("artifact `{}` ({}), {}", def.name, def.kind.as_str(), crate::counted(history.len(), "version"));
    for (i, v) in history.iter().enumerate() {
        let active = if v.is_active { "  [active]" } else { "" };
        let origin = match (v.version, v.parent_version) {
            (0, _) => "default".to_string(),
            (_, Some(p)) => format!("from v{p}, epoch {}", v.epoch_id.map_or("-".into(), |e| e.to_string())),
            _ => String::new(),
        };
        println!("\nv{}  {origin}  {}{active}", v.version, v.created_at.as_deref().unwrap_or(""));
        // Diff each version against its parent (the version it was derived from).
        let parent = v.parent_version.and_then(|p| history.iter().find(|h| h.version == p)).or(if i == 0 {
            None
        } else {
            history.first()
        });
        if let Some(parent) = parent.filter(|_| v.version != 0) {
            let text = compare::unified(def.kind, name, (parent.version, &parent.content), (v.version, &v.content), 3);
            for line in text.lines() {
                println!("    {line}");
            }
        } else {
            for line in v.content.lines() {
                println!("    {line}");
            }
        }
    }
    Ok(())
}

/// A suite's epochs and runs as JSON or CSV (one row per run).
pub async fn export(store: &Store, name: &str, format: ExportFormat, output: Option<&Path>) -> Result<(), Failure> {
    let s = find_suite(store, name).await?;
    let epochs = store.epochs(s.id).await?;
    let mut buf: Vec<u8> = Vec::new();
    match format {
        ExportFormat::Json => {
            let mut out = Vec::new();
            for e in &epochs {
                out.push(epoch_json(store, e).await?);
            }
            let doc = json!({ "suite": s.name, "tasks": parse(Some(&s.tasks_json)), "epochs": out });
            buf = serde_json::to_vec_pretty(&doc).unwrap_or_default();
            buf.push(b'\n');
        }
        ExportFormat::Csv => {
            let mut w = csv::Writer::from_writer(&mut buf);
            let header = [
                "suite",
                "epoch",
                "epoch_mean_loss",
                "run_id",
                "task",
                "status",
                "counted",
                "loss",
                "eval",
                "critique",
                "gate_rejections",
                "budget",
                "status_penalty",
                "duration_ms",
                "error",
            ];
            w.write_record(header).map_err(|e| Failure::runtime(e.to_string()))?;
            for e in &epochs {
                let counted = store.epoch_runs(e.id).await?;
                for r in store.runs_of_epoch(e.id).await? {
                    let b = parse(r.loss_breakdown_json.as_deref());
                    let num = |v: &Value| v.as_f64().map(|x| x.to_string()).unwrap_or_default();
                    w.write_record([
                        s.name.clone(),
                        e.epoch_num.to_string(),
                        e.mean_loss.map(|m| m.to_string()).unwrap_or_default(),
                        r.id.to_string(),
                        r.task_name.clone(),
                        r.status.clone(),
                        counted.iter().any(|c| c.run_id == r.id).to_string(),
                        r.loss.map(|l| l.to_string()).unwrap_or_default(),
                        num(&b["eval_component"]),
                        num(&b["critique_component"]),
                        num(&b["gate_component"]),
                        num(&b["budget_component"]),
                        num(&b["status_component"]),
                        r.duration_ms.map(|d| d.to_string()).unwrap_or_default(),
                        r.error.clone().unwrap_or_default(),
                    ])
                    .map_err(|e| Failure::runtime(e.to_string()))?;
                }
            }
            w.flush().map_err(|e| Failure::runtime(e.to_string()))?;
            drop(w);
        }
    }
    match output {
        Some(path) => {
            std::fs::write(path, &buf).map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))?
        }
        None => std::io::stdout().write_all(&buf).map_err(|e| Failure::runtime(e.to_string()))?,
    }
    Ok(())
}

/// An optimize run's telemetry, one line per step.
pub async fn telemetry(g: &Global, store: &Store, run_id: i64) -> Result<(), Failure> {
    let Some(run) = store.run(run_id).await? else {
        return Err(Failure::input(format!("no run {run_id}\n  hint: `attractor inspect SUITE --json` lists run ids")));
    };
    let Some(experiment) = store.experiment_of_run(run_id).await? else {
        return Err(Failure::input(format!(
            "run {run_id} (task `{}`, kind {}) has no ASO telemetry: only optimize tasks and agent tasks with \
             `supervision: aso` have it",
            run.task_name, run.kind
        )));
    };
    let rows = store.telemetry_of_experiment(experiment).await?;
    if g.json {
        println!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
        return Ok(());
    }
    println!("run {run_id}: task `{}`, {}", run.task_name, crate::counted(rows.len(), "step"));
    // An agent's objective is the distance D to the intent, its evaluations are iterations.
    let agent = run.kind == "agent";
    println!(
        "{:>4} {:>4} {:<15} {:>14} {:>11} {:<9} {:<11} {:>4} {:>8}",
        "traj",
        "step",
        "status",
        if agent { "distance D" } else { "objective" },
        "violation",
        "directive",
        "source",
        "llm",
        if agent { "iters" } else { "evals" }
    );
    for r in rows {
        let num = |v: Option<f64>, p: usize| v.map_or_else(|| "-".into(), |x| format!("{x:.p$e}"));
        println!(
            "{:>4} {:>4} {:<15} {:>14} {:>11} {:<9} {:<11} {:>4} {:>8}",
            r.trajectory_id,
            r.step,
            r.status,
            num(r.objective, 6),
            num(r.max_violation, 2),
            r.directive_action,
            r.directive_source,
            if r.llm_call_made { "yes" } else { "no" },
            r.evals_used
        );
    }
    Ok(())
}

/// The trajectories of a run in tree order: each one followed by those
/// under it (by their place), with its depth.
fn tree_order(rows: &[TrajectoryRow]) -> Vec<(usize, &TrajectoryRow)> {
    fn visit<'a>(
        rows: &'a [TrajectoryRow],
        parent: Option<&str>,
        depth: usize,
        out: &mut Vec<(usize, &'a TrajectoryRow)>,
    ) {
        let mut children: Vec<&TrajectoryRow> = rows
            .iter()
            .filter(|t| match parent {
                // A row whose parent belongs to another run's tree counts as a root here.
                None => t.record.parent_id.as_deref().is_none_or(|p| !rows.iter().any(|o| o.record.id == p)),
                Some(p) => t.record.parent_id.as_deref() == Some(p),
            })
            .collect();
        children.sort_by(|a, b| {
            (a.record.ordinal, &a.started_at, &a.record.id).cmp(&(b.record.ordinal, &b.started_at, &b.record.id))
        });
        for t in children {
            out.push((depth, t));
            visit(rows, Some(&t.record.id), depth + 1, out);
        }
    }
    let mut out = Vec::with_capacity(rows.len());
    visit(rows, None, 0, &mut out);
    out
}

/// How a trajectory is named in the tree: its role and place.
fn tree_label(t: &TrajectoryRow, siblings: usize) -> String {
    match t.record.role.as_str() {
        "sample" => format!("sample {} of {siblings}", t.record.ordinal),
        "subtask" => format!("subtask {}", t.record.ordinal),
        "integration" => "integration".to_string(),
        "parallel" => format!("parallel samples ({siblings})"),
        _ => "trajectory".to_string(),
    }
}

/// An agent run's trajectories: for each, one line per iteration, then how
/// it ended. A run whose task was sampled in parallel or split into subtasks
/// shows its trajectories as a tree: the run's own first, the samples, or
/// the subtasks and the integration, under it.
pub async fn trajectory(g: &Global, store: &Store, run_id: i64) -> Result<(), Failure> {
    let Some(run) = store.run(run_id).await? else {
        return Err(Failure::input(format!("no run {run_id}\n  hint: `attractor inspect SUITE --json` lists run ids")));
    };
    let mut trajectories = store.trajectories_of_run(run_id).await?;
    if trajectories.is_empty() && run.kind == "agent" {
        // A trajectory that paused (or was stopped) belongs to the run that
        // continued it: the later run of the same task in the same epoch.
        for later in store.runs_of_epoch(run.epoch_id).await? {
            if later.id > run_id && later.task_name == run.task_name {
                let adopted = store.trajectories_of_run(later.id).await?;
                if !adopted.is_empty() {
                    if !g.json {
                        println!(
                            "run {run_id} stopped (paused or interrupted); run {} continued its trajectory — every \
                             iteration, before and after, is below",
                            later.id
                        );
                    }
                    trajectories = adopted;
                    break;
                }
            }
        }
    }
    if trajectories.is_empty() {
        return Err(Failure::input(format!(
            "run {run_id} (task `{}`, kind {}) has no trajectory: only agent tasks do{}",
            run.task_name,
            run.kind,
            if run.kind == "optimize" { "\n  hint: `attractor telemetry RUN_ID` shows an optimize run" } else { "" }
        )));
    }
    let ordered = tree_order(&trajectories);
    let mut out = Vec::new();
    for (depth, t) in &ordered {
        // Iteration 0, the baseline, apart from the executions.
        let baseline = store.baseline_of_trajectory(&t.record.id).await?;
        out.push((*depth, *t, baseline, store.observations_of_trajectory(&t.record.id).await?));
    }
    if g.json {
        let v: Vec<Value> = out
            .iter()
            .map(|(depth, t, baseline, obs)| {
                json!({
                    "trajectory": {
                        "id": t.record.id, "run_id": t.record.run_id, "task": t.record.task_name, "category": t.record.category,
                        "role": t.record.role, "parent_id": t.record.parent_id, "ordinal": t.record.ordinal, "depth": depth,
                        "status": t.status, "workspace": t.record.workspace_dir, "iterations": t.iterations,
                        "tokens_used": t.tokens_used, "final_level": t.final_level, "best_sequence": t.best_sequence,
                        "pending_intervention_id": t.pending_intervention_id,
                        "setup": parse(Some(&t.record.setup_json)), "result": parse(t.result_json.as_deref()),
                    },
                    "baseline": baseline.as_ref().map(|o| json!({
                        "commit": o.record.commit_id, "level": o.record.level, "summary": o.record.summary, "verdicts": o.record.verdict_summary,
                        "wall_time_ms": o.record.wall_time_ms, "signals": parse(Some(&o.record.signals_json)),
                    })),
                    "observations": obs.iter().map(|o| json!({
                        "sequence": o.record.sequence, "strategy": o.record.strategy, "forced": o.record.forced, "commit": o.record.commit_id,
                        "level": o.record.level, "delta": o.record.delta, "attractor": o.record.attractor,
                        "attractor_confidence": o.record.attractor_confidence,
                        "loss": {"d": o.record.loss_d, "p": o.record.loss_p, "omega": o.record.loss_omega, "l": o.record.loss},
                        "grad_l": o.record.grad_l, "directive": o.record.directive, "rationale": o.record.rationale,
                        "loop_control": o.record.loop_control, "next_strategy": o.record.next_strategy, "tokens": o.record.tokens,
                        "wall_time_ms": o.record.wall_time_ms, "applied_edits": o.record.applied_edits,
                        "rejected_edits": o.record.rejected_edits, "summary": o.record.summary, "verdicts": o.record.verdict_summary,
                        "verification": parse(o.record.verification_json.as_deref()),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(());
    }
    for (i, (depth, t, baseline, obs)) in out.iter().enumerate() {
        // The tree's guide: `├─`/`└─` before a trajectory under another, `│`
        // in front of the lines that belong to it.
        let last_sibling = !out[i + 1..].iter().take_while(|(d, _, _, _)| d >= depth).any(|(d, _, _, _)| d == depth);
        let (head, body) = match depth {
            0 => (String::new(), String::new()),
            d => {
                let pad = "   ".repeat(d - 1);
                (
                    format!("{pad}{} ", if last_sibling { "└─" } else { "├─" }),
                    format!("{pad}{}  ", if last_sibling { " " } else { "│" }),
                )
            }
        };
        let siblings = trajectories
            .iter()
            .filter(|o| o.record.parent_id == t.record.parent_id && o.record.role == t.record.role)
            .count();
        let label = if *depth == 0 && t.record.role == "parallel" {
            format!(
                "parallel samples ({} of them)",
                trajectories.iter().filter(|o| o.record.parent_id.as_deref() == Some(&t.record.id)).count()
            )
        } else {
            tree_label(t, siblings)
        };
        let level = t.final_level.map_or_else(|| "-".into(), |l| format!("{l:.3}"));
        println!(
            "{head}{label} {} — task `{}` (run {run_id}): {}, {}, {} tokens, final level {level}",
            t.record.id,
            t.record.task_name,
            t.status,
            crate::counted(t.iterations, "iteration"),
            t.tokens_used
        );
        println!("{body}workspace: {}", t.record.workspace_dir);
        if let Some(id) = t.pending_intervention_id {
            println!("{body}waiting for an answer: `attractor interventions` shows #{id}");
        }
        let result = parse(t.result_json.as_deref());
        let setup = parse(Some(&t.record.setup_json));
        if let Some(sandbox) = setup["sandbox"].as_str() {
            println!("{body}sandbox: {sandbox}");
        }
        if let Some(d) = setup.get("decomposition").filter(|d| d["applied"] == false) {
            println!("{body}not split: {}", d["reason"].as_str().unwrap_or("-"));
        }
        if baseline.is_some() || !obs.is_empty() {
            println!(
                "{body}{:>4} {:<22} {:>6} {:>7} {:<14} {:<15} {:>6} {:<18} verdicts",
                "#", "strategy", "level", "delta", "attractor", "directive", "L", "control"
            );
        }
        // Iteration 0 is the baseline, the executions are counted from 1.
        if let Some(b) = baseline {
            println!("{body}{:>4} {:<22} {:>6.3} {:>7} {}", 0, "baseline", b.record.level, "-", b.record.summary);
        }
        for o in obs {
            let delta = o.record.delta.map_or_else(|| "-".into(), |d| format!("{d:+.3}"));
            let strategy =
                if o.record.forced { format!("{} (forced)", o.record.strategy) } else { o.record.strategy.clone() };
            println!(
                "{body}{:>4} {:<22} {:>6.3} {:>7} {:<14} {:<15} {:>6.3} {:<18} {}",
                o.record.sequence + 1,
                strategy,
                o.record.level,
                delta,
                o.record.attractor,
                o.record.directive,
                o.record.loss,
                o.record.loop_control,
                o.record.verdict_summary
            );
        }
        if let Some(d) = result.get("decomposition").filter(|d| d.is_object()) {
            let how =
                if d["proactive"] == true { "before its first attempt" } else { "when the engine chose decompose" };
            let n = d["subtasks"].as_array().map_or(0, Vec::len);
            println!(
                "{body}split {how} into {} and an integration; the integration's result is this one's",
                crate::counted(n, "subtask")
            );
        }
        if let Some(winner) = result["winner"].as_str() {
            println!("{body}first to converge: {winner}; the others were stopped");
        } else if let Some(by) = result["result"]["trajectory_id"].as_str().filter(|_| t.record.role == "parallel") {
            println!("{body}no sample converged; the best observation across them is {by}'s");
        }
        if let Some(by) = result["superseded_by"].as_str() {
            println!("{body}stopped: {by} converged first");
        }
        if let Some(notes) = result["notes"].as_array().filter(|n| !n.is_empty()) {
            for n in notes.iter().filter_map(Value::as_str) {
                println!("{body}note: {n}");
            }
        }
        if let Some(moves) = result["partial_result"]["next_moves"].as_array().filter(|m| !m.is_empty()) {
            println!("{body}next moves:");
            for m in moves.iter().filter_map(Value::as_str) {
                println!("{body}  - {m}");
            }
        }
        if let Some(e) = result["error"].as_str() {
            println!("{body}error: {e}");
        }
    }
    Ok(())
}

/// Every proposal an optimizer considered for a suite: the winner of each
/// epoch with what it predicted and what the next epoch observed, and the
/// others with why they lost.
pub async fn proposals(g: &Global, store: &Store, suite: &str) -> Result<(), Failure> {
    let suite = find_suite(store, suite).await?;
    let rows = store.proposals(suite.id).await?;
    if g.json {
        println!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
        return Ok(());
    }
    if rows.is_empty() {
        println!(
            "suite `{}` has no proposals yet\n  hint: `attractor run SUITE.yaml --optimizer textgrad` (or evolve) makes them",
            suite.name
        );
        return Ok(());
    }
    println!(
        "{:>5} {:<9} {:<26} {:>9} {:>6} {:>9} {:>9}  note",
        "epoch", "outcome", "artifact", "expected", "conf", "observed", "version"
    );
    for r in &rows {
        let (row, p) = (&r.row, &r.row.proposal);
        let num = |v: Option<f64>| v.map_or_else(|| "-".into(), |x| format!("{x:+.4}"));
        let version = match row.applied_version {
            Some(v) => format!("v{}→v{v}", p.parent_version),
            None => format!("v{}", p.parent_version),
        };
        let mut note = match (&p.rejection, row.rolled_back) {
            (Some(reason), _) => reason.clone(),
            (None, true) => format!("rolled back; {}", p.rationale.clone().unwrap_or_default()),
            (None, false) => p.rationale.clone().unwrap_or_default(),
        };
        if r.edited_by_person {
            note = format!("edited by a person in the Inbox before it was applied; proposed: {note}");
        }
        println!(
            "{:>5} {:<9} {:<26} {:>9} {:>6} {:>9} {:>9}  {}",
            r.epoch_num,
            p.outcome.as_str(),
            p.artifact,
            num(p.expected_loss_reduction),
            p.confidence.map_or_else(|| "-".into(), |c| format!("{c:.2}")),
            num(row.observed_loss_reduction),
            version,
            note.chars().take(100).collect::<String>()
        );
        if let Some(d) = &p.decision {
            let kept = match (p.outcome.as_str(), row.rolled_back) {
                ("rejected", _) => "discarded",
                // Screened and better than the version it would replace, but another was better still.
                ("candidate", _) => "not chosen",
                (_, true) => "rolled back",
                _ => "kept",
            };
            println!("{:>5} {kept}, judged on {}", "", d.summary());
        }
    }
    Ok(())
}

/// A suite's experiment tree, children indented under their parent: what
/// each node changed, its mean (and held-out) loss, and what became of it;
/// then round by round, the children it made and what steered it (the
/// analyst's hints, the ideation proposals and the child each led to).
pub async fn tree(g: &Global, store: &Store, suite: &str) -> Result<(), Failure> {
    let suite = find_suite(store, suite).await?;
    let nodes = store.tree_nodes(suite.id).await?;
    let notes = store.tree_notes(suite.id).await?;
    if g.json {
        let out = serde_json::json!({ "nodes": nodes, "notes": notes });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return Ok(());
    }
    if nodes.is_empty() {
        println!(
            "suite `{}` has no experiment tree\n  hint: `attractor run SUITE.yaml --optimizer tree --epochs 20` grows one",
            suite.name
        );
        return Ok(());
    }
    let best = nodes
        .iter()
        .filter(|n| n.node.status == "committed" || n.node.status == "pruned")
        .min_by(|a, b| a.node.mean_loss.unwrap_or(f64::INFINITY).total_cmp(&b.node.mean_loss.unwrap_or(f64::INFINITY)))
        .map(|n| n.id);
    println!("experiment tree of `{}`: {}", suite.name, crate::counted(nodes.len(), "node"));
    fn walk(nodes: &[crate::store::TreeNodeRow], parent: Option<i64>, depth: usize, best: Option<i64>) {
        for n in nodes.iter().filter(|n| n.node.parent_id == parent) {
            let change = match (&n.node.changed_artifact, n.node.from_version, n.node.to_version) {
                (Some(a), Some(f), Some(t)) => format!("{a} v{f}→v{t}"),
                (Some(a), _, None) => format!("{a} (no new version)"),
                _ => "root".to_string(),
            };
            let loss = n.node.mean_loss.map_or("-".into(), |m| format!("{m:.4}"));
            let held = n.node.holdout_mean_loss.map_or(String::new(), |h| format!(", held-out {h:.4}"));
            let star = if Some(n.id) == best { "  ★ best" } else { "" };
            let round = n.node.round.map_or(String::new(), |r| format!(" r{r}"));
            println!(
                "{:indent$}#{}{round} {:<9} {change}  loss {loss}{held} ({} eval){star}",
                "",
                n.id,
                n.node.status,
                n.node.evaluations,
                indent = depth * 2
            );
            if let Some(note) = n.node.note.as_deref().filter(|s| !s.is_empty()) {
                println!("{:indent$}   {}", "", note.chars().take(120).collect::<String>(), indent = depth * 2);
            }
            walk(nodes, Some(n.id), depth + 1, best);
        }
    }
    walk(&nodes, None, 0, best);

    let mut rounds: Vec<i64> =
        nodes.iter().filter_map(|n| n.node.round).chain(notes.iter().map(|n| n.note.round)).collect();
    rounds.sort_unstable();
    rounds.dedup();
    rounds.retain(|r| *r > 0);
    if rounds.is_empty() {
        return Ok(());
    }
    println!("\nrounds:");
    for r in rounds {
        let made: Vec<String> =
            nodes.iter().filter(|n| n.node.round == Some(r)).map(|n| format!("#{} {}", n.id, n.node.status)).collect();
        println!("  round {r}: {}", if made.is_empty() { "no child".to_string() } else { made.join(", ") });
        for note in notes.iter().filter(|n| n.note.round == r) {
            let first_line = note.note.text.lines().next().unwrap_or_default();
            let what = match (note.note.source.as_str(), note.note.kind.as_str()) {
                ("analyst", kind) => format!("analyst, {}", kind.replace('_', " ")),
                (source, "proposal") => {
                    let score = match (note.note.expected_loss_reduction, note.note.confidence) {
                        (Some(e), Some(c)) => format!(", {e:.3} × {c:.2}"),
                        _ => String::new(),
                    };
                    let led = note.node_id.map_or(String::new(), |id| format!(" → #{id}"));
                    format!(
                        "ideation, {}{score} on `{}`{led}",
                        source.replace('_', " "),
                        note.note.artifact.as_deref().unwrap_or("?")
                    )
                }
                (source, _) => format!("ideation, {}: nothing", source.replace('_', " ")),
            };
            println!("    [{what}] {}", first_line.chars().take(160).collect::<String>());
        }
    }
    Ok(())
}

/// The interventions inbox.
/// The questions waiting for an answer and the open notices; with `all`,
/// the settled ones too.
pub async fn interventions(g: &Global, store: &Store, all: bool) -> Result<(), Failure> {
    let rows = if all {
        store.interventions(false).await?
    } else {
        let mut open = store.interventions(true).await?;
        open.extend(store.open_notices().await?);
        open
    };
    if g.json {
        println!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
        return Ok(());
    }
    if rows.is_empty() {
        println!("{}", if all { "no interventions yet" } else { "nothing waits for an answer, and no notice is open" });
        return Ok(());
    }
    for r in rows {
        let c = parse(Some(&r.raised.context_json));
        let state = match (r.status.as_str(), &r.answer, &r.answer_text) {
            ("notice", ..) => "notice: nothing waits on it".to_string(),
            ("dismissed", ..) => "notice, dismissed".to_string(),
            (_, Some(a), Some(t)) => format!("answered: {a} — {t}"),
            (_, Some(a), None) => format!("answered: {a}"),
            _ => "pending".to_string(),
        };
        println!("#{}  [{}]  {}  ({})", r.id, r.raised.kind, r.raised.subject, state);
        for key in ["what", "why", "proposal"] {
            if let Some(text) = c[key].as_str() {
                println!("     {key}: {text}");
            }
        }
        match r.status.as_str() {
            // A gated artifact update takes a decision, not a hint.
            "pending" if r.raised.kind == crate::domain::InterventionKind::ArtifactUpdate.as_str() => {
                println!("     answer: attractor answer {} approve [--content FILE] | reject \"why\"", r.id)
            }
            "pending" => println!("     answer: attractor answer {} approve|reject|hint \"…\"", r.id),
            "notice" => println!("     dismiss: attractor dismiss {}", r.id),
            _ => {}
        }
    }
    Ok(())
}
