//! Schema versions and the migrations between them. A file with an older version is migrated
//! in one transaction when opened; a newer one is refused.
//!
//! History:
//! - v1: nodes carried their type as `node_type`; there was no per-session node index.
//! - v2: `node_type` renamed `kind`; `session_nodes` index added.
//! - v3: full-text index: `search_terms` and `search_docs` tables, totals in `meta`; every
//!   existing node is indexed.
//! - v4: postings stored as segments per term (`search_postings`, written once per term and
//!   transaction) instead of one `search_terms` row per term and node; the index is rebuilt.
//! - v5: memory in one `memories` table (the tier is a field) with a scope index, vectors and
//!   counters, replacing the four per-tier tables, which no release ever wrote to; they are
//!   dropped.
//! - v6: learnings (seed 002): typed learning events with their per-learning index, the
//!   `learnings` read model, concept and edge indexes, access log, NLI results, ingest queue and
//!   injection cache. The untyped events of earlier versions (no release wrote any) and the
//!   `projections` table are dropped; every memory entry but core facts becomes a learning
//!   through a `legacy-v1` extraction event.
//! - v7: the local knowledge base (seed 001): `knowledge_docs` and `knowledge_chunks`.
//! - v8: the diff's cache of pair judgements, `pair_judgements`.
//! - v9: postings kept as runs (a log-structured merge, see `search/postings.rs`), one
//!   `search_run_*` table each, instead of segments updated in place in `search_postings`;
//!   the segments become the oldest run.
//! - v10: values over 200 bytes are zstd-compressed JSON (codec format 2); the nodes are
//!   rewritten so. `search_docs` records keep only their header (a node's terms are read
//!   from its text when it is re-indexed or deleted).
//! - v11: `session_heads` (each node's head beside the session's node index, see
//!   `heads.rs`) replaces `session_nodes`, so a session opens without reading node bodies.
//! - v12: the postings name nodes by doc number (`search_doc_nodes`, a u32 per indexed node
//!   kept in its `search_docs` record) as delta varints instead of 16-byte ids, and an edge
//!   with the default weight and no meta is stored as an empty value (its key says it all).
//!   The runs and edges are re-encoded. (From v12 on, the v3 → v4 step leaves the index to
//!   this one, which builds it over the nodes when it finds none.)
//! - v13: raw chunks are stored zstd-compressed (a bit of their offset header says so, see
//!   `codec::encode_raw_chunk`); the chunks written before are compressed.
//! - v14: node records may be compressed with a dictionary trained on the store's own
//!   records (format byte 4, the dictionaries in `record_dicts`, see `store/dict.rs`).
//!   Nothing is rewritten: the step only creates the table.
//! - v15: runs of the index may hold their entries in blocks keyed by each block's first
//!   term (a bit of the run's postings count in `meta` says so, see `search/blocks.rs`).
//!   Nothing is rewritten: runs of a row per term stay readable until a merge or
//!   `doctor --compact` writes them again. The version only keeps earlier builds, which
//!   would misread a run in blocks, from opening the file.

use super::kv::{ReadTxn, ReadableTable, WriteTxn};
use super::tables::*;
use super::{Store, StoreError, codec, search};

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = 15;

const VERSION_KEY: &str = "schema_version";

pub(super) fn read_version(r: &ReadTxn) -> Result<u32, StoreError> {
    let Some(t) = r.open_table_if_exists(META)? else {
        return Ok(0);
    };
    let Some(v) = t.get(VERSION_KEY)? else {
        return Ok(0);
    };
    let bytes: [u8; 4] = v
        .value()
        .try_into()
        .map_err(|_| StoreError::Corrupt("meta.schema_version is not 4 bytes".into()))?;
    Ok(u32::from_le_bytes(bytes))
}

