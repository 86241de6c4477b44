//! A run request: every option of a suite run as one piece of data.
//!
//! `attractor run`, the HTTP API and the desktop app all start a run from a
//! [`RunRequest`]; it is validated here, once, and turned into the outer
//! loop's [`RunConfig`], the model limits and the agent configuration here,
//! once. Before it existed the CLI and the service each assembled a run and
//! had drifted apart (the app could not set the tree search's width or the
//! agent configuration). Being plain data it can also be stored and picked
//! up by another process.
//!
//! What belongs to the machine rather than to the run (where run folders go,
//! the database) is not in it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::tree::{Selection, TreeConfig};
use super::{ApprovalMode, DEFAULT_HOLDOUT_TOLERANCE, MAX_EPOCHS, OptimizerKind, RunConfig};
use crate::llm::LlmLimits;
use crate::task::agent::AgentConfig;

/// Every option of one suite run. Missing fields take the defaults of
/// `attractor run`, so `{"suite_path": "x.suite.yaml"}` is a whole request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The suite file, absolute or relative to where Attractor was started.
    pub suite_path: String,
    /// Folders outside the suite's own that its paths may lead into.
    #[serde(default)]
    pub allow_outside: Vec<String>,
    /// Epochs to run (the tree search: evaluations at most).
    #[serde(default = "default_epochs")]
    pub epochs: u32,
    #[serde(default)]
    pub optimizer: OptimizerKind,
    /// Step size η in [0, 1]; halves after every rollback.
    #[serde(default = "default_learning_rate")]
    pub learning_rate: f64,
    /// Roll the last update back when the mean loss gets worse.
    #[serde(default = "default_true")]
    pub rollback: bool,
    /// Runs in flight at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: u32,
    /// Base seed; none picks one (a stopped plan's, when one is waiting).
    #[serde(default)]
    #[ts(optional)]
    pub seed: Option<u64>,
    /// Run optimize tasks on heuristics alone even when a model is configured.
    #[serde(default)]
    pub no_llm: bool,
    /// How far the held-out mean may rise before the update behind it is
    /// rolled back [default 0.01].
    #[serde(default)]
    #[ts(optional)]
    pub holdout_tolerance: Option<f64>,
    /// Evaluations behind each decision [default: the suite's].
    #[serde(default)]
    #[ts(optional)]
    pub verify_repeats: Option<u32>,
    /// Whether each winning artifact update waits in the Inbox for a
    /// person (`wait`: the run waits too; `continue`: it goes on with the
    /// versions it has) [default: the suite's `approve_updates`, else off].
    #[serde(default)]
    #[ts(optional)]
    pub approve_updates: Option<ApprovalMode>,
    /// Settings of the tree search (`optimizer: tree`).
    #[serde(default)]
    pub tree: TreeRequest,
    /// A JSON file of agent-task settings over the defaults.
    #[serde(default)]
    #[ts(optional)]
    pub agent_config: Option<String>,
    /// Run agent tasks' commands without the sandbox, with full rights.
    #[serde(default)]
    pub no_sandbox: bool,
    /// Limits of the run's model calls over the settings' and the suite's.
    #[serde(default)]
    pub model: LlmLimits,
}

/// The tree search's settings a request may choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default, deny_unknown_fields)]
pub struct TreeRequest {
    /// Children per round.
    pub width: u32,
    /// Rounds without a new best before stopping.
    pub stall: u32,
    /// Ideation calls before stopping on stall; 0 turns them off.
    pub ideation_rounds: u32,
    pub selection: SelectionName,
    /// Children one brief may make in a round; 1 turns deepening off.
    pub branch_depth: u32,
}

impl Default for TreeRequest {
    fn default() -> Self {
        let d = TreeConfig::default();
        TreeRequest {
            width: d.width as u32,
            stall: d.stall,
            ideation_rounds: d.ideation_rounds,
            selection: SelectionName::Pareto,
            branch_depth: d.branch_depth,
        }
    }
}

/// How the tree search picks parents from its frontier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum SelectionName {
    /// Every node no other node beats on every task (keeps specialists).
    #[default]
    Pareto,
    /// The lowest mean loss only.
    Argmax,
    /// The three lowest mean losses.
    TopK,
    /// The best, or with probability 0.2 another frontier node.
    EpsGreedy,
}

