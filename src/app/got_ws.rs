//! The Graph-of-Thoughts workspace: the live search tree, steered while it runs, and the
//! last finished search of the open session read back from the store.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::action::Action;
use super::config::ProviderKind;
use super::form::{Answer, Form, Purpose};
use super::runtime::Services;
use super::state::{Level, Overlay, State};
use super::update::{Effect, Msg};
use crate::config::providers as factory;
use crate::engines::got::{
    CallSettings, GotControl, GotEngine, GotEvent, GotParams, GotPrompts, GotRequest, GotResult,
    GotStats, Strategy, Thought, ThoughtState,
};
use crate::store::{EdgeType, NodeId, NodeType, RunId, RunKind, RunStatus, SessionId, Store};

/// The strategies offered by the new-search form, in the order shown.
pub const STRATEGIES: [Strategy; 3] = [Strategy::Bfs, Strategy::Dfs, Strategy::BestFirst];

/// Where the search shown is.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Phase {
    /// Nothing shown yet.
    #[default]
    Empty,
    /// A store read is under way.
    Loading,
    /// A search runs in this TUI (paused or not: see [`GotWs::paused`]).
    Running,
    Done,
    Interrupted,
    Failed(String),
    /// A stored run that was still marked running (another process, or one that died).
    StoredRunning,
}

/// The outcome shown once a search has ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    pub answer: String,
    pub confidence: f64,
    pub summary: String,
    pub stats: GotStats,
}

/// One row of the tree: a thought and how far it is indented.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    pub id: NodeId,
    pub indent: usize,
}

/// What the workspace shows and remembers.
#[derive(Debug, Default)]
pub struct GotWs {
    pub problem: String,
    pub params: Option<GotParams>,
    /// Every thought, in creation order.
    pub thoughts: Vec<Thought>,
    index: HashMap<NodeId, usize>,
    /// Thoughts already expanded.
    pub expanded: HashSet<NodeId>,
    /// The thought being expanded right now.
    pub expanding: Option<NodeId>,
    /// The tree in display order.
    pub rows: Vec<Row>,
    pub selected: usize,
    /// First visible row (kept by the view's height through `scroll_into_view`).
    pub offset: usize,
    pub phase: Phase,
    /// The user asked to pause (the engine confirms with `paused`).
    pub pause_requested: bool,
    /// The engine is waiting.
    pub paused: bool,
    /// A step was asked for and the engine has not paused again yet.
    pub stepping: bool,
    pub tokens: u64,
    /// The budget of the running search, or for the next one.
    pub budget: Option<u64>,
    /// The best thought as the engine will pick it (verified, highest score).
    pub best: Option<NodeId>,
    pub outcome: Option<Outcome>,
    pub session: Option<SessionId>,
    pub run: Option<RunId>,
    /// Steering sent but not yet applied by the engine, per thought.
    pub pending: HashMap<NodeId, &'static str>,
    /// The full-text popup of a thought, and how far it is scrolled.
    pub detail: Option<(NodeId, u16)>,
    /// Which search the messages belong to; older searches' messages are dropped.
    search: u64,
    controls: Option<mpsc::UnboundedSender<GotControl>>,
    cancel: Option<CancellationToken>,
    /// `[got]` defaults, read from the config on entering.
    pub defaults: Option<Defaults>,
}

/// Config values `update` needs but cannot read itself.
#[derive(Clone, Debug, PartialEq)]
pub struct Defaults {
    pub params: GotParams,
    pub boost_step: f64,
}

impl GotWs {
    pub fn thought(&self, id: NodeId) -> Option<&Thought> {
        self.index.get(&id).and_then(|&i| self.thoughts.get(i))
    }

    pub fn selected_id(&self) -> Option<NodeId> {
        self.rows.get(self.selected).map(|r| r.id)
    }

    /// Whether a search is running in this TUI.
    pub fn running(&self) -> bool {
        self.phase == Phase::Running
    }

