#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use super::{BLOCK_BYTES, BlockWriter, Layout, RunCursor, find_in_block, lookup};
use crate::store::kv::{ReadableTable, TableDefinition};
use crate::store::search::legacy::runs_as_rows;
use crate::store::search::postings::Run;
use crate::store::testing::{Fixture, on_every_arm};
use crate::store::{Node, NodeType, Session, SessionSource, Store, StoreError};

const RUN: TableDefinition<&[u8], &[u8]> = TableDefinition::new("test_run");

type Entries = BTreeMap<Vec<u8>, Vec<u8>>;

/// Writes `entries` into a new table in `layout`; reads them back through a cursor and
/// looks up every term and every probe. Returns the rows the table holds.
fn round_trip(fx: &Fixture, layout: Layout, entries: &Entries, probes: &[Vec<u8>]) -> u64 {
    let db = fx.raw();
    let w = db.begin_write().unwrap();
    {
        let mut t = w.open_table(RUN).unwrap();
        match layout {
            Layout::Rows => {
                for (k, v) in entries {
                    t.insert(k.as_slice(), v.as_slice()).unwrap();
                }
            }
            Layout::Blocks => {
                let mut b = BlockWriter::new(t.appender().unwrap());
                for (k, v) in entries {
                    b.push(k, v).unwrap();
                }
                b.close().unwrap();
            }
        }
    }
    w.commit().unwrap();
    let r = db.begin_read().unwrap();
    let t = r.open_table(RUN).unwrap();
    let mut c = RunCursor::new(&t, layout).unwrap();
    let mut read = Entries::new();
    let mut last: Option<Vec<u8>> = None;
    while let Some((k, v)) = c.current() {
        assert!(last.as_deref().is_none_or(|l| l < k), "terms out of order");
        last = Some(k.to_vec());
        read.insert(k.to_vec(), v.to_vec());
        c.advance().unwrap();
    }
    assert_eq!(&read, entries);
    for term in entries.keys().chain(probes) {
        let mut found = None;
        lookup(&t, layout, term, &mut |v| {
            assert!(found.is_none(), "a term found twice");
            found = Some(v.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(found.as_ref(), entries.get(term), "lookup of {term:?}");
    }
    t.len().unwrap()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Whatever the terms (sharing prefixes, one byte or many) and the sizes of their
    /// postings (none past a block, some larger than a block alone), a run in blocks reads
    /// back in term order as it was written, finds every term it holds and no other (before
    /// its first term, between two, after its last), as a run of a row per term does; and
    /// blocks are full: one larger than a block stands alone, and the others are closed
    /// only when the next entry would not fit.
    #[test]
    fn a_run_in_blocks_reads_back_as_written(
        entries in proptest::collection::btree_map(
            proptest::collection::vec(b'a'..b'e', 1..7),
            proptest::prop_oneof![
                8 => proptest::collection::vec(proptest::num::u8::ANY, 1..40),
                1 => proptest::collection::vec(proptest::num::u8::ANY, BLOCK_BYTES - 30..BLOCK_BYTES * 2),
            ],
            0..400,
        ),
        probes in proptest::collection::vec(proptest::collection::vec(b'a'..b'f', 0..8), 0..40),
    ) {
        let fx = Fixture::redb();
        let rows = round_trip(&fx, Layout::Rows, &entries, &probes);
        proptest::prop_assert_eq!(rows, entries.len() as u64);
        let fx = Fixture::bytes();
        let blocks = round_trip(&fx, Layout::Blocks, &entries, &probes);
        let small = entries.iter().filter(|(_, v)| v.len() < 64);
        let bytes: usize = small.map(|(k, v)| k.len() + v.len() + 2).sum();
        let large = entries.values().filter(|v| v.len() >= 64).count();
        proptest::prop_assert!(blocks as usize <= bytes / (BLOCK_BYTES - 64) + 2 * large + 1);
        proptest::prop_assert!(blocks > 0 || entries.is_empty());
        let fx = Fixture::redb();
        proptest::prop_assert_eq!(round_trip(&fx, Layout::Blocks, &entries, &probes), blocks);
    }
}

/// A block cut short, or one whose lengths point past its end, is reported as corrupt.
#[test]
fn a_malformed_block_is_an_error() {
    let mut block = Vec::new();
    for (t, p) in [(&b"ab"[..], &[3u8, 4][..]), (b"cd", &[5])] {
        block.push(t.len() as u8);
        block.extend_from_slice(t);
        block.push(p.len() as u8);
        block.extend_from_slice(p);
    }
    assert_eq!(find_in_block(&block, b"cd").unwrap(), Some(&[5u8][..]));
    assert_eq!(find_in_block(&block, b"bb").unwrap(), None);
    for cut in [1, 4, block.len() - 1] {
        let err = find_in_block(&block[..cut], b"cd").unwrap_err();
        assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
    }
    let mut long = block.clone();
    long[0] = 0x7f;
    assert!(find_in_block(&long, b"ab").is_err());
}

/// Terms pushed out of order, or twice, are refused rather than written where a lookup
/// would not find them.
#[test]
fn terms_out_of_order_are_refused() {
    let fx = Fixture::redb();
    let db = fx.raw();
    let w = db.begin_write().unwrap();
    let mut t = w.open_table(RUN).unwrap();
    let mut b = BlockWriter::new(t.appender().unwrap());
    b.push(b"b", b"1").unwrap();
    assert!(b.push(b"b", b"2").is_err());
    assert!(b.push(b"a", b"2").is_err());
}

on_every_arm!(runs_of_a_row_per_term_stay_readable_beside_blocks,);

fn hits(store: &Store, q: &str) -> Vec<(crate::store::NodeId, String)> {
    let mut v: Vec<_> = store
        .search(q, None, 1000)
        .unwrap()
        .into_iter()
        .map(|h| (h.node, format!("{:.9}", h.score)))
        .collect();
    v.sort();
    v
}

fn runs(store: &Store) -> Vec<Run> {
    let r = store.db.begin_read().unwrap();
    let meta = r.open_table(crate::store::tables::META).unwrap();
    let v = meta.get(super::super::postings::RUNS_KEY).unwrap();
    super::super::postings::decode_runs(v.as_ref().map(|v| v.value())).unwrap()
}

fn layouts(store: &Store) -> Vec<Layout> {
    runs(store).into_iter().map(|r| r.layout).collect()
}

/// A store whose runs hold a row per term (as before schema v15) answers every query as it
/// did; nodes written after it add runs in blocks, merges read both layouts, a node
/// re-indexed shadows its old postings across them, and `compact` leaves one run in blocks
/// with the same answers.
fn runs_of_a_row_per_term_stay_readable_beside_blocks(fx: &Fixture) {
    let store = fx.open();
    let s = Session::new("t", SessionSource::Glassbox);
    store.write(|w| w.put_session(&s)).unwrap();
    let mut nodes: Vec<Node> = (0..60)
        .map(|i| {
            let words: Vec<String> = (0..200).map(|j| format!("w{}x{}", i % 7, j)).collect();
            Node::new(
                s.id,
                NodeType::Response,
                format!("alpha n{i} {}", words.join(" ")),
            )
        })
        .collect();
    for chunk in nodes.chunks(20) {
        store
            .write(|w| chunk.iter().try_for_each(|n| w.put_node(n)))
            .unwrap();
    }
    assert!(layouts(&store).iter().all(|l| *l == Layout::Blocks));
    let queries = ["alpha", "n7", "w3x150", "w6x0 n59", "w0x199", "zzz"];
    let before: Vec<_> = queries.iter().map(|q| hits(&store, q)).collect();
    assert_eq!(before[0].len(), 60);
    {
        let txn = store.db.begin_write().unwrap();
        runs_as_rows(&txn).unwrap();
        txn.commit().unwrap();
    }
    assert!(layouts(&store).iter().all(|l| *l == Layout::Rows));
    let rows: Vec<_> = queries.iter().map(|q| hits(&store, q)).collect();
    assert_eq!(rows, before);
    // New nodes and a node re-indexed: new runs in blocks, merged with the rows.
    nodes[3].text = "renamed beta".into();
    let more: Vec<Node> = (0..5)
        .map(|i| Node::new(s.id, NodeType::Response, format!("alpha late{i} w3x150")))
        .collect();
    store
        .write(|w| {
            w.put_node(&nodes[3])?;
            more.iter().try_for_each(|n| w.put_node(n))
        })
        .unwrap();
    let mixed = layouts(&store);
    assert!(mixed.contains(&Layout::Blocks), "{mixed:?}");
    let expect = |store: &Store| {
        assert_eq!(hits(store, "alpha").len(), 64);
        assert!(hits(store, "n3").is_empty());
        assert_eq!(hits(store, "beta").len(), 1);
        assert_eq!(hits(store, "w3x150").len(), before[2].len() - 1 + 5);
        let ids = |h: Vec<(crate::store::NodeId, String)>| -> Vec<_> {
            h.into_iter().map(|(id, _)| id).collect()
        };
        assert_eq!(ids(hits(store, "w0x199")), ids(before[4].clone()));
    };
    expect(&store);
    store.write(|w| w.compact_search_index()).unwrap();
    assert_eq!(layouts(&store), vec![Layout::Blocks]);
    expect(&store);
    // One run in blocks is left as it is; a lone run of rows is brought into blocks.
    let id = |store: &Store| runs(store)[0].id;
    let before = id(&store);
    store.write(|w| w.compact_search_index()).unwrap();
    assert_eq!(id(&store), before);
    {
        let txn = store.db.begin_write().unwrap();
        runs_as_rows(&txn).unwrap();
        txn.commit().unwrap();
    }
    store.write(|w| w.compact_search_index()).unwrap();
    assert_eq!(layouts(&store), vec![Layout::Blocks]);
    assert_ne!(id(&store), before);
    expect(&store);
}
