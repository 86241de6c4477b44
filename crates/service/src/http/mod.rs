//! The HTTP transport of the service facade: `attractor serve`.
//!
//! JSON under `/api/…` — one route per facade operation, registered from
//! their one declaration ([`crate::service::operations`]: verb, path, where
//! each argument is) —, server-sent events at `/api/events` pushed from the
//! bus, the suite's report as a zip download, and the built front end
//! (`ui/dist`) for everything else. Nothing here decides anything the
//! desktop shell would have to decide again: a route only hands the
//! request's pieces to [`operations::call`].
//!
//! Security model: loopback by default. Binding any other address needs a
//! token ([`check_bind`]), and with a token every `/api` request must carry
//! `Authorization: Bearer TOKEN` — or `?access_token=TOKEN`, because a
//! browser's `EventSource` cannot set headers. Without a token, `/api`
//! answers only requests whose `Host` names the loopback interface (against
//! DNS rebinding), and JSON bodies must say `Content-Type: application/json`,
//! which a cross-site form cannot send without a CORS preflight this server
//! never grants; any request that changes something (with a body or
//! without) is refused when a browser marks it as coming from another site
//! (`Sec-Fetch-Site`, `Origin`). Bodies over 2 MB get 413. The static UI
//! files hold no data and are served to anyone.
//!
//! The UI is served from a directory found at run time ([`find_ui_dir`]), not
//! embedded: `cargo build` then needs no Node toolchain and never serves a
//! stale embedded copy, and the desktop bundle ships the same `ui/dist`.

pub mod docs;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, RawPathParamsRejection};
use axum::extract::{Path as UrlPath, Query, RawPathParams, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{MethodRouter, delete, get, post, put};
use axum::{Json, Router};
use futures::Stream;
use serde::Deserialize;
use tower_http::CompressionLevel;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::services::{ServeDir, ServeFile};

use crate::service::operations::{self, CallError, Input, OPERATIONS, Operation, Verb};
use crate::service::types::ApiError;
use crate::service::{Service, ServiceError};

/// Environment variable holding the API token (same as `--token`).
pub const TOKEN_ENV: &str = "ATTRACTOR_TOKEN";
/// Environment variable naming the folder of the built UI (same as `--ui-dir`).
pub const UI_DIR_ENV: &str = "ATTRACTOR_UI_DIR";

/// Refuses to expose the API beyond this machine without a token: anyone who
/// can reach the port could otherwise launch commands from suite files.
pub fn check_bind(bind: IpAddr, token: Option<&str>) -> Result<(), String> {
    if bind.is_loopback() || token.is_some_and(|t| !t.is_empty()) {
        return Ok(());
    }
    Err(format!(
        "refusing to listen on {bind} without a token: anyone who can reach it could launch suites (which run commands)\n  hint: pass --token TOKEN (or set {TOKEN_ENV}); clients then send `Authorization: Bearer TOKEN`. Or keep the default --bind 127.0.0.1"
    ))
}

/// Where the built front end is: the explicit folder, else `ui/` beside the
/// executable (an installed layout), else `ui/dist` in the working directory
/// or in the source tree this binary was built from. A folder counts when it
/// holds `index.html`.
pub fn find_ui_dir(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = explicit {
        return Some(dir.to_path_buf());
    }
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
        candidates.push(dir.join("ui"));
    }
    candidates.push(PathBuf::from("ui/dist"));
    // (This crate is `crates/service` of the checkout.)
    candidates.extend(Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).map(|root| root.join("ui/dist")));
    candidates.into_iter().find(|d| d.join("index.html").is_file())
}

#[derive(Clone)]
struct AppState {
    service: Arc<Service>,
    token: Option<Arc<str>>,
}

/// Whether answers are gzipped for clients that accept it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gzip {
    /// Every client is on this machine (the server listens on loopback):
    /// compressing would cost both sides CPU to save nothing on the wire —
    /// under 20 clients at once a quarter of the server's CPU was deflate.
    Off,
    /// Clients may be elsewhere: JSON shrinks about tenfold.
    On,
}

impl Gzip {
    /// Off for a loopback address, on for any other.
    pub fn for_bind(bind: IpAddr) -> Gzip {
        if bind.is_loopback() { Gzip::Off } else { Gzip::On }
    }
}