    /// The search's depth limit, if known.
    fn max_depth(&self) -> u32 {
        self.params.as_ref().map_or(u32::MAX, |p| p.max_depth)
    }

    /// A verified thought not expanded yet, shallow enough to be expanded: the frontier.
    pub fn is_frontier(&self, t: &Thought) -> bool {
        t.state == ThoughtState::Verified
            && !self.expanded.contains(&t.id)
            && t.depth < self.max_depth()
    }

    /// Counts as shown in the header; the engine's own once the search has ended.
    pub fn stats(&self) -> GotStats {
        if let Some(o) = &self.outcome {
            return o.stats.clone();
        }
        GotStats {
            total_thoughts: self.thoughts.len() as u64,
            thoughts_explored: self.expanded.len() as u64,
            thoughts_pruned: self
                .thoughts
                .iter()
                .filter(|t| t.state == ThoughtState::Rejected)
                .count() as u64,
            aggregations_made: self
                .thoughts
                .iter()
                .filter(|t| !t.sources.is_empty())
                .count() as u64,
            max_depth_reached: self.thoughts.iter().map(|t| t.depth).max().unwrap_or(0),
            total_tokens: self.tokens,
            total_duration_ms: 0,
        }
    }

    /// The run state as the header shows it.
    pub fn state_label(&self) -> String {
        match &self.phase {
            Phase::Empty => "no search".into(),
            Phase::Loading => "loading…".into(),
            Phase::Running if self.pause_requested && self.stepping => "stepping…".into(),
            Phase::Running if self.pause_requested && self.paused => "paused".into(),
            Phase::Running if self.pause_requested => "pausing…".into(),
            Phase::Running => "running".into(),
            Phase::Done => "done".into(),
            Phase::Interrupted => "interrupted".into(),
            Phase::Failed(e) => format!("failed: {e}"),
            Phase::StoredRunning => "unfinished (stored)".into(),
        }
    }

    fn clear_search(&mut self) {
        let defaults = self.defaults.take();
        let budget = self.budget;
        let search = self.search;
        *self = GotWs {
            defaults,
            budget,
            search,
            ..Default::default()
        };
    }

    fn upsert(&mut self, t: Thought) {
        self.pending.remove(&t.id);
        match self.index.get(&t.id) {
            Some(&i) => self.thoughts[i] = t,
            None => {
                self.index.insert(t.id, self.thoughts.len());
                self.thoughts.push(t);
            }
        }
    }

    fn set_thoughts(&mut self, thoughts: Vec<Thought>) {
        self.index = thoughts
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id, i))
            .collect();
        self.thoughts = thoughts;
    }

    /// Recomputes the best thought and the rows, keeping the selected thought selected.
    fn refresh(&mut self) {
        let keep = self.selected_id();
        if self.outcome.is_none() {
            let root = self.thoughts.first().map(|t| t.id);
            self.best = self
                .thoughts
                .iter()
                .filter(|t| Some(t.id) != root && t.state == ThoughtState::Verified)
                .filter_map(|t| t.score.map(|s| (s, t.id)))
                // The first of equal scores wins, as in the engine's stable sort.
                .fold(None, |best: Option<(f64, NodeId)>, (s, id)| match best {
                    Some((b, _)) if b >= s => best,
                    _ => Some((s, id)),
                })
                .map(|(_, id)| id);
        }
        self.rows = tree_rows(&self.thoughts);
        self.selected = keep
            .and_then(|id| self.rows.iter().position(|r| r.id == id))
            .unwrap_or(self.selected)
            .min(self.rows.len().saturating_sub(1));
    }

    /// Moves `offset` so the selected row is among `height` visible rows.
    pub fn scroll_into_view(&mut self, height: usize) {
        let height = height.max(1);
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + height {
            self.offset = self.selected + 1 - height;
        }
        self.offset = self.offset.min(self.rows.len().saturating_sub(height));
    }

    fn send(&self, c: GotControl) -> bool {
        self.controls.as_ref().is_some_and(|tx| tx.send(c).is_ok())
    }
}

