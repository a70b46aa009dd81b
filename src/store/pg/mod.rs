//! The store's tables in a PostgreSQL database, so several glassbox instances on several
//! machines can share one store: [`PgBackend`] implements the byte-level contract of
//! [`super::kv::bytes`].
//!
//! Layout, in the schema the connection's `search_path` names first (`public` unless the
//! URL's `options` say otherwise):
//! - `glassbox_layout (version integer primary key)`: one row, the layout's version. A
//!   database whose version is newer than [`LAYOUT_VERSION`] is refused.
//! - `glassbox_tables (name text primary key)`: the store tables that exist.
//! - `kv_<name> (k bytea primary key, v bytea not null)`: one per store table, created by
//!   the first insert. `bytea` compares bytewise, so the primary key's order is the order of
//!   the keys' bytes.
//!
//! A read transaction is `REPEATABLE READ READ ONLY`, its snapshot taken when it begins. A
//! write transaction first takes the transaction-scoped advisory lock [`WRITER_LOCK`], so
//! writers in every process wait for each other, and as no other writer can commit while it
//! holds the lock, each of its statements sees the previous writers' commits and its own
//! changes. A commit that changed anything sends `NOTIFY glassbox_changes` in the same
//! transaction; [`PgBackend::wait_for_change`] waits for one on a connection of its own.
//! Deleting a table deletes its rows and registry row, so readers never wait for the
//! writer and keep their snapshot; the emptied `kv_` table is dropped after the commit when
//! no read transaction is open (each holds [`READER_LOCK`] shared, taken before its
//! snapshot), else after a later delete.
//!
//! Every call blocks its thread (the `postgres` client runs each connection on a runtime of
//! its own), so async code calls it on tokio's blocking pool, as it does for redb: a
//! transaction is begun, used and dropped on a thread that may block. A [`PgBackend`] may be
//! dropped anywhere.

