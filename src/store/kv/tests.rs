//! The facade's tables against redb's: every operation the store uses, on both arms.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::Bound;

use super::{ReadableTable, Table, TableDefinition, WriteTxn};
use crate::store::testing::{Fixture, on_every_arm};
use crate::store::{Edge, EdgeType, Node, NodeId, NodeType, Session, SessionSource, StoreError};

on_every_arm!(
    table_reads_and_writes_match_redb,
    puts_are_read_back_in_their_transaction,
    get_many_answers_each_key_in_order,
    joins_read_in_batches_keep_order_and_stop
);

const NUMS: TableDefinition<u64, &[u8]> = TableDefinition::new("test_nums");
const WORDS: TableDefinition<&str, u64> = TableDefinition::new("test_words");
const FILLED: TableDefinition<[u8; 4], ()> = TableDefinition::new("test_filled");

fn keys_of(t: &impl ReadableTable<u64, &'static [u8]>) -> Vec<u64> {
    t.iter().unwrap().map(|r| r.unwrap().0.value()).collect()
}

fn fill_nums(t: &mut Table<'_, u64, &'static [u8]>, keys: &[u64]) {
    for k in keys.iter().rev() {
        assert!(t.insert(*k, k.to_le_bytes().as_slice()).unwrap().is_none());
    }
}

