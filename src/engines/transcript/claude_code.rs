//! Claude Code session transcripts (JSONL, FORMATS.md §3): each line is parsed tolerantly and
//! mapped onto glassbox nodes and edges by a per-file [`FileMapper`] whose ids are
//! deterministic, so reading a line twice writes the same records.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};

use super::{ImportSummary, stable_uuid};
use crate::engines::thinkgraph;
use crate::store::{
    DecisionId, DecisionPoint, Edge, EdgeType, Node, NodeId, NodeStatus, NodeType, SessionId,
    Store, StoreError,
};

/// Tool names whose calls start a subagent thread.
const TASK_TOOLS: [&str; 2] = ["Task", "Agent"];
/// A `toolUseResult` larger than this (serialised bytes) is not copied into the node: the
/// tool result text already holds what it says.
const MAX_TOOL_USE_RESULT_BYTES: usize = 4096;
/// Longest ancestor chain a compaction walks to find what it supersedes.
const MAX_CHAIN: usize = 1_000_000;

// --- Lines as written by Claude Code --------------------------------------------------------

/// Accepts a string; anything else (null, numbers, objects) becomes `None` instead of failing
/// the whole line.
fn lenient_str<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any value")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
    d.deserialize_any(V)
}

/// Accepts a bool; anything else is `None`.
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Bool(b) => Some(b),
        _ => None,
    })
}

/// The fields of a transcript line glassbox reads; everything else is ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RawLine {
    #[serde(rename = "type", deserialize_with = "lenient_str")]
    pub kind: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub subtype: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub uuid: Option<String>,
    #[serde(rename = "parentUuid", deserialize_with = "lenient_str")]
    pub parent_uuid: Option<String>,
    #[serde(rename = "logicalParentUuid", deserialize_with = "lenient_str")]
    pub logical_parent_uuid: Option<String>,
    #[serde(rename = "isSidechain", deserialize_with = "lenient_bool")]
    pub is_sidechain: Option<bool>,
    #[serde(rename = "sessionId", deserialize_with = "lenient_str")]
    pub session_id: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub timestamp: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub cwd: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub version: Option<String>,
    #[serde(rename = "gitBranch", deserialize_with = "lenient_str")]
    pub git_branch: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub slug: Option<String>,
    #[serde(rename = "agentId", deserialize_with = "lenient_str")]
    pub agent_id: Option<String>,
    #[serde(rename = "requestId", deserialize_with = "lenient_str")]
    pub request_id: Option<String>,
    pub message: Option<RawMessage>,
    pub content: Option<Value>,
    #[serde(rename = "compactMetadata")]
    pub compact_metadata: Option<Value>,
    #[serde(rename = "isMeta", deserialize_with = "lenient_bool")]
    pub is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary", deserialize_with = "lenient_bool")]
    pub is_compact_summary: Option<bool>,
    #[serde(rename = "toolUseResult")]
    pub tool_use_result: Option<Value>,
    #[serde(deserialize_with = "lenient_str")]
    pub summary: Option<String>,
    #[serde(rename = "leafUuid", deserialize_with = "lenient_str")]
    pub leaf_uuid: Option<String>,
}

/// The API message inside `user` and `assistant` lines.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RawMessage {
    #[serde(deserialize_with = "lenient_str")]
    pub id: Option<String>,
    #[serde(deserialize_with = "lenient_str")]
    pub model: Option<String>,
    pub content: Option<Value>,
    #[serde(deserialize_with = "lenient_str")]
    pub stop_reason: Option<String>,
    pub usage: Option<Value>,
}

fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The text of a `tool_result` content (a string or text blocks).
fn tool_result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let mut parts = Vec::new();
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = b.get("text").and_then(Value::as_str) {
                            parts.push(t.to_string());
                        }
                    }
                    Some("image") => parts.push("[image]".into()),
                    _ => {}
                }
            }
            parts.join("\n")
        }
        _ => String::new(),
    }
}

// --- Mapping --------------------------------------------------------------------------------

/// A line's uuid as a compact key (a parsed UUID, or a hash of any other string).
type LineKey = [u8; 16];

fn line_key(s: &str) -> LineKey {
    match uuid::Uuid::parse_str(s) {
        Ok(u) => *u.as_bytes(),
        Err(_) => {
            use sha2::Digest;
            let d = sha2::Sha256::digest(s.as_bytes());
            let mut k = [0u8; 16];
            k.copy_from_slice(&d[..16]);
            k
        }
    }
}

