//! What a turn streams into: the live thinking and response nodes, the raw chunks not yet
//! committed, and the commits that keep them in the store while the stream goes on.
//!
//! A flush runs beside the stream: the tick hands a snapshot to a store task and the turn
//! reads on. One flush is under way at a time; a tick that finds the last one still running
//! leaves its work to the next. A flush encodes its nodes before its transaction; the flush
//! that ends a call encodes while the one under way commits, and commits after it. The
//! turn's last flush instead waits there for the words of its streamed nodes (found on
//! threads of their own as the text arrived), and in its transaction encodes their records
//! on another thread while those words are merged into the index. A node past
//! [`INDEX_LATER_BYTES`] has neither: its words go in later, and its record has been
//! compressed on a thread of its own as its text arrived ([`RecordFeed`]), so the last
//! flush only ends it. Raw chunks go out with every flush. A node's text goes out with
//! every flush while it is small; once it is large (re-encoding and compressing it is most
//! of a flush) it is written again only when it grew by a quarter or a second passed, so a
//! long stream costs a bounded number of whole-node writes. A kill loses at most what
//! arrived after the last committed node write; the raw chunks hold more.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use chrono::Utc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::TextPiece;
use super::TurnEvent;
use super::graph_feed::GraphFeed;
use crate::engines::llm::RawChunk;
use crate::engines::thinkgraph::GraphUpdate;
use crate::store::dict::RecordDict;
use crate::store::search::{PreparedText, StreamedTerms};
use crate::store::streamed::{RecordStream, json_without_text};
use crate::store::{
    DecisionId, DecisionPoint, EncodedChunk, EncodedNode, Node, NodeId, NodeStatus, NodeType,
    RawStream, SessionId, Store, StoreError, StreamId, Writer,
};

/// How often streamed text is committed to the store.
pub(super) const FLUSH_EVERY: Duration = Duration::from_millis(150);
/// Raw chunks are also committed whenever this much arrived since the last flush: on a fast
/// stream they then go out beside it rather than all at its end.
const RAW_FLUSH_BYTES: usize = 4 << 20;
/// Nodes up to this size (bytes of text) are written with every flush.
const SMALL_NODE: usize = 256 * 1024;
/// A streamed node whose text grows past this many bytes has its words put into the index
/// after its turn, by the next search ([`Store::index_pending`]), rather than found as it
/// streams: on a fast stream of megabytes, finding and merging them was a third of what the
/// turn spent, and the turn's end waited for both. At 512 KiB a 190 KB answer of 20,000
/// distinct words still had its words sorted and merged after the stream, about a tenth of
/// `ask` on the 100,000-delta bench stream (scripts/bench-scale.sh); an answer or trace
/// that long is rare, and the next search indexes it in milliseconds.
const INDEX_LATER_BYTES: usize = 128 * 1024;
/// A larger node is written again once its text grew by this share of what was written...
const GROWTH_DIVISOR: usize = 4;
/// ...or this long after its last write.
const NODE_WRITE_EVERY: Duration = Duration::from_secs(1);

/// Which nodes a flush writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pick {
    /// None: raw chunks and decision points only.
    None,
    /// Those due (see [`Live::due`]).
    Due,
    /// Every changed node, whatever its size.
    All,
    /// Every changed node, handed over rather than copied: the turn's last flush.
    Last,
}

impl From<bool> for Pick {
    fn from(nodes: bool) -> Self {
        if nodes { Pick::Due } else { Pick::None }
    }
}

