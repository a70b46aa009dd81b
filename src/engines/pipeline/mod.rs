//! DeepEx (seed 003): a multi-layer reasoning pipeline whose every layer is visible. The
//! cortex classifies the question; instant answers in one pass, deep runs five layers
//! (decomposition → primary solver → fast critic → refiner → confidence gate) and escalates
//! to ultra-deep when its confidence is low, ultra-deep runs three solvers at once and then
//! attacks, verifies and synthesizes their answers.
//!
//! Every layer is a `pipeline_layer` node, written as it streams; the run's state is the
//! nodes themselves, so `resume` replays the flow over the finished layers (never running
//! one twice) and continues at the first unfinished one.
//!
//! This file holds the types and parameters; `layer` runs one layer, `flow` the modes,
//! `grounding` the search, `artifacts` the structured answers.

pub mod artifacts;
mod flow;
pub mod grounding;
mod layer;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::engines::llm::{LlmError, Provider};
use crate::store::{NodeId, RunId, SessionId, Store, StoreError};
pub use artifacts::Classification;
pub(crate) use grounding::searxng;
pub use grounding::{Grounder, SearchParams, Source};

/// Which pipeline runs (seed 003 `ReasoningMode`, plus `auto`: the cortex decides).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Auto,
    Instant,
    Deep,
    UltraDeep,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Auto, Mode::Instant, Mode::Deep, Mode::UltraDeep];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Instant => "instant",
            Mode::Deep => "deep",
            Mode::UltraDeep => "ultra_deep",
        }
    }

    /// The next mode in [`Mode::ALL`], wrapping (the TUI's mode switch).
    pub fn next(self) -> Mode {
        let i = Mode::ALL.iter().position(|m| *m == self).unwrap_or(0);
        Mode::ALL[(i + 1) % Mode::ALL.len()]
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "auto" => Ok(Mode::Auto),
            "instant" => Ok(Mode::Instant),
            "deep" => Ok(Mode::Deep),
            "ultra_deep" | "ultra" => Ok(Mode::UltraDeep),
            other => Err(format!(
                "unknown mode '{other}' (expected auto, instant, deep or ultra-deep)"
            )),
        }
    }
}

/// One layer of a pipeline (seed 003 `ThoughtLayer`), in the order they can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    Cortex,
    WebSearch,
    Instant,
    Decomposition,
    PrimarySolver,
    FastCritic,
    Refiner,
    ConfidenceGate,
    DeepDecomposition,
    SolverA,
    SolverB,
    SolverC,
    Skeptic,
    Verifier,
    Synthesizer,
    MetaCritic,
    ReSynthesis,
    FinalConfidence,
}

/// The parallel group of ultra-deep's three solvers (seed 003 §8).
pub const SOLVER_GROUP: &str = "ultra_solvers";

