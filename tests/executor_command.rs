//! The command executor with real scripts as the "coding agent": the prompt
//! file, the edits it makes, its report, its timeout (the whole process
//! group is killed), blocked tools, and an agent that cannot run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use attractor::engine::StrategyKind;
use attractor::executor::{
    CommandExecutor, CommandExecutorConfig, EditAction, ExecutionRequest, ExecutionStatus, Executor, PromptInputs,
    Specification,
};
use attractor::overseer::FailureClass;
use attractor::workspace::{Workspace, WorkspaceConfig};

struct Setup {
    dir: tempfile::TempDir,
    ws: Workspace,
}

impl Setup {
    async fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("task");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("notes.txt"), "first line\n").unwrap();
        let ws = Workspace::create(&src, &dir.path().join("ws"), WorkspaceConfig::default()).await.unwrap();
        Setup { dir, ws }
    }

    /// An executable script outside the workspace (the agent is not part of the task).
    fn agent(&self, body: &str) -> PathBuf {
        let path = self.dir.path().join("agent.sh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }
}

fn request(strategy: StrategyKind) -> ExecutionRequest {
    let inputs = PromptInputs {
        specification: Specification::new("Append a second line to notes.txt."),
        hints: vec!["The second line says `second line`.".into()],
        blocked_tools: vec!["curl".into()],
        ..PromptInputs::default()
    };
    ExecutionRequest::new(4, strategy, inputs)
}

fn executor(command: String, timeout_secs: f64) -> CommandExecutor {
    CommandExecutor::new(CommandExecutorConfig { command, timeout_secs, ..CommandExecutorConfig::default() })
}

#[tokio::test]
async fn the_agent_reads_the_prompt_file_edits_the_workspace_and_the_result_is_committed() {
    let mut s = Setup::new().await;
    let agent = s.agent(
        r#"# $1 is {prompt_file}; it must be the same file as $ATTRACTOR_PROMPT_FILE.
[ "$1" = "$ATTRACTOR_PROMPT_FILE" ] || { echo "prompt file mismatch: $1" >&2; exit 9; }
grep -q "second line" "$1" || { echo "the hint is not in the prompt" >&2; exit 8; }
grep -q "MUST NOT use \`curl\`" "$1" || { echo "no MUST NOT line" >&2; exit 7; }
echo "second line" >> notes.txt
printf 'new\n' > added.txt
printf '{"summary": "appended the line", "tokens": 1234, "tools_used": ["sh", "printf"]}' > "$ATTRACTOR_EXECUTION_FILE"
"#,
    );
    let before = s.ws.head().unwrap().to_string();
    let cmd = format!("{} {{prompt_file}}", agent.display());
    let e = executor(cmd, 30.0).execute(&request(StrategyKind::RetryWithFeedback), &mut s.ws).await.unwrap();

    assert_eq!(e.status, ExecutionStatus::Completed, "{}", e.summary);
    assert_eq!(std::fs::read_to_string(s.ws.root().join("notes.txt")).unwrap(), "first line\nsecond line\n");
    assert_eq!(e.summary, "appended the line");
    assert_eq!(e.tokens, 1234);
    assert_eq!(e.tools_used, vec!["sh", "printf"]);
    let mut applied: Vec<(&str, EditAction)> = e.applied.iter().map(|a| (a.path.as_str(), a.action)).collect();
    applied.sort_by_key(|(p, _)| *p);
    assert_eq!(applied, vec![("added.txt", EditAction::Write), ("notes.txt", EditAction::Write)]);
    assert_eq!((e.artifact.files_changed, e.artifact.lines_changed), (2, 2));
    assert_ne!(e.artifact.commit, before);
    // The prompt file lives in .git/attractor: never committed, never listed.
    assert!(s.ws.root().join(".git/attractor/prompt-4.md").is_file());
    assert_eq!(s.ws.list_files().await.unwrap().files, vec!["added.txt", "notes.txt"]);
}

fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

#[tokio::test]
async fn an_agent_past_its_timeout_is_killed_with_its_children_and_its_work_so_far_committed() {
    let mut s = Setup::new().await;
    let pid_file = s.dir.path().join("child.pid");
    let agent = s.agent(&format!(
        "echo 'partial work' > partial.txt\nsleep 60 &\necho $! > {}\nwait\necho 'never' > never.txt\n",
        pid_file.display()
    ));
    let e = executor(agent.display().to_string(), 0.5)
        .execute(&request(StrategyKind::FocusedRepair), &mut s.ws)
        .await
        .unwrap();
    assert_eq!(e.status, ExecutionStatus::TimedOut { after_secs: 0.5 });
    assert_eq!(e.failure_class(), Some(FailureClass::Environmental));
    assert!(s.ws.root().join("partial.txt").exists() && !s.ws.root().join("never.txt").exists());
    assert_eq!(e.artifact.files_changed, 1, "what it did before the timeout is committed");
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    // The background `sleep 60` was in the agent's process group: gone too.
    let deadline = Instant::now() + Duration::from_secs(2);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(pid), "the agent's child {pid} survived the timeout");
}

