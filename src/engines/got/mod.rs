//! Graph of Thoughts: a scored search over model-generated thoughts (bfs, dfs with
//! backtracking, best-first), with pruning, aggregation and live steering over channels.
//!
//! This file holds the types, the parameters and the engine's entry point; `search` keeps
//! the state of one running search (thoughts, steering, model calls), `strategies` walks
//! it, `parse` reads the model's answers, and `call` is the one-shot model call the other
//! engines share.

mod call;
mod parse;
mod search;
mod strategies;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::engines::llm::{Effort, LlmError, Provider};
use crate::store::{
    NodeId, Run, RunId, RunKind, RunStatus, Session, SessionId, SessionSource, Store, StoreError,
};

pub use call::CallSettings;
pub(crate) use call::{call_model, json_object, number};
pub use parse::{MergedThought, ProposedThoughts, ThoughtScore};
#[cfg(all(test, feature = "local"))]
pub(crate) use parse::{merged_schema, proposed_schema, score_schema};
use search::Search;

/// Seed 000 GoT, Flow 4 step 1: the root thought is the problem itself, verified with score
/// 1.0.
const ROOT_SCORE: f64 = 1.0;
/// Seed 000 GoT: aggregation merges 2+ thoughts, so it needs at least two.
const MIN_MERGE: usize = 2;
/// Seed 000 `POST /api/got`: `graphState.bestThoughts` lists the top 3 thought ids.
const BEST_THOUGHTS: usize = 3;

/// How the search picks the next thought to expand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Level by level, keeping the top k of each level.
    Bfs,
    /// Deepest first, best child first, backtracking when a branch dies.
    Dfs,
    /// Always the highest-priority open thought.
    BestFirst,
}

impl Strategy {
    /// Every strategy, in the order the seed lists them.
    pub const ALL: [Strategy; 3] = [Strategy::Bfs, Strategy::Dfs, Strategy::BestFirst];

    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Bfs => "bfs",
            Strategy::Dfs => "dfs",
            Strategy::BestFirst => "best_first",
        }
    }
}

/// Where a thought is in its lifecycle: generated → evaluated → verified / rejected /
/// aggregated (merged into a synthesis that replaced it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThoughtState {
    Generated,
    Evaluated,
    Verified,
    Rejected,
    Aggregated,
}

impl ThoughtState {
    pub fn as_str(self) -> &'static str {
        match self {
            ThoughtState::Generated => "generated",
            ThoughtState::Evaluated => "evaluated",
            ThoughtState::Verified => "verified",
            ThoughtState::Rejected => "rejected",
            ThoughtState::Aggregated => "aggregated",
        }
    }
}

/// One thought of the graph; stored as a `got_thought` node with the same id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thought {
    pub id: NodeId,
    /// The thought it was generated from (none for the root and syntheses).
    pub parent: Option<NodeId>,
    /// The thoughts a synthesis merges (empty otherwise).
    pub sources: Vec<NodeId>,
    pub content: String,
    pub score: Option<f64>,
    pub state: ThoughtState,
    pub depth: u32,
    /// Pinned thoughts are never pruned.
    pub pinned: bool,
    /// Added to the score when ordering the search.
    pub boost: f64,
    /// The evaluator's one-line reason for the score.
    pub reasoning: Option<String>,
}

impl Thought {
    /// Search priority: score plus boost.
    pub fn priority(&self) -> f64 {
        self.score.unwrap_or(0.0) + self.boost
    }
}

/// `[got]`: the engine's defaults for each search parameter, the largest value it accepts
/// for each (the smallest is 1), and its pruning, aggregation and steering constants. The
/// per-search [`GotParams`] start from these.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GotTuning {
    /// Seed 000 GoT: `bfs` when none is given.
    pub strategy: Strategy,
    /// Seed 000 GoT: maxDepth 1–20, default 5.
    pub max_depth: u32,
    pub max_depth_limit: u32,
    /// Seed 000 GoT: branchingFactor 1–10, default 3.
    pub branching_factor: u32,
    pub branching_factor_limit: u32,
    /// Seed 000 GoT: maxThoughts 1–100, default 50.
    pub max_thoughts: u32,
    pub max_thoughts_limit: u32,
    /// Seed 000 GoT: enableAggregation, default true.
    pub enable_aggregation: bool,
    /// Seed 000 GoT: thoughts scoring below pruneThreshold 0.3 are rejected.
    pub prune_threshold: f64,
    /// Seed 000 GoT: best-first aggregates once 3+ open thoughts score high.
    pub aggregation_min_thoughts: usize,
    /// The score that counts as high for aggregation (seed 000 GoT says "high-score"; the
    /// number is glassbox's reading of it).
    pub aggregation_min_score: f64,
    /// Priority a "boost" adds to a thought in the interactive view (glassbox's own).
    pub boost_step: f64,
    /// Seed 000 GoT: effort `high` for each generation and evaluation call.
    pub effort: Effort,
    /// Answer-token cap of each call (the `[generation] max_tokens` default).
    pub max_tokens: u32,
}

