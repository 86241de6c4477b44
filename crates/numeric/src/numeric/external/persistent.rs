//! The persistent mode (protocol 2): evaluator processes that stay up for
//! the whole run and answer JSON lines, many points per message.
//!
//! A process reads one request per line on stdin,
//! `{"id": 7, "names": ["x1", ..], "points": [[..], [..]]}`, and prints one
//! line on stdout for it, `{"id": 7, "results": [<reply>, <reply>]}` — a
//! reply per point, in order (the module docs of [`super`] give a reply's
//! form) — or `{"id": 7, "error": "<why>"}` to refuse the whole message.
//! It exits when stdin closes. Debug output goes to stderr: a stdout line
//! that is not a reply is an error naming the line.
//!
//! Why a pool and not one process: trajectories evaluate from several
//! threads at once, and an expensive simulation wants every core. A problem
//! keeps up to `processes` of them, each serving one message at a time; a
//! batch larger than one message, or than a fair share of the processes,
//! is split and sent to several at once. A process that crashes, times out
//! or prints something that is not a reply is killed with its process group
//! and replaced by a fresh one on the next message; one that died while idle
//! is replaced without an error.
//!
//! What it costs: one process start per process (not per point), then a
//! write and a read per message — a trivial Python evaluator answers tens of
//! thousands of points a second (`attractor bench evaluator`).

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::ops::Range;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStdin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use wait_timeout::ChildExt;

use super::reply::excerpt;
use super::{ExternalProblem, fmt_secs, kill_group};
use crate::numeric::problem::{EvalError, Evaluation};

/// The longest stdout line read (a reply with gradients for many points is long).
const MAX_LINE: usize = 64 << 20;

/// How much of the end of stderr is kept to quote when a process fails.
const STDERR_TAIL: usize = 2048;

/// How long a process may take to exit once its stdin is closed at the end
/// of a run before it is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Answers for `points`, in order: messages of at most `batch` points, spread
/// over the pool's processes.
pub(super) fn evaluate(p: &ExternalProblem, points: &[Vec<f64>]) -> Vec<Result<Evaluation, EvalError>> {
    if points.is_empty() {
        return Vec::new();
    }
    let parts = split(points.len(), p.batch, p.processes);
    if parts.len() <= 1 {
        return message(p, points);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            parts.into_iter().map(|r| (r.len(), scope.spawn(move || message(p, &points[r])))).collect();
        handles
            .into_iter()
            .flat_map(|(len, h)| {
                // One answer per point whatever happens, so none is misattributed.
                h.join().unwrap_or_else(|_| (0..len).map(|_| Err(p.fail("evaluation thread panicked"))).collect())
            })
            .collect()
    })
}

/// Ranges covering `0..n`: as many as `batch` requires, or one per process
/// when that is more (a generation of 40 points on 4 processes goes out as 4
/// messages of 10), of sizes differing by at most one.
fn split(n: usize, batch: usize, processes: usize) -> Vec<Range<usize>> {
    if n == 0 {
        return Vec::new();
    }
    let parts = n.div_ceil(batch.max(1)).max(processes.min(n)).max(1);
    let (size, extra) = (n / parts, n % parts);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let len = size + usize::from(i < extra);
            let r = start..start + len;
            start += len;
            r
        })
        .collect()
}

/// One message to one process: its answers, or one error for every point
/// when the exchange failed.
fn message(p: &ExternalProblem, points: &[Vec<f64>]) -> Vec<Result<Evaluation, EvalError>> {
    let every = |e: EvalError| points.iter().map(|_| Err(EvalError(e.0.clone()))).collect();
    let mut retried = false;
    loop {
        let mut worker = match p.pool.checkout(p) {
            Ok(w) => w,
            Err(e) => return every(e),
        };
        match worker.exchange(p, points) {
            Ok(answers) => {
                p.pool.checkin(worker);
                return answers;
            }
            // A process that had answered before and stopped without
            // answering this one may have died while idle (or crashed on
            // these points): a fresh one gets the message, once.
            Err(Fault::Died(_)) if worker.answered > 0 && !retried => {
                retried = true;
                p.pool.discard(worker);
            }
            Err(Fault::Died(what)) => {
                let e = worker.exit_error(p, &what);
                p.pool.discard(worker);
                return every(e);
            }
            Err(Fault::Broken(e)) => {
                p.pool.discard(worker);
                return every(e);
            }
        }
    }
}

