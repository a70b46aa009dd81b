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
//!
//! Each indexed node has a *doc number* (u32, given in indexing order and never reused), which
//! is what the postings name: a gap between two doc numbers takes a byte or two where a node id
//! took sixteen. `search_docs` maps a node to its record (with its doc number) and
//! `search_doc_nodes` maps a doc number back to its node.
//!
//! This file turns text into terms and keeps each node's index record; `postings.rs` stores
//! and merges the postings; `query.rs` ranks and cuts snippets; `upgrade.rs` brings an index of
//! an earlier schema over.

mod blocks;
mod legacy;
mod postings;
mod query;
mod terms;
#[cfg(test)]
mod tests;
mod upgrade;

use sha2::{Digest, Sha256};

use super::tables::{META, NODES, SEARCH_DOCS};
use super::{Node, NodeId, NodeStatus, NodeType, Result, SessionId, StoreError, codec};
use crate::store::kv::{ReadableTable, TableDefinition, WriteTxn};
pub(super) use legacy::{decode_legacy_postings, import_oldest_legacy_run};
pub(super) use postings::{PendingIndex, compact};
pub use query::{BM25_TF_MAX, bm25_idf, bm25_tf, snippet};
use terms::TermTable;
pub(super) use upgrade::to_doc_numbers;
#[cfg(test)]
pub(super) use upgrade::write_v11_layout;

/// Tokens shorter than this many characters are not indexed.
pub const MIN_TOKEN_CHARS: usize = 2;
/// Tokens longer than this many bytes (hashes, base64 blobs) are not indexed.
pub const MAX_TOKEN_BYTES: usize = 64;
/// `meta` key of the index totals: doc count ‖ token count (u64 LE each).
pub(super) const TOTALS_KEY: &str = "search_totals";
/// Bytes of a `search_docs` value of schema v10 and v11: session, token count, text hash.
/// (Before v10 the node's terms followed; from v12 its doc number does.)
pub(super) const DOC_HEADER: usize = 16 + 4 + 8;
/// Bytes of a `search_docs` value: [`DOC_HEADER`], then the doc number (u32 LE).
const DOC_RECORD: usize = DOC_HEADER + 4;
/// Bytes of a `search_doc_nodes` value: node id, session id, token count (u32 LE).
pub(super) const DOC_NODE_BYTES: usize = 16 + 16 + 4;
/// doc number → node id ‖ session id ‖ token count (u32 LE): the node each doc number of the
/// postings stands for, with what ranking needs of it (schema v12 on).
pub(in crate::store) const SEARCH_DOC_NODES: TableDefinition<u32, [u8; DOC_NODE_BYTES]> =
    TableDefinition::new("search_doc_nodes");

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
    if let Some(tool) = n.tool() {
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

/// What `search_docs` holds for one node.
struct DocRecord {
    tokens: u32,
    hash: [u8; 8],
    doc: u32,
}

impl DocRecord {
    fn decode(v: &[u8]) -> Result<Self> {
        if v.len() != DOC_RECORD {
            return Err(StoreError::Corrupt(format!(
                "search_docs: a record of {} bytes (expected {DOC_RECORD})",
                v.len()
            )));
        }
        let word = |at: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&v[at..at + 4]);
            u32::from_le_bytes(w)
        };
        let mut hash = [0u8; 8];
        hash.copy_from_slice(&v[20..28]);
        Ok(Self {
            tokens: word(16),
            hash,
            doc: word(DOC_HEADER),
        })
    }
}

/// `search_docs` value: session, token count, text hash, doc number.
fn encode_doc(session: [u8; 16], tokens: u32, hash: [u8; 8], doc: u32) -> [u8; DOC_RECORD] {
    let mut v = [0u8; DOC_RECORD];
    v[..16].copy_from_slice(&session);
    v[16..20].copy_from_slice(&tokens.to_le_bytes());
    v[20..28].copy_from_slice(&hash);
    v[DOC_HEADER..].copy_from_slice(&doc.to_le_bytes());
    v
}

/// `search_doc_nodes` value: node, session, token count.
fn encode_doc_node(node: [u8; 16], session: [u8; 16], tokens: u32) -> [u8; DOC_NODE_BYTES] {
    let mut v = [0u8; DOC_NODE_BYTES];
    v[..16].copy_from_slice(&node);
    v[16..32].copy_from_slice(&session);
    v[32..].copy_from_slice(&tokens.to_le_bytes());
    v
}

