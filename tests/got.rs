//! Graph of Thoughts against the scripted server: the engine calls the model one call at a
//! time in a fixed order, so each script lists generations and scores in that order. Any
//! extra call would hit "script exhausted" and fail the run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use glassbox::config::{Config, DEFAULT_TOML};
use glassbox::engines::got::{
    CallSettings, GotControl, GotEngine, GotEvent, GotParams, GotPrompts, GotRequest, GotResult,
    Strategy, ThoughtState,
};
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::store::{EdgeType, NodeId, NodeType, RunKind, RunStatus, Store};
use serde_json::json;
use support::{Script, ScriptedServer, Step};
use tokio::sync::mpsc;

/// An OpenAI-compatible stream answering `text`, 15 tokens in all.
fn answer(text: &str) -> Step {
    let chunk = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]});
    let done = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}});
    Step::sse(format!("data: {chunk}\n\ndata: {done}\n\ndata: [DONE]\n\n"))
}

fn gen_(thoughts: &[&str]) -> Step {
    answer(&format!("Here: {}", json!({ "thoughts": thoughts })))
}

fn score(s: f64) -> Step {
    answer(&json!({"score": s, "reasoning": "because"}).to_string())
}

fn config() -> Config {
    toml::from_str(DEFAULT_TOML).unwrap()
}

fn engine(store: &Store, url: &str) -> GotEngine {
    let provider = OpenAiProvider::new(HttpSettings {
        base_url: format!("{url}/v1"),
        keys: vec![ApiKey::new("k")],
        max_retries: 0,
        ..Default::default()
    })
    .unwrap();
    GotEngine {
        store: store.clone(),
        provider: Arc::new(provider),
        call: CallSettings::new("m", 256),
        prompts: GotPrompts {
            generate: "GENERATE {k}".into(),
            evaluate: "EVALUATE".into(),
            aggregate: "AGGREGATE".into(),
        },
        config: config().got,
    }
}

fn params(strategy: Strategy, depth: u32, k: u32, max: u32, aggregation: bool) -> GotParams {
    GotParams {
        strategy,
        max_depth: depth,
        branching_factor: k,
        max_thoughts: max,
        enable_aggregation: aggregation,
        ..GotParams::from_config(&config().got)
    }
}

struct Ran {
    result: GotResult,
    events: Vec<GotEvent>,
    server: ScriptedServer,
    store: Store,
    _dir: tempfile::TempDir,
}

async fn run(steps: Vec<Step>, p: GotParams) -> Ran {
    let server = ScriptedServer::start(Script::new(steps)).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let e = engine(&store, &server.url());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_ctl, controls) = mpsc::unbounded_channel();
    let req = GotRequest {
        problem: "P".into(),
        session: None,
        params: p,
        start_paused: false,
    };
    let result = e.run(req, tx, controls, Default::default()).await.unwrap();
    let mut events = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        events.push(ev);
    }
    Ran {
        result,
        events,
        server,
        store,
        _dir: dir,
    }
}

fn content(r: &GotResult, id: NodeId) -> String {
    r.thoughts
        .iter()
        .find(|t| t.id == id)
        .unwrap()
        .content
        .clone()
}

fn expanded(r: &GotResult) -> Vec<String> {
    r.expanded.iter().map(|&id| content(r, id)).collect()
}

fn thought<'a>(r: &'a GotResult, text: &str) -> &'a glassbox::engines::got::Thought {
    r.thoughts.iter().find(|t| t.content == text).unwrap()
}

