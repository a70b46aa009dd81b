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
//! with the nodes (a crash keeps both or neither).

use std::collections::HashMap;

use redb::{ReadTransaction, ReadableTable, TableDefinition, WriteTransaction};

use super::super::tables::META;
use super::{DOC_NODE_BYTES, SEARCH_DOC_NODES, TermHasher, add_to_totals};
use crate::store::{Result, StoreError};

/// `meta` key of the live runs, oldest first: `run id ‖ postings` (u64 LE each) repeated.
pub(in crate::store) const RUNS_KEY: &str = "search_runs";
/// `meta` key of the next doc number to give (u32 LE).
pub(in crate::store) const NEXT_DOC_KEY: &str = "search_next_doc";
/// Bytes of one posting of schema v9 to v11: node id, then term frequency (u32 LE).
const LEGACY_POSTING_BYTES: usize = 16 + 4;

/// One posting: a doc number and the term's frequency in it (0: a tombstone).
pub(super) type Posting = (u32, u32);
/// A posting of schema v4 to v11: node id and frequency. Only migrations read them.
pub(in crate::store) type LegacyPosting = ([u8; 16], u32);

/// One run of the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::store) struct Run {
    pub id: u64,
    /// Postings it holds, tombstones included.
    pub postings: u64,
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
            Run {
                id: u64::from_le_bytes(id),
                postings: u64::from_le_bytes(n),
            }
        })
        .collect())
}

fn encode_runs(runs: &[Run]) -> Vec<u8> {
    let mut v = Vec::with_capacity(runs.len() * 16);
    for r in runs {
        v.extend_from_slice(&r.id.to_le_bytes());
        v.extend_from_slice(&r.postings.to_le_bytes());
    }
    v
}

fn read_runs(txn: &WriteTransaction) -> Result<Vec<Run>> {
    let meta = txn.open_table(META)?;
    let v = meta.get(RUNS_KEY)?;
    decode_runs(v.as_ref().map(|v| v.value()))
}

fn write_runs(txn: &WriteTransaction, runs: &[Run]) -> Result<()> {
    let mut meta = txn.open_table(META)?;
    if runs.is_empty() {
        meta.remove(RUNS_KEY)?;
    } else {
        meta.insert(RUNS_KEY, encode_runs(runs).as_slice())?;
    }
    Ok(())
}

/// Postings of schema v4 to v11 (`node id ‖ tf (u32 LE)` repeated), for migrations.
pub(in crate::store) fn decode_legacy_postings(
    v: &[u8],
    out: &mut Vec<LegacyPosting>,
) -> Result<()> {
    if !v.len().is_multiple_of(LEGACY_POSTING_BYTES) {
        return Err(StoreError::Corrupt(
            "search index: postings length is not a whole number of postings".into(),
        ));
    }
    out.reserve(v.len() / LEGACY_POSTING_BYTES);
    for p in v.chunks_exact(LEGACY_POSTING_BYTES) {
        let mut node = [0u8; 16];
        node.copy_from_slice(&p[..16]);
        let mut tf = [0u8; 4];
        tf.copy_from_slice(&p[16..]);
        out.push((node, u32::from_le_bytes(tf)));
    }
    Ok(())
}

