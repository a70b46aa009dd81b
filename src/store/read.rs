//! Reading the store: sessions, nodes, edges and everything else by id or by owner, id
//! prefixes resolved, table counts. Each call is one read transaction.

use super::kv::{ReadTxn, ReadableTable};
use super::tables::*;
use super::*;

/// How many nodes [`Store::for_each_session_node`] reads at once.
const WALK_BATCH: usize = 32;

impl Store {
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

    /// The key of `table` that `text` names: a unique prefix or suffix (as `short()` shows)
    /// of its hex form.
    fn resolve_key(
        &self,
        table: crate::store::kv::TableDefinition<[u8; 16], &[u8]>,
        text: &str,
        what: &'static str,
    ) -> Result<[u8; 16]> {
        let want = normalise_prefix(text);
        let r = self.read()?;
        let t = r.open_table(table)?;
        resolve_prefix(
            t.iter()?.map(|row| row.map(|(k, _)| k.value())),
            &want,
            text,
            what,
        )
    }

    /// Resolves a full session id, or a unique prefix or suffix of its hex form.
    pub fn resolve_session(&self, text: &str) -> Result<SessionId> {
        match text.parse::<SessionId>() {
            Ok(id) => Ok(id),
            Err(_) => self
                .resolve_key(SESSIONS, text, "session")
                .map(SessionId::from_bytes),
        }
    }

    /// Resolves a full node id, or a unique prefix or suffix of its hex form.
    pub fn resolve_node(&self, text: &str) -> Result<NodeId> {
        match text.parse::<NodeId>() {
            Ok(id) => Ok(id),
            Err(_) => self
                .resolve_key(NODES, text, "node")
                .map(NodeId::from_bytes),
        }
    }

    /// Resolves a full run id, or a unique prefix or suffix of its hex form.
    pub fn resolve_run(&self, text: &str) -> Result<RunId> {
        match text.parse::<RunId>() {
            Ok(id) => Ok(id),
            Err(_) => self.resolve_key(RUNS, text, "run").map(RunId::from_bytes),
        }
    }

    pub fn node(&self, id: NodeId) -> Result<Option<Node>> {
        get16(&self.read()?, NODES, "nodes", id.to_bytes())
    }

