//! Ranking chunks for a query: cosine similarity against the chunks' vectors (they are
//! L2-normalised, so a dot product) where the chunk was embedded by the same embedder as the
//! query, and BM25 over lowercased words elsewhere, scaled to 0–1 by the best such chunk.

use std::collections::{HashMap, HashSet};

use crate::store::{DocId, KnowledgeChunk, search::tokenize};

/// BM25's term-frequency saturation and length normalisation.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// A chunk to rank, with what the query is compared against.
pub(super) struct Candidate {
    pub chunk: KnowledgeChunk,
    /// Whether its vector comes from the embedder that embedded the query.
    pub comparable: bool,
}

/// (doc, index, score) of every candidate worth returning, best first: every vector-scored
/// chunk, and the lexical ones that share at least one word with the query. Ties go to the
/// older document, then the earlier chunk.
pub(super) fn rank(
    query: &str,
    query_vector: Option<&[f32]>,
    candidates: &[Candidate],
) -> Vec<(DocId, u32, f32)> {
    let mut scored = Vec::with_capacity(candidates.len());
    let lexical: Vec<&Candidate> = match query_vector {
        Some(q) => {
            let mut rest = Vec::new();
            for c in candidates {
                match (&c.chunk.vector, c.comparable) {
                    (Some(v), true) if v.len() == q.len() => {
                        let dot: f32 = v.iter().zip(q).map(|(a, b)| a * b).sum();
                        scored.push((c.chunk.doc, c.chunk.index, dot));
                    }
                    _ => rest.push(c),
                }
            }
            rest
        }
        None => candidates.iter().collect(),
    };
    scored.extend(bm25(query, &lexical));
    scored.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
    scored
}

/// BM25 of `query` over `docs` (the chunks as the collection), divided by the best score so
/// it lies in 0–1 like a cosine; chunks with no query word are left out.
fn bm25(query: &str, docs: &[&Candidate]) -> Vec<(DocId, u32, f32)> {
    let terms: HashSet<String> = tokenize(query).collect();
    if terms.is_empty() || docs.is_empty() {
        return Vec::new();
    }
    let tfs: Vec<(HashMap<&str, u32>, usize)> = docs
        .iter()
        .map(|c| {
            let mut tf: HashMap<&str, u32> = HashMap::new();
            let mut len = 0;
            for t in tokenize(&c.chunk.text) {
                len += 1;
                if let Some(q) = terms.get(&t) {
                    *tf.entry(q.as_str()).or_default() += 1;
                }
            }
            (tf, len)
        })
        .collect();
    let n = docs.len() as f32;
    let avg_len = (tfs.iter().map(|(_, l)| *l).sum::<usize>() as f32 / n).max(1.0);
    let idf: HashMap<&str, f32> = terms
        .iter()
        .map(|t| {
            let df = tfs
                .iter()
                .filter(|(tf, _)| tf.contains_key(t.as_str()))
                .count() as f32;
            (t.as_str(), ((n - df + 0.5) / (df + 0.5) + 1.0).ln())
        })
        .collect();
    let raw: Vec<(DocId, u32, f32)> = docs
        .iter()
        .zip(&tfs)
        .filter(|(_, (tf, _))| !tf.is_empty())
        .map(|(c, (tf, len))| {
            let norm = K1 * (1.0 - B + B * *len as f32 / avg_len);
            let score = tf
                .iter()
                .map(|(t, &f)| {
                    let f = f as f32;
                    idf[t] * f * (K1 + 1.0) / (f + norm)
                })
                .sum::<f32>();
            (c.chunk.doc, c.chunk.index, score)
        })
        .collect();
    let best = raw.iter().map(|r| r.2).fold(0.0f32, f32::max);
    if best <= 0.0 {
        return raw;
    }
    raw.into_iter().map(|(d, i, s)| (d, i, s / best)).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn cand(doc: DocId, index: u32, text: &str, vector: Option<Vec<f32>>) -> Candidate {
        Candidate {
            chunk: KnowledgeChunk {
                doc,
                index,
                text: text.into(),
                start: 0,
                end: text.chars().count(),
                vector: vector.clone(),
            },
            comparable: vector.is_some(),
        }
    }

    #[test]
    fn lexical_ranks_rarer_and_more_matches_first_and_drops_non_matches() {
        let (a, b) = (DocId::new(), DocId::new());
        let cs = vec![
            cand(a, 0, "the cat sat on the mat", None),
            cand(a, 1, "volcanoes erupt lava and ash", None),
            cand(b, 0, "the cat and the volcano", None),
            cand(b, 1, "nothing relevant here", None),
        ];
        let r = rank("Volcanoes erupt?", None, &cs);
        assert_eq!((r[0].0, r[0].1), (a, 1));
        assert!((r[0].2 - 1.0).abs() < 1e-6);
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(rank("", None, &cs).is_empty());
    }

    #[test]
    fn vectors_by_dot_product_and_ties_by_doc_then_index() {
        let (a, b) = (DocId::new(), DocId::new());
        let cs = vec![
            cand(b, 0, "x", Some(vec![1.0, 0.0])),
            cand(a, 1, "y", Some(vec![0.0, 1.0])),
            cand(a, 0, "z", Some(vec![0.0, 1.0])),
            // Another embedder's vector: scored by words instead.
            Candidate {
                comparable: false,
                ..cand(b, 1, "query words", Some(vec![1.0, 0.0]))
            },
        ];
        let r = rank("query words", Some(&[0.0, 1.0]), &cs);
        let order: Vec<(DocId, u32)> = r.iter().map(|h| (h.0, h.1)).collect();
        assert_eq!(order, vec![(a, 0), (a, 1), (b, 1), (b, 0)]);
        assert!((r[2].2 - 1.0).abs() < 1e-6, "lexical best scales to 1");
    }
}
