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
pub mod reading;
pub mod seeds;
pub mod toy;

pub use cec2006::feasible_reference;
pub use external::{EvaluatorMode, ExternalError, ExternalProblem, Variable, load_external, parse_external};
use std::path::Path;
use std::sync::Arc;

pub use problem::{BestKnown, EvalError, Evaluation, Gradients, Problem, builtin, builtin_names};

/// Resolves a task's `problem:` — a built-in name, else a problem file
/// relative to the suite.
pub fn resolve_problem(name: &str, suite_dir: &Path) -> Result<(Arc<dyn Problem>, Option<f64>), String> {
    if let Some(p) = builtin(name) {
        let reference = cec2006::feasible_reference(name).or_else(|| p.best_known().map(|b| b.value));
        return Ok((Arc::from(p), reference));
    }
    let path = suite_dir.join(name);
    if path.is_file() {
        let p = external::load_external(&path).map_err(|e| e.to_string())?;
        let reference = p.best_known().map(|b| b.value);
        return Ok((Arc::new(p), reference));
    }
    Err(format!(
        "unknown problem `{name}`: not a built-in ({}) and no file {}",
        builtin_names().join(", "),
        path.display()
    ))
}
