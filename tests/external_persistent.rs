//! The persistent evaluator mode (protocol 2) against real Python processes:
//! many points per message in one process, gradients, a point's own error,
//! and processes that crash, hang, exit while idle or print something that
//! is not a reply — each an error naming what happened, followed by a fresh
//! process on the next message.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use attractor::numeric::{EvaluatorMode, ExternalProblem, Problem, load_external, parse_external};

/// A folder with `eval.py` (the evaluator under test) and `problem.yaml`.
struct Evaluator {
    dir: tempfile::TempDir,
}

impl Evaluator {
    /// `body` is Python run for each request line, with `request` the parsed
    /// line and `reply(results)` printing the answer.
    fn new(body: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            "import json, os, sys, time\n\
             def value(x):\n    return {{\"objective\": x[0] ** 2 + x[1], \"constraints\": {{\"g1\": x[0] - 3.0}}}}\n\
             def reply(request, results):\n    print(json.dumps({{\"id\": request[\"id\"], \"results\": results}}), flush=True)\n\
             for line in sys.stdin:\n    request = json.loads(line)\n{}\n",
            body.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
        );
        std::fs::write(dir.path().join("eval.py"), script).unwrap();
        Evaluator { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The problem: two variables, one inequality, with `extra` YAML lines.
    fn problem(&self, extra: &str) -> ExternalProblem {
        let yaml = format!(
            "name: twin\ncommand: python3 eval.py\nmode: persistent\n{extra}\nvariables:\n  - {{ name: a, min: -5, max: 5 }}\n  - {{ name: b, min: 0, max: 10 }}\ninequalities: [g1]\n"
        );
        let path = self.dir.path().join("problem.yaml");
        std::fs::write(&path, yaml).unwrap();
        load_external(&path).unwrap_or_else(|e| panic!("{e}"))
    }
}

fn points(n: usize) -> Vec<Vec<f64>> {
    (0..n).map(|i| vec![i as f64 * 0.01, 1.0 + i as f64]).collect()
}

fn error_of(p: &ExternalProblem, x: &[f64]) -> String {
    match p.evaluate(x) {
        Ok(e) => panic!("expected an error, got {e:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn many_points_are_answered_in_order_by_one_process() {
    let ev = Evaluator::new(
        "with open('pid', 'a') as f: f.write(f'{os.getpid()}\\n')\nreply(request, [value(x) for x in request['points']])",
    );
    let p = ev.problem("processes: 1\nbatch: 50");
    assert_eq!(p.mode(), EvaluatorMode::Persistent);
    let xs = points(120);
    let answers = p.evaluate_batch(&xs);
    assert_eq!(answers.len(), 120);
    for (x, a) in xs.iter().zip(&answers) {
        let e = a.as_ref().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.objective, x[0] * x[0] + x[1]);
        assert_eq!(e.inequalities, vec![x[0] - 3.0]);
        assert_eq!(e.gradients, None);
    }
    // One more point, one more message, the same process.
    assert!(p.evaluate(&[1.0, 2.0]).is_ok());
    assert_eq!(p.processes_started(), 1);
    let pids = std::fs::read_to_string(ev.path().join("pid")).unwrap();
    let pids: Vec<&str> = pids.lines().collect();
    assert_eq!(pids.len(), 4, "120 points in messages of at most 50 (3), then 1: {pids:?}");
    assert!(pids.iter().all(|p| *p == pids[0]), "every message went to one process: {pids:?}");
}

#[test]
fn the_bundled_example_answers_with_exact_gradients_in_both_modes() {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/evaluator/cantilever.yaml");
    let persistent = load_external(&example).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(persistent.mode(), EvaluatorMode::Persistent);
    let x = [6.0, 5.3, 4.5, 3.5, 2.2];
    let e = persistent.evaluate(&x).unwrap_or_else(|e| panic!("{e}"));
    assert!((e.objective - 0.0624 * 21.5).abs() < 1e-12);
    let g = e.gradients.clone().expect("the example sends gradients");
    assert_eq!(g.objective, vec![0.0624; 5]);
    assert!((g.inequalities[0][0] - (-3.0 * 61.0 / 6.0f64.powi(4))).abs() < 1e-12);

    // The same script in the one-shot mode gives the same values.
    let text = std::fs::read_to_string(&example).unwrap().replace("mode: persistent", "mode: once");
    let once = parse_external(&text, &example).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(once.mode(), EvaluatorMode::Once);
    assert_eq!(once.evaluate(&x).unwrap_or_else(|e| panic!("{e}")), e);
}

#[test]
fn a_point_the_evaluator_cannot_evaluate_fails_alone() {
    let ev = Evaluator::new(
        "reply(request, [{'error': 'b must not be 7'} if x[1] == 7 else value(x) for x in request['points']])",
    );
    let p = ev.problem("processes: 1");
    let answers = p.evaluate_batch(&[vec![1.0, 6.0], vec![1.0, 7.0], vec![1.0, 8.0], vec![f64::NAN, 1.0]]);
    assert!(answers[0].is_ok() && answers[2].is_ok());
    let err = answers[1].as_ref().unwrap_err().to_string();
    assert!(err.contains("could not evaluate point 2 of message 1: «b must not be 7»"), "{err}");
    let err = answers[3].as_ref().unwrap_err().to_string();
    assert!(err.contains("non-finite coordinate"), "refused before sending: {err}");
    assert_eq!(p.processes_started(), 1, "a point's error keeps the process");
}

#[test]
fn a_crash_is_an_error_quoting_stderr_and_the_next_message_gets_a_fresh_process() {
    let ev = Evaluator::new(
        "if any(x[0] > 4 for x in request['points']):\n    print('segfault in the mesher', file=sys.stderr)\n    sys.exit(3)\nreply(request, [value(x) for x in request['points']])",
    );
    let p = ev.problem("processes: 1");
    let err = error_of(&p, &[4.5, 1.0]);
    assert!(err.starts_with("external problem `twin`: `python3 eval.py` stopped before answering message 1"), "{err}");
    assert!(err.contains("exited with code 3"), "{err}");
    assert!(err.contains("segfault in the mesher"), "{err}");
    let e = p.evaluate(&[1.0, 2.0]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.objective, 3.0);
    assert_eq!(p.processes_started(), 2);
}

#[test]
fn a_process_that_exits_after_each_answer_is_replaced_without_an_error() {
    // Answers one message, then ends — as if it died while idle.
    let ev = Evaluator::new("reply(request, [value(x) for x in request['points']])\nsys.exit(0)");
    let p = ev.problem("processes: 1");
    for i in 0..4 {
        let e = p.evaluate(&[1.0, i as f64]).unwrap_or_else(|e| panic!("message {i}: {e}"));
        assert_eq!(e.objective, 1.0 + i as f64);
    }
    assert!(p.processes_started() >= 4, "started {}", p.processes_started());
}

#[test]
fn a_hung_message_is_killed_at_its_timeout_with_what_it_started() {
    let ev = Evaluator::new(
        "if request['points'][0][0] > 4:\n    import subprocess\n    child = subprocess.Popen(['sleep', '300'])\n    open('child', 'w').write(str(child.pid))\n    time.sleep(300)\nreply(request, [value(x) for x in request['points']])",
    );
    let p = ev.problem("processes: 1\ntimeout: 1");
    let err = error_of(&p, &[4.5, 1.0]);
    assert!(
        err.contains(
            "did not answer message 1 (1 points) within 2 s (1 s per point, plus as much to start) and was killed"
        ),
        "{err}"
    );
    let child: i32 = std::fs::read_to_string(ev.path().join("child")).unwrap().trim().parse().unwrap();
    // The sleep it started was in its process group: killed and reaped by init.
    let gone = (0..200).any(|_| {
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child), None).is_ok()
            && !std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default().contains(") Z ");
        if alive {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        !alive
    });
    assert!(gone, "the evaluator's child {child} outlived the timeout");
    assert!(p.evaluate(&[1.0, 2.0]).is_ok(), "a fresh process answers the next message");
}

#[test]
fn a_stdout_line_that_is_not_a_reply_is_an_error_naming_it() {
    let ev = Evaluator::new("print('debug: meshing done')\nreply(request, [value(x) for x in request['points']])");
    let p = ev.problem("processes: 1");
    let err = error_of(&p, &[1.0, 2.0]);
    assert!(err.contains("printed «debug: meshing done» where the reply to message 1 was expected"), "{err}");
    assert!(err.contains("print debug output to stderr"), "{err}");

    let ev = Evaluator::new("reply(request, [value(x) for x in request['points']][:1])");
    let p = ev.problem("processes: 1");
    let answers = p.evaluate_batch(&points(3));
    let err = answers[2].as_ref().unwrap_err().to_string();
    assert!(err.contains("answered 1 results to message 1 of 3 points"), "{err}");

    let ev =
        Evaluator::new("print(json.dumps({'id': 99, 'results': [value(x) for x in request['points']]}), flush=True)");
    let err = error_of(&ev.problem(""), &[1.0, 2.0]);
    assert!(err.contains("answered with id 99 while message 1 was waiting"), "{err}");
}

#[test]
fn threads_share_a_bounded_pool_of_processes() {
    let ev = Evaluator::new("reply(request, [value(x) for x in request['points']])");
    let p = Arc::new(ev.problem("processes: 2"));
    let handles: Vec<_> = (0..6)
        .map(|t| {
            let p = p.clone();
            std::thread::spawn(move || {
                (0..20).map(|i| p.evaluate(&[t as f64 * 0.1, i as f64]).map(|e| e.objective)).collect::<Vec<_>>()
            })
        })
        .collect();
    for (t, h) in handles.into_iter().enumerate() {
        let got = h.join().unwrap();
        assert_eq!(got.len(), 20);
        for (i, v) in got.into_iter().enumerate() {
            let x0 = t as f64 * 0.1;
            assert_eq!(v.unwrap_or_else(|e| panic!("{e}")), x0 * x0 + i as f64);
        }
    }
    let started = p.processes_started();
    assert!((1..=2).contains(&started), "at most 2 processes, started {started}");
}

#[test]
fn dropping_the_problem_ends_its_processes() {
    let ev = Evaluator::new(
        "open('pid', 'w').write(str(os.getpid()))\nreply(request, [value(x) for x in request['points']])",
    );
    let p = ev.problem("processes: 1");
    assert!(p.evaluate(&[1.0, 2.0]).is_ok());
    let pid: i32 = std::fs::read_to_string(ev.path().join("pid")).unwrap().trim().parse().unwrap();
    drop(p);
    // Dropping waits for the process to exit on the closed stdin (or kills it).
    assert!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err(), "process {pid} still runs");
}

