//! From what a suite file says to a valid [`Suite`]: the checks YAML types
//! alone cannot make — names, ranges, paths that stay inside the suite's
//! folder, the fields each task kind needs — each failure an issue at its
//! line and column with a hint. The suite-level fields are checked here;
//! artifacts in `artifacts`, tasks and their overseers in `tasks`.

mod artifacts;
mod tasks;

use super::names::NAME_HINT;
use super::*;

/// Checks what YAML types alone cannot: names, ranges, per-kind fields.
pub(super) struct Validator {
    file: PathBuf,
    dir: PathBuf,
    access: Access,
    issues: Vec<SuiteIssue>,
}

impl Validator {
    pub(super) fn new(path: &Path, access: &Access) -> Self {
        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        Validator { file: path.to_path_buf(), dir, access: access.clone(), issues: Vec::new() }
    }

    /// `rel` resolved from the suite's folder, refused (with an issue at
    /// `loc`) when it leads outside that folder — by `..`, an absolute path
    /// or a symbolic link. A suite from anyone must not read or copy the
    /// rest of the machine — unless the user allowed that folder.
    fn inside(&mut self, loc: Location, field: &str, rel: &str) -> Option<PathBuf> {
        match inside_folder(&self.dir, rel) {
            Ok(path) => Some(path),
            Err(outside) if self.access.allows(&outside) => Some(outside),
            Err(outside) => {
                self.issue(
                    loc,
                    field,
                    format!("`{rel}` leads outside the suite's folder (to {})", outside.display()),
                    "keep the file or folder inside the folder of the suite file, and give its path relative to it; to use a folder elsewhere on purpose, allow it with `--allow-outside DIR` (the app: `allowed_outside` in Settings)",
                );
                None
            }
        }
    }

    /// A count from the file, kept when it lies in `range`; otherwise an
    /// issue naming the range with an example (`example`, as YAML).
    fn count<T>(
        &mut self,
        value: Option<Spanned<T>>,
        field: &str,
        range: std::ops::RangeInclusive<T>,
        example: &str,
    ) -> Option<T>
    where
        T: PartialOrd + Copy + fmt::Display,
    {
        let v = value?;
        if range.contains(&v.value) {
            return Some(v.value);
        }
        self.issue(
            v.referenced,
            field,
            format!("{} is outside the range {} to {}", v.value, range.start(), range.end()),
            format!("use a count in that range, e.g. `{example}`"),
        );
        None
    }

    fn at(&self, loc: Location) -> SourceLocation {
        SourceLocation { file: self.file.clone(), line: loc.line() as u32, column: loc.column() as u32 }
    }

    fn issue(&mut self, loc: Location, field: impl Into<String>, message: impl Into<String>, hint: impl Into<String>) {
        let hint = hint.into();
        self.issues.push(SuiteIssue {
            location: self.at(loc),
            field: field.into(),
            message: message.into(),
            hint: (!hint.is_empty()).then_some(hint),
        });
    }

    pub(super) fn validate(mut self, raw: raw::Suite) -> Result<Suite, SuiteError> {
        let name = raw.name.value.trim().to_string();
        if !valid_name(&name) {
            self.issue(raw.name.referenced, "name", format!("suite name `{name}` is not allowed"), NAME_HINT);
        }

        let artifacts = self.artifacts(&name, raw.artifacts);
        let declared: BTreeSet<&str> = artifacts.iter().map(|a| a.name.as_str()).collect();

        let mut baseline = BTreeMap::new();
        for (artifact, version) in raw.baseline_artifacts {
            let field = format!("baseline_artifacts.{artifact}");
            if builtin::find(&artifact).is_none() && !declared.contains(artifact.as_str()) {
                let known: Vec<&str> =
                    builtin::BUILTINS.iter().map(|b| b.name).chain(declared.iter().copied()).collect();
                self.issue(
                    version.referenced,
                    field,
                    format!("unknown artifact `{artifact}`"),
                    format!("use one of: {}", known.join(", ")),
                );
            } else if version.value < 0 {
                self.issue(
                    version.referenced,
                    field,
                    format!("version {} is negative", version.value),
                    "use 0 for the default or a stored version number",
                );
            } else {
                baseline.insert(artifact, version.value);
            }
        }

        let (noisy, verify_repeats) = self.noise(raw.noisy, raw.verify_repeats);
        let llm = self.llm_limits(raw.llm);

        if raw.tasks.value.is_empty() {
            self.issue(raw.tasks.referenced, "tasks", "the suite has no tasks", "add at least one task under `tasks:`");
        }
        let mut seen: BTreeMap<String, Location> = BTreeMap::new();
        let mut tasks = Vec::new();
        for (i, t) in raw.tasks.value.into_iter().enumerate() {
            let prefix = format!("tasks[{i}].");
            // `suite` and `run` are task-file keys; inside a suite file they
            // would silently mean nothing, so they are errors here.
            if let Some(s) = &t.value.suite {
                self.issue(
                    s.referenced,
                    format!("{prefix}suite"),
                    "`suite:` belongs to task files (*.task.yaml), not to a task of a suite file",
                    "remove it: this task already belongs to the suite named at the top of the file",
                );
            }
            if let Some(r) = &t.value.run {
                self.issue(
                    r.referenced,
                    format!("{prefix}run"),
                    "`run:` is set for a whole suite, not per task",
                    "move `run:` to the top level of the suite file",
                );
            }
            if let Some(n) = &t.value.name {
                let task_name = n.value.trim().to_string();
                if let Some(first) = seen.get(&task_name) {
                    self.issue(
                        n.referenced,
                        format!("{prefix}name"),
                        format!("duplicate task name `{task_name}` (first used at line {})", first.line()),
                        "task names must be unique within a suite; rename one",
                    );
                } else {
                    seen.insert(task_name, n.referenced);
                }
            }
            if let Some(task) = self.task(&prefix, t, None) {
                tasks.push(task);
            }
        }

        if self.issues.is_empty() {
            Ok(Suite {
                name,
                description: raw.description,
                path: self.file.clone(),
                dir: self.dir.clone(),
                baseline_artifacts: baseline,
                artifacts,
                tasks,
                run: raw.run.unwrap_or_default(),
                noisy,
                verify_repeats,
                llm,
                approve_updates: raw.approve_updates.unwrap_or_default(),
            })
        } else {
            self.issues.sort_by_key(|i| (i.location.line, i.location.column));
            Err(SuiteError { issues: self.issues })
        }
    }

