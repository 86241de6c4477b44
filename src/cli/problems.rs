//! `attractor problems`: the numeric problems as a service for other programs.
//!
//! - `problems list [NAME_OR_FILE…]` shows the built-in problems (or the named
//!   ones, built-in or problem files) with their dimension, constraint counts
//!   and the reference value success is judged against; with `--json`, a JSON
//!   array a benchmark script can read the bounds and constraint names from.
//! - `problems eval NAME_OR_FILE` is a line protocol on stdin/stdout, so that
//!   peer optimizers in other languages (bench/peers.py) evaluate exactly the
//!   definitions our coordinator optimizes: every input line is a JSON array
//!   of numbers, every output line is
//!   `{"objective": f, "inequalities": [...], "equalities": [...]}` or
//!   `{"error": "..."}`, one output line per input line, flushed at once.
//!
//! The eval loop is on the hot path of a benchmark that sends it tens of
//! millions of points, so it reads and writes through buffers it reuses and
//! never touches the async runtime.

use std::io::{self, BufRead, Write};
use std::path::Path;
use std::sync::Arc;

use clap::Subcommand;
use serde::Serialize;

use super::{Failure, Global};
use crate::numeric::Problem;
use crate::numeric::resolve_problem;

#[derive(Debug, Subcommand)]
pub enum ProblemsCommand {
    /// List problems: name, dimension, constraints and reference value.
    List {
        /// Built-in names or problem files (YAML) [default: every built-in problem].
        problems: Vec<String>,
    },
    /// Evaluate points read from stdin, one JSON array per line; print one JSON
    /// object per line: {"objective", "inequalities", "equalities"} or {"error"}.
    Eval {
        /// A built-in name (`attractor problems list` shows them) or a problem file (YAML).
        problem: String,
    },
}

/// Runs `attractor problems …`.
pub fn run(g: &Global, command: &ProblemsCommand) -> Result<u8, Failure> {
    match command {
        ProblemsCommand::List { problems } => list(g, problems),
        ProblemsCommand::Eval { problem } => {
            let (problem, _) = resolve(problem)?;
            // Blocking stdin reads on this runtime thread are fine: nothing
            // else runs on the runtime while this command does.
            eval_lines(problem.as_ref(), io::stdin().lock(), io::stdout().lock())
                .map(|()| 0)
                .map_err(|e| Failure::runtime(format!("problems eval: {e}")))
        }
    }
}

/// A built-in name, else a problem file relative to the working directory
/// (the same resolution as a suite's `problem:`, so the reference agrees with
/// what an optimize task is scored against).
fn resolve(name: &str) -> Result<(Arc<dyn Problem>, Option<f64>), Failure> {
    resolve_problem(name, Path::new("."))
        .map_err(|e| Failure::input(format!("{e}\n  hint: `attractor problems list` shows the built-in problems")))
}

/// One row of `problems list --json`.
#[derive(Debug, Serialize)]
struct Listed {
    name: String,
    dimension: usize,
    bounds: Vec<[f64; 2]>,
    inequalities: Vec<String>,
    equalities: Vec<String>,
    best_known: Option<f64>,
    /// What success is judged against: the exactly feasible optimum where the
    /// published best-known value needs the 1e-4 equality slack.
    reference: Option<f64>,
}

fn list(g: &Global, names: &[String]) -> Result<u8, Failure> {
    let names: Vec<String> = if names.is_empty() {
        crate::numeric::builtin_names().into_iter().map(String::from).collect()
    } else {
        names.to_vec()
    };
    let mut rows = Vec::with_capacity(names.len());
    for name in &names {
        let (p, reference) = resolve(name)?;
        rows.push(Listed {
            name: p.name().to_string(),
            dimension: p.dimension(),
            bounds: p.bounds().into_iter().map(|(lo, hi)| [lo, hi]).collect(),
            inequalities: p.inequality_names(),
            equalities: p.equality_names(),
            best_known: p.best_known().map(|b| b.value),
            reference,
        });
    }
    let mut text = String::new();
    if g.json {
        // One problem per line: readable, and still one JSON array.
        let items: Result<Vec<String>, _> = rows.iter().map(serde_json::to_string).collect();
        let items = items.map_err(|e| Failure::runtime(e.to_string()))?;
        text = format!("[\n{}\n]\n", items.join(",\n"));
    } else {
        text.push_str(&format!("{:<16} {:>4} {:>5} {:>4} {:>20}\n", "problem", "dim", "ineq", "eq", "reference"));
        for r in &rows {
            let reference = r.reference.map_or_else(|| "-".to_string(), |v| format!("{v}"));
            text.push_str(&format!(
                "{:<16} {:>4} {:>5} {:>4} {:>20}\n",
                r.name,
                r.dimension,
                r.inequalities.len(),
                r.equalities.len(),
                reference
            ));
        }
    }
    // `println!` would panic when the reader has gone (`… | head`); a closed
    // pipe is the reader's choice, not an error.
    match io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(Failure::runtime(format!("cannot write the list: {e}"))),
        _ => Ok(0),
    }
}

