//! Store benches: committing a batch of nodes, reading a session back, following the journal.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use glassbox::store::{Node, NodeType, Session, SessionSource, Store};

fn store_benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = Store::open(&dir.path().join("bench.redb")).unwrap_or_else(|e| panic!("{e}"));
    let s = Session::new("bench", SessionSource::Glassbox);
    store
        .write(|w| w.put_session(&s))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group("store");
    group.throughput(Throughput::Elements(100));
    group.bench_function("commit 100 nodes in one transaction", |b| {
        b.iter(|| {
            let nodes: Vec<Node> = (0..100)
                .map(|i| Node::new(s.id, NodeType::Thinking, format!("node {i}")))
                .collect();
            store
                .write(|w| {
                    for n in &nodes {
                        w.put_node(n)?;
                    }
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{e}"));
        })
    });
    // A separate session of a fixed size to read back.
    let fixed = Session::new("fixed", SessionSource::Glassbox);
    let nodes: Vec<Node> = (0..10_000)
        .map(|i| Node::new(fixed.id, NodeType::Response, format!("node {i}")))
        .collect();
    store
        .write(|w| {
            w.put_session(&fixed)?;
            for n in &nodes {
                w.put_node(n)?;
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    group.throughput(Throughput::Elements(10_000));
    group.bench_function("read a 10,000-node session back", |b| {
        b.iter(|| {
            black_box(
                store
                    .session_nodes(fixed.id)
                    .unwrap_or_else(|e| panic!("{e}"))
                    .len(),
            )
        })
    });
    group.throughput(Throughput::Elements(1000));
    group.bench_function("follow the last 1000 journal entries", |b| {
        let last = store.last_seq().unwrap_or_else(|e| panic!("{e}"));
        b.iter(|| {
            black_box(
                store
                    .follow(last.saturating_sub(1000), 1000)
                    .unwrap_or_else(|e| panic!("{e}"))
                    .len(),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, store_benches);
criterion_main!(benches);
