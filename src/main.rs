//! The `attractor` binary: logging set-up, then the CLI.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = attractor::cli::Cli::parse();
    // Output piped into `head` or `less` should end the command quietly when
    // the reader goes away, as for any Unix tool, not with a panic about a
    // broken pipe. The server keeps Rust's default (SIGPIPE ignored): whoever
    // read its banner may be long gone while it serves.
    #[cfg(unix)]
    if !matches!(cli.command, attractor::cli::Command::Serve(_)) {
        // SAFETY: called before any thread starts; SIG_DFL installs no handler code.
        unsafe {
            let _ = nix::sys::signal::signal(nix::sys::signal::Signal::SIGPIPE, nix::sys::signal::SigHandler::SigDfl);
        }
    }
    attractor::cli::log::init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(attractor::cli::main(cli))
}
