//! Session export (JSON, Markdown; the graph drawings are in `drawing.rs`) and JSON import. The JSON form holds
//! everything a session owns, sorted, so export → import → export is byte-identical.

use std::collections::HashMap;
use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

use super::TranscriptError;
use crate::store::{
    DecisionPoint, Edge, Insight, Node, NodeId, NodeType, RawStream, Run, Session, SessionId,
    Store, StoredChunk,
};

/// The `format` tag of a JSON export.
pub const FORMAT: &str = "glassbox-session";
/// The version of the JSON export layout.
pub const FORMAT_VERSION: u32 = 1;

/// A whole session as one JSON document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionExport {
    pub format: String,
    pub version: u32,
    pub session: Session,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    pub decision_points: Vec<DecisionPoint>,
    pub insights: Vec<Insight>,
    pub runs: Vec<Run>,
    pub raw_streams: Vec<StreamExport>,
}

/// A recorded provider stream with its chunks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamExport {
    pub header: RawStream,
    pub chunks: Vec<ChunkExport>,
}

/// One recorded chunk: arrival offset and the bytes, base64.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkExport {
    pub offset_us: u64,
    pub bytes_base64: String,
}

/// Everything `session` owns, sorted by id (edges by source, type, destination).
pub fn collect(store: &Store, id: SessionId) -> Result<SessionExport, TranscriptError> {
    let session = store
        .session(id)?
        .ok_or_else(|| TranscriptError::Invalid(format!("session {id} not found")))?;
    let mut nodes = store.session_nodes(id)?;
    nodes.sort_by_key(|n| n.id);
    let mut edges = store.session_edges(id)?;
    edges.sort_by_key(|e| (e.src, e.kind.code(), e.dst));
    let mut decision_points = Vec::new();
    for n in &nodes {
        decision_points.extend(store.decision_points(n.id)?);
    }
    decision_points.sort_by_key(|d| (d.node, d.id));
    let mut insights = store.insights(id)?;
    insights.sort_by_key(|i| i.id);
    let mut runs = store.session_runs(id)?;
    runs.sort_by_key(|r| r.id);
    let mut headers = store.session_streams(id)?;
    headers.sort_by_key(|s| s.id);
    let mut raw_streams = Vec::with_capacity(headers.len());
    for header in headers {
        let chunks = store
            .raw_chunks(header.id)?
            .into_iter()
            .map(|c| ChunkExport {
                offset_us: c.offset_us,
                bytes_base64: BASE64.encode(&c.bytes),
            })
            .collect();
        raw_streams.push(StreamExport { header, chunks });
    }
    Ok(SessionExport {
        format: FORMAT.into(),
        version: FORMAT_VERSION,
        session,
        nodes,
        edges,
        decision_points,
        insights,
        runs,
        raw_streams,
    })
}

/// The JSON export of a session (pretty, newline-terminated).
pub fn to_json(export: &SessionExport) -> Result<String, TranscriptError> {
    let mut s = serde_json::to_string_pretty(export)
        .map_err(|e| TranscriptError::Invalid(e.to_string()))?;
    s.push('\n');
    Ok(s)
}

