//! ThinkFork: one question reasoned in several styles at once, compared, debated, steered
//! (expand / merge / challenge / refork), and human checkpoints with verdict propagation.
//! Progress goes out as typed [`ForkEvent`]s; every result is persisted as nodes, edges and a run.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use futures::future::join_all;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::json_extract::extract_object;
use super::llm::{
    CallCtx, ChatRequest, Effort, Message, Provider, StreamEvent, ThinkingMode, ToolSpec, TurnPlan,
};
use super::thinkgraph::Step;
use crate::engines::prompts::Prompts;
use crate::store::{
    Edge, EdgeType, Node, NodeId, NodeStatus, NodeType, Run, RunId, RunKind, RunStatus, Session,
    SessionId, SessionSource, Store, StoreError,
};

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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

    fn confidence(self) -> f64 {
        match self {
            Verdict::Verified => 1.0,
            Verdict::Questionable => 0.5,
            Verdict::Disagree => 0.0,
        }
    }
}

/// Human guidance for one style's branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guidance {
    pub style: ForkStyle,
    pub guidance: String,
}

/// What a branch concluded (also the shape of a merge or consensus synthesis).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conclusion {
    pub conclusion: String,
    pub confidence: f64,
    #[serde(default)]
    pub key_insights: Vec<String>,
    #[serde(default)]
    pub risks: Vec<String>,
    #[serde(default)]
    pub opportunities: Vec<String>,
    #[serde(default)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Agreement {
    Full,
    Partial,
    None,
}

/// How much a divergence matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Significance {
    High,
    Medium,
    Low,
}

/// A topic the branches agree on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConvergencePoint {
    pub topic: String,
    pub agreement_level: Agreement,
    pub styles: Vec<ForkStyle>,
    pub summary: String,
}

/// One style's position on a divergent topic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Position {
    pub style: ForkStyle,
    pub position: String,
    pub confidence: f64,
}

/// A topic the branches disagree on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DivergencePoint {
    pub topic: String,
    pub positions: Vec<Position>,
    pub significance: Significance,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<String>,
}

/// The approach the comparison recommends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecommendedApproach {
    pub style: ForkStyle,
    pub rationale: String,
    pub confidence: f64,
}

/// Convergence / divergence analysis over the successful branches.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub convergence_points: Vec<ConvergencePoint>,
    pub divergence_points: Vec<DivergencePoint>,
    pub meta_insight: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommended_approach: Option<RecommendedApproach>,
    /// Why there is no comparison (fewer than two branches, or unreadable model output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
        merged: Conclusion,
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
            debate_rounds: 3,
            consensus_threshold: 0.7,
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
}

impl ForkSettings {
    /// Seed defaults: the debate of [`ForkParams::default`], guidance ≤ 2,000 and
    /// corrections ≤ 5,000 chars, 2–6 branches; thinking off.
    pub fn new(model: impl Into<String>) -> Self {
        let params = ForkParams::default();
        let plan = TurnPlan {
            thinking: ThinkingMode::Off,
            effort: None,
            max_tokens: 1024,
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
            guidance_max_chars: 2000,
            correction_max_chars: 5000,
            min_branches: 2,
            max_branches: 6,
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
            .collect();
        Self { by_name }
    }

    fn get(&self, name: &str) -> &str {
        self.by_name.get(name).map(String::as_str).unwrap_or("")
    }
}

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

/// One call's collected output.
#[derive(Debug, Default)]
struct CallOutput {
    text: String,
    thinking: String,
    tool_input: Option<Value>,
    output_tokens: u64,
}

/// Which structured answer a call asks for.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Conclusion,
    Comparison,
    Debate,
}