/// (node, session, token count) from a `search_doc_nodes` value.
fn decode_doc_node(v: &[u8; DOC_NODE_BYTES]) -> ([u8; 16], [u8; 16], u32) {
    let mut node = [0u8; 16];
    let mut session = [0u8; 16];
    let mut tokens = [0u8; 4];
    node.copy_from_slice(&v[..16]);
    session.copy_from_slice(&v[16..32]);
    tokens.copy_from_slice(&v[32..]);
    (node, session, u32::from_le_bytes(tokens))
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

fn add_to_totals(txn: &WriteTxn, docs: i64, tokens: i64) -> Result<()> {
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

/// The hasher of the in-memory term tables (a node's term counts, an import's grouping of
/// its index changes): foldhash with a fixed seed, so that a table's order is the same in
/// every run. The default SipHash showed up in import profiles, and the keys are the user's
/// own words, not attacker input.
pub(super) type TermHasher = foldhash::fast::FixedState;

/// Term frequencies of `text` and its token count: the same words as [`tokenize`].
fn count_terms(text: &str) -> (TermTable, u32) {
    let mut counts = TermTable::default();
    let mut total = 0u32;
    count_terms_into(text, &mut counts, &mut total);
    (counts, total)
}

/// Adds the terms of `text` to `counts` and `total` (see [`each_term`]).
fn count_terms_into(text: &str, counts: &mut TermTable, total: &mut u32) {
    each_term(text, |w| {
        *total = total.saturating_add(1);
        counts.add(w);
    });
}

/// [`each_term`]'s classes of a byte: an ASCII letter or digit, which an upper-case letter
/// also is, and the bytes of non-ASCII characters (0 for the rest: ASCII separators).
const WORD: u8 = 1;
const UPPER: u8 = 2;
const WIDE: u8 = 4;

/// The class of every byte value (see [`WORD`]).
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if c >= 0x80 {
            WIDE
        } else if c.is_ascii_uppercase() {
            WORD | UPPER
        } else if c.is_ascii_alphanumeric() {
            WORD
        } else {
            0
        };
        b += 1;
    }
    t
};

/// Calls `f` with each term of `text` in order: the same words as [`tokenize`], found
/// without allocating (a word that lowercasing changes is lowered into a buffer reused for
/// the next one). ASCII is classified through a table of byte classes, one byte a step; the
/// last non-ASCII character's class is remembered (the same arrow or dash starts every line
/// of some tool output, and looking a character up in Unicode's tables is what costs).
/// Walking the pieces of a text separated by non-word characters finds the same terms as
/// walking the whole.
fn each_term(text: &str, mut f: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut lower = String::new();
    let mut last: (char, bool) = ('\0', false);
    // Whether the non-ASCII character at `i` is a letter or digit, and its length in bytes.
    let mut wide = |i: usize| -> (bool, usize) {
        match text.get(i..).and_then(|t| t.chars().next()) {
            Some(c) => {
                if c != last.0 {
                    last = (c, c.is_alphanumeric());
                }
                (last.1, c.len_utf8())
            }
            None => (false, 1),
        }
    };
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match CLASS[usize::from(b)] {
            0 => {
                i += 1;
                continue;
            }
            WIDE => {
                if let (false, len) = wide(i) {
                    i += len;
                    continue;
                }
            }
            _ => {}
        }
        let start = i;
        let (mut chars, mut seen) = (0usize, 0u8);
        while let Some(&b) = bytes.get(i) {
            let class = CLASS[usize::from(b)];
            if class & WORD != 0 {
                seen |= class;
                i += 1;
            } else if class == WIDE
                && let (true, len) = wide(i)
            {
                seen |= WIDE;
                i += len;
            } else {
                break;
            }
            chars += 1;
        }
        let w = &text[start..i];
        if chars < MIN_TOKEN_CHARS || w.len() > MAX_TOKEN_BYTES {
            continue;
        }
        if seen & (UPPER | WIDE) == 0 {
            f(w);
            continue;
        }
        lower.clear();
        if seen & WIDE == 0 {
            lower.push_str(w);
            lower.make_ascii_lowercase();
        } else {
            lower.push_str(&w.to_lowercase());
        }
        f(&lower);
    }
}

/// What the index needs of a node's text, computed without touching the store: its hash and
/// its terms with their frequencies. Computing it is most of the cost of indexing a node, so
/// an importer can do it on its mapping thread while another thread writes ([`prepare`]).
/// The terms are kept in one string (two allocations per node, whatever its vocabulary).
#[derive(Clone, Debug)]
pub struct PreparedText {
    hash: [u8; 8],
    tokens: u32,
    /// The distinct terms, one after another (in no particular order, or sorted when
    /// streamed: the index sorts its changes when it writes them).
    words: String,
    /// Where each term ends in `words`, and its frequency.
    ends: Vec<(u32, u32)>,
}

