//! OpenAI-compatible chat completions provider (OpenAI, DeepSeek, vLLM, llama.cpp, LM Studio,
//! Groq, OpenRouter, Mistral…): request building and a decoder for every reasoning shape.

use std::collections::BTreeMap;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::http::{self, ApiKey, HttpSettings, Remote, Wire};
use super::sse::{Frames, SseBody};
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

    fn supports_tools(&self) -> bool {
        true
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
        push_message(&mut messages, m);
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
        body["temperature"] = wire::sampling_number(t);
    }
    if let Some(p) = req.top_p {
        body["top_p"] = wire::sampling_number(p);
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

/// Appends one conversation message: results of tool calls become `role: "tool"` messages
/// (one per call, naming it by `tool_call_id`) ahead of any text; an assistant turn's calls
/// go in its `tool_calls`, with `content` null when it said nothing. Reasoning blocks are
/// not sent back (chat completions has no place for them).
fn push_message(messages: &mut Vec<Value>, m: &super::Message) {
    for r in &m.tool_results {
        let content = if r.is_error && !r.content.starts_with("error") {
            format!("error: {}", r.content)
        } else {
            r.content.clone()
        };
        messages.push(json!({"role": "tool", "tool_call_id": r.tool_use_id, "content": content}));
    }
    let text = m.plain_text();
    match m.role {
        Role::User if m.tool_results.is_empty() || !text.is_empty() => {
            messages.push(json!({"role": "user", "content": text}));
        }
        Role::User => {}
        Role::Assistant if m.tool_calls.is_empty() => {
            messages.push(json!({"role": "assistant", "content": text}));
        }
        Role::Assistant => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| {
                    // `arguments` is the JSON text of the input; input that did not parse
                    // was kept as the text the model sent.
                    let arguments = match &c.input {
                        Value::String(raw) => raw.clone(),
                        other => other.to_string(),
                    };
                    json!({"id": c.id, "type": "function",
                        "function": {"name": c.name, "arguments": arguments}})
                })
                .collect();
            let content = if text.is_empty() {
                Value::Null
            } else {
                json!(text)
            };
            messages.push(json!({"role": "assistant", "content": content, "tool_calls": calls}));
        }
    }
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
    /// The frames of the bytes being fed, kept for reuse.
    frames: Frames,
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
            frames: Frames::default(),
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
        let mut frames = std::mem::take(&mut self.frames);
        frames.clear();
        self.body.push_into(bytes, &mut frames);
        for frame in frames.iter() {
            self.frame(frame.data, &mut out);
            if self.body.done {
                break;
            }
        }
        self.frames = frames;
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
mod tests;