impl Layer {
    pub const ALL: [Layer; 18] = [
        Layer::Cortex,
        Layer::WebSearch,
        Layer::Instant,
        Layer::Decomposition,
        Layer::PrimarySolver,
        Layer::FastCritic,
        Layer::Refiner,
        Layer::ConfidenceGate,
        Layer::DeepDecomposition,
        Layer::SolverA,
        Layer::SolverB,
        Layer::SolverC,
        Layer::Skeptic,
        Layer::Verifier,
        Layer::Synthesizer,
        Layer::MetaCritic,
        Layer::ReSynthesis,
        Layer::FinalConfidence,
    ];
    /// The five layers of deep mode.
    pub const DEEP: [Layer; 5] = [
        Layer::Decomposition,
        Layer::PrimarySolver,
        Layer::FastCritic,
        Layer::Refiner,
        Layer::ConfidenceGate,
    ];
    pub const SOLVERS: [Layer; 3] = [Layer::SolverA, Layer::SolverB, Layer::SolverC];
    /// The layers ultra-deep mode plans (re-synthesis joins them only when the meta-critic
    /// finds gaps).
    pub const ULTRA: [Layer; 9] = [
        Layer::DeepDecomposition,
        Layer::SolverA,
        Layer::SolverB,
        Layer::SolverC,
        Layer::Skeptic,
        Layer::Verifier,
        Layer::Synthesizer,
        Layer::MetaCritic,
        Layer::FinalConfidence,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Cortex => "cortex",
            Layer::WebSearch => "web_search",
            Layer::Instant => "instant",
            Layer::Decomposition => "decomposition",
            Layer::PrimarySolver => "primary_solver",
            Layer::FastCritic => "fast_critic",
            Layer::Refiner => "refiner",
            Layer::ConfidenceGate => "confidence_gate",
            Layer::DeepDecomposition => "deep_decomposition",
            Layer::SolverA => "solver_a",
            Layer::SolverB => "solver_b",
            Layer::SolverC => "solver_c",
            Layer::Skeptic => "skeptic",
            Layer::Verifier => "verifier",
            Layer::Synthesizer => "synthesizer",
            Layer::MetaCritic => "meta_critic",
            Layer::ReSynthesis => "re_synthesis",
            Layer::FinalConfidence => "final_confidence",
        }
    }

    /// The human-readable name shown while it runs.
    pub fn label(self) -> &'static str {
        match self {
            Layer::Cortex => "Classifying",
            Layer::WebSearch => "Searching sources",
            Layer::Instant => "Answering",
            Layer::Decomposition => "Decomposing problem",
            Layer::PrimarySolver => "Solving",
            Layer::FastCritic => "Critiquing",
            Layer::Refiner => "Refining",
            Layer::ConfidenceGate => "Gauging confidence",
            Layer::DeepDecomposition => "Deep decomposition",
            Layer::SolverA => "Solver A · mainstream",
            Layer::SolverB => "Solver B · failure modes",
            Layer::SolverC => "Solver C · contrarian",
            Layer::Skeptic => "Skeptic",
            Layer::Verifier => "Verifier",
            Layer::Synthesizer => "Synthesizing",
            Layer::MetaCritic => "Meta-critique",
            Layer::ReSynthesis => "Re-synthesizing",
            Layer::FinalConfidence => "Final confidence",
        }
    }

    /// Its place in [`Layer::ALL`]: the node's `order`, stable across a resume.
    pub fn order(self) -> u32 {
        Layer::ALL.iter().position(|l| *l == self).unwrap_or(0) as u32
    }

    pub fn parallel_group(self) -> Option<&'static str> {
        Layer::SOLVERS.contains(&self).then_some(SOLVER_GROUP)
    }

    /// Whether its answer is a JSON artifact (else free text).
    pub fn structured(self) -> bool {
        matches!(
            self,
            Layer::Cortex
                | Layer::Decomposition
                | Layer::FastCritic
                | Layer::ConfidenceGate
                | Layer::DeepDecomposition
                | Layer::Skeptic
                | Layer::Verifier
                | Layer::MetaCritic
                | Layer::FinalConfidence
        )
    }

    /// Its prompt's name under `configs/prompts/`.
    pub fn prompt(self) -> String {
        format!("pipeline/{}", self.as_str())
    }
}

impl FromStr for Layer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Layer::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| format!("unknown layer '{s}'"))
    }
}

/// One layer's sampling: temperature, thinking budget (0 = none) and answer-token cap.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerSettings {
    pub temperature: f64,
    pub thinking: u32,
    pub max_tokens: u32,
}

const fn ls(temperature: f64, thinking: u32, max_tokens: u32) -> LayerSettings {
    LayerSettings {
        temperature,
        thinking,
        max_tokens,
    }
}

/// `[pipeline.layers]`: each layer's settings (seed 003 §5.3/§5.4 tables).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerTable {
    pub cortex: LayerSettings,
    pub instant: LayerSettings,
    pub decomposition: LayerSettings,
    pub primary_solver: LayerSettings,
    pub fast_critic: LayerSettings,
    pub refiner: LayerSettings,
    pub confidence_gate: LayerSettings,
    pub deep_decomposition: LayerSettings,
    pub solver_a: LayerSettings,
    pub solver_b: LayerSettings,
    pub solver_c: LayerSettings,
    pub skeptic: LayerSettings,
    pub verifier: LayerSettings,
    pub synthesizer: LayerSettings,
    pub meta_critic: LayerSettings,
    pub re_synthesis: LayerSettings,
    pub final_confidence: LayerSettings,
}

