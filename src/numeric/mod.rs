//! Constrained numeric benchmark problems for the `optimize` task kind: the 24
//! CEC 2006 problems and four classic engineering designs. Every problem is a
//! minimisation with box bounds, inequalities g ≤ 0 and equalities h = 0,
//! behind the [`Problem`] trait; [`builtin`] finds the built-in ones by name.

pub mod cec2006;
pub mod engineering;
pub mod problem;

pub use cec2006::feasible_reference;
pub use problem::{BestKnown, EvalError, Evaluation, Problem, builtin, builtin_names};
