//! ThinkFork: one question reasoned in several styles at once, compared, debated, steered
//! (expand / merge / challenge / refork), and human checkpoints with verdict propagation.
//! Progress goes out as typed [`ForkEvent`]s; every result is persisted as nodes, edges and a run.
//!
//! This file holds the types, the parameters and the engine; the work is split by concern:
//! `branches` (a fork and its branches), `comparison`, `debate`, `steer`, `checkpoint`
//! (human verdicts), `calls` (streaming model calls) and `json` (the structured answers).

mod branches;
mod calls;
mod checkpoint;
mod comparison;
mod debate;
mod json;
mod steer;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::llm::{Effort, Provider, ThinkingMode, TurnPlan};
use crate::engines::prompts::Prompts;
use crate::store::{EdgeType, NodeId, RunId, SessionId, Store, StoreError};

pub use checkpoint::{downstream_of, record_verdict};
pub use json::DebateAnswer;
#[cfg(all(test, feature = "local"))]
pub(crate) use json::Shape;
pub use steer::{ForkRecord, load_fork_record};

/// Seed 000 ThinkFork (Flow 3, `POST /api/fork { debate: true, rounds: 3 }`): a debate runs
/// three rounds unless told otherwise.
const DEBATE_ROUNDS: u32 = 3;
/// Seed 000 ThinkFork, debate step 3: consensus needs every branch stable and above 0.7
/// confidence.
const CONSENSUS_THRESHOLD: f64 = 0.7;
/// Seed 000 `POST /api/fork`: a branch's human guidance is at most 2,000 chars.
const GUIDANCE_MAX_CHARS: usize = 2000;
/// Seed 000 `POST /api/reasoning/:id/checkpoint`: a correction is at most 5,000 chars.
const CORRECTION_MAX_CHARS: usize = 5000;
/// A comparison needs two branches (seed 000 Flow 3: "if 2+ branches succeeded"), so a
/// fork asks for at least two.
const MIN_BRANCHES: usize = 2;
/// glassbox's own cap on branches per fork (there are four styles, each at most once).
const MAX_BRANCHES: usize = 6;
/// glassbox's own cap on debate rounds, to bound the calls one request can make.
const MAX_DEBATE_ROUNDS: u32 = 10;
/// Answer tokens of each call when the caller sets no plan (the `[generation] max_tokens`
/// default).
const ANSWER_TOKENS: u32 = 1024;
/// Seed 000 Flow 7: the confidence a checkpoint's annotation carries for each verdict.
const VERIFIED_CONFIDENCE: f64 = 1.0;
const QUESTIONABLE_CONFIDENCE: f64 = 0.5;
const DISAGREE_CONFIDENCE: f64 = 0.0;

/// Failures of a fork, debate, steer or checkpoint as a whole (single branches fail alone).
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Invalid(String),
    #[error("{0} not found")]
    NotFound(String),
    #[error("cancelled")]
    Cancelled,
    #[error("the model call failed: {0}")]
    Model(String),
}

/// A reasoning style of a branch.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ForkStyle {
    Conservative,
    Aggressive,
    Balanced,
    Contrarian,
}

impl ForkStyle {
    pub const ALL: [ForkStyle; 4] = [
        ForkStyle::Conservative,
        ForkStyle::Aggressive,
        ForkStyle::Balanced,
        ForkStyle::Contrarian,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ForkStyle::Conservative => "conservative",
            ForkStyle::Aggressive => "aggressive",
            ForkStyle::Balanced => "balanced",
            ForkStyle::Contrarian => "contrarian",
        }
    }
}

impl fmt::Display for ForkStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ForkStyle {
    type Err = ForkError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        ForkStyle::ALL
            .into_iter()
            .find(|st| st.as_str() == t)
            .ok_or_else(|| {
                ForkError::Invalid(format!(
                    "unknown style '{s}' (conservative, aggressive, balanced, contrarian)"
                ))
            })
    }
}

/// A human's verdict on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Verified,
    Questionable,
    Disagree,
}