impl PreparedText {
    /// The distinct terms with their frequencies.
    fn terms(&self) -> impl Iterator<Item = (&str, u32)> + '_ {
        let mut start = 0usize;
        self.ends.iter().map(move |&(end, tf)| {
            let end = end as usize;
            let term = self.words.get(start..end).unwrap_or("");
            start = end;
            (term, tf)
        })
    }

    fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// The pieces of the text a node is found by (see [`indexed_text`]), in order: joined they
/// are that text. The separators are pieces of their own, so no word spans two pieces.
fn indexed_pieces(n: &Node) -> Vec<&str> {
    if n.kind != NodeType::ToolCall {
        return vec![&n.text];
    }
    let mut pieces = Vec::with_capacity(5);
    if let Some(tool) = n.tool() {
        pieces.extend([tool, "\n"]);
    }
    pieces.push(&n.text);
    if let Some(result) = n.meta.get("result").and_then(|v| v.as_str()) {
        pieces.extend(["\n", result]);
    }
    pieces
}

/// The index form of `n`'s text; `None` for a streaming node (indexed by its final put).
pub fn prepare(n: &Node) -> Option<PreparedText> {
    if n.status == NodeStatus::Streaming {
        return None;
    }
    let pieces = indexed_pieces(n);
    let mut sha = Sha256::new();
    let prepared = TermTable::with_spare(|counts| {
        let mut tokens = 0u32;
        for piece in &pieces {
            sha.update(piece.as_bytes());
            count_terms_into(piece, counts, &mut tokens);
        }
        PreparedText::of(sha, tokens, counts.iter())
    });
    Some(prepared)
}

impl PreparedText {
    /// The index form from a finished digest of the text, its token count and its terms,
    /// in the order `terms` gives them.
    fn of<K: AsRef<str>>(
        sha: Sha256,
        tokens: u32,
        terms: impl IntoIterator<Item = (K, u32), IntoIter: ExactSizeIterator>,
    ) -> Self {
        let terms = terms.into_iter();
        let digest = sha.finalize();
        let mut hash = [0u8; 8];
        hash.copy_from_slice(&digest[..8]);
        let mut words = String::new();
        let mut ends = Vec::with_capacity(terms.len());
        for (term, tf) in terms {
            words.push_str(term.as_ref());
            ends.push((words.len() as u32, tf));
        }
        Self {
            hash,
            tokens,
            words,
            ends,
        }
    }
}

/// The index form of a text that arrives in pieces (a node as it streams), found piece by
/// piece: [`StreamedTerms::finish`] gives what [`prepare`] gives for the whole text, with
/// the terms sorted (the index then has little left to sort), and without reading the text
/// again once it is complete.
#[derive(Default)]
pub struct StreamedTerms {
    counts: TermTable,
    sha: Sha256,
    tokens: u32,
    /// Text from the last non-word character on: a word that may go on in the next piece.
    tail: String,
    /// Bytes pushed.
    len: usize,
}

impl StreamedTerms {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the next piece of the text.
    pub fn push(&mut self, piece: &str) {
        self.len += piece.len();
        self.sha.update(piece.as_bytes());
        // Counted up to the last ASCII character that is not a letter or digit: no word goes
        // across it, and counting a text in pieces cut between words counts the whole.
        match piece
            .bytes()
            .rposition(|b| b.is_ascii() && !b.is_ascii_alphanumeric())
        {
            Some(cut) => {
                let (done, rest) = piece.split_at(cut + 1);
                if self.tail.is_empty() {
                    self.count(done);
                } else {
                    let mut text = std::mem::take(&mut self.tail);
                    text.push_str(done);
                    self.count(&text);
                }
                self.tail.push_str(rest);
            }
            None => self.tail.push_str(piece),
        }
    }

    fn count(&mut self, text: &str) {
        count_terms_into(text, &mut self.counts, &mut self.tokens);
    }

    /// Bytes of text read so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The index form of everything pushed.
    pub fn finish(mut self) -> PreparedText {
        let tail = std::mem::take(&mut self.tail);
        self.count(&tail);
        PreparedText::of(self.sha, self.tokens, self.counts.sorted())
    }
}

