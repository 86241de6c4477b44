//! Running code a model wrote where it can do no harm.
//!
//! An agent task's overseers run the workspace's code (tests import it), and
//! a command executor is a coding agent acting on a model's say-so. Edits are
//! confined to the workspace by the workspace itself; *execution* is confined
//! here, with bubblewrap (`bwrap`, Debian's `bubblewrap`):
//!
//! - the whole file system is mounted read-only, the workspace alone writable
//!   at its own path, `/tmp` and `~/.cache` private and empty, `/dev`
//!   minimal (and Cargo builds into the workspace's `target/`);
//! - no network (a fresh network namespace with nothing in it) unless the
//!   overseer or the executor is declared `network: true`;
//! - its own process namespace: the command sees only its own processes, can
//!   signal nothing outside, and everything it started dies with it, so a
//!   background job can never outlive the command;
//! - limits on memory (the data segment, `RLIMIT_DATA`: what a program
//!   allocates, not the address space runtimes reserve) and on processes
//!   (`RLIMIT_NPROC`, which the kernel does not enforce for root); time is
//!   the command's timeout, as without the sandbox.
//!
//! Turning it off is the user's explicit choice (`--no-sandbox`,
//! `ATTRACTOR_SANDBOX=off`), never a suite file's, and is shown on the run.

use std::ffi::OsString;
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The environment variable that turns the sandbox off (`off`, `0`, `false`).
pub const SANDBOX_ENV: &str = "ATTRACTOR_SANDBOX";

/// How agent tasks' commands are confined (part of the agent configuration).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// Run overseers and command executors under bubblewrap (Linux).
    pub enabled: bool,
    /// The most memory one command may allocate, in MiB.
    pub memory_mb: u64,
    /// The most processes (of the command's user) while it runs.
    pub processes: u64,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig { enabled: true, memory_mb: 4096, processes: 1024 }
    }
}

impl SandboxConfig {
    /// The sandbox for one command, or `None` when it is turned off.
    pub fn for_command(&self, network: bool) -> Option<Sandbox> {
        self.enabled.then_some(Sandbox {
            network,
            memory_bytes: self.memory_mb.saturating_mul(1024 * 1024),
            processes: self.processes,
            readable: Vec::new(),
            hidden: Vec::new(),
        })
    }

    /// Whether `ATTRACTOR_SANDBOX` (read through `env`) turns it off.
    pub fn off_by_env(env: impl Fn(&str) -> Option<String>) -> bool {
        env(SANDBOX_ENV).is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "false" | "no"))
    }

    /// One line for the plan and the run's record.
    pub fn describe(&self) -> String {
        if self.enabled {
            format!(
                "bubblewrap (workspace writable, the rest read-only, no network unless declared, {} MiB, {} processes)",
                self.memory_mb, self.processes
            )
        } else {
            "OFF: commands run with your full rights (--no-sandbox or ATTRACTOR_SANDBOX=off)".to_string()
        }
    }
}

/// Folders under the home folder that hold credentials: hidden (empty).
const SECRET_FOLDERS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".docker",
    ".kube",
    ".password-store",
    ".config/gcloud",
    ".config/gh",
    ".config/attractor",
    ".local/share/keyrings",
];

/// Files under the home folder that hold credentials: read as empty.
const SECRET_FILES: &[&str] = &[".netrc", ".pypirc", ".git-credentials", ".npmrc"];

/// How one command is confined; its writable folder is its working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub network: bool,
    pub memory_bytes: u64,
    pub processes: u64,
    /// Folders the command reads that the private `/tmp` would hide (the
    /// suite's folder, where held-out checks live): bound read-only.
    pub readable: Vec<std::path::PathBuf>,
    /// Folders the command must not read (a command executor's: the suite's
    /// folder with its held-out checks, the other runs): each replaced by an
    /// empty one, the workspace bound back inside when it lies within.
    pub hidden: Vec<std::path::PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the sandbox for agent tasks' commands cannot start here: {reason}\n  hint: install bubblewrap \
     (`apt-get install bubblewrap`; scripts/setup.sh does), or run without it on purpose: `--no-sandbox` \
     (or ATTRACTOR_SANDBOX=off) — overseers and command executors then run model-written code with your full rights"
)]
pub struct SandboxUnavailable {
    pub reason: String,
}

