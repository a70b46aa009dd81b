//! The extractor: one structured model call turns a session into learnings (content, concept
//! tags, edges to existing learnings, validity window), each appended as an event. Before a
//! learning joins memory it is checked against what memory holds (seed 002's re-learning
//! tiers): the same words again or a paraphrase reinforce the existing learning instead; a
//! near miss is logged on it.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::{LearnParams, content_jaccard};
use crate::engines::got::CallSettings;
use crate::engines::llm::{LlmError, Provider, ToolSpec};
use crate::engines::memory::index::{SearchMode, embedding_text, quantize};
use crate::engines::memory::{Memory, MemoryError};
use crate::store::learning::{
    EdgeRel, EventSource, ExtractedPayload, LearningEdge, LearningEvent, LearningEventType,
    TemporalConfidence, VectorClock, clock_merge, idempotency_key, normalise_concepts, project_of,
};
use crate::store::{
    MemoryEntry, MemoryId, MemoryTier, NodeType, Provenance, SessionId, StoredVector,
};

/// The extractor's version: part of every idempotency key it makes.
pub const EXTRACTOR_VERSION: &str = "glassbox-extract-v1";

/// How a learning relates to an existing one, as the extractor may say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    RelatesTo,
    DependsOn,
    Supersedes,
}

impl Relation {
    fn rel(self) -> EdgeRel {
        match self {
            Relation::RelatesTo => EdgeRel::RelatesTo,
            Relation::DependsOn => EdgeRel::DependsOn,
            Relation::Supersedes => EdgeRel::Supersedes,
        }
    }
}

/// An edge the extractor proposes: the label of an existing learning shown to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExtractedEdge {
    #[schemars(length(min = 1, max = 4))]
    pub target: String,
    pub relation: Relation,
    #[schemars(range(min = 0.0, max = 1.0))]
    pub strength: f64,
}

/// One extracted learning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExtractedLearning {
    #[schemars(length(min = 10, max = 200))]
    pub content: String,
    /// Seed 002: 3–8 concept tags; [`extraction_schema`] sets the bounds from the config
    /// and caps each tag at [`CONCEPT_CHARS`].
    #[schemars(length(min = 1, max = 8))]
    pub concepts: Vec<String>,
    #[schemars(length(max = 2))]
    pub edges: Vec<ExtractedEdge>,
    /// An ISO 8601 date or "unknown".
    #[schemars(length(min = 1, max = 12))]
    pub valid_from: String,
    /// "current", "unknown" or an ISO 8601 date.
    #[schemars(length(min = 1, max = 12))]
    pub valid_until: String,
    pub temporal_confidence: TemporalConfidence,
}

/// The extractor's structured answer (`record_learnings`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExtractionAnswer {
    #[schemars(length(min = 1, max = 5))]
    pub learnings: Vec<ExtractedLearning>,
}

/// The longest concept tag the schema allows: a tag names a thing, and the limits together
/// keep the local model's answer inside its structured-answer token cap.
pub const CONCEPT_CHARS: usize = 24;

/// The answer's schema with the configured bounds, and edge targets limited to `labels`
/// (no edges at all when there are none).
pub fn extraction_schema(p: &LearnParams, labels: &[String]) -> ToolSpec {
    let mut tool = ToolSpec::of::<ExtractionAnswer>("record_learnings", "Record the learnings.");
    let s = &mut tool.input_schema;
    if let Some(v) = s.pointer_mut("/properties/learnings") {
        v["maxItems"] = json!(p.max_learnings.max(1));
    }
    let item = "/properties/learnings/items/properties";
    if let Some(v) = s.pointer_mut(&format!("{item}/concepts")) {
        v["minItems"] = json!(p.min_concepts);
        v["maxItems"] = json!(p.max_concepts.max(p.min_concepts));
        v["items"]["minLength"] = json!(2);
        v["items"]["maxLength"] = json!(CONCEPT_CHARS);
    }
    if labels.is_empty()
        && let Some(v) = s.pointer_mut(&format!("{item}/edges"))
    {
        v["maxItems"] = json!(0);
    }
    if let Some(v) = s.pointer_mut(&format!("{item}/edges/items/properties/target")) {
        let allowed: Vec<Value> = if labels.is_empty() {
            vec![json!("none")]
        } else {
            labels.iter().map(|l| json!(l)).collect()
        };
        v["enum"] = Value::Array(allowed);
    }
    tool
}

