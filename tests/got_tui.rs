//! The Graph-of-Thoughts workspace driven by keys against the scripted server: a search
//! grows on screen, pausing holds it, pin / prune / boost / budget change what the engine
//! does, and a finished search is read back from the store. The engine calls the model one
//! call at a time in a fixed order, so each script lists generations and scores in order;
//! an unexpected call hits "script exhausted" and fails the search.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use crossterm::event::KeyCode;
use glassbox::app::runtime::App;
use glassbox::app::workspaces::got::{self, Got, Phase};
use glassbox::config::Config;
use glassbox::engines::got::{Strategy, Thought, ThoughtState};
use glassbox::store::Store;
use glassbox::views::got::SearchView;
use serde_json::json;
use support::tui::{app_with, draw, openai_engine, press, pump_until, type_text};
use support::{Script, ScriptedServer, Step};

/// An OpenAI-compatible stream answering `text`, 15 tokens in all, a little slowly so the
/// search is visibly in progress between calls.
fn answer(text: &str) -> Step {
    let chunk = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]});
    let done = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}});
    Step::sse(format!("data: {chunk}\n\ndata: {done}\n\ndata: [DONE]\n\n"))
        .delay_each(Duration::from_millis(20))
}

fn gen_(thoughts: &[&str]) -> Step {
    answer(&format!("Here: {}", json!({ "thoughts": thoughts })))
}

fn score(s: f64) -> Step {
    answer(&json!({"score": s, "reasoning": "because"}).to_string())
}

/// Small searches: depth 2, two thoughts per expansion, no aggregation.
fn config(strategy: Strategy) -> Config {
    let mut cfg = Config::builtin().unwrap();
    cfg.got.strategy = strategy;
    cfg.got.max_depth = 2;
    cfg.got.branching_factor = 2;
    cfg.got.enable_aggregation = false;
    cfg.got.boost_step = 0.5;
    cfg
}

fn app(store: Store, url: &str, cfg: Config) -> App {
    let engine = openai_engine(&store, url, "m");
    app_with(store, cfg, engine, "m", "dark")
}

struct Setup {
    app: App,
    server: ScriptedServer,
    store: Store,
    _dir: tempfile::TempDir,
}

async fn setup(steps: Vec<Step>, cfg: Config) -> Setup {
    let server = ScriptedServer::start(Script::new(steps)).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let mut app = app(store.clone(), &server.url(), cfg);
    app.start();
    // Out of the question box, then to the GoT workspace.
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('5'));
    // The config defaults arrive as a message.
    pump_until(&mut app, |a| a.ws::<Got>().defaults.is_some()).await;
    assert_eq!(app.state.workspace, got::ID, "5 opens the GoT workspace");
    Setup {
        app,
        server,
        store,
        _dir: dir,
    }
}

/// `N`, the problem, Enter: the form's strategy is the config's default.
fn start_search(app: &mut App, problem: &str) {
    press(app, KeyCode::Char('N'));
    assert!(app.state.overlay.is_some(), "N opens the new-search form");
    type_text(app, problem);
    press(app, KeyCode::Enter);
    assert!(app.state.overlay.is_none(), "{:?}", app.state.notice);
    assert!(view(app).running());
}

/// The search the GoT workspace shows.
fn view(app: &App) -> &SearchView {
    &app.ws::<Got>().view
}

fn thought<'a>(app: &'a App, text: &str) -> &'a Thought {
    view(app)
        .thoughts
        .iter()
        .find(|t| t.content == text)
        .unwrap_or_else(|| panic!("no thought {text:?}"))
}

fn select(app: &mut App, text: &str) {
    let id = thought(app, text).id;
    press(app, KeyCode::Char('g'));
    press(app, KeyCode::Char('g'));
    for _ in 0..view(app).rows.len() {
        if view(app).selected_id() == Some(id) {
            return;
        }
        press(app, KeyCode::Char('j'));
    }
    panic!("cannot select {text:?}");
}

