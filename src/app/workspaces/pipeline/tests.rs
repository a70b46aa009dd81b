#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::KeyModifiers;
use serde_json::json;

use super::tasks::{Failure, Finished};
use super::*;
use crate::app::update::Effect;
use crate::app::workspaces::cx;
use crate::engines::pipeline::{Final, LayerState, PipelineEvent};
use crate::store::{NodeId, RunId};

fn state() -> State {
    let mut s = State::new("openai".into(), "m".into(), 0);
    s.workspace = ID;
    s
}

fn act(ws: &mut Pipeline, st: &mut State, a: Action) -> Vec<Effect> {
    let mut fx = Vec::new();
    assert!(ws.on_action(&a, &mut cx::<Pipeline>(st, &mut fx)), "{a:?}");
    fx
}

fn key(ws: &mut Pipeline, st: &mut State, code: KeyCode) -> Vec<Effect> {
    let mut fx = Vec::new();
    ws.on_key(
        KeyEvent::new(code, KeyModifiers::NONE),
        &mut cx::<Pipeline>(st, &mut fx),
    );
    fx
}

fn msg(ws: &mut Pipeline, st: &mut State, m: PipelineMsg) -> Vec<Effect> {
    let mut fx = Vec::new();
    ws.on_msg(m, &mut cx::<Pipeline>(st, &mut fx));
    fx
}

fn event(ws: &mut Pipeline, st: &mut State, event: PipelineEvent) {
    let seq = ws.seq;
    msg(ws, st, PipelineMsg::Event { seq, event });
}

fn effects(fx: &[Effect]) -> Vec<&PipelineEffect> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Ws(ID, e) => e.downcast_ref::<PipelineEffect>(),
            _ => None,
        })
        .collect()
}

fn start(layer: Layer) -> PipelineEvent {
    PipelineEvent::LayerStart {
        layer,
        layer_label: layer.label(),
        parallel_group: layer.parallel_group(),
        node: NodeId::new(),
        order: layer.order(),
    }
}

fn chunk(layer: Layer, text: &str, thinking: bool) -> PipelineEvent {
    PipelineEvent::LayerChunk {
        layer,
        content: text.into(),
        thinking,
        parallel_group: layer.parallel_group(),
    }
}

fn complete(layer: Layer, resumed: bool) -> PipelineEvent {
    PipelineEvent::LayerComplete {
        layer,
        layer_label: layer.label(),
        state: LayerState::Complete,
        error: None,
        resumed,
        duration_ms: 120,
    }
}

/// `i`, the question, tab to `deep`, enter.
fn ask_deep(ws: &mut Pipeline, st: &mut State, question: &str) -> Vec<Effect> {
    act(ws, st, PipelineAction::Ask.action());
    assert!(ws.typing());
    for c in question.chars() {
        key(ws, st, KeyCode::Char(c));
    }
    key(ws, st, KeyCode::Tab);
    key(ws, st, KeyCode::Tab);
    assert_eq!(ws.mode, Mode::Deep);
    key(ws, st, KeyCode::Enter)
}