impl Sandbox {
    /// The program and arguments that run `sh -c command` in `cwd` inside
    /// the sandbox.
    pub fn wrap(&self, command: &str, cwd: &Path) -> (OsString, Vec<OsString>) {
        let mut args: Vec<OsString> = Vec::new();
        let mut add = |words: &[&dyn AsRef<std::ffi::OsStr>]| {
            args.extend(words.iter().map(|w| w.as_ref().to_os_string()));
        };
        add(&[&"--ro-bind", &"/", &"/", &"--dev", &"/dev", &"--proc", &"/proc", &"--tmpfs", &"/tmp"]);
        // Its own session (no typing into the user's terminal), processes,
        // IPC and host name; it dies with the process that started it.
        add(&[&"--new-session", &"--unshare-pid", &"--unshare-ipc", &"--unshare-uts", &"--die-with-parent"]);
        add(&[&"--setenv", &"TMPDIR", &"/tmp"]);
        // Sockets are reachable on a read-only file system: the session bus
        // (a way out through systemd, and the keychain), an SSH agent, a
        // Docker daemon. Their folders are replaced by empty ones.
        for dir in ["/run", "/var/run"] {
            // (`/var/run` is usually a link to `/run`: hidden with it.)
            if std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
                add(&[&"--tmpfs", &dir]);
            }
        }
        for var in ["DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR", "DOCKER_HOST", "GPG_AGENT_INFO"] {
            add(&[&"--unsetenv", &var]);
        }
        if let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from) {
            // Build tools keep caches under ~/.cache, ~/.npm, ~/.gradle:
            // private, empty ones let them work (the real ones stay untouched).
            for dir in [".cache", ".npm", ".gradle"] {
                let path = home.join(dir);
                if path.is_dir() {
                    add(&[&"--tmpfs", &path]);
                }
            }
            // Credentials are nobody's business in a test run.
            for dir in SECRET_FOLDERS {
                let path = home.join(dir);
                if path.is_dir() {
                    add(&[&"--tmpfs", &path]);
                }
            }
            for file in SECRET_FILES {
                let path = home.join(file);
                if path.is_file() {
                    add(&[&"--ro-bind", &"/dev/null", &path]);
                }
            }
        }
        // Cargo builds into the workspace's own `target/` rather than a
        // shared folder outside it.
        add(&[&"--unsetenv", &"CARGO_TARGET_DIR"]);
        // Attractor's own key never; a provider's key only for a command
        // that was given the network (a coding agent calling its model).
        add(&[&"--unsetenv", &crate::secrets::ENV_API_KEY]);
        if !self.network {
            add(&[&"--unshare-net", &"--unsetenv", &crate::secrets::ENV_OPENAI_API_KEY]);
        }
        for dir in self.readable.iter().filter(|d| d.is_dir()) {
            add(&[&"--ro-bind", dir, dir]);
        }
        for dir in self.hidden.iter().filter(|d| hideable(d)) {
            add(&[&"--tmpfs", dir]);
        }
        add(&[&"--bind", &cwd, &cwd]);
        // The workspace's git folder stays read-only: a hook, a filter or
        // an `fsmonitor` written into its config would run outside the
        // sandbox at the next commit. The executor's scratch folder inside
        // it (its prompt and report) stays writable.
        let git = cwd.join(".git");
        if git.is_dir() {
            add(&[&"--ro-bind", &git, &git]);
            let scratch = git.join("attractor");
            if scratch.is_dir() {
                add(&[&"--bind", &scratch, &scratch]);
            }
        }
        add(&[&"--chdir", &cwd, &"--", &"prlimit"]);
        let data = format!("--data={}", self.memory_bytes);
        let nproc = format!("--nproc={}", self.processes);
        add(&[&data, &nproc, &"--", &"sh", &"-c", &command]);
        ("bwrap".into(), args)
    }
}

/// Whether hiding `dir` leaves the command able to run: never the root,
/// the home folder or a folder holding it (where the toolchains live), nor
/// a folder that does not exist.
fn hideable(dir: &Path) -> bool {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    dir.is_dir() && dir.parent().is_some() && !home.is_some_and(|h| h.starts_with(dir))
}

/// Whether the sandbox can start on this machine: tried once per process
/// with a command that does nothing.
pub fn available() -> Result<(), SandboxUnavailable> {
    static PROBE: OnceLock<Result<(), SandboxUnavailable>> = OnceLock::new();
    PROBE.get_or_init(probe).clone()
}

