//! Which store a command opens: the redb file in the data dir, another redb file, or a
//! PostgreSQL database named by URL. Every message and output names a database by its URL
//! without the password ([`redact`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, bail};

use crate::store::Store;
use crate::store::pg::PgBackend;

/// The URL schemes that name a PostgreSQL database.
pub const POSTGRES_SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

/// Where a store is.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreTarget {
    /// A redb file.
    File(PathBuf),
    /// A PostgreSQL database; the URL as given, password included.
    Postgres(String),
}

impl std::fmt::Debug for StoreTarget {
    /// The label, so a password never reaches a debug print or a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreTarget::File(path) => f.debug_tuple("File").field(path).finish(),
            StoreTarget::Postgres(url) => f.debug_tuple("Postgres").field(&redact(url)).finish(),
        }
    }
}

/// `url` without its password (the URL's own, or a `password=` parameter).
pub fn redact(url: &str) -> String {
    crate::store::pg::redact_url(url)
}

/// Whether `value` starts with a PostgreSQL scheme.
fn is_postgres_url(value: &str) -> bool {
    POSTGRES_SCHEMES.iter().any(|s| value.trim().starts_with(s))
}

/// The scheme of `value` when it looks like a URL (`scheme://…`).
fn url_scheme(value: &str) -> Option<&str> {
    let (scheme, _) = value.trim().split_once("://")?;
    let ok = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    ok.then_some(scheme)
}

impl StoreTarget {
    /// The store `[store] url` names: the redb file `default_file` when the URL is empty,
    /// else the PostgreSQL database. Any other URL is refused.
    pub fn from_url(url: &str, default_file: &Path) -> Result<StoreTarget> {
        let url = url.trim();
        if url.is_empty() {
            return Ok(StoreTarget::File(default_file.to_path_buf()));
        }
        if is_postgres_url(url) {
            return Ok(StoreTarget::Postgres(url.to_string()));
        }
        match url_scheme(url) {
            Some(scheme) => bail!(
                "the store URL has the unsupported scheme '{scheme}://' (use postgres:// or postgresql://, or leave it empty for the redb file in the data dir)"
            ),
            None => bail!(
                "the store URL is not a PostgreSQL URL (use postgres://USER@HOST/DATABASE, or leave it empty for the redb file in the data dir)"
            ),
        }
    }

    /// A command-line store: a PostgreSQL URL, or else the path of a redb file. A value
    /// with another URL scheme is refused.
    pub fn parse_arg(value: &str) -> Result<StoreTarget> {
        let value = value.trim();
        if value.is_empty() {
            bail!("the store is empty: give a PostgreSQL URL or a redb file path");
        }
        if is_postgres_url(value) {
            return Ok(StoreTarget::Postgres(value.to_string()));
        }
        if let Some(scheme) = url_scheme(value) {
            bail!(
                "the store has the unsupported scheme '{scheme}://' (use postgres:// or postgresql://, or a redb file path)"
            );
        }
        Ok(StoreTarget::File(PathBuf::from(value)))
    }

    /// The file's path, or the URL without its password.
    pub fn label(&self) -> String {
        match self {
            StoreTarget::File(path) => path.display().to_string(),
            StoreTarget::Postgres(url) => redact(url),
        }
    }

    /// The backend's name as `doctor` and `--json` outputs give it.
    pub fn backend_name(&self) -> &'static str {
        match self {
            StoreTarget::File(_) => "redb",
            StoreTarget::Postgres(_) => "postgres",
        }
    }

    /// Connects to the database (a PostgreSQL target); the error names the URL without
    /// its password.
    pub fn connect_postgres(url: &str) -> Result<PgBackend> {
        PgBackend::connect(url).map_err(anyhow::Error::from)
    }

    /// Opens (creating if needed) the store: a redb file with a page cache of
    /// `cache_bytes`, or the PostgreSQL database (its tables created when it has none).
    pub fn open(&self, cache_bytes: usize) -> Result<Store> {
        match self {
            StoreTarget::File(path) => Ok(Store::open_with_cache(path, cache_bytes)?),
            StoreTarget::Postgres(url) => {
                let backend = Self::connect_postgres(url)?;
                let label = backend.url().to_string();
                Ok(Store::open_backend(Arc::new(backend), label)?)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_url_is_the_data_dir_file() {
        let t = StoreTarget::from_url("  ", Path::new("/d/glassbox.redb")).unwrap();
        assert_eq!(t, StoreTarget::File(PathBuf::from("/d/glassbox.redb")));
        assert_eq!(t.backend_name(), "redb");
    }

    #[test]
    fn postgres_urls_are_accepted_and_labelled_without_password() {
        for url in [
            "postgres://gb:s3cret@db.example:5432/glassbox",
            "postgresql://gb:s3cret@db.example/glassbox?sslmode=require",
        ] {
            let t = StoreTarget::from_url(url, Path::new("/x")).unwrap();
            assert_eq!(t.backend_name(), "postgres");
            assert!(!t.label().contains("s3cret"), "{}", t.label());
            assert!(!format!("{t:?}").contains("s3cret"));
            assert!(t.label().contains("gb@db.example"), "{}", t.label());
        }
    }

    #[test]
    fn other_urls_are_refused_in_one_line_without_password() {
        for url in [
            "mysql://gb:s3cret@db/x",
            "sqlite:///tmp/x.db",
            "host=db password=s3cret",
            "POSTGRES://gb:s3cret@db/x",
        ] {
            let e = StoreTarget::from_url(url, Path::new("/x"))
                .unwrap_err()
                .to_string();
            assert!(!e.contains("s3cret"), "{e}");
            assert!(!e.contains('\n'), "{e}");
            assert!(e.contains("PostgreSQL") || e.contains("postgres://"), "{e}");
        }
    }

    #[test]
    fn arguments_are_urls_or_paths() {
        assert_eq!(
            StoreTarget::parse_arg("/tmp/copy.redb").unwrap(),
            StoreTarget::File(PathBuf::from("/tmp/copy.redb"))
        );
        assert!(matches!(
            StoreTarget::parse_arg("postgresql://u@h/d").unwrap(),
            StoreTarget::Postgres(_)
        ));
        let e = StoreTarget::parse_arg("redis://u:pw@h/0")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unsupported scheme 'redis://'") && !e.contains("pw@"),
            "{e}"
        );
        assert!(StoreTarget::parse_arg("").is_err());
    }
}
