//! Table definitions and their key layouts. Every id is a 16-byte UUIDv7, so keys that start
//! with an id sort by creation time. Values are `codec`-encoded (format byte + body).

use super::kv::TableDefinition;

/// `&str` name → bytes. Holds `schema_version` (u32, little-endian) and the full-text index
/// totals `search_totals` (doc count ‖ token count, u64 little-endian each).
pub const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// session id → Session.
pub const SESSIONS: TableDefinition<[u8; 16], &[u8]> = TableDefinition::new("sessions");
/// node id → Node.
pub const NODES: TableDefinition<[u8; 16], &[u8]> = TableDefinition::new("nodes");
/// session id ‖ node id → NodeHead (`heads.rs`): a session's nodes in creation order, each
/// with what lists and counts show of it (schema v11 on).
pub const SESSION_HEADS: TableDefinition<[u8; 32], &[u8]> = TableDefinition::new("session_heads");
/// session id ‖ node id → (): the node index of schema v2 to v10; only opened to turn it
/// into `session_heads` when migrating to v11.
pub const SESSION_NODES: TableDefinition<[u8; 32], ()> = TableDefinition::new("session_nodes");
/// src ‖ edge type (1 byte) ‖ dst → Edge.
pub const EDGES_OUT: TableDefinition<[u8; 33], &[u8]> = TableDefinition::new("edges_out");
/// dst ‖ edge type (1 byte) ‖ src → (): the reverse index of `EDGES_OUT`.
pub const EDGES_IN: TableDefinition<[u8; 33], ()> = TableDefinition::new("edges_in");
/// node id ‖ decision id → DecisionPoint.
pub const DECISION_POINTS: TableDefinition<[u8; 32], &[u8]> =
    TableDefinition::new("decision_points");
/// session id ‖ insight id → Insight.
pub const INSIGHTS: TableDefinition<[u8; 32], &[u8]> = TableDefinition::new("insights");
/// run id → Run.
pub const RUNS: TableDefinition<[u8; 16], &[u8]> = TableDefinition::new("runs");
/// session id ‖ run id → ().
pub const SESSION_RUNS: TableDefinition<[u8; 32], ()> = TableDefinition::new("session_runs");
/// stream id → RawStream header.
pub const RAW_STREAMS: TableDefinition<[u8; 16], &[u8]> = TableDefinition::new("raw_streams");
/// stream id ‖ chunk index (u32 big-endian) → offset µs (u64 big-endian) ‖ bytes.
pub const RAW_CHUNKS: TableDefinition<[u8; 20], &[u8]> = TableDefinition::new("raw_chunks");
/// node id → writer (pid u32 LE ‖ process start u64 LE): the nodes still streaming, and the
/// process writing each (see `leases.rs`).
pub const LIVE_NODES: TableDefinition<[u8; 16], &[u8]> = TableDefinition::new("live_nodes");
/// session id ‖ stream id → ().
pub const SESSION_STREAMS: TableDefinition<[u8; 32], ()> = TableDefinition::new("session_streams");
/// memory id → MemoryEntry: every entry of every tier and scope (schema v5 on).
pub const MEMORIES: TableDefinition<[u8; 16], &[u8]> = TableDefinition::new("memories");
/// scope key (UTF-8, `global` / `project:<path>` / `session:<id>`) ‖ 0x00 ‖ memory id → ():
/// a scope's entries in creation order.
pub const MEMORY_SCOPES: TableDefinition<&[u8], ()> = TableDefinition::new("memory_scopes");
/// memory id → embedder id length (u8) ‖ embedder id ‖ vector (i8 per dimension).
pub const MEMORY_VECTORS: TableDefinition<[u8; 16], &[u8]> = TableDefinition::new("memory_vectors");
/// scope key → MemoryCounters (inserts, searches, evictions, promotions).
pub const MEMORY_COUNTERS: TableDefinition<&str, &[u8]> = TableDefinition::new("memory_counters");
/// scope key → the saved memory index of that scope (`engines/memory/snapshot.rs`): a cache,
/// rebuilt from `memories` when missing, and current to the journal sequence it names.
pub const MEMORY_INDEX: TableDefinition<&str, &[u8]> = TableDefinition::new("memory_index");
/// sequence (u64) → LearningEvent. Append-only.
pub const LEARNING_EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("learning_events");
/// idempotency key → sequence: makes event keys unique.
pub const LEARNING_EVENT_KEYS: TableDefinition<&str, u64> =
    TableDefinition::new("learning_event_keys");
/// learning id ‖ event id (u64 big-endian) → (): a learning's events in order.
pub const LEARNING_EVENT_INDEX: TableDefinition<[u8; 24], ()> =
    TableDefinition::new("learning_event_index");
/// learning id → Learning: the learnings read model (schema v6 on).
pub const LEARNINGS: TableDefinition<[u8; 16], &[u8]> = TableDefinition::new("learnings");
/// concept (UTF-8) ‖ 0x00 ‖ learning id → (): the live learnings tagged with a concept.
pub const CONCEPT_INDEX: TableDefinition<&[u8], ()> = TableDefinition::new("concept_index");
/// source learning ‖ relation code ‖ target learning → weight (f32 LE): the live learnings'
/// edges.
pub const LEARNING_EDGES: TableDefinition<[u8; 33], &[u8]> = TableDefinition::new("learning_edges");
/// learning id ‖ time (ns since the epoch, u64 big-endian) → AccessRow: each retrieval that
/// returned it.
pub const ACCESS_LOG: TableDefinition<[u8; 24], &[u8]> = TableDefinition::new("access_log");
/// session (UTF-8) ‖ 0x00 ‖ learning id → (): the learnings a session was given.
pub const ACCESS_BY_SESSION: TableDefinition<&[u8], ()> = TableDefinition::new("access_by_session");
/// lower learning id ‖ higher learning id → NliResult: NLI judgements, one per unordered pair.
pub const NLI_RESULTS: TableDefinition<[u8; 32], &[u8]> = TableDefinition::new("nli_results");
/// item key → QueueItem: the ingest queue.
pub const INGEST_QUEUE: TableDefinition<&str, &[u8]> = TableDefinition::new("ingest_queue");
/// project key → CachedInjection: the SessionStart context computed ahead of time.
pub const INJECTION_CACHE: TableDefinition<&str, &[u8]> = TableDefinition::new("injection_cache");
/// projection name → last learning-event sequence folded into it.
pub const PROJECTION_CHECKPOINTS: TableDefinition<&str, u64> =
    TableDefinition::new("projection_checkpoints");
