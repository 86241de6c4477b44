//! When a trajectory should involve a person (seed 002 §7.3): which
//! intervention points a step reached, and what each point does — pause for
//! an answer, leave a notice, or decide alone.
//!
//! Six points exist. Two end a trajectory's budget or its hope and are
//! decided by loop control itself (`BudgetExtension`, `HumanEscalation`), one
//! comes at the end (`PartialResult`, when partial acceptance would take the
//! best result). The other three are found here, after a step whose loop goes
//! on, by rules that keep a person from being asked the same thing twice:
//!
//! - **AttractorTransition**: the attractor's kind changed *into trouble* —
//!   a limit cycle, divergence or a plateau. The early churn between
//!   `indeterminate` and a first classification, and recoveries (into a fixed
//!   point), are not news. Each trouble kind is told once per trajectory: a
//!   plateau that returns after a fresh start is the same story.
//! - **StrategyEscalation**: the strategy chosen next is an escalation — one
//!   that changes the task rather than the attempt ([`StrategyKind::is_escalation`]:
//!   a split into subtasks, or an architect's re-plan of the specification).
//! - **AmbiguityDetected**: the intent verifier reports gaps of the
//!   `ambiguity` category, or the trajectory diverges and the engine blames
//!   an ambiguous specification. Each contradiction is raised once: a point
//!   is reached only when a verification names one not raised before.
//!
//! What a point does is the priority hint's table ([`intervention_mode`]),
//! unless [`InterventionConfig`] overrides it for that point — say, to run
//! unattended (`{"strategy_escalation": "auto", "partial_result": "auto"}`).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::attractor::{AttractorKind, AttractorType, DivergenceCause};
use super::decide::Decision;
use super::model::{GapCategory, Trajectory};
use super::policy::PriorityHint;
pub use super::policy::{InterventionKind, InterventionMode, intervention_mode};
use super::strategy::StrategyKind;

/// Per-point overrides of the priority hint's table; a point left out keeps
/// the table's mode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InterventionConfig {
    pub attractor_transition: Option<InterventionMode>,
    pub strategy_escalation: Option<InterventionMode>,
    pub budget_extension: Option<InterventionMode>,
    pub ambiguity_detected: Option<InterventionMode>,
    pub partial_result: Option<InterventionMode>,
    pub human_escalation: Option<InterventionMode>,
}

impl InterventionConfig {
    /// Every point in `mode` (e.g. `auto` for a run nobody watches).
    pub fn all(mode: InterventionMode) -> Self {
        InterventionConfig {
            attractor_transition: Some(mode),
            strategy_escalation: Some(mode),
            budget_extension: Some(mode),
            ambiguity_detected: Some(mode),
            partial_result: Some(mode),
            human_escalation: Some(mode),
        }
    }

    /// The override for `point`, if any.
    pub fn override_for(&self, point: InterventionKind) -> Option<InterventionMode> {
        match point {
            InterventionKind::AttractorTransition => self.attractor_transition,
            InterventionKind::StrategyEscalation => self.strategy_escalation,
            InterventionKind::BudgetExtension => self.budget_extension,
            InterventionKind::AmbiguityDetected => self.ambiguity_detected,
            InterventionKind::PartialResult => self.partial_result,
            InterventionKind::HumanEscalation => self.human_escalation,
        }
    }

    /// What `point` does for a trajectory with priority `hint`.
    pub fn mode(&self, hint: Option<PriorityHint>, point: InterventionKind) -> InterventionMode {
        self.override_for(point).unwrap_or_else(|| intervention_mode(hint, point))
    }
}

/// What a trajectory has already told a person about (stored with it, so a
/// resumed trajectory does not tell it again).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Told {
    /// Trouble attractors already reported.
    pub attractors: BTreeSet<AttractorKind>,
    /// Contradictions already raised, normalized ([`contradiction_key`]).
    pub contradictions: BTreeSet<String>,
}

/// A point reached by a step whose loop goes on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "point", rename_all = "snake_case")]
pub enum PointReached {
    AttractorTransition { from: AttractorKind, to: AttractorKind, sequence: u32 },
    StrategyEscalation { proposed_strategy: StrategyKind, reason: String },
    AmbiguityDetected { contradictions: Vec<String>, sequence: u32 },
}