/// Every table operation the store uses, through the facade, with what redb does: key
/// order (`u64` keys whose little-endian bytes sort otherwise), ranges read from both ends
/// across many pages, first and last, rows removed as an extraction is read and only those,
/// retain, appending in order, dropped and listed tables, snapshots and discarded writes.
fn table_reads_and_writes_match_redb(fx: &Fixture) {
    let db = fx.raw();
    let keys: Vec<u64> = (0..1300u64).map(|i| i * 300).collect();
    let w: WriteTxn = db.begin_write().unwrap();
    {
        let mut t = w.open_table(NUMS).unwrap();
        fill_nums(&mut t, &keys);
        assert_eq!(t.len().unwrap(), 1300);
        assert_eq!(keys_of(&t), keys);
        let old = t.insert(300, [7u8].as_slice()).unwrap().unwrap();
        assert_eq!(old.value(), 300u64.to_le_bytes().as_slice());
        drop(old);
        assert_eq!(t.get(300).unwrap().unwrap().value(), [7u8].as_slice());
        assert!(t.get(301).unwrap().is_none());
        assert_eq!(t.first().unwrap().unwrap().0.value(), 0);
        assert_eq!(t.last().unwrap().unwrap().0.value(), 1299 * 300);
        let rev: Vec<u64> = t
            .iter()
            .unwrap()
            .rev()
            .map(|r| r.unwrap().0.value())
            .collect();
        assert_eq!(rev, keys.iter().rev().copied().collect::<Vec<_>>());
        // Both ends of one range at once meet without a row twice or a row missed.
        let mut r = t.range(600u64..=300_000).unwrap();
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        loop {
            match r.next() {
                Some(row) => lo.push(row.unwrap().0.value()),
                None => break,
            }
            if lo.len() % 3 == 0 {
                match r.next_back() {
                    Some(row) => hi.push(row.unwrap().0.value()),
                    None => break,
                }
            }
        }
        assert!(r.next().is_none() && r.next_back().is_none());
        hi.reverse();
        lo.extend(hi);
        let want: Vec<u64> = keys
            .iter()
            .copied()
            .filter(|k| (600..=300_000).contains(k))
            .collect();
        assert_eq!(lo, want);
        drop(r);
        let above: Vec<u64> = t
            .range((Bound::Excluded(389_400u64), Bound::Unbounded))
            .unwrap()
            .map(|r| r.unwrap().0.value())
            .collect();
        assert_eq!(above, vec![389_700]);
        // An extraction removes the rows it hands out, and only those.
        let taken: Vec<u64> = t
            .extract_from_if(0u64..6_000, |k, _| k % 600 == 0)
            .unwrap()
            .take(3)
            .map(|r| r.unwrap().0.value())
            .collect();
        assert_eq!(taken, vec![0, 600, 1200]);
        assert_eq!(t.len().unwrap(), 1297);
        assert!(t.get(1800).unwrap().is_some());
        let all: Vec<u64> = t
            .extract_from_if(..=3_000u64, |_, _| true)
            .unwrap()
            .map(|r| r.unwrap().0.value())
            .collect();
        assert_eq!(all, vec![300, 900, 1500, 1800, 2100, 2400, 2700, 3000]);
        t.retain_in(3_000u64..=300_000, |k, _| k % 900 == 0)
            .unwrap();
        t.retain(|k, _| k < 360_000).unwrap();
        let left = keys_of(&t);
        assert_eq!(left.first(), Some(&3_600));
        assert_eq!(left.last(), Some(&359_700));
        assert!(left.iter().all(|k| *k > 300_000 || k % 900 == 0));
        assert!(t.remove(3_600).unwrap().is_some());
        assert!(t.remove(3_600).unwrap().is_none());
    }
    {
        let mut t = w.open_table(WORDS).unwrap();
        for (i, word) in ["b", "ab", "a", "", "ba"].iter().enumerate() {
            t.insert(*word, i as u64).unwrap();
        }
        let words: Vec<(String, u64)> = t
            .iter()
            .unwrap()
            .map(|r| {
                let (k, v) = r.unwrap();
                (k.value().to_string(), v.value())
            })
            .collect();
        let want = [("", 3), ("a", 2), ("ab", 1), ("b", 0), ("ba", 4)];
        assert_eq!(words, want.map(|(k, v)| (k.to_string(), v)));
        assert_eq!(t.range("a".."b").unwrap().count(), 2);
    }
    {
        let mut t = w.open_table(FILLED).unwrap();
        let mut a = t.appender().unwrap();
        for i in 0..1000u32 {
            a.push(i.to_be_bytes(), ()).unwrap();
        }
        assert!(a.push(5u32.to_be_bytes(), ()).is_err());
        a.close().unwrap();
        assert_eq!(t.len().unwrap(), 1000);
        assert!(
            t.appender()
                .unwrap()
                .push(999u32.to_be_bytes(), ())
                .is_err()
        );
    }
    w.commit().unwrap();

    // A read transaction keeps its snapshot; a write dropped uncommitted leaves nothing.
    let r = db.begin_read().unwrap();
    let w = db.begin_write().unwrap();
    w.open_table(NUMS)
        .unwrap()
        .insert(1, [1u8].as_slice())
        .unwrap();
    assert!(w.delete_table(FILLED).unwrap());
    assert!(!w.delete_table(FILLED).unwrap());
    assert!(!w.list_tables().unwrap().iter().any(|t| t == "test_filled"));
    w.commit().unwrap();
    assert!(r.open_table(NUMS).unwrap().get(1).unwrap().is_none());
    assert_eq!(r.open_table(FILLED).unwrap().len().unwrap(), 1000);
    drop(r);
    let w = db.begin_write().unwrap();
    w.open_table(NUMS)
        .unwrap()
        .insert(2, [2u8].as_slice())
        .unwrap();
    drop(w);
    let r = db.begin_read().unwrap();
    let t = r.open_table(NUMS).unwrap();
    assert!(t.get(1).unwrap().is_some() && t.get(2).unwrap().is_none());
    let names = r.list_tables().unwrap();
    assert!(names.contains(&"test_nums".to_string()) && names.contains(&"test_words".to_string()));
    assert!(
        r.open_table_if_exists(FILLED)
            .unwrap()
            .is_none_or(|t| t.is_empty().unwrap())
    );
}