/// The v4–v11 form of `postings` (what [`decode_legacy_postings`] reads).
pub(in crate::store) fn encode_legacy_postings(postings: &[LegacyPosting], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(postings.len() * LEGACY_POSTING_BYTES);
    for (node, tf) in postings {
        out.extend_from_slice(node);
        out.extend_from_slice(&tf.to_le_bytes());
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(v: &[u8], pos: &mut usize) -> Option<u64> {
    let mut x = 0u64;
    let mut shift = 0u32;
    loop {
        let b = *v.get(*pos)?;
        *pos += 1;
        if shift > 56 && u64::from(b & 0x7f) >> (64 - shift) != 0 {
            return None;
        }
        x |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(x);
        }
        shift += 7;
        if shift >= 64 {
            return None;
        }
    }
}

/// Reads a run's value for one term (see the module doc for the layout), appending to `out`.
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
pub(super) struct RunReader {
    tables: Vec<redb::ReadOnlyTable<&'static [u8], &'static [u8]>>,
}

impl RunReader {
    pub(super) fn open(r: &ReadTransaction) -> Result<Self> {
        let meta = r.open_table(META)?;
        let v = meta.get(RUNS_KEY)?;
        let runs = decode_runs(v.as_ref().map(|v| v.value()))?;
        let mut tables = Vec::with_capacity(runs.len());
        for run in runs {
            let name = run_name(run.id);
            tables.push(r.open_table(run_table(&name))?);
        }
        Ok(Self { tables })
    }

    /// The live postings of `term`, sorted by doc number.
    pub(super) fn postings(&self, term: &[u8]) -> Result<Vec<Posting>> {
        let mut merged = Vec::new();
        let (mut run, mut next) = (Vec::new(), Vec::new());
        for t in &self.tables {
            let Some(v) = t.get(term)? else { continue };
            run.clear();
            decode_postings(v.value(), &mut run)?;
            overlay(&merged, &run, false, &mut next);
            std::mem::swap(&mut merged, &mut next);
        }
        merged.retain(|p| p.1 > 0);
        Ok(merged)
    }
}

/// Index changes made in one write transaction and not yet written as a run. Per term, the
/// postings set (tf > 0) or removed (tf = 0) in the order they were made, so a node indexed
/// and then re-indexed in the same transaction ends with its last state.
#[derive(Default)]
pub(in crate::store) struct PendingIndex {
    terms: HashMap<Vec<u8>, Vec<Posting>, std::hash::BuildHasherDefault<TermHasher>>,
    pub(super) docs: i64,
    pub(super) tokens: i64,
    /// The next doc number to give, once read from `meta`.
    next_doc: Option<u32>,
    /// Rows of `search_doc_nodes` to write (or, `None`, remove), in the order they came.
    doc_rows: Vec<(u32, Option<[u8; DOC_NODE_BYTES]>)>,
}

impl PendingIndex {
    pub(super) fn op(&mut self, term: &[u8], doc: u32, tf: u32) {
        match self.terms.get_mut(term) {
            Some(ops) => ops.push((doc, tf)),
            None => {
                self.terms.insert(term.to_vec(), vec![(doc, tf)]);
            }
        }
    }

    /// A doc number no node has had in this store.
    pub(super) fn new_doc(&mut self, txn: &WriteTransaction) -> Result<u32> {
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
    fn apply_docs(&mut self, txn: &WriteTransaction) -> Result<()> {
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
                Some(row) => t.insert(doc, row)?,
                None => t.remove(doc)?,
            };
        }
        Ok(())
    }

    /// Writes every pending change as a new run, merges runs as they come to match in size,
    /// and updates the totals.
    pub(in crate::store) fn apply(&mut self, txn: &WriteTransaction) -> Result<()> {
        let (docs, tokens) = (self.docs, self.tokens);
        self.docs = 0;
        self.tokens = 0;
        add_to_totals(txn, docs, tokens)?;
        self.apply_docs(txn)?;
        if self.terms.is_empty() {
            return Ok(());
        }
        let mut terms: Vec<(Vec<u8>, Vec<Posting>)> = self.terms.drain().collect();
        terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut runs = read_runs(txn)?;
        let id = next_id(&runs);
        // Nothing older to shadow: a tombstone would only take room.
        let keep_tombstones = !runs.is_empty();
        let rows = terms.into_iter().map(|(term, mut ops)| {
            // A stable sort keeps each doc's changes in the order they were made: the last
            // wins.
            ops.sort_by_key(|o| o.0);
            ops.dedup_by(|later, earlier| {
                if later.0 == earlier.0 {
                    *earlier = *later;
                    true
                } else {
                    false
                }
            });
            if !keep_tombstones {
                ops.retain(|p| p.1 > 0);
            }
            Ok((term, ops))
        });
        let postings = write_run(txn, id, rows)?;
        if postings > 0 {
            runs.push(Run { id, postings });
        }
        while runs.len() >= 2 && runs[runs.len() - 1].postings >= runs[runs.len() - 2].postings {
            merge_newest(txn, &mut runs)?;
        }
        write_runs(txn, &runs)
    }
}

fn next_id(runs: &[Run]) -> u64 {
    runs.iter().map(|r| r.id).max().unwrap_or(0) + 1
}

/// Merges the two newest runs of `runs` into one.
fn merge_newest(txn: &WriteTransaction, runs: &mut Vec<Run>) -> Result<()> {
    let (Some(newer), Some(older)) = (runs.pop(), runs.pop()) else {
        return Ok(());
    };
    let id = next_id(&[newer, older]).max(next_id(runs));
    let drop_tombstones = runs.is_empty();
    let postings = merge_runs(txn, older.id, Some(newer.id), id, drop_tombstones)?;
    for old in [older.id, newer.id] {
        txn.delete_table(run_table(&run_name(old)))?;
    }
    if postings == 0 && drop_tombstones {
        txn.delete_table(run_table(&run_name(id)))?;
    } else {
        runs.push(Run { id, postings });
    }
    Ok(())
}

