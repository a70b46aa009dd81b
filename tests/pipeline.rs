//! DeepEx pipelines over real HTTP against the scripted OpenAI-compatible server: escalation
//! and the concurrent solvers, the repair retry and a failed layer, a provider error and the
//! resume that runs no layer twice, grounding through SearXNG, and `ask --mode` / `--resume`
//! as a user runs them (a kill -9 mid-run included).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use glassbox::config::{Config, DEFAULT_TOML};
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::engines::pipeline::{
    Grounder, Layer, LayerThinking, Mode, PipelineEngine, PipelineError, PipelineEvent,
    PipelineOutcome, PipelinePrompts, PipelineRequest, SearchParams, run_layers,
};
use glassbox::engines::prompts::Prompts;
use glassbox::store::{EdgeType, Node, NodeStatus, NodeType, RunId, RunKind, RunStatus, Store};
use serde_json::{Value, json};
use support::bin::{glassbox, run_until};
use support::pg::Cut;
use support::{Script, ScriptedServer, Step};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn sse(text: &str) -> String {
    let chunk = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]});
    let done = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}});
    format!("data: {chunk}\n\ndata: {done}\n\ndata: [DONE]\n\n")
}

/// An OpenAI-compatible stream answering `text`.
fn answer(text: &str) -> Step {
    Step::sse(sse(text))
}

/// The same answer, arriving after `ms`.
fn slow(text: &str, ms: u64) -> Step {
    Step::status(200)
        .header("content-type", "text/event-stream")
        .chunk_after(Duration::from_millis(ms), sse(text))
}

/// One JSON answer that every layer can read: all artifact fields have defaults.
fn every(score: u32) -> String {
    json!({
        "score": score, "facts": ["f"], "intent": "i", "issues": [],
        "missing_angles": [], "missing_elements": [], "recommended_mode": "deep",
        "contradictions": [], "logical_flow_valid": true
    })
    .to_string()
}

fn config() -> Config {
    toml::from_str(DEFAULT_TOML).unwrap()
}

fn engine_with(store: &Store, url: &str, search: SearchParams) -> PipelineEngine {
    let provider = OpenAiProvider::new(HttpSettings {
        base_url: format!("{url}/v1"),
        keys: vec![ApiKey::new("k")],
        max_retries: 0,
        ..Default::default()
    })
    .unwrap();
    PipelineEngine {
        store: store.clone(),
        provider: Arc::new(provider),
        model: "m".into(),
        params: config().pipeline,
        prompts: PipelinePrompts::from(&Prompts::builtin()),
        grounder: Grounder::new(store.clone(), None, search),
        thinking: LayerThinking::default(),
        seed: None,
    }
}

fn engine(store: &Store, url: &str) -> PipelineEngine {
    engine_with(store, url, config().search)
}

fn request(question: &str, mode: Mode) -> PipelineRequest {
    PipelineRequest {
        question: question.into(),
        mode,
        session: None,
        escalate: true,
    }
}

async fn run(
    e: &PipelineEngine,
    req: PipelineRequest,
) -> (Result<PipelineOutcome, PipelineError>, Vec<PipelineEvent>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let out = e.run(req, tx, CancellationToken::new()).await;
    let mut events = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        events.push(ev);
    }
    (out, events)
}

/// Each layer of the run and how many nodes it has.
fn nodes_per_layer(store: &Store, run: RunId) -> HashMap<Layer, usize> {
    let mut m = HashMap::new();
    for r in run_layers(store, run).unwrap() {
        *m.entry(r.layer).or_insert(0) += 1;
    }
    m
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    (dir, store)
}

