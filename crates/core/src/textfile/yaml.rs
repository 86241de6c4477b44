//! Reading the YAML files Attractor is pointed at (suites, task files,
//! problem files): bytes to text (a binary or non-UTF-8 file is named as
//! such), text to typed values, and every failure as one issue with its
//! place counted from 1, the field path as written, plain words instead of
//! the YAML library's Rust wording, and a hint that says what to do.

use std::path::Path;

use serde_saphyr::{MessageFormatter, Spanned};

use super::{SourceLocation, SuiteError, SuiteIssue};

/// Reads a YAML file Attractor was pointed at (`what`: "suite file"); a
/// file that cannot be read, or is no UTF-8 text, is one issue at 1:1 with
/// a hint (`kind_hint`: what such files are).
pub fn read_text(path: &Path, what: &str, kind_hint: &str) -> Result<String, SuiteError> {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(whole_file_issue(path, format!("there is no {what} here"), format!("check the path; {kind_hint}")))
        }
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory || path.is_dir() => Err(whole_file_issue(
            path,
            format!("this is a folder, not a {what}"),
            format!("give the path of the file itself; {kind_hint}"),
        )),
        Err(e) => Err(whole_file_issue(path, format!("cannot read the {what}: {e}"), "check its permissions".into())),
        Ok(bytes) => decode_text(bytes, path, what, kind_hint),
    }
}

/// A file's bytes as text: a binary or non-UTF-8 file is one issue at 1:1
/// saying which byte gave it away. Every reader of files Attractor is
/// pointed at, the folder watcher included, decodes through here.
pub fn decode_text(bytes: Vec<u8>, path: &Path, what: &str, kind_hint: &str) -> Result<String, SuiteError> {
    // NUL never occurs in text: a file with one is binary, even when its
    // bytes happen to be valid UTF-8.
    if let Some(nul) = bytes.iter().position(|b| *b == 0) {
        return Err(whole_file_issue(
            path,
            format!("the {what} is a binary file, not text (byte {} is NUL)", nul + 1),
            format!("{kind_hint}; give the path of the YAML file"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        whole_file_issue(
            path,
            format!(
                "the {what} is not UTF-8 text (byte {} is not; is it a binary file?)",
                e.utf8_error().valid_up_to() + 1
            ),
            format!("{kind_hint}; save it as UTF-8"),
        )
    })
}

/// A problem of the whole file: at its start, 1:1.
fn whole_file_issue(path: &Path, message: String, hint: String) -> SuiteError {
    SuiteError::one(SuiteIssue {
        location: SourceLocation { file: path.to_path_buf(), line: 1, column: 1 },
        field: String::new(),
        message,
        hint: Some(hint),
    })
}

/// Deserializes strict YAML (the type rejects unknown keys) into `T`; a
/// failure becomes one issue with the file, line, column, the field path as
/// written and a hint. `missing_hint` says what to do about a missing key.
/// Every YAML file Attractor reads goes through here.
pub fn parse_strict<T: serde::de::DeserializeOwned>(
    text: &str,
    path: &Path,
    missing_hint: &str,
) -> Result<T, SuiteIssue> {
    let mut field_path = String::new();
    let parsed = serde_saphyr::with_deserializer_from_str(text, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            field_path = clean_path(&e.path().to_string());
            e.into_inner()
        })
    });
    parsed.map_err(|e| {
        // A syntax error is the reader's (a missing `:`, a bad indent): the
        // field the deserializer was filling when it stopped is not where
        // the mistake is, and naming it misleads.
        if matches!(e.without_snippet(), serde_saphyr::Error::ExternalMessage { .. }) {
            field_path.clear();
        }
        let loc = e.location();
        let message = serde_saphyr::DefaultMessageFormatter.format_message(e.without_snippet()).into_owned();
        // The library's wording for a repeated key speaks of its own options.
        let message = if message.contains("DuplicateKeyPolicy") || message.to_lowercase().contains("duplicate") {
            "the same key appears twice in one mapping".to_string()
        } else if text.trim().is_empty() || text.trim() == "~" {
            "the file is empty".to_string()
        } else {
            plain_words(message)
        };
        let hint = if message.contains("missing field") {
            Some(missing_hint.to_string())
        } else if message.contains("appears twice") {
            Some("keep one of them".to_string())
        } else if message == "the file is empty" {
            Some(missing_hint.to_string())
        } else {
            // What is left are the reader's syntax errors: say what to check.
            let syntax = if text.trim_start().starts_with('{') { JSON_SYNTAX_HINT } else { SYNTAX_HINT };
            Some(hint_for(&message).unwrap_or_else(|| syntax.to_string()))
        };
        SuiteIssue {
            // A problem of the whole document (empty, `~`) has no place of
            // its own: it is at the start.
            location: SourceLocation {
                file: path.to_path_buf(),
                line: loc.map_or(1, |l| (l.line() as u32).max(1)),
                column: loc.map_or(1, |l| (l.column() as u32).max(1)),
            },
            field: field_path,
            message: message.escape_debug().to_string().replace("\\'", "'").replace("\\\"", "\""),
            hint,
        }
    })
}

