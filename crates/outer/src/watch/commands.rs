//! What a suite would run on this machine, and the approval question about it.
//!
//! A file found in a watched folder came from somewhere — a download, a
//! colleague, a script — so nothing in it may run before a person has seen
//! the exact commands. This module lists them (command tasks' `command`,
//! agent tasks' executor command and overseer commands, the evaluator
//! command of an optimize task's problem file; built-in problems run none)
//! and words the ExecutionApproval question.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::store::Intervention;
use crate::suite::{ExecutorKind, SourceLocation, Suite, SuiteError, SuiteIssue, TaskKind};

/// One command a suite would run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct PlannedCommand {
    /// The task it belongs to.
    pub task: String,
    /// command (a command task's harness), executor, overseer or evaluator.
    pub role: String,
    /// The overseer's name, or the problem file of an evaluator.
    pub label: Option<String>,
    /// The command line, exactly as it will be given to `sh -c`.
    pub command: String,
}

/// Every command `suite` would run, in task order. An optimize task whose
/// problem is neither built in nor a readable problem file is an issue
/// located at its `problem:` (the watcher cannot list what it would run).
pub fn planned_commands(suite: &Suite) -> Result<Vec<PlannedCommand>, SuiteError> {
    let mut out = Vec::new();
    let mut issues = Vec::new();
    for t in &suite.tasks {
        let planned = |role: &str, label: Option<String>, command: &str| PlannedCommand {
            task: t.name.clone(),
            role: role.to_string(),
            label,
            command: command.to_string(),
        };
        match &t.kind {
            TaskKind::Command(c) => out.push(planned("command", None, &c.command)),
            TaskKind::Agent(a) => {
                if let Some(e) = &a.executor
                    && e.kind == ExecutorKind::Command
                    && let Some(c) = &e.command
                {
                    out.push(planned("executor", None, c));
                }
                for o in &a.overseers {
                    out.push(planned("overseer", Some(o.name.clone()), &o.command));
                }
            }
            TaskKind::Optimize(o) => {
                if crate::numeric::builtin(&o.problem).is_some() {
                    continue;
                }
                let file = suite.dir.join(&o.problem);
                if !file.is_file() {
                    issues.push(SuiteIssue {
                        location: t.location.clone(),
                        field: "problem".into(),
                        message: format!(
                            "unknown problem `{}`: not a built-in ({}) and no file {}",
                            o.problem,
                            crate::numeric::builtin_names().join(", "),
                            file.display()
                        ),
                        hint: Some("use a built-in problem name or a problem file path relative to this file".into()),
                    });
                    continue;
                }
                match crate::numeric::external::load_external(&file) {
                    Ok(p) => out.push(planned("evaluator", Some(o.problem.clone()), p.command())),
                    Err(e) => issues.extend(e.issues),
                }
            }
        }
    }
    if issues.is_empty() { Ok(out) } else { Err(SuiteError { issues }) }
}

/// What an approval is remembered by: the file's content hash together with
/// the command lines. The same content elsewhere shares it (and its answer),
/// even where the file's name gives its task another name; an edit — or a
/// problem file whose evaluator command changed — makes a new one, so a
/// person is asked again.
pub fn approval_key(content_hash: &str, commands: &[PlannedCommand]) -> String {
    let mut h = Sha256::new();
    h.update(b"attractor execution approval v1\n");
    h.update(content_hash.as_bytes());
    for c in commands {
        let line = serde_json::json!([c.role, c.label, c.command]).to_string();
        h.update(b"\n");
        h.update(line.as_bytes());
    }
    format!("{:x}", h.finalize())
}

