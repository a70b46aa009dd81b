//! The store: one redb file shared by every glassbox process (TUI, `mcp`, importers) in
//! redb's multi-writer mode. Writes go through [`Writer`], which journals every change so
//! followers in other processes can see it with [`Store::follow`].

mod codec;
mod migrate;
pub mod search;
pub mod tables;
mod types;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::Utc;
use redb::{
    ConcurrencyMode, Database, ReadTransaction, ReadableDatabase, ReadableTable,
    ReadableTableMetadata, WriteTransaction,
};

pub use migrate::SCHEMA_VERSION;
pub use search::SearchHit;
use tables::*;
pub use types::*;

/// Store failures, each with a message fit for a one-line error.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open store {path}: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error(
        "store {path} has schema version {found}, newer than this glassbox understands ({supported}); upgrade glassbox"
    )]
    TooNew {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("store is corrupt: {0}")]
    Corrupt(String),
    #[error("cannot encode value: {0}")]
    Encode(String),
    #[error("{0} not found")]
    NotFound(String),
    #[error("'{0}' matches more than one {1}; give more characters")]
    Ambiguous(String, &'static str),
    #[error("store I/O: {0}")]
    Io(String),
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError::Io(e.to_string())
            }
        }
    )*};
}
from_redb!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Counts of the main tables, for `doctor`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TableCounts {
    pub sessions: u64,
    pub nodes: u64,
    pub edges: u64,
    pub decision_points: u64,
    pub insights: u64,
    pub runs: u64,
    pub raw_streams: u64,
    pub raw_chunks: u64,
    pub memory: u64,
    pub learning_events: u64,
    pub transcript_cursors: u64,
    pub journal: u64,
    /// Nodes in the full-text index.
    pub search_docs: u64,
}

/// A handle on the store file. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    db: Arc<Database>,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

fn builder() -> redb::Builder {
    let mut b = Database::builder();
    b.set_concurrency_mode(ConcurrencyMode::MultiWriter);
    b
}

impl Store {
    /// Opens (creating if missing) the store at `path`, migrating an older schema.
    /// A new file gets mode 0600.
    pub fn open(path: &Path) -> Result<Self> {
        let open_err = |reason: String| StoreError::Open {
            path: path.to_path_buf(),
            reason,
        };
        if !path.exists() {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .or_else(|e| {
                    // Another process may have created it between the check and the open.
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        std::fs::File::open(path)
                    } else {
                        Err(e)
                    }
                })
                .map_err(|e| open_err(e.to_string()))?;
        }
        let db = builder()
            .create(path)
            .map_err(|e| open_err(describe_open_error(e)))?;
        let store = Self {
            db: Arc::new(db),
            path: path.to_path_buf(),
        };
        migrate::ensure_schema(&store)?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs redb's integrity check (checksums of every page). Needs the only handle.
    pub fn check_integrity(&mut self) -> Result<bool> {
        let db = Arc::get_mut(&mut self.db)
            .ok_or_else(|| StoreError::Io("integrity check needs exclusive access".into()))?;
        db.check_integrity()
            .map_err(|e| StoreError::Corrupt(e.to_string()))
    }