impl Shape {
    fn tool(self) -> ToolSpec {
        let list = json!({"type": "array", "items": {"type": "string"}});
        let (name, description, schema) = match self {
            Shape::Conclusion => (
                "record_conclusion",
                "Record the branch's conclusion.",
                json!({"type": "object", "properties": {
                    "conclusion": {"type": "string"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "keyInsights": list, "risks": list, "opportunities": list, "assumptions": list},
                    "required": ["conclusion", "confidence", "keyInsights"]}),
            ),
            Shape::Comparison => (
                "record_comparison",
                "Record the convergence and divergence analysis.",
                json!({"type": "object", "properties": {
                    "convergencePoints": {"type": "array", "items": {"type": "object", "properties": {
                        "topic": {"type": "string"},
                        "agreementLevel": {"type": "string", "enum": ["full", "partial", "none"]},
                        "styles": list, "summary": {"type": "string"}}}},
                    "divergencePoints": {"type": "array", "items": {"type": "object", "properties": {
                        "topic": {"type": "string"},
                        "positions": {"type": "array", "items": {"type": "object", "properties": {
                            "style": {"type": "string"}, "position": {"type": "string"},
                            "confidence": {"type": "number"}}}},
                        "significance": {"type": "string", "enum": ["high", "medium", "low"]},
                        "recommendation": {"type": "string"}}}},
                    "metaInsight": {"type": "string"},
                    "recommendedApproach": {"type": "object", "properties": {
                        "style": {"type": "string"}, "rationale": {"type": "string"},
                        "confidence": {"type": "number"}}}},
                    "required": ["convergencePoints", "divergencePoints", "metaInsight"]}),
            ),
            Shape::Debate => (
                "record_debate_response",
                "Record this branch's debate response.",
                json!({"type": "object", "properties": {
                    "response": {"type": "string"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "positionChanged": {"type": "boolean"},
                    "counterpoints": list, "concessions": list},
                    "required": ["response", "confidence", "positionChanged"]}),
            ),
        };
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: schema,
        }
    }

    /// The answer format spelled out for models without tools.
    fn template(self) -> &'static str {
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

    // ---- validation -----------------------------------------------------------------

    fn check_styles(&self, styles: &[ForkStyle]) -> Result<(), ForkError> {
        let (min, max) = (self.settings.min_branches, self.settings.max_branches);
        if styles.len() < min || styles.len() > max {
            return Err(ForkError::Invalid(format!(
                "a fork needs {min} to {max} branches, got {}",
                styles.len()
            )));
        }
        if let Some(dup) = styles
            .iter()
            .enumerate()
            .find_map(|(i, s)| styles[..i].contains(s).then_some(s))
        {
            return Err(ForkError::Invalid(format!("style {dup} is given twice")));
        }
        Ok(())
    }

    fn check_guidance(&self, guidance: &[Guidance], styles: &[ForkStyle]) -> Result<(), ForkError> {
        let max = self.settings.guidance_max_chars;
        for g in guidance {
            let n = g.guidance.chars().count();
            if n > max {
                return Err(ForkError::Invalid(format!(
                    "guidance for {} is {n} characters; the limit is {max}",
                    g.style
                )));
            }
            if !styles.contains(&g.style) {
                return Err(ForkError::Invalid(format!(
                    "guidance given for {}, which is not one of the forked styles",
                    g.style
                )));
            }
        }
        Ok(())
    }

    // ---- fork -----------------------------------------------------------------------

    /// Forks `req.query` into one branch per style, runs them concurrently, then compares
    /// them. Stores a query node, a `fork_branch` node per branch and a `fork` run.
    pub async fn fork(
        &self,
        req: ForkRequest,
        events: &Events,
    ) -> Result<Outcome<ForkResult>, ForkError> {
        let spec = self.new_query_spec(req)?;
        self.fork_spec(spec, events).await
    }

    /// Forks from inside a thinking trace: the branches continue the reasoning of
    /// `thinking` from the start of step `step` (its `meta.steps[step].start` byte offset),
    /// restated as text, each in its style. The branches hang off the thinking node.
    pub async fn fork_from_step(
        &self,
        thinking: NodeId,
        step: usize,
        styles: Vec<ForkStyle>,
        guidance: Vec<Guidance>,
        events: &Events,
    ) -> Result<Outcome<ForkResult>, ForkError> {
        self.check_styles(&styles)?;
        self.check_guidance(&guidance, &styles)?;
        let node = self
            .store
            .node(thinking)?
            .ok_or_else(|| ForkError::NotFound(format!("node {thinking}")))?;
        let start = Step::of(&node).get(step).map(|s| s.start).ok_or_else(|| {
            ForkError::Invalid(format!("node {thinking} has no thinking step {step}"))
        })?;
        let mut cut = start.min(node.text.len());
        while !node.text.is_char_boundary(cut) {
            cut -= 1;
        }
        let query = preceding_query(&self.store, &node)?.unwrap_or_default();
        let spec = Spec {
            session: node.session,
            query,
            anchor: node.id,
            styles,
            guidance,
            prefix: Some(node.text[..cut].to_string()),
            new_context: None,
        };
        self.fork_spec(spec, events).await
    }

    fn new_query_spec(&self, req: ForkRequest) -> Result<Spec, ForkError> {
        if req.query.trim().is_empty() {
            return Err(ForkError::Invalid("the question is empty".into()));
        }
        self.check_styles(&req.styles)?;
        self.check_guidance(&req.guidance, &req.styles)?;
        let session = self.session_for(req.session, &req.query)?;
        let mut query = Node::new(session, NodeType::Query, req.query.clone());
        query.meta.insert("fork".into(), json!(true));
        self.store.write(|w| w.put_node(&query))?;
        Ok(Spec {
            session,
            query: req.query,
            anchor: query.id,
            styles: req.styles,
            guidance: req.guidance,
            prefix: None,
            new_context: None,
        })
    }

    fn session_for(&self, id: Option<SessionId>, query: &str) -> Result<SessionId, ForkError> {
        if let Some(id) = id {
            return self
                .store
                .session(id)?
                .map(|s| s.id)
                .ok_or_else(|| ForkError::NotFound(format!("session {id}")));
        }
        let mut s = Session::new(
            crate::engines::orchestrator::title_from(query),
            SessionSource::Glassbox,
        );
        s.provider = Some(self.provider.name().to_string());
        s.model = Some(self.settings.model.clone());
        self.store.write(|w| w.put_session(&s))?;
        Ok(s.id)
    }

    fn start_run(&self, spec: &Spec, kind: RunKind, extra: Value) -> Result<Run, ForkError> {
        let mut params = json!({
            "query": spec.query,
            "queryNode": spec.anchor,
            "styles": spec.styles,
            "guidance": spec.guidance,
        });
        if let (Some(p), Value::Object(extra)) = (params.as_object_mut(), extra) {
            p.extend(extra);
            if let Some(prefix) = &spec.prefix {
                p.insert("prefixChars".into(), json!(prefix.chars().count()));
            }
        }
        let run = Run {
            id: RunId::new(),
            session: spec.session,
            kind,
            params,
            summary: Value::Null,
            status: RunStatus::Running,
            created_at: Utc::now(),
            finished_at: None,
        };
        self.store.write(|w| w.put_run(&run))?;
        Ok(run)
    }

    fn finish_run(&self, mut run: Run, summary: Value) -> Result<(), ForkError> {
        run.summary = summary;
        run.status = if self.cancel.is_cancelled() {
            RunStatus::Interrupted
        } else {
            RunStatus::Done
        };
        run.finished_at = Some(Utc::now());
        self.store.write(|w| w.put_run(&run))?;
        Ok(())
    }

    async fn fork_spec(
        &self,
        spec: Spec,
        events: &Events,
    ) -> Result<Outcome<ForkResult>, ForkError> {
        let run = self.start_run(&spec, RunKind::Fork, json!({}))?;
        let _ = events.send(ForkEvent::Started {
            session: spec.session,
            run: run.id,
            anchor: spec.anchor,
        });
        let result = self.branches_and_compare(&spec, run.id, events).await?;
        self.finish_run(
            run.clone(),
            serde_json::to_value(&result).unwrap_or_default(),
        )?;
        let mut nodes = vec![spec.anchor];
        nodes.extend(result.branches.iter().filter_map(|b| b.node_id));
        Ok(Outcome {
            session: spec.session,
            run: run.id,
            nodes,
            data: result,
        })
    }

    async fn branches_and_compare(
        &self,
        spec: &Spec,
        run: RunId,
        events: &Events,
    ) -> Result<ForkResult, ForkError> {
        let runs = spec
            .styles
            .iter()
            .map(|&style| self.branch(spec, style, run, events));
        let branches = join_all(runs)
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        let comparison = self.compare(&spec.query, &branches, events).await;
        let _ = events.send(ForkEvent::ComparisonDone(comparison.clone()));
        Ok(ForkResult {
            branches,
            comparison,
            applied_guidance: spec.guidance.clone(),
        })
    }

    fn system_for(&self, style: ForkStyle) -> String {
        self.prompts.get(style.as_str()).to_string()
    }

    /// One branch: a structured conclusion, stored as a `fork_branch` node. Model and
    /// parse failures become a failed branch; only store failures are errors.
    async fn branch(
        &self,
        spec: &Spec,
        style: ForkStyle,
        run: RunId,
        events: &Events,
    ) -> Result<BranchResult, ForkError> {
        let mut user = String::new();
        if let Some(g) = spec.guidance.iter().find(|g| g.style == style) {
            user.push_str(&format!(
                "Human guidance for this branch: {}\n\n",
                g.guidance
            ));
        }
        user.push_str(&format!("Question: {}\n", spec.query));
        if let Some(prefix) = &spec.prefix {
            user.push_str(&format!(
                "\nThe reasoning so far (continue it from where it stops, in your own style):\n{prefix}\n"
            ));
        }
        if let Some(ctx) = &spec.new_context {
            user.push_str(&format!("\nNew context from the human: {ctx}\n"));
        }
        let lane = Lane::Branch(style);
        let _ = events.send(ForkEvent::LaneStarted { lane, round: 0 });
        let started = Instant::now();
        let out = self
            .structured(
                lane,
                self.system_for(style),
                user,
                Shape::Conclusion,
                self.settings.plan,
                events,
            )
            .await;
        let result = self.branch_result(style, out, started);
        let mut meta = Map::new();
        meta.insert("style".into(), json!(style));
        meta.insert("run".into(), json!(run));
        if spec.new_context.is_some() {
            meta.insert("action".into(), json!("refork"));
        }
        let node = self.store_branch(
            spec.session,
            &result,
            meta,
            &[(EdgeType::BranchesFrom, spec.anchor)],
        )?;
        let result = BranchResult {
            node_id: Some(node),
            ..result
        };
        let _ = events.send(ForkEvent::BranchDone(result.clone()));
        Ok(result)
    }

    fn branch_result(
        &self,
        style: ForkStyle,
        out: Result<(Map<String, Value>, u64), (String, u64)>,
        started: Instant,
    ) -> BranchResult {
        let duration_ms = started.elapsed().as_millis() as u64;
        match out.and_then(|(m, tokens)| {
            parse_conclusion(&m)
                .map(|c| (c, tokens))
                .map_err(|e| (e, tokens))
        }) {
            Ok((body, tokens)) => BranchResult {
                style,
                body,
                output_tokens_used: tokens,
                duration_ms,
                error: None,
                node_id: None,
            },
            Err((error, tokens)) => BranchResult {
                style,
                body: Conclusion::default(),
                output_tokens_used: tokens,
                duration_ms,
                error: Some(error),
                node_id: None,
            },
        }
    }

    /// Stores a branch as a `fork_branch` node with edges from it to `links`.
    fn store_branch(
        &self,
        session: SessionId,
        b: &BranchResult,
        mut meta: Map<String, Value>,
        links: &[(EdgeType, NodeId)],
    ) -> Result<NodeId, ForkError> {
        let mut node = Node::new(
            session,
            NodeType::ForkBranch,
            b.error.clone().unwrap_or_else(|| b.body.conclusion.clone()),
        );
        node.model = Some(self.settings.model.clone());
        node.confidence = Some(b.body.confidence);
        if let Some(e) = &b.error {
            node.status = NodeStatus::Failed { error: e.clone() };
        }
        meta.insert("keyInsights".into(), json!(b.body.key_insights));
        meta.insert("risks".into(), json!(b.body.risks));
        meta.insert("opportunities".into(), json!(b.body.opportunities));
        meta.insert("assumptions".into(), json!(b.body.assumptions));
        meta.insert("outputTokens".into(), json!(b.output_tokens_used));
        meta.insert("durationMs".into(), json!(b.duration_ms));
        node.meta = meta;
        self.store.write(|w| {
            w.put_node(&node)?;
            for (kind, dst) in links {
                w.put_edge(&Edge::new(node.id, *kind, *dst))?;
            }
            Ok(())
        })?;
        Ok(node.id)
    }

    /// The comparison over the successful branches; never fails (the reason is kept).
    async fn compare(&self, query: &str, branches: &[BranchResult], events: &Events) -> Comparison {
        let ok: Vec<&BranchResult> = branches.iter().filter(|b| b.ok()).collect();
        if ok.len() < 2 {
            return Comparison {
                comparison_error: Some(format!(
                    "{} of {} branches succeeded; a comparison needs two",
                    ok.len(),
                    branches.len()
                )),
                ..Comparison::default()
            };
        }
        let mut user = format!("Question: {query}\n\nBranches:\n");
        for b in &ok {
            user.push_str(&describe_branch(b));
        }
        let lane = Lane::Comparison;
        let _ = events.send(ForkEvent::LaneStarted { lane, round: 0 });
        let out = self
            .structured(
                lane,
                self.prompts.get("comparison").to_string(),
                user,
                Shape::Comparison,
                self.settings.plan,
                events,
            )
            .await;
        match out {
            Ok((m, _)) => parse_comparison(&m),
            Err((e, _)) => Comparison {
                comparison_error: Some(e),
                ..Comparison::default()
            },
        }
    }

    // ---- model calls ----------------------------------------------------------------

    /// One streaming call; deltas go out as events. `Err` carries the provider's error.
    async fn call(
        &self,
        lane: Lane,
        system: String,
        messages: Vec<Message>,
        shape: Option<Shape>,
        plan: TurnPlan,
        events: &Events,
    ) -> Result<CallOutput, (String, CallOutput)> {
        let mut req = ChatRequest::new(self.settings.model.clone(), messages);
        req.system = (!system.trim().is_empty()).then_some(system);
        req.max_tokens = plan.max_tokens;
        req.thinking = plan.thinking;
        req.effort = plan.effort;
        req.temperature = self.settings.temperature;
        req.seed = self.settings.seed;
        if let (Some(shape), true) = (shape, self.settings.use_tools) {
            let tool = shape.tool();
            req.tool_choice = Some(tool.name.clone());
            req.tools = vec![tool];
        }
        let mut stream = self.provider.stream(
            req,
            CallCtx {
                cancel: self.cancel.clone(),
                raw: None,
            },
        );
        let mut out = CallOutput::default();
        while let Some(ev) = stream.next().await {
            match ev {
                StreamEvent::ThinkingDelta { text } => {
                    out.thinking.push_str(&text);
                    let _ = events.send(ForkEvent::Delta {
                        lane,
                        text,
                        thinking: true,
                    });
                }
                StreamEvent::TextDelta { text } => {
                    out.text.push_str(&text);
                    let _ = events.send(ForkEvent::Delta {
                        lane,
                        text,
                        thinking: false,
                    });
                }
                StreamEvent::ToolUse { input, .. } => {
                    out.tool_input.get_or_insert(input);
                }
                StreamEvent::Usage { usage } => out.output_tokens = usage.output_tokens,
                StreamEvent::Error { error } => return Err((error.to_string(), out)),
                StreamEvent::Stop { .. }
                | StreamEvent::ThinkingSignature { .. }
                | StreamEvent::RedactedThinking { .. }
                | StreamEvent::Compaction { .. } => {}
            }
        }
        if self.cancel.is_cancelled() {
            return Err(("cancelled".into(), out));
        }
        Ok(out)
    }

    /// A call whose answer must be a JSON object: the tool input, else the first object in
    /// the text; when that is unreadable, once more with the repair prompt. Returns the
    /// object and the output tokens spent, or the error and the tokens spent.
    async fn structured(
        &self,
        lane: Lane,
        system: String,
        user: String,
        shape: Shape,
        plan: TurnPlan,
        events: &Events,
    ) -> Result<(Map<String, Value>, u64), (String, u64)> {
        let instruction = if self.settings.use_tools {
            format!(
                "\n\nRecord your answer with the {} tool.",
                shape.tool().name
            )
        } else {
            format!(
                "\n\nAnswer with ONLY one JSON object of this shape:\n{}",
                shape.template()
            )
        };
        let first_user = format!("{user}{instruction}");
        let out = self
            .call(
                lane,
                system.clone(),
                vec![Message::user(first_user.clone())],
                Some(shape),
                plan,
                events,
            )
            .await
            .map_err(|(e, o)| (e, o.output_tokens))?;
        let mut tokens = out.output_tokens;
        let first_err = match read_object(&out) {
            Ok(m) => return Ok((m, tokens)),
            Err(e) => e,
        };
        let _ = events.send(ForkEvent::Repairing { lane });
        let repair = format!(
            "{}\n\nThe required shape:\n{}",
            self.prompts.get("repair"),
            shape.template()
        );
        let previous = if out.text.trim().is_empty() {
            out.tool_input
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default()
        } else {
            out.text.clone()
        };
        let messages = vec![
            Message::user(first_user),
            Message::assistant(previous),
            Message::user(repair),
        ];
        let again = self
            .call(lane, system, messages, Some(shape), plan, events)
            .await
            .map_err(|(e, o)| (e, tokens + o.output_tokens))?;
        tokens += again.output_tokens;
        read_object(&again)
            .map(|m| (m, tokens))
            .map_err(|e| (format!("{first_err}; after the repair prompt: {e}"), tokens))
    }

    // ---- debate ---------------------------------------------------------------------

    /// A fork followed by `rounds` debate rounds (branches concurrently, rounds in order),
    /// then a consensus synthesis when every branch held its position in the last round
    /// with confidence at or above the threshold. Stored as a `debate` run.
    pub async fn debate(
        &self,
        req: ForkRequest,
        rounds: u32,
        events: &Events,
    ) -> Result<Outcome<DebateResult>, ForkError> {
        if rounds == 0 || rounds > 10 {
            return Err(ForkError::Invalid(format!(
                "a debate needs 1 to 10 rounds, got {rounds}"
            )));
        }
        let spec = self.new_query_spec(req)?;
        let run = self.start_run(&spec, RunKind::Debate, json!({"rounds": rounds}))?;
        let _ = events.send(ForkEvent::Started {
            session: spec.session,
            run: run.id,
            anchor: spec.anchor,
        });
        let initial = self.branches_and_compare(&spec, run.id, events).await?;
        let mut nodes = vec![spec.anchor];
        nodes.extend(initial.branches.iter().filter_map(|b| b.node_id));
        let mut total_tokens: u64 = initial.branches.iter().map(|b| b.output_tokens_used).sum();

        // Latest position per debating style: (text, confidence, insights, node).
        let mut latest: BTreeMap<ForkStyle, Stance> = initial
            .branches
            .iter()
            .filter(|b| b.ok())
            .map(|b| {
                (
                    b.style,
                    (
                        b.body.conclusion.clone(),
                        b.body.confidence,
                        b.body.key_insights.clone(),
                        b.node_id,
                    ),
                )
            })
            .collect();
        let mut all_rounds = Vec::new();
        if latest.len() >= 2 {
            for round in 1..=rounds {
                let snapshot = latest.clone();
                let calls = snapshot.keys().map(|&style| {
                    self.debate_entry(&spec, &snapshot, style, round, rounds, run.id, events)
                });
                let entries = join_all(calls)
                    .await
                    .into_iter()
                    .collect::<Result<Vec<_>, _>>()?;
                for (e, tokens) in &entries {
                    total_tokens += tokens;
                    if let (None, Some(pos)) = (&e.error, latest.get_mut(&e.style)) {
                        pos.0 = e.response.clone();
                        pos.1 = e.confidence;
                        pos.3 = e.node_id;
                    }
                    nodes.extend(e.node_id);
                }
                all_rounds.push(DebateRound {
                    round,
                    entries: entries.into_iter().map(|(e, _)| e).collect(),
                });
                if self.cancel.is_cancelled() {
                    break;
                }
            }
        }
        let final_positions: Vec<Position> = latest
            .iter()
            .map(|(&style, (position, confidence, ..))| Position {
                style,
                position: position.clone(),
                confidence: *confidence,
            })
            .collect();
        let consensus_reached = all_rounds.len() == rounds as usize
            && all_rounds.last().is_some_and(|r| {
                !r.entries.is_empty()
                    && r.entries.iter().all(|e| {
                        e.error.is_none()
                            && !e.position_changed
                            && e.confidence >= self.settings.consensus_threshold
                    })
            });
        let mut result = DebateResult {
            initial_fork: initial,
            rounds: all_rounds,
            final_positions,
            consensus_reached,
            consensus: None,
            consensus_confidence: None,
            consensus_node_id: None,
            consensus_error: None,
            total_rounds: 0,
            total_tokens_used: 0,
        };
        result.total_rounds = result.rounds.len() as u32;
        if consensus_reached {
            let sources: Vec<NodeId> = latest.values().filter_map(|p| p.3).collect();
            let mut user = format!(
                "Question: {}\n\nAfter debate, every branch holds its position with high confidence. Synthesise their consensus.\n\nFinal positions:\n",
                spec.query
            );
            for p in &result.final_positions {
                user.push_str(&format!(
                    "- {} (confidence {:.2}): {}\n",
                    p.style, p.confidence, p.position
                ));
            }
            match self
                .synthesis(&spec, &user, &sources, run.id, "consensus", events)
                .await?
            {
                Ok((c, node, tokens)) => {
                    total_tokens += tokens;
                    result.consensus = Some(c.conclusion);
                    result.consensus_confidence = Some(c.confidence);
                    result.consensus_node_id = Some(node);
                    nodes.push(node);
                }
                Err((e, tokens)) => {
                    total_tokens += tokens;
                    result.consensus_error = Some(e);
                }
            }
        }
        result.total_tokens_used = total_tokens;
        let _ = events.send(ForkEvent::DebateDone {
            consensus_reached,
            consensus: result.consensus.clone(),
        });
        self.finish_run(
            run.clone(),
            serde_json::to_value(&result).unwrap_or_default(),
        )?;
        Ok(Outcome {
            session: spec.session,
            run: run.id,
            nodes,
            data: result,
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn debate_entry(
        &self,
        spec: &Spec,
        positions: &BTreeMap<ForkStyle, Stance>,
        style: ForkStyle,
        round: u32,
        rounds: u32,
        run: RunId,
        events: &Events,
    ) -> Result<(DebateEntry, u64), ForkError> {
        let mut user = format!("Question: {}\n\n", spec.query);
        if let Some((text, conf, _, _)) = positions.get(&style) {
            user.push_str(&format!(
                "Your current position ({style}, confidence {conf:.2}):\n{text}\n\n"
            ));
        }
        user.push_str("The other branches' latest positions:\n");
        for (other, (text, conf, insights, _)) in positions.iter().filter(|(s, _)| **s != style) {
            user.push_str(&format!("- {other} (confidence {conf:.2}): {text}\n"));
            if !insights.is_empty() {
                user.push_str(&format!("  key insights: {}\n", insights.join("; ")));
            }
        }
        user.push_str(&format!("\nDebate round {round} of {rounds}."));
        let system = format!(
            "{}\n\n{}",
            self.system_for(style),
            self.prompts.get("debate")
        );
        let lane = Lane::Branch(style);
        let _ = events.send(ForkEvent::LaneStarted { lane, round });
        let out = self
            .structured(
                lane,
                system,
                user,
                Shape::Debate,
                self.settings.plan,
                events,
            )
            .await;
        let previous_conf = positions.get(&style).map(|p| p.1).unwrap_or(0.0);
        let (mut entry, tokens) = match out.and_then(|(m, t)| {
            parse_debate(&m, style, round)
                .map(|e| (e, t))
                .map_err(|e| (e, t))
        }) {
            Ok((e, t)) => (e, t),
            Err((error, t)) => (
                DebateEntry {
                    style,
                    round,
                    response: String::new(),
                    confidence: previous_conf,
                    position_changed: false,
                    counterpoints: Vec::new(),
                    concessions: Vec::new(),
                    error: Some(error),
                    node_id: None,
                },
                t,
            ),
        };
        let mut node = Node::new(
            spec.session,
            NodeType::ForkBranch,
            entry
                .error
                .clone()
                .unwrap_or_else(|| entry.response.clone()),
        );
        node.model = Some(self.settings.model.clone());
        node.confidence = Some(entry.confidence);
        if let Some(e) = &entry.error {
            node.status = NodeStatus::Failed { error: e.clone() };
        }
        node.meta.insert("round".into(), json!(round));
        node.meta.insert("style".into(), json!(style));
        node.meta.insert("run".into(), json!(run));
        node.meta
            .insert("positionChanged".into(), json!(entry.position_changed));
        node.meta
            .insert("counterpoints".into(), json!(entry.counterpoints));
        node.meta
            .insert("concessions".into(), json!(entry.concessions));
        let prev = positions.get(&style).and_then(|p| p.3);
        self.store.write(|w| {
            w.put_node(&node)?;
            if let Some(prev) = prev {
                w.put_edge(&Edge::new(node.id, EdgeType::Refines, prev))?;
            }
            Ok(())
        })?;
        entry.node_id = Some(node.id);
        let _ = events.send(ForkEvent::DebateEntryDone(entry.clone()));
        Ok((entry, tokens))
    }

    /// A structured synthesis stored as a `synthesis` node that `aggregates` `sources`.
    /// Outer error: store; inner: the model's failure with the tokens spent.
    async fn synthesis(
        &self,
        spec: &Spec,
        user: &str,
        sources: &[NodeId],
        run: RunId,
        purpose: &str,
        events: &Events,
    ) -> Result<Result<(Conclusion, NodeId, u64), (String, u64)>, ForkError> {
        let lane = Lane::Synthesis;
        let _ = events.send(ForkEvent::LaneStarted { lane, round: 0 });
        let out = self
            .structured(
                lane,
                self.prompts.get("merge").to_string(),
                user.to_string(),
                Shape::Conclusion,
                self.settings.plan,
                events,
            )
            .await;
        let (c, tokens) =
            match out.and_then(|(m, t)| parse_conclusion(&m).map(|c| (c, t)).map_err(|e| (e, t))) {
                Ok(v) => v,
                Err(e) => return Ok(Err(e)),
            };
        let mut node = Node::new(spec.session, NodeType::Synthesis, c.conclusion.clone());
        node.model = Some(self.settings.model.clone());
        node.confidence = Some(c.confidence);
        node.meta.insert("purpose".into(), json!(purpose));
        node.meta.insert("run".into(), json!(run));
        node.meta
            .insert("keyInsights".into(), json!(c.key_insights));
        node.meta.insert("risks".into(), json!(c.risks));
        node.meta
            .insert("opportunities".into(), json!(c.opportunities));
        node.meta.insert("assumptions".into(), json!(c.assumptions));
        self.store.write(|w| {
            w.put_node(&node)?;
            for s in sources {
                w.put_edge(&Edge::new(node.id, EdgeType::Aggregates, *s))?;
            }
            Ok(())
        })?;
        Ok(Ok((c, node.id, tokens)))
    }

    // ---- steer ----------------------------------------------------------------------

    /// Steers a finished fork, debate or refork run. Stores a `steer` run; the result
    /// node `refines` (expand, challenge), `aggregates` (merge) or `branches_from` (refork)
    /// what it came from.
    pub async fn steer(
        &self,
        source: RunId,
        action: SteerAction,
        events: &Events,
    ) -> Result<Outcome<SteerResult>, ForkError> {
        let record = load_fork_record(&self.store, source)?;
        let spec = Spec {
            session: record.session,
            query: record.query.clone(),
            anchor: record.query_node,
            styles: record.styles.clone(),
            guidance: record.guidance.clone(),
            prefix: None,
            new_context: None,
        };
        let max = self.settings.guidance_max_chars;
        let text_len = match &action {
            SteerAction::Expand { direction, .. } => {
                direction.as_deref().map_or(0, |t| t.chars().count())
            }
            SteerAction::Merge { focus_area, .. } => {
                focus_area.as_deref().map_or(0, |t| t.chars().count())
            }
            SteerAction::Challenge { challenge, .. } => challenge.chars().count(),
            SteerAction::Refork { new_context } => new_context.chars().count(),
        };
        if text_len > max {
            return Err(ForkError::Invalid(format!(
                "the steering text is {text_len} characters; the limit is {max}"
            )));
        }
        let run = self.start_run(
            &spec,
            RunKind::Steer,
            json!({"sourceRun": source, "steer": action}),
        )?;
        let _ = events.send(ForkEvent::Started {
            session: spec.session,
            run: run.id,
            anchor: spec.anchor,
        });
        let find = |style: ForkStyle| -> Result<&BranchResult, ForkError> {
            record
                .branches
                .iter()
                .find(|b| b.style == style && b.ok())
                .ok_or_else(|| {
                    ForkError::Invalid(format!("run {source} has no successful {style} branch"))
                })
        };
        let (result, nodes) = match action {
            SteerAction::Expand { style, direction } => {
                let b = find(style)?;
                let mut user = format!(
                    "Question: {}\n\nThe branch to expand:\n{}",
                    spec.query,
                    describe_branch(b)
                );
                if let Some(d) = direction.filter(|d| !d.trim().is_empty()) {
                    user.push_str(&format!("\nDirection from the human: {d}\n"));
                }
                let system = format!(
                    "{}\n\n{}",
                    self.system_for(style),
                    self.prompts.get("expand")
                );
                let branch = self
                    .steered_branch(
                        &spec,
                        style,
                        system,
                        user,
                        self.settings.max_plan,
                        b,
                        "expand",
                        run.id,
                        events,
                    )
                    .await?;
                let nodes = branch.node_id.into_iter().collect();
                (SteerResult::Expand { branch }, nodes)
            }
            SteerAction::Challenge { style, challenge } => {
                if challenge.trim().is_empty() {
                    return Err(ForkError::Invalid(
                        "a challenge needs a counter-argument".into(),
                    ));
                }
                let b = find(style)?;
                let user = format!(
                    "Question: {}\n\nThe branch's conclusion:\n{}\nThe human's counter-argument: {challenge}\n",
                    spec.query,
                    describe_branch(b)
                );
                let system = format!(
                    "{}\n\n{}",
                    self.system_for(style),
                    self.prompts.get("challenge")
                );
                let branch = self
                    .steered_branch(
                        &spec,
                        style,
                        system,
                        user,
                        self.settings.plan,
                        b,
                        "challenge",
                        run.id,
                        events,
                    )
                    .await?;
                let nodes = branch.node_id.into_iter().collect();
                (SteerResult::Challenge { challenge, branch }, nodes)
            }
            SteerAction::Merge { styles, focus_area } => {
                let mut unique: Vec<ForkStyle> = Vec::new();
                for s in styles {
                    if !unique.contains(&s) {
                        unique.push(s);
                    }
                }
                if unique.len() < 2 {
                    return Err(ForkError::Invalid(
                        "merge needs two or more different branches".into(),
                    ));
                }
                let picked = unique
                    .iter()
                    .map(|s| find(*s))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut user = format!("Question: {}\n\nBranches to merge:\n", spec.query);
                for b in &picked {
                    user.push_str(&describe_branch(b));
                }
                if let Some(f) = focus_area.filter(|f| !f.trim().is_empty()) {
                    user.push_str(&format!("\nFocus on: {f}\n"));
                }
                let sources: Vec<NodeId> = picked.iter().filter_map(|b| b.node_id).collect();
                match self
                    .synthesis(&spec, &user, &sources, run.id, "merge", events)
                    .await?
                {
                    Ok((merged, node, _)) => (
                        SteerResult::Merge {
                            styles: unique,
                            merged,
                            node_id: node,
                        },
                        vec![node],
                    ),
                    Err((e, _)) => {
                        let err = ForkError::Model(format!("merge failed: {e}"));
                        self.fail_run(run, &err)?;
                        return Err(err);
                    }
                }
            }
            SteerAction::Refork { new_context } => {
                if new_context.trim().is_empty() {
                    return Err(ForkError::Invalid("refork needs new context".into()));
                }
                let spec = Spec {
                    new_context: Some(new_context.clone()),
                    ..spec.clone()
                };
                let result = self.branches_and_compare(&spec, run.id, events).await?;
                let nodes = result.branches.iter().filter_map(|b| b.node_id).collect();
                (
                    SteerResult::Refork {
                        new_context,
                        result,
                    },
                    nodes,
                )
            }
        };
        self.finish_run(
            run.clone(),
            serde_json::to_value(&result).unwrap_or_default(),
        )?;
        Ok(Outcome {
            session: spec.session,
            run: run.id,
            nodes,
            data: result,
        })
    }

    fn fail_run(&self, mut run: Run, err: &ForkError) -> Result<(), ForkError> {
        run.status = RunStatus::Failed {
            error: err.to_string(),
        };
        run.finished_at = Some(Utc::now());
        self.store.write(|w| w.put_run(&run))?;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    async fn steered_branch(
        &self,
        spec: &Spec,
        style: ForkStyle,
        system: String,
        user: String,
        plan: TurnPlan,
        source: &BranchResult,
        action: &str,
        run: RunId,
        events: &Events,
    ) -> Result<BranchResult, ForkError> {
        let lane = Lane::Branch(style);
        let _ = events.send(ForkEvent::LaneStarted { lane, round: 0 });
        let started = Instant::now();
        let out = self
            .structured(lane, system, user, Shape::Conclusion, plan, events)
            .await;
        let result = self.branch_result(style, out, started);
        let mut meta = Map::new();
        meta.insert("style".into(), json!(style));
        meta.insert("run".into(), json!(run));
        meta.insert("action".into(), json!(action));
        let links: Vec<(EdgeType, NodeId)> = source
            .node_id
            .map(|n| (EdgeType::Refines, n))
            .into_iter()
            .collect();
        let node = self.store_branch(spec.session, &result, meta, &links)?;
        let result = BranchResult {
            node_id: Some(node),
            ..result
        };
        let _ = events.send(ForkEvent::BranchDone(result.clone()));
        Ok(result)
    }

    // ---- checkpoints ----------------------------------------------------------------

    /// A human verdict on any node (see [`record_verdict`]); disagree with a correction
    /// also reasons an alternative branch that `refines` the node.
    pub async fn checkpoint(
        &self,
        target: NodeId,
        verdict: Verdict,
        correction: Option<String>,
        events: &Events,
    ) -> Result<CheckpointResult, ForkError> {
        let (mut result, node) = record_verdict(
            &self.store,
            target,
            verdict,
            correction,
            self.settings.correction_max_chars,
        )?;
        if let (Verdict::Disagree, Some(c)) = (verdict, result.annotation.correction.clone()) {
            result.alternative_branch = Some(
                self.alternative(&node, result.annotation.id, &c, events)
                    .await?,
            );
        }
        Ok(result)
    }

    /// Reasons again from the chain before `flagged` (its last three nodes), the flagged
    /// step and the correction; stored as a `fork_branch` node that `refines` it.
    async fn alternative(
        &self,
        flagged: &Node,
        annotation: NodeId,
        correction: &str,
        events: &Events,
    ) -> Result<AlternativeBranch, ForkError> {
        let nodes = self.store.session_nodes(flagged.session)?;
        let pos = nodes
            .iter()
            .position(|n| n.id == flagged.id)
            .unwrap_or(nodes.len());
        let chain: Vec<&Node> = nodes[..pos]
            .iter()
            .filter(|n| n.kind != NodeType::HumanAnnotation)
            .collect();
        let chain = &chain[chain.len().saturating_sub(3)..];
        let query = preceding_query(&self.store, flagged)?.unwrap_or_default();
        let mut user = format!(
            "Original question: {query}\n\nChain context (the steps before the flagged one):\n"
        );
        for (i, n) in chain.iter().enumerate() {
            user.push_str(&format!("{}. [{}] {}\n", i + 1, n.kind.as_str(), n.text));
        }
        user.push_str(&format!(
            "\nThe flagged step:\n[{}] {}\n\nThe human's correction: {correction}\n",
            flagged.kind.as_str(),
            flagged.text
        ));
        let lane = Lane::Correction;
        let _ = events.send(ForkEvent::LaneStarted { lane, round: 0 });
        let out = self
            .call(
                lane,
                self.prompts.get("correction").to_string(),
                vec![Message::user(user)],
                None,
                self.settings.correction_plan,
                events,
            )
            .await
            .map_err(|(e, _)| ForkError::Model(e))?;
        let reasoning = if out.text.trim().is_empty() {
            out.thinking.trim().to_string()
        } else {
            out.text.trim().to_string()
        };
        if reasoning.is_empty() {
            return Err(ForkError::Model(
                "the alternative branch came back empty".into(),
            ));
        }
        // Deeper thinking earns more confidence: 0.5 with none, up to 0.9.
        let depth = out.thinking.split_whitespace().count() as f64;
        let confidence = (0.5 + depth / 2500.0).min(0.9);
        let mut alt = Node::new(flagged.session, NodeType::ForkBranch, reasoning.clone());
        alt.model = Some(self.settings.model.clone());
        alt.confidence = Some(confidence);
        alt.meta.insert("checkpoint".into(), json!(annotation));
        alt.meta.insert("correction_of".into(), json!(flagged.id));
        if !out.thinking.is_empty() {
            alt.meta.insert("thinking".into(), json!(out.thinking));
        }
        alt.meta
            .insert("outputTokens".into(), json!(out.output_tokens));
        self.store.write(|w| {
            w.put_node(&alt)?;
            w.put_edge(&Edge::new(alt.id, EdgeType::Refines, flagged.id))
        })?;
        Ok(AlternativeBranch {
            node_id: alt.id,
            reasoning,
            confidence,
        })
    }
}

// ---- helpers ------------------------------------------------------------------------

fn describe_branch(b: &BranchResult) -> String {
    let mut s = format!(
        "- {} (confidence {:.2}): {}\n",
        b.style, b.body.confidence, b.body.conclusion
    );
    for (name, list) in [
        ("key insights", &b.body.key_insights),
        ("risks", &b.body.risks),
        ("opportunities", &b.body.opportunities),
        ("assumptions", &b.body.assumptions),
    ] {
        if !list.is_empty() {
            s.push_str(&format!("  {name}: {}\n", list.join("; ")));
        }
    }
    s
}

/// The tool input (an object, or a string holding one), else the first object in the text.
fn read_object(out: &CallOutput) -> Result<Map<String, Value>, String> {
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

fn field<'a>(m: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names
        .iter()
        .find_map(|n| m.get(*n))
        .filter(|v| !v.is_null())
}

fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A confidence in [0, 1]; percentages and numeric strings are accepted.
fn confidence_of(v: Option<&Value>) -> Option<f64> {
    let x = match v? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().trim_end_matches('%').trim().parse().ok()?,
        _ => return None,
    };
    let x = if x > 1.0 && x <= 100.0 { x / 100.0 } else { x };
    Some(x.clamp(0.0, 1.0))
}

fn list_of(v: Option<&Value>) -> Vec<String> {
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

fn bool_of(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "yes"),
        _ => false,
    }
}

fn parse_conclusion(m: &Map<String, Value>) -> Result<Conclusion, String> {
    let conclusion = text_of(field(m, &["conclusion", "answer", "position"]));
    if conclusion.is_empty() {
        return Err("the model's answer has no conclusion".into());
    }
    Ok(Conclusion {
        conclusion,
        confidence: confidence_of(field(m, &["confidence"])).unwrap_or(0.5),
        key_insights: list_of(field(m, &["keyInsights", "key_insights", "insights"])),
        risks: list_of(field(m, &["risks"])),
        opportunities: list_of(field(m, &["opportunities"])),
        assumptions: list_of(field(m, &["assumptions"])),
    })
}

fn parse_debate(
    m: &Map<String, Value>,
    style: ForkStyle,
    round: u32,
) -> Result<DebateEntry, String> {
    let response = text_of(field(m, &["response", "position", "conclusion"]));
    if response.is_empty() {
        return Err("the model's debate answer has no response".into());
    }
    Ok(DebateEntry {
        style,
        round,
        response,
        confidence: confidence_of(field(m, &["confidence"])).unwrap_or(0.5),
        position_changed: bool_of(field(m, &["positionChanged", "position_changed"])),
        counterpoints: list_of(field(
            m,
            &["counterpoints", "keyCounterpoints", "key_counterpoints"],
        )),
        concessions: list_of(field(m, &["concessions"])),
        error: None,
        node_id: None,
    })
}

fn styles_of(v: Option<&Value>) -> Vec<ForkStyle> {
    list_of(v).iter().filter_map(|s| s.parse().ok()).collect()
}

fn parse_comparison(m: &Map<String, Value>) -> Comparison {
    let objects = |names: &[&str]| -> Vec<Map<String, Value>> {
        match field(m, names) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|i| i.as_object().cloned())
                .collect(),
            _ => Vec::new(),
        }
    };
    let convergence_points = objects(&["convergencePoints", "convergence_points", "convergence"])
        .iter()
        .map(|p| ConvergencePoint {
            topic: text_of(field(p, &["topic"])),
            agreement_level: match text_of(field(p, &["agreementLevel", "agreement"]))
                .to_ascii_lowercase()
                .as_str()
            {
                "full" => Agreement::Full,
                "none" => Agreement::None,
                _ => Agreement::Partial,
            },
            styles: styles_of(field(p, &["styles"])),
            summary: text_of(field(p, &["summary"])),
        })
        .filter(|p| !p.topic.is_empty())
        .collect();
    let divergence_points = objects(&["divergencePoints", "divergence_points", "divergence"])
        .iter()
        .map(|p| DivergencePoint {
            topic: text_of(field(p, &["topic"])),
            positions: match field(p, &["positions"]) {
                Some(Value::Array(items)) => items
                    .iter()
                    .filter_map(Value::as_object)
                    .filter_map(|o| {
                        Some(Position {
                            style: text_of(field(o, &["style"])).parse().ok()?,
                            position: text_of(field(o, &["position"])),
                            confidence: confidence_of(field(o, &["confidence"])).unwrap_or(0.5),
                        })
                    })
                    .collect(),
                _ => Vec::new(),
            },
            significance: match text_of(field(p, &["significance"]))
                .to_ascii_lowercase()
                .as_str()
            {
                "high" => Significance::High,
                "low" => Significance::Low,
                _ => Significance::Medium,
            },
            recommendation: Some(text_of(field(p, &["recommendation"]))).filter(|r| !r.is_empty()),
        })
        .filter(|p| !p.topic.is_empty())
        .collect();
    let recommended_approach = field(m, &["recommendedApproach", "recommended_approach"])
        .and_then(Value::as_object)
        .and_then(|o| {
            Some(RecommendedApproach {
                style: text_of(field(o, &["style"])).parse().ok()?,
                rationale: text_of(field(o, &["rationale"])),
                confidence: confidence_of(field(o, &["confidence"])).unwrap_or(0.5),
            })
        });
    Comparison {
        convergence_points,
        divergence_points,
        meta_insight: text_of(field(m, &["metaInsight", "meta_insight"])),
        recommended_approach,
        comparison_error: None,
    }
}

/// The nearest query node at or before `node` in its session.
fn preceding_query(store: &Store, node: &Node) -> Result<Option<String>, ForkError> {
    if node.kind == NodeType::Query {
        return Ok(Some(node.text.clone()));
    }
    let nodes = store.session_nodes(node.session)?;
    let pos = nodes
        .iter()
        .position(|n| n.id == node.id)
        .unwrap_or(nodes.len());
    Ok(nodes[..pos]
        .iter()
        .rev()
        .find(|n| n.kind == NodeType::Query)
        .map(|n| n.text.clone()))
}

/// Records a human verdict on any node: a `human_annotation` node with a `supports` /
/// `refines` / `contradicts` edge to it. Questionable and disagree mark every node
/// downstream (see [`downstream_of`]) with `meta.disputed_by` = the annotation; verified
/// clears the node's own mark and the marks its earlier disputes caused downstream.
/// Returns the result (without an alternative branch) and the judged node.
pub fn record_verdict(
    store: &Store,
    target: NodeId,
    verdict: Verdict,
    correction: Option<String>,
    max_chars: usize,
) -> Result<(CheckpointResult, Node), ForkError> {
    let correction = correction.filter(|c| !c.trim().is_empty());
    if let Some(c) = &correction {
        let n = c.chars().count();
        let max = max_chars;
        if n > max {
            return Err(ForkError::Invalid(format!(
                "the correction is {n} characters; the limit is {max}"
            )));
        }
    }
    let node = store
        .node(target)?
        .ok_or_else(|| ForkError::NotFound(format!("node {target}")))?;
    let label = verdict.as_str().to_ascii_uppercase();
    let text = match &correction {
        Some(c) => format!("[CHECKPOINT: {label}] {c}"),
        None => format!("[CHECKPOINT: {label}]"),
    };
    let mut ann = Node::new(node.session, NodeType::HumanAnnotation, text);
    ann.confidence = Some(verdict.confidence());
    ann.meta.insert("verdict".into(), json!(verdict));
    ann.meta.insert("correction".into(), json!(correction));
    ann.meta.insert("target".into(), json!(target));
    let downstream = downstream_of(store, target)?;
    let ann_id = ann.id;
    let (disputed, cleared) = store.write(|w| {
        w.put_node(&ann)?;
        w.put_edge(&Edge::new(ann.id, verdict.edge(), target))?;
        let mut disputed = Vec::new();
        let mut cleared = Vec::new();
        match verdict {
            Verdict::Questionable | Verdict::Disagree => {
                for id in &downstream {
                    if let Some(mut n) = w.node(*id)? {
                        let mut marks = dispute_marks(&n);
                        marks.push(ann_id);
                        set_dispute_marks(&mut n, &marks);
                        w.put_node(&n)?;
                        disputed.push(*id);
                    }
                }
            }
            Verdict::Verified => {
                // The node itself is re-verified (all its marks go); downstream, only the
                // marks of disputes on this node go, so other disputes still show.
                for id in std::iter::once(&target).chain(downstream.iter()) {
                    let Some(mut n) = w.node(*id)? else { continue };
                    let marks = dispute_marks(&n);
                    if marks.is_empty() {
                        continue;
                    }
                    let mut kept = Vec::new();
                    for m in &marks {
                        let on_target = w.node(*m)?.is_some_and(|a| {
                            a.meta.get("target").and_then(Value::as_str)
                                == Some(target.to_string().as_str())
                        });
                        if *id != target && !on_target {
                            kept.push(*m);
                        }
                    }
                    if kept.len() != marks.len() {
                        set_dispute_marks(&mut n, &kept);
                        w.put_node(&n)?;
                        cleared.push(*id);
                    }
                }
            }
        }
        Ok((disputed, cleared))
    })?;
    let annotation = Annotation {
        id: ann.id,
        verdict,
        correction,
        created_at: ann.created_at,
    };
    Ok((
        CheckpointResult {
            session_id: node.session,
            annotation,
            alternative_branch: None,
            disputed_nodes: disputed,
            cleared_nodes: cleared,
        },
        node,
    ))
}

/// The annotations a node is marked as resting on, oldest first (`meta.disputes`).
fn dispute_marks(n: &Node) -> Vec<NodeId> {
    n.meta
        .get("disputes")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str()?.parse().ok()).collect())
        .unwrap_or_default()
}

