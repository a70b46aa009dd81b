//! Full-text search over every node's text: an inverted index in two redb tables, kept up to
//! date by `Writer::put_node`, and BM25 ranking with snippets around the hits.
//!
//! Why an inverted index in redb rather than tantivy: tantivy would add a large dependency
//! tree to a crate that already builds llama.cpp on two cores, and it keeps its own
//! directory of segment files with a single-writer lock, while glassbox has one store file
//! written by several processes at once (TUI, `mcp`, `import --watch`). Postings in redb tables
//! are committed in the same transaction as the node they index, so the index can never
//! disagree with the nodes, needs no second lock, and every process's writes are searchable
//! the moment they commit. The cost — no stemming, no phrase queries — is acceptable for
//! finding a thought again.

use std::collections::{HashMap, HashSet};

use redb::{ReadableTable, WriteTransaction};
use sha2::{Digest, Sha256};

use super::tables::{META, NODES, SEARCH_DOCS, SEARCH_TERMS};
use super::{Node, NodeId, NodeStatus, NodeType, Result, SessionId, Store, StoreError, codec};

/// Tokens shorter than this many characters are not indexed.
pub const MIN_TOKEN_CHARS: usize = 2;
/// Tokens longer than this many bytes (hashes, base64 blobs) are not indexed.
pub const MAX_TOKEN_BYTES: usize = 64;
/// BM25 parameters.
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Snippet window: characters kept before and after the first hit.
const SNIPPET_BEFORE: usize = 60;
const SNIPPET_AFTER: usize = 120;

/// `meta` key of the index totals: doc count ‖ token count (u64 LE each).
const TOTALS_KEY: &str = "search_totals";
/// Bytes of a `search_docs` value before the term list: session, token count, text hash.
const DOC_HEADER: usize = 16 + 4 + 8;

/// One search result.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SearchHit {
    pub node: NodeId,
    pub session: SessionId,
    pub kind: NodeType,
    /// BM25 score; higher is better.
    pub score: f64,
    /// The text around the first hit, on one line, with `…` where it was cut.
    pub snippet: String,
    /// Byte ranges of the query's words inside `snippet`.
    pub highlights: Vec<(usize, usize)>,
}

/// The searchable words of `text` with their byte ranges: runs of Unicode letters and digits,
/// lowercased, at least [`MIN_TOKEN_CHARS`] characters and at most [`MAX_TOKEN_BYTES`] bytes.
pub fn tokens_with_spans(text: &str) -> impl Iterator<Item = (String, usize, usize)> + '_ {
    let mut iter = text.char_indices().peekable();
    std::iter::from_fn(move || {
        loop {
            // Skip separators.
            let (start, _) = loop {
                let (i, c) = iter.next()?;
                if c.is_alphanumeric() {
                    break (i, c);
                }
            };
            let mut end = text.len();
            let mut chars = 1;
            while let Some(&(i, c)) = iter.peek() {
                if !c.is_alphanumeric() {
                    end = i;
                    break;
                }
                chars += 1;
                iter.next();
            }
            let word = &text[start..end];
            if chars < MIN_TOKEN_CHARS || word.len() > MAX_TOKEN_BYTES {
                continue;
            }
            let lower = if word.is_ascii() {
                word.to_ascii_lowercase()
            } else {
                word.to_lowercase()
            };
            return Some((lower, start, end));
        }
    })
}

/// The searchable words of `text` (see [`tokens_with_spans`]).
pub fn tokenize(text: &str) -> impl Iterator<Item = String> + '_ {
    tokens_with_spans(text).map(|(t, _, _)| t)
}

/// The text a node is found by: its text, plus a tool call's name and result.
pub fn indexed_text(n: &Node) -> std::borrow::Cow<'_, str> {
    if n.kind != NodeType::ToolCall {
        return std::borrow::Cow::Borrowed(&n.text);
    }
    let mut s = String::with_capacity(n.text.len() + 64);
    if let Some(tool) = n.meta.get("tool").and_then(|v| v.as_str()) {
        s.push_str(tool);
        s.push('\n');
    }
    s.push_str(&n.text);
    if let Some(result) = n.meta.get("result").and_then(|v| v.as_str()) {
        s.push('\n');
        s.push_str(result);
    }
    std::borrow::Cow::Owned(s)
}

