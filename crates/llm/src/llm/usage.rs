//! Token and call accounting: [`TokenUsage`] for one call, [`Usage`] for the
//! running totals that budgets read.
//!
//! [`Usage`] is a set of atomic counters behind an `Arc`, so any number of
//! clients (and clones of one client) can add to one shared budget without a
//! lock, and a budget can read a [`UsageSnapshot`] at any time. Pass the same
//! `Arc<Usage>` to several clients with
//! [`LlmClient::with_usage`](super::LlmClient::with_usage) to meter them
//! together.

use std::collections::BTreeMap;
use std::ops::{Add, AddAssign};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::request::CallRole;

use serde::{Deserialize, Serialize};

pub use crate::domain::ModelSpend;

/// Tokens of one call (or a sum of calls), as the server reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl Add for TokenUsage {
    type Output = TokenUsage;
    fn add(self, other: TokenUsage) -> TokenUsage {
        TokenUsage {
            prompt_tokens: self.prompt_tokens + other.prompt_tokens,
            completion_tokens: self.completion_tokens + other.completion_tokens,
            total_tokens: self.total_tokens + other.total_tokens,
        }
    }
}

impl AddAssign for TokenUsage {
    fn add_assign(&mut self, other: TokenUsage) {
        *self = *self + other;
    }
}

/// Running totals of every call made through the clients that share it.
#[derive(Debug, Default)]
pub struct Usage {
    calls: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
    total_tokens: AtomicU64,
    retries: AtomicU64,
    failures: AtomicU64,
    cache_hits: AtomicU64,
    latency_micros: AtomicU64,
    /// Cost in billionths, so it adds up atomically like the rest.
    cost_nanos: AtomicU64,
    /// Calls whose model has no price: their cost is unknown.
    unpriced_calls: AtomicU64,
    /// Why the run's budget first stopped a call (none while it has not).
    budget_note: Mutex<Option<String>>,
    /// The totals this one is part of (a task run's within the whole run's):
    /// every call counted here is counted there too, and budgets read there.
    parent: Option<std::sync::Arc<Usage>>,
    /// The same, per role: what the report and the bench break down.
    by_role: Mutex<BTreeMap<CallRole, ModelSpend>>,
}

/// A copy of the [`Usage`] counters at one moment.
///
/// Each field is read atomically, the set as a whole is not: a snapshot taken
/// while calls finish may count a call's tokens but not yet its latency. For
/// budgets, which compare totals against limits, that does not matter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct UsageSnapshot {
    /// Chat calls sent to the server (cache hits excluded), failed ones included.
    pub calls: u64,
    /// Tokens reported by the server, summed (calls without a `usage` add 0).
    pub tokens: TokenUsage,
    /// HTTP attempts beyond the first of each call.
    pub retries: u64,
    /// Calls that ended in an error for the caller, including structured calls
    /// whose reply stayed invalid JSON after the correction.
    pub failures: u64,
    /// Calls answered from the response cache.
    pub cache_hits: u64,
    /// Wall time of all calls sent to the server, retries included.
    pub latency: Duration,
    /// What the calls cost at the configured prices (unpriced ones add 0).
    pub cost: f64,
    /// Calls whose model has no price.
    pub unpriced_calls: u64,
}

impl From<UsageSnapshot> for ModelSpend {
    fn from(s: UsageSnapshot) -> ModelSpend {
        ModelSpend {
            calls: s.calls,
            prompt_tokens: s.tokens.prompt_tokens,
            completion_tokens: s.tokens.completion_tokens,
            failures: s.failures,
            seconds: s.latency.as_secs_f64(),
            cost: s.cost,
            unpriced_calls: s.unpriced_calls,
        }
    }
}

impl UsageSnapshot {
    /// What happened between `earlier` and `self` (per-task budgets take a
    /// snapshot at the start and subtract it at the end).
    pub fn since(&self, earlier: &UsageSnapshot) -> UsageSnapshot {
        UsageSnapshot {
            calls: self.calls.saturating_sub(earlier.calls),
            tokens: TokenUsage {
                prompt_tokens: self.tokens.prompt_tokens.saturating_sub(earlier.tokens.prompt_tokens),
                completion_tokens: self.tokens.completion_tokens.saturating_sub(earlier.tokens.completion_tokens),
                total_tokens: self.tokens.total_tokens.saturating_sub(earlier.tokens.total_tokens),
            },
            retries: self.retries.saturating_sub(earlier.retries),
            failures: self.failures.saturating_sub(earlier.failures),
            cache_hits: self.cache_hits.saturating_sub(earlier.cache_hits),
            latency: self.latency.saturating_sub(earlier.latency),
            cost: (self.cost - earlier.cost).max(0.0),
            unpriced_calls: self.unpriced_calls.saturating_sub(earlier.unpriced_calls),
        }
    }
}

