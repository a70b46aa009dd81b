//! Step verification against the scripted server: the context each step is judged with,
//! the chain result, what is stored, the step-label exports, and the headless command.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use glassbox::config::{Config, DEFAULT_TOML};
use glassbox::engines::got::CallSettings;
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::engines::verify::{
    StepInput, Verdict, Verifier, VerifyRequest, node_steps, prm800k, processbench,
};
use glassbox::store::{Edge, EdgeType, Node, NodeType, RunKind, Session, SessionSource, Store};
use serde_json::json;
use support::{Script, ScriptedServer, Step};

fn answer(text: &str) -> Step {
    let chunk = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]});
    let done = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}});
    Step::sse(format!("data: {chunk}\n\ndata: {done}\n\ndata: [DONE]\n\n"))
}

fn judgements() -> Vec<Step> {
    vec![
        answer(r#"{"verdict": "correct", "confidence": 0.9, "explanation": "fine", "issues": []}"#),
        answer(
            r#"```json
{"verdict": "incorrect", "confidence": 0.8, "explanation": "91 = 7 * 13",
 "issues": [{"type": "factual_error", "description": "91 is composite", "severity": "critical"}],
 "suggestedCorrection": "91 = 7 × 13, so it is not prime."}
```"#,
        ),
        answer(
            r#"{"verdict": "neutral", "confidence": 0.5, "explanation": "restates", "issues": []}"#,
        ),
    ]
}

fn steps() -> Vec<StepInput> {
    [
        "91 is odd.",
        "Odd numbers are prime, so 91 is prime.",
        "So the answer is yes.",
    ]
    .iter()
    .map(|s| StepInput {
        content: s.to_string(),
        kind: Some("analysis".into()),
    })
    .collect()
}

fn verifier(store: &Store, url: &str) -> Verifier {
    let cfg: Config = toml::from_str(DEFAULT_TOML).unwrap();
    let provider = OpenAiProvider::new(HttpSettings {
        base_url: format!("{url}/v1"),
        keys: vec![ApiKey::new("k")],
        max_retries: 0,
        ..Default::default()
    })
    .unwrap();
    Verifier {
        store: store.clone(),
        provider: Arc::new(provider),
        call: CallSettings::new("m", 512),
        prompt: "VERIFY".into(),
        config: cfg.verify,
    }
}

#[tokio::test]
async fn each_step_is_judged_in_context_and_the_chain_scored_and_stored() {
    let server = ScriptedServer::start(Script::new(judgements())).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let v = verifier(&store, &server.url());
    let out = v
        .verify(
            VerifyRequest {
                steps: steps(),
                original_query: Some("Is 91 prime?".into()),
                ..Default::default()
            },
            &Default::default(),
        )
        .await
        .unwrap();
    let c = &out.chain;
    // 0.9 · (1 − 0.8) · 0.3 · 0.9 = 0.0486; cube root
    assert!((c.overall_score - 0.0486_f64.cbrt()).abs() < 1e-12);
    assert!(!c.is_valid);
    assert_eq!(c.first_error_at, 1);
    assert_eq!(
        c.steps.iter().map(|s| s.verdict).collect::<Vec<_>>(),
        vec![Verdict::Correct, Verdict::Incorrect, Verdict::Neutral]
    );
    assert_eq!(
        c.patterns
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        // confidence 0.9 ≥ 0.8 ≥ 0.5 falls by 0.4 > 0.2
        vec!["declining_confidence", "overconfidence_before_error"]
    );
    assert_eq!(c.metadata.verification_model, "m");

    let users: Vec<String> = server
        .requests()
        .iter()
        .map(|r| {
            r.json["messages"].as_array().unwrap().last().unwrap()["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(users.len(), 3);
    assert!(users.iter().all(|u| u.contains("Question:\nIs 91 prime?")));
    assert!(users[0].contains("Preceding steps: none."));
    assert!(users[2].contains("Step 1: 91 is odd.\nStep 2: Odd numbers are prime"));
    assert!(users[2].contains("Step to verify (step 3, analysis):\nSo the answer is yes."));

    let nodes = store.session_nodes(out.session).unwrap();
    assert_eq!(nodes.len(), 3);
    assert!(nodes.iter().all(|n| n.kind == NodeType::VerifyStep));
    assert_eq!(nodes[1].meta["verdict"], "incorrect");
    assert_eq!(nodes[1].meta["issues"][0]["type"], "factual_error");
    assert_eq!(nodes[1].confidence, Some(0.8));
    let runs = store.session_runs(out.session).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].kind, RunKind::Verify);
    assert_eq!(runs[0].summary["firstErrorAt"], 1);

    // Step labels: the model's verdicts, then a human overruling step 2.
    let pb = processbench(&store, out.session).unwrap();
    assert_eq!(pb[0]["problem"], "Is 91 prime?");
    assert_eq!(pb[0]["steps"][1], "Odd numbers are prime, so 91 is prime.");
    assert_eq!(pb[0]["label"], 1);
    let prm = prm800k(&store, out.session).unwrap();
    let ratings: Vec<i64> = prm[0]["label"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["completions"][0]["rating"].as_i64().unwrap())
        .collect();
    assert_eq!(ratings, vec![1, -1, 0]);
    assert_eq!(prm[0]["label"]["finish_reason"], "found_error");
    assert_eq!(prm[0]["question"]["problem"], "Is 91 prime?");

    let mut human = Node::new(out.session, NodeType::HumanAnnotation, "it is fine");
    human.meta.insert("verdict".into(), json!("verified"));
    store
        .write(|w| {
            w.put_node(&human)?;
            w.put_edge(&Edge::new(human.id, EdgeType::Supports, out.nodes[1]))
        })
        .unwrap();
    assert_eq!(processbench(&store, out.session).unwrap()[0]["label"], -1);
    let prm = prm800k(&store, out.session).unwrap();
    let step2 = &prm[0]["label"]["steps"][1]["completions"][0];
    assert_eq!(step2["rating"], 1);
    assert_eq!(step2["source"], "human");
    assert_eq!(step2["modelRating"], -1);
    assert_eq!(prm[0]["label"]["finish_reason"], "solution");
}

#[tokio::test]
async fn a_thinking_nodes_steps_are_verified_and_linked_to_it() {
    let server = ScriptedServer::start(Script::new(judgements())).await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let session = Session::new("s", SessionSource::Glassbox);
    let mut t = Node::new(session.id, NodeType::Thinking, "…");
    t.meta.insert(
        "steps".into(),
        json!(
            steps()
                .iter()
                .enumerate()
                .map(|(i, s)| json!({"index": i, "kind": "analysis", "text": s.content}))
                .collect::<Vec<_>>()
        ),
    );
    store
        .write(|w| {
            w.put_session(&session)?;
            w.put_node(&t)
        })
        .unwrap();
    let (_, from_node) = node_steps(&store, t.id).unwrap();
    assert_eq!(from_node, steps());
    let out = verifier(&store, &server.url())
        .verify(
            VerifyRequest {
                steps: from_node,
                source: Some(t.id),
                ..Default::default()
            },
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.session, session.id);
    for n in &out.nodes {
        let up = store.edges_from(*n, Some(EdgeType::Refines)).unwrap();
        assert_eq!(up.len(), 1);
        assert_eq!(up[0].dst, t.id);
    }
    let empty = Node::new(session.id, NodeType::Thinking, "no steps");
    store.write(|w| w.put_node(&empty)).unwrap();
    assert_eq!(
        node_steps(&store, empty.id).unwrap_err().to_string(),
        format!("node {} has no ThinkGraph steps", empty.id)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_headless_command_prints_the_contract_shape() {
    let server = ScriptedServer::start(Script::new(judgements())).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("steps.json");
    std::fs::write(&file, serde_json::to_string(&steps()).unwrap()).unwrap();
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
            .args(["verify", "--steps-file"])
            .arg(&file)
            .args(["--threshold", "0.01", "--json"])
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
    assert_eq!(v["isValid"], true);
    assert_eq!(v["firstErrorAt"], 1);
    assert_eq!(v["steps"][1]["verdict"], "incorrect");
    assert_eq!(v["steps"][1]["stepIndex"], 1);
    assert_eq!(v["steps"][1]["issues"][0]["severity"], "critical");
    assert!(v["steps"][1]["suggestedCorrection"].is_string());
    assert_eq!(v["patterns"][0]["affectedSteps"], json!([0, 1, 2]));
    assert_eq!(v["patterns"][1]["affectedSteps"], json!([0, 1]));
    assert!(v["metadata"]["durationMs"].is_u64());
    assert!(v["sessionId"].is_string() && v["runId"].is_string());
    assert_eq!(v["nodeIds"].as_array().unwrap().len(), 3);
}
