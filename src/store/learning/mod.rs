//! Learnings (seed 002, Nous): an append-only log of learning events and the projections folded
//! from it. The log is the truth; the `learnings` rows, the concept and edge indexes and the
//! learnings' rows in `memories` are read models that `Store::rebuild_learnings` can always
//! derive again from event 0.
//!
//! - this file: the event, its validation, vector clocks, the projected [`Learning`] and the
//!   fold ([`Learning::apply`]).
//! - `write.rs`: appending (validate, dedupe by idempotency key, fold into the read models in
//!   the same transaction), the access log, NLI results, the ingest queue, the injection cache.
//! - `read.rs`: reads (by id, by scope with the entries, in batches on a byte backend), and
//!   the full replay with its comparison.

mod read;
#[cfg(test)]
mod tests;
mod write;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::{MemoryEntry, MemoryId, MemoryScope, MemoryTier, Provenance};

pub use read::{RebuildReport, concept_key};
pub use write::{
    AccessRow, Appended, CachedInjection, EntryLearning, NliResult, QueueItem, QueueStatus,
    project_of,
};

/// The payload schema version new events are written with (2: extraction carries concepts
/// and edges; 1: legacy records, where they may be missing).
pub const LEARNING_SCHEMA_VERSION: u32 = 2;

/// The name of the learnings projection in `projection_checkpoints`.
pub const LEARNINGS_PROJECTION: &str = "learnings";

/// Vector clocks keep at most this many sessions (seed 002: current + 63 peers).
pub const CLOCK_MAX_KEYS: usize = 64;

/// The seven event types of seed 002. Anything else is refused when read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LearningEventType {
    LearningExtracted,
    LearningValidated,
    LearningReinforced,
    LearningWeakened,
    LearningContradicted,
    LearningSuperseded,
    LearningArchived,
}

impl LearningEventType {
    pub const ALL: [LearningEventType; 7] = [
        LearningEventType::LearningExtracted,
        LearningEventType::LearningValidated,
        LearningEventType::LearningReinforced,
        LearningEventType::LearningWeakened,
        LearningEventType::LearningContradicted,
        LearningEventType::LearningSuperseded,
        LearningEventType::LearningArchived,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LearningEventType::LearningExtracted => "LearningExtracted",
            LearningEventType::LearningValidated => "LearningValidated",
            LearningEventType::LearningReinforced => "LearningReinforced",
            LearningEventType::LearningWeakened => "LearningWeakened",
            LearningEventType::LearningContradicted => "LearningContradicted",
            LearningEventType::LearningSuperseded => "LearningSuperseded",
            LearningEventType::LearningArchived => "LearningArchived",
        }
    }

    /// The payload keys an event of this type must carry (seed 002's table).
    pub fn required_keys(self) -> &'static [&'static str] {
        match self {
            LearningEventType::LearningExtracted => &["content", "extractor_version"],
            LearningEventType::LearningValidated => &[],
            LearningEventType::LearningReinforced | LearningEventType::LearningWeakened => {
                &["reinforcement_delta"]
            }
            LearningEventType::LearningContradicted => {
                &["contradicted_with", "contradiction_multiplier"]
            }
            LearningEventType::LearningSuperseded => &["superseded_by"],
            LearningEventType::LearningArchived => &["reason"],
        }
    }
}

impl fmt::Display for LearningEventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LearningEventType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown learning event type '{s}' ({})",
                    Self::ALL.map(Self::as_str).join(", ")
                )
            })
    }
}

/// What produced an event (seed 002's taxonomy, plus `live` for glassbox's own turns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventSource {
    FsWatch,
    FsReconcile,
    HistoricalBackfill,
    UserReview,
    /// A glassbox think turn or the reasoning around it (checkpoints, memory tools).
    Live,
}

impl EventSource {
    pub fn as_str(self) -> &'static str {
        match self {
            EventSource::FsWatch => "fs_watch",
            EventSource::FsReconcile => "fs_reconcile",
            EventSource::HistoricalBackfill => "historical_backfill",
            EventSource::UserReview => "user_review",
            EventSource::Live => "live",
        }
    }
}

