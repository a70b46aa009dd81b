//! One think turn: build the request from the session's history, stream it from the
//! provider, and persist query → thinking → response nodes, their edges and the raw stream
//! as the deltas arrive (batched into commits, never one per token).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
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

/// Meta flag of a compaction node whose summary the provider wrote (server-side
/// compaction); such a summary is sent back as the provider's own block.
pub const SERVER_SIDE: &str = "server_side";

/// Session meta key counting the compactions of its history.
pub const COMPACTIONS: &str = "compactions";

/// True for a compaction node the provider produced (see [`SERVER_SIDE`]).
pub fn is_server_side_compaction(n: &Node) -> bool {
    n.kind == NodeType::Compaction
        && n.meta.get(SERVER_SIDE).and_then(serde_json::Value::as_bool) == Some(true)
}

/// What goes back to the provider for a compaction node it produced.
fn server_side_block(n: &Node) -> super::llm::Compaction {
    super::llm::Compaction {
        summary: n.text.clone(),
        encrypted_content: n
            .meta
            .get("encrypted_content")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string),
    }
}

/// Adds one to the session's compaction count.
fn count_compaction(session: &mut Session) {
    let n = session
        .meta
        .get(COMPACTIONS)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    session.meta.insert(COMPACTIONS.into(), json!(n + 1));
}

/// What a turn reports while it runs.
#[derive(Clone, Debug, PartialEq)]
pub enum TurnEvent {
    Started {
        session: SessionId,
        query: NodeId,
    },
    /// A thinking or response node was created (it streams from now on).
    NodeCreated {
        id: NodeId,
        kind: NodeType,
    },
    /// ThinkGraph finished a step of the thinking node while it streams.
    Step {
        node: NodeId,
        step: crate::engines::thinkgraph::Step,
    },
    /// ThinkGraph found a decision point in the thinking node.
    Decision {
        node: NodeId,
        decision: crate::engines::thinkgraph::Decision,
    },
    Thinking(String),
    Text(String),
    Signature(String),
    Redacted,
    ToolUse {
        name: String,
        input: serde_json::Value,
    },
    Usage(Usage),
    /// The session has used `used` of its `limit` output tokens (past the warning share).
    BudgetWarning {
        used: u64,
        limit: u64,
    },
    /// Older turns were summarised into a compaction node: by the orchestrator before this
    /// turn, or by the provider (server-side compaction) while it answers.
    Compacted {
        node: NodeId,
        superseded: usize,
    },
}

/// `[routing]`: classing questions simple / standard / complex and the effort of each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingParams {
    pub enabled: bool,
    /// Shorter questions are simple (seed 000 Orchestrator: standard is 50–500 chars).
    pub simple_max_chars: usize,
    /// Longer questions are complex (seed 000 Orchestrator: standard is 50–500 chars).
    pub complex_min_chars: usize,
    /// Case-insensitive regexes of simple questions (seed 000 Orchestrator: greetings,
    /// "what is", "define", "explain briefly").
    pub simple_patterns: Vec<String>,
    /// Case-insensitive regexes of complex questions (seed 000 Orchestrator: "debug",
    /// "architect", "design", "compare and contrast", "research", "step by step",
    /// "refactor", "optimize").
    pub complex_patterns: Vec<String>,
    /// Seed 000 Orchestrator: simple = low.
    pub simple: Effort,
    /// Seed 000 Orchestrator: standard = medium.
    pub standard: Effort,
    /// Seed 000 Orchestrator: complex = high.
    pub complex: Effort,
}

