//! The Sessions workspace over an imported Claude Code history: sessions grouped by project
//! under headers that fold, the filter matching project names, and the selected session's
//! details counted off the UI thread.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;

use crossterm::event::KeyCode;
use glassbox::app::runtime::App;
use glassbox::app::state::ListRow;
use glassbox::app::workspaces::sessions::Sessions;
use glassbox::engines::transcript::{Importer, discover};
use support::tui::{self, draw, press, pump_until, type_text};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/claude_code/projects"
);

async fn sessions_workspace(dir: &Path) -> App {
    let store = support::store::open(&dir.join("glassbox.redb")).unwrap();
    let mut errors = Vec::new();
    let files = discover(&[Path::new(FIXTURES).to_path_buf()], &mut errors).unwrap();
    Importer::new(store.clone())
        .unwrap()
        .import_files(&files, None)
        .unwrap();
    let mut app = tui::offline_app(store);
    app.start();
    pump_until(&mut app, |a| {
        a.state.sessions.len() == 3 && a.state.loaded.session.is_some()
    })
    .await;
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('2'));
    app
}

fn headers(app: &App) -> Vec<(String, bool)> {
    app.state
        .filtered
        .iter()
        .filter_map(|r| match r {
            ListRow::Group {
                project, collapsed, ..
            } => Some((project.clone().unwrap_or_default(), *collapsed)),
            ListRow::Session(_) => None,
        })
        .collect()
}

async fn counted(app: &mut App) {
    pump_until(app, |a| {
        let selected = a.state.selected_session().map(|r| r.id);
        selected.is_some() && a.ws::<Sessions>().counted() == selected
    })
    .await;
}

#[tokio::test]
async fn sessions_group_by_project_fold_filter_and_show_details() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = sessions_workspace(dir.path()).await;
    let mut groups: Vec<String> = headers(&app).into_iter().map(|(p, _)| p).collect();
    groups.sort();
    assert_eq!(groups, ["api", "calc", "web"]);

    // The first session under the first header: its details are counted and shown.
    press(&mut app, KeyCode::Char('j'));
    counted(&mut app).await;
    insta::assert_snapshot!("sessions_grouped_160x45", draw(&mut app, 160, 45).backend());

    // h folds the selected session's project and selects its header; enter unfolds it.
    let project = app
        .state
        .selected_session()
        .unwrap()
        .project
        .clone()
        .unwrap();
    press(&mut app, KeyCode::Char('h'));
    assert!(headers(&app).contains(&(project.clone(), true)));
    assert!(
        app.state.selected_session().is_none(),
        "the header is selected"
    );
    let screen = draw(&mut app, 160, 45).backend().to_string();
    assert!(screen.contains(&format!("▸ {project} · 1")), "{screen}");
    press(&mut app, KeyCode::Enter);
    assert!(headers(&app).contains(&(project.clone(), false)));

    // The filter matches project names.
    press(&mut app, KeyCode::Char('s'));
    type_text(&mut app, "calc");
    let shown: Vec<&str> = app
        .state
        .filtered
        .iter()
        .filter_map(|r| match r {
            ListRow::Session(i) => app.state.sessions[*i].project.as_deref(),
            ListRow::Group { .. } => None,
        })
        .collect();
    assert_eq!(shown, ["calc"]);
    assert_eq!(
        app.state
            .selected_session()
            .and_then(|r| r.project.as_deref()),
        Some("calc"),
        "the best match is selected, not its header"
    );
    counted(&mut app).await;
    let screen = draw(&mut app, 160, 45).backend().to_string();
    assert!(
        screen.contains("cwd          /home/ann/calc") && screen.contains("branch       main"),
        "{screen}"
    );
    assert!(screen.contains("claude-opus-4-20250514"), "{screen}");
    assert!(
        screen.contains("files        …/-home-ann-calc/11111111-1111-4111-8111-111111111111.jsonl"),
        "{screen}"
    );
}

/// Until the session list was read the sidebar says so; an empty store then says it has no
/// sessions (not the other way round, as it did on a large store for the first moment).
#[tokio::test]
async fn the_list_says_it_is_reading_until_the_sessions_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let mut app = tui::offline_app(store);
    let screen = |app: &mut App| draw(app, 160, 45).backend().to_string();
    let before = screen(&mut app);
    assert!(before.contains("reading sessions…"), "{before}");
    assert!(!before.contains("no sessions yet"), "{before}");
    app.start();
    pump_until(&mut app, |a| a.state.sessions_listed).await;
    let after = screen(&mut app);
    assert!(after.contains("no sessions yet"), "{after}");
    assert!(!after.contains("reading sessions…"), "{after}");
}

/// A session a killed `import json` left partway is marked in the list and its details say
/// what is wrong; renaming it starts from its own title, not the mark.
#[tokio::test]
async fn a_session_a_killed_import_left_is_marked() {
    use glassbox::engines::transcript::export;
    use glassbox::store::{Session, SessionSource};
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let mut cut = Session::new("half of a long session", SessionSource::Import);
    cut.meta
        .insert(export::UNFINISHED_IMPORT.into(), serde_json::json!(true));
    let whole = Session::new("a whole session", SessionSource::Glassbox);
    store
        .write(|w| {
            w.put_session(&cut)?;
            w.put_session(&whole)
        })
        .unwrap();
    let mut app = tui::offline_app(store);
    app.start();
    pump_until(&mut app, |a| a.state.sessions.len() == 2).await;
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('2'));
    let screen = draw(&mut app, 160, 45).backend().to_string();
    assert!(
        screen.contains("[unfinished import] half of a long session"),
        "{screen}"
    );
    assert!(!screen.contains("[unfinished import] a whole"), "{screen}");
    for _ in 0..4 {
        if app.state.selected_session().map(|r| r.id) == Some(cut.id) {
            break;
        }
        press(&mut app, KeyCode::Char('j'));
    }
    assert_eq!(app.state.selected_session().map(|r| r.id), Some(cut.id));
    let screen = draw(&mut app, 160, 45).backend().to_string();
    assert!(
        screen.contains("partial: its import was stopped; import the file again"),
        "{screen}"
    );
    press(&mut app, KeyCode::Char('R'));
    match &app.state.overlay {
        Some(glassbox::app::state::Overlay::Rename { session, input }) => {
            assert_eq!(*session, cut.id);
            assert_eq!(input.text(), "half of a long session");
        }
        _ => panic!("R opens the rename box"),
    }
}
