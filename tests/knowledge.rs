//! `glassbox knowledge …` as a user runs it: a folder of three documents on the real
//! all-MiniLM-L6-v2 embedder (found by meaning, added once, removed with its chunks, a
//! binary file skipped), and without a model: notes, URLs, search by words, the JSON shapes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Output;

use support::bin::Project;

const VOLCANOES: &str = "# Volcanoes\n\n\
Volcanoes form where magma from the mantle reaches the surface. At divergent plate \
boundaries basaltic magma wells up quietly; at subduction zones water-rich magma builds \
stratovolcanoes such as Fuji and St. Helens.\n\n\
Basaltic lava is runny and travels for kilometres, while rhyolitic magma is so viscous \
that trapped gas makes it explode. Pyroclastic flows, avalanches of hot ash and gas moving \
faster than a car, are the deadliest hazard of an eruption.\n";

const SOURDOUGH: &str = "# Keeping a sourdough starter\n\n\
A sourdough starter is a culture of wild yeast and lactic acid bacteria living in flour and \
water. Feed it twice a day at room temperature: discard all but a spoonful, then add equal \
weights of flour and water. Before baking, feed the starter four to eight hours ahead so it \
is bubbly and has doubled when you mix the dough.\n\n\
A starter kept in the fridge only needs feeding once a week. If a grey liquid (hooch) \
collects on top it is hungry: pour it off and feed it.\n";

const AQUEDUCTS: &str = "# Roman aqueducts\n\n\
Rome's eleven aqueducts carried water from springs in the hills to the city's fountains, \
baths and private houses. Most of their length ran underground in stone channels; the \
famous arcades only carried the channel across valleys.\n\n\
The engineers kept a gentle, steady slope over tens of kilometres, using a levelling \
instrument called the chorobates. The Aqua Claudia, finished under Claudius in 52 AD, ran \
almost seventy kilometres.\n";

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn write_folder(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("1-volcanoes.md"), VOLCANOES).unwrap();
    std::fs::write(dir.join("2-sourdough.md"), SOURDOUGH).unwrap();
    std::fs::write(dir.join("3-aqueducts.md"), AQUEDUCTS).unwrap();
    std::fs::write(dir.join("logo.png"), [0x89, b'P', b'N', b'G', 0, 0, 0, 13]).unwrap();
}

