//! The index's postings as schema v4 to v11 stored them (a 16-byte node id and a u32
//! frequency each, a row per term), which only the migrations from those versions read and
//! write; and, for tests of stores written before schema v15, runs turned back into a row
//! per term.

use super::blocks::Layout;
#[cfg(test)]
use super::blocks::RunCursor;
use super::postings::{Run, next_id, read_runs, run_name, run_table, write_runs};
use crate::store::kv::WriteTxn;
use crate::store::{Result, StoreError};

/// Bytes of one posting of schema v9 to v11: node id, then term frequency (u32 LE).
const LEGACY_POSTING_BYTES: usize = 16 + 4;

/// A posting of schema v4 to v11: node id and frequency. Only migrations read them.
pub(in crate::store) type LegacyPosting = ([u8; 16], u32);

/// Postings of schema v4 to v11 (`node id ‖ tf (u32 LE)` repeated), for migrations.
pub(in crate::store) fn decode_legacy_postings(
    v: &[u8],
    out: &mut Vec<LegacyPosting>,
) -> Result<()> {
    if !v.len().is_multiple_of(LEGACY_POSTING_BYTES) {
        return Err(StoreError::Corrupt(
            "search index: postings length is not a whole number of postings".into(),
        ));
    }
    out.reserve(v.len() / LEGACY_POSTING_BYTES);
    for p in v.chunks_exact(LEGACY_POSTING_BYTES) {
        let mut node = [0u8; 16];
        node.copy_from_slice(&p[..16]);
        let mut tf = [0u8; 4];
        tf.copy_from_slice(&p[16..]);
        out.push((node, u32::from_le_bytes(tf)));
    }
    Ok(())
}

/// The v4–v11 form of `postings` (what [`decode_legacy_postings`] reads).
pub(in crate::store) fn encode_legacy_postings(postings: &[LegacyPosting], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(postings.len() * LEGACY_POSTING_BYTES);
    for (node, tf) in postings {
        out.extend_from_slice(node);
        out.extend_from_slice(&tf.to_le_bytes());
    }
}

/// Appends `(term, postings)` pairs of the v4–v11 layout (node ids), in term order, as the
/// oldest run, still in that layout: how the v8 → v9 migration brings segments over (the
/// v11 → v12 one then gives the nodes doc numbers).
pub(in crate::store) fn import_oldest_legacy_run(
    txn: &WriteTxn,
    rows: impl Iterator<Item = Result<(Vec<u8>, Vec<LegacyPosting>)>>,
) -> Result<()> {
    let mut runs = read_runs(txn)?;
    let id = next_id(&runs);
    let name = run_name(id);
    let mut written = 0u64;
    {
        let mut table = txn.open_table(run_table(&name))?;
        let mut value = Vec::new();
        for row in rows {
            let (term, postings) = row?;
            if postings.is_empty() {
                continue;
            }
            encode_legacy_postings(&postings, &mut value);
            table.put(term.as_slice(), value.as_slice())?;
            written += postings.len() as u64;
        }
    }
    if written == 0 {
        txn.delete_table(run_table(&name))?;
        return Ok(());
    }
    runs.insert(
        0,
        Run {
            id,
            postings: written,
            layout: Layout::Rows,
        },
    );
    write_runs(txn, &runs)
}

/// Writes every run in blocks again as a row per term, as schema v9 to v14 kept them, for
/// tests of stores written before blocks.
#[cfg(test)]
pub(in crate::store) fn runs_as_rows(txn: &WriteTxn) -> Result<()> {
    let mut runs = read_runs(txn)?;
    for run in runs.iter_mut().filter(|r| r.layout == Layout::Blocks) {
        let name = run_name(run.id);
        let mut rows = Vec::new();
        {
            let t = txn.open_table(run_table(&name))?;
            let mut c = RunCursor::new(&t, run.layout)?;
            while let Some((k, v)) = c.current() {
                rows.push((k.to_vec(), v.to_vec()));
                c.advance()?;
            }
        }
        txn.delete_table(run_table(&name))?;
        let mut t = txn.open_table(run_table(&name))?;
        for (k, v) in rows {
            t.insert(k.as_slice(), v.as_slice())?;
        }
        run.layout = Layout::Rows;
    }
    write_runs(txn, &runs)
}
