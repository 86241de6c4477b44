//! The LLM executor against the scripted OpenAI-compatible server, on real
//! temp workspaces: replies are applied and committed; unsafe edits and
//! blocked tools are refused and nothing lands outside the workspace.

use std::path::{Path, PathBuf};
use std::time::Duration;

use attractor::engine::StrategyKind;
use attractor::executor::{
    EditAction, ExecutionRequest, ExecutionStatus, Executor, ExecutorError, LlmExecutor, LlmExecutorConfig,
    PromptInputs, RevertTarget, Specification,
};
use attractor::llm::scripted::{Scripted, ScriptedServer};
use attractor::llm::{LlmClient, LlmConfig};
use attractor::workspace::{Workspace, WorkspaceConfig};
use serde_json::json;

struct Setup {
    dir: tempfile::TempDir,
    ws: Workspace,
}

impl Setup {
    async fn new(config: WorkspaceConfig) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("task");
        std::fs::create_dir_all(src.join("src")).unwrap();
        std::fs::write(src.join("src/lib.rs"), "pub fn parse(s: &str) -> i64 { s.parse().unwrap() }\n").unwrap();
        std::fs::write(src.join("old.txt"), "obsolete\n").unwrap();
        let ws = Workspace::create(&src, &dir.path().join("ws"), config).await.unwrap();
        Setup { dir, ws }
    }

    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }
}

fn executor(server: &ScriptedServer) -> LlmExecutor {
    let config = LlmConfig::new(server.base_url(), "test-model")
        .with_retries(0, Duration::from_millis(10))
        .with_timeout(Duration::from_secs(10));
    LlmExecutor::new(LlmClient::new(config).unwrap(), LlmExecutorConfig::default())
}

fn request(sequence: u32, strategy: StrategyKind) -> ExecutionRequest {
    let inputs = PromptInputs {
        task_name: "parser".into(),
        specification: Specification::new("Make `parse` return an error instead of panicking."),
        hints: vec!["Return Result<i64, String>.".into()],
        ..PromptInputs::default()
    };
    ExecutionRequest::new(sequence, strategy, inputs)
}

