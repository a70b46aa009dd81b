use serde_json::json;

use super::tasks::human_mark;
use super::*;
use crate::app::state::{LoadedSession, Overlay};
use crate::app::workspaces::cx;
use crate::engines::verify::Verdict;
use crate::store::{Node, Session, SessionSource};

/// A session of two turns: the first with a thinking node with steps and an answer, the
/// second with thinking that has none.
fn two_turns() -> (State, [NodeId; 5]) {
    let session = Session::new("primes", SessionSource::Glassbox);
    let q1 = Node::new(session.id, NodeType::Query, "Is 91 prime?");
    let mut t1 = Node::new(session.id, NodeType::Thinking, "91 is odd, so prime.");
    t1.meta.insert(
        "steps".into(),
        json!([{"index": 0, "kind": "analysis", "text": "91 is odd.", "confidence": 0.9}]),
    );
    let r1 = Node::new(session.id, NodeType::Response, "Yes.");
    let q2 = Node::new(session.id, NodeType::Query, "And 97?");
    let t2 = Node::new(session.id, NodeType::Thinking, "97 has no small divisor.");
    let ids = [q1.id, t1.id, r1.id, q2.id, t2.id];
    let mut state = State::new("anthropic".into(), "claude-test".into(), 0);
    let nodes = vec![q1, t1, r1, q2, t2];
    state.graph.load(&nodes, |_| Vec::new());
    state.loaded = LoadedSession::new(session, nodes);
    (state, ids)
}

fn step(verdict: Verdict, correction: Option<&str>) -> StepView {
    StepView {
        node: NodeId::new(),
        index: 0,
        kind: None,
        text: "a step".into(),
        verdict,
        confidence: 0.5,
        explanation: String::new(),
        issues: Vec::new(),
        correction: correction.map(str::to_string),
        human: None,
        branch: None,
        unreadable: None,
    }
}

/// A run of five steps, the second and fourth of them wrong (only the second with a
/// suggested correction).
fn run_with_errors(session: SessionId) -> Verification {
    use Verdict::*;
    Verification {
        session,
        run: RunId::new(),
        source: None,
        question: None,
        score: 0.4,
        valid: false,
        threshold: 0.7,
        first_error: 1,
        summary: String::new(),
        model: String::new(),
        patterns: Vec::new(),
        steps: vec![
            step(Correct, None),
            step(Incorrect, Some("say it right")),
            step(Neutral, None),
            step(Incorrect, None),
            step(Correct, None),
        ],
    }
}

fn act(ws: &mut Verify, state: &mut State, a: Action) -> (bool, Vec<Effect>) {
    let mut fx = Vec::new();
    let took = ws.on_action(&a, &mut cx::<Verify>(state, &mut fx));
    (took, fx)
}

fn notice(state: &State) -> &str {
    state.notice.as_ref().map_or("", |(t, _)| t.as_str())
}

#[test]
fn stored_checkpoint_words_map_to_marks() {
    assert_eq!(human_mark(" Verified "), Some(HumanMark::Agree));
    assert_eq!(human_mark("neutral"), Some(HumanMark::Questionable));
    assert_eq!(human_mark("WRONG"), Some(HumanMark::Disagree));
    assert_eq!(human_mark("maybe"), None);
}

#[test]
fn the_target_is_the_thinking_of_the_selected_turn_or_the_last_with_steps() {
    let (mut state, [_, t1, r1, q2, t2]) = two_turns();
    // Nothing selected in the graph yet would fall back to the last thinking with steps;
    // selecting the first answer picks its turn's thinking.
    assert!(state.select_in_graph(r1));
    assert_eq!(target_node(&state), Some(t1));
    // A selected thinking node is taken as it is, steps or not.
    assert!(state.select_in_graph(t2));
    assert_eq!(target_node(&state), Some(t2));
    // The second turn's question: its thinking has no steps, but it is that turn's.
    assert!(state.select_in_graph(q2));
    assert_eq!(target_node(&state), Some(t2));
    // No selection at all: the session's last thinking node that has steps.
    state.graph = Default::default();
    assert_eq!(target_node(&state), Some(t1));
}