/// The ids and text sizes a flush committed, for the log.
type Written = [Option<(NodeId, usize)>; 2];
/// More writes for a flush's transaction: the turn's last flush also commits the turn's
/// edges and session.
pub(super) type Also = Box<dyn FnOnce(&mut Writer<'_>) -> Result<(), StoreError> + Send>;
/// A flush under way.
type Flush = JoinHandle<Result<Written, StoreError>>;

/// Waits for a flush and logs the nodes it committed.
async fn finished(task: Flush) -> Result<(), StoreError> {
    let written = task
        .await
        .map_err(|e| StoreError::Io(format!("a flush did not finish: {e}")))??;
    // After the commit returned: what a crash test may count on finding again.
    for (node, bytes) in written.into_iter().flatten() {
        tracing::debug!(%node, bytes, "node committed");
    }
    Ok(())
}

/// A streamed node's words, found on a thread of their own as its text arrives, so that
/// the turn's last write does not read megabytes of text again (see [`StreamedTerms`]).
struct Indexer {
    text: std_mpsc::Sender<TextPiece>,
    /// Set when the words are no longer wanted (the node grew past [`INDEX_LATER_BYTES`]):
    /// the thread then stops without finishing them.
    dropped: Arc<AtomicBool>,
    done: std::thread::JoinHandle<Option<(usize, PreparedText)>>,
}

impl Indexer {
    fn start() -> Option<Self> {
        let (text, pieces) = std_mpsc::channel::<TextPiece>();
        let dropped = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&dropped);
        let done = std::thread::Builder::new()
            .name("glassbox-index".into())
            .spawn(move || {
                let mut terms = StreamedTerms::new();
                for piece in pieces {
                    if stop.load(Ordering::Relaxed) {
                        return None;
                    }
                    terms.push(&piece);
                }
                Some((terms.len(), terms.finish()))
            })
            .ok()?;
        Some(Self {
            text,
            dropped,
            done,
        })
    }

    /// The words found, when they are those of `n`'s whole text.
    fn words(self, n: &Node) -> Option<PreparedText> {
        drop(self.text);
        let t0 = Instant::now();
        let done = self.done.join();
        tracing::debug!(
            wait_ms = t0.elapsed().as_millis() as u64,
            "streamed words found"
        );
        match done {
            Ok(Some((len, terms))) if len == n.text.len() => Some(terms),
            _ => None,
        }
    }

    /// Stops the thread: the words are found later.
    fn drop_words(self) {
        self.dropped.store(true, Ordering::Relaxed);
    }
}

/// What a long node's record thread is handed: the text as it arrives, then the node's
/// other fields at its end.
enum Piece {
    Text(TextPiece),
    End { json: Vec<u8>, text_len: usize },
}

/// A streamed node's record, compressed on a thread of its own as its text arrives once the
/// node is long ([`INDEX_LATER_BYTES`]), so that the turn's last write does not escape and
/// compress megabytes of text at once ([`RecordStream`]).
struct RecordFeed {
    pieces: std_mpsc::Sender<Piece>,
    done: std::thread::JoinHandle<Option<EncodedNode>>,
}

impl RecordFeed {
    /// Starts on `n` as it is (its text so far is the first piece).
    fn start(n: &mut Node, dict: Option<Arc<RecordDict>>) -> Option<Self> {
        let json = json_without_text(n)?;
        let first = n.text.clone();
        let (pieces, arrive) = std_mpsc::channel::<Piece>();
        let done = std::thread::Builder::new()
            .name("glassbox-pack".into())
            .spawn(move || {
                let mut record = RecordStream::new(&json, dict.as_deref())?;
                record.push(&first);
                drop(first);
                for piece in arrive {
                    match piece {
                        Piece::Text(text) => record.push(&text),
                        Piece::End { json, text_len } => return record.finish(&json, text_len),
                    }
                }
                None
            })
            .ok()?;
        Some(Self { pieces, done })
    }

    /// Hands over the next piece of the text; false when the thread is gone.
    fn push(&self, text: &TextPiece) -> bool {
        self.pieces.send(Piece::Text(Arc::clone(text))).is_ok()
    }

    /// The record of `n` at its end; `None` when it cannot be had this way (the thread
    /// failed, or did not see all of the text): `n` is then encoded whole.
    fn finish(self, n: &mut Node) -> Option<EncodedNode> {
        let json = json_without_text(n)?;
        let text_len = n.text.len();
        self.pieces.send(Piece::End { json, text_len }).ok()?;
        let t0 = Instant::now();
        let record = self.done.join().ok().flatten();
        tracing::debug!(
            wait_ms = t0.elapsed().as_millis() as u64,
            bytes = text_len,
            streamed = record.is_some(),
            "streamed record finished"
        );
        record
    }
}