impl Default for LayerTable {
    fn default() -> Self {
        Self {
            cortex: ls(0.1, 0, 512),
            instant: ls(0.3, 2048, 1024),
            decomposition: ls(0.3, 2048, 768),
            primary_solver: ls(0.3, 4096, 1024),
            fast_critic: ls(0.3, 1024, 768),
            refiner: ls(0.3, 2048, 1024),
            confidence_gate: ls(0.3, 0, 512),
            deep_decomposition: ls(0.3, 2048, 768),
            solver_a: ls(0.3, 4096, 1024),
            solver_b: ls(0.5, 4096, 1024),
            solver_c: ls(0.8, 4096, 1024),
            skeptic: ls(0.3, 2048, 768),
            verifier: ls(0.3, 2048, 768),
            synthesizer: ls(0.3, 2048, 1024),
            meta_critic: ls(0.3, 1024, 768),
            re_synthesis: ls(0.3, 2048, 1024),
            final_confidence: ls(0.3, 0, 512),
        }
    }
}

impl LayerTable {
    /// The settings of `layer` (the web search makes no model call: the cortex's).
    pub fn get(&self, layer: Layer) -> LayerSettings {
        match layer {
            Layer::Cortex | Layer::WebSearch => self.cortex,
            Layer::Instant => self.instant,
            Layer::Decomposition => self.decomposition,
            Layer::PrimarySolver => self.primary_solver,
            Layer::FastCritic => self.fast_critic,
            Layer::Refiner => self.refiner,
            Layer::ConfidenceGate => self.confidence_gate,
            Layer::DeepDecomposition => self.deep_decomposition,
            Layer::SolverA => self.solver_a,
            Layer::SolverB => self.solver_b,
            Layer::SolverC => self.solver_c,
            Layer::Skeptic => self.skeptic,
            Layer::Verifier => self.verifier,
            Layer::Synthesizer => self.synthesizer,
            Layer::MetaCritic => self.meta_critic,
            Layer::ReSynthesis => self.re_synthesis,
            Layer::FinalConfidence => self.final_confidence,
        }
    }
}

/// What `glassbox ask` does when no `--mode` is given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DefaultMode {
    /// A plain think turn (no pipeline).
    #[default]
    Plain,
    Auto,
    Instant,
    Deep,
    UltraDeep,
}

impl DefaultMode {
    /// The pipeline mode, or `None` for a plain turn.
    pub fn mode(self) -> Option<Mode> {
        match self {
            DefaultMode::Plain => None,
            DefaultMode::Auto => Some(Mode::Auto),
            DefaultMode::Instant => Some(Mode::Instant),
            DefaultMode::Deep => Some(Mode::Deep),
            DefaultMode::UltraDeep => Some(Mode::UltraDeep),
        }
    }
}

/// `[pipeline]`: the DeepEx engine's numbers (seed 003).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineParams {
    /// What `ask` runs without `--mode` (glassbox's own; `plain` keeps today's turn).
    pub default_mode: DefaultMode,
    /// Seed 003 §5.5: deep escalates to ultra-deep below this confidence.
    pub escalation_confidence: u32,
    /// Seed 003 §5.5: whether deep escalates at all.
    pub escalate: bool,
    /// Seed 003 §5.2: the confidence an instant answer is saved with.
    pub instant_confidence: u32,
    /// Asks again after a layer's malformed JSON before it is marked failed (the issue's
    /// "one repair retry").
    pub repair_retries: u32,
    /// Longest excerpt of an earlier layer's text in a later layer's prompt, in characters
    /// (glassbox's own: keeps ultra-deep's synthesis inside a small model's context).
    pub input_chars: usize,
    /// Seed 003 §14: turns of conversation history sent with a continued session, and the
    /// characters kept of each.
    pub history_turns: usize,
    pub history_chars: usize,
    pub layers: LayerTable,
}

