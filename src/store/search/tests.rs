#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, HashSet};

use super::*;
use crate::store::testing::{Fixture, on_every_arm};
use crate::store::{Session, SessionSource, Store};

on_every_arm!(
    index_follows_text_changes_streaming_and_deletes,
    words_left_for_later_are_indexed_by_the_next_search,
    segments_split_merge_and_shrink,
    ranking_prefers_more_and_rarer_hits,
    runs_merge_and_newer_runs_shadow_older_ones,
    v8_segments_become_the_oldest_run,
    v11_index_and_edges_become_doc_numbers_and_empty_edge_values,
    few_runs_merge_like_a_sort,
);

#[test]
fn tokenizer_lowercases_splits_on_unicode_and_drops_short_words() {
    let t: Vec<String> = tokenize("Größe: a ÉTÉ x2 über_alles — 東京 ok? \u{1b}[31mred").collect();
    assert_eq!(
        t,
        [
            "größe", "été", "x2", "über", "alles", "東京", "ok", "31mred"
        ]
    );
}

#[test]
fn term_counts_match_the_tokenizer() {
    let texts = [
        "Größe: a ÉTÉ x2 über_alles — 東京 ok? \u{1b}[31mred",
        "The the THE tHe; a ab abc 1 12 İstanbul ǅemal ΣΊΣΥΦΟΣ",
        "",
        "x",
        "trailing word",
        &"long".repeat(20),
        &format!("{} ok", "é".repeat(40)),
        "mixed123ÄÖÜ456 café-crème naïve\tTAB\nline",
    ];
    for text in texts {
        let mut want: HashMap<String, u32> = HashMap::new();
        let mut total = 0;
        for t in tokenize(text) {
            *want.entry(t).or_insert(0) += 1;
            total += 1;
        }
        let (got, got_total) = count_terms(text);
        let got: HashMap<String, u32> = got.iter().map(|(k, v)| (k.to_string(), v)).collect();
        assert_eq!(got, want, "{text}");
        assert_eq!(got_total, total, "{text}");
    }
}

#[test]
fn a_prepared_tool_call_counts_its_whole_indexed_text() {
    let s = SessionId::new();
    let mut n = Node::new(
        s,
        NodeType::ToolCall,
        r#"{"pattern":"Fn→Main","path":"src"}"#,
    );
    n.meta.insert("tool".into(), serde_json::json!("Grep"));
    n.meta.insert(
        "result".into(),
        serde_json::json!("  1→fn main() {}\n  2→Main MAIN main"),
    );
    let p = prepare(&n).unwrap();
    let text = indexed_text(&n);
    let (want, total) = count_terms(&text);
    let mut want: Vec<(String, u32)> = want.iter().map(|(k, v)| (k.to_string(), v)).collect();
    let mut got: Vec<(String, u32)> = p.terms().map(|(k, v)| (k.to_string(), v)).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert!(got.contains(&("grep".to_string(), 1)) && got.contains(&("main".to_string(), 5)));
    assert_eq!(p.tokens, total);
    let digest = Sha256::digest(text.as_bytes());
    assert_eq!(p.hash, digest[..8]);
    // Only the text of a node of another kind.
    n.kind = NodeType::Response;
    let p = prepare(&n).unwrap();
    assert!(p.terms().all(|(t, _)| t != "grep"));
    assert!(!p.is_empty());
}

#[test]
fn snippet_marks_the_hits() {
    let terms: HashSet<String> = ["needle".to_string()].into();
    let text = format!(
        "{}\nthe Needle is here\n{}",
        "hay ".repeat(40),
        "more ".repeat(40)
    );
    let (s, h) = snippet(&text, &terms);
    assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
    assert!(!s.contains('\n'));
    assert_eq!(h.len(), 1);
    assert_eq!(&s[h[0].0..h[0].1], "Needle");
}