/// Writes run `into` as run `older` overlaid with run `newer`, reading both in term order.
/// Returns the postings written.
/// With no `newer`, run `older` is copied (dropping its tombstones, if asked).
fn merge_runs(
    txn: &WriteTransaction,
    older: u64,
    newer: Option<u64>,
    into: u64,
    drop_tombstones: bool,
) -> Result<u64> {
    let (na, nb, nc) = (
        run_name(older),
        newer.map(run_name).unwrap_or_default(),
        run_name(into),
    );
    let a = txn.open_table(run_table(&na))?;
    let b = match newer {
        Some(_) => Some(txn.open_table(run_table(&nb))?),
        None => None,
    };
    let mut c = txn.open_table(run_table(&nc))?;
    let mut ia = a.iter()?;
    let mut ib = match &b {
        Some(b) => Some(b.iter()?),
        None => None,
    };
    let mut ra = ia.next().transpose()?;
    let mut rb = match ib.as_mut() {
        Some(i) => i.next().transpose()?,
        None => None,
    };
    let (mut pa, mut pb, mut out) = (Vec::new(), Vec::new(), Vec::new());
    let mut value = Vec::new();
    let mut written = 0u64;
    loop {
        pa.clear();
        pb.clear();
        // Take the smaller term (both when equal); put back the other row.
        let (from_a, from_b) = match (ra.take(), rb.take()) {
            (None, None) => break,
            (Some(x), None) => (Some(x), None),
            (None, Some(y)) => (None, Some(y)),
            (Some(x), Some(y)) => match x.0.value().cmp(y.0.value()) {
                std::cmp::Ordering::Less => {
                    rb = Some(y);
                    (Some(x), None)
                }
                std::cmp::Ordering::Greater => {
                    ra = Some(x);
                    (None, Some(y))
                }
                std::cmp::Ordering::Equal => (Some(x), Some(y)),
            },
        };
        if let Some((_, v)) = &from_a {
            decode_postings(v.value(), &mut pa)?;
            ra = ia.next().transpose()?;
        }
        if let Some((_, v)) = &from_b {
            decode_postings(v.value(), &mut pb)?;
            rb = match ib.as_mut() {
                Some(i) => i.next().transpose()?,
                None => None,
            };
        }
        let one_side = from_a.is_none() || from_b.is_none();
        let Some((term, raw)) = from_a.or(from_b) else {
            break;
        };
        overlay(&pa, &pb, drop_tombstones, &mut out);
        if out.is_empty() {
            continue;
        }
        if one_side && out.len() == pa.len() + pb.len() {
            // Nothing was shadowed or dropped: the stored bytes are the merged value.
            c.insert(term.value(), raw.value())?;
        } else {
            encode_postings(&out, &mut value);
            c.insert(term.value(), value.as_slice())?;
        }
        written += out.len() as u64;
    }
    Ok(written)
}

/// Merges every run into one, dropping tombstones: the smallest, fastest form of the index.
/// Returns the postings left.
pub(in crate::store) fn compact(txn: &WriteTransaction) -> Result<u64> {
    let mut runs = read_runs(txn)?;
    while runs.len() >= 2 {
        merge_newest(txn, &mut runs)?;
    }
    if let [only] = runs.as_slice() {
        // A lone run may still hold tombstones from before it was alone.
        let id = next_id(&runs);
        let postings = merge_runs(txn, only.id, None, id, true)?;
        txn.delete_table(run_table(&run_name(only.id)))?;
        runs = vec![Run { id, postings }];
        if postings == 0 {
            txn.delete_table(run_table(&run_name(id)))?;
            runs.clear();
        }
    }
    write_runs(txn, &runs)?;
    Ok(runs.iter().map(|r| r.postings).sum())
}

/// Appends `(term, postings)` pairs of the v4–v11 layout (node ids), in term order, as the
/// oldest run, still in that layout: how the v8 → v9 migration brings segments over (the
/// v11 → v12 one then gives the nodes doc numbers).
pub(in crate::store) fn import_oldest_legacy_run(
    txn: &WriteTransaction,
    rows: impl Iterator<Item = Result<(Vec<u8>, Vec<LegacyPosting>)>>,
) -> Result<()> {
    let mut runs = read_runs(txn)?;
    let id = next_id(&runs);
    let name = run_name(id);
    let mut written = 0u64;
    {
        let mut table = txn.open_table(run_table(&name))?;
        let mut value = Vec::new();
        for row in rows {
            let (term, postings) = row?;
            if postings.is_empty() {
                continue;
            }
            encode_legacy_postings(&postings, &mut value);
            table.insert(term.as_slice(), value.as_slice())?;
            written += postings.len() as u64;
        }
    }
    if written == 0 {
        txn.delete_table(run_table(&name))?;
        return Ok(());
    }
    runs.insert(
        0,
        Run {
            id,
            postings: written,
        },
    );
    write_runs(txn, &runs)
}

/// Writes run `id` from `(term, postings)` rows in term order, leaving out empty ones; a
/// run that would be empty is not kept. Returns the postings written.
fn write_run(
    txn: &WriteTransaction,
    id: u64,
    rows: impl Iterator<Item = Result<(Vec<u8>, Vec<Posting>)>>,
) -> Result<u64> {
    let name = run_name(id);
    let mut table = txn.open_table(run_table(&name))?;
    let mut value = Vec::new();
    let mut written = 0u64;
    for row in rows {
        let (term, postings) = row?;
        if postings.is_empty() {
            continue;
        }
        encode_postings(&postings, &mut value);
        table.insert(term.as_slice(), value.as_slice())?;
        written += postings.len() as u64;
    }
    drop(table);
    if written == 0 {
        txn.delete_table(run_table(&name))?;
    }
    Ok(written)
}
