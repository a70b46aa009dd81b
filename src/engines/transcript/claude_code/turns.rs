//! User and assistant lines: queries, tool results attached to their calls, thinking
//! blocks (with ThinkGraph's steps and decision points), answers merged across the lines of
//! one API message, and tool calls.

use serde_json::{Value, json};

use super::lines::tool_result_text;
use super::prompt::{PromptKind, classify};
use super::{
    FileMapper, LineInfo, MAX_TOOL_USE_RESULT_BYTES, MapCtx, RawLine, TASK_TOOLS, line_key,
};
use crate::engines::thinkgraph;
use crate::engines::transcript::stable_uuid;
use crate::store::{DecisionId, DecisionPoint, EdgeType, Node, NodeType};

impl FileMapper {
    pub(super) fn user(&mut self, ctx: &mut MapCtx<'_>, line: RawLine) -> Result<(), String> {
        let Some(message) = &line.message else {
            self.skip(ctx, "user line without a message");
            self.pass_through(&line);
            return Ok(());
        };
        if line.is_meta == Some(true) {
            self.skip(ctx, "user meta line (isMeta)");
            self.pass_through(&line);
            return Ok(());
        }
        let Some((session, claude)) = self.session_of(ctx, &line) else {
            self.skip(ctx, "line without a session id or timestamp");
            self.pass_through(&line);
            return Ok(());
        };
        let mut texts = Vec::new();
        let mut images = 0u64;
        let mut results = Vec::new();
        match &message.content {
            Some(Value::String(s)) => texts.push(s.clone()),
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(t) = b.get("text").and_then(Value::as_str) {
                                texts.push(t.to_string());
                            }
                        }
                        Some("image") => images += 1,
                        Some("tool_result") => results.push(b),
                        Some(other) => self.skip(ctx, &format!("unknown user block '{other}'")),
                        None => self.skip(ctx, "user block without a type"),
                    }
                }
            }
            _ => {}
        }
        let (parent, pinfo, dangling) = self.parent_info(ctx, &line);
        let uuid = line.uuid.clone().unwrap_or_default();
        let mut info = LineInfo {
            parent,
            nodes: Vec::new(),
            tail: pinfo.tail,
            query: pinfo.query,
            is_compaction: false,
        };

        // The summary that follows a compaction boundary becomes the compaction's text.
        if line.is_compact_summary == Some(true) && pinfo.is_compaction {
            if let Some(cid) = pinfo.tail
                && let Some(node) = self.node_mut(ctx, cid).map_err(|e| e.to_string())?
                && node.meta.get("summary_uuid").and_then(Value::as_str) != Some(uuid.as_str())
            {
                node.text = texts.join("\n\n");
                node.meta.insert("summary_uuid".into(), json!(uuid));
            }
            info.is_compaction = true;
            info.nodes.extend(pinfo.tail);
            if let Some(u) = &line.uuid {
                self.lines.insert(line_key(u), info);
            }
            return Ok(());
        }

        let small_result = line
            .tool_use_result
            .as_ref()
            .filter(|v| {
                serde_json::to_vec(v)
                    .map(|b| b.len() <= MAX_TOOL_USE_RESULT_BYTES)
                    .unwrap_or(false)
            })
            .cloned();
        let agent = line
            .tool_use_result
            .as_ref()
            .and_then(|v| v.get("agentId"))
            .and_then(Value::as_str)
            .map(str::to_string);
        for (i, r) in results.iter().enumerate() {
            let tool_use_id = r
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let text = tool_result_text(r.get("content"));
            let is_error = r.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            let target = self.tool_calls.get(&tool_use_id).copied();
            let id = match target {
                Some(id) => id,
                None => {
                    // A result whose call is not in the file: keep it on a node of its own.
                    let mut n = self.make_node(
                        (session, &claude),
                        NodeType::ToolCall,
                        &uuid,
                        1000 + i as u32,
                        i as u32,
                        String::new(),
                    );
                    self.annotate(&mut n, &line);
                    n.meta.insert("tool_use_id".into(), json!(tool_use_id));
                    n.meta.insert("orphan_result".into(), json!(true));
                    if let Some(t) = info.tail {
                        self.edge(t, EdgeType::Influences, n.id);
                    }
                    let id = n.id;
                    self.tool_calls.insert(tool_use_id.clone(), id);
                    info.nodes.push(id);
                    self.touch(n);
                    id
                }
            };
            if let Some(node) = self.node_mut(ctx, id).map_err(|e| e.to_string())? {
                node.meta.insert("result".into(), Value::String(text));
                node.meta.insert("is_error".into(), json!(is_error));
                node.meta.insert("result_uuid".into(), json!(uuid));
                if let Some(v) = &small_result {
                    node.meta.insert("tool_use_result".into(), v.clone());
                }
                if let Some(a) = &agent {
                    node.meta.insert("agent_id".into(), json!(a));
                }
            }
            if let Some(a) = &agent {
                for t in self.task_calls.iter_mut().filter(|t| t.0 == id) {
                    t.2 = Some(a.clone());
                }
                if !self.dry {
                    ctx.task_calls.set_agent(session, id, a);
                }
            }
            info.tail = Some(id);
        }

        if !texts.is_empty() || images > 0 {
            let text = if texts.is_empty() {
                "[image]".to_string()
            } else {
                texts.join("\n\n")
            };
            let mut n = self.make_node((session, &claude), NodeType::Query, &uuid, 0, 0, text);
            self.annotate(&mut n, &line);
            if images > 0 {
                n.meta.insert("images".into(), json!(images));
            }
            // The text stays as it was written; what it is goes into meta for the views.
            let prompt = classify(&n.text);
            match &prompt {
                PromptKind::Typed => {}
                PromptKind::Command(c) => {
                    n.meta.insert("command".into(), json!(c));
                }
                PromptKind::SystemPayload(kind) => {
                    n.meta.insert("system_payload".into(), json!(kind));
                }
            }
            for (k, v) in [
                ("cwd", &line.cwd),
                ("git_branch", &line.git_branch),
                ("version", &line.version),
            ] {
                if let Some(v) = v {
                    n.meta.insert(k.into(), json!(v));
                }
            }
            if dangling {
                n.meta.insert("dangling_parent".into(), json!(true));
            }
            match pinfo.tail {
                Some(t) => self.edge(t, EdgeType::Influences, n.id),
                None => self.maybe_branch(ctx, &line, &n)?,
            }
            let sidechain = line.is_sidechain == Some(true) || self.file_agent.is_some();
            if !sidechain
                && let Some(d) = self.sessions.get_mut(&session)
                && d.first_query.is_none()
            {
                d.first_query = match prompt {
                    PromptKind::Typed => Some(n.text.clone()),
                    PromptKind::Command(c) => Some(c),
                    PromptKind::SystemPayload(_) => None,
                };
            }
            info.tail = Some(n.id);
            info.query = Some(n.id);
            info.nodes.push(n.id);
            self.touch(n);
        }
        if let Some(u) = &line.uuid {
            self.lines.insert(line_key(u), info);
        }
        Ok(())
    }

    pub(super) fn assistant(
        &mut self,
        ctx: &mut MapCtx<'_>,
        mut line: RawLine,
    ) -> Result<(), String> {
        let content = line.message.as_mut().and_then(|m| m.content.take());
        let Some(message) = &line.message else {
            self.skip(ctx, "assistant line without a message");
            self.pass_through(&line);
            return Ok(());
        };
        let Some((session, claude)) = self.session_of(ctx, &line) else {
            self.skip(ctx, "line without a session id or timestamp");
            self.pass_through(&line);
            return Ok(());
        };
        let uuid = line.uuid.clone().unwrap_or_default();
        let msg_id = message.id.clone().unwrap_or_else(|| format!("line:{uuid}"));
        let blocks: Vec<Value> = match content {
            Some(Value::Array(b)) => b,
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            _ => Vec::new(),
        };
        let (parent, pinfo, dangling) = self.parent_info(ctx, &line);
        let mut info = LineInfo {
            parent,
            nodes: Vec::new(),
            tail: pinfo.tail,
            query: pinfo.query,
            is_compaction: false,
        };
        let mut prev = pinfo.tail;
        let mut state = self.messages.remove(&msg_id).unwrap_or_default();
        let no_blocks = blocks.is_empty();
        // The blocks are owned: their texts and tool inputs are moved into the nodes rather
        // than copied.
        for (bi, mut block) in blocks.into_iter().enumerate() {
            let bi = bi as u32;
            let order = state.blocks;
            state.blocks += 1;
            let btype = block
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let created = match btype.as_str() {
                "thinking" | "redacted_thinking" => {
                    let text = take_str(&mut block, "thinking");
                    let mut n = self.make_node(
                        (session, &claude),
                        NodeType::Thinking,
                        &uuid,
                        bi,
                        order,
                        text,
                    );
                    if btype == "redacted_thinking" {
                        n.meta.insert(
                            "redacted".into(),
                            json!([block.get("data").cloned().unwrap_or(Value::Null)]),
                        );
                    }
                    if let Some(sig) = block.get("signature").filter(|v| !v.is_null()) {
                        n.meta.insert("signature".into(), sig.clone());
                    }
                    if !self.dry {
                        ctx.summary.thinking_blocks += 1;
                        if !n.text.trim().is_empty() {
                            // ThinkGraph runs on the import's preparer thread.
                            self.analyse.push(n.id);
                        }
                    }
                    Some(n)
                }
                "text" => {
                    let text = take_str(&mut block, "text");
                    let part = format!("{uuid}#{bi}");
                    if text.trim().is_empty() {
                        // Claude Code opens a split message with a whitespace-only text
                        // line: no node, so the thinking that follows comes first.
                        continue;
                    }
                    match state.response {
                        Some(rid) => {
                            if let Some(node) =
                                self.node_mut(ctx, rid).map_err(|e| e.to_string())?
                            {
                                let parts = node.meta.entry("parts").or_insert_with(|| json!([]));
                                let seen = parts
                                    .as_array()
                                    .is_some_and(|a| a.iter().any(|p| p.as_str() == Some(&part)));
                                if !seen {
                                    if let Some(a) = parts.as_array_mut() {
                                        a.push(json!(part));
                                    }
                                    if !node.text.is_empty() && !text.is_empty() {
                                        node.text.push_str("\n\n");
                                    }
                                    node.text.push_str(&text);
                                }
                            }
                            prev = Some(rid);
                            info.tail = Some(rid);
                            None
                        }
                        None => {
                            let mut n = self.make_node(
                                (session, &claude),
                                NodeType::Response,
                                &format!("msg:{msg_id}"),
                                0,
                                order,
                                text,
                            );
                            n.meta.insert("parts".into(), json!([part]));
                            if let Some(q) = pinfo.query {
                                self.edge(n.id, EdgeType::Answers, q);
                            }
                            state.response = Some(n.id);
                            Some(n)
                        }
                    }
                }
                "tool_use" => {
                    let tool_id = block
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    let name = block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    let input = block
                        .get_mut("input")
                        .map(Value::take)
                        .unwrap_or(Value::Null);
                    let text = serde_json::to_string(&input).unwrap_or_default();
                    let mut n = self.make_node(
                        (session, &claude),
                        NodeType::ToolCall,
                        &uuid,
                        bi,
                        order,
                        text,
                    );
                    n.meta.insert("tool".into(), json!(name));
                    n.meta.insert("tool_use_id".into(), json!(tool_id));
                    if TASK_TOOLS.contains(&name.as_str()) {
                        let prompt = input
                            .get("prompt")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string();
                        if !self.dry {
                            ctx.task_calls.calls.entry(session).or_default().push((
                                n.id,
                                prompt.clone(),
                                None,
                            ));
                        }
                        self.task_calls.push((n.id, prompt, None));
                    }
                    n.meta.insert("input".into(), input);
                    self.tool_calls.insert(tool_id, n.id);
                    Some(n)
                }
                other => {
                    self.skip(ctx, &format!("unknown assistant block '{other}'"));
                    None
                }
            };
            let Some(mut n) = created else { continue };
            self.annotate(&mut n, &line);
            n.model.clone_from(&message.model);
            n.meta.insert("message_id".into(), json!(msg_id));
            if let Some(r) = &line.request_id {
                n.meta.insert("request_id".into(), json!(r));
            }
            match prev {
                Some(p) => self.edge(p, EdgeType::Influences, n.id),
                None if info.nodes.is_empty() => {
                    if dangling {
                        n.meta.insert("dangling_parent".into(), json!(true));
                    }
                    self.maybe_branch(ctx, &line, &n)?;
                }
                None => {}
            }
            prev = Some(n.id);
            info.tail = Some(n.id);
            info.nodes.push(n.id);
            state.holder.get_or_insert(n.id);
            self.touch(n);
        }
        if no_blocks {
            self.skip(ctx, "assistant message without content");
        }
        // Usage is repeated on every line of a split message: keep the latest, on one node.
        if let Some(holder) = state.holder {
            let usage = message.usage.clone();
            let stop = message.stop_reason.clone();
            if let Some(node) = self.node_mut(ctx, holder).map_err(|e| e.to_string())? {
                if let Some(u) = usage {
                    node.meta.insert("usage".into(), u);
                }
                if let Some(s) = stop {
                    node.meta.insert("stop_reason".into(), json!(s));
                }
            }
        }
        if let Some(m) = &message.model
            && m != "<synthetic>"
            && let Some(d) = self.sessions.get_mut(&session)
        {
            d.model = Some(m.clone());
        }
        self.messages.insert(msg_id, state);
        if let Some(u) = &line.uuid {
            self.lines.insert(line_key(u), info);
        }
        Ok(())
    }
}

