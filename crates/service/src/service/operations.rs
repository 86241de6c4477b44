//! Every operation of the service facade, declared once.
//!
//! The app reaches the facade over two transports — HTTP (`attractor
//! serve`, [`crate::http`]) and Tauri commands (the desktop shell) — and one
//! TypeScript client (`ui/src/api.ts`). Before this table each operation was
//! written four times (a method here, an axum route, a Tauri command, a
//! function in the client), and they drifted. Now an operation is one entry
//! of [`operations!`] below: its name, its arguments and where HTTP finds
//! each of them, its answer's type, its HTTP verb and path, and the facade
//! call. From that one entry come [`OPERATIONS`] (the routes the HTTP server
//! registers), [`call`] (what both transports run) and [`typescript`] (the
//! client's typed table, `ui/src/generated/operations.ts`). Adding an
//! operation is adding an entry.
//!
//! A few things are transport-specific on purpose and stay out: the event
//! stream (SSE or Tauri events), the report as a zip download (HTTP) or
//! written to a folder (desktop), and the desktop's native file picker.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use ts_rs::{Config, TS, TypeVisitor};

use super::types::*;
use super::{Service, ServiceError};

/// An HTTP verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    Post,
    Put,
    Delete,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::Post => "POST",
            Verb::Put => "PUT",
            Verb::Delete => "DELETE",
        }
    }
}

/// Where HTTP finds an argument (Tauri passes them all by name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A `{name}` segment of the path.
    Path,
    /// One `?name=` parameter of the query string.
    Query,
    /// The whole query string, read into one type.
    Params,
    /// The JSON body.
    Body,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Path => "path",
            Source::Query => "query",
            Source::Params => "params",
            Source::Body => "body",
        }
    }
}

/// One argument of an operation.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub source: Source,
    /// Its TypeScript type (`string`, `number | null`, `RunRequest`).
    pub ts_type: fn(&Config) -> String,
}

/// One operation as the transports see it.
#[derive(Debug, Clone, Copy)]
pub struct Operation {
    pub name: &'static str,
    pub verb: Verb,
    /// Under `/api`, with `{name}` for path arguments (axum's syntax).
    pub path: &'static str,
    /// The HTTP status of a success.
    pub status: u16,
    pub params: &'static [Param],
    /// Its doc comment, a line per entry (each with its leading space).
    pub doc: &'static [&'static str],
    /// Its answer's TypeScript type.
    pub answer: fn(&Config) -> String,
}

/// The arguments of one call, as a transport received them.
pub enum Input<'a> {
    /// HTTP: the path's named segments (decoded), the raw query string, and
    /// the body with whether it was declared JSON.
    Http { path: &'a [(String, String)], query: Option<&'a str>, body: &'a [u8], json: bool },
    /// Tauri: one JSON object, an argument per key.
    Named(serde_json::Map<String, serde_json::Value>),
}

/// Why a call failed: its input (400), or the facade.
#[derive(Debug)]
pub enum CallError {
    Input(String),
    Service(ServiceError),
}

impl From<ServiceError> for CallError {
    fn from(e: ServiceError) -> CallError {
        CallError::Service(e)
    }
}

