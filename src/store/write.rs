//! Writing the store: one [`Writer`] per transaction, with a put for every kind of record,
//! batch puts for importers, and the cascade that deletes a session.

use std::collections::BTreeMap;

use super::kv::{ReadableTable, WriteTxn};
use super::tables::*;
use super::*;

/// A node with the work of writing it done ahead, off the writing thread: its encoded record
/// and its full-text index form (see [`Writer::put_prepared_nodes`]). The node itself is not
/// kept, so the writing thread has nothing of it to free either.
#[derive(Clone, Debug)]
pub struct PreparedNode {
    pub id: NodeId,
    pub session: SessionId,
    pub kind: NodeType,
    bytes: Vec<u8>,
    head: Vec<u8>,
    text: Option<search::PreparedText>,
}

impl PreparedNode {
    /// The node's record compressed with `dict`, if one is given (the store's, or an
    /// import's [`dict::DictFeed`]).
    pub fn new(node: &Node, dict: Option<&dict::RecordDict>) -> Result<Self> {
        Ok(Self {
            id: node.id,
            session: node.session,
            kind: node.kind,
            bytes: codec::encode_node(node, dict)?,
            head: NodeHead::of(node).encode()?,
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

/// Text size from which [`EncodedNode::new`] finds a node's words on a second thread.
const SPLIT_PUT_BYTES: usize = 1 << 20;

/// Whether words found from `n`'s text alone are its index entries: a streaming node is not
/// indexed yet, and a tool call is found by more than its text.
fn takes_found_words(n: &Node) -> bool {
    n.status != NodeStatus::Streaming && n.kind != NodeType::ToolCall
}

/// A node's record, and for a large node its words, made ready before the transaction that
/// puts it ([`Writer::put_encoded_node`]): a streamed node's final write encodes while the
/// write before it commits.
pub struct EncodedNode {
    bytes: Vec<u8>,
    words: Words,
}

/// How the put of an [`EncodedNode`] brings the node's index entries up to date.
enum Words {
    /// It finds the words itself.
    Find,
    /// With these, found ahead (for a large finished node).
    Found(search::PreparedText),
    /// It leaves them: [`Writer::index_words`] did it earlier in the transaction.
    Indexed,
    /// It leaves them for later: the node is marked for the next search to index.
    Later,
}

impl EncodedNode {
    /// The node's record (compressed with `dict`, if one is given: the store's,
    /// [`Store::record_dict`]) and, for a large node, its words.
    pub fn new(n: &Node, dict: Option<&dict::RecordDict>) -> Result<Self> {
        // A large node is encoded on this thread while another finds its words: the two
        // are most of the cost of putting it, and neither needs the other.
        if n.text.len() >= SPLIT_PUT_BYTES && n.status != NodeStatus::Streaming {
            let (bytes, prepared) = std::thread::scope(|s| {
                let words = s.spawn(|| search::prepare(n));
                let bytes = codec::encode_node(n, dict);
                (bytes, words.join().ok().flatten())
            });
            return Ok(Self {
                bytes: bytes?,
                words: prepared.map_or(Words::Find, Words::Found),
            });
        }
        Self::without_terms(n, dict)
    }

    /// A node's record alone: its put finds the words, unless it is [`EncodedNode::indexed`].
    pub fn without_terms(n: &Node, dict: Option<&dict::RecordDict>) -> Result<Self> {
        Ok(Self {
            bytes: codec::encode_node(n, dict)?,
            words: Words::Find,
        })
    }

    /// A record written as its node's text streamed in ([`super::streamed::RecordStream`]):
    /// its put finds the words, unless it is [`EncodedNode::indexed`] or
    /// [`EncodedNode::index_later`].
    pub(super) fn streamed(bytes: Vec<u8>) -> Self {
        Self {
            bytes,
            words: Words::Find,
        }
    }

    /// The record's bytes.
    #[cfg(test)]
    pub(super) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// This record, for a node whose index entries [`Writer::index_words`] brought up to
    /// date in the transaction that puts it.
    pub fn indexed(self) -> Self {
        Self {
            words: Words::Indexed,
            ..self
        }
    }

    /// This record, for a node whose words go into the index later: its put marks it for
    /// the next search ([`Store::index_pending`]) instead.
    pub fn index_later(self) -> Self {
        Self {
            words: Words::Later,
            ..self
        }
    }
}

/// A raw chunk's record, made (compressed) before the transaction that puts it
/// ([`Writer::put_raw_chunks`]).
pub struct EncodedChunk(Vec<u8>);

impl EncodedChunk {
    /// The chunk that arrived `offset_us` µs after its request was sent.
    pub fn new(offset_us: u64, bytes: &[u8]) -> Self {
        Self(codec::encode_raw_chunk(offset_us, bytes))
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
    pub(super) txn: &'t WriteTxn,
    /// The journal sequence number the next change gets.
    pub(super) next_seq: u64,
    /// Full-text index changes of this transaction, merged just before it commits.
    pub(super) index: search::PendingIndex,
    /// The dictionary node records are compressed with.
    pub(super) dict: Option<Arc<dict::RecordDict>>,
    /// A dictionary this transaction stored, for the store's handle once it commits.
    pub(super) new_dict: Option<Arc<dict::RecordDict>>,
}

impl Writer<'_> {
    /// Inserts or replaces a session.
    pub fn put_session(&mut self, s: &Session) -> Result<()> {
        self.txn
            .open_table(SESSIONS)?
            .insert(s.id.to_bytes(), codec::encode(s)?.as_slice())?;
        self.journal(ChangeKind::SessionPut, Some(s.id), Some(s.id.0))
    }

    /// Inserts or replaces a node, indexes it under its session and, unless it is still
    /// streaming, brings its full-text index entries up to date.
    /// The dictionary node records written in this transaction are compressed with.
    pub fn record_dict(&self) -> Option<Arc<dict::RecordDict>> {
        self.dict.clone()
    }

    pub fn put_node(&mut self, n: &Node) -> Result<()> {
        let encoded = EncodedNode::new(n, self.dict.as_deref())?;
        self.put_encoded_node(n, encoded)
    }

    /// [`Writer::put_node`] with the node's record and words found ahead (by
    /// [`EncodedNode::new`] on `n` as it is now), perhaps on another thread while another
    /// transaction was under way.
    pub fn put_encoded_node(&mut self, n: &Node, encoded: EncodedNode) -> Result<()> {
        let EncodedNode { bytes, words } = encoded;
        let old = self
            .txn
            .open_table(NODES)?
            .insert(n.id.to_bytes(), bytes.as_slice())?
            .map(|v| v.value().to_vec());
        self.txn.open_table(SESSION_HEADS)?.put(
            key32(n.session.to_bytes(), n.id.to_bytes()),
            NodeHead::of(n).encode()?.as_slice(),
        )?;
        match words {
            Words::Found(p) => self.index_found(n, &p, old.as_deref())?,
            Words::Find => search::index_node(self.txn, &mut self.index, n, old.as_deref())?,
            Words::Indexed => {}
            Words::Later => {
                // Words of an earlier text of it are not left behind in the index.
                search::unindex_node(self.txn, &mut self.index, n.id.to_bytes(), old.as_deref())?;
                self.txn
                    .open_table(SEARCH_PENDING)?
                    .put(n.id.to_bytes(), ())?;
            }
        }
        super::leases::note(self.txn, n)?;
        self.journal(ChangeKind::NodePut, Some(n.session), Some(n.id.0))
    }

    /// Brings `n`'s full-text index entries up to date from `words` (found from its whole
    /// text) before its record is put, with an [`EncodedNode::indexed`] record, later in
    /// this transaction: a long trace's record can then be encoded on another thread while
    /// its words go into the index.
    pub fn index_words(&mut self, n: &Node, words: &search::PreparedText) -> Result<()> {
        let old = self
            .txn
            .open_table(NODES)?
            .get(n.id.to_bytes())?
            .map(|v| v.value().to_vec());
        if takes_found_words(n) {
            self.index_found(n, words, old.as_deref())
        } else {
            search::index_node(self.txn, &mut self.index, n, old.as_deref())
        }
    }

    /// Indexes the nodes whose words were left for later ([`EncodedNode::index_later`]):
    /// those still stored, from their text as it is now. Returns how many marks it took.
    pub fn index_pending(&mut self) -> Result<usize> {
        let ids: Vec<[u8; 16]> = self
            .txn
            .open_table(SEARCH_PENDING)?
            .iter()?
            .map(|row| row.map(|(k, _)| k.value()))
            .collect::<Result<_>>()?;
        for id in &ids {
            let record = self
                .txn
                .open_table(NODES)?
                .get(*id)?
                .map(|v| v.value().to_vec());
            if let Some(bytes) = record {
                let n: Node = codec::decode("nodes", &bytes)?;
                search::index_node(self.txn, &mut self.index, &n, Some(&bytes))?;
            }
            self.txn.open_table(SEARCH_PENDING)?.remove(*id)?;
        }
        Ok(ids.len())
    }

    /// Merges the index changes gathered so far now, rather than when the transaction
    /// commits (see [`Writer::index_words`]).
    pub fn apply_index(&mut self) -> Result<()> {
        self.index.apply(self.txn)
    }

    /// Indexes `n` under words found ahead; `old` is its record before this put.
    fn index_found(
        &mut self,
        n: &Node,
        words: &search::PreparedText,
        old: Option<&[u8]>,
    ) -> Result<()> {
        let mut docs = self.txn.open_table(SEARCH_DOCS)?;
        let old_doc = search::stored_doc(&docs, n.id)?;
        search::index_prepared(
            self.txn,
            &mut docs,
            &mut self.index,
            n.id,
            n.session,
            words,
            old,
            old_doc.as_deref(),
        )
    }

    /// Puts many nodes, skipping those the store already holds unchanged: the same records
    /// and index entries as [`Writer::put_node`] on each, with every table opened once for
    /// the lot. The journal gets one entry per session changed (its newest node), which is
    /// what followers act on, rather than one per node.
    pub fn put_prepared_nodes(&mut self, nodes: &[PreparedNode]) -> Result<Vec<PutOutcome>> {
        let mut table = self.txn.open_table(NODES)?;
        let mut by_session = self.txn.open_table(SESSION_HEADS)?;
        let mut docs = self.txn.open_table(SEARCH_DOCS)?;
        let mut outcomes = Vec::with_capacity(nodes.len());
        // The newest changed node of each session, for the journal.
        let mut changed: BTreeMap<SessionId, NodeId> = BTreeMap::new();
        // What the store holds under each id, read in one batch each (a byte backend answers
        // a batch in one round trip); an id met again in `nodes` is read again, after its
        // first put.
        let ids: Vec<[u8; 16]> = nodes.iter().map(|p| p.id.to_bytes()).collect();
        let stored = read_many(&table, &ids)?;
        let stored_docs = read_many(&docs, &ids)?;
        let mut seen: std::collections::HashSet<NodeId> =
            std::collections::HashSet::with_capacity(nodes.len());
        for ((p, first_read), first_doc) in nodes.iter().zip(stored).zip(stored_docs) {
            let (now, doc_now) = if seen.insert(p.id) {
                (first_read, first_doc)
            } else {
                let id = [p.id.to_bytes()];
                (
                    read_many(&table, &id)?.remove(0),
                    read_many(&docs, &id)?.remove(0),
                )
            };
            let (outcome, old) = match now {
                None => (PutOutcome::Created, None),
                Some(old) if p.same_as(old.as_slice()) => (PutOutcome::Unchanged, None),
                Some(old) => (PutOutcome::Updated, Some(old)),
            };
            outcomes.push(outcome);
            if outcome == PutOutcome::Unchanged {
                continue;
            }
            table.put(p.id.to_bytes(), p.bytes.as_slice())?;
            by_session.put(
                key32(p.session.to_bytes(), p.id.to_bytes()),
                p.head.as_slice(),
            )?;
            if let Some(text) = &p.text {
                search::index_prepared(
                    self.txn,
                    &mut docs,
                    &mut self.index,
                    p.id,
                    p.session,
                    text,
                    old.as_deref(),
                    doc_now.as_deref(),
                )?;
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
            out.put(key33(s, c, d), codec::encode_edge(e)?.as_slice())?;
            inn.put(key33(d, c, s), ())?;
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
            .insert(key33(s, c, d), codec::encode_edge(e)?.as_slice())?;
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
        let v = codec::encode_raw_chunk(chunk.offset_us, &chunk.bytes);
        self.txn
            .open_table(RAW_CHUNKS)?
            .put(chunk_key(stream.to_bytes(), index), v.as_slice())?;
        Ok(())
    }

    /// Stores chunks `first`, `first + 1`, … of a raw stream, encoded ahead (off the
    /// writing thread) by [`EncodedChunk::new`], with the table opened once.
    pub fn put_raw_chunks<'c>(
        &mut self,
        stream: StreamId,
        first: u32,
        chunks: impl IntoIterator<Item = &'c EncodedChunk>,
    ) -> Result<()> {
        let mut table = self.txn.open_table(RAW_CHUNKS)?;
        for (i, chunk) in chunks.into_iter().enumerate() {
            let index = u32::try_from(i)
                .ok()
                .and_then(|i| first.checked_add(i))
                .ok_or_else(|| StoreError::Invalid("a raw stream of over 2^32 chunks".into()))?;
            table.put(chunk_key(stream.to_bytes(), index), chunk.0.as_slice())?;
        }
        Ok(())
    }

    pub fn put_transcript_cursor(&mut self, c: &TranscriptCursor) -> Result<()> {
        self.txn
            .open_table(TRANSCRIPT_CURSORS)?
            .insert(c.path.as_str(), codec::encode(c)?.as_slice())?;
        self.journal(ChangeKind::CursorPut, None, None)
    }

    /// Merges the full-text index into one run without tombstones (the smallest form, and the
    /// fastest to search); returns the postings it holds. Imports leave a few runs; this is
    /// for `doctor --compact`.
    pub fn compact_search_index(&mut self) -> Result<u64> {
        self.index.apply(self.txn)?;
        search::compact(self.txn)
    }

    /// Deletes a session and everything it owns: nodes, their edges (both indexes), decision
    /// points and search index entries, runs, insights, raw streams with their chunks, and the
    /// memory entries of its session scope.
    pub fn delete_session(&mut self, id: SessionId) -> Result<bool> {
        let sid = id.to_bytes();
        if self.txn.open_table(SESSIONS)?.remove(sid)?.is_none() {
            return Ok(false);
        }
        let mut node_ids = Vec::new();
        self.txn
            .open_table(SESSION_HEADS)?
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
                let old = nodes.remove(*n)?.map(|v| v.value().to_vec());
                search::unindex_node(self.txn, &mut self.index, *n, old.as_deref())?;
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
        self.delete_scope_memories(&MemoryScope::Session(id))?;
        self.journal(ChangeKind::SessionDeleted, Some(id), Some(id.0))?;
        Ok(true)
    }
}

/// The values under `keys` of a table keyed by id, copied out, in one batch.
fn read_many(
    table: &crate::store::kv::Table<'_, [u8; 16], &[u8]>,
    keys: &[[u8; 16]],
) -> Result<Vec<Option<Vec<u8>>>> {
    Ok(table
        .get_many(keys)?
        .into_iter()
        .map(|v| v.map(|v| v.value().to_vec()))
        .collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::store::testing::{Fixture, on_every_arm};

    on_every_arm!(
        a_large_node_is_encoded_ahead_and_indexed_once_finished,
        words_indexed_ahead_in_the_transaction_leave_the_index_of_a_plain_put,
    );

    /// A node large enough to find its words on a second thread, put while streaming and then
    /// finished (one encoded ahead of its transaction): stored whole, found by its words once
    /// finished only, and the same as a small node's put would leave it.
    fn a_large_node_is_encoded_ahead_and_indexed_once_finished(fx: &Fixture) {
        let store = fx.open();
        let s = Session::new("t", SessionSource::Glassbox);
        let text: String = (0..150_000).map(|i| format!("word{i} ")).collect();
        assert!(text.len() >= SPLIT_PUT_BYTES);
        let mut n = Node::new(s.id, NodeType::Thinking, text);
        n.status = NodeStatus::Streaming;
        store
            .write(|w| {
                w.put_session(&s)?;
                w.put_node(&n)
            })
            .unwrap();
        assert!(store.search("word149999", None, 10).unwrap().is_empty());
        n.status = NodeStatus::Complete;
        let encoded = EncodedNode::new(&n, None).unwrap();
        assert!(matches!(encoded.words, Words::Found(_)));
        store.write(|w| w.put_encoded_node(&n, encoded)).unwrap();
        assert_eq!(store.node(n.id).unwrap().unwrap(), n);
        assert_eq!(store.search("word149999", None, 10).unwrap()[0].node, n.id);
        assert_eq!(store.search_doc_count().unwrap(), 1);
    }

    /// A streamed node finished the way a turn's last write finishes it (its words indexed
    /// and merged first, its record put after, in one transaction) is found exactly as the
    /// same node put plainly in another store; a tool call's words still come from the put.
    fn words_indexed_ahead_in_the_transaction_leave_the_index_of_a_plain_put(fx: &Fixture) {
        let ahead = fx.open();
        let other = Fixture::redb();
        let plain = other.open();
        let s = Session::new("t", SessionSource::Glassbox);
        let text: String = (0..3_000)
            .map(|i| format!("word{} step ", i % 700))
            .collect();
        let mut n = Node::new(s.id, NodeType::Thinking, text);
        let mut call = Node::new(s.id, NodeType::ToolCall, "grep word7");
        call.meta.insert("tool".into(), serde_json::json!("Grep"));
        n.status = NodeStatus::Streaming;
        for store in [&ahead, &plain] {
            store
                .write(|w| {
                    w.put_session(&s)?;
                    w.put_node(&n)
                })
                .unwrap();
        }
        n.status = NodeStatus::Complete;
        let words = search::prepare(&n).unwrap();
        let call_words = search::prepare(&call).unwrap();
        ahead
            .write(|w| {
                w.index_words(&n, &words)?;
                w.index_words(&call, &call_words)?;
                w.apply_index()?;
                w.put_encoded_node(&n, EncodedNode::without_terms(&n, None)?.indexed())?;
                w.put_encoded_node(&call, EncodedNode::without_terms(&call, None)?.indexed())
            })
            .unwrap();
        plain
            .write(|w| {
                w.put_node(&n)?;
                w.put_node(&call)
            })
            .unwrap();
        for store in [&ahead, &plain] {
            assert_eq!(store.node(n.id).unwrap().unwrap(), n);
            assert_eq!(store.search_doc_count().unwrap(), 2);
        }
        for q in ["word699", "step", "grep", "word7"] {
            let hits = |store: &Store| -> Vec<(NodeId, String)> {
                store
                    .search(q, None, 10)
                    .unwrap()
                    .into_iter()
                    .map(|h| (h.node, format!("{:.6}", h.score)))
                    .collect()
            };
            assert_eq!(hits(&ahead), hits(&plain), "{q}");
            assert!(!hits(&ahead).is_empty(), "{q}");
        }
    }
}
