//! How agent tasks run beyond what a suite file says: the convergence
//! engine's numbers, the overseers' retries and output limits, the executor's
//! and the verifier's model settings, the workspace's limits and convergence
//! memory. Read from a JSON (or YAML) file over the defaults with
//! `--agent-config`; a missing key keeps its default, an unknown one is an
//! error naming its path, and every number is checked against the range it
//! can sensibly take ([`BOUNDS`]) so that a typo such as `1e20` is refused
//! at its line and column instead of wedging a run hours later.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::verify::VerifierConfig;
use crate::engine::{Complexity, EngineConfig};
use crate::executor::LlmExecutorConfig;
use crate::memory::MemoryConfig;
use crate::overseer::runner::RunnerConfig;
use crate::process::sandbox::SandboxConfig;
use crate::suite::SuiteError;
use crate::workspace::WorkspaceConfig;

/// Everything about how agent tasks run that a suite file does not say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// The convergence engine's numbers (seed 002's constants by default),
    /// with when to split a task (`decomposition`) and when to sample in
    /// parallel (`parallel`). Without a model to ask for a split,
    /// `decompose` is never offered.
    pub engine: EngineConfig,
    pub overseers: RunnerConfig,
    pub executor: LlmExecutorConfig,
    pub workspace: WorkspaceConfig,
    /// The complexity SETUP sizes the budget by (a task's `budget:` overrides it).
    pub complexity: Complexity,
    pub verifier: VerifierConfig,
    /// How often a paused trajectory looks for an answer (milliseconds).
    pub intervention_poll_ms: u64,
    /// How long a paused trajectory waits for an answer before treating
    /// silence as a rejection; `None`: until answered or stopped.
    pub intervention_timeout_secs: Option<f64>,
    /// Executor replies in a row that cannot be used at all before the run
    /// fails (each one is a refused reply, counted as a gate rejection).
    pub max_unusable_replies: u32,
    /// How the category's memories prime a new trajectory.
    pub memory: MemoryConfig,
    /// How overseers and command executors are confined (bubblewrap, on by
    /// default; `--no-sandbox` turns it off).
    pub sandbox: SandboxConfig,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            engine: EngineConfig::default(),
            overseers: RunnerConfig::default(),
            executor: LlmExecutorConfig::default(),
            workspace: WorkspaceConfig::default(),
            complexity: Complexity::Simple,
            verifier: VerifierConfig::default(),
            intervention_poll_ms: 1000,
            intervention_timeout_secs: None,
            max_unusable_replies: 2,
            memory: MemoryConfig::default(),
            sandbox: SandboxConfig::default(),
        }
    }
}

impl AgentConfig {
    /// Reads a configuration file (JSON, or YAML) over the defaults, with
    /// every problem located in it.
    pub fn load(path: &Path) -> Result<AgentConfig, SuiteError> {
        let text = crate::suite::read_text(path, "agent configuration", HINT)?;
        AgentConfig::parse(&text, path)
    }

    /// Parses a configuration over the defaults: a syntax error, an unknown
    /// key or a number outside its range is an issue at its place in `path`.
    pub fn parse(text: &str, path: &Path) -> Result<AgentConfig, SuiteError> {
        let config: AgentConfig = crate::suite::parse_strict(text, path, HINT).map_err(SuiteError::one)?;
        let wrong = config.out_of_bounds().into_iter().map(|w| (w.field, w.message, w.hint));
        crate::suite::issues_at(text, path, wrong)?;
        Ok(config)
    }

