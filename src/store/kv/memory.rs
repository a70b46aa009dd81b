//! A [`ByteBackend`] in memory: the reference the store's tests run the byte arm on. Tables
//! are ordered maps; a read transaction holds the committed maps as they were when it
//! began; a write transaction changes its own copy (a table is copied when first written)
//! and swaps it in on commit; one write transaction at a time.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Condvar, Mutex};

use super::bytes::{ByteBackend, ByteRead, ByteWrite, Row, check_key};
use super::source::is_empty_range;
use crate::store::{Result, StoreError};

type Rows = BTreeMap<Vec<u8>, Vec<u8>>;
type Tables = BTreeMap<String, Arc<Rows>>;

fn lost() -> StoreError {
    StoreError::Io("the in-memory backend's lock was poisoned".into())
}

#[derive(Default)]
struct Shared {
    committed: Mutex<Arc<Tables>>,
    /// Whether a write transaction is open.
    writing: Mutex<bool>,
    released: Condvar,
}

/// Tables in memory, shared by every clone.
#[derive(Clone, Default)]
pub struct MemoryBackend(Arc<Shared>);

impl MemoryBackend {
    pub fn new() -> Self {
        Self::default()
    }
}

impl ByteBackend for MemoryBackend {
    fn begin_read(&self) -> Result<Box<dyn ByteRead>> {
        let tables = self.0.committed.lock().map_err(|_| lost())?.clone();
        Ok(Box::new(Snapshot(tables)))
    }

    fn begin_write(&self) -> Result<Box<dyn ByteWrite>> {
        let mut writing = self.0.writing.lock().map_err(|_| lost())?;
        while *writing {
            writing = self.0.released.wait(writing).map_err(|_| lost())?;
        }
        *writing = true;
        drop(writing);
        let tables = match self.0.committed.lock() {
            Ok(t) => Tables::clone(&t),
            Err(_) => {
                release(&self.0);
                return Err(lost());
            }
        };
        Ok(Box::new(Writing {
            shared: self.0.clone(),
            tables,
        }))
    }
}

fn release(shared: &Shared) {
    if let Ok(mut w) = shared.writing.lock() {
        *w = false;
    }
    shared.released.notify_one();
}

fn get(tables: &Tables, table: &str, key: &[u8]) -> Option<Vec<u8>> {
    tables.get(table)?.get(key).cloned()
}

fn range(
    tables: &Tables,
    table: &str,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    rev: bool,
    limit: usize,
) -> Vec<Row> {
    let Some(rows) = tables.get(table) else {
        return Vec::new();
    };
    if is_empty_range(lo, hi) {
        return Vec::new();
    }
    let r = rows.range::<[u8], _>((lo, hi));
    let row = |(k, v): (&Vec<u8>, &Vec<u8>)| (k.clone(), v.clone());
    if rev {
        r.rev().take(limit).map(row).collect()
    } else {
        r.take(limit).map(row).collect()
    }
}

fn len(tables: &Tables, table: &str) -> u64 {
    tables.get(table).map_or(0, |t| t.len() as u64)
}

struct Snapshot(Arc<Tables>);

impl ByteRead for Snapshot {
    fn get(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(get(&self.0, table, key))
    }

    fn range(
        &self,
        table: &str,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        rev: bool,
        limit: usize,
    ) -> Result<Vec<Row>> {
        Ok(range(&self.0, table, lo, hi, rev, limit))
    }

    fn len(&self, table: &str) -> Result<u64> {
        Ok(len(&self.0, table))
    }

    fn list_tables(&self) -> Result<Vec<String>> {
        Ok(self.0.keys().cloned().collect())
    }
}

struct Writing {
    shared: Arc<Shared>,
    tables: Tables,
}

impl Drop for Writing {
    fn drop(&mut self) {
        release(&self.shared);
    }
}

impl ByteRead for Writing {
    fn get(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(get(&self.tables, table, key))
    }

    fn range(
        &self,
        table: &str,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        rev: bool,
        limit: usize,
    ) -> Result<Vec<Row>> {
        Ok(range(&self.tables, table, lo, hi, rev, limit))
    }

    fn len(&self, table: &str) -> Result<u64> {
        Ok(len(&self.tables, table))
    }

    fn list_tables(&self) -> Result<Vec<String>> {
        Ok(self.tables.keys().cloned().collect())
    }
}

impl ByteWrite for Writing {
    fn insert(&mut self, table: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(table, key)?;
        let rows = self.tables.entry(table.to_string()).or_default();
        Ok(Arc::make_mut(rows).insert(key.to_vec(), value.to_vec()))
    }

    fn remove(&mut self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.tables.get_mut(table) {
            Some(rows) if rows.contains_key(key) => Ok(Arc::make_mut(rows).remove(key)),
            _ => Ok(None),
        }
    }

    fn delete_table(&mut self, table: &str) -> Result<bool> {
        Ok(self.tables.remove(table).is_some())
    }

    fn commit(self: Box<Self>) -> Result<()> {
        let mut this = self;
        let tables = std::mem::take(&mut this.tables);
        *this.shared.committed.lock().map_err(|_| lost())? = Arc::new(tables);
        Ok(())
    }
}
