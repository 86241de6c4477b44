//! Digging the JSON out of a model's reply when it is not just JSON.
//!
//! Models wrap JSON in reasoning (`<think>…</think>`), in Markdown fences, or
//! in a sentence of preamble. These functions peel those layers off without
//! knowing the expected type; [`structured`](super::structured) then tries the
//! pieces, in order, against it.

/// Removes reasoning blocks: every `<think>…</think>`, a leading block whose
/// opening tag the chat template already swallowed (text up to a first
/// `</think>` with no `<think>` before it, as DeepSeek-R1 style templates
/// produce), and an unclosed `<think>` that runs to the end (a reply cut off
/// while reasoning). Tags are matched case-insensitively.
pub fn strip_think(text: &str) -> String {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    // ASCII lowercasing keeps byte offsets, so positions found in `lower`
    // index `text` directly.
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    if let Some(close) = lower.find(CLOSE)
        && !lower[..close].contains(OPEN)
    {
        pos = close + CLOSE.len();
    }
    while let Some(open) = lower[pos..].find(OPEN).map(|i| pos + i) {
        out.push_str(&text[pos..open]);
        match lower[open..].find(CLOSE) {
            Some(close) => pos = open + close + CLOSE.len(),
            None => return out,
        }
    }
    out.push_str(&text[pos..]);
    out
}

/// The contents of Markdown code fences (```` ```json … ``` ```` or plain
/// ```` ``` … ``` ````), in order of appearance. An unclosed last fence runs
/// to the end of the text.
pub fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        // The opening fence's line may name a language; the block starts on
        // the next line.
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let body = &after[body_start..];
        match body.find("```") {
            Some(end) => {
                blocks.push(body[..end].trim());
                rest = &body[end + 3..];
            }
            None => {
                blocks.push(body.trim());
                break;
            }
        }
    }
    blocks
}

/// Balanced `{…}` and `[…]` spans of `text`, in order of where they start,
/// skipping brackets inside JSON strings. When a span closes, the scan
/// continues after it; a start that never balances is skipped and the scan
/// goes on from the next bracket, so an unclosed outer object still yields the
/// complete objects inside it. At most `limit` spans are returned.
pub fn balanced_spans(text: &str, limit: usize) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut start = 0;
    while spans.len() < limit {
        let Some(open) = bytes[start..].iter().position(|b| matches!(b, b'{' | b'[')).map(|i| start + i) else {
            break;
        };
        match matching_close(bytes, open) {
            Some(close) => {
                spans.push(&text[open..=close]);
                start = close + 1;
            }
            None => start = open + 1,
        }
    }
    spans
}

/// Index of the bracket that closes the one at `open`, if any. Brackets are
/// ASCII, so every index found is a char boundary.
fn matching_close(bytes: &[u8], open: usize) -> Option<usize> {
    let mut stack = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => stack.push(b'}'),
            b'[' => stack.push(b']'),
            b'}' | b']' => {
                if stack.pop() != Some(b) {
                    return None;
                }
                if stack.is_empty() {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_blocks() {
        assert_eq!(strip_think("<think>hmm {\"a\":0}</think>{\"a\":1}"), "{\"a\":1}");
        assert_eq!(strip_think("x<THINK>a</Think>y<think>b</think>z"), "xyz");
        assert_eq!(strip_think("reasoning without opener</think>\n{\"a\":1}").trim(), "{\"a\":1}");
        assert_eq!(strip_think("{\"a\":1}<think>cut off while rea"), "{\"a\":1}");
        assert_eq!(strip_think("plain"), "plain");
    }

    #[test]
    fn fences() {
        let text = "Here:\n```json\n{\"a\": 1}\n```\nand\n```\n[2]\n```";
        assert_eq!(fenced_blocks(text), vec!["{\"a\": 1}", "[2]"]);
        assert_eq!(fenced_blocks("```json\n{\"a\": 1}"), vec!["{\"a\": 1}"]);
        assert!(fenced_blocks("no fences").is_empty());
    }

    #[test]
    fn balanced() {
        assert_eq!(
            balanced_spans("say {\"a\": \"}{\", \"b\": [1, {}]} then {\"c\": 2}", 8),
            vec!["{\"a\": \"}{\", \"b\": [1, {}]}", "{\"c\": 2}"]
        );
        assert_eq!(balanced_spans("{\"outer\": {\"inner\": 1}", 8), vec!["{\"inner\": 1}"]);
        assert_eq!(balanced_spans("[note] {\"a\": \"\\\"}\"}", 8), vec!["[note]", "{\"a\": \"\\\"}\"}"]);
        assert!(balanced_spans("{ never closed", 8).is_empty());
        assert_eq!(balanced_spans("{}{}{}", 2).len(), 2);
    }
}
