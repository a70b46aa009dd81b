//! The workspaces: each is one folder here (its state, its update, its background tasks)
//! and one pure view in `src/views/<name>.rs`, behind one [`Workspace`] trait.
//!
//! A workspace never sees the runtime. It gets a [`Cx`] for everything else it may touch:
//! the shared state (the open session, the Think graph, the overlay, the status line), its
//! own effects (run later by the runtime with the [`Services`]), and forms whose answers
//! come back to it. Its background tasks talk back through an [`Outbox`] of its own message
//! type. The registry below is the one list of workspaces: tab order, number keys, keymap
//! sections and the actions each declares all come from it.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Instant;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::action::Action;
use super::form::{Answer, Form, Purpose};
use super::runtime::Services;
use super::state::{Level, Overlay, State};
use super::update::{Effect, Msg};
use crate::views::{Picked, ViewCx};

pub mod diff;
pub mod fork;
pub mod got;
pub mod insights;
pub mod ledger;
pub mod memory;
pub mod pipeline;
pub mod replay;
pub mod research;
pub mod sessions;
pub mod think;
pub mod verify;

/// The registry: every workspace, in tab order (its place is its number key). Adding a
/// workspace is one line here.
pub const REGISTRY: &[Entry] = &[
    entry::<think::Think>(),
    entry::<sessions::Sessions>(),
    entry::<ledger::Ledger>(),
    entry::<fork::Fork>(),
    entry::<got::Got>(),
    entry::<verify::Verify>(),
    entry::<insights::Insights>(),
    entry::<replay::Replay>(),
    entry::<memory::MemoryWs>(),
    entry::<pipeline::Pipeline>(),
    entry::<research::Research>(),
    entry::<diff::DiffWs>(),
];

/// A workspace's name: its keymap section (`[fork]`), its `workspace_<id>` action and its
/// key in the registry.
pub type WorkspaceId = &'static str;

/// Where a workspace's action is bound and handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// In the workspace's own keymap section, while it is shown.
    Own,
    /// In `[normal]`: from any pane, handled by this workspace even when another is shown
    /// (e.g. `f` forks the selected node from anywhere).
    Anywhere,
}

/// One action a workspace declares, bindable in keymap.toml by `name`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActionSpec {
    pub name: &'static str,
    /// One short line for the help overlay and the palette.
    pub description: &'static str,
    pub place: Place,
}

/// What the registry knows of a workspace without one at hand.
#[derive(Debug)]
pub struct Spec {
    pub id: WorkspaceId,
    /// The tab title.
    pub title: &'static str,
    /// The help overlay's heading for its keymap section.
    pub help_title: &'static str,
    /// The description of the action that shows it (`"Go to the Fork workspace"`).
    pub go: &'static str,
    /// Whether it has a keymap section of its own (`[id]`).
    pub section: bool,
    pub actions: &'static [ActionSpec],
}

