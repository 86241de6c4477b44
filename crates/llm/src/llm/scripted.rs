//! A scripted OpenAI-compatible model server on loopback, for tests and
//! benchmarks that must not depend on a real model.
//!
//! [`ScriptedServer`] is a real HTTP server (axum on hyper, bound to
//! `127.0.0.1:0`) that answers `POST …/chat/completions` with the next step of
//! a script: a reply (plain, with reasoning, fenced, malformed — any text), a
//! delay, an HTTP error with an optional `Retry-After`, or a connection closed
//! without an answer. It records every request it receives, headers and body,
//! so a test can check exactly what a client sent. Because the client under
//! test goes through its real HTTP stack, retries, timeouts and headers are
//! exercised as they are against Ollama or OpenAI.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use attractor::llm::scripted::{Scripted, ScriptedServer};
//! let server = ScriptedServer::start(vec![Scripted::rate_limited(1), Scripted::reply("{\"ok\": true}")]).await?;
//! // point an LlmClient at server.base_url(), call it, then:
//! assert_eq!(server.requests().len(), 2);
//! server.shutdown().await;
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

/// One step of a script: how the server answers one request.
#[derive(Clone, Debug, PartialEq)]
pub enum Scripted {
    /// 200 with `content` as the assistant message; `usage` says whether the
    /// answer includes token counts (about four characters a token).
    Reply { content: String, usage: bool },
    /// Waits, then answers with `then` (a slow model, for timeout tests).
    Delay { delay: Duration, then: Box<Scripted> },
    /// An OpenAI-style error answer with this status and message, and a
    /// `Retry-After` header in seconds when given.
    Status { status: u16, message: String, retry_after: Option<u64> },
    /// Closes the connection without answering (a crashed server).
    CloseConnection,
    /// 200 with `content` and `finish_reason: "length"`: a reply cut off by
    /// its token budget.
    CutOff { content: String },
}

impl Scripted {
    /// A normal reply with usage.
    pub fn reply(content: impl Into<String>) -> Scripted {
        Scripted::Reply { content: content.into(), usage: true }
    }

    /// A reply whose content is `value` as JSON.
    pub fn json(value: &Value) -> Scripted {
        Scripted::reply(value.to_string())
    }

    /// A reply without a `usage` object, as some local servers send.
    pub fn without_usage(content: impl Into<String>) -> Scripted {
        Scripted::Reply { content: content.into(), usage: false }
    }

    /// A reasoning model's reply: `<think>thought</think>` before `content`.
    pub fn with_think(thought: &str, content: &str) -> Scripted {
        Scripted::reply(format!("<think>\n{thought}\n</think>\n\n{content}"))
    }

    /// `content` inside a ```` ```json ```` fence with a sentence around it.
    pub fn fenced(content: &str) -> Scripted {
        Scripted::reply(format!("Here is the JSON:\n\n```json\n{content}\n```\n\nLet me know if you need more."))
    }

    /// `then`, after `delay`.
    pub fn delayed(delay: Duration, then: Scripted) -> Scripted {
        Scripted::Delay { delay, then: Box::new(then) }
    }

    /// 429 Too Many Requests with `Retry-After: secs`.
    pub fn rate_limited(secs: u64) -> Scripted {
        Scripted::Status {
            status: 429,
            message: "rate limit reached; try again later".to_string(),
            retry_after: Some(secs),
        }
    }

    /// 500 Internal Server Error.
    pub fn server_error() -> Scripted {
        Scripted::status(500, "the scripted model crashed")
    }

    /// 400 Bad Request with `message`.
    pub fn bad_request(message: impl Into<String>) -> Scripted {
        Scripted::status(400, message)
    }

    /// Any error status with `message`.
    pub fn status(status: u16, message: impl Into<String>) -> Scripted {
        Scripted::Status { status, message: message.into(), retry_after: None }
    }

    pub fn close_connection() -> Scripted {
        Scripted::CloseConnection
    }

    /// A reply cut off by `max_tokens` (`finish_reason: "length"`).
    pub fn cut_off(content: impl Into<String>) -> Scripted {
        Scripted::CutOff { content: content.into() }
    }
}

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names in lowercase, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RecordedRequest {
    /// The first value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (`Null` if it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The `(role, content)` pairs of the request's `messages`.
    pub fn messages(&self) -> Vec<(String, String)> {
        let json = self.json();
        let Some(messages) = json.get("messages").and_then(Value::as_array) else {
            return Vec::new();
        };
        messages
            .iter()
            .map(|m| {
                let field = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                (field("role"), field("content"))
            })
            .collect()
    }
}

/// What the handler and the owner share.
struct Shared {
    script: Mutex<VecDeque<Scripted>>,
    /// Answer once the script is used up; without one, the server answers 500
    /// "script exhausted" so a test that makes too many calls fails loudly.
    repeat: Option<Scripted>,
    /// Answers from the request itself once the script is used up.
    responder: Option<Responder>,
    requests: Mutex<Vec<RecordedRequest>>,
}

