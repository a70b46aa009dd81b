//! The TUI through its app builder: snapshots of the Think workspace, and key sequences
//! against the scripted server (type, Enter, deltas stream in, the graph grows, Esc cancels).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use chrono::TimeZone;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use glassbox::app::graph::RowKind;
use glassbox::app::keymap::Keymap;
use glassbox::app::runtime::App;
use glassbox::app::workspaces::{ledger, replay};
use glassbox::config::Config;
use glassbox::store::{
    Alternative, DecisionId, DecisionPoint, Edge, EdgeType, Node, NodeId, NodeStatus, NodeType,
    Session, SessionSource, Store,
};
use support::tui::{self, draw, press, pump_until, type_text};
use support::wire::anthropic_stream;
use support::{ChunkBy, Script, ScriptedServer, Step};

fn at(h: u32, m: u32) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc.with_ymd_and_hms(2026, 1, 2, h, m, 0).unwrap()
}

/// A store with one finished session: a question, thinking with steps and a decision point,
/// and a markdown answer with a code block.
fn seeded_store(dir: &std::path::Path) -> Store {
    let store = support::store::open(&dir.join("glassbox.redb")).unwrap();
    let mut s = Session::new("Hash map or sorted vector?", SessionSource::Glassbox);
    s.created_at = at(3, 4);
    s.updated_at = at(3, 5);
    let mut older = Session::new("Why is the sky blue?", SessionSource::Glassbox);
    older.created_at = at(1, 0);
    older.updated_at = at(1, 0);
    let mut q = Node::new(
        s.id,
        NodeType::Query,
        "Should the index be a hash map or a sorted vector?",
    );
    q.created_at = at(3, 4);
    let mut t = Node::new(
        s.id,
        NodeType::Thinking,
        "We need fast lookups by key.\n\nI could either use a hash map or a sorted vector. I'll go with the hash map because lookups are O(1).\n\nSo the answer is a hash map.",
    );
    t.confidence = Some(0.72);
    t.meta.insert(
        "steps".into(),
        serde_json::json!([
            {"index": 0, "kind": "analysis", "text": "We need fast lookups by key.", "confidence": 0.6},
            {"index": 1, "kind": "evaluation", "text": "I could either use a hash map or a sorted vector.", "confidence": 0.7},
            {"index": 2, "kind": "conclusion", "text": "So the answer is a hash map.", "confidence": 0.8}
        ]),
    );
    let mut r = Node::new(
        s.id,
        NodeType::Response,
        "Use a **hash map**:\n\n- O(1) lookups\n- no ordering needed\n\n```rust\nlet mut m = HashMap::new();\n```\n",
    );
    r.meta.insert(
        "usage".into(),
        serde_json::json!({"input_tokens": 20, "output_tokens": 42}),
    );
    let d = DecisionPoint {
        id: DecisionId::new(),
        node: t.id,
        step_number: 1,
        description: "I could either use a hash map or a sorted vector".into(),
        chosen_path: "the hash map".into(),
        alternatives: vec![Alternative {
            path: "a sorted vector".into(),
            reason_rejected: None,
        }],
        confidence: 0.65,
        created_at: at(3, 4),
    };
    store
        .write(|w| {
            w.put_session(&older)?;
            w.put_session(&s)?;
            for n in [&q, &t, &r] {
                w.put_node(n)?;
            }
            w.put_edge(&Edge::new(q.id, EdgeType::Influences, t.id))?;
            w.put_edge(&Edge::new(t.id, EdgeType::Influences, r.id))?;
            w.put_decision_point(&d)
        })
        .unwrap();
    store
}

fn app(store: Store, url: &str, theme: &str) -> App {
    app_with_keymap(store, url, theme, Keymap::builtin())
}

fn app_with_keymap(store: Store, url: &str, theme: &str, keymap: Keymap) -> App {
    let engine = tui::anthropic_engine(&store, url, "claude-test");
    let cfg = Config::builtin().unwrap();
    tui::app_with_keymap(store, cfg, engine, "claude-test", theme, keymap)
}

