//! Running one shell command the way every harness-facing part of Attractor
//! needs it: bounded in time, bounded in output, and killed as a whole.
//!
//! Command tasks, the command executor (an external coding agent) and the
//! overseers (tests, builds, linters) all run other people's programs. Those
//! programs start pipelines and background helpers, print megabytes, and
//! sometimes never end. [`ShellCommand::run`] therefore
//!
//! - starts `sh -c COMMAND` in its own process group, so a timeout or a
//!   cancellation kills everything the command started, not only the shell;
//! - keeps a bounded [`Capture`] of stdout and stderr — the head, the tail, or
//!   both (test summaries are at the end of long outputs);
//! - does not wait forever for a pipe a left-behind background process holds
//!   open: after the command ends, stragglers get a short grace, then the
//!   group is killed;
//! - looks for processes of its group still alive once it is over — a
//!   background job the command started and never waited for, whether it
//!   kept the pipes open or not — kills them, and names them in
//!   [`ShellRun::left_running`] so the caller can tell a person (the auditor's
//!   zombie-process alert): a command that leaves work running behind it is
//!   a bug in the harness, and a leak on a machine that runs thousands;
//! - reports how it ended ([`ProcessEnd`]) without ever failing itself, so the
//!   caller decides what a spawn error, a timeout or an exit code means;
//! - runs it in a [`sandbox`] when asked (model-written code: overseers and
//!   command executors of agent tasks).

pub mod launcher;
pub mod sandbox;

/// Resolves on the first Ctrl-C or (on Unix) SIGTERM — how a terminal and
/// a service manager (systemd, `kill`) each ask a process to stop — and
/// never when neither signal can be watched. Every long-running verb and
/// the desktop app stop cleanly on it: runs in flight are cancelled and
/// their epochs resume on the next launch.
pub async fn termination() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

/// Names the variables the desktop app set in its own environment for its
/// window alone (comma-separated; src-tauri's `render_without_gpu`: no GL on
/// a machine without a GPU). A command run for a task starts without them
/// and without this one, as it would from the person's shell.
pub const WINDOW_ONLY_ENV: &str = "ATTRACTOR_WINDOW_ONLY_ENV";

/// The variables a command should not inherit: the window's own, and their list.
pub fn window_only_env() -> Vec<String> {
    let named = std::env::var(WINDOW_ONLY_ENV).unwrap_or_default();
    let mut names: Vec<String> = named.split(',').filter(|n| !n.is_empty()).map(str::to_string).collect();
    if !named.is_empty() {
        names.push(WINDOW_ONLY_ENV.to_string());
    }
    names
}

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::watch;

/// Whether the process `pid` of this machine exists (signal 0 touches
/// nothing; EPERM means it exists under another user). Used to tell a live
/// holder of a run or a lease from one that died.
pub fn pid_alive(pid: i32) -> bool {
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(e) => e == nix::errno::Errno::EPERM,
    }
}

/// This machine's name, as workers and leases record it.
pub fn host() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into())
    })
}

/// "host:pid:nonce": this process among every process on a database, for
/// the events it publishes and the requests it works. The nonce tells a
/// process from an earlier one that had the same pid.
pub fn origin() -> &'static str {
    static ORIGIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ORIGIN.get_or_init(|| {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        format!("{}:{}:{:x}", host(), std::process::id(), nanos & 0xffff_ffff)
    })
}

/// Whether the process that `origin` (see [`origin`]) names is gone: only
/// a process of this machine can be asked; one elsewhere is `None`.
pub fn origin_gone(origin: &str) -> Option<bool> {
    let mut parts = origin.rsplitn(3, ':');
    let (_nonce, pid, host_part) = (parts.next()?, parts.next()?, parts.next()?);
    if host_part != host() {
        return None;
    }
    let pid: i32 = pid.parse().ok()?;
    if origin.starts_with(&format!("{}:{}:", host(), std::process::id())) {
        // This process: alive, unless the nonce is another life's.
        return Some(origin != crate::process::origin());
    }
    Some(!pid_alive(pid))
}
use tokio::task::JoinHandle;

/// How long the pipes may stay open after the command itself ended (a
/// background process it started may still hold them) before the process
/// group is killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// How long processes of a group we killed may take to die before the ones
/// still there count as left running (SIGKILL is delivered asynchronously).
const KILL_GRACE: Duration = Duration::from_millis(500);

/// How much of a stream is kept: the first `head` bytes and the last `tail`
/// bytes; what lies between is counted and replaced by a marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capture {
    pub head: usize,
    pub tail: usize,
}

