//! What a chat call returns: [`ChatReply`], the model's text with the cost and
//! latency of getting it.

use std::time::Duration;

use super::usage::TokenUsage;

/// The model's answer to one [`ChatRequest`](super::ChatRequest).
#[derive(Clone, Debug, PartialEq)]
pub struct ChatReply {
    /// The assistant message's text, exactly as the server sent it (an absent
    /// or null content is an empty string).
    pub content: String,
    /// Tokens as the server reported them; `None` when it sent no `usage`
    /// (some local servers do not).
    pub usage: Option<TokenUsage>,
    /// Wall time of the call, retries and backoff included; near zero for a
    /// cache hit.
    pub latency: Duration,
    /// The model the server says answered, when it says.
    pub model: Option<String>,
    /// `stop`, `length`, …; `length` means the reply was cut off by
    /// `max_tokens` or the context window.
    pub finish_reason: Option<String>,
    /// True when the reply came from the response cache (no tokens spent; the
    /// `usage` shown is that of the original call).
    pub cached: bool,
    /// Attempts beyond the first that this call needed.
    pub retries: u32,
}

/// `text` cut to `max_chars` characters for storing, with a marker saying how
/// much was cut, so a reader knows the text is not whole.
pub fn clip_stored(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => {
            let rest = text[i..].chars().count();
            format!("{}… [cut: {rest} more characters]", &text[..i])
        }
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::clip_stored;

    #[test]
    fn stored_text_is_cut_with_a_marker() {
        assert_eq!(clip_stored("short", 10), "short");
        assert_eq!(clip_stored("ééééé", 5), "ééééé");
        assert_eq!(clip_stored("abcdefgh", 3), "abc… [cut: 5 more characters]");
    }
}
