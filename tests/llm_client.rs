//! The LLM client against the scripted OpenAI-compatible server: a real HTTP
//! server on loopback, so retries, timeouts, headers and the cache are
//! exercised through the client's real HTTP stack.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::llm::{
    ApiKey, CallRole, ChatMessage, ChatRequest, DEFAULT_BASE_URL, LlmClient, LlmConfig, LlmError, LlmSettings,
    ParsedVia, ReplyFormat, Usage,
};
use attractor::store::Store;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, PartialEq, schemars::JsonSchema)]
struct Score {
    score: f64,
    reason: String,
}

const GOOD: &str = r#"{"score": 0.75, "reason": "clear"}"#;

fn good() -> Score {
    Score { score: 0.75, reason: "clear".into() }
}

/// Short retries and timeouts so the whole file runs in a few seconds.
fn config(server: &ScriptedServer) -> LlmConfig {
    LlmConfig::new(server.base_url(), "test-model")
        .with_retries(3, Duration::from_millis(10))
        .with_timeout(Duration::from_secs(5))
}

fn client(server: &ScriptedServer) -> LlmClient {
    LlmClient::new(config(server)).expect("client")
}

async fn start(script: Vec<Scripted>) -> ScriptedServer {
    ScriptedServer::start(script).await.expect("start scripted server")
}

fn ask() -> ChatRequest {
    ChatRequest::new(vec![
        ChatMessage::system("Rate the answer as JSON with score and reason."),
        ChatMessage::user("The answer is 4."),
    ])
}

async fn temp_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&dir.path().join("attractor.db")).await.expect("open store");
    (dir, store)
}

#[tokio::test]
async fn success_records_usage_latency_and_sends_a_plain_request() {
    let server = start(vec![Scripted::reply("Hello there."), Scripted::without_usage("No usage.")]).await;
    let client = client(&server);

    let reply = client.chat(ask().max_tokens(64)).await.expect("chat");
    assert_eq!(reply.content, "Hello there.");
    let usage = reply.usage.expect("usage reported");
    assert!(usage.prompt_tokens > 0 && usage.completion_tokens > 0);
    assert_eq!(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
    assert!(reply.latency > Duration::ZERO);
    assert_eq!((reply.cached, reply.retries), (false, 0));
    assert_eq!(reply.model.as_deref(), Some("test-model"));
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));

    let sent = &server.requests()[0];
    assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", "/v1/chat/completions"));
    let body = sent.json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["max_tokens"], 64);
    assert!(body.get("response_format").is_none(), "plain chat asks for no JSON mode: {body}");
    assert_eq!(
        sent.messages(),
        vec![
            ("system".into(), "Rate the answer as JSON with score and reason.".into()),
            ("user".into(), "The answer is 4.".into())
        ]
    );
    assert_eq!(sent.header("authorization"), None, "no key configured, no header");

    // A server that sends no usage is fine; the totals just do not grow.
    let bare = client.chat(ask().no_cache()).await.expect("chat without usage");
    assert_eq!(bare.usage, None);
    let totals = client.usage().snapshot();
    assert_eq!((totals.calls, totals.failures, totals.retries, totals.cache_hits), (2, 0, 0, 0));
    assert_eq!(totals.tokens, usage);
    assert!(totals.latency >= reply.latency);
}

#[tokio::test]
async fn think_blocks_are_stripped() {
    let server =
        start(vec![Scripted::with_think("The user wants {\"score\": 0}? No, let me think again.", GOOD)]).await;
    let parsed = client(&server).chat_json::<Score>(ask()).await.expect("chat_json");
    assert_eq!(parsed.value, good());
    assert_eq!((parsed.via, parsed.calls), (ParsedVia::Lenient, 1));
    let body = server.requests()[0].json();
    assert_eq!(body["response_format"]["type"], "json_schema");
}

