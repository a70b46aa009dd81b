//! A node's head: what a list, a tree or a count needs of a node without its body — kind,
//! status, time, a one-line excerpt and the few `meta` facts the views and session details
//! use. Heads are kept beside the session's node index (`session_heads`), so a session of
//! any size opens by reading its heads, and bodies are read only for what is on screen.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Node, NodeId, NodeStatus, NodeType, SessionId, StoreError};

/// The most characters of a node's first line a head keeps.
pub const EXCERPT_CHARS: usize = 120;

/// The `meta` keys a head reads: a thinking node's ThinkGraph steps, the checkpoint that
/// disputed a node, the memory entries a query was shown, a tool call's tool, token usage,
/// the Claude Code version and subagent of an imported line, a system payload's kind.
const STEPS: &str = "steps";
const DISPUTED_BY: &str = "disputed_by";
const MEMORY_USED: &str = "memory_used";
const TOOL: &str = "tool";
const USAGE: &str = "usage";
const VERSION: &str = "version";
const AGENT: &str = "agent_id";
const SYSTEM_PAYLOAD: &str = "system_payload";

/// A node as lists and counts see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeHead {
    /// From the table key; not part of the stored value.
    #[serde(skip, default = "nil_node")]
    pub id: NodeId,
    #[serde(skip, default = "nil_session")]
    pub session: SessionId,
    #[serde(rename = "k")]
    pub kind: NodeType,
    #[serde(rename = "s", default, skip_serializing_if = "is_complete")]
    pub status: NodeStatus,
    #[serde(rename = "t")]
    pub created_at: DateTime<Utc>,
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// The first non-blank line, trimmed and cut to [`EXCERPT_CHARS`] (with `…`).
    #[serde(rename = "x", default)]
    pub excerpt: String,
    /// ThinkGraph steps stored on the node.
    #[serde(rename = "n", default, skip_serializing_if = "is_zero")]
    pub steps: u32,
    #[serde(rename = "d", default, skip_serializing_if = "is_false")]
    pub disputed: bool,
    /// Memory entries the model was shown (queries).
    #[serde(rename = "mem", default, skip_serializing_if = "is_zero")]
    pub memory: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(rename = "m", default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(rename = "v", default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(rename = "p", default, skip_serializing_if = "is_false")]
    pub system_payload: bool,
    /// The numeric fields of `meta.usage`.
    #[serde(rename = "u", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub usage: BTreeMap<String, u64>,
}

fn nil_node() -> NodeId {
    NodeId(uuid::Uuid::nil())
}

fn nil_session() -> SessionId {
    SessionId(uuid::Uuid::nil())
}

fn is_complete(s: &NodeStatus) -> bool {
    *s == NodeStatus::Complete
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !b
}

impl Default for NodeStatus {
    fn default() -> Self {
        NodeStatus::Complete
    }
}

impl NodeHead {
    pub fn of(n: &Node) -> Self {
        let str_meta = |k: &str| n.meta.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let len = |k: &str| {
            n.meta
                .get(k)
                .and_then(|v| v.as_array())
                .map_or(0, |a| a.len() as u32)
        };
        Self {
            id: n.id,
            session: n.session,
            kind: n.kind,
            status: n.status.clone(),
            created_at: n.created_at,
            confidence: n.confidence,
            excerpt: excerpt(&n.text, EXCERPT_CHARS),
            steps: len(STEPS),
            disputed: n.meta.contains_key(DISPUTED_BY),
            memory: len(MEMORY_USED),
            tool: str_meta(TOOL),
            model: n.model.clone(),
            version: str_meta(VERSION),
            agent: str_meta(AGENT),
            system_payload: n.meta.contains_key(SYSTEM_PAYLOAD),
            usage: n
                .meta
                .get(USAGE)
                .and_then(|u| u.as_object())
                .map(|u| {
                    u.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// The stored value: compact JSON, never compressed, so a session's heads decode fast.
    pub(super) fn encode(&self) -> Result<Vec<u8>, StoreError> {
        let mut out = vec![super::codec::FORMAT_JSON];
        serde_json::to_writer(&mut out, self).map_err(|e| StoreError::Encode(e.to_string()))?;
        Ok(out)
    }

    pub(super) fn decode(key: &[u8; 32], bytes: &[u8]) -> Result<Self, StoreError> {
        let mut h: NodeHead = super::codec::decode("session_heads", bytes)?;
        let (s, n) = super::tables::split32(*key);
        h.session = SessionId::from_bytes(s);
        h.id = NodeId::from_bytes(n);
        Ok(h)
    }
}

/// One line of text, cut to `max` characters (the last one `…` when cut): the first
/// non-blank line, trimmed.
pub fn excerpt(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    match line.char_indices().nth(max) {
        Some(_) => {
            let mut s: String = line.chars().take(max.saturating_sub(1)).collect();
            s.push('…');
            s
        }
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_round_trips_and_keeps_what_lists_need() {
        let mut n = Node::new(SessionId::new(), NodeType::ToolCall, "\n  ls -la  \nmore");
        n.meta.insert("tool".into(), "Bash".into());
        n.meta.insert(
            "usage".into(),
            serde_json::json!({"output_tokens": 7, "service_tier": "standard"}),
        );
        n.meta.insert("steps".into(), serde_json::json!([{}, {}]));
        let h = NodeHead::of(&n);
        assert_eq!(h.excerpt, "ls -la");
        assert_eq!(h.tool.as_deref(), Some("Bash"));
        assert_eq!(h.steps, 2);
        assert_eq!(h.usage.get("output_tokens"), Some(&7));
        assert!(!h.usage.contains_key("service_tier"));
        let key = super::super::tables::key32(n.session.to_bytes(), n.id.to_bytes());
        let back = NodeHead::decode(&key, &h.encode().unwrap()).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn an_excerpt_is_cut_at_a_character_not_a_byte() {
        assert_eq!(excerpt("ééééé", 3), "éé…");
        assert_eq!(excerpt("ééé", 3), "ééé");
        assert_eq!(excerpt("  \n\n", 3), "");
    }
}
