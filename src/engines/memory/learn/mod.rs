//! Learnings (seed 002, Nous): what glassbox learns from sessions — its own and imported
//! Claude Code ones — on top of the event log and read models of `store::learning`.
//!
//! - this file: `[memory.learn]`, feedback (reinforce, weaken, belief revision on a
//!   disagreement), decay, and one learning's view (`show`).
//! - `extract.rs`: the structured extractor and re-learning detection.
//! - `queue.rs`: the ingest queue (leases, bounded retries, dead letters) and its worker.
//! - `reconcile.rs`: contradictions (NLI with a cache, vector clocks) and decay archival.
//! - `hook.rs`: Claude Code's SessionStart context and the Stop hook's enqueue.

pub mod extract;
pub mod hook;
pub mod queue;
pub mod reconcile;
#[cfg(test)]
mod tests;

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Memory, Result};
use crate::store::learning::{
    EventSource, Learning, LearningEvent, LearningEventType, NliResult, idempotency_key,
};
use crate::store::{MemoryId, Node, NodeId, Store};

/// `[memory.learn]`: seed 002's lifecycle numbers, the extractor's budget, the ingest queue
/// and the hooks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LearnParams {
    /// Added when a session that used a learning ends well (seed 002: +0.1).
    pub useful_delta: f64,
    /// Added on a correction (seed 002: −0.2).
    pub wrong_delta: f64,
    /// A learning whose decayed score falls below this is archived (seed 002: 0.1).
    pub archive_below: f64,
    /// The score halves every this many days without reinforcement (seed 002: time decay
    /// every 30 days).
    pub decay_half_life_days: f64,
    /// Content Jaccard at or above this: the same learning again (seed 002 tier 1: 0.75).
    pub duplicate_jaccard: f64,
    /// Embedding cosine at or above this: a paraphrase, merged (seed 002 tier 2: 0.85).
    pub paraphrase_cosine: f64,
    /// A learning re-learned often (`[memory.nous] recurrence_high` times) whose score is
    /// above this gets `recurrence_boost` instead of `useful_delta` (seed 002: > 0.7, +0.3).
    pub high_score: f64,
    pub recurrence_boost: f64,
    /// Content Jaccard from this up to `duplicate_jaccard`: a logged re-learning near miss
    /// (seed 002: 0.65–0.74).
    pub relearning_jaccard: f64,
    /// Pairs whose concepts overlap at least this much get an NLI judgement (seed 002: 0.5).
    pub contradiction_concepts: f64,
    /// A contradiction this sure (or surer) penalises both learnings (seed 002: 0.7).
    pub contradiction_confidence: f64,
    /// …by this factor each (seed 002: × 0.7).
    pub contradiction_multiplier: f64,
    /// NLI calls one reconcile makes at most; the rest wait for the next.
    pub nli_max_pairs: usize,
    /// Concept tags per extracted learning (seed 002: 3–8).
    pub min_concepts: usize,
    pub max_concepts: usize,
    /// Learnings one extraction returns at most.
    pub max_learnings: usize,
    /// Existing learnings shown to the extractor as edge targets.
    pub edge_candidates: usize,
    /// Characters of a session the extractor reads (its newest part when longer).
    pub session_chars: usize,
    /// Answer-token cap of an extraction or NLI call.
    pub max_tokens: u32,
    /// Attempts of a queue item before it is dead-lettered.
    pub max_attempts: u32,
    /// A claimed item is free again after this many seconds without its worker.
    pub lease_secs: u64,
    /// Seconds before a failed item is tried again (doubling with each attempt).
    pub retry_backoff_secs: u64,
    /// The SessionStart hook answers within this many milliseconds or prints empty context
    /// (seed 002: hard timeout 500 ms).
    pub hook_timeout_ms: u64,
    /// Learnings the SessionStart context holds at most.
    pub hook_top_k: usize,
    /// Characters of SessionStart context at most.
    pub hook_chars: usize,
}

