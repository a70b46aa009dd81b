//! One layer: its `pipeline_layer` node (made, or taken over from an unfinished attempt),
//! the streamed model call written into the node as it arrives, the structured answer read
//! with one repair retry, and the events a view follows.

use std::collections::HashMap;
use std::time::Instant;

use chrono::Utc;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::artifacts::{self, Artifact};
use super::{Layer, LayerState, PipelineEngine, PipelineError, PipelineEvent};
use crate::engines::llm::{ChatRequest, LlmError, Message, ThinkingMode, ToolSpec};
use crate::store::{Edge, EdgeType, Node, NodeId, NodeStatus, NodeType, RunId, SessionId};

/// Keys of a layer node's `meta`.
pub(crate) const RUN: &str = "run";
pub(crate) const LAYER: &str = "layer";
pub(crate) const LABEL: &str = "label";
pub(crate) const ORDER: &str = "order";
pub(crate) const GROUP: &str = "parallel_group";
pub(crate) const ARTIFACT: &str = "artifact";
pub(crate) const THINKING: &str = crate::engines::streamed::THINKING;
pub(crate) const DURATION: &str = "duration_ms";
/// Set on a layer whose JSON could not be read: finished, as failed.
pub(crate) const MALFORMED: &str = "malformed";

/// The layer nodes of `run` among a session's nodes, in layer order.
pub(crate) fn layer_nodes(nodes: &[Node], run: RunId) -> Vec<(Layer, Node)> {
    let run = run.to_string();
    let mut out: Vec<(Layer, Node)> = nodes
        .iter()
        .filter(|n| n.kind == NodeType::PipelineLayer)
        .filter(|n| n.meta.get(RUN).and_then(Value::as_str) == Some(run.as_str()))
        .filter_map(|n| {
            let layer = n.meta.get(LAYER)?.as_str()?.parse().ok()?;
            Some((layer, n.clone()))
        })
        .collect();
    out.sort_by_key(|(l, n)| (l.order(), n.created_at));
    out
}

/// Whether an earlier attempt finished this layer (complete, or failed on malformed JSON).
pub(crate) fn finished(n: &Node) -> bool {
    match n.status {
        NodeStatus::Complete => true,
        NodeStatus::Failed { .. } => n.meta.get(MALFORMED) == Some(&Value::Bool(true)),
        _ => false,
    }
}

/// How a new layer node hangs in the graph.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Link {
    /// Follows this node (`influences` from it).
    After(NodeId),
    /// One of several branches from this node.
    BranchesFrom(NodeId),
    /// Merges this node's answer.
    Aggregates(NodeId),
}

impl Link {
    fn edge(self, node: NodeId) -> Edge {
        match self {
            Link::After(prev) => Edge::new(prev, EdgeType::Influences, node),
            Link::BranchesFrom(anchor) => Edge::new(node, EdgeType::BranchesFrom, anchor),
            Link::Aggregates(src) => Edge::new(node, EdgeType::Aggregates, src),
        }
    }
}

/// What a layer left.
#[derive(Clone, Debug)]
pub(crate) struct LayerOut {
    pub layer: Layer,
    pub node: NodeId,
    /// The answer text (the raw JSON for a structured layer).
    pub text: String,
    pub artifact: Option<Value>,
    /// Why a structured layer failed; its artifact is then none.
    pub failed: Option<String>,
}

/// What every layer of one run shares.
pub(crate) struct Shared<'a> {
    pub engine: &'a PipelineEngine,
    pub run: RunId,
    pub session: SessionId,
    pub question: String,
    /// The continued session's history, sent before each layer's input.
    pub history: Vec<Message>,
    /// Layer nodes from earlier attempts of this run.
    pub prior: HashMap<Layer, Node>,
    pub events: mpsc::UnboundedSender<PipelineEvent>,
    pub cancel: CancellationToken,
}