impl Input<'_> {
    /// Takes the argument `name` from where `source` says, as a `T`.
    fn take<T: DeserializeOwned>(&mut self, name: &str, source: Source) -> Result<T, CallError> {
        match self {
            Input::Named(args) => {
                let value = args.remove(name).unwrap_or(serde_json::Value::Null);
                // The place inside the argument, as HTTP names it in a body.
                serde_path_to_error::deserialize(value).map_err(|e| {
                    let at = e.path().to_string();
                    let place = if at == "." { name.to_string() } else { format!("{name}.{at}") };
                    CallError::Input(format!("argument `{place}`: {}", e.inner()))
                })
            }
            Input::Http { path, query, body, json } => match source {
                Source::Path => {
                    let value = path.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
                    one_value(value, name).map_err(|e| CallError::Input(format!("bad path: {e}")))
                }
                Source::Query => {
                    let value = query.and_then(|q| {
                        url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
                    });
                    one_value(value.as_deref(), name).map_err(|e| CallError::Input(format!("bad query: {e}")))
                }
                Source::Params => serde_urlencoded::from_str(query.unwrap_or(""))
                    .map_err(|e| CallError::Input(format!("bad query: {e}"))),
                Source::Body => body_value(body, *json),
            },
        }
    }

    /// Refuses arguments nobody took (a misspelt name would otherwise be
    /// silently ignored). HTTP's extra query parameters are left alone: the
    /// token may travel there.
    fn finish(self) -> Result<(), CallError> {
        match self {
            Input::Named(args) => match args.keys().next() {
                Some(extra) => Err(CallError::Input(format!("no argument `{extra}` for this operation"))),
                None => Ok(()),
            },
            Input::Http { .. } => Ok(()),
        }
    }
}

/// One path segment or query parameter read as a `T`, with the usual
/// readings of text as numbers and booleans; absent is `None` for an
/// `Option`, an error otherwise.
fn one_value<T: DeserializeOwned>(value: Option<&str>, name: &str) -> Result<T, String> {
    #[derive(serde::Deserialize)]
    struct One<T> {
        v: T,
    }
    let encoded = match value {
        Some(v) => format!("v={}", url::form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>()),
        None => String::new(),
    };
    match serde_urlencoded::from_str::<One<T>>(&encoded) {
        Ok(one) => Ok(one.v),
        Err(_) if value.is_none() => Err(format!("`{name}` is missing")),
        Err(e) => Err(format!("`{name}` = {:?}: {e}", value.unwrap_or_default())),
    }
}

/// The JSON body read as a `T`; the message names the field that did not
/// fit and where.
fn body_value<T: DeserializeOwned>(body: &[u8], json: bool) -> Result<T, CallError> {
    if !json {
        return Err(CallError::Input(
            "the request body must be JSON\n  hint: send it with the header `Content-Type: application/json`".into(),
        ));
    }
    let syntax = |e: &serde_json::Error| CallError::Input(format!("the request body is not valid JSON: {e}"));
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let inner = e.inner();
        if inner.is_syntax() || inner.is_eof() {
            return syntax(inner);
        }
        // A map's key the path cannot name shows as `?`: left out.
        let at = e.path().to_string().replace(".?", "");
        let field = if at == "." || at == "?" { String::new() } else { format!("{at}: ") };
        CallError::Input(format!(
            "the request body is not what this endpoint takes: {field}{}\n  hint: docs/http-api.md lists each endpoint's fields",
            plain_mismatch(inner)
        ))
    })?;
    de.end().map_err(|e| syntax(&e))?;
    Ok(value)
}

/// serde's account of a value that did not fit, in the words of a form:
/// "`2.5` is not a whole number" instead of "invalid type: floating point
/// `2.5`, expected u32 at line 1 column 87" (the position in a body nobody
/// typed tells the reader nothing; the field path says where).
fn plain_mismatch(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let text = match text.rfind(" at line ") {
        Some(at) if text[at..].contains(" column ") => text[..at].to_string(),
        _ => text,
    };
    let expected = |what: &str| -> String {
        let what = what.trim();
        let bound = |max: &str| format!("a whole number from 0 to {max}");
        match what {
            "u8" => bound("255"),
            "u16" => bound("65535"),
            "u32" => bound("4294967295"),
            "u64" | "usize" => bound("18446744073709551615"),
            "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
            "f32" | "f64" => "a number".into(),
            "a string" | "a borrowed string" => "text".into(),
            "a boolean" => "true or false".into(),
            "a sequence" => "a list".into(),
            w if w.starts_with("struct ") || w == "a map" => "an object".into(),
            w => w.to_string(),
        }
    };
    let given = |what: &str, want: &str| -> String {
        let what = what.trim();
        if what == "null" {
            return if expected(want).contains("number") {
                "an empty value (a number too large for JSON is sent as null)".into()
            } else {
                "an empty value (null)".into()
            };
        }
        for kind in ["floating point ", "integer ", "string ", "boolean "] {
            if let Some(v) = what.strip_prefix(kind) {
                return v.to_string();
            }
        }
        what.to_string()
    };
    if let Some(rest) = text.strip_prefix("invalid type: ")
        && let Some((got, want)) = rest.split_once(", expected ")
    {
        return format!("{} is not {}", given(got, want), expected(want));
    }
    if let Some(rest) = text.strip_prefix("invalid value: ")
        && let Some((got, want)) = rest.split_once(", expected ")
    {
        return format!("{} is out of range: {} is expected", given(got, want), expected(want));
    }
    if let Some(name) = text.strip_prefix("missing field ") {
        return format!("the field {name} is missing");
    }
    text
}