#[tokio::test]
async fn an_agent_that_used_a_blocked_tool_has_its_changes_discarded() {
    let mut s = Setup::new().await;
    let agent = s.agent(
        "echo 'fetched' >> notes.txt\necho x > new.txt\nprintf '{\"summary\": \"downloaded it\", \"tools_used\": [\"curl\"]}' > \"$ATTRACTOR_EXECUTION_FILE\"\n",
    );
    let e = executor(agent.display().to_string(), 30.0)
        .execute(&request(StrategyKind::AlternativeApproach), &mut s.ws)
        .await
        .unwrap();
    let ExecutionStatus::Rejected { reason } = &e.status else { panic!("{:?}", e.status) };
    assert!(reason.contains("`curl`"), "{reason}");
    assert_eq!(std::fs::read_to_string(s.ws.root().join("notes.txt")).unwrap(), "first line\n");
    assert!(!s.ws.root().join("new.txt").exists());
    assert!(e.applied.is_empty());
    assert_eq!(e.rejection_count(), 1);
}

#[tokio::test]
async fn an_agent_that_is_not_installed_fails_environmentally_and_one_that_fails_logically_keeps_its_output() {
    let mut s = Setup::new().await;
    let e = executor("no-such-agent-xyz --prompt {prompt_file}".into(), 30.0)
        .execute(&request(StrategyKind::RetryWithFeedback), &mut s.ws)
        .await
        .unwrap();
    assert!(matches!(e.status, ExecutionStatus::Failed { exit_code: Some(127), .. }), "{:?}", e.status);
    assert_eq!(e.failure_class(), Some(FailureClass::Environmental));
    assert!(e.summary.contains("not found"), "{}", e.summary);

    let agent = s.agent("echo 'I could not find the bug' ; exit 3\n");
    let e = executor(agent.display().to_string(), 30.0)
        .execute(&request(StrategyKind::RetryWithFeedback), &mut s.ws)
        .await
        .unwrap();
    assert_eq!(e.failure_class(), Some(FailureClass::Logical));
    assert!(e.summary.contains("I could not find the bug"), "{}", e.summary);
}

#[tokio::test]
async fn a_prompt_path_with_spaces_reaches_the_agent_as_one_argument() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("my task");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("a.txt"), "a\n").unwrap();
    let mut ws = Workspace::create(&src, &dir.path().join("my workspace"), WorkspaceConfig::default()).await.unwrap();
    let cmd = "test -f {prompt_file} && cp {prompt_file} copied-prompt.md".to_string();
    let e = executor(cmd, 30.0).execute(&request(StrategyKind::FreshStart), &mut ws).await.unwrap();
    assert_eq!(e.status, ExecutionStatus::Completed, "{}", e.summary);
    let copied = std::fs::read_to_string(ws.root().join("copied-prompt.md")).unwrap();
    assert!(copied.starts_with("# Instructions"));
    assert!(copied.contains("## Strategy for this attempt: fresh_start"));
    assert!(copied.contains("ATTRACTOR_EXECUTION_FILE"), "the agent is told how to report");
    assert!(Path::new(&ws.root().join(".git/attractor/prompt-4.md")).exists());
}

#[tokio::test]
async fn an_agent_that_leaves_a_background_job_running_has_it_killed_and_named() {
    let mut s = Setup::new().await;
    let pid_file = s.dir.path().join("daemon.pid");
    // The job lets go of the agent's output, so nothing waits on it: only the
    // process-group check after the agent ends can find it.
    let agent =
        s.agent(&format!("sleep 45 >/dev/null 2>&1 &\necho $! > {}\necho 'more' >> notes.txt\n", pid_file.display()));
    let e = executor(agent.display().to_string(), 30.0)
        .execute(&request(StrategyKind::RetryWithFeedback), &mut s.ws)
        .await
        .unwrap();
    assert_eq!(e.status, ExecutionStatus::Completed, "{}", e.summary);
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let left: Vec<(i32, &str)> = e.left_running.iter().map(|p| (p.pid, p.command.as_str())).collect();
    assert_eq!(left, vec![(pid, "sleep 45")]);
    // Killed: gone, or a zombie waiting for its reaper.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(!alive(pid) || state.contains(") Z "), "pid {pid} still runs: {state}");
}
