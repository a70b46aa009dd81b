//! `glassbox replay SESSION`: plays a session back — in the TUI's Replay workspace, or with
//! `--print` to stdout. Recorded provider streams replay byte-exact through the decoder that
//! read them live, at their recorded pace; imported sessions at their timestamps, gaps capped.
//!
//! Both front ends play the same [`timeline`]: a list of events, each with the recorded wait
//! before it.

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use tokio_util::sync::CancellationToken;

use super::Ctx;
use crate::engines::llm::StreamEvent;
use crate::engines::llm::replay::decoder_for;
use crate::store::{Node, NodeId, NodeType, Session, SessionId, Store, StreamId};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  glassbox replay 3f2a               # in the TUI: space plays, ←/→ step, +/- speed\n  glassbox replay 3f2a --print\n  glassbox replay 3f2a --print --speed 4\n  glassbox replay 3f2a --print --speed 0   # no pauses"
)]
pub struct ReplayArgs {
    /// Session id, or a unique prefix or suffix of at least 4 hex digits.
    pub session: String,
    /// Replay to stdout instead of the TUI.
    #[arg(long)]
    pub print: bool,
    /// Pace multiplier: 2 plays twice as fast; 0 plays without pauses (--print only; the
    /// TUI keeps it between 0.25 and 64).
    #[arg(long, default_value_t = 1.0, value_name = "X")]
    pub speed: f64,
    /// Start at this node (id, or a unique prefix or suffix).
    #[arg(long, value_name = "NODE")]
    pub from: Option<String>,
    /// Longest pause between two nodes, in seconds (before --speed); recorded streams keep
    /// their own pace.
    #[arg(long, default_value_t = DEFAULT_MAX_GAP_SECS, value_name = "SECS")]
    pub max_gap: f64,
}

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
            let tool = n
                .meta
                .get("tool")
                .and_then(|v| v.as_str())
                .unwrap_or("tool");
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

struct Out {
    styled: bool,
    cancel: CancellationToken,
}

impl Out {
    fn write(&self, s: &str) {
        let mut out = std::io::stdout().lock();
        if out
            .write_all(s.as_bytes())
            .and_then(|_| out.flush())
            .is_err()
        {
            self.cancel.cancel();
        }
    }

    fn header(&self, text: &str) {
        if self.styled {
            self.write(&format!("\n\x1b[1m── {text} ──\x1b[0m\n"));
        } else {
            self.write(&format!("\n[{text}]\n"));
        }
    }

    fn dim(&self, text: &str) {
        if self.styled {
            self.write(&format!("\x1b[2m{text}\x1b[0m"));
        } else {
            self.write(text);
        }
    }
}

/// Waits `d`, or returns false when cancelled first.
async fn pause(d: Duration, cancel: &CancellationToken) -> bool {
    if d.is_zero() {
        return !cancel.is_cancelled();
    }
    tokio::select! {
        _ = tokio::time::sleep(d) => true,
        _ = cancel.cancelled() => false,
    }
}

pub async fn run(ctx: &Ctx, args: ReplayArgs) -> Result<ExitCode> {
    if !(args.speed.is_finite() && args.speed >= 0.0) {
        bail!(
            "--speed must be a number ≥ 0 (0 plays without pauses), got {}",
            args.speed
        );
    }
    if !(args.max_gap.is_finite() && args.max_gap >= 0.0) {
        bail!(
            "--max-gap must be a number of seconds ≥ 0, got {}",
            args.max_gap
        );
    }
    let store = ctx.open_store()?;
    let sid = store.resolve_session(&args.session)?;
    if store.session(sid)?.is_none() {
        bail!("session '{}' not found", args.session)
    }
    let from = args
        .from
        .as_deref()
        .map(|f| store.resolve_node(f))
        .transpose()?;
    let max_gap = Duration::from_secs_f64(args.max_gap);
    if !args.print {
        if !(std::io::stdout().is_terminal() && std::io::stdin().is_terminal()) {
            bail!(
                "the TUI replay needs a terminal; use `glassbox replay {} --print` to replay to stdout",
                args.session
            );
        }
        // Check the session replays before the terminal is taken over.
        timeline(&store, sid, from, max_gap)?;
        drop(store);
        let speed = args.speed;
        return crate::app::tui::run_with(ctx, move |app| {
            app.dispatch(crate::app::workspaces::replay::open_msg(
                sid, speed, from, max_gap,
            ));
        })
        .await;
    }
    let tl = timeline(&store, sid, from, max_gap)?;

    let cancel = CancellationToken::new();
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        }
    });
    let out = Out {
        styled: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        cancel: cancel.clone(),
    };
    out.write(&format!("{}  {}\n", tl.session.id, tl.session.title));
    // 0 thinking/answer not started, 1 thinking, 2 answer: headings inside a stream.
    let mut section = 0u8;
    for ev in &tl.events {
        if args.speed > 0.0 && !pause(ev.gap.div_f64(args.speed), &cancel).await {
            break;
        }
        if cancel.is_cancelled() {
            break;
        }
        match &ev.part {
            ReplayPart::StreamStart { provider } => {
                section = 0;
                out.header(&format!(
                    "{} replay of a {provider} stream",
                    ev.at.format("%H:%M:%S")
                ));
            }
            ReplayPart::Thinking(text) => {
                if section != 1 {
                    out.dim("[thinking]\n");
                    section = 1;
                }
                out.dim(text);
            }
            ReplayPart::Text(text) => {
                if section != 2 {
                    out.write(if section == 0 {
                        "[answer]\n"
                    } else {
                        "\n[answer]\n"
                    });
                    section = 2;
                }
                out.write(text);
            }
            ReplayPart::ToolUse { name, input } => {
                out.write(&format!("\n[tool call {name}] {input}\n"))
            }
            ReplayPart::Error(e) => out.write(&format!("\n[error] {e}\n")),
            ReplayPart::StreamEnd => out.write("\n"),
            ReplayPart::Node {
                label,
                text,
                result,
            } => {
                out.header(&format!("{} {label}", ev.at.format("%H:%M:%S")));
                if ev.kind == NodeType::Thinking {
                    out.dim(text);
                } else {
                    out.write(text);
                }
                if let Some(r) = result {
                    out.write("\n→ ");
                    out.dim(r);
                }
                out.write("\n");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