/// Parses a JSON export, checking that everything in it belongs to its session. `source`
/// names the input in error messages.
pub fn parse_json(text: &str, source: &str) -> Result<SessionExport, TranscriptError> {
    let head: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        // `file:line:column: reason`, the reason without serde's own " at line L column C".
        let at = format!(" at line {} column {}", e.line(), e.column());
        let full = e.to_string();
        let reason = full.strip_suffix(&at).unwrap_or(&full);
        TranscriptError::Invalid(format!(
            "{source}:{}:{}: not JSON: {reason}",
            e.line(),
            e.column()
        ))
    })?;
    match head.get("format").and_then(|v| v.as_str()) {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(TranscriptError::Invalid(format!(
                "{source}: format is '{other}', expected '{FORMAT}'"
            )));
        }
        None => {
            return Err(TranscriptError::Invalid(format!(
                "{source}: not a glassbox session export (no \"format\": \"{FORMAT}\")"
            )));
        }
    }
    if let Some(v) = head.get("version").and_then(|v| v.as_u64())
        && v > u64::from(FORMAT_VERSION)
    {
        return Err(TranscriptError::Invalid(format!(
            "{source}: export version {v} is newer than this glassbox reads ({FORMAT_VERSION})"
        )));
    }
    let export: SessionExport = serde_json::from_value(head)
        .map_err(|e| TranscriptError::Invalid(format!("{source}: invalid session export: {e}")))?;
    let sid = export.session.id;
    let foreign = |what: &str, id: &dyn std::fmt::Display| {
        TranscriptError::Invalid(format!(
            "{source}: {what} {id} belongs to another session than {sid}"
        ))
    };
    let mut node_ids = std::collections::HashSet::new();
    for n in &export.nodes {
        if n.session != sid {
            return Err(foreign("node", &n.id));
        }
        node_ids.insert(n.id);
    }
    for e in &export.edges {
        if !node_ids.contains(&e.src) {
            return Err(TranscriptError::Invalid(format!(
                "{source}: edge {} -> {} starts at a node that is not in the file",
                e.src, e.dst
            )));
        }
    }
    for d in &export.decision_points {
        if !node_ids.contains(&d.node) {
            return Err(TranscriptError::Invalid(format!(
                "{source}: decision point {} refers to node {} which is not in the file",
                d.id, d.node
            )));
        }
    }
    for i in &export.insights {
        if i.session != sid {
            return Err(foreign("insight", &i.id));
        }
    }
    for r in &export.runs {
        if r.session != sid {
            return Err(foreign("run", &r.id));
        }
    }
    for s in &export.raw_streams {
        if s.header.session != sid {
            return Err(foreign("raw stream", &s.header.id));
        }
        for (i, c) in s.chunks.iter().enumerate() {
            BASE64.decode(&c.bytes_base64).map_err(|e| {
                TranscriptError::Invalid(format!(
                    "{source}: raw stream {} chunk {i}: bad base64: {e}",
                    s.header.id
                ))
            })?;
        }
    }
    Ok(export)
}

/// Writes an export into the store in one transaction. An existing session with the same id
/// is an error unless `replace`, which deletes it first (in the same transaction).
pub fn import(store: &Store, export: &SessionExport, replace: bool) -> Result<(), TranscriptError> {
    let sid = export.session.id;
    if !replace && store.session(sid)?.is_some() {
        return Err(TranscriptError::Invalid(format!(
            "session {sid} is already in the store; delete it first or pass --replace"
        )));
    }
    let mut decoded = Vec::with_capacity(export.raw_streams.len());
    for s in &export.raw_streams {
        let mut chunks = Vec::with_capacity(s.chunks.len());
        for c in &s.chunks {
            let bytes = BASE64.decode(&c.bytes_base64).map_err(|e| {
                TranscriptError::Invalid(format!("raw stream {}: bad base64: {e}", s.header.id))
            })?;
            chunks.push(StoredChunk {
                offset_us: c.offset_us,
                bytes,
            });
        }
        decoded.push((&s.header, chunks));
    }
    store.write(|w| {
        if replace {
            w.delete_session(sid)?;
        }
        w.put_session(&export.session)?;
        for n in &export.nodes {
            w.put_node(n)?;
        }
        for e in &export.edges {
            w.put_edge(e)?;
        }
        for d in &export.decision_points {
            w.put_decision_point(d)?;
        }
        for i in &export.insights {
            w.put_insight(i)?;
        }
        for r in &export.runs {
            w.put_run(r)?;
        }
        for (header, chunks) in &decoded {
            w.put_raw_stream(header)?;
            for (i, c) in chunks.iter().enumerate() {
                w.put_raw_chunk(header.id, i as u32, c)?;
            }
        }
        Ok(())
    })?;
    Ok(())
}

/// The first non-empty line of `text`, at most `max` characters.
pub(super) fn excerpt(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() > max {
        let mut s: String = line.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    } else {
        line.to_string()
    }
}

