//! Unit tests of the export formats: the in-memory and streamed forms agree, and bad
//! documents name their problem.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::markdown::fence_for;
use super::*;
use crate::store::{EdgeType, NodeId, NodeType, SessionSource};

fn sample() -> SessionExport {
    let s = Session::new("a \"quoted\" <title>", SessionSource::Glassbox);
    let q = Node::new(s.id, NodeType::Query, "why \"x\" < y?\nsecond line");
    let r = Node::new(s.id, NodeType::Response, "because `a` # b");
    SessionExport {
        format: FORMAT.into(),
        version: FORMAT_VERSION,
        session: s,
        edges: vec![Edge::new(r.id, EdgeType::Answers, q.id)],
        nodes: vec![q, r],
        decision_points: vec![],
        insights: vec![],
        runs: vec![],
        raw_streams: vec![],
    }
}

#[test]
fn bad_exports_name_the_problem() {
    let err = parse_json("{\"format\":\"other\"}", "f.json")
        .unwrap_err()
        .to_string();
    assert!(err.contains("f.json: format is 'other'"), "{err}");
    let err = parse_json("[1,", "f.json").unwrap_err().to_string();
    assert_eq!(err, "f.json:1:3: not JSON: EOF while parsing a value");
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let err = parse_json(&deep, "f.json").unwrap_err().to_string();
    assert_eq!(err, "f.json:1:128: not JSON: recursion limit exceeded");
    let mut e = sample();
    e.nodes[0].session = SessionId::new();
    let text = to_json(&e).unwrap();
    let err = parse_json(&text, "f.json").unwrap_err().to_string();
    assert!(err.contains("belongs to another session"), "{err}");
}

#[test]
fn markdown_fences_outgrow_backticks() {
    assert_eq!(fence_for("a ``` b"), "````");
    assert_eq!(fence_for("plain"), "```");
}

/// A store holding `e` (through the whole-session import).
fn stored(e: &SessionExport) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    import(&store, e, false).unwrap();
    (dir, store)
}

/// `sample()` with a decision point, an insight, a run and a recorded stream.
fn rich() -> SessionExport {
    use crate::store::{Alternative, DecisionId, InsightId, RunId, RunKind, RunStatus, StreamId};
    let mut e = sample();
    let sid = e.session.id;
    let mut th = Node::new(sid, NodeType::Thinking, "first\nsecond");
    th.confidence = Some(0.25);
    let t = th.created_at;
    e.decision_points.push(DecisionPoint {
        id: DecisionId::new(),
        node: th.id,
        step_number: 2,
        description: "which way".into(),
        chosen_path: "left".into(),
        alternatives: vec![Alternative {
            path: "right".into(),
            reason_rejected: None,
        }],
        confidence: 0.5,
        created_at: t,
    });
    e.edges
        .push(Edge::new(e.nodes[0].id, EdgeType::Influences, th.id));
    e.nodes.push(th);
    e.insights.push(Insight {
        id: InsightId::new(),
        session: sid,
        kind: "pattern".into(),
        text: "short".into(),
        confidence: 0.9,
        evidence: vec![],
        nodes_analyzed: vec![],
        created_at: t,
    });
    e.runs.push(Run {
        id: RunId::new(),
        session: sid,
        kind: RunKind::Verify,
        params: serde_json::json!({}),
        summary: serde_json::json!({"ok": true}),
        status: RunStatus::Done,
        created_at: t,
        finished_at: None,
    });
    let stream = StreamId::new();
    e.raw_streams.push(StreamExport {
        header: RawStream {
            id: stream,
            session: sid,
            provider: "p".into(),
            model: "m".into(),
            request: serde_json::json!(null),
            created_at: t,
            nodes: vec![],
            chunk_count: 1,
            total_bytes: 2,
        },
        chunks: vec![ChunkExport {
            offset_us: 3,
            bytes_base64: BASE64.encode([0xff, 0]),
        }],
    });
    e
}

#[test]
fn streamed_exports_match_the_whole_session_forms() {
    for e in [sample(), rich()] {
        let (_dir, store) = stored(&e);
        let whole = collect(&store, e.session.id).unwrap();
        let mut json = Vec::new();
        let written = write_json(&store, e.session.id, &mut json).unwrap();
        assert_eq!(String::from_utf8(json).unwrap(), to_json(&whole).unwrap());
        assert_eq!(
            written,
            Written {
                nodes: e.nodes.len(),
                edges: e.edges.len()
            }
        );
        let mut md = Vec::new();
        let written = write_markdown(&store, e.session.id, &mut md).unwrap();
        assert_eq!(String::from_utf8(md).unwrap(), to_markdown(&whole));
        assert_eq!(written.nodes, e.nodes.len());
    }
    let err = write_json(
        &crate::store::testing::open_at(&tempfile::tempdir().unwrap().path().join("s")),
        SessionId::new(),
        Vec::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.ends_with("not found"), "{err}");
}

