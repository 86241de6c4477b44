//! Task files: one task on its own, for dropping into a watched folder.
//!
//! A file named `NAME.task.yaml` holds exactly the keys of one entry of a
//! suite's `tasks:` list, plus two optional keys of its own:
//!
//! ```yaml
//! # tests/add.task.yaml — registered as the one-task suite `add`
//! suite: arithmetic        # optional: the suite's name [default: the file name before .task.yaml]
//! run: auto                # optional: manual (default) or auto — see below
//! name: add                # optional: the task's name [default: the suite's name]
//! task: Add the two numbers the harness prints.
//! command: python3 "$ATTRACTOR_SUITE_DIR/add.py"
//! timeout: 60
//! ```
//!
//! It is registered as a suite of that one task, so everything a suite can
//! do (epochs, the loss, the charts) works on it; relative paths resolve in
//! the file's folder, as for a suite file. Suite-level keys (`artifacts`,
//! `baseline_artifacts`, `description`) are not part of a task file: a task
//! that needs them belongs in a suite file.
//!
//! `run:` (also allowed at the top of a suite file) tells the folder watcher
//! what to do once the file is registered: `manual` registers it and waits
//! for a person to launch it; `auto` queues one run of one epoch — after a
//! person approved the commands the file would run, and never twice for the
//! same suite and content. Outside the watcher (`attractor run`, Launch)
//! `run:` changes nothing.

use std::path::Path;

/// The name ending that marks a task file.
pub const TASK_SUFFIX: &str = ".task.yaml";
/// The name ending that marks a suite file the watcher picks up.
pub const SUITE_SUFFIX: &str = ".suite.yaml";

/// What to do about a key a task file lacks.
pub(super) const MISSING_HINT: &str =
    "add the missing key; a task file holds the keys of one task of a suite (see docs/suites.md, \"Task files\")";

/// Whether `path` names a task file (`*.task.yaml`).
pub fn is_task_file(path: &Path) -> bool {
    file_name(path).is_some_and(|n| n.len() > TASK_SUFFIX.len() && n.ends_with(TASK_SUFFIX))
}

/// Whether `path` names a suite file the watcher picks up (`*.suite.yaml`).
pub fn is_suite_file(path: &Path) -> bool {
    file_name(path).is_some_and(|n| n.len() > SUITE_SUFFIX.len() && n.ends_with(SUITE_SUFFIX))
}

/// The suite name a task file gets when it does not say: its file name
/// without `.task.yaml`.
pub fn default_suite_name(path: &Path) -> String {
    let name = file_name(path).unwrap_or_default();
    name.strip_suffix(TASK_SUFFIX).unwrap_or(name).to_string()
}

fn file_name(path: &Path) -> Option<&str> {
    path.file_name().and_then(|n| n.to_str())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{RunMode, TaskKind, parse};
    use super::*;

    fn task_file(yaml: &str) -> Result<crate::suite::Suite, crate::suite::SuiteError> {
        parse(yaml, Path::new("drop/add-two.task.yaml"))
    }

    #[test]
    fn file_names_tell_task_files_from_suite_files() {
        assert!(is_task_file(Path::new("a/b.task.yaml")));
        assert!(!is_task_file(Path::new("a/.task.yaml")), "a bare suffix names nothing");
        assert!(!is_task_file(Path::new("a/b.suite.yaml")));
        assert!(is_suite_file(Path::new("b.suite.yaml")));
        assert!(!is_suite_file(Path::new("b.suite.yaml.swp")));
        assert_eq!(default_suite_name(Path::new("x/add-two.task.yaml")), "add-two");
    }

    #[test]
    fn a_task_file_is_a_one_task_suite_named_after_the_file() {
        let s = task_file("task: Add two numbers.\ncommand: python3 add.py\ntimeout: 5\n").unwrap();
        assert_eq!(s.name, "add-two");
        assert_eq!(s.tasks.len(), 1);
        assert_eq!(s.tasks[0].name, "add-two", "the task takes the suite's name when it has none");
        assert_eq!(s.run, RunMode::Manual);
        assert_eq!(s.dir, Path::new("drop"));
        assert!(matches!(&s.tasks[0].kind, TaskKind::Command(c) if c.command == "python3 add.py"));
    }

    #[test]
    fn a_task_file_may_name_its_suite_and_task_and_ask_to_run_automatically() {
        let s = task_file("suite: arithmetic\nrun: auto\nname: add\nproblem: g06\n").unwrap();
        assert_eq!((s.name.as_str(), s.tasks[0].name.as_str()), ("arithmetic", "add"));
        assert_eq!(s.run, RunMode::Auto);
        assert_eq!(s.tasks[0].kind_name(), "optimize");
    }

    #[test]
    fn a_task_file_error_is_located_without_a_list_index() {
        let e = task_file("command: 'true'\ntimeout: -3\n").unwrap_err();
        let i = &e.issues[0];
        assert_eq!((i.location.line, i.location.column, i.field.as_str()), (2, 10, "timeout"));
        let e = task_file("command: 'true'\nbogus: 1\n").unwrap_err();
        assert_eq!(e.issues[0].location.line, 2);
        assert!(e.issues[0].message.contains("unknown field `bogus`"), "{}", e.issues[0].message);
        let e = task_file("run: sometimes\ncommand: x\n").unwrap_err();
        assert!(e.issues[0].message.contains("unknown variant"), "{}", e.issues[0].message);
    }

    #[test]
    fn a_file_name_that_is_no_suite_name_asks_for_suite() {
        let e = parse("command: x\n", Path::new("d/my\ttask.task.yaml")).unwrap_err();
        assert_eq!(e.issues[0].field, "suite");
        assert!(e.issues[0].hint.as_deref().unwrap_or("").contains("set `suite:`"), "{e}");
        assert!(parse("suite: ok\ncommand: x\n", Path::new("d/my\ttask.task.yaml")).is_ok());
    }

    #[test]
    fn task_file_keys_inside_a_suite_file_are_errors() {
        let e =
            parse("name: s\ntasks:\n  - name: a\n    command: x\n    run: auto\n", Path::new("s.yaml")).unwrap_err();
        assert_eq!(e.issues[0].field, "tasks[0].run");
        assert_eq!(e.issues[0].location.line, 5);
        let e = parse("name: s\ntasks:\n  - suite: t\n    name: a\n    command: x\n", Path::new("s.yaml")).unwrap_err();
        assert_eq!(e.issues[0].field, "tasks[0].suite");
        let e = parse("name: s\ntasks:\n  - command: x\n", Path::new("s.yaml")).unwrap_err();
        assert!(e.issues[0].message.contains("no `name:`"), "{e}");
        let s = parse("name: s\nrun: auto\ntasks:\n  - name: a\n    command: x\n", Path::new("s.yaml")).unwrap();
        assert_eq!(s.run, RunMode::Auto);
    }
}
