//! The postings of the full-text index, kept as a few immutable *runs* (a log-structured
//! merge, in the "logarithmic method" form): each write transaction that indexes anything
//! writes its changes as one new run, a redb table of its own mapping `term → postings`, and
//! a run at least as large as the one before it is merged with it into one.
//!
//! Why not one table keyed by term, updated in place: a transaction then rewrites a B-tree
//! page for every distinct word it indexes. An import of real transcripts (code, paths, ids:
//! hundreds of thousands of distinct words) touched nearly every page of the index on every
//! commit, so each file cost more than the one before and the import grew with the square of
//! the history. A new run is written in term order into an empty table, which is sequential;
//! merging two runs reads both in order and writes a third, and drops the two tables whole.
//! Each posting is rewritten about log₂(index / batch) times in all, and a term is read
//! from at most that many runs.
//!
//! A posting is a node's *doc number* (a u32 given to each indexed node, see `mod.rs`) and
//! the term's frequency in it; a run's value for a term is its postings sorted by doc number,
//! each written as a varint of `gap << 1 | (tf == 1)` (the gap from the previous doc number,
//! the first from 0), followed by a varint of the frequency unless it is 1. Most postings take
//! two bytes or less (schema v12; before, each was a 16-byte node id and a u32, 20 bytes).
//! Frequency 0 is a tombstone: the node no longer has the term (it was re-indexed or
//! deleted). Newer runs shadow older ones; tombstones are dropped when a merge produces the
//! oldest run. The list of live runs, oldest first, is in `meta` under [`RUNS_KEY`]; runs are
//! written in the same transaction as the nodes they index, so the index never disagrees
//! with the nodes (a crash keeps both or neither). How a run's table holds its entries (in
//! blocks, schema v15 on) is `blocks.rs`'s.

use super::super::tables::META;
use std::collections::HashMap;

use super::blocks::{BlockWriter, Layout, RunCursor, get_varint, lookup, put_varint};
use super::{DOC_NODE_BYTES, SEARCH_DOC_NODES, TermHasher, add_to_totals};
use crate::store::kv::{ReadTable, ReadTxn, ReadableTable, TableDefinition, WriteTxn};
use crate::store::{Result, StoreError};

/// `meta` key of the live runs, oldest first: `run id ‖ postings` (u64 LE each) repeated,
/// the top bit of `postings` set for a run in blocks ([`Layout::Blocks`]).
pub(in crate::store) const RUNS_KEY: &str = "search_runs";
/// The bit of a run's postings count in `meta` that says its table holds blocks.
const BLOCKS_BIT: u64 = 1 << 63;
/// `meta` key of the next doc number to give (u32 LE).
pub(in crate::store) const NEXT_DOC_KEY: &str = "search_next_doc";

/// One posting: a doc number and the term's frequency in it (0: a tombstone).
pub(super) type Posting = (u32, u32);

/// A log of up to this many sorted runs is merged rather than sorted (see
/// `PendingIndex::rows`).
const FEW_RUNS: usize = 8;

/// One run of the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::store) struct Run {
    pub id: u64,
    /// Postings it holds, tombstones included.
    pub postings: u64,
    pub layout: Layout,
}

impl Run {
    /// A run of this build's layout.
    fn new(id: u64, postings: u64) -> Self {
        Self {
            id,
            postings,
            layout: Layout::Blocks,
        }
    }
}

pub(in crate::store) fn run_name(id: u64) -> String {
    format!("search_run_{id:016x}")
}

pub(in crate::store) fn run_table(name: &str) -> TableDefinition<'_, &'static [u8], &'static [u8]> {
    TableDefinition::new(name)
}

pub(in crate::store) fn decode_runs(v: Option<&[u8]>) -> Result<Vec<Run>> {
    let Some(v) = v else { return Ok(Vec::new()) };
    if !v.len().is_multiple_of(16) {
        return Err(StoreError::Corrupt(format!(
            "meta.{RUNS_KEY}: length is not a whole number of runs"
        )));
    }
    Ok(v.chunks_exact(16)
        .map(|c| {
            let mut id = [0u8; 8];
            let mut n = [0u8; 8];
            id.copy_from_slice(&c[..8]);
            n.copy_from_slice(&c[8..]);
            let n = u64::from_le_bytes(n);
            Run {
                id: u64::from_le_bytes(id),
                postings: n & !BLOCKS_BIT,
                layout: if n & BLOCKS_BIT != 0 {
                    Layout::Blocks
                } else {
                    Layout::Rows
                },
            }
        })
        .collect())
}