/// How sure the extractor was of a learning's validity window.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TemporalConfidence {
    Low,
    #[default]
    Medium,
    High,
}

impl TemporalConfidence {
    pub fn as_str(self) -> &'static str {
        match self {
            TemporalConfidence::Low => "low",
            TemporalConfidence::Medium => "medium",
            TemporalConfidence::High => "high",
        }
    }
}

/// A causal clock: session id → counter (seed 002's vector clock contract). A `BTreeMap`, so
/// its JSON is canonical (sorted keys, no duplicates); an absent clock is the empty one.
pub type VectorClock = BTreeMap<String, u64>;

/// Component-wise max of two clocks.
pub fn clock_merge(into: &mut VectorClock, other: &VectorClock) {
    for (k, v) in other {
        let e = into.entry(k.clone()).or_insert(0);
        *e = (*e).max(*v);
    }
}

/// How two clocks relate: `Some(Less)` when `a` happened before `b`, `Some(Equal)` when they
/// are the same, `None` when they are concurrent.
pub fn clock_compare(a: &VectorClock, b: &VectorClock) -> Option<Ordering> {
    let (mut less, mut greater) = (false, false);
    for k in a.keys().chain(b.keys()) {
        let (x, y) = (
            a.get(k).copied().unwrap_or(0),
            b.get(k).copied().unwrap_or(0),
        );
        less |= x < y;
        greater |= x > y;
    }
    match (less, greater) {
        (false, false) => Some(Ordering::Equal),
        (true, false) => Some(Ordering::Less),
        (false, true) => Some(Ordering::Greater),
        (true, true) => None,
    }
}

/// Keeps `current` and at most [`CLOCK_MAX_KEYS`]` − 1` peers: those in `recent` (most recently
/// observed first), then the highest counters.
pub fn clock_trim(clock: &mut VectorClock, current: &str, recent: &[String]) {
    if clock.len() <= CLOCK_MAX_KEYS {
        return;
    }
    let mut keep: Vec<String> = vec![current.to_string()];
    for k in recent {
        if keep.len() == CLOCK_MAX_KEYS {
            break;
        }
        if clock.contains_key(k) && !keep.contains(k) {
            keep.push(k.clone());
        }
    }
    let mut rest: Vec<(&String, &u64)> = clock.iter().filter(|(k, _)| !keep.contains(k)).collect();
    rest.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let extra: Vec<String> = rest
        .into_iter()
        .take(CLOCK_MAX_KEYS - keep.len())
        .map(|(k, _)| k.clone())
        .collect();
    keep.extend(extra);
    clock.retain(|k, _| keep.contains(k));
}

/// `sha256(project_id + session_id + learning_index + extractor_version)`, hex.
pub fn idempotency_key(
    project_id: &str,
    session_id: &str,
    learning_index: &str,
    extractor_version: &str,
) -> String {
    let mut h = Sha256::new();
    for part in [project_id, session_id, learning_index, extractor_version] {
        h.update(part.as_bytes());
    }
    h.finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
}

/// One learning event. `event_id` is given when it is appended (0 before).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LearningEvent {
    #[serde(default)]
    pub event_id: u64,
    pub event_uuid: uuid::Uuid,
    pub learning_id: MemoryId,
    pub event_type: LearningEventType,
    pub idempotency_key: String,
    pub schema_version: u32,
    pub transaction_time: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<DateTime<Utc>>,
    #[serde(default)]
    pub vector_clock: VectorClock,
    pub payload: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_event_id: Option<u64>,
    pub session_id: String,
    pub project_id: String,
    pub source: EventSource,
}

impl LearningEvent {
    /// A new event of `event_type` on `learning` (time now, schema current, a fresh uuid).
    pub fn new(
        event_type: LearningEventType,
        learning: MemoryId,
        idempotency_key: String,
        session_id: &str,
        project_id: &str,
        source: EventSource,
        payload: Map<String, Value>,
    ) -> Self {
        Self {
            event_id: 0,
            event_uuid: uuid::Uuid::now_v7(),
            learning_id: learning,
            event_type,
            idempotency_key,
            schema_version: LEARNING_SCHEMA_VERSION,
            transaction_time: Utc::now(),
            valid_from: None,
            valid_until: None,
            vector_clock: VectorClock::new(),
            payload,
            parent_event_id: None,
            session_id: session_id.to_string(),
            project_id: project_id.to_string(),
            source,
        }
    }

