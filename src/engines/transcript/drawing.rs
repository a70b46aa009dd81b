//! A session's node graph drawn for Graphviz (DOT) and Mermaid.
//!
//! Both lay out on the reading order (parent → child edges). The other edges — `answers`,
//! which point back up, and `supersedes`, which a compaction draws to everything before it —
//! are drawn without moving the layout (`constraint=false`, dotted), and a group of them
//! from one node (a compaction's) becomes one edge to a node standing for the range it
//! covers. That keeps a long Claude Code session drawable in a fraction of a second; the
//! raw graph (hundreds of back edges laid out as ranks) does not finish in minutes.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::export::{SessionExport, excerpt};
use crate::store::{Edge, EdgeType, Node, NodeId, NodeType};

/// Which edges a drawing holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Edges {
    /// The reading order only (parent → child).
    Tree,
    /// The reading order laid out, every other edge drawn over it (groups as ranges).
    #[default]
    All,
}

/// More edges of one kind than this from one node are drawn as one edge to a range node.
/// A compaction's `supersedes` edges are always a range.
const GROUP_AT: usize = 8;
/// Mermaid's default `maxEdges`: a flowchart with more is refused.
pub const MERMAID_MAX_EDGES: usize = 500;
/// The edges a Mermaid drawing holds at most: under the limit.
const MERMAID_BUDGET: usize = MERMAID_MAX_EDGES - 1;

fn is_secondary(kind: EdgeType) -> bool {
    matches!(kind, EdgeType::Answers | EdgeType::Supersedes)
}

/// Edges from one node of one kind, drawn as one edge to a node standing for them.
struct Range {
    src: NodeId,
    kind: EdgeType,
    /// The first and last destinations, in edge order.
    first: NodeId,
    last: NodeId,
    count: usize,
}

/// What a drawing draws: the laid-out edges, the ones drawn over them and the ranges.
struct EdgePlan<'a> {
    primary: Vec<&'a Edge>,
    secondary: Vec<&'a Edge>,
    ranges: Vec<Range>,
    /// Edges the drawing leaves out (the budget, or `Edges::Tree`).
    left_out: usize,
}

impl<'a> EdgePlan<'a> {
    /// `budget` caps the edges drawn (ranges count one each): secondary edges and ranges go
    /// first, then primary ones.
    fn of(edges: &'a [Edge], which: Edges, budget: usize) -> Self {
        let mut primary: Vec<&Edge> = edges.iter().filter(|e| !is_secondary(e.kind)).collect();
        let mut groups: Vec<((NodeId, EdgeType), Vec<&Edge>)> = Vec::new();
        let mut at: HashMap<(NodeId, EdgeType), usize> = HashMap::new();
        for e in edges.iter().filter(|e| is_secondary(e.kind)) {
            let key = (e.src, e.kind);
            let i = *at.entry(key).or_insert_with(|| {
                groups.push((key, Vec::new()));
                groups.len() - 1
            });
            groups[i].1.push(e);
        }
        let mut secondary = Vec::new();
        let mut ranges = Vec::new();
        let mut left_out = 0;
        for ((src, kind), group) in groups {
            if which == Edges::Tree {
                left_out += group.len();
                continue;
            }
            let as_range = match kind {
                EdgeType::Supersedes => group.len() > 1,
                _ => group.len() > GROUP_AT,
            };
            match (as_range, group.first(), group.last()) {
                (true, Some(first), Some(last)) => ranges.push(Range {
                    src,
                    kind,
                    first: first.dst,
                    last: last.dst,
                    count: group.len(),
                }),
                _ => secondary.extend(group),
            }
        }
        if primary.len() > budget {
            left_out += primary.len() - budget + secondary.len();
            left_out += ranges.iter().map(|r| r.count).sum::<usize>();
            primary.truncate(budget);
            secondary.clear();
            ranges.clear();
        } else {
            let room = budget - primary.len();
            while secondary.len() + ranges.len() > room {
                if secondary.pop().is_some() {
                    left_out += 1;
                } else if let Some(r) = ranges.pop() {
                    left_out += r.count;
                }
            }
        }
        Self {
            primary,
            secondary,
            ranges,
            left_out,
        }
    }
}

fn node_label(n: &Node) -> String {
    let text = match n.kind {
        NodeType::ToolCall => {
            let tool = n.tool().unwrap_or("tool");
            format!("{tool} {}", excerpt(&n.text, 40))
        }
        _ => excerpt(&n.text, 60),
    };
    if text.is_empty() {
        n.kind.as_str().to_string()
    } else {
        text
    }
}

fn range_label(r: &Range) -> String {
    if r.count == 1 {
        format!("1 node: {}", r.first.short())
    } else {
        format!(
            "{} nodes: {} … {}",
            r.count,
            r.first.short(),
            r.last.short()
        )
    }
}

