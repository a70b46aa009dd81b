//! Metacognition against the scripted server: the context it sends, evidence to unknown
//! nodes dropped and counted, insights stored.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashSet;
use std::sync::Arc;

use glassbox::config::{Config, DEFAULT_TOML};
use glassbox::engines::got::CallSettings;
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::engines::metacog::{FocusArea, InsightType, Metacog};
use glassbox::store::{Node, NodeId, NodeType, RunKind, Session, SessionSource};
use serde_json::json;
use support::{Script, ScriptedServer, Step};

fn answer(text: &str) -> Step {
    let chunk = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]});
    let done = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}});
    Step::sse(format!("data: {chunk}\n\ndata: {done}\n\ndata: [DONE]\n\n"))
}

#[tokio::test]
async fn evidence_to_unknown_nodes_is_dropped_counted_and_the_rest_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let session = Session::new("s", SessionSource::Glassbox);
    let mut q = Node::new(session.id, NodeType::Query, "Is 91 prime?");
    q.created_at -= chrono::Duration::seconds(2);
    let mut t = Node::new(
        session.id,
        NodeType::Thinking,
        format!("It is odd so it must be prime. {}", "x".repeat(100)),
    );
    t.confidence = Some(0.95);
    let r = Node::new(session.id, NodeType::Response, "91 is prime.");
    store
        .write(|w| {
            w.put_session(&session)?;
            for n in [&q, &t, &r] {
                w.put_node(n)?;
            }
            Ok(())
        })
        .unwrap();
    let made_up = NodeId::new();
    let reply = json!({
        "summary": "jumped to a conclusion",
        "insights": [{
            "insightType": "bias_detection",
            "insight": "Overconfidence: primality asserted from oddness alone.",
            "confidence": 0.9,
            "evidence": [
                {"nodeId": t.id.to_string(), "excerpt": "it must be prime", "relevance": 0.95},
                {"nodeId": made_up.to_string(), "excerpt": "never said", "relevance": 0.4}
            ]
        }]
    });
    let server = ScriptedServer::start(Script::new(vec![answer(&reply.to_string())])).await;
    let mut cfg: Config = toml::from_str(DEFAULT_TOML).unwrap();
    cfg.metacog.node_chars = 40;
    let provider = OpenAiProvider::new(HttpSettings {
        base_url: format!("{}/v1", server.url()),
        keys: vec![ApiKey::new("k")],
        max_retries: 0,
        ..Default::default()
    })
    .unwrap();
    let engine = Metacog {
        store: store.clone(),
        provider: Arc::new(provider),
        call: CallSettings::new("m", 512),
        prompt: "REVIEW".into(),
        config: cfg.metacog,
    };
    let out = engine
        .analyze(
            session.id,
            Some(FocusArea::ConfidenceCalibration),
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.insights.len(), 1);
    assert_eq!(out.insights[0].insight_type, InsightType::BiasDetection);
    assert_eq!(out.insights[0].evidence.len(), 1);
    assert_eq!(out.insights[0].evidence[0].node_id, t.id);
    assert_eq!(out.invalid_node_refs, vec![made_up.to_string()]);
    // Only one thinking node, so the newest others top it up to the minimum of 10.
    let analysed: HashSet<NodeId> = out.nodes_analyzed.iter().copied().collect();
    assert_eq!(analysed, [q.id, t.id, r.id].into_iter().collect());

    let req = &server.requests()[0].json;
    let body = req.to_string();
    assert!(body.contains("REVIEW") && body.contains("confidence calibration"));
    let user = req["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(user.contains(&t.id.to_string()));
    assert!(user.contains("confidence: 95%"));
    assert!(user.contains("query: Is 91 prime?"));
    // Each node's text is capped at node_chars.
    assert!(user.contains(&format!(
        "It is odd so it must be prime. {}\n",
        "x".repeat(9)
    )));
    assert!(!user.contains(&"x".repeat(10)));

    let stored = store.insights(session.id).unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].kind, "bias_detection");
    assert_eq!(stored[0].confidence, 0.9);
    assert_eq!(stored[0].evidence.len(), 1);
    assert_eq!(stored[0].evidence[0]["nodeId"], t.id.to_string());
    assert_eq!(stored[0].nodes_analyzed.len(), 3);
    let runs = store.session_runs(session.id).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].kind, RunKind::Insights);
    assert_eq!(runs[0].summary["invalidNodeRefs"][0], made_up.to_string());
}