/// The thoughts as a tree: children under their parent in creation order; a synthesis
/// (no parent) next to the first of the thoughts it merges; anything unplaced at the end.
pub fn tree_rows(thoughts: &[Thought]) -> Vec<Row> {
    let known: HashSet<NodeId> = thoughts.iter().map(|t| t.id).collect();
    let mut children: HashMap<Option<NodeId>, Vec<NodeId>> = HashMap::new();
    let parent_of: HashMap<NodeId, Option<NodeId>> =
        thoughts.iter().map(|t| (t.id, t.parent)).collect();
    let mut roots = Vec::new();
    for t in thoughts {
        let anchor = match t.parent {
            Some(p) if known.contains(&p) => Some(p),
            Some(_) => None,
            None => t
                .sources
                .iter()
                .find(|s| known.contains(s))
                .and_then(|s| parent_of.get(s).copied().flatten()),
        };
        match anchor {
            Some(p) => children.entry(Some(p)).or_default().push(t.id),
            None => roots.push(t.id),
        }
    }
    let mut rows = Vec::with_capacity(thoughts.len());
    let mut seen = HashSet::new();
    let mut stack: Vec<(NodeId, usize)> = roots.iter().rev().map(|&id| (id, 0)).collect();
    while let Some((id, indent)) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        rows.push(Row { id, indent });
        if let Some(kids) = children.get(&Some(id)) {
            stack.extend(kids.iter().rev().map(|&k| (k, indent + 1)));
        }
    }
    // Cycles cannot come from the engine, but a damaged store should not hide thoughts.
    for t in thoughts {
        if !seen.contains(&t.id) {
            rows.push(Row {
                id: t.id,
                indent: 0,
            });
        }
    }
    rows
}

/// A run's receiver of steering controls, handed to the engine task once.
#[derive(Clone, Debug)]
pub struct ControlSlot(Arc<Mutex<Option<mpsc::UnboundedReceiver<GotControl>>>>);

impl ControlSlot {
    fn take(&self) -> Option<mpsc::UnboundedReceiver<GotControl>> {
        self.0.lock().ok().and_then(|mut g| g.take())
    }
}

/// A finished search read back from the store.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stored {
    pub session: Option<SessionId>,
    pub run: Option<RunId>,
    pub problem: String,
    pub params: Option<GotParams>,
    pub thoughts: Vec<Thought>,
    pub expanded: Vec<NodeId>,
    pub best: Option<NodeId>,
    pub status: Option<RunStatus>,
    pub outcome: Option<Outcome>,
}

/// News for the workspace from its engine tasks.
#[derive(Clone, Debug)]
pub enum GotMsg {
    /// The config's `[got]` defaults.
    Defaults(Defaults),
    /// The last search of a session, or none.
    Loaded(Box<Stored>),
    LoadFailed(String),
    Event {
        search: u64,
        event: GotEvent,
    },
    Finished {
        search: u64,
        outcome: Result<Box<GotResult>, String>,
    },
}

/// Work for the runtime, carried out by [`run`].
#[derive(Clone, Debug)]
pub enum GotEffect {
    /// Read the config defaults, and the last GoT run of the session (if any).
    Load(Option<SessionId>),
    Start {
        search: u64,
        problem: String,
        strategy: Strategy,
        budget: Option<u64>,
        session: Option<SessionId>,
        controls: ControlSlot,
        cancel: CancellationToken,
    },
}

/// What a form this workspace opened is for.
#[derive(Clone, Debug, PartialEq)]
pub enum FormPurpose {
    NewSearch,
    Budget,
}

fn notice(state: &mut State, text: impl Into<String>, level: Level) {
    state.notice = Some((text.into(), level));
}

