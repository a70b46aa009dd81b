//! One model call streamed into a node: the answer becomes the node's text and the thinking
//! its `thinking` meta, committed every quarter second as they arrive, so a reader (the TUI,
//! `sessions show`, a process killed mid-call) sees what came so far. The caller decides the
//! node's status from the outcome.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::engines::llm::{CallCtx, ChatRequest, LlmError, Provider, StreamEvent};
use crate::store::{Node, Store, StoreError};

/// Key of a node's `meta` holding the thinking of the call that wrote it.
pub const THINKING: &str = "thinking";

/// How often a streaming node's text is committed.
const FLUSH_EVERY: Duration = Duration::from_millis(250);

/// Runs `req`, writing its thinking and answer into `node` as they stream and handing each
/// piece to `on_delta` (`true` for thinking). A tool call's input counts as answer text.
/// Returns the answer text, or why the call ended early (the provider's error, or
/// [`LlmError::Cancelled`]); `node` then holds what arrived. `Err` only when the store
/// failed.
pub(crate) async fn into_node<F>(
    store: &Store,
    provider: &dyn Provider,
    req: ChatRequest,
    cancel: &CancellationToken,
    node: &mut Node,
    mut on_delta: F,
) -> Result<Result<String, LlmError>, StoreError>
where
    F: FnMut(String, bool) + Send,
{
    let ctx = CallCtx {
        cancel: cancel.clone(),
        raw: None,
    };
    let mut stream = provider.stream(req, ctx);
    let mut thinking = node
        .meta
        .get(THINKING)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut text = String::new();
    let mut failure: Option<LlmError> = None;
    let mut last_flush = Instant::now();
    loop {
        let ev = tokio::select! {
            ev = stream.next() => ev,
            () = cancel.cancelled() => { failure = Some(LlmError::Cancelled); None }
        };
        let Some(ev) = ev else { break };
        match ev {
            StreamEvent::ThinkingDelta { text: t } => {
                thinking.push_str(&t);
                on_delta(t, true);
            }
            StreamEvent::TextDelta { text: t } => {
                text.push_str(&t);
                on_delta(t, false);
            }
            StreamEvent::ToolUse { input, .. } => {
                let t = input.to_string();
                text.push_str(&t);
                on_delta(t, false);
            }
            StreamEvent::Error { error } => {
                failure = Some(error);
                break;
            }
            StreamEvent::Stop { .. } => break,
            _ => {}
        }
        if last_flush.elapsed() >= FLUSH_EVERY {
            last_flush = Instant::now();
            node.text = text.clone();
            node.meta.insert(THINKING.into(), json!(thinking));
            let n = node.clone();
            store.write_async(move |w| w.put_node(&n)).await?;
        }
    }
    node.text = text.clone();
    node.meta.insert(THINKING.into(), json!(thinking));
    if cancel.is_cancelled() && failure.is_none() {
        failure = Some(LlmError::Cancelled);
    }
    Ok(match failure {
        None => Ok(text),
        Some(e) => Err(e),
    })
}
