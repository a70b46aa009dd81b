//! Tolerant JSON extraction: finds the first JSON object a model wrote in free text
//! (inside ```json fences or prose), forgiving trailing commas and single-quoted strings.

use serde_json::{Map, Value};

/// Why no JSON object could be read from a text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    #[error("no JSON object found in the model's answer")]
    NoObject,
    #[error("the model's JSON object is malformed: {0}")]
    Malformed(String),
}

/// The first balanced `{…}` in `text` that parses (after light repairs) as a JSON object.
pub fn extract_object(text: &str) -> Result<Map<String, Value>, ExtractError> {
    let mut first_error = None;
    let mut from = 0;
    while let Some(rel) = text[from..].find('{') {
        let start = from + rel;
        match balanced_end(&text[start..]) {
            Some(len) => {
                let candidate = &text[start..start + len];
                match parse_lenient(candidate) {
                    Ok(map) => return Ok(map),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            None => {
                // A truncated answer (the model ran out of tokens): close what is open.
                if let Some(map) = parse_truncated(&text[start..]) {
                    return Ok(map);
                }
                first_error.get_or_insert_with(|| "unbalanced braces".to_string());
            }
        }
        from = start + 1;
    }
    Err(first_error.map_or(ExtractError::NoObject, ExtractError::Malformed))
}

/// Length in bytes of the balanced object starting at `s[0] == '{'`, honouring strings.
fn balanced_end(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' if c == '"' || opens_single_quote(&s[..i]) => quote = Some(c),
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + c.len_utf8());
                }
            }
            _ => {}
        }
    }
    None
}

/// A `'` opens a string only where a JSON value or key may start (after `{ [ , :`), so
/// apostrophes inside bare words do not confuse the scan.
fn opens_single_quote(before: &str) -> bool {
    matches!(
        before.trim_end().chars().last(),
        Some('{' | '[' | ',' | ':')
    )
}

/// Parses an object cut off before its end: closed as it is, else cut back to each of its
/// last few commas (dropping a half-written member) and closed.
fn parse_truncated(s: &str) -> Option<Map<String, Value>> {
    let mut end = s.len();
    for _ in 0..8 {
        if let Ok(map) = parse_lenient(&close_truncated(&s[..end])) {
            return Some(map);
        }
        end = s[..end].rfind(',')?;
    }
    None
}

/// `s` (an object cut off before its end) with its open string, a dangling key or comma,
/// and its open arrays and objects closed.
fn close_truncated(s: &str) -> String {
    let mut stack = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' => quote = Some('"'),
            '\'' if opens_single_quote(&s[..i]) => quote = Some('\''),
            '{' => stack.push('}'),
            '[' => stack.push(']'),
            '}' | ']' => {
                stack.pop();
            }
            _ => {}
        }
    }
    let mut out = s.to_string();
    if escaped {
        out.pop();
    }
    if let Some(q) = quote {
        out.push(q);
    }
    // Drop a trailing comma (a value that never came) before closing.
    let trimmed = out.trim_end().trim_end_matches(',').len();
    out.truncate(trimmed);
    while let Some(close) = stack.pop() {
        out.push(close);
    }
    out
}

fn parse_lenient(candidate: &str) -> Result<Map<String, Value>, String> {
    let direct = serde_json::from_str::<Value>(candidate);
    let value = match direct {
        Ok(v) => v,
        Err(first) => {
            serde_json::from_str::<Value>(&normalise(candidate)).map_err(|_| first.to_string())?
        }
    };
    match value {
        Value::Object(map) => Ok(map),
        _ => Err("not an object".into()),
    }
}

/// Rewrites single-quoted strings as double-quoted ones and drops trailing commas.
fn normalise(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
                // `\'` is not a JSON escape; inside a rewritten string it is a plain quote.
                if c == '\'' && q == '\'' {
                    out.pop();
                }
                out.push(c);
            } else if c == '\\' {
                escaped = true;
                out.push(c);
            } else if c == q {
                quote = None;
                out.push('"');
            } else if c == '"' && q == '\'' {
                out.push_str("\\\"");
            } else {
                out.push(c);
            }
            continue;
        }
        match c {
            '"' => {
                quote = Some('"');
                out.push('"');
            }
            '\'' if opens_single_quote(&s[..i]) => {
                quote = Some('\'');
                out.push('"');
            }
            ',' => {
                let rest = s[i + 1..].trim_start();
                if !(rest.starts_with('}') || rest.starts_with(']')) {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_an_object_in_prose_and_fences() {
        let text = "Sure! Here it is:\n```json\n{\"a\": 1, \"b\": {\"c\": \"}\"}}\n```\nDone.";
        assert_eq!(
            Value::Object(extract_object(text).unwrap_or_default()),
            json!({"a": 1, "b": {"c": "}"}})
        );
    }

    #[test]
    fn forgives_trailing_commas_and_single_quotes() {
        let text = "{'conclusion': 'it\\'s fine', \"list\": [1, 2,], 'q': 'say \"hi\"',}";
        assert_eq!(
            Value::Object(extract_object(text).unwrap_or_default()),
            json!({"conclusion": "it's fine", "list": [1, 2], "q": "say \"hi\""})
        );
    }

    #[test]
    fn skips_a_broken_object_for_a_later_good_one() {
        let text = "{not json} then {\"ok\": true}";
        assert_eq!(
            Value::Object(extract_object(text).unwrap_or_default()),
            json!({"ok": true})
        );
    }

    #[test]
    fn reports_missing_and_malformed_objects() {
        assert_eq!(
            extract_object("no braces here"),
            Err(ExtractError::NoObject)
        );
        assert!(matches!(
            extract_object("{\"a\" 1}"),
            Err(ExtractError::Malformed(_))
        ));
    }

    #[test]
    fn truncated_objects_are_closed() {
        let text = "```json\n{\"conclusion\": \"Write tests\", \"keyInsights\": [\"fast feedback\", \"fewer bu";
        assert_eq!(
            Value::Object(extract_object(text).unwrap_or_default()),
            json!({"conclusion": "Write tests", "keyInsights": ["fast feedback", "fewer bu"]})
        );
        let text = "{\"a\": 1, \"b\":";
        assert_eq!(
            Value::Object(extract_object(text).unwrap_or_default()),
            json!({"a": 1})
        );
    }

    #[test]
    fn apostrophes_in_words_do_not_open_strings() {
        let text = "I don't know {\"a\": \"b\"}";
        assert_eq!(
            Value::Object(extract_object(text).unwrap_or_default()),
            json!({"a": "b"})
        );
    }
}