/// The user message of each generation request, in order.
fn generation_prompts(server: &ScriptedServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.json.to_string().contains("GENERATE"))
        .map(|r| {
            let msgs = r.json["messages"].as_array().unwrap();
            msgs.last().unwrap()["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn bfs_expands_level_by_level_best_first_keeping_the_top_k() {
    let ran = run(
        vec![
            gen_(&["A", "B"]),
            score(0.6),
            score(0.9),
            // level 1, best first: B then A
            gen_(&["B1", "B2"]),
            score(0.5),
            score(0.2),
            gen_(&["A1", "A2"]),
            score(0.7),
            score(0.4),
            // level 2 keeps the top 2 (A1, B1); A1 first; then the thought limit (9) is hit
            gen_(&["A11", "A12"]),
            score(0.8),
            score(0.95),
        ],
        params(Strategy::Bfs, 3, 2, 9, false),
    )
    .await;
    let r = &ran.result;
    assert_eq!(expanded(r), vec!["P", "B", "A", "A1"]);
    assert_eq!(r.stats.total_thoughts, 9);
    assert_eq!(r.stats.thoughts_explored, 4);
    assert_eq!(r.stats.thoughts_pruned, 1);
    assert_eq!(thought(r, "B2").state, ThoughtState::Rejected);
    assert_eq!(r.stats.max_depth_reached, 3);
    assert_eq!(r.stats.total_tokens, 12 * 15);
    assert_eq!(r.answer, "A12");
    assert_eq!(r.confidence, 0.95);
    assert_eq!(r.graph_state.edge_count, 8);
    assert_eq!(
        r.graph_state
            .best_thoughts
            .iter()
            .map(|&id| content(r, id))
            .collect::<Vec<_>>(),
        vec!["A12", "B", "A11"]
    );
    assert_eq!(ran.server.requests().len(), 12);
    // Each generation saw the chain it extends.
    let prompts = generation_prompts(&ran.server);
    assert!(prompts[0].contains("(none yet)"));
    assert!(prompts[1].contains("1. B") && !prompts[1].contains("1. A"));
    assert!(prompts[2].contains("1. A"));
    assert!(prompts[3].contains("1. A\n2. A1"));
    assert!(!r.interrupted);
}

#[tokio::test]
async fn dfs_follows_the_best_child_and_backtracks_when_a_branch_dies() {
    let ran = run(
        vec![
            gen_(&["A", "B"]),
            score(0.6),
            score(0.9),
            // B is best, but both its children are pruned: back to A
            gen_(&["B1", "B2"]),
            score(0.1),
            score(0.2),
            gen_(&["A1", "A2"]),
            score(0.7),
            score(0.5),
            gen_(&["A11", "A12"]),
            score(0.8),
            score(0.4),
            // A11 sits at the maximum depth: the search is done
        ],
        params(Strategy::Dfs, 3, 2, 50, false),
    )
    .await;
    let r = &ran.result;
    assert_eq!(expanded(r), vec!["P", "B", "A", "A1"]);
    assert_eq!(r.stats.thoughts_pruned, 2);
    assert_eq!(r.stats.max_depth_reached, 3);
    assert_eq!(thought(r, "A2").state, ThoughtState::Verified);
    assert_eq!(ran.server.requests().len(), 12);
    let prompts = generation_prompts(&ran.server);
    assert!(prompts[3].contains("1. A\n2. A1"));
}

#[tokio::test]
async fn best_first_always_expands_the_highest_scored_open_thought() {
    let ran = run(
        vec![
            gen_(&["A", "B"]),
            score(0.6),
            score(0.9),
            gen_(&["B1", "B2"]),
            score(0.5),
            score(0.95),
            // B2 (0.95) beats A (0.6) although A is shallower
            gen_(&["B21", "B22"]),
            score(0.4),
            score(0.35),
            // depth-3 thoughts cannot be expanded: A is next
            gen_(&["A1", "A2"]),
            score(0.2),
            score(0.1),
        ],
        params(Strategy::BestFirst, 3, 2, 9, false),
    )
    .await;
    let r = &ran.result;
    assert_eq!(expanded(r), vec!["P", "B", "B2", "A"]);
    assert_eq!(r.stats.total_thoughts, 9);
    assert_eq!(r.stats.thoughts_pruned, 2);
    assert_eq!(r.answer, "B2");
    assert_eq!(ran.server.requests().len(), 12);
}

#[tokio::test]
async fn aggregation_merges_the_frontier_into_a_verified_synthesis() {
    let ran = run(
        vec![
            gen_(&["A", "B"]),
            score(0.6),
            score(0.8),
            answer(&json!({"thought": "S", "reasoning": "both"}).to_string()),
            score(0.9),
        ],
        params(Strategy::Bfs, 1, 2, 50, true),
    )
    .await;
    let r = &ran.result;
    assert_eq!(r.stats.aggregations_made, 1);
    assert_eq!(r.answer, "S");
    let s = thought(r, "S");
    assert_eq!(s.state, ThoughtState::Verified);
    assert_eq!(s.sources.len(), 2);
    assert_eq!(thought(r, "A").state, ThoughtState::Aggregated);
    assert_eq!(thought(r, "B").state, ThoughtState::Aggregated);
    // The merge request listed both thoughts, best first.
    let reqs = ran.server.requests();
    let agg = reqs[3].json.to_string();
    assert!(
        agg.contains("AGGREGATE") && agg.contains("Thought 1: B") && agg.contains("Thought 2: A")
    );
    // Stored: every thought a got_thought node, branches_from child → parent, aggregates
    // synthesis → sources, and a finished got run.
    let nodes = ran.store.session_nodes(r.session).unwrap();
    assert_eq!(nodes.len(), 4);
    assert!(nodes.iter().all(|n| n.kind == NodeType::GotThought));
    let a = nodes.iter().find(|n| n.text == "A").unwrap();
    assert_eq!(a.meta["state"], "aggregated");
    assert_eq!(a.meta["score"], 0.6);
    assert_eq!(a.meta["depth"], 1);
    let root = nodes.iter().find(|n| n.text == "P").unwrap();
    let up = ran
        .store
        .edges_from(a.id, Some(EdgeType::BranchesFrom))
        .unwrap();
    assert_eq!(up.len(), 1);
    assert_eq!(up[0].dst, root.id);
    let merged = ran
        .store
        .edges_from(s.id, Some(EdgeType::Aggregates))
        .unwrap();
    assert_eq!(merged.len(), 2);
    let runs = ran.store.session_runs(r.session).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].kind, RunKind::Got);
    assert_eq!(runs[0].status, RunStatus::Done);
    assert_eq!(runs[0].summary["answer"], "S");
    assert_eq!(runs[0].params["params"]["branchingFactor"], 2);
    assert_eq!(r.graph_state.edge_count, 4);
}

