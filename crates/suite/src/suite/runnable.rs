//! What a suite needs of this machine before it can run — beyond what its
//! file says: the agent workspaces exist, every problem resolves, and every
//! program an overseer or a command executor starts is there. `validate`,
//! the launch form and `run` all check it, so "valid" means "would start".

use std::path::Path;

use super::{Suite, SuiteError, SuiteIssue, TaskKind};

/// Words a shell understands by itself: a command that starts with one
/// needs no program of its name.
const SHELL_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "{", "}", "(", "!", "[",
    "[[", "test", "true", "false", ":", ".", "cd", "echo", "printf", "export", "exit", "set", "unset", "source",
    "exec", "eval", "read", "ulimit", "umask", "wait", "command", "type", "trap", "shift", "return", "local", "time",
];

/// The suite, when this machine can run it; otherwise every reason it
/// cannot, each at its task.
pub fn check_runnable(s: Suite) -> Result<Suite, SuiteError> {
    let mut issues = Vec::new();
    for (i, t) in s.tasks.iter().enumerate() {
        let issue = |field: String, message: String, hint: &str| SuiteIssue {
            location: t.location.clone(),
            field: format!("tasks[{i}].{field}"),
            message,
            hint: Some(hint.to_string()),
        };
        match &t.kind {
            TaskKind::Agent(a) => {
                let workspace = a.workspace.as_ref().map(|f| s.dir.join(f));
                if let Some(folder) = workspace.as_ref().filter(|f| !f.is_dir()) {
                    issues.push(issue(
                        "workspace".into(),
                        format!("the workspace folder {} does not exist", folder.display()),
                        "`workspace:` is relative to the suite file's folder",
                    ));
                }
                let root = workspace.as_deref().unwrap_or(&s.dir);
                for (j, o) in a.overseers.iter().enumerate() {
                    if let Some(program) = missing_program(&o.command, root) {
                        issues.push(issue(
                            format!("overseers[{j}].command"),
                            format!(
                                "overseer `{}` runs `{program}`, which is not installed here (not on PATH)",
                                o.name
                            ),
                            "install it, or fix the command's first word",
                        ));
                    }
                }
                if let Some(program) = a
                    .executor
                    .as_ref()
                    .and_then(|e| e.command.as_deref())
                    .and_then(|c| missing_program(&c.replace("{prompt_file}", "prompt.md"), root))
                {
                    issues.push(issue(
                        "executor.command".into(),
                        format!("the executor runs `{program}`, which is not installed here (not on PATH)"),
                        "install the coding agent, or fix the command's first word",
                    ));
                }
            }
            TaskKind::Optimize(o) => {
                if let Err(message) = crate::numeric::resolve_problem(&o.problem, &s.dir) {
                    issues.push(issue(
                        "problem".into(),
                        message,
                        "use a built-in problem name or a problem file path relative to the suite",
                    ));
                }
            }
            TaskKind::Command(_) => {}
        }
    }
    if issues.is_empty() { Ok(s) } else { Err(SuiteError { issues }) }
}

/// The program a shell command starts first, when it is neither a shell
/// word, nor a file of `dir`, nor on the PATH. Commands the shell composes
/// in other ways (a variable, a substitution) are taken on trust.
fn missing_program(command: &str, dir: &Path) -> Option<String> {
    let first = command
        .split(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|')
        .find(|w| !w.is_empty() && !(w.contains('=') && !w.starts_with('=')))?;
    let word = first.trim_matches(|c| c == '\'' || c == '"');
    if word.is_empty() || SHELL_WORDS.contains(&word) || word.contains(['$', '`', '(', '*', '?']) {
        return None;
    }
    if word.contains('/') {
        let path = if Path::new(word).is_absolute() { Path::new(word).to_path_buf() } else { dir.join(word) };
        return (!path.exists()).then(|| word.to_string());
    }
    let on_path =
        std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join(word).is_file()));
    (!on_path).then(|| word.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_program_of_a_command_is_looked_for_and_shell_words_are_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("check.sh"), "").unwrap();
        assert_eq!(missing_program("python3 -m unittest -v", dir.path()), None);
        assert_eq!(missing_program("FOO=1 sh -c 'true'", dir.path()), None);
        assert_eq!(missing_program("./check.sh --all", dir.path()), None);
        assert_eq!(missing_program("if [ -e x ]; then true; fi", dir.path()), None);
        assert_eq!(missing_program("$RUNNER tests", dir.path()), None);
        assert_eq!(missing_program("pytset -q", dir.path()), Some("pytset".into()));
        assert_eq!(missing_program("./missing.sh", dir.path()), Some("./missing.sh".into()));
    }
}
