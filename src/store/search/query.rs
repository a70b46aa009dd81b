//! Answering a query: BM25 over the postings of the query's words, and a snippet around
//! the first hit of each result.

use std::collections::{HashMap, HashSet};

use super::super::tables::{META, NODES, SEARCH_PENDING};
use super::postings::RunReader;
use super::{
    SEARCH_DOC_NODES, SearchHit, TOTALS_KEY, decode_doc_node, decode_totals, indexed_text,
    tokenize, tokens_with_spans,
};
use crate::store::kv::ReadableTable;
use crate::store::{Node, Result, SessionId, Store, codec};

/// BM25 parameters.
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// What [`bm25_tf`] tends to as the count grows: a document can score at most this times a
/// term's idf for it.
pub const BM25_TF_MAX: f64 = K1 + 1.0;
/// BM25's inverse document frequency of a term found in `df` of `n_docs` documents.
pub fn bm25_idf(n_docs: f64, df: f64) -> f64 {
    (1.0 + (n_docs - df + 0.5) / (df + 0.5)).ln().max(0.01)
}

/// BM25's saturated term frequency of a term found `tf` times in a document of `len` tokens,
/// where documents average `avg_len`.
pub fn bm25_tf(tf: f64, len: f64, avg_len: f64) -> f64 {
    let norm = K1 * (1.0 - B + B * len / avg_len);
    tf * (K1 + 1.0) / (tf + norm)
}

/// Snippet window: characters kept before and after the first hit.
const SNIPPET_BEFORE: usize = 60;
const SNIPPET_AFTER: usize = 120;

/// The text around the first hit of any of `terms` in `text`, and where the hits are in it.
pub fn snippet(text: &str, terms: &HashSet<String>) -> (String, Vec<(usize, usize)>) {
    let spans: Vec<(usize, usize)> = tokens_with_spans(text)
        .filter(|(t, _, _)| terms.contains(t))
        .map(|(_, s, e)| (s, e))
        .collect();
    let first = spans.first().map(|s| s.0).unwrap_or(0);
    let start = text[..first]
        .char_indices()
        .rev()
        .nth(SNIPPET_BEFORE.saturating_sub(1))
        .map(|(i, _)| i)
        .filter(|_| first > 0)
        .unwrap_or(0);
    // Start at a word boundary rather than inside a word.
    let start = if start > 0 {
        text[start..first]
            .find(char::is_whitespace)
            .map(|i| start + i + 1)
            .unwrap_or(start)
    } else {
        start
    };
    let end = text[first..]
        .char_indices()
        .nth(SNIPPET_AFTER)
        .map(|(i, _)| first + i)
        .unwrap_or(text.len());
    let prefix = if start > 0 { "…" } else { "" };
    let mut out = String::with_capacity(end - start + 8);
    out.push_str(prefix);
    for c in text[start..end].chars() {
        // Single-byte whitespace keeps its width, so hit offsets stay valid.
        out.push(if matches!(c, '\n' | '\r' | '\t') {
            ' '
        } else {
            c
        });
    }
    if end < text.len() {
        out.push('…');
    }
    let highlights = spans
        .into_iter()
        .filter(|&(s, e)| s >= start && e <= end)
        .map(|(s, e)| (s - start + prefix.len(), e - start + prefix.len()))
        .collect();
    (out, highlights)
}

