//! The Pipeline workspace: DeepEx runs (seed 003) as a glass box. A question line with the
//! mode in front starts a run in the open session; every layer then streams into its own
//! pane as it runs. Esc cancels (the run stays resumable), `r` resumes a run that stopped,
//! and entering the workspace shows the open session's last run from the store, so a run
//! made by `glassbox ask --mode deep` can be read here too.
//!
//! `mod.rs` holds the workspace and what its keys do; `update.rs` applies its tasks' news;
//! `tasks.rs` runs the engine and reads the store.

mod tasks;
mod update;

use std::collections::{HashMap, HashSet};

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;

use super::{Cx, Job, Outbox, Spec, Workspace, WorkspaceId};
use crate::app::action::Action;
use crate::app::input::InputBox;
use crate::app::runtime::Services;
use crate::app::state::{Level, State};
use crate::engines::pipeline::{Layer, Mode};
use crate::store::SessionId;
use crate::views::ViewCx;
use crate::views::pipeline::{PipelineView, RunView, Unit};

pub use self::tasks::{PipelineEffect, PipelineMsg, load_last, plan, planned};
pub use crate::views::pipeline::{LayerPane, LayerStatus, Phase};

/// The workspace's id: its keymap section `[pipeline]` and its `workspace_pipeline` action.
pub const ID: WorkspaceId = "pipeline";

crate::workspace_actions! { PipelineAction for ID => {
    Ask => ("ask_pipeline", "Type a question for the pipeline", Own),
    CycleMode => ("pipeline_mode", "Next mode: auto, instant, deep, ultra-deep", Own),
    ToggleLayer => ("toggle_layer", "Fold or unfold the focused layer", Own),
    Resume => ("resume_pipeline", "Resume the shown run (interrupted or failed)", Own),
} }

/// The Pipeline workspace.
#[derive(Debug, Default)]
pub struct Pipeline {
    /// The run shown, as the view draws it.
    pub view: RunView,
    /// The question line.
    pub input: InputBox,
    /// Keys go to the question line.
    pub typing: bool,
    /// The mode the next run asks for.
    pub mode: Mode,
    /// The unit with the focus; `None` means the last one.
    pub focus: Option<Unit>,
    /// Units the user folded or unfolded.
    pub toggled: HashMap<Unit, bool>,
    /// Rows the focused pane is scrolled down.
    pub scroll: usize,
    /// Why there is nothing to show, when there is not.
    pub hint: Option<String>,
    /// How far the focused pane can scroll, as last drawn.
    max_scroll: usize,
    /// The focus follows the running layer until the user moves it.
    follow: bool,
    /// The user picked a mode: the config's default no longer applies.
    mode_chosen: bool,
    /// Which run the messages belong to; older runs' messages are dropped.
    seq: u64,
    /// The run going on here, and how to stop it.
    job: Option<Job<()>>,
    /// Layers shown from the store that a resume may run again: their first chunk replaces
    /// the stored text.
    stale: HashSet<Layer>,
    /// The session last asked for, and whether a read of it is under way.
    looked_up: Option<SessionId>,
    loading: bool,
    /// The store changed during that read: read again after it.
    reload: bool,
}

