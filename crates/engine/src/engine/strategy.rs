//! The strategies a trajectory can take on its next iteration.
//!
//! A strategy is a specific way of moving toward the goal, not just "retry":
//! exploitation strategies refine the current approach, exploration strategies
//! try a different one, and two strategies change what the executor starts
//! from (RevertAndBranch resets the workspace to the best observation,
//! FreshStart drops the conversation and keeps only curated knowledge). The
//! data a strategy needs (the target observation, the carry-forward) travels
//! beside the kind, so the kind stays a plain key for the bandit's arms.
//!
//! The kind itself lives in `domain::convergence`, below the bus that
//! carries it to the store and the app.

pub use crate::domain::convergence::StrategyKind;
