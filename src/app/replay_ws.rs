//! The Replay workspace: a recorded session played back event by event.
//!
//! The session's [`timeline`](crate::engines::replay::timeline) is loaded once; the workspace
//! keeps how many of its events have been shown (`pos`) and what they add up to. Playing
//! schedules the next event with a task that sleeps the recorded gap ÷ speed and sends a
//! [`ReplayMsg::Tick`] carrying the generation it was scheduled in; pausing, stepping,
//! jumping and speed changes start a new generation, so ticks already on their way are
//! ignored.

use std::time::Duration;

use super::action::Action;
use super::form::Answer;
use super::runtime::Services;
use super::state::{Level, State, Workspace};
use super::update::{Effect, Msg};
use crate::engines::replay::{DEFAULT_MAX_GAP_SECS, ReplayEvent, ReplayPart, Timeline, timeline};
use crate::store::{NodeId, NodeType, SessionId, SessionSource};

/// Slowest and fastest pace.
pub const MIN_SPEED: f64 = 0.25;
pub const MAX_SPEED: f64 = 64.0;
/// Waits shorter than this are not scheduled: the events are shown together.
const BATCH_BELOW: Duration = Duration::from_millis(2);
/// Most events one tick shows.
const BATCH_MAX: usize = 256;
/// Lines of a tool call or other whole node kept in the answer pane.
const QUOTE_LINES: usize = 12;

/// The text the events so far add up to, for the current turn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayShown {
    pub question: String,
    pub thinking: String,
    pub answer: String,
    /// Questions seen so far.
    pub turn: usize,
    /// Inside a recorded stream: 0 nothing yet, 1 thinking, 2 answer.
    section: u8,
}

impl ReplayShown {
    fn apply(&mut self, ev: &ReplayEvent) {
        match &ev.part {
            ReplayPart::Node {
                label,
                text,
                result,
            } => match ev.kind {
                NodeType::Query => {
                    *self = ReplayShown {
                        question: text.clone(),
                        turn: self.turn + 1,
                        ..Default::default()
                    };
                }
                NodeType::Thinking => paragraph(&mut self.thinking, text),
                NodeType::Response => paragraph(&mut self.answer, text),
                _ => {
                    let mut q = format!("**{label}**");
                    if !text.is_empty() {
                        q.push('\n');
                        q.push_str(text);
                    }
                    if let Some(r) = result {
                        q.push_str("\n→ ");
                        q.push_str(r);
                    }
                    paragraph(&mut self.answer, &quote(&q));
                }
            },
            ReplayPart::StreamStart { .. } => self.section = 0,
            ReplayPart::Thinking(t) => {
                if self.section != 1 && !self.thinking.is_empty() {
                    self.thinking.push_str("\n\n");
                }
                self.section = 1;
                self.thinking.push_str(t);
            }
            ReplayPart::Text(t) => {
                if self.section != 2 && !self.answer.is_empty() {
                    self.answer.push_str("\n\n");
                }
                self.section = 2;
                self.answer.push_str(t);
            }
            ReplayPart::ToolUse { name, input } => {
                self.section = 0;
                paragraph(
                    &mut self.answer,
                    &quote(&format!("**tool call: {name}**\n{input}")),
                );
            }
            ReplayPart::Error(e) => {
                self.section = 0;
                paragraph(&mut self.answer, &quote(&format!("**error** {e}")));
            }
            ReplayPart::StreamEnd => self.section = 0,
        }
    }
}

fn paragraph(into: &mut String, text: &str) {
    if !into.is_empty() {
        into.push_str("\n\n");
    }
    into.push_str(text);
}

/// `text` as a markdown quote, cut to [`QUOTE_LINES`] lines.
fn quote(text: &str) -> String {
    let mut out = String::new();
    let total = text.lines().count();
    for (i, line) in text.lines().take(QUOTE_LINES).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str("> ");
        out.push_str(line);
    }
    if total > QUOTE_LINES {
        out.push_str(&format!("\n> … {} more lines", total - QUOTE_LINES));
    }
    out
}

/// A short name for what an event shows.
pub fn event_label(ev: &ReplayEvent) -> String {
    match &ev.part {
        ReplayPart::Node { label, .. } => label.clone(),
        ReplayPart::StreamStart { provider } => format!("{provider} stream"),
        ReplayPart::Thinking(_) => "thinking".into(),
        ReplayPart::Text(_) => "answer".into(),
        ReplayPart::ToolUse { name, .. } => format!("tool call: {name}"),
        ReplayPart::Error(_) => "error".into(),
        ReplayPart::StreamEnd => "end of stream".into(),
    }
}

/// The text an event adds, if any.
pub fn event_text(ev: &ReplayEvent) -> &str {
    match &ev.part {
        ReplayPart::Node { text, .. }
        | ReplayPart::Thinking(text)
        | ReplayPart::Text(text)
        | ReplayPart::Error(text) => text,
        ReplayPart::ToolUse { input, .. } => input,
        ReplayPart::StreamStart { .. } | ReplayPart::StreamEnd => "",
    }
}

