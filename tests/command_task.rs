//! `command` tasks: whatever a harness does wrong becomes a failed run with its
//! reason recorded, and the suite goes on.

mod common;

use attractor::outer::OptimizerKind;
use attractor::store::RunRow;
use common::Env;
use serde_json::Value;

const SUITE: &str = r#"
name: harnesses
artifacts:
  - name: knob
    type: json
    content: { x: 1 }
    fields:
      x: { min: 0, max: 2 }
tasks:
  - name: good
    task: Report the environment back.
    command: |
      python3 - <<'PY'
      import json, os
      idx = json.load(open(os.environ["ATTRACTOR_ARTIFACTS_INDEX"]))
      metrics = {k: os.environ[k] for k in ["ATTRACTOR_TASK", "ATTRACTOR_TASK_NAME", "ATTRACTOR_EPOCH", "EXTRA"]}
      metrics["cwd_is_run_dir"] = os.getcwd() == os.environ["ATTRACTOR_RUN_DIR"]
      metrics["task_file"] = open(os.environ["ATTRACTOR_TASK_FILE"]).read()
      metrics["knob"] = open(os.path.join(os.environ["ATTRACTOR_ARTIFACTS_DIR"], idx["knob"]["file"])).read()
      metrics["indexed"] = sorted(idx)
      json.dump({"status": "complete", "eval_score": 0.9, "metrics": metrics}, open(os.environ["ATTRACTOR_RESULT_FILE"], "w"))
      PY
    env: { EXTRA: "from the suite" }
  - name: exits_nonzero
    command: echo '{"status":"complete","eval_score":1}' > "$ATTRACTOR_RESULT_FILE"; exit 3
  - name: writes_nothing
    command: echo "forgot the result"
  - name: malformed
    command: |
      printf '{"status": "complete", "eval_score": ' > "$ATTRACTOR_RESULT_FILE"
  - name: misspelled_key
    command: echo '{"status":"complete","eval_scor":1}' > "$ATTRACTOR_RESULT_FILE"
  - name: bad_status
    command: echo '{"status":"done"}' > "$ATTRACTOR_RESULT_FILE"
  - name: hangs
    command: sleep 60 | cat
    timeout: 1
  - name: chatty
    command: |
      head -c 300000 /dev/zero | tr '\0' 'x'; echo '{"status":"partial","eval_score":0.5}' > "$ATTRACTOR_RESULT_FILE"
  - name: missing_binary
    command: definitely-not-a-command-xyz
  - name: leaves_a_job
    command: sleep 30 >/dev/null 2>&1 & echo '{"status":"complete","eval_score":1}' > "$ATTRACTOR_RESULT_FILE"
"#;

fn run_of<'a>(runs: &'a [RunRow], task: &str) -> &'a RunRow {
    runs.iter().find(|r| r.task_name == task).unwrap_or_else(|| panic!("no run for {task}"))
}

#[tokio::test]
async fn every_harness_failure_is_a_failed_run_with_its_reason() {
    let env = Env::new().await;
    let suite = env.suite("h.yaml", SUITE);
    let mut config = env.config(1, OptimizerKind::Baseline);
    config.concurrency = 4;
    let summary = env.run(&suite, config).await;
    assert_eq!(summary.epochs.len(), 1, "the suite completed despite the failures");
    let runs = env.store.runs_of_epoch(summary.epochs[0].epoch_id).await.unwrap();
    assert_eq!(runs.len(), 10);
    assert_eq!(env.store.epoch_runs(summary.epochs[0].epoch_id).await.unwrap().len(), 10, "failed runs count too");

    let good = run_of(&runs, "good");
    assert_eq!(good.status, "complete", "{:?}", good.error);
    let result: Value = serde_json::from_str(good.result_json.as_deref().unwrap()).unwrap();
    let m = &result["metrics"];
    assert_eq!(m["ATTRACTOR_TASK"], "Report the environment back.");
    assert_eq!(m["ATTRACTOR_TASK_NAME"], "good");
    assert_eq!(m["ATTRACTOR_EPOCH"], "1");
    assert_eq!(m["EXTRA"], "from the suite");
    assert_eq!(m["cwd_is_run_dir"], true);
    assert_eq!(m["task_file"], "Report the environment back.");
    assert!(m["knob"].as_str().unwrap().contains("\"x\": 1"));
    assert!(m["indexed"].as_array().unwrap().iter().any(|n| n == "executor_pitfalls"), "built-ins are written too");

    let expect_failed = |task: &str, reason: &str| {
        let r = run_of(&runs, task);
        assert_eq!(r.status, "failed", "{task}");
        let err = r.error.as_deref().unwrap_or("");
        assert!(err.contains(reason), "{task}: error `{err}` lacks `{reason}`");
        // The loss is still defined: the worst for every score it did not
        // report, and the failed penalty.
        assert!(r.loss.unwrap() > 0.0);
    };
    expect_failed("exits_nonzero", "exited with code 3");
    expect_failed("writes_nothing", "wrote no run_completion.json");
    expect_failed("malformed", "malformed at line 1");
    expect_failed("misspelled_key", "unknown field `eval_scor`");
    expect_failed("bad_status", "unknown variant `done`");
    expect_failed("hangs", "timed out after 1 s");
    expect_failed("missing_binary", "exited with code 127");
    assert_eq!(run_of(&runs, "exits_nonzero").exit_code, Some(3));
    assert!(run_of(&runs, "writes_nothing").stdout.as_deref().unwrap().contains("forgot the result"));
    assert!(run_of(&runs, "missing_binary").stderr.as_deref().unwrap().contains("not found"));

    let chatty = run_of(&runs, "chatty");
    assert_eq!(chatty.status, "partial");
    let out = chatty.stdout.as_deref().unwrap();
    assert!(out.len() < 70_000, "stdout is capped, kept {} bytes", out.len());
    assert!(out.contains("more bytes not kept"));

    // A background job the command did not wait for is killed, and its stderr says so.
    let job = run_of(&runs, "leaves_a_job");
    assert_eq!(job.status, "complete", "{:?}", job.error);
    let stderr = job.stderr.as_deref().unwrap();
    assert!(
        stderr.contains("[attractor: the command left 1 process running after it ended, now killed: pid "),
        "{stderr}"
    );
    assert!(stderr.contains("`sleep 30`]"), "{stderr}");

    // A failed run with nothing reported costs the most: 0.9·1 + 0.1·1 (with
    // neutral scores it was 0.55, less than an honest poor run).
    let nothing = run_of(&runs, "writes_nothing").loss.unwrap();
    assert!((nothing - 1.0).abs() < 1e-12, "{nothing}");
}
