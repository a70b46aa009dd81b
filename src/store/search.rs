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

use super::tables::{META, NODES, SEARCH_DOCS, SEARCH_POSTINGS};
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
pub(super) const TOTALS_KEY: &str = "search_totals";
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

// --- Postings segments ------------------------------------------------------------------------
//
// A term's postings are stored as a few segments rather than one row per (term, node): an
// import adds tens of postings per node, and one B-tree insert each was half of the import
// time. Segments are sorted runs of `node id ‖ tf` keyed by `term ‖ 0x00 ‖ first node id`;
// they never overlap, so the segment holding a node is the last one starting at or before it.
// Changes made in a write transaction are gathered in memory ([`PendingIndex`]) and merged
// into the stored segments once, term by term, just before the transaction commits: a term
// that a batch of a thousand nodes uses is read and written once instead of a thousand times,
// and since the merge happens inside the same transaction as the node writes, the index still
// never disagrees with the nodes (a crash loses both or neither).

/// Bytes of one posting inside a segment: node id, then term frequency (u32 LE).
const POSTING_BYTES: usize = 16 + 4;
/// Most postings a segment holds. Small enough that rewriting the last segment of a common
/// term on every batch stays cheap, large enough that a term has few rows.
const SEGMENT_POSTINGS: usize = 256;

type Posting = ([u8; 16], u32);

fn decode_segment(v: &[u8], out: &mut Vec<Posting>) -> Result<()> {
    if !v.len().is_multiple_of(POSTING_BYTES) {
        return Err(StoreError::Corrupt(
            "search_postings: segment length is not a whole number of postings".into(),
        ));
    }
    out.reserve(v.len() / POSTING_BYTES);
    for p in v.chunks_exact(POSTING_BYTES) {
        let mut node = [0u8; 16];
        node.copy_from_slice(&p[..16]);
        let mut tf = [0u8; 4];
        tf.copy_from_slice(&p[16..]);
        out.push((node, u32::from_le_bytes(tf)));
    }
    Ok(())
}

fn encode_segment(postings: &[Posting], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(postings.len() * POSTING_BYTES);
    for (node, tf) in postings {
        out.extend_from_slice(node);
        out.extend_from_slice(&tf.to_le_bytes());
    }
}

/// Index changes made in one write transaction and not yet merged into the stored postings.
/// Per term, the postings set (tf > 0) or removed (tf = 0) in the order they were made, so a
/// node indexed and then re-indexed in the same transaction ends with its last state.
#[derive(Default)]
pub(super) struct PendingIndex {
    terms: HashMap<Vec<u8>, Vec<Posting>, std::hash::BuildHasherDefault<TermHasher>>,
    docs: i64,
    tokens: i64,
}

impl PendingIndex {
    fn op(&mut self, term: &[u8], node: [u8; 16], tf: u32) {
        match self.terms.get_mut(term) {
            Some(ops) => ops.push((node, tf)),
            None => {
                self.terms.insert(term.to_vec(), vec![(node, tf)]);
            }
        }
    }

    /// Merges every pending change into the stored segments and the totals.
    pub(super) fn apply(&mut self, txn: &WriteTransaction) -> Result<()> {
        let (docs, tokens) = (self.docs, self.tokens);
        self.docs = 0;
        self.tokens = 0;
        add_to_totals(txn, docs, tokens)?;
        if self.terms.is_empty() {
            return Ok(());
        }
        let mut terms: Vec<(Vec<u8>, Vec<Posting>)> = self.terms.drain().collect();
        // Key order keeps the B-tree pages a term touches next to those of the previous one.
        terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut table = txn.open_table(SEARCH_POSTINGS)?;
        let mut scratch = MergeScratch::default();
        for (term, ops) in terms {
            merge_term(&mut table, &term, ops, &mut scratch)?;
        }
        Ok(())
    }
}

#[derive(Default)]
struct MergeScratch {
    stored: Vec<Posting>,
    merged: Vec<Posting>,
    value: Vec<u8>,
}

