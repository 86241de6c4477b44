//! Running a task's overseers against a workspace, cheapest first.
//!
//! [`OverseerRunner::measure`] runs each configured overseer as a shell
//! command in the workspace (seed 002 §2.3):
//!
//! - in cost order — cheap, moderate, expensive — keeping the file's order
//!   within a class;
//! - after a *blocking* failure (a build or type check that fails) the rest
//!   are skipped: their results would only restate it;
//! - expensive overseers are skipped when the trajectory's policy says so;
//! - every failure is classified ([`FailureClass`]): environmental ones (the
//!   check could not run) are retried, `environmental_retries` times by
//!   default 2, before they count; logical ones count at once;
//! - each overseer's output is read by its kind (test results, error
//!   counts, security findings, patterns) into [`OverseerSignals`], with one
//!   [`Verdict`] per overseer whose evidence is the end of its output.
//!
//! An environmental failure records no measurement (the state was not
//! measured); only its verdict says what happened.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use tokio::sync::watch;

use super::canary::{Canary, CanaryReport, letters};
use super::classify::{environmental_output, hard_environmental};
use super::parse::{TestFormat, parse_diagnostics, parse_jest_json, parse_junit, parse_security, parse_tests};
use super::recognise::{Runner, as_run, runner_of};
use super::signals::{
    BuildResult, CustomCheckResult, FailureClass, LintResults, OverseerSignals, SecurityScanResult, TestResults,
    TypeCheckResult, Verdict,
};
use crate::process::{Capture, LeftProcess, ProcessEnd, ShellCommand, ShellRun};
use crate::suite::{CostClass, Overseer, OverseerKind};

/// How overseers are run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunnerConfig {
    /// Extra attempts for an environmental failure before it counts.
    pub environmental_retries: u32,
    /// Pause before such a retry (milliseconds).
    pub retry_delay_ms: u64,
    /// Timeout of an overseer whose task file gives none (seconds).
    pub default_timeout_secs: f64,
    /// Bytes of output kept as a verdict's evidence (its end).
    pub evidence_bytes: usize,
    /// Bytes of output kept from the start and from the end of a run.
    pub output_head_bytes: usize,
    pub output_tail_bytes: usize,
    /// Largest report file read (bytes).
    pub max_report_bytes: u64,
    /// Whether canary tests check that a recognised test runner still
    /// reports the truth (see [`super::canary`]).
    pub canaries: bool,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            environmental_retries: 2,
            retry_delay_ms: 500,
            default_timeout_secs: 300.0,
            evidence_bytes: 2000,
            output_head_bytes: 256 * 1024,
            output_tail_bytes: 256 * 1024,
            max_report_bytes: 16 * 1024 * 1024,
            canaries: true,
        }
    }
}

/// What the trajectory's policy says about this measurement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MeasurePolicy {
    /// Skip expensive overseers (full suites, integration tests).
    pub skip_expensive: bool,
}

#[derive(Debug, Error)]
pub enum OverseerError {
    #[error("overseer `{overseer}`: `{field}` is not a valid regular expression: {error}")]
    BadPattern { overseer: String, field: &'static str, error: String },
}

/// One overseer's run, for telemetry and tests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverseerRun {
    pub overseer: String,
    pub kind: OverseerKind,
    /// Runs made: 1, more after environmental failures, 0 when skipped.
    pub attempts: u32,
    pub duration: Duration,
    /// How the last attempt ended ("exited with code 1", "timed out after 5 s").
    pub ended: String,
    pub exit_code: Option<i32>,
    /// The test format recognised, for test overseers.
    pub test_format: Option<TestFormat>,
    /// Processes the command left running behind it (killed; every attempt's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_running: Vec<LeftProcess>,
}

/// What one measurement of a workspace produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Measurement {
    pub signals: OverseerSignals,
    /// The overseers in the order they were considered (skipped ones included).
    pub runs: Vec<OverseerRun>,
    /// The test overseers whose runner reported the planted canaries as
    /// they are.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub truthful: Vec<String>,
}

/// Whether canaries are planted, and for which overseers a runner that does
/// not report them truthfully voids the measurement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CanaryMode {
    #[default]
    Off,
    /// Planted for every recognised test runner, required of none: the
    /// baseline, which finds out which runners collect them.
    Probe,
    /// Planted for every recognised test runner, required of these.
    Require(std::collections::BTreeSet<String>),
}