/// A node of a flush, made ready for its transaction: encoded, or (a streamed node at the
/// turn's end) with the words found as it streamed and its record being encoded on a thread
/// of its own since the stream ended, while those words are awaited and merged into the
/// index.
enum Ready {
    Encoded(Result<EncodedNode, StoreError>),
    Words(Option<PreparedText>, Option<Encoding>),
}

/// A streamed node's record, being encoded.
type Encoding = std::thread::JoinHandle<Result<EncodedNode, StoreError>>;

/// Starts encoding `n`'s record on a thread of its own (`None` if no thread could start:
/// the transaction then encodes it).
fn encode_apart(n: &Arc<Node>, dict: Option<&Arc<RecordDict>>) -> Option<Encoding> {
    let (n, dict) = (Arc::clone(n), dict.cloned());
    std::thread::Builder::new()
        .name("glassbox-record".into())
        .spawn(move || {
            let t0 = Instant::now();
            let record = EncodedNode::without_terms(&n, dict.as_deref());
            tracing::debug!(
                encode_ms = t0.elapsed().as_millis() as u64,
                bytes = n.text.len(),
                "streamed record encoded"
            );
            record
        })
        .ok()
}

/// Puts the nodes of a flush; returns what it committed, for the log.
fn put_nodes(
    w: &mut Writer<'_>,
    nodes: [Option<(Arc<Node>, Ready)>; 2],
) -> Result<Written, StoreError> {
    // The words of the streamed nodes go into the index while their records are encoded
    // (started when the stream ended): for a long trace the two are most of the turn's
    // last write.
    let mut indexed = [false; 2];
    for (slot, entry) in nodes.iter().enumerate() {
        if let Some((n, Ready::Words(Some(words), _))) = entry {
            w.index_words(n, words)?;
            indexed[slot] = true;
        }
    }
    if indexed.contains(&true) {
        w.apply_index()?;
    }
    let dict = w.record_dict();
    let mut written: Written = [None, None];
    for (slot, entry) in nodes.into_iter().enumerate() {
        let Some((n, ready)) = entry else { continue };
        let record = match ready {
            Ready::Encoded(record) => record?,
            Ready::Words(_, encoding) => {
                let record = match encoding.map(std::thread::JoinHandle::join) {
                    Some(Ok(record)) => record?,
                    Some(Err(_)) => {
                        return Err(StoreError::Encode(
                            "a node's record could not be encoded".into(),
                        ));
                    }
                    None => EncodedNode::new(&n, dict.as_deref())?,
                };
                if indexed[slot] {
                    record.indexed()
                } else {
                    record
                }
            }
        };
        w.put_encoded_node(&n, record)?;
        written[slot] = Some((n.id, n.text.len()));
    }
    Ok(written)
}

/// Nodes being streamed into, and what is still to be committed.
pub(super) struct Live {
    pub(super) session: SessionId,
    pub(super) stream: StreamId,
    pub(super) model: String,
    pub(super) thinking: Option<Node>,
    pub(super) response: Option<Node>,
    /// The provider's compaction of this turn, if it compacted.
    pub(super) compaction: Option<Node>,
    pub(super) dirty: bool,
    /// Nodes created since the last report.
    pub(super) created: Vec<(NodeId, NodeType)>,
    /// Steps and decision points of the thinking, found as it streams.
    pub(super) graph: GraphFeed,
    /// Decision points not yet committed.
    pub(super) decisions: Vec<DecisionPoint>,
    /// Raw chunks not yet committed, compressed as they came: a chunk's bytes are the HTTP
    /// client's read buffer, which it can reuse only once they are dropped.
    pub(super) chunks: Vec<EncodedChunk>,
    pub(super) next_chunk: u32,
    pub(super) total_bytes: u64,
    /// Bytes of `chunks`.
    raw_pending: usize,
    /// Text length of the thinking and the response node at their last write, and when.
    written: [usize; 2],
    written_at: Instant,
    /// The flush under way.
    in_flight: Option<Flush>,
    /// Word finders of the thinking and the response node, started with the node and fed
    /// what is appended to it.
    indexers: [Option<Indexer>; 2],
    /// Record threads of the thinking and the response node, once they are long.
    records: [Option<RecordFeed>; 2],
    /// The store's dictionary, which those records are compressed with.
    dict: Option<Arc<RecordDict>>,
}

