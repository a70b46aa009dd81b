//! Everything the TUI shows, in one place. Only `update` changes it; views read it.

use std::collections::HashSet;

use tokio_util::sync::CancellationToken;

use super::graph::GraphModel;
use super::input::InputBox;
pub use super::loaded::{LoadedSession, Slot};
use super::workspaces::WorkspaceId;
use crate::engines::llm::{Effort, Usage};
use crate::engines::orchestrator::Route;
use crate::store::{NodeId, NodeStatus, NodeType, SessionId};
pub use crate::views::chrome::Level;
pub use crate::views::sessions::{ListRow, SessionRow};
pub use crate::views::think::{Focus, RunPhase, Shown, ThinkingView};

/// A popup on top of the workspace.
#[derive(Clone, Debug, PartialEq)]
pub enum Overlay {
    Help { scroll: u16 },
    Palette(crate::views::palette::PaletteState),
    ConfirmDelete { session: SessionId, title: String },
    Rename { session: SessionId, input: InputBox },
    NodeDetail { node: NodeId, scroll: u16 },
    Form(super::form::Form),
    Search(super::search_ui::SearchOverlay),
}

/// A question being answered right now.
#[derive(Clone, Debug)]
pub struct RunView {
    pub id: u64,
    pub session: Option<SessionId>,
    pub query: Option<NodeId>,
    pub thinking_node: Option<NodeId>,
    pub response_node: Option<NodeId>,
    pub question: String,
    pub thinking: String,
    pub response: String,
    pub usage: Usage,
    pub cancel: CancellationToken,
}

/// The whole TUI state.
#[derive(Debug)]
pub struct State {
    /// The workspace on screen.
    pub workspace: WorkspaceId,
    pub focus: Focus,
    pub overlay: Option<Overlay>,
    pub sessions: Vec<SessionRow>,
    /// The session list was read at least once (until then the list says it is reading).
    pub sessions_listed: bool,
    /// The rows shown: sessions that pass the filter, grouped by project, in display order.
    pub filtered: Vec<ListRow>,
    /// The projects whose sessions are folded away in the list (`""`: no project).
    pub collapsed: HashSet<String>,
    pub sidebar_selected: usize,
    pub sidebar_visible: bool,
    pub filter: InputBox,
    pub filtering: bool,
    pub loaded: LoadedSession,
    pub graph: GraphModel,
    /// The jobs the workspaces have under way, as the status bar names them.
    pub jobs: Vec<String>,
    /// A node to select in the graph once its session has loaded (a search hit's).
    pub pending_select: Option<NodeId>,
    pub shown: Shown,
    pub input: InputBox,
    pub run: Option<RunView>,
    pub phase: RunPhase,
    pub thinking_view: ThinkingView,
    /// Lines scrolled up from the bottom; 0 follows new text.
    pub thinking_scroll: u16,
    pub response_scroll: u16,
    /// The next question continues from this node (a branch) instead of the session's end.
    pub branch_from: Option<NodeId>,
    pub effort_override: Option<Effort>,
    pub route_override: Option<Route>,
    /// What the router made of the text in the input box.
    pub route_preview: Route,
    pub provider: String,
    pub model: String,
    pub session_tokens: u64,
    pub token_budget: u64,
    pub notice: Option<(String, Level)>,
    pub pending_chord: Option<(String, Vec<(String, super::action::Action)>)>,
    pub size: (u16, u16),
    pub quit: bool,
}

