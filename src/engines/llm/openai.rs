//! OpenAI-compatible chat completions provider (OpenAI, DeepSeek, vLLM, llama.cpp, LM Studio,
//! Groq, OpenRouter, Mistral…): request building and a decoder for every reasoning shape.

use std::collections::BTreeMap;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::http::{self, ApiKey, HttpSettings, Remote, Wire};
use super::sse::SseBody;
use super::think_tags::{Segment, ThinkSplitter};
use super::wire::{self, DecodeStats, WireDecoder};
use super::{
    CallCtx, ChatRequest, Effort, EventStream, LlmError, Provider, Role, StopReason, StreamEvent,
    Usage,
};

const NAME: &str = "openai";

/// OpenAI-compatible chat completions (`POST {base_url}/chat/completions`). Cheap to clone.
#[derive(Clone, Debug)]
pub struct OpenAiProvider {
    remote: Remote,
}

impl OpenAiProvider {
    /// An empty base URL means `https://api.openai.com/v1`, which needs a key; other servers
    /// (llama.cpp, vLLM, LM Studio, a local Ollama) may run without one.
    pub fn new(settings: HttpSettings) -> Result<Self, LlmError> {
        let base = settings.base_url.trim();
        let key_required = base.is_empty() || base.contains("://api.openai.com");
        Ok(Self {
            remote: Remote::new(
                settings,
                OpenAiWire {
                    official: key_required,
                },
            )?,
        })
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        self.remote.name()
    }

    fn stream(&self, req: ChatRequest, ctx: CallCtx) -> EventStream {
        self.remote.stream(req, ctx)
    }
}

struct OpenAiWire {
    /// api.openai.com: needs a key and `max_completion_tokens`.
    official: bool,
}

impl Wire for OpenAiWire {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_base_url(&self) -> &'static str {
        "https://api.openai.com/v1"
    }

    fn required_key_env(&self) -> Option<&'static str> {
        self.official.then_some("OPENAI_API_KEY")
    }

    fn endpoint(&self, base_url: &str) -> String {
        format!("{base_url}/chat/completions")
    }

    fn body(&self, req: &ChatRequest, stream: bool) -> Value {
        let mut body = request_body(req, stream);
        if self.official
            && let Some(obj) = body.as_object_mut()
            && let Some(n) = obj.remove("max_tokens")
        {
            // OpenAI's reasoning models refuse `max_tokens`; every OpenAI model takes this.
            obj.insert("max_completion_tokens".into(), n);
        }
        body
    }

    fn auth_headers(&self, key: &ApiKey) -> Result<Vec<(HeaderName, HeaderValue)>, LlmError> {
        let value = http::secret_header(&format!("Bearer {}", key.expose()))?;
        Ok(vec![(reqwest::header::AUTHORIZATION, value)])
    }

    fn decoder(&self, settings: &HttpSettings) -> Box<dyn WireDecoder> {
        Box::new(OpenAiDecoder::new(settings.think_open))
    }
}

/// The JSON body of a chat completions call for any compatible server. `effort` becomes
/// `reasoning_effort` (`max` → `high`); api.openai.com gets `max_completion_tokens` instead
/// of `max_tokens`.
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
    let mut body = json!({
        "model": req.model,
        "messages": messages,
        "max_tokens": req.max_tokens,
        "stream": stream,
    });
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(p) = req.top_p {
        body["top_p"] = json!(p);
    }
    if let Some(s) = req.seed {
        body["seed"] = json!(s);
    }
    if let Some(effort) = req.effort {
        let e = match effort {
            Effort::Max => "high",
            other => other.as_str(),
        };
        body["reasoning_effort"] = json!(e);
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
    if let Some(name) = &req.tool_choice {
        body["tool_choice"] = json!({"type": "function", "function": {"name": name}});
    }
    if req.json_mode {
        body["response_format"] = json!({"type": "json_object"});
    }
    body
}

#[derive(Debug, Default)]
struct ToolAcc {
    id: String,
    name: String,
    args: String,
}

