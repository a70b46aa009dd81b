//! Writing what the import mapped: a batch and its file's cursor in one transaction, the
//! writer thread that commits batches while the next ones are read, and the session record
//! merged with what a batch saw.

use std::collections::BTreeMap;

use serde_json::json;

use super::claude_code::{Batch, SessionDelta, analyse_thinking};
use super::title::set_title;
use super::{ImportSummary, TranscriptError};
use crate::store::dict::{DictFeed, RecordDict};
use crate::store::{
    PreparedNode, PutOutcome, Session, SessionId, SessionSource, Store, StoreError,
    TranscriptCursor,
};

/// Encoded node bytes the writer thread gathers from the batches it is sent before it
/// commits them in one transaction. A commit costs about as much as the index pages it
/// touches, and a few small files already touch a page per distinct word: committing file by
/// file made an import of thousands of small transcripts grow with the square of the store.
/// Gathering tens of megabytes per commit keeps it linear, and bounds what a kill can lose
/// (the cursors are in the same commit, so a rerun picks up exactly there).
const COMMIT_BYTES: usize = 8 << 20;
/// The first commit's share of [`COMMIT_BYTES`]: each commit may gather twice what the one
/// before did, up to that. A small import then commits a few times while it is still
/// reading (instead of once, at the end, with nothing left to overlap), and a large one
/// reaches full-size commits after a few.
const FIRST_COMMIT_BYTES: usize = 1 << 20;
/// Longest a commit stays open for more batches (`--watch` shows new lines within this; the
/// end of an import or a settle commits at once).
const COMMIT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// Longest the writer holds its open transaction waiting for the next batch: batches come a
/// few milliseconds apart while an import reads, so a gap this long means the reading has
/// paused (`--watch`, a large file), and other writers should not wait on it.
const COMMIT_IDLE: std::time::Duration = std::time::Duration::from_millis(100);
/// Encoded node bytes sent to the writer thread and not yet committed, above which the
/// importing thread waits: room for the commit being written and the next one gathering,
/// so reading never waits for a commit and memory stays bounded.
const PENDING_BYTES: usize = 2 * COMMIT_BYTES;

/// One batch of a file and the file's cursor after it: what one write transaction commits.
pub(super) struct WriteJob {
    nodes: Vec<PreparedNode>,
    edges: Vec<crate::store::Edge>,
    decisions: Vec<crate::store::DecisionPoint>,
    sessions: BTreeMap<SessionId, SessionDelta>,
    /// `None` only in the job that stores a dictionary trained too late for any batch
    /// ([`WriteJob::dict_only`]).
    cursor: Option<TranscriptCursor>,
    /// The dictionary this batch's records were the first to be compressed with: it is
    /// stored in the same transaction.
    dict: Option<std::sync::Arc<RecordDict>>,
}

/// What a committed [`WriteJob`] added, for the summary.
#[derive(Default)]
pub(super) struct Committed {
    created: BTreeMap<String, u64>,
    updated: u64,
    sessions_created: u64,
    touched: Vec<SessionId>,
    edges: u64,
    decisions: u64,
}

impl Committed {
    pub(super) fn add_to(self, summary: &mut ImportSummary) {
        for (k, v) in self.created {
            *summary.nodes_by_type.entry(k).or_insert(0) += v;
        }
        summary.nodes_updated += self.updated;
        summary.sessions_created += self.sessions_created;
        summary.edges += self.edges;
        summary.decision_points += self.decisions;
        summary.touched.extend(self.touched);
    }
}

