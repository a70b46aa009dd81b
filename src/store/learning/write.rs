//! Writing learnings: appending events (and folding them into the read models in the same
//! transaction), the access log, NLI results, the ingest queue and the injection cache.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, json};

use super::super::tables::*;
use super::super::{ChangeKind, MemoryEntry, MemoryId, Result, StoreError, Writer, codec};
use super::{
    EventSource, ExtractedPayload, LEARNINGS_PROJECTION, Learning, LearningEvent,
    LearningEventType, idempotency_key, read::concept_key,
};
use crate::store::kv::ReadableTable;

/// What appending an event did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Appended {
    pub event_id: u64,
    /// False when an event with the same idempotency key was there already (nothing written).
    pub new: bool,
}

/// One retrieval that returned a learning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessRow {
    pub session: String,
    pub at: DateTime<Utc>,
    /// What asked: `search`, `context` (a think turn), `hook` (Claude Code's SessionStart).
    pub via: String,
}

/// The NLI judgement of one pair of learnings (`label`: entailment, neutral, contradiction).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NliResult {
    pub label: String,
    pub confidence: f64,
    pub model_version: String,
    pub updated_at: DateTime<Utc>,
}

/// Where an ingest queue item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueStatus {
    Pending,
    Processing,
    Completed,
    /// Out of attempts, or an answer that could not be read twice; kept for a look.
    DeadLetter,
}

impl QueueStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueStatus::Pending => "pending",
            QueueStatus::Processing => "processing",
            QueueStatus::Completed => "completed",
            QueueStatus::DeadLetter => "dead_letter",
        }
    }
}

/// One ingest queue item: a session to learn from, or a transcript to import and learn from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueItem {
    pub key: String,
    /// A stored session's id, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// A transcript file to import first (the Stop hook's `transcript_path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    pub source: EventSource,
    pub status: QueueStatus,
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub next_attempt_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The unreadable model answer of a dead-lettered extraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    pub enqueued_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[serde(default)]
    pub learnings: u64,
}

/// The SessionStart context of one project, computed out of band.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CachedInjection {
    pub text: String,
    pub ids: Vec<MemoryId>,
    pub built_at: DateTime<Utc>,
    /// The last learning event it saw.
    pub checkpoint: u64,
}

/// How [`Writer::learn_entry`] records an entry.
#[derive(Clone, Debug)]
pub struct EntryLearning {
    /// `manual`, `recall` (a think turn), `tool`, `import`, `legacy-v1`…
    pub extractor_version: String,
    pub source: EventSource,
    pub schema_version: u32,
    /// Its concepts; its tags when `None`.
    pub concepts: Option<Vec<String>>,
}

/// The project id of a scope: the project's path, else the scope's key.
pub fn project_of(scope: &super::MemoryScope) -> String {
    match scope {
        super::MemoryScope::Project(p) => p.clone(),
        other => other.key(),
    }
}

fn invalid(e: String) -> StoreError {
    StoreError::Invalid(e)
}

fn id24(id: MemoryId, n: u64) -> [u8; 24] {
    let mut k = [0u8; 24];
    k[..16].copy_from_slice(&id.to_bytes());
    k[16..].copy_from_slice(&n.to_be_bytes());
    k
}

pub(super) fn event_index_key(id: MemoryId, event_id: u64) -> [u8; 24] {
    id24(id, event_id)
}

pub(super) fn access_key(id: MemoryId, at: DateTime<Utc>) -> [u8; 24] {
    let ns = at.timestamp_nanos_opt().unwrap_or_default().max(0) as u64;
    id24(id, ns)
}

pub(super) fn session_key(session: &str, id: MemoryId) -> Vec<u8> {
    let mut k = session.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(&id.to_bytes());
    k
}

pub(super) fn pair_key(a: MemoryId, b: MemoryId) -> [u8; 32] {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    key32(lo.to_bytes(), hi.to_bytes())
}

