//! Copying a whole store into another, whatever holds each (a redb file, PostgreSQL, memory):
//! every table row by row through the typed tables, so each backend gets keys in its own
//! encoding, in write transactions of bounded size.

use std::collections::BTreeMap;

use super::kv::{Key, ReadTxn, ReadableTable, TableDefinition};
use super::tables::*;
use super::*;

/// Rows a copy commits at most in one write transaction.
const BATCH_ROWS: usize = 5_000;

/// Bytes of keys and values a copy commits at most in one write transaction (a row larger
/// than this is committed alone).
const BATCH_BYTES: usize = 8 << 20;

/// The prefix of the search index's run tables (`search/postings.rs`).
const RUN_PREFIX: &str = "search_run_";

/// A run table of the search index: term → postings.
fn run_table(name: &str) -> TableDefinition<'_, &'static [u8], &'static [u8]> {
    TableDefinition::new(name)
}

impl Store {
    /// Copies every table of this store, rows as they are, into `target`, which must hold
    /// no session and no node (a store just created). Reads one snapshot of this store;
    /// writes in transactions of at most `BATCH_ROWS` rows or `BATCH_BYTES` bytes, and
    /// calls `progress(table, rows copied of it so far)` after each. A row `target` already
    /// has under the same key (its schema version in `meta`) is replaced. Nothing is
    /// journalled: the target's journal becomes this store's. Returns how many rows each
    /// table had, by name, empty tables included.
    ///
    /// A table this glassbox does not know is refused before anything is copied. A copy
    /// that fails part way leaves the tables committed so far in `target`.
    pub fn copy_into(
        &self,
        target: &Store,
        progress: impl FnMut(&str, u64),
    ) -> Result<BTreeMap<String, u64>> {
        self.copy_batched(target, progress, BATCH_ROWS, BATCH_BYTES)
    }

    /// [`Store::copy_into`] committing every `rows` rows or `bytes` bytes.
    fn copy_batched(
        &self,
        target: &Store,
        mut progress: impl FnMut(&str, u64),
        rows: usize,
        bytes: usize,
    ) -> Result<BTreeMap<String, u64>> {
        let from = self.schema_version()?;
        let to = target.schema_version()?;
        if from != to {
            return Err(StoreError::Invalid(format!(
                "cannot copy {} (schema version {from}) into {} (schema version {to})",
                self.path.display(),
                target.path.display()
            )));
        }
        {
            let r = target.read()?;
            let sessions = r.open_table(SESSIONS)?.len()?;
            let nodes = r.open_table(NODES)?.len()?;
            if sessions > 0 || nodes > 0 {
                return Err(StoreError::Invalid(format!(
                    "cannot copy into {}: it already holds {sessions} sessions and {nodes} \
                     nodes; copy into a new, empty store",
                    target.path.display()
                )));
            }
        }
        let r = self.read()?;
        let names = r.list_tables()?;
        if let Some(unknown) = names.iter().find(|name| !is_known(name)) {
            return Err(StoreError::Invalid(format!(
                "cannot copy {}: its table {unknown} is unknown to this glassbox",
                self.path.display()
            )));
        }
        let mut counts = BTreeMap::new();
        for name in &names {
            let mut copy = TableCopy {
                from: &r,
                target,
                progress: &mut progress,
                rows,
                bytes,
            };
            counts.insert(name.clone(), copy.by_name(name)?);
        }
        Ok(counts)
    }
}

/// Calls `$f` with the definition of table `$name`, or evaluates to `$unknown`.
macro_rules! with_table {
    ($name:expr, $f:expr, $unknown:expr) => {{
        let name: &str = $name;
        with_table!(@each name, $f, $unknown;
            META, RECORD_DICTS, SESSIONS, NODES, SESSION_HEADS, SESSION_NODES, EDGES_OUT, EDGES_IN,
            DECISION_POINTS, INSIGHTS, RUNS, SESSION_RUNS, RAW_STREAMS, RAW_CHUNKS, LIVE_NODES,
            SESSION_STREAMS, MEMORIES, MEMORY_SCOPES, MEMORY_VECTORS, MEMORY_COUNTERS, MEMORY_INDEX,
            LEARNING_EVENTS, LEARNING_EVENT_KEYS, LEARNING_EVENT_INDEX, LEARNINGS, CONCEPT_INDEX,
            LEARNING_EDGES, ACCESS_LOG, ACCESS_BY_SESSION, NLI_RESULTS, INGEST_QUEUE,
            INJECTION_CACHE, PROJECTION_CHECKPOINTS, TRANSCRIPT_CURSORS, SEARCH_POSTINGS,
            SEARCH_TERMS_V3, SEARCH_DOCS, SEARCH_PENDING, KNOWLEDGE_DOCS, KNOWLEDGE_CHUNKS, PAIR_JUDGEMENTS,
            JOURNAL, search::SEARCH_DOC_NODES)
    }};
    (@each $name:ident, $f:expr, $unknown:expr; $($def:expr),*) => {
        $(if $name == $def.name() {
            $f($def)
        } else)* if $name.starts_with(RUN_PREFIX) {
            $f(run_table($name))
        } else {
            $unknown
        }
    };
}

/// Whether this glassbox knows table `name` (its key and value types).
fn is_known(name: &str) -> bool {
    with_table!(name, |_| true, false)
}

/// One table's copy.
struct TableCopy<'a, P: FnMut(&str, u64)> {
    from: &'a ReadTxn,
    target: &'a Store,
    progress: &'a mut P,
    /// Rows and bytes of a batch, at most.
    rows: usize,
    bytes: usize,
}

impl<P: FnMut(&str, u64)> TableCopy<'_, P> {
    fn by_name(&mut self, name: &str) -> Result<u64> {
        with_table!(name, |def| self.copy(def), {
            Err(StoreError::Invalid(format!("unknown table {name}")))
        })
    }

    /// Copies the rows of `def`, committing a batch at a time; returns how many there were.
    fn copy<K: Key, V: redb::Value + 'static>(
        &mut self,
        def: TableDefinition<'_, K, V>,
    ) -> Result<u64> {
        let source = self.from.open_table(def)?;
        let mut rows = source.iter()?;
        let mut copied = 0u64;
        loop {
            let txn = self.target.db.begin_write()?;
            let mut done = true;
            {
                let mut t = txn.open_table(def)?;
                let (mut n, mut bytes) = (0usize, 0usize);
                for row in rows.by_ref() {
                    let (k, v) = row?;
                    let (k, v) = (k.value(), v.value());
                    bytes += K::as_bytes(&k).as_ref().len() + V::as_bytes(&v).as_ref().len();
                    t.put(k, v)?;
                    n += 1;
                    if n >= self.rows || bytes >= self.bytes {
                        done = false;
                        break;
                    }
                }
                copied += n as u64;
            }
            txn.commit()?;
            (self.progress)(def.name(), copied);
            if done {
                return Ok(copied);
            }
        }
    }
}

#[cfg(test)]
mod tests;
