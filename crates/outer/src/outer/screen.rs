//! `screen`: many different candidates, measured cheaply before one is
//! measured in full (GEPA's minibatch-then-full, with DSPy's few-shot draw).
//!
//! A small proposer writes mostly poor candidates, and one epoch per
//! candidate is too dear to find the good one. So each round asks the
//! proposer for several candidates by different [`Move`]s (and draws one with
//! worked examples, no model needed), runs each on a minibatch — a sample of
//! the training examples, or of the training tasks where a harness lists no
//! examples, up to half of it units the current version gets wrong — and
//! compares it example by example with the current version,
//! whose scores on the same examples the epoch just measured. The best
//! candidate that beats the current version on its minibatch is the epoch's
//! update: the next epoch measures it on everything, and the loop's usual
//! decision keeps it or rolls it back. Up to [`ROUNDS`] rounds run, each on a
//! fresh minibatch, until one candidate passes.
//!
//! A text measured before — on a minibatch or in full, in this run or an
//! earlier one — is never measured again: [`Candidate::seen`] holds them all.

use std::collections::{BTreeMap, BTreeSet};

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::moves::{self, MODEL_MOVES, Move};
use super::optimizer::{Candidate, Considered, Evidence, Optimizer, OptimizerError, Proposal, Step, TaskEvidence};
use super::textgrad::{self, TextGrad, same_words};
use crate::artifact::ArtifactKind;
use crate::llm::{LlmClient, LlmError};
use crate::loss::paired::PairedEvidence;

/// Candidates a round asks the model for (the worked-examples draw is one more).
pub const MODEL_CANDIDATES: usize = 4;
/// Rounds one step may take before it gives up for the epoch.
pub const ROUNDS: usize = 3;
/// Examples (or tasks) a candidate is screened on.
pub const MINIBATCH: usize = 8;

/// Why a screened candidate was not taken, as the proposals table shows it
/// (one wording, so an epoch's reasons group in its note).
pub const SCREENED_OUT: &str = "screened out: not better than the current version on its minibatch";
/// Why a candidate was not screened at all.
pub const MEASURED_BEFORE: &str =
    "its text was measured before (in this run or an earlier one): measuring it again could only repeat what is known";

/// Which examples a candidate is screened on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Minibatch {
    /// Task → the ids of its examples to run; an empty list runs the whole
    /// task (its harness lists no examples).
    pub tasks: BTreeMap<String, Vec<String>>,
}

/// The key of one measured unit: the same keys the loop's decisions pair on.
pub fn unit_key(task: &str, example: Option<&str>) -> String {
    match example {
        // The unit separator cannot occur in a task name.
        Some(id) => format!("{task}\u{1f}{id}"),
        None => task.to_string(),
    }
}

