//! Loop detection in a think turn over real HTTP: a looping answer streamed by the scripted
//! server is stopped early (action stop) or reported once and left to finish (action warn),
//! the node records the loop, and an ordinary long numbered answer reports nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::loops::{LoopAction, LoopUnit, is_loop_stop};
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::engines::llm::{StopReason, ThinkingMode};
use glassbox::engines::orchestrator::{LOOPING, Orchestrator, TurnEvent, TurnOutcome, TurnRequest};
use glassbox::store::{NodeStatus, Store};
use serde_json::json;
use support::{Script, ScriptedServer, Step};

/// An OpenAI-compatible stream sending `thinking` as reasoning deltas and then `text` as
/// content deltas, a few characters at a time with a pause between frames.
fn streamed(thinking: &str, text: &str) -> Step {
    let frame = |delta: serde_json::Value| {
        let chunk = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":delta,"finish_reason":null}]});
        format!("data: {chunk}\n\n")
    };
    let pieces = |s: &str| -> Vec<String> {
        let chars: Vec<char> = s.chars().collect();
        chars.chunks(7).map(|c| c.iter().collect()).collect()
    };
    let mut body = String::new();
    for p in pieces(thinking) {
        body += &frame(json!({"reasoning_content": p}));
    }
    for p in pieces(text) {
        body += &frame(json!({"content": p}));
    }
    let done = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":500,"total_tokens":510}});
    body += &format!("data: {done}\n\ndata: [DONE]\n\n");
    Step::sse(body).delay_each(Duration::from_millis(1))
}

/// The small model's tea answer: the same three numbered steps, `cycles` times.
fn tea_loop(cycles: usize) -> String {
    let steps = [
        "Identify the question: what does the user want to know?",
        "Identify the answer: what would a good answer contain?",
        "Create a step-by-step process to get from one to the other.",
    ];
    let mut s = String::from("Here is how to make tea, step by step:\n\n");
    for i in 0..cycles * 3 {
        s += &format!("{}. {}\n", i + 1, steps[i % 3]);
    }
    s
}

/// A long ordinary numbered answer: every step different, many alike in shape.
fn long_recipe() -> String {
    let things = [
        "water", "kettle", "teapot", "cups", "leaves", "milk", "sugar", "lemon", "honey",
        "strainer", "tray", "spoons",
    ];
    let mut s = String::from("A full tea service, step by step:\n\n");
    for (i, thing) in things.iter().enumerate() {
        s += &format!(
            "{}. Fetch the {thing} and set it on the counter.\n",
            3 * i + 1
        );
        s += &format!("{}. Check the {thing} is clean.\n", 3 * i + 2);
        s += &format!("{}. Put the {thing} where you will need it.\n", 3 * i + 3);
    }
    s += "\n| Tea | Water | Minutes |\n|---|---|---|\n| Black | 100 °C | 4 |\n| Green | 80 °C | 2 |\n| White | 80 °C | 3 |\n\n```rust\nfn main() {\n    if hot {\n        pour();\n    }\n}\n```\n";
    s
}

fn orchestrator(store: &Store, url: &str, action: LoopAction) -> Orchestrator {
    let settings = HttpSettings {
        base_url: format!("{url}/v1"),
        keys: vec![ApiKey::new("k")],
        max_retries: 0,
        ..Default::default()
    };
    let mut o = Orchestrator::new(
        store.clone(),
        Arc::new(OpenAiProvider::new(settings).unwrap()),
        "m",
    );
    o.loop_action = action;
    o
}

