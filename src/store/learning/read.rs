//! Reading learnings, and the full replay (`memory rebuild`) with its comparison against the
//! incrementally kept read models.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::super::tables::*;
use super::super::{
    MemoryEntry, MemoryId, MemoryScope, MemoryTier, Result, Store, StoreError, codec,
};
use super::write::{
    AccessRow, CachedInjection, NliResult, QueueItem, access_key, event_index_key, pair_key,
    session_key,
};
use super::{EdgeRel, LEARNINGS_PROJECTION, Learning, LearningEvent};
use crate::store::kv::ReadableTable;

/// `concept ‖ 0x00 ‖ id`, the concept index key.
pub fn concept_key(concept: &str, id: MemoryId) -> Vec<u8> {
    let mut k = concept.as_bytes().to_vec();
    k.push(0);
    k.extend_from_slice(&id.to_bytes());
    k
}

fn id_from(bytes: &[u8]) -> Result<MemoryId> {
    let b: [u8; 16] = bytes
        .try_into()
        .map_err(|_| StoreError::Corrupt("learning key: short id".into()))?;
    Ok(MemoryId::from_bytes(b))
}

/// What a replay from event 0 found (and, with repair, did).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RebuildReport {
    pub events: u64,
    pub learnings: u64,
    /// Learnings not archived.
    pub live: u64,
    /// Read-model rows that differ from the replay (0 when the projection is sound).
    pub differences: u64,
    /// The first differences, one line each.
    pub details: Vec<String>,
    /// Whether the read models were rewritten from the replay.
    pub repaired: bool,
    /// Memory entries (not core facts) without any event, made learnings by the repair.
    pub adopted: u64,
}

const DETAILS: usize = 20;

struct Diff<'a> {
    report: &'a mut RebuildReport,
}

impl Diff<'_> {
    fn note(&mut self, line: String) {
        self.report.differences += 1;
        if self.report.details.len() < DETAILS {
            self.report.details.push(line);
        }
    }
}

impl Store {
    pub fn learning(&self, id: MemoryId) -> Result<Option<Learning>> {
        let r = self.read()?;
        r.open_table(LEARNINGS)?
            .get(id.to_bytes())?
            .map(|v| codec::decode("learnings", v.value()))
            .transpose()
    }

    /// The learnings with these ids, one for each in the order given (`None` where there is
    /// none), read in one transaction and, on a byte backend, in one batch.
    pub fn learnings_of(&self, ids: &[MemoryId]) -> Result<Vec<Option<Learning>>> {
        let r = self.read()?;
        let t = r.open_table(LEARNINGS)?;
        t.get_many(ids.iter().map(|id| id.to_bytes()))?
            .into_iter()
            .map(|v| v.map(|v| codec::decode("learnings", v.value())).transpose())
            .collect()
    }

    /// The entries of one scope, oldest first (as [`Store::scope_memories`] lists them), each
    /// with its learning, from one snapshot: the scope index is read, then the entries and
    /// the learnings each in one batch (on a byte backend one round trip per few thousand
    /// rows rather than one per row). What builds the retrieval index.
    pub fn scope_memories_with_learnings(
        &self,
        scope: &MemoryScope,
    ) -> Result<Vec<(MemoryEntry, Option<Learning>)>> {
        let r = self.read()?;
        let ids = crate::store::memory::scope_ids(&r, scope)?;
        let entries = r.open_table(MEMORIES)?;
        let entries = entries.get_many(ids.iter())?;
        let learnings = r.open_table(LEARNINGS)?;
        let learnings = learnings.get_many(ids.iter())?;
        let mut out = Vec::with_capacity(ids.len());
        for (entry, learning) in entries.into_iter().zip(learnings) {
            let Some(entry) = entry else { continue };
            let learning = learning
                .map(|v| codec::decode("learnings", v.value()))
                .transpose()?;
            out.push((codec::decode("memories", entry.value())?, learning));
        }
        Ok(out)
    }

