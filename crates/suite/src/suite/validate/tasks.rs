//! A suite's tasks: the fields of each kind (command, agent, optimize),
//! loss weights, executors and overseers.

use super::*;

impl Validator {
    fn weight(&mut self, field: &str, w: Option<Spanned<f64>>, default: f64) -> f64 {
        match w {
            None => default,
            Some(w) if (0.0..=1.0).contains(&w.value) => w.value,
            Some(w) => {
                self.issue(
                    w.referenced,
                    field,
                    format!("weight {} is outside [0, 1]", shown_number(w.value)),
                    "weights are fractions between 0 and 1",
                );
                default
            }
        }
    }

    fn executor(&mut self, prefix: &str, e: &Spanned<raw::Executor>) {
        let field = format!("{prefix}executor");
        match (e.value.kind, e.value.command.as_deref().map(str::trim)) {
            (raw::ExecutorKind::Command, None | Some("")) => self.issue(
                e.referenced,
                format!("{field}.command"),
                "a command executor needs `command:`",
                "give the coding agent's command line; `{prompt_file}` is replaced by the prompt's path",
            ),
            (raw::ExecutorKind::Llm, Some(_)) => self.issue(
                e.referenced,
                format!("{field}.command"),
                "`command` belongs to `type: command` executors",
                "remove `command` or set `type: command`",
            ),
            _ => {}
        }
        if let Some(t) = e.value.timeout
            && !crate::time::valid_secs(t)
        {
            self.issue(e.referenced, format!("{field}.timeout"), seconds_out_of_range(t), "use e.g. `timeout: 900`");
        }
    }

    fn overseers(&mut self, prefix: &str, raw: Vec<Spanned<raw::Overseer>>) -> Vec<Overseer> {
        let mut out: Vec<Overseer> = Vec::new();
        let mut seen: BTreeMap<String, Location> = BTreeMap::new();
        for (j, o) in raw.into_iter().enumerate() {
            let o = o.value;
            let field = |f: &str| format!("{prefix}overseers[{j}].{f}");
            let before = self.issues.len();
            let name = o.name.value.trim().to_string();
            if !valid_name(&name) {
                self.issue(
                    o.name.referenced,
                    field("name"),
                    format!("overseer name `{name}` is not allowed"),
                    NAME_HINT,
                );
            } else if let Some(first) = seen.get(&name) {
                self.issue(
                    o.name.referenced,
                    field("name"),
                    format!("duplicate overseer name `{name}` (first used at line {})", first.line()),
                    "overseer names must be unique within a task; rename one",
                );
            } else {
                seen.insert(name.clone(), o.name.referenced);
            }
            if o.command.value.trim().is_empty() {
                self.issue(
                    o.command.referenced,
                    field("command"),
                    "the command is empty",
                    "write the shell command to run",
                );
            }
            let kind = o.kind.as_ref().map_or(OverseerKind::Custom, |k| k.value);
            let timeout = match &o.timeout {
                None => None,
                Some(s) if crate::time::valid_secs(s.value) => Some(crate::time::secs(s.value)),
                Some(s) => {
                    self.issue(
                        s.referenced,
                        field("timeout"),
                        seconds_out_of_range(s.value),
                        "use e.g. `timeout: 120`",
                    );
                    None
                }
            };
            for (key, pattern) in [("success_pattern", &o.success_pattern), ("failure_pattern", &o.failure_pattern)] {
                let Some(p) = pattern else { continue };
                if kind != OverseerKind::Custom {
                    self.issue(
                        p.referenced,
                        field(key),
                        format!("`{key}` is for custom overseers, but this one is `kind: {}`", kind.as_str()),
                        format!("remove `{key}` or set `kind: custom`"),
                    );
                } else if let Err(e) = regex::Regex::new(&p.value) {
                    self.issue(
                        p.referenced,
                        field(key),
                        format!("`{}` is not a valid regular expression: {e}", p.value),
                        "patterns use Rust regex syntax (like Perl's, without look-around)",
                    );
                }
            }
            if let Some(r) = &o.report {
                if !matches!(kind, OverseerKind::Test | OverseerKind::Security) {
                    self.issue(
                        r.referenced,
                        field("report"),
                        format!(
                            "`report` is read for test and security overseers, but this one is `kind: {}`",
                            kind.as_str()
                        ),
                        "remove `report`, or set `kind: test` (JUnit XML) or `kind: security` (JSON or SARIF)",
                    );
                } else if let Err(why) = relative_inside(&r.value) {
                    self.issue(
                        r.referenced,
                        field("report"),
                        format!("report path `{}` {why}", r.value),
                        "give a path relative to the workspace, e.g. `target/junit.xml`",
                    );
                }
            }
            if self.issues.len() == before {
                out.push(Overseer {
                    name,
                    command: o.command.value,
                    kind,
                    cost: o.cost,
                    success_pattern: o.success_pattern.map(|p| p.value),
                    failure_pattern: o.failure_pattern.map(|p| p.value),
                    timeout,
                    report: o.report.map(|r| r.value),
                    network: o.network,
                    hidden: o.hidden,
                });
            }
        }
        out
    }

