//! Driving the TUI in tests: an `App` over a store and a model, keys in, frames out.

use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use std::sync::Arc;

use glassbox::app::keymap::Keymap;
use glassbox::app::runtime::{App, Engine};
use glassbox::config::{Config, ProviderKind};
use glassbox::engines::llm::anthropic::AnthropicProvider;
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::engines::orchestrator::Orchestrator;
use glassbox::store::Store;
use glassbox::views::theme::{ColorDepth, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// An app over `store` answering with `engine`, in the `theme` theme at full colour.
pub fn app_with(store: Store, cfg: Config, engine: Engine, model: &str, theme: &str) -> App {
    app_with_keymap(store, cfg, engine, model, theme, Keymap::builtin())
}

/// [`app_with`] with the keys of `keymap`.
pub fn app_with_keymap(
    store: Store,
    cfg: Config,
    engine: Engine,
    model: &str,
    theme: &str,
    keymap: Keymap,
) -> App {
    let theme = Theme::builtin(theme, ColorDepth::TrueColor).unwrap();
    App::new(store, cfg, keymap, theme, engine, model.into())
}

/// An app over `store` whose model is never reached (Anthropic at a closed port), with the
/// built-in config and the dark theme: for what the TUI shows of the store.
pub fn offline_app(store: Store) -> App {
    let engine = anthropic_engine(&store, "http://127.0.0.1:9", "claude-test");
    app_with(
        store,
        Config::builtin().unwrap(),
        engine,
        "claude-test",
        "dark",
    )
}

/// An engine answering as Anthropic's Messages API at `url` (the scripted server), no retries.
pub fn anthropic_engine(store: &Store, url: &str, model: &str) -> Engine {
    let provider = AnthropicProvider::new(HttpSettings {
        base_url: url.to_string(),
        model: Some(model.into()),
        keys: vec![ApiKey::new("sk-test")],
        max_retries: 0,
        ..Default::default()
    })
    .unwrap();
    let orch = Orchestrator::new(store.clone(), Arc::new(provider), model);
    Ok((orch, ProviderKind::Anthropic))
}

/// An engine answering as an OpenAI-compatible server at `url`/v1, no retries.
pub fn openai_engine(store: &Store, url: &str, model: &str) -> Engine {
    let provider = OpenAiProvider::new(HttpSettings {
        base_url: format!("{url}/v1"),
        model: Some(model.into()),
        keys: vec![ApiKey::new("k")],
        max_retries: 0,
        ..Default::default()
    })
    .unwrap();
    let orch = Orchestrator::new(store.clone(), Arc::new(provider), model);
    Ok((orch, ProviderKind::OpenAi))
}

/// Handles engine messages until `done` holds; fails after about 100 s of waiting.
pub async fn pump_until(app: &mut App, mut done: impl FnMut(&App) -> bool) {
    for _ in 0..2000 {
        if done(app) {
            return;
        }
        let _ = tokio::time::timeout(Duration::from_millis(50), app.next()).await;
        app.drain();
    }
    panic!(
        "condition not reached in the {:?} workspace; phase {:?}, notice {:?}",
        app.state.workspace, app.state.phase, app.state.notice
    );
}

/// One key press with no modifiers (an uppercase letter is the shifted key).
pub fn press(app: &mut App, code: KeyCode) {
    app.handle_event(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

/// Types `text` one character at a time.
pub fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

/// Resizes the app to `w`×`h` and draws one frame.
pub fn draw(app: &mut App, w: u16, h: u16) -> Terminal<TestBackend> {
    app.dispatch(glassbox::app::update::Msg::Resize(w, h));
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| app.draw(f)).unwrap();
    term
}