/// Chooses the answer to a request from its content (a model that reacts to
/// what it is shown, for benchmarks whose calls depend on the run).
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> Scripted + Send + Sync>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves plain data intact.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running scripted server; stopped by [`shutdown`](Self::shutdown) or when
/// dropped.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl ScriptedServer {
    /// Starts a server that answers with `script`, one step per request, then
    /// with 500 "script exhausted".
    pub async fn start(script: Vec<Scripted>) -> std::io::Result<ScriptedServer> {
        ScriptedServer::launch(script, None, None).await
    }

    /// Starts a server that answers with `script`, then with `repeat` forever
    /// (benchmarks that make an unknown number of calls).
    pub async fn start_repeating(script: Vec<Scripted>, repeat: Scripted) -> std::io::Result<ScriptedServer> {
        ScriptedServer::launch(script, Some(repeat), None).await
    }

    /// Starts a server that answers every request with what `respond` makes
    /// of it.
    pub async fn start_responding(
        respond: impl Fn(&RecordedRequest) -> Scripted + Send + Sync + 'static,
    ) -> std::io::Result<ScriptedServer> {
        ScriptedServer::launch(Vec::new(), None, Some(Arc::new(respond))).await
    }

    async fn launch(
        script: Vec<Scripted>,
        repeat: Option<Scripted>,
        responder: Option<Responder>,
    ) -> std::io::Result<ScriptedServer> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared =
            Arc::new(Shared { script: Mutex::new(script.into()), repeat, responder, requests: Mutex::new(Vec::new()) });
        let router = Router::new().fallback(handle).with_state(shared.clone());
        let task = tokio::spawn(serve(listener, router));
        Ok(ScriptedServer { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT/v1`: what a client takes as its base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Steps of the script not yet used.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }

    /// Appends a step to the script.
    pub fn push(&self, step: Scripted) {
        lock(&self.shared.script).push_back(step);
    }

    /// Stops the server; connecting afterwards is refused.
    pub async fn shutdown(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("base_url", &self.base_url())
            .field("remaining", &self.remaining())
            .finish()
    }
}

/// Marks a response that must not be sent: the connection is closed instead.
#[derive(Clone, Copy, Debug)]
struct DropConnection;

impl fmt::Display for DropConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("scripted: close the connection without answering")
    }
}

impl std::error::Error for DropConnection {}

/// The accept loop. Each connection is served by hyper directly rather than
/// by `axum::serve`, because only there can a request end in a dropped
/// connection: when the service fails, hyper closes the socket unanswered.
async fn serve(listener: TcpListener, router: Router) {
    // Dropping the set (when this task is aborted) aborts every connection,
    // including handlers asleep in a scripted delay.
    let mut connections = JoinSet::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of file descriptors or similar: back off instead of spinning.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        let router = TowerToHyperService::new(router.clone());
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let answer = hyper::service::Service::call(&router, request);
                async move {
                    let response = match answer.await {
                        Ok(response) => response,
                        Err(never) => match never {},
                    };
                    match response.extensions().get::<DropConnection>() {
                        Some(_) => Err(DropConnection),
                        None => Ok(response),
                    }
                }
            });
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

/// Records the request, then answers it with the next scripted step.
async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let recorded = RecordedRequest {
        method: method.to_string(),
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(n, v)| (n.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect(),
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let request_json = recorded.json();
    let responded = shared.responder.as_ref().map(|respond| respond(&recorded));
    let number = {
        let mut requests = lock(&shared.requests);
        requests.push(recorded);
        requests.len()
    };
    if method != Method::POST || !uri.path().ends_with("/chat/completions") {
        let message = format!("the scripted server answers only POST …/chat/completions, not {method} {}", uri.path());
        return error_response(404, &message, None);
    }

    let next = lock(&shared.script).pop_front().or(responded).or_else(|| shared.repeat.clone());
    let mut step = match next {
        Some(step) => step,
        None => return error_response(500, "scripted server: the script is exhausted", None),
    };
    loop {
        step = match step {
            Scripted::Delay { delay, then } => {
                tokio::time::sleep(delay).await;
                *then
            }
            Scripted::Reply { content, usage } => return completion(&content, usage, "stop", &request_json, number),
            Scripted::CutOff { content } => return completion(&content, true, "length", &request_json, number),
            Scripted::Status { status, message, retry_after } => return error_response(status, &message, retry_after),
            Scripted::CloseConnection => {
                let mut response = Response::new(Body::empty());
                response.extensions_mut().insert(DropConnection);
                return response;
            }
        }
    }
}

/// A chat completion in the OpenAI format, echoing the requested model.
fn completion(content: &str, usage: bool, finish_reason: &str, request: &Value, number: usize) -> Response {
    let model = request.get("model").and_then(Value::as_str).unwrap_or("scripted");
    let mut body = json!({
        "id": format!("chatcmpl-scripted-{number}"),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish_reason,
        }],
    });
    if usage {
        let prompt_chars: usize = request
            .get("messages")
            .and_then(Value::as_array)
            .map(|ms| ms.iter().filter_map(|m| m.get("content").and_then(Value::as_str)).map(str::len).sum())
            .unwrap_or(0);
        let prompt = tokens(prompt_chars);
        let completion = tokens(content.len());
        body["usage"] = json!({
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        });
    }
    json_response(StatusCode::OK, &body)
}

/// About four characters a token, at least one: enough for budget tests.
fn tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4).max(1)
}

fn error_response(status: u16, message: &str, retry_after: Option<u64>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let kind = if status.is_server_error() { "server_error" } else { "invalid_request_error" };
    let body = json!({"error": {"message": message, "type": kind, "code": status.as_u16()}});
    let mut response = json_response(status, &body);
    if let Some(secs) = retry_after {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
