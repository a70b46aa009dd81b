//! The full-text search popup (`/`): a query, ranked hits with snippets, jump to a hit.
//!
//! Every edit of the query starts a search on a blocking task; each carries a sequence
//! number and only the answer to the latest one is shown, so typing never waits on the store
//! and a slow answer to an old query cannot overwrite a newer one.

use std::collections::HashMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::graph::RowKey;
use super::runtime::Services;
use super::state::{Focus, Level, Overlay, State};
use super::tree::TreeCursor;
use super::update::{Effect, Msg};
use crate::store::{NodeId, NodeType, SessionId};
pub use crate::views::search::{HitRow, SearchOverlay};

/// Most hits one search shows.
pub const MAX_HITS: usize = 50;

/// Results from the search task.
#[derive(Clone, Debug)]
pub enum SearchMsg {
    Results {
        seq: u64,
        query: String,
        hits: Result<Vec<HitRow>, String>,
    },
}

/// Work for the runtime.
#[derive(Clone, Debug)]
pub enum SearchEffect {
    Run { seq: u64, query: String },
}

/// Opens the popup.
pub fn open(state: &mut State, _fx: &mut Vec<Effect>) {
    state.overlay = Some(Overlay::Search(SearchOverlay::default()));
}

/// A key while the popup is open.
pub fn key(state: &mut State, k: KeyEvent, fx: &mut Vec<Effect>) {
    let Some(Overlay::Search(o)) = state.overlay.as_mut() else {
        return;
    };
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    let last = o.hits.len().saturating_sub(1);
    match k.code {
        KeyCode::Esc => state.overlay = None,
        KeyCode::Enter => {
            if let Some(hit) = o.hits.get(o.selected).cloned() {
                state.overlay = None;
                jump_to(state, hit.session, hit.node, fx);
            }
        }
        KeyCode::Down => o.selected = (o.selected + 1).min(last),
        KeyCode::Char('n') if ctrl => o.selected = (o.selected + 1).min(last),
        KeyCode::Up => o.selected = o.selected.saturating_sub(1),
        KeyCode::Char('p') if ctrl => o.selected = o.selected.saturating_sub(1),
        KeyCode::PageDown => o.selected = (o.selected + 10).min(last),
        KeyCode::PageUp => o.selected = o.selected.saturating_sub(10),
        _ => {
            let before = o.input.text().to_string();
            super::update::edit(&mut o.input, k, ctrl);
            if o.input.text() != before {
                o.seq += 1;
                o.error = None;
                if o.searchable() {
                    o.searching = true;
                    fx.push(Effect::Search(SearchEffect::Run {
                        seq: o.seq,
                        query: o.input.text().to_string(),
                    }));
                } else {
                    o.searching = false;
                    o.hits.clear();
                    o.answered.clear();
                    o.selected = 0;
                }
            }
        }
    }
}

/// Applies results.
pub fn on_msg(state: &mut State, m: SearchMsg, _fx: &mut Vec<Effect>) {
    match m {
        SearchMsg::Results { seq, query, hits } => {
            let Some(Overlay::Search(o)) = state.overlay.as_mut() else {
                return;
            };
            if seq != o.seq {
                return;
            }
            o.searching = false;
            o.answered = query;
            o.selected = 0;
            match hits {
                Ok(h) => {
                    o.hits = h;
                    o.error = None;
                }
                Err(e) => {
                    o.hits.clear();
                    o.error = Some(e);
                }
            }
        }
    }
}

/// Runs a search: through the latest-wins queue, so typing fast never piles searches up.
pub fn run(e: SearchEffect, svc: &Services) {
    match e {
        SearchEffect::Run { seq, query } => svc.search.submit((seq, query)),
    }
}

/// One search, as the queue runs it (off the UI thread).
pub fn run_search(store: &crate::store::Store, seq: u64, query: String) -> Msg {
    let hits = search(store, &query).map_err(|e| format!("search failed: {e}"));
    Msg::Search(SearchMsg::Results { seq, query, hits })
}

/// The ranked hits for `query` with their sessions' titles.
pub fn search(
    store: &crate::store::Store,
    query: &str,
) -> Result<Vec<HitRow>, crate::store::StoreError> {
    let hits = store.search(query, None, MAX_HITS)?;
    let mut titles: HashMap<SessionId, String> = HashMap::new();
    let mut rows = Vec::with_capacity(hits.len());
    for h in hits {
        let title = match titles.get(&h.session) {
            Some(t) => t.clone(),
            None => {
                let t = store
                    .session(h.session)?
                    .map(|s| s.title)
                    .unwrap_or_default();
                titles.insert(h.session, t.clone());
                t
            }
        };
        rows.push(HitRow {
            node: h.node,
            session: h.session,
            session_title: title,
            kind: h.kind,
            score: h.score,
            snippet: h.snippet,
            highlights: h.highlights,
        });
    }
    Ok(rows)
}

/// Shows `node` of `session` in the Think workspace: loads the session if needed and selects
/// the node in the graph once it is there.
pub fn jump_to(state: &mut State, session: SessionId, node: NodeId, fx: &mut Vec<Effect>) {
    if state.run.is_some() {
        state.notice = Some((
            "a run is in progress; open the hit when it ends".into(),
            Level::Warn,
        ));
        return;
    }
    state.pending_select = Some(node);
    // Think loads nothing on entering: showing it is enough.
    state.workspace = super::workspaces::think::ID;
    state.focus = Focus::Graph;
    if state.loaded.id() == Some(session) {
        session_loaded(state);
        state.refresh_shown();
    } else {
        fx.push(Effect::LoadSession(session));
    }
}

/// Called when a session has loaded: selects the node a jump was waiting for, if it is in it.
pub fn session_loaded(state: &mut State) {
    let Some(id) = state.pending_select else {
        return;
    };
    if state.loaded.index.contains_key(&id) {
        state.pending_select = None;
        select_node(state, id);
    }
}

/// Selects `id`'s row in the graph, opening its turn when it is folded away.
pub fn select_node(state: &mut State, id: NodeId) -> bool {
    let find = |state: &State| {
        state
            .graph
            .rows()
            .iter()
            .position(|r| r.key == RowKey::Node(id))
    };
    if let Some(i) = find(state) {
        state.graph.selected = i;
        return true;
    }
    // The turn's query row is always shown: open it.
    let Some(&at) = state.loaded.index.get(&id) else {
        return false;
    };
    let query = state
        .loaded
        .slots
        .get(..=at)
        .unwrap_or(&[])
        .iter()
        .rev()
        .find(|n| n.kind == NodeType::Query)
        .map(|n| n.id);
    if let Some(q) = query
        && let Some(qi) = state
            .graph
            .rows()
            .iter()
            .position(|r| r.key == RowKey::Node(q))
    {
        state.graph.selected = qi;
        if !state.graph.rows()[qi].expanded {
            state.graph.expand();
        }
    }
    match find(state) {
        Some(i) => {
            state.graph.selected = i;
            true
        }
        None => false,
    }
}