/// The name of the check a runner that lied about the canaries fails.
pub const RUNNER_TRUTH_CHECK: &str = "runner-truth";

#[derive(Clone)]
struct Configured {
    spec: Overseer,
    success: Option<Regex>,
    failure: Option<Regex>,
}

/// Runs a task's overseers; built once per trajectory, used after every
/// execution.
pub struct OverseerRunner {
    overseers: Vec<Configured>,
    config: RunnerConfig,
    env: Vec<(String, String)>,
    /// How the commands are confined (none unless [`OverseerRunner::sandboxed`]).
    sandbox: Option<crate::process::sandbox::SandboxConfig>,
    /// Folders the sandboxed commands may read though `/tmp` hides them.
    readable: Vec<std::path::PathBuf>,
    canaries: CanaryMode,
}

fn cost_rank(c: CostClass) -> u8 {
    match c {
        CostClass::Cheap => 0,
        CostClass::Moderate => 1,
        CostClass::Expensive => 2,
    }
}

impl OverseerRunner {
    /// Orders the overseers cheapest first (stable within a class) and
    /// compiles their patterns.
    pub fn new(overseers: Vec<Overseer>, config: RunnerConfig) -> Result<OverseerRunner, OverseerError> {
        super::recognise::prepare();
        let mut configured = Vec::with_capacity(overseers.len());
        for spec in overseers {
            let compile = |field: &'static str, p: &Option<String>| -> Result<Option<Regex>, OverseerError> {
                // Multi-line: `^` and `$` match at every line, which is what
                // a pattern over a command's output means.
                p.as_deref()
                    .map(|p| RegexBuilder::new(p).multi_line(true).build())
                    .transpose()
                    .map_err(|e| OverseerError::BadPattern { overseer: spec.name.clone(), field, error: e.to_string() })
            };
            let success = compile("success_pattern", &spec.success_pattern)?;
            let failure = compile("failure_pattern", &spec.failure_pattern)?;
            configured.push(Configured { spec, success, failure });
        }
        configured.sort_by_key(|c| cost_rank(c.spec.cost));
        Ok(OverseerRunner {
            overseers: configured,
            config,
            env: Vec::new(),
            sandbox: None,
            readable: Vec::new(),
            canaries: CanaryMode::Off,
        })
    }

    /// Runs every overseer's command in the sandbox `config` describes
    /// (nothing, when it is turned off); an overseer declared `network: true`
    /// keeps the network.
    pub fn sandboxed(mut self, config: &crate::process::sandbox::SandboxConfig) -> OverseerRunner {
        self.sandbox = Some(config.clone());
        self
    }

    /// Lets the sandboxed commands read `dir` (read-only) wherever it is.
    pub fn reading(mut self, dir: std::path::PathBuf) -> OverseerRunner {
        self.readable.push(dir);
        self
    }

    /// Adds an environment variable to every overseer's command.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> OverseerRunner {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Plants canaries as `mode` says (nothing, when the configuration turns them off).
    pub fn set_canaries(&mut self, mode: CanaryMode) {
        self.canaries = if self.config.canaries { mode } else { CanaryMode::Off };
    }

    /// The overseers in the order they run.
    pub fn order(&self) -> Vec<&Overseer> {
        self.overseers.iter().map(|c| &c.spec).collect()
    }

    /// Runs the overseers against the workspace at `root`.
    pub async fn measure(
        &self,
        root: &Path,
        policy: MeasurePolicy,
        cancel: Option<watch::Receiver<bool>>,
    ) -> Measurement {
        let mut m = Measurement::default();
        let mut blocked_by: Option<String> = None;
        let mut cancelled = false;
        for c in &self.overseers {
            let o = &c.spec;
            let skip_reason = if cancelled {
                Some("skipped: the measurement was cancelled".to_string())
            } else if let Some(b) = &blocked_by {
                Some(format!(
                    "skipped: `{b}` failed, and checks after a failing build or type check would only restate it"
                ))
            } else if o.cost == CostClass::Expensive && policy.skip_expensive {
                Some("skipped: expensive overseers are off for this trajectory".to_string())
            } else {
                None
            };
            if let Some(reason) = skip_reason {
                m.signals.verdicts.push(Verdict {
                    overseer: o.name.clone(),
                    passed: false,
                    failure_class: None,
                    evidence: reason,
                    skipped: true,
                });
                m.runs.push(OverseerRun {
                    overseer: o.name.clone(),
                    kind: o.kind,
                    attempts: 0,
                    duration: Duration::ZERO,
                    ended: "skipped".to_string(),
                    exit_code: None,
                    test_format: None,
                    left_running: Vec::new(),
                });
                continue;
            }

            let (assessment, run, attempts, canary) = self.run_with_retries(c, root, cancel.clone()).await;
            if matches!(run.end, ProcessEnd::Cancelled) {
                cancelled = true;
            }
            if !assessment.passed && matches!(o.kind, OverseerKind::Build | OverseerKind::TypeCheck) {
                blocked_by = Some(o.name.clone());
            }
            let output = match &canary {
                Some(c) => c.scrub(&run.combined_output()),
                None => run.combined_output(),
            };
            // A void run measured nothing: its tests are not counted, whatever it said of them.
            let void = self.judge_canary(o, assessment.canary.as_ref(), &mut m);
            let summary = if void {
                format!("void: the runner did not report the canary tests truthfully; it said: {}", assessment.summary)
            } else {
                assessment.summary.clone()
            };
            let evidence = format!("{summary}\n{}", tail(&output, self.config.evidence_bytes));
            m.signals.verdicts.push(Verdict {
                overseer: o.name.clone(),
                passed: assessment.passed && !void,
                failure_class: if void { Some(FailureClass::Logical) } else { assessment.class },
                evidence: evidence.trim_end().to_string(),
                skipped: false,
            });
            m.runs.push(OverseerRun {
                overseer: o.name.clone(),
                kind: o.kind,
                attempts,
                duration: run.duration,
                ended: run.end.describe(),
                exit_code: run.end.exit_code(),
                test_format: assessment.format,
                left_running: run.left_running.clone(),
            });
            if !void {
                merge(&mut m.signals, assessment.measured);
            }
        }
        m
    }

    /// What the canaries of overseer `o` say of this measurement: a runner
    /// that reported them truthfully is noted; one required to and that did
    /// not voids its run (`true`) with a failing required check.
    fn judge_canary(&self, o: &Overseer, report: Option<&CanaryReport>, m: &mut Measurement) -> bool {
        let required = matches!(&self.canaries, CanaryMode::Require(names) if names.contains(&o.name));
        let detail = match report {
            Some(CanaryReport::Truthful) => {
                m.truthful.push(o.name.clone());
                return false;
            }
            _ if !required => return false,
            None | Some(CanaryReport::NotReported) => format!(
                "`{}`: the test run ended without reporting every test it ran before the first change \
                 (the process ended early, or tests are no longer collected), so this measurement does not count",
                o.name
            ),
            Some(CanaryReport::Lied(how)) => format!(
                "`{}`: the test runner no longer reports the truth ({how}): code under test changed how tests \
                 report, so this measurement does not count; leave the test framework, the process's exit and \
                 the test files alone",
                o.name
            ),
        };
        m.signals.custom_checks.push(CustomCheckResult {
            name: RUNNER_TRUTH_CHECK.to_string(),
            passed: false,
            detail,
            required: true,
        });
        true
    }

    async fn run_with_retries(
        &self,
        c: &Configured,
        root: &Path,
        cancel: Option<watch::Receiver<bool>>,
    ) -> (Assessment, ShellRun, u32, Option<Canary>) {
        let o = &c.spec;
        let timeout = o.timeout.unwrap_or_else(|| crate::time::secs(self.config.default_timeout_secs.max(0.001)));
        let runner = (o.kind == OverseerKind::Test).then(|| runner_of(&o.command)).flatten();
        // The command as it runs: naming every test, and writing the report
        // its runner can write (to a fresh name, removed after each run).
        let report_file = runner
            .and_then(Runner::report_extension)
            .map(|ext| root.join(format!(".attractor-report-{}.{ext}", letters(&mut fresh_rng(), 12))));
        let (command, report_file) = if o.kind == OverseerKind::Test {
            let run = as_run(&o.command, report_file.as_deref());
            (run.command, run.report)
        } else {
            (o.command.clone(), None)
        };
        let mut cmd = ShellCommand::new(&command, root, timeout)
            .capture(Capture::head_and_tail(self.config.output_head_bytes, self.config.output_tail_bytes))
            .env("ATTRACTOR_WORKSPACE", root)
            .env("ATTRACTOR_OVERSEER", &o.name)
            .sandboxed(self.sandbox.as_ref().and_then(|s| s.for_command(o.network)).map(|mut s| {
                s.readable = self.readable.clone();
                s
            }));
        for (k, v) in &self.env {
            cmd = cmd.env(k, v);
        }
        let mut attempts = 0;
        let mut left_running = Vec::new();
        loop {
            attempts += 1;
            let started = SystemTime::now();
            let canary = match (runner.filter(|r| r.takes_canaries()), &self.canaries) {
                (Some(_), CanaryMode::Probe | CanaryMode::Require(_)) => match Canary::plant(root, &mut fresh_rng()) {
                    Ok(c) => Some(c),
                    Err(e) => {
                        tracing::warn!(overseer = %o.name, error = %e, "could not plant the canary tests");
                        None
                    }
                },
                _ => None,
            };
            let mut run = cmd.run(cancel.clone()).await;
            if let Some(c) = &canary {
                c.remove();
            }
            left_running.append(&mut run.left_running);
            let report = match &report_file {
                Some(file) => {
                    let text = self.read_fresh(file, started);
                    let _ = std::fs::remove_file(file);
                    text.map(|t| vec![t])
                }
                None => None,
            };
            let report = report.or_else(|| self.read_report(o, root, started));
            let (assessment, returned) = assess_apart(c, root, run, report, canary.as_ref()).await;
            run = returned;
            let retry = assessment.class == Some(FailureClass::Environmental)
                && !matches!(run.end, ProcessEnd::Cancelled)
                && attempts <= self.config.environmental_retries;
            if !retry {
                let mut assessment = assessment;
                if attempts > 1 {
                    assessment.summary.push_str(&format!(" ({attempts} attempts)"));
                }
                run.left_running = left_running;
                return (assessment, run, attempts, canary);
            }
            tracing::debug!(overseer = %o.name, attempts, reason = %assessment.summary, "environmental failure; retrying");
            tokio::time::sleep(Duration::from_millis(self.config.retry_delay_ms)).await;
        }
    }

    /// The report file (or the `.xml`/`.json`/`.sarif` files of a report
    /// folder) written by this run: files older than the run are stale and
    /// ignored, and a link leading out of the workspace is not followed.
    fn read_report(&self, o: &Overseer, root: &Path, started: SystemTime) -> Option<Vec<String>> {
        let rel = o.report.as_deref()?;
        let root = std::fs::canonicalize(root).ok()?;
        let path = std::fs::canonicalize(root.join(rel)).ok()?;
        if !path.starts_with(&root) {
            tracing::warn!(overseer = %o.name, report = rel, "the report path leads outside the workspace; ignored");
            return None;
        }
        let files: Vec<PathBuf> = if path.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(&path)
                .ok()?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "xml" || x == "json" || x == "sarif"))
                .filter(|p| std::fs::canonicalize(p).is_ok_and(|c| c.starts_with(&root)))
                .collect();
            v.sort();
            v
        } else {
            vec![path]
        };
        let texts: Vec<String> = files.iter().filter_map(|p| self.read_fresh(p, started)).collect();
        (!texts.is_empty()).then_some(texts)
    }

    /// The report file at `p`, when this run wrote it (files older than the
    /// run are stale) and it is no larger than the configured bound.
    fn read_fresh(&self, p: &Path, started: SystemTime) -> Option<String> {
        let meta = std::fs::metadata(p).ok()?;
        // A second's slack for file systems with coarse timestamps.
        let since = started.checked_sub(Duration::from_secs(1)).unwrap_or(started);
        let fresh = meta.modified().is_ok_and(|t| t >= since);
        if !meta.is_file() || meta.len() > self.config.max_report_bytes || !fresh {
            return None;
        }
        std::fs::read_to_string(p).ok()
    }
}