#[tokio::test]
async fn a_rejected_synthesis_leaves_its_sources_alone() {
    let ran = run(
        vec![
            gen_(&["A", "B"]),
            score(0.6),
            score(0.8),
            answer(&json!({"thought": "S"}).to_string()),
            score(0.1),
        ],
        params(Strategy::Bfs, 1, 2, 50, true),
    )
    .await;
    let r = &ran.result;
    assert_eq!(thought(r, "S").state, ThoughtState::Rejected);
    assert_eq!(thought(r, "B").state, ThoughtState::Verified);
    assert_eq!(r.answer, "B");
}

#[tokio::test]
async fn unreadable_scores_count_as_zero_and_are_pruned() {
    let ran = run(
        vec![gen_(&["A", "B"]), answer("no idea"), score(0.5)],
        params(Strategy::Bfs, 1, 2, 50, false),
    )
    .await;
    assert_eq!(thought(&ran.result, "A").score, Some(0.0));
    assert_eq!(thought(&ran.result, "A").state, ThoughtState::Rejected);
    assert_eq!(ran.result.answer, "B");
}

#[tokio::test]
async fn the_token_budget_stops_the_search() {
    let mut p = params(Strategy::Bfs, 3, 2, 50, false);
    p.token_budget = Some(40);
    let ran = run(vec![gen_(&["A", "B"]), score(0.6), score(0.9)], p).await;
    assert_eq!(expanded(&ran.result), vec!["P"]);
    assert!(ran.result.interrupted);
    assert!(ran.events.iter().any(|e| matches!(
        e,
        GotEvent::BudgetExhausted {
            used: 45,
            limit: 40
        }
    )));
    let runs = ran.store.session_runs(ran.result.session).unwrap();
    assert_eq!(runs[0].status, RunStatus::Interrupted);
}

