//! The knowledge-base tables (seed 001): one row per document and one per chunk, keyed by
//! document id ‖ chunk index so a document's chunks read in order and go with it. A document
//! and its chunks are always written and deleted in one transaction.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::kv::ReadableTable;
use super::tables::*;
use super::*;

/// What a document came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocKind {
    File,
    Url,
    Note,
}

impl DocKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DocKind::File => "file",
            DocKind::Url => "url",
            DocKind::Note => "note",
        }
    }
}

impl std::fmt::Display for DocKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One document of the knowledge base.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeDoc {
    pub id: DocId,
    pub kind: DocKind,
    /// What lists and citations show: the file's name, the given label, or the URL.
    pub label: String,
    /// The absolute file path, the URL, or `note`.
    pub source: String,
    /// Hex SHA-256 of the document's text: an unchanged file is not added again.
    pub hash: String,
    pub added_at: DateTime<Utc>,
    /// Length of the text in characters.
    pub chars: usize,
    pub chunks: u32,
    /// The embedder (`Embedder::id`) whose vectors the chunks carry; `None` when none do.
    #[serde(default)]
    pub embedder: Option<String>,
}

/// One chunk of a document: a span of its text, with its embedding when there is one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeChunk {
    pub doc: DocId,
    pub index: u32,
    pub text: String,
    /// Character (not byte) offsets of the span in the document's text, end exclusive.
    pub start: usize,
    pub end: usize,
    /// L2-normalised, from the document's `embedder`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<f32>>,
}

fn doc_chunks(doc: DocId) -> std::ops::RangeInclusive<[u8; 20]> {
    chunk_key(doc.to_bytes(), 0)..=chunk_key(doc.to_bytes(), u32::MAX)
}

impl Writer<'_> {
    /// Inserts or replaces a document with its chunks: chunks the document had before and
    /// `chunks` does not hold are deleted.
    pub fn put_knowledge_doc(
        &mut self,
        doc: &KnowledgeDoc,
        chunks: &[KnowledgeChunk],
    ) -> Result<()> {
        if let Some(c) = chunks.iter().find(|c| c.doc != doc.id) {
            return Err(StoreError::Invalid(format!(
                "chunk {} belongs to document {}, not {}",
                c.index, c.doc, doc.id
            )));
        }
        self.txn
            .open_table(KNOWLEDGE_DOCS)?
            .insert(doc.id.to_bytes(), codec::encode(doc)?.as_slice())?;
        let mut t = self.txn.open_table(KNOWLEDGE_CHUNKS)?;
        t.retain_in(doc_chunks(doc.id), |_, _| false)?;
        for c in chunks {
            t.insert(
                chunk_key(doc.id.to_bytes(), c.index),
                codec::encode(c)?.as_slice(),
            )?;
        }
        drop(t);
        self.journal(ChangeKind::KnowledgePut, None, Some(doc.id.0))
    }

    /// Deletes a document and all its chunks; the document, or `None` when there was none.
    pub fn delete_knowledge_doc(&mut self, id: DocId) -> Result<Option<KnowledgeDoc>> {
        let Some(old) = self
            .txn
            .open_table(KNOWLEDGE_DOCS)?
            .remove(id.to_bytes())?
            .map(|v| codec::decode::<KnowledgeDoc>("knowledge_docs", v.value()))
            .transpose()?
        else {
            return Ok(None);
        };
        self.txn
            .open_table(KNOWLEDGE_CHUNKS)?
            .retain_in(doc_chunks(id), |_, _| false)?;
        self.journal(ChangeKind::KnowledgeDeleted, None, Some(id.0))?;
        Ok(Some(old))
    }
}

impl Store {
    pub fn knowledge_doc(&self, id: DocId) -> Result<Option<KnowledgeDoc>> {
        let r = self.read()?;
        let t = r.open_table(KNOWLEDGE_DOCS)?;
        t.get(id.to_bytes())?
            .map(|v| codec::decode("knowledge_docs", v.value()))
            .transpose()
    }

