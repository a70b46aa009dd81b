//! Every provider and reasoning shape through real HTTP against the scripted server:
//! exact events, retries, key rotation, faults, raw recording and key redaction.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use glassbox::engines::llm::anthropic::AnthropicProvider;
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::ollama::OllamaProvider;
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::engines::llm::replay::wire_decoder;
use glassbox::engines::llm::{
    CallCtx, ChatRequest, LlmError, Message, Provider, RawChunk, StopReason, StreamEvent,
    ThinkingMode, ToolSpec, Usage,
};
use serde_json::json;
use support::{ChunkBy, End, Script, ScriptedServer, Step, fixture, fixtures};

const KEY1: &str = "sk-test-SECRET-key-number-one";
const KEY2: &str = "sk-test-SECRET-key-number-two";

fn settings(base_url: String, keys: &[&str]) -> HttpSettings {
    HttpSettings {
        base_url,
        keys: keys.iter().map(|k| ApiKey::new(*k)).collect(),
        stall_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(2),
        max_retries: 3,
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(200),
        key_cooldown: Duration::from_secs(60),
        ..HttpSettings::default()
    }
}

fn anthropic(server: &ScriptedServer) -> AnthropicProvider {
    AnthropicProvider::new(settings(server.url(), &[KEY1])).unwrap()
}

fn openai(server: &ScriptedServer) -> OpenAiProvider {
    OpenAiProvider::new(settings(format!("{}/v1", server.url()), &[KEY1])).unwrap()
}

fn ollama(server: &ScriptedServer) -> OllamaProvider {
    OllamaProvider::new(settings(server.url(), &[])).unwrap()
}

fn request() -> ChatRequest {
    let mut req = ChatRequest::new("test-model", vec![Message::user("What is 17 × 23?")]);
    req.thinking = ThinkingMode::Budget { tokens: 1024 };
    req.max_tokens = 4096;
    req
}

/// Runs one call to the end (bounded), checking the stream contract on the way: nothing
/// after a terminal event, and no key material in any error.
async fn run(p: &dyn Provider, req: ChatRequest, ctx: CallCtx) -> Vec<StreamEvent> {
    let events: Vec<StreamEvent> =
        tokio::time::timeout(Duration::from_secs(30), p.stream(req, ctx).collect())
            .await
            .expect("stream hung");
    for (i, ev) in events.iter().enumerate() {
        if matches!(ev, StreamEvent::Stop { .. } | StreamEvent::Error { .. }) {
            assert_eq!(
                i,
                events.len() - 1,
                "events after a terminal event: {events:?}"
            );
        }
        if let StreamEvent::Error { error } = ev {
            let shown = format!(
                "{error} {error:?} {}",
                serde_json::to_string(error).unwrap()
            );
            assert!(!shown.contains("SECRET"), "key material in error: {shown}");
        }
    }
    events
}

async fn call(p: &dyn Provider) -> Vec<StreamEvent> {
    run(p, request(), CallCtx::default()).await
}

/// Adjacent thinking/text deltas merged, so chunking does not matter.
fn merged(events: &[StreamEvent]) -> Vec<StreamEvent> {
    let mut out: Vec<StreamEvent> = Vec::new();
    for ev in events.iter().cloned() {
        match (out.last_mut(), ev) {
            (
                Some(StreamEvent::ThinkingDelta { text: a }),
                StreamEvent::ThinkingDelta { text: b },
            ) => a.push_str(&b),
            (Some(StreamEvent::TextDelta { text: a }), StreamEvent::TextDelta { text: b }) => {
                a.push_str(&b)
            }
            (_, ev) => out.push(ev),
        }
    }
    out
}

fn thinking(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ThinkingDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn usages(events: &[StreamEvent]) -> Vec<Usage> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Usage { usage } => Some(*usage),
            _ => None,
        })
        .collect()
}

fn last_error(events: &[StreamEvent]) -> LlmError {
    match events.last() {
        Some(StreamEvent::Error { error }) => error.clone(),
        other => panic!("expected a final error, got {other:?} in {events:?}"),
    }
}

fn stop(reason: StopReason) -> StreamEvent {
    StreamEvent::Stop { reason }
}
fn th(t: &str) -> StreamEvent {
    StreamEvent::ThinkingDelta { text: t.into() }
}
fn tx(t: &str) -> StreamEvent {
    StreamEvent::TextDelta { text: t.into() }
}
fn sig(s: &str) -> StreamEvent {
    StreamEvent::ThinkingSignature {
        signature: s.into(),
    }
}
fn usage(u: Usage) -> StreamEvent {
    StreamEvent::Usage { usage: u }
}

fn thinking_fixture_events() -> Vec<StreamEvent> {
    vec![
        th("The user asks for 17 × 23. 17 × 20 = 340, 17 × 3 = 51, so 391 — «ça va» 漢字."),
        sig("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"),
        tx("17 × 23 = **391**."),
        usage(Usage {
            input_tokens: 25,
            output_tokens: 118,
            thinking_tokens: Some(80),
            cache_read_tokens: Some(10),
            cache_creation_tokens: Some(0),
        }),
        stop(StopReason::EndTurn),
    ]
}

// ---------------------------------------------------------------- Anthropic shapes