impl Capture {
    /// Only the beginning (a harness's own messages come first).
    pub const fn head(bytes: usize) -> Capture {
        Capture { head: bytes, tail: 0 }
    }

    /// The beginning and the end (test runners print their summary last).
    pub const fn head_and_tail(head: usize, tail: usize) -> Capture {
        Capture { head, tail }
    }
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessEnd {
    /// It exited on its own (with a code, or killed by a signal it did not
    /// get from us).
    Exited(ExitStatus),
    /// It ran past its timeout and was killed with its process group.
    TimedOut(Duration),
    /// The caller cancelled it (Ctrl-C) and it was killed with its group.
    Cancelled,
    /// It could not be started at all.
    SpawnFailed(String),
    /// It started but waiting for it failed.
    WaitFailed(String),
}

impl ProcessEnd {
    /// The exit code, when it exited with one.
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            ProcessEnd::Exited(status) => status.code(),
            _ => None,
        }
    }

    /// The signal that ended it, when it exited because of one we did not send.
    pub fn signal(&self) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        match self {
            ProcessEnd::Exited(status) => status.signal(),
            _ => None,
        }
    }

    /// It exited with code 0.
    pub fn success(&self) -> bool {
        matches!(self, ProcessEnd::Exited(status) if status.success())
    }

    /// One phrase for people: "exited with code 3", "timed out after 5 s", ….
    pub fn describe(&self) -> String {
        match self {
            ProcessEnd::Exited(status) => match (status.code(), self.signal()) {
                (Some(code), _) => format!("exited with code {code}"),
                (None, Some(sig)) => format!("was killed by signal {sig}"),
                (None, None) => "ended without an exit code".to_string(),
            },
            ProcessEnd::TimedOut(after) => format!("timed out after {}", fmt_duration(*after)),
            ProcessEnd::Cancelled => "was cancelled".to_string(),
            ProcessEnd::SpawnFailed(e) => format!("could not be started: {e}"),
            ProcessEnd::WaitFailed(e) => format!("could not be waited for: {e}"),
        }
    }
}

/// A shell command to run once.
#[derive(Debug, Clone)]
pub struct ShellCommand {
    /// Run with `sh -c`.
    pub command: String,
    pub cwd: PathBuf,
    /// Added to the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// Left out of the inherited environment ([`window_only_env`]: what the
    /// desktop app set for its window alone).
    pub unset: Vec<String>,
    pub timeout: Duration,
    pub capture: Capture,
    /// Run inside this sandbox (writable: `cwd` alone), or as is.
    pub sandbox: Option<sandbox::Sandbox>,
}

/// A process of a command's group that was still alive after the command
/// itself had ended (or had been killed): it was killed, and is reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct LeftProcess {
    pub pid: i32,
    /// Its command line as the system shows it (`sleep 30`).
    pub command: String,
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct ShellRun {
    pub end: ProcessEnd,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
    /// Processes of the command's group found alive after it ended; they have
    /// been killed. Empty for a command that cleaned up after itself.
    pub left_running: Vec<LeftProcess>,
}

impl ShellRun {
    /// stdout then stderr, for parsers that do not care which stream a line came on.
    pub fn combined_output(&self) -> String {
        match (self.stdout.is_empty(), self.stderr.is_empty()) {
            (_, true) => self.stdout.clone(),
            (true, false) => self.stderr.clone(),
            (false, false) => format!("{}\n{}", self.stdout.trim_end_matches('\n'), self.stderr),
        }
    }
}

impl ShellCommand {
    pub fn new(command: impl Into<String>, cwd: impl Into<PathBuf>, timeout: Duration) -> ShellCommand {
        ShellCommand {
            command: command.into(),
            cwd: cwd.into(),
            env: Vec::new(),
            unset: window_only_env(),
            timeout,
            capture: Capture::head_and_tail(256 * 1024, 256 * 1024),
            sandbox: None,
        }
    }

