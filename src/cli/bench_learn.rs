//! `attractor bench learn`: the learning benchmark's shell — reads the model
//! from the environment, runs each method and seed through
//! [`crate::bench::learn`], GEPA through `bench/peers.py gepa`, keeps every
//! record in `records.jsonl` (a stopped benchmark resumes) and writes the
//! report.

use std::path::Path;

use super::bench::{LearnArgs, append, bar, read_records};
use super::{Failure, Global};
use crate::bench::learn::{self, CountingProxy, LearnRecord, LearnSetup};
use crate::outer::OptimizerKind;

fn methods(text: &str) -> Result<Vec<OptimizerKind>, Failure> {
    use clap::ValueEnum as _;
    text.split(',')
        .map(|m| {
            OptimizerKind::from_str(m.trim(), true).map_err(|_| {
                Failure::input(format!(
                    "--methods {text:?}: unknown method `{}`; use baseline, evolve, textgrad, tree or screen, separated by commas",
                    m.trim()
                ))
            })
        })
        .collect()
}

pub async fn learn_bench(g: &Global, a: &LearnArgs) -> Result<u8, Failure> {
    let methods = methods(&a.methods)?;
    if !["gepa", "none"].contains(&a.peers.as_str()) {
        return Err(Failure::input(format!("--peers {:?}: use gepa or none", a.peers)));
    }
    let suite = crate::suite::load(&a.suite).map_err(|e| Failure::input(e.to_string()))?;
    if std::env::var("ATTRACTOR_LLM_MODEL").map_or(true, |m| m.trim().is_empty()) {
        return Err(Failure::input(
            "bench learn needs a model: set ATTRACTOR_LLM_BASE_URL and ATTRACTOR_LLM_MODEL\n  hint: `eval \"$(scripts/local-llm.sh start)\"` serves a small one on this machine"
                .to_string(),
        ));
    }
    let model = crate::llm::LlmConfig::from_env().map_err(|e| Failure::input(e.to_string()))?;
    std::fs::create_dir_all(&a.out).map_err(|e| Failure::runtime(format!("cannot create {}: {e}", a.out.display())))?;
    let work = std::fs::canonicalize(&a.out).map_err(|e| Failure::runtime(e.to_string()))?;
    let records_path = work.join("records.jsonl");
    if a.fresh {
        let _ = std::fs::remove_file(&records_path);
    }
    let mut records: Vec<LearnRecord> = read_records(&records_path);
    let proxy = CountingProxy::start(&model.base_url).await.map_err(|e| Failure::runtime(e.to_string()))?;
    let suite_path =
        std::fs::canonicalize(&a.suite).map_err(|e| Failure::input(format!("{}: {e}", a.suite.display())))?;
    let setup = LearnSetup { work: &work, suite: &suite_path, epochs: a.epochs, model: &model, proxy: &proxy };
    let progress = bar(!g.quiet, methods.len() as u64 * a.seeds, "learn");
    for method in &methods {
        for seed in 1..=a.seeds {
            progress.set_message(format!("{} seed {seed}", method.name()));
            let done = records.iter().any(|r| r.method == method.name() && r.seed == seed && r.planned == a.epochs);
            if !done {
                let r = learn::method_run(&setup, *method, seed)
                    .await
                    .map_err(|e| Failure::runtime(format!("{} seed {seed}: {e}", method.name())))?;
                append(&records_path, &r)?;
                records.push(r);
            }
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    if a.peers == "gepa" {
        let ours: Vec<&LearnRecord> = records.iter().filter(|r| r.method != "gepa").collect();
        let budget = a.gepa_calls.unwrap_or_else(|| most_calls(&ours));
        for seed in 1..=a.seeds {
            if !records.iter().any(|r| r.method == "gepa" && r.seed == seed) {
                run_gepa(a, &suite_path, &proxy, &model, seed, budget, &records_path, !g.quiet).await?;
            }
        }
        records = read_records(&records_path);
    }
    let report = learn::report(&suite.name, a.epochs, &records);
    let path = work.join("report.md");
    std::fs::write(&path, &report).map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))?;
    if g.json {
        println!("{}", serde_json::json!({ "records": records }));
    } else {
        println!("{report}\nreport: {}\nrecords: {}", path.display(), records_path.display());
    }
    Ok(0)
}

/// The largest mean count of calls among our methods: GEPA's budget, so it
/// is never given fewer calls than the method it is compared with.
fn most_calls(records: &[&LearnRecord]) -> u64 {
    let mut by_method: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    for r in records {
        by_method.entry(&r.method).or_default().push(r.calls() as f64);
    }
    by_method.values().filter_map(|v| crate::loss::mean(v)).fold(0.0_f64, f64::max).ceil().max(10.0) as u64
}

#[allow(clippy::too_many_arguments)]
async fn run_gepa(
    a: &LearnArgs,
    suite: &Path,
    proxy: &CountingProxy,
    model: &crate::llm::LlmConfig,
    seed: u64,
    budget: u64,
    records: &Path,
    show: bool,
) -> Result<(), Failure> {
    let script = a.bench_dir.join("peers.py");
    let setup = a.bench_dir.join("setup-peers.sh");
    if !script.is_file() || !setup.is_file() {
        return Err(Failure::input(format!(
            "no {} or {}\n  hint: run from the repository root, pass --bench-dir, or skip GEPA with --peers none",
            script.display(),
            setup.display()
        )));
    }
    let setup_out = tokio::process::Command::new("bash")
        .arg(&setup)
        .stderr(std::process::Stdio::inherit())
        .output()
        .await
        .map_err(|e| Failure::runtime(format!("cannot run {}: {e}", setup.display())))?;
    let python = String::from_utf8_lossy(&setup_out.stdout).lines().last().unwrap_or("").trim().to_string();
    if !setup_out.status.success() || python.is_empty() {
        return Err(Failure::runtime(format!(
            "{} failed ({})\n  hint: it installs the peers from PyPI; or skip GEPA with --peers none",
            setup.display(),
            setup_out.status
        )));
    }
    if show {
        eprintln!("gepa seed {seed}: {budget} task calls");
    }
    // The harness's calls and GEPA's go through the counting proxy; GEPA
    // counts its own too, and the record states both. (Awaited, not
    // blocking: the proxy answers on this runtime.)
    let status = tokio::process::Command::new(&python)
        .arg(&script)
        .arg("gepa")
        .arg("--suite")
        .arg(suite)
        .arg("--base-url")
        .arg(&proxy.base_url)
        .arg("--model")
        .arg(&model.model)
        .arg("--seed")
        .arg(seed.to_string())
        .arg("--budget")
        .arg(budget.to_string())
        .arg("--out")
        .arg(records)
        .status()
        .await
        .map_err(|e| Failure::runtime(format!("cannot run {python} {}: {e}", script.display())))?;
    if !status.success() {
        return Err(Failure::runtime(format!(
            "GEPA seed {seed} failed ({status}); the records so far are in {}\n  hint: rerun to resume",
            records.display()
        )));
    }
    Ok(())
}