/// The thought a steering key applies to, when a search can be steered.
fn steerable(state: &mut State) -> Option<NodeId> {
    if !state.got.running() {
        notice(
            state,
            "no search is running here; steering works while one runs (N starts one)",
            Level::Info,
        );
        return None;
    }
    let id = state.got.selected_id();
    if id.is_none() {
        notice(state, "select a thought first", Level::Info);
    }
    id
}

fn steer(state: &mut State, id: NodeId, c: GotControl, label: &'static str) {
    if state.got.send(c) {
        state.got.pending.insert(id, label);
    } else {
        notice(state, "the search no longer takes steering", Level::Warn);
    }
}

/// Keeps the selected row among the visible ones.
fn follow(state: &mut State) {
    let h = crate::views::got::tree_height(state.size);
    state.got.scroll_into_view(h);
}

/// Offers a bound action to the workspace; true when it was handled here.
pub fn action(state: &mut State, a: &Action, fx: &mut Vec<Effect>) -> bool {
    let handled = handle_action(state, a, fx);
    if handled {
        follow(state);
    }
    handled
}

fn handle_action(state: &mut State, a: &Action, _fx: &mut Vec<Effect>) -> bool {
    let ws = &mut state.got;
    // The full-text popup takes movement and closing.
    if let Some((_, scroll)) = ws.detail.as_mut() {
        match a {
            Action::MoveDown => *scroll = scroll.saturating_add(1),
            Action::MoveUp => *scroll = scroll.saturating_sub(1),
            Action::PageDown => *scroll = scroll.saturating_add(10),
            Action::PageUp => *scroll = scroll.saturating_sub(10),
            Action::Top => *scroll = 0,
            Action::Select | Action::CancelRun | Action::Collapse => ws.detail = None,
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
            let last = ws.rows.len().saturating_sub(1) as isize;
            ws.selected = (ws.selected as isize + step).clamp(0, last) as usize;
        }
        Action::Top => ws.selected = 0,
        Action::Bottom => ws.selected = ws.rows.len().saturating_sub(1),
        Action::Select | Action::Expand => {
            if let Some(id) = ws.selected_id() {
                ws.detail = Some((id, 0));
            }
        }
        Action::CancelRun => {
            let Some(cancel) = ws.cancel.as_ref().filter(|_| ws.phase == Phase::Running) else {
                return false;
            };
            cancel.cancel();
            notice(
                state,
                "cancelling the search — what it found is kept",
                Level::Info,
            );
        }
        Action::NewSearch => {
            if ws.running() {
                notice(state, "a search is running; Esc cancels it", Level::Warn);
                return true;
            }
            let default = ws
                .defaults
                .as_ref()
                .map_or(Strategy::Bfs, |d| d.params.strategy);
            let mut form = Form::choose(
                "New Graph of Thoughts search · Tab: problem ⇄ strategy",
                Purpose::Got(FormPurpose::NewSearch),
                STRATEGIES.iter().map(|s| s.as_str().to_string()).collect(),
            )
            .with_text("problem", true, 4000);
            form.cursor = STRATEGIES.iter().position(|s| *s == default).unwrap_or(0);
            form.on_text = true;
            state.overlay = Some(Overlay::Form(form));
        }
        Action::PauseResume => {
            if !ws.running() {
                notice(state, "no search is running", Level::Info);
                return true;
            }
            let c = if ws.pause_requested {
                GotControl::Resume
            } else {
                GotControl::Pause
            };
            if ws.send(c) {
                ws.pause_requested = !ws.pause_requested;
            }
        }
        Action::StepSearch => {
            if !ws.running() || !ws.pause_requested {
                notice(
                    state,
                    "pause the search first (space), then step",
                    Level::Info,
                );
            } else if ws.send(GotControl::Step) {
                ws.stepping = true;
            } else {
                notice(state, "the search no longer takes steering", Level::Warn);
            }
        }
        Action::PinThought => {
            if let Some(id) = steerable(state) {
                steer(state, id, GotControl::Pin(id), "pin queued");
            }
        }
        Action::PruneThought => {
            if let Some(id) = steerable(state) {
                if state.got.thoughts.first().is_some_and(|t| t.id == id) {
                    notice(state, "the problem itself cannot be pruned", Level::Info);
                } else {
                    steer(state, id, GotControl::Prune(id), "prune queued");
                }
            }
        }
        Action::BoostThought | Action::LowerThought => {
            if let Some(id) = steerable(state) {
                let step = state.got.defaults.as_ref().map_or(0.2, |d| d.boost_step);
                let (amount, label) = if *a == Action::BoostThought {
                    (step, "boost queued")
                } else {
                    (-step, "lower queued")
                };
                steer(state, id, GotControl::Boost { id, amount }, label);
            }
        }
        Action::SetBudget => {
            let current = ws.budget.map(|b| b.to_string()).unwrap_or_default();
            let title = if ws.running() {
                "Token budget of this search · empty = no limit"
            } else {
                "Token budget of the next search · empty = no limit"
            };
            let mut form = Form::text(title, Purpose::Got(FormPurpose::Budget), "tokens")
                .with_initial_text(&current);
            form.text_required = false;
            state.overlay = Some(Overlay::Form(form));
        }
        _ => return false,
    }
    true
}

