//! Structured replies: turning a model's text into a typed value, strictly
//! first and leniently second, and saying precisely what was wrong when
//! neither works (that sentence is what the correction call shows the model).

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::lenient::{balanced_spans, fenced_blocks, strip_think};
use super::reply::ChatReply;
use super::usage::TokenUsage;

/// How many bracketed spans the lenient parser tries; bounds the work on a
/// long reply full of brackets.
const MAX_SPANS: usize = 16;

/// How a structured value was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParsedVia {
    /// The reply was exactly the JSON asked for.
    Strict,
    /// The JSON had to be dug out (reasoning, fences or prose around it).
    Lenient,
    /// The first reply was unusable; the model fixed it when told what was
    /// wrong.
    Corrected,
}

/// A typed value parsed from a model's reply, with how and at what cost.
#[derive(Clone, Debug)]
pub struct Structured<T> {
    pub value: T,
    pub via: ParsedVia,
    /// The reply the value was parsed from (the correction's, if there was one).
    pub reply: ChatReply,
    /// Tokens of every call made for this value, as reported (cache hits
    /// included with their original usage).
    pub usage: TokenUsage,
    /// Chat calls made for this value: 1, or 2 after a correction.
    pub calls: u32,
}

/// Parses `text` as `T`: strictly, then leniently. On failure, the error is a
/// sentence for both a person and the model, naming the serde error (with the
/// field path) when there was JSON of the wrong shape.
pub fn parse_reply<T: DeserializeOwned>(text: &str) -> Result<(T, ParsedVia), String> {
    let trimmed = text.trim();
    if let Ok(value) = deserialize::<T>(trimmed) {
        return Ok((value, ParsedVia::Strict));
    }

    let cleaned = strip_think(text);
    let mut candidates: Vec<&str> = Vec::new();
    candidates.push(cleaned.trim());
    candidates.extend(fenced_blocks(&cleaned));
    candidates.extend(balanced_spans(&cleaned, MAX_SPANS));
    // A reply cut off inside an unclosed <think> may have its JSON in there.
    candidates.extend(balanced_spans(text, MAX_SPANS));

    let mut shape_error = None;
    let mut syntax_error = None;
    let mut tried: Vec<&str> = Vec::new();
    for candidate in candidates {
        if candidate.is_empty() || candidate == trimmed || tried.contains(&candidate) {
            continue;
        }
        tried.push(candidate);
        match deserialize::<T>(candidate) {
            Ok(value) => return Ok((value, ParsedVia::Lenient)),
            Err(error) if is_json(candidate) => {
                shape_error.get_or_insert(error);
            }
            Err(error) if candidate.starts_with(['{', '[']) => {
                syntax_error.get_or_insert(error);
            }
            Err(_) => {}
        }
    }
    // The strict attempt's error counts too when the whole reply looked like JSON.
    if trimmed.starts_with(['{', '[']) {
        let error = deserialize::<T>(trimmed).err().unwrap_or_default();
        if is_json(trimmed) {
            shape_error.get_or_insert(error);
        } else {
            syntax_error.get_or_insert(error);
        }
    }
    Err(match (shape_error, syntax_error) {
        (Some(e), _) => format!("the JSON does not have the expected shape: {e}"),
        (None, Some(e)) => format!("it is not valid JSON: {e}"),
        (None, None) => "it contains no JSON object".to_string(),
    })
}

/// The JSON Schema of `T` as sent in `response_format`, and a name for it
/// (OpenAI requires one: letters, digits, `_` and `-`). The `$schema` key
/// is dropped: some servers refuse keys they do not know at the top.
pub fn schema_of<T: JsonSchema>() -> (String, serde_json::Value) {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(map) = value.as_object_mut() {
        map.remove("$schema");
    }
    let name: String = T::schema_name()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .take(64)
        .collect();
    (if name.is_empty() { "reply".to_string() } else { name }, value)
}

