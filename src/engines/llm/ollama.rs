//! Ollama native `/api/chat` provider: NDJSON lines with `message.content`,
//! `message.thinking` (when `think` is on) and a final `done:true` line carrying usage.

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::http::{self, ApiKey, HttpSettings, Remote, Wire};
use super::think_tags::{Segment, ThinkSplitter};
use super::wire::{self, DecodeStats, WireDecoder};
use super::{
    CallCtx, ChatRequest, EventStream, LlmError, Provider, Role, StopReason, StreamEvent,
    ThinkingMode, Usage,
};

const NAME: &str = "ollama";

/// Ollama's native chat API (`POST {base_url}/api/chat`). Needs no key (a key, if given, is
/// sent as a Bearer token for hosted or proxied Ollama). Cheap to clone.
#[derive(Clone, Debug)]
pub struct OllamaProvider {
    remote: Remote,
}

impl OllamaProvider {
    /// An empty base URL means `http://localhost:11434`.
    pub fn new(settings: HttpSettings) -> Result<Self, LlmError> {
        Ok(Self {
            remote: Remote::new(settings, OllamaWire)?,
        })
    }
}

impl Provider for OllamaProvider {
    fn name(&self) -> &str {
        self.remote.name()
    }

    fn stream(&self, req: ChatRequest, ctx: CallCtx) -> EventStream {
        self.remote.stream(req, ctx)
    }
}

struct OllamaWire;

impl Wire for OllamaWire {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_base_url(&self) -> &'static str {
        "http://localhost:11434"
    }

    fn required_key_env(&self) -> Option<&'static str> {
        None
    }

    fn endpoint(&self, base_url: &str) -> String {
        format!("{base_url}/api/chat")
    }

    fn body(&self, req: &ChatRequest, stream: bool) -> Value {
        request_body(req, stream)
    }

    fn auth_headers(&self, key: &ApiKey) -> Result<Vec<(HeaderName, HeaderValue)>, LlmError> {
        let value = http::secret_header(&format!("Bearer {}", key.expose()))?;
        Ok(vec![(reqwest::header::AUTHORIZATION, value)])
    }

    fn decoder(&self, settings: &HttpSettings) -> Box<dyn WireDecoder> {
        Box::new(OllamaDecoder::new(settings.think_open))
    }
}

/// The JSON body of an `/api/chat` call; any thinking mode other than `Off` sends `think: true`.
pub fn request_body(req: &ChatRequest, stream: bool) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &req.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in &req.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        messages.push(json!({"role": role, "content": m.plain_text()}));
    }
    let mut options = json!({"num_predict": req.max_tokens});
    if let Some(t) = req.temperature {
        options["temperature"] = wire::sampling_number(t);
    }
    if let Some(p) = req.top_p {
        options["top_p"] = wire::sampling_number(p);
    }
    if let Some(s) = req.seed {
        options["seed"] = json!(s);
    }
    let mut body =
        json!({"model": req.model, "messages": messages, "stream": stream, "options": options});
    if req.thinking != ThinkingMode::Off {
        body["think"] = json!(true);
    }
    // Ollama constrains the answer to a JSON Schema given as `format`.
    if let Some(schema) = &req.schema {
        body["format"] = schema.input_schema.clone();
    } else if req.json_mode {
        body["format"] = json!("json");
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema}})
            })
            .collect();
        body["tools"] = json!(tools);
    }
    body
}

/// Splits bytes into lines (`\n`, optional `\r` before it), whatever the chunking.
#[derive(Debug, Default)]
pub struct LineSplitter {
    buf: Vec<u8>,
}

impl LineSplitter {
    /// Feeds bytes; returns the complete lines (lossily decoded, without terminators).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        let mut rest = bytes;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            self.buf.extend_from_slice(&rest[..pos]);
            lines.push(Self::decode(&std::mem::take(&mut self.buf)));
            rest = &rest[pos + 1..];
        }
        self.buf.extend_from_slice(rest);
        lines
    }

    /// Ends the input: returns the unterminated last line, if any.
    pub fn finish(&mut self) -> Option<String> {
        if self.buf.is_empty() {
            None
        } else {
            Some(Self::decode(&std::mem::take(&mut self.buf)))
        }
    }

    /// True while an unterminated line holds something other than whitespace.
    pub fn has_pending_text(&self) -> bool {
        self.buf.iter().any(|b| !b.is_ascii_whitespace())
    }

    fn decode(line: &[u8]) -> String {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        String::from_utf8_lossy(line).into_owned()
    }
}

/// Decodes Ollama `/api/chat` NDJSON (or one non-streaming JSON object) into events.
#[derive(Debug)]
pub struct OllamaDecoder {
    lines: LineSplitter,
    think: ThinkSplitter,
    done: bool,
    recognized: u64,
    nonblank_lines: u64,
    tool_count: u64,
    stats: DecodeStats,
    first_bad: Option<String>,
}

