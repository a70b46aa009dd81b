//! Loop detection throughput: a long, fast thinking stream (80,000 short sentences fed in
//! deltas of 400 sentences, then 20,000 numbered words for a second detector), and a mix of
//! prose, markdown lists, a table, code and non-ASCII text such as real models write.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use glassbox::engines::llm::loops::{LoopDetector, LoopParams};

#[path = "support/deltas.rs"]
mod deltas;
use deltas::deltas;

/// The thinking stream as deltas of 400 sentences, and the second detector's words.
fn stream_text() -> (Vec<String>, String) {
    let sentences: Vec<String> = (0..80_000)
        .map(|i| format!("step {i} weighs the option against the budget. "))
        .collect();
    let deltas = sentences.chunks(400).map(|c| c.concat()).collect();
    let words = (0..20_000).map(|i| format!("word{i} ")).collect();
    (deltas, words)
}

/// About `target` bytes of model-like text that never loops: paragraphs, lists, a table,
/// code and some non-ASCII, each piece numbered so no block repeats.
fn mixed_text(target: usize) -> String {
    let mut out = String::with_capacity(target + 1024);
    let mut n = 0usize;
    while out.len() < target {
        out.push_str(&format!(
            "## Part {n}\n\nLet me look at the structure of the request {n} first. The handler parses \
             the headers, then the body, and then it dispatches to the route for case {n}.\n\n\
             1. Check the timeout of shard {n}.\n2. Compare the retry budget — 予算 {n} — with the \
             p99 latency.\n- **Option {n}**: stream the body; it is größer than the buffer.\n\
             | Case | Value |\n|---|---|\n| {n} | É{n} |\n\n```rust\nfn f{n}(x: u32) -> u32 {{\n    \
             x + {n}\n}}\n```\n\nTherefore the fix for İtem {n} is to stream the body 🚀 and raise \
             the timeout, which is clearly better than the current code.\n\n"
        ));
        n += 1;
    }
    out
}

fn bench_loops(c: &mut Criterion) {
    let params = LoopParams::default();
    let (stream, words) = stream_text();
    let bytes: usize = stream.iter().map(String::len).sum::<usize>() + words.len();
    let mut group = c.benchmark_group("loops");
    group.sample_size(20);

    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("stream_4mb", |b| {
        b.iter(|| {
            let mut thinking = LoopDetector::new(&params);
            let mut found = 0usize;
            for delta in &stream {
                found += usize::from(thinking.push(black_box(delta)).is_some());
            }
            let mut text = LoopDetector::new(&params);
            found += usize::from(text.push(black_box(&words)).is_some());
            (found, thinking.found(), text.found())
        })
    });

    let mixed = mixed_text(1024 * 1024);
    let pieces = deltas(&mixed, 64);
    group.throughput(Throughput::Bytes(mixed.len() as u64));
    group.bench_function("mixed_1mb_64b_deltas", |b| {
        b.iter(|| {
            let mut d = LoopDetector::new(&params);
            let mut found = 0usize;
            for piece in &pieces {
                found += usize::from(d.push(black_box(piece)).is_some());
            }
            (found, d.found())
        })
    });
    group.finish();
}

criterion_group!(benches, bench_loops);
criterion_main!(benches);
