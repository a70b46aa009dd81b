//! The Markdown transcript of a session: turns in order, thinking quoted with its decision
//! points, tool calls with their input and result, merges with their claims' provenance.
//! One writer serves a session in memory ([`to_markdown`]) and one read from the store as
//! it is written ([`write_markdown`]), so both give the same bytes.

use std::collections::HashMap;
use std::io::Write;
use std::ops::ControlFlow;

use chrono::{DateTime, Utc};

use super::{ExportError, SessionExport, Written};
use crate::store::{DecisionPoint, Insight, Node, NodeId, NodeType, Session, SessionId, Store};

/// Nodes read from the store per read transaction while writing them in time order.
const READ_BATCH: usize = 256;

/// What the Markdown writer reads of a session.
trait Source {
    fn session(&self) -> &Session;
    /// Every node, ordered by creation time then id.
    fn each_node(
        &self,
        f: &mut dyn FnMut(&Node) -> Result<(), ExportError>,
    ) -> Result<(), ExportError>;
    /// The decision points found in `node`.
    fn decisions(&self, node: NodeId) -> Result<Vec<DecisionPoint>, ExportError>;
    /// The session's node `id`, if it has one.
    fn node(&self, id: NodeId) -> Result<Option<Node>, ExportError>;
    fn insights(&self) -> Result<Vec<Insight>, ExportError>;
}

/// A session held in memory.
struct Memory<'a> {
    export: &'a SessionExport,
    decisions: HashMap<NodeId, Vec<&'a DecisionPoint>>,
}

impl Source for Memory<'_> {
    fn session(&self) -> &Session {
        &self.export.session
    }

    fn each_node(
        &self,
        f: &mut dyn FnMut(&Node) -> Result<(), ExportError>,
    ) -> Result<(), ExportError> {
        let mut nodes: Vec<&Node> = self.export.nodes.iter().collect();
        nodes.sort_by_key(|n| (n.created_at, n.id));
        nodes.into_iter().try_for_each(f)
    }

    fn decisions(&self, node: NodeId) -> Result<Vec<DecisionPoint>, ExportError> {
        Ok(self
            .decisions
            .get(&node)
            .map(|ds| ds.iter().map(|d| (*d).clone()).collect())
            .unwrap_or_default())
    }

    fn node(&self, id: NodeId) -> Result<Option<Node>, ExportError> {
        Ok(self.export.nodes.iter().find(|x| x.id == id).cloned())
    }

    fn insights(&self) -> Result<Vec<Insight>, ExportError> {
        Ok(self.export.insights.clone())
    }
}

/// A session read from the store, sorted as [`super::collect`] sorts it.
struct Stored<'a> {
    store: &'a Store,
    session: Session,
}

impl Source for Stored<'_> {
    fn session(&self) -> &Session {
        &self.session
    }

    /// The order from the session's node heads (time and id, no bodies), then the bodies
    /// read back a batch at a time in that order: the memory of the ids and of one batch.
    fn each_node(
        &self,
        f: &mut dyn FnMut(&Node) -> Result<(), ExportError>,
    ) -> Result<(), ExportError> {
        let mut order: Vec<(DateTime<Utc>, NodeId)> = self
            .store
            .session_heads(self.session.id)?
            .into_iter()
            .map(|h| (h.created_at, h.id))
            .collect();
        order.sort_unstable();
        for batch in order.chunks(READ_BATCH) {
            let ids: Vec<NodeId> = batch.iter().map(|(_, id)| *id).collect();
            for n in self.store.nodes(&ids)? {
                if n.session == self.session.id {
                    f(&n)?;
                }
            }
        }
        Ok(())
    }

    fn decisions(&self, node: NodeId) -> Result<Vec<DecisionPoint>, ExportError> {
        let mut ds = self.store.decision_points(node)?;
        ds.sort_by_key(|d| d.id);
        Ok(ds)
    }

    fn node(&self, id: NodeId) -> Result<Option<Node>, ExportError> {
        Ok(self
            .store
            .node(id)?
            .filter(|n| n.session == self.session.id))
    }

    fn insights(&self) -> Result<Vec<Insight>, ExportError> {
        let mut insights = self.store.insights(self.session.id)?;
        insights.sort_by_key(|i| i.id);
        Ok(insights)
    }
}