impl Default for GotTuning {
    fn default() -> Self {
        Self {
            strategy: Strategy::Bfs,
            max_depth: 5,
            max_depth_limit: 20,
            branching_factor: 3,
            branching_factor_limit: 10,
            max_thoughts: 50,
            max_thoughts_limit: 100,
            enable_aggregation: true,
            prune_threshold: 0.3,
            aggregation_min_thoughts: 3,
            aggregation_min_score: 0.7,
            boost_step: 0.5,
            effort: Effort::High,
            max_tokens: 1024,
        }
    }
}

/// Search parameters (`/api/got` request fields).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GotParams {
    pub strategy: Strategy,
    pub max_depth: u32,
    pub branching_factor: u32,
    pub max_thoughts: u32,
    pub enable_aggregation: bool,
    pub prune_threshold: f64,
    /// Stop once this many tokens were used; none for no limit.
    pub token_budget: Option<u64>,
}

impl GotParams {
    /// The defaults from `[got]`.
    pub fn from_config(cfg: &GotTuning) -> Self {
        Self {
            strategy: cfg.strategy,
            max_depth: cfg.max_depth,
            branching_factor: cfg.branching_factor,
            max_thoughts: cfg.max_thoughts,
            enable_aggregation: cfg.enable_aggregation,
            prune_threshold: cfg.prune_threshold,
            token_budget: None,
        }
    }

    /// Checks every parameter against the ranges in `[got]`.
    pub fn validate(&self, cfg: &GotTuning) -> Result<(), GotError> {
        let check = |name: &'static str, value: u32, max: u32| {
            if (1..=max).contains(&value) {
                Ok(())
            } else {
                Err(GotError::OutOfRange {
                    name,
                    value: value.to_string(),
                    range: format!("1–{max}"),
                })
            }
        };
        check("maxDepth", self.max_depth, cfg.max_depth_limit)?;
        check(
            "branchingFactor",
            self.branching_factor,
            cfg.branching_factor_limit,
        )?;
        check("maxThoughts", self.max_thoughts, cfg.max_thoughts_limit)?;
        if !(0.0..=1.0).contains(&self.prune_threshold) {
            return Err(GotError::OutOfRange {
                name: "pruneThreshold",
                value: self.prune_threshold.to_string(),
                range: "0–1".into(),
            });
        }
        Ok(())
    }
}

/// Failures of a GoT run.
#[derive(Debug, thiserror::Error)]
pub enum GotError {
    #[error("{name} = {value} is out of range (allowed {range})")]
    OutOfRange {
        name: &'static str,
        value: String,
        range: String,
    },
    #[error("the problem is empty")]
    EmptyProblem,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("model call failed: {0}")]
    Model(#[from] LlmError),
}

/// What an interactive view may ask of a running search.
#[derive(Clone, Debug, PartialEq)]
pub enum GotControl {
    Pause,
    Resume,
    /// While paused: expand exactly one more thought, then stay paused.
    Step,
    /// Never prune this thought; a rejected one is revived.
    Pin(NodeId),
    /// Reject this thought by hand; it is not expanded.
    Prune(NodeId),
    /// Raise (or with a negative amount lower) a thought's priority.
    Boost {
        id: NodeId,
        amount: f64,
    },
    /// Stop once this many tokens were used; none for no limit.
    TokenBudget(Option<u64>),
}

/// Progress of a running search, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum GotEvent {
    Started {
        session: SessionId,
        run: RunId,
        root: NodeId,
    },
    /// A thought was created or changed (score, state, pin, boost).
    Thought(Thought),
    /// The search is about to expand this thought.
    Expanding(NodeId),
    Paused,
    Resumed,
    /// Tokens used so far.
    Tokens(u64),
    BudgetExhausted {
        used: u64,
        limit: u64,
    },
}

/// Counts of one search (`stats` of the `/api/got` response).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GotStats {
    pub total_thoughts: u64,
    pub thoughts_explored: u64,
    pub thoughts_pruned: u64,
    pub aggregations_made: u64,
    pub max_depth_reached: u32,
    pub total_tokens: u64,
    pub total_duration_ms: u64,
}

