//! The local knowledge base (seed 001, DeepTrust's client-side RAG): documents (files,
//! notes, URLs) cut into ~500-character chunks with overlap, each embedded with the local
//! embedder, retrieved top-k by cosine similarity with the document and span kept for
//! citations.
//!
//! - this file: [`Knowledge`] — listing, removing, searching.
//! - `add.rs`: adding files, folders, notes and URLs ([`AddReport`], [`AddEvent`]).
//! - `chunk.rs`: cutting text into chunks at paragraph, sentence or word boundaries.
//! - `extract.rs`: file → text (UTF-8 text, PDF), and walking a folder.
//! - `search.rs`: ranking chunks (cosine, or BM25 without comparable vectors).
//!
//! Every call blocks (store commits, embedding): async code runs it on the blocking pool.

mod add;
mod chunk;
mod extract;
mod search;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::engines::memory::Embedder;
pub use crate::store::{DocId, DocKind, KnowledgeChunk, KnowledgeDoc};
use crate::store::{Store, StoreError};
pub use add::{AddEvent, AddReport};
pub use chunk::chunk;
pub use extract::extract;

/// `[knowledge]`: how documents are chunked and how many chunks a search returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeParams {
    /// Seed 001: chunks of ~500 characters.
    pub chunk_chars: usize,
    /// Seed 001: consecutive chunks overlap by this many characters.
    pub overlap_chars: usize,
    /// Seed 001: retrieval returns the top 8 chunks.
    pub top_k: usize,
    /// Larger files are skipped with a reason.
    pub max_file_bytes: u64,
}

impl Default for KnowledgeParams {
    fn default() -> Self {
        Self {
            chunk_chars: 500,
            overlap_chars: 100,
            top_k: 8,
            max_file_bytes: 50 * 1024 * 1024,
        }
    }
}

/// Knowledge-base failures, each fit for one line.
#[derive(Clone, Debug, thiserror::Error)]
pub enum KnowledgeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot read {path}: {reason}")]
    Path { path: PathBuf, reason: String },
    #[error("'{0}' is not an http(s) URL")]
    BadUrl(String),
    #[error("the note is empty")]
    EmptyNote,
    #[error("the query has no words")]
    EmptyQuery,
    #[error("no document matches '{0}' (give an id, a unique part of it, a source or a label)")]
    NotFound(String),
    #[error("'{key}' matches {count} documents ({ids}); give the id")]
    Ambiguous {
        key: String,
        count: usize,
        ids: String,
    },
    #[error("a label names one document, and {0} is a folder")]
    LabelOnFolder(PathBuf),
}

pub type Result<T, E = KnowledgeError> = std::result::Result<T, E>;

/// One search result: a chunk with its document and where in it the chunk is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KnowledgeHit {
    pub doc: KnowledgeDoc,
    pub index: u32,
    /// Character offsets of the chunk in the document's text.
    pub start: usize,
    pub end: usize,
    pub text: String,
    /// Cosine similarity, or BM25 scaled to 0–1 for chunks without a comparable vector.
    pub score: f32,
}

/// The knowledge base over one store.
pub struct Knowledge {
    store: Store,
    embedder: Option<Arc<dyn Embedder>>,
    params: KnowledgeParams,
    batch_size: usize,
    warnings: Mutex<Vec<String>>,
}

impl Knowledge {
    pub fn new(store: Store, embedder: Option<Arc<dyn Embedder>>, params: KnowledgeParams) -> Self {
        Self {
            store,
            embedder,
            params,
            batch_size: 32,
            warnings: Mutex::new(Vec::new()),
        }
    }

