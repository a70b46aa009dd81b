//! Graph of Thoughts: a scored search over model-generated thoughts (bfs, dfs with
//! backtracking, best-first), with pruning, aggregation and live steering over channels.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::engines::llm::{
    CallCtx, ChatRequest, Effort, LlmError, Message, Provider, StreamEvent, ThinkingMode,
};
use crate::store::{
    Edge, EdgeType, Node, NodeId, NodeType, Run, RunId, RunKind, RunStatus, Session, SessionId,
    SessionSource, Store, StoreError,
};

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
    /// The score that counts as high for aggregation.
    pub aggregation_min_score: f64,
    /// Priority a "boost" adds to a thought in the interactive view.
    pub boost_step: f64,
    /// Seed 000 GoT: effort `high` for each generation and evaluation call.
    pub effort: Effort,
    /// Answer-token cap of each call.
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

/// Settings of every model call an engine makes.
#[derive(Clone, Debug, PartialEq)]
pub struct CallSettings {
    pub model: String,
    pub thinking: ThinkingMode,
    pub effort: Option<Effort>,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    pub seed: Option<u64>,
}

impl CallSettings {
    /// Plain calls without thinking.
    pub fn new(model: impl Into<String>, max_tokens: u32) -> Self {
        Self {
            model: model.into(),
            thinking: ThinkingMode::Off,
            effort: None,
            max_tokens,
            temperature: Some(0.0),
            seed: None,
        }
    }
}

/// The answer text of one model call and the tokens it used.
pub(crate) struct Reply {
    pub text: String,
    pub tokens: u64,
}

/// Runs one model call to completion; a tool call's input counts as the answer text.
pub(crate) async fn call_model(
    provider: &dyn Provider,
    settings: &CallSettings,
    system: &str,
    user: String,
    cancel: &CancellationToken,
) -> Result<Reply, LlmError> {
    use futures::StreamExt;
    let mut req = ChatRequest::new(settings.model.clone(), vec![Message::user(user)]);
    req.system = (!system.is_empty()).then(|| system.to_string());
    req.max_tokens = settings.max_tokens;
    req.thinking = settings.thinking;
    req.effort = settings.effort;
    req.temperature = settings.temperature;
    req.seed = settings.seed;
    req.json_mode = true;
    let ctx = CallCtx {
        cancel: cancel.clone(),
        raw: None,
    };
    let mut stream = provider.stream(req, ctx);
    let mut text = String::new();
    let mut usage = None;
    while let Some(ev) = stream.next().await {
        match ev {
            StreamEvent::TextDelta { text: t } => text.push_str(&t),
            StreamEvent::ToolUse { input, .. } => text.push_str(&input.to_string()),
            StreamEvent::Usage { usage: u } => usage = Some(u),
            StreamEvent::Error { error } => return Err(error),
            StreamEvent::Stop { .. } => break,
            _ => {}
        }
    }
    if cancel.is_cancelled() {
        return Err(LlmError::Cancelled);
    }
    let tokens = usage.map_or(0, |u| {
        u.input_tokens + u.output_tokens + u.thinking_tokens.unwrap_or(0)
    });
    Ok(Reply { text, tokens })
}

/// The first JSON object in a model's answer, if any.
pub(crate) fn json_object(text: &str) -> Option<Map<String, Value>> {
    crate::engines::json_extract::extract_object(text).ok()
}

/// A number field that may arrive as a number or a numeric string.
pub(crate) fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().trim_end_matches('%').parse().ok(),
        _ => None,
    }
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
                self.store.write(|w| w.put_session(&s))?;
                s.id
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
        self.store.write(|w| w.put_run(&run))?;
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
        self.store.write(|w| w.put_run(&run))?;
        outcome.map(|()| result)
    }
}

/// The state of one running search.
struct Search<'e> {
    engine: &'e GotEngine,
    problem: String,
    params: GotParams,
    session: SessionId,
    run: RunId,
    thoughts: Vec<Thought>,
    index: HashMap<NodeId, usize>,
    expanded: Vec<NodeId>,
    edges: u64,
    aggregations: u64,
    tokens: u64,
    budget: Option<u64>,
    paused: bool,
    step: bool,
    /// Thoughts revived by a pin, to put back into the open set.
    revived: Vec<NodeId>,
    /// A control changed priorities: re-sort the open set.
    reorder: bool,
    stopped: bool,
    interrupted: bool,
    events: mpsc::UnboundedSender<GotEvent>,
    controls: mpsc::UnboundedReceiver<GotControl>,
    cancel: CancellationToken,
}