#[tokio::test]
async fn out_of_range_parameters_fail_before_any_call() {
    let server = ScriptedServer::start(Script::new(vec![])).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let e = engine(&store, &server.url());
    for (p, msg) in [
        (
            params(Strategy::Bfs, 21, 3, 50, true),
            "maxDepth = 21 is out of range (allowed 1–20)",
        ),
        (
            params(Strategy::Bfs, 5, 11, 50, true),
            "branchingFactor = 11 is out of range (allowed 1–10)",
        ),
        (
            params(Strategy::Bfs, 5, 3, 0, true),
            "maxThoughts = 0 is out of range (allowed 1–100)",
        ),
    ] {
        let (tx, _rx) = mpsc::unbounded_channel();
        let (_ctl, controls) = mpsc::unbounded_channel();
        let req = GotRequest {
            problem: "P".into(),
            session: None,
            params: p,
            start_paused: false,
        };
        let err = e
            .run(req, tx, controls, Default::default())
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), msg);
    }
    assert!(server.requests().is_empty());
}

/// Waits for the next `Paused`, returning the thoughts reported on the way.
async fn until_paused(
    rx: &mut mpsc::UnboundedReceiver<GotEvent>,
) -> Vec<glassbox::engines::got::Thought> {
    let mut seen = Vec::new();
    loop {
        match rx.recv().await.expect("the search ended before pausing") {
            GotEvent::Paused => return seen,
            GotEvent::Thought(t) => seen.push(t),
            _ => {}
        }
    }
}

#[tokio::test]
async fn pin_prune_and_boost_change_what_best_first_expands() {
    // Unsteered, best-first would expand P, B (0.9), A (0.6) and never C (0.1, pruned).
    let server = ScriptedServer::start(Script::new(vec![
        gen_(&["A", "B", "C"]),
        score(0.6),
        score(0.9),
        score(0.1),
        // boosted A goes first
        gen_(&["A1", "A2"]),
        score(0.5),
        score(0.6),
        // then pinned C; B was pruned by hand
        gen_(&["C1", "C2"]),
        score(0.7),
        score(0.8),
    ]))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let e = engine(&store, &server.url());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (ctl, controls) = mpsc::unbounded_channel();
    let req = GotRequest {
        problem: "P".into(),
        session: None,
        params: params(Strategy::BestFirst, 2, 3, 50, false),
        start_paused: true,
    };
    let task = tokio::spawn(async move { e.run(req, tx, controls, Default::default()).await });
    until_paused(&mut rx).await;
    ctl.send(GotControl::Step).unwrap();
    let seen = until_paused(&mut rx).await;
    let id = |name: &str| seen.iter().rev().find(|t| t.content == name).unwrap().id;
    let (a, b, c) = (id("A"), id("B"), id("C"));
    assert_eq!(
        seen.iter().rev().find(|t| t.id == c).unwrap().state,
        ThoughtState::Rejected
    );
    ctl.send(GotControl::Boost { id: a, amount: 0.5 }).unwrap();
    ctl.send(GotControl::Prune(b)).unwrap();
    ctl.send(GotControl::Pin(c)).unwrap();
    ctl.send(GotControl::Resume).unwrap();
    while rx.recv().await.is_some() {}
    let r = task.await.unwrap().unwrap();
    assert_eq!(expanded(&r), vec!["P", "A", "C"]);
    assert_eq!(thought(&r, "B").state, ThoughtState::Rejected);
    assert_eq!(thought(&r, "C").state, ThoughtState::Verified);
    assert!(thought(&r, "C").pinned);
    assert_eq!(thought(&r, "A").boost, 0.5);
    assert_eq!(r.stats.thoughts_pruned, 1);
    assert_eq!(r.answer, "C2");
    let stored = store.node(b).unwrap().unwrap();
    assert_eq!(stored.meta["state"], "rejected");
    let stored = store.node(c).unwrap().unwrap();
    assert_eq!(stored.meta["pinned"], true);
    assert_eq!(server.requests().len(), 10);
}

