#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use crate::engines::llm::{Compaction, Effort, Message, ToolSpec};
use proptest::prelude::*;

const STREAM: &str = concat!(
    "event: message_start\n",
    "data: {\"type\": \"message_start\", \"message\": {\"id\": \"msg_1\", \"model\": \"m\", \"content\": [], \"usage\": {\"input_tokens\": 12, \"output_tokens\": 1, \"cache_read_input_tokens\": 3}}}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
    "event: ping\ndata: {\"type\": \"ping\"}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me é\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"c2ln\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"tu_1\",\"name\":\"answer\",\"input\":{}}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"x\\\": \"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"42}\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":40}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

fn decode_chunks(chunks: &[&[u8]]) -> Vec<StreamEvent> {
    let mut d = AnthropicDecoder::new();
    let mut out = Vec::new();
    for c in chunks {
        out.extend(d.feed(c));
    }
    out.extend(d.finish());
    out
}

#[test]
fn decodes_thinking_signature_tool_and_usage() {
    let ev = decode_chunks(&[STREAM.as_bytes()]);
    assert_eq!(
        ev,
        vec![
            StreamEvent::ThinkingDelta {
                text: "Let me é".into()
            },
            StreamEvent::ThinkingSignature {
                signature: "c2ln".into()
            },
            StreamEvent::ToolUse {
                id: "tu_1".into(),
                name: "answer".into(),
                input: json!({"x": 42})
            },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: 12,
                    output_tokens: 40,
                    cache_read_tokens: Some(3),
                    ..Usage::default()
                }
            },
            StreamEvent::Stop {
                reason: StopReason::ToolUse
            },
        ]
    );
}

#[test]
fn missing_message_stop_is_truncated_unless_stop_reason_seen() {
    let cut = &STREAM[..STREAM.find("event: message_delta").unwrap()];
    let ev = decode_chunks(&[cut.as_bytes()]);
    assert!(
        matches!(
            ev.last(),
            Some(StreamEvent::Error {
                error: LlmError::Truncated { .. }
            })
        ),
        "{ev:?}"
    );
    let cut = &STREAM[..STREAM.find("event: message_stop").unwrap()];
    let ev = decode_chunks(&[cut.as_bytes()]);
    assert_eq!(
        ev.last(),
        Some(&StreamEvent::Stop {
            reason: StopReason::ToolUse
        })
    );
}

#[test]
fn whole_message_body_is_accepted() {
    let body = json!({"type":"message","content":[
        {"type":"thinking","thinking":"hmm","signature":"sig"},
        {"type":"redacted_thinking","data":"enc"},
        {"type":"text","text":"Hi"},
        {"type":"tool_use","id":"t","name":"f","input":{"a":1}}],
        "stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}});
    let ev = decode_chunks(&[body.to_string().as_bytes()]);
    assert_eq!(
        ev,
        vec![
            StreamEvent::ThinkingDelta { text: "hmm".into() },
            StreamEvent::ThinkingSignature {
                signature: "sig".into()
            },
            StreamEvent::RedactedThinking { data: "enc".into() },
            StreamEvent::TextDelta { text: "Hi".into() },
            StreamEvent::ToolUse {
                id: "t".into(),
                name: "f".into(),
                input: json!({"a":1})
            },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: 1,
                    output_tokens: 2,
                    ..Usage::default()
                }
            },
            StreamEvent::Stop {
                reason: StopReason::EndTurn
            },
        ]
    );
}

#[test]
fn garbage_is_malformed() {
    let ev = decode_chunks(&[b"\x00\x01garbage\xff\nmore junk"]);
    assert!(
        matches!(
            &ev[..],
            [StreamEvent::Error {
                error: LlmError::Malformed { .. }
            }]
        ),
        "{ev:?}"
    );
}

#[test]
fn request_body_shapes() {
    let mut req = ChatRequest::new("claude", vec![Message::user("hi")]);
    req.system = Some("sys".into());
    req.thinking = ThinkingMode::Budget { tokens: 2000 };
    req.max_tokens = 1000;
    req.effort = Some(Effort::High);
    req.tools = vec![ToolSpec {
        name: "f".into(),
        description: "d".into(),
        input_schema: json!({"type":"object"}),
    }];
    req.tool_choice = Some("f".into());
    let b = request_body(&req, true);
    assert_eq!(
        b["thinking"],
        json!({"type":"enabled","budget_tokens":2000})
    );
    assert_eq!(b["max_tokens"], json!(3000));
    assert!(b.get("output_config").is_none());
    assert_eq!(b["tool_choice"], json!({"type":"tool","name":"f"}));
    assert_eq!(b["tools"][0]["input_schema"], json!({"type":"object"}));
    assert_eq!(b["system"], json!("sys"));
    assert_eq!(b["stream"], json!(true));
    req.thinking = ThinkingMode::Adaptive;
    let b = request_body(&req, false);
    assert_eq!(b["thinking"], json!({"type":"adaptive"}));
    assert_eq!(b["output_config"], json!({"effort":"high"}));
    assert_eq!(b["max_tokens"], json!(1000));
    assert_eq!(b["stream"], json!(false));
}