/// Extraction failures.
#[derive(Debug, thiserror::Error)]
pub enum LearnError {
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error("model call failed: {0}")]
    Model(#[from] LlmError),
    /// The answer could not be read twice running; `raw` is the last answer.
    #[error("the extractor's answer could not be read: {reason}")]
    Malformed { reason: String, raw: String },
    #[error("{0}")]
    NotFound(String),
}

impl From<crate::store::StoreError> for LearnError {
    fn from(e: crate::store::StoreError) -> Self {
        LearnError::Memory(e.into())
    }
}

/// What learning from sessions did (`memory learn`, `memory backfill`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LearnReport {
    pub sessions: u64,
    /// New learnings.
    pub learnings: u64,
    pub events_appended: u64,
    /// Learnings already known: the same extraction again (idempotency), or re-learned
    /// (the same words or a paraphrase of an existing learning, which was reinforced).
    pub duplicates: u64,
    /// Near misses logged as re-learning events.
    pub relearnings: u64,
    /// Sessions skipped: already learned from, or nothing to read.
    pub skipped: u64,
    /// Queue items dead-lettered.
    pub dead_letters: u64,
    /// Contradictions the reconcile after ingestion found.
    pub contradictions: u64,
    pub failures: Vec<String>,
    /// The memory scopes learnings went to.
    #[serde(skip)]
    pub scopes: Vec<crate::store::MemoryScope>,
}

impl LearnReport {
    pub fn add(&mut self, o: &LearnReport) {
        self.sessions += o.sessions;
        self.learnings += o.learnings;
        self.events_appended += o.events_appended;
        self.duplicates += o.duplicates;
        self.relearnings += o.relearnings;
        self.skipped += o.skipped;
        self.dead_letters += o.dead_letters;
        self.contradictions += o.contradictions;
        self.failures.extend(o.failures.iter().cloned());
        for s in &o.scopes {
            if !self.scopes.contains(s) {
                self.scopes.push(s.clone());
            }
        }
    }
}

/// Extracts learnings from stored sessions into one memory.
#[derive(Clone)]
pub struct Extractor {
    pub memory: Memory,
    pub provider: Arc<dyn Provider>,
    pub call: CallSettings,
    /// The `memory/extract` prompt.
    pub prompt: String,
    /// The `memory/nli` prompt, for the reconcile after ingestion.
    pub prompt_nli: String,
}

/// A session as the extractor reads it.
struct SessionText {
    text: String,
    /// The newest node read: extractions of a grown session get new keys.
    through: String,
    session_key: String,
    at: DateTime<Utc>,
    last_node: Option<crate::store::NodeId>,
    /// Learnings the session was given (its turns' `memory_used`, its accesses).
    read: Vec<MemoryId>,
}

