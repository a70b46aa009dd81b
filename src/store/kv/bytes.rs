//! The byte-level contract a store backend other than redb implements: named tables of
//! byte keys and byte values, ordered by the keys' bytes, read in snapshot transactions and
//! written in transactions that commit all or nothing, one writer at a time across every
//! process sharing the backend.
//!
//! The typed tables of `tables.rs` map onto it one to one: a table's name is its redb name,
//! a key is encoded so that byte order is the key's order (`u64` big-endian, fixed arrays,
//! `&str` and `&[u8]` as they are) and a value is its bytes (`()` empty, integers
//! little-endian as redb stores them).
//!
//! A key is at most [`MAX_KEY_BYTES`] long: an insert of a longer one fails with
//! [`StoreError::Invalid`] and changes nothing, in every byte backend (PostgreSQL cannot
//! index a much longer one). Values have no limit of their own.
//!
//! A backend shared by several instances may tell a follower when another one commits:
//! [`ByteBackend::listen`] and [`ByteBackend::wait_for_change`]; one that cannot only waits.

use std::ops::Bound;
use std::time::Duration;

use super::super::{Result, StoreError};

/// The longest key a byte backend stores, in bytes. PostgreSQL refuses a B-tree entry
/// larger than about a third of its 8 KiB page; this leaves room for its overhead.
pub const MAX_KEY_BYTES: usize = 2048;

/// Refuses a key longer than [`MAX_KEY_BYTES`], naming the table; what a backend's
/// [`ByteWrite::insert`] calls first.
pub fn check_key(table: &str, key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(StoreError::Invalid(format!(
            "a key of {} bytes for table {table} is longer than the {MAX_KEY_BYTES} bytes a \
             store key may have",
            key.len()
        )));
    }
    Ok(())
}

/// [`check_key`] of every key, so a batch with one long key reads nothing.
pub fn check_keys(table: &str, keys: &[&[u8]]) -> Result<()> {
    keys.iter().try_for_each(|key| check_key(table, key))
}

/// One key and its value.
pub type Row = (Vec<u8>, Vec<u8>);

/// A transaction that reads: every call sees the same snapshot, taken when it began.
pub trait ByteRead: Send {
    /// The value under `key`, or `None` (also when the table does not exist).
    fn get(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// The values under `keys`, in the order given: one for each key, `None` where it has
    /// none (also when the table does not exist); a key given twice is answered twice. A
    /// key longer than [`MAX_KEY_BYTES`] is refused ([`check_key`]) before anything is
    /// read. A backend that pays a round trip per call answers them all in a few calls;
    /// this one asks [`ByteRead::get`] once per key.
    fn get_many(&self, table: &str, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        check_keys(table, keys)?;
        keys.iter().map(|key| self.get(table, key)).collect()
    }
    /// Up to `limit` rows with keys within `(lo, hi)`, in key order, or reverse key order
    /// when `rev`. A table that does not exist has no rows. Callers page through a long
    /// range by calling again from just past the last key they were given.
    fn range(
        &self,
        table: &str,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        rev: bool,
        limit: usize,
    ) -> Result<Vec<Row>>;
    /// How many rows `table` holds (0 when it does not exist).
    fn len(&self, table: &str) -> Result<u64>;
    /// The names of the tables that exist, in name order.
    fn list_tables(&self) -> Result<Vec<String>>;
}

/// A transaction that writes. It sees its own changes. Dropping it without
/// [`ByteWrite::commit`] discards every change.
pub trait ByteWrite: ByteRead {
    /// Puts `value` under `key`, creating the table if needed; returns the value it replaced.
    /// A key longer than [`MAX_KEY_BYTES`] is refused ([`check_key`]).
    fn insert(&mut self, table: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Puts `value` under `key` like [`ByteWrite::insert`], without telling the value it
    /// replaced: a backend may then hold the row back and send it together with others,
    /// as long as every read of this transaction sees it and [`ByteWrite::commit`] stores
    /// it (or fails). A key longer than [`MAX_KEY_BYTES`] is refused at once.
    fn put(&mut self, table: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.insert(table, key, value).map(|_| ())
    }
    /// Removes `key`; returns the value it held.
    fn remove(&mut self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Drops `table` and its rows; `false` when it did not exist.
    fn delete_table(&mut self, table: &str) -> Result<bool>;
    /// Makes every change of this transaction durable and visible to later transactions,
    /// all or none.
    fn commit(self: Box<Self>) -> Result<()>;
}

/// A backend: where transactions begin.
pub trait ByteBackend: Send + Sync {
    fn begin_read(&self) -> Result<Box<dyn ByteRead>>;
    /// Waits until no other writer (in this or any other process) holds the backend.
    fn begin_write(&self) -> Result<Box<dyn ByteWrite>>;

    /// Starts watching for commits, so [`ByteBackend::wait_for_change`] also reports those
    /// made from now on; a follower calls it before each read it then keeps up to date.
    /// Cheap once watching. A backend that cannot tell does nothing.
    fn listen(&self) -> Result<()> {
        Ok(())
    }

    /// Waits up to `timeout` for a commit that changed something (by any instance) since
    /// the previous call or since [`ByteBackend::listen`]; `true` when there was one, or
    /// when some may have been missed. A backend that cannot tell sleeps `timeout` and
    /// answers `false`.
    fn wait_for_change(&self, timeout: Duration) -> Result<bool> {
        std::thread::sleep(timeout);
        Ok(false)
    }

    /// Whether [`ByteBackend::wait_for_change`] tells of commits (so a `false` from it means
    /// nothing changed), or cannot tell.
    fn tells_of_changes(&self) -> bool {
        false
    }
}
