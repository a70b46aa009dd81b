//! One think turn: build the request from the session's history, stream it from the
//! provider, and persist query → thinking → response nodes, their edges and the raw stream
//! as the deltas arrive (batched into commits, never one per token).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::llm::{
    CallCtx, ChatRequest, Effort, LlmError, Message, Provider, RawChunk, StopReason, StreamEvent,
    ThinkingMode, Usage,
};
use crate::store::{
    Edge, EdgeType, Node, NodeId, NodeStatus, NodeType, RawStream, Session, SessionId,
    SessionSource, Store, StoreError, StoredChunk, StreamId,
};

/// How often streamed text is committed to the store.
const FLUSH_EVERY: Duration = Duration::from_millis(150);

/// What a turn reports while it runs.
#[derive(Clone, Debug, PartialEq)]
pub enum TurnEvent {
    Started { session: SessionId, query: NodeId },
    Thinking(String),
    Text(String),
    Signature(String),
    Redacted,
    ToolUse { name: String, input: serde_json::Value },
    Usage(Usage),
}

/// One question to ask.
#[derive(Clone, Debug)]
pub struct TurnRequest {
    /// Continue this session (its history is sent); `None` starts a new one.
    pub session: Option<SessionId>,
    pub question: String,
    pub system: Option<String>,
    pub thinking: ThinkingMode,
    pub effort: Option<Effort>,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub seed: Option<u64>,
}

/// How a turn ended.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnOutcome {
    pub session: SessionId,
    pub query: NodeId,
    pub thinking: Option<NodeId>,
    pub response: Option<NodeId>,
    pub stream: StreamId,
    pub usage: Usage,
    pub stop: StopReason,
    /// Set when the provider failed; what arrived before is kept in the nodes.
    pub error: Option<LlmError>,
}

/// Runs think turns against one provider and one store.
#[derive(Clone)]
pub struct Orchestrator {
    pub store: Store,
    pub provider: Arc<dyn Provider>,
    /// Model name recorded on sessions and nodes.
    pub model: String,
}

/// The conversation so far: each query with the response that answered it.
pub fn session_history(nodes: &[Node]) -> Vec<Message> {
    let mut out = Vec::new();
    for n in nodes {
        match n.kind {
            NodeType::Query => out.push(Message::user(n.text.clone())),
            NodeType::Response if !n.text.is_empty() => {
                out.push(Message::assistant(n.text.clone()))
            }
            _ => {}
        }
    }
    // A trailing query without an answer (a failed turn) is not sent twice.
    if matches!(out.last(), Some(m) if m.role == super::llm::Role::User) {
        out.pop();
    }
    out
}

/// Nodes being streamed into, and what is still to be committed.
struct Live {
    session: SessionId,
    stream: StreamId,
    model: String,
    thinking: Option<Node>,
    response: Option<Node>,
    dirty: bool,
    chunks: Vec<StoredChunk>,
    next_chunk: u32,
    total_bytes: u64,
}

impl Live {
    fn node(&mut self, kind: NodeType) -> &mut Node {
        let slot = if kind == NodeType::Thinking { &mut self.thinking } else { &mut self.response };
        slot.get_or_insert_with(|| {
            let mut n = Node::new(self.session, kind, "");
            n.status = NodeStatus::Streaming;
            n.model = Some(self.model.clone());
            n.raw_stream = Some(self.stream);
            n
        })
    }

    fn push_raw(&mut self, c: RawChunk) {
        self.total_bytes += c.bytes.len() as u64;
        self.chunks.push(StoredChunk {
            offset_us: c.offset.as_micros().min(u64::MAX as u128) as u64,
            bytes: c.bytes.to_vec(),
        });
    }

