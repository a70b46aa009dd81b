//! The records glassbox keeps: sessions, nodes, edges, decision points, insights, runs,
//! raw streams, memory, learning events, transcript cursors and the change journal.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Declares a time-ordered (UUIDv7) id type stored as 16 bytes.
macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh, time-ordered id.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }
            pub fn to_bytes(self) -> [u8; 16] {
                *self.0.as_bytes()
            }
            pub fn from_bytes(b: [u8; 16]) -> Self {
                Self(Uuid::from_bytes(b))
            }
            /// The last 8 hex digits, for compact display. (The first ones of a UUIDv7 are
            /// its timestamp, shared by ids made in the same millisecond.)
            pub fn short(&self) -> String {
                let hex = self.0.simple().to_string();
                hex[hex.len() - 8..].to_string()
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0.hyphenated(), f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0.hyphenated())
            }
        }

        impl FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }
    };
}

id_type!(/// A session: one conversation or imported transcript.
    SessionId);
id_type!(/// A node of the reasoning graph.
    NodeId);
id_type!(/// A decision point found in a thinking node.
    DecisionId);
id_type!(/// A metacognitive insight.
    InsightId);
id_type!(/// An engine run (fork, debate, got, verify, pipeline, research).
    RunId);
id_type!(/// A recorded raw provider stream.
    StreamId);
id_type!(/// A memory entry in one of the tiers.
    MemoryId);
id_type!(/// A document of the local knowledge base.
    DocId);

/// Where a session came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionSource {
    Glassbox,
    ClaudeCode,
    Mcp,
    Import,
}

impl SessionSource {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionSource::Glassbox => "glassbox",
            SessionSource::ClaudeCode => "claude_code",
            SessionSource::Mcp => "mcp",
            SessionSource::Import => "import",
        }
    }
}

/// A conversation or imported transcript; owns its nodes, runs, insights and streams.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: SessionId,
    pub title: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub source: SessionSource,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// Source-specific details (cwd, git branch, version for imports, …).
    #[serde(default)]
    pub meta: serde_json::Map<String, serde_json::Value>,
}

impl Session {
    pub fn new(title: impl Into<String>, source: SessionSource) -> Self {
        let now = Utc::now();
        Self {
            id: SessionId::new(),
            title: title.into(),
            created_at: now,
            updated_at: now,
            source,
            provider: None,
            model: None,
            meta: serde_json::Map::new(),
        }
    }
}

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeType {
    Query,
    Thinking,
    Response,
    Compaction,
    ForkBranch,
    HumanAnnotation,
    GotThought,
    VerifyStep,
    PipelineLayer,
    Plan,
    Audit,
    ToolCall,
    Synthesis,
    LedgerThought,
    Imported,
}

impl NodeType {
    pub const ALL: [NodeType; 15] = [
        NodeType::Query,
        NodeType::Thinking,
        NodeType::Response,
        NodeType::Compaction,
        NodeType::ForkBranch,
        NodeType::HumanAnnotation,
        NodeType::GotThought,
        NodeType::VerifyStep,
        NodeType::PipelineLayer,
        NodeType::Plan,
        NodeType::Audit,
        NodeType::ToolCall,
        NodeType::Synthesis,
        NodeType::LedgerThought,
        NodeType::Imported,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            NodeType::Query => "query",
            NodeType::Thinking => "thinking",
            NodeType::Response => "response",
            NodeType::Compaction => "compaction",
            NodeType::ForkBranch => "fork_branch",
            NodeType::HumanAnnotation => "human_annotation",
            NodeType::GotThought => "got_thought",
            NodeType::VerifyStep => "verify_step",
            NodeType::PipelineLayer => "pipeline_layer",
            NodeType::Plan => "plan",
            NodeType::Audit => "audit",
            NodeType::ToolCall => "tool_call",
            NodeType::Synthesis => "synthesis",
            NodeType::LedgerThought => "ledger_thought",
            NodeType::Imported => "imported",
        }
    }
}

/// Whether a node's text is final.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum NodeStatus {
    Complete,
    /// Still receiving deltas.
    Streaming,
    /// Cancelled by the user; the text is what arrived before.
    Interrupted,
    /// The provider failed; the text is what arrived before.
    Failed {
        error: String,
    },
}

/// A node of the reasoning graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub id: NodeId,
    pub session: SessionId,
    pub kind: NodeType,
    pub text: String,
    pub created_at: DateTime<Utc>,
    pub status: NodeStatus,
    #[serde(default)]
    pub confidence: Option<f64>,
    #[serde(default)]
    pub model: Option<String>,
    /// The raw provider stream this node came from, for byte-exact replay.
    #[serde(default)]
    pub raw_stream: Option<StreamId>,
    /// Type-specific details (usage, signature, step kind, source line, …).
    #[serde(default)]
    pub meta: serde_json::Map<String, serde_json::Value>,
}

impl Node {
    pub fn new(session: SessionId, kind: NodeType, text: impl Into<String>) -> Self {
        Self {
            id: NodeId::new(),
            session,
            kind,
            text: text.into(),
            created_at: Utc::now(),
            status: NodeStatus::Complete,
            confidence: None,
            model: None,
            raw_stream: None,
            meta: serde_json::Map::new(),
        }
    }

