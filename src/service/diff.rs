//! Line diffs between artifact versions, computed once on the Rust side with
//! `similar` (Myers' algorithm), so the CLI, the browser and the desktop app
//! all show the same diff and the front end carries no diff code.

use similar::{ChangeTag, TextDiff};

use super::types::{DiffLine, DiffTag, LineDiff};

/// The line diff turning `old` into `new`, every line included (the screens
/// fold long unchanged stretches themselves).
pub fn line_diff(artifact: &str, from_version: i64, old: &str, to_version: i64, new: &str) -> LineDiff {
    let diff = TextDiff::from_lines(old, new);
    let mut lines = Vec::new();
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        let tag = match change.tag() {
            ChangeTag::Equal => DiffTag::Equal,
            ChangeTag::Delete => {
                removed += 1;
                DiffTag::Delete
            }
            ChangeTag::Insert => {
                added += 1;
                DiffTag::Insert
            }
        };
        // `similar` keeps the newline with each line; the screens draw their own.
        let text = change.value().strip_suffix('\n').unwrap_or(change.value());
        let text = text.strip_suffix('\r').unwrap_or(text).to_string();
        lines.push(DiffLine {
            tag,
            old_line: change.old_index().map(|i| i as u32 + 1),
            new_line: change.new_index().map(|i| i as u32 + 1),
            text,
        });
    }
    LineDiff { artifact: artifact.to_string(), from_version, to_version, added, removed, lines }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_line_is_one_delete_and_one_insert_with_both_numberings() {
        let d = line_diff("a", 1, "one\ntwo\nthree\n", 2, "one\nTWO\nthree\nfour\n");
        assert_eq!((d.added, d.removed), (2, 1));
        let tags: Vec<DiffTag> = d.lines.iter().map(|l| l.tag).collect();
        assert_eq!(tags, [DiffTag::Equal, DiffTag::Delete, DiffTag::Insert, DiffTag::Equal, DiffTag::Insert]);
        assert_eq!(
            d.lines[1],
            DiffLine { tag: DiffTag::Delete, old_line: Some(2), new_line: None, text: "two".into() }
        );
        assert_eq!(
            d.lines[2],
            DiffLine { tag: DiffTag::Insert, old_line: None, new_line: Some(2), text: "TWO".into() }
        );
        assert_eq!((d.lines[3].old_line, d.lines[3].new_line), (Some(3), Some(3)));
        assert_eq!(d.lines[4].new_line, Some(4));
    }

    #[test]
    fn identical_texts_have_no_changes_and_a_missing_final_newline_is_no_change() {
        let d = line_diff("a", 0, "x\ny", 0, "x\ny");
        assert_eq!((d.added, d.removed), (0, 0));
        assert!(d.lines.iter().all(|l| l.tag == DiffTag::Equal && !l.text.ends_with('\n')));
    }
}