/// The hint of a YAML syntax error the reader reports in its own terms.
const SYNTAX_HINT: &str = "check the YAML here: indent with spaces (not tabs), close every bracket and quote, put a space after each `key:`, and quote text that holds `:`, `#`, `{` or `[`";
/// The same for a file written as JSON (YAML reads JSON too).
const JSON_SYNTAX_HINT: &str = "check the JSON here: quote every key and text with double quotes, separate entries with commas (none after the last), and close every `{`, `[` and quote";

/// The YAML library words some rejections for Rust programmers ("invalid
/// u32", "use Option<String>"); a person gets what the value must be.
fn plain_words(message: String) -> String {
    let wanted = match message.as_str() {
        m if m.starts_with("cannot deserialize null into") => {
            Some("a value is required here, and it is empty (null or `~`)")
        }
        "invalid u8" | "invalid u16" | "invalid u32" | "invalid u64" | "invalid usize" => {
            Some("expected a whole number of 0 or more (not too large)")
        }
        "invalid i8" | "invalid i16" | "invalid i32" | "invalid i64" | "invalid isize" => {
            Some("expected a whole number (not too large)")
        }
        "invalid floating point" | "invalid f32" | "invalid f64" => Some("expected a number, such as 0.5 or 30"),
        "invalid boolean" | "invalid bool" => Some("expected true or false"),
        "expected mapping start" => Some("expected a mapping here (`key: value` lines, or `{ key: value }`)"),
        "expected sequence start" => Some("expected a list here (`- item` lines, or `[a, b]`)"),
        "expected string scalar" => Some("expected text here"),
        m if m.starts_with("externally tagged enum") => Some("expected one of the names this field takes"),
        m if m.starts_with("non-finite float") => Some("expected a finite number (not .nan or .inf)"),
        // The reader's own safety limits (too many values, too deep, too many aliases).
        m if m.starts_with("budget breached") => Some(
            "the file is too large or too deeply nested to read safely (the limit is a quarter of a million values)",
        ),
        _ => None,
    };
    wanted.map_or(message, String::from)
}

/// `serde_path_to_error` sees the wrapper types too; keep only the names a
/// person wrote in the file.
fn clean_path(p: &str) -> String {
    let mut out = String::new();
    for seg in p.split('.') {
        // A `Spanned` wrapper shows up as a `value` segment, possibly carrying
        // the index of the list it wraps (`value[0]`).
        let seg = seg.strip_prefix("value").filter(|rest| rest.is_empty() || rest.starts_with('[')).unwrap_or(seg);
        if seg.is_empty() || seg == "?" || seg.starts_with("__serde_saphyr") {
            continue;
        }
        if !out.is_empty() && !seg.starts_with('[') {
            out.push('.');
        }
        out.push_str(seg);
    }
    out
}

/// Words a rejection holds, and what to do about it; the first match wins.
const HINTS: &[(&str, &str)] = &[
    (
        "the file is too large",
        "split it: tasks can live in task files of their own (`*.task.yaml`) that name the suite",
    ),
    ("expected a whole number", "write a whole number, e.g. `3`"),
    ("expected a number", "write a number, e.g. `0.5`; very large values are not usable"),
    ("expected true or false", "write `true` or `false`"),
    ("expected a mapping", "check the indentation of this line against the lines around it; see examples/"),
    ("expected a list", "check the indentation of this line against the lines around it; see examples/"),
    ("expected text", "write the text after the colon; quote it if it could be read as a list or mapping"),
    ("expected one of the names", "write one of the names, e.g. `type: json`"),
    ("expected a finite number", "write a plain number, e.g. `0.5`"),
    ("unknown anchor", "define the anchor (`&name`) before using it (`*name`), or write the value out"),
    ("a value is required", "write the value after the colon, or remove the key if it is optional"),
    (
        "unexpected character",
        "quote text that holds special characters (`\"…\"`), and check the indentation of this line",
    ),
    (
        "not allowed in this context",
        "quote text that holds special characters (`\"…\"`), and check the indentation of this line",
    ),
    ("unknown field", "remove the key or fix its spelling; the expected keys are listed above"),
    ("missing field", "add the missing key; see examples/ for a complete suite"),
    ("unknown variant", "use one of the values listed above"),
    ("invalid", "check the value's type (number, text, true/false, list)"),
];