    /// Seed 002's payload validation: the type's required keys (and, for extraction at schema
    /// 2 or later, concepts and edges), with the types the fold reads.
    pub fn validate(&self) -> Result<(), String> {
        let t = self.event_type;
        let missing: Vec<&str> = t
            .required_keys()
            .iter()
            .copied()
            .filter(|k| !self.payload.contains_key(*k))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "{t} event is missing payload key{} {}",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            ));
        }
        if self.idempotency_key.is_empty() {
            return Err(format!("{t} event has an empty idempotency_key"));
        }
        if self.schema_version == 0 || self.schema_version > LEARNING_SCHEMA_VERSION {
            return Err(format!(
                "{t} event has schema_version {} (1–{LEARNING_SCHEMA_VERSION})",
                self.schema_version
            ));
        }
        let number = |k: &str| -> Result<f64, String> {
            self.payload
                .get(k)
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("{t} event: payload key {k} is not a number"))
        };
        let id = |k: &str| -> Result<MemoryId, String> {
            self.payload
                .get(k)
                .and_then(Value::as_str)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("{t} event: payload key {k} is not a learning id"))
        };
        match t {
            LearningEventType::LearningExtracted => {
                if self.schema_version >= 2 {
                    for k in ["concepts", "edges"] {
                        if !self.payload.contains_key(k) {
                            return Err(format!(
                                "{t} event (schema {}) is missing payload key {k}",
                                self.schema_version
                            ));
                        }
                    }
                }
                let content = self.payload.get("content").and_then(Value::as_str);
                if content.is_none_or(|c| c.trim().is_empty()) {
                    return Err(format!("{t} event: payload key content is empty"));
                }
                ExtractedPayload::read(&self.payload).map(drop)
            }
            LearningEventType::LearningReinforced | LearningEventType::LearningWeakened => {
                number("reinforcement_delta").map(drop)
            }
            LearningEventType::LearningContradicted => {
                let m = number("contradiction_multiplier")?;
                if !(0.0..=1.0).contains(&m) {
                    return Err(format!(
                        "{t} event: contradiction_multiplier {m} is outside 0–1"
                    ));
                }
                id("contradicted_with").map(drop)
            }
            LearningEventType::LearningSuperseded => id("superseded_by").map(drop),
            LearningEventType::LearningValidated | LearningEventType::LearningArchived => Ok(()),
        }
    }
}

/// How one learning relates to another (seed 002's `rel_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeRel {
    RelatesTo,
    Supersedes,
    Contradicts,
    DependsOn,
}

impl EdgeRel {
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeRel::RelatesTo => "relates_to",
            EdgeRel::Supersedes => "supersedes",
            EdgeRel::Contradicts => "contradicts",
            EdgeRel::DependsOn => "depends_on",
        }
    }

    pub(super) fn code(self) -> u8 {
        match self {
            EdgeRel::RelatesTo => 0,
            EdgeRel::Supersedes => 1,
            EdgeRel::Contradicts => 2,
            EdgeRel::DependsOn => 3,
        }
    }

    pub(super) fn from_code(c: u8) -> Option<Self> {
        [
            EdgeRel::RelatesTo,
            EdgeRel::Supersedes,
            EdgeRel::Contradicts,
            EdgeRel::DependsOn,
        ]
        .into_iter()
        .find(|r| r.code() == c)
    }
}

/// An edge from one learning to another.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LearningEdge {
    pub target: MemoryId,
    pub rel: EdgeRel,
    pub weight: f32,
}