impl Usage {
    pub fn new() -> Usage {
        Usage::default()
    }

    /// Counters of their own (one task run's) that also add to `parent`'s
    /// (the whole run's), where the run's budgets are kept.
    pub fn under(parent: std::sync::Arc<Usage>) -> Usage {
        Usage { parent: Some(parent), ..Usage::default() }
    }

    /// The outermost totals: what the run's budgets compare against.
    pub fn root(&self) -> &Usage {
        match &self.parent {
            Some(p) => p.root(),
            None => self,
        }
    }

    pub fn snapshot(&self) -> UsageSnapshot {
        // Relaxed is enough: the counters are independent totals, not a
        // protocol between threads.
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        UsageSnapshot {
            calls: load(&self.calls),
            tokens: TokenUsage {
                prompt_tokens: load(&self.prompt_tokens),
                completion_tokens: load(&self.completion_tokens),
                total_tokens: load(&self.total_tokens),
            },
            retries: load(&self.retries),
            failures: load(&self.failures),
            cache_hits: load(&self.cache_hits),
            latency: Duration::from_micros(load(&self.latency_micros)),
            cost: load(&self.cost_nanos) as f64 / 1e9,
            unpriced_calls: load(&self.unpriced_calls),
        }
    }

    /// Total tokens so far: the number most budgets compare against.
    pub fn total_tokens(&self) -> u64 {
        self.total_tokens.load(Ordering::Relaxed)
    }

