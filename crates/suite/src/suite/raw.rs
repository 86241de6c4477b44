//! The suite file exactly as written: serde types with source spans, strict
//! about unknown keys. The validator (`validate`) turns them into a [`super::Suite`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

use crate::artifact::{ArtifactKind, FieldBounds};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// What the folder watcher does once the suite is registered.
    #[serde(default)]
    pub run: Option<RunMode>,
    /// The tasks' losses vary from run to run with the same artifacts.
    #[serde(default)]
    pub noisy: Option<Spanned<bool>>,
    /// Evaluations behind each keep/commit decision on a noisy suite.
    #[serde(default)]
    pub verify_repeats: Option<Spanned<u32>>,
    /// Whether the optimizers' updates wait in the Inbox for a person.
    #[serde(default)]
    pub approve_updates: Option<crate::domain::ApprovalMode>,
    #[serde(default)]
    pub baseline_artifacts: BTreeMap<String, Spanned<i64>>,
    #[serde(default)]
    pub artifacts: Vec<Spanned<Artifact>>,
    pub tasks: Spanned<Vec<Spanned<Task>>>,
    /// Limits of the suite's model calls (never the endpoint or the key: a
    /// suite file from anyone must not send the prompts, or the key,
    /// elsewhere).
    #[serde(default)]
    pub llm: Option<Spanned<crate::llm::LlmLimits>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    pub name: Spanned<String>,
    #[serde(rename = "type")]
    pub kind: Spanned<ArtifactKind>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub content: Option<Spanned<serde_json::Value>>,
    #[serde(default)]
    pub file: Option<Spanned<String>>,
    #[serde(default)]
    pub fields: BTreeMap<String, Spanned<FieldBounds>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KindName {
    Command,
    Agent,
    Optimize,
}

impl KindName {
    pub fn as_str(self) -> &'static str {
        match self {
            KindName::Command => "command",
            KindName::Agent => "agent",
            KindName::Optimize => "optimize",
        }
    }
}

/// Priority hint (seed 002): what to favour when trading off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Fast,
    Thorough,
    Cheap,
}

/// Who steers an agent task's trajectories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Supervision {
    /// The convergence engine alone, one trajectory (or the task's
    /// `parallel_samples`).
    #[default]
    Engine,
    /// The ASO coordinator: `n_trajectories` of them (the `aso_config`
    /// artifact), each step judged by the tiered supervisor.
    Aso,
}

/// Whether the folder watcher runs a file it registered by itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunMode {
    /// Register only; a person launches it (the default).
    #[default]
    Manual,
    /// Queue one run once registered (and its commands approved).
    Auto,
}

impl RunMode {
    pub fn as_str(self) -> &'static str {
        match self {
            RunMode::Manual => "manual",
            RunMode::Auto => "auto",
        }
    }
}

/// One task: an entry of a suite's `tasks:`, or the whole of a task file
/// (where `name` may be left out and `suite` / `run` are allowed).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    #[serde(default)]
    pub name: Option<Spanned<String>>,
    // Task files only: the one-task suite's name and the watcher's run mode.
    #[serde(default)]
    pub suite: Option<Spanned<String>>,
    #[serde(default)]
    pub run: Option<Spanned<RunMode>>,
    #[serde(default)]
    pub task: Option<Spanned<String>>,
    #[serde(default)]
    pub kind: Option<Spanned<KindName>>,
    #[serde(default)]
    pub workflow: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub budget: Option<Spanned<Budget>>,
    #[serde(default)]
    pub weights: Option<Spanned<Weights>>,
    #[serde(default)]
    pub holdout: bool,
    #[serde(default)]
    pub priority: Option<Priority>,
    #[serde(default)]
    pub hints: Vec<String>,
    #[serde(default)]
    pub constraints: Vec<String>,
    #[serde(default)]
    pub anti_patterns: Vec<Spanned<AntiPattern>>,
    #[serde(default)]
    pub parallel_samples: Option<Spanned<u32>>,
    /// Labels a worker must offer to run the task (`attractor worker --offers`).
    #[serde(default)]
    pub needs: Vec<Spanned<String>>,
    // kind: command
    #[serde(default)]
    pub command: Option<Spanned<String>>,
    #[serde(default)]
    pub timeout: Option<Spanned<f64>>,
    #[serde(default)]
    pub env: Option<Spanned<BTreeMap<String, String>>>,
    // kind: agent
    #[serde(default)]
    pub workspace: Option<Spanned<String>>,
    #[serde(default)]
    pub executor: Option<Spanned<Executor>>,
    #[serde(default)]
    pub overseers: Option<Spanned<Vec<Spanned<Overseer>>>>,
    #[serde(default)]
    pub supervision: Option<Spanned<Supervision>>,
    /// Globs of files the executor may not touch, besides the inferred ones.
    #[serde(default)]
    pub protected: Option<Spanned<Vec<String>>>,
    /// Whether test files, test configuration, CI files and the overseers'
    /// scripts are protected without being listed (default: yes).
    #[serde(default)]
    pub infer_protected: Option<Spanned<bool>>,
    /// The tests the task is about (ids or patterns); none: the tests
    /// failing before the first change.
    #[serde(default)]
    pub targets: Option<Spanned<Vec<String>>>,
    // kind: optimize
    #[serde(default)]
    pub problem: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    #[serde(default)]
    pub max_loops: Option<Spanned<u32>>,
    #[serde(default)]
    pub max_total_workers: Option<Spanned<u32>>,
    #[serde(default)]
    pub max_total_tokens: Option<Spanned<u64>>,
    #[serde(default)]
    pub max_wall_time: Option<Spanned<f64>>,
    #[serde(default)]
    pub max_rejections: Option<Spanned<u32>>,
    /// Problem evaluations an optimize task may use.
    #[serde(default)]
    pub max_evaluations: Option<Spanned<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Weights {
    #[serde(default)]
    pub eval: Option<Spanned<f64>>,
    #[serde(default)]
    pub critique: Option<Spanned<f64>>,
    #[serde(default)]
    pub gate_rejections: Option<Spanned<f64>>,
    #[serde(default)]
    pub budget: Option<Spanned<f64>>,
    #[serde(default)]
    pub status: Option<Spanned<f64>>,
}