/// Called when the workspace becomes the visible one.
pub fn on_enter(state: &mut State, fx: &mut Vec<Effect>) {
    let ws = &state.got;
    let session = state.loaded.id();
    let stale = ws.thoughts.is_empty() || (session.is_some() && session != ws.session);
    if ws.defaults.is_none() || (!ws.running() && stale) {
        let load = if ws.running() { None } else { session };
        if load.is_some() && ws.thoughts.is_empty() {
            state.got.phase = Phase::Loading;
        }
        fx.push(Effect::Got(GotEffect::Load(load)));
    }
}

/// Applies news from an engine task.
pub fn on_msg(state: &mut State, m: GotMsg, fx: &mut Vec<Effect>) {
    apply_msg(state, m, fx);
    follow(state);
}

fn apply_msg(state: &mut State, m: GotMsg, fx: &mut Vec<Effect>) {
    let ws = &mut state.got;
    match m {
        GotMsg::Defaults(d) => ws.defaults = Some(d),
        GotMsg::Loaded(stored) => {
            if ws.running() {
                return;
            }
            if stored.run.is_none() {
                // Another session without a search: do not keep showing the old one.
                if ws.session != stored.session {
                    ws.clear_search();
                }
                if matches!(ws.phase, Phase::Loading) || ws.thoughts.is_empty() {
                    ws.phase = Phase::Empty;
                }
                return;
            }
            let keep = ws.selected_id();
            ws.clear_search();
            let s = *stored;
            ws.session = s.session;
            ws.run = s.run;
            ws.problem = s.problem;
            ws.params = s.params;
            ws.expanded = s.expanded.into_iter().collect();
            ws.set_thoughts(s.thoughts);
            ws.phase = match s.status {
                Some(RunStatus::Running) => Phase::StoredRunning,
                Some(RunStatus::Interrupted) => Phase::Interrupted,
                Some(RunStatus::Failed { error }) => Phase::Failed(error),
                Some(RunStatus::Done) | None => Phase::Done,
            };
            if let Some(o) = s.outcome {
                ws.tokens = o.stats.total_tokens;
                ws.outcome = Some(o);
            }
            ws.best = s.best;
            ws.refresh();
            // The reader's place if it is still there, else the best thought.
            if let Some(pos) = keep
                .or(ws.best)
                .and_then(|id| ws.rows.iter().position(|r| r.id == id))
            {
                ws.selected = pos;
            }
        }
        GotMsg::LoadFailed(e) => {
            if ws.phase == Phase::Loading {
                ws.phase = Phase::Empty;
            }
            notice(
                state,
                format!("cannot read the last search: {e}"),
                Level::Error,
            );
        }
        GotMsg::Event { search, event } => {
            if search != ws.search {
                return;
            }
            match event {
                GotEvent::Started { session, run, .. } => {
                    ws.session = Some(session);
                    ws.run = Some(run);
                }
                GotEvent::Thought(t) => {
                    let first = ws.thoughts.is_empty();
                    ws.upsert(t);
                    ws.refresh();
                    if first {
                        ws.selected = 0;
                    }
                }
                GotEvent::Expanding(id) => {
                    ws.expanded.insert(id);
                    ws.expanding = Some(id);
                }
                GotEvent::Paused => {
                    ws.paused = true;
                    ws.expanding = None;
                    ws.stepping = false;
                }
                GotEvent::Resumed => {
                    ws.paused = false;
                    ws.stepping = false;
                }
                GotEvent::Tokens(n) => ws.tokens = n,
                GotEvent::BudgetExhausted { used, limit } => notice(
                    state,
                    format!("the token budget is spent ({used} of {limit}); the search stops"),
                    Level::Warn,
                ),
            }
        }
        GotMsg::Finished { search, outcome } => {
            if search != ws.search {
                return;
            }
            ws.controls = None;
            ws.cancel = None;
            ws.expanding = None;
            ws.paused = false;
            ws.stepping = false;
            ws.pause_requested = false;
            ws.pending.clear();
            match outcome {
                Ok(r) => {
                    let r = *r;
                    ws.session = Some(r.session);
                    ws.run = Some(r.run);
                    ws.expanded = r.expanded.iter().copied().collect();
                    ws.set_thoughts(r.thoughts);
                    ws.best = r.best;
                    ws.tokens = r.stats.total_tokens;
                    ws.outcome = Some(Outcome {
                        answer: r.answer,
                        confidence: r.confidence,
                        summary: r.reasoning_summary,
                        stats: r.stats,
                    });
                    ws.phase = if r.interrupted {
                        Phase::Interrupted
                    } else {
                        Phase::Done
                    };
                    ws.refresh();
                    let best = ws.best;
                    let level = if best.is_some() {
                        Level::Info
                    } else {
                        Level::Warn
                    };
                    let text = if best.is_some() {
                        "search finished — the best thought is marked ★ (enter opens it)"
                    } else {
                        "search finished without a verified thought"
                    };
                    if let Some(pos) = best.and_then(|b| ws.rows.iter().position(|r| r.id == b)) {
                        ws.selected = pos;
                    }
                    let session = r.session;
                    notice(state, text, level);
                    fx.push(Effect::LoadSessions);
                    if state.loaded.id().is_none() || state.loaded.id() == Some(session) {
                        fx.push(Effect::LoadSession(session));
                    }
                }
                Err(e) => {
                    ws.phase = Phase::Failed(e.clone());
                    notice(state, format!("the search failed: {e}"), Level::Error);
                    fx.push(Effect::LoadSessions);
                }
            }
        }
    }
}