/// One TUI workspace. Implementors keep their own state; shared state is reached through
/// the [`Cx`]. Every hook but [`Workspace::draw`] and [`Workspace::run`] has a default that
/// does nothing.
pub trait Workspace: Default + Send + 'static {
    /// Its id, title, keymap section and actions.
    const SPEC: &'static Spec;
    /// News from its background tasks.
    type Msg: Send + 'static;
    /// Work it asks the runtime to start.
    type Effect: Send + 'static;
    /// What a form it opened is for.
    type Form: Clone + fmt::Debug + Send + Sync + 'static;

    /// The workspace became the visible one.
    fn on_enter(&mut self, _cx: &mut Cx<'_, Self>) {}

    /// A bound action, offered while the workspace is shown, and for its own
    /// [`Place::Anywhere`] actions wherever the user is. True when it was handled here.
    fn on_action(&mut self, _action: &Action, _cx: &mut Cx<'_, Self>) -> bool {
        false
    }

    /// News from one of its tasks.
    fn on_msg(&mut self, _msg: Self::Msg, _cx: &mut Cx<'_, Self>) {}

    /// Another process committed to the store (the TUI follows it).
    fn on_store_change(&mut self, _cx: &mut Cx<'_, Self>) {}

    /// A message was applied and the shared state may have changed (the sessions list's
    /// selection): called for the workspace on screen only, to load what now shows.
    fn follow(&mut self, _cx: &mut Cx<'_, Self>) {}

    /// Whether it takes typed keys as text now (a search line has focus): keys then skip
    /// the keymap and go to [`Workspace::on_key`].
    fn typing(&self) -> bool {
        false
    }

    /// A key typed while [`Workspace::typing`] holds.
    fn on_key(&mut self, _key: KeyEvent, _cx: &mut Cx<'_, Self>) {}

    /// A form it opened was submitted.
    fn on_form(&mut self, _form: Self::Form, _answer: Answer, _cx: &mut Cx<'_, Self>) {}

    /// Carries out one of its effects: spawn the engine task or store read, reporting back
    /// through `out`. Runs on the runtime, never inside `update`.
    fn run(effect: Self::Effect, svc: &Services, out: Outbox<Self::Msg>);

    /// The job it has under way, as the status bar names it (`"fork running…"`).
    fn job(&self) -> Option<String> {
        None
    }

    /// The node selected in it now, for the actions that take "the selected node" from
    /// any workspace (marking a diff). `state` is the shared state (the Think graph).
    fn selected_node(&self, _state: &State) -> Option<Picked> {
        None
    }

    /// The title of the session it shows when that is its own (the replayed one), shown
    /// after the tabs instead of the open session's.
    fn session_title(&self) -> Option<String> {
        None
    }

    /// Draws the workspace into the body area. `state` is the shared state, for the
    /// workspaces that show it (and keep its selection in view).
    fn draw(&mut self, f: &mut Frame, area: Rect, state: &mut State, v: &ViewCx<'_>);
}

/// A registry entry: the spec and how to make the workspace.
pub struct Entry {
    pub spec: &'static Spec,
    make: fn() -> Box<dyn Slot>,
}

const fn entry<W: Workspace>() -> Entry {
    Entry {
        spec: W::SPEC,
        make: make::<W>,
    }
}

fn make<W: Workspace>() -> Box<dyn Slot> {
    Box::new(W::default())
}

/// The spec of the workspace `id`.
pub fn spec(id: WorkspaceId) -> Option<&'static Spec> {
    REGISTRY.iter().map(|e| e.spec).find(|s| s.id == id)
}

/// The id of the first workspace: where the TUI opens.
pub const HOME: WorkspaceId = think::ID;

/// A type-erased message or effect for one workspace.
pub type Boxed = Box<dyn Any + Send>;

/// The object-safe face of a [`Workspace`], for the registry.
trait Slot: Send {
    fn spec(&self) -> &'static Spec;
    fn enter(&mut self, state: &mut State, fx: &mut Vec<Effect>);
    fn action(
        &mut self,
        a: &Action,
        state: &mut State,
        fx: &mut Vec<Effect>,
        picked: Option<Picked>,
    ) -> bool;
    fn selected_node(&self, state: &State) -> Option<Picked>;
    fn msg(&mut self, m: Boxed, state: &mut State, fx: &mut Vec<Effect>);
    fn store_changed(&mut self, state: &mut State, fx: &mut Vec<Effect>);
    fn follow(&mut self, state: &mut State, fx: &mut Vec<Effect>);
    fn typing(&self) -> bool;
    fn key(&mut self, k: KeyEvent, state: &mut State, fx: &mut Vec<Effect>);
    fn session_title(&self) -> Option<String>;
    fn form(&mut self, tag: &FormTag, answer: Answer, state: &mut State, fx: &mut Vec<Effect>);
    fn run(&self, e: Boxed, svc: &Services);
    fn job(&self) -> Option<String>;
    fn draw(&mut self, f: &mut Frame, area: Rect, state: &mut State, v: &ViewCx<'_>);
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

fn cx<'a, W: Workspace>(state: &'a mut State, fx: &'a mut Vec<Effect>) -> Cx<'a, W> {
    Cx {
        state,
        fx,
        picked: None,
        _w: PhantomData,
    }
}

impl<W: Workspace> Slot for W {
    fn spec(&self) -> &'static Spec {
        W::SPEC
    }
    fn enter(&mut self, state: &mut State, fx: &mut Vec<Effect>) {
        self.on_enter(&mut cx::<W>(state, fx));
    }
    fn action(
        &mut self,
        a: &Action,
        state: &mut State,
        fx: &mut Vec<Effect>,
        picked: Option<Picked>,
    ) -> bool {
        let mut cx = cx::<W>(state, fx);
        cx.picked = picked;
        self.on_action(a, &mut cx)
    }
    fn selected_node(&self, state: &State) -> Option<Picked> {
        Workspace::selected_node(self, state)
    }
    fn msg(&mut self, m: Boxed, state: &mut State, fx: &mut Vec<Effect>) {
        match m.downcast::<W::Msg>() {
            Ok(m) => self.on_msg(*m, &mut cx::<W>(state, fx)),
            Err(_) => tracing::warn!(workspace = W::SPEC.id, "a message of the wrong type"),
        }
    }
    fn store_changed(&mut self, state: &mut State, fx: &mut Vec<Effect>) {
        self.on_store_change(&mut cx::<W>(state, fx));
    }
    fn follow(&mut self, state: &mut State, fx: &mut Vec<Effect>) {
        Workspace::follow(self, &mut cx::<W>(state, fx));
    }
    fn typing(&self) -> bool {
        Workspace::typing(self)
    }
    fn key(&mut self, k: KeyEvent, state: &mut State, fx: &mut Vec<Effect>) {
        self.on_key(k, &mut cx::<W>(state, fx));
    }
    fn session_title(&self) -> Option<String> {
        Workspace::session_title(self)
    }
    fn form(&mut self, tag: &FormTag, answer: Answer, state: &mut State, fx: &mut Vec<Effect>) {
        if let Some(f) = tag.0.downcast_ref::<W::Form>() {
            self.on_form(f.clone(), answer, &mut cx::<W>(state, fx));
        }
    }
    fn run(&self, e: Boxed, svc: &Services) {
        if let Ok(e) = e.downcast::<W::Effect>() {
            W::run(
                *e,
                svc,
                Outbox {
                    tx: svc.tx.clone(),
                    id: W::SPEC.id,
                    _m: PhantomData,
                },
            );
        }
    }
    fn job(&self) -> Option<String> {
        Workspace::job(self)
    }
    fn draw(&mut self, f: &mut Frame, area: Rect, state: &mut State, v: &ViewCx<'_>) {
        Workspace::draw(self, f, area, state, v);
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Every workspace, made from the registry, with the one on screen.
pub struct Workspaces {
    slots: Vec<Box<dyn Slot>>,
}

impl Default for Workspaces {
    fn default() -> Self {
        Self {
            slots: REGISTRY.iter().map(|e| (e.make)()).collect(),
        }
    }
}

impl fmt::Debug for Workspaces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.slots.iter().map(|s| s.spec().id))
            .finish()
    }
}

impl Workspaces {
    fn slot(&mut self, id: WorkspaceId) -> Option<&mut Box<dyn Slot>> {
        self.slots.iter_mut().find(|s| s.spec().id == id)
    }

    /// The workspace of type `W`.
    pub fn get<W: Workspace>(&self) -> &W {
        self.slots
            .iter()
            .find_map(|s| s.as_any().downcast_ref::<W>())
            .unwrap_or_else(|| unreachable!("{} is in the registry", W::SPEC.id))
    }

    /// The workspace of type `W`, to change.
    pub fn get_mut<W: Workspace>(&mut self) -> &mut W {
        self.slots
            .iter_mut()
            .find_map(|s| s.as_any_mut().downcast_mut::<W>())
            .unwrap_or_else(|| unreachable!("{} is in the registry", W::SPEC.id))
    }

    /// Shows `id` and lets it load what it needs.
    pub fn enter(&mut self, id: WorkspaceId, state: &mut State, fx: &mut Vec<Effect>) {
        if let Some(slot) = self.slot(id) {
            state.workspace = id;
            slot.enter(state, fx);
        }
    }

    /// Offers an action to the workspace on screen, then to the workspace that declared it
    /// (for [`Place::Anywhere`] actions); true when one of them took it.
    pub fn action(&mut self, a: &Action, state: &mut State, fx: &mut Vec<Effect>) -> bool {
        let shown = state.workspace;
        // Only workspace actions take the selected node (marking a diff).
        let picked = match a {
            Action::Ws(_) => self.selected_node(state),
            _ => None,
        };
        if let Some(slot) = self.slot(shown)
            && slot.action(a, state, fx, picked.clone())
        {
            return true;
        }
        match a {
            Action::Ws(wa) if wa.ws != shown => self
                .slot(wa.ws)
                .is_some_and(|slot| slot.action(a, state, fx, picked)),
            _ => false,
        }
    }

    /// The node selected in the workspace on screen (see [`Workspace::selected_node`]).
    pub fn selected_node(&self, state: &State) -> Option<Picked> {
        self.slots
            .iter()
            .find(|s| s.spec().id == state.workspace)
            .and_then(|s| s.selected_node(state))
    }

    /// Whether the workspace on screen takes typed keys as text now.
    pub fn typing(&self, id: WorkspaceId) -> bool {
        self.slots
            .iter()
            .find(|s| s.spec().id == id)
            .is_some_and(|s| s.typing())
    }

    /// Hands a typed key to the workspace on screen when it takes text; true when it did.
    pub fn key(&mut self, k: KeyEvent, state: &mut State, fx: &mut Vec<Effect>) -> bool {
        match self.slot(state.workspace) {
            Some(slot) if slot.typing() => {
                slot.key(k, state, fx);
                true
            }
            _ => false,
        }
    }

    /// Hands a task's message to its workspace.
    pub fn msg(&mut self, id: WorkspaceId, m: Boxed, state: &mut State, fx: &mut Vec<Effect>) {
        if let Some(slot) = self.slot(id) {
            slot.msg(m, state, fx);
        }
    }

    /// Hands a submitted form to the workspace that opened it.
    pub fn form(
        &mut self,
        purpose: Purpose,
        answer: Answer,
        state: &mut State,
        fx: &mut Vec<Effect>,
    ) {
        if let Some(slot) = self.slot(purpose.ws) {
            slot.form(&purpose.tag, answer, state, fx);
        }
    }

    /// Runs a workspace's effect.
    pub fn run(&mut self, id: WorkspaceId, e: Boxed, svc: &Services) {
        if let Some(slot) = self.slot(id) {
            slot.run(e, svc);
        }
    }

    /// The jobs under way, as the status bar names them.
    pub fn jobs(&self) -> Vec<String> {
        self.slots.iter().filter_map(|s| s.job()).collect()
    }

    /// Tells every workspace that another process committed to the store.
    pub fn store_changed(&mut self, state: &mut State, fx: &mut Vec<Effect>) {
        for slot in &mut self.slots {
            slot.store_changed(state, fx);
        }
    }

    /// Lets the workspace on screen follow the shared state after a message.
    pub fn follow(&mut self, state: &mut State, fx: &mut Vec<Effect>) {
        if let Some(slot) = self.slot(state.workspace) {
            slot.follow(state, fx);
        }
    }

    /// The title of the session the workspace `id` shows, when it shows one of its own.
    pub fn session_title(&self, id: WorkspaceId) -> Option<String> {
        self.slots
            .iter()
            .find(|s| s.spec().id == id)
            .and_then(|s| s.session_title())
    }

    /// Draws the workspace on screen.
    pub fn draw(&mut self, f: &mut Frame, area: Rect, state: &mut State, v: &ViewCx<'_>) {
        if let Some(slot) = self.slot(state.workspace) {
            slot.draw(f, area, state, v);
        }
    }
}

/// What a form is for, type-erased: the opening workspace's own `Form` value.
#[derive(Clone)]
pub struct FormTag(Arc<dyn Any + Send + Sync>);

impl FormTag {
    /// The tag as the workspace's form type, if it is one.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

impl fmt::Debug for FormTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FormTag")
    }
}

impl PartialEq for FormTag {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// How a workspace's background run ended badly: what went wrong, and the run a resume
/// continues.
#[derive(Debug)]
pub struct Failure {
    pub error: String,
    pub run: Option<crate::store::RunId>,
    /// Stopped by the user (the cancel key), not by an error.
    pub cancelled: bool,
}

/// A workspace's hold on the rest of the TUI while it handles something.
pub struct Cx<'a, W: ?Sized> {
    /// The shared state: the open session and its graph, focus, overlay, status line.
    pub state: &'a mut State,
    fx: &'a mut Vec<Effect>,
    /// The node selected in the workspace on screen, when an action is being handled.
    picked: Option<Picked>,
    _w: PhantomData<fn() -> Box<W>>,
}

impl<W: Workspace> Cx<'_, W> {
    /// Asks the runtime to carry out one of the workspace's effects.
    pub fn run(&mut self, e: W::Effect) {
        self.fx.push(Effect::Ws(W::SPEC.id, Box::new(e)));
    }

    /// Asks the runtime for a shared effect (load a session, …).
    pub fn effect(&mut self, e: Effect) {
        self.fx.push(e);
    }

    /// The node selected in the workspace on screen when the action being handled was
    /// pressed (see [`Workspace::selected_node`]); `None` outside [`Workspace::on_action`].
    pub fn picked(&self) -> Option<&Picked> {
        self.picked.as_ref()
    }

    /// Says something on the status line.
    pub fn notice(&mut self, text: impl Into<String>, level: Level) {
        self.state.notice = Some((text.into(), level));
    }

    /// A run of this workspace (`what`: "pipeline", "research") stopped early: the status
    /// line says so, and how to resume when a run was kept (`resumable`); the phase to show.
    pub fn run_failed(
        &mut self,
        what: &str,
        f: &Failure,
        resumable: bool,
    ) -> crate::views::JobPhase {
        let again = if resumable { " — r resumes" } else { "" };
        if f.cancelled {
            self.notice(format!("{what} interrupted{again}"), Level::Warn);
            crate::views::JobPhase::Interrupted
        } else {
            self.notice(
                format!("the {what} run failed: {}{again}", f.error),
                Level::Error,
            );
            crate::views::JobPhase::Failed(f.error.clone())
        }
    }

    /// A run of this workspace ended: the session list reloads, and `session` (the run's)
    /// opens when no session is open or it is the open one.
    pub fn run_ended(&mut self, session: Option<crate::store::SessionId>) {
        self.effect(Effect::LoadSessions);
        let open = self.state.loaded.id();
        if let Some(s) = session
            && (open.is_none() || open == Some(s))
        {
            self.effect(Effect::LoadSession(s));
        }
    }

    /// The purpose of a form this workspace opens; its answer comes back to
    /// [`Workspace::on_form`] with `form`.
    pub fn purpose(form: W::Form) -> Purpose {
        Purpose {
            ws: W::SPEC.id,
            tag: FormTag(Arc::new(form)),
        }
    }

    /// Opens a form (built with [`Cx::purpose`]) over the workspace.
    pub fn open_form(&mut self, form: Form) {
        self.state.overlay = Some(Overlay::Form(form));
    }

    /// Switches to the workspace `id` (its [`Workspace::on_enter`] runs next).
    pub fn show(&mut self, id: WorkspaceId) {
        self.fx.push(Effect::Show(id));
    }

    /// Whether this workspace is the one on screen.
    pub fn shown(&self) -> bool {
        self.state.workspace == W::SPEC.id
    }

    /// Whether an action may be handled here: always while shown; from elsewhere (the
    /// palette) only when it is one of the workspace's `own` actions, which shows it first.
    pub fn takes(&mut self, own: bool) -> bool {
        if self.shown() {
            return true;
        }
        if own {
            self.show(W::SPEC.id);
        }
        own
    }
}

/// Where a workspace's tasks send their news: into `update`, to that workspace.
pub struct Outbox<M> {
    tx: mpsc::UnboundedSender<Msg>,
    id: WorkspaceId,
    _m: PhantomData<fn(M)>,
}

impl<M> Clone for Outbox<M> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            id: self.id,
            _m: PhantomData,
        }
    }
}

