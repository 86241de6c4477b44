//! `attractor serve`: the service facade over HTTP for the browser UI.
//!
//! The database is the one `--db` / `ATTRACTOR_DB` names, else the one saved
//! on the settings screen, else the default. Prints the address it listens
//! on (port 0 picks a free one) and serves until Ctrl-C, which cancels
//! running launches cleanly (their unfinished epochs resume on the next
//! launch) before exiting. The folders `attractor watch` remembered are
//! watched again while it serves.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::Args;

use super::{Failure, Global};

/// Prints a line of the banner. The server must outlive whoever reads its
/// output: a reader that went away (`attractor serve | head -1`) is not a
/// reason to stop serving, so a failed write is ignored rather than a panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}
use crate::http;
use crate::service::{Service, ServiceConfig};
use crate::watch::WatchConfig;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 7300)]
    pub port: u16,
    /// Address to listen on; anything but loopback needs --token.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Require `Authorization: Bearer TOKEN` on every API request.
    #[arg(long, env = http::TOKEN_ENV, hide_env_values = true)]
    pub token: Option<String>,
    /// Folder of the built web UI [default: ui/dist, found beside the binary or the sources].
    #[arg(long, env = http::UI_DIR_ENV, value_name = "DIR")]
    pub ui_dir: Option<PathBuf>,
    /// Where launched runs put their run directories [default: `runs` beside the database].
    #[arg(long, env = "ATTRACTOR_RUNS_DIR", value_name = "DIR")]
    pub runs_dir: Option<PathBuf>,
}

pub async fn serve(g: &Global, args: &ServeArgs) -> Result<u8, Failure> {
    http::check_bind(args.bind, args.token.as_deref()).map_err(Failure::input)?;
    let ui_dir = http::find_ui_dir(args.ui_dir.as_deref());
    if let Some(dir) = &args.ui_dir
        && !dir.join("index.html").is_file()
    {
        return Err(Failure::input(format!(
            "{} has no index.html\n  hint: build the UI with `npm run build` (it writes ui/dist)",
            dir.display()
        )));
    }

    // The desktop app's order (environment, saved settings, default), with
    // the command line's --db and --runs-dir on top.
    let mut config = ServiceConfig::from_env().map_err(|e| Failure::input(e.to_string()))?;
    if let Some(db) = &g.db {
        config.db_path = db.clone();
    }
    if let Some(dir) = &args.runs_dir {
        config.runs_root = Some(dir.clone());
    }
    let service = Service::open(config).await.map_err(|e| Failure::runtime(e.to_string()))?;
    // Folders remembered by `attractor watch` or the Watched Folders screen
    // are watched again (and scanned for what arrived meanwhile).
    service.start_watching(WatchConfig::default()).await.map_err(|e| Failure::runtime(e.to_string()))?;

    let addr = SocketAddr::new(args.bind, args.port);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        Failure::runtime(format!(
            "cannot listen on {addr}: {e}\n  hint: another program may use the port; try --port 0"
        ))
    })?;
    let local = listener.local_addr().map_err(|e| Failure::runtime(e.to_string()))?;
    let host = if local.ip().is_unspecified() { "127.0.0.1".to_string() } else { local.ip().to_string() };
    let host = if host.contains(':') { format!("[{host}]") } else { host };
    if !g.quiet {
        say!("attractor serve: listening on http://{host}:{}/", local.port());
        say!("database: {}", service.store().path().display());
        let folders = service.store().watched_folders().await.map(|f| f.len()).unwrap_or(0);
        if folders > 0 {
            say!("watching {} for suite and task files", crate::counted(folders, "folder"));
        }
        match &ui_dir {
            Some(dir) => say!("web UI: {}", dir.display()),
            None => say!("web UI: not built (run `npm run build`); the API is under /api"),
        }
        if args.token.is_some() {
            say!("API requests need `Authorization: Bearer TOKEN`; open the UI as http://…/?token=TOKEN");
        }
    }
    use std::io::Write;
    let _ = std::io::stdout().flush();

    let app = http::router(service.clone(), args.token.clone(), ui_dir, http::Gzip::for_bind(args.bind));
    let on_stop = service.clone();
    let shutdown = async move {
        crate::process::termination().await;
        {
            use std::io::Write as _;
            let _ =
                writeln!(std::io::stderr(), "\nstopping: cancelling running launches (they resume on the next launch)");
        }
        // Closing the bus ends every event stream, which lets the server's
        // graceful shutdown finish instead of waiting on open SSE clients.
        on_stop.shutdown().await;
    };
    http::serve(listener, app, shutdown).await.map_err(|e| Failure::runtime(format!("the server failed: {e}")))?;
    Ok(0)
}
