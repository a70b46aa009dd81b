//! Human checkpoints: a verdict on any node, the disputes it marks or clears downstream,
//! and for a disagreement with a correction, an alternative branch reasoned from it.

use std::collections::{HashSet, VecDeque};

use serde_json::{Value, json};

use super::branches::query_before;
use super::{
    AlternativeBranch, Annotation, CheckpointResult, Events, ForkEngine, ForkError, ForkEvent,
    Lane, Verdict,
};
use crate::engines::llm::Message;
use crate::engines::memory::LearnParams;
use crate::engines::memory::learn::checkpoint_feedback;
use crate::store::{Edge, EdgeType, Node, NodeId, NodeType, Store, StoreError};

/// Seed 000 Flow 7: the alternative branch sees the last three nodes of the chain before
/// the flagged one.
const CHAIN_CONTEXT_NODES: usize = 3;
/// Confidence of an alternative branch reasoned without thinking; seed 000 Flow 7 has it
/// grow with the depth of the thinking, and these three numbers are glassbox's reading.
const ALTERNATIVE_BASE_CONFIDENCE: f64 = 0.5;
/// Words of thinking that add 1.0 to the alternative's confidence (before the cap).
const ALTERNATIVE_WORDS_PER_CONFIDENCE: f64 = 2500.0;
/// The most confidence thinking depth can earn an alternative branch.
const ALTERNATIVE_MAX_CONFIDENCE: f64 = 0.9;

impl ForkEngine {
    /// A human verdict on any node (see [`record_verdict`]); disagree with a correction
    /// also reasons an alternative branch that `refines` the node.
    pub async fn checkpoint(
        &self,
        target: NodeId,
        verdict: Verdict,
        correction: Option<String>,
        events: &Events,
    ) -> Result<CheckpointResult, ForkError> {
        let max_chars = self.settings.correction_max_chars;
        let learn = self.settings.memory_feedback.clone();
        let (mut result, node) = self
            .store
            .run_blocking(move |store| {
                record_verdict(store, target, verdict, correction, max_chars, &learn)
            })
            .await?;
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
        let session = flagged.session;
        let nodes = self
            .store
            .run_blocking(move |store| store.session_nodes(session))
            .await?;
        let pos = nodes
            .iter()
            .position(|n| n.id == flagged.id)
            .unwrap_or(nodes.len());
        let chain: Vec<&Node> = nodes[..pos]
            .iter()
            .filter(|n| n.kind != NodeType::HumanAnnotation)
            .collect();
        let chain = &chain[chain.len().saturating_sub(CHAIN_CONTEXT_NODES)..];
        let query = query_before(&nodes, flagged).unwrap_or_default();
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
        // Deeper thinking earns more confidence, up to a cap.
        let depth = out.thinking.split_whitespace().count() as f64;
        let confidence = (ALTERNATIVE_BASE_CONFIDENCE + depth / ALTERNATIVE_WORDS_PER_CONFIDENCE)
            .min(ALTERNATIVE_MAX_CONFIDENCE);
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
        let (node_id, flagged_id) = (alt.id, flagged.id);
        self.store
            .write_async(move |w| {
                w.put_node(&alt)?;
                w.put_edge(&Edge::new(alt.id, EdgeType::Refines, flagged_id))
            })
            .await?;
        Ok(AlternativeBranch {
            node_id,
            reasoning,
            confidence,
        })
    }
}

/// Records a human verdict on any node: a `human_annotation` node with a `supports` /
/// `refines` / `contradicts` edge to it. Questionable and disagree mark every node
/// downstream (see [`downstream_of`]) with `meta.disputed_by` = the annotation; verified
/// clears the node's own mark and the marks its earlier disputes caused downstream.
/// Memory learns from it (see [`checkpoint_feedback`]): verified reinforces the learnings
/// the node's turn used; disagree weakens them and those made from the node or after it.
/// Returns the result (without an alternative branch) and the judged node.
pub fn record_verdict(
    store: &Store,
    target: NodeId,
    verdict: Verdict,
    correction: Option<String>,
    max_chars: usize,
    learn: &LearnParams,
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
    if verdict != Verdict::Questionable {
        let agree = verdict == Verdict::Verified;
        checkpoint_feedback(store, &node, ann_id, agree, &downstream, learn)
            .map_err(|e| ForkError::Model(format!("memory feedback: {e}")))?;
    }
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
