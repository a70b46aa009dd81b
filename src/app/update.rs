//! `update`: the only place the TUI state changes. Messages in (bound actions, typed keys,
//! engine and store events), effects out (start a run, load or change sessions, quit); the
//! runtime carries out the effects. Bindable actions are the serde `Action` enum; runtime
//! messages wrap it in `Msg` so `Action` stays a plain list the keymap can name.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Action;
use super::keymap::Keymap;
use super::loaded::Bodies;
use super::state::{
    Focus, Level, ListRow, LoadedSession, Overlay, RunPhase, SessionRow, State, ThinkingView,
};
use super::tree::TreeCursor;
use super::workspaces::sessions::list;
use super::workspaces::think::turn;
use super::workspaces::{Boxed, REGISTRY, WorkspaceId, Workspaces};
use crate::engines::llm::Effort;
use crate::engines::orchestrator::{Route, Router, TurnEvent, TurnOutcome};
use crate::store::{NodeId, SessionId};
use crate::views::graph_model::Tree;
use crate::views::palette;

/// Something that happened: a bound action, a key to type, or news from an engine or store.
#[derive(Debug)]
pub enum Msg {
    Action(Action),
    /// A key no binding claimed: typed into whatever takes text.
    Key(KeyEvent),
    Paste(String),
    Resize(u16, u16),
    Turn {
        run: u64,
        event: TurnEvent,
    },
    TurnFinished {
        run: u64,
        outcome: Result<TurnOutcome, String>,
    },
    SessionsLoaded(Vec<SessionRow>),
    /// The session list read when the TUI starts (newest first): shown, and the newest
    /// session opened unless one is open already.
    StartSessions(Vec<SessionRow>),
    /// A session opened: every node's head, and the bodies of the window on screen.
    SessionLoaded {
        loaded: LoadedSession,
        /// The graph's nodes in turns, made from the heads.
        tree: Tree,
        bodies: Bodies,
        tokens: u64,
    },
    /// Bodies read for the open session's window.
    BodiesLoaded {
        session: SessionId,
        bodies: Result<Bodies, String>,
    },
    Notice(String, Level),
    /// News from a workspace's task, for that workspace.
    Ws(WorkspaceId, Boxed),
    Search(super::search_ui::SearchMsg),
}

/// Work for the runtime.
#[derive(Debug)]
pub enum Effect {
    StartTurn {
        run: u64,
        session: Option<SessionId>,
        question: String,
        effort: Effort,
        route: Route,
        branch_from: Option<NodeId>,
    },
    LoadSessions,
    LoadSession(SessionId),
    /// Read these bodies of the open session (its window moved).
    LoadBodies(SessionId, Vec<NodeId>),
    RenameSession(SessionId, String),
    DeleteSession(SessionId),
    Quit,
    /// Show this workspace (its `on_enter` runs).
    Show(WorkspaceId),
    /// One of a workspace's own effects.
    Ws(WorkspaceId, Boxed),
    Search(super::search_ui::SearchEffect),
}

/// What `update` needs besides the state.
pub struct Settings<'a> {
    pub keymap: &'a Keymap,
    pub router: &'a Router,
    pub default_effort: Effort,
    /// Whether a provider is available to answer.
    pub provider_ready: Result<(), String>,
}

/// Shows a new session list, keeping the selection on the same session (or the open one).
fn sessions_loaded(state: &mut State, rows: Vec<SessionRow>) {
    let keep = state.selected_session().map(|r| r.id);
    state.sessions = rows;
    state.sessions_listed = true;
    apply_filter(state);
    if let Some(id) = keep.or(state.loaded.id())
        && let Some(pos) = state
            .filtered
            .iter()
            .position(|r| matches!(r, ListRow::Session(i) if state.sessions[*i].id == id))
    {
        state.sidebar_selected = pos;
    }
}

