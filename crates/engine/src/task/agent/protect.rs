//! The files an overseer's verdict depends on are read-only to the executor.
//!
//! An executor that deletes the failing tests, marks them skipped, empties a
//! test file or rewrites the test configuration makes the overseers say
//! "pass" without the task being done — and the loss would reward it. So
//! the tests, their configuration, CI files and the scripts the overseers
//! run (inferred, unless the task says `infer_protected: false`), plus what
//! the task lists under `protected:`, may not change: after every execution
//! the changes to them are undone (restored from the state before it), and
//! each is refused as a gate rejection the model is told about in its next
//! prompt and the trajectory records.

use std::path::Path;

use globset::{GlobSet, GlobSetBuilder};

use crate::suite::patterns::glob;

use crate::executor::{EditAction, Execution, RejectedEdit};
use crate::suite::AgentTask;
use crate::workspace::{Workspace, WorkspaceError};

/// What is protected without being listed: test folders and files of the
/// common ecosystems, test runner configuration, CI definitions.
pub const INFERRED: &[&str] = &[
    "test/**",
    "tests/**",
    "**/test/**",
    "**/tests/**",
    "spec/**",
    "**/spec/**",
    "**/__tests__/**",
    "**/test_*.py",
    "**/*_test.py",
    "**/conftest.py",
    "**/*_test.go",
    "**/*_test.rs",
    "**/*.test.*",
    "**/*.spec.*",
    "**/*Test.java",
    "**/*Tests.java",
    "**/*_spec.rb",
    "**/pytest.ini",
    "**/tox.ini",
    "**/.coveragerc",
    "**/jest.config.*",
    "**/vitest.config.*",
    // The files jest and vitest run before every test file (custom matchers).
    "**/jest.setup.*",
    "**/vitest.setup.*",
    "**/setupTests.*",
    "**/karma.conf.*",
    "**/phpunit.xml*",
    "**/tests.py",
    "**/tests.rs",
    "**/testdata/**",
    "**/noxfile.py",
    // What configures how the test runner itself runs: cargo's runner and
    // flags, Python's start-up hooks (code that runs before any test).
    "**/.cargo/**",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/setup.cfg",
    "**/pyproject.toml",
    "**/package.json",
    "**/Cargo.toml",
    "**/Makefile",
    // Compiled caches: a crafted one would stand in for a test's source.
    "**/__pycache__/**",
    ".github/**",
    ".gitlab-ci.yml",
    ".circleci/**",
    ".travis.yml",
    "azure-pipelines.yml",
    "Jenkinsfile",
];

/// Why a change to a protected file was undone (what the model reads).
pub const REASON: &str = "this file is protected — the overseers' verdict depends on it (a test, its \
                          configuration, CI, an overseer's script, or listed under `protected:`); the change \
                          was undone: make the code pass the checks as they are";

/// The protected files of one task.
#[derive(Debug, Clone)]
pub struct Protection {
    set: GlobSet,
    patterns: Vec<String>,
    /// Files the overseers write by design (their `report:`): not
    /// tampering when they appear during a measurement.
    reports: Vec<String>,
}

impl Protection {
    /// The task's `protected:` globs, the inferred ones unless turned off,
    /// and every file of `workspace` an overseer's command names.
    pub fn of(spec: &AgentTask, workspace: &Path) -> Protection {
        let mut patterns: Vec<String> = spec.protected.clone();
        if spec.infer_protected {
            patterns.extend(INFERRED.iter().map(|p| (*p).to_string()));
            for o in &spec.overseers {
                patterns.extend(scripts_named(&o.command, workspace).into_iter().map(|s| globset::escape(&s)));
            }
        }
        patterns.sort();
        patterns.dedup();
        let mut builder = GlobSetBuilder::new();
        // Patterns were checked when the suite was read; one that still does
        // not compile protects nothing rather than failing the run.
        for p in &patterns {
            if let Ok(glob) = glob(p) {
                builder.add(glob);
            }
        }
        let set = builder.build().unwrap_or_else(|_| GlobSet::empty());
        let reports = spec.overseers.iter().filter_map(|o| o.report.clone()).collect();
        Protection { set, patterns, reports }
    }

