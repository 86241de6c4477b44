//! The learning benchmark (`attractor bench learn`): does a method find a
//! better prompt for a real model, and at what count of model calls?
//!
//! Each method runs a text suite (by default the 60-message
//! `support-labels`) for the same number of epochs and seeds in a database
//! of its own; its run ends on its best measured versions, and one more
//! epoch under `baseline` then measures them — the held-out examples it was
//! never shown decide. Every model call is counted: the optimizer's by its
//! client, the tasks' own (the harness calls the model itself) by a counting
//! proxy on loopback that the harness is pointed at. Peers (GEPA) report the
//! same record through `bench/peers.py gepa`, so one table compares them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::outer::{BenchError, config, run_on};
use crate::artifact::Registry;
use crate::llm::{LlmClient, LlmConfig};
use crate::loss::paired::PairedEvidence;
use crate::outer::OptimizerKind;
use crate::store::Store;
use crate::suite::{Suite, TaskKind};

fn err(e: impl std::fmt::Display) -> BenchError {
    BenchError(e.to_string())
}

/// Right answers out of examples scored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    pub correct: u32,
    pub total: u32,
}

impl Accuracy {
    pub fn rate(self) -> Option<f64> {
        (self.total > 0).then(|| f64::from(self.correct) / f64::from(self.total))
    }
}

/// One method's run on one seed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LearnRecord {
    pub method: String,
    pub seed: u64,
    /// Epochs the method was given (a peer: 0).
    #[serde(default)]
    pub planned: u32,
    /// Epochs the method ran (the measurement epoch not counted).
    #[serde(default)]
    pub epochs: usize,
    /// The tasks' model calls during the method's run (screening included).
    pub task_calls: u64,
    /// The optimizer's own model calls.
    pub optimizer_calls: u64,
    pub training: Accuracy,
    pub holdout: Accuracy,
    /// Each held-out example (task and id) and whether it was right, so
    /// two methods compare example by example.
    pub holdout_examples: BTreeMap<String, bool>,
    /// The text of the prompt the method ended on.
    pub prompt: String,
    pub seconds: f64,
}

impl LearnRecord {
    pub fn calls(&self) -> u64 {
        self.task_calls + self.optimizer_calls
    }
}

/// A loopback HTTP proxy to the model server that counts chat calls: the
/// harness's calls, which no client of ours sees.
pub struct CountingProxy {
    /// What to give a harness as `ATTRACTOR_LLM_BASE_URL`.
    pub base_url: String,
    calls: Arc<AtomicU64>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

struct ProxyState {
    /// `scheme://host:port` of the model server.
    origin: String,
    http: reqwest::Client,
    calls: Arc<AtomicU64>,
}

/// Requests larger than this are refused: a harness's chat request is small.
const PROXY_BODY_MAX: usize = 16 << 20;

impl CountingProxy {
    /// Starts a proxy in front of `upstream` (an OpenAI-compatible base URL).
    pub async fn start(upstream: &str) -> Result<CountingProxy, BenchError> {
        let url = reqwest::Url::parse(upstream).map_err(|e| err(format!("model URL {upstream}: {e}")))?;
        let origin = url.origin().ascii_serialization();
        let calls = Arc::new(AtomicU64::new(0));
        // As the model client does: no redirects (a key must not follow one
        // to an address nobody configured), no HTTP proxy for a local server.
        let mut http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
        if crate::llm::is_loopback(&url) {
            http = http.no_proxy();
        }
        let http = http.build().map_err(err)?;
        let state = Arc::new(ProxyState { origin, http, calls: Arc::clone(&calls) });
        let app = axum::Router::new().fallback(forward).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(err)?;
        let addr = listener.local_addr().map_err(err)?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(CountingProxy {
            base_url: format!("http://{addr}{}", url.path().trim_end_matches('/')),
            calls,
            shutdown: Some(tx),
        })
    }

    /// Chat calls forwarded so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

async fn forward(
    axum::extract::State(state): axum::extract::State<Arc<ProxyState>>,
    request: axum::extract::Request,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, PROXY_BODY_MAX).await else {
        return (axum::http::StatusCode::PAYLOAD_TOO_LARGE, "request too large").into_response();
    };
    if parts.method == axum::http::Method::POST && parts.uri.path().ends_with("/chat/completions") {
        state.calls.fetch_add(1, Ordering::Relaxed);
    }
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut out = state.http.request(parts.method.clone(), format!("{}{path}", state.origin)).body(body);
    for name in [axum::http::header::CONTENT_TYPE, axum::http::header::AUTHORIZATION, axum::http::header::ACCEPT] {
        if let Some(v) = parts.headers.get(&name) {
            out = out.header(name, v);
        }
    }
    match out.send().await {
        Ok(reply) => {
            let status = reply.status();
            let kind = reply.headers().get(axum::http::header::CONTENT_TYPE).cloned();
            let bytes = reply.bytes().await.unwrap_or_default();
            let mut response = (status, bytes).into_response();
            if let Some(kind) = kind {
                response.headers_mut().insert(axum::http::header::CONTENT_TYPE, kind);
            }
            response
        }
        Err(e) => {
            (axum::http::StatusCode::BAD_GATEWAY, format!("the model server did not answer: {e}")).into_response()
        }
    }
}

/// What one benchmark run needs.
pub struct LearnSetup<'a> {
    pub work: &'a Path,
    pub suite: &'a Path,
    pub epochs: u32,
    pub model: &'a LlmConfig,
    pub proxy: &'a CountingProxy,
}

