//! External problems: the YAML problem file, and evaluator commands that
//! behave, hang, print garbage, leave out a constraint or fail.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use attractor::numeric::{ExternalError, ExternalProblem, Problem, load_external};

/// A temporary folder holding `problem.yaml` (and whatever else is written there).
struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new() -> Self {
        Dir { dir: tempfile::tempdir().unwrap() }
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Loads a problem with two variables, one inequality `g1` and one equality
/// `h1`, evaluated by `command`.
fn problem(dir: &Dir, command: &str, timeout: &str) -> ExternalProblem {
    let yaml = format!(
        "name: test-problem\ncommand: {}\ntimeout: {timeout}\nvariables:\n  - {{ name: a, min: -5, max: 5 }}\n  - {{ name: b, min: 0, max: 10 }}\ninequalities: [g1]\nequalities: [h1]\n",
        // A JSON string is a YAML double-quoted scalar.
        serde_json::to_string(command).unwrap()
    );
    let path = dir.write("problem.yaml", &yaml);
    load_external(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn eval_err(p: &ExternalProblem) -> String {
    match p.evaluate(&[1.0, 2.0]) {
        Ok(e) => panic!("expected an evaluation error, got {e:?}"),
        Err(e) => e.to_string(),
    }
}

const GOOD: &str = r#"
import json, os, sys
request = json.load(sys.stdin)
v = dict(zip(request["names"], request["x"]))
print("debug: evaluating in", os.path.basename(os.getcwd()))   # a line before the JSON is allowed
print(json.dumps({"objective": v["a"] ** 2 + v["b"],
                  "constraints": {"g1": v["a"] - 3.0, "h1": v["b"] - 2.0 * v["a"]},
                  "extra": "ignored"}))
"#;

#[test]
fn a_good_evaluator_gets_the_point_on_stdin_and_runs_in_the_problem_folder() {
    let dir = Dir::new();
    dir.write("eval.py", GOOD);
    // A relative script path: only found when the command runs in the problem's folder.
    let p = problem(&dir, "python3 eval.py", "20");
    assert_eq!(p.name(), "test-problem");
    assert_eq!(p.dimension(), 2);
    assert_eq!(p.bounds(), vec![(-5.0, 5.0), (0.0, 10.0)]);
    assert_eq!(p.inequality_names(), vec!["g1"]);
    assert_eq!(p.equality_names(), vec!["h1"]);
    assert_eq!(p.timeout(), Duration::from_secs(20));
    assert_eq!(p.best_known(), None);
    assert!(p.dir().is_absolute());

    let e = p.evaluate(&[1.5, 4.0]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.objective, 1.5 * 1.5 + 4.0);
    assert_eq!(e.inequalities, vec![1.5 - 3.0]);
    assert_eq!(e.equalities, vec![4.0 - 3.0]);
    assert_eq!(e.max_violation(), 1.0);

    // Problems are shared between threads: evaluations may run side by side.
    let p = std::sync::Arc::new(p);
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let p = p.clone();
            std::thread::spawn(move || p.evaluate(&[i as f64, 0.0]).unwrap().objective)
        })
        .collect();
    let got: Vec<f64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(got, vec![0.0, 1.0, 4.0, 9.0]);
}

#[test]
fn an_evaluator_past_its_timeout_is_killed_with_what_it_started() {
    let dir = Dir::new();
    // The shell starts a background sleep and waits for it: killing only the
    // shell would leave the sleep running (and holding the output pipe open).
    let p = problem(&dir, "sleep 30 & echo $! > sleeper.pid; wait", "1");
    let start = Instant::now();
    let err = eval_err(&p);
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(900), "returned after {took:?}");
    assert!(err.contains("timed out after 1 s"), "{err}");
    assert!(err.contains("sleep 30 &"), "the message names the command: {err}");

    let pid = std::fs::read_to_string(dir.path().join("sleeper.pid")).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        // Gone, or a zombie waiting for whoever adopted it.
        match std::fs::read_to_string(&stat) {
            Err(_) => break,
            Ok(s) if s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')) => {
                break;
            }
            Ok(s) => assert!(Instant::now() < deadline, "the background sleep still runs: {s}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn garbage_output_is_an_error_quoting_it() {
    let dir = Dir::new();
    let p = problem(&dir, "echo 'hello, this is not JSON'", "10");
    let err = eval_err(&p);
    assert!(err.starts_with("external problem `test-problem`: `echo"), "{err}");
    assert!(err.contains("did not print JSON"), "{err}");
    assert!(err.contains("hello, this is not JSON"), "{err}");

    let silent = problem(&dir, "true", "10");
    assert!(eval_err(&silent).contains("printed nothing on stdout"));

    let not_object = problem(&dir, "echo '[1, 2]'", "10");
    assert!(eval_err(&not_object).contains("not an object"));

    // Talk before the answer: the answer's own error is the one given (it
    // was the first line's "expected value at line 1 column 1").
    let huge = problem(&dir, r#"echo 'evaluating…'; echo '{"objective": 1e400, "constraints": {}}'"#, "10");
    let err = eval_err(&huge);
    assert!(
        err.contains("printed a number too large for a 64-bit float (number out of range at line 1 column"),
        "{err}"
    );
    assert!(err.contains("in its last line"), "{err}");

    let long = problem(&dir, "yes garbage | head -c 100000", "10");
    let err = eval_err(&long);
    assert!(err.contains("did not print JSON"), "{err}");
    assert!(err.len() < 800, "the excerpt is short: {} characters", err.len());
}

#[test]
fn a_missing_or_unknown_constraint_is_an_error_naming_it() {
    let dir = Dir::new();
    let omits = problem(&dir, r#"echo '{"objective": 1, "constraints": {"g1": -1}}'"#, "10");
    let err = eval_err(&omits);
    assert!(err.contains(r#"no value for constraint "h1""#), "{err}");

    let unknown = problem(&dir, r#"echo '{"objective": 1, "constraints": {"g1": -1, "h1": 0, "g9": 2}}'"#, "10");
    let err = eval_err(&unknown);
    assert!(err.contains(r#"unknown constraint "g9""#), "{err}");
    assert!(err.contains(r#"declares "g1", "h1""#), "{err}");

    let no_block = problem(&dir, r#"echo '{"objective": 1}'"#, "10");
    assert!(eval_err(&no_block).contains(r#"printed no "constraints""#));

    let no_objective = problem(&dir, r#"echo '{"constraints": {"g1": -1, "h1": 0}}'"#, "10");
    assert!(eval_err(&no_objective).contains(r#"printed no "objective""#));

    let text_value = problem(&dir, r#"echo '{"objective": 1, "constraints": {"g1": "low", "h1": 0}}'"#, "10");
    let err = eval_err(&text_value);
    assert!(err.contains(r#"value for constraint "g1" that is not a number"#), "{err}");
}

#[test]
fn a_non_finite_value_is_an_error() {
    let dir = Dir::new();
    // What Python's json.dumps prints for float("nan").
    let nan = problem(&dir, r#"echo '{"objective": NaN, "constraints": {"g1": -1, "h1": 0}}'"#, "10");
    assert!(eval_err(&nan).contains("non-finite"));
    let inf = problem(&dir, r#"echo '{"objective": 1, "constraints": {"g1": -Infinity, "h1": 0}}'"#, "10");
    assert!(eval_err(&inf).contains("non-finite"));
}

#[test]
fn a_non_zero_exit_is_an_error_with_its_stderr() {
    let dir = Dir::new();
    let p = problem(&dir, r#"echo '{"objective": 1}'; echo "model diverged" >&2; exit 3"#, "10");
    let err = eval_err(&p);
    assert!(err.contains("exited with code 3"), "{err}");
    assert!(err.contains("model diverged"), "{err}");
}

#[test]
fn a_point_of_the_wrong_length_is_refused_before_running_anything() {
    let dir = Dir::new();
    let p = problem(&dir, "touch ran", "10");
    let err = p.evaluate(&[1.0]).unwrap_err().to_string();
    assert!(err.contains("2 coordinates, got 1"), "{err}");
    let err = p.evaluate(&[1.0, f64::NAN]).unwrap_err().to_string();
    assert!(err.contains("non-finite coordinate"), "{err}");
    assert!(!dir.path().join("ran").exists());
}

fn load_err(yaml: &str) -> (ExternalError, PathBuf) {
    let dir = Dir::new();
    let path = dir.write("problem.yaml", yaml);
    match load_external(&path) {
        Ok(p) => panic!("expected an error, got {p:?}"),
        Err(e) => (e, path),
    }
}

#[test]
fn an_unknown_key_is_reported_with_file_line_column_and_field() {
    let (err, path) = load_err("name: p\ncommand: ./eval\ntimout: 5\nvariables:\n  - { name: x, min: 0, max: 1 }\n");
    assert_eq!(err.issues.len(), 1, "{err}");
    let issue = &err.issues[0];
    assert_eq!((issue.location.line, issue.location.column), (3, 1), "{err}");
    assert!(issue.message.contains("unknown field `timout`"), "{err}");
    let shown = err.to_string();
    assert!(shown.starts_with(&format!("{}:3:1: ", path.display())), "{shown}");

    // Inside a variable: the field path names the list entry.
    let (err, _) = load_err(
        "name: p\ncommand: ./eval\nvariables:\n  - { name: x, min: 0, max: 1 }\n  - { name: y, mni: 0, max: 1 }\n",
    );
    let issue = &err.issues[0];
    assert_eq!(issue.location.line, 5, "{err}");
    assert!(issue.field.starts_with("variables[1]"), "{err}");
    assert!(issue.message.contains("unknown field `mni`"), "{err}");
}

#[test]
fn wrong_values_are_reported_where_they_are_written() {
    let (err, _) = load_err("name: p\ncommand: ./eval\ntimeout: fast\nvariables:\n  - { name: x, min: 0, max: 1 }\n");
    assert_eq!(err.issues[0].location.line, 3, "{err}");
    assert_eq!(err.issues[0].field, "timeout", "{err}");

    let (err, _) = load_err("name: p\nvariables:\n  - { name: x, min: 0, max: 1 }\n");
    assert!(err.to_string().contains("missing field `command`"), "{err}");

    // Several problems at once, in file order, each with its field.
    let (err, path) = load_err(
        "name: p\ncommand: ./eval\ntimeout: 0\nvariables:\n  - { name: x, min: 2, max: 1 }\n  - { name: x, min: 0, max: 1 }\ninequalities: [c, c]\n",
    );
    let found: Vec<(u32, u32, &str)> =
        err.issues.iter().map(|i| (i.location.line, i.location.column, i.field.as_str())).collect();
    assert_eq!(
        found,
        vec![(3, 10, "timeout"), (5, 29, "variables[0].max"), (6, 13, "variables[1].name"), (7, 19, "inequalities[1]"),],
        "{err}"
    );
    let shown = err.to_string();
    assert!(
        shown.contains(&format!("{}:5:29: field `variables[0].max`: max 1 is below min 2", path.display())),
        "{shown}"
    );

    let (err, _) = load_err("name: p\ncommand: ./eval\nvariables: []\n");
    assert_eq!(err.issues[0].field, "variables", "{err}");
    assert!(err.issues[0].message.contains("no variables"), "{err}");
}

#[test]
fn a_problem_file_loads_with_defaults_and_its_best_known_value() {
    let dir = Dir::new();
    let path = dir.write(
        "p.yaml",
        "name: my-problem\ncommand: python3 eval.py\nvariables:\n  - { name: x1, min: 0, max: 10 }\nbest_known: 1.23\n",
    );
    let p = load_external(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.timeout(), Duration::from_secs(30));
    assert_eq!(p.best_known().map(|b| (b.value, b.x)), Some((1.23, None)));
    assert!(p.inequality_names().is_empty() && p.equality_names().is_empty());
    assert_eq!(p.command(), "python3 eval.py");
    assert_eq!(p.variables()[0].name, "x1");
    assert_eq!(p.feasibility_tolerance(), None, "the coordinator's tolerance applies");

    let strict = dir.write(
        "s.yaml",
        "name: s\ncommand: python3 eval.py\nvariables:\n  - { name: x1, min: 0, max: 1 }\ntolerance: 1e-8\n",
    );
    assert_eq!(load_external(&strict).unwrap_or_else(|e| panic!("{e}")).feasibility_tolerance(), Some(1e-8));
    let bad = dir.write(
        "b.yaml",
        "name: b\ncommand: python3 eval.py\nvariables:\n  - { name: x1, min: 0, max: 1 }\ntolerance: 2\n",
    );
    let err = load_external(&bad).unwrap_err().to_string();
    assert!(err.contains("b.yaml:5:12") && err.contains("tolerance 2 is not a number between 0 and 1"), "{err}");

    let missing = dir.path().join("nope.yaml");
    let err = load_external(&missing).unwrap_err().to_string();
    assert!(err.contains("nope.yaml:1:1") && err.contains("there is no problem file here"), "{err}");
}

#[test]
fn an_unconstrained_problem_needs_no_constraints_block() {
    let dir = Dir::new();
    let path = dir.write(
        "p.yaml",
        "name: free\ncommand: \"echo '{\\\"objective\\\": 2.5}'\"\nvariables:\n  - { name: x1, min: 0, max: 10 }\n",
    );
    let p = load_external(&path).unwrap_or_else(|e| panic!("{e}"));
    let e = p.evaluate(&[1.0]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.objective, 2.5);
    assert_eq!(e.max_violation(), 0.0);
}

#[test]
fn output_is_read_even_when_a_leftover_background_process_holds_the_pipe() {
    let dir = Dir::new();
    // The leftover outlives the evaluation's timeout: waiting for the pipe
    // to close would end in "timed out", not in the objective.
    let p = problem(&dir, r#"echo '{"objective": 7, "constraints": {"g1": 0, "h1": 0}}'; sleep 30 &"#, "2");
    let e = p.evaluate(&[1.0, 2.0]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.objective, 7.0);
}