/// SHA-256 of a file's bytes, hex.
pub fn content_hash(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The ExecutionApproval question for a file.
pub fn question(path: &Path, suite: &Suite, suite_id: i64, hash: &str, commands: &[PlannedCommand]) -> Intervention {
    let n = commands.len();
    let list: Vec<String> = commands.iter().map(describe).collect();
    let auto = suite.run == crate::suite::RunMode::Auto;
    Intervention {
        kind: crate::domain::InterventionKind::ExecutionApproval.as_str().to_string(),
        suite_id: Some(suite_id),
        run_id: None,
        task_name: None,
        subject: format!(
            "Allow {} to run {n} command{}?",
            path.file_name().map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned()),
            if n == 1 { "" } else { "s" }
        ),
        context_json: json!({
            "what": format!(
                "The folder watcher registered {} as suite `{}`. Running it runs the {n} command{} listed here, on this machine.",
                path.display(),
                suite.name,
                if n == 1 { "" } else { "s" }
            ),
            "why": "A file dropped into a watched folder could run anything. Nothing in it runs until a person approves exactly these commands; the approval covers this content only, so an edit asks again.",
            "evidence": {
                "file": path.display().to_string(),
                "content_hash": hash,
                "suite": suite.name,
                "run": suite.run.as_str(),
                "commands": list,
            },
            "commands": commands,
            "proposed_action": "run_commands",
            "proposal": if auto {
                "Approve to allow these commands for this content; the file asks for `run: auto`, so one run starts now. Reject to keep it registered without running it."
            } else {
                "Approve to allow these commands for this content (the suite can then be launched). Reject to keep it registered without running it."
            },
        })
        .to_string(),
    }
}

/// One command as a line a person reads: `alpha (command): python3 x.py`.
pub fn describe(c: &PlannedCommand) -> String {
    match &c.label {
        Some(l) => format!("{} ({} {l}): {}", c.task, c.role, c.command),
        None => format!("{} ({}): {}", c.task, c.role, c.command),
    }
}

/// Where a file-level problem (unreadable, not UTF-8, too large) is reported.
pub fn file_issue(path: &Path, message: impl Into<String>, hint: &str) -> SuiteIssue {
    SuiteIssue {
        location: SourceLocation { file: path.to_path_buf(), line: 1, column: 1 },
        field: String::new(),
        message: message.into(),
        hint: Some(hint.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite(yaml: &str, dir: &Path) -> Suite {
        let path = dir.join("s.suite.yaml");
        std::fs::write(&path, yaml).unwrap();
        crate::suite::load(&path).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_kind_of_command_is_listed_and_builtin_problems_run_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("p.yaml"),
            "name: p\ncommand: python3 eval.py\nvariables:\n  - { name: x, min: 0, max: 1 }\n",
        )
        .unwrap();
        let s = suite(
            r#"name: s
tasks:
  - name: harness
    command: ./score.sh --fast
  - name: agent
    task: Fix the bug.
    executor: { type: command, command: "my-agent --prompt-file prompt.md" }
    overseers:
      - { name: tests, command: cargo test }
  - name: builtin
    problem: g06
  - name: external
    problem: p.yaml
"#,
            dir.path(),
        );
        let got: Vec<(String, String)> =
            planned_commands(&s).unwrap().into_iter().map(|c| (c.role, c.command)).collect();
        let want = [
            ("command", "./score.sh --fast"),
            ("executor", "my-agent --prompt-file prompt.md"),
            ("overseer", "cargo test"),
            ("evaluator", "python3 eval.py"),
        ];
        assert_eq!(got, want.map(|(a, b)| (a.to_string(), b.to_string())));
        let none = suite("name: n\ntasks:\n  - name: a\n    problem: g01\n", dir.path());
        assert!(planned_commands(&none).unwrap().is_empty());
    }

    #[test]
    fn an_unknown_problem_is_located_at_its_task() {
        // The suite's own check finds it first, before any command is planned.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.suite.yaml");
        std::fs::write(&path, "name: s\ntasks:\n  - name: a\n    problem: nowhere.yaml\n").unwrap();
        let e = crate::suite::load(&path).unwrap_err();
        assert_eq!((e.issues[0].location.line, e.issues[0].location.column), (4, 14), "{e}");
    }

    #[test]
    fn the_approval_key_follows_content_and_commands() {
        let c = |cmd: &str| {
            vec![PlannedCommand { task: "a".into(), role: "command".into(), label: None, command: cmd.into() }]
        };
        assert_eq!(approval_key("h1", &c("x")), approval_key("h1", &c("x")));
        assert_ne!(approval_key("h1", &c("x")), approval_key("h2", &c("x")), "an edit asks again");
        assert_ne!(approval_key("h1", &c("x")), approval_key("h1", &c("y")), "another evaluator command asks again");
    }
}