pub(in crate::store) fn encode_runs(runs: &[Run]) -> Vec<u8> {
    let mut v = Vec::with_capacity(runs.len() * 16);
    for r in runs {
        let bit = match r.layout {
            Layout::Rows => 0,
            Layout::Blocks => BLOCKS_BIT,
        };
        v.extend_from_slice(&r.id.to_le_bytes());
        v.extend_from_slice(&(r.postings | bit).to_le_bytes());
    }
    v
}

pub(super) fn read_runs(txn: &WriteTxn) -> Result<Vec<Run>> {
    let meta = txn.open_table(META)?;
    let v = meta.get(RUNS_KEY)?;
    decode_runs(v.as_ref().map(|v| v.value()))
}

pub(super) fn write_runs(txn: &WriteTxn, runs: &[Run]) -> Result<()> {
    let mut meta = txn.open_table(META)?;
    if runs.is_empty() {
        meta.remove(RUNS_KEY)?;
    } else {
        meta.insert(RUNS_KEY, encode_runs(runs).as_slice())?;
    }
    Ok(())
}

/// The next doc number from its `meta` value (0 when there is none yet).
pub(in crate::store) fn decode_next_doc(v: Option<&[u8]>) -> Result<u32> {
    match v {
        None => Ok(0),
        Some(v) => v
            .try_into()
            .map(u32::from_le_bytes)
            .map_err(|_| StoreError::Corrupt(format!("meta.{NEXT_DOC_KEY} is not 4 bytes"))),
    }
}

/// Reads a run's value for one term (see the module doc for the layout), appending to `out`.
pub(in crate::store) fn decode_postings(v: &[u8], out: &mut Vec<Posting>) -> Result<()> {
    let corrupt = || StoreError::Corrupt("search index: malformed postings".into());
    out.reserve(v.len() / 2);
    let mut pos = 0;
    let mut doc = 0u64;
    while pos < v.len() {
        let head = get_varint(v, &mut pos).ok_or_else(corrupt)?;
        doc += head >> 1;
        let tf = if head & 1 == 1 {
            1
        } else {
            get_varint(v, &mut pos).ok_or_else(corrupt)?
        };
        let (Ok(d), Ok(tf)) = (u32::try_from(doc), u32::try_from(tf)) else {
            return Err(corrupt());
        };
        out.push((d, tf));
    }
    Ok(())
}

/// Writes `postings` (sorted by doc number, each doc once) as a run's value.
pub(in crate::store) fn encode_postings(postings: &[Posting], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(postings.len() * 2);
    let mut prev = 0u32;
    for &(doc, tf) in postings {
        let gap = u64::from(doc - prev);
        put_varint(out, gap << 1 | u64::from(tf == 1));
        if tf != 1 {
            put_varint(out, u64::from(tf));
        }
        prev = doc;
    }
}

/// `older` overlaid with `newer` (both sorted by doc number): a doc in both takes `newer`'s
/// entry. Tombstones are kept unless `drop_tombstones`.
fn overlay(older: &[Posting], newer: &[Posting], drop_tombstones: bool, out: &mut Vec<Posting>) {
    out.clear();
    out.reserve(older.len() + newer.len());
    let (mut a, mut b) = (0, 0);
    while a < older.len() || b < newer.len() {
        let p = if b == newer.len() || (a < older.len() && older[a].0 < newer[b].0) {
            a += 1;
            older[a - 1]
        } else {
            if a < older.len() && older[a].0 == newer[b].0 {
                a += 1;
            }
            b += 1;
            newer[b - 1]
        };
        if p.1 > 0 || !drop_tombstones {
            out.push(p);
        }
    }
}

/// The index's runs opened for reading, oldest first.
pub(super) struct RunReader<'t> {
    tables: Vec<(RunTable<'t>, Layout)>,
}

/// A run's table opened for reading.
type RunTable<'t> = ReadTable<'t, &'static [u8], &'static [u8]>;