/// The error of `check_file` on `text`, which must be `parse_json`'s too.
fn file_error(text: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.json");
    std::fs::write(&path, text).unwrap();
    let from_file = check_file(&path).unwrap_err().to_string();
    let source = path.display().to_string();
    if let Ok(s) = std::str::from_utf8(text)
        && !s.trim().is_empty()
    {
        let from_text = parse_json(s, &source).unwrap_err().to_string();
        assert_eq!(from_file, from_text);
    }
    from_file
        .strip_prefix(&source)
        .unwrap_or(&from_file)
        .to_string()
}

#[test]
fn file_and_text_readers_report_the_same_first_problem() {
    let e = rich();
    let good = to_json(&e).unwrap();
    let other = SessionId::new();
    let cases: Vec<(String, &str)> = vec![
        ("".into(), ": empty file, not a session export"),
        (" \n\t".into(), ": empty file, not a session export"),
        ("[1,".into(), ":1:3: not JSON: EOF while parsing a value"),
        (format!("{good}x"), ": not JSON: trailing characters"),
        // Not JSON wins over a wrong format before it.
        (
            good.replacen(FORMAT, "other", 1) + "]",
            ": not JSON: trailing characters",
        ),
        (
            "{\"format\":\"other\"}".into(),
            ": format is 'other', expected",
        ),
        ("{\"format\":7}".into(), ": not a glassbox session export"),
        ("{\"a\":[{}]}".into(), ": not a glassbox session export"),
        ("\"text\"".into(), ": not a glassbox session export"),
        (
            good.replacen("\"version\": 1", "\"version\": 2", 1),
            ": export version 2 is newer than this glassbox reads (1)",
        ),
        (
            good.replacen("\"version\": 1", "\"version\": 99999999999", 1),
            ": export version 99999999999 is newer",
        ),
        (
            good.replacen("\"kind\": \"query\"", "\"kind\": \"poem\"", 1),
            ": invalid session export: unknown variant `poem`",
        ),
        (
            good.replacen("\"insights\": [", "\"insights\": 3, \"x\": [", 1),
            ": invalid session export: invalid type: integer `3`",
        ),
        (
            good.replacen("\"runs\":", "\"nodes\": [], \"runs\":", 1),
            ": invalid session export: duplicate field `nodes`",
        ),
        (
            good.replacen(
                "\"raw_streams\":",
                "\"unknown\": {\"a\": [1, 2.5, null, true]}, \"raw_streams\":",
                1,
            )
            .replacen("\"edges\": [", "\"edges\": [{\"src\": 1}, ", 1),
            ": invalid session export: invalid type: integer `1`, expected",
        ),
        (
            good.replacen(
                &format!("\"session\": \"{}\"", e.session.id),
                &format!("\"session\": \"{other}\""),
                1,
            ),
            "belongs to another session than",
        ),
    ];
    for (text, expected) in cases {
        let err = file_error(text.as_bytes());
        assert!(err.contains(expected), "{expected:?} not in {err:?}");
    }
    // An unknown field is read as JSON, nesting limit included.
    let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
    let err = file_error(
        good.replacen("\"runs\":", &format!("\"x\": {deep}, \"runs\":"), 1)
            .as_bytes(),
    );
    assert!(
        err.ends_with(": not JSON: recursion limit exceeded"),
        "{err}"
    );
    // A missing field is named where the document ends.
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v.as_object_mut().unwrap().remove("insights");
    let text = serde_json::to_string_pretty(&v).unwrap();
    let lines = text.lines().count();
    let err = file_error(text.as_bytes());
    assert_eq!(
        err,
        format!(":{lines}:1: invalid session export: missing field `insights`")
    );
}

#[test]
fn bad_bytes_are_found_across_read_chunks() {
    // Two-byte characters over more than one read, the one cut by each read's end kept.
    let mut text = "é".repeat(700_000).into_bytes();
    text.extend_from_slice(b"\n\nab");
    text.push(0xc3);
    text.extend_from_slice(b"(");
    assert_eq!(
        file_error(&text),
        ":3: not UTF-8 (invalid byte at column 3); is this a session export?"
    );
    let mut cut = "é".repeat(10).into_bytes();
    cut.push(0xc3);
    assert_eq!(
        file_error(&cut),
        ":1: not UTF-8 (invalid byte at column 21); is this a session export?"
    );
}

