//! `glassbox memory …` as a user runs it, on the real all-MiniLM-L6-v2 embedder: storing
//! and finding a fact (by its words and by a paraphrase), a think turn that carries it to an
//! OpenAI-compatible server, auto-eviction, bad input, export/import, and a missing model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Output;

use support::bin::{Project, ok};
use support::{ChunkBy, Script, ScriptedServer, Step};

const FACT: &str =
    "The staging database for project BLUEHERON runs on host db7.internal, port 6432";

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `glassbox [LEAD…] ask ARGS…` against the OpenAI-compatible scripted server at `url`,
/// on the blocking pool (the server runs on this test's runtime); fails unless it exits 0.
async fn ask_openai(env: &Project, lead: &[&str], url: &str, args: &[&str]) -> Output {
    let mut cmd = env.cmd();
    cmd.args(lead)
        .args(["ask", "--provider", "openai", "--base-url", url])
        .args(args)
        .env("OPENAI_API_KEY", "sk-test");
    tokio::task::spawn_blocking(move || ok(&mut cmd))
        .await
        .unwrap()
}

/// 200 entries about other things in `env`'s project, through `memory import` (embedded on
/// the way in).
fn fill_unrelated(env: &Project) {
    let subjects = [
        "The marketing offsite",
        "Our cat Miso",
        "The kitchen renovation",
        "The quarterly newsletter",
        "Grandma's lasagne recipe",
        "The hiking trip",
        "The new laptop",
        "The vegetable garden",
        "The road bike",
        "The jazz concert",
    ];
    let verbs = [
        "needs",
        "was moved to",
        "depends on",
        "is planned for",
        "costs about",
        "was discussed with",
        "should include",
        "ended up with",
        "waits for",
        "got delayed by",
    ];
    let objects = [
        "next Tuesday",
        "the blue folder",
        "three extra chairs",
        "a bigger budget",
        "the neighbour",
        "fresh basil",
        "new brake pads",
        "Friday afternoon",
        "the old receipts",
        "a second opinion",
    ];
    let mut lines = String::new();
    for i in 0..200usize {
        let text = format!(
            "{} {} {} (note {i}).",
            subjects[i % 10],
            verbs[(i / 10) % 10],
            objects[(i * 7) % 10]
        );
        let entry = serde_json::json!({
            "id": uuid::Uuid::now_v7(),
            "tier": "archival",
            "scope": format!("project:{}", env.project.display()),
            "content": text,
            "tags": [],
            "importance": 0.5,
            "created_at": "2026-10-01T10:00:00Z",
            "updated_at": "2026-10-01T10:00:00Z",
            "provenance": {"origin": "test"},
        });
        lines.push_str(&entry.to_string());
        lines.push('\n');
    }
    let file = env.data.join("unrelated.jsonl");
    std::fs::create_dir_all(&env.data).unwrap();
    std::fs::write(&file, lines).unwrap();
    let report = json(&env.run(&["memory", "import", file.to_str().unwrap(), "--json"]));
    assert_eq!(report["imported"], 200);
    assert_eq!(
        report["embedded"], 200,
        "the embedder must be installed: {report}"
    );
}