impl Live {
    pub(super) fn new(
        session: SessionId,
        stream: StreamId,
        model: String,
        dict: Option<Arc<RecordDict>>,
    ) -> Self {
        Self {
            session,
            stream,
            model,
            thinking: None,
            response: None,
            compaction: None,
            dirty: false,
            created: Vec::new(),
            graph: GraphFeed::new(),
            decisions: Vec::new(),
            chunks: Vec::new(),
            next_chunk: 0,
            total_bytes: 0,
            raw_pending: 0,
            written: [0; 2],
            written_at: Instant::now(),
            in_flight: None,
            indexers: [None, None],
            records: [None, None],
            dict,
        }
    }

    pub(super) fn node(&mut self, kind: NodeType) -> &mut Node {
        let slot = if kind == NodeType::Thinking {
            &mut self.thinking
        } else {
            &mut self.response
        };
        let created = &mut self.created;
        let indexer = &mut self.indexers[usize::from(kind != NodeType::Thinking)];
        slot.get_or_insert_with(|| {
            let mut n = Node::new(self.session, kind, "");
            created.push((n.id, kind));
            // Without the thread (it could not start), the last write finds the words.
            *indexer = Indexer::start();
            n.status = NodeStatus::Streaming;
            n.model = Some(self.model.clone());
            n.raw_stream = Some(self.stream);
            n
        })
    }

    /// Appends `text` to the thinking or the response node.
    pub(super) fn append(&mut self, kind: NodeType, text: &TextPiece) {
        let slot = usize::from(kind != NodeType::Thinking);
        let node = self.node(kind);
        node.text.push_str(text);
        let len = node.text.len();
        if len > INDEX_LATER_BYTES {
            if let Some(i) = self.indexers[slot].take() {
                i.drop_words();
            }
            let record = &mut self.records[slot];
            if len - text.len() <= INDEX_LATER_BYTES {
                // The node just became long: its record is compressed as it streams from
                // now on.
                let dict = self.dict.clone();
                self.records[slot] = RecordFeed::start(self.node(kind), dict);
            } else if let Some(r) = record
                && !r.push(text)
            {
                *record = None;
            }
            return;
        }
        let indexer = &mut self.indexers[slot];
        if let Some(i) = indexer
            && i.text.send(Arc::clone(text)).is_err()
        {
            // The thread is gone: the last write finds the words itself.
            *indexer = None;
        }
    }

    /// Records ThinkGraph's findings on the thinking node and reports them.
    pub(super) fn apply_graph(
        &mut self,
        updates: Vec<GraphUpdate>,
        events: &mpsc::UnboundedSender<TurnEvent>,
    ) {
        if updates.is_empty() {
            return;
        }
        let confidence = self.graph.confidence();
        let id = {
            let node = self.node(NodeType::Thinking);
            node.confidence = Some(confidence);
            node.id
        };
        for u in updates {
            match u {
                GraphUpdate::Step(step) => {
                    step.append_to(self.node(NodeType::Thinking));
                    let _ = events.send(TurnEvent::Step { node: id, step });
                }
                GraphUpdate::Decision(decision) => {
                    self.decisions.push(DecisionPoint {
                        id: DecisionId::new(),
                        node: id,
                        step_number: decision.step_index,
                        description: decision.description.clone(),
                        chosen_path: decision.chosen_path.clone(),
                        alternatives: decision.alternatives.clone(),
                        confidence: decision.confidence,
                        created_at: Utc::now(),
                    });
                    let _ = events.send(TurnEvent::Decision { node: id, decision });
                }
            }
        }
        self.dirty = true;
    }