/// Writes the marks: `meta.disputes` (all) and `meta.disputed_by` (the newest), or
/// removes both when there are none.
fn set_dispute_marks(n: &mut Node, marks: &[NodeId]) {
    match marks.last() {
        Some(last) => {
            n.meta.insert("disputes".into(), json!(marks));
            n.meta.insert("disputed_by".into(), json!(last));
        }
        None => {
            n.meta.remove("disputes");
            n.meta.remove("disputed_by");
        }
    }
}

/// Nodes that rest on `start`: reached along `influences` edges (which point downstream)
/// and back along `branches_from`, `refines`, `aggregates`, `revises` and `supersedes`
/// (which point from the derived node to its source). `answers`, `supports` and
/// `contradicts` are judgements, not derivations; annotations and correction branches
/// are never marked.
pub fn downstream_of(store: &Store, start: NodeId) -> Result<Vec<NodeId>, StoreError> {
    const DERIVED_FROM: [EdgeType; 5] = [
        EdgeType::BranchesFrom,
        EdgeType::Refines,
        EdgeType::Aggregates,
        EdgeType::Revises,
        EdgeType::Supersedes,
    ];
    let mut seen: HashSet<NodeId> = HashSet::from([start]);
    let mut queue = VecDeque::from([start]);
    let mut out = Vec::new();
    while let Some(id) = queue.pop_front() {
        let mut next: Vec<NodeId> = store
            .edges_from(id, Some(EdgeType::Influences))?
            .into_iter()
            .map(|e| e.dst)
            .collect();
        for kind in DERIVED_FROM {
            next.extend(store.edges_to(id, Some(kind))?.into_iter().map(|e| e.src));
        }
        for n in next {
            if !seen.insert(n) {
                continue;
            }
            let Some(node) = store.node(n)? else { continue };
            if node.kind == NodeType::HumanAnnotation || node.meta.contains_key("correction_of") {
                continue;
            }
            out.push(n);
            queue.push_back(n);
        }
    }
    Ok(out)
}