fn probe() -> Result<(), SandboxUnavailable> {
    let dir = std::env::temp_dir();
    let sandbox =
        Sandbox { network: false, memory_bytes: 1 << 30, processes: 64, readable: Vec::new(), hidden: Vec::new() };
    let (program, args) = sandbox.wrap("true", &dir);
    match std::process::Command::new(&program).args(&args).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(SandboxUnavailable {
            reason: format!(
                "bubblewrap failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or("no message").trim()
            ),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(SandboxUnavailable { reason: "bubblewrap (`bwrap`) is not installed".to_string() })
        }
        Err(e) => Err(SandboxUnavailable { reason: format!("cannot start bubblewrap: {e}") }),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::time::Duration;

    use super::*;
    use crate::process::ShellCommand;

    fn sandbox() -> Option<Sandbox> {
        SandboxConfig { memory_mb: 256, ..SandboxConfig::default() }.for_command(false)
    }

    async fn run(command: &str, cwd: &Path, sandbox: Option<Sandbox>) -> crate::process::ShellRun {
        ShellCommand::new(command, cwd, Duration::from_secs(60)).sandboxed(sandbox).run(None).await
    }

    #[tokio::test]
    async fn a_sandboxed_command_writes_its_workspace_and_nothing_else() {
        available().unwrap();
        let ws = tempfile::tempdir().unwrap();
        // Outside /tmp (private in the sandbox anyway): the home folder.
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from).unwrap();
        let outside = tempfile::Builder::new().prefix(".attractor-sandbox-test").tempdir_in(home).unwrap();
        let target = outside.path().join("escaped.txt");
        let command = format!(
            "echo in > in.txt && mkdir -p sub && echo deep > sub/deep.txt; echo out > '{}'; echo $? > status.txt; echo tmp > /tmp/t && cat /tmp/t",
            target.display()
        );
        let run = run(&command, ws.path(), sandbox()).await;
        assert!(run.end.success(), "{:?} {}", run.end, run.stderr);
        assert_eq!(std::fs::read_to_string(ws.path().join("sub/deep.txt")).unwrap(), "deep\n");
        assert!(!target.exists(), "wrote outside the workspace");
        assert_ne!(std::fs::read_to_string(ws.path().join("status.txt")).unwrap().trim(), "0");
        assert!(run.stderr.contains("Read-only file system"), "{}", run.stderr);
        let git = run_git_probe(ws.path()).await;
        assert!(git.contains("Read-only"), "the workspace's .git is writable: {git}");
        assert_eq!(run.stdout.trim(), "tmp", "a private /tmp is writable");

        // The same command as is: it can (the test could fail).
        let bare = super::super::ShellCommand::new(&command, ws.path(), Duration::from_secs(60)).run(None).await;
        assert!(bare.end.success());
        assert!(target.exists(), "without the sandbox the write lands");
    }

    /// Tries to write the workspace's git config from inside the sandbox.
    async fn run_git_probe(ws: &Path) -> String {
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        let r = run("echo '[core] fsmonitor = evil' >> .git/config", ws, sandbox()).await;
        r.stderr
    }

    #[tokio::test]
    async fn a_sandboxed_command_reaches_no_network_not_even_this_machine() {
        available().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let ws = tempfile::tempdir().unwrap();
        let connect = format!(
            "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=5); s.sendall(b'hello')\""
        );
        let run = run(&connect, ws.path(), sandbox()).await;
        assert!(!run.end.success(), "connected from inside the sandbox");
        assert!(listener.accept().is_err(), "the listener was reached");

        // With `network: true` (or without the sandbox) the same call connects.
        let open = SandboxConfig::default().for_command(true);
        let run = self::run(&connect, ws.path(), open).await;
        assert!(run.end.success(), "{:?} {}", run.end, run.stderr);
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_nonblocking(false).unwrap();
        let mut got = String::new();
        stream.read_to_string(&mut got).unwrap();
        assert_eq!(got, "hello");
    }

    #[tokio::test]
    async fn a_sandboxed_command_allocates_within_its_memory_limit_only() {
        available().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let small = run("python3 -c \"x = bytearray(64 * 2**20); print('ok')\"", ws.path(), sandbox()).await;
        assert_eq!(small.stdout.trim(), "ok", "{}", small.stderr);
        let big = run("python3 -c \"x = bytearray(1024 * 2**20)\"", ws.path(), sandbox()).await;
        assert!(!big.end.success());
        assert!(big.stderr.contains("MemoryError"), "{}", big.stderr);
    }

    #[tokio::test]
    async fn what_a_sandboxed_command_starts_in_the_background_dies_with_it() {
        available().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let run = run("sleep 31337 >/dev/null 2>&1 & echo started", ws.path(), sandbox()).await;
        assert_eq!(run.stdout.trim(), "started");
        let alive: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.starts_with("sleep 31337"))
            .collect();
        assert_eq!(alive, Vec::<String>::new());
    }

    #[tokio::test]
    async fn sockets_and_credentials_are_out_of_reach() {
        available().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let probe = "ls -A /run | wc -l; echo \"${DBUS_SESSION_BUS_ADDRESS:-none} ${SSH_AUTH_SOCK:-none} ${ATTRACTOR_LLM_API_KEY:-none}\"";
        let run = ShellCommand::new(probe, ws.path(), Duration::from_secs(60))
            .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus")
            .env("SSH_AUTH_SOCK", "/tmp/agent.sock")
            .env("ATTRACTOR_LLM_API_KEY", "sk-secret")
            .sandboxed(sandbox())
            .run(None)
            .await;
        assert_eq!(run.stdout.lines().collect::<Vec<_>>(), ["0", "none none none"], "{}", run.stderr);
    }

    #[test]
    fn the_environment_turns_it_off_only_in_so_many_words() {
        let env = |v: &'static str| move |k: &str| (k == SANDBOX_ENV).then(|| v.to_string());
        assert!(SandboxConfig::off_by_env(env("off")));
        assert!(SandboxConfig::off_by_env(env(" FALSE ")));
        assert!(!SandboxConfig::off_by_env(env("on")));
        assert!(!SandboxConfig::off_by_env(|_| None));
    }
}