impl Writer<'_> {
    /// Appends a learning event: validates it, does nothing when its idempotency key is
    /// known, else gives it the next event id and folds it into the read models (its
    /// learning's row, the concept and edge indexes, its row in `memories`) in this same
    /// transaction, so the projection is never behind the log.
    pub fn append_learning_event(&mut self, mut ev: LearningEvent) -> Result<Appended> {
        ev.validate().map_err(invalid)?;
        if let Some(id) = self
            .txn
            .open_table(LEARNING_EVENT_KEYS)?
            .get(ev.idempotency_key.as_str())?
        {
            return Ok(Appended {
                event_id: id.value(),
                new: false,
            });
        }
        let mut events = self.txn.open_table(LEARNING_EVENTS)?;
        ev.event_id = events.last()?.map(|(k, _)| k.value() + 1).unwrap_or(1);
        let old = self.learning_row(ev.learning_id)?;
        let mut state = old.clone();
        Learning::apply(&mut state, &ev).map_err(invalid)?;
        events.insert(ev.event_id, codec::encode(&ev)?.as_slice())?;
        drop(events);
        self.txn
            .open_table(LEARNING_EVENT_KEYS)?
            .insert(ev.idempotency_key.as_str(), ev.event_id)?;
        self.txn
            .open_table(LEARNING_EVENT_INDEX)?
            .insert(event_index_key(ev.learning_id, ev.event_id), ())?;
        if let Some(new) = &state {
            self.project_learning(old.as_ref(), new)?;
        }
        self.txn
            .open_table(PROJECTION_CHECKPOINTS)?
            .insert(LEARNINGS_PROJECTION, ev.event_id)?;
        self.journal(ChangeKind::LearningEvent, None, Some(ev.learning_id.0))?;
        Ok(Appended {
            event_id: ev.event_id,
            new: true,
        })
    }

    pub(super) fn learning_row(&self, id: MemoryId) -> Result<Option<Learning>> {
        self.txn
            .open_table(LEARNINGS)?
            .get(id.to_bytes())?
            .map(|v| codec::decode("learnings", v.value()))
            .transpose()
    }

    /// Writes a learning's read models, replacing what `old` left.
    pub(super) fn project_learning(
        &mut self,
        old: Option<&Learning>,
        new: &Learning,
    ) -> Result<()> {
        self.txn
            .open_table(LEARNINGS)?
            .insert(new.id.to_bytes(), codec::encode(new)?.as_slice())?;
        {
            let mut concepts = self.txn.open_table(CONCEPT_INDEX)?;
            for c in old.filter(|o| o.is_live()).map_or(&[][..], |o| &o.concepts) {
                concepts.remove(concept_key(c, new.id).as_slice())?;
            }
            if new.is_live() {
                for c in &new.concepts {
                    concepts.insert(concept_key(c, new.id).as_slice(), ())?;
                }
            }
        }
        {
            let mut edges = self.txn.open_table(LEARNING_EDGES)?;
            for e in old.filter(|o| o.is_live()).map_or(&[][..], |o| &o.edges) {
                edges.remove(key33(new.id.to_bytes(), e.rel.code(), e.target.to_bytes()))?;
            }
            if new.is_live() {
                for e in &new.edges {
                    edges.insert(
                        key33(new.id.to_bytes(), e.rel.code(), e.target.to_bytes()),
                        e.weight.to_le_bytes().as_slice(),
                    )?;
                }
            }
        }
        let existing: Option<MemoryEntry> = self
            .txn
            .open_table(MEMORIES)?
            .get(new.id.to_bytes())?
            .map(|v| codec::decode("memories", v.value()))
            .transpose()?;
        if new.is_live() {
            let entry = new.entry(existing.as_ref());
            if existing.as_ref() != Some(&entry) {
                self.put_memory(&entry)?;
            }
        } else if existing.is_some() {
            self.delete_memory(new.id)?;
        }
        Ok(())
    }

    /// Makes a learning of a memory entry: a `LearningExtracted` event carrying it as it is
    /// (its tags as concepts unless `how` names some), so the projection writes its row.
    /// Idempotent per entry id and extractor version.
    pub fn learn_entry(&mut self, e: &MemoryEntry, how: &EntryLearning) -> Result<Appended> {
        let project = project_of(&e.scope);
        let session = e.provenance.session.map_or_else(
            || format!("{}:{}", e.provenance.origin, e.id),
            |s| s.to_string(),
        );
        let payload = ExtractedPayload {
            content: e.content.clone(),
            extractor_version: how.extractor_version.clone(),
            concepts: match &how.concepts {
                Some(c) => c.clone(),
                None => super::normalise_concepts(&e.tags),
            },
            edges: Vec::new(),
            temporal_confidence: Default::default(),
            reinforcement: None,
            scope: Some(e.scope.clone()),
            tier: Some(e.tier),
            tags: e.tags.clone(),
            importance: Some(e.importance),
            provenance: e.provenance.clone(),
            occurred_at: Some(e.created_at),
        };
        let mut ev = LearningEvent::new(
            LearningEventType::LearningExtracted,
            e.id,
            idempotency_key(
                &project,
                &session,
                &e.id.to_string(),
                &how.extractor_version,
            ),
            &session,
            &project,
            how.source,
            payload.to_map(),
        );
        ev.schema_version = how.schema_version;
        ev.vector_clock.insert(session.clone(), 1);
        if how.schema_version == 1 {
            ev.transaction_time = e.created_at;
        }
        self.append_learning_event(ev)
    }

    /// Makes a learning of an entry written before learnings existed (schema 1, `legacy-v1`).
    pub fn adopt_memory(&mut self, e: &MemoryEntry) -> Result<Appended> {
        self.learn_entry(
            e,
            &EntryLearning {
                extractor_version: "legacy-v1".into(),
                source: EventSource::UserReview,
                schema_version: 1,
                concepts: None,
            },
        )
    }

    /// Archives a learning (a `LearningArchived` event) with `reason`; `key` makes it
    /// idempotent. False when `id` is no learning or is archived already.
    pub fn archive_learning(&mut self, id: MemoryId, reason: &str, key: &str) -> Result<bool> {
        let Some(l) = self.learning_row(id)? else {
            return Ok(false);
        };
        if !l.is_live() {
            return Ok(false);
        }
        let mut payload = Map::new();
        payload.insert("reason".into(), json!(reason));
        let ev = LearningEvent::new(
            LearningEventType::LearningArchived,
            id,
            idempotency_key(&l.project_id, &l.session_id, key, "archive"),
            &l.session_id,
            &l.project_id,
            EventSource::UserReview,
            payload,
        );
        Ok(self.append_learning_event(ev)?.new)
    }

    /// Logs that `ids` were handed to `session` by `via`.
    pub fn log_access(&mut self, ids: &[MemoryId], session: &str, via: &str) -> Result<()> {
        let now = Utc::now();
        let row = codec::encode(&AccessRow {
            session: session.to_string(),
            at: now,
            via: via.to_string(),
        })?;
        let mut log = self.txn.open_table(ACCESS_LOG)?;
        let mut by = self.txn.open_table(ACCESS_BY_SESSION)?;
        // Put, not insert: no old value is wanted, so a byte backend sends the rows of each
        // table together.
        for id in ids {
            log.put(access_key(*id, now), row.as_slice())?;
            by.put(session_key(session, *id).as_slice(), ())?;
        }
        Ok(())
    }

    /// Caches the NLI judgement of a pair (either order).
    pub fn put_nli(&mut self, a: MemoryId, b: MemoryId, r: &NliResult) -> Result<()> {
        self.txn
            .open_table(NLI_RESULTS)?
            .insert(pair_key(a, b), codec::encode(r)?.as_slice())?;
        Ok(())
    }

    pub fn put_queue_item(&mut self, item: &QueueItem) -> Result<()> {
        self.txn
            .open_table(INGEST_QUEUE)?
            .insert(item.key.as_str(), codec::encode(item)?.as_slice())?;
        Ok(())
    }

    /// Adds an item unless one with its key is there. True when added.
    pub fn enqueue(&mut self, item: &QueueItem) -> Result<bool> {
        if self
            .txn
            .open_table(INGEST_QUEUE)?
            .get(item.key.as_str())?
            .is_some()
        {
            return Ok(false);
        }
        self.put_queue_item(item)?;
        Ok(true)
    }

    pub fn queue_item_in_txn(&self, key: &str) -> Result<Option<QueueItem>> {
        self.txn
            .open_table(INGEST_QUEUE)?
            .get(key)?
            .map(|v| codec::decode("ingest_queue", v.value()))
            .transpose()
    }

    /// Every queue item, in key order (read inside the transaction, for claiming).
    pub fn queue_items_in_txn(&self) -> Result<Vec<QueueItem>> {
        let t = self.txn.open_table(INGEST_QUEUE)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            let (_, v) = row?;
            out.push(codec::decode("ingest_queue", v.value())?);
        }
        Ok(out)
    }

    pub fn put_injection_cache(&mut self, project: &str, c: &CachedInjection) -> Result<()> {
        self.txn
            .open_table(INJECTION_CACHE)?
            .put(project, codec::encode(c)?.as_slice())?;
        Ok(())
    }

    /// A live learning's text, from inside the transaction.
    pub fn live_learning_text(&self, id: MemoryId) -> Result<Option<String>> {
        Ok(self
            .learning_row(id)?
            .filter(Learning::is_live)
            .map(|l| l.content))
    }

    /// The learnings in `ids` that are live, from inside the transaction.
    pub fn live_learning_ids(&self, ids: &[MemoryId]) -> Result<Vec<MemoryId>> {
        let mut out = Vec::new();
        for id in ids {
            if self.learning_row(*id)?.is_some_and(|l| l.is_live()) {
                out.push(*id);
            }
        }
        Ok(out)
    }
}
