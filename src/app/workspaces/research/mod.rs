//! The Research workspace: DeepTrust runs (seed 001) as a glass box. A question line starts
//! a run in the open session; the plan, its audit, the reasoning trace and the tools' output
//! or the report fill four panes as it goes. At the human approval gate a modal shows the
//! plan and the audit: `a` approves (the tools run), `r` rejects with a note (the planner
//! revises), `e`/`t` edit the selected step (the plan is audited again), Esc leaves the run
//! paused (`A` reopens the modal). In the report, Enter on a citation opens its source.
//!
//! `mod.rs` holds the workspace and what its keys do; `update.rs` applies its tasks' news;
//! `tasks.rs` runs the engine and reads the store.

mod tasks;
mod update;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;

use super::{Cx, Job, Outbox, Spec, Workspace, WorkspaceId};
use crate::app::action::Action;
use crate::app::input::InputBox;
use crate::app::runtime::Services;
use crate::app::state::{Level, State};
use crate::engines::research::{CitationKind, Decision, Status, StepEdit, Tool, locator};
use crate::store::{NodeId, SessionId};
use crate::views::ViewCx;
use crate::views::research::{ModalView, ResearchView};

pub use self::tasks::{Failure, ResearchEffect, ResearchMsg, load_last, stored_phase};
pub use crate::views::research::{ModalMode, Pane, Phase, RunView, SourceView};

/// The workspace's id: its keymap section `[research]` and its `workspace_research` action.
pub const ID: WorkspaceId = "research";

crate::workspace_actions! { ResearchAction for ID => {
    Ask => ("ask_research", "Type a research question", Own),
    Review => ("review_plan", "Open the approval of a plan waiting for you", Own),
    Resume => ("resume_research", "Resume the shown research run (stopped or failed)", Own),
} }

/// The approval modal: what it is doing, the selected step, the text being typed.
#[derive(Clone, Debug, PartialEq)]
pub struct Modal {
    pub mode: ModalMode,
    pub step: usize,
    pub input: InputBox,
    pub scroll: usize,
}

/// The Research workspace.
#[derive(Debug, Default)]
pub struct Research {
    /// The run shown, as the view draws it.
    pub view: RunView,
    /// The question line.
    pub input: InputBox,
    /// Keys go to the question line.
    pub typing: bool,
    pub focus: Pane,
    /// The selected plan step and citation.
    pub step: usize,
    pub citation: usize,
    /// Rows the focused pane is scrolled.
    pub scroll: usize,
    /// The approval modal, when open.
    pub modal: Option<Modal>,
    /// A citation's source, when open.
    pub source: Option<SourceView>,
    /// Why there is nothing to show, when there is not.
    pub hint: Option<String>,
    /// How far the focused pane can scroll, as last drawn.
    max_scroll: usize,
    /// The step selection follows the running step until the user moves it.
    follow: bool,
    /// Which run the messages belong to; older runs' messages are dropped.
    seq: u64,
    /// The run going on here, and how to stop it.
    job: Option<Job<()>>,
    /// The session last asked for, and whether a read of it is under way.
    looked_up: Option<SessionId>,
    loading: bool,
    /// The store changed during that read: read again after it.
    reload: bool,
}