impl Default for LearnParams {
    fn default() -> Self {
        Self {
            useful_delta: 0.1,
            wrong_delta: -0.2,
            archive_below: 0.1,
            decay_half_life_days: 30.0,
            duplicate_jaccard: 0.75,
            paraphrase_cosine: 0.85,
            high_score: 0.7,
            recurrence_boost: 0.3,
            relearning_jaccard: 0.65,
            contradiction_concepts: 0.5,
            contradiction_confidence: 0.7,
            contradiction_multiplier: 0.7,
            nli_max_pairs: 200,
            min_concepts: 3,
            max_concepts: 8,
            max_learnings: 3,
            edge_candidates: 5,
            session_chars: 12_000,
            max_tokens: 1024,
            max_attempts: 3,
            lease_secs: 120,
            retry_backoff_secs: 10,
            hook_timeout_ms: 500,
            hook_top_k: 8,
            hook_chars: 2_000,
        }
    }
}

/// One structured model call, asked again once when `read` cannot make sense of the answer;
/// a second miss is [`LearnError::Malformed`] with the last raw answer.
pub(crate) async fn call_twice<T>(
    provider: &dyn crate::engines::llm::Provider,
    call: &crate::engines::got::CallSettings,
    system: &str,
    user: &str,
    schema: &crate::engines::llm::ToolSpec,
    cancel: &tokio_util::sync::CancellationToken,
    read: impl Fn(&str) -> std::result::Result<T, String>,
) -> std::result::Result<T, extract::LearnError> {
    let mut reason = String::new();
    let mut raw = String::new();
    for _ in 0..2 {
        let reply = crate::engines::got::call_model(
            provider,
            call,
            system,
            user.to_string(),
            schema.clone(),
            cancel,
        )
        .await?;
        raw = reply.text;
        match read(&raw) {
            Ok(v) => return Ok(v),
            Err(e) => reason = e,
        }
    }
    Err(extract::LearnError::Malformed { reason, raw })
}

/// What a learning's score is after decay at `now`.
pub fn decayed(l: &Learning, now: DateTime<Utc>, half_life_days: f64) -> f64 {
    let days = (now - l.reinforced_at).num_seconds().max(0) as f64 / 86_400.0;
    l.reinforcement * (-days / half_life_days.max(0.001)).exp2()
}

/// Word-set Jaccard of two texts (the store's tokenizer).
pub fn content_jaccard(a: &str, b: &str) -> f64 {
    let set = |t: &str| -> HashSet<String> { crate::store::search::tokenize(t).collect() };
    f64::from(super::assoc::jaccard(&set(a), &set(b)))
}

/// Concept-set Jaccard.
pub fn concept_jaccard(a: &[String], b: &[String]) -> f64 {
    let set = |c: &[String]| -> HashSet<String> { c.iter().cloned().collect() };
    f64::from(super::assoc::jaccard(&set(a), &set(b)))
}

/// A learning with its events, access log and contradictions: `memory show`.
#[derive(Clone, Debug, Serialize)]
pub struct LearningView {
    pub learning: Learning,
    /// The score after decay, now.
    pub score: f64,
    pub events: Vec<LearningEvent>,
    pub accesses: usize,
    pub contradictions: Vec<(MemoryId, NliResult)>,
}

/// A learning's full view, or `None` when the id is no learning (a core fact).
pub fn view(store: &Store, id: MemoryId, p: &LearnParams) -> Result<Option<LearningView>> {
    let Some(learning) = store.learning(id)? else {
        return Ok(None);
    };
    let mut contradictions = Vec::new();
    for other in &learning.contradicted_with {
        if let Some(r) = store.nli(id, *other)? {
            contradictions.push((*other, r));
        }
    }
    Ok(Some(LearningView {
        score: decayed(&learning, Utc::now(), p.decay_half_life_days),
        events: store.learning_events_of(id)?,
        accesses: store.access_log(id)?.len(),
        learning,
        contradictions,
    }))
}