/// What one overseer's run amounted to.
struct Assessment {
    passed: bool,
    class: Option<FailureClass>,
    /// One line: what happened, for the verdict's evidence.
    summary: String,
    measured: Measured,
    format: Option<TestFormat>,
    /// What the runner said of the planted canaries, when there were some.
    canary: Option<CanaryReport>,
}

enum Measured {
    Nothing,
    Tests(TestResults),
    Build(BuildResult),
    TypeCheck(TypeCheckResult),
    Lint(LintResults),
    Security(SecurityScanResult),
    Custom(CustomCheckResult),
}

impl Assessment {
    fn environmental(reason: String) -> Assessment {
        Assessment {
            passed: false,
            class: Some(FailureClass::Environmental),
            summary: format!("environmental failure: {reason}"),
            measured: Measured::Nothing,
            format: None,
            canary: None,
        }
    }
}

/// A generator no executor can predict: the canaries' names come from it.
fn fresh_rng() -> rand_chacha::ChaCha8Rng {
    use rand::SeedableRng;
    use std::sync::atomic::{AtomicU64, Ordering};
    static DRAWN: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let seed = nanos
        ^ u64::from(std::process::id()).rotate_left(32)
        ^ DRAWN.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    rand_chacha::ChaCha8Rng::seed_from_u64(seed)
}

