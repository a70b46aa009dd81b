//! The memory operations as tools, end to end: the real binary asks the scripted server,
//! which first answers with an `archival_insert` call and then with text. The first request
//! offers the memory tools, the second carries the call and its result, the session keeps a
//! tool_call node holding the result, and `glassbox memory` finds what the model stored,
//! with that node as its provenance. Once over the OpenAI-compatible protocol, once over
//! Anthropic's (where the signed thinking goes back ahead of the call).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::bin::{Project, ok};
use support::{ChunkBy, Script, ScriptedServer, Step};

/// What the model stores through the tool.
const FACT: &str = "The BLUEHERON ferry leaves pier 3 at 07:40 on weekdays";

const MEMORY_TOOLS: [&str; 7] = [
    "archival_insert",
    "archival_search",
    "recall_search",
    "core_memory_append",
    "core_memory_replace",
    "evict_to_archival",
    "promote_to_working",
];

/// The SSE body of `frames`, one `data:` line each (with an `event:` line when named).
fn sse(frames: &[(Option<&str>, Value)]) -> String {
    frames
        .iter()
        .map(|(event, data)| match event {
            Some(e) => format!("event: {e}\ndata: {data}\n\n"),
            None => format!("data: {data}\n\n"),
        })
        .collect()
}

/// An Anthropic stream of `events`, each framed with its `type` as the SSE event name.
fn anthropic_sse(events: Vec<Value>) -> Step {
    let body: String = events
        .iter()
        .map(|v| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap()))
        .collect();
    Step::sse(body).rechunk(ChunkBy::Lines)
}