#[test]
fn persistent_settings_are_checked_where_they_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.yaml");
    let base = "name: p\ncommand: python3 eval.py\nvariables:\n  - { name: a, min: 0, max: 1 }\n";
    let err = |extra: &str| parse_external(&format!("{base}{extra}"), &path).unwrap_err().to_string();

    let e = err("mode: sometimes\n");
    assert!(e.contains("p.yaml:5:7") && e.contains("mode") && e.contains("unknown mode `sometimes`"), "{e}");
    assert!(e.contains("`once`") && e.contains("`persistent`"), "{e}");
    let e = err("mode: persistent\nbatch: 0\n");
    assert!(e.contains("p.yaml:6:8") && e.contains("batch 0 is out of range"), "{e}");
    let e = err("mode: persistent\nprocesses: 100000\n");
    assert!(e.contains("processes 100000 is out of range") && e.contains("from 1 to 64"), "{e}");
    let e = err("batch: 8\n");
    assert!(e.contains("`batch` applies to `mode: persistent` only"), "{e}");

    let ok = parse_external(&format!("{base}mode: persistent\n"), &path).unwrap();
    assert_eq!((ok.batch(), ok.mode()), (64, EvaluatorMode::Persistent));
    assert!(ok.processes() >= 1);
}

#[test]
fn a_line_printed_after_a_reply_is_caught_before_it_is_read_as_the_next_one() {
    // Every reply printed twice: the second copy would shift every later answer by one.
    let ev = Evaluator::new(
        "reply(request, [value(x) for x in request['points']])\nreply(request, [value(x) for x in request['points']])",
    );
    let p = ev.problem("processes: 1");
    assert!(p.evaluate(&[1.0, 2.0]).is_ok());
    let err = error_of(&p, &[1.0, 3.0]);
    assert!(
        err.contains("after its reply to message 1") || err.contains("answered with id 1 while message 2 was waiting"),
        "{err}"
    );
}

