//! Numbers and counts for people: the few wording rules every message shares.

/// A drawn number to 6 significant digits: a chart shows 4, and the 17 of
/// a float's shortest form made 25,000 per-task losses most of the Charts
/// screen's answer (837 KB at 500 epochs × 50 tasks) and of its parse time.
/// Only what is drawn is rounded (the box's quartiles from the exact losses).
/// Texts for people use it too (1.34643, not 1.3464294278695847).
pub fn drawn(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    format!("{x:.5e}").parse().unwrap_or(x)
}

/// A number from a file as people wrote it: 1e308, not 309 digits.
pub fn shown_number(value: f64) -> String {
    if value.abs() >= 1e9 { format!("{value:e}") } else { value.to_string() }
}

/// "1 task", "3 tasks": a count with its noun, for people (the nouns here
/// take an "s"; [`counted_as`] for the others).
pub fn counted(n: impl TryInto<u64>, noun: &str) -> String {
    // A count never exceeds u64; a negative one is a bug shown as a large number.
    let n = n.try_into().unwrap_or(u64::MAX);
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// A count with its noun's own plural: "1 child", "2 children".
pub fn counted_as(n: impl TryInto<u64>, one: &str, many: &str) -> String {
    let n = n.try_into().unwrap_or(u64::MAX);
    if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
}
