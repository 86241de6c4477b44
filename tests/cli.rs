//! The `attractor` binary end to end on a temporary database: run, inspect,
//! rollback, export, validate, exit codes, and Ctrl-C with resume.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
use common::cli::Cli;

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/descent.suite.yaml").display().to_string()
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

#[test]
fn the_example_suite_learns_and_every_view_shows_it() {
    let cli = Cli::new();
    let ex = example();
    let out = cli.ok(&["run", &ex, "--epochs", "6", "--optimizer", "evolve", "--seed", "7"]);
    assert!(out.contains("epoch   1  mean loss"), "{out}");
    assert!(out.contains("update descent_settings v0→v1"), "{out}");

    // The same run replayed as JSON on a second database gives the same losses.
    let again = Cli::new();
    let json: Value = serde_json::from_str(&again.ok(&[
        "--json",
        "run",
        &ex,
        "--epochs",
        "6",
        "--optimizer",
        "evolve",
        "--seed",
        "7",
    ]))
    .unwrap();
    let means: Vec<f64> = json["epochs"].as_array().unwrap().iter().map(|e| e["mean_loss"].as_f64().unwrap()).collect();
    assert_eq!(means.len(), 6);
    assert!(means[5] < means[0] - 0.1, "the loss moves down under evolve: {means:?}");
    let line = |i: usize| format!("epoch {:>3}  mean loss {:.4}", i + 1, means[i]);
    assert!(out.contains(&line(0)) && out.contains(&line(5)), "same seed, same losses:\n{out}\n{means:?}");

    let list = cli.ok(&["inspect"]);
    assert!(list.contains("descent-tuning") && list.contains("idle"), "{list}");

    let epochs = cli.ok(&["inspect", "descent-tuning"]);
    assert!(epochs.contains("epoch 6  mean loss"), "{epochs}");
    assert!(epochs.contains("→ update   descent_settings v0→v1"), "{epochs}");
    assert!(epochs.contains("booth"), "held-out task listed: {epochs}");

    let history = cli.ok(&["inspect", "--artifact", "descent_settings"]);
    assert!(history.contains("@@"), "unified diffs: {history}");
    assert!(history.contains("[active]"));
    assert!(history.contains("v0  default"));

    let rolled = cli.ok(&["rollback", "descent_settings", "0"]);
    assert!(rolled.contains("active version is now v0"), "{rolled}");
    let h: Value = serde_json::from_str(&cli.ok(&["--json", "inspect", "--artifact", "descent_settings"])).unwrap();
    assert_eq!(h["versions"][0]["is_active"], true);
    assert!(h["versions"].as_array().unwrap().len() > 1, "rollback deleted nothing");

    let export: Value = serde_json::from_str(&cli.ok(&["export", "descent-tuning", "--format", "json"])).unwrap();
    assert_eq!(export["epochs"].as_array().unwrap().len(), 6);
    assert_eq!(export["epochs"][0]["runs"].as_array().unwrap().len(), 4);
    let csv_path = cli.dir.path().join("out.csv");
    cli.ok(&["export", "descent-tuning", "--format", "csv", "--output", csv_path.to_str().unwrap()]);
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    assert_eq!(csv.lines().count(), 1 + 6 * 4, "{csv}");
    assert!(csv.starts_with("suite,epoch,epoch_mean_loss,run_id,task,status"));
}

#[test]
fn the_database_comes_from_the_environment_then_the_settings_screens_choice() {
    let cli = Cli::new();
    let suite = cli.write(
        "s.yaml",
        "name: where\ntasks:\n  - name: a\n    command: |\n      echo '{\"status\": \"complete\"}' > \"$ATTRACTOR_RESULT_FILE\"\n",
    );
    let suite = suite.to_str().unwrap();
    let settings = cli.dir.path().join("settings.json");
    let saved = cli.dir.path().join("saved.db");
    std::fs::write(&settings, json!({ "db_path": saved }).to_string()).unwrap();
    let attractor = |args: &[&str], env_db: Option<&Path>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_attractor"));
        c.args(args)
            .env("ATTRACTOR_SETTINGS", &settings)
            .env("ATTRACTOR_RUNS_DIR", cli.dir.path().join("runs"))
            .env_remove("ATTRACTOR_DB");
        if let Some(db) = env_db {
            c.env("ATTRACTOR_DB", db);
        }
        c.output().unwrap()
    };
    // Nothing there yet: `inspect` says so, and creates nothing.
    let from_env = cli.dir.path().join("from-env.db");
    let out = attractor(&["inspect"], Some(&from_env));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no suites yet in"), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("from-env.db"), "{out:?}");
    assert!(!from_env.exists(), "a read-only verb created the database");
    // Neither --db nor ATTRACTOR_DB: the database the Settings screen chose,
    // where the app looks (the CLI used the platform default and the app
    // never saw its runs).
    let out = attractor(&["run", suite], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(saved.exists(), "the run went to the saved database");
    assert!(String::from_utf8_lossy(&attractor(&["inspect"], None).stdout).contains("where"));
    // ATTRACTOR_DB comes first.
    assert!(attractor(&["run", suite], Some(&from_env)).status.success());
    assert!(from_env.exists(), "ATTRACTOR_DB is honoured");
    // A verb on what is there, given a database that is not: refused, not created.
    let typo = cli.dir.path().join("typo.db");
    let out = attractor(&["export", "where"], Some(&typo));
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("there is no database at {}", typo.display())) && err.contains("hint:"), "{err}");
    assert!(!typo.exists());
}