#[tokio::test]
async fn anthropic_thinking_signature_text_and_request_shape() {
    for by in [ChunkBy::Frames, ChunkBy::Bytes(7), ChunkBy::Whole] {
        let body = fixture("anthropic_thinking.sse");
        let server = ScriptedServer::start(Script::new(vec![Step::sse(&body).rechunk(by)])).await;
        let p = anthropic(&server);
        let events = call(&p).await;
        assert_eq!(
            merged(&events),
            thinking_fixture_events(),
            "chunking {by:?}"
        );
        assert_eq!(usages(&events).len(), 1, "usage is reported once");

        let reqs = server.requests();
        assert_eq!(reqs.len(), 1);
        let r = &reqs[0];
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some(KEY1));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.json["stream"], json!(true));
        assert_eq!(r.json["model"], json!("test-model"));
        assert_eq!(r.json["max_tokens"], json!(4096));
        assert_eq!(
            r.json["thinking"],
            json!({"type": "enabled", "budget_tokens": 1024})
        );
        assert_eq!(
            r.json["messages"],
            json!([{"role": "user", "content": "What is 17 × 23?"}])
        );
        assert!(r.json.get("output_config").is_none());
    }
}

#[tokio::test]
async fn anthropic_adaptive_thinking_sends_effort_and_tools() {
    let server = ScriptedServer::start(Script::new(vec![Step::fixture(
        fixtures().join("anthropic_tool_use.sse"),
    )]))
    .await;
    let mut req = request();
    req.thinking = ThinkingMode::Adaptive;
    req.effort = Some(glassbox::engines::llm::Effort::Low);
    req.system = Some("Be terse.".into());
    req.tools = vec![ToolSpec {
        name: "record_verdict".into(),
        description: "Record a verdict".into(),
        input_schema: json!({"type": "object", "properties": {"step": {"type": "integer"}}}),
    }];
    req.tool_choice = Some("record_verdict".into());
    let events = run(&anthropic(&server), req, CallCtx::default()).await;
    assert_eq!(
        merged(&events),
        vec![
            th("I should call the verdict tool."),
            sig("sig-tool"),
            StreamEvent::ToolUse {
                id: "toolu_01A09q90qw90lq917835lq9".into(),
                name: "record_verdict".into(),
                input: json!({"step": 3, "verdict": "wrong", "reason": "sign error — 3−5 ≠ 2"}),
            },
            usage(Usage {
                input_tokens: 310,
                output_tokens: 89,
                ..Usage::default()
            }),
            stop(StopReason::ToolUse),
        ]
    );
    let body = &server.requests()[0].json;
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(body["output_config"], json!({"effort": "low"}));
    assert_eq!(body["system"], json!("Be terse."));
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "record_verdict"})
    );
    assert_eq!(body["tools"][0]["name"], json!("record_verdict"));
    assert_eq!(
        body["tools"][0]["input_schema"]["properties"]["step"]["type"],
        json!("integer")
    );
}

#[tokio::test]
async fn anthropic_redacted_thinking() {
    let server = ScriptedServer::start(Script::new(vec![Step::fixture(
        fixtures().join("anthropic_redacted.sse"),
    )]))
    .await;
    let events = call(&anthropic(&server)).await;
    assert_eq!(
        merged(&events),
        vec![
            StreamEvent::RedactedThinking {
                data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj2pLmN0ZmRG"
                    .into()
            },
            th("Visible part of the reasoning."),
            sig("sig-two"),
            tx("Done."),
            usage(Usage { input_tokens: 40, output_tokens: 57, ..Usage::default() }),
            stop(StopReason::EndTurn),
        ]
    );
}

#[tokio::test]
async fn anthropic_interleaved_thinking_keeps_block_order() {
    let server = ScriptedServer::start(Script::new(vec![Step::fixture(
        fixtures().join("anthropic_interleaved.sse"),
    )]))
    .await;
    let events = call(&anthropic(&server)).await;
    assert_eq!(
        merged(&events),
        vec![
            th("First, look it up."),
            sig("s1"),
            StreamEvent::ToolUse {
                id: "toolu_1".into(),
                name: "lookup".into(),
                input: json!({"q": "x"})
            },
            th("Now answer."),
            sig("s2"),
            tx("It is x."),
            usage(Usage {
                input_tokens: 500,
                output_tokens: 77,
                thinking_tokens: Some(40),
                ..Usage::default()
            }),
            stop(StopReason::EndTurn),
        ]
    );
}

fn compaction_fixture_events() -> Vec<StreamEvent> {
    vec![
        StreamEvent::Compaction {
            summary: "<summary>The user is building a web scraper in Python — «requests» first, then JavaScript pages; next step: rate limiting.</summary>".into(),
            encrypted_content: None,
        },
        tx("Rate limiting next: use a token bucket."),
        usage(Usage {
            input_tokens: 23000,
            output_tokens: 1000,
            ..Usage::default()
        }),
        stop(StopReason::EndTurn),
    ]
}

