//! The one-shot mode: a process per point. The command gets
//! `{"x": [..], "names": [..]}` on stdin and prints its reply on stdout —
//! the whole of stdout or its last non-empty line, so debug prints above it
//! are fine. Simple to write, and it costs a process start per evaluation
//! (tens of milliseconds for a Python script): the persistent mode is for
//! evaluators called thousands of times.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::Value;
use wait_timeout::ChildExt;

use super::reply::{EXPECTED, excerpt};
use super::{ExternalProblem, fmt_secs, kill_group};
use crate::numeric::problem::{EvalError, Evaluation};

/// At most this much of each of stdout and stderr is kept.
const OUTPUT_CAP: usize = 1 << 20;

/// How long to wait for the output pipes to close once the command has
/// exited (a background process it left behind may hold them open).
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// Evaluates `x` by running the command once.
pub(super) fn evaluate(p: &ExternalProblem, x: &[f64]) -> Result<Evaluation, EvalError> {
    let names: Vec<&str> = p.variables.iter().map(|v| v.name.as_str()).collect();
    let input = serde_json::to_vec(&serde_json::json!({ "x": x, "names": names }))
        .map_err(|e| EvalError(format!("external problem `{}`: {e}", p.name)))?;
    let stdout = run(p, input)?;
    parse_output(p, &stdout).map_err(|e| p.fail(e))
}

/// Runs the command once with `input` on stdin: its stdout, or why not.
fn run(p: &ExternalProblem, input: Vec<u8>) -> Result<String, EvalError> {
    let mut child = p.spawn("1")?;

    // Write and read on threads: the command may not read its input, and
    // may print more than a pipe holds before it exits.
    if let Some(mut stdin) = child.stdin.take() {
        std::thread::spawn(move || {
            // A command that exits without reading its input is not an error here.
            let _ = stdin.write_all(&input);
        });
    }
    let stdout = Drain::start(child.stdout.take());
    let stderr = Drain::start(child.stderr.take());

    let status = match child.wait_timeout(p.timeout) {
        Ok(Some(status)) => status,
        Ok(None) => {
            kill_group(&mut child);
            return Err(p.fail(format_args!("timed out after {} and was killed", fmt_secs(p.timeout))));
        }
        Err(e) => {
            kill_group(&mut child);
            return Err(p.fail(format_args!("could not be waited for: {e}")));
        }
    };
    let stdout = stdout.finish(DRAIN_GRACE);
    let stderr = stderr.finish(DRAIN_GRACE);
    if !status.success() {
        let how = match (status.code(), status.signal()) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(signal)) => format!("was killed by signal {signal}"),
            (None, None) => "failed".to_string(),
        };
        let stderr = String::from_utf8_lossy(&stderr);
        return Err(if stderr.trim().is_empty() {
            p.fail(how)
        } else {
            p.fail(format_args!("{how}; stderr: {}", excerpt(&stderr)))
        });
    }
    String::from_utf8(stdout).map_err(|e| {
        p.fail(format_args!("printed output that is not UTF-8: {}", excerpt(&String::from_utf8_lossy(e.as_bytes()))))
    })
}

/// Reads the values the command printed: the whole output or its last
/// non-empty line as one JSON object.
fn parse_output(p: &ExternalProblem, stdout: &str) -> Result<Evaluation, String> {
    let trimmed = stdout.trim();
    if trimmed.is_empty() {
        return Err(format!("printed nothing on stdout; {EXPECTED}"));
    }
    // Over several lines, the last one is the answer (what came before is
    // the program talking): its error is the one that says what is wrong.
    let parsed = serde_json::from_str::<Value>(trimmed).or_else(|whole| {
        let last = trimmed.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        if last == trimmed {
            return Err((whole, ""));
        }
        serde_json::from_str::<Value>(last).map_err(|e| (e, " in its last line"))
    });
    let value = parsed.map_err(|(e, where_)| {
        let non_finite = ["NaN", "Infinity"].iter().any(|t| trimmed.contains(t));
        let why = if non_finite {
            "printed a non-finite number (NaN and Infinity are not JSON numbers)".to_string()
        } else if e.to_string().starts_with("number out of range") {
            format!("printed a number too large for a 64-bit float ({e}{where_}); {EXPECTED}")
        } else {
            format!("did not print JSON ({e}{where_}); {EXPECTED}")
        };
        format!("{why}; output: {}", excerpt(stdout))
    })?;
    let Value::Object(object) = &value else {
        return Err(format!("printed JSON that is not an object; {EXPECTED}; output: {}", excerpt(stdout)));
    };
    p.shape().evaluation(object, stdout)
}

/// A pipe read to its end on a thread, keeping at most [`OUTPUT_CAP`] bytes.
struct Drain {
    kept: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
}

impl Drain {
    fn start(pipe: Option<impl Read + Send + 'static>) -> Self {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        if let Some(mut pipe) = pipe {
            let kept = kept.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                loop {
                    match pipe.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                            let room = OUTPUT_CAP.saturating_sub(kept.len());
                            kept.extend_from_slice(&buf[..n.min(room)]);
                        }
                    }
                }
                let _ = tx.send(());
            });
        }
        Drain { kept, done }
    }

    /// What was read, once the pipe is closed or `grace` has passed (a
    /// background process the command left behind may hold the pipe open).
    fn finish(self, grace: Duration) -> Vec<u8> {
        let _ = self.done.recv_timeout(grace);
        std::mem::take(&mut *self.kept.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