impl OllamaDecoder {
    /// A decoder at the start of a body; `think_open` as for [`ThinkSplitter`] (for inline tags).
    pub fn new(think_open: bool) -> Self {
        Self {
            lines: LineSplitter::default(),
            think: ThinkSplitter::new(think_open),
            done: false,
            recognized: 0,
            nonblank_lines: 0,
            tool_count: 0,
            stats: DecodeStats::default(),
            first_bad: None,
        }
    }

    fn line(&mut self, line: &str, out: &mut Vec<StreamEvent>) {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return;
        }
        self.nonblank_lines += 1;
        self.stats.frames += 1;
        let v: Value = match serde_json::from_str(trimmed) {
            Ok(v) => v,
            Err(_) => {
                self.stats.malformed += 1;
                if self.first_bad.is_none() {
                    self.first_bad = Some(wire::snippet(trimmed));
                }
                return;
            }
        };
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            self.recognized += 1;
            let message = match err {
                Value::String(s) => s.clone(),
                other => other
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| other.to_string()),
            };
            let message = wire::one_line(&message, 300);
            let error = if message.to_ascii_lowercase().contains("overloaded") {
                LlmError::Overloaded {
                    provider: NAME.into(),
                    message,
                }
            } else {
                LlmError::Api {
                    provider: NAME.into(),
                    kind: "error".into(),
                    message,
                }
            };
            self.flush_text(out);
            out.push(StreamEvent::Error { error });
            self.done = true;
            return;
        }
        let message = v.get("message");
        if message.is_none() && v.get("done").is_none() {
            self.stats.unknown += 1;
            return;
        }
        self.recognized += 1;
        if let Some(m) = message {
            if let Some(t) = m
                .get("thinking")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                out.push(StreamEvent::ThinkingDelta {
                    text: t.to_string(),
                });
            }
            if let Some(c) = m.get("content").and_then(Value::as_str) {
                for seg in self.think.push(c) {
                    out.push(match seg {
                        Segment::Thinking(text) => StreamEvent::ThinkingDelta { text },
                        Segment::Answer(text) => StreamEvent::TextDelta { text },
                    });
                }
            }
            if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
                self.flush_text(out);
                for call in calls {
                    let f = call.get("function").cloned().unwrap_or(Value::Null);
                    let name = f
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    let input = match f.get("arguments") {
                        Some(Value::String(s)) => {
                            serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                        }
                        Some(v) if !v.is_null() => v.clone(),
                        _ => json!({}),
                    };
                    let id = call
                        .get("id")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("call_{}", self.tool_count));
                    self.tool_count += 1;
                    out.push(StreamEvent::ToolUse { id, name, input });
                }
            }
        }
        if v.get("done").and_then(Value::as_bool) == Some(true) {
            self.flush_text(out);
            let get = |k: &str| v.get(k).and_then(Value::as_u64);
            if get("prompt_eval_count").is_some() || get("eval_count").is_some() {
                let usage = Usage {
                    input_tokens: get("prompt_eval_count").unwrap_or(0),
                    output_tokens: get("eval_count").unwrap_or(0),
                    ..Usage::default()
                };
                out.push(StreamEvent::Usage { usage });
            }
            let reason = match v.get("done_reason").and_then(Value::as_str) {
                Some(r) => StopReason::from_wire(r),
                None if self.tool_count > 0 => StopReason::ToolUse,
                None => StopReason::EndTurn,
            };
            let reason = if self.tool_count > 0 && reason == StopReason::EndTurn {
                StopReason::ToolUse
            } else {
                reason
            };
            out.push(StreamEvent::Stop { reason });
            self.done = true;
        }
    }

    fn flush_text(&mut self, out: &mut Vec<StreamEvent>) {
        for seg in self.think.finish() {
            out.push(match seg {
                Segment::Thinking(text) => StreamEvent::ThinkingDelta { text },
                Segment::Answer(text) => StreamEvent::TextDelta { text },
            });
        }
    }
}