impl Shared<'_> {
    fn emit(&self, ev: PipelineEvent) {
        let _ = self.events.send(ev);
    }

    /// A piece of a layer's thinking or answer, as it streams.
    fn chunk(&self, layer: Layer, content: String, thinking: bool) {
        self.emit(PipelineEvent::LayerChunk {
            layer,
            content,
            thinking,
            parallel_group: layer.parallel_group(),
        });
    }

    /// Says a layer ended: failed with its reason, or complete.
    fn complete(&self, layer: Layer, failed: &Option<String>, resumed: bool, duration_ms: u64) {
        self.emit(PipelineEvent::LayerComplete {
            layer,
            layer_label: layer.label(),
            state: if failed.is_some() {
                LayerState::Failed
            } else {
                LayerState::Complete
            },
            error: failed.clone(),
            resumed,
            duration_ms,
        });
    }

    /// A layer an earlier attempt finished: its events again, nothing run.
    fn replay(&self, layer: Layer, n: &Node) -> LayerOut {
        self.emit(PipelineEvent::LayerStart {
            layer,
            layer_label: layer.label(),
            parallel_group: layer.parallel_group(),
            node: n.id,
            order: layer.order(),
        });
        let artifact = n.meta.get(ARTIFACT).filter(|v| !v.is_null()).cloned();
        if let Some(a) = &artifact {
            self.emit(PipelineEvent::LayerArtifact {
                layer,
                artifact: a.clone(),
            });
        }
        let failed = match &n.status {
            NodeStatus::Failed { error } => Some(error.clone()),
            _ => None,
        };
        let duration = n.meta.get(DURATION).and_then(Value::as_u64).unwrap_or(0);
        self.complete(layer, &failed, true, duration);
        LayerOut {
            layer,
            node: n.id,
            text: n.text.clone(),
            artifact,
            failed,
        }
    }

    /// The node this attempt writes: an unfinished one of an earlier attempt, emptied, or
    /// a new one hung by `links`.
    async fn open(&self, layer: Layer, links: &[Link]) -> Result<Node, PipelineError> {
        let mut node = match self.prior.get(&layer) {
            Some(n) => n.clone(),
            None => {
                let mut n = Node::new(self.session, NodeType::PipelineLayer, "");
                n.model = Some(self.engine.model.clone());
                n.meta.insert(RUN.into(), json!(self.run.to_string()));
                n.meta.insert(LAYER.into(), json!(layer.as_str()));
                n.meta.insert(LABEL.into(), json!(layer.label()));
                n.meta.insert(ORDER.into(), json!(layer.order()));
                if let Some(g) = layer.parallel_group() {
                    n.meta.insert(GROUP.into(), json!(g));
                }
                n
            }
        };
        node.text.clear();
        node.status = NodeStatus::Streaming;
        node.meta.insert(THINKING.into(), json!(""));
        node.meta.remove(ARTIFACT);
        node.meta.remove(MALFORMED);
        node.meta
            .insert("started_at".into(), json!(Utc::now().to_rfc3339()));
        let edges: Vec<Edge> = links.iter().map(|l| l.edge(node.id)).collect();
        let stored = node.clone();
        self.engine
            .store
            .write_async(move |w| {
                w.put_node(&stored)?;
                for e in &edges {
                    w.put_edge(e)?;
                }
                Ok(())
            })
            .await?;
        tracing::debug!(node = %node.id, bytes = 0, "node committed");
        self.emit(PipelineEvent::LayerStart {
            layer,
            layer_label: layer.label(),
            parallel_group: layer.parallel_group(),
            node: node.id,
            order: layer.order(),
        });
        Ok(node)
    }

    async fn put(&self, node: &Node) -> Result<(), PipelineError> {
        let n = node.clone();
        self.engine
            .store
            .write_async(move |w| w.put_node(&n))
            .await?;
        tracing::debug!(node = %node.id, bytes = node.text.len(), "node committed");
        Ok(())
    }

    /// Ends a layer's node with `status`, its artifact and duration, and says so.
    async fn close(
        &self,
        layer: Layer,
        mut node: Node,
        started: Instant,
        artifact: Option<Value>,
        failed: Option<String>,
    ) -> Result<LayerOut, PipelineError> {
        let duration = started.elapsed().as_millis() as u64;
        node.meta.insert(DURATION.into(), json!(duration));
        if let Some(a) = &artifact {
            node.meta.insert(ARTIFACT.into(), a.clone());
        }
        node.status = match &failed {
            Some(why) => {
                node.meta.insert(MALFORMED.into(), Value::Bool(true));
                NodeStatus::Failed { error: why.clone() }
            }
            None => NodeStatus::Complete,
        };
        self.put(&node).await?;
        if let Some(a) = &artifact {
            self.emit(PipelineEvent::LayerArtifact {
                layer,
                artifact: a.clone(),
            });
        }
        self.complete(layer, &failed, false, duration);
        Ok(LayerOut {
            layer,
            node: node.id,
            text: node.text,
            artifact,
            failed,
        })
    }

    /// A layer that makes no model call (the web search): its text and artifact.
    pub async fn record(
        &self,
        layer: Layer,
        links: &[Link],
        text: String,
        artifact: Value,
    ) -> Result<LayerOut, PipelineError> {
        if let Some(n) = self.prior.get(&layer).filter(|n| finished(n)) {
            return Ok(self.replay(layer, n));
        }
        let started = Instant::now();
        let mut node = self.open(layer, links).await?;
        node.text = text;
        self.close(layer, node, started, Some(artifact), None).await
    }

    /// A free-text layer, streamed.
    pub async fn text(
        &self,
        layer: Layer,
        links: &[Link],
        input: String,
    ) -> Result<LayerOut, PipelineError> {
        if let Some(n) = self.prior.get(&layer).filter(|n| finished(n)) {
            return Ok(self.replay(layer, n));
        }
        let started = Instant::now();
        let mut node = self.open(layer, links).await?;
        let text = self.call(layer, &mut node, input, None).await?;
        node.text = text;
        self.close(layer, node, started, None, None).await
    }

    /// A structured layer: its answer read as `T`, asked again `repair_retries` times when
    /// it cannot be read; after that the layer is failed with its raw text kept, and `None`
    /// is returned for the pipeline to go on without it.
    pub async fn structured<T: Artifact>(
        &self,
        layer: Layer,
        links: &[Link],
        input: String,
    ) -> Result<(LayerOut, Option<T>), PipelineError> {
        if let Some(n) = self.prior.get(&layer).filter(|n| finished(n)) {
            let out = self.replay(layer, n);
            let value = out
                .artifact
                .clone()
                .and_then(|a| serde_json::from_value(a).ok());
            return Ok((out, value));
        }
        let started = Instant::now();
        let mut node = self.open(layer, links).await?;
        let mut user = input.clone();
        let mut reason = String::new();
        for attempt in 0..=self.engine.params.repair_retries {
            if attempt > 0 {
                self.chunk(layer, format!("\n[repair: {reason}]\n"), true);
            }
            let raw = self
                .call(layer, &mut node, user.clone(), Some(T::schema()))
                .await?;
            node.text = raw.clone();
            match artifacts::read::<T>(&raw) {
                Ok(value) => {
                    let artifact = serde_json::to_value(&value).ok();
                    let out = self.close(layer, node, started, artifact, None).await?;
                    return Ok((out, Some(value)));
                }
                Err(why) => {
                    reason = why;
                    user = format!(
                        "{input}\n\nYour previous answer was:\n{raw}\n\nIt could not be read: {reason}.\n{}",
                        self.engine.prompts.repair
                    );
                }
            }
        }
        let out = self.close(layer, node, started, None, Some(reason)).await?;
        Ok((out, None))
    }

    /// One streamed model call for `layer`, writing its thinking and text into `node` as
    /// they come: the answer text. A provider error or cancellation leaves the node failed
    /// or interrupted, with what arrived.
    async fn call(
        &self,
        layer: Layer,
        node: &mut Node,
        input: String,
        schema: Option<ToolSpec>,
    ) -> Result<String, PipelineError> {
        let e = self.engine;
        let s = e.params.layers.get(layer);
        let wants = if schema.is_some() {
            e.thinking.for_structured
        } else {
            e.thinking.for_text
        };
        let budget = if wants { s.thinking } else { 0 };
        let mut messages = self.history.clone();
        messages.push(Message::user(input));
        let mut req = ChatRequest::new(e.model.clone(), messages);
        let system = e.prompts.get(layer);
        req.system = (!system.is_empty()).then(|| system.to_string());
        req.temperature = Some(s.temperature as f32);
        req.seed = e.seed;
        req.thinking = if budget > 0 {
            ThinkingMode::Budget { tokens: budget }
        } else {
            ThinkingMode::Off
        };
        req.max_tokens = if e.thinking.inside_max_tokens {
            s.max_tokens.saturating_add(budget)
        } else {
            s.max_tokens
        };
        req.json_mode = schema.is_some();
        req.schema = schema;
        let outcome = crate::engines::streamed::into_node(
            &e.store,
            e.provider.as_ref(),
            req,
            &self.cancel,
            node,
            |t, thinking| self.chunk(layer, t, thinking),
        )
        .await?;
        match outcome {
            Ok(text) => Ok(text),
            Err(LlmError::Cancelled) => {
                node.status = NodeStatus::Interrupted;
                self.put(node).await?;
                Err(PipelineError::Cancelled(self.run))
            }
            Err(error) => {
                node.status = NodeStatus::Failed {
                    error: error.to_string(),
                };
                self.put(node).await?;
                Err(PipelineError::Layer {
                    layer: layer.as_str(),
                    run: self.run,
                    error,
                })
            }
        }
    }
}
