//! Graceful failure: when a task is abandoned (or runs out of budget) the
//! person gets what was achieved and two or three concrete next moves, never
//! a bare "failed" (seed 003, R2's graceful-failure duty on `abandon`).
//!
//! The moves are chosen from the shape of the failure, most specific first:
//! checks that could not run, a loss that was still falling, an oscillation
//! between answers, the failing criteria themselves, a stall, the tools every
//! failing attempt used.

use serde::{Deserialize, Serialize};

use super::loss::Loss;

/// The record handed over when a trajectory ends without converging.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialResult {
    /// One paragraph: how far it got and why it stopped.
    pub summary: String,
    /// Criteria the best result satisfies.
    pub accomplished: Vec<String>,
    /// Criteria the best result still fails.
    pub remaining: Vec<String>,
    pub loss: Loss,
    pub grad_l: f64,
    /// Rounds after the first attempt.
    pub replans: u32,
    /// Two or three concrete actions that would make progress.
    pub next_moves: Vec<String>,
}

/// What the next-move suggestions are drawn from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NextMoveContext {
    /// Why the trajectory stopped ("the budget ran out", "trapped in a cycle"...).
    pub reason: String,
    /// The best convergence level reached, in [0, 1].
    pub best_level: f64,
    pub passing: Vec<String>,
    /// Failing criteria with a short piece of evidence each.
    pub failing: Vec<(String, String)>,
    /// Checks that failed for environmental reasons, with evidence.
    pub environmental: Vec<(String, String)>,
    /// The loss was still falling (or the trajectory converging) at the end.
    pub still_improving: bool,
    /// The trajectory was oscillating with this period.
    pub cycle_period: Option<u32>,
    /// The trajectory had stalled.
    pub stalled: bool,
    pub blocked_tools: Vec<String>,
    pub loss: Loss,
    pub grad_l: f64,
    pub replans: u32,
}

const MAX_MOVES: usize = 3;
const MIN_MOVES: usize = 2;
/// Evidence quoted in a move is cut to this many characters.
const EVIDENCE_CHARS: usize = 160;

fn short(text: &str) -> String {
    let line = text.trim().lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if line.chars().count() <= EVIDENCE_CHARS {
        line.to_string()
    } else {
        format!("{}…", line.chars().take(EVIDENCE_CHARS).collect::<String>())
    }
}

fn list(names: impl IntoIterator<Item = impl AsRef<str>>, at_most: usize) -> String {
    let names: Vec<String> = names.into_iter().map(|n| format!("`{}`", n.as_ref())).collect();
    if names.len() > at_most {
        format!("{} and {} more", names[..at_most].join(", "), names.len() - at_most)
    } else {
        names.join(", ")
    }
}

impl PartialResult {
    /// The record of a trajectory stopped before it could say more than why.
    pub fn summary_only(summary: impl Into<String>) -> PartialResult {
        PartialResult {
            summary: summary.into(),
            accomplished: Vec::new(),
            remaining: Vec::new(),
            loss: Default::default(),
            grad_l: 0.0,
            replans: 0,
            next_moves: Vec::new(),
        }
    }

