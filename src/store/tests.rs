//! Store unit tests: round trips for every table, cascade delete, journal, migration.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::Utc;

use super::kv::ReadableTable;
use super::testing::{Fixture, on_every_arm};
use super::*;

on_every_arm!(
    new_store_has_current_schema_and_mode_0600,
    sessions_and_nodes_round_trip_in_order,
    edges_are_indexed_both_ways,
    decision_points_insights_runs_round_trip,
    raw_streams_keep_bytes_and_offsets,
    memory_learning_events_projections_cursors,
    saved_memory_indexes_are_a_cache_that_goes_with_its_session,
    journal_is_monotonic_and_followable,
    deleting_a_session_leaves_nothing_dangling,
    resolves_ids_by_prefix,
    a_newer_schema_refuses_to_open,
    prepared_puts_skip_unchanged_nodes_and_journal_once_per_session,
    a_record_encoded_differently_but_equal_counts_as_unchanged,
    v9_records_are_compressed_and_old_words_come_from_the_text,
    v10_session_index_becomes_heads,
    v12_raw_chunks_are_compressed,
    migrates_the_v1_fixture,
);

fn session_with_nodes(store: &Store, n: usize) -> (Session, Vec<Node>) {
    let s = Session::new("t", SessionSource::Glassbox);
    let nodes: Vec<Node> = (0..n)
        .map(|i| Node::new(s.id, NodeType::Thinking, format!("n{i}")))
        .collect();
    store
        .write(|w| {
            w.put_session(&s)?;
            for n in &nodes {
                w.put_node(n)?;
            }
            Ok(())
        })
        .unwrap();
    (s, nodes)
}

