//! Bringing an index of schema v11 (postings naming nodes by their 16-byte ids) to the doc
//! numbers of v12: every indexed node gets a doc number, in node id order, and every run is
//! written again with doc numbers. Node id order makes the mapping monotonic, so each posting
//! list stays sorted as it is re-encoded.

use std::collections::HashMap;

use super::super::tables::{META, NODES, SEARCH_DOCS};
use super::blocks::{BlockWriter, Layout};
use super::legacy::{LegacyPosting, decode_legacy_postings};
use super::postings::{
    NEXT_DOC_KEY, RUNS_KEY, Run, decode_runs, encode_postings, encode_runs, run_name, run_table,
};
use super::{
    DOC_HEADER, SEARCH_DOC_NODES, TOTALS_KEY, encode_doc, encode_doc_node, index_all_nodes,
};
use crate::store::kv::{ReadableTable, WriteTxn};
use crate::store::{Result, StoreError};

/// What [`to_doc_numbers`] did.
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::store) struct Upgraded {
    /// Nodes given a doc number.
    pub docs: u64,
    /// Postings written again (those of nodes no longer indexed are dropped).
    pub postings: u64,
    /// Whether the index was built from the nodes' text (there was none to convert).
    pub rebuilt: bool,
}

/// Gives every node of `search_docs` a doc number and re-encodes every run with them. A store
/// whose index is empty while it has nodes (one migrated from before v4, whose index was
/// left to this step) has its index built from the nodes instead.
pub(in crate::store) fn to_doc_numbers(txn: &WriteTxn) -> Result<Upgraded> {
    // Rows a migration of an earlier version may have left.
    txn.delete_table(SEARCH_DOC_NODES)?;
    txn.open_table(SEARCH_DOC_NODES)?;
    let has_docs = !txn.open_table(SEARCH_DOCS)?.is_empty()?;
    if !has_docs {
        drop_runs(txn)?;
        txn.open_table(META)?.remove(TOTALS_KEY)?;
        txn.open_table(META)?.remove(NEXT_DOC_KEY)?;
        if txn.open_table(NODES)?.is_empty()? {
            return Ok(Upgraded::default());
        }
        let docs = index_all_nodes(txn)?;
        return Ok(Upgraded {
            docs,
            postings: 0,
            rebuilt: true,
        });
    }
    let numbers = number_docs(txn)?;
    let next = u32::try_from(numbers.len())
        .map_err(|_| StoreError::Invalid("too many indexed nodes for doc numbers".into()))?;
    txn.open_table(META)?
        .insert(NEXT_DOC_KEY, next.to_le_bytes().as_slice())?;
    let runs = {
        let meta = txn.open_table(META)?;
        let v = meta.get(RUNS_KEY)?;
        decode_runs(v.as_ref().map(|v| v.value()))?
    };
    let first_id = runs.iter().map(|r| r.id).max().unwrap_or(0) + 1;
    let mut converted = Vec::with_capacity(runs.len());
    let mut total = 0u64;
    for (id, run) in (first_id..).zip(runs) {
        let postings = reencode_run(txn, run.id, id, &numbers)?;
        txn.delete_table(run_table(&run_name(run.id)))?;
        if postings > 0 {
            converted.push(Run {
                id,
                postings,
                layout: Layout::Blocks,
            });
        } else {
            txn.delete_table(run_table(&run_name(id)))?;
        }
        total += postings;
    }
    let mut meta = txn.open_table(META)?;
    if converted.is_empty() {
        meta.remove(RUNS_KEY)?;
    } else {
        meta.insert(RUNS_KEY, encode_runs(&converted).as_slice())?;
    }
    Ok(Upgraded {
        docs: u64::from(next),
        postings: total,
        rebuilt: false,
    })
}

/// Numbers the nodes of `search_docs` in key order: writes each record with its doc number,
/// fills `search_doc_nodes`, and returns node → doc number.
fn number_docs(txn: &WriteTxn) -> Result<HashMap<[u8; 16], u32>> {
    let mut records = Vec::new();
    {
        let docs = txn.open_table(SEARCH_DOCS)?;
        for row in docs.iter()? {
            let (k, v) = row?;
            let v = v.value();
            if v.len() < DOC_HEADER {
                return Err(StoreError::Corrupt(
                    "search_docs: value shorter than its header".into(),
                ));
            }
            let mut session = [0u8; 16];
            session.copy_from_slice(&v[..16]);
            let mut tokens = [0u8; 4];
            tokens.copy_from_slice(&v[16..20]);
            let mut hash = [0u8; 8];
            hash.copy_from_slice(&v[20..28]);
            records.push((k.value(), session, u32::from_le_bytes(tokens), hash));
        }
    }
    let mut numbers = HashMap::with_capacity(records.len());
    let mut docs = txn.open_table(SEARCH_DOCS)?;
    let mut doc_nodes = txn.open_table(SEARCH_DOC_NODES)?;
    for (doc, (node, session, tokens, hash)) in records.into_iter().enumerate() {
        let doc = u32::try_from(doc)
            .map_err(|_| StoreError::Invalid("too many indexed nodes for doc numbers".into()))?;
        docs.insert(node, encode_doc(session, tokens, hash, doc).as_slice())?;
        doc_nodes.insert(doc, encode_doc_node(node, session, tokens))?;
        numbers.insert(node, doc);
    }
    Ok(numbers)
}

