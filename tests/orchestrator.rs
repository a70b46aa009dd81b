//! The orchestrator over real HTTP: multi-turn history, compaction when the history would
//! overflow the context, compaction by the provider, the session token budget, and the
//! knowledge hook.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use futures::StreamExt;
use glassbox::engines::llm::anthropic::AnthropicProvider;
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::engines::llm::replay::ReplayProvider;
use glassbox::engines::llm::{CallCtx, ChatRequest, Provider, StreamEvent, ThinkingMode};
use glassbox::engines::orchestrator::{
    Knowledge, KnowledgeContext, Orchestrator, TurnEvent, TurnOutcome, TurnRequest,
};
use glassbox::store::{EdgeType, Node, NodeId, NodeType, SessionId, Store};
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
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
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
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
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
    fn context_for(&self, question: &str) -> Option<Knowledge> {
        question.contains("tides").then(|| Knowledge {
            text: "The moon causes tides.".to_string(),
            used: vec!["note-1".into()],
        })
    }
}

#[tokio::test]
async fn knowledge_context_goes_into_the_system_prompt() {
    let server = ScriptedServer::start(Script::forever(answer("ok", 1))).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let mut orch = orchestrator(&store, &server.url());
    orch.knowledge = Some(Arc::new(Notes));
    let tides = ask(&orch, None, "what about tides?").await.unwrap();
    let bread = ask(&orch, None, "what about bread?").await.unwrap();
    let r = server.requests();
    assert!(r[0].json.to_string().contains("The moon causes tides."));
    assert!(!r[1].json.to_string().contains("The moon causes tides."));
    // The query node records which entries were shown.
    let q = store.node(tides.0.query).unwrap().unwrap();
    assert_eq!(q.meta["memory_used"], serde_json::json!(["note-1"]));
    let q = store.node(bread.0.query).unwrap().unwrap();
    assert!(!q.meta.contains_key("memory_used"));
}

/// An Anthropic stream answering `text`, opened by a compaction block holding `summary`
/// when there is one (split over two deltas, to show they are joined).
fn anthropic_answer(summary: Option<&str>, text: &str) -> Step {
    let frame = |v: serde_json::Value| {
        let kind = v["type"].as_str().unwrap().to_string();
        format!("event: {kind}\ndata: {v}\n\n")
    };
    let mut body = frame(
        serde_json::json!({"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant", "model": "claude-opus-4-6", "content": [], "usage": {"input_tokens": 50, "output_tokens": 1}}}),
    );
    let mut index = 0;
    if let Some(summary) = summary {
        let (a, b) = summary.split_at(summary.len() / 2);
        body += &frame(
            serde_json::json!({"type": "content_block_start", "index": 0, "content_block": {"type": "compaction", "content": ""}}),
        );
        for part in [a, b] {
            body += &frame(
                serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "compaction_delta", "content": part}}),
            );
        }
        body += &frame(serde_json::json!({"type": "content_block_stop", "index": 0}));
        index = 1;
    }
    body += &frame(
        serde_json::json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    );
    body += &frame(
        serde_json::json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
    );
    body += &frame(serde_json::json!({"type": "content_block_stop", "index": index}));
    body += &frame(
        serde_json::json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
    );
    body += &frame(serde_json::json!({"type": "message_stop"}));
    Step::sse(body)
}

fn anthropic_orchestrator(store: &Store, url: &str) -> Orchestrator {
    let settings = HttpSettings {
        base_url: url.to_string(),
        keys: vec![ApiKey::new("k")],
        max_retries: 0,
        ..Default::default()
    };
    Orchestrator::new(
        store.clone(),
        Arc::new(AnthropicProvider::with_compaction(settings, true).unwrap()),
        "claude-opus-4-6",
    )
}