async fn loaded_app(dir: &std::path::Path, theme: &str) -> App {
    let store = seeded_store(dir);
    let mut app = app(store, "http://127.0.0.1:9", theme);
    app.start();
    pump_until(&mut app, |a| {
        a.state.loaded.session.is_some() && !a.state.sessions.is_empty()
    })
    .await;
    app
}

#[tokio::test]
async fn think_workspace_snapshots() {
    for (theme, w, h) in [
        ("dark", 80, 24),
        ("dark", 160, 45),
        ("light", 80, 24),
        ("light", 160, 45),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut app = loaded_app(dir.path(), theme).await;
        let term = draw(&mut app, w, h);
        insta::assert_snapshot!(format!("think_{theme}_{w}x{h}"), term.backend());
    }
}

#[tokio::test]
async fn light_and_dark_differ_only_in_colour() {
    let dir = tempfile::tempdir().unwrap();
    let mut dark = loaded_app(dir.path(), "dark").await;
    let dir2 = tempfile::tempdir().unwrap();
    let mut light = loaded_app(dir2.path(), "light").await;
    let a = draw(&mut dark, 80, 24);
    let b = draw(&mut light, 80, 24);
    assert_eq!(a.backend().to_string(), b.backend().to_string());
    assert_ne!(
        a.backend().buffer(),
        b.backend().buffer(),
        "themes must change colours"
    );
}

#[tokio::test]
async fn help_and_palette_overlays() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = loaded_app(dir.path(), "dark").await;
    press(&mut app, KeyCode::Esc); // leave the question box
    press(&mut app, KeyCode::Char('?'));
    let term = draw(&mut app, 100, 30);
    let text = term.backend().to_string();
    assert!(text.contains("Show the key bindings"), "{text}");
    insta::assert_snapshot!("help_overlay_100x30", term.backend());
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char(':'));
    type_text(&mut app, "sidebar");
    let term = draw(&mut app, 100, 30);
    insta::assert_snapshot!("palette_sidebar_100x30", term.backend());
    press(&mut app, KeyCode::Enter);
    assert!(!app.state.sidebar_visible, "the palette ran toggle_sidebar");
}

#[tokio::test]
async fn graph_navigation_and_decision_jumps() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = loaded_app(dir.path(), "dark").await;
    press(&mut app, KeyCode::Esc);
    // The selection starts on the newest node; the decision point is above it.
    press(&mut app, KeyCode::Char(']'));
    press(&mut app, KeyCode::Char('d'));
    assert_ne!(
        app.state.graph.rows()[app.state.graph.selected].kind,
        RowKind::Decision
    );
    press(&mut app, KeyCode::Char('['));
    press(&mut app, KeyCode::Char('d'));
    let row = &app.state.graph.rows()[app.state.graph.selected];
    assert_eq!(row.kind, RowKind::Decision);
    assert!(row.label.contains("the hash map"));
    // Enter shows the node's detail.
    press(&mut app, KeyCode::Enter);
    let term = draw(&mut app, 120, 40);
    assert!(
        term.backend()
            .to_string()
            .contains("I could either use a hash map")
    );
}

const THINKING: [&str; 6] = [
    "The question is which structure fits. We need fast lookups by key.\n\n",
    "I could either use a hash map or a sorted vector. ",
    "I'll go with the hash map because lookups are constant time. ",
    "I ruled out the sorted vector because inserts are slow.\n\n",
    "Perhaps ordering matters later, but probably not.\n\n",
    "Therefore the answer is a hash map.",
];

