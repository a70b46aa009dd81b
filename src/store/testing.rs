//! The store's tests run on both arms of `kv`: a redb file, and the in-memory byte backend
//! that stands for every other [`kv::ByteBackend`]. A test takes a [`Fixture`] and opens its
//! store with [`Fixture::open`] (again, to reopen it); [`on_both_arms!`] makes a test of
//! each arm from it.

use std::path::PathBuf;
use std::sync::Arc;

use super::kv::memory::MemoryBackend;
use super::kv::{self, Db};
use super::{CACHE_BYTES, Result, Store};

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

/// Makes tests `<name>::redb` and `<name>::bytes` of each `fn <name>(fx: &Fixture)`.
macro_rules! on_both_arms {
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
        }
    )*};
}
pub(crate) use on_both_arms;
