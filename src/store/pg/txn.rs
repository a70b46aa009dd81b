//! One transaction on one pooled connection: reads and writes of `kv_<name>` tables.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

use postgres::types::ToSql;

use super::{CHANGES_CHANNEL, Conn, PgBackend, READER_LOCK, WRITER_LOCK, in_place};
use crate::store::kv::bytes::{ByteRead, ByteWrite, Row, check_key, check_keys};
use crate::store::{Result, StoreError};

/// The longest store table name: PostgreSQL names have at most 63 bytes, `kv_` included.
const MAX_NAME: usize = 60;

/// The most rows of one table [`ByteWrite::put`] holds back before sending them, in one
/// statement.
const BATCH_ROWS: usize = 5000;
/// The most bytes (keys and values) of one table held back before sending them.
const BATCH_BYTES: usize = 4 << 20;

/// A transaction begun by [`PgBackend::begin_read`](super::ByteBackend::begin_read) or
/// `begin_write`. The trait object it is handed out as decides which calls it gets.
pub(super) struct PgTxn {
    backend: PgBackend,
    /// A read transaction holds [`READER_LOCK`] (shared, for the session) until it ends.
    reader: bool,
    state: Mutex<State>,
}

struct State {
    /// `None` once the transaction has ended.
    conn: Option<Conn>,
    /// Which tables exist, as this transaction has seen them.
    known: HashMap<String, bool>,
    /// Whether a write changed anything (a commit then notifies followers).
    dirty: bool,
    /// Whether a table was deleted (a commit then drops the emptied tables).
    deleted: bool,
    /// Whether a statement failed: PostgreSQL has then aborted the transaction, and a
    /// commit must not report success.
    failed: bool,
    /// Rows put but not yet sent, by table: sent before any statement on their table, and
    /// all of them before the commit.
    pending: HashMap<String, Pending>,
}

/// The rows of one table held back by [`ByteWrite::put`]: the last value put under each
/// key, and the bytes they take.
#[derive(Default)]
struct Pending {
    rows: BTreeMap<Vec<u8>, Vec<u8>>,
    bytes: usize,
}

impl PgTxn {
    /// A transaction begun on `conn`; `reader` when it is a read transaction, which holds
    /// [`READER_LOCK`].
    pub(super) fn new(backend: PgBackend, conn: Conn, reader: bool) -> PgTxn {
        PgTxn {
            backend,
            reader,
            state: Mutex::new(State {
                conn: Some(conn),
                known: HashMap::new(),
                dirty: false,
                deleted: false,
                failed: false,
                pending: HashMap::new(),
            }),
        }
    }

    /// The transaction's state (a panic while it was held leaves it as it was).
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the open connection; a failure marks the transaction failed and comes
    /// back as a store error naming the URL.
    fn with<T: Send>(
        &self,
        f: impl FnOnce(&mut Conn, &mut HashMap<String, bool>) -> Result<T, postgres::Error> + Send,
    ) -> Result<T> {
        let mut state = self.state();
        let State {
            conn,
            known,
            failed,
            ..
        } = &mut *state;
        let Some(conn) = conn.as_mut() else {
            return Err(StoreError::Io(format!(
                "postgres {}: the transaction has ended",
                self.backend.url()
            )));
        };
        in_place(|| f(conn, known)).map_err(|e| {
            *failed = true;
            self.backend.error(&e)
        })
    }

    /// Whether store table `name` exists, by its registry row (once per transaction), after
    /// sending the rows put into it and held back.
    fn exists(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        self.flush(name)?;
        self.with(|conn, known| table_exists(conn, known, name))
    }

    /// The value held back under `key` of `table`, if it was put and not yet sent.
    fn held_back(&self, table: &str, key: &[u8]) -> Option<Vec<u8>> {
        self.state()
            .pending
            .get(table)
            .and_then(|p| p.rows.get(key).cloned())
    }

    /// Whether store table `name` exists on the server (rows held back for it are not sent:
    /// a point read answers them from memory).
    fn exists_on_server(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        self.with(|conn, known| table_exists(conn, known, name))
    }