    /// Texts per embedding call (`[embeddings] batch_size`; 32 unless set).
    pub fn with_batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }

    pub fn params(&self) -> &KnowledgeParams {
        &self.params
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The chunks of `text` (see [`chunk::chunk`]) with this base's sizes.
    pub fn chunk(
        text: &str,
        chunk_chars: usize,
        overlap_chars: usize,
    ) -> Vec<(usize, usize, String)> {
        chunk::chunk(text, chunk_chars, overlap_chars)
    }

    /// Warnings of searches since the last call (the embedder failed: ranked by words).
    pub fn take_warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }

    /// Every document, oldest first.
    pub fn list(&self) -> Result<Vec<KnowledgeDoc>> {
        Ok(self.store.knowledge_docs()?)
    }

    /// The document `key` names: its full id, an exact source or label, or a unique prefix
    /// or suffix (4 hex digits or more) of its id.
    pub fn resolve(&self, key: &str) -> Result<KnowledgeDoc> {
        let key = key.trim();
        let docs = self.list()?;
        if let Ok(id) = key.parse::<DocId>() {
            return docs
                .into_iter()
                .find(|d| d.id == id)
                .ok_or_else(|| KnowledgeError::NotFound(key.to_string()));
        }
        let abs = std::path::absolute(key)
            .ok()
            .map(|p| p.display().to_string());
        let by_source: Vec<&KnowledgeDoc> = docs
            .iter()
            .filter(|d| d.source == key || Some(&d.source) == abs.as_ref())
            .filter(|d| d.kind != DocKind::Note)
            .collect();
        let by_label: Vec<&KnowledgeDoc> = docs.iter().filter(|d| d.label == key).collect();
        let hex: String = key
            .chars()
            .filter(|c| *c != '-')
            .collect::<String>()
            .to_ascii_lowercase();
        let by_id: Vec<&KnowledgeDoc> =
            if hex.len() >= 4 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
                docs.iter()
                    .filter(|d| {
                        let h = d.id.0.simple().to_string();
                        h.starts_with(&hex) || h.ends_with(&hex)
                    })
                    .collect()
            } else {
                Vec::new()
            };
        for found in [by_source, by_label, by_id] {
            match found.as_slice() {
                [] => continue,
                [one] => return Ok((*one).clone()),
                many => {
                    return Err(KnowledgeError::Ambiguous {
                        key: key.to_string(),
                        count: many.len(),
                        ids: many
                            .iter()
                            .map(|d| d.id.short())
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                }
            }
        }
        Err(KnowledgeError::NotFound(key.to_string()))
    }

    /// Removes the document `key` names (see [`Knowledge::resolve`]) with all its chunks.
    pub fn remove(&self, key: &str) -> Result<KnowledgeDoc> {
        let doc = self.resolve(key)?;
        self.store
            .write(|w| w.delete_knowledge_doc(doc.id))?
            .ok_or_else(|| KnowledgeError::NotFound(key.to_string()))
    }

    /// The `k` chunks that best answer `query`, best first (ties: older document, earlier
    /// chunk). With an embedder, by cosine similarity, except chunks embedded by another
    /// embedder or none, which are ranked by their words (as all are without one, or when
    /// embedding the query fails: see [`Knowledge::take_warnings`]).
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<KnowledgeHit>> {
        let query = query.trim();
        if query.is_empty() {
            return Err(KnowledgeError::EmptyQuery);
        }
        let query_vector = self
            .embedder
            .as_ref()
            .and_then(|e| match e.embed(&[query]) {
                Ok(mut v) if v.len() == 1 => Some((e.id().to_string(), v.remove(0))),
                Ok(_) => None,
                Err(err) => {
                    if let Ok(mut w) = self.warnings.lock() {
                        w.push(format!("{err}; the knowledge base is searched by words"));
                    }
                    None
                }
            });
        let docs: HashMap<DocId, KnowledgeDoc> =
            self.list()?.into_iter().map(|d| (d.id, d)).collect();
        let mut candidates = Vec::new();
        self.store.each_knowledge_chunk(|chunk| {
            let comparable = match (&query_vector, docs.get(&chunk.doc)) {
                (Some((id, _)), Some(d)) => d.embedder.as_deref() == Some(id.as_str()),
                _ => false,
            };
            candidates.push(search::Candidate { chunk, comparable });
            Ok(())
        })?;
        let ranked = search::rank(
            query,
            query_vector.as_ref().map(|(_, v)| v.as_slice()),
            &candidates,
        );
        let by_key: HashMap<(DocId, u32), &KnowledgeChunk> = candidates
            .iter()
            .map(|c| ((c.chunk.doc, c.chunk.index), &c.chunk))
            .collect();
        Ok(ranked
            .into_iter()
            .filter_map(|(doc, index, score)| {
                let c = by_key.get(&(doc, index))?;
                Some(KnowledgeHit {
                    doc: docs.get(&doc)?.clone(),
                    index,
                    start: c.start,
                    end: c.end,
                    text: c.text.clone(),
                    score,
                })
            })
            .take(k)
            .collect())
    }
}
