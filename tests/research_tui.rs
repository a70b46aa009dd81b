//! The Research workspace driven by keys against the scripted server: a question is planned
//! and audited (scripted JSON answers), the approval modal appears at the gate, `a`
//! approves, the plan's session search runs over a stored session, and the scripted report
//! appears with its citation, which opens that session's node.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use glassbox::app::runtime::App;
use glassbox::app::workspaces::research::{self, ModalMode, Phase, Research};
use glassbox::config::Config;
use glassbox::engines::research::{CitationKind, Status};
use glassbox::store::{Node, NodeType, Session, SessionSource, Store};
use support::tui::{app_with, draw, openai_engine, press, pump_until, type_text};
use support::{Script, ScriptedServer, Step};

const PLAN: &str = r#"{"objective":"Find what the stored sessions say about Rayleigh scattering","steps":[{"tool":"session_search","input":"rayleigh","rationale":"an earlier session covered it"}],"estimatedTokenBudget":2000}"#;
const AUDIT: &str =
    r#"{"verdict":"approved","policyViolations":[],"suggestions":["Cite the session."]}"#;
const REPORT: &str = "The sky is blue because air scatters short wavelengths most [1].";

fn answer(text: &str) -> Step {
    support::wire::openai_answer_streamed(text)
}

fn ws(app: &App) -> &Research {
    app.ws::<Research>()
}

fn status(app: &App) -> Option<Status> {
    ws(app).view.state.as_ref().map(|s| s.status)
}

/// An older session the session search finds, and a newer one the TUI opens (the run goes
/// there, and a run's own session is left out of its search).
fn seed(store: &Store) -> (Session, Node) {
    let mut old = Session::new("Sky colour", SessionSource::Glassbox);
    old.updated_at -= chrono::Duration::hours(1);
    let q = Node::new(old.id, NodeType::Query, "Why is the sky blue?");
    let r = Node::new(
        old.id,
        NodeType::Response,
        "Rayleigh scattering: air scatters blue light more than red.",
    );
    let newer = Session::new("Scratch", SessionSource::Glassbox);
    let nq = Node::new(newer.id, NodeType::Query, "hello");
    store
        .write(|w| {
            w.put_session(&old)?;
            w.put_node(&q)?;
            w.put_node(&r)?;
            w.put_session(&newer)?;
            w.put_node(&nq)
        })
        .unwrap();
    (old, r)
}

#[tokio::test]
async fn a_question_is_planned_approved_in_the_modal_and_reported_with_citations() {
    let server = ScriptedServer::start(Script::new(vec![
        answer(PLAN),
        answer(AUDIT),
        answer(REPORT),
    ]))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let (old, found) = seed(&store);
    let engine = openai_engine(&store, &server.url(), "m");
    let mut app = app_with(
        store.clone(),
        Config::builtin().unwrap(),
        engine,
        "m",
        "dark",
    );
    app.start();
    pump_until(&mut app, |a| a.state.loaded.session.is_some()).await;
    let open = app.state.loaded.id().unwrap();
    assert_ne!(open, old.id, "the newer session opens");

    // Out of the question box; the eleventh tab has no number key: alt-r opens it.
    press(&mut app, KeyCode::Esc);
    app.handle_event(Event::Key(KeyEvent::new(
        KeyCode::Char('r'),
        KeyModifiers::ALT,
    )));
    assert_eq!(app.state.workspace, research::ID, "alt-r opens Research");
    let tabs = draw(&mut app, 160, 45).backend().to_string();
    assert!(tabs.contains("0 Pipeline  Research "), "{tabs}");
    assert!(!tabs.contains("1 Research"), "{tabs}");
    pump_until(&mut app, |a| ws(a).view.phase != Phase::Loading).await;

    // The question.
    press(&mut app, KeyCode::Char('i'));
    type_text(&mut app, "Why is the sky blue?");
    press(&mut app, KeyCode::Enter);
    assert!(ws(&app).running(), "{:?}", app.state.notice);

    // Planned, audited, and stopped at the gate: the modal shows the plan and the audit.
    pump_until(&mut app, |a| ws(a).modal.is_some()).await;
    assert_eq!(status(&app), Some(Status::AwaitingApproval));
    assert_eq!(
        server.requests().len(),
        2,
        "no tool ran, no report was asked for"
    );
    let gate = draw(&mut app, 160, 45).backend().to_string();
    assert!(gate.contains("Approve this plan?"), "{gate}");
    assert!(gate.contains("session_search \"rayleigh\""), "{gate}");
    assert!(gate.contains("APPROVED"), "{gate}");
    assert!(gate.contains("Cite the session."), "{gate}");
    assert_eq!(ws(&app).modal.as_ref().unwrap().mode, ModalMode::Review);
    let st = ws(&app).view.state.clone().unwrap();
    assert!(st.plan.as_ref().unwrap().steps.iter().all(|s| !s.done()));
    assert_eq!(st.session_id, open);

    // `a` approves: the tool runs, then the report is written.
    press(&mut app, KeyCode::Char('a'));
    assert!(ws(&app).modal.is_none());
    assert!(ws(&app).running(), "{:?}", app.state.notice);
    pump_until(&mut app, |a| !ws(a).running()).await;
    assert_eq!(
        status(&app),
        Some(Status::Complete),
        "{:?}",
        app.state.notice
    );
    assert_eq!(server.requests().len(), 3);
    let st = ws(&app).view.state.clone().unwrap();
    let step = &st.plan.as_ref().unwrap().steps[0];
    assert!(
        step.output.as_deref().unwrap_or("").contains("Sky colour"),
        "{step:?}"
    );
    assert!(st.final_report.as_deref().unwrap().starts_with(REPORT));
    let c = &st.citations[0];
    assert_eq!((c.n, c.kind, c.cited), (1, CitationKind::Session, true));
    assert_eq!(c.source, format!("session/{}#{}", old.id, found.id));

    let end = draw(&mut app, 160, 45).backend().to_string();
    assert!(end.contains("✓ complete"), "{end}");
    assert!(
        end.contains("air scatters short wavelengths most [1]"),
        "{end}"
    );
    assert!(end.contains("Sources (1)"), "{end}");
    assert!(end.contains("[1] Sky colour"), "{end}");

    // Enter on the citation opens the session's node in Think.
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.state.workspace, glassbox::app::workspaces::think::ID);
    pump_until(&mut app, |a| a.state.loaded.id() == Some(old.id)).await;
    pump_until(&mut app, |a| a.state.pending_select.is_none()).await;
}