/// The user message of a recorded chat request.
fn user_text(r: &support::Recorded) -> String {
    r.json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn system_text(r: &support::Recorded) -> String {
    r.json["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[tokio::test]
async fn low_confidence_escalates_deep_and_the_three_solvers_run_at_once() {
    let server = ScriptedServer::start(Script::forever(slow(&every(62), 300))).await;
    let (_d, store) = store();
    let e = engine(&store, &server.url());
    let (out, events) = run(&e, request("Should I rent or buy a flat?", Mode::Deep)).await;
    let out = out.unwrap();
    assert!(out.fin.was_escalated);
    assert_eq!(
        out.fin.escalation.as_deref(),
        Some("confidence 62 is below 70")
    );
    assert_eq!(out.fin.mode, Some(Mode::UltraDeep));
    assert_eq!(out.fin.confidence, Some(62));
    let kinds: Vec<&PipelineEvent> = events.iter().collect();
    let escalation = kinds
        .iter()
        .position(|e| matches!(e, PipelineEvent::Escalation { content } if content.contains("62")))
        .expect("an escalation event");
    let parallel = kinds
        .iter()
        .position(|e| matches!(e, PipelineEvent::ParallelStart { .. }))
        .unwrap();
    assert!(escalation < parallel);
    // All three solvers start before any of them finishes.
    let starts: Vec<usize> = kinds
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            matches!(
                e,
                PipelineEvent::LayerStart {
                    parallel_group: Some(_),
                    ..
                }
            )
        })
        .map(|(i, _)| i)
        .collect();
    let first_done = kinds
        .iter()
        .position(|e| {
            matches!(e, PipelineEvent::LayerComplete { layer, .. } if Layer::SOLVERS.contains(layer))
        })
        .unwrap();
    assert_eq!(starts.len(), 3);
    assert!(starts.iter().all(|&s| s < first_done), "{kinds:#?}");
    // Their requests reached the server together, not one answer (300 ms) apart.
    let solver_requests: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| {
            let s = system_text(r);
            s.contains("standard way") || s.contains("pessimist") || s.contains("contrarian")
        })
        .collect();
    assert_eq!(solver_requests.len(), 3);
    let first = solver_requests.iter().map(|r| r.at).min().unwrap();
    let last = solver_requests.iter().map(|r| r.at).max().unwrap();
    assert!(
        last - first < Duration::from_millis(250),
        "{:?}",
        last - first
    );
    // The solvers' temperatures are the seed's.
    let temps: Vec<f64> = solver_requests
        .iter()
        .map(|r| r.json["temperature"].as_f64().unwrap())
        .collect();
    for t in [0.3, 0.5, 0.8] {
        assert!(temps.iter().any(|x| (x - t).abs() < 1e-6), "{temps:?}");
    }
    // One node per layer; solvers branch from the deep decomposition and are aggregated.
    let per = nodes_per_layer(&store, out.run);
    assert_eq!(per.len(), 15, "{per:?}");
    assert!(per.values().all(|&n| n == 1));
    let layers = run_layers(&store, out.run).unwrap();
    let id = |l: Layer| layers.iter().find(|r| r.layer == l).unwrap().node.id;
    for s in Layer::SOLVERS {
        let branch = store
            .edges_from(id(s), Some(EdgeType::BranchesFrom))
            .unwrap();
        assert_eq!(branch[0].dst, id(Layer::DeepDecomposition));
    }
    let agg = store
        .edges_from(id(Layer::Synthesizer), Some(EdgeType::Aggregates))
        .unwrap();
    assert_eq!(agg.len(), 3);
    let run = store.run(out.run).unwrap().unwrap();
    assert_eq!(run.kind, RunKind::Pipeline);
    assert_eq!(run.status, RunStatus::Done);
    assert_eq!(run.summary["final"]["was_escalated"], true);
    let response = store.node(out.response).unwrap().unwrap();
    assert_eq!(response.kind, NodeType::Response);
}

#[tokio::test]
async fn confident_deep_runs_its_five_layers_and_stops() {
    let server = ScriptedServer::start(Script::forever(answer(&every(92)))).await;
    let (_d, store) = store();
    let e = engine(&store, &server.url());
    let (out, events) = run(&e, request("Should I rent or buy a flat?", Mode::Deep)).await;
    let out = out.unwrap();
    assert!(!out.fin.was_escalated);
    assert_eq!(out.fin.confidence, Some(92));
    let layers: Vec<Layer> = out.layers.iter().map(|(l, _)| *l).collect();
    let mut want = vec![Layer::Cortex];
    want.extend(Layer::DEEP);
    assert_eq!(layers, want);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, PipelineEvent::Escalation { .. }))
    );
    // Layers are linked in order from the query.
    let records = run_layers(&store, out.run).unwrap();
    for pair in records.windows(2) {
        let next = store
            .edges_from(pair[0].node.id, Some(EdgeType::Influences))
            .unwrap();
        assert!(next.iter().any(|e| e.dst == pair[1].node.id));
    }
    // The decomposition's artifact is stored on its node.
    let dec = records
        .iter()
        .find(|r| r.layer == Layer::Decomposition)
        .unwrap();
    assert_eq!(dec.artifact().unwrap()["intent"], "i");
    // --no-escalate: a low score does not escalate.
    let server = ScriptedServer::start(Script::forever(answer(&every(10)))).await;
    let e = engine(&store, &server.url());
    let mut req = request("Should I rent?", Mode::Deep);
    req.escalate = false;
    let (out, _) = run(&e, req).await;
    assert!(!out.unwrap().fin.was_escalated);
}

