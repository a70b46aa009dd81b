//! A byte transaction as tables see it, and the lazy pages a byte table is read in.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Mutex;

use super::bytes::{ByteRead, ByteWrite, Row};
use crate::store::{Result, StoreError};

/// The rows a range reads first; each further page is twice as large, up to [`PAGE_ROWS`],
/// so a walk that stops after a row or two does not fetch hundreds.
const FIRST_PAGE_ROWS: usize = 32;
/// The most rows one call to [`ByteRead::range`] asks for.
pub(super) const PAGE_ROWS: usize = 512;

/// The transaction a byte table belongs to.
#[derive(Clone, Copy)]
pub(super) enum Source<'t> {
    Read(&'t dyn ByteRead),
    Write(&'t Mutex<Box<dyn ByteWrite>>),
}

fn poisoned() -> StoreError {
    StoreError::Io("a store transaction was abandoned by a panic".into())
}

impl Source<'_> {
    fn read<T>(&self, f: impl FnOnce(&dyn ByteRead) -> Result<T>) -> Result<T> {
        match self {
            Source::Read(r) => f(*r),
            Source::Write(w) => {
                let guard = w.lock().map_err(|_| poisoned())?;
                let txn: &dyn ByteWrite = guard.as_ref();
                f(txn)
            }
        }
    }

    /// Runs `f` on the write transaction; a read transaction cannot be written.
    pub(super) fn write<T>(&self, f: impl FnOnce(&mut dyn ByteWrite) -> Result<T>) -> Result<T> {
        match self {
            Source::Read(_) => Err(StoreError::Io(
                "a read transaction cannot be written".into(),
            )),
            Source::Write(w) => {
                let mut guard = w.lock().map_err(|_| poisoned())?;
                f(guard.as_mut())
            }
        }
    }

    pub(super) fn get(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.read(|r| r.get(table, key))
    }

    pub(super) fn get_many(&self, table: &str, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.read(|r| r.get_many(table, keys))
    }

    pub(super) fn len(&self, table: &str) -> Result<u64> {
        self.read(|r| r.len(table))
    }

    pub(super) fn range(
        &self,
        table: &str,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        rev: bool,
        limit: usize,
    ) -> Result<Vec<Row>> {
        if is_empty_range(lo, hi) {
            return Ok(Vec::new());
        }
        self.read(|r| r.range(table, lo, hi, rev, limit))
    }
}

/// Whether no key can lie within `(lo, hi)`.
pub(super) fn is_empty_range(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
        _ => false,
    }
}

fn within_hi(key: &[u8], hi: &Bound<Vec<u8>>) -> bool {
    match hi {
        Bound::Included(h) => key <= h.as_slice(),
        Bound::Excluded(h) => key < h.as_slice(),
        Bound::Unbounded => true,
    }
}

fn within_lo(key: &[u8], lo: &Bound<Vec<u8>>) -> bool {
    match lo {
        Bound::Included(l) => key >= l.as_slice(),
        Bound::Excluded(l) => key > l.as_slice(),
        Bound::Unbounded => true,
    }
}

/// The rows of a key range of one byte table, fetched a page at a time as they are read,
/// from either end. Rows taken from one end narrow the range the other end reads, so the
/// two ends never hand out a row twice.
pub(super) struct Pager<'t> {
    source: Source<'t>,
    table: String,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    front: VecDeque<Row>,
    back: VecDeque<Row>,
    /// The backend has no rows left past what `front` / `back` hold.
    front_done: bool,
    back_done: bool,
    front_page: usize,
    back_page: usize,
}

impl<'t> Pager<'t> {
    pub(super) fn new(
        source: Source<'t>,
        table: &str,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
    ) -> Self {
        Self {
            source,
            table: table.to_string(),
            lo,
            hi,
            front: VecDeque::new(),
            back: VecDeque::new(),
            front_done: false,
            back_done: false,
            front_page: FIRST_PAGE_ROWS,
            back_page: FIRST_PAGE_ROWS,
        }
    }

    pub(super) fn source(&self) -> Source<'t> {
        self.source
    }

    pub(super) fn table(&self) -> &str {
        &self.table
    }

    /// The next row from the low end.
    pub(super) fn next_front(&mut self) -> Result<Option<Row>> {
        loop {
            if let Some(row) = self.front.pop_front() {
                if !within_hi(&row.0, &self.hi) {
                    self.front.clear();
                    self.front_done = true;
                    return Ok(None);
                }
                self.lo = Bound::Excluded(row.0.clone());
                return Ok(Some(row));
            }
            if self.front_done {
                return Ok(None);
            }
            let limit = self.front_page;
            self.front_page = (limit * 2).min(PAGE_ROWS);
            let page = self.source.range(
                &self.table,
                as_ref(&self.lo),
                as_ref(&self.hi),
                false,
                limit,
            )?;
            self.front_done = page.len() < limit;
            if page.is_empty() {
                return Ok(None);
            }
            self.front.extend(page);
        }
    }

    /// The next row from the high end.
    pub(super) fn next_back(&mut self) -> Result<Option<Row>> {
        loop {
            if let Some(row) = self.back.pop_front() {
                if !within_lo(&row.0, &self.lo) {
                    self.back.clear();
                    self.back_done = true;
                    return Ok(None);
                }
                self.hi = Bound::Excluded(row.0.clone());
                return Ok(Some(row));
            }
            if self.back_done {
                return Ok(None);
            }
            let limit = self.back_page;
            self.back_page = (limit * 2).min(PAGE_ROWS);
            let page =
                self.source
                    .range(&self.table, as_ref(&self.lo), as_ref(&self.hi), true, limit)?;
            self.back_done = page.len() < limit;
            if page.is_empty() {
                return Ok(None);
            }
            self.back.extend(page);
        }
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
