//! The screening search (`--optimizer screen`) on real command tasks with a
//! scripted proposer: each round's candidates by different moves are run on a
//! minibatch of training examples before one is measured in full; the one
//! that beats the current version example by example is the update; a text
//! measured before — in this run or an earlier one — is never run again; held-out
//! examples never reach a minibatch or a request.

mod common;

use std::time::Duration;

use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::llm::{LlmClient, LlmConfig};
use attractor::outer::screen::{MEASURED_BEFORE, MINIBATCH, MODEL_CANDIDATES, ROUNDS, SCREENED_OUT};
use attractor::outer::{OptimizerKind, RunConfig};
use common::Env;
use serde_json::{Value, json};

/// A labelling harness that needs no model: a message is labelled right when
/// the prompt names its label's key word ("charges" for billing, "crash" for
/// bug). It honours `ATTRACTOR_EXAMPLE_IDS` and logs every example it labels,
/// marked `screen` when it was asked for a few.
const HARNESS: &str = r#"
import json, os, sys
split = sys.argv[1]
prompt = open(os.path.join(os.environ["ATTRACTOR_ARTIFACTS_DIR"], "triage.txt")).read()
labels = {"one": ["billing", "bug"] * 3, "two": ["bug", "billing"] * 3, "held": ["billing", "bug"]}[split]
wanted = set(os.environ.get("ATTRACTOR_EXAMPLE_IDS", "").splitlines())
key = {"billing": "charges", "bug": "crash"}
examples = []
for i, label in enumerate(labels, 1):
    ident = f"{split}-{i}"
    if wanted and ident not in wanted:
        continue
    right = key[label] in prompt
    text = f"HOLDOUT-SENTINEL message {ident}" if split == "held" else f"message {ident}"
    examples.append({"id": ident, "input": text, "expected": label,
                     "output": label if right else "other", "score": 1.0 if right else 0.0})
with open(os.path.join(os.environ["ATTRACTOR_SUITE_DIR"], "labelled.log"), "a") as log:
    for e in examples:
        log.write(("screen " if wanted else "full ") + e["id"] + "\n")
score = sum(e["score"] for e in examples) / max(len(examples), 1)
json.dump({"status": "complete", "eval_score": score, "critique_score": 1.0, "examples": examples},
          open(os.environ["ATTRACTOR_RESULT_FILE"], "w"))
"#;

const SEED_PROMPT: &str = "Label the message.";
const VAGUE: &str = "Label the message carefully.";
const HALF: &str = "Label the message. billing: charges.";
const BOTH: &str = "Label the message. billing: charges. bug: a crash.";

fn suite(env: &Env) -> std::path::PathBuf {
    std::fs::write(env.path("label.py"), HARNESS).unwrap();
    env.suite(
        "triage.yaml",
        &format!(
            r#"
name: triage
artifacts:
  - name: triage
    type: text
    content: "{SEED_PROMPT}"
tasks:
  - name: one
    command: python3 "$ATTRACTOR_SUITE_DIR/label.py" one
  - name: two
    command: python3 "$ATTRACTOR_SUITE_DIR/label.py" two
  - name: held
    holdout: true
    command: python3 "$ATTRACTOR_SUITE_DIR/label.py" held
"#
        ),
    )
}

fn client(server: &ScriptedServer) -> LlmClient {
    let config = LlmConfig::new(server.base_url(), "screen-test")
        .with_retries(0, Duration::from_millis(10))
        .with_timeout(Duration::from_secs(5))
        .with_cache(false);
    LlmClient::new(config).unwrap()
}

fn config(env: &Env, epochs: u32) -> RunConfig {
    RunConfig { learning_rate: 0.5, seed: 3, ..env.config(epochs, OptimizerKind::Screen) }
}

fn proposal(content: &str) -> Scripted {
    Scripted::json(&json!({
        "artifact": "triage", "proposed_content": content, "rationale": format!("try {content}"),
        "expected_loss_reduction": 0.1, "confidence": 0.5,
    }))
}

fn no_change() -> Scripted {
    Scripted::json(&json!({ "artifact": "", "proposed_content": "", "rationale": "nothing to change",
        "expected_loss_reduction": 0.0, "confidence": 0.0 }))
}

async fn proposals(env: &Env) -> Vec<Value> {
    let s = env.store.suite_by_name("triage").await.unwrap().unwrap();
    env.store.proposals(s.id).await.unwrap().into_iter().map(|p| serde_json::to_value(p).unwrap()).collect()
}

/// The log's lines, (kind, example id).
fn labelled(env: &Env) -> Vec<(String, String)> {
    std::fs::read_to_string(env.path("labelled.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let (kind, id) = l.split_once(' ').unwrap();
            (kind.to_string(), id.to_string())
        })
        .collect()
}

fn pairs(row: &Value) -> u64 {
    let decision: Value = row["decision"].clone();
    decision["pairs"].as_u64().unwrap()
}