/// Decodes an OpenAI-compatible SSE stream (or a whole non-streaming body) into events.
#[derive(Debug)]
pub struct OpenAiDecoder {
    body: SseBody,
    think: ThinkSplitter,
    tools: BTreeMap<u64, ToolAcc>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

impl OpenAiDecoder {
    /// A decoder at the start of a body; `think_open` starts inside `<think>` (see [`ThinkSplitter`]).
    pub fn new(think_open: bool) -> Self {
        Self {
            body: SseBody::new(),
            think: ThinkSplitter::new(think_open),
            tools: BTreeMap::new(),
            finish_reason: None,
            usage: None,
        }
    }

    fn frame(&mut self, data: &str, out: &mut Vec<StreamEvent>) {
        if data.trim() == "[DONE]" {
            self.body.recognized += 1;
            self.end(out);
            return;
        }
        if let Some(values) = wire::parse_json_values(data) {
            for v in values {
                if self.body.done {
                    return;
                }
                self.chunk(&v, out);
            }
            return;
        }
        // Several lines glued into one frame, possibly ending in [DONE].
        for line in data.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if self.body.done {
                return;
            }
            if line == "[DONE]" {
                self.body.recognized += 1;
                self.end(out);
            } else if let Ok(v) = serde_json::from_str::<Value>(line) {
                self.chunk(&v, out);
            } else {
                self.body.skipped.malformed += 1;
                if self.body.first_bad.is_none() {
                    self.body.first_bad = Some(wire::snippet(line));
                }
            }
        }
    }

