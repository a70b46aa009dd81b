//! The structured answers of fork calls: the tool schema or answer template of each shape,
//! and tolerant readers of what a model sends back.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::calls::CallOutput;
use super::{Comparison, Conclusion};
use crate::engines::json_extract::extract_object;
use crate::engines::llm::ToolSpec;

/// Confidence of an answer that states none (or an unreadable one): glassbox's own middle
/// value, neither trusted nor dismissed.
pub(super) const UNSTATED_CONFIDENCE: f64 = 0.5;

/// A branch's answer in a debate round (`record_debate_response`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DebateAnswer {
    #[schemars(length(min = 1, max = 600))]
    pub response: String,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
    pub position_changed: bool,
    #[serde(default)]
    #[schemars(length(max = 4), inner(length(min = 1, max = 200)))]
    pub counterpoints: Vec<String>,
    #[serde(default)]
    #[schemars(length(max = 4), inner(length(min = 1, max = 200)))]
    pub concessions: Vec<String>,
}

/// Which structured answer a call asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    Conclusion,
    Comparison,
    Debate,
}

impl Shape {
    /// The answer's structure, derived from the type it is read into: the tool a provider
    /// with tools must call, and the grammar the local model samples under.
    pub(crate) fn tool(self) -> ToolSpec {
        match self {
            Shape::Conclusion => {
                ToolSpec::of::<Conclusion>("record_conclusion", "Record the branch's conclusion.")
            }
            Shape::Comparison => ToolSpec::of::<Comparison>(
                "record_comparison",
                "Record the convergence and divergence analysis.",
            ),
            Shape::Debate => ToolSpec::of::<DebateAnswer>(
                "record_debate_response",
                "Record this branch's debate response.",
            ),
        }
    }

    /// The answer format spelled out for models without tools.
    pub(super) fn template(self) -> &'static str {
        match self {
            Shape::Conclusion => {
                r#"{"conclusion": "...", "confidence": 0.0, "keyInsights": ["..."], "risks": ["..."], "opportunities": ["..."], "assumptions": ["..."]}"#
            }
            Shape::Comparison => {
                r#"{"convergencePoints": [{"topic": "...", "agreementLevel": "full|partial|none", "styles": ["..."], "summary": "..."}], "divergencePoints": [{"topic": "...", "positions": [{"style": "...", "position": "...", "confidence": 0.0}], "significance": "high|medium|low", "recommendation": "..."}], "metaInsight": "...", "recommendedApproach": {"style": "...", "rationale": "...", "confidence": 0.0}}"#
            }
            Shape::Debate => {
                r#"{"response": "...", "confidence": 0.0, "positionChanged": false, "counterpoints": ["..."], "concessions": ["..."]}"#
            }
        }
    }
}

/// The tool input (an object, or a string holding one), else the first object in the text.
pub(super) fn read_object(out: &CallOutput) -> Result<Map<String, Value>, String> {
    match &out.tool_input {
        Some(Value::Object(m)) => return Ok(m.clone()),
        Some(Value::String(s)) => {
            if let Ok(m) = extract_object(s) {
                return Ok(m);
            }
        }
        _ => {}
    }
    extract_object(&out.text).map_err(|e| e.to_string())
}

pub(super) fn field<'a>(m: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names
        .iter()
        .find_map(|n| m.get(*n))
        .filter(|v| !v.is_null())
}

pub(super) fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A confidence in [0, 1]; percentages and numeric strings are accepted.
pub(super) fn confidence_of(v: Option<&Value>) -> Option<f64> {
    let x = match v? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().trim_end_matches('%').trim().parse().ok()?,
        _ => return None,
    };
    let x = if x > 1.0 && x <= 100.0 { x / 100.0 } else { x };
    Some(x.clamp(0.0, 1.0))
}

pub(super) fn list_of(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| text_of(Some(i)))
            // Small models copy the answer template's placeholders verbatim.
            .filter(|s| !s.is_empty() && s != "..." && s != "…")
            .collect(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_string()],
        _ => Vec::new(),
    }
}

pub(super) fn bool_of(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "yes"),
        _ => false,
    }
}

pub(super) fn parse_conclusion(m: &Map<String, Value>) -> Result<Conclusion, String> {
    let conclusion = text_of(field(m, &["conclusion", "answer", "position"]));
    if conclusion.is_empty() {
        return Err("the model's answer has no conclusion".into());
    }
    Ok(Conclusion {
        conclusion,
        confidence: confidence_of(field(m, &["confidence"])).unwrap_or(UNSTATED_CONFIDENCE),
        key_insights: list_of(field(m, &["keyInsights", "key_insights", "insights"])),
        risks: list_of(field(m, &["risks"])),
        opportunities: list_of(field(m, &["opportunities"])),
        assumptions: list_of(field(m, &["assumptions"])),
    })
}