/// Who carries out an agent task: the built-in LLM executor or an external
/// coding-agent command.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Executor {
    #[serde(rename = "type")]
    pub kind: ExecutorKind,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Whether a command executor may use the network (a coding agent
    /// needs its model's API; the sandbox gives it none by default).
    #[serde(default)]
    pub network: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    Llm,
    Command,
}

/// How expensive an overseer is to run; cheap ones run first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CostClass {
    Cheap,
    Moderate,
    Expensive,
}

/// What an overseer measures, which says how its output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverseerKind {
    /// A test run: passed / failed / skipped and the test names.
    Test,
    /// A build: errors and warnings; a failure blocks the checks after it.
    Build,
    /// A type check: errors; a failure blocks the checks after it.
    TypeCheck,
    /// A linter: errors and warnings.
    Lint,
    /// A security scan: findings by severity; a critical finding fails it.
    Security,
    /// Anything else: success/failure patterns or the exit status decide.
    Custom,
}

impl OverseerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OverseerKind::Test => "test",
            OverseerKind::Build => "build",
            OverseerKind::TypeCheck => "type_check",
            OverseerKind::Lint => "lint",
            OverseerKind::Security => "security",
            OverseerKind::Custom => "custom",
        }
    }
}

/// An external check of an agent task's workspace, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overseer {
    pub name: Spanned<String>,
    pub command: Spanned<String>,
    #[serde(default)]
    pub kind: Option<Spanned<OverseerKind>>,
    #[serde(default = "default_cost")]
    pub cost: CostClass,
    #[serde(default)]
    pub success_pattern: Option<Spanned<String>>,
    #[serde(default)]
    pub failure_pattern: Option<Spanned<String>>,
    #[serde(default)]
    pub timeout: Option<Spanned<f64>>,
    /// A report file the command writes (JUnit XML for tests, JSON/SARIF for
    /// a security scan), relative to the workspace.
    #[serde(default)]
    pub report: Option<Spanned<String>>,
    /// Whether the command may use the network (the sandbox gives it none
    /// by default).
    #[serde(default)]
    pub network: bool,
    /// A held-out check: its output never reaches the executor; it joins
    /// the verdict once the visible checks pass.
    #[serde(default)]
    pub hidden: bool,
}

fn default_cost() -> CostClass {
    CostClass::Moderate
}

/// One entry of `anti_patterns:`: a sentence the model is told to avoid, or
/// one with a check — `forbid:`, a pattern no line the executor adds may
/// match (in the files `paths:` names, all by default).
#[derive(Debug)]
pub enum AntiPattern {
    Said(String),
    Checked(CheckedAntiPattern),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckedAntiPattern {
    pub avoid: String,
    pub forbid: String,
    #[serde(default)]
    pub paths: Vec<String>,
}

impl<'de> Deserialize<'de> for AntiPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, Visitor};
        struct Entry;
        impl<'de> Visitor<'de> for Entry {
            type Value = AntiPattern;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a sentence, or a mapping with `avoid:`, `forbid:` and optionally `paths:`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<AntiPattern, E> {
                Ok(AntiPattern::Said(v.to_string()))
            }
            // A bare `yes` or `42` is still something said.
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<AntiPattern, E> {
                Ok(AntiPattern::Said(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<AntiPattern, E> {
                Ok(AntiPattern::Said(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<AntiPattern, E> {
                Ok(AntiPattern::Said(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<AntiPattern, E> {
                Ok(AntiPattern::Said(v.to_string()))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<AntiPattern, A::Error> {
                CheckedAntiPattern::deserialize(de::value::MapAccessDeserializer::new(map)).map(AntiPattern::Checked)
            }
        }
        d.deserialize_any(Entry)
    }
}