/// What the workspace shows and remembers.
#[derive(Debug)]
pub struct ReplayWs {
    pub session: Option<SessionId>,
    pub title: String,
    pub source: Option<SessionSource>,
    pub events: Vec<ReplayEvent>,
    /// Recorded time before each event: `elapsed[i]` is the sum of the gaps of events
    /// `..i`; one longer than `events`.
    elapsed: Vec<Duration>,
    /// Events shown so far (`0..=events.len()`).
    pub pos: usize,
    pub speed: f64,
    pub playing: bool,
    /// Bumped whenever scheduled ticks must be ignored.
    pub generation: u64,
    pub loading: bool,
    pub shown: ReplayShown,
    /// Cap on the pause between two nodes.
    pub max_gap: Duration,
}

impl Default for ReplayWs {
    fn default() -> Self {
        Self {
            session: None,
            title: String::new(),
            source: None,
            events: Vec::new(),
            elapsed: vec![Duration::ZERO],
            pos: 0,
            speed: 1.0,
            playing: false,
            generation: 0,
            loading: false,
            shown: ReplayShown::default(),
            max_gap: Duration::from_secs_f64(DEFAULT_MAX_GAP_SECS),
        }
    }
}

impl ReplayWs {
    /// Recorded time up to the current position.
    pub fn elapsed(&self) -> Duration {
        self.elapsed.get(self.pos).copied().unwrap_or_default()
    }

    /// Recorded length of the whole replay.
    pub fn total(&self) -> Duration {
        self.elapsed.last().copied().unwrap_or_default()
    }

    /// The last event shown.
    pub fn current(&self) -> Option<&ReplayEvent> {
        self.pos.checked_sub(1).and_then(|i| self.events.get(i))
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.events.len()
    }

    fn set_timeline(&mut self, tl: Timeline) {
        self.session = Some(tl.session.id);
        self.title = tl.session.title;
        self.source = Some(tl.session.source);
        let mut acc = Duration::ZERO;
        self.elapsed = std::iter::once(Duration::ZERO)
            .chain(tl.events.iter().map(|e| {
                acc += e.gap;
                acc
            }))
            .collect();
        self.events = tl.events;
        self.pos = 0;
        self.shown = ReplayShown::default();
        self.loading = false;
    }

    /// Shows the events up to `pos` (from the start when going back).
    fn seek(&mut self, pos: usize) {
        let pos = pos.min(self.events.len());
        if pos < self.pos {
            self.shown = ReplayShown::default();
            self.pos = 0;
        }
        while self.pos < pos {
            self.shown.apply(&self.events[self.pos]);
            self.pos += 1;
        }
    }

    /// Stops playing; ticks on their way are ignored.
    fn halt(&mut self) {
        self.playing = false;
        self.generation += 1;
    }

    /// The wait before the next event at the current speed.
    fn next_wait(&self) -> Duration {
        self.events
            .get(self.pos)
            .map_or(Duration::ZERO, |e| e.gap.div_f64(self.speed))
    }

    /// Schedules the next tick of a new generation.
    fn schedule(&mut self, fx: &mut Vec<Effect>) {
        self.generation += 1;
        fx.push(Effect::Replay(ReplayEffect::Wake {
            generation: self.generation,
            after: self.next_wait(),
        }));
    }
}

/// News for the workspace from its engine tasks.
#[derive(Clone, Debug)]
pub enum ReplayMsg {
    /// Open `session` in the workspace and play it (`glassbox replay SESSION`).
    Open {
        session: SessionId,
        from: Option<NodeId>,
        speed: f64,
        max_gap: Duration,
    },
    /// The timeline is ready.
    Loaded { timeline: Timeline, autoplay: bool },
    /// Loading failed.
    Failed(String),
    /// The next event is due, if `generation` is still the current one.
    Tick { generation: u64 },
}

/// Work for the runtime, carried out by [`run`].
#[derive(Clone, Debug)]
pub enum ReplayEffect {
    /// Build the timeline of `session` off the UI thread.
    Load {
        session: SessionId,
        from: Option<NodeId>,
        max_gap: Duration,
        autoplay: bool,
    },
    /// Send a tick of `generation` after `after`.
    Wake { generation: u64, after: Duration },
}

/// What a form this workspace opened is for.
#[derive(Clone, Debug, PartialEq)]
pub enum FormPurpose {}

fn clamp_speed(speed: f64) -> f64 {
    if speed.is_finite() && speed > 0.0 {
        speed.clamp(MIN_SPEED, MAX_SPEED)
    } else {
        // 0 (`--print` without pauses) is as fast as the TUI goes.
        MAX_SPEED
    }
}

/// Starts loading `session` into the workspace.
fn load(
    state: &mut State,
    session: SessionId,
    from: Option<NodeId>,
    autoplay: bool,
    fx: &mut Vec<Effect>,
) {
    let ws = &mut state.replay;
    ws.halt();
    ws.loading = true;
    fx.push(Effect::Replay(ReplayEffect::Load {
        session,
        from,
        max_gap: ws.max_gap,
        autoplay,
    }));
}

