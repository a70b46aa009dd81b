//! The TUI runtime: terminal set-up and restore, the event loop, render on demand.
//!
//! For now it is the sessions shell: browse stored sessions and their nodes. The workspaces
//! (Think, Fork, GoT, …) build on this loop.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use crossterm::event::{Event, EventStream, KeyCode, KeyEventKind, KeyModifiers};
use futures::StreamExt;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::{DefaultTerminal, Frame};

use super::Ctx;
use crate::store::{Node, Session, Store};

/// What the shell shows.
struct State {
    sessions: Vec<Session>,
    selected: ListState,
    nodes: Vec<Node>,
    status: String,
    quit: bool,
}

impl State {
    fn load_nodes(&mut self, store: &Store) {
        self.nodes = match self.selected.selected().and_then(|i| self.sessions.get(i)) {
            Some(s) => store.session_nodes(s.id).unwrap_or_default(),
            None => Vec::new(),
        };
    }
}

/// Opens the TUI; returns when the user quits. The terminal is restored on every exit path,
/// including panics (ratatui installs a restoring panic hook).
pub async fn run(ctx: Ctx) -> Result<ExitCode> {
    let store = ctx.open_store()?;
    let mut terminal = ratatui::init();
    let result = event_loop(&mut terminal, &store, &ctx).await;
    ratatui::restore();
    result.map(|_| ExitCode::SUCCESS)
}

async fn event_loop(terminal: &mut DefaultTerminal, store: &Store, ctx: &Ctx) -> Result<()> {
    let sessions = store.sessions()?;
    let mut selected = ListState::default();
    if !sessions.is_empty() {
        selected.select(Some(0));
    }
    let provider = ctx.loaded.config.general.provider.as_str().to_string();
    let mut state = State {
        sessions,
        selected,
        nodes: Vec::new(),
        status: format!("provider {provider}  ·  store {}", store.path().display()),
        quit: false,
    };
    state.load_nodes(store);
    let mut events = EventStream::new();
    let mut last_seq = store.last_seq()?;
    let mut follow = tokio::time::interval(Duration::from_millis(500));
    let mut dirty = true;
    while !state.quit {
        if dirty {
            terminal.draw(|f| draw(f, &state))?;
            dirty = false;
        }
        tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(ev)) => dirty |= handle_event(&mut state, store, ev),
                Some(Err(e)) => return Err(e.into()),
                None => break,
            },
            _ = follow.tick() => {
                // Another process committed: reload what is shown.
                let seq = store.last_seq()?;
                if seq != last_seq {
                    last_seq = seq;
                    let keep = state.selected.selected();
                    state.sessions = store.sessions()?;
                    state.selected.select(keep.filter(|i| *i < state.sessions.len()).or(
                        (!state.sessions.is_empty()).then_some(0)));
                    state.load_nodes(store);
                    dirty = true;
                }
            }
        }
    }
    Ok(())
}

fn handle_event(state: &mut State, store: &Store, ev: Event) -> bool {
    match ev {
        Event::Key(k) if k.kind == KeyEventKind::Press => {
            match (k.code, k.modifiers) {
                (KeyCode::Char('q'), _) | (KeyCode::Esc, _) => state.quit = true,
                (KeyCode::Char('c'), KeyModifiers::CONTROL) => state.quit = true,
                (KeyCode::Down, _) | (KeyCode::Char('j'), _) => {
                    state.selected.select_next();
                    clamp(state);
                    state.load_nodes(store);
                }
                (KeyCode::Up, _) | (KeyCode::Char('k'), _) => {
                    state.selected.select_previous();
                    state.load_nodes(store);
                }
                _ => return false,
            }
            true
        }
        Event::Resize(..) => true,
        _ => false,
    }
}

fn clamp(state: &mut State) {
    if let Some(i) = state.selected.selected() {
        if i >= state.sessions.len() {
            state.selected.select(state.sessions.len().checked_sub(1));
        }
    }
}

fn draw(f: &mut Frame, state: &State) {
    let [main, status] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(f.area());
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(35), Constraint::Percentage(65)]).areas(main);
    let items: Vec<ListItem> = state
        .sessions
        .iter()
        .map(|s| {
            ListItem::new(Line::from(vec![
                Span::styled(s.created_at.format("%m-%d %H:%M ").to_string(), Style::new().dim()),
                Span::raw(s.title.clone()),
            ]))
        })
        .collect();
    let list = List::new(items)
        .block(Block::default().borders(Borders::ALL).title(" Sessions "))
        .highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut list_state = state.selected.clone();
    f.render_stateful_widget(list, left, &mut list_state);
    let lines: Vec<Line> = if state.sessions.is_empty() {
        vec![Line::from("No sessions yet. Ask something with: glassbox ask \"…\"")]
    } else {
        state
            .nodes
            .iter()
            .flat_map(|n| {
                let mut v = vec![Line::from(Span::styled(
                    format!("▌{}", n.kind.as_str()),
                    Style::new().bold(),
                ))];
                v.extend(n.text.lines().map(|l| Line::from(l.to_string())));
                v.push(Line::from(""));
                v
            })
            .collect()
    };
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" Nodes ")),
        right,
    );
    f.render_widget(
        Paragraph::new(format!(" ↑↓/jk select  q quit  ·  {}", state.status)).dim(),
        status,
    );
}