/// The stored segment that a posting for `node` belongs in: the last one starting at or
/// before it, else the term's first one. Returns its first node id and its postings.
fn segment_for(
    table: &redb::Table<&[u8], &[u8]>,
    term: &[u8],
    node: [u8; 16],
    out: &mut Vec<Posting>,
) -> Result<Option<[u8; 16]>> {
    let lo = posting_key(term, [0; 16]);
    let at = posting_key(term, node);
    let hi = posting_key(term, [0xff; 16]);
    let row = match table.range(lo.as_slice()..=at.as_slice())?.next_back() {
        Some(row) => Some(row?),
        None => table
            .range(at.as_slice()..=hi.as_slice())?
            .next()
            .transpose()?,
    };
    let Some((k, v)) = row else { return Ok(None) };
    let k = k.value();
    let mut first = [0u8; 16];
    first.copy_from_slice(&k[k.len() - 16..]);
    out.clear();
    decode_segment(v.value(), out)?;
    Ok(Some(first))
}

/// The first node id of the segment after the one starting at `first`, if any.
fn next_segment_start(
    table: &redb::Table<&[u8], &[u8]>,
    term: &[u8],
    first: [u8; 16],
) -> Result<Option<[u8; 16]>> {
    use std::ops::Bound;
    let from = posting_key(term, first);
    let hi = posting_key(term, [0xff; 16]);
    let range = (
        Bound::Excluded(from.as_slice()),
        Bound::Included(hi.as_slice()),
    );
    let Some(row) = table.range::<&[u8]>(range)?.next() else {
        return Ok(None);
    };
    let (k, _) = row?;
    let k = k.value();
    let mut next = [0u8; 16];
    next.copy_from_slice(&k[k.len() - 16..]);
    Ok(Some(next))
}

/// Applies one term's pending changes: each stored segment they fall into is read once,
/// merged and written back (split into segments of at most [`SEGMENT_POSTINGS`]).
fn merge_term(
    table: &mut redb::Table<&[u8], &[u8]>,
    term: &[u8],
    mut ops: Vec<Posting>,
    s: &mut MergeScratch,
) -> Result<()> {
    // A stable sort keeps each node's changes in the order they were made: the last wins.
    ops.sort_by_key(|o| o.0);
    let mut dedup: Vec<Posting> = Vec::with_capacity(ops.len());
    for op in ops {
        match dedup.last_mut() {
            Some(last) if last.0 == op.0 => *last = op,
            _ => dedup.push(op),
        }
    }
    let ops = dedup;
    let mut i = 0;
    while i < ops.len() {
        let first = segment_for(table, term, ops[i].0, &mut s.stored)?;
        if first.is_none() {
            s.stored.clear();
        }
        // This segment takes every change below the start of the next one.
        let end = match first {
            Some(f) => match next_segment_start(table, term, f)? {
                Some(next) => i + ops[i..].partition_point(|o| o.0 < next),
                None => ops.len(),
            },
            None => ops.len(),
        };
        let changes = &ops[i..end];
        i = end;
        s.merged.clear();
        s.merged.reserve(s.stored.len() + changes.len());
        let (mut a, mut b) = (0, 0);
        while a < s.stored.len() || b < changes.len() {
            let take_stored =
                b == changes.len() || (a < s.stored.len() && s.stored[a].0 < changes[b].0);
            if take_stored {
                s.merged.push(s.stored[a]);
                a += 1;
                continue;
            }
            if a < s.stored.len() && s.stored[a].0 == changes[b].0 {
                a += 1;
            }
            if changes[b].1 > 0 {
                s.merged.push(changes[b]);
            }
            b += 1;
        }
        if s.merged == s.stored {
            continue;
        }
        if let Some(f) = first {
            table.remove(posting_key(term, f).as_slice())?;
        }
        for chunk in s.merged.chunks(SEGMENT_POSTINGS) {
            encode_segment(chunk, &mut s.value);
            table.insert(posting_key(term, chunk[0].0).as_slice(), s.value.as_slice())?;
        }
    }
    Ok(())
}