#[test]
fn a_count_flag_out_of_its_range_is_refused_in_words_not_rusts_range_syntax() {
    let cli = Cli::new();
    for args in
        [&["worker", "--concurrency", "0"][..], &["bench", "numeric", "--runs", "0"], &["gc", "--cache-days", "x"]]
    {
        let out = cli.run(args);
        assert_eq!(code(&out), 2, "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("must be a whole number from "), "{args:?}: {err}");
        assert!(!err.contains("..="), "{args:?}: {err}");
    }
}

#[test]
fn a_file_that_is_not_a_database_is_named_at_once_not_after_a_pool_timeout() {
    let cli = Cli::new();
    let notes = cli.write("notes.db", &"a shopping list, not a database\n".repeat(50));
    let out = Command::new(env!("CARGO_BIN_EXE_attractor"))
        .args(["--db", notes.to_str().unwrap(), "inspect", "anything"])
        .env("ATTRACTOR_SETTINGS", cli.dir.path().join("none.json"))
        .output()
        .unwrap();
    assert_eq!(code(&out), 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("the file {} is not an Attractor database", notes.display())), "{err}");
    assert!(err.contains("hint:") && !err.contains("timed out"), "{err}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap().len(), 32 * 50, "the file is left as it was");
}

#[test]
fn a_bad_suite_exits_2_with_file_line_column_and_field() {
    let cli = Cli::new();
    let bad = cli.write("bad.yaml", "name: s\ntasks:\n  - name: a\n    command: x\n    weights: { eval: 3 }\n");
    for verb in ["validate", "run"] {
        let out = cli.run(&[verb, bad.to_str().unwrap()]);
        assert_eq!(code(&out), 2, "{verb}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{}:5:22: field `tasks[0].weights.eval`", bad.display())), "{err}");
        assert!(err.contains("hint:"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(!cli.db().exists() || cli.ok(&["inspect"]).contains("no suites"), "nothing was recorded");
    // With --json the verdict is on stdout either way, the issues located
    // (it printed nothing for an invalid file).
    let out = cli.run(&["--json", "validate", bad.to_str().unwrap()]);
    assert_eq!(code(&out), 2);
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON verdict on stdout");
    assert_eq!(verdict["valid"], false, "{verdict}");
    assert_eq!((verdict["issues"][0]["line"].as_u64(), verdict["issues"][0]["column"].as_u64()), (Some(5), Some(22)));
    assert_eq!(verdict["issues"][0]["field"], "tasks[0].weights.eval");
    let good = cli.write("good.yaml", "name: s\ntasks:\n  - name: a\n    command: x\n");
    let verdict: serde_json::Value =
        serde_json::from_str(&cli.ok(&["--json", "validate", good.to_str().unwrap()])).unwrap();
    assert_eq!((verdict["valid"].as_bool(), verdict["tasks"].as_u64()), (Some(true), Some(1)), "{verdict}");
}

/// `validate` says what `run` would refuse here, not only what the file
/// says: an artifact name another suite of the database holds (the usual
/// result of copying an example) and an agent task with no model to run it
/// (a task without `command:` is one). Both passed as valid and the launch
/// then failed; `run` refuses them before printing its plan.
#[test]
fn validate_refuses_what_run_would_an_artifact_another_suite_holds_and_an_agent_task_without_a_model() {
    let cli = Cli::new();
    let suite = |name: &str| {
        format!(
            "name: {name}\nartifacts:\n  - name: knobs\n    type: text\n    content: hi\ntasks:\n  - name: t\n    command: |\n      echo '{{\"status\": \"complete\"}}' > \"$ATTRACTOR_RESULT_FILE\"\n"
        )
    };
    let first = cli.write("first.yaml", &suite("first"));
    cli.ok(&["run", first.to_str().unwrap()]);
    let copy = cli.write("copy.yaml", &suite("copy"));
    let agent = cli.write("agent.yaml", "name: agent\ntasks:\n  - name: a\n    task: Write the report.\n");
    for verb in ["validate", "run"] {
        let out = cli.cmd(&[verb, copy.to_str().unwrap()]).env_remove("ATTRACTOR_LLM_MODEL").output().unwrap();
        assert_eq!(code(&out), 2, "{verb}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{}:3:", copy.display())), "{verb}: {err}");
        assert!(err.contains("artifact `knobs` is already declared by suite `first`"), "{verb}: {err}");
        assert!(err.contains("hint: give this suite's artifact another name"), "{verb}: {err}");
        assert!(!err.contains("plan:"), "{verb} refused before its plan: {err}");

        let out = cli.cmd(&[verb, agent.to_str().unwrap()]).env_remove("ATTRACTOR_LLM_MODEL").output().unwrap();
        assert_eq!(code(&out), 2, "{verb}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{}:3:", agent.display())), "{verb}: {err}");
        assert!(err.contains("task `a` uses the LLM executor"), "{verb}: {err}");
        assert!(err.contains("no model is configured"), "{verb}: {err}");
    }
    // Queued for a worker elsewhere: the database's refusal comes first too.
    let out = cli.run(&["run", "--queue", copy.to_str().unwrap()]);
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("artifact `knobs` is already declared by suite `first`"));
    // A model that is configured wrongly is not "no model": that is the
    // launch's own error to give (the check said "choose a model").
    let out = cli
        .cmd(&["validate", agent.to_str().unwrap()])
        .env("ATTRACTOR_LLM_MODEL", "qwen")
        .env("ATTRACTOR_LLM_BASE_URL", "localhost:8080")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("no model is configured"), "{out:?}");
    // The suite that holds the name validates as before.
    assert!(cli.ok(&["validate", first.to_str().unwrap()]).contains("is valid"));
}