/// Appends a reinforcement (`useful`) or a weakening (wrong) on each live learning of
/// `ids`; `key` makes the feedback idempotent (one per learning and key). Returns how many
/// events were new.
pub fn feedback(
    store: &Store,
    ids: &[MemoryId],
    useful: bool,
    key: &str,
    session: &str,
    p: &LearnParams,
) -> Result<usize> {
    let mut n = 0;
    for id in ids {
        let Some(l) = store.learning(*id)? else {
            continue;
        };
        if !l.is_live() {
            continue;
        }
        let (kind, delta, label) = if useful {
            (
                LearningEventType::LearningReinforced,
                p.useful_delta,
                "useful",
            )
        } else {
            (LearningEventType::LearningWeakened, p.wrong_delta, "wrong")
        };
        let mut payload = Map::new();
        payload.insert("reinforcement_delta".into(), json!(delta));
        payload.insert("feedback".into(), json!(label));
        let ev = LearningEvent::new(
            kind,
            *id,
            idempotency_key(&l.project_id, session, &format!("{key}:{id}"), "feedback"),
            session,
            &l.project_id,
            EventSource::UserReview,
            payload,
        );
        n += usize::from(store.write(|w| w.append_learning_event(ev))?.new);
    }
    Ok(n)
}

/// The learnings a node's turn was given (`meta.memory_used` of the node or of the query
/// before it in the session).
fn used_by(nodes: &[Node], target: NodeId) -> Vec<MemoryId> {
    let pos = nodes.iter().position(|n| n.id == target);
    let upto = pos.map_or(&nodes[..0], |p| &nodes[..=p]);
    upto.iter()
        .rev()
        .find_map(|n| n.meta.get("memory_used").and_then(Value::as_array))
        .map(|a| a.iter().filter_map(|v| v.as_str()?.parse().ok()).collect())
        .unwrap_or_default()
}

/// What a human checkpoint does to memory: `verified` reinforces the learnings the node's
/// turn used; `disagree` weakens them, and weakens every learning whose provenance is the
/// node or one of `downstream` (belief revision). Returns the events appended.
pub fn checkpoint_feedback(
    store: &Store,
    target: &Node,
    annotation: NodeId,
    agree: bool,
    downstream: &[NodeId],
    p: &LearnParams,
) -> Result<usize> {
    let nodes = store.session_nodes(target.session)?;
    let used = used_by(&nodes, target.id);
    let session = target.session.to_string();
    let key = format!("checkpoint:{annotation}");
    let mut n = feedback(store, &used, agree, &key, &session, p)?;
    if !agree {
        let mut affected: HashSet<NodeId> = downstream.iter().copied().collect();
        affected.insert(target.id);
        let derived: Vec<MemoryId> = store
            .learnings()?
            .into_iter()
            .filter(|l| l.is_live() && !used.contains(&l.id))
            .filter(|l| l.provenance.node.is_some_and(|n| affected.contains(&n)))
            .map(|l| l.id)
            .collect();
        n += feedback(store, &derived, false, &key, &session, p)?;
    }
    Ok(n)
}

impl Memory {
    /// The learnings' parameters.
    pub fn learn_params(&self) -> &LearnParams {
        &self.params.learn
    }

    /// Archives learnings (`memory rm`, the TUI's delete) and deletes core facts; returns how
    /// many existed.
    pub fn retract(&self, ids: &[MemoryId], reason: &str) -> Result<usize> {
        Ok(self.store.write(|w| {
            let mut n = 0;
            for id in ids {
                let key = format!("retract:{id}");
                if w.archive_learning(*id, reason, &key)? {
                    n += 1;
                } else {
                    n += usize::from(w.delete_memory(*id)?);
                }
            }
            Ok(n)
        })?)
    }
}
