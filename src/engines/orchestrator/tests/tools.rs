//! Memory tools in a turn: the model's tool calls run through the knowledge source and the
//! conversation goes on with their results.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::super::{KnowledgeContext, Orchestrator, TurnRequest};
use crate::engines::llm::{
    CallCtx, ChatRequest, EventStream, Provider, StopReason, StreamEvent, ThinkingMode, ToolSpec,
    Usage,
};
use crate::store::{NodeId, NodeType, SessionId, Store};

/// Answers each call with the next scripted events (the last ones again when they run
/// out) and keeps the requests.
struct Script {
    tools: bool,
    replies: Mutex<VecDeque<Vec<StreamEvent>>>,
    last: Vec<StreamEvent>,
    seen: Mutex<Vec<ChatRequest>>,
}

impl Script {
    fn new(tools: bool, replies: Vec<Vec<StreamEvent>>) -> Arc<Self> {
        Arc::new(Self {
            tools,
            last: replies.last().cloned().unwrap_or_default(),
            replies: Mutex::new(replies.into()),
            seen: Mutex::new(Vec::new()),
        })
    }

    fn seen(&self) -> Vec<ChatRequest> {
        self.seen.lock().unwrap().clone()
    }
}

impl Provider for Script {
    fn name(&self) -> &str {
        "script"
    }

    fn stream(&self, req: ChatRequest, _ctx: CallCtx) -> EventStream {
        self.seen.lock().unwrap().push(req);
        let events = self
            .replies
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| self.last.clone());
        futures::stream::iter(events).boxed()
    }

    fn supports_tools(&self) -> bool {
        self.tools
    }
}

/// A knowledge source with one tool, `note`, and two tool rounds a turn.
struct Notebook;

impl KnowledgeContext for Notebook {
    fn context_for(&self, _question: &str) -> Option<super::super::Knowledge> {
        None
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "note".into(),
            description: "Write a note.".into(),
            input_schema: json!({"type": "object"}),
        }]
    }

    fn call_tool(
        &self,
        name: &str,
        input: &serde_json::Value,
        _session: SessionId,
        _node: NodeId,
    ) -> Option<Result<String, String>> {
        (name == "note").then(|| Ok(format!("noted {input}")))
    }

    fn max_tool_rounds(&self) -> u32 {
        2
    }
}

fn calls(name: &str, text: &str) -> Vec<StreamEvent> {
    vec![
        StreamEvent::TextDelta { text: text.into() },
        StreamEvent::ToolUse {
            id: format!("id-{name}"),
            name: name.into(),
            input: json!({"n": 1}),
        },
        StreamEvent::Usage {
            usage: Usage {
                input_tokens: 10,
                output_tokens: 2,
                ..Usage::default()
            },
        },
        StreamEvent::Stop {
            reason: StopReason::ToolUse,
        },
    ]
}

fn answer(text: &str) -> Vec<StreamEvent> {
    vec![
        StreamEvent::TextDelta { text: text.into() },
        StreamEvent::Stop {
            reason: StopReason::EndTurn,
        },
    ]
}

async fn turn(provider: Arc<Script>) -> (tempfile::TempDir, Store, super::super::TurnOutcome) {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let mut orch = Orchestrator::new(store.clone(), provider, "m");
    orch.knowledge = Some(Arc::new(Notebook));
    let (tx, _rx) = mpsc::unbounded_channel();
    let req = TurnRequest {
        session: None,
        question: "take notes".into(),
        system: None,
        thinking: ThinkingMode::Off,
        effort: None,
        max_tokens: 100,
        temperature: None,
        top_p: None,
        seed: None,
        branch_from: None,
    };
    let out = orch
        .run_turn(req, tx, CancellationToken::new())
        .await
        .unwrap();
    (dir, store, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_tool_gets_an_error_result_and_the_model_is_asked_again() {
    let provider = Script::new(true, vec![calls("nope", "Let me try."), answer("Done.")]);
    let (_d, store, out) = turn(provider.clone()).await;
    assert_eq!(out.stop, StopReason::EndTurn);
    let seen = provider.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].tools.len(), 1);
    let sent = &seen[1].messages;
    let n = sent.len();
    assert_eq!(sent[n - 2].tool_calls[0].name, "nope");
    assert_eq!(sent[n - 2].content, "Let me try.");
    let result = &sent[n - 1].tool_results[0];
    assert_eq!(result.tool_use_id, "id-nope");
    assert_eq!(result.content, "unknown tool 'nope'");
    assert!(result.is_error);
    let nodes = store.session_nodes(out.session).unwrap();
    let tool = nodes.iter().find(|n| n.kind == NodeType::ToolCall).unwrap();
    assert_eq!(tool.meta["result"], "unknown tool 'nope'");
    assert_eq!(tool.meta["is_error"], true);
    let response = nodes.iter().find(|n| n.kind == NodeType::Response).unwrap();
    assert_eq!(response.text, "Let me try.\n\nDone.");
    // Each call is recorded with the request that asked for it.
    let streams = store.session_streams(out.session).unwrap();
    assert_eq!(streams.len(), 2);
    assert_eq!(out.stream, streams.iter().map(|s| s.id).min().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_rounds_stop_at_the_limit() {
    let provider = Script::new(true, vec![calls("note", "a")]);
    let (_d, store, out) = turn(provider.clone()).await;
    // Two rounds run, then the third call's request for tools is refused.
    assert_eq!(provider.seen().len(), 3);
    assert_eq!(out.stop, StopReason::ToolUse);
    assert_eq!(out.usage.input_tokens, 30);
    let nodes = store.session_nodes(out.session).unwrap();
    let results: Vec<String> = nodes
        .iter()
        .filter(|n| n.kind == NodeType::ToolCall)
        .map(|n| n.meta["result"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0], "noted {\"n\":1}");
    assert_eq!(results[1], "noted {\"n\":1}");
    assert!(
        results[2].starts_with("not run: this turn reached its limit of 2"),
        "{}",
        results[2]
    );
    let response = nodes.iter().find(|n| n.kind == NodeType::Response).unwrap();
    assert_eq!(response.text, "a\n\na\n\na");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_without_tools_is_offered_none() {
    let provider = Script::new(false, vec![calls("note", "a")]);
    let (_d, store, out) = turn(provider.clone()).await;
    let seen = provider.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].tools.is_empty());
    assert_eq!(out.stop, StopReason::ToolUse);
    // The call is recorded as before, and nothing ran it.
    let nodes = store.session_nodes(out.session).unwrap();
    let tool = nodes.iter().find(|n| n.kind == NodeType::ToolCall).unwrap();
    assert!(!tool.meta.contains_key("result"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_refusing_tools_is_asked_again_without_them() {
    let refused = vec![StreamEvent::Error {
        error: crate::engines::llm::LlmError::Http {
            provider: "script".into(),
            status: 400,
            message: "tools are not supported".into(),
        },
    }];
    let provider = Script::new(true, vec![refused, answer("fine")]);
    let (_d, store, out) = turn(provider.clone()).await;
    let seen = provider.seen();
    assert_eq!(seen.len(), 2);
    assert!(!seen[0].tools.is_empty() && seen[1].tools.is_empty());
    assert_eq!(out.stop, StopReason::EndTurn);
    assert!(out.error.is_none());
    let nodes = store.session_nodes(out.session).unwrap();
    let response = nodes.iter().find(|n| n.kind == NodeType::Response).unwrap();
    assert_eq!(response.text, "fine");
    assert_eq!(
        store.raw_stream(out.stream).unwrap().unwrap().request["tools"],
        json!([])
    );
}
