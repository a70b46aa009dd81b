//! The store's tests run on both arms of `kv` and on each byte backend: a redb file, the
//! in-memory byte backend, and a PostgreSQL database (a fresh one per test, on the one
//! throwaway server of the test binary, [`harness::TempPostgres::shared`]). A test takes a
//! [`Fixture`] and opens its store with [`Fixture::open`] (again, to reopen it);
//! [`on_every_arm!`] makes a test of each from it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::kv::memory::MemoryBackend;
use super::kv::{self, Db};
use super::pg::{PasswordSources, PgBackend};
use super::{CACHE_BYTES, Result, Store};

/// The throwaway PostgreSQL server of the test binary, shared with `pg/tests.rs`.
#[path = "../../tests/support/pg.rs"]
pub(crate) mod harness;

/// Where a test's store lives.
pub(crate) struct Fixture {
    dir: tempfile::TempDir,
    /// `None`: a redb file in `dir`.
    backend: Option<Arc<dyn kv::ByteBackend>>,
}

impl Fixture {
    pub(crate) fn redb() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary directory"),
            backend: None,
        }
    }

    /// The in-memory byte backend.
    pub(crate) fn bytes() -> Self {
        Self::on(Arc::new(MemoryBackend::new()))
    }

    /// A new empty database on the test binary's PostgreSQL server.
    pub(crate) fn pg() -> Self {
        Self::on(Arc::new(pg_backend(&pg_database())))
    }

    /// Any byte backend, empty.
    pub(crate) fn on(backend: Arc<dyn kv::ByteBackend>) -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary directory"),
            backend: Some(backend),
        }
    }

    pub(crate) fn is_redb(&self) -> bool {
        self.backend.is_none()
    }

    /// The redb file (whether or not this arm uses it).
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.path().join("s.redb")
    }

    /// Opens the store, as a process starting up would (migrating, settling orphans).
    pub(crate) fn open(&self) -> Store {
        self.try_open().expect("a store")
    }

    pub(crate) fn try_open(&self) -> Result<Store> {
        match &self.backend {
            None => Store::open(&self.path()),
            Some(b) => Store::open_backend(b.clone(), "byte backend".into()),
        }
    }

    /// The tables without a [`Store`]: nothing is created or migrated.
    pub(crate) fn raw(&self) -> Db {
        match &self.backend {
            None => Db::open_redb(&self.path(), CACHE_BYTES).expect("a redb file"),
            Some(b) => Db::Bytes(b.clone()),
        }
    }
}

/// The store at `path` as the suite runs: the redb file or, on a PostgreSQL run
/// (`STORE_UNDER_TEST=postgres`), the database standing in for it
/// ([`harness::stand_in_url`]). For tests outside the store that open one of their own.
pub(crate) fn open_at(path: &Path) -> Store {
    match harness::stand_in_url(path) {
        None => Store::open(path).expect("a store"),
        Some(url) => {
            let backend = pg_backend(&url);
            let label = backend.url().to_string();
            Store::open_backend(Arc::new(backend), label).expect("a store")
        }
    }
}

/// A new empty database on the test binary's PostgreSQL server; its URL.
pub(crate) fn pg_database() -> String {
    let server = harness::TempPostgres::shared();
    server.socket_url(&server.create_database())
}

/// A connection to the database at `url`, with no password from the environment (the test
/// server trusts its Unix socket).
pub(crate) fn pg_backend(url: &str) -> PgBackend {
    PgBackend::connect_with(url, &PasswordSources::default()).expect("a PostgreSQL backend")
}

/// Makes tests `<name>::redb`, `<name>::bytes` and `<name>::pg` of each
/// `fn <name>(fx: &Fixture)`.
macro_rules! on_every_arm {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn redb() {
                super::$name(&$crate::store::testing::Fixture::redb());
            }

            #[test]
            fn bytes() {
                super::$name(&$crate::store::testing::Fixture::bytes());
            }

            #[test]
            fn pg() {
                super::$name(&$crate::store::testing::Fixture::pg());
            }
        }
    )*};
}
pub(crate) use on_every_arm;