/// The evaluator processes of one problem.
pub struct Pool {
    max: usize,
    state: Mutex<PoolState>,
    freed: Condvar,
    started: AtomicU64,
}

struct PoolState {
    idle: Vec<Worker>,
    /// Processes alive: idle ones and those serving a message.
    live: usize,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("max", &self.max).field("started", &self.started()).finish()
    }
}

impl Pool {
    pub(super) fn new(max: usize) -> Self {
        Pool {
            max: max.max(1),
            state: Mutex::new(PoolState { idle: Vec::new(), live: 0 }),
            freed: Condvar::new(),
            started: AtomicU64::new(0),
        }
    }

    /// Processes started so far, restarts included.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle process that is still running, a new one if the pool has
    /// room, or the next one freed.
    fn checkout(&self, p: &ExternalProblem) -> Result<Worker, EvalError> {
        let mut state = self.lock();
        loop {
            if let Some(mut w) = state.idle.pop() {
                if matches!(w.child.try_wait(), Ok(None)) {
                    return Ok(w);
                }
                // It exited while idle: replaced below, no error to anyone.
                state.live = state.live.saturating_sub(1);
                drop(state);
                w.reap();
                state = self.lock();
                continue;
            }
            if state.live < self.max {
                state.live += 1;
                drop(state);
                return Worker::spawn(p)
                    .inspect(|_| {
                        self.started.fetch_add(1, Ordering::Relaxed);
                    })
                    .inspect_err(|_| self.release());
            }
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn checkin(&self, w: Worker) {
        self.lock().idle.push(w);
        self.freed.notify_one();
    }

    /// Kills a process that failed and frees its place.
    fn discard(&self, w: Worker) {
        drop(w);
        self.release();
    }

    fn release(&self) {
        let mut state = self.lock();
        state.live = state.live.saturating_sub(1);
        drop(state);
        self.freed.notify_one();
    }
}

impl Drop for Pool {
    /// Closes every idle process's stdin (its cue to exit), then waits a
    /// moment for each before killing it.
    fn drop(&mut self) {
        let mut idle = std::mem::take(&mut self.lock().idle);
        for w in &mut idle {
            w.requests = None;
        }
        let deadline = Instant::now() + SHUTDOWN_GRACE;
        for mut w in idle {
            let left = deadline.saturating_duration_since(Instant::now());
            if matches!(w.child.wait_timeout(left), Ok(Some(_))) {
                w.reaped = true;
            }
        }
    }
}

/// A line the reader thread saw on a process's stdout.
enum Line {
    Text(String),
    TooLong,
    Closed,
}

/// Why an exchange failed.
enum Fault {
    /// The process took no request or stopped before answering it: what happened.
    Died(String),
    /// The process answered wrongly, died while answering or timed out.
    Broken(EvalError),
}

/// One running evaluator process.
struct Worker {
    child: Child,
    /// Requests go to a writer thread: a process that stops reading its
    /// input cannot block the caller past the message's deadline.
    requests: Option<mpsc::Sender<Vec<u8>>>,
    lines: mpsc::Receiver<Line>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Closed when stderr has been read to its end.
    stderr_done: mpsc::Receiver<()>,
    /// Messages answered so far.
    answered: u64,
    reaped: bool,
}

#[derive(Serialize)]
struct Request<'a> {
    id: u64,
    names: &'a [&'a str],
    points: &'a [Vec<f64>],
}