fn session_text(memory: &Memory, id: SessionId, chars: usize) -> Result<SessionText, LearnError> {
    let store = memory.store();
    let s = store
        .session(id)?
        .ok_or_else(|| LearnError::NotFound(format!("session {id} not found")))?;
    let nodes = store.session_nodes(id)?;
    let mut text = String::new();
    let mut read: Vec<MemoryId> = Vec::new();
    for n in &nodes {
        if let Some(Value::Array(a)) = n.meta.get("memory_used") {
            read.extend(
                a.iter()
                    .filter_map(|v| v.as_str()?.parse::<MemoryId>().ok()),
            );
        }
        let label = match n.kind {
            NodeType::Query => "user",
            NodeType::Response => "assistant",
            NodeType::Thinking => "thinking",
            NodeType::ToolCall => "tool",
            NodeType::Imported => "note",
            NodeType::HumanAnnotation => "correction",
            _ => continue,
        };
        let body = n.text.trim();
        if body.is_empty() {
            continue;
        }
        text.push_str(&format!("[{label}] {body}\n\n"));
    }
    let session_key = s
        .meta
        .get("claude_session_id")
        .and_then(Value::as_str)
        .map_or_else(|| id.to_string(), str::to_string);
    read.extend(store.session_accesses(&session_key)?);
    let count = text.chars().count();
    if count > chars {
        text = text.chars().skip(count - chars).collect();
    }
    Ok(SessionText {
        text,
        through: nodes
            .last()
            .map_or_else(|| "empty".to_string(), |n| n.id.to_string()),
        session_key,
        at: s.updated_at,
        last_node: nodes.last().map(|n| n.id),
        read,
    })
}

/// Reads a date the extractor gave: an ISO date or time; "unknown", "current" and anything
/// else is open (`None`), as seed 002 normalises them.
pub fn parse_when(s: &str) -> Option<DateTime<Utc>> {
    let t = s.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Some(d.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc())
}

/// Reads and checks an answer: JSON of the schema, every learning with text and at least
/// `min_concepts` distinct concepts. Learnings that fall short are dropped; none left is an
/// error.
pub fn read_answer(raw: &str, p: &LearnParams) -> Result<Vec<ExtractedLearning>, String> {
    let obj = crate::engines::got::json_object(raw).ok_or("no JSON object in the answer")?;
    let answer: ExtractionAnswer = serde_json::from_value(Value::Object(obj))
        .map_err(|e| format!("the answer does not fit the schema: {e}"))?;
    let kept: Vec<ExtractedLearning> = answer
        .learnings
        .into_iter()
        .take(p.max_learnings.max(1))
        .filter(|l| !l.content.trim().is_empty())
        .map(|mut l| {
            l.concepts = normalise_concepts(&l.concepts);
            l.concepts.truncate(p.max_concepts.max(1));
            l
        })
        .filter(|l| l.concepts.len() >= p.min_concepts)
        .collect();
    if kept.is_empty() {
        return Err(format!(
            "no learning with text and at least {} concepts",
            p.min_concepts
        ));
    }
    Ok(kept)
}

impl Extractor {
    fn params(&self) -> &LearnParams {
        self.memory.learn_params()
    }

    /// Learns from one stored session: one extraction (a second when the first answer
    /// cannot be read), then each learning appended or merged. `source` says what asked.
    pub async fn learn(
        &self,
        session: SessionId,
        source: EventSource,
        cancel: &CancellationToken,
    ) -> Result<LearnReport, LearnError> {
        let p = self.params().clone();
        let memory = self.memory.clone();
        let (st, candidates) = self
            .memory
            .store()
            .run_blocking(move |_| -> Result<_, LearnError> {
                let st = session_text(&memory, session, p.session_chars)?;
                let query: String = st.text.chars().take(2_000).collect();
                let hits = memory.find(
                    &query,
                    &[],
                    p.edge_candidates,
                    SearchMode::Hybrid,
                    Default::default(),
                )?;
                // Learnings of this same session are left out, so extracting it again (a
                // resumed backfill) asks the model exactly what it asked before.
                let cands: Vec<MemoryEntry> = hits
                    .into_iter()
                    .map(|h| h.entry)
                    .filter(|e| e.tier != MemoryTier::Core && e.provenance.session != Some(session))
                    .collect();
                Ok((st, cands))
            })
            .await?;
        let mut report = LearnReport {
            sessions: 1,
            ..Default::default()
        };
        if st.text.trim().is_empty() {
            report.skipped = 1;
            return Ok(report);
        }
        let labels: Vec<String> = (1..=candidates.len()).map(|i| format!("m{i}")).collect();
        let mut user = String::from("Existing learnings (label: text):\n");
        if candidates.is_empty() {
            user.push_str("(none)\n");
        }
        for (l, e) in labels.iter().zip(&candidates) {
            user.push_str(&format!(
                "{l}: {}\n",
                crate::engines::llm::wire::one_line(&e.content, 300)
            ));
        }
        user.push_str(&format!(
            "\nSession ({}):\n{}",
            st.at.format("%Y-%m-%d"),
            st.text
        ));
        let schema = extraction_schema(self.params(), &labels);
        let params = self.params().clone();
        let learned = super::call_twice(
            self.provider.as_ref(),
            &self.call,
            &self.prompt,
            &user,
            &schema,
            cancel,
            |raw| read_answer(raw, &params),
        )
        .await?;
        let me = self.clone();
        let r = self
            .memory
            .store()
            .run_blocking(move |_| me.commit(&st, &candidates, &labels, learned, source, session))
            .await?;
        report.add(&r);
        report.sessions = 1;
        Ok(report)
    }

