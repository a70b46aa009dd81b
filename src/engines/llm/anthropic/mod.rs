//! Anthropic Messages API provider: request building, the SSE event decoder (thinking,
//! signatures, redacted thinking, text, tool input, server-side compaction) and the
//! non-streaming message parser.

use std::collections::BTreeMap;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::http::{self, ApiKey, HttpSettings, Remote, Wire};
use super::sse::{Frames, SseBody};
use super::wire::{self, DecodeStats, WireDecoder};
use super::{
    CallCtx, ChatRequest, EventStream, LlmError, Provider, StopReason, StreamEvent, ThinkingMode,
    Usage,
};

const NAME: &str = "anthropic";

/// Beta flag that enables server-side context compaction.
pub const COMPACTION_BETA: &str = "compact-2026-01-12";
/// The `context_management` edit that asks for server-side compaction.
pub const COMPACTION_EDIT: &str = "compact_20260112";

/// Anthropic Messages API (`POST {base_url}/v1/messages`). Cheap to clone.
#[derive(Clone, Debug)]
pub struct AnthropicProvider {
    remote: Remote,
}

impl AnthropicProvider {
    /// Needs at least one key in `settings.keys`; an empty base URL means `https://api.anthropic.com`.
    pub fn new(settings: HttpSettings) -> Result<Self, LlmError> {
        Self::with_compaction(settings, false)
    }

    /// Like [`AnthropicProvider::new`]; with `compaction` every request opts in to
    /// server-side context compaction (the `compact-2026-01-12` beta and a
    /// `context_management` edit), and the stream may then carry a compaction block.
    pub fn with_compaction(mut settings: HttpSettings, compaction: bool) -> Result<Self, LlmError> {
        if compaction {
            add_beta(&mut settings.extra_headers, COMPACTION_BETA);
        }
        Ok(Self {
            remote: Remote::new(settings, AnthropicWire { compaction })?,
        })
    }
}

/// Adds `flag` to the `anthropic-beta` header, keeping flags already configured there
/// (an extra header replaces a built-in one of the same name, so they share one value).
fn add_beta(headers: &mut Vec<(String, String)>, flag: &str) {
    match headers
        .iter_mut()
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("anthropic-beta"))
    {
        Some((_, value)) => {
            if !value.split(',').any(|f| f.trim() == flag) {
                if value.trim().is_empty() {
                    *value = flag.to_string();
                } else {
                    value.push(',');
                    value.push_str(flag);
                }
            }
        }
        None => headers.push(("anthropic-beta".into(), flag.into())),
    }
}

impl Provider for AnthropicProvider {
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

struct AnthropicWire {
    compaction: bool,
}

impl Wire for AnthropicWire {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_base_url(&self) -> &'static str {
        "https://api.anthropic.com"
    }

    fn required_key_env(&self) -> Option<&'static str> {
        Some("ANTHROPIC_API_KEY")
    }

    fn endpoint(&self, base_url: &str) -> String {
        format!("{base_url}/v1/messages")
    }

    fn body(&self, req: &ChatRequest, stream: bool) -> Value {
        request_body_with(req, stream, self.compaction)
    }

    fn auth_headers(&self, key: &ApiKey) -> Result<Vec<(HeaderName, HeaderValue)>, LlmError> {
        Ok(vec![(
            HeaderName::from_static("x-api-key"),
            http::secret_header(key.expose())?,
        )])
    }

    fn fixed_headers(&self) -> Vec<(HeaderName, HeaderValue)> {
        vec![(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static("2023-06-01"),
        )]
    }

    fn decoder(&self, _settings: &HttpSettings) -> Box<dyn WireDecoder> {
        Box::new(AnthropicDecoder::new())
    }
}

/// The JSON body of a Messages API call without server-side compaction. A thinking budget
/// at or above `max_tokens` would be refused by the API, so `max_tokens` is raised to
/// budget + `max_tokens` in that case.
pub fn request_body(req: &ChatRequest, stream: bool) -> Value {
    request_body_with(req, stream, false)
}