/// The whole application: API, events, UI.
pub fn router(service: Arc<Service>, token: Option<String>, ui_dir: Option<PathBuf>, gzip: Gzip) -> Router {
    let state = AppState { service, token: token.filter(|t| !t.is_empty()).map(Arc::from) };
    // Every facade operation from its one declaration (verb, path, where
    // each argument is); then what only HTTP has: the report as a download
    // and the event stream.
    let mut api = Router::new();
    for op in OPERATIONS {
        api = api.route(op.path, operation_route(op));
    }
    let api = api
        .route("/suites/{key}/report.zip", get(suite_report_zip))
        .route("/events", get(events))
        .fallback(api_not_found)
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token))
        .with_state(state);
    let app = Router::new().nest("/api", api);
    let app = match ui_dir {
        Some(dir) => {
            let index = dir.join("index.html");
            app.fallback_service(ServeDir::new(&dir).fallback(ServeFile::new(index)))
        }
        None => app.fallback(no_ui),
    };
    if gzip == Gzip::Off {
        return app;
    }
    // JSON shrinks about tenfold under gzip: a 500-epoch suite's epochs go
    // from megabytes to a few hundred kilobytes for a remote browser. Event
    // streams are left alone (tower-http never compresses text/event-stream),
    // and so are zips: compressed already, gzip would only cost time.
    // The fastest level: deflate at the default level was a quarter of the
    // server's CPU under 20 clients at once, for answers a few percent
    // smaller.
    let compressible = DefaultPredicate::new().and(NotForContentType::const_new("application/zip"));
    app.layer(CompressionLayer::new().quality(CompressionLevel::Fastest).compress_when(compressible))
}

/// Serves until `shutdown` resolves, then lets open requests finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(shutdown)
        .await
}

// ----- errors ----------------------------------------------------------------

/// A failed request: a status and a JSON body with a message for a person.
struct Failure(StatusCode, ApiError);

impl Failure {
    fn bad_input(message: impl Into<String>) -> Failure {
        Failure(StatusCode::BAD_REQUEST, ApiError { error: message.into(), validation: None })
    }
}

impl From<ServiceError> for Failure {
    fn from(e: ServiceError) -> Failure {
        let message = e.to_string();
        match e {
            ServiceError::NotFound(_) => Failure(StatusCode::NOT_FOUND, ApiError { error: message, validation: None }),
            ServiceError::BadInput(_) => Failure::bad_input(message),
            ServiceError::InvalidSuite(v) => {
                Failure(StatusCode::UNPROCESSABLE_ENTITY, ApiError { error: message, validation: Some(*v) })
            }
            ServiceError::Conflict(_) => Failure(StatusCode::CONFLICT, ApiError { error: message, validation: None }),
            ServiceError::Internal(_) => {
                tracing::error!(error = %message, "request failed");
                Failure(StatusCode::INTERNAL_SERVER_ERROR, ApiError { error: message, validation: None })
            }
        }
    }
}

impl From<PathRejection> for Failure {
    fn from(r: PathRejection) -> Failure {
        Failure::bad_input(format!("bad path: {}", r.body_text()))
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (self.0, Json(self.1)).into_response()
    }
}

async fn api_not_found(req: Request) -> Failure {
    Failure(
        StatusCode::NOT_FOUND,
        ApiError { error: format!("no endpoint {} /api{}", req.method(), req.uri().path()), validation: None },
    )
}

async fn no_ui() -> impl IntoResponse {
    (
        StatusCode::NOT_FOUND,
        Html(
            "<!doctype html><title>Attractor</title><h1>Attractor</h1>\
             <p>The API is up under <code>/api</code>, but the web front end is not built.</p>\
             <p>Build it with <code>npm run build</code> in the repository (it writes <code>ui/dist</code>), \
             or point <code>attractor serve --ui-dir DIR</code> at a built copy.</p>",
        ),
    )
}

// ----- the token ---------------------------------------------------------------

#[derive(Deserialize)]
struct TokenQuery {
    access_token: Option<String>,
}

async fn require_token(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(refusal) = cross_site(&req) {
        return Failure(StatusCode::FORBIDDEN, ApiError { error: refusal, validation: None }).into_response();
    }
    let Some(expected) = &state.token else {
        // Without a token the server trusts this machine, so the request must
        // also *name* this machine: a web page whose domain an attacker
        // re-points at 127.0.0.1 (DNS rebinding) would otherwise reach the
        // API from a browser under its own name, and could launch suites.
        if !loopback_host(req.headers().get(header::HOST).and_then(|h| h.to_str().ok())) {
            return Failure(
                StatusCode::FORBIDDEN,
                ApiError {
                    error: "this server answers only requests addressed to localhost, 127.0.0.1 or [::1]; start it with --token to use another name"
                        .into(),
                    validation: None,
                },
            )
            .into_response();
        }
        return next.run(req).await;
    };
    let from_header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let from_query = Query::<TokenQuery>::try_from_uri(req.uri()).ok().and_then(|q| q.0.access_token);
    let given = from_header.or(from_query);
    if given.as_deref().is_some_and(|g| same_secret(g.as_bytes(), expected.as_bytes())) {
        return next.run(req).await;
    }
    let mut response = Failure(
        StatusCode::UNAUTHORIZED,
        ApiError {
            error: "this server needs a token: open the app as http://HOST:PORT/?token=TOKEN (the --token `attractor \
                    serve` was started with); a program sends `Authorization: Bearer TOKEN` (or ?access_token=TOKEN \
                    for event streams)"
                .into(),
            validation: None,
        },
    )
    .into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// Why a request that changes something must be refused as cross-site: a
/// browser says where a request comes from (`Sec-Fetch-Site`, `Origin`), and
/// a page of another site — even one without a body, which needs no CORS
/// preflight — must not cancel a launch or reach the model. Requests no
/// browser sent (curl, the CLI's own clients) carry neither header and pass.
fn cross_site(req: &Request) -> Option<String> {
    if matches!(*req.method(), axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS) {
        return None;
    }
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let refusal = |from: &str| {
        Some(format!(
            "refused a {} from {from}: this API changes things only for its own pages (same origin)",
            req.method()
        ))
    };
    if let Some(site) = header("sec-fetch-site")
        && !matches!(site, "same-origin" | "none")
    {
        return refusal(&format!("a {site} page"));
    }
    if let Some(origin) = header("origin") {
        let own = header("host").is_some_and(|host| {
            origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) == Some(host)
        });
        if !own {
            return refusal(&format!("the page at {origin}"));
        }
    }
    None
}

