//! A node's head: what a list, a tree or a count needs of a node without its body — kind,
//! status, time, a one-line excerpt and the few `meta` facts the views and session details
//! use. Heads are kept beside the session's node index (`session_heads`), so a session of
//! any size opens by reading its heads, and bodies are read only for what is on screen.

use std::collections::BTreeMap;

use chrono::{DateTime, SubsecRound, Utc};

use super::{Node, NodeId, NodeStatus, NodeType, SessionId, StoreError};

/// The most characters of a node's first line a head keeps.
pub const EXCERPT_CHARS: usize = 120;

/// The `meta` keys a head reads: a thinking node's ThinkGraph steps, the checkpoint that
/// disputed a node, the memory entries a query was shown, a tool call's tool, token usage,
/// the Claude Code version and subagent of an imported line, a system payload's kind, a
/// pipeline layer's name.
const STEPS: &str = "steps";
const DISPUTED_BY: &str = "disputed_by";
const MEMORY_USED: &str = "memory_used";
const TOOL: &str = "tool";
const USAGE: &str = "usage";
const VERSION: &str = "version";
const AGENT: &str = "agent_id";
const SYSTEM_PAYLOAD: &str = "system_payload";
const LAYER: &str = "layer";

/// A node as lists and counts see it.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeHead {
    /// `id` and `session` come from the table key, not the stored value.
    pub id: NodeId,
    pub session: SessionId,
    pub kind: NodeType,
    pub status: NodeStatus,
    pub created_at: DateTime<Utc>,
    pub confidence: Option<f64>,
    /// The first non-blank line, trimmed and cut to `EXCERPT_CHARS` (with `…`).
    pub excerpt: String,
    /// ThinkGraph steps stored on the node.
    pub steps: u32,
    pub disputed: bool,
    /// Memory entries the model was shown (queries).
    pub memory: u32,
    /// What kind of its kind it is: a tool call's tool, a pipeline layer's layer, the kind
    /// of system payload a query carries.
    pub tag: Option<String>,
    pub model: Option<String>,
    pub version: Option<String>,
    pub agent: Option<String>,
    /// The numeric fields of `meta.usage`.
    pub usage: BTreeMap<String, u64>,
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
            // What the stored form keeps (microseconds).
            created_at: n.created_at.trunc_subsecs(6),
            confidence: n.confidence,
            excerpt: excerpt(&n.text, EXCERPT_CHARS),
            steps: len(STEPS),
            disputed: n.meta.contains_key(DISPUTED_BY),
            memory: len(MEMORY_USED),
            tag: match n.kind {
                NodeType::ToolCall => str_meta(TOOL),
                NodeType::PipelineLayer => str_meta(LAYER),
                NodeType::Query => str_meta(SYSTEM_PAYLOAD),
                _ => None,
            },
            model: n.model.clone(),
            version: str_meta(VERSION),
            agent: str_meta(AGENT),
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

    /// A tool call's tool.
    pub fn tool(&self) -> Option<&str> {
        self.tag
            .as_deref()
            .filter(|_| self.kind == NodeType::ToolCall)
    }

    /// A query Claude Code wrote (a system payload), not the person.
    pub fn is_system_payload(&self) -> bool {
        self.kind == NodeType::Query && self.tag.is_some()
    }

    /// The stored value: format byte [`FORMAT_HEAD`], then the fields in a fixed order —
    /// strings as a varint length and UTF-8 (empty for none), numbers as varints — so a
    /// session's heads decode with no parsing of text.
    pub(super) fn encode(&self) -> Result<Vec<u8>, StoreError> {
        let mut out = Vec::with_capacity(64 + self.excerpt.len());
        out.push(FORMAT_HEAD);
        put_str(&mut out, self.kind.as_str());
        let (status, error) = match &self.status {
            NodeStatus::Complete => (0, ""),
            NodeStatus::Streaming => (1, ""),
            NodeStatus::Interrupted => (2, ""),
            NodeStatus::Failed { error } => (3, error.as_str()),
        };
        let flags =
            status | (u8::from(self.disputed) << 2) | (u8::from(self.confidence.is_some()) << 3);
        out.push(flags);
        put_str(&mut out, error);
        out.extend_from_slice(&self.created_at.timestamp_micros().to_le_bytes());
        if let Some(c) = self.confidence {
            out.extend_from_slice(&c.to_le_bytes());
        }
        put_str(&mut out, &self.excerpt);
        put_varint(&mut out, u64::from(self.steps));
        put_varint(&mut out, u64::from(self.memory));
        for s in [&self.tag, &self.model, &self.version, &self.agent] {
            put_str(&mut out, s.as_deref().unwrap_or(""));
        }
        put_varint(&mut out, self.usage.len() as u64);
        for (k, v) in &self.usage {
            put_str(&mut out, k);
            put_varint(&mut out, *v);
        }
        Ok(out)
    }

    pub(super) fn decode(key: &[u8; 32], bytes: &[u8]) -> Result<Self, StoreError> {
        let corrupt = || StoreError::Corrupt("session_heads: undecodable value".into());
        let (s, n) = super::tables::split32(*key);
        let mut r = Reader(
            bytes
                .get(1..)
                .filter(|_| bytes[0] == FORMAT_HEAD)
                .ok_or_else(corrupt)?,
        );
        let kind = r.str().ok_or_else(corrupt)?;
        let kind = NodeType::ALL
            .into_iter()
            .find(|k| k.as_str() == kind)
            .ok_or_else(|| StoreError::Corrupt(format!("session_heads: unknown kind {kind}")))?;
        let flags = r.byte().ok_or_else(corrupt)?;
        let error = r.str().ok_or_else(corrupt)?;
        let status = match flags & 3 {
            0 => NodeStatus::Complete,
            1 => NodeStatus::Streaming,
            2 => NodeStatus::Interrupted,
            _ => NodeStatus::Failed {
                error: error.to_string(),
            },
        };
        let micros = i64::from_le_bytes(r.array().ok_or_else(corrupt)?);
        let created_at = DateTime::from_timestamp_micros(micros).ok_or_else(corrupt)?;
        let confidence = if flags & 8 != 0 {
            Some(f64::from_le_bytes(r.array().ok_or_else(corrupt)?))
        } else {
            None
        };
        let excerpt = r.str().ok_or_else(corrupt)?.to_string();
        let steps = r.varint().ok_or_else(corrupt)? as u32;
        let memory = r.varint().ok_or_else(corrupt)? as u32;
        let mut opt = || {
            r.str()
                .map(|s| (!s.is_empty()).then(|| s.to_string()))
                .ok_or_else(corrupt)
        };
        let (tag, model, version, agent) = (opt()?, opt()?, opt()?, opt()?);
        let mut usage = BTreeMap::new();
        for _ in 0..r.varint().ok_or_else(corrupt)? {
            let k = r.str().ok_or_else(corrupt)?.to_string();
            usage.insert(k, r.varint().ok_or_else(corrupt)?);
        }
        Ok(Self {
            id: NodeId::from_bytes(n),
            session: SessionId::from_bytes(s),
            kind,
            status,
            created_at,
            confidence,
            excerpt,
            steps,
            disputed: flags & 4 != 0,
            memory,
            tag,
            model,
            version,
            agent,
            usage,
        })
    }
}

