//! The `textgrad` optimizer against a scripted OpenAI-compatible server, on
//! real command tasks: the argmax is applied, every rejection rule drops its
//! reply, a regression rolls back and skips the optimizer, the held-out gate
//! blocks an overfitting update, and held-out tasks never reach a request.

mod common;

use std::time::Duration;

use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::llm::{LlmClient, LlmConfig, ModelPrice};
use attractor::outer::{OptimizerKind, RunConfig};
use attractor::store::CallsOf;
use common::{Env, count};
use serde_json::{Value, json};

/// Scores the `style` text artifact. Training tasks like "GOOD" and dislike
/// "BAD"; the held-out task is hurt by "GOOD" (an update that overfits).
const SCORER: &str = r#"
import json, os, sys
text = open(os.path.join(os.environ["ATTRACTOR_ARTIFACTS_DIR"], "style.txt")).read()
if sys.argv[1] == "train":
    score = 1.0 if "GOOD" in text else (0.1 if "BAD" in text else 0.5)
else:
    score = 0.1 if "GOOD" in text else 0.6
json.dump({"status": "complete", "eval_score": score, "critique_score": 1.0,
           "gate_rejection_count": 0, "budget_remaining_pct": 100},
          open(os.environ["ATTRACTOR_RESULT_FILE"], "w"))
"#;

fn suite(env: &Env, with_holdout: bool) -> std::path::PathBuf {
    std::fs::write(env.path("score.py"), SCORER).unwrap();
    let holdout = if with_holdout {
        r#"
  - name: secret_holdout_case
    task: "HOLDOUT-SENTINEL: the expected answer is 42"
    holdout: true
    command: python3 "$ATTRACTOR_SUITE_DIR/score.py" holdout"#
    } else {
        ""
    };
    env.suite(
        "style.yaml",
        &format!(
            r#"
name: style
artifacts:
  - name: style
    type: text
    content: "plain"
  - name: tone
    type: text
    content: "neutral"
  - name: knob
    type: json
    content: {{ x: 1.0 }}
    fields:
      x: {{ min: 0, max: 10 }}
  - name: notes_a
    type: text
    content: "a"
  - name: notes_b
    type: text
    content: "b"
  - name: notes_c
    type: text
    content: "c"
  - name: notes_d
    type: text
    content: "d"
  - name: notes_e
    type: text
    content: "e"
tasks:
  - name: first
    command: python3 "$ATTRACTOR_SUITE_DIR/score.py" train
  - name: second
    command: python3 "$ATTRACTOR_SUITE_DIR/score.py" train{holdout}
"#
        ),
    )
}

fn client(server: &ScriptedServer) -> LlmClient {
    let config = LlmConfig::new(server.base_url(), "textgrad-test")
        .with_retries(0, Duration::from_millis(10))
        .with_timeout(Duration::from_secs(5))
        .with_cache(false);
    LlmClient::new(config).unwrap()
}

fn config(env: &Env, epochs: u32) -> RunConfig {
    RunConfig { learning_rate: 0.4, ..env.config(epochs, OptimizerKind::Textgrad) }
}

/// The artifacts textgrad will consider, in the order it calls about them.
async fn candidates(env: &Env, suite_path: &std::path::Path) -> Vec<(String, String)> {
    let suite = attractor::suite::load(suite_path).unwrap();
    let mut registry = env.registry().await;
    for def in suite.artifacts.clone() {
        registry.declare(def).await.unwrap();
    }
    let mut out = Vec::new();
    // Built-in artifacts steer agent and optimize tasks, not these command tasks.
    let mut names: Vec<String> =
        registry.defs_for_suite("style").filter(|d| d.steers_any(&["command"])).map(|d| d.name.clone()).collect();
    names.sort();
    for n in names {
        let content = registry.get_active(&n).await.unwrap().content;
        out.push((n, content));
    }
    out
}

fn proposal(name: &str, content: &str, reduction: f64, confidence: f64) -> Scripted {
    Scripted::json(&json!({
        "artifact": name, "proposed_content": content, "rationale": format!("edit {name}"),
        "expected_loss_reduction": reduction, "confidence": confidence,
    }))
}

fn no_change() -> Scripted {
    Scripted::json(&json!({ "artifact": "", "proposed_content": "", "rationale": "nothing to change",
        "expected_loss_reduction": 0.0, "confidence": 0.0 }))
}

async fn proposals(env: &Env) -> Vec<Value> {
    let s = env.store.suite_by_name("style").await.unwrap().unwrap();
    env.store.proposals(s.id).await.unwrap().into_iter().map(|p| serde_json::to_value(p).unwrap()).collect()
}