    /// Every learning (archived ones too), by id.
    pub fn learnings(&self) -> Result<Vec<Learning>> {
        let r = self.read()?;
        let t = r.open_table(LEARNINGS)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            out.push(codec::decode("learnings", row?.1.value())?);
        }
        Ok(out)
    }

    /// Learning events with id > `after`, in order.
    pub fn learning_events(&self, after: u64) -> Result<Vec<LearningEvent>> {
        let r = self.read()?;
        let t = r.open_table(LEARNING_EVENTS)?;
        let mut out = Vec::new();
        for row in t.range(after.saturating_add(1)..)? {
            out.push(codec::decode("learning_events", row?.1.value())?);
        }
        Ok(out)
    }

    pub fn learning_event_count(&self) -> Result<u64> {
        self.read()?.open_table(LEARNING_EVENTS)?.len()
    }

    /// One learning's events, oldest first.
    pub fn learning_events_of(&self, id: MemoryId) -> Result<Vec<LearningEvent>> {
        let r = self.read()?;
        let idx = r.open_table(LEARNING_EVENT_INDEX)?;
        let t = r.open_table(LEARNING_EVENTS)?;
        let mut out = Vec::new();
        for row in idx.range(event_index_key(id, 0)..=event_index_key(id, u64::MAX))? {
            let k = row?.0.value();
            let n = u64::from_be_bytes(k[16..].try_into().unwrap_or_default());
            if let Some(v) = t.get(n)? {
                out.push(codec::decode("learning_events", v.value())?);
            }
        }
        Ok(out)
    }

    /// The id of the last event folded into the learnings read model.
    pub fn learning_checkpoint(&self) -> Result<u64> {
        let r = self.read()?;
        Ok(r.open_table(PROJECTION_CHECKPOINTS)?
            .get(LEARNINGS_PROJECTION)?
            .map_or(0, |v| v.value()))
    }

    /// The live learnings tagged with `concept` (normalised).
    pub fn concept_members(&self, concept: &str) -> Result<Vec<MemoryId>> {
        let r = self.read()?;
        let t = r.open_table(CONCEPT_INDEX)?;
        let lo = concept_key(concept, MemoryId::from_bytes([0; 16]));
        let hi = concept_key(concept, MemoryId::from_bytes([0xff; 16]));
        let mut out = Vec::new();
        for row in t.range(lo.as_slice()..=hi.as_slice())? {
            let k = row?.0.value().to_vec();
            out.push(id_from(&k[k.len() - 16..])?);
        }
        Ok(out)
    }

    /// Every live edge: (source, relation, target, weight).
    pub fn learning_edges(&self) -> Result<Vec<(MemoryId, EdgeRel, MemoryId, f32)>> {
        let r = self.read()?;
        let t = r.open_table(LEARNING_EDGES)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            let (k, v) = row?;
            let (a, code, b) = split33(k.value());
            let rel = EdgeRel::from_code(code)
                .ok_or_else(|| StoreError::Corrupt(format!("learning_edges: relation {code}")))?;
            let w: [u8; 4] = v
                .value()
                .try_into()
                .map_err(|_| StoreError::Corrupt("learning_edges: weight".into()))?;
            out.push((
                MemoryId::from_bytes(a),
                rel,
                MemoryId::from_bytes(b),
                f32::from_le_bytes(w),
            ));
        }
        Ok(out)
    }

    /// A learning's accesses, oldest first.
    pub fn access_log(&self, id: MemoryId) -> Result<Vec<AccessRow>> {
        let r = self.read()?;
        let t = r.open_table(ACCESS_LOG)?;
        let lo = access_key(id, chrono::DateTime::<chrono::Utc>::UNIX_EPOCH);
        let mut hi = lo;
        hi[16..].copy_from_slice(&u64::MAX.to_be_bytes());
        let mut out = Vec::new();
        for row in t.range(lo..=hi)? {
            out.push(codec::decode("access_log", row?.1.value())?);
        }
        Ok(out)
    }

    /// The learnings handed to a session.
    pub fn session_accesses(&self, session: &str) -> Result<Vec<MemoryId>> {
        let r = self.read()?;
        let t = r.open_table(ACCESS_BY_SESSION)?;
        let lo = session_key(session, MemoryId::from_bytes([0; 16]));
        let hi = session_key(session, MemoryId::from_bytes([0xff; 16]));
        let mut out = Vec::new();
        for row in t.range(lo.as_slice()..=hi.as_slice())? {
            let k = row?.0.value().to_vec();
            out.push(id_from(&k[k.len() - 16..])?);
        }
        Ok(out)
    }

    pub fn nli(&self, a: MemoryId, b: MemoryId) -> Result<Option<NliResult>> {
        let r = self.read()?;
        r.open_table(NLI_RESULTS)?
            .get(pair_key(a, b))?
            .map(|v| codec::decode("nli_results", v.value()))
            .transpose()
    }

    /// Every cached NLI judgement with its pair (lower id first).
    pub fn nli_results(&self) -> Result<Vec<(MemoryId, MemoryId, NliResult)>> {
        let r = self.read()?;
        let t = r.open_table(NLI_RESULTS)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            let (k, v) = row?;
            let (a, b) = split32(k.value());
            out.push((
                MemoryId::from_bytes(a),
                MemoryId::from_bytes(b),
                codec::decode("nli_results", v.value())?,
            ));
        }
        Ok(out)
    }

    pub fn queue_items(&self) -> Result<Vec<QueueItem>> {
        let r = self.read()?;
        let t = r.open_table(INGEST_QUEUE)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            out.push(codec::decode("ingest_queue", row?.1.value())?);
        }
        Ok(out)
    }

    pub fn injection_cache(&self, project: &str) -> Result<Option<CachedInjection>> {
        let r = self.read()?;
        r.open_table(INJECTION_CACHE)?
            .get(project)?
            .map(|v| codec::decode("injection_cache", v.value()))
            .transpose()
    }

    /// Replays every event from 0 and compares the result with the read models: the
    /// learnings' rows, the concept and edge indexes, the learnings' rows in `memories` and
    /// the checkpoint. With `repair`, rewrites the read models from the replay (the view's
    /// tier, tags and importance are kept) and makes learnings of entries that have no event.
    pub fn rebuild_learnings(&self, repair: bool) -> Result<RebuildReport> {
        let mut report = RebuildReport::default();
        let (folded, last) = self.replay(&mut report)?;
        report.learnings = folded.len() as u64;
        report.live = folded.values().filter(|l| l.is_live()).count() as u64;
        let orphans = self.compare(&folded, last, &mut report)?;
        if repair && (report.differences > 0 || !orphans.is_empty()) {
            self.write(|w| {
                w.txn.open_table(LEARNINGS)?.retain(|_, _| false)?;
                w.txn.open_table(CONCEPT_INDEX)?.retain(|_, _| false)?;
                w.txn.open_table(LEARNING_EDGES)?.retain(|_, _| false)?;
                for l in folded.values() {
                    w.project_learning(None, l)?;
                }
                w.txn
                    .open_table(PROJECTION_CHECKPOINTS)?
                    .insert(LEARNINGS_PROJECTION, last)?;
                for e in &orphans {
                    w.adopt_memory(e)?;
                }
                // The saved memory indexes knew the learnings as they were.
                w.clear_memory_indexes()
            })?;
            report.repaired = true;
            report.adopted = orphans.len() as u64;
        }
        Ok(report)
    }

    fn replay(&self, report: &mut RebuildReport) -> Result<(BTreeMap<MemoryId, Learning>, u64)> {
        let r = self.read()?;
        let t = r.open_table(LEARNING_EVENTS)?;
        let mut state: BTreeMap<MemoryId, Option<Learning>> = BTreeMap::new();
        let mut last = 0;
        for row in t.iter()? {
            let ev: LearningEvent = codec::decode("learning_events", row?.1.value())?;
            report.events += 1;
            last = ev.event_id;
            let slot = state.entry(ev.learning_id).or_default();
            if let Err(e) = Learning::apply(slot, &ev) {
                let mut d = Diff { report };
                d.note(format!("event {}: {e}", ev.event_id));
            }
        }
        Ok((
            state
                .into_iter()
                .filter_map(|(k, v)| v.map(|l| (k, l)))
                .collect(),
            last,
        ))
    }

    /// Counts the differences; returns the non-core memory entries no event made.
    fn compare(
        &self,
        folded: &BTreeMap<MemoryId, Learning>,
        last: u64,
        report: &mut RebuildReport,
    ) -> Result<Vec<MemoryEntry>> {
        let stored: BTreeMap<MemoryId, Learning> =
            self.learnings()?.into_iter().map(|l| (l.id, l)).collect();
        let r = self.read()?;
        let memories = r.open_table(MEMORIES)?;
        let mut d = Diff { report };
        for (id, l) in folded {
            match stored.get(id) {
                Some(s) if s == l => {}
                Some(_) => d.note(format!(
                    "learning {}: row differs from the replay",
                    id.short()
                )),
                None => d.note(format!("learning {}: row missing", id.short())),
            }
            let row: Option<MemoryEntry> = memories
                .get(id.to_bytes())?
                .map(|v| codec::decode("memories", v.value()))
                .transpose()?;
            match (l.is_live(), row) {
                (true, Some(e)) if e.content == l.content && e.scope == l.scope => {}
                (true, Some(_)) => d.note(format!("memory {}: text or scope differs", id.short())),
                (true, None) => d.note(format!("memory {}: entry missing", id.short())),
                (false, Some(_)) => d.note(format!("memory {}: archived but present", id.short())),
                (false, None) => {}
            }
        }
        for id in stored.keys().filter(|k| !folded.contains_key(k)) {
            d.note(format!("learning {}: row without events", id.short()));
        }
        let want_concepts: BTreeSet<Vec<u8>> = folded
            .values()
            .filter(|l| l.is_live())
            .flat_map(|l| l.concepts.iter().map(|c| concept_key(c, l.id)))
            .collect();
        let mut have_concepts = BTreeSet::new();
        for row in r.open_table(CONCEPT_INDEX)?.iter()? {
            have_concepts.insert(row?.0.value().to_vec());
        }
        let n = want_concepts.symmetric_difference(&have_concepts).count();
        if n > 0 {
            d.report.differences += n as u64 - 1;
            d.note(format!("concept index: {n} rows differ"));
        }
        let want_edges: BTreeSet<(MemoryId, EdgeRel, MemoryId, u32)> = folded
            .values()
            .filter(|l| l.is_live())
            .flat_map(|l| {
                l.edges
                    .iter()
                    .map(|e| (l.id, e.rel, e.target, e.weight.to_bits()))
            })
            .collect();
        let have_edges: BTreeSet<(MemoryId, EdgeRel, MemoryId, u32)> = self
            .learning_edges()?
            .into_iter()
            .map(|(a, rel, b, w)| (a, rel, b, w.to_bits()))
            .collect();
        let n = want_edges.symmetric_difference(&have_edges).count();
        if n > 0 {
            d.report.differences += n as u64 - 1;
            d.note(format!("edge index: {n} rows differ"));
        }
        let checkpoint = self.learning_checkpoint()?;
        if checkpoint != last {
            d.note(format!(
                "checkpoint is event {checkpoint}, the log ends at {last}"
            ));
        }
        let mut orphans = Vec::new();
        for row in memories.iter()? {
            let e: MemoryEntry = codec::decode("memories", row?.1.value())?;
            if e.tier != MemoryTier::Core && !folded.contains_key(&e.id) {
                d.note(format!("memory {}: no events", e.id.short()));
                orphans.push(e);
            }
        }
        Ok(orphans)
    }
}