    pub fn build(ctx: &NextMoveContext) -> PartialResult {
        let mut moves: Vec<String> = Vec::new();
        if !ctx.environmental.is_empty() {
            let (name, evidence) = &ctx.environmental[0];
            let evidence = short(evidence);
            moves.push(format!(
                "Make {} runnable: it failed for environmental reasons{}, so what it checks was never measured.",
                list(ctx.environmental.iter().map(|(n, _)| n), 3),
                if evidence.is_empty() { String::new() } else { format!(" (`{name}`: {evidence})") }
            ));
        }
        if ctx.still_improving {
            moves.push(format!(
                "Run it again with a larger budget: the result was still improving when it stopped \
                 (∇L = {:.3}, level {:.0}%).",
                ctx.grad_l,
                ctx.best_level * 100.0
            ));
        }
        if let Some(period) = ctx.cycle_period {
            moves.push(format!(
                "Settle the ambiguity the attempts oscillated between (a cycle of {period} states): add a hint or \
                 constraint that says which behaviour is wanted."
            ));
        }
        if !ctx.failing.is_empty() {
            let (name, evidence) = &ctx.failing[0];
            let evidence = short(evidence);
            moves.push(format!(
                "Start from the best result and fix {} first{}.",
                list(ctx.failing.iter().map(|(n, _)| n), 3),
                if evidence.is_empty() { String::new() } else { format!(" — `{name}` says: {evidence}") }
            ));
        }
        if ctx.stalled && moves.len() < MAX_MOVES {
            moves.push(format!(
                "Split the task into smaller tasks with their own checks: the whole stalled at {:.0}%.",
                ctx.best_level * 100.0
            ));
        }
        if !ctx.blocked_tools.is_empty() && moves.len() < MAX_MOVES {
            moves.push(format!(
                "Try an approach that does not rely on {}: the failing attempts all used them.",
                list(&ctx.blocked_tools, 4)
            ));
        }
        let fallbacks = [
            "Add examples or acceptance tests that pin down the expected behaviour, then run it again.",
            "Review the task description for requirements the checks expect but the text does not state.",
        ];
        for f in fallbacks {
            if moves.len() >= MIN_MOVES {
                break;
            }
            moves.push(f.to_string());
        }
        moves.truncate(MAX_MOVES);

        // A percentage next to counts is the counts' own share; the level
        // (a weighted mix of tests, build and checks) is shown as what it is.
        let (met, criteria) = (ctx.passing.len(), ctx.passing.len() + ctx.failing.len());
        let summary = format!(
            "Stopped: {}. The best result met {met} of {criteria} criteria ({}), convergence level {:.2}{}.",
            ctx.reason,
            percent_of(met, criteria),
            ctx.best_level,
            if ctx.environmental.is_empty() {
                String::new()
            } else {
                format!("; {} could not be measured", ctx.environmental.len())
            }
        );
        PartialResult {
            summary,
            accomplished: ctx.passing.clone(),
            remaining: ctx.failing.iter().map(|(n, _)| n.clone()).collect(),
            loss: ctx.loss,
            grad_l: ctx.grad_l,
            replans: ctx.replans,
            next_moves: moves,
        }
    }
}

/// `part` of `whole` as a whole percentage, from the counts ("8 of 11" is
/// 73%, never the weighted level's 84%); "–" of nothing.
pub fn percent_of(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "–".to_string();
    }
    // Integer arithmetic: 8 of 11 is 72.7…, shown 73.
    format!("{}%", (part * 200 + whole) / (whole * 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_result_always_has_two_or_three_next_moves() {
        let bare = PartialResult::build(&NextMoveContext { reason: "abandoned".into(), ..Default::default() });
        assert_eq!(bare.next_moves.len(), 2);

        let busy = PartialResult::build(&NextMoveContext {
            reason: "abandoned".into(),
            environmental: vec![("e2e".into(), "docker: not found".into())],
            still_improving: true,
            cycle_period: Some(2),
            failing: vec![("test:parse_empty".into(), "assertion failed".into())],
            stalled: true,
            blocked_tools: vec!["sed".into()],
            ..Default::default()
        });
        assert_eq!(busy.next_moves.len(), 3);
        assert!(busy.next_moves[0].contains("docker: not found"), "{:?}", busy.next_moves);
    }

    #[test]
    fn next_moves_name_the_failing_criteria_with_their_evidence() {
        let r = PartialResult::build(&NextMoveContext {
            reason: "the budget ran out".into(),
            best_level: 0.6,
            passing: vec!["build".into()],
            failing: vec![("test:a".into(), "left: 1\nright: 2".into()), ("test:b".into(), String::new())],
            ..Default::default()
        });
        assert!(r.next_moves[0].contains("`test:a`, `test:b`"), "{:?}", r.next_moves);
        assert!(r.next_moves[0].contains("right: 2"));
        assert_eq!(r.remaining, vec!["test:a".to_string(), "test:b".to_string()]);
        assert!(r.summary.contains("met 1 of 3 criteria (33%), convergence level 0.60"), "{}", r.summary);
    }

    #[test]
    fn a_percentage_is_the_share_of_its_counts() {
        assert_eq!(percent_of(8, 11), "73%");
        assert_eq!(percent_of(1, 3), "33%");
        assert_eq!(percent_of(2, 3), "67%");
        assert_eq!(percent_of(0, 0), "–");
        assert_eq!(percent_of(11, 11), "100%");
    }
}