/// An answer as the JSON both transports send.
fn answer<T: Serialize>(value: &T) -> Result<String, CallError> {
    serde_json::to_string(value)
        .map_err(|e| CallError::Service(ServiceError::Internal(format!("cannot write the answer as JSON: {e}"))))
}

/// The generated types a type is named by: itself, or its type parameters
/// (`Array<SuiteItem>` names `SuiteItem`). Each is imported by the client's
/// table, and written out (with everything it refers to) when exporting.
struct Named<'a> {
    cfg: &'a Config,
    export: bool,
    imports: BTreeMap<String, String>,
    failed: Option<ts_rs::ExportError>,
}

impl TypeVisitor for Named<'_> {
    fn visit<U: TS + 'static + ?Sized>(&mut self) {
        let Some(path) = U::output_path() else { return };
        let path = path.with_extension("").to_string_lossy().replace('\\', "/");
        self.imports.insert(U::ident(self.cfg), path);
        if self.export
            && let Err(e) = U::export_all(self.cfg)
        {
            self.failed.get_or_insert(e);
        }
    }
}

impl Named<'_> {
    fn of<T: TS + 'static + ?Sized>(&mut self) {
        self.visit::<T>();
        T::visit_generics(self);
    }
}

/// The TypeScript name of a type; the generated files it needs go into
/// `imports` (name → path without `.ts`).
fn ts_name<T: TS + 'static + ?Sized>(cfg: &Config, imports: &mut BTreeMap<String, String>) -> String {
    let mut named = Named { cfg, export: false, imports: BTreeMap::new(), failed: None };
    named.of::<T>();
    imports.extend(named.imports);
    T::name(cfg)
}

/// Writes the TypeScript file of `T` (or its type parameters') and of every
/// type they refer to.
fn export<T: TS + 'static + ?Sized>(cfg: &Config) -> Result<(), ts_rs::ExportError> {
    let mut named = Named { cfg, export: true, imports: BTreeMap::new(), failed: None };
    named.of::<T>();
    named.failed.map_or(Ok(()), Err)
}

macro_rules! status {
    () => {
        200
    };
    ($s:literal) => {
        $s
    };
}