impl Default for RoutingParams {
    fn default() -> Self {
        let patterns = |list: &[&str]| list.iter().map(|p| p.to_string()).collect();
        Self {
            enabled: true,
            simple_max_chars: 50,
            complex_min_chars: 500,
            simple_patterns: patterns(&[
                r"^\s*(hi|hello|hey|thanks|thank you)\b",
                r"^\s*what is\b",
                r"^\s*define\b",
                "explain briefly",
            ]),
            complex_patterns: patterns(&[
                r"\bdebug",
                r"\barchitect",
                r"\bdesign\b",
                "compare and contrast",
                r"\bresearch\b",
                "step by step",
                r"\brefactor",
                r"\boptimi[sz]",
            ]),
            simple: Effort::Low,
            standard: Effort::Medium,
            complex: Effort::High,
        }
    }
}

/// `[budget]`: per-session token budget and history compaction (seed 000 Orchestrator:
/// cumulative output tokens per session, a warning at a configurable percentage).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetParams {
    /// Output tokens one session may use; 0 for no limit.
    pub session_tokens: u64,
    /// Share of `session_tokens` at which a warning shows.
    pub warn_percent: u8,
    /// The model's context in tokens; 0 leaves it to the provider.
    pub context_tokens: u32,
    /// Share of the context the history may fill before older turns are compacted.
    pub compact_at_percent: u8,
    /// Newest turns a compaction keeps verbatim.
    pub keep_recent_turns: usize,
}

impl Default for BudgetParams {
    fn default() -> Self {
        Self {
            session_tokens: 200_000,
            warn_percent: 80,
            context_tokens: 0,
            compact_at_percent: 75,
            keep_recent_turns: 2,
        }
    }
}

/// How demanding a question is; decides the effort when the user did not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    Simple,
    Standard,
    Complex,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Simple => "simple",
            Route::Standard => "standard",
            Route::Complex => "complex",
        }
    }

    /// The effort the routing config assigns to this class.
    pub fn effort(self, cfg: &RoutingParams) -> Effort {
        match self {
            Route::Simple => cfg.simple,
            Route::Standard => cfg.standard,
            Route::Complex => cfg.complex,
        }
    }
}

/// Classes questions by the routing patterns and their length (seed: simple / standard /
/// complex). The patterns are compiled once; invalid ones are skipped.
#[derive(Clone, Debug)]
pub struct Router {
    cfg: RoutingParams,
    simple: Vec<regex::Regex>,
    complex: Vec<regex::Regex>,
}

impl Router {
    pub fn new(cfg: &RoutingParams) -> Self {
        let compile = |patterns: &[String]| {
            patterns
                .iter()
                .filter_map(|p| {
                    regex::RegexBuilder::new(p)
                        .case_insensitive(true)
                        .size_limit(1 << 20)
                        .build()
                        .ok()
                })
                .collect()
        };
        Self {
            cfg: cfg.clone(),
            simple: compile(&cfg.simple_patterns),
            complex: compile(&cfg.complex_patterns),
        }
    }

    pub fn classify(&self, question: &str) -> Route {
        let len = question.trim().chars().count();
        if self.complex.iter().any(|re| re.is_match(question)) {
            Route::Complex
        } else if self.simple.iter().any(|re| re.is_match(question))
            || len < self.cfg.simple_max_chars
        {
            Route::Simple
        } else if len > self.cfg.complex_min_chars {
            Route::Complex
        } else {
            Route::Standard
        }
    }

    pub fn config(&self) -> &RoutingParams {
        &self.cfg
    }

    /// The effort for `question`: routed when routing is on, else the configured default.
    pub fn effort(&self, question: &str, default: Effort) -> (Route, Effort) {
        let route = self.classify(question);
        (
            route,
            if self.cfg.enabled {
                route.effort(&self.cfg)
            } else {
                default
            },
        )
    }
}

/// Classes one question (compiles the patterns; use [`Router`] for many).
pub fn classify(question: &str, cfg: &RoutingParams) -> Route {
    Router::new(cfg).classify(question)
}

