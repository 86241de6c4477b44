//! Optimizers: what moves the artifacts between epochs.
//!
//! An optimizer looks at one finished epoch (per-task losses and the current
//! artifact versions) and proposes at most one update — one artifact per
//! epoch keeps changes easy to attribute and to roll back (seed 004 §7).
//! `baseline` never proposes (it measures natural variance); `evolve`
//! perturbs one numeric field of one JSON artifact without any LLM.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::artifact::{ArtifactDef, ArtifactKind, Origin};
use crate::loss::LossBreakdown;

/// One task's result as an optimizer may see it. Held-out tasks never appear.
#[derive(Debug, Clone, Serialize)]
pub struct TaskEvidence {
    pub task: String,
    pub loss: f64,
    pub status: String,
    pub breakdown: Option<LossBreakdown>,
    pub error: Option<String>,
    /// The examples its harness got wrong (score below 1), worst first, a
    /// few: what was asked, expected and answered (GEPA's reflective dataset).
    pub failing: Vec<crate::task::command::Example>,
    /// How many examples the harness scored in all (0: it lists none).
    pub examples: usize,
    /// Every example it scored, in the harness's order: what screening
    /// compares a candidate with and draws worked examples from. Not part
    /// of what is recorded with a decision (`failing` is).
    #[serde(skip)]
    pub scored: Vec<crate::task::command::Example>,
}

/// An artifact an optimizer may change, at its current version.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub def: ArtifactDef,
    pub version: i64,
    pub content: String,
    /// The content of every version the artifact has had (measured, or
    /// being measured): a proposal equal to one of them would pay for runs
    /// that can only repeat what is known.
    pub seen: Vec<String>,
}

impl Candidate {
    /// Whether `doc` is the content of a version the artifact has had
    /// (compared as JSON values, so layout does not count).
    fn has_seen(&self, doc: &serde_json::Value) -> bool {
        self.seen.iter().any(|c| serde_json::from_str::<serde_json::Value>(c).is_ok_and(|v| v == *doc))
    }
}

/// What an optimizer is given after an epoch.
#[derive(Debug, Clone)]
pub struct Evidence {
    pub suite: String,
    pub epoch_num: i64,
    pub mean_loss: f64,
    pub learning_rate: f64,
    pub tasks: Vec<TaskEvidence>,
    pub candidates: Vec<Candidate>,
    /// Seed for this epoch's random choices; recorded with the update.
    pub seed: u64,
    /// Earlier applied proposals per artifact, oldest first.
    pub history: BTreeMap<String, Vec<PastProposal>>,
    /// Direction from the tree search for this call: an ideation proposal
    /// to follow and the analyst's hints about the artifact. Empty outside
    /// the tree search.
    pub guidance: Vec<String>,
}

/// A proposed new version of one artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub artifact: String,
    pub parent_version: i64,
    pub content: String,
    pub rationale: String,
    pub expected_loss_reduction: Option<f64>,
    pub confidence: Option<f64>,
    /// Optimizer-specific facts kept in the update event (the seed, the field…).
    pub details: BTreeMap<String, serde_json::Value>,
}

/// An earlier applied proposal for an artifact and what it did: the
/// optimizer's momentum, so it does not propose the same failed move twice.
#[derive(Debug, Clone, Serialize)]
pub struct PastProposal {
    pub epoch_num: i64,
    pub rationale: String,
    pub expected_loss_reduction: Option<f64>,
    /// Previous mean loss minus the next one; `None` until that epoch closed.
    pub observed_loss_reduction: Option<f64>,
    pub rolled_back: bool,
    /// Why a rejection rule dropped it (a repeat, an invalid setting, …),
    /// when one did: it never ran.
    pub rejection: Option<String>,
}

/// One proposal the optimizer considered, and why it lost if it did.
#[derive(Debug, Clone, PartialEq)]
pub struct Considered {
    pub artifact: String,
    pub parent_version: i64,
    /// The parsed proposal; `None` when the call or the parse failed.
    pub proposal: Option<Proposal>,
    /// Set when a rejection rule dropped it.
    pub rejection: Option<String>,
    /// How it compared with the current version on a screening minibatch,
    /// when it was screened.
    pub screening: Option<crate::loss::paired::PairedEvidence>,
}

