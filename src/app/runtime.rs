//! The TUI runtime without the terminal: turns terminal and engine events into messages,
//! runs `update`, carries out its effects (engine runs, store reads and writes) and follows
//! the store for other processes' commits. Tests drive it directly through [`App`].

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::action::Action;
use super::config::{Config, ProviderKind};
use super::highlight::{Highlighted, Highlighter};
use super::jobs::LatestJob;
use super::keymap::{KeyResolver, Keymap, Mode, Resolution};
use super::loaded::{Bodies, Slot};
use super::prompts::Prompts;
use super::state::{Focus, Level, LoadedSession, SessionRow, State};
use super::update::{Effect, Msg, Settings, update};
use super::workspaces::{Workspaces, think};
use crate::config::providers as factory;
use crate::engines::memory::Memory;
use crate::engines::orchestrator::{Orchestrator, Router, TurnRequest, heads_output_tokens};
use crate::store::{Change, NodeId, SessionId, Store};
use crate::views;
use crate::views::graph_model::{NodeEntry, Tree};
use crate::views::markdown::HighlightCache;
use crate::views::theme::Theme;

/// The engine that answers questions, or why there is none.
pub type Engine = Result<(Orchestrator, ProviderKind), String>;

/// What a workspace's effects need to do their work: the store, the config and prompts, the
/// model (when there is one) and the channel back into `update`.
#[derive(Clone)]
pub struct Services {
    pub store: Store,
    pub cfg: Config,
    pub prompts: Prompts,
    /// The provider that answers, or why there is none.
    pub model: Result<ModelHandle, String>,
    pub tx: mpsc::UnboundedSender<Msg>,
    /// Search as you type: one search at a time, the newest query wins.
    pub search: LatestJob<(u64, String)>,
    /// Memory of the working directory (writes to the default scope, reads it and global),
    /// or why there is none. Every call blocks: use it on the blocking pool only.
    pub memory: Result<Memory, String>,
    /// The Memory workspace's search as you type: one search at a time, the newest wins.
    pub memory_search: LatestJob<BlockingJob>,
}

/// A job for a latest-wins queue whose requests carry their own work.
pub type BlockingJob = Box<dyn FnOnce() + Send>;

impl Services {
    /// Call settings for an engine's structured calls, as the headless commands make them:
    /// the configured effort and token cap, except that the embedded model gets no thinking
    /// pass.
    pub fn call_settings(
        &self,
        kind: ProviderKind,
        model: &str,
        effort: crate::engines::llm::Effort,
        max_tokens: u32,
    ) -> crate::engines::got::CallSettings {
        let effort = (!matches!(kind, ProviderKind::Local | ProviderKind::Auto)).then_some(effort);
        let plan = factory::plan_turn(&self.cfg, kind, effort, Some(max_tokens));
        crate::engines::got::CallSettings {
            model: model.to_string(),
            thinking: plan.thinking,
            effort: plan.effort,
            max_tokens: plan.max_tokens,
            temperature: Some(self.cfg.generation.temperature as f32),
            seed: Some(self.cfg.generation.seed),
        }
    }
}

/// The configured model, for engines that call it directly.
#[derive(Clone)]
pub struct ModelHandle {
    pub provider: std::sync::Arc<dyn crate::engines::llm::Provider>,
    pub kind: ProviderKind,
    /// Model name recorded on nodes.
    pub model: String,
}

/// How often the follower looks at the journal of a store that cannot tell of commits (a
/// redb file), and the longest it waits for a commit on one that can (PostgreSQL).
const FOLLOW_EVERY: Duration = Duration::from_millis(500);
/// Journal entries read at once.
const FOLLOW_BATCH: usize = 10_000;

/// The running TUI, minus the terminal.
pub struct App {
    pub state: State,
    /// Every workspace of the registry.
    pub workspaces: Workspaces,
    pub keymap: Keymap,
    pub theme: Theme,
    cfg: Config,
    prompts: Prompts,
    router: Router,
    engine: Engine,
    store: Store,
    resolver: KeyResolver,
    tx: mpsc::UnboundedSender<Msg>,
    rx: mpsc::UnboundedReceiver<Msg>,
    runs: Vec<JoinHandle<()>>,
    highlighter: Highlighter,
    /// Session loads: one at a time, the newest request wins.
    loads: LatestJob<SessionId>,
    /// Body reads for the open session's window: the newest request wins.
    bodies: LatestJob<(SessionId, Vec<NodeId>)>,
    search: LatestJob<(u64, String)>,
    memory: Result<Memory, String>,
    memory_search: LatestJob<BlockingJob>,
    highlighted: mpsc::UnboundedReceiver<Highlighted>,
    pub highlights: HighlightCache,
    /// Rendered answers, kept between frames.
    markdown: crate::views::markdown::MarkdownCache,
    /// Hash of the answer whose code blocks were last sent for highlighting.
    highlighted_source: u64,
    last_seq: u64,
    /// What other processes changed, from the follower thread ([`App::follow_store`]).
    followed: Option<mpsc::UnboundedReceiver<Vec<(u64, Change)>>>,
    /// Something changed since the last frame.
    pub dirty: bool,
}