impl<'t> RunReader<'t> {
    pub(super) fn open(r: &'t ReadTxn) -> Result<Self> {
        let meta = r.open_table(META)?;
        let v = meta.get(RUNS_KEY)?;
        let runs = decode_runs(v.as_ref().map(|v| v.value()))?;
        let mut tables = Vec::with_capacity(runs.len());
        for run in runs {
            let name = run_name(run.id);
            tables.push((r.open_table(run_table(&name))?, run.layout));
        }
        Ok(Self { tables })
    }

    /// The live postings of `term`, sorted by doc number.
    pub(super) fn postings(&self, term: &[u8]) -> Result<Vec<Posting>> {
        let mut merged = Vec::new();
        let (mut run, mut next) = (Vec::new(), Vec::new());
        for (t, layout) in &self.tables {
            lookup(t, *layout, term, &mut |v| {
                run.clear();
                decode_postings(v, &mut run)?;
                overlay(&merged, &run, false, &mut next);
                std::mem::swap(&mut merged, &mut next);
                Ok(())
            })?;
        }
        merged.retain(|p| p.1 > 0);
        Ok(merged)
    }
}

/// Index changes made in one write transaction and not yet written as a run: a log of
/// `(term, doc, tf)` changes in the order they were made (tf 0 removes the posting), sorted
/// by term when the run is written, so a node indexed and then re-indexed in the same
/// transaction ends with its last state. The terms sit one after another in one buffer: a
/// node of a hundred thousand distinct words costs two growing buffers, not a map entry
/// and two allocations per word.
#[derive(Default)]
pub(in crate::store) struct PendingIndex {
    words: Vec<u8>,
    ops: Vec<Op>,
    pub(super) docs: i64,
    pub(super) tokens: i64,
    /// The next doc number to give, once read from `meta`.
    next_doc: Option<u32>,
    /// Rows of `search_doc_nodes` to write (or, `None`, remove), in the order they came.
    doc_rows: Vec<(u32, Option<[u8; DOC_NODE_BYTES]>)>,
}

/// Most bytes of a transaction's change log kept for the thread's next transaction.
const KEEP_SPARE_BYTES: usize = 64 << 20;

thread_local! {
    /// The change log buffers of this thread's last [`PendingIndex`], emptied.
    static SPARE: std::cell::RefCell<(Vec<u8>, Vec<Op>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// One change of [`PendingIndex`]: its term is `words[start..start + len]`.
#[derive(Clone, Copy, Debug)]
struct Op {
    start: usize,
    len: u32,
    doc: u32,
    tf: u32,
}

/// Rows of a run in term order, each term once with its postings sorted by doc number: the
/// terms in one buffer and the postings in another.
#[derive(Default)]
struct Rows {
    words: Vec<u8>,
    /// Where each row's term ends in `words` and its postings end in `postings` (each row
    /// starts where the one before it ends).
    ends: Vec<(usize, usize)>,
    postings: Vec<Posting>,
}

impl Rows {
    /// Rows with room for `terms` terms of `words` bytes in all and `postings` postings.
    fn with_capacity(words: usize, terms: usize, postings: usize) -> Self {
        Self {
            words: Vec::with_capacity(words),
            ends: Vec::with_capacity(terms),
            postings: Vec::with_capacity(postings),
        }
    }

    /// A row from a term's changes sorted by doc number: for each doc, the last change.
    fn push_changes(&mut self, term: &[u8], changes: impl Iterator<Item = Posting>) {
        let p = self.postings.len();
        self.words.extend_from_slice(term);
        for (doc, tf) in changes {
            match self.postings[p..].last_mut() {
                Some(last) if last.0 == doc => last.1 = tf,
                _ => self.postings.push((doc, tf)),
            }
        }
        self.ends.push((self.words.len(), self.postings.len()));
    }

    fn push(&mut self, term: &[u8], postings: &[Posting]) {
        self.words.extend_from_slice(term);
        self.postings.extend_from_slice(postings);
        self.ends.push((self.words.len(), self.postings.len()));
    }

    fn iter(&self) -> impl Iterator<Item = (&[u8], &[Posting])> + '_ {
        let mut start = (0, 0);
        self.ends.iter().map(move |&(w, p)| {
            let row = (&self.words[start.0..w], &self.postings[start.1..p]);
            start = (w, p);
            row
        })
    }
}

impl Op {
    fn term<'w>(&self, words: &'w [u8]) -> &'w [u8] {
        &words[self.start..self.start + self.len as usize]
    }
}

