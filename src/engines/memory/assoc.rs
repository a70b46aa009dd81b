//! Seed 002's seven-dimension retrieval over the memory index: text (BM25), concept Jaccard,
//! vector cosine, graph proximity to the best first-pass hits, reinforcement (with the
//! re-learning modifier), temporal validity and recency.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::index::{MemoryIndex, Query, Scored, best};
use crate::store::learning::{Learning, TemporalConfidence};

/// The seven weights (`[memory.nous.weights]`; seed 002's scoring function).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NousWeights {
    pub text: f32,
    pub concept: f32,
    pub vector: f32,
    pub graph: f32,
    pub reinforcement: f32,
    pub temporal: f32,
    pub recency: f32,
}

impl Default for NousWeights {
    fn default() -> Self {
        Self {
            text: 0.15,
            concept: 0.15,
            vector: 0.15,
            graph: 0.15,
            reinforcement: 0.15,
            temporal: 0.15,
            recency: 0.10,
        }
    }
}

/// Seed 002's s_temporal values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemporalScores {
    /// valid_until has passed: still context, barely.
    pub expired: f32,
    /// valid_from after the project's last activity: news.
    pub fresh: f32,
    /// temporal_confidence low: neutral.
    pub low_confidence: f32,
    /// Valid and within bounds.
    pub valid: f32,
}

impl Default for TemporalScores {
    fn default() -> Self {
        Self {
            expired: 0.2,
            fresh: 1.0,
            low_confidence: 0.5,
            valid: 0.8,
        }
    }
}

/// `[memory.nous]`: seed 002's retrieval numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NousParams {
    pub weights: NousWeights,
    pub temporal: TemporalScores,
    /// s_recency halves every this many days (seed 002: 30-day half-life).
    pub recency_half_life_days: f32,
    /// Graph proximity reaches this many edges from the first-pass best (seed 002: 2).
    pub graph_hops: u32,
    /// Each hop past the first multiplies the edge weight by this (seed 002: 0.5).
    pub graph_hop_decay: f32,
    /// How many first-pass best hits the graph walk starts from (the "active memories").
    pub graph_seeds: usize,
    /// Re-learned at least this often is "high recurrence" (seed 002: 3+ sessions).
    pub recurrence_high: u32,
    /// High recurrence moves s_reinforce by this much: up when the feedback on it was
    /// mostly useful, down when mostly wrong (seed 002: ±0.15).
    pub recurrence_modifier: f32,
}

impl Default for NousParams {
    fn default() -> Self {
        Self {
            weights: NousWeights::default(),
            temporal: TemporalScores::default(),
            recency_half_life_days: 30.0,
            graph_hops: 2,
            graph_hop_decay: 0.5,
            graph_seeds: 5,
            recurrence_high: 3,
            recurrence_modifier: 0.15,
        }
    }
}

/// One hit's seven dimensions and their weighted total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dims {
    pub text: f32,
    pub concept: f32,
    pub vector: f32,
    pub graph: f32,
    pub reinforcement: f32,
    pub temporal: f32,
    pub recency: f32,
    pub total: f32,
}

impl Dims {
    fn weigh(&mut self, w: &NousWeights) {
        self.total = w.text * self.text
            + w.concept * self.concept
            + w.vector * self.vector
            + w.graph * self.graph
            + w.reinforcement * self.reinforcement
            + w.temporal * self.temporal
            + w.recency * self.recency;
    }
}

/// What the index keeps of a learning for scoring.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LearnInfo {
    pub concepts: Vec<String>,
    pub reinforcement: f32,
    pub recurrence: u32,
    pub useful: u32,
    pub wrong: u32,
    pub valid_from: Option<DateTime<Utc>>,
    pub valid_until: Option<DateTime<Utc>>,
    pub confidence: TemporalConfidence,
    pub extracted_at: DateTime<Utc>,
    pub reinforced_at: DateTime<Utc>,
    /// Out-edges: target and weight.
    pub edges: Vec<(crate::store::MemoryId, f32)>,
}

impl LearnInfo {
    pub fn of(l: &Learning) -> Self {
        Self {
            concepts: l.concepts.clone(),
            reinforcement: l.reinforcement as f32,
            recurrence: l.recurrence,
            useful: l.useful,
            wrong: l.wrong,
            valid_from: l.valid_from,
            valid_until: l.valid_until,
            confidence: l.temporal_confidence,
            extracted_at: l.extracted_at,
            reinforced_at: l.reinforced_at,
            edges: l.edges.iter().map(|e| (e.target, e.weight)).collect(),
        }
    }
}

/// Jaccard similarity of two sets (0 when both are empty).
pub fn jaccard<T: Eq + std::hash::Hash>(a: &HashSet<T>, b: &HashSet<T>) -> f32 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f32 / union as f32
}

/// Seed 002's s_temporal at `now`.
pub fn s_temporal(
    l: &LearnInfo,
    now: DateTime<Utc>,
    last_activity: Option<DateTime<Utc>>,
    t: &TemporalScores,
) -> f32 {
    if l.valid_until.is_some_and(|u| u < now) {
        return t.expired;
    }
    if let (Some(from), Some(last)) = (l.valid_from, last_activity)
        && from > last
    {
        return t.fresh;
    }
    if l.confidence == TemporalConfidence::Low {
        return t.low_confidence;
    }
    t.valid
}

