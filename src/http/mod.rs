//! The HTTP transport of the service facade: `attractor serve`.
//!
//! JSON under `/api/…` (the endpoints of seed 004 §11 plus what the app's
//! screens need, such as the trajectory repository's numbers under
//! `/api/trajectories/…` and the convergence memories under `/api/memories`), server-sent events at `/api/events` pushed from the bus,
//! and the built front end (`ui/dist`) for everything else. Every handler
//! only translates between HTTP and a [`Service`] method; no decision is
//! made here that the desktop shell would have to make again.
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

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{Path as UrlPath, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use futures::Stream;
use serde::Deserialize;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::services::{ServeDir, ServeFile};

use crate::service::types::*;
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
    candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/dist"));
    candidates.into_iter().find(|d| d.join("index.html").is_file())
}

#[derive(Clone)]
struct AppState {
    service: Arc<Service>,
    token: Option<Arc<str>>,
}

/// The whole application: API, events, UI.
pub fn router(service: Arc<Service>, token: Option<String>, ui_dir: Option<PathBuf>) -> Router {
    let state = AppState { service, token: token.filter(|t| !t.is_empty()).map(Arc::from) };
    let api = Router::new()
        .route("/overview", get(overview))
        .route("/suites", get(suites))
        .route("/suites/{id}/epochs", get(suite_epochs))
        .route("/suites/{id}/charts", get(suite_charts))
        .route("/suites/{id}/graph", get(suite_graph))
        .route("/suites/{id}/proposals", get(suite_proposals))
        .route("/suites/{id}/report.zip", get(suite_report_zip))
        .route("/runs/{id}", get(run_detail))
        .route("/runs/{id}/epoch", get(run_epoch))
        .route("/artifacts", get(artifacts))
        .route("/artifacts/{name}/versions", get(artifact_versions))
        .route("/artifacts/{name}/diff", get(artifact_diff))
        .route("/artifacts/{name}/rollback", post(rollback))
        .route("/interventions", get(interventions))
        .route("/interventions/{id}/answer", post(answer))
        .route("/interventions/{id}/dismiss", post(dismiss))
        .route("/validate", post(validate))
        .route("/launches/preview", post(preview))
        .route("/launches", get(launches).post(launch))
        .route("/launches/{id}", get(launch_view))
        .route("/launches/{id}/cancel", post(cancel))
        .route("/settings", get(settings).put(update_settings))
        .route("/settings/test-llm", post(test_llm))
        .route("/settings/api-key", put(set_api_key).delete(delete_api_key))
        .route("/trajectories/stats", get(trajectory_stats))
        .route("/trajectories/similar", get(similar_trajectories))
        .route("/memories", get(memories))
        .route("/watch", get(watched))
        .route("/watch/folders", post(add_watched_folder))
        .route("/watch/folders/{id}", delete(remove_watched_folder))
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
    // JSON shrinks about tenfold under gzip: a 500-epoch suite's epochs go
    // from megabytes to a few hundred kilobytes for a remote browser. Event
    // streams are left alone (tower-http never compresses text/event-stream),
    // and so are zips: compressed already, gzip would only cost time.
    let compressible = DefaultPredicate::new().and(NotForContentType::const_new("application/zip"));
    app.layer(CompressionLayer::new().compress_when(compressible))
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

impl From<JsonRejection> for Failure {
    fn from(r: JsonRejection) -> Failure {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return Failure(
                StatusCode::PAYLOAD_TOO_LARGE,
                ApiError { error: "the request body is over this server's limit of 2 MB".into(), validation: None },
            );
        }
        // axum's text leads with its own words ("Failed to deserialize the
        // JSON body into the target type: "); keep only what is about the
        // request — the field, serde's reason, the line and column.
        let text = r.body_text();
        let detail = [
            "Failed to deserialize the JSON body into the target type: ",
            "Failed to parse the request body as JSON: ",
        ]
        .iter()
        .find_map(|p| text.strip_prefix(p))
        .unwrap_or(&text);
        let message = match r {
            JsonRejection::JsonSyntaxError(_) => format!("the request body is not valid JSON: {detail}"),
            JsonRejection::MissingJsonContentType(_) => {
                "the request body must be JSON\n  hint: send it with the header `Content-Type: application/json`".into()
            }
            _ => format!(
                "the request body is not what this endpoint takes: {detail}\n  hint: the README's API table lists each endpoint's fields"
            ),
        };
        Failure::bad_input(message)
    }
}

