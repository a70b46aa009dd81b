//! The memory operations of seed 000 (archival_insert, archival_search, recall_search,
//! core_memory_append, core_memory_replace, evict_to_archival, promote_to_working, stats)
//! and auto-eviction.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::assoc::Dims;
use super::index::{DocInfo, Filter, Query, Scored, SearchMode, embedding_text, quantize};
use super::{Memory, MemoryError, Result};
use crate::store::learning::{EntryLearning, EventSource, LEARNING_SCHEMA_VERSION};
use crate::store::{
    CoreSection, MemoryCounters, MemoryEntry, MemoryId, MemoryTier, Provenance, StoredVector,
};

/// A new entry.
#[derive(Clone, Debug)]
pub struct NewMemory {
    pub content: String,
    pub tags: Vec<String>,
    /// 0–1; the configured default when `None`.
    pub importance: Option<f32>,
    /// Working, recall or archival (core entries go through `core_append`).
    pub tier: MemoryTier,
    pub provenance: Provenance,
    /// When it happened (now when `None`): imported history keeps its own time.
    pub created_at: Option<DateTime<Utc>>,
}

impl NewMemory {
    /// An archival entry made by `origin` with default importance.
    pub fn archival(content: impl Into<String>, origin: &str) -> Self {
        Self {
            content: content.into(),
            tags: Vec::new(),
            importance: None,
            tier: MemoryTier::Archival,
            provenance: Provenance {
                origin: origin.into(),
                ..Default::default()
            },
            created_at: None,
        }
    }
}

/// What an insert did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Inserted {
    /// The new entries (several when the text was split into chunks).
    pub ids: Vec<MemoryId>,
    /// Working entries auto-eviction moved to archival to make room.
    pub evicted: Vec<MemoryId>,
}

/// One search result: the entry and the parts of its score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hit {
    pub entry: MemoryEntry,
    pub score: f32,
    pub keyword: f32,
    pub cosine: f32,
    pub date_match: bool,
    /// The seven dimensions, in associative mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dims: Option<Dims>,
}

/// How an entry made by `origin` is recorded as a learning: think turns' recall and the
/// model's own tool calls are live; the rest is the person's (`manual`).
fn learning_for(origin: &str) -> EntryLearning {
    let (version, source, concepts) = match origin {
        "think" => ("recall", EventSource::Live, Some(Vec::new())),
        "tool" => ("tool", EventSource::Live, None),
        "import" => ("import", EventSource::UserReview, None),
        _ => ("manual", EventSource::UserReview, None),
    };
    EntryLearning {
        extractor_version: version.into(),
        source,
        schema_version: LEARNING_SCHEMA_VERSION,
        concepts,
    }
}

/// Seed 000's stats, field for field.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStats {
    pub main_context_entries: u64,
    pub recall_storage_entries: u64,
    pub archival_storage_entries: u64,
    pub main_context_tokens: u64,
    pub main_context_capacity: u64,
    pub main_context_utilization: f64,
    pub total_inserts: u64,
    pub total_searches: u64,
    pub total_evictions: u64,
    pub total_promotions: u64,
}

fn check_importance(x: f32) -> Result<f32> {
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(MemoryError::Invalid(format!(
            "importance {x} is outside 0–1"
        )))
    }
}

fn check_content(text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(MemoryError::Invalid("memory text is empty".into()));
    }
    Ok(())
}

