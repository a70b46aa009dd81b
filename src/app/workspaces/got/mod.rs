//! The Graph-of-Thoughts workspace: the live search tree, steered while it runs, and the
//! last finished search of the open session read back from the store.
//!
//! `mod.rs` holds the workspace and what the keys and forms do; `update.rs` applies the
//! news of its tasks; `tasks.rs` runs the engine and reads the store.

mod tasks;
mod update;

use ratatui::Frame;
use ratatui::layout::Rect;
use tokio::sync::mpsc;

use super::{Cx, Job, Outbox, Spec, Workspace, WorkspaceId};
use crate::app::action::Action;
use crate::app::form::{Answer, Form};
use crate::app::runtime::Services;
use crate::app::state::{Level, State};
use crate::engines::got::{GotControl, GotParams, Strategy};
use crate::store::{NodeId, RunId, SessionId};
use crate::views::ViewCx;
use crate::views::got::SearchView;

pub use self::tasks::{Defaults, GotEffect, GotMsg, Stored, load_last};
pub use self::update::tree_rows;
pub use crate::views::got::{Outcome, Phase, Row};

/// The workspace's id: its keymap section `[got]` and its `workspace_got` action.
pub const ID: WorkspaceId = "got";

crate::workspace_actions! { GotAction for ID => {
    NewSearch => ("new_search", "Start a Graph of Thoughts search", Own),
    PauseResume => ("pause_resume", "Pause or resume the search", Own),
    StepSearch => ("step_search", "While paused: expand one more thought", Own),
    PinThought => ("pin_thought", "Pin the thought (never pruned)", Own),
    PruneThought => ("prune_thought", "Prune the thought by hand", Own),
    BoostThought => ("boost_thought", "Raise the thought's priority", Own),
    LowerThought => ("lower_thought", "Lower the thought's priority", Own),
    SetBudget => ("set_budget", "Set the search's token budget", Own),
} }

/// The strategies offered by the new-search form, in the order shown.
pub const STRATEGIES: [Strategy; 3] = [Strategy::Bfs, Strategy::Dfs, Strategy::BestFirst];

/// What a form this workspace opened is for.
#[derive(Clone, Debug, PartialEq)]
pub enum FormPurpose {
    NewSearch,
    Budget,
}

/// The Graph-of-Thoughts workspace.
#[derive(Debug, Default)]
pub struct Got {
    /// The search shown, as the view draws it.
    pub view: SearchView,
    /// The session and run of the search shown.
    pub session: Option<SessionId>,
    pub run: Option<RunId>,
    /// `[got]` defaults, read from the config on entering.
    pub defaults: Option<Defaults>,
    /// Which search the messages belong to; older searches' messages are dropped.
    search: u64,
    /// Where steering goes while a search runs here.
    controls: Option<mpsc::UnboundedSender<GotControl>>,
    /// The search running here (its strategy), and how to cancel it.
    job: Option<Job<Strategy>>,
}

impl Workspace for Got {
    const SPEC: &'static Spec = &Spec {
        id: ID,
        title: "GoT",
        help_title: "Graph of Thoughts workspace",
        go: "Go to the Graph of Thoughts workspace",
        section: true,
        actions: GotAction::SPECS,
    };
    type Msg = GotMsg;
    type Effect = GotEffect;
    type Form = FormPurpose;

    fn on_enter(&mut self, cx: &mut Cx<'_, Self>) {
        let running = self.view.running();
        let session = cx.state.loaded.id();
        let stale = self.view.thoughts.is_empty() || (session.is_some() && session != self.session);
        if self.defaults.is_none() || (!running && stale) {
            let load = if running { None } else { session };
            if load.is_some() && self.view.thoughts.is_empty() {
                self.view.phase = Phase::Loading;
            }
            cx.run(GotEffect::Load(load));
        }
    }

    fn on_action(&mut self, a: &Action, cx: &mut Cx<'_, Self>) -> bool {
        // Every key of this workspace works only while it is shown.
        if !cx.shown() {
            return false;
        }
        let handled = self.action(a, cx);
        if handled {
            self.follow(cx.state.size);
        }
        handled
    }

    fn on_msg(&mut self, m: GotMsg, cx: &mut Cx<'_, Self>) {
        self.apply(m, cx);
        self.follow(cx.state.size);
    }

    fn on_form(&mut self, form: FormPurpose, answer: Answer, cx: &mut Cx<'_, Self>) {
        match form {
            FormPurpose::Budget => self.set_budget(answer, cx),
            FormPurpose::NewSearch => self.start(answer, cx),
        }
    }

    fn run(effect: GotEffect, svc: &Services, out: Outbox<GotMsg>) {
        tasks::run(effect, svc, out);
    }

    fn job(&self) -> Option<String> {
        self.view.running().then(|| {
            if self.view.paused {
                "GoT search paused".to_string()
            } else {
                "GoT search running…".to_string()
            }
        })
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, _state: &mut State, v: &ViewCx<'_>) {
        crate::views::got::render(f, area, &self.view, v);
    }
}