#[tokio::test]
async fn textgrad_applies_the_proposal_with_the_largest_expected_reduction_times_confidence() {
    let env = Env::new().await;
    let path = suite(&env, false);
    let script: Vec<Scripted> = candidates(&env, &path)
        .await
        .iter()
        .map(|(name, _)| match name.as_str() {
            // 0.3 × 0.9 = 0.27 beats 0.5 × 0.5 = 0.25 although its reduction is smaller.
            "style" => proposal("style", "GOOD and plain", 0.3, 0.9),
            "tone" => proposal("tone", "warm", 0.5, 0.5),
            _ => no_change(),
        })
        .collect();
    let calls = script.len();
    let server = ScriptedServer::start(script).await.unwrap();
    let summary = env.run_with_model(&path, config(&env, 1), client(&server)).await.unwrap();

    assert_eq!(server.requests().len(), calls, "one call per candidate artifact");
    for r in server.requests() {
        let user = &r.messages()[1].1;
        assert!(
            !user.contains("Artifact `supervisor_prompt`"),
            "built-ins that steer no command task are not candidates"
        );
    }
    let update = ev(&summary.epochs[0].events[0]);
    assert_eq!(update["type"], "update");
    assert_eq!(update["artifact"], "style");
    assert_eq!(update["to_version"], 1);
    // One epoch: the update is written, and the run ends on what it measured
    // (v0), the update pending for the next run.
    assert_eq!(env.registry().await.get("style", 1).await.unwrap().content, "GOOD and plain");
    assert_eq!(env.registry().await.get_active("style").await.unwrap().version, 0);
    let moved = &summary.settled.as_ref().expect("the run settled").moved;
    assert_eq!((moved[0].artifact.as_str(), moved[0].from_version, moved[0].from_mean_loss), ("style", 1, None));
    assert_eq!(env.registry().await.get_active("tone").await.unwrap().version, 0);

    let rows = proposals(&env).await;
    assert_eq!(rows.len(), calls, "every proposal is stored, winner or not");
    assert_eq!(rows[0]["outcome"], "winner");
    assert_eq!(rows[0]["artifact"], "style");
    assert_eq!(rows[0]["applied_version"], 1);
    assert_eq!(rows[0]["confidence"], 0.9);
    let losers: Vec<&Value> = rows.iter().filter(|r| r["outcome"] == "candidate").collect();
    assert_eq!(losers.len(), 1);
    assert_eq!(losers[0]["artifact"], "tone");
    assert_eq!(rows.iter().filter(|r| r["outcome"] == "rejected").count(), calls - 2);

    // The learning rate and the evidence reach the model verbatim.
    let style_request = server.requests().into_iter().find(|r| r.messages()[1].1.contains("Artifact `style`")).unwrap();
    let user = &style_request.messages()[1].1;
    assert!(user.contains("Learning rate: 0.4"), "{user}");
    assert!(user.contains("- first: loss") && user.contains("- second: loss"), "{user}");
    assert!(user.contains("<<<\nplain\n>>>"), "{user}");
    assert_eq!(style_request.messages()[0].1, attractor::outer::textgrad::SYSTEM_PROMPT);
}

