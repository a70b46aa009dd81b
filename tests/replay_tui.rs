//! The Replay workspace and the `/` search popup, driven through the app with keys: a stored
//! glassbox session replays from its recorded stream step by step (forward, back, start,
//! end, speed, play to the end), an imported Claude Code session replays at its capped
//! timestamps, and a word found by `/` opens its node in the graph.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::time::Duration;

use chrono::TimeZone;
use crossterm::event::KeyCode;
use glassbox::app::runtime::App;
use glassbox::app::state::Overlay;
use glassbox::app::update::Msg;
use glassbox::app::workspaces::replay::{self, Replay, ReplayMsg, open_msg};
use glassbox::app::workspaces::think;
use glassbox::config::Config;
use glassbox::engines::replay::{ReplayPart, timeline};
use glassbox::engines::transcript::{Importer, discover};
use glassbox::store::{
    Node, NodeId, NodeType, RawStream, Session, SessionId, SessionSource, Store, StoredChunk,
    StreamId,
};
use support::tui::{app_with, draw, press, pump_until, type_text};
use support::wire::anthropic_frames;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

const THINKING: [&str; 3] = [
    "We need fast lookups by key. ",
    "A hash map gives constant time. ",
    "So the answer is a hash map.",
];
const ANSWER: [&str; 2] = ["Use a **hash map**", ": O(1) lookups."];

/// Anthropic SSE frames: start, thinking pieces, signature, answer pieces, stop.
fn frames() -> Vec<String> {
    anthropic_frames(&THINKING, &ANSWER)
}

struct Seeded {
    glassbox: SessionId,
    query: NodeId,
    thinking: NodeId,
}

/// A glassbox session whose turn was recorded frame by frame, 100 ms apart, plus the Claude
/// Code fixtures imported.
fn seeded_store(dir: &Path) -> (Store, Seeded) {
    let store = support::store::open(&dir.join("glassbox.redb")).unwrap();
    let t0 = chrono::Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap();
    let mut s = Session::new("Hash map or sorted vector?", SessionSource::Glassbox);
    s.created_at = t0;
    s.updated_at = t0 + chrono::Duration::days(3650);
    let mut q = Node::new(s.id, NodeType::Query, "Which structure for fast lookups?");
    q.created_at = t0;
    let stream = StreamId::new();
    let mut th = Node::new(s.id, NodeType::Thinking, THINKING.concat());
    th.created_at = t0 + chrono::Duration::seconds(1);
    th.raw_stream = Some(stream);
    let mut r = Node::new(s.id, NodeType::Response, ANSWER.concat());
    r.created_at = t0 + chrono::Duration::seconds(2);
    r.raw_stream = Some(stream);
    let frames = frames();
    let header = RawStream {
        id: stream,
        session: s.id,
        provider: "anthropic".into(),
        model: "claude-test".into(),
        request: serde_json::json!({}),
        created_at: th.created_at,
        nodes: vec![th.id, r.id],
        chunk_count: frames.len() as u32,
        total_bytes: frames.iter().map(|f| f.len() as u64).sum(),
    };
    store
        .write(|w| {
            w.put_session(&s)?;
            for n in [&q, &th, &r] {
                w.put_node(n)?;
            }
            w.put_raw_stream(&header)?;
            for (i, f) in frames.iter().enumerate() {
                w.put_raw_chunk(
                    stream,
                    i as u32,
                    &StoredChunk {
                        offset_us: i as u64 * 100_000,
                        bytes: f.as_bytes().to_vec(),
                    },
                )?;
            }
            Ok(())
        })
        .unwrap();
    let mut errors = Vec::new();
    let files = discover(
        &[Path::new(FIXTURES).join("claude_code/projects")],
        &mut errors,
    )
    .unwrap();
    Importer::new(store.clone())
        .unwrap()
        .import_files(&files, None)
        .unwrap();
    (
        store,
        Seeded {
            glassbox: s.id,
            query: q.id,
            thinking: th.id,
        },
    )
}

fn app(store: Store) -> App {
    let cfg = Config::builtin().unwrap();
    app_with(store, cfg, Err("no model in this test".into()), "-", "dark")
}

