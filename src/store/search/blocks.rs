//! How a run of the index lays out its `(term, postings)` entries in its table.
//!
//! Schema v15 on, a run is written as *blocks*: consecutive entries, in term order, packed
//! into one value of about [`BLOCK_BYTES`] and keyed by the block's first term. A term is
//! found by reading the last block whose first term is not after it (`range(..=term)`, read
//! backwards) and scanning that block. Each entry is `varint(term length) ‖ term ‖
//! varint(postings length) ‖ postings`, the postings encoded as `postings.rs` says.
//!
//! Why: a redb insert costs about the same whatever the row's size, and a run holds one row
//! per distinct term. The last write of a model's turn of megabytes, with a hundred thousand
//! distinct words, inserted a hundred thousand rows (half of that write); as blocks, a couple
//! of hundred. Merges and imports write and read runs the same way, so the index's share of
//! every write transaction shrinks alike. A lookup reads one block instead of one row: a few
//! kilobytes, scanned in microseconds.
//!
//! Runs written before v15 hold one row per term. The list of runs in `meta` says which
//! layout each run has ([`Layout`]), so both are read; merges write blocks, and
//! `doctor --compact` rewrites every run as one.

use std::ops::Range as Span;

use crate::store::kv::{Appender, Entry, Range, ReadableTable};
use crate::store::{Result, StoreError};

/// Most bytes of a block (unless one entry alone is larger): with its key (a term, at most
/// 64 bytes) and the leaf's header it fits one 4 KiB page of redb, so a lookup reads one
/// page, and a block just over a page does not take a page of twice the size.
pub(super) const BLOCK_BYTES: usize = 4000;

/// How a run's table holds its entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::store) enum Layout {
    /// One row per term: `term → postings` (schema v9 to v14).
    Rows,
    /// Entries packed into blocks keyed by their first term (schema v15 on).
    Blocks,
}

fn corrupt() -> StoreError {
    StoreError::Corrupt("search index: malformed block of a run".into())
}

/// Appends `v` as a varint: seven bits a byte, low first, the top bit set on all but the
/// last (the postings' encoding too, see `postings.rs`).
pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads the varint at `pos` and moves `pos` past it; `None` when it is cut short or
/// longer than 64 bits.
pub(super) fn get_varint(v: &[u8], pos: &mut usize) -> Option<u64> {
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

/// The entry of `block` that starts at `pos`: where its term and its postings lie, and where
/// the next entry starts.
fn entry_at(block: &[u8], pos: usize) -> Result<(Span<usize>, Span<usize>, usize)> {
    let mut at = pos;
    let field = |at: &mut usize| -> Result<Span<usize>> {
        let len = get_varint(block, at).ok_or_else(corrupt)?;
        let len = usize::try_from(len).map_err(|_| corrupt())?;
        let start = *at;
        let end = start.checked_add(len).filter(|&e| e <= block.len());
        let end = end.ok_or_else(corrupt)?;
        *at = end;
        Ok(start..end)
    };
    let term = field(&mut at)?;
    let postings = field(&mut at)?;
    Ok((term, postings, at))
}

/// The postings `block` holds for `term`, if any (its entries are in term order).
pub(super) fn find_in_block<'b>(block: &'b [u8], term: &[u8]) -> Result<Option<&'b [u8]>> {
    let mut pos = 0;
    while pos < block.len() {
        let (t, postings, next) = entry_at(block, pos)?;
        match block[t].cmp(term) {
            std::cmp::Ordering::Less => pos = next,
            std::cmp::Ordering::Equal => return Ok(Some(&block[postings])),
            std::cmp::Ordering::Greater => return Ok(None),
        }
    }
    Ok(None)
}

/// Calls `found` with the postings that the run in `table` holds for `term`, if it holds any.
pub(super) fn lookup(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    layout: Layout,
    term: &[u8],
    found: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    match layout {
        Layout::Rows => match table.get(term)? {
            Some(v) => found(v.value()),
            None => Ok(()),
        },
        Layout::Blocks => {
            let Some(row) = table.range(..=term)?.next_back() else {
                return Ok(());
            };
            let (_, block) = row?;
            match find_in_block(block.value(), term)? {
                Some(postings) => found(postings),
                None => Ok(()),
            }
        }
    }
}