/// The order of a change log: by term, then doc, then the order the changes were made (a
/// later change has its term later in `words`, so no two ops compare equal).
fn op_order(words: &[u8], a: &Op, b: &Op) -> std::cmp::Ordering {
    a.term(words)
        .cmp(b.term(words))
        .then(a.doc.cmp(&b.doc))
        .then(a.start.cmp(&b.start))
}

/// How many sorted runs the log is, counted up to [`FEW_RUNS`] + 1.
fn sorted_runs(words: &[u8], ops: &[Op]) -> usize {
    1 + ops
        .windows(2)
        .filter(|w| op_order(words, &w[0], &w[1]).is_gt())
        .take(FEW_RUNS)
        .count()
}

/// Rows from a log of a few sorted runs (streamed nodes give their terms sorted): the
/// stable sort merges them in linear time.
fn merged_rows(words: &[u8], ops: &mut [Op]) -> Rows {
    ops.sort_by(|a, b| op_order(words, a, b));
    // At most one row per change: room reserved and never touched costs nothing.
    let mut out = Rows::with_capacity(words.len(), ops.len(), ops.len());
    for same in ops.chunk_by(|a, b| a.term(words) == b.term(words)) {
        out.push_changes(same[0].term(words), same.iter().map(|o| (o.doc, o.tf)));
    }
    out
}

/// Rows from a log in any order (an import's: each node's terms in the order it first used
/// them). Sorting the whole log compared a term's bytes again at every step, and was most
/// of an import's index time; instead each change is grouped under its term through a hash
/// map, only the distinct terms are sorted, and the changes are placed term by term in the
/// order they were made, which is doc order unless a node was indexed twice.
fn grouped_rows(words: &[u8], ops: &[Op]) -> Rows {
    type Ids<'w> = HashMap<&'w [u8], u32, TermHasher>;
    let mut ids = Ids::with_capacity_and_hasher(ops.len() / 4, Default::default());
    // Per distinct term, first seen first: the term and how many changes it has.
    let mut terms: Vec<(&[u8], u32)> = Vec::new();
    let of_op: Vec<u32> = ops
        .iter()
        .map(|o| {
            let t = o.term(words);
            let fresh = terms.len() as u32;
            let id = *ids.entry(t).or_insert(fresh);
            if id == fresh {
                terms.push((t, 0));
            }
            terms[id as usize].1 += 1;
            id
        })
        .collect();
    drop(ids);
    // The stable sort: distinct terms that come in a few sorted runs are merged in linear time.
    let mut order: Vec<u32> = (0..terms.len() as u32).collect();
    order.sort_by(|&a, &b| terms[a as usize].0.cmp(terms[b as usize].0));
    // Where each term's changes go, in term order; then each change put in its place.
    let mut next = vec![0usize; terms.len()];
    let mut at = 0;
    for &id in &order {
        next[id as usize] = at;
        at += terms[id as usize].1 as usize;
    }
    let mut placed: Vec<Posting> = vec![(0, 0); ops.len()];
    for (o, &id) in ops.iter().zip(&of_op) {
        let slot = &mut next[id as usize];
        placed[*slot] = (o.doc, o.tf);
        *slot += 1;
    }
    let mut out = Rows::with_capacity(
        terms.iter().map(|t| t.0.len()).sum(),
        terms.len(),
        ops.len(),
    );
    let mut rest = placed.as_mut_slice();
    for &id in &order {
        let (term, n) = terms[id as usize];
        let (changes, tail) = std::mem::take(&mut rest).split_at_mut(n as usize);
        rest = tail;
        if !changes.is_sorted_by_key(|p| p.0) {
            // Stable: the changes of one doc stay in the order they were made.
            changes.sort_by_key(|p| p.0);
        }
        out.push_changes(term, changes.iter().copied());
    }
    out
}