/// A failed run's reason is where the run's hint sends the reader: `inspect`
/// shows its error and the end of its stderr (it showed only "failed"; the
/// cause — here a harness without its model — was in the run folder).
#[test]
fn inspect_shows_why_a_run_failed_as_the_run_hint_promises() {
    let cli = Cli::new();
    let suite = cli.write(
        "s.yaml",
        "name: labels\ntasks:\n  - name: label\n    command: |\n      echo 'label.py: starting' >&2\n      echo 'label.py: no model configured; set ATTRACTOR_LLM_BASE_URL' >&2\n      exit 1\n",
    );
    let run = cli.run(&["run", suite.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(code(&run), 4, "{err}");
    assert!(err.contains("hint: `attractor inspect labels` shows each run's error"), "{err}");
    let shown = cli.ok(&["inspect", "labels"]);
    assert!(shown.contains("error: the command exited with code 1"), "{shown}");
    assert!(shown.contains("label.py: no model configured; set ATTRACTOR_LLM_BASE_URL"), "{shown}");
    assert!(shown.contains("run folder: "), "{shown}");
}

#[test]
fn input_errors_exit_2_and_say_what_to_do() {
    let cli = Cli::new();
    let agent = cli.write("agent.yaml", "name: ag\ntasks:\n  - name: a\n    task: write a poem\n");
    let out = cli.cmd(&["run", agent.to_str().unwrap()]).env_remove("ATTRACTOR_LLM_MODEL").output().unwrap();
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("agent.yaml:3:") && err.contains("no model is configured"), "{err}");
    assert!(err.contains("hint: choose a model on the Settings screen, or set ATTRACTOR_LLM_MODEL"), "{err}");

    let out = cli.run(&["inspect", "no-such-suite"]);
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no suite named `no-such-suite`"));

    let out = cli.run(&["rollback", "executor_pitfalls", "4"]);
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no version 4"));

    let out = cli.run(&["rollback", "nope", "0"]);
    assert_eq!(code(&out), 2);

    let out = cli.run(&["run", &example(), "--learning-rate", "2"]);
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("outside [0, 1]"));

    let out = cli.run(&["validate", "/no/such/file.yaml"]);
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/no/such/file.yaml:1:1") && err.contains("there is no suite file here"), "{err}");
}

#[test]
fn validate_reports_a_good_suite() {
    let cli = Cli::new();
    let out = cli.ok(&["validate", &example()]);
    assert!(out.contains("suite `descent-tuning` is valid: 4 tasks (1 held out), 1 artifact of its own"), "{out}");
}

#[test]
fn a_noisy_suite_says_so_and_a_bad_verify_repeats_exits_2_with_its_place() {
    let cli = Cli::new();
    let good = cli.write("noisy.yaml", "name: n\nnoisy: true\ntasks:\n  - name: a\n    command: 'true'\n");
    let out = cli.ok(&["validate", good.to_str().unwrap()]);
    assert!(out.contains("noisy (3 evaluations per decision)"), "{out}");
    let bad =
        cli.write("bad.yaml", "name: n\nnoisy: true\nverify_repeats: 50\ntasks:\n  - name: a\n    command: 'true'\n");
    let out = cli.run(&["validate", bad.to_str().unwrap()]);
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.yaml:3:17: field `verify_repeats`: 50 is outside the range 2 to 20"), "{err}");
}

#[test]
fn model_call_limits_out_of_range_exit_2_with_their_place_in_the_suite_or_the_flag() {
    let cli = Cli::new();
    let good = cli.write(
        "limits.yaml",
        "name: n\nllm:\n  timeout_secs: 300\n  max_tokens: {proposer: 900, supervisor: 200}\ntasks:\n  - name: a\n    command: 'true'\n",
    );
    cli.ok(&["validate", good.to_str().unwrap()]);

    let huge =
        cli.write("huge.yaml", "name: n\nllm:\n  timeout_secs: 1e20\ntasks:\n  - name: a\n    command: 'true'\n");
    let out = cli.run(&["validate", huge.to_str().unwrap()]);
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("huge.yaml:3:3: field `llm.timeout_secs`: timeout_secs must be"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let role =
        cli.write("role.yaml", "name: n\nllm:\n  max_tokens: {poet: 10}\ntasks:\n  - name: a\n    command: 'true'\n");
    let out = cli.run(&["validate", role.to_str().unwrap()]);
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("role.yaml:3:"), "{}", String::from_utf8_lossy(&out.stderr));

    for (flag, value, says) in [
        ("--max-tokens", "poet=10", "unknown role `poet`; use one of proposer"),
        ("--max-tokens", "proposer=0", "0 tokens is out of range"),
        ("--llm-attempts", "0", "field `model.attempts` (--llm-attempts): must be from 1 to 10"),
        ("--llm-timeout", "1e20", "(--llm-timeout): must be"),
        ("--max-cost", "0", "(--max-cost): must be an amount above 0"),
        ("--max-cost", "1e300", "(--max-cost): must be an amount above 0 and at most"),
    ] {
        let out = cli.run(&["run", good.to_str().unwrap(), flag, value]);
        assert_eq!(code(&out), 2, "{flag} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{flag} {value}: {err}");
    }

    let cost = cli.write("cost.yaml", "name: n\nllm:\n  max_cost: -2\ntasks:\n  - name: a\n    command: 'true'\n");
    let out = cli.run(&["validate", cost.to_str().unwrap()]);
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cost.yaml:3:3: field `llm.max_cost`"), "{err}");
}

