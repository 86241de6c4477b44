//! Child processes start at a lower priority than Attractor itself.
//!
//! The control loop (the engine's decisions, the store, the bus) needs
//! little CPU but needs it at once: every iteration waits on it several
//! times. The processes it starts — git, overseers, command executors —
//! need a lot. With 32 trajectories on two cores the children keep every
//! core busy, and each wake-up of the control loop waited behind them: the
//! store's writer connection stayed held while its holder waited for a
//! core, and the whole queue of writers behind it waited too
//! (`attractor bench engine`: the control overhead at 32 trajectories fell
//! from about a third of an iteration to a few percent with the children
//! niced; bench/HISTORY.md). On an idle machine niceness changes nothing.
//!
//! A child inherits the niceness of the thread that starts it, and on Linux
//! niceness is a per-thread attribute. So children are started from two
//! launcher threads niced by [`CHILD_NICENESS`], never from the runtime's
//! own threads, which stay at the process's priority; spawning this way
//! needs no code between fork and exec. Elsewhere (or when a launcher
//! cannot start) a child is started directly.

use std::io;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::process::{Child, Command};
use tokio::sync::oneshot;

/// How much nicer than Attractor its children are (`nice -n 10`): added to
/// the niceness Attractor runs at, up to the lowest priority (19).
pub const CHILD_NICENESS: i32 = 10;

/// Launcher threads: a spawn blocks its thread until the child has
/// exec'd, so two keep one slow start from holding up the next.
const LAUNCHERS: usize = 2;

struct Job {
    cmd: Command,
    runtime: tokio::runtime::Handle,
    reply: oneshot::Sender<io::Result<Child>>,
}

/// Starts `cmd` niced (see the module's doc). Must be called on a tokio
/// runtime, like [`Command::spawn`].
pub async fn spawn(cmd: Command) -> io::Result<Child> {
    let Some(queue) = launchers() else {
        let mut cmd = cmd;
        return cmd.spawn();
    };
    let (reply, answer) = oneshot::channel();
    let job = Job { cmd, runtime: tokio::runtime::Handle::current(), reply };
    if let Err(mpsc::SendError(job)) = queue.send(job) {
        let mut cmd = job.cmd;
        return cmd.spawn();
    }
    answer.await.unwrap_or_else(|_| Err(io::Error::other("the process launcher stopped")))
}

/// The launchers' queue, started on first use; `None` where niceness is
/// not per thread or no launcher could start.
fn launchers() -> Option<&'static mpsc::Sender<Job>> {
    static QUEUE: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    QUEUE.get_or_init(start).as_ref()
}

#[cfg(target_os = "linux")]
fn start() -> Option<mpsc::Sender<Job>> {
    let (send, receive) = mpsc::channel::<Job>();
    let receive = Arc::new(Mutex::new(receive));
    let mut started = 0;
    for i in 0..LAUNCHERS {
        let receive = Arc::clone(&receive);
        let launcher = std::thread::Builder::new().name(format!("attractor-launcher-{i}")).spawn(move || {
            // The calling thread only (Linux's per-thread niceness), relative
            // to what this thread inherited: Attractor started with `nice`
            // keeps its children below it. A failure leaves children at
            // Attractor's own priority.
            let base = rustix::process::getpriority_process(None).unwrap_or(0);
            if let Err(e) = rustix::process::setpriority_process(None, (base + CHILD_NICENESS).min(19)) {
                tracing::debug!(error = %e, "cannot lower the process launcher's priority");
            }
            loop {
                let job = match receive.lock() {
                    Ok(queue) => queue.recv(),
                    Err(_) => return,
                };
                let Ok(Job { mut cmd, runtime, reply }) = job else { return };
                // A caller that gave up while its job waited (a cancelled
                // iteration) gets no process started behind its back.
                if reply.is_closed() {
                    continue;
                }
                // The child registers with the caller's runtime (its pipes
                // and its exit), not with this thread.
                let _entered = runtime.enter();
                if let Err(Ok(mut child)) = reply.send(cmd.spawn()) {
                    // The caller left while the child started: it is not
                    // left running unwatched.
                    let _ = child.start_kill();
                }
            }
        });
        if launcher.is_ok() {
            started += 1;
        }
    }
    (started > 0).then_some(send)
}

#[cfg(not(target_os = "linux"))]
fn start() -> Option<mpsc::Sender<Job>> {
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_child_runs_niced_and_attractor_itself_does_not() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "cut -d' ' -f19 /proc/self/stat"]).stdout(std::process::Stdio::piped());
        let out = spawn(cmd).await.unwrap().wait_with_output().await.unwrap();
        assert!(out.status.success());
        let ours = rustix::process::getpriority_process(None).unwrap();
        let child: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert_eq!(child, (ours + CHILD_NICENESS).min(19), "the child's niceness is the launcher's");
        // Below us, unless this test itself already runs at the lowest priority.
        assert!(child > ours || ours == 19, "child {child}, attractor {ours}");
    }
}