    /// Runs it in `sandbox` (`None`: as is).
    pub fn sandboxed(mut self, sandbox: Option<sandbox::Sandbox>) -> ShellCommand {
        self.sandbox = sandbox;
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> ShellCommand {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn capture(mut self, capture: Capture) -> ShellCommand {
        self.capture = capture;
        self
    }

    /// Runs the command to its end, its timeout, or `cancel` turning true.
    pub async fn run(&self, cancel: Option<watch::Receiver<bool>>) -> ShellRun {
        let started = Instant::now();
        let mut cmd = match &self.sandbox {
            Some(sandbox) => {
                let (program, args) = sandbox.wrap(&self.command, &self.cwd);
                let mut c = Command::new(program);
                c.args(args);
                c
            }
            None => {
                let mut c = Command::new("sh");
                c.arg("-c").arg(&self.command);
                c
            }
        };
        for name in &self.unset {
            cmd.env_remove(name);
        }
        cmd.current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            // Its own process group, so a timeout kills the whole pipeline the
            // shell started, not just the shell.
            .process_group(0)
            .kill_on_drop(true);
        let mut child = match launcher::spawn(cmd).await {
            Ok(c) => c,
            Err(e) => {
                let reason = if self.cwd.is_dir() {
                    e.to_string()
                } else {
                    format!("{e} (the working directory {} does not exist)", self.cwd.display())
                };
                return ShellRun {
                    end: ProcessEnd::SpawnFailed(reason),
                    stdout: String::new(),
                    stderr: String::new(),
                    duration: started.elapsed(),
                    left_running: Vec::new(),
                };
            }
        };
        let pgid = child.id().and_then(|p| i32::try_from(p).ok());
        let stdout = Drain::start(child.stdout.take(), self.capture);
        let stderr = Drain::start(child.stderr.take(), self.capture);

        enum Stop {
            Exited(std::io::Result<ExitStatus>),
            TimedOut,
            Cancelled,
        }
        let cancelled = async move {
            match cancel {
                Some(mut rx) => loop {
                    if *rx.borrow_and_update() {
                        return;
                    }
                    if rx.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                },
                None => std::future::pending::<()>().await,
            }
        };
        let stop = tokio::select! {
            status = child.wait() => Stop::Exited(status),
            _ = tokio::time::sleep(self.timeout) => Stop::TimedOut,
            _ = cancelled => Stop::Cancelled,
        };
        let killed = !matches!(stop, Stop::Exited(_));
        if killed {
            kill_group(pgid);
            let _ = child.wait().await;
        }
        // The shell is gone; its pipes close when every process that inherited
        // them is gone too. A straggler holding them gets a grace period, then
        // the group is killed. (The group id cannot have been reused meanwhile:
        // a group id stays taken while any member lives, and the straggler is one.)
        let mut left_running = Vec::new();
        if !(stdout.wait(DRAIN_GRACE).await && stderr.wait(DRAIN_GRACE).await) {
            // Named before the kill: afterwards there is nothing left to name.
            left_running = group_members(pgid).await;
            kill_group(pgid);
            stdout.wait(DRAIN_GRACE).await;
            stderr.wait(DRAIN_GRACE).await;
        }
        // A background job that let go of the pipes (`cmd >/dev/null &`) is
        // still in the group; after our own kill, only one that outlived
        // SIGKILL for a while is.
        if left_running.is_empty() {
            left_running = if killed { survivors(pgid).await } else { group_members(pgid).await };
            if !left_running.is_empty() {
                kill_group(pgid);
            }
        }
        if !left_running.is_empty() {
            tracing::warn!(command = %self.command, left = ?left_running, "the command left processes running; killed them");
        }
        let end = match stop {
            Stop::Exited(Ok(status)) => ProcessEnd::Exited(status),
            Stop::Exited(Err(e)) => ProcessEnd::WaitFailed(e.to_string()),
            Stop::TimedOut => ProcessEnd::TimedOut(self.timeout),
            Stop::Cancelled => ProcessEnd::Cancelled,
        };
        ShellRun { end, stdout: stdout.finish(), stderr: stderr.finish(), duration: started.elapsed(), left_running }
    }
}

fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
    }
}

/// Members of a group we just killed that are still alive after
/// [`KILL_GRACE`] (a process stuck in the kernel, say).
async fn survivors(pgid: Option<i32>) -> Vec<LeftProcess> {
    let deadline = Instant::now() + KILL_GRACE;
    loop {
        let alive = group_members(pgid).await;
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The live processes of process group `pgid` (zombies — dead, waiting to be
/// reaped — do not count: they run nothing).
async fn group_members(pgid: Option<i32>) -> Vec<LeftProcess> {
    let Some(pgid) = pgid.filter(|p| *p > 1) else { return Vec::new() };
    tokio::task::spawn_blocking(move || list_group(pgid)).await.unwrap_or_default()
}

/// Reads the process table: `/proc` where there is one (Linux), else `ps`.
fn list_group(pgid: i32) -> Vec<LeftProcess> {
    if let Ok(entries) = std::fs::read_dir("/proc")
        && std::path::Path::new("/proc/self/stat").exists()
    {
        let mut found: Vec<LeftProcess> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                let (state, group) = parse_stat(&stat)?;
                (group == pgid && !matches!(state, 'Z' | 'X' | 'x')).then(|| LeftProcess { pid, command: cmdline(pid) })
            })
            .collect();
        found.sort_by_key(|p| p.pid);
        return found;
    }
    let Ok(out) = std::process::Command::new("ps").args(["-A", "-o", "pid=,pgid=,stat=,command="]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let pid: i32 = parts.next()?.parse().ok()?;
            let group: i32 = parts.next()?.parse().ok()?;
            let state = parts.next()?;
            let command = parts.collect::<Vec<_>>().join(" ");
            (group == pgid && !state.starts_with('Z')).then_some(LeftProcess { pid, command })
        })
        .collect()
}