/// Extra context for a question (the memory engine's retrieval plugs in here).
pub trait KnowledgeContext: Send + Sync {
    /// Text to put before the conversation, or `None` when nothing is relevant.
    fn context_for(&self, question: &str) -> Option<String>;
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
    /// Continue from this node of the session instead of its end: the history up to it is
    /// sent, and the new query branches from it.
    pub branch_from: Option<NodeId>,
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
    pub budget: BudgetParams,
    /// The model's context in tokens, for deciding when to compact history.
    pub context_tokens: u32,
    /// Prompt used to summarise older turns.
    pub compaction_prompt: String,
    pub knowledge: Option<Arc<dyn KnowledgeContext>>,
}

/// The conversation so far: the latest compaction summary (if any), then each query with the
/// response that answered it, skipping nodes a compaction superseded. A summary the provider
/// wrote goes back with the answer of the turn it arrived in (or alone, when that turn gave
/// no answer), as the provider expects it.
pub fn session_history(
    nodes: &[Node],
    superseded: &std::collections::HashSet<NodeId>,
) -> Vec<Message> {
    let mut out = Vec::new();
    if let Some(c) = nodes.iter().rev().find(|n| {
        n.kind == NodeType::Compaction
            && !is_server_side_compaction(n)
            && !superseded.contains(&n.id)
    }) {
        out.push(Message::user(format!(
            "Summary of our conversation so far:\n{}",
            c.text
        )));
        out.push(Message::assistant(
            "Understood; I will continue from that summary.",
        ));
    }
    let mut pending: Option<super::llm::Compaction> = None;
    for n in nodes.iter().filter(|n| !superseded.contains(&n.id)) {
        match n.kind {
            NodeType::Compaction if is_server_side_compaction(n) => {
                pending = Some(server_side_block(n));
            }
            NodeType::Query => {
                if let Some(summary) = pending.take() {
                    out.push(Message::assistant("").with_compaction(summary));
                }
                out.push(Message::user(n.text.clone()))
            }
            NodeType::Response if !n.text.is_empty() => {
                // Two queries in a row (a failed turn) must not both be sent.
                if matches!(out.last(), Some(m) if m.role == super::llm::Role::Assistant) {
                    continue;
                }
                let mut m = Message::assistant(n.text.clone());
                m.compaction = pending.take();
                out.push(m)
            }
            _ => {}
        }
        // A query not followed by an answer is dropped when the next query comes.
        let len = out.len();
        if len >= 2
            && out[len - 1].role == super::llm::Role::User
            && out[len - 2].role == super::llm::Role::User
        {
            out.remove(len - 2);
        }
    }
    if let Some(summary) = pending {
        out.push(Message::assistant("").with_compaction(summary));
    }
    if matches!(out.last(), Some(m) if m.role == super::llm::Role::User) {
        out.pop();
    }
    out
}

/// The history of a branch that continues from `node`: the conversation up to and
/// including it. Thinking at the branch point is restated as text (signed thinking cannot
/// be sent back as thinking). `None` when the node is not in `nodes`.
pub fn history_until(nodes: &[Node], node: NodeId) -> Option<Vec<Message>> {
    let pos = nodes.iter().position(|n| n.id == node)?;
    let upto = &nodes[..=pos];
    let mut out = session_history(upto, &Default::default());
    let at = &nodes[pos];
    if !matches!(at.kind, NodeType::Query | NodeType::Response) && !is_server_side_compaction(at) {
        // The open question of this turn, then the text at the branch point.
        if let Some(q) = upto.iter().rev().find(|n| n.kind == NodeType::Query) {
            out.push(Message::user(q.text.clone()));
        }
        let label = if at.kind == NodeType::Thinking {
            "My reasoning so far"
        } else {
            "So far"
        };
        out.push(Message::assistant(format!("{label}:\n{}", at.text)));
    }
    Some(out)
}

/// Nodes of the session that a compaction node supersedes.
fn superseded_nodes(
    store: &Store,
    nodes: &[Node],
) -> Result<std::collections::HashSet<NodeId>, StoreError> {
    let mut out = std::collections::HashSet::new();
    for n in nodes.iter().filter(|n| n.kind == NodeType::Compaction) {
        for e in store.edges_from(n.id, Some(EdgeType::Supersedes))? {
            out.insert(e.dst);
        }
    }
    Ok(out)
}