/// Applies one message.
pub fn update(
    state: &mut State,
    ws: &mut Workspaces,
    msg: Msg,
    settings: &Settings<'_>,
) -> Vec<Effect> {
    let mut fx = Vec::new();
    match msg {
        Msg::Action(a) => action(state, ws, a, settings, &mut fx),
        Msg::Key(k) => key(state, ws, k, settings, &mut fx),
        Msg::Paste(text) => {
            if let Some(Overlay::Rename { input, .. }) = &mut state.overlay {
                input.insert_str(&text.replace('\n', " "));
            } else if state.filtering {
                state.filter.insert_str(&text.replace('\n', " "));
                apply_filter(state);
            } else {
                state.input.insert_str(&text);
                state.focus = Focus::Input;
                state.route_preview = settings.router.classify(state.input.text());
            }
        }
        Msg::Resize(w, h) => state.size = (w, h),
        Msg::Turn { run, event } => turn::event(state, run, event, settings.keymap),
        Msg::TurnFinished { run, outcome } => turn::finished(state, run, outcome, &mut fx),
        Msg::SessionsLoaded(rows) => sessions_loaded(state, rows),
        Msg::StartSessions(rows) => {
            let newest = rows.first().map(|r| r.id);
            sessions_loaded(state, rows);
            if state.loaded.id().is_none()
                && state.run.is_none()
                && let Some(id) = newest
            {
                fx.push(Effect::LoadSession(id));
            }
        }
        Msg::SessionLoaded {
            mut loaded,
            tree,
            bodies,
            tokens,
        } => {
            // A run in progress owns the panes; its session reloads when it ends.
            if state.run.is_none() {
                let same = state.loaded.id() == loaded.id();
                state.graph.load_tree(tree);
                state.graph.fill(&bodies.nodes, |id| {
                    bodies.decisions.get(&id).cloned().unwrap_or_default()
                });
                if !same {
                    state.graph.select_last();
                    state.thinking_scroll = 0;
                    state.response_scroll = 0;
                }
                let keep = bodies.nodes.iter().map(|n| n.id).collect();
                loaded.add_bodies(bodies.nodes, &keep);
                state.loaded = loaded;
                state.session_tokens = tokens;
                super::search_ui::session_loaded(state);
                state.refresh_shown();
            }
        }
        Msg::BodiesLoaded { session, bodies } => match bodies {
            Ok(bodies) if state.loaded.id() == Some(session) => {
                state.graph.fill(&bodies.nodes, |id| {
                    bodies.decisions.get(&id).cloned().unwrap_or_default()
                });
                let keep = state.loaded.window_ids(state.anchor());
                state.loaded.add_bodies(bodies.nodes, &keep);
                state.refresh_shown();
            }
            Ok(_) => {}
            Err(e) => state.notice = Some((format!("cannot read nodes: {e}"), Level::Error)),
        },
        Msg::Notice(text, level) => state.notice = Some((text, level)),
        Msg::Ws(id, m) => ws.msg(id, m, state, &mut fx),
        Msg::Search(m) => super::search_ui::on_msg(state, m, &mut fx),
    }
    ws.follow(state, &mut fx);
    // A large session reads the bodies around the selection as it moves.
    if state.run.is_none()
        && let Some(session) = state.loaded.id()
    {
        let selected = state.graph.selected_node();
        let wanted = state.loaded.window_wanted(state.anchor(), selected);
        if !wanted.is_empty() {
            fx.push(Effect::LoadBodies(session, wanted));
        }
    }
    fx
}

/// The rows of the sessions list under the filter (see `workspaces::sessions::list`).
pub(super) fn apply_filter(state: &mut State) {
    state.filtered = list::rows(&state.sessions, state.filter.text(), &state.collapsed);
    state.sidebar_selected = state
        .sidebar_selected
        .min(state.filtered.len().saturating_sub(1));
}