    /// Keeps a raw chunk for the next flush; true when enough arrived that the chunks
    /// should go out now ([`Live::flush_soon`] without nodes).
    pub(super) fn push_raw(&mut self, c: RawChunk) -> bool {
        self.total_bytes += c.bytes.len() as u64;
        self.raw_pending += c.bytes.len();
        let offset_us = c.offset.as_micros().min(u128::from(u64::MAX)) as u64;
        self.chunks.push(EncodedChunk::new(offset_us, &c.bytes));
        self.raw_pending >= RAW_FLUSH_BYTES
    }

    /// Starts a flush beside the stream, unless the last one is still under way (its
    /// error, if it failed, is returned here). Without `nodes` only the raw chunks and
    /// decision points go out.
    pub(super) async fn flush_soon(
        &mut self,
        store: &Store,
        header: &mut RawStream,
        nodes: bool,
    ) -> Result<(), StoreError> {
        if self.in_flight.as_ref().is_some_and(|h| !h.is_finished()) {
            return Ok(());
        }
        self.settle().await?;
        self.in_flight = self.start(store, header, Pick::from(nodes), None, None);
        Ok(())
    }

    /// Commits everything received so far (nodes whole) and waits for it. Its nodes are
    /// encoded while the flush under way, if any, finishes; its commit comes after that one.
    pub(super) async fn flush(
        &mut self,
        store: &Store,
        header: &mut RawStream,
    ) -> Result<(), StoreError> {
        let before = self.in_flight.take();
        self.in_flight = self.start(store, header, Pick::All, before, None);
        self.settle().await
    }

    /// The turn's last flush: [`Live::flush`], with the nodes handed to it rather than
    /// copied (a long trace is megabytes), and `also` in the same transaction. The thinking
    /// and response nodes are gone after.
    pub(super) async fn finish(
        &mut self,
        store: &Store,
        header: &mut RawStream,
        also: Also,
    ) -> Result<(), StoreError> {
        let before = self.in_flight.take();
        self.in_flight = self.start(store, header, Pick::Last, before, Some(also));
        self.settle().await
    }

    /// Waits for the flush under way, if any.
    pub(super) async fn settle(&mut self) -> Result<(), StoreError> {
        match self.in_flight.take() {
            Some(task) => finished(task).await,
            None => Ok(()),
        }
    }

    /// Whether the node in `slot` (0 thinking, 1 response) is due to be written.
    fn due(&self, slot: usize, node: &Node, all: bool) -> bool {
        let len = node.text.len();
        let before = self.written[slot];
        all || before == 0
            || len <= SMALL_NODE
            || len >= before + before / GROWTH_DIVISOR
            || self.written_at.elapsed() >= NODE_WRITE_EVERY
    }

