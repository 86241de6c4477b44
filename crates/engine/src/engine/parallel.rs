//! Parallel trajectory sampling (seed 002 §6.6), the pure part: how many
//! independent trajectories a task starts with, the one budget they all
//! draw from, and which of them decides the result.
//!
//! A narrow basin means a single trajectory must get lucky; several
//! independent starts, each in its own workspace, raise the odds. They share
//! one [`SharedBudget`] — tokens and iterations are summed over the samples,
//! wall time is the longest sample's own (they run side by side, so the
//! group has been running as long as its slowest member). Every iteration
//! first *reserves* its place in the budget, so samples running at the same
//! time never spend together more iterations than the budget holds.
//!
//! The first sample to converge wins and the others are stopped; when none
//! converges, the sample holding the best observation across the group
//! decides ([`deciding_sample`]).
//!
//! Departure from the seed: the seed iterates one sample at a time, chosen
//! by Thompson sampling over the samples' progress. Here the samples run
//! concurrently (the point of running them on a machine that waits on a
//! model most of the time), each steered by its own engine step; the shared
//! budget and the first-to-converge rule replace the scheduler.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::basin::{BasinWidth, ConvergenceMode, select_convergence_mode};
use super::budget::ConvergenceBudget;
use super::model::Trajectory;
use super::policy::PriorityHint;

/// When to sample in parallel, and how wide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ParallelConfig {
    /// Follow the seed's rule when a task does not ask for a number of
    /// samples: narrow basins start 2 samples (3 under `thorough`, 1 under
    /// `cheap`). Off by default: a task runs one trajectory unless its
    /// `parallel_samples` asks for more.
    pub follow_basin: bool,
    /// The most samples one task may run at once, whatever it asks for.
    pub max_samples: u32,
}

impl Default for ParallelConfig {
    fn default() -> Self {
        ParallelConfig { follow_basin: false, max_samples: 8 }
    }
}

/// How many trajectories a task starts with: the task's own
/// `parallel_samples` when above one, else the basin rule when enabled,
/// capped at `max_samples`.
pub fn sample_count(
    requested: u32,
    basin: &BasinWidth,
    priority: Option<PriorityHint>,
    config: &ParallelConfig,
) -> u32 {
    let wanted = if requested > 1 {
        requested
    } else if config.follow_basin {
        match select_convergence_mode(basin, priority, None) {
            ConvergenceMode::Parallel { initial_samples } => initial_samples,
            ConvergenceMode::Sequential => 1,
        }
    } else {
        1
    };
    wanted.clamp(1, config.max_samples.max(1))
}

/// One budget drawn on by several trajectories.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SharedBudget {
    /// The group's envelope and what the whole group used: tokens and
    /// iterations summed over the samples, wall time the longest sample's.
    pub budget: ConvergenceBudget,
    /// Iterations started and not yet recorded.
    pub reserved: u32,
    /// Each sample's own wall time.
    pub member_wall_ms: BTreeMap<String, u64>,
}

impl SharedBudget {
    pub fn new(budget: ConvergenceBudget) -> SharedBudget {
        SharedBudget { budget, reserved: 0, member_wall_ms: BTreeMap::new() }
    }