fn new_store_has_current_schema_and_mode_0600(fx: &Fixture) {
    use std::os::unix::fs::PermissionsExt;
    let store = fx.open();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    if fx.is_redb() {
        let mode = std::fs::metadata(fx.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert_eq!(store.counts().unwrap().sessions, 0);
}

fn sessions_and_nodes_round_trip_in_order(fx: &Fixture) {
    let store = fx.open();
    let (s, nodes) = session_with_nodes(&store, 5);
    assert_eq!(store.session(s.id).unwrap().unwrap(), s);
    let got = store.session_nodes(s.id).unwrap();
    assert_eq!(got, nodes);
    assert_eq!(store.node(nodes[2].id).unwrap().unwrap().text, "n2");
    assert_eq!(store.session_node_count(s.id).unwrap(), 5);
    assert_eq!(store.sessions().unwrap().len(), 1);
}

fn edges_are_indexed_both_ways(fx: &Fixture) {
    let store = fx.open();
    let (_s, n) = session_with_nodes(&store, 3);
    store
        .write(|w| {
            w.put_edge(&Edge::new(n[0].id, EdgeType::Influences, n[1].id))?;
            w.put_edge(&Edge::new(n[0].id, EdgeType::Supports, n[2].id))?;
            w.put_edge(&Edge::new(n[1].id, EdgeType::Influences, n[2].id))
        })
        .unwrap();
    assert_eq!(store.edges_from(n[0].id, None).unwrap().len(), 2);
    let inf = store
        .edges_from(n[0].id, Some(EdgeType::Influences))
        .unwrap();
    assert_eq!(inf.len(), 1);
    assert_eq!(inf[0].dst, n[1].id);
    let into2 = store.edges_to(n[2].id, None).unwrap();
    let srcs: Vec<_> = into2.iter().map(|e| e.src).collect();
    assert!(srcs.contains(&n[0].id) && srcs.contains(&n[1].id));
    assert_eq!(
        store.edges_to(n[2].id, Some(EdgeType::Supports)).unwrap()[0].src,
        n[0].id
    );
}

fn decision_points_insights_runs_round_trip(fx: &Fixture) {
    let store = fx.open();
    let (s, n) = session_with_nodes(&store, 1);
    let dp = DecisionPoint {
        id: DecisionId::new(),
        node: n[0].id,
        step_number: 2,
        description: "choose".into(),
        chosen_path: "a".into(),
        alternatives: vec![Alternative {
            path: "b".into(),
            reason_rejected: Some("slow".into()),
        }],
        confidence: 0.7,
        created_at: Utc::now(),
    };
    let ins = Insight {
        id: InsightId::new(),
        session: s.id,
        kind: "pattern".into(),
        text: "x".into(),
        confidence: 0.5,
        evidence: vec![serde_json::json!({"node": n[0].id.to_string()})],
        nodes_analyzed: vec![n[0].id],
        created_at: Utc::now(),
    };
    let run = Run {
        id: RunId::new(),
        session: s.id,
        kind: RunKind::Fork,
        params: serde_json::json!({"styles": ["a"]}),
        summary: serde_json::json!({}),
        status: RunStatus::Done,
        created_at: Utc::now(),
        finished_at: None,
    };
    store
        .write(|w| {
            w.put_decision_point(&dp)?;
            w.put_insight(&ins)?;
            w.put_run(&run)
        })
        .unwrap();
    assert_eq!(store.decision_points(n[0].id).unwrap(), vec![dp]);
    assert_eq!(store.insights(s.id).unwrap(), vec![ins]);
    assert_eq!(store.run(run.id).unwrap().unwrap(), run);
    assert_eq!(store.session_runs(s.id).unwrap(), vec![run]);
}

fn raw_streams_keep_bytes_and_offsets(fx: &Fixture) {
    let store = fx.open();
    let (s, n) = session_with_nodes(&store, 1);
    let rs = RawStream {
        id: StreamId::new(),
        session: s.id,
        provider: "anthropic".into(),
        model: "m".into(),
        request: serde_json::json!({"stream": true}),
        created_at: Utc::now(),
        nodes: vec![n[0].id],
        chunk_count: 3,
        total_bytes: 6,
    };
    let chunks = vec![
        StoredChunk {
            offset_us: 10,
            bytes: b"ab".to_vec(),
        },
        StoredChunk {
            offset_us: 20,
            bytes: vec![0, 255],
        },
        StoredChunk {
            offset_us: 5_000_000,
            bytes: b"\n\n".to_vec(),
        },
    ];
    store
        .write(|w| {
            w.put_raw_stream(&rs)?;
            for (i, c) in chunks.iter().enumerate() {
                w.put_raw_chunk(rs.id, i as u32, c)?;
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(store.raw_stream(rs.id).unwrap().unwrap(), rs);
    assert_eq!(store.raw_chunks(rs.id).unwrap(), chunks);
    assert_eq!(store.session_streams(s.id).unwrap().len(), 1);
}

fn memory_learning_events_projections_cursors(fx: &Fixture) {
    let store = fx.open();
    let sess = Session::new("s", SessionSource::Glassbox);
    let core = MemoryEntry {
        id: MemoryId::new(),
        tier: MemoryTier::Core,
        scope: MemoryScope::Project("/p".into()),
        section: Some(CoreSection::Human),
        content: "terse".into(),
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
    let archival = MemoryEntry {
        id: MemoryId::new(),
        tier: MemoryTier::Archival,
        section: None,
        scope: MemoryScope::Session(sess.id),
        ..core.clone()
    };
    let vector = StoredVector {
        model: "m/384".into(),
        values: vec![-127, 0, 5, 127],
    };
    let cursor = TranscriptCursor {
        path: "/x.jsonl".into(),
        inode: 7,
        offset: 100,
        mtime_ns: 1,
        size: 100,
        lines: 3,
    };
    let (a, b) = store
        .write(|w| {
            w.put_session(&sess)?;
            w.put_memory(&core)?;
            let how = learning::EntryLearning {
                extractor_version: "manual".into(),
                source: learning::EventSource::UserReview,
                schema_version: learning::LEARNING_SCHEMA_VERSION,
                concepts: None,
            };
            let a = w.learn_entry(&archival, &how)?;
            let b = w.learn_entry(&archival, &how)?;
            w.put_memory_vector(archival.id, &vector)?;
            w.bump_memory_counters(
                &core.scope,
                MemoryCounters {
                    inserts: 2,
                    ..Default::default()
                },
            )?;
            w.put_transcript_cursor(&cursor)?;
            Ok((a, b))
        })
        .unwrap();
    assert!(a.new && !b.new && a.event_id == 1, "{a:?} {b:?}");
    assert_eq!(store.memory(core.id).unwrap().unwrap(), core);
    assert_eq!(
        store.memory(archival.id).unwrap().unwrap().content,
        archival.content
    );
    assert_eq!(
        store.scope_memories(&core.scope).unwrap(),
        vec![core.clone()]
    );
    assert_eq!(store.scope_memory_count(&core.scope).unwrap(), 1);
    assert_eq!(store.scope_memory_count(&archival.scope).unwrap(), 1);
    assert_eq!(store.scope_memory_count(&MemoryScope::Global).unwrap(), 0);
    assert_eq!(
        store.learning(archival.id).unwrap().unwrap().content,
        "terse"
    );
    assert_eq!(
        store.memory_vectors(&[archival.id, core.id]).unwrap(),
        vec![Some(vector), None]
    );
    assert_eq!(store.memory_counters(&core.scope).unwrap().inserts, 2);
    assert_eq!(store.memory_scopes().unwrap().len(), 2);
    // Deleting the session takes its session-scoped memory (and vector) with it.
    store.write(|w| w.delete_session(sess.id)).unwrap();
    assert_eq!(store.memory(archival.id).unwrap(), None);
    assert_eq!(store.memory_vectors(&[archival.id]).unwrap(), vec![None]);
    assert_eq!(store.all_memories().unwrap(), vec![core.clone()]);
    // …through an archive event: the log keeps both.
    let evs = store.learning_events(0).unwrap();
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[1].payload["reason"], "session deleted");
    assert_eq!(store.learning_events(1).unwrap().len(), 1);
    assert_eq!(store.learning_checkpoint().unwrap(), 2);
    assert_eq!(store.rebuild_learnings(false).unwrap().differences, 0);
    assert_eq!(
        store.transcript_cursor("/x.jsonl").unwrap().unwrap(),
        cursor
    );
}

fn journal_is_monotonic_and_followable(fx: &Fixture) {
    let store = fx.open();
    let (s, _) = session_with_nodes(&store, 3);
    let all = store.follow(0, 100).unwrap();
    assert_eq!(all.len(), 4);
    assert!(all.windows(2).all(|w| w[1].0 == w[0].0 + 1));
    assert_eq!(all[0].1.kind, ChangeKind::SessionPut);
    assert_eq!(all[0].1.session, Some(s.id));
    let tail = store.follow(all[1].0, 100).unwrap();
    assert_eq!(tail.len(), 2);
    assert_eq!(store.last_seq().unwrap(), all[3].0);
}

fn deleting_a_session_leaves_nothing_dangling(fx: &Fixture) {
    let store = fx.open();
    let (keep, kn) = session_with_nodes(&store, 2);
    let (gone, gn) = session_with_nodes(&store, 3);
    let stream = StreamId::new();
    store
        .write(|w| {
            w.put_edge(&Edge::new(gn[0].id, EdgeType::Influences, gn[1].id))?;
            // Cross-session edges in both directions.
            w.put_edge(&Edge::new(kn[0].id, EdgeType::Refines, gn[2].id))?;
            w.put_edge(&Edge::new(gn[2].id, EdgeType::Supports, kn[1].id))?;
            w.put_edge(&Edge::new(kn[0].id, EdgeType::Influences, kn[1].id))?;
            w.put_decision_point(&DecisionPoint {
                id: DecisionId::new(),
                node: gn[0].id,
                step_number: 1,
                description: "d".into(),
                chosen_path: "c".into(),
                alternatives: vec![],
                confidence: 0.5,
                created_at: Utc::now(),
            })?;
            w.put_run(&Run {
                id: RunId::new(),
                session: gone.id,
                kind: RunKind::Ask,
                params: serde_json::Value::Null,
                summary: serde_json::Value::Null,
                status: RunStatus::Running,
                created_at: Utc::now(),
                finished_at: None,
            })?;
            w.put_insight(&Insight {
                id: InsightId::new(),
                session: gone.id,
                kind: "pattern".into(),
                text: "i".into(),
                confidence: 0.1,
                evidence: vec![],
                nodes_analyzed: vec![],
                created_at: Utc::now(),
            })?;
            w.put_raw_stream(&RawStream {
                id: stream,
                session: gone.id,
                provider: "p".into(),
                model: "m".into(),
                request: serde_json::Value::Null,
                created_at: Utc::now(),
                nodes: vec![],
                chunk_count: 1,
                total_bytes: 1,
            })?;
            w.put_raw_chunk(
                stream,
                0,
                &StoredChunk {
                    offset_us: 0,
                    bytes: vec![1],
                },
            )
        })
        .unwrap();
    assert!(store.write(|w| w.delete_session(gone.id)).unwrap());
    assert!(!store.write(|w| w.delete_session(gone.id)).unwrap());
    let c = store.counts().unwrap();
    assert_eq!(c.sessions, 1);
    assert_eq!(c.nodes, 2);
    assert_eq!(c.edges, 1, "only the edge between kept nodes remains");
    assert_eq!(
        (
            c.decision_points,
            c.runs,
            c.insights,
            c.raw_streams,
            c.raw_chunks
        ),
        (0, 0, 0, 0, 0)
    );
    assert_eq!(store.edges_to(kn[1].id, None).unwrap().len(), 1);
    assert!(
        store
            .edges_from(kn[0].id, Some(EdgeType::Refines))
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.session_nodes(keep.id).unwrap().len(), 2);
    assert!(store.session_nodes(gone.id).unwrap().is_empty());
    // Every reverse-index entry still points at a forward edge.
    let r = store.db.begin_read().unwrap();
    let inn = r.open_table(EDGES_IN).unwrap();
    assert_eq!(inn.len().unwrap(), 1);
}

fn resolves_ids_by_prefix(fx: &Fixture) {
    let store = fx.open();
    let (s, n) = session_with_nodes(&store, 1);
    let hex = s.id.0.simple().to_string();
    assert_eq!(store.resolve_session(&hex[..12]).unwrap(), s.id);
    assert_eq!(store.resolve_session(&s.id.to_string()).unwrap(), s.id);
    assert!(matches!(
        store.resolve_session("zz"),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.resolve_session("ffffffff"),
        Err(StoreError::NotFound(_))
    ));
    let nhex = n[0].id.0.simple().to_string();
    assert_eq!(store.resolve_node(&nhex[..10]).unwrap(), n[0].id);
    assert_eq!(store.resolve_node(&n[0].id.short()).unwrap(), n[0].id);
}

fn a_newer_schema_refuses_to_open(fx: &Fixture) {
    drop(fx.open());
    {
        let db = fx.raw();
        let w = db.begin_write().unwrap();
        w.open_table(META)
            .unwrap()
            .insert("schema_version", 99u32.to_le_bytes().as_slice())
            .unwrap();
        w.commit().unwrap();
    }
    let err = fx.try_open().unwrap_err().to_string();
    assert!(err.contains("schema version 99"), "{err}");
    assert!(err.contains("upgrade glassbox"), "{err}");
}

#[test]
fn garbage_file_refuses_to_open_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    std::fs::write(&path, vec![0x42; 8192]).unwrap();
    let err = Store::open(&path).unwrap_err().to_string();
    assert!(err.starts_with("cannot open store"), "{err}");
}

/// The v1 fixture: one session with two nodes and an edge, written in the v1 layout.
const V1_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/store_v1.redb");

/// The v1 fixture as `fx`'s store: the file itself, or its tables copied row by row.
fn load_v1_fixture(fx: &Fixture) {
    if fx.is_redb() {
        std::fs::copy(V1_FIXTURE, fx.path()).unwrap();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.redb");
    std::fs::copy(V1_FIXTURE, &path).unwrap();
    let from = kv::Db::open_redb(&path, CACHE_BYTES).unwrap();
    let r = from.begin_read().unwrap();
    let names = ["edges_in", "edges_out", "meta", "nodes", "sessions"];
    assert_eq!(r.list_tables().unwrap(), names);
    let to = fx.raw();
    let w = to.begin_write().unwrap();
    macro_rules! copy {
        ($($def:expr),*) => {$({
            let mut t = w.open_table($def).unwrap();
            for row in r.open_table($def).unwrap().iter().unwrap() {
                let (k, v) = row.unwrap();
                t.insert(k.value(), v.value()).unwrap();
            }
        })*};
    }
    copy!(META, SESSIONS, NODES, EDGES_OUT, EDGES_IN);
    w.commit().unwrap();
}

fn migrates_the_v1_fixture(fx: &Fixture) {
    load_v1_fixture(fx);
    let store = fx.open();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let sessions = store.sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].title, "v1 session");
    let nodes = store.session_nodes(sessions[0].id).unwrap();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[0].kind, NodeType::Query);
    assert_eq!(nodes[0].text, "What is 2+2?");
    assert_eq!(nodes[1].kind, NodeType::Response);
    let edges = store.edges_from(nodes[0].id, None).unwrap();
    assert_eq!(edges.len(), 1);
    assert_eq!(edges[0].kind, EdgeType::Answers);
    // Reopening does not migrate again.
    drop(store);
    assert_eq!(fx.open().session_nodes(sessions[0].id).unwrap().len(), 2);
}

/// Writes the v1 fixture. Run once with `--ignored` when the fixture must be regenerated.
#[test]
#[ignore]
fn write_v1_fixture() {
    let _ = std::fs::remove_file(V1_FIXTURE);
    let mut db = kv::Db::open_redb(Path::new(V1_FIXTURE), CACHE_BYTES).unwrap();
    let w = db.begin_write().unwrap();
    let sid = SessionId::new();
    let q = NodeId::new();
    let a = NodeId::new();
    let t = "2026-01-01T00:00:00Z";
    w.open_table(META)
        .unwrap()
        .insert("schema_version", 1u32.to_le_bytes().as_slice())
        .unwrap();
    let session = serde_json::json!({"id": sid, "title": "v1 session", "created_at": t, "updated_at": t, "source": "glassbox"});
    w.open_table(SESSIONS)
        .unwrap()
        .insert(sid.to_bytes(), codec::encode(&session).unwrap().as_slice())
        .unwrap();
    let mut nodes = w.open_table(NODES).unwrap();
    for (id, ty, text) in [(q, "query", "What is 2+2?"), (a, "response", "4")] {
        let n = serde_json::json!({"id": id, "session": sid, "node_type": ty, "text": text, "created_at": t, "status": {"state": "complete"}});
        nodes
            .insert(id.to_bytes(), codec::encode(&n).unwrap().as_slice())
            .unwrap();
    }
    drop(nodes);
    let e = Edge::new(q, EdgeType::Answers, a);
    w.open_table(EDGES_OUT)
        .unwrap()
        .insert(
            key33(q.to_bytes(), e.kind.code(), a.to_bytes()),
            codec::encode(&e).unwrap().as_slice(),
        )
        .unwrap();
    w.open_table(EDGES_IN)
        .unwrap()
        .insert(key33(a.to_bytes(), e.kind.code(), q.to_bytes()), ())
        .unwrap();
    w.commit().unwrap();
    assert!(matches!(db.compact().unwrap(), kv::Compaction::Done));
}

fn prepared_puts_skip_unchanged_nodes_and_journal_once_per_session(fx: &Fixture) {
    let store = fx.open();
    let (s, nodes) = session_with_nodes(&store, 3);
    let before = store.last_seq().unwrap();
    let mut changed = nodes[1].clone();
    changed.text = "n1, revised".into();
    let fresh = Node::new(s.id, NodeType::Response, "new");
    let batch: Vec<PreparedNode> = [&nodes[0], &changed, &fresh]
        .into_iter()
        .map(|n| PreparedNode::new(n, None).unwrap())
        .collect();
    let outcomes = store.write(|w| w.put_prepared_nodes(&batch)).unwrap();
    assert_eq!(
        outcomes,
        [
            PutOutcome::Unchanged,
            PutOutcome::Updated,
            PutOutcome::Created
        ]
    );
    assert_eq!(store.node(changed.id).unwrap().unwrap().text, "n1, revised");
    assert_eq!(store.node(fresh.id).unwrap().unwrap(), fresh);
    // One entry for the session, naming its newest changed node.
    let entries = store.follow(before, 100).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].1.kind, ChangeKind::NodePut);
    assert_eq!(entries[0].1.session, Some(s.id));
    assert_eq!(entries[0].1.id, Some(fresh.id.0));
    // Nothing changed: nothing written, nothing journalled.
    let again = store.write(|w| w.put_prepared_nodes(&batch)).unwrap();
    assert!(again.iter().all(|o| *o == PutOutcome::Unchanged));
    assert_eq!(store.follow(before, 100).unwrap().len(), 1);
    // A node met twice in one batch (its stored record is read once for the batch): the
    // second sees the first, and the index holds the last text only.
    let docs = store.search_doc_count().unwrap();
    let mut twice = Node::new(s.id, NodeType::Response, "zebrafirst");
    let first = PreparedNode::new(&twice, None).unwrap();
    twice.text = "quaggasecond".into();
    let second = PreparedNode::new(&twice, None).unwrap();
    let outcomes = store
        .write(|w| w.put_prepared_nodes(&[first, second]))
        .unwrap();
    assert_eq!(outcomes, [PutOutcome::Created, PutOutcome::Updated]);
    assert_eq!(store.node(twice.id).unwrap().unwrap().text, "quaggasecond");
    assert!(store.search("zebrafirst", None, 5).unwrap().is_empty());
    assert_eq!(
        store.search("quaggasecond", None, 5).unwrap()[0].node,
        twice.id
    );
    assert_eq!(store.search_doc_count().unwrap(), docs + 1);
}