    /// Hands what is to be committed to a store task, the nodes as `pick` says, and `also`.
    /// The task encodes the nodes, waits for `before` (the flush under way) and commits.
    /// `before` when there is nothing to commit, else the task.
    fn start(
        &mut self,
        store: &Store,
        header: &mut RawStream,
        pick: Pick,
        before: Option<Flush>,
        also: Option<Also>,
    ) -> Option<Flush> {
        let all = matches!(pick, Pick::All | Pick::Last);
        // The stream's nodes, listed before the last flush takes them.
        let stream_nodes: Vec<NodeId> = self
            .compaction
            .iter()
            .chain(self.thinking.iter())
            .chain(self.response.iter())
            .map(|n| n.id)
            .collect();
        let (mut indexers, mut records) = ([None, None], [None, None]);
        let last = pick == Pick::Last;
        let nodes = if self.dirty && last {
            indexers = std::mem::take(&mut self.indexers);
            records = std::mem::take(&mut self.records);
            [self.thinking.take(), self.response.take()]
        } else if self.dirty && pick != Pick::None {
            let pick = |slot: usize, n: &Option<Node>| {
                n.as_ref().filter(|n| self.due(slot, n, all)).cloned()
            };
            [pick(0, &self.thinking), pick(1, &self.response)]
        } else {
            [None, None]
        };
        let wrote_nodes = nodes.iter().any(Option::is_some);
        if !wrote_nodes && self.chunks.is_empty() && self.decisions.is_empty() && also.is_none() {
            return before;
        }
        // Nodes left out this time stay dirty for the next flush.
        let skipped = self.dirty
            && [&self.thinking, &self.response]
                .iter()
                .zip(&nodes)
                .any(|(live, picked)| live.is_some() && picked.is_none());
        self.dirty = skipped;
        self.raw_pending = 0;
        if wrote_nodes {
            for (slot, n) in nodes.iter().enumerate() {
                if let Some(n) = n {
                    self.written[slot] = n.text.len().max(1);
                }
            }
            self.written_at = Instant::now();
        }
        let chunks = std::mem::take(&mut self.chunks);
        let decisions = std::mem::take(&mut self.decisions);
        let first = self.next_chunk;
        self.next_chunk += chunks.len() as u32;
        header.chunk_count = self.next_chunk;
        header.total_bytes = self.total_bytes;
        header.nodes = stream_nodes;
        let header = header.clone();
        let store = store.clone();
        let dict = store.record_dict();
        Some(tokio::spawn(async move {
            // Encoding a large node is most of a flush: it is done before the transaction,
            // beside the commit of the flush before this one.
            let nodes =
                tokio::task::spawn_blocking(move || {
                    let t0 = Instant::now();
                    // The records of the nodes whose words are being found start encoding
                    // first: the words may take a few milliseconds more to arrive.
                    let started = nodes.into_iter().zip(indexers).zip(records).map(
                        |((n, indexer), record)| {
                            n.map(|mut n| {
                                // A long node's record, compressed as it streamed, is ended.
                                let streamed = record.and_then(|r| r.finish(&mut n));
                                let n = Arc::new(n);
                                let encoding = indexer
                                    .as_ref()
                                    .and_then(|_| encode_apart(&n, dict.as_ref()));
                                (n, indexer, encoding, streamed)
                            })
                        },
                    );
                    let started: Vec<_> = started.collect();
                    let mut nodes = started.into_iter().map(|s| {
                        s.map(|(n, indexer, encoding, streamed)| {
                            let ready = match indexer {
                                Some(i) => Ready::Words(i.words(&n), encoding),
                                // The turn's last write of a node that grew past the limit
                                // (its word thread stopped then): its words go in later.
                                None if last && n.text.len() > INDEX_LATER_BYTES => {
                                    let record = streamed.map_or_else(
                                        || EncodedNode::without_terms(&n, dict.as_deref()),
                                        Ok,
                                    );
                                    Ready::Encoded(record.map(EncodedNode::index_later))
                                }
                                None => Ready::Encoded(EncodedNode::new(&n, dict.as_deref())),
                            };
                            (n, ready)
                        })
                    });
                    let nodes = [nodes.next().flatten(), nodes.next().flatten()];
                    tracing::debug!(nodes_ms = t0.elapsed().as_millis() as u64, "flush encoded");
                    nodes
                })
                .await
                .map_err(|e| StoreError::Io(format!("a flush did not finish: {e}")))?;
            if let Some(before) = before {
                finished(before).await?;
            }
            store
                .write_async(move |w| {
                    w.put_raw_chunks(header.id, first, &chunks)?;
                    w.put_raw_stream(&header)?;
                    for d in &decisions {
                        w.put_decision_point(d)?;
                    }
                    let written = put_nodes(w, nodes)?;
                    if let Some(also) = also {
                        also(w)?;
                    }
                    Ok(written)
                })
                .await
        }))
    }

    /// Starts the record of the next provider call of the turn.
    pub(super) fn next_stream(&mut self, stream: StreamId) {
        self.stream = stream;
        self.next_chunk = 0;
        self.total_bytes = 0;
    }
}
