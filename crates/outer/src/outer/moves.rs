//! Moves: the named ways the screening search changes a prompt.
//!
//! A small proposer asked the same question twice writes the same answer
//! twice; asked to make *different kinds* of change it writes candidates that
//! differ, and screening tells the good ones from the poor ones cheaply. The
//! model moves are instructions added to textgrad's call; `Examples` needs no
//! model at all: it appends labelled training examples drawn at random (the
//! draw is the search, as DSPy's few-shot selection does it), and screening
//! decides whether this model is helped or confused by them.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::optimizer::TaskEvidence;
use crate::task::command::Example;

/// One kind of change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// A free rewrite that avoids the failures shown.
    Rewrite,
    /// The same meaning laid out as task, rules, answer format.
    Restructure,
    /// Fewer, plainer words.
    Shorten,
    /// A few words of definition for each label or term the failures confuse.
    Define,
    /// The same content, the most important and most confused parts first.
    Reorder,
    /// Labelled training examples appended (no model call).
    Examples,
}

/// The moves a model makes, in the order the rounds rotate through them.
pub const MODEL_MOVES: [Move; 5] = [Move::Define, Move::Rewrite, Move::Restructure, Move::Reorder, Move::Shorten];

/// Worked examples one `Examples` candidate carries: enough to show the
/// format and a few labels, few enough for a small model's context.
pub const WORKED_EXAMPLES: usize = 3;

impl Move {
    pub fn name(self) -> &'static str {
        match self {
            Move::Rewrite => "rewrite",
            Move::Restructure => "restructure",
            Move::Shorten => "shorten",
            Move::Define => "define",
            Move::Reorder => "reorder",
            Move::Examples => "examples",
        }
    }

    /// What the proposer is asked to do; `None` for a move made without a model.
    pub fn instruction(self) -> Option<&'static str> {
        Some(match self {
            Move::Rewrite => {
                "rewrite: write a new version in your own words that would avoid the failures shown; keep what works."
            }
            Move::Restructure => {
                "restructure: keep the meaning, but lay it out clearly: the task in one sentence, then the rules or \
                 categories as a short list, then exactly how to answer."
            }
            Move::Shorten => {
                "shorten: make it shorter and plainer; keep only what is needed to do the task right and drop vague or \
                 repeated words."
            }
            Move::Define => {
                "define: for each label, category or term that the failing examples confuse, add a short definition \
                 (a few words: what belongs to it and what does not); keep the rest as it is."
            }
            Move::Reorder => {
                "reorder: keep the content but change its order: the most important instruction first, and the labels \
                 or rules the failing examples confuse before the others."
            }
            Move::Examples => return None,
        })
    }
}

/// `content` with [`WORKED_EXAMPLES`] training examples appended, each as
/// the input and the answer expected; drawn with `seed`, one per expected
/// answer first so the examples cover different labels. `None` when fewer
/// than two examples have both an input and an expected answer.
pub fn with_worked_examples(content: &str, tasks: &[TaskEvidence], seed: u64) -> Option<(String, Vec<String>)> {
    let mut pool: Vec<&Example> =
        tasks.iter().flat_map(|t| &t.scored).filter(|e| e.input.is_some() && e.expected.is_some()).collect();
    if pool.len() < 2 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    pool.shuffle(&mut rng);
    // Distinct expected answers first, then whatever is left.
    let mut chosen: Vec<&Example> = Vec::new();
    for e in &pool {
        if chosen.len() < WORKED_EXAMPLES && !chosen.iter().any(|c| c.expected == e.expected) {
            chosen.push(e);
        }
    }
    for e in &pool {
        if chosen.len() < WORKED_EXAMPLES && !chosen.iter().any(|c| c.id == e.id) {
            chosen.push(e);
        }
    }
    let mut text = content.trim_end().to_string();
    text.push_str("\n\nExamples:\n");
    for e in &chosen {
        let input = super::textgrad::one_line(e.input.as_deref().unwrap_or_default(), 300);
        let expected = super::textgrad::one_line(e.expected.as_deref().unwrap_or_default(), 100);
        text.push_str(&format!("- \"{input}\" → {expected}\n"));
    }
    Some((text, chosen.iter().map(|e| e.id.clone()).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(id: &str, input: &str, expected: &str) -> Example {
        Example {
            id: id.into(),
            input: Some(input.into()),
            expected: Some(expected.into()),
            output: None,
            score: 1.0,
            feedback: None,
        }
    }

    fn task(examples: Vec<Example>) -> TaskEvidence {
        TaskEvidence {
            task: "t".into(),
            loss: 0.0,
            status: "complete".into(),
            breakdown: None,
            error: None,
            failing: Vec::new(),
            examples: examples.len(),
            scored: examples,
        }
    }

    #[test]
    fn worked_examples_cover_different_answers_and_replay_from_the_seed() {
        let t = task(vec![
            example("1", "I was charged twice", "billing"),
            example("2", "refund please", "billing"),
            example("3", "the button crashes", "bug"),
            example("4", "change my email", "account"),
        ]);
        let (text, ids) = with_worked_examples("Label the message.", std::slice::from_ref(&t), 7).unwrap();
        assert!(text.starts_with("Label the message.\n\nExamples:\n"), "{text}");
        assert_eq!(ids.len(), WORKED_EXAMPLES);
        let labels: std::collections::BTreeSet<&str> = text.lines().filter_map(|l| l.split(" → ").nth(1)).collect();
        assert_eq!(labels.len(), 3, "three different answers: {text}");
        assert_eq!(with_worked_examples("Label the message.", std::slice::from_ref(&t), 7).unwrap().1, ids);
    }

    #[test]
    fn no_worked_examples_without_labelled_inputs() {
        let mut e = example("1", "x", "y");
        e.expected = None;
        assert_eq!(with_worked_examples("p", &[task(vec![e, example("2", "a", "b")])], 1), None);
    }
}