const COMPACTED: &str = concat!(
    "event: message_start\n",
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"compaction\",\"content\":null}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"compaction_delta\",\"content\":\"Earlier: é \"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"compaction_delta\",\"content\":\"they met.\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"mystery_block\",\"x\":1}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"mystery_delta\",\"x\":2}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

#[test]
fn compaction_blocks_become_one_event_and_unknown_blocks_are_skipped() {
    let ev = decode_chunks(&[COMPACTED.as_bytes()]);
    assert_eq!(
        ev,
        vec![
            StreamEvent::Compaction {
                summary: "Earlier: é they met.".into(),
                encrypted_content: None,
            },
            StreamEvent::TextDelta { text: "Hi".into() },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: 9,
                    output_tokens: 3,
                    ..Usage::default()
                }
            },
            StreamEvent::Stop {
                reason: StopReason::EndTurn
            },
        ]
    );
    // Byte by byte (splitting the UTF-8 of "é") changes nothing.
    let bytes: Vec<&[u8]> = COMPACTED.as_bytes().chunks(1).collect();
    assert_eq!(decode_chunks(&bytes), ev);
    // A failed compaction (null content) reports nothing.
    let failed = COMPACTED
        .replace("\"content\":\"Earlier: é \"", "\"content\":null")
        .replace("\"content\":\"they met.\"", "\"content\":null");
    assert_eq!(decode_chunks(&[failed.as_bytes()])[0], ev[1]);
    // In a whole (non-streaming) message the summary sits on the block itself.
    let body = json!({"type":"message","content":[
        {"type":"compaction","content":"S","encrypted_content":"E"},{"type":"text","text":"T"}],
        "stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}});
    let ev = decode_chunks(&[body.to_string().as_bytes()]);
    assert_eq!(
        ev[0],
        StreamEvent::Compaction {
            summary: "S".into(),
            encrypted_content: Some("E".into()),
        }
    );
    assert_eq!(ev[1], StreamEvent::TextDelta { text: "T".into() });
}

#[test]
fn compaction_goes_back_as_a_block_only_when_enabled() {
    let req = ChatRequest::new(
        "claude",
        vec![
            Message::user("q2"),
            Message::assistant("a2").with_compaction(Compaction {
                summary: "sum".into(),
                encrypted_content: Some("opaque".into()),
            }),
            Message::user("q3"),
        ],
    );
    let b = request_body_with(&req, true, true);
    assert_eq!(
        b["context_management"],
        json!({"edits": [{"type": "compact_20260112"}]})
    );
    assert_eq!(
        b["messages"][1]["content"],
        json!([
            {"type":"compaction","content":"sum","encrypted_content":"opaque"},
            {"type":"text","text":"a2"}
        ])
    );
    assert_eq!(b["messages"][2]["content"], json!("q3"));
    let b = request_body(&req, true);
    assert!(b.get("context_management").is_none());
    assert_eq!(
        b["messages"][1]["content"],
        json!("Summary of our conversation so far:\nsum\n\na2")
    );
}

#[test]
fn the_compaction_beta_joins_configured_beta_flags() {
    let mut h = vec![("Anthropic-Beta".to_string(), "x-1".to_string())];
    add_beta(&mut h, COMPACTION_BETA);
    add_beta(&mut h, COMPACTION_BETA);
    assert_eq!(
        h,
        vec![("Anthropic-Beta".into(), "x-1,compact-2026-01-12".into())]
    );
    let mut h = Vec::new();
    add_beta(&mut h, COMPACTION_BETA);
    assert_eq!(h, vec![("anthropic-beta".into(), COMPACTION_BETA.into())]);
}

#[test]
fn tool_calls_and_results_go_back_as_content_blocks() {
    use crate::engines::llm::{ThinkingBlock, ToolCall, ToolResult};
    let req = ChatRequest::new(
        "m",
        vec![
            Message::user("remember the ferry time"),
            Message::tool_calls(
                "Saving it.",
                vec![
                    ThinkingBlock::Thinking {
                        thinking: "store it".into(),
                        signature: "sig-1".into(),
                    },
                    ThinkingBlock::Redacted {
                        data: "opaque".into(),
                    },
                ],
                vec![
                    ToolCall {
                        id: "toolu_1".into(),
                        name: "archival_insert".into(),
                        input: json!({"content": "ferry at 7:40"}),
                    },
                    ToolCall {
                        id: "toolu_2".into(),
                        name: "archival_search".into(),
                        input: json!("{\"query\": "),
                    },
                ],
            ),
            Message::tool_results(vec![
                ToolResult {
                    tool_use_id: "toolu_1".into(),
                    content: "{\"inserted\":[\"ab12cd34\"]}".into(),
                    is_error: false,
                },
                ToolResult {
                    tool_use_id: "toolu_2".into(),
                    content: "archival_search: bad input".into(),
                    is_error: true,
                },
            ]),
        ],
    );
    let b = request_body(&req, true);
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 3, "{b}");
    assert_eq!(
        m[0],
        json!({"role": "user", "content": "remember the ferry time"})
    );
    // Signed reasoning first, as it arrived, then the text, then the calls (input that did
    // not parse goes back as an empty object).
    assert_eq!(
        m[1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "store it", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Saving it."},
            {"type": "tool_use", "id": "toolu_1", "name": "archival_insert",
             "input": {"content": "ferry at 7:40"}},
            {"type": "tool_use", "id": "toolu_2", "name": "archival_search", "input": {}},
        ]})
    );
    assert_eq!(
        m[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"inserted\":[\"ab12cd34\"]}"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "archival_search: bad input",
             "is_error": true},
        ]})
    );
    // Results come ahead of any text of the same turn.
    let mut with_text = Message::tool_results(vec![ToolResult {
        tool_use_id: "toolu_3".into(),
        content: "ok".into(),
        is_error: false,
    }]);
    with_text.content = "thanks".into();
    let b = request_body(&ChatRequest::new("m", vec![with_text]), false);
    assert_eq!(b["messages"][0]["content"][0]["type"], "tool_result");
    assert_eq!(
        b["messages"][0]["content"][1],
        json!({"type": "text", "text": "thanks"})
    );
}