impl From<PathRejection> for Failure {
    fn from(r: PathRejection) -> Failure {
        Failure::bad_input(format!("bad path: {}", r.body_text()))
    }
}

impl From<QueryRejection> for Failure {
    fn from(r: QueryRejection) -> Failure {
        Failure::bad_input(format!("bad query: {}", r.body_text()))
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (self.0, Json(self.1)).into_response()
    }
}

type Reply<T> = Result<Json<T>, Failure>;

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
            error: "this server needs a token: send `Authorization: Bearer TOKEN` (or ?access_token=TOKEN for event streams)"
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

async fn overview(State(s): State<AppState>) -> Reply<Overview> {
    Ok(Json(s.service.overview().await?))
}

async fn suites(State(s): State<AppState>) -> Reply<Vec<SuiteItem>> {
    Ok(Json(s.service.suites().await?))
}

#[derive(Deserialize)]
struct EpochsQuery {
    /// `?runs=false` leaves each epoch's run list out (most of the payload).
    runs: Option<bool>,
}

async fn suite_epochs(
    State(s): State<AppState>,
    id: Result<UrlPath<String>, PathRejection>,
    q: Result<Query<EpochsQuery>, QueryRejection>,
) -> Reply<SuiteEpochs> {
    let with_runs = q?.0.runs.unwrap_or(true);
    Ok(Json(s.service.suite_epochs(&id?.0, with_runs).await?))
}

async fn suite_charts(State(s): State<AppState>, id: Result<UrlPath<String>, PathRejection>) -> Reply<SuiteCharts> {
    Ok(Json(s.service.suite_charts(&id?.0).await?))
}

async fn suite_graph(State(s): State<AppState>, id: Result<UrlPath<String>, PathRejection>) -> Reply<SuiteGraph> {
    Ok(Json(s.service.suite_graph(&id?.0).await?))
}

async fn suite_proposals(
    State(s): State<AppState>,
    id: Result<UrlPath<String>, PathRejection>,
) -> Reply<SuiteProposals> {
    Ok(Json(s.service.suite_proposals(&id?.0).await?))
}