#[tokio::test]
async fn a_pinned_thought_survives_the_top_k_cut_in_bfs() {
    let server = ScriptedServer::start(Script::new(vec![
        gen_(&["A", "B"]),
        score(0.6),
        score(0.9),
        gen_(&["B1", "B2"]),
        score(0.8),
        score(0.7),
        gen_(&["A1", "A2"]),
        score(0.35),
        score(0.5),
        // level 2: the top 2 (B1, B2) and the pinned A1, not A2
        gen_(&["x1", "x2"]),
        score(0.5),
        score(0.5),
        gen_(&["y1", "y2"]),
        score(0.5),
        score(0.5),
        gen_(&["z1", "z2"]),
        score(0.5),
        score(0.5),
    ]))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let e = engine(&store, &server.url());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (ctl, controls) = mpsc::unbounded_channel();
    let req = GotRequest {
        problem: "P".into(),
        session: None,
        params: params(Strategy::Bfs, 3, 2, 13, false),
        start_paused: true,
    };
    let task = tokio::spawn(async move { e.run(req, tx, controls, Default::default()).await });
    let mut seen = until_paused(&mut rx).await;
    // Step through the root, B and A, one expansion each.
    for _ in 0..3 {
        ctl.send(GotControl::Step).unwrap();
        seen.extend(until_paused(&mut rx).await);
    }
    let a1 = seen.iter().find(|t| t.content == "A1").unwrap().id;
    ctl.send(GotControl::Pin(a1)).unwrap();
    ctl.send(GotControl::Resume).unwrap();
    while rx.recv().await.is_some() {}
    let r = task.await.unwrap().unwrap();
    assert_eq!(expanded(&r), vec!["P", "B", "A", "B1", "B2", "A1"]);
    assert!(thought(&r, "A1").pinned);
    assert_eq!(r.stats.total_thoughts, 13);
    assert_eq!(server.requests().len(), 18);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_headless_command_prints_the_contract_shape() {
    let server =
        ScriptedServer::start(Script::new(vec![gen_(&["A", "B"]), score(0.6), score(0.9)])).await;
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    let data = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_glassbox"))
            .env("GLASSBOX_DATA_DIR", &data)
            .envs(support::bin::store_env(&data))
            .env("GLASSBOX_CONFIG_DIR", data.join("config"))
            .env("OPENAI_API_KEY", "k")
            .env("GLASSBOX_NETWORK__MAX_RETRIES", "0")
            .env_remove("ANTHROPIC_API_KEY")
            .args(["--provider", "openai", "--base-url", &format!("{url}/v1")])
            .args(["got", "P", "--strategy", "best_first", "--max-depth", "1"])
            .args(["--branching", "2", "--no-aggregation", "--json"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["answer"], "B");
    assert_eq!(v["confidence"], 0.9);
    assert_eq!(v["stats"]["totalThoughts"], 3);
    assert_eq!(v["stats"]["thoughtsExplored"], 1);
    assert_eq!(v["stats"]["totalTokens"], 45);
    assert_eq!(v["graphState"]["edgeCount"], 2);
    assert_eq!(v["graphState"]["bestThoughts"].as_array().unwrap().len(), 2);
    assert!(
        v["reasoningSummary"]
            .as_str()
            .unwrap()
            .contains("best_first")
    );
    assert!(v["sessionId"].is_string() && v["runId"].is_string());
    assert_eq!(v["nodeIds"].as_array().unwrap().len(), 3);

    // Out of range: a clear one-line error, no model call.
    let data = dir.path().to_path_buf();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_glassbox"))
        .env("GLASSBOX_DATA_DIR", &data)
        .envs(support::bin::store_env(&data))
        .env("GLASSBOX_CONFIG_DIR", data.join("config"))
        .args(["got", "P", "--max-depth", "30"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("maxDepth = 30 is out of range (allowed 1–20)"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 3);
}