impl State {
    pub fn new(provider: String, model: String, token_budget: u64) -> Self {
        Self {
            workspace: super::workspaces::HOME,
            focus: Focus::Input,
            overlay: None,
            sessions: Vec::new(),
            sessions_listed: false,
            filtered: Vec::new(),
            collapsed: HashSet::new(),
            sidebar_selected: 0,
            sidebar_visible: true,
            filter: InputBox::default(),
            filtering: false,
            loaded: LoadedSession::default(),
            graph: GraphModel::default(),
            jobs: Vec::new(),
            pending_select: None,
            shown: Shown::default(),
            input: InputBox::default(),
            run: None,
            phase: RunPhase::Idle,
            thinking_view: ThinkingView::Streaming,
            thinking_scroll: 0,
            response_scroll: 0,
            branch_from: None,
            effort_override: None,
            route_override: None,
            route_preview: Route::Simple,
            provider,
            model,
            session_tokens: 0,
            token_budget,
            notice: None,
            pending_chord: None,
            size: (80, 24),
            quit: false,
        }
    }

    /// The session row selected in the sidebar.
    pub fn selected_session(&self) -> Option<&SessionRow> {
        match self.filtered.get(self.sidebar_selected)? {
            ListRow::Session(i) => self.sessions.get(*i),
            ListRow::Group { .. } => None,
        }
    }

    /// Selects `node` in the Think graph, opening its turn if it is folded. True when found.
    pub fn select_in_graph(&mut self, node: NodeId) -> bool {
        use super::graph::RowKey;
        use super::tree::TreeCursor;
        let find = |graph: &GraphModel| {
            graph
                .rows()
                .iter()
                .position(|r| r.key == RowKey::Node(node))
        };
        if let Some(i) = find(&self.graph) {
            self.graph.selected = i;
            self.refresh_shown();
            return true;
        }
        // Folded away: open the turn's query row, then look again.
        let Some(&pos) = self.loaded.index.get(&node) else {
            return false;
        };
        let Some(query) = self.loaded.slots[..=pos]
            .iter()
            .rev()
            .find(|n| n.kind == NodeType::Query)
            .map(|n| n.id)
        else {
            return false;
        };
        let Some(q) = self
            .graph
            .rows()
            .iter()
            .position(|r| r.key == RowKey::Node(query))
        else {
            return false;
        };
        self.graph.selected = q;
        self.graph.expand();
        match find(&self.graph) {
            Some(i) => {
                self.graph.selected = i;
                self.refresh_shown();
                true
            }
            None => false,
        }
    }

    /// Whether the sidebar fits and is switched on.
    pub fn sidebar_shown(&self) -> bool {
        self.sidebar_visible && self.size.0 >= 100
    }

    /// The position of the node whose turn the panes show: the selected node's, else the
    /// last.
    pub fn anchor(&self) -> usize {
        let last = self.loaded.len().saturating_sub(1);
        self.graph
            .selected_node()
            .and_then(|id| self.loaded.index.get(&id).copied())
            .unwrap_or(last)
            .min(last)
    }

    /// Recomputes what the thinking and answer panes show.
    pub fn refresh_shown(&mut self) {
        if let Some(run) = &self.run {
            self.shown = Shown {
                question: run.question.clone(),
                thinking: run.thinking.clone(),
                response: run.response.clone(),
                thinking_status: Some(NodeStatus::Streaming),
                response_status: Some(NodeStatus::Streaming),
                steps: 0,
                decisions: 0,
            };
            return;
        }
        if self.loaded.is_empty() {
            self.shown = Shown::default();
            return;
        }
        let mut shown = Shown::default();
        let turn = self.loaded.turn_of(self.anchor());
        for n in self.loaded.shown_in(turn) {
            // A body still being read shows once it arrives.
            let Some(n) = self.loaded.node(n.id) else {
                continue;
            };
            match n.kind {
                NodeType::Query => shown.question = n.text.clone(),
                NodeType::Thinking => {
                    if !shown.thinking.is_empty() {
                        shown.thinking.push_str("\n\n");
                    }
                    shown.thinking.push_str(&n.text);
                    shown.thinking_status = Some(n.status.clone());
                    shown.steps += crate::engines::thinkgraph::Step::count(n);
                }
                NodeType::Response => {
                    shown.response.push_str(&n.text);
                    shown.response_status = Some(n.status.clone());
                }
                _ => {}
            }
        }
        self.shown = shown;
    }
}
