//! TEMPORARY interface copy for developing the ALM; replaced by the problems branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub objective: f64,
    pub inequalities: Vec<f64>,
    pub equalities: Vec<f64>,
}
impl Evaluation {
    pub fn max_violation(&self) -> f64 {
        self.inequalities
            .iter()
            .map(|g| g.max(0.0))
            .chain(self.equalities.iter().map(|h| h.abs()))
            .fold(0.0, f64::max)
    }
}
#[derive(Debug, Clone, PartialEq)]
pub struct BestKnown {
    pub value: f64,
    pub x: Option<Vec<f64>>,
}
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);
pub trait Problem: Send + Sync {
    fn name(&self) -> &str;
    fn dimension(&self) -> usize;
    fn bounds(&self) -> Vec<(f64, f64)>;
    fn inequality_names(&self) -> Vec<String>;
    fn equality_names(&self) -> Vec<String>;
    fn evaluate(&self, x: &[f64]) -> Result<Evaluation, EvalError>;
    fn best_known(&self) -> Option<BestKnown>;
}
