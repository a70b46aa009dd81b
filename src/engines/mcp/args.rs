//! Tolerant reading of tool arguments: numbers and booleans may arrive as strings ("5",
//! "true"), explicit nulls count as absent, and every failure names the field.

use serde_json::{Map, Value};

/// Longest thought text accepted, in characters.
pub const MAX_THOUGHT_CHARS: usize = 200_000;
/// Longest branch id or thought type accepted, in characters.
pub const MAX_LABEL_CHARS: usize = 200;
/// Longest checkpoint correction accepted, in characters.
pub const MAX_CORRECTION_CHARS: usize = 5_000;

/// A tool argument that was missing or had the wrong shape; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArgError(pub String);

type Result<T> = std::result::Result<T, ArgError>;

/// The arguments of `sequentialthinking` (and, with the ledger extras, of `thought`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThoughtArgs {
    pub thought: String,
    pub next_thought_needed: bool,
    pub thought_number: u32,
    pub total_thoughts: u32,
    pub is_revision: Option<bool>,
    pub revises_thought: Option<u32>,
    pub branch_from_thought: Option<u32>,
    pub branch_id: Option<String>,
    pub needs_more_thoughts: Option<bool>,
    /// `thought` only: the session to write to (full id or unique prefix).
    pub session_id: Option<String>,
    /// `thought` only: what kind of thought this is (free text, e.g. "hypothesis").
    pub thought_type: Option<String>,
    /// `thought` only: ask the client's model for a critique through sampling.
    pub critique: bool,
}

impl ThoughtArgs {
    /// Reads the `sequentialthinking` fields from a tool call's arguments.
    pub fn parse(args: &Map<String, Value>) -> Result<Self> {
        let thought = required_string(args, "thought")?;
        if thought.trim().is_empty() {
            return Err(ArgError("thought must not be empty".into()));
        }
        if thought.chars().count() > MAX_THOUGHT_CHARS {
            return Err(ArgError(format!(
                "thought is longer than {MAX_THOUGHT_CHARS} characters"
            )));
        }
        Ok(Self {
            thought,
            next_thought_needed: required_bool(args, "nextThoughtNeeded")?,
            thought_number: required_count(args, "thoughtNumber")?,
            total_thoughts: required_count(args, "totalThoughts")?,
            is_revision: optional_bool(args, "isRevision")?,
            revises_thought: optional_count(args, "revisesThought")?,
            branch_from_thought: optional_count(args, "branchFromThought")?,
            branch_id: optional_label(args, "branchId")?,
            needs_more_thoughts: optional_bool(args, "needsMoreThoughts")?,
            session_id: None,
            thought_type: None,
            critique: false,
        })
    }

    /// Reads the `thought` tool's arguments: the `sequentialthinking` fields plus
    /// `sessionId`, `thoughtType` and `critique`.
    pub fn parse_ledger(args: &Map<String, Value>) -> Result<Self> {
        let mut t = Self::parse(args)?;
        t.session_id = optional_label(args, "sessionId")?;
        t.thought_type = optional_label(args, "thoughtType")?;
        t.critique = optional_bool(args, "critique")?.unwrap_or(false);
        Ok(t)
    }

    /// Whether this thought revises an earlier one (it names one, and does not say it is not
    /// a revision).
    pub fn revises(&self) -> Option<u32> {
        if self.is_revision == Some(false) {
            None
        } else {
            self.revises_thought
        }
    }
}

fn present<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    args.get(key).filter(|v| !v.is_null())
}

/// A required string field.
pub fn required_string(args: &Map<String, Value>, key: &str) -> Result<String> {
    match present(args, key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(ArgError(format!(
            "{key} must be a string, not {}",
            kind(other)
        ))),
        None => Err(ArgError(format!("{key} is required"))),
    }
}

/// An optional string field.
pub fn optional_string(args: &Map<String, Value>, key: &str) -> Result<Option<String>> {
    match present(args, key) {
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ArgError(format!(
            "{key} must be a string, not {}",
            kind(other)
        ))),
        None => Ok(None),
    }
}