impl Verdict {
    /// Every verdict, from agreement to disagreement.
    pub const ALL: [Verdict; 3] = [Verdict::Verified, Verdict::Questionable, Verdict::Disagree];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Verified => "verified",
            Verdict::Questionable => "questionable",
            Verdict::Disagree => "disagree",
        }
    }

    /// The edge from the annotation to the judged node.
    pub fn edge(self) -> EdgeType {
        match self {
            Verdict::Verified => EdgeType::Supports,
            Verdict::Questionable => EdgeType::Refines,
            Verdict::Disagree => EdgeType::Contradicts,
        }
    }

    /// Confidence of the annotation node (seed 000 Flow 7, human checkpoint: 1.0
    /// verified, 0.5 questionable, 0.0 disagree).
    fn confidence(self) -> f64 {
        match self {
            Verdict::Verified => VERIFIED_CONFIDENCE,
            Verdict::Questionable => QUESTIONABLE_CONFIDENCE,
            Verdict::Disagree => DISAGREE_CONFIDENCE,
        }
    }
}

/// Human guidance for one style's branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guidance {
    pub style: ForkStyle,
    pub guidance: String,
}

/// What a branch concluded (also the shape of a merge or consensus synthesis). Its schema
/// is the branch's structured answer (`record_conclusion`); the limits keep a small model's
/// answer short enough to end within the structured-answer token cap.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Conclusion {
    #[schemars(length(min = 1, max = 600))]
    pub conclusion: String,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
    #[serde(default)]
    #[schemars(length(max = 4), inner(length(min = 1, max = 200)))]
    pub key_insights: Vec<String>,
    #[serde(default)]
    #[schemars(length(max = 4), inner(length(min = 1, max = 200)))]
    pub risks: Vec<String>,
    #[serde(default)]
    #[schemars(length(max = 4), inner(length(min = 1, max = 200)))]
    pub opportunities: Vec<String>,
    #[serde(default)]
    #[schemars(length(max = 4), inner(length(min = 1, max = 200)))]
    pub assumptions: Vec<String>,
}

/// One branch's outcome; a failed branch has confidence 0 and its error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchResult {
    pub style: ForkStyle,
    #[serde(flatten)]
    pub body: Conclusion,
    pub output_tokens_used: u64,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The stored `fork_branch` node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<NodeId>,
}

impl BranchResult {
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}

/// How much branches agree on a topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Agreement {
    Full,
    Partial,
    None,
}

/// How much a divergence matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Significance {
    High,
    Medium,
    Low,
}

/// A topic the branches agree on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConvergencePoint {
    #[schemars(length(min = 1, max = 100))]
    pub topic: String,
    pub agreement_level: Agreement,
    #[schemars(length(max = 4))]
    pub styles: Vec<ForkStyle>,
    #[schemars(length(max = 300))]
    pub summary: String,
}

/// One style's position on a divergent topic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Position {
    pub style: ForkStyle,
    #[schemars(length(max = 300))]
    pub position: String,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
}

/// A topic the branches disagree on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DivergencePoint {
    #[schemars(length(min = 1, max = 100))]
    pub topic: String,
    #[schemars(length(max = 4))]
    pub positions: Vec<Position>,
    pub significance: Significance,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 300))]
    pub recommendation: Option<String>,
}

/// The approach the comparison recommends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RecommendedApproach {
    pub style: ForkStyle,
    #[schemars(length(max = 300))]
    pub rationale: String,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
}

/// Convergence / divergence analysis over the successful branches. Its schema (without
/// `comparisonError`) is the comparison call's structured answer (`record_comparison`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    #[schemars(length(max = 4))]
    pub convergence_points: Vec<ConvergencePoint>,
    #[schemars(length(max = 4))]
    pub divergence_points: Vec<DivergencePoint>,
    #[schemars(length(max = 400))]
    pub meta_insight: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommended_approach: Option<RecommendedApproach>,
    /// Why there is no comparison (fewer than two branches, or unreadable model output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub comparison_error: Option<String>,
}

/// The `data` of the `/api/fork` contract.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkResult {
    pub branches: Vec<BranchResult>,
    #[serde(flatten)]
    pub comparison: Comparison,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied_guidance: Vec<Guidance>,
}

/// One branch's answer in one debate round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DebateEntry {
    pub style: ForkStyle,
    pub round: u32,
    pub response: String,
    pub confidence: f64,
    pub position_changed: bool,
    pub counterpoints: Vec<String>,
    pub concessions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<NodeId>,
}

/// One debate round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DebateRound {
    pub round: u32,
    pub entries: Vec<DebateEntry>,
}

