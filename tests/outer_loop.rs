//! The epoch loop on real command tasks: losses, the update/rollback log in
//! `child_artifacts_json`, learning-rate halving, held-out tasks, baseline
//! pins and resuming an interrupted epoch.

mod common;

use std::time::Duration;

use attractor::outer::OptimizerKind;
use attractor::store::ProposalOutcome;
use common::{Env, count};
use serde_json::Value;

/// A harness whose score depends only on the artifact: x = 5 is perfect,
/// anything else is worse. Every `evolve` move away from v0 is a regression.
const SCORER: &str = r#"
import json, os
x = json.load(open(os.path.join(os.environ["ATTRACTOR_ARTIFACTS_DIR"], "knob.json")))["x"]
result = {"status": "complete", "eval_score": 1 - abs(x - 5) / 5, "critique_score": 1.0,
          "gate_rejection_count": 0, "budget_remaining_pct": 100}
json.dump(result, open(os.environ["ATTRACTOR_RESULT_FILE"], "w"))
"#;

fn knob_suite(env: &Env, name: &str) -> std::path::PathBuf {
    std::fs::write(env.path("score.py"), SCORER).unwrap();
    env.suite(
        &format!("{name}.yaml"),
        &format!(
            r#"
name: {name}
artifacts:
  - name: knob
    type: json
    content: {{ x: 5.0 }}
    fields:
      x: {{ min: 0, max: 10 }}
tasks:
  - name: one
    command: python3 "$ATTRACTOR_SUITE_DIR/score.py"
  - name: two
    command: python3 "$ATTRACTOR_SUITE_DIR/score.py"
"#
        ),
    )
}

async fn child_json(env: &Env, suite: &str, epoch_num: i64) -> Value {
    let s = env.store.suite_by_name(suite).await.unwrap().unwrap();
    let e = env.store.epochs(s.id).await.unwrap().into_iter().find(|e| e.epoch_num == epoch_num).unwrap();
    serde_json::from_str(e.child_artifacts_json.as_deref().unwrap()).unwrap()
}

#[tokio::test]
async fn a_regression_rolls_back_and_halves_the_learning_rate() {
    let env = Env::new().await;
    let suite = knob_suite(&env, "knob");
    let summary = env.run(&suite, env.config(3, OptimizerKind::Evolve)).await;
    assert_eq!(summary.epochs.len(), 3);
    let m: Vec<f64> = summary.epochs.iter().map(|e| e.mean_loss.unwrap()).collect();
    assert!(m[0].abs() < 1e-12, "v0 is perfect: {m:?}");
    assert!(m[1] > m[0], "the move away from x = 5 must regress: {m:?}");
    assert!((m[2] - m[0]).abs() < 1e-12, "after rollback v0 is measured again: {m:?}");

    // Epoch 1: an update v0 → v1 in exactly the seed's event shape.
    let c1 = child_json(&env, "knob", 1).await;
    let u = &c1["events"][0];
    assert_eq!(u["type"], "update");
    assert_eq!(u["artifact"], "knob");
    assert_eq!((u["from_version"].as_i64(), u["to_version"].as_i64()), (Some(0), Some(1)));
    assert_eq!(u["learning_rate"], 0.5);
    for key in ["rationale", "expected_loss_reduction", "confidence", "learning_rate"] {
        assert!(u.get(key).is_some(), "update event lacks `{key}`: {u}");
    }
    assert_eq!(c1["artifacts"]["knob"], 1);
    assert_eq!(c1["artifacts"]["executor_pitfalls"], 0, "the map lists every artifact");

    // Epoch 2: the regression rolls v1 back to v0 and halves η; no update.
    let c2 = child_json(&env, "knob", 2).await;
    let events = c2["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{c2}");
    let r = &events[0];
    assert_eq!(r["type"], "rollback");
    assert_eq!((r["from_version"].as_i64(), r["to_version"].as_i64()), (Some(1), Some(0)));
    assert_eq!(r["new_learning_rate"], 0.25);
    assert!((r["mean_loss_prev"].as_f64().unwrap() - m[0]).abs() < 1e-12);
    assert!((r["mean_loss_current"].as_f64().unwrap() - m[1]).abs() < 1e-12);
    assert_eq!(c2["artifacts"]["knob"], 0);

    // Epoch 3 ran on v0 and its update uses the halved rate.
    let s = env.store.suite_by_name("knob").await.unwrap().unwrap();
    let e3 = &env.store.epochs(s.id).await.unwrap()[2];
    let parent: Value = serde_json::from_str(&e3.parent_artifacts_json).unwrap();
    assert_eq!(parent["knob"], 0);
    let c3 = child_json(&env, "knob", 3).await;
    assert_eq!(c3["events"][0]["type"], "update");
    assert_eq!(c3["events"][0]["learning_rate"], 0.25);
    assert_eq!(c3["events"][0]["to_version"], 2);
    assert_eq!(summary.learning_rate, 0.25);

    // The run ends on its best: v0, measured perfect in epochs 1 and 3; v2,
    // proposed in the last epoch and never measured, is kept but inactive.
    let reg = env.registry().await;
    assert_eq!(reg.get_active("knob").await.unwrap().version, 0);
    assert_eq!(reg.history("knob").await.unwrap().len(), 3);
    let settled = summary.settled.as_ref().expect("the run settled on its best");
    assert_eq!(settled.epochs, vec![1, 3]);
    assert_eq!(settled.moved.len(), 1, "{settled:?}");
    assert_eq!((settled.moved[0].from_version, settled.moved[0].to_version), (2, 0));
    assert_eq!(settled.moved[0].from_mean_loss, None, "v2 was never measured");
    assert!(settled.describe().contains("knob v0 (not v2: proposed last, never measured"), "{}", settled.describe());
}

