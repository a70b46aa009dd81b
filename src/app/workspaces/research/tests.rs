#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::KeyModifiers;

use super::*;
use crate::app::update::Effect;
use crate::app::workspaces::cx;
use crate::engines::research::{ResearchEvent, ResearchState};
use crate::views::research::tests::{awaiting, complete};

fn state() -> State {
    let mut s = State::new("openai".into(), "m".into(), 0);
    s.workspace = ID;
    s
}

fn act(ws: &mut Research, st: &mut State, a: Action) -> Vec<Effect> {
    let mut fx = Vec::new();
    assert!(ws.on_action(&a, &mut cx::<Research>(st, &mut fx)), "{a:?}");
    fx
}

fn key(ws: &mut Research, st: &mut State, code: KeyCode) -> Vec<Effect> {
    let mut fx = Vec::new();
    assert!(
        ws.typing(),
        "keys reach the workspace only while it takes them"
    );
    ws.on_key(
        KeyEvent::new(code, KeyModifiers::NONE),
        &mut cx::<Research>(st, &mut fx),
    );
    fx
}

fn type_in(ws: &mut Research, st: &mut State, text: &str) {
    for c in text.chars() {
        key(ws, st, KeyCode::Char(c));
    }
}

fn msg(ws: &mut Research, st: &mut State, m: ResearchMsg) -> Vec<Effect> {
    let mut fx = Vec::new();
    ws.on_msg(m, &mut cx::<Research>(st, &mut fx));
    fx
}

fn effects(fx: &[Effect]) -> Vec<&ResearchEffect> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Ws(ID, e) => e.downcast_ref::<ResearchEffect>(),
            _ => None,
        })
        .collect()
}

/// The one decision `fx` resumes the run with.
fn decision(fx: &[Effect]) -> Decision {
    match effects(fx).as_slice() {
        [ResearchEffect::Resume { decision, .. }] => decision.clone(),
        other => panic!("{other:?}"),
    }
}

/// A question asked here, planned and audited up to the gate: the modal is open.
fn at_the_gate() -> (Research, State, ResearchState) {
    let (mut ws, mut st) = (Research::default(), state());
    act(&mut ws, &mut st, ResearchAction::Ask.action());
    type_in(&mut ws, &mut st, "Why is the sky blue?");
    let fx = key(&mut ws, &mut st, KeyCode::Enter);
    match effects(&fx).as_slice() {
        [
            ResearchEffect::Start {
                question, session, ..
            },
        ] => assert_eq!(
            (question.as_str(), *session),
            ("Why is the sky blue?", None)
        ),
        other => panic!("{other:?}"),
    }
    assert!(ws.running());
    let gate = awaiting();
    let seq = ws.seq;
    let events = [
        ResearchEvent::Start {
            run: gate.thread_id,
            session: gate.session_id,
            resumed: false,
        },
        ResearchEvent::Delta {
            node: "thinker",
            text: "{\"objective\":".into(),
            thinking: false,
        },
    ];
    for event in events {
        msg(&mut ws, &mut st, ResearchMsg::Event { seq, event });
    }
    assert_eq!(ws.view.live.as_ref().unwrap().text, "{\"objective\":");
    msg(
        &mut ws,
        &mut st,
        ResearchMsg::Event {
            seq,
            event: ResearchEvent::Research {
                node: "hitl_gate",
                state: Box::new(gate.clone()),
            },
        },
    );
    assert!(
        ws.view.live.is_none(),
        "a node's end clears its streamed text"
    );
    assert!(ws.modal.is_none(), "the modal waits for the task to stop");
    msg(
        &mut ws,
        &mut st,
        ResearchMsg::Done {
            seq,
            outcome: Ok(Box::new(gate.clone())),
        },
    );
    assert!(!ws.running());
    assert!(ws.view.awaiting());
    assert_eq!(ws.modal.as_ref().unwrap().mode, ModalMode::Review);
    (ws, st, gate)
}

#[test]
fn a_approves_and_the_tools_run() {
    let (mut ws, mut st, gate) = at_the_gate();
    let fx = key(&mut ws, &mut st, KeyCode::Char('a'));
    assert_eq!(
        decision(&fx),
        Decision {
            approve: true,
            ..Decision::default()
        }
    );
    match effects(&fx).as_slice() {
        [ResearchEffect::Resume { run, .. }] => assert_eq!(*run, gate.thread_id),
        other => panic!("{other:?}"),
    }
    assert!(ws.modal.is_none() && ws.running());
    // The first step shows as running until the engine says more.
    assert_eq!(ws.view.running_step(), Some(0));
    // The cancel key stops it.
    let cancel = ws.job.as_ref().unwrap().cancel.clone();
    act(&mut ws, &mut st, Action::CancelRun);
    assert!(cancel.is_cancelled());
}

#[test]
fn r_rejects_with_the_note_typed() {
    let (mut ws, mut st, _) = at_the_gate();
    key(&mut ws, &mut st, KeyCode::Char('r'));
    assert_eq!(ws.modal.as_ref().unwrap().mode, ModalMode::Reject);
    // Esc goes back to the review; r again, then the note.
    key(&mut ws, &mut st, KeyCode::Esc);
    assert_eq!(ws.modal.as_ref().unwrap().mode, ModalMode::Review);
    key(&mut ws, &mut st, KeyCode::Char('r'));
    type_in(&mut ws, &mut st, "use the notes only");
    let fx = key(&mut ws, &mut st, KeyCode::Enter);
    assert_eq!(
        decision(&fx),
        Decision {
            reject: Some("use the notes only".into()),
            ..Decision::default()
        }
    );
    assert!(ws.modal.is_none());
}