/// Output tokens a session has used, from its responses' recorded usage.
pub fn session_output_tokens(nodes: &[Node]) -> u64 {
    nodes
        .iter()
        .filter(|n| matches!(n.kind, NodeType::Response | NodeType::Compaction))
        .filter_map(|n| n.meta.get("usage"))
        .filter_map(|u| u.get("output_tokens").and_then(|v| v.as_u64()))
        .sum()
}

/// A rough token count (four characters a token), enough to decide when to compact.
fn estimate_tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| {
            let summary = m
                .compaction
                .as_ref()
                .map_or(0, |c| c.summary.chars().count());
            (m.content.chars().count() + summary) as u64 / 4 + 4
        })
        .sum()
}

/// Nodes being streamed into, and what is still to be committed.
struct Live {
    session: SessionId,
    stream: StreamId,
    model: String,
    thinking: Option<Node>,
    response: Option<Node>,
    /// The provider's compaction of this turn, if it compacted.
    compaction: Option<Node>,
    dirty: bool,
    /// Nodes created since the last report.
    created: Vec<(NodeId, NodeType)>,
    /// Steps and decision points of the thinking, found as it streams.
    graph: crate::engines::thinkgraph::ThinkGraphBuilder,
    /// Decision points not yet committed.
    decisions: Vec<crate::store::DecisionPoint>,
    chunks: Vec<StoredChunk>,
    next_chunk: u32,
    total_bytes: u64,
}

impl Live {
    fn node(&mut self, kind: NodeType) -> &mut Node {
        let slot = if kind == NodeType::Thinking {
            &mut self.thinking
        } else {
            &mut self.response
        };
        let created = &mut self.created;
        slot.get_or_insert_with(|| {
            let mut n = Node::new(self.session, kind, "");
            created.push((n.id, kind));
            n.status = NodeStatus::Streaming;
            n.model = Some(self.model.clone());
            n.raw_stream = Some(self.stream);
            n
        })
    }

    /// Records ThinkGraph's findings on the thinking node and reports them.
    fn apply_graph(
        &mut self,
        updates: Vec<crate::engines::thinkgraph::GraphUpdate>,
        events: &mpsc::UnboundedSender<TurnEvent>,
    ) {
        use crate::engines::thinkgraph::GraphUpdate;
        if updates.is_empty() {
            return;
        }
        let confidence = self.graph.confidence();
        let id = {
            let node = self.node(NodeType::Thinking);
            node.confidence = Some(confidence);
            node.id
        };
        for u in updates {
            match u {
                GraphUpdate::Step(step) => {
                    step.append_to(self.node(NodeType::Thinking));
                    let _ = events.send(TurnEvent::Step { node: id, step });
                }
                GraphUpdate::Decision(decision) => {
                    self.decisions.push(crate::store::DecisionPoint {
                        id: crate::store::DecisionId::new(),
                        node: id,
                        step_number: decision.step_index,
                        description: decision.description.clone(),
                        chosen_path: decision.chosen_path.clone(),
                        alternatives: decision.alternatives.clone(),
                        confidence: decision.confidence,
                        created_at: Utc::now(),
                    });
                    let _ = events.send(TurnEvent::Decision { node: id, decision });
                }
            }
        }
        self.dirty = true;
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
        if !self.dirty && self.chunks.is_empty() && self.decisions.is_empty() {
            return Ok(());
        }
        let chunks = std::mem::take(&mut self.chunks);
        let decisions = std::mem::take(&mut self.decisions);
        let first = self.next_chunk;
        self.next_chunk += chunks.len() as u32;
        header.chunk_count = self.next_chunk;
        header.total_bytes = self.total_bytes;
        header.nodes = self
            .compaction
            .iter()
            .chain(self.thinking.iter())
            .chain(self.response.iter())
            .map(|n| n.id)
            .collect();
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
            for d in &decisions {
                w.put_decision_point(d)?;
            }
            Ok(())
        })?;
        self.dirty = false;
        Ok(())
    }
}