fn hint_for(message: &str) -> Option<String> {
    HINTS.iter().find(|(words, _)| message.contains(words)).map(|(_, hint)| (*hint).to_string())
}

/// Where the value at `field` (a dotted path as issues name it, e.g.
/// `engine.ggs.epsilon` or `tasks[1].timeout`) is written in a YAML or JSON
/// text, counted from 1 (or of the deepest value on the way there); `None`
/// when the text does not parse. Checks made after parsing (a number
/// outside its range) use it to point at what they refuse.
pub fn locate(text: &str, field: &str) -> Option<(u32, u32)> {
    let tree: Spanned<Node> = serde_saphyr::from_str(text).ok()?;
    locate_in(&tree, field)
}

/// Problems found after parsing — `(field, message, hint)` — as issues at
/// their places in `path`'s `text` (read once), in file order.
pub fn issues_at(
    text: &str,
    path: &Path,
    wrong: impl IntoIterator<Item = (String, String, String)>,
) -> Result<(), SuiteError> {
    let tree: Option<Spanned<Node>> = serde_saphyr::from_str(text).ok();
    let mut issues: Vec<SuiteIssue> = wrong
        .into_iter()
        .map(|(field, message, hint)| {
            let (line, column) = tree.as_ref().and_then(|t| locate_in(t, &field)).unwrap_or((1, 1));
            SuiteIssue {
                location: SourceLocation { file: path.to_path_buf(), line, column },
                field,
                message,
                hint: Some(hint),
            }
        })
        .collect();
    issues.sort_by_key(|i| (i.location.line, i.location.column));
    if issues.is_empty() { Ok(()) } else { Err(SuiteError { issues }) }
}

fn locate_in(tree: &Spanned<Node>, field: &str) -> Option<(u32, u32)> {
    let mut at = tree;
    for step in steps(field) {
        let next = match (&at.value, step) {
            (Node::Map(entries), Step::Key(key)) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            (Node::List(items), Step::Index(i)) => items.get(i),
            _ => None,
        };
        // A path that does not lead all the way (a key holding a dot, a
        // value the file leaves to its default) points at the deepest
        // value it reaches.
        match next {
            Some(next) => at = next,
            None => break,
        }
    }
    let loc = at.referenced;
    Some((u32::try_from(loc.line()).ok()?.max(1), u32::try_from(loc.column()).ok()?.max(1)))
}

enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// `a.b[2].c` as keys and indexes.
fn steps(field: &str) -> Vec<Step<'_>> {
    let mut out = Vec::new();
    for seg in field.split('.').filter(|s| !s.is_empty()) {
        let (key, rest) = seg.split_once('[').map_or((seg, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            out.push(Step::Key(key));
        }
        for index in rest.split('[') {
            if let Some(i) = index.trim_end_matches(']').parse().ok().filter(|_| !index.is_empty()) {
                out.push(Step::Index(i));
            }
        }
    }
    out
}

/// A parsed document with the place of every value: what [`locate`] walks.
enum Node {
    Map(Vec<(String, Spanned<Node>)>),
    List(Vec<Spanned<Node>>),
    Scalar,
}

impl<'de> serde::Deserialize<'de> for Node {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> serde::de::Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_i128<E>(self, _: i128) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_u128<E>(self, _: u128) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_str<E>(self, _: &str) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_bytes<E>(self, _: &[u8]) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        serde::Deserialize::deserialize(d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::List(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Key>()? {
            entries.push((key.0, map.next_value()?));
        }
        Ok(Node::Map(entries))
    }
}

/// A mapping's key as text, whatever scalar it was written as (`1:`, `true:`).
struct Key(String);

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E>(self, v: &str) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Key, E> {
                Ok(Key(v.to_string()))
            }
            fn visit_unit<E>(self) -> Result<Key, E> {
                Ok(Key(String::new()))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_is_located_in_yaml_and_in_json() {
        let yaml = "engine:\n  ggs:\n    epsilon: 5\ntasks:\n  - name: a\n  - name: b\n    timeout: 9\n";
        assert_eq!(locate(yaml, "engine.ggs.epsilon"), Some((3, 14)));
        assert_eq!(locate(yaml, "tasks[1].timeout"), Some((7, 14)));
        assert_eq!(locate(yaml, "tasks[2].timeout"), Some((5, 3)), "the list, for want of its third item");
        let json = "{\n  \"engine\": {\n    \"ggs\": {\"epsilon\": 5}\n  }\n}\n";
        assert_eq!(locate(json, "engine.ggs.epsilon"), Some((3, 24)));
        let tabs = "{\n\t\"a\": {\n\t\t\"b\": 1\n\t}\n}\n";
        assert_eq!(locate(tabs, "a.b"), Some((3, 8)));
        assert_eq!(locate("a: [", "a"), None);
    }
}