/// The JSON body of a Messages API call. With `compaction` the request asks for server-side
/// compaction, and a message's compaction summary goes back as a `compaction` content block
/// ahead of its text (the API then drops everything before that block). Without it the
/// summary is restated as text, since the block is only accepted with the beta enabled.
pub fn request_body_with(req: &ChatRequest, stream: bool, compaction: bool) -> Value {
    let messages: Vec<Value> = req
        .messages
        .iter()
        .map(|m| message_json(m, compaction))
        .collect();
    let mut max_tokens = req.max_tokens;
    let mut body = json!({"model": req.model, "messages": messages, "stream": stream});
    if compaction {
        body["context_management"] = json!({"edits": [{"type": COMPACTION_EDIT}]});
    }
    match req.thinking {
        ThinkingMode::Off => {}
        ThinkingMode::Budget { tokens } => {
            if tokens >= max_tokens {
                max_tokens = tokens.saturating_add(max_tokens);
            }
            body["thinking"] = json!({"type": "enabled", "budget_tokens": tokens});
        }
        ThinkingMode::Adaptive => {
            body["thinking"] = json!({"type": "adaptive"});
            if let Some(effort) = req.effort {
                body["output_config"] = json!({"effort": effort.as_str()});
            }
        }
    }
    body["max_tokens"] = json!(max_tokens);
    if let Some(system) = &req.system {
        body["system"] = json!(system);
    }
    if let Some(t) = req.temperature {
        body["temperature"] = wire::sampling_number(t);
    }
    if let Some(p) = req.top_p {
        body["top_p"] = wire::sampling_number(p);
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        body["tools"] = json!(tools);
    }
    if let Some(name) = &req.tool_choice {
        body["tool_choice"] = json!({"type": "tool", "name": name});
    }
    body
}

/// One message of the `messages` array. Plain turns are one text; a compaction summary
/// goes first (as a block with the beta, else restated as text); a turn with tool calls,
/// tool results or signed reasoning is a list of blocks: tool results first (the API wants
/// them ahead of any text), then the summary, the reasoning, the text and the calls.
fn message_json(m: &super::Message, compaction: bool) -> Value {
    let role = match m.role {
        super::Role::User => "user",
        super::Role::Assistant => "assistant",
    };
    let mut blocks = Vec::new();
    for r in &m.tool_results {
        let mut b =
            json!({"type": "tool_result", "tool_use_id": r.tool_use_id, "content": r.content});
        if r.is_error {
            b["is_error"] = json!(true);
        }
        blocks.push(b);
    }
    let mut text = std::borrow::Cow::Borrowed(m.content.as_str());
    match &m.compaction {
        None => {}
        Some(c) if compaction => {
            // An empty summary is refused; null stands for a failed compaction.
            let mut block = json!({"type": "compaction", "content": null});
            if !c.summary.is_empty() {
                block["content"] = json!(c.summary);
            }
            if let Some(e) = &c.encrypted_content {
                block["encrypted_content"] = json!(e);
            }
            blocks.push(block);
        }
        Some(c) => {
            let mut t = format!("Summary of our conversation so far:\n{}", c.summary);
            if !m.content.is_empty() {
                t.push_str("\n\n");
                t.push_str(&m.content);
            }
            text = std::borrow::Cow::Owned(t);
        }
    }
    if blocks.is_empty() && !m.has_blocks() {
        return json!({"role": role, "content": text});
    }
    for t in &m.thinking {
        blocks.push(match t {
            super::ThinkingBlock::Thinking {
                thinking,
                signature,
            } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
            super::ThinkingBlock::Redacted { data } => {
                json!({"type": "redacted_thinking", "data": data})
            }
        });
    }
    if !text.is_empty() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for c in &m.tool_calls {
        // The API takes only an object; input that did not parse goes back empty (its
        // result already told the model it was unreadable).
        let input = if c.input.is_object() {
            c.input.clone()
        } else {
            json!({})
        };
        blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
    }
    json!({"role": role, "content": blocks})
}