/// Whether a `Host` header names the loopback interface (any port).
fn loopback_host(host: Option<&str>) -> bool {
    let Some(host) = host else { return false };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Compares two secrets in time independent of where they first differ, so
/// response timing does not reveal how much of a guessed token was right.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

// ----- handlers ------------------------------------------------------------------

/// The route of one facade operation: its verb, and a handler that hands
/// the path's segments, the query and the body to [`operations::call`].
fn operation_route(op: &'static Operation) -> MethodRouter<AppState> {
    let handler = move |State(s): State<AppState>,
                        path: Result<RawPathParams, RawPathParamsRejection>,
                        RawQuery(query): RawQuery,
                        headers: HeaderMap,
                        body: Result<Bytes, BytesRejection>| async move {
        let path: Vec<(String, String)> = path
            .map_err(|r| Failure::bad_input(format!("bad path: {}", r.body_text())))?
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let body = body.map_err(|r| {
            if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
                Failure(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    ApiError { error: "the request body is over this server's limit of 2 MB".into(), validation: None },
                )
            } else {
                Failure::bad_input(format!("cannot read the request body: {}", r.body_text()))
            }
        })?;
        let input = Input::Http { path: &path, query: query.as_deref(), body: &body, json: is_json(&headers) };
        match operations::call(&s.service, op.name, input).await {
            Ok(json) => {
                let status = StatusCode::from_u16(op.status).unwrap_or(StatusCode::OK);
                Ok::<Response, Failure>((status, [(header::CONTENT_TYPE, "application/json")], json).into_response())
            }
            Err(CallError::Input(message)) => Err(Failure::bad_input(message)),
            Err(CallError::Service(e)) => Err(Failure::from(e)),
        }
    };
    match op.verb {
        Verb::Get => get(handler),
        Verb::Post => post(handler),
        Verb::Put => put(handler),
        Verb::Delete => delete(handler),
    }
}

/// Whether the request says its body is JSON (`application/json`, with or
/// without parameters, or a `+json` type).
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let mime = value.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

/// The suite's report (charts as SVG and PNG, `index.html`) as a zip
/// download: the browser's Export.
async fn suite_report_zip(
    State(s): State<AppState>,
    key: Result<UrlPath<String>, PathRejection>,
) -> Result<Response, Failure> {
    let archive = s.service.report_zip(&key?.0).await?;
    // The file name holds only letters, digits, `-`, `_` and `.`: safe in a header.
    let disposition = format!("attachment; filename=\"{}\"", archive.file_name);
    Ok((
        [
            (header::CONTENT_TYPE, "application/zip".to_string()),
            (header::CONTENT_DISPOSITION, disposition),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
        archive.bytes,
    )
        .into_response())
}

/// Live progress: every bus event as one SSE `message` whose data is the
/// event's JSON (`{"type": "run_finished", …}`). The stream ends when the
/// client goes away (its queue is dropped) or the service shuts down.
async fn events(State(s): State<AppState>) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let rx = s.service.subscribe();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let envelope = rx.recv().await?;
        let data = serde_json::to_string(&envelope).unwrap_or_default();
        Some((Ok(SseEvent::default().data(data)), rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_binds_go_without_a_token() {
        assert!(check_bind("127.0.0.1".parse().unwrap(), None).is_ok());
        assert!(check_bind("::1".parse().unwrap(), None).is_ok());
        let e = check_bind("0.0.0.0".parse().unwrap(), None).unwrap_err();
        assert!(e.contains("without a token") && e.contains("--token"), "{e}");
        assert!(check_bind("0.0.0.0".parse().unwrap(), Some("")).is_err(), "an empty token is no token");
        assert!(check_bind("0.0.0.0".parse().unwrap(), Some("s3cret")).is_ok());
    }

    #[test]
    fn only_loopback_names_count_as_this_machine() {
        for ok in ["localhost", "localhost:7300", "LOCALHOST:1", "127.0.0.1:7300", "127.9.9.9", "[::1]:7300", "[::1]"] {
            assert!(loopback_host(Some(ok)), "{ok}");
        }
        for bad in
            ["evil.example:7300", "evil.example", "192.168.1.4:7300", "[2001:db8::1]:80", "localhost.evil.example", ""]
        {
            assert!(!loopback_host(Some(bad)), "{bad}");
        }
        assert!(!loopback_host(None));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
    }
}
