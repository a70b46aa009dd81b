//! What a session holds, counted: its project and working directory, models, Claude Code
//! versions, first and last activity, nodes by kind, tool calls by tool, subagents,
//! compactions and the tokens nodes carry in `meta.usage`. Used by `sessions show`.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::project::{session_cwd, session_git_branch, session_project};
use crate::store::{NodeHead, NodeType, Session};

/// A session's details and counts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SessionStats {
    pub project: Option<String>,
    pub cwd: Option<String>,
    pub git_branch: Option<String>,
    /// Every model a node names (the session's own first when it has one).
    pub models: Vec<String>,
    /// The Claude Code versions its lines carry.
    pub versions: Vec<String>,
    pub first_activity: Option<DateTime<Utc>>,
    pub last_activity: Option<DateTime<Utc>>,
    pub duration_secs: Option<i64>,
    /// User turns the person typed (system payloads left out) and payloads.
    pub turns: u64,
    pub system_payloads: u64,
    pub responses: u64,
    pub thinking_blocks: u64,
    pub tool_calls: u64,
    pub tool_calls_by_tool: BTreeMap<String, u64>,
    /// Distinct subagent threads.
    pub subagents: u64,
    pub compactions: u64,
    /// Sums of `meta.usage` fields (input_tokens, output_tokens, cache_*), when nodes carry it.
    pub tokens: BTreeMap<String, u64>,
    /// The transcript files it was imported from (`meta.files`).
    pub files: Vec<String>,
}

impl SessionStats {
    /// Counted from the session's node heads (`Store::session_heads`): no node body is read.
    pub fn of(s: &Session, nodes: &[NodeHead]) -> Self {
        let mut st = SessionStats {
            project: session_project(s),
            cwd: session_cwd(s).map(str::to_string),
            git_branch: session_git_branch(s).map(str::to_string),
            files: s
                .meta
                .get("files")
                .and_then(Value::as_array)
                .map(|l| {
                    l.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            ..Default::default()
        };
        let mut models = BTreeSet::new();
        let mut versions = BTreeSet::new();
        let mut agents = BTreeSet::new();
        if let Some(v) = s.meta.get("version").and_then(Value::as_str) {
            versions.insert(v.to_string());
        }
        for n in nodes {
            st.first_activity = Some(
                st.first_activity
                    .map_or(n.created_at, |t| t.min(n.created_at)),
            );
            st.last_activity = Some(
                st.last_activity
                    .map_or(n.created_at, |t| t.max(n.created_at)),
            );
            if let Some(m) = &n.model {
                models.insert(m.clone());
            }
            if let Some(v) = &n.version {
                versions.insert(v.clone());
            }
            if let Some(a) = &n.agent {
                agents.insert(a.clone());
            }
            match n.kind {
                NodeType::Query if n.is_system_payload() => st.system_payloads += 1,
                NodeType::Query => st.turns += 1,
                NodeType::Response => st.responses += 1,
                NodeType::Thinking => st.thinking_blocks += 1,
                NodeType::ToolCall => {
                    st.tool_calls += 1;
                    let tool = n.tool().unwrap_or("?").to_string();
                    *st.tool_calls_by_tool.entry(tool).or_insert(0) += 1;
                }
                NodeType::Compaction => st.compactions += 1,
                _ => {}
            }
            for (k, x) in &n.usage {
                *st.tokens.entry(k.clone()).or_insert(0) += x;
            }
        }
        if st.first_activity.is_none() {
            st.first_activity = Some(s.created_at);
            st.last_activity = Some(s.updated_at);
        }
        st.duration_secs = st
            .first_activity
            .zip(st.last_activity)
            .map(|(a, b)| (b - a).num_seconds());
        st.models = s.model.iter().cloned().collect();
        st.models
            .extend(models.into_iter().filter(|m| Some(m) != s.model.as_ref()));
        st.versions = versions.into_iter().collect();
        st.subagents = agents.len() as u64;
        st
    }
}

/// The details as short lines of text, shared by `sessions show` and the TUI's Sessions
/// pane.
impl SessionStats {
    /// `2025-06-01 10:00:01 → 2025-06-01 10:01:22 (1m 21s)`.
    pub fn active_line(&self) -> Option<String> {
        let (a, b) = self.first_activity.zip(self.last_activity)?;
        Some(format!(
            "{} → {} ({})",
            a.format("%Y-%m-%d %H:%M:%S"),
            b.format("%Y-%m-%d %H:%M:%S"),
            human_duration(self.duration_secs.unwrap_or(0))
        ))
    }

    /// `4 turns, 5 responses, 2 thinking blocks, 3 tool calls, 1 subagents, 1 compactions`.
    pub fn counts_line(&self) -> String {
        let mut counts = format!(
            "{} turns, {} responses, {} thinking blocks, {} tool calls",
            self.turns, self.responses, self.thinking_blocks, self.tool_calls
        );
        if self.system_payloads > 0 {
            counts.push_str(&format!(", {} system payloads", self.system_payloads));
        }
        counts.push_str(&format!(
            ", {} subagents, {} compactions",
            self.subagents, self.compactions
        ));
        counts
    }

    /// `Bash 3, Read 2`: tool calls by tool, most used first.
    pub fn tools_line(&self) -> Option<String> {
        if self.tool_calls_by_tool.is_empty() {
            return None;
        }
        let mut tools: Vec<_> = self.tool_calls_by_tool.iter().collect();
        tools.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let tools: Vec<String> = tools.iter().map(|(t, n)| format!("{t} {n}")).collect();
        Some(tools.join(", "))
    }

    /// `input_tokens 120, output_tokens 40`.
    pub fn tokens_line(&self) -> Option<String> {
        if self.tokens.is_empty() {
            return None;
        }
        let t: Vec<String> = self
            .tokens
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        Some(t.join(", "))
    }
}

/// `1h 02m`, `3m 05s`, `12s`.
pub fn human_duration(secs: i64) -> String {
    let s = secs.max(0);
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m {sec:02}s"),
        (h, m, _) if h < 48 => format!("{h}h {m:02}m"),
        (h, _, _) => format!("{}d {}h", h / 24, h % 24),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_short() {
        assert_eq!(human_duration(12), "12s");
        assert_eq!(human_duration(185), "3m 05s");
        assert_eq!(human_duration(3720), "1h 02m");
        assert_eq!(human_duration(3 * 86_400 + 7200), "3d 2h");
    }
}