/// Folds (`Some(true)`), unfolds (`Some(false)`) or toggles (`None`) the project group of the
/// selected row, keeping its header selected when it folds.
fn fold_group(state: &mut State, fold: Option<bool>) {
    let Some(key) = list::group_at(&state.filtered, &state.sessions, state.sidebar_selected) else {
        return;
    };
    if list::header_of(&state.filtered, &key).is_none() {
        return;
    }
    let folded = state.collapsed.contains(&key);
    match fold.unwrap_or(!folded) {
        true => state.collapsed.insert(key.clone()),
        false => state.collapsed.remove(&key),
    };
    apply_filter(state);
    if let Some(at) = list::header_of(&state.filtered, &key)
        && state.collapsed.contains(&key)
    {
        state.sidebar_selected = at;
    }
}

/// The nucleo score of each text that matches `query` (case-insensitive, smart
/// normalisation), with its index.
pub fn fuzzy_scores<'a>(
    query: &str,
    texts: impl Iterator<Item = &'a str>,
) -> impl Iterator<Item = (u32, usize)> {
    use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
    use nucleo_matcher::{Config, Matcher, Utf32Str};
    let pattern = Pattern::parse(query, CaseMatching::Ignore, Normalization::Smart);
    let mut matcher = Matcher::new(Config::DEFAULT);
    let mut buf = Vec::new();
    texts.enumerate().filter_map(move |(i, t)| {
        pattern
            .score(Utf32Str::new(t, &mut buf), &mut matcher)
            .map(|score| (score, i))
    })
}

fn focus_order(state: &State) -> Vec<Focus> {
    let mut v = vec![Focus::Input];
    if state.thinking_view != ThinkingView::Hidden {
        v.push(Focus::Thinking);
    }
    v.push(Focus::Response);
    v.push(Focus::Graph);
    if state.sidebar_shown() {
        v.push(Focus::Sidebar);
    }
    v
}

fn cycle<T: PartialEq + Copy>(items: &[T], current: T, forward: bool) -> T {
    let pos = items.iter().position(|i| *i == current).unwrap_or(0);
    let n = items.len();
    if n == 0 {
        return current;
    }
    items[if forward {
        (pos + 1) % n
    } else {
        (pos + n - 1) % n
    }]
}

fn scroll(value: &mut u16, delta: i32) {
    *value = (i32::from(*value) + delta).clamp(0, i32::from(u16::MAX)) as u16;
}

/// The session a session action applies to: the sidebar's selection when it has focus,
/// else the open one.
fn target_session(state: &State) -> Option<(SessionId, String)> {
    if (state.focus == Focus::Sidebar || state.workspace == super::workspaces::sessions::ID)
        && let Some(r) = state.selected_session()
    {
        return Some((r.id, r.title.clone()));
    }
    state
        .loaded
        .session
        .as_ref()
        .map(|s| (s.id, s.title.clone()))
}

/// Shows the workspace `id` and lets it load what it needs.
pub(crate) fn enter_workspace(
    state: &mut State,
    ws: &mut Workspaces,
    id: WorkspaceId,
    fx: &mut Vec<Effect>,
) {
    ws.enter(id, state, fx);
}

