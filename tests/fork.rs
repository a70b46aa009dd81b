//! ThinkFork against the scripted OpenAI-compatible server: concurrent branches with one
//! failing, debate with and without consensus, every steer action, JSON repair, checkpoints
//! with verdict propagation, forking from inside a thinking trace; and the real local model
//! through the binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use glassbox::engines::fork::{
    ForkEngine, ForkError, ForkEvent, ForkPrompts, ForkRequest, ForkSettings, ForkStyle, Guidance,
    Lane, SteerAction, SteerResult, Verdict, record_verdict,
};
use glassbox::engines::llm::Effort;
use glassbox::engines::llm::ThinkingMode;
use glassbox::engines::llm::TurnPlan;
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::engines::prompts::Prompts;
use glassbox::store::{
    Edge, EdgeType, Node, NodeId, NodeStatus, NodeType, RunKind, Session, SessionSource, Store,
};
use serde_json::{Value, json};
use support::{Recorded, Script, ScriptedServer, Step};
use tokio::sync::mpsc;

// ---- scripted responses -------------------------------------------------------------

fn frame(v: Value) -> String {
    format!("data: {v}\n\n")
}

/// An OpenAI-compatible stream answering `text` (with optional reasoning first).
fn sse_text(reasoning: &str, text: &str) -> String {
    let mut s = String::new();
    if !reasoning.is_empty() {
        s += &frame(
            json!({"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":reasoning}}]}),
        );
    }
    // Split the text in two deltas, as a real stream would.
    let mid = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    for part in [&text[..mid], &text[mid..]] {
        s += &frame(json!({"choices":[{"index":0,"delta":{"content":part}}]}));
    }
    s += &frame(json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}));
    s += &frame(json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":7}}));
    s += "data: [DONE]\n\n";
    s
}

/// An OpenAI-compatible stream calling tool `name` with `args`.
fn sse_tool(name: &str, args: &Value) -> String {
    let args = args.to_string();
    let (a, b) = args.split_at(args.len() / 2);
    let mut s = frame(
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":name,"arguments":a}}]}}]}),
    );
    s += &frame(
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":b}}]}}]}),
    );
    s += &frame(json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}));
    s += &frame(json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":9}}));
    s += "data: [DONE]\n\n";
    s
}

/// A whole SSE body sent after `ms` milliseconds.
fn delayed(ms: u64, body: String) -> Step {
    Step::status(200)
        .header("content-type", "text/event-stream")
        .chunk_after(Duration::from_millis(ms), body)
}

fn conclusion(text: &str, confidence: f64) -> Value {
    json!({"conclusion": text, "confidence": confidence, "keyInsights": ["insight"],
           "risks": ["risk"], "opportunities": ["opportunity"], "assumptions": ["assumption"]})
}

fn comparison() -> Value {
    json!({
        "convergencePoints": [{"topic": "caching", "agreementLevel": "partial",
                               "styles": ["conservative", "aggressive"], "summary": "both cache"}],
        "divergencePoints": [{"topic": "rewrite", "positions": [
            {"style": "conservative", "position": "no", "confidence": 0.8},
            {"style": "aggressive", "position": "yes", "confidence": 0.6}],
            "significance": "high"}],
        "metaInsight": "risk appetite decides",
        "recommendedApproach": {"style": "balanced", "rationale": "middle", "confidence": 0.7}
    })
}

fn debate(response: &str, confidence: f64, changed: bool) -> Value {
    json!({"response": response, "confidence": confidence, "positionChanged": changed,
           "counterpoints": ["c"], "concessions": ["k"]})
}

fn text_step(v: &Value) -> Step {
    Step::sse(sse_text("", &format!("Here you go:\n```json\n{v}\n```")))
}

// ---- harness --------------------------------------------------------------------------

struct Harness {
    server: ScriptedServer,
    store: Store,
    engine: ForkEngine,
    _dir: tempfile::TempDir,
}

async fn harness(steps: Vec<Step>, use_tools: bool) -> Harness {
    let server = ScriptedServer::start(Script::new(steps)).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let provider = OpenAiProvider::new(HttpSettings {
        base_url: format!("{}/v1", server.url()),
        keys: vec![ApiKey::new("k")],
        max_retries: 0,
        ..Default::default()
    })
    .unwrap();
    let mut settings = ForkSettings::new("test-model");
    settings.use_tools = use_tools;
    settings.max_plan = TurnPlan {
        thinking: ThinkingMode::Budget { tokens: 4096 },
        effort: Some(Effort::Max),
        max_tokens: 2048,
    };
    let engine = ForkEngine::new(
        store.clone(),
        Arc::new(provider),
        ForkPrompts::from_prompts(&Prompts::load(dir.path())),
        settings,
    );
    Harness {
        server,
        store,
        engine,
        _dir: dir,
    }
}