/// Rows written with [`Table::put`] (more than a byte backend holds back at once, in no
/// particular key order, some put twice) are seen by every read of their transaction:
/// get, ranges from both ends, first and last, len, the table list, an appender's order
/// order; a put, remove and put again of one key ends with the last put, a put then remove
/// with nothing; a table filled only by puts is deleted; all of it as committed.
fn puts_are_read_back_in_their_transaction(fx: &Fixture) {
    let db = fx.raw();
    let n = 12_345u64;
    // Keys 0, 2, 4, … in a scrambled order, each put twice with its value last.
    let keys: Vec<u64> = (0..n).map(|i| (i * 7919) % n * 2).collect();
    let value = |k: u64| k.to_le_bytes();
    let w = db.begin_write().unwrap();
    {
        let mut t = w.open_table(NUMS).unwrap();
        for k in &keys {
            t.put(*k, [0u8].as_slice()).unwrap();
        }
        for k in &keys {
            t.put(*k, value(*k).as_slice()).unwrap();
        }
        assert_eq!(t.get(4).unwrap().unwrap().value(), value(4).as_slice());
        assert!(t.get(5).unwrap().is_none());
        assert_eq!(t.len().unwrap(), n);
        let sorted: Vec<u64> = (0..n).map(|i| i * 2).collect();
        assert_eq!(keys_of(&t), sorted);
        let rev: Vec<u64> = t
            .range(100u64..2000)
            .unwrap()
            .rev()
            .map(|r| r.unwrap().0.value())
            .collect();
        assert_eq!(rev, (50..1000).rev().map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(t.first().unwrap().unwrap().0.value(), 0);
        t.put(n * 2 + 1, [1u8].as_slice()).unwrap();
        assert_eq!(t.last().unwrap().unwrap().0.value(), n * 2 + 1);

        // Put, remove, put; put, remove.
        t.put(1, [1u8].as_slice()).unwrap();
        assert_eq!(t.remove(1).unwrap().unwrap().value(), [1u8].as_slice());
        t.put(1, [2u8].as_slice()).unwrap();
        t.put(3, [3u8].as_slice()).unwrap();
        assert_eq!(t.remove(3).unwrap().unwrap().value(), [3u8].as_slice());
        assert!(t.remove(3).unwrap().is_none());
        assert_eq!(t.get(1).unwrap().unwrap().value(), [2u8].as_slice());

        // An appender goes on after the rows put before it.
        t.put(n * 4, [4u8].as_slice()).unwrap();
        let mut a = t.appender().unwrap();
        a.push(n * 4 + 1, [5u8].as_slice()).unwrap();
        a.close().unwrap();
    }
    {
        let mut t = w.open_table(WORDS).unwrap();
        t.put("gone", 1).unwrap();
    }
    assert!(w.list_tables().unwrap().contains(&WORDS.name().to_string()));
    assert!(w.delete_table(WORDS).unwrap());
    w.commit().unwrap();

    let r = db.begin_read().unwrap();
    let t = r.open_table(NUMS).unwrap();
    assert_eq!(t.len().unwrap(), n + 4);
    assert_eq!(t.get(1).unwrap().unwrap().value(), [2u8].as_slice());
    assert!(t.get(3).unwrap().is_none());
    assert_eq!(t.get(8).unwrap().unwrap().value(), value(8).as_slice());
    assert_eq!(t.last().unwrap().unwrap().0.value(), n * 4 + 1);
    assert!(!r.list_tables().unwrap().contains(&WORDS.name().to_string()));
}

/// What only a redb file can do is refused by name on a byte backend; the rest of `doctor`
/// and the importers' size checks still answer.
#[test]
fn a_byte_backend_says_what_it_does_not_support() {
    let fx = Fixture::bytes();
    let mut store = fx.open();
    // Another handle does not change the answer.
    let other = store.clone();
    let s = Session::new("t", SessionSource::Glassbox);
    let nodes: Vec<Node> = (0..2)
        .map(|i| Node::new(s.id, NodeType::Thinking, format!("n{i}")))
        .collect();
    store
        .write(|w| {
            w.put_session(&s)?;
            nodes.iter().try_for_each(|n| w.put_node(n))
        })
        .unwrap();
    for err in [
        store.table_sizes().unwrap_err(),
        store.free_bytes().unwrap_err(),
        store.check_integrity().unwrap_err(),
        store.compact().unwrap_err(),
    ] {
        assert!(matches!(err, StoreError::Unsupported(_)), "{err}");
        assert!(err.to_string().contains("does not support"), "{err}");
    }
    drop(other);
    assert_eq!(store.file_bytes(), 0);
    assert_eq!(store.counts().unwrap().nodes, 2);
    assert!(store.node_compression().unwrap().stored > 0);
}

/// A key of [`MAX_KEY_BYTES`](super::bytes::MAX_KEY_BYTES) is stored, a longer one refused
/// with an error naming its size and table, and the transaction still commits the rest.
fn long_keys_are_refused(fx: &Fixture) {
    use super::bytes::MAX_KEY_BYTES;
    let super::Db::Bytes(backend) = fx.raw() else {
        panic!("a byte backend");
    };
    let longest = vec![7u8; MAX_KEY_BYTES];
    let long = vec![7u8; MAX_KEY_BYTES + 1];
    let refused = |err: StoreError| {
        let StoreError::Invalid(message) = &err else {
            panic!("expected an invalid key, got {err:?}");
        };
        assert!(
            message.contains("2049 bytes") && message.contains("test_long"),
            "{message}"
        );
    };
    let mut w = backend.begin_write().unwrap();
    assert_eq!(w.insert("test_long", &longest, b"v").unwrap(), None);
    refused(w.insert("test_long", &long, b"w").unwrap_err());
    // A batch read with one key over the limit reads nothing.
    refused(
        w.get_many("test_long", &[longest.as_slice(), long.as_slice()])
            .unwrap_err(),
    );
    assert_eq!(
        w.get_many("test_long", &[longest.as_slice()]).unwrap(),
        vec![Some(b"v".to_vec())]
    );
    w.commit().unwrap();
    let r = backend.begin_read().unwrap();
    assert_eq!(r.len("test_long").unwrap(), 1);
    assert_eq!(r.get("test_long", &longest).unwrap(), Some(b"v".to_vec()));
    refused(r.get_many("test_long", &[long.as_slice()]).unwrap_err());
    assert_eq!(
        r.get_many("test_long", &[b"x".as_slice(), longest.as_slice()])
            .unwrap(),
        vec![None, Some(b"v".to_vec())]
    );
}

#[test]
fn long_keys_are_refused_in_memory() {
    long_keys_are_refused(&Fixture::bytes());
}

#[test]
fn long_keys_are_refused_in_postgres() {
    long_keys_are_refused(&Fixture::pg());
}

fn values(got: Vec<Option<super::Guard<'_, &'static [u8]>>>) -> Vec<Option<Vec<u8>>> {
    got.into_iter()
        .map(|v| v.map(|v| v.value().to_vec()))
        .collect()
}

/// `get_many` answers each key in the order given: missing keys (and a table never written)
/// as `None`, a key given twice twice, nothing for no keys; in a write transaction it sees
/// the rows put and not yet sent (more than a byte backend holds back or asks for at
/// once), rows inserted, and not the rows removed; a read sees what was committed.
fn get_many_answers_each_key_in_order(fx: &Fixture) {
    let db = fx.raw();
    let n = 6_001u64;
    let value = |k: u64| (k * 3).to_le_bytes().to_vec();
    let w = db.begin_write().unwrap();
    {
        let mut t = w.open_table(NUMS).unwrap();
        t.insert(1_000_001, [9u8].as_slice()).unwrap();
        t.insert(10, [1u8].as_slice()).unwrap();
        assert!(t.remove(10).unwrap().is_some());
        // Even keys 0..2n but 10, put newest first; the last thousand or so are still
        // held back by a byte backend, key 8 put twice among them.
        for k in (0..n).rev().map(|k| k * 2).filter(|k| *k != 10) {
            t.put(k, value(k).as_slice()).unwrap();
        }
        t.put(8, [8u8].as_slice()).unwrap();
        let got = values(t.get_many([8u64, 7, 8, 10, 1_000_001, 4]).unwrap());
        assert_eq!(
            got,
            vec![
                Some(vec![8]),
                None,
                Some(vec![8]),
                None,
                Some(vec![9]),
                Some(value(4))
            ]
        );
        assert!(t.get_many(Vec::<u64>::new()).unwrap().is_empty());
        // Every key, odd ones missing, newest first.
        let keys: Vec<u64> = (0..n * 2).rev().collect();
        let got = values(t.get_many(keys.iter()).unwrap());
        assert_eq!(got.len(), keys.len());
        for (k, v) in keys.iter().zip(&got) {
            let want = match k {
                8 => Some(vec![8]),
                10 => None,
                k if k % 2 == 0 => Some(value(*k)),
                _ => None,
            };
            assert_eq!(v, &want, "key {k}");
        }
    }
    {
        let t = w.open_table(WORDS).unwrap();
        assert_eq!(t.get_many(["a", "b"]).unwrap().len(), 2);
        assert!(t.get_many(["a", "b"]).unwrap().iter().all(Option::is_none));
    }
    w.commit().unwrap();

    let r = db.begin_read().unwrap();
    let t = r.open_table(NUMS).unwrap();
    let got = values(t.get_many([1_000_001u64, 3, 0, 0, 10]).unwrap());
    assert_eq!(
        got,
        vec![Some(vec![9]), None, Some(value(0)), Some(value(0)), None]
    );
    assert!(t.get_many(Vec::<u64>::new()).unwrap().is_empty());
    if let Some(t) = r.open_table_if_exists(WORDS).unwrap() {
        let got = t.get_many(["a"]).unwrap();
        assert!(got.len() == 1 && got[0].is_none());
    }
}

/// The store's joins through `get_many`: a session's walk over several batches hands out
/// every node in creation order and stops where `f` breaks; `nodes` answers the ids that
/// exist in the order given, a repeated one twice; `edges_to` finds every edge arriving.
fn joins_read_in_batches_keep_order_and_stop(fx: &Fixture) {
    use std::ops::ControlFlow;
    let store = fx.open();
    let s = Session::new("t", SessionSource::Glassbox);
    let nodes: Vec<Node> = (0..100)
        .map(|i| Node::new(s.id, NodeType::Thinking, format!("n{i}")))
        .collect();
    let hub = nodes[0].id;
    store
        .write(|w| {
            w.put_session(&s)?;
            nodes.iter().try_for_each(|n| w.put_node(n))?;
            nodes[1..]
                .iter()
                .try_for_each(|n| w.put_edge(&Edge::new(n.id, EdgeType::Supports, hub)))
        })
        .unwrap();
    let ids = |ns: &[Node]| ns.iter().map(|n| n.id).collect::<Vec<_>>();

    let mut walked = Vec::new();
    store
        .for_each_session_node(s.id, |n| {
            walked.push(n.id);
            Ok(ControlFlow::Continue(()))
        })
        .unwrap();
    assert_eq!(walked, ids(&nodes));
    let mut walked = Vec::new();
    store
        .for_each_session_node(s.id, |n| {
            walked.push(n.id);
            Ok(if walked.len() == 40 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        })
        .unwrap();
    assert_eq!(walked, ids(&nodes[..40]));

    let asked = [nodes[70].id, NodeId::new(), nodes[3].id, nodes[70].id];
    assert_eq!(
        ids(&store.nodes(&asked).unwrap()),
        [nodes[70].id, nodes[3].id, nodes[70].id]
    );
    let mut to: Vec<NodeId> = store
        .edges_to(hub, None)
        .unwrap()
        .iter()
        .map(|e| e.src)
        .collect();
    to.sort();
    let mut want = ids(&nodes[1..]);
    want.sort();
    assert_eq!(to, want);
}