fn dot_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn type_colour(kind: NodeType) -> &'static str {
    match kind {
        NodeType::Query => "#dbeafe",
        NodeType::Thinking => "#ede9fe",
        NodeType::Response => "#dcfce7",
        NodeType::ToolCall => "#fef3c7",
        NodeType::Compaction => "#e5e7eb",
        _ => "#f5f5f5",
    }
}

/// Destinations outside the session that the drawn edges reach.
fn external<'a>(export: &SessionExport, drawn: impl Iterator<Item = &'a Edge>) -> Vec<NodeId> {
    let known: HashSet<NodeId> = export.nodes.iter().map(|n| n.id).collect();
    let mut out: Vec<NodeId> = drawn
        .map(|e| e.dst)
        .filter(|d| !known.contains(d))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The node graph as Graphviz DOT: one box per node (type and excerpt), edges labelled with
/// their type; nodes of other sessions that edges reach are drawn dashed.
pub fn to_dot(export: &SessionExport, which: Edges) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "digraph \"{}\" {{",
        dot_escape(&export.session.id.to_string())
    );
    let _ = writeln!(
        out,
        "  label=\"{}\";",
        dot_escape(&excerpt(&export.session.title, 80))
    );
    out.push_str(
        "  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n",
    );
    for n in &export.nodes {
        let _ = writeln!(
            out,
            "  \"{}\" [label=\"{}\\n{}\", fillcolor=\"{}\"];",
            n.id,
            n.kind.as_str(),
            dot_escape(&node_label(n)),
            type_colour(n.kind)
        );
    }
    let plan = EdgePlan::of(&export.edges, which, usize::MAX);
    let drawn = plan.primary.iter().chain(&plan.secondary).copied();
    for x in external(export, drawn) {
        let _ = writeln!(
            out,
            "  \"{x}\" [label=\"other session\\n{}\", style=dashed];",
            x.short()
        );
    }
    for e in &plan.primary {
        let _ = writeln!(
            out,
            "  \"{}\" -> \"{}\" [label=\"{}\"];",
            e.src,
            e.dst,
            e.kind.as_str()
        );
    }
    for e in &plan.secondary {
        let _ = writeln!(
            out,
            "  \"{}\" -> \"{}\" [label=\"{}\", constraint=false, style=dashed, color=gray50, fontcolor=gray40];",
            e.src,
            e.dst,
            e.kind.as_str()
        );
    }
    for r in &plan.ranges {
        let kind = r.kind.as_str();
        let _ = writeln!(
            out,
            "  \"{src}:{kind}\" [label=\"{label}\", shape=note, style=dashed];\n  \"{src}\" -> \"{src}:{kind}\" [label=\"{kind}\", constraint=false, style=dashed, color=gray50, fontcolor=gray40];",
            src = r.src,
            label = range_label(r),
        );
    }
    if plan.left_out > 0 {
        let _ = writeln!(
            out,
            "  // {} edges left out (--edges all draws them)",
            plan.left_out
        );
    }
    out.push_str("}\n");
    out
}

