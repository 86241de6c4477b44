//! What a run of a valid suite file would still be refused for, asked before
//! anything starts. The file's own checks are `suite::check_runnable`; these
//! two depend on where it runs — the database (an artifact name another suite
//! already declares: names are shared across suites) and the model
//! configuration (an agent task on the model executor with no model). The
//! Launch screen's ✓, its preview, `attractor validate` and the worker's
//! preparation all ask here, so a file called valid is not refused for
//! either at its start (the runner still checks the sandbox when it starts).

use crate::store::DeclarationRow;
use crate::suite::{Suite, SuiteError, SuiteIssue, TaskKind};

/// The refusals as located issues (the artifact at its `name:`, the task
/// where it starts). `declarations` are the database's (none for a database
/// that does not exist yet, where no other suite can hold a name);
/// `has_model` is false only when no model is configured at all (a model
/// setting that is wrong is the launch's error to report, not "no model").
pub fn refusals(suite: &Suite, has_model: bool, declarations: &[DeclarationRow]) -> Result<(), SuiteError> {
    let mut issues: Vec<SuiteIssue> = Vec::new();
    if !has_model {
        for (i, t) in suite.tasks.iter().enumerate() {
            if let TaskKind::Agent(a) = &t.kind
                && crate::task::agent::needs_model(a)
            {
                issues.push(SuiteIssue {
                    location: t.location.clone(),
                    field: format!("tasks[{i}]"),
                    message: format!(
                        "task `{}` uses the LLM executor (an agent task without `executor: {{type: command, …}}`), \
                         and no model is configured",
                        t.name
                    ),
                    hint: Some(
                        "choose a model on the Settings screen, or set ATTRACTOR_LLM_MODEL (and \
                         ATTRACTOR_LLM_BASE_URL for a server other than a local Ollama; OPENAI_API_KEY or \
                         ATTRACTOR_LLM_API_KEY for a key); or give the task `executor: {type: command, command: …}`; \
                         a task meant to run a harness is a command task: `command:` instead of `task:`"
                            .into(),
                    ),
                });
            }
        }
    }
    let taken: Vec<(String, String, String)> = suite
        .artifacts
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let owner = declarations.iter().find(|d| d.artifact_name == a.name && d.suite_name != suite.name)?;
            Some((
                format!("artifacts[{i}].name"),
                format!("artifact `{}` is already declared by suite `{}`", a.name, owner.suite_name),
                "give this suite's artifact another name (artifact names are shared across suites: two suites \
                     would tune one parameter)"
                    .into(),
            ))
        })
        .collect();
    if !taken.is_empty() {
        let text = std::fs::read_to_string(&suite.path).unwrap_or_default();
        if let Err(located) = crate::suite::issues_at(&text, &suite.path, taken) {
            issues.extend(located.issues);
        }
    }
    issues.sort_by_key(|i| (i.location.line, i.location.column));
    if issues.is_empty() { Ok(()) } else { Err(SuiteError { issues }) }
}