#[tokio::test]
async fn every_rejection_rule_drops_its_reply_and_leaves_a_no_op_epoch() {
    let env = Env::new().await;
    let path = suite(&env, false);
    let cands = candidates(&env, &path).await;
    let mut expected = Vec::new();
    let mut script = Vec::new();
    for (i, (name, content)) in cands.iter().enumerate() {
        let (steps, reason): (Vec<Scripted>, &str) = match (name.as_str(), i % 7) {
            ("knob", _) => (vec![proposal(name, r#"{"x": 5000}"#, 0.9, 0.9)], "invalid settings"),
            (_, 0) => (vec![no_change()], "proposed no change"),
            (_, 1) => (vec![proposal("no_such_artifact", "x", 0.9, 0.9)], "unknown artifact"),
            // Told once that it handed back the current text, it does so again.
            (_, 2) => (
                vec![proposal(name, content, 0.9, 0.9), proposal(name, content, 0.9, 0.9)],
                "identical to the current version",
            ),
            (_, 3) => (vec![proposal(name, &"y".repeat(20_001), 0.9, 0.9)], "over the limit of 20000"),
            // Garbage twice: the client's correction round fails too.
            (_, 4) => (vec![Scripted::reply("no JSON here"), Scripted::reply("still none")], "unusable reply"),
            (_, 5) => (vec![Scripted::bad_request("model not found")], "the call failed"),
            _ => (vec![proposal(name, "   ", 0.9, 0.9)], "content is empty"),
        };
        script.extend(steps);
        expected.push((name.clone(), reason));
    }
    let server = ScriptedServer::start(script).await.unwrap();
    let summary = env.run_with_model(&path, config(&env, 1), client(&server)).await.unwrap();
    assert!(summary.epochs[0].events.is_empty(), "no proposal survived: a no-op epoch");
    // The epoch says why, and what the calls cost, every reply counted.
    let note = summary.epochs[0].note.clone().expect("a no-op epoch says why");
    assert!(note.starts_with("textgrad: no usable proposal — "), "{note}");
    assert!(note.contains("× unusable reply: it contains no JSON object"), "{note}");
    let model = summary.epochs[0].model.expect("the optimizer's calls are accounted");
    assert_eq!(model.calls, server.requests().len() as u64);
    assert!(model.prompt_tokens > 0 && model.completion_tokens > 0, "{model:?}");
    let epoch = env.store.epochs(summary.suite_id).await.unwrap().remove(0);
    let child: Value = serde_json::from_str(epoch.child_artifacts_json.as_deref().unwrap()).unwrap();
    assert_eq!(child["note"], note.as_str(), "the epoch record holds the same reason");
    assert_eq!(child["model"]["calls"], model.calls);
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM artifact_versions").await, 0);

    let rows = proposals(&env).await;
    assert_eq!(rows.len(), expected.len());
    for (name, reason) in &expected {
        let row = rows
            .iter()
            .find(|r| {
                r["outcome"] == "rejected"
                    && r["parent_version"] == 0
                    && r["rejection"].as_str().unwrap_or_default().contains(reason)
                    && (r["artifact"] == name.as_str() || *reason == "unknown artifact")
            })
            .unwrap_or_else(|| panic!("no rejection `{reason}` for `{name}` in {rows:#?}"));
        assert!(row["applied_version"].is_null());
    }
}

#[tokio::test]
async fn a_proposer_that_hands_back_the_current_text_is_told_so_once_and_its_second_reply_is_used() {
    let env = Env::new().await;
    let path = suite(&env, false);
    let cands = candidates(&env, &path).await;
    let mut script = Vec::new();
    for (name, content) in &cands {
        if name == "style" {
            // The current text, then — told so — a change.
            script.push(proposal(name, content, 0.3, 0.9));
            script.push(proposal(name, "GOOD and plain", 0.3, 0.9));
        } else {
            script.push(no_change());
        }
    }
    let calls = script.len();
    let server = ScriptedServer::start(script).await.unwrap();
    let summary = env.run_with_model(&path, config(&env, 1), client(&server)).await.unwrap();
    assert_eq!(server.requests().len(), calls, "one more call, for the artifact whose reply was unchanged");
    let update = ev(&summary.epochs[0].events[0]);
    assert_eq!((update["type"].as_str(), update["artifact"].as_str()), (Some("update"), Some("style")));
    assert_eq!(env.registry().await.get("style", 1).await.unwrap().content, "GOOD and plain");
    // The second request carries the first reply and what was wrong with it.
    let again = server.requests().into_iter().find(|r| r.messages().len() == 4).expect("a follow-up request");
    let m = again.messages();
    assert!(m[1].1.contains("Artifact `style`"), "{m:?}");
    assert!(m[2].1.contains("plain"), "the model's own reply comes back to it: {m:?}");
    assert!(m[3].1.starts_with("That is the current content, unchanged."), "{m:?}");
    // Artifacts whose reply was no change at all are not asked again.
    assert_eq!(server.requests().iter().filter(|r| r.messages().len() == 4).count(), 1);
}

#[tokio::test]
async fn a_regression_rolls_back_halves_the_rate_skips_the_optimizer_and_is_remembered() {
    let env = Env::new().await;
    let path = suite(&env, false);
    let cands = candidates(&env, &path).await;
    let per_epoch = cands.len();
    // Epoch 1 proposes a change that makes things worse; epoch 2 rolls it
    // back without asking; epoch 3 asks again.
    let mut script: Vec<Scripted> = cands
        .iter()
        .map(|(n, _)| if n == "style" { proposal("style", "BAD", 0.2, 0.8) } else { no_change() })
        .collect();
    script.extend(cands.iter().map(|_| no_change()));
    let server = ScriptedServer::start(script).await.unwrap();
    let summary = env.run_with_model(&path, config(&env, 3), client(&server)).await.unwrap();

    let e2 = &summary.epochs[1];
    assert_eq!(ev(&e2.events[0])["type"], "rollback");
    assert_eq!(ev(&e2.events[0])["reason"], "training");
    assert_eq!(e2.learning_rate, 0.2, "η halves after a rollback");
    assert_eq!(env.registry().await.get_active("style").await.unwrap().version, 0);
    assert_eq!(server.requests().len(), 2 * per_epoch, "the rollback epoch makes no proposal calls");

    // The winner's row learned what it did, and the next call about the
    // artifact carries that history.
    let rows = proposals(&env).await;
    let winner = rows.iter().find(|r| r["outcome"] == "winner").unwrap();
    assert_eq!(winner["rolled_back"], true);
    let observed = winner["observed_loss_reduction"].as_f64().unwrap();
    assert!(observed < 0.0, "BAD made the loss worse: {observed}");
    let third =
        server.requests().into_iter().skip(per_epoch).find(|r| r.messages()[1].1.contains("Artifact `style`")).unwrap();
    let user = &third.messages()[1].1;
    assert!(user.contains("Earlier changes to this artifact"), "{user}");
    assert!(user.contains("predicted reduction +0.2000") && user.contains("rolled back"), "{user}");
    assert!(user.contains(&format!("observed {observed:+.4}")), "{user}");
}

#[tokio::test]
async fn a_proposal_that_repeats_a_measured_version_is_rejected_not_measured_again() {
    let env = Env::new().await;
    let path = suite(&env, false);
    let cands = candidates(&env, &path).await;
    // Epoch 1 proposes BAD (measured in epoch 2, rolled back); epoch 3
    // proposes it again, laid out otherwise.
    let mut script: Vec<Scripted> = cands
        .iter()
        .map(|(n, _)| if n == "style" { proposal("style", "BAD", 0.2, 0.8) } else { no_change() })
        .collect();
    script.extend(
        cands.iter().map(|(n, _)| if n == "style" { proposal("style", "  BAD\n", 0.3, 0.9) } else { no_change() }),
    );
    script.extend(cands.iter().map(|_| no_change()));
    let server = ScriptedServer::start(script).await.unwrap();
    let summary = env.run_with_model(&path, config(&env, 4), client(&server)).await.unwrap();
    assert_eq!(ev(&summary.epochs[1].events[0])["type"], "rollback");
    assert!(summary.epochs[2].events.is_empty(), "nothing applied: {:?}", summary.epochs[2].events);
    let rows = proposals(&env).await;
    let repeat = rows
        .iter()
        .find(|r| r["rejection"].as_str().unwrap_or_default().contains("repeats a version this artifact already had"))
        .unwrap_or_else(|| panic!("no repeat rejection in {rows:#?}"));
    assert_eq!(repeat["artifact"], "style");
    assert_eq!(env.registry().await.history("style").await.unwrap().len(), 2, "no third version");
    // The next call about the artifact is told what was refused, and why.
    let last = server
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.messages()[1].1.contains("Artifact `style`"))
        .expect("a call about `style` in epoch 4");
    let user = &last.messages()[1].1;
    assert!(user.contains("refused before it ran: the proposed content repeats a version"), "{user}");
}

#[tokio::test]
async fn a_held_out_regression_blocks_the_update_and_held_out_text_never_reaches_the_model() {
    let env = Env::new().await;
    let path = suite(&env, true);
    let cands = candidates(&env, &path).await;
    let mut script: Vec<Scripted> = cands
        .iter()
        .map(|(n, _)| if n == "style" { proposal("style", "GOOD", 0.2, 0.8) } else { no_change() })
        .collect();
    script.extend(cands.iter().map(|_| no_change()));
    let server = ScriptedServer::start(script).await.unwrap();
    let summary = env.run_with_model(&path, config(&env, 3), client(&server)).await.unwrap();

    let (e1, e2) = (&summary.epochs[0], &summary.epochs[1]);
    assert_eq!(ev(&e1.events[0])["type"], "update");
    assert!(e2.mean_loss.unwrap() < e1.mean_loss.unwrap(), "training loss fell");
    assert!(e2.holdout_mean_loss.unwrap() > e1.holdout_mean_loss.unwrap() + 0.1, "held-out loss rose");
    assert_eq!(ev(&e2.events[0])["type"], "rollback");
    assert_eq!(ev(&e2.events[0])["reason"], "holdout");
    assert_eq!(env.registry().await.get_active("style").await.unwrap().version, 0);

    let requests = server.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        let body = r.json().to_string();
        for secret in ["secret_holdout_case", "HOLDOUT-SENTINEL", "42"] {
            assert!(!body.contains(secret), "held-out `{secret}` reached the model: {body}");
        }
    }
}

#[tokio::test]
async fn textgrad_without_a_model_is_refused_with_a_hint() {
    let env = Env::new().await;
    let path = suite(&env, false);
    let suite = attractor::suite::load(&path).unwrap();
    let (_tx, cancel) = tokio::sync::watch::channel(false);
    let bus = attractor::bus::Bus::new();
    let err = attractor::outer::SuiteRunner::new(
        env.store.clone(),
        env.registry().await,
        bus,
        suite,
        config(&env, 1),
        cancel,
    )
    .run()
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("needs a model") && err.contains("ATTRACTOR_LLM_MODEL"), "{err}");
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM epochs").await, 0, "nothing ran");
}

