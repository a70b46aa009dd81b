//! The Insights workspace: metacognitive insights on a session, with evidence links.
//!
//! `I` (from any pane) asks for a focus (or none) and runs the metacognition engine on the
//! open session; entering the workspace shows the session's last insights run. Each insight
//! lists its evidence; Enter on an evidence line jumps to its node in the Think graph.

mod tasks;

use ratatui::Frame;
use ratatui::layout::Rect;
use tokio_util::sync::CancellationToken;

pub use self::tasks::load_run;
use super::{Cx, Spec, Workspace, WorkspaceId};
use crate::app::action::Action;
use crate::app::form::{Answer, Form};
use crate::app::runtime::Services;
use crate::app::state::{Focus, Level, State};
use crate::engines::metacog::FocusArea;
use crate::store::{NodeId, SessionId};
use crate::views::ViewCx;
use crate::views::insights::{InsightLine, InsightsRun, InsightsView};

pub const ID: WorkspaceId = "insights";

crate::workspace_actions! { InsightsAction for ID => {
    RunInsights => ("run_insights", "Metacognitive insights on the session", Anywhere),
    OpenEvidence => ("open_evidence", "Jump to the evidence's node", Own),
} }

const SPEC: &Spec = &Spec {
    id: ID,
    title: "Insights",
    help_title: "Insights workspace",
    go: "Go to the Insights workspace",
    section: true,
    actions: InsightsAction::SPECS,
};

/// The focus areas offered by `I`, after "no particular focus".
pub const FOCUS_AREAS: [FocusArea; 5] = [
    FocusArea::DecisionQuality,
    FocusArea::ReasoningPatterns,
    FocusArea::ConfidenceCalibration,
    FocusArea::AlternativeExploration,
    FocusArea::BiasDetection,
];

/// What the workspace shows and remembers.
#[derive(Debug, Default)]
pub struct Insights {
    pub result: Option<InsightsRun>,
    /// Index into [`InsightsRun::lines`].
    pub selected: usize,
    /// An analysis is running (with this focus, if any).
    pub running: Option<Option<FocusArea>>,
    pub loading: bool,
    pub hint: Option<String>,
    looked_up: Option<SessionId>,
    cancel: Option<CancellationToken>,
}

/// News for the workspace from its tasks.
#[derive(Debug)]
pub enum InsightsMsg {
    Loaded {
        session: SessionId,
        result: Option<Box<InsightsRun>>,
        fresh: bool,
    },
    Failed(String),
    /// The session was reloaded for an evidence jump: select this node.
    SelectNode(NodeId),
}

/// Work for the runtime, carried out by [`Workspace::run`].
#[derive(Debug)]
pub enum InsightsEffect {
    Load {
        session: SessionId,
    },
    Analyze {
        session: SessionId,
        focus: Option<FocusArea>,
        cancel: CancellationToken,
    },
    /// Reload the session, then select `node` in the graph.
    Open {
        session: SessionId,
        node: NodeId,
    },
}

/// What a form this workspace opened is for.
#[derive(Clone, Debug, PartialEq)]
pub enum FormPurpose {
    Focus,
}

type Ctx<'a> = Cx<'a, Insights>;

impl Insights {
    fn lines(&self) -> usize {
        self.result.as_ref().map_or(0, |r| r.lines().len())
    }

    fn ask_focus(&mut self, cx: &mut Ctx<'_>) {
        if self.running.is_some() {
            cx.notice("an analysis is already running", Level::Warn);
        } else if cx.state.loaded.id().is_none() {
            cx.notice("open a session first", Level::Info);
        } else {
            let mut choices = vec!["no particular focus".to_string()];
            choices.extend(FOCUS_AREAS.iter().map(|f| f.as_str().replace('_', " ")));
            cx.open_form(Form::choose(
                "Insights on this session: focus",
                Ctx::purpose(FormPurpose::Focus),
                choices,
            ));
        }
    }

    fn open_evidence(&mut self, cx: &mut Ctx<'_>) {
        let Some(r) = &self.result else {
            return;
        };
        let ev = match r.lines().get(self.selected).copied() {
            Some(InsightLine::Evidence(i, j)) => r.insights[i].evidence.get(j),
            Some(InsightLine::Insight(i)) => r.insights[i].evidence.first(),
            None => None,
        };
        let Some(ev) = ev else {
            cx.notice("this insight cites no evidence", Level::Info);
            return;
        };
        let (node, session) = (ev.node, r.session);
        if ev.kind.is_none() {
            cx.notice(
                format!("node {} is no longer stored", node.short()),
                Level::Warn,
            );
            return;
        }
        cx.state.workspace = super::think::ID;
        cx.state.focus = Focus::Graph;
        if cx.state.loaded.id() == Some(session) {
            cx.state.select_in_graph(node);
        }
        cx.run(InsightsEffect::Open { session, node });
    }

