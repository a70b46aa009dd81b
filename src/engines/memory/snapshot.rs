//! Saved memory indexes: one per scope, kept in the store (`memory_index`), so a process
//! that searches memory (every `ask`) reads a scope's entries already split into terms
//! instead of decoding and tokenizing every one of them. A saved index names the journal
//! sequence it is current to; what changed after it is read from the journal, as a loaded
//! index follows changes anyway ([`super::Memory`]'s `refresh`).
//!
//! It is a cache: a scope without one, or with one written by another glassbox version, a
//! sequence the store has not reached (a store restored from a copy) or that does not read
//! back, is built from its entries, and the index saved again once the scope holds
//! `[memory] index_snapshot_entries` entries. Vectors are not kept here: they are read from
//! `memory_vectors` as before, only when there is an embedder.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::assoc::LearnInfo;
use super::index::Doc;
use crate::store::{MemoryId, MemoryScope, MemoryTier};

/// Bumped whenever what a saved index holds, or how an entry is split into terms, changes.
const FORMAT: u32 = 2;

/// The saved index of one scope, a column per field (a few long JSON arrays and one string
/// read far faster than thousands of small objects).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ScopeIndex {
    format: u32,
    /// The glassbox that wrote it: another may split text into terms differently.
    version: String,
    /// The journal sequence the entries are current to.
    pub(super) seq: u64,
    ids: Vec<MemoryId>,
    tiers: Vec<MemoryTier>,
    importance: Vec<f32>,
    /// Creation times, nanoseconds since the epoch.
    created: Vec<i64>,
    /// Each entry's distinct terms, space-separated (a term never holds whitespace), the
    /// entries one to a line; and the terms' counts, all entries' in a row.
    terms: String,
    counts: Vec<u16>,
    lens: Vec<u32>,
    tokens: Vec<u64>,
    /// The learnings read model's facts, by position, for the entries that have them.
    learn: Vec<(u32, LearnInfo)>,
}

impl ScopeIndex {
    /// The entries `docs` (all of one scope) as current to journal sequence `seq`.
    pub(super) fn of<'a>(seq: u64, docs: impl Iterator<Item = &'a Doc>) -> Self {
        let mut s = Self {
            format: FORMAT,
            version: env!("CARGO_PKG_VERSION").to_string(),
            seq,
            ids: Vec::new(),
            tiers: Vec::new(),
            importance: Vec::new(),
            created: Vec::new(),
            terms: String::new(),
            counts: Vec::new(),
            lens: Vec::new(),
            tokens: Vec::new(),
            learn: Vec::new(),
        };
        for (i, d) in docs.enumerate() {
            if i > 0 {
                s.terms.push('\n');
            }
            for (k, (t, c)) in d.terms.iter().enumerate() {
                if k > 0 {
                    s.terms.push(' ');
                }
                s.terms.push_str(t);
                s.counts.push(*c);
            }
            if let Some(l) = &d.learn {
                s.learn
                    .push((u32::try_from(i).unwrap_or(u32::MAX), l.clone()));
            }
            s.ids.push(d.id);
            s.tiers.push(d.tier);
            s.importance.push(d.importance);
            s.created
                .push(d.created.timestamp_nanos_opt().unwrap_or(i64::MAX));
            s.lens.push(d.len);
            s.tokens.push(d.tokens);
        }
        s
    }

    /// Whether this glassbox may use it in a store whose journal has reached `last_seq`.
    pub(super) fn usable(&self, last_seq: u64) -> bool {
        self.format == FORMAT && self.version == env!("CARGO_PKG_VERSION") && self.seq <= last_seq
    }

    /// The entries as the index holds them, in scope `scope`; `None` when the columns do not
    /// agree.
    pub(super) fn into_docs(self, scope: &MemoryScope) -> Option<Vec<Doc>> {
        let n = self.ids.len();
        if [
            self.tiers.len(),
            self.importance.len(),
            self.created.len(),
            self.lens.len(),
            self.tokens.len(),
        ]
        .iter()
        .any(|&len| len != n)
        {
            return None;
        }
        if n == 0 {
            return Some(Vec::new());
        }
        let mut learn: Vec<Option<LearnInfo>> = vec![None; n];
        for (i, l) in self.learn {
            *learn.get_mut(i as usize)? = Some(l);
        }
        let mut lines = self.terms.split('\n');
        let mut counts = self.counts.into_iter();
        let mut docs = Vec::with_capacity(n);
        for (i, learn) in learn.into_iter().enumerate() {
            let line = lines.next()?;
            let mut terms = Vec::new();
            for t in line.split(' ').filter(|t| !t.is_empty()) {
                terms.push((t.to_string(), counts.next()?));
            }
            let created = DateTime::<Utc>::from_timestamp_nanos(self.created[i]);
            docs.push(Doc {
                id: self.ids[i],
                tier: self.tiers[i],
                scope: scope.clone(),
                importance: self.importance[i],
                created,
                day: created.date_naive(),
                terms,
                len: self.lens[i],
                tokens: self.tokens[i],
                has_vector: false,
                learn,
            });
        }
        // Every term and count taken, no line left over.
        (lines.next().is_none() && counts.next().is_none()).then_some(docs)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::store::learning::TemporalConfidence;

    fn doc(terms: &[(&str, u16)], learn: Option<LearnInfo>) -> Doc {
        let created = Utc::now();
        Doc {
            id: MemoryId::new(),
            tier: MemoryTier::Archival,
            scope: MemoryScope::Global,
            importance: 0.25,
            created,
            day: created.date_naive(),
            terms: terms.iter().map(|(t, c)| (t.to_string(), *c)).collect(),
            len: terms.iter().map(|(_, c)| u32::from(*c)).sum(),
            tokens: 9,
            has_vector: false,
            learn,
        }
    }

    fn fields(d: &Doc) -> String {
        format!(
            "{} {} {} {} {:?} {} {} {:?}",
            d.id, d.tier, d.importance, d.created, d.terms, d.len, d.tokens, d.learn
        )
    }

    #[test]
    fn entries_read_back_as_they_were_saved_and_columns_that_disagree_do_not() {
        let now = Utc::now();
        let learn = LearnInfo {
            concepts: vec!["tides".into()],
            reinforcement: 0.5,
            recurrence: 2,
            useful: 1,
            wrong: 0,
            valid_from: Some(now),
            valid_until: None,
            confidence: TemporalConfidence::Low,
            extracted_at: now,
            reinforced_at: now,
            edges: vec![(MemoryId::new(), 0.75)],
        };
        let docs = [
            doc(&[("tide", 2), ("moon", 1)], None),
            doc(&[], None),
            doc(&[("harbor", 3)], Some(learn)),
        ];
        let saved = ScopeIndex::of(7, docs.iter());
        let json = serde_json::to_vec(&saved).unwrap();
        let back: ScopeIndex = serde_json::from_slice(&json).unwrap();
        assert!(back.usable(7) && !back.usable(6));
        let read = back.into_docs(&MemoryScope::Global).unwrap();
        let want: Vec<String> = docs.iter().map(fields).collect();
        assert_eq!(read.iter().map(fields).collect::<Vec<_>>(), want);
        for cut in ["counts", "tiers", "terms"] {
            let mut v: serde_json::Value = serde_json::from_slice(&json).unwrap();
            match cut {
                "terms" => v[cut] = serde_json::json!("tide moon"),
                _ => {
                    v[cut].as_array_mut().unwrap().pop();
                }
            }
            let broken: ScopeIndex = serde_json::from_value(v).unwrap();
            assert!(broken.into_docs(&MemoryScope::Global).is_none(), "{cut}");
        }
    }
}
