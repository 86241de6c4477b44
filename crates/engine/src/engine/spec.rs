//! The specification a trajectory converges toward, and how it evolves.
//!
//! A fixed prompt tends to produce the same few answers over and over (a
//! limit cycle); amending the specification — a hint from the user, a
//! requirement a failing test revealed, an architect's re-plan — is the main
//! way out. The effective specification (original plus every amendment) is
//! what prompts and fresh-start carry-forwards contain; it is recomputed on
//! every amendment, and nothing is ever removed.

use serde::{Deserialize, Serialize};

/// The specification at one moment: what to build and what it must and must not do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecificationSnapshot {
    pub description: String,
    /// Invariants ("must …") and anti-patterns ("must not …").
    #[serde(default)]
    pub constraints: Vec<String>,
    /// What amendments added: discovered requirements, disambiguations, user hints.
    #[serde(default)]
    pub clarifications: Vec<String>,
}

impl SpecificationSnapshot {
    /// The text given to an executor.
    pub fn render(&self) -> String {
        let mut out = self.description.trim().to_string();
        if !self.constraints.is_empty() {
            out.push_str("\n\nConstraints:\n");
            for c in &self.constraints {
                out.push_str(&format!("- {c}\n"));
            }
        }
        if !self.clarifications.is_empty() {
            out.push_str(if self.constraints.is_empty() { "\n\nClarifications:\n" } else { "\nClarifications:\n" });
            for c in &self.clarifications {
                out.push_str(&format!("- {c}\n"));
            }
        }
        out
    }
}

/// Where an amendment came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AmendmentSource {
    /// A hint or explicit feedback from a person.
    UserHint,
    /// A failure revealed a requirement the specification does not state.
    ImplicitRequirementDiscovered,
    /// An overseer exposed a constraint (e.g. a security finding).
    OverseerDiscovery,
    /// An architect review changed the plan.
    ArchitectAmendment,
    /// Contradictory tests revealed an ambiguity, now resolved.
    TestDisambiguation,
    /// Constraints and anti-patterns given with the task.
    SubmissionConstraint,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecificationAmendment {
    /// 1, 2, … in the order they were made.
    pub id: u32,
    pub source: AmendmentSource,
    pub description: String,
    pub rationale: String,
    /// The observation that prompted it, if any.
    pub observation_trigger: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecificationEvolution {
    pub original: SpecificationSnapshot,
    pub amendments: Vec<SpecificationAmendment>,
    /// `original` with every amendment applied.
    pub effective: SpecificationSnapshot,
}

impl SpecificationEvolution {
    pub fn new(original: SpecificationSnapshot) -> Self {
        SpecificationEvolution { effective: original.clone(), original, amendments: Vec::new() }
    }

    /// A task's description with its submitted constraints and anti-patterns
    /// recorded as `SubmissionConstraint` amendments.
    pub fn from_submission(description: &str, constraints: &[String], anti_patterns: &[String]) -> Self {
        let mut spec = SpecificationEvolution::new(SpecificationSnapshot {
            description: description.to_string(),
            ..Default::default()
        });
        for c in constraints {
            spec.amend(AmendmentSource::SubmissionConstraint, format!("Must: {c}"), "given with the task", None);
        }
        for a in anti_patterns {
            spec.amend(AmendmentSource::SubmissionConstraint, format!("Must not: {a}"), "given with the task", None);
        }
        spec
    }

    /// Adds an amendment and recomputes the effective specification.
    pub fn amend(
        &mut self,
        source: AmendmentSource,
        description: impl Into<String>,
        rationale: impl Into<String>,
        observation_trigger: Option<u32>,
    ) -> &SpecificationAmendment {
        let id = self.amendments.len() as u32 + 1;
        self.amendments.push(SpecificationAmendment {
            id,
            source,
            description: description.into(),
            rationale: rationale.into(),
            observation_trigger,
        });
        self.recompute();
        &self.amendments[self.amendments.len() - 1]
    }

    fn recompute(&mut self) {
        let mut effective = self.original.clone();
        for a in &self.amendments {
            let list = match a.source {
                AmendmentSource::SubmissionConstraint => &mut effective.constraints,
                _ => &mut effective.clarifications,
            };
            if !list.contains(&a.description) {
                list.push(a.description.clone());
            }
        }
        self.effective = effective;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amendments_are_folded_into_the_effective_specification() {
        let mut spec = SpecificationEvolution::from_submission(
            "Parse ISO dates.",
            &["return errors, never panic".into()],
            &["regular expressions".into()],
        );
        spec.amend(AmendmentSource::ImplicitRequirementDiscovered, "Accept a trailing Z.", "test_z failed", Some(3));
        assert_eq!(spec.original.constraints.len(), 0);
        assert_eq!(
            spec.effective.constraints,
            vec!["Must: return errors, never panic", "Must not: regular expressions"]
        );
        assert_eq!(spec.effective.clarifications, vec!["Accept a trailing Z."]);
        assert_eq!(spec.amendments.last().map(|a| a.id), Some(3));
        let text = spec.effective.render();
        assert!(text.starts_with("Parse ISO dates.") && text.contains("- Accept a trailing Z."), "{text}");
    }
}
