//! The Ledger workspace: the thoughts an MCP client recorded through `glassbox mcp`, as a
//! tree (branches under the thought they branch from, revisions marked), following the
//! newest MCP session as other processes write to the store.

mod tasks;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::{Cx, Outbox, Spec, Workspace, WorkspaceId};
use crate::app::action::Action;
use crate::app::runtime::Services;
use crate::app::state::{Level, State};
use crate::store::SessionId;
use crate::views::ViewCx;
use crate::views::ledger_model::LedgerModel;
use crate::views::tree::TreeCursor;

pub const ID: WorkspaceId = "ledger";

const SPEC: &Spec = &Spec {
    id: ID,
    title: "Ledger",
    help_title: "Ledger workspace",
    go: "Go to the Ledger workspace (MCP thoughts)",
    section: false,
    actions: &[],
};

/// The Ledger workspace: the ledger on screen, with its folding and selection.
#[derive(Debug, Default)]
pub struct Ledger {
    model: LedgerModel,
}

/// News from the store reads.
#[derive(Debug)]
pub enum LedgerMsg {
    Loaded(Box<LedgerModel>),
    Failed(String),
}

/// Store reads for the runtime to start.
#[derive(Debug)]
pub enum LedgerEffect {
    /// Read the ledger of this MCP session, or of the most recently updated one.
    Load(Option<SessionId>),
}

impl Ledger {
    /// The ledger shown.
    pub fn model(&self) -> &LedgerModel {
        &self.model
    }

    /// Takes a freshly read ledger. The same ledger grown keeps the reader's place; another
    /// session opens on its newest thought.
    fn loaded(&mut self, mut model: LedgerModel) {
        if model.session() == self.model.session() {
            if let Some(id) = self.model.selected_node() {
                model.select_node(id);
            }
        } else {
            model.select_last();
        }
        self.model = model;
    }
}

impl Workspace for Ledger {
    const SPEC: &'static Spec = SPEC;
    type Msg = LedgerMsg;
    type Effect = LedgerEffect;
    type Form = std::convert::Infallible;

    fn on_enter(&mut self, cx: &mut Cx<'_, Self>) {
        cx.run(LedgerEffect::Load(self.model.session()));
    }

    fn on_action(&mut self, action: &Action, _cx: &mut Cx<'_, Self>) -> bool {
        let m = &mut self.model;
        match action {
            Action::MoveUp => m.move_by(-1),
            Action::MoveDown => m.move_by(1),
            Action::PageUp => m.move_by(-10),
            Action::PageDown => m.move_by(10),
            Action::Top => m.select_first(),
            Action::Bottom => m.select_last(),
            Action::Expand => m.expand(),
            Action::Collapse => m.collapse(),
            _ => return false,
        }
        true
    }

    fn on_msg(&mut self, msg: LedgerMsg, cx: &mut Cx<'_, Self>) {
        match msg {
            LedgerMsg::Loaded(model) => self.loaded(*model),
            LedgerMsg::Failed(e) => cx.notice(format!("cannot read the ledger: {e}"), Level::Error),
        }
    }

    /// An MCP server may have started a newer session: follow it while the ledger is shown.
    fn on_store_change(&mut self, cx: &mut Cx<'_, Self>) {
        if cx.shown() {
            cx.run(LedgerEffect::Load(None));
        }
    }

    fn run(effect: LedgerEffect, svc: &Services, out: Outbox<LedgerMsg>) {
        match effect {
            LedgerEffect::Load(session) => {
                let store = svc.store.clone();
                out.blocking(move || match tasks::load(&store, session) {
                    Ok(model) => LedgerMsg::Loaded(Box::new(model)),
                    Err(e) => LedgerMsg::Failed(e.to_string()),
                });
            }
        }
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, _state: &mut State, v: &ViewCx<'_>) {
        if self.model.session().is_none() {
            crate::views::ledger::render_no_session(f, area, v.theme);
            return;
        }
        // The rows inside the pane's border: keep the selection among them.
        self.model
            .scroll_into_view(area.height.saturating_sub(2) as usize);
        crate::views::ledger::render(f, area, &self.model, v.theme, true);
    }
}
