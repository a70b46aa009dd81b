//! The Pipeline workspace driven by keys against the scripted server: a deep run streams
//! its layers into panes and ends with a confidence, a cancelled run resumes from its first
//! unfinished layer, and a finished run is read back from the store on entering. Every
//! model call gets the same JSON answer: each artifact field has a default, so it reads as
//! any layer's answer (a gate score of 92 and no missing angles: deep does not escalate).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use crossterm::event::KeyCode;
use glassbox::app::runtime::App;
use glassbox::app::workspaces::pipeline::{self, LayerStatus, Phase, Pipeline};
use glassbox::config::Config;
use glassbox::engines::pipeline::{Layer, Mode};
use glassbox::store::Store;
use serde_json::json;
use support::tui::{app_with, draw, openai_engine, press, pump_until, type_text};
use support::{End, Script, ScriptedServer, Step};

const ANSWER: &str = r#"{"score":92,"facts":["f"],"intent":"i","issues":[],"missing_angles":[],"recommended_mode":"deep"}"#;

fn chunk(text: &str) -> String {
    let c = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]});
    format!("data: {c}\n\n")
}

/// An OpenAI-compatible stream answering [`ANSWER`] in two pieces, a little slowly so a
/// layer is seen running.
fn answer() -> Step {
    let (a, b) = ANSWER.split_at(20);
    let done = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}});
    Step::sse(format!(
        "{}{}data: {done}\n\ndata: [DONE]\n\n",
        chunk(a),
        chunk(b)
    ))
    .delay_each(Duration::from_millis(5))
}

/// A stream that sends a first piece and then nothing more.
fn stalled() -> Step {
    Step::sse(chunk("half an answer")).end(End::Stall)
}

const DEEP: [Layer; 6] = [
    Layer::Cortex,
    Layer::Decomposition,
    Layer::PrimarySolver,
    Layer::FastCritic,
    Layer::Refiner,
    Layer::ConfidenceGate,
];

fn app(store: Store, url: &str) -> App {
    let engine = openai_engine(&store, url, "m");
    app_with(store, Config::builtin().unwrap(), engine, "m", "dark")
}

struct Setup {
    app: App,
    server: ScriptedServer,
    store: Store,
    _dir: tempfile::TempDir,
}

async fn setup(script: Script) -> Setup {
    let server = ScriptedServer::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let mut app = app(store.clone(), &server.url());
    app.start();
    // Out of the question box, then to the Pipeline workspace.
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('0'));
    assert_eq!(
        app.state.workspace,
        pipeline::ID,
        "0 opens the Pipeline workspace"
    );
    Setup {
        app,
        server,
        store,
        _dir: dir,
    }
}

fn ws(app: &App) -> &Pipeline {
    app.ws::<Pipeline>()
}

fn status(app: &App, layer: Layer) -> Option<LayerStatus> {
    ws(app).view.pane(layer).map(|p| p.status)
}

/// `i`, the question, tab until `deep`, enter.
fn ask_deep(app: &mut App, question: &str) {
    press(app, KeyCode::Char('i'));
    assert!(ws(app).typing, "i focuses the question line");
    type_text(app, question);
    while ws(app).mode != Mode::Deep {
        press(app, KeyCode::Tab);
    }
    let line = draw(app, 80, 24).backend().to_string();
    assert!(line.contains("[deep] ▏Plan a trip"), "{line}");
    press(app, KeyCode::Enter);
    assert!(ws(app).running(), "{:?}", app.state.notice);
}

fn ended(a: &App) -> bool {
    !ws(a).running()
}

/// Layer timings differ from run to run: fixed ones keep the screen comparable.
fn fix_durations(app: &mut App) {
    for p in &mut app.workspaces.get_mut::<Pipeline>().view.layers {
        if p.duration_ms.is_some() {
            p.duration_ms = Some(250);
        }
    }
}