fn index_follows_text_changes_streaming_and_deletes(fx: &Fixture) {
    let store = fx.open();
    let s = Session::new("t", SessionSource::Glassbox);
    let mut n = Node::new(s.id, NodeType::Thinking, "alpha beta");
    n.status = NodeStatus::Streaming;
    store
        .write(|w| {
            w.put_session(&s)?;
            w.put_node(&n)
        })
        .unwrap();
    assert!(
        store.search("alpha", None, 10).unwrap().is_empty(),
        "streaming nodes wait"
    );
    n.status = NodeStatus::Complete;
    store.write(|w| w.put_node(&n)).unwrap();
    assert_eq!(store.search("alpha", None, 10).unwrap()[0].node, n.id);
    n.text = "gamma".into();
    store.write(|w| w.put_node(&n)).unwrap();
    assert!(store.search("alpha", None, 10).unwrap().is_empty());
    assert_eq!(store.search("GAMMA", Some(s.id), 10).unwrap().len(), 1);
    assert!(
        store
            .search("gamma", Some(crate::store::SessionId::new()), 10)
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.search_doc_count().unwrap(), 1);
    store.write(|w| w.delete_session(s.id)).unwrap();
    assert!(store.search("gamma", None, 10).unwrap().is_empty());
    assert_eq!(store.search_doc_count().unwrap(), 0);
}

/// A node put with its words left for later ([`EncodedNode::index_later`]) is not in the
/// index until the next search, which adds it first and finds it, scored as if it had been
/// indexed at once; its earlier words go at once; a mark whose node is gone is dropped.
fn words_left_for_later_are_indexed_by_the_next_search(fx: &Fixture) {
    use crate::store::EncodedNode;
    let store = fx.open();
    // The same nodes indexed at once, in a store of their own.
    let direct_fx = Fixture::redb();
    let direct = direct_fx.open();
    let s = Session::new("t", SessionSource::Glassbox);
    let other = Node::new(s.id, NodeType::Response, "alpha gamma delta");
    let mut n = Node::new(s.id, NodeType::Thinking, "alpha beta beta");
    for st in [&store, &direct] {
        st.write(|w| {
            w.put_session(&s)?;
            w.put_node(&other)?;
            w.put_node(&n)
        })
        .unwrap();
    }
    assert_eq!(store.pending_index_count().unwrap(), 0);
    let later = |st: &Store, n: &Node| {
        st.write(|w| {
            let record = EncodedNode::without_terms(n, w.record_dict().as_deref())?;
            w.put_encoded_node(n, record.index_later())
        })
        .unwrap();
    };
    n.text = "gamma epsilon epsilon".into();
    later(&store, &n);
    direct.write(|w| w.put_node(&n)).unwrap();
    assert_eq!(store.pending_index_count().unwrap(), 1);
    assert_eq!(
        store.search_doc_count().unwrap(),
        1,
        "its earlier words left the index at once"
    );
    let hits = |st: &Store, q: &str| -> Vec<(NodeId, String)> {
        st.search(q, None, 10)
            .unwrap()
            .into_iter()
            .map(|h| (h.node, format!("{:.9}", h.score)))
            .collect()
    };
    assert_eq!(hits(&store, "epsilon")[0].0, n.id);
    assert_eq!(store.pending_index_count().unwrap(), 0);
    for q in ["epsilon", "gamma", "alpha", "beta"] {
        assert_eq!(hits(&store, q), hits(&direct, q), "{q}");
    }
    assert!(hits(&store, "beta").is_empty());
    assert_eq!(store.search_doc_count().unwrap(), 2);
    assert_eq!(store.index_pending().unwrap(), 0, "nothing is left");

    // A mark whose node was deleted before the next search is dropped.
    n.text = "zeta".into();
    later(&store, &n);
    store.write(|w| w.delete_session(s.id)).unwrap();
    assert_eq!(store.index_pending().unwrap(), 1);
    assert_eq!(store.pending_index_count().unwrap(), 0);
    assert!(store.search("zeta", None, 10).unwrap().is_empty());
    assert_eq!(store.search_doc_count().unwrap(), 0);
}

