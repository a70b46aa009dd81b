//! Moving memory in and out: JSON Lines export and import (lossless: ids, tiers, scopes,
//! times, provenance and vectors survive the round trip), and re-embedding.

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

use super::{Memory, MemoryError, Result};
use crate::store::learning::{EntryLearning, EventSource, LEARNING_SCHEMA_VERSION};
use crate::store::{MemoryEntry, MemoryId, MemoryTier, StoredVector};

/// Entries embedded and committed together by `import` and `reembed`, between progress
/// reports.
const EMBED_BATCH: usize = 256;

/// One exported line: the entry and its vector.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExportLine {
    #[serde(flatten)]
    pub entry: MemoryEntry,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<ExportVector>,
}

/// A vector as exported: its embedder and the `i8` components.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExportVector {
    pub model: String,
    pub values: Vec<i8>,
}

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ImportReport {
    pub imported: usize,
    /// Lines whose entry was already stored, unchanged.
    pub unchanged: usize,
    /// Lines that replaced a stored entry of the same id.
    pub replaced: usize,
    /// Imported entries without a vector, which were embedded now.
    pub embedded: usize,
}

impl Memory {
    /// Writes every entry of the visible scopes as one JSON object per line; returns the count.
    pub fn export(&self, out: &mut dyn Write) -> Result<usize> {
        let mut n = 0;
        for scope in self.visible.iter() {
            let entries = self.store.scope_memories(scope)?;
            let ids: Vec<MemoryId> = entries.iter().map(|e| e.id).collect();
            let vectors = self.store.memory_vectors(&ids)?;
            for (entry, v) in entries.into_iter().zip(vectors) {
                let line = ExportLine {
                    entry,
                    vector: v.map(|v| ExportVector {
                        model: v.model,
                        values: v.values,
                    }),
                };
                let json = serde_json::to_string(&line)
                    .map_err(|e| MemoryError::Invalid(format!("cannot encode memory: {e}")))?;
                writeln!(out, "{json}")
                    .map_err(|e| MemoryError::Invalid(format!("cannot write the export: {e}")))?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Reads JSON Lines written by [`Memory::export`]. Every line is checked before anything
    /// is stored: a bad line is an error naming its number and nothing is imported. Entries
    /// keep their ids and scopes; ones without a vector are embedded when there is an embedder,
    /// in batches, with `progress(done, total)` after each.
    pub fn import(
        &self,
        input: &mut dyn BufRead,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<ImportReport> {
        let mut lines = Vec::new();
        for (i, line) in input.lines().enumerate() {
            let line = line.map_err(|e| MemoryError::Invalid(format!("line {}: {e}", i + 1)))?;
            if line.trim().is_empty() {
                continue;
            }
            let parsed: ExportLine = serde_json::from_str(&line)
                .map_err(|e| MemoryError::Invalid(format!("line {}: {e}", i + 1)))?;
            if parsed.entry.content.trim().is_empty() {
                return Err(MemoryError::Invalid(format!(
                    "line {}: empty content",
                    i + 1
                )));
            }
            if !(0.0..=1.0).contains(&parsed.entry.importance) {
                return Err(MemoryError::Invalid(format!(
                    "line {}: importance {} is outside 0–1",
                    i + 1,
                    parsed.entry.importance
                )));
            }
            lines.push(parsed);
        }
        let mut report = ImportReport::default();
        let missing: Vec<MemoryEntry> = lines
            .iter()
            .filter(|l| l.vector.is_none())
            .map(|l| l.entry.clone())
            .collect();
        let mut fresh = Vec::with_capacity(missing.len());
        for batch in missing.chunks(EMBED_BATCH) {
            fresh.extend(self.vectors_for(batch));
            progress(fresh.len(), missing.len());
        }
        let mut fresh = fresh.into_iter();
        let mut rows = Vec::with_capacity(lines.len());
        for l in lines {
            let vector = match l.vector {
                Some(v) => Some(StoredVector {
                    model: v.model,
                    values: v.values,
                }),
                None => {
                    let v = fresh.next().flatten();
                    report.embedded += usize::from(v.is_some());
                    v
                }
            };
            match self.store.memory(l.entry.id)? {
                Some(old) if old == l.entry => report.unchanged += 1,
                Some(_) => report.replaced += 1,
                None => report.imported += 1,
            }
            rows.push((l.entry, vector));
        }
        let how = EntryLearning {
            extractor_version: "import".into(),
            source: EventSource::UserReview,
            schema_version: LEARNING_SCHEMA_VERSION,
            concepts: None,
        };
        for batch in rows.chunks(1_000) {
            self.store.write(|w| {
                for (e, v) in batch {
                    // Every entry but a core fact is a learning: its extraction event writes
                    // it (once per id); the tier, tags and importance of the file are the
                    // view's, written over it. A learning's text changes only by events.
                    if e.tier == MemoryTier::Core {
                        w.put_memory(e)?;
                    } else {
                        w.learn_entry(e, &how)?;
                        if w.live_learning_text(e.id)?.as_deref() == Some(e.content.as_str()) {
                            w.put_memory(e)?;
                        }
                    }
                    if let Some(v) = v {
                        w.put_memory_vector(e.id, v)?;
                    }
                }
                Ok(())
            })?;
        }
        Ok(report)
    }

    /// Embeds the entries of the visible scopes that have no vector of the current embedder
    /// (all of them with `all`), in batches; `progress(done, total)` after each batch.
    /// Returns how many were embedded.
    pub fn reembed(&self, all: bool, progress: &mut dyn FnMut(usize, usize)) -> Result<usize> {
        let Some(embedder) = self.embedder.clone() else {
            return Err(MemoryError::Invalid(
                "no embedder is configured ([embeddings] provider = \"none\")".into(),
            ));
        };
        let mut todo = Vec::new();
        for scope in self.visible.iter() {
            let entries = self.store.scope_memories(scope)?;
            let ids: Vec<MemoryId> = entries.iter().map(|e| e.id).collect();
            let vectors = self.store.memory_vectors(&ids)?;
            for (e, v) in entries.into_iter().zip(vectors) {
                let current = v.is_some_and(|v| v.model == embedder.id());
                if all || !current {
                    todo.push(e);
                }
            }
        }
        let total = todo.len();
        let mut done = 0;
        for batch in todo.chunks(EMBED_BATCH) {
            let texts: Vec<String> = batch.iter().map(super::index::embedding_text).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = embedder.embed(&refs)?;
            self.store.write(|w| {
                for (e, v) in batch.iter().zip(&vectors) {
                    w.put_memory_vector(
                        e.id,
                        &StoredVector {
                            model: embedder.id().to_string(),
                            values: super::index::quantize(v),
                        },
                    )?;
                }
                Ok(())
            })?;
            done += batch.len();
            progress(done, total);
        }
        Ok(total)
    }
}