#[test]
fn a_cost_budget_needs_a_price_for_a_remote_model_and_the_settings_file_gives_it() {
    let cli = Cli::new();
    let suite = cli.write("s.yaml", "name: priced\ntasks:\n  - name: a\n    command: 'true'\n");
    let settings = cli.dir.path().join("settings.json");
    let run = || {
        cli.cmd(&["run", suite.to_str().unwrap(), "--max-cost", "2.5"])
            .env("ATTRACTOR_LLM_BASE_URL", "https://models.example.com/v1")
            .env("ATTRACTOR_LLM_MODEL", "big-model")
            .env("ATTRACTOR_SETTINGS", &settings)
            .env_remove("ATTRACTOR_LLM_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap()
    };
    let out = run();
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("max_cost is set but the model big-model has no price"), "{err}");
    assert!(err.contains("hint: set its price in the settings"), "{err}");

    std::fs::write(&settings, r#"{"model_prices": {"big-model": {"input_per_million": 3, "output_per_million": 15}}}"#)
        .unwrap();
    let out = run();
    // Priced, the run starts; its command writes no result, so the run
    // fails — and the exit code says so (4), not the price.
    assert_eq!(code(&out), 4, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("has no price"));

    std::fs::write(
        &settings,
        r#"{"model_prices": {"big-model": {"input_per_million": -3, "output_per_million": 15}}}"#,
    )
    .unwrap();
    let out = run();
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("prices.big-model.input_per_million must be"), "{err}");
}

#[test]
fn ctrl_c_stops_cleanly_with_130_and_the_same_command_resumes() {
    stops_cleanly_and_resumes(nix::sys::signal::Signal::SIGINT);
}

/// SIGTERM — what `kill` and a service manager send — stops a run the way
/// Ctrl-C does (it used to kill the process where it stood: the launch
/// left failed and its runs `running`).
#[test]
fn sigterm_stops_cleanly_as_ctrl_c_does_and_the_same_command_resumes() {
    stops_cleanly_and_resumes(nix::sys::signal::Signal::SIGTERM);
}

fn stops_cleanly_and_resumes(signal: nix::sys::signal::Signal) {
    let cli = Cli::new();
    let mark = cli.dir.path().join("hanging");
    cli.write(
        "slow.sh",
        "if [ -e \"$MARK\" ]; then echo '{\"status\": \"complete\"}' > \"$ATTRACTOR_RESULT_FILE\"; else touch \"$MARK\"; sleep 60; fi\n",
    );
    let suite = cli.write(
        "s.yaml",
        &format!(
            "name: interruptible\ntasks:\n  - name: quick\n    command: |\n      echo '{{\"status\": \"complete\"}}' > \"$ATTRACTOR_RESULT_FILE\"\n  - name: slow\n    command: sh \"$ATTRACTOR_SUITE_DIR/slow.sh\"\n    env: {{ MARK: \"{}\" }}\n",
            mark.display()
        ),
    );
    let args = ["run", suite.to_str().unwrap(), "--epochs", "2", "--concurrency", "1"];
    let child = cli.cmd(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    while !mark.exists() {
        assert!(start.elapsed() < Duration::from_secs(30), "the slow task never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 130, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("run the same command again to resume"));
    assert!(cli.ok(&["inspect"]).contains("unfinished"));

    let out = cli.run(&args);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("epoch   1") && stdout.contains("epoch   2"), "{stdout}");
    assert!(!stdout.contains("epoch   3"), "the same command finishes the plan, it does not add to it: {stdout}");
    assert!(stderr.contains("continuing the run that stopped before its plan (epochs 1–2) was done"), "{stderr}");
    let export: Value = serde_json::from_str(&cli.ok(&["export", "interruptible"])).unwrap();
    let e1 = &export["epochs"][0];
    assert!(e1["completed_at"].is_string());
    let runs = e1["runs"].as_array().unwrap();
    let quick = runs.iter().filter(|r| r["task"] == "quick").count();
    let slow: Vec<&str> = runs.iter().filter(|r| r["task"] == "slow").map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(quick, 1, "the finished run was kept, not repeated");
    assert_eq!(slow, ["cancelled", "complete"]);
}

#[test]
fn telemetry_and_the_interventions_inbox_from_the_command_line() {
    let cli = Cli::new();
    cli.write(
        "eval.sh",
        r#"awk '{ match($0, /\[[^]]*\]/); split(substr($0, RSTART + 1, RLENGTH - 2), v, ","); x = v[1] + 0; y = v[2] + 0;
  printf "{\"objective\": %.17g, \"constraints\": {\"g1\": %.17g}}\n", x + y, 1 - x * x - y * y }'
"#,
    );
    cli.write(
        "impossible.yaml",
        "name: impossible\ncommand: sh eval.sh\nvariables:\n  - { name: x, min: -0.5, max: 0.5 }\n  - { name: y, min: -0.5, max: 0.5 }\ninequalities: [g1]\n",
    );
    let suite = cli.write(
        "s.yaml",
        "name: mixed\ntasks:\n  - name: ring\n    problem: impossible.yaml\n    budget: { max_evaluations: 100 }\n  - name: g24\n    problem: g24\n    budget: { max_evaluations: 2000 }\n",
    );
    // `ring` has no feasible point: its run fails, and the exit code says so.
    let run = cli.run(&["run", suite.to_str().unwrap()]);
    let (out, err) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert_eq!(code(&run), 4, "{err}");
    // (Which run id `ring` gets depends on which task starts first.)
    assert!(err.contains("1 run failed or was aborted: ring (run "), "{err}");
    assert!(err.contains(", failed)\n  hint: `attractor inspect mixed`"), "{err}");
    assert!(out.contains("epoch   1"), "{out}");

    let inbox = cli.ok(&["interventions"]);
    assert!(inbox.contains("#1  [human_escalation]  Task `ring` found no feasible point"), "{inbox}");
    assert!(inbox.contains("attractor answer 1 approve|reject|hint"), "{inbox}");

    let out = cli.run(&["answer", "1", "hint"]);
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("a hint needs its text"));
    cli.ok(&["answer", "1", "hint", "feasible points may not exist in this box"]);
    assert!(cli.ok(&["interventions"]).contains("nothing waits"));
    assert!(cli.ok(&["interventions", "--all"]).contains("answered: hint — feasible points may not exist in this box"));
    let out = cli.run(&["answer", "1", "approve"]);
    assert_eq!(code(&out), 2, "an answer is final");
    assert_eq!(code(&cli.run(&["answer", "99", "reject"])), 2);

    let export: Value = serde_json::from_str(&cli.ok(&["export", "mixed"])).unwrap();
    let run = export["epochs"][0]["runs"].as_array().unwrap().iter().find(|r| r["task"] == "g24").unwrap().clone();
    let id = run["run_id"].as_i64().unwrap().to_string();
    let table = cli.ok(&["telemetry", &id]);
    assert!(table.contains("traj step status"), "{table}");
    assert!(table.contains("FEASIBLE_FOUND") && table.contains("heuristic"), "{table}");
    let rows: Value = serde_json::from_str(&cli.ok(&["--json", "telemetry", &id])).unwrap();
    assert!(!rows.as_array().unwrap().is_empty());
    assert_eq!(code(&cli.run(&["telemetry", "9999"])), 2);
}

