//! Session export/import round trips (byte-identical second export), the export formats,
//! full-text search over imported thinking, and the v1 → v3 store migration.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;

use chrono::TimeZone;
use glassbox::engines::transcript::drawing::{self, Edges};
use glassbox::engines::transcript::{Importer, discover, export};
use glassbox::store::{
    Alternative, DecisionId, DecisionPoint, Edge, EdgeType, Insight, InsightId, Node, NodeStatus,
    NodeType, RawStream, Run, RunId, RunKind, RunStatus, SCHEMA_VERSION, Session, SessionSource,
    Store, StoredChunk, StreamId,
};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn import_fixtures(store: &Store) {
    let mut errors = Vec::new();
    let files = discover(
        &[Path::new(FIXTURES).join("claude_code/projects")],
        &mut errors,
    )
    .unwrap();
    let mut importer = Importer::new(store.clone()).unwrap();
    importer.import_files(&files, None).unwrap();
}

/// A glassbox session with one of everything a session can own.
fn rich_session(store: &Store) -> Session {
    let t = chrono::Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
    let mut s = Session::new("rich \"session\"", SessionSource::Glassbox);
    s.provider = Some("anthropic".into());
    s.meta.insert("zeta".into(), serde_json::json!(1));
    s.meta.insert(
        "alpha".into(),
        serde_json::json!({"b": [1.5, null, "x"], "a": true}),
    );
    let q = Node::new(s.id, NodeType::Query, "What is 0.1 + 0.2?");
    let mut th = Node::new(
        s.id,
        NodeType::Thinking,
        "Either round or use decimals. I'll use decimals.",
    );
    th.confidence = Some(0.731_234_567_89);
    th.meta.insert("steps".into(), serde_json::json!([{"index": 0, "kind": "analysis", "text": "x", "start": 0, "confidence": 0.6}]));
    let stream = StreamId::new();
    th.raw_stream = Some(stream);
    let mut r = Node::new(
        s.id,
        NodeType::Response,
        "0.30000000000000004 — use Decimal.",
    );
    r.status = NodeStatus::Failed {
        error: "cut off".into(),
    };
    let note = Node::new(s.id, NodeType::HumanAnnotation, "a reviewer's note ✓");
    let header = RawStream {
        id: stream,
        session: s.id,
        provider: "anthropic".into(),
        model: "m".into(),
        request: serde_json::json!({"messages": [{"role": "user", "content": "q"}]}),
        created_at: t,
        nodes: vec![th.id, r.id],
        chunk_count: 2,
        total_bytes: 7,
    };
    let chunks = [
        StoredChunk {
            offset_us: 0,
            bytes: vec![0, 159, 146, 150],
        },
        StoredChunk {
            offset_us: 1_500,
            bytes: b"ok\n".to_vec(),
        },
    ];
    let dp = DecisionPoint {
        id: DecisionId::new(),
        node: th.id,
        step_number: 1,
        description: "round or decimals".into(),
        chosen_path: "decimals".into(),
        alternatives: vec![Alternative {
            path: "round".into(),
            reason_rejected: Some("hides it".into()),
        }],
        confidence: 0.8,
        created_at: t,
    };
    let insight = Insight {
        id: InsightId::new(),
        session: s.id,
        kind: "pattern".into(),
        text: "prefers exactness".into(),
        confidence: 0.5,
        evidence: vec![serde_json::json!({"node": q.id})],
        nodes_analyzed: vec![q.id, th.id],
        created_at: t,
    };
    let run = Run {
        id: RunId::new(),
        session: s.id,
        kind: RunKind::Verify,
        params: serde_json::json!({"k": 3}),
        summary: serde_json::json!({"ok": true}),
        status: RunStatus::Done,
        created_at: t,
        finished_at: Some(t),
    };
    store
        .write(|w| {
            w.put_session(&s)?;
            for n in [&q, &th, &r, &note] {
                w.put_node(n)?;
            }
            w.put_edge(&Edge::new(q.id, EdgeType::Influences, th.id))?;
            w.put_edge(&Edge::new(r.id, EdgeType::Answers, q.id))?;
            w.put_edge(&Edge::new(note.id, EdgeType::Refines, r.id))?;
            w.put_decision_point(&dp)?;
            w.put_insight(&insight)?;
            w.put_run(&run)?;
            w.put_raw_stream(&header)?;
            for (i, c) in chunks.iter().enumerate() {
                w.put_raw_chunk(stream, i as u32, c)?;
            }
            Ok(())
        })
        .unwrap();
    s
}

