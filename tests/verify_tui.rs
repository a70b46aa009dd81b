//! The Verify and Insights workspaces driven by keys against the scripted server: `V`
//! verifies the thinking node step by step, the gutter shows the verdicts and the first
//! error, `f` writes a corrected branch there, `I` asks for insights, and Enter on an
//! evidence line selects its node in the Think graph.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use chrono::TimeZone;
use crossterm::event::KeyCode;
use glassbox::app::graph::RowKey;
use glassbox::app::runtime::App;
use glassbox::app::workspaces::insights::{self, Insights};
use glassbox::app::workspaces::think;
use glassbox::app::workspaces::verify::{self, HumanMark, Verify};
use glassbox::config::Config;
use glassbox::engines::verify::Verdict;
use glassbox::store::{
    Edge, EdgeType, Node, NodeId, NodeType, RunKind, Session, SessionSource, Store,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use support::tui::{anthropic_engine, app_with, press, pump_until, type_text};
use support::{Script, ScriptedServer, Step};

fn at(h: u32, m: u32) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc.with_ymd_and_hms(2026, 1, 2, h, m, 0).unwrap()
}

struct Seeded {
    store: Store,
    query: NodeId,
    thinking: NodeId,
    response: NodeId,
}

/// One session: a question, thinking with three ThinkGraph steps (the second one wrong)
/// and an answer.
fn seeded(dir: &std::path::Path) -> Seeded {
    let store = support::store::open(&dir.join("glassbox.redb")).unwrap();
    let mut s = Session::new("Is 91 prime?", SessionSource::Glassbox);
    s.created_at = at(3, 4);
    s.updated_at = at(3, 5);
    let mut q = Node::new(s.id, NodeType::Query, "Is 91 prime?");
    q.created_at = at(3, 4);
    let text = "91 is odd.\n\nOdd numbers are prime, so 91 is prime.\n\nSo the answer is yes.";
    let mut t = Node::new(s.id, NodeType::Thinking, text);
    t.created_at = at(3, 4);
    t.confidence = Some(0.8);
    t.meta.insert(
        "steps".into(),
        json!([
            {"index": 0, "kind": "analysis", "text": "91 is odd.", "confidence": 0.9, "start": 0},
            {"index": 1, "kind": "hypothesis", "text": "Odd numbers are prime, so 91 is prime.", "confidence": 0.8, "start": 12},
            {"index": 2, "kind": "conclusion", "text": "So the answer is yes.", "confidence": 0.7, "start": 52}
        ]),
    );
    let mut r = Node::new(s.id, NodeType::Response, "Yes, 91 is prime.");
    r.created_at = at(3, 5);
    store
        .write(|w| {
            w.put_session(&s)?;
            for n in [&q, &t, &r] {
                w.put_node(n)?;
            }
            w.put_edge(&Edge::new(q.id, EdgeType::Influences, t.id))?;
            w.put_edge(&Edge::new(t.id, EdgeType::Influences, r.id))
        })
        .unwrap();
    Seeded {
        store,
        query: q.id,
        thinking: t.id,
        response: r.id,
    }
}

/// An Anthropic SSE stream answering `text`.
fn answer(text: &str) -> Step {
    let mut s = String::new();
    let mut frame = |event: &str, data: serde_json::Value| {
        s.push_str(&format!("event: {event}\ndata: {data}\n\n"));
    };
    frame(
        "message_start",
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1}}}),
    );
    frame(
        "content_block_start",
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
    );
    frame(
        "content_block_delta",
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":text}}),
    );
    frame(
        "content_block_stop",
        json!({"type":"content_block_stop","index":0}),
    );
    frame(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":30}}),
    );
    frame("message_stop", json!({"type":"message_stop"}));
    Step::sse(s)
}

fn judgements() -> Vec<Step> {
    vec![
        answer(
            r#"{"verdict": "correct", "confidence": 0.9, "explanation": "91 = 2·45 + 1", "issues": []}"#,
        ),
        answer(
            r#"{"verdict": "incorrect", "confidence": 0.85, "explanation": "91 = 7 × 13",
 "issues": [{"type": "factual_error", "description": "91 is divisible by 7", "severity": "critical"},
            {"type": "overgeneralization", "description": "not every odd number is prime", "severity": "major"}],
 "suggestedCorrection": "91 = 7 × 13, so it is not prime."}"#,
        ),
        answer(
            r#"{"verdict": "uncertain", "confidence": 0.3, "explanation": "rests on step 1", "issues": []}"#,
        ),
    ]
}

fn insights_answer(thinking: NodeId, response: NodeId) -> Step {
    let body = json!({
        "summary": "The chain generalised from one property without checking divisors.",
        "insights": [
            {"insightType": "bias_detection", "insight": "Anchoring on oddness as a test for primality", "confidence": 0.8,
             "evidence": [
                {"nodeId": thinking.to_string(), "excerpt": "Odd numbers are prime", "relevance": 0.9},
                {"nodeId": "00000000-0000-7000-8000-000000000000", "excerpt": "made up", "relevance": 0.4}
             ]},
            {"insightType": "improvement_hypothesis", "insight": "Try small divisors before concluding", "confidence": 0.7,
             "evidence": [{"nodeId": response.to_string(), "excerpt": "Yes, 91 is prime.", "relevance": 0.6}]}
        ]
    });
    answer(&body.to_string())
}