#[test]
fn a_folder_is_found_by_meaning_added_once_and_removed_with_its_chunks() {
    let env = Project::new();
    let docs = env.project.join("docs");
    write_folder(&docs);
    let docs_arg = docs.to_str().unwrap();

    let out = env.run(&["knowledge", "add", docs_arg]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(
        text.starts_with("added 3 documents (") && text.contains("0 unchanged, 1 skipped"),
        "{text}"
    );
    assert!(err.contains("2-sourdough.md"), "progress per file: {err}");
    let png = docs.join("logo.png");
    assert!(
        err.contains(&format!("skipped {}: binary file", png.display())),
        "{err}"
    );
    assert!(!err.contains("warning"), "the model loads: {err}");

    let list = env.json(&["knowledge", "list", "--json"]);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 3);
    assert!(
        list.iter()
            .all(|d| d["embedder"] == "all-MiniLM-L6-v2/384" && d["kind"] == "file")
    );

    // Answered by the second document only, in words it does not use ("leaven", "bread").
    let hits = env.json(&[
        "knowledge",
        "search",
        "How long before making bread should I refresh my leaven?",
        "--json",
    ]);
    let hits = hits.as_array().unwrap();
    assert!(!hits.is_empty() && hits.len() <= 8, "{hits:?}");
    assert_eq!(hits[0]["rank"], 1);
    assert_eq!(hits[0]["doc"]["label"], "2-sourdough.md", "{hits:#?}");
    let (start, end) = (
        hits[0]["start"].as_u64().unwrap() as usize,
        hits[0]["end"].as_u64().unwrap() as usize,
    );
    let span: String = SOURDOUGH.chars().skip(start).take(end - start).collect();
    assert_eq!(hits[0]["text"], span.as_str());
    let score = hits[0]["score"].as_f64().unwrap();
    assert!(score > 0.2 && score <= 1.0001, "{score}");

    // Text output: rank, score, label:start-end, the chunk.
    let out = env.run(&["knowledge", "search", "pyroclastic", "flows", "-k", "1"]);
    let text = stdout(&out);
    assert!(text.starts_with(" 1. "), "{text}");
    assert!(text.contains("1-volcanoes.md:"), "{text}");
    assert_eq!(text.lines().count(), 2, "{text}");

    // Again: nothing added.
    let again = env.run(&["knowledge", "add", docs_arg]);
    assert!(
        stdout(&again).starts_with("added 0 documents (0 chunks), 3 unchanged, 1 skipped"),
        "{}",
        stdout(&again)
    );
    assert_eq!(
        env.json(&["knowledge", "list", "--json"])
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // Remove the second by its label; its chunks go with it.
    let sourdough = list
        .iter()
        .find(|d| d["label"] == "2-sourdough.md")
        .unwrap();
    let removed = env.json(&["knowledge", "rm", "2-sourdough.md", "--json"]);
    assert_eq!(removed["id"], sourdough["id"]);
    let left = env.json(&["knowledge", "list", "--json"]);
    assert_eq!(left.as_array().unwrap().len(), 2);
    let hits = env.json(&[
        "knowledge",
        "search",
        "sourdough starter",
        "-k",
        "50",
        "--json",
    ]);
    assert!(
        hits.as_array()
            .unwrap()
            .iter()
            .all(|h| h["doc"]["id"] != sourdough["id"]),
        "{hits:#?}"
    );
    let store = support::store::open(&env.data.join(glassbox::paths::STORE_FILE)).unwrap();
    let id: glassbox::store::DocId = sourdough["id"].as_str().unwrap().parse().unwrap();
    assert!(store.knowledge_chunks(id).unwrap().is_empty());
    let unknown = env
        .cmd()
        .args(["knowledge", "rm", "nothing-like-this"])
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    assert!(stderr(&unknown).contains("no document matches 'nothing-like-this'"));
}

#[test]
fn without_a_model_notes_urls_and_words_work() {
    let env = Project::new();
    let empty_models = env.data.join("no-models");
    std::fs::create_dir_all(&empty_models).unwrap();
    let run = |args: &[&str]| {
        env.cmd()
            .env("GLASSBOX_MODELS_DIR", &empty_models)
            .args(args)
            .output()
            .unwrap()
    };

    let out = run(&[
        "knowledge",
        "add",
        "--note",
        "The staging database listens on port 6432.",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("added 1 document (1 chunk), 0 unchanged, 0 skipped"),
        "{}",
        stdout(&out)
    );
    let warning = stderr(&out);
    assert_eq!(
        warning.lines().filter(|l| l.contains("warning")).count(),
        1,
        "one warning line: {warning}"
    );
    assert!(warning.contains("embedding model unavailable"), "{warning}");
    // The same note again is not added twice.
    let again = run(&[
        "knowledge",
        "add",
        "--note",
        "The staging database listens on port 6432.",
        "--json",
    ]);
    let report = json(&again);
    assert_eq!(report["added"].as_array().unwrap().len(), 0);
    assert_eq!(report["unchanged"].as_array().unwrap().len(), 1);

    let out = run(&[
        "knowledge",
        "add",
        "https://example.org/raft.pdf",
        "--label",
        "Raft paper",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let bad = run(&["knowledge", "add", "https://"]);
    assert!(!bad.status.success());
    let two_labels = run(&["knowledge", "add", "a.md", "b.md", "--label", "x"]);
    assert!(!two_labels.status.success());
    assert!(stderr(&two_labels).contains("--label names one document"));

    let list = json(&run(&["knowledge", "list", "--json"]));
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    let keys: Vec<&str> = list[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for k in [
        "id", "kind", "label", "source", "hash", "added_at", "chars", "chunks", "embedder",
    ] {
        assert!(keys.contains(&k), "{k} in {keys:?}");
    }
    assert_eq!(list[0]["kind"], "note");
    assert_eq!(list[0]["source"], "note");
    assert_eq!(list[0]["embedder"], serde_json::Value::Null);
    assert_eq!(list[1]["kind"], "url");
    assert_eq!(list[1]["source"], "https://example.org/raft.pdf");
    assert_eq!(list[1]["label"], "Raft paper");
    assert_eq!(list[0]["hash"].as_str().unwrap().len(), 64);

    let text = stdout(&run(&["knowledge", "list"]));
    assert!(text.starts_with("ID        KIND  CHUNKS  ADDED"), "{text}");
    assert!(
        text.contains("Raft paper  (https://example.org/raft.pdf)"),
        "{text}"
    );

    let hits = json(&run(&[
        "knowledge",
        "search",
        "staging database port",
        "--json",
    ]));
    assert_eq!(hits[0]["doc"]["kind"], "note", "{hits:#?}");
    let hits = json(&run(&["knowledge", "search", "raft", "--json"]));
    assert_eq!(hits[0]["doc"]["label"], "Raft paper");
    assert_eq!(
        hits[0]["text"],
        "URL: https://example.org/raft.pdf\nLabel: Raft paper"
    );
    let none = run(&["knowledge", "search", "zebra"]);
    assert_eq!(none.status.code(), Some(1));

    let id = list[1]["id"].as_str().unwrap();
    let removed = json(&run(&["knowledge", "rm", &id[id.len() - 8..], "--json"]));
    assert_eq!(removed["label"], "Raft paper");
    assert_eq!(
        json(&run(&["knowledge", "list", "--json"]))
            .as_array()
            .unwrap()
            .len(),
        1
    );
}