#[test]
fn json_export_import_round_trips_byte_identically() {
    let a_dir = tempfile::tempdir().unwrap();
    let a = support::store::open(&a_dir.path().join("a.redb")).unwrap();
    import_fixtures(&a);
    let rich = rich_session(&a);
    let b_dir = tempfile::tempdir().unwrap();
    let b = support::store::open(&b_dir.path().join("b.redb")).unwrap();
    let sessions = a.sessions().unwrap();
    assert_eq!(sessions.len(), 4);
    for s in &sessions {
        let first = export::to_json(&export::collect(&a, s.id).unwrap()).unwrap();
        let parsed = export::parse_json(&first, "first.json").unwrap();
        export::import(&b, &parsed, false).unwrap();
        let second = export::to_json(&export::collect(&b, s.id).unwrap()).unwrap();
        assert_eq!(first, second, "second export of {} differs", s.title);
        assert_eq!(a.session(s.id).unwrap(), b.session(s.id).unwrap());
        assert_eq!(
            a.session_nodes(s.id).unwrap(),
            b.session_nodes(s.id).unwrap()
        );
    }
    let e = export::collect(&b, rich.id).unwrap();
    assert_eq!(e.nodes.len(), 4);
    assert_eq!(e.edges.len(), 3);
    assert_eq!(e.decision_points.len(), 1);
    assert_eq!(e.insights.len(), 1);
    assert_eq!(e.runs.len(), 1);
    assert_eq!(e.raw_streams.len(), 1);
    let stream = e.raw_streams[0].header.id;
    assert_eq!(b.raw_chunks(stream).unwrap(), a.raw_chunks(stream).unwrap());
    assert_eq!(
        b.raw_chunks(stream).unwrap()[0].bytes,
        vec![0, 159, 146, 150]
    );
    // The imported copy is searchable too.
    assert_eq!(b.search("reviewer", None, 5).unwrap().len(), 1);

    // Importing the same session again is refused; --replace swaps it in one transaction.
    let text = export::to_json(&e).unwrap();
    let parsed = export::parse_json(&text, "x.json").unwrap();
    let err = export::import(&b, &parsed, false).unwrap_err().to_string();
    assert!(err.contains("already in the store"), "{err}");
    export::import(&b, &parsed, true).unwrap();
    assert_eq!(
        export::to_json(&export::collect(&b, rich.id).unwrap()).unwrap(),
        text
    );
}

#[test]
fn graph_and_markdown_exports_cover_every_node_and_edge() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    import_fixtures(&store);
    let s = store
        .sessions()
        .unwrap()
        .into_iter()
        .find(|s| s.title == "login form")
        .unwrap();
    let e = export::collect(&store, s.id).unwrap();
    let dot = drawing::to_dot(&e, Edges::All);
    assert!(dot.starts_with("digraph"));
    // Every edge is drawn; a compaction's supersedes edges are one edge to its range.
    let supersedes = |e: &&Edge| e.kind == EdgeType::Supersedes;
    let superseding: std::collections::HashSet<_> =
        e.edges.iter().filter(supersedes).map(|e| e.src).collect();
    assert_eq!(
        dot.matches(" -> ").count(),
        e.edges.iter().filter(|x| !supersedes(x)).count() + superseding.len()
    );
    assert!(!superseding.is_empty());
    assert!(
        dot.contains("[label=\"supersedes\", constraint=false")
            && dot.contains("[label=\"branches_from\"]")
    );
    for n in &e.nodes {
        assert!(dot.contains(&format!("\"{}\" [label=", n.id)));
    }
    let mm = drawing::to_mermaid(&e, Edges::All);
    assert!(mm.starts_with("flowchart TD\n"));
    assert_eq!(
        mm.matches(" -->|").count() + mm.matches(" -.->|").count(),
        dot.matches(" -> ").count()
    );
    let tree = drawing::to_dot(&e, Edges::Tree);
    assert!(!tree.contains("constraint=false") && tree.contains("edges left out"));
    assert!(mm.contains("-.->|supersedes|"));
    let md = export::to_markdown(&e);
    assert!(md.starts_with("# login form\n"));
    assert!(md.contains("## User · "));
    assert!(md.contains("### Thinking · "));
    assert!(md.contains("### Tool call: Task"));
    assert!(md.contains("### Compaction"));
    assert!(md.contains("(subagent)"));
}

#[test]
fn search_finds_a_word_only_in_one_thinking_block() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    import_fixtures(&store);
    let hits = store.search("Zygomorphic", None, 10).unwrap();
    assert_eq!(hits.len(), 1);
    let hit = &hits[0];
    assert_eq!(hit.kind, NodeType::Thinking);
    let node = store.node(hit.node).unwrap().unwrap();
    assert!(node.text.contains("zygomorphic"));
    assert_eq!(node.meta["uuid"], "10000000-0000-4000-8000-000000000002");
    let session = store.session(hit.session).unwrap().unwrap();
    assert_eq!(session.title, "Fixing float rounding in the calculator");
    let (s, e) = hit.highlights[0];
    assert_eq!(&hit.snippet[s..e], "zygomorphic");
    // Restricting to another session finds nothing; tool results are searchable too.
    let other = store
        .sessions()
        .unwrap()
        .into_iter()
        .find(|s| s.id != hit.session)
        .unwrap();
    assert!(
        store
            .search("zygomorphic", Some(other.id), 10)
            .unwrap()
            .is_empty()
    );
    let tool_hits = store.search("SignupForm", None, 10).unwrap();
    assert!(tool_hits.iter().any(|h| h.kind == NodeType::ToolCall));
    // Deleting the session removes its entries.
    store.write(|w| w.delete_session(hit.session)).unwrap();
    assert!(store.search("zygomorphic", None, 10).unwrap().is_empty());
}