impl PointReached {
    pub fn kind(&self) -> InterventionKind {
        match self {
            PointReached::AttractorTransition { .. } => InterventionKind::AttractorTransition,
            PointReached::StrategyEscalation { .. } => InterventionKind::StrategyEscalation,
            PointReached::AmbiguityDetected { .. } => InterventionKind::AmbiguityDetected,
        }
    }
}

/// A limit cycle, divergence or a plateau: the states a person may want to
/// act on. Indeterminate is "too early to say"; a fixed point is progress.
pub fn is_trouble(kind: AttractorKind) -> bool {
    matches!(kind, AttractorKind::LimitCycle | AttractorKind::Divergent | AttractorKind::Plateau)
}

/// Whether a change from `from` to `to` is worth telling, given what was
/// told; marks it told when it is.
pub fn transition_worth_telling(from: AttractorKind, to: AttractorKind, told: &mut Told) -> bool {
    from != to && is_trouble(to) && told.attractors.insert(to)
}

/// The form a contradiction is compared in: lowercase, single spaces.
pub fn contradiction_key(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// The contradictions the latest step points at: the latest verification's
/// ambiguity gaps, and — when the engine blames an ambiguous specification
/// for a divergence — those of every verification in the current context.
pub fn contradictions_seen(trajectory: &Trajectory) -> Vec<String> {
    let ambiguous = |o: &super::model::Observation| -> Vec<String> {
        o.verification
            .iter()
            .flat_map(|v| v.gaps.iter())
            .filter(|g| g.category == GapCategory::Ambiguity)
            .map(|g| g.description.trim().to_string())
            .filter(|d| !d.is_empty())
            .collect()
    };
    let blamed = matches!(
        trajectory.attractor_state.classification,
        AttractorType::Divergent { probable_cause: DivergenceCause::SpecificationAmbiguity, .. }
    );
    let mut out: Vec<String> = Vec::new();
    let observations = if blamed { trajectory.context_observations() } else { &[][..] };
    for o in observations.iter().chain(trajectory.latest()) {
        for c in ambiguous(o) {
            if !out.iter().any(|x| contradiction_key(x) == contradiction_key(&c)) {
                out.push(c);
            }
        }
    }
    out
}

/// The contradictions of `seen` not raised before; marks them raised.
pub fn new_contradictions(seen: Vec<String>, told: &mut Told) -> Vec<String> {
    seen.into_iter().filter(|c| told.contradictions.insert(contradiction_key(c))).collect()
}

/// Why the engine reached for an escalation, in words.
pub fn escalation_reason(trajectory: &Trajectory, strategy: StrategyKind) -> String {
    let what = match strategy {
        StrategyKind::Decompose => "splitting the task into subtasks",
        StrategyKind::ArchitectReview => "an architect review of the specification",
        other => other.as_str(),
    };
    let why = match &trajectory.attractor_state.classification {
        AttractorType::Plateau { stall_duration, plateau_level } if *stall_duration >= 3 => format!(
            "the trajectory has stalled for {stall_duration} iterations at level {plateau_level:.2} and its {} {} used up",
            crate::counted(trajectory.total_fresh_starts, "fresh start"),
            if trajectory.total_fresh_starts == 1 { "is" } else { "are" }
        ),
        AttractorType::Plateau { plateau_level, .. } => {
            format!("the trajectory has stalled at level {plateau_level:.2}, too low for repairs to finish it")
        }
        AttractorType::LimitCycle { period, .. } => {
            format!("the trajectory is cycling through {period} states and the other escapes were tried")
        }
        AttractorType::Divergent { probable_cause: DivergenceCause::SpecificationAmbiguity, .. } => {
            "the trajectory is diverging, probably because the specification is ambiguous".to_string()
        }
        other => format!("chosen under a {} attractor", other.kind()),
    };
    format!("{what}: {why}")
}

/// The points a step reached, in the order a person should hear of them:
/// what happened (the transition), what is unclear (the ambiguity), what the
/// engine wants to do about it (the escalation). Nothing when the loop ends
/// or waits on another question (its end decides, not these).
pub fn points_after(decision: &Decision, trajectory: &Trajectory, told: &mut Told) -> Vec<PointReached> {
    let mut points = Vec::new();
    if !decision.loop_control.continues() {
        return points;
    }
    if let Some(t) = decision.transition
        && transition_worth_telling(t.from, t.to, told)
    {
        points.push(PointReached::AttractorTransition { from: t.from, to: t.to, sequence: decision.sequence });
    }
    let contradictions = new_contradictions(contradictions_seen(trajectory), told);
    if !contradictions.is_empty() {
        points.push(PointReached::AmbiguityDetected { contradictions, sequence: decision.sequence });
    }
    if let Some(next) = decision.next.as_ref().filter(|n| n.kind.is_escalation()) {
        points.push(PointReached::StrategyEscalation {
            proposed_strategy: next.kind,
            reason: escalation_reason(trajectory, next.kind),
        });
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{ConvergencePolicy, IntentGap, Observation, SpecificationEvolution, VerificationResult};
    use AttractorKind::*;

    #[test]
    fn a_transition_into_trouble_is_told_once_per_kind() {
        let mut told = Told::default();
        assert!(!transition_worth_telling(Indeterminate, FixedPoint, &mut told), "progress is no trouble");
        assert!(!transition_worth_telling(FixedPoint, Indeterminate, &mut told), "nor is not knowing yet");
        assert!(transition_worth_telling(Indeterminate, Plateau, &mut told));
        assert!(!transition_worth_telling(Plateau, Plateau, &mut told), "no change, no transition");
        // Back to indeterminate after a fresh start, then stalled again: not news.
        assert!(!transition_worth_telling(Indeterminate, Plateau, &mut told));
        assert!(!transition_worth_telling(FixedPoint, Plateau, &mut told));
        assert!(transition_worth_telling(Plateau, LimitCycle, &mut told), "a new kind of trouble is");
        assert!(transition_worth_telling(LimitCycle, Divergent, &mut told));
        assert_eq!(told.attractors, [LimitCycle, Divergent, Plateau].into_iter().collect());
    }

    #[test]
    fn only_strategies_that_change_the_task_are_escalations() {
        let escalations: Vec<StrategyKind> = StrategyKind::ALL.into_iter().filter(|s| s.is_escalation()).collect();
        assert_eq!(escalations, vec![StrategyKind::Decompose, StrategyKind::ArchitectReview]);
        assert!(escalations.iter().all(|s| s.is_exploration()));
    }

    #[test]
    fn an_override_replaces_the_table_for_its_point_only() {
        let c: InterventionConfig = serde_json::from_str(r#"{"strategy_escalation": "auto"}"#).unwrap();
        assert_eq!(c.mode(None, InterventionKind::StrategyEscalation), InterventionMode::Auto);
        assert_eq!(c.mode(None, InterventionKind::AmbiguityDetected), InterventionMode::Pause);
        assert_eq!(c.mode(Some(PriorityHint::Fast), InterventionKind::PartialResult), InterventionMode::Pause);
        let quiet = InterventionConfig::all(InterventionMode::Notify);
        assert_eq!(
            quiet.mode(Some(PriorityHint::Thorough), InterventionKind::HumanEscalation),
            InterventionMode::Notify
        );
        let err = serde_json::from_str::<InterventionConfig>(r#"{"strategy_escalaton": "auto"}"#).unwrap_err();
        assert!(err.to_string().contains("strategy_escalaton"), "{err}");
        let err = serde_json::from_str::<InterventionConfig>(r#"{"partial_result": "sometimes"}"#).unwrap_err();
        assert!(err.to_string().contains("sometimes"), "{err}");
    }

    fn verified(gaps: &[(&str, GapCategory)]) -> Observation {
        let mut o = Observation::new(StrategyKind::RetryWithFeedback, Default::default(), Default::default());
        o.verification = Some(VerificationResult {
            gaps: gaps.iter().map(|(d, c)| IntentGap { description: d.to_string(), category: *c }).collect(),
            ..Default::default()
        });
        o
    }

    fn trajectory(observations: Vec<Observation>) -> Trajectory {
        let mut t = Trajectory::new(
            "t",
            "t",
            SpecificationEvolution::default(),
            Default::default(),
            ConvergencePolicy::default(),
        );
        t.observations = observations;
        t
    }

    #[test]
    fn a_stall_is_told_once_then_its_escalation_and_nothing_once_the_loop_ends() {
        use crate::engine::{ConvergenceBudget, Engine, StrategyBandit};
        use crate::overseer::OverseerSignals;
        use crate::overseer::signals::TestResults;
        use rand::SeedableRng;

        let engine = Engine::default();
        let budget = ConvergenceBudget {
            max_tokens: 1 << 30,
            max_iterations: 6,
            max_wall_time_ms: 1 << 40,
            ..Default::default()
        };
        // No fresh starts: a stall escalates at once.
        let policy = ConvergencePolicy { max_fresh_starts: 0, ..Default::default() };
        let mut t = Trajectory::new("t", "t", SpecificationEvolution::default(), budget, policy);
        let mut bandit = StrategyBandit::default();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut next = engine.start(&mut t, &bandit, &mut rng).unwrap();
        let mut told = Told::default();
        let mut seen = Vec::new();
        for _ in 0..6 {
            let signals = OverseerSignals {
                test_results: Some(TestResults { passed: 2, failed: 8, total: 10, ..Default::default() }),
                ..Default::default()
            };
            let d = engine
                .decide(&mut t, &mut bandit, Observation::new(next.kind, Default::default(), signals), &mut rng)
                .unwrap();
            seen.push((d.attractor.kind(), d.next.as_ref().map(|n| n.kind), points_after(&d, &t, &mut told)));
            match d.next {
                Some(n) => next = n,
                None => break,
            }
        }
        let transitions: Vec<&PointReached> =
            seen.iter().flat_map(|(_, _, p)| p).filter(|p| p.kind() == InterventionKind::AttractorTransition).collect();
        assert_eq!(transitions.len(), 1, "{seen:?}");
        assert!(matches!(transitions[0], PointReached::AttractorTransition { to: Plateau, .. }));
        for (_, chosen, points) in &seen {
            let escalations: Vec<&PointReached> =
                points.iter().filter(|p| p.kind() == InterventionKind::StrategyEscalation).collect();
            match chosen {
                Some(s) if s.is_escalation() => {
                    assert!(
                        matches!(escalations[..], [PointReached::StrategyEscalation { proposed_strategy, .. }] if proposed_strategy == s)
                    )
                }
                _ => assert!(escalations.is_empty(), "{seen:?}"),
            }
            // The transition comes first: what happened before what to do about it.
            if points.len() > 1 {
                assert_eq!(points[0].kind(), InterventionKind::AttractorTransition);
            }
        }
        assert!(seen.iter().any(|(_, c, _)| c.is_some_and(|s| s.is_escalation())), "a low stall escalates: {seen:?}");
        let (_, last_next, last_points) = seen.last().unwrap();
        assert!(last_next.is_none() && last_points.is_empty(), "the budget ran out: nothing to raise");
    }

    #[test]
    fn each_contradiction_is_raised_once_however_it_is_written() {
        let mut told = Told::default();
        let t = trajectory(vec![verified(&[
            ("Is 0 a valid input?", GapCategory::Ambiguity),
            ("square(3) is wrong", GapCategory::Incorrect),
        ])]);
        assert_eq!(new_contradictions(contradictions_seen(&t), &mut told), vec!["Is 0 a valid input?"]);
        let t = trajectory(vec![verified(&[
            ("is 0  a valid INPUT?", GapCategory::Ambiguity),
            ("Negative n: error or square?", GapCategory::Ambiguity),
        ])]);
        assert_eq!(new_contradictions(contradictions_seen(&t), &mut told), vec!["Negative n: error or square?"]);
        assert!(new_contradictions(contradictions_seen(&t), &mut told).is_empty(), "nothing new the third time");
    }

    #[test]
    fn a_divergence_blamed_on_ambiguity_looks_back_over_the_context() {
        let earlier = verified(&[("Which rounding mode?", GapCategory::Ambiguity)]);
        let latest = verified(&[]);
        let mut t = trajectory(vec![earlier, latest]);
        assert!(contradictions_seen(&t).is_empty(), "the latest verification names none");
        t.attractor_state.classification =
            AttractorType::Divergent { divergence_rate: -0.1, probable_cause: DivergenceCause::SpecificationAmbiguity };
        assert_eq!(contradictions_seen(&t), vec!["Which rounding mode?"]);
    }
}
