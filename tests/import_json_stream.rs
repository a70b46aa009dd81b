//! `export --format json|md` written as the store is read and `import json` read as a
//! stream, through the binary: the same bytes as the whole-session forms, export → import →
//! export byte-identical on a session of thousands of nodes (more than one write batch),
//! and a bad file (bad late in the file too) stores nothing and leaves a replaced session
//! as it was.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use chrono::{Duration, TimeZone, Utc};
use glassbox::engines::transcript::export;
use glassbox::store::{
    Alternative, DecisionId, DecisionPoint, Edge, EdgeType, Insight, InsightId, Node, NodeId,
    NodeType, RawStream, Run, RunId, RunKind, RunStatus, Session, SessionId, SessionSource, Store,
    StoredChunk, StreamId,
};
use serde_json::json;
use support::bin::glassbox;

/// Nodes of the generated session: with their text, over 16 MB of JSON, so an import
/// stores them in more than one transaction.
const NODES: usize = 3_000;

fn store_path(data: &Path) -> PathBuf {
    data.join("glassbox.redb")
}

fn run(data: &Path, args: &[&str]) -> Output {
    glassbox(data).args(args).output().unwrap()
}

fn ok(data: &Path, args: &[&str]) -> Output {
    let out = run(data, args);
    assert!(
        out.status.success(),
        "glassbox {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The one error line of a failed command, without its prefix.
fn error_line(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
    err.trim_end()
        .strip_prefix("glassbox: error: ")
        .unwrap_or(&err)
        .to_string()
}

/// A session of `NODES` nodes of every kind the Markdown form draws, created out of id
/// order, with edges, decision points, a merge citing its sources, insights, a run and a
/// recorded stream.
fn generate(store: &Store) -> SessionId {
    let t0 = Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap();
    let mut s = Session::new("a generated \"session\"", SessionSource::ClaudeCode);
    s.model = Some("m-1".into());
    s.meta.insert("cwd".into(), json!("/home/dev/app"));
    let mut nodes: Vec<Node> = Vec::with_capacity(NODES);
    let mut edges = Vec::new();
    let mut dps = Vec::new();
    let kinds = [
        NodeType::Query,
        NodeType::Thinking,
        NodeType::ToolCall,
        NodeType::Response,
        NodeType::Compaction,
        NodeType::HumanAnnotation,
    ];
    for i in 0..NODES {
        let kind = kinds[i % kinds.len()];
        let body = format!("line {i} of {kind:?} — ünïcode ``` and \"quotes\"\n").repeat(100);
        let mut n = Node::new(s.id, kind, body);
        // Times run backwards in blocks, so time order is not id order.
        n.created_at = t0 + Duration::seconds(((i / 7) * 7 + (6 - i % 7)) as i64);
        match kind {
            NodeType::Thinking => {
                n.confidence = Some(0.5 + (i % 10) as f64 / 40.0);
                n.meta.insert(
                    "steps".into(),
                    json!([{"index": 0, "kind": "analysis", "text": format!("step of {i}"), "start": 0, "confidence": 0.6}]),
                );
                if i % 4 == 1 {
                    for k in 0..2 {
                        dps.push(DecisionPoint {
                            id: DecisionId::new(),
                            node: n.id,
                            step_number: k,
                            description: format!("choice {k} at {i}"),
                            chosen_path: "left".into(),
                            alternatives: vec![Alternative {
                                path: "right".into(),
                                reason_rejected: Some("longer".into()),
                            }],
                            confidence: 0.7,
                            created_at: n.created_at,
                        });
                    }
                }
            }
            NodeType::ToolCall => {
                n.meta.insert("tool".into(), json!("Bash"));
                n.meta
                    .insert("input".into(), json!({"command": format!("ls {i}")}));
                n.meta
                    .insert("result".into(), json!(format!("out ```` {i}\n")));
                n.meta.insert("is_error".into(), json!(i % 5 == 0));
            }
            _ => {}
        }
        if i % 11 == 0 {
            n.meta.insert("sidechain".into(), json!(true));
        }
        if let Some(prev) = nodes.last() {
            edges.push(Edge::new(prev.id, EdgeType::Influences, n.id));
        }
        if i >= 3 && i % 3 == 0 {
            edges.push(Edge::new(n.id, EdgeType::Refines, nodes[i - 3].id));
        }
        nodes.push(n);
    }
    // A merge citing a thinking node of the session and a node that is not in it.
    let mut merge = Node::new(s.id, NodeType::Synthesis, "merged");
    merge.meta.insert(
        "claims".into(),
        json!([
            {"text": "both agree", "provenance": [{"node": nodes[1].id, "steps": [0]}], "new": false},
            {"text": "from elsewhere", "provenance": [{"node": NodeId::new(), "steps": [2]}], "new": false},
            {"text": "fresh", "provenance": [], "new": true},
        ]),
    );
    merge.meta.insert("focus".into(), json!("the merge"));
    nodes.push(merge);
    let stream = StreamId::new();
    let header = RawStream {
        id: stream,
        session: s.id,
        provider: "anthropic".into(),
        model: "m-1".into(),
        request: json!({"messages": []}),
        created_at: t0,
        nodes: vec![nodes[1].id],
        chunk_count: 2,
        total_bytes: 7,
    };
    let chunks = [
        StoredChunk {
            offset_us: 0,
            bytes: vec![0, 159, 146, 150],
        },
        StoredChunk {
            offset_us: 20,
            bytes: b"ok\n".to_vec(),
        },
    ];
    let insight = Insight {
        id: InsightId::new(),
        session: s.id,
        kind: "pattern".into(),
        text: "thinks in blocks".into(),
        confidence: 0.4,
        evidence: vec![json!({"node": nodes[0].id})],
        nodes_analyzed: vec![nodes[0].id],
        created_at: t0,
    };
    let run = Run {
        id: RunId::new(),
        session: s.id,
        kind: RunKind::Verify,
        params: json!({"k": 1}),
        summary: json!({}),
        status: RunStatus::Done,
        created_at: t0,
        finished_at: None,
    };
    store
        .write(|w| {
            w.put_session(&s)?;
            for n in &nodes {
                w.put_node(n)?;
            }
            w.put_edges(&edges)?;
            for d in &dps {
                w.put_decision_point(d)?;
            }
            w.put_insight(&insight)?;
            w.put_run(&run)?;
            w.put_raw_stream(&header)?;
            for (i, c) in chunks.iter().enumerate() {
                w.put_raw_chunk(stream, i as u32, c)?;
            }
            Ok(())
        })
        .unwrap();
    s.id
}

/// A data dir holding the generated session; its id.
fn generated(dir: &Path) -> (PathBuf, SessionId) {
    let data = dir.join("a");
    std::fs::create_dir_all(&data).unwrap();
    let store = support::store::open(&store_path(&data)).unwrap();
    let sid = generate(&store);
    (data, sid)
}

/// The session's JSON and Markdown as the whole-session functions make them.
fn whole(data: &Path, sid: SessionId) -> (String, String) {
    let store = support::store::open(&store_path(data)).unwrap();
    let e = export::collect(&store, sid).unwrap();
    (export::to_json(&e).unwrap(), export::to_markdown(&e))
}

fn sessions(data: &Path) -> Vec<Session> {
    support::store::open(&store_path(data))
        .unwrap()
        .sessions()
        .unwrap()
}

#[test]
fn streamed_exports_are_the_whole_session_bytes_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (a, sid) = generated(dir.path());
    let (json_text, md_text) = whole(&a, sid);
    assert!(json_text.len() > 16 << 20, "{} bytes", json_text.len());
    let id = sid.to_string();
    let file = dir.path().join("a.json");
    let out = ok(
        &a,
        &[
            "export",
            &id,
            "--format",
            "json",
            "-o",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        format!(
            "wrote {} ({} nodes, {} edges)",
            file.display(),
            NODES + 1,
            NODES - 1 + NODES / 3 - 1
        )
    );
    assert!(std::fs::read_to_string(&file).unwrap() == json_text);
    let out = ok(&a, &["export", &id, "--format", "json"]);
    assert!(out.stdout == json_text.as_bytes());
    let out = ok(&a, &["export", &id, "--format", "md"]);
    assert!(out.stdout == md_text.as_bytes());
    assert!(md_text.contains("Decision points:") && md_text.contains("### Merge"));
    assert!(md_text.contains("thinking `") && md_text.contains("node `"));

    // Into another store, and out again: the same bytes.
    let b = dir.path().join("b");
    let out = ok(&b, &["import", "json", file.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["session"], json!(id));
    assert_eq!(v["nodes"], json!(NODES + 1));
    assert_eq!(v["raw_streams"], json!(1));
    let (again_json, again_md) = whole(&b, sid);
    assert!(again_json == json_text);
    assert!(again_md == md_text);
    let back = dir.path().join("b.json");
    ok(
        &b,
        &[
            "export",
            &id,
            "--format",
            "json",
            "-o",
            back.to_str().unwrap(),
        ],
    );
    assert!(std::fs::read(&back).unwrap() == json_text.as_bytes());
    let md = dir.path().join("b.md");
    ok(
        &b,
        &["export", &id, "--format", "md", "-o", md.to_str().unwrap()],
    );
    assert!(std::fs::read(&md).unwrap() == md_text.as_bytes());

    // The same file again is refused and changes nothing; with --replace it is the same.
    let err = error_line(&run(&b, &["import", "json", file.to_str().unwrap()]));
    assert!(err.contains("already in the store"), "{err}");
    ok(&b, &["import", "json", file.to_str().unwrap(), "--replace"]);
    assert!(whole(&b, sid).0 == json_text);
    assert_eq!(sessions(&b).len(), 1);
}

/// The line of `text` on which `needle` starts.
fn line_of(text: &str, needle: &str) -> usize {
    let at = text.find(needle).unwrap();
    text[..at].matches('\n').count() + 1
}

#[test]
fn a_bad_file_stores_nothing_and_keeps_a_replaced_session() {
    let dir = tempfile::tempdir().unwrap();
    let (a, sid) = generated(dir.path());
    let (json_text, _) = whole(&a, sid);
    let doc: serde_json::Value = serde_json::from_str(&json_text).unwrap();
    let last = doc["nodes"][NODES]["id"].as_str().unwrap().to_string();
    let b = dir.path().join("b");

    // The last node has a kind no glassbox knows: the error names its line.
    let bad_kind = json_text.replacen("\"kind\": \"synthesis\"", "\"kind\": \"poem\"", 1);
    assert_ne!(bad_kind, json_text);
    let file = dir.path().join("kind.json");
    std::fs::write(&file, &bad_kind).unwrap();
    let err = error_line(&run(&b, &["import", "json", file.to_str().unwrap()]));
    let line = line_of(&bad_kind, "\"poem\"");
    let (at, reason) = err.split_once(": ").unwrap();
    assert!(
        at.starts_with(&format!("{}:{line}:", file.display())),
        "{err}"
    );
    assert!(
        reason.starts_with("invalid session export: unknown variant `poem`"),
        "{err}"
    );
    assert!(sessions(&b).is_empty());

    // An edge at the end leaving a node that is not in the file.
    let mut dangling = doc.clone();
    let stranger = NodeId::new().to_string();
    let edges = dangling["edges"].as_array_mut().unwrap();
    let mut e = edges[0].clone();
    e["src"] = json!(stranger);
    edges.push(e);
    let file = dir.path().join("edge.json");
    std::fs::write(&file, serde_json::to_string_pretty(&dangling).unwrap()).unwrap();
    let err = error_line(&run(&b, &["import", "json", file.to_str().unwrap()]));
    assert!(
        err.starts_with(&format!("{}: edge {stranger} -> ", file.display()))
            && err.ends_with("starts at a node that is not in the file"),
        "{err}"
    );
    assert!(sessions(&b).is_empty());

    // Over an imported session with --replace: the bad files leave it as it was.
    let good = dir.path().join("good.json");
    std::fs::write(&good, &json_text).unwrap();
    ok(&b, &["import", "json", good.to_str().unwrap()]);
    let mut other = doc.clone();
    other["nodes"][NODES]["session"] = json!(SessionId::new().to_string());
    let file = dir.path().join("other.json");
    std::fs::write(&file, serde_json::to_string_pretty(&other).unwrap()).unwrap();
    for bad in ["kind.json", "edge.json", "other.json"] {
        let path = dir.path().join(bad);
        let err = error_line(&run(
            &b,
            &["import", "json", path.to_str().unwrap(), "--replace"],
        ));
        if bad == "other.json" {
            assert_eq!(
                err,
                format!(
                    "{}: node {last} belongs to another session than {sid}",
                    path.display()
                )
            );
        }
        assert!(whole(&b, sid).0 == json_text, "{bad} changed the session");
    }
    assert_eq!(sessions(&b).len(), 1);
}

#[test]
fn a_session_a_killed_import_left_is_named_by_doctor_and_replaced_by_the_next_import() {
    let dir = tempfile::tempdir().unwrap();
    let (a, sid) = generated(dir.path());
    let (json_text, _) = whole(&a, sid);
    let file = dir.path().join("s.json");
    std::fs::write(&file, &json_text).unwrap();
    let doc = export::parse_json(&json_text, "s.json").unwrap();
    // As an import killed after its first batch leaves the store: the session's record
    // marked unfinished, and some of its nodes.
    let b = dir.path().join("b");
    std::fs::create_dir_all(&b).unwrap();
    {
        let store = support::store::open(&store_path(&b)).unwrap();
        let mut marked = doc.session.clone();
        marked
            .meta
            .insert(export::UNFINISHED_IMPORT.into(), json!(true));
        store
            .write(|w| {
                w.put_session(&marked)?;
                for n in &doc.nodes[..500] {
                    w.put_node(n)?;
                }
                Ok(())
            })
            .unwrap();
    }
    let doctor = |data: &Path| -> serde_json::Value {
        serde_json::from_slice(&ok(data, &["doctor", "--json"]).stdout).unwrap()
    };
    assert_eq!(
        doctor(&b)["store"]["unfinished_imports"],
        json!([sid.to_string()])
    );
    let text = String::from_utf8(ok(&b, &["doctor"]).stdout).unwrap();
    assert!(
        text.contains(&format!(
            "unfinished 1 session left partway by a killed `import json`: {sid}"
        )),
        "{text}"
    );
    // `sessions list` and `show` mark it too; a finished session's JSON row has no such key.
    let list = |data: &Path| -> serde_json::Value {
        serde_json::from_slice(&ok(data, &["sessions", "list", "--json"]).stdout).unwrap()
    };
    assert_eq!(list(&b)[0]["unfinished_import"], json!(true));
    let text = String::from_utf8(ok(&b, &["sessions", "list"]).stdout).unwrap();
    assert!(text.contains("[unfinished import] "), "{text}");
    let text = String::from_utf8(ok(&b, &["sessions", "show", &sid.to_string()]).stdout).unwrap();
    assert!(text.contains("stopped partway"), "{text}");

    // The next import replaces it without --replace, and says so.
    let out = ok(&b, &["import", "json", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "replaced what an interrupted import of session {sid} had stored"
        )),
        "{err}"
    );
    assert_eq!(whole(&b, sid).0, json_text);
    assert_eq!(doctor(&b)["store"]["unfinished_imports"], json!([]));
    assert!(list(&b)[0].get("unfinished_import").is_none());
    // A finished session is refused again without --replace.
    let err = error_line(&run(&b, &["import", "json", file.to_str().unwrap()]));
    assert!(err.contains("--replace"), "{err}");
}

#[test]
fn an_export_stopped_by_ctrl_c_leaves_the_file_that_was_there() {
    let dir = tempfile::tempdir().unwrap();
    let (a, sid) = generated(dir.path());
    let (json_text, _) = whole(&a, sid);
    let dest = dir.path().join("s.json");
    let partial = dir.path().join(".s.json.partial");
    let before = "yesterday's export\n";
    // The export of 16 MB takes long enough to be stopped once its file is begun; should
    // one finish first all the same, it must have put the whole export in place.
    let mut stopped = 0;
    for _ in 0..5 {
        std::fs::write(&dest, before).unwrap();
        let child = glassbox(&a)
            .args(["export", &sid.to_string(), "--format", "json", "-o"])
            .arg(&dest)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = std::time::Instant::now();
        while !partial.exists() && t0.elapsed() < std::time::Duration::from_secs(20) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!partial.exists(), "the partial file is left: {err}");
        match out.status.code() {
            Some(130) => {
                assert_eq!(
                    err.trim(),
                    format!("glassbox: interrupted; {} was not written", dest.display())
                );
                assert_eq!(std::fs::read_to_string(&dest).unwrap(), before);
                stopped += 1;
            }
            Some(0) => assert_eq!(std::fs::read_to_string(&dest).unwrap(), json_text),
            other => panic!("exit {other:?}: {err}"),
        }
    }
    assert!(stopped > 0, "no export was stopped partway");

    // A folder is no file name; nothing is written.
    let out = run(&a, &["export", &sid.to_string(), "--format", "json", "-o"]);
    assert_eq!(out.status.code(), Some(2), "-o needs a value");
    let folder = format!("{}/", dir.path().display());
    let err = error_line(&run(
        &a,
        &[
            "export",
            &sid.to_string(),
            "--format",
            "json",
            "-o",
            &folder,
        ],
    ));
    assert!(
        err.ends_with("it names a folder; give a file name"),
        "{err}"
    );
}