fn done(a: &App) -> bool {
    matches!(
        view(a).phase,
        Phase::Done | Phase::Interrupted | Phase::Failed(_)
    )
}

/// The bfs search of the engine test: root → A 0.6, B 0.9; level 1 best first: B → B1 0.5,
/// B2 0.8; A → A1 0.2 (pruned), A2 0.4.
fn bfs_script() -> Vec<Step> {
    vec![
        gen_(&["A", "B"]),
        score(0.6),
        score(0.9),
        gen_(&["B1", "B2"]),
        score(0.5),
        score(0.8),
        gen_(&["A1", "A2"]),
        score(0.2),
        score(0.4),
    ]
}

#[tokio::test]
async fn a_search_grows_on_screen_and_the_best_thought_opens() {
    let Setup {
        mut app,
        server,
        store,
        _dir,
    } = setup(bfs_script(), config(Strategy::Bfs)).await;
    let empty = draw(&mut app, 160, 45).backend().to_string();
    assert!(empty.contains("N  starts one"), "{empty}");
    start_search(&mut app, "Plan a trip");
    // Thoughts arrive while the search still runs.
    pump_until(&mut app, |a| {
        view(a).running() && view(a).thoughts.len() >= 3
    })
    .await;
    let live = draw(&mut app, 160, 45).backend().to_string();
    assert!(live.contains("running"), "{live}");
    assert!(live.contains("Plan a trip"), "{live}");
    pump_until(&mut app, done).await;
    assert_eq!(view(&app).phase, Phase::Done, "{:?}", app.state.notice);
    assert_eq!(server.requests().len(), 9);
    let ws = view(&app);
    assert_eq!(thought(&app, "A1").state, ThoughtState::Rejected);
    assert_eq!(thought(&app, "B2").state, ThoughtState::Verified);
    assert_eq!(ws.best, Some(thought(&app, "B").id));
    let outcome = ws.outcome.as_ref().unwrap();
    assert_eq!(outcome.answer, "B");
    assert_eq!(outcome.stats.total_tokens, 9 * 15);
    // The best thought is selected when the search ends; enter opens it.
    assert_eq!(ws.selected_id(), ws.best);
    press(&mut app, KeyCode::Enter);
    assert!(view(&app).detail.is_some());
    let term = draw(&mut app, 160, 45);
    let text = term.backend().to_string();
    assert!(text.contains("Thought · j/k scroll"), "{text}");
    press(&mut app, KeyCode::Esc);
    assert!(view(&app).detail.is_none(), "Esc closes the popup");
    // The run's session reaches the tab bar through the store's journal: wait for it, so
    // the screen does not depend on how fast that was.
    pump_until(&mut app, |a| a.state.loaded.session.is_some()).await;
    let term = draw(&mut app, 160, 45);
    insta::assert_snapshot!("got_done_160x45", term.backend());

    // Read back from the store: leaving and coming back after the session changed shows
    // the same tree, from the nodes, edges and run.
    let session = app.ws::<Got>().session.unwrap();
    let stored = got::load_last(&store, session).unwrap();
    assert_eq!(stored.thoughts.len(), 7);
    assert_eq!(stored.best, view(&app).best);
    assert_eq!(
        stored.thoughts.iter().map(|t| t.state).collect::<Vec<_>>(),
        view(&app)
            .thoughts
            .iter()
            .map(|t| t.state)
            .collect::<Vec<_>>()
    );
    assert_eq!(got::tree_rows(&stored.thoughts), view(&app).rows);
}

