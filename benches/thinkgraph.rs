//! ThinkGraph throughput: whole-text analysis of 10 KB and 1 MB of thinking text,
//! incremental building from 64-byte deltas as a model would stream them, and a fast 4 MB
//! stream that is one long paragraph, fed in deltas of about 19 KB.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use glassbox::engines::thinkgraph::{ThinkGraphBuilder, analyze};

#[path = "support/deltas.rs"]
mod deltas;
use deltas::deltas;

/// Reasoning-like text of about `target` bytes: paragraphs with decisions, hedging,
/// conclusions, some non-ASCII and the odd very long paragraph.
fn thinking_text(target: usize) -> String {
    let paragraphs = [
        "Let me look at the structure of the request first. The handler parses headers, then the body, then dispatches.",
        "I could either buffer the whole body or stream it. I'll go with streaming because bodies can be large. I ruled out buffering because it costs memory.",
        "Maybe the timeout is too short; perhaps the upstream is slow. I'm not sure yet, it might be the DNS resolver.",
        "However, the check fails for chunked encoding, so this approach is wrong as written. Comparing hyper versus reqwest for the client side.",
        "Therefore the fix is to stream the body and raise the timeout. This is clearly better than the current code.",
        "Consider also the retry budget — 予算 matters 🚀 — and keep in mind the p99 latency of the slowest shard.",
    ];
    let mut out = String::with_capacity(target + 512);
    let mut n = 0usize;
    while out.len() < target {
        out.push_str(paragraphs[n % paragraphs.len()]);
        out.push_str(if n % 7 == 3 { " " } else { "\n\n" });
        n += 1;
    }
    out
}

/// One paragraph without a blank line: `count` short sentences (about 48 bytes each), so
/// the builder settles it step by step as it streams.
fn long_paragraph(count: usize) -> String {
    let mut out = String::with_capacity(count * 50);
    for i in 0..count {
        out.push_str(&format!("step {i} weighs the option against the budget. "));
    }
    out
}

fn bench_thinkgraph(c: &mut Criterion) {
    let small = thinking_text(10 * 1024);
    let large = thinking_text(1024 * 1024);
    let mut group = c.benchmark_group("thinkgraph");

    group.throughput(Throughput::Bytes(small.len() as u64));
    group.bench_function("analyze_10kb", |b| b.iter(|| analyze(black_box(&small))));

    group.sample_size(10);
    group.throughput(Throughput::Bytes(large.len() as u64));
    group.bench_function("analyze_1mb", |b| b.iter(|| analyze(black_box(&large))));

    let pieces = deltas(&large, 64);
    group.bench_function("incremental_1mb_64b_deltas", |b| {
        b.iter(|| {
            let mut builder = ThinkGraphBuilder::new();
            let mut updates = 0usize;
            for piece in &pieces {
                updates += builder.push(black_box(piece)).len();
            }
            updates += builder.finish().len();
            (updates, builder.confidence())
        })
    });

    let long = long_paragraph(80_000);
    let pieces = deltas(&long, 400 * 48);
    group.throughput(Throughput::Bytes(long.len() as u64));
    group.bench_function("incremental_long_paragraph_4mb_19kb_deltas", |b| {
        b.iter(|| {
            let mut builder = ThinkGraphBuilder::new();
            let mut updates = 0usize;
            for piece in &pieces {
                updates += builder.push(black_box(piece)).len();
                black_box(builder.confidence());
            }
            updates += builder.finish().len();
            (updates, builder.confidence())
        })
    });
    group.finish();
}

criterion_group!(benches, bench_thinkgraph);
criterion_main!(benches);
