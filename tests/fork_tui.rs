//! The Fork workspace driven by keys against the scripted OpenAI-compatible server: fork a
//! question four ways and watch the branches stream, merge two marked branches, challenge
//! one, checkpoint one as "disagree" with a correction, debate; fork from a thinking step in
//! the Think graph; snapshots with two and four columns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use crossterm::event::KeyCode;
use glassbox::app::runtime::App;
use glassbox::app::state::Overlay;
use glassbox::app::workspaces::fork::{self, ColStatus, Fork};
use glassbox::config::Config;
use glassbox::engines::fork::ForkStyle;
use glassbox::store::{Edge, EdgeType, Node, NodeType, Session, SessionSource, Store};
use serde_json::{Value, json};
use support::tui::{app_with, draw, openai_engine, press, pump_until, type_text};
use support::{Script, ScriptedServer, Step};

// ---- scripted responses -------------------------------------------------------------

fn frame(v: Value) -> String {
    format!("data: {v}\n\n")
}

/// An OpenAI-compatible stream: reasoning first, then `text` in two deltas after `ms`.
fn answer(ms: u64, reasoning: &str, text: &str) -> Step {
    let head = frame(
        json!({"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":reasoning}}]}),
    );
    let mid = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    let mut tail = String::new();
    for part in [&text[..mid], &text[mid..]] {
        tail += &frame(json!({"choices":[{"index":0,"delta":{"content":part}}]}));
    }
    tail += &frame(json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}));
    tail += &frame(json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":7}}));
    tail += "data: [DONE]\n\n";
    Step::status(200)
        .header("content-type", "text/event-stream")
        .chunk(head)
        .chunk_after(Duration::from_millis(ms), tail)
}

/// One object that reads as a branch conclusion, a comparison, a debate answer and a
/// synthesis alike, so concurrent branches may take the scripted answers in any order.
fn universal(conclusion: &str) -> Value {
    json!({
        "conclusion": conclusion, "confidence": 0.8,
        "keyInsights": ["measure before rewriting"], "risks": ["migration downtime"],
        "opportunities": ["cleaner code"], "assumptions": ["traffic stays flat"],
        "convergencePoints": [{"topic": "incremental change", "agreementLevel": "partial",
            "styles": ["conservative", "balanced"], "summary": "start small"}],
        "divergencePoints": [{"topic": "full rewrite", "positions": [
            {"style": "conservative", "position": "no", "confidence": 0.8},
            {"style": "aggressive", "position": "yes", "confidence": 0.6}],
            "significance": "high", "recommendation": "prototype first"}],
        "metaInsight": "risk appetite decides",
        "recommendedApproach": {"style": "balanced", "rationale": "strangler pattern", "confidence": 0.7},
        "response": "I hold my position.", "positionChanged": false,
        "counterpoints": ["cost"], "concessions": ["speed"]
    })
}

fn json_answer(v: &Value) -> Step {
    answer(0, "", &format!("```json\n{v}\n```"))
}

// ---- harness --------------------------------------------------------------------------

fn app(store: Store, url: &str) -> App {
    let engine = openai_engine(&store, url, "test-model");
    app_with(
        store,
        Config::builtin().unwrap(),
        engine,
        "test-model",
        "dark",
    )
}

fn key(app: &mut App, c: char) {
    press(app, KeyCode::Char(c));
}

fn screen(app: &mut App) -> String {
    draw(app, 160, 45).backend().to_string()
}

fn idle(app: &App) -> bool {
    app.ws::<Fork>().busy.is_none()
}

const QUESTION: &str = "Should we rewrite the billing service?";

/// `4`, `N`, the question, optionally unmark styles on the list, Enter.
async fn fork_by_keys(app: &mut App, unmark: &[char]) {
    key(app, '4');
    assert_eq!(app.state.workspace, fork::ID);
    key(app, 'N');
    assert!(matches!(app.state.overlay, Some(Overlay::Form(_))));
    type_text(app, QUESTION);
    if !unmark.is_empty() {
        press(app, KeyCode::Tab);
        for c in unmark {
            key(app, *c);
        }
    }
    press(app, KeyCode::Enter);
    assert!(app.state.overlay.is_none(), "the form was refused");
    assert!(app.ws::<Fork>().busy.is_some());
}

