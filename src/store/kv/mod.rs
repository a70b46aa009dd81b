//! What the store's code reads and writes through, whatever holds the tables: typed tables
//! and transactions with redb's semantics over two arms, a redb file (redb's own types,
//! nothing copied) or any [`ByteBackend`] (tables of ordered byte keys, see `bytes.rs`).
//!
//! A read transaction sees one snapshot; a write transaction sees its own changes and
//! commits all or nothing. Tables of a write transaction are created as they are opened in
//! redb and as they are first written in a byte backend; a read transaction sees a table that
//! does not exist as an error in redb ([`ReadTxn::open_table_if_exists`] tells the two apart)
//! and as an empty table in a byte backend.

pub mod bytes;
mod iter;
mod key;
#[cfg(test)]
pub(super) mod memory;
mod source;
mod table;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex};

use redb::{ReadableDatabase as _, ReadableTableMetadata as _, TableHandle as _};

pub use bytes::ByteBackend;
use bytes::{ByteRead, ByteWrite};
pub use iter::{Entry, ExtractIf, Guard, Range};
pub use key::{Key, TableDefinition};
use source::Source;
use table::ByteTable;
pub use table::{Appender, ReadTable, ReadableTable, Table};

use super::{Result, StoreError};

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError::Io(e.to_string())
            }
        }
    )*};
}
from_redb!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

/// Where the tables are.
pub enum Db {
    Redb(redb::Database),
    Bytes(Arc<dyn ByteBackend>),
}

/// One table's footprint in a redb file.
pub struct TableStat {
    pub name: String,
    pub rows: u64,
    pub stored: u64,
    pub metadata: u64,
    pub fragmented: u64,
}

/// What [`Db::compact`] did.
pub enum Compaction {
    Done,
    /// Another process was in a transaction on the file.
    Busy,
}

impl Db {
    /// Opens (creating if missing) the redb file at `path` in redb's multi-writer mode, with
    /// a page cache of `cache_bytes`.
    pub fn open_redb(path: &std::path::Path, cache_bytes: usize) -> Result<Self, String> {
        let mut b = redb::Database::builder();
        b.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter);
        b.set_cache_size(cache_bytes);
        b.create(path).map(Db::Redb).map_err(|e| match e {
            redb::DatabaseError::Storage(redb::StorageError::Corrupted(msg)) => {
                format!("the file is corrupt or not a glassbox store ({msg})")
            }
            other => other.to_string(),
        })
    }

    #[inline]
    pub fn begin_read(&self) -> Result<ReadTxn> {
        Ok(match self {
            Db::Redb(db) => ReadTxn(ReadArm::Redb(db.begin_read()?)),
            Db::Bytes(b) => ReadTxn(ReadArm::Bytes(b.begin_read()?)),
        })
    }

    /// Begins the one write transaction: waits while another (of any process) is open.
    #[inline]
    pub fn begin_write(&self) -> Result<WriteTxn> {
        Ok(match self {
            Db::Redb(db) => WriteTxn(WriteArm::Redb(db.begin_write()?)),
            Db::Bytes(b) => WriteTxn(WriteArm::Bytes(Mutex::new(b.begin_write()?))),
        })
    }

    /// Whether the tables are in a redb file.
    pub fn is_redb(&self) -> bool {
        matches!(self, Db::Redb(_))
    }

    /// redb's check of every page's checksum.
    pub fn check_integrity(&mut self) -> Result<bool> {
        match self {
            Db::Redb(db) => db
                .check_integrity()
                .map_err(|e| StoreError::Corrupt(e.to_string())),
            Db::Bytes(_) => Err(StoreError::Unsupported("an integrity check")),
        }
    }

    /// Moves the redb file's pages down and trims its end.
    pub fn compact(&mut self) -> Result<Compaction> {
        match self {
            Db::Redb(db) => match db.compact() {
                Ok(_) => Ok(Compaction::Done),
                Err(
                    redb::CompactionError::TransactionInProgress
                    | redb::CompactionError::EphemeralSavepointExists
                    | redb::CompactionError::PersistentSavepointExists,
                ) => Ok(Compaction::Busy),
                Err(redb::CompactionError::Storage(e)) => Err(e.into()),
                Err(e) => Err(StoreError::Io(e.to_string())),
            },
            Db::Bytes(_) => Err(StoreError::Unsupported("compacting")),
        }
    }

    /// Every table's footprint in the redb file, in name order.
    pub fn table_stats(&self) -> Result<Vec<TableStat>> {
        let Db::Redb(db) = self else {
            return Err(StoreError::Unsupported("table sizes"));
        };
        let r = db.begin_read()?;
        let mut out = Vec::new();
        for handle in r.list_tables()? {
            let name = handle.name().to_string();
            let t = r.open_untyped_table(handle)?;
            let s = t.stats()?;
            out.push(TableStat {
                name,
                rows: t.len()?,
                stored: s.stored_bytes(),
                metadata: s.metadata_bytes(),
                fragmented: s.fragmented_bytes(),
            });
        }
        Ok(out)
    }
}

