//! The store: one redb file shared by every glassbox process (TUI, `mcp`, importers) in
//! redb's multi-writer mode, or the same tables in another backend shared by several
//! instances ([`Store::open_backend`] over a [`kv::ByteBackend`]); the store's code reads and
//! writes both through `kv`. Writes go through [`Writer`], which journals every change so
//! followers in other processes can see it with [`Store::follow`].
//!
//! Every call here blocks its thread: a commit waits for the file's writer lock and an
//! fsync (a millisecond or more, longer while another process writes), and a read of a long
//! session decodes every node. So async code never calls the store directly: it commits
//! with [`Store::write_async`] and reads (or runs a synchronous helper that does both) with
//! [`Store::run_blocking`], which run the work on tokio's blocking pool and await it. Batch
//! what streams in (one commit per flush, never one per token); the synchronous API is for
//! threads that may block: the CLI's own calls, `spawn_blocking` closures, tests.

mod codec;
mod copy;
pub mod dict;
mod heads;
mod journal;
mod knowledge;
pub mod kv;
pub mod learning;
mod leases;
mod memory;
mod migrate;
mod pairs;
pub mod pg;
mod read;
mod recompress;
pub mod search;
mod stats;
pub mod streamed;
pub mod tables;
mod types;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kv::{Db, ReadTxn, ReadableTable};

pub use heads::{NodeHead, excerpt};
pub use knowledge::{DocKind, KnowledgeChunk, KnowledgeDoc};
pub use memory::{
    CoreSection, MemoryCounters, MemoryEntry, MemoryScope, MemoryTier, Provenance, StoredVector,
};
pub use migrate::SCHEMA_VERSION;
pub use pairs::PairJudgement;
pub use recompress::Recompressed;
pub use search::SearchHit;
pub use stats::{Compression, TableSize, is_search_table};
use tables::*;
pub use types::*;
pub use write::{EncodedChunk, EncodedNode, PreparedNode, PutOutcome, Writer};

/// Store failures, each with a message fit for a one-line error.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open store {path}: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error(
        "store {path} has schema version {found}, newer than this glassbox understands ({supported}); upgrade glassbox"
    )]
    TooNew {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("store is corrupt: {0}")]
    Corrupt(String),
    #[error("cannot encode value: {0}")]
    Encode(String),
    #[error("{0} not found")]
    NotFound(String),
    #[error("'{0}' matches more than one {1}; give more characters")]
    Ambiguous(String, &'static str),
    #[error("store I/O: {0}")]
    Io(String),
    /// A record the caller gave is not acceptable (an event with a missing payload key…).
    #[error("{0}")]
    Invalid(String),
    /// What only a redb file has (compacting, page checksums, table sizes), asked of a store
    /// on another backend.
    #[error("this store's backend does not support {0}")]
    Unsupported(&'static str),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

// ---- store work from async code -------------------------------------------------------

impl Store {
    /// [`Store::write`] on tokio's blocking pool: `f` runs in one write transaction on a
    /// blocking thread while the calling task waits without holding its executor thread.
    pub async fn write_async<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Writer<'_>) -> Result<T> + Send + 'static,
    {
        self.run_blocking(move |store| store.write(f)).await
    }

    /// Runs `f` with this store on tokio's blocking pool and awaits its result: how async
    /// code reads, or calls a synchronous helper that reads and writes. Outside a tokio
    /// runtime there is no executor to hold up, so `f` runs on the calling thread. A panic
    /// in `f` resumes in the caller.
    pub async fn run_blocking<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
        F: FnOnce(&Store) -> Result<T, E> + Send + 'static,
    {
        if tokio::runtime::Handle::try_current().is_err() {
            return f(self);
        }
        let store = self.clone();
        match tokio::task::spawn_blocking(move || f(&store)).await {
            Ok(out) => out,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(StoreError::Io(format!("the store task did not finish: {e}")).into()),
        }
    }
}

/// Counts of the main tables, for `doctor`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TableCounts {
    pub sessions: u64,
    pub nodes: u64,
    pub edges: u64,
    pub decision_points: u64,
    pub insights: u64,
    pub runs: u64,
    pub raw_streams: u64,
    pub raw_chunks: u64,
    pub memory: u64,
    pub learning_events: u64,
    pub transcript_cursors: u64,
    pub journal: u64,
    /// Nodes in the full-text index.
    pub search_docs: u64,
}

/// What [`Store::compact`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compacted {
    /// The file went from `before` to `after` bytes.
    Done { before: u64, after: u64 },
    /// Another process was reading or writing the store: nothing was moved. Try later.
    Busy,
}

