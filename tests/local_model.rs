//! The real embedded model (SmolLM2-135M through llama.cpp), driven through the real binary
//! and the library. Needs the model files from scripts/setup.sh: in CI (CI=true) their
//! absence fails the run; elsewhere these tests skip with a loud message.
#![cfg(feature = "local")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use glassbox::engines::llm::local::{LocalProvider, LocalSettings};
use glassbox::engines::llm::{StopReason, ThinkingMode};
use glassbox::engines::orchestrator::{Orchestrator, TurnRequest};
use glassbox::store::{NodeStatus, NodeType, Store};

fn model_path() -> Option<PathBuf> {
    let dir = glassbox::paths::default_models_dir()?;
    let path = glassbox::models::smollm2_path(&dir);
    if path.is_file() {
        return Some(path);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "model file {} missing in CI: scripts/setup.sh must fetch it",
            path.display()
        );
    }
    eprintln!(
        "\n!!! SKIPPING: local model {} not found; run scripts/setup.sh !!!\n",
        path.display()
    );
    None
}

fn glassbox(data: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_glassbox"));
    c.env("GLASSBOX_DATA_DIR", data)
        .env("GLASSBOX_CONFIG_DIR", data.join("config"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("GLASSBOX_PROVIDER");
    c
}

/// Runs `glassbox ask --json` and returns (thinking, answer, done event).
fn ask_json(data: &std::path::Path, question: &str) -> (String, String, serde_json::Value) {
    let out = glassbox(data)
        .args([
            "ask",
            "--json",
            "--max-tokens",
            "48",
            "--temperature",
            "0",
            question,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ask failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut thinking, mut answer, mut done) =
        (String::new(), String::new(), serde_json::Value::Null);
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        match v["type"].as_str().unwrap() {
            "thinking" => thinking.push_str(v["text"].as_str().unwrap()),
            "text" => answer.push_str(v["text"].as_str().unwrap()),
            "done" => done = v,
            _ => {}
        }
    }
    (thinking, answer, done)
}

#[test]
fn greedy_ask_is_deterministic_and_persisted() {
    if model_path().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let q = "Why is the sky blue?";
    let (t1, a1, d1) = ask_json(dir.path(), q);
    let (t2, a2, d2) = ask_json(dir.path(), q);
    assert!(!t1.trim().is_empty(), "no thinking");
    assert!(!a1.trim().is_empty(), "no answer");
    assert_eq!(t1, t2, "greedy thinking differs between runs");
    assert_eq!(a1, a2, "greedy answer differs between runs");
    assert_ne!(d1["session"], d2["session"]);

    let store = Store::open(&dir.path().join("glassbox.redb")).unwrap();
    let sid = d1["session"].as_str().unwrap().parse().unwrap();
    let nodes = store.session_nodes(sid).unwrap();
    let kinds: Vec<NodeType> = nodes.iter().map(|n| n.kind).collect();
    assert_eq!(
        kinds,
        vec![NodeType::Query, NodeType::Thinking, NodeType::Response]
    );
    assert_eq!(nodes[0].text, q);
    assert_eq!(nodes[1].text, t1);
    assert_eq!(nodes[2].text, a1);
    assert!(nodes.iter().all(|n| n.status == NodeStatus::Complete));
    let stream = nodes[2]
        .raw_stream
        .expect("the response links its raw stream");
    assert_eq!(nodes[1].raw_stream, Some(stream));
    let header = store.raw_stream(stream).unwrap().unwrap();
    assert_eq!(header.provider, "local");
    assert!(header.chunk_count > 0);
    assert_eq!(
        store.raw_chunks(stream).unwrap().len() as u32,
        header.chunk_count
    );

    // The listing shows both sessions.
    let out = glassbox(dir.path())
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert_eq!(list[0]["nodes"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_stops_generation_early_and_keeps_the_partial_node() {
    let Some(path) = model_path() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb")).unwrap();
    let provider = LocalProvider::new(LocalSettings {
        model_path: path,
        context_size: 2048,
        threads: 0,
        thinking_pass: true,
        thinking_prompt: "Think step by step.".into(),
        answer_prompt: "Reasoning:".into(),
    });
    let orch = Orchestrator::new(store.clone(), Arc::new(provider), "smollm2");
    let cancel = tokio_util::sync::CancellationToken::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let req = TurnRequest {
        session: None,
        question: "Write a long essay about the history of mathematics.".into(),
        system: None,
        thinking: ThinkingMode::Budget { tokens: 1500 },
        effort: None,
        max_tokens: 1500,
        temperature: Some(0.0),
        top_p: None,
        seed: None,
        branch_from: None,
    };
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move { orch.run_turn(req, tx, cancel).await }
    });
    // Cancel once a few thinking pieces have arrived.
    let mut pieces = 0;
    while let Some(ev) = rx.recv().await {
        if matches!(ev, glassbox::engines::orchestrator::TurnEvent::Thinking(_)) {
            pieces += 1;
            if pieces == 5 {
                cancel.cancel();
            }
        }
    }
    let outcome = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(outcome.stop, StopReason::Cancelled);
    assert!(
        outcome.usage.output_tokens < 1500,
        "generation did not stop early"
    );
    let thinking = store.node(outcome.thinking.unwrap()).unwrap().unwrap();
    assert_eq!(thinking.status, NodeStatus::Interrupted);
    assert!(!thinking.text.is_empty());
    assert!(
        outcome.response.is_none(),
        "the answer pass must not start after a cancel"
    );
}