impl Workspace for Research {
    const SPEC: &'static Spec = &Spec {
        id: ID,
        title: "Research",
        help_title: "Research workspace",
        go: "Go to the Research workspace",
        section: true,
        actions: ResearchAction::SPECS,
    };
    type Msg = ResearchMsg;
    type Effect = ResearchEffect;
    type Form = ();

    fn on_enter(&mut self, cx: &mut Cx<'_, Self>) {
        if self.running() {
            return;
        }
        match cx.state.loaded.id() {
            Some(session) => self.load(session, cx),
            None => {
                if self.view.state.is_none() {
                    self.hint = Some("no session open: a question starts a new one".into());
                }
            }
        }
    }

    fn on_store_change(&mut self, cx: &mut Cx<'_, Self>) {
        if !cx.shown() || self.running() || self.modal.is_some() {
            return;
        }
        let Some(session) = cx.state.loaded.id() else {
            return;
        };
        let follow = self.view.session != Some(session)
            || matches!(self.view.phase, Phase::Elsewhere | Phase::Empty);
        if !follow {
            return;
        }
        if self.loading {
            self.reload = true;
        } else {
            self.load(session, cx);
        }
    }

    fn typing(&self) -> bool {
        self.typing || self.modal.is_some() || self.source.is_some()
    }

    fn on_key(&mut self, k: KeyEvent, cx: &mut Cx<'_, Self>) {
        if self.source.is_some() {
            self.source_key(k);
        } else if self.modal.is_some() {
            self.modal_key(k, cx);
        } else {
            match k.code {
                KeyCode::Enter => {
                    self.typing = false;
                    self.start(cx);
                }
                KeyCode::Esc => self.typing = false,
                _ => crate::app::input::edit(&mut self.input, k),
            }
        }
    }

    fn on_action(&mut self, a: &Action, cx: &mut Cx<'_, Self>) -> bool {
        cx.takes(ResearchAction::of(a).is_some()) && self.action(a, cx)
    }

    fn on_msg(&mut self, m: ResearchMsg, cx: &mut Cx<'_, Self>) {
        self.apply(m, cx);
    }

    fn run(effect: ResearchEffect, svc: &Services, out: Outbox<ResearchMsg>) {
        tasks::run(effect, svc, out);
    }

    fn job(&self) -> Option<String> {
        self.running().then(|| {
            let what = match (&self.view.live, self.view.running_step()) {
                (Some(l), _) => l.node.clone(),
                (None, Some(i)) => format!("step {}", i + 1),
                (None, None) => "running".into(),
            };
            format!("research: {what}…")
        })
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, _state: &mut State, v: &ViewCx<'_>) {
        let rows = crate::views::research::focused_rows(&self.view_model(), area, v);
        self.max_scroll = rows;
        self.scroll = self.scroll.min(rows);
        crate::views::research::render(f, area, &self.view_model(), v);
    }
}

impl Research {
    /// Whether a run is going on in this TUI.
    pub fn running(&self) -> bool {
        self.job.is_some()
    }

