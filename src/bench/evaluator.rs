//! `attractor bench evaluator`: what talking to an external evaluator costs,
//! measured side by side in one run on the same trivial Python evaluator —
//! a process per point (`mode: once`) against persistent processes at
//! several message sizes and process counts — next to Python answering the
//! same requests from a file with nobody waiting on it (the limit no
//! protocol can pass) and a built-in problem evaluated in process. Then
//! whole coordinator runs on the cantilever example in each mode, with and
//! without the exact gradients it can send.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Serialize;

use crate::numeric::{ExternalProblem, Problem, parse_external};

/// What to measure.
#[derive(Debug, Clone)]
pub struct EvaluatorBench {
    /// Points per persistent measurement.
    pub points: usize,
    /// Points in the one-shot measurement (a process each).
    pub once_points: usize,
    /// Message sizes of the persistent mode.
    pub batches: Vec<usize>,
    /// Process counts of the persistent mode.
    pub processes: Vec<usize>,
    /// Evaluation budget of each coordinator run (0 skips them).
    pub run_budget: u64,
    /// Where the scripts and problem files are written.
    pub work: PathBuf,
}

/// One throughput measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    pub how: String,
    pub batch: usize,
    pub processes: usize,
    pub points: usize,
    pub seconds: f64,
    pub per_second: f64,
}

/// One coordinator run on the cantilever example.
#[derive(Debug, Clone, Serialize)]
pub struct ExampleRun {
    pub how: String,
    pub evaluations: u64,
    pub seconds: f64,
    pub best: Option<f64>,
    pub max_violation: Option<f64>,
    pub error: Option<String>,
}

/// A trivial evaluator answering both modes: x₁² + x₂², one inequality.
const TRIVIAL: &str = r#"import json, sys

def value(x):
    return {"objective": x[0] * x[0] + x[1] * x[1], "constraints": {"g1": x[0] + x[1] - 1.0}}

for line in sys.stdin:
    request = json.loads(line)
    if "points" not in request:
        print(json.dumps(value(request["x"])))
        break
    print(json.dumps({"id": request["id"], "results": [value(x) for x in request["points"]]}), flush=True)
"#;

fn problem_text(mode: &str, batch: usize, processes: usize) -> String {
    let persistent =
        if mode == "persistent" { format!("batch: {batch}\nprocesses: {processes}\n") } else { String::new() };
    format!(
        "name: trivial\ncommand: python3 trivial.py\nmode: {mode}\n{persistent}variables:\n  - {{ name: a, min: -1, max: 1 }}\n  - {{ name: b, min: -1, max: 1 }}\ninequalities: [g1]\n"
    )
}

fn points(n: usize) -> Vec<Vec<f64>> {
    (0..n).map(|i| vec![(i % 1000) as f64 * 1e-3, 0.5 - (i % 777) as f64 * 1e-3]).collect()
}

fn load(work: &Path, text: &str) -> Result<ExternalProblem, String> {
    parse_external(text, &work.join("trivial.yaml")).map_err(|e| e.to_string())
}

/// Evaluates `n` points in calls of `per_call` and times it; every answer must be a value.
fn time_calls(p: &dyn Problem, n: usize, per_call: usize) -> Result<f64, String> {
    let all = points(n);
    let started = Instant::now();
    for chunk in all.chunks(per_call.max(1)) {
        if let Some(Err(e)) = p.evaluate_batch(chunk).into_iter().find(Result::is_err) {
            return Err(e.0);
        }
    }
    Ok(started.elapsed().as_secs_f64())
}

fn row(how: &str, batch: usize, processes: usize, points: usize, seconds: f64) -> Throughput {
    let per_second = if seconds > 0.0 { points as f64 / seconds } else { f64::INFINITY };
    Throughput { how: how.to_string(), batch, processes, points, seconds, per_second }
}

/// The throughput table: one-shot, persistent at each size and process
/// count, Python alone, and in process.
pub fn throughput(b: &EvaluatorBench) -> Result<Vec<Throughput>, String> {
    std::fs::create_dir_all(&b.work).map_err(|e| format!("cannot create {}: {e}", b.work.display()))?;
    std::fs::write(b.work.join("trivial.py"), TRIVIAL).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();

    let once = load(&b.work, &problem_text("once", 1, 1))?;
    rows.push(row("once (a process per point)", 1, 1, b.once_points, time_calls(&once, b.once_points, 1)?));

    for &processes in &b.processes {
        for &batch in &b.batches {
            let p = load(&b.work, &problem_text("persistent", batch, processes))?;
            // Start the processes before the clock does: a run starts them once.
            time_calls(&p, batch * processes, batch * processes)?;
            let seconds = time_calls(&p, b.points, batch * processes)?;
            rows.push(row("persistent", batch, processes, b.points, seconds));
        }
    }

    if let Some(&batch) = b.batches.iter().max() {
        rows.push(row("Python alone (the same requests, in memory)", batch, 1, b.points, python_alone(b, batch)?));
    }
    let builtin = crate::numeric::builtin("g24").ok_or("g24 is built in")?;
    let n = b.points.max(100_000);
    rows.push(row("in process (built-in g24)", 1, 1, n, time_calls(builtin.as_ref(), n, 1)?));
    Ok(rows)
}