#[derive(Debug)]
enum Block {
    Thinking {
        signature_sent: bool,
        signature: String,
    },
    Tool {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    /// A server-side compaction: whatever the start carried, replaced by the
    /// `compaction_delta`s once they come (the API sends the whole summary in one delta,
    /// but several are joined).
    Compaction {
        summary: String,
        encrypted: String,
        streamed: bool,
    },
    Other,
}

/// The common frame, a thinking or text delta, read without building a JSON tree. Anything
/// else (another event, another delta, a field of an unexpected type, a repeated key) fails
/// to read as this and takes the general path.
#[derive(serde::Deserialize)]
struct DeltaFrame<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    delta: TextDelta<'a>,
}

#[derive(serde::Deserialize)]
struct TextDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    thinking: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<std::borrow::Cow<'a, str>>,
}

/// A thinking or text delta in the layout the API writes it in —
/// `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"…"}}`
/// (or `text_delta` and `"text"`), without whitespace or padded with a space after each `:`
/// and `,` as some streams are — read by that layout: whether it is thinking, and its text.
/// `None` for any other layout, which [`DeltaFrame`] then reads; on the layout it reads the
/// same text. A delta is nearly every frame of a stream, and reading it this way takes a
/// fraction of what a JSON parser does.
fn laid_out_delta(data: &str) -> Option<(bool, std::borrow::Cow<'_, str>)> {
    let mut at = data.as_bytes();
    read(
        &mut at,
        [
            br#"{"type":"content_block_delta","index":"#,
            br#"{"type": "content_block_delta", "index": "#,
        ],
    )?;
    let digits = at.iter().take_while(|b| b.is_ascii_digit()).count();
    at = at.get(digits..).filter(|_| digits > 0)?;
    read(
        &mut at,
        [br#","delta":{"type":"#, br#", "delta": {"type": "#],
    )?;
    let thinking = read(
        &mut at,
        [
            br#""thinking_delta","thinking":""#,
            br#""thinking_delta", "thinking": ""#,
        ],
    )
    .is_some();
    if !thinking {
        read(
            &mut at,
            [br#""text_delta","text":""#, br#""text_delta", "text": ""#],
        )?;
    }
    let from = data.len() - at.len();
    // The string ends at the first quote that no backslash escapes (the byte after a
    // backslash is never the end: `\u` digits hold neither a quote nor a backslash).
    let (mut next, mut escaped) = (0, false);
    let end = loop {
        let hit = next + memchr::memchr2(b'"', b'\\', at.get(next..)?)?;
        if at[hit] == b'"' {
            break hit;
        }
        escaped = true;
        next = hit + 2;
    };
    if !matches!(at.get(end + 1..)?.trim_ascii_end(), b"}}" | b"} }") {
        return None;
    }
    let text = if escaped {
        // The literal with its quotes, unescaped by the JSON parser.
        std::borrow::Cow::Owned(serde_json::from_str(data.get(from - 1..from + end + 1)?).ok()?)
    } else {
        let raw = data.get(from..from + end)?;
        // A control character must be escaped in JSON: the parser's path refuses the frame.
        if raw.bytes().any(|b| b < 0x20) {
            return None;
        }
        std::borrow::Cow::Borrowed(raw)
    };
    Some((thinking, text))
}

/// Reads the start of `at` written `tight` (without whitespace) or `padded`.
fn read(at: &mut &[u8], [tight, padded]: [&[u8]; 2]) -> Option<()> {
    let rest = at.strip_prefix(tight).or_else(|| at.strip_prefix(padded))?;
    *at = rest;
    Some(())
}

/// Decodes an Anthropic SSE stream (or a whole non-streaming message body) into events.
#[derive(Debug)]
pub struct AnthropicDecoder {
    body: SseBody,
    /// The frames of the bytes being fed, kept for reuse.
    frames: Frames,
    blocks: BTreeMap<u64, Block>,
    usage: Option<Usage>,
    stop_reason: Option<String>,
    /// Bytes to reserve for the text the deltas of the bytes being fed are joined into: half
    /// of them, more than their text ever is, so that it is written once and never moved.
    reserve: usize,
}

impl Default for AnthropicDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl AnthropicDecoder {
    /// A decoder at the start of a response body.
    pub fn new() -> Self {
        Self {
            body: SseBody::new(),
            frames: Frames::default(),
            blocks: BTreeMap::new(),
            usage: None,
            stop_reason: None,
            reserve: 0,
        }
    }

    fn frame(&mut self, event_name: Option<&str>, data: &str, out: &mut Vec<StreamEvent>) {
        if self.delta_frame(data, out) {
            return;
        }
        match wire::parse_json_values(data) {
            Some(values) => {
                for v in values {
                    if self.body.done {
                        return;
                    }
                    self.event(event_name, &v, out);
                }
            }
            None => {
                self.body.skipped.malformed += 1;
                if self.body.first_bad.is_none() {
                    self.body.first_bad = Some(wire::snippet(data));
                }
            }
        }
    }

    /// Reads a thinking or text delta the quick way; false when `data` is something else.
    fn delta_frame(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> bool {
        let (thinking, text) = match laid_out_delta(data) {
            Some((thinking, text)) => (thinking, Some(text)),
            None => {
                let Ok(f) = serde_json::from_str::<DeltaFrame>(data) else {
                    return false;
                };
                match (f.kind.as_ref(), f.delta.kind.as_ref()) {
                    ("content_block_delta", "thinking_delta") => (true, f.delta.thinking),
                    ("content_block_delta", "text_delta") => (false, f.delta.text),
                    _ => return false,
                }
            }
        };
        if self.body.done {
            return true;
        }
        match (text, out.last_mut()) {
            (None, _) => {}
            (Some(text), _) if text.is_empty() => {}
            // Deltas of one read that follow each other are joined here, without a string
            // each: the driver would join them anyway.
            (Some(more), Some(StreamEvent::ThinkingDelta { text })) if thinking => {
                text.push_str(&more)
            }
            (Some(more), Some(StreamEvent::TextDelta { text })) if !thinking => {
                text.push_str(&more)
            }
            (Some(text), _) => {
                let mut joined = String::with_capacity(text.len().max(self.reserve));
                joined.push_str(&text);
                out.push(if thinking {
                    StreamEvent::ThinkingDelta { text: joined }
                } else {
                    StreamEvent::TextDelta { text: joined }
                });
            }
        }
        self.body.recognized += 1;
        true
    }

    fn event(&mut self, event_name: Option<&str>, v: &Value, out: &mut Vec<StreamEvent>) {
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .or(event_name)
            .unwrap_or("");
        match kind {
            "message_start" => {
                if let Some(u) = v.get("message").and_then(|m| m.get("usage")) {
                    merge_usage(&mut self.usage, u);
                }
            }
            "content_block_start" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                let block = v.get("content_block").cloned().unwrap_or(Value::Null);
                self.block_start(index, &block, out);
            }
            "content_block_delta" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                self.block_delta(index, &delta, out);
            }
            "content_block_stop" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                self.block_stop(index, out);
            }
            "message_delta" => {
                if let Some(r) = v
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(r.to_string());
                }
                if let Some(u) = v.get("usage") {
                    merge_usage(&mut self.usage, u);
                }
            }
            "message_stop" => {
                self.end(out);
            }
            "ping" => {}
            "error" => {
                let err = v.get("error").cloned().unwrap_or(Value::Null);
                let etype = err
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("error")
                    .to_string();
                let message = err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error");
                let message = wire::one_line(message, 300);
                let error = if etype == "overloaded_error" {
                    LlmError::Overloaded {
                        provider: NAME.into(),
                        message,
                    }
                } else {
                    LlmError::Api {
                        provider: NAME.into(),
                        kind: etype,
                        message,
                    }
                };
                self.push_usage(out);
                out.push(StreamEvent::Error { error });
                self.body.done = true;
            }
            "message" => {
                // A whole non-streaming message (proxy ignored `stream`, or fallback call).
                self.body.recognized += 1;
                self.whole_message(v, out);
                return;
            }
            _ => {
                self.body.skipped.unknown += 1;
                return;
            }
        }
        self.body.recognized += 1;
    }

    fn block_start(&mut self, index: u64, block: &Value, out: &mut Vec<StreamEvent>) {
        let text_of = |k: &str| {
            block
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let b = match block.get("type").and_then(Value::as_str).unwrap_or("") {
            "thinking" => {
                let thinking = text_of("thinking");
                if !thinking.is_empty() {
                    out.push(StreamEvent::ThinkingDelta { text: thinking });
                }
                Block::Thinking {
                    signature_sent: false,
                    signature: text_of("signature"),
                }
            }
            "redacted_thinking" => {
                out.push(StreamEvent::RedactedThinking {
                    data: text_of("data"),
                });
                Block::Other
            }
            "text" => {
                let text = text_of("text");
                if !text.is_empty() {
                    out.push(StreamEvent::TextDelta { text });
                }
                Block::Other
            }
            "compaction" => Block::Compaction {
                summary: text_of("content"),
                encrypted: text_of("encrypted_content"),
                streamed: false,
            },
            "tool_use" | "server_tool_use" => Block::Tool {
                id: text_of("id"),
                name: text_of("name"),
                json: String::new(),
                initial: block.get("input").cloned().unwrap_or(Value::Null),
            },
            _ => {
                self.body.skipped.unknown += 1;
                Block::Other
            }
        };
        self.blocks.insert(index, b);
    }

    fn block_delta(&mut self, index: u64, delta: &Value, out: &mut Vec<StreamEvent>) {
        let field = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or("");
        match delta.get("type").and_then(Value::as_str).unwrap_or("") {
            "thinking_delta" => {
                let text = field("thinking");
                if !text.is_empty() {
                    out.push(StreamEvent::ThinkingDelta {
                        text: text.to_string(),
                    });
                }
            }
            "signature_delta" => {
                let signature = field("signature").to_string();
                if let Some(Block::Thinking { signature_sent, .. }) = self.blocks.get_mut(&index) {
                    *signature_sent = true;
                }
                out.push(StreamEvent::ThinkingSignature { signature });
            }
            "text_delta" => {
                let text = field("text");
                if !text.is_empty() {
                    out.push(StreamEvent::TextDelta {
                        text: text.to_string(),
                    });
                }
            }
            "input_json_delta" => {
                if let Some(Block::Tool { json, .. }) = self.blocks.get_mut(&index) {
                    json.push_str(field("partial_json"));
                } else {
                    self.body.skipped.unknown += 1;
                }
            }
            "compaction_delta" => {
                if let Some(Block::Compaction {
                    summary,
                    encrypted,
                    streamed,
                }) = self.blocks.get_mut(&index)
                {
                    if !*streamed {
                        summary.clear();
                        encrypted.clear();
                        *streamed = true;
                    }
                    // `content` is null when the compaction failed; nothing is reported then.
                    summary.push_str(field("content"));
                    encrypted.push_str(field("encrypted_content"));
                } else {
                    self.body.skipped.unknown += 1;
                }
            }
            _ => self.body.skipped.unknown += 1,
        }
    }

    fn block_stop(&mut self, index: u64, out: &mut Vec<StreamEvent>) {
        match self.blocks.remove(&index) {
            Some(Block::Thinking {
                signature_sent: false,
                signature,
            }) if !signature.is_empty() => {
                out.push(StreamEvent::ThinkingSignature { signature });
            }
            Some(Block::Tool {
                id,
                name,
                json,
                initial,
            }) => {
                let input = if json.trim().is_empty() {
                    if initial.is_null() {
                        json!({})
                    } else {
                        initial
                    }
                } else {
                    // Unparseable input is kept as a string for the tolerant JSON extractor.
                    serde_json::from_str(&json).unwrap_or(Value::String(json))
                };
                out.push(StreamEvent::ToolUse { id, name, input });
            }
            Some(Block::Compaction {
                summary, encrypted, ..
            }) if !summary.is_empty() || !encrypted.is_empty() => {
                out.push(StreamEvent::Compaction {
                    summary,
                    encrypted_content: (!encrypted.is_empty()).then_some(encrypted),
                });
            }
            _ => {}
        }
    }

    fn whole_message(&mut self, msg: &Value, out: &mut Vec<StreamEvent>) {
        if let Some(content) = msg.get("content").and_then(Value::as_array) {
            for (i, block) in content.iter().enumerate() {
                let index = i as u64;
                self.block_start(index, block, out);
                if let (Some(Block::Tool { json, .. }), Some(input)) =
                    (self.blocks.get_mut(&index), block.get("input"))
                {
                    *json = input.to_string();
                }
                self.block_stop(index, out);
            }
        }
        if let Some(r) = msg.get("stop_reason").and_then(Value::as_str) {
            self.stop_reason = Some(r.to_string());
        }
        if let Some(u) = msg.get("usage") {
            merge_usage(&mut self.usage, u);
        }
        self.end(out);
    }

    fn push_usage(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(usage) = self.usage.take() {
            out.push(StreamEvent::Usage { usage });
        }
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) {
        self.push_usage(out);
        let reason = self
            .stop_reason
            .as_deref()
            .map(StopReason::from_wire)
            .unwrap_or(StopReason::EndTurn);
        out.push(StreamEvent::Stop { reason });
        self.body.done = true;
    }
}

