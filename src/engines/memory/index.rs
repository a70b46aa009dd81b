//! The in-memory retrieval index over the memory entries one [`super::Memory`] sees: BM25
//! postings over the entries' words (the store's tokenizer and BM25), their embedding
//! vectors quantised to `i8` and searched exactly by brute force, and the fields the hybrid
//! score needs (importance, time, tier). Built from the store when first needed and kept up
//! to date from the change journal.
//!
//! Why brute force: 100k entries × 384 `i8` components is 38 MB, and the dot products run at
//! memory speed (benches/retrieval.rs measures the whole hybrid query against the P4 bar).
//! An ANN index would add a dependency and approximate answers for no measured gain here.

use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use super::assoc::{Dims, LearnInfo, NousParams};
use crate::store::learning::Learning;
use crate::store::search::{BM25_TF_MAX, bm25_idf, bm25_tf, tokenize};
use crate::store::{MemoryEntry, MemoryId, MemoryScope, MemoryTier, StoredVector};

/// The hybrid score's weights (`[memory.search]`; seed 000: term match + similarity +
/// importance boost − recency penalty, with the turn's date matched as well).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchWeights {
    /// BM25, scaled so a document with every word of the query, many times, would score 1.
    pub keyword: f32,
    /// Cosine similarity of the embeddings (0 when negative).
    pub vector: f32,
    /// The entry's importance (0–1).
    pub importance: f32,
    /// Subtracted in full for an entry infinitely old, half of it at `recency_half_life_days`.
    pub recency: f32,
    pub recency_half_life_days: f32,
    /// Added when the query names a date (`2026-03-14`, `March 14`, `14 March`) and the
    /// entry was made that day.
    pub date: f32,
}

impl Default for SearchWeights {
    fn default() -> Self {
        Self {
            keyword: 0.4,
            vector: 0.6,
            importance: 0.1,
            recency: 0.05,
            recency_half_life_days: 30.0,
            date: 0.5,
        }
    }
}

/// Which signals rank the results: the evaluation compares the three.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// BM25 alone.
    Keyword,
    /// Cosine similarity alone.
    Vector,
    /// The weighted sum of every signal.
    #[default]
    Hybrid,
    /// Seed 002's seven dimensions: text, concepts, vector, graph, reinforcement, temporal
    /// validity and recency.
    Associative,
}

/// One ranked entry and the parts of its score.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scored {
    pub id: MemoryId,
    pub score: f32,
    /// BM25 scaled to what the query's words could score at most (0–1).
    pub keyword: f32,
    pub cosine: f32,
    pub date_match: bool,
    /// The seven dimensions, in associative mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dims: Option<Dims>,
}

/// Bounds on what a search may return, and the context of the associative score.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Transaction time: only what glassbox had learned by then.
    pub as_of: Option<DateTime<Utc>>,
    /// Valid time: only what was true then.
    pub as_at: Option<DateTime<Utc>>,
    /// The project's last activity (seed 002's s_temporal: knowledge newer than it is fresh).
    pub last_activity: Option<DateTime<Utc>>,
    /// Concepts the caller knows the query is about (besides those its words name).
    pub concepts: Vec<String>,
    /// Associative mode: every admitted entry competes, not only those the query matches
    /// (a session start, where the query is only a hint).
    pub browse: bool,
}

/// What to look for.
#[derive(Clone, Debug)]
pub struct Query<'a> {
    pub text: &'a str,
    /// The query's embedding (unit length), when there is an embedder.
    pub vector: Option<&'a [f32]>,
    /// Only entries of these tiers (all when empty).
    pub tiers: &'a [MemoryTier],
    pub limit: usize,
    pub mode: SearchMode,
    pub now: DateTime<Utc>,
    pub filter: Filter,
}