    /// Runs `f` in one write transaction and commits it; every change `f` makes is
    /// journalled. Nothing is written if `f` fails.
    pub fn write<T>(&self, f: impl FnOnce(&mut Writer<'_>) -> Result<T>) -> Result<T> {
        let txn = self.db.begin_write()?;
        let next_seq = {
            let journal = txn.open_table(JOURNAL)?;
            journal.last()?.map(|(k, _)| k.value() + 1).unwrap_or(1)
        };
        let mut w = Writer {
            txn: &txn,
            next_seq,
            index: search::PendingIndex::default(),
        };
        let out = f(&mut w)?;
        // Postings gathered by the puts and deletes are merged in the same transaction.
        w.index.apply(&txn)?;
        txn.commit()?;
        Ok(out)
    }

    fn read(&self) -> Result<ReadTransaction> {
        Ok(self.db.begin_read()?)
    }

    pub fn schema_version(&self) -> Result<u32> {
        let r = self.read()?;
        migrate::read_version(&r)
    }

    pub fn session(&self, id: SessionId) -> Result<Option<Session>> {
        get16(&self.read()?, SESSIONS, "sessions", id.to_bytes())
    }

    /// Every session, most recently updated first.
    pub fn sessions(&self) -> Result<Vec<Session>> {
        let r = self.read()?;
        let t = r.open_table(SESSIONS)?;
        let mut out = Vec::new();
        for row in t.iter()?.rev() {
            let (_, v) = row?;
            out.push(codec::decode::<Session>("sessions", v.value())?);
        }
        out.sort_by_key(|s| std::cmp::Reverse(s.updated_at));
        Ok(out)
    }

    /// Resolves a full session id, or a unique prefix or suffix (as shown by `short()`) of
    /// its hex form.
    pub fn resolve_session(&self, text: &str) -> Result<SessionId> {
        if let Ok(id) = text.parse::<SessionId>() {
            return Ok(id);
        }
        let want = normalise_prefix(text);
        let r = self.read()?;
        let t = r.open_table(SESSIONS)?;
        resolve_prefix(
            t.iter()?.map(|row| row.map(|(k, _)| k.value())),
            &want,
            text,
            "session",
        )
        .map(SessionId::from_bytes)
    }

    /// Resolves a full node id, or a unique prefix or suffix of its hex form.
    pub fn resolve_node(&self, text: &str) -> Result<NodeId> {
        if let Ok(id) = text.parse::<NodeId>() {
            return Ok(id);
        }
        let want = normalise_prefix(text);
        let r = self.read()?;
        let t = r.open_table(NODES)?;
        resolve_prefix(
            t.iter()?.map(|row| row.map(|(k, _)| k.value())),
            &want,
            text,
            "node",
        )
        .map(NodeId::from_bytes)
    }

    pub fn node(&self, id: NodeId) -> Result<Option<Node>> {
        get16(&self.read()?, NODES, "nodes", id.to_bytes())
    }

    /// A session's nodes in creation order.
    pub fn session_nodes(&self, session: SessionId) -> Result<Vec<Node>> {
        joined(
            &self.read()?,
            SESSION_NODES,
            NODES,
            "nodes",
            session.to_bytes(),
        )
    }

    pub fn session_node_count(&self, session: SessionId) -> Result<u64> {
        let r = self.read()?;
        let idx = r.open_table(SESSION_NODES)?;
        let mut n = 0;
        for row in idx.range(prefix32(session.to_bytes()))? {
            row?;
            n += 1;
        }
        Ok(n)
    }

    /// Edges leaving `node`, optionally of one type.
    pub fn edges_from(&self, node: NodeId, kind: Option<EdgeType>) -> Result<Vec<Edge>> {
        let r = self.read()?;
        let t = r.open_table(EDGES_OUT)?;
        let range = edge_range(node, kind);
        let mut out = Vec::new();
        for row in t.range(range)? {
            let (_, v) = row?;
            out.push(codec::decode("edges_out", v.value())?);
        }
        Ok(out)
    }

    /// Edges arriving at `node`, optionally of one type (read through the reverse index).
    pub fn edges_to(&self, node: NodeId, kind: Option<EdgeType>) -> Result<Vec<Edge>> {
        let r = self.read()?;
        let idx = r.open_table(EDGES_IN)?;
        let out_t = r.open_table(EDGES_OUT)?;
        let range = edge_range(node, kind);
        let mut out = Vec::new();
        for row in idx.range(range)? {
            let (k, _) = row?;
            let (dst, code, src) = split33(k.value());
            if let Some(v) = out_t.get(key33(src, code, dst))? {
                out.push(codec::decode("edges_out", v.value())?);
            }
        }
        Ok(out)
    }

    /// Every edge whose source node belongs to `session`.
    pub fn session_edges(&self, session: SessionId) -> Result<Vec<Edge>> {
        let r = self.read()?;
        let idx = r.open_table(SESSION_NODES)?;
        let t = r.open_table(EDGES_OUT)?;
        let mut out = Vec::new();
        for row in idx.range(prefix32(session.to_bytes()))? {
            let (k, _) = row?;
            let (_, node) = split32(k.value());
            for e in t.range(prefix33(node))? {
                let (_, v) = e?;
                out.push(codec::decode("edges_out", v.value())?);
            }
        }
        Ok(out)
    }

    pub fn decision_points(&self, node: NodeId) -> Result<Vec<DecisionPoint>> {
        prefixed(
            &self.read()?,
            DECISION_POINTS,
            "decision_points",
            node.to_bytes(),
        )
    }

    pub fn insights(&self, session: SessionId) -> Result<Vec<Insight>> {
        prefixed(&self.read()?, INSIGHTS, "insights", session.to_bytes())
    }

    pub fn run(&self, id: RunId) -> Result<Option<Run>> {
        get16(&self.read()?, RUNS, "runs", id.to_bytes())
    }

    pub fn session_runs(&self, session: SessionId) -> Result<Vec<Run>> {
        joined(
            &self.read()?,
            SESSION_RUNS,
            RUNS,
            "runs",
            session.to_bytes(),
        )
    }

    /// The run `id` of `session` if it is of `kind`, or with no id the newest such run.
    pub fn pick_run(
        &self,
        session: SessionId,
        kind: RunKind,
        id: Option<RunId>,
    ) -> Result<Option<Run>> {
        let runs = self
            .session_runs(session)?
            .into_iter()
            .filter(|r| r.kind == kind);
        Ok(match id {
            Some(id) => runs.into_iter().find(|r| r.id == id),
            None => runs.max_by_key(|r| (r.created_at, r.id)),
        })
    }

    pub fn raw_stream(&self, id: StreamId) -> Result<Option<RawStream>> {
        get16(&self.read()?, RAW_STREAMS, "raw_streams", id.to_bytes())
    }

    pub fn session_streams(&self, session: SessionId) -> Result<Vec<RawStream>> {
        joined(
            &self.read()?,
            SESSION_STREAMS,
            RAW_STREAMS,
            "raw_streams",
            session.to_bytes(),
        )
    }

    /// The recorded chunks of a stream, in order.
    pub fn raw_chunks(&self, id: StreamId) -> Result<Vec<StoredChunk>> {
        let r = self.read()?;
        let t = r.open_table(RAW_CHUNKS)?;
        let mut out = Vec::new();
        for row in t.range(chunk_key(id.to_bytes(), 0)..=chunk_key(id.to_bytes(), u32::MAX))? {
            let (_, v) = row?;
            out.push(decode_chunk(v.value())?);
        }
        Ok(out)
    }

    pub fn core_memory(&self, label: &str) -> Result<Option<MemoryEntry>> {
        let r = self.read()?;
        let t = r.open_table(MEMORY_CORE)?;
        t.get(label)?
            .map(|v| codec::decode("memory_core", v.value()))
            .transpose()
    }

    pub fn memory(&self, tier: MemoryTier, id: MemoryId) -> Result<Option<MemoryEntry>> {
        let r = self.read()?;
        let def = match tier {
            MemoryTier::Working => MEMORY_WORKING,
            MemoryTier::Recall => MEMORY_RECALL,
            MemoryTier::Archival => MEMORY_ARCHIVAL,
            MemoryTier::Core => {
                return Err(StoreError::NotFound(
                    "core memory is addressed by label".into(),
                ));
            }
        };
        get16(&r, def, "memory", id.to_bytes())
    }

    /// Learning events with sequence > `after`, in order.
    pub fn learning_events(&self, after: u64) -> Result<Vec<LearningEvent>> {
        let r = self.read()?;
        let t = r.open_table(LEARNING_EVENTS)?;
        let mut out = Vec::new();
        for row in t.range(after.saturating_add(1)..)? {
            let (_, v) = row?;
            out.push(codec::decode("learning_events", v.value())?);
        }
        Ok(out)
    }

    pub fn projection(&self, name: &str) -> Result<Option<(Vec<u8>, u64)>> {
        let r = self.read()?;
        let p = r.open_table(PROJECTIONS)?;
        let c = r.open_table(PROJECTION_CHECKPOINTS)?;
        let Some(state) = p.get(name)? else {
            return Ok(None);
        };
        let checkpoint = c.get(name)?.map(|v| v.value()).unwrap_or(0);
        Ok(Some((state.value().to_vec(), checkpoint)))
    }

    pub fn transcript_cursor(&self, path: &str) -> Result<Option<TranscriptCursor>> {
        let r = self.read()?;
        let t = r.open_table(TRANSCRIPT_CURSORS)?;
        t.get(path)?
            .map(|v| codec::decode("transcript_cursors", v.value()))
            .transpose()
    }

    /// The newest journal sequence number (0 when empty).
    pub fn last_seq(&self) -> Result<u64> {
        let r = self.read()?;
        let t = r.open_table(JOURNAL)?;
        Ok(t.last()?.map(|(k, _)| k.value()).unwrap_or(0))
    }

    /// Journal entries with sequence > `since`, at most `limit`, in order. A follower keeps
    /// the last sequence it saw and calls this again.
    pub fn follow(&self, since: u64, limit: usize) -> Result<Vec<(u64, Change)>> {
        let r = self.read()?;
        let t = r.open_table(JOURNAL)?;
        let mut out = Vec::new();
        for row in t.range(since.saturating_add(1)..)?.take(limit) {
            let (k, v) = row?;
            out.push((k.value(), codec::decode("journal", v.value())?));
        }
        Ok(out)
    }

    pub fn counts(&self) -> Result<TableCounts> {
        let r = self.read()?;
        Ok(TableCounts {
            sessions: r.open_table(SESSIONS)?.len()?,
            nodes: r.open_table(NODES)?.len()?,
            edges: r.open_table(EDGES_OUT)?.len()?,
            decision_points: r.open_table(DECISION_POINTS)?.len()?,
            insights: r.open_table(INSIGHTS)?.len()?,
            runs: r.open_table(RUNS)?.len()?,
            raw_streams: r.open_table(RAW_STREAMS)?.len()?,
            raw_chunks: r.open_table(RAW_CHUNKS)?.len()?,
            memory: r.open_table(MEMORY_CORE)?.len()?
                + r.open_table(MEMORY_WORKING)?.len()?
                + r.open_table(MEMORY_RECALL)?.len()?
                + r.open_table(MEMORY_ARCHIVAL)?.len()?,
            learning_events: r.open_table(LEARNING_EVENTS)?.len()?,
            transcript_cursors: r.open_table(TRANSCRIPT_CURSORS)?.len()?,
            journal: r.open_table(JOURNAL)?.len()?,
            search_docs: r.open_table(SEARCH_DOCS)?.len()?,
        })
    }
}

/// A node with the work of writing it done ahead, off the writing thread: its encoded record
/// and its full-text index form (see [`Writer::put_prepared_nodes`]). The node itself is not
/// kept, so the writing thread has nothing of it to free either.
#[derive(Clone, Debug)]
pub struct PreparedNode {
    pub id: NodeId,
    pub session: SessionId,
    pub kind: NodeType,
    bytes: Vec<u8>,
    text: Option<search::PreparedText>,
}

impl PreparedNode {
    pub fn new(node: &Node) -> Result<Self> {
        Ok(Self {
            id: node.id,
            session: node.session,
            kind: node.kind,
            bytes: codec::encode(node)?,
            text: search::prepare(node),
        })
    }

