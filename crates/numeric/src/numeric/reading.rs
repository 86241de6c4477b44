//! What an optimizer's state reads as after a chunk of work: each
//! constraint's value, kind and penalty, and the snapshot the supervisors'
//! diagnostics are made from. The optimizers here write it; the ASO
//! coordinator reads it.

use serde::{Deserialize, Serialize};

/// Whether a constraint is g(x) ≤ 0 or h(x) = 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConstraintKind {
    Inequality,
    Equality,
}

/// One constraint's value and penalty as an optimizer reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConstraintReading {
    pub name: String,
    pub kind: ConstraintKind,
    pub value: f64,
    pub penalty: f64,
}

impl ConstraintReading {
    /// How far from satisfied: max(0, g) or |h|.
    pub fn violation(&self) -> f64 {
        match self.kind {
            ConstraintKind::Inequality => self.value.max(0.0),
            ConstraintKind::Equality => self.value.abs(),
        }
    }
}

/// The readings of a point's inequalities `g` and equalities `h`, named from
/// `names` (or g1…, h1… past their end), each with the penalty `penalty`
/// gives its kind and index.
pub fn readings(
    names: (&[String], &[String]),
    g: &[f64],
    h: &[f64],
    penalty: impl Fn(ConstraintKind, usize) -> f64,
) -> Vec<ConstraintReading> {
    let reading = |kind, names: &[String], prefix: &str, i: usize, value: f64| ConstraintReading {
        name: names.get(i).cloned().unwrap_or_else(|| format!("{prefix}{}", i + 1)),
        kind,
        value,
        penalty: penalty(kind, i),
    };
    let inequalities = g.iter().enumerate().map(|(i, v)| reading(ConstraintKind::Inequality, names.0, "g", i, *v));
    let equalities = h.iter().enumerate().map(|(j, v)| reading(ConstraintKind::Equality, names.1, "h", j, *v));
    inequalities.chain(equalities).collect()
}

/// The optimizer state diagnostics are made from (for numeric tasks, the ALM
/// state after a chunk).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub objective: f64,
    pub constraints: Vec<ConstraintReading>,
    /// Size of the current search box (the seed's `bounds_norm`).
    pub bounds_norm: f64,
}

impl Snapshot {
    pub fn max_violation(&self) -> f64 {
        self.constraints.iter().map(ConstraintReading::violation).fold(0.0, f64::max)
    }
}