    /// Every document, oldest first.
    pub fn knowledge_docs(&self) -> Result<Vec<KnowledgeDoc>> {
        let r = self.read()?;
        let t = r.open_table(KNOWLEDGE_DOCS)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            out.push(codec::decode("knowledge_docs", row?.1.value())?);
        }
        Ok(out)
    }

    /// One document's chunks in order.
    pub fn knowledge_chunks(&self, doc: DocId) -> Result<Vec<KnowledgeChunk>> {
        let r = self.read()?;
        let t = r.open_table(KNOWLEDGE_CHUNKS)?;
        let mut out = Vec::new();
        for row in t.range(doc_chunks(doc))? {
            out.push(codec::decode("knowledge_chunks", row?.1.value())?);
        }
        Ok(out)
    }

    /// Every chunk of every document, by document (oldest first), then index; read in one
    /// transaction, so `f` sees one state of the base. Stops at the first error of `f`.
    pub fn each_knowledge_chunk(
        &self,
        mut f: impl FnMut(KnowledgeChunk) -> Result<()>,
    ) -> Result<()> {
        let r = self.read()?;
        let t = r.open_table(KNOWLEDGE_CHUNKS)?;
        for row in t.iter()? {
            f(codec::decode("knowledge_chunks", row?.1.value())?)?;
        }
        Ok(())
    }

    /// Number of chunks over all documents.
    pub fn knowledge_chunk_count(&self) -> Result<u64> {
        self.read()?.open_table(KNOWLEDGE_CHUNKS)?.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::store::testing::{Fixture, on_every_arm};

    on_every_arm!(
        documents_and_chunks_round_trip_and_delete_together,
        a_v6_store_is_migrated_and_gets_the_knowledge_tables,
    );

    fn doc(chunks: u32) -> (KnowledgeDoc, Vec<KnowledgeChunk>) {
        let d = KnowledgeDoc {
            id: DocId::new(),
            kind: DocKind::Note,
            label: "n".into(),
            source: "note".into(),
            hash: "00".into(),
            added_at: Utc::now(),
            chars: 10,
            chunks,
            embedder: None,
        };
        let cs = (0..chunks)
            .map(|i| KnowledgeChunk {
                doc: d.id,
                index: i,
                text: format!("chunk {i}"),
                start: i as usize,
                end: i as usize + 1,
                vector: (i % 2 == 0).then(|| vec![0.6, 0.8]),
            })
            .collect();
        (d, cs)
    }

    fn documents_and_chunks_round_trip_and_delete_together(fx: &Fixture) {
        let store = fx.open();
        let (a, ac) = doc(300);
        let (b, bc) = doc(2);
        store
            .write(|w| {
                w.put_knowledge_doc(&a, &ac)?;
                w.put_knowledge_doc(&b, &bc)
            })
            .unwrap();
        assert_eq!(store.knowledge_docs().unwrap(), vec![a.clone(), b.clone()]);
        // Big-endian indexes: 256 sorts after 255, not after 1.
        assert_eq!(store.knowledge_chunks(a.id).unwrap(), ac);
        assert_eq!(store.knowledge_chunk_count().unwrap(), 302);
        // Replacing with fewer chunks drops the rest.
        store.write(|w| w.put_knowledge_doc(&a, &ac[..3])).unwrap();
        assert_eq!(store.knowledge_chunks(a.id).unwrap().len(), 3);
        let gone = store.write(|w| w.delete_knowledge_doc(a.id)).unwrap();
        assert_eq!(gone.map(|d| d.id), Some(a.id));
        assert!(store.knowledge_doc(a.id).unwrap().is_none());
        assert!(store.knowledge_chunks(a.id).unwrap().is_empty());
        let mut left = Vec::new();
        store
            .each_knowledge_chunk(|c| {
                left.push(c);
                Ok(())
            })
            .unwrap();
        assert_eq!(left, bc);
        assert!(
            store
                .write(|w| w.delete_knowledge_doc(a.id))
                .unwrap()
                .is_none()
        );
        // A chunk of another document is refused.
        let err = store.write(|w| w.put_knowledge_doc(&a, &bc)).unwrap_err();
        assert!(err.to_string().contains("belongs to document"), "{err}");
        let kinds: Vec<ChangeKind> = store
            .follow(0, 100)
            .unwrap()
            .into_iter()
            .map(|(_, c)| c.kind)
            .collect();
        assert!(kinds.contains(&ChangeKind::KnowledgeDeleted), "{kinds:?}");
    }

    fn a_v6_store_is_migrated_and_gets_the_knowledge_tables(fx: &Fixture) {
        let session = Session::new("kept", SessionSource::Glassbox);
        {
            let store = fx.open();
            store.write(|w| w.put_session(&session)).unwrap();
        }
        // Make it a v6 file: no knowledge tables, version 6.
        // (A byte backend holds a table from its first row: these two were never written.)
        {
            let db = fx.raw();
            let w = db.begin_write().unwrap();
            assert_eq!(w.delete_table(KNOWLEDGE_DOCS).unwrap(), fx.is_redb());
            assert_eq!(w.delete_table(KNOWLEDGE_CHUNKS).unwrap(), fx.is_redb());
            w.open_table(META)
                .unwrap()
                .insert("schema_version", 6u32.to_le_bytes().as_slice())
                .unwrap();
            w.commit().unwrap();
            let r = db.begin_read().unwrap();
            assert!(r.open_table_if_exists(KNOWLEDGE_DOCS).unwrap().is_none() || !fx.is_redb());
        }
        let store = fx.open();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(store.sessions().unwrap(), vec![session]);
        assert!(store.knowledge_docs().unwrap().is_empty());
        let (d, cs) = doc(1);
        store.write(|w| w.put_knowledge_doc(&d, &cs)).unwrap();
        drop(store);
        let store = fx.open();
        assert_eq!(store.knowledge_chunks(d.id).unwrap(), cs);
    }
}