#[tokio::test]
async fn malformed_json_is_asked_again_once_then_the_layer_fails_and_the_refiner_goes_on() {
    let steps = vec![
        answer(&json!({"recommended_mode": "deep"}).to_string()),
        answer(&json!({"facts": ["a"], "intent": "i"}).to_string()),
        answer("The solution."),
        answer("not json at all"),
        answer("still not json"),
        answer("The refined answer."),
        answer(&json!({"score": 91}).to_string()),
    ];
    let server = ScriptedServer::start(Script::new(steps)).await;
    let (_d, store) = store();
    let e = engine(&store, &server.url());
    let (out, _) = run(&e, request("Should I rent?", Mode::Auto)).await;
    let out = out.unwrap();
    assert_eq!(out.answer, "The refined answer.");
    assert_eq!(out.fin.failed_layers, vec![Layer::FastCritic]);
    assert!(
        out.fin.notes.iter().any(|n| n.contains("no critique")),
        "{:?}",
        out.fin.notes
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 7);
    assert!(user_text(&reqs[4]).contains("not json at all"));
    assert!(user_text(&reqs[5]).contains("No critique is available"));
    let critic = run_layers(&store, out.run)
        .unwrap()
        .into_iter()
        .find(|r| r.layer == Layer::FastCritic)
        .unwrap();
    assert!(matches!(critic.node.status, NodeStatus::Failed { .. }));
    assert_eq!(critic.node.text, "still not json");

    // A repair that works completes the layer.
    let steps = vec![
        answer(&json!({"recommended_mode": "instant"}).to_string()),
        answer("The answer."),
    ];
    let server = ScriptedServer::start(Script::new(steps)).await;
    let e = engine(&store, &server.url());
    let (out, _) = run(&e, request("Hi there", Mode::Auto)).await;
    let out = out.unwrap();
    assert_eq!(out.fin.mode, Some(Mode::Instant));
    assert_eq!(out.fin.confidence, Some(95));
    let steps = vec![
        answer("oops"),
        answer(&json!({"recommended_mode": "instant"}).to_string()),
        answer("The answer."),
    ];
    let server = ScriptedServer::start(Script::new(steps)).await;
    let e = engine(&store, &server.url());
    let (out, _) = run(&e, request("Hi there", Mode::Auto)).await;
    let out = out.unwrap();
    assert!(out.fin.failed_layers.is_empty());
    assert_eq!(out.fin.mode, Some(Mode::Instant));
}