    /// Creates store table `name` (already checked) unless it exists.
    fn create(&self, name: &str) -> Result<()> {
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {} (k bytea PRIMARY KEY, v bytea NOT NULL); \
             INSERT INTO glassbox_tables (name) VALUES ('{name}') ON CONFLICT DO NOTHING",
            quoted(name)
        );
        self.with(|conn, known| {
            if table_exists(conn, known, name)? {
                return Ok(());
            }
            conn.client.batch_execute(&create)?;
            known.insert(name.to_owned(), true);
            Ok(())
        })
    }

    /// Sends the rows put into `table` and held back, creating the table if needed, in one
    /// statement. Rows that fail to arrive fail the transaction.
    fn flush(&self, table: &str) -> Result<()> {
        let Some(pending) = self.state().pending.remove(table) else {
            return Ok(());
        };
        self.create(table)?;
        let sql = format!(
            "INSERT INTO {} (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) \
             ON CONFLICT (k) DO UPDATE SET v = excluded.v",
            quoted(table)
        );
        let (keys, values): (Vec<&[u8]>, Vec<&[u8]>) = pending
            .rows
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
            .unzip();
        self.with(|conn, _| {
            let statement = conn.statement(&sql)?;
            conn.client.execute(&statement, &[&keys, &values])?;
            Ok(())
        })
    }

    /// Sends every row held back, table by table in name order.
    fn flush_all(&self) -> Result<()> {
        let mut tables: Vec<String> = self.state().pending.keys().cloned().collect();
        tables.sort();
        for table in tables {
            self.flush(&table)?;
        }
        Ok(())
    }
}

fn table_exists(
    conn: &mut Conn,
    known: &mut HashMap<String, bool>,
    name: &str,
) -> Result<bool, postgres::Error> {
    if let Some(&exists) = known.get(name) {
        return Ok(exists);
    }
    let statement =
        conn.statement("SELECT EXISTS (SELECT 1 FROM glassbox_tables WHERE name = $1)")?;
    let exists: bool = conn.client.query_one(&statement, &[&name])?.try_get(0)?;
    known.insert(name.to_owned(), exists);
    Ok(exists)
}

/// Refuses a table name that is not 1 to 60 of `[a-z0-9_]`, so every name can be quoted
/// into SQL as it is.
pub(super) fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "table name {name:?} is not 1 to {MAX_NAME} of a-z, 0-9 and _"
        )))
    }
}

/// The quoted PostgreSQL table of store table `name` (already checked).
fn quoted(name: &str) -> String {
    format!("\"kv_{name}\"")
}

/// The `SELECT` of [`ByteRead::range`] for these bounds: placeholders `$1`, `$2` for the
/// bounds present, then the limit.
pub(super) fn range_sql(name: &str, lo: Bound<()>, hi: Bound<()>, rev: bool) -> String {
    let mut sql = format!("SELECT k, v FROM {}", quoted(name));
    let mut conds = Vec::new();
    let mut n = 0;
    for (bound, incl, excl) in [(lo, ">=", ">"), (hi, "<=", "<")] {
        let op = match bound {
            Bound::Included(()) => incl,
            Bound::Excluded(()) => excl,
            Bound::Unbounded => continue,
        };
        n += 1;
        conds.push(format!("k {op} ${n}"));
    }
    if !conds.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conds.join(" AND "));
    }
    sql.push_str(if rev {
        " ORDER BY k DESC"
    } else {
        " ORDER BY k"
    });
    sql.push_str(&format!(" LIMIT ${}", n + 1));
    sql
}

fn shape(bound: Bound<&[u8]>) -> Bound<()> {
    bound.map(|_| ())
}

impl ByteRead for PgTxn {
    /// A row held back is answered from memory; any other from the server, without sending
    /// what is held back (a held-back row never changes another key).
    fn get(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(v) = self.held_back(table, key) {
            return Ok(Some(v));
        }
        if !self.exists_on_server(table)? {
            return Ok(None);
        }
        let sql = format!("SELECT v FROM {} WHERE k = $1", quoted(table));
        self.with(|conn, _| {
            let statement = conn.statement(&sql)?;
            match conn.client.query_opt(&statement, &[&key])? {
                Some(row) => Ok(Some(row.try_get(0)?)),
                None => Ok(None),
            }
        })
    }

