//! Rendering benches: one Think-workspace frame of a 100,000-node session at 200×50, one
//! Ledger frame of 100,000 thoughts nested 200 levels deep at 200×50 (the tree widget fed the
//! rows in view), and frames while 10,000 thinking deltas a second stream in (160 deltas per
//! 16 ms frame).

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use glassbox::app::graph::{NodeEntry, Tree};
use glassbox::app::keymap::Keymap;
use glassbox::app::loaded::Bodies;
use glassbox::app::runtime::App;
use glassbox::app::state::LoadedSession;
use glassbox::app::update::Msg;
use glassbox::config::{Config, ProviderKind};
use glassbox::engines::llm::replay::ReplayProvider;
use glassbox::engines::orchestrator::{Orchestrator, TurnEvent};
use glassbox::store::{
    Edge, EdgeType, Node, NodeHead, NodeType, RawStream, Session, SessionId, SessionSource, Store,
    StreamId,
};
use glassbox::views::ledger_model::LedgerModel;
use glassbox::views::theme::{ColorDepth, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// A session of `n` nodes: query → thinking → response turns, thinking with three steps.
fn big_session(n: usize) -> (Session, Vec<Node>) {
    let s = Session::new("a very long session", SessionSource::Glassbox);
    let mut nodes = Vec::with_capacity(n);
    for i in 0..n {
        let kind = match i % 3 {
            0 => NodeType::Query,
            1 => NodeType::Thinking,
            _ => NodeType::Response,
        };
        let mut node = Node::new(
            s.id,
            kind,
            format!("node {i}: some reasoning text that is long enough to be cut"),
        );
        if kind == NodeType::Thinking {
            node.meta.insert(
                "steps".into(),
                serde_json::json!([
                    {"index": 0, "kind": "analysis", "text": "first"},
                    {"index": 1, "kind": "evaluation", "text": "second"},
                    {"index": 2, "kind": "conclusion", "text": "third"}
                ]),
            );
        }
        nodes.push(node);
    }
    (s, nodes)
}

fn app(rt: &tokio::runtime::Runtime, dir: &std::path::Path) -> App {
    let _guard = rt.enter();
    let store = Store::open(&dir.join("bench.redb")).unwrap_or_else(|e| panic!("{e}"));
    let header = RawStream {
        id: StreamId::new(),
        session: SessionId::new(),
        provider: "local".into(),
        model: "m".into(),
        request: serde_json::Value::Null,
        created_at: chrono::Utc::now(),
        nodes: vec![],
        chunk_count: 0,
        total_bytes: 0,
    };
    let provider = Arc::new(ReplayProvider::new(header, vec![], 0.0));
    let orch = Orchestrator::new(store.clone(), provider, "m");
    let cfg = Config::builtin().unwrap_or_else(|e| panic!("{e}"));
    let theme =
        Theme::builtin("dark", ColorDepth::TrueColor).unwrap_or_else(|| panic!("no dark theme"));
    App::new(
        store,
        cfg,
        Keymap::builtin(),
        theme,
        Ok((orch, ProviderKind::Local)),
        "m".into(),
    )
}

fn draw_big_session(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut app = app(&rt, dir.path());
    let (s, nodes) = big_session(100_000);
    let _guard = rt.enter();
    app.dispatch(Msg::Resize(200, 50));
    let heads: Vec<NodeHead> = nodes.iter().map(NodeHead::of).collect();
    app.dispatch(Msg::SessionLoaded {
        loaded: LoadedSession::from_heads(s, &heads),
        tree: {
            let mut tree = Tree::default();
            for h in &heads {
                tree.push(NodeEntry::from_head(h));
            }
            tree
        },
        bodies: Bodies {
            nodes,
            decisions: HashMap::new(),
        },
        tokens: 0,
    });
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap_or_else(|e| panic!("{e}"));
    c.bench_function("draw think 100k nodes 200x50", |b| {
        b.iter(|| {
            term.draw(|f| app.draw(f)).unwrap_or_else(|e| panic!("{e}"));
            black_box(term.backend().buffer().area);
        })
    });
}

fn frames_while_streaming(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut app = app(&rt, dir.path());
    let _guard = rt.enter();
    app.dispatch(Msg::Resize(200, 50));
    app.state.input.set_text("a question");
    app.dispatch(Msg::Action(glassbox::app::action::Action::Submit));
    let run = app.state.run.as_ref().map(|r| r.id).unwrap_or(0);
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap_or_else(|e| panic!("{e}"));
    let delta = "reasoning about the problem step by step, ";
    let mut frame = 0u64;
    c.bench_function("frame with 160 thinking deltas (10k/s)", |b| {
        b.iter(|| {
            for i in 0..160 {
                let text = if (frame * 160 + i) % 40 == 39 {
                    "\n\n".to_string()
                } else {
                    delta.to_string()
                };
                app.dispatch(Msg::Turn {
                    run,
                    event: TurnEvent::Thinking(text.into()),
                });
            }
            frame += 1;
            term.draw(|f| app.draw(f)).unwrap_or_else(|e| panic!("{e}"));
        })
    });
}

/// A ledger of 100,000 thoughts: a main chain and 100 branches of 100 thoughts, each branch
/// hanging off the first thought of the one before, so the window opens deep in the tree.
fn big_ledger() -> LedgerModel {
    let s = Session::new("a very long ledger", SessionSource::Mcp);
    let thought = |n: usize, meta: serde_json::Value| {
        let mut node = Node::new(
            s.id,
            NodeType::LedgerThought,
            format!("thought {n}: some reasoning text that is long enough to be cut"),
        );
        node.meta
            .insert("thoughtNumber".into(), serde_json::json!(n));
        node.meta
            .insert("totalThoughts".into(), serde_json::json!(100_000));
        node.meta
            .insert("nextThoughtNeeded".into(), serde_json::json!(true));
        if let serde_json::Value::Object(m) = meta {
            node.meta.extend(m);
        }
        node
    };
    let mut nodes = Vec::with_capacity(100_000);
    let mut edges = Vec::new();
    for n in 1..=90_000 {
        nodes.push(thought(n, serde_json::json!({})));
    }
    let mut origin = nodes[45_000].id;
    for b in 0..100 {
        let mut first = None;
        for k in 0..100 {
            let n = 90_001 + b * 100 + k;
            let node = thought(n, serde_json::json!({"branchId": format!("b{b}")}));
            edges.push(Edge::new(node.id, EdgeType::BranchesFrom, origin));
            first.get_or_insert(node.id);
            nodes.push(node);
        }
        origin = first.unwrap_or(origin);
    }
    LedgerModel::from_parts(Some(&s), &nodes, &edges)
}

fn draw_big_ledger(c: &mut Criterion) {
    let mut model = big_ledger();
    let theme =
        Theme::builtin("dark", ColorDepth::TrueColor).unwrap_or_else(|| panic!("no dark theme"));
    // Deep inside the nested branches, well away from both ends.
    let depth = |i: usize| model.rows()[i].depth;
    let at = (0..model.rows().len())
        .find(|&i| depth(i) >= 50)
        .unwrap_or(model.rows().len() / 2);
    model.selected = at + 20;
    model.offset = at;
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap_or_else(|e| panic!("{e}"));
    c.bench_function("draw ledger 100k thoughts 200x50", |b| {
        b.iter(|| {
            term.draw(|f| glassbox::views::ledger::render(f, f.area(), &model, &theme, true))
                .unwrap_or_else(|e| panic!("{e}"));
            black_box(term.backend().buffer().area);
        })
    });
}

criterion_group!(
    benches,
    draw_big_session,
    draw_big_ledger,
    frames_while_streaming
);
criterion_main!(benches);