impl<M: Send + 'static> Outbox<M> {
    /// Sends one message; quietly dropped once the TUI has gone.
    pub fn send(&self, m: M) {
        let _ = self.tx.send(Msg::Ws(self.id, Box::new(m)));
    }

    /// Sends a shared message (a reloaded session, a notice).
    pub fn send_shared(&self, m: Msg) {
        let _ = self.tx.send(m);
    }

    /// Forwards every event of an engine run as a message (`wrap`), until the engine drops
    /// its sender; await the handle to know all of them were sent.
    pub fn forward<E: Send + 'static>(
        &self,
        mut events: mpsc::UnboundedReceiver<E>,
        wrap: impl Fn(E) -> M + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let out = self.clone();
        tokio::spawn(async move {
            while let Some(e) = events.recv().await {
                out.send(wrap(e));
            }
        })
    }

    /// Runs blocking store work off the executor and sends what it returns.
    pub fn blocking(&self, work: impl FnOnce() -> M + Send + 'static) {
        let out = self.clone();
        tokio::task::spawn_blocking(move || out.send(work()));
    }
}

/// One background job of a workspace: what it is, how to stop it, since when.
#[derive(Clone, Debug)]
pub struct Job<K> {
    pub kind: K,
    /// How the job is named in notices (`"fork"`, `"merge"`).
    pub what: String,
    pub cancel: CancellationToken,
    pub started: Instant,
}