#[tokio::test]
async fn a_finished_search_is_replayed_from_the_store_on_entering() {
    let Setup {
        mut app,
        server,
        store,
        _dir,
    } = setup(bfs_script(), config(Strategy::Bfs)).await;
    start_search(&mut app, "Plan a trip");
    pump_until(&mut app, done).await;
    assert_eq!(server.requests().len(), 9);
    let before = draw(&mut app, 160, 45).backend().to_string();
    // A fresh TUI over the same store opens the session and reads the search back.
    drop(app);
    let mut app2 = self::app(store.clone(), "http://127.0.0.1:9", config(Strategy::Bfs));
    app2.start();
    pump_until(&mut app2, |a| a.state.loaded.session.is_some()).await;
    press(&mut app2, KeyCode::Esc);
    press(&mut app2, KeyCode::Char('5'));
    pump_until(&mut app2, |a| view(a).thoughts.len() == 7).await;
    assert_eq!(view(&app2).phase, Phase::Done);
    assert_eq!(view(&app2).problem, "Plan a trip");
    let after = draw(&mut app2, 160, 45).backend().to_string();
    // Same tree, answer and counts; only the status line (notices, tokens) may differ.
    let body = |s: &str| s.lines().skip(1).take(42).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&before), body(&after));
}

#[tokio::test]
async fn pause_holds_the_search_and_pin_and_prune_change_what_it_expands() {
    // Root → A 0.2 (rejected), B 0.9. Then, paused: pin A (revived), prune B. Resumed, the
    // search expands A, not B: had the steering been ignored, it would expand B and run out
    // of script.
    let Setup {
        mut app,
        server,
        _dir,
        ..
    } = setup(
        vec![
            gen_(&["A", "B"]),
            score(0.2),
            score(0.9),
            gen_(&["A1", "A2"]),
            score(0.7),
            score(0.5),
        ],
        config(Strategy::Bfs),
    )
    .await;
    start_search(&mut app, "P");
    press(&mut app, KeyCode::Char(' '));
    pump_until(&mut app, |a| view(a).paused).await;
    assert_eq!(view(&app).state_label(), "paused");
    // Paused before the first expansion: only the problem, and no model call.
    assert_eq!(view(&app).thoughts.len(), 1);
    assert!(view(&app).expanded.is_empty());
    assert_eq!(server.requests().len(), 0);
    // `.` expands exactly one thought and pauses again.
    press(&mut app, KeyCode::Char('.'));
    assert_eq!(view(&app).state_label(), "stepping…");
    pump_until(&mut app, |a| !view(a).stepping).await;
    assert_eq!(view(&app).state_label(), "paused");
    assert_eq!(view(&app).expanded.len(), 1);
    assert_eq!(view(&app).thoughts.len(), 3);
    assert_eq!(server.requests().len(), 3);
    assert_eq!(thought(&app, "A").state, ThoughtState::Rejected);
    select(&mut app, "A");
    press(&mut app, KeyCode::Char('p'));
    select(&mut app, "B");
    press(&mut app, KeyCode::Char('x'));
    pump_until(&mut app, |a| {
        let ws = view(a);
        ws.pending.is_empty()
            && ws.thoughts.iter().any(|t| t.content == "A" && t.pinned)
            && ws
                .thoughts
                .iter()
                .any(|t| t.content == "B" && t.state == ThoughtState::Rejected)
    })
    .await;
    assert_eq!(thought(&app, "A").state, ThoughtState::Verified);
    // Paused and steered: A pinned and on the frontier, B pruned and dimmed.
    select(&mut app, "A");
    let term = draw(&mut app, 160, 45);
    insta::assert_snapshot!("got_paused_steered_160x45", term.backend());
    // Still paused: steering did not start anything.
    assert_eq!(server.requests().len(), 3);
    press(&mut app, KeyCode::Char(' '));
    pump_until(&mut app, done).await;
    assert_eq!(view(&app).phase, Phase::Done, "{:?}", app.state.notice);
    let ws = view(&app);
    let a = thought(&app, "A").id;
    let b = thought(&app, "B").id;
    assert!(ws.expanded.contains(&a));
    assert!(!ws.expanded.contains(&b));
    assert_eq!(thought(&app, "B").state, ThoughtState::Rejected);
    assert!(thought(&app, "A").pinned);
    assert_eq!(ws.best, Some(thought(&app, "A1").id));
    assert_eq!(server.requests().len(), 6);
}