    /// The ledger as it stood when the samples last recorded: maxima and
    /// extension counts are the largest any sample saw (an extension granted
    /// to one is the group's), usage is summed from the samples' observations.
    pub fn rebuild<'a>(base: ConvergenceBudget, members: impl IntoIterator<Item = &'a Trajectory>) -> SharedBudget {
        let mut ledger = SharedBudget::new(base);
        let b = &mut ledger.budget;
        b.tokens_used = 0;
        b.iterations_used = 0;
        b.wall_time_used_ms = 0;
        for t in members {
            let m = &t.budget;
            b.max_tokens = b.max_tokens.max(m.max_tokens);
            b.max_iterations = b.max_iterations.max(m.max_iterations);
            b.max_wall_time_ms = b.max_wall_time_ms.max(m.max_wall_time_ms);
            b.max_extensions = b.max_extensions.max(m.max_extensions);
            b.extensions_requested = b.extensions_requested.max(m.extensions_requested);
            b.extensions_granted = b.extensions_granted.max(m.extensions_granted);
            b.tokens_used = t.observations.iter().fold(b.tokens_used, |sum, o| sum.saturating_add(o.tokens_used));
            b.iterations_used = b.iterations_used.saturating_add(t.observations.len() as u32);
            let wall = t.observations.iter().fold(0u64, |sum, o| sum.saturating_add(o.wall_time_ms));
            ledger.member_wall_ms.insert(t.id.clone(), wall);
        }
        ledger.budget.wall_time_used_ms = ledger.member_wall_ms.values().copied().max().unwrap_or(0);
        ledger
    }

    /// Claims one iteration: false when the group's iterations (counting
    /// those in flight), tokens or wall time are spent.
    pub fn reserve(&mut self) -> bool {
        let b = &self.budget;
        let spent = b.iterations_used.saturating_add(self.reserved) >= b.max_iterations
            || b.tokens_used >= b.max_tokens
            || b.wall_time_used_ms >= b.max_wall_time_ms;
        if spent {
            return false;
        }
        self.reserved += 1;
        true
    }

    /// Gives back a reserved iteration that recorded nothing (cancelled, failed).
    pub fn release(&mut self) {
        self.reserved = self.reserved.saturating_sub(1);
    }

    /// Shows `trajectory` the group's budget (before it records or concludes).
    pub fn lend(&self, trajectory: &mut Trajectory) {
        trajectory.budget = self.budget.clone();
    }

    /// Records one observation of `trajectory` through `step` (the engine's
    /// decision): the trajectory sees the group's budget, the step consumes
    /// the observation from it (and may extend it), and the group takes the
    /// result back. Settles the reservation the iteration held.
    pub fn record<R>(&mut self, trajectory: &mut Trajectory, step: impl FnOnce(&mut Trajectory) -> R) -> R {
        let result = self.apply(trajectory, step);
        self.release();
        result
    }

    /// Runs `change` on `trajectory` as if its budget were the group's (an
    /// approved extension, say), and takes the budget back: what `change`
    /// spent or extended is the group's. Wall time is counted per sample.
    pub fn apply<R>(&mut self, trajectory: &mut Trajectory, change: impl FnOnce(&mut Trajectory) -> R) -> R {
        self.lend(trajectory);
        let wall_before = trajectory.budget.wall_time_used_ms;
        let result = change(trajectory);
        let spent_wall = trajectory.budget.wall_time_used_ms.saturating_sub(wall_before);
        let own = self.member_wall_ms.entry(trajectory.id.clone()).or_insert(0);
        *own = own.saturating_add(spent_wall);
        let group_wall = self.member_wall_ms.values().copied().max().unwrap_or(0);
        trajectory.budget.wall_time_used_ms = group_wall;
        self.budget = trajectory.budget.clone();
        result
    }
}

/// How one sample ended, for choosing the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleEnd {
    pub ordinal: u32,
    /// It reached the acceptance threshold (not a partial acceptance).
    pub converged: bool,
    /// The level of its best observation, if it made any.
    pub level: Option<f64>,
}

