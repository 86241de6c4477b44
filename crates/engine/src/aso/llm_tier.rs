//! Tier 2: asking a model for the directive. The system prompt is the
//! learnable `supervisor_prompt` artifact followed by the fixed control schema
//! v1.0; the user message carries the diagnostics (and any hints a person
//! gave for the task). The reply must parse as a [`Directive`]; the client's
//! lenient parsing and single correction round handle the rest, and any
//! remaining failure goes back to the tiered supervisor, which falls back to
//! the heuristic.

use super::diagnostics::OptimizerDiagnostics;
use super::directive::{Directive, ModelDirective, control_schema_agent_v1, control_schema_v1};
use super::supervisor::{ModelSupervisor, SupervisionContext};
use crate::llm::{CallRole, ChatMessage, ChatRequest, LlmClient};

pub struct LlmSupervisor {
    client: LlmClient,
    prompt: String,
    /// The control schema shown: the numeric one, or the agent one.
    schema: serde_json::Value,
}

impl LlmSupervisor {
    /// `prompt` is the active `supervisor_prompt` artifact's content.
    pub fn new(client: LlmClient, prompt: impl Into<String>) -> Self {
        LlmSupervisor { client, prompt: prompt.into(), schema: control_schema_v1() }
    }

    /// The tier over agent trajectories: the same prompt, the agent control schema.
    pub fn for_agents(client: LlmClient, prompt: impl Into<String>) -> Self {
        LlmSupervisor { client, prompt: prompt.into(), schema: control_schema_agent_v1() }
    }

    /// The messages of one supervision call (public so tests and the app can
    /// show exactly what is sent).
    pub fn messages(&self, d: &OptimizerDiagnostics, ctx: &SupervisionContext) -> Vec<ChatMessage> {
        let schema = serde_json::to_string_pretty(&self.schema).unwrap_or_default();
        let system = format!(
            "{}\n\nControl schema:\n{schema}\n\nAnswer with exactly one JSON object with the keys \
             \"action\", \"config_overrides\" (optional), \"reasoning\" and \"confidence\".",
            self.prompt.trim_end()
        );
        let mut user = format!(
            "Problem: {}\nCycle: {}\nDiagnostics: {}",
            ctx.problem,
            ctx.cycle,
            serde_json::to_string(d).unwrap_or_default()
        );
        if !ctx.human_hints.is_empty() {
            user.push_str("\nHints from a person for this task:\n");
            for h in &ctx.human_hints {
                user.push_str(&format!("- {h}\n"));
            }
        }
        vec![ChatMessage::system(system), ChatMessage::user(user)]
    }
}

#[async_trait::async_trait]
impl ModelSupervisor for LlmSupervisor {
    async fn directive(&self, d: &OptimizerDiagnostics, ctx: &SupervisionContext) -> Result<Directive, String> {
        // At most two calls per supervision (a cut-off reply asked again, or
        // one correction): the heuristic stands in after that, and a slow
        // model cannot multiply the cost of a cycle.
        let mut request =
            ChatRequest::new(self.messages(d, ctx)).temperature(0.0).role(CallRole::Supervisor).call_limit(2);
        if let Some(limit) = ctx.timeout {
            request = request.timeout(limit);
        }
        match self.client.chat_json::<ModelDirective>(request).await {
            Ok(s) => {
                let mut directive = Directive::from(s.value);
                // The reasoning goes into the telemetry: keep it bounded.
                directive.reasoning = self.client.clip(&directive.reasoning);
                Ok(directive)
            }
            Err(e) => Err(self.client.clip(&e.to_string())),
        }
    }

    fn budget_spent(&self) -> bool {
        self.client.budget_spent().is_some()
    }
}
