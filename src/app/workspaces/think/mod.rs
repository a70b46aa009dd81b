//! The Think workspace: ask a question, watch the thinking and the answer stream, walk the
//! session's graph. Its state is the shared [`State`] (the open session, the graph, the run,
//! the question box): the other workspaces read and change it too, so it stays there, and
//! the shared actions in `update` drive it. This is how the workspace is drawn.

pub mod turn;

use std::convert::Infallible;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::{Outbox, Spec, Workspace, WorkspaceId};
use crate::app::runtime::Services;
use crate::app::state::State;
use crate::store::NodeStatus;
use crate::views::graph::visible_offset;
use crate::views::sessions::SessionsView;
use crate::views::think::{self, Focus, ThinkView};
use crate::views::{Picked, ViewCx};

pub const ID: WorkspaceId = "think";

const SPEC: &Spec = &Spec {
    id: ID,
    title: "Think",
    help_title: "Think workspace",
    go: "Go to the Think workspace",
    section: false,
    actions: &[],
};

/// The Think workspace. Everything it shows lives in the shared [`State`].
#[derive(Debug, Default)]
pub struct Think;

/// The node selected in the Think graph (a step or decision: its thinking node), named by a
/// piece of its text.
pub(super) fn graph_pick(state: &State) -> Option<Picked> {
    let node = state.loaded.node(state.graph.selected_node()?)?;
    let text = crate::views::text::one_line(&node.text);
    Some(Picked {
        node: node.id,
        kind: node.kind,
        what: (!text.is_empty()).then(|| crate::views::text::clip(&text, 28)),
    })
}

/// The sessions list of the shared state, as the sidebar and the Sessions workspace draw it.
pub(super) fn sessions_view(state: &State) -> SessionsView<'_> {
    SessionsView {
        sessions: &state.sessions,
        listed: state.sessions_listed,
        filtered: &state.filtered,
        selected: state.sidebar_selected,
        filter: state.filter.text(),
        filtering: state.filtering,
        open: state.loaded.id(),
        sidebar_focused: state.focus == Focus::Sidebar,
        overlay: state.overlay.is_some(),
    }
}

/// The Think view of the shared state: the live run's text while one streams, else the
/// selected turn's.
fn view(state: &State) -> ThinkView<'_> {
    let (thinking, response, thinking_status, response_status) = match &state.run {
        Some(r) => (
            r.thinking.as_str(),
            r.response.as_str(),
            Some(NodeStatus::Streaming),
            Some(NodeStatus::Streaming),
        ),
        None => (
            state.shown.thinking.as_str(),
            state.shown.response.as_str(),
            state.shown.thinking_status.clone(),
            state.shown.response_status.clone(),
        ),
    };
    ThinkView {
        sidebar: state.sidebar_shown().then(|| sessions_view(state)),
        focus: state.focus,
        thinking_view: state.thinking_view,
        phase: &state.phase,
        thinking,
        response,
        thinking_status,
        response_status,
        thinking_scroll: state.thinking_scroll,
        response_scroll: state.response_scroll,
        welcome: state.loaded.session.is_none() && state.run.is_none(),
        graph: &state.graph,
        route: state.route_override.unwrap_or(state.route_preview),
        branch_from: state.branch_from,
        input: &state.input,
        overlay: state.overlay.is_some(),
    }
}

impl Workspace for Think {
    const SPEC: &'static Spec = SPEC;
    type Msg = Infallible;
    type Effect = Infallible;
    type Form = Infallible;

    fn run(effect: Infallible, _svc: &Services, _out: Outbox<Infallible>) {
        match effect {}
    }

    fn selected_node(&self, state: &State) -> Option<Picked> {
        graph_pick(state)
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, state: &mut State, v: &ViewCx<'_>) {
        // Keep the graph's selection in view of the rows the pane has (inside its border).
        let rows = think::layout(area, &view(state))
            .graph
            .height
            .saturating_sub(2) as usize;
        let graph = &mut state.graph;
        graph.offset = visible_offset(graph.selected, graph.offset, rows, graph.rows().len());
        think::render(f, area, &view(state), v);
    }
}
