//! How two versions of an artifact are compared — for the app's diffs, the
//! CLI's `inspect --artifact` and the diffs the tree search shows a model.
//!
//! Text artifacts are compared line by line. JSON artifacts are compared field
//! by field: both versions are first written in one canonical form (keys
//! sorted at every level, one field per line), because the versions an
//! optimizer writes come out of a serializer with its own key order while a
//! built-in version 0 keeps its author's — compared as stored, a one-field
//! change would show as most of the file removed and added again.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};
use ts_rs::TS;

use super::ArtifactKind;

/// What a comparison compares: the stored lines, or the fields of both
/// versions in one canonical form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum DiffBasis {
    Lines,
    Fields,
}

/// The two texts to compare line by line, and what their lines are.
#[derive(Debug)]
pub struct Comparable<'a> {
    pub basis: DiffBasis,
    pub old: Cow<'a, str>,
    pub new: Cow<'a, str>,
}

/// `old` and `new` as they should be compared for an artifact of `kind`: by
/// field for JSON when both versions parse, by line otherwise.
pub fn comparable<'a>(kind: ArtifactKind, old: &'a str, new: &'a str) -> Comparable<'a> {
    if kind == ArtifactKind::Json {
        if let (Some(a), Some(b)) = (canonical_json(old), canonical_json(new)) {
            return Comparable { basis: DiffBasis::Fields, old: Cow::Owned(a), new: Cow::Owned(b) };
        }
    }
    Comparable { basis: DiffBasis::Lines, old: Cow::Borrowed(old), new: Cow::Borrowed(new) }
}

/// A unified diff (`---`/`+++` headers, `radius` lines of context) from
/// version `from` to version `to` of artifact `name`. Compared by field, the
/// headers say so: the lines are the canonical form, not the stored file's.
pub fn unified(
    kind: ArtifactKind,
    name: &str,
    (from, old): (i64, &str),
    (to, new): (i64, &str),
    radius: usize,
) -> String {
    let c = comparable(kind, old, new);
    let basis = if c.basis == DiffBasis::Fields { " (by field, keys sorted)" } else { "" };
    similar::TextDiff::from_lines(c.old.as_ref(), c.new.as_ref())
        .unified_diff()
        .context_radius(radius)
        .header(&format!("{name} v{from}{basis}"), &format!("{name} v{to}{basis}"))
        .to_string()
}

/// `text` as pretty-printed JSON with every object's keys sorted, or `None`
/// when it is not JSON. (`serde_json`'s map is sorted today, but a dependency
/// switching on its `preserve_order` feature would silently undo that; the
/// sort here does not depend on it.)
fn canonical_json(text: &str) -> Option<String> {
    fn sorted(value: Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut fields: Vec<(String, Value)> = map.into_iter().collect();
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(fields.into_iter().map(|(k, v)| (k, sorted(v))).collect::<Map<_, _>>())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
            other => other,
        }
    }
    let value: Value = serde_json::from_str(text).ok()?;
    serde_json::to_string_pretty(&sorted(value)).ok().map(|s| s + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unified_diff_of_a_reordered_json_artifact_shows_only_the_changed_field() {
        let v0 = "{\n  \"steps\": 40,\n  \"gain\": 1.0\n}\n";
        let v1 = r#"{"gain":2.0,"steps":40}"#;
        let text = unified(ArtifactKind::Json, "knobs", (0, v0), (1, v1), 3);
        let changed: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(['+', '-']) && !l.starts_with("+++") && !l.starts_with("---"))
            .collect();
        assert_eq!(changed, ["-  \"gain\": 1.0,", "+  \"gain\": 2.0,"], "{text}");
        assert!(
            text.starts_with("--- knobs v0 (by field, keys sorted)\n+++ knobs v1 (by field, keys sorted)\n"),
            "{text}"
        );
    }
}
