//! Replay: a recorded stream played back yields the same events and byte-identical raw
//! bytes, for the local model and for every HTTP wire format.
#![allow(clippy::unwrap_used, clippy::expect_used)]

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
    }
}

/// Runs one turn and returns its outcome and every event it reported.
async fn turn(store: &Store, provider: Arc<dyn Provider>, q: &str) -> (TurnOutcome, Vec<TurnEvent>) {
    let orch = Orchestrator::new(store.clone(), provider, "m");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = tokio_util::sync::CancellationToken::new();
    let req = request(q);
    let run = tokio::spawn(async move { orch.run_turn(req, tx, cancel).await });
    let mut events = Vec::new();
    while let Some(ev) = rx.recv().await {
        if !matches!(ev, TurnEvent::Started { .. }) {
            events.push(ev);
        }
    }
    (run.await.unwrap().unwrap(), events)
}

fn raw_bytes(store: &Store, outcome: &TurnOutcome) -> Vec<u8> {
    store.raw_chunks(outcome.stream).unwrap().into_iter().flat_map(|c| c.bytes).collect()
}

/// Records `provider`'s answer, replays it at full speed, and checks events, node texts and
/// raw bytes are the same.
pub async fn assert_replay_matches(store: &Store, provider: Arc<dyn Provider>) {
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
        assert!(std::env::var("CI").is_err(), "model file missing in CI: run scripts/setup.sh");
        eprintln!("\n!!! SKIPPING: local model {} not found; run scripts/setup.sh !!!\n", path.display());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(&tmp.path().join("s.redb")).unwrap();
    let provider = LocalProvider::new(LocalSettings {
        model_path: path,
        context_size: 1024,
        threads: 0,
        thinking_pass: true,
        thinking_prompt: "Think step by step.".into(),
        answer_prompt: "Reasoning:".into(),
    });
    assert_replay_matches(&store, Arc::new(provider)).await;
}