    /// One `SELECT … WHERE k = ANY($1)` per [`BATCH_ROWS`] keys or [`BATCH_BYTES`] of keys;
    /// rows held back are answered from memory, as [`ByteRead::get`] does.
    fn get_many(&self, table: &str, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        check_keys(table, keys)?;
        check_name(table)?;
        let held: HashMap<&[u8], Vec<u8>> = {
            let state = self.state();
            match state.pending.get(table) {
                Some(p) => keys
                    .iter()
                    .filter_map(|k| Some((*k, p.rows.get(*k)?.clone())))
                    .collect(),
                None => HashMap::new(),
            }
        };
        if held.len() == keys.len() {
            return Ok(keys.iter().map(|k| held.get(k).cloned()).collect());
        }
        if keys.is_empty() || !self.exists_on_server(table)? {
            return Ok(keys.iter().map(|k| held.get(k).cloned()).collect());
        }
        // How many times each key is asked for: its last answer takes the value, the
        // earlier ones a copy.
        let mut wanted: HashMap<&[u8], usize> = HashMap::with_capacity(keys.len());
        for key in keys {
            *wanted.entry(key).or_default() += 1;
        }
        let distinct: Vec<&[u8]> = {
            let mut seen = std::collections::HashSet::with_capacity(wanted.len());
            keys.iter()
                .copied()
                .filter(|k| !held.contains_key(k) && seen.insert(*k))
                .collect()
        };
        let sql = format!(
            "SELECT k, v FROM {} WHERE k = ANY($1::bytea[])",
            quoted(table)
        );
        let mut found: HashMap<Vec<u8>, Vec<u8>> = HashMap::with_capacity(distinct.len());
        let mut rest = distinct.as_slice();
        while !rest.is_empty() {
            let mut n = 0;
            let mut bytes = 0;
            while n < rest.len() && n < BATCH_ROWS && (n == 0 || bytes < BATCH_BYTES) {
                bytes += rest[n].len();
                n += 1;
            }
            let (chunk, tail) = rest.split_at(n);
            rest = tail;
            self.with(|conn, _| {
                let statement = conn.statement(&sql)?;
                for row in conn.client.query(&statement, &[&chunk])? {
                    found.insert(row.try_get(0)?, row.try_get(1)?);
                }
                Ok(())
            })?;
        }
        Ok(keys
            .iter()
            .map(|key| {
                if let Some(v) = held.get(key) {
                    return Some(v.clone());
                }
                let left = wanted.get_mut(key)?;
                *left -= 1;
                if *left == 0 {
                    found.remove(*key)
                } else {
                    found.get(*key).cloned()
                }
            })
            .collect())
    }

    fn range(
        &self,
        table: &str,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        rev: bool,
        limit: usize,
    ) -> Result<Vec<Row>> {
        if limit == 0 || !self.exists(table)? {
            return Ok(Vec::new());
        }
        let sql = range_sql(table, shape(lo), shape(hi), rev);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(3);
        for bound in [&lo, &hi] {
            if let Bound::Included(key) | Bound::Excluded(key) = bound {
                params.push(key);
            }
        }
        params.push(&limit);
        self.with(|conn, _| {
            let statement = conn.statement(&sql)?;
            let rows = conn.client.query(&statement, &params)?;
            rows.iter()
                .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                .collect()
        })
    }

    fn len(&self, table: &str) -> Result<u64> {
        if !self.exists(table)? {
            return Ok(0);
        }
        let sql = format!("SELECT count(*) FROM {}", quoted(table));
        self.with(|conn, _| {
            let statement = conn.statement(&sql)?;
            let count: i64 = conn.client.query_one(&statement, &[])?.try_get(0)?;
            Ok(u64::try_from(count).unwrap_or(0))
        })
    }

    fn list_tables(&self) -> Result<Vec<String>> {
        self.flush_all()?;
        self.with(|conn, _| {
            let statement =
                conn.statement("SELECT name FROM glassbox_tables ORDER BY name COLLATE \"C\"")?;
            let rows = conn.client.query(&statement, &[])?;
            rows.iter().map(|row| row.try_get(0)).collect()
        })
    }
}

impl ByteWrite for PgTxn {
    fn insert(&mut self, table: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(table, key)?;
        if !self.exists(table)? {
            self.create(table)?;
        }
        self.state
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .dirty = true;
        let sql = format!(
            "WITH old AS (SELECT v FROM {t} WHERE k = $1), \
             up AS (INSERT INTO {t} (k, v) VALUES ($1, $2) \
                    ON CONFLICT (k) DO UPDATE SET v = excluded.v) \
             SELECT v FROM old",
            t = quoted(table)
        );
        self.with(|conn, _| {
            let statement = conn.statement(&sql)?;
            match conn.client.query_opt(&statement, &[&key, &value])? {
                Some(row) => Ok(Some(row.try_get(0)?)),
                None => Ok(None),
            }
        })
    }

    fn put(&mut self, table: &str, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(table, key)?;
        check_name(table)?;
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if state.conn.is_none() {
            return Err(StoreError::Io(format!(
                "postgres {}: the transaction has ended",
                self.backend.url()
            )));
        }
        state.dirty = true;
        let pending = state.pending.entry(table.to_owned()).or_default();
        let size = key.len() + value.len();
        match pending.rows.insert(key.to_vec(), value.to_vec()) {
            Some(old) => pending.bytes = pending.bytes - key.len() - old.len() + size,
            None => pending.bytes += size,
        }
        if pending.rows.len() >= BATCH_ROWS || pending.bytes >= BATCH_BYTES {
            self.flush(table)?;
        }
        Ok(())
    }

