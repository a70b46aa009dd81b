//! One turn: the request from the session's history, the stream from the provider, and the
//! nodes, edges, decision points and raw chunks it leaves, committed in batches as it goes.

use chrono::Utc;
use futures::{FutureExt, StreamExt};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::TextPiece;
use super::ahead::Ahead;
use super::compaction::count_compaction;
use super::history::{history_until, session_output_tokens, superseded_nodes};
use super::live::{FLUSH_EVERY, Live};
use super::loop_feed::{Found, LoopFeed};
use super::{
    FinishedTurn, LOOPING, MEMORY_USED, Orchestrator, TOOL_ERROR, TOOL_RESULT, TurnEvent,
    TurnOutcome, TurnRequest, title_from,
};
use crate::engines::llm::loops::{LoopAction, LoopReport, loop_stop};
use crate::engines::llm::{
    CallCtx, ChatRequest, EventStream, LlmError, Message, RawChunk, StopReason, StreamEvent,
    ThinkingBlock, ToolCall, ToolResult, Usage,
};
use crate::store::{
    Edge, EdgeType, Node, NodeStatus, NodeType, RawStream, Session, SessionId, SessionSource,
    StoreError, StreamId,
};

/// Most stream text (in bytes; an event without text counts as `EVENT_BYTES`) handled in
/// one go before the flush tick and the raw chunks get a turn.
const MAX_BATCH_BYTES: usize = 256 * 1024;
const EVENT_BYTES: usize = 64;

/// Records a loop found in the thinking or the answer on its node and reports it; true when
/// the call is to stop.
fn loop_found(
    live: &mut Live,
    events: &mpsc::UnboundedSender<TurnEvent>,
    (kind, report): Found,
    action: LoopAction,
) -> bool {
    let node = live.node(kind);
    node.meta
        .insert(LOOPING.into(), looping_meta(kind, report, action));
    let node = node.id;
    live.dirty = true;
    let _ = events.send(TurnEvent::Loop {
        node,
        period: report.period,
        repeats: report.repeats,
        unit: report.unit,
        in_thinking: kind == NodeType::Thinking,
        action,
    });
    action == LoopAction::Stop
}

/// The `looping` meta of a node the model looped in.
fn looping_meta(kind: NodeType, report: LoopReport, action: LoopAction) -> serde_json::Value {
    json!({
        "period": report.period,
        "repeats": report.repeats,
        "unit": report.unit,
        "in": if kind == NodeType::Thinking { "thinking" } else { "text" },
        "action": action,
    })
}

/// A tool call of the current provider call: its node (which gets the result) and the call
/// as it goes back to the provider.
struct PendingCall {
    node: Node,
    call: ToolCall,
}

/// What one provider call said, to send back with the results of its tool calls. The text
/// and the reasoning are not copied as they stream: they are where they end up, at the end
/// of the response and the thinking node, from the offsets kept here.
struct Said {
    /// Where this call's answer starts in the response node.
    text_from: Option<usize>,
    /// Signed reasoning blocks, in order.
    thinking: Vec<ThinkingBlock>,
    /// Where the reasoning still waiting for its signature starts in the thinking node.
    open_from: Option<usize>,
    calls: Vec<PendingCall>,
    /// In a call after tool results, the first reasoning and the first text start a new
    /// paragraph of the nodes they continue.
    new_thinking: bool,
    new_text: bool,
}

impl Said {
    fn new(continuation: bool) -> Self {
        Self {
            text_from: None,
            thinking: Vec::new(),
            open_from: None,
            calls: Vec::new(),
            new_thinking: continuation,
            new_text: continuation,
        }
    }
}

/// A provider call under way: its events, its raw bytes and the token that stops it alone.
struct Call {
    raw_rx: mpsc::UnboundedReceiver<RawChunk>,
    cancel: CancellationToken,
    stream: EventStream,
}