    /// Size of the encoded record.
    pub fn encoded_len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether `stored` (a `nodes` record) already holds this node. Equal bytes are the
    /// common case; otherwise both are decoded, since a record written by an older version
    /// may encode the same node differently.
    fn same_as(&self, stored: &[u8]) -> bool {
        if stored == self.bytes.as_slice() {
            return true;
        }
        match (
            codec::decode::<Node>("nodes", stored),
            codec::decode::<Node>("nodes", &self.bytes),
        ) {
            (Ok(old), Ok(new)) => old == new,
            _ => false,
        }
    }
}

/// What [`Writer::put_prepared_nodes`] did with one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutOutcome {
    Created,
    Updated,
    /// The store held the same node already: nothing was written.
    Unchanged,
}

/// One write transaction. Every put appends a journal entry.
pub struct Writer<'t> {
    txn: &'t WriteTransaction,
    next_seq: u64,
    /// Full-text index changes of this transaction, merged just before it commits.
    index: search::PendingIndex,
}

impl Writer<'_> {
    fn journal(
        &mut self,
        kind: ChangeKind,
        session: Option<SessionId>,
        id: Option<uuid::Uuid>,
    ) -> Result<()> {
        let change = Change {
            kind,
            session,
            id,
            at: Utc::now(),
        };
        let mut t = self.txn.open_table(JOURNAL)?;
        t.insert(self.next_seq, codec::encode(&change)?.as_slice())?;
        self.next_seq += 1;
        Ok(())
    }

    /// Inserts or replaces a session.
    pub fn put_session(&mut self, s: &Session) -> Result<()> {
        self.txn
            .open_table(SESSIONS)?
            .insert(s.id.to_bytes(), codec::encode(s)?.as_slice())?;
        self.journal(ChangeKind::SessionPut, Some(s.id), Some(s.id.0))
    }

    /// Inserts or replaces a node, indexes it under its session and, unless it is still
    /// streaming, brings its full-text index entries up to date.
    pub fn put_node(&mut self, n: &Node) -> Result<()> {
        self.txn
            .open_table(NODES)?
            .insert(n.id.to_bytes(), codec::encode(n)?.as_slice())?;
        self.txn
            .open_table(SESSION_NODES)?
            .insert(key32(n.session.to_bytes(), n.id.to_bytes()), ())?;
        search::index_node(self.txn, &mut self.index, n)?;
        self.journal(ChangeKind::NodePut, Some(n.session), Some(n.id.0))
    }

    /// Puts many nodes, skipping those the store already holds unchanged: the same records
    /// and index entries as [`Writer::put_node`] on each, with every table opened once for
    /// the lot. The journal gets one entry per session changed (its newest node), which is
    /// what followers act on, rather than one per node.
    pub fn put_prepared_nodes(&mut self, nodes: &[PreparedNode]) -> Result<Vec<PutOutcome>> {
        let mut table = self.txn.open_table(NODES)?;
        let mut by_session = self.txn.open_table(SESSION_NODES)?;
        let mut docs = self.txn.open_table(SEARCH_DOCS)?;
        let mut outcomes = Vec::with_capacity(nodes.len());
        // The newest changed node of each session, for the journal.
        let mut changed: BTreeMap<SessionId, NodeId> = BTreeMap::new();
        for p in nodes {
            let outcome = match table.get(p.id.to_bytes())? {
                None => PutOutcome::Created,
                Some(old) if p.same_as(old.value()) => PutOutcome::Unchanged,
                Some(_) => PutOutcome::Updated,
            };
            outcomes.push(outcome);
            if outcome == PutOutcome::Unchanged {
                continue;
            }
            table.insert(p.id.to_bytes(), p.bytes.as_slice())?;
            by_session.insert(key32(p.session.to_bytes(), p.id.to_bytes()), ())?;
            if let Some(text) = &p.text {
                search::index_prepared(&mut docs, &mut self.index, p.id, p.session, text)?;
            }
            changed.insert(p.session, p.id);
        }
        drop((table, by_session, docs));
        for (session, id) in changed {
            self.journal(ChangeKind::NodePut, Some(session), Some(id.0))?;
        }
        Ok(outcomes)
    }

    /// Puts many edges, as [`Writer::put_edge`] on each with every table opened once, and
    /// one journal entry for the lot.
    pub fn put_edges(&mut self, edges: &[Edge]) -> Result<()> {
        let mut out = self.txn.open_table(EDGES_OUT)?;
        let mut inn = self.txn.open_table(EDGES_IN)?;
        for e in edges {
            let (s, d, c) = (e.src.to_bytes(), e.dst.to_bytes(), e.kind.code());
            out.insert(key33(s, c, d), codec::encode(e)?.as_slice())?;
            inn.insert(key33(d, c, s), ())?;
        }
        drop((out, inn));
        if let Some(last) = edges.last() {
            self.journal(ChangeKind::EdgePut, None, Some(last.src.0))?;
        }
        Ok(())
    }

    /// The stored versions of `ids` (in order), reading the table once.
    pub fn nodes(&self, ids: impl IntoIterator<Item = NodeId>) -> Result<Vec<Option<Node>>> {
        let t = self.txn.open_table(NODES)?;
        ids.into_iter()
            .map(|id| {
                t.get(id.to_bytes())?
                    .map(|v| codec::decode("nodes", v.value()))
                    .transpose()
            })
            .collect()
    }

    pub fn node(&self, id: NodeId) -> Result<Option<Node>> {
        let t = self.txn.open_table(NODES)?;
        t.get(id.to_bytes())?
            .map(|v| codec::decode("nodes", v.value()))
            .transpose()
    }

    pub fn session(&self, id: SessionId) -> Result<Option<Session>> {
        let t = self.txn.open_table(SESSIONS)?;
        t.get(id.to_bytes())?
            .map(|v| codec::decode("sessions", v.value()))
            .transpose()
    }

    /// Inserts or replaces an edge in both directions' indexes.
    pub fn put_edge(&mut self, e: &Edge) -> Result<()> {
        let (s, d, c) = (e.src.to_bytes(), e.dst.to_bytes(), e.kind.code());
        self.txn
            .open_table(EDGES_OUT)?
            .insert(key33(s, c, d), codec::encode(e)?.as_slice())?;
        self.txn.open_table(EDGES_IN)?.insert(key33(d, c, s), ())?;
        self.journal(ChangeKind::EdgePut, None, Some(e.src.0))
    }

    pub fn put_decision_point(&mut self, d: &DecisionPoint) -> Result<()> {
        self.txn.open_table(DECISION_POINTS)?.insert(
            key32(d.node.to_bytes(), d.id.to_bytes()),
            codec::encode(d)?.as_slice(),
        )?;
        self.journal(ChangeKind::DecisionPut, None, Some(d.id.0))
    }

    pub fn put_insight(&mut self, i: &Insight) -> Result<()> {
        self.txn.open_table(INSIGHTS)?.insert(
            key32(i.session.to_bytes(), i.id.to_bytes()),
            codec::encode(i)?.as_slice(),
        )?;
        self.journal(ChangeKind::InsightPut, Some(i.session), Some(i.id.0))
    }

    pub fn put_run(&mut self, run: &Run) -> Result<()> {
        self.txn
            .open_table(RUNS)?
            .insert(run.id.to_bytes(), codec::encode(run)?.as_slice())?;
        self.txn
            .open_table(SESSION_RUNS)?
            .insert(key32(run.session.to_bytes(), run.id.to_bytes()), ())?;
        self.journal(ChangeKind::RunPut, Some(run.session), Some(run.id.0))
    }

    /// Inserts or replaces a raw stream header.
    pub fn put_raw_stream(&mut self, s: &RawStream) -> Result<()> {
        self.txn
            .open_table(RAW_STREAMS)?
            .insert(s.id.to_bytes(), codec::encode(s)?.as_slice())?;
        self.txn
            .open_table(SESSION_STREAMS)?
            .insert(key32(s.session.to_bytes(), s.id.to_bytes()), ())?;
        self.journal(ChangeKind::StreamPut, Some(s.session), Some(s.id.0))
    }

    /// Stores chunk `index` of a raw stream.
    pub fn put_raw_chunk(
        &mut self,
        stream: StreamId,
        index: u32,
        chunk: &StoredChunk,
    ) -> Result<()> {
        let mut v = Vec::with_capacity(8 + chunk.bytes.len());
        v.extend_from_slice(&chunk.offset_us.to_be_bytes());
        v.extend_from_slice(&chunk.bytes);
        self.txn
            .open_table(RAW_CHUNKS)?
            .insert(chunk_key(stream.to_bytes(), index), v.as_slice())?;
        Ok(())
    }

    pub fn put_memory(&mut self, m: &MemoryEntry) -> Result<()> {
        let bytes = codec::encode(m)?;
        match m.tier {
            MemoryTier::Core => {
                let label = m
                    .label
                    .as_deref()
                    .ok_or_else(|| StoreError::Encode("core memory entries need a label".into()))?;
                self.txn
                    .open_table(MEMORY_CORE)?
                    .insert(label, bytes.as_slice())?;
            }
            MemoryTier::Working => {
                self.txn
                    .open_table(MEMORY_WORKING)?
                    .insert(m.id.to_bytes(), bytes.as_slice())?;
            }
            MemoryTier::Recall => {
                self.txn
                    .open_table(MEMORY_RECALL)?
                    .insert(m.id.to_bytes(), bytes.as_slice())?;
            }
            MemoryTier::Archival => {
                self.txn
                    .open_table(MEMORY_ARCHIVAL)?
                    .insert(m.id.to_bytes(), bytes.as_slice())?;
            }
        }
        self.journal(ChangeKind::MemoryPut, m.session, Some(m.id.0))
    }

    /// Appends a learning event unless its idempotency key was seen before. Returns the
    /// event's sequence number and whether it was new.
    pub fn append_learning_event(
        &mut self,
        idempotency_key: &str,
        kind: &str,
        payload: serde_json::Value,
        occurred_at: chrono::DateTime<Utc>,
    ) -> Result<(u64, bool)> {
        let mut keys = self.txn.open_table(LEARNING_EVENT_KEYS)?;
        if let Some(seq) = keys.get(idempotency_key)? {
            return Ok((seq.value(), false));
        }
        let mut events = self.txn.open_table(LEARNING_EVENTS)?;
        let seq = events.last()?.map(|(k, _)| k.value() + 1).unwrap_or(1);
        let ev = LearningEvent {
            seq,
            idempotency_key: idempotency_key.to_string(),
            kind: kind.to_string(),
            payload,
            occurred_at,
            recorded_at: Utc::now(),
        };
        events.insert(seq, codec::encode(&ev)?.as_slice())?;
        keys.insert(idempotency_key, seq)?;
        drop((events, keys));
        self.journal(ChangeKind::LearningEvent, None, None)?;
        Ok((seq, true))
    }

    /// Saves a projection's state together with the event sequence it is current to.
    pub fn put_projection(&mut self, name: &str, state: &[u8], checkpoint: u64) -> Result<()> {
        self.txn.open_table(PROJECTIONS)?.insert(name, state)?;
        self.txn
            .open_table(PROJECTION_CHECKPOINTS)?
            .insert(name, checkpoint)?;
        Ok(())
    }

    pub fn put_transcript_cursor(&mut self, c: &TranscriptCursor) -> Result<()> {
        self.txn
            .open_table(TRANSCRIPT_CURSORS)?
            .insert(c.path.as_str(), codec::encode(c)?.as_slice())?;
        self.journal(ChangeKind::CursorPut, None, None)
    }

    /// Deletes a session and everything it owns: nodes, their edges (both indexes), decision
    /// points and search index entries, runs, insights and raw streams with their chunks.
    pub fn delete_session(&mut self, id: SessionId) -> Result<bool> {
        let sid = id.to_bytes();
        if self.txn.open_table(SESSIONS)?.remove(sid)?.is_none() {
            return Ok(false);
        }
        let mut node_ids = Vec::new();
        self.txn
            .open_table(SESSION_NODES)?
            .extract_from_if(prefix32(sid), |k, _| {
                node_ids.push(split32(k).1);
                true
            })?
            .for_each(drop);
        {
            let mut nodes = self.txn.open_table(NODES)?;
            let mut out = self.txn.open_table(EDGES_OUT)?;
            let mut inn = self.txn.open_table(EDGES_IN)?;
            let mut dps = self.txn.open_table(DECISION_POINTS)?;
            for n in &node_ids {
                nodes.remove(*n)?;
                search::unindex_node(self.txn, &mut self.index, *n)?;
                // Outgoing edges and their reverse entries.
                let mut gone = Vec::new();
                for row in out.extract_from_if(prefix33(*n), |_, _| true)? {
                    let (k, _) = row?;
                    gone.push(k.value());
                }
                for k in gone {
                    let (src, code, dst) = split33(k);
                    inn.remove(key33(dst, code, src))?;
                }
                // Incoming edges (from nodes of other sessions too) and their forward entries.
                let mut gone = Vec::new();
                for row in inn.extract_from_if(prefix33(*n), |_, _| true)? {
                    let (k, _) = row?;
                    gone.push(k.value());
                }
                for k in gone {
                    let (dst, code, src) = split33(k);
                    out.remove(key33(src, code, dst))?;
                }
                for row in dps.extract_from_if(prefix32(*n), |_, _| true)? {
                    row?;
                }
            }
        }
        {
            let mut idx = self.txn.open_table(SESSION_RUNS)?;
            let mut runs = self.txn.open_table(RUNS)?;
            let mut gone = Vec::new();
            for row in idx.extract_from_if(prefix32(sid), |_, _| true)? {
                gone.push(split32(row?.0.value()).1);
            }
            for r in gone {
                runs.remove(r)?;
            }
        }
        {
            let mut insights = self.txn.open_table(INSIGHTS)?;
            for row in insights.extract_from_if(prefix32(sid), |_, _| true)? {
                row?;
            }
        }
        {
            let mut idx = self.txn.open_table(SESSION_STREAMS)?;
            let mut streams = self.txn.open_table(RAW_STREAMS)?;
            let mut chunks = self.txn.open_table(RAW_CHUNKS)?;
            let mut gone = Vec::new();
            for row in idx.extract_from_if(prefix32(sid), |_, _| true)? {
                gone.push(split32(row?.0.value()).1);
            }
            for s in gone {
                streams.remove(s)?;
                for row in
                    chunks.extract_from_if(chunk_key(s, 0)..=chunk_key(s, u32::MAX), |_, _| true)?
                {
                    row?;
                }
            }
        }
        self.journal(ChangeKind::SessionDeleted, Some(id), Some(id.0))?;
        Ok(true)
    }
}