impl Default for PipelineParams {
    fn default() -> Self {
        Self {
            default_mode: DefaultMode::Plain,
            escalation_confidence: 70,
            escalate: true,
            instant_confidence: 95,
            repair_retries: 1,
            input_chars: 1500,
            history_turns: 16,
            history_chars: 2000,
            layers: LayerTable::default(),
        }
    }
}

/// The prompts of every layer, by layer, plus the repair instruction.
#[derive(Clone, Debug, Default)]
pub struct PipelinePrompts {
    pub layers: BTreeMap<Layer, String>,
    pub repair: String,
}

impl PipelinePrompts {
    pub fn from(prompts: &crate::engines::prompts::Prompts) -> Self {
        Self {
            layers: Layer::ALL
                .into_iter()
                .filter(|l| *l != Layer::WebSearch)
                .map(|l| (l, prompts.get(&l.prompt()).to_string()))
                .collect(),
            repair: prompts.get("pipeline/repair").to_string(),
        }
    }

    pub fn get(&self, layer: Layer) -> &str {
        self.layers.get(&layer).map(String::as_str).unwrap_or("")
    }
}

/// How a layer ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerState {
    Complete,
    /// Its JSON could not be read even after the repair retry; the raw text is kept and the
    /// pipeline went on without it.
    Failed,
}

/// Progress of a pipeline, in order (serialized with seed 003's SSE names and fields; the
/// CLI prints these as `--json` lines).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PipelineEvent {
    Start {
        #[serde(rename = "runId")]
        run: RunId,
        #[serde(rename = "sessionId")]
        session: SessionId,
        mode: Mode,
        /// Set when this continues an earlier run.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        resumed: bool,
    },
    Classification {
        metadata: Classification,
    },
    ModeSelected {
        mode: Mode,
    },
    LayerStart {
        layer: Layer,
        layer_label: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        parallel_group: Option<&'static str>,
        node: NodeId,
        order: u32,
    },
    LayerChunk {
        layer: Layer,
        content: String,
        /// The model's thinking rather than its answer.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        thinking: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        parallel_group: Option<&'static str>,
    },
    LayerArtifact {
        layer: Layer,
        artifact: Value,
    },
    LayerComplete {
        layer: Layer,
        layer_label: &'static str,
        state: LayerState,
        /// Why a failed layer failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Finished in an earlier attempt of this run; not run again.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        resumed: bool,
        duration_ms: u64,
    },
    Escalation {
        content: String,
    },
    ParallelStart {
        parallel_group: &'static str,
    },
    FinalChunk {
        content: String,
    },
    FinalComplete(Final),
}

/// The end of a pipeline (`final_complete`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Final {
    /// 0–100; none when the confidence layer failed.
    pub confidence: Option<u32>,
    pub assumptions: Vec<String>,
    pub uncertainty_notes: Vec<String>,
    pub sources: Vec<Source>,
    /// The mode that produced the answer.
    pub mode: Option<Mode>,
    pub was_escalated: bool,
    /// Why deep escalated, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<String>,
    /// Layers whose JSON could not be read; the pipeline went on without them.
    pub failed_layers: Vec<Layer>,
    /// What the failures meant, one line each ("no critique: the refiner ran without one").
    pub notes: Vec<String>,
}

/// A finished pipeline.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineOutcome {
    pub run: RunId,
    pub session: SessionId,
    pub query: NodeId,
    pub response: NodeId,
    pub answer: String,
    pub fin: Final,
    /// Every layer node of the run, in the order they ran.
    pub layers: Vec<(Layer, NodeId)>,
}

/// One pipeline to run.
#[derive(Clone, Debug)]
pub struct PipelineRequest {
    pub question: String,
    pub mode: Mode,
    /// Continue this session (its history goes to every layer); a new one otherwise.
    pub session: Option<SessionId>,
    /// Whether deep may escalate (`[pipeline] escalate` unless a flag says otherwise).
    pub escalate: bool,
}