/// A debate's result (seed `DebateResult`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DebateResult {
    pub initial_fork: ForkResult,
    pub rounds: Vec<DebateRound>,
    pub final_positions: Vec<Position>,
    pub consensus_reached: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consensus: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consensus_confidence: Option<f64>,
    /// The stored `synthesis` node of the consensus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consensus_node_id: Option<NodeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consensus_error: Option<String>,
    pub total_rounds: u32,
    pub total_tokens_used: u64,
}

/// A steering action on a finished fork.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum SteerAction {
    /// Deeper analysis of one branch at max effort.
    Expand {
        style: ForkStyle,
        direction: Option<String>,
    },
    /// Two or more branches synthesised into one approach.
    Merge {
        styles: Vec<ForkStyle>,
        #[serde(rename = "focusArea")]
        focus_area: Option<String>,
    },
    /// A branch against a human counter-argument.
    Challenge { style: ForkStyle, challenge: String },
    /// Every branch again with new context.
    Refork {
        #[serde(rename = "newContext")]
        new_context: String,
    },
}

/// What a steering action produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum SteerResult {
    Expand {
        branch: BranchResult,
    },
    Merge {
        styles: Vec<ForkStyle>,
        /// The claims with their provenance (the same merge as `glassbox merge`).
        merged: crate::engines::diff::Merged,
        #[serde(rename = "nodeId")]
        node_id: NodeId,
    },
    Challenge {
        challenge: String,
        branch: BranchResult,
    },
    Refork {
        #[serde(rename = "newContext")]
        new_context: String,
        result: ForkResult,
    },
}

/// The stored annotation of a checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotation {
    pub id: NodeId,
    pub verdict: Verdict,
    pub correction: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// The branch reasoned again from a human correction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlternativeBranch {
    pub node_id: NodeId,
    pub reasoning: String,
    pub confidence: f64,
}

/// The `data` of the checkpoint contract, plus which nodes the verdict marked or cleared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointResult {
    pub session_id: SessionId,
    pub annotation: Annotation,
    pub alternative_branch: Option<AlternativeBranch>,
    pub disputed_nodes: Vec<NodeId>,
    pub cleared_nodes: Vec<NodeId>,
}

/// Where a fork's output streams to, for a view with one column per branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    Branch(ForkStyle),
    Comparison,
    Synthesis,
    Correction,
}

/// Progress of a fork engine call, in the order things happen.
#[derive(Clone, Debug, PartialEq)]
pub enum ForkEvent {
    Started {
        session: SessionId,
        run: RunId,
        anchor: NodeId,
    },
    /// A model call of this lane started.
    LaneStarted {
        lane: Lane,
        round: u32,
    },
    /// Streamed model output; `thinking` for the thinking channel.
    Delta {
        lane: Lane,
        text: String,
        thinking: bool,
    },
    /// The lane's answer was not readable JSON; asking once more with the repair prompt.
    Repairing {
        lane: Lane,
    },
    /// A branch finished (successfully or not).
    BranchDone(BranchResult),
    ComparisonDone(Comparison),
    DebateEntryDone(DebateEntry),
    /// The debate ended; `consensus` when a synthesis was made.
    DebateDone {
        consensus_reached: bool,
        consensus: Option<String>,
    },
}

/// `[fork]`: ThinkFork's branch effort and debate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkParams {
    /// Effort of each branch's call (ignored by the embedded model, which answers directly).
    pub effort: Effort,
    /// Rounds of a debate when none are given (seed 000 ThinkFork: rounds 3).
    pub debate_rounds: u32,
    /// Consensus: every branch held its position in the last round at least this confident
    /// (seed 000 ThinkFork: consensus 0.7).
    pub consensus_threshold: f64,
}

impl Default for ForkParams {
    fn default() -> Self {
        Self {
            effort: Effort::Medium,
            debate_rounds: DEBATE_ROUNDS,
            consensus_threshold: CONSENSUS_THRESHOLD,
        }
    }
}

