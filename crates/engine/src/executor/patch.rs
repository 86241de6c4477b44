//! Search/replace edits, applied tolerantly.
//!
//! Small models cannot reproduce a whole file faithfully: they drop lines,
//! re-indent, or stop early. What they can produce is a short `search` block
//! copied from the file they were shown and the `replace` block it becomes.
//! Copies are rarely exact, so the search is tried at falling strictness —
//! exactly, then ignoring trailing whitespace, then ignoring indentation
//! (the replacement is re-indented to the file), then by similarity over a
//! window of the same number of lines — and must match one place only. When
//! it does not apply, the reason quotes the closest lines of the file so the
//! next attempt can copy them.

use similar::TextDiff;

/// How similar (0–1, by characters) a window of the file must be to the
/// search block to be taken for it when nothing matches more strictly.
const FUZZY_THRESHOLD: f64 = 0.85;

/// Above this many (file lines × search lines), the similarity search is
/// skipped: its cost grows with both, and a block that long is copied
/// faithfully or not at all.
const FUZZY_WORK_LIMIT: usize = 400_000;
/// Longer windows or search blocks are not diffed by characters (a search
/// block is at most 8,000 characters; see `executor::llm`).
const MAX_DIFF_CHARS: usize = 10_000;

/// How the search block was found in the file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MatchKind {
    Exact,
    /// Equal once trailing whitespace and line endings are ignored.
    TrailingWhitespace,
    /// Equal once indentation is ignored; the replacement was re-indented.
    Indentation,
    /// The most similar window of the file, `similarity` alike (0–1).
    Similar {
        similarity: f64,
    },
}

impl MatchKind {
    /// A short phrase for the trajectory ("matched ignoring indentation").
    pub fn describe(&self) -> String {
        match self {
            MatchKind::Exact => "matched exactly".to_string(),
            MatchKind::TrailingWhitespace => "matched ignoring trailing whitespace".to_string(),
            MatchKind::Indentation => "matched ignoring indentation".to_string(),
            MatchKind::Similar { similarity } => format!("matched by similarity ({:.0}% alike)", similarity * 100.0),
        }
    }
}

/// The file after the edit, and how the search block was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Replaced {
    pub text: String,
    pub matched: MatchKind,
}

/// Replaces the one place of `original` that `search` matches with
/// `replace`; `Err` says why not, in words meant for the model.
pub fn apply(original: &str, search: &str, replace: &str) -> Result<Replaced, String> {
    if search.trim().is_empty() {
        if original.trim().is_empty() {
            return Ok(Replaced { text: replace.to_string(), matched: MatchKind::Exact });
        }
        return Err("`search` is empty; copy the lines to change from the file into `search`".to_string());
    }
    match original.matches(search).count() {
        1 => return Ok(exact(original, search, replace)),
        0 => {}
        n => return Err(ambiguous(n)),
    }
    let file = Lines::of(original);
    let wanted = trim_blank_ends(search.lines().collect());
    let with = replace.lines().collect::<Vec<_>>();
    if wanted.is_empty() || file.lines.len() < wanted.len() {
        return Err(not_found(&file, &wanted));
    }
    // Line by line, ignoring trailing whitespace, then all indentation.
    let levels: [(MatchKind, fn(&str) -> &str); 2] =
        [(MatchKind::TrailingWhitespace, str::trim_end), (MatchKind::Indentation, str::trim)];
    for (kind, norm) in levels {
        let starts = (0..=file.lines.len() - wanted.len())
            .filter(|&i| wanted.iter().enumerate().all(|(k, w)| norm(file.lines[i + k]) == norm(w)))
            .collect::<Vec<_>>();
        match starts.as_slice() {
            [] => continue,
            [start] => return Ok(file.splice(*start, &wanted, &with, kind)),
            many => return Err(ambiguous(many.len())),
        }
    }
    let Some((start, similarity)) = most_similar(&file.lines, &wanted) else {
        return Err(not_found(&file, &wanted));
    };
    if similarity < FUZZY_THRESHOLD {
        return Err(not_found(&file, &wanted));
    }
    let rivals = windows_similarity(&file.lines, &wanted)
        .filter(|&(i, s)| i.abs_diff(start) >= wanted.len() && s >= FUZZY_THRESHOLD)
        .count();
    if rivals > 0 {
        return Err(ambiguous(rivals + 1));
    }
    Ok(file.splice(start, &wanted, &with, MatchKind::Similar { similarity }))
}

