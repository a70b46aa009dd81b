//! Adding documents: files and folders (through `extract`), notes and URLs; each text is
//! deduplicated by source and hash, chunked, embedded in batches and written in one
//! transaction with the removal of its older version.

use std::path::{Path, PathBuf};

use chrono::Utc;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{
    DocId, DocKind, Knowledge, KnowledgeChunk, KnowledgeDoc, KnowledgeError, Result, chunk, extract,
};

/// What [`Knowledge::add_path`] is doing, one event per step of each file, for progress
/// lines. Nothing here prints.
#[derive(Clone, Debug, PartialEq)]
pub enum AddEvent {
    /// Found this many files to consider.
    Found {
        files: usize,
    },
    Reading {
        path: PathBuf,
    },
    Skipped {
        path: PathBuf,
        reason: String,
    },
    /// Same source and text as a document already there: nothing written.
    Unchanged {
        path: PathBuf,
    },
    /// Stored with this many chunks (`embedded`: with vectors), replacing an older version
    /// of the same file when `replaced`.
    Added {
        path: PathBuf,
        chunks: u32,
        embedded: bool,
        replaced: bool,
    },
}

/// What an add did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AddReport {
    /// New documents, and new versions of changed ones.
    pub added: Vec<KnowledgeDoc>,
    /// Documents that were there already with the same text (nothing written).
    pub unchanged: Vec<KnowledgeDoc>,
    /// How many of `added` replaced an older version of the same source.
    pub replaced: usize,
    /// `<path>: <reason>` for each file that could not be read as text.
    pub skipped: Vec<String>,
    /// Problems that did not stop the add (embedding failed: chunks kept without vectors).
    pub warnings: Vec<String>,
}

impl AddReport {
    /// Chunks in the added documents.
    pub fn added_chunks(&self) -> u64 {
        self.added.iter().map(|d| u64::from(d.chunks)).sum()
    }

    /// Adds `other`'s documents, skips and warnings to this report.
    pub fn merge(&mut self, other: AddReport) {
        self.added.extend(other.added);
        self.unchanged.extend(other.unchanged);
        self.replaced += other.replaced;
        self.skipped.extend(other.skipped);
        self.warnings.extend(other.warnings);
    }
}

impl Knowledge {
    /// Adds a file, or every file under a folder (sorted, hidden ones left out). A file that
    /// cannot be read as text is skipped with its reason; an unchanged one (same path, same
    /// text) is left as it is; a changed one replaces its older version in one transaction.
    pub fn add_path(
        &self,
        path: &Path,
        on_progress: &mut dyn FnMut(&AddEvent),
    ) -> Result<AddReport> {
        self.add_path_labeled(path, None, on_progress)
    }