#[tokio::test]
async fn without_rollback_a_regression_is_kept() {
    let env = Env::new().await;
    let suite = knob_suite(&env, "knob-keep");
    let mut config = env.config(2, OptimizerKind::Evolve);
    config.rollback_on_regression = false;
    let summary = env.run(&suite, config).await;
    assert!(summary.epochs[1].mean_loss > summary.epochs[0].mean_loss);
    let c2 = child_json(&env, "knob-keep", 2).await;
    assert_eq!(c2["events"][0]["type"], "update", "optimizer runs instead of a rollback: {c2}");
    assert_eq!(c2["events"][0]["from_version"], 1);
    assert_eq!(summary.learning_rate, 0.5);
}

#[tokio::test]
async fn baseline_runs_every_task_each_epoch_and_changes_nothing() {
    let env = Env::new().await;
    let suite = knob_suite(&env, "knob-base");
    let summary = env.run(&suite, env.config(3, OptimizerKind::Baseline)).await;
    assert_eq!(summary.epochs.len(), 3);
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM epoch_runs").await, 6);
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM runs WHERE status = 'complete'").await, 6);
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM artifact_versions").await, 0);
    for n in 1..=3 {
        assert_eq!(child_json(&env, "knob-base", n).await["events"], Value::Array(vec![]));
    }
    // Every bus event reached the store, in order.
    let s = env.store.suite_by_name("knob-base").await.unwrap().unwrap();
    let kinds: Vec<String> = env.store.events_of_suite(s.id).await.unwrap().into_iter().map(|e| e.event.kind).collect();
    assert_eq!(kinds.first().map(String::as_str), Some("suite_started"));
    assert_eq!(kinds.last().map(String::as_str), Some("suite_finished"));
    assert_eq!(kinds.iter().filter(|k| *k == "run_finished").count(), 6);
    assert_eq!(kinds.iter().filter(|k| *k == "epoch_finished").count(), 3);
}

#[tokio::test]
async fn a_second_invocation_continues_the_epoch_numbering_and_the_regression_check() {
    let env = Env::new().await;
    let suite = knob_suite(&env, "knob-twice");
    env.run(&suite, env.config(1, OptimizerKind::Evolve)).await; // epoch 1 + update
    let summary = env.run(&suite, env.config(1, OptimizerKind::Evolve)).await; // epoch 2 regresses
    assert_eq!(summary.epochs[0].epoch_num, 2);
    let c2 = child_json(&env, "knob-twice", 2).await;
    assert_eq!(c2["events"][0]["type"], "rollback", "the check spans invocations: {c2}");
}