#[tokio::test]
async fn a_question_streams_and_the_graph_grows_before_the_end() {
    let body = anthropic_stream(&THINKING, "Use a hash map.");
    // Frames arrive 150 ms apart, so the run is visibly in progress while they do.
    let step = Step::sse(&body)
        .rechunk(ChunkBy::Frames)
        .delay_each(Duration::from_millis(150));
    let server = ScriptedServer::start(Script::forever(step)).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let mut app = app(store.clone(), &server.url(), "dark");
    app.start();
    type_text(&mut app, "Hash map or sorted vector?");
    press(&mut app, KeyCode::Enter);
    assert!(app.running());
    // Steps and a decision point appear while the stream is still going.
    pump_until(&mut app, |a| {
        a.running()
            && a.state
                .graph
                .rows()
                .iter()
                .any(|r| r.kind == RowKind::Decision)
    })
    .await;
    assert!(
        app.state
            .graph
            .rows()
            .iter()
            .any(|r| matches!(r.kind, RowKind::Step(_)))
    );
    let live = draw(&mut app, 160, 45).backend().to_string();
    assert!(
        live.contains("I could either use a hash map"),
        "thinking pane shows the stream"
    );
    pump_until(&mut app, |a| {
        !a.running() && a.state.loaded.session.is_some()
    })
    .await;
    let text = draw(&mut app, 160, 45).backend().to_string();
    assert!(text.contains("Use a hash map."), "{text}");
    assert!(text.contains("done"));
    // The store has the turn with its decision points.
    let sid = app.state.loaded.id().unwrap();
    let nodes = store.session_nodes(sid).unwrap();
    let kinds: Vec<_> = nodes.iter().map(|n| n.kind).collect();
    assert_eq!(
        kinds,
        vec![NodeType::Query, NodeType::Thinking, NodeType::Response]
    );
    assert_eq!(nodes[1].text, THINKING.concat());
    assert!(!store.decision_points(nodes[1].id).unwrap().is_empty());
    assert!(nodes[1].meta["steps"].as_array().unwrap().len() >= 3);
    let c = nodes[1].confidence.unwrap();
    assert!((0.15..=0.95).contains(&c));
}

#[tokio::test]
async fn esc_cancels_and_keeps_the_partial_node_marked() {
    let body = anthropic_stream(&THINKING, "never reached");
    let step = Step::sse(&body)
        .rechunk(ChunkBy::Frames)
        .delay_each(Duration::from_millis(400));
    let server = ScriptedServer::start(Script::forever(step)).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let mut app = app(store.clone(), &server.url(), "dark");
    app.start();
    type_text(&mut app, "Hash map?");
    press(&mut app, KeyCode::Enter);
    pump_until(&mut app, |a| {
        a.state.run.as_ref().is_some_and(|r| r.thinking.len() > 10)
    })
    .await;
    press(&mut app, KeyCode::Esc);
    pump_until(&mut app, |a| !a.running()).await;
    assert_eq!(app.state.phase, glassbox::app::state::RunPhase::Interrupted);
    pump_until(&mut app, |a| a.state.loaded.session.is_some()).await;
    let nodes = store.session_nodes(app.state.loaded.id().unwrap()).unwrap();
    let thinking = nodes.iter().find(|n| n.kind == NodeType::Thinking).unwrap();
    assert_eq!(thinking.status, NodeStatus::Interrupted);
    assert!(thinking.text.starts_with("The question is"));
    assert!(thinking.text.len() < THINKING.concat().len());
    assert!(
        nodes
            .iter()
            .all(|n| n.kind != NodeType::Response || n.text.is_empty())
    );
}