impl PendingIndex {
    /// Takes up the buffers of this thread's last transaction, if the log has none yet, so
    /// that each commit does not grow (and fault in) its log from nothing again.
    fn take_spare(&mut self) {
        if self.ops.capacity() == 0 {
            SPARE.with(|spare| {
                if let Ok(mut spare) = spare.try_borrow_mut() {
                    self.words = std::mem::take(&mut spare.0);
                    self.ops = std::mem::take(&mut spare.1);
                }
            });
        }
    }

    /// Makes room for `ops` more changes of `bytes` bytes of terms in all (a node's words,
    /// known before they are logged), so that a node of a hundred thousand terms does not
    /// grow the log by doubling.
    pub(super) fn reserve(&mut self, bytes: usize, ops: usize) {
        self.take_spare();
        self.words.reserve(bytes);
        self.ops.reserve(ops);
    }

    pub(super) fn op(&mut self, term: &[u8], doc: u32, tf: u32) {
        self.take_spare();
        let start = self.words.len();
        self.words.extend_from_slice(term);
        self.ops.push(Op {
            start,
            len: term.len() as u32,
            doc,
            tf,
        });
    }

    /// The changes as rows: per term and doc, the last change made.
    fn rows(&mut self) -> Rows {
        let words = std::mem::take(&mut self.words);
        let mut ops = std::mem::take(&mut self.ops);
        let out = if sorted_runs(&words, &ops) <= FEW_RUNS {
            merged_rows(&words, &mut ops)
        } else {
            grouped_rows(&words, &ops)
        };
        let (mut words, mut ops) = (words, ops);
        if words.capacity() + ops.capacity() * std::mem::size_of::<Op>() <= KEEP_SPARE_BYTES {
            words.clear();
            ops.clear();
            SPARE.with(|spare| {
                if let Ok(mut spare) = spare.try_borrow_mut() {
                    *spare = (words, ops);
                }
            });
        }
        out
    }

    /// A doc number no node has had in this store.
    pub(super) fn new_doc(&mut self, txn: &WriteTxn) -> Result<u32> {
        let next = match self.next_doc {
            Some(n) => n,
            None => {
                let meta = txn.open_table(META)?;
                let v = meta.get(NEXT_DOC_KEY)?;
                decode_next_doc(v.as_ref().map(|v| v.value()))?
            }
        };
        let after = next.checked_add(1).ok_or_else(|| {
            StoreError::Invalid("the search index has given out every doc number".into())
        })?;
        self.next_doc = Some(after);
        Ok(next)
    }

    /// Sets what doc number `doc` stands for (written at [`PendingIndex::apply`]).
    pub(super) fn set_doc_row(&mut self, doc: u32, row: [u8; DOC_NODE_BYTES]) {
        self.doc_rows.push((doc, Some(row)));
    }

    /// Retires doc number `doc` (its node left the index).
    pub(super) fn remove_doc_row(&mut self, doc: u32) {
        self.doc_rows.push((doc, None));
    }

    /// Writes the doc number rows and the next doc number.
    fn apply_docs(&mut self, txn: &WriteTxn) -> Result<()> {
        if let Some(next) = self.next_doc {
            txn.open_table(META)?
                .insert(NEXT_DOC_KEY, next.to_le_bytes().as_slice())?;
        }
        if self.doc_rows.is_empty() {
            return Ok(());
        }
        let mut t = txn.open_table(SEARCH_DOC_NODES)?;
        for (doc, row) in self.doc_rows.drain(..) {
            match row {
                Some(row) => t.put(doc, row)?,
                None => {
                    t.remove(doc)?;
                }
            }
        }
        Ok(())
    }