fn mermaid_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            '`' => out.push('\''),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The node graph as a Mermaid flowchart, edges labelled with their type, within Mermaid's
/// default edge limit.
pub fn to_mermaid(export: &SessionExport, which: Edges) -> String {
    let mut out = String::from("flowchart TD\n");
    let mut ids: HashMap<NodeId, String> = HashMap::new();
    for (i, n) in export.nodes.iter().enumerate() {
        let id = format!("n{i}");
        let _ = writeln!(
            out,
            "  {id}[\"{}: {}\"]",
            n.kind.as_str(),
            mermaid_escape(&node_label(n))
        );
        ids.insert(n.id, id);
    }
    let plan = EdgePlan::of(&export.edges, which, MERMAID_BUDGET);
    let drawn = plan.primary.iter().chain(&plan.secondary).copied();
    for (i, x) in external(export, drawn).into_iter().enumerate() {
        let id = format!("x{i}");
        let _ = writeln!(out, "  {id}[\"other session: {}\"]", x.short());
        ids.insert(x, id);
    }
    for e in &plan.primary {
        if let (Some(a), Some(b)) = (ids.get(&e.src), ids.get(&e.dst)) {
            let _ = writeln!(out, "  {a} -->|{}| {b}", e.kind.as_str());
        }
    }
    for e in &plan.secondary {
        if let (Some(a), Some(b)) = (ids.get(&e.src), ids.get(&e.dst)) {
            let _ = writeln!(out, "  {a} -.->|{}| {b}", e.kind.as_str());
        }
    }
    for (i, r) in plan.ranges.iter().enumerate() {
        if let Some(a) = ids.get(&r.src) {
            let _ = writeln!(
                out,
                "  r{i}>\"{}\"]\n  {a} -.->|{}| r{i}",
                range_label(r),
                r.kind.as_str()
            );
        }
    }
    if plan.left_out > 0 {
        let _ = writeln!(
            out,
            "  %% {} edges left out (Mermaid draws at most {MERMAID_MAX_EDGES}; a compaction's edges are one range)",
            plan.left_out
        );
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::engines::transcript::export::{FORMAT, FORMAT_VERSION};
    use crate::store::{Session, SessionSource};

    fn export_of(session: Session, nodes: Vec<Node>, edges: Vec<Edge>) -> SessionExport {
        SessionExport {
            format: FORMAT.into(),
            version: FORMAT_VERSION,
            session,
            edges,
            nodes,
            decision_points: vec![],
            insights: vec![],
            runs: vec![],
            raw_streams: vec![],
        }
    }

    fn sample() -> SessionExport {
        let s = Session::new("a \"quoted\" <title>", SessionSource::Glassbox);
        let q = Node::new(s.id, NodeType::Query, "why \"x\" < y?\nsecond line");
        let r = Node::new(s.id, NodeType::Response, "because `a` # b");
        let edges = vec![Edge::new(r.id, EdgeType::Answers, q.id)];
        export_of(s, vec![q, r], edges)
    }

    #[test]
    fn dot_and_mermaid_escape_labels_and_label_edges() {
        let e = sample();
        let dot = to_dot(&e, Edges::All);
        assert!(dot.contains("why \\\"x\\\" < y?"), "{dot}");
        assert!(
            dot.contains("[label=\"answers\", constraint=false"),
            "{dot}"
        );
        let mm = to_mermaid(&e, Edges::All);
        assert!(
            mm.contains("n0[\"query: why #quot;x#quot; #lt; y?\"]"),
            "{mm}"
        );
        assert!(mm.contains("n1 -.->|answers| n0"), "{mm}");
        assert!(mm.contains("because 'a' #35; b"), "{mm}");
    }

    /// A long Claude Code-like session: 430 nodes in a reading-order chain, a response
    /// `answers` each query, one compaction supersedes the 300 nodes before it.
    fn large() -> SessionExport {
        let s = Session::new("large", SessionSource::ClaudeCode);
        let mut nodes: Vec<Node> = Vec::new();
        let mut edges = Vec::new();
        let mut last_query = None;
        for i in 0..430 {
            let kind = match i {
                300 => NodeType::Compaction,
                i if i % 3 == 0 => NodeType::Query,
                i if i % 3 == 1 => NodeType::Thinking,
                _ => NodeType::Response,
            };
            let n = Node::new(s.id, kind, format!("node {i}"));
            if let Some(prev) = nodes.last().map(|p| p.id) {
                edges.push(Edge::new(prev, EdgeType::Influences, n.id));
            }
            match kind {
                NodeType::Query => last_query = Some(n.id),
                NodeType::Response => {
                    edges.push(Edge::new(n.id, EdgeType::Answers, last_query.unwrap()));
                }
                _ => {}
            }
            if kind == NodeType::Compaction {
                for old in &nodes {
                    edges.push(Edge::new(n.id, EdgeType::Supersedes, old.id));
                }
            }
            nodes.push(n);
        }
        export_of(s, nodes, edges)
    }

    #[test]
    fn large_graphs_lay_out_by_reading_order_and_a_compaction_is_one_range() {
        let e = large();
        assert!(e.edges.len() > 800, "{}", e.edges.len());
        let compaction = e.nodes[300].id;
        let dot = to_dot(&e, Edges::All);
        let arrows: Vec<&str> = dot.lines().filter(|l| l.contains(" -> ")).collect();
        let constrained = arrows
            .iter()
            .filter(|l| !l.contains("constraint=false"))
            .count();
        assert_eq!(constrained, 429, "only the reading order is laid out");
        assert!(
            arrows
                .iter()
                .all(|l| !l.contains("\"answers\"") || l.contains("constraint=false")),
            "answers edges do not move the layout"
        );
        let supersedes: Vec<&&str> = arrows
            .iter()
            .filter(|l| l.contains("\"supersedes\""))
            .collect();
        assert_eq!(supersedes.len(), 1, "one edge to the range");
        assert!(supersedes[0].contains(&format!("\"{compaction}:supersedes\"")));
        let range = format!(
            "300 nodes: {} … {}",
            e.nodes[0].id.short(),
            e.nodes[299].id.short()
        );
        assert!(dot.contains(&range), "the range names its ends");
        assert!(!dot.contains("left out"), "all edges are drawn: {dot}");

        // The tree alone: only the reading order, and it says what it left out.
        let tree = to_dot(&e, Edges::Tree);
        assert_eq!(tree.matches(" -> ").count(), 429);
        assert!(tree.contains("// 443 edges left out"), "{tree}");

        let mm = to_mermaid(&e, Edges::All);
        let edges = mm
            .lines()
            .filter(|l| l.contains("-->") || l.contains("-.->"))
            .count();
        assert!(edges < MERMAID_MAX_EDGES, "{edges} edges");
        assert!(edges >= 429, "the reading order is all there: {edges}");
        assert!(mm.contains("-.->|supersedes| r0"), "{mm}");
    }
}
