//! The `attractor` binary: logging set-up, then the CLI.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = attractor::cli::Cli::parse();
    // Logs go to stderr, filtered by RUST_LOG (warnings and errors by default).
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(attractor::cli::main(cli))
}
