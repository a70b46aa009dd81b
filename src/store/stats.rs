//! What the store file is made of: each table's share of the file, for `doctor` and the
//! scale benchmarks.

use redb::{ReadableDatabase, ReadableTableMetadata};

use super::{Result, Store};

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

impl Store {
    /// Every table's footprint, largest first.
    pub fn table_sizes(&self) -> Result<Vec<TableSize>> {
        let r = self.db.begin_read()?;
        let mut out = Vec::new();
        for handle in r.list_tables()? {
            let name = redb::TableHandle::name(&handle).to_string();
            let t = r.open_untyped_table(handle)?;
            let s = t.stats()?;
            out.push(TableSize {
                name,
                rows: t.len()?,
                stored: s.stored_bytes(),
                metadata: s.metadata_bytes(),
                fragmented: s.fragmented_bytes(),
            });
        }
        out.sort_by(|a, b| b.total().cmp(&a.total()).then(a.name.cmp(&b.name)));
        Ok(out)
    }
}