/// Each epoch's mean loss, events and η, as the store keeps them.
async fn history(env: &Env, suite: &str) -> Vec<(Option<f64>, Value, Value)> {
    let s = env.store.suite_by_name(suite).await.unwrap().unwrap();
    let mut out = Vec::new();
    for e in env.store.epochs(s.id).await.unwrap() {
        let child: Value = serde_json::from_str(e.child_artifacts_json.as_deref().unwrap()).unwrap();
        out.push((e.mean_loss, child["events"].clone(), child["learning_rate"].clone()));
    }
    out
}

#[tokio::test]
async fn a_continued_run_is_the_run_that_went_on_uninterrupted() {
    // Five epochs at once, and two then three: the rollback in epoch 2
    // halves η, and the continuation must carry the halved η on.
    let (one, two) = (Env::new().await, Env::new().await);
    let whole = knob_suite(&one, "knob");
    one.run(&whole, one.config(5, OptimizerKind::Evolve)).await;
    let split = knob_suite(&two, "knob");
    two.run(&split, two.config(2, OptimizerKind::Evolve)).await;
    let summary = two.run(&split, two.config(3, OptimizerKind::Evolve)).await;

    let (a, b) = (history(&one, "knob").await, history(&two, "knob").await);
    assert_eq!(a.len(), 5);
    assert_eq!(a, b, "the same epochs, losses, events and η");
    assert_eq!(b[1].2, 0.25, "η after the rollback is kept with the epoch");
    assert!(a.iter().any(|(_, events, _)| events.to_string().contains("rollback")), "{a:?}");
    assert_eq!(summary.learning_rate, a[4].2.as_f64().unwrap());
}

#[tokio::test]
async fn held_out_tasks_run_but_stay_out_of_the_mean() {
    let env = Env::new().await;
    std::fs::write(
        env.path("fixed.sh"),
        "printf '{\"status\": \"complete\", \"eval_score\": %s}' \"$SCORE\" > \"$ATTRACTOR_RESULT_FILE\"\n",
    )
    .unwrap();
    let suite = env.suite(
        "h.yaml",
        r#"
name: held
tasks:
  - name: train
    command: sh "$ATTRACTOR_SUITE_DIR/fixed.sh"
    env: { SCORE: "1.0" }
  - name: secret
    command: sh "$ATTRACTOR_SUITE_DIR/fixed.sh"
    env: { SCORE: "0.0" }
    holdout: true
"#,
    );
    let summary = env.run(&suite, env.config(1, OptimizerKind::Baseline)).await;
    let e = &summary.epochs[0];
    // train: eval 0 + critique/gate/budget neutral (0.3·0.5 + 0.15·0.5 + 0.05·0.5) + complete 0.
    let neutral = 0.3 * 0.5 + 0.15 * 0.5 + 0.05 * 0.5;
    assert!((e.mean_loss.unwrap() - neutral).abs() < 1e-12, "{e:?}");
    assert!((e.holdout_mean_loss.unwrap() - (0.4 + neutral)).abs() < 1e-12, "{e:?}");
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM epoch_runs").await, 2);
}

#[tokio::test]
async fn baseline_pins_activate_stored_versions_before_the_first_epoch() {
    let env = Env::new().await;
    let reg = env.registry().await;
    reg.put_version("executor_pitfalls", "pinned text", 0, None).await.unwrap();
    std::fs::write(
        env.path("echo.sh"),
        "cp \"$ATTRACTOR_ARTIFACTS_DIR/executor_pitfalls.txt\" \"$OUT\"; echo '{\"status\": \"complete\"}' > \"$ATTRACTOR_RESULT_FILE\"\n",
    )
    .unwrap();
    let out = env.path("seen.txt");
    let suite = env.suite(
        "pin.yaml",
        &format!(
            "name: pinned\nbaseline_artifacts:\n  executor_pitfalls: 1\ntasks:\n  - name: t\n    command: sh \"$ATTRACTOR_SUITE_DIR/echo.sh\"\n    env: {{ OUT: \"{}\" }}\n",
            out.display()
        ),
    );
    env.run(&suite, env.config(1, OptimizerKind::Baseline)).await;
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "pinned text");
}

