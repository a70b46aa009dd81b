//! What a line adds to its session: the session itself (minted on first sight of a Claude
//! session id, with the metadata lines carry), compaction boundaries and what they
//! supersede, and summary lines.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::{FileMapper, LineInfo, MAX_CHAIN, MapCtx, RawLine, SessionDelta, line_key};
use crate::engines::transcript::stable_uuid;
use crate::store::{EdgeType, NodeType, SessionId};

impl FileMapper {
    /// The glassbox session of a line, minting (and recording) one for a new Claude session.
    pub(super) fn session_of(
        &mut self,
        ctx: &mut MapCtx<'_>,
        line: &RawLine,
    ) -> Option<(SessionId, String)> {
        let claude = line
            .session_id
            .clone()
            .or_else(|| self.file_session.clone())?;
        let ts = self.last_ts?;
        let (id, minted) = match ctx.sessions.get(&claude) {
            Some(id) => (*id, false),
            None => {
                let id = SessionId(stable_uuid(ts, 0, &[b"session", claude.as_bytes()]));
                ctx.sessions.insert(claude.clone(), id);
                if !self.dry {
                    ctx.task_calls.created.insert(id);
                }
                (id, true)
            }
        };
        let delta = self.sessions.entry(id).or_insert_with(|| SessionDelta {
            claude_session: claude.clone(),
            files: Vec::new(),
            ..Default::default()
        });
        delta.minted |= minted;
        if !delta.files.contains(&self.path) {
            delta.files.push(self.path.clone());
        }
        delta.first_ts = Some(delta.first_ts.map_or(ts, |t| t.min(ts)));
        delta.last_ts = Some(delta.last_ts.map_or(ts, |t| t.max(ts)));
        if let Some(v) = &line.cwd {
            delta.cwd.get_or_insert_with(|| v.clone());
        }
        if line.git_branch.is_some() {
            delta.git_branch.clone_from(&line.git_branch);
        }
        if line.version.is_some() {
            delta.version.clone_from(&line.version);
        }
        if let Some(v) = &line.slug {
            delta.slug.get_or_insert_with(|| v.clone());
        }
        if Some(&claude) == self.file_session.as_ref() && !self.pending_summaries.is_empty() {
            delta.summaries.append(&mut self.pending_summaries);
        }
        if Some(&claude) == self.file_session.as_ref() && self.pending_custom_title.is_some() {
            delta.custom_title = self.pending_custom_title.take();
        }
        Some((id, claude))
    }

    pub(super) fn system(&mut self, ctx: &mut MapCtx<'_>, line: RawLine) -> Result<(), String> {
        let subtype = line.subtype.clone().unwrap_or_default();
        if subtype != "compact_boundary" {
            let reason = if subtype.is_empty() {
                "system line".to_string()
            } else {
                format!("system:{subtype}")
            };
            self.skip(ctx, &reason);
            self.pass_through(&line);
            return Ok(());
        }
        let Some((session, claude)) = self.session_of(ctx, &line) else {
            self.skip(ctx, "line without a session id or timestamp");
            self.pass_through(&line);
            return Ok(());
        };
        let uuid = line.uuid.clone().unwrap_or_default();
        let meta = line.compact_metadata.clone().unwrap_or(Value::Null);
        let trigger = meta
            .get("trigger")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string();
        let pre = meta.get("preTokens").and_then(Value::as_u64);
        let text = match pre {
            Some(p) => format!("Conversation compacted ({trigger}, {p} tokens before)"),
            None => format!("Conversation compacted ({trigger})"),
        };
        let mut n = self.make_node((session, &claude), NodeType::Compaction, &uuid, 0, 0, text);
        self.annotate(&mut n, &line);
        n.meta.insert("trigger".into(), json!(trigger));
        if let Some(p) = pre {
            n.meta.insert("pre_tokens".into(), json!(p));
        }
        let parent = line.parent_uuid.as_deref().map(line_key);
        let info = LineInfo {
            parent,
            nodes: vec![n.id],
            tail: Some(n.id),
            query: None,
            is_compaction: true,
        };
        if let Some(lp) = &line.logical_parent_uuid {
            n.meta.insert("logical_parent_uuid".into(), json!(lp));
            let mut cur = Some(line_key(lp));
            if cur.is_some_and(|k| !self.lines.contains_key(&k)) {
                n.meta.insert("dangling_logical_parent".into(), json!(true));
                if !self.dry {
                    ctx.summary.dangling_parents += 1;
                }
            }
            let mut seen = HashSet::new();
            let mut superseded = Vec::new();
            while let Some(k) = cur {
                if !seen.insert(k) || seen.len() > MAX_CHAIN {
                    break;
                }
                let Some(li) = self.lines.get(&k) else { break };
                superseded.extend(li.nodes.iter().copied());
                if li.is_compaction {
                    break;
                }
                cur = li.parent;
            }
            superseded.sort_unstable();
            superseded.dedup();
            for s in superseded {
                self.edge(n.id, EdgeType::Supersedes, s);
            }
        }
        self.touch(n);
        if let Some(u) = &line.uuid {
            self.lines.insert(line_key(u), info);
        }
        Ok(())
    }

    pub(super) fn summary_line(
        &mut self,
        ctx: &mut MapCtx<'_>,
        line: RawLine,
    ) -> Result<(), String> {
        let Some(text) = line.summary.clone().filter(|s| !s.trim().is_empty()) else {
            self.skip(ctx, "summary line without a summary");
            return Ok(());
        };
        let entry = (text, line.leaf_uuid.clone());
        let known = self
            .file_session
            .as_ref()
            .and_then(|c| ctx.sessions.get(c).copied());
        match known {
            Some(id) => {
                let claude = self.file_session.clone().unwrap_or_default();
                let path = self.path.clone();
                let delta = self.sessions.entry(id).or_insert_with(|| SessionDelta {
                    claude_session: claude,
                    files: vec![path],
                    ..Default::default()
                });
                delta.summaries.push(entry);
            }
            None => self.pending_summaries.push(entry),
        }
        Ok(())
    }

    /// A `custom-title` line: the title the person gave the session in Claude Code.
    pub(super) fn custom_title_line(&mut self, ctx: &mut MapCtx<'_>, line: RawLine) {
        let Some(title) = line.custom_title.clone().filter(|s| !s.trim().is_empty()) else {
            self.skip(ctx, "custom-title line without a title");
            return;
        };
        let claude = line
            .session_id
            .clone()
            .or_else(|| self.file_session.clone());
        let known = claude.as_ref().and_then(|c| ctx.sessions.get(c).copied());
        match (known, claude) {
            (Some(id), Some(claude)) => {
                let path = self.path.clone();
                let delta = self.sessions.entry(id).or_insert_with(|| SessionDelta {
                    claude_session: claude,
                    files: vec![path],
                    ..Default::default()
                });
                delta.custom_title = Some(title);
            }
            _ => self.pending_custom_title = Some(title),
        }
    }
}