/// A stored fork as steering sees it.
#[derive(Clone, Debug)]
pub struct ForkRecord {
    pub session: SessionId,
    pub query: String,
    pub query_node: NodeId,
    pub styles: Vec<ForkStyle>,
    pub guidance: Vec<Guidance>,
    pub branches: Vec<BranchResult>,
}

/// Reads the branches of a fork, debate (its initial fork) or steer-refork run.
pub fn load_fork_record(store: &Store, id: RunId) -> Result<ForkRecord, ForkError> {
    let run = store
        .run(id)?
        .ok_or_else(|| ForkError::NotFound(format!("run {id}")))?;
    if !matches!(run.kind, RunKind::Fork | RunKind::Debate | RunKind::Steer) {
        return Err(ForkError::Invalid(format!(
            "run {id} is not a fork, debate or steer run"
        )));
    }
    if run.status == RunStatus::Running {
        return Err(ForkError::Invalid(format!("run {id} has not finished")));
    }
    let s = &run.summary;
    let branches = [
        &s["branches"],
        &s["initialFork"]["branches"],
        &s["result"]["branches"],
    ]
    .into_iter()
    .find(|v| v.is_array())
    .cloned()
    .ok_or_else(|| ForkError::Invalid(format!("run {id} has no branches to steer")))?;
    let branches: Vec<BranchResult> = serde_json::from_value(branches)
        .map_err(|e| ForkError::Invalid(format!("run {id} has unreadable branches: {e}")))?;
    let p = &run.params;
    let query_node = p["queryNode"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| ForkError::Invalid(format!("run {id} has no query node")))?;
    Ok(ForkRecord {
        session: run.session,
        query: p["query"].as_str().unwrap_or_default().to_string(),
        query_node,
        styles: serde_json::from_value(p["styles"].clone()).unwrap_or_default(),
        guidance: serde_json::from_value(p["guidance"].clone()).unwrap_or_default(),
        branches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conclusions_are_read_tolerantly() {
        let m = extract_object(
            "```json\n{'conclusion': 'Ship it', 'confidence': '80%', 'keyInsights': 'one', 'risks': [],}\n```",
        )
        .unwrap_or_default();
        let c = parse_conclusion(&m).unwrap_or_default();
        assert_eq!(c.conclusion, "Ship it");
        assert!((c.confidence - 0.8).abs() < 1e-9);
        assert_eq!(c.key_insights, vec!["one".to_string()]);
        assert!(parse_conclusion(&Map::new()).is_err());
    }

    #[test]
    fn comparisons_drop_unknown_styles_and_default_levels() {
        let m = extract_object(
            r#"{"convergencePoints": [{"topic": "t", "agreement": "FULL", "styles": ["Conservative", "wizard"]}],
                "divergencePoints": [{"topic": "d", "positions": [{"style": "aggressive", "position": "p", "confidence": 70}], "significance": "huge"}],
                "metaInsight": "m", "recommendedApproach": {"style": "balanced", "rationale": "r", "confidence": 0.6}}"#,
        )
        .unwrap_or_default();
        let c = parse_comparison(&m);
        assert_eq!(c.convergence_points[0].agreement_level, Agreement::Full);
        assert_eq!(
            c.convergence_points[0].styles,
            vec![ForkStyle::Conservative]
        );
        assert_eq!(c.divergence_points[0].significance, Significance::Medium);
        assert!((c.divergence_points[0].positions[0].confidence - 0.7).abs() < 1e-9);
        assert_eq!(
            c.recommended_approach.map(|r| r.style),
            Some(ForkStyle::Balanced)
        );
    }

    #[test]
    fn styles_parse_case_insensitively() {
        assert_eq!(
            "Contrarian".parse::<ForkStyle>().ok(),
            Some(ForkStyle::Contrarian)
        );
        assert!("wizard".parse::<ForkStyle>().is_err());
    }
}