impl WriteJob {
    /// Runs ThinkGraph over the batch's new thinking, then encodes (with `feed`'s dictionary)
    /// and tokenizes its nodes (the CPU work that needs no store).
    pub(super) fn new(
        batch: Batch,
        cursor: TranscriptCursor,
        feed: &mut DictFeed,
    ) -> Result<Self, TranscriptError> {
        let Batch {
            mut nodes,
            edges,
            mut decisions,
            sessions,
            analyse,
        } = batch;
        if !analyse.is_empty() {
            let analyse: std::collections::HashSet<_> = analyse.into_iter().collect();
            for n in nodes.iter_mut().filter(|n| analyse.contains(&n.id)) {
                analyse_thinking(n, &mut decisions);
            }
        }
        feed.observe(&nodes);
        let dict = feed.dict();
        let nodes = nodes
            .iter()
            .map(|n| PreparedNode::new(n, dict))
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Self {
            nodes,
            edges,
            decisions,
            sessions,
            cursor: Some(cursor),
            dict: feed.take_new(),
        })
    }

    /// A job that only stores `dict`: one whose training ended after the last batch was
    /// prepared, kept for what the store writes next (a later import, `ask`).
    fn dict_only(dict: std::sync::Arc<RecordDict>) -> Self {
        Self {
            nodes: Vec::new(),
            edges: Vec::new(),
            decisions: Vec::new(),
            sessions: BTreeMap::new(),
            cursor: None,
            dict: Some(dict),
        }
    }

    /// Writes the batch and the cursor in one transaction, so a crash keeps both or neither.
    pub(super) fn commit(self, store: &Store) -> Result<Committed, StoreError> {
        let done = store.write(|w| self.write_into(w))?;
        let created: u64 = done.created.values().sum();
        tracing::debug!(
            batches = 1,
            nodes_created = created,
            ok = true,
            "import commit"
        );
        Ok(done)
    }

    /// Encoded size of the batch's nodes: what coalescing batches into one commit counts.
    fn weight(&self) -> usize {
        self.nodes.iter().map(PreparedNode::encoded_len).sum()
    }

    fn write_into(&self, w: &mut crate::store::Writer<'_>) -> Result<Committed, StoreError> {
        if let Some(d) = &self.dict {
            w.put_record_dict(d)?;
        }
        {
            let mut done = Committed {
                edges: self.edges.len() as u64,
                decisions: self.decisions.len() as u64,
                ..Committed::default()
            };
            for (id, delta) in &self.sessions {
                let existing = w.session(*id)?;
                if existing.is_none() {
                    done.sessions_created += 1;
                }
                let merged = merge_session(*id, existing.clone(), delta);
                if existing.as_ref() != Some(&merged) {
                    w.put_session(&merged)?;
                    done.touched.push(*id);
                }
            }
            let outcomes = w.put_prepared_nodes(&self.nodes)?;
            for (p, outcome) in self.nodes.iter().zip(outcomes) {
                match outcome {
                    PutOutcome::Unchanged => continue,
                    PutOutcome::Updated => done.updated += 1,
                    PutOutcome::Created => {
                        *done.created.entry(p.kind.as_str().to_string()).or_insert(0) += 1
                    }
                }
                done.touched.push(p.session);
            }
            w.put_edges(&self.edges)?;
            for d in &self.decisions {
                w.put_decision_point(d)?;
            }
            if let Some(cursor) = &self.cursor {
                w.put_transcript_cursor(cursor)?;
            }
            Ok(done)
        }
    }
}

/// Two threads behind the importing one: a *preparer* that encodes, compresses and tokenizes
/// each batch's nodes, and a *writer* that commits them. Reading and mapping lines, preparing
/// nodes and writing them take comparable time, so the three overlap on two cores. Batches
/// are committed in the order they were sent, each with its file's cursor, several to a
/// transaction (see [`COMMIT_BYTES`]). So the store after a crash is the same as without the
/// threads: a prefix of the batches. After a failed commit the later batches are dropped
/// unwritten (their cursors must not move past lines that were never stored), and the error
/// is reported by `send`, `settle` and `finish`.
pub(crate) struct WritePipe {
    batches: Option<std::sync::mpsc::SyncSender<Raw>>,
    /// The preparer hands its dictionary feed back when it ends, for the next pipe.
    preparer: Option<std::thread::JoinHandle<DictFeed>>,
    writer: Option<std::thread::JoinHandle<()>>,
    state: Shared,
}

