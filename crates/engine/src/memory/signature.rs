//! Task signatures and how alike two tasks are.
//!
//! A task's signature is the set of its text's content words: lower-cased
//! runs of letters, digits and `_`, at least three characters long, minus
//! common English function words. Two tasks are as alike as the Jaccard
//! index of their signatures — shared words over words in either — which is
//! 1 for the same text, 0 for texts with no content word in common, and
//! indifferent to word order, repetition and letter case. When the caller
//! knows the task's category, sharing it counts too (see [`similarity`]).
//!
//! Simple on purpose: it needs no model, is the same on every machine, and
//! a person can see why two tasks were called similar.

use std::collections::BTreeSet;

/// Words too common to say anything about a task.
const STOP_WORDS: &[&str] = &[
    "about", "after", "all", "also", "and", "any", "are", "as", "but", "can", "does", "each", "every", "for", "from",
    "has", "have", "how", "into", "its", "it's", "may", "more", "most", "must", "not", "now", "one", "only", "other",
    "our", "out", "over", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "through", "under", "use", "using", "was", "way", "were", "what", "when",
    "where", "which", "while", "who", "will", "with", "would", "you", "your",
];

/// Shortest word kept.
const MIN_WORD: usize = 3;

/// Weight of the text's likeness in [`similarity`] when a category is compared too.
pub const TEXT_WEIGHT: f64 = 0.75;

/// The sorted, distinct content words of `text`.
pub fn signature(text: &str) -> Vec<String> {
    let words: BTreeSet<String> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= MIN_WORD && !STOP_WORDS.contains(&w.as_str()))
        .collect();
    words.into_iter().collect()
}

/// A signature as stored: its words separated by spaces.
pub fn to_text(signature: &[String]) -> String {
    signature.join(" ")
}

/// A stored signature read back.
pub fn from_text(text: &str) -> Vec<String> {
    let words: BTreeSet<String> = text.split_whitespace().map(str::to_string).collect();
    words.into_iter().collect()
}

/// |a ∩ b| / |a ∪ b| over two signatures (0 when both are empty).
pub fn jaccard(a: &[String], b: &[String]) -> f64 {
    let (a, b): (BTreeSet<&String>, BTreeSet<&String>) = (a.iter().collect(), b.iter().collect());
    let union = a.union(&b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

/// How alike a past task is to the one asked about, in [0, 1]: the Jaccard
/// index of their signatures, or — when the question names a category —
/// `0.75 · jaccard + 0.25 · [same category]`.
pub fn similarity(query: &[String], query_category: Option<&str>, other: &[String], other_category: &str) -> f64 {
    let text = jaccard(query, other);
    match query_category {
        Some(c) => TEXT_WEIGHT * text + (1.0 - TEXT_WEIGHT) * if c == other_category { 1.0 } else { 0.0 },
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_keeps_the_content_words_once_in_order() {
        let s = signature("Implement square(n) in squares.py so that it returns n squared; the tests SAY so.");
        assert_eq!(s, ["implement", "returns", "say", "square", "squared", "squares", "tests"]);
        assert!(signature("a an of to").is_empty());
        assert_eq!(from_text(&to_text(&s)), s);
    }

    #[test]
    fn jaccard_is_one_for_the_same_task_and_zero_for_unrelated_ones() {
        let a = signature("Parse decimal integers with overflow checks");
        assert_eq!(jaccard(&a, &a), 1.0);
        assert_eq!(jaccard(&a, &signature("Render a bar chart of losses")), 0.0);
        // parse, integers shared; decimal, overflow, checks, hexadecimal: 2 of 6.
        let b = signature("Parse hexadecimal integers");
        assert!((jaccard(&a, &b) - 2.0 / 6.0).abs() < 1e-12, "{}", jaccard(&a, &b));
        assert_eq!(jaccard(&[], &[]), 0.0);
    }

    #[test]
    fn a_shared_category_adds_a_quarter_when_the_question_names_one() {
        let a = signature("parse integers");
        assert_eq!(similarity(&a, None, &a, "x"), 1.0);
        assert_eq!(similarity(&a, Some("x"), &a, "x"), 1.0);
        assert_eq!(similarity(&a, Some("y"), &a, "x"), 0.75);
        assert_eq!(similarity(&a, Some("x"), &signature("draw charts"), "x"), 0.25);
    }
}
