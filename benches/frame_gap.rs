//! The frame loop while a 100,000-node session is deleted: the delete runs on the store's
//! blocking pool while the user keeps typing, and no gap between two frames may exceed
//! 50 ms. Prints the largest gap, the frames drawn and the delete's duration.
//!
//! `cargo bench --bench frame_gap` runs the full size; under `cargo test` (no `--bench`
//! argument) it runs a small session once, to keep the harness working, without judging
//! time.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use glassbox::app::action::Action;
use glassbox::app::keymap::Keymap;
use glassbox::app::runtime::App;
use glassbox::app::update::Msg;
use glassbox::config::Config;
use glassbox::store::{Node, NodeType, Session, SessionSource, Store};
use glassbox::views::theme::{ColorDepth, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// The longest a frame may wait behind the delete.
const LIMIT: Duration = Duration::from_millis(50);
/// Nodes per commit while seeding.
const BATCH: usize = 5_000;

fn seed(store: &Store, nodes: usize) -> Session {
    let session = Session::new("to delete", SessionSource::Glassbox);
    let text = "a node of about two kilobytes of reasoning text ".repeat(40);
    store
        .write(|w| w.put_session(&session))
        .unwrap_or_else(|e| panic!("{e}"));
    for start in (0..nodes).step_by(BATCH) {
        store
            .write(|w| {
                for i in start..(start + BATCH).min(nodes) {
                    let kind = if i % 3 == 0 {
                        NodeType::Query
                    } else {
                        NodeType::Thinking
                    };
                    w.put_node(&Node::new(session.id, kind, text.as_str()))?;
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{e}"));
    }
    session
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

async fn run(nodes: usize) -> (Duration, usize, Duration) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = Store::open(&dir.path().join("s.redb")).unwrap_or_else(|e| panic!("{e}"));
    seed(&store, nodes);
    let cfg = Config::builtin().unwrap_or_else(|e| panic!("{e}"));
    let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap_or_default();
    let mut app = App::new(
        store.clone(),
        cfg,
        Keymap::builtin(),
        theme,
        Err("no model".into()),
        String::new(),
    );
    app.start();
    // Wait for the session to open, then ask to delete it and confirm.
    let opened = Instant::now();
    while app.state.loaded.id().is_none() && opened.elapsed() < Duration::from_secs(60) {
        app.next().await;
    }
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap_or_else(|e| panic!("{e}"));
    app.dispatch(Msg::Action(Action::DeleteSession));
    app.dispatch(key('y'));
    let started = Instant::now();
    let mut last = Instant::now();
    let mut worst = Duration::ZERO;
    let mut frames = 0;
    let deleted = |app: &App| {
        app.state
            .notice
            .as_ref()
            .is_some_and(|(t, _)| t.contains("deleted") || t.contains("failed"))
    };
    // Type while the delete runs: each round a key, whatever messages arrived, a frame.
    while !deleted(&app) && started.elapsed() < Duration::from_secs(120) {
        app.dispatch(key('x'));
        app.drain();
        let _ = term.draw(|f| app.draw(f));
        frames += 1;
        let now = Instant::now();
        worst = worst.max(now - last);
        last = now;
        // The TUI's frame interval.
        tokio::time::sleep(Duration::from_millis(16)).await;
    }
    assert!(deleted(&app), "the delete did not finish");
    (worst, frames, started.elapsed())
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let nodes = if bench { 100_000 } else { 2_000 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let (worst, frames, took) = rt.block_on(run(nodes));
    println!(
        "frame_gap: deleting a {nodes}-node session took {:.2} s; {frames} frames, largest gap between frames {:.1} ms (limit {} ms)",
        took.as_secs_f64(),
        worst.as_secs_f64() * 1e3,
        LIMIT.as_millis()
    );
    if bench && worst > LIMIT {
        eprintln!(
            "frame_gap: a frame waited longer than {} ms",
            LIMIT.as_millis()
        );
        std::process::exit(1);
    }
}