impl<K> Job<K> {
    pub fn new(kind: K, what: impl Into<String>) -> Self {
        Self {
            kind,
            what: what.into(),
            cancel: CancellationToken::new(),
            started: Instant::now(),
        }
    }
}

/// Declares a workspace's own actions: a `Copy` enum, the [`ActionSpec`] of each variant
/// (its keymap name, description and [`Place`]) and `of`, which recognises the bound
/// [`Action`] as one of them.
///
/// ```ignore
/// workspace_actions! { ForkAction for ID {
///     NewFork => ("new_fork", "Fork a new question", Own),
///     ForkHere => ("fork_here", "Fork the selected node or step", Anywhere),
/// } }
/// ```
#[macro_export]
macro_rules! workspace_actions {
    ($name:ident for $ws:expr => { $($variant:ident => ($key:literal, $desc:literal, $place:ident)),* $(,)? }) => {
        /// The actions this workspace declares (bindable in keymap.toml by name).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name { $($variant),* }

        impl $name {
            /// Every action, with its keymap name, description and place.
            pub const SPECS: &'static [$crate::app::workspaces::ActionSpec] = &[
                $($crate::app::workspaces::ActionSpec {
                    name: $key,
                    description: $desc,
                    place: $crate::app::workspaces::Place::$place,
                }),*
            ];
            const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The bound action as one of these, if it is one.
            pub fn of(action: &$crate::app::action::Action) -> Option<Self> {
                match action {
                    $crate::app::action::Action::Ws(a) if a.ws == $ws => Self::SPECS
                        .iter()
                        .position(|s| s.name == a.name)
                        .and_then(|i| Self::ALL.get(i).copied()),
                    _ => None,
                }
            }

            /// This action as the keymap binds it.
            pub fn action(self) -> $crate::app::action::Action {
                let i = Self::ALL.iter().position(|a| *a == self).unwrap_or(0);
                $crate::app::action::Action::Ws($crate::app::action::WsAction {
                    ws: $ws,
                    name: Self::SPECS[i].name,
                })
            }
        }
    };
}

/// Status-line helper shared by the workspaces: "`what` failed: `e`" as an error.
pub fn failed<W: Workspace>(cx: &mut Cx<'_, W>, what: &str, e: impl fmt::Display) {
    cx.notice(format!("{what} failed: {e}"), Level::Error);
}