impl From<SelectionName> for Selection {
    fn from(s: SelectionName) -> Self {
        match s {
            SelectionName::Pareto => Selection::Pareto,
            SelectionName::Argmax => Selection::Argmax,
            SelectionName::TopK => Selection::TopK(3),
            SelectionName::EpsGreedy => Selection::EpsGreedy(0.2),
        }
    }
}

fn default_epochs() -> u32 {
    1
}
fn default_learning_rate() -> f64 {
    0.5
}
fn default_true() -> bool {
    true
}
fn default_concurrency() -> u32 {
    2
}

/// One option of a request that is out of its bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestIssue {
    /// The field as the request names it (`tree.width`).
    pub field: String,
    /// The `attractor run` flag that sets it (`--width`).
    pub flag: &'static str,
    /// What it must be, and what it was.
    pub message: String,
}

/// A request with options out of their bounds; every one is listed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct InvalidRequest(pub Vec<RequestIssue>);

impl InvalidRequest {
    fn describe(&self) -> String {
        let lines: Vec<String> =
            self.0.iter().map(|i| format!("field `{}` ({}): {}", i.field, i.flag, i.message)).collect();
        let what = if lines.len() == 1 { "the option" } else { "the options" };
        format!("{}\n  hint: change {what} named above and start the run again", lines.join("\n"))
    }
}

/// The bounds of the request's counts, shared with the launch form.
pub const MAX_CONCURRENCY: u32 = 256;
pub const MAX_VERIFY_REPEATS: u32 = 20;
pub const MAX_TREE_WIDTH: u32 = 64;
pub const MAX_STALL: u32 = 1_000;
pub const MAX_IDEATION_ROUNDS: u32 = 10;
pub const MAX_BRANCH_DEPTH: u32 = 50;

impl RunRequest {
    /// A request for `suite_path` with every other option at its default.
    pub fn new(suite_path: impl Into<String>) -> RunRequest {
        RunRequest {
            suite_path: suite_path.into(),
            allow_outside: Vec::new(),
            epochs: default_epochs(),
            optimizer: OptimizerKind::default(),
            learning_rate: default_learning_rate(),
            rollback: true,
            concurrency: default_concurrency(),
            seed: None,
            no_llm: false,
            holdout_tolerance: None,
            verify_repeats: None,
            approve_updates: None,
            tree: TreeRequest::default(),
            agent_config: None,
            no_sandbox: false,
            model: LlmLimits::default(),
        }
    }