#[tokio::test]
async fn a_provider_error_leaves_a_run_that_resumes_without_running_a_layer_twice() {
    let steps = vec![
        answer(&json!({"recommended_mode": "deep"}).to_string()),
        answer(&json!({"facts": ["a"]}).to_string()),
        Step::json(500, r#"{"error":{"message":"boom","type":"server_error"}}"#),
    ];
    let server = ScriptedServer::start(Script::new(steps)).await;
    let (_d, store) = store();
    let e = engine(&store, &server.url());
    let (out, _) = run(&e, request("Should I rent?", Mode::Deep)).await;
    let err = out.unwrap_err();
    assert!(
        matches!(
            &err,
            PipelineError::Layer {
                layer: "primary_solver",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("glassbox ask --resume"));
    let run_id = err.resumable().unwrap();
    let failed = store.run(run_id).unwrap().unwrap();
    assert!(matches!(failed.status, RunStatus::Failed { .. }));
    let before = run_layers(&store, run_id).unwrap();
    let solver = before
        .iter()
        .find(|r| r.layer == Layer::PrimarySolver)
        .unwrap()
        .node
        .id;

    let good = ScriptedServer::start(Script::forever(answer(&every(93)))).await;
    let e = engine(&store, &good.url());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let out = e
        .resume(run_id, tx, CancellationToken::new())
        .await
        .unwrap();
    // Only the four layers left were asked for.
    assert_eq!(good.requests().len(), 4);
    let per = nodes_per_layer(&store, run_id);
    assert_eq!(per.len(), 6);
    assert!(per.values().all(|&n| n == 1), "{per:?}");
    let after = run_layers(&store, run_id).unwrap();
    let again = after
        .iter()
        .find(|r| r.layer == Layer::PrimarySolver)
        .unwrap();
    assert_eq!(again.node.id, solver, "the failed layer's node is reused");
    assert_eq!(again.node.status, NodeStatus::Complete);
    let mut resumed = 0;
    while let Ok(ev) = rx.try_recv() {
        if matches!(ev, PipelineEvent::LayerComplete { resumed: true, .. }) {
            resumed += 1;
        }
    }
    assert_eq!(resumed, 2, "cortex and decomposition replay");
    assert_eq!(store.run(run_id).unwrap().unwrap().status, RunStatus::Done);
    // A finished run does not resume.
    let (tx, _rx) = mpsc::unbounded_channel();
    let again = e.resume(out.run, tx, CancellationToken::new()).await;
    assert!(matches!(again, Err(PipelineError::Finished(_))));
    // A run another live process is running does not resume.
    let mut busy = store.run(run_id).unwrap().unwrap();
    busy.status = RunStatus::Running;
    busy.summary = json!({"worker": "pid:1"});
    store.write(|w| w.put_run(&busy)).unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    let again = e.resume(run_id, tx, CancellationToken::new()).await;
    assert!(
        matches!(again, Err(PipelineError::Busy { .. })),
        "{again:?}"
    );
}

#[tokio::test]
async fn grounding_finds_sessions_and_searxng_deduplicated_and_shows_them_to_later_layers() {
    let (_d, store) = store();
    // A past session about the topic.
    let mut s =
        glassbox::store::Session::new("Mortgage notes", glassbox::store::SessionSource::Glassbox);
    s.id = glassbox::store::SessionId::new();
    let n = Node::new(
        s.id,
        NodeType::Response,
        "Mortgage rates in 2026 rose to six percent.",
    );
    store
        .write(|w| {
            w.put_session(&s)?;
            w.put_node(&n)
        })
        .unwrap();
    let results = json!({"results": [
        {"url": "https://a.example/1", "title": "A", "content": "rates"},
        {"url": "https://a.example/1", "title": "A again", "content": "dup"},
        {"url": "https://b.example/2", "title": "B", "content": "more"},
    ]});
    let searx = ScriptedServer::start(Script::forever(Step::json(200, results.to_string()))).await;
    let cortex = json!({"recommended_mode": "instant", "needs_web_search": true,
        "search_queries": ["mortgage rates 2026", "mortgage rates"]});
    let steps = vec![answer(&cortex.to_string()), answer("Rates are high [1].")];
    let server = ScriptedServer::start(Script::new(steps)).await;
    let search = SearchParams {
        searxng_url: searx.url(),
        ..config().search
    };
    let e = engine_with(&store, &server.url(), search);
    let (out, _) = run(&e, request("What are mortgage rates now?", Mode::Auto)).await;
    let out = out.unwrap();
    let urls: Vec<&str> = out.fin.sources.iter().map(|s| s.url.as_str()).collect();
    assert!(urls.contains(&"https://a.example/1") && urls.contains(&"https://b.example/2"));
    assert_eq!(
        urls.iter().filter(|u| **u == "https://a.example/1").count(),
        1
    );
    assert!(
        out.fin.sources.iter().any(|s| s.origin == "sessions"),
        "{urls:?}"
    );
    // Two queries went to SearXNG as JSON API calls.
    let asked = searx.requests();
    assert_eq!(asked.len(), 2);
    assert!(asked[0].path.ends_with("/search"));
    // The instant layer saw the sources.
    let reqs = server.requests();
    let last = user_text(reqs.last().unwrap());
    assert!(
        last.contains("Sources:") && last.contains("https://b.example/2"),
        "{last}"
    );
    let layers: Vec<Layer> = out.layers.iter().map(|(l, _)| *l).collect();
    assert_eq!(
        layers,
        vec![Layer::Cortex, Layer::WebSearch, Layer::Instant]
    );

    // SearXNG down: a note, and the run goes on.
    drop(searx);
    let steps = vec![answer(&cortex.to_string()), answer("Fine.")];
    let server = ScriptedServer::start(Script::new(steps)).await;
    let search = SearchParams {
        searxng_url: "http://127.0.0.1:9".into(),
        ..config().search
    };
    let e = engine_with(&store, &server.url(), search);
    let (out, _) = run(&e, request("What are mortgage rates now?", Mode::Auto)).await;
    let out = out.unwrap();
    assert!(
        out.fin.notes.iter().any(|n| n.contains("SearXNG")),
        "{:?}",
        out.fin.notes
    );
}

fn ask_cmd(data: &std::path::Path, url: &str, args: &[&str]) -> std::process::Command {
    let mut c = glassbox(data);
    c.args([
        "ask",
        "--provider",
        "openai",
        "--base-url",
        &format!("{url}/v1"),
    ])
    .args(args)
    .env("OPENAI_API_KEY", "k")
    .env("GLASSBOX_NETWORK__MAX_RETRIES", "0");
    c
}

fn lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Runs `ask` with `args` off the runtime; fails the test on a bad exit, else returns its
/// `--json` events.
async fn ask_events(data: &std::path::Path, url: &str, args: &[&str]) -> Vec<Value> {
    events_of(ask_cmd(data, url, args)).await
}

/// Runs `cmd` off the runtime; fails the test on a bad exit, else returns its events.
async fn events_of(mut cmd: std::process::Command) -> Vec<Value> {
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    lines(&out.stdout)
}

#[tokio::test]
async fn ask_mode_deep_json_prints_the_seed_events() {
    let server = ScriptedServer::start(Script::forever(slow(&every(62), 150))).await;
    let dir = tempfile::tempdir().unwrap();
    let ev = ask_events(
        dir.path(),
        &server.url(),
        &["--mode", "deep", "--json", "Should I rent or buy?"],
    )
    .await;
    assert_eq!(ev[0]["type"], "start");
    assert!(ev[0]["runId"].is_string() && ev[0]["sessionId"].is_string());
    assert_eq!(ev[0]["mode"], "deep");
    let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for t in [
        "classification",
        "layer_start",
        "layer_chunk",
        "layer_artifact",
        "layer_complete",
        "escalation",
        "parallel_start",
        "final_chunk",
        "final_complete",
        "done",
    ] {
        assert!(types.contains(&t), "no {t}: {types:?}");
    }
    let esc = types.iter().position(|t| *t == "escalation").unwrap();
    let solver_starts: Vec<usize> = ev
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "layer_start" && e["parallel_group"] == "ultra_solvers")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(solver_starts.len(), 3);
    assert!(solver_starts.iter().all(|&i| i > esc));
    let start = ev.iter().find(|e| e["type"] == "layer_start").unwrap();
    assert_eq!(start["layer"], "cortex");
    assert_eq!(start["layer_label"], "Classifying");
    let fin = ev.iter().find(|e| e["type"] == "final_complete").unwrap();
    for k in ["confidence", "assumptions", "uncertainty_notes", "sources"] {
        assert!(fin.get(k).is_some(), "final_complete lacks {k}: {fin}");
    }
    assert_eq!(fin["was_escalated"], true);
    let done = ev.last().unwrap();
    assert_eq!(done["type"], "done");
    assert_eq!(done["mode"], "ultra_deep");
}

/// Cuts a deep run off after its critic (`cut`), then resumes it: no layer runs twice and
/// each leaves one node.
async fn cut_after_the_critic_then_resume(cut: Cut) {
    let pg = (cut == Cut::StoreLost).then(|| support::pg::TempPostgres::start().unwrap());
    let store_url = pg.as_ref().map(|pg| pg.socket_url(&pg.create_database()));
    let server = ScriptedServer::start(Script::forever(slow(&every(95), 400))).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_path_buf();
    let command = {
        let (data, url, store_url) = (data.clone(), server.url(), store_url.clone());
        move |args: &[&str]| {
            let mut c = ask_cmd(&data, &url, args);
            if let Some(u) = &store_url {
                c.env("GLASSBOX_STORE_URL", u);
            }
            c
        }
    };
    let first = command.clone();
    let (run_id, pg) = tokio::task::spawn_blocking(move || {
        let started = run_until(first(&["--mode", "deep", "--json", "Rent or buy?"]), |v| {
            v["type"] == "layer_complete" && v["layer"] == "fast_critic"
        });
        let run = match &pg {
            None => started.kill(),
            Some(pg) => {
                pg.stop();
                let run = started.fails_on_lost_store();
                pg.start_again();
                run
            }
        };
        (run, pg)
    })
    .await
    .unwrap();
    assert!(!run_id.is_empty());
    let before = server.requests().len();
    let suffix = run_id[run_id.len() - 8..].to_string();
    let ev = events_of(command(&["--resume", &suffix, "--json"])).await;
    assert_eq!(ev[0]["type"], "start");
    assert_eq!(ev[0]["resumed"], true);
    let replayed: Vec<&str> = ev
        .iter()
        .filter(|e| e["type"] == "layer_complete" && e["resumed"] == true)
        .map(|e| e["layer"].as_str().unwrap())
        .collect();
    assert_eq!(
        replayed,
        vec!["cortex", "decomposition", "primary_solver", "fast_critic"]
    );
    // The resume asked only for the refiner (maybe cut mid-answer) and the gate.
    assert_eq!(server.requests().len() - before, 2);
    let store = match &store_url {
        Some(url) => support::store::open_url(url).unwrap(),
        None => support::store::open(&data.join("glassbox.redb")).unwrap(),
    };
    let run: RunId = run_id.parse().unwrap();
    let per = nodes_per_layer(&store, run);
    assert_eq!(per.len(), 6, "{per:?}");
    assert!(per.values().all(|&n| n == 1), "{per:?}");
    assert_eq!(store.run(run).unwrap().unwrap().status, RunStatus::Done);
    drop(pg);
}

#[tokio::test]
async fn kill_9_after_the_critic_then_resume_leaves_one_node_per_layer() {
    cut_after_the_critic_then_resume(Cut::Kill).await;
}

#[tokio::test]
async fn a_lost_store_connection_after_the_critic_fails_the_run_resumably() {
    cut_after_the_critic_then_resume(Cut::StoreLost).await;
}

#[tokio::test]
async fn bad_input_gets_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        let a = glassbox(&data)
            .args(["ask", "--resume", "nope"])
            .output()
            .unwrap();
        let b = glassbox(&data)
            .args(["ask", "--mode", "sideways", "q"])
            .output()
            .unwrap();
        let c = glassbox(&data)
            .args(["ask", "--mode", "deep", "--effort", "high", "q"])
            .output()
            .unwrap();
        (a, b, c)
    })
    .await
    .unwrap();
    for (o, want) in [
        (&out.0, "run"),
        (&out.1, "sideways"),
        (&out.2, "[pipeline.layers]"),
    ] {
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{err}");
    }
}