impl Search<'_> {
    fn emit(&self, ev: GotEvent) {
        let _ = self.events.send(ev);
    }

    fn get(&self, id: NodeId) -> Option<&Thought> {
        self.index.get(&id).map(|&i| &self.thoughts[i])
    }

    fn get_mut(&mut self, id: NodeId) -> Option<&mut Thought> {
        self.index.get(&id).map(|&i| &mut self.thoughts[i])
    }

    fn is_open(&self, id: NodeId) -> bool {
        self.get(id)
            .is_some_and(|t| t.state == ThoughtState::Verified && !self.expanded.contains(&id))
    }

    fn full(&self) -> bool {
        self.thoughts.len() as u64 >= u64::from(self.params.max_thoughts)
    }

    /// Writes a thought's node and reports it.
    fn save(&self, id: NodeId) -> Result<(), GotError> {
        let Some(t) = self.get(id) else {
            return Ok(());
        };
        let mut node = Node::new(self.session, NodeType::GotThought, t.content.clone());
        node.id = t.id;
        node.confidence = t.score;
        node.model = Some(self.engine.call.model.clone());
        let meta = [
            ("score", json!(t.score)),
            ("state", json!(t.state.as_str())),
            ("depth", json!(t.depth)),
            ("run", json!(self.run)),
            ("pinned", json!(t.pinned)),
            ("boost", json!(t.boost)),
            ("reasoning", json!(t.reasoning)),
        ];
        node.meta = meta.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        self.engine.store.write(|w| {
            // Keep the first creation time across updates.
            if let Some(old) = w.node(node.id)? {
                node.created_at = old.created_at;
            }
            w.put_node(&node)
        })?;
        self.emit(GotEvent::Thought(t.clone()));
        Ok(())
    }

    fn add(&mut self, t: Thought) -> Result<NodeId, GotError> {
        let id = t.id;
        let parent = t.parent;
        let sources = t.sources.clone();
        self.index.insert(id, self.thoughts.len());
        self.thoughts.push(t);
        self.save(id)?;
        let mut edges = Vec::new();
        if let Some(p) = parent {
            edges.push(Edge::new(id, EdgeType::BranchesFrom, p));
        }
        edges.extend(
            sources
                .iter()
                .map(|&s| Edge::new(id, EdgeType::Aggregates, s)),
        );
        self.edges += edges.len() as u64;
        self.engine.store.write(|w| {
            for e in &edges {
                w.put_edge(e)?;
            }
            Ok(())
        })?;
        Ok(id)
    }

    fn set_state(&mut self, id: NodeId, state: ThoughtState) -> Result<(), GotError> {
        if let Some(t) = self.get_mut(id) {
            t.state = state;
        }
        self.save(id)
    }

    fn apply(&mut self, c: GotControl) -> Result<(), GotError> {
        match c {
            GotControl::Pause => self.paused = true,
            GotControl::Resume => {
                if self.paused {
                    self.emit(GotEvent::Resumed);
                }
                self.paused = false;
            }
            GotControl::Step => self.step = true,
            GotControl::Pin(id) => {
                let Some(t) = self.get_mut(id) else {
                    return Ok(());
                };
                t.pinned = true;
                if t.state == ThoughtState::Rejected {
                    t.state = ThoughtState::Verified;
                }
                // Back into the open set, also when a level cut it off.
                if t.state == ThoughtState::Verified {
                    self.revived.push(id);
                }
                self.save(id)?;
            }
            GotControl::Prune(id) => {
                let Some(t) = self.get_mut(id) else {
                    return Ok(());
                };
                t.pinned = false;
                t.state = ThoughtState::Rejected;
                self.save(id)?;
            }
            GotControl::Boost { id, amount } => {
                let Some(t) = self.get_mut(id) else {
                    return Ok(());
                };
                t.boost += amount;
                self.reorder = true;
                self.save(id)?;
            }
            GotControl::TokenBudget(b) => self.budget = b,
        }
        Ok(())
    }

    /// Applies pending controls and waits while paused. False when the search must stop.
    async fn checkpoint(&mut self) -> Result<bool, GotError> {
        let mut announced = false;
        loop {
            while let Ok(c) = self.controls.try_recv() {
                self.apply(c)?;
            }
            if self.cancel.is_cancelled() {
                self.interrupted = true;
                return Ok(false);
            }
            if let Some(limit) = self.budget
                && self.tokens >= limit
            {
                self.emit(GotEvent::BudgetExhausted {
                    used: self.tokens,
                    limit,
                });
                self.interrupted = true;
                return Ok(false);
            }
            if !self.paused {
                return Ok(true);
            }
            if self.step {
                self.step = false;
                return Ok(true);
            }
            if !announced {
                self.emit(GotEvent::Paused);
                announced = true;
            }
            let cancel = self.cancel.clone();
            tokio::select! {
                c = self.controls.recv() => match c {
                    Some(c) => self.apply(c)?,
                    // Nobody can resume a search whose steering channel closed.
                    None => self.paused = false,
                },
                () = cancel.cancelled() => {}
            }
        }
    }

    /// The chain from the root to `id`.
    fn path(&self, id: NodeId) -> Vec<&Thought> {
        let mut out = Vec::new();
        let mut cur = self.get(id);
        while let Some(t) = cur {
            out.push(t);
            cur = t.parent.and_then(|p| self.get(p));
        }
        out.reverse();
        out
    }

    fn chain_text(&self, id: NodeId) -> String {
        self.path(id)
            .iter()
            .skip(1)
            .enumerate()
            .map(|(i, t)| format!("{}. {}", i + 1, t.content))
            .collect::<Vec<_>>()
            .join("\n")
    }

    async fn call(&mut self, system: &str, user: String) -> Result<Option<String>, GotError> {
        let e = self.engine;
        match call_model(&*e.provider, &e.call, system, user, &self.cancel).await {
            Ok(r) => {
                self.tokens += r.tokens;
                self.emit(GotEvent::Tokens(self.tokens));
                Ok(Some(r.text))
            }
            Err(LlmError::Cancelled) => {
                self.interrupted = true;
                self.stopped = true;
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Scores a thought (failed evaluations score 0) and verifies or rejects it.
    async fn evaluate(&mut self, id: NodeId) -> Result<(), GotError> {
        let Some(t) = self.get(id) else {
            return Ok(());
        };
        let user = format!(
            "Problem:\n{}\n\nChain so far:\n{}\n\nThought to score:\n{}",
            self.problem,
            self.chain_text(t.parent.unwrap_or(id)),
            t.content
        );
        let system = self.engine.prompts.evaluate.clone();
        let Some(text) = self.call(&system, user).await? else {
            return Ok(());
        };
        let (score, reasoning) = parse_score(&text);
        let threshold = self.params.prune_threshold;
        if let Some(t) = self.get_mut(id) {
            t.score = Some(score);
            t.reasoning = reasoning;
            t.state = ThoughtState::Evaluated;
        }
        self.save(id)?;
        let keep = score >= threshold || self.get(id).is_some_and(|t| t.pinned);
        self.set_state(
            id,
            if keep {
                ThoughtState::Verified
            } else {
                ThoughtState::Rejected
            },
        )
    }

    /// Generates and evaluates up to k children of `id`; returns the verified ones, best
    /// first.
    async fn expand(&mut self, id: NodeId) -> Result<Vec<NodeId>, GotError> {
        let Some(parent) = self.get(id).cloned() else {
            return Ok(Vec::new());
        };
        self.expanded.push(id);
        self.emit(GotEvent::Expanding(id));
        let k = self.params.branching_factor as usize;
        let room = (self.params.max_thoughts as usize).saturating_sub(self.thoughts.len());
        if room == 0 {
            return Ok(Vec::new());
        }
        let chain = self.chain_text(id);
        let user = format!(
            "Problem:\n{}\n\nChain so far:\n{}\n\nPropose {k} next thoughts.",
            self.problem,
            if chain.is_empty() {
                "(none yet)"
            } else {
                &chain
            }
        );
        let system = self.engine.prompts.generate.replace("{k}", &k.to_string());
        let Some(text) = self.call(&system, user).await? else {
            return Ok(Vec::new());
        };
        let mut children = Vec::new();
        for content in parse_thoughts(&text).into_iter().take(k.min(room)) {
            children.push(self.add(Thought {
                id: NodeId::new(),
                parent: Some(id),
                sources: Vec::new(),
                content,
                score: None,
                state: ThoughtState::Generated,
                depth: parent.depth + 1,
                pinned: false,
                boost: 0.0,
                reasoning: None,
            })?);
        }
        for &c in &children {
            if self.stopped {
                break;
            }
            self.evaluate(c).await?;
        }
        let mut viable: Vec<NodeId> = children.into_iter().filter(|&c| self.is_open(c)).collect();
        self.sort(&mut viable);
        Ok(viable)
    }

    /// Stable sort by priority, highest first.
    fn sort(&self, ids: &mut [NodeId]) {
        ids.sort_by(|a, b| {
            let pa = self.get(*a).map_or(0.0, Thought::priority);
            let pb = self.get(*b).map_or(0.0, Thought::priority);
            pb.total_cmp(&pa)
        });
    }

    /// Merges `sources` into one synthesis; when it is verified the sources become
    /// `aggregated` and the synthesis id is returned.
    async fn aggregate(&mut self, sources: &[NodeId]) -> Result<Option<NodeId>, GotError> {
        if sources.len() < 2 || self.full() || self.stopped {
            return Ok(None);
        }
        let listed = sources
            .iter()
            .filter_map(|&s| self.get(s))
            .enumerate()
            .map(|(i, t)| format!("Thought {}: {}", i + 1, t.content))
            .collect::<Vec<_>>()
            .join("\n");
        let user = format!(
            "Problem:\n{}\n\nThoughts to merge:\n{listed}\n\nWrite one combined thought.",
            self.problem
        );
        let system = self.engine.prompts.aggregate.clone();
        let Some(text) = self.call(&system, user).await? else {
            return Ok(None);
        };
        let Some(content) = parse_aggregate(&text) else {
            return Ok(None);
        };
        let depth = sources
            .iter()
            .filter_map(|&s| self.get(s))
            .map(|t| t.depth)
            .max()
            .unwrap_or(0);
        let id = self.add(Thought {
            id: NodeId::new(),
            parent: None,
            sources: sources.to_vec(),
            content,
            score: None,
            state: ThoughtState::Generated,
            depth,
            pinned: false,
            boost: 0.0,
            reasoning: None,
        })?;
        self.aggregations += 1;
        self.evaluate(id).await?;
        if !self.is_open(id) {
            return Ok(None);
        }
        for &s in sources {
            self.set_state(s, ThoughtState::Aggregated)?;
        }
        Ok(Some(id))
    }

    async fn run(&mut self) -> Result<(), GotError> {
        let root = self.add(Thought {
            id: NodeId::new(),
            parent: None,
            sources: Vec::new(),
            content: self.problem.clone(),
            score: Some(1.0),
            state: ThoughtState::Verified,
            depth: 0,
            pinned: true,
            boost: 0.0,
            reasoning: None,
        })?;
        self.emit(GotEvent::Started {
            session: self.session,
            run: self.run,
            root,
        });
        match self.params.strategy {
            Strategy::Bfs => self.bfs(root).await,
            Strategy::Dfs => self.dfs(root).await,
            Strategy::BestFirst => self.best_first(root).await,
        }
    }

    /// Moves revived thoughts into `open`.
    fn take_revived(&mut self, open: &mut Vec<NodeId>, depth: Option<u32>) {
        let revived = std::mem::take(&mut self.revived);
        for id in revived {
            let at = self.get(id).map(|t| t.depth);
            if depth.is_none() || at == depth {
                if !open.contains(&id) {
                    open.push(id);
                }
            } else {
                self.revived.push(id);
            }
        }
    }

    async fn bfs(&mut self, root: NodeId) -> Result<(), GotError> {
        let k = self.params.branching_factor as usize;
        let mut level = vec![root];
        for depth in 0..self.params.max_depth {
            let mut next = Vec::new();
            loop {
                if self.stopped || self.full() {
                    return Ok(());
                }
                level.retain(|&id| self.is_open(id));
                if level.is_empty() && self.revived.is_empty() {
                    break;
                }
                // Wait here, where there is a thought to expand, so a step expands one.
                if !self.checkpoint().await? {
                    return Ok(());
                }
                self.take_revived(&mut level, Some(depth));
                self.take_revived(&mut next, Some(depth + 1));
                level.retain(|&id| self.is_open(id));
                self.sort(&mut level);
                if level.is_empty() {
                    break;
                }
                let id = level.remove(0);
                next.extend(self.expand(id).await?);
            }
            next.retain(|&id| self.is_open(id));
            self.sort(&mut next);
            // Keep the top k, and every pinned thought.
            let mut kept = Vec::new();
            for (i, id) in next.into_iter().enumerate() {
                if i < k || self.get(id).is_some_and(|t| t.pinned) {
                    kept.push(id);
                }
            }
            if self.params.enable_aggregation
                && kept.len() >= 2
                && let Some(s) = self.aggregate(&kept.clone()).await?
            {
                kept = vec![s];
            }
            if kept.is_empty() {
                return Ok(());
            }
            level = kept;
        }
        Ok(())
    }

    async fn dfs(&mut self, root: NodeId) -> Result<(), GotError> {
        // Deepest open thought first, best of those first: that is depth-first search with
        // backtracking to the next-best sibling when a branch dies.
        let mut open = vec![root];
        loop {
            if self.stopped || self.full() || !self.checkpoint().await? {
                return Ok(());
            }
            self.take_revived(&mut open, None);
            open.retain(|&id| self.is_open(id));
            let Some(id) = open.iter().copied().max_by(|a, b| {
                let (ta, tb) = (self.get(*a), self.get(*b));
                let da = ta.map_or(0, |t| t.depth);
                let db = tb.map_or(0, |t| t.depth);
                da.cmp(&db)
                    .then(
                        ta.map_or(0.0, Thought::priority)
                            .total_cmp(&tb.map_or(0.0, Thought::priority)),
                    )
                    // Earlier thoughts win ties (max_by keeps the last maximum).
                    .then(self.index[b].cmp(&self.index[a]))
            }) else {
                return Ok(());
            };
            if self
                .get(id)
                .is_some_and(|t| t.depth >= self.params.max_depth)
            {
                return Ok(());
            }
            open.retain(|&o| o != id);
            let mut viable = self.expand(id).await?;
            if self.params.enable_aggregation
                && viable.len() >= 2
                && let Some(s) = self.aggregate(&viable.clone()).await?
            {
                viable = vec![s];
            }
            open.extend(viable);
        }
    }

    async fn best_first(&mut self, root: NodeId) -> Result<(), GotError> {
        let mut open: Vec<NodeId> = vec![root];
        let mut tried: HashSet<Vec<NodeId>> = HashSet::new();
        loop {
            if self.stopped || self.full() || !self.checkpoint().await? {
                return Ok(());
            }
            let revived = std::mem::take(&mut self.revived);
            for id in revived {
                self.insert_sorted(&mut open, id);
            }
            if std::mem::take(&mut self.reorder) {
                self.sort(&mut open);
            }
            open.retain(|&id| self.is_open(id));
            let Some(pos) = open.iter().position(|&id| {
                self.get(id)
                    .is_some_and(|t| t.depth < self.params.max_depth)
            }) else {
                return Ok(());
            };
            let id = open.remove(pos);
            for c in self.expand(id).await? {
                self.insert_sorted(&mut open, c);
            }
            if !self.params.enable_aggregation {
                continue;
            }
            let cfg = &self.engine.config;
            let high: Vec<NodeId> = open
                .iter()
                .copied()
                .filter(|&id| {
                    id != root
                        && self
                            .get(id)
                            .is_some_and(|t| t.score.unwrap_or(0.0) >= cfg.aggregation_min_score)
                })
                .take(cfg.aggregation_min_thoughts.max(2))
                .collect();
            if high.len() < cfg.aggregation_min_thoughts.max(2) || !tried.insert(high.clone()) {
                continue;
            }
            if let Some(s) = self.aggregate(&high).await? {
                open.retain(|o| !high.contains(o));
                self.insert_sorted(&mut open, s);
            }
        }
    }

    /// Inserts by binary search, after every thought of equal or higher priority.
    fn insert_sorted(&self, open: &mut Vec<NodeId>, id: NodeId) {
        if open.contains(&id) {
            return;
        }
        let p = self.get(id).map_or(0.0, Thought::priority);
        let at = open.partition_point(|&o| self.get(o).map_or(0.0, Thought::priority) >= p);
        open.insert(at, id);
    }

    fn result(&self, duration_ms: u64) -> GotResult {
        let root = self.thoughts.first().map(|t| t.id);
        let mut candidates: Vec<&Thought> = self
            .thoughts
            .iter()
            .filter(|t| Some(t.id) != root && t.state == ThoughtState::Verified)
            .filter(|t| t.score.is_some())
            .collect();
        candidates.sort_by(|a, b| b.score.unwrap_or(0.0).total_cmp(&a.score.unwrap_or(0.0)));
        let best = candidates.first().copied();
        let stats = GotStats {
            total_thoughts: self.thoughts.len() as u64,
            thoughts_explored: self.expanded.len() as u64,
            thoughts_pruned: self
                .thoughts
                .iter()
                .filter(|t| t.state == ThoughtState::Rejected)
                .count() as u64,
            aggregations_made: self.aggregations,
            max_depth_reached: self.thoughts.iter().map(|t| t.depth).max().unwrap_or(0),
            total_tokens: self.tokens,
            total_duration_ms: duration_ms,
        };
        let summary = match best {
            Some(b) => {
                let path = self
                    .path(b.id)
                    .iter()
                    .skip(1)
                    .map(|t| format!("[{:.2}] {}", t.score.unwrap_or(0.0), t.content))
                    .collect::<Vec<_>>()
                    .join(" → ");
                format!(
                    "{} search explored {} of {} thoughts (pruned {}, {} aggregations, depth {}). Best path: {}",
                    self.params.strategy.as_str(),
                    stats.thoughts_explored,
                    stats.total_thoughts,
                    stats.thoughts_pruned,
                    stats.aggregations_made,
                    stats.max_depth_reached,
                    if path.is_empty() {
                        b.content.clone()
                    } else {
                        path
                    }
                )
            }
            None => format!(
                "{} search explored {} of {} thoughts and found no verified thought (pruned {}).",
                self.params.strategy.as_str(),
                stats.thoughts_explored,
                stats.total_thoughts,
                stats.thoughts_pruned
            ),
        };
        GotResult {
            answer: best.map(|b| b.content.clone()).unwrap_or_default(),
            confidence: best.and_then(|b| b.score).unwrap_or(0.0),
            reasoning_summary: summary,
            graph_state: GraphState {
                thought_count: stats.total_thoughts,
                edge_count: self.edges,
                best_thoughts: candidates.iter().take(3).map(|t| t.id).collect(),
            },
            stats,
            session: self.session,
            run: self.run,
            thoughts: self.thoughts.clone(),
            expanded: self.expanded.clone(),
            best: best.map(|b| b.id),
            interrupted: self.interrupted,
        }
    }
}

/// Thoughts from a generation answer: `{"thoughts": [...]}` (strings or objects with a
/// `content`/`thought`/`text`), else the answer's non-empty lines without list markers.
fn parse_thoughts(text: &str) -> Vec<String> {
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
fn parse_score(text: &str) -> (f64, Option<String>) {
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
fn parse_aggregate(text: &str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thoughts_are_read_from_json_or_lines() {
        assert_eq!(
            parse_thoughts("Sure:\n```json\n{\"thoughts\": [\"a\", {\"content\": \"b\"}]}\n```"),
            vec!["a", "b"]
        );
        assert_eq!(
            parse_thoughts("1. first\n- second\n\n"),
            vec!["first", "second"]
        );
    }

    #[test]
    fn scores_are_clamped_and_failures_score_zero() {
        assert_eq!(parse_score("{\"score\": 0.42}").0, 0.42);
        assert_eq!(parse_score("{\"score\": \"85%\"}").0, 0.85);
        assert_eq!(parse_score("{\"score\": -3}").0, 0.0);
        assert_eq!(parse_score("I would say 0.6 overall").0, 0.6);
        assert_eq!(parse_score("no idea").0, 0.0);
    }

    #[test]
    fn params_out_of_range_are_rejected_with_the_range() {
        let tuning = GotTuning::default();
        let mut p = GotParams::from_config(&tuning);
        assert_eq!(p.max_depth, 5);
        assert_eq!(p.branching_factor, 3);
        assert_eq!(p.max_thoughts, 50);
        assert_eq!(p.prune_threshold, 0.3);
        assert!(p.validate(&tuning).is_ok());
        p.max_depth = 21;
        assert_eq!(
            p.validate(&tuning).map_err(|e| e.to_string()),
            Err("maxDepth = 21 is out of range (allowed 1–20)".into())
        );
        p.max_depth = 20;
        p.branching_factor = 0;
        assert!(p.validate(&tuning).is_err());
        p.branching_factor = 10;
        p.max_thoughts = 101;
        assert!(p.validate(&tuning).is_err());
    }
}
