//! The Diff workspace driven by keys against the scripted server: two fork branches of a
//! stored session are marked in the Think graph with `=`, the second mark opens the diff,
//! the model labels the one pair that is neither identical nor unpaired, `n` jumps between
//! the differences, `m` merges the branches into claims, and moving over a claim lights up
//! the steps it came from in both columns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use glassbox::app::runtime::App;
use glassbox::app::workspaces::diff::{self, DiffWs, Focus};
use glassbox::app::workspaces::think;
use glassbox::config::Config;
use glassbox::engines::diff::Label;
use glassbox::store::{EdgeType, Node, NodeType, Session, SessionSource, Store};
use glassbox::views::JobPhase;
use serde_json::json;
use support::tui::{app_with, draw, openai_engine, press, pump_until};
use support::{Script, ScriptedServer, Step};

const JUDGED: &str = r#"{"label":"differs","reason":"B expects a sharper fall"}"#;
const MERGE: &str = r#"{"claims":[{"text":"Owning builds equity that renting does not.","sources":["A2","B2"]},{"text":"Prices may fall, maybe sharply.","sources":["A4","B4"]}]}"#;

fn answer(text: &str) -> Step {
    support::wire::openai_answer_streamed(text)
}

fn branch(session: &Session, conclusion: &str, meta: serde_json::Value) -> Node {
    let mut n = Node::new(session.id, NodeType::ForkBranch, conclusion);
    n.meta = meta.as_object().unwrap().clone();
    n
}

/// A session with a question and two branches: two insights the same, a risk worded
/// apart, a conclusion each and an opportunity only B names.
fn seed(store: &Store) -> (Node, Node) {
    let s = Session::new("Rent or buy?", SessionSource::Glassbox);
    let q = Node::new(s.id, NodeType::Query, "Rent or buy a flat?");
    let insights = json!(["Mortgage payments build equity.", "Rents rise every year."]);
    let a = branch(
        &s,
        "Buy a flat within two years.",
        json!({"style": "conservative", "keyInsights": insights, "risks": ["Prices may fall."]}),
    );
    let b = branch(
        &s,
        "Keep renting and invest the deposit.",
        json!({"style": "aggressive", "keyInsights": insights,
               "risks": ["Prices may fall sharply next year."],
               "opportunities": ["Index funds return more than houses."]}),
    );
    store
        .write(|w| {
            w.put_session(&s)?;
            w.put_node(&q)?;
            w.put_node(&a)?;
            w.put_node(&b)
        })
        .unwrap();
    (a, b)
}

fn ws(app: &App) -> &DiffWs {
    app.ws::<DiffWs>()
}

fn key(app: &mut App, c: char) {
    press(app, KeyCode::Char(c));
}

fn screen(app: &mut App) -> String {
    draw(app, 160, 45).backend().to_string()
}