/// What a line became, for its children and for compactions.
#[derive(Clone, Debug, Default)]
struct LineInfo {
    parent: Option<LineKey>,
    /// Nodes this line created.
    nodes: Vec<NodeId>,
    /// The node a child line continues from.
    tail: Option<NodeId>,
    /// The user turn this line belongs to.
    query: Option<NodeId>,
    is_compaction: bool,
}

/// One assistant API message, possibly split over several lines.
#[derive(Clone, Debug, Default)]
struct MessageState {
    blocks: u32,
    response: Option<NodeId>,
    /// The node that carries the message's usage (its first node), so usage counts once.
    holder: Option<NodeId>,
}

/// What a batch of lines changed in one session.
#[derive(Clone, Debug, Default)]
pub(crate) struct SessionDelta {
    pub claude_session: String,
    /// Set when this batch minted the session's id (it is not in the store yet).
    pub minted: bool,
    pub first_ts: Option<DateTime<Utc>>,
    pub last_ts: Option<DateTime<Utc>>,
    pub model: Option<String>,
    pub cwd: Option<String>,
    pub git_branch: Option<String>,
    pub version: Option<String>,
    pub slug: Option<String>,
    /// The first main-thread user turn, for the title.
    pub first_query: Option<String>,
    pub summaries: Vec<(String, Option<String>)>,
    pub files: Vec<String>,
}

/// Everything a batch of lines produced, ready for one write transaction.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    pub decisions: Vec<DecisionPoint>,
    pub sessions: BTreeMap<SessionId, SessionDelta>,
}

/// Per-file mapping state. Lines must be fed in file order; feeding a prefix again in `dry`
/// mode rebuilds the state a resumed read needs.
pub(crate) struct FileMapper {
    path: String,
    /// The Claude session id the file is named after.
    file_session: Option<String>,
    /// `agent-<id>.jsonl` files under `subagents/`.
    file_agent: Option<String>,
    lines: HashMap<LineKey, LineInfo>,
    messages: HashMap<String, MessageState>,
    tool_calls: HashMap<String, NodeId>,
    /// Task/Agent tool calls seen in this file.
    task_calls: Vec<TaskCall>,
    /// Task/Agent tool calls of the session already in the store, loaded on first need
    /// (only for sessions stored before this import; see [`RunTaskCalls`]).
    stored_task_calls: Option<Vec<TaskCall>>,
    last_ts: Option<DateTime<Utc>>,
    /// Nodes created or changed since the last batch, by id, with their first-touch order.
    live: HashMap<NodeId, Node>,
    order: Vec<NodeId>,
    edges: Vec<Edge>,
    decisions: Vec<DecisionPoint>,
    sessions: BTreeMap<SessionId, SessionDelta>,
    /// Summaries seen before the file's session existed.
    pending_summaries: Vec<(String, Option<String>)>,
    /// Whether lines are only replayed to rebuild state (nothing is produced).
    pub dry: bool,
}

/// A Task/Agent tool call a subagent thread may have come from: (node, prompt, agent id).
type TaskCall = (NodeId, String, Option<String>);

/// Task/Agent tool calls of the sessions an importer created itself, across all its files.
/// For those sessions this is everything the store holds or will hold once the batches in
/// flight are committed, so linking a subagent thread needs no store read and no wait for
/// the writer thread (which would stall the import once per subagent file).
#[derive(Default)]
pub(crate) struct RunTaskCalls {
    /// Sessions first created by this importer (nothing of theirs was stored before).
    created: HashSet<SessionId>,
    calls: HashMap<SessionId, Vec<TaskCall>>,
}

impl RunTaskCalls {
    fn set_agent(&mut self, session: SessionId, id: NodeId, agent: &str) {
        if let Some(calls) = self.calls.get_mut(&session) {
            for c in calls.iter_mut().filter(|c| c.0 == id) {
                c.2 = Some(agent.to_string());
            }
        }
    }
}

/// The shared context a line is mapped in.
pub(crate) struct MapCtx<'a> {
    pub store: &'a Store,
    /// Claude session id → glassbox session id.
    pub sessions: &'a mut HashMap<String, SessionId>,
    pub summary: &'a mut ImportSummary,
    /// The writer thread committing earlier batches, if one is running.
    pub(crate) writes: Option<&'a super::WritePipe>,
    pub(crate) task_calls: &'a mut RunTaskCalls,
}

impl MapCtx<'_> {
    /// Waits for earlier batches to be committed: call before reading the store, which may
    /// not hold them yet.
    fn settle(&self) -> Result<(), StoreError> {
        match self.writes {
            Some(w) => w.settle(),
            None => Ok(()),
        }
    }
}