/// [`assess`] on a thread of the blocking pool: reading up to half a MiB of
/// output through the parsers' patterns is CPU work that would hold up every
/// other task on this thread, and a pattern's first use compiles it, which
/// takes a deep stack — deep inside a trajectory (a split's child's, in a
/// debug build) it overflowed a thread's 2 MiB. The run is handed back.
async fn assess_apart(
    c: &Configured,
    root: &Path,
    run: ShellRun,
    report: Option<Vec<String>>,
    canary: Option<&Canary>,
) -> (Assessment, ShellRun) {
    let (c, root, canary) = (c.clone(), root.to_path_buf(), canary.cloned());
    let kept = (run.end.clone(), run.duration);
    match tokio::task::spawn_blocking(move || {
        let a = assess(&c, &root, &run, report, canary.as_ref());
        (a, run)
    })
    .await
    {
        Ok(done) => done,
        // Only a panic in a parser gets here: the run measured nothing.
        Err(e) => {
            tracing::error!(error = %e, "reading a checker's output failed");
            let run = ShellRun {
                end: kept.0,
                stdout: String::new(),
                stderr: String::new(),
                duration: kept.1,
                left_running: Vec::new(),
            };
            (Assessment::environmental("its output could not be read".to_string()), run)
        }
    }
}

