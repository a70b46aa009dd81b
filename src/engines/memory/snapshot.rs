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
const FORMAT: u32 = 1;

/// The saved index of one scope.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ScopeIndex {
    format: u32,
    /// The glassbox that wrote it: another may split text into terms differently.
    version: String,
    /// The journal sequence the entries are current to.
    pub(super) seq: u64,
    docs: Vec<SavedDoc>,
}

/// One entry of a saved index: what the index keeps of it, without its text.
#[derive(Debug, Serialize, Deserialize)]
struct SavedDoc {
    id: MemoryId,
    tier: MemoryTier,
    importance: f32,
    created: DateTime<Utc>,
    /// Its distinct terms, space-separated (a term never holds whitespace), and their counts.
    terms: String,
    counts: Vec<u16>,
    len: u32,
    tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    learn: Option<LearnInfo>,
}

impl ScopeIndex {
    /// The entries `docs` (all of one scope) as current to journal sequence `seq`.
    pub(super) fn of<'a>(seq: u64, docs: impl Iterator<Item = &'a Doc>) -> Self {
        let docs = docs
            .map(|d| {
                let mut terms = String::new();
                let mut counts = Vec::with_capacity(d.terms.len());
                for (t, c) in &d.terms {
                    if !terms.is_empty() {
                        terms.push(' ');
                    }
                    terms.push_str(t);
                    counts.push(*c);
                }
                SavedDoc {
                    id: d.id,
                    tier: d.tier,
                    importance: d.importance,
                    created: d.created,
                    terms,
                    counts,
                    len: d.len,
                    tokens: d.tokens,
                    learn: d.learn.clone(),
                }
            })
            .collect();
        Self {
            format: FORMAT,
            version: env!("CARGO_PKG_VERSION").to_string(),
            seq,
            docs,
        }
    }

    /// Whether this glassbox may use it in a store whose journal has reached `last_seq`.
    pub(super) fn usable(&self, last_seq: u64) -> bool {
        self.format == FORMAT && self.version == env!("CARGO_PKG_VERSION") && self.seq <= last_seq
    }

    /// The entries as the index holds them, in scope `scope`; `None` when one does not read
    /// back (its terms and counts disagree).
    pub(super) fn into_docs(self, scope: &MemoryScope) -> Option<Vec<Doc>> {
        self.docs
            .into_iter()
            .map(|d| {
                let terms: Vec<(String, u16)> = if d.terms.is_empty() {
                    Vec::new()
                } else {
                    d.terms
                        .split(' ')
                        .map(str::to_string)
                        .zip(d.counts.iter().copied())
                        .collect()
                };
                (terms.len() == d.counts.len()).then(|| Doc {
                    id: d.id,
                    tier: d.tier,
                    scope: scope.clone(),
                    importance: d.importance,
                    created: d.created,
                    day: d.created.date_naive(),
                    terms,
                    len: d.len,
                    tokens: d.tokens,
                    has_vector: false,
                    learn: d.learn,
                })
            })
            .collect()
    }
}
