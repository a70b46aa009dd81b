//! The terminal side of the TUI: set-up and restore, and the event loop that renders on
//! demand — drain everything pending, draw at most once per frame interval, inside
//! synchronized-update escapes, and sleep when nothing happens.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste, EventStream};
use crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use futures::StreamExt;

use super::Ctx;
use super::keymap::Keymap;
use super::runtime::App;
use crate::config::providers as factory;
use crate::store::{NodeId, SessionId};
use crate::views::theme::ColorDepth;

/// Shortest time between two frames.
const FRAME: Duration = Duration::from_millis(16);

/// The TUI's store page cache (see `Store::open_with_cache`).
const TUI_CACHE_BYTES: usize = 16 << 20;

/// Builds the app from the config: store, keymap, theme, engine.
pub fn build_app(ctx: &Ctx) -> Result<App> {
    // The TUI reads a screenful at a time (heads, then a window of bodies), so a small page
    // cache keeps it lean on a large store; the kernel's cache serves what is read again.
    let store = ctx.open_store_with_cache(TUI_CACHE_BYTES)?;
    let cfg = ctx.loaded.config.clone();
    let keymap = Keymap::load(&ctx.paths.config_dir)?;
    let theme = super::themes::load(
        &cfg.general.theme,
        &ctx.paths.config_dir,
        ColorDepth::detect(),
    )?;
    let (engine, model) = match factory::build(ctx) {
        Ok(built) => {
            let model = built.model.clone();
            let kind = built.kind;
            (
                Ok((factory::orchestrator(ctx, &built, store.clone()), kind)),
                model,
            )
        }
        Err(e) => (Err(format!("no model available: {e}")), String::from("-")),
    };
    let memory = ctx
        .memory(store.clone(), None, None)
        .map_err(|e| format!("memory is off: {e:#}"));
    Ok(App::new(store, cfg, keymap, theme, engine, model)
        .with_prompts(ctx.prompts())
        .with_memory(memory))
}

/// Opens the TUI; returns when the user quits. The terminal is restored on every exit path,
/// including panics (ratatui installs a restoring panic hook) and SIGTERM, SIGHUP or
/// SIGINT, which quit as `q` does.
pub async fn run(ctx: Ctx) -> Result<ExitCode> {
    run_with(&ctx, |_| {}).await
}

/// Opens the TUI in the Replay workspace on `session`, from node `from` (the start when
/// `None`), playing at `speed` with pauses between nodes capped at `max_gap`.
pub async fn run_replay(
    ctx: &Ctx,
    session: SessionId,
    speed: f64,
    from: Option<NodeId>,
    max_gap: Duration,
) -> Result<ExitCode> {
    run_with(ctx, move |app| {
        app.dispatch(super::workspaces::replay::open_msg(
            session, speed, from, max_gap,
        ));
    })
    .await
}

/// Opens the TUI and lets `setup` act on the started app first (e.g. open a workspace).
pub async fn run_with(ctx: &Ctx, setup: impl FnOnce(&mut App)) -> Result<ExitCode> {
    // Everything that can fail on bad config fails before the terminal is taken over.
    let mut app = build_app(ctx)?;
    app.start();
    setup(&mut app);
    let mut terminal = ratatui::init();
    let _ = crossterm::execute!(std::io::stdout(), EnableBracketedPaste);
    if let Ok(size) = terminal.size() {
        app.dispatch(super::update::Msg::Resize(size.width, size.height));
    }
    let result = event_loop(&mut terminal, &mut app).await;
    app.shutdown().await;
    let _ = crossterm::execute!(std::io::stdout(), DisableBracketedPaste);
    ratatui::restore();
    result.map(|_| ExitCode::SUCCESS)
}

/// The signals that end the TUI as `q` does: `kill`'s SIGTERM, SIGHUP when the terminal
/// goes away, SIGINT from outside (in the TUI Ctrl-C is a key). Without them the process
/// would die where it stood, leaving the terminal in raw mode on the alternate screen.
struct Stops(Vec<tokio::signal::unix::Signal>);

impl Stops {
    fn new() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        let kinds = [
            SignalKind::terminate(),
            SignalKind::hangup(),
            SignalKind::interrupt(),
        ];
        Self(kinds.into_iter().filter_map(|k| signal(k).ok()).collect())
    }

    /// Waits for one of them.
    async fn next(&mut self) {
        if self.0.is_empty() {
            return std::future::pending().await;
        }
        let waits = self.0.iter_mut().map(|s| Box::pin(s.recv()));
        futures::future::select_all(waits).await;
    }
}

async fn event_loop(terminal: &mut ratatui::DefaultTerminal, app: &mut App) -> Result<()> {
    let mut events = EventStream::new();
    let mut stops = Stops::new();
    app.follow_store();
    let mut last_frame = Instant::now() - FRAME;
    loop {
        if app.state.quit {
            return Ok(());
        }
        // Draw when something changed and the frame interval has passed; otherwise wait for
        // the rest of the interval or the next event, whichever comes first.
        let due = last_frame + FRAME;
        if app.dirty && Instant::now() >= due {
            let mut out = std::io::stdout();
            let _ = crossterm::queue!(out, BeginSynchronizedUpdate);
            terminal
                .draw(|f| app.draw(f))
                .context("drawing the terminal")?;
            let _ = crossterm::queue!(out, EndSynchronizedUpdate);
            let _ = out.flush();
            last_frame = Instant::now();
        }
        let wake = if app.dirty {
            Some(tokio::time::Instant::from_std(last_frame + FRAME))
        } else {
            None
        };
        tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(ev)) => app.handle_event(ev),
                Some(Err(e)) => return Err(e).context("reading terminal events"),
                None => return Ok(()),
            },
            _ = app.next() => {}
            () = stops.next() => {
                tracing::info!("quitting on a signal");
                return Ok(());
            }
            _ = async { if let Some(w) = wake { tokio::time::sleep_until(w).await } else { std::future::pending::<()>().await } } => {}
        }
        // Take everything else that is already waiting before the next frame.
        app.drain();
    }
}