async fn ask(orch: &Orchestrator) -> (TurnOutcome, Vec<TurnEvent>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let req = TurnRequest {
        session: None,
        question: "Explain step by step how to make tea".into(),
        system: None,
        thinking: ThinkingMode::Off,
        effort: None,
        max_tokens: 2000,
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
    (run.await.unwrap().unwrap(), events)
}

fn loop_events(events: &[TurnEvent]) -> Vec<&TurnEvent> {
    events
        .iter()
        .filter(|e| matches!(e, TurnEvent::Loop { .. }))
        .collect()
}

#[tokio::test]
async fn a_looping_answer_is_stopped_early_and_recorded() {
    let full = tea_loop(40);
    let server = ScriptedServer::start(Script::forever(streamed("", &full))).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let orch = orchestrator(&store, &server.url(), LoopAction::Stop);
    let (outcome, events) = ask(&orch).await;

    assert_eq!(outcome.error, None);
    assert!(is_loop_stop(&outcome.stop), "{:?}", outcome.stop);
    let response = outcome.response.unwrap();
    let loops = loop_events(&events);
    assert_eq!(
        loops,
        vec![&TurnEvent::Loop {
            node: response,
            period: 3,
            repeats: 4,
            unit: LoopUnit::Lines,
            in_thinking: false,
            action: LoopAction::Stop,
        }]
    );
    let node = store.node(response).unwrap().unwrap();
    assert!(
        node.text.len() < full.len() / 4,
        "stopped after about four cycles, not at the end: {} of {} bytes",
        node.text.len(),
        full.len()
    );
    assert!(full.starts_with(&node.text), "what arrived is kept");
    assert_eq!(node.status, NodeStatus::Complete, "a loop stop is no error");
    assert_eq!(
        node.meta[LOOPING],
        json!({"period": 3, "repeats": 4, "unit": "lines", "in": "text", "action": "stop"})
    );
    assert_eq!(node.meta["stop_reason"], json!({"other": "loop"}));
}

#[tokio::test]
async fn with_warn_a_looping_answer_runs_to_its_end_and_is_reported_once() {
    let full = tea_loop(40);
    let server = ScriptedServer::start(Script::forever(streamed("", &full))).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let orch = orchestrator(&store, &server.url(), LoopAction::Warn);
    let (outcome, events) = ask(&orch).await;

    assert_eq!(outcome.error, None);
    assert_eq!(outcome.stop, StopReason::EndTurn);
    let response = outcome.response.unwrap();
    let loops = loop_events(&events);
    assert_eq!(loops.len(), 1, "{loops:?}");
    assert!(matches!(
        loops[0],
        TurnEvent::Loop { node, period: 3, repeats: 4, action: LoopAction::Warn, .. } if *node == response
    ));
    let node = store.node(response).unwrap().unwrap();
    assert_eq!(node.text, full);
    assert_eq!(node.status, NodeStatus::Complete);
    assert_eq!(
        node.meta[LOOPING],
        json!({"period": 3, "repeats": 40, "unit": "lines", "in": "text", "action": "warn"}),
        "the repeats are counted to the end"
    );
}

#[tokio::test]
async fn a_loop_in_the_thinking_stops_the_call_before_any_answer() {
    let spiral = format!(
        "The type we need is {}",
        "std::rust::RustType that is a ".repeat(200)
    );
    let server = ScriptedServer::start(Script::forever(streamed(&spiral, "The answer."))).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let orch = orchestrator(&store, &server.url(), LoopAction::Stop);
    let (outcome, events) = ask(&orch).await;

    assert!(is_loop_stop(&outcome.stop), "{:?}", outcome.stop);
    assert_eq!(outcome.response, None, "the answer never started");
    let thinking = outcome.thinking.unwrap();
    assert_eq!(
        loop_events(&events),
        vec![&TurnEvent::Loop {
            node: thinking,
            period: 4,
            repeats: 4,
            unit: LoopUnit::Words,
            in_thinking: true,
            action: LoopAction::Stop,
        }]
    );
    let node = store.node(thinking).unwrap().unwrap();
    assert_eq!(node.meta[LOOPING]["in"], json!("thinking"));
    assert!(node.text.len() < spiral.len() / 4);
}

#[tokio::test]
async fn an_ordinary_long_numbered_answer_reports_no_loop() {
    let recipe = long_recipe();
    let server = ScriptedServer::start(Script::forever(streamed(&recipe, &recipe))).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let orch = orchestrator(&store, &server.url(), LoopAction::Stop);
    let (outcome, events) = ask(&orch).await;

    assert_eq!(outcome.error, None);
    assert_eq!(outcome.stop, StopReason::EndTurn);
    assert!(
        loop_events(&events).is_empty(),
        "{:?}",
        loop_events(&events)
    );
    for id in [outcome.thinking.unwrap(), outcome.response.unwrap()] {
        let node = store.node(id).unwrap().unwrap();
        assert_eq!(node.text, recipe);
        assert!(!node.meta.contains_key(LOOPING));
    }
}

/// The real binary against the scripted server, as `glassbox ask` runs for a user.
fn glassbox(data: &std::path::Path, url: &str) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_glassbox"));
    c.env("GLASSBOX_DATA_DIR", data)
        .envs(support::bin::store_env(data))
        .env("GLASSBOX_CONFIG_DIR", data.join("config"))
        .env("OPENAI_API_KEY", "sk-test")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("GLASSBOX_PROVIDER")
        .env_remove("GLASSBOX_MODEL")
        .env("GLASSBOX_NETWORK__MAX_RETRIES", "0")
        .args(["ask", "--provider", "openai", "--base-url", url])
        .stdin(std::process::Stdio::null());
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_prints_the_loop_as_a_json_event_or_one_stderr_line() {
    let server = ScriptedServer::start(Script::forever(streamed("", &tea_loop(30)))).await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/v1", server.url());
    let data = dir.path().to_path_buf();
    let (json_out, plain) = tokio::task::spawn_blocking(move || {
        let json_out = glassbox(&data, &url)
            .args(["--json", "--no-thinking", "How do I make tea?"])
            .env("GLASSBOX_LOOP__ACTION_REMOTE", "stop")
            .output()
            .unwrap();
        let plain = glassbox(&data, &url)
            .args(["--no-thinking", "How do I make tea?"])
            .output()
            .unwrap();
        (json_out, plain)
    })
    .await
    .unwrap();

    assert!(json_out.status.success(), "{json_out:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8(json_out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let loops: Vec<&serde_json::Value> = lines.iter().filter(|v| v["type"] == "loop").collect();
    assert_eq!(loops.len(), 1, "{lines:?}");
    let done = lines.iter().find(|v| v["type"] == "done").unwrap();
    assert_eq!(loops[0]["node"], done["node"]);
    assert_eq!(
        (
            &loops[0]["period"],
            &loops[0]["repeats"],
            &loops[0]["action"]
        ),
        (&json!(3), &json!(4), &json!("stop"))
    );
    assert_eq!(done["stop_reason"], json!({"other": "loop"}));

    // Without --json a remote model is only warned about, on one stderr line.
    assert!(plain.status.success(), "{plain:?}");
    let err = String::from_utf8(plain.stderr).unwrap();
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("looping")).collect();
    assert_eq!(
        warnings,
        [
            "glassbox: warning: the model is looping in its answer (3-line cycle ×4); Ctrl-C stops it"
        ]
    );
    let printed = String::from_utf8(plain.stdout).unwrap();
    assert!(
        printed.trim_end().ends_with(tea_loop(30).trim_end()),
        "warn runs to the end"
    );
}