/// The format byte of a head value.
const FORMAT_HEAD: u8 = 3;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Reads a head's fields in order; `None` when the value ends early or is malformed.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn str(&mut self) -> Option<&'a str> {
        let len = usize::try_from(self.varint()?).ok()?;
        if len > self.0.len() {
            return None;
        }
        let (s, rest) = self.0.split_at(len);
        self.0 = rest;
        std::str::from_utf8(s).ok()
    }
}

/// One line of text, cut to `max` characters (the last one `…` when cut): the first
/// non-blank line, trimmed. The line is read no further than its first `max` characters and
/// the blanks after them, so that a line of megabytes (a long trace often has no line break)
/// costs what a short one does.
pub fn excerpt(text: &str, max: usize) -> String {
    // From its first character that is not blank, past the blank lines before it.
    let start = text.trim_start();
    let head_end = start
        .char_indices()
        .nth(max)
        .map_or(start.len(), |(i, _)| i);
    let head = &start[..head_end];
    if let Some(end) = head.find('\n') {
        return head[..end].trim_end().to_string();
    }
    // The line goes on past `max` characters: it is cut unless only blanks follow.
    let goes_on = start[head_end..]
        .chars()
        .find(|&c| c == '\n' || !c.is_whitespace())
        .is_some_and(|c| c != '\n');
    if goes_on {
        let mut s: String = head.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    } else {
        head.trim_end().to_string()
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
        assert_eq!(h.tool(), Some("Bash"));
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

    /// The first non-blank line, trimmed, read whole: what [`excerpt`] must agree with.
    fn whole_line_excerpt(text: &str, max: usize) -> String {
        let line = text
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        if line.chars().count() > max {
            let mut s: String = line.chars().take(max.saturating_sub(1)).collect();
            s.push('…');
            s
        } else {
            line.to_string()
        }
    }

    proptest::proptest! {
        #[test]
        fn an_excerpt_reads_no_more_of_a_line_than_it_shows_and_agrees_with_the_whole_line(
            text in "[ a\u{e9}\n\r\t\u{2003}.]{0,40}",
            max in 0usize..12,
        ) {
            proptest::prop_assert_eq!(excerpt(&text, max), whole_line_excerpt(&text, max));
        }
    }
}