/// What one optimizer step decided.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Step {
    /// The update to apply before the next epoch; `None` is a no-op epoch.
    pub winner: Option<Proposal>,
    /// Every proposal considered, the winner included.
    pub considered: Vec<Considered>,
    /// Why nothing was considered, when the optimizer chose not to ask.
    pub idle: Option<String>,
}

impl Step {
    /// A step that considered exactly the one proposal it returns.
    pub fn only(winner: Option<Proposal>) -> Step {
        let considered = winner
            .iter()
            .map(|p| Considered {
                artifact: p.artifact.clone(),
                parent_version: p.parent_version,
                proposal: Some(p.clone()),
                rejection: None,
                screening: None,
            })
            .collect();
        Step { winner, considered, idle: None }
    }

    /// Why this step changes nothing, in one line for the epoch's record,
    /// the CLI and the app: "textgrad: no usable proposal — 2× unusable
    /// reply: missing field `artifact`; 1× the model proposed no change".
    /// `None` when there is a winner.
    pub fn no_change_reason(&self, optimizer: &str) -> Option<String> {
        if self.winner.is_some() {
            return None;
        }
        if let Some(why) = &self.idle {
            return Some(format!("{optimizer}: {why}"));
        }
        if self.considered.is_empty() {
            return Some(match optimizer {
                "baseline" => "baseline: changes nothing by design".to_string(),
                _ => format!("{optimizer}: nothing to propose (no artifact it may change)"),
            });
        }
        // The reasons by how often they came up, most frequent first; the
        // first seen wins a tie, so the line is stable.
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for c in &self.considered {
            let reason = c.rejection.as_deref().unwrap_or("not chosen");
            match counts.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, n)) => *n += 1,
                None => counts.push((reason, 1)),
            }
        }
        counts.sort_by(|a, b| b.1.cmp(&a.1));
        let parts: Vec<String> = counts.iter().map(|(r, n)| format!("{n}× {}", first_line(r, 160))).collect();
        Some(format!("{optimizer}: no usable proposal — {}", parts.join("; ")))
    }
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct OptimizerError(pub String);

/// One optimizer step.
#[async_trait::async_trait]
pub trait Optimizer: Send + Sync {
    fn name(&self) -> &'static str;

    /// What to apply before the next epoch, with everything considered.
    async fn propose(&self, evidence: &Evidence) -> Result<Step, OptimizerError>;

    /// The same, with a way to measure candidates on a minibatch of the
    /// training tasks first; only the screening search uses it.
    async fn propose_screened(
        &self,
        evidence: &Evidence,
        _screening: &dyn super::screen::Screening,
    ) -> Result<Step, OptimizerError> {
        self.propose(evidence).await
    }
}

pub use crate::domain::OptimizerKind;

/// Builds the optimizer `kind` names; those that call a model get `llm`.
pub fn build(
    kind: OptimizerKind,
    llm: Option<crate::llm::LlmClient>,
) -> Result<Box<dyn Optimizer>, super::RunnerError> {
    Ok(match kind {
        OptimizerKind::Baseline => Box::new(Baseline),
        OptimizerKind::Evolve => Box::new(Evolve),
        OptimizerKind::Textgrad => {
            Box::new(super::textgrad::TextGrad::new(llm.ok_or(super::RunnerError::NeedsModel("textgrad"))?))
        }
        OptimizerKind::Screen => {
            Box::new(super::screen::Screen::new(llm.ok_or(super::RunnerError::NeedsModel("screen"))?))
        }
        // The tree search makes its children with its proposer; an epoch
        // left unfinished by an earlier run is closed without an update.
        OptimizerKind::Tree => Box::new(Baseline),
    })
}

/// What makes the tree search's children: textgrad with a model, else evolve.
pub fn tree_proposer(llm: Option<crate::llm::LlmClient>) -> Box<dyn Optimizer> {
    match llm {
        Some(client) => Box::new(super::textgrad::TextGrad::new(client)),
        None => Box::new(Evolve),
    }
}