#[tokio::test]
async fn sessions_rename_switch_new_and_delete_from_the_keyboard() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = loaded_app(dir.path(), "dark").await;
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    press(&mut app, KeyCode::Esc);
    // Rename the open session.
    app.handle_event(Event::Key(KeyEvent::new(
        KeyCode::Char('R'),
        KeyModifiers::SHIFT,
    )));
    for _ in 0..40 {
        press(&mut app, KeyCode::Backspace);
    }
    type_text(&mut app, "Index choice");
    press(&mut app, KeyCode::Enter);
    let id = app.state.loaded.id().unwrap();
    pump_until(&mut app, |a| {
        a.state.sessions.iter().any(|s| s.title == "Index choice")
    })
    .await;
    assert_eq!(store.session(id).unwrap().unwrap().title, "Index choice");
    // Switch to the other session through the session search.
    press(&mut app, KeyCode::Char('s'));
    type_text(&mut app, "sky");
    press(&mut app, KeyCode::Enter);
    pump_until(&mut app, |a| {
        a.state
            .loaded
            .session
            .as_ref()
            .is_some_and(|s| s.title == "Why is the sky blue?")
    })
    .await;
    // Delete it: d d asks, y confirms.
    let sky = app.state.loaded.id().unwrap();
    press(&mut app, KeyCode::Char('d'));
    press(&mut app, KeyCode::Char('d'));
    assert!(matches!(
        app.state.overlay,
        Some(glassbox::app::state::Overlay::ConfirmDelete { .. })
    ));
    press(&mut app, KeyCode::Char('y'));
    pump_until(&mut app, |a| a.state.sessions.len() == 1).await;
    assert!(store.session(sky).unwrap().is_none());
    // A new session starts empty; the question box has focus.
    press(&mut app, KeyCode::Char('n'));
    assert!(app.state.loaded.session.is_none());
    assert_eq!(app.state.focus, glassbox::app::state::Focus::Input);
}

/// The seeded session open, the question box left, answering through a scripted server
/// that streams `thinking` then `answer` for every request.
async fn answering_app(
    dir: &std::path::Path,
    thinking: &[&str],
    answer: &str,
) -> (ScriptedServer, Store, App) {
    let server = ScriptedServer::start(Script::forever(Step::sse(anthropic_stream(
        thinking, answer,
    ))))
    .await;
    let store = seeded_store(dir);
    let mut app = app(store.clone(), &server.url(), "dark");
    app.start();
    pump_until(&mut app, |a| a.state.loaded.session.is_some()).await;
    press(&mut app, KeyCode::Esc);
    (server, store, app)
}

/// The newest question of the open session and the node it branches from.
fn newest_branch(store: &Store, app: &App) -> (NodeId, NodeId) {
    let nodes = store.session_nodes(app.state.loaded.id().unwrap()).unwrap();
    let query = nodes
        .iter()
        .rev()
        .find(|n| n.kind == NodeType::Query)
        .unwrap();
    let edges = store
        .edges_from(query.id, Some(EdgeType::BranchesFrom))
        .unwrap();
    assert_eq!(edges.len(), 1);
    (query.id, edges[0].dst)
}

#[tokio::test]
async fn continue_from_a_thinking_node_branches_with_the_history_up_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let (server, store, mut app) = answering_app(dir.path(), &["Branching."], "Branched.").await;
    // Select the thinking node (second row) and continue from it.
    press(&mut app, KeyCode::Char('g'));
    press(&mut app, KeyCode::Char('g'));
    press(&mut app, KeyCode::Char('j'));
    let thinking = app.state.graph.selected_node().unwrap();
    assert_eq!(
        store.node(thinking).unwrap().unwrap().kind,
        NodeType::Thinking
    );
    press(&mut app, KeyCode::Char('c'));
    assert_eq!(app.state.branch_from, Some(thinking));
    type_text(&mut app, "What if order mattered?");
    press(&mut app, KeyCode::Enter);
    pump_until(&mut app, |a| !a.running() && a.state.loaded.len() > 3).await;
    let sent = server.requests()[0].json["messages"].to_string();
    assert!(sent.contains("My reasoning so far"), "{sent}");
    assert!(sent.contains("What if order mattered?"));
    assert!(
        !sent.contains("Use a **hash map**"),
        "the answer after the branch point is not sent: {sent}"
    );
    assert_eq!(newest_branch(&store, &app).1, thinking);
}