fn segments_split_merge_and_shrink(fx: &Fixture) {
    let store = fx.open();
    let a = Session::new("a", SessionSource::Glassbox);
    let b = Session::new("b", SessionSource::Glassbox);
    let nodes: Vec<Node> = (0..700)
        .map(|i| {
            let s = if i % 3 == 0 { b.id } else { a.id };
            Node::new(s, NodeType::Response, format!("common word{i} common"))
        })
        .collect();
    store
        .write(|w| {
            w.put_session(&a)?;
            w.put_session(&b)
        })
        .unwrap();
    // Later ids first, then earlier ones: the second batch lands inside and before
    // the stored segments.
    for chunk in [&nodes[350..], &nodes[..350]] {
        store
            .write(|w| {
                for n in chunk.iter().rev() {
                    w.put_node(n)?;
                }
                Ok(())
            })
            .unwrap();
    }
    assert_eq!(store.search("common", None, 1000).unwrap().len(), 700);
    assert_eq!(
        store.search("word123", None, 10).unwrap()[0].node,
        nodes[123].id
    );
    // Re-indexing in the same transaction: the last text wins.
    let mut changed = nodes[5].clone();
    changed.text = "other".into();
    store
        .write(|w| {
            w.put_node(&changed)?;
            w.put_node(&nodes[5])?;
            w.put_node(&changed)
        })
        .unwrap();
    assert_eq!(store.search("common", None, 1000).unwrap().len(), 699);
    assert_eq!(store.search("other", None, 10).unwrap().len(), 1);
    store.write(|w| w.delete_session(b.id)).unwrap();
    let left = store.search("common", None, 1000).unwrap();
    assert_eq!(left.len(), 465);
    assert!(left.iter().all(|h| h.session == a.id));
    assert_eq!(store.search_doc_count().unwrap(), 466);
    store.write(|w| w.delete_session(a.id)).unwrap();
    assert!(store.search("common", None, 10).unwrap().is_empty());
    // Tombstones shadow what older runs still hold until everything is merged.
    assert_eq!(store.write(|w| w.compact_search_index()).unwrap(), 0);
    assert!(store.search_runs().unwrap().is_empty());
}

fn ranking_prefers_more_and_rarer_hits(fx: &Fixture) {
    let store = fx.open();
    let s = Session::new("t", SessionSource::Glassbox);
    let a = Node::new(
        s.id,
        NodeType::Response,
        "common words and the rare zebra zebra",
    );
    let b = Node::new(s.id, NodeType::Response, "common words only here");
    let c = Node::new(
        s.id,
        NodeType::Response,
        "common words and one zebra among many other words here",
    );
    store
        .write(|w| {
            w.put_session(&s)?;
            for n in [&a, &b, &c] {
                w.put_node(n)?;
            }
            Ok(())
        })
        .unwrap();
    let hits = store.search("zebra common", None, 10).unwrap();
    assert_eq!(hits.len(), 3);
    assert_eq!(hits[0].node, a.id);
    assert_eq!(hits[1].node, c.id);
    assert_eq!(store.search("zebra", None, 1).unwrap().len(), 1);
    assert!(store.search("a", None, 10).unwrap().is_empty());
    // The same query scores the same to the last bit every time, whatever order its words
    // come in (each score is a sum over them).
    let bits = |q: &str| -> Vec<(NodeId, u64)> {
        let hits = store.search(q, None, 10).unwrap();
        hits.iter().map(|h| (h.node, h.score.to_bits())).collect()
    };
    let first = bits("zebra common words among here");
    for q in [
        "here among words common zebra",
        "words zebra here common among",
    ]
    .iter()
    .cycle()
    .take(40)
    {
        assert_eq!(bits(q), first, "{q}");
    }
}

