//! Graph exports that render: a 400-node Claude Code session with a compaction, imported and
//! exported through the binary, is laid out by Graphviz `dot -Tsvg` within 10 s (the raw
//! graph did not finish in 10 minutes), and its Mermaid export stays under Mermaid's default
//! edge limit. scripts/test.sh installs Graphviz.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::bin::{glassbox, ok};

const SESSION: &str = "44444444-4444-4444-8444-444444444444";

/// One Claude Code line with the fields every line of a session carries.
fn line(uuid: &str, parent: Option<&str>, t: u32, body: Value) -> String {
    let mut v = json!({
        "parentUuid": parent,
        "isSidechain": false,
        "userType": "external",
        "cwd": "/home/ann/shop",
        "sessionId": SESSION,
        "version": "2.1.39",
        "gitBranch": "main",
        "uuid": uuid,
        "timestamp": format!("2025-07-01T{:02}:{:02}:{:02}.000Z", 8 + t / 3600, t / 60 % 60, t % 60),
    });
    for (k, x) in body.as_object().unwrap() {
        v[k] = x.clone();
    }
    v.to_string()
}

/// `turns` turns of prompt → one API message over three lines (thinking, text, tool call)
/// → tool result, with a compaction after `compact_at` turns.
fn transcript(turns: u32, compact_at: u32) -> String {
    let mut out = Vec::new();
    let mut parent: Option<String> = None;
    let mut t = 0;
    let uuid = |kind: &str, i: u32| format!("{kind:0>8}-0000-4000-8000-{i:012}");
    for turn in 0..turns {
        if turn == compact_at {
            let boundary = uuid("c0", turn);
            out.push(line(
                &boundary,
                None,
                t,
                json!({"type": "system", "subtype": "compact_boundary",
                       "content": "Conversation compacted", "level": "info",
                       "logicalParentUuid": parent,
                       "compactMetadata": {"trigger": "auto", "preTokens": 155000}}),
            ));
            let summary = uuid("c1", turn);
            out.push(line(
                &summary,
                Some(&boundary),
                t,
                json!({"type": "user", "isCompactSummary": true,
                       "message": {"role": "user", "content": "Summary: the cart and the checkout so far."}}),
            ));
            parent = Some(summary);
        }
        t += 7;
        let q = uuid("a1", turn);
        out.push(line(
            &q,
            parent.as_deref(),
            t,
            json!({"type": "user", "message": {"role": "user",
                   "content": format!("Step {turn}: make the cart total handle discount code {turn}")}}),
        ));
        // One API message over three lines: thinking, text, tool call.
        let msg = format!("msg_{turn}");
        let parts = [
            json!({"type": "thinking", "thinking": format!("The total must apply code {turn} before tax."), "signature": "s"}),
            json!({"type": "text", "text": format!("I will change total() for code {turn}.")}),
            json!({"type": "tool_use", "id": format!("toolu_{turn}"), "name": "Bash",
                   "input": {"command": format!("cargo test cart_{turn}")}}),
        ];
        let mut prev = q;
        for (i, part) in parts.into_iter().enumerate() {
            let id = uuid(&format!("a{}", i + 2), turn);
            out.push(line(
                &id,
                Some(&prev),
                t + 1 + i as u32,
                json!({"type": "assistant", "message": {"id": msg, "role": "assistant",
                       "model": "claude-sonnet-4-5", "content": [part],
                       "usage": {"input_tokens": 100, "output_tokens": 20}}}),
            ));
            prev = id;
        }
        let tool = prev;
        let res = uuid("a5", turn);
        out.push(line(
            &res,
            Some(&tool),
            t + 4,
            json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("toolu_{turn}"), "content": format!("test cart_{turn} ... ok")}]}}),
        ));
        parent = Some(res);
    }
    out.join("\n") + "\n"
}

fn import(data: &Path, root: &Path) -> String {
    let project = root.join("-home-ann-shop");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join(format!("{SESSION}.jsonl")),
        transcript(100, 70),
    )
    .unwrap();
    ok(glassbox(data).args(["import", "claude-code"]).arg(root));
    let out = ok(glassbox(data).args(["sessions", "list", "--json"]));
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.len(), 1);
    list[0]["id"].as_str().unwrap().to_string()
}

/// Runs `dot -Tsvg` on `graph`, killed after `limit`; the SVG and the time it took.
fn render(graph: &str, limit: Duration) -> (String, Duration) {
    let start = Instant::now();
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("Graphviz `dot` is installed (scripts/test.sh installs it)");
    let mut stdin = child.stdin.take().unwrap();
    let input = graph.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let reader = {
        let mut stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
            s
        })
    };
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "dot failed: {status}");
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("dot -Tsvg did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    writer.join().unwrap();
    (reader.join().unwrap(), start.elapsed())
}

#[test]
fn a_long_session_with_a_compaction_renders_with_graphviz_and_fits_mermaid() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let id = import(&data, &dir.path().join("projects"));

    let json = ok(glassbox(&data).args(["export", &id, "-f", "json"]));
    let export: Value = serde_json::from_slice(&json.stdout).unwrap();
    let nodes = export["nodes"].as_array().unwrap().len();
    let edges = export["edges"].as_array().unwrap();
    assert!(nodes >= 400, "{nodes} nodes");
    let supersedes = edges.iter().filter(|e| e["kind"] == "supersedes").count();
    assert!(
        supersedes >= 200,
        "the compaction supersedes what came before: {supersedes}"
    );

    for which in ["all", "tree"] {
        let dot = ok(glassbox(&data).args(["export", &id, "-f", "dot", "--edges", which]));
        let dot = String::from_utf8(dot.stdout).unwrap();
        let (svg, took) = render(&dot, Duration::from_secs(10));
        assert!(svg.contains("<svg"), "{which}: {took:?}");
        // Every node is drawn.
        assert!(svg.matches("class=\"node\"").count() >= nodes, "{which}");
    }

    let mm = ok(glassbox(&data).args(["export", &id, "-f", "mermaid"]));
    let mm = String::from_utf8(mm.stdout).unwrap();
    let arrows = mm
        .lines()
        .filter(|l| l.contains("-->") || l.contains("-.->"))
        .count();
    assert!(arrows < 500, "{arrows} Mermaid edges");
    assert!(
        mm.contains("-.->|supersedes|"),
        "the compaction's range is drawn"
    );
}