impl Workspace for Pipeline {
    const SPEC: &'static Spec = &Spec {
        id: ID,
        title: "Pipeline",
        help_title: "Pipeline workspace",
        go: "Go to the Pipeline workspace",
        section: true,
        actions: PipelineAction::SPECS,
    };
    type Msg = PipelineMsg;
    type Effect = PipelineEffect;
    type Form = ();

    fn on_enter(&mut self, cx: &mut Cx<'_, Self>) {
        if self.running() {
            return;
        }
        match cx.state.loaded.id() {
            Some(session) => self.load(session, cx),
            None => {
                if self.view.run.is_none() {
                    self.hint = Some("no session open: a question starts a new one".into());
                }
                cx.run(PipelineEffect::Defaults);
            }
        }
    }

    fn on_store_change(&mut self, cx: &mut Cx<'_, Self>) {
        if !cx.shown() || self.running() {
            return;
        }
        let Some(session) = cx.state.loaded.id() else {
            return;
        };
        // Another session opened, or the run shown is still going on elsewhere.
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
        self.typing
    }

    fn on_key(&mut self, k: KeyEvent, cx: &mut Cx<'_, Self>) {
        match k.code {
            KeyCode::Enter => {
                self.typing = false;
                self.start(cx);
            }
            KeyCode::Esc => self.typing = false,
            KeyCode::Tab => self.cycle_mode(true),
            KeyCode::BackTab => self.cycle_mode(false),
            _ => crate::app::input::edit(&mut self.input, k),
        }
    }

    fn on_action(&mut self, a: &Action, cx: &mut Cx<'_, Self>) -> bool {
        cx.takes(PipelineAction::of(a).is_some()) && self.action(a, cx)
    }

    fn on_msg(&mut self, m: PipelineMsg, cx: &mut Cx<'_, Self>) {
        self.apply(m, cx);
    }

    fn run(effect: PipelineEffect, svc: &Services, out: Outbox<PipelineMsg>) {
        tasks::run(effect, svc, out);
    }

    /// The focused layer's node (none for the solvers' row or the final answer).
    fn selected_node(&self, _state: &State) -> Option<crate::views::Picked> {
        let (units, at) = self.focused();
        let Some(Unit::Layer(layer)) = units.get(at).copied() else {
            return None;
        };
        let pane = self.view.layers.iter().find(|p| p.layer == layer)?;
        Some(crate::views::Picked {
            node: pane.node?,
            kind: crate::store::NodeType::PipelineLayer,
            what: Some(layer.as_str().to_string()),
        })
    }

    fn job(&self) -> Option<String> {
        self.running().then(|| {
            let layer = self
                .view
                .layers
                .iter()
                .rev()
                .find(|p| p.status == LayerStatus::Running)
                .map_or("running", |p| p.layer.label());
            format!("pipeline: {layer}…")
        })
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, _state: &mut State, v: &ViewCx<'_>) {
        let rows = crate::views::pipeline::focused_rows(&self.view_model(), area.width, v.theme);
        self.max_scroll = rows;
        self.scroll = self.scroll.min(rows);
        crate::views::pipeline::render(f, area, &self.view_model(), v);
    }
}

impl Pipeline {
    /// Whether a run is going on in this TUI.
    pub fn running(&self) -> bool {
        self.job.is_some()
    }