fn play(state: &mut State, fx: &mut Vec<Effect>) {
    let ws = &mut state.replay;
    if ws.events.is_empty() {
        state.notice = Some(("nothing to replay".into(), Level::Info));
        return;
    }
    if ws.at_end() {
        ws.seek(0);
    }
    ws.playing = true;
    ws.schedule(fx);
}

fn step(state: &mut State, delta: isize) {
    let ws = &mut state.replay;
    ws.halt();
    let to = ws.pos.saturating_add_signed(delta);
    ws.seek(to);
}

/// Offers a bound action to the workspace; true when it was handled here.
pub fn action(state: &mut State, a: &Action, fx: &mut Vec<Effect>) -> bool {
    if *a == Action::ReplaySession {
        match state.loaded.id() {
            Some(id) => {
                state.workspace = Workspace::Replay;
                load(state, id, None, true, fx);
            }
            None => {
                state.notice = Some((
                    "open a session in Think first, then P replays it".into(),
                    Level::Info,
                ))
            }
        }
        return true;
    }
    if state.workspace != Workspace::Replay {
        return false;
    }
    match a {
        Action::PlayPause => {
            if state.replay.playing {
                state.replay.halt();
            } else {
                play(state, fx);
            }
        }
        Action::StepForward | Action::MoveDown => step(state, 1),
        Action::StepBack | Action::MoveUp => step(state, -1),
        Action::PageDown => step(state, 10),
        Action::PageUp => step(state, -10),
        Action::Top => step(state, isize::MIN),
        Action::Bottom => step(state, isize::MAX),
        Action::SpeedUp | Action::SpeedDown => {
            let ws = &mut state.replay;
            let factor = if *a == Action::SpeedUp { 2.0 } else { 0.5 };
            ws.speed = clamp_speed(ws.speed * factor);
            if ws.playing {
                ws.schedule(fx);
            }
        }
        Action::CancelRun if state.replay.playing && state.overlay.is_none() => {
            state.replay.halt();
        }
        Action::Select => {
            let target = state.replay.session.zip(
                state
                    .replay
                    .current()
                    .or(state.replay.events.first())
                    .and_then(|e| e.node),
            );
            match target {
                Some((session, node)) => {
                    state.replay.halt();
                    super::search_ui::jump_to(state, session, node, fx);
                }
                None => return false,
            }
        }
        _ => return false,
    }
    true
}

/// Called when the workspace becomes the visible one.
pub fn on_enter(state: &mut State, fx: &mut Vec<Effect>) {
    if state.replay.session.is_none()
        && !state.replay.loading
        && let Some(id) = state.loaded.id()
    {
        load(state, id, None, false, fx);
    }
}

/// Applies news from an engine task.
pub fn on_msg(state: &mut State, m: ReplayMsg, fx: &mut Vec<Effect>) {
    match m {
        ReplayMsg::Open {
            session,
            from,
            speed,
            max_gap,
        } => {
            state.replay.speed = clamp_speed(speed);
            state.replay.max_gap = max_gap;
            state.workspace = Workspace::Replay;
            load(state, session, from, true, fx);
        }
        ReplayMsg::Loaded { timeline, autoplay } => {
            state.replay.set_timeline(timeline);
            if autoplay && !state.replay.events.is_empty() {
                play(state, fx);
            }
        }
        ReplayMsg::Failed(e) => {
            state.replay.loading = false;
            state.notice = Some((e, Level::Error));
        }
        ReplayMsg::Tick { generation } => {
            let ws = &mut state.replay;
            if !ws.playing || generation != ws.generation {
                return;
            }
            let mut shown = 0;
            loop {
                ws.seek(ws.pos + 1);
                shown += 1;
                if ws.at_end() || shown >= BATCH_MAX || ws.next_wait() >= BATCH_BELOW {
                    break;
                }
            }
            if ws.at_end() {
                ws.halt();
            } else {
                ws.schedule(fx);
            }
        }
    }
}

/// Applies a submitted form.
pub fn submit(_state: &mut State, p: FormPurpose, _answer: Answer, _fx: &mut Vec<Effect>) {
    match p {}
}

/// Carries out an effect: store reads and writes, engine tasks (spawned; results come back
/// as [`ReplayMsg`] through `svc.tx`).
pub fn run(e: ReplayEffect, svc: &Services) {
    match e {
        ReplayEffect::Load {
            session,
            from,
            max_gap,
            autoplay,
        } => {
            let store = svc.store.clone();
            let tx = svc.tx.clone();
            tokio::task::spawn_blocking(move || {
                let msg = match timeline(&store, session, from, max_gap) {
                    Ok(timeline) => ReplayMsg::Loaded { timeline, autoplay },
                    Err(e) => ReplayMsg::Failed(format!("cannot replay: {e:#}")),
                };
                let _ = tx.send(Msg::Replay(msg));
            });
        }
        ReplayEffect::Wake { generation, after } => {
            let tx = svc.tx.clone();
            tokio::spawn(async move {
                if !after.is_zero() {
                    tokio::time::sleep(after).await;
                }
                let _ = tx.send(Msg::Replay(ReplayMsg::Tick { generation }));
            });
        }
    }
}