#[derive(Clone, Debug)]
pub(super) struct Doc {
    pub(super) id: MemoryId,
    pub(super) tier: MemoryTier,
    /// The scope it lives in: a saved index holds one scope's entries.
    pub(super) scope: MemoryScope,
    pub(super) importance: f32,
    pub(super) created: DateTime<Utc>,
    pub(super) day: NaiveDate,
    /// Distinct terms with their counts, to take the postings out again.
    pub(super) terms: Vec<(String, u16)>,
    pub(super) len: u32,
    /// Approximate tokens of the content, for the main-context budget.
    pub(super) tokens: u64,
    pub(super) has_vector: bool,
    /// What the learnings read model says of it (none for core facts).
    pub(super) learn: Option<LearnInfo>,
}

/// What the index knows of an entry without its text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DocInfo {
    pub id: MemoryId,
    pub tier: MemoryTier,
    pub importance: f32,
    pub tokens: u64,
    pub created: DateTime<Utc>,
    pub has_vector: bool,
}

/// The index. Slots of removed entries are reused.
#[derive(Default)]
pub struct MemoryIndex {
    pub(super) docs: Vec<Option<Doc>>,
    free: Vec<usize>,
    pub(super) slots: HashMap<MemoryId, usize, foldhash::fast::RandomState>,
    postings: HashMap<String, Vec<(u32, u16)>, foldhash::fast::RandomState>,
    total_len: u64,
    /// The embedder whose vectors this index holds, and their size.
    model: Option<(String, usize)>,
    /// `dim` components per slot; zeros where a slot has no vector.
    vectors: Vec<i8>,
}

/// The text an entry is found by: its date (ISO, weekday and month names), its tags and its
/// content. Dates are words here so "what did we decide in March" meets the right entries.
pub fn searchable_text(e: &MemoryEntry) -> String {
    let d = e.created_at;
    format!(
        "{} {} {}\n{}",
        d.format("%Y-%m-%d %A %-d %B %Y"),
        e.tags.join(" "),
        e.section.map(|s| s.as_str()).unwrap_or(""),
        e.content
    )
}

/// The text an entry's embedding is made from: its date and its content.
pub fn embedding_text(e: &MemoryEntry) -> String {
    embedding_text_of(e.created_at, &e.content)
}

/// [`embedding_text`] of an entry made at `at` holding `content`.
pub fn embedding_text_of(at: chrono::DateTime<chrono::Utc>, content: &str) -> String {
    format!("{}: {content}", at.format("%A %-d %B %Y"))
}

/// Quantises a unit vector to `i8` (component × 127).
pub fn quantize(v: &[f32]) -> Vec<i8> {
    v.iter()
        .map(|x| (x * 127.0).round().clamp(-127.0, 127.0) as i8)
        .collect()
}

/// The dot product of two `i8` vectors. Lanes of 16 with `i16` products let the compiler
/// use packed multiply-adds; the arithmetic is wrapping because release builds check
/// overflow, and checked adds do not vectorise. Nothing can overflow here: a product is at
/// most 128² (fits `i16`), and 384 of them fit an `i32` many times over.
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    const LANES: usize = 16;
    let mut acc = [0i32; LANES];
    let (a16, b16) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (a16.remainder(), b16.remainder());
    for (ca, cb) in a16.zip(b16) {
        for i in 0..LANES {
            let p = i16::from(ca[i]).wrapping_mul(i16::from(cb[i]));
            acc[i] = acc[i].wrapping_add(i32::from(p));
        }
    }
    let mut sum = acc.iter().fold(0i32, |s, x| s.wrapping_add(*x));
    for (x, y) in ra.iter().zip(rb) {
        sum = sum.wrapping_add(i32::from(*x).wrapping_mul(i32::from(*y)));
    }
    sum
}

