//! The Replay workspace: a recorded session played back event by event.
//!
//! The session's [`timeline`] is loaded once; the workspace keeps how many of its events have
//! been shown (`pos`) and what they add up to. Playing schedules the next event with a task
//! that sleeps the recorded gap ÷ speed and sends a [`ReplayMsg::Tick`] carrying the
//! generation it was scheduled in; pausing, stepping, jumping and speed changes start a new
//! generation, so ticks already on their way are ignored.

mod shown;
mod tasks;

use std::convert::Infallible;
use std::time::Duration;

use ratatui::Frame;
use ratatui::layout::Rect;

pub use self::shown::{ReplayShown, event_label, event_text};
use super::{Cx, Outbox, Spec, Workspace, WorkspaceId};
use crate::app::action::Action;
use crate::app::runtime::Services;
use crate::app::state::{Level, State};
use crate::app::update::Msg;
use crate::engines::replay::{DEFAULT_MAX_GAP_SECS, ReplayEvent, ReplayPart, Timeline, timeline};
use crate::store::{NodeId, SessionId, SessionSource};
use crate::views::ViewCx;
use crate::views::replay::{EventRow, ReplayView};

pub const ID: WorkspaceId = "replay";

crate::workspace_actions! { ReplayAction for ID => {
    ReplaySession => ("replay_session", "Replay the session", Anywhere),
    PlayPause => ("play_pause", "Play or pause the replay", Own),
    StepForward => ("step_forward", "Step one event forward", Own),
    StepBack => ("step_back", "Step one event back", Own),
    SpeedUp => ("speed_up", "Replay faster", Own),
    SpeedDown => ("speed_down", "Replay slower", Own),
} }

const SPEC: &Spec = &Spec {
    id: ID,
    title: "Replay",
    help_title: "Replay workspace",
    go: "Go to the Replay workspace",
    section: true,
    actions: ReplayAction::SPECS,
};

/// Slowest and fastest pace.
pub const MIN_SPEED: f64 = 0.25;
pub const MAX_SPEED: f64 = 64.0;
/// Waits shorter than this are not scheduled: the events are shown together.
const BATCH_BELOW: Duration = Duration::from_millis(2);
/// Most events one tick shows.
const BATCH_MAX: usize = 256;

