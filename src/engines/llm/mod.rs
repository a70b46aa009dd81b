//! Model providers: one streaming call in, a stream of typed events out.
//!
//! Every provider speaks the same [`Provider`] trait so engines never care whether the
//! tokens come from a remote API, the embedded local model or a recorded stream.

use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// How hard the model should think; maps to a thinking-token budget from the config.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Low,
    Medium,
    High,
    Max,
}

impl Effort {
    /// Every level, lowest first.
    pub const ALL: [Effort; 4] = [Effort::Low, Effort::Medium, Effort::High, Effort::Max];

    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Max => "max",
        }
    }
}

/// Who said a message in a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One turn of conversation history. Earlier thinking is restated as text when it is sent
/// back, since signed thinking cannot be edited.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Assistant turns only: what the provider wrote when it compacted the context (see
    /// [`StreamEvent::Compaction`]). It is sent back ahead of `content`, and the provider
    /// then ignores everything that came before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
    /// Assistant turns that called tools: the signed reasoning that came before the calls,
    /// sent back exactly as it arrived (Anthropic checks the signatures and wants it ahead
    /// of the calls while thinking is on). Providers without such blocks leave it out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<ThinkingBlock>,
    /// Assistant turns: the tools the model called, after `content`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// User turns: what those calls returned, ahead of `content`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResult>,
}

/// One reasoning block of an assistant turn, as the provider sent it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum ThinkingBlock {
    Thinking { thinking: String, signature: String },
    Redacted { data: String },
}

/// A tool call the model made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call, which its result names.
    pub id: String,
    pub name: String,
    pub input: serde_json::Value,
}

/// What a tool call returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call ([`ToolCall::id`]).
    pub tool_use_id: String,
    pub content: String,
    /// The call failed; `content` says why.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// A provider's server-side compaction of the conversation, as it is sent back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    /// The summary that stands for everything before it.
    pub summary: String,
    /// Opaque provider state that goes back verbatim with the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: text.into(),
            compaction: None,
            thinking: Vec::new(),
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
        }
    }
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: text.into(),
            compaction: None,
            thinking: Vec::new(),
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
        }
    }
    /// An assistant turn that said `text` (maybe nothing) after `thinking` and then called
    /// `calls`.
    pub fn tool_calls(
        text: impl Into<String>,
        thinking: Vec<ThinkingBlock>,
        calls: Vec<ToolCall>,
    ) -> Self {
        Self {
            thinking,
            tool_calls: calls,
            ..Self::assistant(text)
        }
    }
    /// The user turn that hands the model the results of its calls.
    pub fn tool_results(results: Vec<ToolResult>) -> Self {
        Self {
            tool_results: results,
            ..Self::user("")
        }
    }
    /// Whether the message carries tool calls, tool results or reasoning blocks, which
    /// need structured content rather than one text.
    pub fn has_blocks(&self) -> bool {
        !self.thinking.is_empty() || !self.tool_calls.is_empty() || !self.tool_results.is_empty()
    }
    /// The text to send to a provider that has no compaction blocks of its own: a
    /// compaction summary (from an Anthropic session continued elsewhere) comes first, so
    /// the earlier conversation it stands for is not lost.
    pub fn plain_text(&self) -> std::borrow::Cow<'_, str> {
        match &self.compaction {
            Some(c) if !c.summary.is_empty() => std::borrow::Cow::Owned(format!(
                "[Summary of the earlier conversation]\n{}\n\n{}",
                c.summary, self.content
            )),
            _ => std::borrow::Cow::Borrowed(&self.content),
        }
    }

    /// This message opened by a provider compaction.
    pub fn with_compaction(mut self, compaction: Compaction) -> Self {
        self.compaction = Some(compaction);
        self
    }
}

/// A tool the model may call: structured output, or an operation it may use (memory).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the tool's input.
    pub input_schema: serde_json::Value,
}

impl ToolSpec {
    /// The tool (or answer structure) whose input is a `T`: its JSON Schema derived from the
    /// type, with every sub-schema inlined (no `$ref`), so that a provider's tool schema and
    /// the local grammar come from the one type the engine reads the answer into.
    pub fn of<T: schemars::JsonSchema>(name: &str, description: &str) -> Self {
        let generator = schemars::generate::SchemaSettings::draft2020_12()
            .with(|s| s.inline_subschemas = true)
            .into_generator();
        let mut schema = generator.into_root_schema_for::<T>().to_value();
        if let serde_json::Value::Object(m) = &mut schema {
            m.remove("$schema");
            m.remove("title");
        }
        Self {
            name: name.into(),
            description: description.into(),
            input_schema: schema,
        }
    }
}

/// How the provider should think before answering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum ThinkingMode {
    /// No extended thinking requested.
    Off,
    /// A fixed budget of thinking tokens.
    Budget { tokens: u32 },
    /// The model decides how much to think (Anthropic adaptive thinking).
    Adaptive,
}

/// Thinking settings of one turn: the provider's thinking mode, the effort asked for, and
/// the token cap (which, where the provider counts thinking inside it, includes the
/// thinking budget).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TurnPlan {
    pub thinking: ThinkingMode,
    pub effort: Option<Effort>,
    pub max_tokens: u32,
}

/// A request's temperature or top_p as written (`0.7`), as the providers are sent it (see
/// [`wire::sampling_number`]), so the recorded request says what was asked.
fn sampling_setting<S: serde::Serializer>(x: &Option<f32>, s: S) -> Result<S::Ok, S::Error> {
    match x {
        Some(x) => serde::Serialize::serialize(&wire::sampling_number(*x), s),
        None => s.serialize_none(),
    }
}