/// Applies a submitted form.
pub fn submit(state: &mut State, p: FormPurpose, answer: Answer, fx: &mut Vec<Effect>) {
    match p {
        FormPurpose::Budget => {
            let text = answer.text.replace(['_', ','], "");
            let budget = if text.is_empty() {
                None
            } else {
                match text.parse::<u64>() {
                    Ok(n) if n > 0 => Some(n),
                    _ => {
                        notice(
                            state,
                            format!("`{}` is not a number of tokens", answer.text),
                            Level::Warn,
                        );
                        return;
                    }
                }
            };
            let ws = &mut state.got;
            ws.budget = budget;
            let live = ws.running() && ws.send(GotControl::TokenBudget(budget));
            let what = budget.map_or("no token limit".to_string(), |b| format!("{b} tokens"));
            let text = if live {
                format!("budget of this search: {what}")
            } else {
                format!("budget of the next search: {what}")
            };
            notice(state, text, Level::Info);
        }
        FormPurpose::NewSearch => {
            if state.got.running() {
                notice(state, "a search is running; Esc cancels it", Level::Warn);
                return;
            }
            let strategy = answer
                .choice
                .and_then(|i| STRATEGIES.get(i).copied())
                .unwrap_or(Strategy::Bfs);
            let ws = &mut state.got;
            ws.search += 1;
            ws.clear_search();
            let (tx, rx) = mpsc::unbounded_channel();
            let cancel = CancellationToken::new();
            ws.controls = Some(tx);
            ws.cancel = Some(cancel.clone());
            ws.phase = Phase::Running;
            ws.problem = answer.text.clone();
            ws.tokens = 0;
            ws.params = ws.defaults.as_ref().map(|d| GotParams {
                strategy,
                token_budget: ws.budget,
                ..d.params.clone()
            });
            fx.push(Effect::Got(GotEffect::Start {
                search: ws.search,
                problem: answer.text,
                strategy,
                budget: ws.budget,
                session: state.loaded.id(),
                controls: ControlSlot(Arc::new(Mutex::new(Some(rx)))),
                cancel,
            }));
            notice(
                state,
                format!("{} search started", strategy.as_str()),
                Level::Info,
            );
        }
    }
}