/// The app with the glassbox session open in Think and the question box left.
async fn started(dir: &Path) -> (App, Seeded) {
    let (store, seeded) = seeded_store(dir);
    let mut app = app(store);
    app.start();
    let want = seeded.glassbox;
    pump_until(&mut app, |a| a.state.loaded.id() == Some(want)).await;
    press(&mut app, KeyCode::Esc);
    (app, seeded)
}

#[test]
fn the_timeline_decodes_the_recorded_stream() {
    let dir = tempfile::tempdir().unwrap();
    let (store, seeded) = seeded_store(dir.path());
    let tl = timeline(&store, seeded.glassbox, None, Duration::from_secs(2)).unwrap();
    let thinking: String = tl
        .events
        .iter()
        .filter_map(|e| match &e.part {
            ReplayPart::Thinking(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let answer: String = tl
        .events
        .iter()
        .filter_map(|e| match &e.part {
            ReplayPart::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        thinking,
        THINKING.concat(),
        "byte-exact from the raw stream"
    );
    assert_eq!(answer, ANSWER.concat());
    // One event per delta frame (they were recorded apart), thinking before the answer.
    let deltas: Vec<&str> = tl
        .events
        .iter()
        .filter_map(|e| match &e.part {
            ReplayPart::Thinking(_) => Some("t"),
            ReplayPart::Text(_) => Some("a"),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["t", "t", "t", "a", "a"]);
    assert!(matches!(tl.events[1].part, ReplayPart::StreamStart { .. }));
    assert!(matches!(
        tl.events.last().unwrap().part,
        ReplayPart::StreamEnd
    ));
    assert_eq!(tl.events[0].node, Some(seeded.query));
    // The last delta is frame 9 (start, block, 3 thinking, signature, stop, block, 2 text):
    // 100 ms × 9 after the stream's start.
    let last_text: Duration = tl
        .events
        .iter()
        .take_while(|e| !matches!(&e.part, ReplayPart::Text(t) if t == ANSWER[1]))
        .chain(
            tl.events
                .iter()
                .filter(|e| matches!(&e.part, ReplayPart::Text(t) if t == ANSWER[1])),
        )
        .map(|e| e.gap)
        .sum();
    assert_eq!(last_text, Duration::from_millis(900));
    // From a node on: what comes before it is left out.
    let from = timeline(
        &store,
        seeded.glassbox,
        Some(seeded.thinking),
        Duration::ZERO,
    )
    .unwrap();
    assert!(
        from.events
            .iter()
            .all(|e| !matches!(e.part, ReplayPart::Node { .. }))
    );
}

#[tokio::test]
async fn stepping_through_a_recorded_session() {
    let dir = tempfile::tempdir().unwrap();
    let (mut app, seeded) = started(dir.path()).await;
    press(&mut app, KeyCode::Char('8'));
    assert_eq!(app.state.workspace, replay::ID);
    pump_until(&mut app, |a| !a.ws::<Replay>().events.is_empty()).await;
    let ws = app.ws::<Replay>();
    assert_eq!(ws.session, Some(seeded.glassbox));
    assert_eq!(ws.pos, 0, "opening with 8 does not play");
    assert!(!ws.playing);
    let n = ws.events.len();
    assert!(n >= 8, "{n} events");

    // Step forward to the end, remembering what each step showed.
    let mut seen = Vec::new();
    for i in 1..=n {
        press(&mut app, KeyCode::Right);
        assert_eq!(app.ws::<Replay>().pos, i);
        seen.push(app.ws::<Replay>().shown.clone());
    }
    press(&mut app, KeyCode::Right);
    assert_eq!(app.ws::<Replay>().pos, n, "no step past the end");
    let end = seen.last().unwrap();
    assert_eq!(end.question, "Which structure for fast lookups?");
    assert_eq!(end.thinking, THINKING.concat());
    assert_eq!(end.answer, ANSWER.concat());
    // The thinking grows one delta at a time.
    let lengths: Vec<usize> = seen.iter().map(|s| s.thinking.len()).collect();
    assert!(lengths.windows(2).all(|w| w[0] <= w[1]), "{lengths:?}");
    assert!(
        seen.iter()
            .any(|s| s.thinking == THINKING[..2].concat() && s.answer.is_empty())
    );
    // Stepping back shows exactly what the same position showed going forward.
    for i in (1..n).rev() {
        press(&mut app, KeyCode::Left);
        assert_eq!(app.ws::<Replay>().pos, i);
        assert_eq!(app.ws::<Replay>().shown, seen[i - 1], "step back to {i}");
    }
    // h/l step too; g g and G jump to the start and the end.
    press(&mut app, KeyCode::Char('l'));
    assert_eq!(app.ws::<Replay>().pos, 2);
    press(&mut app, KeyCode::Char('h'));
    assert_eq!(app.ws::<Replay>().pos, 1);
    press(&mut app, KeyCode::Char('G'));
    assert_eq!(app.ws::<Replay>().pos, n);
    assert_eq!(app.ws::<Replay>().shown, *end);
    press(&mut app, KeyCode::Char('g'));
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(app.ws::<Replay>().pos, 0);
    assert_eq!(app.ws::<Replay>().shown.thinking, "");

    // Speed doubles and halves within 0.25×–64×.
    assert_eq!(app.ws::<Replay>().speed, 1.0);
    press(&mut app, KeyCode::Char('+'));
    assert_eq!(app.ws::<Replay>().speed, 2.0);
    press(&mut app, KeyCode::Char('='));
    assert_eq!(app.ws::<Replay>().speed, 4.0);
    for _ in 0..6 {
        press(&mut app, KeyCode::Char('-'));
    }
    assert_eq!(app.ws::<Replay>().speed, 0.25);
    for _ in 0..12 {
        press(&mut app, KeyCode::Char('+'));
    }
    assert_eq!(app.ws::<Replay>().speed, 64.0);

    // Mid-replay, stepped: question, part of the thinking, the event list, the progress.
    for _ in 0..4 {
        press(&mut app, KeyCode::Right);
    }
    press(&mut app, KeyCode::Char('-'));
    press(&mut app, KeyCode::Char('-'));
    press(&mut app, KeyCode::Char('-'));
    press(&mut app, KeyCode::Char('-'));
    let term = draw(&mut app, 120, 30);
    let text = term.backend().to_string();
    assert!(text.contains("event 4/"), "{text}");
    assert!(text.contains("A hash map gives constant time."), "{text}");
    assert!(!app.ws::<Replay>().shown.thinking.contains("So the answer"));
    assert!(
        text.contains("So the answer"),
        "the event list shows what comes next"
    );
    insta::assert_snapshot!("replay_stepped_120x30", term.backend());

    // Space plays to the end.
    press(&mut app, KeyCode::Char(' '));
    assert!(app.ws::<Replay>().playing);
    pump_until(&mut app, |a| !a.ws::<Replay>().playing).await;
    assert_eq!(app.ws::<Replay>().pos, n);
    assert_eq!(app.ws::<Replay>().shown, *end);
    // Space at the end plays again from the start; a step pauses, and the tick already on
    // its way is ignored.
    press(&mut app, KeyCode::Char(' '));
    assert!(app.ws::<Replay>().playing);
    assert_eq!(app.ws::<Replay>().pos, 0);
    let stale = app.ws::<Replay>().generation;
    press(&mut app, KeyCode::Right);
    assert!(!app.ws::<Replay>().playing);
    let tick = |generation| Msg::Ws(replay::ID, Box::new(ReplayMsg::Tick { generation }));
    app.dispatch(tick(stale));
    app.dispatch(tick(app.ws::<Replay>().generation));
    assert_eq!(
        app.ws::<Replay>().pos,
        1,
        "ticks while paused change nothing"
    );
}

#[tokio::test]
async fn p_replays_the_open_session_and_enter_opens_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let (mut app, seeded) = started(dir.path()).await;
    press(&mut app, KeyCode::Char('P'));
    assert_eq!(app.state.workspace, replay::ID);
    pump_until(&mut app, |a| {
        !a.ws::<Replay>().events.is_empty()
            && a.ws::<Replay>().at_end()
            && !a.ws::<Replay>().playing
    })
    .await;
    assert_eq!(app.ws::<Replay>().shown.answer, ANSWER.concat());
    // Back to the first event, and Enter shows its node in Think.
    press(&mut app, KeyCode::Home);
    press(&mut app, KeyCode::Right);
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.state.workspace, think::ID);
    assert_eq!(app.state.graph.selected_node(), Some(seeded.query));
}

#[tokio::test]
async fn an_imported_claude_code_session_replays_and_is_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let (mut app, seeded) = started(dir.path()).await;

    // `/` finds the word that appears in one imported thinking block only.
    press(&mut app, KeyCode::Char('/'));
    assert!(matches!(app.state.overlay, Some(Overlay::Search(_))));
    type_text(&mut app, "zygomorphic");
    pump_until(&mut app, |a| {
        matches!(&a.state.overlay, Some(Overlay::Search(o)) if !o.hits.is_empty() && !o.searching)
    })
    .await;
    let Some(Overlay::Search(o)) = &app.state.overlay else {
        unreachable!()
    };
    assert_eq!(o.hits.len(), 1, "{:?}", o.hits);
    let hit = o.hits[0].clone();
    assert_eq!(hit.kind, NodeType::Thinking);
    assert_ne!(hit.session, seeded.glassbox);
    let term = draw(&mut app, 100, 24);
    let text = term.backend().to_string();
    assert!(text.contains("zygomorphic"), "{text}");
    insta::assert_snapshot!("search_popup_100x24", term.backend());
    // The match is highlighted.
    let buf = term.backend().buffer();
    let accent = app.theme.style(glassbox::views::theme::Role::Accent).fg;
    let lines: Vec<String> = (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect()
        })
        .collect();
    let (y, line) = lines
        .iter()
        .enumerate()
        .find(|(_, l)| l.contains("zygomorphic") && !l.contains("/ zygomorphic"))
        .unwrap();
    let x = line[..line.find("zygomorphic").unwrap()].chars().count() as u16;
    assert_eq!(buf[(x, y as u16)].fg, accent.unwrap());

    // Enter opens the hit's session in Think with the thinking node selected.
    press(&mut app, KeyCode::Enter);
    assert!(app.state.overlay.is_none());
    assert_eq!(app.state.workspace, think::ID);
    pump_until(&mut app, |a| a.state.loaded.id() == Some(hit.session)).await;
    assert_eq!(app.state.graph.selected_node(), Some(hit.node));
    assert!(app.state.shown.thinking.contains("zygomorphic"));
    assert!(app.state.pending_select.is_none());

    // It replays at its timestamps, the gaps capped.
    app.dispatch(open_msg(hit.session, 1.0, None, Duration::from_secs(2)));
    assert_eq!(app.state.workspace, replay::ID);
    pump_until(&mut app, |a| {
        a.ws::<Replay>().session == Some(hit.session) && !a.ws::<Replay>().loading
    })
    .await;
    press(&mut app, KeyCode::Char('G'));
    let ws = app.ws::<Replay>();
    assert!(ws.events.len() >= 4);
    assert!(ws.events.iter().all(|e| e.gap <= Duration::from_secs(2)));
    assert!(ws.total() > Duration::ZERO);
    assert!(
        ws.events.iter().any(
            |e| matches!(&e.part, ReplayPart::Node { label, .. } if label == "tool call: Read")
        )
    );
    let end = &ws.shown;
    assert!(!end.question.is_empty());
    assert!(end.answer.contains("Glad it helped!"), "{}", end.answer);
    // Stepping to the thinking shows it.
    let at = ws
        .events
        .iter()
        .position(|e| e.node == Some(hit.node))
        .unwrap();
    press(&mut app, KeyCode::Home);
    for _ in 0..=at {
        press(&mut app, KeyCode::Right);
    }
    assert!(app.ws::<Replay>().shown.thinking.contains("zygomorphic"));
    assert_eq!(
        app.ws::<Replay>().current().map(|e| e.kind),
        Some(NodeType::Thinking)
    );

    // Replaying another session than the one open in Think: the tab line names the replayed one.
    app.dispatch(open_msg(seeded.glassbox, 1.0, None, Duration::from_secs(2)));
    pump_until(&mut app, |a| {
        a.ws::<Replay>().session == Some(seeded.glassbox) && !a.ws::<Replay>().loading
    })
    .await;
    assert_eq!(app.state.loaded.id(), Some(hit.session));
    let replayed = app.ws::<Replay>().title.clone();
    let open = app.state.loaded.session.as_ref().unwrap().title.clone();
    assert_ne!(replayed, open);
    let tabs = draw(&mut app, 160, 45)
        .backend()
        .to_string()
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(tabs.contains(&replayed), "{tabs}");
    assert!(!tabs.contains(&open), "{tabs}");
}
