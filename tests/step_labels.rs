//! Step-label export through the real binary: two chains of one session verified against
//! the scripted server, human checkpoints on two steps (one overruling an earlier
//! checkpoint), then `export --format prm800k` (JSON Lines) and `--format processbench`
//! (a JSON array) checked value by value, and the error for a session with nothing
//! verified.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use glassbox::store::{Node, NodeType, Session, SessionSource};
use serde_json::{Value, json};
use support::{Script, ScriptedServer, Step};

/// An OpenAI-style streamed answer carrying `text`.
fn answer(text: &str) -> Step {
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let done = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}});
    Step::sse(format!("data: {chunk}\n\ndata: {done}\n\ndata: [DONE]\n\n"))
}

fn judgement(verdict: &str, confidence: f64) -> Step {
    answer(
        &json!({"verdict": verdict, "confidence": confidence, "explanation": "scripted",
            "issues": []})
        .to_string(),
    )
}

const STEPS_91: [&str; 3] = [
    "91 is odd, so 2 does not divide it.",
    "91 = 7 × 13.",
    "So 91 is prime.",
];
const STEPS_2: [&str; 2] = ["2 has no divisors but 1 and itself.", "So 2 is prime."];
const CORRECTION: &str = "91 = 7 × 13 has factors, so 91 is not prime.";

struct Bin {
    data: PathBuf,
    url: String,
}

impl Bin {
    /// Runs the binary with the scripted server as its OpenAI-compatible provider.
    async fn run(&self, args: &[&str]) -> Output {
        let data = self.data.clone();
        let url = self.url.clone();
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_glassbox"))
                .env("GLASSBOX_DATA_DIR", &data)
                .envs(support::bin::store_env(&data))
                .env("GLASSBOX_CONFIG_DIR", data.join("config"))
                .env("OPENAI_API_KEY", "k")
                .env("GLASSBOX_NETWORK__MAX_RETRIES", "0")
                .env_remove("ANTHROPIC_API_KEY")
                .env_remove("GLASSBOX_PROVIDER")
                .args(["--provider", "openai", "--base-url", &format!("{url}/v1")])
                .args(&args)
                .output()
                .unwrap()
        })
        .await
        .unwrap()
    }

    /// Runs the binary, asserts success and returns stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert!(
            out.status.success(),
            "glassbox {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    async fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args).await).unwrap()
    }
}

/// A thinking node with ThinkGraph steps.
fn thinking(session: &Session, steps: &[&str], model: Option<&str>) -> Node {
    let mut t = Node::new(session.id, NodeType::Thinking, steps.join(" "));
    t.model = model.map(str::to_string);
    t.meta.insert(
        "steps".into(),
        json!(
            steps
                .iter()
                .enumerate()
                .map(|(i, s)| json!({"index": i, "kind": "analysis", "text": s}))
                .collect::<Vec<_>>()
        ),
    );
    t
}

/// A session holding the question "Is 91 prime?" and two thinking nodes to verify, plus an
/// unrelated session with nothing verified: (session, thinking 1, thinking 2, empty session).
fn seed(data: &Path) -> (String, String, String, String) {
    let store = support::store::open(&data.join("glassbox.redb")).unwrap();
    let s = Session::new("primes", SessionSource::Glassbox);
    let q = Node::new(s.id, NodeType::Query, "Is 91 prime?");
    let t1 = thinking(&s, &STEPS_91, Some("gen-model"));
    let t2 = thinking(&s, &STEPS_2, None);
    let empty = Session::new("nothing verified", SessionSource::Glassbox);
    let eq = Node::new(empty.id, NodeType::Query, "Hello?");
    store
        .write(|w| {
            w.put_session(&s)?;
            w.put_node(&q)?;
            w.put_node(&t1)?;
            w.put_node(&t2)?;
            w.put_session(&empty)?;
            w.put_node(&eq)
        })
        .unwrap();
    (
        s.id.to_string(),
        t1.id.to_string(),
        t2.id.to_string(),
        empty.id.to_string(),
    )
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap().to_string())
        .collect()
}