/// Call settings of the search's model calls, as `glassbox got` makes them.
fn call_settings(svc: &Services, kind: ProviderKind, model: &str) -> CallSettings {
    let cfg = &svc.cfg;
    let effort = (kind != ProviderKind::Local).then_some(cfg.got.effort);
    let plan = factory::plan_turn(cfg, kind, effort, Some(cfg.got.max_tokens));
    CallSettings {
        model: model.to_string(),
        thinking: plan.thinking,
        effort: plan.effort,
        max_tokens: plan.max_tokens,
        temperature: Some(cfg.generation.temperature as f32),
        seed: Some(cfg.generation.seed),
    }
}

/// Carries out an effect: store reads and writes, engine tasks (spawned; results come back
/// as [`GotMsg`] through `svc.tx`).
pub fn run(e: GotEffect, svc: &Services) {
    match e {
        GotEffect::Load(session) => {
            let _ = svc.tx.send(Msg::Got(GotMsg::Defaults(Defaults {
                params: GotParams::from_config(&svc.cfg.got),
                boost_step: svc.cfg.got.boost_step,
            })));
            let Some(session) = session else {
                return;
            };
            let store = svc.store.clone();
            let tx = svc.tx.clone();
            tokio::task::spawn_blocking(move || {
                let msg = match load_last(&store, session) {
                    Ok(s) => GotMsg::Loaded(Box::new(s)),
                    Err(e) => GotMsg::LoadFailed(e.to_string()),
                };
                let _ = tx.send(Msg::Got(msg));
            });
        }
        GotEffect::Start {
            search,
            problem,
            strategy,
            budget,
            session,
            controls,
            cancel,
        } => {
            let finish = |outcome| {
                let _ = svc.tx.send(Msg::Got(GotMsg::Finished { search, outcome }));
            };
            let model = match &svc.model {
                Ok(m) => m.clone(),
                Err(e) => return finish(Err(e.clone())),
            };
            let Some(controls) = controls.take() else {
                return finish(Err("the search was already started".into()));
            };
            let mut params = GotParams::from_config(&svc.cfg.got);
            params.strategy = strategy;
            params.token_budget = budget;
            let engine = GotEngine {
                store: svc.store.clone(),
                provider: model.provider.clone(),
                call: call_settings(svc, model.kind, &model.model),
                prompts: GotPrompts::from(&svc.prompts),
                config: svc.cfg.got.clone(),
            };
            let req = GotRequest {
                problem,
                session,
                params,
                start_paused: false,
            };
            let tx = svc.tx.clone();
            tokio::spawn(async move {
                let (ev_tx, mut ev_rx) = mpsc::unbounded_channel();
                let forward = {
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        while let Some(event) = ev_rx.recv().await {
                            let _ = tx.send(Msg::Got(GotMsg::Event { search, event }));
                        }
                    })
                };
                let outcome = engine
                    .run(req, ev_tx, controls, cancel)
                    .await
                    .map(Box::new)
                    .map_err(|e| e.to_string());
                let _ = forward.await;
                let _ = tx.send(Msg::Got(GotMsg::Finished { search, outcome }));
            });
        }
    }
}