impl Orchestrator {
    /// Starts a provider call on `chat`. It has its own token, a child of the turn's, so that
    /// a loop can stop the call without that counting as the caller's cancellation.
    fn open_call(&self, chat: &ChatRequest, cancel: &CancellationToken) -> Call {
        let (raw_tx, raw_rx) = mpsc::unbounded_channel();
        let call_cancel = cancel.child_token();
        let stream = self.provider.stream(
            chat.clone(),
            CallCtx {
                cancel: call_cancel.clone(),
                raw: Some(raw_tx),
            },
        );
        Call {
            raw_rx,
            cancel: call_cancel,
            stream,
        }
    }
}

/// The end of `node`'s text from byte `from` (empty without either).
fn text_from(node: Option<&Node>, from: Option<usize>) -> String {
    match (node, from) {
        (Some(n), Some(from)) => n.text.get(from..).unwrap_or_default().to_string(),
        _ => String::new(),
    }
}

/// Appends a delta (`text`, which `paragraph` may have put a separator before: the delta is
/// its last `delta_len` bytes) to the thinking or the response node, noting in `from` where
/// the first delta began.
fn append(
    live: &mut Live,
    kind: NodeType,
    text: &TextPiece,
    delta_len: usize,
    from: &mut Option<usize>,
) {
    from.get_or_insert(live.node(kind).text.len() + (text.len() - delta_len));
    live.append(kind, text);
}

/// `text` as it joins `node`: after a blank line when it is the first piece of a call that
/// continues the node.
fn paragraph(first: &mut bool, node: Option<&Node>, text: String) -> String {
    if !std::mem::take(first) {
        return text;
    }
    match node.map(|n| n.text.as_str()) {
        Some(t) if t.is_empty() || t.ends_with("\n\n") => text,
        Some(t) if t.ends_with('\n') => format!("\n{text}"),
        Some(_) => format!("\n\n{text}"),
        None => text,
    }
}

/// Usage of the calls before (`spent`) and of the current one (`now`, cumulative).
fn add_usage(spent: Usage, now: Usage) -> Usage {
    let opt = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    Usage {
        input_tokens: spent.input_tokens + now.input_tokens,
        output_tokens: spent.output_tokens + now.output_tokens,
        thinking_tokens: opt(spent.thinking_tokens, now.thinking_tokens),
        cache_read_tokens: opt(spent.cache_read_tokens, now.cache_read_tokens),
        cache_creation_tokens: opt(spent.cache_creation_tokens, now.cache_creation_tokens),
    }
}

/// Whether a call with tools failed the way servers without tool support refuse one (HTTP
/// 400 or 422, or an error that names tools) before anything arrived.
fn refused_tools(chat: &ChatRequest, error: Option<&LlmError>, live: &Live, said: &Said) -> bool {
    if chat.tools.is_empty()
        || live.thinking.is_some()
        || live.response.is_some()
        || !said.calls.is_empty()
    {
        return false;
    }
    match error {
        Some(LlmError::Http {
            status, message, ..
        }) => matches!(status, 400 | 422) || message.to_ascii_lowercase().contains("tool"),
        Some(LlmError::Api { message, .. }) => message.to_ascii_lowercase().contains("tool"),
        _ => false,
    }
}

impl Orchestrator {
    /// Runs a call's tool calls one after another through the knowledge source (on the
    /// blocking pool) and records each result on its tool-call node. A tool the knowledge
    /// source does not have gets an error result.
    async fn run_tools(
        &self,
        session: SessionId,
        calls: Vec<PendingCall>,
    ) -> Result<(Vec<ToolCall>, Vec<ToolResult>), StoreError> {
        let mut done = Vec::with_capacity(calls.len());
        for c in calls {
            let unknown = format!("unknown tool '{}'", c.call.name);
            let outcome = match self.knowledge.clone() {
                Some(k) => {
                    let (name, input, node) =
                        (c.call.name.clone(), c.call.input.clone(), c.node.id);
                    match tokio::task::spawn_blocking(move || {
                        k.call_tool(&name, &input, session, node)
                    })
                    .await
                    {
                        Ok(Some(r)) => r,
                        Ok(None) => Err(unknown),
                        Err(e) => Err(format!("{}: the tool failed: {e}", c.call.name)),
                    }
                }
                None => Err(unknown),
            };
            done.push((c, outcome));
        }
        self.record_results(done).await
    }