#[tokio::test]
async fn candidates_by_different_moves_are_screened_on_a_minibatch_and_the_one_that_beats_the_current_version_is_measured_in_full()
 {
    let env = Env::new().await;
    let path = suite(&env);
    // Epoch 1's first round: a vague edit, the same edit again, a half fix, the fix.
    // Epoch 2 (the last) asks nothing: the fix gets every example right.
    let script = vec![proposal(VAGUE), proposal(VAGUE), proposal(HALF), proposal(BOTH)];
    let server = ScriptedServer::start(script).await.unwrap();
    let summary = env.run_with_model(&path, config(&env, 2), client(&server)).await.unwrap();
    assert_eq!(server.remaining(), 0, "every scripted reply was asked for");

    // The fix became version 1, was measured in full by epoch 2 and kept.
    let registry = env.registry().await;
    assert_eq!(registry.get("triage", 1).await.unwrap().content, BOTH);
    assert_eq!(registry.get_active("triage").await.unwrap().version, 1);
    assert_eq!(ev(&summary.epochs[0].events[0])["type"], "update");
    assert!(summary.epochs[1].mean_loss.unwrap() < summary.epochs[0].mean_loss.unwrap());
    let idle = summary.epochs[1].note.as_deref().unwrap_or_default();
    assert!(idle.contains("got every example of its 3 minibatches right"), "{idle}");

    let rows = proposals(&env).await;
    let epoch1: Vec<&Value> = rows.iter().filter(|r| r["epoch_num"] == 1).collect();
    let by = |content: &str| epoch1.iter().filter(|r| r["content"] == content).copied().collect::<Vec<_>>();
    let winner = by(BOTH);
    assert_eq!(winner.len(), 1);
    assert_eq!(winner[0]["outcome"], "winner");
    assert_eq!(winner[0]["optimizer"], "screen");
    let half = by(HALF);
    assert_eq!(half[0]["outcome"], "candidate", "better than the current version, but not the best: {half:?}");
    let vague = by(VAGUE);
    assert_eq!(vague.len(), 2);
    assert_eq!(vague[0]["rejection"], SCREENED_OUT);
    assert_eq!(vague[1]["rejection"], MEASURED_BEFORE, "the same text is not run twice in one step");
    assert!(vague[1]["decision"].is_null());
    let examples: Vec<&&Value> = epoch1
        .iter()
        .filter(|r| r["rationale"].as_str().is_some_and(|s| s.contains("labelled training examples appended")))
        .collect();
    assert_eq!(examples.len(), 1, "one worked-examples candidate per round: {epoch1:?}");
    assert!(examples[0]["content"].as_str().unwrap().contains("Examples:\n- \"message "));
    assert_eq!(examples[0]["rejection"], SCREENED_OUT, "its examples name no key word");
    // Every screened candidate was run on the minibatch, and only there.
    let screened: Vec<&Value> = rows.iter().filter(|r| !r["decision"].is_null()).collect();
    assert!(screened.len() >= 4, "{rows:?}");
    let log = labelled(&env);
    let screen_runs: Vec<&(String, String)> = log.iter().filter(|(k, _)| k == "screen").collect();
    // The winner's decision was restated on its full measurement (12 training examples).
    let full_pairs =
        |r: &&Value| if r["outcome"] == "winner" && r["epoch_num"] == 1 { MINIBATCH as u64 } else { pairs(r) };
    assert_eq!(screen_runs.len() as u64, screened.iter().map(full_pairs).sum::<u64>());
    assert_eq!(pairs(half[0]), MINIBATCH as u64);
    assert_eq!(pairs(winner[0]), 12, "the full measurement's pairs replace the minibatch's");
    assert_eq!(log.iter().filter(|(k, _)| k == "full").count(), 2 * 14, "two epochs of 12 training and 2 held-out");
    assert!(screen_runs.iter().all(|(_, id)| !id.starts_with("held")), "held-out examples are never screened on");
    for r in server.requests() {
        assert!(!r.messages()[1].1.contains("HOLDOUT-SENTINEL"), "held-out examples never reach the proposer");
    }
    // Different moves were asked for.
    let asked: std::collections::BTreeSet<String> = server
        .requests()
        .iter()
        .take(MODEL_CANDIDATES)
        .map(|r| {
            r.messages()[1]
                .1
                .rsplit("Make this kind of change — ")
                .next()
                .unwrap()
                .split(':')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(asked.len(), MODEL_CANDIDATES, "{asked:?}");
}

#[tokio::test]
async fn a_text_screened_in_an_earlier_run_is_not_run_again() {
    let env = Env::new().await;
    let path = suite(&env);
    // First run: one epoch, nothing beats the seed on any round.
    let mut script = vec![proposal(VAGUE)];
    script.extend((1..ROUNDS * MODEL_CANDIDATES).map(|_| no_change()));
    let server = ScriptedServer::start(script).await.unwrap();
    env.run_with_model(&path, config(&env, 1), client(&server)).await.unwrap();
    let screened_before = labelled(&env).iter().filter(|(k, _)| k == "screen").count();
    let rows = proposals(&env).await;
    assert_eq!(rows.iter().find(|r| r["content"] == VAGUE).unwrap()["rejection"], SCREENED_OUT);

    // Second run: the model proposes the same text (laid out otherwise) again.
    let mut script = vec![proposal("Label   the message\ncarefully.")];
    script.extend((1..ROUNDS * MODEL_CANDIDATES).map(|_| no_change()));
    let server = ScriptedServer::start(script).await.unwrap();
    env.run_with_model(&path, config(&env, 1), client(&server)).await.unwrap();
    let rows = proposals(&env).await;
    let again = rows.iter().find(|r| r["content"] == "Label   the message\ncarefully.").unwrap();
    assert!(again["rejection"].as_str().unwrap().contains("measured before"), "{again}");
    assert!(again["decision"].is_null(), "it was not screened again");
    // Only the new worked-examples draws were screened in the second run.
    let new_screens: u64 = rows.iter().filter(|r| r["epoch_num"] == 2 && !r["decision"].is_null()).map(pairs).sum();
    let screened_after = labelled(&env).iter().filter(|(k, _)| k == "screen").count();
    assert_eq!((screened_after - screened_before) as u64, new_screens);
}

/// An epoch event as its stored JSON, for asserting on its fields.
fn ev(e: &attractor::domain::EpochEvent) -> serde_json::Value {
    serde_json::to_value(e).unwrap()
}