impl MemoryIndex {
    /// An empty index for vectors of `model` (`None`: keyword search only).
    pub fn new(model: Option<(String, usize)>) -> Self {
        Self {
            model,
            ..Self::default()
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn model_dim(&self) -> Option<usize> {
        self.model.as_ref().map(|(_, d)| *d)
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn contains(&self, id: MemoryId) -> bool {
        self.slots.contains_key(&id)
    }

    /// Every entry, in no particular order.
    pub fn docs(&self) -> impl Iterator<Item = DocInfo> + '_ {
        self.docs.iter().flatten().map(|d| DocInfo {
            id: d.id,
            tier: d.tier,
            importance: d.importance,
            tokens: d.tokens,
            created: d.created,
            has_vector: d.has_vector,
        })
    }

    /// Entries with a vector of the index's model.
    pub fn vector_count(&self) -> usize {
        self.docs.iter().flatten().filter(|d| d.has_vector).count()
    }

    /// Adds or replaces an entry (and its vector, when it is of the index's model) with what
    /// the learnings read model says of it.
    pub fn upsert(
        &mut self,
        e: &MemoryEntry,
        vector: Option<&StoredVector>,
        learning: Option<&Learning>,
    ) {
        let mut counts: HashMap<String, u16, foldhash::fast::RandomState> = HashMap::default();
        let mut len = 0u32;
        for t in tokenize(&searchable_text(e)) {
            len += 1;
            let c = counts.entry(t).or_insert(0);
            *c = c.saturating_add(1);
        }
        self.insert(
            Doc {
                id: e.id,
                tier: e.tier,
                scope: e.scope.clone(),
                importance: e.importance,
                created: e.created_at,
                day: e.created_at.date_naive(),
                terms: counts.into_iter().collect(),
                len,
                tokens: super::tokens(&e.content),
                has_vector: false,
                learn: learning.map(LearnInfo::of),
            },
            vector,
        );
    }

    /// Adds or replaces an entry already read into its terms (an entry of a saved index),
    /// and its vector when it is of the index's model.
    pub(super) fn insert(&mut self, mut doc: Doc, vector: Option<&StoredVector>) {
        self.remove(doc.id);
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.docs.push(None);
                if let Some((_, dim)) = &self.model {
                    self.vectors.resize(self.vectors.len() + dim, 0);
                }
                self.docs.len() - 1
            }
        };
        let slot32 = u32::try_from(slot).unwrap_or(u32::MAX);
        for (t, c) in &doc.terms {
            match self.postings.get_mut(t.as_str()) {
                Some(list) => list.push((slot32, *c)),
                None => {
                    self.postings.insert(t.clone(), vec![(slot32, *c)]);
                }
            }
        }
        self.total_len += u64::from(doc.len);
        doc.has_vector = false;
        if let Some((model, dim)) = &self.model {
            let dst = &mut self.vectors[slot * dim..(slot + 1) * dim];
            match vector {
                Some(v) if &v.model == model && v.values.len() == *dim => {
                    dst.copy_from_slice(&v.values);
                    doc.has_vector = true;
                }
                _ => dst.fill(0),
            }
        }
        self.slots.insert(doc.id, slot);
        self.docs[slot] = Some(doc);
    }