    /// Every number outside its range.
    pub fn out_of_bounds(&self) -> Vec<OutOfBounds> {
        let defaults = serde_json::to_value(AgentConfig::default()).unwrap_or(Value::Null);
        let mut wrong = Vec::new();
        let mut leaves = Vec::new();
        numbers(&serde_json::to_value(self).unwrap_or(Value::Null), String::new(), &mut leaves);
        for ((field, whole), value) in leaves {
            let default = field.split('.').try_fold(&defaults, |v, k| v.get(k)).filter(|v| !v.is_null());
            if value.is_nan() && default.is_none_or(|d| !d.is_number()) {
                // A null where null is allowed (an optional setting left out).
                continue;
            }
            let bound = bound_of(&field, whole);
            if value >= bound.min && value <= bound.max {
                continue;
            }
            if !value.is_finite() {
                wrong.push(OutOfBounds {
                    message: "is not a finite number (.nan and .inf are not usable here)".to_string(),
                    hint: format!(
                        "write a number from {} to {}",
                        crate::suite::shown_number(bound.min),
                        crate::suite::shown_number(bound.max)
                    ),
                    field,
                });
                continue;
            }
            wrong.push(OutOfBounds {
                message: format!(
                    "{} is outside the range {} to {} ({})",
                    crate::suite::shown_number(value),
                    crate::suite::shown_number(bound.min),
                    crate::suite::shown_number(bound.max),
                    bound.what
                ),
                hint: match default {
                    Some(d) => format!("use a value in that range; the default is {d}"),
                    None => "use a value in that range, or remove the key for the default".to_string(),
                },
                field,
            });
        }
        // Optional numbers serialize as null whether left out or `.nan`:
        // checked where they are.
        for (field, value) in [
            ("intervention_timeout_secs", self.intervention_timeout_secs),
            ("executor.timeout_secs", self.executor.timeout_secs),
        ] {
            if value.is_some_and(|v| !v.is_finite()) {
                wrong.push(OutOfBounds {
                    field: field.to_string(),
                    message: "is not a finite number (.nan and .inf are not usable here)".to_string(),
                    hint: "write a number of seconds, or remove the key for the default".to_string(),
                });
            }
        }
        let split = &self.engine.decomposition;
        if split.min_subtasks > split.max_subtasks {
            wrong.push(OutOfBounds {
                field: "engine.decomposition.min_subtasks".to_string(),
                message: format!("{} is more than max_subtasks ({})", split.min_subtasks, split.max_subtasks),
                hint: "make min_subtasks at most max_subtasks".to_string(),
            });
        }
        wrong
    }
}

/// What a configuration file is, for the hints of its issues.
const HINT: &str = "the agent configuration is JSON (or YAML) over the defaults: engine, overseers, executor, \
                    workspace, complexity, verifier, intervention_poll_ms, intervention_timeout_secs, \
                    max_unusable_replies, memory, sandbox; see `--agent-config` in docs/cli.md";

/// A number of the configuration outside its range.
#[derive(Debug, Clone, PartialEq)]
pub struct OutOfBounds {
    /// The dotted path, e.g. `engine.ggs.epsilon`.
    pub field: String,
    pub message: String,
    pub hint: String,
}

/// The range a number may take and what it measures.
#[derive(Debug, Clone, Copy)]
struct Bound {
    min: f64,
    max: f64,
    what: &'static str,
}

const fn bound(min: f64, max: f64, what: &'static str) -> Bound {
    Bound { min, max, what }
}

const DAY_MS: f64 = 86_400_000.0;
const WEEK_SECS: f64 = 604_800.0;
const GIB: f64 = 1_073_741_824.0;

