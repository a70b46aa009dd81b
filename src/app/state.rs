//! Everything the TUI shows, in one place. Only `update` changes it; views read it.

use std::collections::HashMap;

use tokio_util::sync::CancellationToken;

use super::graph::GraphModel;
use super::input::InputBox;
use crate::engines::llm::{Effort, Usage};
use crate::engines::orchestrator::Route;
use crate::store::{Node, NodeId, NodeStatus, NodeType, Session, SessionId};

/// The workspaces, in tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workspace {
    Think,
    Sessions,
    Ledger,
    Fork,
    Got,
    Verify,
    Insights,
    Replay,
}

impl Workspace {
    pub const ALL: [Workspace; 8] = [
        Workspace::Think,
        Workspace::Sessions,
        Workspace::Ledger,
        Workspace::Fork,
        Workspace::Got,
        Workspace::Verify,
        Workspace::Insights,
        Workspace::Replay,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Workspace::Think => "Think",
            Workspace::Sessions => "Sessions",
            Workspace::Ledger => "Ledger",
            Workspace::Fork => "Fork",
            Workspace::Got => "GoT",
            Workspace::Verify => "Verify",
            Workspace::Insights => "Insights",
            Workspace::Replay => "Replay",
        }
    }

    /// The keymap section of the workspace's own keys, if it has one.
    pub fn section(self) -> Option<super::action::Section> {
        use super::action::Section;
        match self {
            Workspace::Think | Workspace::Sessions | Workspace::Ledger => None,
            Workspace::Fork => Some(Section::Fork),
            Workspace::Got => Some(Section::Got),
            Workspace::Verify => Some(Section::Verify),
            Workspace::Insights => Some(Section::Insights),
            Workspace::Replay => Some(Section::Replay),
        }
    }
}

/// Which pane keys go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Input,
    Thinking,
    Response,
    Graph,
    Sidebar,
}

/// How the thinking pane is shown (`t` cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThinkingView {
    Streaming,
    Collapsed,
    Hidden,
}

impl ThinkingView {
    pub fn next(self) -> Self {
        match self {
            ThinkingView::Streaming => ThinkingView::Collapsed,
            ThinkingView::Collapsed => ThinkingView::Hidden,
            ThinkingView::Hidden => ThinkingView::Streaming,
        }
    }
}

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

/// Where the current run is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunPhase {
    Idle,
    Starting,
    Thinking,
    Answering,
    Done,
    Interrupted,
    Failed(String),
}

impl RunPhase {
    pub fn label(&self) -> String {
        match self {
            RunPhase::Idle => "idle".into(),
            RunPhase::Starting => "starting…".into(),
            RunPhase::Thinking => "thinking…".into(),
            RunPhase::Answering => "answering…".into(),
            RunPhase::Done => "done".into(),
            RunPhase::Interrupted => "interrupted".into(),
            RunPhase::Failed(e) => format!("failed: {e}"),
        }
    }

    pub fn is_running(&self) -> bool {
        matches!(
            self,
            RunPhase::Starting | RunPhase::Thinking | RunPhase::Answering
        )
    }
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

/// A row of the sessions list.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRow {
    pub id: SessionId,
    pub title: String,
    pub created: String,
    pub source: &'static str,
}

/// The session open in the Think workspace.
#[derive(Clone, Debug, Default)]
pub struct LoadedSession {
    pub session: Option<Session>,
    pub nodes: Vec<Node>,
    pub index: HashMap<NodeId, usize>,
}

impl LoadedSession {
    pub fn new(session: Session, nodes: Vec<Node>) -> Self {
        let index = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
        Self {
            session: Some(session),
            nodes,
            index,
        }
    }

    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.index.get(&id).and_then(|i| self.nodes.get(*i))
    }

    pub fn id(&self) -> Option<SessionId> {
        self.session.as_ref().map(|s| s.id)
    }
}

/// The thinking and answer shown in the panes: the turn of the selected graph node, or the
/// live run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shown {
    pub question: String,
    pub thinking: String,
    pub response: String,
    pub thinking_status: Option<NodeStatus>,
    pub response_status: Option<NodeStatus>,
    pub steps: usize,
    pub decisions: usize,
}