/// A read transaction: every table it opens shows the snapshot taken when it began.
pub struct ReadTxn(ReadArm);

enum ReadArm {
    Redb(redb::ReadTransaction),
    Bytes(Box<dyn ByteRead>),
}

impl ReadTxn {
    /// Opens `def`; in redb a table never created is an error.
    #[inline]
    pub fn open_table<K: Key, V: redb::Value + 'static>(
        &self,
        def: TableDefinition<'_, K, V>,
    ) -> Result<ReadTable<'_, K, V>> {
        Ok(match &self.0 {
            ReadArm::Redb(r) => ReadTable::redb(r.open_table(def.redb())?),
            ReadArm::Bytes(b) => ReadTable::bytes(ByteTable {
                source: Source::Read(b.as_ref()),
                name: def.name().to_string(),
            }),
        })
    }

    /// Opens `def`, or `None` when redb has no such table (a byte backend shows it empty).
    pub fn open_table_if_exists<K: Key, V: redb::Value + 'static>(
        &self,
        def: TableDefinition<'_, K, V>,
    ) -> Result<Option<ReadTable<'_, K, V>>> {
        match &self.0 {
            ReadArm::Redb(r) => match r.open_table(def.redb()) {
                Ok(t) => Ok(Some(ReadTable::redb(t))),
                Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
                Err(e) => Err(e.into()),
            },
            ReadArm::Bytes(_) => self.open_table(def).map(Some),
        }
    }

    /// The names of the tables, in name order.
    pub fn list_tables(&self) -> Result<Vec<String>> {
        match &self.0 {
            ReadArm::Redb(r) => {
                let mut names: Vec<String> =
                    r.list_tables()?.map(|t| t.name().to_string()).collect();
                names.sort();
                Ok(names)
            }
            ReadArm::Bytes(b) => b.list_tables(),
        }
    }
}

/// A write transaction. Dropping it without [`WriteTxn::commit`] discards its changes.
pub struct WriteTxn(WriteArm);

// redb's side is held inline: boxing it would cost the redb arm an allocation each time.
#[allow(clippy::large_enum_variant)]
enum WriteArm {
    Redb(redb::WriteTransaction),
    Bytes(Mutex<Box<dyn ByteWrite>>),
}

impl WriteTxn {
    /// Opens `def` for reading and writing (in redb, creating it).
    #[inline]
    pub fn open_table<K: Key, V: redb::Value + 'static>(
        &self,
        def: TableDefinition<'_, K, V>,
    ) -> Result<Table<'_, K, V>> {
        Ok(match &self.0 {
            WriteArm::Redb(w) => Table::redb(w.open_table(def.redb())?),
            WriteArm::Bytes(b) => Table::bytes(ByteTable {
                source: Source::Write(b),
                name: def.name().to_string(),
            }),
        })
    }

    /// Drops table `def` and its rows; `false` when it did not exist.
    pub fn delete_table<K: Key, V: redb::Value + 'static>(
        &self,
        def: TableDefinition<'_, K, V>,
    ) -> Result<bool> {
        self.delete_table_named(def.name())
    }

    /// Drops the table called `name` and its rows, whatever its types.
    pub fn delete_table_named(&self, name: &str) -> Result<bool> {
        match &self.0 {
            WriteArm::Redb(w) => {
                let def: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new(name);
                Ok(w.delete_table(def)?)
            }
            WriteArm::Bytes(b) => Source::Write(b).write(|w| w.delete_table(name)),
        }
    }

    /// The names of the tables, in name order.
    pub fn list_tables(&self) -> Result<Vec<String>> {
        match &self.0 {
            WriteArm::Redb(w) => {
                let mut names: Vec<String> =
                    w.list_tables()?.map(|t| t.name().to_string()).collect();
                names.sort();
                Ok(names)
            }
            WriteArm::Bytes(b) => {
                let guard = b
                    .lock()
                    .map_err(|_| StoreError::Io("a store transaction was abandoned".into()))?;
                guard.list_tables()
            }
        }
    }

    /// Makes every change durable and visible, all or none.
    pub fn commit(self) -> Result<()> {
        match self.0 {
            WriteArm::Redb(w) => Ok(w.commit()?),
            WriteArm::Bytes(b) => b
                .into_inner()
                .map_err(|_| StoreError::Io("a store transaction was abandoned".into()))?
                .commit(),
        }
    }
}