/// The range of each number, by the field's name (`name`), its dotted path
/// (`a.b.name`), or the end of its name (`*_bytes`); the first match wins.
/// A whole number no rule names is a count from 1 to 100,000, a fraction
/// a share from 0 to 1: most of the engine's numbers are one or the other.
const BOUNDS: &[(&str, Bound)] = &[
    ("intervention_poll_ms", bound(10.0, 3_600_000.0, "milliseconds between looks for an answer")),
    ("overseers.retry_delay_ms", bound(0.0, 3_600_000.0, "milliseconds")),
    ("*_ms", bound(1.0, 7.0 * DAY_MS, "milliseconds")),
    ("*_secs", bound(0.001, WEEK_SECS, "seconds, at most a week")),
    ("wall_time_minutes", bound(1.0, 10_080.0, "minutes, at most a week")),
    ("*_bytes", bound(1.0, GIB, "bytes, at most 1 GiB")),
    ("max_tokens", bound(1.0, 10_000_000.0, "tokens of one reply")),
    ("*tokens*", bound(1.0, 1e12, "tokens")),
    ("temperature", bound(0.0, 2.0, "the model's sampling temperature")),
    ("max_samples", bound(1.0, 64.0, "parallel samples")),
    ("min_subtasks", bound(2.0, 100.0, "subtasks")),
    ("max_subtasks", bound(2.0, 100.0, "subtasks")),
    ("max_depth", bound(0.0, 5.0, "levels of splitting")),
    ("overhead_per_subtask", bound(0.0, 100.0, "iterations")),
    ("sandbox.memory_mb", bound(16.0, 1_048_576.0, "MiB one command may allocate")),
    ("sandbox.processes", bound(8.0, 1_000_000.0, "processes")),
    // Counts where 0 means "none".
    ("environmental_retries", bound(0.0, 100.0, "retries")),
    ("max_extensions", bound(0.0, 100.0, "budget extensions")),
    ("thorough_extra_extensions", bound(0.0, 100.0, "budget extensions")),
    ("extension_iterations", bound(0.0, 100_000.0, "iterations")),
    ("max_fresh_starts", bound(0.0, 100.0, "fresh starts")),
    ("max_unusable_replies", bound(0.0, 100.0, "replies")),
    ("fallback_uses", bound(0.0, 100_000.0, "uses")),
    ("recall_limit", bound(0.0, 10_000.0, "memories")),
    ("max_lessons", bound(0.0, 100.0, "lessons")),
    ("min_history", bound(0.0, 100_000.0, "earlier trajectories")),
    ("vulnerability_jump_above", bound(0.0, 100_000.0, "findings")),
    ("short_description_words", bound(0.0, 1e6, "words")),
    ("long_description_words", bound(0.0, 1e6, "words")),
    // Numbers that are not shares.
    ("churn_scale_lines", bound(1.0, 1e6, "changed lines")),
    ("churn_above", bound(0.0, 1e6, "changed lines")),
    ("exploration_tilt", bound(0.0, 100.0, "a multiplier")),
    ("*_factor", bound(0.01, 100.0, "a multiplier")),
    ("*_iterations", bound(1.0, 100_000.0, "iterations")),
];

const COUNT: Bound = bound(1.0, 100_000.0, "a count");
const SHARE: Bound = bound(0.0, 1.0, "a share, weight or threshold");

/// The rule for the number at `field`; `whole` numbers that no rule names
/// are counts, the others shares.
fn bound_of(path: &str, whole: bool) -> Bound {
    let name = path.rsplit('.').next().unwrap_or(path);
    let matches = |pattern: &str| match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
        (Some(rest), _) if rest.ends_with('*') => name.contains(rest.trim_end_matches('*')),
        (Some(suffix), _) => name.ends_with(suffix),
        _ if pattern.contains('.') => path == pattern || path.ends_with(&format!(".{pattern}")),
        _ => name == pattern,
    };
    BOUNDS.iter().find(|(p, _)| matches(p)).map_or(if whole { COUNT } else { SHARE }, |(_, b)| *b)
}