pub struct Baseline;

#[async_trait::async_trait]
impl Optimizer for Baseline {
    fn name(&self) -> &'static str {
        "baseline"
    }

    async fn propose(&self, _: &Evidence) -> Result<Step, OptimizerError> {
        Ok(Step::default())
    }
}

/// Random local search over the tunable fields of JSON artifacts.
///
/// Each epoch it picks one tunable field of one JSON artifact and moves it by
/// `η · (max − min) · u` with `u` uniform in [−1, 1] (at least one unit for
/// integer fields), reflected off the bounds. Together with rollback on
/// regression this is a (1+1) hill climber whose step shrinks after every
/// failed move. The suite's own artifacts are preferred; built-ins are tuned
/// only when the suite declares none. A move that lands on a version the
/// artifact already had is drawn again (up to [`EVOLVE_DRAWS`] times): its
/// runs could only repeat a known measurement.
pub struct Evolve;

/// Draws of one evolve step before it gives up on finding a version the
/// artifact has not had.
pub const EVOLVE_DRAWS: usize = 16;

#[async_trait::async_trait]
impl Optimizer for Evolve {
    fn name(&self) -> &'static str {
        "evolve"
    }

    async fn propose(&self, ev: &Evidence) -> Result<Step, OptimizerError> {
        let tunable = |c: &&Candidate| c.def.kind == ArtifactKind::Json && !c.def.fields.is_empty();
        let own: Vec<&Candidate> =
            ev.candidates.iter().filter(tunable).filter(|c| matches!(c.def.origin, Origin::Suite(_))).collect();
        let pool = if own.is_empty() { ev.candidates.iter().filter(tunable).collect() } else { own };
        if pool.is_empty() {
            return Ok(Step::default());
        }
        let mut rng = ChaCha8Rng::seed_from_u64(ev.seed);
        let mut repeated: Option<&Candidate> = None;
        for _ in 0..EVOLVE_DRAWS {
            let cand = pool[rng.random_range(0..pool.len())];
            match self.perturb(cand, ev, &mut rng)? {
                Some((proposal, doc)) if !cand.has_seen(&doc) => return Ok(Step::only(Some(proposal))),
                Some(_) => repeated = Some(cand),
                // Nowhere to move (a field pinned between equal bounds).
                None => {}
            }
        }
        Ok(match repeated {
            Some(c) => Step {
                winner: None,
                idle: None,
                considered: vec![Considered {
                    artifact: c.def.name.clone(),
                    parent_version: c.version,
                    proposal: None,
                    rejection: Some(format!(
                        "each of {EVOLVE_DRAWS} moves it drew gives a version the artifact already had"
                    )),
                    screening: None,
                }],
            },
            None => Step::default(),
        })
    }
}

/// `old + step` kept within `[min, max]` by reflecting off the bound it
/// crosses: clamping would pile every long step onto the bound itself,
/// a value measured again and again.
fn reflect(old: f64, step: f64, min: f64, max: f64) -> f64 {
    let width = max - min;
    if width <= 0.0 || !width.is_finite() {
        return min;
    }
    // Unfold the walk onto a circle of twice the width, then fold it back.
    let t = (old + step - min).rem_euclid(2.0 * width);
    min + if t > width { 2.0 * width - t } else { t }
}