    /// Appends the learnings of one extraction (blocking: embeddings and commits).
    fn commit(
        &self,
        st: &SessionText,
        candidates: &[MemoryEntry],
        labels: &[String],
        learned: Vec<ExtractedLearning>,
        source: EventSource,
        session: SessionId,
    ) -> Result<LearnReport, LearnError> {
        let p = self.params().clone();
        let store = self.memory.store().clone();
        let scope = self.memory.scope().clone();
        let project = project_of(&scope);
        let mut report = LearnReport::default();
        // The session's clock: what it read, then one tick per learning.
        let mut clock = VectorClock::new();
        for id in &st.read {
            if let Some(l) = store.learning(*id)? {
                clock_merge(&mut clock, &l.vector_clock);
            }
        }
        let base_tick = clock.get(&st.session_key).copied().unwrap_or(0);
        for (i, l) in learned.into_iter().enumerate() {
            let index = format!("{}#{i}", st.through);
            let key = idempotency_key(&project, &st.session_key, &index, EXTRACTOR_VERSION);
            // Seed 002's re-learning tiers against what memory holds.
            let hits = self
                .memory
                .find(&l.content, &[], 5, SearchMode::Hybrid, Default::default())?
                .into_iter()
                .filter(|h| h.entry.tier != MemoryTier::Core)
                .collect::<Vec<_>>();
            let best_j = hits
                .iter()
                .map(|h| (h.entry.id, content_jaccard(&h.entry.content, &l.content)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let paraphrase = hits
                .iter()
                .find(|h| f64::from(h.cosine) >= p.paraphrase_cosine)
                .map(|h| (h.entry.id, f64::from(h.cosine)));
            let same = match best_j {
                Some((id, j)) if j >= p.duplicate_jaccard => Some((id, j, "duplicate")),
                _ => paraphrase.map(|(id, c)| (id, c, "paraphrase")),
            };
            if let Some((existing, sim, how)) = same
                && let Some(old) = store.learning(existing)?
                && old.is_live()
            {
                let high = old.recurrence + 1 >= self.memory.params().nous.recurrence_high
                    && old.reinforcement > p.high_score;
                let mut payload = Map::new();
                payload.insert(
                    "reinforcement_delta".into(),
                    json!(if high {
                        p.recurrence_boost
                    } else {
                        p.useful_delta
                    }),
                );
                payload.insert("recurrence".into(), json!(true));
                payload.insert("relearned".into(), json!(how));
                payload.insert("similarity".into(), json!(sim));
                payload.insert("concepts".into(), json!(l.concepts));
                payload.insert("session".into(), json!(session));
                let mut ev = LearningEvent::new(
                    LearningEventType::LearningReinforced,
                    existing,
                    key,
                    &st.session_key,
                    &project,
                    source,
                    payload,
                );
                ev.vector_clock = clock.clone();
                let a = store.write(|w| w.append_learning_event(ev))?;
                report.duplicates += 1;
                report.events_appended += u64::from(a.new);
                continue;
            }
            let id = MemoryId::new();
            let edges: Vec<LearningEdge> = l
                .edges
                .iter()
                .filter_map(|e| {
                    let at = labels.iter().position(|x| *x == e.target)?;
                    Some(LearningEdge {
                        target: candidates.get(at)?.id,
                        rel: e.relation.rel(),
                        weight: e.strength.clamp(0.0, 1.0) as f32,
                    })
                })
                .collect();
            let payload = ExtractedPayload {
                content: l.content.trim().to_string(),
                extractor_version: EXTRACTOR_VERSION.into(),
                concepts: l.concepts.clone(),
                edges: edges.clone(),
                temporal_confidence: l.temporal_confidence,
                reinforcement: None,
                scope: Some(scope.clone()),
                tier: Some(MemoryTier::Archival),
                tags: l.concepts.clone(),
                importance: Some(self.memory.params().default_importance),
                provenance: Provenance {
                    origin: "learn".into(),
                    session: Some(session),
                    node: st.last_node,
                    ..Default::default()
                },
                occurred_at: Some(st.at),
            };
            let mut ev = LearningEvent::new(
                LearningEventType::LearningExtracted,
                id,
                key,
                &st.session_key,
                &project,
                source,
                payload.to_map(),
            );
            ev.valid_from = parse_when(&l.valid_from);
            ev.valid_until = parse_when(&l.valid_until);
            clock.insert(st.session_key.clone(), base_tick + i as u64 + 1);
            ev.vector_clock = clock.clone();
            let entry_text = embedding_text(&MemoryEntry {
                id,
                tier: MemoryTier::Archival,
                scope: scope.clone(),
                section: None,
                content: payload.content.clone(),
                tags: Vec::new(),
                importance: 0.0,
                created_at: st.at,
                updated_at: st.at,
                provenance: Provenance::default(),
                meta: Default::default(),
            });
            let vector = self.memory.embedder().and_then(|e| {
                e.embed(&[entry_text.as_str()])
                    .ok()
                    .and_then(|mut v| v.pop())
                    .map(|v| StoredVector {
                        model: e.id().to_string(),
                        values: quantize(&v),
                    })
            });
            let near = best_j.filter(|(_, j)| *j >= p.relearning_jaccard);
            let (a, logged) = store.write(|w| {
                let a = w.append_learning_event(ev)?;
                if !a.new {
                    return Ok((a, false));
                }
                if let Some(v) = &vector {
                    w.put_memory_vector(id, v)?;
                }
                for e in edges.iter().filter(|e| e.rel == EdgeRel::Supersedes) {
                    let mut payload = Map::new();
                    payload.insert("superseded_by".into(), json!(id));
                    let sup = LearningEvent::new(
                        LearningEventType::LearningSuperseded,
                        e.target,
                        idempotency_key(
                            &project,
                            &st.session_key,
                            &format!("{index}>{}", e.target),
                            EXTRACTOR_VERSION,
                        ),
                        &st.session_key,
                        &project,
                        source,
                        payload,
                    );
                    if w.live_learning_ids(&[e.target])?.is_empty() {
                        continue;
                    }
                    w.append_learning_event(sup)?;
                }
                let mut logged = false;
                if let Some((other, j)) = near
                    && !w.live_learning_ids(&[other])?.is_empty()
                {
                    let mut payload = Map::new();
                    payload.insert("relearning_of".into(), json!(id));
                    payload.insert("similarity".into(), json!(j));
                    let v = LearningEvent::new(
                        LearningEventType::LearningValidated,
                        other,
                        idempotency_key(
                            &project,
                            &st.session_key,
                            &format!("{index}~{other}"),
                            EXTRACTOR_VERSION,
                        ),
                        &st.session_key,
                        &project,
                        source,
                        payload,
                    );
                    logged = w.append_learning_event(v)?.new;
                }
                Ok((a, logged))
            })?;
            if a.new {
                report.learnings += 1;
                report.events_appended += 1 + u64::from(logged);
                report.relearnings += u64::from(logged);
            } else {
                report.duplicates += 1;
            }
        }
        Ok(report)
    }
}