/// The list's rows for `sessions`, each with its project (found once per working directory:
/// the lookup walks the directory's ancestors for a git repository).
fn session_rows(sessions: &[crate::store::Session]) -> Vec<SessionRow> {
    let mut projects: HashMap<&str, Option<String>> = HashMap::new();
    sessions
        .iter()
        .map(|s| {
            let project = crate::engines::transcript::session_cwd(s).and_then(|cwd| {
                projects
                    .entry(cwd)
                    .or_insert_with(|| crate::engines::transcript::project_of_cwd(cwd))
                    .clone()
            });
            SessionRow {
                id: s.id,
                title: s.title.clone(),
                unfinished: crate::engines::transcript::export::is_unfinished(s),
                created: s.created_at.format("%m-%d %H:%M").to_string(),
                source: s.source.as_str(),
                project,
            }
        })
        .collect()
}

impl App {
    /// A new app over `store`. Must be called inside a tokio runtime.
    pub fn new(
        store: Store,
        cfg: Config,
        keymap: Keymap,
        theme: Theme,
        engine: Engine,
        model: String,
    ) -> Self {
        let provider = match &engine {
            Ok((_, kind)) => kind.as_str().to_string(),
            Err(_) => "none".to_string(),
        };
        let mut state = State::new(provider, model, cfg.budget.session_tokens);
        if let Err(e) = &engine {
            state.notice = Some((e.clone(), Level::Error));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let (highlighter, highlighted) = Highlighter::spawn();
        let last_seq = store.last_seq().unwrap_or(0);
        let loads = {
            let (store, tx) = (store.clone(), tx.clone());
            LatestJob::new(move |id| {
                let _ = tx.send(load_session(&store, id));
            })
        };
        let bodies = {
            let (store, tx) = (store.clone(), tx.clone());
            LatestJob::new(move |(session, ids): (SessionId, Vec<NodeId>)| {
                let bodies = Bodies::read(&store, &ids).map_err(|e| e.to_string());
                let _ = tx.send(Msg::BodiesLoaded { session, bodies });
            })
        };
        let search = {
            let (store, tx) = (store.clone(), tx.clone());
            LatestJob::new(move |(seq, query): (u64, String)| {
                let _ = tx.send(super::search_ui::run_search(&store, seq, query));
            })
        };
        let memory = keyword_memory(&store, &cfg);
        Self {
            state,
            workspaces: Workspaces::default(),
            keymap,
            theme,
            router: Router::new(&cfg.routing),
            prompts: Prompts::builtin(),
            cfg,
            engine,
            store,
            resolver: KeyResolver::new(),
            tx,
            rx,
            runs: Vec::new(),
            highlighter,
            highlighted,
            loads,
            bodies,
            search,
            memory,
            memory_search: LatestJob::new(|job: BlockingJob| job()),
            highlights: HighlightCache::new(256),
            markdown: Default::default(),
            highlighted_source: 0,
            last_seq,
            followed: None,
            dirty: true,
        }
    }

    /// Uses these prompts (the config dir's overrides) instead of the built-in ones.
    pub fn with_prompts(mut self, prompts: Prompts) -> Self {
        self.prompts = prompts;
        self
    }

    /// Uses this memory (the one the config builds, with its embedder) instead of the
    /// keyword-only one made from the config alone.
    pub fn with_memory(mut self, memory: Result<Memory, String>) -> Self {
        self.memory = memory;
        self
    }

    /// What workspace effects run with.
    pub fn services(&self) -> Services {
        Services {
            store: self.store.clone(),
            cfg: self.cfg.clone(),
            prompts: self.prompts.clone(),
            model: match &self.engine {
                Ok((orch, kind)) => Ok(ModelHandle {
                    provider: orch.provider.clone(),
                    kind: *kind,
                    model: orch.model.clone(),
                }),
                Err(e) => Err(e.clone()),
            },
            tx: self.tx.clone(),
            search: self.search.clone(),
            memory: self.memory.clone(),
            memory_search: self.memory_search.clone(),
        }
    }

    /// Loads the session list and opens the most recent session.
    ///
    /// The list is read off the UI thread: on a store of thousands of sessions it takes a
    /// while, and the first frame does not wait for it.
    pub fn start(&mut self) {
        let store = self.store.clone();
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let _ = tx.send(match reload_sessions(&store) {
                Msg::SessionsLoaded(rows) => Msg::StartSessions(rows),
                other => other,
            });
        });
    }

    /// Applies a message and carries out what it asks for.
    pub fn dispatch(&mut self, msg: Msg) {
        let settings = Settings {
            keymap: &self.keymap,
            router: &self.router,
            default_effort: self.cfg.effort.default,
            provider_ready: self.engine.as_ref().map(|_| ()).map_err(Clone::clone),
        };
        let effects = update(&mut self.state, &mut self.workspaces, msg, &settings);
        self.dirty = true;
        for e in effects {
            self.run_effect(e);
        }
        self.state.jobs = self.workspaces.jobs();
        self.request_highlights();
    }

    /// Turns a terminal event into messages.
    pub fn handle_event(&mut self, ev: Event) {
        match ev {
            Event::Key(k) if k.kind != KeyEventKind::Release => {
                if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
                    return self.dispatch(Msg::Action(Action::Quit));
                }
                // Popups, the session filter and a workspace's text line take keys as text.
                if self.state.overlay.is_some()
                    || self.state.filtering
                    || self.workspaces.typing(self.state.workspace)
                {
                    self.resolver.reset();
                    return self.dispatch(Msg::Key(k));
                }
                let mode = self.mode();
                match self.resolver.feed(&self.keymap, mode, k) {
                    Resolution::Action(a) => self.dispatch(Msg::Action(a)),
                    Resolution::Pending { prefix, hints } => {
                        self.state.pending_chord = Some((prefix, hints));
                        self.dirty = true;
                    }
                    Resolution::Unbound(k) => {
                        self.state.pending_chord = None;
                        self.dispatch(Msg::Key(k))
                    }
                }
            }
            Event::Paste(text) => self.dispatch(Msg::Paste(text)),
            Event::Resize(w, h) => self.dispatch(Msg::Resize(w, h)),
            _ => {}
        }
    }

    /// The keymap mode keys are read in now.
    pub fn mode(&self) -> Mode {
        let id = self.state.workspace;
        if self.state.focus == Focus::Input && id == think::ID {
            Mode::Input
        } else if super::workspaces::spec(id).is_some_and(|s| s.section) {
            Mode::Workspace(super::action::Section::Workspace(id))
        } else {
            Mode::Normal
        }
    }

    /// The workspace of type `W`, to read its state.
    pub fn ws<W: super::workspaces::Workspace>(&self) -> &W {
        self.workspaces.get::<W>()
    }

    /// Handles every message already waiting; true if there were any.
    pub fn drain(&mut self) -> bool {
        let mut any = false;
        while let Ok(msg) = self.rx.try_recv() {
            self.dispatch(msg);
            any = true;
        }
        while let Ok(h) = self.highlighted.try_recv() {
            self.store_highlight(h);
            any = true;
        }
        while let Some(Ok(changes)) = self.followed.as_mut().map(|rx| rx.try_recv()) {
            self.apply_changes(changes);
            any = true;
        }
        any
    }

    /// Waits for the next engine, store or highlighter message and handles it.
    pub async fn next(&mut self) {
        let followed = async {
            match &mut self.followed {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            Some(msg) = self.rx.recv() => self.dispatch(msg),
            Some(h) = self.highlighted.recv() => self.store_highlight(h),
            Some(changes) = followed => self.apply_changes(changes),
        }
    }

    fn store_highlight(&mut self, h: Highlighted) {
        // An evicted block may be needed again later: let the highlighter redo it then.
        if let Some(old) = self.highlights.insert(h.key, h.lines) {
            self.highlighter.forget(old);
        }
        self.dirty = true;
    }

    /// Follows the store's journal on a thread of its own, which sends what other processes
    /// change: on PostgreSQL as soon as they commit (LISTEN/NOTIFY ends its wait), on a redb
    /// file at the next look, every `FOLLOW_EVERY`. The thread ends once the app is gone.
    pub fn follow_store(&mut self) {
        let (tx, rx) = mpsc::unbounded_channel();
        self.followed = Some(rx);
        let (store, mut since) = (self.store.clone(), self.last_seq);
        let tells = store.tells_of_changes();
        let follower = move || {
            let mut look = true;
            while !tx.is_closed() {
                if look {
                    match store.follow(since, FOLLOW_BATCH) {
                        Ok(changes) if !changes.is_empty() => {
                            since = changes.last().map_or(since, |(seq, _)| *seq);
                            if tx.send(changes).is_err() {
                                return;
                            }
                            continue;
                        }
                        Ok(_) => {}
                        Err(e) => tracing::debug!(error = %e, "following the store"),
                    }
                }
                look = store.wait_for_change(FOLLOW_EVERY) || !tells;
            }
        };
        if let Err(e) = std::thread::Builder::new()
            .name("store follower".into())
            .spawn(follower)
        {
            self.state.notice = Some((format!("cannot follow the store: {e}"), Level::Error));
        }
    }

    /// Reloads what `changes` touched; entries already seen are skipped.
    fn apply_changes(&mut self, mut changes: Vec<(u64, Change)>) {
        changes.retain(|(seq, _)| *seq > self.last_seq);
        let Some((seq, _)) = changes.last() else {
            return;
        };
        self.last_seq = *seq;
        let current = self.state.loaded.id();
        let touches_current = changes
            .iter()
            .any(|(_, c)| c.session.is_some() && c.session == current);
        self.run_effect(Effect::LoadSessions);
        let mut fx = Vec::new();
        self.workspaces.store_changed(&mut self.state, &mut fx);
        for e in fx {
            self.run_effect(e);
        }
        if touches_current
            && self.state.run.is_none()
            && let Some(id) = current
        {
            self.run_effect(Effect::LoadSession(id));
        }
        if let Some(text) = super::workspaces::memory::eviction_notice(&changes) {
            self.state.notice = Some((text, Level::Info));
        }
    }

    /// Sends the code blocks of the answer on screen to the highlighter when it changed.
    fn request_highlights(&mut self) {
        if self.state.run.is_some() || self.state.shown.response.is_empty() {
            return;
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.state.shown.response.hash(&mut h);
        let key = h.finish();
        if key == self.highlighted_source {
            return;
        }
        self.highlighted_source = key;
        let rendered = views::markdown::render(
            &self.state.shown.response,
            &Default::default(),
            &self.highlights,
        );
        for block in &rendered.code_blocks {
            if self.highlights.get(block.key).is_none() {
                self.highlighter.request(block);
            }
        }
    }

    fn run_effect(&mut self, e: Effect) {
        match e {
            Effect::Quit => {}
            Effect::Show(id) => self.dispatch(Msg::Action(Action::Workspace(id))),
            Effect::Ws(id, e) => {
                let svc = self.services();
                self.workspaces.run(id, e, &svc);
            }
            Effect::Search(e) => super::search_ui::run(e, &self.services()),
            Effect::LoadSessions => {
                let store = self.store.clone();
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || {
                    let _ = tx.send(reload_sessions(&store));
                });
            }
            Effect::LoadSession(id) => self.loads.submit(id),
            Effect::LoadBodies(session, ids) => self.bodies.submit((session, ids)),
            Effect::RenameSession(id, title) => {
                if let Some(s) = self.state.loaded.session.as_mut().filter(|s| s.id == id) {
                    s.title = title.clone();
                }
                let store = self.store.clone();
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || {
                    // The person's title: a re-import of the transcript keeps it.
                    if let Err(e) = crate::engines::transcript::title::rename(&store, id, &title) {
                        let _ = tx.send(Msg::Notice(format!("rename failed: {e}"), Level::Error));
                    }
                    let _ = tx.send(reload_sessions(&store));
                });
            }
            Effect::DeleteSession(id) => {
                // A big session takes a while to delete: the store works on it off the UI
                // thread while the frames go on.
                let store = self.store.clone();
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || {
                    let _ = tx.send(match store.write(|w| w.delete_session(id)) {
                        Ok(_) => Msg::Notice("session deleted".into(), Level::Info),
                        Err(e) => Msg::Notice(format!("delete failed: {e}"), Level::Error),
                    });
                    let _ = tx.send(reload_sessions(&store));
                });
            }
            Effect::StartTurn {
                run,
                session,
                question,
                effort,
                route,
                branch_from,
            } => self.start_turn(run, session, question, effort, route, branch_from),
        }
    }

    fn start_turn(
        &mut self,
        run: u64,
        session: Option<crate::store::SessionId>,
        question: String,
        effort: crate::engines::llm::Effort,
        route: crate::engines::orchestrator::Route,
        branch_from: Option<crate::store::NodeId>,
    ) {
        let Ok((orch, kind)) = &self.engine else {
            return;
        };
        let Some(cancel) = self
            .state
            .run
            .as_ref()
            .filter(|r| r.id == run)
            .map(|r| r.cancel.clone())
        else {
            return;
        };
        let plan = factory::plan_turn(&self.cfg, *kind, Some(effort), None);
        let req = TurnRequest {
            session,
            question,
            system: None,
            thinking: plan.thinking,
            effort: plan.effort,
            max_tokens: plan.max_tokens,
            temperature: Some(self.cfg.generation.temperature as f32),
            top_p: Some(self.cfg.generation.top_p as f32),
            seed: Some(self.cfg.generation.seed),
            branch_from,
        };
        tracing::info!(
            run,
            route = route.as_str(),
            effort = effort.as_str(),
            "starting a turn"
        );
        let orch = orch.clone();
        let tx = self.tx.clone();
        let handle = tokio::spawn(async move {
            let (ev_tx, mut ev_rx) = mpsc::unbounded_channel();
            let forward = {
                let tx = tx.clone();
                tokio::spawn(async move {
                    while let Some(event) = ev_rx.recv().await {
                        let _ = tx.send(Msg::Turn { run, event });
                    }
                })
            };
            let outcome = orch
                .run_turn(req, ev_tx, cancel)
                .await
                .map_err(|e| format!("{e:#}"));
            let _ = forward.await;
            let _ = tx.send(Msg::TurnFinished { run, outcome });
        });
        self.runs.retain(|h| !h.is_finished());
        self.runs.push(handle);
    }

    /// Draws a frame (the workspace on screen keeps its selection in view).
    pub fn draw(&mut self, f: &mut Frame) {
        let look = super::frame::Look {
            theme: &self.theme,
            keymap: &self.keymap,
            mode: self.mode(),
            highlights: &self.highlights,
            markdown: &self.markdown,
        };
        super::frame::draw(f, &mut self.state, &mut self.workspaces, &look);
        self.dirty = false;
    }

    /// Whether a run is going.
    pub fn running(&self) -> bool {
        self.state.run.is_some()
    }

    /// Cancels every run and waits (briefly) for them to mark their nodes interrupted.
    pub async fn shutdown(&mut self) {
        if let Some(r) = &self.state.run {
            r.cancel.cancel();
        }
        for h in self.runs.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(5), h).await;
        }
    }
}

