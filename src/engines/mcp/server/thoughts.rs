//! The thought tools: `sequentialthinking` and `thought`, and the critique a `thought` can
//! ask the client's model for (a sampling request, or an input-required round trip).

use std::time::Instant;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, CreateMessageRequest,
    CreateMessageRequestParams, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    SamplingMessage,
};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};

use super::super::ledger::Recorded;
use super::LedgerError;
use super::output::{SequentialOutput, json_result, sequential_error, thought_output, tool_error};
use super::{
    CRITIQUE_KEY, Caller, LedgerServer, PENDING_TTL, PendingCritique, ThoughtArgs, ledger, lock,
    tools,
};
use crate::store::NodeId;

/// A critique the client's model wrote.
#[derive(Debug)]
pub(super) struct Critique {
    pub(super) text: String,
    pub(super) model: Option<String>,
    pub(super) stop_reason: Option<String>,
}

/// Reads a sampling result (`CreateMessageResult` JSON); text blocks are joined. An error
/// object or an empty text is an error naming what came back.
pub(super) fn critique_from_value(v: &Value) -> Result<Critique, String> {
    if v.get("code").is_some() && v.get("message").is_some() {
        let msg = v
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("no message");
        return Err(format!("the client's model declined: {msg}"));
    }
    let blocks: Vec<&Value> = match v.get("content") {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(item @ Value::Object(_)) => vec![item],
        _ => Vec::new(),
    };
    let text = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    if text.trim().is_empty() {
        return Err("the client's model returned no text".into());
    }
    let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(Critique {
        text,
        model: field("model"),
        stop_reason: field("stopReason"),
    })
}

impl LedgerServer {
    pub(super) async fn sequential_thinking(
        &self,
        args: &Map<String, Value>,
        caller: &Caller,
    ) -> CallToolResult {
        let parsed = match ThoughtArgs::parse(args) {
            Ok(t) => t,
            Err(e) => return sequential_error(&e.0),
        };
        match self
            .record(&parsed, caller, tools::SEQUENTIAL_THINKING)
            .await
        {
            Ok(rec) => {
                let out = SequentialOutput::new(&parsed, &rec);
                let text = serde_json::to_string_pretty(&out).unwrap_or_default();
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                r.structured_content = serde_json::to_value(&out).ok();
                r
            }
            Err(e) => sequential_error(&e.to_string()),
        }
    }

    pub(super) async fn thought(
        &self,
        args: &Map<String, Value>,
        request_state: Option<String>,
        responses: Option<InputResponses>,
        caller: &Caller,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        if let Some(state) = request_state {
            return self.finish_critique(&state, responses).await.into();
        }
        let parsed = match ThoughtArgs::parse_ledger(args) {
            Ok(t) => t,
            Err(e) => return tool_error(e.0).into(),
        };
        let rec = match self.record(&parsed, caller, tools::THOUGHT).await {
            Ok(r) => r,
            Err(e) => return tool_error(e.to_string()).into(),
        };
        let mut out = thought_output(&parsed, &rec);
        if !parsed.critique {
            return json_result(Value::Object(out)).into();
        }
        if !caller.sampling {
            out.insert(
                "critique".into(),
                json!({"status": "unavailable", "reason": "this client does not offer sampling, so no critique could be requested; the thought is stored"}),
            );
            return json_result(Value::Object(out)).into();
        }
        let params = match self.critique_params(&rec).await {
            Ok(p) => p,
            Err(e) => {
                out.insert(
                    "critique".into(),
                    json!({"status": "failed", "reason": e.to_string()}),
                );
                return json_result(Value::Object(out)).into();
            }
        };
        if caller.modern {
            // Newer protocol: hand the request to the client and finish when it retries.
            let token = uuid::Uuid::now_v7().simple().to_string();
            {
                let mut pending = lock(&self.shared.pending);
                pending.retain(|_, p| p.created.elapsed() < PENDING_TTL);
                pending.insert(
                    token.clone(),
                    PendingCritique {
                        thought: rec.node.id,
                        output: out,
                        created: Instant::now(),
                    },
                );
            }
            let mut requests = InputRequests::new();
            requests.insert(
                CRITIQUE_KEY.into(),
                InputRequest::CreateMessage(CreateMessageRequest::new(params)),
            );
            return CallToolResponse::InputRequired(InputRequiredResult::new(
                Some(requests),
                Some(token),
            ));
        }
        let reply = tokio::time::timeout(
            self.shared.settings.sampling_timeout,
            ctx.peer.create_message(params),
        )
        .await;
        let critique = match reply {
            Ok(Ok(result)) => serde_json::to_value(&result)
                .map_err(|e| e.to_string())
                .and_then(|v| critique_from_value(&v)),
            Ok(Err(e)) => Err(format!("the sampling request failed: {e}")),
            Err(_) => Err(format!(
                "the client's model did not answer within {} s",
                self.shared.settings.sampling_timeout.as_secs()
            )),
        };
        out.insert(
            "critique".into(),
            self.store_critique(rec.node.id, critique).await,
        );
        json_result(Value::Object(out)).into()
    }

    async fn critique_params(
        &self,
        rec: &Recorded,
    ) -> Result<CreateMessageRequestParams, LedgerError> {
        let (session, node, n) = (
            rec.session,
            rec.node.id,
            self.shared.settings.critique_context,
        );
        let context = self
            .store_call(move |store| ledger::critique_context(store, session, node, n))
            .await?;
        let s = &self.shared.settings;
        Ok(CreateMessageRequestParams::new(
            vec![SamplingMessage::user_text(context)],
            s.critique_max_tokens,
        )
        .with_system_prompt(s.critique_prompt.clone()))
    }

    /// Stores a critique (or reports why there is none) and returns the `critique` field.
    async fn store_critique(&self, thought: NodeId, critique: Result<Critique, String>) -> Value {
        let c = match critique {
            Ok(c) => c,
            Err(reason) => return json!({"status": "failed", "reason": reason}),
        };
        let (text, model, stop) = (c.text.clone(), c.model.clone(), c.stop_reason.clone());
        let id = NodeId::new();
        let stored = self
            .store_call(move |store| {
                ledger::store_critique(store, thought, id, &text, model.as_deref(), stop.as_deref())
            })
            .await;
        match stored {
            Ok(node) => {
                json!({"status": "stored", "annotationId": node.id, "model": c.model, "text": c.text})
            }
            Err(e) => json!({"status": "failed", "reason": e.to_string()}),
        }
    }

    /// The retry of an input-required `thought` call: store the critique the client sent.
    async fn finish_critique(
        &self,
        state: &str,
        responses: Option<InputResponses>,
    ) -> CallToolResult {
        let Some(pending) = lock(&self.shared.pending).remove(state) else {
            return tool_error(
                "unknown or expired critique request; the thought was stored when first sent — call again without requestState",
            );
        };
        let critique = match responses.as_ref().and_then(|r| r.get(CRITIQUE_KEY)) {
            Some(v) => critique_from_value(v),
            None => Err("the client sent no critique back".to_string()),
        };
        let mut out = pending.output;
        out.insert(
            "critique".into(),
            self.store_critique(pending.thought, critique).await,
        );
        json_result(Value::Object(out))
    }
}