fn posting_key(term: &[u8], node: [u8; 16]) -> Vec<u8> {
    let mut k = Vec::with_capacity(term.len() + 17);
    k.extend_from_slice(term);
    k.push(0);
    k.extend_from_slice(&node);
    k
}

fn text_hash(text: &str) -> [u8; 8] {
    let digest = Sha256::digest(text.as_bytes());
    let mut h = [0u8; 8];
    h.copy_from_slice(&digest[..8]);
    h
}

/// What `search_docs` holds for one node.
struct DocRecord {
    session: [u8; 16],
    tokens: u32,
    hash: [u8; 8],
    terms: Vec<Vec<u8>>,
}

impl DocRecord {
    fn decode(v: &[u8]) -> Result<Self> {
        if v.len() < DOC_HEADER {
            return Err(StoreError::Corrupt(
                "search_docs: value shorter than its header".into(),
            ));
        }
        let mut session = [0u8; 16];
        session.copy_from_slice(&v[..16]);
        let mut tokens = [0u8; 4];
        tokens.copy_from_slice(&v[16..20]);
        let mut hash = [0u8; 8];
        hash.copy_from_slice(&v[20..28]);
        let rest = &v[DOC_HEADER..];
        let terms = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split(|b| *b == 0).map(<[u8]>::to_vec).collect()
        };
        Ok(Self {
            session,
            tokens: u32::from_le_bytes(tokens),
            hash,
            terms,
        })
    }

    fn encode(&self) -> Vec<u8> {
        let mut v =
            Vec::with_capacity(DOC_HEADER + self.terms.iter().map(|t| t.len() + 1).sum::<usize>());
        v.extend_from_slice(&self.session);
        v.extend_from_slice(&self.tokens.to_le_bytes());
        v.extend_from_slice(&self.hash);
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                v.push(0);
            }
            v.extend_from_slice(t);
        }
        v
    }
}

/// (doc count, token count) from the `meta` value.
fn decode_totals(v: Option<&[u8]>) -> (u64, u64) {
    let Some(v) = v.filter(|v| v.len() == 16) else {
        return (0, 0);
    };
    let mut d = [0u8; 8];
    let mut t = [0u8; 8];
    d.copy_from_slice(&v[..8]);
    t.copy_from_slice(&v[8..]);
    (u64::from_le_bytes(d), u64::from_le_bytes(t))
}

fn add_to_totals(txn: &WriteTransaction, docs: i64, tokens: i64) -> Result<()> {
    if docs == 0 && tokens == 0 {
        return Ok(());
    }
    let mut meta = txn.open_table(META)?;
    let (d, t) = decode_totals(meta.get(TOTALS_KEY)?.as_ref().map(|v| v.value()));
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&d.saturating_add_signed(docs).to_le_bytes());
    v[8..].copy_from_slice(&t.saturating_add_signed(tokens).to_le_bytes());
    meta.insert(TOTALS_KEY, v.as_slice())?;
    Ok(())
}

