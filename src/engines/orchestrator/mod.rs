//! One think turn: build the request from the session's history, stream it from the
//! provider, and persist query → thinking → response nodes, their edges and the raw stream
//! as the deltas arrive (batched into commits, never one per token).
//!
//! This file holds the turn's types and the orchestrator; `routing` classes questions,
//! `history` builds what is sent back, `compaction` keeps it within the context and the
//! budget, `turn` runs one turn, `live` keeps what it streams in the store as it goes.

mod ahead;
mod behind;
mod compaction;
mod graph_feed;
mod history;
mod live;
mod loop_feed;
mod routing;
#[cfg(test)]
mod tests;
mod turn;

use std::sync::Arc;

use super::llm::loops::{LoopAction, LoopParams, LoopUnit};
use super::llm::{Effort, LlmError, Provider, StopReason, ThinkingMode, ToolSpec, Usage};
use crate::store::{NodeId, NodeType, SessionId, Store, StreamId};

pub use compaction::{BudgetParams, COMPACTIONS, SERVER_SIDE, is_server_side_compaction};
pub use history::{heads_output_tokens, history_until, session_history, session_output_tokens};
pub use routing::{Route, Router, RoutingParams, classify};

/// The context (tokens) an orchestrator assumes until it is told the model's; the config
/// assumes the same for remote models when `[budget] context_tokens` is 0. glassbox's own
/// choice: seed 000's ThinkingEngine lists a 1M window, which few models have.
pub const DEFAULT_CONTEXT_TOKENS: u32 = 200_000;
/// Session titles are the question's first line, cut to this many chars.
const TITLE_CHARS: usize = 80;
/// Meta key of a thinking or response node the model looped in: `{"period", "repeats",
/// "unit", "in": "thinking" | "text", "action"}`.
pub const LOOPING: &str = "looping";
/// Query-node meta key: the ids of the memory entries shown to the model for it.
pub const MEMORY_USED: &str = "memory_used";
/// Tool rounds of a turn when the knowledge source does not say (the memory engine takes
/// `[memory] max_tool_rounds`).
pub const DEFAULT_TOOL_ROUNDS: u32 = 4;
/// Tool-call node meta keys: what the call returned (text for the model) and whether it
/// failed.
pub const TOOL_RESULT: &str = "result";
pub const TOOL_ERROR: &str = "is_error";

/// A piece of streamed text (the deltas of one network read), handed as it is to the
/// threads that read it (loops, ThinkGraph, the word finder, the record packer) and to the
/// listener: one allocation each, never copied on the way.
pub type TextPiece = std::sync::Arc<String>;

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
    Thinking(TextPiece),
    Text(TextPiece),
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
    /// The model is looping in `node` (its thinking or its answer): the last `repeats`
    /// cycles of `period` lines or words are the same. Sent once per turn; with
    /// [`LoopAction::Stop`] the call is stopped and the turn ends with the loop stop reason
    /// ([`crate::engines::llm::loops::loop_stop`]).
    Loop {
        node: NodeId,
        period: usize,
        repeats: usize,
        unit: LoopUnit,
        /// Found in the thinking (else in the answer).
        in_thinking: bool,
        action: LoopAction,
    },
}

/// What a knowledge source shows the model before a question.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Knowledge {
    /// Text for the system prompt.
    pub text: String,
    /// Ids of the entries the text includes, recorded on the query node as `meta.memory_used`.
    pub used: Vec<String>,
}

/// A finished turn, for a knowledge source that remembers turns.
#[derive(Clone, Debug)]
pub struct FinishedTurn {
    pub session: SessionId,
    pub query: NodeId,
    pub question: String,
    pub response: Option<(NodeId, String)>,
}

/// Extra context for a question, and tools for the model (the memory engine plugs in
/// here). `context_for`, `remember` and `call_tool` block their thread (store reads and
/// commits, embeddings): the orchestrator makes them on the blocking pool.
pub trait KnowledgeContext: Send + Sync {
    /// What to put before the conversation, or `None` when nothing is relevant.
    fn context_for(&self, question: &str) -> Option<Knowledge>;

    /// Called once a turn has ended with an answer.
    fn remember(&self, _turn: &FinishedTurn) {}

    /// Called beside a turn with the start of the answer so far (on the blocking pool, one
    /// call at a time), until it returns true: a source that remembers answers may get ready
    /// for [`KnowledgeContext::remember`] while the answer streams. The default wants nothing.
    fn anticipate(&self, _answer_so_far: &str) -> bool {
        true
    }

    /// Tools the model may call during a turn, where its provider takes tools. None by
    /// default.
    fn tools(&self) -> Vec<ToolSpec> {
        Vec::new()
    }

    /// Runs the tool call `name` with `input`, which the model made in `session` and which is
    /// recorded as `node`: the text to hand back, or what went wrong. `None` when the tool is
    /// not one of this source's.
    fn call_tool(
        &self,
        _name: &str,
        _input: &serde_json::Value,
        _session: SessionId,
        _node: NodeId,
    ) -> Option<Result<String, String>> {
        None
    }

    /// How many times in one turn the model's tool calls are run and the model asked again.
    fn max_tool_rounds(&self) -> u32 {
        DEFAULT_TOOL_ROUNDS
    }
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
    /// When a stream counts as looping.
    pub loops: LoopParams,
    /// What a loop does to the turn (the config picks `[loop] action_local` or
    /// `action_remote` by provider).
    pub loop_action: LoopAction,
}

impl Orchestrator {
    /// An orchestrator with the built-in budget settings.
    pub fn new(store: Store, provider: Arc<dyn Provider>, model: impl Into<String>) -> Self {
        Self {
            store,
            provider,
            model: model.into(),
            budget: BudgetParams::default(),
            context_tokens: DEFAULT_CONTEXT_TOKENS,
            compaction_prompt: "Summarise this conversation so far in a few sentences, keeping every fact, decision and open question needed to continue it.".into(),
            knowledge: None,
            loops: LoopParams::default(),
            loop_action: LoopParams::default().action_remote,
        }
    }
}

/// A session title from the first line of the question.
pub fn title_from(question: &str) -> String {
    let line = question
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("untitled")
        .trim();
    let mut t: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        t.push('…');
    }
    t
}