    /// The entries of one scope, as a saved index keeps them.
    pub(super) fn scope_docs<'a>(
        &'a self,
        scope: &'a MemoryScope,
    ) -> impl Iterator<Item = &'a Doc> {
        self.docs
            .iter()
            .flatten()
            .filter(move |d| &d.scope == scope)
    }

    /// Changes an entry's tier and importance without re-reading its text.
    pub fn update_meta(&mut self, id: MemoryId, tier: MemoryTier, importance: f32) {
        if let Some(d) = self.slots.get(&id).and_then(|s| self.docs[*s].as_mut()) {
            d.tier = tier;
            d.importance = importance;
        }
    }

    pub fn remove(&mut self, id: MemoryId) {
        let Some(slot) = self.slots.remove(&id) else {
            return;
        };
        let Some(doc) = self.docs[slot].take() else {
            return;
        };
        let slot32 = u32::try_from(slot).unwrap_or(u32::MAX);
        for (t, _) in &doc.terms {
            if let Some(list) = self.postings.get_mut(t) {
                list.retain(|(s, _)| *s != slot32);
                if list.is_empty() {
                    self.postings.remove(t);
                }
            }
        }
        self.total_len = self.total_len.saturating_sub(u64::from(doc.len));
        self.free.push(slot);
    }

    /// The best `limit` entries for the query, best first.
    pub fn search(&self, q: &Query<'_>, w: &SearchWeights, nous: &NousParams) -> Vec<Scored> {
        if q.limit == 0 || self.slots.is_empty() {
            return Vec::new();
        }
        if q.mode == SearchMode::Associative {
            return self.associative(q, nous);
        }
        let n = self.docs.len();
        let keyword = self.keyword_scores(q.text);
        let cosines = match (q.mode, q.vector, &self.model) {
            (SearchMode::Keyword, _, _) | (_, None, _) | (_, _, None) => None,
            (_, Some(v), Some((_, dim))) if v.len() == *dim => Some(self.cosines(v, *dim)),
            _ => None,
        };
        let days = query_dates(q.text, q.now);
        let half_life = w.recency_half_life_days.max(0.001);
        let mut out: Vec<Scored> = Vec::new();
        for slot in 0..n {
            let Some(d) = &self.docs[slot] else { continue };
            if !d.admits(q) {
                continue;
            }
            let kw = keyword[slot];
            let cos = cosines
                .as_ref()
                .filter(|_| d.has_vector)
                .map_or(0.0, |c| c[slot]);
            let date_match = days.contains(&d.day);
            let score = match q.mode {
                SearchMode::Keyword => {
                    if kw <= 0.0 {
                        continue;
                    }
                    kw
                }
                SearchMode::Vector => {
                    if !d.has_vector || cosines.is_none() {
                        continue;
                    }
                    cos
                }
                SearchMode::Hybrid | SearchMode::Associative => {
                    if kw <= 0.0 && cos <= 0.0 && !date_match {
                        continue;
                    }
                    let age_days = (q.now - d.created).num_seconds().max(0) as f32 / 86_400.0;
                    let staleness = 1.0 - (-age_days / half_life).exp2();
                    w.keyword * kw + w.vector * cos.max(0.0) + w.importance * d.importance
                        - w.recency * staleness
                        + if date_match { w.date } else { 0.0 }
                }
            };
            out.push(Scored {
                id: d.id,
                score,
                keyword: kw,
                cosine: cos,
                date_match,
                dims: None,
            });
        }
        best(out, q.limit)
    }

    /// BM25 per slot (0 for no match) for the query's words, divided by the most a document
    /// could score for them (every word, saturated), so a match on common words alone scores
    /// low.
    pub(super) fn keyword_scores(&self, text: &str) -> Vec<f32> {
        let mut terms: Vec<String> = tokenize(text).collect();
        terms.sort();
        terms.dedup();
        let n_docs = self.slots.len().max(1) as f64;
        let avg = (self.total_len as f64 / n_docs).max(1.0);
        let mut scores = vec![0.0f64; self.docs.len()];
        let mut best_possible = 0.0;
        for t in &terms {
            let df = self.postings.get(t).map_or(0, Vec::len);
            let idf = bm25_idf(n_docs, df as f64);
            best_possible += idf * BM25_TF_MAX;
            let Some(list) = self.postings.get(t) else {
                continue;
            };
            for (slot, tf) in list {
                let slot = *slot as usize;
                let Some(d) = &self.docs[slot] else { continue };
                scores[slot] += idf * bm25_tf(f64::from(*tf), f64::from(d.len), avg);
            }
        }
        let scale = 1.0 / f64::max(best_possible, f64::EPSILON);
        scores
            .into_iter()
            .map(|s| (s * scale).min(1.0) as f32)
            .collect()
    }

    /// Cosine similarity of every slot with the query vector (0 for empty slots).
    pub(super) fn cosines(&self, v: &[f32], dim: usize) -> Vec<f32> {
        let q = quantize(v);
        let scale = 1.0 / (127.0f32 * 127.0);
        self.vectors
            .chunks_exact(dim)
            .map(|row| dot_i8(row, &q) as f32 * scale)
            .collect()
    }
}

impl Doc {
    /// Whether the query's tiers and time bounds let it through.
    pub(super) fn admits(&self, q: &Query<'_>) -> bool {
        if !q.tiers.is_empty() && !q.tiers.contains(&self.tier) {
            return false;
        }
        let learned = self.learn.as_ref().map_or(self.created, |l| l.extracted_at);
        if q.filter.as_of.is_some_and(|t| learned > t) {
            return false;
        }
        if let (Some(t), Some(l)) = (q.filter.as_at, &self.learn)
            && (l.valid_from.is_some_and(|f| f > t) || l.valid_until.is_some_and(|u| u <= t))
        {
            return false;
        }
        true
    }
}