    fn chunk(&mut self, v: &Value, out: &mut Vec<StreamEvent>) {
        if !v.is_object() {
            self.body.skipped.unknown += 1;
            return;
        }
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            self.body.recognized += 1;
            let error = stream_error(err);
            self.flush_text(out);
            self.push_usage(out);
            out.push(StreamEvent::Error { error });
            self.body.done = true;
            return;
        }
        let mut known = false;
        // Groq reports streaming usage under `x_groq.usage`.
        let usage = v
            .get("usage")
            .or_else(|| v.get("x_groq").and_then(|x| x.get("usage")));
        if let Some(u) = usage.filter(|u| u.is_object()) {
            known = true;
            merge_usage(&mut self.usage, u);
        }
        if let Some(choices) = v.get("choices").and_then(Value::as_array) {
            known = true;
            let choice = choices
                .iter()
                .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
                .or_else(|| choices.first());
            if choices.len() > 1 {
                self.body.skipped.unknown += (choices.len() - 1) as u64;
            }
            if let Some(choice) = choice {
                if let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) {
                    self.delta(delta, out);
                }
                if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                    self.finish_reason = Some(reason.to_string());
                    self.flush_text(out);
                    self.push_tools(out);
                }
            }
        }
        if known {
            self.body.recognized += 1;
        } else {
            self.body.skipped.unknown += 1;
        }
    }

    fn delta(&mut self, delta: &Value, out: &mut Vec<StreamEvent>) {
        let mut details_had_text = false;
        if let Some(details) = delta.get("reasoning_details").and_then(Value::as_array) {
            for d in details {
                let text_field = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("");
                match text_field("type") {
                    "reasoning.text" | "reasoning.summary" => {
                        let text = if text_field("type") == "reasoning.text" {
                            text_field("text")
                        } else {
                            text_field("summary")
                        };
                        details_had_text = true;
                        if !text.is_empty() {
                            out.push(StreamEvent::ThinkingDelta {
                                text: text.to_string(),
                            });
                        }
                        let sig = text_field("signature");
                        if !sig.is_empty() {
                            out.push(StreamEvent::ThinkingSignature {
                                signature: sig.to_string(),
                            });
                        }
                    }
                    "reasoning.encrypted" => {
                        out.push(StreamEvent::RedactedThinking {
                            data: text_field("data").to_string(),
                        });
                    }
                    _ => self.body.skipped.unknown += 1,
                }
            }
        }
        if !details_had_text {
            let reasoning = ["reasoning_content", "reasoning"].iter().find_map(|k| {
                delta
                    .get(*k)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
            });
            if let Some(text) = reasoning {
                out.push(StreamEvent::ThinkingDelta {
                    text: text.to_string(),
                });
            }
        }
        match delta.get("content") {
            Some(Value::String(s)) => {
                let segs = self.think.push(s);
                push_segments(segs, out);
            }
            Some(Value::Array(parts)) => {
                for part in parts {
                    self.content_part(part, out);
                }
            }
            _ => {}
        }
        if let Some(refusal) = delta
            .get("refusal")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            out.push(StreamEvent::TextDelta {
                text: refusal.to_string(),
            });
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (pos, call) in calls.iter().enumerate() {
                let index = call
                    .get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(pos as u64);
                let acc = self.tools.entry(index).or_default();
                if let Some(id) = call
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                {
                    acc.id = id.to_string();
                }
                if let Some(f) = call.get("function") {
                    if let Some(name) = f
                        .get("name")
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        && acc.name.is_empty()
                    {
                        acc.name = name.to_string();
                    }
                    match f.get("arguments") {
                        Some(Value::String(a)) => acc.args.push_str(a),
                        Some(Value::Null) | None => {}
                        Some(obj) => acc.args = obj.to_string(),
                    }
                }
            }
        }
    }

    fn content_part(&mut self, part: &Value, out: &mut Vec<StreamEvent>) {
        match part.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => {
                if let Some(t) = part.get("text").and_then(Value::as_str) {
                    let segs = self.think.push(t);
                    push_segments(segs, out);
                }
            }
            "thinking" | "reasoning" => {
                let thinking = part.get("thinking").or_else(|| part.get("text"));
                let mut texts = Vec::new();
                match thinking {
                    Some(Value::String(s)) => texts.push(s.clone()),
                    Some(Value::Array(items)) => {
                        for it in items {
                            match it {
                                Value::String(s) => texts.push(s.clone()),
                                other => {
                                    if let Some(t) = other.get("text").and_then(Value::as_str) {
                                        texts.push(t.to_string());
                                    }
                                }
                            }
                        }
                    }
                    _ => {}
                }
                for text in texts.into_iter().filter(|t| !t.is_empty()) {
                    out.push(StreamEvent::ThinkingDelta { text });
                }
            }
            _ => self.body.skipped.unknown += 1,
        }
    }

    fn flush_text(&mut self, out: &mut Vec<StreamEvent>) {
        let segs = self.think.finish();
        push_segments(segs, out);
    }

    fn push_tools(&mut self, out: &mut Vec<StreamEvent>) {
        for (index, acc) in std::mem::take(&mut self.tools) {
            let input = if acc.args.trim().is_empty() {
                json!({})
            } else {
                // Unparseable arguments are kept as a string for the tolerant JSON extractor.
                serde_json::from_str(&acc.args).unwrap_or(Value::String(acc.args))
            };
            let id = if acc.id.is_empty() {
                format!("call_{index}")
            } else {
                acc.id
            };
            out.push(StreamEvent::ToolUse {
                id,
                name: acc.name,
                input,
            });
        }
    }

    fn push_usage(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(usage) = self.usage.take() {
            out.push(StreamEvent::Usage { usage });
        }
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) {
        self.flush_text(out);
        let had_tools = !self.tools.is_empty();
        self.push_tools(out);
        self.push_usage(out);
        let reason = match self.finish_reason.as_deref() {
            Some(r) => StopReason::from_wire(r),
            None if had_tools => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        out.push(StreamEvent::Stop { reason });
        self.body.done = true;
    }
}

fn push_segments(segs: Vec<Segment>, out: &mut Vec<StreamEvent>) {
    for seg in segs {
        out.push(match seg {
            Segment::Thinking(text) => StreamEvent::ThinkingDelta { text },
            Segment::Answer(text) => StreamEvent::TextDelta { text },
        });
    }
}

