//! The auditor's check on the solver (seed 003, R6): thrashing is
//! `break_symmetry` again and again while the distance to the intent does
//! not fall — a sign that the loss landscape is degenerate for this task and
//! a person should look. Read-only: it reports, it never steers.

pub use crate::domain::ThrashingAlert;

use super::solver::{Directive, RoundRecord};

/// Thrashing when the last `repeats` rounds (at least 2) all broke symmetry
/// and `D` is no lower than when they began.
pub fn detect_thrashing(history: &[RoundRecord], repeats: u32) -> Option<ThrashingAlert> {
    let repeats = repeats.max(2) as usize;
    let run = history.iter().rev().take_while(|r| r.directive == Directive::BreakSymmetry).count();
    if run < repeats {
        return None;
    }
    let tail = &history[history.len() - run..];
    let (from, to) = (tail[0].loss.d, tail[run - 1].loss.d);
    (to >= from).then(|| ThrashingAlert {
        repeats: run as u32,
        distance_from: from,
        distance_to: to,
        message: format!(
            "{run} break_symmetry directives in a row without the distance falling (D {from:.2} → {to:.2}): \
             new approaches are not helping; the task may need a person."
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ggs::Loss;

    fn round(d: f64, directive: Directive) -> RoundRecord {
        RoundRecord { round: 0, loss: Loss { d, ..Default::default() }, grad_l: 0.0, directive }
    }

    #[test]
    fn repeated_break_symmetry_without_progress_is_thrashing() {
        let h = vec![
            round(0.9, Directive::Refine),
            round(0.7, Directive::BreakSymmetry),
            round(0.8, Directive::BreakSymmetry),
            round(0.7, Directive::BreakSymmetry),
        ];
        let alert = detect_thrashing(&h, 3).expect("thrashing");
        assert_eq!(alert.repeats, 3);
    }

    #[test]
    fn break_symmetry_that_lowers_the_distance_is_not_thrashing() {
        let h = vec![
            round(0.7, Directive::BreakSymmetry),
            round(0.6, Directive::BreakSymmetry),
            round(0.5, Directive::BreakSymmetry),
        ];
        assert_eq!(detect_thrashing(&h, 3), None);
        assert_eq!(detect_thrashing(&h[..2], 3), None);
    }
}