/// The best `limit` of `out`, best first (ties: the newer id first).
pub(super) fn best(mut out: Vec<Scored>, limit: usize) -> Vec<Scored> {
    let by_score = |a: &Scored, b: &Scored| b.score.total_cmp(&a.score).then(b.id.cmp(&a.id));
    if out.len() > limit {
        out.select_nth_unstable_by(limit - 1, by_score);
        out.truncate(limit);
    }
    out.sort_by(by_score);
    out
}

/// The days a query names: ISO dates, and month-name dates with or without a year (when
/// absent, the most recent such day up to `now`).
pub fn query_dates(text: &str, now: DateTime<Utc>) -> Vec<NaiveDate> {
    use chrono::Datelike;
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let month_of = |w: &str| {
        MONTHS
            .iter()
            .position(|m| w.len() >= 3 && m.starts_with(w))
            .map(|i| i as u32 + 1)
    };
    let day_of = |w: &str| {
        let digits: String = w.chars().take_while(char::is_ascii_digit).collect();
        let rest = &w[digits.len()..];
        let ok_suffix = matches!(rest, "" | "st" | "nd" | "rd" | "th");
        digits
            .parse::<u32>()
            .ok()
            .filter(|d| ok_suffix && (1..=31).contains(d))
    };
    let year_of = |w: Option<&String>| {
        w.and_then(|w| w.parse::<i32>().ok())
            .filter(|y| (1900..=2200).contains(y))
    };
    let words: Vec<String> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if let Ok(d) = NaiveDate::parse_from_str(w, "%Y-%m-%d") {
            out.push(d);
            continue;
        }
        let Some(month) = month_of(w) else { continue };
        // "March 14[, 2026]" or "14[th of] March [2026]".
        let after = words.get(i + 1).and_then(|x| day_of(x));
        let before = i
            .checked_sub(1)
            .and_then(|j| {
                if words[j] == "of" {
                    j.checked_sub(1)
                } else {
                    Some(j)
                }
            })
            .and_then(|j| day_of(&words[j]));
        let (day, year_at) = match (after, before) {
            (Some(d), _) => (d, i + 2),
            (None, Some(d)) => (d, i + 1),
            (None, None) => continue,
        };
        let date = match year_of(words.get(year_at)) {
            Some(year) => NaiveDate::from_ymd_opt(year, month, day),
            // Without a year, the last such day up to today: in January, "December 3" is
            // last month, not eleven months ahead (entries are never made in the future).
            None => (0..=4)
                .filter_map(|back| NaiveDate::from_ymd_opt(now.year() - back, month, day))
                .find(|d| *d <= now.date_naive()),
        };
        if let Some(d) = date {
            out.push(d);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::store::{MemoryScope, Provenance};
    use chrono::TimeZone;

    fn entry(text: &str, importance: f32, at: DateTime<Utc>) -> MemoryEntry {
        MemoryEntry {
            id: MemoryId::new(),
            tier: MemoryTier::Archival,
            scope: MemoryScope::Global,
            section: None,
            content: text.into(),
            tags: Vec::new(),
            importance,
            created_at: at,
            updated_at: at,
            provenance: Provenance::default(),
            meta: Default::default(),
        }
    }

    fn q<'a>(text: &'a str, v: Option<&'a [f32]>, mode: SearchMode) -> Query<'a> {
        Query {
            text,
            vector: v,
            tiers: &[],
            limit: 10,
            mode,
            filter: Filter::default(),
            now: Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap(),
        }
    }

    #[test]
    fn keyword_ranks_by_bm25_and_removal_forgets() {
        let at = Utc.with_ymd_and_hms(2026, 5, 1, 0, 0, 0).unwrap();
        let mut idx = MemoryIndex::new(None);
        let a = entry("the staging database runs on db7", 0.5, at);
        let b = entry("lunch was pasta", 0.5, at);
        let c = entry("database database backups nightly", 0.5, at);
        for e in [&a, &b, &c] {
            idx.upsert(e, None, None);
        }
        let hits = idx.search(
            &q("staging database", None, SearchMode::Keyword),
            &Default::default(),
            &NousParams::default(),
        );
        assert_eq!(hits[0].id, a.id);
        assert_eq!(hits.len(), 2);
        assert!(hits[0].keyword > 0.3 && hits[0].keyword < 1.0, "{hits:?}");
        assert!(hits[1].keyword < hits[0].keyword);
        idx.remove(a.id);
        let hits = idx.search(
            &q("staging", None, SearchMode::Keyword),
            &Default::default(),
            &NousParams::default(),
        );
        assert!(hits.is_empty());
        // The slot is reused.
        idx.upsert(&b, None, None);
        assert_eq!(idx.len(), 2);
    }

    #[test]
    fn vectors_of_another_model_are_ignored_and_hybrid_uses_all_signals() {
        let at = Utc.with_ymd_and_hms(2026, 5, 1, 0, 0, 0).unwrap();
        let mut idx = MemoryIndex::new(Some(("m/2".into(), 2)));
        let a = entry("alpha", 0.1, at);
        let b = entry("beta", 0.9, at);
        let c = entry("gamma", 0.5, at);
        let sv = |m: &str, v: [f32; 2]| StoredVector {
            model: m.into(),
            values: quantize(&v),
        };
        idx.upsert(&a, Some(&sv("m/2", [1.0, 0.0])), None);
        idx.upsert(&b, Some(&sv("m/2", [0.0, 1.0])), None);
        idx.upsert(&c, Some(&sv("other/2", [1.0, 0.0])), None);
        assert_eq!(idx.vector_count(), 2);
        let v = [1.0f32, 0.0];
        let hits = idx.search(
            &q("zzz", Some(&v), SearchMode::Vector),
            &Default::default(),
            &NousParams::default(),
        );
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].id, a.id);
        assert!((hits[0].cosine - 1.0).abs() < 0.01);
        // Hybrid: a keyword hit on beta plus its importance beats nothing else matching.
        let hits = idx.search(
            &q("beta", Some(&v), SearchMode::Hybrid),
            &Default::default(),
            &NousParams::default(),
        );
        assert_eq!(hits[0].id, a.id, "cosine 1 outweighs the keyword alone");
        let w = SearchWeights {
            vector: 0.1,
            ..Default::default()
        };
        let hits = idx.search(
            &q("beta", Some(&v), SearchMode::Hybrid),
            &w,
            &NousParams::default(),
        );
        assert_eq!(hits[0].id, b.id);
    }

    #[test]
    fn dates_in_queries_match_the_day_an_entry_was_made() {
        let now = Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap();
        let d = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).unwrap();
        assert_eq!(
            query_dates("what happened on March 3rd?", now),
            vec![d(2026, 3, 3)]
        );
        assert_eq!(
            query_dates("on 14th of feb 2025", now),
            vec![d(2025, 2, 14)]
        );
        assert_eq!(
            query_dates("see 2024-12-31 notes", now),
            vec![d(2024, 12, 31)]
        );
        assert!(query_dates("may I ask", now).is_empty());
        // A day later in the year than `now` is last year's.
        assert_eq!(query_dates("on December 3", now), vec![d(2025, 12, 3)]);
        assert_eq!(query_dates("on June 1", now), vec![d(2026, 6, 1)]);
        assert_eq!(query_dates("on Feb 29", now), vec![d(2024, 2, 29)]);
        let mut idx = MemoryIndex::new(None);
        let a = entry(
            "we chose postgres",
            0.5,
            Utc.with_ymd_and_hms(2026, 3, 3, 9, 0, 0).unwrap(),
        );
        let b = entry(
            "we chose redis",
            0.5,
            Utc.with_ymd_and_hms(2026, 3, 4, 9, 0, 0).unwrap(),
        );
        idx.upsert(&a, None, None);
        idx.upsert(&b, None, None);
        let hits = idx.search(
            &q("what did we choose on March 4", None, SearchMode::Hybrid),
            &Default::default(),
            &NousParams::default(),
        );
        assert_eq!(hits[0].id, b.id);
        assert!(hits[0].date_match);
    }
}
