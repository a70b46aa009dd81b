//! Replay: a recorded stream played back yields the same events and byte-identical raw
//! bytes, for the local model and for every HTTP wire format.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use glassbox::engines::llm::replay::ReplayProvider;
use glassbox::engines::llm::{Provider, ThinkingMode};
use glassbox::engines::orchestrator::{Orchestrator, TurnEvent, TurnOutcome, TurnRequest};
use glassbox::store::Store;

fn request(question: &str) -> TurnRequest {
    TurnRequest {
        session: None,
        question: question.into(),
        system: None,
        thinking: ThinkingMode::Budget { tokens: 40 },
        effort: None,
        max_tokens: 40,
        temperature: Some(0.0),
        top_p: None,
        seed: Some(1),
        branch_from: None,
    }
}

/// Runs one turn and returns its outcome and every event it reported.
async fn turn(store: &Store, provider: Arc<dyn Provider>, q: &str) -> (TurnOutcome, Vec<String>) {
    let orch = Orchestrator::new(store.clone(), provider, "m");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = tokio_util::sync::CancellationToken::new();
    let req = request(q);
    let run = tokio::spawn(async move { orch.run_turn(req, tx, cancel).await });
    let mut events = Vec::new();
    while let Some(ev) = rx.recv().await {
        // Node ids are new on every run; everything else must repeat exactly.
        let ev = match ev {
            TurnEvent::Started { .. } => continue,
            TurnEvent::NodeCreated { kind, .. } => format!("created {kind:?}"),
            TurnEvent::Step { step, .. } => format!("step {step:?}"),
            TurnEvent::Decision { decision, .. } => format!("decision {decision:?}"),
            other => format!("{other:?}"),
        };
        events.push(ev);
    }
    (run.await.unwrap().unwrap(), events)
}

fn raw_bytes(store: &Store, outcome: &TurnOutcome) -> Vec<u8> {
    store
        .raw_chunks(outcome.stream)
        .unwrap()
        .into_iter()
        .flat_map(|c| c.bytes)
        .collect()
}

/// Records `provider`'s answer, replays it at full speed, and checks events, node texts and
/// raw bytes are the same.
async fn assert_replay_matches(store: &Store, provider: Arc<dyn Provider>) {
    let (original, original_events) = turn(store, provider, "q").await;
    let replay = ReplayProvider::from_store(store, original.stream, 0.0).unwrap();
    let (again, replay_events) = turn(store, Arc::new(replay), "q").await;
    assert_eq!(replay_events, original_events);
    assert_eq!(raw_bytes(store, &again), raw_bytes(store, &original));
    assert!(!raw_bytes(store, &original).is_empty());
    let text = |id| store.node(id).unwrap().unwrap().text;
    assert_eq!(again.response.map(text), original.response.map(text));
    assert_eq!(again.thinking.map(text), original.thinking.map(text));
    assert_eq!(again.usage, original.usage);
    assert_eq!(again.stop, original.stop);
}

#[cfg(feature = "local")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_model_recording_replays_identically() {
    use glassbox::engines::llm::local::{LocalProvider, LocalSettings};
    let dir = glassbox::paths::default_models_dir().unwrap();
    let path = glassbox::models::smollm2_path(&dir);
    if !path.is_file() {
        assert!(
            std::env::var("CI").is_err(),
            "model file missing in CI: run scripts/setup.sh"
        );
        eprintln!(
            "\n!!! SKIPPING: local model {} not found; run scripts/setup.sh !!!\n",
            path.display()
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let store = support::store::open(&tmp.path().join("s.redb")).unwrap();
    let provider = LocalProvider::new(LocalSettings {
        model_path: path,
        context_size: 1024,
        threads: 0,
        thinking_pass: true,
        thinking_prompt: "Think step by step.".into(),
        answer_prompt: "Reasoning:".into(),
        decoding: Default::default(),
    });
    assert_replay_matches(&store, Arc::new(provider)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_recordings_replay_identically() {
    use glassbox::engines::llm::anthropic::AnthropicProvider;
    use glassbox::engines::llm::http::{ApiKey, HttpSettings};
    use glassbox::engines::llm::ollama::OllamaProvider;
    use glassbox::engines::llm::openai::OpenAiProvider;
    use support::{ChunkBy, Script, ScriptedServer, Step};

    let cases = [
        ("anthropic", "anthropic_thinking.sse"),
        ("anthropic", "anthropic_redacted.sse"),
        ("openai", "openai_think_tags.sse"),
        ("openai", "openrouter_reasoning_details.sse"),
        ("ollama", "ollama_thinking.ndjson"),
    ];
    for (kind, fixture) in cases {
        let body = support::fixture(fixture);
        let step = if fixture.ends_with(".ndjson") {
            Step::ndjson(&body)
        } else {
            Step::sse(&body)
        };
        let server = ScriptedServer::start(Script::forever(step.rechunk(ChunkBy::Bytes(37)))).await;
        let settings = HttpSettings {
            base_url: if kind == "openai" {
                format!("{}/v1", server.url())
            } else {
                server.url()
            },
            keys: vec![ApiKey::new("k")],
            ..Default::default()
        };
        let provider: Arc<dyn Provider> = match kind {
            "anthropic" => Arc::new(AnthropicProvider::new(settings).unwrap()),
            "openai" => Arc::new(OpenAiProvider::new(settings).unwrap()),
            _ => Arc::new(OllamaProvider::new(settings).unwrap()),
        };
        let tmp = tempfile::tempdir().unwrap();
        let store = support::store::open(&tmp.path().join("s.redb")).unwrap();
        assert_replay_matches(&store, provider).await;
    }
}

#[tokio::test(start_paused = true)]
async fn replay_keeps_the_recorded_pace() {
    use futures::StreamExt;
    use glassbox::engines::llm::{CallCtx, ChatRequest};
    use glassbox::store::{RawStream, SessionId, StoredChunk, StreamId};
    let lines = [
        ("{\"p\":\"a\",\"s\":\"x\"}\n", 0u64),
        ("{\"p\":\"a\",\"s\":\"y\"}\n", 200_000),
        ("{\"p\":\"s\",\"stop\":\"end_turn\"}\n", 400_000),
    ];
    let header = RawStream {
        id: StreamId::new(),
        session: SessionId::new(),
        provider: "local".into(),
        model: "m".into(),
        request: serde_json::Value::Null,
        created_at: chrono::Utc::now(),
        nodes: vec![],
        chunk_count: 3,
        total_bytes: 0,
    };
    let chunks: Vec<StoredChunk> = lines
        .iter()
        .map(|(l, t)| StoredChunk {
            offset_us: *t,
            bytes: l.as_bytes().to_vec(),
        })
        .collect();
    // Paused time: the replay's sleeps advance the clock exactly, so the pace is checked
    // without measuring wall-clock time.
    let start = tokio::time::Instant::now();
    let replay = ReplayProvider::new(header, chunks, 2.0);
    let mut stream = replay.stream(ChatRequest::new("m", vec![]), CallCtx::default());
    let mut at = Vec::new();
    while let Some(ev) = stream.next().await {
        at.push((ev, start.elapsed().as_millis()));
    }
    let times: Vec<u128> = at.iter().map(|(_, t)| *t).collect();
    assert_eq!(times, vec![0, 100, 200], "speed 2 halves the recorded gaps");
}