/// The one exact occurrence replaced. A block copied without its
/// indentation matches mid-line, after the line's indentation: the later
/// lines of a multi-line replacement then get that indentation too.
fn exact(original: &str, search: &str, replace: &str) -> Replaced {
    let at = original.find(search).unwrap_or(0);
    let line_start = original[..at].rfind('\n').map_or(0, |i| i + 1);
    let before = &original[line_start..at];
    let unindented = !before.is_empty() && before.trim().is_empty() && !search.starts_with(char::is_whitespace);
    if !(unindented && replace.contains('\n')) {
        return Replaced { text: original.replacen(search, replace, 1), matched: MatchKind::Exact };
    }
    let mut lines = replace.split('\n');
    let mut shifted = lines.next().unwrap_or_default().to_string();
    for line in lines {
        shifted.push('\n');
        shifted.push_str(&reindent(line, "", before));
    }
    Replaced { text: original.replacen(search, &shifted, 1), matched: MatchKind::Indentation }
}

/// The file split into lines, with the line ending it uses.
struct Lines<'a> {
    lines: Vec<&'a str>,
    newline: &'static str,
    ends_with_newline: bool,
}

impl<'a> Lines<'a> {
    fn of(text: &'a str) -> Lines<'a> {
        Lines {
            lines: text.lines().collect(),
            newline: if text.contains("\r\n") { "\r\n" } else { "\n" },
            ends_with_newline: text.ends_with('\n'),
        }
    }

    /// The file with `wanted.len()` lines from `start` replaced by `with`.
    /// Unless only trailing whitespace differed, each replacement line is
    /// moved from the indentation of its counterpart in the search block
    /// (the line at the same position, or the last one) to that of the file
    /// line it matched: a block copied flat or shifted lands where it was.
    fn splice(&self, start: usize, wanted: &[&str], with: &[&str], matched: MatchKind) -> Replaced {
        let shift = |j: usize, line: &str| -> String {
            if matched == MatchKind::TrailingWhitespace {
                return line.to_string();
            }
            let k = j.min(wanted.len() - 1);
            reindent(line, indent(wanted[k]), indent(self.lines[start + k]))
        };
        let mut out = self.lines[..start].iter().map(|l| l.to_string()).collect::<Vec<_>>();
        out.extend(with.iter().enumerate().map(|(j, l)| shift(j, l)));
        out.extend(self.lines[start + wanted.len()..].iter().map(|l| l.to_string()));
        let mut text = out.join(self.newline);
        if self.ends_with_newline && !text.is_empty() {
            text.push_str(self.newline);
        }
        Replaced { text, matched }
    }
}

/// Moves `line` from the search block's indentation to the file's.
fn reindent(line: &str, from: &str, to: &str) -> String {
    if line.trim().is_empty() || from == to {
        return line.to_string();
    }
    match line.strip_prefix(from) {
        Some(rest) => format!("{to}{rest}"),
        // Indented less than the block's first line: keep it as written.
        None => line.to_string(),
    }
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

fn trim_blank_ends(mut lines: Vec<&str>) -> Vec<&str> {
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let first = lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(lines.len());
    lines.split_off(first)
}

/// Each window of the file as long as the search block, with its
/// similarity to it (0–1, by characters, indentation ignored).
fn windows_similarity<'a>(file: &'a [&'a str], wanted: &'a [&'a str]) -> impl Iterator<Item = (usize, f64)> + 'a {
    let target = joined_trimmed(wanted);
    let count = if file.len() * wanted.len() > FUZZY_WORK_LIMIT { 0 } else { file.len() + 1 - wanted.len() };
    (0..count).map(move |i| (i, similarity(&joined_trimmed(&file[i..i + wanted.len()]), &target)))
}

/// How alike two texts are by characters (0–1). Texts whose lengths differ
/// more than threefold are scored by the bound their lengths put on the
/// ratio (it is 2·matches / total, and matches ≤ the shorter length): far
/// below any match, and it spares a character diff whose cost grows with
/// the product of the lengths — a minified line of 70,000 characters
/// against a search block took minutes.
fn similarity(a: &str, b: &str) -> f64 {
    let (n, m) = (a.chars().count(), b.chars().count());
    if n + m == 0 {
        return 1.0;
    }
    let bound = 2.0 * n.min(m) as f64 / (n + m) as f64;
    if bound < 0.5 || n.max(m) > MAX_DIFF_CHARS {
        return bound.min(0.5);
    }
    f64::from(TextDiff::from_chars(a, b).ratio())
}

fn most_similar(file: &[&str], wanted: &[&str]) -> Option<(usize, f64)> {
    windows_similarity(file, wanted).fold(None, |best, (i, s)| match best {
        Some((_, b)) if b >= s => best,
        _ => Some((i, s)),
    })
}

fn joined_trimmed(lines: &[&str]) -> String {
    lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join("\n")
}

fn ambiguous(n: usize) -> String {
    format!("`search` matches {n} places in the file; include more of the surrounding lines so it matches one")
}

/// The reason for a search block that matches nothing, quoting the closest
/// lines of the file so the model can copy them next time.
fn not_found(file: &Lines, wanted: &[&str]) -> String {
    let base = "`search` does not match the file";
    let closest =
        if wanted.is_empty() || file.lines.len() < wanted.len() { None } else { most_similar(&file.lines, wanted) };
    match closest {
        Some((start, similarity)) if similarity > 0.3 => {
            let shown = wanted.len().min(12);
            let quote = file.lines[start..start + shown].join("\n");
            format!(
                "{base}; the closest lines ({}–{}, {:.0}% alike) are:\n{quote}\n\
                 copy the lines to change exactly as the file has them",
                start + 1,
                start + shown,
                similarity * 100.0
            )
        }
        _ => format!("{base}; copy the lines to change exactly as the file has them"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "def slugify(text):\n    \"\"\"Doc.\"\"\"\n    raise NotImplementedError(\"no\")\n\n\ndef other():\n    return 1\n";

    #[test]
    fn an_exact_block_is_replaced_once() {
        let r = apply(FILE, "    return 1\n", "    return 2\n").unwrap();
        assert_eq!(r.matched, MatchKind::Exact);
        assert!(r.text.ends_with("def other():\n    return 2\n"));
    }

    #[test]
    fn trailing_whitespace_and_crlf_do_not_prevent_a_match() {
        let crlf = FILE.replace('\n', "\r\n");
        let r = apply(&crlf, "def other():   \n    return 1", "def other():\n    return 3").unwrap();
        assert_eq!(r.matched, MatchKind::TrailingWhitespace);
        assert!(r.text.ends_with("def other():\r\n    return 3\r\n"), "{:?}", r.text);
    }

    #[test]
    fn a_block_copied_without_indentation_is_reindented_to_the_file() {
        let r = apply(FILE, "raise NotImplementedError(\"no\")", "s = text.lower()\nreturn s").unwrap();
        assert_eq!(r.matched, MatchKind::Indentation);
        assert!(r.text.contains("    \"\"\"Doc.\"\"\"\n    s = text.lower()\n    return s\n"), "{}", r.text);
    }

    #[test]
    fn a_block_copied_flat_keeps_the_indentation_of_each_line() {
        let r = apply(FILE, "def other():\nreturn 1", "def other():\nreturn 2").unwrap();
        assert_eq!(r.matched, MatchKind::Indentation);
        assert!(r.text.ends_with("def other():\n    return 2\n"), "{}", r.text);
    }

    #[test]
    fn a_nearly_copied_block_matches_by_similarity() {
        let r = apply(FILE, "def slugify(txt):\n    \"\"\"Doc.\"\"\"", "def slugify(text):\n    \"\"\"Slug.\"\"\"")
            .unwrap();
        assert!(matches!(r.matched, MatchKind::Similar { similarity } if similarity >= FUZZY_THRESHOLD));
        assert!(r.text.starts_with("def slugify(text):\n    \"\"\"Slug.\"\"\"\n    raise"), "{}", r.text);
    }

    #[test]
    fn a_block_that_matches_twice_is_refused_with_the_count() {
        let err = apply("a\nx\nb\nx\n", "x", "y").unwrap_err();
        assert!(err.contains("matches 2 places"), "{err}");
    }

    #[test]
    fn a_block_that_matches_nothing_quotes_the_closest_lines() {
        let err = apply(FILE, "def slugify(value, sep):\n    pass", "").unwrap_err();
        assert!(err.contains("does not match"), "{err}");
        assert!(err.contains("lines (1–2"), "{err}");
        assert!(err.contains("def slugify(text):"), "{err}");
        let err = apply(FILE, "completely different", "").unwrap_err();
        assert!(err.contains("copy the lines to change exactly"), "{err}");
    }

    #[test]
    fn an_empty_search_fills_an_empty_file_and_is_refused_otherwise() {
        assert_eq!(apply("", "", "new\n").unwrap().text, "new\n");
        assert!(apply(FILE, "  \n", "x").unwrap_err().contains("`search` is empty"));
    }

    /// Found by the fuzz target: a minified line made every fuzzy
    /// comparison a character diff of 70,000 × 16 characters, for minutes.
    #[test]
    fn a_file_with_a_huge_line_is_searched_without_diffing_it_by_characters() {
        let minified = format!("{}\ndef slug(s):\n    return s.lower()\n", "x".repeat(70_000));
        let e = apply(&minified, "def slug(t):\n    return t.upper()", "y").unwrap_err();
        assert!(e.contains("closest lines"), "{e}");
        let long_search = "y".repeat(70_000);
        assert!(apply(FILE, &long_search, "z").is_err());
    }
}