#[tokio::test]
async fn a_strategy_templates_proposal_with_a_misspelt_section_is_rejected() {
    let env = Env::new().await;
    std::fs::create_dir_all(env.path("ws")).unwrap();
    std::fs::write(env.path("ws/notes.txt"), "draft\n").unwrap();
    let path = env.suite(
        "agent.yaml",
        "name: style\ntasks:\n  - name: polish\n    kind: agent\n    task: Improve notes.txt.\n    workspace: ws\n    \
         overseers:\n      - { name: ok, kind: custom, command: \"true\" }\n",
    );
    // The agent task's iteration (execution, then intent verification), then
    // one proposal call per prompt artifact the agent task reads, by name.
    let mut script = vec![
        Scripted::json(&json!({"summary": "done", "edits": [{"path": "notes.txt", "content": "final\n"}]})),
        Scripted::json(&json!({"satisfied": true, "confidence": 0.9,
            "verdicts": [{"criterion": "notes improved", "verdict": "pass", "failure_class": null}]})),
    ];
    let registry = env.registry().await;
    let mut names: Vec<String> =
        registry.defs_for_suite("style").filter(|d| d.steers_any(&["agent"])).map(|d| d.name.clone()).collect();
    names.sort();
    assert!(names.iter().any(|n| n == "strategy_templates"), "{names:?}");
    for name in &names {
        script.push(if name == "strategy_templates" {
            proposal(name, "Frame: {description}\n\n[focused-repair]\nFix it.\n", 0.9, 0.9)
        } else {
            no_change()
        });
    }
    let server = ScriptedServer::start(script).await.unwrap();
    let summary = env.run_with_model(&path, config(&env, 1), client(&server)).await.unwrap();
    assert!(summary.epochs[0].events.is_empty(), "nothing was applied");
    let rows = proposals(&env).await;
    let row = rows.iter().find(|r| r["artifact"] == "strategy_templates").unwrap();
    assert_eq!(row["outcome"], "rejected");
    let why = row["rejection"].as_str().unwrap();
    assert!(why.contains("line 3") && why.contains("`[focused-repair]` is not a strategy"), "{why}");
}

/// A noisy harness: each task's n-th run adds the n-th jitter to a base
/// score ("plain" 0.5, "slightly" 0.52, "GOOD" 0.8), so the same artifact
/// scores differently from epoch to epoch.
const NOISY_SCORER: &str = r#"
import json, os, sys
text = open(os.path.join(os.environ["ATTRACTOR_ARTIFACTS_DIR"], "style.txt")).read()
base = 0.8 if "GOOD" in text else (0.52 if "slightly" in text else 0.5)
counter = os.path.join(os.environ["ATTRACTOR_SUITE_DIR"], "count_" + sys.argv[1])
n = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(n + 1))
jitter = [0.0, 0.15, -0.15][n % 3]
json.dump({"status": "complete", "eval_score": base + jitter, "critique_score": 1.0,
           "gate_rejection_count": 0, "budget_remaining_pct": 100},
          open(os.environ["ATTRACTOR_RESULT_FILE"], "w"))
