//! The convergence engine for agent tasks (seed 002, with the goal gradient of
//! seed 003): trajectories of observations measured by overseers, attractor
//! classification, strategy selection by a bandit, budgets and loop control.

pub mod strategy;

pub use strategy::StrategyKind;
