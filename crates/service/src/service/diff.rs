//! Line diffs between artifact versions, computed once on the Rust side with
//! `similar` (Myers' algorithm), so the CLI, the browser and the desktop app
//! all show the same diff and the front end carries no diff code.
//!
//! How the two versions are lined up (by line, or by field for JSON) is
//! [`crate::artifact::compare`]'s job.

use similar::{ChangeTag, TextDiff};

use super::types::{DiffBasis, DiffLine, DiffTag, LineDiff};
use crate::artifact::ArtifactKind;
use crate::artifact::compare::comparable;

/// The diff turning `old` into `new` for an artifact of `kind`, every line
/// included (the screens fold long unchanged stretches themselves).
pub fn artifact_diff(
    kind: ArtifactKind,
    artifact: &str,
    from_version: i64,
    old: &str,
    to_version: i64,
    new: &str,
) -> LineDiff {
    let c = comparable(kind, old, new);
    diff(c.basis, artifact, from_version, &c.old, to_version, &c.new)
}

#[cfg(test)]
fn line_diff(artifact: &str, from_version: i64, old: &str, to_version: i64, new: &str) -> LineDiff {
    diff(DiffBasis::Lines, artifact, from_version, old, to_version, new)
}

fn diff(basis: DiffBasis, artifact: &str, from_version: i64, old: &str, to_version: i64, new: &str) -> LineDiff {
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
    LineDiff { artifact: artifact.to_string(), from_version, to_version, basis, added, removed, lines }
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

    #[test]
    fn a_json_field_changed_in_a_reordered_document_is_one_field_removed_and_one_added() {
        // Version 0 as its author wrote it; version 1 as a serializer wrote it
        // back: keys sorted, on one line, with `gain` changed.
        let v0 = "{\n  \"steps\": 40,\n  \"gain\": 1.0,\n  \"inner\": {\"b\": [1, 2], \"a\": true},\n  \"alpha\": \"x\"\n}\n";
        let v1 = r#"{"alpha":"x","gain":1.5,"inner":{"a":true,"b":[1,2]},"steps":40}"#;
        let d = artifact_diff(ArtifactKind::Json, "knobs", 0, v0, 1, v1);
        assert_eq!(d.basis, DiffBasis::Fields);
        assert_eq!((d.added, d.removed), (1, 1), "{:#?}", d.lines);
        let changed: Vec<(&DiffTag, &str)> =
            d.lines.iter().filter(|l| l.tag != DiffTag::Equal).map(|l| (&l.tag, l.text.trim())).collect();
        assert_eq!(changed, [(&DiffTag::Delete, "\"gain\": 1.0,"), (&DiffTag::Insert, "\"gain\": 1.5,")]);
        // The same pair compared as stored: every line differs.
        let raw = line_diff("knobs", 0, v0, 1, v1);
        assert!(raw.removed >= 5, "{raw:#?}");
    }

    #[test]
    fn a_json_artifact_that_does_not_parse_and_a_text_artifact_are_compared_by_line() {
        let d = artifact_diff(ArtifactKind::Json, "knobs", 0, "{\"a\": 1}", 1, "{\"a\": 2");
        assert_eq!((d.basis, d.added, d.removed), (DiffBasis::Lines, 1, 1));
        let d = artifact_diff(ArtifactKind::Text, "prompt", 0, "{\"b\": 1, \"a\": 2}", 1, "{\"a\": 2, \"b\": 1}");
        assert_eq!((d.basis, d.added, d.removed), (DiffBasis::Lines, 1, 1));
    }
}