    /// Writes every pending change as a new run, merges runs as they come to match in size,
    /// and updates the totals.
    pub(in crate::store) fn apply(&mut self, txn: &WriteTxn) -> Result<()> {
        let (docs, tokens) = (self.docs, self.tokens);
        self.docs = 0;
        self.tokens = 0;
        add_to_totals(txn, docs, tokens)?;
        self.apply_docs(txn)?;
        if self.ops.is_empty() {
            return Ok(());
        }
        let mut rows = self.rows();
        let pending = rows.postings.len() as u64;
        let mut runs = read_runs(txn)?;
        let id = next_id(&runs);
        // A run no larger than these changes would be merged with the new run as soon as it
        // was written: it is read and folded in first, so these postings are written once
        // rather than written and then copied by the merge (one large node indexed after
        // small ones otherwise cost twice its run).
        while let Some(&last) = runs.last() {
            if last.postings > pending {
                break;
            }
            runs.pop();
            rows = fold_into(txn, last, &rows)?;
        }
        // With nothing older to shadow, a tombstone would only take room.
        let postings = write_run(txn, id, rows.iter(), runs.is_empty())?;
        if postings > 0 {
            runs.push(Run::new(id, postings));
        }
        while runs.len() >= 2 && runs[runs.len() - 1].postings >= runs[runs.len() - 2].postings {
            merge_newest(txn, &mut runs)?;
        }
        write_runs(txn, &runs)
    }
}

/// Run `older` overlaid with `newer`, as rows; the run's table is dropped. Tombstones are
/// kept.
fn fold_into(txn: &WriteTxn, older: Run, newer: &Rows) -> Result<Rows> {
    let name = run_name(older.id);
    // Room for both, the older run's terms reckoned at the newer ones' mean length: these
    // are the turn's last write for a long trace, a hundred thousand rows.
    let (terms, postings) = (newer.ends.len(), newer.postings.len());
    let older_postings = usize::try_from(older.postings).unwrap_or(0);
    let mean_term = newer.words.len().div_ceil(terms.max(1));
    let mut out = Rows::with_capacity(
        newer.words.len() + older_postings * mean_term,
        terms + older_postings,
        postings + older_postings,
    );
    {
        let table = txn.open_table(run_table(&name))?;
        let mut newer = newer.iter().peekable();
        let (mut old, mut merged) = (Vec::new(), Vec::new());
        let mut rows = RunCursor::new(&table, older.layout)?;
        while let Some((term, v)) = rows.current() {
            while let Some((t, p)) = newer.next_if(|n| n.0 < term) {
                out.push(t, p);
            }
            old.clear();
            decode_postings(v, &mut old)?;
            match newer.next_if(|n| n.0 == term) {
                Some((_, p)) => {
                    overlay(&old, p, false, &mut merged);
                    out.push(term, &merged);
                }
                None => out.push(term, &old),
            }
            rows.advance()?;
        }
        for (t, p) in newer {
            out.push(t, p);
        }
    }
    txn.delete_table(run_table(&name))?;
    Ok(out)
}

pub(super) fn next_id(runs: &[Run]) -> u64 {
    runs.iter().map(|r| r.id).max().unwrap_or(0) + 1
}

/// Merges the two newest runs of `runs` into one.
fn merge_newest(txn: &WriteTxn, runs: &mut Vec<Run>) -> Result<()> {
    let (Some(newer), Some(older)) = (runs.pop(), runs.pop()) else {
        return Ok(());
    };
    let id = next_id(&[newer, older]).max(next_id(runs));
    let drop_tombstones = runs.is_empty();
    let postings = merge_runs(txn, older, Some(newer), id, drop_tombstones)?;
    for old in [older.id, newer.id] {
        txn.delete_table(run_table(&run_name(old)))?;
    }
    if postings == 0 && drop_tombstones {
        txn.delete_table(run_table(&run_name(id)))?;
    } else {
        runs.push(Run::new(id, postings));
    }
    Ok(())
}