#[test]
fn bench_numeric_writes_records_and_a_report_and_resumes_without_redoing_runs() {
    let cli = Cli::new();
    let out = cli.dir.path().join("bench");
    let out_s = out.to_str().unwrap();
    let args = [
        "bench",
        "numeric",
        "--runs",
        "2",
        "--budget",
        "3000",
        "--problems",
        // g17's trajectories take several steps: event-triggered supervision
        // asks less often than every step there (one-step descents — most of
        // g06's, spring's and, since descents may take 250 SLSQP iterations,
        // g18's — each arrive feasible once, an event each).
        "g06,g17",
        "--peers",
        "none",
        "--llm-runs",
        "1",
        "--out",
        out_s,
        "--quiet",
    ];
    cli.ok(&args);
    let ours = std::fs::read_to_string(out.join("attractor.jsonl")).unwrap();
    let rows: Vec<Value> = ours.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 4, "{ours}");
    for r in &rows {
        assert_eq!(r["method"], "attractor");
        assert!(r["evals"].as_u64().unwrap() <= 3000, "{r}");
        assert!(r["coordinator"]["trajectories"].as_u64().unwrap() >= 1, "{r}");
    }
    // g06 is solved well within 3,000 evaluations from either seed.
    assert!(rows.iter().filter(|r| r["problem"] == "g06").all(|r| r["success"] == true), "{ours}");
    // The supervision comparison: the scripted model is asked on every step in
    // every_step mode, less often in event_triggered mode.
    let sup = std::fs::read_to_string(out.join("supervision.jsonl")).unwrap();
    let sup: Vec<Value> = sup.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let calls = |mode: &str| -> (u64, u64) {
        sup.iter().filter(|r| r["method"] == format!("attractor+llm:{mode}")).fold((0, 0), |(c, s), r| {
            (c + r["coordinator"]["llm_calls"].as_u64().unwrap(), s + r["coordinator"]["steps"].as_u64().unwrap())
        })
    };
    let (every_calls, every_steps) = calls("every_step");
    let (event_calls, event_steps) = calls("event_triggered");
    assert_eq!(every_calls, every_steps);
    assert!(event_calls < event_steps, "{event_calls} calls in {event_steps} steps");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| g06 | 2/2 ("), "{report}");
    assert!(report.contains("| llm:every_step | 2 |"), "{report}");

    // Same command again: nothing is redone.
    cli.ok(&args);
    assert_eq!(std::fs::read_to_string(out.join("attractor.jsonl")).unwrap(), ours);

    // Other settings on the same folder are refused, not mixed in.
    let mut other = args.to_vec();
    other[5] = "4000";
    let refused = cli.run(&other);
    assert_eq!(code(&refused), 2);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--fresh"));

    let bad = cli.run(&["bench", "numeric", "--problems", "g99", "--peers", "none", "--out", out_s]);
    assert_eq!(code(&bad), 2);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("`g99` is not a built-in problem"));
}