impl Worker {
    fn spawn(p: &ExternalProblem) -> Result<Worker, EvalError> {
        let mut child = p.spawn("2")?;
        let requests = child.stdin.take().map(|stdin| {
            let (tx, rx) = mpsc::channel::<Vec<u8>>();
            std::thread::spawn(move || write_requests(stdin, &rx));
            tx
        });
        let (tx, lines) = mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || read_lines(stdout, &tx));
        }
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (done, stderr_done) = mpsc::channel();
        if let Some(pipe) = child.stderr.take() {
            let tail = stderr.clone();
            std::thread::spawn(move || {
                keep_tail(pipe, &tail);
                drop(done);
            });
        }
        Ok(Worker { child, requests, lines, stderr, stderr_done, answered: 0, reaped: false })
    }

    /// Sends `points` as one request and reads the reply line.
    fn exchange(
        &mut self,
        p: &ExternalProblem,
        points: &[Vec<f64>],
    ) -> Result<Vec<Result<Evaluation, EvalError>>, Fault> {
        let id = self.answered + 1;
        let names: Vec<&str> = p.variables.iter().map(|v| v.name.as_str()).collect();
        let request = Request { id, names: &names, points };
        // A line printed since the last reply means the process is out of
        // step (an extra reply, a debug print): better an error now than
        // every later answer read one message late.
        while let Ok(line) = self.lines.try_recv() {
            if let Line::Text(text) = &line
                && !text.trim().is_empty()
            {
                return Err(Fault::Broken(p.fail(format_args!(
                    "printed {} after its reply to message {}; it must print one line per request (debug output goes to stderr)",
                    excerpt(text),
                    self.answered
                ))));
            }
            if !matches!(line, Line::Text(_)) {
                return Err(Fault::Died(format!("stopped before message {id}")));
            }
        }
        let mut bytes = match serde_json::to_vec(&request) {
            Ok(b) => b,
            Err(e) => return Err(Fault::Broken(p.fail(format_args!("message {id} could not be written: {e}")))),
        };
        bytes.push(b'\n');
        if self.requests.as_ref().is_none_or(|tx| tx.send(bytes).is_err()) {
            return Err(Fault::Died(format!("closed its input before message {id}")));
        }

        // k points may take k timeouts; a fresh process also gets one for starting.
        let count = u32::try_from(points.len()).unwrap_or(u32::MAX);
        let startup = if self.answered == 0 { p.timeout } else { Duration::ZERO };
        let allowed = p.timeout.saturating_mul(count).saturating_add(startup);
        let deadline = Instant::now() + allowed;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Line::Text(text)) if text.trim().is_empty() => continue,
                Ok(Line::Text(text)) => {
                    let answers = self.read_reply(p, text.trim(), id, points.len())?;
                    self.answered += 1;
                    return Ok(answers);
                }
                Ok(Line::TooLong) => {
                    return Err(Fault::Broken(p.fail(format_args!(
                        "printed a line longer than {} MiB in answer to message {id}",
                        MAX_LINE >> 20
                    ))));
                }
                Ok(Line::Closed) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Fault::Died(format!("stopped before answering message {id}")));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(Fault::Broken(p.fail(format_args!(
                        "did not answer message {id} ({} points) within {} ({} per point{}) and was killed",
                        points.len(),
                        fmt_secs(allowed),
                        fmt_secs(p.timeout),
                        if startup.is_zero() { "" } else { ", plus as much to start" }
                    ))));
                }
            }
        }
    }

    /// The answers in one reply line. A line that is not a reply to this
    /// message breaks the exchange (the process is out of step); a bad reply
    /// for one point is that point's error.
    fn read_reply(
        &self,
        p: &ExternalProblem,
        line: &str,
        id: u64,
        count: usize,
    ) -> Result<Vec<Result<Evaluation, EvalError>>, Fault> {
        let form = format!(r#"{{"id": {id}, "results": [one reply per point]}}"#);
        let broken = |what: String| Fault::Broken(p.fail(what));
        let Ok(Value::Object(reply)) = serde_json::from_str::<Value>(line) else {
            return Err(broken(format!(
                "printed {} where the reply to message {id} was expected ({form}); print debug output to stderr",
                excerpt(line)
            )));
        };
        match reply.get("id") {
            None => {}
            Some(got) if got.as_u64() == Some(id) => {}
            Some(got) => {
                return Err(broken(format!(
                    "answered with id {got} while message {id} was waiting: {}",
                    excerpt(line)
                )));
            }
        }
        if let Some(error) = reply.get("error").filter(|_| !reply.contains_key("results")) {
            let why = error.as_str().map_or_else(|| error.to_string(), str::to_string);
            return Ok((0..count)
                .map(|_| Err(p.fail(format_args!("refused message {id}: {}", excerpt(&why)))))
                .collect());
        }
        let Some(Value::Array(results)) = reply.get("results") else {
            return Err(broken(format!("printed a reply without a \"results\" list ({form}): {}", excerpt(line))));
        };
        if results.len() != count {
            return Err(broken(format!(
                "answered {} results to message {id} of {count} points: {}",
                results.len(),
                excerpt(line)
            )));
        }
        let shape = p.shape();
        Ok(results
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let point = i + 1;
                match r {
                    Value::Object(o) if o.contains_key("error") && !o.contains_key("objective") => {
                        let why = o["error"].as_str().map_or_else(|| o["error"].to_string(), str::to_string);
                        Err(p.fail(format_args!("could not evaluate point {point} of message {id}: {}", excerpt(&why))))
                    }
                    Value::Object(o) => shape
                        .evaluation(o, &r.to_string())
                        .map_err(|e| p.fail(format_args!("point {point} of message {id}: {e}"))),
                    other => Err(p.fail(format_args!(
                        "answered point {point} of message {id} with {} instead of an object",
                        excerpt(&other.to_string())
                    ))),
                }
            })
            .collect())
    }

    /// How the process ended, with the end of its stderr: it is killed if it
    /// has not exited within a second.
    fn exit_error(&mut self, p: &ExternalProblem, what: &str) -> EvalError {
        let how = match self.child.wait_timeout(Duration::from_secs(1)) {
            Ok(Some(status)) => {
                self.reaped = true;
                match (status.code(), status.signal()) {
                    (Some(code), _) => format!("exited with code {code}"),
                    (None, Some(signal)) => format!("was killed by signal {signal}"),
                    (None, None) => "exited".to_string(),
                }
            }
            _ => "closed its output".to_string(),
        };
        if self.reaped {
            // What it printed last is often why it stopped: read it all.
            let _ = self.stderr_done.recv_timeout(Duration::from_secs(1));
        }
        let tail = String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
        if tail.trim().is_empty() {
            p.fail(format_args!("{what}: it {how}"))
        } else {
            p.fail(format_args!("{what}: it {how}; stderr ends with {}", excerpt(tail_chars(&tail, 200))))
        }
    }

    /// Reaps a process that already exited.
    fn reap(&mut self) {
        if !self.reaped {
            let _ = self.child.wait();
            self.reaped = true;
        }
    }
}