fn action(
    state: &mut State,
    ws: &mut Workspaces,
    a: Action,
    settings: &Settings<'_>,
    fx: &mut Vec<Effect>,
) {
    state.pending_chord = None;
    if ws.action(&a, state, fx) {
        return;
    }
    match a {
        Action::Quit => {
            state.quit = true;
            fx.push(Effect::Quit);
        }
        Action::Help => {
            state.overlay = match state.overlay {
                Some(Overlay::Help { .. }) => None,
                _ => Some(Overlay::Help { scroll: 0 }),
            }
        }
        Action::Palette => {
            state.overlay = Some(Overlay::Palette(palette::PaletteState::default()));
        }
        Action::SearchSessions => {
            if !state.sidebar_shown() {
                state.workspace = super::workspaces::sessions::ID;
            }
            state.focus = Focus::Sidebar;
            state.filtering = true;
        }
        Action::CancelRun => {
            if state.overlay.is_some() {
                state.overlay = None;
            } else if state.filtering {
                state.filtering = false;
            } else if let Some(r) = state.run.as_ref().filter(|_| state.phase.is_running()) {
                r.cancel.cancel();
                state.notice = Some(("cancelling — what arrived is kept".into(), Level::Info));
            } else if state.branch_from.is_some() {
                state.branch_from = None;
                state.notice = Some(("branch cancelled".into(), Level::Info));
            } else if state.focus == Focus::Input {
                state.focus = Focus::Graph;
            }
        }
        Action::FocusNext | Action::FocusPrev => {
            let order = focus_order(state);
            state.focus = cycle(&order, state.focus, a == Action::FocusNext);
        }
        Action::NextWorkspace | Action::PrevWorkspace => {
            let ids: Vec<WorkspaceId> = REGISTRY.iter().map(|e| e.spec.id).collect();
            let id = cycle(&ids, state.workspace, a == Action::NextWorkspace);
            enter_workspace(state, ws, id, fx);
        }
        Action::Workspace(id) => enter_workspace(state, ws, id, fx),
        Action::SearchText => super::search_ui::open(state, fx),
        Action::Submit => turn::submit(state, settings, fx),
        Action::Newline => {
            state.input.newline();
        }
        Action::HistoryPrev => state.input.history_prev(),
        Action::HistoryNext => state.input.history_next(),
        Action::LeaveInput => state.focus = Focus::Graph,
        Action::FocusInput => {
            state.workspace = super::workspaces::think::ID;
            state.focus = Focus::Input;
        }
        Action::MoveUp | Action::MoveDown | Action::PageUp | Action::PageDown => {
            let step: i32 = match a {
                Action::MoveUp => -1,
                Action::MoveDown => 1,
                Action::PageUp => -10,
                _ => 10,
            };
            move_in_focus(state, step);
        }
        Action::Top | Action::Bottom => match state.focus {
            Focus::Graph => {
                if a == Action::Top {
                    state.graph.select_first()
                } else {
                    state.graph.select_last()
                }
                state.refresh_shown();
            }
            Focus::Sidebar => {
                state.sidebar_selected = if a == Action::Top {
                    0
                } else {
                    state.filtered.len().saturating_sub(1)
                };
            }
            Focus::Thinking => state.thinking_scroll = if a == Action::Top { u16::MAX } else { 0 },
            Focus::Response | Focus::Input => {
                state.response_scroll = if a == Action::Top { u16::MAX } else { 0 }
            }
        },
        Action::Expand => match state.focus {
            Focus::Graph => state.graph.expand(),
            Focus::Sidebar => fold_group(state, Some(false)),
            _ => {}
        },
        Action::Collapse => match state.focus {
            Focus::Graph => {
                state.graph.collapse();
                state.refresh_shown();
            }
            Focus::Sidebar => fold_group(state, Some(true)),
            _ => {}
        },
        Action::Select => match state.focus {
            Focus::Graph => {
                if let Some(node) = state.graph.selected_node() {
                    state.overlay = Some(Overlay::NodeDetail { node, scroll: 0 });
                }
            }
            Focus::Sidebar => open_selected_session(state, fx),
            _ => {}
        },
        Action::ToggleThinkingMode => {
            state.thinking_view = state.thinking_view.next();
            if state.thinking_view == ThinkingView::Hidden && state.focus == Focus::Thinking {
                state.focus = Focus::Response;
            }
        }
        Action::ToggleSidebar => state.sidebar_visible = !state.sidebar_visible,
        Action::NextDecision | Action::PrevDecision => {
            if state.graph.jump_decision(a == Action::NextDecision) {
                state.focus = Focus::Graph;
                state.refresh_shown();
            } else {
                state.notice = Some(("no more decision points that way".into(), Level::Info));
            }
        }
        Action::CycleEffort => {
            state.effort_override = match state.effort_override {
                None => Some(Effort::Low),
                Some(Effort::Low) => Some(Effort::Medium),
                Some(Effort::Medium) => Some(Effort::High),
                Some(Effort::High) => Some(Effort::Max),
                Some(Effort::Max) => None,
            }
        }
        Action::CycleRoute => {
            state.route_override = match state.route_override {
                None => Some(Route::Simple),
                Some(Route::Simple) => Some(Route::Standard),
                Some(Route::Standard) => Some(Route::Complex),
                Some(Route::Complex) => None,
            }
        }
        Action::NewSession => {
            if state.phase.is_running() {
                state.notice = Some(("a run is in progress; Esc cancels it".into(), Level::Warn));
            } else {
                state.loaded = LoadedSession::default();
                state.graph = Default::default();
                state.shown = Default::default();
                state.session_tokens = 0;
                state.phase = RunPhase::Idle;
                state.workspace = super::workspaces::think::ID;
                state.focus = Focus::Input;
                state.notice = Some((
                    "new session: the next question starts it".into(),
                    Level::Info,
                ));
            }
        }
        Action::RenameSession => {
            if let Some((session, title)) = target_session(state) {
                let mut input = super::input::InputBox::default();
                input.set_text(title);
                state.overlay = Some(Overlay::Rename { session, input });
            }
        }
        Action::ContinueFromHere => match (state.graph.selected_node(), state.loaded.id()) {
            (Some(node), Some(_)) if !state.phase.is_running() => {
                state.branch_from = Some(node);
                state.workspace = super::workspaces::think::ID;
                state.focus = Focus::Input;
                state.notice = Some((
                    "type a question to ask from the selected node, or Enter to continue it as is"
                        .into(),
                    Level::Info,
                ));
            }
            _ => state.notice = Some(("select a node in the graph first".into(), Level::Info)),
        },
        Action::DeleteSession => {
            if let Some((session, title)) = target_session(state) {
                state.overlay = Some(Overlay::ConfirmDelete { session, title });
            }
        }
        // Actions a workspace did not take: say where they work.
        other => {
            let section = other.context();
            let place = match section {
                super::action::Section::Workspace(id) => {
                    super::workspaces::spec(id).map_or(id, |s| s.title)
                }
                _ => "another place",
            };
            state.notice = Some((
                format!("`{}` works in the {place} workspace", other.name()),
                Level::Info,
            ));
        }
    }
}