fn a_record_encoded_differently_but_equal_counts_as_unchanged(fx: &Fixture) {
    let store = fx.open();
    let (_s, nodes) = session_with_nodes(&store, 1);
    // The same node as an older writer might have laid it out (here: pretty-printed).
    let mut pretty = vec![codec::FORMAT_JSON];
    pretty.extend(serde_json::to_vec_pretty(&nodes[0]).unwrap());
    store
        .write(|w| {
            let mut t = w.txn.open_table(NODES)?;
            t.insert(nodes[0].id.to_bytes(), pretty.as_slice())?;
            Ok(())
        })
        .unwrap();
    let p = PreparedNode::new(&nodes[0], None).unwrap();
    let outcome = store.write(|w| w.put_prepared_nodes(&[p])).unwrap();
    assert_eq!(outcome, [PutOutcome::Unchanged]);
}

#[test]
fn long_records_are_compressed_and_short_ones_are_not() {
    let s = Session::new("t", SessionSource::Glassbox);
    let long = Node::new(
        s.id,
        NodeType::Thinking,
        "the same idea again. ".repeat(200),
    );
    let short = serde_json::json!({"a": "short"});
    let (lb, sb) = (
        codec::encode(&long).unwrap(),
        codec::encode(&short).unwrap(),
    );
    assert_eq!(lb[0], codec::FORMAT_ZSTD_JSON);
    assert_eq!(sb[0], codec::FORMAT_JSON);
    assert!(lb.len() * 4 < codec::plain_len(&lb), "{} bytes", lb.len());
    assert_eq!(codec::decode::<Node>("nodes", &lb).unwrap(), long);
    assert_eq!(codec::decode::<serde_json::Value>("t", &sb).unwrap(), short);
    let err = codec::decode::<Node>("nodes", &[codec::FORMAT_ZSTD_JSON, 1, 2, 3]).unwrap_err();
    assert!(err.to_string().contains("undecodable"), "{err}");
}

