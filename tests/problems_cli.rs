//! `attractor problems` end to end through the real binary: the JSON list
//! other programs read the problem definitions from, and the eval line
//! protocol bench/peers.py drives peer optimizers through.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn attractor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_attractor"))
        .args(args)
        .env_remove("ATTRACTOR_DB")
        .output()
        .expect("spawn attractor")
}

fn stdout_json(out: &Output) -> Value {
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

#[test]
fn list_json_describes_every_builtin_with_bounds_constraints_and_reference() {
    let list = stdout_json(&attractor(&["--json", "problems", "list"]));
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 28);
    let g01 = &list[0];
    assert_eq!(g01["name"], "g01");
    assert_eq!(g01["dimension"], 13);
    assert_eq!(g01["bounds"].as_array().unwrap().len(), 13);
    assert_eq!(g01["bounds"][9], serde_json::json!([0.0, 100.0]));
    assert_eq!(g01["inequalities"].as_array().unwrap().len(), 9);
    assert_eq!(g01["equalities"], serde_json::json!([]));
    assert_eq!(g01["reference"], -15.0);
    // The reference of an equality-constrained problem is its exactly feasible
    // optimum, not the published best-known value reached with the 1e-4 slack.
    let g03 = list.iter().find(|p| p["name"] == "g03").unwrap();
    assert_eq!(g03["reference"], -1.0);
    assert_ne!(g03["best_known"], g03["reference"]);
    assert_eq!(g03["equalities"], serde_json::json!(["h1"]));

    let table = attractor(&["problems", "list", "g24", "spring"]);
    let table = String::from_utf8(table.stdout).unwrap();
    assert_eq!(table.lines().count(), 3, "{table}");
    assert!(table.lines().nth(2).unwrap().starts_with("spring"), "{table}");
}

#[test]
fn a_problem_file_is_listed_and_an_unknown_name_exits_2_naming_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ring.yaml");
    std::fs::write(
        &file,
        "name: ring\ncommand: sh eval.sh\nvariables:\n  - { name: x, min: -1, max: 1 }\ninequalities: [g1]\nbest_known: -1\n",
    )
    .unwrap();
    let list = stdout_json(&attractor(&["--json", "problems", "list", file.to_str().unwrap()]));
    assert_eq!(list[0]["name"], "ring");
    assert_eq!(list[0]["reference"], -1.0);
    assert_eq!(list[0]["inequalities"], serde_json::json!(["g1"]));

    for args in [&["problems", "eval", "g99"][..], &["problems", "list", "g01", "g99"]] {
        let out = attractor(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("unknown problem `g99`") && err.contains("g01, g02"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn eval_answers_line_by_line_and_survives_bad_lines() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_attractor"))
        .args(["problems", "eval", "g01"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // One line at a time, waiting for each answer: the answers must be
    // flushed per line, or this deadlocks.
    let mut ask = |line: &str| -> Value {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("not JSON ({e}): {answer}"))
    };
    let best = "[1,1,1,1,1,1,1,1,1,3,3,3,1]";
    let v = ask(best);
    assert!((v["objective"].as_f64().unwrap() + 15.0).abs() < 1e-12, "{v}");
    assert_eq!(v["inequalities"].as_array().unwrap().len(), 9);
    assert!(v["inequalities"].as_array().unwrap().iter().all(|g| g.as_f64().unwrap() <= 1e-12), "{v}");
    assert_eq!(v["equalities"], serde_json::json!([]));

    for bad in ["[1, 2]", "hello", "[NaN, 1,1,1,1,1,1,1,1,3,3,3,1]", "[1e400,1,1,1,1,1,1,1,1,3,3,3,1]"] {
        let v = ask(bad);
        let err = v["error"].as_str().unwrap_or_else(|| panic!("{bad} → {v}"));
        assert!(err.starts_with("line "), "{err}");
        assert!(err.contains("13 numbers"), "{err}");
    }
    let again = ask(best);
    assert!((again["objective"].as_f64().unwrap() + 15.0).abs() < 1e-12, "still answering after bad lines: {again}");

    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "end of input ends the process cleanly");
}