type Shared = std::sync::Arc<(std::sync::Mutex<PipeState>, std::sync::Condvar)>;

/// Mapped batches that may wait for the preparer thread.
const QUEUED_BATCHES: usize = 8;

#[derive(Default)]
struct PipeState {
    sent: u64,
    finished: u64,
    /// Encoded bytes of the batches prepared and not yet committed.
    pending: usize,
    done: Vec<Committed>,
    error: Option<StoreError>,
}

impl WritePipe {
    /// `None` when the threads cannot be started (the caller then writes batches itself).
    /// `feed` compresses the records (and trains the store's dictionary, if it has none);
    /// [`WritePipe::finish`] gives it back, so that the records of many short pipes (a
    /// `--watch` syncs file by file) add up to a training.
    pub(super) fn start(store: Store, feed: DictFeed) -> Option<Self> {
        let (raw_tx, raw_rx) = std::sync::mpsc::sync_channel::<Raw>(QUEUED_BATCHES);
        let (tx, rx) = std::sync::mpsc::channel::<Msg>();
        let state: Shared = std::sync::Arc::new((
            std::sync::Mutex::new(PipeState::default()),
            std::sync::Condvar::new(),
        ));
        let shared = state.clone();
        let writer_store = store.clone();
        let writer = std::thread::Builder::new()
            .name("import-writer".into())
            .spawn(move || writer_loop(&rx, &writer_store, &shared))
            .ok()?;
        let shared = state.clone();
        let preparer = std::thread::Builder::new()
            .name("import-prepare".into())
            .spawn(move || {
                let mut feed = feed;
                prepare_loop(&raw_rx, &tx, &shared, &mut feed);
                feed
            });
        let Ok(preparer) = preparer else {
            // The writer ends once its sender (moved into the failed closure) is gone.
            let _ = writer.join();
            return None;
        };
        // The regexes nearly every thinking needs are compiled while the first files are
        // read, not by the preparer on the first thinking it meets (the decision ones are
        // compiled one by one when a sentence first may match each). The thread is not
        // waited for: a short import may end before it does.
        let _ = std::thread::Builder::new()
            .name("import-warm".into())
            .spawn(crate::engines::thinkgraph::warm_up);
        Some(Self {
            batches: Some(raw_tx),
            preparer: Some(preparer),
            writer: Some(writer),
            state,
        })
    }

    /// Hands a mapped batch and its file's cursor to the threads.
    pub(super) fn send(
        &self,
        batch: Batch,
        cursor: TranscriptCursor,
    ) -> Result<(), TranscriptError> {
        let stopped = || TranscriptError::Store(StoreError::Io("import writer stopped".into()));
        let Some(tx) = &self.batches else {
            return Err(stopped());
        };
        {
            let (lock, _) = &*self.state;
            let mut st = lock.lock().map_err(|_| poisoned())?;
            if let Some(e) = &st.error {
                return Err(TranscriptError::Store(e.clone()));
            }
            st.sent += 1;
        }
        tx.send(Raw::Batch(batch, cursor)).map_err(|_| stopped())
    }