fn git_log(root: &Path) -> Vec<String> {
    let out = std::process::Command::new("git").args(["log", "--format=%s"]).current_dir(root).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

const FIXED: &str =
    "pub fn parse(s: &str) -> Result<i64, String> {\n    s.trim().parse().map_err(|e| format!(\"{e}\"))\n}\n";

#[tokio::test]
async fn a_reply_that_writes_a_file_is_applied_and_committed() {
    let mut s = Setup::new(WorkspaceConfig::default()).await;
    let reply = json!({
        "summary": "parse returns a Result now",
        "tools_used": ["str::parse"],
        "edits": [
            {"path": "src/lib.rs", "action": "write", "content": FIXED},
            {"path": "old.txt", "action": "delete"}
        ]
    });
    let server = ScriptedServer::start(vec![Scripted::json(&reply)]).await.unwrap();
    let before = s.ws.head().unwrap().to_string();
    let e = executor(&server).execute(&request(1, StrategyKind::RetryWithFeedback), &mut s.ws).await.unwrap();

    assert_eq!(e.status, ExecutionStatus::Completed);
    assert_eq!(std::fs::read_to_string(s.ws.root().join("src/lib.rs")).unwrap(), FIXED);
    assert!(!s.ws.root().join("old.txt").exists());
    assert_eq!(e.applied.len(), 2);
    assert_eq!(e.applied[1].action, EditAction::Delete);
    assert!(e.rejected.is_empty());
    assert_eq!(e.rejection_count(), 0);
    assert_eq!((e.artifact.files_changed, e.artifact.lines_changed), (2, 5));
    assert_ne!(e.artifact.commit, before);
    assert_eq!(s.ws.head(), Some(e.artifact.commit.as_str()));
    assert_eq!(git_log(s.ws.root())[0], "observation 1: retry_with_feedback");
    assert!(e.tokens > 0, "usage from the server's reply");
    assert_eq!(e.tools_used, vec!["str::parse"]);
    assert_eq!(e.summary, "parse returns a Result now");

    // What was sent: the reply's schema, a token budget, the reply contract,
    // the prompt with hints first and the file.
    let sent = &server.requests()[0];
    let format = &sent.json()["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["schema"]["required"], serde_json::json!(["summary", "edits"]));
    assert_eq!(sent.json()["max_tokens"], 3072, "the executor role's default budget");
    let messages = sent.messages();
    assert!(messages[0].1.contains("Reply with one JSON object"), "{}", messages[0].1);
    assert!(messages[1].1.starts_with("## Hints from a person"));
    assert!(messages[1].1.contains("s.parse().unwrap()"), "the file is in the prompt");
    server.shutdown().await;
}

#[tokio::test]
async fn unsafe_edits_are_refused_and_nothing_is_written_outside() {
    let config = WorkspaceConfig { max_file_bytes: 1000, ..WorkspaceConfig::default() };
    let mut s = Setup::new(config).await;
    std::fs::create_dir(s.outside()).unwrap();
    std::fs::write(s.outside().join("keep.txt"), "keep\n").unwrap();
    std::os::unix::fs::symlink(s.outside(), s.ws.root().join("out")).unwrap();
    s.ws.commit("a link to a folder outside").await.unwrap();
    let absolute = s.outside().join("abs.txt").display().to_string();

    let reply = json!({
        "summary": "various",
        "edits": [
            {"path": "../escape.txt", "action": "write", "content": "x"},
            {"path": absolute, "action": "write", "content": "x"},
            {"path": "out/through-link.txt", "action": "write", "content": "x"},
            {"path": "out/keep.txt", "action": "delete"},
            {"path": ".git/config", "action": "write", "content": "[core]"},
            {"path": "big.bin", "action": "write", "content": "y".repeat(1001)},
            {"path": "notes.txt", "action": "write"},
            {"path": "src/lib.rs", "action": "write", "content": FIXED}
        ]
    });
    let server = ScriptedServer::start(vec![Scripted::json(&reply)]).await.unwrap();
    let e = executor(&server).execute(&request(2, StrategyKind::FocusedRepair), &mut s.ws).await.unwrap();

    assert_eq!(e.status, ExecutionStatus::Completed);
    assert_eq!(e.applied.iter().map(|a| a.path.as_str()).collect::<Vec<_>>(), vec!["src/lib.rs"]);
    let reasons: Vec<(&str, &str)> = e.rejected.iter().map(|r| (r.path.as_str(), r.reason.as_str())).collect();
    assert_eq!(reasons.len(), 7, "{reasons:#?}");
    assert!(reasons[0].1.contains("`..` is not allowed"));
    assert!(reasons[1].1.contains("absolute paths are not allowed"));
    assert!(reasons[2].1.contains("symbolic link that leads outside the workspace"));
    assert!(reasons[3].1.contains("symbolic link that leads outside the workspace"));
    assert!(reasons[4].1.contains("`.git`"));
    assert!(reasons[5].1.contains("1001 bytes, over the limit of 1000"));
    assert!(reasons[6].1.contains("needs `content`"));
    assert_eq!(e.rejection_count(), 7);

    // Nothing outside changed; the safe edit landed and was committed alone.
    assert!(!s.dir.path().join("escape.txt").exists());
    let outside: Vec<_> = std::fs::read_dir(s.outside()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(outside, vec![std::ffi::OsString::from("keep.txt")]);
    assert!(!s.ws.root().join("big.bin").exists());
    assert_eq!(e.artifact.files_changed, 1);
    let config = std::fs::read_to_string(s.ws.root().join(".git/config")).unwrap();
    assert!(config.contains("repositoryformatversion"), "the repository's config is intact");
    server.shutdown().await;
}

#[tokio::test]
async fn a_reply_using_a_blocked_tool_is_rejected_whole() {
    let mut s = Setup::new(WorkspaceConfig::default()).await;
    let reply = json!({
        "summary": "used a regex",
        "tools_used": ["Regex"],
        "edits": [{"path": "src/lib.rs", "action": "write", "content": FIXED}]
    });
    let server = ScriptedServer::start(vec![Scripted::json(&reply)]).await.unwrap();
    let mut req = request(3, StrategyKind::AlternativeApproach);
    req.inputs.blocked_tools = vec!["regex".into()];
    let e = executor(&server).execute(&req, &mut s.ws).await.unwrap();

    let ExecutionStatus::Rejected { reason } = &e.status else { panic!("not rejected: {:?}", e.status) };
    assert!(reason.contains("`Regex`") && reason.contains("nothing was written"), "{reason}");
    assert!(e.applied.is_empty());
    assert_eq!(e.rejected.len(), 1);
    assert_eq!(e.rejection_count(), 1);
    assert!(std::fs::read_to_string(s.ws.root().join("src/lib.rs")).unwrap().contains("unwrap()"));
    assert_eq!((e.artifact.files_changed, e.artifact.lines_changed), (0, 0));
    // The prompt told the model.
    assert!(server.requests()[0].messages()[1].1.contains("MUST NOT use `regex` in this attempt."));
    server.shutdown().await;
}

#[tokio::test]
async fn revert_and_branch_resets_the_workspace_before_asking() {
    let mut s = Setup::new(WorkspaceConfig::default()).await;
    let first = s.ws.commit("observation 1").await.unwrap();
    s.ws.write_file("src/lib.rs", b"pub fn parse(_: &str) -> i64 { 0 } // WORSE-STATE\n").unwrap();
    s.ws.commit("observation 2").await.unwrap();

    let reply =
        json!({"summary": "branched", "edits": [{"path": "src/branch.rs", "action": "write", "content": "// new\n"}]});
    let server = ScriptedServer::start(vec![Scripted::json(&reply)]).await.unwrap();
    let mut req = request(3, StrategyKind::RevertAndBranch);
    req.revert_to = Some(RevertTarget { sequence: 1, artifact: first.clone() });
    let e = executor(&server).execute(&req, &mut s.ws).await.unwrap();

    assert!(
        std::fs::read_to_string(s.ws.root().join("src/lib.rs")).unwrap().contains("unwrap()"),
        "reset to observation 1"
    );
    assert!(s.ws.root().join("src/branch.rs").exists());
    assert_eq!(e.artifact.files_changed, 1, "churn is measured from the state branched from");
    let diff = s.ws.diff(&first.commit, &e.artifact.commit).await.unwrap();
    assert!(diff.contains("+++ b/src/branch.rs") && !diff.contains("WORSE-STATE"), "{diff}");
    let user = &server.requests()[0].messages()[1].1;
    assert!(
        user.contains(&format!("The workspace was reset to observation 1 (commit {})", &first.commit[..12])),
        "{user}"
    );
    assert!(!user.contains("WORSE-STATE"), "the prompt shows the files as reset");

    // Without a target the strategy cannot run.
    let err = executor(&server).execute(&request(4, StrategyKind::RevertAndBranch), &mut s.ws).await.unwrap_err();
    assert!(matches!(err, ExecutorError::MissingRevertTarget), "{err}");
    server.shutdown().await;
}

#[tokio::test]
async fn subtasks_and_amendments_come_back_and_a_server_error_is_an_error() {
    let mut s = Setup::new(WorkspaceConfig::default()).await;
    let reply = json!({"summary": "planned", "subtasks": ["handle signs", "reject overflow"], "amendments": ["empty input is an error"], "edits": []});
    let server =
        ScriptedServer::start(vec![Scripted::fenced(&reply.to_string()), Scripted::bad_request("model not loaded")])
            .await
            .unwrap();
    let e = executor(&server).execute(&request(1, StrategyKind::Decompose), &mut s.ws).await.unwrap();
    assert_eq!(e.subtasks, vec!["handle signs", "reject overflow"]);
    assert_eq!(e.amendments, vec!["empty input is an error"]);
    assert_eq!(e.artifact.files_changed, 0);

    let before = s.ws.head().unwrap().to_string();
    let err = executor(&server).execute(&request(2, StrategyKind::RetryWithFeedback), &mut s.ws).await.unwrap_err();
    assert!(matches!(err, ExecutorError::Llm(_)), "{err}");
    assert_eq!(s.ws.head(), Some(before.as_str()), "no commit after a failed call");
    server.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_call_leaves_the_workspace_unchanged() {
    let mut s = Setup::new(WorkspaceConfig::default()).await;
    let reply = json!({"summary": "late", "edits": [{"path": "late.txt", "action": "write", "content": "x"}]});
    let server =
        ScriptedServer::start(vec![Scripted::delayed(Duration::from_secs(5), Scripted::json(&reply))]).await.unwrap();
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut req = request(1, StrategyKind::RetryWithFeedback);
    req.cancel = Some(rx);
    let before = s.ws.head().unwrap().to_string();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let _ = tx.send(true);
    });
    // The reply would arrive after 5 s; a cancel seen first is the only way to
    // get `Cancelled` back.
    let err = executor(&server).execute(&req, &mut s.ws).await.unwrap_err();
    assert!(matches!(err, ExecutorError::Cancelled), "{err}");
    assert_eq!(s.ws.head(), Some(before.as_str()));
    assert!(!s.ws.root().join("late.txt").exists());
}

#[tokio::test]
async fn search_replace_edits_apply_tolerantly_and_a_miss_is_refused_with_the_closest_lines() {
    let mut s = Setup::new(WorkspaceConfig::default()).await;
    std::fs::write(
        s.ws.root().join("src/lib.rs"),
        "pub fn parse(s: &str) -> i64 {\n    s.parse().unwrap()\n}\n\npub fn twice(n: i64) -> i64 {\n    n * 2\n}\n",
    )
    .unwrap();
    s.ws.commit("two functions").await.unwrap();
    let reply = json!({
        "summary": "parse returns a Result; twice left alone",
        "edits": [
            // Copied without its indentation: found, and re-indented.
            {"path": "src/lib.rs", "action": "replace",
             "search": "pub fn parse(s: &str) -> i64 {\ns.parse().unwrap()",
             "replace": "pub fn parse(s: &str) -> i64 {\ns.trim().parse().unwrap_or(0)"},
            // Nothing like it in the file: refused, with the closest lines quoted.
            {"path": "src/lib.rs", "action": "replace", "search": "pub fn twice(x: u8) -> u8 {\n    x + x", "replace": "?"},
            // A replace without its blocks, and one on a missing file.
            {"path": "src/lib.rs", "action": "replace", "content": "whole file"},
            {"path": "src/missing.rs", "action": "replace", "search": "a", "replace": "b"},
            // An empty search creates a new file.
            {"path": "src/new.rs", "action": "replace", "search": "", "replace": "pub const N: i64 = 1;\n"}
        ]
    });
    let server = ScriptedServer::start(vec![Scripted::json(&reply)]).await.unwrap();
    let e = executor(&server).execute(&request(1, StrategyKind::RetryWithFeedback), &mut s.ws).await.unwrap();

    let lib = std::fs::read_to_string(s.ws.root().join("src/lib.rs")).unwrap();
    assert!(lib.contains("{\n    s.trim().parse().unwrap_or(0)\n}"), "re-indented in place: {lib}");
    assert!(lib.contains("    n * 2"), "the rest of the file kept: {lib}");
    assert_eq!(std::fs::read_to_string(s.ws.root().join("src/new.rs")).unwrap(), "pub const N: i64 = 1;\n");
    let applied: Vec<_> = e.applied.iter().map(|a| (a.path.as_str(), a.note.as_deref())).collect();
    assert_eq!(
        applied,
        vec![("src/lib.rs", Some("matched ignoring indentation")), ("src/new.rs", Some("matched exactly"))]
    );
    assert_eq!(e.rejected.len(), 3, "{:?}", e.rejected);
    assert!(e.rejected[0].reason.contains("does not match the file"), "{}", e.rejected[0].reason);
    assert!(
        e.rejected[0].reason.contains("pub fn twice(n: i64) -> i64 {"),
        "the closest lines: {}",
        e.rejected[0].reason
    );
    assert!(e.rejected[1].reason.contains("needs `search`"), "{}", e.rejected[1].reason);
    assert!(e.rejected[2].reason.contains("no such file"), "{}", e.rejected[2].reason);
    assert!(e.rejected.iter().all(|r| r.action == EditAction::Replace));
    // The schema offers the three actions and the replace fields.
    let schema = &server.requests()[0].json()["response_format"]["json_schema"]["schema"];
    let text = schema.to_string();
    assert!(text.contains("\"replace\"") && text.contains("\"search\""), "{text}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_whole_file_write_over_a_large_file_is_refused_and_small_files_are_rewritten() {
    let mut s = Setup::new(WorkspaceConfig::default()).await;
    let big = "// line\n".repeat(3000);
    std::fs::write(s.ws.root().join("big.rs"), &big).unwrap();
    s.ws.commit("a large file").await.unwrap();
    let reply = json!({
        "summary": "rewrote both",
        "edits": [
            {"path": "big.rs", "action": "write", "content": "// the rest is unchanged\n"},
            {"path": "src/lib.rs", "action": "write", "content": FIXED}
        ]
    });
    let server = ScriptedServer::start(vec![Scripted::json(&reply)]).await.unwrap();
    let e = executor(&server).execute(&request(1, StrategyKind::RetryWithFeedback), &mut s.ws).await.unwrap();
    assert_eq!(std::fs::read_to_string(s.ws.root().join("big.rs")).unwrap(), big, "the large file is untouched");
    assert_eq!(std::fs::read_to_string(s.ws.root().join("src/lib.rs")).unwrap(), FIXED);
    assert_eq!(e.rejected.len(), 1);
    assert!(e.rejected[0].reason.contains("use a replace edit"), "{}", e.rejected[0].reason);
    server.shutdown().await;
}
