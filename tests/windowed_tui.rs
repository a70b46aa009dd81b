//! A large session opens windowed in the TUI: every node in the graph from its head, the
//! bodies of only the turns around the selection, and the bodies of another turn read when
//! the selection moves there.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use glassbox::app::loaded::{READ_WHOLE_UP_TO, WINDOW_BODIES};
use glassbox::app::update::Msg;
use glassbox::store::{Node, NodeId, NodeType, Session, SessionSource, Store};
use support::tui::{self, draw, pump_until};

const TURNS: usize = 700;

/// A session of `TURNS` turns: question, thinking with two steps, a tool call, an answer.
fn big_session(store: &Store) -> Vec<[NodeId; 4]> {
    let s = Session::new("big", SessionSource::Glassbox);
    let mut turns = Vec::new();
    store
        .write(|w| {
            w.put_session(&s)?;
            for i in 0..TURNS {
                let q = Node::new(s.id, NodeType::Query, format!("question {i}"));
                let mut t = Node::new(s.id, NodeType::Thinking, format!("thinking {i}"));
                t.meta.insert(
                    "steps".into(),
                    serde_json::json!([
                        {"index": 0, "kind": "analysis", "text": format!("first look {i}"), "confidence": 0.5},
                        {"index": 1, "kind": "conclusion", "text": format!("so {i}"), "confidence": 0.8}
                    ]),
                );
                let mut tool = Node::new(s.id, NodeType::ToolCall, "{\"cmd\":\"ls\"}");
                tool.meta.insert("tool".into(), "Bash".into());
                let r = Node::new(s.id, NodeType::Response, format!("answer {i}"));
                for n in [&q, &t, &tool, &r] {
                    w.put_node(n)?;
                }
                turns.push([q.id, t.id, tool.id, r.id]);
            }
            Ok(())
        })
        .unwrap();
    turns
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_session_reads_only_the_turns_on_screen() {
    const { assert!(TURNS * 4 > READ_WHOLE_UP_TO) };
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let turns = big_session(&store);
    let mut app = tui::offline_app(store);
    app.start();
    // It opens on the last turn, with that turn's bodies read.
    pump_until(&mut app, |a| {
        a.state.shown.response == format!("answer {}", TURNS - 1)
    })
    .await;
    let loaded = &app.state.loaded;
    assert_eq!(loaded.len(), TURNS * 4);
    assert_eq!(app.state.graph.node_count(), TURNS * 4);
    assert!(!loaded.is_whole());
    let read = loaded.nodes().count();
    assert!(read <= WINDOW_BODIES, "{read} bodies read");
    assert_eq!(app.state.shown.question, format!("question {}", TURNS - 1));
    assert_eq!(app.state.shown.steps, 2);
    // Tool calls are not shown in the panes, so their bodies are not read.
    assert!(loaded.node(turns[TURNS - 1][2]).is_none());
    let screen = draw(&mut app, 160, 45).backend().to_string();
    assert!(
        screen.contains(&format!("answer {}", TURNS - 1)),
        "{screen}"
    );

    // An early turn: its bodies are read when it is selected, and its thinking node's
    // steps (known from its head until then) fill in.
    let [q, t, _, r] = turns[10];
    assert!(app.state.loaded.node(r).is_none());
    assert!(app.state.select_in_graph(r));
    app.dispatch(Msg::Resize(160, 45));
    pump_until(&mut app, |a| a.state.shown.response == "answer 10").await;
    assert_eq!(app.state.shown.question, "question 10");
    assert!(app.state.loaded.node(q).is_some());
    assert!(app.state.select_in_graph(t));
    let label = |app: &glassbox::app::runtime::App| {
        app.state
            .graph
            .rows()
            .iter()
            .find(|row| row.key == glassbox::app::graph::RowKey::Node(t))
            .map(|row| row.label.clone())
    };
    pump_until(&mut app, |a| {
        label(a).as_deref() == Some("2 steps, 0 decisions")
    })
    .await;
    // What is kept stays bounded however far the selection travels.
    for i in (0..TURNS).step_by(50) {
        assert!(app.state.select_in_graph(turns[i][3]));
        app.dispatch(Msg::Resize(160, 45));
        pump_until(&mut app, |a| {
            a.state.shown.response == format!("answer {i}")
        })
        .await;
    }
    let kept = app.state.loaded.nodes().count();
    assert!(kept <= 5 * WINDOW_BODIES, "{kept} bodies kept");
}