/// An OpenAI chat-completions stream that calls `archival_insert` with FACT, its arguments
/// split over two deltas, and finishes with `tool_calls`.
fn openai_tool_call() -> Step {
    let args = json!({"content": FACT, "tags": ["travel"], "importance": 0.9}).to_string();
    let (a, b) = args.split_at(args.len() / 2);
    let chunk = |delta: Value, finish: Value| {
        (
            None,
            json!({"id": "chatcmpl-t", "object": "chat.completion.chunk", "created": 1735689600,
                   "model": "gpt-4.1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut body = sse(&[
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_mem1",
                   "type": "function", "function": {"name": "archival_insert", "arguments": ""}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": b}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        (
            None,
            json!({"id": "chatcmpl-t", "object": "chat.completion.chunk", "choices": [],
                   "usage": {"prompt_tokens": 400, "completion_tokens": 30, "total_tokens": 430}}),
        ),
    ]);
    body.push_str("data: [DONE]\n\n");
    Step::sse(body).rechunk(ChunkBy::Lines)
}

/// An OpenAI chat-completions stream answering `text`.
fn openai_text(text: &str) -> Step {
    let mut body = sse(&[
        (
            None,
            json!({"id": "chatcmpl-a", "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]}),
        ),
        (
            None,
            json!({"id": "chatcmpl-a", "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 480, "completion_tokens": 12, "total_tokens": 492}}),
        ),
    ]);
    body.push_str("data: [DONE]\n\n");
    Step::sse(body).rechunk(ChunkBy::Lines)
}

/// An Anthropic stream that thinks (signed), then calls `archival_insert` with FACT.
fn anthropic_tool_call() -> Step {
    let input = json!({"content": FACT, "tags": ["travel"], "importance": 0.9}).to_string();
    let (a, b) = input.split_at(input.len() / 2);
    anthropic_sse(vec![
        json!({"type": "message_start", "message": {"id": "msg_t", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "usage": {"input_tokens": 400, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "The user wants this kept; I will store it."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig-mem-1"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_mem1", "name": "archival_insert", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": a}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": b}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 60}}),
        json!({"type": "message_stop"}),
    ])
}

/// An Anthropic stream answering `text`.
fn anthropic_text(text: &str) -> Step {
    anthropic_sse(vec![
        json!({"type": "message_start", "message": {"id": "msg_a", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [], "usage": {"input_tokens": 480, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 12}}),
        json!({"type": "message_stop"}),
    ])
}

/// [`ask`] with the OpenAI-compatible provider at `server`'s `/v1`.
async fn ask_openai(env: &Project, server: &ScriptedServer) -> Vec<Value> {
    ask(
        env,
        "openai",
        format!("{}/v1", server.url()),
        "OPENAI_API_KEY",
    )
    .await
}

/// Runs `glassbox ask --json` against the server; returns the JSON lines it printed.
async fn ask(env: &Project, provider: &str, url: String, key_var: &str) -> Vec<Value> {
    let mut cmd = env.cmd();
    cmd.args([
        "ask",
        "--json",
        "--provider",
        provider,
        "--base-url",
        &url,
        "Please remember when the BLUEHERON ferry leaves.",
    ])
    .env(key_var, "sk-test-0123456789");
    let out = tokio::task::spawn_blocking(move || ok(&mut cmd))
        .await
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools offered: {request}"))
        .iter()
        .map(|t| {
            t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
                .unwrap()
                .to_string()
        })
        .collect()
}

/// The session's tool_call node, and the answer's text. Checks that the node holds the
/// call's result and that the memory the model stored names the node as its source.
fn check_session_and_memory(env: &Project, printed: &[Value], answer: &str) -> (Value, String) {
    let done = printed.iter().find(|v| v["type"] == "done").unwrap();
    let session = done["session"].as_str().unwrap().to_string();
    assert!(
        printed
            .iter()
            .any(|v| v["type"] == "tool_use" && v["name"] == "archival_insert"),
        "{printed:?}"
    );
    let show = env.json(&["sessions", "show", &session, "--json"]);
    let nodes = show["nodes"].as_array().unwrap();
    let tool = nodes
        .iter()
        .find(|n| n["kind"] == "tool_call")
        .unwrap_or_else(|| panic!("no tool_call node: {show}"))
        .clone();
    assert_eq!(tool["meta"]["tool"], "archival_insert");
    assert_eq!(tool["meta"]["is_error"], false, "{tool}");
    let result: Value = serde_json::from_str(tool["meta"]["result"].as_str().unwrap()).unwrap();
    let short = result["inserted"][0].as_str().unwrap().to_string();
    let response = nodes.iter().find(|n| n["kind"] == "response").unwrap();
    assert_eq!(response["text"], answer);
    assert_eq!(response["meta"]["stop_reason"], "end_turn");
    // Two calls' usage, added up.
    assert_eq!(response["meta"]["usage"]["input_tokens"], 880, "{response}");

    let hits = env.json(&["memory", "search", "BLUEHERON ferry pier", "--json"]);
    let first = &hits[0]["entry"];
    assert_eq!(first["content"], FACT, "{hits}");
    let id = first["id"].as_str().unwrap().to_string();
    assert!(id.replace('-', "").ends_with(&short), "{id} vs {short}");
    let shown = env.json(&["memory", "show", &id, "--json"]);
    let p = &shown["entry"]["provenance"];
    assert_eq!(p["origin"], "tool", "{shown}");
    assert_eq!(p["node"], tool["id"], "{shown}");
    assert_eq!(p["session"].as_str(), Some(session.as_str()), "{shown}");
    assert_eq!(shown["source"]["node_kind"], "tool_call", "{shown}");
    assert_eq!(shown["entry"]["tier"], "archival");
    assert_eq!(shown["entry"]["tags"], json!(["travel"]));
    (tool, session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_tool_call_stores_memory_and_the_answer_continues() {
    let env = Project::new();
    let answer = "Saved: the ferry leaves at 07:40.";
    let server =
        ScriptedServer::start(Script::new(vec![openai_tool_call(), openai_text(answer)])).await;
    let printed = ask_openai(&env, &server).await;

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one call, then one continuation");
    assert_eq!(tool_names(&requests[0].json), MEMORY_TOOLS);
    let second = &requests[1].json;
    assert_eq!(tool_names(second), MEMORY_TOOLS, "tools stay offered");
    let messages = second["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(
        messages[n - 3]["content"],
        "Please remember when the BLUEHERON ferry leaves."
    );
    let call = &messages[n - 2];
    assert_eq!(call["role"], "assistant", "{second}");
    assert_eq!(call["tool_calls"][0]["id"], "call_mem1");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "archival_insert");
    let args: Value = serde_json::from_str(
        call["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args["content"], FACT);
    let result = &messages[n - 1];
    assert_eq!(result["role"], "tool", "{second}");
    assert_eq!(result["tool_call_id"], "call_mem1");
    assert!(
        result["content"].as_str().unwrap().contains("inserted"),
        "{result}"
    );

    let (tool, _) = check_session_and_memory(&env, &printed, answer);
    assert_eq!(tool["meta"]["tool_use_id"], "call_mem1");
    assert_eq!(tool["meta"]["result"], result["content"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_tool_call_goes_back_with_its_signed_thinking() {
    let env = Project::new();
    let answer = "Stored. The ferry leaves at 07:40.";
    let server = ScriptedServer::start(Script::new(vec![
        anthropic_tool_call(),
        anthropic_text(answer),
    ]))
    .await;
    let printed = ask(&env, "anthropic", server.url(), "ANTHROPIC_API_KEY").await;

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one call, then one continuation");
    assert_eq!(tool_names(&requests[0].json), MEMORY_TOOLS);
    let second = &requests[1].json;
    let messages = second["messages"].as_array().unwrap();
    let n = messages.len();
    let call = &messages[n - 2];
    assert_eq!(call["role"], "assistant", "{second}");
    assert_eq!(
        call["content"][0],
        json!({"type": "thinking", "thinking": "The user wants this kept; I will store it.", "signature": "sig-mem-1"})
    );
    assert_eq!(call["content"][1]["type"], "tool_use");
    assert_eq!(call["content"][1]["id"], "toolu_mem1");
    assert_eq!(call["content"][1]["input"]["content"], FACT);
    let result = &messages[n - 1];
    assert_eq!(result["role"], "user");
    assert_eq!(result["content"][0]["type"], "tool_result");
    assert_eq!(result["content"][0]["tool_use_id"], "toolu_mem1");
    assert!(result["content"][0].get("is_error").is_none(), "{result}");

    let (tool, session) = check_session_and_memory(&env, &printed, answer);
    assert_eq!(tool["meta"]["tool_use_id"], "toolu_mem1");
    // The thinking node is the one the model's reasoning streamed into.
    let show = env.json(&["sessions", "show", &session, "--json"]);
    let thinking = show["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "thinking")
        .unwrap();
    assert!(
        thinking["text"]
            .as_str()
            .unwrap()
            .contains("I will store it"),
        "{thinking}"
    );
}

/// `[memory] tools = false` in the user's config: nothing is offered, nothing is run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_memory_tools_off_no_tools_are_offered() {
    let env = Project::new();
    let config = env.data.join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "[memory]\ntools = false\n").unwrap();
    let server = ScriptedServer::start(Script::new(vec![openai_text("ok")])).await;
    ask_openai(&env, &server).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].json.get("tools").is_none(),
        "{}",
        requests[0].json
    );
}
