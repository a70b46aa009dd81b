//! The Sessions workspace: every session grouped by project, filterable, with the selected
//! one's details (project, working directory, branch, models, activity, counts, tokens). The
//! list is the shared [`State`]'s (the Think sidebar shows the same one), and the shared
//! actions in `update` move through it, fold projects, open, rename and delete sessions.
//! The details are counted off the UI thread for the selected session, one count at a time.

pub mod list;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::{Cx, Outbox, Spec, Workspace, WorkspaceId};
use crate::app::runtime::Services;
use crate::app::state::{Focus, State};
use crate::engines::transcript::SessionStats;
use crate::store::SessionId;
use crate::views::sessions::Details;
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

/// Counting a session's details.
#[derive(Debug)]
pub enum SessionsEffect {
    Count(SessionId),
}

/// A session's details, counted.
#[derive(Debug)]
pub enum SessionsMsg {
    Counted(SessionId, Result<Box<SessionStats>, String>),
}

/// The Sessions workspace. The list lives in the shared [`State`]; the details of the
/// selected session here.
#[derive(Debug, Default)]
pub struct Sessions {
    /// The last details counted, and for which session.
    details: Option<(SessionId, Result<Box<SessionStats>, String>)>,
    /// The session being counted now.
    counting: Option<SessionId>,
}

impl Sessions {
    /// The session whose details are counted and here.
    pub fn counted(&self) -> Option<SessionId> {
        match &self.details {
            Some((id, Ok(_))) => Some(*id),
            _ => None,
        }
    }

    /// Starts counting the selected session's details unless they are here or under way.
    fn count_selected(&mut self, cx: &mut Cx<'_, Self>) {
        let Some(id) = cx.state.selected_session().map(|r| r.id) else {
            return;
        };
        let have = self.details.as_ref().is_some_and(|(d, _)| *d == id);
        if !have && self.counting.is_none() {
            self.counting = Some(id);
            cx.run(SessionsEffect::Count(id));
        }
    }
}

impl Workspace for Sessions {
    const SPEC: &'static Spec = SPEC;
    type Msg = SessionsMsg;
    type Effect = SessionsEffect;
    type Form = std::convert::Infallible;

    /// The list takes the keys here.
    fn on_enter(&mut self, cx: &mut Cx<'_, Self>) {
        cx.state.focus = Focus::Sidebar;
        self.count_selected(cx);
    }

    fn on_msg(&mut self, msg: SessionsMsg, cx: &mut Cx<'_, Self>) {
        let SessionsMsg::Counted(id, result) = msg;
        self.counting = None;
        self.details = Some((id, result));
        // The selection may have moved on meanwhile.
        if cx.shown() {
            self.count_selected(cx);
        }
    }

    /// New nodes change the counts: count again.
    fn on_store_change(&mut self, cx: &mut Cx<'_, Self>) {
        self.details = None;
        if cx.shown() {
            self.count_selected(cx);
        }
    }

    fn follow(&mut self, cx: &mut Cx<'_, Self>) {
        self.count_selected(cx);
    }

    fn run(effect: SessionsEffect, svc: &Services, out: Outbox<SessionsMsg>) {
        let SessionsEffect::Count(id) = effect;
        let store = svc.store.clone();
        out.blocking(move || {
            let counted = (|| {
                let session = store
                    .session(id)?
                    .ok_or_else(|| crate::store::StoreError::NotFound(format!("session {id}")))?;
                let heads = store.session_heads(id)?;
                Ok::<_, crate::store::StoreError>(Box::new(SessionStats::of(&session, &heads)))
            })();
            SessionsMsg::Counted(id, counted.map_err(|e| e.to_string()))
        });
    }

    /// The open session's node selected in the Think graph, as `f` forks it from here.
    fn selected_node(&self, state: &State) -> Option<Picked> {
        super::think::graph_pick(state)
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, state: &mut State, v: &ViewCx<'_>) {
        let view = super::think::sessions_view(state);
        let selected = view.selected_session().map(|r| r.id);
        let details = match &self.details {
            Some((id, Ok(st))) if Some(*id) == selected => Details::Stats(st),
            Some((id, Err(e))) if Some(*id) == selected => Details::Failed(e),
            _ => Details::Loading,
        };
        crate::views::sessions::render(f, area, &view, details, v);
    }
}