#[tokio::test]
async fn an_interrupted_epoch_resumes_keeping_its_finished_runs() {
    let env = Env::new().await;
    let mark = env.path("second-started");
    std::fs::write(
        env.path("slow.sh"),
        // First attempt: announce itself and hang; second attempt: finish.
        "if [ -e \"$MARK\" ]; then echo '{\"status\": \"complete\", \"eval_score\": 1}' > \"$ATTRACTOR_RESULT_FILE\"; else touch \"$MARK\"; sleep 60; fi\n",
    )
    .unwrap();
    let suite = env.suite(
        "r.yaml",
        &format!(
            r#"
name: resumable
tasks:
  - name: first
    command: |
      echo '{{"status": "complete", "eval_score": 0.5}}' > "$ATTRACTOR_RESULT_FILE"
  - name: second
    command: sh "$ATTRACTOR_SUITE_DIR/slow.sh"
    env: {{ MARK: "{}" }}
"#,
            mark.display()
        ),
    );
    let mut config = env.config(1, OptimizerKind::Baseline);
    config.concurrency = 1;

    // Interrupt once the second run is under way (as Ctrl-C does).
    let (tx, rx) = tokio::sync::watch::channel(false);
    let watcher = {
        let mark = mark.clone();
        tokio::spawn(async move {
            while !mark.exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tx.send(true).unwrap();
            tx
        })
    };
    let summary = env.run_with_cancel(&suite, config.clone(), rx).await;
    let _tx = watcher.await.unwrap();
    assert!(summary.interrupted);
    assert!(summary.epochs.is_empty());

    let s = env.store.suite_by_name("resumable").await.unwrap().unwrap();
    let epochs = env.store.epochs(s.id).await.unwrap();
    assert_eq!(epochs.len(), 1);
    assert!(epochs[0].completed_at.is_none() && epochs[0].mean_loss.is_none());
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM epoch_runs").await, 1);
    assert_eq!(
        count(&env.store, "SELECT COUNT(*) FROM runs WHERE task_name = 'second' AND status = 'cancelled'").await,
        1
    );

    // Run again: the same epoch finishes; `first` is not run twice.
    let summary = env.run(&suite, config).await;
    assert!(!summary.interrupted);
    assert_eq!(summary.epochs.len(), 1);
    assert!(summary.epochs[0].resumed);
    assert_eq!(summary.epochs[0].epoch_num, 1);
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM runs WHERE task_name = 'first'").await, 1);
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM runs WHERE task_name = 'second'").await, 2);
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM epoch_runs").await, 2);
    let epochs = env.store.epochs(s.id).await.unwrap();
    assert_eq!(epochs.len(), 1);
    assert!(epochs[0].completed_at.is_some());
}

/// The suite of the resume tests: `first` scores `first_score`, `second`
/// hangs on its first attempt (announcing itself at `mark`), `third` scores
/// 0.25; `preamble` goes above the suite (comments move the tasks' lines).
fn resumable_suite(env: &Env, preamble: &str, first_score: f64) -> std::path::PathBuf {
    let mark = env.path("second-started");
    std::fs::write(
        env.path("slow.sh"),
        "if [ -e \"$MARK\" ]; then echo '{\"status\": \"complete\", \"eval_score\": 1}' > \"$ATTRACTOR_RESULT_FILE\"; else touch \"$MARK\"; sleep 60; fi\n",
    )
    .unwrap();
    env.suite(
        "edited.yaml",
        &format!(
            r#"{preamble}
name: edited
tasks:
  - name: first
    command: |
      echo '{{"status": "complete", "eval_score": {first_score}}}' > "$ATTRACTOR_RESULT_FILE"
  - name: third
    command: |
      echo '{{"status": "complete", "eval_score": 0.25}}' > "$ATTRACTOR_RESULT_FILE"
  - name: second
    command: sh "$ATTRACTOR_SUITE_DIR/slow.sh"
    env: {{ MARK: "{}" }}
"#,
            mark.display()
        ),
    )
}