fn meta_f64(meta: &serde_json::Map<String, Value>, key: &str) -> Option<f64> {
    meta.get(key).and_then(Value::as_f64)
}

/// The last GoT run of `session` with its thoughts, rebuilt from nodes, edges and the run.
pub fn load_last(store: &Store, session: SessionId) -> Result<Stored, crate::store::StoreError> {
    let Some(run) = store.pick_run(session, RunKind::Got, None)? else {
        return Ok(Stored {
            session: Some(session),
            ..Default::default()
        });
    };
    let run_text = serde_json::to_value(run.id)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| run.id.to_string());
    let nodes: Vec<_> = store
        .session_nodes(session)?
        .into_iter()
        .filter(|n| n.kind == NodeType::GotThought)
        .filter(|n| n.meta.get("run").and_then(Value::as_str) == Some(run_text.as_str()))
        .collect();
    let ids: HashSet<NodeId> = nodes.iter().map(|n| n.id).collect();
    let mut parent: HashMap<NodeId, NodeId> = HashMap::new();
    let mut sources: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
    for e in store.session_edges(session)? {
        if !ids.contains(&e.src) {
            continue;
        }
        match e.kind {
            EdgeType::BranchesFrom => {
                parent.insert(e.src, e.dst);
            }
            EdgeType::Aggregates => sources.entry(e.src).or_default().push(e.dst),
            _ => {}
        }
    }
    let state_of = |s: Option<&str>| match s {
        Some("evaluated") => ThoughtState::Evaluated,
        Some("verified") => ThoughtState::Verified,
        Some("rejected") => ThoughtState::Rejected,
        Some("aggregated") => ThoughtState::Aggregated,
        _ => ThoughtState::Generated,
    };
    let thoughts: Vec<Thought> = nodes
        .into_iter()
        .map(|n| Thought {
            id: n.id,
            parent: parent.get(&n.id).copied(),
            sources: sources.remove(&n.id).unwrap_or_default(),
            score: meta_f64(&n.meta, "score").or(n.confidence),
            state: state_of(n.meta.get("state").and_then(Value::as_str)),
            depth: n.meta.get("depth").and_then(Value::as_u64).unwrap_or(0) as u32,
            pinned: n
                .meta
                .get("pinned")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            boost: meta_f64(&n.meta, "boost").unwrap_or(0.0),
            reasoning: n
                .meta
                .get("reasoning")
                .and_then(Value::as_str)
                .map(str::to_string),
            content: n.text,
        })
        .collect();
    let summary = &run.summary;
    let id_list =
        |v: &Value| -> Vec<NodeId> { serde_json::from_value(v.clone()).unwrap_or_default() };
    let outcome = summary.get("answer").map(|a| Outcome {
        answer: a.as_str().unwrap_or_default().to_string(),
        confidence: summary
            .get("confidence")
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
        summary: summary
            .get("reasoningSummary")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        stats: summary
            .get("stats")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default(),
    });
    Ok(Stored {
        session: Some(session),
        run: Some(run.id),
        problem: run
            .params
            .get("problem")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        params: run
            .params
            .get("params")
            .and_then(|p| serde_json::from_value(p.clone()).ok()),
        expanded: summary.get("expanded").map(id_list).unwrap_or_default(),
        best: summary
            .get("best")
            .and_then(|b| serde_json::from_value(b.clone()).ok()),
        status: Some(run.status),
        outcome,
        thoughts,
    })
}