/// The fields of a `LearningExtracted` payload the fold reads. Besides the seed's content,
/// concepts and edges it carries the MemGPT view's starting point (tier, tags, importance,
/// provenance, scope) and when it happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExtractedPayload {
    pub content: String,
    pub extractor_version: String,
    #[serde(default)]
    pub concepts: Vec<String>,
    #[serde(default)]
    pub edges: Vec<LearningEdge>,
    #[serde(default)]
    pub temporal_confidence: TemporalConfidence,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reinforcement: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<MemoryScope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<MemoryTier>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f32>,
    #[serde(default)]
    pub provenance: Provenance,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<DateTime<Utc>>,
}

impl ExtractedPayload {
    pub fn read(payload: &Map<String, Value>) -> Result<Self, String> {
        serde_json::from_value(Value::Object(payload.clone()))
            .map_err(|e| format!("LearningExtracted payload: {e}"))
    }

    pub fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }
}

/// Normalises concept tags: trimmed, lowercase, inner whitespace single, unique, sorted.
pub fn normalise_concepts<S: AsRef<str>>(tags: &[S]) -> Vec<String> {
    let mut out: Vec<String> = tags
        .iter()
        .map(|t| {
            t.as_ref()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .filter(|t| !t.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Where a learning is in its lifecycle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LearningStatus {
    #[default]
    Active,
    /// A newer learning replaced it; kept, its validity closed.
    Superseded,
    /// Out of the active set (decayed, deleted or retracted); its events remain.
    Archived,
}

impl LearningStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            LearningStatus::Active => "active",
            LearningStatus::Superseded => "superseded",
            LearningStatus::Archived => "archived",
        }
    }
}

/// A learning as the events left it: the `learnings` read model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Learning {
    pub id: MemoryId,
    pub content: String,
    pub concepts: Vec<String>,
    pub edges: Vec<LearningEdge>,
    pub scope: MemoryScope,
    pub project_id: String,
    pub session_id: String,
    pub source: EventSource,
    pub extractor_version: String,
    /// Usage-weighted relevance (seed 002's reinforcement_score).
    pub reinforcement: f64,
    /// How many times it was learned again (duplicates and paraphrases merged into it).
    pub recurrence: u32,
    /// Feedback: sessions that used it and ended well, and corrections.
    #[serde(default)]
    pub useful: u32,
    #[serde(default)]
    pub wrong: u32,
    pub valid_from: Option<DateTime<Utc>>,
    pub valid_until: Option<DateTime<Utc>>,
    pub temporal_confidence: TemporalConfidence,
    /// Transaction time of its extraction: when glassbox learned it.
    pub extracted_at: DateTime<Utc>,
    /// When what it says happened (the session's time for backfilled learnings).
    pub occurred_at: DateTime<Utc>,
    /// Transaction time of its last reinforcement (or extraction): decay runs from here.
    pub reinforced_at: DateTime<Utc>,
    pub status: LearningStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<MemoryId>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contradicted_with: Vec<MemoryId>,
    pub vector_clock: VectorClock,
    pub events: u32,
    pub last_event_id: u64,
    /// The MemGPT view's starting point (tier, tags, importance, provenance).
    pub tier: MemoryTier,
    pub tags: Vec<String>,
    pub importance: f32,
    pub provenance: Provenance,
}

/// Reinforcement of a new learning unless its extraction says otherwise.
pub const INITIAL_REINFORCEMENT: f64 = 0.5;
/// Seed 002's projection: a superseded learning's score is halved.
pub const SUPERSEDED_MULTIPLIER: f64 = 0.5;

