//! Process reward model: judges a reasoning chain step by step, scores the chain, finds
//! patterns across steps, and exports step labels (PRM800K, ProcessBench).
//!
//! This file holds the types and parameters; `scoring` is the pure chain arithmetic and
//! answer reading, `verifier` runs and stores a verification, `labels` exports them.

mod labels;
mod scoring;
#[cfg(test)]
mod tests;
mod verifier;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::engines::got::CallSettings;
use crate::engines::llm::{Effort, LlmError, Provider, ToolSpec};
use crate::store::{NodeId, RunId, SessionId, Store, StoreError};

pub use labels::{prm800k, processbench};
pub use scoring::{chain_score, detect_patterns, first_error, parse_step};
pub use verifier::node_steps;

/// The judgement on one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Correct,
    Incorrect,
    Neutral,
    Uncertain,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Correct => "correct",
            Verdict::Incorrect => "incorrect",
            Verdict::Neutral => "neutral",
            Verdict::Uncertain => "uncertain",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "correct" => Some(Verdict::Correct),
            "incorrect" | "wrong" => Some(Verdict::Incorrect),
            "neutral" => Some(Verdict::Neutral),
            "uncertain" => Some(Verdict::Uncertain),
            _ => None,
        }
    }

    /// PRM800K rating: correct 1, incorrect −1, otherwise 0.
    pub fn rating(self) -> i64 {
        match self {
            Verdict::Correct => 1,
            Verdict::Incorrect => -1,
            Verdict::Neutral | Verdict::Uncertain => 0,
        }
    }
}

/// What is wrong with a step.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum IssueKind {
    LogicalError,
    FactualError,
    MissingContext,
    UnsupportedClaim,
    CircularReasoning,
    NonSequitur,
    Overgeneralization,
    FalseDichotomy,
}

impl IssueKind {
    pub const ALL: [IssueKind; 8] = [
        IssueKind::LogicalError,
        IssueKind::FactualError,
        IssueKind::MissingContext,
        IssueKind::UnsupportedClaim,
        IssueKind::CircularReasoning,
        IssueKind::NonSequitur,
        IssueKind::Overgeneralization,
        IssueKind::FalseDichotomy,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            IssueKind::LogicalError => "logical_error",
            IssueKind::FactualError => "factual_error",
            IssueKind::MissingContext => "missing_context",
            IssueKind::UnsupportedClaim => "unsupported_claim",
            IssueKind::CircularReasoning => "circular_reasoning",
            IssueKind::NonSequitur => "non_sequitur",
            IssueKind::Overgeneralization => "overgeneralization",
            IssueKind::FalseDichotomy => "false_dichotomy",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        let s = s.trim().to_ascii_lowercase().replace([' ', '-'], "_");
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// How bad an issue is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Critical,
    Major,
    Minor,
}

/// One problem found in a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Issue {
    #[serde(rename = "type")]
    pub kind: IssueKind,
    #[schemars(length(max = 200))]
    pub description: String,
    pub severity: Severity,
}

/// A step to verify (the `--steps-file` entries).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepInput {
    pub content: String,
    /// analysis, hypothesis, evaluation, conclusion or consideration.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// The verification of one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepVerification {
    pub step_index: usize,
    pub verdict: Verdict,
    pub confidence: f64,
    pub explanation: String,
    pub issues: Vec<Issue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_correction: Option<String>,
    /// Why the verifier's answer on this step could not be read. Such a step carries no
    /// verdict (it is `uncertain` with confidence 0 only as a placeholder) and the chain it
    /// belongs to is not valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

/// The verifier's structured answer on one step (`record_step_verdict`): the schema sent to
/// the provider and the local model's grammar.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepJudgement {
    pub verdict: Verdict,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
    #[schemars(length(max = 300))]
    pub explanation: String,
    #[schemars(length(max = 3))]
    pub issues: Vec<Issue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 300))]
    pub suggested_correction: Option<String>,
}