/// The suite with every command task pointed at the counting proxy.
fn load_counted(path: &Path, setup: &LearnSetup<'_>) -> Result<Suite, BenchError> {
    let mut suite = crate::suite::load(path).map_err(err)?;
    for t in &mut suite.tasks {
        if let TaskKind::Command(spec) = &mut t.kind {
            spec.env.insert("ATTRACTOR_LLM_BASE_URL".into(), setup.proxy.base_url.clone());
            spec.env.insert("ATTRACTOR_LLM_MODEL".into(), setup.model.model.clone());
        }
    }
    Ok(suite)
}

/// `method` for `setup.epochs` epochs on `seed`, then one measurement epoch.
pub async fn method_run(setup: &LearnSetup<'_>, method: OptimizerKind, seed: u64) -> Result<LearnRecord, BenchError> {
    let dir = setup.work.join(format!("{}-{seed}", method.name()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(err)?;
    let store = Store::open(&dir.join("attractor.db")).await.map_err(err)?;
    let started = Instant::now();
    // No response cache: every call the method makes reaches the model.
    let client = LlmClient::new(setup.model.clone().with_cache(false)).map_err(err)?;
    let usage = Arc::clone(client.usage());
    let before = setup.proxy.calls();
    // The tree search makes its children with textgrad when it has a model.
    let model = (method.needs_model() || method == OptimizerKind::Tree).then_some(client);
    // Loaded once: both runs and the accuracy read see the same suite.
    let suite = load_counted(setup.suite, setup)?;
    let summary = run_on(&store, suite.clone(), config(method, setup.epochs, seed, dir.join("runs")), model).await?;
    let task_calls = setup.proxy.calls() - before;
    let optimizer_calls = usage.snapshot().calls;
    let measured =
        run_on(&store, suite.clone(), config(OptimizerKind::Baseline, 1, seed, dir.join("runs")), None).await?;
    let epoch = measured.epochs.last().ok_or_else(|| err("the measurement epoch did not run"))?;
    let (training, holdout, holdout_examples) = accuracies(&store, &suite, epoch.epoch_id).await?;
    let prompt = active_prompt(&store, &suite).await?;
    store.close().await;
    Ok(LearnRecord {
        method: method.name().to_string(),
        seed,
        planned: setup.epochs,
        epochs: summary.epochs.len(),
        task_calls,
        optimizer_calls,
        training,
        holdout,
        holdout_examples,
        prompt,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Training and held-out accuracy of an epoch, from its runs' examples.
async fn accuracies(
    store: &Store,
    suite: &Suite,
    epoch_id: i64,
) -> Result<(Accuracy, Accuracy, BTreeMap<String, bool>), BenchError> {
    let mut training = Accuracy::default();
    let mut holdout = Accuracy::default();
    let mut held = BTreeMap::new();
    for r in store.runs_of_epoch(epoch_id).await.map_err(err)? {
        let Some(task) = suite.tasks.iter().find(|t| t.name == r.task_name) else {
            continue;
        };
        let side = if task.holdout { &mut holdout } else { &mut training };
        for e in r.result_json.as_deref().map(crate::task::command::examples_of).unwrap_or_default() {
            let right = e.score >= 1.0;
            side.total += 1;
            side.correct += u32::from(right);
            if task.holdout {
                held.insert(format!("{}/{}", r.task_name, e.id), right);
            }
        }
    }
    Ok((training, holdout, held))
}

/// The active content of the suite's first text artifact: the prompt learned.
async fn active_prompt(store: &Store, suite: &Suite) -> Result<String, BenchError> {
    let registry = Registry::load(store.clone()).await.map_err(err)?;
    match suite.artifacts.iter().find(|a| a.kind == crate::artifact::ArtifactKind::Text) {
        Some(def) => Ok(registry.get_active(&def.name).await.map_err(err)?.content),
        None => Ok(String::new()),
    }
}

/// Two-sided 95% Student t quantiles for 1…10 degrees of freedom.
const T95: [f64; 10] = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228];

/// The mean of `xs` with its 95% t interval (`None` with fewer than two values).
pub fn mean_interval(xs: &[f64]) -> Option<(f64, Option<(f64, f64)>)> {
    let mean = crate::loss::mean(xs)?;
    if xs.len() < 2 {
        return Some((mean, None));
    }
    let n = xs.len() as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let t = T95.get(xs.len() - 2).copied().unwrap_or(1.96);
    let half = t * (var / n).sqrt();
    Some((mean, Some((mean - half, mean + half))))
}

/// The held-out examples a method got right against the seed prompt's, one
/// pair per seed and example (a gain of 1, 0 or −1).
pub fn against_seed(records: &[&LearnRecord], seed_prompt: &BTreeMap<String, bool>) -> Option<PairedEvidence> {
    let mut gains = Vec::new();
    for r in records {
        for (id, right) in &r.holdout_examples {
            if let Some(before) = seed_prompt.get(id) {
                gains.push(f64::from(u8::from(*right)) - f64::from(u8::from(*before)));
            }
        }
    }
    // A gain in accuracy is a fall in loss: PairedEvidence pairs losses.
    PairedEvidence::of(&gains)
}

/// The report: one row per method, in the order first seen.
pub fn report(suite: &str, epochs: u32, records: &[LearnRecord]) -> String {
    use std::fmt::Write as _;
    let mut out = format!("## Learning on `{suite}`\n\n");
    let _ = writeln!(
        out,
        "Each method runs {epochs} epochs per seed and ends on its best measured prompt; one more epoch measures it. \
         Calls are model calls: the tasks' (screening included) and the optimizer's. Held-out accuracy is over the seeds, \
         with a 95% t interval; \"against the seed prompt\" pairs every held-out example of every seed with the seed \
         prompt's answer to it (95% bootstrap interval of the gain in accuracy).\n"
    );
    out.push_str(
        "| method | seeds | calls (tasks + optimizer), mean | training accuracy | held-out accuracy [95% interval] | against the seed prompt |\n",
    );
    out.push_str("|---|---|---|---|---|---|\n");
    let seed_prompt: BTreeMap<String, bool> =
        records.iter().find(|r| r.method == "baseline").map(|r| r.holdout_examples.clone()).unwrap_or_default();
    let mut methods: Vec<&str> = Vec::new();
    for r in records {
        if !methods.contains(&r.method.as_str()) {
            methods.push(&r.method);
        }
    }
    for m in methods {
        let rs: Vec<&LearnRecord> = records.iter().filter(|r| r.method == m).collect();
        let avg = |f: &dyn Fn(&LearnRecord) -> f64| crate::loss::mean(&rs.iter().map(|r| f(r)).collect::<Vec<_>>());
        let pct = |v: Option<f64>| v.map_or("–".into(), |x| format!("{:.1}%", 100.0 * x));
        let held: Vec<f64> = rs.iter().filter_map(|r| r.holdout.rate()).collect();
        let held_text = match mean_interval(&held) {
            // An accuracy lies in [0, 1]: the t interval is cut there.
            Some((m, Some((lo, hi)))) => {
                format!("{} [{} … {}]", pct(Some(m)), pct(Some(lo.max(0.0))), pct(Some(hi.min(1.0))))
            }
            Some((m, None)) => pct(Some(m)),
            None => "–".into(),
        };
        let versus = if m == "baseline" || seed_prompt.is_empty() {
            "–".to_string()
        } else {
            against_seed(&rs, &seed_prompt).map_or("–".into(), |e| {
                format!(
                    "{:+.1} points [{:+.1} … {:+.1}], {} better, {} worse",
                    100.0 * e.mean_gain,
                    100.0 * e.low,
                    100.0 * e.high,
                    e.better,
                    e.worse
                )
            })
        };
        let _ = writeln!(
            out,
            "| {m} | {} | {:.0} ({:.0} + {:.0}) | {} | {held_text} | {versus} |",
            rs.len(),
            avg(&|r| r.calls() as f64).unwrap_or(0.0),
            avg(&|r| r.task_calls as f64).unwrap_or(0.0),
            avg(&|r| r.optimizer_calls as f64).unwrap_or(0.0),
            pct(avg(&|r| r.training.rate().unwrap_or(0.0))),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mean_interval_widens_with_spread_and_needs_two_values() {
        assert_eq!(mean_interval(&[]), None);
        assert_eq!(mean_interval(&[0.5]), Some((0.5, None)));
        let (m, Some((lo, hi))) = mean_interval(&[0.4, 0.5, 0.6]).unwrap() else { panic!() };
        assert!((m - 0.5).abs() < 1e-12);
        // sd 0.1, n 3: 4.303 × 0.1 / √3 = 0.2484
        assert!((hi - m - 0.2484).abs() < 1e-3, "{lo} {hi}");
    }

    #[test]
    fn held_out_examples_pair_with_the_seed_prompts_answers() {
        let seed: BTreeMap<String, bool> =
            [("h/1", false), ("h/2", true), ("h/3", false)].map(|(k, v)| (k.to_string(), v)).into();
        let record = LearnRecord {
            method: "screen".into(),
            seed: 1,
            planned: 1,
            epochs: 1,
            task_calls: 0,
            optimizer_calls: 0,
            training: Accuracy::default(),
            holdout: Accuracy { correct: 2, total: 3 },
            holdout_examples: [("h/1", true), ("h/2", true), ("h/3", false)].map(|(k, v)| (k.to_string(), v)).into(),
            prompt: String::new(),
            seconds: 0.0,
        };
        let e = against_seed(&[&record], &seed).unwrap();
        assert_eq!((e.pairs, e.better, e.worse, e.tied), (3, 1, 0, 2));
    }
}