/// The table. Each entry:
///
/// ```text
/// /// What it does (the client's doc comment).
/// name(service, arg: Source Type, …) -> Answer = VERB "/path/{arg}" [status N] => call;
/// ```
///
/// `call` is an expression of type `Result<Answer, ServiceError>` over the
/// service (named by the first identifier) and the arguments.
macro_rules! operations {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident($s:ident $(, $arg:ident: $src:ident $ty:ty)* $(,)?) -> $out:ty
            = $verb:ident $path:literal $(status $status:literal)? => $body:expr;
    )*) => {
        /// Every operation, in the order declared.
        pub const OPERATIONS: &[Operation] = &[$(
            Operation {
                name: stringify!($name),
                verb: Verb::$verb,
                path: $path,
                status: status!($($status)?),
                params: &[$(Param {
                    name: stringify!($arg),
                    source: Source::$src,
                    ts_type: <$ty as TS>::name,
                }),*],
                doc: &[$($doc),*],
                answer: <$out as TS>::name,
            },
        )*];

        /// Runs the operation `name` on `service` with `input`; the answer as JSON.
        pub async fn call(service: &Arc<Service>, name: &str, mut input: Input<'_>) -> Result<String, CallError> {
            match name {
                $(stringify!($name) => {
                    $(let $arg: $ty = input.take(stringify!($arg), Source::$src)?;)*
                    input.finish()?;
                    let $s: &Arc<Service> = service;
                    let out: Result<$out, ServiceError> = $body;
                    answer(&out?)
                })*
                _ => Err(CallError::Input(format!("no operation `{name}`"))),
            }
        }

        /// Writes the TypeScript files of every argument's and answer's type.
        pub fn export_types(cfg: &Config) -> Result<(), ts_rs::ExportError> {
            $($(export::<$ty>(cfg)?;)* export::<$out>(cfg)?;)*
            Ok(())
        }

        /// The client's table (`ui/src/generated/operations.ts`): per
        /// operation its arguments' and answer's types, verb, path and
        /// where each argument goes.
        pub fn typescript(cfg: &Config) -> String {
            let mut imports = BTreeMap::new();
            let mut types = String::new();
            let mut table = String::new();
            $(
                #[allow(unused_mut)]
                let mut args = Vec::<String>::new();
                #[allow(unused_mut)]
                let mut places = Vec::<String>::new();
                $(
                    let ty = ts_name::<$ty>(cfg, &mut imports);
                    // An argument that may be null may also be left out.
                    let optional = if ty.ends_with(" | null") { "?" } else { "" };
                    args.push(format!("{}{optional}: {ty}", stringify!($arg)));
                    places.push(format!("{}: \"{}\"", stringify!($arg), Source::$src.as_str()));
                )*
                let doc: &[&str] = &[$($doc),*];
                if !doc.is_empty() {
                    types.push_str("  /**\n");
                    for line in doc {
                        // A `*/` in the prose would end the comment early.
                        types.push_str(&format!("   *{}\n", line.replace("*/", "*\\/")));
                    }
                    types.push_str("   */\n");
                }
                let braced = |items: &[String], sep: &str| {
                    if items.is_empty() { "{}".to_string() } else { format!("{{ {} }}", items.join(sep)) }
                };
                types.push_str(&format!(
                    "  {}: {{ args: {}; answer: {} }};\n",
                    stringify!($name),
                    braced(&args, "; "),
                    ts_name::<$out>(cfg, &mut imports),
                ));
                table.push_str(&format!(
                    "  {}: {{ verb: \"{}\", path: \"{}\", params: {} }},\n",
                    stringify!($name),
                    Verb::$verb.as_str(),
                    $path,
                    braced(&places, ", "),
                ));
            )*
            let mut out = String::from("// Generated from crates/service/src/service/operations.rs by `ATTRACTOR_UPDATE_GENERATED=1 cargo test --lib ts_export`; do not edit.\n\n");
            for (name, path) in &imports {
                out.push_str(&format!("import type {{ {name} }} from \"./{path}\";\n"));
            }
            out.push_str("\n/** Every operation of the service facade: its arguments and its answer. */\n");
            out.push_str("export interface Operations {\n");
            out.push_str(&types);
            out.push_str("}\n\n");
            out.push_str("/** Where HTTP finds an argument: a path segment, a query parameter, the whole query, the body. */\n");
            out.push_str("export type Source = \"path\" | \"query\" | \"params\" | \"body\";\n\n");
            out.push_str("/** How each operation travels over HTTP (under `/api`). */\n");
            out.push_str("export const OPERATIONS: {\n  [K in keyof Operations]: { verb: \"GET\" | \"POST\" | \"PUT\" | \"DELETE\"; path: string; params: { [A in keyof Operations[K][\"args\"]]-?: Source } };\n} = {\n");
            out.push_str(&table);
            out.push_str("};\n");
            out
        }
    };
}