    /// [`Knowledge::add_path`] with a label for a single file (a folder refuses one). A
    /// file's label is otherwise its path under the folder added, or its file name.
    pub fn add_path_labeled(
        &self,
        path: &Path,
        label: Option<&str>,
        on_progress: &mut dyn FnMut(&AddEvent),
    ) -> Result<AddReport> {
        let path_err = |e: std::io::Error| KnowledgeError::Path {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let root = std::path::absolute(path).map_err(path_err)?;
        let is_dir = std::fs::metadata(&root).map_err(path_err)?.is_dir();
        if is_dir && label.is_some() {
            return Err(KnowledgeError::LabelOnFolder(path.to_path_buf()));
        }
        let files = extract::walk(&root).map_err(path_err)?;
        on_progress(&AddEvent::Found { files: files.len() });
        let mut report = AddReport::default();
        for file in files {
            on_progress(&AddEvent::Reading { path: file.clone() });
            let text = match extract::extract(&file, self.params.max_file_bytes) {
                Ok(t) => t,
                Err(reason) => {
                    report.skipped.push(format!("{}: {reason}", file.display()));
                    on_progress(&AddEvent::Skipped { path: file, reason });
                    continue;
                }
            };
            let name = if is_dir {
                file.strip_prefix(&root).unwrap_or(&file)
            } else {
                Path::new(file.file_name().unwrap_or(file.as_os_str()))
            };
            let explicit = label.is_some();
            let label = label.map_or_else(|| name.display().to_string(), str::to_string);
            let source = file.display().to_string();
            let one = self.add_text(DocKind::File, &source, &label, explicit, &text)?;
            match (one.added.first(), one.unchanged.is_empty()) {
                (Some(d), _) => on_progress(&AddEvent::Added {
                    path: file.clone(),
                    chunks: d.chunks,
                    embedded: d.embedder.is_some(),
                    replaced: one.replaced > 0,
                }),
                (None, false) => on_progress(&AddEvent::Unchanged { path: file.clone() }),
                (None, true) => {}
            }
            report.merge(one);
        }
        Ok(report)
    }

    /// Adds a note. The same note twice is one document: the second add reports it
    /// unchanged.
    pub fn add_note(&self, text: &str, label: Option<&str>) -> Result<AddReport> {
        let text = text.trim();
        if text.is_empty() {
            return Err(KnowledgeError::EmptyNote);
        }
        let label = label.map_or_else(|| first_words(text, 60), str::to_string);
        self.add_text(DocKind::Note, "note", &label, true, text)
    }

    /// Adds a URL as a reference, without fetching it (seed 001): one chunk, `URL: <url>`
    /// and the label. Adding it again with another label replaces it.
    pub fn add_url(&self, url: &str, label: Option<&str>) -> Result<AddReport> {
        let parsed =
            reqwest::Url::parse(url.trim()).map_err(|_| KnowledgeError::BadUrl(url.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(KnowledgeError::BadUrl(url.to_string()));
        }
        let url = parsed.as_str();
        let mut text = format!("URL: {url}");
        if let Some(l) = label.filter(|l| !l.trim().is_empty()) {
            text.push_str(&format!("\nLabel: {}", l.trim()));
        }
        let label = label.map_or_else(|| url.to_string(), |l| l.trim().to_string());
        self.add_text(DocKind::Url, url, &label, true, &text)
    }

    /// Adds one text as a document of `source`: unchanged when a document of the same kind
    /// and source has the same hash; otherwise chunked, embedded and written, replacing the
    /// older documents of that source (a file's or URL's; notes are never replaced).
    fn add_text(
        &self,
        kind: DocKind,
        source: &str,
        label: &str,
        label_is_explicit: bool,
        text: &str,
    ) -> Result<AddReport> {
        let hash = hex::encode(Sha256::digest(text.as_bytes()));
        let same_source: Vec<KnowledgeDoc> = self
            .list()?
            .into_iter()
            .filter(|d| d.kind == kind && d.source == source)
            .collect();
        let mut report = AddReport::default();
        if let Some(d) = same_source.iter().find(|d| d.hash == hash) {
            report.unchanged.push(d.clone());
            return Ok(report);
        }
        let replaces: Vec<DocId> = if kind == DocKind::Note {
            Vec::new()
        } else {
            same_source.iter().map(|d| d.id).collect()
        };
        // A changed file keeps the label it was given unless a new one is.
        let label = match same_source.last() {
            Some(old) if !label_is_explicit => old.label.clone(),
            _ => label.to_string(),
        };
        let pieces = chunk::chunk(text, self.params.chunk_chars, self.params.overlap_chars);
        let id = DocId::new();
        let (vectors, embedder) = self.embed_all(&pieces, source, &mut report.warnings);
        let mut vectors = vectors.unwrap_or_default().into_iter();
        let chunks: Vec<KnowledgeChunk> = pieces
            .into_iter()
            .enumerate()
            .map(|(i, (start, end, text))| KnowledgeChunk {
                doc: id,
                index: i as u32,
                text,
                start,
                end,
                vector: vectors.next(),
            })
            .collect();
        let doc = KnowledgeDoc {
            id,
            kind,
            label,
            source: source.to_string(),
            hash,
            added_at: Utc::now(),
            chars: text.chars().count(),
            chunks: chunks.len() as u32,
            embedder,
        };
        // The old versions go in the transaction that writes the new one.
        self.store.write(|w| {
            for old in &replaces {
                w.delete_knowledge_doc(*old)?;
            }
            w.put_knowledge_doc(&doc, &chunks)
        })?;
        report.replaced = usize::from(!replaces.is_empty());
        report.added.push(doc);
        Ok(report)
    }

    /// Embeds the chunks in batches: their vectors and the embedder's id, or `None` (and a
    /// warning) when there is no embedder or it fails.
    fn embed_all(
        &self,
        pieces: &[(usize, usize, String)],
        source: &str,
        warnings: &mut Vec<String>,
    ) -> (Option<Vec<Vec<f32>>>, Option<String>) {
        let Some(e) = &self.embedder else {
            return (None, None);
        };
        let mut out = Vec::with_capacity(pieces.len());
        for batch in pieces.chunks(self.batch_size) {
            let texts: Vec<&str> = batch.iter().map(|(_, _, t)| t.as_str()).collect();
            match e.embed(&texts) {
                Ok(v) if v.len() == texts.len() => out.extend(v),
                Ok(v) => {
                    warnings.push(format!(
                        "{source}: the embedder returned {} vectors for {} chunks; stored without vectors",
                        v.len(),
                        texts.len()
                    ));
                    return (None, None);
                }
                Err(err) => {
                    warnings.push(format!("{source}: {err}; stored without vectors"));
                    return (None, None);
                }
            }
        }
        (Some(out), Some(e.id().to_string()))
    }
}

/// The first words of `text` on one line, cut at about `max` characters.
fn first_words(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max).collect();
    let cut = cut
        .rsplit_once(' ')
        .map_or(cut.as_str(), |(a, _)| a)
        .to_string();
    format!("{cut}…")
}