fn assess(
    c: &Configured,
    root: &Path,
    run: &ShellRun,
    report: Option<Vec<String>>,
    canary: Option<&Canary>,
) -> Assessment {
    if let Some(reason) = hard_environmental(&run.end) {
        return Assessment::environmental(reason);
    }
    let output = run.combined_output();
    let ok = run.end.success();
    let exit = run.end.describe();
    let env_in_output = || if ok { None } else { environmental_output(&output) };
    match c.spec.kind {
        OverseerKind::Test => assess_tests(&c.spec, root, run, &output, report, canary),
        OverseerKind::Build | OverseerKind::TypeCheck | OverseerKind::Lint => {
            if let Some(reason) = env_in_output() {
                return Assessment::environmental(reason);
            }
            let d = parse_diagnostics(&output);
            // The exit status is the verdict; a failing check reports at least one error.
            let errors = if ok { d.errors } else { d.errors.max(1) };
            let (what, measured) = match c.spec.kind {
                OverseerKind::Build => (
                    "build",
                    Measured::Build(BuildResult { success: ok, error_count: errors, warning_count: d.warnings }),
                ),
                OverseerKind::TypeCheck => {
                    ("type check", Measured::TypeCheck(TypeCheckResult { clean: ok, error_count: errors }))
                }
                _ => ("lint", Measured::Lint(LintResults { error_count: errors, warning_count: d.warnings })),
            };
            let summary = if ok {
                format!("{what} passed ({})", crate::counted(d.warnings, "warning"))
            } else {
                format!(
                    "{what} failed: {}, {}; the command {exit}",
                    crate::counted(errors, "error"),
                    crate::counted(d.warnings, "warning")
                )
            };
            Assessment {
                passed: ok,
                class: (!ok).then_some(FailureClass::Logical),
                summary,
                measured,
                format: None,
                canary: None,
            }
        }
        OverseerKind::Security => {
            let texts = report.unwrap_or_else(|| vec![output.clone()]);
            let mut s = SecurityScanResult::default();
            for t in &texts {
                let r = parse_security(t);
                s.critical_count += r.critical_count;
                s.high_count += r.high_count;
                s.medium_count += r.medium_count;
                s.low_count += r.low_count;
            }
            let found = s.critical_count + s.high_count + s.medium_count + s.low_count;
            // Scanners exit non-zero when they find anything, so the exit
            // status says little; a scanner that failed to run shows it in
            // its output and found nothing.
            if found == 0
                && let Some(reason) = env_in_output()
            {
                return Assessment::environmental(reason);
            }
            let passed = s.critical_count == 0;
            let summary = format!(
                "security scan {}: {} critical, {} high, {} medium, {} low",
                if passed { "passed" } else { "failed" },
                s.critical_count,
                s.high_count,
                s.medium_count,
                s.low_count
            );
            Assessment {
                passed,
                class: (!passed).then_some(FailureClass::Logical),
                summary,
                measured: Measured::Security(s),
                format: None,
                canary: None,
            }
        }
        OverseerKind::Custom => {
            let line_of =
                |re: &Regex| output.lines().find(|l| re.is_match(l)).map(|l| l.trim().to_string()).unwrap_or_default();
            let (passed, detail) = if let Some(re) = c.failure.as_ref().filter(|re| re.is_match(&output)) {
                (false, format!("the failure pattern matched: {}", line_of(re)))
            } else if let Some(re) = &c.success {
                if re.is_match(&output) {
                    (true, format!("the success pattern matched: {}", line_of(re)))
                } else {
                    (false, format!("the success pattern `{}` did not match; the command {exit}", re.as_str()))
                }
            } else if ok {
                (true, "the command exited with code 0".to_string())
            } else {
                (false, format!("the command {exit}"))
            };
            let pattern_failed = c.failure.as_ref().is_some_and(|re| re.is_match(&output));
            if !passed
                && !pattern_failed
                && let Some(reason) = env_in_output()
            {
                return Assessment::environmental(reason);
            }
            Assessment {
                passed,
                class: (!passed).then_some(FailureClass::Logical),
                summary: format!("check {}: {detail}", if passed { "passed" } else { "failed" }),
                measured: Measured::Custom(CustomCheckResult {
                    name: c.spec.name.clone(),
                    passed,
                    detail,
                    required: false,
                }),
                format: None,
                canary: None,
            }
        }
    }
}