/// Opens the selected session in Think; on a project's header, folds or unfolds it.
fn open_selected_session(state: &mut State, fx: &mut Vec<Effect>) {
    if matches!(
        state.filtered.get(state.sidebar_selected),
        Some(ListRow::Group { .. })
    ) {
        fold_group(state, None);
    } else if let Some(r) = state.selected_session() {
        fx.push(Effect::LoadSession(r.id));
        state.workspace = super::workspaces::think::ID;
        state.filtering = false;
        state.focus = Focus::Graph;
    }
}

fn move_in_focus(state: &mut State, step: i32) {
    match state.focus {
        Focus::Graph => {
            state.graph.move_by(step as isize);
            state.refresh_shown();
        }
        Focus::Sidebar => {
            let n = state.filtered.len() as i32;
            if n > 0 {
                state.sidebar_selected =
                    (state.sidebar_selected as i32 + step).clamp(0, n - 1) as usize;
            }
        }
        // Scroll offsets count lines up from the bottom.
        Focus::Thinking => scroll(&mut state.thinking_scroll, -step),
        Focus::Response | Focus::Input => scroll(&mut state.response_scroll, -step),
    }
}

fn key(
    state: &mut State,
    ws: &mut Workspaces,
    k: KeyEvent,
    settings: &Settings<'_>,
    fx: &mut Vec<Effect>,
) {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    // Popups take keys first.
    if let Some(overlay) = state.overlay.as_mut() {
        match overlay {
            Overlay::Help { scroll: s } | Overlay::NodeDetail { scroll: s, .. } => match k.code {
                KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter | KeyCode::Char('?') => {
                    state.overlay = None
                }
                KeyCode::Down | KeyCode::Char('j') => scroll(s, 1),
                KeyCode::Up | KeyCode::Char('k') => scroll(s, -1),
                KeyCode::PageDown => scroll(s, 10),
                KeyCode::PageUp => scroll(s, -10),
                _ => {}
            },
            Overlay::ConfirmDelete { session, .. } => match k.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => {
                    fx.push(Effect::DeleteSession(*session));
                    if state.loaded.id() == Some(*session) {
                        state.loaded = LoadedSession::default();
                        state.graph = Default::default();
                        state.shown = Default::default();
                    }
                    state.overlay = None;
                }
                _ => state.overlay = None,
            },
            Overlay::Rename { session, input } => match k.code {
                KeyCode::Esc => state.overlay = None,
                KeyCode::Enter => {
                    let title = input.text().trim().to_string();
                    if !title.is_empty() {
                        fx.push(Effect::RenameSession(*session, title));
                    }
                    state.overlay = None;
                }
                _ => edit(input, k, ctrl),
            },
            Overlay::Form(form) => match form.key(k) {
                super::form::Outcome::Open => {}
                super::form::Outcome::Cancelled => state.overlay = None,
                super::form::Outcome::Submitted(purpose, answer) => {
                    state.overlay = None;
                    ws.form(purpose, answer, state, fx);
                }
            },
            Overlay::Search(_) => super::search_ui::key(state, k, fx),
            Overlay::Palette(p) => {
                let items = super::keymap::palette_matches(&p.query, settings.keymap);
                match k.code {
                    KeyCode::Esc => state.overlay = None,
                    KeyCode::Enter => {
                        let chosen = items.get(p.selected).map(|i| i.action.clone());
                        state.overlay = None;
                        if let Some(a) = chosen {
                            action(state, ws, a, settings, fx);
                        }
                    }
                    KeyCode::Down => {
                        p.selected = (p.selected + 1).min(items.len().saturating_sub(1))
                    }
                    KeyCode::Up => p.selected = p.selected.saturating_sub(1),
                    KeyCode::Backspace => {
                        p.query.pop();
                        p.selected = 0;
                    }
                    KeyCode::Char(c) if !ctrl => {
                        p.query.push(c);
                        p.selected = 0;
                    }
                    _ => {}
                }
            }
        }
        return;
    }
    if state.filtering {
        match k.code {
            KeyCode::Esc => state.filtering = false,
            KeyCode::Enter => open_selected_session(state, fx),
            KeyCode::Down => move_in_focus(state, 1),
            KeyCode::Up => move_in_focus(state, -1),
            _ => {
                edit(&mut state.filter, k, ctrl);
                apply_filter(state);
                // The best match, under its project's header.
                state.sidebar_selected = state
                    .filtered
                    .iter()
                    .position(|r| matches!(r, ListRow::Session(_)))
                    .unwrap_or(0);
            }
        }
        return;
    }
    // A workspace's own text line (the Memory search) takes the key when it has focus.
    if ws.key(k, state, fx) {
        return;
    }
    if state.focus == Focus::Input {
        match k.code {
            KeyCode::Up if !state.input.up() => state.input.history_prev(),
            KeyCode::Down if !state.input.down() => state.input.history_next(),
            KeyCode::Up | KeyCode::Down => {}
            _ => edit(&mut state.input, k, ctrl),
        }
        state.route_preview = settings.router.classify(state.input.text());
    }
}

/// Text editing keys shared by every text field: the table is `input::edit`'s (the modifiers
/// are read from `k`; `_ctrl` stays for the callers that pass it).
pub(crate) fn edit(input: &mut super::input::InputBox, k: KeyEvent, _ctrl: bool) {
    super::input::edit(input, k);
}
