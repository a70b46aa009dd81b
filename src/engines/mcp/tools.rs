//! The tools the ledger server lists: names, descriptions, input and output schemas. The
//! `sequentialthinking` schemas match the reference server's so it is a drop-in replacement.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

/// The reference server's tool name.
pub const SEQUENTIAL_THINKING: &str = "sequentialthinking";
/// The ledger tool names.
pub const THOUGHT: &str = "thought";
pub const SESSION_START: &str = "session_start";
pub const SESSION_LIST: &str = "session_list";
pub const SESSION_EXPORT: &str = "session_export";
pub const SESSION_IMPORT: &str = "session_import";
pub const CHECKPOINT: &str = "checkpoint";
pub const SEARCH: &str = "search";

/// Every tool name, in listing order.
pub const NAMES: [&str; 8] = [
    SEQUENTIAL_THINKING,
    THOUGHT,
    SESSION_START,
    SESSION_LIST,
    SESSION_EXPORT,
    SESSION_IMPORT,
    CHECKPOINT,
    SEARCH,
];

const SEQUENTIAL_DESCRIPTION: &str = "Think through a problem one numbered thought at a time, \
revising or branching as understanding grows.

Use it to break a hard problem into steps, to plan with room for correction, to analyse \
something whose scope is not clear yet, or to keep track of context over many steps.

How it works:
- Give your current thought, its number and your current estimate of how many thoughts \
you will need. The estimate may go up or down; a thought number beyond it raises it.
- To reconsider an earlier thought, set isRevision and revisesThought to its number.
- To explore an alternative, set branchFromThought to the thought you branch from and \
give the branch a branchId; keep the branchId on the branch's later thoughts.
- Set needsMoreThoughts when you reach the planned end but need to go on.
- Form a hypothesis, check it against the chain of thoughts, and repeat until satisfied.
- Set nextThoughtNeeded to false only when you are done and have a good answer.

Each thought is kept in glassbox's reasoning ledger, where a person can watch it live, \
search it and review it later.";

fn object(v: Value) -> Arc<JsonObject> {
    Arc::new(match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    })
}

/// The reference server's input properties.
fn thought_properties() -> serde_json::Map<String, Value> {
    let v = json!({
        "thought": {"type": "string", "description": "Your current thinking step"},
        "nextThoughtNeeded": {"type": "boolean", "description": "Whether another thought step is needed"},
        "thoughtNumber": {"type": "integer", "minimum": 1, "description": "Current thought number (numeric value, e.g., 1, 2, 3)"},
        "totalThoughts": {"type": "integer", "minimum": 1, "description": "Estimated total thoughts needed (numeric value, e.g., 5, 10)"},
        "isRevision": {"type": "boolean", "description": "Whether this revises previous thinking"},
        "revisesThought": {"type": "integer", "minimum": 1, "description": "Which thought is being reconsidered"},
        "branchFromThought": {"type": "integer", "minimum": 1, "description": "Branching point thought number"},
        "branchId": {"type": "string", "description": "Branch identifier"},
        "needsMoreThoughts": {"type": "boolean", "description": "If more thoughts are needed"}
    });
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

const REQUIRED: [&str; 4] = [
    "thought",
    "nextThoughtNeeded",
    "thoughtNumber",
    "totalThoughts",
];

fn output_properties() -> Value {
    json!({
        "thoughtNumber": {"type": "number"},
        "totalThoughts": {"type": "number"},
        "nextThoughtNeeded": {"type": "boolean"},
        "branches": {"type": "array", "items": {"type": "string"}},
        "thoughtHistoryLength": {"type": "number"}
    })
}

fn sequential_thinking() -> Tool {
    let input = json!({
        "type": "object",
        "properties": thought_properties(),
        "required": REQUIRED,
        "additionalProperties": false,
        "$schema": "http://json-schema.org/draft-07/schema#"
    });
    let output = json!({
        "type": "object",
        "properties": output_properties(),
        "required": ["thoughtNumber", "totalThoughts", "nextThoughtNeeded", "branches", "thoughtHistoryLength"],
        "additionalProperties": false,
        "$schema": "http://json-schema.org/draft-07/schema#"
    });
    Tool::new(SEQUENTIAL_THINKING, SEQUENTIAL_DESCRIPTION, object(input))
        .with_title("Sequential Thinking")
        .with_raw_output_schema(object(output))
        .with_annotations(
            ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        )
}

fn thought() -> Tool {
    let mut props = thought_properties();
    props.insert(
        "sessionId".into(),
        json!({"type": "string", "description": "Ledger session to add the thought to (full id or a unique prefix of at least 4 hex digits). Default: this connection's session."}),
    );
    props.insert(
        "thoughtType".into(),
        json!({"type": "string", "description": "What kind of thought this is, e.g. analysis, hypothesis, evaluation, conclusion, question, plan"}),
    );
    props.insert(
        "critique".into(),
        json!({"type": "boolean", "description": "Ask your client's model (MCP sampling) to critique this thought; the critique is stored with it"}),
    );
    let input = json!({"type": "object", "properties": props, "required": REQUIRED});
    let mut out = output_properties();
    if let Value::Object(m) = &mut out {
        m.insert("sessionId".into(), json!({"type": "string"}));
        m.insert("thoughtId".into(), json!({"type": "string"}));
        m.insert(
            "warnings".into(),
            json!({"type": "array", "items": {"type": "string"}}),
        );
        m.insert("critique".into(), json!({"type": "object"}));
    }
    let output = json!({
        "type": "object",
        "properties": out,
        "required": ["thoughtNumber", "totalThoughts", "nextThoughtNeeded", "branches", "thoughtHistoryLength", "sessionId", "thoughtId"]
    });
    Tool::new(
        THOUGHT,
        "Record one thought in glassbox's reasoning ledger. Same fields as sequentialthinking, \
         plus an optional sessionId, a thoughtType, and critique: true to have your client's \
         model critique the thought (stored as an annotation). Returns the session and thought ids.",
        object(input),
    )
    .with_title("Ledger thought")
    .with_raw_output_schema(object(output))
    .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false))
}