/// Bounds, in a reply's schema, every property named in `limits` wherever it
/// is defined (the top, `$defs`, nested objects): `maxLength` for a string,
/// `maxItems` for an array. A server that enforces the schema then makes a
/// rambling model close the string or the list in time.
pub fn bound_properties(schema: &mut serde_json::Value, limits: &[(&str, usize)]) {
    match schema {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Object(props)) = map.get_mut("properties") {
                for (name, limit) in limits {
                    if let Some(serde_json::Value::Object(p)) = props.get_mut(*name) {
                        let is_array = p.get("type").is_some_and(|t| {
                            t == "array" || t.as_array().is_some_and(|a| a.iter().any(|x| x == "array"))
                        });
                        p.insert(if is_array { "maxItems" } else { "maxLength" }.to_string(), (*limit).into());
                    }
                }
            }
            for value in map.values_mut() {
                bound_properties(value, limits);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| bound_properties(v, limits)),
        _ => {}
    }
}

/// The user message that asks a model to fix its reply, quoting what was wrong.
pub fn correction_message(problem: &str) -> String {
    format!(
        "Your previous reply could not be used: {problem}. Reply again with only the corrected JSON, \
         with no explanation, no code fences and no <think> block."
    )
}

/// Deserializes with the path of the offending field in the error
/// (`items[2].score: invalid type: …`), which tells the model where to look.
fn deserialize<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}

fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq, schemars::JsonSchema)]
    struct Score {
        score: f64,
    }

    fn parse(text: &str) -> Result<(Score, ParsedVia), String> {
        parse_reply::<Score>(text)
    }

    #[test]
    fn strict_and_lenient() {
        assert_eq!(parse(" {\"score\": 1} ").unwrap(), (Score { score: 1.0 }, ParsedVia::Strict));
        let lenient = [
            "<think>maybe {\"score\": 0}?</think>\n{\"score\": 2}",
            "```json\n{\"score\": 2}\n```",
            "Sure! Here it is: {\"score\": 2}. Anything else?",
            "I think the score is 2</think>{\"score\": 2}",
            "<think>{\"score\": 2}",
            "{\"other\": 1} {\"score\": 2}",
        ];
        for text in lenient {
            assert_eq!(parse(text), Ok((Score { score: 2.0 }, ParsedVia::Lenient)), "{text}");
        }
    }

    #[test]
    fn failures_say_what_was_wrong() {
        let shape = parse("{\"score\": \"high\"}").unwrap_err();
        assert!(shape.contains("expected shape") && shape.contains("score: invalid type"), "{shape}");
        let missing = parse("```json\n{\"points\": 2}\n```").unwrap_err();
        assert!(missing.contains("missing field `score`"), "{missing}");
        let syntax = parse("{\"score\": 2,}").unwrap_err();
        assert!(syntax.contains("not valid JSON") && syntax.contains("trailing comma"), "{syntax}");
        assert_eq!(parse("no json here").unwrap_err(), "it contains no JSON object");
        assert_eq!(
            parse("{\"score\": 2").unwrap_err(),
            "it is not valid JSON: EOF while parsing an object at line 1 column 11"
        );
    }
}

#[cfg(test)]
mod schema_tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Proposal {
        artifact: String,
        confidence: f64,
        note: Option<String>,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Ideas {
        ideas: Vec<Proposal>,
    }

    #[test]
    fn bounds_reach_nested_definitions() {
        let (_, mut schema) = schema_of::<Ideas>();
        bound_properties(&mut schema, &[("ideas", 3), ("artifact", 50)]);
        assert_eq!(schema["properties"]["ideas"]["maxItems"], 3);
        assert_eq!(schema["$defs"]["Proposal"]["properties"]["artifact"]["maxLength"], 50);
    }

    #[test]
    fn the_schema_requires_what_the_type_requires() {
        let (name, schema) = schema_of::<Proposal>();
        assert_eq!(name, "Proposal");
        assert!(schema.get("$schema").is_none());
        assert_eq!(schema["type"], "object");
        let required: Vec<&str> = schema["required"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
        assert_eq!(required, ["artifact", "confidence"]);
        assert_eq!(schema["properties"]["confidence"]["type"], "number");
    }
}