/// What a continued session sends: its history, the nodes that history stands for (what a
/// compaction by the provider would supersede), and whether older turns were just compacted.
struct Prepared {
    history: Vec<Message>,
    live: Vec<NodeId>,
    compacted: bool,
}

impl Orchestrator {
    /// An orchestrator with the built-in budget settings.
    pub fn new(store: Store, provider: Arc<dyn Provider>, model: impl Into<String>) -> Self {
        Self {
            store,
            provider,
            model: model.into(),
            budget: BudgetParams::default(),
            context_tokens: 200_000,
            compaction_prompt: "Summarise this conversation so far in a few sentences, keeping every fact, decision and open question needed to continue it.".into(),
            knowledge: None,
        }
    }

    /// The history to send for `question`; when it would fill more than the configured share
    /// of the context, older turns are first summarised by the model into a compaction node
    /// that supersedes them.
    async fn compact_if_needed(
        &self,
        session: &Session,
        nodes: &[Node],
        question: &str,
        events: &mpsc::UnboundedSender<TurnEvent>,
        cancel: &CancellationToken,
    ) -> anyhow::Result<Prepared> {
        let store = &self.store;
        let superseded = superseded_nodes(store, nodes)?;
        let history = session_history(nodes, &superseded);
        let unchanged = |history| Prepared {
            history,
            live: nodes
                .iter()
                .filter(|n| !superseded.contains(&n.id))
                .map(|n| n.id)
                .collect(),
            compacted: false,
        };
        let limit =
            u64::from(self.context_tokens) * u64::from(self.budget.compact_at_percent) / 100;
        let needed = estimate_tokens(&history) + question.chars().count() as u64 / 4;
        if limit == 0 || needed <= limit {
            return Ok(unchanged(history));
        }
        // Keep the newest turns verbatim; everything older (and any earlier summary) goes.
        let live: Vec<&Node> = nodes
            .iter()
            .filter(|n| !superseded.contains(&n.id))
            .collect();
        let query_positions: Vec<usize> = live
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == NodeType::Query)
            .map(|(i, _)| i)
            .collect();
        let keep_from = query_positions
            .len()
            .checked_sub(self.budget.keep_recent_turns)
            .and_then(|i| query_positions.get(i).copied())
            .unwrap_or(0);
        let old: Vec<&Node> = live[..keep_from].to_vec();
        if old.is_empty() {
            return Ok(unchanged(history));
        }
        let old_nodes: Vec<Node> = old.iter().map(|n| (*n).clone()).collect();
        let mut transcript = String::new();
        for m in session_history(&old_nodes, &std::collections::HashSet::new()) {
            let who = if m.role == super::llm::Role::User {
                "User"
            } else {
                "Assistant"
            };
            if let Some(c) = &m.compaction {
                transcript.push_str(&format!(
                    "Summary of the conversation before: {}\n\n",
                    c.summary
                ));
            }
            if !m.content.is_empty() {
                transcript.push_str(&format!("{who}: {}\n\n", m.content));
            }
        }
        let mut req = ChatRequest::new(
            self.model.clone(),
            vec![Message::user(format!(
                "{}\n\n{transcript}",
                self.compaction_prompt
            ))],
        );
        req.max_tokens = 512;
        req.temperature = Some(0.0);
        let mut stream = self.provider.stream(
            req,
            CallCtx {
                cancel: cancel.clone(),
                raw: None,
            },
        );
        let mut summary = String::new();
        let mut usage = Usage::default();
        while let Some(ev) = stream.next().await {
            match ev {
                StreamEvent::TextDelta { text } => summary.push_str(&text),
                StreamEvent::Usage { usage: u } => usage = u,
                StreamEvent::Error { error } => {
                    anyhow::bail!("compacting the history failed: {error}")
                }
                _ => {}
            }
        }
        if summary.trim().is_empty() {
            return Ok(unchanged(history));
        }
        let mut node = Node::new(session.id, NodeType::Compaction, summary.trim().to_string());
        node.model = Some(self.model.clone());
        node.meta.insert("usage".into(), json!(usage));
        node.meta.insert("superseded".into(), json!(old.len()));
        store.write(|w| {
            w.put_node(&node)?;
            for n in &old {
                w.put_edge(&Edge::new(node.id, EdgeType::Supersedes, n.id))?;
            }
            Ok(())
        })?;
        let _ = events.send(TurnEvent::Compacted {
            node: node.id,
            superseded: old.len(),
        });
        let mut all = nodes.to_vec();
        all.push(node);
        let superseded = superseded_nodes(store, &all)?;
        Ok(Prepared {
            history: session_history(&all, &superseded),
            live: all
                .iter()
                .filter(|n| !superseded.contains(&n.id))
                .map(|n| n.id)
                .collect(),
            compacted: true,
        })
    }

    /// Records a compaction the provider made while answering: one compaction node per turn
    /// holding its summary, superseding every node this turn's history stood for, and one
    /// more compaction on the session. A later summary in the same response covers the
    /// earlier one, so it replaces that node's text.
    fn provider_compaction(
        &self,
        live: &mut Live,
        session: &mut Session,
        prior: &[NodeId],
        summary: String,
        encrypted_content: Option<String>,
        events: &mpsc::UnboundedSender<TurnEvent>,
    ) -> Result<(), StoreError> {
        let set_encrypted = |node: &mut Node| match &encrypted_content {
            Some(e) => {
                node.meta.insert("encrypted_content".into(), json!(e));
            }
            None => {
                node.meta.remove("encrypted_content");
            }
        };
        if let Some(node) = live.compaction.as_mut() {
            node.text = summary;
            set_encrypted(node);
            let node = &*node;
            return self.store.write(|w| w.put_node(node));
        }
        let mut node = Node::new(session.id, NodeType::Compaction, summary);
        set_encrypted(&mut node);
        node.model = Some(self.model.clone());
        node.raw_stream = Some(live.stream);
        node.meta.insert(SERVER_SIDE.into(), json!(true));
        node.meta
            .insert("provider".into(), json!(self.provider.name()));
        node.meta.insert("superseded".into(), json!(prior.len()));
        count_compaction(session);
        session.updated_at = Utc::now();
        let s = &*session;
        self.store.write(|w| {
            w.put_node(&node)?;
            for id in prior {
                w.put_edge(&Edge::new(node.id, EdgeType::Supersedes, *id))?;
            }
            w.put_session(s)
        })?;
        let _ = events.send(TurnEvent::Compacted {
            node: node.id,
            superseded: prior.len(),
        });
        live.compaction = Some(node);
        // The next flush lists it among the raw stream's nodes.
        live.dirty = true;
        Ok(())
    }

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
                let s = store
                    .session(id)?
                    .ok_or_else(|| StoreError::NotFound(format!("session {id}")))?;
                let nodes = store.session_nodes(id)?;
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
                    let superseded = superseded_nodes(store, &nodes)?;
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
                        .compact_if_needed(&s, &nodes, &req.question, &events, &cancel)
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
        let query = Node::new(session.id, NodeType::Query, req.question.clone());
        let mut messages = history;
        messages.push(Message::user(req.question.clone()));
        let system = match self
            .knowledge
            .as_ref()
            .and_then(|k| k.context_for(&req.question))
        {
            Some(context) => Some(match &req.system {
                Some(sys) => format!("{sys}\n\nRelevant knowledge:\n{context}"),
                None => format!("Relevant knowledge:\n{context}"),
            }),
            None => req.system.clone(),
        };
        let chat = ChatRequest {
            model: self.model.clone(),
            system,
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
            if let Some(from) = req.branch_from {
                w.put_edge(&Edge::new(query.id, EdgeType::BranchesFrom, from))?;
            }
            w.put_raw_stream(&header)
        })?;
        let _ = events.send(TurnEvent::Started {
            session: session.id,
            query: query.id,
        });

        let (raw_tx, mut raw_rx) = mpsc::unbounded_channel();
        let mut stream = self.provider.stream(
            chat,
            CallCtx {
                cancel: cancel.clone(),
                raw: Some(raw_tx),
            },
        );
        let mut live = Live {
            session: session.id,
            stream: header.id,
            model: self.model.clone(),
            thinking: None,
            response: None,
            compaction: None,
            dirty: false,
            created: Vec::new(),
            graph: crate::engines::thinkgraph::ThinkGraphBuilder::new(),
            decisions: Vec::new(),
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
                            let updates = live.graph.push(&text);
                            let _ = events.send(TurnEvent::Thinking(text));
                            for (id, kind) in live.created.drain(..) {
                                let _ = events.send(TurnEvent::NodeCreated { id, kind });
                            }
                            live.apply_graph(updates, &events);
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
                        StreamEvent::Compaction { summary, encrypted_content } => {
                            self.provider_compaction(
                                &mut live,
                                &mut session,
                                &prior,
                                summary,
                                encrypted_content,
                                &events,
                            )?;
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
                    for (id, kind) in live.created.drain(..) {
                        let _ = events.send(TurnEvent::NodeCreated { id, kind });
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
        live.flush(store, &mut header)?;
        let (t, r) = (
            live.thinking.as_ref().map(|n| n.id),
            live.response.as_ref().map(|n| n.id),
        );
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
    let line = question
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("untitled")
        .trim();
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
        let h = session_history(&nodes, &Default::default());
        assert_eq!(h, vec![Message::user("q1"), Message::assistant("a1")]);
    }

    #[test]
    fn a_compaction_summary_replaces_what_it_supersedes() {
        let s = SessionId::new();
        let q1 = Node::new(s, NodeType::Query, "q1");
        let a1 = Node::new(s, NodeType::Response, "a1");
        let q2 = Node::new(s, NodeType::Query, "q2");
        let a2 = Node::new(s, NodeType::Response, "a2");
        let c = Node::new(s, NodeType::Compaction, "they asked q1");
        let superseded = [q1.id, a1.id].into_iter().collect();
        let h = session_history(&[q1, a1, q2, a2, c], &superseded);
        assert_eq!(h.len(), 4);
        assert!(h[0].content.contains("they asked q1"));
        assert_eq!(h[2], Message::user("q2"));
        assert_eq!(h[3], Message::assistant("a2"));
    }

    #[test]
    fn a_provider_summary_goes_back_with_the_answer_of_its_turn() {
        let s = SessionId::new();
        let q1 = Node::new(s, NodeType::Query, "q1");
        let a1 = Node::new(s, NodeType::Response, "a1");
        let q2 = Node::new(s, NodeType::Query, "q2");
        let mut c = Node::new(s, NodeType::Compaction, "sum");
        c.meta.insert(SERVER_SIDE.into(), json!(true));
        c.meta.insert("encrypted_content".into(), json!("opaque"));
        let a2 = Node::new(s, NodeType::Response, "a2");
        let q3 = Node::new(s, NodeType::Query, "q3");
        let block = server_side_block(&c);
        assert_eq!(block.encrypted_content.as_deref(), Some("opaque"));
        let superseded = [q1.id, a1.id].into_iter().collect();
        let nodes = [q1, a1, q2.clone(), c.clone(), a2, q3.clone()];
        assert_eq!(
            session_history(&nodes, &superseded),
            vec![
                Message::user("q2"),
                Message::assistant("a2").with_compaction(block.clone())
            ]
        );
        // The compacting turn gave no answer: the summary goes back on its own.
        let a3 = Node::new(s, NodeType::Response, "a3");
        let h = session_history(&[q2.clone(), c.clone(), q3, a3], &Default::default());
        assert_eq!(
            h,
            vec![
                Message::user("q2"),
                Message::assistant("").with_compaction(block.clone()),
                Message::user("q3"),
                Message::assistant("a3"),
            ]
        );
        let h = session_history(&[q2, c], &Default::default());
        assert_eq!(h[1], Message::assistant("").with_compaction(block));
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn a_branch_sends_the_history_up_to_its_node() {
        let s = SessionId::new();
        let q1 = Node::new(s, NodeType::Query, "q1");
        let t1 = Node::new(s, NodeType::Thinking, "hmm");
        let a1 = Node::new(s, NodeType::Response, "a1");
        let q2 = Node::new(s, NodeType::Query, "q2");
        let a2 = Node::new(s, NodeType::Response, "a2");
        let nodes = vec![q1.clone(), t1.clone(), a1.clone(), q2, a2];
        assert_eq!(
            history_until(&nodes, a1.id).unwrap(),
            vec![Message::user("q1"), Message::assistant("a1")]
        );
        assert_eq!(
            history_until(&nodes, t1.id).unwrap(),
            vec![
                Message::user("q1"),
                Message::assistant("My reasoning so far:\nhmm")
            ]
        );
        assert_eq!(history_until(&nodes, q1.id).unwrap(), Vec::<Message>::new());
        assert!(history_until(&nodes, NodeId::new()).is_none());
    }

    #[test]
    fn a_failed_turn_is_not_sent_twice() {
        let s = SessionId::new();
        let nodes = vec![
            Node::new(s, NodeType::Query, "q1"),
            Node::new(s, NodeType::Query, "q1 again"),
            Node::new(s, NodeType::Response, "a"),
        ];
        let h = session_history(&nodes, &Default::default());
        assert_eq!(h, vec![Message::user("q1 again"), Message::assistant("a")]);
    }

    fn routing() -> RoutingParams {
        RoutingParams::default()
    }

    #[test]
    fn routes_by_pattern_and_length() {
        let r = routing();
        assert_eq!(classify("hi there", &r), Route::Simple);
        assert_eq!(
            classify(
                "What is a monad, in the sense functional programmers use it?",
                &r
            ),
            Route::Simple
        );
        assert_eq!(classify("Please debug this", &r), Route::Complex);
        assert_eq!(
            classify(
                &"How do tides work across the different oceans of the world? ".repeat(2),
                &r
            ),
            Route::Standard
        );
        assert_eq!(
            classify(
                &"Tell me about tides and the moon and the sun. ".repeat(20),
                &r
            ),
            Route::Complex
        );
        assert_eq!(
            classify(
                "Walk me through it step by step, please, with care and rigour",
                &r
            ),
            Route::Complex
        );
    }

    #[test]
    fn output_tokens_add_up_over_responses() {
        let s = SessionId::new();
        let mut a = Node::new(s, NodeType::Response, "a");
        a.meta.insert(
            "usage".into(),
            json!({"input_tokens": 5, "output_tokens": 7}),
        );
        let mut b = Node::new(s, NodeType::Response, "b");
        b.meta.insert(
            "usage".into(),
            json!({"input_tokens": 5, "output_tokens": 3}),
        );
        assert_eq!(
            session_output_tokens(&[a, Node::new(s, NodeType::Query, "q"), b]),
            10
        );
    }

    #[test]
    fn titles_are_the_first_line_cut_to_80() {
        assert_eq!(title_from("\n  Why?\nmore"), "Why?");
        let long = "x".repeat(100);
        assert_eq!(title_from(&long).chars().count(), 81);
    }
}
