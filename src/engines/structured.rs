//! A structured model answer: one Rust type whose derived schema is both the remote
//! provider's tool/format and the local model's grammar, read back leniently.

use schemars::JsonSchema;
use serde::Serialize;

use crate::engines::llm::ToolSpec;

/// One structured answer type: its tool name and how to describe it.
pub trait Artifact: JsonSchema + serde::de::DeserializeOwned + Serialize + Default {
    const TOOL: &'static str;
    const DESCRIPTION: &'static str;

    fn schema() -> ToolSpec {
        ToolSpec::of::<Self>(Self::TOOL, Self::DESCRIPTION)
    }
}

/// Reads a model's answer as `T`: the first JSON object in it, leniently (a score given as
/// a string or a float still reads). `Err` says why it could not be read.
pub fn read<T: Artifact>(raw: &str) -> Result<T, String> {
    let mut obj = crate::engines::got::json_object(raw)
        .ok_or_else(|| "the answer holds no JSON object".to_string())?;
    // Small models write 62, 62.0 or "62%"; the type wants a whole number.
    for key in ["score", "confidence"] {
        if let Some(n) = crate::engines::got::number(obj.get(key)) {
            obj.insert(
                key.into(),
                serde_json::json!(n.round().clamp(0.0, 100.0) as u32),
            );
        }
    }
    serde_json::from_value(serde_json::Value::Object(obj))
        .map_err(|e| format!("the JSON does not fit {}: {e}", T::TOOL))
}