    fn view_model(&self) -> ResearchView<'_> {
        ResearchView {
            run: &self.view,
            input: &self.input,
            typing: self.typing,
            focus: self.focus,
            step: self.step,
            citation: self.citation,
            scroll: self.scroll,
            hint: self.hint.as_deref(),
            modal: self.modal.as_ref().map(|m| ModalView {
                mode: &m.mode,
                input: &m.input,
                step: m.step,
                scroll: m.scroll,
            }),
            source: self.source.as_ref(),
        }
    }

    fn load(&mut self, session: SessionId, cx: &mut Cx<'_, Self>) {
        if self.view.state.is_none() {
            self.view.phase = Phase::Loading;
        }
        self.looked_up = Some(session);
        self.loading = true;
        cx.run(ResearchEffect::Load(session));
    }

    /// A bound action while the workspace is shown; true when it was handled here.
    fn action(&mut self, a: &Action, cx: &mut Cx<'_, Self>) -> bool {
        if let Some(own) = ResearchAction::of(a) {
            match own {
                ResearchAction::Ask => self.typing = true,
                ResearchAction::Review => self.review(cx),
                ResearchAction::Resume => self.resume(cx),
            }
            return true;
        }
        let steps = self.view.steps().len();
        let cites = self.view.citations().len();
        let reported = self
            .view
            .state
            .as_ref()
            .is_some_and(|s| s.final_report.is_some());
        match a {
            Action::FocusInput => self.typing = true,
            Action::FocusNext | Action::FocusPrev => {
                self.focus = self.focus.cycle(*a == Action::FocusNext);
                self.scroll = 0;
            }
            Action::MoveDown | Action::MoveUp => {
                let down = *a == Action::MoveDown;
                let step = |at: usize, n: usize| {
                    if down {
                        (at + 1).min(n.saturating_sub(1))
                    } else {
                        at.saturating_sub(1)
                    }
                };
                match self.focus {
                    Pane::Plan => {
                        self.follow = false;
                        self.step = step(self.step, steps);
                    }
                    Pane::Report if reported && cites > 0 => {
                        self.citation = step(self.citation, cites);
                    }
                    _ => self.scroll_by(if down { 1 } else { -1 }),
                }
            }
            Action::PageDown => self.scroll_by(10),
            Action::PageUp => self.scroll_by(-10),
            Action::Top => {
                self.scroll = 0;
                self.step = 0;
                self.citation = 0;
            }
            Action::Bottom => {
                self.follow = true;
                self.step = steps.saturating_sub(1);
                self.citation = cites.saturating_sub(1);
            }
            Action::Select | Action::Expand => match self.focus {
                Pane::Report if reported && cites > 0 => self.open_citation(cx),
                Pane::Plan if steps > 0 => self.focus = Pane::Report,
                // Enter means nothing in the other panes here; it must not fall through to
                // another workspace's selection.
                _ => {}
            },
            Action::CancelRun if cx.state.overlay.is_none() => {
                let Some(job) = &self.job else {
                    return false;
                };
                job.cancel.cancel();
                cx.notice(
                    "cancelling the research run — it stays resumable (r resumes)",
                    Level::Info,
                );
            }
            _ => return false,
        }
        true
    }

    fn scroll_by(&mut self, rows: isize) {
        // The trace counts up from its newest row.
        let rows = if self.focus == Pane::Trace {
            -rows
        } else {
            rows
        };
        self.scroll = self.scroll.saturating_add_signed(rows).min(self.max_scroll);
    }

    /// Starts a run on the question line's text, in the open session.
    fn start(&mut self, cx: &mut Cx<'_, Self>) {
        if self.running() {
            cx.notice("a research run is going; Esc cancels it", Level::Warn);
            return;
        }
        let question = self.input.text().trim().to_string();
        if question.is_empty() {
            cx.notice("type a question first", Level::Info);
            return;
        }
        self.input.set_text("");
        let session = cx.state.loaded.id();
        self.view = RunView {
            session,
            question: question.clone(),
            phase: Phase::Running,
            ..RunView::default()
        };
        self.hint = None;
        self.modal = None;
        self.step = 0;
        self.citation = 0;
        self.focus = Pane::Plan;
        let cancel = self.begin();
        cx.run(ResearchEffect::Start {
            seq: self.seq,
            question,
            session,
            cancel,
        });
        cx.notice("research started: planning, then the audit", Level::Info);
    }

    /// Opens the approval modal when the shown run waits for it.
    fn review(&mut self, cx: &mut Cx<'_, Self>) {
        if self.view.awaiting() {
            self.open_modal();
        } else if self.running() {
            cx.notice(
                "the run is going; the plan waits for you at the gate",
                Level::Info,
            );
        } else {
            cx.notice("no plan is waiting for approval", Level::Info);
        }
    }

    pub(super) fn open_modal(&mut self) {
        let step = self.step.min(self.view.steps().len().saturating_sub(1));
        self.modal = Some(Modal {
            mode: ModalMode::Review,
            step,
            input: InputBox::default(),
            scroll: 0,
        });
    }

    /// Continues the shown run when it stopped before the end.
    fn resume(&mut self, cx: &mut Cx<'_, Self>) {
        if self.running() {
            cx.notice("a research run is going; Esc cancels it", Level::Warn);
            return;
        }
        if self.view.awaiting() {
            self.open_modal();
            return;
        }
        let Some(run) = self.view.run else {
            cx.notice("no run to resume", Level::Info);
            return;
        };
        match &self.view.phase {
            Phase::Interrupted | Phase::Failed(_) => {}
            Phase::Done => {
                cx.notice("this run has ended; i asks a new question", Level::Info);
                return;
            }
            _ => {
                cx.notice(
                    "this run is still marked running (another process?); it can be resumed once it stops",
                    Level::Info,
                );
                return;
            }
        }
        self.decide(run, Decision::default(), cx);
        cx.notice("resuming the run from the node it stopped at", Level::Info);
    }

    /// Resumes `run` with `decision`.
    fn decide(&mut self, run: crate::store::RunId, decision: Decision, cx: &mut Cx<'_, Self>) {
        self.view.phase = Phase::Running;
        self.view.live = None;
        if let Some(st) = self.view.state.as_mut() {
            // What the engine is about to do, until its first event says so.
            if decision.approve && decision.edits.is_empty() {
                st.human_approved = true;
                st.status = Status::Executing;
            } else if decision.reject.is_some() {
                st.status = Status::Thinking;
            } else if !decision.edits.is_empty() {
                st.status = Status::Auditing;
            }
        }
        let cancel = self.begin();
        cx.run(ResearchEffect::Resume {
            seq: self.seq,
            run,
            decision,
            cancel,
        });
    }

    /// A new run's bookkeeping: its number, its job, the selection following it.
    fn begin(&mut self) -> tokio_util::sync::CancellationToken {
        self.seq += 1;
        let job = Job::new((), "research");
        let cancel = job.cancel.clone();
        self.job = Some(job);
        self.scroll = 0;
        self.follow = true;
        cancel
    }

    /// A key while the modal is open.
    fn modal_key(&mut self, k: KeyEvent, cx: &mut Cx<'_, Self>) {
        let Some(m) = self.modal.as_mut() else {
            return;
        };
        let steps = self.view.steps().to_vec();
        let n = steps.len();
        match m.mode.clone() {
            ModalMode::Review => match k.code {
                KeyCode::Char('a') => self.submit(
                    Decision {
                        approve: true,
                        ..Decision::default()
                    },
                    cx,
                ),
                KeyCode::Char('r') => {
                    m.mode = ModalMode::Reject;
                    m.input = InputBox::default();
                }
                KeyCode::Char('e') | KeyCode::Char('t') if n > 0 => {
                    let s = &steps[m.step.min(n - 1)];
                    let tool = if k.code == KeyCode::Char('t') {
                        next_tool(s.tool)
                    } else {
                        s.tool
                    };
                    m.mode = ModalMode::Edit { tool };
                    m.input = InputBox::default();
                    m.input.set_text(&s.input);
                }
                KeyCode::Char('j') | KeyCode::Down if n > 0 => m.step = (m.step + 1).min(n - 1),
                KeyCode::Char('k') | KeyCode::Up => m.step = m.step.saturating_sub(1),
                KeyCode::PageDown => m.scroll += 10,
                KeyCode::PageUp => m.scroll = m.scroll.saturating_sub(10),
                KeyCode::Esc | KeyCode::Char('q') => {
                    self.step = m.step;
                    self.modal = None;
                    cx.notice(
                        "the run stays paused at the gate; A reviews the plan again",
                        Level::Info,
                    );
                }
                _ => {}
            },
            ModalMode::Reject => match k.code {
                KeyCode::Esc => m.mode = ModalMode::Review,
                KeyCode::Enter => {
                    let note = m.input.text().trim().to_string();
                    self.submit(
                        Decision {
                            reject: Some(note),
                            ..Decision::default()
                        },
                        cx,
                    );
                }
                _ => crate::app::input::edit(&mut m.input, k),
            },
            ModalMode::Edit { tool } => match k.code {
                KeyCode::Esc => m.mode = ModalMode::Review,
                KeyCode::Tab => {
                    m.mode = ModalMode::Edit {
                        tool: next_tool(tool),
                    }
                }
                KeyCode::BackTab => {
                    let back = (0..Tool::ALL.len() - 1).fold(tool, |t, _| next_tool(t));
                    m.mode = ModalMode::Edit { tool: back };
                }
                KeyCode::Enter => {
                    let Some(s) = steps.get(m.step) else {
                        return;
                    };
                    let input = m.input.text().trim().to_string();
                    let edit = StepEdit {
                        step: m.step + 1,
                        tool: (tool != s.tool).then_some(tool),
                        input: (input != s.input).then_some(input),
                    };
                    if edit.tool.is_none() && edit.input.is_none() {
                        m.mode = ModalMode::Review;
                        cx.notice("nothing changed in the step", Level::Info);
                        return;
                    }
                    self.submit(
                        Decision {
                            edits: vec![edit],
                            ..Decision::default()
                        },
                        cx,
                    );
                }
                _ => crate::app::input::edit(&mut m.input, k),
            },
        }
    }

    /// Sends the decision taken in the modal and closes it.
    fn submit(&mut self, d: Decision, cx: &mut Cx<'_, Self>) {
        let Some(run) = self.view.run else {
            cx.notice("the run is not known yet", Level::Warn);
            return;
        };
        if self.running() {
            cx.notice("the run is still going", Level::Warn);
            return;
        }
        if let Some(m) = self.modal.take() {
            self.step = m.step;
        }
        let what = if d.approve {
            "approved — the tools run one step at a time"
        } else if d.reject.is_some() {
            "rejected — the planner revises the plan"
        } else {
            "edited — the plan is audited again"
        };
        self.decide(run, d, cx);
        cx.notice(what, Level::Info);
    }

    fn source_key(&mut self, k: KeyEvent) {
        let Some(s) = self.source.as_mut() else {
            return;
        };
        match k.code {
            KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => self.source = None,
            KeyCode::Char('j') | KeyCode::Down => s.scroll += 1,
            KeyCode::Char('k') | KeyCode::Up => s.scroll = s.scroll.saturating_sub(1),
            KeyCode::PageDown => s.scroll += 10,
            KeyCode::PageUp => s.scroll = s.scroll.saturating_sub(10),
            _ => {}
        }
    }

    /// Opens the selected citation's source: a session's node in the Think workspace, any
    /// other source in an overlay.
    fn open_citation(&mut self, cx: &mut Cx<'_, Self>) {
        let Some(c) = self.view.citations().get(self.citation).cloned() else {
            return;
        };
        if c.kind == CitationKind::Session {
            match session_target(&c.source) {
                Some((session, node)) => {
                    let mut fx = Vec::new();
                    crate::app::search_ui::jump_to(cx.state, session, node, &mut fx);
                    for e in fx {
                        cx.effect(e);
                    }
                }
                None => cx.notice(
                    format!("cannot read the session citation {:?}", c.source),
                    Level::Warn,
                ),
            }
            return;
        }
        let mut rows = vec![("source".to_string(), c.source.clone())];
        match c.kind {
            CitationKind::Knowledge => {
                rows.insert(0, ("document".into(), c.label.clone()));
                if let Some([a, b]) = c.span {
                    rows.push(("span".into(), format!("characters {a}–{b}")));
                }
                rows.push(("at".into(), locator(&c)));
            }
            CitationKind::Url => rows.insert(0, ("page".into(), c.label.clone())),
            CitationKind::Memory | CitationKind::Session => {
                rows.insert(0, ("entry".into(), c.label.clone()));
            }
        }
        rows.push((
            "cited".into(),
            if c.cited {
                "yes"
            } else {
                "no (listed, not cited)"
            }
            .into(),
        ));
        let kind = match c.kind {
            CitationKind::Knowledge => "knowledge",
            CitationKind::Url => "web page",
            CitationKind::Memory => "memory",
            CitationKind::Session => "session",
        };
        self.source = Some(SourceView {
            title: format!("[{}] {kind}", c.n),
            rows,
            text: c.text.clone(),
            scroll: 0,
        });
    }
}

/// The tool after `t`, wrapping.
fn next_tool(t: Tool) -> Tool {
    let i = Tool::ALL.iter().position(|x| *x == t).unwrap_or(0);
    Tool::ALL[(i + 1) % Tool::ALL.len()]
}

/// The session and node of a `session/<session id>#<node id>` citation.
pub fn session_target(source: &str) -> Option<(SessionId, NodeId)> {
    let rest = source.strip_prefix("session/")?;
    let (s, n) = rest.split_once('#')?;
    Some((s.parse().ok()?, n.parse().ok()?))
}

#[cfg(test)]
mod tests;