    /// Calls, tokens, failures and model time per role so far.
    pub fn by_role(&self) -> BTreeMap<CallRole, ModelSpend> {
        self.by_role.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn add_to_role(&self, role: CallRole, f: impl FnOnce(&mut ModelSpend)) {
        let mut map = self.by_role.lock().unwrap_or_else(|e| e.into_inner());
        f(map.entry(role).or_default());
    }

    /// Counts one answered call; `cost` is `None` when its model has no price.
    pub(crate) fn record_call(
        &self,
        role: CallRole,
        tokens: Option<TokenUsage>,
        latency: Duration,
        retries: u32,
        cost: Option<f64>,
    ) {
        self.add_to_role(role, |s| {
            s.calls += 1;
            let t = tokens.unwrap_or_default();
            s.prompt_tokens += t.prompt_tokens;
            s.completion_tokens += t.completion_tokens;
            s.seconds += latency.as_secs_f64();
            match cost {
                Some(c) => s.cost += c,
                None => s.unpriced_calls += 1,
            }
        });
        match cost {
            // Saturating float → integer conversion: a cost cannot wrap.
            Some(c) => _ = self.cost_nanos.fetch_add((c * 1e9).round() as u64, Ordering::Relaxed),
            None => _ = self.unpriced_calls.fetch_add(1, Ordering::Relaxed),
        }
        self.calls.fetch_add(1, Ordering::Relaxed);
        if let Some(t) = tokens {
            self.prompt_tokens.fetch_add(t.prompt_tokens, Ordering::Relaxed);
            self.completion_tokens.fetch_add(t.completion_tokens, Ordering::Relaxed);
            self.total_tokens.fetch_add(t.total_tokens, Ordering::Relaxed);
        }
        self.retries.fetch_add(u64::from(retries), Ordering::Relaxed);
        self.add_latency(latency);
        if let Some(p) = &self.parent {
            p.record_call(role, tokens, latency, retries, cost);
        }
    }

    pub(crate) fn record_failed_call(&self, role: CallRole, latency: Duration, retries: u32) {
        self.add_to_role(role, |s| {
            s.calls += 1;
            s.failures += 1;
            s.seconds += latency.as_secs_f64();
        });
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.failures.fetch_add(1, Ordering::Relaxed);
        self.retries.fetch_add(u64::from(retries), Ordering::Relaxed);
        self.add_latency(latency);
        if let Some(p) = &self.parent {
            p.record_failed_call(role, latency, retries);
        }
    }

    /// Counts a call the run's budget (cost or model time) stopped; the
    /// first one's reason is kept for the run's closing line.
    pub(crate) fn record_budget_refusal(&self, reason: &str) {
        self.budget_note.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(|| reason.to_string());
        if let Some(p) = &self.parent {
            p.record_budget_refusal(reason);
        }
    }

    /// Why the run's budget stopped a call, once one did.
    pub fn budget_note(&self) -> Option<String> {
        self.budget_note.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn record_cache_hit(&self) {
        self.cache_hits.fetch_add(1, Ordering::Relaxed);
        if let Some(p) = &self.parent {
            p.record_cache_hit();
        }
    }

    pub(crate) fn record_invalid_reply(&self, role: CallRole) {
        self.add_to_role(role, |s| s.failures += 1);
        self.failures.fetch_add(1, Ordering::Relaxed);
        if let Some(p) = &self.parent {
            p.record_invalid_reply(role);
        }
    }

    fn add_latency(&self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.latency_micros.fetch_add(micros, Ordering::Relaxed);
    }
}

/// One line on what a run's model calls cost, per role, and the share of
/// the run's wall time spent waiting on the model: "model use: proposer 3
/// calls, 2402 tokens, 41.7 s; 41.7 s of 63.0 s wall time waiting on the
/// model (66%)". `None` when no call was made.
pub fn model_use_line(by_role: &BTreeMap<CallRole, ModelSpend>, wall: Duration) -> Option<String> {
    let used: Vec<(&CallRole, &ModelSpend)> = by_role.iter().filter(|(_, s)| s.calls > 0).collect();
    if used.is_empty() {
        return None;
    }
    let parts: Vec<String> = used.iter().map(|(role, s)| format!("{role} {}", s.counted("call"))).collect();
    let waiting: f64 = used.iter().map(|(_, s)| s.seconds).sum();
    let wall = wall.as_secs_f64();
    let share = if wall > 0.0 { 100.0 * waiting / wall } else { 0.0 };
    let overlap = if waiting > wall { ", calls overlapping" } else { "" };
    Some(format!(
        "model use: {}; {waiting:.1} s of {wall:.1} s wall time waiting on the model ({share:.0}%{overlap})",
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_use_line_breaks_down_by_role_and_states_the_share_of_wall_time() {
        let usage = Usage::new();
        usage.record_call(
            CallRole::Proposer,
            Some(TokenUsage { prompt_tokens: 90, completion_tokens: 10, total_tokens: 100 }),
            Duration::from_secs(3),
            0,
            Some(0.0012),
        );
        usage.record_failed_call(CallRole::Supervisor, Duration::from_secs(1), 1);
        let line = model_use_line(&usage.by_role(), Duration::from_secs(8)).unwrap();
        assert_eq!(
            line,
            "model use: proposer 1 call, 100 tokens, cost 0.001200, 3.0 s; supervisor 1 call (1 failed or unusable), 0 tokens, cost 0, 1.0 s; \
             4.0 s of 8.0 s wall time waiting on the model (50%)"
        );
        assert_eq!(model_use_line(&BTreeMap::new(), Duration::from_secs(1)), None);
    }

    #[test]
    fn a_task_runs_counters_add_to_the_whole_runs_where_the_budget_is_kept() {
        let run = std::sync::Arc::new(Usage::new());
        let task = Usage::under(std::sync::Arc::clone(&run));
        let tokens = Some(TokenUsage { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
        task.record_call(CallRole::Executor, tokens, Duration::from_secs(2), 0, Some(0.5));
        run.record_call(CallRole::Proposer, tokens, Duration::from_secs(1), 0, None);
        task.record_budget_refusal("the model budget is spent");
        let (t, r) = (task.snapshot(), run.snapshot());
        assert_eq!((t.calls, t.tokens.total_tokens, t.cost), (1, 15, 0.5));
        assert_eq!((r.calls, r.tokens.total_tokens, r.cost, r.unpriced_calls), (2, 30, 0.5, 1));
        assert_eq!(task.root().snapshot(), r, "budgets read the whole run's totals");
        assert_eq!(run.budget_note().as_deref(), Some("the model budget is spent"));
        assert_eq!(run.by_role()[&CallRole::Executor].cost, 0.5);
    }
}