    /// Commits the nodes' text so far and the raw chunks received since the last flush.
    fn flush(&mut self, store: &Store, header: &mut RawStream) -> Result<(), StoreError> {
        if !self.dirty && self.chunks.is_empty() {
            return Ok(());
        }
        let chunks = std::mem::take(&mut self.chunks);
        let first = self.next_chunk;
        self.next_chunk += chunks.len() as u32;
        header.chunk_count = self.next_chunk;
        header.total_bytes = self.total_bytes;
        header.nodes = self.thinking.iter().chain(self.response.iter()).map(|n| n.id).collect();
        let (thinking, response) = (self.thinking.as_ref(), self.response.as_ref());
        store.write(|w| {
            for (i, c) in chunks.iter().enumerate() {
                w.put_raw_chunk(header.id, first + i as u32, c)?;
            }
            w.put_raw_stream(header)?;
            if let Some(n) = thinking {
                w.put_node(n)?;
            }
            if let Some(n) = response {
                w.put_node(n)?;
            }
            Ok(())
        })?;
        self.dirty = false;
        Ok(())
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
        let (mut session, history, previous) = match req.session {
            Some(id) => {
                let s = store
                    .session(id)?
                    .ok_or_else(|| StoreError::NotFound(format!("session {id}")))?;
                let nodes = store.session_nodes(id)?;
                let prev = nodes.iter().rev().find(|n| n.kind == NodeType::Response).map(|n| n.id);
                (s, session_history(&nodes), prev)
            }
            None => {
                let mut s = Session::new(title_from(&req.question), SessionSource::Glassbox);
                s.provider = Some(self.provider.name().to_string());
                s.model = Some(self.model.clone());
                (s, Vec::new(), None)
            }
        };
        session.updated_at = Utc::now();
        let query = Node::new(session.id, NodeType::Query, req.question.clone());
        let mut messages = history;
        messages.push(Message::user(req.question.clone()));
        let chat = ChatRequest {
            model: self.model.clone(),
            system: req.system.clone(),
            messages,
            max_tokens: req.max_tokens,
            temperature: req.temperature,
            top_p: req.top_p,
            seed: req.seed,
            thinking: req.thinking,
            effort: req.effort,
            tools: Vec::new(),
            tool_choice: None,
            json_mode: false,
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
        store.write(|w| {
            w.put_session(&session)?;
            w.put_node(&query)?;
            if let Some(prev) = previous {
                w.put_edge(&Edge::new(prev, EdgeType::Influences, query.id))?;
            }
            w.put_raw_stream(&header)
        })?;
        let _ = events.send(TurnEvent::Started { session: session.id, query: query.id });

        let (raw_tx, mut raw_rx) = mpsc::unbounded_channel();
        let mut stream =
            self.provider.stream(chat, CallCtx { cancel: cancel.clone(), raw: Some(raw_tx) });
        let mut live = Live {
            session: session.id,
            stream: header.id,
            model: self.model.clone(),
            thinking: None,
            response: None,
            dirty: false,
            chunks: Vec::new(),
            next_chunk: 0,
            total_bytes: 0,
        };
        let mut usage = Usage::default();
        let mut stop = None;
        let mut error = None;
        let mut tick = tokio::time::interval(FLUSH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                ev = stream.next() => {
                    let Some(ev) = ev else { break };
                    match ev {
                        StreamEvent::ThinkingDelta { text } => {
                            live.node(NodeType::Thinking).text.push_str(&text);
                            live.dirty = true;
                            let _ = events.send(TurnEvent::Thinking(text));
                        }
                        StreamEvent::ThinkingSignature { signature } => {
                            live.node(NodeType::Thinking)
                                .meta
                                .insert("signature".into(), json!(signature));
                            live.dirty = true;
                            let _ = events.send(TurnEvent::Signature(signature));
                        }
                        StreamEvent::RedactedThinking { data } => {
                            let n = live.node(NodeType::Thinking);
                            let list = n.meta.entry("redacted").or_insert_with(|| json!([]));
                            if let Some(a) = list.as_array_mut() {
                                a.push(json!(data));
                            }
                            live.dirty = true;
                            let _ = events.send(TurnEvent::Redacted);
                        }
                        StreamEvent::TextDelta { text } => {
                            live.node(NodeType::Response).text.push_str(&text);
                            live.dirty = true;
                            let _ = events.send(TurnEvent::Text(text));
                        }
                        StreamEvent::ToolUse { id, name, input } => {
                            let mut n = Node::new(session.id, NodeType::ToolCall, input.to_string());
                            n.meta.insert("tool".into(), json!(name));
                            n.meta.insert("tool_use_id".into(), json!(id));
                            let edge = Edge::new(query.id, EdgeType::Influences, n.id);
                            store.write(|w| { w.put_node(&n)?; w.put_edge(&edge) })?;
                            let _ = events.send(TurnEvent::ToolUse { name, input });
                        }
                        StreamEvent::Usage { usage: u } => {
                            usage = u;
                            let _ = events.send(TurnEvent::Usage(u));
                        }
                        StreamEvent::Stop { reason } => { stop = Some(reason); }
                        StreamEvent::Error { error: e } => { error = Some(e); }
                    }
                }
                Some(chunk) = raw_rx.recv() => live.push_raw(chunk),
                _ = tick.tick() => live.flush(store, &mut header)?,
            }
        }
        // Chunks sent just before the stream ended.
        while let Ok(chunk) = raw_rx.try_recv() {
            live.push_raw(chunk);
        }
        let stop = match (&error, stop) {
            (Some(LlmError::Cancelled), _) => StopReason::Cancelled,
            (_, Some(s)) => s,
            (Some(_), None) => StopReason::Other("error".into()),
            (None, None) if cancel.is_cancelled() => StopReason::Cancelled,
            (None, None) => StopReason::Other("stream ended without a stop reason".into()),
        };
        let final_status = match (&error, &stop) {
            (Some(LlmError::Cancelled), _) | (_, StopReason::Cancelled) => NodeStatus::Interrupted,
            (Some(e), _) => NodeStatus::Failed { error: e.to_string() },
            _ => NodeStatus::Complete,
        };
        if error.is_some() && live.response.is_none() && live.thinking.is_none() {
            // Keep a visible record of the failed turn.
            live.node(NodeType::Response);
        }
        for n in live.thinking.iter_mut().chain(live.response.iter_mut()) {
            n.status = final_status.clone();
        }
        if let Some(r) = live.response.as_mut() {
            r.meta.insert("usage".into(), json!(usage));
            r.meta.insert("stop_reason".into(), json!(stop));
        }
        live.dirty = true;
        live.flush(store, &mut header)?;
        let (t, r) = (live.thinking.as_ref().map(|n| n.id), live.response.as_ref().map(|n| n.id));
        store.write(|w| {
            match (t, r) {
                (Some(t), Some(r)) => {
                    w.put_edge(&Edge::new(query.id, EdgeType::Influences, t))?;
                    w.put_edge(&Edge::new(t, EdgeType::Influences, r))?;
                }
                (Some(t), None) => w.put_edge(&Edge::new(query.id, EdgeType::Influences, t))?,
                (None, Some(_)) | (None, None) => {}
            }
            if let Some(r) = r {
                w.put_edge(&Edge::new(r, EdgeType::Answers, query.id))?;
            }
            let mut s = session.clone();
            s.updated_at = Utc::now();
            w.put_session(&s)
        })?;
        Ok(TurnOutcome {
            session: session.id,
            query: query.id,
            thinking: t,
            response: r,
            stream: header.id,
            usage,
            stop,
            error,
        })
    }
}

/// A session title from the first line of the question.
pub fn title_from(question: &str) -> String {
    let line = question.lines().find(|l| !l.trim().is_empty()).unwrap_or("untitled").trim();
    let mut t: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        t.push('…');
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_pairs_queries_with_answers_and_drops_a_dangling_query() {
        let s = SessionId::new();
        let nodes = vec![
            Node::new(s, NodeType::Query, "q1"),
            Node::new(s, NodeType::Thinking, "t1"),
            Node::new(s, NodeType::Response, "a1"),
            Node::new(s, NodeType::Query, "q2"),
        ];
        let h = session_history(&nodes);
        assert_eq!(h, vec![Message::user("q1"), Message::assistant("a1")]);
    }

    #[test]
    fn titles_are_the_first_line_cut_to_80() {
        assert_eq!(title_from("\n  Why?\nmore"), "Why?");
        let long = "x".repeat(100);
        assert_eq!(title_from(&long).chars().count(), 81);
    }
}