    /// A session's nodes in creation order.
    pub fn session_nodes(&self, session: SessionId) -> Result<Vec<Node>> {
        let mut out = Vec::new();
        self.for_each_session_node(session, |n| {
            out.push(n);
            Ok(std::ops::ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// A session's node heads in creation order: what lists, trees and counts need, without
    /// reading any node's body.
    pub fn session_heads(&self, session: SessionId) -> Result<Vec<NodeHead>> {
        let mut out = Vec::new();
        self.for_each_session_head(session, |h| out.push(h))?;
        Ok(out)
    }

    /// A session's node heads in creation order, handed to `f` one at a time.
    pub fn for_each_session_head(
        &self,
        session: SessionId,
        mut f: impl FnMut(NodeHead),
    ) -> Result<()> {
        let r = self.read()?;
        let idx = r.open_table(SESSION_HEADS)?;
        for row in idx.range(prefix32(session.to_bytes()))? {
            let (k, v) = row?;
            f(NodeHead::decode(&k.value(), v.value())?);
        }
        Ok(())
    }

    /// The nodes with these ids that exist, read in one transaction (on a byte backend in
    /// one batch), in the order given.
    pub fn nodes(&self, ids: &[NodeId]) -> Result<Vec<Node>> {
        let r = self.read()?;
        let t = r.open_table(NODES)?;
        let mut out = Vec::with_capacity(ids.len());
        for v in t
            .get_many(ids.iter().map(|id| id.to_bytes()))?
            .into_iter()
            .flatten()
        {
            out.push(codec::decode("nodes", v.value())?);
        }
        Ok(out)
    }

    /// A session's nodes in creation order, handed to `f` one at a time from one read
    /// transaction, read `WALK_BATCH` at a time (one batch on a byte backend), so a
    /// session of any size is read in the memory of that many nodes. `f` stops the walk by
    /// returning `ControlFlow::Break`.
    pub fn for_each_session_node(
        &self,
        session: SessionId,
        mut f: impl FnMut(Node) -> Result<std::ops::ControlFlow<()>>,
    ) -> Result<()> {
        let r = self.read()?;
        let idx = r.open_table(SESSION_HEADS)?;
        let t = r.open_table(NODES)?;
        let mut rows = idx.range(prefix32(session.to_bytes()))?;
        let mut ids = Vec::with_capacity(WALK_BATCH);
        loop {
            ids.clear();
            for row in rows.by_ref().take(WALK_BATCH) {
                ids.push(split32(row?.0.value()).1);
            }
            if ids.is_empty() {
                return Ok(());
            }
            for v in t.get_many(ids.iter())?.into_iter().flatten() {
                if f(codec::decode("nodes", v.value())?)?.is_break() {
                    return Ok(());
                }
            }
        }
    }

    /// Every edge whose source node belongs to `session`, handed to `f` one at a time (see
    /// [`Store::for_each_session_node`]).
    pub fn for_each_session_edge(
        &self,
        session: SessionId,
        mut f: impl FnMut(Edge) -> Result<std::ops::ControlFlow<()>>,
    ) -> Result<()> {
        let r = self.read()?;
        let idx = r.open_table(SESSION_HEADS)?;
        let t = r.open_table(EDGES_OUT)?;
        for row in idx.range(prefix32(session.to_bytes()))? {
            let (k, _) = row?;
            let (_, node) = split32(k.value());
            for e in t.range(prefix33(node))? {
                let (k, v) = e?;
                if f(codec::decode_edge(k.value(), v.value())?)?.is_break() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// How many edges leave the nodes of `session` (keys only: no edge is decoded).
    pub fn session_edge_count(&self, session: SessionId) -> Result<u64> {
        let r = self.read()?;
        let idx = r.open_table(SESSION_HEADS)?;
        let t = r.open_table(EDGES_OUT)?;
        let mut n = 0;
        for row in idx.range(prefix32(session.to_bytes()))? {
            let (k, _) = row?;
            for e in t.range(prefix33(split32(k.value()).1))? {
                e?;
                n += 1;
            }
        }
        Ok(n)
    }

    pub fn session_node_count(&self, session: SessionId) -> Result<u64> {
        let r = self.read()?;
        let idx = r.open_table(SESSION_HEADS)?;
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
            let (k, v) = row?;
            out.push(codec::decode_edge(k.value(), v.value())?);
        }
        Ok(out)
    }

    /// Edges arriving at `node`, optionally of one type (read through the reverse index).
    pub fn edges_to(&self, node: NodeId, kind: Option<EdgeType>) -> Result<Vec<Edge>> {
        let r = self.read()?;
        let idx = r.open_table(EDGES_IN)?;
        let out_t = r.open_table(EDGES_OUT)?;
        let range = edge_range(node, kind);
        let mut keys = Vec::new();
        for row in idx.range(range)? {
            let (dst, code, src) = split33(row?.0.value());
            keys.push(key33(src, code, dst));
        }
        let mut out = Vec::with_capacity(keys.len());
        for (k, v) in keys.iter().zip(out_t.get_many(keys.iter())?) {
            if let Some(v) = v {
                out.push(codec::decode_edge(*k, v.value())?);
            }
        }
        Ok(out)
    }

    /// Every edge whose source node belongs to `session`.
    pub fn session_edges(&self, session: SessionId) -> Result<Vec<Edge>> {
        let mut out = Vec::new();
        self.for_each_session_edge(session, |e| {
            out.push(e);
            Ok(std::ops::ControlFlow::Continue(()))
        })?;
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
            out.push(codec::decode_raw_chunk(v.value())?);
        }
        Ok(out)
    }

    pub fn transcript_cursor(&self, path: &str) -> Result<Option<TranscriptCursor>> {
        let r = self.read()?;
        let t = r.open_table(TRANSCRIPT_CURSORS)?;
        t.get(path)?
            .map(|v| codec::decode("transcript_cursors", v.value()))
            .transpose()
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
            memory: r.open_table(MEMORIES)?.len()?,
            learning_events: r.open_table(LEARNING_EVENTS)?.len()?,
            transcript_cursors: r.open_table(TRANSCRIPT_CURSORS)?.len()?,
            journal: r.open_table(JOURNAL)?.len()?,
            search_docs: r.open_table(SEARCH_DOCS)?.len()?,
        })
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
    r: &ReadTxn,
    def: crate::store::kv::TableDefinition<[u8; 32], &[u8]>,
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

/// Records listed by an `owner ‖ id` index, read from the table keyed by id (on a byte
/// backend in one batch).
fn joined<T: serde::de::DeserializeOwned>(
    r: &ReadTxn,
    index: crate::store::kv::TableDefinition<[u8; 32], ()>,
    table: crate::store::kv::TableDefinition<[u8; 16], &[u8]>,
    name: &str,
    owner: [u8; 16],
) -> Result<Vec<T>> {
    let idx = r.open_table(index)?;
    let t = r.open_table(table)?;
    let mut ids = Vec::new();
    for row in idx.range(prefix32(owner))? {
        ids.push(split32(row?.0.value()).1);
    }
    let mut out = Vec::with_capacity(ids.len());
    for v in t.get_many(ids.iter())?.into_iter().flatten() {
        out.push(codec::decode(name, v.value())?);
    }
    Ok(out)
}

fn get16<T: serde::de::DeserializeOwned>(
    r: &ReadTxn,
    def: crate::store::kv::TableDefinition<[u8; 16], &[u8]>,
    name: &str,
    key: [u8; 16],
) -> Result<Option<T>> {
    let t = r.open_table(def)?;
    t.get(key)?
        .map(|v| codec::decode(name, v.value()))
        .transpose()
}

pub(super) fn normalise_prefix(text: &str) -> String {
    text.chars()
        .filter(|c| *c != '-')
        .collect::<String>()
        .to_ascii_lowercase()
}

pub(super) fn resolve_prefix(
    keys: impl Iterator<Item = std::result::Result<[u8; 16], StoreError>>,
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
