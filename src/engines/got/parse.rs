//! The search's model answers — generated thoughts, scores and merged thoughts: the types
//! whose schemas the calls send (the tool schema, the local model's grammar), and tolerant
//! readers of what a model sends back.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::call::{json_object, number};
use crate::engines::llm::ToolSpec;

// The length limits keep a small model's answer inside its structured-answer token cap.

/// The next thoughts proposed from a node (`propose_thoughts`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProposedThoughts {
    #[schemars(length(min = 1, max = 8), inner(length(min = 1, max = 400)))]
    pub thoughts: Vec<String>,
}

/// A thought's score and the reason for it (`score_thought`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ThoughtScore {
    #[schemars(range(min = 0.0, max = 1.0))]
    pub score: f64,
    #[schemars(length(max = 300))]
    pub reasoning: String,
}

/// Several thoughts merged into one (`merge_thoughts`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct MergedThought {
    #[schemars(length(min = 1, max = 400))]
    pub thought: String,
}

/// The schema of a generation answer asking for `k` thoughts.
pub(crate) fn proposed_schema(k: usize) -> ToolSpec {
    let mut tool =
        ToolSpec::of::<ProposedThoughts>("propose_thoughts", "Propose the next thoughts.");
    if let Some(list) = tool.input_schema.pointer_mut("/properties/thoughts") {
        list["maxItems"] = k.max(1).into();
    }
    tool
}

pub(crate) fn score_schema() -> ToolSpec {
    ToolSpec::of::<ThoughtScore>("score_thought", "Score the thought.")
}

pub(crate) fn merged_schema() -> ToolSpec {
    ToolSpec::of::<MergedThought>("merge_thoughts", "Write one combined thought.")
}

/// Thoughts from a generation answer: `{"thoughts": [...]}` (strings or objects with a
/// `content`/`thought`/`text`), else the answer's non-empty lines without list markers.
pub(super) fn parse_thoughts(text: &str) -> Vec<String> {
    if let Some(obj) = json_object(text)
        && let Some(Value::Array(items)) = obj.get("thoughts")
    {
        let out: Vec<String> = items
            .iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s.trim().to_string()),
                Value::Object(o) => ["content", "thought", "text"]
                    .iter()
                    .find_map(|k| o.get(*k).and_then(Value::as_str))
                    .map(|s| s.trim().to_string()),
                _ => None,
            })
            .filter(|s| !s.is_empty())
            .collect();
        if !out.is_empty() {
            return out;
        }
    }
    text.lines()
        .map(|l| {
            l.trim()
                .trim_start_matches(|c: char| {
                    c.is_ascii_digit() || matches!(c, '-' | '*' | '.' | ')' | '•')
                })
                .trim()
                .to_string()
        })
        .filter(|l| !l.is_empty() && !l.starts_with('{') && !l.starts_with("```"))
        .collect()
}

/// A score in [0, 1] and its reason; an answer without a readable score scores 0.
pub(super) fn parse_score(text: &str) -> (f64, Option<String>) {
    if let Some(obj) = json_object(text) {
        let reasoning = obj
            .get("reasoning")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(s) = number(obj.get("score")) {
            return (normalise_score(s), reasoning);
        }
    }
    let first = text
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find_map(|w| w.trim_matches('.').parse::<f64>().ok());
    (first.map_or(0.0, normalise_score), None)
}

fn normalise_score(s: f64) -> f64 {
    let s = if s > 1.0 && s <= 100.0 { s / 100.0 } else { s };
    if s.is_finite() {
        s.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// The merged thought of an aggregation answer.
pub(super) fn parse_aggregate(text: &str) -> Option<String> {
    if let Some(obj) = json_object(text) {
        return ["thought", "content", "text"]
            .iter()
            .find_map(|k| obj.get(*k).and_then(Value::as_str))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
    }
    let t = text.trim();
    (!t.is_empty()).then(|| t.to_string())
}