impl Learning {
    /// Folds one event into the state of its learning (`None` before its extraction).
    pub fn apply(state: &mut Option<Learning>, ev: &LearningEvent) -> Result<(), String> {
        if ev.event_type == LearningEventType::LearningExtracted {
            if state.is_some() {
                // A second extraction of the same id (an import of an export) is a no-op.
                return Ok(());
            }
            let p = ExtractedPayload::read(&ev.payload)?;
            let occurred = p.occurred_at.unwrap_or(ev.transaction_time);
            *state = Some(Learning {
                id: ev.learning_id,
                content: p.content,
                concepts: normalise_concepts(&p.concepts),
                edges: p.edges,
                scope: p
                    .scope
                    .unwrap_or_else(|| MemoryScope::Project(ev.project_id.clone())),
                project_id: ev.project_id.clone(),
                session_id: ev.session_id.clone(),
                source: ev.source,
                extractor_version: p.extractor_version,
                reinforcement: p.reinforcement.unwrap_or(INITIAL_REINFORCEMENT),
                recurrence: 1,
                useful: 0,
                wrong: 0,
                valid_from: ev.valid_from,
                valid_until: ev.valid_until,
                temporal_confidence: p.temporal_confidence,
                extracted_at: ev.transaction_time,
                occurred_at: occurred,
                reinforced_at: ev.transaction_time,
                status: LearningStatus::Active,
                superseded_by: None,
                contradicted_with: Vec::new(),
                vector_clock: ev.vector_clock.clone(),
                events: 1,
                last_event_id: ev.event_id,
                tier: p.tier.unwrap_or(MemoryTier::Archival),
                tags: p.tags,
                importance: p.importance.unwrap_or(0.5),
                provenance: p.provenance,
            });
            return Ok(());
        }
        let Some(l) = state.as_mut() else {
            return Err(format!(
                "{} on learning {} before its LearningExtracted event",
                ev.event_type, ev.learning_id
            ));
        };
        let num = |k: &str| ev.payload.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let id = |k: &str| {
            ev.payload
                .get(k)
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<MemoryId>().ok())
        };
        l.events += 1;
        l.last_event_id = ev.event_id;
        clock_merge(&mut l.vector_clock, &ev.vector_clock);
        match ev.event_type {
            LearningEventType::LearningExtracted => {}
            LearningEventType::LearningValidated => {}
            LearningEventType::LearningReinforced | LearningEventType::LearningWeakened => {
                l.reinforcement += num("reinforcement_delta");
                if ev.event_type == LearningEventType::LearningReinforced {
                    l.reinforced_at = ev.transaction_time;
                }
                if ev.payload.get("recurrence").and_then(Value::as_bool) == Some(true) {
                    l.recurrence += 1;
                }
                match ev.payload.get("feedback").and_then(Value::as_str) {
                    Some("useful") => l.useful += 1,
                    Some("wrong") => l.wrong += 1,
                    _ => {}
                }
                if let Some(Value::Array(tags)) = ev.payload.get("concepts") {
                    // OR-set: a re-learning adds the concepts it came with.
                    let mut all = l.concepts.clone();
                    all.extend(tags.iter().filter_map(Value::as_str).map(str::to_string));
                    l.concepts = normalise_concepts(&all);
                }
            }
            LearningEventType::LearningContradicted => {
                l.reinforcement *= num("contradiction_multiplier");
                if let Some(other) = id("contradicted_with")
                    && !l.contradicted_with.contains(&other)
                {
                    l.contradicted_with.push(other);
                }
            }
            LearningEventType::LearningSuperseded => {
                l.reinforcement *= SUPERSEDED_MULTIPLIER;
                l.valid_until = Some(ev.transaction_time);
                l.superseded_by = id("superseded_by");
                l.status = LearningStatus::Superseded;
            }
            LearningEventType::LearningArchived => l.status = LearningStatus::Archived,
        }
        Ok(())
    }

    /// Whether it is in the active set (searchable).
    pub fn is_live(&self) -> bool {
        self.status != LearningStatus::Archived
    }

    /// The learning's row in `memories`: its MemGPT view. The tier, tags, importance and
    /// meta an existing row has are the view's own and are kept.
    pub fn entry(&self, existing: Option<&MemoryEntry>) -> MemoryEntry {
        MemoryEntry {
            id: self.id,
            tier: existing.map_or(self.tier, |e| e.tier),
            scope: self.scope.clone(),
            section: None,
            content: self.content.clone(),
            tags: existing.map_or_else(|| self.tags.clone(), |e| e.tags.clone()),
            importance: existing.map_or(self.importance, |e| e.importance),
            created_at: self.occurred_at,
            updated_at: existing.map_or(self.extracted_at, |e| e.updated_at),
            provenance: self.provenance.clone(),
            meta: existing.map(|e| e.meta.clone()).unwrap_or_default(),
        }
    }
}
