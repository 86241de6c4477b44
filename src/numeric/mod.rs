//! Constrained numeric benchmark problems for the `optimize` task kind: the 24
//! CEC 2006 problems, four classic engineering designs, and problems whose
//! values come from an external evaluator command. Every problem is a
//! minimisation with box bounds, inequalities g ≤ 0 and equalities h = 0,
//! behind the [`Problem`] trait; [`builtin`] finds the built-in ones by name.
//! [`alm`] is the augmented-Lagrangian optimizer that solves them; [`polish`]
//! finishes a point with SQP; [`population`] is the differential evolution
//! (εDE) the coordinator turns to on rugged problems.

pub mod alm;
pub mod cec2006;
pub mod engineering;
pub mod external;
pub mod polish;
pub mod population;
pub mod problem;

pub use cec2006::feasible_reference;
pub use external::{EvaluatorMode, ExternalError, ExternalProblem, Variable, load_external, parse_external};
pub use problem::{BestKnown, EvalError, Evaluation, Gradients, Problem, builtin, builtin_names};