/// Every number in `value` with its dotted path and whether it is whole.
fn numbers(value: &Value, path: String, out: &mut Vec<((String, bool), f64)>) {
    match value {
        Value::Number(n) => out.push(((path, !n.is_f64()), n.as_f64().unwrap_or(f64::NAN))),
        // `.nan` and `.inf` serialize as null: where a number must be (the
        // caller checks against the defaults), a null is one of them.
        Value::Null => out.push(((path, false), f64::NAN)),
        Value::Object(map) => {
            for (k, v) in map {
                let next = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                numbers(v, next, out);
            }
        }
        // No list of the configuration holds numbers; were one to, its
        // items would be checked as `list[i]`.
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                numbers(v, format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AgentConfig, SuiteError> {
        AgentConfig::parse(text, Path::new("agent.json"))
    }

    #[test]
    fn a_partial_config_keeps_the_defaults_and_an_unknown_key_is_named() {
        let c = parse(r#"{"engine": {"ggs": {"epsilon": 0.05}}, "intervention_poll_ms": 250}"#).unwrap();
        assert_eq!(c.engine.ggs.epsilon, 0.05);
        assert_eq!(c.intervention_poll_ms, 250);
        assert!(c.verifier.enabled);
        let err = parse(r#"{"verifier": {"modle": "x"}}"#).unwrap_err().to_string();
        assert!(err.contains("verifier") && err.contains("modle"), "{err}");
    }

    #[test]
    fn intervention_modes_are_overridden_under_the_engine_and_a_typo_is_located() {
        use crate::engine::{InterventionKind, InterventionMode};
        let c = parse(r#"{"engine": {"interventions": {"strategy_escalation": "auto"}}}"#).unwrap();
        let modes = &c.engine.interventions;
        assert_eq!(modes.mode(None, InterventionKind::StrategyEscalation), InterventionMode::Auto);
        assert_eq!(modes.mode(None, InterventionKind::PartialResult), InterventionMode::Pause, "the table's default");
        let err = parse(r#"{"engine": {"interventions": {"partial_results": "auto"}}}"#).unwrap_err().to_string();
        assert!(err.contains("engine.interventions") && err.contains("partial_results"), "{err}");
        let err = parse(r#"{"engine": {"interventions": {"partial_result": "never"}}}"#).unwrap_err().to_string();
        assert!(err.contains("engine.interventions.partial_result") && err.contains("never"), "{err}");
    }

    #[test]
    fn decomposition_and_parallel_sampling_are_configured_under_the_engine() {
        let c = parse(
            r#"{"engine": {"decomposition": {"proactive": "always", "integration_share": 0.3},
                           "parallel": {"follow_basin": true}}}"#,
        )
        .unwrap();
        assert_eq!(c.engine.decomposition.integration_share, 0.3);
        assert!(c.engine.parallel.follow_basin);
        let err = parse(r#"{"engine": {"decomposition": {"proactive": "sometimes"}}}"#).unwrap_err().to_string();
        assert!(err.contains("engine.decomposition.proactive"), "{err}");
    }

    #[test]
    fn a_number_that_is_not_finite_is_refused() {
        for text in ["engine:\n  ggs:\n    epsilon: .nan\n", "intervention_timeout_secs: .inf\n"] {
            let err = parse(text).expect_err(text).to_string();
            assert!(err.contains("agent.json:") && err.contains("hint: "), "{err}");
        }
    }

    #[test]
    fn the_defaults_lie_within_every_bound() {
        assert_eq!(AgentConfig::default().out_of_bounds(), Vec::<OutOfBounds>::new());
    }

    #[test]
    fn a_number_outside_its_range_is_refused_at_its_place_with_the_default() {
        let path = Path::new("agent.json");
        let text = "{\n  \"engine\": {\"ggs\": {\"epsilon\": 5}},\n  \"intervention_timeout_secs\": 1e300,\n  \"intervention_poll_ms\": 0\n}\n";
        let err = AgentConfig::parse(text, path).unwrap_err();
        let shown: Vec<String> =
            err.issues.iter().map(|i| format!("{}|{}|{}", i.location, i.field, i.message)).collect();
        assert_eq!(
            shown,
            [
                "agent.json:2:33|engine.ggs.epsilon|5 is outside the range 0 to 1 (a share, weight or threshold)",
                "agent.json:3:32|intervention_timeout_secs|1e300 is outside the range 0.001 to 604800 (seconds, at most a week)",
                "agent.json:4:27|intervention_poll_ms|0 is outside the range 10 to 3600000 (milliseconds between looks for an answer)",
            ]
        );
        assert!(err.issues[0].hint.as_deref().unwrap_or("").contains("the default is 0.1"), "{err}");
    }

    #[test]
    fn a_whole_number_too_large_for_its_type_and_a_syntax_error_are_located() {
        let path = Path::new("agent.json");
        let err = AgentConfig::parse("{\"engine\": {\"ggs\": {\"time_budget_ms\": 1e300}}}", path).unwrap_err();
        let issue = &err.issues[0];
        assert_eq!((issue.location.line, issue.field.as_str()), (1, "engine.ggs.time_budget_ms"), "{err}");
        assert!(issue.message.contains("whole number"), "{err}");
        let err = AgentConfig::parse("{\"engine\": {\"ggs\": ", path).unwrap_err();
        assert!(err.issues[0].hint.is_some(), "{err}");
        let err = AgentConfig::parse("engine:\n  decomposition:\n    min_subtasks: 5\n    max_subtasks: 3\n", path)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "agent.json:3:19: field `engine.decomposition.min_subtasks`: 5 is more than max_subtasks (3)\n  hint: make min_subtasks at most max_subtasks"
        );
    }
}
