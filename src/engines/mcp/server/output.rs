//! Tool results: errors a model can read, JSON results, and the output of the thought
//! tools in the reference server's shape.

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::super::args::ThoughtArgs;
use super::super::ledger::Recorded;
use super::LedgerError;

/// A tool error the caller's model can read.
pub(super) fn tool_error(msg: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(msg.into())])
}

/// The reference server's error shape: `{"error": …, "status": "failed"}`.
pub(super) fn sequential_error(msg: &str) -> CallToolResult {
    let text = serde_json::to_string_pretty(&json!({"error": msg, "status": "failed"}))
        .unwrap_or_default();
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// A JSON result as pretty text and as structured content.
pub(super) fn json_result(value: Value) -> CallToolResult {
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(value);
    r
}

pub(super) fn json_or_error(r: Result<Value, LedgerError>) -> CallToolResult {
    r.map_or_else(|e| tool_error(e.to_string()), json_result)
}

/// The reference server's output, fields in its order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SequentialOutput<'a> {
    thought_number: u32,
    total_thoughts: u32,
    next_thought_needed: bool,
    branches: &'a [String],
    thought_history_length: usize,
}

impl<'a> SequentialOutput<'a> {
    pub(super) fn new(args: &ThoughtArgs, rec: &'a Recorded) -> Self {
        Self {
            thought_number: args.thought_number,
            total_thoughts: rec.total_thoughts,
            next_thought_needed: args.next_thought_needed,
            branches: &rec.branches,
            thought_history_length: rec.history_len,
        }
    }
}

/// The `thought` tool's output: the reference fields plus ids and warnings.
pub(super) fn thought_output(args: &ThoughtArgs, rec: &Recorded) -> Map<String, Value> {
    let mut out = match serde_json::to_value(SequentialOutput::new(args, rec)) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    out.insert("sessionId".into(), json!(rec.session));
    out.insert("thoughtId".into(), json!(rec.node.id));
    if let Some(id) = rec.revises {
        out.insert("revisesThoughtId".into(), json!(id));
    }
    if let Some(id) = rec.branches_from {
        out.insert("branchesFromThoughtId".into(), json!(id));
    }
    if !rec.warnings.is_empty() {
        out.insert("warnings".into(), json!(rec.warnings));
    }
    out
}