    /// The tool a tool call names (`meta.tool`), if it names one.
    pub fn tool(&self) -> Option<&str> {
        self.meta.get("tool").and_then(|v| v.as_str())
    }
}

/// How one node relates to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum EdgeType {
    Influences = 1,
    Supports = 2,
    Contradicts = 3,
    Supersedes = 4,
    Refines = 5,
    BranchesFrom = 6,
    Aggregates = 7,
    Revises = 8,
    Answers = 9,
}

impl EdgeType {
    pub const ALL: [EdgeType; 9] = [
        EdgeType::Influences,
        EdgeType::Supports,
        EdgeType::Contradicts,
        EdgeType::Supersedes,
        EdgeType::Refines,
        EdgeType::BranchesFrom,
        EdgeType::Aggregates,
        EdgeType::Revises,
        EdgeType::Answers,
    ];

    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.code() == code)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EdgeType::Influences => "influences",
            EdgeType::Supports => "supports",
            EdgeType::Contradicts => "contradicts",
            EdgeType::Supersedes => "supersedes",
            EdgeType::Refines => "refines",
            EdgeType::BranchesFrom => "branches_from",
            EdgeType::Aggregates => "aggregates",
            EdgeType::Revises => "revises",
            EdgeType::Answers => "answers",
        }
    }
}

/// A directed, typed edge between two nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    pub src: NodeId,
    pub dst: NodeId,
    pub kind: EdgeType,
    #[serde(default = "default_weight")]
    pub weight: f64,
    #[serde(default)]
    pub meta: serde_json::Map<String, serde_json::Value>,
}

fn default_weight() -> f64 {
    1.0
}

impl Edge {
    pub fn new(src: NodeId, kind: EdgeType, dst: NodeId) -> Self {
        Self {
            src,
            dst,
            kind,
            weight: 1.0,
            meta: serde_json::Map::new(),
        }
    }
}

/// An alternative the model considered at a decision point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Alternative {
    pub path: String,
    #[serde(default)]
    pub reason_rejected: Option<String>,
}

/// A place in a thinking node where the model chose between alternatives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionPoint {
    pub id: DecisionId,
    pub node: NodeId,
    pub step_number: u32,
    pub description: String,
    pub chosen_path: String,
    pub alternatives: Vec<Alternative>,
    pub confidence: f64,
    pub created_at: DateTime<Utc>,
}

/// A metacognitive insight about a session, with evidence pointing at nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Insight {
    pub id: InsightId,
    pub session: SessionId,
    pub kind: String,
    pub text: String,
    pub confidence: f64,
    #[serde(default)]
    pub evidence: Vec<serde_json::Value>,
    #[serde(default)]
    pub nodes_analyzed: Vec<NodeId>,
    pub created_at: DateTime<Utc>,
}

/// Which engine a run belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    Ask,
    Fork,
    Debate,
    Steer,
    Got,
    Verify,
    Insights,
    Pipeline,
    Research,
}

/// How a run ended (or that it has not).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum RunStatus {
    Running,
    Done,
    Interrupted,
    Failed { error: String },
}

/// One engine run with its parameters and result summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub id: RunId,
    pub session: SessionId,
    pub kind: RunKind,
    pub params: serde_json::Value,
    pub summary: serde_json::Value,
    pub status: RunStatus,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub finished_at: Option<DateTime<Utc>>,
}

/// Header of a recorded provider response; the bytes live in chunks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RawStream {
    pub id: StreamId,
    pub session: SessionId,
    pub provider: String,
    pub model: String,
    /// The request as sent, without credentials.
    pub request: serde_json::Value,
    pub created_at: DateTime<Utc>,
    #[serde(default)]
    pub nodes: Vec<NodeId>,
    #[serde(default)]
    pub chunk_count: u32,
    #[serde(default)]
    pub total_bytes: u64,
}

/// One recorded chunk: when it arrived (µs after the request) and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredChunk {
    pub offset_us: u64,
    pub bytes: Vec<u8>,
}

/// How far a transcript file has been read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptCursor {
    pub path: String,
    pub inode: u64,
    pub offset: u64,
    pub mtime_ns: i64,
    pub size: u64,
    pub lines: u64,
}

/// What a journal entry says changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    SessionPut,
    SessionDeleted,
    NodePut,
    EdgePut,
    DecisionPut,
    InsightPut,
    RunPut,
    StreamPut,
    MemoryPut,
    MemoryDeleted,
    /// An entry moved from working memory to archival by auto-eviction.
    MemoryEvicted,
    LearningEvent,
    CursorPut,
    /// A knowledge-base document (with its chunks) was added or replaced.
    KnowledgePut,
    /// A knowledge-base document and its chunks were removed.
    KnowledgeDeleted,
}

/// One journal entry: followers in other processes poll these by sequence number.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub kind: ChangeKind,
    #[serde(default)]
    pub session: Option<SessionId>,
    /// The id of the changed record, when it has one.
    #[serde(default)]
    pub id: Option<Uuid>,
    pub at: DateTime<Utc>,
}