/// Edge keys of `node` (as first id), of one type or all.
fn edge_range(node: NodeId, kind: Option<EdgeType>) -> std::ops::RangeInclusive<[u8; 33]> {
    match kind {
        Some(k) => {
            key33(node.to_bytes(), k.code(), [0; 16])..=key33(node.to_bytes(), k.code(), [0xff; 16])
        }
        None => prefix33(node.to_bytes()),
    }
}

/// Values of a `prefix ‖ id` keyed table under one prefix, in key order.
fn prefixed<T: serde::de::DeserializeOwned>(
    r: &ReadTransaction,
    def: redb::TableDefinition<[u8; 32], &[u8]>,
    name: &str,
    prefix: [u8; 16],
) -> Result<Vec<T>> {
    let t = r.open_table(def)?;
    let mut out = Vec::new();
    for row in t.range(prefix32(prefix))? {
        let (_, v) = row?;
        out.push(codec::decode(name, v.value())?);
    }
    Ok(out)
}

/// Records listed by an `owner ‖ id` index, read from the table keyed by id.
fn joined<T: serde::de::DeserializeOwned>(
    r: &ReadTransaction,
    index: redb::TableDefinition<[u8; 32], ()>,
    table: redb::TableDefinition<[u8; 16], &[u8]>,
    name: &str,
    owner: [u8; 16],
) -> Result<Vec<T>> {
    let idx = r.open_table(index)?;
    let t = r.open_table(table)?;
    let mut out = Vec::new();
    for row in idx.range(prefix32(owner))? {
        let (k, _) = row?;
        if let Some(v) = t.get(split32(k.value()).1)? {
            out.push(codec::decode(name, v.value())?);
        }
    }
    Ok(out)
}