/// One streaming model call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    pub system: Option<String>,
    pub messages: Vec<Message>,
    pub max_tokens: u32,
    #[serde(serialize_with = "sampling_setting")]
    pub temperature: Option<f32>,
    #[serde(serialize_with = "sampling_setting")]
    pub top_p: Option<f32>,
    pub seed: Option<u64>,
    pub thinking: ThinkingMode,
    pub effort: Option<Effort>,
    pub tools: Vec<ToolSpec>,
    /// Force the model to call this tool (structured output).
    pub tool_choice: Option<String>,
    /// Ask for a JSON object answer where the provider supports it.
    pub json_mode: bool,
    /// The structure the answer must have, from the Rust type the engine reads it into
    /// ([`ToolSpec::of`]). The local model samples under the grammar compiled from its schema,
    /// so the answer always parses; remote providers get it through `tools`/`tool_choice`
    /// where the engine uses them, else through the answer template in the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<ToolSpec>,
}

impl ChatRequest {
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            system: None,
            messages,
            max_tokens: 1024,
            temperature: None,
            top_p: None,
            seed: None,
            thinking: ThinkingMode::Off,
            effort: None,
            tools: Vec::new(),
            tool_choice: None,
            json_mode: false,
            schema: None,
        }
    }
}

/// Token counts; providers report them cumulatively, so the last one seen is the total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_tokens: Option<u64>,
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    StopSequence,
    ToolUse,
    Refusal,
    Cancelled,
    Other(String),
}

impl StopReason {
    /// Maps the provider's stop/finish reason string onto ours.
    pub fn from_wire(s: &str) -> Self {
        match s {
            "end_turn" | "stop" | "eos" => StopReason::EndTurn,
            "max_tokens" | "length" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "tool_use" | "tool_calls" | "function_call" => StopReason::ToolUse,
            "refusal" | "content_filter" => StopReason::Refusal,
            other => StopReason::Other(other.to_string()),
        }
    }
}

/// What a provider stream yields. A stream ends after `Stop` or `Error`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum StreamEvent {
    ThinkingDelta {
        text: String,
    },
    ThinkingSignature {
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    /// The provider compacted the conversation server-side (Anthropic `compaction` block):
    /// `summary` replaces everything before this response and must be sent back with it.
    Compaction {
        summary: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
    },
    TextDelta {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: serde_json::Value,
    },
    Usage {
        usage: Usage,
    },
    Stop {
        reason: StopReason,
    },
    Error {
        error: LlmError,
    },
}

/// Failures of a model call. Messages never contain API keys.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "error")]
pub enum LlmError {
    #[error("{provider}: HTTP {status}: {message}")]
    Http {
        provider: String,
        status: u16,
        message: String,
    },
    #[error("{provider}: rate limited (HTTP 429) after {attempts} attempt(s): {message}")]
    RateLimited {
        provider: String,
        attempts: u32,
        message: String,
    },
    #[error("{provider}: overloaded: {message}")]
    Overloaded { provider: String, message: String },
    #[error("{provider}: could not connect to {url}: {reason}")]
    Connect {
        provider: String,
        url: String,
        reason: String,
    },
    #[error("{provider}: stream stalled: no bytes for {secs} s")]
    Stalled { provider: String, secs: u64 },
    #[error("{provider}: stream ended before the response was complete: {detail}")]
    Truncated { provider: String, detail: String },
    #[error("{provider}: malformed stream data: {detail}")]
    Malformed { provider: String, detail: String },
    #[error("{provider}: {message}")]
    Api {
        provider: String,
        kind: String,
        message: String,
    },
    #[error("cancelled")]
    Cancelled,
    #[error("configuration: {message}")]
    Config { message: String },
    #[error("local model: {message}")]
    Local { message: String },
}

/// One piece of a provider's response exactly as received, with when it arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawChunk {
    /// Time since the request was sent.
    pub offset: Duration,
    pub bytes: Bytes,
}

/// Where a provider reports the raw bytes it receives, for recording and replay.
pub type RawSink = tokio::sync::mpsc::UnboundedSender<RawChunk>;

/// Per-call context: cancellation and an optional raw-byte recorder.
#[derive(Clone, Debug, Default)]
pub struct CallCtx {
    pub cancel: CancellationToken,
    pub raw: Option<RawSink>,
}

/// The stream a provider returns.
pub type EventStream = BoxStream<'static, StreamEvent>;

/// A model backend. `stream` never fails up front: failures arrive as a final
/// [`StreamEvent::Error`], after whatever was received before them.
pub trait Provider: Send + Sync {
    /// Short provider name for the status bar and stored metadata (`anthropic`, `local`, …).
    fn name(&self) -> &str;
    /// Starts one streaming call.
    fn stream(&self, req: ChatRequest, ctx: CallCtx) -> EventStream;
    /// Whether the provider takes `ChatRequest::tools` and sends tool calls and their
    /// results back and forth ([`Message::tool_calls`], [`Message::tool_results`]).
    fn supports_tools(&self) -> bool {
        false
    }
}

// Wire formats and remote providers.
pub mod anthropic;
pub mod decoding;
pub mod http;
pub mod loops;
pub mod ollama;
pub mod openai;
pub mod sse;
pub mod think_tags;
pub mod wire;

// The embedded model, recorded streams.
#[cfg(feature = "local")]
pub mod local;
pub mod replay;