fn ids(hits: &serde_json::Value) -> Vec<String> {
    hits.as_array()
        .unwrap()
        .iter()
        .map(|h| h["entry"]["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_stored_fact_is_found_first_by_its_words_and_by_a_paraphrase() {
    let env = Project::new();
    fill_unrelated(&env);
    let stored = json(&env.run(&["memory", "insert", FACT, "--json"]));
    let id = stored["ids"][0].as_str().unwrap().to_string();
    let hits = json(&env.run(&[
        "memory",
        "search",
        "where is the blueheron staging database",
        "--json",
    ]));
    assert_eq!(ids(&hits)[0], id, "{hits}");
    // No keyword in common with the fact.
    let hits = json(&env.run(&[
        "memory",
        "search",
        "which server hosts our pre-release DB?",
        "--limit",
        "3",
        "--json",
    ]));
    assert!(ids(&hits).contains(&id), "paraphrase missed: {hits}");
    let stats = json(&env.run(&["memory", "stats", "--json"]));
    assert_eq!(stats["archivalStorageEntries"], 201);
    assert_eq!(stats["totalSearches"], 2);
    // `show` names where it came from.
    let show = String::from_utf8(env.run(&["memory", "show", &id]).stdout).unwrap();
    assert!(
        show.contains("origin:     cli") && show.contains("all-MiniLM-L6-v2/384"),
        "{show}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_sends_the_remembered_fact_to_an_openai_compatible_server() {
    let env = Project::new();
    let fact = env.json(&["memory", "insert", FACT, "--json"])["ids"][0]
        .as_str()
        .unwrap()
        .to_string();
    env.run(&[
        "memory",
        "core",
        "append",
        "--section",
        "human",
        "Works on the BLUEHERON project",
    ]);
    let body = support::fixture("openai_reasoning_content.sse");
    let server =
        ScriptedServer::start(Script::forever(Step::sse(&body).rechunk(ChunkBy::Lines))).await;
    let url = format!("{}/v1", server.url());
    let out = ask_openai(
        &env,
        &[],
        &url,
        &["--json", "Which host runs the BLUEHERON staging database?"],
    )
    .await;
    let requests = server.requests();
    let messages = requests[0].json["messages"].to_string();
    assert!(
        messages.contains("db7.internal"),
        "fact not sent: {messages}"
    );
    assert!(
        messages.contains("Works on the BLUEHERON project"),
        "{messages}"
    );
    // The query node records what was used; the turn went to recall.
    let done = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["type"] == "done")
        .unwrap();
    let session = done["session"].as_str().unwrap();
    let show = json(&env.run(&["sessions", "show", session, "--json"]));
    let query = show["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "query")
        .unwrap()
        .clone();
    assert_eq!(
        query["meta"]["memory_used"].as_array().unwrap().len(),
        2,
        "{query}"
    );
    let stats = json(&env.run(&["memory", "stats", "--json"]));
    assert_eq!(stats["recallStorageEntries"], 2, "{stats}");
    // The turn's session is logged as having been given the fact.
    let shown = json(&env.run(&["memory", "show", &fact, "--json"]));
    assert_eq!(shown["learning"]["accesses"], 1, "{shown}");
    let recall = json(&env.run(&["memory", "list", "--tier", "recall", "--json"]));
    assert!(
        recall.to_string().contains(session),
        "recall entries name their session: {recall}"
    );
}

#[test]
fn filling_working_memory_past_capacity_evicts_to_80_percent() {
    let env = Project::new();
    // A capacity of 1,000 tokens; each note is about 100.
    let text = "x".repeat(370);
    let names = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven",
    ];
    let mut evicted = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let importance = format!("0.{i:02}");
        let note = format!("working note {name} {text}");
        let out = json(&ok(env
            .cmd()
            .env("GLASSBOX_MEMORY__CAPACITY_TOKENS", "1000")
            .args(["memory", "insert", "--working", "--json", "--importance"])
            .args([importance.as_str(), note.as_str()])));
        let now = out["evicted"].as_array().unwrap().clone();
        if !now.is_empty() {
            let stats = json(&ok(env
                .cmd()
                .env("GLASSBOX_MEMORY__CAPACITY_TOKENS", "1000")
                .args(["memory", "stats", "--json"])));
            assert!(
                stats["mainContextUtilization"].as_f64().unwrap() <= 0.8,
                "{stats}"
            );
        }
        evicted.extend(now);
    }
    assert!(!evicted.is_empty());
    let stats = json(&env.run(&["memory", "stats", "--json"]));
    assert!(stats["totalEvictions"].as_u64().unwrap() >= 1);
    // The least important went first, and it is in archival, searchable.
    let hits = json(&env.run(&[
        "memory", "search", "zero", "--tier", "archival", "--mode", "keyword", "--json",
    ]));
    assert_eq!(ids(&hits)[0], evicted[0].as_str().unwrap());
}

#[test]
fn bad_input_is_one_line_naming_the_value() {
    let env = Project::new();
    let cases: [(&[&str], &str); 5] = [
        (&["memory", "insert", "   "], "memory text is empty"),
        (&["memory", "insert", "x", "--importance", "1.5"], "1.5"),
        (&["memory", "search", "x", "--tier", "attic"], "attic"),
        (
            &["memory", "core", "append", "--section", "persona", "x"],
            "persona",
        ),
        (&["memory", "show", "abcdef12"], "abcdef12"),
    ];
    for (args, want) in cases {
        let out = env.cmd().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn export_import_round_trip_and_a_missing_model_falls_back_to_keywords() {
    let env = Project::new();
    env.run(&["memory", "insert", FACT, "--tags", "infra,db"]);
    env.run(&[
        "memory",
        "core",
        "append",
        "--section",
        "agent",
        "Answers tersely",
    ]);
    let export = env.run(&["memory", "export"]).stdout;
    assert_eq!(export.iter().filter(|b| **b == b'\n').count(), 2);

    // Another store for the same project, with no model files: keyword search only, one
    // warning.
    let other = env.same_project();
    let empty_models = other.data.join("no-models");
    std::fs::create_dir_all(&empty_models).unwrap();
    let file = other.data.join("mem.jsonl");
    std::fs::write(&file, &export).unwrap();
    let out = ok(other.cmd().env("GLASSBOX_MODELS_DIR", &empty_models).args([
        "memory",
        "import",
        file.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(json(&out)["imported"], 2);
    let out = ok(other.cmd().env("GLASSBOX_MODELS_DIR", &empty_models).args([
        "memory",
        "search",
        "staging database",
        "--json",
    ]));
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("keywords only"), "{err}");
    assert_eq!(json(&out).as_array().unwrap().len(), 1);
    // Entries inserted without a model get vectors from `reembed` once it is back.
    ok(other.cmd().env("GLASSBOX_MODELS_DIR", &empty_models).args([
        "memory",
        "insert",
        "a note made offline",
    ]));
    let re = json(&other.run(&["memory", "reembed", "--json"]));
    assert_eq!(re["embedded"], 1);
    // Lossless: the imported entries export byte for byte the same.
    let again = other.run(&["memory", "export"]).stdout;
    let again = String::from_utf8(again).unwrap();
    for line in String::from_utf8(export).unwrap().lines() {
        assert!(again.contains(line), "{line} changed");
    }
}

/// A long answer's head is embedded for recall while the answer streams: after the stream
/// the recall entry takes that vector (the log says so) rather than running the model once
/// the answer is over. It is the answer's vector all the same: a vector search for its words
/// finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_is_embedded_for_recall_while_it_streams() {
    let env = Project::new();
    // 400 words in 40 pieces, 20 ms apart: the first 256 are in long before the last.
    let pieces: Vec<String> = (0..40)
        .map(|i| format!("Entry {i}: the lighthouse keeper wrote down the evening tide and the wind at the harbour. "))
        .collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let body = support::wire::openai_stream(&refs);
    let server = ScriptedServer::start(Script::forever(
        Step::sse(&body).delay_each(std::time::Duration::from_millis(20)),
    ))
    .await;
    let url = format!("{}/v1", server.url());
    ask_openai(
        &env,
        &["-vv"],
        &url,
        &["What does the lighthouse keeper write down?"],
    )
    .await;
    let log = std::fs::read_to_string(env.data.join("glassbox.log")).unwrap();
    let ahead = log.find("a text's head embedded ahead");
    let taken = log.find("vector taken from a head embedded ahead");
    assert!(
        matches!((ahead, taken), (Some(a), Some(t)) if a < t),
        "the answer's head was not embedded ahead and taken: {log}"
    );
    let hits = env.json(&[
        "memory",
        "search",
        "the keeper notes the evening tide at the harbour",
        "--tier",
        "recall",
        "--mode",
        "vector",
        "--json",
    ]);
    let first = &hits.as_array().unwrap()[0];
    assert!(
        first.to_string().contains("lighthouse keeper"),
        "the answer is not the best vector match: {hits}"
    );
}