mod conn;
mod txn;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use postgres::config::{Host, SslMode};
use postgres::{Client, NoTls, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::kv::bytes::{ByteBackend, ByteRead, ByteWrite};
use super::{Result, StoreError};
pub use conn::{PasswordSources, redact_url};
use txn::PgTxn;

/// The version of the layout this glassbox reads and writes.
pub const LAYOUT_VERSION: i32 = 1;

/// The advisory lock every write transaction holds ("glassbox" in ASCII). Advisory locks
/// belong to one database, so stores in different databases do not wait for each other.
pub const WRITER_LOCK: i64 = 0x676c_6173_7362_6f78;

/// The advisory lock every read transaction holds shared, from before its snapshot is
/// taken until it ends ("glassbxr" in ASCII): tables a delete emptied are dropped only while
/// no reader holds it, as a reader's snapshot may still show them.
pub const READER_LOCK: i64 = 0x676c_6173_7362_7872;

/// The channel a commit notifies.
pub const CHANGES_CHANNEL: &str = "glassbox_changes";

/// How long a connection attempt may take when the URL sets no `connect_timeout`.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How many idle connections the pool keeps for the next transactions.
const MAX_IDLE: usize = 8;

/// How many prepared statements one connection keeps before it forgets them all.
const MAX_STATEMENTS: usize = 256;

/// A shared store in a PostgreSQL database. Cheap to clone; clones share the pool.
#[derive(Clone)]
pub struct PgBackend {
    inner: Arc<Inner>,
}

struct Inner {
    config: postgres::Config,
    /// `None` for `sslmode=disable` (and Unix sockets, which carry no TLS).
    tls: Option<MakeRustlsConnect>,
    /// The URL without its password: the only form messages show.
    url: String,
    idle: Mutex<Vec<Conn>>,
    /// The `LISTEN` connection of [`PgBackend::wait_for_change`], opened by its first call
    /// or by [`PgBackend::listen`].
    listener: Mutex<Option<Client>>,
}

impl Drop for Inner {
    /// Closes the pooled and listening connections. Closing one blocks (it runs the
    /// connection's own runtime), which tokio forbids on its executor threads, so inside a
    /// runtime they are closed on a thread of their own.
    fn drop(&mut self) {
        let idle = std::mem::take(self.idle.get_mut().unwrap_or_else(|p| p.into_inner()));
        let listener = self
            .listener
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if idle.is_empty() && listener.is_none() {
            return;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let closing = std::thread::Builder::new()
            .name("glassbox-pg-close".into())
            .spawn(move || drop((idle, listener)));
        if let Err(e) = closing {
            tracing::warn!(error = %e, "cannot start a thread to close PostgreSQL connections");
        }
    }
}

/// A pooled connection and the statements prepared on it.
struct Conn {
    client: Client,
    statements: HashMap<String, Statement>,
}

impl Conn {
    /// The statement for `sql`, prepared once per connection.
    fn statement(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        if self.statements.len() >= MAX_STATEMENTS {
            self.statements.clear();
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }
}

/// What `doctor` shows about the server.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ServerInfo {
    /// The URL without its password.
    pub url: String,
    /// `server_version`, e.g. `15.8 (Debian 15.8-0+deb12u1)`.
    pub version: String,
    /// `server_version_num`, e.g. `150008`.
    pub version_num: u32,
    /// Whether this connection is encrypted.
    pub tls: bool,
    /// The median of a few empty round trips.
    pub latency: Duration,
    /// The version of the `vector` extension (pgvector) the server offers, if any. Vectors
    /// are stored as arrays and searched exactly in glassbox either way: it is never needed.
    pub pgvector: Option<String>,
}

impl PgBackend {
    /// Connects to the database `url` names (`postgres://user[:password]@host[:port]/db?…`
    /// or libpq's `key=value` form), creates the layout when the database has none, and
    /// refuses a layout newer than this glassbox understands. A password missing from the
    /// URL comes from `PGPASSWORD` or the pgpass file, as with libpq.
    pub fn connect(url: &str) -> Result<PgBackend> {
        PgBackend::connect_with(url, &PasswordSources::from_env())
    }

    /// [`PgBackend::connect`] with the password sources given rather than read from the
    /// environment.
    pub fn connect_with(url: &str, sources: &PasswordSources) -> Result<PgBackend> {
        in_place(|| {
            let redacted = redact_url(url);
            let open_err = |reason: String| StoreError::Open {
                path: PathBuf::from(&redacted),
                reason,
            };
            let mut config = postgres::Config::from_str(url).map_err(|e| open_err(describe(&e)))?;
            if config.get_hosts().is_empty() {
                let socket_dir = PathBuf::from("/var/run/postgresql");
                if socket_dir.is_dir() {
                    config.host_path(&socket_dir);
                } else {
                    config.host("localhost");
                }
            }
            if config.get_connect_timeout().is_none() {
                config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
            }
            if config.get_application_name().is_none() {
                config.application_name("glassbox");
            }
            sources.apply(&mut config);
            let unix_only = config
                .get_hosts()
                .iter()
                .all(|host| matches!(host, Host::Unix(_)));
            let tls = if config.get_ssl_mode() == SslMode::Disable || unix_only {
                config.ssl_mode(SslMode::Disable);
                None
            } else {
                Some(conn::tls_connector().map_err(open_err)?)
            };
            let backend = PgBackend {
                inner: Arc::new(Inner {
                    config,
                    tls,
                    url: redacted.clone(),
                    idle: Mutex::new(Vec::new()),
                    listener: Mutex::new(None),
                }),
            };
            let mut conn = backend.open_conn().map_err(|e| open_err(describe(&e)))?;
            backend.prepare_layout(&mut conn.client)?;
            backend.give_back(conn);
            Ok(backend)
        })
    }

    /// The URL without its password.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// The server's version, whether the connection is encrypted, and the round-trip time.
    pub fn server_info(&self) -> Result<ServerInfo> {
        in_place(|| {
            let mut conn = self.take_conn()?;
            let out = (|| {
                let row = conn.client.query_one(
                    "SELECT current_setting('server_version'), \
                     current_setting('server_version_num')::int, \
                     coalesce((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), false), \
                     (SELECT default_version FROM pg_available_extensions WHERE name = 'vector')",
                    &[],
                )?;
                let mut trips = Vec::with_capacity(5);
                for _ in 0..5 {
                    let start = Instant::now();
                    conn.client.simple_query("")?;
                    trips.push(start.elapsed());
                }
                trips.sort();
                Ok::<_, postgres::Error>(ServerInfo {
                    url: self.inner.url.clone(),
                    version: row.try_get(0)?,
                    version_num: u32::try_from(row.try_get::<_, i32>(1)?).unwrap_or(0),
                    tls: row.try_get(2)?,
                    latency: trips[trips.len() / 2],
                    pgvector: row.try_get(3)?,
                })
            })();
            match out {
                Ok(info) => {
                    self.give_back(conn);
                    Ok(info)
                }
                Err(e) => Err(self.error(&e)),
            }
        })
    }

    /// Starts listening for commits now, so [`PgBackend::wait_for_change`] also reports those
    /// made between this call and its own. A follower calls it before the read it then
    /// keeps up to date.
    pub fn listen(&self) -> Result<()> {
        in_place(|| {
            let mut listener = self.listener();
            if listener.is_none() {
                *listener = Some(self.open_listener()?);
            }
            Ok(())
        })
    }

    /// Waits up to `timeout` for a commit that changed something (in any process, this one
    /// included) since the previous call, or since [`PgBackend::listen`]; `true` when there
    /// was one. Several commits seen at once count as one. When the listening connection
    /// was lost it connects again and answers `true`, as changes may have been missed.
    pub fn wait_for_change(&self, timeout: Duration) -> Result<bool> {
        in_place(|| {
            let mut listener = self.listener();
            let client = match listener.as_mut() {
                Some(client) => client,
                None => listener.insert(self.open_listener()?),
            };
            match wait_on(client, timeout) {
                Ok(seen) => Ok(seen),
                Err(e) => {
                    tracing::warn!(url = %self.inner.url, error = %describe(&e), "listening connection lost; reconnecting");
                    *listener = None;
                    *listener = Some(self.open_listener()?);
                    Ok(true)
                }
            }
        })
    }

    fn listener(&self) -> MutexGuard<'_, Option<Client>> {
        self.inner
            .listener
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn open_listener(&self) -> Result<Client> {
        let mut conn = self.open_conn().map_err(|e| self.error(&e))?;
        conn.client
            .batch_execute(&format!("LISTEN {CHANGES_CHANNEL}"))
            .map_err(|e| self.error(&e))?;
        Ok(conn.client)
    }

    /// A new connection, with the password and TLS settings of this backend.
    fn open_conn(&self) -> Result<Conn, postgres::Error> {
        let client = match &self.inner.tls {
            None => self.inner.config.connect(NoTls)?,
            Some(tls) => self.inner.config.connect(tls.clone())?,
        };
        Ok(Conn {
            client,
            statements: HashMap::new(),
        })
    }

    /// An idle connection from the pool, or a new one.
    fn take_conn(&self) -> Result<Conn> {
        let idle = self.idle().pop();
        match idle {
            Some(conn) if !conn.client.is_closed() => Ok(conn),
            _ => self.open_conn().map_err(|e| self.error(&e)),
        }
    }

    /// Puts a connection that is outside any transaction back in the pool.
    fn give_back(&self, conn: Conn) {
        if conn.client.is_closed() {
            return;
        }
        let mut idle = self.idle();
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    fn idle(&self) -> MutexGuard<'_, Vec<Conn>> {
        self.inner
            .idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A connection with `begin` run on it. When that fails on a pooled connection (the
    /// server dropped it since: a restart, an idle timeout, an administrator), the
    /// connection is closed and `begin` runs once more on a new one.
    fn begin(&self, begin: &str) -> Result<Conn> {
        in_place(|| {
            let pooled = self.idle().pop().filter(|conn| !conn.client.is_closed());
            if let Some(mut conn) = pooled
                && conn.client.batch_execute(begin).is_ok()
            {
                return Ok(conn);
            }
            let mut conn = self.open_conn().map_err(|e| self.error(&e))?;
            conn.client
                .batch_execute(begin)
                .map_err(|e| self.error(&e))?;
            Ok(conn)
        })
    }

    /// Creates the layout when the database has none; refuses one that is too new. Its
    /// failures are failures to open.
    fn prepare_layout(&self, client: &mut Client) -> Result<()> {
        let open_err = |reason: String| StoreError::Open {
            path: PathBuf::from(&self.inner.url),
            reason,
        };
        let version = match layout_version(client).map_err(|e| open_err(describe(&e)))? {
            Some(version) => version,
            None => {
                let create = format!(
                    "BEGIN; SELECT pg_advisory_xact_lock({WRITER_LOCK}); \
                     CREATE TABLE IF NOT EXISTS glassbox_layout (version integer PRIMARY KEY); \
                     CREATE TABLE IF NOT EXISTS glassbox_tables (name text PRIMARY KEY); \
                     INSERT INTO glassbox_layout (version) SELECT {LAYOUT_VERSION} \
                       WHERE NOT EXISTS (SELECT 1 FROM glassbox_layout); \
                     COMMIT"
                );
                if let Err(e) = client.batch_execute(&create) {
                    let _ = client.batch_execute("ROLLBACK");
                    return Err(open_err(format!(
                        "cannot create the layout: {}",
                        describe(&e)
                    )));
                }
                layout_version(client)
                    .map_err(|e| open_err(describe(&e)))?
                    .unwrap_or(LAYOUT_VERSION)
            }
        };
        if version > LAYOUT_VERSION {
            return Err(open_err(format!(
                "its layout version is {version}, newer than this glassbox understands \
                 ({LAYOUT_VERSION}); upgrade glassbox"
            )));
        }
        Ok(())
    }

    /// A query failure as a store error naming the URL without its password.
    fn error(&self, e: &postgres::Error) -> StoreError {
        StoreError::Io(format!("postgres {}: {}", self.inner.url, describe(e)))
    }
}

/// The layout version the database records, `None` when it has no layout yet.
fn layout_version(client: &mut Client) -> Result<Option<i32>, postgres::Error> {
    let row = client.query_one(
        "SELECT to_regclass('glassbox_layout') IS NOT NULL \
           AND to_regclass('glassbox_tables') IS NOT NULL",
        &[],
    )?;
    if !row.try_get::<_, bool>(0)? {
        return Ok(None);
    }
    let row = client.query_one("SELECT max(version) FROM glassbox_layout", &[])?;
    row.try_get(0)
}

/// Waits on a `LISTEN` connection: `true` when a notification is pending or arrives within
/// `timeout`; every pending one is consumed.
fn wait_on(client: &mut Client, timeout: Duration) -> Result<bool, postgres::Error> {
    use postgres::fallible_iterator::FallibleIterator;
    let mut notifications = client.notifications();
    let mut seen = notifications.iter().next()?.is_some();
    if !seen {
        seen = notifications.timeout_iter(timeout).next()?.is_some();
    }
    if seen {
        while notifications.iter().next()?.is_some() {}
    }
    Ok(seen)
}

/// A client error in one line: the server's message for a database error, else the error
/// and its cause.
fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_owned();
    }
    let text = e.to_string();
    match std::error::Error::source(e) {
        Some(cause) if !text.contains(&cause.to_string()) => format!("{text}: {cause}"),
        _ => text,
    }
}

/// Runs `f`, which blocks on a connection's own runtime, where tokio allows that: on a
/// worker of a multi-threaded runtime (or the thread in its `block_on`, as the TUI's event
/// loop) as blocking work in place ([`tokio::task::block_in_place`]); on the thread of a
/// current-thread runtime (which cannot give its work away) on a thread of its own while
/// this one waits; elsewhere directly. Every call of this backend that talks to the server
/// goes through it, so the store may be called from async code as well as from blocking
/// threads, as on redb.
pub fn in_place<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        Ok(_) => std::thread::scope(|s| match s.spawn(f).join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        }),
        Err(_) => f(),
    }
}

impl ByteBackend for PgBackend {
    fn begin_read(&self) -> Result<Box<dyn ByteRead>> {
        let conn = self.begin(&format!(
            "SELECT pg_advisory_lock_shared({READER_LOCK}); COMMIT; \
             BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT 1"
        ))?;
        Ok(Box::new(PgTxn::new(self.clone(), conn, true)))
    }

    fn begin_write(&self) -> Result<Box<dyn ByteWrite>> {
        let conn = self.begin(&format!(
            "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock({WRITER_LOCK})"
        ))?;
        Ok(Box::new(PgTxn::new(self.clone(), conn, false)))
    }

    fn listen(&self) -> Result<()> {
        PgBackend::listen(self)
    }

    fn wait_for_change(&self, timeout: Duration) -> Result<bool> {
        PgBackend::wait_for_change(self, timeout)
    }

    fn tells_of_changes(&self) -> bool {
        true
    }
}
