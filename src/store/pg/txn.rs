//! One transaction on one pooled connection: reads and writes of `kv_<name>` tables.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Bound;

use postgres::types::ToSql;

use super::{CHANGES_CHANNEL, Conn, PgBackend, READER_LOCK, WRITER_LOCK};
use crate::store::kv::bytes::{ByteRead, ByteWrite, Row, check_key};
use crate::store::{Result, StoreError};

/// The longest store table name: PostgreSQL names have at most 63 bytes, `kv_` included.
const MAX_NAME: usize = 60;

/// A transaction begun by [`PgBackend::begin_read`](super::ByteBackend::begin_read) or
/// `begin_write`. The trait object it is handed out as decides which calls it gets.
pub(super) struct PgTxn {
    backend: PgBackend,
    /// A read transaction holds [`READER_LOCK`] (shared, for the session) until it ends.
    reader: bool,
    state: RefCell<State>,
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
}

impl PgTxn {
    /// A transaction begun on `conn`; `reader` when it is a read transaction, which holds
    /// [`READER_LOCK`].
    pub(super) fn new(backend: PgBackend, conn: Conn, reader: bool) -> PgTxn {
        PgTxn {
            backend,
            reader,
            state: RefCell::new(State {
                conn: Some(conn),
                known: HashMap::new(),
                dirty: false,
                deleted: false,
                failed: false,
            }),
        }
    }

    /// Runs `f` on the open connection; a failure marks the transaction failed and comes
    /// back as a store error naming the URL.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut Conn, &mut HashMap<String, bool>) -> Result<T, postgres::Error>,
    ) -> Result<T> {
        let mut state = self.state.borrow_mut();
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
        f(conn, known).map_err(|e| {
            *failed = true;
            self.backend.error(&e)
        })
    }

    /// Whether store table `name` exists, by its registry row (once per transaction).
    fn exists(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        self.with(|conn, known| table_exists(conn, known, name))
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
    fn get(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if !self.exists(table)? {
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
            let create = format!(
                "CREATE TABLE IF NOT EXISTS {} (k bytea PRIMARY KEY, v bytea NOT NULL); \
                 INSERT INTO glassbox_tables (name) VALUES ('{table}') ON CONFLICT DO NOTHING",
                quoted(table)
            );
            self.with(|conn, known| {
                conn.client.batch_execute(&create)?;
                known.insert(table.to_owned(), true);
                Ok(())
            })?;
        }
        self.state.get_mut().dirty = true;
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
            self.state.get_mut().dirty = true;
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
        let state = self.state.get_mut();
        state.dirty = true;
        state.deleted = true;
        Ok(true)
    }

    fn commit(self: Box<Self>) -> Result<()> {
        let mut state = self.state.borrow_mut();
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
        let end = if self.reader {
            format!("ROLLBACK; SELECT pg_advisory_unlock_shared({READER_LOCK})")
        } else {
            "ROLLBACK".to_owned()
        };
        if let Some(mut conn) = self.state.get_mut().conn.take()
            && conn.client.batch_execute(&end).is_ok()
        {
            self.backend.give_back(conn);
        }
    }
}