/// The string under `key` of a block, taken out of it (empty when it is missing or not a
/// string).
fn take_str(block: &mut Value, key: &str) -> String {
    match block.get_mut(key).map(Value::take) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    }
}

/// Runs ThinkGraph over a thinking node: steps into its meta, its confidence, and its decision
/// points onto `decisions`. What a batch's [`super::Batch::analyse`] lists is run so when the
/// batch is prepared for writing, off the thread that reads the lines.
pub(crate) fn analyse_thinking(n: &mut Node, decisions: &mut Vec<DecisionPoint>) {
    if n.text.trim().is_empty() {
        return;
    }
    let analysis = thinkgraph::analyze(&n.text);
    thinkgraph::Step::store_all(n, &analysis.steps);
    n.confidence = Some(analysis.confidence);
    for (i, d) in analysis.decisions.into_iter().enumerate() {
        let i = i as u32;
        decisions.push(DecisionPoint {
            id: DecisionId(stable_uuid(
                n.created_at,
                i,
                &[b"decision", n.id.0.as_bytes(), &i.to_le_bytes()],
            )),
            node: n.id,
            step_number: d.step_index,
            description: d.description,
            chosen_path: d.chosen_path,
            alternatives: d.alternatives,
            confidence: d.confidence,
            created_at: n.created_at,
        });
    }
}