    /// Blocks until every batch sent so far is committed; fails if one could not be.
    pub(crate) fn settle(&self) -> Result<(), StoreError> {
        if let Some(tx) = &self.batches {
            // Commit what the writer is gathering now rather than when its wait runs out.
            let _ = tx.send(Raw::Commit);
        }
        let (lock, cv) = &*self.state;
        let mut st = lock.lock().map_err(|_| poisoned_store())?;
        while st.finished < st.sent && st.error.is_none() {
            st = cv.wait(st).map_err(|_| poisoned_store())?;
        }
        match &st.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Stops the threads once they have handled every batch; returns what was committed, the
    /// first error and the dictionary feed.
    pub(super) fn finish(mut self) -> Finished {
        drop(self.batches.take());
        // The preparer ends first (the batches are over), then the writer (its jobs are).
        let feed = self.preparer.take().map(std::thread::JoinHandle::join);
        let writer = self.writer.take().map(std::thread::JoinHandle::join);
        let panicked = matches!(feed, Some(Err(_))) || matches!(writer, Some(Err(_)));
        let feed = feed.and_then(Result::ok);
        let (lock, _) = &*self.state;
        let Ok(mut st) = lock.lock() else {
            return Finished {
                done: Vec::new(),
                error: Some(poisoned_store()),
                feed,
            };
        };
        let mut error = st.error.take();
        if panicked && error.is_none() {
            error = Some(StoreError::Io("import writer thread panicked".into()));
        }
        Finished {
            done: std::mem::take(&mut st.done),
            error,
            feed,
        }
    }
}

/// What a [`WritePipe`] did, once finished.
pub(super) struct Finished {
    pub done: Vec<Committed>,
    /// The first write error.
    pub error: Option<StoreError>,
    /// The dictionary feed the pipe was started with (`None` if its thread panicked).
    pub feed: Option<DictFeed>,
}

/// What the importing thread sends the preparer thread.
enum Raw {
    Batch(Batch, TranscriptCursor),
    Commit,
}

/// What the preparer thread sends the writer thread.
enum Msg {
    /// A batch to commit.
    Job(WriteJob),
    /// Commit what has been gathered now: the importer is about to read from the store.
    Commit,
}

/// The preparer thread: turns each batch into a [`WriteJob`] and passes it on, waiting while
/// [`PENDING_BYTES`] are on their way to the store.
fn prepare_loop(
    rx: &std::sync::mpsc::Receiver<Raw>,
    tx: &std::sync::mpsc::Sender<Msg>,
    shared: &Shared,
    feed: &mut DictFeed,
) {
    let (lock, cv) = &**shared;
    while let Ok(raw) = rx.recv() {
        let msg = match raw {
            Raw::Commit => Msg::Commit,
            Raw::Batch(batch, cursor) => match WriteJob::new(batch, cursor, feed) {
                Ok(job) => {
                    let Ok(mut st) = lock.lock() else { return };
                    while st.pending >= PENDING_BYTES && st.error.is_none() {
                        let Ok(next) = cv.wait(st) else { return };
                        st = next;
                    }
                    st.pending += job.weight();
                    Msg::Job(job)
                }
                Err(e) => {
                    let Ok(mut st) = lock.lock() else { return };
                    if st.error.is_none() {
                        st.error = Some(match e {
                            TranscriptError::Store(e) => e,
                            other => StoreError::Io(other.to_string()),
                        });
                    }
                    st.finished += 1;
                    cv.notify_all();
                    continue;
                }
            },
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
    // A dictionary still training when the last batch was prepared is stored all the same.
    feed.wait();
    if let Some(dict) = feed.take_new() {
        let _ = tx.send(Msg::Job(WriteJob::dict_only(dict)));
    }
}

/// The writer thread: writes each batch into an open transaction as it comes, and commits
/// once the transaction holds [`COMMIT_BYTES`] (less for the first commits, see
/// [`FIRST_COMMIT_BYTES`]), no batch came for [`COMMIT_IDLE`], [`COMMIT_WAIT`] has passed, a
/// [`Msg::Commit`] came or the import ended. Writing while the preparer works on the next
/// batches leaves only the index merge and the commit itself for after the last one.
fn writer_loop(rx: &std::sync::mpsc::Receiver<Msg>, store: &Store, shared: &Shared) {
    let (lock, cv) = &**shared;
    let mut open = true;
    let mut commit_bytes = FIRST_COMMIT_BYTES;
    while open {
        let first = match rx.recv() {
            Ok(Msg::Job(job)) => job,
            Ok(Msg::Commit) => continue,
            Err(_) => return,
        };
        let mut gather = Gather {
            rx,
            next: Some(first),
            deadline: std::time::Instant::now() + COMMIT_WAIT,
            limit: commit_bytes,
            weight: 0,
            jobs: 0,
            open: true,
        };
        let failed = lock.lock().map(|s| s.error.is_some()).unwrap_or(true);
        let result = if failed {
            // After a failed commit the batches are counted and dropped unwritten.
            while gather.next().is_some() {}
            None
        } else {
            let t = std::time::Instant::now();
            let r = store.write(|w| {
                let mut done = Vec::new();
                while let Some(job) = gather.next() {
                    done.push(job.write_into(w)?);
                }
                Ok(done)
            });
            // Logged once the commit returned, so a crash test may count on these nodes.
            let created: u64 = r
                .as_ref()
                .map(|done| done.iter().flat_map(|d| d.created.values()).sum())
                .unwrap_or(0);
            tracing::debug!(
                batches = gather.jobs,
                node_bytes = gather.weight,
                nodes_created = created,
                ok = r.is_ok(),
                ms = t.elapsed().as_millis() as u64,
                "import commit"
            );
            Some(r)
        };
        // A batch received but not written (the transaction could not start) is counted too.
        drop(gather.take());
        open = gather.open;
        commit_bytes = (commit_bytes * 2).min(COMMIT_BYTES);
        let Ok(mut st) = lock.lock() else { return };
        match result {
            Some(Ok(done)) => st.done.extend(done),
            Some(Err(e)) => st.error = Some(e),
            None => {}
        }
        st.finished += gather.jobs;
        st.pending = st.pending.saturating_sub(gather.weight);
        cv.notify_all();
    }
}

/// The batches of one commit, taken from the preparer as the writer gets to them.
struct Gather<'a> {
    rx: &'a std::sync::mpsc::Receiver<Msg>,
    next: Option<WriteJob>,
    deadline: std::time::Instant,
    /// Encoded bytes after which no more batches are taken.
    limit: usize,
    /// Encoded bytes and batches taken so far.
    weight: usize,
    jobs: u64,
    /// False once the preparer has gone: this commit is the last.
    open: bool,
}

impl Gather<'_> {
    /// The next batch of this commit, or `None` once it is complete.
    fn next(&mut self) -> Option<WriteJob> {
        use std::sync::mpsc::RecvTimeoutError;
        if self.next.is_none() && self.weight < self.limit && self.open {
            let now = std::time::Instant::now();
            let wait = COMMIT_IDLE.min(self.deadline.saturating_duration_since(now));
            match self.rx.recv_timeout(wait) {
                Ok(Msg::Job(job)) => self.next = Some(job),
                Ok(Msg::Commit) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => self.open = false,
            }
        }
        self.take()
    }

    /// The batch received and not yet taken, counted as taken.
    fn take(&mut self) -> Option<WriteJob> {
        let job = self.next.take()?;
        self.weight += job.weight();
        self.jobs += 1;
        Some(job)
    }
}

fn poisoned_store() -> StoreError {
    StoreError::Io("import writer thread panicked".into())
}

fn poisoned() -> TranscriptError {
    TranscriptError::Store(poisoned_store())
}

/// A session record updated with what a batch saw.
fn merge_session(id: SessionId, existing: Option<Session>, d: &SessionDelta) -> Session {
    let now = d.first_ts.or(d.last_ts).unwrap_or_default();
    let mut s = existing.unwrap_or_else(|| Session {
        id,
        title: String::new(),
        created_at: now,
        updated_at: d.last_ts.unwrap_or(now),
        source: SessionSource::ClaudeCode,
        provider: Some("anthropic".into()),
        model: None,
        meta: serde_json::Map::new(),
    });
    if let Some(t) = d.first_ts {
        s.created_at = s.created_at.min(t);
    }
    if let Some(t) = d.last_ts {
        s.updated_at = s.updated_at.max(t);
    }
    if d.model.is_some() {
        s.model.clone_from(&d.model);
    }
    let m = &mut s.meta;
    m.insert("claude_session_id".into(), json!(d.claude_session));
    for (key, value, overwrite) in [
        ("cwd", &d.cwd, false),
        ("slug", &d.slug, false),
        ("git_branch", &d.git_branch, true),
        ("version", &d.version, true),
    ] {
        if let Some(v) = value
            && (overwrite || !m.contains_key(key))
        {
            m.insert(key.into(), json!(v));
        }
    }
    let files = m.entry("files").or_insert_with(|| json!([]));
    if let Some(list) = files.as_array_mut() {
        for f in &d.files {
            if !list.iter().any(|x| x.as_str() == Some(f)) {
                list.push(json!(f));
            }
        }
        list.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
    if !d.summaries.is_empty() {
        let list = m.entry("summaries").or_insert_with(|| json!([]));
        if let Some(list) = list.as_array_mut() {
            for (text, leaf) in &d.summaries {
                let entry = json!({"summary": text, "leaf_uuid": leaf});
                if !list.contains(&entry) {
                    list.push(entry);
                }
            }
        }
    }
    let summary = m
        .get("summaries")
        .and_then(|v| v.as_array())
        .and_then(|l| l.last())
        .and_then(|e| e.get("summary"))
        .and_then(|v| v.as_str())
        .map(str::to_string);
    if let Some(t) = &d.custom_title {
        m.insert("custom_title".into(), json!(t));
    }
    let custom = m
        .get("custom_title")
        .and_then(|v| v.as_str())
        .map(str::to_string);
    let slug = m.get("slug").and_then(|v| v.as_str()).map(str::to_string);
    set_title(&mut s, custom, summary, d.first_query.as_deref(), slug);
    s
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::store::testing::{Fixture, on_every_arm};
    use crate::store::{Node, NodeType};

    on_every_arm!(a_paused_import_commits_what_it_has_and_holds_no_transaction);

    /// Reading that pauses (`--watch`, a large file) leaves its batches committed after
    /// [`COMMIT_IDLE`], not after [`COMMIT_WAIT`], and the store free for other writers.
    fn a_paused_import_commits_what_it_has_and_holds_no_transaction(fx: &Fixture) {
        let store = fx.open();
        let session = Session::new("t", SessionSource::ClaudeCode);
        store.write(|w| w.put_session(&session)).unwrap();
        let pipe =
            WritePipe::start(store.clone(), DictFeed::new(&store)).expect("the threads start");
        let node = Node::new(session.id, NodeType::Response, "a line that was read");
        let cursor = TranscriptCursor {
            path: "/p/s.jsonl".into(),
            inode: 1,
            offset: 10,
            mtime_ns: 1,
            size: 10,
            lines: 1,
        };
        let batch = Batch {
            nodes: vec![node.clone()],
            ..Batch::default()
        };
        let sent = std::time::Instant::now();
        pipe.send(batch, cursor).unwrap();
        // Well before COMMIT_WAIT, which a batch of a busy import may wait for.
        while store.node(node.id).unwrap().is_none() {
            assert!(
                sent.elapsed() < COMMIT_WAIT / 2,
                "the batch waited for more as long as a busy import would"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // The file's cursor went in with it, so a rerun goes on after this line.
        let kept = store
            .transcript_cursor("/p/s.jsonl")
            .unwrap()
            .expect("the cursor");
        assert_eq!((kept.offset, kept.lines), (10, 1));
        // The writer holds no transaction while it waits for more: another writer goes
        // through at once.
        let before = std::time::Instant::now();
        store.write(|w| w.put_session(&session)).unwrap();
        assert!(before.elapsed() < COMMIT_WAIT / 2);
        let Finished { done, error, feed } = pipe.finish();
        assert!(error.is_none(), "{error:?}");
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].created.get("response"), Some(&1));
        assert!(feed.is_some(), "the feed comes back for the next pipe");
    }
}