/// Many small transactions make many runs; they merge as they match in size, and what a
/// later transaction removes or changes is shadowed in every older run.
fn runs_merge_and_newer_runs_shadow_older_ones(fx: &Fixture) {
    let store = fx.open();
    let s = Session::new("t", SessionSource::Glassbox);
    store.write(|w| w.put_session(&s)).unwrap();
    let mut nodes = Vec::new();
    for i in 0..64 {
        let n = Node::new(
            s.id,
            NodeType::Response,
            format!("shared word{i} batch{}", i / 8),
        );
        store.write(|w| w.put_node(&n)).unwrap();
        nodes.push(n);
    }
    // A binary counter of 64 equal runs: at most log2(64) + 1 of them are left.
    let runs = store.search_runs().unwrap();
    assert!(runs.len() <= 7, "{runs:?}");
    assert_eq!(runs.iter().sum::<u64>(), 64 * 3);
    assert_eq!(store.search("shared", None, 100).unwrap().len(), 64);
    assert_eq!(store.search("batch3", None, 100).unwrap().len(), 8);
    // Changing a node's text: its old words go, its new ones come, across runs.
    let mut changed = nodes[10].clone();
    changed.text = "replaced entirely".into();
    store.write(|w| w.put_node(&changed)).unwrap();
    assert!(store.search("word10", None, 10).unwrap().is_empty());
    assert_eq!(store.search("shared", None, 100).unwrap().len(), 63);
    assert_eq!(
        store.search("replaced", None, 10).unwrap()[0].node,
        changed.id
    );
    // Compaction drops the tombstones and keeps exactly the live postings.
    let live = store.write(|w| w.compact_search_index()).unwrap();
    assert_eq!(live, 63 * 3 + 2);
    assert_eq!(store.search_runs().unwrap(), vec![live]);
    assert_eq!(store.search("shared", None, 100).unwrap().len(), 63);
    assert_eq!(store.search("batch1", None, 100).unwrap().len(), 7);
}