fn app(store: Store, url: &str) -> App {
    let engine = anthropic_engine(&store, url, "claude-test");
    app_with(
        store,
        Config::builtin().unwrap(),
        engine,
        "claude-test",
        "dark",
    )
}

/// The screen as text, with node ids replaced so snapshots do not depend on them.
fn screen(app: &mut App, w: u16, h: u16, ids: &[NodeId]) -> String {
    app.dispatch(glassbox::app::update::Msg::Resize(w, h));
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| app.draw(f)).unwrap();
    let mut text = term.backend().to_string();
    for id in ids {
        text = text.replace(&id.short(), "<node-id>");
    }
    text
}

#[tokio::test]
async fn verify_fork_at_the_first_error_then_insights_jump_to_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let seed = seeded(dir.path());
    let mut script = judgements();
    script.push(answer("91 = 7 × 13, so 91 is not prime; the answer is no."));
    script.push(insights_answer(seed.thinking, seed.response));
    let server = ScriptedServer::start(Script::new(script)).await;
    let store = seed.store.clone();
    let mut app = app(seed.store.clone(), &server.url());
    app.start();
    pump_until(&mut app, |a| a.state.loaded.session.is_some()).await;
    press(&mut app, KeyCode::Esc); // leave the question box

    // Entering Verify with nothing stored shows the hint.
    press(&mut app, KeyCode::Char('6'));
    pump_until(&mut app, |a| a.ws::<Verify>().hint.is_some()).await;
    assert!(screen(&mut app, 160, 45, &[]).contains("no verification stored"));

    // The response is selected: V verifies its turn's thinking node.
    press(&mut app, KeyCode::Char('1'));
    assert_eq!(app.state.graph.selected_node(), Some(seed.response));
    press(&mut app, KeyCode::Char('V'));
    assert_eq!(app.state.workspace, verify::ID);
    let status = screen(&mut app, 160, 45, &[])
        .lines()
        .last()
        .unwrap()
        .to_string();
    assert!(status.contains("verifying…"), "{status}");
    pump_until(&mut app, |a| a.ws::<Verify>().result.is_some()).await;
    let r = app.ws::<Verify>().result.as_ref().unwrap();
    assert_eq!(r.source, Some(seed.thinking));
    assert_eq!(r.first_error, 1);
    assert!(!r.valid);
    let verdicts: Vec<Verdict> = r.steps.iter().map(|s| s.verdict).collect();
    assert_eq!(
        verdicts,
        vec![Verdict::Correct, Verdict::Incorrect, Verdict::Uncertain]
    );
    // The first failing step is selected.
    assert_eq!(app.ws::<Verify>().selected, 1);
    let text = screen(&mut app, 160, 45, &[]);
    assert!(text.contains("first error at step 1"), "{text}");
    for line in [
        "✓      0 analysis",
        "✗      1 hypothesis",
        "?      2 conclusion",
    ] {
        assert!(text.contains(line), "missing {line:?}:\n{text}");
    }
    assert!(text.contains("! critical factual_error: 91 is divisible by 7"));
    assert!(text.contains("→ suggested: 91 = 7 × 13, so it is not prime."));
    assert!(text.contains("overconfidence_before_error"));
    insta::assert_snapshot!("verify_view_160x45", text);

    // Step navigation: ] e from the top lands on the failing step; Enter opens its detail.
    press(&mut app, KeyCode::Char('g'));
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(app.ws::<Verify>().selected, 0);
    type_text(&mut app, "]e");
    assert_eq!(app.ws::<Verify>().selected, 1);
    press(&mut app, KeyCode::Enter);
    assert!(screen(&mut app, 160, 45, &[]).contains("Suggested correction"));
    press(&mut app, KeyCode::Esc);
    assert!(!app.ws::<Verify>().detail);

    // f at the failing step: a disagree checkpoint with the correction and a branch.
    let step_node = app.ws::<Verify>().result.as_ref().unwrap().steps[1].node;
    press(&mut app, KeyCode::Char('f'));
    pump_until(&mut app, |a| {
        a.ws::<Verify>()
            .result
            .as_ref()
            .is_some_and(|r| r.steps[1].branch.is_some())
    })
    .await;
    let r = app.ws::<Verify>().result.as_ref().unwrap();
    assert_eq!(r.steps[1].human, Some(HumanMark::Disagree));
    assert!(r.steps[1].branch.as_deref().unwrap().contains("not prime"));
    let into_step = store.edges_to(step_node, None).unwrap();
    let branch = into_step
        .iter()
        .filter(|e| e.kind == EdgeType::Refines)
        .find_map(|e| {
            store
                .node(e.src)
                .unwrap()
                .filter(|n| n.kind == NodeType::ForkBranch)
        })
        .expect("a fork_branch node refines the step");
    assert!(branch.text.contains("91 = 7 × 13"));
    let annotation = into_step
        .iter()
        .find(|e| e.kind == EdgeType::Contradicts)
        .expect("a disagree checkpoint contradicts the step");
    assert_eq!(
        store.node(annotation.src).unwrap().unwrap().meta["correction"],
        "91 = 7 × 13, so it is not prime."
    );
    let text = screen(&mut app, 160, 45, &[]);
    assert!(text.contains("✗ H✗   1 hypothesis"), "{text}");
    assert!(text.contains("⑂ corrected branch: 91 = 7 × 13"), "{text}");

    // I → focus form → insights with evidence.
    press(&mut app, KeyCode::Char('I'));
    press(&mut app, KeyCode::Enter); // no particular focus
    assert_eq!(app.state.workspace, insights::ID);
    let status = screen(&mut app, 160, 45, &[])
        .lines()
        .last()
        .unwrap()
        .to_string();
    assert!(status.contains("insights running…"), "{status}");
    pump_until(&mut app, |a| a.ws::<Insights>().result.is_some()).await;
    let status = screen(&mut app, 160, 45, &[])
        .lines()
        .last()
        .unwrap()
        .to_string();
    assert!(!status.contains("running…"), "{status}");
    let r = app.ws::<Insights>().result.as_ref().unwrap();
    assert_eq!(r.insights.len(), 2);
    assert_eq!(r.hallucinated, 1);
    assert_eq!(r.insights[0].evidence.len(), 1);
    assert_eq!(r.insights[0].evidence[0].node, seed.thinking);
    let runs = store.session_runs(app.state.loaded.id().unwrap()).unwrap();
    assert!(runs.iter().any(|r| r.kind == RunKind::Insights));
    let text = screen(
        &mut app,
        160,
        45,
        &[seed.thinking, seed.response, seed.query],
    );
    assert!(text.contains("1 hallucinated references dropped"), "{text}");
    insta::assert_snapshot!("insights_view_160x45", text);

    // j to the first evidence line, Enter: the Think graph selects the thinking node.
    press(&mut app, KeyCode::Char('1')); // leave and come back: the run stays
    press(&mut app, KeyCode::Char('7'));
    assert!(app.ws::<Insights>().result.is_some());
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.state.workspace, think::ID);
    pump_until(&mut app, |a| {
        a.state.graph.selected_key() == Some(RowKey::Node(seed.thinking))
    })
    .await;
    // The second insight's evidence: the response.
    press(&mut app, KeyCode::Char('7'));
    type_text(&mut app, "jj");
    press(&mut app, KeyCode::Enter);
    pump_until(&mut app, |a| {
        a.state.graph.selected_key() == Some(RowKey::Node(seed.response))
    })
    .await;
    assert_eq!(app.state.workspace, think::ID);
}