#[test]
fn verify_node_starts_a_cancellable_job_and_shows_the_workspace() {
    let (mut state, [_, t1, r1, ..]) = two_turns();
    state.select_in_graph(r1);
    let mut ws = Verify::default();
    let (took, fx) = act(&mut ws, &mut state, VerifyAction::VerifyNode.action());
    assert!(took);
    assert_eq!(ws.progress(), Progress::Verifying { steps: 1 });
    assert_eq!(ws.job().as_deref(), Some("verifying…"));
    let cancel = match fx.as_slice() {
        [Effect::Show(ID), Effect::Ws(ID, e)] => match e.downcast_ref::<VerifyEffect>() {
            Some(VerifyEffect::Verify { node, cancel }) => {
                assert_eq!(*node, t1);
                cancel.clone()
            }
            other => panic!("not a verification: {other:?}"),
        },
        other => panic!("unexpected effects: {other:?}"),
    };
    // A second V while it runs starts nothing.
    let (_, fx) = act(&mut ws, &mut state, VerifyAction::VerifyNode.action());
    assert!(fx.is_empty());
    assert!(notice(&state).contains("already running"));
    // Esc in the workspace cancels the run.
    state.workspace = ID;
    let (took, _) = act(&mut ws, &mut state, Action::CancelRun);
    assert!(took);
    assert!(cancel.is_cancelled());
    assert_eq!(notice(&state), "cancelling the verification");
}

#[test]
fn a_thinking_node_without_steps_is_not_verified() {
    let (mut state, [.., t2]) = two_turns();
    state.select_in_graph(t2);
    let mut ws = Verify::default();
    let (took, fx) = act(&mut ws, &mut state, VerifyAction::VerifyNode.action());
    assert!(took);
    assert!(fx.is_empty());
    assert!(ws.job.is_none());
    assert!(notice(&state).contains("has no ThinkGraph steps"));
}

#[test]
fn own_keys_only_work_while_shown() {
    let (mut state, _) = two_turns();
    let mut ws = Verify {
        result: Some(run_with_errors(state.loaded.id().unwrap())),
        ..Default::default()
    };
    let (took, _) = act(&mut ws, &mut state, Action::MoveDown);
    assert!(!took);
    let (took, _) = act(&mut ws, &mut state, VerifyAction::NextError.action());
    assert!(!took);
    assert_eq!(ws.selected, 0);
}

#[test]
fn failing_steps_are_reached_both_ways_and_moves_stay_in_range() {
    let (mut state, _) = two_turns();
    state.workspace = ID;
    let mut ws = Verify {
        result: Some(run_with_errors(state.loaded.id().unwrap())),
        ..Default::default()
    };
    act(&mut ws, &mut state, VerifyAction::NextError.action());
    assert_eq!(ws.selected, 1);
    act(&mut ws, &mut state, VerifyAction::NextError.action());
    assert_eq!(ws.selected, 3);
    act(&mut ws, &mut state, VerifyAction::NextError.action());
    assert_eq!(ws.selected, 3);
    assert_eq!(notice(&state), "no more failing steps that way");
    act(&mut ws, &mut state, VerifyAction::PrevError.action());
    assert_eq!(ws.selected, 1);
    act(&mut ws, &mut state, Action::PageDown);
    assert_eq!(ws.selected, 4);
    act(&mut ws, &mut state, Action::Top);
    assert_eq!(ws.selected, 0);
    // Enter opens the detail, Esc closes it before it would cancel anything.
    act(&mut ws, &mut state, Action::Select);
    assert!(ws.detail);
    let (took, _) = act(&mut ws, &mut state, Action::CancelRun);
    assert!(took);
    assert!(!ws.detail);
    // Esc with nothing to close or cancel is left to the rest of the TUI.
    let (took, _) = act(&mut ws, &mut state, Action::CancelRun);
    assert!(!took);
}

