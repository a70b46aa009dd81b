//! Copying a store between backends: redb → PostgreSQL → redb, and the refusals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;

use crate::store::testing::{Fixture, pg_backend, pg_database};
use crate::store::*;

/// A store with a row in nearly every kind of table: a compression dictionary, two sessions
/// of nodes (indexed for search, their records compressed with it), edges, a raw stream,
/// memories with a vector and counters, learnings and their events, a transcript cursor.
fn fill(store: &Store) -> Vec<SessionId> {
    let samples: Vec<String> = (0..2000)
        .map(|i| {
            format!(
                r#"{{"id":"{i:032x}","kind":"thinking","text":"step {i} of the copy reads a table of rows and writes it","status":"complete","meta":{{"n":{i}}}}}"#
            )
        })
        .collect();
    let dict = zstd::dict::from_samples(&samples, 8 << 10).unwrap();
    let dict = dict::register(dict).unwrap();
    store.write(|w| w.put_record_dict(&dict)).unwrap();
    let mut sessions = Vec::new();
    for (name, words) in [
        ("a", "borrow checker lifetimes"),
        ("b", "redb postgres copy"),
    ] {
        let s = Session::new(name, SessionSource::Glassbox);
        let nodes: Vec<Node> = (0..12)
            .map(|i| Node::new(s.id, NodeType::Thinking, format!("{words} step {i}")))
            .collect();
        let stream = RawStream {
            id: StreamId::new(),
            session: s.id,
            provider: "anthropic".into(),
            model: "m".into(),
            request: serde_json::json!({"stream": true}),
            created_at: Utc::now(),
            nodes: vec![nodes[0].id],
            chunk_count: 2,
            total_bytes: 4,
        };
        store
            .write(|w| {
                w.put_session(&s)?;
                for n in &nodes {
                    w.put_node(n)?;
                }
                w.put_edge(&Edge::new(nodes[0].id, EdgeType::Influences, nodes[1].id))?;
                w.put_edge(&Edge::new(nodes[1].id, EdgeType::Supports, nodes[2].id))?;
                w.put_raw_stream(&stream)?;
                for (i, bytes) in [b"ab".to_vec(), vec![0, 255]].into_iter().enumerate() {
                    let chunk = StoredChunk {
                        offset_us: 10 * i as u64,
                        bytes,
                    };
                    w.put_raw_chunk(stream.id, i as u32, &chunk)?;
                }
                Ok(())
            })
            .unwrap();
        sessions.push(s.id);
    }
    let entry = MemoryEntry {
        id: MemoryId::new(),
        tier: MemoryTier::Archival,
        scope: MemoryScope::Project("/p".into()),
        section: None,
        content: "prefers small commits".into(),
        tags: vec!["style".into()],
        importance: 0.5,
        created_at: Utc::now(),
        updated_at: Utc::now(),
        provenance: Provenance {
            origin: "cli".into(),
            ..Default::default()
        },
        meta: Default::default(),
    };
    store
        .write(|w| {
            w.put_memory(&entry)?;
            let how = learning::EntryLearning {
                extractor_version: "manual".into(),
                source: learning::EventSource::UserReview,
                schema_version: learning::LEARNING_SCHEMA_VERSION,
                concepts: None,
            };
            w.learn_entry(&entry, &how)?;
            let vector = StoredVector {
                model: "m/4".into(),
                values: vec![-127, 0, 5, 127],
            };
            w.put_memory_vector(entry.id, &vector)?;
            w.bump_memory_counters(&entry.scope, MemoryCounters::inserts(1))?;
            w.put_transcript_cursor(&TranscriptCursor {
                path: "/x.jsonl".into(),
                inode: 7,
                offset: 100,
                mtime_ns: 1,
                size: 100,
                lines: 3,
            })
        })
        .unwrap();
    sessions
}

/// `counts` without the tables that are empty (a byte backend lists only tables with rows).
fn non_empty(counts: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(t, n)| (t.clone(), *n))
        .collect()
}