#[tokio::test]
async fn an_instant_stream_with_no_content_falls_back_to_a_plain_request() {
    let steps = vec![
        answer(&json!({"recommended_mode": "instant"}).to_string()),
        Step::status(200).header("content-type", "text/event-stream"),
        Step::fixture(support::fixtures().join("openai_nonstream.json")),
    ];
    let server = ScriptedServer::start(Script::new(steps)).await;
    let (_d, store) = store();
    let e = engine(&store, &server.url());
    let (out, _) = run(&e, request("Say hello", Mode::Instant)).await;
    let out = out.unwrap();
    assert_eq!(out.answer, "Non-streamed answer.");
    assert_eq!(out.fin.confidence, Some(95));
    let reqs = server.requests();
    assert_eq!(reqs[2].json["stream"], json!(false));
    let instant = run_layers(&store, out.run)
        .unwrap()
        .into_iter()
        .find(|r| r.layer == Layer::Instant)
        .unwrap();
    assert_eq!(instant.node.text, "Non-streamed answer.");
}

#[tokio::test]
async fn cancelling_interrupts_the_layer_and_the_run_resumes_from_it() {
    let server = ScriptedServer::start(Script::forever(slow(&every(96), 300))).await;
    let (_d, store) = store();
    let e = engine(&store, &server.url());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let task = {
        let cancel = cancel.clone();
        let req = request("Rent or buy?", Mode::Deep);
        async move { e.run(req, tx, cancel).await }
    };
    let watcher = async {
        while let Some(ev) = rx.recv().await {
            if matches!(
                ev,
                PipelineEvent::LayerStart {
                    layer: Layer::PrimarySolver,
                    ..
                }
            ) {
                cancel.cancel();
            }
        }
    };
    let (out, ()) = tokio::join!(task, watcher);
    let run_id = match out {
        Err(PipelineError::Cancelled(r)) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        store.run(run_id).unwrap().unwrap().status,
        RunStatus::Interrupted
    );
    let solver = run_layers(&store, run_id)
        .unwrap()
        .into_iter()
        .find(|r| r.layer == Layer::PrimarySolver)
        .unwrap();
    assert_eq!(solver.node.status, NodeStatus::Interrupted);
    let e = engine(&store, &server.url());
    let (tx, _rx) = mpsc::unbounded_channel();
    let out = e
        .resume(run_id, tx, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.fin.confidence, Some(96));
    assert!(nodes_per_layer(&store, run_id).values().all(|&n| n == 1));
}