/// A v8 store's segmented postings become the index's oldest run when it is opened.
fn v8_segments_become_the_oldest_run(fx: &Fixture) {
    use crate::store::kv::ReadableTable;

    use super::super::tables::{META, SEARCH_DOCS, SEARCH_POSTINGS};
    use super::legacy::encode_legacy_postings;
    use super::postings::{
        NEXT_DOC_KEY, RUNS_KEY, decode_postings, decode_runs, run_name, run_table,
    };

    let store = fx.open();
    let s = Session::new("t", SessionSource::Glassbox);
    let nodes: Vec<Node> = (0..20)
        .map(|i| {
            Node::new(
                s.id,
                NodeType::Response,
                format!("alpha word{i} w{}", i % 3),
            )
        })
        .collect();
    store
        .write(|w| {
            w.put_session(&s)?;
            nodes.iter().try_for_each(|n| w.put_node(n))
        })
        .unwrap();
    let ids = |store: &Store, q: &str| -> Vec<_> {
        let mut v: Vec<_> = store
            .search(q, None, 100)
            .unwrap()
            .into_iter()
            .map(|h| h.node)
            .collect();
        v.sort();
        v
    };
    let (alpha, w1) = (ids(&store, "alpha"), ids(&store, "w1"));
    assert_eq!((alpha.len(), w1.len()), (20, 7));
    // Write the index back in the v8 layout: segments of at most 3 postings naming nodes by
    // id, `search_docs` records of the v10 header (the v9 → v10 step cuts longer ones).
    store.write(|w| w.compact_search_index()).unwrap();
    {
        let txn = store.db.begin_write().unwrap();
        super::legacy::runs_as_rows(&txn).unwrap();
        let runs = {
            let meta = txn.open_table(META).unwrap();
            let v = meta.get(RUNS_KEY).unwrap();
            decode_runs(v.as_ref().map(|v| v.value())).unwrap()
        };
        assert_eq!(runs.len(), 1);
        let name = run_name(runs[0].id);
        let rows: Vec<(Vec<u8>, Vec<u8>)> = txn
            .open_table(run_table(&name))
            .unwrap()
            .iter()
            .unwrap()
            .map(|r| {
                let (k, v) = r.unwrap();
                (k.value().to_vec(), v.value().to_vec())
            })
            .collect();
        {
            let doc_nodes = txn.open_table(SEARCH_DOC_NODES).unwrap();
            let node_of =
                |doc: u32| decode_doc_node(&doc_nodes.get(doc).unwrap().unwrap().value()).0;
            let mut old = txn.open_table(SEARCH_POSTINGS).unwrap();
            for (term, v) in rows {
                let mut postings = Vec::new();
                decode_postings(&v, &mut postings).unwrap();
                let mut legacy: Vec<_> =
                    postings.iter().map(|(d, tf)| (node_of(*d), *tf)).collect();
                legacy.sort();
                for chunk in legacy.chunks(3) {
                    let mut key = term.clone();
                    key.push(0);
                    key.extend_from_slice(&chunk[0].0);
                    let mut value = Vec::new();
                    encode_legacy_postings(chunk, &mut value);
                    old.insert(key.as_slice(), value.as_slice()).unwrap();
                }
            }
        }
        txn.delete_table(SEARCH_DOC_NODES).unwrap();
        {
            let mut docs = txn.open_table(SEARCH_DOCS).unwrap();
            let rows: Vec<([u8; 16], Vec<u8>)> = docs
                .iter()
                .unwrap()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    (k.value(), v.value()[..DOC_HEADER].to_vec())
                })
                .collect();
            for (k, v) in rows {
                docs.insert(k, v.as_slice()).unwrap();
            }
        }
        txn.delete_table(run_table(&name)).unwrap();
        let mut meta = txn.open_table(META).unwrap();
        meta.remove(RUNS_KEY).unwrap();
        meta.remove(NEXT_DOC_KEY).unwrap();
        meta.insert("schema_version", 8u32.to_le_bytes().as_slice())
            .unwrap();
        drop(meta);
        txn.commit().unwrap();
    }
    drop(store);
    let store = fx.open();
    assert_eq!(
        store.schema_version().unwrap(),
        crate::store::SCHEMA_VERSION
    );
    assert_eq!(ids(&store, "alpha"), alpha);
    assert_eq!(ids(&store, "w1"), w1);
    assert_eq!(store.search_runs().unwrap(), vec![20 * 3]);
    let r = store.db.begin_read().unwrap();
    let tables = r.list_tables().unwrap();
    assert!(!tables.iter().any(|t| t == SEARCH_POSTINGS.name()));
}