impl Store {
    /// Full-text search over every node's text (thinking, answers, tool calls and results,
    /// imported transcripts), ranked by BM25, optionally within one session. A node matches
    /// if it holds any of the query's words; nodes holding more of them, more often, rank
    /// higher. A query without a searchable word returns nothing.
    pub fn search(
        &self,
        query: &str,
        session: Option<SessionId>,
        limit: usize,
    ) -> Result<Vec<SearchHit>> {
        let terms: HashSet<String> = tokenize(query).collect();
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        if let Err(e) = self.index_pending() {
            // What is indexed is still found.
            tracing::warn!("the nodes waiting for the index were not indexed: {e}");
        }
        let r = self.read()?;
        let meta = r.open_table(META)?;
        let (docs_total, tokens_total) =
            decode_totals(meta.get(TOTALS_KEY)?.as_ref().map(|v| v.value()));
        let n_docs = docs_total.max(1) as f64;
        let avg_len = (tokens_total as f64 / n_docs).max(1.0);
        let postings = RunReader::open(&r)?;
        let docs = r.open_table(SEARCH_DOC_NODES)?;
        let want = session.map(SessionId::to_bytes);
        // In term order, so that each score is summed in the same order in every run (a
        // set's order changes from one process to the next, and with it the last bits).
        let mut ordered: Vec<&String> = terms.iter().collect();
        ordered.sort_unstable();
        let lists = ordered
            .iter()
            .map(|term| postings.postings(term.as_bytes()))
            .collect::<Result<Vec<_>>>()?;
        // Per doc number: its node and token count, or `None` when it is left out (another
        // session's). Read in one batch: a byte backend answers it in one round trip.
        let mut wanted: Vec<u32> = lists.iter().flatten().map(|&(doc, _)| doc).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut info: HashMap<u32, Option<([u8; 16], f64)>> = HashMap::with_capacity(wanted.len());
        for (doc, v) in wanted.iter().zip(docs.get_many(&wanted)?) {
            let i = v.and_then(|v| {
                let (node, sess, len) = decode_doc_node(&v.value());
                want.is_none_or(|w| w == sess)
                    .then_some((node, f64::from(len)))
            });
            info.insert(*doc, i);
        }
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for list in &lists {
            let idf = bm25_idf(n_docs, list.len() as f64);
            for &(doc, tf) in list {
                let Some(Some((_, len))) = info.get(&doc).copied() else {
                    continue;
                };
                *scores.entry(doc).or_insert(0.0) += idf * bm25_tf(f64::from(tf), len, avg_len);
            }
        }
        let mut ranked: Vec<([u8; 16], f64)> = scores
            .into_iter()
            .filter_map(|(doc, score)| Some((info.get(&doc).copied().flatten()?.0, score)))
            .collect();
        // Best first; ties go to the newer node (ids are time-ordered).
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
        ranked.truncate(limit);
        let nodes = r.open_table(NODES)?;
        let ids: Vec<[u8; 16]> = ranked.iter().map(|(id, _)| *id).collect();
        let mut out = Vec::with_capacity(ranked.len());
        for ((_, score), v) in ranked.into_iter().zip(nodes.get_many(&ids)?) {
            let Some(v) = v else { continue };
            let node: Node = codec::decode("nodes", v.value())?;
            let (snippet, highlights) = snippet(&indexed_text(&node), &terms);
            out.push(SearchHit {
                node: node.id,
                session: node.session,
                kind: node.kind,
                score,
                snippet,
                highlights,
            });
        }
        Ok(out)
    }

    /// Adds to the full-text index the nodes whose words were left for later (a streamed
    /// trace past the turn's limit, after its turn); every search does this first. Returns
    /// how many were waiting.
    pub fn index_pending(&self) -> Result<usize> {
        if self.pending_index_count()? == 0 {
            return Ok(0);
        }
        let t0 = std::time::Instant::now();
        let n = self.write(|w| w.index_pending())?;
        tracing::debug!(
            nodes = n,
            ms = t0.elapsed().as_millis() as u64,
            "pending nodes indexed"
        );
        Ok(n)
    }

    /// How many nodes wait for their words to go into the index.
    pub fn pending_index_count(&self) -> Result<u64> {
        let r = self.read()?;
        match r.open_table_if_exists(SEARCH_PENDING)? {
            Some(t) => t.len(),
            None => Ok(0),
        }
    }

    /// The full-text index's runs, oldest first: (postings, tombstones included) of each.
    pub fn search_runs(&self) -> Result<Vec<u64>> {
        let r = self.read()?;
        let meta = r.open_table(META)?;
        let v = meta.get(super::postings::RUNS_KEY)?;
        let runs = super::postings::decode_runs(v.as_ref().map(|v| v.value()))?;
        Ok(runs.into_iter().map(|r| r.postings).collect())
    }

    /// How many nodes the full-text index holds.
    pub fn search_doc_count(&self) -> Result<u64> {
        let r = self.read()?;
        let meta = r.open_table(META)?;
        Ok(decode_totals(meta.get(TOTALS_KEY)?.as_ref().map(|v| v.value())).0)
    }
}