#[tokio::test]
async fn anthropic_compaction_block_is_one_event_however_chunked() {
    let body = fixture("anthropic_compaction.sse");
    for by in [
        ChunkBy::Frames,
        ChunkBy::Bytes(1),
        ChunkBy::Bytes(7),
        ChunkBy::Whole,
    ] {
        let server = ScriptedServer::start(Script::new(vec![Step::sse(&body).rechunk(by)])).await;
        let p = AnthropicProvider::with_compaction(settings(server.url(), &[KEY1]), true).unwrap();
        let events = call(&p).await;
        // The unknown `future_block` in between is skipped without a trace.
        assert_eq!(
            merged(&events),
            compaction_fixture_events(),
            "chunking {by:?}"
        );
        let r = &server.requests()[0];
        assert_eq!(r.header("anthropic-beta"), Some("compact-2026-01-12"));
        assert_eq!(
            r.json["context_management"],
            json!({"edits": [{"type": "compact_20260112"}]})
        );
    }
    // The decoder that replays recorded bytes reads them the same way, byte by byte too.
    let mut decoder = wire_decoder("anthropic", false).unwrap();
    let mut replayed = Vec::new();
    for byte in body.chunks(1) {
        replayed.extend(decoder.feed(byte));
    }
    replayed.extend(decoder.finish());
    assert_eq!(merged(&replayed), compaction_fixture_events());
    // Without the switch the request does not opt in, and the block is still understood.
    let server = ScriptedServer::start(Script::new(vec![Step::sse(&body)])).await;
    let events = call(&anthropic(&server)).await;
    assert_eq!(merged(&events), compaction_fixture_events());
    let r = &server.requests()[0];
    assert_eq!(r.header("anthropic-beta"), None);
    assert!(r.json.get("context_management").is_none());
}

#[tokio::test]
async fn anthropic_compaction_beta_joins_a_configured_beta_header() {
    let server = ScriptedServer::start(Script::new(vec![Step::fixture(
        fixtures().join("anthropic_compaction.sse"),
    )]))
    .await;
    let mut s = settings(server.url(), &[KEY1]);
    s.extra_headers = vec![("anthropic-beta".into(), "other-2025-01-01".into())];
    let p = AnthropicProvider::with_compaction(s, true).unwrap();
    call(&p).await;
    assert_eq!(
        server.requests()[0].header("anthropic-beta"),
        Some("other-2025-01-01,compact-2026-01-12")
    );
}

#[tokio::test]
async fn anthropic_data_only_crlf_padded_stream() {
    let body = fixture("anthropic_data_only.sse");
    assert!(body.windows(2).any(|w| w == b"\r\n"), "fixture uses CRLF");
    let server = ScriptedServer::start(Script::new(vec![
        Step::sse(&body).rechunk(ChunkBy::Bytes(5)),
    ]))
    .await;
    let events = call(&anthropic(&server)).await;
    assert_eq!(
        merged(&events),
        vec![
            tx("Hello, world"),
            usage(Usage {
                input_tokens: 9,
                output_tokens: 4,
                ..Usage::default()
            }),
            stop(StopReason::MaxTokens)
        ]
    );
}

#[tokio::test]
async fn anthropic_whole_json_body_despite_stream_flag() {
    let server = ScriptedServer::start(Script::new(vec![Step::fixture(
        fixtures().join("anthropic_message.json"),
    )]))
    .await;
    let events = call(&anthropic(&server)).await;
    assert_eq!(
        events,
        vec![
            th("Short thought."),
            sig("sig-ns"),
            tx("Answer without streaming."),
            usage(Usage {
                input_tokens: 12,
                output_tokens: 34,
                ..Usage::default()
            }),
            stop(StopReason::EndTurn),
        ]
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn empty_stream_falls_back_to_a_non_streaming_call() {
    let server = ScriptedServer::start(Script::new(vec![
        Step::status(200)
            .header("content-type", "text/event-stream")
            .chunk(": keep-alive\n\n"),
        Step::fixture(fixtures().join("anthropic_message.json")),
    ]))
    .await;
    let events = call(&anthropic(&server)).await;
    assert_eq!(text(&events), "Answer without streaming.");
    assert_eq!(events.last(), Some(&stop(StopReason::EndTurn)));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].json["stream"], json!(true));
    assert_eq!(reqs[1].json["stream"], json!(false));
}

// ---------------------------------------------------------------- retries and keys

