//! The interface every numeric problem implements, and the registry of
//! built-in problems.

use super::{cec2006, engineering};

/// Values of one evaluation. Inequalities are feasible when g ≤ 0, equalities when h = 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub objective: f64,
    pub inequalities: Vec<f64>,
    pub equalities: Vec<f64>,
    /// Exact gradients, when the evaluator computed them (an external one
    /// may); solvers take finite differences when there are none.
    pub gradients: Option<Gradients>,
}

/// The gradients of the objective and of every constraint at one point,
/// each with one entry per variable.
#[derive(Debug, Clone, PartialEq)]
pub struct Gradients {
    pub objective: Vec<f64>,
    pub inequalities: Vec<Vec<f64>>,
    pub equalities: Vec<Vec<f64>>,
}

impl Evaluation {
    /// Largest violation: max(0, max g_i, max |h_j|) — 0 when feasible.
    pub fn max_violation(&self) -> f64 {
        let g = self.inequalities.iter().copied().fold(0.0, f64::max);
        let h = self.equalities.iter().map(|h| h.abs()).fold(0.0, f64::max);
        g.max(h)
    }

    /// Whether the objective and every constraint value are finite numbers.
    pub fn is_finite(&self) -> bool {
        self.objective.is_finite()
            && self.inequalities.iter().all(|v| v.is_finite())
            && self.equalities.iter().all(|v| v.is_finite())
    }
}

/// The best value known for a problem and, when published, a point reaching it.
#[derive(Debug, Clone, PartialEq)]
pub struct BestKnown {
    pub value: f64,
    pub x: Option<Vec<f64>>,
}

/// Why a point could not be evaluated (wrong length, a non-finite value, a
/// failed external evaluator, …).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

/// A constrained minimisation problem: minimise `objective` subject to
/// `inequalities ≤ 0`, `equalities = 0` and the box `bounds`.
pub trait Problem: Send + Sync {
    fn name(&self) -> &str;
    fn dimension(&self) -> usize;
    /// Box bounds, one (lower, upper) pair per variable.
    fn bounds(&self) -> Vec<(f64, f64)>;
    fn inequality_names(&self) -> Vec<String>;
    fn equality_names(&self) -> Vec<String>;
    fn evaluate(&self, x: &[f64]) -> Result<Evaluation, EvalError>;
    /// Evaluates several points, answering in their order. The default asks
    /// [`Problem::evaluate`] for each in turn; an evaluator that pays per call
    /// (a process per point, a round trip per message) answers them at once.
    fn evaluate_batch(&self, points: &[Vec<f64>]) -> Vec<Result<Evaluation, EvalError>> {
        points.iter().map(|x| self.evaluate(x)).collect()
    }
    fn best_known(&self) -> Option<BestKnown>;
    /// The max violation at which a point of this problem counts as
    /// feasible, when the problem sets its own (an external problem file's
    /// `tolerance`); else the coordinator's `feasibility_tolerance` applies.
    fn feasibility_tolerance(&self) -> Option<f64> {
        None
    }
}

/// A built-in problem by name ("g01".."g24", "pressure_vessel", "welded_beam", "spring", "speed_reducer").
pub fn builtin(name: &str) -> Option<Box<dyn Problem>> {
    cec2006::lookup(name).or_else(|| engineering::lookup(name)).map(|p| Box::new(p) as Box<dyn Problem>)
}

/// The names [`builtin`] knows, CEC 2006 first (g01–g24), then the engineering designs.
pub fn builtin_names() -> Vec<&'static str> {
    cec2006::NAMES.iter().chain(engineering::NAMES.iter()).copied().collect()
}

/// Computes the objective of a built-in problem and fills its inequality
/// (`g`) and equality (`h`) values, each slice already of the right length.
pub(crate) type Formula = fn(x: &[f64], g: &mut [f64], h: &mut [f64]) -> f64;

/// A problem defined by a formula in the code: the CEC 2006 set and the
/// engineering designs.
#[derive(Debug, Clone)]
pub(crate) struct BuiltinProblem {
    pub name: &'static str,
    pub bounds: &'static [(f64, f64)],
    pub inequalities: usize,
    pub equalities: usize,
    pub formula: Formula,
    pub best_value: f64,
    pub best_x: &'static [f64],
}

impl Problem for BuiltinProblem {
    fn name(&self) -> &str {
        self.name
    }

    fn dimension(&self) -> usize {
        self.bounds.len()
    }

    fn bounds(&self) -> Vec<(f64, f64)> {
        self.bounds.to_vec()
    }

    fn inequality_names(&self) -> Vec<String> {
        (1..=self.inequalities).map(|i| format!("g{i}")).collect()
    }

    fn equality_names(&self) -> Vec<String> {
        (1..=self.equalities).map(|i| format!("h{i}")).collect()
    }

    /// Evaluates the formula at any point of the right length, inside the
    /// box or not; a point where a value is not a finite number (a pole or a
    /// logarithm of a negative number, outside the box) is an error.
    fn evaluate(&self, x: &[f64]) -> Result<Evaluation, EvalError> {
        if x.len() != self.bounds.len() {
            return Err(EvalError(format!(
                "{}: expected a point with {} coordinates, got {}",
                self.name,
                self.bounds.len(),
                x.len()
            )));
        }
        let mut inequalities = vec![0.0; self.inequalities];
        let mut equalities = vec![0.0; self.equalities];
        let objective = (self.formula)(x, &mut inequalities, &mut equalities);
        let eval = Evaluation { objective, inequalities, equalities, gradients: None };
        if eval.is_finite() {
            Ok(eval)
        } else {
            Err(EvalError(format!(
                "{}: not a finite value at x = {x:?} (objective {}, inequalities {:?}, equalities {:?})",
                self.name, eval.objective, eval.inequalities, eval.equalities
            )))
        }
    }

    fn best_known(&self) -> Option<BestKnown> {
        Some(BestKnown { value: self.best_value, x: Some(self.best_x.to_vec()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_violation_counts_positive_inequalities_and_absolute_equalities() {
        let e =
            Evaluation { objective: 1.0, inequalities: vec![-3.0, 0.25], equalities: vec![-0.5, 0.1], gradients: None };
        assert_eq!(e.max_violation(), 0.5);
        let feasible =
            Evaluation { objective: 1.0, inequalities: vec![-3.0, 0.0], equalities: vec![], gradients: None };
        assert_eq!(feasible.max_violation(), 0.0);
    }

    #[test]
    fn builtin_knows_every_listed_name_and_nothing_else() {
        let names = builtin_names();
        assert_eq!(names.len(), 28);
        for name in &names {
            let p = builtin(name).unwrap_or_else(|| panic!("{name} is listed but not built in"));
            assert_eq!(p.name(), *name);
        }
        assert!(builtin("g25").is_none());
        assert!(builtin("G01").is_none());
        assert!(builtin("").is_none());
    }

    #[test]
    fn a_point_of_the_wrong_length_is_an_error_not_a_panic() {
        let p = builtin("g01").unwrap();
        let err = p.evaluate(&[0.0; 3]).unwrap_err();
        assert!(err.0.contains("13 coordinates, got 3"), "{err}");
    }

    #[test]
    fn a_non_finite_value_outside_the_box_is_an_error() {
        // g21 takes ln(900 − x4): x4 = 1000 is outside the box and undefined there.
        let p = builtin("g21").unwrap();
        let err = p.evaluate(&[200.0, 1.0, 1.0, 1000.0, 6.0, 6.0, 6.0]).unwrap_err();
        assert!(err.0.starts_with("g21: not a finite value"), "{err}");
    }
}
