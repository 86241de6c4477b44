//! Reading one point's values from what an evaluator printed — the same JSON
//! object in both modes: `{"objective": f, "constraints": {"g1": v, …}}`,
//! optionally with `"gradient": {"objective": [..], "constraints": {"g1": [..], …}}`.
//!
//! Errors are sentences without a subject ("printed no \"objective\" …"):
//! the caller puts the problem and its command in front, so the user reads
//! which evaluator said what.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::numeric::problem::{Evaluation, Gradients};

/// The reply format, quoted in errors about a malformed one.
pub(super) const EXPECTED: &str = r#"it must print {"objective": <number>, "constraints": {"<name>": <number>, ...}}"#;

/// What a reply must contain: the declared constraints, in order, and the
/// number of variables (the length of every gradient).
pub(super) struct Shape<'a> {
    pub inequalities: &'a [String],
    pub equalities: &'a [String],
    pub dimension: usize,
}

impl Shape<'_> {
    /// The values in `object`, or what is wrong with them. `printed` is the
    /// whole output, quoted when a key is missing.
    pub fn evaluation(&self, object: &Map<String, Value>, printed: &str) -> Result<Evaluation, String> {
        let objective = match object.get("objective") {
            Some(v) => number("objective", v)?,
            None => return Err(format!("printed no \"objective\"; {EXPECTED}; output: {}", excerpt(printed))),
        };
        let constraints = self.constraints(object.get("constraints"), "constraints", printed)?;
        let values = |names: &[String]| -> Result<Vec<f64>, String> {
            names.iter().map(|n| number(&format!("value for constraint \"{n}\""), &constraints[n.as_str()])).collect()
        };
        let gradients = match object.get("gradient") {
            None | Some(Value::Null) => None,
            Some(Value::Object(g)) => Some(self.gradients(g, printed)?),
            Some(other) => {
                return Err(format!(
                    "printed a \"gradient\" that is not an object {{\"objective\": [...], \"constraints\": {{...}}}}: {}",
                    excerpt(&other.to_string())
                ));
            }
        };
        Ok(Evaluation {
            objective,
            inequalities: values(self.inequalities)?,
            equalities: values(self.equalities)?,
            gradients,
        })
    }

    /// The `constraints` object (or the gradient's), checked to hold every
    /// declared name and no other.
    fn constraints<'v>(
        &self,
        value: Option<&'v Value>,
        key: &str,
        printed: &str,
    ) -> Result<&'v Map<String, Value>, String> {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        let unconstrained = self.inequalities.is_empty() && self.equalities.is_empty();
        let constraints = match value {
            Some(Value::Object(c)) => c,
            None | Some(Value::Null) if unconstrained => &*EMPTY,
            None => {
                return Err(format!(
                    "printed no \"{key}\" (it must give {}); output: {}",
                    self.constraint_list(),
                    excerpt(printed)
                ));
            }
            Some(other) => {
                return Err(format!(
                    "printed \"{key}\" that is not an object of values by constraint name: {}",
                    excerpt(&other.to_string())
                ));
            }
        };
        let declared: BTreeSet<&str> = self.inequalities.iter().chain(self.equalities).map(String::as_str).collect();
        let unknown: Vec<&str> = constraints.keys().map(String::as_str).filter(|k| !declared.contains(k)).collect();
        if !unknown.is_empty() {
            return Err(format!(
                "printed unknown constraint {} in \"{key}\" (the problem file declares {})",
                quote_list(&unknown),
                self.constraint_list()
            ));
        }
        let missing: Vec<&str> = declared.iter().copied().filter(|k| !constraints.contains_key(*k)).collect();
        if !missing.is_empty() {
            return Err(format!(
                "printed no value for constraint {} in \"{key}\"; output: {}",
                quote_list(&missing),
                excerpt(printed)
            ));
        }
        Ok(constraints)
    }

    /// Every gradient, each a list of `dimension` finite numbers.
    fn gradients(&self, g: &Map<String, Value>, printed: &str) -> Result<Gradients, String> {
        let vector = |what: &str, v: Option<&Value>| -> Result<Vec<f64>, String> {
            let Some(Value::Array(items)) = v else {
                return Err(format!(
                    "printed no list of {} numbers for the gradient of {what}: {}",
                    self.dimension,
                    excerpt(&v.map(Value::to_string).unwrap_or_default())
                ));
            };
            if items.len() != self.dimension {
                return Err(format!(
                    "printed a gradient of {what} with {} numbers; the problem has {} variables",
                    items.len(),
                    self.dimension
                ));
            }
            items.iter().map(|v| number(&format!("gradient entry of {what}"), v)).collect()
        };
        let objective = vector("the objective", g.get("objective"))?;
        let constraints = self.constraints(g.get("constraints"), "gradient.constraints", printed)?;
        let rows = |names: &[String]| -> Result<Vec<Vec<f64>>, String> {
            names.iter().map(|n| vector(&format!("constraint \"{n}\""), constraints.get(n))).collect()
        };
        Ok(Gradients { objective, inequalities: rows(self.inequalities)?, equalities: rows(self.equalities)? })
    }

    fn constraint_list(&self) -> String {
        let all: Vec<&str> = self.inequalities.iter().chain(self.equalities).map(String::as_str).collect();
        if all.is_empty() { "no constraints".to_string() } else { quote_list(&all) }
    }
}

