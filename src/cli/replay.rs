//! `glassbox replay SESSION`: plays a session back — in the TUI's Replay workspace, or with
//! `--print` to stdout. Both play the session's [`timeline`]; this module checks the
//! arguments for either and prints the `--print` replay (the binary opens the TUI).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use tokio_util::sync::CancellationToken;

use super::Ctx;
use crate::engines::replay::{DEFAULT_MAX_GAP_SECS, ReplayPart, timeline};
use crate::store::{NodeId, NodeType, SessionId, Store};

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

/// The replay the arguments ask for, checked: the store, the resolved session and start
/// node, and the gap cap.
struct Request {
    store: Store,
    session: SessionId,
    from: Option<NodeId>,
    max_gap: Duration,
}

fn request(ctx: &Ctx, args: &ReplayArgs) -> Result<Request> {
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
    let session = store.resolve_session(&args.session)?;
    if store.session(session)?.is_none() {
        bail!("session '{}' not found", args.session)
    }
    let from = args
        .from
        .as_deref()
        .map(|f| store.resolve_node(f))
        .transpose()?;
    Ok(Request {
        store,
        session,
        from,
        max_gap: Duration::from_secs_f64(args.max_gap),
    })
}

/// What the TUI's Replay workspace opens on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TuiReplay {
    pub session: SessionId,
    pub from: Option<NodeId>,
    pub speed: f64,
    pub max_gap: Duration,
}

/// `replay` without `--print`: checks everything that can fail — the arguments, the
/// terminal, and that the session replays — before the TUI takes the terminal over.
pub fn tui_replay(ctx: &Ctx, args: &ReplayArgs) -> Result<TuiReplay> {
    let Request {
        store,
        session,
        from,
        max_gap,
    } = request(ctx, args)?;
    if !(std::io::stdout().is_terminal() && std::io::stdin().is_terminal()) {
        bail!(
            "the TUI replay needs a terminal; use `glassbox replay {} --print` to replay to stdout",
            args.session
        );
    }
    timeline(&store, session, from, max_gap)?;
    Ok(TuiReplay {
        session,
        from,
        speed: args.speed,
        max_gap,
    })
}

/// `replay --print`: plays the session to stdout at its recorded pace × `--speed`, until
/// the end or Ctrl-C.
pub async fn print(ctx: &Ctx, args: ReplayArgs) -> Result<ExitCode> {
    let Request {
        store,
        session: sid,
        from,
        max_gap,
    } = request(ctx, &args)?;
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