#[test]
fn a_file_that_changes_after_its_check_leaves_nothing_stored() {
    // More nodes than one batch, so some are committed before the change is met.
    let dir = tempfile::tempdir().unwrap();
    let (e, path, text) = batched_file(dir.path());
    let sid = e.session.id;
    let checked = check_file(&path).unwrap();
    assert_eq!(checked.session().id, sid);
    let last = e.nodes.last().unwrap().id;
    let changed = text.replacen(&last.to_string(), &NodeId::new().to_string(), 1);
    std::fs::write(&path, changed).unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let err = import_checked(&store, &checked, false, None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("changed since it was checked")
            && err.ends_with("the session is not in the store"),
        "{err}"
    );
    assert!(store.session(sid).unwrap().is_none());
    assert_eq!(store.session_node_count(sid).unwrap(), 0);
    // Put back, it imports whole.
    std::fs::write(&path, &text).unwrap();
    let done = import_checked(&store, &checked, false, None).unwrap();
    assert_eq!(done.nodes, e.nodes.len());
    assert_eq!(to_json(&collect(&store, sid).unwrap()).unwrap(), text);
}

/// An export of `sample()` with more nodes than one batch, written to a file; returns the
/// export, the file and its text.
fn batched_file(dir: &std::path::Path) -> (SessionExport, std::path::PathBuf, String) {
    let mut e = sample();
    let sid = e.session.id;
    for i in 0..super::json_in::BATCH_NODES + 5 {
        e.nodes
            .push(Node::new(sid, NodeType::Response, format!("n{i}")));
    }
    e.nodes.sort_by_key(|n| n.id);
    let path = dir.join("s.json");
    let text = to_json(&e).unwrap();
    std::fs::write(&path, &text).unwrap();
    (e, path, text)
}

#[test]
fn a_stopped_import_takes_out_what_it_stored() {
    let dir = tempfile::tempdir().unwrap();
    let (e, path, text) = batched_file(dir.path());
    let sid = e.session.id;
    let checked = check_file(&path).unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let stop = std::sync::atomic::AtomicBool::new(true);
    let err = import_checked(&store, &checked, false, Some(&stop)).unwrap_err();
    assert!(matches!(err, TranscriptError::Interrupted), "{err}");
    assert!(store.session(sid).unwrap().is_none());
    assert_eq!(store.session_node_count(sid).unwrap(), 0);
    stop.store(false, std::sync::atomic::Ordering::Relaxed);
    let done = import_checked(&store, &checked, false, Some(&stop)).unwrap();
    assert!(!done.replaced_unfinished);
    assert_eq!(to_json(&collect(&store, sid).unwrap()).unwrap(), text);
}

#[test]
fn what_a_killed_import_left_is_replaced_by_the_next_without_replace() {
    let dir = tempfile::tempdir().unwrap();
    let (e, path, text) = batched_file(dir.path());
    let sid = e.session.id;
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    // As a kill after the first batch leaves it: the marked record and some nodes.
    let mut marked = e.session.clone();
    marked
        .meta
        .insert(super::UNFINISHED_IMPORT.into(), serde_json::json!(true));
    store
        .write(|w| {
            w.put_session(&marked)?;
            for n in &e.nodes[..100] {
                w.put_node(n)?;
            }
            Ok(())
        })
        .unwrap();
    let checked = check_file(&path).unwrap();
    let done = import_checked(&store, &checked, false, None).unwrap();
    assert!(done.replaced_unfinished);
    assert_eq!(to_json(&collect(&store, sid).unwrap()).unwrap(), text);
    assert!(
        !store
            .session(sid)
            .unwrap()
            .unwrap()
            .meta
            .contains_key(super::UNFINISHED_IMPORT),
        "the finished import's record has no mark"
    );
    // A finished session is still refused without --replace.
    let again = import_checked(&store, &checked, false, None).unwrap_err();
    assert!(again.to_string().contains("--replace"), "{again}");
    // And the in-memory import replaces an unfinished one too.
    store.write(|w| w.put_session(&marked)).unwrap();
    super::import(&store, &parse_json(&text, "s.json").unwrap(), false).unwrap();
    assert_eq!(to_json(&collect(&store, sid).unwrap()).unwrap(), text);
}