/// Size of the graph and its best thoughts (`graphState` of the response).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphState {
    pub thought_count: u64,
    pub edge_count: u64,
    /// Top 3 thought ids by score.
    pub best_thoughts: Vec<NodeId>,
}

/// The outcome of a search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GotResult {
    pub answer: String,
    pub confidence: f64,
    pub reasoning_summary: String,
    pub stats: GotStats,
    pub graph_state: GraphState,
    pub session: SessionId,
    pub run: RunId,
    /// Every thought, in creation order.
    pub thoughts: Vec<Thought>,
    /// Thoughts in the order they were expanded.
    pub expanded: Vec<NodeId>,
    pub best: Option<NodeId>,
    /// Stopped early by cancellation or the token budget.
    pub interrupted: bool,
}

/// One search to run.
#[derive(Clone, Debug)]
pub struct GotRequest {
    pub problem: String,
    /// Add the thoughts to this session; a new one is made otherwise.
    pub session: Option<SessionId>,
    pub params: GotParams,
    /// Start paused (the view then steps or resumes it).
    pub start_paused: bool,
}

/// The three prompts the search uses.
#[derive(Clone, Debug, Default)]
pub struct GotPrompts {
    pub generate: String,
    pub evaluate: String,
    pub aggregate: String,
}

impl GotPrompts {
    /// The `got/*` prompts of a loaded prompt set.
    pub fn from(prompts: &crate::engines::prompts::Prompts) -> Self {
        Self {
            generate: prompts.get("got/generate").to_string(),
            evaluate: prompts.get("got/evaluate").to_string(),
            aggregate: prompts.get("got/aggregate").to_string(),
        }
    }
}

/// Runs Graph of Thoughts searches against one provider, persisting as it goes.
pub struct GotEngine {
    pub store: Store,
    pub provider: Arc<dyn Provider>,
    pub call: CallSettings,
    pub prompts: GotPrompts,
    pub config: GotTuning,
}

impl GotEngine {
    /// Runs one search. Progress goes to `events`; `controls` steers it (a closed control
    /// channel just means nobody steers). Cancellation ends it early with what was found.
    pub async fn run(
        &self,
        req: GotRequest,
        events: mpsc::UnboundedSender<GotEvent>,
        controls: mpsc::UnboundedReceiver<GotControl>,
        cancel: CancellationToken,
    ) -> Result<GotResult, GotError> {
        if req.problem.trim().is_empty() {
            return Err(GotError::EmptyProblem);
        }
        req.params.validate(&self.config)?;
        let session = match req.session {
            Some(s) => s,
            None => {
                let mut s = Session::new(
                    crate::engines::orchestrator::title_from(&req.problem),
                    SessionSource::Glassbox,
                );
                s.provider = Some(self.provider.name().to_string());
                s.model = Some(self.call.model.clone());
                let id = s.id;
                self.store.write_async(move |w| w.put_session(&s)).await?;
                id
            }
        };
        let mut run = Run {
            id: RunId::new(),
            session,
            kind: RunKind::Got,
            params: json!({"problem": req.problem, "params": req.params}),
            summary: Value::Null,
            status: RunStatus::Running,
            created_at: Utc::now(),
            finished_at: None,
        };
        let stored = run.clone();
        self.store.write_async(move |w| w.put_run(&stored)).await?;
        let mut search = Search {
            engine: self,
            problem: req.problem.clone(),
            params: req.params.clone(),
            session,
            run: run.id,
            thoughts: Vec::new(),
            index: HashMap::new(),
            expanded: Vec::new(),
            edges: 0,
            aggregations: 0,
            tokens: 0,
            budget: req.params.token_budget,
            paused: req.start_paused,
            step: false,
            revived: Vec::new(),
            reorder: false,
            stopped: false,
            interrupted: false,
            events,
            controls,
            cancel,
        };
        let started = Instant::now();
        let outcome = search.run().await;
        let result = search.result(started.elapsed().as_millis() as u64);
        run.finished_at = Some(Utc::now());
        run.status = match &outcome {
            Err(e) => RunStatus::Failed {
                error: e.to_string(),
            },
            Ok(()) if result.interrupted => RunStatus::Interrupted,
            Ok(()) => RunStatus::Done,
        };
        run.summary = json!({
            "answer": result.answer,
            "confidence": result.confidence,
            "reasoningSummary": result.reasoning_summary,
            "stats": result.stats,
            "graphState": result.graph_state,
            "best": result.best,
            "expanded": result.expanded,
        });
        self.store.write_async(move |w| w.put_run(&run)).await?;
        outcome.map(|()| result)
    }
}
