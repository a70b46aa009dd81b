//! A session as a replay timeline: every event in order with the recorded wait before it.
//! Recorded provider streams are decoded byte-exact through the decoder that read them
//! live, at their recorded pace; other nodes (imported sessions, nodes no recorded stream
//! produced) appear whole at their timestamps, with long gaps capped. The TUI's Replay
//! workspace and `glassbox replay --print` both play this timeline.

use std::collections::HashSet;
use std::time::Duration;

use anyhow::{Result, bail};

use crate::engines::llm::StreamEvent;
use crate::engines::llm::replay::decoder_for;
use crate::store::{Node, NodeId, NodeType, Session, SessionId, Store, StreamId};

/// Default cap on the pause between two nodes.
pub const DEFAULT_MAX_GAP_SECS: f64 = 2.0;

/// What one replay step shows.
#[derive(Clone, Debug, PartialEq)]
pub enum ReplayPart {
    /// A whole node: imported sessions, and nodes no recorded stream produced.
    Node {
        /// "user", "assistant", "thinking", "tool call: Read", …
        label: String,
        text: String,
        /// A tool call's result.
        result: Option<String>,
    },
    /// A recorded provider stream begins.
    StreamStart { provider: String },
    /// Reasoning text from a recorded stream.
    Thinking(String),
    /// Answer text from a recorded stream.
    Text(String),
    /// A tool call from a recorded stream.
    ToolUse { name: String, input: String },
    /// The stream reported an error.
    Error(String),
    /// A recorded stream ended.
    StreamEnd,
}

/// One replay step.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayEvent {
    /// The recorded wait before this event (gaps between nodes already capped).
    pub gap: Duration,
    /// The node it belongs to, when known.
    pub node: Option<NodeId>,
    /// The type of that node.
    pub kind: NodeType,
    /// Wall-clock time of the node (for headings).
    pub at: chrono::DateTime<chrono::Utc>,
    pub part: ReplayPart,
}

/// A session ready to replay.
#[derive(Clone, Debug)]
pub struct Timeline {
    pub session: Session,
    pub events: Vec<ReplayEvent>,
}

impl Timeline {
    /// The recorded length: every gap added up.
    pub fn total(&self) -> Duration {
        self.events.iter().map(|e| e.gap).sum()
    }
}

fn node_label(n: &Node) -> String {
    match n.kind {
        NodeType::ToolCall => {
            let tool = n.tool().unwrap_or("tool");
            format!("tool call: {tool}")
        }
        NodeType::Query => "user".into(),
        NodeType::Response => "assistant".into(),
        other => other.as_str().into(),
    }
}

