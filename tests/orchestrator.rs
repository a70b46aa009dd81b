//! The orchestrator over real HTTP: multi-turn history, compaction when the history would
//! overflow the context, the session token budget, and the knowledge hook.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use glassbox::engines::llm::ThinkingMode;
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::engines::orchestrator::{
    KnowledgeContext, Orchestrator, TurnEvent, TurnOutcome, TurnRequest,
};
use glassbox::store::{EdgeType, NodeType, SessionId, Store};
use support::{Script, ScriptedServer, Step};

/// An OpenAI-compatible stream answering `text` with `tokens` output tokens.
fn answer(text: &str, tokens: u64) -> Step {
    let chunk = serde_json::json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]});
    let done = serde_json::json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":tokens,"total_tokens":10 + tokens}});
    Step::sse(format!("data: {chunk}\n\ndata: {done}\n\ndata: [DONE]\n\n"))
}

fn orchestrator(store: &Store, url: &str) -> Orchestrator {
    let settings = HttpSettings {
        base_url: format!("{url}/v1"),
        keys: vec![ApiKey::new("k")],
        max_retries: 0,
        ..Default::default()
    };
    Orchestrator::new(
        store.clone(),
        Arc::new(OpenAiProvider::new(settings).unwrap()),
        "m",
    )
}

async fn ask(
    orch: &Orchestrator,
    session: Option<SessionId>,
    q: &str,
) -> anyhow::Result<(TurnOutcome, Vec<TurnEvent>)> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let req = TurnRequest {
        session,
        question: q.into(),
        system: None,
        thinking: ThinkingMode::Off,
        effort: None,
        max_tokens: 100,
        temperature: None,
        top_p: None,
        seed: None,
        branch_from: None,
    };
    let orch = orch.clone();
    let run = tokio::spawn(async move { orch.run_turn(req, tx, Default::default()).await });
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    Ok((run.await.unwrap()?, events))
}

#[tokio::test]
async fn long_history_is_compacted_into_a_superseding_node() {
    let long = "word ".repeat(60);
    let script = Script::new(vec![
        answer(&long, 5),
        answer(&long, 5),
        answer("SUMMARY: they discussed words.", 7), // the compaction call
        answer("third answer", 5),
    ]);
    let server = ScriptedServer::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb")).unwrap();
    let mut orch = orchestrator(&store, &server.url());
    orch.context_tokens = 200;
    orch.budget.compact_at_percent = 50;
    orch.budget.keep_recent_turns = 1;
    let (first, _) = ask(&orch, None, "first question").await.unwrap();
    let (_, _) = ask(&orch, Some(first.session), "second question")
        .await
        .unwrap();
    let (third, events) = ask(&orch, Some(first.session), "third question")
        .await
        .unwrap();
    assert_eq!(third.error, None);
    let compacted = events.iter().find_map(|e| match e {
        TurnEvent::Compacted { node, superseded } => Some((*node, *superseded)),
        _ => None,
    });
    let (node, superseded) = compacted.expect("a compaction happened");
    assert_eq!(
        superseded, 2,
        "the first turn (query + response) was summarised"
    );
    let c = store.node(node).unwrap().unwrap();
    assert_eq!(c.kind, NodeType::Compaction);
    assert_eq!(c.text, "SUMMARY: they discussed words.");
    let edges = store.edges_from(node, Some(EdgeType::Supersedes)).unwrap();
    assert_eq!(edges.len(), 2);
    // The last request carries the summary and the kept turn, not the summarised one.
    let requests = server.requests();
    let last = requests.last().unwrap().json["messages"].to_string();
    assert!(last.contains("SUMMARY: they discussed words."), "{last}");
    assert!(last.contains("second question") && last.contains("third question"));
    assert!(!last.contains("first question"), "{last}");
}

#[tokio::test]
async fn the_session_budget_warns_then_stops() {
    let server = ScriptedServer::start(Script::forever(answer("ok", 40))).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb")).unwrap();
    let mut orch = orchestrator(&store, &server.url());
    orch.budget.session_tokens = 100;
    orch.budget.warn_percent = 50;
    let (first, events) = ask(&orch, None, "one").await.unwrap();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TurnEvent::BudgetWarning { .. }))
    );
    let (_, events) = ask(&orch, Some(first.session), "two").await.unwrap();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TurnEvent::BudgetWarning { .. })),
        "40 of 100 is below 50%"
    );
    let (_, events) = ask(&orch, Some(first.session), "three").await.unwrap();
    assert!(events.iter().any(|e| matches!(
        e,
        TurnEvent::BudgetWarning {
            used: 80,
            limit: 100
        }
    )));
    // 120 of 100 used: the next turn is refused with a clear message and nothing is sent.
    let sent = server.requests().len();
    let err = ask(&orch, Some(first.session), "four")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("token budget exhausted"), "{err}");
    assert_eq!(server.requests().len(), sent);
}

struct Notes;

impl KnowledgeContext for Notes {
    fn context_for(&self, question: &str) -> Option<String> {
        question
            .contains("tides")
            .then(|| "The moon causes tides.".to_string())
    }
}

#[tokio::test]
async fn knowledge_context_goes_into_the_system_prompt() {
    let server = ScriptedServer::start(Script::forever(answer("ok", 1))).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb")).unwrap();
    let mut orch = orchestrator(&store, &server.url());
    orch.knowledge = Some(Arc::new(Notes));
    ask(&orch, None, "what about tides?").await.unwrap();
    ask(&orch, None, "what about bread?").await.unwrap();
    let r = server.requests();
    assert!(r[0].json.to_string().contains("The moon causes tides."));
    assert!(!r[1].json.to_string().contains("The moon causes tides."));
}