#[test]
fn bench_engine_measures_real_trajectories_and_the_simulated_population() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("engine");
    let o = Command::new(env!("CARGO_BIN_EXE_attractor"))
        .args(["--quiet", "bench", "engine", "--concurrency", "1,2", "--iterations", "2", "--latency-ms", "20"])
        .args(["--population", "5", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let runs = results["loop"].as_array().unwrap();
    // Every trajectory spent its whole budget: 2 iterations each.
    assert_eq!(runs.iter().map(|r| r["iterations"].as_u64().unwrap()).collect::<Vec<_>>(), [2, 4]);
    for r in runs {
        assert!(r["iteration_ms"].as_f64().unwrap() >= 20.0, "{r}");
    }
    assert_eq!(results["population"].as_array().unwrap().len(), 12, "4 shapes × 3 methods");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| plateauing | retry ×5 | 5 | 0% |"), "{report}");
    let bad = Command::new(env!("CARGO_BIN_EXE_attractor"))
        .args(["bench", "engine", "--concurrency", "1,x", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("e.g. 1,8,32"));
}

#[test]
fn huge_durations_in_a_suite_are_located_errors_never_panics() {
    let cli = Cli::new();
    std::fs::create_dir_all(cli.dir.path().join("ws")).unwrap();
    let cases = [
        (
            "command-timeout.yaml",
            "name: n\ntasks:\n  - name: a\n    command: 'true'\n    timeout: 1e20\n",
            "5:14: field `tasks[0].timeout`",
        ),
        (
            "wall-time.yaml",
            "name: n\ntasks:\n  - name: a\n    command: 'true'\n    budget: { max_wall_time: 1e300 }\n",
            "field `tasks[0].budget.max_wall_time`",
        ),
        (
            "overseer.yaml",
            "name: n\ntasks:\n  - name: a\n    kind: agent\n    task: t\n    workspace: ws\n    overseers:\n      - { name: o, kind: test, command: 'true', timeout: 1e308 }\n",
            "timeout",
        ),
        (
            "executor.yaml",
            "name: n\ntasks:\n  - name: a\n    kind: agent\n    task: t\n    workspace: ws\n    executor: { type: command, command: 'true', timeout: 1e20 }\n    overseers:\n      - { name: o, kind: test, command: 'true' }\n",
            "executor.timeout",
        ),
    ];
    for (file, yaml, place) in cases {
        refused_by_validate_and_run(&cli, &cli.write(file, yaml), &[place, "at most 2592000 (30 days)"]);
    }
}

#[test]
fn numbers_out_of_range_in_an_agent_configuration_or_the_settings_file_exit_2_at_their_place() {
    let cli = Cli::new();
    let config = cli.write(
        "agent.json",
        "{\n  \"engine\": {\"classification\": {\"window\": 0}},\n  \"intervention_timeout_secs\": 1e300\n}\n",
    );
    let out = cli.run(&["run", &example(), "--agent-config", config.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("agent.json:2:43: field `engine.classification.window`: 0 is outside the range 1 to 100000"),
        "{err}"
    );
    assert!(err.contains("agent.json:3:32: field `intervention_timeout_secs`: 1e300 is outside"), "{err}");
    assert!(err.contains("hint: use a value in that range; the default is 5"), "{err}");
    assert!(!cli.db().exists() || cli.ok(&["inspect"]).contains("no suites"), "nothing ran");

    let settings = cli.write("settings.json", "{\"llm_limits\": {\"attempts\": 1e20}}");
    let out = cli.cmd(&["run", &example()]).env("ATTRACTOR_SETTINGS", &settings).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("settings.json:1:29: field `llm_limits.attempts`"), "{err}");
    assert!(err.contains("hint: ") && !err.contains("u32"), "{err}");
}

#[test]
fn without_bubblewrap_an_agent_run_stops_before_it_starts_and_names_the_switch() {
    let cli = Cli::new();
    std::fs::create_dir_all(cli.dir.path().join("ws")).unwrap();
    let suite = cli.write(
        "agent.suite.yaml",
        "name: boxed\ntasks:\n  - name: a\n    kind: agent\n    task: t\n    workspace: ws\n    executor: { type: command, command: 'true' }\n    overseers:\n      - { name: o, kind: custom, command: 'true' }\n",
    );
    // No `bwrap` on this PATH: the sandbox cannot start.
    let empty = cli.dir.path().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let out = cli.cmd(&["run", suite.to_str().unwrap()]).env("PATH", &empty).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("bubblewrap (`bwrap`) is not installed"), "{err}");
    assert!(err.contains("--no-sandbox") && err.contains("ATTRACTOR_SANDBOX=off"), "{err}");
    assert!(cli.ok(&["inspect"]).contains("no suites") || !cli.db().exists(), "nothing ran");
}

/// `validate` and `run` both refuse the suite at `path` with exit 2, no
/// panic, and every text of `says` in the message.
fn refused_by_validate_and_run(cli: &Cli, path: &Path, says: &[&str]) {
    for verb in ["validate", "run"] {
        let out = cli.run(&[verb, path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 2, "{verb} {}: {err}", path.display());
        assert!(!err.contains("panicked"), "{verb} {}: {err}", path.display());
        for s in says {
            assert!(err.contains(s), "{verb} {}: no `{s}` in {err}", path.display());
        }
    }
}

#[test]
fn every_hostile_file_is_refused_as_its_manifest_says() {
    let cli = Cli::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    let manifest = std::fs::read_to_string(dir.join("expected.txt")).unwrap();
    let expected: Vec<(&str, Vec<&str>)> = manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (file, says) = l.split_once('\t').unwrap_or_else(|| panic!("no tab in `{l}`"));
            (file, says.split(" | ").collect())
        })
        .collect();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f != "expected.txt")
        .collect();
    files.sort();
    let listed: Vec<&str> = expected.iter().map(|(f, _)| *f).collect();
    assert_eq!(files, listed, "every hostile file has one line in expected.txt, in order");
    for (file, says) in &expected {
        let path = dir.join(file);
        refused_by_validate_and_run(&cli, &path, says);
        let out = cli.run(&["validate", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("hint: "), "{file}: no hint in {err}");
        assert!(!err.contains(":0:"), "{file}: a place counted from 0 in {err}");
    }
}

