//! Subagent threads: a thread written by a Task/Agent tool call (in the main file as a
//! sidechain, or in `subagents/agent-<id>.jsonl`) is linked to the call that started it.
//! The calls come from this file, from the sessions the importer created in this run, or
//! once per file from the store.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{FileMapper, MapCtx, RawLine, TASK_TOOLS};
use crate::store::{EdgeType, Node, NodeId, NodeType, SessionId};

/// A Task/Agent tool call a subagent thread may have come from: (node, prompt, agent id).
pub(super) type TaskCall = (NodeId, String, Option<String>);

/// Task/Agent tool calls of the sessions an importer created itself, across all its files.
/// For those sessions this is everything the store holds or will hold once the batches in
/// flight are committed, so linking a subagent thread needs no store read and no wait for
/// the writer thread (which would stall the import once per subagent file).
#[derive(Default)]
pub(crate) struct RunTaskCalls {
    /// Sessions first created by this importer (nothing of theirs was stored before).
    pub(super) created: HashSet<SessionId>,
    pub(super) calls: HashMap<SessionId, Vec<TaskCall>>,
}

impl RunTaskCalls {
    pub(super) fn set_agent(&mut self, session: SessionId, id: NodeId, agent: &str) {
        if let Some(calls) = self.calls.get_mut(&session) {
            for c in calls.iter_mut().filter(|c| c.0 == id) {
                c.2 = Some(agent.to_string());
            }
        }
    }
}

impl FileMapper {
    /// Links the first node of a subagent thread to the Task call that started it.
    pub(super) fn maybe_branch(
        &mut self,
        ctx: &mut MapCtx<'_>,
        line: &RawLine,
        root: &Node,
    ) -> Result<(), String> {
        let sidechain = line.is_sidechain == Some(true) || self.file_agent.is_some();
        if self.dry || !sidechain || line.parent_uuid.is_some() {
            return Ok(());
        }
        let agent = line.agent_id.clone().or_else(|| self.file_agent.clone());
        let created_here = ctx.task_calls.created.contains(&root.session);
        if !created_here && self.stored_task_calls.is_none() {
            ctx.settle().map_err(|e| e.to_string())?;
            let mut found = Vec::new();
            for n in ctx
                .store
                .session_nodes(root.session)
                .map_err(|e| e.to_string())?
            {
                if n.kind != NodeType::ToolCall {
                    continue;
                }
                let tool = n.tool().unwrap_or_default();
                if TASK_TOOLS.contains(&tool) {
                    let prompt = n
                        .meta
                        .get("input")
                        .and_then(|i| i.get("prompt"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let agent = n
                        .meta
                        .get("agent_id")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    found.push((n.id, prompt.to_string(), agent));
                }
            }
            self.stored_task_calls = Some(found);
        }
        let run_calls = match created_here {
            true => ctx.task_calls.calls.get(&root.session),
            false => None,
        };
        let candidates: Vec<&TaskCall> = self
            .stored_task_calls
            .iter()
            .flatten()
            .chain(run_calls.into_iter().flatten())
            .chain(self.task_calls.iter())
            .filter(|c| c.0 < root.id)
            .collect();
        let text = root.text.trim();
        let origin = candidates
            .iter()
            .find(|c| agent.is_some() && c.2 == agent)
            .or_else(|| {
                candidates
                    .iter()
                    .find(|c| !c.1.is_empty() && c.1.trim() == text)
            })
            .or_else(|| candidates.iter().max_by_key(|c| c.0))
            .map(|c| c.0);
        if let Some(o) = origin {
            self.edge(root.id, EdgeType::BranchesFrom, o);
        }
        Ok(())
    }
}