/// What `search_docs` holds for one node.
struct DocRecord {
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
            tokens: u32::from_le_bytes(tokens),
            hash,
            terms,
        })
    }

    /// The header fields only (search needs no term list).
    fn decode_header(v: &[u8]) -> Result<(u32, [u8; 16])> {
        if v.len() < DOC_HEADER {
            return Err(StoreError::Corrupt(
                "search_docs: value shorter than its header".into(),
            ));
        }
        let mut session = [0u8; 16];
        session.copy_from_slice(&v[..16]);
        let mut tokens = [0u8; 4];
        tokens.copy_from_slice(&v[16..20]);
        Ok((u32::from_le_bytes(tokens), session))
    }
}

/// `search_docs` value: header, then `terms` (sorted, distinct) joined by 0x00.
fn encode_doc(session: [u8; 16], tokens: u32, hash: [u8; 8], terms: &[(String, u32)]) -> Vec<u8> {
    let mut v = Vec::with_capacity(DOC_HEADER + terms.iter().map(|t| t.0.len() + 1).sum::<usize>());
    v.extend_from_slice(&session);
    v.extend_from_slice(&tokens.to_le_bytes());
    v.extend_from_slice(&hash);
    for (i, (t, _)) in terms.iter().enumerate() {
        if i > 0 {
            v.push(0);
        }
        v.extend_from_slice(t.as_bytes());
    }
    v
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

/// A small multiplicative hasher for the per-node term counts: the default SipHash showed
/// up in import profiles, and the keys are the user's own words, not attacker input.
#[derive(Default, Clone, Copy)]
struct TermHasher(u64);

impl std::hash::Hasher for TermHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type TermCounts = HashMap<String, u32, std::hash::BuildHasherDefault<TermHasher>>;

/// Term frequencies of `text` and its token count: the same words as [`tokenize`], found
/// without allocating a string per word (ASCII is classified byte by byte, a word is
/// lowercased into a reused buffer and only copied the first time it is seen).
fn count_terms(text: &str) -> (TermCounts, u32) {
    let mut counts = TermCounts::default();
    let mut total = 0u32;
    let mut lower = String::new();
    let bytes = text.as_bytes();
    // Whether the character at `i` is a word character, and its length in bytes.
    let class = |i: usize| -> (bool, usize) {
        let b = bytes[i];
        if b < 0x80 {
            return (b.is_ascii_alphanumeric(), 1);
        }
        match text[i..].chars().next() {
            Some(c) => (c.is_alphanumeric(), c.len_utf8()),
            None => (false, 1),
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let (word, len) = class(i);
        if !word {
            i += len;
            continue;
        }
        let start = i;
        let mut chars = 0usize;
        let mut ascii = true;
        while i < bytes.len() {
            let (word, len) = class(i);
            if !word {
                break;
            }
            ascii &= len == 1;
            chars += 1;
            i += len;
        }
        let w = &text[start..i];
        if chars < MIN_TOKEN_CHARS || w.len() > MAX_TOKEN_BYTES {
            continue;
        }
        lower.clear();
        if ascii {
            lower.push_str(w);
            lower.make_ascii_lowercase();
        } else {
            lower.push_str(&w.to_lowercase());
        }
        total = total.saturating_add(1);
        match counts.get_mut(lower.as_str()) {
            Some(c) => *c += 1,
            None => {
                counts.insert(lower.clone(), 1);
            }
        }
    }
    (counts, total)
}

/// What the index needs of a node's text, computed without touching the store: its hash and
/// its terms with their frequencies. Computing it is most of the cost of indexing a node, so
/// an importer can do it on its mapping thread while another thread writes ([`prepare`]).
#[derive(Clone, Debug)]
pub struct PreparedText {
    hash: [u8; 8],
    tokens: u32,
    /// Distinct terms, sorted, with their frequencies.
    terms: Vec<(String, u32)>,
}

/// The index form of `n`'s text; `None` for a streaming node (indexed by its final put).
pub fn prepare(n: &Node) -> Option<PreparedText> {
    if n.status == NodeStatus::Streaming {
        return None;
    }
    let text = indexed_text(n);
    let hash = text_hash(&text);
    let (counts, tokens) = count_terms(&text);
    let mut terms: Vec<(String, u32)> = counts.into_iter().collect();
    terms.sort_unstable();
    Some(PreparedText {
        hash,
        tokens,
        terms,
    })
}

/// Brings the index entries of `n` up to date with its text: its `search_docs` record at
/// once, its postings in `pending` (merged at commit). Streaming nodes are left as they are
/// (they are indexed by their final put); unchanged text costs one lookup.
pub(super) fn index_node(
    txn: &WriteTransaction,
    pending: &mut PendingIndex,
    n: &Node,
) -> Result<()> {
    let Some(prepared) = prepare(n) else {
        return Ok(());
    };
    let mut docs = txn.open_table(SEARCH_DOCS)?;
    index_prepared(&mut docs, pending, n.id, n.session, &prepared)
}

/// [`index_node`] with the text already prepared (by [`prepare`] on this node) and the
/// `search_docs` table already open.
pub(super) fn index_prepared(
    docs: &mut redb::Table<[u8; 16], &[u8]>,
    pending: &mut PendingIndex,
    node: NodeId,
    session: SessionId,
    p: &PreparedText,
) -> Result<()> {
    let id = node.to_bytes();
    let old = match docs.get(id)? {
        Some(v) => Some(DocRecord::decode(v.value())?),
        None => None,
    };
    if old.as_ref().is_some_and(|o| o.hash == p.hash) {
        return Ok(());
    }
    if let Some(old) = &old {
        for term in &old.terms {
            pending.op(term, id, 0);
        }
        pending.docs -= 1;
        pending.tokens -= i64::from(old.tokens);
    }
    if p.terms.is_empty() {
        docs.remove(id)?;
        return Ok(());
    }
    for (term, tf) in &p.terms {
        pending.op(term.as_bytes(), id, *tf);
    }
    docs.insert(
        id,
        encode_doc(session.to_bytes(), p.tokens, p.hash, &p.terms).as_slice(),
    )?;
    pending.docs += 1;
    pending.tokens += i64::from(p.tokens);
    Ok(())
}

/// Removes every index entry of `node` (its postings through `pending`).
pub(super) fn unindex_node(
    txn: &WriteTransaction,
    pending: &mut PendingIndex,
    node: [u8; 16],
) -> Result<()> {
    let old = {
        let mut docs = txn.open_table(SEARCH_DOCS)?;
        let v = docs.remove(node)?;
        match v {
            Some(v) => DocRecord::decode(v.value())?,
            None => return Ok(()),
        }
    };
    for term in &old.terms {
        pending.op(term, node, 0);
    }
    pending.docs -= 1;
    pending.tokens -= i64::from(old.tokens);
    Ok(())
}

/// Indexes every node in the file (used by migrations). Returns how many were read.
pub(super) fn index_all_nodes(txn: &WriteTransaction) -> Result<u64> {
    let mut nodes = Vec::new();
    {
        let t = txn.open_table(NODES)?;
        for row in t.iter()? {
            let (_, v) = row?;
            nodes.push(codec::decode::<Node>("nodes", v.value())?);
        }
    }
    let mut pending = PendingIndex::default();
    for n in &nodes {
        index_node(txn, &mut pending, n)?;
    }
    pending.apply(txn)?;
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
        let postings = r.open_table(SEARCH_POSTINGS)?;
        let docs = r.open_table(SEARCH_DOCS)?;
        let want = session.map(SessionId::to_bytes);
        let mut scores: HashMap<[u8; 16], f64> = HashMap::new();
        let mut doc_cache: HashMap<[u8; 16], Option<(u32, [u8; 16])>> = HashMap::new();
        for term in &terms {
            let lo = posting_key(term.as_bytes(), [0; 16]);
            let hi = posting_key(term.as_bytes(), [0xff; 16]);
            let mut list = Vec::new();
            for row in postings.range(lo.as_slice()..=hi.as_slice())? {
                let (_, v) = row?;
                decode_segment(v.value(), &mut list)?;
            }
            let df = list.len() as f64;
            let idf = (1.0 + (n_docs - df + 0.5) / (df + 0.5)).ln().max(0.01);
            for (node, tf) in list {
                let info = match doc_cache.get(&node) {
                    Some(i) => *i,
                    None => {
                        let i = match docs.get(node)? {
                            Some(v) => Some(DocRecord::decode_header(v.value())?),
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
    use redb::ReadableTableMetadata;

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
    fn term_counts_match_the_tokenizer() {
        let texts = [
            "Größe: a ÉTÉ x2 über_alles — 東京 ok? \u{1b}[31mred",
            "The the THE tHe; a ab abc 1 12 İstanbul ǅemal ΣΊΣΥΦΟΣ",
            "",
            "x",
            "trailing word",
            &"long".repeat(20),
            &format!("{} ok", "é".repeat(40)),
            "mixed123ÄÖÜ456 café-crème naïve\tTAB\nline",
        ];
        for text in texts {
            let mut want: HashMap<String, u32> = HashMap::new();
            let mut total = 0;
            for t in tokenize(text) {
                *want.entry(t).or_insert(0) += 1;
                total += 1;
            }
            let (got, got_total) = count_terms(text);
            let got: HashMap<String, u32> = got.into_iter().collect();
            assert_eq!(got, want, "{text}");
            assert_eq!(got_total, total, "{text}");
        }
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
    fn segments_split_merge_and_shrink() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        let a = Session::new("a", SessionSource::Glassbox);
        let b = Session::new("b", SessionSource::Glassbox);
        let nodes: Vec<Node> = (0..700)
            .map(|i| {
                let s = if i % 3 == 0 { b.id } else { a.id };
                Node::new(s, NodeType::Response, format!("common word{i} common"))
            })
            .collect();
        store
            .write(|w| {
                w.put_session(&a)?;
                w.put_session(&b)
            })
            .unwrap();
        // Later ids first, then earlier ones: the second batch lands inside and before
        // the stored segments.
        for chunk in [&nodes[350..], &nodes[..350]] {
            store
                .write(|w| {
                    for n in chunk.iter().rev() {
                        w.put_node(n)?;
                    }
                    Ok(())
                })
                .unwrap();
        }
        assert_eq!(store.search("common", None, 1000).unwrap().len(), 700);
        assert_eq!(
            store.search("word123", None, 10).unwrap()[0].node,
            nodes[123].id
        );
        // Re-indexing in the same transaction: the last text wins.
        let mut changed = nodes[5].clone();
        changed.text = "other".into();
        store
            .write(|w| {
                w.put_node(&changed)?;
                w.put_node(&nodes[5])?;
                w.put_node(&changed)
            })
            .unwrap();
        assert_eq!(store.search("common", None, 1000).unwrap().len(), 699);
        assert_eq!(store.search("other", None, 10).unwrap().len(), 1);
        store.write(|w| w.delete_session(b.id)).unwrap();
        let left = store.search("common", None, 1000).unwrap();
        assert_eq!(left.len(), 465);
        assert!(left.iter().all(|h| h.session == a.id));
        assert_eq!(store.search_doc_count().unwrap(), 466);
        store.write(|w| w.delete_session(a.id)).unwrap();
        assert!(store.search("common", None, 10).unwrap().is_empty());
        let r = store.read().unwrap();
        assert_eq!(r.open_table(SEARCH_POSTINGS).unwrap().len().unwrap(), 0);
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