    /// Puts each call's result (or error) in its node's meta (`result`, `is_error`) and
    /// commits the nodes; returns the calls and their results for the provider.
    async fn record_results(
        &self,
        done: Vec<(PendingCall, Result<String, String>)>,
    ) -> Result<(Vec<ToolCall>, Vec<ToolResult>), StoreError> {
        let mut nodes = Vec::with_capacity(done.len());
        let mut calls = Vec::with_capacity(done.len());
        let mut results = Vec::with_capacity(done.len());
        for (mut p, outcome) in done {
            let (content, is_error) = match outcome {
                Ok(text) => (text, false),
                Err(e) => (e, true),
            };
            p.node.meta.insert(TOOL_RESULT.into(), json!(content));
            p.node.meta.insert(TOOL_ERROR.into(), json!(is_error));
            results.push(ToolResult {
                tool_use_id: p.call.id.clone(),
                content,
                is_error,
            });
            nodes.push(p.node);
            calls.push(p.call);
        }
        self.store
            .write_async(move |w| {
                for n in &nodes {
                    w.put_node(n)?;
                }
                Ok(())
            })
            .await?;
        Ok((calls, results))
    }
}

impl Orchestrator {
    /// Runs one turn to its end (done, cancelled or failed), reporting progress on `events`.
    /// Store failures are returned as errors; provider failures end up in the outcome.
    pub async fn run_turn(
        &self,
        req: TurnRequest,
        events: mpsc::UnboundedSender<TurnEvent>,
        cancel: CancellationToken,
    ) -> anyhow::Result<TurnOutcome> {
        let store = &self.store;
        // `prior`: the nodes this turn's history stands for, which a compaction by the
        // provider supersedes.
        let (mut session, history, previous, prior) = match req.session {
            Some(id) => {
                let (s, nodes, superseded) = store
                    .run_blocking(move |store| {
                        let s = store
                            .session(id)?
                            .ok_or_else(|| StoreError::NotFound(format!("session {id}")))?;
                        let nodes = store.session_nodes(id)?;
                        let superseded = superseded_nodes(store, &nodes)?;
                        Ok::<_, StoreError>((s, nodes, superseded))
                    })
                    .await?;
                let used = session_output_tokens(&nodes);
                let limit = self.budget.session_tokens;
                if limit > 0 && used >= limit {
                    anyhow::bail!(
                        "session token budget exhausted: {used} of {limit} output tokens used; start a new session or raise [budget] session_tokens"
                    );
                }
                if limit > 0 && used * 100 >= limit * u64::from(self.budget.warn_percent) {
                    let _ = events.send(TurnEvent::BudgetWarning { used, limit });
                }
                if let Some(from) = req.branch_from {
                    let history = history_until(&nodes, from).ok_or_else(|| {
                        StoreError::NotFound(format!("node {from} in session {id}"))
                    })?;
                    let upto = nodes.iter().position(|n| n.id == from).map_or(0, |p| p + 1);
                    let prior = nodes[..upto]
                        .iter()
                        .filter(|n| !superseded.contains(&n.id))
                        .map(|n| n.id)
                        .collect();
                    (s, history, None, prior)
                } else {
                    let prev = nodes
                        .iter()
                        .rev()
                        .find(|n| n.kind == NodeType::Response)
                        .map(|n| n.id);
                    let prepared = self
                        .compact_if_needed(&s, &nodes, superseded, &req.question, &events, &cancel)
                        .await?;
                    let mut s = s;
                    if prepared.compacted {
                        count_compaction(&mut s);
                    }
                    (s, prepared.history, prev, prepared.live)
                }
            }
            None => {
                let mut s = Session::new(title_from(&req.question), SessionSource::Glassbox);
                s.provider = Some(self.provider.name().to_string());
                s.model = Some(self.model.clone());
                (s, Vec::new(), None, Vec::new())
            }
        };
        session.updated_at = Utc::now();
        let mut query = Node::new(session.id, NodeType::Query, req.question.clone());
        let mut messages = history;
        messages.push(Message::user(req.question.clone()));
        let knowledge = match self.knowledge.clone() {
            Some(k) => {
                let question = req.question.clone();
                tokio::task::spawn_blocking(move || k.context_for(&question))
                    .await
                    .ok()
                    .flatten()
            }
            None => None,
        };
        let system = match &knowledge {
            Some(k) => {
                query.meta.insert(MEMORY_USED.into(), json!(k.used));
                Some(match &req.system {
                    Some(sys) => format!("{sys}\n\n{}", k.text),
                    None => k.text.clone(),
                })
            }
            None => req.system.clone(),
        };
        // The knowledge source's tools (memory), where the provider takes tools.
        let tools = match &self.knowledge {
            Some(k) if self.provider.supports_tools() => k.tools(),
            _ => Vec::new(),
        };
        let max_rounds = self.knowledge.as_ref().map_or(0, |k| k.max_tool_rounds());
        let mut chat = ChatRequest {
            model: self.model.clone(),
            system,
            messages,
            max_tokens: req.max_tokens,
            temperature: req.temperature,
            top_p: req.top_p,
            seed: req.seed,
            thinking: req.thinking,
            effort: req.effort,
            tools,
            tool_choice: None,
            json_mode: false,
            schema: None,
        };
        let mut header = RawStream {
            id: StreamId::new(),
            session: session.id,
            provider: self.provider.name().to_string(),
            model: self.model.clone(),
            request: serde_json::to_value(&chat).unwrap_or(serde_json::Value::Null),
            created_at: Utc::now(),
            nodes: Vec::new(),
            chunk_count: 0,
            total_bytes: 0,
        };
        let (s, q, h, branch_from) = (
            session.clone(),
            query.clone(),
            header.clone(),
            req.branch_from,
        );
        // The first call goes out while the question commits; its answer is read only after.
        let mut first_call = Some(self.open_call(&chat, &cancel));
        store
            .write_async(move |w| {
                w.put_session(&s)?;
                w.put_node(&q)?;
                if let Some(prev) = previous {
                    w.put_edge(&Edge::new(prev, EdgeType::Influences, q.id))?;
                }
                if let Some(from) = branch_from {
                    w.put_edge(&Edge::new(q.id, EdgeType::BranchesFrom, from))?;
                }
                w.put_raw_stream(&h)
            })
            .await?;
        tracing::debug!(node = %query.id, bytes = query.text.len(), "node committed");
        let _ = events.send(TurnEvent::Started {
            session: session.id,
            query: query.id,
        });

        let mut first_stream = header.id;
        let mut live = Live::new(
            session.id,
            header.id,
            self.model.clone(),
            store.record_dict(),
        );
        // `usage` is the whole turn's; `spent` what the calls before this one used.
        let mut usage = Usage::default();
        let mut spent = Usage::default();
        let mut stop;
        let mut error;
        let mut loops = LoopFeed::new(&self.loops, self.loop_action);
        let mut ahead = Ahead::new(self.knowledge.clone());
        let mut stopped_looping = false;
        let mut tick = tokio::time::interval(FLUSH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // One provider call per pass: the question, then (after the model called tools)
        // the conversation with its calls and their results, streamed into the same nodes.
        let mut round = 0u32;
        loop {
            let Call {
                mut raw_rx,
                cancel: call_cancel,
                mut stream,
            } = first_call
                .take()
                .unwrap_or_else(|| self.open_call(&chat, &cancel));
            let mut said = Said::new(round > 0);
            stop = None;
            error = None;
            'call: loop {
                tokio::select! {
                    ev = stream.next() => {
                        let Some(mut ev) = ev else { break };
                        // The events that are already there (one network read's worth) are
                        // handled together; their text goes out as one event.
                        let mut batch = 0;
                        let ended = loop {
                            let mut looped = None;
                            batch += match &ev {
                                StreamEvent::ThinkingDelta { text } | StreamEvent::TextDelta { text } => {
                                    text.len().max(EVENT_BYTES)
                                }
                                _ => EVENT_BYTES,
                            };
                            if !matches!(ev, StreamEvent::ThinkingDelta { .. }) {
                                // The thinking paused: its last steps are reported now.
                                let updates = live.graph.settle();
                                live.apply_graph(updates, &events);
                            }
                            match ev {
                                StreamEvent::ThinkingDelta { text } => {
                                    let delta_len = text.len();
                                    let piece = TextPiece::new(paragraph(&mut said.new_thinking, live.thinking.as_ref(), text));
                                    append(&mut live, NodeType::Thinking, &piece, delta_len, &mut said.open_from);
                                    live.dirty = true;
                                    looped = loops.push(NodeType::Thinking, &piece);
                                    let updates = live.graph.push(&piece);
                                    let _ = events.send(TurnEvent::Thinking(piece));
                                    for (id, kind) in live.created.drain(..) {
                                        let _ = events.send(TurnEvent::NodeCreated { id, kind });
                                    }
                                    live.apply_graph(updates, &events);
                                }
                                StreamEvent::ThinkingSignature { signature } => {
                                    said.thinking.push(ThinkingBlock::Thinking {
                                        thinking: text_from(live.thinking.as_ref(), said.open_from.take()),
                                        signature: signature.clone(),
                                    });
                                    live.node(NodeType::Thinking)
                                        .meta
                                        .insert("signature".into(), json!(signature));
                                    live.dirty = true;
                                    let _ = events.send(TurnEvent::Signature(signature));
                                }
                                StreamEvent::RedactedThinking { data } => {
                                    said.thinking.push(ThinkingBlock::Redacted { data: data.clone() });
                                    let n = live.node(NodeType::Thinking);
                                    let list = n.meta.entry("redacted").or_insert_with(|| json!([]));
                                    if let Some(a) = list.as_array_mut() {
                                        a.push(json!(data));
                                    }
                                    live.dirty = true;
                                    let _ = events.send(TurnEvent::Redacted);
                                }
                                StreamEvent::Compaction { summary, encrypted_content } => {
                                    self.provider_compaction(
                                        &mut live,
                                        &mut session,
                                        &prior,
                                        summary,
                                        encrypted_content,
                                        &events,
                                    )
                                    .await?;
                                }
                                StreamEvent::TextDelta { text } => {
                                    let delta_len = text.len();
                                    let piece = TextPiece::new(paragraph(&mut said.new_text, live.response.as_ref(), text));
                                    append(&mut live, NodeType::Response, &piece, delta_len, &mut said.text_from);
                                    live.dirty = true;
                                    looped = loops.push(NodeType::Response, &piece);
                                    let _ = events.send(TurnEvent::Text(piece));
                                }
                                StreamEvent::ToolUse { id, name, input } => {
                                    let mut n = Node::new(session.id, NodeType::ToolCall, input.to_string());
                                    n.meta.insert("tool".into(), json!(name));
                                    n.meta.insert("tool_use_id".into(), json!(id));
                                    let edge = Edge::new(query.id, EdgeType::Influences, n.id);
                                    said.calls.push(PendingCall {
                                        node: n.clone(),
                                        call: ToolCall {
                                            id,
                                            name: name.clone(),
                                            input: input.clone(),
                                        },
                                    });
                                    store
                                        .write_async(move |w| {
                                            w.put_node(&n)?;
                                            w.put_edge(&edge)
                                        })
                                        .await?;
                                    let _ = events.send(TurnEvent::ToolUse { name, input });
                                }
                                StreamEvent::Usage { usage: u } => {
                                    usage = add_usage(spent, u);
                                    let _ = events.send(TurnEvent::Usage(usage));
                                }
                                StreamEvent::Stop { reason } => { stop = Some(reason); }
                                StreamEvent::Error { error: e } => { error = Some(e); }
                            }
                            for (id, kind) in live.created.drain(..) {
                                let _ = events.send(TurnEvent::NodeCreated { id, kind });
                            }
                            if let Some(found) = looped
                                && loop_found(&mut live, &events, found, self.loop_action)
                            {
                                call_cancel.cancel();
                                stopped_looping = true;
                                break 'call;
                            }
                            if batch >= MAX_BATCH_BYTES {
                                break false;
                            }
                            match stream.next().now_or_never() {
                                Some(Some(next)) => ev = next,
                                Some(None) => break true,
                                None => break false,
                            }
                        };
                        if ended {
                            break;
                        }
                        // The raw chunks of what was just read, so that they go out beside
                        // the stream once enough arrived.
                        let mut due = false;
                        while let Ok(chunk) = raw_rx.try_recv() {
                            due |= live.push_raw(chunk);
                        }
                        if due {
                            live.flush_soon(store, &mut header, false).await?;
                        }
                        // What shares this task with the turn (the printer of `ask`) gets
                        // its turn after each batch: on a stream that is always ready it would
                        // otherwise run only at the end, holding every event until then.
                        tokio::task::yield_now().await;
                    }
                    Some(chunk) = raw_rx.recv() => {
                        if live.push_raw(chunk) {
                            live.flush_soon(store, &mut header, false).await?;
                        }
                    }
                    _ = tick.tick() => {
                        if let Some(r) = &live.response {
                            ahead.offer(&r.text);
                        }
                        live.flush_soon(store, &mut header, true).await?
                    }
                }
            }
            // A call stopped for looping is dropped unread (its token already told it to stop).
            drop(stream);
            // A loop in the call's last pieces.
            if let Some(found) = loops.settle()
                && loop_found(&mut live, &events, found, self.loop_action)
            {
                stopped_looping = true;
            }
            // Chunks sent just before the stream ended.
            while let Ok(chunk) = raw_rx.try_recv() {
                live.push_raw(chunk);
            }
            tracing::debug!(round, bytes = live.total_bytes, "provider call ended");
            let retry = round == 0 && refused_tools(&chat, error.as_ref(), &live, &said);
            let next = if retry {
                // A server that takes no tools refused the request: ask again without them.
                tracing::warn!(
                    "{} refused the request with tools ({}); asking again without them",
                    self.provider.name(),
                    error.as_ref().map(ToString::to_string).unwrap_or_default()
                );
                chat.tools.clear();
                true
            } else if stop == Some(StopReason::ToolUse)
                && error.is_none()
                && !stopped_looping
                && !cancel.is_cancelled()
                && !said.calls.is_empty()
                && !chat.tools.is_empty()
            {
                let text = text_from(live.response.as_ref(), said.text_from);
                let Said {
                    thinking, calls, ..
                } = said;
                if round >= max_rounds {
                    // The model asked for more than the turn allows: its last calls are
                    // recorded as not run, and the turn ends here.
                    let why = format!(
                        "not run: this turn reached its limit of {max_rounds} tool rounds ([memory] max_tool_rounds)"
                    );
                    self.record_results(calls.into_iter().map(|c| (c, Err(why.clone()))).collect())
                        .await?;
                    false
                } else {
                    round += 1;
                    let (calls, results) = self.run_tools(session.id, calls).await?;
                    chat.messages
                        .push(Message::tool_calls(text, thinking, calls));
                    chat.messages.push(Message::tool_results(results));
                    true
                }
            } else {
                false
            };
            if !next {
                break;
            }
            // Each call keeps its own recorded stream, with the request that asked for it.
            live.flush(store, &mut header).await?;
            header = RawStream {
                id: StreamId::new(),
                request: serde_json::to_value(&chat).unwrap_or(serde_json::Value::Null),
                created_at: Utc::now(),
                nodes: Vec::new(),
                chunk_count: 0,
                total_bytes: 0,
                ..header
            };
            live.next_stream(header.id);
            if retry {
                // The refused call is kept on record; the turn is the one asked again.
                first_stream = header.id;
            }
            let h = header.clone();
            store.write_async(move |w| w.put_raw_stream(&h)).await?;
            spent = usage;
        }
        // The repeats counted to the end of what arrived.
        if let Some((kind, report)) = loops.finish() {
            live.node(kind)
                .meta
                .insert(LOOPING.into(), looping_meta(kind, report, self.loop_action));
        }
        let stop = match (&error, stop) {
            _ if stopped_looping => loop_stop(),
            (Some(LlmError::Cancelled), _) => StopReason::Cancelled,
            (_, Some(s)) => s,
            (Some(_), None) => StopReason::Other("error".into()),
            (None, None) if cancel.is_cancelled() => StopReason::Cancelled,
            (None, None) => StopReason::Other("stream ended without a stop reason".into()),
        };
        let final_status = match (&error, &stop) {
            (Some(LlmError::Cancelled), _) | (_, StopReason::Cancelled) => NodeStatus::Interrupted,
            (Some(e), _) => NodeStatus::Failed {
                error: e.to_string(),
            },
            _ => NodeStatus::Complete,
        };
        if error.is_some() && live.response.is_none() && live.thinking.is_none() {
            // Keep a visible record of the failed turn.
            live.node(NodeType::Response);
        }
        if live.thinking.is_some() {
            let updates = live.graph.finish();
            live.apply_graph(updates, &events);
            let confidence = live.graph.confidence();
            live.node(NodeType::Thinking).confidence = Some(confidence);
        }
        for n in live.thinking.iter_mut().chain(live.response.iter_mut()) {
            n.status = final_status.clone();
        }
        if let Some(r) = live.response.as_mut() {
            r.meta.insert("usage".into(), json!(usage));
            r.meta.insert("stop_reason".into(), json!(stop));
        }
        live.dirty = true;
        let (t, r) = (
            live.thinking.as_ref().map(|n| n.id),
            live.response.as_ref().map(|n| n.id),
        );
        let answer = live
            .response
            .as_ref()
            .filter(|_| self.knowledge.is_some() && final_status == NodeStatus::Complete)
            .map(|n| (n.id, n.text.clone()));
        // An answered turn goes to memory beside the last flush: what recall stores is made
        // ready while the nodes commit, and the two transactions follow each other. Only a
        // turn that is remembered waits for what was prepared for it: a stopped or failed one
        // does not wait on a model pass it has no use for.
        let remembering = match (self.knowledge.clone(), answer) {
            (Some(k), Some(answer)) => {
                let turn = FinishedTurn {
                    session: session.id,
                    query: query.id,
                    question: req.question.clone(),
                    response: Some(answer),
                };
                Some(tokio::spawn(async move {
                    ahead.settle().await;
                    tokio::task::spawn_blocking(move || k.remember(&turn)).await
                }))
            }
            _ => None,
        };
        // The turn's edges and its session go out in the last flush's transaction.
        let (query_id, mut s) = (query.id, session.clone());
        let finished = live
            .finish(
                store,
                &mut header,
                Box::new(move |w| {
                    match (t, r) {
                        (Some(t), Some(r)) => {
                            w.put_edge(&Edge::new(query_id, EdgeType::Influences, t))?;
                            w.put_edge(&Edge::new(t, EdgeType::Influences, r))?;
                        }
                        (Some(t), None) => {
                            w.put_edge(&Edge::new(query_id, EdgeType::Influences, t))?
                        }
                        (None, Some(_)) | (None, None) => {}
                    }
                    if let Some(r) = r {
                        w.put_edge(&Edge::new(r, EdgeType::Answers, query_id))?;
                    }
                    s.updated_at = Utc::now();
                    w.put_session(&s)
                }),
            )
            .await;
        if let Some(remembering) = remembering {
            let _ = remembering.await;
        }
        finished?;
        Ok(TurnOutcome {
            session: session.id,
            query: query.id,
            thinking: t,
            response: r,
            stream: first_stream,
            usage,
            stop,
            error,
        })
    }
}