/// The PRM800K timestamp of a verification: its `verifiedAt`, naive, in microseconds.
fn timestamp(verified: &Value) -> String {
    let t: chrono::DateTime<chrono::Utc> = verified["metadata"]["verifiedAt"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
}

/// A PRM800K step: the step text rated by `rating`, with whose verdict it is.
fn prm_step(
    text: &str,
    model: i64,
    human: Option<i64>,
    human_completion: Value,
    chosen: Value,
) -> Value {
    json!({
        "completions": [{
            "text": text,
            "rating": human.unwrap_or(model),
            "flagged": false,
            "source": if human.is_some() { "human" } else { "model" },
            "modelRating": model,
            "humanRating": human,
        }],
        "human_completion": human_completion,
        "chosen_completion": chosen,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_and_human_step_verdicts_export_as_prm800k_and_processbench() {
    let server = ScriptedServer::start(Script::new(vec![
        // Chain 1: the model misjudges step 2 and shrugs at the wrong conclusion.
        judgement("correct", 0.9),
        judgement("incorrect", 0.6),
        judgement("neutral", 0.5),
        // Chain 2: both steps right.
        judgement("correct", 0.95),
        judgement("correct", 0.9),
        // The alternative branch `checkpoint --verdict disagree --correction` reasons.
        answer("Since 7 divides 91, 91 is composite."),
    ]))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let bin = Bin {
        data: dir.path().to_path_buf(),
        url: server.url(),
    };
    let (sid, t1, t2, empty) = seed(dir.path());

    let v1 = bin.json(&["verify", "--node", &t1, "--json"]).await;
    let v2 = bin
        .json(&[
            "verify",
            "--node",
            &t2,
            "--question",
            "Is 2 prime?",
            "--json",
        ])
        .await;
    assert_eq!(v1["sessionId"], sid.as_str());
    assert_eq!(v2["sessionId"], sid.as_str());
    let steps1 = ids(&v1["nodeIds"]);
    assert_eq!(steps1.len(), 3);
    assert_eq!(ids(&v2["nodeIds"]).len(), 2);

    // Step 2 (the model said incorrect): first disputed, then verified — the newer
    // checkpoint holds. Step 3 (the model said neutral): disagreed with, corrected.
    let c = bin
        .json(&["checkpoint", &steps1[1], "--verdict", "disagree", "--json"])
        .await;
    assert_eq!(c["annotation"]["verdict"], "disagree");
    bin.ok(&["checkpoint", &steps1[1], "--verdict", "verified"])
        .await;
    let c = bin
        .json(&[
            "checkpoint",
            &steps1[2],
            "--verdict",
            "disagree",
            "--correction",
            CORRECTION,
            "--json",
        ])
        .await;
    assert_eq!(c["annotation"]["correction"], CORRECTION);
    assert!(c["alternativeBranch"].is_object(), "{c}");
    // Five judgements and the alternative branch; the plain checkpoints ask no model.
    assert_eq!(server.requests().len(), 6);

    // PRM800K: JSON Lines, one chain per line, oldest first.
    let text = bin
        .ok(&["export", &sid[sid.len() - 8..], "--format", "prm800k"])
        .await;
    assert!(text.ends_with('\n'));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    let expected1 = json!({
        "labeler": "glassbox",
        "timestamp": timestamp(&v1),
        "generation": null,
        "is_quality_control_question": false,
        "is_initial_screening_question": false,
        "question": {
            "problem": "Is 91 prime?",
            "pre_generated_steps": STEPS_91,
            "pre_generated_verifier_score": v1["overallScore"],
        },
        "label": {
            "steps": [
                prm_step(STEPS_91[0], 1, None, Value::Null, json!(0)),
                prm_step(STEPS_91[1], -1, Some(1), Value::Null, json!(0)),
                prm_step(
                    STEPS_91[2],
                    0,
                    Some(-1),
                    json!({"text": CORRECTION, "rating": null, "source": "human",
                        "flagged": false, "corrected_rating": null}),
                    Value::Null,
                ),
            ],
            "total_time": v1["metadata"]["durationMs"],
            "finish_reason": "found_error",
        },
        "run": v1["runId"],
    });
    assert_eq!(lines[0], expected1);
    let expected2 = json!({
        "labeler": "glassbox",
        "timestamp": timestamp(&v2),
        "generation": null,
        "is_quality_control_question": false,
        "is_initial_screening_question": false,
        "question": {
            "problem": "Is 2 prime?",
            "pre_generated_steps": STEPS_2,
            "pre_generated_verifier_score": v2["overallScore"],
        },
        "label": {
            "steps": [
                prm_step(STEPS_2[0], 1, None, Value::Null, json!(0)),
                prm_step(STEPS_2[1], 1, None, Value::Null, json!(0)),
            ],
            "total_time": v2["metadata"]["durationMs"],
            "finish_reason": "solution",
        },
        "run": v2["runId"],
    });
    assert_eq!(lines[1], expected2);
    // √(0.95 · 0.9)
    assert!((v2["overallScore"].as_f64().unwrap() - 0.855_f64.sqrt()).abs() < 1e-12);

    // ProcessBench: one JSON array written to the file; the label follows the humans
    // (step 2 verified, step 3 wrong), not the model (step 2 wrong).
    let file = dir.path().join("labels.json");
    let out = bin
        .run(&[
            "export",
            &sid,
            "--format",
            "processbench",
            "-o",
            file.to_str().unwrap(),
        ])
        .await;
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!("wrote {} (2 chain(s), 5 step(s))", file.display())
    );
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.starts_with("[\n") && written.ends_with("]\n"),
        "{written}"
    );
    let pb: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(
        pb,
        json!([
            {"id": v1["runId"], "generator": "gen-model", "problem": "Is 91 prime?",
             "steps": STEPS_91, "label": 2},
            {"id": v2["runId"], "generator": null, "problem": "Is 2 prime?",
             "steps": STEPS_2, "label": -1},
        ])
    );

    // A session nobody verified has no labels: a clear error, and no file.
    let none = dir.path().join("none.json");
    for format in ["prm800k", "processbench"] {
        let out = bin
            .run(&[
                "export",
                &empty,
                "--format",
                format,
                "-o",
                none.to_str().unwrap(),
            ])
            .await;
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("session {empty} has no verified steps")),
            "{err}"
        );
        assert!(!none.exists());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_help_names_the_label_formats() {
    let dir = tempfile::tempdir().unwrap();
    let bin = Bin {
        data: dir.path().to_path_buf(),
        url: "http://127.0.0.1:9".into(),
    };
    let help = bin.ok(&["export", "--help"]).await;
    assert!(help.contains("prm800k"), "{help}");
    assert!(help.contains("processbench"), "{help}");
    assert!(help.contains("glassbox checkpoint"), "{help}");
    let out = bin.run(&["export", "abcd", "--format", "prm800"]).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("prm800k"));
}
