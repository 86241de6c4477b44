//! Tiered supervision (seed 000 §3.2): tier 1 heuristics whenever the step is
//! unremarkable, tier 2 a model when [`OptimizerDiagnostics::requires_llm_supervision`]
//! says so — with a timeout, and the heuristic standing in on any failure —
//! and a count of consecutive failures that tells the coordinator when to ask
//! a person (tier 3).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use super::config::AsoConfig;
use super::diagnostics::OptimizerDiagnostics;
use super::directive::{Directive, DirectiveSource};
use super::heuristic::HeuristicSupervisor;

/// What the model tier is told besides the diagnostics.
#[derive(Debug, Clone, Default)]
pub struct SupervisionContext {
    pub cycle: u32,
    pub problem: String,
    /// Hints a person gave for this task (answered interventions).
    pub human_hints: Vec<String>,
    /// How long the model may take (set by the tiered supervisor from
    /// `llm_timeout_seconds`, so the client's own limit and progress agree).
    pub timeout: Option<Duration>,
}

/// The model tier: turns diagnostics into a directive by asking a model.
#[async_trait::async_trait]
pub trait ModelSupervisor: Send + Sync {
    async fn directive(
        &self,
        diagnostics: &OptimizerDiagnostics,
        context: &SupervisionContext,
    ) -> Result<Directive, String>;

    /// The run's model budget (cost or model time) is spent: the tier stays
    /// silent from here, and that is no failure of the model.
    fn budget_spent(&self) -> bool {
        false
    }
}

/// The outcome of one supervision.
#[derive(Debug, Clone)]
pub struct Supervised {
    pub directive: Directive,
    /// A model call was made (whether or not it succeeded).
    pub llm_call_made: bool,
    /// The model call failed and the heuristic answered instead.
    pub llm_failed: bool,
    pub llm_error: Option<String>,
}

/// Tiers 1 and 2, shared by every trajectory of a task.
pub struct TieredSupervisor {
    config: AsoConfig,
    heuristic: HeuristicSupervisor,
    model: Option<Arc<dyn ModelSupervisor>>,
    consecutive_failures: AtomicU32,
    failures: AtomicU32,
    calls: AtomicU32,
    /// A failing model tier is told once, not at every step; a success
    /// clears it so a later failure is told again.
    warned: AtomicBool,
}

impl TieredSupervisor {
    pub fn new(config: AsoConfig, model: Option<Arc<dyn ModelSupervisor>>) -> Self {
        TieredSupervisor {
            heuristic: HeuristicSupervisor::new(config.clone()),
            config,
            model,
            consecutive_failures: AtomicU32::new(0),
            failures: AtomicU32::new(0),
            calls: AtomicU32::new(0),
            warned: AtomicBool::new(false),
        }
    }

    pub async fn supervise(&self, d: &OptimizerDiagnostics, ctx: &SupervisionContext) -> Supervised {
        let heuristic = |source: DirectiveSource| {
            let mut directive = self.heuristic.analyze(d);
            directive.source = source;
            directive
        };
        let Some(model) = self.model.as_ref().filter(|m| d.requires_llm_supervision(&self.config) && !m.budget_spent())
        else {
            return Supervised {
                directive: heuristic(DirectiveSource::Heuristic),
                llm_call_made: false,
                llm_failed: false,
                llm_error: None,
            };
        };
        self.calls.fetch_add(1, Ordering::Relaxed);
        let limit = crate::time::secs(self.config.llm_timeout_seconds.max(0.001));
        let ctx = &SupervisionContext { timeout: Some(limit), ..ctx.clone() };
        let answer = match tokio::time::timeout(limit, model.directive(d, ctx)).await {
            Ok(Ok(directive)) => Ok(directive),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(format!("no answer within {} s", self.config.llm_timeout_seconds)),
        };
        match answer {
            Ok(mut directive) => {
                self.consecutive_failures.store(0, Ordering::Relaxed);
                if self.warned.swap(false, Ordering::Relaxed) {
                    tracing::info!("the model tier of `{}` answers again", ctx.problem);
                }
                directive.source = DirectiveSource::Llm;
                Supervised { directive, llm_call_made: true, llm_failed: false, llm_error: None }
            }
            Err(e) if model.budget_spent() => {
                // The run's model budget ran out during this call: not the
                // model's fault, and the tier stays silent from here.
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::info!(
                        "the run's model budget is spent; the heuristic supervises `{}` from here",
                        ctx.problem
                    );
                }
                let mut directive = heuristic(DirectiveSource::Fallback);
                directive.reasoning = format!("{} (model budget spent)", directive.reasoning);
                Supervised { directive, llm_call_made: true, llm_failed: false, llm_error: Some(e) }
            }
            Err(e) => {
                let n = self.consecutive_failures.fetch_add(1, Ordering::Relaxed) + 1;
                self.failures.fetch_add(1, Ordering::Relaxed);
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "the model tier of `{}` failed ({e}); the heuristic answers until it works again",
                        ctx.problem
                    );
                } else {
                    tracing::debug!(failures = n, error = %e, "LLM supervision failed again");
                }
                let mut directive = heuristic(DirectiveSource::Fallback);
                directive.reasoning = format!("{} (LLM tier failed: {e})", directive.reasoning);
                Supervised { directive, llm_call_made: true, llm_failed: true, llm_error: Some(e) }
            }
        }
    }

    /// Model failures in a row (reset by a success).
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures.load(Ordering::Relaxed)
    }

    pub fn failures(&self) -> u32 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Model calls attempted.
    pub fn llm_calls(&self) -> u32 {
        self.calls.load(Ordering::Relaxed)
    }

    pub fn config(&self) -> &AsoConfig {
        &self.config
    }
}