/// Memory of the working directory's default scope without an embedder (keyword search
/// only), from the config alone; the TUI replaces it with the config's full one.
fn keyword_memory(store: &Store, cfg: &Config) -> Result<Memory, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
    let scope = crate::engines::memory::scope_for(cfg.memory.default_scope, &cwd, None)
        .map_err(|e| e.to_string())?;
    Ok(Memory::new(
        store.clone(),
        cfg.memory.clone(),
        None,
        scope,
        Vec::new(),
    ))
}

/// The session list, read again.
fn reload_sessions(store: &Store) -> Msg {
    match store.sessions() {
        Ok(s) => Msg::SessionsLoaded(session_rows(&s)),
        Err(e) => Msg::Notice(format!("cannot read sessions: {e}"), Level::Error),
    }
}

/// Opens a session: every node's head, and the bodies of the window on screen (a small
/// session's every body), with their decision points and the session's token use.
pub fn load_session(store: &Store, id: crate::store::SessionId) -> Msg {
    let result = (|| -> Result<Msg, crate::store::StoreError> {
        let Some(session) = store.session(id)? else {
            return Ok(Msg::Notice(
                format!("session {id} no longer exists"),
                Level::Warn,
            ));
        };
        // The graph's entries are made here, off the UI thread, one head at a time.
        let (mut slots, mut tree, mut tokens) = (Vec::new(), Tree::default(), 0);
        store.for_each_session_head(id, |h| {
            slots.push(Slot::from(&h));
            tree.push(NodeEntry::from_head(&h));
            tokens += heads_output_tokens(std::slice::from_ref(&h));
        })?;
        let mut loaded = LoadedSession::from_slots(session, slots);
        let ids: Vec<_> = if loaded.len() <= super::loaded::READ_WHOLE_UP_TO {
            loaded.slots.iter().map(|s| s.id).collect()
        } else {
            // The panes open on the last turn.
            loaded.window_wanted(loaded.len() - 1, None)
        };
        let bodies = Bodies::read(store, &ids)?;
        Ok(Msg::SessionLoaded {
            loaded,
            tree,
            bodies,
            tokens,
        })
    })();
    result.unwrap_or_else(|e| Msg::Notice(format!("cannot load session: {e}"), Level::Error))
}