#[tokio::test]
async fn the_configured_default_mode_runs_without_a_flag_and_plain_overrides_it() {
    let server = ScriptedServer::start(Script::forever(answer(&every(97)))).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_path_buf();
    std::fs::create_dir_all(data.join("config")).unwrap();
    std::fs::write(
        data.join("config/config.toml"),
        "[pipeline]\ndefault_mode = \"instant\"\n",
    )
    .unwrap();
    let url = server.url();
    let (pipeline, plain) = tokio::task::spawn_blocking(move || {
        let a = ask_cmd(&data, &url, &["--json", "Hello?"])
            .output()
            .unwrap();
        let b = ask_cmd(&data, &url, &["--json", "--mode", "plain", "Hello?"])
            .output()
            .unwrap();
        (a, b)
    })
    .await
    .unwrap();
    assert!(
        pipeline.status.success(),
        "{}",
        String::from_utf8_lossy(&pipeline.stderr)
    );
    let ev = lines(&pipeline.stdout);
    assert_eq!(ev[0]["type"], "start");
    assert_eq!(ev[0]["mode"], "instant");
    assert_eq!(ev.last().unwrap()["confidence"], 95);
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    let ev = lines(&plain.stdout);
    assert!(ev.iter().all(|e| e["type"] != "start"));
    assert_eq!(ev.last().unwrap()["type"], "done");
}

#[tokio::test]
async fn a_continued_session_sends_its_history_to_every_layer() {
    let server = ScriptedServer::start(Script::forever(answer(&every(97)))).await;
    let (_d, store) = store();
    let e = engine(&store, &server.url());
    let (first, _) = run(&e, request("First question?", Mode::Instant)).await;
    let first = first.unwrap();
    let mut req = request("Second question?", Mode::Instant);
    req.session = Some(first.session);
    let (second, _) = run(&e, req).await;
    let second = second.unwrap();
    assert_eq!(second.session, first.session);
    let reqs = server.requests();
    let last = &reqs[reqs.len() - 1];
    let msgs = last.json["messages"].as_array().unwrap();
    let texts: Vec<&str> = msgs.iter().filter_map(|m| m["content"].as_str()).collect();
    assert!(texts.contains(&"First question?"), "{texts:?}");
    assert!(texts.contains(&first.answer.as_str()), "{texts:?}");
    // The new query follows the first answer.
    let next = store
        .edges_from(first.response, Some(EdgeType::Influences))
        .unwrap();
    assert!(next.iter().any(|e| e.dst == second.query));
}