/// Writes run `into` (in blocks) as run `older` overlaid with run `newer`, reading both in
/// term order. Returns the postings written.
/// With no `newer`, run `older` is copied (dropping its tombstones, if asked).
fn merge_runs(
    txn: &WriteTxn,
    older: Run,
    newer: Option<Run>,
    into: u64,
    drop_tombstones: bool,
) -> Result<u64> {
    let (na, nb, nc) = (
        run_name(older.id),
        newer.map(|r| run_name(r.id)).unwrap_or_default(),
        run_name(into),
    );
    let a = txn.open_table(run_table(&na))?;
    let b = match newer {
        Some(_) => Some(txn.open_table(run_table(&nb))?),
        None => None,
    };
    let mut c = txn.open_table(run_table(&nc))?;
    // `into` is a new table written in term order: appended through a cursor.
    let mut c = BlockWriter::new(c.appender()?);
    let mut ra = RunCursor::new(&a, older.layout)?;
    let mut rb = match (&b, newer) {
        (Some(b), Some(newer)) => Some(RunCursor::new(b, newer.layout)?),
        _ => None,
    };
    let (mut pa, mut pb, mut out) = (Vec::new(), Vec::new(), Vec::new());
    let mut value = Vec::new();
    let mut written = 0u64;
    loop {
        pa.clear();
        pb.clear();
        let x = ra.current();
        let y = rb.as_ref().and_then(RunCursor::current);
        // Take the smaller term (both when equal).
        let (from_a, from_b) = match (x, y) {
            (None, None) => break,
            (Some(x), Some(y)) => match x.0.cmp(y.0) {
                std::cmp::Ordering::Less => (Some(x), None),
                std::cmp::Ordering::Greater => (None, Some(y)),
                std::cmp::Ordering::Equal => (Some(x), Some(y)),
            },
            (x, y) => (x, y),
        };
        if let Some((_, v)) = from_a {
            decode_postings(v, &mut pa)?;
        }
        if let Some((_, v)) = from_b {
            decode_postings(v, &mut pb)?;
        }
        let one_side = from_a.is_none() || from_b.is_none();
        let Some((term, raw)) = from_a.or(from_b) else {
            break;
        };
        overlay(&pa, &pb, drop_tombstones, &mut out);
        if !out.is_empty() {
            if one_side && out.len() == pa.len() + pb.len() {
                // Nothing was shadowed or dropped: the stored bytes are the merged value.
                c.push(term, raw)?;
            } else {
                encode_postings(&out, &mut value);
                c.push(term, value.as_slice())?;
            }
            written += out.len() as u64;
        }
        let (took_a, took_b) = (from_a.is_some(), from_b.is_some());
        if took_a {
            ra.advance()?;
        }
        if took_b && let Some(rb) = rb.as_mut() {
            rb.advance()?;
        }
    }
    c.close()?;
    Ok(written)
}

/// Merges every run into one, dropping tombstones: the smallest, fastest form of the index.
/// Returns the postings left.
pub(in crate::store) fn compact(txn: &WriteTxn) -> Result<u64> {
    let mut runs = read_runs(txn)?;
    let merged = runs.len() >= 2;
    while runs.len() >= 2 {
        merge_newest(txn, &mut runs)?;
    }
    // A run that becomes the oldest is written without tombstones (by a merge, or by a
    // commit that folded every older run in), so a lone run in blocks is already compact:
    // only a run of a row per term, written before blocks, is copied, to bring it into them.
    if let [only] = runs.as_slice()
        && !merged
        && only.layout == Layout::Rows
    {
        let id = next_id(&runs);
        let postings = merge_runs(txn, *only, None, id, true)?;
        txn.delete_table(run_table(&run_name(only.id)))?;
        runs = vec![Run::new(id, postings)];
        if postings == 0 {
            txn.delete_table(run_table(&run_name(id)))?;
            runs.clear();
        }
    }
    write_runs(txn, &runs)?;
    Ok(runs.iter().map(|r| r.postings).sum())
}