impl Evolve {
    /// One random move of one field of `cand`, and the document it gives.
    fn perturb(
        &self,
        cand: &Candidate,
        ev: &Evidence,
        rng: &mut ChaCha8Rng,
    ) -> Result<Option<(Proposal, serde_json::Value)>, OptimizerError> {
        let mut doc: serde_json::Value = serde_json::from_str(&cand.content).map_err(|e| {
            OptimizerError(format!("artifact `{}` v{} is not valid JSON: {e}", cand.def.name, cand.version))
        })?;
        let fields: Vec<(&String, &crate::artifact::FieldBounds)> = cand.def.fields.iter().collect();
        let (field, bounds) = fields[rng.random_range(0..fields.len())];
        let Some(old) = doc.get(field.as_str()).and_then(serde_json::Value::as_f64) else {
            return Err(OptimizerError(format!(
                "artifact `{}` v{} has no numeric field `{field}`",
                cand.def.name, cand.version
            )));
        };
        let lr = ev.learning_rate.clamp(0.0, 1.0);
        let u: f64 = rng.random_range(-1.0..=1.0);
        let mut step = lr * (bounds.max - bounds.min) * u;
        if bounds.integer {
            step = step.round();
            if step == 0.0 {
                step = if u < 0.0 { -1.0 } else { 1.0 };
            }
        }
        let mut new = reflect(old, step, bounds.min, bounds.max);
        if bounds.integer {
            new = new.round();
        }
        if new == old || step == 0.0 {
            return Ok(None);
        }
        doc[field.as_str()] = if bounds.integer { serde_json::json!(new as i64) } else { serde_json::json!(new) };
        let content = serde_json::to_string_pretty(&doc).map_err(|e| OptimizerError(e.to_string()))? + "\n";
        let mut details = BTreeMap::new();
        details.insert("optimizer".into(), "evolve".into());
        details.insert("seed".into(), ev.seed.into());
        details.insert("field".into(), field.clone().into());
        details.insert("old_value".into(), serde_json::json!(old));
        details.insert("new_value".into(), serde_json::json!(new));
        let proposal = Proposal {
            artifact: cand.def.name.clone(),
            parent_version: cand.version,
            content,
            // Six significant digits for a person (the content has them all).
            rationale: format!(
                "evolve: {field} {} → {} (η = {lr})",
                crate::domain::drawn(old),
                crate::domain::drawn(new)
            ),
            expected_loss_reduction: None,
            confidence: None,
            details,
        };
        Ok(Some((proposal, doc)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::FieldBounds;

    fn evidence(seed: u64, lr: f64) -> Evidence {
        let mut fields = BTreeMap::new();
        fields.insert("x".to_string(), FieldBounds { min: 0.0, max: 10.0, integer: false });
        fields.insert("n".to_string(), FieldBounds { min: 1.0, max: 5.0, integer: true });
        Evidence {
            suite: "s".into(),
            epoch_num: 1,
            mean_loss: 0.5,
            learning_rate: lr,
            tasks: vec![],
            seed,
            history: BTreeMap::new(),
            guidance: Vec::new(),
            candidates: vec![Candidate {
                def: ArtifactDef {
                    name: "p".into(),
                    kind: ArtifactKind::Json,
                    origin: Origin::Suite("s".into()),
                    description: String::new(),
                    default_content: String::new(),
                    fields,
                },
                version: 3,
                content: r#"{"x": 5.0, "n": 5, "other": "kept"}"#.into(),
                seen: vec![r#"{"x": 5.0, "n": 5, "other": "kept"}"#.into()],
            }],
        }
    }

    #[tokio::test]
    async fn evolve_is_replayable_from_its_seed() {
        let a = Evolve.propose(&evidence(42, 0.5)).await.unwrap().winner;
        let b = Evolve.propose(&evidence(42, 0.5)).await.unwrap().winner;
        assert_eq!(a, b);
        let differs = (0..20u64).any(|s| Evolve.propose_blocking(&evidence(s, 0.5)) != a);
        assert!(differs, "different seeds should give different moves");
    }

    #[tokio::test]
    async fn evolve_stays_in_bounds_and_keeps_other_fields() {
        for seed in 0..200 {
            let p = Evolve.propose(&evidence(seed, 1.0)).await.unwrap().winner.expect("a move");
            assert_eq!(p.parent_version, 3);
            let v: serde_json::Value = serde_json::from_str(&p.content).unwrap();
            let x = v["x"].as_f64().unwrap();
            let n = v["n"].as_f64().unwrap();
            assert!((0.0..=10.0).contains(&x));
            assert!((1.0..=5.0).contains(&n) && n.fract() == 0.0, "n = {n}");
            assert_eq!(v["other"], "kept");
            assert_ne!(p.content, evidence(seed, 1.0).candidates[0].content);
        }
    }

    #[tokio::test]
    async fn evolve_step_scales_with_the_learning_rate() {
        let max_move = |lr: f64| {
            (0..100u64)
                .filter_map(|s| Evolve.propose_blocking(&evidence(s, lr)))
                .filter(|p| p.details["field"] == "x")
                .map(|p| (p.details["new_value"].as_f64().unwrap() - 5.0).abs())
                .fold(0.0, f64::max)
        };
        assert!(max_move(0.05) <= 0.5 + 1e-9);
        assert!(max_move(0.5) > 1.0);
    }

    #[tokio::test]
    async fn evolve_tells_its_move_in_six_significant_digits_and_keeps_them_all_in_the_content() {
        let moves: Vec<Proposal> = (0..50u64)
            .filter_map(|s| Evolve.propose_blocking(&evidence(s, 0.5)))
            .filter(|p| p.details["field"] == "x")
            .collect();
        assert!(!moves.is_empty());
        for p in moves {
            let new = p.details["new_value"].as_f64().unwrap();
            let told = p.rationale.split(" → ").nth(1).and_then(|t| t.split(' ').next()).unwrap();
            assert!(
                told.trim_start_matches('-').replace('.', "").trim_start_matches('0').len() <= 6,
                "{}",
                p.rationale
            );
            assert!((told.parse::<f64>().unwrap() - new).abs() <= new.abs() * 1e-5, "{} against {new}", p.rationale);
            let v: serde_json::Value = serde_json::from_str(&p.content).unwrap();
            assert_eq!(v["x"].as_f64(), Some(new), "the content keeps every digit");
        }
    }

    #[tokio::test]
    async fn evolve_never_proposes_a_version_the_artifact_already_had() {
        // Every value of the integer field `n` but one has been measured
        // (1–4, with x as it is): each step that moves n must be drawn again.
        for seed in 0..100 {
            let mut ev = evidence(seed, 1.0);
            for n in 1..=4 {
                ev.candidates[0].seen.push(format!(r#"{{"x": 5.0, "n": {n}, "other": "kept"}}"#));
            }
            let Some(p) = Evolve.propose_blocking(&ev) else { continue };
            let v: serde_json::Value = serde_json::from_str(&p.content).unwrap();
            assert!(!ev.candidates[0].has_seen(&v), "seed {seed} proposed a measured version: {}", p.content);
        }
        // With nowhere new to go, it says so instead of re-measuring.
        let mut ev = evidence(1, 1.0);
        ev.candidates[0].def.fields.remove("x");
        ev.candidates[0].seen = (1..=5).map(|n| format!(r#"{{"x": 5.0, "n": {n}, "other": "kept"}}"#)).collect();
        let step = Evolve.propose(&ev).await.unwrap();
        assert_eq!(step.winner, None);
        let note = step.no_change_reason("evolve").unwrap();
        assert!(note.contains("gives a version the artifact already had"), "{note}");
    }

    #[test]
    fn a_step_past_a_bound_reflects_off_it_instead_of_stopping_on_it() {
        assert_eq!(reflect(8.0, 4.0, 0.0, 10.0), 8.0);
        assert_eq!(reflect(2.0, -5.0, 0.0, 10.0), 3.0);
        assert_eq!(reflect(5.0, 3.0, 0.0, 10.0), 8.0);
        assert_eq!(reflect(5.0, 25.0, 0.0, 10.0), 10.0);
        assert_eq!(reflect(1.0, 1.0, 1.0, 1.0), 1.0);
        // Long steps from the middle land all over the range, not on its ends.
        let ends =
            (0..100).filter(|i| [0.0, 10.0].contains(&reflect(5.0, 6.0 + f64::from(*i) * 0.03, 0.0, 10.0))).count();
        assert_eq!(ends, 0);
    }

    #[tokio::test]
    async fn baseline_never_proposes() {
        assert_eq!(Baseline.propose(&evidence(1, 1.0)).await.unwrap(), Step::default());
    }

    impl Evolve {
        fn propose_blocking(&self, ev: &Evidence) -> Option<Proposal> {
            futures::executor::block_on(self.propose(ev)).unwrap().winner
        }
    }
}