/// A code fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// A merge: its claims as a list, each claim's provenance as a footnote naming the source
/// node and quoting its steps (a source outside this session is named by id and step).
fn merge_markdown(out: &mut String, n: &Node, nodes: &[Node], when: &str) {
    use crate::engines::diff::{claims_of, steps_of};
    let id = n.id.short();
    let _ = writeln!(out, "\n### Merge · {when} · `{id}`\n");
    if let Some(f) = n.meta.get("focus").and_then(|v| v.as_str()) {
        let _ = writeln!(out, "Focus: {f}\n");
    }
    let claims = claims_of(n);
    for (i, c) in claims.iter().enumerate() {
        let _ = writeln!(out, "- {}[^{id}-{}]", c.text.trim(), i + 1);
    }
    out.push('\n');
    for (i, c) in claims.iter().enumerate() {
        let mut notes = Vec::new();
        for p in &c.provenance {
            let src = nodes.iter().find(|x| x.id == p.node);
            let steps = src.map(steps_of).unwrap_or_default();
            let kind = src.map_or("node", |x| x.kind.as_str());
            for k in &p.steps {
                let quote = steps
                    .iter()
                    .find(|s| s.index == *k)
                    .map(|s| format!(": \"{}\"", excerpt(&s.text, 160)))
                    .unwrap_or_default();
                notes.push(format!("{kind} `{}` step {}{quote}", p.node.short(), k + 1));
            }
        }
        let note = if notes.is_empty() {
            "new: no source step".to_string()
        } else {
            notes.join("; ")
        };
        let _ = writeln!(out, "[^{id}-{}]: {note}", i + 1);
    }
}

