//! The real embedded model (SmolLM2-135M through llama.cpp), driven through the real binary
//! and the library. Needs the model files from scripts/setup.sh: in CI (CI=true) their
//! absence fails the run; elsewhere these tests skip with a loud message.
#![cfg(feature = "local")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use glassbox::engines::llm::local::{LocalProvider, LocalSettings};
use glassbox::engines::llm::{StopReason, ThinkingMode};
use glassbox::engines::orchestrator::{Orchestrator, TurnRequest};
use glassbox::store::{NodeStatus, NodeType};

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
        .envs(support::bin::store_env(data))
        .env("GLASSBOX_CONFIG_DIR", data.join("config"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("GLASSBOX_PROVIDER");
    c
}

/// Runs `glassbox ask --json` at temperature 0 from the folder `project` (its memory scope);
/// returns (thinking, answer, done event).
fn ask_json(
    data: &std::path::Path,
    project: &std::path::Path,
    question: &str,
) -> (String, String, serde_json::Value) {
    let out = glassbox(data)
        .current_dir(project)
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
    // Each run from a project of its own: the first turn's question and answer go to its
    // project's recall memory, which the second would otherwise be shown.
    let (p1, p2) = (dir.path().join("p1"), dir.path().join("p2"));
    for p in [&p1, &p2] {
        std::fs::create_dir_all(p.join(".git")).unwrap();
    }
    let (t1, a1, d1) = ask_json(dir.path(), &p1, q);
    let (t2, a2, d2) = ask_json(dir.path(), &p2, q);
    assert!(!t1.trim().is_empty(), "no thinking");
    assert!(!a1.trim().is_empty(), "no answer");
    assert_eq!(t1, t2, "greedy thinking differs between runs");
    assert_eq!(a1, a2, "greedy answer differs between runs");
    assert_ne!(d1["session"], d2["session"]);

    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
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
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let provider = LocalProvider::new(LocalSettings {
        model_path: path,
        context_size: 2048,
        threads: 0,
        thinking_pass: true,
        thinking_prompt: "Think step by step.".into(),
        answer_prompt: "Reasoning:".into(),
        decoding: Default::default(),
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

/// Runs the binary against the embedded model with short answers, asserts success and
/// returns stdout as JSON.
fn local_json(data: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let out = glassbox(data)
        .env("GLASSBOX_GOT__MAX_TOKENS", "64")
        .env("GLASSBOX_VERIFY__MAX_TOKENS", "64")
        .env("GLASSBOX_GENERATION__TEMPERATURE", "0")
        .args(["--provider", "local"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "glassbox {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "glassbox {args:?} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn unit(v: &serde_json::Value, what: &str) -> f64 {
    let x = v
        .as_f64()
        .unwrap_or_else(|| panic!("{what} is not a number: {v}"));
    assert!((0.0..=1.0).contains(&x), "{what} = {x} is outside [0, 1]");
    x
}

#[test]
fn a_fork_gets_two_readable_branches_and_a_comparison() {
    if model_path().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let v = local_json(
        dir.path(),
        &[
            "fork",
            "Should a team of three rewrite a legacy billing app?",
            "--styles",
            "conservative,contrarian",
            "--json",
        ],
    );
    let branches = v["branches"].as_array().unwrap();
    assert_eq!(branches.len(), 2);
    for b in branches {
        // Every branch's answer was sampled under the conclusion's grammar: it parses.
        assert!(b["error"].is_null(), "{b}");
        assert!(!b["conclusion"].as_str().unwrap().trim().is_empty(), "{b}");
        unit(&b["confidence"], "branch confidence");
    }
    assert!(v["comparisonError"].is_null(), "{v}");
    assert!(v["convergencePoints"].is_array() && v["divergencePoints"].is_array());
    assert!(v["metaInsight"].is_string());
}

#[test]
fn a_small_graph_of_thoughts_search_completes_with_a_well_formed_result() {
    if model_path().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let v = local_json(
        dir.path(),
        &[
            "got",
            "How can a small team cut its cloud bill?",
            "--max-depth",
            "2",
            "--branching",
            "2",
            "--max-thoughts",
            "7",
            "--json",
        ],
    );
    let answer = v["answer"].as_str().expect("answer is a string");
    let confidence = unit(&v["confidence"], "confidence");
    let stats = &v["stats"];
    let total = stats["totalThoughts"].as_u64().unwrap();
    assert!((1..=7).contains(&total), "totalThoughts = {total}");
    assert!(stats["thoughtsExplored"].as_u64().unwrap() <= total);
    assert!(stats["thoughtsPruned"].as_u64().unwrap() <= total);
    assert!(stats["maxDepthReached"].as_u64().unwrap() <= 2);
    assert!(
        stats["totalTokens"].as_u64().unwrap() > 0,
        "no tokens counted"
    );
    assert_eq!(v["graphState"]["thoughtCount"], total);
    assert!(v["reasoningSummary"].as_str().unwrap().contains("bfs"));

    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let sid = v["sessionId"].as_str().unwrap().parse().unwrap();
    let run = store
        .run(v["runId"].as_str().unwrap().parse().unwrap())
        .unwrap()
        .expect("the run is stored");
    assert_eq!(run.kind, glassbox::store::RunKind::Got);
    assert_eq!(run.session, sid);
    let ids = v["nodeIds"].as_array().unwrap();
    assert_eq!(ids.len() as u64, total);
    let mut nodes = Vec::new();
    for id in ids {
        let n = store
            .node(id.as_str().unwrap().parse().unwrap())
            .unwrap()
            .unwrap_or_else(|| panic!("thought {id} is not stored"));
        assert_eq!(n.kind, NodeType::GotThought);
        assert_eq!(n.session, sid);
        // Each generation answer was a readable list of thoughts.
        assert!(!n.text.trim().is_empty(), "thought {id} is empty");
        nodes.push(n);
    }
    // The answer is the best thought's text and the confidence its score, or nothing at
    // all when no thought was verified.
    match v["graphState"]["bestThoughts"].as_array().unwrap().first() {
        Some(best) => {
            let n = nodes
                .iter()
                .find(|n| n.id.to_string() == best.as_str().unwrap())
                .expect("the best thought is one of the thoughts");
            assert_eq!(answer, n.text);
            assert_eq!(Some(confidence), n.confidence);
        }
        None => assert_eq!((answer, confidence), ("", 0.0)),
    }
}

#[test]
fn verifying_three_steps_gives_three_well_formed_verdicts() {
    if model_path().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("steps.json");
    std::fs::write(
        &file,
        serde_json::json!([
            {"content": "12 is divisible by 2.", "type": "analysis"},
            {"content": "12 / 2 = 6, and 6 / 2 = 3."},
            {"content": "So 12 = 2 × 2 × 3.", "type": "conclusion"},
        ])
        .to_string(),
    )
    .unwrap();
    let v = local_json(
        dir.path(),
        &[
            "verify",
            "--steps-file",
            file.to_str().unwrap(),
            "--question",
            "What is the prime factorisation of 12?",
            "--json",
        ],
    );
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    let mut verdicts = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s["stepIndex"], i);
        let verdict = s["verdict"].as_str().unwrap();
        assert!(
            ["correct", "incorrect", "neutral", "uncertain"].contains(&verdict),
            "step {i}: verdict {verdict}"
        );
        unit(&s["confidence"], "step confidence");
        assert!(
            s["explanation"].is_string() && s["issues"].is_array(),
            "{s}"
        );
        // Sampled under the verdict's grammar, every answer is a readable judgement.
        assert!(s["unreadable"].is_null(), "step {i}: {s}");
        verdicts.push(verdict.to_string());
    }
    let score = unit(&v["overallScore"], "chain score");
    assert_eq!(v["isValid"], score >= 0.7);
    let first = verdicts
        .iter()
        .position(|d| d == "incorrect")
        .map_or(-1, |i| i as i64);
    assert_eq!(v["firstErrorAt"], first);

    // Stored as three verify_step nodes carrying the same verdicts.
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let ids = v["nodeIds"].as_array().unwrap();
    assert_eq!(ids.len(), 3);
    for (id, verdict) in ids.iter().zip(&verdicts) {
        let n = store
            .node(id.as_str().unwrap().parse().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(n.kind, NodeType::VerifyStep);
        assert_eq!(n.meta["verdict"], verdict.as_str());
    }
    drop(store);

    // The ProcessBench label of the session is the model's first error.
    let out = glassbox(dir.path())
        .args(["export", v["sessionId"].as_str().unwrap()])
        .args(["--format", "processbench"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let pb: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pb[0]["label"], first);
    assert_eq!(pb[0]["problem"], "What is the prime factorisation of 12?");
}

#[test]
fn learning_from_a_transcript_gives_well_formed_learnings_and_is_idempotent() {
    if model_path().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/fixtures/claude_code/projects/-home-ann-calc/11111111-1111-4111-8111-111111111111.jsonl",
    );
    let first = local_json(
        dir.path(),
        &["memory", "backfill", file.to_str().unwrap(), "--json"],
    );
    assert_eq!(first["deadLetters"], 0, "{first}");
    assert!(first["learnings"].as_u64().unwrap() >= 1, "{first}");
    let events = local_json(dir.path(), &["memory", "events", "--json"]);
    for e in events.as_array().unwrap() {
        if e["event_type"] != "LearningExtracted" {
            continue;
        }
        // Sampled under the extraction grammar: 3–8 concepts, text, a confidence.
        let n = e["payload"]["concepts"].as_array().unwrap().len();
        assert!((3..=8).contains(&n), "{e}");
        assert!(!e["payload"]["content"].as_str().unwrap().trim().is_empty());
    }
    // The session was learned from as it is: a second backfill adds nothing.
    let again = local_json(
        dir.path(),
        &["memory", "backfill", file.to_str().unwrap(), "--json"],
    );
    assert_eq!(again["eventsAppended"], 0, "{again}");
    let check = local_json(dir.path(), &["memory", "rebuild", "--check", "--json"]);
    assert_eq!(check["differences"], 0, "{check}");
}

#[test]
fn a_deep_pipeline_leaves_its_five_layers_as_well_formed_nodes() {
    if model_path().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = glassbox(dir.path());
    // Short layers: the machinery is under test, not the answer.
    for layer in [
        "cortex",
        "decomposition",
        "primary_solver",
        "fast_critic",
        "refiner",
        "confidence_gate",
    ] {
        cmd.env(
            format!(
                "GLASSBOX_PIPELINE__LAYERS__{}__MAX_TOKENS",
                layer.to_uppercase()
            ),
            "64",
        );
    }
    let out = cmd
        .env("GLASSBOX_PROVIDERS__LOCAL__DECODING__THINKING_TOKENS", "32")
        .args([
            "--provider",
            "local",
            "ask",
            "--mode",
            "deep",
            "--no-escalate",
            "--json",
        ])
        .arg("Is it better to rent or buy a home in a city you may leave in 3 years?")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let fin = events
        .iter()
        .find(|e| e["type"] == "final_complete")
        .expect("a final_complete event");
    // Every JSON layer was sampled under its grammar: none failed.
    assert_eq!(fin["failed_layers"], serde_json::json!([]), "{fin}");
    let confidence = fin["confidence"].as_u64().expect("a confidence");
    assert!(confidence <= 100);
    let done = events.last().unwrap();
    assert_eq!(done["type"], "done");
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let run: glassbox::store::RunId = done["runId"].as_str().unwrap().parse().unwrap();
    let layers = glassbox::engines::pipeline::run_layers(&store, run).unwrap();
    let names: Vec<&str> = layers.iter().map(|r| r.layer.as_str()).collect();
    assert_eq!(
        names,
        [
            "cortex",
            "decomposition",
            "primary_solver",
            "fast_critic",
            "refiner",
            "confidence_gate"
        ]
    );
    for r in &layers {
        assert_eq!(r.node.status, NodeStatus::Complete, "{}", r.layer.as_str());
        assert_eq!(r.node.kind, NodeType::PipelineLayer);
        if r.layer.structured() {
            assert!(
                r.artifact().is_some_and(|a| a.is_object()),
                "{}",
                r.layer.as_str()
            );
        } else {
            assert!(
                !r.node.text.trim().is_empty(),
                "{} is empty",
                r.layer.as_str()
            );
        }
    }
}

#[test]
fn research_runs_end_to_end_on_the_local_model_with_well_formed_nodes() {
    if model_path().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("lighthouse.md"),
        "# The Lighthouse\n\nThe Skerry lighthouse was electrified in 1952.\n",
    )
    .unwrap();
    let add = glassbox(dir.path())
        .args(["knowledge", "add"])
        .arg(&docs)
        .output()
        .unwrap();
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    // Short stages: the machinery is under test, not the report.
    let out = glassbox(dir.path())
        .env("GLASSBOX_RESEARCH__THINKER__MAX_TOKENS", "160")
        .env("GLASSBOX_RESEARCH__AUDITOR__MAX_TOKENS", "96")
        .env("GLASSBOX_RESEARCH__SYNTHESIZER__MAX_TOKENS", "48")
        .args(["--provider", "local", "research", "--approve", "--json"])
        .arg("When was the Skerry lighthouse electrified?")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "start");
    let last = events.last().unwrap();
    let st = &last["state"];
    assert_eq!(st["status"], "complete", "{last}");
    // The plan came through the grammar: only offline tools, every step with an input.
    let steps = st["plan"]["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    for s in steps {
        let tool = s["tool"].as_str().unwrap();
        assert!(
            ["knowledge_search", "session_search", "memory_search"].contains(&tool),
            "{s}"
        );
        assert!(!s["input"].as_str().unwrap().trim().is_empty(), "{s}");
        assert!(s["output"].is_string() || s["error"].is_string(), "{s}");
    }
    assert!(
        st["finalReport"]
            .as_str()
            .is_some_and(|r| !r.trim().is_empty())
    );
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let session: glassbox::store::SessionId =
        events[0]["sessionId"].as_str().unwrap().parse().unwrap();
    let nodes = store.session_nodes(session).unwrap();
    for n in &nodes {
        // A tool may fail (its step says why); every other node ends complete.
        if n.kind != NodeType::ToolCall {
            assert_eq!(n.status, NodeStatus::Complete, "{:?}: {}", n.kind, n.text);
        }
        if matches!(n.kind, NodeType::Plan | NodeType::Audit) {
            assert!(n.meta["artifact"].is_object(), "{:?}", n.kind);
        }
    }
    let kinds: Vec<NodeType> = nodes.iter().map(|n| n.kind).collect();
    assert_eq!(kinds.first(), Some(&NodeType::Query));
    assert_eq!(kinds.last(), Some(&NodeType::Synthesis));
    assert_eq!(
        kinds.iter().filter(|k| **k == NodeType::ToolCall).count(),
        steps.len()
    );
}

#[test]
fn diff_and_merge_run_on_the_local_model_with_well_formed_labels_and_claims() {
    if model_path().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let session =
        glassbox::store::Session::new("rent or buy", glassbox::store::SessionSource::Glassbox);
    let mut ids = Vec::new();
    let mut nodes = Vec::new();
    for text in [
        "Renting keeps you free to move.\n\nHouse prices rose fast last year.\n\nClosing costs eat most gains within three years.",
        "Renting keeps you free to move.\n\nBuying builds equity every month.\n\nClosing costs eat most gains within three years.",
    ] {
        let n = glassbox::store::Node::new(session.id, NodeType::Response, text);
        ids.push(n.id.to_string());
        nodes.push(n);
    }
    store
        .write(|w| {
            w.put_session(&session)?;
            nodes.iter().try_for_each(|n| w.put_node(n).map(|_| ()))
        })
        .unwrap();
    drop(store);
    // Every step pairs up in order (no floor), so the middle pair goes to the model.
    let diff = glassbox(dir.path())
        .env("GLASSBOX_DIFF__MIN_SIMILARITY", "0")
        .env("GLASSBOX_DIFF__MIN_OVERLAP", "0")
        .args(["--provider", "local", "diff", &ids[0], &ids[1], "--json"])
        .output()
        .unwrap();
    assert!(
        diff.status.success(),
        "{}",
        String::from_utf8_lossy(&diff.stderr)
    );
    let d: serde_json::Value = serde_json::from_slice(&diff.stdout).unwrap();
    let pairs = d["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 3, "{d}");
    assert_eq!(
        (pairs[0]["label"].as_str(), pairs[0]["by"].as_str()),
        (Some("same"), Some("identical"))
    );
    assert_eq!(
        (pairs[2]["label"].as_str(), pairs[2]["by"].as_str()),
        (Some("same"), Some("identical"))
    );
    let middle = pairs[1]["label"].as_str().unwrap();
    assert!(["same", "differs", "contradicts"].contains(&middle), "{d}");
    assert_eq!(pairs[1]["by"], "model", "{d}");

    let merge = glassbox(dir.path())
        .env("GLASSBOX_DIFF__MERGE__MAX_TOKENS", "200")
        .args(["--provider", "local", "merge", &ids[0], &ids[1], "--json"])
        .output()
        .unwrap();
    assert!(
        merge.status.success(),
        "{}",
        String::from_utf8_lossy(&merge.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&merge.stdout).unwrap();
    let claims = m["claims"].as_array().unwrap();
    assert!(!claims.is_empty(), "{m}");
    for c in claims {
        assert!(!c["text"].as_str().unwrap().trim().is_empty(), "{c}");
        let prov = c["provenance"].as_array().unwrap();
        assert_eq!(c["new"] == true, prov.is_empty(), "{c}");
        for p in prov {
            assert!(ids.iter().any(|id| p["node"] == id.as_str()), "{c}");
            assert!(
                p["steps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|s| s.as_u64().unwrap() < 3),
                "{c}"
            );
        }
    }
}