#[test]
fn fork_at_error_uses_the_suggested_correction_or_asks_for_one() {
    let (mut state, _) = two_turns();
    state.workspace = ID;
    let r = run_with_errors(state.loaded.id().unwrap());
    let (step1, step3) = (r.steps[1].node, r.steps[3].node);
    let mut ws = Verify {
        result: Some(r),
        selected: 3,
        ..Default::default()
    };
    // Step 3 has no suggestion: a form asks, and its answer starts the branch.
    let (_, fx) = act(&mut ws, &mut state, VerifyAction::ForkAtError.action());
    assert!(fx.is_empty());
    let Some(Overlay::Form(form)) = state.overlay.take() else {
        panic!("no form opened");
    };
    assert_eq!(form.purpose.ws, ID);
    let tag = form.purpose.tag.get::<FormPurpose>().cloned();
    assert_eq!(tag, Some(FormPurpose::Correction { step: 3 }));
    let mut fx = Vec::new();
    let answer = Answer {
        choice: None,
        checked: Vec::new(),
        text: "a better step".into(),
    };
    ws.on_form(
        FormPurpose::Correction { step: 3 },
        answer,
        &mut cx::<Verify>(&mut state, &mut fx),
    );
    let forked = |fx: &[Effect]| match fx {
        [Effect::Ws(ID, e)] => match e.downcast_ref::<VerifyEffect>() {
            Some(VerifyEffect::Fork {
                step,
                node,
                correction,
                ..
            }) => (*step, *node, correction.clone()),
            other => panic!("not a fork: {other:?}"),
        },
        other => panic!("unexpected effects: {other:?}"),
    };
    assert_eq!(forked(&fx), (3, step3, "a better step".to_string()));
    assert_eq!(ws.progress(), Progress::Forking { step: 3 });
    // One corrected branch at a time.
    let (_, fx) = act(&mut ws, &mut state, VerifyAction::ForkAtError.action());
    assert!(fx.is_empty());
    // Once it is stored, step 1's suggestion is used without asking.
    let mut fx = Vec::new();
    ws.on_msg(
        VerifyMsg::ForkFailed("offline".into()),
        &mut cx::<Verify>(&mut state, &mut fx),
    );
    assert_eq!(notice(&state), "corrected branch failed: offline");
    assert!(ws.job.is_none());
    ws.selected = 1;
    let (_, fx) = act(&mut ws, &mut state, VerifyAction::ForkAtError.action());
    assert_eq!(forked(&fx), (1, step1, "say it right".to_string()));
    assert!(state.overlay.is_none());
}

#[test]
fn a_fresh_result_selects_the_first_error_and_a_plain_load_leaves_a_run_going() {
    let (mut state, [_, _, r1, ..]) = two_turns();
    let session = state.loaded.id().unwrap();
    state.select_in_graph(r1);
    let mut ws = Verify::default();
    act(&mut ws, &mut state, VerifyAction::VerifyNode.action());
    // The look-up from entering the workspace earlier answers while the run goes on.
    let mut fx = Vec::new();
    ws.on_msg(
        VerifyMsg::Loaded {
            session,
            result: None,
            fresh: false,
        },
        &mut cx::<Verify>(&mut state, &mut fx),
    );
    assert!(
        ws.job.is_some(),
        "a plain load does not end the verification"
    );
    assert_eq!(
        ws.hint.as_deref(),
        Some("no verification stored for this session")
    );
    ws.on_msg(
        VerifyMsg::Loaded {
            session,
            result: Some(Box::new(run_with_errors(session))),
            fresh: true,
        },
        &mut cx::<Verify>(&mut state, &mut fx),
    );
    assert!(ws.job.is_none());
    assert_eq!(ws.selected, 1);
    assert!(ws.hint.is_none());
    assert_eq!(
        notice(&state),
        "verified: score 0.40, first error at step 1 — f forks a corrected branch there"
    );
    assert!(matches!(fx.as_slice(), [Effect::LoadSession(s)] if *s == session));
}
