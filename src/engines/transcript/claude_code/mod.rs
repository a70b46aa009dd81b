//! Claude Code session transcripts (JSONL, FORMATS.md §3): each line is parsed tolerantly and
//! mapped onto glassbox nodes and edges by a per-file `FileMapper` whose ids are
//! deterministic, so reading a line twice writes the same records.
//!
//! `lines.rs` reads a line; this file holds the mapper's state and the helpers every kind of
//! line uses; `session.rs` maps what belongs to the session (its record, compactions,
//! summaries), `turns.rs` the user and assistant lines, `subagents.rs` links a subagent
//! thread to the Task call that started it. The import driver is `transcript::Importer`.

mod lines;
pub mod prompt;
mod session;
mod subagents;
mod turns;

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use serde_json::json;

use super::{ImportSummary, stable_uuid};
use crate::store::{
    DecisionPoint, Edge, EdgeType, Node, NodeId, NodeStatus, NodeType, SessionId, Store, StoreError,
};
use lines::RawLine;
use lines::parse_timestamp;
pub(crate) use subagents::RunTaskCalls;
use subagents::TaskCall;
pub(crate) use turns::analyse_thinking;

/// Tool names whose calls start a subagent thread.
const TASK_TOOLS: [&str; 2] = ["Task", "Agent"];
/// A `toolUseResult` larger than this (serialised bytes) is not copied into the node: the
/// tool result text already holds what it says.
const MAX_TOOL_USE_RESULT_BYTES: usize = 4096;
/// Longest ancestor chain a compaction walks to find what it supersedes.
const MAX_CHAIN: usize = 1_000_000;

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
    /// The newest `custom-title` line (a title the person gave the session in Claude Code).
    pub custom_title: Option<String>,
    pub files: Vec<String>,
}

/// Everything a batch of lines produced, ready for one write transaction.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    pub decisions: Vec<DecisionPoint>,
    /// Thinking nodes of `nodes` still to run ThinkGraph over ([`analyse_thinking`]): the
    /// writer's preparer thread does, so the reading thread does not.
    pub analyse: Vec<NodeId>,
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
    /// Thinking nodes created since the last batch, for ThinkGraph (see [`Batch::analyse`]).
    analyse: Vec<NodeId>,
    sessions: BTreeMap<SessionId, SessionDelta>,
    /// Summaries seen before the file's session existed.
    pending_summaries: Vec<(String, Option<String>)>,
    /// A `custom-title` seen before the file's session existed.
    pending_custom_title: Option<String>,
    /// Whether lines are only replayed to rebuild state (nothing is produced).
    pub dry: bool,
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
            analyse: Vec::new(),
            sessions: BTreeMap::new(),
            pending_summaries: Vec::new(),
            pending_custom_title: None,
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
            analyse: std::mem::take(&mut self.analyse),
            sessions: std::mem::take(&mut self.sessions),
        }
    }

    /// Drops whatever a dry replay produced.
    pub fn discard_batch(&mut self) {
        self.live.clear();
        self.order.clear();
        self.edges.clear();
        self.decisions.clear();
        self.analyse.clear();
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
        let line = lines::parse_line(raw)?;
        if let Some(ts) = line.timestamp.as_deref().and_then(parse_timestamp) {
            self.last_ts = Some(ts);
        }
        let kind = line.kind.clone().unwrap_or_default();
        match kind.as_str() {
            "user" => self.user(ctx, line)?,
            "assistant" => self.assistant(ctx, line)?,
            "system" => self.system(ctx, line)?,
            "summary" => self.summary_line(ctx, line)?,
            "custom-title" => self.custom_title_line(ctx, line),
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

    /// Summaries that never found a session (a file of summary lines only).
    pub fn unplaced_summaries(&self) -> usize {
        self.pending_summaries.len()
    }
}