fn decode_chunk(v: &[u8]) -> Result<StoredChunk> {
    if v.len() < 8 {
        return Err(StoreError::Corrupt(
            "raw_chunks: value shorter than its header".into(),
        ));
    }
    let mut off = [0u8; 8];
    off.copy_from_slice(&v[..8]);
    Ok(StoredChunk {
        offset_us: u64::from_be_bytes(off),
        bytes: v[8..].to_vec(),
    })
}

fn get16<T: serde::de::DeserializeOwned>(
    r: &ReadTransaction,
    def: redb::TableDefinition<[u8; 16], &[u8]>,
    name: &str,
    key: [u8; 16],
) -> Result<Option<T>> {
    let t = r.open_table(def)?;
    t.get(key)?
        .map(|v| codec::decode(name, v.value()))
        .transpose()
}

fn normalise_prefix(text: &str) -> String {
    text.chars()
        .filter(|c| *c != '-')
        .collect::<String>()
        .to_ascii_lowercase()
}

fn resolve_prefix(
    keys: impl Iterator<Item = std::result::Result<[u8; 16], redb::StorageError>>,
    want: &str,
    text: &str,
    what: &'static str,
) -> Result<[u8; 16]> {
    if want.len() < 4 || !want.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(StoreError::NotFound(format!(
            "{what} '{text}' (give a full id or at least 4 hex digits)"
        )));
    }
    let mut found = None;
    for k in keys {
        let k = k?;
        let hex = hex::encode(k);
        if hex.starts_with(want) || hex.ends_with(want) {
            if found.is_some() {
                return Err(StoreError::Ambiguous(text.to_string(), what));
            }
            found = Some(k);
        }
    }
    found.ok_or_else(|| StoreError::NotFound(format!("{what} '{text}'")))
}

fn describe_open_error(e: redb::DatabaseError) -> String {
    match e {
        redb::DatabaseError::Storage(redb::StorageError::Corrupted(msg)) => {
            format!("the file is corrupt or not a glassbox store ({msg})")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