#[test]
fn v1_store_migrates_to_the_current_schema_and_is_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    std::fs::copy(Path::new(FIXTURES).join("store_v1.redb"), &path).unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(SCHEMA_VERSION, 15);
    assert_eq!(store.schema_version().unwrap(), 15);
    // v5: the memory tables exist and are empty; v6: so is the learning log, and a replay
    // agrees with the (empty) read models.
    assert_eq!(store.memory_count().unwrap(), 0);
    assert_eq!(store.learning_event_count().unwrap(), 0);
    assert_eq!(store.rebuild_learnings(false).unwrap().differences, 0);
    assert!(store.memory_scopes().unwrap().is_empty());
    assert_eq!(
        store.search_doc_count().unwrap(),
        1,
        "\"4\" has no searchable word"
    );
    let hits = store.search("what", None, 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].kind, NodeType::Query);
    assert_eq!(
        store.node(hits[0].node).unwrap().unwrap().text,
        "What is 2+2?"
    );
    drop(store);
    // Reopening does not index twice.
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.search_doc_count().unwrap(),
        1,
        "\"4\" has no searchable word"
    );
    assert_eq!(store.search("what", None, 10).unwrap().len(), 1);
}

/// Runs the glassbox binary on `data` with `args`; returns (success, stdout, stderr).
fn glassbox(data: &Path, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_glassbox"))
        .args(args)
        .env("GLASSBOX_DATA_DIR", data)
        .envs(support::bin::store_env(data))
        .env("GLASSBOX_CONFIG_DIR", data.join("config"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn replay_print_plays_recorded_streams_and_imported_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let store = support::store::open(&data.join("glassbox.redb")).unwrap();
    // A glassbox session whose answer was recorded from the Anthropic stream fixture.
    let s = Session::new("17 × 23", SessionSource::Glassbox);
    let q = Node::new(s.id, NodeType::Query, "What is 17 × 23?");
    let stream = StreamId::new();
    let mut r = Node::new(s.id, NodeType::Response, "17 × 23 = **391**.");
    r.raw_stream = Some(stream);
    let bytes = std::fs::read(Path::new(FIXTURES).join("streams/anthropic_thinking.sse")).unwrap();
    let header = RawStream {
        id: stream,
        session: s.id,
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        request: serde_json::json!({}),
        created_at: r.created_at,
        nodes: vec![r.id],
        chunk_count: 2,
        total_bytes: bytes.len() as u64,
    };
    let (a, b) = bytes.split_at(bytes.len() / 2);
    store
        .write(|w| {
            w.put_session(&s)?;
            w.put_node(&q)?;
            w.put_node(&r)?;
            w.put_raw_stream(&header)?;
            w.put_raw_chunk(
                stream,
                0,
                &StoredChunk {
                    offset_us: 0,
                    bytes: a.to_vec(),
                },
            )?;
            w.put_raw_chunk(
                stream,
                1,
                &StoredChunk {
                    offset_us: 20_000,
                    bytes: b.to_vec(),
                },
            )
        })
        .unwrap();
    import_fixtures(&store);
    drop(store);

    let sid = s.id.to_string();
    let (ok, out, err) = glassbox(&data, &["replay", &sid, "--print", "--speed", "0"]);
    assert!(ok, "{err}");
    assert!(out.contains("What is 17 × 23?"), "{out}");
    assert!(
        out.contains(
            "The user asks for 17 × 23. 17 × 20 = 340, 17 × 3 = 51, so 391 — «ça va» 漢字."
        ),
        "{out}"
    );
    assert!(out.contains("17 × 23 = **391**."), "{out}");

    let (ok, out, err) = glassbox(&data, &["search", "zygomorphic", "--json"]);
    assert!(ok, "{err}");
    let hits: serde_json::Value = serde_json::from_str(&out).unwrap();
    let imported = hits[0]["session"].as_str().unwrap().to_string();
    assert_eq!(hits[0]["kind"], "thinking");
    let (ok, out, err) = glassbox(&data, &["replay", &imported, "--print", "--speed", "0"]);
    assert!(ok, "{err}");
    let user = out.find("Why does 0.1 + 0.2").unwrap();
    let thinking = out.find("zygomorphic").unwrap();
    let answer = out.find("Glad it helped!").unwrap();
    assert!(user < thinking && thinking < answer, "{out}");
    assert!(out.contains("tool call: Read"), "{out}");

    let (ok, _, err) = glassbox(&data, &["replay", &imported]);
    assert!(!ok);
    assert!(
        err.contains("the TUI replay needs a terminal") && err.contains("--print"),
        "{err}"
    );
    let (ok, _, err) = glassbox(&data, &["search", "qwxzvvkq"]);
    assert!(!ok, "no match exits 1");
    assert!(err.contains("no matches"), "{err}");
}
