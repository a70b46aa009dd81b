//! `glassbox replay SESSION --print`: plays a session back to stdout — recorded provider
//! streams byte-exact at their recorded pace, imported sessions at their timestamps.

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::Ctx;
use crate::engines::llm::replay::ReplayProvider;
use crate::engines::llm::{CallCtx, ChatRequest, Provider, StreamEvent};
use crate::store::{Node, NodeType, StreamId};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  glassbox replay 3f2a --print\n  glassbox replay 3f2a --print --speed 4\n  glassbox replay 3f2a --print --speed 0   # no pauses"
)]
pub struct ReplayArgs {
    /// Session id, or a unique prefix or suffix of at least 4 hex digits.
    pub session: String,
    /// Replay to stdout instead of the TUI.
    #[arg(long)]
    pub print: bool,
    /// Pace multiplier: 2 plays twice as fast; 0 plays without pauses.
    #[arg(long, default_value_t = 1.0, value_name = "X")]
    pub speed: f64,
    /// Start at this node (id, or a unique prefix or suffix).
    #[arg(long, value_name = "NODE")]
    pub from: Option<String>,
    /// Longest pause between two events of an imported session, in seconds (before --speed).
    #[arg(long, default_value_t = 2.0, value_name = "SECS")]
    pub max_gap: f64,
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

fn node_heading(n: &Node) -> String {
    let when = n.created_at.format("%H:%M:%S");
    match n.kind {
        NodeType::ToolCall => {
            let tool = n
                .meta
                .get("tool")
                .and_then(|v| v.as_str())
                .unwrap_or("tool");
            format!("{when} tool call: {tool}")
        }
        NodeType::Query => format!("{when} user"),
        NodeType::Response => format!("{when} assistant"),
        other => format!("{when} {}", other.as_str()),
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
    if !args.print {
        bail!(
            "the TUI replay mode is not available yet; use `glassbox replay {} --print` to replay to stdout",
            args.session
        );
    }
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
    let Some(session) = store.session(sid)? else {
        bail!("session '{}' not found", args.session)
    };
    let mut nodes = store.session_nodes(sid)?;
    nodes.sort_by_key(|n| (n.created_at, n.id));
    if let Some(from) = &args.from {
        let start = store.resolve_node(from)?;
        let Some(pos) = nodes.iter().position(|n| n.id == start) else {
            bail!("node '{from}' is not in session {sid}");
        };
        nodes.drain(..pos);
    }
    let recorded: HashSet<StreamId> = store
        .session_streams(sid)?
        .into_iter()
        .map(|s| s.id)
        .collect();

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
    out.write(&format!("{}  {}\n", session.id, session.title));
    let max_gap = Duration::from_secs_f64(args.max_gap);
    let mut played: HashSet<StreamId> = HashSet::new();
    let mut last_time = None;
    for n in &nodes {
        if cancel.is_cancelled() {
            break;
        }
        // Nodes a recorded stream produced are replayed from its bytes, once.
        if let Some(stream) = n.raw_stream.filter(|s| recorded.contains(s)) {
            if !played.insert(stream) {
                continue;
            }
            let provider = ReplayProvider::from_store(&store, stream, args.speed)?;
            out.header(&format!(
                "{} replay of a {} stream",
                n.created_at.format("%H:%M:%S"),
                provider.recorded_provider()
            ));
            let mut events = provider.stream(
                ChatRequest::new("", Vec::new()),
                CallCtx {
                    cancel: cancel.clone(),
                    raw: None,
                },
            );
            let mut section = 0u8;
            while let Some(ev) = events.next().await {
                match ev {
                    StreamEvent::ThinkingDelta { text } => {
                        if section != 1 {
                            out.dim("[thinking]\n");
                            section = 1;
                        }
                        out.dim(&text);
                    }
                    StreamEvent::TextDelta { text } => {
                        if section != 2 {
                            out.write(if section == 0 {
                                "[answer]\n"
                            } else {
                                "\n[answer]\n"
                            });
                            section = 2;
                        }
                        out.write(&text);
                    }
                    StreamEvent::ToolUse { name, input, .. } => {
                        out.write(&format!("\n[tool call {name}] {input}\n"));
                    }
                    StreamEvent::Error { error } => out.write(&format!("\n[error] {error}\n")),
                    _ => {}
                }
            }
            out.write("\n");
            last_time = Some(n.created_at);
            continue;
        }
        if let Some(prev) = last_time
            && args.speed > 0.0
        {
            let gap = (n.created_at - prev)
                .to_std()
                .unwrap_or_default()
                .min(max_gap);
            if !pause(gap.div_f64(args.speed), &cancel).await {
                break;
            }
        }
        last_time = Some(n.created_at);
        out.header(&node_heading(n));
        match n.kind {
            NodeType::Thinking => out.dim(n.text.trim_end()),
            _ => out.write(n.text.trim_end()),
        }
        if let Some(r) = n.meta.get("result").and_then(|v| v.as_str()) {
            out.write("\n→ ");
            out.dim(r.trim_end());
        }
        out.write("\n");
    }
    Ok(ExitCode::SUCCESS)
}
