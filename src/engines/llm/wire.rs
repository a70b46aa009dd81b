//! What every wire format shares, below the HTTP driver and the providers: the decoder
//! trait that turns body bytes into [`StreamEvent`]s, its counters, and the helpers that
//! read JSON data and quote bad input in one-line error messages.

use reqwest::StatusCode;
use serde_json::Value;

use super::StreamEvent;

/// What a wire decoder saw and skipped (unknown lines/events and unparseable data are never fatal).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeStats {
    /// Frames (SSE events or NDJSON lines) decoded.
    pub frames: u64,
    /// Comment / keep-alive lines skipped.
    pub comments: u64,
    /// Lines, events or fields of unknown kind skipped.
    pub unknown: u64,
    /// Data that did not parse as JSON.
    pub malformed: u64,
}

/// Turns one provider's response body bytes into [`StreamEvent`]s, whatever the chunking.
/// The same decoders serve live calls and replay of recorded raw bytes.
pub trait WireDecoder: Send {
    /// Feeds body bytes; returns the events they complete. Input after a terminal event
    /// (`Stop` or `Error`) is ignored.
    fn feed(&mut self, bytes: &[u8]) -> Vec<StreamEvent>;
    /// Events held back (partial text, usage so far) when the body breaks off; not terminal.
    fn flush(&mut self) -> Vec<StreamEvent>;
    /// The body ended: returns the remaining events, ending with `Stop` or `Error` unless a
    /// terminal event was already returned. A whole (non-streaming) JSON body is accepted too.
    fn finish(&mut self) -> Vec<StreamEvent>;
    /// True when nothing but whitespace and comments has arrived.
    fn is_blank(&self) -> bool;
    /// Counters of what was decoded and skipped.
    fn stats(&self) -> DecodeStats;
}

/// A sampling setting (temperature, top_p) as a JSON number: the decimal it was written as
/// (`0.7`), not the `f32` nearest to it widened to `f64` (`0.699999988079071`), which is
/// what a bare `json!(x)` sends.
pub fn sampling_number(x: f32) -> Value {
    x.to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// Turns an HTTP error body into `(error kind, one-line message)`. Understands Anthropic's
/// `{"type":"error","error":{"type","message"}}`, OpenAI's `{"error":{"message","type"|"code"}}`,
/// Ollama's `{"error":"…"}` and `{"detail"|"message": …}`; otherwise the body's first line.
pub fn error_message(status: u16, body: &[u8]) -> (Option<String>, String) {
    let mut kind = None;
    let mut message = None;
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        match v.get("error") {
            Some(Value::Object(o)) => {
                kind = o
                    .get("type")
                    .or_else(|| o.get("code"))
                    .and_then(value_as_text);
                message = o.get("message").and_then(value_as_text);
            }
            Some(other) => message = value_as_text(other),
            None => {}
        }
        if message.is_none() {
            message = v
                .get("message")
                .or_else(|| v.get("detail"))
                .and_then(value_as_text);
        }
    }
    let message = message.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string()
    });
    let mut message = one_line(&message, 300);
    if message.is_empty() {
        message = StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("no details")
            .to_string();
    }
    (kind, message)
}

fn value_as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Collapses whitespace runs (newlines included) to single spaces and cuts at `max` chars.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() > max {
        let mut cut: String = joined.chars().take(max).collect();
        cut.push('…');
        cut
    } else {
        joined
    }
}

/// A short, escaped excerpt of unparseable input for error messages (control bytes shown
/// as escapes, at most about 100 characters). Input that is mostly not text (invalid UTF-8
/// or control bytes) is named as such: an excerpt of it tells the reader nothing.
pub(crate) fn snippet(s: &str) -> String {
    let head: String = s.chars().take(100).collect();
    let odd = head
        .chars()
        .filter(|c| *c == char::REPLACEMENT_CHARACTER || (c.is_control() && !c.is_whitespace()))
        .count();
    let n = head.chars().count();
    if n >= 8 && odd * 4 > n {
        return "binary data, not text".into();
    }
    one_line(&format!("{head:?}"), 100)
}

/// All JSON values in an SSE data field (usually one; proxies sometimes glue several lines).
pub(crate) fn parse_json_values(data: &str) -> Option<Vec<Value>> {
    let mut values = Vec::new();
    for v in serde_json::Deserializer::from_str(data).into_iter::<Value>() {
        values.push(v.ok()?);
    }
    Some(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_numbers_go_out_as_written() {
        assert_eq!(sampling_number(0.7).to_string(), "0.7");
        assert_eq!(sampling_number(0.95).to_string(), "0.95");
        assert_eq!(sampling_number(1.0), serde_json::json!(1.0));
        assert_eq!(sampling_number(1e-7).to_string(), "1e-7");
        assert_eq!(sampling_number(f32::NAN), Value::Null);
        // What it is there for: the bare conversion widens the f32.
        assert_eq!(serde_json::json!(0.7f32).to_string(), "0.699999988079071");
    }

    #[test]
    fn error_bodies_become_one_line_messages() {
        let anthropic =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            error_message(529, anthropic),
            (Some("overloaded_error".into()), "Overloaded".into())
        );
        let openai =
            br#"{"error":{"message":"Rate limit\nreached","type":"requests","code":null}}"#;
        assert_eq!(
            error_message(429, openai),
            (Some("requests".into()), "Rate limit reached".into())
        );
        let ollama = br#"{"error":"model 'x' not found"}"#;
        assert_eq!(
            error_message(404, ollama),
            (None, "model 'x' not found".into())
        );
        assert_eq!(
            error_message(502, b"\n<html>\n Bad gateway </html>").1,
            "<html>"
        );
        assert_eq!(error_message(503, b"").1, "Service Unavailable");
        assert_eq!(
            error_message(422, br#"{"detail":"bad field"}"#).1,
            "bad field"
        );
    }

    #[test]
    fn glued_json_values_are_split_and_bad_data_rejected() {
        let values = parse_json_values(r#"{"a":1}{"b":2}"#);
        assert_eq!(values.map(|v| v.len()), Some(2));
        assert_eq!(parse_json_values("{\"a\":").map(|v| v.len()), None);
        assert_eq!(snippet("a\u{1}b"), "\"a\\u{1}b\"");
        assert_eq!(
            snippet("\0\u{1}\u{fffd}\u{fffd}M\u{fffd}\u{18}%0\u{fffd}"),
            "binary data, not text"
        );
        assert_eq!(
            snippet("<html>bad gateway</html>"),
            "\"<html>bad gateway</html>\""
        );
    }
}