/// A run's entries in term order, whatever its layout: [`RunCursor::current`] is the entry
/// the cursor is on, [`RunCursor::advance`] moves to the next.
pub(super) struct RunCursor<'t> {
    rows: Range<'t, &'static [u8], &'static [u8]>,
    layout: Layout,
    row: Option<Entry<'t, &'static [u8], &'static [u8]>>,
    /// In a block: where the current entry's term and postings lie, and where the next starts.
    entry: (Span<usize>, Span<usize>, usize),
}

impl<'t> RunCursor<'t> {
    /// A cursor on the run's first entry.
    pub(super) fn new(
        table: &'t impl ReadableTable<&'static [u8], &'static [u8]>,
        layout: Layout,
    ) -> Result<Self> {
        let mut c = Self {
            rows: table.iter()?,
            layout,
            row: None,
            entry: (0..0, 0..0, 0),
        };
        c.next_row()?;
        Ok(c)
    }

    /// Reads the next row of the table and, in a block, its first entry.
    fn next_row(&mut self) -> Result<()> {
        loop {
            self.row = self.rows.next().transpose()?;
            let Some((_, v)) = &self.row else {
                return Ok(());
            };
            if self.layout == Layout::Rows {
                return Ok(());
            }
            let block = v.value();
            if !block.is_empty() {
                self.entry = entry_at(block, 0)?;
                return Ok(());
            }
        }
    }

    /// The term and the encoded postings of the entry the cursor is on; `None` past the end.
    pub(super) fn current(&self) -> Option<(&[u8], &[u8])> {
        let (k, v) = self.row.as_ref()?;
        match self.layout {
            Layout::Rows => Some((k.value(), v.value())),
            Layout::Blocks => {
                let block = v.value();
                let (term, postings, _) = &self.entry;
                Some((&block[term.clone()], &block[postings.clone()]))
            }
        }
    }

    /// Moves to the next entry.
    pub(super) fn advance(&mut self) -> Result<()> {
        let Some((_, v)) = &self.row else {
            return Ok(());
        };
        if self.layout == Layout::Blocks {
            let block = v.value();
            let next = self.entry.2;
            if next < block.len() {
                self.entry = entry_at(block, next)?;
                return Ok(());
            }
        }
        self.next_row()
    }
}

/// Bytes of `n` as a varint.
fn varint_len(n: usize) -> usize {
    (usize::BITS - n.max(1).leading_zeros()).div_ceil(7) as usize
}

/// Writes a new run's entries, given in term order, as blocks through the table's appender:
/// a block is closed before an entry that would take it past [`BLOCK_BYTES`].
pub(super) struct BlockWriter<'a> {
    end: Appender<'a, &'static [u8], &'static [u8]>,
    first: Vec<u8>,
    block: Vec<u8>,
    /// The last term written (once one was), to refuse one out of order.
    last: Option<Vec<u8>>,
}

impl<'a> BlockWriter<'a> {
    pub(super) fn new(end: Appender<'a, &'static [u8], &'static [u8]>) -> Self {
        Self {
            end,
            first: Vec::new(),
            block: Vec::with_capacity(BLOCK_BYTES),
            last: None,
        }
    }

    /// Adds an entry; its term must come after every term written before.
    pub(super) fn push(&mut self, term: &[u8], postings: &[u8]) -> Result<()> {
        if let Some(last) = &self.last
            && term <= last.as_slice()
        {
            return Err(StoreError::Io(
                "search index: a run's terms were written out of order".into(),
            ));
        }
        let last = self.last.get_or_insert_with(Vec::new);
        last.clear();
        last.extend_from_slice(term);
        let entry =
            varint_len(term.len()) + term.len() + varint_len(postings.len()) + postings.len();
        if self.block.len() + entry > BLOCK_BYTES {
            self.flush()?;
        }
        if self.block.is_empty() {
            self.first.clear();
            self.first.extend_from_slice(term);
        }
        put_varint(&mut self.block, term.len() as u64);
        self.block.extend_from_slice(term);
        put_varint(&mut self.block, postings.len() as u64);
        self.block.extend_from_slice(postings);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.block.is_empty() {
            self.end
                .push(self.first.as_slice(), self.block.as_slice())?;
            self.block.clear();
        }
        Ok(())
    }

    /// Writes the last block and closes the appender.
    pub(super) fn close(mut self) -> Result<()> {
        self.flush()?;
        self.end.close()
    }
}

#[cfg(test)]
#[path = "blocks_tests.rs"]
mod tests;
