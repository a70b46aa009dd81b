//! Streaming model calls of the fork engine: one call with its deltas sent as events, and
//! a call whose answer must be a JSON object, repaired once when it is not.

use futures::StreamExt;
use serde_json::{Map, Value};

use super::json::{Shape, read_object};
use super::{Events, ForkEngine, ForkEvent, Lane};
use crate::engines::llm::{CallCtx, ChatRequest, Message, StreamEvent, TurnPlan};

/// One call's collected output.
#[derive(Debug, Default)]
pub(super) struct CallOutput {
    pub(super) text: String,
    pub(super) thinking: String,
    pub(super) tool_input: Option<Value>,
    pub(super) output_tokens: u64,
}

impl ForkEngine {
    /// One streaming call; deltas go out as events. `Err` carries the provider's error.
    pub(super) async fn call(
        &self,
        lane: Lane,
        system: String,
        messages: Vec<Message>,
        shape: Option<Shape>,
        plan: TurnPlan,
        events: &Events,
    ) -> Result<CallOutput, (String, CallOutput)> {
        let mut req = ChatRequest::new(self.settings.model.clone(), messages);
        req.system = (!system.trim().is_empty()).then_some(system);
        req.max_tokens = plan.max_tokens;
        req.thinking = plan.thinking;
        req.effort = plan.effort;
        req.temperature = self.settings.temperature;
        req.seed = self.settings.seed;
        if let Some(shape) = shape {
            let tool = shape.tool();
            if self.settings.use_tools {
                req.tool_choice = Some(tool.name.clone());
                req.tools = vec![tool.clone()];
            }
            req.schema = Some(tool);
        }
        let mut stream = self.provider.stream(
            req,
            CallCtx {
                cancel: self.cancel.clone(),
                raw: None,
            },
        );
        let mut out = CallOutput::default();
        while let Some(ev) = stream.next().await {
            match ev {
                StreamEvent::ThinkingDelta { text } => {
                    out.thinking.push_str(&text);
                    let _ = events.send(ForkEvent::Delta {
                        lane,
                        text,
                        thinking: true,
                    });
                }
                StreamEvent::TextDelta { text } => {
                    out.text.push_str(&text);
                    let _ = events.send(ForkEvent::Delta {
                        lane,
                        text,
                        thinking: false,
                    });
                }
                StreamEvent::ToolUse { input, .. } => {
                    out.tool_input.get_or_insert(input);
                }
                StreamEvent::Usage { usage } => out.output_tokens = usage.output_tokens,
                StreamEvent::Error { error } => return Err((error.to_string(), out)),
                StreamEvent::Stop { .. }
                | StreamEvent::ThinkingSignature { .. }
                | StreamEvent::RedactedThinking { .. }
                | StreamEvent::Compaction { .. } => {}
            }
        }
        if self.cancel.is_cancelled() {
            return Err(("cancelled".into(), out));
        }
        Ok(out)
    }

    /// A call whose answer must be a JSON object: the tool input, else the first object in
    /// the text; when that is unreadable, once more with the repair prompt. Returns the
    /// object and the output tokens spent, or the error and the tokens spent.
    pub(super) async fn structured(
        &self,
        lane: Lane,
        system: String,
        user: String,
        shape: Shape,
        plan: TurnPlan,
        events: &Events,
    ) -> Result<(Map<String, Value>, u64), (String, u64)> {
        let instruction = if self.settings.use_tools {
            format!(
                "\n\nRecord your answer with the {} tool.",
                shape.tool().name
            )
        } else {
            format!(
                "\n\nAnswer with ONLY one JSON object of this shape:\n{}",
                shape.template()
            )
        };
        let first_user = format!("{user}{instruction}");
        let out = self
            .call(
                lane,
                system.clone(),
                vec![Message::user(first_user.clone())],
                Some(shape),
                plan,
                events,
            )
            .await
            .map_err(|(e, o)| (e, o.output_tokens))?;
        let mut tokens = out.output_tokens;
        let first_err = match read_object(&out) {
            Ok(m) => return Ok((m, tokens)),
            Err(e) => e,
        };
        let _ = events.send(ForkEvent::Repairing { lane });
        let repair = format!(
            "{}\n\nThe required shape:\n{}",
            self.prompts.get("repair"),
            shape.template()
        );
        let previous = if out.text.trim().is_empty() {
            out.tool_input
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default()
        } else {
            out.text.clone()
        };
        let messages = vec![
            Message::user(first_user),
            Message::assistant(previous),
            Message::user(repair),
        ];
        let again = self
            .call(lane, system, messages, Some(shape), plan, events)
            .await
            .map_err(|(e, o)| (e, tokens + o.output_tokens))?;
        tokens += again.output_tokens;
        read_object(&again)
            .map(|m| (m, tokens))
            .map_err(|e| (format!("{first_err}; after the repair prompt: {e}"), tokens))
    }
}