    /// Checks every option's bounds; all that are wrong are named.
    pub fn validate(&self) -> Result<(), InvalidRequest> {
        let mut issues = Vec::new();
        let mut count = |field: &str, flag: &'static str, v: u32, lo: u32, hi: u32| {
            if !(lo..=hi).contains(&v) {
                issues.push(RequestIssue {
                    field: field.into(),
                    flag,
                    message: format!("{v} is outside the range {lo} to {hi}"),
                });
            }
        };
        count("epochs", "--epochs", self.epochs, 1, MAX_EPOCHS);
        count("concurrency", "--concurrency", self.concurrency, 1, MAX_CONCURRENCY);
        if let Some(r) = self.verify_repeats {
            count("verify_repeats", "--verify-repeats", r, 1, MAX_VERIFY_REPEATS);
        }
        count("tree.width", "--width", self.tree.width, 1, MAX_TREE_WIDTH);
        count("tree.stall", "--stall", self.tree.stall, 1, MAX_STALL);
        count("tree.ideation_rounds", "--ideation-rounds", self.tree.ideation_rounds, 0, MAX_IDEATION_ROUNDS);
        count("tree.branch_depth", "--branch-depth", self.tree.branch_depth, 1, MAX_BRANCH_DEPTH);
        let mut fraction = |field: &str, flag: &'static str, v: f64, why: &str| {
            if !(0.0..=1.0).contains(&v) {
                issues.push(RequestIssue {
                    field: field.into(),
                    flag,
                    message: format!("{} is outside [0, 1]{why}", crate::suite::shown_number(v)),
                });
            }
        };
        fraction("learning_rate", "--learning-rate", self.learning_rate, "");
        if let Some(t) = self.holdout_tolerance {
            fraction("holdout_tolerance", "--holdout-tolerance", t, " (losses lie in [0, 1])");
        }
        if self.suite_path.trim().is_empty() {
            issues.push(RequestIssue {
                field: "suite_path".into(),
                flag: "SUITE",
                message: "is empty; name the suite file to run".into(),
            });
        }
        if let Err(e) = self.model.validate() {
            // The limit's sentence starts with its own name; the field says it.
            let message = e.message.strip_prefix(&format!("{} ", e.field)).unwrap_or(&e.message).to_string();
            issues.push(RequestIssue { field: format!("model.{}", e.field), flag: model_flag(&e.field), message });
        }
        if issues.is_empty() { Ok(()) } else { Err(InvalidRequest(issues)) }
    }

    /// The outer loop's settings for this request, with its run folders
    /// under `runs_root` and the base seed already chosen.
    pub fn run_config(&self, runs_root: PathBuf, seed: u64) -> RunConfig {
        RunConfig {
            epochs: self.epochs,
            optimizer: self.optimizer,
            learning_rate: self.learning_rate,
            rollback_on_regression: self.rollback,
            concurrency: self.concurrency as usize,
            seed,
            runs_root,
            holdout_tolerance: self.holdout_tolerance.unwrap_or(DEFAULT_HOLDOUT_TOLERANCE),
            verify_repeats: self.verify_repeats,
            approve_updates: self.approve_updates,
            tree: TreeConfig {
                width: self.tree.width as usize,
                stall: self.tree.stall,
                ideation_rounds: self.tree.ideation_rounds,
                branch_depth: self.tree.branch_depth,
                selection: self.tree.selection.into(),
                ..TreeConfig::default()
            },
        }
    }

    /// The agent tasks' settings: the request's file over the defaults, the
    /// sandbox off when the request or the environment says so.
    pub fn agent_config(&self, env: impl Fn(&str) -> Option<String>) -> Result<AgentConfig, crate::suite::SuiteError> {
        let mut config = match &self.agent_config {
            Some(path) => AgentConfig::load(Path::new(path))?,
            None => AgentConfig::default(),
        };
        if self.no_sandbox || crate::process::sandbox::SandboxConfig::off_by_env(env) {
            config.sandbox.enabled = false;
        }
        Ok(config)
    }

    /// The request with its paths made absolute against this process's
    /// folder, so a worker started elsewhere finds the same files.
    pub fn absolute(mut self) -> RunRequest {
        let abs = |p: &str| std::path::absolute(p).map_or_else(|_| p.to_string(), |a| a.display().to_string());
        self.suite_path = abs(&self.suite_path);
        self.agent_config = self.agent_config.as_deref().map(abs);
        self.allow_outside = self.allow_outside.iter().map(|p| abs(p)).collect();
        self
    }

    /// The folders outside the suite's own the request allows.
    pub fn outside(&self) -> Vec<PathBuf> {
        self.allow_outside.iter().map(PathBuf::from).collect()
    }

    /// "plan: 3 epochs × 4 tasks = 12 runs; …": what the run will do,
    /// the line `attractor run` prints first and the launch form shows.
    pub fn plan_line(&self, suite: &crate::suite::Suite, proposal_candidates: u64) -> String {
        let tasks = suite.tasks.len() as u64;
        let epochs = u64::from(self.epochs);
        let repeats = self.verify_repeats.unwrap_or_else(|| suite.verify_repeats());
        if self.optimizer == OptimizerKind::Tree {
            return format!(
                "plan: tree search of at most {} × {} = {}, {} a round, each evaluated {}, stop after {} without a new best and {}",
                crate::counted(epochs, "evaluation"),
                crate::counted(tasks, "task"),
                crate::counted(epochs * tasks, "run"),
                crate::counted_as(self.tree.width, "child", "children"),
                if repeats == 1 { "once".to_string() } else { format!("{repeats} times") },
                crate::counted(self.tree.stall, "round"),
                crate::counted(self.tree.ideation_rounds, "ideation round")
            );
        }
        let mut line = format!(
            "plan: {} × {} = {}",
            crate::counted(epochs, "epoch"),
            crate::counted(tasks, "task"),
            crate::counted(epochs * tasks, "run")
        );
        if repeats > 1 && self.optimizer != OptimizerKind::Baseline {
            line.push_str(&format!("; each update is judged on {repeats} epochs (a noisy suite)"));
        }
        match self.approve_updates.unwrap_or(suite.approve_updates) {
            ApprovalMode::Off => {}
            ApprovalMode::Wait => {
                line.push_str("; each update waits in the Inbox for a person's approval, and the run with it")
            }
            ApprovalMode::Continue => {
                line.push_str("; each update waits in the Inbox for a person's approval while the run goes on")
            }
        }
        if self.optimizer == OptimizerKind::Screen {
            // Small constants: the casts cannot truncate.
            let (per_round, rounds, batch) =
                (super::screen::MODEL_CANDIDATES as u64, super::screen::ROUNDS as u64, super::screen::MINIBATCH as u64);
            line.push_str(&format!(
                "; screen asks for {per_round} candidates a round and screens each (and one with worked examples) on {} \
                 before the best is measured in full, up to {} rounds an epoch (at most {} proposal calls, one more \
                 for each reply that hands back the current text)",
                crate::counted(batch, "training example"),
                rounds,
                epochs * per_round * rounds
            ));
        } else if self.optimizer.needs_model() {
            line.push_str(&format!(
                "; {} makes at most {epochs} × {} = {} (none after a rollback; one more for each reply that \
                 hands back the current text)",
                self.optimizer.name(),
                crate::counted(proposal_candidates, "artifact"),
                crate::counted(epochs * proposal_candidates, "proposal call")
            ));
        }
        line
    }
}