/// A finite number, or why `v` is not one.
fn number(what: &str, v: &Value) -> Result<f64, String> {
    match v.as_f64() {
        Some(n) if n.is_finite() => Ok(n),
        Some(n) => Err(format!("printed a non-finite {what}: {n}")),
        None => Err(format!("printed a {what} that is not a number: {}", excerpt(&v.to_string()))),
    }
}

/// At most 200 characters of `text`, on one line (line breaks and other
/// control characters escaped), between « ».
pub(super) fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    let text = text.trim();
    let mut out = String::new();
    for c in text.chars().take(MAX) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if text.chars().count() > MAX {
        out.push('…');
    }
    format!("«{out}»")
}

fn quote_list(names: &[&str]) -> String {
    names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape<'a>(ineq: &'a [String], eq: &'a [String]) -> Shape<'a> {
        Shape { inequalities: ineq, equalities: eq, dimension: 2 }
    }

    fn read(text: &str) -> Result<Evaluation, String> {
        let (ineq, eq) = (vec!["g1".to_string()], vec!["h1".to_string()]);
        let Value::Object(object) = serde_json::from_str::<Value>(text).unwrap() else { panic!("not an object") };
        shape(&ineq, &eq).evaluation(&object, text)
    }

    #[test]
    fn gradients_are_read_when_given_and_absent_otherwise() {
        let plain = read(r#"{"objective": 1, "constraints": {"g1": -1, "h1": 0}}"#).unwrap();
        assert_eq!(plain.gradients, None);
        let with = read(
            r#"{"objective": 1, "constraints": {"g1": -1, "h1": 0},
                "gradient": {"objective": [1, 2], "constraints": {"g1": [3, 4], "h1": [5, 6]}}}"#,
        )
        .unwrap();
        let g = with.gradients.unwrap();
        assert_eq!(g.objective, vec![1.0, 2.0]);
        assert_eq!(g.inequalities, vec![vec![3.0, 4.0]]);
        assert_eq!(g.equalities, vec![vec![5.0, 6.0]]);
    }

    #[test]
    fn a_gradient_of_the_wrong_length_or_missing_a_constraint_names_it() {
        let short = read(
            r#"{"objective": 1, "constraints": {"g1": -1, "h1": 0},
                "gradient": {"objective": [1], "constraints": {"g1": [3, 4], "h1": [5, 6]}}}"#,
        )
        .unwrap_err();
        assert!(short.contains("gradient of the objective with 1 numbers; the problem has 2 variables"), "{short}");
        let missing = read(
            r#"{"objective": 1, "constraints": {"g1": -1, "h1": 0},
                "gradient": {"objective": [1, 2], "constraints": {"g1": [3, 4]}}}"#,
        )
        .unwrap_err();
        assert!(missing.contains(r#"no value for constraint "h1" in "gradient.constraints""#), "{missing}");
    }
}