/// A handle on the store: a redb file, or a [`kv::ByteBackend`]. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    db: Arc<Db>,
    /// The file, or for a byte backend the label it was opened with.
    path: PathBuf,
    /// The dictionary new node records are compressed with, if the store has one.
    dict: Arc<std::sync::RwLock<Option<Arc<dict::RecordDict>>>>,
    /// [`dict::misses`] when this store last took in its dictionaries.
    dicts_seen: Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// JSON bodies up to this many bytes are stored as they are (`codec.rs`): compressing them
/// saves little.
const COMPRESS_ABOVE: usize = 200;
/// zstd's fastest level, for records with or without a dictionary (`codec.rs`, `dict.rs`):
/// importing is bound by the encoding thread, and higher levels gain little on short
/// records.
const ZSTD_LEVEL: i32 = 1;

/// redb's own page cache. Reads go through the kernel's page cache as well, so a large one
/// buys little and shows as resident memory in every process (redb's default is 1 GiB).
/// Processes that read a screenful at a time open with less ([`Store::open_with_cache`]).
pub const CACHE_BYTES: usize = 256 << 20;

impl Store {
    /// Opens (creating if missing) the store at `path`, migrating an older schema.
    /// A new file gets mode 0600.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with_cache(path, CACHE_BYTES)
    }

    /// [`Store::open`] with a page cache of `cache_bytes`.
    pub fn open_with_cache(path: &Path, cache_bytes: usize) -> Result<Self> {
        let open_err = |reason: String| StoreError::Open {
            path: path.to_path_buf(),
            reason,
        };
        if !path.exists() {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .or_else(|e| {
                    // Another process may have created it between the check and the open.
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        std::fs::File::open(path)
                    } else {
                        Err(e)
                    }
                })
                .map_err(|e| open_err(e.to_string()))?;
        }
        let db = Db::open_redb(path, cache_bytes).map_err(open_err)?;
        Self::start(db, path.to_path_buf())
    }

    /// Opens the store held by `backend` (creating its tables if it holds none, migrating an
    /// older schema), as [`Store::open`] does a file. `label` names it in messages and is
    /// what [`Store::path`] returns.
    pub fn open_backend(backend: Arc<dyn kv::ByteBackend>, label: String) -> Result<Self> {
        Self::start(Db::Bytes(backend), PathBuf::from(label))
    }

    fn start(db: Db, path: PathBuf) -> Result<Self> {
        let store = Self {
            db: Arc::new(db),
            path,
            dict: Arc::default(),
            dicts_seen: Arc::new(dict::misses().into()),
        };
        migrate::ensure_schema(&store)?;
        store.set_record_dict(dict::load(&store.db)?);
        store.settle_orphans()?;
        Ok(store)
    }

    /// The dictionary new node records are compressed with ([`dict::DictFeed`] trains one).
    pub fn record_dict(&self) -> Option<Arc<dict::RecordDict>> {
        self.dict.read().ok().and_then(|d| d.clone())
    }

    fn set_record_dict(&self, dict: Option<Arc<dict::RecordDict>>) {
        if let Ok(mut d) = self.dict.write() {
            *d = dict;
        }
    }

    /// The store file, or the label a byte backend was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs redb's integrity check (checksums of every page). Needs the only handle.
    pub fn check_integrity(&mut self) -> Result<bool> {
        if !self.db.is_redb() {
            return Err(StoreError::Unsupported("an integrity check"));
        }
        let db = Arc::get_mut(&mut self.db)
            .ok_or_else(|| StoreError::Io("integrity check needs exclusive access".into()))?;
        db.check_integrity()
    }

    /// Gives the file's free pages back: redb moves pages down and trims the file's end.
    /// Whether this is the only handle on the store in this process (what
    /// [`Store::compact`] needs).
    pub fn is_only_handle(&self) -> bool {
        Arc::strong_count(&self.db) == 1
    }

    /// Needs the only handle in this process, and no other process in a transaction on
    /// the file (another process may have the store open, but not be reading or writing
    /// at that moment). Returns the file's size before and after.
    pub fn compact(&mut self) -> Result<Compacted> {
        if !self.db.is_redb() {
            return Err(StoreError::Unsupported("compacting"));
        }
        let before = self.file_bytes();
        let db = Arc::get_mut(&mut self.db).ok_or_else(|| {
            StoreError::Io("compacting needs the only handle on the store".into())
        })?;
        match db.compact()? {
            kv::Compaction::Done => Ok(Compacted::Done {
                before,
                after: self.file_bytes(),
            }),
            kv::Compaction::Busy => Ok(Compacted::Busy),
        }
    }

    /// The store file's size in bytes (0 if it cannot be read, and for a byte backend).
    pub fn file_bytes(&self) -> u64 {
        if !self.db.is_redb() {
            return 0;
        }
        std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0)
    }

    /// Bytes of the file no table uses: what [`Store::compact`] could give back (at most;
    /// partly used regions stay).
    pub fn free_bytes(&self) -> Result<u64> {
        let used: u64 = self.table_sizes()?.iter().map(TableSize::total).sum();
        Ok(self.file_bytes().saturating_sub(used))
    }

    /// Runs `f` in one write transaction and commits it; every change `f` makes is
    /// journalled. Nothing is written if `f` fails.
    pub fn write<T>(&self, f: impl FnOnce(&mut Writer<'_>) -> Result<T>) -> Result<T> {
        let txn = self.db.begin_write()?;
        if let Some(misses) = self.looks_for_dicts() {
            dict::refresh(&txn.open_table(tables::RECORD_DICTS)?)?;
            self.saw_dicts(misses);
        }
        let next_seq = {
            let journal = txn.open_table(JOURNAL)?;
            journal.last()?.map(|(k, _)| k.value() + 1).unwrap_or(1)
        };
        let mut w = Writer {
            txn: &txn,
            next_seq,
            index: search::PendingIndex::default(),
            dict: self.record_dict(),
            new_dict: None,
        };
        let t0 = std::time::Instant::now();
        let out = f(&mut w)?;
        let t1 = std::time::Instant::now();
        // Postings gathered by the puts and deletes are merged in the same transaction.
        w.index.apply(&txn)?;
        let t2 = std::time::Instant::now();
        let new_dict = w.new_dict.take();
        txn.commit()?;
        if new_dict.is_some() {
            self.set_record_dict(new_dict);
        }
        tracing::debug!(
            puts_ms = (t1 - t0).as_millis() as u64,
            index_ms = (t2 - t1).as_millis() as u64,
            commit_ms = t2.elapsed().as_millis() as u64,
            "store write"
        );
        Ok(out)
    }

    /// Whether a transaction starts by taking in the dictionaries another process added to
    /// the store: every transaction of a redb file (a lookup in a table of one or two rows),
    /// and on a byte backend the first after a record named one not known here (that read
    /// failed; the next one finds it). `Some` holds the count of misses to note once the
    /// dictionaries are taken in ([`Store::saw_dicts`]).
    fn looks_for_dicts(&self) -> Option<u64> {
        let misses = dict::misses();
        (self.db.is_redb() || misses != self.dicts_seen.load(std::sync::atomic::Ordering::Relaxed))
            .then_some(misses)
    }

    fn saw_dicts(&self, misses: u64) {
        self.dicts_seen
            .store(misses, std::sync::atomic::Ordering::Relaxed);
    }

    /// A read transaction, with the store's new dictionaries taken in
    /// ([`Store::looks_for_dicts`]).
    fn read(&self) -> Result<ReadTxn> {
        let txn = self.db.begin_read()?;
        if let Some(misses) = self.looks_for_dicts() {
            if let Some(t) = txn.open_table_if_exists(tables::RECORD_DICTS)? {
                dict::refresh(&t)?;
            }
            self.saw_dicts(misses);
        }
        Ok(txn)
    }

    pub fn schema_version(&self) -> Result<u32> {
        let r = self.read()?;
        migrate::read_version(&r)
    }
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