    fn view_model(&self) -> PipelineView<'_> {
        PipelineView {
            run: &self.view,
            input: &self.input,
            mode: self.mode,
            typing: self.typing,
            focus: self.focus,
            toggled: &self.toggled,
            scroll: self.scroll,
            hint: self.hint.as_deref(),
        }
    }

    fn load(&mut self, session: SessionId, cx: &mut Cx<'_, Self>) {
        if self.view.layers.is_empty() {
            self.view.phase = Phase::Loading;
        }
        self.looked_up = Some(session);
        self.loading = true;
        cx.run(PipelineEffect::Load(session));
    }

    fn cycle_mode(&mut self, forward: bool) {
        let steps = if forward { 1 } else { Mode::ALL.len() - 1 };
        for _ in 0..steps {
            self.mode = self.mode.next();
        }
        self.mode_chosen = true;
    }

    /// The units of the stack and the index of the focused one.
    fn focused(&self) -> (Vec<Unit>, usize) {
        let units = self.view.units();
        let last = units.len().saturating_sub(1);
        let at = self
            .focus
            .and_then(|f| units.iter().position(|u| *u == f))
            .unwrap_or(last);
        (units, at)
    }

    fn move_focus(&mut self, to: usize) {
        let (units, at) = self.focused();
        let to = to.min(units.len().saturating_sub(1));
        if to != at {
            self.scroll = 0;
        }
        self.focus = units.get(to).copied();
    }

    /// Opens (`Some(true)`), closes (`Some(false)`) or flips (`None`) the focused unit.
    fn fold(&mut self, open: Option<bool>) {
        let (units, at) = self.focused();
        let Some(unit) = units.get(at).copied() else {
            return;
        };
        let now = crate::views::pipeline::is_open(&self.view, unit, Some(unit), &self.toggled);
        self.toggled.insert(unit, open.unwrap_or(!now));
        self.scroll = 0;
    }

    /// A bound action while the workspace is shown; true when it was handled here.
    fn action(&mut self, a: &Action, cx: &mut Cx<'_, Self>) -> bool {
        if let Some(own) = PipelineAction::of(a) {
            match own {
                PipelineAction::Ask => self.typing = true,
                PipelineAction::CycleMode => {
                    self.cycle_mode(true);
                    cx.notice(
                        format!("the next run is {}", self.mode.as_str()),
                        Level::Info,
                    );
                }
                PipelineAction::ToggleLayer => self.fold(None),
                PipelineAction::Resume => self.resume(cx),
            }
            return true;
        }
        let (_, at) = self.focused();
        match a {
            Action::FocusInput => self.typing = true,
            Action::MoveDown => {
                self.follow = false;
                self.move_focus(at + 1);
            }
            Action::MoveUp => {
                self.follow = false;
                self.move_focus(at.saturating_sub(1));
            }
            Action::Top => {
                self.follow = false;
                self.move_focus(0);
            }
            Action::Bottom => {
                // Back to the newest layer: the focus follows the run again.
                self.follow = true;
                self.move_focus(usize::MAX);
            }
            Action::PageDown => self.scroll = (self.scroll + 10).min(self.max_scroll),
            Action::PageUp => self.scroll = self.scroll.saturating_sub(10),
            Action::Select => self.fold(None),
            Action::Expand => self.fold(Some(true)),
            Action::Collapse => self.fold(Some(false)),
            Action::CancelRun if cx.state.overlay.is_none() => {
                let Some(job) = &self.job else {
                    return false;
                };
                job.cancel.cancel();
                cx.notice(
                    "cancelling the pipeline — finished layers are kept, r resumes",
                    Level::Info,
                );
            }
            _ => return false,
        }
        true
    }

    /// Starts a run on the question line's text, in the open session.
    fn start(&mut self, cx: &mut Cx<'_, Self>) {
        if self.running() {
            cx.notice("a pipeline is running; Esc cancels it", Level::Warn);
            return;
        }
        let question = self.input.text().trim().to_string();
        if question.is_empty() {
            cx.notice("type a question first", Level::Info);
            return;
        }
        self.input.set_text("");
        let session = cx.state.loaded.id();
        let mode = self.mode;
        let mut view = RunView {
            session,
            question: question.clone(),
            requested: Some(mode),
            phase: Phase::Running,
            ..RunView::default()
        };
        view.pane_mut(Layer::Cortex);
        plan(&mut view, mode);
        self.view = view;
        self.hint = None;
        self.stale.clear();
        let cancel = self.begin();
        cx.run(PipelineEffect::Start {
            seq: self.seq,
            question,
            mode,
            session,
            cancel,
        });
        cx.notice(format!("{} pipeline started", mode.as_str()), Level::Info);
    }

    /// Resumes the shown run when it stopped before the end.
    fn resume(&mut self, cx: &mut Cx<'_, Self>) {
        if self.running() {
            cx.notice("a pipeline is running; Esc cancels it", Level::Warn);
            return;
        }
        let Some(run) = self.view.run else {
            cx.notice("no run to resume", Level::Info);
            return;
        };
        match &self.view.phase {
            Phase::Interrupted | Phase::Failed(_) => {}
            Phase::Done => {
                cx.notice("this run is done; i asks a new question", Level::Info);
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
        self.stale = self.view.layers.iter().map(|p| p.layer).collect();
        let v = &mut self.view;
        v.phase = Phase::Running;
        v.answer = None;
        v.fin = None;
        let cancel = self.begin();
        cx.run(PipelineEffect::Resume {
            seq: self.seq,
            run,
            cancel,
        });
        cx.notice(
            "resuming the run from its first unfinished layer",
            Level::Info,
        );
    }

    /// A new run's bookkeeping: its number, its job, the focus following it.
    fn begin(&mut self) -> tokio_util::sync::CancellationToken {
        self.seq += 1;
        let job = Job::new((), "pipeline");
        let cancel = job.cancel.clone();
        self.job = Some(job);
        self.focus = None;
        self.toggled.clear();
        self.scroll = 0;
        self.follow = true;
        cancel
    }
}

#[cfg(test)]
mod tests;