/// Decodes recorded stream `stream` into events, without waiting: each chunk's events carry
/// the time since the previous chunk; consecutive pieces of the same kind from one chunk are
/// merged into one event.
fn stream_events(
    store: &Store,
    stream: StreamId,
    nodes: &[Node],
    first: &Node,
    out: &mut Vec<ReplayEvent>,
) -> Result<()> {
    let Some(header) = store.raw_stream(stream)? else {
        bail!("raw stream {stream} is missing");
    };
    let chunks = store.raw_chunks(stream)?;
    let produced = |kind: NodeType| {
        nodes
            .iter()
            .find(|n| n.raw_stream == Some(stream) && n.kind == kind)
            .map(|n| n.id)
    };
    let thinking_node = produced(NodeType::Thinking);
    let text_node = produced(NodeType::Response).or(Some(first.id));
    out.push(ReplayEvent {
        gap: Duration::ZERO,
        node: Some(first.id),
        kind: first.kind,
        at: first.created_at,
        part: ReplayPart::StreamStart {
            provider: header.provider.clone(),
        },
    });
    let mut decoder = decoder_for(&header.provider)?;
    let mut push = |gap: &mut Duration, events: Vec<StreamEvent>| -> bool {
        let mut terminal = false;
        for ev in events {
            let (kind, node, part) = match ev {
                StreamEvent::ThinkingDelta { text } => (
                    NodeType::Thinking,
                    thinking_node.or(text_node),
                    ReplayPart::Thinking(text),
                ),
                StreamEvent::TextDelta { text } => {
                    (NodeType::Response, text_node, ReplayPart::Text(text))
                }
                StreamEvent::ToolUse { name, input, .. } => (
                    NodeType::ToolCall,
                    text_node,
                    ReplayPart::ToolUse {
                        name,
                        input: input.to_string(),
                    },
                ),
                StreamEvent::Error { error } => {
                    terminal = true;
                    (
                        NodeType::Response,
                        text_node,
                        ReplayPart::Error(error.to_string()),
                    )
                }
                StreamEvent::Stop { .. } => {
                    terminal = true;
                    continue;
                }
                // The provider summarised the conversation: the boundary node it became.
                StreamEvent::Compaction { summary, .. } => (
                    NodeType::Compaction,
                    produced(NodeType::Compaction).or(text_node),
                    ReplayPart::Node {
                        label: "compaction".into(),
                        text: summary,
                        result: None,
                    },
                ),
                _ => continue,
            };
            // Pieces of one chunk arrived together: merge them.
            if gap.is_zero()
                && let Some(last) = out.last_mut()
                && last.kind == kind
            {
                match (&mut last.part, &part) {
                    (ReplayPart::Thinking(a), ReplayPart::Thinking(b))
                    | (ReplayPart::Text(a), ReplayPart::Text(b)) => {
                        a.push_str(b);
                        continue;
                    }
                    _ => {}
                }
            }
            out.push(ReplayEvent {
                gap: std::mem::take(gap),
                node,
                kind,
                at: first.created_at,
                part,
            });
        }
        terminal
    };
    let mut prev_offset = 0u64;
    // The wait not yet given to an event (chunks that decode to nothing still take time).
    let mut carry = Duration::ZERO;
    let mut finished = false;
    for chunk in &chunks {
        carry += Duration::from_micros(chunk.offset_us.saturating_sub(prev_offset));
        prev_offset = prev_offset.max(chunk.offset_us);
        if push(&mut carry, decoder.feed(&chunk.bytes)) {
            finished = true;
            break;
        }
    }
    if !finished {
        push(&mut carry, decoder.finish());
    }
    out.push(ReplayEvent {
        gap: Duration::ZERO,
        node: Some(first.id),
        kind: first.kind,
        at: first.created_at,
        part: ReplayPart::StreamEnd,
    });
    Ok(())
}

/// The events of `session` in order, from node `from` on (the whole session when `None`).
/// Nodes a recorded stream produced are replayed from its bytes, once per stream; other
/// nodes appear whole, each after the time since the previous one, at most `max_gap`.
pub fn timeline(
    store: &Store,
    session: SessionId,
    from: Option<NodeId>,
    max_gap: Duration,
) -> Result<Timeline> {
    let Some(s) = store.session(session)? else {
        bail!("session {session} not found")
    };
    let mut nodes = store.session_nodes(session)?;
    nodes.sort_by_key(|n| (n.created_at, n.id));
    if let Some(start) = from {
        let Some(pos) = nodes.iter().position(|n| n.id == start) else {
            bail!("node {start} is not in session {session}");
        };
        nodes.drain(..pos);
    }
    let recorded: HashSet<StreamId> = store
        .session_streams(session)?
        .into_iter()
        .map(|s| s.id)
        .collect();
    let mut events = Vec::new();
    let mut played: HashSet<StreamId> = HashSet::new();
    let mut last_time = None;
    for n in &nodes {
        if let Some(stream) = n.raw_stream.filter(|s| recorded.contains(s)) {
            if played.insert(stream) {
                stream_events(store, stream, &nodes, n, &mut events)?;
                last_time = Some(n.created_at);
            }
            continue;
        }
        let gap = last_time
            .map(|prev| {
                (n.created_at - prev)
                    .to_std()
                    .unwrap_or_default()
                    .min(max_gap)
            })
            .unwrap_or_default();
        last_time = Some(n.created_at);
        events.push(ReplayEvent {
            gap,
            node: Some(n.id),
            kind: n.kind,
            at: n.created_at,
            part: ReplayPart::Node {
                label: node_label(n),
                text: n.text.trim_end().to_string(),
                result: n
                    .meta
                    .get("result")
                    .and_then(|v| v.as_str())
                    .map(|r| r.trim_end().to_string()),
            },
        });
    }
    Ok(Timeline { session: s, events })
}