/// Brings the index entries of `n` up to date with its text: its `search_docs` record at
/// once, its postings in `pending` (merged at commit). Streaming nodes are left as they are
/// (they are indexed by their final put); unchanged text costs one lookup.
/// `old` is the node's record as stored before this put, if any: its words are the ones to
/// take out of the index.
pub(super) fn index_node(
    txn: &WriteTxn,
    pending: &mut PendingIndex,
    n: &Node,
    old: Option<&[u8]>,
) -> Result<()> {
    let Some(prepared) = prepare(n) else {
        return Ok(());
    };
    let mut docs = txn.open_table(SEARCH_DOCS)?;
    let old_doc = stored_doc(&docs, n.id)?;
    index_prepared(
        txn,
        &mut docs,
        pending,
        n.id,
        n.session,
        &prepared,
        old,
        old_doc.as_deref(),
    )
}

/// The `search_docs` record of `node`, copied out.
pub(super) fn stored_doc(
    docs: &crate::store::kv::Table<'_, [u8; 16], &[u8]>,
    node: NodeId,
) -> Result<Option<Vec<u8>>> {
    Ok(docs.get(node.to_bytes())?.map(|v| v.value().to_vec()))
}

/// The terms of a node's stored record: those it was indexed under.
fn stored_terms(old: Option<&[u8]>) -> Result<Vec<Vec<u8>>> {
    let Some(bytes) = old else {
        return Err(StoreError::Corrupt(
            "search_docs: an indexed node has no stored record".into(),
        ));
    };
    let node: Node = codec::decode("nodes", bytes)?;
    let terms = indexed_text(&node);
    let (counts, _) = count_terms(&terms);
    Ok(counts.iter().map(|(t, _)| t.as_bytes().to_vec()).collect())
}

/// [`index_node`] with the text already prepared (by [`prepare`] on this node), the
/// `search_docs` table already open and the node's record in it already read (`old_doc`,
/// as it is in this transaction: a caller indexing many nodes reads them in one batch).
#[allow(clippy::too_many_arguments)]
pub(super) fn index_prepared(
    txn: &WriteTxn,
    docs: &mut crate::store::kv::Table<'_, [u8; 16], &[u8]>,
    pending: &mut PendingIndex,
    node: NodeId,
    session: SessionId,
    p: &PreparedText,
    old_node: Option<&[u8]>,
    old_doc: Option<&[u8]>,
) -> Result<()> {
    let id = node.to_bytes();
    let old = old_doc.map(DocRecord::decode).transpose()?;
    if old.as_ref().is_some_and(|o| o.hash == p.hash) {
        return Ok(());
    }
    let doc = match &old {
        Some(old) => {
            pending.docs -= 1;
            pending.tokens -= i64::from(old.tokens);
            for term in stored_terms(old_node)? {
                pending.op(&term, old.doc, 0);
            }
            Some(old.doc)
        }
        None => None,
    };
    if p.is_empty() {
        if let Some(doc) = doc {
            docs.remove(id)?;
            pending.remove_doc_row(doc);
        }
        return Ok(());
    }
    let doc = match doc {
        Some(d) => d,
        None => pending.new_doc(txn)?,
    };
    pending.reserve(p.words.len(), p.ends.len());
    for (term, tf) in p.terms() {
        pending.op(term.as_bytes(), doc, tf);
    }
    let session = session.to_bytes();
    docs.put(id, encode_doc(session, p.tokens, p.hash, doc).as_slice())?;
    pending.set_doc_row(doc, encode_doc_node(id, session, p.tokens));
    pending.docs += 1;
    pending.tokens += i64::from(p.tokens);
    Ok(())
}

/// Removes every index entry of `node` (its postings through `pending`); `old` is its
/// stored record.
pub(super) fn unindex_node(
    txn: &WriteTxn,
    pending: &mut PendingIndex,
    node: [u8; 16],
    old_node: Option<&[u8]>,
) -> Result<()> {
    let old = {
        let mut docs = txn.open_table(SEARCH_DOCS)?;
        let v = docs.remove(node)?;
        match v {
            Some(v) => DocRecord::decode(v.value())?,
            None => return Ok(()),
        }
    };
    pending.docs -= 1;
    pending.tokens -= i64::from(old.tokens);
    for term in stored_terms(old_node)? {
        pending.op(&term, old.doc, 0);
    }
    pending.remove_doc_row(old.doc);
    Ok(())
}

/// Indexes every node in the file (used by migrations). Returns how many were read.
pub(super) fn index_all_nodes(txn: &WriteTxn) -> Result<u64> {
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
        index_node(txn, &mut pending, n, None)?;
    }
    pending.apply(txn)?;
    Ok(nodes.len() as u64)
}