/// s_reinforce: the score (0–1) moved by the re-learning modifier when the learning recurs
/// often: up when its feedback was mostly useful, down when mostly wrong.
pub fn s_reinforce(l: &LearnInfo, p: &NousParams) -> f32 {
    let mut s = l.reinforcement;
    if l.recurrence >= p.recurrence_high && l.useful + l.wrong > 0 {
        if l.useful >= l.wrong {
            s += p.recurrence_modifier;
        } else {
            s -= p.recurrence_modifier;
        }
    }
    s.clamp(0.0, 1.0)
}

/// The concepts a query names: the known concepts whose words appear in it, in order.
fn query_concepts<'a>(text: &str, known: impl Iterator<Item = &'a str>) -> HashSet<String> {
    let words: Vec<String> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let padded = format!(" {} ", words.join(" "));
    known
        .filter(|c| padded.contains(&format!(" {c} ")))
        .map(str::to_string)
        .collect()
}

impl MemoryIndex {
    /// The associative search: every dimension per admitted entry, the graph walk from the
    /// first pass's best, the best `limit` by the weighted total.
    pub(super) fn associative(&self, q: &Query<'_>, p: &NousParams) -> Vec<Scored> {
        let w = &p.weights;
        let keyword = self.keyword_scores(q.text);
        let cosines = match (q.vector, &self.model_dim()) {
            (Some(v), Some(dim)) if v.len() == *dim => Some(self.cosines(v, *dim)),
            _ => None,
        };
        let known: HashSet<&str> = self
            .docs
            .iter()
            .flatten()
            .filter_map(|d| d.learn.as_ref())
            .flat_map(|l| l.concepts.iter().map(String::as_str))
            .collect();
        let mut qc = query_concepts(q.text, known.into_iter());
        qc.extend(q.filter.concepts.iter().map(|c| c.to_lowercase()));
        let asking =
            !q.filter.browse && (!q.text.trim().is_empty() || !qc.is_empty() || q.vector.is_some());
        let now = q.filter.as_at.unwrap_or(q.now);
        let half_life = p.recency_half_life_days.max(0.001);
        let mut scored: Vec<(usize, Dims)> = Vec::new();
        for (slot, d) in self.docs.iter().enumerate() {
            let Some(d) = d else { continue };
            if !d.admits(q) {
                continue;
            }
            let mut dims = Dims {
                text: keyword[slot],
                vector: cosines
                    .as_ref()
                    .filter(|_| d.has_vector)
                    .map_or(0.0, |c| c[slot].max(0.0)),
                ..Dims::default()
            };
            let since = match &d.learn {
                Some(l) => {
                    let mine: HashSet<String> = l.concepts.iter().cloned().collect();
                    dims.concept = jaccard(&qc, &mine);
                    dims.reinforcement = s_reinforce(l, p);
                    dims.temporal = s_temporal(l, now, q.filter.last_activity, &p.temporal);
                    l.reinforced_at
                }
                None => {
                    dims.reinforcement = d.importance;
                    dims.temporal = p.temporal.valid;
                    d.created
                }
            };
            let age_days = (q.now - since).num_seconds().max(0) as f32 / 86_400.0;
            dims.recency = (-age_days / half_life).exp2();
            dims.weigh(w);
            scored.push((slot, dims));
        }
        // The graph walk starts from the first pass's best relevant hits.
        let relevant = |d: &Dims| d.text > 0.0 || d.concept > 0.0 || d.vector > 0.0;
        let mut first: Vec<&(usize, Dims)> = scored.iter().filter(|(_, d)| relevant(d)).collect();
        first.sort_by(|a, b| b.1.total.total_cmp(&a.1.total));
        let seeds: Vec<usize> = first.iter().take(p.graph_seeds).map(|(s, _)| *s).collect();
        let proximity = self.proximity(&seeds, p);
        let mut out = Vec::new();
        for (slot, mut dims) in scored {
            dims.graph = proximity.get(&slot).copied().unwrap_or(0.0);
            if asking && !relevant(&dims) && dims.graph <= 0.0 {
                continue;
            }
            dims.weigh(w);
            let Some(d) = &self.docs[slot] else { continue };
            out.push(Scored {
                id: d.id,
                score: dims.total,
                keyword: dims.text,
                cosine: dims.vector,
                date_match: false,
                dims: Some(dims),
            });
        }
        best(out, q.limit)
    }

    /// Proximity of every slot reachable from `seeds` within the configured hops over the
    /// learnings' edges (either direction): the last edge's weight × decay per hop past the
    /// first, the best path's.
    fn proximity(&self, seeds: &[usize], p: &NousParams) -> HashMap<usize, f32> {
        let mut adj: HashMap<usize, Vec<(usize, f32)>> = HashMap::new();
        for (slot, d) in self.docs.iter().enumerate() {
            let Some(l) = d.as_ref().and_then(|d| d.learn.as_ref()) else {
                continue;
            };
            for (target, weight) in &l.edges {
                if let Some(t) = self.slots.get(target) {
                    adj.entry(slot).or_default().push((*t, *weight));
                    adj.entry(*t).or_default().push((slot, *weight));
                }
            }
        }
        let mut best: HashMap<usize, f32> = HashMap::new();
        let mut frontier: Vec<usize> = seeds.to_vec();
        let mut factor = 1.0f32;
        for _ in 0..p.graph_hops {
            let mut next = Vec::new();
            for s in &frontier {
                for (t, w) in adj.get(s).into_iter().flatten() {
                    if seeds.contains(t) {
                        continue;
                    }
                    let v = (w * factor).clamp(0.0, 1.0);
                    let e = best.entry(*t).or_insert(0.0);
                    if v > *e {
                        *e = v;
                        next.push(*t);
                    }
                }
            }
            frontier = next;
            factor *= p.graph_hop_decay;
        }
        best
    }
}
