//! Branch diff and merge as a user runs them, over real HTTP against the scripted
//! OpenAI-compatible server: a recorded two-branch fork, then `glassbox diff` of its branches
//! (identical steps `same`, a step one branch alone has `only_a`/`only_b`, the model's label
//! on the rest, cached for the next diff), `--no-model`, and `glassbox merge` whose every
//! claim names an existing node and step or says "new", down to the Markdown footnotes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;

use glassbox::store::{EdgeType, NodeId, NodeType};
use serde_json::{Value, json};
use support::bin::glassbox;
use support::{Script, ScriptedServer, Step, fixtures};

fn sse(text: &str) -> String {
    support::wire::openai_stream(&[text])
}

fn answer(v: &Value) -> Step {
    Step::sse(sse(&v.to_string()))
}

/// `glassbox ARGS…` on the scripted server (or no provider at all when `url` is `None`).
fn run(data: &Path, url: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut c = glassbox(data);
    if let Some(url) = url {
        c.args(["--provider", "openai", "--base-url", &format!("{url}/v1")])
            .env("OPENAI_API_KEY", "k");
    }
    c.args(args)
        .env("GLASSBOX_NETWORK__MAX_RETRIES", "0")
        .env("GLASSBOX_EMBEDDINGS__PROVIDER", "none")
        .output()
        .unwrap()
}

