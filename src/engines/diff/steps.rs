//! The steps of a node, as the diff and the merge compare them: a thinking node's ThinkGraph
//! steps; a fork branch's (or synthesis's) conclusion and each of its listed insights,
//! risks, opportunities and assumptions; a merge's claims; any other node's text cut into
//! steps the way thinking is.

use serde::{Deserialize, Serialize};

use crate::engines::thinkgraph::{self, Step};
use crate::store::{Node, NodeType};

/// One step of a line of reasoning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiffStep {
    /// Position in the node's steps, from 0.
    pub index: u32,
    /// What the step is: a ThinkGraph step kind (`analysis`, `conclusion`, …) or the list a
    /// branch's item came from (`insight`, `risk`, `opportunity`, `assumption`, `claim`).
    pub kind: String,
    pub text: String,
}

/// The meta lists of a fork branch or synthesis, each item one step of the named kind.
const LISTS: [(&str, &str); 4] = [
    ("keyInsights", "insight"),
    ("risks", "risk"),
    ("opportunities", "opportunity"),
    ("assumptions", "assumption"),
];

/// The steps of `node`, in order; empty when it holds no text.
pub fn steps_of(node: &Node) -> Vec<DiffStep> {
    let mut out: Vec<DiffStep> = Vec::new();
    let mut push = |kind: &str, text: &str| {
        let text = text.trim();
        if !text.is_empty() {
            out.push(DiffStep {
                index: out.len() as u32,
                kind: kind.to_string(),
                text: text.to_string(),
            });
        }
    };
    if let Some(claims) = node.meta.get(super::CLAIMS_KEY).and_then(|v| v.as_array()) {
        for c in claims {
            push(
                "claim",
                c.get("text").and_then(|t| t.as_str()).unwrap_or(""),
            );
        }
        return out;
    }
    let stored = if node.kind == NodeType::Thinking {
        Step::of(node)
    } else {
        Vec::new()
    };
    let steps = if stored.is_empty() {
        thinkgraph::analyze(&node.text).steps
    } else {
        stored
    };
    for s in &steps {
        push(s.kind.as_str(), &s.text);
    }
    if matches!(node.kind, NodeType::ForkBranch | NodeType::Synthesis) {
        for (key, kind) in LISTS {
            for item in node
                .meta
                .get(key)
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten()
            {
                push(kind, item.as_str().unwrap_or(""));
            }
        }
    }
    out
}