#[tokio::test]
async fn rate_limited_with_retry_after_then_success() {
    let server = ScriptedServer::start(Script::new(vec![
        Step::json(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Slow down"}}"#,
        )
        .header("retry-after", "1"),
        Step::fixture(fixtures().join("anthropic_thinking.sse")),
    ]))
    .await;
    let mut s = settings(server.url(), &[KEY1]);
    s.backoff_max = Duration::from_secs(5);
    let p = AnthropicProvider::new(s).unwrap();
    let started = Instant::now();
    let events = call(&p).await;
    let took = started.elapsed();
    assert_eq!(merged(&events), thinking_fixture_events());
    assert!(
        took >= Duration::from_millis(950),
        "Retry-After: 1 was not honoured ({took:?})"
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn retry_after_is_capped_at_backoff_max() {
    let server = ScriptedServer::start(Script::new(vec![
        Step::json(429, r#"{"error":{"message":"later"}}"#).header("retry-after", "30"),
        Step::fixture(fixtures().join("anthropic_thinking.sse")),
    ]))
    .await;
    let started = Instant::now();
    let events = call(&anthropic(&server)).await;
    assert_eq!(merged(&events), thinking_fixture_events());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn server_error_then_success() {
    for status in [500u16, 502, 503, 529] {
        let server = ScriptedServer::start(Script::new(vec![
            Step::json(
                status,
                r#"{"type":"error","error":{"type":"api_error","message":"Internal"}}"#,
            ),
            Step::fixture(fixtures().join("anthropic_thinking.sse")),
        ]))
        .await;
        let events = call(&anthropic(&server)).await;
        assert_eq!(
            merged(&events),
            thinking_fixture_events(),
            "status {status}"
        );
        assert_eq!(server.requests().len(), 2, "status {status}");
    }
}

#[tokio::test]
async fn overloaded_forever_gives_up_after_max_retries() {
    let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = ScriptedServer::start(Script::forever(Step::json(529, body))).await;
    let events = call(&anthropic(&server)).await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        last_error(&events),
        LlmError::Overloaded {
            provider: "anthropic".into(),
            message: "Overloaded".into()
        }
    );
    assert_eq!(server.requests().len(), 4, "1 attempt + max_retries 3");
}

#[tokio::test]
async fn rate_limited_forever_reports_attempts() {
    let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Too many"}}"#;
    let server = ScriptedServer::start(Script::forever(Step::json(429, body))).await;
    let events = call(&anthropic(&server)).await;
    match last_error(&events) {
        LlmError::RateLimited {
            attempts, message, ..
        } => {
            assert_eq!(attempts, 4);
            assert_eq!(message, "Too many");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn in_stream_overloaded_before_content_is_retried_invisibly() {
    let (raw_tx, mut raw_rx) = tokio::sync::mpsc::unbounded_channel::<RawChunk>();
    let server = ScriptedServer::start(Script::new(vec![
        Step::fixture(fixtures().join("anthropic_overloaded.sse")),
        Step::fixture(fixtures().join("anthropic_thinking.sse")),
    ]))
    .await;
    let ctx = CallCtx {
        raw: Some(raw_tx),
        ..CallCtx::default()
    };
    let events = run(&anthropic(&server), request(), ctx).await;
    assert_eq!(merged(&events), thinking_fixture_events());
    assert_eq!(server.requests().len(), 2);
    let mut raw = Vec::new();
    while let Ok(c) = raw_rx.try_recv() {
        raw.extend_from_slice(&c.bytes);
    }
    assert_eq!(
        raw,
        fixture("anthropic_thinking.sse"),
        "the retried attempt leaves no raw bytes"
    );
}

#[tokio::test]
async fn in_stream_overloaded_after_content_is_an_error_and_keeps_text() {
    let server = ScriptedServer::start(Script::forever(Step::fixture(
        fixtures().join("anthropic_overloaded_midway.sse"),
    )))
    .await;
    let events = call(&anthropic(&server)).await;
    assert_eq!(events[0], tx("Partial answ"));
    assert!(events.contains(&usage(Usage {
        input_tokens: 25,
        output_tokens: 1,
        ..Usage::default()
    })));
    assert_eq!(
        last_error(&events),
        LlmError::Overloaded {
            provider: "anthropic".into(),
            message: "Overloaded".into()
        }
    );
    assert_eq!(
        server.requests().len(),
        1,
        "no retry once content was delivered"
    );
}

#[tokio::test]
async fn client_errors_are_not_retried_and_read_clearly() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be at least 1"}}"#;
    let server = ScriptedServer::start(Script::forever(Step::json(400, body))).await;
    let events = call(&anthropic(&server)).await;
    let err = last_error(&events);
    assert_eq!(
        err,
        LlmError::Http {
            provider: "anthropic".into(),
            status: 400,
            message: "max_tokens: must be at least 1".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "anthropic: HTTP 400: max_tokens: must be at least 1"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn rate_limited_key_rotates_to_the_next_key_immediately() {
    let server = ScriptedServer::start(Script::new(vec![
        Step::json(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"limit"}}"#,
        )
        .header("retry-after", "5"),
        Step::fixture(fixtures().join("anthropic_thinking.sse")),
        Step::fixture(fixtures().join("anthropic_thinking.sse")),
    ]))
    .await;
    let mut s = settings(server.url(), &[KEY1, KEY2]);
    s.backoff_max = Duration::from_secs(10);
    let p = AnthropicProvider::new(s).unwrap();
    let started = Instant::now();
    let events = call(&p).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the next key must be used without waiting"
    );
    assert_eq!(merged(&events), thinking_fixture_events());
    // The next call avoids the cooling key even though rotation would pick it.
    let events = call(&p.clone()).await;
    assert_eq!(merged(&events), thinking_fixture_events());
    let keys: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.header("x-api-key").unwrap().to_string())
        .collect();
    assert_eq!(keys, vec![KEY1, KEY2, KEY2]);
}

#[tokio::test]
async fn keys_never_appear_in_errors_or_debug_output() {
    let echo = format!(
        r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key: {KEY1}"}}}}"#
    );
    let server = ScriptedServer::start(Script::forever(Step::json(401, echo))).await;
    let p = anthropic(&server);
    assert!(!format!("{p:?}").contains("SECRET"), "{p:?}");
    let events = call(&p).await;
    let err = last_error(&events);
    assert!(matches!(err, LlmError::Http { status: 401, .. }), "{err:?}");
    assert!(err.to_string().contains("[redacted]"), "{err}");

    // A server that echoes the key in the stream body.
    let body = format!(
        "event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"api_error\",\"message\":\"bad key {KEY1}\"}}}}\n\n"
    );
    let server = ScriptedServer::start(Script::forever(Step::sse(body))).await;
    let events = call(&anthropic(&server)).await;
    assert!(matches!(last_error(&events), LlmError::Api { .. }));
    assert_eq!(
        server.requests().len(),
        4,
        "an in-stream api_error before content is retried"
    );

    // Garbage that contains the key.
    let server = ScriptedServer::start(Script::forever(Step::sse(format!("{KEY1}\n\n")))).await;
    let events = call(&anthropic(&server)).await;
    assert!(matches!(last_error(&events), LlmError::Malformed { .. }));

    let no_key = AnthropicProvider::new(HttpSettings::default()).unwrap_err();
    assert!(no_key.to_string().contains("ANTHROPIC_API_KEY"), "{no_key}");
    let bad =
        AnthropicProvider::new(settings("http://x".into(), &["sk-SECRET\u{7}bell"])).unwrap_err();
    assert!(!bad.to_string().contains("SECRET"), "{bad}");
}

#[tokio::test]
async fn connection_refused_is_a_connect_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut s = settings(format!("http://127.0.0.1:{port}"), &[KEY1]);
    s.max_retries = 1;
    let p = AnthropicProvider::new(s).unwrap();
    let events = call(&p).await;
    match last_error(&events) {
        LlmError::Connect { url, .. } => {
            assert_eq!(url, format!("http://127.0.0.1:{port}/v1/messages"))
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------- faults mid-stream

#[tokio::test]
async fn cut_mid_event_keeps_partial_output_then_truncated() {
    let body = fixture("anthropic_thinking.sse");
    let at = String::from_utf8_lossy(&body).find("**391**").unwrap();
    let step = Step::sse(&body)
        .rechunk(ChunkBy::Bytes(100))
        .truncate(at)
        .end(End::Cut);
    let server = ScriptedServer::start(Script::forever(step)).await;
    let events = call(&anthropic(&server)).await;
    let m = merged(&events);
    assert_eq!(
        thinking(&m),
        "The user asks for 17 × 23. 17 × 20 = 340, 17 × 3 = 51, so 391 — «ça va» 漢字."
    );
    assert_eq!(text(&m), "17 × 23 = ");
    assert!(usages(&m).len() == 1, "usage seen so far is kept");
    assert!(
        matches!(last_error(&events), LlmError::Truncated { .. }),
        "{events:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn cut_before_any_content_is_retried() {
    let body = fixture("anthropic_thinking.sse");
    let at = String::from_utf8_lossy(&body)
        .find("event: content_block_delta")
        .unwrap();
    let server = ScriptedServer::start(Script::new(vec![
        Step::sse(&body).truncate(at).end(End::Cut),
        Step::sse(&body),
    ]))
    .await;
    let events = call(&anthropic(&server)).await;
    assert_eq!(merged(&events), thinking_fixture_events());
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn stalled_stream_ends_with_stalled_error() {
    let body = fixture("openai_reasoning_content.sse");
    let at = String::from_utf8_lossy(&body).find("The answer").unwrap();
    let server = ScriptedServer::start(Script::forever(
        Step::sse(&body).truncate(at).end(End::Stall),
    ))
    .await;
    let mut s = settings(format!("{}/v1", server.url()), &[KEY1]);
    s.stall_timeout = Duration::from_millis(300);
    let p = OpenAiProvider::new(s).unwrap();
    let started = Instant::now();
    let events = call(&p).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(thinking(&events), "We need 2+2. That is 4.");
    assert_eq!(
        last_error(&events),
        LlmError::Stalled {
            provider: "openai".into(),
            secs: 1
        }
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn garbage_bytes_give_a_clear_error_for_every_provider() {
    let garbage = fixture("garbage.bin");
    let server = ScriptedServer::start(Script::forever(
        Step::status(200)
            .header("content-type", "text/event-stream")
            .split(&garbage, ChunkBy::Bytes(33)),
    ))
    .await;
    let a = call(&anthropic(&server)).await;
    let o = call(&openai(&server)).await;
    let l = call(&ollama(&server)).await;
    for events in [a, o, l] {
        assert_eq!(events.len(), 1, "{events:?}");
        let err = last_error(&events);
        assert!(matches!(err, LlmError::Malformed { .. }), "{err:?}");
        let shown = err.to_string();
        assert!(
            !shown.contains('\n') && shown.len() < 400,
            "one clear line: {shown}"
        );
    }
}

#[tokio::test]
async fn raw_chunks_concatenate_to_the_exact_body() {
    for (name, by) in [
        ("anthropic_thinking.sse", ChunkBy::Bytes(13)),
        ("openrouter_reasoning_details.sse", ChunkBy::Frames),
        ("ollama_thinking.ndjson", ChunkBy::Lines),
    ] {
        let body = fixture(name);
        let step = Step::status(200)
            .split(&body, by)
            .delay_each(Duration::from_millis(2));
        let server = ScriptedServer::start(Script::forever(step)).await;
        let (raw_tx, mut raw_rx) = tokio::sync::mpsc::unbounded_channel::<RawChunk>();
        let ctx = CallCtx {
            raw: Some(raw_tx),
            ..CallCtx::default()
        };
        let p: Box<dyn Provider> = if name.starts_with("anthropic") {
            Box::new(anthropic(&server))
        } else if name.starts_with("ollama") {
            Box::new(ollama(&server))
        } else {
            Box::new(openai(&server))
        };
        let events = run(p.as_ref(), request(), ctx).await;
        assert!(
            matches!(events.last(), Some(StreamEvent::Stop { .. })),
            "{name}: {events:?}"
        );
        drop(p);
        let mut raw = Vec::new();
        let mut last = Duration::ZERO;
        let mut count = 0;
        while let Ok(c) = raw_rx.try_recv() {
            assert!(c.offset >= last, "offsets never go back");
            last = c.offset;
            raw.extend_from_slice(&c.bytes);
            count += 1;
        }
        assert_eq!(raw, body, "{name}");
        assert!(count > 1, "{name}: several chunks recorded");
        // Replaying the recording through the same decoder gives the same events.
        let provider = name
            .split('_')
            .next()
            .unwrap()
            .replace("openrouter", "openai");
        let mut decoder = wire_decoder(&provider, false).unwrap();
        let mut replayed = Vec::new();
        for piece in raw.chunks(17) {
            replayed.extend(decoder.feed(piece));
        }
        replayed.extend(decoder.finish());
        assert_eq!(merged(&replayed), merged(&events), "{name}: replay");
    }
}

#[tokio::test]
async fn cancellation_ends_with_stop_cancelled() {
    let body = fixture("anthropic_thinking.sse");
    let at = String::from_utf8_lossy(&body)
        .find("\"text_delta\"")
        .unwrap();
    let server = ScriptedServer::start(Script::forever(
        Step::sse(&body).truncate(at).end(End::Stall),
    ))
    .await;
    let ctx = CallCtx::default();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let events = run(&anthropic(&server), request(), ctx).await;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(thinking(&events).starts_with("The user asks"));
    assert_eq!(events.last(), Some(&stop(StopReason::Cancelled)));

    // Cancelled while waiting to retry.
    let server = ScriptedServer::start(Script::forever(
        Step::json(503, "{}").header("retry-after", "10"),
    ))
    .await;
    let mut s = settings(server.url(), &[KEY1]);
    s.backoff_max = Duration::from_secs(10);
    let ctx = CallCtx::default();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let events = run(&AnthropicProvider::new(s).unwrap(), request(), ctx).await;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(events, vec![stop(StopReason::Cancelled)]);
}

#[tokio::test]
async fn dropping_the_stream_aborts_the_call() {
    let body = fixture("anthropic_thinking.sse");
    let at = String::from_utf8_lossy(&body).find("340").unwrap();
    let server = ScriptedServer::start(Script::forever(
        Step::sse(&body).truncate(at).end(End::Stall),
    ))
    .await;
    let p = anthropic(&server);
    let mut stream = p.stream(request(), CallCtx::default());
    let first = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .unwrap();
    assert!(
        matches!(first, Some(StreamEvent::ThinkingDelta { .. })),
        "{first:?}"
    );
    drop(stream);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn missing_model_is_a_config_error() {
    let server = ScriptedServer::start(Script::forever(Step::fixture(
        fixtures().join("anthropic_thinking.sse"),
    )))
    .await;
    let mut req = request();
    req.model.clear();
    let events = run(&anthropic(&server), req.clone(), CallCtx::default()).await;
    assert!(matches!(last_error(&events), LlmError::Config { .. }));
    assert!(server.requests().is_empty());
    let mut s = settings(server.url(), &[KEY1]);
    s.model = Some("default-model".into());
    let events = run(&AnthropicProvider::new(s).unwrap(), req, CallCtx::default()).await;
    assert_eq!(merged(&events), thinking_fixture_events());
    assert_eq!(server.requests()[0].json["model"], json!("default-model"));
}

// ---------------------------------------------------------------- OpenAI-compatible shapes

#[tokio::test]
async fn openai_reasoning_content_usage_and_request_shape() {
    let server = ScriptedServer::start(Script::new(vec![
        Step::fixture(fixtures().join("openai_reasoning_content.sse")).rechunk(ChunkBy::Bytes(11)),
    ]))
    .await;
    let mut req = request();
    req.json_mode = true;
    req.temperature = Some(0.7);
    req.top_p = Some(0.95);
    let events = run(&openai(&server), req, CallCtx::default()).await;
    assert_eq!(
        merged(&events),
        vec![
            th("We need 2+2. That is 4."),
            tx("The answer is 4."),
            usage(Usage {
                input_tokens: 14,
                output_tokens: 30,
                thinking_tokens: Some(22),
                cache_read_tokens: Some(8),
                ..Usage::default()
            }),
            stop(StopReason::EndTurn),
        ]
    );
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY1}").as_str())
    );
    assert_eq!(r.json["stream"], json!(true));
    assert_eq!(r.json["stream_options"], json!({"include_usage": true}));
    assert_eq!(r.json["response_format"], json!({"type": "json_object"}));
    // As written, not the f32 widened (0.699999988079071).
    assert_eq!(r.json["temperature"], json!(0.7));
    assert_eq!(r.json["top_p"], json!(0.95));
    assert_eq!(r.json["max_tokens"], json!(4096));
}

#[tokio::test]
async fn openrouter_reasoning_details_comments_and_late_usage() {
    let server = ScriptedServer::start(Script::new(vec![Step::fixture(
        fixtures().join("openrouter_reasoning_details.sse"),
    )]))
    .await;
    let events = call(&openai(&server)).await;
    assert_eq!(
        merged(&events),
        vec![
            th("Let me check the facts."),
            sig("or-sig-1"),
            StreamEvent::RedactedThinking {
                data: "ENCRYPTED==".into()
            },
            tx("Paris."),
            usage(Usage {
                input_tokens: 20,
                output_tokens: 50,
                thinking_tokens: Some(35),
                cache_read_tokens: Some(0),
                ..Usage::default()
            }),
            stop(StopReason::EndTurn),
        ]
    );
}

#[tokio::test]
async fn groq_reasoning_field_and_x_groq_usage() {
    let server = ScriptedServer::start(Script::new(vec![Step::fixture(
        fixtures().join("groq_reasoning.sse"),
    )]))
    .await;
    let events = call(&openai(&server)).await;
    assert_eq!(
        merged(&events),
        vec![
            th("Thinking in the reasoning field."),
            tx("Answer."),
            usage(Usage {
                input_tokens: 9,
                output_tokens: 12,
                ..Usage::default()
            }),
            stop(StopReason::EndTurn),
        ]
    );
}

#[tokio::test]
async fn magistral_content_parts() {
    let server = ScriptedServer::start(Script::new(vec![Step::fixture(
        fixtures().join("magistral_parts.sse"),
    )]))
    .await;
    let events = call(&openai(&server)).await;
    assert_eq!(
        merged(&events),
        vec![
            th("Okay, the user wants a haiku."),
            tx("Autumn moonlight— a worm digs silently"),
            usage(Usage {
                input_tokens: 10,
                output_tokens: 40,
                ..Usage::default()
            }),
            stop(StopReason::EndTurn),
        ]
    );
}

#[tokio::test]
async fn inline_think_tags_split_and_escaped() {
    for by in [ChunkBy::Frames, ChunkBy::Bytes(3)] {
        let server = ScriptedServer::start(Script::new(vec![
            Step::fixture(fixtures().join("openai_think_tags.sse")).rechunk(by),
        ]))
        .await;
        let events = call(&openai(&server)).await;
        assert_eq!(
            merged(&events),
            vec![
                th("Okay, 3 apples minus 1 is 2.\n"),
                tx("You have 2 apples."),
                usage(Usage {
                    input_tokens: 11,
                    output_tokens: 25,
                    ..Usage::default()
                }),
                stop(StopReason::EndTurn),
            ],
            "{by:?}"
        );
    }
}

#[tokio::test]
async fn inline_think_with_missing_opening_tag() {
    let step = Step::fixture(fixtures().join("openai_think_missing_open.sse"));
    let server = ScriptedServer::start(Script::forever(step)).await;
    // Default: no way to know in advance, so the text streams as answer; the stray tag is dropped.
    let events = call(&openai(&server)).await;
    assert_eq!(
        merged(&events),
        vec![
            tx("The template opened the tag, so this is reasoning.\nFinal answer."),
            stop(StopReason::EndTurn)
        ]
    );
    // With think_open the text before </think> is thinking.
    let mut s = settings(format!("{}/v1", server.url()), &[KEY1]);
    s.think_open = true;
    let events = call(&OpenAiProvider::new(s).unwrap()).await;
    assert_eq!(
        merged(&events),
        vec![
            th("The template opened the tag, so this is reasoning.\n"),
            tx("Final answer."),
            stop(StopReason::EndTurn)
        ]
    );
}

#[tokio::test]
async fn openai_missing_done_is_truncated_but_keeps_text() {
    let server = ScriptedServer::start(Script::forever(Step::fixture(
        fixtures().join("openai_missing_done.sse"),
    )))
    .await;
    let events = call(&openai(&server)).await;
    assert_eq!(text(&events), "This answer is cut short");
    assert!(
        matches!(last_error(&events), LlmError::Truncated { .. }),
        "{events:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn openai_tool_calls_are_assembled() {
    let server = ScriptedServer::start(Script::new(vec![Step::fixture(
        fixtures().join("openai_tool_calls.sse"),
    )]))
    .await;
    let mut req = request();
    req.tools = vec![ToolSpec {
        name: "record_verdict".into(),
        description: "d".into(),
        input_schema: json!({"type": "object"}),
    }];
    req.tool_choice = Some("record_verdict".into());
    let events = run(&openai(&server), req, CallCtx::default()).await;
    assert_eq!(
        events,
        vec![
            StreamEvent::ToolUse {
                id: "call_abc".into(),
                name: "record_verdict".into(),
                input: json!({"step": 2, "verdict": "ok"})
            },
            StreamEvent::ToolUse {
                id: "call_def".into(),
                name: "note".into(),
                input: json!({})
            },
            usage(Usage {
                input_tokens: 100,
                output_tokens: 20,
                ..Usage::default()
            }),
            stop(StopReason::ToolUse),
        ]
    );
    let body = &server.requests()[0].json;
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {"name": "record_verdict", "description": "d", "parameters": {"type": "object"}}})
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "record_verdict"}})
    );
}

#[tokio::test]
async fn one_megabyte_delta() {
    let body = fixture("openai_1mb_delta.sse");
    let first_line = body.split(|&b| b == b'\n').next().unwrap();
    let chunk: serde_json::Value = serde_json::from_slice(&first_line[6..]).unwrap();
    let expected = chunk["choices"][0]["delta"]["reasoning_content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(expected.len() >= 1 << 20);
    let server = ScriptedServer::start(Script::forever(Step::sse(&body))).await;
    let events = call(&openai(&server)).await;
    assert_eq!(thinking(&events), expected);
    assert_eq!(text(&events), "ok");
    assert_eq!(events.last(), Some(&stop(StopReason::EndTurn)));
}

#[tokio::test]
async fn openai_in_stream_error_and_nonstream_fallback() {
    let err = "data: {\"error\":{\"code\":400,\"message\":\"context length exceeded\"}}\n\n";
    let server = ScriptedServer::start(Script::forever(Step::sse(err))).await;
    let events = call(&openai(&server)).await;
    assert_eq!(
        last_error(&events),
        LlmError::Api {
            provider: "openai".into(),
            kind: "400".into(),
            message: "context length exceeded".into()
        }
    );

    let server = ScriptedServer::start(Script::new(vec![
        Step::status(200).header("content-type", "text/event-stream"),
        Step::fixture(fixtures().join("openai_nonstream.json")),
    ]))
    .await;
    let events = call(&openai(&server)).await;
    assert_eq!(
        events,
        vec![
            th("Non-streamed reasoning."),
            tx("Non-streamed answer."),
            usage(Usage {
                input_tokens: 5,
                output_tokens: 9,
                ..Usage::default()
            }),
            stop(StopReason::EndTurn),
        ]
    );
    let reqs = server.requests();
    assert_eq!(reqs[1].json["stream"], json!(false));
    assert!(reqs[1].json.get("stream_options").is_none());
}

#[tokio::test]
async fn openai_without_key_sends_no_authorization() {
    let server = ScriptedServer::start(Script::new(vec![Step::fixture(
        fixtures().join("groq_reasoning.sse"),
    )]))
    .await;
    let p = OpenAiProvider::new(settings(format!("{}/v1", server.url()), &[])).unwrap();
    let events = call(&p).await;
    assert_eq!(events.last(), Some(&stop(StopReason::EndTurn)));
    assert_eq!(server.requests()[0].header("authorization"), None);
    assert!(
        OpenAiProvider::new(HttpSettings::default()).is_err(),
        "api.openai.com needs a key"
    );
    let official = HttpSettings::with_base_url("https://api.openai.com/v1");
    assert!(OpenAiProvider::new(official).is_err());
}

// ---------------------------------------------------------------- Ollama

#[tokio::test]
async fn ollama_thinking_stream() {
    let server = ScriptedServer::start(Script::new(vec![
        Step::fixture(fixtures().join("ollama_thinking.ndjson")).rechunk(ChunkBy::Bytes(9)),
    ]))
    .await;
    let events = call(&ollama(&server)).await;
    assert_eq!(
        merged(&events),
        vec![
            th("Okay, the user asks about 漢字."),
            tx("Kanji are characters."),
            usage(Usage {
                input_tokens: 26,
                output_tokens: 282,
                ..Usage::default()
            }),
            stop(StopReason::EndTurn),
        ]
    );
    let r = &server.requests()[0];
    assert_eq!(r.path, "/api/chat");
    assert_eq!(r.json["think"], json!(true));
    assert_eq!(r.json["stream"], json!(true));
    assert_eq!(r.json["options"]["num_predict"], json!(4096));
    assert_eq!(r.header("authorization"), None);
}

#[tokio::test]
async fn ollama_cut_and_fallback() {
    let body = fixture("ollama_thinking.ndjson");
    let at = String::from_utf8_lossy(&body)
        .find("\"done\": true")
        .unwrap();
    let server = ScriptedServer::start(Script::forever(
        Step::ndjson(&body).truncate(at).end(End::Cut),
    ))
    .await;
    let events = call(&ollama(&server)).await;
    assert_eq!(text(&events), "Kanji are characters.");
    assert!(matches!(last_error(&events), LlmError::Truncated { .. }));

    let server = ScriptedServer::start(Script::new(vec![
        Step::status(200)
            .header("content-type", "application/x-ndjson")
            .chunk("\n"),
        Step::fixture(fixtures().join("ollama_nonstream.json")),
    ]))
    .await;
    let events = call(&ollama(&server)).await;
    assert_eq!(
        events,
        vec![
            th("Whole thought."),
            tx("Whole answer."),
            usage(Usage {
                input_tokens: 3,
                output_tokens: 4,
                ..Usage::default()
            }),
            stop(StopReason::EndTurn),
        ]
    );
    assert_eq!(server.requests()[1].json["stream"], json!(false));
}

// ---------------------------------------------------------------- scripts from files

#[tokio::test]
async fn scripts_load_from_fixture_files() {
    let server = ScriptedServer::start(Script::load(
        fixtures().join("retry_429_then_thinking.script.json"),
    ))
    .await;
    let events = call(&anthropic(&server)).await;
    assert_eq!(merged(&events), thinking_fixture_events());
    assert_eq!(server.requests().len(), 2);

    let server = ScriptedServer::start(Script::load(
        fixtures().join("openai_cut_midway.script.json"),
    ))
    .await;
    let events = call(&openai(&server)).await;
    assert_eq!(thinking(&events), "We need 2+2.");
    assert!(
        matches!(last_error(&events), LlmError::Truncated { .. }),
        "{events:?}"
    );
}

/// Under a runtime a call starts when its stream is made: the request reaches the server
/// before anything polls the stream (a turn commits its question meanwhile), and the events
/// read afterwards are the whole answer. Dropping a stream that was never polled stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_sends_its_request_before_it_is_polled() {
    let body = fixture("anthropic_thinking.sse");
    let server = ScriptedServer::start(Script::new(vec![
        Step::sse(&body),
        Step::sse(&body).delay_each(Duration::from_secs(30)),
    ]))
    .await;
    let p = anthropic(&server);
    let stream = p.stream(request(), CallCtx::default());
    let t0 = Instant::now();
    while server.requests().is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no request went out"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let events: Vec<StreamEvent> = stream.collect().await;
    let mut decoder = wire_decoder("anthropic", false).unwrap();
    let mut read = decoder.feed(&body);
    read.extend(decoder.finish());
    assert_eq!(merged(&events), merged(&read));
    assert!(
        events.iter().any(|e| matches!(e, StreamEvent::Stop { .. })),
        "{events:?}"
    );
    // A second stream, dropped unpolled, goes out and is cut off: its call ends at once (its
    // raw sink closes), not at the 5 s stall timeout while the server's answer is 30 s away.
    let (raw, mut raw_rx) = tokio::sync::mpsc::unbounded_channel();
    let unpolled = p.stream(
        request(),
        CallCtx {
            raw: Some(raw),
            ..CallCtx::default()
        },
    );
    while server.requests().len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the second request did not go out"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(unpolled);
    let ended = tokio::time::timeout(Duration::from_secs(2), async {
        while raw_rx.recv().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the dropped call went on");
}
