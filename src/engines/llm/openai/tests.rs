#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;
use crate::engines::llm::{Message, ToolSpec};
use proptest::prelude::*;

fn decode(think_open: bool, chunks: &[&[u8]]) -> Vec<StreamEvent> {
    let mut d = OpenAiDecoder::new(think_open);
    let mut out = Vec::new();
    for c in chunks {
        out.extend(d.feed(c));
    }
    out.extend(d.finish());
    out
}

/// Merges adjacent deltas of the same kind so chunkings compare equal.
fn merged(events: Vec<StreamEvent>) -> Vec<StreamEvent> {
    let mut out: Vec<StreamEvent> = Vec::new();
    for ev in events {
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

fn sse(chunks: &[Value]) -> String {
    let mut s: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    s.push_str("data: [DONE]\n\n");
    s
}

fn think(t: &str) -> StreamEvent {
    StreamEvent::ThinkingDelta { text: t.into() }
}
fn text(t: &str) -> StreamEvent {
    StreamEvent::TextDelta { text: t.into() }
}

#[test]
fn reasoning_and_details_are_not_duplicated() {
    let body = sse(&[
        json!({"choices":[{"index":0,"delta":{"reasoning":"abc","reasoning_details":[{"type":"reasoning.text","text":"abc","format":"x","index":0}]}}]}),
        json!({"choices":[{"index":0,"delta":{"reasoning":null,"reasoning_details":[{"type":"reasoning.encrypted","data":"ENC","index":1}]}}]}),
        json!({"choices":[{"index":0,"delta":{"reasoning_content":"def","reasoning":"def"}}]}),
        json!({"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}),
    ]);
    let ev = decode(false, &[body.as_bytes()]);
    assert_eq!(
        ev,
        vec![
            think("abc"),
            StreamEvent::RedactedThinking { data: "ENC".into() },
            think("def"),
            text("Hi"),
            StreamEvent::Stop {
                reason: StopReason::EndTurn
            }
        ]
    );
}

#[test]
fn tool_call_arguments_are_assembled() {
    let body = sse(&[
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":""}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]}}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        json!({"id":"other","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"completion_tokens_details":{"reasoning_tokens":3}}}),
    ]);
    let ev = decode(false, &[body.as_bytes()]);
    assert_eq!(
        ev,
        vec![
            StreamEvent::ToolUse {
                id: "call_a".into(),
                name: "f".into(),
                input: json!({"q":"x"})
            },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: 5,
                    output_tokens: 7,
                    thinking_tokens: Some(3),
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
fn magistral_content_parts() {
    let body = sse(&[
        json!({"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hmm"}]}]}}]}),
        json!({"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"ok"}]},"finish_reason":"stop"}]}),
    ]);
    assert_eq!(
        decode(false, &[body.as_bytes()]),
        vec![
            think("hmm"),
            text("ok"),
            StreamEvent::Stop {
                reason: StopReason::EndTurn
            }
        ]
    );
}

#[test]
fn missing_done_without_finish_reason_is_truncated_but_keeps_text() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"part\"}}]}\n\n";
    let ev = decode(false, &[body.as_bytes()]);
    assert_eq!(ev[0], text("part"));
    assert!(matches!(
        ev[1],
        StreamEvent::Error {
            error: LlmError::Truncated { .. }
        }
    ));
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"length\"}]}\n\n";
    let ev = decode(false, &[body.as_bytes()]);
    assert_eq!(
        ev,
        vec![
            text("x"),
            StreamEvent::Stop {
                reason: StopReason::MaxTokens
            }
        ]
    );
}

