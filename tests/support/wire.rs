//! Provider wire bodies for scripted responses.

/// An Anthropic Messages stream as SSE frames: message_start, one thinking block in the
/// `thinking` pieces and its signature, one text block in the `answer` pieces, usage, stop.
pub fn anthropic_frames(thinking: &[&str], answer: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut frame = |event: &str, data: serde_json::Value| {
        out.push(format!("event: {event}\ndata: {data}\n\n"));
    };
    frame(
        "message_start",
        serde_json::json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1}}}),
    );
    frame(
        "content_block_start",
        serde_json::json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
    );
    for p in thinking {
        frame(
            "content_block_delta",
            serde_json::json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":p}}),
        );
    }
    frame(
        "content_block_delta",
        serde_json::json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}),
    );
    frame(
        "content_block_stop",
        serde_json::json!({"type":"content_block_stop","index":0}),
    );
    frame(
        "content_block_start",
        serde_json::json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
    );
    for p in answer {
        frame(
            "content_block_delta",
            serde_json::json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":p}}),
        );
    }
    frame(
        "content_block_stop",
        serde_json::json!({"type":"content_block_stop","index":1}),
    );
    frame(
        "message_delta",
        serde_json::json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":30}}),
    );
    frame("message_stop", serde_json::json!({"type":"message_stop"}));
    out
}

/// [`anthropic_frames`] as one body.
pub fn anthropic_stream(thinking: &[&str], answer: &str) -> String {
    anthropic_frames(thinking, &[answer]).concat()
}

fn openai_chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    let c = serde_json::json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m",
        "choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
    format!("data: {c}\n\n")
}

/// An OpenAI-compatible stream answering `pieces` in order, then stop, usage and `[DONE]`.
pub fn openai_stream(pieces: &[&str]) -> String {
    let mut s: String = pieces
        .iter()
        .map(|p| openai_chunk(serde_json::json!({"content": p}), None))
        .collect();
    let done = serde_json::json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}});
    s.push_str(&format!("data: {done}\n\ndata: [DONE]\n\n"));
    s
}

/// A scripted OpenAI-compatible answer of `text` in two pieces, 5 ms apart: enough for a
/// view to see it stream.
pub fn openai_answer_streamed(text: &str) -> super::Step {
    let (a, b) = text.split_at(text.len() / 2);
    super::Step::sse(openai_stream(&[a, b])).delay_each(std::time::Duration::from_millis(5))
}