/// An error object that arrived inside a 200 stream (OpenRouter, vLLM, proxies).
fn stream_error(err: &Value) -> LlmError {
    let (kind, message) = match err {
        Value::String(s) => (None, s.clone()),
        other => {
            let text = |k: &str| {
                other.get(k).and_then(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Null => None,
                    n => Some(n.to_string()),
                })
            };
            (
                text("type").or_else(|| text("code")),
                text("message").unwrap_or_else(|| other.to_string()),
            )
        }
    };
    let message = wire::one_line(&message, 300);
    let kind_s = kind.clone().unwrap_or_default();
    let overloaded = kind_s.contains("overloaded")
        || kind_s == "529"
        || kind_s == "503"
        || message.to_ascii_lowercase().contains("overloaded");
    if overloaded {
        LlmError::Overloaded {
            provider: NAME.into(),
            message,
        }
    } else {
        LlmError::Api {
            provider: NAME.into(),
            kind: kind.unwrap_or_else(|| "error".into()),
            message,
        }
    }
}

/// Merges an OpenAI usage object into `acc` (counts are totals, so later values replace).
fn merge_usage(acc: &mut Option<Usage>, u: &Value) {
    let get = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    let usage = acc.get_or_insert_with(Usage::default);
    if let Some(n) = get(u, "prompt_tokens") {
        usage.input_tokens = n;
    }
    if let Some(n) = get(u, "completion_tokens") {
        usage.output_tokens = n;
    }
    if let Some(n) = u
        .get("completion_tokens_details")
        .and_then(|d| get(d, "reasoning_tokens"))
    {
        usage.thinking_tokens = Some(n);
    }
    if let Some(n) = u
        .get("prompt_tokens_details")
        .and_then(|d| get(d, "cached_tokens"))
    {
        usage.cache_read_tokens = Some(n);
    } else if let Some(n) = get(u, "prompt_cache_hit_tokens") {
        usage.cache_read_tokens = Some(n);
    }
}