impl Drop for Worker {
    /// Kills the process group — whatever the evaluator started with it
    /// (a simulation's subprocesses) too, even when the evaluator itself
    /// has already exited.
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
        if !self.reaped {
            kill_group(&mut self.child);
            self.reaped = true;
        }
    }
}

/// The last `n` characters of `s`.
fn tail_chars(s: &str, n: usize) -> &str {
    let s = s.trim_end();
    let start = s.char_indices().rev().nth(n.saturating_sub(1)).map_or(0, |(i, _)| i);
    &s[start..]
}

/// Sends each stdout line to the worker until the pipe closes.
fn read_lines(stdout: impl Read, tx: &mpsc::Sender<Line>) {
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    loop {
        let mut buf = Vec::new();
        let read = (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut buf);
        let line = match read {
            Ok(0) | Err(_) => Line::Closed,
            Ok(_) if buf.len() > MAX_LINE => Line::TooLong,
            Ok(_) => Line::Text(String::from_utf8_lossy(&buf).into_owned()),
        };
        let last = !matches!(line, Line::Text(_));
        if tx.send(line).is_err() || last {
            return;
        }
    }
}

/// Writes each request to the process's stdin until the worker goes away
/// or the pipe breaks (the process died or was killed).
fn write_requests(stdin: ChildStdin, requests: &mpsc::Receiver<Vec<u8>>) {
    let mut stdin = BufWriter::new(stdin);
    while let Ok(bytes) = requests.recv() {
        if stdin.write_all(&bytes).and_then(|()| stdin.flush()).is_err() {
            return;
        }
    }
}

/// Keeps the last [`STDERR_TAIL`] bytes of stderr.
fn keep_tail(mut pipe: impl Read, tail: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            return;
        }
        let mut kept = tail.lock().unwrap_or_else(|e| e.into_inner());
        kept.extend_from_slice(&buf[..n]);
        let excess = kept.len().saturating_sub(STDERR_TAIL);
        kept.drain(..excess);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_split_by_message_size_and_over_the_processes() {
        let lens = |n, batch, procs| split(n, batch, procs).iter().map(|r| r.len()).collect::<Vec<_>>();
        assert_eq!(lens(0, 64, 2), Vec::<usize>::new());
        assert_eq!(lens(1, 64, 4), vec![1]);
        assert_eq!(lens(40, 64, 4), vec![10, 10, 10, 10]);
        assert_eq!(lens(7, 64, 2), vec![4, 3]);
        assert_eq!(lens(130, 64, 1), vec![44, 43, 43]);
        let ranges = split(130, 64, 1);
        assert_eq!((ranges[0].start, ranges[2].end), (0, 130), "the ranges cover every point once");
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
    }

    #[test]
    fn the_tail_of_stderr_is_its_last_characters() {
        assert_eq!(tail_chars("abcdef\n", 3), "def");
        assert_eq!(tail_chars("ab", 5), "ab");
        assert_eq!(tail_chars("żółw", 2), "łw");
    }
}
