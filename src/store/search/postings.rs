//! A term's postings are stored as a few segments rather than one row per (term, node): an
//! import adds tens of postings per node, and one B-tree insert each was half of the import
//! time. Segments are sorted runs of `node id ‖ tf` keyed by `term ‖ 0x00 ‖ first node id`;
//! they never overlap, so the segment holding a node is the last one starting at or before it.
//! Changes made in a write transaction are gathered in memory ([`PendingIndex`]) and merged
//! into the stored segments once, term by term, just before the transaction commits: a term
//! that a batch of a thousand nodes uses is read and written once instead of a thousand times,
//! and since the merge happens inside the same transaction as the node writes, the index still
//! never disagrees with the nodes (a crash loses both or neither).

use std::collections::HashMap;

use redb::{ReadableTable, WriteTransaction};

use super::super::tables::SEARCH_POSTINGS;
use super::{TermHasher, add_to_totals, posting_key};
use crate::store::{Result, StoreError};

/// Bytes of one posting inside a segment: node id, then term frequency (u32 LE).
const POSTING_BYTES: usize = 16 + 4;
/// Most postings a segment holds. Small enough that rewriting the last segment of a common
/// term on every batch stays cheap, large enough that a term has few rows.
const SEGMENT_POSTINGS: usize = 256;

type Posting = ([u8; 16], u32);

pub(super) fn decode_segment(v: &[u8], out: &mut Vec<Posting>) -> Result<()> {
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
pub(in crate::store) struct PendingIndex {
    terms: HashMap<Vec<u8>, Vec<Posting>, std::hash::BuildHasherDefault<TermHasher>>,
    pub(super) docs: i64,
    pub(super) tokens: i64,
}

impl PendingIndex {
    pub(super) fn op(&mut self, term: &[u8], node: [u8; 16], tf: u32) {
        match self.terms.get_mut(term) {
            Some(ops) => ops.push((node, tf)),
            None => {
                self.terms.insert(term.to_vec(), vec![(node, tf)]);
            }
        }
    }

    /// Merges every pending change into the stored segments and the totals.
    pub(in crate::store) fn apply(&mut self, txn: &WriteTransaction) -> Result<()> {
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