/// The screen's line holding `needle`.
fn line(screen: &str, needle: &str) -> String {
    screen
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle} not on screen:\n{screen}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_marked_branches_are_diffed_jumped_through_and_merged() {
    let server = ScriptedServer::start(Script::new(vec![answer(JUDGED), answer(MERGE)])).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let (a, b) = seed(&store);
    let engine = openai_engine(&store, &server.url(), "m");
    let mut app = app_with(
        store.clone(),
        Config::builtin().unwrap(),
        engine,
        "m",
        "dark",
    );
    app.start();
    pump_until(&mut app, |x| x.state.loaded.node(b.id).is_some()).await;
    press(&mut app, KeyCode::Esc); // out of the question box

    // `=` on the first branch in the Think graph marks it and stays in Think.
    assert!(app.state.select_in_graph(a.id));
    key(&mut app, '=');
    assert_eq!(app.state.workspace, think::ID);
    let (text, _) = app.state.notice.clone().unwrap();
    assert!(
        text.starts_with(&format!("marked A: fork_branch {}", a.id.short())),
        "{text}"
    );
    assert!(text.ends_with("— mark another node to diff"), "{text}");
    assert!(screen(&mut app).contains("marked A: fork_branch"));

    // `=` on the second opens the Diff workspace and starts the diff.
    assert!(app.state.select_in_graph(b.id));
    key(&mut app, '=');
    assert_eq!(app.state.workspace, diff::ID);
    assert!(ws(&app).running());
    pump_until(&mut app, |x| ws(x).phase != JobPhase::Running).await;
    assert_eq!(ws(&app).phase, JobPhase::Done, "{:?}", app.state.notice);

    // Only the worded-apart risks went to the model.
    let asked = server.requests();
    assert_eq!(asked.len(), 1);
    let body = String::from_utf8_lossy(&asked[0].body).to_string();
    assert!(body.contains("Step A: Prices may fall."), "{body}");
    let labels: Vec<Label> = ws(&app)
        .diff
        .as_ref()
        .unwrap()
        .pairs
        .iter()
        .map(|p| p.label)
        .collect();
    assert_eq!(
        labels,
        [
            Label::OnlyA,
            Label::OnlyB,
            Label::Same,
            Label::Same,
            Label::Differs,
            Label::OnlyB
        ]
    );

    let s = screen(&mut app);
    assert!(
        s.contains(" Research  Diff "),
        "the tab after Research: {s}"
    );
    assert!(
        s.contains(&format!(
            "A fork_branch {} (Buy a flat within two years.) · 4 steps",
            a.id.short()
        )),
        "{s}"
    );
    assert!(
        s.contains("= 2 same  ~ 1 differs  ! 0 contradicts  < 1 only A  > 2 only B"),
        "{s}"
    );
    assert!(s.contains("compared by lexical · labels by m"), "{s}");
    let same = line(&s, "A2 Mortgage payments build equity.");
    assert!(
        same.contains("│ B2 Mortgage payments build equity."),
        "{same}"
    );
    assert!(
        line(&s, "A1 Buy a flat").contains("▶<"),
        "the first row is selected"
    );

    // n jumps over the same rows to the judged one; N goes back.
    key(&mut app, 'n');
    assert_eq!(ws(&app).row, 1);
    key(&mut app, 'n');
    assert_eq!(ws(&app).row, 4);
    let s = screen(&mut app);
    assert!(
        s.contains(
            "row 5 of 6 · differs · similarity 0.71 · by the model — B expects a sharper fall"
        ),
        "{s}"
    );
    assert!(line(&s, "A4 Prices may fall.").contains("▶~"), "{s}");
    key(&mut app, 'N');
    assert_eq!(ws(&app).row, 1);

    // m merges A and B: the claims list their steps; the first claim's light up.
    key(&mut app, 'm');
    assert_eq!(ws(&app).merge, JobPhase::Running);
    assert!(screen(&mut app).contains("merging A and B into claims"));
    pump_until(&mut app, |x| ws(x).merge != JobPhase::Running).await;
    assert_eq!(ws(&app).merge, JobPhase::Done, "{:?}", app.state.notice);
    assert_eq!(ws(&app).focus, Focus::Claims);
    let merged = ws(&app).merged.clone().unwrap();
    let s = screen(&mut app);
    assert!(
        s.contains(&format!(
            "Merge · synthesis {} · 2 claims",
            merged.node.short()
        )),
        "{s}"
    );
    assert!(
        s.contains("▶ 1. Owning builds equity that renting does not."),
        "{s}"
    );
    assert!(s.contains("← A2 B2"), "{s}");
    assert!(line(&s, "◆A2 Mortgage").contains("◆B2 Mortgage"), "{s}");
    assert!(!s.contains("◆A4"), "{s}");

    // Moving to the second claim moves the light to its steps.
    key(&mut app, 'j');
    let s = screen(&mut app);
    assert!(s.contains("claim 2 of 2 · from A4 B4"), "{s}");
    assert!(
        line(&s, "◆A4 Prices may fall.").contains("◆B4 Prices may fall sharply"),
        "{s}"
    );
    assert!(!s.contains("◆A2"), "{s}");

    // Tab gives the rows the keys back.
    press(&mut app, KeyCode::Tab);
    assert_eq!(ws(&app).focus, Focus::Rows);
    assert!(!screen(&mut app).contains('◆'));

    // The merge is a synthesis node aggregating both branches, in their session.
    let node = store.node(merged.node).unwrap().unwrap();
    assert_eq!((node.kind, node.session), (NodeType::Synthesis, a.session));
    let edges = store
        .edges_from(merged.node, Some(EdgeType::Aggregates))
        .unwrap();
    let mut to: Vec<_> = edges.iter().map(|e| e.dst).collect();
    to.sort();
    let mut want = vec![a.id, b.id];
    want.sort();
    assert_eq!(to, want);

    // alt-d comes back to the workspace from anywhere.
    key(&mut app, '1');
    assert_eq!(app.state.workspace, think::ID);
    app.handle_event(Event::Key(KeyEvent::new(
        KeyCode::Char('d'),
        KeyModifiers::ALT,
    )));
    assert_eq!(app.state.workspace, diff::ID);
}