#[test]
fn an_evaluator_that_stops_reading_its_input_times_out_instead_of_blocking() {
    // Never reads stdin: a request of 4,000 points (~100 KB) is more than a pipe holds.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("eval.py"), "import time\ntime.sleep(300)\n").unwrap();
    let yaml = "name: deaf\ncommand: python3 eval.py\nmode: persistent\nprocesses: 1\nbatch: 10000\ntimeout: 0.001\nvariables:\n  - { name: a, min: -5, max: 5 }\n  - { name: b, min: 0, max: 10 }\ninequalities: [g1]\n";
    let path = dir.path().join("problem.yaml");
    std::fs::write(&path, yaml).unwrap();
    let p = load_external(&path).unwrap_or_else(|e| panic!("{e}"));
    let answers = p.evaluate_batch(&points(4_000));
    assert_eq!(answers.len(), 4_000);
    let err = answers[0].as_ref().unwrap_err().to_string();
    assert!(err.contains("did not answer message 1 (4000 points)"), "{err}");
}

#[test]
fn an_empty_batch_starts_nothing() {
    let ev = Evaluator::new("reply(request, [value(x) for x in request['points']])");
    let p = ev.problem("processes: 1");
    assert!(p.evaluate_batch(&[]).is_empty());
    assert_eq!(p.processes_started(), 0);
}
