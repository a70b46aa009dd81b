//! Stream parsing + persistence: a recorded Anthropic stream of 5,000 thinking deltas and
//! 1,000 text deltas replayed at full speed through the wire decoder, the orchestrator and
//! the store (batched commits, raw chunks kept). Reported as events per second.

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use glassbox::engines::llm::ThinkingMode;
use glassbox::engines::llm::replay::ReplayProvider;
use glassbox::engines::orchestrator::{Orchestrator, TurnRequest};
use glassbox::store::{RawStream, SessionId, Store, StoredChunk, StreamId};

const THINKING: usize = 5_000;
const TEXT: usize = 1_000;

fn recording() -> Vec<StoredChunk> {
    let mut frames = Vec::new();
    let mut push = |event: &str, data: serde_json::Value| {
        frames.push(format!("event: {event}\ndata: {data}\n\n"))
    };
    push(
        "message_start",
        serde_json::json!({"type":"message_start","message":{"id":"m","model":"x","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}),
    );
    push(
        "content_block_start",
        serde_json::json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
    );
    for i in 0..THINKING {
        let t = if i % 25 == 24 {
            "so I decided to go with the first option.\n\n".to_string()
        } else {
            format!("step {i} considers a detail; ")
        };
        push(
            "content_block_delta",
            serde_json::json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":t}}),
        );
    }
    push(
        "content_block_stop",
        serde_json::json!({"type":"content_block_stop","index":0}),
    );
    push(
        "content_block_start",
        serde_json::json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
    );
    for i in 0..TEXT {
        push(
            "content_block_delta",
            serde_json::json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":format!("word{i} ")}}),
        );
    }
    push(
        "content_block_stop",
        serde_json::json!({"type":"content_block_stop","index":1}),
    );
    push(
        "message_delta",
        serde_json::json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":6000}}),
    );
    push("message_stop", serde_json::json!({"type":"message_stop"}));
    frames
        .into_iter()
        .enumerate()
        .map(|(i, f)| StoredChunk {
            offset_us: i as u64 * 100,
            bytes: f.into_bytes(),
        })
        .collect()
}

fn stream_and_persist(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = Store::open(&dir.path().join("bench.redb")).unwrap_or_else(|e| panic!("{e}"));
    let header = RawStream {
        id: StreamId::new(),
        session: SessionId::new(),
        provider: "anthropic".into(),
        model: "x".into(),
        request: serde_json::Value::Null,
        created_at: chrono::Utc::now(),
        nodes: vec![],
        chunk_count: 0,
        total_bytes: 0,
    };
    let chunks = recording();
    let mut group = c.benchmark_group("stream");
    group.sample_size(10);
    group.throughput(Throughput::Elements((THINKING + TEXT) as u64));
    group.bench_function("anthropic sse → events → store", |b| {
        b.iter(|| {
            let provider = Arc::new(ReplayProvider::new(header.clone(), chunks.clone(), 0.0));
            let orch = Orchestrator::new(store.clone(), provider, "x");
            let req = TurnRequest {
                session: None,
                question: "q".into(),
                system: None,
                thinking: ThinkingMode::Budget { tokens: 1000 },
                effort: None,
                max_tokens: 100,
                temperature: None,
                top_p: None,
                seed: None,
                branch_from: None,
            };
            rt.block_on(async {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
                let out = orch
                    .run_turn(req, tx, tokio_util::sync::CancellationToken::new())
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                let _ = drain.await;
                assert!(out.error.is_none());
            })
        })
    });
    group.finish();
}

criterion_group!(benches, stream_and_persist);
criterion_main!(benches);