#[tokio::test]
async fn enter_alone_after_c_answers_the_selected_question_again_as_a_branch() {
    let dir = tempfile::tempdir().unwrap();
    let (server, store, mut app) =
        answering_app(dir.path(), &["Again."], "A sorted vector, this time.").await;
    press(&mut app, KeyCode::Char('g'));
    press(&mut app, KeyCode::Char('g'));
    let query = app.state.graph.selected_node().unwrap();
    assert_eq!(store.node(query).unwrap().unwrap().kind, NodeType::Query);
    press(&mut app, KeyCode::Char('c'));
    let title = draw(&mut app, 140, 30).backend().to_string();
    assert!(title.contains("Enter alone continues"), "{title}");
    // No question typed: the selected question is asked again.
    press(&mut app, KeyCode::Enter);
    pump_until(&mut app, |a| !a.running() && a.state.loaded.len() > 3).await;
    let sent = &server.requests()[0].json["messages"];
    let messages = sent.as_array().unwrap();
    assert_eq!(messages.len(), 1, "only the question itself: {sent}");
    assert!(
        messages[0]
            .to_string()
            .contains("Should the index be a hash map or a sorted vector?")
    );
    let (again, from) = newest_branch(&store, &app);
    assert_ne!(again, query);
    assert_eq!(from, query);
    assert_eq!(app.state.branch_from, None);
}

#[tokio::test]
async fn the_ledger_workspace_follows_thoughts_written_by_another_writer() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = loaded_app(dir.path(), "dark").await;
    app.follow_store();
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('3'));
    assert_eq!(app.state.workspace, ledger::ID);
    let empty = draw(&mut app, 120, 30).backend().to_string();
    assert!(empty.contains("No MCP thoughts yet"), "{empty}");
    // Another writer (an MCP server process) records a session of thoughts.
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let s = Session::new("mcp ledger", SessionSource::Mcp);
    let mut thoughts = Vec::new();
    for i in 1..=3u32 {
        let mut n = Node::new(s.id, NodeType::LedgerThought, format!("thought number {i}"));
        n.meta.insert("thoughtNumber".into(), serde_json::json!(i));
        n.meta.insert("totalThoughts".into(), serde_json::json!(3));
        n.meta
            .insert("nextThoughtNeeded".into(), serde_json::json!(i < 3));
        thoughts.push(n);
    }
    store
        .write(|w| {
            w.put_session(&s)?;
            for n in &thoughts {
                w.put_node(n)?;
            }
            Ok(())
        })
        .unwrap();
    // The follower thread sees the commit (at once on PostgreSQL, within its 500 ms look on
    // a redb file) with no key pressed.
    let seen = std::time::Instant::now();
    pump_until(&mut app, |a| {
        a.ws::<ledger::Ledger>().model().thoughts().len() == 3
    })
    .await;
    assert!(seen.elapsed() < std::time::Duration::from_secs(5));
    let screen = draw(&mut app, 120, 30).backend().to_string();
    assert!(screen.contains("thought number 3"), "{screen}");
    assert!(screen.contains("mcp ledger"), "{screen}");
}

#[tokio::test]
async fn workspace_hints_show_the_keys_of_the_keymap_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let store = seeded_store(dir.path());
    let mut keymap = Keymap::builtin();
    keymap
        .merge(
            std::path::Path::new("keymap.toml"),
            "[replay]\n\"p\" = \"play_pause\"\n\"space\" = \"none\"\n[normal]\n\"R\" = \"none\"\n",
        )
        .unwrap();
    let mut app = app_with_keymap(store, "http://127.0.0.1:9", "dark", keymap);
    app.start();
    pump_until(&mut app, |a| {
        a.state.loaded.session.is_some() && !a.state.sessions.is_empty()
    })
    .await;
    press(&mut app, KeyCode::Esc);
    // Sessions: renaming is unbound, so it is not offered.
    press(&mut app, KeyCode::Char('2'));
    let sessions = draw(&mut app, 160, 45).backend().to_string();
    assert!(
        sessions.contains("enter opens it in Think · d d deletes"),
        "{sessions}"
    );
    assert!(!sessions.contains("renames"), "{sessions}");
    // Replay: play/pause moved from space to p.
    press(&mut app, KeyCode::Char('8'));
    pump_until(&mut app, |a| !a.ws::<replay::Replay>().events.is_empty()).await;
    let replay = draw(&mut app, 160, 45).backend().to_string();
    assert!(replay.contains(" p play/pause · h/l step"), "{replay}");
}
