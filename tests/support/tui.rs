//! Driving the TUI in tests: an `App` over a store and a model, keys in, frames out.

use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use glassbox::app::config::Config;
use glassbox::app::keymap::Keymap;
use glassbox::app::runtime::{App, Engine};
use glassbox::app::theme::{ColorDepth, Theme};
use glassbox::store::Store;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// An app over `store` answering with `engine`, in the `theme` theme at full colour.
pub fn app_with(store: Store, cfg: Config, engine: Engine, model: &str, theme: &str) -> App {
    let theme = Theme::builtin(theme, ColorDepth::TrueColor).unwrap();
    App::new(store, cfg, Keymap::builtin(), theme, engine, model.into())
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
