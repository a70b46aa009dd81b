//! The Sessions workspace: every session, filterable, with the selected one's details. The
//! list is the shared [`State`]'s (the Think sidebar shows the same one), and the shared
//! actions in `update` move through it, open, rename and delete sessions.

use std::convert::Infallible;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::{Cx, Outbox, Spec, Workspace, WorkspaceId};
use crate::app::runtime::Services;
use crate::app::state::{Focus, State};
use crate::views::{Picked, ViewCx};

pub const ID: WorkspaceId = "sessions";

const SPEC: &Spec = &Spec {
    id: ID,
    title: "Sessions",
    help_title: "Sessions workspace",
    go: "Go to the Sessions workspace",
    section: false,
    actions: &[],
};

/// The Sessions workspace. What it shows lives in the shared [`State`].
#[derive(Debug, Default)]
pub struct Sessions;

impl Workspace for Sessions {
    const SPEC: &'static Spec = SPEC;
    type Msg = Infallible;
    type Effect = Infallible;
    type Form = Infallible;

    /// The list takes the keys here.
    fn on_enter(&mut self, cx: &mut Cx<'_, Self>) {
        cx.state.focus = Focus::Sidebar;
    }

    fn run(effect: Infallible, _svc: &Services, _out: Outbox<Infallible>) {
        match effect {}
    }

    /// The open session's node selected in the Think graph, as `f` forks it from here.
    fn selected_node(&self, state: &State) -> Option<Picked> {
        super::think::graph_pick(state)
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, state: &mut State, v: &ViewCx<'_>) {
        crate::views::sessions::render(f, area, &super::think::sessions_view(state), v);
    }
}