fn ok_json(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A fork of two branches played from the recorded fixture; returns the branches' node ids
/// and their conclusions.
async fn recorded_fork(data: &Path) -> Vec<(String, String)> {
    let script = Script::load(fixtures().join("fork_two_branches.script.json"));
    let server = ScriptedServer::start(script).await;
    let url = server.url();
    let out = tokio::task::spawn_blocking({
        let data = data.to_path_buf();
        move || {
            run(
                &data,
                Some(&url),
                &[
                    "fork",
                    "Should we rewrite the billing service?",
                    "--styles",
                    "conservative,aggressive",
                    "--json",
                ],
            )
        }
    })
    .await
    .unwrap();
    let v = ok_json(&out);
    v["branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["nodeId"].as_str().unwrap().to_string(),
                b["conclusion"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The short form of an id, as lists and exports show it (its last 8 hex digits).
fn short(id: &str) -> String {
    let hex = id.replace('-', "");
    hex[hex.len() - 8..].to_string()
}

/// The step text of index `i` on side `side` of a diff.
fn step_text(d: &Value, side: &str, i: &Value) -> String {
    let i = i.as_u64().unwrap();
    d[side]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["index"] == i)
        .unwrap()["text"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_of_two_recorded_fork_branches_aligns_labels_and_caches() {
    let data = tempfile::tempdir().unwrap();
    let branches = recorded_fork(data.path()).await;
    assert_eq!(branches.len(), 2);
    let (a, b) = (&branches[0].0, &branches[1].0);
    // Which side holds the rewrite (it alone has the currency opportunity).
    let rewrite_is_a = branches[0].1.starts_with("Rewrite");

    let judge = ScriptedServer::start(Script::forever(answer(
        &json!({"label": "contradicts", "reason": "one keeps, one rewrites"}),
    )))
    .await;
    let url = judge.url();
    let (d1, d2, text, plain) = tokio::task::spawn_blocking({
        let data = data.path().to_path_buf();
        let (a, b) = (a.clone(), b.clone());
        move || {
            let d1 = ok_json(&run(&data, Some(&url), &["diff", &a, &b, "--json"]));
            let (sa, sb) = (short(&a), short(&b));
            let d2 = ok_json(&run(&data, Some(&url), &["diff", &sa, &sb, "--json"]));
            let text = run(&data, Some(&url), &["diff", &a, &b]);
            let plain = ok_json(&run(&data, None, &["diff", &a, &b, "--no-model", "--json"]));
            (d1, d2, text, plain)
        }
    })
    .await
    .unwrap();

    let pairs = d1["pairs"].as_array().unwrap();
    // Every step of each side shows exactly once, in order.
    for (side, key) in [("a", "a"), ("b", "b")] {
        let idx: Vec<u64> = pairs.iter().filter_map(|p| p[key].as_u64()).collect();
        let n = d1[side]["steps"].as_array().unwrap().len() as u64;
        assert_eq!(idx, (0..n).collect::<Vec<_>>(), "{side}: {d1}");
    }
    // Identical steps are `same`, by their text.
    for shared in [
        "The current system handles today's invoice volume.",
        "Technical debt keeps growing.",
        "Invoice volume grows slowly.",
    ] {
        let p = pairs
            .iter()
            .find(|p| !p["a"].is_null() && step_text(&d1, "a", &p["a"]) == shared)
            .unwrap_or_else(|| panic!("{shared} unpaired: {d1}"));
        assert_eq!(p["label"], "same", "{p}");
        assert_eq!(p["by"], "identical");
        assert_eq!(step_text(&d1, "b", &p["b"]), shared);
    }
    // The step only the rewrite branch has.
    let extra = "Onboard new currencies within days.";
    let (side, key, label) = if rewrite_is_a {
        ("a", "a", "only_a")
    } else {
        ("b", "b", "only_b")
    };
    let p = pairs
        .iter()
        .find(|p| !p[key].is_null() && step_text(&d1, side, &p[key]) == extra)
        .unwrap();
    assert_eq!(p["label"], label, "{d1}");
    assert!(p["similarity"].is_null());
    // The two conclusions pair up and the model's label stands.
    let p = pairs
        .iter()
        .find(|p| !p["a"].is_null() && step_text(&d1, "a", &p["a"]).contains("billing service"))
        .unwrap();
    assert!(
        step_text(&d1, "b", &p["b"]).contains("billing service"),
        "{d1}"
    );
    assert_eq!(p["label"], "contradicts");
    assert_eq!(p["by"], "model");
    assert_eq!(p["reason"], "one keeps, one rewrites");
    let judged = pairs.iter().filter(|p| p["by"] == "model").count();
    assert!(judged >= 1);
    // The first diff asked once per judged pair; the second (by prefixes) asked nothing and
    // reads the same labels from the cache; the text diff did not ask either.
    assert_eq!(judge.requests().len(), judged, "{d1}");
    let req = &judge.requests()[0].json;
    assert!(
        req.to_string().contains("contradicts"),
        "the schema lists the labels"
    );
    let labels = |d: &Value| -> Vec<Value> {
        d["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["label"].clone())
            .collect()
    };
    assert_eq!(labels(&d1), labels(&d2));
    assert!(
        d2["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["by"] != "model")
    );
    assert!(
        d2["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["by"] == "cache")
    );

    // The text view: two columns, label markers, counts.
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    for needle in ["= same", "! contradicts", " │ ", "3 same", label] {
        assert!(text.contains(needle), "{needle} missing:\n{text}");
    }

    // Without a model (and without any key): labels from similarity alone, same alignment.
    assert!(plain.get("judge").is_none());
    let rows = |d: &Value| -> Vec<(Value, Value)> {
        d["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["a"].clone(), p["b"].clone()))
            .collect()
    };
    assert_eq!(rows(&plain), rows(&d1));
    assert!(
        plain["pairs"].as_array().unwrap().iter().all(
            |p| ["same", "differs", "only_a", "only_b"].contains(&p["label"].as_str().unwrap())
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_merged_claim_names_an_existing_node_and_step_or_says_new() {
    let data = tempfile::tempdir().unwrap();
    let branches = recorded_fork(data.path()).await;
    let (a, b) = (branches[0].0.clone(), branches[1].0.clone());
    let server = ScriptedServer::start(Script::forever(answer(&json!({"claims": [
        {"text": "Today's volume is handled; fix the slow queries first.", "sources": ["A1", "B2"]},
        {"text": "Plan modules for new payment providers.", "sources": ["b3", "A9"]},
        {"text": "Measure invoice growth every quarter.", "sources": ["Z4"]},
        {"text": "Revisit the decision in a year.", "sources": ["new"]}
    ]}))))
    .await;
    let url = server.url();
    let (merged, md, bad) = tokio::task::spawn_blocking({
        let data = data.path().to_path_buf();
        let (a, b) = (a.clone(), b.clone());
        move || {
            let merged = ok_json(&run(
                &data,
                Some(&url),
                &["merge", &a, &b, "--focus", "cost", "--json"],
            ));
            let session = merged["session"].as_str().unwrap().to_string();
            let md = run(&data, None, &["export", &session, "-f", "md"]);
            let bad = run(&data, Some(&url), &["merge", &a, "ffffffffffff"]);
            (merged, md, bad)
        }
    })
    .await
    .unwrap();

    let ids: Vec<&str> = vec![&a, &b];
    let claims = merged["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 4);
    let steps_of = |node: &str| -> usize {
        merged["sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["node"] == node)
            .unwrap()["steps"]
            .as_array()
            .unwrap()
            .len()
    };
    for c in claims {
        let prov = c["provenance"].as_array().unwrap();
        if c["new"] == true {
            assert!(prov.is_empty(), "{c}");
            continue;
        }
        assert!(!prov.is_empty(), "{c}");
        for p in prov {
            let node = p["node"].as_str().unwrap();
            assert!(ids.contains(&node), "{c}");
            for s in p["steps"].as_array().unwrap() {
                assert!((s.as_u64().unwrap() as usize) < steps_of(node), "{c}");
            }
        }
    }
    assert_eq!(claims[0]["provenance"][0]["node"], a.as_str());
    assert_eq!(claims[0]["provenance"][1]["node"], b.as_str());
    // A9 names no step: only b3 stays. Z4 names no line: the claim is new.
    assert_eq!(claims[1]["provenance"].as_array().unwrap().len(), 1);
    assert_eq!(claims[2]["new"], true);
    assert_eq!(claims[3]["new"], true);
    // The request numbered both lines' steps (the local grammar narrows `sources` to them).
    let req = server.requests()[0].json.to_string();
    assert!(req.contains("A1. [") && req.contains("B2. [") && !req.contains("C1. ["));
    assert!(req.contains("Focus on: cost"));

    // The node: a synthesis that aggregates both branches, claims in its meta.
    let store = support::store::open(&data.path().join("glassbox.redb")).unwrap();
    let node: NodeId = merged["node"].as_str().unwrap().parse().unwrap();
    let n = store.node(node).unwrap().unwrap();
    assert_eq!(n.kind, NodeType::Synthesis);
    assert_eq!(n.meta["claims"], merged["claims"]);
    let mut edges: Vec<(EdgeType, String)> = store
        .edges_from(node, None)
        .unwrap()
        .into_iter()
        .map(|e| (e.kind, e.dst.to_string()))
        .collect();
    edges.sort();
    let mut want = vec![
        (EdgeType::Aggregates, a.clone()),
        (EdgeType::Aggregates, b.clone()),
    ];
    want.sort();
    assert_eq!(edges, want);
    drop(store);

    // Markdown: provenance as footnotes.
    assert!(
        md.status.success(),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
    let md = String::from_utf8_lossy(&md.stdout);
    let short = short(merged["node"].as_str().unwrap());
    for needle in [
        "### Merge".to_string(),
        format!("[^{short}-1]"),
        format!("[^{short}-1]: fork_branch `"),
        "step 1: \"".to_string(),
        format!("[^{short}-4]: new: no source step"),
    ] {
        assert!(md.contains(&needle), "{needle} missing:\n{md}");
    }

    // A node that does not exist: one clear line, non-zero exit.
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("ffffffffffff") && err.lines().count() == 1,
        "{err}"
    );
}