#[test]
fn paths_that_lead_outside_the_suite_folder_are_refused_with_their_place() {
    let cli = Cli::new();
    std::os::unix::fs::symlink("/etc", cli.dir.path().join("etc-link")).unwrap();
    let cases = [
        (
            "problem.yaml",
            "name: n\ntasks:\n  - name: a\n    task: t\n    problem: ../../etc/passwd\n",
            "5:14: field `tasks[0].problem`",
        ),
        (
            "workspace.yaml",
            "name: n\ntasks:\n  - name: a\n    kind: agent\n    task: t\n    workspace: ../../../../etc\n    overseers:\n      - { name: o, kind: test, command: 'true' }\n",
            "6:16: field `tasks[0].workspace`",
        ),
        (
            "artifact.yaml",
            "name: n\nartifacts:\n  - name: secret\n    type: text\n    file: /etc/passwd\ntasks:\n  - name: a\n    command: 'true'\n",
            "5:11: field `artifacts[0].file`",
        ),
        (
            "link.yaml",
            "name: n\nartifacts:\n  - name: secret\n    type: text\n    file: etc-link/passwd\ntasks:\n  - name: a\n    command: 'true'\n",
            "field `artifacts[0].file`",
        ),
    ];
    for (file, yaml, place) in cases {
        refused_by_validate_and_run(&cli, &cli.write(file, yaml), &[place, "leads outside the suite's folder"]);
    }
    // Nothing of /etc reached the database.
    let db = std::fs::read(cli.db()).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&db).contains("root:x:0:0"), "/etc/passwd was read in");
}