    fn remove(&mut self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if !self.exists(table)? {
            return Ok(None);
        }
        let sql = format!("DELETE FROM {} WHERE k = $1 RETURNING v", quoted(table));
        let old = self.with(|conn, _| {
            let statement = conn.statement(&sql)?;
            match conn.client.query_opt(&statement, &[&key])? {
                Some(row) => Ok(Some(row.try_get::<_, Vec<u8>>(0)?)),
                None => Ok(None),
            }
        })?;
        if old.is_some() {
            self.state
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .dirty = true;
        }
        Ok(old)
    }

    fn delete_table(&mut self, table: &str) -> Result<bool> {
        if !self.exists(table)? {
            return Ok(false);
        }
        // Rows and registry entry go now, under MVCC, so readers never wait for this
        // writer; the emptied table itself is dropped after the commit.
        let delete = format!(
            "DELETE FROM {}; DELETE FROM glassbox_tables WHERE name = '{table}'",
            quoted(table)
        );
        self.with(|conn, known| {
            conn.client.batch_execute(&delete)?;
            known.insert(table.to_owned(), false);
            Ok(())
        })?;
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        state.dirty = true;
        state.deleted = true;
        Ok(true)
    }

    fn commit(self: Box<Self>) -> Result<()> {
        in_place(|| {
            // A failure marks the transaction failed: it is rolled back below.
            let _ = self.flush_all();
            let mut state = self.state();
            let Some(mut conn) = state.conn.take() else {
                return Err(StoreError::Io(format!(
                    "postgres {}: the transaction has ended",
                    self.backend.url()
                )));
            };
            if state.failed {
                if conn.client.batch_execute("ROLLBACK").is_ok() {
                    self.backend.give_back(conn);
                }
                return Err(StoreError::Io(format!(
                    "postgres {}: a statement of this transaction failed, so nothing was committed",
                    self.backend.url()
                )));
            }
            let sql = if state.dirty {
                format!("NOTIFY {CHANGES_CHANNEL}; COMMIT")
            } else {
                "COMMIT".to_owned()
            };
            match conn.client.batch_execute(&sql) {
                Ok(()) => {
                    if state.deleted {
                        drop_deleted_tables(&mut conn);
                    }
                    self.backend.give_back(conn);
                    Ok(())
                }
                Err(e) => {
                    if !conn.client.is_closed() && conn.client.batch_execute("ROLLBACK").is_ok() {
                        self.backend.give_back(conn);
                    }
                    Err(self.backend.error(&e))
                }
            }
        })
    }
}

/// Drops the `kv_` tables no registry row names (those [`ByteWrite::delete_table`] emptied),
/// holding the writer lock so no writer is creating one of them meanwhile, and only when no
/// read transaction is open on the database ([`READER_LOCK`] taken exclusively without
/// waiting): a reader's snapshot may predate the delete and still show the table. Tables
/// left are dropped after a later delete.
fn drop_deleted_tables(conn: &mut Conn) {
    let sql = format!(
        "BEGIN; SELECT pg_advisory_xact_lock({WRITER_LOCK}); SET LOCAL lock_timeout = '100ms'; \
         DO $$ DECLARE t text; BEGIN \
           IF NOT pg_try_advisory_xact_lock({READER_LOCK}) THEN RETURN; END IF; \
           FOR t IN SELECT c.relname FROM pg_class c \
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' \
               AND c.relname LIKE 'kv\\_%' \
               AND NOT EXISTS (SELECT 1 FROM glassbox_tables g WHERE 'kv_' || g.name = c.relname) \
           LOOP EXECUTE format('DROP TABLE %I', t); END LOOP; \
         END $$; \
         COMMIT"
    );
    if let Err(e) = conn.client.batch_execute(&sql) {
        tracing::debug!(error = %e, "deleted tables left for a later commit");
        let _ = conn.client.batch_execute("ROLLBACK");
    }
}

impl Drop for PgTxn {
    /// Ends a transaction that was not committed: its changes are discarded and the
    /// connection goes back to the pool (or is closed when the rollback fails).
    fn drop(&mut self) {
        in_place(|| {
            let end = if self.reader {
                format!("ROLLBACK; SELECT pg_advisory_unlock_shared({READER_LOCK})")
            } else {
                "ROLLBACK".to_owned()
            };
            if let Some(mut conn) = self
                .state
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .conn
                .take()
                && conn.client.batch_execute(&end).is_ok()
            {
                self.backend.give_back(conn);
            }
        })
    }
}