/// Severity of a status-line notice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// The whole TUI state.
#[derive(Debug)]
pub struct State {
    pub workspace: Workspace,
    pub focus: Focus,
    pub overlay: Option<Overlay>,
    pub sessions: Vec<SessionRow>,
    /// Indexes into `sessions` that pass the filter, in display order.
    pub filtered: Vec<usize>,
    pub sidebar_selected: usize,
    pub sidebar_visible: bool,
    pub filter: InputBox,
    pub filtering: bool,
    pub loaded: LoadedSession,
    pub graph: GraphModel,
    /// The Ledger workspace: thoughts an MCP client sent, as a tree.
    pub ledger: super::ledger::LedgerModel,
    pub fork: super::fork_ws::ForkWs,
    pub got: super::got_ws::GotWs,
    pub verify: super::verify_ws::VerifyWs,
    pub insights: super::insights_ws::InsightsWs,
    pub replay: super::replay_ws::ReplayWs,
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
            workspace: Workspace::Think,
            focus: Focus::Input,
            overlay: None,
            sessions: Vec::new(),
            filtered: Vec::new(),
            sidebar_selected: 0,
            sidebar_visible: true,
            filter: InputBox::default(),
            filtering: false,
            loaded: LoadedSession::default(),
            graph: GraphModel::default(),
            ledger: Default::default(),
            fork: Default::default(),
            got: Default::default(),
            verify: Default::default(),
            insights: Default::default(),
            replay: Default::default(),
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
        self.filtered
            .get(self.sidebar_selected)
            .and_then(|i| self.sessions.get(*i))
    }

    /// The workspace jobs under way besides the Think run, as the status bar names them.
    pub fn background_jobs(&self) -> Vec<String> {
        let mut jobs = Vec::new();
        if let Some(busy) = &self.fork.busy {
            let what = match busy.kind {
                super::fork_ws::JobKind::Fork => "fork",
                super::fork_ws::JobKind::Debate => "debate",
                super::fork_ws::JobKind::Refork => "refork",
                super::fork_ws::JobKind::Steer => "steering",
                super::fork_ws::JobKind::Checkpoint => "checkpoint",
            };
            jobs.push(format!("{what} running…"));
        }
        if self.got.running() {
            jobs.push(match self.got.paused {
                true => "GoT search paused".to_string(),
                false => "GoT search running…".to_string(),
            });
        }
        match self.verify.status {
            super::verify_ws::Status::Verifying { .. } => jobs.push("verifying…".to_string()),
            super::verify_ws::Status::Forking { .. } => {
                jobs.push("corrected branch running…".to_string())
            }
            super::verify_ws::Status::Idle | super::verify_ws::Status::Loading => {}
        }
        if self.insights.running.is_some() {
            jobs.push("insights running…".to_string());
        }
        jobs
    }

    /// Whether the sidebar fits and is switched on.
    pub fn sidebar_shown(&self) -> bool {
        self.sidebar_visible && self.size.0 >= 100
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
        let nodes = &self.loaded.nodes;
        if nodes.is_empty() {
            self.shown = Shown::default();
            return;
        }
        // The turn holding the selected node, else the last turn.
        let anchor = self
            .graph
            .selected_node()
            .and_then(|id| self.loaded.index.get(&id).copied())
            .unwrap_or(nodes.len() - 1)
            .min(nodes.len() - 1);
        let start = nodes[..=anchor]
            .iter()
            .rposition(|n| n.kind == NodeType::Query)
            .unwrap_or(0);
        let end = nodes[start + 1..]
            .iter()
            .position(|n| n.kind == NodeType::Query)
            .map(|p| start + 1 + p)
            .unwrap_or(nodes.len());
        let mut shown = Shown::default();
        for n in nodes.get(start..end).unwrap_or(&[]) {
            match n.kind {
                NodeType::Query => shown.question = n.text.clone(),
                NodeType::Thinking => {
                    if !shown.thinking.is_empty() {
                        shown.thinking.push_str("\n\n");
                    }
                    shown.thinking.push_str(&n.text);
                    shown.thinking_status = Some(n.status.clone());
                    shown.steps += n
                        .meta
                        .get("steps")
                        .and_then(|s| s.as_array())
                        .map_or(0, Vec::len);
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