/// What the workspace shows and remembers.
#[derive(Debug)]
pub struct Replay {
    pub session: Option<SessionId>,
    pub title: String,
    pub source: Option<SessionSource>,
    pub events: Vec<ReplayEvent>,
    /// The event list's line for each event.
    rows: Vec<EventRow>,
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

impl Default for Replay {
    fn default() -> Self {
        Self {
            session: None,
            title: String::new(),
            source: None,
            events: Vec::new(),
            rows: Vec::new(),
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

/// News for the workspace from its tasks, and the opener of `glassbox replay`.
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

/// Work for the runtime, carried out by [`Workspace::run`].
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

/// The message that opens `session` in the Replay workspace and plays it from node `from`
/// (the start when `None`) at `speed`, pauses between nodes capped at `max_gap`: what
/// `glassbox replay SESSION` sends the TUI it starts.
pub fn open_msg(session: SessionId, speed: f64, from: Option<NodeId>, max_gap: Duration) -> Msg {
    Msg::Ws(
        ID,
        Box::new(ReplayMsg::Open {
            session,
            from,
            speed,
            max_gap,
        }),
    )
}

/// `speed` within [`MIN_SPEED`]..=[`MAX_SPEED`]; 0 (`--print` without pauses) and nonsense
/// are as fast as the TUI goes.
fn clamp_speed(speed: f64) -> f64 {
    if speed.is_finite() && speed > 0.0 {
        speed.clamp(MIN_SPEED, MAX_SPEED)
    } else {
        MAX_SPEED
    }
}

type Ctx<'a> = Cx<'a, Replay>;

impl Replay {
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
        self.rows = tl.events.iter().map(shown::row).collect();
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
    fn schedule(&mut self, cx: &mut Ctx<'_>) {
        self.generation += 1;
        cx.run(ReplayEffect::Wake {
            generation: self.generation,
            after: self.next_wait(),
        });
    }

    /// Starts loading `session` into the workspace.
    fn load(&mut self, session: SessionId, from: Option<NodeId>, autoplay: bool, cx: &mut Ctx<'_>) {
        self.halt();
        self.loading = true;
        cx.run(ReplayEffect::Load {
            session,
            from,
            max_gap: self.max_gap,
            autoplay,
        });
    }

    fn play(&mut self, cx: &mut Ctx<'_>) {
        if self.events.is_empty() {
            cx.notice("nothing to replay", Level::Info);
            return;
        }
        if self.at_end() {
            self.seek(0);
        }
        self.playing = true;
        self.schedule(cx);
    }

    fn step(&mut self, delta: isize) {
        self.halt();
        let to = self.pos.saturating_add_signed(delta);
        self.seek(to);
    }

    fn change_speed(&mut self, factor: f64, cx: &mut Ctx<'_>) {
        self.speed = clamp_speed(self.speed * factor);
        if self.playing {
            self.schedule(cx);
        }
    }

    /// `P`: replays the session open in Think, from the start.
    fn replay_open_session(&mut self, cx: &mut Ctx<'_>) {
        match cx.state.loaded.id() {
            Some(id) => {
                cx.state.workspace = ID;
                self.load(id, None, true, cx);
            }
            None => cx.notice(
                "open a session in Think first, then P replays it",
                Level::Info,
            ),
        }
    }

    /// Enter: shows the current event's node (the first event's before any) in Think.
    fn open_node(&mut self, cx: &mut Ctx<'_>) -> bool {
        let node = self.current().or(self.events.first()).and_then(|e| e.node);
        let Some((session, node)) = self.session.zip(node) else {
            return false;
        };
        self.halt();
        let mut fx = Vec::new();
        crate::app::search_ui::jump_to(cx.state, session, node, &mut fx);
        for e in fx {
            cx.effect(e);
        }
        true
    }

    /// One tick: shows the next event, and those due within [`BATCH_BELOW`] after it, then
    /// schedules the next tick or stops at the end.
    fn tick(&mut self, generation: u64, cx: &mut Ctx<'_>) {
        if !self.playing || generation != self.generation {
            return;
        }
        let mut shown = 0;
        loop {
            self.seek(self.pos + 1);
            shown += 1;
            if self.at_end() || shown >= BATCH_MAX || self.next_wait() >= BATCH_BELOW {
                break;
            }
        }
        if self.at_end() {
            self.halt();
        } else {
            self.schedule(cx);
        }
    }
}

impl Workspace for Replay {
    const SPEC: &'static Spec = SPEC;
    type Msg = ReplayMsg;
    type Effect = ReplayEffect;
    /// Replay opens no forms.
    type Form = Infallible;

    fn on_enter(&mut self, cx: &mut Ctx<'_>) {
        if self.session.is_none()
            && !self.loading
            && let Some(id) = cx.state.loaded.id()
        {
            self.load(id, None, false, cx);
        }
    }

    fn on_action(&mut self, a: &Action, cx: &mut Ctx<'_>) -> bool {
        let own = ReplayAction::of(a);
        if own == Some(ReplayAction::ReplaySession) {
            self.replay_open_session(cx);
            return true;
        }
        if !cx.shown() {
            return false;
        }
        match own {
            Some(ReplayAction::PlayPause) => {
                if self.playing {
                    self.halt();
                } else {
                    self.play(cx);
                }
            }
            Some(ReplayAction::StepForward) => self.step(1),
            Some(ReplayAction::StepBack) => self.step(-1),
            Some(ReplayAction::SpeedUp) => self.change_speed(2.0, cx),
            Some(ReplayAction::SpeedDown) => self.change_speed(0.5, cx),
            Some(ReplayAction::ReplaySession) => {}
            None => match a {
                Action::MoveDown => self.step(1),
                Action::MoveUp => self.step(-1),
                Action::PageDown => self.step(10),
                Action::PageUp => self.step(-10),
                Action::Top => self.step(isize::MIN),
                Action::Bottom => self.step(isize::MAX),
                Action::CancelRun if self.playing && cx.state.overlay.is_none() => self.halt(),
                Action::Select => return self.open_node(cx),
                _ => return false,
            },
        }
        true
    }

    fn on_msg(&mut self, m: ReplayMsg, cx: &mut Ctx<'_>) {
        match m {
            ReplayMsg::Open {
                session,
                from,
                speed,
                max_gap,
            } => {
                self.speed = clamp_speed(speed);
                self.max_gap = max_gap;
                cx.state.workspace = ID;
                self.load(session, from, true, cx);
            }
            ReplayMsg::Loaded { timeline, autoplay } => {
                self.set_timeline(timeline);
                if autoplay && !self.events.is_empty() {
                    self.play(cx);
                }
            }
            ReplayMsg::Failed(e) => {
                self.loading = false;
                cx.notice(e, Level::Error);
            }
            ReplayMsg::Tick { generation } => self.tick(generation, cx),
        }
    }

    fn run(e: ReplayEffect, svc: &Services, out: Outbox<ReplayMsg>) {
        tasks::run(e, svc, out);
    }

    /// The replayed session names the tab line once one is loaded (it may not be the session
    /// open in Think).
    fn session_title(&self) -> Option<String> {
        self.session.map(|_| self.title.clone())
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, _state: &mut State, v: &ViewCx<'_>) {
        let view = ReplayView {
            loaded: self.session.is_some(),
            loading: self.loading,
            playing: self.playing,
            title: &self.title,
            source: self.source.map_or("", |s| s.as_str()),
            events: &self.rows,
            pos: self.pos,
            elapsed: self.elapsed(),
            total: self.total(),
            speed: self.speed,
            question: &self.shown.question,
            thinking: &self.shown.thinking,
            answer: &self.shown.answer,
            turn: self.shown.turn,
        };
        crate::views::replay::render(f, area, &view, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NodeType, Session};

    fn timeline_of(gaps_ms: &[u64]) -> Timeline {
        let events = gaps_ms
            .iter()
            .enumerate()
            .map(|(i, g)| ReplayEvent {
                gap: Duration::from_millis(*g),
                node: None,
                kind: NodeType::Thinking,
                at: chrono::Utc::now(),
                part: ReplayPart::Thinking(format!("{i} ")),
            })
            .collect();
        Timeline {
            session: Session::new("recorded", SessionSource::Glassbox),
            events,
        }
    }

    fn loaded(gaps_ms: &[u64]) -> Replay {
        let mut r = Replay::default();
        r.set_timeline(timeline_of(gaps_ms));
        r
    }

    #[test]
    fn speeds_stay_within_bounds() {
        assert_eq!(clamp_speed(1.5), 1.5);
        assert_eq!(clamp_speed(0.01), MIN_SPEED);
        assert_eq!(clamp_speed(1000.0), MAX_SPEED);
        assert_eq!(clamp_speed(0.0), MAX_SPEED);
        assert_eq!(clamp_speed(f64::NAN), MAX_SPEED);
    }

    #[test]
    fn elapsed_follows_the_position_and_seeking_back_replays_from_the_start() {
        let mut r = loaded(&[0, 100, 250, 50]);
        assert_eq!(r.total(), Duration::from_millis(400));
        r.seek(3);
        assert_eq!(r.elapsed(), Duration::from_millis(350));
        assert_eq!(r.shown.thinking, "0 1 2 ");
        r.seek(1);
        assert_eq!(r.shown.thinking, "0 ");
        assert_eq!(r.current().map(|e| e.gap), Some(Duration::ZERO));
        r.seek(99);
        assert!(r.at_end());
        assert_eq!(r.pos, 4);
        assert_eq!(r.rows.len(), 4);
    }

    #[test]
    fn a_tick_shows_the_events_due_together_and_stale_ticks_do_nothing() {
        let mut state = State::new("-".into(), "-".into(), 0);
        let mut fx = Vec::new();
        let mut cx = super::super::cx::<Replay>(&mut state, &mut fx);
        // Events 2 and 3 come right after 1; 4 comes a second later.
        let mut r = loaded(&[0, 0, 1, 1000]);
        r.play(&mut cx);
        assert!(r.playing);
        let g = r.generation;
        r.tick(g - 1, &mut cx);
        assert_eq!(r.pos, 0, "a tick of an older generation is ignored");
        r.tick(g, &mut cx);
        assert_eq!(r.pos, 3);
        assert!(r.playing);
        r.tick(r.generation, &mut cx);
        assert_eq!(r.pos, 4);
        assert!(!r.playing, "the end stops the replay");
        // Playing scheduled the first wake and the first tick the next; the end none.
        let wakes = fx
            .iter()
            .filter(|e| matches!(e, crate::app::update::Effect::Ws(ID, _)))
            .count();
        assert_eq!(wakes, 2);
    }
}