impl StepJudgement {
    pub fn schema() -> ToolSpec {
        ToolSpec::of::<Self>("record_step_verdict", "Record the verdict on the step.")
    }
}

/// A pattern across steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pattern {
    pub name: String,
    pub description: String,
    pub affected_steps: Vec<usize>,
}

/// How the verification ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyMetadata {
    pub verification_model: String,
    pub duration_ms: u64,
    pub verified_at: DateTime<Utc>,
}

/// A verified chain (`data` of the `/api/verify` response).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainVerification {
    pub overall_score: f64,
    pub is_valid: bool,
    /// Index of the first incorrect step; −1 when none is.
    pub first_error_at: i64,
    pub summary: String,
    pub steps: Vec<StepVerification>,
    pub patterns: Vec<Pattern>,
    pub metadata: VerifyMetadata,
}

/// `[verify]`: step verification (PRM) chain scoring and pattern thresholds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyParams {
    /// A chain is valid when its score reaches this (seed 000 PRM: correctnessThreshold 0.7).
    pub correctness_threshold: f64,
    /// An incorrect step multiplies by `(1 − confidence) ·` this (seed 000 PRM: 0.3).
    pub incorrect_factor: f64,
    /// Seed 000 PRM: a neutral step multiplies by 0.9.
    pub neutral_factor: f64,
    /// Seed 000 PRM: an uncertain step multiplies by 0.7.
    pub uncertain_factor: f64,
    /// `declining_confidence` needs a fall larger than this (seed 000 PRM: spread > 0.2).
    pub declining_spread: f64,
    /// …over at least this many steps.
    pub declining_min_steps: usize,
    /// `recurring_{issue}`: the same issue in at least this many steps (seed 000 PRM: 2+).
    pub recurring_min_steps: usize,
    /// `overconfidence_before_error`: a correct step at least this confident, then an
    /// incorrect one.
    pub high_confidence: f64,
    /// Most steps one verification accepts (seed 000 /api/verify: 1–50 steps).
    pub max_steps: usize,
    /// Seed 000 /api/verify: effort `high`.
    pub effort: Effort,
    /// Answer-token cap of each step's call.
    pub max_tokens: u32,
}

impl Default for VerifyParams {
    fn default() -> Self {
        Self {
            correctness_threshold: 0.7,
            incorrect_factor: 0.3,
            neutral_factor: 0.9,
            uncertain_factor: 0.7,
            declining_spread: 0.2,
            declining_min_steps: 3,
            recurring_min_steps: 2,
            high_confidence: 0.8,
            max_steps: 50,
            effort: Effort::High,
            max_tokens: 1024,
        }
    }
}

/// Failures of a verification.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("no steps to verify")]
    NoSteps,
    #[error("{0} steps is more than the {1} one verification accepts")]
    TooManySteps(usize, usize),
    #[error("threshold {0} is outside 0–1")]
    Threshold(f64),
    #[error("node {0} has no ThinkGraph steps")]
    NoNodeSteps(NodeId),
    #[error("node {0} not found")]
    NoNode(NodeId),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("model call failed: {0}")]
    Model(#[from] LlmError),
}

/// One chain to verify.
#[derive(Clone, Debug, Default)]
pub struct VerifyRequest {
    pub steps: Vec<StepInput>,
    /// The node the steps came from; the step nodes link to it.
    pub source: Option<NodeId>,
    pub original_query: Option<String>,
    /// Defaults to `[verify] correctness_threshold`.
    pub threshold: Option<f64>,
    /// Store in this session (the source node's, else a new one).
    pub session: Option<SessionId>,
}

/// A stored verification.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyOutcome {
    pub chain: ChainVerification,
    pub session: SessionId,
    pub run: RunId,
    /// The `verify_step` nodes, one per step.
    pub nodes: Vec<NodeId>,
}

/// Verifies chains with one provider and stores the results.
pub struct Verifier {
    pub store: Store,
    pub provider: Arc<dyn Provider>,
    pub call: CallSettings,
    /// The `verify/step` prompt.
    pub prompt: String,
    pub config: VerifyParams,
}