/// Model-call settings of the engine.
#[derive(Clone, Debug)]
pub struct ForkSettings {
    pub model: String,
    /// Ask for structured output with a forced tool call (else JSON in the text).
    pub use_tools: bool,
    /// Thinking settings of ordinary calls.
    pub plan: TurnPlan,
    /// Thinking settings of `expand` (max effort).
    pub max_plan: TurnPlan,
    /// Thinking settings of a checkpoint's alternative branch (medium effort).
    pub correction_plan: TurnPlan,
    pub temperature: Option<f32>,
    pub seed: Option<u64>,
    pub debate_rounds: u32,
    pub consensus_threshold: f64,
    pub guidance_max_chars: usize,
    pub correction_max_chars: usize,
    pub min_branches: usize,
    pub max_branches: usize,
    /// What a checkpoint does to the learnings its turn used (`[memory.learn]`).
    pub memory_feedback: crate::engines::memory::LearnParams,
    /// How `steer --merge` merges (`[diff]`: the merge call, step length, claims).
    pub diff: crate::engines::diff::DiffParams,
}

impl ForkSettings {
    /// Seed defaults: the debate of [`ForkParams::default`], guidance ≤ 2,000 and
    /// corrections ≤ 5,000 chars, 2–6 branches; thinking off.
    pub fn new(model: impl Into<String>) -> Self {
        let params = ForkParams::default();
        let plan = TurnPlan {
            thinking: ThinkingMode::Off,
            effort: None,
            max_tokens: ANSWER_TOKENS,
        };
        Self {
            model: model.into(),
            use_tools: false,
            plan,
            max_plan: plan,
            correction_plan: plan,
            temperature: None,
            seed: None,
            debate_rounds: params.debate_rounds,
            consensus_threshold: params.consensus_threshold,
            guidance_max_chars: GUIDANCE_MAX_CHARS,
            correction_max_chars: CORRECTION_MAX_CHARS,
            min_branches: MIN_BRANCHES,
            max_branches: MAX_BRANCHES,
            memory_feedback: Default::default(),
            diff: Default::default(),
        }
    }
}

/// The prompts the engine uses (`thinkfork/*`).
#[derive(Clone, Debug)]
pub struct ForkPrompts {
    by_name: BTreeMap<String, String>,
}

impl ForkPrompts {
    /// Takes the `thinkfork/…` prompts of a loaded prompt set.
    pub fn from_prompts(p: &Prompts) -> Self {
        let by_name = p
            .names()
            .filter_map(|n| n.strip_prefix("thinkfork/"))
            .map(|n| (n.to_string(), p.get(&format!("thinkfork/{n}")).to_string()))
            .chain([(CLAIMS_MERGE.to_string(), p.get("diff/merge").to_string())])
            .collect();
        Self { by_name }
    }

    fn get(&self, name: &str) -> &str {
        self.by_name.get(name).map(String::as_str).unwrap_or("")
    }
}

/// The name under which [`ForkPrompts`] keeps the merge-with-provenance prompt.
const CLAIMS_MERGE: &str = "claims_merge";

/// What a fork starts from.
#[derive(Clone, Debug)]
pub struct ForkRequest {
    /// Put the fork in this session (a new one when `None`).
    pub session: Option<SessionId>,
    pub query: String,
    pub styles: Vec<ForkStyle>,
    pub guidance: Vec<Guidance>,
}

/// A finished fork or debate with the ids of what it stored.
#[derive(Clone, Debug)]
pub struct Outcome<T> {
    pub session: SessionId,
    pub run: RunId,
    /// Every node this call created.
    pub nodes: Vec<NodeId>,
    pub data: T,
}

/// Where branches hang in the graph and what extra text they get.
#[derive(Clone, Debug)]
struct Spec {
    session: SessionId,
    query: String,
    anchor: NodeId,
    styles: Vec<ForkStyle>,
    guidance: Vec<Guidance>,
    prefix: Option<String>,
    new_context: Option<String>,
}

/// The ThinkFork engine over one provider and store.
#[derive(Clone)]
pub struct ForkEngine {
    store: Store,
    provider: Arc<dyn Provider>,
    prompts: ForkPrompts,
    settings: ForkSettings,
    cancel: CancellationToken,
}

type Events = mpsc::UnboundedSender<ForkEvent>;

/// A debater's latest position: text, confidence, key insights, node.
type Stance = (String, f64, Vec<String>, Option<NodeId>);

impl ForkEngine {
    pub fn new(
        store: Store,
        provider: Arc<dyn Provider>,
        prompts: ForkPrompts,
        settings: ForkSettings,
    ) -> Self {
        Self {
            store,
            provider,
            prompts,
            settings,
            cancel: CancellationToken::new(),
        }
    }

    /// Cancels every model call of this engine when `cancel` fires.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    pub fn settings(&self) -> &ForkSettings {
        &self.settings
    }
}