#[tokio::test]
async fn a_provider_compaction_becomes_a_boundary_node_and_goes_back_instead_of_history() {
    let summary = "SUMMARY: first they asked about tides; the moon did it.";
    let script = Script::new(vec![
        anthropic_answer(None, "first answer"),
        anthropic_answer(Some(summary), "second answer"),
        anthropic_answer(None, "third answer"),
    ]);
    let server = ScriptedServer::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let orch = anthropic_orchestrator(&store, &server.url());
    let (first, events) = ask(&orch, None, "first question").await.unwrap();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TurnEvent::Compacted { .. }))
    );
    let sid = first.session;
    let (second, events) = ask(&orch, Some(sid), "second question").await.unwrap();
    assert_eq!(second.error, None);
    assert_eq!(
        store.node(second.response.unwrap()).unwrap().unwrap().text,
        "second answer"
    );

    // Exactly one compaction node, holding the summary and superseding the first turn.
    let compacted: Vec<(NodeId, usize)> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::Compacted { node, superseded } => Some((*node, *superseded)),
            _ => None,
        })
        .collect();
    assert_eq!(compacted.len(), 1, "{events:?}");
    let (node, superseded) = compacted[0];
    let nodes = store.session_nodes(sid).unwrap();
    let compactions: Vec<_> = nodes
        .iter()
        .filter(|n| n.kind == NodeType::Compaction)
        .collect();
    assert_eq!(compactions.len(), 1);
    let c = compactions[0];
    assert_eq!(c.id, node);
    assert_eq!(c.text, summary);
    assert_eq!(
        c.raw_stream,
        Some(second.stream),
        "it came from the recorded stream"
    );
    let mut targets: Vec<NodeId> = store
        .edges_from(node, Some(EdgeType::Supersedes))
        .unwrap()
        .into_iter()
        .map(|e| e.dst)
        .collect();
    targets.sort();
    let mut earlier = vec![first.query, first.response.unwrap()];
    earlier.sort();
    assert_eq!(targets, earlier, "the history before it: the first turn");
    assert_eq!(superseded, 2);
    let session = store.session(sid).unwrap().unwrap();
    assert_eq!(session.meta["compactions"], serde_json::json!(1));

    // The next turn sends the compaction block with its answer, not the superseded turn.
    ask(&orch, Some(sid), "third question").await.unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1].json["messages"]
            .to_string()
            .contains("first question")
    );
    let last = &requests[2];
    assert_eq!(last.header("anthropic-beta"), Some("compact-2026-01-12"));
    assert_eq!(
        last.json["messages"],
        serde_json::json!([
            {"role": "user", "content": "second question"},
            {"role": "assistant", "content": [
                {"type": "compaction", "content": summary},
                {"type": "text", "text": "second answer"}
            ]},
            {"role": "user", "content": "third question"}
        ])
    );
    let sent = last.json["messages"].to_string();
    assert!(!sent.contains("first question") && !sent.contains("first answer"));

    // The recorded stream replays the compaction block.
    let replay = ReplayProvider::from_store(&store, second.stream, 0.0).unwrap();
    let replayed: Vec<StreamEvent> = replay
        .stream(ChatRequest::new("m", vec![]), CallCtx::default())
        .collect()
        .await;
    assert!(
        replayed.contains(&StreamEvent::Compaction {
            summary: summary.into(),
            encrypted_content: None,
        }),
        "{replayed:?}"
    );
    let header = store.raw_stream(second.stream).unwrap().unwrap();
    assert!(header.nodes.contains(&node));
}

/// Asks "which option?" of an Anthropic server answering with `step`, into a new store; the
/// store's folder, the store, the turn and its thinking node.
async fn ask_anthropic(step: Step) -> (tempfile::TempDir, Store, TurnOutcome, Node) {
    let server = ScriptedServer::start(Script::new(vec![step])).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let orch = anthropic_orchestrator(&store, &server.url());
    let (out, _) = ask(&orch, None, "which option?").await.unwrap();
    assert_eq!(out.error, None);
    let thinking = store.node(out.thinking.unwrap()).unwrap().unwrap();
    (dir, store, out, thinking)
}

/// The nodes of `session` put the usual way (indexed as they are put) into a new store at
/// `path`.
fn indexed_afresh(store: &Store, session: SessionId, path: &std::path::Path) -> Store {
    let nodes = store.session_nodes(session).unwrap();
    let fresh = support::store::open(path).unwrap();
    let session = store.session(session).unwrap().unwrap();
    fresh
        .write(|w| {
            w.put_session(&session)?;
            for n in &nodes {
                w.put_node(n)?;
            }
            Ok(())
        })
        .unwrap();
    fresh
}

/// What a search finds, with its scores to nine places.
fn hits(store: &Store, q: &str) -> Vec<(NodeId, String)> {
    store
        .search(q, None, 10)
        .unwrap()
        .into_iter()
        .map(|h| (h.node, format!("{:.9}", h.score)))
        .collect()
}

/// A long thinking streamed in many reads, words cut between them: the turn finds its words
/// as they arrive, and the index holds what indexing the stored nodes afresh gives (the same
/// hits, scored the same). The raw record, stored compressed, reads back byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_turn_is_indexed_as_its_whole_text_and_its_raw_record_reads_back() {
    let pieces: Vec<String> = (0..400)
        .map(|i| format!("Step {i} weighs the zygo"))
        .chain(std::iter::once(
            "morphic option. Größe ÉTÉ 東京 ".to_string(),
        ))
        .collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let body =
        support::wire::anthropic_frames(&pieces, &["The ans", "wer is Zygo", "morphic."]).concat();
    let step = Step::sse(&body)
        .split(&body, support::ChunkBy::Frames)
        .delay_each(std::time::Duration::from_micros(200));
    let (dir, store, out, thinking) = ask_anthropic(step).await;
    assert!(
        thinking
            .text
            .ends_with("zygomorphic option. Größe ÉTÉ 東京 ")
    );

    let fresh = indexed_afresh(&store, out.session, &dir.path().join("fresh.redb"));
    for q in [
        "zygomorphic",
        "step 17",
        "größe",
        "東京",
        "weighs option",
        "answer",
    ] {
        let got = hits(&store, q);
        assert!(!got.is_empty(), "{q}");
        assert_eq!(got, hits(&fresh, q), "{q}");
    }

    let streams = store.session_streams(out.session).unwrap();
    let raw: Vec<u8> = store
        .raw_chunks(streams[0].id)
        .unwrap()
        .into_iter()
        .flat_map(|c| c.bytes)
        .collect();
    assert_eq!(raw, body.as_bytes());
}