#[test]
fn e_edits_the_selected_steps_input_and_tab_its_tool() {
    let (mut ws, mut st, _) = at_the_gate();
    key(&mut ws, &mut st, KeyCode::Char('j'));
    key(&mut ws, &mut st, KeyCode::Char('e'));
    let m = ws.modal.as_ref().unwrap();
    assert_eq!(m.step, 1);
    assert_eq!(
        m.mode,
        ModalMode::Edit {
            tool: Tool::SessionSearch
        }
    );
    assert_eq!(m.input.text(), "sky colour", "the form is prefilled");
    for _ in 0.."colour".len() {
        key(&mut ws, &mut st, KeyCode::Backspace);
    }
    type_in(&mut ws, &mut st, "blue");
    key(&mut ws, &mut st, KeyCode::Tab);
    let fx = key(&mut ws, &mut st, KeyCode::Enter);
    assert_eq!(
        decision(&fx),
        Decision {
            edits: vec![StepEdit {
                step: 2,
                tool: Some(Tool::MemorySearch),
                input: Some("sky blue".into()),
            }],
            ..Decision::default()
        }
    );
    // The edited plan is audited again.
    assert_eq!(ws.view.state.as_ref().unwrap().status, Status::Auditing);
}

#[test]
fn t_changes_only_the_tool_and_an_unchanged_step_sends_nothing() {
    let (mut ws, mut st, _) = at_the_gate();
    key(&mut ws, &mut st, KeyCode::Char('e'));
    let fx = key(&mut ws, &mut st, KeyCode::Enter);
    assert!(effects(&fx).is_empty());
    assert_eq!(ws.modal.as_ref().unwrap().mode, ModalMode::Review);
    key(&mut ws, &mut st, KeyCode::Char('t'));
    let fx = key(&mut ws, &mut st, KeyCode::Enter);
    assert_eq!(
        decision(&fx),
        Decision {
            edits: vec![StepEdit {
                step: 1,
                tool: Some(Tool::SessionSearch),
                input: None,
            }],
            ..Decision::default()
        }
    );
}

#[test]
fn esc_leaves_the_run_paused_and_the_review_action_reopens_it() {
    let (mut ws, mut st, _) = at_the_gate();
    let fx = key(&mut ws, &mut st, KeyCode::Esc);
    assert!(effects(&fx).is_empty(), "no tool runs before approval");
    assert!(ws.modal.is_none() && !ws.typing());
    assert!(ws.view.awaiting());
    act(&mut ws, &mut st, ResearchAction::Review.action());
    assert!(ws.modal.is_some());
    key(&mut ws, &mut st, KeyCode::Esc);
    // Resume at the gate opens the modal too, rather than resuming without a decision.
    let fx = act(&mut ws, &mut st, ResearchAction::Resume.action());
    assert!(effects(&fx).is_empty());
    assert!(ws.modal.is_some());
}

#[test]
fn a_paused_run_read_from_the_store_shows_the_modal_on_demand() {
    let (mut ws, mut st) = (Research::default(), state());
    let gate = awaiting();
    let session = gate.session_id;
    ws.looked_up = Some(session);
    let run = RunView {
        run: Some(gate.thread_id),
        session: Some(session),
        question: gate.user_query.clone(),
        phase: stored_phase(&crate::store::RunStatus::Running, &gate),
        state: Some(gate),
        live: None,
    };
    msg(
        &mut ws,
        &mut st,
        ResearchMsg::Loaded {
            session,
            run: Some(Box::new(run)),
        },
    );
    assert!(ws.view.awaiting());
    assert!(ws.modal.is_none());
    act(&mut ws, &mut st, ResearchAction::Review.action());
    let fx = key(&mut ws, &mut st, KeyCode::Char('a'));
    assert!(decision(&fx).approve);
}

#[test]
fn enter_on_a_citation_opens_its_source() {
    let (mut ws, mut st) = (Research::default(), state());
    let done = complete();
    ws.view = RunView {
        run: Some(done.thread_id),
        session: Some(done.session_id),
        phase: Phase::Done,
        state: Some(done),
        ..RunView::default()
    };
    act(&mut ws, &mut st, Action::FocusNext);
    act(&mut ws, &mut st, Action::FocusNext);
    act(&mut ws, &mut st, Action::FocusNext);
    assert_eq!(ws.focus, Pane::Report);
    // A knowledge chunk: an overlay with its document, path, span and text.
    act(&mut ws, &mut st, Action::Select);
    let src = ws.source.clone().unwrap();
    assert_eq!(src.title, "[1] knowledge");
    assert!(
        src.rows
            .contains(&("document".into(), "Physics notes".into()))
    );
    assert!(
        src.rows
            .contains(&("source".into(), "notes/optics.md".into()))
    );
    assert!(
        src.rows
            .contains(&("span".into(), "characters 120–480".into()))
    );
    assert!(src.text.contains("1/λ⁴"));
    assert!(ws.typing(), "the overlay takes the keys");
    key(&mut ws, &mut st, KeyCode::Esc);
    assert!(ws.source.is_none());
    // A session's node: the Think workspace opens on it.
    act(&mut ws, &mut st, Action::MoveDown);
    act(&mut ws, &mut st, Action::MoveDown);
    act(&mut ws, &mut st, Action::MoveDown);
    assert_eq!(ws.citation, 2);
    let fx = act(&mut ws, &mut st, Action::Select);
    let (session, node) = session_target(&ws.view.citations()[2].source).unwrap();
    assert_eq!(st.workspace, crate::app::workspaces::think::ID);
    assert_eq!(st.pending_select, Some(node));
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::LoadSession(s) if *s == session)),
        "{fx:?}"
    );
    assert_eq!(session_target("session/x#y"), None);
    assert_eq!(session_target("notes/a.md"), None);
}