/// The suite's report (charts as SVG and PNG, `index.html`) as a zip
/// download: the browser's Export.
async fn suite_report_zip(
    State(s): State<AppState>,
    id: Result<UrlPath<String>, PathRejection>,
) -> Result<Response, Failure> {
    let archive = s.service.report_zip(&id?.0).await?;
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

async fn run_detail(State(s): State<AppState>, id: Result<UrlPath<i64>, PathRejection>) -> Reply<RunDetail> {
    Ok(Json(s.service.run_detail(id?.0).await?))
}

async fn run_epoch(State(s): State<AppState>, id: Result<UrlPath<i64>, PathRejection>) -> Reply<RunEpoch> {
    Ok(Json(s.service.run_epoch(id?.0).await?))
}

async fn artifacts(State(s): State<AppState>) -> Reply<Vec<ArtifactItem>> {
    Ok(Json(s.service.artifacts().await?))
}

async fn artifact_versions(
    State(s): State<AppState>,
    name: Result<UrlPath<String>, PathRejection>,
) -> Reply<ArtifactHistory> {
    Ok(Json(s.service.artifact_versions(&name?.0).await?))
}

#[derive(Deserialize)]
struct DiffQuery {
    from: i64,
    to: i64,
}

async fn artifact_diff(
    State(s): State<AppState>,
    name: Result<UrlPath<String>, PathRejection>,
    q: Result<Query<DiffQuery>, QueryRejection>,
) -> Reply<LineDiff> {
    let q = q?.0;
    Ok(Json(s.service.artifact_diff(&name?.0, q.from, q.to).await?))
}

async fn rollback(
    State(s): State<AppState>,
    name: Result<UrlPath<String>, PathRejection>,
    body: Result<Json<RollbackRequest>, JsonRejection>,
) -> Reply<ArtifactItem> {
    let name = name?.0;
    Ok(Json(s.service.rollback_artifact(&name, body?.0.version).await?))
}

async fn interventions(State(s): State<AppState>) -> Reply<Inbox> {
    Ok(Json(s.service.interventions().await?))
}

async fn answer(
    State(s): State<AppState>,
    id: Result<UrlPath<i64>, PathRejection>,
    body: Result<Json<AnswerRequest>, JsonRejection>,
) -> Reply<InterventionItem> {
    let id = id?.0;
    Ok(Json(s.service.answer(id, &body?.0).await?))
}

async fn dismiss(State(s): State<AppState>, id: Result<UrlPath<i64>, PathRejection>) -> Reply<InterventionItem> {
    let id = id?.0;
    Ok(Json(s.service.dismiss(id).await?))
}

async fn preview(State(s): State<AppState>, body: Result<Json<RunRequest>, JsonRejection>) -> Reply<LaunchPreview> {
    Ok(Json(s.service.preview(&body?.0).await?))
}

async fn validate(State(s): State<AppState>, body: Result<Json<ValidateRequest>, JsonRejection>) -> Reply<Validation> {
    Ok(Json(s.service.validate(&body?.0.suite_path)))
}

async fn launches(State(s): State<AppState>) -> Reply<Vec<LaunchView>> {
    Ok(Json(s.service.launches().await?))
}

async fn launch(
    State(s): State<AppState>,
    body: Result<Json<RunRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<LaunchView>), Failure> {
    Ok((StatusCode::ACCEPTED, Json(s.service.launch(&body?.0).await?)))
}

async fn launch_view(State(s): State<AppState>, id: Result<UrlPath<i64>, PathRejection>) -> Reply<LaunchView> {
    Ok(Json(s.service.launch_view(id?.0).await?))
}

async fn cancel(State(s): State<AppState>, id: Result<UrlPath<i64>, PathRejection>) -> Reply<LaunchView> {
    Ok(Json(s.service.cancel(id?.0).await?))
}

async fn settings(State(s): State<AppState>) -> Reply<SettingsView> {
    // A key stored from the command line meanwhile shows at once.
    s.service.refresh_keychain().await;
    Ok(Json(s.service.settings()))
}

async fn set_api_key(
    State(s): State<AppState>,
    body: Result<Json<ApiKeyRequest>, JsonRejection>,
) -> Reply<SettingsView> {
    Ok(Json(s.service.set_api_key(&body?.0).await?))
}

async fn delete_api_key(State(s): State<AppState>) -> Reply<SettingsView> {
    Ok(Json(s.service.delete_api_key().await?))
}

async fn update_settings(
    State(s): State<AppState>,
    body: Result<Json<SettingsUpdate>, JsonRejection>,
) -> Reply<SettingsView> {
    Ok(Json(s.service.update_settings(&body?.0)?))
}

async fn test_llm(State(s): State<AppState>) -> Reply<LlmCheck> {
    Ok(Json(s.service.test_llm().await))
}

#[derive(Deserialize)]
struct CategoryQuery {
    category: Option<String>,
    limit: Option<u32>,
}

/// `?category=C` limits the numbers to one task category.
async fn trajectory_stats(
    State(s): State<AppState>,
    q: Result<Query<CategoryQuery>, QueryRejection>,
) -> Reply<TrajectoryStats> {
    Ok(Json(s.service.trajectory_stats(q?.0.category.as_deref()).await?))
}

/// `?run_id=N`, `?trajectory_id=ID` or `?task=TEXT`, with `&category=C&limit=N`.
async fn similar_trajectories(
    State(s): State<AppState>,
    q: Result<Query<SimilarRequest>, QueryRejection>,
) -> Reply<SimilarTrajectories> {
    Ok(Json(s.service.similar_trajectories(&q?.0).await?))
}

async fn memories(
    State(s): State<AppState>,
    q: Result<Query<CategoryQuery>, QueryRejection>,
) -> Reply<Vec<MemoryItem>> {
    let q = q?.0;
    Ok(Json(s.service.memories(q.category.as_deref(), q.limit).await?))
}

async fn watched(State(s): State<AppState>) -> Reply<WatchedFolders> {
    Ok(Json(s.service.watched().await?))
}

async fn add_watched_folder(
    State(s): State<AppState>,
    body: Result<Json<WatchFolderRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<WatchedFolderView>), Failure> {
    Ok((StatusCode::CREATED, Json(s.service.add_watched_folder(&body?.0.path).await?)))
}

async fn remove_watched_folder(
    State(s): State<AppState>,
    id: Result<UrlPath<i64>, PathRejection>,
) -> Reply<WatchedFolders> {
    Ok(Json(s.service.remove_watched_folder(id?.0).await?))
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
