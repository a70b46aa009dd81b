//! The state of one running search: its thoughts and where each is stored, the steering
//! controls, the model calls, and the evaluation, expansion and aggregation of thoughts.

use std::collections::HashMap;

use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::call::call_model;
use super::parse::{
    merged_schema, parse_aggregate, parse_score, parse_thoughts, proposed_schema, score_schema,
};
use super::{
    BEST_THOUGHTS, GotControl, GotEngine, GotError, GotEvent, GotParams, GotResult, GotStats,
    GraphState, MIN_MERGE, Thought, ThoughtState,
};
use crate::engines::llm::{LlmError, ToolSpec};
use crate::store::{Edge, EdgeType, Node, NodeId, NodeType, RunId, SessionId};

/// The state of one running search.
pub(super) struct Search<'e> {
    pub(super) engine: &'e GotEngine,
    pub(super) problem: String,
    pub(super) params: GotParams,
    pub(super) session: SessionId,
    pub(super) run: RunId,
    pub(super) thoughts: Vec<Thought>,
    pub(super) index: HashMap<NodeId, usize>,
    pub(super) expanded: Vec<NodeId>,
    pub(super) edges: u64,
    pub(super) aggregations: u64,
    pub(super) tokens: u64,
    pub(super) budget: Option<u64>,
    pub(super) paused: bool,
    pub(super) step: bool,
    /// Thoughts revived by a pin, to put back into the open set.
    pub(super) revived: Vec<NodeId>,
    /// A control changed priorities: re-sort the open set.
    pub(super) reorder: bool,
    pub(super) stopped: bool,
    pub(super) interrupted: bool,
    pub(super) events: mpsc::UnboundedSender<GotEvent>,
    pub(super) controls: mpsc::UnboundedReceiver<GotControl>,
    pub(super) cancel: CancellationToken,
}