impl WireDecoder for AnthropicDecoder {
    fn feed(&mut self, bytes: &[u8]) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        let mut frames = std::mem::take(&mut self.frames);
        frames.clear();
        self.body.push_into(bytes, &mut frames);
        self.reserve = bytes.len() / 2;
        for frame in frames.iter() {
            self.frame(frame.event, frame.data, &mut out);
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
            self.frame(frame.event.as_deref(), &frame.data, &mut out);
            if self.body.done {
                return out;
            }
        }
        if let Some(head) = self.body.take_head() {
            // No SSE frames at all: maybe a whole JSON body.
            if let Ok(v) = serde_json::from_slice::<Value>(&head) {
                if v.get("error").is_some() {
                    let (kind, message) = wire::error_message(200, &head);
                    let kind = kind.unwrap_or_else(|| "error".into());
                    let error = if kind == "overloaded_error" {
                        LlmError::Overloaded {
                            provider: NAME.into(),
                            message,
                        }
                    } else {
                        LlmError::Api {
                            provider: NAME.into(),
                            kind,
                            message,
                        }
                    };
                    out.push(StreamEvent::Error { error });
                    self.body.done = true;
                    return out;
                }
                if v.get("content").is_some() {
                    self.whole_message(&v, &mut out);
                    return out;
                }
            }
        }
        self.push_usage(&mut out);
        if self.stop_reason.is_some() {
            // message_delta with the stop reason arrived; only message_stop is missing.
            self.end(&mut out);
            return out;
        }
        let error = self.body.ended_early(
            NAME,
            "no Anthropic events",
            "the stream ended before message_stop",
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

/// Merges an Anthropic usage object (cumulative counts) into `acc`.
fn merge_usage(acc: &mut Option<Usage>, u: &Value) {
    let get = |k: &str| u.get(k).and_then(Value::as_u64);
    let usage = acc.get_or_insert_with(Usage::default);
    if let Some(n) = get("input_tokens") {
        usage.input_tokens = n;
    }
    if let Some(n) = get("output_tokens") {
        usage.output_tokens = n;
    }
    if let Some(n) = get("cache_read_input_tokens") {
        usage.cache_read_tokens = Some(n);
    }
    if let Some(n) = get("cache_creation_input_tokens") {
        usage.cache_creation_tokens = Some(n);
    }
    if let Some(n) = u
        .get("output_tokens_details")
        .and_then(|d| d.get("thinking_tokens"))
        .and_then(Value::as_u64)
    {
        usage.thinking_tokens = Some(n);
    }
}

#[cfg(test)]
mod tests;
