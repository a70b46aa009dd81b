//! What a continued session sends back: the conversation so far (queries with their
//! answers, compaction summaries in place of what they superseded), or up to a branch point;
//! and the output tokens a session has used.

use std::collections::HashSet;

use super::compaction::{is_server_side_compaction, server_side_block};
use crate::engines::llm::{Compaction, Message, Role};
use crate::store::{EdgeType, Node, NodeHead, NodeId, NodeType, Store, StoreError};

/// The conversation so far: the latest compaction summary (if any), then each query with the
/// response that answered it, skipping nodes a compaction superseded. A summary the provider
/// wrote goes back with the answer of the turn it arrived in (or alone, when that turn gave
/// no answer), as the provider expects it.
pub fn session_history(nodes: &[Node], superseded: &HashSet<NodeId>) -> Vec<Message> {
    let mut out = Vec::new();
    if let Some(c) = nodes.iter().rev().find(|n| {
        n.kind == NodeType::Compaction
            && !is_server_side_compaction(n)
            && !superseded.contains(&n.id)
    }) {
        out.push(Message::user(format!(
            "Summary of our conversation so far:\n{}",
            c.text
        )));
        out.push(Message::assistant(
            "Understood; I will continue from that summary.",
        ));
    }
    let mut pending: Option<Compaction> = None;
    for n in nodes.iter().filter(|n| !superseded.contains(&n.id)) {
        match n.kind {
            NodeType::Compaction if is_server_side_compaction(n) => {
                pending = Some(server_side_block(n));
            }
            NodeType::Query => {
                if let Some(summary) = pending.take() {
                    out.push(Message::assistant("").with_compaction(summary));
                }
                out.push(Message::user(n.text.clone()))
            }
            NodeType::Response if !n.text.is_empty() => {
                // Two queries in a row (a failed turn) must not both be sent.
                if matches!(out.last(), Some(m) if m.role == Role::Assistant) {
                    continue;
                }
                let mut m = Message::assistant(n.text.clone());
                m.compaction = pending.take();
                out.push(m)
            }
            _ => {}
        }
        // A query not followed by an answer is dropped when the next query comes.
        let len = out.len();
        if len >= 2 && out[len - 1].role == Role::User && out[len - 2].role == Role::User {
            out.remove(len - 2);
        }
    }
    if let Some(summary) = pending {
        out.push(Message::assistant("").with_compaction(summary));
    }
    if matches!(out.last(), Some(m) if m.role == Role::User) {
        out.pop();
    }
    out
}

/// The history of a branch that continues from `node`: the conversation up to and
/// including it. Thinking at the branch point is restated as text (signed thinking cannot
/// be sent back as thinking). `None` when the node is not in `nodes`.
pub fn history_until(nodes: &[Node], node: NodeId) -> Option<Vec<Message>> {
    let pos = nodes.iter().position(|n| n.id == node)?;
    let upto = &nodes[..=pos];
    let mut out = session_history(upto, &Default::default());
    let at = &nodes[pos];
    if !matches!(at.kind, NodeType::Query | NodeType::Response) && !is_server_side_compaction(at) {
        // The open question of this turn, then the text at the branch point.
        if let Some(q) = upto.iter().rev().find(|n| n.kind == NodeType::Query) {
            out.push(Message::user(q.text.clone()));
        }
        let label = if at.kind == NodeType::Thinking {
            "My reasoning so far"
        } else {
            "So far"
        };
        out.push(Message::assistant(format!("{label}:\n{}", at.text)));
    }
    Some(out)
}

/// [`superseded_nodes`] read on the blocking pool, for async code.
pub(super) async fn superseded_in(
    store: &Store,
    nodes: &[Node],
) -> Result<HashSet<NodeId>, StoreError> {
    let compactions: Vec<Node> = nodes
        .iter()
        .filter(|n| n.kind == NodeType::Compaction)
        .cloned()
        .collect();
    if compactions.is_empty() {
        return Ok(HashSet::new());
    }
    store
        .run_blocking(move |store| superseded_nodes(store, &compactions))
        .await
}

/// Nodes of the session that a compaction node supersedes.
pub(super) fn superseded_nodes(
    store: &Store,
    nodes: &[Node],
) -> Result<HashSet<NodeId>, StoreError> {
    let mut out = HashSet::new();
    for n in nodes.iter().filter(|n| n.kind == NodeType::Compaction) {
        for e in store.edges_from(n.id, Some(EdgeType::Supersedes))? {
            out.insert(e.dst);
        }
    }
    Ok(out)
}

/// Output tokens a session has used, from its responses' recorded usage.
pub fn session_output_tokens(nodes: &[Node]) -> u64 {
    output_tokens(nodes.iter().map(|n| {
        let used = n.meta.get("usage").and_then(|u| u.get("output_tokens"));
        (n.kind, used.and_then(|v| v.as_u64()))
    }))
}

/// [`session_output_tokens`] from the session's node heads.
pub fn heads_output_tokens(heads: &[NodeHead]) -> u64 {
    output_tokens(
        heads
            .iter()
            .map(|h| (h.kind, h.usage.get("output_tokens").copied())),
    )
}

fn output_tokens(nodes: impl Iterator<Item = (NodeType, Option<u64>)>) -> u64 {
    nodes
        .filter(|(kind, _)| matches!(kind, NodeType::Response | NodeType::Compaction))
        .filter_map(|(_, used)| used)
        .sum()
}