fn assess_tests(
    o: &Overseer,
    root: &Path,
    run: &ShellRun,
    output: &str,
    report: Option<Vec<String>>,
    canary: Option<&Canary>,
) -> Assessment {
    let exit = run.end.describe();
    // A fresh report file is the most exact source; the output is the fallback.
    let from_report = report.and_then(|texts| {
        let mut merged: Option<(TestFormat, TestResults)> = None;
        for t in texts {
            let parsed = match parse_jest_json(&t) {
                Some(r) => Some((TestFormat::JestJson, r)),
                None => parse_junit(&t).ok().map(|r| (TestFormat::Junit, r)),
            };
            if let Some((format, r)) = parsed {
                add_tests(&mut merged.get_or_insert_with(|| (format, TestResults::default())).1, r);
            }
        }
        merged
    });
    let parsed = from_report.or_else(|| parse_tests(output));
    let Some((format, mut results)) = parsed.map(|(f, r)| (f, relative_to(root, r))) else {
        if !run.end.success()
            && let Some(reason) = environmental_output(output)
        {
            return Assessment::environmental(reason);
        }
        // Output in no format Attractor reads is no evidence about the
        // tests, whatever the exit status: never a passing test. The
        // verdict rests on the other overseers.
        return Assessment {
            passed: false,
            class: Some(FailureClass::Logical),
            summary: format!(
                "no test evidence: the output names no test in a format Attractor reads (the command {exit}); \
                 the verdict rests on the other overseers"
            ),
            measured: Measured::Nothing,
            format: None,
            canary: canary.map(|_| CanaryReport::NotReported),
        };
    };
    let canary_report = canary.map(|c| c.read(&mut results));
    // The must-fail canary fails the run: when the runner reported the
    // canaries truthfully, the tests' own outcomes are the verdict.
    let ok = if canary_report == Some(CanaryReport::Truthful) { results.failed == 0 } else { run.end.success() };
    if results.failed == 0 && !ok {
        if let Some(reason) = environmental_output(output) {
            return Assessment::environmental(reason);
        }
        // The runner failed although no test did (a binary that did not
        // compile, no tests collected): one failure, so the signals agree
        // with the verdict.
        results.failed += 1;
        results.total += 1;
        results.failing.push(format!("{} ({exit})", o.name));
    }
    let passed = results.failed == 0;
    let fmt = format!(" [{format}]");
    let summary = if passed {
        format!("tests passed: {} of {} ({} skipped){fmt}", results.passed, results.total, results.skipped)
    } else {
        let shown: Vec<&str> = results.failing.iter().take(10).map(String::as_str).collect();
        let more = results.failing.len().saturating_sub(shown.len());
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        format!("{} of {} tests failed{fmt}: {}{more}", results.failed, results.total, shown.join(", "))
    };
    Assessment {
        passed,
        class: (!passed).then_some(FailureClass::Logical),
        summary,
        measured: Measured::Tests(results),
        format: Some(format),
        canary: canary_report,
    }
}