operations! {
    /// Counts and the latest activity across every suite.
    overview(s) -> Overview = Get "/overview" => s.overview().await;
    /// Every suite with its latest epoch and its lease.
    suites(s) -> Vec<SuiteItem> = Get "/suites" => s.suites().await;
    /// A page of a suite's epochs (by id or name), newest page first: `limit` epochs (20 unless
    /// said, at most 500) after skipping `offset` newest ones; `runs: false` leaves the run lists
    /// out (most of the payload); `launch` keeps to the epochs that launch ran.
    suite_epochs(s, key: Path String, runs: Query Option<bool>, offset: Query Option<u32>, limit: Query Option<u32>,
        launch: Query Option<i64>)
        -> SuiteEpochs
        = Get "/suites/{key}/epochs" => s.suite_epochs(&key, runs.unwrap_or(true), EpochPageArgs { offset, limit, launch }).await;
    /// What the Charts screen draws, shaped on the server: one column per finished epoch.
    suite_charts(s, key: Path String) -> SuiteCharts = Get "/suites/{key}/charts" => s.suite_charts(&key).await;
    /// The suite's experiment graph (the tree search's nodes, or its epochs).
    suite_graph(s, key: Path String) -> SuiteGraph = Get "/suites/{key}/graph" => s.suite_graph(&key).await;
    /// Every proposal the optimizer considered, with predicted and observed effect.
    suite_proposals(s, key: Path String) -> SuiteProposals
        = Get "/suites/{key}/proposals" => s.suite_proposals(&key).await;
    /// The examples a dataset harness got right in one epoch and wrong in the other.
    suite_flips(s, key: Path String, from: Query i64, to: Query i64) -> ExampleFlips
        = Get "/suites/{key}/flips" => s.suite_flips(&key, from, to).await;
    /// A run with its output tails, its trajectories and its ASO telemetry.
    run_detail(s, id: Path i64) -> RunDetail = Get "/runs/{id}" => s.run_detail(id).await;
    /// The epoch and suite a run belongs to.
    run_epoch(s, id: Path i64) -> RunEpoch = Get "/runs/{id}/epoch" => s.run_epoch(id).await;
    /// Every artifact with its active version.
    artifacts(s) -> Vec<ArtifactItem> = Get "/artifacts" => s.artifacts().await;
    /// An artifact's versions, oldest first, with what made each.
    artifact_versions(s, name: Path String) -> ArtifactHistory
        = Get "/artifacts/{name}/versions" => s.artifact_versions(&name).await;
    /// The diff of two versions of an artifact: by line for text, by field for JSON (keys sorted,
    /// so a reordering is no change).
    artifact_diff(s, name: Path String, from: Query i64, to: Query i64) -> LineDiff
        = Get "/artifacts/{name}/diff" => s.artifact_diff(&name, from, to).await;
    /// Makes an earlier version of an artifact the active one.
    rollback_artifact(s, name: Path String, request: Body RollbackRequest) -> ArtifactItem
        = Post "/artifacts/{name}/rollback" => s.rollback_artifact(&name, request.version).await;
    /// The inbox: open questions, notices and the answered history.
    interventions(s) -> Inbox = Get "/interventions" => s.interventions().await;
    /// Answers an open question (once).
    answer(s, id: Path i64, request: Body AnswerRequest) -> InterventionItem
        = Post "/interventions/{id}/answer" => s.answer(id, &request).await;
    /// Decides a gated artifact update (question `id`): approve it as proposed or edited, or reject it.
    decide_update(s, id: Path i64, request: Body UpdateDecision) -> InterventionItem
        = Post "/interventions/{id}/decide" => s.decide_update(id, &request).await;
    /// Dismisses a notice (what a run told a person without waiting for them); a question cannot
    /// be dismissed, a notice not answered.
    dismiss(s, id: Path i64) -> InterventionItem = Post "/interventions/{id}/dismiss" => s.dismiss(id).await;
    /// Reads a suite or task file and reports every issue with its place.
    validate(s, request: Body ValidateRequest) -> Validation
        = Post "/validate" => Ok(s.validate(&request.suite_path).await);
    /// What a launch would do and may cost; nothing runs.
    preview(s, request: Body RunRequest) -> LaunchPreview = Post "/launches/preview" => s.preview(&request).await;
    /// Every launch on the database, from any process.
    launches(s) -> Vec<LaunchView> = Get "/launches" => s.launches().await;
    /// The workers on the database and the runs queued for them.
    workers(s) -> WorkersView = Get "/workers" => s.workers().await;
    /// Queues a run of a suite (a `RunRequest`: `attractor run`'s options as JSON); this process
    /// works it at once. A field out of its bounds is a 400 naming it; an invalid suite file a 422
    /// with its issues.
    launch(s, request: Body RunRequest) -> LaunchView = Post "/launches" status 202 => s.launch(&request).await;
    /// One launch.
    launch_view(s, id: Path i64) -> LaunchView = Get "/launches/{id}" => s.launch_view(id).await;
    /// A suite's latest launch however long ago it was (`null`: never launched), whose settings
    /// "Launch again" and "Resume" start from.
    suite_last_launch(s, key: Path String) -> Option<LaunchView>
        = Get "/suites/{key}/launches/latest" => s.suite_last_launch(&key).await;
    /// Cancels a launch, whichever process works it.
    cancel(s, id: Path i64) -> LaunchView = Post "/launches/{id}/cancel" => s.cancel(id).await;
    /// The settings in force and where each comes from (never a secret).
    settings(s) -> SettingsView = Get "/settings" => {
        // A key stored from the command line meanwhile shows at once.
        s.refresh_keychain().await;
        Ok(s.settings())
    };
    /// Changes and saves settings.
    update_settings(s, update: Body SettingsUpdate) -> SettingsView
        = Put "/settings" => s.update_settings(&update);
    /// Asks the configured model one short question.
    test_llm(s) -> LlmCheck = Post "/settings/test-llm" => Ok(s.test_llm().await);
    /// Keeps the API key in the operating system's keychain; the answer only says where a key comes from.
    set_api_key(s, request: Body ApiKeyRequest) -> SettingsView
        = Put "/settings/api-key" => s.set_api_key(&request).await;
    /// Removes the API key from the keychain.
    delete_api_key(s) -> SettingsView = Delete "/settings/api-key" => s.delete_api_key().await;
    /// The trajectory repository's aggregates, of one task category or of all.
    trajectory_stats(s, category: Query Option<String>) -> TrajectoryStats
        = Get "/trajectories/stats" => s.trajectory_stats(category.as_deref()).await;
    /// Finished trajectories whose task is most like a run's, a trajectory's or a described one.
    similar_trajectories(s, request: Params SimilarRequest) -> SimilarTrajectories
        = Get "/trajectories/similar" => s.similar_trajectories(&request).await;
    /// The newest convergence memories, of one category or of all.
    memories(s, category: Query Option<String>, limit: Query Option<u32>) -> Vec<MemoryItem>
        = Get "/memories" => s.memories(category.as_deref(), limit).await;
    /// The watched folders and their files.
    watched(s) -> WatchedFolders = Get "/watch" => s.watched().await;
    /// Watches a folder (remembered across restarts).
    add_watched_folder(s, request: Body WatchFolderRequest) -> WatchedFolderView
        = Post "/watch/folders" status 201 => s.add_watched_folder(&request.path).await;
    /// Stops watching a folder.
    remove_watched_folder(s, id: Path i64) -> WatchedFolders
        = Delete "/watch/folders/{id}" => s.remove_watched_folder(id).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The form's words, not serde's: what was sent and what fits, no Rust
    /// type and no position in a body nobody typed.
    #[test]
    fn a_value_that_does_not_fit_is_said_in_plain_words() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Form {
            epochs: u32,
            price: f64,
            name: String,
        }
        let said = |body: &str| {
            let mut de = serde_json::Deserializer::from_str(body);
            plain_mismatch(serde_path_to_error::deserialize::<_, Form>(&mut de).unwrap_err().inner())
        };
        assert_eq!(
            said(r#"{"epochs": 2.5, "price": 1, "name": "a"}"#),
            "`2.5` is not a whole number from 0 to 4294967295"
        );
        assert_eq!(
            said(r#"{"epochs": -1, "price": 1, "name": "a"}"#),
            "`-1` is out of range: a whole number from 0 to 4294967295 is expected"
        );
        assert_eq!(
            said(r#"{"epochs": 1, "price": null, "name": "a"}"#),
            "an empty value (a number too large for JSON is sent as null) is not a number"
        );
        assert_eq!(said(r#"{"epochs": 1, "price": 1, "name": 7}"#), "`7` is not text");
        assert_eq!(said(r#"{"epochs": 1, "price": 1, "name": null}"#), "an empty value (null) is not text");
        assert_eq!(said(r#"{"epochs": 1, "price": 1}"#), "the field `name` is missing");
    }

    async fn service(dir: &std::path::Path) -> Arc<Service> {
        let config = super::super::ServiceConfig {
            db_path: dir.join("attractor.db"),
            settings_path: dir.join("settings.json"),
            runs_root: None,
            env: Arc::new(|_| None),
        };
        Service::open(config).await.unwrap()
    }

    fn named(value: serde_json::Value) -> Input<'static> {
        match value {
            serde_json::Value::Object(map) => Input::Named(map),
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn every_path_argument_is_a_segment_of_its_path_and_every_segment_an_argument() {
        let mut names = std::collections::BTreeSet::new();
        for op in OPERATIONS {
            assert!(names.insert(op.name), "`{}` is declared twice", op.name);
            assert!(op.path.starts_with('/'), "{}: {}", op.name, op.path);
            let segments: Vec<&str> =
                op.path.split('/').filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}'))).collect();
            let from_path: Vec<&str> = op.params.iter().filter(|p| p.source == Source::Path).map(|p| p.name).collect();
            assert_eq!(segments, from_path, "{}: {}", op.name, op.path);
            let whole = op.params.iter().filter(|p| matches!(p.source, Source::Body | Source::Params)).count();
            assert!(whole <= 1, "{} reads its body or its whole query twice", op.name);
            let bodies = op.params.iter().filter(|p| p.source == Source::Body).count();
            // A body travels only with a verb that has one.
            assert!(bodies == 0 || matches!(op.verb, Verb::Post | Verb::Put), "{}", op.name);
            assert!([200, 201, 202].contains(&op.status), "{}: status {}", op.name, op.status);
            let cfg = Config::new().with_large_int("number");
            for p in op.params {
                let ty = (p.ts_type)(&cfg);
                match p.source {
                    // One value in a path segment or a query parameter: text,
                    // a number or a yes/no, which the client writes as text.
                    Source::Path | Source::Query => assert!(
                        ["string", "number", "boolean"].contains(&ty.trim_end_matches(" | null")),
                        "{}: `{}` is a {ty}, which a path or a query parameter cannot carry",
                        op.name,
                        p.name
                    ),
                    // The client leaves out an argument that may be null, and
                    // a missing body is refused: a body is never optional.
                    Source::Body | Source::Params => {
                        assert!(!ty.ends_with(" | null"), "{}: `{}` may be null", op.name, p.name)
                    }
                }
                if p.source == Source::Path {
                    assert!(!ty.ends_with(" | null"), "{}: a path segment is never missing", op.name);
                }
            }
        }
        assert!(names.len() >= 30, "{names:?}");
    }

    #[tokio::test]
    async fn both_transports_reach_an_operation_with_the_same_answer() {
        let dir = tempfile::tempdir().unwrap();
        let s = service(dir.path()).await;
        let by_name =
            call(&s, "memories", named(serde_json::json!({"category": "parsers", "limit": 3}))).await.unwrap();
        let path: Vec<(String, String)> = Vec::new();
        let over_http = call(
            &s,
            "memories",
            Input::Http { path: &path, query: Some("category=parsers&limit=3"), body: b"", json: false },
        )
        .await
        .unwrap();
        assert_eq!(by_name, over_http);
        assert_eq!(by_name, "[]");
    }

    #[tokio::test]
    async fn a_call_names_the_argument_it_cannot_use() {
        let dir = tempfile::tempdir().unwrap();
        let s = service(dir.path()).await;
        let refused = |r: Result<String, CallError>| match r {
            Err(CallError::Input(message)) => message,
            other => panic!("not refused as input: {other:?}"),
        };
        let m = refused(call(&s, "run_detail", named(serde_json::json!({}))).await);
        assert!(m.contains("`id`"), "{m}");
        let m = refused(call(&s, "run_detail", named(serde_json::json!({"id": 1, "ids": 2}))).await);
        assert_eq!(m, "no argument `ids` for this operation");
        let m = refused(call(&s, "run_detail", named(serde_json::json!({"id": "seven"}))).await);
        assert!(m.starts_with("argument `id`: "), "{m}");
        let m = refused(
            call(
                &s,
                "preview",
                named(serde_json::json!({"request": {"suite_path": "s.yaml", "tree": {"width": "two"}}})),
            )
            .await,
        );
        assert!(m.starts_with("argument `request.tree.width`: invalid type"), "{m}");
        let m = refused(call(&s, "no_such_thing", named(serde_json::json!({}))).await);
        assert_eq!(m, "no operation `no_such_thing`");

        let path = vec![("id".to_string(), "abc".to_string())];
        let http = Input::Http { path: &path, query: None, body: b"", json: false };
        let m = refused(call(&s, "run_detail", http).await);
        assert!(m.starts_with("bad path: `id` = \"abc\""), "{m}");
        let path = vec![("name".to_string(), "knobs".to_string())];
        let http = Input::Http { path: &path, query: Some("from=1"), body: b"", json: false };
        assert_eq!(refused(call(&s, "artifact_diff", http).await), "bad query: `to` is missing");
        let http = Input::Http { path: &path, query: None, body: br#"{"version": 1}"#, json: false };
        assert!(refused(call(&s, "rollback_artifact", http).await).starts_with("the request body must be JSON"));
        let http = Input::Http { path: &path, query: None, body: br#"{"version": "one"}"#, json: true };
        let m = refused(call(&s, "rollback_artifact", http).await);
        assert!(
            m.starts_with("the request body is not what this endpoint takes: version: \"one\" is not a whole number"),
            "{m}"
        );
        assert!(!m.contains("invalid type") && !m.contains(" at line "), "{m}");
        let http = Input::Http { path: &path, query: None, body: br#"{"version": 1} x"#, json: true };
        assert!(refused(call(&s, "rollback_artifact", http).await).starts_with("the request body is not valid JSON"));
    }

    #[test]
    fn the_clients_table_lists_every_operation_with_its_types() {
        let ts = typescript(&Config::new().with_large_int("number"));
        for op in OPERATIONS {
            assert!(ts.contains(&format!("\n  {}: {{ args: ", op.name)), "{} has no type", op.name);
            assert!(ts.contains(&format!("\n  {}: {{ verb: \"{}\"", op.name, op.verb.as_str())), "{}", op.name);
        }
        assert!(ts.contains(
            "suite_epochs: { args: { key: string; runs?: boolean | null; offset?: number | null; limit?: number | null; launch?: number | null }; answer: SuiteEpochs }"
        ));
        assert!(ts.contains("import type { SuiteItem } from \"./SuiteItem\";"), "a Vec's element is imported");
    }
}