/// Brings the file to [`SCHEMA_VERSION`]: creates every table on a new file, migrates an
/// older one, refuses a newer one.
pub(super) fn ensure_schema(store: &Store) -> Result<(), StoreError> {
    let found = read_version(&store.db.begin_read()?)?;
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    if found > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: store.path.clone(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    let txn = store.db.begin_write()?;
    // Re-read under the write lock: another process may have migrated meanwhile.
    let found = {
        let meta = txn.open_table(META)?;
        match meta.get(VERSION_KEY)? {
            Some(v) => v.value().try_into().map(u32::from_le_bytes).unwrap_or(0),
            None => 0,
        }
    };
    if found > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: store.path.clone(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    create_tables(&txn)?;
    let is_new = found == 0 && !has_legacy_data(&txn)?;
    if !is_new {
        let mut v = found.max(1);
        while v < SCHEMA_VERSION {
            match v {
                1 => migrate_v1_to_v2(&txn)?,
                2 => migrate_v2_to_v3(&txn)?,
                3 => migrate_v3_to_v4(&txn)?,
                4 => migrate_v4_to_v5(&txn)?,
                5 => migrate_v5_to_v6(&txn)?,
                6 => migrate_v6_to_v7(&txn)?,
                7 => migrate_v7_to_v8(&txn)?,
                8 => migrate_v8_to_v9(&txn)?,
                9 => migrate_v9_to_v10(&txn)?,
                10 => migrate_v10_to_v11(&txn)?,
                11 => migrate_v11_to_v12(&txn)?,
                12 => migrate_v12_to_v13(&txn)?,
                // `create_tables` made `record_dicts`; the runs of a row per term stay.
                13 | 14 => {}
                other => {
                    return Err(StoreError::Corrupt(format!(
                        "no migration from schema {other}"
                    )));
                }
            }
            v += 1;
        }
    }
    txn.open_table(META)?
        .insert(VERSION_KEY, SCHEMA_VERSION.to_le_bytes().as_slice())?;
    txn.commit()?;
    Ok(())
}

fn has_legacy_data(txn: &WriteTxn) -> Result<bool, StoreError> {
    Ok(
        txn.list_tables()?.iter().any(|t| t == "nodes")
            && txn.open_table(NODES)?.first()?.is_some(),
    )
}

fn create_tables(txn: &WriteTxn) -> Result<(), StoreError> {
    txn.open_table(META)?;
    txn.open_table(RECORD_DICTS)?;
    txn.open_table(SESSIONS)?;
    txn.open_table(NODES)?;
    txn.open_table(SESSION_HEADS)?;
    txn.open_table(EDGES_OUT)?;
    txn.open_table(EDGES_IN)?;
    txn.open_table(DECISION_POINTS)?;
    txn.open_table(INSIGHTS)?;
    txn.open_table(RUNS)?;
    txn.open_table(SESSION_RUNS)?;
    txn.open_table(LIVE_NODES)?;
    txn.open_table(RAW_STREAMS)?;
    txn.open_table(RAW_CHUNKS)?;
    txn.open_table(SESSION_STREAMS)?;
    txn.open_table(MEMORIES)?;
    txn.open_table(MEMORY_SCOPES)?;
    txn.open_table(MEMORY_VECTORS)?;
    txn.open_table(MEMORY_COUNTERS)?;
    txn.open_table(MEMORY_INDEX)?;
    txn.open_table(LEARNING_EVENTS)?;
    txn.open_table(LEARNING_EVENT_KEYS)?;
    txn.open_table(LEARNING_EVENT_INDEX)?;
    txn.open_table(LEARNINGS)?;
    txn.open_table(CONCEPT_INDEX)?;
    txn.open_table(LEARNING_EDGES)?;
    txn.open_table(ACCESS_LOG)?;
    txn.open_table(ACCESS_BY_SESSION)?;
    txn.open_table(NLI_RESULTS)?;
    txn.open_table(INGEST_QUEUE)?;
    txn.open_table(INJECTION_CACHE)?;
    txn.open_table(PROJECTION_CHECKPOINTS)?;
    txn.open_table(TRANSCRIPT_CURSORS)?;
    txn.open_table(KNOWLEDGE_DOCS)?;
    txn.open_table(KNOWLEDGE_CHUNKS)?;
    txn.open_table(PAIR_JUDGEMENTS)?;
    txn.open_table(JOURNAL)?;
    txn.open_table(SEARCH_DOCS)?;
    txn.open_table(search::SEARCH_DOC_NODES)?;
    Ok(())
}

/// v1 → v2: rename `node_type` to `kind` in every node and build `session_nodes`.
fn migrate_v1_to_v2(txn: &WriteTxn) -> Result<(), StoreError> {
    let mut nodes = txn.open_table(NODES)?;
    let mut index = txn.open_table(SESSION_NODES)?;
    let mut rewritten = Vec::new();
    for row in nodes.iter()? {
        let (k, v) = row?;
        let mut value: serde_json::Value = codec::decode("nodes (v1)", v.value())?;
        let obj = value
            .as_object_mut()
            .ok_or_else(|| StoreError::Corrupt("nodes (v1): value is not an object".into()))?;
        if let Some(kind) = obj.remove("node_type") {
            obj.insert("kind".into(), kind);
        }
        let session = obj
            .get("session")
            .and_then(|s| s.as_str())
            .and_then(|s| uuid::Uuid::parse_str(s).ok())
            .ok_or_else(|| StoreError::Corrupt("nodes (v1): node without a session".into()))?;
        rewritten.push((k.value(), *session.as_bytes(), codec::encode(&value)?));
    }
    for (node, session, bytes) in rewritten {
        nodes.insert(node, bytes.as_slice())?;
        index.insert(key32(session, node), ())?;
    }
    Ok(())
}

/// v2 → v3: the v3 full-text index. Its layout is superseded by v4's, whose migration (run
/// next) builds the index from scratch, so nothing is built here.
fn migrate_v2_to_v3(_txn: &WriteTxn) -> Result<(), StoreError> {
    Ok(())
}

/// v3 → v4: drop the one-row-per-posting `search_terms` table and the index's records and
/// totals. The index is built over every node, in the layout this build writes, by the
/// v11 → v12 step (which builds it when it finds none).
fn migrate_v3_to_v4(txn: &WriteTxn) -> Result<(), StoreError> {
    txn.delete_table(SEARCH_TERMS_V3)?;
    txn.delete_table(SEARCH_DOCS)?;
    txn.open_table(SEARCH_DOCS)?;
    txn.open_table(META)?.remove(search::TOTALS_KEY)?;
    Ok(())
}

/// v4 → v5: the per-tier memory tables give way to `memories` (created with the others).
fn migrate_v4_to_v5(txn: &WriteTxn) -> Result<(), StoreError> {
    const GONE: [&str; 4] = [
        "memory_core",
        "memory_working",
        "memory_recall",
        "memory_archival",
    ];
    let old: Vec<_> = txn
        .list_tables()?
        .into_iter()
        .filter(|t| GONE.contains(&t.as_str()))
        .collect();
    for t in old {
        txn.delete_table_named(&t)?;
    }
    Ok(())
}

/// v5 → v6: drops the untyped learning events and `projections`, and makes every memory entry
/// but core facts a learning (a `legacy-v1` extraction event each).
fn migrate_v5_to_v6(txn: &WriteTxn) -> Result<(), StoreError> {
    txn.open_table(LEARNING_EVENTS)?.retain(|_, _| false)?;
    txn.open_table(LEARNING_EVENT_KEYS)?.retain(|_, _| false)?;
    let projections: crate::store::kv::TableDefinition<&str, &[u8]> =
        crate::store::kv::TableDefinition::new("projections");
    txn.delete_table(projections)?;
    let entries: Vec<super::MemoryEntry> = {
        let t = txn.open_table(MEMORIES)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            out.push(codec::decode("memories", row?.1.value())?);
        }
        out
    };
    let next_seq = txn
        .open_table(JOURNAL)?
        .last()?
        .map(|(k, _)| k.value() + 1)
        .unwrap_or(1);
    let mut w = super::Writer {
        txn,
        next_seq,
        index: search::PendingIndex::default(),
        dict: None,
        new_dict: None,
    };
    for e in entries.iter().filter(|e| e.tier != super::MemoryTier::Core) {
        w.adopt_memory(e)?;
    }
    w.index.apply(txn)
}

/// v6 → v7: the knowledge base's two tables are new and start empty; `create_tables` (run
/// before every migration) has opened them, so there is nothing to convert.
fn migrate_v6_to_v7(_txn: &WriteTxn) -> Result<(), StoreError> {
    Ok(())
}

/// v7 → v8: the diff's cache of pair judgements is new and starts empty (`create_tables`
/// opened it).
fn migrate_v7_to_v8(_txn: &WriteTxn) -> Result<(), StoreError> {
    Ok(())
}

/// v8 → v9: the segments of `search_postings` (`term ‖ 0x00 ‖ first node id → postings`, a
/// term's rows contiguous and in node order) become the index's oldest run, and the table
/// is dropped.
fn migrate_v8_to_v9(txn: &WriteTxn) -> Result<(), StoreError> {
    if !txn
        .list_tables()?
        .iter()
        .any(|t| t == SEARCH_POSTINGS.name())
    {
        return Ok(());
    }
    {
        let old = txn.open_table(SEARCH_POSTINGS)?;
        let mut rows = old.iter()?.peekable();
        let terms = std::iter::from_fn(|| {
            let mut term: Option<Vec<u8>> = None;
            let mut postings = Vec::new();
            loop {
                let same = match (rows.peek(), &term) {
                    (None, _) => false,
                    (Some(Err(_)), _) | (Some(Ok(_)), None) => true,
                    (Some(Ok((k, _))), Some(t)) => segment_term(k.value()) == Some(t.as_slice()),
                };
                if !same {
                    return term.map(|t| Ok((t, postings)));
                }
                let (k, v) = match rows.next()? {
                    Ok(row) => row,
                    Err(e) => return Some(Err(e)),
                };
                let Some(t) = segment_term(k.value()) else {
                    return Some(Err(StoreError::Corrupt(
                        "search_postings: key shorter than a node id".into(),
                    )));
                };
                if term.is_none() {
                    term = Some(t.to_vec());
                }
                if let Err(e) = search::decode_legacy_postings(v.value(), &mut postings) {
                    return Some(Err(e));
                }
            }
        });
        search::import_oldest_legacy_run(txn, terms)?;
    }
    txn.delete_table(SEARCH_POSTINGS)?;
    Ok(())
}

/// The term of a v4–v8 segment key (`term ‖ 0x00 ‖ first node id`).
fn segment_term(key: &[u8]) -> Option<&[u8]> {
    key.len().checked_sub(17).map(|n| &key[..n])
}

/// v9 → v10: every node record compressed where that pays, every `search_docs` record cut to
/// its header.
fn migrate_v9_to_v10(txn: &WriteTxn) -> Result<(), StoreError> {
    let nodes = rewrite_values(txn, NODES, codec::compressed)?;
    let docs = rewrite_values(txn, SEARCH_DOCS, |v| {
        (v.len() > search::DOC_HEADER).then(|| v[..search::DOC_HEADER].to_vec())
    })?;
    tracing::info!(nodes, docs, "migration v9 -> v10: records compressed");
    Ok(())
}

/// v10 → v11: a head for every node of `session_nodes`, which is then dropped.
fn migrate_v10_to_v11(txn: &WriteTxn) -> Result<(), StoreError> {
    if txn.list_tables()?.iter().any(|t| t == SESSION_NODES.name()) {
        let index = txn.open_table(SESSION_NODES)?;
        let nodes = txn.open_table(NODES)?;
        let mut heads = txn.open_table(SESSION_HEADS)?;
        let mut count = 0u64;
        for row in index.iter()? {
            let (k, _) = row?;
            let key = k.value();
            if let Some(v) = nodes.get(split32(key).1)? {
                let node: super::Node = codec::decode("nodes", v.value())?;
                heads.insert(key, super::NodeHead::of(&node).encode()?.as_slice())?;
                count += 1;
            }
        }
        drop((index, nodes, heads));
        txn.delete_table(SESSION_NODES)?;
        tracing::info!(count, "migration v10 -> v11: node heads written");
    }
    Ok(())
}

/// v11 → v12: doc numbers for the index (see `search/upgrade.rs`) and empty values for plain
/// edges.
fn migrate_v11_to_v12(txn: &WriteTxn) -> Result<(), StoreError> {
    let index = search::to_doc_numbers(txn)?;
    let mut plain = Vec::new();
    {
        let t = txn.open_table(EDGES_OUT)?;
        for row in t.iter()? {
            let (k, v) = row?;
            if !v.value().is_empty()
                && codec::is_plain_edge(&codec::decode_edge(k.value(), v.value())?)
            {
                plain.push(k.value());
            }
        }
    }
    let mut t = txn.open_table(EDGES_OUT)?;
    for k in &plain {
        t.insert(*k, [].as_slice())?;
    }
    tracing::info!(
        docs = index.docs,
        postings = index.postings,
        rebuilt = index.rebuilt,
        edges = plain.len(),
        "migration v11 -> v12: doc numbers and compact edges"
    );
    Ok(())
}

fn migrate_v12_to_v13(txn: &WriteTxn) -> Result<(), StoreError> {
    let packed = rewrite_values(txn, RAW_CHUNKS, codec::packed_raw_chunk)?;
    tracing::info!(
        chunks = packed,
        "migration v12 -> v13: raw chunks compressed"
    );
    Ok(())
}

/// Replaces each value of `table` for which `new` gives one, a slice of keys at a time (a
/// table cannot be written while it is read). Returns how many were replaced.
fn rewrite_values<const N: usize>(
    txn: &WriteTxn,
    table: crate::store::kv::TableDefinition<[u8; N], &[u8]>,
    new: impl Fn(&[u8]) -> Option<Vec<u8>>,
) -> Result<u64, StoreError> {
    const SLICE: usize = 2048;
    let mut t = txn.open_table(table)?;
    let mut after: Option<[u8; N]> = None;
    let mut replaced = 0u64;
    loop {
        let mut changes = Vec::new();
        let mut last = None;
        {
            let range = match after {
                Some(k) => {
                    t.range::<[u8; N]>((std::ops::Bound::Excluded(k), std::ops::Bound::Unbounded))?
                }
                None => t.range::<[u8; N]>(..)?,
            };
            for row in range.take(SLICE) {
                let (k, v) = row?;
                last = Some(k.value());
                if let Some(nv) = new(v.value()) {
                    changes.push((k.value(), nv));
                }
            }
        }
        let Some(last) = last else { break };
        for (k, v) in &changes {
            t.insert(*k, v.as_slice())?;
        }
        replaced += changes.len() as u64;
        after = Some(last);
    }
    Ok(replaced)
}
