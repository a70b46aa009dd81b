//! What the store file is made of: each table's share of the file, for `doctor` and the
//! scale benchmarks.

use super::kv::{ReadableTable, TableDefinition};
use super::tables::{NODES, RAW_CHUNKS};
use super::{Result, Store, codec};

/// One table's footprint in the store file.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TableSize {
    pub name: String,
    /// Rows in the table.
    pub rows: u64,
    /// Bytes of keys and values as stored (after any compression of the values).
    pub stored: u64,
    /// Bytes of branch pages and other B-tree metadata.
    pub metadata: u64,
    /// Bytes lost to partly filled pages.
    pub fragmented: u64,
}

impl TableSize {
    /// Every byte the table occupies in the file.
    pub fn total(&self) -> u64 {
        self.stored + self.metadata + self.fragmented
    }
}

/// How well the node records compress.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Compression {
    /// Bytes of the records as stored.
    pub stored: u64,
    /// Bytes of the same records uncompressed (plain JSON; raw bytes as received).
    pub plain: u64,
    /// Bytes stored of the node records a dictionary could compress that are without one
    /// (written before the store had it): what `doctor --compact` compresses with it.
    pub without_dict: u64,
}

impl Compression {
    /// Plain bytes per stored byte (1.0 for an empty store).
    pub fn ratio(&self) -> f64 {
        if self.stored == 0 {
            1.0
        } else {
            self.plain as f64 / self.stored as f64
        }
    }
}

/// Whether a table belongs to the full-text index.
pub fn is_search_table(name: &str) -> bool {
    name.starts_with("search_")
}

impl Store {
    /// The node records' size as stored and as plain JSON (reads every record's header).
    pub fn node_compression(&self) -> Result<Compression> {
        self.compression(NODES, codec::plain_len, codec::wants_dict)
    }

    /// The raw chunks' size as stored and as received (reads every chunk's header).
    pub fn raw_compression(&self) -> Result<Compression> {
        self.compression(RAW_CHUNKS, codec::raw_chunk_plain_len, |_| false)
    }

    /// The size of `table`'s values as stored, uncompressed as `plain_len` gives it, and
    /// stored of those `without_dict` tells.
    fn compression<const N: usize>(
        &self,
        table: TableDefinition<[u8; N], &[u8]>,
        plain_len: fn(&[u8]) -> usize,
        without_dict: fn(&[u8]) -> bool,
    ) -> Result<Compression> {
        let r = self.db.begin_read()?;
        let t = r.open_table(table)?;
        let mut c = Compression::default();
        for row in t.iter()? {
            let (_, v) = row?;
            let v = v.value();
            c.stored += v.len() as u64;
            c.plain += plain_len(v) as u64;
            if without_dict(v) {
                c.without_dict += v.len() as u64;
            }
        }
        Ok(c)
    }

    /// Every table's footprint, largest first.
    pub fn table_sizes(&self) -> Result<Vec<TableSize>> {
        let mut out: Vec<TableSize> = self
            .db
            .table_stats()?
            .into_iter()
            .map(|s| TableSize {
                name: s.name,
                rows: s.rows,
                stored: s.stored,
                metadata: s.metadata,
                fragmented: s.fragmented,
            })
            .collect();
        out.sort_by(|a, b| b.total().cmp(&a.total()).then(a.name.cmp(&b.name)));
        Ok(out)
    }
}