impl WireDecoder for OllamaDecoder {
    fn feed(&mut self, bytes: &[u8]) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.done {
            return out;
        }
        for line in self.lines.push(bytes) {
            self.line(&line, &mut out);
            if self.done {
                break;
            }
        }
        out
    }

    fn flush(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if !self.done {
            self.flush_text(&mut out);
        }
        out
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.done {
            return out;
        }
        if let Some(last) = self.lines.finish() {
            self.line(&last, &mut out);
            if self.done {
                return out;
            }
        }
        self.flush_text(&mut out);
        let error = if self.recognized == 0 {
            let detail = format!(
                "no Ollama chat lines in the response ({} unparseable line(s)){}",
                self.stats.malformed,
                self.first_bad
                    .as_ref()
                    .map(|b| format!("; first: {b}"))
                    .unwrap_or_default()
            );
            LlmError::Malformed {
                provider: NAME.into(),
                detail,
            }
        } else {
            let detail = "the stream ended before the done:true line".to_string();
            LlmError::Truncated {
                provider: NAME.into(),
                detail,
            }
        };
        out.push(StreamEvent::Error { error });
        self.done = true;
        out
    }

    fn is_blank(&self) -> bool {
        self.nonblank_lines == 0 && !self.lines.has_pending_text()
    }

    fn stats(&self) -> DecodeStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::engines::llm::Message;
    use proptest::prelude::*;

    const STREAM: &str = concat!(
        "{\"model\":\"qwen3\",\"created_at\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"Hmm é\"},\"done\":false}\n",
        "{\"model\":\"qwen3\",\"created_at\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\" ok\"},\"done\":false}\r\n",
        "\n",
        "{\"model\":\"qwen3\",\"created_at\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"assistant\",\"content\":\"Four\"},\"done\":false}\n",
        "{\"model\":\"qwen3\",\"created_at\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"assistant\",\"content\":\".\"},\"done\":true,\"done_reason\":\"stop\",\"total_duration\":123456789,\"prompt_eval_count\":11,\"eval_count\":22}\n",
    );

    fn decode(chunks: &[&[u8]]) -> Vec<StreamEvent> {
        let mut d = OllamaDecoder::new(false);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(d.feed(c));
        }
        out.extend(d.finish());
        out
    }

    #[test]
    fn thinking_content_usage_and_stop() {
        assert_eq!(
            decode(&[STREAM.as_bytes()]),
            vec![
                StreamEvent::ThinkingDelta {
                    text: "Hmm é".into()
                },
                StreamEvent::ThinkingDelta { text: " ok".into() },
                StreamEvent::TextDelta {
                    text: "Four".into()
                },
                StreamEvent::TextDelta { text: ".".into() },
                StreamEvent::Usage {
                    usage: Usage {
                        input_tokens: 11,
                        output_tokens: 22,
                        ..Usage::default()
                    }
                },
                StreamEvent::Stop {
                    reason: StopReason::EndTurn
                },
            ]
        );
    }

    #[test]
    fn missing_done_is_truncated_and_error_line_is_error() {
        let cut = &STREAM[..STREAM.rfind("{\"model\"").unwrap()];
        let ev = decode(&[cut.as_bytes()]);
        assert!(matches!(
            ev.last(),
            Some(StreamEvent::Error {
                error: LlmError::Truncated { .. }
            })
        ));
        let ev = decode(&[b"{\"error\":\"model 'x' not found\"}"]);
        assert!(
            matches!(
                &ev[..],
                [StreamEvent::Error {
                    error: LlmError::Api { .. }
                }]
            ),
            "{ev:?}"
        );
    }

    #[test]
    fn request_body_shape() {
        let mut req = ChatRequest::new("qwen3", vec![Message::user("hi")]);
        req.thinking = ThinkingMode::Adaptive;
        req.json_mode = true;
        req.max_tokens = 50;
        let b = request_body(&req, true);
        assert_eq!(b["think"], json!(true));
        assert_eq!(b["format"], json!("json"));
        assert_eq!(b["options"]["num_predict"], json!(50));
        req.thinking = ThinkingMode::Off;
        assert!(request_body(&req, true).get("think").is_none());
    }

    proptest! {
        #[test]
        fn line_splitting_ignores_chunk_boundaries(
            lines in proptest::collection::vec("[a-z{}\":é漢\r]{0,10}", 0..12),
            cuts in proptest::collection::vec(any::<usize>(), 0..10),
        ) {
            let body = lines.join("\n");
            let bytes = body.as_bytes();
            let whole = {
                let mut s = LineSplitter::default();
                let mut v = s.push(bytes);
                v.extend(s.finish());
                v
            };
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut s = LineSplitter::default();
            let mut got = Vec::new();
            let mut prev = 0;
            for p in points {
                got.extend(s.push(&bytes[prev..p]));
                prev = p;
            }
            got.extend(s.push(&bytes[prev..]));
            got.extend(s.finish());
            prop_assert_eq!(got, whole);
        }

        #[test]
        fn decoder_ignores_chunk_boundaries(cuts in proptest::collection::vec(any::<usize>(), 0..20)) {
            let bytes = STREAM.as_bytes();
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for p in points {
                chunks.push(&bytes[prev..p]);
                prev = p;
            }
            chunks.push(&bytes[prev..]);
            prop_assert_eq!(decode(&chunks), decode(&[bytes]));
        }
    }
}