/// `results` with test names that begin with the workspace's path (jest
/// and vitest name files absolutely) made relative to it: a test keeps its
/// name from one copy of a workspace to the next.
fn relative_to(root: &Path, mut results: TestResults) -> TestResults {
    let mut prefixes = vec![format!("{}/", root.display())];
    if let Ok(real) = std::fs::canonicalize(root) {
        prefixes.push(format!("{}/", real.display()));
    }
    for name in results.passing.iter_mut().chain(results.failing.iter_mut()) {
        if let Some(rest) = prefixes.iter().find_map(|p| name.strip_prefix(p.as_str())) {
            *name = rest.to_string();
        }
    }
    results
}

fn add_tests(into: &mut TestResults, r: TestResults) {
    into.passed += r.passed;
    into.failed += r.failed;
    into.skipped += r.skipped;
    into.total += r.total;
    into.failing.extend(r.failing);
    into.passing.extend(r.passing);
}

/// Adds one overseer's measurement to the signals (several overseers of a
/// kind add up).
fn merge(s: &mut OverseerSignals, m: Measured) {
    match m {
        Measured::Nothing => {}
        Measured::Tests(r) => add_tests(s.test_results.get_or_insert_with(TestResults::default), r),
        Measured::Build(b) => {
            let into = s.build_result.get_or_insert(BuildResult { success: true, ..BuildResult::default() });
            into.success &= b.success;
            into.error_count += b.error_count;
            into.warning_count += b.warning_count;
        }
        Measured::TypeCheck(t) => {
            let into = s.type_check.get_or_insert(TypeCheckResult { clean: true, error_count: 0 });
            into.clean &= t.clean;
            into.error_count += t.error_count;
        }
        Measured::Lint(l) => {
            let into = s.lint_results.get_or_insert_with(LintResults::default);
            into.error_count += l.error_count;
            into.warning_count += l.warning_count;
        }
        Measured::Security(r) => {
            let into = s.security_scan.get_or_insert_with(SecurityScanResult::default);
            into.critical_count += r.critical_count;
            into.high_count += r.high_count;
            into.medium_count += r.medium_count;
            into.low_count += r.low_count;
        }
        Measured::Custom(c) => s.custom_checks.push(c),
    }
}

/// The last `max` bytes of `text`, starting at a line where possible.
fn tail(text: &str, max: usize) -> &str {
    let text = text.trim_end();
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let cut = &text[start..];
    match cut.find('\n') {
        Some(i) if i + 1 < cut.len() => &cut[i + 1..],
        _ => cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_starts_at_a_line_and_never_splits_a_character() {
        assert_eq!(tail("one\ntwo\nthree", 8), "three");
        assert_eq!(tail("short", 100), "short");
        let s = "ééééé";
        assert_eq!(tail(s, 3), "é");
    }

    #[test]
    fn cheap_ones_run_first_and_the_file_order_holds_within_a_class() {
        let o = |name: &str, cost| Overseer::new(name, OverseerKind::Custom, "true").cost(cost);
        let runner = OverseerRunner::new(
            vec![
                o("e1", CostClass::Expensive),
                o("m1", CostClass::Moderate),
                o("c1", CostClass::Cheap),
                o("m2", CostClass::Moderate),
                o("c2", CostClass::Cheap),
            ],
            RunnerConfig::default(),
        )
        .unwrap();
        let names: Vec<&str> = runner.order().iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, vec!["c1", "c2", "m1", "m2", "e1"]);
    }

    #[test]
    fn a_bad_pattern_built_in_code_is_an_error_not_a_panic() {
        let bad = Overseer::new("x", OverseerKind::Custom, "true").failure_pattern("(");
        let err = OverseerRunner::new(vec![bad], RunnerConfig::default()).err().unwrap();
        assert!(err.to_string().contains("failure_pattern"), "{err}");
    }
}