/// Writes run `from` (v11 postings, a row per term) as run `into` with doc numbers, in
/// blocks; postings of nodes without one (deleted since) are dropped. Returns the postings
/// written.
fn reencode_run(
    txn: &WriteTxn,
    from: u64,
    into: u64,
    numbers: &HashMap<[u8; 16], u32>,
) -> Result<u64> {
    let (na, nb) = (run_name(from), run_name(into));
    let old = txn.open_table(run_table(&na))?;
    let mut new = txn.open_table(run_table(&nb))?;
    let mut new = BlockWriter::new(new.appender()?);
    let mut legacy: Vec<LegacyPosting> = Vec::new();
    let mut postings = Vec::new();
    let mut value = Vec::new();
    let mut written = 0u64;
    for row in old.iter()? {
        let (term, v) = row?;
        legacy.clear();
        decode_legacy_postings(v.value(), &mut legacy)?;
        postings.clear();
        postings.extend(
            legacy
                .iter()
                .filter_map(|(node, tf)| numbers.get(node).map(|d| (*d, *tf))),
        );
        if postings.is_empty() {
            continue;
        }
        encode_postings(&postings, &mut value);
        new.push(term.value(), value.as_slice())?;
        written += postings.len() as u64;
    }
    new.close()?;
    Ok(written)
}

/// Deletes every run and the list of them.
fn drop_runs(txn: &WriteTxn) -> Result<()> {
    let runs = {
        let meta = txn.open_table(META)?;
        let v = meta.get(RUNS_KEY)?;
        decode_runs(v.as_ref().map(|v| v.value()))?
    };
    for r in runs {
        txn.delete_table(run_table(&run_name(r.id)))?;
    }
    txn.open_table(META)?.remove(RUNS_KEY)?;
    Ok(())
}

/// Writes the index back in the v11 layout (postings naming nodes by id, `search_docs`
/// records without a doc number, no `search_doc_nodes`), for tests that build an older store
/// from one this build wrote. Postings of doc numbers no longer in use are dropped.
#[cfg(test)]
pub(in crate::store) fn write_v11_layout(txn: &WriteTxn) -> Result<()> {
    use super::decode_doc_node;
    use super::legacy::{encode_legacy_postings, runs_as_rows};
    use super::postings::decode_postings;

    let node_of: HashMap<u32, [u8; 16]> = {
        let t = txn.open_table(SEARCH_DOC_NODES)?;
        let mut m = HashMap::new();
        for row in t.iter()? {
            let (k, v) = row?;
            m.insert(k.value(), decode_doc_node(&v.value()).0);
        }
        m
    };
    // v11 runs hold a row per term.
    runs_as_rows(txn)?;
    let runs = {
        let meta = txn.open_table(META)?;
        let v = meta.get(RUNS_KEY)?;
        decode_runs(v.as_ref().map(|v| v.value()))?
    };
    for run in runs {
        let name = run_name(run.id);
        let mut t = txn.open_table(run_table(&name))?;
        let mut rows = Vec::new();
        for row in t.iter()? {
            let (k, v) = row?;
            rows.push((k.value().to_vec(), v.value().to_vec()));
        }
        for (term, v) in rows {
            let mut postings = Vec::new();
            decode_postings(&v, &mut postings)?;
            let mut legacy: Vec<LegacyPosting> = postings
                .iter()
                .filter_map(|(d, tf)| node_of.get(d).map(|n| (*n, *tf)))
                .collect();
            legacy.sort_unstable();
            let mut value = Vec::new();
            encode_legacy_postings(&legacy, &mut value);
            t.insert(term.as_slice(), value.as_slice())?;
        }
    }
    txn.delete_table(SEARCH_DOC_NODES)?;
    let mut docs = txn.open_table(SEARCH_DOCS)?;
    let mut rows = Vec::new();
    for row in docs.iter()? {
        let (k, v) = row?;
        rows.push((k.value(), v.value()[..DOC_HEADER].to_vec()));
    }
    for (k, v) in rows {
        docs.insert(k, v.as_slice())?;
    }
    txn.open_table(META)?.remove(NEXT_DOC_KEY)?;
    Ok(())
}