/// An optional short label (trimmed, non-empty, at most [`MAX_LABEL_CHARS`]).
pub fn optional_label(args: &Map<String, Value>, key: &str) -> Result<Option<String>> {
    let Some(s) = optional_string(args, key)? else {
        return Ok(None);
    };
    let s = s.trim();
    if s.is_empty() {
        return Err(ArgError(format!("{key} must not be empty")));
    }
    if s.chars().count() > MAX_LABEL_CHARS {
        return Err(ArgError(format!(
            "{key} is longer than {MAX_LABEL_CHARS} characters"
        )));
    }
    Ok(Some(s.to_string()))
}

/// A required boolean; "true"/"false" strings (any case) count.
pub fn required_bool(args: &Map<String, Value>, key: &str) -> Result<bool> {
    optional_bool(args, key)?.ok_or_else(|| ArgError(format!("{key} is required (true or false)")))
}

/// An optional boolean; "true"/"false" strings (any case) count.
pub fn optional_bool(args: &Map<String, Value>, key: &str) -> Result<Option<bool>> {
    match present(args, key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.trim().eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(other) => Err(ArgError(format!(
            "{key} must be a boolean (true or false), not {}",
            show(other)
        ))),
    }
}

/// A required whole number ≥ 1; "5" strings count.
pub fn required_count(args: &Map<String, Value>, key: &str) -> Result<u32> {
    optional_count(args, key)?
        .ok_or_else(|| ArgError(format!("{key} is required (a whole number ≥ 1)")))
}

/// An optional whole number ≥ 1; "5" strings and integral floats (5.0) count.
pub fn optional_count(args: &Map<String, Value>, key: &str) -> Result<Option<u32>> {
    let Some(v) = present(args, key) else {
        return Ok(None);
    };
    let bad = || ArgError(format!("{key} must be a whole number ≥ 1, not {}", show(v)));
    let n: f64 = match v {
        Value::Number(n) => n.as_f64().ok_or_else(bad)?,
        Value::String(s) => s.trim().parse::<f64>().map_err(|_| bad())?,
        _ => return Err(bad()),
    };
    if !n.is_finite() || n.fract() != 0.0 || n < 1.0 || n > f64::from(u32::MAX) {
        return Err(bad());
    }
    Ok(Some(n as u32))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A short rendering of a bad value for an error message.
fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        let cut: String = s.chars().take(39).collect();
        format!("{cut}…")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn strings_count_as_numbers_and_booleans() {
        let t = ThoughtArgs::parse(&obj(json!({
            "thought": "x", "nextThoughtNeeded": "TRUE", "thoughtNumber": "3", "totalThoughts": 5.0,
            "isRevision": "false", "revisesThought": null, "branchId": " alt "
        })))
        .unwrap();
        assert!(t.next_thought_needed);
        assert_eq!((t.thought_number, t.total_thoughts), (3, 5));
        assert_eq!(t.is_revision, Some(false));
        assert_eq!(t.revises_thought, None);
        assert_eq!(t.branch_id.as_deref(), Some("alt"));
    }

    #[test]
    fn errors_name_the_field() {
        let base = json!({"thought": "x", "nextThoughtNeeded": true, "thoughtNumber": 1, "totalThoughts": 1});
        let with = |k: &str, v: Value| {
            let mut m = obj(base.clone());
            m.insert(k.into(), v);
            ThoughtArgs::parse(&m).unwrap_err().0
        };
        assert!(
            with("thoughtNumber", json!(0)).starts_with("thoughtNumber must be a whole number")
        );
        assert!(with("thoughtNumber", json!("abc")).contains("\"abc\""));
        assert!(with("totalThoughts", json!(2.5)).starts_with("totalThoughts"));
        assert!(
            with("nextThoughtNeeded", json!("maybe"))
                .starts_with("nextThoughtNeeded must be a boolean")
        );
        assert!(with("thought", json!(7)).starts_with("thought must be a string"));
        assert!(with("thought", json!("  ")).starts_with("thought must not be empty"));
        let mut m = obj(base);
        m.remove("thoughtNumber");
        assert_eq!(
            ThoughtArgs::parse(&m).unwrap_err().0,
            "thoughtNumber is required (a whole number ≥ 1)"
        );
    }

    #[test]
    fn a_revision_needs_a_target_and_may_be_denied() {
        let mut t = ThoughtArgs {
            revises_thought: Some(2),
            ..Default::default()
        };
        assert_eq!(t.revises(), Some(2));
        t.is_revision = Some(false);
        assert_eq!(t.revises(), None);
    }
}