/// The `attractor run` flag of a model limit.
fn model_flag(field: &str) -> &'static str {
    match field.split('.').next().unwrap_or(field) {
        "timeout_secs" => "--llm-timeout",
        "attempts" => "--llm-attempts",
        "max_model_secs" => "--max-model-secs",
        "max_tokens" => "--max-tokens",
        "max_reply_bytes" => "--max-reply-bytes",
        "max_cost" => "--max-cost",
        _ => "the settings file",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_naming_only_the_suite_takes_the_cli_defaults() {
        let req: RunRequest = serde_json::from_str(r#"{"suite_path": "a.suite.yaml"}"#).unwrap();
        assert_eq!(req, RunRequest::new("a.suite.yaml"));
        assert!(req.validate().is_ok());
        let config = req.run_config(PathBuf::from("runs"), 7);
        assert_eq!((config.epochs, config.concurrency, config.seed), (1, 2, 7));
        assert!(config.rollback_on_regression);
        assert_eq!(config.holdout_tolerance, DEFAULT_HOLDOUT_TOLERANCE);
        assert_eq!(config.tree, TreeConfig::default());
    }

    #[test]
    fn every_option_out_of_bounds_is_named_with_its_field_and_flag() {
        let mut req = RunRequest::new("a.suite.yaml");
        req.epochs = 0;
        req.tree.width = 65;
        req.learning_rate = 1.5;
        req.model.attempts = Some(0);
        let e = req.validate().unwrap_err();
        let fields: Vec<&str> = e.0.iter().map(|i| i.field.as_str()).collect();
        assert_eq!(fields, ["epochs", "tree.width", "learning_rate", "model.attempts"]);
        let text = e.to_string();
        assert!(text.contains("field `tree.width` (--width): 65 is outside the range 1 to 64"), "{text}");
        assert!(text.contains("(--llm-attempts)"), "{text}");
        assert!(text.contains("hint:"), "{text}");
    }

    #[test]
    fn the_tree_settings_reach_the_outer_loop() {
        let req: RunRequest = serde_json::from_str(
            r#"{"suite_path": "a", "optimizer": "tree", "tree": {"width": 2, "stall": 1, "selection": "top_k", "branch_depth": 1, "ideation_rounds": 0}}"#,
        )
        .unwrap();
        let tree = req.run_config(PathBuf::new(), 1).tree;
        assert_eq!((tree.width, tree.stall, tree.branch_depth, tree.ideation_rounds), (2, 1, 1, 0));
        assert_eq!(tree.selection, Selection::TopK(3));
    }

    #[test]
    fn an_unknown_option_is_refused() {
        let e = serde_json::from_str::<RunRequest>(r#"{"suite_path": "a", "widht": 2}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `widht`"), "{e}");
    }
}