#[tokio::test]
async fn the_last_verification_is_loaded_on_entering_and_a_step_without_a_correction_asks_for_one()
{
    let dir = tempfile::tempdir().unwrap();
    let seed = seeded(dir.path());
    let server = ScriptedServer::start(Script::new(vec![
        answer(r#"{"verdict": "correct", "confidence": 0.9, "explanation": "ok", "issues": []}"#),
        answer(
            r#"{"verdict": "incorrect", "confidence": 0.6, "explanation": "wrong", "issues": []}"#,
        ),
        answer(r#"{"verdict": "neutral", "confidence": 0.5, "explanation": "meh", "issues": []}"#),
    ]))
    .await;
    // A first app verifies; a second one over the same store finds the run on entering.
    {
        let mut a = app(seed.store.clone(), &server.url());
        a.start();
        pump_until(&mut a, |a| a.state.loaded.session.is_some()).await;
        press(&mut a, KeyCode::Esc);
        press(&mut a, KeyCode::Char('V'));
        pump_until(&mut a, |a| a.ws::<Verify>().result.is_some()).await;
    }
    let mut app = app(seed.store.clone(), &server.url());
    app.start();
    pump_until(&mut app, |a| a.state.loaded.session.is_some()).await;
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('6'));
    pump_until(&mut app, |a| a.ws::<Verify>().result.is_some()).await;
    let r = app.ws::<Verify>().result.as_ref().unwrap();
    assert_eq!(r.first_error, 1);
    assert_eq!(app.ws::<Verify>().selected, 1);
    let text = screen(&mut app, 160, 45, &[]);
    assert!(text.contains("~      2 conclusion"), "{text}");
    // No suggested correction: f asks for one.
    press(&mut app, KeyCode::Char('f'));
    assert!(matches!(
        app.state.overlay,
        Some(glassbox::app::state::Overlay::Form(_))
    ));
    press(&mut app, KeyCode::Esc);
    // [ e from the failing step finds none before it.
    type_text(&mut app, "[e");
    assert_eq!(app.ws::<Verify>().selected, 1);
    assert!(
        app.state
            .notice
            .as_ref()
            .unwrap()
            .0
            .contains("no more failing steps")
    );
    let _ = seed.query;
}