impl Search<'_> {
    pub(super) fn emit(&self, ev: GotEvent) {
        let _ = self.events.send(ev);
    }

    pub(super) fn get(&self, id: NodeId) -> Option<&Thought> {
        self.index.get(&id).map(|&i| &self.thoughts[i])
    }

    pub(super) fn get_mut(&mut self, id: NodeId) -> Option<&mut Thought> {
        self.index.get(&id).map(|&i| &mut self.thoughts[i])
    }

    pub(super) fn is_open(&self, id: NodeId) -> bool {
        self.get(id)
            .is_some_and(|t| t.state == ThoughtState::Verified && !self.expanded.contains(&id))
    }

    pub(super) fn full(&self) -> bool {
        self.thoughts.len() as u64 >= u64::from(self.params.max_thoughts)
    }

    /// Writes a thought's node and reports it.
    pub(super) async fn save(&self, id: NodeId) -> Result<(), GotError> {
        self.persist(id, Vec::new()).await
    }

    /// Writes a thought's node with `edges` (in one commit) and reports the thought.
    async fn persist(&self, id: NodeId, edges: Vec<Edge>) -> Result<(), GotError> {
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
        let thought = t.clone();
        self.engine
            .store
            .write_async(move |w| {
                // Keep the first creation time across updates.
                if let Some(old) = w.node(node.id)? {
                    node.created_at = old.created_at;
                }
                w.put_node(&node)?;
                for e in &edges {
                    w.put_edge(e)?;
                }
                Ok(())
            })
            .await?;
        self.emit(GotEvent::Thought(thought));
        Ok(())
    }

    /// Adds a thought: its node and the edges to its parent or sources, in one commit.
    pub(super) async fn add(&mut self, t: Thought) -> Result<NodeId, GotError> {
        let id = t.id;
        let parent = t.parent;
        let sources = t.sources.clone();
        self.index.insert(id, self.thoughts.len());
        self.thoughts.push(t);
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
        self.persist(id, edges).await?;
        Ok(id)
    }

    pub(super) async fn set_state(
        &mut self,
        id: NodeId,
        state: ThoughtState,
    ) -> Result<(), GotError> {
        if let Some(t) = self.get_mut(id) {
            t.state = state;
        }
        self.save(id).await
    }

    async fn apply(&mut self, c: GotControl) -> Result<(), GotError> {
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
                self.save(id).await?;
            }
            GotControl::Prune(id) => {
                let Some(t) = self.get_mut(id) else {
                    return Ok(());
                };
                t.pinned = false;
                t.state = ThoughtState::Rejected;
                self.save(id).await?;
            }
            GotControl::Boost { id, amount } => {
                let Some(t) = self.get_mut(id) else {
                    return Ok(());
                };
                t.boost += amount;
                self.reorder = true;
                self.save(id).await?;
            }
            GotControl::TokenBudget(b) => self.budget = b,
        }
        Ok(())
    }

    /// Applies pending controls and waits while paused. False when the search must stop.
    pub(super) async fn checkpoint(&mut self) -> Result<bool, GotError> {
        let mut announced = false;
        loop {
            while let Ok(c) = self.controls.try_recv() {
                self.apply(c).await?;
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
                    Some(c) => self.apply(c).await?,
                    // Nobody can resume a search whose steering channel closed.
                    None => self.paused = false,
                },
                () = cancel.cancelled() => {}
            }
        }
    }

    /// The chain from the root to `id`.
    pub(super) fn path(&self, id: NodeId) -> Vec<&Thought> {
        let mut out = Vec::new();
        let mut cur = self.get(id);
        while let Some(t) = cur {
            out.push(t);
            cur = t.parent.and_then(|p| self.get(p));
        }
        out.reverse();
        out
    }

    pub(super) fn chain_text(&self, id: NodeId) -> String {
        self.path(id)
            .iter()
            .skip(1)
            .enumerate()
            .map(|(i, t)| format!("{}. {}", i + 1, t.content))
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub(super) async fn call(
        &mut self,
        system: &str,
        user: String,
        schema: ToolSpec,
    ) -> Result<Option<String>, GotError> {
        let e = self.engine;
        match call_model(&*e.provider, &e.call, system, user, schema, &self.cancel).await {
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
    pub(super) async fn evaluate(&mut self, id: NodeId) -> Result<(), GotError> {
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
        let Some(text) = self.call(&system, user, score_schema()).await? else {
            return Ok(());
        };
        let (score, reasoning) = parse_score(&text);
        let threshold = self.params.prune_threshold;
        if let Some(t) = self.get_mut(id) {
            t.score = Some(score);
            t.reasoning = reasoning;
            t.state = ThoughtState::Evaluated;
        }
        self.save(id).await?;
        let keep = score >= threshold || self.get(id).is_some_and(|t| t.pinned);
        self.set_state(
            id,
            if keep {
                ThoughtState::Verified
            } else {
                ThoughtState::Rejected
            },
        )
        .await
    }

    /// Generates and evaluates up to k children of `id`; returns the verified ones, best
    /// first.
    pub(super) async fn expand(&mut self, id: NodeId) -> Result<Vec<NodeId>, GotError> {
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
        let Some(text) = self.call(&system, user, proposed_schema(k)).await? else {
            return Ok(Vec::new());
        };
        let mut children = Vec::new();
        for content in parse_thoughts(&text).into_iter().take(k.min(room)) {
            children.push(
                self.add(Thought {
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
                })
                .await?,
            );
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
    pub(super) fn sort(&self, ids: &mut [NodeId]) {
        ids.sort_by(|a, b| {
            let pa = self.get(*a).map_or(0.0, Thought::priority);
            let pb = self.get(*b).map_or(0.0, Thought::priority);
            pb.total_cmp(&pa)
        });
    }

    /// Merges `sources` into one synthesis; when it is verified the sources become
    /// `aggregated` and the synthesis id is returned.
    pub(super) async fn aggregate(
        &mut self,
        sources: &[NodeId],
    ) -> Result<Option<NodeId>, GotError> {
        if sources.len() < MIN_MERGE || self.full() || self.stopped {
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
        let Some(text) = self.call(&system, user, merged_schema()).await? else {
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
        let id = self
            .add(Thought {
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
            })
            .await?;
        self.aggregations += 1;
        self.evaluate(id).await?;
        if !self.is_open(id) {
            return Ok(None);
        }
        for &s in sources {
            self.set_state(s, ThoughtState::Aggregated).await?;
        }
        Ok(Some(id))
    }

    pub(super) fn result(&self, duration_ms: u64) -> GotResult {
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
                best_thoughts: candidates
                    .iter()
                    .take(BEST_THOUGHTS)
                    .map(|t| t.id)
                    .collect(),
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