#[test]
fn non_streaming_body() {
    let body = json!({"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"<think>a</think>b","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2}});
    let ev = decode(false, &[body.to_string().as_bytes()]);
    assert_eq!(
        ev,
        vec![
            think("a"),
            text("b"),
            StreamEvent::ToolUse {
                id: "c1".into(),
                name: "f".into(),
                input: json!({})
            },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: 1,
                    output_tokens: 2,
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
fn in_stream_error_object() {
    let body = "data: {\"error\":{\"code\":502,\"message\":\"Provider overloaded\"}}\n\n";
    let ev = decode(false, &[body.as_bytes()]);
    assert!(
        matches!(
            &ev[..],
            [StreamEvent::Error {
                error: LlmError::Overloaded { .. }
            }]
        ),
        "{ev:?}"
    );
}

#[test]
fn a_compaction_summary_travels_as_text() {
    let compacted =
        Message::assistant("the answer").with_compaction(crate::engines::llm::Compaction {
            summary: "we talked about hash maps".into(),
            encrypted_content: None,
        });
    let req = ChatRequest::new("m", vec![compacted, Message::user("and then?")]);
    let body = request_body(&req, true);
    let first = body["messages"][0]["content"].as_str().unwrap();
    assert!(first.contains("we talked about hash maps"), "{first}");
    assert!(first.ends_with("the answer"), "{first}");
    assert_eq!(body["messages"][1]["content"], "and then?");
}

#[test]
fn request_body_shapes() {
    let mut req = ChatRequest::new("m", vec![Message::user("hi"), Message::assistant("yo")]);
    req.system = Some("sys".into());
    req.json_mode = true;
    req.seed = Some(7);
    req.effort = Some(Effort::Max);
    req.tools = vec![ToolSpec {
        name: "f".into(),
        description: "d".into(),
        input_schema: json!({"type":"object"}),
    }];
    req.tool_choice = Some("f".into());
    let b = request_body(&req, true);
    assert_eq!(b["messages"][0], json!({"role":"system","content":"sys"}));
    assert_eq!(b["messages"][2], json!({"role":"assistant","content":"yo"}));
    assert_eq!(b["stream_options"], json!({"include_usage":true}));
    assert_eq!(b["response_format"], json!({"type":"json_object"}));
    assert_eq!(b["reasoning_effort"], json!("high"));
    assert_eq!(b["seed"], json!(7));
    assert_eq!(
        b["tools"][0]["function"]["parameters"],
        json!({"type":"object"})
    );
    assert_eq!(
        b["tool_choice"],
        json!({"type":"function","function":{"name":"f"}})
    );
    assert!(request_body(&req, false).get("stream_options").is_none());
}

/// A conversation where the model called two tools (one with input that did not parse)
/// and got their results, the second an error.
fn tool_round() -> Vec<Message> {
    use crate::engines::llm::{ThinkingBlock, ToolCall, ToolResult};
    vec![
        Message::user("remember the ferry time"),
        Message::tool_calls(
            "",
            vec![ThinkingBlock::Thinking {
                thinking: "store it".into(),
                signature: "sig".into(),
            }],
            vec![
                ToolCall {
                    id: "call_1".into(),
                    name: "archival_insert".into(),
                    input: json!({"content": "ferry at 7:40"}),
                },
                ToolCall {
                    id: "call_2".into(),
                    name: "archival_search".into(),
                    input: json!("{\"query\": "),
                },
            ],
        ),
        Message::tool_results(vec![
            ToolResult {
                tool_use_id: "call_1".into(),
                content: "{\"inserted\":[\"ab12cd34\"]}".into(),
                is_error: false,
            },
            ToolResult {
                tool_use_id: "call_2".into(),
                content: "archival_search: bad input".into(),
                is_error: true,
            },
        ]),
    ]
}

#[test]
fn tool_calls_and_results_go_back_as_chat_completions_messages() {
    let mut messages = tool_round();
    messages[1].content = "Saving it.".into();
    let req = ChatRequest::new("m", messages);
    let b = request_body(&req, true);
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 4, "{b}");
    assert_eq!(
        m[0],
        json!({"role": "user", "content": "remember the ferry time"})
    );
    // The reasoning is not sent; the calls are, with their arguments as JSON text (the
    // unparsed one as the model wrote it).
    assert_eq!(
        m[1],
        json!({"role": "assistant", "content": "Saving it.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "archival_insert", "arguments": "{\"content\":\"ferry at 7:40\"}"}},
            {"id": "call_2", "type": "function",
             "function": {"name": "archival_search", "arguments": "{\"query\": "}},
        ]})
    );
    assert_eq!(
        m[2],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"inserted\":[\"ab12cd34\"]}"})
    );
    assert_eq!(
        m[3],
        json!({"role": "tool", "tool_call_id": "call_2", "content": "error: archival_search: bad input"})
    );
    // An assistant turn that only called tools has null content.
    let b = request_body(&ChatRequest::new("m", tool_round()), true);
    assert_eq!(b["messages"][1]["content"], Value::Null);
    // Plain messages are as before, and serialise without the new fields.
    let plain = serde_json::to_value(Message::user("hi")).unwrap();
    assert_eq!(plain, json!({"role": "user", "content": "hi"}));
    let back: Message = serde_json::from_value(plain).unwrap();
    assert_eq!(back, Message::user("hi"));
}

#[test]
fn official_openai_gets_max_completion_tokens() {
    let req = ChatRequest::new("o4-mini", vec![Message::user("hi")]);
    let b = OpenAiWire { official: true }.body(&req, true);
    assert_eq!(b["max_completion_tokens"], json!(1024));
    assert!(b.get("max_tokens").is_none());
    let b = OpenAiWire { official: false }.body(&req, true);
    assert_eq!(b["max_tokens"], json!(1024));
    assert!(b.get("max_completion_tokens").is_none());
}

fn think_stream() -> String {
    sse(&[
        json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"<th"}}]}),
        json!({"choices":[{"index":0,"delta":{"content":"ink>\nI reason é漢"}}]}),
        json!({"choices":[{"index":0,"delta":{"content":" more</thi"}}]}),
        json!({"choices":[{"index":0,"delta":{"content":"nk>\n\nAnswer"}}]}),
        json!({"choices":[{"index":0,"delta":{"content":" done"},"finish_reason":"stop"}]}),
    ])
}

#[test]
fn inline_think_tags_split_across_chunks() {
    let body = think_stream();
    assert_eq!(
        merged(decode(false, &[body.as_bytes()])),
        vec![
            think("I reason é漢 more"),
            text("Answer done"),
            StreamEvent::Stop {
                reason: StopReason::EndTurn
            }
        ]
    );
}

proptest! {
    #[test]
    fn chunking_does_not_change_events(cuts in proptest::collection::vec(any::<usize>(), 0..20)) {
        let body = think_stream();
        let bytes = body.as_bytes();
        let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut prev = 0;
        for p in points {
            chunks.push(&bytes[prev..p]);
            prev = p;
        }
        chunks.push(&bytes[prev..]);
        prop_assert_eq!(merged(decode(false, &chunks)), merged(decode(false, &[bytes])));
    }
}