#[tokio::test]
async fn a_task_edited_before_the_resume_runs_again_and_its_old_run_is_set_aside() {
    let env = Env::new().await;
    let suite = resumable_suite(&env, "", 0.5);
    let mut config = env.config(1, OptimizerKind::Baseline);
    config.concurrency = 1;
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mark = env.path("second-started");
    let watcher = tokio::spawn(async move {
        while !mark.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tx.send(true).unwrap();
        tx
    });
    assert!(env.run_with_cancel(&suite, config.clone(), rx).await.interrupted);
    let _tx = watcher.await.unwrap();
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM epoch_runs").await, 2, "first and third counted");

    // The person edits `first` (its score) and adds a comment above every
    // task (which moves `third` without changing it), then resumes.
    resumable_suite(&env, "# measured again after the edit", 0.9);
    let summary = env.run(&suite, config).await;
    assert_eq!(summary.epochs.len(), 1);
    assert!(summary.epochs[0].resumed);

    // `first` ran again under its new definition; the old run is kept,
    // set aside with the reason; `third` was not run twice.
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM runs WHERE task_name = 'first'").await, 2);
    assert_eq!(count(&env.store, "SELECT COUNT(*) FROM runs WHERE task_name = 'third'").await, 1);
    assert_eq!(
        count(
            &env.store,
            "SELECT COUNT(*) FROM runs WHERE task_name = 'first' AND status = 'cancelled' AND error LIKE 'set aside: the task `first` changed%'"
        )
        .await,
        1
    );
    let s = env.store.suite_by_name("edited").await.unwrap().unwrap();
    let epoch = env.store.epochs(s.id).await.unwrap().remove(0);
    let counted = env.store.epoch_runs(epoch.id).await.unwrap();
    let first = counted.iter().find(|r| r.task_name == "first").expect("first is counted");
    let runs = env.store.runs_of_epoch(epoch.id).await.unwrap();
    let counted_run = runs.iter().find(|r| r.id == first.run_id).unwrap();
    assert_eq!(counted_run.status, "complete", "the counted run of `first` is the new one");
    let set_aside = runs.iter().find(|r| r.task_name == "first" && r.id != first.run_id).unwrap();
    assert!(first.loss < set_aside.loss.unwrap(), "the new score (0.9) gives the lower loss");
    let events = env.store.events_of_suite(s.id).await.unwrap();
    let resumed = events
        .iter()
        .filter(|e| e.event.kind == "epoch_started")
        .map(|e| serde_json::from_str::<Value>(&e.event.payload_json).unwrap())
        .find(|p| p["resumed"] == true)
        .expect("the resumed epoch's start");
    assert_eq!(resumed["changed"], serde_json::json!(["first"]), "{resumed}");
}

#[tokio::test]
async fn the_database_holds_the_seed_tables_and_columns() {
    let env = Env::new().await;
    let cols = |t: &'static str| {
        let store = env.store.clone();
        async move { store.table_columns(t).await.unwrap() }
    };
    assert_eq!(
        cols("artifact_versions").await,
        ["id", "artifact_name", "version", "content", "parent_version", "created_at", "epoch_id", "is_active"]
    );
    assert_eq!(
        cols("task_suites").await,
        ["id", "name", "tasks_json", "baseline_artifacts_json", "created_at", "source_path"]
    );
    assert_eq!(
        cols("epochs").await,
        [
            "id",
            "suite_id",
            "epoch_num",
            "started_at",
            "completed_at",
            "mean_loss",
            "parent_artifacts_json",
            "child_artifacts_json"
        ]
    );
    assert_eq!(cols("epoch_runs").await, ["epoch_id", "run_id", "task_name", "loss", "scores_json"]);
    assert_eq!(
        cols("aso_telemetry").await,
        [
            "id",
            "timestamp",
            "experiment_id",
            "cycle",
            "trajectory_id",
            "step",
            "status",
            "objective",
            "max_violation",
            "directive_action",
            "directive_source",
            "evals_used",
            "wall_time_ms",
            "llm_call_made",
            "diagnostics_json",
            "directive_json"
        ]
    );
    if env.store.backend() == attractor::store::Backend::Sqlite {
        assert_eq!(env.store.journal_mode().await.unwrap(), "wal");
    }
}