    /// Whether the file at `path` (relative, `/`-separated) is protected.
    pub fn covers(&self, path: &str) -> bool {
        self.set.is_match(path)
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Undoes `execution`'s changes to protected files since `before` (the
    /// state it started from): they are restored and committed as the
    /// execution's result, and each one becomes a refused edit. Returns the
    /// paths undone.
    pub async fn enforce(
        &self,
        ws: &mut Workspace,
        before: &str,
        execution: &mut Execution,
    ) -> Result<Vec<String>, WorkspaceError> {
        // Ignored files never reach a commit: one under protection (a
        // `conftest.py` hidden by an ignore rule the executor added, a
        // crafted bytecode cache) is simply removed — the checks' own
        // caches come back next run. (So `.gitignore` itself can stay
        // editable.)
        for path in ws.ignored_files().await?.into_iter().filter(|p| self.covers(p)) {
            let full = ws.root().join(&path);
            if std::fs::symlink_metadata(&full).is_ok_and(|m| !m.is_dir()) {
                std::fs::remove_file(&full).map_err(|source| WorkspaceError::Io {
                    action: "remove",
                    path: full,
                    source,
                })?;
            }
        }
        let changed = ws.changes(before, &execution.artifact.commit).await?;
        let touched: Vec<String> = changed.into_iter().map(|c| c.path).filter(|p| self.covers(p)).collect();
        if touched.is_empty() {
            return Ok(touched);
        }
        let message = format!("undo the changes to protected files: {}", touched.join(", "));
        let restored = ws.restore_paths(before, &touched, &message).await?;
        // The restore's own counts are about the undo; the execution's net
        // change is what remains of it.
        let net = ws.changes(before, &restored.commit).await?;
        execution.artifact = crate::workspace::ArtifactReference {
            commit: restored.commit,
            files_changed: u32::try_from(net.len()).unwrap_or(u32::MAX),
            lines_changed: net
                .iter()
                .map(|c| c.added.unwrap_or(0).saturating_add(c.removed.unwrap_or(0)))
                .fold(0u32, u32::saturating_add),
        };
        for path in &touched {
            let action = if ws.root().join(path).exists() { EditAction::Write } else { EditAction::Delete };
            // What a model asked for and got refused is already on the list;
            // what reached the workspace and was undone is added.
            execution.applied.retain(|a| &a.path != path);
            execution.rejected.push(RejectedEdit { path: path.clone(), action, reason: REASON.to_string() });
        }
        Ok(touched)
    }
}

/// The name of the failing check a measurement gets when protected files
/// changed while the overseers ran.
pub const TAMPERED_CHECK: &str = "protected-files";

impl Protection {
    /// After a measurement: protected files the measured code changed while
    /// the checks ran (a test module rewritten before it was collected).
    /// They are put back (the workspace returns to the execution's commit),
    /// and the measurement gets a failing check and the execution a refused
    /// edit per file, so the state cannot pass on a rigged measurement.
    pub async fn check_measurement(
        &self,
        ws: &mut Workspace,
        signals: &mut crate::overseer::OverseerSignals,
        execution: &mut Execution,
    ) -> Result<Vec<String>, WorkspaceError> {
        let tampered: Vec<String> = ws
            .uncommitted_changes()
            .await?
            .into_iter()
            .filter(|p| self.covers(p) && !self.reports.contains(p))
            .collect();
        if tampered.is_empty() {
            return Ok(tampered);
        }
        if let Some(head) = ws.head().map(str::to_string) {
            ws.reset_to(&head).await?;
        }
        signals.custom_checks.push(crate::overseer::signals::CustomCheckResult {
            name: TAMPERED_CHECK.to_string(),
            passed: false,
            detail: format!("protected files changed while the checks ran: {}", tampered.join(", ")),
            required: true,
        });
        for path in &tampered {
            execution.rejected.push(RejectedEdit {
                path: path.clone(),
                action: EditAction::Write,
                reason: format!("{REASON} (it was changed while the checks ran, so that measurement does not count)"),
            });
        }
        Ok(tampered)
    }
}

/// The scripts of `workspace` an overseer's command runs: a command word
/// that is a file of the workspace (`./check.sh`), or the script an
/// interpreter is given (`python3 scripts/verify.py`, `bash ci/test.sh`) —
/// not the files a command merely reads or checks (`py_compile slug.py`
/// names the code under test).
fn scripts_named(command: &str, workspace: &Path) -> Vec<String> {
    const INTERPRETERS: &[&str] =
        &["sh", "bash", "zsh", "dash", "python", "python3", "node", "ruby", "perl", "php", "deno", "bun", "pwsh"];
    let clean = |w: &str| {
        let w = w.trim_matches(|c| matches!(c, '\'' | '"' | '`'));
        w.strip_prefix("./").unwrap_or(w).to_string()
    };
    let is_file = |w: &str| {
        !w.is_empty() && !w.starts_with('/') && !w.split('/').any(|p| p == "..") && workspace.join(w).is_file()
    };
    let mut out = Vec::new();
    for segment in command.split(|c| matches!(c, ';' | '&' | '|' | '(' | ')' | '\n')) {
        // `VAR=value cmd …`: the assignments come first.
        let mut words = segment.split_whitespace().skip_while(|w| w.contains('=') && !w.starts_with('-')).map(clean);
        let Some(first) = words.next() else { continue };
        if is_file(&first) {
            out.push(first);
            continue;
        }
        let name = first.rsplit('/').next().unwrap_or(&first);
        let interpreter =
            INTERPRETERS.iter().any(|i| name == *i || name.strip_prefix(i).is_some_and(|v| v.starts_with('.')));
        if !interpreter {
            continue;
        }
        for w in words {
            // `-m module`, `-c code`, `-e code`: no script file follows.
            if matches!(w.as_str(), "-m" | "-c" | "-e" | "--eval") {
                break;
            }
            if w.starts_with('-') {
                continue;
            }
            if is_file(&w) {
                out.push(w);
            }
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::{Overseer, OverseerKind};

    fn spec(protected: &[&str], infer: bool, commands: &[&str]) -> AgentTask {
        AgentTask {
            workspace: None,
            executor: None,
            overseers: commands
                .iter()
                .enumerate()
                .map(|(i, c)| Overseer::new(format!("o{i}"), OverseerKind::Custom, *c))
                .collect(),
            supervision: Default::default(),
            protected: protected.iter().map(|p| (*p).to_string()).collect(),
            infer_protected: infer,
            targets: Vec::new(),
            forbidden: vec![],
        }
    }

    #[test]
    fn tests_their_configuration_ci_and_the_overseers_scripts_are_protected_by_default() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("scripts")).unwrap();
        std::fs::write(ws.path().join("check.sh"), "true").unwrap();
        std::fs::write(ws.path().join("scripts/verify.py"), "").unwrap();
        let p =
            Protection::of(&spec(&["golden/*.json"], true, &["./check.sh && python3 scripts/verify.py -q"]), ws.path());
        for path in [
            "tests/test_api.py",
            "pkg/tests/helpers.py",
            "test_squares.py",
            "pkg/sub/test_x.py",
            "conftest.py",
            "src/lib_test.go",
            "ui/app.test.tsx",
            "pytest.ini",
            ".github/workflows/ci.yml",
            "check.sh",
            "scripts/verify.py",
            "golden/out.json",
        ] {
            assert!(p.covers(path), "{path} is not protected");
        }
        for path in ["slug.py", "src/lib.rs", "scripts/other.py", "testing.md", "latest.py", "golden/x/y.json"] {
            assert!(!p.covers(path), "{path} is protected");
        }
    }

    #[test]
    fn a_task_that_writes_tests_turns_the_inference_off_and_keeps_what_it_lists() {
        let ws = tempfile::tempdir().unwrap();
        let p = Protection::of(&spec(&["fixtures/**"], false, &["python3 -m pytest"]), ws.path());
        assert!(!p.covers("tests/test_new.py"));
        assert!(p.covers("fixtures/data.csv"));
        assert_eq!(p.patterns(), ["fixtures/**"]);
    }

    #[tokio::test]
    async fn protected_files_changed_while_the_checks_ran_void_the_measurement() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("tests")).unwrap();
        std::fs::write(src.join("code.py"), "x = 1\n").unwrap();
        std::fs::write(src.join("tests/test_code.py"), "assert True\n").unwrap();
        let mut ws = Workspace::create(&src, &dir.path().join("ws"), Default::default()).await.unwrap();
        let mut spec = spec(&[], true, &["python3 -m pytest"]);
        spec.overseers[0].report = Some("tests/junit.xml".into());
        let p = Protection::of(&spec, ws.root());
        let mut signals = crate::overseer::OverseerSignals::default();
        let mut execution = execution(ws.head().unwrap());
        // An honest run writes only its report: nothing to say.
        std::fs::write(ws.root().join("tests/junit.xml"), "<testsuite/>").unwrap();
        assert!(p.check_measurement(&mut ws, &mut signals, &mut execution).await.unwrap().is_empty());
        // The measured code rewrites a test and drops a conftest while the checks run.
        std::fs::write(ws.root().join("tests/test_code.py"), "").unwrap();
        std::fs::write(ws.root().join("conftest.py"), "collect_ignore = ['tests']\n").unwrap();
        let tampered = p.check_measurement(&mut ws, &mut signals, &mut execution).await.unwrap();
        assert_eq!(tampered, ["conftest.py", "tests/test_code.py"]);
        assert_eq!(std::fs::read_to_string(ws.root().join("tests/test_code.py")).unwrap(), "assert True\n");
        assert!(!ws.root().join("conftest.py").exists());
        let check = signals.custom_checks.iter().find(|c| c.name == TAMPERED_CHECK).expect("a failing check");
        assert!(!check.passed && check.detail.contains("conftest.py"), "{check:?}");
        assert_eq!(execution.rejection_count(), 2);
    }

    fn execution(commit: &str) -> Execution {
        Execution {
            artifact: crate::workspace::ArtifactReference { commit: commit.to_string(), ..Default::default() },
            tokens: 0,
            wall_time: std::time::Duration::ZERO,
            summary: String::new(),
            applied: Vec::new(),
            rejected: Vec::new(),
            tools_used: Vec::new(),
            status: crate::executor::ExecutionStatus::Completed,
            subtasks: Vec::new(),
            amendments: Vec::new(),
            left_running: Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_change_to_a_protected_file_is_undone_and_refused_while_the_rest_stays() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("tests")).unwrap();
        std::fs::write(src.join("code.py"), "x = 1\n").unwrap();
        std::fs::write(src.join("tests/test_code.py"), "assert True\n").unwrap();
        std::fs::write(src.join("test_other.py"), "assert True\n").unwrap();
        let mut ws = Workspace::create(&src, &dir.path().join("ws"), Default::default()).await.unwrap();
        let before = ws.head().unwrap().to_string();
        // An execution: fixes the code, empties one test, deletes another, adds a conftest.
        std::fs::write(ws.root().join("code.py"), "x = 2\n").unwrap();
        std::fs::write(ws.root().join("tests/test_code.py"), "").unwrap();
        std::fs::remove_file(ws.root().join("test_other.py")).unwrap();
        std::fs::write(ws.root().join("conftest.py"), "collect_ignore = ['tests']\n").unwrap();
        // A name git would quote, and a cache git ignores.
        std::fs::write(ws.root().join("tests/we\"ird\tname.py"), "import sys\n").unwrap();
        std::fs::create_dir_all(ws.root().join("__pycache__")).unwrap();
        std::fs::write(ws.root().join("__pycache__/test_other.cpython-311.pyc"), "crafted").unwrap();
        let artifact = ws.commit("execution").await.unwrap();
        let mut execution = Execution { artifact, ..execution("") };
        let p = Protection::of(&spec(&[], true, &[]), ws.root());
        let mut undone = p.enforce(&mut ws, &before, &mut execution).await.unwrap();
        undone.sort();
        assert_eq!(undone, ["conftest.py", "test_other.py", "tests/test_code.py", "tests/we\"ird\tname.py"]);
        assert!(!ws.root().join("tests/we\"ird\tname.py").exists());
        assert!(!ws.root().join("__pycache__/test_other.cpython-311.pyc").exists(), "the crafted cache is gone");
        assert_eq!(std::fs::read_to_string(ws.root().join("code.py")).unwrap(), "x = 2\n", "the fix stays");
        assert_eq!(std::fs::read_to_string(ws.root().join("tests/test_code.py")).unwrap(), "assert True\n");
        assert!(ws.root().join("test_other.py").exists());
        assert!(!ws.root().join("conftest.py").exists());
        assert_eq!(execution.rejection_count(), 4);
        assert_eq!((execution.artifact.files_changed, execution.artifact.commit.as_str()), (1, ws.head().unwrap()));
        assert!(execution.rejected.iter().all(|r| r.reason == REASON));
    }
}