impl Got {
    /// Whether a search is running in this TUI.
    pub fn running(&self) -> bool {
        self.view.running()
    }

    /// Forgets the search shown (and any search running), keeping the config defaults, the
    /// budget for the next search and the search count.
    fn clear_search(&mut self) {
        let budget = self.view.budget;
        self.view = SearchView::default();
        self.view.budget = budget;
        self.session = None;
        self.run = None;
        self.controls = None;
        self.job = None;
    }

    /// Sends a steering control to the running search; false when none takes it.
    fn send(&self, c: GotControl) -> bool {
        self.controls.as_ref().is_some_and(|tx| tx.send(c).is_ok())
    }

    /// Keeps the selected row among those a terminal of `size` shows.
    fn follow(&mut self, size: (u16, u16)) {
        let height = crate::views::got::tree_height(size).max(1);
        let v = &mut self.view;
        if v.selected < v.offset {
            v.offset = v.selected;
        } else if v.selected >= v.offset + height {
            v.offset = v.selected + 1 - height;
        }
        v.offset = v.offset.min(v.rows.len().saturating_sub(height));
    }

    /// The thought a steering key applies to, when a search can be steered.
    fn steerable(&self, cx: &mut Cx<'_, Self>) -> Option<NodeId> {
        if !self.view.running() {
            cx.notice(
                "no search is running here; steering works while one runs (N starts one)",
                Level::Info,
            );
            return None;
        }
        let id = self.view.selected_id();
        if id.is_none() {
            cx.notice("select a thought first", Level::Info);
        }
        id
    }

    /// Sends steering about thought `id`, shown as `label` next to it until it lands.
    fn steer(&mut self, id: NodeId, c: GotControl, label: &'static str, cx: &mut Cx<'_, Self>) {
        if self.send(c) {
            self.view.pending.insert(id, label);
        } else {
            cx.notice("the search no longer takes steering", Level::Warn);
        }
    }

    /// A bound action; true when it was handled here.
    fn action(&mut self, a: &Action, cx: &mut Cx<'_, Self>) -> bool {
        let v = &mut self.view;
        // The full-text popup takes movement and closing.
        if let Some((_, scroll)) = v.detail.as_mut() {
            match a {
                Action::MoveDown => *scroll = scroll.saturating_add(1),
                Action::MoveUp => *scroll = scroll.saturating_sub(1),
                Action::PageDown => *scroll = scroll.saturating_add(10),
                Action::PageUp => *scroll = scroll.saturating_sub(10),
                Action::Top => *scroll = 0,
                Action::Select | Action::CancelRun | Action::Collapse => v.detail = None,
                _ => return false,
            }
            return true;
        }
        match a {
            Action::MoveUp | Action::MoveDown | Action::PageUp | Action::PageDown => {
                let step: isize = match a {
                    Action::MoveUp => -1,
                    Action::MoveDown => 1,
                    Action::PageUp => -10,
                    _ => 10,
                };
                let last = v.rows.len().saturating_sub(1) as isize;
                v.selected = (v.selected as isize + step).clamp(0, last) as usize;
            }
            Action::Top => v.selected = 0,
            Action::Bottom => v.selected = v.rows.len().saturating_sub(1),
            Action::Select | Action::Expand => {
                if let Some(id) = v.selected_id() {
                    v.detail = Some((id, 0));
                }
            }
            Action::CancelRun => {
                let Some(job) = self.job.as_ref().filter(|_| v.phase == Phase::Running) else {
                    return false;
                };
                job.cancel.cancel();
                cx.notice(
                    format!("cancelling the {} — what it found is kept", job.what),
                    Level::Info,
                );
            }
            _ => match GotAction::of(a) {
                Some(own) => self.own_action(own, cx),
                None => return false,
            },
        }
        true
    }