"#;

fn noisy_suite(env: &Env) -> std::path::PathBuf {
    std::fs::write(env.path("noisy.py"), NOISY_SCORER).unwrap();
    env.suite(
        "noisy.yaml",
        r#"
name: style
noisy: true
artifacts:
  - name: style
    type: text
    content: "plain"
tasks:
  - name: first
    command: python3 "$ATTRACTOR_SUITE_DIR/noisy.py" first
  - name: second
    command: python3 "$ATTRACTOR_SUITE_DIR/noisy.py" second
"#,
    )
}

#[tokio::test]
async fn on_a_noisy_suite_an_improvement_inside_the_noise_is_rolled_back_after_the_repeats() {
    let env = Env::new().await;
    let path = noisy_suite(&env);
    // Epoch 1 proposes a change worth 0.02 of eval score (0.008 of loss);
    // epochs 2–4 evaluate it with jitter ±0.15: inside the noise.
    let server = ScriptedServer::start(vec![proposal("style", "slightly better", 0.1, 0.9)]).await.unwrap();
    let summary = env.run_with_model(&path, config(&env, 4), client(&server)).await.unwrap();

    assert_eq!(server.requests().len(), 1, "no proposal while verifying, none in the rollback epoch");
    let types: Vec<&str> = summary.epochs.iter().map(|e| e.events[0].kind()).collect();
    assert_eq!(types, vec!["update", "verify_sample", "verify_sample", "rollback"]);
    assert_eq!(ev(&summary.epochs[1].events[0])["of"], 3, "the suite's default: three evaluations");
    let rollback = ev(&summary.epochs[3].events[0]);
    assert_eq!(rollback["reason"], "noise", "{rollback}");
    assert_eq!(rollback["evaluations"], 3);
    // The decision compares the series' mean, not the last epoch alone.
    let series: Vec<f64> = summary.epochs[1..].iter().map(|e| e.mean_loss.unwrap()).collect();
    let mean = series.iter().sum::<f64>() / 3.0;
    assert!((rollback["mean_loss_current"].as_f64().unwrap() - mean).abs() < 1e-9, "{rollback}");
    assert!(mean < summary.epochs[0].mean_loss.unwrap(), "on average it was a little better…");
    assert!(rollback["noise"].as_f64().unwrap() > summary.epochs[0].mean_loss.unwrap() - mean, "…within the noise");
    assert_eq!(summary.epochs[3].learning_rate, 0.2, "a rollback halves η");
    assert_eq!(env.registry().await.get_active("style").await.unwrap().version, 0);

    let rows = proposals(&env).await;
    let winner = rows.iter().find(|r| r["outcome"] == "winner").unwrap();
    assert_eq!(winner["rolled_back"], true);
    let observed = winner["observed_loss_reduction"].as_f64().unwrap();
    assert!((observed - (summary.epochs[0].mean_loss.unwrap() - mean)).abs() < 1e-9, "observed over the series");
}

#[tokio::test]
async fn on_a_noisy_suite_an_improvement_beyond_the_noise_is_kept_and_the_flag_overrides_the_suite() {
    let env = Env::new().await;
    let path = noisy_suite(&env);
    let server =
        ScriptedServer::start(vec![proposal("style", "GOOD", 0.3, 0.9), no_change(), no_change()]).await.unwrap();
    // Two evaluations per decision instead of the suite's three.
    let cfg = RunConfig { verify_repeats: Some(2), ..config(&env, 4) };
    let summary = env.run_with_model(&path, cfg, client(&server)).await.unwrap();

    let types: Vec<&str> = summary.epochs.iter().map(|e| e.events.first().map_or("-", |v| v.kind())).collect();
    assert_eq!(types, vec!["update", "verify_sample", "verified", "-"]);
    let verified = ev(&summary.epochs[2].events[0]);
    assert_eq!(verified["evaluations"], 2);
    assert_eq!(verified["kept"], true);
    assert_eq!(env.registry().await.get_active("style").await.unwrap().content, "GOOD");
    // The optimizer asks again after the keep, and after the no-op epoch.
    assert_eq!(server.requests().len(), 3);
    assert_eq!(summary.epochs[3].learning_rate, 0.4, "no rollback, η unchanged");
}

/// Four tasks; `LOPSIDED` makes the first far better and the other three a
/// little worse, the same every time (no jitter): a mean gain well above the
/// evaluations' noise that one task carries.
const LOPSIDED_SCORER: &str = r#"
import json, os, sys
text = open(os.path.join(os.environ["ATTRACTOR_ARTIFACTS_DIR"], "style.txt")).read()
task = sys.argv[1]
if "LOPSIDED" in text:
    score = 1.0 if task == "a" else 0.45
elif "EVEN" in text:
    score = 0.6
else:
    score = 0.5
json.dump({"status": "complete", "eval_score": score, "critique_score": 1.0,
           "gate_rejection_count": 0, "budget_remaining_pct": 100},
          open(os.environ["ATTRACTOR_RESULT_FILE"], "w"))
"#;

