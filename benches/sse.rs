//! SSE framing: the own incremental decoder (`engines::llm::sse`) against the
//! `eventsource-stream` crate on the same body — 100,000 `content_block_delta` frames of an
//! Anthropic thinking stream, cut into 1,400-byte chunks as a network would deliver them.
//! Both produce the same frames (checked before timing); reported as frames per second.

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use glassbox::engines::llm::sse::SseDecoder;

const FRAMES: usize = 100_000;
const CHUNK: usize = 1_400;

fn body() -> Vec<u8> {
    let mut out = String::new();
    for i in 0..FRAMES {
        let data = serde_json::json!({
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": format!("step {i} weighs a detail; ")}
        });
        out.push_str(&format!("event: content_block_delta\ndata: {data}\n\n"));
    }
    out.into_bytes()
}

fn chunks(body: &[u8]) -> Vec<Bytes> {
    body.chunks(CHUNK).map(Bytes::copy_from_slice).collect()
}

fn own(chunks: &[Bytes]) -> Vec<(Option<String>, String)> {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::with_capacity(FRAMES);
    for c in chunks {
        out.extend(decoder.push(c).into_iter().map(|f| (f.event, f.data)));
    }
    out.extend(decoder.finish().into_iter().map(|f| (f.event, f.data)));
    out
}

fn crate_frames(chunks: &[Bytes]) -> Vec<(Option<String>, String)> {
    use eventsource_stream::Eventsource;
    let stream = futures::stream::iter(chunks.iter().cloned().map(Ok::<_, std::io::Error>));
    futures::executor::block_on(
        stream
            .eventsource()
            .filter_map(|e| async move { e.ok() })
            .map(|e| ((e.event != "message").then_some(e.event), e.data))
            .collect(),
    )
}

fn bench(c: &mut Criterion) {
    let body = body();
    let chunks = chunks(&body);
    let ours = own(&chunks);
    assert_eq!(ours.len(), FRAMES);
    assert_eq!(ours, crate_frames(&chunks), "both framings must agree");

    let mut group = c.benchmark_group("sse_framing");
    group.throughput(Throughput::Elements(FRAMES as u64));
    group.sample_size(10);
    group.bench_function("own_decoder", |b| b.iter(|| own(&chunks).len()));
    group.bench_function("eventsource_stream", |b| {
        b.iter(|| crate_frames(&chunks).len())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