/// The state letter and the process group of a `/proc/PID/stat` line. The
/// command name in parentheses may itself hold spaces and parentheses, so
/// the fields are counted from the last `)`.
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    Some((state, group))
}

/// A process's command line (`sleep 30`), or its name when the line is unreadable.
fn cmdline(pid: i32) -> String {
    let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> =
        line.split(|b| *b == 0).filter(|w| !w.is_empty()).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
    if !words.is_empty() {
        return words.join(" ");
    }
    std::fs::read_to_string(format!("/proc/{pid}/comm")).map(|c| c.trim().to_string()).unwrap_or_default()
}

/// Bytes kept from one stream.
#[derive(Debug, Default)]
struct Kept {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: usize,
}

/// A pipe read to its end on a task, into a bounded [`Kept`] that can be
/// taken at any time (also when the reader has to be abandoned).
struct Drain {
    kept: Arc<Mutex<Kept>>,
    task: Option<JoinHandle<()>>,
    capture: Capture,
}

impl Drain {
    fn start<R: AsyncRead + Unpin + Send + 'static>(pipe: Option<R>, capture: Capture) -> Drain {
        let kept = Arc::new(Mutex::new(Kept::default()));
        let task = pipe.map(|mut pipe| {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                loop {
                    match pipe.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => keep(&mut lock(&kept), &buf[..n], capture),
                    }
                }
            })
        });
        Drain { kept, task, capture }
    }

    /// Waits up to `grace` for the pipe to close; true when it did.
    async fn wait(&self, grace: Duration) -> bool {
        match &self.task {
            None => true,
            Some(task) if task.is_finished() => true,
            Some(_) => {
                let deadline = tokio::time::Instant::now() + grace;
                loop {
                    if self.task.as_ref().is_none_or(JoinHandle::is_finished) {
                        return true;
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return false;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    }

    /// What was kept, as text, with a marker where bytes were dropped.
    fn finish(mut self) -> String {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        let kept = std::mem::take(&mut *lock(&self.kept));
        let mut s = String::from_utf8_lossy(&kept.head).into_owned();
        if kept.dropped > 0 {
            if self.capture.tail == 0 {
                s.push_str(&format!("\n[… {} more bytes not kept]", kept.dropped));
            } else {
                s.push_str(&format!("\n[… {} bytes in the middle not kept …]\n", kept.dropped));
            }
        }
        let (a, b) = kept.tail.as_slices();
        if !a.is_empty() || !b.is_empty() {
            let tail: Vec<u8> = a.iter().chain(b).copied().collect();
            s.push_str(&String::from_utf8_lossy(&tail));
        }
        s
    }
}

fn keep(kept: &mut Kept, mut bytes: &[u8], capture: Capture) {
    let room = capture.head.saturating_sub(kept.head.len());
    let into_head = bytes.len().min(room);
    kept.head.extend_from_slice(&bytes[..into_head]);
    bytes = &bytes[into_head..];
    if bytes.is_empty() {
        return;
    }
    if capture.tail == 0 {
        kept.dropped += bytes.len();
        return;
    }
    if bytes.len() >= capture.tail {
        kept.dropped += kept.tail.len() + bytes.len() - capture.tail;
        kept.tail.clear();
        kept.tail.extend(&bytes[bytes.len() - capture.tail..]);
        return;
    }
    let overflow = (kept.tail.len() + bytes.len()).saturating_sub(capture.tail);
    kept.tail.drain(..overflow);
    kept.dropped += overflow;
    kept.tail.extend(bytes);
}

fn lock(m: &Mutex<Kept>) -> std::sync::MutexGuard<'_, Kept> {
    // A reader that panicked leaves plain bytes behind: still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `5 s`, `1.5 s`.
pub fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 { format!("{s:.0} s") } else { format!("{s:.1} s") }
}

/// `text` quoted for `sh`, so a path with spaces or quotes stays one word.
pub fn shell_quote(text: &str) -> String {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:=@%,".contains(&b)) {
        return text.to_string();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(chunks: &[&[u8]], capture: Capture) -> String {
        let mut k = Kept::default();
        for c in chunks {
            keep(&mut k, c, capture);
        }
        let drain = Drain { kept: Arc::new(Mutex::new(k)), task: None, capture };
        drain.finish()
    }

    #[test]
    fn head_and_tail_keep_both_ends_and_count_the_middle() {
        let out = kept(&[b"abcdef", b"ghij", b"klmnop"], Capture::head_and_tail(3, 4));
        assert_eq!(out, "abc\n[… 9 bytes in the middle not kept …]\nmnop");
        let out = kept(&[b"ab", b"c"], Capture::head_and_tail(3, 4));
        assert_eq!(out, "abc");
        let out = kept(&[b"abcd", b"e", b"f", b"g", b"h", b"i"], Capture::head_and_tail(2, 3));
        assert_eq!(out, "ab\n[… 4 bytes in the middle not kept …]\nghi");
    }

    #[test]
    fn head_only_says_how_much_more_there_was() {
        assert_eq!(kept(&[b"abcdef"], Capture::head(4)), "abcd\n[… 2 more bytes not kept]");
    }

    #[test]
    fn a_stat_line_is_read_from_the_last_parenthesis() {
        assert_eq!(parse_stat("4242 (sleep) S 1 4240 4240 0 -1 4194560"), Some(('S', 4240)));
        assert_eq!(parse_stat("77 (a (weird) name) Z 1 70 70 0"), Some(('Z', 70)));
        assert_eq!(parse_stat("garbage"), None);
    }

    fn quick(command: &str, timeout: Duration) -> ShellCommand {
        ShellCommand::new(command, std::env::temp_dir(), timeout)
    }

    #[tokio::test]
    async fn a_background_job_that_lets_go_of_the_pipes_is_found_killed_and_named() {
        let run = quick("sleep 30 >/dev/null 2>&1 & echo started", Duration::from_secs(20)).run(None).await;
        assert!(run.end.success(), "{:?}", run.end);
        assert_eq!(run.stdout.trim(), "started");
        assert_eq!(run.left_running.len(), 1, "{:?}", run.left_running);
        let left = &run.left_running[0];
        assert_eq!(left.command, "sleep 30");
        // It was killed: the pid is gone (or a zombie waiting for its reaper).
        tokio::time::sleep(Duration::from_millis(100)).await;
        let pid = left.pid;
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|s| parse_stat(&s));
        assert!(state.is_none_or(|(st, _)| st == 'Z'), "pid {pid} still runs: {state:?}");
    }

    #[tokio::test]
    async fn a_background_job_holding_the_pipes_is_named_before_it_is_killed() {
        let run = quick("sleep 30 & echo started", Duration::from_secs(20)).run(None).await;
        assert!(run.end.success(), "{:?}", run.end);
        assert_eq!(run.stdout.trim(), "started");
        let commands: Vec<&str> = run.left_running.iter().map(|p| p.command.as_str()).collect();
        assert_eq!(commands, vec!["sleep 30"]);
    }

    #[tokio::test]
    async fn a_command_that_waits_for_its_children_leaves_nothing() {
        let run = quick("sleep 0.1 & wait; echo done", Duration::from_secs(20)).run(None).await;
        assert!(run.end.success());
        assert!(run.left_running.is_empty(), "{:?}", run.left_running);
        let run = quick("sleep 30", Duration::from_millis(200)).run(None).await;
        assert!(matches!(run.end, ProcessEnd::TimedOut(_)), "{:?}", run.end);
        assert!(run.left_running.is_empty(), "what the timeout killed died: {:?}", run.left_running);
    }

    #[tokio::test]
    async fn a_command_starts_without_the_variables_the_window_set_for_itself() {
        // HOME and PATH stand in for the window's variables: both are in the
        // tests' environment; the one named is left out, the other kept.
        let mut cmd = quick("echo ${HOME-unset} ${PATH:+kept}", Duration::from_secs(10));
        cmd.unset = vec!["HOME".into()];
        let run = cmd.run(None).await;
        assert!(run.end.success(), "{:?}", run.end);
        assert_eq!(run.stdout.trim(), "unset kept");
    }

    #[test]
    fn quoting_keeps_one_word() {
        assert_eq!(shell_quote("/tmp/a.md"), "/tmp/a.md");
        assert_eq!(shell_quote("/tmp/it's here"), r"'/tmp/it'\''s here'");
        assert_eq!(shell_quote(""), "''");
    }
}