/// The sample whose result is the group's: the one that converged first
/// (`first_converged`, an ordinal), else any that converged, else the best
/// observation across the group (ties to the lower ordinal). `None` when
/// no sample observed anything.
pub fn deciding_sample(ends: &[SampleEnd], first_converged: Option<u32>) -> Option<usize> {
    if let Some(i) = first_converged.and_then(|w| ends.iter().position(|e| e.ordinal == w && e.converged)) {
        return Some(i);
    }
    if let Some(i) = ends.iter().position(|e| e.converged) {
        return Some(i);
    }
    ends.iter()
        .enumerate()
        .filter_map(|(i, e)| e.level.map(|l| (i, l, e.ordinal)))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.2.cmp(&a.2)))
        .map(|(i, _, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::basin::BasinClassification;
    use crate::engine::{ConvergencePolicy, Observation, SpecificationEvolution, StrategyKind};

    fn budget(iterations: u32) -> ConvergenceBudget {
        ConvergenceBudget {
            max_tokens: 100_000,
            max_iterations: iterations,
            max_wall_time_ms: 60_000,
            max_extensions: 1,
            ..Default::default()
        }
    }

    fn trajectory(id: &str) -> Trajectory {
        Trajectory::new(id, "t", SpecificationEvolution::default(), budget(0), ConvergencePolicy::default())
    }

    fn observe(ledger: &mut SharedBudget, t: &mut Trajectory, tokens: u64, wall: u64) {
        ledger.record(t, |t| {
            let mut o = Observation::new(StrategyKind::RetryWithFeedback, Default::default(), Default::default());
            o.tokens_used = tokens;
            o.wall_time_ms = wall;
            t.budget.consume(tokens, wall);
            t.observations.push(o);
        });
    }

    #[test]
    fn samples_in_flight_never_overspend_the_iterations() {
        let mut ledger = SharedBudget::new(budget(3));
        // Three samples start at once, a fourth finds nothing left.
        assert!(ledger.reserve() && ledger.reserve() && ledger.reserve());
        assert!(!ledger.reserve());
        // One is cancelled before recording: its place is free again.
        ledger.release();
        assert!(ledger.reserve());
    }

    #[test]
    fn tokens_and_iterations_add_up_and_wall_time_is_the_longest_samples() {
        let mut ledger = SharedBudget::new(budget(10));
        let (mut a, mut b) = (trajectory("a"), trajectory("b"));
        for _ in 0..2 {
            assert!(ledger.reserve());
            observe(&mut ledger, &mut a, 1_000, 400);
        }
        assert!(ledger.reserve());
        observe(&mut ledger, &mut b, 5_000, 1_000);
        let g = &ledger.budget;
        assert_eq!((g.tokens_used, g.iterations_used, g.wall_time_used_ms, ledger.reserved), (7_000, 3, 1_000, 0));
        // Each sample sees the group's spending.
        assert_eq!(b.budget.iterations_used, 3);
        assert_eq!(b.budget.wall_time_used_ms, 1_000);

        // After a restart the ledger is rebuilt from what the samples recorded.
        let rebuilt = SharedBudget::rebuild(budget(10), [&a, &b]);
        assert_eq!(rebuilt.budget, ledger.budget);
        assert_eq!(rebuilt.member_wall_ms, ledger.member_wall_ms);
    }

    #[test]
    fn an_extension_granted_to_one_sample_is_the_groups() {
        let mut ledger = SharedBudget::new(budget(2));
        let mut a = trajectory("a");
        assert!(ledger.reserve());
        ledger.record(&mut a, |t| {
            t.budget.consume(10, 10);
            t.budget.extensions_requested += 1;
            t.budget.extend(&crate::engine::BudgetExtension {
                additional_tokens: 0,
                additional_iterations: 3,
                additional_wall_time_ms: 0,
            });
        });
        assert_eq!((ledger.budget.max_iterations, ledger.budget.extensions_requested), (5, 1));
        let mut b = trajectory("b");
        ledger.lend(&mut b);
        assert_eq!(b.budget.max_iterations, 5);
        // An extension a person approves later reaches the group the same way.
        ledger.apply(&mut b, |t| {
            t.budget.extend(&crate::engine::BudgetExtension {
                additional_tokens: 0,
                additional_iterations: 2,
                additional_wall_time_ms: 0,
            })
        });
        assert_eq!((ledger.budget.max_iterations, ledger.budget.iterations_used, ledger.reserved), (7, 1, 0));
    }

    #[test]
    fn the_first_to_converge_decides_else_the_best_observation_across_the_group() {
        let end = |ordinal, converged, level| SampleEnd { ordinal, converged, level };
        let ends = [end(1, false, Some(0.8)), end(2, true, Some(1.0)), end(3, true, Some(1.0))];
        assert_eq!(deciding_sample(&ends, Some(3)), Some(2));
        assert_eq!(deciding_sample(&ends, None), Some(1));
        let none =
            [end(1, false, Some(0.6)), end(2, false, Some(0.89)), end(3, false, None), end(4, false, Some(0.89))];
        assert_eq!(deciding_sample(&none, None), Some(1), "the best level; ties go to the lower ordinal");
        assert_eq!(deciding_sample(&[end(1, false, None)], None), None);
    }

    #[test]
    fn a_task_runs_one_trajectory_unless_it_asks_or_the_basin_rule_is_on() {
        let narrow = BasinWidth { score: 0.2, classification: BasinClassification::Narrow };
        let off = ParallelConfig::default();
        assert_eq!(sample_count(1, &narrow, None, &off), 1);
        assert_eq!(sample_count(3, &narrow, None, &off), 3);
        assert_eq!(sample_count(50, &narrow, None, &off), 8, "capped");
        let on = ParallelConfig { follow_basin: true, ..ParallelConfig::default() };
        assert_eq!(sample_count(1, &narrow, None, &on), 2);
        assert_eq!(sample_count(1, &narrow, Some(PriorityHint::Thorough), &on), 3);
        assert_eq!(sample_count(1, &narrow, Some(PriorityHint::Cheap), &on), 1);
    }
}