/// A v11 store (postings naming nodes by id, edges as JSON) opens as v12 with the same search
/// results, scores included, and the same edges; new nodes get doc numbers of their own.
fn v11_index_and_edges_become_doc_numbers_and_empty_edge_values(fx: &Fixture) {
    use crate::store::kv::ReadableTable;

    use super::super::tables::{EDGES_OUT, META, SEARCH_DOCS, key33};
    use super::legacy::encode_legacy_postings;
    use super::postings::{
        NEXT_DOC_KEY, RUNS_KEY, decode_postings, decode_runs, run_name, run_table,
    };
    use crate::store::{Edge, EdgeType, codec};

    let store = fx.open();
    let (a, b) = (
        Session::new("a", SessionSource::Glassbox),
        Session::new("b", SessionSource::Glassbox),
    );
    let nodes: Vec<Node> = (0..40)
        .map(|i| {
            let s = if i % 4 == 0 { b.id } else { a.id };
            let text = format!("alpha word{i} w{} {}", i % 3, "beta ".repeat(i % 5));
            Node::new(s, NodeType::Response, text)
        })
        .collect();
    for chunk in nodes.chunks(10) {
        store
            .write(|w| {
                w.put_session(&a)?;
                w.put_session(&b)?;
                chunk.iter().try_for_each(|n| w.put_node(n))
            })
            .unwrap();
    }
    let mut weighted = Edge::new(nodes[1].id, EdgeType::Supports, nodes[2].id);
    weighted.weight = 0.5;
    let mut with_meta = Edge::new(nodes[2].id, EdgeType::Refines, nodes[3].id);
    with_meta
        .meta
        .insert("why".into(), serde_json::json!("a reason"));
    let edges = [
        Edge::new(nodes[1].id, EdgeType::Influences, nodes[5].id),
        Edge::new(nodes[5].id, EdgeType::Answers, nodes[6].id),
        weighted,
        with_meta,
    ];
    store.write(|w| w.put_edges(&edges)).unwrap();
    // Every doc number's node, before some leave the index.
    let node_of: HashMap<u32, [u8; 16]> = {
        let r = store.db.begin_read().unwrap();
        let t = r.open_table(SEARCH_DOC_NODES).unwrap();
        t.iter()
            .unwrap()
            .map(|row| {
                let (k, v) = row.unwrap();
                (k.value(), decode_doc_node(&v.value()).0)
            })
            .collect()
    };
    assert_eq!(node_of.len(), 40);
    // A changed text (tombstones in a newer run) and a deleted session (tombstones of nodes
    // that no longer have a record).
    let mut changed = nodes[7].clone();
    changed.text = "gamma alpha".into();
    store.write(|w| w.put_node(&changed)).unwrap();
    store.write(|w| w.delete_session(b.id)).unwrap();
    assert!(store.search_runs().unwrap().len() > 1);
    let queries = ["alpha", "beta w1", "word7 gamma", "word8", "w2 beta alpha"];
    let results = |store: &Store| -> Vec<Vec<SearchHit>> {
        let mut out: Vec<_> = queries
            .iter()
            .map(|q| store.search(q, None, 100).unwrap())
            .collect();
        out.push(store.search("alpha beta", Some(a.id), 100).unwrap());
        out
    };
    let edges_of = |store: &Store| -> Vec<Vec<Edge>> {
        [1, 2, 3, 5, 6]
            .iter()
            .flat_map(|&i| {
                [
                    store.edges_from(nodes[i].id, None).unwrap(),
                    store.edges_to(nodes[i].id, None).unwrap(),
                ]
            })
            .chain([store.session_edges(a.id).unwrap()])
            .collect()
    };
    let (before, edges_before) = (results(&store), edges_of(&store));
    assert_eq!(before[0].len(), 30);
    assert_eq!(edges_before.last().unwrap().len(), 4);
    // Write the index and edges back as v11 kept them.
    {
        let txn = store.db.begin_write().unwrap();
        super::legacy::runs_as_rows(&txn).unwrap();
        let runs = {
            let meta = txn.open_table(META).unwrap();
            let v = meta.get(RUNS_KEY).unwrap();
            decode_runs(v.as_ref().map(|v| v.value())).unwrap()
        };
        for run in runs {
            let name = run_name(run.id);
            let mut t = txn.open_table(run_table(&name)).unwrap();
            let rows: Vec<(Vec<u8>, Vec<u8>)> = t
                .iter()
                .unwrap()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    (k.value().to_vec(), v.value().to_vec())
                })
                .collect();
            for (term, v) in rows {
                let mut postings = Vec::new();
                decode_postings(&v, &mut postings).unwrap();
                let mut legacy: Vec<_> = postings.iter().map(|(d, tf)| (node_of[d], *tf)).collect();
                legacy.sort();
                let mut value = Vec::new();
                encode_legacy_postings(&legacy, &mut value);
                t.insert(term.as_slice(), value.as_slice()).unwrap();
            }
        }
        txn.delete_table(SEARCH_DOC_NODES).unwrap();
        {
            let mut docs = txn.open_table(SEARCH_DOCS).unwrap();
            let rows: Vec<([u8; 16], Vec<u8>)> = docs
                .iter()
                .unwrap()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    (k.value(), v.value()[..DOC_HEADER].to_vec())
                })
                .collect();
            for (k, v) in rows {
                docs.insert(k, v.as_slice()).unwrap();
            }
        }
        {
            let mut out = txn.open_table(EDGES_OUT).unwrap();
            for e in &edges {
                let key = key33(e.src.to_bytes(), e.kind.code(), e.dst.to_bytes());
                out.insert(key, codec::encode(e).unwrap().as_slice())
                    .unwrap();
            }
        }
        let mut meta = txn.open_table(META).unwrap();
        meta.remove(NEXT_DOC_KEY).unwrap();
        meta.insert("schema_version", 11u32.to_le_bytes().as_slice())
            .unwrap();
        drop(meta);
        txn.commit().unwrap();
    }
    drop(store);
    let store = fx.open();
    assert_eq!(
        store.schema_version().unwrap(),
        crate::store::SCHEMA_VERSION
    );
    let after = results(&store);
    assert_eq!(after.len(), before.len());
    for (a, b) in after.iter().zip(&before) {
        // The same hits in the same order; scores may differ in their last bits, as the
        // query's words are summed in no fixed order.
        let key = |h: &SearchHit| (h.node, h.session, h.snippet.clone(), h.highlights.clone());
        assert_eq!(
            a.iter().map(key).collect::<Vec<_>>(),
            b.iter().map(key).collect::<Vec<_>>()
        );
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x.score - y.score).abs() < 1e-9,
                "{} vs {}",
                x.score,
                y.score
            );
        }
    }
    assert_eq!(edges_of(&store), edges_before);
    {
        let r = store.db.begin_read().unwrap();
        let out = r.open_table(EDGES_OUT).unwrap();
        let sizes: Vec<usize> = edges
            .iter()
            .map(|e| {
                let key = key33(e.src.to_bytes(), e.kind.code(), e.dst.to_bytes());
                out.get(key).unwrap().unwrap().value().len()
            })
            .collect();
        assert_eq!(sizes[..2], [0, 0]);
        assert!(sizes[2] > 0 && sizes[3] > 0, "{sizes:?}");
    }
    // The migrated index takes new nodes and changes as any other.
    let fresh = Node::new(a.id, NodeType::Response, "alpha delta");
    store.write(|w| w.put_node(&fresh)).unwrap();
    let hits = store.search("delta", None, 10).unwrap();
    assert_eq!(hits.iter().map(|h| h.node).collect::<Vec<_>>(), [fresh.id]);
    assert_eq!(store.search("alpha", None, 100).unwrap().len(), 31);
    store.write(|w| w.compact_search_index()).unwrap();
    assert_eq!(store.search("alpha", None, 100).unwrap().len(), 31);
    assert_eq!(store.search("word8", None, 100).unwrap().len(), 0);
}