/// A v9 store (plain records, index records listing their terms) is compressed when opened,
/// and re-indexing a node then takes its old words from its stored text.
fn v9_records_are_compressed_and_old_words_come_from_the_text(fx: &Fixture) {
    let store = fx.open();
    let s = Session::new("t", SessionSource::Glassbox);
    let mut n = Node::new(s.id, NodeType::Thinking, "zebra ".repeat(100) + "giraffe");
    store
        .write(|w| {
            w.put_session(&s)?;
            w.put_node(&n)
        })
        .unwrap();
    // Back to the v9 layout: the record as plain JSON, the index record with its terms.
    {
        let txn = store.db.begin_write().unwrap();
        let mut plain = vec![codec::FORMAT_JSON];
        serde_json::to_writer(&mut plain, &n).unwrap();
        txn.open_table(NODES)
            .unwrap()
            .insert(n.id.to_bytes(), plain.as_slice())
            .unwrap();
        search::write_v11_layout(&txn).unwrap();
        let mut docs = txn.open_table(SEARCH_DOCS).unwrap();
        let mut rec = docs.get(n.id.to_bytes()).unwrap().unwrap().value().to_vec();
        assert_eq!(rec.len(), 28);
        rec.extend_from_slice(b"giraffe\0zebra");
        docs.insert(n.id.to_bytes(), rec.as_slice()).unwrap();
        drop(docs);
        txn.open_table(META)
            .unwrap()
            .insert("schema_version", 9u32.to_le_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    drop(store);
    let store = fx.open();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    {
        let r = store.read().unwrap();
        let v = r.open_table(NODES).unwrap();
        let rec = v.get(n.id.to_bytes()).unwrap().unwrap();
        assert_eq!(rec.value()[0], codec::FORMAT_ZSTD_JSON);
        let docs = r.open_table(SEARCH_DOCS).unwrap();
        assert_eq!(
            docs.get(n.id.to_bytes()).unwrap().unwrap().value().len(),
            32
        );
    }
    assert_eq!(store.node(n.id).unwrap().unwrap(), n);
    n.text = "okapi".into();
    store.write(|w| w.put_node(&n)).unwrap();
    assert!(store.search("zebra", None, 5).unwrap().is_empty());
    assert!(store.search("giraffe", None, 5).unwrap().is_empty());
    assert_eq!(store.search("okapi", None, 5).unwrap()[0].node, n.id);
    store.write(|w| w.delete_session(s.id)).unwrap();
    assert!(store.search("okapi", None, 5).unwrap().is_empty());
    assert_eq!(store.search_doc_count().unwrap(), 0);
}

/// A v10 store (a bare `session_nodes` index) gets a head for every node when opened, and
/// the old index is dropped.
fn v10_session_index_becomes_heads(fx: &Fixture) {
    let store = fx.open();
    let s = Session::new("t", SessionSource::Glassbox);
    let mut q = Node::new(s.id, NodeType::Query, "why?\nsecond line");
    q.meta
        .insert("memory_used".into(), serde_json::json!(["a", "b"]));
    let r = Node::new(s.id, NodeType::Response, "because");
    store.write(|w| w.put_session(&s)).unwrap();
    // The v10 layout: node records and the bare index (the nodes left out of the search
    // index, which later migrations would otherwise convert).
    {
        let txn = store.db.begin_write().unwrap();
        search::write_v11_layout(&txn).unwrap();
        txn.delete_table(SESSION_HEADS).unwrap();
        let mut nodes = txn.open_table(NODES).unwrap();
        let mut idx = txn.open_table(SESSION_NODES).unwrap();
        for n in [&q, &r] {
            nodes
                .insert(n.id.to_bytes(), codec::encode(n).unwrap().as_slice())
                .unwrap();
            idx.insert(key32(s.id.to_bytes(), n.id.to_bytes()), ())
                .unwrap();
        }
        drop((nodes, idx));
        txn.open_table(META)
            .unwrap()
            .insert("schema_version", 10u32.to_le_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    drop(store);
    let store = fx.open();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let migrated = store.session_heads(s.id).unwrap();
    assert_eq!(migrated, vec![NodeHead::of(&q), NodeHead::of(&r)]);
    assert_eq!(migrated[0].excerpt, "why?");
    assert_eq!(migrated[0].memory, 2);
    assert_eq!(migrated[1].kind, NodeType::Response);
    let r = store.read().unwrap();
    assert!(
        !r.list_tables()
            .unwrap()
            .iter()
            .any(|t| t == "session_nodes")
    );
}

#[test]
fn compacting_gives_free_pages_back_and_keeps_every_record() {
    let fx = Fixture::redb();
    let mut store = fx.open();
    // Two sessions of large, poorly compressible nodes, written over many commits; deleting
    // one leaves its pages free in the middle of the file.
    let mut sessions = Vec::new();
    for k in 0..2u64 {
        let s = Session::new(format!("s{k}"), SessionSource::Glassbox);
        store.write(|w| w.put_session(&s)).unwrap();
        for c in 0..20u64 {
            let nodes: Vec<Node> = (0..25u64)
                .map(|i| {
                    let mut x = (k * 1_000 + c * 25 + i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    let text: String = (0..800)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            format!("{:x} ", x % 4096)
                        })
                        .collect();
                    Node::new(s.id, NodeType::Thinking, text)
                })
                .collect();
            store
                .write(|w| nodes.iter().try_for_each(|n| w.put_node(n)))
                .unwrap();
        }
        sessions.push(s);
    }
    store.write(|w| w.delete_session(sessions[0].id)).unwrap();
    let kept = store.session_heads(sessions[1].id).unwrap().len();
    assert_eq!(kept, 500);
    let before = store.file_bytes();
    let free = store.free_bytes().unwrap();
    assert!(free > before / 4, "free {free} of {before}");

    // A second handle in this process keeps it from compacting.
    let other = store.clone();
    assert!(store.compact().is_err());
    drop(other);

    let Compacted::Done { before: b, after } = store.compact().unwrap() else {
        panic!("nothing else has the store open");
    };
    assert_eq!(b, before);
    assert!(
        after < before - free / 2,
        "{before} -> {after} with {free} free"
    );
    assert_eq!(after, store.file_bytes());
    assert_eq!(store.session_heads(sessions[1].id).unwrap().len(), kept);
    assert!(store.session(sessions[0].id).unwrap().is_none());
    let hits = store.search("fff", None, 5).unwrap();
    assert_eq!(hits.len(), 5);
    assert!(hits.iter().all(|h| h.session == sessions[1].id));
}

/// Two instances over their own connections to one PostgreSQL database: each follows the
/// other's commits, woken at once by [`Store::wait_for_change`], and an event both append
/// under one idempotency key is kept once.
#[test]
fn instances_sharing_postgres_follow_each_other() {
    use std::time::{Duration, Instant};

    use super::testing::{pg_backend, pg_database};

    let url = pg_database();
    let open = |label: &str| {
        Store::open_backend(std::sync::Arc::new(pg_backend(&url)), label.into()).unwrap()
    };
    let (one, two) = (open("one"), open("two"));

    // `two` reads where the journal ends, then waits; `one` commits meanwhile.
    let since = two.last_seq().unwrap();
    assert!(two.follow(since, 100).unwrap().is_empty());
    let s = Session::new("shared", SessionSource::Glassbox);
    let writer = {
        let (one, s) = (one.clone(), s.clone());
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            one.write(|w| w.put_session(&s)).unwrap();
            Instant::now()
        })
    };
    assert!(two.wait_for_change(Duration::from_secs(5)));
    let seen = two.follow(since, 100).unwrap();
    let committed = writer.join().unwrap();
    assert!(committed.elapsed() < Duration::from_secs(1));
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1.kind, ChangeKind::SessionPut);
    assert_eq!(seen[0].1.session, Some(s.id));
    assert_eq!(two.session(s.id).unwrap().unwrap(), s);

    // A commit between a read and the wait is not lost: the wait ends at once.
    let since = seen[0].0;
    let n = Node::new(s.id, NodeType::Thinking, "from one");
    one.write(|w| w.put_node(&n)).unwrap();
    let start = Instant::now();
    assert!(two.wait_for_change(Duration::from_secs(5)));
    assert!(start.elapsed() < Duration::from_secs(1));
    assert_eq!(two.follow(since, 100).unwrap().len(), 1);
    assert_eq!(two.node(n.id).unwrap().unwrap(), n);
    // And the other way round.
    one.follow(0, 100).unwrap();
    two.write(|w| w.put_node(&Node::new(s.id, NodeType::Response, "from two")))
        .unwrap();
    assert!(one.wait_for_change(Duration::from_secs(5)));
    assert_eq!(one.session_nodes(s.id).unwrap().len(), 2);

    // Both append the same learning at once: one event, one instance told it is new.
    let entry = MemoryEntry {
        id: MemoryId::new(),
        tier: MemoryTier::Archival,
        scope: MemoryScope::Global,
        section: None,
        content: "shared".into(),
        tags: Vec::new(),
        importance: 0.5,
        created_at: Utc::now(),
        updated_at: Utc::now(),
        provenance: Provenance::default(),
        meta: Default::default(),
    };
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let appends: Vec<_> = [one.clone(), two.clone()]
        .into_iter()
        .map(|store| {
            let (entry, barrier) = (entry.clone(), barrier.clone());
            std::thread::spawn(move || {
                let how = learning::EntryLearning {
                    extractor_version: "manual".into(),
                    source: learning::EventSource::UserReview,
                    schema_version: learning::LEARNING_SCHEMA_VERSION,
                    concepts: None,
                };
                barrier.wait();
                store.write(|w| w.learn_entry(&entry, &how)).unwrap()
            })
        })
        .collect();
    let appended: Vec<_> = appends.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(appended.iter().filter(|a| a.new).count(), 1, "{appended:?}");
    for store in [&one, &two] {
        assert_eq!(store.learning_events_of(entry.id).unwrap().len(), 1);
        assert_eq!(store.learning(entry.id).unwrap().unwrap().content, "shared");
    }
}