/// Writes run `id` from `(term, postings)` rows in term order, leaving out empty ones (and
/// tombstones, with `drop_tombstones`); a run that would be empty is not kept. Returns the
/// postings written.
fn write_run<'r>(
    txn: &WriteTxn,
    id: u64,
    rows: impl Iterator<Item = (&'r [u8], &'r [Posting])>,
    drop_tombstones: bool,
) -> Result<u64> {
    let name = run_name(id);
    let mut table = txn.open_table(run_table(&name))?;
    let (mut value, mut kept) = (Vec::new(), Vec::new());
    let mut written = 0u64;
    {
        // The table is new and the rows come in term order: appended through a cursor as
        // blocks of entries.
        let mut end = BlockWriter::new(table.appender()?);
        for (term, postings) in rows {
            let postings = if drop_tombstones && postings.iter().any(|p| p.1 == 0) {
                kept.clear();
                kept.extend(postings.iter().filter(|p| p.1 > 0));
                kept.as_slice()
            } else {
                postings
            };
            if postings.is_empty() {
                continue;
            }
            encode_postings(postings, &mut value);
            end.push(term, value.as_slice())?;
            written += postings.len() as u64;
        }
        end.close()?;
    }
    drop(table);
    if written == 0 {
        txn.delete_table(run_table(&name))?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::BTreeMap;

    use super::{Op, Posting, Rows, grouped_rows, merged_rows, sorted_runs};
    use crate::store::testing::{Fixture, on_every_arm};
    use crate::store::{Node, NodeType, Session, SessionSource};

    fn as_rows(r: &Rows) -> Vec<(Vec<u8>, Vec<Posting>)> {
        r.iter().map(|(t, p)| (t.to_vec(), p.to_vec())).collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Both ways of turning a change log into rows give, per term in term order and per
        /// doc in doc order, the last change made: whether the log is a few sorted runs or
        /// any order, and whatever docs were changed twice.
        #[test]
        fn grouped_and_merged_rows_keep_the_last_change(
            log in proptest::collection::vec(("[a-e]{1,3}", 0u32..6, 0u32..3), 0..200),
            runs in 1usize..12,
        ) {
            let mut log = log;
            // `runs` sorted stretches, as streamed nodes give them.
            let per = log.len().div_ceil(runs).max(1);
            for chunk in log.chunks_mut(per) {
                chunk.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
            }
            let (mut words, mut ops) = (Vec::new(), Vec::new());
            let mut want: BTreeMap<Vec<u8>, BTreeMap<u32, u32>> = BTreeMap::new();
            for (term, doc, tf) in &log {
                ops.push(Op { start: words.len(), len: term.len() as u32, doc: *doc, tf: *tf });
                words.extend_from_slice(term.as_bytes());
                want.entry(term.as_bytes().to_vec()).or_default().insert(*doc, *tf);
            }
            let want: Vec<(Vec<u8>, Vec<Posting>)> =
                want.into_iter().map(|(t, d)| (t, d.into_iter().collect())).collect();
            proptest::prop_assert!(sorted_runs(&words, &ops) <= runs.min(super::FEW_RUNS + 1));
            proptest::prop_assert_eq!(&as_rows(&grouped_rows(&words, &ops)), &want);
            proptest::prop_assert_eq!(&as_rows(&merged_rows(&words, &mut ops.clone())), &want);
        }
    }

    on_every_arm!(small_runs_are_folded_into_a_larger_new_run,);

    /// A node of many words indexed after small ones: the small runs are folded into its
    /// run as it is written (one run, nothing merged after), a change in the same
    /// transaction shadows what they held, and a later small run stays on its own.
    fn small_runs_are_folded_into_a_larger_new_run(fx: &Fixture) {
        let store = fx.open();
        let s = Session::new("t", SessionSource::Glassbox);
        store.write(|w| w.put_session(&s)).unwrap();
        let small: Vec<Node> = (0..3)
            .map(|i| Node::new(s.id, NodeType::Response, format!("small{i} shared")))
            .collect();
        for n in &small {
            store.write(|w| w.put_node(n)).unwrap();
        }
        assert!(!store.search_runs().unwrap().is_empty());
        let words: Vec<String> = (0..1000).map(|i| format!("w{i}")).collect();
        let big = Node::new(s.id, NodeType::Thinking, words.join(" "));
        let mut changed = small[1].clone();
        changed.text = "renamed shared".into();
        store
            .write(|w| {
                w.put_node(&big)?;
                w.put_node(&changed)
            })
            .unwrap();
        // 1000 + 2 + 2 + 2 postings, no tombstone left: it is the only run.
        assert_eq!(store.search_runs().unwrap(), vec![1006]);
        assert_eq!(store.search("w999", None, 10).unwrap()[0].node, big.id);
        assert_eq!(store.search("shared", None, 10).unwrap().len(), 3);
        assert!(store.search("small1", None, 10).unwrap().is_empty());
        assert_eq!(
            store.search("renamed", None, 10).unwrap()[0].node,
            changed.id
        );
        // A small change after it is a run of its own.
        let later = Node::new(s.id, NodeType::Response, "later shared");
        store.write(|w| w.put_node(&later)).unwrap();
        assert_eq!(store.search_runs().unwrap(), vec![1006, 2]);
        assert_eq!(store.search("shared", None, 10).unwrap().len(), 4);
    }
}