proptest! {
    #[test]
    fn chunking_does_not_change_events(cuts in proptest::collection::vec(any::<usize>(), 0..20)) {
        let bytes = STREAM.as_bytes();
        let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut prev = 0;
        for p in points {
            chunks.push(&bytes[prev..p]);
            prev = p;
        }
        chunks.push(&bytes[prev..]);
        prop_assert_eq!(decode_chunks(&chunks), decode_chunks(&[bytes]));
    }
}

/// What the JSON parser reads from a delta frame: whether it is thinking, and its text.
fn parsed_delta(data: &str) -> Option<(bool, String)> {
    let f = serde_json::from_str::<DeltaFrame>(data).ok()?;
    match (f.kind.as_ref(), f.delta.kind.as_ref()) {
        ("content_block_delta", "thinking_delta") => Some((true, f.delta.thinking?.into_owned())),
        ("content_block_delta", "text_delta") => Some((false, f.delta.text?.into_owned())),
        _ => None,
    }
}

#[test]
fn a_delta_read_by_its_layout_reads_as_the_parser_reads_it() {
    let laid_out = |d: &str| laid_out_delta(d).map(|(t, s)| (t, s.into_owned()));
    for text in [
        "",
        "plain",
        "a \"quote\"",
        "back\\slash",
        "line\nbreak\ttab",
        "é ☃ 𝄞",
        "\u{1}",
    ] {
        for (kind, field) in [("thinking_delta", "thinking"), ("text_delta", "text")] {
            let data = format!(
                r#"{{"type":"content_block_delta","index":12,"delta":{{"type":"{kind}","{field}":{}}}}}"#,
                serde_json::to_string(text).unwrap()
            );
            assert_eq!(laid_out(&data), parsed_delta(&data), "{data}");
            assert_eq!(laid_out(&data).unwrap().1, text);
        }
    }
    // `\u` escapes, a surrogate pair among them, unescaped by the parser.
    let data = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\u00e9\ud834\udd1e\"\\"}}"#;
    assert_eq!(laid_out(data), Some((false, "é𝄞\"\\".into())));
    // Padded with a space after each `:` and `,`, as some streams are.
    let padded = r#"{"type": "content_block_delta", "index": 3, "delta": {"type": "thinking_delta", "thinking": "x\ty"}}"#;
    assert_eq!(laid_out(padded), Some((true, "x\ty".into())));
    assert_eq!(laid_out(padded), parsed_delta(padded));
    // Any other layout is left to the parser (which reads the same text from these).
    for other in [
        "{ \"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}",
        "{\"type\":\n\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}",
        r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"},"index":0}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","extra":1}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}junk"#,
    ] {
        assert_eq!(laid_out_delta(other), None, "{other}");
    }
    // What the parser refuses is refused here too: a raw control character, a cut frame,
    // a bad escape.
    for bad in [
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\u{1}b\"}}",
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\q"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ends\"#,
    ] {
        assert_eq!(laid_out_delta(bad), None, "{bad}");
        assert_eq!(parsed_delta(bad), None, "{bad}");
    }
}

proptest! {
    #[test]
    fn any_text_reads_alike_by_layout_and_by_parser(text in "\\PC*|[\\\\\"\\n\\t\\u{0}-\\u{1f}a-z]{0,40}", thinking in any::<bool>(), index in 0u32..1000) {
        let (kind, field) = if thinking { ("thinking_delta", "thinking") } else { ("text_delta", "text") };
        let data = format!(
            r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"{kind}","{field}":{}}}}}"#,
            serde_json::to_string(&text).unwrap()
        );
        let laid_out = laid_out_delta(&data).map(|(t, s)| (t, s.into_owned()));
        prop_assert_eq!(&laid_out, &parsed_delta(&data));
        prop_assert_eq!(laid_out.map(|(_, s)| s), Some(text));
    }
}