fn simple(
    name: &'static str,
    title: &str,
    description: &'static str,
    input: Value,
    read_only: bool,
) -> Tool {
    Tool::new(name, description, object(input))
        .with_title(title)
        .with_annotations(
            ToolAnnotations::new()
                .read_only(read_only)
                .destructive(false)
                .idempotent(read_only)
                .open_world(false),
        )
}

/// Every tool, in listing order.
pub fn all() -> Vec<Tool> {
    vec![
        sequential_thinking(),
        thought(),
        simple(
            SESSION_START,
            "Start a ledger session",
            "Start a new ledger session; the thoughts that follow on this connection go into it.",
            json!({"type": "object", "properties": {
                "title": {"type": "string", "description": "A title for the session (default: the first thought's opening words)"}
            }}),
            false,
        ),
        simple(
            SESSION_LIST,
            "List ledger sessions",
            "List sessions, most recently updated first: MCP ledger sessions, or every session with all: true.",
            json!({"type": "object", "properties": {
                "all": {"type": "boolean", "description": "Include sessions from every source, not only MCP"},
                "limit": {"type": "integer", "minimum": 1, "description": "At most this many (default 20, at most 500)"}
            }}),
            true,
        ),
        simple(
            SESSION_EXPORT,
            "Export a ledger session",
            "Export a session as glassbox JSON (format \"glassbox-session\", as `glassbox export \
             --format json` writes it): the session, its nodes, edges, decision points, runs and \
             recorded streams.",
            json!({"type": "object", "properties": {
                "sessionId": {"type": "string", "description": "Session id or unique prefix (default: this connection's session)"}
            }}),
            true,
        ),
        simple(
            SESSION_IMPORT,
            "Import a ledger session",
            "Import a session exported by session_export or `glassbox export --format json`, ids \
             and all. A session that is already in the store is replaced only with replace: true.",
            json!({"type": "object", "properties": {
                "data": {"description": "The export: a JSON object, or a string holding one", "type": ["object", "string"]},
                "replace": {"type": "boolean", "description": "Replace the session if it is already in the store (default false)"}
            }, "required": ["data"]}),
            false,
        )
        // With replace: true it overwrites a session.
        .with_annotations(
            ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(false),
        ),
        simple(
            CHECKPOINT,
            "Checkpoint a thought",
            "Give a verdict on a thought — verified, questionable or disagree — with an optional \
             correction (at most 5000 characters). Stored as a human_annotation linked supports / \
             refines / contradicts.",
            json!({"type": "object", "properties": {
                "thoughtId": {"type": "string", "description": "Node id of the thought (or a unique prefix of at least 4 hex digits)"},
                "thoughtNumber": {"type": "integer", "minimum": 1, "description": "Or: the thought's number in the session (the latest with that number)"},
                "sessionId": {"type": "string", "description": "Session for thoughtNumber (default: this connection's session)"},
                "verdict": {"type": "string", "enum": ["verified", "questionable", "disagree"]},
                "correction": {"type": "string", "maxLength": 5000, "description": "What is wrong, or the corrected reasoning"}
            }, "required": ["verdict"]}),
            false,
        ),
        simple(
            SEARCH,
            "Search the ledger",
            "Full-text search over ledger thoughts and annotations, best first (more of the words, \
             more often). Searches one session, or all of them.",
            json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "Words to find"},
                "sessionId": {"type": "string", "description": "Only this session (default: all sessions)"},
                "limit": {"type": "integer", "minimum": 1, "description": "At most this many hits (default 20, at most 200)"}
            }, "required": ["query"]}),
            true,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_listed_once_with_an_object_schema() {
        let tools = all();
        let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, NAMES.map(str::to_string).to_vec());
        for t in &tools {
            assert_eq!(
                t.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                t.name
            );
        }
        let st = &tools[0];
        assert_eq!(st.input_schema.get("required"), Some(&json!(REQUIRED)));
    }
}