/// Splits `text` into pieces of at most `size` bytes, at a line or word break when one is in
/// the second half of the piece.
pub(super) fn chunks(text: &str, size: usize) -> Vec<&str> {
    let size = size.max(16);
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > size {
        let mut end = size;
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let cut = rest[..end]
            .rfind('\n')
            .filter(|i| *i >= end / 2)
            .or_else(|| rest[..end].rfind(' ').filter(|i| *i >= end / 2))
            .map(|i| i + 1)
            .unwrap_or(end);
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

impl Memory {
    /// Seed `archival_insert` (and insert into working or recall): stores the text, split into
    /// chunks when longer than `max_entry_bytes`, with its embedding when there is an
    /// embedder; a working insert may auto-evict.
    pub fn insert(&self, new: NewMemory) -> Result<Inserted> {
        check_content(&new.content)?;
        let importance =
            check_importance(new.importance.unwrap_or(self.params.default_importance))?;
        if new.tier == MemoryTier::Core {
            return Err(MemoryError::Invalid(
                "core memory takes facts through `core append` (section human or agent)".into(),
            ));
        }
        let now = Utc::now();
        let at = new.created_at.unwrap_or(now);
        let pieces: Vec<&str> = if new.content.len() > self.params.max_entry_bytes {
            chunks(&new.content, self.params.chunk_bytes)
        } else {
            vec![new.content.as_str()]
        };
        let n = u32::try_from(pieces.len()).unwrap_or(u32::MAX);
        let entries: Vec<MemoryEntry> = pieces
            .iter()
            .enumerate()
            .map(|(i, text)| MemoryEntry {
                id: MemoryId::new(),
                tier: new.tier,
                scope: self.scope.clone(),
                section: None,
                content: (*text).to_string(),
                tags: new.tags.clone(),
                importance,
                created_at: at,
                updated_at: now,
                provenance: Provenance {
                    chunk: (n > 1).then_some((u32::try_from(i).unwrap_or(u32::MAX), n)),
                    ..new.provenance.clone()
                },
                meta: Default::default(),
            })
            .collect();
        self.put_new(entries, new.tier.in_main_context())
    }

    /// Commits new entries with their vectors and counts the inserts; auto-evicts when they
    /// joined the main context.
    pub(super) fn put_new(&self, entries: Vec<MemoryEntry>, main: bool) -> Result<Inserted> {
        let vectors = self.vectors_for(&entries);
        let ids: Vec<MemoryId> = entries.iter().map(|e| e.id).collect();
        let scope = self.scope.clone();
        self.store.write(|w| {
            for (e, v) in entries.iter().zip(&vectors) {
                // Core facts are the MemGPT profile; every other entry is a learning, written
                // by its extraction event.
                if e.tier == MemoryTier::Core {
                    w.put_memory(e)?;
                } else {
                    w.learn_entry(e, &learning_for(&e.provenance.origin))?;
                }
                if let Some(v) = v {
                    w.put_memory_vector(e.id, v)?;
                }
            }
            w.bump_memory_counters(&scope, MemoryCounters::inserts(entries.len()))
        })?;
        let evicted = if main {
            self.auto_evict(&ids)?
        } else {
            Vec::new()
        };
        Ok(Inserted { ids, evicted })
    }

    /// Embeds the entries (one batch per `batch_size`); `None` for each when there is no
    /// embedder or it failed (with one warning).
    pub(super) fn vectors_for(&self, entries: &[MemoryEntry]) -> Vec<Option<StoredVector>> {
        let Some(embedder) = &self.embedder else {
            return vec![None; entries.len()];
        };
        let texts: Vec<String> = entries.iter().map(embedding_text).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        match embedder.embed(&refs) {
            Ok(vs) if vs.len() == entries.len() => vs
                .iter()
                .map(|v| {
                    Some(StoredVector {
                        model: embedder.id().to_string(),
                        values: quantize(v),
                    })
                })
                .collect(),
            Ok(vs) => {
                self.warn(format!(
                    "the embedder returned {} vectors for {} texts; stored for keyword search only (`glassbox memory reembed` retries)",
                    vs.len(),
                    entries.len()
                ));
                vec![None; entries.len()]
            }
            Err(e) => {
                self.warn(format!(
                    "{e}; stored for keyword search only (`glassbox memory reembed` retries)"
                ));
                vec![None; entries.len()]
            }
        }
    }

    /// Seed `archival_search` / `recall_search` (and any tier): the best `limit` entries
    /// of `tiers` (all when empty) for `text` within the filter's time bounds, counted as a
    /// search; its hits are logged as accessed (`via search`).
    pub fn search(
        &self,
        text: &str,
        tiers: &[MemoryTier],
        limit: usize,
        mode: SearchMode,
        filter: Filter,
    ) -> Result<Vec<Hit>> {
        let hits = self.find(text, tiers, limit, mode, filter)?;
        let scope = self.scope.clone();
        let ids: Vec<MemoryId> = hits.iter().map(|h| h.entry.id).collect();
        self.store.write(|w| {
            w.bump_memory_counters(&scope, MemoryCounters::searches(1))?;
            w.log_access(&ids, "search", "search")
        })?;
        Ok(hits)
    }

    /// A search that is not counted (previews, the TUI's search-as-you-type, turn context).
    pub fn find(
        &self,
        text: &str,
        tiers: &[MemoryTier],
        limit: usize,
        mode: SearchMode,
        filter: Filter,
    ) -> Result<Vec<Hit>> {
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        let vector = match (&self.embedder, mode) {
            (_, SearchMode::Keyword) | (None, _) => None,
            (Some(e), _) => match e.embed(&[text]) {
                Ok(mut v) => v.pop(),
                Err(err) => {
                    self.warn(format!("{err}; searching by keywords only"));
                    None
                }
            },
        };
        let scored = self.rank(text, vector.as_deref(), tiers, limit, mode, filter)?;
        self.hits(scored)
    }

    /// Ranks with a query vector already made, within the filter's bounds (the retrieval
    /// bench and the evaluation time and compare the search alone).
    pub fn rank(
        &self,
        text: &str,
        vector: Option<&[f32]>,
        tiers: &[MemoryTier],
        limit: usize,
        mode: SearchMode,
        filter: Filter,
    ) -> Result<Vec<Scored>> {
        let query = Query {
            text,
            vector,
            tiers,
            limit,
            mode,
            now: Utc::now(),
            filter,
        };
        self.with_index(|idx| idx.search(&query, &self.params.search, &self.params.nous))
    }

    /// The entries behind ranked ids, in rank order.
    pub fn hits(&self, scored: Vec<Scored>) -> Result<Vec<Hit>> {
        let mut out = Vec::with_capacity(scored.len());
        for s in scored {
            if let Some(entry) = self.store.memory(s.id)? {
                out.push(Hit {
                    entry,
                    score: s.score,
                    keyword: s.keyword,
                    cosine: s.cosine,
                    date_match: s.date_match,
                    dims: s.dims,
                });
            }
        }
        Ok(out)
    }

    /// Seed `core_memory_append`: adds a fact to the human or agent section.
    pub fn core_append(
        &self,
        section: CoreSection,
        content: &str,
        provenance: Provenance,
    ) -> Result<Inserted> {
        check_content(content)?;
        let now = Utc::now();
        let entry = MemoryEntry {
            id: MemoryId::new(),
            tier: MemoryTier::Core,
            scope: self.scope.clone(),
            section: Some(section),
            content: content.to_string(),
            tags: Vec::new(),
            importance: 1.0,
            created_at: now,
            updated_at: now,
            provenance,
            meta: Default::default(),
        };
        self.put_new(vec![entry], true)
    }

    /// Seed `core_memory_replace`: replaces the fact of `section` given by id (or id prefix)
    /// or by text it contains, which must pick exactly one.
    pub fn core_replace(&self, section: CoreSection, old: &str, new: &str) -> Result<MemoryId> {
        check_content(new)?;
        let facts = self.entries(MemoryTier::Core)?;
        let facts: Vec<&MemoryEntry> = facts
            .iter()
            .filter(|e| e.section == Some(section))
            .collect();
        let by_id: Vec<&&MemoryEntry> = facts
            .iter()
            .filter(|e| {
                let hex = e.id.0.simple().to_string();
                old.len() >= 4
                    && (hex.starts_with(old) || hex.ends_with(old) || e.id.to_string() == old)
            })
            .collect();
        let picked: Vec<&&MemoryEntry> = if by_id.is_empty() {
            facts.iter().filter(|e| e.content.contains(old)).collect()
        } else {
            by_id
        };
        let target = match picked.as_slice() {
            [one] => (**one).clone(),
            [] => {
                return Err(MemoryError::NotFound(format!(
                    "no {section} fact matches '{old}'"
                )));
            }
            many => {
                return Err(MemoryError::Invalid(format!(
                    "'{old}' matches {} {section} facts; give its id",
                    many.len()
                )));
            }
        };
        let mut entry = target;
        entry.content = new.to_string();
        entry.updated_at = Utc::now();
        let vector = self
            .vectors_for(std::slice::from_ref(&entry))
            .pop()
            .flatten();
        self.store.write(|w| {
            w.put_memory(&entry)?;
            if let Some(v) = &vector {
                w.put_memory_vector(entry.id, v)?;
            }
            Ok(())
        })?;
        self.auto_evict(&[entry.id])?;
        Ok(entry.id)
    }

    /// The entries of one tier in the visible scopes, newest first.
    ///
    /// The index says which entries are of the tier, so only those are read: core and
    /// working memory are read for every turn, beside thousands of archival entries.
    pub fn entries(&self, tier: MemoryTier) -> Result<Vec<MemoryEntry>> {
        let ids: Vec<MemoryId> =
            self.with_index(|ix| ix.docs().filter(|d| d.tier == tier).map(|d| d.id).collect())?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            // One deleted since the index read it is left out.
            if let Some(e) = self.store.memory(id)?
                && e.tier == tier
                && self.is_visible(&e.scope)
            {
                out.push(e);
            }
        }
        out.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        Ok(out)
    }

    /// Seed `evict_to_archival`: moves working entries to archival. Entries of other tiers
    /// are an error naming them.
    pub fn evict(&self, ids: &[MemoryId]) -> Result<Vec<MemoryId>> {
        let entries = self.load_all(ids)?;
        if let Some(e) = entries.iter().find(|e| e.tier != MemoryTier::Working) {
            return Err(MemoryError::Invalid(format!(
                "memory {} is in {}, not working memory",
                e.id.short(),
                e.tier
            )));
        }
        self.move_to_archival(entries, false)
    }

    /// Seed `promote_to_working`: pages archival or recall entries into working memory;
    /// auto-eviction then makes room without taking them back out while others can go.
    pub fn promote(&self, ids: &[MemoryId]) -> Result<Inserted> {
        let entries = self.load_all(ids)?;
        if let Some(e) = entries.iter().find(|e| e.tier.in_main_context()) {
            return Err(MemoryError::Invalid(format!(
                "memory {} is already in the main context ({})",
                e.id.short(),
                e.tier
            )));
        }
        let scope = self.scope.clone();
        let now = Utc::now();
        self.store.write(|w| {
            for e in &entries {
                let mut e = e.clone();
                e.tier = MemoryTier::Working;
                e.updated_at = now;
                w.put_memory(&e)?;
            }
            w.bump_memory_counters(&scope, MemoryCounters::promotions(entries.len()))
        })?;
        let evicted = self.auto_evict(ids)?;
        Ok(Inserted {
            ids: ids.to_vec(),
            evicted,
        })
    }

    /// Removes entries: learnings are archived (their events stay), core facts deleted.
    /// Returns how many existed.
    pub fn remove(&self, ids: &[MemoryId]) -> Result<usize> {
        self.retract(ids, "deleted")
    }

    /// Changes an entry's text, tags or importance (re-embedding a changed text).
    pub fn edit(
        &self,
        id: MemoryId,
        content: Option<&str>,
        tags: Option<Vec<String>>,
        importance: Option<f32>,
    ) -> Result<MemoryEntry> {
        let mut e = self.load_all(&[id])?.remove(0);
        if let Some(c) = content.filter(|c| *c != e.content) {
            check_content(c)?;
            if self.store.learning(id)?.is_some() {
                return self.replace_learning(e, c, tags, importance);
            }
            e.content = c.to_string();
        }
        if let Some(t) = tags {
            e.tags = t;
        }
        if let Some(i) = importance {
            e.importance = check_importance(i)?;
        }
        e.updated_at = Utc::now();
        let vector = match content {
            Some(_) => self.vectors_for(std::slice::from_ref(&e)).pop().flatten(),
            None => None,
        };
        self.store.write(|w| {
            w.put_memory(&e)?;
            if let Some(v) = &vector {
                w.put_memory_vector(e.id, v)?;
            }
            Ok(())
        })?;
        if e.tier.in_main_context() {
            self.auto_evict(&[e.id])?;
        }
        Ok(e)
    }

    /// A learning's text changes by a new learning taking its place: the old one is
    /// archived (its events stay) and the new one carries a `supersedes` edge to it.
    fn replace_learning(
        &self,
        old: MemoryEntry,
        content: &str,
        tags: Option<Vec<String>>,
        importance: Option<f32>,
    ) -> Result<MemoryEntry> {
        let now = Utc::now();
        let mut new = MemoryEntry {
            id: MemoryId::new(),
            content: content.to_string(),
            updated_at: now,
            created_at: now,
            ..old.clone()
        };
        if let Some(t) = tags {
            new.tags = t;
        }
        if let Some(i) = importance {
            new.importance = check_importance(i)?;
        }
        let vector = self.vectors_for(std::slice::from_ref(&new)).pop().flatten();
        self.store.write(|w| {
            w.learn_entry(&new, &learning_for(&new.provenance.origin))?;
            if let Some(v) = &vector {
                w.put_memory_vector(new.id, v)?;
            }
            w.archive_learning(
                old.id,
                &format!("edited: replaced by {}", new.id),
                &format!("edit:{}:{}", old.id, new.id),
            )?;
            Ok(())
        })?;
        if new.tier.in_main_context() {
            self.auto_evict(&[new.id])?;
        }
        Ok(self.store.memory(new.id)?.unwrap_or(new))
    }

    /// Seed `stats` over the visible scopes.
    pub fn stats(&self) -> Result<MemoryStats> {
        let docs: Vec<DocInfo> = self.with_index(|idx| idx.docs().collect())?;
        let mut s = MemoryStats {
            main_context_capacity: self.params.capacity_tokens,
            main_context_tokens: self.system_tokens,
            ..Default::default()
        };
        for d in &docs {
            match d.tier {
                MemoryTier::Core | MemoryTier::Working => {
                    s.main_context_entries += 1;
                    s.main_context_tokens += d.tokens;
                }
                MemoryTier::Recall => s.recall_storage_entries += 1,
                MemoryTier::Archival => s.archival_storage_entries += 1,
            }
        }
        s.main_context_utilization =
            s.main_context_tokens as f64 / (s.main_context_capacity.max(1)) as f64;
        for scope in self.visible.iter() {
            let c = self.store.memory_counters(scope)?;
            s.total_inserts += c.inserts;
            s.total_searches += c.searches;
            s.total_evictions += c.evictions;
            s.total_promotions += c.promotions;
        }
        Ok(s)
    }

    /// Auto-eviction (seed 000): when the main context is over capacity, moves the least
    /// important working entries (oldest first among equals) to archival until it is at
    /// `evict_to` of capacity. `keep` are taken last.
    pub(super) fn auto_evict(&self, keep: &[MemoryId]) -> Result<Vec<MemoryId>> {
        let docs: Vec<DocInfo> = self.with_index(|idx| idx.docs().collect())?;
        let mut total = self.system_tokens
            + docs
                .iter()
                .filter(|d| d.tier.in_main_context())
                .map(|d| d.tokens)
                .sum::<u64>();
        if total <= self.params.capacity_tokens {
            return Ok(Vec::new());
        }
        let target = (self.params.capacity_tokens as f64 * self.params.evict_to) as u64;
        let mut working: Vec<&DocInfo> = docs
            .iter()
            .filter(|d| d.tier == MemoryTier::Working)
            .collect();
        working.sort_by(|a, b| {
            keep.contains(&a.id)
                .cmp(&keep.contains(&b.id))
                .then(a.importance.total_cmp(&b.importance))
                .then(a.created.cmp(&b.created))
        });
        let mut out = Vec::new();
        for d in working {
            if total <= target {
                break;
            }
            total -= d.tokens;
            out.push(d.id);
        }
        let entries = self.load_all(&out)?;
        self.move_to_archival(entries, true)
    }

    fn move_to_archival(&self, entries: Vec<MemoryEntry>, auto: bool) -> Result<Vec<MemoryId>> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let scope = self.scope.clone();
        let now = Utc::now();
        let ids: Vec<MemoryId> = entries.iter().map(|e| e.id).collect();
        self.store.write(|w| {
            for mut e in entries {
                e.tier = MemoryTier::Archival;
                e.updated_at = now;
                e.meta
                    .insert("evicted_at".into(), serde_json::json!(now.to_rfc3339()));
                w.put_memory(&e)?;
                if auto {
                    w.journal_memory_evicted(e.id)?;
                }
            }
            w.bump_memory_counters(&scope, MemoryCounters::evictions(ids.len()))
        })?;
        Ok(ids)
    }

    /// The entries behind `ids`, each of which must exist in a visible scope.
    pub(super) fn load_all(&self, ids: &[MemoryId]) -> Result<Vec<MemoryEntry>> {
        ids.iter()
            .map(|id| match self.store.memory(*id)? {
                Some(e) if self.is_visible(&e.scope) => Ok(e),
                Some(e) => Err(MemoryError::NotFound(format!(
                    "memory {} is in scope {}, not in {}",
                    id.short(),
                    e.scope,
                    self.scope
                ))),
                None => Err(MemoryError::NotFound(format!("memory {id} not found"))),
            })
            .collect()
    }
}