    /// One of the workspace's declared actions.
    fn own_action(&mut self, a: GotAction, cx: &mut Cx<'_, Self>) {
        match a {
            GotAction::NewSearch => {
                if self.view.running() {
                    cx.notice("a search is running; Esc cancels it", Level::Warn);
                    return;
                }
                let default = self
                    .defaults
                    .as_ref()
                    .map_or(Strategy::Bfs, |d| d.params.strategy);
                let mut form = Form::choose(
                    "New Graph of Thoughts search · Tab: problem ⇄ strategy",
                    Cx::<Self>::purpose(FormPurpose::NewSearch),
                    STRATEGIES.iter().map(|s| s.as_str().to_string()).collect(),
                )
                .with_text("problem", true, 4000);
                form.cursor = STRATEGIES.iter().position(|s| *s == default).unwrap_or(0);
                form.on_text = true;
                cx.open_form(form);
            }
            GotAction::PauseResume => {
                if !self.view.running() {
                    cx.notice("no search is running", Level::Info);
                    return;
                }
                let c = if self.view.pause_requested {
                    GotControl::Resume
                } else {
                    GotControl::Pause
                };
                if self.send(c) {
                    self.view.pause_requested = !self.view.pause_requested;
                }
            }
            GotAction::StepSearch => {
                if !self.view.running() || !self.view.pause_requested {
                    cx.notice("pause the search first (space), then step", Level::Info);
                } else if self.send(GotControl::Step) {
                    self.view.stepping = true;
                } else {
                    cx.notice("the search no longer takes steering", Level::Warn);
                }
            }
            GotAction::PinThought => {
                if let Some(id) = self.steerable(cx) {
                    self.steer(id, GotControl::Pin(id), "pin queued", cx);
                }
            }
            GotAction::PruneThought => {
                if let Some(id) = self.steerable(cx) {
                    if self.view.thoughts.first().is_some_and(|t| t.id == id) {
                        cx.notice("the problem itself cannot be pruned", Level::Info);
                    } else {
                        self.steer(id, GotControl::Prune(id), "prune queued", cx);
                    }
                }
            }
            GotAction::BoostThought | GotAction::LowerThought => {
                if let Some(id) = self.steerable(cx) {
                    let step = self.defaults.as_ref().map_or(0.2, |d| d.boost_step);
                    let (amount, label) = if a == GotAction::BoostThought {
                        (step, "boost queued")
                    } else {
                        (-step, "lower queued")
                    };
                    self.steer(id, GotControl::Boost { id, amount }, label, cx);
                }
            }
            GotAction::SetBudget => {
                let current = self.view.budget.map(|b| b.to_string()).unwrap_or_default();
                let title = if self.view.running() {
                    "Token budget of this search · empty = no limit"
                } else {
                    "Token budget of the next search · empty = no limit"
                };
                let mut form =
                    Form::text(title, Cx::<Self>::purpose(FormPurpose::Budget), "tokens")
                        .with_initial_text(&current);
                form.text_required = false;
                cx.open_form(form);
            }
        }
    }

    /// The budget form: a number of tokens, or empty for no limit; a running search takes
    /// it at once.
    fn set_budget(&mut self, answer: Answer, cx: &mut Cx<'_, Self>) {
        let text = answer.text.replace(['_', ','], "");
        let budget = if text.is_empty() {
            None
        } else {
            match text.parse::<u64>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    cx.notice(
                        format!("`{}` is not a number of tokens", answer.text),
                        Level::Warn,
                    );
                    return;
                }
            }
        };
        self.view.budget = budget;
        let live = self.view.running() && self.send(GotControl::TokenBudget(budget));
        let what = budget.map_or("no token limit".to_string(), |b| format!("{b} tokens"));
        let text = if live {
            format!("budget of this search: {what}")
        } else {
            format!("budget of the next search: {what}")
        };
        cx.notice(text, Level::Info);
    }

    /// The new-search form: starts the search on the open session (or a new one).
    fn start(&mut self, answer: Answer, cx: &mut Cx<'_, Self>) {
        if self.view.running() {
            cx.notice("a search is running; Esc cancels it", Level::Warn);
            return;
        }
        let strategy = answer
            .choice
            .and_then(|i| STRATEGIES.get(i).copied())
            .unwrap_or(Strategy::Bfs);
        self.search += 1;
        self.clear_search();
        let (tx, rx) = mpsc::unbounded_channel();
        let job = Job::new(strategy, "search");
        let cancel = job.cancel.clone();
        self.controls = Some(tx);
        self.job = Some(job);
        let budget = self.view.budget;
        let session = cx.state.loaded.id();
        let v = &mut self.view;
        v.phase = Phase::Running;
        v.problem = answer.text.clone();
        v.tokens = 0;
        v.params = self.defaults.as_ref().map(|d| GotParams {
            strategy,
            token_budget: budget,
            ..d.params.clone()
        });
        cx.run(GotEffect::Start {
            search: self.search,
            problem: answer.text,
            strategy,
            budget,
            session,
            controls: rx,
            cancel,
        });
        cx.notice(format!("{} search started", strategy.as_str()), Level::Info);
    }
}
