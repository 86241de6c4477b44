//! The convergence engine for agent tasks (seed 002, with the goal gradient of
//! seed 003): trajectories of observations measured by overseers, attractor
//! classification, strategy selection by a bandit, budgets and loop control.
//!
//! Everything here is pure decision logic — no I/O, no clock, randomness
//! only from a caller's generator — so it can be tested on synthetic
//! overseer signals and wired into any executor loop:
//!
//! ```text
//! let plan = engine.setup(&inputs);                       // SETUP
//! let mut t = Trajectory::new(id, task, spec, plan.budget, plan.policy);
//! let mut next = engine.start(&mut t, &bandit, &mut rng)?;  // first strategy
//! loop {
//!     let obs = execute(next) + measure(overseers);         // the caller's I/O
//!     let d = engine.decide(&mut t, &mut bandit, obs, &mut rng)?;
//!     match d.loop_control { … terminal → RESOLVE, else next = d.next … }
//! }
//! ```
//!
//! - [`model`]: trajectory, observation, phases; [`spec`]: the evolving
//!   specification; [`budget`], [`policy`], [`basin`]: SETUP.
//! - [`metrics`]: convergence delta and level; [`context`]: context health.
//! - [`attractor`]: classification and cycle detection.
//! - [`eligibility`], [`bandit`], [`effectiveness`]: choosing strategies.
//! - [`criteria`]: overseer verdicts as goal-gradient criteria.
//! - [`carry_forward`], [`control`], [`decide`]: fresh starts, loop control, the step.
//! - [`intervention`]: which intervention points a step reached and what each does.
//! - [`parallel`]: several samples of one task on a shared budget;
//!   [`decompose`]: splitting a task into subtasks and an integration.

pub mod attractor;
pub mod bandit;
pub mod basin;
pub mod budget;
pub mod carry_forward;
pub mod config;
pub mod context;
pub mod control;
pub mod criteria;
pub mod decide;
pub mod decompose;
pub mod effectiveness;
pub mod eligibility;
pub mod intervention;
pub mod metrics;
pub mod model;
pub mod parallel;
pub mod policy;
pub mod spec;
pub mod strategy;

pub use attractor::{AttractorKind, AttractorState, AttractorType, ConvergenceTendency, DivergenceCause};
pub use bandit::{BetaArm, StrategyBandit, StrategyOutcome};
pub use basin::{BasinWidth, ConvergenceMode, SetupInputs, SetupPlan};
pub use budget::{BudgetExtension, Complexity, ConvergenceBudget};
pub use carry_forward::CarryForward;
pub use config::EngineConfig;
pub use context::{ContextHealth, Degradation};
pub use control::{BestObservation, LoopControl};
pub use decide::{AttractorTransition, Decision, Engine, EngineError, RevertTarget, StrategyChoice};
pub use decompose::{DecomposedBudget, DecompositionConfig, DecompositionDecision, ProactiveDecomposition};
pub use intervention::{InterventionConfig, InterventionKind, InterventionMode, PointReached, Told};
pub use model::{
    ConvergencePhase, FlowStage, GapCategory, IntentGap, Observation, ObservationMetrics, StrategyEntry, Trajectory,
    VerificationResult,
};
pub use parallel::{ParallelConfig, SampleEnd, SharedBudget};
pub use policy::{ConvergencePolicy, PriorityHint};
pub use spec::{AmendmentSource, SpecificationEvolution, SpecificationSnapshot};
pub use strategy::StrategyKind;