impl Minibatch {
    /// Draws `size` units from the `screenable` training tasks' evidence
    /// with `seed`: an example of a task that lists them, else the task.
    /// Up to half are units the current version gets wrong, the rest ones
    /// it gets right: a strong current version gets most units right, and a
    /// minibatch drawn blindly would hold nothing a candidate could fix,
    /// while one of failures alone would not show what a candidate breaks.
    /// (The winner is measured on the whole training set before it counts.)
    pub fn draw(tasks: &[TaskEvidence], screenable: &BTreeSet<String>, size: usize, seed: u64) -> Minibatch {
        // Each unit with whether the current version gets it wrong.
        let mut units: Vec<(&str, Option<&str>, bool)> = Vec::new();
        for t in tasks.iter().filter(|t| screenable.contains(&t.task)) {
            if t.scored.is_empty() {
                units.push((&t.task, None, t.loss > 0.0));
            }
            // An id on more than one line could not be passed to the harness.
            units.extend(
                t.scored
                    .iter()
                    .filter(|e| !e.id.contains('\n'))
                    .map(|e| (t.task.as_str(), Some(e.id.as_str()), e.score < 1.0)),
            );
        }
        units.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        let wrong = units.iter().filter(|u| u.2).count().min(size / 2);
        let right = units.iter().filter(|u| !u.2).count().min(size - wrong);
        // Failures beyond half fill what right units cannot.
        let wrong = (size - right).min(units.iter().filter(|u| u.2).count());
        let chosen = units.iter().filter(|u| u.2).take(wrong).chain(units.iter().filter(|u| !u.2).take(right));
        let mut batch = Minibatch::default();
        for (task, id, _) in chosen {
            let ids = batch.tasks.entry(task.to_string()).or_default();
            ids.extend(id.map(str::to_string));
        }
        batch
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// How many units it holds.
    pub fn units(&self) -> usize {
        self.tasks.values().map(|ids| ids.len().max(1)).sum()
    }

    /// The evidence as the proposer sees it for this minibatch (GEPA's
    /// reflective dataset): every task's line, and under it the failing
    /// examples of this minibatch only — so each round reasons from
    /// different failures, and asks a different question.
    pub fn reflective(&self, ev: &Evidence) -> Evidence {
        let mut ev = ev.clone();
        for t in &mut ev.tasks {
            let ids = self.tasks.get(&t.task);
            let mut wrong: Vec<_> = t
                .scored
                .iter()
                .filter(|e| e.score < 1.0 && ids.is_some_and(|ids| ids.contains(&e.id)))
                .cloned()
                .collect();
            wrong.sort_by(|a, b| a.score.total_cmp(&b.score));
            wrong.truncate(super::close::EXAMPLES_SHOWN);
            t.failing = wrong;
        }
        ev
    }

    /// The current version's losses on these units, from the epoch's evidence.
    pub fn losses_in(&self, tasks: &[TaskEvidence]) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for t in tasks {
            let Some(ids) = self.tasks.get(&t.task) else {
                continue;
            };
            if ids.is_empty() {
                out.insert(unit_key(&t.task, None), t.loss);
            }
            for e in t.scored.iter().filter(|e| ids.contains(&e.id)) {
                out.insert(unit_key(&t.task, Some(&e.id)), 1.0 - e.score);
            }
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ScreenError {
    #[error("stopped while screening candidates")]
    Cancelled,
    #[error("{0}")]
    Failed(String),
}

/// What measures a candidate on a minibatch: the suite runner, which runs
/// the tasks with the candidate in place of the current version.
#[async_trait::async_trait]
pub trait Screening: Send + Sync {
    /// The training tasks a candidate can be measured on alone.
    fn screenable(&self) -> BTreeSet<String>;

    /// Runs `batch` with `artifact` set to `content`: the loss of every
    /// unit measured, keyed by [`unit_key`].
    async fn measure(
        &self,
        artifact: &str,
        content: &str,
        batch: &Minibatch,
    ) -> Result<BTreeMap<String, f64>, ScreenError>;
}

/// The screening search's optimizer step.
pub struct Screen {
    proposer: TextGrad,
}

/// What a round screens against: the minibatch, how to run it, and the
/// current version's losses on it.
struct Against<'a> {
    screening: &'a dyn Screening,
    batch: &'a Minibatch,
    now: &'a BTreeMap<String, f64>,
}

/// One round's candidates, screened.
struct Round {
    considered: Vec<Considered>,
    /// The index in `considered` of the best candidate that passed.
    best: Option<usize>,
    /// Model calls that found no usable model.
    unavailable: Vec<LlmError>,
    model_calls: usize,
}

impl Screen {
    pub fn new(client: LlmClient) -> Self {
        Screen { proposer: TextGrad::new(client) }
    }

    /// The rounds: each a fresh minibatch and fresh moves, until one
    /// candidate beats the current version on its minibatch.
    async fn search(&self, ev: &Evidence, screening: Option<&dyn Screening>) -> Result<Step, OptimizerError> {
        let screenable = screening.map(|s| s.screenable()).unwrap_or_default();
        // Every text this step has measured or will not measure again.
        let mut measured: BTreeSet<String> =
            ev.candidates.iter().flat_map(|c| c.seen.iter().map(|s| same_words(s))).collect();
        let mut considered = Vec::new();
        let mut unavailable = Vec::new();
        let mut model_calls = 0;
        for round in 0..ROUNDS {
            let seed = super::epoch_seed(ev.seed, i64::try_from(round).unwrap_or(0));
            let batch = Minibatch::draw(&ev.tasks, &screenable, MINIBATCH, seed);
            let screening = screening.filter(|_| !batch.is_empty());
            // The current version's losses on the minibatch: the epoch just measured them.
            let now = batch.losses_in(&ev.tasks);
            // Nothing can beat a version that gets every unit right.
            if screening.is_some() && now.values().all(|l| *l <= 0.0) {
                continue;
            }
            let round_ev = if screening.is_some() { batch.reflective(ev) } else { ev.clone() };
            let against = screening.map(|s| Against { screening: s, batch: &batch, now: &now });
            let r = self.round(&round_ev, round, seed, against, &mut measured).await?;
            let offset = considered.len();
            considered.extend(r.considered);
            unavailable.extend(r.unavailable);
            model_calls += r.model_calls;
            if let Some(best) = r.best {
                let winner = considered[offset + best].proposal.clone();
                return Ok(Step { winner, considered, idle: None });
            }
            // Without a minibatch nothing can pass: one round, chosen below.
            if screening.is_none() {
                break;
            }
        }
        if model_calls > 0 && unavailable.len() == model_calls && considered.iter().all(|c| c.proposal.is_none()) {
            let last = unavailable.last().map(ToString::to_string).unwrap_or_default();
            return Err(OptimizerError(format!(
                "screen could not use the model for any of its {}: {last}\n  hint: the epoch's runs are kept; \
                 once the model server answers again, `attractor run` on the same suite resumes the epoch",
                crate::counted(model_calls, "proposal")
            )));
        }
        // No minibatch to screen on: the proposer's own estimate decides, as textgrad's does.
        if screening.is_none() || screenable.is_empty() {
            let winner = textgrad::best_by_score(&considered);
            return Ok(Step { winner, considered, idle: None });
        }
        let idle = (considered.is_empty() && !ev.candidates.is_empty()).then(|| {
            format!("the current version got every example of its {ROUNDS} minibatches right; nothing to improve on")
        });
        Ok(Step { winner: None, considered, idle })
    }

    /// One round: the candidates by this round's moves, each screened
    /// against the current version on `batch`.
    async fn round(
        &self,
        ev: &Evidence,
        round: usize,
        seed: u64,
        against: Option<Against<'_>>,
        measured: &mut BTreeSet<String>,
    ) -> Result<Round, OptimizerError> {
        let mut out = Round { considered: Vec::new(), best: None, unavailable: Vec::new(), model_calls: 0 };
        let mut drafts: Vec<(Move, Considered)> = Vec::new();
        let offset = usize::try_from(ev.seed % MODEL_MOVES.len() as u64).unwrap_or(0);
        for slot in 0..MODEL_CANDIDATES {
            let k = round * MODEL_CANDIDATES + slot;
            let Some(cand) = ev.candidates.get(k % ev.candidates.len().max(1)) else {
                break;
            };
            // A settings document has one sensible move: a rewrite within bounds.
            let mv = if cand.def.kind == ArtifactKind::Json {
                Move::Rewrite
            } else {
                MODEL_MOVES[(offset + k) % MODEL_MOVES.len()]
            };
            let (c, error) = self.proposer.consider(ev, cand, mv.instruction()).await;
            out.model_calls += 1;
            out.unavailable.extend(error);
            drafts.push((mv, c));
        }
        if let Some(cand) = ev.candidates.iter().find(|c| c.def.kind == ArtifactKind::Text)
            && let Some(c) = worked_examples(ev, cand, seed)
        {
            drafts.push((Move::Examples, c));
        }
        let mut best_gain = 0.0;
        for (mv, mut c) in drafts {
            if let Some(p) = c.proposal.as_mut() {
                p.details.insert("optimizer".into(), serde_json::json!("screen"));
                p.details.insert("move".into(), serde_json::json!(mv.name()));
            }
            if c.rejection.is_none()
                && let Some(p) = c.proposal.as_mut()
            {
                let text = same_words(&p.content);
                if !measured.insert(text.clone()) {
                    c.rejection = Some(MEASURED_BEFORE.to_string());
                } else if let Some(why) = unfit(&text, &ev.tasks) {
                    c.rejection = Some(why);
                } else if let Some(Against { screening, batch, now }) = &against {
                    let after = screening
                        .measure(&p.artifact, &p.content, batch)
                        .await
                        .map_err(|e| OptimizerError(e.to_string()))?;
                    let gains: Vec<f64> = now.iter().filter_map(|(k, b)| after.get(k).map(|a| b - a)).collect();
                    let evidence = PairedEvidence::of(&gains);
                    let gain = evidence.as_ref().map_or(0.0, |e| e.mean_gain);
                    p.details.insert("screened_on".into(), serde_json::json!(gains.len()));
                    p.details.insert("round".into(), serde_json::json!(round + 1));
                    c.screening = evidence;
                    if gain > best_gain {
                        best_gain = gain;
                        out.best = Some(out.considered.len());
                    } else if gain <= 0.0 {
                        c.rejection = Some(SCREENED_OUT.to_string());
                    }
                }
            }
            out.considered.push(c);
        }
        Ok(out)
    }
}

/// The worked-examples candidate for `cand`, when the evidence has labelled examples.
pub(super) fn worked_examples(ev: &Evidence, cand: &Candidate, seed: u64) -> Option<Considered> {
    let (content, ids) = moves::with_worked_examples(&cand.content, &ev.tasks, seed)?;
    Some(Considered {
        artifact: cand.def.name.clone(),
        parent_version: cand.version,
        proposal: Some(Proposal {
            artifact: cand.def.name.clone(),
            parent_version: cand.version,
            content,
            rationale: format!("{} labelled training examples appended ({})", ids.len(), ids.join(", ")),
            expected_loss_reduction: None,
            confidence: None,
            details: BTreeMap::new(),
        }),
        rejection: None,
        screening: None,
    })
}

/// Why a small proposer's reply is not worth a minibatch: it repeats
/// itself (a reply that looped until its budget), or it is a training
/// example's input copied out of the evidence. `text` is whitespace-normalised.
pub fn unfit(text: &str, tasks: &[TaskEvidence]) -> Option<String> {
    let tokens: Vec<&str> = text.split(' ').filter(|w| !w.is_empty()).collect();
    if tokens.len() >= 12 {
        // A reply that looped says the same few phrases over and over: most
        // of its three-word phrases are repeats. A prompt that repeats a
        // pattern on purpose ("If the message is about …" per label) still
        // says something new in most of its phrases.
        let grams: Vec<&[&str]> = tokens.windows(3).collect();
        let distinct: std::collections::BTreeSet<&[&str]> = grams.iter().copied().collect();
        if distinct.len() * 2 < grams.len() {
            return Some(format!(
                "the reply repeats itself ({} different three-word phrases in {}): a model that looped",
                distinct.len(),
                grams.len()
            ));
        }
    }
    let copied = tasks
        .iter()
        .flat_map(|t| &t.scored)
        .filter_map(|e| e.input.as_deref())
        .any(|input| same_words(input).eq_ignore_ascii_case(text));
    copied.then(|| "the reply is a training example's input, not a prompt".to_string())
}

#[async_trait::async_trait]
impl Optimizer for Screen {
    fn name(&self) -> &'static str {
        "screen"
    }

    /// Without a runner to screen on (the tree search's children), one
    /// round's candidates, chosen by the proposer's own estimate.
    async fn propose(&self, ev: &Evidence) -> Result<Step, OptimizerError> {
        self.search(ev, None).await
    }

    async fn propose_screened(&self, ev: &Evidence, screening: &dyn Screening) -> Result<Step, OptimizerError> {
        self.search(ev, Some(screening)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::command::Example;

    fn task(name: &str, ids: &[(&str, f64)]) -> TaskEvidence {
        let scored: Vec<Example> = ids
            .iter()
            .map(|(id, score)| Example {
                id: (*id).into(),
                input: None,
                expected: None,
                output: None,
                score: *score,
                feedback: None,
            })
            .collect();
        TaskEvidence {
            task: name.into(),
            loss: 0.5,
            status: "complete".into(),
            breakdown: None,
            error: None,
            failing: Vec::new(),
            examples: scored.len(),
            scored,
        }
    }

    #[test]
    fn looping_replies_and_copied_inputs_are_not_screened() {
        let mut t = task("a", &[("1", 0.0)]);
        t.scored[0].input = Some("Two accounts were created,   can you merge them?".into());
        let tasks = [t];
        let looped = "Billing, bug, account, feature, feature, feature, feature, feature, feature, feature, feature, feature, feature, feature";
        assert!(unfit(&same_words(looped), &tasks).unwrap().contains("repeats itself"));
        let copied = unfit("two accounts were created, can you merge them?", &tasks).unwrap();
        assert!(copied.contains("training example's input"), "{copied}");
        let sentence = "The model answers with one label: billing, bug, account or feature. ".repeat(4);
        assert!(unfit(&same_words(&sentence), &tasks).is_some(), "a sentence said four times");
        let fine = "If the message is about money, say billing. If the message is about a crash, say bug. \
                    If the message is about sign-in, say account. If the message is about something new, say feature.";
        assert_eq!(unfit(&same_words(fine), &tasks), None, "a pattern repeated on purpose");
    }

    #[test]
    fn a_minibatch_samples_examples_of_screenable_tasks_and_knows_their_current_losses() {
        let tasks = vec![task("a", &[("1", 1.0), ("2", 0.0), ("3", 1.0)]), task("b", &[]), task("c", &[("9", 0.0)])];
        let screenable: BTreeSet<String> = ["a", "b"].map(String::from).into();
        let all = Minibatch::draw(&tasks, &screenable, 100, 1);
        assert_eq!(all.units(), 4, "three examples of a, the whole of b; c cannot be screened: {all:?}");
        assert_eq!(all.tasks["b"], Vec::<String>::new());
        let losses = all.losses_in(&tasks);
        assert_eq!(losses[&unit_key("a", Some("2"))], 1.0);
        assert_eq!(losses[&unit_key("a", Some("1"))], 0.0);
        assert_eq!(losses["b"], 0.5);
        let two = Minibatch::draw(&tasks, &screenable, 2, 1);
        assert_eq!(two.units(), 2);
        assert_eq!(Minibatch::draw(&tasks, &screenable, 2, 1), two, "a seed replays its draw");
        let draws: BTreeSet<String> =
            (0..20).map(|s| format!("{:?}", Minibatch::draw(&tasks, &screenable, 2, s))).collect();
        assert!(draws.len() > 1, "different seeds draw different minibatches");
        assert!(Minibatch::draw(&tasks, &BTreeSet::new(), 8, 1).is_empty());
    }

    #[test]
    fn a_minibatch_holds_up_to_half_failures_and_fills_the_rest_with_successes() {
        // Ten examples, two of them wrong under the current version.
        let scores: Vec<(String, f64)> =
            (0..10).map(|i| (i.to_string(), if i == 3 || i == 7 { 0.0 } else { 1.0 })).collect();
        let refs: Vec<(&str, f64)> = scores.iter().map(|(id, s)| (id.as_str(), *s)).collect();
        let tasks = vec![task("a", &refs)];
        let screenable: BTreeSet<String> = ["a".to_string()].into();
        for seed in 0..20 {
            let batch = Minibatch::draw(&tasks, &screenable, 4, seed);
            let ids = &batch.tasks["a"];
            assert_eq!(ids.len(), 4);
            // Both failures, whatever the draw: a blind draw of 4 of 10 holds
            // neither in a third of draws.
            assert!(ids.contains(&"3".to_string()) && ids.contains(&"7".to_string()), "seed {seed}: {ids:?}");
        }
        // More failures than half: half of them, and successes for the rest.
        let all_but_one: Vec<(&str, f64)> =
            refs.iter().map(|(id, _)| (*id, if *id == "0" { 1.0 } else { 0.0 })).collect();
        let batch = Minibatch::draw(&[task("a", &all_but_one)], &screenable, 4, 1);
        let ids = &batch.tasks["a"];
        assert_eq!(ids.len(), 4);
        assert!(ids.contains(&"0".to_string()), "the one success is there: {ids:?}");
    }
}