/// Failures of a pipeline. A run that fails this way is kept and can be resumed.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("the question is empty")]
    EmptyQuestion,
    #[error("run {0} not found")]
    NoRun(RunId),
    #[error("run {0} is not a pipeline run")]
    NotPipeline(RunId),
    #[error("run {0} already finished")]
    Finished(RunId),
    #[error("run {run} is still running ({worker}); stop that process first")]
    Busy { run: RunId, worker: String },
    #[error("run {run}: {why}")]
    Unreadable { run: RunId, why: String },
    #[error("layer {layer}: {error} (resume with: glassbox ask --resume {run})")]
    Layer {
        layer: &'static str,
        run: RunId,
        error: LlmError,
    },
    #[error("cancelled (resume with: glassbox ask --resume {0})")]
    Cancelled(RunId),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl PipelineError {
    /// The run to resume, when the failure left one.
    pub fn resumable(&self) -> Option<RunId> {
        match self {
            PipelineError::Layer { run, .. } | PipelineError::Cancelled(run) => Some(*run),
            _ => None,
        }
    }
}

/// How the provider takes thinking budgets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayerThinking {
    /// The thinking budget counts inside `max_tokens` (Anthropic): it is added on top.
    pub inside_max_tokens: bool,
    /// Structured layers think first (off for the embedded model: a reasoning preamble does
    /// not help a small model write JSON).
    pub for_structured: bool,
    /// Free-text layers think first.
    pub for_text: bool,
}

/// Runs DeepEx pipelines against one provider, persisting every layer as it goes.
pub struct PipelineEngine {
    pub store: Store,
    pub provider: Arc<dyn Provider>,
    pub model: String,
    pub params: PipelineParams,
    pub prompts: PipelinePrompts,
    pub grounder: Grounder,
    pub thinking: LayerThinking,
    pub seed: Option<u64>,
}

impl PipelineEngine {
    /// Runs a new pipeline. Progress goes to `events`; cancelling stops it at the current
    /// layer, leaving a run that [`PipelineEngine::resume`] continues.
    pub async fn run(
        &self,
        req: PipelineRequest,
        events: mpsc::UnboundedSender<PipelineEvent>,
        cancel: CancellationToken,
    ) -> Result<PipelineOutcome, PipelineError> {
        if req.question.trim().is_empty() {
            return Err(PipelineError::EmptyQuestion);
        }
        let state = flow::RunState::create(self, &req).await?;
        flow::drive(self, state, events, cancel).await
    }

    /// Continues `run` from its first unfinished layer.
    pub async fn resume(
        &self,
        run: RunId,
        events: mpsc::UnboundedSender<PipelineEvent>,
        cancel: CancellationToken,
    ) -> Result<PipelineOutcome, PipelineError> {
        let state = flow::RunState::load(self, run).await?;
        flow::drive(self, state, events, cancel).await
    }
}

/// The layer nodes of a pipeline run and what they hold, for views and `sessions show`.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerRecord {
    pub layer: Layer,
    pub node: crate::store::Node,
}

impl LayerRecord {
    pub fn thinking(&self) -> &str {
        self.node
            .meta
            .get(layer::THINKING)
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub fn artifact(&self) -> Option<&Value> {
        self.node.meta.get(layer::ARTIFACT).filter(|v| !v.is_null())
    }

    pub fn duration_ms(&self) -> Option<u64> {
        self.node.meta.get(layer::DURATION).and_then(Value::as_u64)
    }
}

/// The layers of `run`, in layer order.
pub fn run_layers(store: &Store, run: RunId) -> Result<Vec<LayerRecord>, StoreError> {
    let Some(r) = store.run(run)? else {
        return Ok(Vec::new());
    };
    Ok(layer::layer_nodes(&store.session_nodes(r.session)?, run)
        .into_iter()
        .map(|(layer, node)| LayerRecord { layer, node })
        .collect())
}
