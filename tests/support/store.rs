//! The stores tests open themselves: the redb file at a path or, on a PostgreSQL run of the
//! suite (`STORE_UNDER_TEST=postgres`), the database standing in for it.

use std::path::Path;
use std::sync::Arc;

use glassbox::store::pg::PgBackend;
use glassbox::store::{Result, Store};

/// Opens (creating if needed) the store at `path`, as [`Store::open`] does on a redb run.
pub fn open(path: &Path) -> Result<Store> {
    match super::pg::stand_in_url(path) {
        None => Store::open(path),
        Some(url) => open_url(&url),
    }
}

/// Opens the PostgreSQL store at `url`.
pub fn open_url(url: &str) -> Result<Store> {
    let backend = PgBackend::connect(url)?;
    let label = backend.url().to_string();
    Store::open_backend(Arc::new(backend), label)
}

/// The bytes of the store of data dir `data`: its redb file or, on a PostgreSQL run, a copy
/// of the database into a redb file (`store copy`), for tests that look for what must never
/// be stored.
pub fn bytes_of(data: &Path) -> Vec<u8> {
    if !super::pg::suite_on_postgres() {
        return std::fs::read(data.join("glassbox.redb")).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.redb");
    super::bin::ok(
        super::bin::glassbox(data)
            .args(["store", "copy", "--to"])
            .arg(&copy),
    );
    std::fs::read(&copy).unwrap()
}