// ---- tests ----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fork_four_ways_merge_challenge_and_checkpoint_from_the_keyboard() {
    let mut steps: Vec<Step> = (0..4)
        .map(|_| {
            answer(
                300,
                "Weighing the options…",
                &universal("Refactor in place").to_string(),
            )
        })
        .collect();
    steps.push(json_answer(&universal("Refactor in place"))); // comparison
    steps.push(json_answer(&json!({"claims": [
        {"text": "Strangle the old service module by module", "sources": ["A1", "B1"]}
    ]}))); // merge
    steps.push(json_answer(
        &json!({"conclusion": "Still refactor: the deadline is soft",
        "confidence": 0.7, "keyInsights": ["the counter-argument is weaker"], "risks": []}),
    )); // challenge
    steps.push(answer(
        0,
        "",
        "With a 2-week freeze, ship a thin adapter first.",
    )); // correction
    let server = ScriptedServer::start(Script::new(steps)).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let mut app = app(store.clone(), &server.url());
    app.start();
    press(&mut app, KeyCode::Esc); // leave the question box

    // With nothing loaded the workspace says which keys do what.
    key(&mut app, '4');
    assert!(screen(&mut app).contains("N        fork a new question"));

    fork_by_keys(&mut app, &[]).await;
    assert_eq!(app.ws::<Fork>().columns.len(), 4);
    // Branches stream side by side before any finishes.
    pump_until(&mut app, |a| {
        a.ws::<Fork>()
            .columns
            .iter()
            .filter(|c| c.thinking.contains("Weighing"))
            .count()
            == 4
    })
    .await;
    assert!(
        app.ws::<Fork>()
            .columns
            .iter()
            .all(|c| c.status == ColStatus::Running && c.result.is_none())
    );
    let streaming = screen(&mut app);
    assert!(streaming.contains("Weighing the options…"));
    // The status bar says a fork runs, though the Think run is idle.
    let status = streaming.lines().last().unwrap().to_string();
    assert!(status.contains("fork running…"), "{status}");
    pump_until(&mut app, idle).await;
    assert!(!screen(&mut app).contains("running…"));
    let ws = app.ws::<Fork>();
    assert!(ws.run.is_some());
    assert!(ws.columns.iter().all(|c| c.status == ColStatus::Done));
    assert_eq!(
        ws.columns[0].result.as_ref().unwrap().body.conclusion,
        "Refactor in place"
    );
    assert_eq!(
        ws.comparison.as_ref().unwrap().meta_insight,
        "risk appetite decides"
    );
    let text = screen(&mut app);
    for want in [
        "conservative",
        "contrarian",
        "Refactor in place",
        "≈ converge incremental change",
        "≠ diverge full rewrite",
        "Meta insight risk appetite decides",
        "Recommended balanced 70%",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    // The fork's session is now the open one, with a query and four branches.
    pump_until(&mut app, |a| a.state.loaded.len() == 5).await;
    let four = draw(&mut app, 160, 45);
    insta::assert_snapshot!("fork_4_columns_160x45", four.backend());

    // Merge: mark the first two columns, M, Enter (no focus text).
    key(&mut app, ' ');
    key(&mut app, 'l');
    key(&mut app, ' ');
    key(&mut app, 'M');
    press(&mut app, KeyCode::Enter);
    pump_until(&mut app, idle).await;
    let merge = app.ws::<Fork>().steers.last().unwrap();
    assert_eq!(merge.label, "merge conservative + aggressive");
    assert_eq!(
        merge.lines[0],
        "• Strangle the old service module by module  [A1 B1]"
    );
    assert!(merge.node.is_some());
    let reqs = server.requests();
    assert!(
        reqs[5].json.to_string().contains("Refactor in place"),
        "the merge request carries the branches"
    );

    // Challenge the focused (aggressive) branch: C, text, Enter.
    key(&mut app, 'C');
    type_text(&mut app, "The deadline is in two weeks");
    press(&mut app, KeyCode::Enter);
    pump_until(&mut app, idle).await;
    let ch = app.ws::<Fork>().steers.last().unwrap();
    assert_eq!(ch.label, "challenge aggressive");
    assert_eq!(ch.lines[0], "Still refactor: the deadline is soft");
    assert!(
        server.requests()[6]
            .json
            .to_string()
            .contains("The deadline is in two weeks")
    );

    // Checkpoint the focused branch: v, 3 (disagree), correction, Enter.
    let target = app.ws::<Fork>().columns[1].node().unwrap();
    key(&mut app, 'v');
    key(&mut app, '3');
    type_text(&mut app, "There is a code freeze in two weeks");
    press(&mut app, KeyCode::Enter);
    pump_until(&mut app, idle).await;
    let cp = app.ws::<Fork>().steers.last().unwrap();
    assert_eq!(cp.label, "checkpoint disagree → corrected branch");
    let alt = cp.node.expect("the corrected branch node");
    assert_eq!(
        cp.lines[0],
        "With a 2-week freeze, ship a thin adapter first."
    );
    let node = store.node(alt).unwrap().unwrap();
    assert_eq!(node.kind, NodeType::ForkBranch);
    assert!(
        store
            .edges_from(alt, None)
            .unwrap()
            .iter()
            .any(|e| e.kind == EdgeType::Refines && e.dst == target)
    );
    // The Think graph gets the corrected branch when the session reloads.
    pump_until(&mut app, |a| a.state.loaded.node(alt).is_some()).await;
    assert!(screen(&mut app).contains("checkpoint disagree → corrected branch"));
    assert_eq!(server.requests().len(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_columns_then_a_debate_reaches_consensus() {
    // Everything answers with the universal object: 2 branches, the comparison, debate
    // rounds and the consensus synthesis.
    let script = Script {
        steps: vec![json_answer(&universal("Refactor in place"))],
        repeat_last: true,
    };
    let server = ScriptedServer::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let mut app = app(store, &server.url());
    app.start();
    press(&mut app, KeyCode::Esc); // leave the question box

    // Unmark balanced and contrarian: two columns.
    fork_by_keys(&mut app, &['3', '4']).await;
    pump_until(&mut app, idle).await;
    let styles: Vec<ForkStyle> = app.ws::<Fork>().columns.iter().map(|c| c.style).collect();
    assert_eq!(styles, vec![ForkStyle::Conservative, ForkStyle::Aggressive]);
    assert_eq!(server.requests().len(), 3);
    pump_until(&mut app, |a| a.state.loaded.len() == 3).await;
    let two = draw(&mut app, 160, 45);
    insta::assert_snapshot!("fork_2_columns_160x45", two.backend());

    key(&mut app, 'D');
    assert_eq!(app.ws::<Fork>().kind, "debate");
    pump_until(&mut app, idle).await;
    let ws = app.ws::<Fork>();
    let c = ws.consensus.as_ref().expect("the debate ended");
    assert!(c.reached, "{c:?}");
    assert_eq!(c.text.as_deref(), Some("Refactor in place"));
    assert_eq!(ws.rounds, 3);
    assert!(ws.columns.iter().all(|c| c.debate.len() == 3));
    let text = screen(&mut app);
    assert!(text.contains("Consensus after 3 rounds"), "{text}");
    assert!(text.contains("Round 3"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fork_from_a_thinking_step_selected_in_the_think_graph() {
    let script = Script {
        steps: vec![json_answer(&universal("Use the hash map"))],
        repeat_last: true,
    };
    let server = ScriptedServer::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let s = Session::new("Hash map or sorted vector?", SessionSource::Glassbox);
    let q = Node::new(s.id, NodeType::Query, "Hash map or sorted vector?");
    let mut t = Node::new(
        s.id,
        NodeType::Thinking,
        "We need fast lookups.\n\nA sorted vector is compact.",
    );
    t.meta.insert(
        "steps".into(),
        json!([
            {"index": 0, "kind": "analysis", "text": "We need fast lookups.", "start": 0},
            {"index": 1, "kind": "evaluation", "text": "A sorted vector is compact.", "start": 23}
        ]),
    );
    store
        .write(|w| {
            w.put_session(&s)?;
            w.put_node(&q)?;
            w.put_node(&t)?;
            w.put_edge(&Edge::new(q.id, EdgeType::Influences, t.id))
        })
        .unwrap();
    let mut app = app(store.clone(), &server.url());
    app.start();
    pump_until(&mut app, |a| a.state.loaded.session.is_some()).await;
    // Select the second step in the graph: query, thinking, step 0, step 1.
    let row = app
        .state
        .graph
        .rows()
        .iter()
        .position(|r| r.label == "A sorted vector is compact.")
        .unwrap();
    app.state.graph.selected = row;
    app.state.focus = glassbox::app::state::Focus::Graph;
    key(&mut app, 'f');
    assert!(matches!(app.state.overlay, Some(Overlay::Form(_))));
    press(&mut app, KeyCode::Tab); // no text field: stays on the styles
    key(&mut app, '3');
    key(&mut app, '4');
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.state.workspace, fork::ID);
    assert_eq!(app.ws::<Fork>().kind, "fork from step");
    pump_until(&mut app, idle).await;
    assert!(
        app.ws::<Fork>()
            .columns
            .iter()
            .all(|c| c.status == ColStatus::Done),
        "{:?}",
        app.state.notice
    );
    // The branches continue the trace from the start of step 2.
    let first = server.requests()[0].json.to_string();
    assert!(first.contains("We need fast lookups."), "{first}");
    assert!(!first.contains("A sorted vector is compact."), "{first}");
    let branch = app.ws::<Fork>().columns[0].node().unwrap();
    assert!(
        store
            .edges_from(branch, None)
            .unwrap()
            .iter()
            .any(|e| e.kind == EdgeType::BranchesFrom && e.dst == t.id)
    );

    // A questionable verdict on the thinking node marks what rests on it as disputed, and the
    // Think graph shows it.
    key(&mut app, '1');
    let row = app
        .state
        .graph
        .rows()
        .iter()
        .position(|r| r.key == glassbox::app::graph::RowKey::Node(t.id))
        .unwrap();
    app.state.graph.selected = row;
    key(&mut app, 'v');
    key(&mut app, '2');
    press(&mut app, KeyCode::Enter);
    pump_until(&mut app, |a| {
        a.state
            .loaded
            .node(branch)
            .is_some_and(|n| n.meta.contains_key("disputed_by"))
    })
    .await;
    assert!(
        app.state
            .graph
            .rows()
            .iter()
            .any(|r| r.status == Some("disputed"))
    );
    assert!(screen(&mut app).contains("[disputed]"));
}