impl WireDecoder for OpenAiDecoder {
    fn feed(&mut self, bytes: &[u8]) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        for frame in self.body.push(bytes) {
            self.frame(&frame.data, &mut out);
            if self.body.done {
                break;
            }
        }
        out
    }

    fn flush(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if !self.body.done {
            self.flush_text(&mut out);
            self.push_usage(&mut out);
        }
        out
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.body.done {
            return out;
        }
        for frame in self.body.finish() {
            self.frame(&frame.data, &mut out);
            if self.body.done {
                return out;
            }
        }
        if let Some(head) = self.body.take_head() {
            // No SSE frames at all: maybe a whole JSON body (non-streaming response or error).
            if let Ok(v) = serde_json::from_slice::<Value>(&head)
                && (v.get("choices").is_some() || v.get("error").is_some())
            {
                self.chunk(&v, &mut out);
                if !self.body.done {
                    self.end(&mut out);
                }
                return out;
            }
        }
        if self.finish_reason.is_some() {
            // finish_reason arrived; only [DONE] is missing.
            self.end(&mut out);
            return out;
        }
        self.flush_text(&mut out);
        self.push_usage(&mut out);
        let error = self.body.ended_early(
            NAME,
            "no chat completion chunks",
            "the stream ended without [DONE] or a finish_reason",
        );
        out.push(StreamEvent::Error { error });
        self.body.done = true;
        out
    }

    fn is_blank(&self) -> bool {
        self.body.is_blank()
    }

    fn stats(&self) -> DecodeStats {
        self.body.stats()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::engines::llm::{Message, ToolSpec};
    use proptest::prelude::*;

    fn decode(think_open: bool, chunks: &[&[u8]]) -> Vec<StreamEvent> {
        let mut d = OpenAiDecoder::new(think_open);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(d.feed(c));
        }
        out.extend(d.finish());
        out
    }

    /// Merges adjacent deltas of the same kind so chunkings compare equal.
    fn merged(events: Vec<StreamEvent>) -> Vec<StreamEvent> {
        let mut out: Vec<StreamEvent> = Vec::new();
        for ev in events {
            match (out.last_mut(), ev) {
                (
                    Some(StreamEvent::ThinkingDelta { text: a }),
                    StreamEvent::ThinkingDelta { text: b },
                ) => a.push_str(&b),
                (Some(StreamEvent::TextDelta { text: a }), StreamEvent::TextDelta { text: b }) => {
                    a.push_str(&b)
                }
                (_, ev) => out.push(ev),
            }
        }
        out
    }

    fn sse(chunks: &[Value]) -> String {
        let mut s: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        s.push_str("data: [DONE]\n\n");
        s
    }

    fn think(t: &str) -> StreamEvent {
        StreamEvent::ThinkingDelta { text: t.into() }
    }
    fn text(t: &str) -> StreamEvent {
        StreamEvent::TextDelta { text: t.into() }
    }

    #[test]
    fn reasoning_and_details_are_not_duplicated() {
        let body = sse(&[
            json!({"choices":[{"index":0,"delta":{"reasoning":"abc","reasoning_details":[{"type":"reasoning.text","text":"abc","format":"x","index":0}]}}]}),
            json!({"choices":[{"index":0,"delta":{"reasoning":null,"reasoning_details":[{"type":"reasoning.encrypted","data":"ENC","index":1}]}}]}),
            json!({"choices":[{"index":0,"delta":{"reasoning_content":"def","reasoning":"def"}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}),
        ]);
        let ev = decode(false, &[body.as_bytes()]);
        assert_eq!(
            ev,
            vec![
                think("abc"),
                StreamEvent::RedactedThinking { data: "ENC".into() },
                think("def"),
                text("Hi"),
                StreamEvent::Stop {
                    reason: StopReason::EndTurn
                }
            ]
        );
    }

    #[test]
    fn tool_call_arguments_are_assembled() {
        let body = sse(&[
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
            json!({"id":"other","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"completion_tokens_details":{"reasoning_tokens":3}}}),
        ]);
        let ev = decode(false, &[body.as_bytes()]);
        assert_eq!(
            ev,
            vec![
                StreamEvent::ToolUse {
                    id: "call_a".into(),
                    name: "f".into(),
                    input: json!({"q":"x"})
                },
                StreamEvent::Usage {
                    usage: Usage {
                        input_tokens: 5,
                        output_tokens: 7,
                        thinking_tokens: Some(3),
                        ..Usage::default()
                    }
                },
                StreamEvent::Stop {
                    reason: StopReason::ToolUse
                },
            ]
        );
    }

    #[test]
    fn magistral_content_parts() {
        let body = sse(&[
            json!({"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hmm"}]}]}}]}),
            json!({"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"ok"}]},"finish_reason":"stop"}]}),
        ]);
        assert_eq!(
            decode(false, &[body.as_bytes()]),
            vec![
                think("hmm"),
                text("ok"),
                StreamEvent::Stop {
                    reason: StopReason::EndTurn
                }
            ]
        );
    }

    #[test]
    fn missing_done_without_finish_reason_is_truncated_but_keeps_text() {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"part\"}}]}\n\n";
        let ev = decode(false, &[body.as_bytes()]);
        assert_eq!(ev[0], text("part"));
        assert!(matches!(
            ev[1],
            StreamEvent::Error {
                error: LlmError::Truncated { .. }
            }
        ));
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"length\"}]}\n\n";
        let ev = decode(false, &[body.as_bytes()]);
        assert_eq!(
            ev,
            vec![
                text("x"),
                StreamEvent::Stop {
                    reason: StopReason::MaxTokens
                }
            ]
        );
    }

    #[test]
    fn non_streaming_body() {
        let body = json!({"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"<think>a</think>b","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2}});
        let ev = decode(false, &[body.to_string().as_bytes()]);
        assert_eq!(
            ev,
            vec![
                think("a"),
                text("b"),
                StreamEvent::ToolUse {
                    id: "c1".into(),
                    name: "f".into(),
                    input: json!({})
                },
                StreamEvent::Usage {
                    usage: Usage {
                        input_tokens: 1,
                        output_tokens: 2,
                        ..Usage::default()
                    }
                },
                StreamEvent::Stop {
                    reason: StopReason::ToolUse
                },
            ]
        );
    }

    #[test]
    fn in_stream_error_object() {
        let body = "data: {\"error\":{\"code\":502,\"message\":\"Provider overloaded\"}}\n\n";
        let ev = decode(false, &[body.as_bytes()]);
        assert!(
            matches!(
                &ev[..],
                [StreamEvent::Error {
                    error: LlmError::Overloaded { .. }
                }]
            ),
            "{ev:?}"
        );
    }

    #[test]
    fn a_compaction_summary_travels_as_text() {
        let compacted =
            Message::assistant("the answer").with_compaction(crate::engines::llm::Compaction {
                summary: "we talked about hash maps".into(),
                encrypted_content: None,
            });
        let req = ChatRequest::new("m", vec![compacted, Message::user("and then?")]);
        let body = request_body(&req, true);
        let first = body["messages"][0]["content"].as_str().unwrap();
        assert!(first.contains("we talked about hash maps"), "{first}");
        assert!(first.ends_with("the answer"), "{first}");
        assert_eq!(body["messages"][1]["content"], "and then?");
    }

    #[test]
    fn request_body_shapes() {
        let mut req = ChatRequest::new("m", vec![Message::user("hi"), Message::assistant("yo")]);
        req.system = Some("sys".into());
        req.json_mode = true;
        req.seed = Some(7);
        req.effort = Some(Effort::Max);
        req.tools = vec![ToolSpec {
            name: "f".into(),
            description: "d".into(),
            input_schema: json!({"type":"object"}),
        }];
        req.tool_choice = Some("f".into());
        let b = request_body(&req, true);
        assert_eq!(b["messages"][0], json!({"role":"system","content":"sys"}));
        assert_eq!(b["messages"][2], json!({"role":"assistant","content":"yo"}));
        assert_eq!(b["stream_options"], json!({"include_usage":true}));
        assert_eq!(b["response_format"], json!({"type":"json_object"}));
        assert_eq!(b["reasoning_effort"], json!("high"));
        assert_eq!(b["seed"], json!(7));
        assert_eq!(
            b["tools"][0]["function"]["parameters"],
            json!({"type":"object"})
        );
        assert_eq!(
            b["tool_choice"],
            json!({"type":"function","function":{"name":"f"}})
        );
        assert!(request_body(&req, false).get("stream_options").is_none());
    }

    #[test]
    fn official_openai_gets_max_completion_tokens() {
        let req = ChatRequest::new("o4-mini", vec![Message::user("hi")]);
        let b = OpenAiWire { official: true }.body(&req, true);
        assert_eq!(b["max_completion_tokens"], json!(1024));
        assert!(b.get("max_tokens").is_none());
        let b = OpenAiWire { official: false }.body(&req, true);
        assert_eq!(b["max_tokens"], json!(1024));
        assert!(b.get("max_completion_tokens").is_none());
    }

    fn think_stream() -> String {
        sse(&[
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"<th"}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"ink>\nI reason é漢"}}]}),
            json!({"choices":[{"index":0,"delta":{"content":" more</thi"}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"nk>\n\nAnswer"}}]}),
            json!({"choices":[{"index":0,"delta":{"content":" done"},"finish_reason":"stop"}]}),
        ])
    }

    #[test]
    fn inline_think_tags_split_across_chunks() {
        let body = think_stream();
        assert_eq!(
            merged(decode(false, &[body.as_bytes()])),
            vec![
                think("I reason é漢 more"),
                text("Answer done"),
                StreamEvent::Stop {
                    reason: StopReason::EndTurn
                }
            ]
        );
    }

    proptest! {
        #[test]
        fn chunking_does_not_change_events(cuts in proptest::collection::vec(any::<usize>(), 0..20)) {
            let body = think_stream();
            let bytes = body.as_bytes();
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for p in points {
                chunks.push(&bytes[prev..p]);
                prev = p;
            }
            chunks.push(&bytes[prev..]);
            prop_assert_eq!(merged(decode(false, &chunks)), merged(decode(false, &[bytes])));
        }
    }
}
