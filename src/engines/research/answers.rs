//! The structured answers of the thinker and the auditor, one Rust type each: the same type
//! gives the remote providers their schema and the local model its grammar. Limits keep a
//! small model's answer inside the stage's token cap.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::state::{Tool, Verdict};
use crate::engines::llm::ToolSpec;
use crate::engines::structured::Artifact;

/// One step the thinker proposes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct StepDraft {
    pub tool: Tool,
    #[schemars(length(max = 200))]
    pub input: String,
    #[schemars(length(max = 200))]
    pub rationale: String,
}

/// The thinker's plan (seed 001 `ResearchPlan` without the ids the engine assigns).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct PlanDraft {
    #[schemars(length(max = 300))]
    pub objective: String,
    #[schemars(length(min = 1, max = 6))]
    pub steps: Vec<StepDraft>,
    #[schemars(range(min = 0, max = 1_000_000))]
    pub estimated_token_budget: u64,
}

/// One violation as the auditor writes it: the policy rule quoted word for word.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ViolationDraft {
    #[schemars(length(max = 300))]
    pub rule: String,
    #[schemars(length(max = 300))]
    pub problem: String,
}

/// The auditor's answer (seed 001 `AuditResult`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct AuditAnswer {
    pub verdict: Verdict,
    #[schemars(length(max = 4))]
    pub policy_violations: Vec<ViolationDraft>,
    #[schemars(length(max = 4))]
    pub suggestions: Vec<Short>,
}

/// A short piece of advice.
pub type Short = String;

impl Artifact for PlanDraft {
    const TOOL: &'static str = "record_research_plan";
    const DESCRIPTION: &'static str = "Record the research plan.";
}

impl Artifact for AuditAnswer {
    const TOOL: &'static str = "record_plan_audit";
    const DESCRIPTION: &'static str = "Record the audit of the research plan.";
}

/// The plan's schema with only `tools` allowed as a step's tool: the network tools are left
/// out when the network is off, so a constrained model cannot pick them.
pub fn plan_schema(tools: &[Tool]) -> ToolSpec {
    let mut spec = PlanDraft::schema();
    let names: Vec<serde_json::Value> = tools.iter().map(|t| t.as_str().into()).collect();
    restrict_enum(&mut spec.input_schema, &names);
    spec
}

/// Keeps only `names` wherever the schema lists the tools: a plain `enum`, or the `oneOf` of
/// `const`s schemars writes for an enum whose variants carry doc comments.
fn restrict_enum(v: &mut serde_json::Value, names: &[serde_json::Value]) {
    use serde_json::Value;
    let lists_tools = |items: &[Value], key: &str| {
        items.iter().any(|x| {
            let name = if key == "enum" {
                Some(x)
            } else {
                x.get("const")
            };
            name.and_then(Value::as_str) == Some(Tool::KnowledgeSearch.as_str())
        })
    };
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(items)) = m.get_mut("enum")
                && lists_tools(items, "enum")
            {
                *items = names.to_vec();
            }
            if let Some(Value::Array(items)) = m.get_mut("oneOf")
                && lists_tools(items, "oneOf")
            {
                items.retain(|x| x.get("const").is_some_and(|c| names.contains(c)));
            }
            for child in m.values_mut() {
                restrict_enum(child, names);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|c| restrict_enum(c, names)),
        _ => {}
    }
}

/// Every research schema, for the grammar test.
#[cfg(all(test, feature = "local"))]
pub(crate) fn all_schemas() -> Vec<ToolSpec> {
    vec![
        plan_schema(&Tool::ALL),
        plan_schema(&[Tool::KnowledgeSearch, Tool::SessionSearch]),
        AuditAnswer::schema(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::structured::read;

    #[test]
    fn the_plan_schema_lists_only_the_allowed_tools() {
        let all = plan_schema(&Tool::ALL).input_schema.to_string();
        assert!(
            all.contains("web_search") && all.contains("fetch_url"),
            "{all}"
        );
        let offline = plan_schema(&[
            Tool::KnowledgeSearch,
            Tool::SessionSearch,
            Tool::MemorySearch,
        ])
        .input_schema
        .to_string();
        assert!(!offline.contains("web_search") && !offline.contains("fetch_url"));
        assert!(offline.contains("knowledge_search") && offline.contains("estimatedTokenBudget"));
    }

    #[test]
    fn answers_read_leniently() {
        let p: PlanDraft = read(
            "Plan: {\"objective\":\"o\",\"steps\":[{\"tool\":\"session_search\",\"input\":\"x\"}]}",
        )
        .unwrap();
        assert_eq!(p.steps[0].tool, Tool::SessionSearch);
        assert_eq!(p.estimated_token_budget, 0);
        let a: AuditAnswer = read("{\"verdict\":\"rejected\",\"suggestions\":[\"s\"]}").unwrap();
        assert_eq!(a.verdict, Verdict::Rejected);
        assert!(read::<PlanDraft>("{\"steps\":[{\"tool\":\"shell\"}]}").is_err());
    }
}