/// absolute file path → TranscriptCursor.
pub const TRANSCRIPT_CURSORS: TableDefinition<&str, &[u8]> =
    TableDefinition::new("transcript_cursors");
/// term (UTF-8, never containing 0x00) ‖ 0x00 ‖ first node id of the segment → a segment of
/// the term's postings: `node id ‖ term frequency (u32 LE)` repeated, sorted by node id. The
/// postings of schema v4 to v8; only opened to turn them into a run when migrating to v9.
/// From v9 on the postings are in `search_run_<id>` tables (term → postings), listed in
/// `meta` (see `search/postings.rs`).
pub const SEARCH_POSTINGS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("search_postings");
/// term ‖ 0x00 ‖ node id → term frequency: the postings of schema v3, one row each. Only
/// opened to delete it when migrating to v4.
pub const SEARCH_TERMS_V3: TableDefinition<&[u8], u32> = TableDefinition::new("search_terms");
/// node id → session id ‖ token count (u32 LE) ‖ text hash (8 bytes): what the index holds
/// for a node, so an unchanged text is skipped. (Before schema v10 the node's distinct terms
/// followed, joined by 0x00; they are now read from its stored text when it is re-indexed.)
pub const SEARCH_DOCS: TableDefinition<[u8; 16], &[u8]> = TableDefinition::new("search_docs");
/// node id → nothing: nodes whose words are not in the full-text index yet. A streamed
/// trace past the turn's limit is indexed after its turn, by the next search (see
/// `Store::index_pending`). A store gets the table with its first such trace.
pub const SEARCH_PENDING: TableDefinition<[u8; 16], ()> = TableDefinition::new("search_pending");
/// zstd dictionary id → the dictionary: what node records of format 4 were compressed with
/// (schema v14 on; see `store/dict.rs`).
pub const RECORD_DICTS: TableDefinition<u32, &[u8]> = TableDefinition::new("record_dicts");
/// document id → KnowledgeDoc: the knowledge base's documents (schema v7 on).
pub const KNOWLEDGE_DOCS: TableDefinition<[u8; 16], &[u8]> = TableDefinition::new("knowledge_docs");
/// document id ‖ chunk index (u32 big-endian) → KnowledgeChunk: a document's chunks in order.
pub const KNOWLEDGE_CHUNKS: TableDefinition<[u8; 20], &[u8]> =
    TableDefinition::new("knowledge_chunks");
/// sha256(model, the two step texts) → PairJudgement: the diff's cache of pair labels.
pub const PAIR_JUDGEMENTS: TableDefinition<[u8; 32], &[u8]> =
    TableDefinition::new("pair_judgements");
/// sequence (u64, monotonic across processes) → Change.
pub const JOURNAL: TableDefinition<u64, &[u8]> = TableDefinition::new("journal");

/// Concatenates two 16-byte ids into a composite key.
pub fn key32(a: [u8; 16], b: [u8; 16]) -> [u8; 32] {
    let mut k = [0u8; 32];
    k[..16].copy_from_slice(&a);
    k[16..].copy_from_slice(&b);
    k
}

/// `a ‖ code ‖ b`, the edge key layout.
pub fn key33(a: [u8; 16], code: u8, b: [u8; 16]) -> [u8; 33] {
    let mut k = [0u8; 33];
    k[..16].copy_from_slice(&a);
    k[16] = code;
    k[17..].copy_from_slice(&b);
    k
}

/// Chunk key: stream id ‖ index (big-endian so chunks sort in order).
pub fn chunk_key(stream: [u8; 16], index: u32) -> [u8; 20] {
    let mut k = [0u8; 20];
    k[..16].copy_from_slice(&stream);
    k[16..].copy_from_slice(&index.to_be_bytes());
    k
}

/// The inclusive key range of every 32-byte key starting with `prefix`.
pub fn prefix32(prefix: [u8; 16]) -> std::ops::RangeInclusive<[u8; 32]> {
    key32(prefix, [0; 16])..=key32(prefix, [0xff; 16])
}

/// The inclusive key range of every 33-byte key starting with `prefix`.
pub fn prefix33(prefix: [u8; 16]) -> std::ops::RangeInclusive<[u8; 33]> {
    key33(prefix, 0, [0; 16])..=key33(prefix, 0xff, [0xff; 16])
}

/// Splits a 32-byte composite key into its two ids.
pub fn split32(k: [u8; 32]) -> ([u8; 16], [u8; 16]) {
    let mut a = [0u8; 16];
    let mut b = [0u8; 16];
    a.copy_from_slice(&k[..16]);
    b.copy_from_slice(&k[16..]);
    (a, b)
}

/// Splits an edge key into (first id, type code, second id).
pub fn split33(k: [u8; 33]) -> ([u8; 16], u8, [u8; 16]) {
    let mut a = [0u8; 16];
    let mut b = [0u8; 16];
    a.copy_from_slice(&k[..16]);
    b.copy_from_slice(&k[17..]);
    (a, k[16], b)
}