#[tokio::test]
async fn fenced_json_is_unwrapped() {
    let server = start(vec![Scripted::fenced(GOOD)]).await;
    let parsed = client(&server).chat_json::<Score>(ask()).await.expect("chat_json");
    assert_eq!(parsed.value, good());
    assert_eq!(parsed.via, ParsedVia::Lenient);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn strict_json_needs_no_help() {
    let server = start(vec![Scripted::reply(GOOD)]).await;
    let parsed = client(&server).chat_json::<Score>(ask()).await.expect("chat_json");
    assert_eq!((parsed.value, parsed.via), (good(), ParsedVia::Strict));
}

#[tokio::test]
async fn malformed_reply_is_corrected_by_a_second_call_that_says_what_was_wrong() {
    let bad = r#"{"score": "high", "reason": "clear"}"#;
    let server = start(vec![Scripted::reply(bad), Scripted::reply(GOOD)]).await;
    let client = client(&server);
    let parsed = client.chat_json::<Score>(ask()).await.expect("corrected");
    assert_eq!(parsed.value, good());
    assert_eq!((parsed.via, parsed.calls), (ParsedVia::Corrected, 2));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].messages();
    assert_eq!(messages.len(), 4, "the original two, the bad reply, the correction");
    assert_eq!(messages[2], ("assistant".to_string(), bad.to_string()));
    let (role, correction) = &messages[3];
    assert_eq!(role, "user");
    assert!(
        correction.contains("score: invalid type: string \"high\", expected f64"),
        "the correction names the serde error: {correction}"
    );
    assert!(correction.contains("only the corrected JSON"), "{correction}");
    // Usage covers both calls.
    assert!(parsed.usage.total_tokens > parsed.reply.usage.unwrap().total_tokens);
    assert_eq!(parsed.usage.total_tokens, client.usage().snapshot().tokens.total_tokens);
    assert_eq!(client.usage().snapshot().calls, 2);
}

