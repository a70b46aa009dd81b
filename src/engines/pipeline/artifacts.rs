//! The structured answers of the pipeline's layers (seed 003 §12 "Structured Artifacts"),
//! one Rust type each. The same type gives the remote providers their schema and the local
//! model its grammar, and is what the engine reads the answer into. Every field has a
//! default, so an answer missing a field still reads; the limits keep a small model's answer
//! inside the structured-answer token cap.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[cfg(all(test, feature = "local"))]
use crate::engines::llm::ToolSpec;
pub use crate::engines::structured::{Artifact, read};

/// Three-level rating (seed 003 `Severity`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Low,
    #[default]
    Medium,
    High,
}

/// The mode the cortex recommends (seed 003 `ReasoningMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Recommended {
    Instant,
    #[default]
    Deep,
    UltraDeep,
}

/// The question's domain (seed 003 `Domain`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    Math,
    Coding,
    Strategy,
    Philosophy,
    Prediction,
    Creative,
    Social,
    Science,
    #[default]
    General,
}

impl Domain {
    /// Seed 003 §5.6: domains that never search (mathematics, logic, philosophy, creative
    /// writing, coding, abstract reasoning, in the cortex's terms).
    pub fn searches(self) -> bool {
        !matches!(
            self,
            Domain::Math | Domain::Philosophy | Domain::Creative | Domain::Coding
        )
    }
}

/// Kinds of reasoning a question calls for (seed 003 `ReasoningType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningType {
    Symbolic,
    Probabilistic,
    Causal,
    Strategic,
    Temporal,
    Creative,
    Social,
    Abductive,
    Optimization,
    Meta,
}

/// The cortex's classification (seed 003 §5.1, `IntentMetadata`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Classification {
    pub domain: Domain,
    #[schemars(length(max = 3))]
    pub reasoning_modes: Vec<ReasoningType>,
    pub complexity: Level,
    pub stakes: Level,
    pub uncertainty: Level,
    pub recommended_mode: Recommended,
    pub parallelism_needed: bool,
    pub needs_web_search: bool,
    #[schemars(length(max = 2))]
    pub search_queries: Vec<Short>,
}

/// A short piece of text in an artifact list.
pub type Short = String;

/// The decomposition's map of the problem (seed 003 `ProblemMap`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ProblemMap {
    #[schemars(length(max = 5))]
    pub facts: Vec<Short>,
    #[schemars(length(max = 300))]
    pub intent: String,
    #[schemars(length(max = 5))]
    pub constraints: Vec<Short>,
    #[schemars(length(max = 5))]
    pub unknowns: Vec<Short>,
    #[schemars(length(max = 120))]
    pub output_type: String,
}

/// The fast critic's attack on the primary solution (seed 003 `CriticReport`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CriticReport {
    /// Logical gaps in the solution.
    #[schemars(length(max = 4))]
    pub issues: Vec<Short>,
    /// Assumptions the solution leans on without support.
    #[schemars(length(max = 4))]
    pub confidence_flags: Vec<Short>,
    /// Angles the solution did not consider; any of them escalates a deep run.
    #[schemars(length(max = 4))]
    pub missing_angles: Vec<Short>,
}

/// A confidence gate's verdict (seed 003 `ConfidenceResult`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ConfidenceResult {
    #[serde(alias = "confidence")]
    #[schemars(range(min = 0, max = 100))]
    pub score: u32,
    #[schemars(length(max = 4))]
    pub assumptions: Vec<Short>,
    #[schemars(length(max = 4))]
    pub uncertainty_notes: Vec<Short>,
}

/// The skeptic's attack on the three solutions (seed 003 `SkepticReport`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SkepticReport {
    #[schemars(length(max = 4))]
    pub contradictions: Vec<Short>,
    #[schemars(length(max = 4))]
    pub weak_points: Vec<Short>,
    #[schemars(length(max = 4))]
    pub unresolved_questions: Vec<Short>,
}

/// The verifier's check of logical validity (seed 003 `VerificationReport`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct VerificationReport {
    pub logical_flow_valid: bool,
    #[schemars(length(max = 4))]
    pub assumption_issues: Vec<Short>,
    #[schemars(length(max = 4))]
    pub consistency_issues: Vec<Short>,
    pub overall_validity: Level,
}

/// The meta-critic's final quality check (seed 003 `MetaCriticReport`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct MetaCriticReport {
    pub fully_answers_user: bool,
    /// What the synthesis misses; any of them triggers the re-synthesis.
    #[schemars(length(max = 4))]
    pub missing_elements: Vec<Short>,
    #[schemars(length(max = 300))]
    pub quality_assessment: String,
}

impl Artifact for Classification {
    const TOOL: &'static str = "classify_query";
    const DESCRIPTION: &'static str = "Record the query's classification.";
}
impl Artifact for ProblemMap {
    const TOOL: &'static str = "record_problem_map";
    const DESCRIPTION: &'static str = "Record the problem's decomposition.";
}
impl Artifact for CriticReport {
    const TOOL: &'static str = "record_critique";
    const DESCRIPTION: &'static str = "Record the critique of the solution.";
}
impl Artifact for ConfidenceResult {
    const TOOL: &'static str = "record_confidence";
    const DESCRIPTION: &'static str = "Record the confidence in the answer.";
}
impl Artifact for SkepticReport {
    const TOOL: &'static str = "record_skepticism";
    const DESCRIPTION: &'static str = "Record the attack on the solutions.";
}
impl Artifact for VerificationReport {
    const TOOL: &'static str = "record_verification";
    const DESCRIPTION: &'static str = "Record the logical verification.";
}
impl Artifact for MetaCriticReport {
    const TOOL: &'static str = "record_meta_critique";
    const DESCRIPTION: &'static str = "Record the final quality check.";
}

/// Every artifact schema, for the grammar test.
#[cfg(all(test, feature = "local"))]
pub(crate) fn all_schemas() -> Vec<ToolSpec> {
    vec![
        Classification::schema(),
        ProblemMap::schema(),
        CriticReport::schema(),
        ConfidenceResult::schema(),
        SkepticReport::schema(),
        VerificationReport::schema(),
        MetaCriticReport::schema(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_reading_takes_scores_as_strings_and_missing_fields_as_defaults() {
        let c: ConfidenceResult = read("Sure: {\"score\": \"62%\"} done").unwrap_or_default();
        assert_eq!(c.score, 62);
        assert!(c.assumptions.is_empty());
        let c: ConfidenceResult = read("{\"score\": 71.6, \"assumptions\": [\"a\"]}").unwrap();
        assert_eq!((c.score, c.assumptions.len()), (72, 1));
        assert!(read::<ProblemMap>("no json here").is_err());
        assert!(read::<CriticReport>("{\"issues\": 3}").is_err());
    }

    #[test]
    fn schemas_carry_their_limits_and_enums() {
        let s = Classification::schema().input_schema.to_string();
        assert!(
            s.contains("ultra_deep") && s.contains("needs_web_search"),
            "{s}"
        );
        let s = ConfidenceResult::schema().input_schema.to_string();
        assert!(s.contains("\"maximum\":100"), "{s}");
    }
}