fn events() -> (
    mpsc::UnboundedSender<ForkEvent>,
    mpsc::UnboundedReceiver<ForkEvent>,
) {
    mpsc::unbounded_channel()
}

fn drain(rx: &mut mpsc::UnboundedReceiver<ForkEvent>) -> Vec<ForkEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

fn system_of(r: &Recorded) -> String {
    r.json["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn last_user(r: &Recorded) -> String {
    let msgs = r.json["messages"].as_array().unwrap();
    msgs.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Which branch style sent a request (the style prompt names it in capitals).
fn style_of(r: &Recorded) -> Option<ForkStyle> {
    let sys = system_of(r);
    ForkStyle::ALL
        .into_iter()
        .find(|s| sys.contains(&format!("{} branch", s.as_str().to_ascii_uppercase())))
}

fn req(styles: &[ForkStyle]) -> ForkRequest {
    ForkRequest {
        session: None,
        query: "Should we rewrite the billing service?".into(),
        styles: styles.to_vec(),
        guidance: Vec::new(),
    }
}

fn edge_kinds_from(store: &Store, node: NodeId) -> Vec<(EdgeType, NodeId)> {
    store
        .edges_from(node, None)
        .unwrap()
        .into_iter()
        .map(|e| (e.kind, e.dst))
        .collect()
}

use ForkStyle::{Aggressive, Balanced, Conservative, Contrarian};

// ---- fork -----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn branches_run_concurrently_finish_fastest_first_and_fail_alone() {
    let delays = [300u64, 100, 0, 200];
    let mut steps: Vec<Step> = delays
        .iter()
        .enumerate()
        .map(|(i, &ms)| {
            if i == 2 {
                Step::json(400, r#"{"error":{"message":"bad branch"}}"#)
            } else {
                delayed(
                    ms,
                    sse_text("", &conclusion(&format!("answer {i}"), 0.8).to_string()),
                )
            }
        })
        .collect();
    steps.push(text_step(&comparison()));
    let h = harness(steps, false).await;
    let (tx, mut rx) = events();
    let mut r = req(&[Conservative, Aggressive, Balanced, Contrarian]);
    r.guidance = vec![Guidance {
        style: Contrarian,
        guidance: "Question the premise.".into(),
    }];
    let out = h.engine.fork(r, &tx).await.unwrap();
    let evs = drain(&mut rx);

    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 5);
    let got: Vec<ForkStyle> = reqs[..4].iter().map(|r| style_of(r).unwrap()).collect();
    // Results land on the branch that sent each request.
    for (i, style) in got.iter().enumerate() {
        let b = out
            .data
            .branches
            .iter()
            .find(|b| b.style == *style)
            .unwrap();
        if i == 2 {
            assert_eq!(b.body.confidence, 0.0);
            assert!(b.error.as_deref().unwrap().contains("400"), "{:?}", b.error);
            let node = h.store.node(b.node_id.unwrap()).unwrap().unwrap();
            assert!(matches!(node.status, NodeStatus::Failed { .. }));
        } else {
            assert_eq!(b.error, None);
            assert_eq!(b.body.conclusion, format!("answer {i}"));
            assert_eq!(b.body.key_insights, vec!["insight"]);
            assert_eq!(b.body.risks, vec!["risk"]);
        }
    }
    // Branches are reported in request order of styles asked, and finish fastest first.
    let done: Vec<ForkStyle> = evs
        .iter()
        .filter_map(|e| match e {
            ForkEvent::BranchDone(b) => Some(b.style),
            _ => None,
        })
        .collect();
    assert_eq!(done, vec![got[2], got[1], got[3], got[0]]);
    let last_branch = evs
        .iter()
        .rposition(|e| matches!(e, ForkEvent::BranchDone(_)))
        .unwrap();
    let cmp = evs
        .iter()
        .position(|e| matches!(e, ForkEvent::ComparisonDone(_)))
        .unwrap();
    assert!(cmp > last_branch);
    // Deltas stream per lane before that lane is done.
    assert!(evs.iter().any(|e| matches!(
        e,
        ForkEvent::Delta {
            lane: Lane::Branch(_),
            thinking: false,
            ..
        }
    )));

    // The comparison saw only the three successful branches.
    let cmp_req = last_user(&reqs[4]);
    assert!(!cmp_req.contains(&format!("- {} (confidence", got[2])));
    for s in [got[0], got[1], got[3]] {
        assert!(cmp_req.contains(&format!("- {s} (confidence")));
    }
    let c = &out.data.comparison;
    assert_eq!(c.meta_insight, "risk appetite decides");
    assert_eq!(
        c.convergence_points[0].styles,
        vec![Conservative, Aggressive]
    );
    assert_eq!(c.divergence_points[0].positions.len(), 2);
    assert_eq!(c.recommended_approach.as_ref().unwrap().style, Balanced);
    // Guidance went to the contrarian branch only, and is reported back.
    let contrarian = reqs
        .iter()
        .find(|r| style_of(r) == Some(Contrarian))
        .unwrap();
    assert!(
        last_user(contrarian).starts_with("Human guidance for this branch: Question the premise.")
    );
    assert!(
        reqs[..4]
            .iter()
            .filter(|r| style_of(r) != Some(Contrarian))
            .all(|r| !last_user(r).contains("Question the premise"))
    );
    assert_eq!(out.data.applied_guidance.len(), 1);

    // Persistence: a query node, four fork_branch nodes branching from it, a fork run.
    let query = out.nodes[0];
    assert_eq!(h.store.node(query).unwrap().unwrap().kind, NodeType::Query);
    for b in &out.data.branches {
        let id = b.node_id.unwrap();
        let n = h.store.node(id).unwrap().unwrap();
        assert_eq!(n.kind, NodeType::ForkBranch);
        assert_eq!(n.meta["style"], json!(b.style));
        assert_eq!(
            edge_kinds_from(&h.store, id),
            vec![(EdgeType::BranchesFrom, query)]
        );
    }
    let run = h.store.run(out.run).unwrap().unwrap();
    assert_eq!(run.kind, RunKind::Fork);
    assert_eq!(run.summary["branches"].as_array().unwrap().len(), 4);
    assert_eq!(
        run.params["query"],
        json!("Should we rewrite the billing service?")
    );

    // The contract's JSON names.
    let v = serde_json::to_value(&out.data).unwrap();
    for key in [
        "branches",
        "convergencePoints",
        "divergencePoints",
        "metaInsight",
        "recommendedApproach",
        "appliedGuidance",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    for key in [
        "style",
        "conclusion",
        "confidence",
        "keyInsights",
        "outputTokensUsed",
        "durationMs",
    ] {
        assert!(
            v["branches"][0].get(key).is_some(),
            "missing branches[].{key}"
        );
    }
    assert_eq!(v["convergencePoints"][0]["agreementLevel"], "partial");
}

#[tokio::test]
async fn invalid_requests_are_refused_before_any_call() {
    let h = harness(Vec::new(), false).await;
    let (tx, _rx) = events();
    let mut r = req(&[Conservative, Aggressive]);
    r.guidance = vec![Guidance {
        style: Aggressive,
        guidance: "x".repeat(2001),
    }];
    let e = h.engine.fork(r, &tx).await.unwrap_err();
    assert!(
        e.to_string().contains("2001 characters; the limit is 2000"),
        "{e}"
    );
    let e = h.engine.fork(req(&[Conservative]), &tx).await.unwrap_err();
    assert!(matches!(e, ForkError::Invalid(_)));
    let e = h
        .engine
        .fork(req(&[Balanced, Balanced]), &tx)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("twice"), "{e}");
    assert!(h.server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_carry_the_structured_output() {
    let steps = vec![
        Step::sse(sse_tool("record_conclusion", &conclusion("tooled", 0.9))),
        Step::sse(sse_tool("record_conclusion", &conclusion("tooled", 0.9))),
        Step::sse(sse_tool("record_comparison", &comparison())),
    ];
    let h = harness(steps, true).await;
    let (tx, _rx) = events();
    let out = h
        .engine
        .fork(req(&[Conservative, Aggressive]), &tx)
        .await
        .unwrap();
    assert!(
        out.data
            .branches
            .iter()
            .all(|b| b.body.conclusion == "tooled")
    );
    assert_eq!(out.data.comparison.meta_insight, "risk appetite decides");
    let reqs = h.server.requests();
    assert_eq!(
        reqs[0].json["tools"][0]["function"]["name"],
        "record_conclusion"
    );
    assert_eq!(
        reqs[0].json["tool_choice"]["function"]["name"],
        "record_conclusion"
    );
    assert_eq!(
        reqs[2].json["tool_choice"]["function"]["name"],
        "record_comparison"
    );
}

// ---- repair ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_is_repaired_on_the_retry() {
    let bad = || {
        delayed(
            100,
            sse_text("", "{\"conclusion\" \"half\" \"confidence\" 0.7}"),
        )
    };
    let good = || text_step(&conclusion("repaired", 0.7));
    let h = harness(
        vec![bad(), bad(), good(), good(), text_step(&comparison())],
        false,
    )
    .await;
    let (tx, mut rx) = events();
    let out = h
        .engine
        .fork(req(&[Conservative, Contrarian]), &tx)
        .await
        .unwrap();
    assert!(
        out.data
            .branches
            .iter()
            .all(|b| b.ok() && b.body.conclusion == "repaired")
    );
    assert_eq!(out.data.comparison.comparison_error, None);
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 5);
    for r in &reqs[2..4] {
        let msgs = r.json["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 4, "system, question, bad answer, repair");
        assert_eq!(msgs[2]["role"], "assistant");
        assert!(last_user(r).contains("could not be read as the required JSON object"));
    }
    let repairing = drain(&mut rx)
        .into_iter()
        .filter(|e| matches!(e, ForkEvent::Repairing { .. }))
        .count();
    assert_eq!(repairing, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_whose_repair_also_fails_is_reported_failed() {
    let bad = |ms| delayed(ms, sse_text("", "I think we should not rewrite it."));
    let good = |ms| delayed(ms, sse_text("", &conclusion("fine", 0.6).to_string()));
    let steps = vec![
        bad(100),
        bad(100),
        good(100),
        bad(0), // the first repair fails again
        good(0),
        text_step(&comparison()),
    ];
    let h = harness(steps, false).await;
    let (tx, _rx) = events();
    let out = h
        .engine
        .fork(req(&[Conservative, Aggressive, Balanced]), &tx)
        .await
        .unwrap();
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 6);
    let failed_style = style_of(&reqs[3]).unwrap();
    for b in &out.data.branches {
        if b.style == failed_style {
            let e = b.error.as_deref().unwrap();
            assert!(e.contains("after the repair prompt"), "{e}");
            assert_eq!(b.body.confidence, 0.0);
        } else {
            assert!(b.ok(), "{:?}", b.error);
        }
    }
    assert_eq!(out.data.branches.iter().filter(|b| !b.ok()).count(), 1);
    assert!(out.data.comparison.comparison_error.is_none());
}

// ---- debate ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debate_reaches_consensus_when_all_hold_with_high_confidence() {
    let branch = || text_step(&conclusion("keep it", 0.8));
    let round = |changed| text_step(&debate("still keep it", 0.85, changed));
    let steps = vec![
        branch(),
        branch(),
        text_step(&comparison()),
        round(true),
        round(false),
        round(false),
        round(false),
        text_step(&conclusion("agreed: keep it", 0.9)),
    ];
    let h = harness(steps, false).await;
    let (tx, mut rx) = events();
    let out = h
        .engine
        .debate(req(&[Conservative, Aggressive]), 2, &tx)
        .await
        .unwrap();
    let d = &out.data;
    assert!(d.consensus_reached);
    assert_eq!(d.consensus.as_deref(), Some("agreed: keep it"));
    assert_eq!(d.consensus_confidence, Some(0.9));
    assert_eq!(d.total_rounds, 2);
    assert_eq!(d.rounds.len(), 2);
    assert_eq!(d.final_positions.len(), 2);
    assert!(
        d.final_positions
            .iter()
            .all(|p| p.position == "still keep it")
    );
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 8);
    // Each debater saw the other's position, not only its own.
    for r in &reqs[3..5] {
        let me = style_of(r).unwrap();
        let other = if me == Conservative {
            Aggressive
        } else {
            Conservative
        };
        assert!(last_user(r).contains(&format!("- {other} (confidence 0.80): keep it")));
    }
    // Round entries are fork_branch nodes with round and style, refining the last position.
    for round in &d.rounds {
        for e in &round.entries {
            let n = h.store.node(e.node_id.unwrap()).unwrap().unwrap();
            assert_eq!(n.kind, NodeType::ForkBranch);
            assert_eq!(n.meta["round"], json!(round.round));
            assert_eq!(n.meta["style"], json!(e.style));
            let edges = edge_kinds_from(&h.store, n.id);
            assert_eq!(edges.len(), 1);
            assert_eq!(edges[0].0, EdgeType::Refines);
        }
    }
    // The synthesis aggregates the last round's entries.
    let syn = h.store.node(d.consensus_node_id.unwrap()).unwrap().unwrap();
    assert_eq!(syn.kind, NodeType::Synthesis);
    let mut targets: Vec<NodeId> = edge_kinds_from(&h.store, syn.id)
        .into_iter()
        .map(|(k, dst)| {
            assert_eq!(k, EdgeType::Aggregates);
            dst
        })
        .collect();
    let mut last: Vec<NodeId> = d.rounds[1]
        .entries
        .iter()
        .map(|e| e.node_id.unwrap())
        .collect();
    targets.sort();
    last.sort();
    assert_eq!(targets, last);
    assert_eq!(h.store.run(out.run).unwrap().unwrap().kind, RunKind::Debate);
    let evs = drain(&mut rx);
    assert!(matches!(
        evs.last(),
        Some(ForkEvent::DebateDone {
            consensus_reached: true,
            ..
        })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debate_without_consensus_makes_no_synthesis() {
    let branch = || text_step(&conclusion("keep it", 0.8));
    let steps = vec![
        branch(),
        branch(),
        text_step(&comparison()),
        text_step(&debate("keep it", 0.9, false)),
        text_step(&debate("keep it", 0.9, false)),
        // Last round: one branch moves, the other holds with low confidence.
        text_step(&debate("rewrite it", 0.9, true)),
        text_step(&debate("keep it", 0.5, false)),
    ];
    let h = harness(steps, false).await;
    let (tx, _rx) = events();
    let out = h
        .engine
        .debate(req(&[Conservative, Aggressive]), 2, &tx)
        .await
        .unwrap();
    assert!(!out.data.consensus_reached);
    assert_eq!(out.data.consensus, None);
    assert_eq!(out.data.consensus_node_id, None);
    assert_eq!(h.server.requests().len(), 7);
    let nodes = h.store.session_nodes(out.session).unwrap();
    assert!(nodes.iter().all(|n| n.kind != NodeType::Synthesis));
    assert_eq!(
        nodes
            .iter()
            .filter(|n| n.kind == NodeType::ForkBranch)
            .count(),
        2 + 4
    );
}

// ---- steer ----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_steer_action_links_its_result() {
    let c = |t: &str| text_step(&conclusion(t, 0.75));
    let steps = vec![
        c("base"),
        c("base"),
        text_step(&comparison()),
        c("expanded"),
        text_step(&json!({"claims": [{"text": "merged", "sources": ["A1", "B2"]}]})),
        c("defended"),
        c("reforked"),
        c("reforked"),
        text_step(&comparison()),
    ];
    let h = harness(steps, false).await;
    let (tx, _rx) = events();
    let fork = h
        .engine
        .fork(req(&[Conservative, Aggressive]), &tx)
        .await
        .unwrap();
    let query = fork.nodes[0];
    let node_of = |s: ForkStyle| {
        fork.data
            .branches
            .iter()
            .find(|b| b.style == s)
            .unwrap()
            .node_id
            .unwrap()
    };

    let ex = h
        .engine
        .steer(
            fork.run,
            SteerAction::Expand {
                style: Aggressive,
                direction: Some("costs".into()),
            },
            &tx,
        )
        .await
        .unwrap();
    let SteerResult::Expand { branch } = &ex.data else {
        panic!("{:?}", ex.data)
    };
    assert_eq!(branch.body.conclusion, "expanded");
    let n = h.store.node(branch.node_id.unwrap()).unwrap().unwrap();
    assert_eq!(
        (n.kind, n.meta["action"].clone()),
        (NodeType::ForkBranch, json!("expand"))
    );
    assert_eq!(
        edge_kinds_from(&h.store, n.id),
        vec![(EdgeType::Refines, node_of(Aggressive))]
    );
    let reqs = h.server.requests();
    assert_eq!(
        reqs[3].json["reasoning_effort"], "high",
        "expand runs at max effort"
    );
    assert!(reqs[0].json.get("reasoning_effort").is_none());
    assert!(last_user(&reqs[3]).contains("Direction from the human: costs"));

    let mg = h
        .engine
        .steer(
            fork.run,
            SteerAction::Merge {
                styles: vec![Conservative, Aggressive],
                focus_area: None,
            },
            &tx,
        )
        .await
        .unwrap();
    let SteerResult::Merge {
        merged, node_id, ..
    } = &mg.data
    else {
        panic!()
    };
    assert_eq!(merged.claims.len(), 1);
    assert_eq!(merged.claims[0].text, "merged");
    let sources: Vec<NodeId> = merged.claims[0].provenance.iter().map(|p| p.node).collect();
    assert_eq!(sources, [node_of(Conservative), node_of(Aggressive)]);
    assert_eq!(merged.claims[0].provenance[1].steps, [1]);
    let stored = h.store.node(*node_id).unwrap().unwrap();
    assert_eq!(
        glassbox::engines::diff::claims_of(&stored),
        merged.claims,
        "steer --merge stores the claims like glassbox merge"
    );
    assert_eq!(
        h.store.node(*node_id).unwrap().unwrap().kind,
        NodeType::Synthesis
    );
    let mut agg = edge_kinds_from(&h.store, *node_id);
    agg.sort();
    let mut want = vec![
        (EdgeType::Aggregates, node_of(Conservative)),
        (EdgeType::Aggregates, node_of(Aggressive)),
    ];
    want.sort();
    assert_eq!(agg, want);

    let ch = h
        .engine
        .steer(
            fork.run,
            SteerAction::Challenge {
                style: Conservative,
                challenge: "The old code is the risk.".into(),
            },
            &tx,
        )
        .await
        .unwrap();
    let SteerResult::Challenge { branch, .. } = &ch.data else {
        panic!()
    };
    assert_eq!(
        edge_kinds_from(&h.store, branch.node_id.unwrap()),
        vec![(EdgeType::Refines, node_of(Conservative))]
    );
    assert!(last_user(&h.server.requests()[5]).contains("The old code is the risk."));

    let rf = h
        .engine
        .steer(
            fork.run,
            SteerAction::Refork {
                new_context: "Budget was cut.".into(),
            },
            &tx,
        )
        .await
        .unwrap();
    let SteerResult::Refork { result, .. } = &rf.data else {
        panic!()
    };
    assert_eq!(result.branches.len(), 2);
    for b in &result.branches {
        assert_eq!(b.body.conclusion, "reforked");
        assert_eq!(
            edge_kinds_from(&h.store, b.node_id.unwrap()),
            vec![(EdgeType::BranchesFrom, query)]
        );
    }
    let reqs = h.server.requests();
    assert!(
        reqs[6..8]
            .iter()
            .all(|r| last_user(r).contains("New context from the human: Budget was cut."))
    );
    assert_eq!(reqs.len(), 9);
    for o in [&ex.run, &mg.run, &ch.run, &rf.run] {
        let run = h.store.run(*o).unwrap().unwrap();
        assert_eq!(run.kind, RunKind::Steer);
        assert_eq!(run.params["sourceRun"], json!(fork.run));
    }
    // A refork run can itself be steered.
    let e = h
        .engine
        .steer(
            rf.run,
            SteerAction::Merge {
                styles: vec![Conservative],
                focus_area: None,
            },
            &tx,
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("two or more"), "{e}");
}

// ---- checkpoints ----------------------------------------------------------------------

/// q0 → x → q → t1 → t2 → r (influences), r answers q; b branches from t2; s aggregates b;
/// u is unrelated.
struct Graph {
    store: Store,
    session: glassbox::store::SessionId,
    ids: std::collections::HashMap<&'static str, NodeId>,
}

fn graph(store: Store) -> Graph {
    let session = Session::new("g", SessionSource::Glassbox);
    let mk = |kind, text: &str| Node::new(session.id, kind, text);
    let nodes = vec![
        ("q0", mk(NodeType::Query, "An older question")),
        ("x", mk(NodeType::Response, "An older answer")),
        ("q", mk(NodeType::Query, "Is 91 prime?")),
        ("t1", mk(NodeType::Thinking, "91 is odd.")),
        (
            "t2",
            mk(
                NodeType::Thinking,
                "91 has no small factors, so it is prime.",
            ),
        ),
        ("r", mk(NodeType::Response, "Yes, 91 is prime.")),
        ("b", mk(NodeType::ForkBranch, "A branch on t2")),
        ("s", mk(NodeType::Synthesis, "A synthesis of b")),
        ("u", mk(NodeType::Response, "Unrelated")),
    ];
    let ids: std::collections::HashMap<&'static str, NodeId> =
        nodes.iter().map(|(k, n)| (*k, n.id)).collect();
    let e = |a: &str, k, b: &str| Edge::new(ids[a], k, ids[b]);
    let edges = vec![
        e("q0", EdgeType::Influences, "x"),
        e("x", EdgeType::Influences, "q"),
        e("q", EdgeType::Influences, "t1"),
        e("t1", EdgeType::Influences, "t2"),
        e("t2", EdgeType::Influences, "r"),
        e("r", EdgeType::Answers, "q"),
        e("b", EdgeType::BranchesFrom, "t2"),
        e("s", EdgeType::Aggregates, "b"),
    ];
    store
        .write(|w| {
            w.put_session(&session)?;
            for (_, n) in &nodes {
                w.put_node(n)?;
            }
            for e in &edges {
                w.put_edge(e)?;
            }
            Ok(())
        })
        .unwrap();
    Graph {
        store,
        session: session.id,
        ids,
    }
}

fn disputed(g: &Graph) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = g
        .ids
        .iter()
        .filter(|(_, id)| {
            g.store
                .node(**id)
                .unwrap()
                .unwrap()
                .meta
                .contains_key("disputed_by")
        })
        .map(|(k, _)| *k)
        .collect();
    out.sort();
    out
}

#[test]
fn checkpoints_store_the_right_types_and_propagate_downstream_only() {
    let dir = tempfile::tempdir().unwrap();
    let g = graph(support::store::open(&dir.path().join("s.redb")).unwrap());
    let t2 = g.ids["t2"];
    for (verdict, edge, conf) in [
        (Verdict::Verified, EdgeType::Supports, 1.0),
        (Verdict::Questionable, EdgeType::Refines, 0.5),
        (Verdict::Disagree, EdgeType::Contradicts, 0.0),
    ] {
        let (res, _) = record_verdict(
            &g.store,
            g.ids["u"],
            verdict,
            None,
            5000,
            &Default::default(),
        )
        .unwrap();
        let ann = g.store.node(res.annotation.id).unwrap().unwrap();
        assert_eq!(ann.kind, NodeType::HumanAnnotation);
        assert_eq!(ann.confidence, Some(conf));
        assert_eq!(ann.session, g.session);
        assert_eq!(edge_kinds_from(&g.store, ann.id), vec![(edge, g.ids["u"])]);
        assert!(res.alternative_branch.is_none());
    }
    // u has nothing downstream.
    assert!(disputed(&g).is_empty());

    let (res, _) = record_verdict(
        &g.store,
        t2,
        Verdict::Disagree,
        None,
        5000,
        &Default::default(),
    )
    .unwrap();
    assert_eq!(disputed(&g), vec!["b", "r", "s"]);
    let r = g.store.node(g.ids["r"]).unwrap().unwrap();
    assert_eq!(r.meta["disputed_by"], json!(res.annotation.id));
    assert_eq!(res.disputed_nodes.len(), 3);

    // Questioning t1 marks everything after it (t2 included).
    let (q1, _) = record_verdict(
        &g.store,
        g.ids["t1"],
        Verdict::Questionable,
        None,
        5000,
        &Default::default(),
    )
    .unwrap();
    assert_eq!(disputed(&g), vec!["b", "r", "s", "t2"]);
    assert_eq!(
        g.store.node(g.ids["r"]).unwrap().unwrap().meta["disputed_by"],
        json!(q1.annotation.id)
    );
    // Re-verifying t1 clears what its dispute marked; t2's own dispute still shows.
    let (v, _) = record_verdict(
        &g.store,
        g.ids["t1"],
        Verdict::Verified,
        None,
        5000,
        &Default::default(),
    )
    .unwrap();
    assert_eq!(v.cleared_nodes.len(), 4);
    assert_eq!(disputed(&g), vec!["b", "r", "s"]);
    assert_eq!(
        g.store.node(g.ids["r"]).unwrap().unwrap().meta["disputed_by"],
        json!(res.annotation.id)
    );

    // A verified checkpoint on t2 clears only the marks t2's disputes caused.
    record_verdict(
        &g.store,
        g.ids["b"],
        Verdict::Questionable,
        None,
        5000,
        &Default::default(),
    )
    .unwrap();
    assert_eq!(disputed(&g), vec!["b", "r", "s"]);
    record_verdict(
        &g.store,
        t2,
        Verdict::Verified,
        None,
        5000,
        &Default::default(),
    )
    .unwrap();
    assert_eq!(disputed(&g), vec!["s"], "s still rests on the questioned b");

    let e = record_verdict(
        &g.store,
        t2,
        Verdict::Disagree,
        Some("x".repeat(5001)),
        5000,
        &Default::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("5001 characters; the limit is 5000"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disagree_with_a_correction_reasons_an_alternative_branch() {
    let steps = vec![Step::sse(sse_text(
        "7 times 13 is 91, so it has a factor.",
        "91 = 7 × 13, so 91 is not prime.",
    ))];
    let h = harness(steps, false).await;
    let g = graph(h.store.clone());
    let (tx, _rx) = events();
    let res = h
        .engine
        .checkpoint(
            g.ids["t2"],
            Verdict::Disagree,
            Some("Try dividing by 7.".into()),
            &tx,
        )
        .await
        .unwrap();
    let alt = res.alternative_branch.unwrap();
    assert_eq!(alt.reasoning, "91 = 7 × 13, so 91 is not prime.");
    assert!(alt.confidence > 0.5 && alt.confidence <= 0.9);
    let n = h.store.node(alt.node_id).unwrap().unwrap();
    assert_eq!(n.kind, NodeType::ForkBranch);
    assert_eq!(
        edge_kinds_from(&h.store, n.id),
        vec![(EdgeType::Refines, g.ids["t2"])]
    );
    assert_eq!(
        edge_kinds_from(&h.store, res.annotation.id),
        vec![(EdgeType::Contradicts, g.ids["t2"])]
    );
    // The alternative is not itself marked as resting on the disputed step.
    assert!(!n.meta.contains_key("disputed_by"));
    let reqs = h.server.requests();
    assert_eq!(reqs.len(), 1);
    let user = last_user(&reqs[0]);
    assert!(user.contains("Original question: Is 91 prime?"));
    assert!(user.contains("Try dividing by 7."));
    assert!(user.contains("91 has no small factors"));
    // Chain context: the last three nodes before t2 (x, q, t1), not q0.
    assert!(user.contains("An older answer") && user.contains("91 is odd."));
    assert!(!user.contains("An older question"));
}

// ---- fork from inside a thinking trace ------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forking_inside_a_thinking_trace_continues_from_the_step() {
    let c = || text_step(&conclusion("continued", 0.6));
    let h = harness(vec![c(), c(), text_step(&comparison())], false).await;
    let g = graph(h.store.clone());
    let mut t = h.store.node(g.ids["t2"]).unwrap().unwrap();
    t.text = "First, 91 is odd. Then, check small primes. So it is prime.".into();
    t.meta.insert(
        "steps".into(),
        json!([{"index": 0, "start": 0}, {"index": 1, "start": 18}, {"index": 2, "start": 43}]),
    );
    h.store.write(|w| w.put_node(&t)).unwrap();
    let (tx, _rx) = events();
    let out = h
        .engine
        .fork_from_step(t.id, 1, vec![Conservative, Contrarian], Vec::new(), &tx)
        .await
        .unwrap();
    for r in &h.server.requests()[..2] {
        let u = last_user(r);
        assert!(u.contains("Question: Is 91 prime?"));
        assert!(u.contains("First, 91 is odd."));
        assert!(!u.contains("check small primes"));
    }
    for b in &out.data.branches {
        assert_eq!(
            edge_kinds_from(&h.store, b.node_id.unwrap()),
            vec![(EdgeType::BranchesFrom, t.id)]
        );
    }
    let e = h
        .engine
        .fork_from_step(t.id, 9, vec![Conservative, Contrarian], Vec::new(), &tx)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("no thinking step 9"), "{e}");
}

// ---- the real local model -------------------------------------------------------------

#[cfg(feature = "local")]
#[test]
fn local_model_fork_has_two_branches_and_a_comparison() {
    let Some(dir) = glassbox::paths::default_models_dir() else {
        eprintln!("\n!!! SKIPPING: no models dir !!!\n");
        return;
    };
    let path = glassbox::models::smollm2_path(&dir);
    if !path.is_file() {
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
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_glassbox"))
        .env("GLASSBOX_DATA_DIR", data.path())
        .envs(support::bin::store_env(data.path()))
        .env("GLASSBOX_CONFIG_DIR", data.path().join("config"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("GLASSBOX_PROVIDER")
        .args([
            "fork",
            "Should a small team write tests first?",
            "--styles",
            "conservative,contrarian",
            "--max-tokens",
            "96",
            "--json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}); stderr: {stderr}"));
    let branches = v["branches"].as_array().unwrap();
    assert_eq!(branches.len(), 2, "{v}");
    let styles: Vec<&str> = branches
        .iter()
        .map(|b| b["style"].as_str().unwrap())
        .collect();
    assert_eq!(styles, vec!["conservative", "contrarian"]);
    for b in branches {
        assert!(b["conclusion"].is_string() && b["confidence"].is_number());
        assert!(b["keyInsights"].is_array());
    }
    assert!(v["convergencePoints"].is_array());
    assert!(v["divergencePoints"].is_array());
    assert!(v["metaInsight"].is_string());
    assert!(v["runId"].is_string() && v["sessionId"].is_string());
    assert_eq!(
        v["nodeIds"].as_array().unwrap().len(),
        3,
        "query and two branches"
    );
}