#[test]
fn the_question_line_starts_a_run_in_the_mode_shown() {
    let (mut ws, mut st) = (Pipeline::default(), state());
    let fx = ask_deep(&mut ws, &mut st, "Plan a trip");
    assert!(!ws.typing());
    match effects(&fx).as_slice() {
        [
            PipelineEffect::Start {
                question,
                mode,
                session,
                ..
            },
        ] => {
            assert_eq!(
                (question.as_str(), *mode, *session),
                ("Plan a trip", Mode::Deep, None)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(ws.running());
    assert_eq!(ws.input.text(), "");
    // The deep layers wait their turn behind the classification.
    let layers: Vec<Layer> = ws.view.layers.iter().map(|p| p.layer).collect();
    assert_eq!(layers[0], Layer::Cortex);
    assert_eq!(&layers[1..], &Layer::DEEP);
    assert!(
        ws.view
            .layers
            .iter()
            .all(|p| p.status == LayerStatus::Pending)
    );
    // A second question while it runs is refused.
    ws.input.set_text("again");
    let fx = key(&mut ws, &mut st, KeyCode::Enter);
    assert!(effects(&fx).is_empty());
    // Esc cancels the run.
    let job = ws.job.as_ref().unwrap().cancel.clone();
    act(&mut ws, &mut st, Action::CancelRun);
    assert!(job.is_cancelled());
}

#[test]
fn events_stream_into_panes_and_a_resume_runs_only_unfinished_layers_again() {
    let (mut ws, mut st) = (Pipeline::default(), state());
    ask_deep(&mut ws, &mut st, "Plan a trip");
    let run = RunId::new();
    let session = crate::store::SessionId::new();
    event(
        &mut ws,
        &mut st,
        PipelineEvent::Start {
            run,
            session,
            mode: Mode::Deep,
            resumed: false,
        },
    );
    event(&mut ws, &mut st, start(Layer::Cortex));
    assert_eq!(
        ws.focus,
        Some(Unit::Layer(Layer::Cortex)),
        "the focus follows the run"
    );
    event(&mut ws, &mut st, chunk(Layer::Cortex, "hmm", true));
    event(
        &mut ws,
        &mut st,
        chunk(Layer::Cortex, "{\"domain\":", false),
    );
    event(&mut ws, &mut st, chunk(Layer::Cortex, "\"math\"}", false));
    event(
        &mut ws,
        &mut st,
        PipelineEvent::LayerArtifact {
            layer: Layer::Cortex,
            artifact: json!({"domain": "math"}),
        },
    );
    event(&mut ws, &mut st, complete(Layer::Cortex, false));
    event(
        &mut ws,
        &mut st,
        PipelineEvent::ModeSelected { mode: Mode::Deep },
    );
    event(&mut ws, &mut st, start(Layer::Decomposition));
    event(
        &mut ws,
        &mut st,
        chunk(Layer::Decomposition, "partial", false),
    );
    let cortex = ws.view.pane(Layer::Cortex).unwrap().clone();
    assert_eq!(
        (cortex.text.as_str(), cortex.thinking.as_str()),
        ("{\"domain\":\"math\"}", "hmm")
    );
    assert_eq!(cortex.status, LayerStatus::Done);
    assert_eq!(cortex.duration_ms, Some(120));
    let seq = ws.seq;
    msg(
        &mut ws,
        &mut st,
        PipelineMsg::Done {
            seq,
            outcome: Err(Failure {
                error: "cancelled".into(),
                run: Some(run),
                cancelled: true,
            }),
        },
    );
    assert!(!ws.running());
    assert_eq!(ws.view.phase, Phase::Interrupted);
    assert_eq!(
        ws.view.pane(Layer::Decomposition).unwrap().status,
        LayerStatus::Interrupted
    );

    // r resumes: the classification replays from the store (no chunks), the decomposition
    // runs again and its old text goes.
    let fx = act(&mut ws, &mut st, PipelineAction::Resume.action());
    assert!(
        matches!(effects(&fx).as_slice(), [PipelineEffect::Resume { run: r, .. }] if *r == run)
    );
    event(
        &mut ws,
        &mut st,
        PipelineEvent::Start {
            run,
            session,
            mode: Mode::Deep,
            resumed: true,
        },
    );
    event(&mut ws, &mut st, start(Layer::Cortex));
    event(&mut ws, &mut st, complete(Layer::Cortex, true));
    event(&mut ws, &mut st, start(Layer::Decomposition));
    event(
        &mut ws,
        &mut st,
        chunk(Layer::Decomposition, "fresh", false),
    );
    assert_eq!(ws.view.pane(Layer::Cortex).unwrap().text, cortex.text);
    assert!(ws.view.pane(Layer::Cortex).unwrap().resumed);
    assert_eq!(ws.view.pane(Layer::Decomposition).unwrap().text, "fresh");
    event(
        &mut ws,
        &mut st,
        PipelineEvent::FinalChunk {
            content: "answer".into(),
        },
    );
    event(
        &mut ws,
        &mut st,
        PipelineEvent::FinalComplete(Final {
            confidence: Some(88),
            mode: Some(Mode::Deep),
            ..Final::default()
        }),
    );
    let seq = ws.seq;
    let fx = msg(
        &mut ws,
        &mut st,
        PipelineMsg::Done {
            seq,
            outcome: Ok(Finished { run, session }),
        },
    );
    assert_eq!(ws.view.phase, Phase::Done);
    assert_eq!(ws.focus, Some(Unit::Final));
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::LoadSession(s) if *s == session))
    );
    // A finished run is not resumed.
    let fx = act(&mut ws, &mut st, PipelineAction::Resume.action());
    assert!(effects(&fx).is_empty());
}

#[test]
fn moving_the_focus_stops_following_and_folding_flips_the_focused_pane() {
    let (mut ws, mut st) = (Pipeline::default(), state());
    ask_deep(&mut ws, &mut st, "q");
    event(&mut ws, &mut st, start(Layer::Cortex));
    event(&mut ws, &mut st, complete(Layer::Cortex, false));
    act(&mut ws, &mut st, Action::MoveDown);
    assert_eq!(ws.focus, Some(Unit::Layer(Layer::Decomposition)));
    event(&mut ws, &mut st, start(Layer::PrimarySolver));
    assert_eq!(
        ws.focus,
        Some(Unit::Layer(Layer::Decomposition)),
        "no longer following"
    );
    act(&mut ws, &mut st, PipelineAction::ToggleLayer.action());
    assert_eq!(
        ws.toggled.get(&Unit::Layer(Layer::Decomposition)),
        Some(&false)
    );
    act(&mut ws, &mut st, Action::Bottom);
    assert_eq!(ws.focus, Some(Unit::Final));
    event(&mut ws, &mut st, start(Layer::FastCritic));
    assert_eq!(
        ws.focus,
        Some(Unit::Layer(Layer::FastCritic)),
        "G follows the run again"
    );
}

#[test]
fn a_loaded_run_of_another_session_is_dropped() {
    let (mut ws, mut st) = (Pipeline::default(), state());
    let a = crate::store::SessionId::new();
    ws.looked_up = Some(a);
    let shown = RunView {
        run: Some(RunId::new()),
        session: Some(a),
        phase: Phase::Done,
        ..RunView::default()
    };
    msg(
        &mut ws,
        &mut st,
        PipelineMsg::Loaded {
            session: a,
            run: Some(Box::new(shown.clone())),
        },
    );
    assert_eq!(ws.view, shown);
    // An answer for a session no longer asked for is ignored.
    let b = crate::store::SessionId::new();
    msg(
        &mut ws,
        &mut st,
        PipelineMsg::Loaded {
            session: b,
            run: None,
        },
    );
    assert_eq!(ws.view, shown);
    ws.looked_up = Some(b);
    msg(
        &mut ws,
        &mut st,
        PipelineMsg::Loaded {
            session: b,
            run: None,
        },
    );
    assert_eq!(ws.view.run, None);
    assert!(ws.hint.is_some());
}