/// Brings the index entries of `n` up to date with its text. Streaming nodes are left as they
/// are (they are indexed by their final put); unchanged text costs one lookup.
pub(super) fn index_node(txn: &WriteTransaction, n: &Node) -> Result<()> {
    if n.status == NodeStatus::Streaming {
        return Ok(());
    }
    let id = n.id.to_bytes();
    let text = indexed_text(n);
    let hash = text_hash(&text);
    let mut docs = txn.open_table(SEARCH_DOCS)?;
    let old = match docs.get(id)? {
        Some(v) => Some(DocRecord::decode(v.value())?),
        None => None,
    };
    if old.as_ref().is_some_and(|o| o.hash == hash) {
        return Ok(());
    }
    let mut postings = txn.open_table(SEARCH_TERMS)?;
    let (mut doc_delta, mut token_delta) = (0i64, 0i64);
    if let Some(old) = &old {
        for term in &old.terms {
            postings.remove(posting_key(term, id).as_slice())?;
        }
        doc_delta -= 1;
        token_delta -= i64::from(old.tokens);
    }
    let mut counts: HashMap<String, u32> = HashMap::new();
    let mut total = 0u32;
    for t in tokenize(&text) {
        *counts.entry(t).or_insert(0) += 1;
        total = total.saturating_add(1);
    }
    if counts.is_empty() {
        docs.remove(id)?;
    } else {
        let mut key = Vec::with_capacity(MAX_TOKEN_BYTES + 17);
        let mut terms: Vec<Vec<u8>> = Vec::with_capacity(counts.len());
        for (term, tf) in counts {
            key.clear();
            key.extend_from_slice(term.as_bytes());
            key.push(0);
            key.extend_from_slice(&id);
            postings.insert(key.as_slice(), tf)?;
            terms.push(term.into_bytes());
        }
        terms.sort_unstable();
        let rec = DocRecord {
            session: n.session.to_bytes(),
            tokens: total,
            hash,
            terms,
        };
        docs.insert(id, rec.encode().as_slice())?;
        doc_delta += 1;
        token_delta += i64::from(total);
    }
    drop((docs, postings));
    add_to_totals(txn, doc_delta, token_delta)
}

/// Removes every index entry of `node`.
pub(super) fn unindex_node(txn: &WriteTransaction, node: [u8; 16]) -> Result<()> {
    let old = {
        let mut docs = txn.open_table(SEARCH_DOCS)?;
        let v = docs.remove(node)?;
        match v {
            Some(v) => DocRecord::decode(v.value())?,
            None => return Ok(()),
        }
    };
    {
        let mut postings = txn.open_table(SEARCH_TERMS)?;
        for term in &old.terms {
            postings.remove(posting_key(term, node).as_slice())?;
        }
    }
    add_to_totals(txn, -1, -i64::from(old.tokens))
}