/// A readable Markdown transcript of a session held in memory.
pub fn to_markdown(export: &SessionExport) -> String {
    let mut decisions: HashMap<NodeId, Vec<&DecisionPoint>> = HashMap::new();
    for d in &export.decision_points {
        decisions.entry(d.node).or_default().push(d);
    }
    let mut out = Vec::new();
    // Writing to memory fails only if a source read fails, and memory reads do not.
    let _ = write(&Memory { export, decisions }, &mut out);
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Writes the Markdown transcript of session `id` to `out` as it reads the store: the same
/// bytes as [`to_markdown`] of [`super::collect`], in the memory of a batch of nodes.
pub fn write_markdown(
    store: &Store,
    id: SessionId,
    out: &mut impl Write,
) -> Result<Written, ExportError> {
    let session = super::session_of(store, id)?;
    write(&Stored { store, session }, out)?;
    let mut written = Written {
        nodes: usize::try_from(store.session_node_count(id)?).unwrap_or(usize::MAX),
        edges: 0,
    };
    store.for_each_session_edge(id, |_| {
        written.edges += 1;
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(written)
}

fn write(src: &dyn Source, out: &mut dyn Write) -> Result<(), ExportError> {
    let s = src.session();
    let title = if s.title.trim().is_empty() {
        "Untitled session"
    } else {
        s.title.trim()
    };
    writeln!(out, "# {title}\n")?;
    writeln!(out, "- session: `{}`", s.id)?;
    writeln!(out, "- source: {}", s.source.as_str())?;
    if let Some(m) = &s.model {
        writeln!(out, "- model: {m}")?;
    }
    writeln!(
        out,
        "- created: {}",
        s.created_at.format("%Y-%m-%d %H:%M:%S UTC")
    )?;
    writeln!(
        out,
        "- updated: {}",
        s.updated_at.format("%Y-%m-%d %H:%M:%S UTC")
    )?;
    for key in ["cwd", "git_branch", "version"] {
        if let Some(v) = s.meta.get(key).and_then(|v| v.as_str()) {
            writeln!(out, "- {}: {v}", key.replace('_', " "))?;
        }
    }
    src.each_node(&mut |n| node(src, n, out))?;
    let insights = src.insights()?;
    if !insights.is_empty() {
        out.write_all(b"\n## Insights\n\n")?;
        for i in &insights {
            writeln!(out, "- {} ({:.2}): {}", i.kind, i.confidence, i.text)?;
        }
    }
    Ok(())
}

/// One node's section.
fn node(src: &dyn Source, n: &Node, out: &mut dyn Write) -> Result<(), ExportError> {
    let when = n.created_at.format("%H:%M:%S");
    let side = if n.meta.get("sidechain").and_then(|v| v.as_bool()) == Some(true) {
        " (subagent)"
    } else {
        ""
    };
    match n.kind {
        NodeType::Query => {
            writeln!(
                out,
                "\n## User{side} · {when} · `{}`\n\n{}",
                n.id.short(),
                n.text.trim_end()
            )?;
        }
        NodeType::Thinking => {
            let conf = n
                .confidence
                .map(|c| format!(" · confidence {c:.2}"))
                .unwrap_or_default();
            writeln!(
                out,
                "\n### Thinking{side} · {when} · `{}`{conf}\n",
                n.id.short()
            )?;
            if n.text.trim().is_empty() {
                out.write_all(b"> (no thinking text: redacted or omitted)\n")?;
            }
            for line in n.text.trim_end().lines() {
                writeln!(out, "> {line}")?;
            }
            let ds = src.decisions(n.id)?;
            if !ds.is_empty() {
                out.write_all(b"\nDecision points:\n")?;
                for d in &ds {
                    let alts: Vec<&str> = d.alternatives.iter().map(|a| a.path.as_str()).collect();
                    let alts = if alts.is_empty() {
                        String::new()
                    } else {
                        format!(" (instead of: {})", alts.join("; "))
                    };
                    writeln!(
                        out,
                        "- step {}: {} → {}{alts}",
                        d.step_number, d.description, d.chosen_path
                    )?;
                }
            }
        }
        NodeType::ToolCall => {
            let tool = n.tool().unwrap_or("tool");
            writeln!(
                out,
                "\n### Tool call{side}: {tool} · {when} · `{}`\n",
                n.id.short()
            )?;
            let input = n
                .meta
                .get("input")
                .and_then(|i| serde_json::to_string_pretty(i).ok())
                .unwrap_or_else(|| n.text.clone());
            let f = fence_for(&input);
            writeln!(out, "{f}json\n{input}\n{f}")?;
            if let Some(r) = n.meta.get("result").and_then(|v| v.as_str()) {
                let err = if n.meta.get("is_error").and_then(|v| v.as_bool()) == Some(true) {
                    " (error)"
                } else {
                    ""
                };
                let f = fence_for(r);
                writeln!(out, "\nResult{err}:\n\n{f}\n{}\n{f}", r.trim_end())?;
            }
        }
        NodeType::Response => {
            writeln!(out, "\n### Assistant{side} · {when} · `{}`\n", n.id.short())?;
            if n.text.trim().is_empty() {
                out.write_all(b"(no text)\n")?;
            } else {
                writeln!(out, "{}", n.text.trim_end())?;
            }
        }
        NodeType::Compaction => {
            writeln!(
                out,
                "\n---\n\n### Compaction · {when} · `{}`\n\n{}\n\n---",
                n.id.short(),
                n.text.trim_end()
            )?;
        }
        NodeType::Synthesis if n.meta.contains_key(crate::engines::diff::CLAIMS_KEY) => {
            merge(src, n, &when.to_string(), out)?;
        }
        other => {
            writeln!(
                out,
                "\n### {} · {when} · `{}`\n\n{}",
                other.as_str(),
                n.id.short(),
                n.text.trim_end()
            )?;
        }
    }
    Ok(())
}

/// A merge: its claims as a list, each claim's provenance as a footnote naming the source
/// node and quoting its steps (a source outside this session is named by id and step).
fn merge(src: &dyn Source, n: &Node, when: &str, out: &mut dyn Write) -> Result<(), ExportError> {
    use crate::engines::diff::{claims_of, steps_of};
    let id = n.id.short();
    writeln!(out, "\n### Merge · {when} · `{id}`\n")?;
    if let Some(f) = n.meta.get("focus").and_then(|v| v.as_str()) {
        writeln!(out, "Focus: {f}\n")?;
    }
    let claims = claims_of(n);
    for (i, c) in claims.iter().enumerate() {
        writeln!(out, "- {}[^{id}-{}]", c.text.trim(), i + 1)?;
    }
    out.write_all(b"\n")?;
    for (i, c) in claims.iter().enumerate() {
        let mut notes = Vec::new();
        for p in &c.provenance {
            let source = src.node(p.node)?;
            let steps = source.as_ref().map(steps_of).unwrap_or_default();
            let kind = source.as_ref().map_or("node", |x| x.kind.as_str());
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
        writeln!(out, "[^{id}-{}]: {note}", i + 1)?;
    }
    Ok(())
}

pub(in crate::engines::transcript) use crate::store::excerpt;

/// A code fence longer than any run of backticks in `text`.
pub(super) fn fence_for(text: &str) -> String {
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
