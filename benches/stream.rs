//! Stream parsing + persistence: an Anthropic stream of thinking and text deltas through the
//! wire decoder, the orchestrator and the store (batched commits, raw chunks kept), two ways:
//!
//! - `anthropic sse → events → store`: 5,000 thinking and 1,000 text deltas of a recording
//!   replayed at full speed (no network);
//! - `loopback http`: the shape `scripts/bench-scale.sh` measures (thinking deltas, then text
//!   deltas), 20,000 of them, served by a plain HTTP/1.1 server on 127.0.0.1 in this process
//!   and read by the Anthropic provider through its HTTP driver, beside
//!   `loopback http, body only`: the same body read off the same server with nothing done to
//!   it (what curl does), the floor the turn is measured against.
//!
//! Reported as events per second.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use glassbox::engines::llm::ThinkingMode;
use glassbox::engines::llm::anthropic::AnthropicProvider;
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::replay::ReplayProvider;
use glassbox::engines::orchestrator::{Orchestrator, TurnRequest};
use glassbox::store::{RawStream, SessionId, Store, StoredChunk, StreamId};

const THINKING: usize = 5_000;
const TEXT: usize = 1_000;
/// Deltas of the loopback stream: thinking, then text (the scale script's 4:1).
const HTTP_THINKING: usize = 16_000;
const HTTP_TEXT: usize = 4_000;

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

/// The body `scripts/bench-scale.sh` serves, with `thinking` and `text` deltas.
fn scale_body(thinking: usize, text: usize) -> Vec<u8> {
    let mut out = String::new();
    let mut push = |event: &str, data: serde_json::Value| {
        out.push_str(&format!("event: {event}\ndata: {data}\n\n"))
    };
    push(
        "message_start",
        serde_json::json!({"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"bench","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}),
    );
    push(
        "content_block_start",
        serde_json::json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
    );
    for i in 0..thinking {
        push(
            "content_block_delta",
            serde_json::json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":format!("step {i} weighs the option against the budget. ")}}),
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
    for i in 0..text {
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
        serde_json::json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":thinking + text}}),
    );
    push("message_stop", serde_json::json!({"type":"message_stop"}));
    out.into_bytes()
}

/// Answers every request on `listener` with `body` as an event stream, then closes.
fn serve(listener: TcpListener, body: Arc<Vec<u8>>) {
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        let body = body.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(match conn.try_clone() {
                Ok(c) => c,
                Err(_) => return,
            });
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut request = vec![0; length];
            if reader.read_exact(&mut request).is_err() {
                return;
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(&body);
        });
    }
}

/// Reads the whole response to one request off `addr`, as curl would; returns its length.
fn read_body(addr: std::net::SocketAddr) -> usize {
    let mut conn = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
    conn.write_all(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    conn.read_to_end(&mut out).unwrap_or_else(|e| panic!("{e}"));
    out.len()
}

fn loopback_http(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = Store::open(&dir.path().join("bench.redb")).unwrap_or_else(|e| panic!("{e}"));
    let body = Arc::new(scale_body(HTTP_THINKING, HTTP_TEXT));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    std::thread::spawn({
        let body = body.clone();
        move || serve(listener, body)
    });
    let provider = Arc::new(
        AnthropicProvider::new(HttpSettings {
            keys: vec![ApiKey::new("bench")],
            ..HttpSettings::with_base_url(format!("http://{addr}"))
        })
        .unwrap_or_else(|e| panic!("{e}")),
    );
    let mut group = c.benchmark_group("stream");
    group.sample_size(10);
    group.throughput(Throughput::Elements((HTTP_THINKING + HTTP_TEXT) as u64));
    group.bench_function("loopback http, body only", |b| {
        b.iter(|| assert!(read_body(addr) > body.len()))
    });
    group.bench_function("loopback http", |b| {
        b.iter(|| {
            let orch = Orchestrator::new(store.clone(), provider.clone(), "bench");
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
                let drain = async move { while rx.recv().await.is_some() {} };
                let turn = orch.run_turn(req, tx, tokio_util::sync::CancellationToken::new());
                let (out, ()) = tokio::join!(turn, drain);
                let out = out.unwrap_or_else(|e| panic!("{e}"));
                assert!(out.error.is_none(), "{:?}", out.error);
                assert!(out.thinking.is_some() && out.response.is_some());
            })
        })
    });
    group.finish();
}

criterion_group!(benches, stream_and_persist, loopback_http);
criterion_main!(benches);