#[test]
fn a_folder_outside_is_usable_only_when_the_user_allows_it_by_flag_or_setting() {
    let cli = Cli::new();
    let shared = tempfile::tempdir().unwrap();
    std::fs::write(shared.path().join("notes.md"), "shared notes\n").unwrap();
    let suite = cli.write(
        "s.yaml",
        &format!(
            "name: n\nartifacts:\n  - name: notes\n    type: text\n    file: {}/notes.md\ntasks:\n  - name: a\n    command: 'true'\n",
            shared.path().display()
        ),
    );
    let path = suite.to_str().unwrap();
    let out = cli.run(&["validate", path]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains("5:11: field `artifacts[0].file`") && err.contains("--allow-outside DIR"), "{err}");

    // The flag allows that folder, and only it.
    let dir = shared.path().to_str().unwrap();
    assert!(cli.ok(&["validate", path, "--allow-outside", dir]).contains("is valid"));
    let elsewhere = tempfile::tempdir().unwrap();
    let out = cli.run(&["validate", path, "--allow-outside", elsewhere.path().to_str().unwrap()]);
    assert_eq!(code(&out), 2);

    // So does the settings file the app writes.
    let settings = cli.write("settings.json", &format!("{{\"allowed_outside\": [\"{dir}\"]}}"));
    let out = cli.cmd(&["validate", path]).env("ATTRACTOR_SETTINGS", &settings).output().unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_second_run_of_a_suite_is_refused_with_its_holder_and_a_dead_holder_is_taken_over() {
    let cli = Cli::new();
    let mark = cli.dir.path().join("started");
    let release = cli.dir.path().join("release");
    cli.write(
        "wait.sh",
        "touch \"$MARK\"; while [ ! -e \"$RELEASE\" ]; do sleep 0.05; done; echo '{\"status\": \"complete\"}' > \"$ATTRACTOR_RESULT_FILE\"\n",
    );
    let suite = cli.write(
        "s.yaml",
        &format!(
            "name: single\ntasks:\n  - name: wait\n    command: sh \"$ATTRACTOR_SUITE_DIR/wait.sh\"\n    env: {{ MARK: \"{}\", RELEASE: \"{}\" }}\n",
            mark.display(),
            release.display()
        ),
    );
    let args = ["run", suite.to_str().unwrap()];
    let first = cli.cmd(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    while !mark.exists() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = cli.run(&args);
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(code(&second), 3, "{err}");
    assert!(err.contains(&format!("suite `single` is being run by attractor run (pid {} on ", first.id())), "{err}");
    assert!(err.contains("hint: wait for it to finish"), "{err}");
    std::fs::write(&release, "").unwrap();
    let out = first.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let export: Value = serde_json::from_str(&cli.ok(&["export", "single"])).unwrap();
    assert_eq!(export["epochs"].as_array().unwrap().len(), 1, "the refused run wrote no epoch");
    assert_eq!(export["epochs"][0]["runs"].as_array().unwrap().len(), 1, "and no run row");

    // A holder that died without giving the lease back (kill -9): the next
    // run takes the suite over.
    let victim = cli.cmd(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    std::fs::remove_file(&release).unwrap();
    std::fs::remove_file(&mark).unwrap();
    while !mark.exists() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut victim = victim;
    victim.kill().unwrap();
    victim.wait().unwrap();
    std::fs::write(&release, "").unwrap();
    let out = cli.run(&args);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn unreadable_empty_binary_and_duplicate_key_files_are_located_from_1_with_a_hint() {
    let cli = Cli::new();
    let write = |name: &str, bytes: &[u8]| {
        let p = cli.dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    std::fs::create_dir_all(cli.dir.path().join("folder.yaml")).unwrap();
    let cases = [
        (write("empty.yaml", b""), "empty.yaml:1:1", "the file is empty"),
        (write("tilde.yaml", b"~\n"), "tilde.yaml:1:1", "the file is empty"),
        (write("latin1.yaml", b"name: caf\xe9\ntasks: []\n"), "latin1.yaml:1:1", "not UTF-8 text (byte 10"),
        (write("binary.yaml", &[0x7f, b'E', b'L', b'F', 0xff, 0xfe, 0, 0]), "binary.yaml:1:1", "binary file"),
        (cli.dir.path().join("folder.yaml"), "folder.yaml:1:1", "this is a folder"),
        // Past the YAML reader's safety limit of values (a quarter of a million).
        (
            write(
                "values.yaml",
                (0..60_000)
                    .fold(String::from("name: n\ntasks:\n"), |s, i| s + &format!("  - {{name: t{i}, command: x}}\n"))
                    .as_bytes(),
            ),
            "values.yaml:",
            "too large or too deeply nested",
        ),
        (cli.dir.path().join("missing.yaml"), "missing.yaml:1:1", "there is no suite file here"),
        (
            write("twice.yaml", b"name: a\nname: b\ntasks:\n  - name: t\n    command: 'true'\n"),
            "twice.yaml:",
            "the same key appears twice",
        ),
    ];
    for (path, place, says) in cases {
        let out = cli.run(&["validate", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 2, "{err}");
        assert!(err.contains(place) && err.contains(says), "{}: {err}", path.display());
        assert!(err.contains("hint:"), "{}: {err}", path.display());
        assert!(!err.contains(":0:0") && !err.contains("DuplicateKeyPolicy") && !err.contains("panicked"), "{err}");
    }
}

#[test]
fn gc_prunes_old_run_folders_and_stale_cache_after_a_dry_run_that_changes_nothing() {
    // It reads the file itself (cached replies, its size).
    let cli = Cli::sqlite();
    let example = example();
    cli.ok(&["run", &example, "--epochs", "3", "--seed", "1"]);
    let runs = cli.dir.path().join("runs/descent-tuning");
    let epoch = |n: u32| runs.join(format!("epoch-{n:04}"));
    assert!(epoch(1).is_dir() && epoch(3).is_dir());
    // A model reply cached long ago, and one from today.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", cli.db().display())).await.unwrap();
        for (key, at) in [("old", "2020-01-01T00:00:00.000Z"), ("new", "2999-01-01T00:00:00.000Z")] {
            sqlx::query("INSERT INTO llm_cache (key, base_url, model, request_json, response_json, created_at) VALUES (?, 'u', 'm', '{}', '{}', ?)")
                .bind(key)
                .bind(at)
                .execute(&pool)
                .await
                .unwrap();
        }
        pool.close().await;
    });

    let dry = cli.ok(&["gc", "--keep-epochs", "1", "--dry-run"]);
    assert!(dry.contains("would remove 8 run folders") && dry.contains("would drop 1 cached"), "{dry}");
    assert!(epoch(1).is_dir() && epoch(2).is_dir(), "a dry run removes nothing");

    let done = cli.ok(&["gc", "--keep-epochs", "1"]);
    assert!(done.contains("removed 8 run folders") && done.contains("dropped 1 cached"), "{done}");
    assert!(!epoch(1).exists() && !epoch(2).exists() && epoch(3).is_dir(), "{done}");
    let left = rt.block_on(async {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", cli.db().display())).await.unwrap();
        let n: Vec<String> = sqlx::query_scalar("SELECT key FROM llm_cache").fetch_all(&pool).await.unwrap();
        pool.close().await;
        n
    });
    assert_eq!(left, ["new"]);
    // The history is untouched: every epoch and run is still there.
    let export: Value = serde_json::from_str(&cli.ok(&["export", "descent-tuning"])).unwrap();
    assert_eq!(export["epochs"].as_array().unwrap().len(), 3);
    assert_eq!(export["epochs"][0]["runs"].as_array().unwrap().len(), 4);
    assert!(cli.ok(&["gc", "--keep-epochs", "1"]).contains("removed 0 run folders"));
}

#[tokio::test]
async fn a_server_started_from_another_folder_still_names_the_bundled_examples() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_attractor"))
        .current_dir(dir.path())
        .env("ATTRACTOR_SETTINGS", dir.path().join("settings.json"))
        .args(["--db", &dir.path().join("a.db").display().to_string(), "serve", "--port", "0"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // The server says where it listens on its first lines.
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stdout.take().unwrap()));
    let url = loop {
        let line = lines.next_line().await.unwrap().expect("the server said where it listens");
        if let Some(at) = line.split("listening on ").nth(1) {
            break at.split_whitespace().next().unwrap().to_string();
        }
    };
    let overview: Value = reqwest::get(format!("{url}api/overview")).await.unwrap().json().await.unwrap();
    let expected = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").display().to_string();
    assert_eq!(overview["examples_dir"], Value::String(expected), "{overview}");
    child.kill().await.unwrap();
}

#[test]
fn names_in_any_script_run_and_become_safely_encoded_folders() {
    let cli = Cli::sqlite();
    let suite = cli.write(
        "u.suite.yaml",
        "name: ünï-cødé\nartifacts:\n  - name: задача\n    type: text\n    content: hi\ntasks:\n  - name: 定价\n    command: |\n      printf '%s' \"$ATTRACTOR_TASK_NAME\" > name.txt\n      echo '{\"status\": \"complete\"}' > \"$ATTRACTOR_RESULT_FILE\"\n",
    );
    cli.ok(&["run", &suite.display().to_string(), "--epochs", "1"]);
    let run = cli.dir.path().join("runs/~c3~bcn~c3~af-c~c3~b8d~c3~a9/epoch-0001/~e5~ae~9a~e4~bb~b7");
    // The harness sees the name as written; the folder holds it encoded.
    assert_eq!(std::fs::read_to_string(run.join("name.txt")).unwrap(), "定价");
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("artifacts/index.json")).unwrap()).unwrap();
    let file = index["задача"]["file"].as_str().unwrap();
    assert_eq!(file, "~d0~b7~d0~b0~d0~b4~d0~b0~d1~87~d0~b0.txt");
    assert_eq!(std::fs::read_to_string(run.join("artifacts").join(file)).unwrap(), "hi");
    let listed = cli.ok(&["inspect", "ünï-cødé"]);
    assert!(listed.contains("定价"), "{listed}");
    // What still cannot be a name is refused, saying what may be.
    let bad = cli.write("b.suite.yaml", "name: a/b\ntasks:\n  - name: t\n    command: x\n");
    let out = cli.run(&["validate", &bad.display().to_string()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("in any script") && err.contains("b.suite.yaml:1:"), "{err}");
}