/// A redb file and the in-memory backend cannot tell of commits: the wait takes its time
/// and answers `false`.
#[test]
fn without_notifications_a_wait_sleeps_and_answers_false() {
    use std::time::{Duration, Instant};
    for fx in [Fixture::redb(), Fixture::bytes()] {
        let store = fx.open();
        session_with_nodes(&store, 1);
        let start = Instant::now();
        assert!(!store.wait_for_change(Duration::from_millis(30)));
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert!(!store.tells_of_changes());
    }
}

/// A v12 store's raw chunks (offset, then the bytes as they came) are compressed by the
/// migration and read back the same; a short one stays as it is.
fn v12_raw_chunks_are_compressed(fx: &Fixture) {
    let store = fx.open();
    let stream = StreamId::new();
    let long: Vec<u8> = (0..300)
        .flat_map(|i| format!("data: {{\"delta\":\"word {i}\"}}\n\n").into_bytes())
        .collect();
    let chunks = [(5u64, long.as_slice()), (9, b"data: {}\n\n".as_slice())];
    {
        let txn = store.db.begin_write().unwrap();
        let mut t = txn.open_table(RAW_CHUNKS).unwrap();
        for (i, (offset, bytes)) in chunks.iter().enumerate() {
            let v = [offset.to_be_bytes().as_slice(), bytes].concat();
            t.insert(chunk_key(stream.to_bytes(), i as u32), v.as_slice())
                .unwrap();
        }
        drop(t);
        txn.open_table(META)
            .unwrap()
            .insert("schema_version", 12u32.to_le_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    drop(store);
    let store = fx.open();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let back = store.raw_chunks(stream).unwrap();
    let back: Vec<(u64, &[u8])> = back
        .iter()
        .map(|c| (c.offset_us, c.bytes.as_slice()))
        .collect();
    assert_eq!(back, chunks);
    let r = store.read().unwrap();
    let t = r.open_table(RAW_CHUNKS).unwrap();
    let stored = t.get(chunk_key(stream.to_bytes(), 0)).unwrap().unwrap();
    assert!(stored.value().len() * 4 < 8 + long.len(), "compressed");
    let short = t.get(chunk_key(stream.to_bytes(), 1)).unwrap().unwrap();
    assert_eq!(&short.value()[8..], b"data: {}\n\n");
    // What `doctor` reports: the bytes as stored, and as they came.
    let c = store.raw_compression().unwrap();
    assert_eq!(
        c.stored,
        (stored.value().len() + short.value().len()) as u64
    );
    assert_eq!(c.plain, (8 + long.len() + 8 + 10) as u64);
}

fn saved_memory_indexes_are_a_cache_that_goes_with_its_session(fx: &Fixture) {
    let store = fx.open();
    let sess = Session::new("s", SessionSource::Glassbox);
    store.write(|w| w.put_session(&sess)).unwrap();
    let (project, session) = (
        MemoryScope::Project("/p".into()),
        MemoryScope::Session(sess.id),
    );
    let saved = |scope: &MemoryScope| store.memory_index::<Vec<u32>>(scope).unwrap();
    assert_eq!(saved(&project), None);
    store
        .write(|w| {
            w.put_memory_index(&project, &vec![1u32, 2])?;
            w.put_memory_index(&session, &vec![3u32])
        })
        .unwrap();
    assert_eq!(saved(&project), Some(vec![1, 2]));
    assert_eq!(saved(&session), Some(vec![3]));
    // A saved index is a cache: it names no change, so following the journal sees none.
    let seq = store.last_seq().unwrap();
    store
        .write(|w| w.put_memory_index(&project, &vec![4u32]))
        .unwrap();
    assert_eq!(store.last_seq().unwrap(), seq);
    // The session's scope goes with the session; the project's stays.
    store
        .write(|w| w.delete_session(sess.id).map(|_| ()))
        .unwrap();
    assert_eq!(saved(&session), None);
    assert_eq!(saved(&project), Some(vec![4]));
    store.write(|w| w.clear_memory_indexes()).unwrap();
    assert_eq!(saved(&project), None);
}