/// A text cut anywhere (inside words and inside multi-byte characters' neighbours) and
/// streamed piece by piece has the index form of the whole text, with its terms sorted.
fn streamed_equals_whole(text: &str, cuts: &[usize]) {
    let mut n = Node::new(SessionId::new(), NodeType::Thinking, text);
    n.status = crate::store::NodeStatus::Complete;
    let whole = prepare(&n).unwrap();
    let mut streamed = StreamedTerms::new();
    let mut at = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
    cuts.sort_unstable();
    for cut in cuts {
        if cut > at && text.is_char_boundary(cut) {
            streamed.push(&text[at..cut]);
            at = cut;
        }
    }
    streamed.push(&text[at..]);
    assert_eq!(streamed.len(), text.len());
    let got = streamed.finish();
    assert_eq!(got.hash, whole.hash);
    assert_eq!(got.tokens, whole.tokens);
    let got_terms: Vec<(String, u32)> = got.terms().map(|(t, n)| (t.to_string(), n)).collect();
    let mut want: Vec<(String, u32)> = whole.terms().map(|(t, n)| (t.to_string(), n)).collect();
    want.sort();
    assert_eq!(got_terms, want, "{text:?}");
}

#[test]
fn a_streamed_text_is_indexed_as_the_whole_text() {
    let text = "Größe: a ÉTÉ x2 über_alles — 東京 ok? The the THE tHe; step 12 weighs budget12 ";
    streamed_equals_whole(text, &[]);
    streamed_equals_whole(text, &(0..text.len()).collect::<Vec<_>>());
    streamed_equals_whole("", &[0]);
    streamed_equals_whole("oneword", &[3]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    #[test]
    fn any_cut_of_a_streamed_text_indexes_as_the_whole(
        words in proptest::collection::vec("[a-zA-Z0-9]{1,6}|Größe|東京|é+|[ .,;\n—→]{1,3}", 0..60),
        cuts in proptest::collection::vec(0usize..400, 0..12),
    ) {
        streamed_equals_whole(&words.concat(), &cuts);
    }

    /// The term counter's scan (a table of byte classes, non-ASCII characters looked up one
    /// by one) finds the tokenizer's words, however ASCII, Unicode letters, upper case,
    /// separators and over-long words mix.
    #[test]
    fn the_term_counts_are_the_tokenizers_words(
        pieces in proptest::collection::vec(
            "[a-zA-Z0-9]{1,8}|[A-Z]{2,3}|x{60,70}|Größe|ÉTÉ|東京|İ|ǅ|é+|٣٤|[ .,;_\n\t—→\u{1b}]{1,3}|\\PC{1,3}",
            0..50,
        ),
    ) {
        let text = pieces.concat();
        let mut want: HashMap<String, u32> = HashMap::new();
        for t in tokenize(&text) {
            *want.entry(t).or_insert(0) += 1;
        }
        let (got, total) = count_terms(&text);
        let got: HashMap<String, u32> = got.iter().map(|(k, v)| (k.to_string(), v)).collect();
        proptest::prop_assert_eq!(total, want.values().sum::<u32>());
        proptest::prop_assert_eq!(got, want);
    }
}

/// Postings written from a log of a few sorted runs (the way streamed nodes give their
/// terms) and from the same log unsorted are the same index.
fn few_runs_merge_like_a_sort(fx: &Fixture) {
    let s = fx.open();
    let session = Session::new("runs", SessionSource::Glassbox);
    let texts = [
        "zeta alpha mid alpha",
        "alpha beta zeta omega",
        "mid mid omega beta",
    ];
    let nodes: Vec<Node> = texts
        .iter()
        .map(|t| {
            let mut n = Node::new(session.id, NodeType::Response, *t);
            n.status = crate::store::NodeStatus::Complete;
            n
        })
        .collect();
    s.write(|w| {
        w.put_session(&session)?;
        for n in &nodes {
            let mut streamed = StreamedTerms::new();
            streamed.push(&n.text);
            // As a turn's last write puts a streamed node: its words first, its record after.
            w.index_words(n, &streamed.finish())?;
            w.put_encoded_node(
                n,
                crate::store::EncodedNode::without_terms(n, None)?.indexed(),
            )?;
        }
        Ok(())
    })
    .unwrap();
    for (term, want) in [
        ("alpha", vec![0, 1]),
        ("mid", vec![0, 2]),
        ("zeta", vec![0, 1]),
        ("omega", vec![1, 2]),
    ] {
        let hits = s.search(term, None, 10).unwrap();
        let mut got: Vec<usize> = hits
            .iter()
            .map(|h| nodes.iter().position(|n| n.id == h.node).unwrap())
            .collect();
        got.sort_unstable();
        assert_eq!(got, want, "{term}");
    }
    let alpha = s.search("alpha", None, 10).unwrap();
    assert_eq!(alpha[0].node, nodes[0].id, "two hits rank above one");
}