/// One answer of the eval protocol.
#[derive(Serialize)]
struct Values<'a> {
    objective: f64,
    inequalities: &'a [f64],
    equalities: &'a [f64],
}

#[derive(Serialize)]
struct ErrorLine<'a> {
    error: &'a str,
}

/// Answers every line of `input` with one line on `output`, flushed at once so
/// a client waiting for the answer never stalls. Ends at end of input, or
/// quietly when the reader of `output` has gone (a broken pipe); other I/O
/// errors are returned.
pub fn eval_lines(problem: &dyn Problem, mut input: impl BufRead, output: impl Write) -> io::Result<()> {
    let mut out = io::BufWriter::new(output);
    let mut line = Vec::with_capacity(1024);
    let mut number = 0u64;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        number += 1;
        let written = match evaluate_line(problem, &line) {
            Ok(values) => {
                let eval = Values {
                    objective: values.objective,
                    inequalities: &values.inequalities,
                    equalities: &values.equalities,
                };
                serde_json::to_writer(&mut out, &eval)
            }
            Err(message) => serde_json::to_writer(&mut out, &ErrorLine { error: &format!("line {number}: {message}") }),
        };
        let result = written.map_err(io::Error::from).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush());
        match result {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// Parses one line as a point and evaluates it. Non-finite results are an
/// error rather than `null` in the output, so every answer is valid JSON a
/// client can use as numbers.
fn evaluate_line(problem: &dyn Problem, line: &[u8]) -> Result<crate::numeric::Evaluation, String> {
    let n = problem.dimension();
    let expected = || format!("expected a JSON array of {n} numbers, e.g. [{}]", vec!["0.5"; n.min(3)].join(", "));
    let text = line.trim_ascii();
    if text.is_empty() {
        return Err(format!("empty line: {}", expected()));
    }
    let x: Vec<f64> =
        serde_json::from_slice(text).map_err(|e| format!("not a JSON array of numbers ({e}): {}", expected()))?;
    if x.len() != n {
        return Err(format!("{} has {n} variables, got {} numbers: {}", problem.name(), x.len(), expected()));
    }
    let values = problem.evaluate(&x).map_err(|e| e.0)?;
    if !values.is_finite() {
        return Err(format!(
            "{}: not a finite value at this point (objective {}, inequalities {:?}, equalities {:?})",
            problem.name(),
            values.objective,
            values.inequalities,
            values.equalities
        ));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(problem: &str, input: &str) -> Vec<serde_json::Value> {
        let p = crate::numeric::builtin(problem).unwrap();
        let mut out = Vec::new();
        eval_lines(p.as_ref(), input.as_bytes(), &mut out).unwrap();
        String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn every_line_gets_one_answer_and_bad_lines_do_not_stop_the_loop() {
        let got = answer("g24", "[2.3295, 3.17846]\n[1, 2, 3]\n\n[1e999, 1]\nnull\n[1, 1]");
        assert_eq!(got.len(), 6);
        assert!((got[0]["objective"].as_f64().unwrap() + 5.508).abs() < 1e-3, "{:?}", got[0]);
        assert_eq!(got[0]["inequalities"].as_array().unwrap().len(), 2);
        assert_eq!(got[0]["equalities"].as_array().unwrap().len(), 0);
        assert!(got[1]["error"].as_str().unwrap().starts_with("line 2: g24 has 2 variables, got 3"), "{:?}", got[1]);
        assert!(got[2]["error"].as_str().unwrap().starts_with("line 3: empty line"), "{:?}", got[2]);
        assert!(got[3]["error"].as_str().unwrap().starts_with("line 4: not a JSON array"), "{:?}", got[3]);
        assert!(got[4]["error"].as_str().unwrap().contains("expected a JSON array of 2 numbers"), "{:?}", got[4]);
        assert_eq!(got[5]["objective"].as_f64(), Some(-2.0), "a last line without a newline is answered");
    }

    #[test]
    fn a_non_finite_value_is_an_error_line_not_invalid_json() {
        // g21 takes ln(900 − x4): x4 = 1000 is outside the box and undefined there.
        let got = answer("g21", "[200, 1, 1, 1000, 6, 6, 6]\n");
        assert!(got[0]["error"].as_str().unwrap().contains("not a finite value"), "{:?}", got[0]);
    }

    #[test]
    fn numbers_round_trip_exactly() {
        // 17 significant digits in, the same double evaluated: g24's objective is −x1 − x2.
        let got = answer("g24", "[0.30000000000000004, 2.9999999999999996]\n");
        assert_eq!(got[0]["objective"].as_f64(), Some(-(0.30000000000000004f64 + 2.9999999999999996)));
    }
}
