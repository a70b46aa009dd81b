//! The lines of a Claude Code transcript as glassbox reads them: only the fields it uses,
//! each one tolerant of a value of the wrong type (it becomes `None` rather than failing the
//! line), and the small readers for timestamps and tool result content.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Accepts a string; anything else (null, numbers, objects) becomes `None` instead of failing
/// the whole line.
fn lenient_str<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any value")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
    d.deserialize_any(V)
}

/// Accepts a bool; anything else is `None`.
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Bool(b) => Some(b),
        _ => None,
    })
}

/// The fields of a transcript line glassbox reads; everything else is ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RawLine {
    #[serde(rename = "type", deserialize_with = "lenient_str")]
    pub kind: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub subtype: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub uuid: Option<String>,
    #[serde(rename = "parentUuid", deserialize_with = "lenient_str")]
    pub parent_uuid: Option<String>,
    #[serde(rename = "logicalParentUuid", deserialize_with = "lenient_str")]
    pub logical_parent_uuid: Option<String>,
    #[serde(rename = "isSidechain", deserialize_with = "lenient_bool")]
    pub is_sidechain: Option<bool>,
    #[serde(rename = "sessionId", deserialize_with = "lenient_str")]
    pub session_id: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub timestamp: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub cwd: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub version: Option<String>,
    #[serde(rename = "gitBranch", deserialize_with = "lenient_str")]
    pub git_branch: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub slug: Option<String>,
    #[serde(rename = "agentId", deserialize_with = "lenient_str")]
    pub agent_id: Option<String>,
    #[serde(rename = "requestId", deserialize_with = "lenient_str")]
    pub request_id: Option<String>,
    pub message: Option<RawMessage>,
    pub content: Option<Value>,
    #[serde(rename = "compactMetadata")]
    pub compact_metadata: Option<Value>,
    #[serde(rename = "isMeta", deserialize_with = "lenient_bool")]
    pub is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary", deserialize_with = "lenient_bool")]
    pub is_compact_summary: Option<bool>,
    #[serde(rename = "toolUseResult")]
    pub tool_use_result: Option<Value>,
    #[serde(deserialize_with = "lenient_str")]
    pub summary: Option<String>,
    #[serde(rename = "leafUuid", deserialize_with = "lenient_str")]
    pub leaf_uuid: Option<String>,
    #[serde(rename = "customTitle", deserialize_with = "lenient_str")]
    pub custom_title: Option<String>,
}

/// The API message inside `user` and `assistant` lines.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RawMessage {
    #[serde(deserialize_with = "lenient_str")]
    pub id: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub model: Option<String>,
    pub content: Option<Value>,
    #[serde(deserialize_with = "lenient_str")]
    pub stop_reason: Option<String>,
    pub usage: Option<Value>,
}

/// Parses one transcript line (without its newline). Only a JSON object is a line: serde
/// would also build a [`RawLine`] from an array of its fields in order, which no transcript
/// holds. The error is the reason the line is skipped.
pub(crate) fn parse_line(raw: &[u8]) -> Result<RawLine, String> {
    let text = std::str::from_utf8(raw)
        .map_err(|e| format!("not UTF-8 (invalid byte at column {})", e.valid_up_to() + 1))?;
    match raw.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        Some(b'[') => return Err("not a JSON object (an array)".into()),
        _ => {}
    }
    // From the checked text: the parser then does not check each string's UTF-8 again.
    serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))
}

pub(super) fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The text of a `tool_result` content (a string or text blocks).
pub(super) fn tool_result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let mut parts = Vec::new();
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = b.get("text").and_then(Value::as_str) {
                            parts.push(t.to_string());
                        }
                    }
                    Some("image") => parts.push("[image]".into()),
                    _ => {}
                }
            }
            parts.join("\n")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_object_is_a_line() {
        // An array of the fields in order would otherwise pass for a `user` line.
        let e = parse_line(br#"["user", null, "u1"]"#).unwrap_err();
        assert_eq!(e, "not a JSON object (an array)");
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(
            parse_line(deep.as_bytes()).unwrap_err(),
            "not a JSON object (an array)"
        );
        // Deep under a field that is read: serde_json's recursion limit.
        let deep = format!("{}1{}", r#"{"a":"#.repeat(100_000), "}".repeat(100_000));
        let line = format!(r#"{{"type":"user","content":{deep}}}"#);
        let e = parse_line(line.as_bytes()).unwrap_err();
        assert!(e.contains("recursion limit"), "{e}");
        // Under a field that is not: read past without recursion (no type, skipped later).
        let line = parse_line(deep.as_bytes()).unwrap();
        assert!(line.kind.is_none());
        assert!(parse_line(b"42").unwrap_err().starts_with("invalid JSON"));
        let line = parse_line(br#" {"type":"user"}"#).unwrap();
        assert_eq!(line.kind.as_deref(), Some("user"));
    }

    #[test]
    fn invalid_utf8_names_its_column() {
        let e = parse_line(b"{\"type\":\"user\",\"x\":\"\xff\"}").unwrap_err();
        assert_eq!(e, "not UTF-8 (invalid byte at column 21)");
    }
}