fn lopsided_suite(env: &Env) -> std::path::PathBuf {
    std::fs::write(env.path("lopsided.py"), LOPSIDED_SCORER).unwrap();
    let tasks: String = ["a", "b", "c", "d"]
        .iter()
        .map(|t| format!("  - name: {t}\n    command: python3 \"$ATTRACTOR_SUITE_DIR/lopsided.py\" {t}\n"))
        .collect();
    env.suite(
        "lopsided.yaml",
        &format!("name: style\nnoisy: true\nartifacts:\n  - name: style\n    type: text\n    content: \"plain\"\ntasks:\n{tasks}"),
    )
}

#[tokio::test]
async fn on_a_noisy_suite_a_gain_one_task_carries_while_the_others_lose_is_rolled_back_on_the_paired_evidence() {
    let env = Env::new().await;
    let path = lopsided_suite(&env);
    let server = ScriptedServer::start(vec![proposal("style", "LOPSIDED", 0.3, 0.9)]).await.unwrap();
    let cfg = RunConfig { verify_repeats: Some(2), ..config(&env, 3) };
    let summary = env.run_with_model(&path, cfg, client(&server)).await.unwrap();

    let types: Vec<&str> = summary.epochs.iter().map(|e| e.events[0].kind()).collect();
    assert_eq!(types, vec!["update", "verify_sample", "rollback"]);
    let rollback = ev(&summary.epochs[2].events[0]);
    // On the means alone it is better beyond the noise (there is none)…
    let gain = summary.epochs[0].mean_loss.unwrap() - rollback["mean_loss_current"].as_f64().unwrap();
    assert!(gain > 0.01, "the mean went down: {rollback}");
    // …but task by task one pair is better and three are worse: the
    // interval of the paired gain reaches below 0, so it does not count.
    assert_eq!(rollback["reason"], "noise", "{rollback}");
    let paired = &rollback["paired"];
    assert_eq!(
        (paired["pairs"].as_u64(), paired["better"].as_u64(), paired["worse"].as_u64()),
        (Some(4), Some(1), Some(3)),
        "{paired}"
    );
    assert!(paired["low"].as_f64().unwrap() < 0.0 && paired["high"].as_f64().unwrap() > 0.0, "{paired}");
    assert_eq!(env.registry().await.get_active("style").await.unwrap().version, 0);
    // The proposals table keeps what the decision saw.
    let rows = proposals(&env).await;
    let winner = rows.iter().find(|r| r["outcome"] == "winner").unwrap();
    assert_eq!(winner["rolled_back"], true);
    let decision: Value = winner["decision"].clone();
    assert_eq!(&decision, paired);
    // `attractor proposals` says it in words.
    let listing = common::cli::Cli::at(&env.db).ok(&["proposals", "style"]);
    assert!(listing.contains("rolled back, judged on 1 of 4 pairs better, 3 worse; gain"), "{listing}");
    assert!(listing.contains("95% interval") && listing.contains("sign test p = 0.62"), "{listing}");
}

#[tokio::test]
async fn on_a_noisy_suite_a_gain_every_task_shares_is_kept_with_its_evidence() {
    let env = Env::new().await;
    let path = lopsided_suite(&env);
    let server = ScriptedServer::start(vec![proposal("style", "EVEN", 0.3, 0.9), no_change()]).await.unwrap();
    let cfg = RunConfig { verify_repeats: Some(2), ..config(&env, 3) };
    let summary = env.run_with_model(&path, cfg, client(&server)).await.unwrap();

    let verified = ev(&summary.epochs[2].events[0]);
    assert_eq!(verified["type"], "verified", "{verified}");
    assert_eq!(verified["kept"], true);
    let paired = &verified["paired"];
    assert_eq!(
        (paired["pairs"].as_u64(), paired["better"].as_u64(), paired["worse"].as_u64()),
        (Some(4), Some(4), Some(0)),
        "{paired}"
    );
    assert!(paired["low"].as_f64().unwrap() > 0.0, "{paired}");
    assert!(paired["sign_p"].as_f64().unwrap() < 0.2, "{paired}");
    assert_eq!(env.registry().await.get_active("style").await.unwrap().content, "EVEN");
    let rows = proposals(&env).await;
    let winner = rows.iter().find(|r| r["outcome"] == "winner" && r["rolled_back"] == false).unwrap();
    assert_eq!(winner["decision"]["better"], 4, "{winner}");
}

/// A labelling harness over a small dataset, scoring each message and
/// listing it in `examples`: the seed prompt labels the first three training
/// messages right and the rest `bug`; a prompt that says `DEFINE` labels
/// them all right. The held-out task's messages must never reach a model.
const DATASET_SCORER: &str = r#"
import json, os, sys
text = open(os.path.join(os.environ["ATTRACTOR_ARTIFACTS_DIR"], "style.txt")).read()
split = sys.argv[1]
data = {
    "train": [("t%d" % i, "message %d about money" % i, "billing") for i in range(1, 7)],
    "held": [("h%d" % i, "SECRET-HELD-INPUT-%d" % i, "billing") for i in range(1, 5)],
}[split]
examples = []
for n, (id, message, label) in enumerate(data):
    said = label if ("DEFINE" in text or n < 3) else "bug"
    examples.append({"id": id, "input": message, "expected": label, "output": said,
                     "score": 1.0 if said == label else 0.0,
                     "feedback": None if said == label else "labelled %s, expected %s" % (said, label)})