#[tokio::test]
async fn a_proposal_the_last_run_left_unmeasured_is_measured_first_by_the_next_run() {
    let env = Env::new().await;
    let suite = knob_suite(&env, "pending");
    // Epoch 1 runs v0 and proposes v1; the run ends on v0, v1 pending.
    let first = env.run(&suite, env.config(1, OptimizerKind::Evolve)).await;
    let registry = env.registry().await;
    assert_eq!(registry.get_active("knob").await.unwrap().version, 0);
    assert_eq!(first.settled.as_ref().unwrap().moved[0].from_version, 1);

    // The next run measures v1 first: epoch 2 ran on it, and judged it.
    let second = env.run(&suite, env.config(1, OptimizerKind::Evolve)).await;
    let s = env.store.suite_by_name("pending").await.unwrap().unwrap();
    let e2 = env.store.epochs(s.id).await.unwrap().into_iter().find(|e| e.epoch_num == 2).unwrap();
    let parent: Value = serde_json::from_str(&e2.parent_artifacts_json).unwrap();
    assert_eq!(parent["knob"], 1, "epoch 2 measured the pending proposal");
    assert_eq!(ev(&second.epochs[0].events[0])["type"], "rollback", "v1 is worse than v0");
    let proposals = env.store.proposals(s.id).await.unwrap();
    let winner =
        proposals.iter().find(|l| l.epoch_num == 1 && l.row.proposal.outcome == ProposalOutcome::Winner).unwrap();
    assert!(winner.row.observed_loss_reduction.is_some_and(|r| r < 0.0), "{winner:?}");
}

#[tokio::test]
async fn a_pending_proposal_stays_inactive_when_a_person_moved_the_artifact_meanwhile() {
    let env = Env::new().await;
    let suite = knob_suite(&env, "moved");
    env.run(&suite, env.config(1, OptimizerKind::Evolve)).await; // v1 pending, v0 active
    // A person writes and activates a version of their own.
    let registry = env.registry().await;
    let mine = registry.put_version("knob", r#"{"x": 5.0}"#, 0, None).await.unwrap();
    registry.set_active("knob", mine).await.unwrap();

    env.run(&suite, env.config(1, OptimizerKind::Evolve)).await;
    let s = env.store.suite_by_name("moved").await.unwrap().unwrap();
    let e2 = env.store.epochs(s.id).await.unwrap().into_iter().find(|e| e.epoch_num == 2).unwrap();
    let parent: Value = serde_json::from_str(&e2.parent_artifacts_json).unwrap();
    assert_eq!(parent["knob"], mine, "the person's version ran, not the pending one");
    let proposals = env.store.proposals(s.id).await.unwrap();
    let first =
        proposals.iter().find(|l| l.epoch_num == 1 && l.row.proposal.outcome == ProposalOutcome::Winner).unwrap();
    assert_eq!(first.row.observed_loss_reduction, None, "v1 never ran, so it was never judged: {first:?}");
}

#[tokio::test]
async fn a_tree_search_after_a_rollback_proposes_and_records_with_the_halved_rate() {
    let env = Env::new().await;
    let suite = knob_suite(&env, "knob-then-tree");
    // Epoch 1 moves the perfect knob, epoch 2 rolls it back: η 0.5 → 0.25.
    let first = env.run(&suite, env.config(2, OptimizerKind::Evolve)).await;
    assert_eq!(first.learning_rate, 0.25);
    let tree = env.run(&suite, env.config(3, OptimizerKind::Tree)).await;
    assert!(!tree.epochs.is_empty());
    for e in &tree.epochs {
        assert_eq!(e.learning_rate, 0.25, "epoch {} carries the configured rate", e.epoch_num);
    }
    assert_eq!(tree.learning_rate, 0.25);
    // The rate is kept where a later run reads it back: in each tree
    // epoch's record and on the tree's proposals.
    let s = env.store.suite_by_name("knob-then-tree").await.unwrap().unwrap();
    for e in env.store.epochs(s.id).await.unwrap().iter().filter(|e| e.epoch_num > 2) {
        let record: serde_json::Value = serde_json::from_str(e.child_artifacts_json.as_deref().unwrap()).unwrap();
        assert_eq!(record["learning_rate"], 0.25, "epoch {}'s record", e.epoch_num);
    }
    let proposals = env.store.proposals(s.id).await.unwrap();
    let tree_proposals: Vec<_> = proposals.iter().filter(|l| l.epoch_num > 2).collect();
    assert!(!tree_proposals.is_empty(), "the tree proposed nothing: {proposals:?}");
    for l in tree_proposals {
        assert_eq!(l.row.proposal.learning_rate, 0.25, "{l:?}");
    }
}

/// An epoch event as its stored JSON, for asserting on its fields.
fn ev(e: &attractor::domain::EpochEvent) -> serde_json::Value {
    serde_json::to_value(e).unwrap()
}