/// Indexes every node in the file (used by the v2 → v3 migration). Returns how many were read.
pub(super) fn index_all_nodes(txn: &WriteTransaction) -> Result<u64> {
    let mut nodes = Vec::new();
    {
        let t = txn.open_table(NODES)?;
        for row in t.iter()? {
            let (_, v) = row?;
            nodes.push(codec::decode::<Node>("nodes", v.value())?);
        }
    }
    for n in &nodes {
        index_node(txn, n)?;
    }
    Ok(nodes.len() as u64)
}

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
        let r = self.read()?;
        let meta = r.open_table(META)?;
        let (docs_total, tokens_total) =
            decode_totals(meta.get(TOTALS_KEY)?.as_ref().map(|v| v.value()));
        let n_docs = docs_total.max(1) as f64;
        let avg_len = (tokens_total as f64 / n_docs).max(1.0);
        let postings = r.open_table(SEARCH_TERMS)?;
        let docs = r.open_table(SEARCH_DOCS)?;
        let want = session.map(SessionId::to_bytes);
        let mut scores: HashMap<[u8; 16], f64> = HashMap::new();
        let mut doc_cache: HashMap<[u8; 16], Option<(u32, [u8; 16])>> = HashMap::new();
        for term in &terms {
            let lo = posting_key(term.as_bytes(), [0; 16]);
            let hi = posting_key(term.as_bytes(), [0xff; 16]);
            let mut list = Vec::new();
            for row in postings.range(lo.as_slice()..=hi.as_slice())? {
                let (k, v) = row?;
                let k = k.value();
                let mut node = [0u8; 16];
                node.copy_from_slice(&k[k.len() - 16..]);
                list.push((node, v.value()));
            }
            let df = list.len() as f64;
            let idf = (1.0 + (n_docs - df + 0.5) / (df + 0.5)).ln().max(0.01);
            for (node, tf) in list {
                let info = match doc_cache.get(&node) {
                    Some(i) => *i,
                    None => {
                        let i = match docs.get(node)? {
                            Some(v) => {
                                let rec = DocRecord::decode(v.value())?;
                                Some((rec.tokens, rec.session))
                            }
                            None => None,
                        };
                        doc_cache.insert(node, i);
                        i
                    }
                };
                let Some((len, sess)) = info else { continue };
                if want.is_some_and(|w| w != sess) {
                    continue;
                }
                let tf = f64::from(tf);
                let norm = K1 * (1.0 - B + B * f64::from(len) / avg_len);
                *scores.entry(node).or_insert(0.0) += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut ranked: Vec<([u8; 16], f64)> = scores.into_iter().collect();
        // Best first; ties go to the newer node (ids are time-ordered).
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
        ranked.truncate(limit);
        let nodes = r.open_table(NODES)?;
        let mut out = Vec::with_capacity(ranked.len());
        for (id, score) in ranked {
            let Some(v) = nodes.get(id)? else { continue };
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

    /// How many nodes the full-text index holds.
    pub fn search_doc_count(&self) -> Result<u64> {
        let r = self.read()?;
        let meta = r.open_table(META)?;
        Ok(decode_totals(meta.get(TOTALS_KEY)?.as_ref().map(|v| v.value())).0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::store::{Session, SessionSource};

    #[test]
    fn tokenizer_lowercases_splits_on_unicode_and_drops_short_words() {
        let t: Vec<String> =
            tokenize("Größe: a ÉTÉ x2 über_alles — 東京 ok? \u{1b}[31mred").collect();
        assert_eq!(
            t,
            [
                "größe", "été", "x2", "über", "alles", "東京", "ok", "31mred"
            ]
        );
    }

    #[test]
    fn snippet_marks_the_hits() {
        let terms: HashSet<String> = ["needle".to_string()].into();
        let text = format!(
            "{}\nthe Needle is here\n{}",
            "hay ".repeat(40),
            "more ".repeat(40)
        );
        let (s, h) = snippet(&text, &terms);
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        assert!(!s.contains('\n'));
        assert_eq!(h.len(), 1);
        assert_eq!(&s[h[0].0..h[0].1], "Needle");
    }

    #[test]
    fn index_follows_text_changes_streaming_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        let s = Session::new("t", SessionSource::Glassbox);
        let mut n = Node::new(s.id, NodeType::Thinking, "alpha beta");
        n.status = NodeStatus::Streaming;
        store
            .write(|w| {
                w.put_session(&s)?;
                w.put_node(&n)
            })
            .unwrap();
        assert!(
            store.search("alpha", None, 10).unwrap().is_empty(),
            "streaming nodes wait"
        );
        n.status = NodeStatus::Complete;
        store.write(|w| w.put_node(&n)).unwrap();
        assert_eq!(store.search("alpha", None, 10).unwrap()[0].node, n.id);
        n.text = "gamma".into();
        store.write(|w| w.put_node(&n)).unwrap();
        assert!(store.search("alpha", None, 10).unwrap().is_empty());
        assert_eq!(store.search("GAMMA", Some(s.id), 10).unwrap().len(), 1);
        assert!(
            store
                .search("gamma", Some(crate::store::SessionId::new()), 10)
                .unwrap()
                .is_empty()
        );
        assert_eq!(store.search_doc_count().unwrap(), 1);
        store.write(|w| w.delete_session(s.id)).unwrap();
        assert!(store.search("gamma", None, 10).unwrap().is_empty());
        assert_eq!(store.search_doc_count().unwrap(), 0);
    }

    #[test]
    fn ranking_prefers_more_and_rarer_hits() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        let s = Session::new("t", SessionSource::Glassbox);
        let a = Node::new(
            s.id,
            NodeType::Response,
            "common words and the rare zebra zebra",
        );
        let b = Node::new(s.id, NodeType::Response, "common words only here");
        let c = Node::new(
            s.id,
            NodeType::Response,
            "common words and one zebra among many other words here",
        );
        store
            .write(|w| {
                w.put_session(&s)?;
                for n in [&a, &b, &c] {
                    w.put_node(n)?;
                }
                Ok(())
            })
            .unwrap();
        let hits = store.search("zebra common", None, 10).unwrap();
        assert_eq!(hits.len(), 3);
        assert_eq!(hits[0].node, a.id);
        assert_eq!(hits[1].node, c.id);
        assert_eq!(store.search("zebra", None, 1).unwrap().len(), 1);
        assert!(store.search("a", None, 10).unwrap().is_empty());
    }
}