score = sum(e["score"] for e in examples) / len(examples)
json.dump({"status": "complete", "eval_score": score, "critique_score": 1.0,
           "gate_rejection_count": 0, "budget_remaining_pct": 100, "examples": examples},
          open(os.environ["ATTRACTOR_RESULT_FILE"], "w"))
"#;

fn dataset_suite(env: &Env) -> std::path::PathBuf {
    std::fs::write(env.path("dataset.py"), DATASET_SCORER).unwrap();
    env.suite(
        "dataset.yaml",
        r#"
name: style
artifacts:
  - name: style
    type: text
    content: "plain"
tasks:
  - name: train
    command: python3 "$ATTRACTOR_SUITE_DIR/dataset.py" train
  - name: held
    holdout: true
    command: python3 "$ATTRACTOR_SUITE_DIR/dataset.py" held
"#,
    )
}

#[tokio::test]
async fn the_proposer_sees_the_training_examples_it_got_wrong_and_never_a_held_out_one() {
    let env = Env::new().await;
    let path = dataset_suite(&env);
    let server =
        ScriptedServer::start(vec![proposal("style", "DEFINE each label", 0.3, 0.9), no_change()]).await.unwrap();
    let summary = env.run_with_model(&path, config(&env, 2), client(&server)).await.unwrap();

    let first = &server.requests()[0].body;
    assert!(first.contains("Examples it got wrong (3 shown of 6 scored, worst first)"), "{first}");
    assert!(
        first.contains("[t4] score 0.00; input: message 4 about money; expected: billing; output: bug; feedback: labelled bug, expected billing"),
        "{first}"
    );
    assert!(!first.contains("[t1]"), "a right answer is not shown as wrong");
    assert!(!first.contains("SECRET-HELD") && !first.contains("[h1]"), "held-out examples reach no optimizer");
    // Once every example is right, none is shown.
    let second = &server.requests()[1].body;
    assert!(!second.contains("Examples it got wrong"), "{second}");

    // The decision about the update paired the six training examples one by
    // one (not the one task): three went right, three stayed right.
    let rows = proposals(&env).await;
    let winner = rows.iter().find(|r| r["outcome"] == "winner" && r["epoch_id"] == summary.epochs[0].epoch_id).unwrap();
    let decision: Value = winner["decision"].clone();
    assert_eq!(
        (
            decision["pairs"].as_u64(),
            decision["better"].as_u64(),
            decision["worse"].as_u64(),
            decision["tied"].as_u64()
        ),
        (Some(6), Some(3), Some(0), Some(3)),
        "{decision}"
    );
    assert!((decision["mean_gain"].as_f64().unwrap() - 0.5).abs() < 1e-9, "{decision}");
    assert_eq!(env.registry().await.get_active("style").await.unwrap().content, "DEFINE each label");
}

#[tokio::test]
async fn on_a_noisy_suite_an_update_made_right_after_a_kept_one_is_recorded_with_its_version_and_verified_in_turn() {
    let env = Env::new().await;
    let path = noisy_suite(&env);
    // Epoch 3 keeps GOOD (beyond the noise) and the optimizer proposes again
    // in the same close: that second update must be judged like the first.
    let server = ScriptedServer::start(vec![
        proposal("style", "GOOD", 0.3, 0.9),
        proposal("style", "GOOD, said twice", 0.1, 0.9),
    ])
    .await
    .unwrap();
    let cfg = RunConfig { verify_repeats: Some(2), ..config(&env, 5) };
    let summary = env.run_with_model(&path, cfg, client(&server)).await.unwrap();

    let types: Vec<Vec<&str>> = summary.epochs.iter().map(|e| e.events.iter().map(|v| v.kind()).collect()).collect();
    assert_eq!(
        types,
        vec![
            vec!["update"],
            vec!["verify_sample"],
            vec!["verified", "update"],
            vec!["verify_sample"],
            vec!["rollback"]
        ]
    );
    let second = ev(&summary.epochs[2].events[1]);
    assert_eq!(second["to_version"], 2, "the update after the verified event knows its version: {second}");
    // Same base score as GOOD: within the noise, so it goes back to v1.
    assert_eq!(ev(&summary.epochs[4].events[0])["reason"], "noise");
    assert_eq!(ev(&summary.epochs[4].events[0])["to_version"], 1);
    assert_eq!(env.registry().await.get_active("style").await.unwrap().content, "GOOD");
}