/// What a reader sees of the store, backend aside.
fn assert_same(a: &Store, b: &Store, sessions: &[SessionId]) {
    assert_eq!(
        serde_json::to_value(a.counts().unwrap()).unwrap(),
        serde_json::to_value(b.counts().unwrap()).unwrap()
    );
    for query in ["lifetimes", "postgres copy", "step"] {
        assert_eq!(
            a.search(query, None, 50).unwrap(),
            b.search(query, None, 50).unwrap(),
            "{query}"
        );
    }
    assert_eq!(a.search_runs().unwrap(), b.search_runs().unwrap());
    for s in sessions {
        assert_eq!(a.session(*s).unwrap(), b.session(*s).unwrap());
        let nodes = a.session_nodes(*s).unwrap();
        assert_eq!(nodes.len(), 12);
        assert_eq!(nodes, b.session_nodes(*s).unwrap());
    }
    assert_eq!(a.sessions().unwrap(), b.sessions().unwrap());
    assert_eq!(a.learnings().unwrap(), b.learnings().unwrap());
    assert_eq!(a.all_memories().unwrap(), b.all_memories().unwrap());
    assert_eq!(a.follow(0, 1000).unwrap(), b.follow(0, 1000).unwrap());
}

#[test]
fn redb_to_postgres_to_redb_keeps_every_row() {
    let first = Fixture::redb();
    let source = first.open();
    let sessions = fill(&source);

    let pg = Fixture::pg();
    let middle = pg.open();
    let mut commits: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let there = source
        .copy_batched(
            &middle,
            |table, rows| commits.entry(table.into()).or_default().push(rows),
            7,
            1 << 20,
        )
        .unwrap();
    // Batches of 7 rows: 24 nodes in four commits, each reporting the rows so far.
    assert_eq!(there["nodes"], 24);
    assert_eq!(there["record_dicts"], 1);
    assert_eq!(commits["nodes"], [7, 14, 21, 24]);
    assert!(
        there.keys().any(|t| t.starts_with("search_run_")),
        "{there:?}"
    );
    assert_same(&source, &middle, &sessions);

    let last = Fixture::redb();
    let target = last.open();
    let back = middle.copy_into(&target, |_, _| {}).unwrap();
    assert_eq!(non_empty(&there), non_empty(&back));
    assert_same(&source, &target, &sessions);

    // The copies keep working: a write to each indexes and journals on from the same rows.
    for store in [&source, &target] {
        let n = Node::new(sessions[0], NodeType::Thinking, "afterwards");
        store.write(|w| w.put_node(&n)).unwrap();
    }
    assert_eq!(
        source.search("afterwards", None, 5).unwrap().len(),
        target.search("afterwards", None, 5).unwrap().len()
    );
    assert_eq!(source.last_seq().unwrap(), target.last_seq().unwrap());
}

#[test]
fn copies_between_byte_backends_and_large_rows_commit_alone() {
    let source = Fixture::bytes().open();
    let sessions = fill(&source);
    let target = Fixture::bytes().open();
    let mut commits = 0;
    let counts = source
        .copy_batched(&target, |_, _| commits += 1, 1000, 1)
        .unwrap();
    // With a 1-byte limit every row is a commit of its own.
    let rows: u64 = counts.values().sum();
    assert!(commits as u64 >= rows, "{commits} commits for {rows} rows");
    assert_same(&source, &target, &sessions);
}

#[test]
fn a_target_with_sessions_is_refused() {
    let source = Fixture::redb().open();
    fill(&source);
    let url = pg_database();
    let target = Store::open_backend(Arc::new(pg_backend(&url)), url.clone()).unwrap();
    target
        .write(|w| w.put_session(&Session::new("mine", SessionSource::Glassbox)))
        .unwrap();
    let err = source.copy_into(&target, |_, _| {}).unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("already holds 1 sessions") && text.contains("empty store"),
        "{text}"
    );
    assert_eq!(target.counts().unwrap().nodes, 0);
}