    /// Validates one task. `prefix` starts its field paths (`tasks[2].` in a
    /// suite file, nothing in a task file); `default_name` stands in for a
    /// missing `name:` (task files only).
    pub(super) fn task(&mut self, prefix: &str, t: Spanned<raw::Task>, default_name: Option<&str>) -> Option<Task> {
        let at = t.referenced;
        let mut t = t.value;
        let field = |f: &str| format!("{prefix}{f}");
        let (name, name_at) = match (&t.name, default_name) {
            (Some(n), _) => (n.value.trim().to_string(), n.referenced),
            (None, Some(d)) => (d.to_string(), at),
            (None, None) => {
                self.issue(at, field("name"), "the task has no `name:`", "add `name:` with a name unique in the suite");
                (String::new(), at)
            }
        };
        if !name.is_empty() && !valid_name(&name) {
            self.issue(name_at, field("name"), format!("task name `{name}` is not allowed"), NAME_HINT);
        }

        let d = LossWeights::default();
        let weights = match t.weights {
            None => d,
            Some(w) => {
                let w = w.value;
                LossWeights {
                    eval: self.weight(&field("weights.eval"), w.eval, d.eval),
                    critique: self.weight(&field("weights.critique"), w.critique, d.critique),
                    gate_rejections: self.weight(
                        &field("weights.gate_rejections"),
                        w.gate_rejections,
                        d.gate_rejections,
                    ),
                    budget: self.weight(&field("weights.budget"), w.budget, d.budget),
                    status: self.weight(&field("weights.status"), w.status, d.status),
                }
            }
        };

        let mut budget = Budget { max_rejections: DEFAULT_MAX_REJECTIONS, ..Budget::default() };
        if let Some(b) = t.budget {
            let b = b.value;
            budget.max_loops = self.count(b.max_loops, &field("budget.max_loops"), 1..=10_000, "max_loops: 6");
            budget.max_total_workers =
                self.count(b.max_total_workers, &field("budget.max_total_workers"), 1..=1_000, "max_total_workers: 8");
            budget.max_total_tokens = self.count(
                b.max_total_tokens,
                &field("budget.max_total_tokens"),
                1..=1_000_000_000_000,
                "max_total_tokens: 200000",
            );
            if let Some(w) = b.max_wall_time {
                if crate::time::valid_secs(w.value) {
                    budget.max_wall_time = Some(w.value);
                } else {
                    self.issue(
                        w.referenced,
                        field("budget.max_wall_time"),
                        seconds_out_of_range(w.value),
                        "use e.g. `max_wall_time: 240`",
                    );
                }
            }
            budget.max_evaluations = self.count(
                b.max_evaluations,
                &field("budget.max_evaluations"),
                1..=1_000_000_000,
                "max_evaluations: 20000",
            );
            // The rejection count that counts as fully failed.
            if let Some(r) =
                self.count(b.max_rejections, &field("budget.max_rejections"), 1..=10_000, "max_rejections: 5")
            {
                budget.max_rejections = r;
            }
        }

        // Each sample is a workspace of its own, run at the same time.
        let parallel_samples = self
            .count(t.parallel_samples, &field("parallel_samples"), 1..=MAX_PARALLEL_SAMPLES, "parallel_samples: 3")
            .unwrap_or(1);

        // The kind: stated, or inferred from the fields only one kind has.
        let kind_name = match &t.kind {
            Some(k) => k.value,
            None if t.command.is_some() => raw::KindName::Command,
            None if t.problem.is_some() => raw::KindName::Optimize,
            None => raw::KindName::Agent,
        };
        let kind_at = t.kind.as_ref().map_or(at, |k| k.referenced);
        let wrong_kind = |v: &mut Self, loc: Location, f: &str, belongs: &str| {
            v.issue(
                loc,
                field(f),
                format!("`{f}` belongs to `kind: {belongs}` tasks, but this task is `kind: {}`", kind_name.as_str()),
                format!("remove `{f}` or set `kind: {belongs}`"),
            );
        };
        if kind_name != raw::KindName::Command {
            if let Some(c) = &t.command {
                wrong_kind(self, c.referenced, "command", "command");
            }
            if let Some(c) = &t.timeout {
                wrong_kind(self, c.referenced, "timeout", "command");
            }
            if let Some(c) = &t.env {
                wrong_kind(self, c.referenced, "env", "command");
            }
        }
        if kind_name != raw::KindName::Agent {
            if let Some(c) = &t.workspace {
                wrong_kind(self, c.referenced, "workspace", "agent");
            }
            if let Some(c) = &t.executor {
                wrong_kind(self, c.referenced, "executor", "agent");
            }
            if let Some(c) = &t.overseers {
                wrong_kind(self, c.referenced, "overseers", "agent");
            }
            if let Some(c) = &t.supervision {
                wrong_kind(self, c.referenced, "supervision", "agent");
            }
            if let Some(c) = &t.protected {
                wrong_kind(self, c.referenced, "protected", "agent");
            }
            if let Some(c) = &t.infer_protected {
                wrong_kind(self, c.referenced, "infer_protected", "agent");
            }
            if let Some(c) = &t.targets {
                wrong_kind(self, c.referenced, "targets", "agent");
            }
        }
        if kind_name != raw::KindName::Optimize
            && let Some(c) = &t.problem
        {
            wrong_kind(self, c.referenced, "problem", "optimize");
        }
        let (anti_patterns, forbidden) =
            self.anti_patterns(&field("anti_patterns"), std::mem::take(&mut t.anti_patterns), kind_name);

        let needs = self.needs(&field("needs"), std::mem::take(&mut t.needs));
        let task_text = t.task.as_ref().map(|s| s.value.clone()).unwrap_or_default();
        let mut location_at = kind_at;
        let kind = match kind_name {
            raw::KindName::Command => {
                let Some(command) = t.command else {
                    self.issue(
                        kind_at,
                        field("command"),
                        "a command task needs `command:`",
                        "add the shell command that runs the harness, e.g. `command: python3 score.py`",
                    );
                    return None;
                };
                if command.value.trim().is_empty() {
                    self.issue(
                        command.referenced,
                        field("command"),
                        "the command is empty",
                        "write the shell command to run",
                    );
                }
                let timeout = match t.timeout {
                    Some(s) if crate::time::valid_secs(s.value) => crate::time::secs(s.value),
                    Some(s) => {
                        self.issue(
                            s.referenced,
                            field("timeout"),
                            seconds_out_of_range(s.value),
                            "use e.g. `timeout: 60`",
                        );
                        DEFAULT_COMMAND_TIMEOUT
                    }
                    None => budget.max_wall_time.map_or(DEFAULT_COMMAND_TIMEOUT, crate::time::secs),
                };
                TaskKind::Command(CommandTask {
                    command: command.value,
                    timeout,
                    env: t.env.map(|e| e.value).unwrap_or_default(),
                })
            }
            raw::KindName::Agent => {
                if task_text.trim().is_empty() {
                    self.issue(
                        name_at,
                        field("task"),
                        "an agent task needs `task:` saying what to do",
                        "describe the work in a sentence or two",
                    );
                }
                if let Some(e) = &t.executor {
                    self.executor(prefix, e);
                }
                let overseers = match t.overseers {
                    Some(o) => {
                        let at = o.referenced;
                        let list = self.overseers(prefix, o.value);
                        if !list.is_empty() && list.iter().all(|o| o.hidden) {
                            self.issue(
                                at,
                                field("overseers"),
                                "every overseer is hidden: the executor would work blind",
                                "keep at least one check visible (`hidden: false`); held-out checks join the verdict once the visible ones pass",
                            );
                        }
                        list
                    }
                    None => Vec::new(),
                };
                TaskKind::Agent(AgentTask {
                    workspace: match t.workspace {
                        Some(w) => {
                            let folder = self.inside(w.referenced, &field("workspace"), &w.value)?;
                            // (Text checked on its own, with no folder behind it, skips this.)
                            if self.dir.is_dir() && !folder.is_dir() {
                                self.issue(
                                    w.referenced,
                                    field("workspace"),
                                    format!("the workspace folder {} does not exist", folder.display()),
                                    "`workspace:` is a folder relative to the suite file's folder",
                                );
                                return None;
                            }
                            Some(w.value)
                        }
                        None => None,
                    },
                    executor: t.executor.map(|e| e.value),
                    overseers,
                    supervision: t.supervision.map(|s| s.value).unwrap_or_default(),
                    protected: self.protected_globs(&field("protected"), t.protected),
                    infer_protected: t.infer_protected.is_none_or(|b| b.value),
                    targets: self.targets(&field("targets"), t.targets),
                    forbidden,
                })
            }
            raw::KindName::Optimize => {
                let Some(problem) = t.problem else {
                    self.issue(
                        kind_at,
                        field("problem"),
                        "an optimize task needs `problem:`",
                        "name a built-in problem (e.g. `g01`) or a problem file",
                    );
                    return None;
                };
                // Errors found later (an unknown problem) point at the `problem:` value.
                location_at = problem.referenced;
                if crate::numeric::builtin(&problem.value).is_none() {
                    let path = self.inside(problem.referenced, &field("problem"), &problem.value)?;
                    if self.dir.is_dir() && !path.is_file() {
                        self.issue(
                            problem.referenced,
                            field("problem"),
                            format!(
                                "`{}` is neither a built-in problem nor a file ({})",
                                problem.value,
                                path.display()
                            ),
                            format!(
                                "name a built-in problem ({}) or the path of a problem file relative to the suite",
                                crate::numeric::builtin_names().join(", ")
                            ),
                        );
                        return None;
                    }
                }
                TaskKind::Optimize(OptimizeTask { problem: problem.value })
            }
        };

        Some(Task {
            name,
            task: task_text,
            kind,
            workflow: t.workflow,
            model: t.model,
            budget,
            weights,
            holdout: t.holdout,
            priority: t.priority,
            hints: t.hints,
            constraints: t.constraints,
            anti_patterns,
            parallel_samples,
            needs,
            location: SourceLocation {
                file: self.file.clone(),
                line: location_at.line() as u32,
                column: location_at.column() as u32,
            },
        })
    }

    /// A task's `needs:` labels: short words a worker's `--offers` can name.
    fn needs(&mut self, field: &str, raw: Vec<Spanned<String>>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (i, label) in raw.into_iter().enumerate() {
            if !crate::suite::names::valid_label(&label.value) {
                self.issue(
                    label.referenced,
                    format!("{field}[{i}]"),
                    format!("`{}` is not a label a worker can offer", label.value),
                    format!("{}, e.g. `needs: [python, gpu]`", crate::suite::names::LABEL_HINT),
                );
            } else if !out.contains(&label.value) {
                out.push(label.value);
            }
        }
        out.sort();
        out
    }
}
