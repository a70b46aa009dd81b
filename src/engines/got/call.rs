//! The one-shot model call the scoring engines share (GoT, the verifier, metacognition):
//! its settings, the call itself, and readers for the JSON it answers with.

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::engines::llm::{
    CallCtx, ChatRequest, Effort, LlmError, Message, Provider, StreamEvent, ThinkingMode, ToolSpec,
};

/// Settings of every model call an engine makes.
#[derive(Clone, Debug, PartialEq)]
pub struct CallSettings {
    pub model: String,
    pub thinking: ThinkingMode,
    pub effort: Option<Effort>,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    pub seed: Option<u64>,
}

/// Sampling temperature of plain calls: greedy, as the `[generation]` default, so scores and
/// verdicts repeat for the same input.
const GREEDY: f32 = 0.0;

impl CallSettings {
    /// Plain calls without thinking, sampled greedily.
    pub fn new(model: impl Into<String>, max_tokens: u32) -> Self {
        Self {
            model: model.into(),
            thinking: ThinkingMode::Off,
            effort: None,
            max_tokens,
            temperature: Some(GREEDY),
            seed: None,
        }
    }
}

/// The answer text of one model call and the tokens it used.
pub(crate) struct Reply {
    pub text: String,
    pub tokens: u64,
}

/// Runs one model call to completion; a tool call's input counts as the answer text.
/// `schema` is the structure the answer must have ([`ChatRequest::schema`]).
pub(crate) async fn call_model(
    provider: &dyn Provider,
    settings: &CallSettings,
    system: &str,
    user: String,
    schema: ToolSpec,
    cancel: &CancellationToken,
) -> Result<Reply, LlmError> {
    use futures::StreamExt;
    let mut req = ChatRequest::new(settings.model.clone(), vec![Message::user(user)]);
    req.system = (!system.is_empty()).then(|| system.to_string());
    req.max_tokens = settings.max_tokens;
    req.thinking = settings.thinking;
    req.effort = settings.effort;
    req.temperature = settings.temperature;
    req.seed = settings.seed;
    req.json_mode = true;
    req.schema = Some(schema);
    let ctx = CallCtx {
        cancel: cancel.clone(),
        raw: None,
    };
    let mut stream = provider.stream(req, ctx);
    let mut text = String::new();
    let mut usage = None;
    while let Some(ev) = stream.next().await {
        match ev {
            StreamEvent::TextDelta { text: t } => text.push_str(&t),
            StreamEvent::ToolUse { input, .. } => text.push_str(&input.to_string()),
            StreamEvent::Usage { usage: u } => usage = Some(u),
            StreamEvent::Error { error } => return Err(error),
            StreamEvent::Stop { .. } => break,
            _ => {}
        }
    }
    if cancel.is_cancelled() {
        return Err(LlmError::Cancelled);
    }
    let tokens = usage.map_or(0, |u| {
        u.input_tokens + u.output_tokens + u.thinking_tokens.unwrap_or(0)
    });
    Ok(Reply { text, tokens })
}

/// The first JSON object in a model's answer, if any.
pub(crate) fn json_object(text: &str) -> Option<Map<String, Value>> {
    crate::engines::json_extract::extract_object(text).ok()
}

/// A number field that may arrive as a number or a numeric string.
pub(crate) fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().trim_end_matches('%').parse().ok(),
        _ => None,
    }
}
