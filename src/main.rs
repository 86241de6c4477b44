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
    // Logs go to stderr, filtered by RUST_LOG (warnings and errors by default).
    // Warnings, and the model client's "waiting on the model" progress, by
    // default; colours only on a terminal, so a redirected log holds no
    // escape codes. RUST_LOG (with a time and a target) is for debugging.
    let debugging = std::env::var_os("RUST_LOG").is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,attractor::llm=info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(debugging);
    if debugging {
        builder.init();
    } else {
        builder.without_time().init();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(attractor::cli::main(cli))
}