    /// `targets:` test ids or patterns: each a non-empty line of at most 1,000 characters.
    fn targets(&mut self, field: &str, raw: Option<Spanned<Vec<String>>>) -> Vec<String> {
        let Some(raw) = raw else { return Vec::new() };
        let mut out = Vec::new();
        for (i, target) in raw.value.into_iter().enumerate() {
            let target = target.trim().to_string();
            if target.is_empty() || target.len() > 1000 || target.contains('\n') {
                self.issue(
                    raw.referenced,
                    format!("{field}[{i}]"),
                    "a target must be one test id or pattern, on one line, of at most 1,000 characters",
                    "name a test as its runner does (`tests.test_more.CollapseTests.test_collapse`, \
                     `tests/test_x.py::test_a`), its last parts (`CollapseTests.test_collapse`), or a pattern with `*`",
                );
            } else {
                out.push(target);
            }
        }
        out
    }

    /// `protected:` globs, each one a pattern `globset` can compile, relative
    /// to the workspace (no `..`, not absolute).
    fn protected_globs(&mut self, field: &str, raw: Option<Spanned<Vec<String>>>) -> Vec<String> {
        let Some(raw) = raw else { return Vec::new() };
        let mut out = Vec::new();
        for (i, glob) in raw.value.into_iter().enumerate() {
            let glob = glob.trim().to_string();
            let wrong = if glob.is_empty() {
                Some("an empty pattern".to_string())
            } else if glob.starts_with('/') || glob.split('/').any(|part| part == "..") {
                Some(format!("`{glob}` leads outside the workspace"))
            } else {
                super::patterns::glob(&glob).err().map(|e| format!("`{glob}` is not a usable pattern ({})", e.kind()))
            };
            match wrong {
                Some(message) => self.issue(
                    raw.referenced,
                    format!("{field}[{i}]"),
                    message,
                    "write a glob relative to the workspace, e.g. `tests/**` or `**/conftest.py`",
                ),
                None => out.push(glob),
            }
        }
        out
    }

    /// `anti_patterns:` as the sentences the model reads (every entry) and
    /// the checks of those with a `forbid:` pattern (agent tasks only: they
    /// read what the executor changed in its workspace).
    fn anti_patterns(
        &mut self,
        field: &str,
        raw: Vec<Spanned<raw::AntiPattern>>,
        kind: raw::KindName,
    ) -> (Vec<String>, Vec<Forbidden>) {
        let mut said = Vec::new();
        let mut checked = Vec::new();
        for (i, entry) in raw.into_iter().enumerate() {
            let c = match entry.value {
                raw::AntiPattern::Said(text) => {
                    said.push(text);
                    continue;
                }
                raw::AntiPattern::Checked(c) => c,
            };
            let at = format!("{field}[{i}]");
            said.push(c.avoid.clone());
            if kind != raw::KindName::Agent {
                self.issue(
                    entry.referenced,
                    format!("{at}.forbid"),
                    format!(
                        "a checked anti-pattern reads an agent's changes, but this task is `kind: {}`",
                        kind.as_str()
                    ),
                    "write it as a sentence (`- avoid …`) or set `kind: agent`",
                );
                continue;
            }
            if c.avoid.trim().is_empty() || c.avoid.contains('\n') {
                self.issue(
                    entry.referenced,
                    format!("{at}.avoid"),
                    "`avoid:` must be one line of text",
                    "say in a few words what to avoid (it names the check)",
                );
                continue;
            }
            if checked.iter().any(|f: &Forbidden| f.avoid == c.avoid.trim()) {
                self.issue(
                    entry.referenced,
                    format!("{at}.avoid"),
                    format!("another checked anti-pattern is already called `{}`", c.avoid.trim()),
                    "give each checked anti-pattern its own `avoid:` words (they name its check)",
                );
                continue;
            }
            if let Err(e) = super::patterns::forbid(&c.forbid) {
                self.issue(
                    entry.referenced,
                    format!("{at}.forbid"),
                    format!("`{}` is not a usable regular expression: {e}", c.forbid),
                    "write a pattern in Rust `regex` syntax, e.g. `time\\.sleep\\(` or `if n == \\d+`",
                );
                continue;
            }
            let paths = self.protected_globs(
                &format!("{at}.paths"),
                Some(Spanned { value: c.paths, referenced: entry.referenced, defined: entry.defined }),
            );
            checked.push(Forbidden { avoid: c.avoid.trim().to_string(), pattern: c.forbid, paths });
        }
        (said, checked)
    }