/// An Anthropic stream of about 640 KB of thinking, then `answer`.
/// Piece `i` of [`long_trace`]'s thinking: now and then with a quote, a backslash, a line
/// end and a character past ASCII, which the record escapes.
fn trace_piece(i: usize) -> String {
    match i % 97 {
        0 => format!("Step {i} \"weighs\" the zygomorphic option\\ ☃\n"),
        _ => format!("Step {i} weighs the zygomorphic option. "),
    }
}

fn long_trace(answer: &[&str]) -> String {
    let pieces: Vec<String> = (0..16_000).map(trace_piece).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    support::wire::anthropic_frames(&pieces, answer).concat()
}

/// A thinking past 128 KiB is stored at the turn's end without its words, marked for
/// the index; the next search adds them first and finds it, scored as if the turn had indexed
/// it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_trace_is_indexed_by_the_next_search() {
    let body = long_trace(&["The answer is ", "morphic."]);
    let (dir, store, out, thinking) = ask_anthropic(Step::sse(&body)).await;
    assert!(thinking.text.len() > 128 * 1024, "{}", thinking.text.len());
    // Its record, compressed as the trace streamed, reads back whole.
    let sent: String = (0..16_000).map(trace_piece).collect();
    assert!(thinking.text == sent, "the trace read back differs");
    assert_eq!(thinking.status, glassbox::store::NodeStatus::Complete);
    assert!(thinking.confidence.is_some());
    assert_eq!(store.pending_index_count().unwrap(), 1, "the trace waits");
    let indexed = store.search_doc_count().unwrap();

    let fresh = indexed_afresh(&store, out.session, &dir.path().join("fresh.redb"));
    let got = hits(&store, "zygomorphic");
    assert_eq!(got[0].0, thinking.id);
    assert_eq!(store.pending_index_count().unwrap(), 0);
    assert_eq!(store.search_doc_count().unwrap(), indexed + 1);
    for q in ["zygomorphic", "step 15999", "weighs option", "answer"] {
        assert_eq!(hits(&store, q), hits(&fresh, q), "{q}");
    }
}

/// As a user: `ask` streams a long trace, `doctor` says it waits for the index, `search`
/// finds it, and `doctor` no longer counts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_doctor_and_search_a_long_trace_with_the_binary() {
    let body = long_trace(&["The answer."]);
    let server = ScriptedServer::start(Script::new(vec![Step::sse(&body)])).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_path_buf();
    let url = server.url();
    let run = move |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_glassbox"));
        c.env("GLASSBOX_DATA_DIR", &data)
            .envs(support::bin::store_env(&data))
            .env("GLASSBOX_CONFIG_DIR", data.join("config"))
            .env("GLASSBOX_EMBEDDINGS__PROVIDER", "none")
            .env("ANTHROPIC_API_KEY", "k")
            .env("GLASSBOX_PROVIDERS__ANTHROPIC__BASE_URL", &url)
            .env("GLASSBOX_NETWORK__MAX_RETRIES", "0")
            .args(args)
            .stdin(std::process::Stdio::null());
        let out = c.output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let (asked, waiting, waiting_text, found, after) = tokio::task::spawn_blocking(move || {
        (
            run(&["--provider", "anthropic", "ask", "--json", "which option?"]),
            run(&["doctor", "--json"]),
            run(&["doctor"]),
            run(&["search", "--json", "zygomorphic"]),
            run(&["doctor", "--json"]),
        )
    })
    .await
    .unwrap();
    let done: serde_json::Value = serde_json::from_str(asked.lines().last().unwrap()).unwrap();
    assert_eq!(done["type"], "done", "{done}");
    let pending = |doctor: &str| {
        serde_json::from_str::<serde_json::Value>(doctor).unwrap()["store"]["search_pending"]
            .clone()
    };
    assert_eq!(pending(&waiting), serde_json::json!(1));
    assert!(
        waiting_text.contains("1 long trace waiting for the next search to index it"),
        "{waiting_text}"
    );
    assert!(found.contains("zygomorphic"), "{found}");
    assert_eq!(pending(&after), serde_json::json!(0));
}