#[tokio::test]
async fn a_silent_model_or_one_that_floods_its_replies_stops_the_run_with_the_reason_and_keeps_the_epoch_open() {
    // A model that never answers within the limit, and one whose every
    // reply is 5 MB: neither can teach anything, so the run stops at the
    // first epoch's proposal with why, the epoch left open to resume.
    let silent = Scripted::delayed(Duration::from_secs(30), proposal("style", "GOOD", 0.5, 0.5));
    let flood = Scripted::reply(format!(r#"{{"artifact": "style", "proposed_content": "{}"}}"#, "x".repeat(5 << 20)));
    // The flood answers at once: its limit is generous, so a loaded machine
    // sending 5 MB slowly is not mistaken for a silent model.
    let cases = [
        (silent, Duration::from_millis(300), "did not answer within"),
        (flood, Duration::from_secs(60), "sent a reply larger than 262144 bytes"),
    ];
    for (step, timeout, says) in cases {
        let env = Env::new().await;
        let path = suite(&env, false);
        let server = ScriptedServer::start_repeating(vec![], step).await.unwrap();
        let model = LlmClient::new(
            LlmConfig::new(server.base_url(), "textgrad-test")
                .with_retries(1, Duration::from_millis(10))
                .with_timeout(timeout)
                .with_cache(false),
        )
        .unwrap();
        let err = env.run_with_model(&path, config(&env, 3), model).await.unwrap_err();
        let message = err.to_string();
        assert!(message.contains("textgrad could not use the model"), "{message}");
        assert!(message.contains(says), "{message}");
        assert!(message.contains("resumes the epoch"), "{message}");
        let suite_id = env.store.suite_by_name("style").await.unwrap().unwrap().id;
        let epochs = env.store.epochs(suite_id).await.unwrap();
        assert_eq!(epochs.len(), 1, "no epoch after the one that could not learn");
        assert!(epochs[0].completed_at.is_none(), "the epoch stays open for a resume");
        assert_eq!(count(&env.store, "SELECT COUNT(*) FROM llm_cache").await, 0);
        // Nothing of the flood was stored (on PostgreSQL: the run's rows hold
        // no more than a few kilobytes of reply text).
        let size = match env.store.backend() {
            attractor::store::Backend::Sqlite => std::fs::metadata(env.path("attractor.db")).unwrap().len(),
            attractor::store::Backend::Postgres => {
                let n = count(&env.store, "SELECT CAST(pg_database_size(current_database()) AS BIGINT)").await;
                u64::try_from(n).unwrap()
            }
        };
        assert!(size < 50 << 20, "database of {size} bytes");
    }
}

#[tokio::test]
async fn a_cost_budget_stops_the_run_cleanly_and_is_never_exceeded() {
    // Output at 1 per million tokens, input free: a proposal call's worst
    // case is its reply budget (~390 tokens here), its real cost the ~40
    // tokens of the reply. A budget of 0.0006 pays for a few calls of the
    // first epoch, then refuses one; the run ends there, cleanly.
    let env = Env::new().await;
    let path = suite(&env, false);
    let server = ScriptedServer::start_repeating(vec![], no_change()).await.unwrap();
    let mut config = LlmConfig::new(server.base_url(), "priced-model").with_retries(0, Duration::from_millis(10));
    config.prices.insert("priced-model".into(), ModelPrice { input_per_million: 0.0, output_per_million: 1.0 });
    config.max_cost = Some(0.0006);
    let model = LlmClient::new(config.with_cache(false)).unwrap();
    let summary = env.run_with_model(&path, self::config(&env, 4), model).await.unwrap();

    assert!(!summary.interrupted);
    assert!(summary.epochs.len() < 4, "the run stopped early: {} epoch(s)", summary.epochs.len());
    let stopped = summary.stopped.as_deref().unwrap_or_default();
    assert!(stopped.contains("the model budget is spent") && stopped.contains("max_cost 0.0006000"), "{stopped}");
    let spend: Vec<_> = summary.epochs.iter().filter_map(|e| e.model).collect();
    let calls: u64 = spend.iter().map(|m| m.calls).sum();
    let cost: f64 = spend.iter().map(|m| m.cost).sum();
    let completion: u64 = spend.iter().map(|m| m.completion_tokens).sum();
    assert!(calls >= 1);
    assert_eq!(server.requests().len() as u64, calls, "every call sent was counted, no refused call was sent");
    assert!(cost > 0.0 && cost <= 0.0006, "spent {cost}, never over the budget");
    assert!((cost - completion as f64 / 1e6).abs() < 1e-9, "output tokens at 1 per million: {cost} vs {completion}");
    let rejections: Vec<Value> = proposals(&env).await;
    assert!(
        rejections
            .iter()
            .any(|p| p["rejection"].as_str().is_some_and(|r| r.contains("model budget (max_cost 0.0006000) is spent"))),
        "the refused call is a stated rejection: {rejections:?}"
    );
    let suite_id = env.store.suite_by_name("style").await.unwrap().unwrap().id;
    let epochs = env.store.epochs(suite_id).await.unwrap();
    assert!(epochs.iter().all(|e| e.completed_at.is_some()), "every epoch that started is closed");

    // The ledger holds every call sent, each with its epoch and cost, and
    // sums to what the epochs recorded.
    let ledger = env.store.model_calls(CallsOf::Suite(suite_id)).await.unwrap();
    assert_eq!(ledger.len() as u64, calls);
    assert!(
        ledger.iter().all(|c| c.call.epoch_id.is_some() && c.call.run_id.is_none() && c.call.role == "proposer"),
        "{ledger:?}"
    );
    assert!(ledger.iter().all(|c| c.call.outcome == "ok" && c.call.cost.is_some_and(|x| x > 0.0)), "{ledger:?}");
    let suite_spend = env.store.model_spend(CallsOf::Suite(suite_id)).await.unwrap();
    assert_eq!((suite_spend.calls, suite_spend.completion_tokens), (calls, completion));
    assert!((suite_spend.cost - cost).abs() < 1e-12, "{} vs {cost}", suite_spend.cost);
    let first_epoch = env.store.model_spend(CallsOf::Epoch(epochs[0].id)).await.unwrap();
    assert_eq!(Some(first_epoch.calls), summary.epochs[0].model.map(|m| m.calls));
}

/// An epoch event as its stored JSON, for asserting on its fields.
fn ev(e: &attractor::domain::EpochEvent) -> serde_json::Value {
    serde_json::to_value(e).unwrap()
}