#[tokio::test]
async fn boosting_reorders_best_first_and_steering_needs_a_running_search() {
    // Best-first, paused after the root: A 0.6, B 0.9. Lowering B and boosting A makes A
    // the next expanded; unsteered, B would go first and its children would be scored by
    // the wrong script lines.
    let Setup {
        mut app,
        server,
        _dir,
        ..
    } = setup(
        vec![
            gen_(&["A", "B"]),
            score(0.6),
            score(0.9),
            gen_(&["A1", "A2"]),
            score(0.1),
            score(0.1),
            gen_(&["B1", "B2"]),
            score(0.1),
            score(0.1),
        ],
        config(Strategy::BestFirst),
    )
    .await;
    // Steering keys without a search say so and do nothing.
    press(&mut app, KeyCode::Char('p'));
    assert!(
        app.state
            .notice
            .as_ref()
            .is_some_and(|(t, _)| t.contains("no search is running"))
    );
    start_search(&mut app, "P");
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Char('.'));
    pump_until(&mut app, |a| {
        view(a).paused && !view(a).stepping && view(a).thoughts.len() == 3
    })
    .await;
    select(&mut app, "B");
    press(&mut app, KeyCode::Char('-'));
    select(&mut app, "A");
    press(&mut app, KeyCode::Char('+'));
    pump_until(&mut app, |a| view(a).pending.is_empty()).await;
    assert_eq!(thought(&app, "A").boost, 0.5);
    assert_eq!(thought(&app, "B").boost, -0.5);
    press(&mut app, KeyCode::Char(' '));
    pump_until(&mut app, done).await;
    assert_eq!(view(&app).phase, Phase::Done, "{:?}", app.state.notice);
    // A went first: the first generation answer became A's children.
    let a = thought(&app, "A").id;
    let b = thought(&app, "B").id;
    assert_eq!(thought(&app, "A1").parent, Some(a));
    assert_eq!(thought(&app, "B1").parent, Some(b));
    assert_eq!(view(&app).expanded.len(), 3);
    assert_eq!(server.requests().len(), 9);
}

#[tokio::test]
async fn the_budget_form_sets_the_next_search_and_stops_it_when_spent() {
    let Setup {
        mut app,
        server,
        _dir,
        ..
    } = setup(bfs_script(), config(Strategy::Bfs)).await;
    press(&mut app, KeyCode::Char('B'));
    assert!(app.state.overlay.is_some(), "B opens the budget form");
    type_text(&mut app, "abc");
    press(&mut app, KeyCode::Enter);
    assert_eq!(view(&app).budget, None, "not a number: refused");
    press(&mut app, KeyCode::Char('B'));
    type_text(&mut app, "40");
    press(&mut app, KeyCode::Enter);
    assert_eq!(view(&app).budget, Some(40));
    assert!(
        app.state
            .notice
            .as_ref()
            .is_some_and(|(t, _)| t.contains("next search: 40 tokens"))
    );
    start_search(&mut app, "P");
    pump_until(&mut app, done).await;
    // 45 tokens after the root's expansion (3 calls of 15): the budget of 40 is spent.
    assert_eq!(view(&app).phase, Phase::Interrupted);
    assert_eq!(server.requests().len(), 3);
    let text = draw(&mut app, 160, 45).backend().to_string();
    assert!(text.contains("interrupted"), "{text}");
    assert!(text.contains("45 / 40"), "{text}");
    // Clearing it: empty means no limit.
    press(&mut app, KeyCode::Char('B'));
    for _ in 0..4 {
        press(&mut app, KeyCode::Backspace);
    }
    press(&mut app, KeyCode::Enter);
    assert_eq!(view(&app).budget, None);
}