#[tokio::test]
async fn malformed_twice_is_a_clear_error_and_is_not_cached() {
    let server = start(vec![
        Scripted::reply("I'd rate it highly!"),
        Scripted::reply(r#"{"score": 0.75,}"#),
        Scripted::reply(GOOD),
    ])
    .await;
    let client = client(&server);
    let err = client.chat_json::<Score>(ask()).await.expect_err("still invalid");
    assert!(matches!(err, LlmError::InvalidJson { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("model test-model did not reply with valid JSON"), "{text}");
    assert!(text.contains("trailing comma"), "says what was wrong: {text}");
    assert!(text.contains("try a stronger model"), "says what to do: {text}");
    assert_eq!(server.requests().len(), 2, "exactly one correction");
    assert!(
        server.requests()[1].messages()[3].1.contains("it contains no JSON object"),
        "the first correction said what was wrong with the first reply"
    );
    assert_eq!(client.usage().snapshot().failures, 1);

    // The unusable replies were not cached: the same deterministic call asks again.
    let parsed = client.chat_json::<Score>(ask()).await.expect("second try");
    assert_eq!(parsed.via, ParsedVia::Strict);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after() {
    let server = start(vec![Scripted::rate_limited(1), Scripted::reply("ok")]).await;
    let client = client(&server);
    let started = Instant::now();
    let reply = client.chat(ask()).await.expect("chat after 429");
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(1), "waited only {elapsed:?}");
    assert_eq!((reply.content.as_str(), reply.retries), ("ok", 1));
    assert_eq!(server.requests().len(), 2);
    assert_eq!(client.usage().snapshot().retries, 1);
}

#[tokio::test]
async fn rate_limit_asking_for_too_long_a_wait_fails_at_once() {
    let server = start(vec![Scripted::rate_limited(3600), Scripted::reply("never")]).await;
    let err = client(&server).chat(ask()).await.expect_err("429 with a long wait");
    assert!(matches!(err, LlmError::RateLimited { attempts: 1, .. }), "{err:?}");
    assert!(err.to_string().contains("asked to wait 3600.0 s"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_error_is_retried() {
    let server = start(vec![Scripted::server_error(), Scripted::reply("recovered")]).await;
    let reply = client(&server).chat(ask()).await.expect("chat after 500");
    assert_eq!((reply.content.as_str(), reply.retries), ("recovered", 1));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn server_errors_past_the_retry_budget_are_reported() {
    let server = ScriptedServer::start_repeating(vec![], Scripted::server_error()).await.unwrap();
    let err = client(&server).chat(ask()).await.expect_err("always 500");
    assert!(matches!(err, LlmError::ServerError { status: 500, attempts: 4, .. }), "{err:?}");
    assert!(err.to_string().contains("500 Internal Server Error"), "{err}");
    assert!(err.to_string().contains("the scripted model crashed"), "{err}");
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn bad_request_is_not_retried() {
    let server = start(vec![
        Scripted::bad_request("this model's maximum context length is 8192 tokens"),
        Scripted::reply("never sent"),
    ])
    .await;
    let client = client(&server);
    let err = client.chat(ask()).await.expect_err("400");
    assert!(matches!(err, LlmError::Rejected { status: 400, .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("400 Bad Request") && text.contains("maximum context length"), "{text}");
    assert_eq!(server.requests().len(), 1, "exactly one request");
    assert_eq!(server.remaining(), 1);
    let usage = client.usage().snapshot();
    assert_eq!((usage.calls, usage.failures, usage.retries), (1, 1, 0));
}

#[tokio::test]
async fn timeout_then_success() {
    let server =
        start(vec![Scripted::delayed(Duration::from_secs(3), Scripted::reply("too late")), Scripted::reply("in time")])
            .await;
    let client = LlmClient::new(config(&server).with_timeout(Duration::from_millis(300))).unwrap();
    let started = Instant::now();
    let reply = client.chat(ask()).await.expect("chat after a timeout");
    assert_eq!((reply.content.as_str(), reply.retries), ("in time", 1));
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn timeouts_past_the_retry_budget_are_reported() {
    let slow = Scripted::delayed(Duration::from_secs(3), Scripted::reply("too late"));
    let server = ScriptedServer::start_repeating(vec![], slow).await.unwrap();
    let config = config(&server).with_timeout(Duration::from_millis(100)).with_retries(1, Duration::from_millis(10));
    let err = LlmClient::new(config).unwrap().chat(ask()).await.expect_err("always slow");
    assert!(matches!(err, LlmError::Timeout { attempts: 2, .. }), "{err:?}");
    assert!(err.to_string().contains("did not answer within 100 ms"), "{err}");
}

#[tokio::test]
async fn closed_connection_is_retried_then_reported() {
    let server = start(vec![Scripted::close_connection(), Scripted::reply("back")]).await;
    let reply = client(&server).chat(ask()).await.expect("chat after a dropped connection");
    assert_eq!((reply.content.as_str(), reply.retries), ("back", 1));

    let dropping = ScriptedServer::start_repeating(vec![], Scripted::close_connection()).await.unwrap();
    let config = config(&dropping).with_retries(2, Duration::from_millis(10));
    let err = LlmClient::new(config).unwrap().chat(ask()).await.expect_err("always dropped");
    assert!(matches!(err, LlmError::ConnectionLost { attempts: 3, .. }), "{err:?}");
    assert!(err.to_string().contains("dropped the connection without answering"), "{err}");
    assert_eq!(dropping.requests().len(), 3);
}

#[tokio::test]
async fn server_down_is_a_clear_error_after_bounded_retries() {
    let server = start(vec![]).await;
    let base_url = server.base_url();
    let config = config(&server).with_retries(2, Duration::from_millis(10));
    server.shutdown().await;

    let client = LlmClient::new(config).unwrap();
    let err = client.chat(ask()).await.expect_err("nobody listening");
    assert!(matches!(err, LlmError::Unreachable { attempts: 3, .. }), "{err:?}");
    assert!(err.is_transient());
    let text = err.to_string();
    assert!(text.starts_with(&format!("cannot reach the model server at {base_url} (connection refused)")), "{text}");
    assert!(text.contains("start Ollama") && text.contains("ATTRACTOR_LLM_BASE_URL"), "{text}");
    let usage = client.usage().snapshot();
    assert_eq!((usage.calls, usage.failures, usage.retries), (1, 1, 2));
}

#[tokio::test]
async fn deterministic_calls_are_cached_in_the_database() {
    let (_dir, store) = temp_store().await;
    let server = start(vec![
        Scripted::reply("first"),
        Scripted::reply("warm 1"),
        Scripted::reply("warm 2"),
        Scripted::reply("bypassed"),
        Scripted::reply("cache off"),
    ])
    .await;
    let client = client(&server).with_store(store.clone());

    let a = client.chat(ask()).await.unwrap();
    let b = client.chat(ask()).await.unwrap();
    assert_eq!((a.content.as_str(), a.cached), ("first", false));
    assert_eq!((b.content.as_str(), b.cached), ("first", true));
    assert_eq!(b.usage, a.usage, "a hit reports the original call's usage");
    assert_eq!(server.requests().len(), 1, "the second identical call was served by the cache");
    let usage = client.usage().snapshot();
    assert_eq!((usage.calls, usage.cache_hits), (1, 1));
    assert_eq!(usage.tokens, a.usage.unwrap(), "a hit spends no tokens");

    // Sampling is not deterministic: never cached.
    let warm1 = client.chat(ask().temperature(0.7)).await.unwrap();
    let warm2 = client.chat(ask().temperature(0.7)).await.unwrap();
    assert_eq!((warm1.content.as_str(), warm2.content.as_str()), ("warm 1", "warm 2"));
    // Bypass per request, and off globally.
    assert_eq!(client.chat(ask().no_cache()).await.unwrap().content, "bypassed");
    let uncached = LlmClient::new(config(&server).with_cache(false)).unwrap().with_store(store.clone());
    assert_eq!(uncached.chat(ask()).await.unwrap().content, "cache off");
    assert_eq!(server.requests().len(), 5);
    assert_eq!(store.llm_cache_len().await.unwrap(), 1);

    // The cache outlives the client: a new one on the same database is served too.
    let fresh = LlmClient::new(config(&server)).unwrap().with_store(store.clone());
    assert_eq!(fresh.chat(ask()).await.unwrap().content, "first");
    assert_eq!(server.requests().len(), 5);
    let hits = raw_strings(&store, "SELECT CAST(hits AS TEXT) FROM llm_cache").await;
    assert_eq!(hits, vec!["2".to_string()]);
}

#[tokio::test]
async fn errors_are_never_cached() {
    let server = start(vec![Scripted::server_error(), Scripted::reply("fine"), Scripted::reply("unused")]).await;
    let client = LlmClient::new(config(&server).with_retries(0, Duration::from_millis(10))).unwrap();
    assert!(client.chat(ask()).await.is_err());
    assert_eq!(client.chat(ask()).await.unwrap().content, "fine");
    let third = client.chat(ask()).await.unwrap();
    assert_eq!((third.content.as_str(), third.cached), ("fine", true));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_structured_call_sends_the_schema_of_its_type_and_the_role_budget() {
    let server = start(vec![Scripted::reply(GOOD)]).await;
    let parsed = client(&server).chat_json::<Score>(ask().role(CallRole::Supervisor)).await.unwrap();
    assert_eq!((parsed.value, parsed.via), (good(), ParsedVia::Strict));
    let body = server.requests()[0].json();
    assert_eq!(body["max_tokens"], CallRole::Supervisor.default_max_tokens());
    let format = &body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "Score");
    let schema = &format["json_schema"]["schema"];
    assert_eq!(schema["required"], json!(["score", "reason"]));
    assert_eq!(schema["properties"]["score"]["type"], "number");
    // The schema is in response_format, not repeated in the prompt.
    assert!(!body["messages"][0]["content"].as_str().unwrap().contains("JSON Schema"));

    // A plain call carries a budget too: the default role's.
    let plain = start(vec![Scripted::reply("hi")]).await;
    client(&plain).chat(ChatRequest::user("hello")).await.unwrap();
    assert_eq!(plain.requests()[0].json()["max_tokens"], CallRole::Proposer.default_max_tokens());
}

#[tokio::test]
async fn a_missing_required_field_is_a_rejection_that_names_it() {
    // An empty object (what a lenient parser once took for "no change") and
    // a wrong type, twice each: the correction does not help.
    let server = start(vec![Scripted::reply("{}"), Scripted::reply(r#"{"reason": "no score"}"#)]).await;
    let err = client(&server).chat_json::<Score>(ask()).await.unwrap_err();
    let LlmError::InvalidJson { error, calls, tokens, .. } = &err else { panic!("{err:?}") };
    assert!(error.contains("missing field `score`"), "{error}");
    assert_eq!(*calls, 2);
    assert!(tokens.total_tokens > 0, "unusable replies are still counted");
    assert_eq!(err.spent().0, 2);
    // The correction told the model which field.
    let correction = server.requests()[1].messages().last().unwrap().1.clone();
    assert!(correction.contains("missing field `score`"), "{correction}");

    let wrong = start(vec![Scripted::reply(r#"{"score": "high", "reason": "x"}"#), Scripted::reply(GOOD)]).await;
    let fixed = client(&wrong).chat_json::<Score>(ask()).await.unwrap();
    assert_eq!((fixed.via, fixed.calls), (ParsedVia::Corrected, 2));
    assert!(wrong.requests()[1].messages().last().unwrap().1.contains("score: invalid type"));
}

#[tokio::test]
async fn a_cut_off_reply_is_asked_again_with_twice_the_budget_then_refused() {
    // Cut off once: the second ask, with the doubled budget, is whole.
    let server = start(vec![Scripted::cut_off(r#"{"score": 0.75, "rea"#), Scripted::reply(GOOD)]).await;
    let client = client(&server);
    let parsed = client.chat_json::<Score>(ask().max_tokens(100)).await.expect("second ask is whole");
    assert_eq!((parsed.value, parsed.calls), (good(), 2));
    let budgets: Vec<_> = server.requests().iter().map(|r| r.json()["max_tokens"].clone()).collect();
    assert_eq!(budgets, vec![json!(100), json!(200)]);

    // Cut off twice: refused with the reason, never parsed as if whole (a
    // cut-off that happens to be valid JSON included).
    let twice = start(vec![Scripted::cut_off(GOOD), Scripted::cut_off(GOOD)]).await;
    let err = LlmClient::new(config(&twice)).unwrap().chat_json::<Score>(ask().max_tokens(50)).await.unwrap_err();
    assert!(matches!(err, LlmError::CutOff { max_tokens: 100, calls: 2, .. }), "{err:?}");
    assert_eq!(err.short_reason(), "cut off at 100 tokens");
    assert!(err.to_string().contains("raise max_tokens"), "{err}");
    assert_eq!(twice.requests().len(), 2);
}

#[tokio::test]
async fn the_reply_format_falls_back_from_schema_to_object_to_prompt_and_is_remembered() {
    let server = start(vec![
        Scripted::bad_request("json_schema is not supported by this server"),
        Scripted::bad_request("unknown parameter: response_format"),
        Scripted::reply(GOOD),
        Scripted::reply(GOOD),
    ])
    .await;
    let client = client(&server);
    assert_eq!(client.reply_format(), ReplyFormat::Schema);
    let parsed = client.chat_json::<Score>(ask()).await.expect("fallback");
    assert_eq!(parsed.value, good());
    assert_eq!(client.reply_format(), ReplyFormat::Prompt, "remembered");
    assert!(!client.json_mode_supported());
    // A new client for the same endpoint starts where the first one ended.
    let again = LlmClient::new(config(&server)).unwrap();
    assert_eq!(again.reply_format(), ReplyFormat::Prompt);
    again.chat_json::<Score>(ask().no_cache()).await.expect("later call");
    let formats: Vec<_> =
        server.requests().iter().map(|r| r.json()["response_format"]["type"].as_str().map(str::to_string)).collect();
    assert_eq!(formats, vec![Some("json_schema".into()), Some("json_object".into()), None, None]);
    // Without the schema in response_format, the prompt carries it.
    let system = server.requests()[2].messages()[0].1.clone();
    assert!(system.contains("JSON Schema") && system.contains("\"score\""), "{system}");
    assert_eq!(client.usage().snapshot().retries, 2);

    // With JSON mode off in the configuration no format is ever asked for.
    let plain = start(vec![Scripted::reply(GOOD)]).await;
    let off = LlmClient::new(config(&plain).with_json_mode(false)).unwrap();
    off.chat_json::<Score>(ask()).await.unwrap();
    assert!(plain.requests()[0].json().get("response_format").is_none());
}

#[tokio::test]
async fn a_reply_over_the_size_limit_is_refused_unread() {
    let huge = format!(r#"{{"score": 1, "reason": "{}"}}"#, "x".repeat(300_000));
    let server = start(vec![Scripted::reply(huge)]).await;
    let (_dir, store) = temp_store().await;
    let client = client(&server).with_store(store.clone());
    let err = client.chat_json::<Score>(ask()).await.unwrap_err();
    assert!(matches!(err, LlmError::ReplyTooLarge { limit: 262_144, .. }), "{err:?}");
    assert_eq!(server.requests().len(), 1, "not retried");
    assert_eq!(store.llm_cache_len().await.unwrap(), 0);
}

#[tokio::test]
async fn a_run_stops_asking_once_its_model_time_is_spent() {
    let server =
        start(vec![Scripted::delayed(Duration::from_millis(300), Scripted::reply(GOOD)), Scripted::reply(GOOD)]).await;
    let mut config = config(&server).with_cache(false);
    config.max_model_time = Some(Duration::from_millis(200));
    let client = LlmClient::new(config).unwrap();
    // The first call, retries included, is cut short at what is left of
    // the model time.
    let first = client.chat(ask()).await.unwrap_err();
    assert!(matches!(first, LlmError::Timeout { .. } | LlmError::ModelTimeSpent { .. }), "{first:?}");
    assert_eq!(server.requests().len(), 1, "no retry past the limit");
    let second = client.chat(ask()).await.unwrap_err();
    assert!(matches!(second, LlmError::ModelTimeSpent { .. }), "{second:?}");
    assert!(second.to_string().contains("max_model_secs"), "{second}");
}

#[test]
fn settings_out_of_range_are_refused_with_the_field() {
    let env = |n: &str| (n == "ATTRACTOR_LLM_MODEL").then(|| "m".to_string());
    let bad = [
        (LlmSettings { timeout_secs: Some(1e20), ..LlmSettings::default() }, "timeout_secs"),
        (LlmSettings { timeout_secs: Some(f64::NAN), ..LlmSettings::default() }, "timeout_secs"),
        (LlmSettings { attempts: Some(0), ..LlmSettings::default() }, "attempts"),
        (
            LlmSettings { max_tokens: Some([(CallRole::Executor, 0)].into()), ..LlmSettings::default() },
            "max_tokens.executor",
        ),
        (LlmSettings { max_reply_bytes: Some(10), ..LlmSettings::default() }, "max_reply_bytes"),
    ];
    for (settings, field) in bad {
        let err = LlmConfig::resolve(&settings, env).unwrap_err();
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
    let good = LlmSettings {
        attempts: Some(1),
        max_tokens: Some([(CallRole::Executor, 9000)].into()),
        ..LlmSettings::default()
    };
    let c = LlmConfig::resolve(&good, env).unwrap();
    assert_eq!((c.max_retries, c.max_tokens_for(Some(CallRole::Executor))), (0, 9000));
    assert_eq!(c.max_tokens_for(Some(CallRole::Verifier)), CallRole::Verifier.default_max_tokens());
}

#[test]
fn a_key_from_the_environment_goes_only_to_the_server_the_environment_names_beside_it() {
    let chosen = LlmSettings {
        base_url: Some("https://chosen.example/v1".into()),
        model: Some("m".into()),
        ..LlmSettings::default()
    };
    let env_of = |pairs: &'static [(&'static str, &'static str)]| {
        move |n: &str| pairs.iter().find(|(k, _)| *k == n).map(|(_, v)| v.to_string())
    };
    // Exported together for another provider: not sent to the chosen server
    // (which may need no key: the run goes on without one).
    let sent = |env| LlmConfig::resolve(&chosen, env).unwrap().api_key.map(|k| k.expose().to_string());
    assert_eq!(
        sent(env_of(&[
            ("ATTRACTOR_LLM_API_KEY", "sk-other-provider"),
            ("ATTRACTOR_LLM_BASE_URL", "https://other.example/v1"),
        ])),
        None
    );
    // The OpenAI pair is held to the same rule, and a refused first pair does not hide a matching second.
    assert_eq!(sent(env_of(&[("OPENAI_API_KEY", "sk-o"), ("OPENAI_BASE_URL", "https://api.openai.example/v1")])), None);
    assert_eq!(
        sent(env_of(&[
            ("ATTRACTOR_LLM_API_KEY", "sk-other-provider"),
            ("ATTRACTOR_LLM_BASE_URL", "https://other.example/v1"),
            ("OPENAI_API_KEY", "sk-for-chosen"),
            ("OPENAI_BASE_URL", "https://chosen.example/v1"),
        ])),
        Some("sk-for-chosen".to_string())
    );
    // The same server (a trailing slash apart), or a key exported alone: sent.
    for env in [
        env_of(&[("ATTRACTOR_LLM_API_KEY", "sk-same"), ("ATTRACTOR_LLM_BASE_URL", "https://chosen.example/v1/")]),
        env_of(&[("ATTRACTOR_LLM_API_KEY", "sk-same")]),
    ] {
        let c = LlmConfig::resolve(&chosen, env).unwrap();
        assert_eq!(c.api_key.as_ref().map(|k| k.expose().to_string()), Some("sk-same".to_string()));
    }
    // A key given with the settings (the keychain's) is theirs, whatever the environment says.
    let with_key = LlmSettings { api_key: Some(ApiKey::new("sk-keychain")), ..chosen.clone() };
    let c = LlmConfig::resolve(
        &with_key,
        env_of(&[("ATTRACTOR_LLM_API_KEY", "sk-x"), ("ATTRACTOR_LLM_BASE_URL", "https://other.example/v1")]),
    )
    .unwrap();
    assert_eq!(c.api_key.as_ref().map(|k| k.expose().to_string()), Some("sk-keychain".to_string()));
}

const KEY: &str = "sk-test-SECRET-4f9a2c";

#[tokio::test]
async fn api_key_goes_only_into_the_authorization_header() {
    let (_dir, store) = temp_store().await;
    let server =
        start(vec![Scripted::reply(GOOD), Scripted::status(401, format!("Incorrect API key provided: {KEY}"))]).await;
    let config = config(&server).with_api_key(KEY);
    let client = LlmClient::new(config.clone()).unwrap().with_store(store.clone());

    client.chat_json::<Score>(ask()).await.unwrap();
    let sent = &server.requests()[0];
    assert_eq!(sent.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert!(!sent.body.contains(KEY), "the key is not in the body");

    for shown in [format!("{client:?}"), format!("{config:?}"), format!("{:?}", config.api_key)] {
        assert!(!shown.contains("SECRET"), "Debug leaks the key: {shown}");
    }
    assert!(format!("{client:?}").contains("<redacted>"));

    assert_eq!(store.llm_cache_len().await.unwrap(), 1);
    let rows = raw_strings(
        &store,
        "SELECT key || base_url || model || request_json || response_json || created_at FROM llm_cache",
    )
    .await;
    assert_eq!(rows.len(), 1);
    assert!(!rows[0].contains("SECRET"), "the cache row holds the key: {}", rows[0]);
    assert!(rows[0].contains("Rate the answer"), "the row is the request: {}", rows[0]);

    // A server that quotes the key back in an error does not get it into ours.
    let err = client.chat(ask().no_cache()).await.expect_err("401");
    assert!(matches!(err, LlmError::Rejected { status: 401, .. }), "{err:?}");
    let text = err.to_string();
    assert!(!text.contains("SECRET") && text.contains("<redacted>"), "{text}");
    assert!(text.contains("check the API key"), "{text}");
}

#[tokio::test]
async fn usage_can_be_shared_by_several_clients() {
    let server = start(vec![Scripted::reply("a"), Scripted::reply("b")]).await;
    let shared = std::sync::Arc::new(Usage::new());
    let one = client(&server).with_usage(shared.clone());
    let two = client(&server).with_usage(shared.clone());
    let before = shared.snapshot();
    one.chat(ask().no_cache()).await.unwrap();
    two.chat(ask().no_cache().model("other-model")).await.unwrap();
    let spent = shared.snapshot().since(&before);
    assert_eq!(spent.calls, 2);
    assert_eq!(spent.tokens.total_tokens, shared.total_tokens());
    assert_eq!(server.requests()[1].json()["model"], "other-model");
}

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name| map.get(name).cloned()
}

#[test]
fn environment_precedence() {
    let none = LlmSettings::default();

    // Nothing set: a local Ollama, but a model must be named.
    let err = LlmConfig::resolve(&none, env(&[])).unwrap_err();
    assert!(matches!(err, LlmError::NoModel));
    assert!(err.to_string().contains("ATTRACTOR_LLM_MODEL"), "{err}");
    let local = LlmConfig::resolve(&none, env(&[("ATTRACTOR_LLM_MODEL", "llama3.2")])).unwrap();
    assert_eq!((local.base_url.as_str(), local.model.as_str()), (DEFAULT_BASE_URL, "llama3.2"));
    assert!(local.api_key.is_none());
    assert!(local.json_mode && local.cache);

    // The OPENAI_* variables are honoured...
    let openai = [
        ("ATTRACTOR_LLM_MODEL", "gpt-4o-mini"),
        ("OPENAI_BASE_URL", "https://api.openai.com/v1/"),
        ("OPENAI_API_KEY", "sk-openai"),
    ];
    let c = LlmConfig::resolve(&none, env(&openai)).unwrap();
    assert_eq!(c.base_url, "https://api.openai.com/v1", "trailing slash dropped");
    assert_eq!(c.api_key, Some(ApiKey::new("sk-openai")));

    // ...but ATTRACTOR_* wins over them...
    let mut both = openai.to_vec();
    both.push(("ATTRACTOR_LLM_BASE_URL", "http://10.0.0.5:8000/v1"));
    both.push(("ATTRACTOR_LLM_API_KEY", "sk-attractor"));
    let c = LlmConfig::resolve(&none, env(&both)).unwrap();
    assert_eq!(c.base_url, "http://10.0.0.5:8000/v1");
    assert_eq!(c.api_key, Some(ApiKey::new("sk-attractor")));

    // ...and explicit settings win over everything.
    let settings = LlmSettings {
        base_url: Some("http://127.0.0.1:1234/v1".into()),
        model: Some("qwen2.5".into()),
        api_key: Some(ApiKey::new("sk-settings")),
        timeout_secs: Some(7.5),
        max_retries: Some(1),
        json_mode: Some(false),
        cache: Some(false),
        ..LlmSettings::default()
    };
    let c = LlmConfig::resolve(&settings, env(&both)).unwrap();
    assert_eq!((c.base_url.as_str(), c.model.as_str()), ("http://127.0.0.1:1234/v1", "qwen2.5"));
    assert_eq!(c.api_key, Some(ApiKey::new("sk-settings")));
    assert_eq!((c.timeout, c.max_retries), (Duration::from_secs_f64(7.5), 1));
    assert!(!c.json_mode && !c.cache);

    // Empty variables count as unset; a bad URL names where it came from.
    let c = LlmConfig::resolve(
        &none,
        env(&[
            ("ATTRACTOR_LLM_BASE_URL", " "),
            ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
            ("ATTRACTOR_LLM_MODEL", "m"),
        ]),
    )
    .unwrap();
    assert_eq!(c.base_url, "http://127.0.0.1:8080/v1");
    let err =
        LlmConfig::resolve(&none, env(&[("ATTRACTOR_LLM_BASE_URL", "localhost:11434"), ("ATTRACTOR_LLM_MODEL", "m")]))
            .unwrap_err();
    assert!(matches!(err, LlmError::BadBaseUrl { .. }), "{err:?}");
    assert!(err.to_string().contains("(from ATTRACTOR_LLM_BASE_URL)"), "{err}");
}

/// Every row of a one-column query, read with plain SQL independently of the
/// store's API.
async fn raw_strings(store: &Store, sql: &str) -> Vec<String> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", store.path().display())).await.expect("connect");
    let rows: Vec<String> = sqlx::query_scalar(sql).fetch_all(&pool).await.expect(sql);
    pool.close().await;
    rows
}

#[tokio::test]
async fn a_responding_server_answers_each_request_from_what_it_was_shown() {
    let server = ScriptedServer::start_responding(|request| {
        let user = request.messages().into_iter().find(|(role, _)| role == "user").map(|(_, c)| c).unwrap_or_default();
        let score = if user.contains('4') { 0.75 } else { 0.25 };
        Scripted::json(&json!({"score": score, "reason": "clear"}))
    })
    .await
    .expect("start scripted server");
    let client = client(&server);
    let four = client.chat_json::<Score>(ask()).await.expect("chat_json");
    assert_eq!(four.value, good());
    let other = ChatRequest::new(vec![ChatMessage::user("The answer is 5.")]);
    assert_eq!(client.chat_json::<Score>(other).await.expect("chat_json").value.score, 0.25);
    assert_eq!(server.requests().len(), 2);
}