    /// `llm:` as settings, checked against the same bounds as the CLI's flags.
    fn llm_limits(&mut self, raw: Option<Spanned<crate::llm::LlmLimits>>) -> crate::llm::LlmLimits {
        let Some(raw) = raw else { return crate::llm::LlmLimits::default() };
        match raw.value.validate() {
            Ok(()) => raw.value,
            Err(invalid) => {
                self.issue(
                    raw.referenced,
                    format!("llm.{}", invalid.field),
                    invalid.message,
                    "see \"Model calls: limits\" in docs/models.md for each limit and its bounds",
                );
                crate::llm::LlmLimits::default()
            }
        }
    }

    /// `noisy` and `verify_repeats`: repeats only mean something on a noisy
    /// suite, and one evaluation cannot show its own spread.
    fn noise(&mut self, noisy: Option<Spanned<bool>>, repeats: Option<Spanned<u32>>) -> (bool, Option<u32>) {
        let is_noisy = noisy.as_ref().is_some_and(|n| n.value);
        let Some(r) = repeats else { return (is_noisy, None) };
        if !is_noisy {
            let said = if noisy.is_some() { "`noisy: false`" } else { "no `noisy: true`" };
            self.issue(
                r.referenced,
                "verify_repeats",
                format!("`verify_repeats` is set on a suite with {said}"),
                "add `noisy: true` (runs with the same artifacts give different losses), or remove `verify_repeats`",
            );
            return (is_noisy, None);
        }
        if !(2..=MAX_VERIFY_REPEATS).contains(&r.value) {
            self.issue(
                r.referenced,
                "verify_repeats",
                format!("{} is outside the range 2 to {MAX_VERIFY_REPEATS}", r.value),
                "one evaluation cannot show its own noise: use e.g. `verify_repeats: 3`",
            );
            return (is_noisy, None);
        }
        (is_noisy, Some(r.value))
    }

    /// A task file: one task that is a whole suite (see [`taskfile`]).
    pub(super) fn validate_task_file(
        mut self,
        raw: Spanned<raw::Task>,
        default_suite: Option<&str>,
    ) -> Result<Suite, SuiteError> {
        let top = raw.referenced;
        let (name, name_at) = match (&raw.value.suite, default_suite) {
            (Some(s), _) => (s.value.trim().to_string(), s.referenced),
            (None, Some(d)) => (d.to_string(), top),
            (None, None) => (taskfile::default_suite_name(&self.file), top),
        };
        if !valid_name(&name) {
            let message = if raw.value.suite.is_some() {
                format!("suite name `{name}` is not allowed")
            } else {
                format!("the file name makes the suite name `{name}`, which is not allowed")
            };
            self.issue(name_at, "suite", message, format!("set `suite:` or rename the file; {NAME_HINT}"));
        }
        let run = raw.value.run.as_ref().map(|r| r.value).unwrap_or_default();
        let task = self.task("", raw, Some(&name));
        match task {
            Some(task) if self.issues.is_empty() => Ok(Suite {
                name,
                description: None,
                path: self.file.clone(),
                dir: self.dir.clone(),
                baseline_artifacts: BTreeMap::new(),
                artifacts: Vec::new(),
                tasks: vec![task],
                run,
                noisy: false,
                verify_repeats: None,
                llm: crate::llm::LlmLimits::default(),
                approve_updates: crate::domain::ApprovalMode::Off,
            }),
            _ => {
                self.issues.sort_by_key(|i| (i.location.line, i.location.column));
                Err(SuiteError { issues: self.issues })
            }
        }
    }
}

/// A path that stays inside the folder it is relative to.
fn relative_inside(path: &str) -> Result<(), &'static str> {
    let p = Path::new(path);
    if path.trim().is_empty() {
        Err("is empty")
    } else if p.is_absolute() {
        Err("is absolute")
    } else if p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        Err("climbs out with `..`")
    } else {
        Ok(())
    }
}

/// Parallel samples of one agent task at most: each is a workspace and a
/// trajectory running at once.
const MAX_PARALLEL_SAMPLES: u32 = 64;

/// Why a number of seconds from a suite file is refused.
fn seconds_out_of_range(value: f64) -> String {
    format!(
        "{} is not a usable number of seconds: it must be above 0 and at most {} (30 days)",
        shown_number(value),
        crate::time::MAX_SECONDS
    )
}