/// Python answering `b.points` points in messages of `batch`: the script's
/// own loop over the requests, read from memory and written to memory, timed
/// inside Python — the work no protocol can avoid.
fn python_alone(b: &EvaluatorBench, batch: usize) -> Result<f64, String> {
    let mut requests = String::new();
    for (i, chunk) in points(b.points).chunks(batch).enumerate() {
        let line = serde_json::json!({ "id": i + 1, "names": ["a", "b"], "points": chunk });
        requests.push_str(&line.to_string());
        requests.push('\n');
    }
    std::fs::write(b.work.join("requests.jsonl"), requests).map_err(|e| e.to_string())?;
    const TIMER: &str = "import io, runpy, sys, time\n\
        data = open('requests.jsonl').read()\n\
        sys.stdin, sys.stdout = io.StringIO(data), io.StringIO()\n\
        started = time.perf_counter()\n\
        runpy.run_path('trivial.py', run_name='__main__')\n\
        sys.__stdout__.write(repr(time.perf_counter() - started))\n";
    let out = Command::new("python3")
        .arg("-c")
        .arg(TIMER)
        .current_dir(&b.work)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !out.status.success() {
        return Err(format!("python3 timing failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse::<f64>().map_err(|_| format!("python3 timing printed {text:?}, not seconds"))
}

/// Coordinator runs on the cantilever example (`examples/evaluator`) in each
/// mode, with and without its exact gradients.
pub async fn example_runs(b: &EvaluatorBench, examples: &Path, seed: u64) -> Result<Vec<ExampleRun>, String> {
    let source = std::fs::read_to_string(examples.join("evaluator/cantilever.yaml"))
        .map_err(|e| format!("cannot read the cantilever example in {}: {e}", examples.display()))?;
    let script = std::fs::read_to_string(examples.join("evaluator/cantilever.py")).map_err(|e| e.to_string())?;
    std::fs::write(b.work.join("cantilever.py"), &script).map_err(|e| e.to_string())?;
    // The same evaluator with its gradients taken out of each reply.
    let plain = script.replace("        \"gradient\": {", "        \"unused\": {");
    std::fs::write(b.work.join("cantilever_plain.py"), plain).map_err(|e| e.to_string())?;
    let variants = [
        ("once, finite differences", "once", "cantilever_plain.py"),
        ("once, exact gradients", "once", "cantilever.py"),
        ("persistent, finite differences", "persistent", "cantilever_plain.py"),
        ("persistent, exact gradients", "persistent", "cantilever.py"),
    ];
    let mut runs = Vec::new();
    for (how, mode, script) in variants {
        let text = source
            .replace("mode: persistent", &format!("mode: {mode}"))
            .replace("python3 cantilever.py", &format!("python3 {script}"));
        let path = b.work.join(format!("cantilever-{}.yaml", runs.len()));
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        let settings = crate::bench::numeric::OursSettings {
            budget: b.run_budget,
            tol: 1e-6,
            gap: 1e-4,
            config: crate::aso::AsoConfig::default(),
            model: None,
        };
        let started = Instant::now();
        let record = crate::bench::numeric::run_ours(&path.display().to_string(), seed, &settings).await;
        runs.push(ExampleRun {
            how: how.to_string(),
            evaluations: record.evals,
            seconds: started.elapsed().as_secs_f64(),
            best: record.final_objective,
            max_violation: record.final_violation,
            error: record.error,
        });
    }
    Ok(runs)
}

/// The report: throughput with each row's ratio to the one-shot mode, then the runs.
pub fn report(rows: &[Throughput], runs: &[ExampleRun]) -> String {
    let mut out = String::from("### Throughput (a trivial Python evaluator)\n\n");
    out.push_str("| how | points per message | processes | points | seconds | evaluations/s | × once |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    let once = rows.first().map_or(1.0, |r| r.per_second);
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.3} | {:.0} | {:.0} |\n",
            r.how,
            r.batch,
            r.processes,
            r.points,
            r.seconds,
            r.per_second,
            r.per_second / once
        ));
    }
    if !runs.is_empty() {
        out.push_str("\n### The cantilever example under the coordinator (optimum 1.339956)\n\n");
        out.push_str(
            "| how | evaluations | seconds | evaluations/s | best | max violation |\n|---|---:|---:|---:|---:|---:|\n",
        );
        for r in runs {
            let fmt = |v: Option<f64>, p: usize| v.map_or("—".to_string(), |v| format!("{v:.p$e}"));
            out.push_str(&format!(
                "| {}{} | {} | {:.2} | {:.0} | {} | {} |\n",
                r.how,
                r.error.as_ref().map(|e| format!(" (error: {e})")).unwrap_or_default(),
                r.evaluations,
                r.seconds,
                r.evaluations as f64 / r.seconds.max(1e-9),
                r.best.map_or("—".to_string(), |v| format!("{v:.6}")),
                fmt(r.max_violation, 1)
            ));
        }
    }
    out
}
