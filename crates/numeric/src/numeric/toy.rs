//! Small problems with known optima, for the tests of every layer that
//! solves or supervises (the ALM, the population, the ASO coordinator): one
//! home, so a test's problem is the one its neighbours' tests use, and a
//! problem that fails on purpose fails the same way everywhere.

use std::sync::atomic::{AtomicU32, Ordering};

use super::problem::{BestKnown, EvalError, Evaluation, Gradients, Problem};

/// min (x−2)² + (y−1)²  s.t.  x² − y ≤ 0,  x + y − 2 = 0  → optimum (1, 1), f = 1.
pub struct Small;

impl Problem for Small {
    fn name(&self) -> &str {
        "small"
    }
    fn dimension(&self) -> usize {
        2
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(-5.0, 5.0), (-5.0, 5.0)]
    }
    fn inequality_names(&self) -> Vec<String> {
        vec!["g1".into()]
    }
    fn equality_names(&self) -> Vec<String> {
        vec!["h1".into()]
    }
    fn evaluate(&self, x: &[f64]) -> Result<Evaluation, EvalError> {
        Ok(Evaluation {
            objective: (x[0] - 2.0).powi(2) + (x[1] - 1.0).powi(2),
            inequalities: vec![x[0] * x[0] - x[1]],
            equalities: vec![x[0] + x[1] - 2.0],
            gradients: None,
        })
    }
    fn best_known(&self) -> Option<BestKnown> {
        Some(BestKnown { value: 1.0, x: Some(vec![1.0, 1.0]) })
    }
}

/// [`Small`] with its line as an inequality: min (x−2)² + (y−1)²  s.t.
/// x² − y ≤ 0,  x + y − 2 ≤ 0  → optimum (1, 1), f = 1.
pub struct SmallInequalities;

impl Problem for SmallInequalities {
    fn name(&self) -> &str {
        "small"
    }
    fn dimension(&self) -> usize {
        2
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        Small.bounds()
    }
    fn inequality_names(&self) -> Vec<String> {
        vec!["g1".into(), "g2".into()]
    }
    fn equality_names(&self) -> Vec<String> {
        vec![]
    }
    fn evaluate(&self, x: &[f64]) -> Result<Evaluation, EvalError> {
        let mut e = Small.evaluate(x)?;
        let line = std::mem::take(&mut e.equalities);
        e.inequalities.extend(line);
        Ok(e)
    }
    fn best_known(&self) -> Option<BestKnown> {
        Small.best_known()
    }
}

/// min x² + y² + z²  s.t.  x + y + z − 3 = 0 → (1, 1, 1), f = 3.
pub struct Plane;

impl Problem for Plane {
    fn name(&self) -> &str {
        "plane"
    }
    fn dimension(&self) -> usize {
        3
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(-10.0, 10.0); 3]
    }
    fn inequality_names(&self) -> Vec<String> {
        vec![]
    }
    fn equality_names(&self) -> Vec<String> {
        vec!["h1".into()]
    }
    fn evaluate(&self, x: &[f64]) -> Result<Evaluation, EvalError> {
        Ok(Evaluation {
            objective: x.iter().map(|v| v * v).sum(),
            inequalities: vec![],
            equalities: vec![x.iter().sum::<f64>() - 3.0],
            gradients: None,
        })
    }
    fn best_known(&self) -> Option<BestKnown> {
        None
    }
}

/// min x  s.t.  x² + y² − 1 ≤ 0 in [−2, 2]² → (−1, 0), f = −1; with the
/// evaluator's exact gradients or without (then solvers difference them).
pub struct Disk {
    pub exact_gradients: bool,
}

impl Problem for Disk {
    fn name(&self) -> &str {
        "disk"
    }
    fn dimension(&self) -> usize {
        2
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![(-2.0, 2.0); 2]
    }
    fn inequality_names(&self) -> Vec<String> {
        vec!["disk".into()]
    }
    fn equality_names(&self) -> Vec<String> {
        vec![]
    }
    fn evaluate(&self, x: &[f64]) -> Result<Evaluation, EvalError> {
        Ok(Evaluation {
            objective: x[0],
            inequalities: vec![x[0] * x[0] + x[1] * x[1] - 1.0],
            equalities: vec![],
            gradients: self.exact_gradients.then(|| Gradients {
                objective: vec![1.0, 0.0],
                inequalities: vec![vec![2.0 * x[0], 2.0 * x[1]]],
                equalities: vec![],
            }),
        })
    }
    fn best_known(&self) -> Option<BestKnown> {
        Some(BestKnown { value: -1.0, x: Some(vec![-1.0, 0.0]) })
    }
}

/// `inner` under another name, with `before` run ahead of each evaluation
/// (an error from it is the evaluation's), knowing the optimum or not.
pub struct Around<P, F> {
    pub name: &'static str,
    pub known: Option<BestKnown>,
    pub inner: P,
    pub before: F,
}

impl<P: Problem, F: Fn(&[f64]) -> Result<(), EvalError> + Send + Sync> Problem for Around<P, F> {
    fn name(&self) -> &str {
        self.name
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        self.inner.bounds()
    }
    fn inequality_names(&self) -> Vec<String> {
        self.inner.inequality_names()
    }
    fn equality_names(&self) -> Vec<String> {
        self.inner.equality_names()
    }
    fn evaluate(&self, x: &[f64]) -> Result<Evaluation, EvalError> {
        (self.before)(x)?;
        self.inner.evaluate(x)
    }
    fn best_known(&self) -> Option<BestKnown> {
        self.known.clone()
    }
}

/// `inner`, which evaluates fine `good` times and then fails every time with
/// `message`, like a crashing external evaluator; it knows no optimum.
pub struct Breaking<P> {
    pub inner: P,
    pub good: u32,
    pub message: &'static str,
    calls: AtomicU32,
}

impl<P> Breaking<P> {
    pub fn after(good: u32, inner: P, message: &'static str) -> Breaking<P> {
        Breaking { inner, good, message, calls: AtomicU32::new(0) }
    }

    /// Evaluations asked for so far, the failed ones included.
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

impl<P: Problem> Problem for Breaking<P> {
    fn name(&self) -> &str {
        "breaks"
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn bounds(&self) -> Vec<(f64, f64)> {
        self.inner.bounds()
    }
    fn inequality_names(&self) -> Vec<String> {
        self.inner.inequality_names()
    }
    fn equality_names(&self) -> Vec<String> {
        self.inner.equality_names()
    }
    fn evaluate(&self, x: &[f64]) -> Result<Evaluation, EvalError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) >= self.good {
            return Err(EvalError(self.message.into()));
        }
        self.inner.evaluate(x)
    }
    fn best_known(&self) -> Option<BestKnown> {
        None
    }
}