impl FileMapper {
    /// A mapper for the transcript at `path`.
    pub fn new(path: &std::path::Path) -> Self {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string);
        let parent = path.parent();
        let in_subagents =
            parent.and_then(|p| p.file_name()).and_then(|n| n.to_str()) == Some("subagents");
        let (file_session, file_agent) = if in_subagents {
            let sid = parent
                .and_then(|p| p.parent())
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str())
                .map(str::to_string);
            let agent = stem
                .as_deref()
                .map(|s| s.strip_prefix("agent-").unwrap_or(s).to_string());
            (sid, agent)
        } else {
            (stem, None)
        };
        Self {
            path: path.display().to_string(),
            file_session,
            file_agent,
            lines: HashMap::new(),
            messages: HashMap::new(),
            tool_calls: HashMap::new(),
            task_calls: Vec::new(),
            stored_task_calls: None,
            last_ts: None,
            live: HashMap::new(),
            order: Vec::new(),
            edges: Vec::new(),
            decisions: Vec::new(),
            sessions: BTreeMap::new(),
            pending_summaries: Vec::new(),
            dry: false,
        }
    }

    /// The Claude session id the file is named after (`<id>.jsonl`, or the folder of a
    /// `subagents/` file).
    pub fn file_session(&self) -> Option<&str> {
        self.file_session.as_deref()
    }

    /// Takes what the lines fed since the last call produced.
    pub fn take_batch(&mut self) -> Batch {
        let mut live = std::mem::take(&mut self.live);
        let nodes = self
            .order
            .drain(..)
            .filter_map(|id| live.remove(&id))
            .collect();
        Batch {
            nodes,
            edges: std::mem::take(&mut self.edges),
            decisions: std::mem::take(&mut self.decisions),
            sessions: std::mem::take(&mut self.sessions),
        }
    }

    /// Drops whatever a dry replay produced.
    pub fn discard_batch(&mut self) {
        self.live.clear();
        self.order.clear();
        self.edges.clear();
        self.decisions.clear();
        self.sessions.clear();
    }

    /// Maps one line. `Err` is the reason a malformed line was skipped.
    pub fn feed(&mut self, ctx: &mut MapCtx<'_>, raw: &[u8]) -> Result<(), String> {
        if raw.iter().all(u8::is_ascii_whitespace) {
            self.skip(ctx, "blank line");
            return Ok(());
        }
        let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let line: RawLine =
            serde_json::from_slice(raw).map_err(|e| format!("invalid JSON: {e}"))?;
        if let Some(ts) = line.timestamp.as_deref().and_then(parse_timestamp) {
            self.last_ts = Some(ts);
        }
        let kind = line.kind.clone().unwrap_or_default();
        match kind.as_str() {
            "user" => self.user(ctx, line)?,
            "assistant" => self.assistant(ctx, line)?,
            "system" => self.system(ctx, line)?,
            "summary" => self.summary_line(ctx, line)?,
            "progress" | "file-history-snapshot" | "queue-operation" => {
                self.skip(ctx, &kind);
                self.pass_through(&line);
            }
            "" => {
                self.skip(ctx, "line without a type");
                self.pass_through(&line);
            }
            other => {
                self.skip(ctx, &format!("unknown line type '{other}'"));
                self.pass_through(&line);
            }
        }
        Ok(())
    }

    fn skip(&self, ctx: &mut MapCtx<'_>, reason: &str) {
        if !self.dry {
            *ctx.summary
                .skipped_by_reason
                .entry(reason.to_string())
                .or_insert(0) += 1;
        }
    }

    /// Records a line that made no node: children continue from its parent.
    fn pass_through(&mut self, line: &RawLine) {
        let Some(uuid) = line.uuid.as_deref() else {
            return;
        };
        let parent = line.parent_uuid.as_deref().map(line_key);
        let (tail, query) = parent
            .and_then(|p| self.lines.get(&p))
            .map(|i| (i.tail, i.query))
            .unwrap_or((None, None));
        self.lines.insert(
            line_key(uuid),
            LineInfo {
                parent,
                nodes: Vec::new(),
                tail,
                query,
                is_compaction: false,
            },
        );
    }

    /// The glassbox session of a line, minting (and recording) one for a new Claude session.
    fn session_of(&mut self, ctx: &mut MapCtx<'_>, line: &RawLine) -> Option<(SessionId, String)> {
        let claude = line
            .session_id
            .clone()
            .or_else(|| self.file_session.clone())?;
        let ts = self.last_ts?;
        let (id, minted) = match ctx.sessions.get(&claude) {
            Some(id) => (*id, false),
            None => {
                let id = SessionId(stable_uuid(ts, 0, &[b"session", claude.as_bytes()]));
                ctx.sessions.insert(claude.clone(), id);
                if !self.dry {
                    ctx.task_calls.created.insert(id);
                }
                (id, true)
            }
        };
        let delta = self.sessions.entry(id).or_insert_with(|| SessionDelta {
            claude_session: claude.clone(),
            files: Vec::new(),
            ..Default::default()
        });
        delta.minted |= minted;
        if !delta.files.contains(&self.path) {
            delta.files.push(self.path.clone());
        }
        delta.first_ts = Some(delta.first_ts.map_or(ts, |t| t.min(ts)));
        delta.last_ts = Some(delta.last_ts.map_or(ts, |t| t.max(ts)));
        if let Some(v) = &line.cwd {
            delta.cwd.get_or_insert_with(|| v.clone());
        }
        if line.git_branch.is_some() {
            delta.git_branch.clone_from(&line.git_branch);
        }
        if line.version.is_some() {
            delta.version.clone_from(&line.version);
        }
        if let Some(v) = &line.slug {
            delta.slug.get_or_insert_with(|| v.clone());
        }
        if Some(&claude) == self.file_session.as_ref() && !self.pending_summaries.is_empty() {
            delta.summaries.append(&mut self.pending_summaries);
        }
        Some((id, claude))
    }

    /// A new node, keyed for a stable id by the Claude session, a key and a block index.
    fn make_node(
        &self,
        (session, claude): (SessionId, &str),
        kind: NodeType,
        key: &str,
        block: u32,
        order: u32,
        text: String,
    ) -> Node {
        let ts = self.last_ts.unwrap_or_default();
        let id = NodeId(stable_uuid(
            ts,
            order,
            &[claude.as_bytes(), key.as_bytes(), &block.to_le_bytes()],
        ));
        Node {
            id,
            session,
            kind,
            text,
            created_at: ts,
            status: NodeStatus::Complete,
            confidence: None,
            model: None,
            raw_stream: None,
            meta: serde_json::Map::new(),
        }
    }

    /// Remembers a new or changed node for the next batch.
    fn touch(&mut self, node: Node) {
        if self.dry {
            return;
        }
        if !self.live.contains_key(&node.id) {
            self.order.push(node.id);
        }
        self.live.insert(node.id, node);
    }

    /// A node created earlier, from this batch or the store, to change it. `None` in dry
    /// replays (changes are not needed then) and for nodes that were never written.
    fn node_mut(&mut self, ctx: &MapCtx<'_>, id: NodeId) -> Result<Option<&mut Node>, StoreError> {
        if self.dry {
            return Ok(None);
        }
        if !self.live.contains_key(&id) {
            ctx.settle()?;
            let Some(n) = ctx.store.node(id)? else {
                return Ok(None);
            };
            self.order.push(id);
            self.live.insert(id, n);
        }
        Ok(self.live.get_mut(&id))
    }

    fn edge(&mut self, src: NodeId, kind: EdgeType, dst: NodeId) {
        if !self.dry && src != dst {
            self.edges.push(Edge::new(src, kind, dst));
        }
    }

    /// Common node metadata: line uuid, parent, sidechain and agent.
    fn annotate(&self, node: &mut Node, line: &RawLine) {
        if let Some(u) = &line.uuid {
            node.meta.insert("uuid".into(), json!(u));
        }
        if let Some(p) = &line.parent_uuid {
            node.meta.insert("parent_uuid".into(), json!(p));
        }
        if line.is_sidechain == Some(true) || self.file_agent.is_some() {
            node.meta.insert("sidechain".into(), json!(true));
            if let Some(a) = line.agent_id.as_ref().or(self.file_agent.as_ref()) {
                node.meta.insert("agent_id".into(), json!(a));
            }
        }
    }

    /// The parent's key and info, and whether the parent is missing from the file (counted;
    /// such references are kept as they are).
    fn parent_info(
        &self,
        ctx: &mut MapCtx<'_>,
        line: &RawLine,
    ) -> (Option<LineKey>, LineInfo, bool) {
        let Some(p) = line.parent_uuid.as_deref() else {
            return (None, LineInfo::default(), false);
        };
        let key = line_key(p);
        match self.lines.get(&key) {
            Some(info) => (Some(key), info.clone(), false),
            None => {
                if !self.dry {
                    ctx.summary.dangling_parents += 1;
                }
                (Some(key), LineInfo::default(), true)
            }
        }
    }

    fn user(&mut self, ctx: &mut MapCtx<'_>, line: RawLine) -> Result<(), String> {
        let Some(message) = &line.message else {
            self.skip(ctx, "user line without a message");
            self.pass_through(&line);
            return Ok(());
        };
        if line.is_meta == Some(true) {
            self.skip(ctx, "user meta line (isMeta)");
            self.pass_through(&line);
            return Ok(());
        }
        let Some((session, claude)) = self.session_of(ctx, &line) else {
            self.skip(ctx, "line without a session id or timestamp");
            self.pass_through(&line);
            return Ok(());
        };
        let mut texts = Vec::new();
        let mut images = 0u64;
        let mut results = Vec::new();
        match &message.content {
            Some(Value::String(s)) => texts.push(s.clone()),
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(t) = b.get("text").and_then(Value::as_str) {
                                texts.push(t.to_string());
                            }
                        }
                        Some("image") => images += 1,
                        Some("tool_result") => results.push(b),
                        Some(other) => self.skip(ctx, &format!("unknown user block '{other}'")),
                        None => self.skip(ctx, "user block without a type"),
                    }
                }
            }
            _ => {}
        }
        let (parent, pinfo, dangling) = self.parent_info(ctx, &line);
        let uuid = line.uuid.clone().unwrap_or_default();
        let mut info = LineInfo {
            parent,
            nodes: Vec::new(),
            tail: pinfo.tail,
            query: pinfo.query,
            is_compaction: false,
        };

        // The summary that follows a compaction boundary becomes the compaction's text.
        if line.is_compact_summary == Some(true) && pinfo.is_compaction {
            if let Some(cid) = pinfo.tail
                && let Some(node) = self.node_mut(ctx, cid).map_err(|e| e.to_string())?
                && node.meta.get("summary_uuid").and_then(Value::as_str) != Some(uuid.as_str())
            {
                node.text = texts.join("\n\n");
                node.meta.insert("summary_uuid".into(), json!(uuid));
            }
            info.is_compaction = true;
            info.nodes.extend(pinfo.tail);
            if let Some(u) = &line.uuid {
                self.lines.insert(line_key(u), info);
            }
            return Ok(());
        }

        let small_result = line
            .tool_use_result
            .as_ref()
            .filter(|v| {
                serde_json::to_vec(v)
                    .map(|b| b.len() <= MAX_TOOL_USE_RESULT_BYTES)
                    .unwrap_or(false)
            })
            .cloned();
        let agent = line
            .tool_use_result
            .as_ref()
            .and_then(|v| v.get("agentId"))
            .and_then(Value::as_str)
            .map(str::to_string);
        for (i, r) in results.iter().enumerate() {
            let tool_use_id = r
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let text = tool_result_text(r.get("content"));
            let is_error = r.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            let target = self.tool_calls.get(&tool_use_id).copied();
            let id = match target {
                Some(id) => id,
                None => {
                    // A result whose call is not in the file: keep it on a node of its own.
                    let mut n = self.make_node(
                        (session, &claude),
                        NodeType::ToolCall,
                        &uuid,
                        1000 + i as u32,
                        i as u32,
                        String::new(),
                    );
                    self.annotate(&mut n, &line);
                    n.meta.insert("tool_use_id".into(), json!(tool_use_id));
                    n.meta.insert("orphan_result".into(), json!(true));
                    if let Some(t) = info.tail {
                        self.edge(t, EdgeType::Influences, n.id);
                    }
                    let id = n.id;
                    self.tool_calls.insert(tool_use_id.clone(), id);
                    info.nodes.push(id);
                    self.touch(n);
                    id
                }
            };
            if let Some(node) = self.node_mut(ctx, id).map_err(|e| e.to_string())? {
                node.meta.insert("result".into(), json!(text));
                node.meta.insert("is_error".into(), json!(is_error));
                node.meta.insert("result_uuid".into(), json!(uuid));
                if let Some(v) = &small_result {
                    node.meta.insert("tool_use_result".into(), v.clone());
                }
                if let Some(a) = &agent {
                    node.meta.insert("agent_id".into(), json!(a));
                }
            }
            if let Some(a) = &agent {
                for t in self.task_calls.iter_mut().filter(|t| t.0 == id) {
                    t.2 = Some(a.clone());
                }
                if !self.dry {
                    ctx.task_calls.set_agent(session, id, a);
                }
            }
            info.tail = Some(id);
        }

        if !texts.is_empty() || images > 0 {
            let text = if texts.is_empty() {
                "[image]".to_string()
            } else {
                texts.join("\n\n")
            };
            let mut n = self.make_node((session, &claude), NodeType::Query, &uuid, 0, 0, text);
            self.annotate(&mut n, &line);
            if images > 0 {
                n.meta.insert("images".into(), json!(images));
            }
            for (k, v) in [
                ("cwd", &line.cwd),
                ("git_branch", &line.git_branch),
                ("version", &line.version),
            ] {
                if let Some(v) = v {
                    n.meta.insert(k.into(), json!(v));
                }
            }
            if dangling {
                n.meta.insert("dangling_parent".into(), json!(true));
            }
            match pinfo.tail {
                Some(t) => self.edge(t, EdgeType::Influences, n.id),
                None => self.maybe_branch(ctx, &line, &n)?,
            }
            let sidechain = line.is_sidechain == Some(true) || self.file_agent.is_some();
            if !sidechain
                && let Some(d) = self.sessions.get_mut(&session)
                && d.first_query.is_none()
            {
                d.first_query = Some(n.text.clone());
            }
            info.tail = Some(n.id);
            info.query = Some(n.id);
            info.nodes.push(n.id);
            self.touch(n);
        }
        if let Some(u) = &line.uuid {
            self.lines.insert(line_key(u), info);
        }
        Ok(())
    }

    /// Links the first node of a subagent thread to the Task call that started it.
    fn maybe_branch(
        &mut self,
        ctx: &mut MapCtx<'_>,
        line: &RawLine,
        root: &Node,
    ) -> Result<(), String> {
        let sidechain = line.is_sidechain == Some(true) || self.file_agent.is_some();
        if self.dry || !sidechain || line.parent_uuid.is_some() {
            return Ok(());
        }
        let agent = line.agent_id.clone().or_else(|| self.file_agent.clone());
        let created_here = ctx.task_calls.created.contains(&root.session);
        if !created_here && self.stored_task_calls.is_none() {
            ctx.settle().map_err(|e| e.to_string())?;
            let mut found = Vec::new();
            for n in ctx
                .store
                .session_nodes(root.session)
                .map_err(|e| e.to_string())?
            {
                if n.kind != NodeType::ToolCall {
                    continue;
                }
                let tool = n
                    .meta
                    .get("tool")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if TASK_TOOLS.contains(&tool) {
                    let prompt = n
                        .meta
                        .get("input")
                        .and_then(|i| i.get("prompt"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let agent = n
                        .meta
                        .get("agent_id")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    found.push((n.id, prompt.to_string(), agent));
                }
            }
            self.stored_task_calls = Some(found);
        }
        let run_calls = match created_here {
            true => ctx.task_calls.calls.get(&root.session),
            false => None,
        };
        let candidates: Vec<&TaskCall> = self
            .stored_task_calls
            .iter()
            .flatten()
            .chain(run_calls.into_iter().flatten())
            .chain(self.task_calls.iter())
            .filter(|c| c.0 < root.id)
            .collect();
        let text = root.text.trim();
        let origin = candidates
            .iter()
            .find(|c| agent.is_some() && c.2 == agent)
            .or_else(|| {
                candidates
                    .iter()
                    .find(|c| !c.1.is_empty() && c.1.trim() == text)
            })
            .or_else(|| candidates.iter().max_by_key(|c| c.0))
            .map(|c| c.0);
        if let Some(o) = origin {
            self.edge(root.id, EdgeType::BranchesFrom, o);
        }
        Ok(())
    }

    fn assistant(&mut self, ctx: &mut MapCtx<'_>, mut line: RawLine) -> Result<(), String> {
        let content = line.message.as_mut().and_then(|m| m.content.take());
        let Some(message) = &line.message else {
            self.skip(ctx, "assistant line without a message");
            self.pass_through(&line);
            return Ok(());
        };
        let Some((session, claude)) = self.session_of(ctx, &line) else {
            self.skip(ctx, "line without a session id or timestamp");
            self.pass_through(&line);
            return Ok(());
        };
        let uuid = line.uuid.clone().unwrap_or_default();
        let msg_id = message.id.clone().unwrap_or_else(|| format!("line:{uuid}"));
        let blocks: Vec<Value> = match content {
            Some(Value::Array(b)) => b,
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            _ => Vec::new(),
        };
        let (parent, pinfo, dangling) = self.parent_info(ctx, &line);
        let mut info = LineInfo {
            parent,
            nodes: Vec::new(),
            tail: pinfo.tail,
            query: pinfo.query,
            is_compaction: false,
        };
        let mut prev = pinfo.tail;
        let mut state = self.messages.remove(&msg_id).unwrap_or_default();
        for (bi, block) in blocks.iter().enumerate() {
            let bi = bi as u32;
            let order = state.blocks;
            state.blocks += 1;
            let btype = block
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let created = match btype {
                "thinking" | "redacted_thinking" => {
                    let text = block
                        .get("thinking")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    let mut n = self.make_node(
                        (session, &claude),
                        NodeType::Thinking,
                        &uuid,
                        bi,
                        order,
                        text,
                    );
                    if btype == "redacted_thinking" {
                        n.meta.insert(
                            "redacted".into(),
                            json!([block.get("data").cloned().unwrap_or(Value::Null)]),
                        );
                    }
                    if let Some(sig) = block.get("signature").filter(|v| !v.is_null()) {
                        n.meta.insert("signature".into(), sig.clone());
                    }
                    if !self.dry {
                        ctx.summary.thinking_blocks += 1;
                        self.analyse_thinking(&mut n);
                    }
                    Some(n)
                }
                "text" => {
                    let text = block
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    let part = format!("{uuid}#{bi}");
                    match state.response {
                        Some(rid) => {
                            if let Some(node) =
                                self.node_mut(ctx, rid).map_err(|e| e.to_string())?
                            {
                                let parts = node.meta.entry("parts").or_insert_with(|| json!([]));
                                let seen = parts
                                    .as_array()
                                    .is_some_and(|a| a.iter().any(|p| p.as_str() == Some(&part)));
                                if !seen {
                                    if let Some(a) = parts.as_array_mut() {
                                        a.push(json!(part));
                                    }
                                    if !node.text.is_empty() && !text.is_empty() {
                                        node.text.push_str("\n\n");
                                    }
                                    node.text.push_str(&text);
                                }
                            }
                            prev = Some(rid);
                            info.tail = Some(rid);
                            None
                        }
                        None => {
                            let mut n = self.make_node(
                                (session, &claude),
                                NodeType::Response,
                                &format!("msg:{msg_id}"),
                                0,
                                order,
                                text,
                            );
                            n.meta.insert("parts".into(), json!([part]));
                            if let Some(q) = pinfo.query {
                                self.edge(n.id, EdgeType::Answers, q);
                            }
                            state.response = Some(n.id);
                            Some(n)
                        }
                    }
                }
                "tool_use" => {
                    let tool_id = block
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    let name = block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    let text = serde_json::to_string(&input).unwrap_or_default();
                    let mut n = self.make_node(
                        (session, &claude),
                        NodeType::ToolCall,
                        &uuid,
                        bi,
                        order,
                        text,
                    );
                    n.meta.insert("tool".into(), json!(name));
                    n.meta.insert("tool_use_id".into(), json!(tool_id));
                    if TASK_TOOLS.contains(&name.as_str()) {
                        let prompt = input
                            .get("prompt")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string();
                        if !self.dry {
                            ctx.task_calls.calls.entry(session).or_default().push((
                                n.id,
                                prompt.clone(),
                                None,
                            ));
                        }
                        self.task_calls.push((n.id, prompt, None));
                    }
                    n.meta.insert("input".into(), input);
                    self.tool_calls.insert(tool_id, n.id);
                    Some(n)
                }
                other => {
                    self.skip(ctx, &format!("unknown assistant block '{other}'"));
                    None
                }
            };
            let Some(mut n) = created else { continue };
            self.annotate(&mut n, &line);
            n.model.clone_from(&message.model);
            n.meta.insert("message_id".into(), json!(msg_id));
            if let Some(r) = &line.request_id {
                n.meta.insert("request_id".into(), json!(r));
            }
            match prev {
                Some(p) => self.edge(p, EdgeType::Influences, n.id),
                None if info.nodes.is_empty() => {
                    if dangling {
                        n.meta.insert("dangling_parent".into(), json!(true));
                    }
                    self.maybe_branch(ctx, &line, &n)?;
                }
                None => {}
            }
            prev = Some(n.id);
            info.tail = Some(n.id);
            info.nodes.push(n.id);
            state.holder.get_or_insert(n.id);
            self.touch(n);
        }
        if blocks.is_empty() {
            self.skip(ctx, "assistant message without content");
        }
        // Usage is repeated on every line of a split message: keep the latest, on one node.
        if let Some(holder) = state.holder {
            let usage = message.usage.clone();
            let stop = message.stop_reason.clone();
            if let Some(node) = self.node_mut(ctx, holder).map_err(|e| e.to_string())? {
                if let Some(u) = usage {
                    node.meta.insert("usage".into(), u);
                }
                if let Some(s) = stop {
                    node.meta.insert("stop_reason".into(), json!(s));
                }
            }
        }
        if let Some(m) = &message.model
            && m != "<synthetic>"
            && let Some(d) = self.sessions.get_mut(&session)
        {
            d.model = Some(m.clone());
        }
        self.messages.insert(msg_id, state);
        if let Some(u) = &line.uuid {
            self.lines.insert(line_key(u), info);
        }
        Ok(())
    }

    /// Runs ThinkGraph over a thinking node: steps into its meta, decision points out.
    fn analyse_thinking(&mut self, n: &mut Node) {
        if n.text.trim().is_empty() {
            return;
        }
        let analysis = thinkgraph::analyze(&n.text);
        thinkgraph::Step::store_all(n, &analysis.steps);
        n.confidence = Some(analysis.confidence);
        for (i, d) in analysis.decisions.into_iter().enumerate() {
            let i = i as u32;
            self.decisions.push(DecisionPoint {
                id: DecisionId(stable_uuid(
                    n.created_at,
                    i,
                    &[b"decision", n.id.0.as_bytes(), &i.to_le_bytes()],
                )),
                node: n.id,
                step_number: d.step_index,
                description: d.description,
                chosen_path: d.chosen_path,
                alternatives: d.alternatives,
                confidence: d.confidence,
                created_at: n.created_at,
            });
        }
    }

    fn system(&mut self, ctx: &mut MapCtx<'_>, line: RawLine) -> Result<(), String> {
        let subtype = line.subtype.clone().unwrap_or_default();
        if subtype != "compact_boundary" {
            let reason = if subtype.is_empty() {
                "system line".to_string()
            } else {
                format!("system:{subtype}")
            };
            self.skip(ctx, &reason);
            self.pass_through(&line);
            return Ok(());
        }
        let Some((session, claude)) = self.session_of(ctx, &line) else {
            self.skip(ctx, "line without a session id or timestamp");
            self.pass_through(&line);
            return Ok(());
        };
        let uuid = line.uuid.clone().unwrap_or_default();
        let meta = line.compact_metadata.clone().unwrap_or(Value::Null);
        let trigger = meta
            .get("trigger")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string();
        let pre = meta.get("preTokens").and_then(Value::as_u64);
        let text = match pre {
            Some(p) => format!("Conversation compacted ({trigger}, {p} tokens before)"),
            None => format!("Conversation compacted ({trigger})"),
        };
        let mut n = self.make_node((session, &claude), NodeType::Compaction, &uuid, 0, 0, text);
        self.annotate(&mut n, &line);
        n.meta.insert("trigger".into(), json!(trigger));
        if let Some(p) = pre {
            n.meta.insert("pre_tokens".into(), json!(p));
        }
        let parent = line.parent_uuid.as_deref().map(line_key);
        let info = LineInfo {
            parent,
            nodes: vec![n.id],
            tail: Some(n.id),
            query: None,
            is_compaction: true,
        };
        if let Some(lp) = &line.logical_parent_uuid {
            n.meta.insert("logical_parent_uuid".into(), json!(lp));
            let mut cur = Some(line_key(lp));
            if cur.is_some_and(|k| !self.lines.contains_key(&k)) {
                n.meta.insert("dangling_logical_parent".into(), json!(true));
                if !self.dry {
                    ctx.summary.dangling_parents += 1;
                }
            }
            let mut seen = HashSet::new();
            let mut superseded = Vec::new();
            while let Some(k) = cur {
                if !seen.insert(k) || seen.len() > MAX_CHAIN {
                    break;
                }
                let Some(li) = self.lines.get(&k) else { break };
                superseded.extend(li.nodes.iter().copied());
                if li.is_compaction {
                    break;
                }
                cur = li.parent;
            }
            superseded.sort_unstable();
            superseded.dedup();
            for s in superseded {
                self.edge(n.id, EdgeType::Supersedes, s);
            }
        }
        self.touch(n);
        if let Some(u) = &line.uuid {
            self.lines.insert(line_key(u), info);
        }
        Ok(())
    }

    fn summary_line(&mut self, ctx: &mut MapCtx<'_>, line: RawLine) -> Result<(), String> {
        let Some(text) = line.summary.clone().filter(|s| !s.trim().is_empty()) else {
            self.skip(ctx, "summary line without a summary");
            return Ok(());
        };
        let entry = (text, line.leaf_uuid.clone());
        let known = self
            .file_session
            .as_ref()
            .and_then(|c| ctx.sessions.get(c).copied());
        match known {
            Some(id) => {
                let claude = self.file_session.clone().unwrap_or_default();
                let path = self.path.clone();
                let delta = self.sessions.entry(id).or_insert_with(|| SessionDelta {
                    claude_session: claude,
                    files: vec![path],
                    ..Default::default()
                });
                delta.summaries.push(entry);
            }
            None => self.pending_summaries.push(entry),
        }
        Ok(())
    }

    /// Summaries that never found a session (a file of summary lines only).
    pub fn unplaced_summaries(&self) -> usize {
        self.pending_summaries.len()
    }
}