    fn loaded(
        &mut self,
        session: SessionId,
        result: Option<Box<InsightsRun>>,
        fresh: bool,
        cx: &mut Ctx<'_>,
    ) {
        self.loading = false;
        self.running = None;
        let Some(r) = result else {
            // Another session's insights no longer apply.
            if self.result.as_ref().is_some_and(|r| r.session != session) {
                self.result = None;
            }
            if self.result.is_none() {
                self.hint = Some("no insights stored for this session".into());
            }
            return;
        };
        if fresh {
            let bad = r.hallucinated;
            let dropped = if bad > 0 {
                format!("; {bad} references to unknown nodes dropped")
            } else {
                String::new()
            };
            cx.notice(
                format!(
                    "{} insights from {} nodes{dropped}",
                    r.insights.len(),
                    r.nodes_analyzed
                ),
                if bad > 0 { Level::Warn } else { Level::Info },
            );
        }
        if self.result.as_ref().map(|o| o.run) != Some(r.run) {
            self.selected = 0;
        }
        self.result = Some(*r);
        self.hint = None;
    }
}

impl Workspace for Insights {
    const SPEC: &'static Spec = SPEC;
    type Msg = InsightsMsg;
    type Effect = InsightsEffect;
    type Form = FormPurpose;

    fn on_enter(&mut self, cx: &mut Ctx<'_>) {
        let Some(session) = cx.state.loaded.id() else {
            if self.result.is_none() {
                self.hint = Some("no session open".into());
            }
            return;
        };
        let showing = self.result.as_ref().map(|r| r.session);
        if showing == Some(session) || self.looked_up == Some(session) || self.running.is_some() {
            return;
        }
        self.looked_up = Some(session);
        self.loading = true;
        cx.run(InsightsEffect::Load { session });
    }

    fn on_action(&mut self, a: &Action, cx: &mut Ctx<'_>) -> bool {
        match InsightsAction::of(a) {
            Some(InsightsAction::RunInsights) => {
                self.ask_focus(cx);
                return true;
            }
            Some(InsightsAction::OpenEvidence) => {
                self.open_evidence(cx);
                return true;
            }
            None => {}
        }
        let n = self.lines();
        let sel = self.selected;
        let target = match a {
            Action::MoveDown => sel + 1,
            Action::MoveUp => sel.saturating_sub(1),
            Action::PageDown => sel + 10,
            Action::PageUp => sel.saturating_sub(10),
            Action::Top => 0,
            Action::Bottom => n.saturating_sub(1),
            Action::Select => {
                self.open_evidence(cx);
                return true;
            }
            Action::CancelRun if self.running.is_some() && cx.state.overlay.is_none() => {
                if let Some(c) = &self.cancel {
                    c.cancel();
                }
                cx.notice("cancelling the analysis", Level::Info);
                return true;
            }
            _ => return false,
        };
        self.selected = target.min(n.saturating_sub(1));
        true
    }

    fn on_msg(&mut self, m: InsightsMsg, cx: &mut Ctx<'_>) {
        match m {
            InsightsMsg::Loaded {
                session,
                result,
                fresh,
            } => self.loaded(session, result, fresh, cx),
            InsightsMsg::Failed(e) => {
                self.loading = false;
                self.running = None;
                cx.notice(format!("insights failed: {e}"), Level::Error);
            }
            InsightsMsg::SelectNode(node) => {
                if !cx.state.select_in_graph(node) {
                    cx.notice(
                        format!("node {} is not in the graph", node.short()),
                        Level::Warn,
                    );
                }
            }
        }
    }

    fn on_form(&mut self, form: FormPurpose, answer: Answer, cx: &mut Ctx<'_>) {
        match form {
            FormPurpose::Focus => {
                let Some(session) = cx.state.loaded.id() else {
                    return;
                };
                let focus = answer
                    .choice
                    .and_then(|c| c.checked_sub(1))
                    .and_then(|i| FOCUS_AREAS.get(i).copied());
                self.running = Some(focus);
                self.looked_up = Some(session);
                cx.state.workspace = ID;
                cx.notice(
                    "analysing the session's recent reasoning (one max-effort call)…",
                    Level::Info,
                );
                let cancel = CancellationToken::new();
                self.cancel = Some(cancel.clone());
                cx.run(InsightsEffect::Analyze {
                    session,
                    focus,
                    cancel,
                });
            }
        }
    }

    fn run(e: InsightsEffect, svc: &Services, out: super::Outbox<InsightsMsg>) {
        tasks::run(e, svc, out);
    }

    fn job(&self) -> Option<String> {
        self.running.map(|_| "insights running…".to_string())
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, _state: &mut State, v: &ViewCx<'_>) {
        let running = self.running.map(|focus| {
            format!(
                "⟳ analysing the session's recent reasoning{}… (esc cancels)",
                focus.map_or(String::new(), |f| format!(" (focus: {})", f.as_str()))
            )
        });
        let view = InsightsView {
            result: self.result.as_ref(),
            selected: self.selected,
            running,
            loading: self.loading,
            hint: self.hint.as_deref(),
        };
        crate::views::insights::render(f, area, &view, v);
    }
}