/// A readable Markdown transcript: turns in order, thinking quoted with its decision points,
/// tool calls with their input and result.
pub fn to_markdown(export: &SessionExport) -> String {
    let s = &export.session;
    let mut out = String::new();
    let title = if s.title.trim().is_empty() {
        "Untitled session"
    } else {
        s.title.trim()
    };
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(out, "- session: `{}`", s.id);
    let _ = writeln!(out, "- source: {}", s.source.as_str());
    if let Some(m) = &s.model {
        let _ = writeln!(out, "- model: {m}");
    }
    let _ = writeln!(
        out,
        "- created: {}",
        s.created_at.format("%Y-%m-%d %H:%M:%S UTC")
    );
    let _ = writeln!(
        out,
        "- updated: {}",
        s.updated_at.format("%Y-%m-%d %H:%M:%S UTC")
    );
    for key in ["cwd", "git_branch", "version"] {
        if let Some(v) = s.meta.get(key).and_then(|v| v.as_str()) {
            let _ = writeln!(out, "- {}: {v}", key.replace('_', " "));
        }
    }
    let mut decisions: HashMap<NodeId, Vec<&DecisionPoint>> = HashMap::new();
    for d in &export.decision_points {
        decisions.entry(d.node).or_default().push(d);
    }
    let mut nodes: Vec<&Node> = export.nodes.iter().collect();
    nodes.sort_by_key(|n| (n.created_at, n.id));
    for n in nodes {
        let when = n.created_at.format("%H:%M:%S");
        let side = if n.meta.get("sidechain").and_then(|v| v.as_bool()) == Some(true) {
            " (subagent)"
        } else {
            ""
        };
        match n.kind {
            NodeType::Query => {
                let _ = writeln!(
                    out,
                    "\n## User{side} · {when} · `{}`\n\n{}",
                    n.id.short(),
                    n.text.trim_end()
                );
            }
            NodeType::Thinking => {
                let conf = n
                    .confidence
                    .map(|c| format!(" · confidence {c:.2}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "\n### Thinking{side} · {when} · `{}`{conf}\n",
                    n.id.short()
                );
                if n.text.trim().is_empty() {
                    out.push_str("> (no thinking text: redacted or omitted)\n");
                }
                for line in n.text.trim_end().lines() {
                    let _ = writeln!(out, "> {line}");
                }
                if let Some(ds) = decisions.get(&n.id) {
                    out.push_str("\nDecision points:\n");
                    for d in ds {
                        let alts: Vec<&str> =
                            d.alternatives.iter().map(|a| a.path.as_str()).collect();
                        let alts = if alts.is_empty() {
                            String::new()
                        } else {
                            format!(" (instead of: {})", alts.join("; "))
                        };
                        let _ = writeln!(
                            out,
                            "- step {}: {} → {}{alts}",
                            d.step_number, d.description, d.chosen_path
                        );
                    }
                }
            }
            NodeType::ToolCall => {
                let tool = n.tool().unwrap_or("tool");
                let _ = writeln!(
                    out,
                    "\n### Tool call{side}: {tool} · {when} · `{}`\n",
                    n.id.short()
                );
                let input = n
                    .meta
                    .get("input")
                    .and_then(|i| serde_json::to_string_pretty(i).ok())
                    .unwrap_or_else(|| n.text.clone());
                let f = fence_for(&input);
                let _ = writeln!(out, "{f}json\n{input}\n{f}");
                if let Some(r) = n.meta.get("result").and_then(|v| v.as_str()) {
                    let err = if n.meta.get("is_error").and_then(|v| v.as_bool()) == Some(true) {
                        " (error)"
                    } else {
                        ""
                    };
                    let f = fence_for(r);
                    let _ = writeln!(out, "\nResult{err}:\n\n{f}\n{}\n{f}", r.trim_end());
                }
            }
            NodeType::Response => {
                let _ = writeln!(out, "\n### Assistant{side} · {when} · `{}`\n", n.id.short());
                if n.text.trim().is_empty() {
                    out.push_str("(no text)\n");
                } else {
                    let _ = writeln!(out, "{}", n.text.trim_end());
                }
            }
            NodeType::Compaction => {
                let _ = writeln!(
                    out,
                    "\n---\n\n### Compaction · {when} · `{}`\n\n{}\n\n---",
                    n.id.short(),
                    n.text.trim_end()
                );
            }
            NodeType::Synthesis if n.meta.contains_key(crate::engines::diff::CLAIMS_KEY) => {
                merge_markdown(&mut out, n, &export.nodes, &when.to_string());
            }
            other => {
                let _ = writeln!(
                    out,
                    "\n### {} · {when} · `{}`\n\n{}",
                    other.as_str(),
                    n.id.short(),
                    n.text.trim_end()
                );
            }
        }
    }
    if !export.insights.is_empty() {
        out.push_str("\n## Insights\n\n");
        for i in &export.insights {
            let _ = writeln!(out, "- {} ({:.2}): {}", i.kind, i.confidence, i.text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::store::{EdgeType, SessionSource};

    fn sample() -> SessionExport {
        let s = Session::new("a \"quoted\" <title>", SessionSource::Glassbox);
        let q = Node::new(s.id, NodeType::Query, "why \"x\" < y?\nsecond line");
        let r = Node::new(s.id, NodeType::Response, "because `a` # b");
        SessionExport {
            format: FORMAT.into(),
            version: FORMAT_VERSION,
            session: s,
            edges: vec![Edge::new(r.id, EdgeType::Answers, q.id)],
            nodes: vec![q, r],
            decision_points: vec![],
            insights: vec![],
            runs: vec![],
            raw_streams: vec![],
        }
    }

    #[test]
    fn bad_exports_name_the_problem() {
        let err = parse_json("{\"format\":\"other\"}", "f.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("f.json: format is 'other'"), "{err}");
        let err = parse_json("[1,", "f.json").unwrap_err().to_string();
        assert_eq!(err, "f.json:1:3: not JSON: EOF while parsing a value");
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = parse_json(&deep, "f.json").unwrap_err().to_string();
        assert_eq!(err, "f.json:1:128: not JSON: recursion limit exceeded");
        let mut e = sample();
        e.nodes[0].session = SessionId::new();
        let text = to_json(&e).unwrap();
        let err = parse_json(&text, "f.json").unwrap_err().to_string();
        assert!(err.contains("belongs to another session"), "{err}");
    }

    #[test]
    fn markdown_fences_outgrow_backticks() {
        assert_eq!(fence_for("a ``` b"), "````");
        assert_eq!(fence_for("plain"), "```");
    }
}