#[tokio::test]
async fn a_deep_run_streams_its_layers_and_is_read_back_from_the_store() {
    let Setup {
        mut app,
        server,
        store,
        _dir,
    } = setup(Script::forever(answer())).await;
    let empty = draw(&mut app, 80, 24).backend().to_string();
    assert!(empty.contains("i asks a question"), "{empty}");
    ask_deep(&mut app, "Plan a trip");
    // The deep layers are listed as pending before they run.
    assert_eq!(ws(&app).view.layers.len(), 6);
    pump_until(&mut app, |a| {
        status(a, Layer::Decomposition) == Some(LayerStatus::Running)
    })
    .await;
    let live = draw(&mut app, 160, 45).backend().to_string();
    assert!(live.contains("⟳ running"), "{live}");
    assert!(live.contains("✓ Classifying"), "{live}");
    pump_until(&mut app, ended).await;
    let v = &ws(&app).view;
    assert_eq!(v.phase, Phase::Done, "{:?}", app.state.notice);
    assert_eq!(v.layers.iter().map(|p| p.layer).collect::<Vec<_>>(), DEEP);
    assert!(v.layers.iter().all(|p| p.status == LayerStatus::Done));
    assert_eq!(v.mode, Some(Mode::Deep));
    assert!(!v.escalated());
    let fin = v.fin.as_ref().unwrap();
    assert_eq!(fin.confidence, Some(92));
    assert!(fin.failed_layers.is_empty(), "{fin:?}");
    // The gate's answer is a table, the solver's text is the raw answer.
    let gate = v.pane(Layer::ConfidenceGate).unwrap();
    assert_eq!(gate.artifact.as_ref().unwrap()["score"], 92);
    assert_eq!(v.pane(Layer::PrimarySolver).unwrap().text, ANSWER);
    assert_eq!(server.requests().len(), 6);
    // The run's session opens (it reaches the tab bar through the store).
    pump_until(&mut app, |a| a.state.loaded.session.is_some()).await;
    fix_durations(&mut app);
    let term = draw(&mut app, 160, 45);
    let before = term.backend().to_string();
    assert!(before.contains("confidence  92%"), "{before}");
    assert!(before.contains("✓ Gauging confidence"), "{before}");
    insta::assert_snapshot!("pipeline_deep_done_160x45", term.backend());

    // A fresh TUI over the same store opens the session and reads the run back.
    drop(app);
    let mut app2 = self::app(store.clone(), "http://127.0.0.1:9");
    app2.start();
    pump_until(&mut app2, |a| a.state.loaded.session.is_some()).await;
    press(&mut app2, KeyCode::Esc);
    press(&mut app2, KeyCode::Char('0'));
    pump_until(&mut app2, |a| ws(a).view.phase == Phase::Done).await;
    let v = &ws(&app2).view;
    assert_eq!(v.question, "Plan a trip");
    assert_eq!(v.requested, Some(Mode::Deep));
    assert_eq!(v.fin.as_ref().and_then(|f| f.confidence), Some(92));
    fix_durations(&mut app2);
    let after = draw(&mut app2, 160, 45).backend().to_string();
    // The same stack; the question line (its mode) and the status line may differ.
    let body = |s: &str| s.lines().skip(3).take(41).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&before), body(&after));
}

#[tokio::test]
async fn esc_interrupts_a_run_and_r_resumes_it_at_the_unfinished_layer() {
    // Classification and decomposition answer; the solver stalls until Esc; after that
    // every call answers.
    let mut steps = vec![answer(), answer(), stalled()];
    steps.extend((0..4).map(|_| answer()));
    let Setup {
        mut app,
        server,
        _dir,
        ..
    } = setup(Script {
        steps,
        repeat_last: true,
    })
    .await;
    ask_deep(&mut app, "Plan a trip");
    pump_until(&mut app, |a| {
        ws(a)
            .view
            .pane(Layer::PrimarySolver)
            .is_some_and(|p| p.text == "half an answer")
    })
    .await;
    press(&mut app, KeyCode::Esc);
    pump_until(&mut app, ended).await;
    let v = &ws(&app).view;
    assert_eq!(v.phase, Phase::Interrupted, "{:?}", app.state.notice);
    assert_eq!(
        status(&app, Layer::PrimarySolver),
        Some(LayerStatus::Interrupted)
    );
    assert_eq!(status(&app, Layer::FastCritic), Some(LayerStatus::Pending));
    assert!(v.run.is_some());
    let text = draw(&mut app, 80, 24).backend().to_string();
    assert!(text.contains("⏸ interrupted"), "{text}");
    assert!(text.contains("r resumes"), "{text}");

    press(&mut app, KeyCode::Char('r'));
    assert!(ws(&app).running(), "{:?}", app.state.notice);
    pump_until(&mut app, ended).await;
    let v = &ws(&app).view;
    assert_eq!(v.phase, Phase::Done, "{:?}", app.state.notice);
    assert!(v.layers.iter().all(|p| p.status == LayerStatus::Done));
    // The finished layers were taken over, not asked again; the solver started over.
    assert!(v.pane(Layer::Cortex).unwrap().resumed);
    assert!(v.pane(Layer::Decomposition).unwrap().resumed);
    assert!(!v.pane(Layer::PrimarySolver).unwrap().resumed);
    assert_eq!(v.pane(Layer::PrimarySolver).unwrap().text, ANSWER);
    assert_eq!(server.requests().len(), 7);
    assert_eq!(v.fin.as_ref().and_then(|f| f.confidence), Some(92));
}
