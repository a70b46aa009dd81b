//! Transcripts in and out: Claude Code import (one-shot and watched, with per-file cursors so
//! only appended bytes are read again) and the session export/import formats.

pub mod claude_code;
pub mod export;
pub mod watch;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::store::{
    PreparedNode, PutOutcome, Session, SessionId, SessionSource, Store, StoreError,
    TranscriptCursor,
};
use claude_code::{Batch, FileMapper, MapCtx, RunTaskCalls, SessionDelta};

/// Lines per batch (one file's lines, committed with its cursor) while importing.
pub const BATCH_LINES: usize = 10000;
/// Bytes per batch while importing (whichever limit comes first).
pub const BATCH_BYTES: u64 = 32 << 20;
/// Batches that may wait for the writer thread.
const QUEUED_BATCHES: usize = 4;
/// Encoded node bytes above which the writer thread stops adding queued batches to a commit.
const COMMIT_BYTES: usize = 48 << 20;

/// Transcript import failures (bad lines are never failures: they are counted and skipped).
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    #[error("{0}")]
    Invalid(String),
}

/// A UUIDv7 whose timestamp is `ts` and whose other bits are fixed by `order` (12 bits that
/// sort ids made in the same millisecond) and a hash of `parts`: the same inputs always give
/// the same id, so importing a line twice writes the same record.
pub fn stable_uuid(ts: DateTime<Utc>, order: u32, parts: &[&[u8]]) -> uuid::Uuid {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let digest = h.finalize();
    let order = order.min(0xfff) as u16;
    let mut bytes = [0u8; 10];
    bytes[0] = (order >> 8) as u8;
    bytes[1] = order as u8;
    bytes[2..].copy_from_slice(&digest[..8]);
    let ms = u64::try_from(ts.timestamp_millis()).unwrap_or(0);
    uuid::Builder::from_unix_timestamp_millis(ms, &bytes).into_uuid()
}

/// What an import run did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ImportSummary {
    /// Transcript files looked at.
    pub files: u64,
    /// Files that had new bytes to read.
    pub files_read: u64,
    /// Files read again from the start because they were replaced or truncated.
    pub files_reread: u64,
    pub bytes: u64,
    pub lines: u64,
    /// Sessions that got new or changed records.
    pub sessions: u64,
    pub sessions_created: u64,
    /// New nodes by type.
    pub nodes_by_type: BTreeMap<String, u64>,
    /// Existing nodes whose content changed (a merged message, an attached tool result).
    pub nodes_updated: u64,
    pub edges: u64,
    pub decision_points: u64,
    pub thinking_blocks: u64,
    pub skipped_by_reason: BTreeMap<String, u64>,
    /// References to lines that are not in the file (kept as they are).
    pub dangling_parents: u64,
    /// Files whose last line is still incomplete (read once it is finished).
    pub partial_lines: u64,
    /// `file:line: reason` for every malformed line and unreadable file.
    pub errors: Vec<String>,
    #[serde(skip)]
    touched: HashSet<SessionId>,
}

impl ImportSummary {
    /// New nodes of every type together.
    pub fn new_nodes(&self) -> u64 {
        self.nodes_by_type.values().sum()
    }
}

/// Where an import is, for a progress display.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    pub files_done: u64,
    pub files_total: u64,
    pub lines: u64,
    pub bytes: u64,
}

/// A file being followed: its cursor and (in a long-running importer) its mapping state.
struct FileState {
    cursor: TranscriptCursor,
    mapper: FileMapper,
}

/// Imports Claude Code transcripts into the store.
pub struct Importer {
    store: Store,
    /// Claude session id → glassbox session id.
    sessions: HashMap<String, SessionId>,
    files: HashMap<PathBuf, FileState>,
    /// Keep mapping state between calls (watch mode) instead of rebuilding it on resume.
    keep_state: bool,
    summary: ImportSummary,
    progress: Option<Box<dyn FnMut(Progress) + Send>>,
    files_done: u64,
    files_total: u64,
    /// The writer thread of the import in progress, if any.
    pipe: Option<WritePipe>,
    /// Files whose cursor is in a batch the writer thread may not have committed yet.
    in_flight: HashSet<String>,
    task_calls: RunTaskCalls,
}

impl Importer {
    /// An importer writing to `store`; knows the Claude sessions already imported.
    pub fn new(store: Store) -> Result<Self, TranscriptError> {
        let mut sessions = HashMap::new();
        for s in store.sessions()? {
            if s.source == SessionSource::ClaudeCode
                && let Some(c) = s.meta.get("claude_session_id").and_then(|v| v.as_str())
            {
                sessions.insert(c.to_string(), s.id);
            }
        }
        Ok(Self {
            store,
            sessions,
            files: HashMap::new(),
            keep_state: false,
            summary: ImportSummary::default(),
            progress: None,
            files_done: 0,
            files_total: 0,
            pipe: None,
            in_flight: HashSet::new(),
            task_calls: RunTaskCalls::default(),
        })
    }

    /// Keeps per-file mapping state in memory between syncs (for `--watch`).
    pub fn keep_state(mut self) -> Self {
        self.keep_state = true;
        self
    }

    /// Calls `f` as files and batches complete.
    pub fn on_progress(&mut self, f: impl FnMut(Progress) + Send + 'static) {
        self.progress = Some(Box::new(f));
    }

    /// The summary so far, leaving a fresh one.
    pub fn take_summary(&mut self) -> ImportSummary {
        let mut s = std::mem::take(&mut self.summary);
        s.sessions = s.touched.len() as u64;
        s
    }

    fn report(&mut self) {
        let p = Progress {
            files_done: self.files_done,
            files_total: self.files_total,
            lines: self.summary.lines,
            bytes: self.summary.bytes,
        };
        if let Some(f) = self.progress.as_mut() {
            f(p);
        }
    }

    /// Imports `files` (already discovered), skipping those last modified before `since`.
    pub fn import_files(
        &mut self,
        files: &[PathBuf],
        since: Option<SystemTime>,
    ) -> Result<(), TranscriptError> {
        self.files_total = files.len() as u64;
        self.files_done = 0;
        let started = self.start_pipe();
        let read = self.import_each(files, since);
        // Every batch is committed (or the import failed) before this returns.
        let written = if started { self.finish_pipe() } else { Ok(()) };
        read.and(written)
    }

    fn import_each(
        &mut self,
        files: &[PathBuf],
        since: Option<SystemTime>,
    ) -> Result<(), TranscriptError> {
        for f in files {
            if let Some(since) = since
                && std::fs::metadata(f)
                    .and_then(|m| m.modified())
                    .is_ok_and(|m| m < since)
            {
                self.summary.files += 1;
                self.files_done += 1;
                *self
                    .summary
                    .skipped_by_reason
                    .entry("file older than --since".into())
                    .or_insert(0) += 1;
                continue;
            }
            self.sync_one(f)?;
            self.files_done += 1;
            self.report();
        }
        Ok(())
    }

    /// Reads whatever `path` gained since its cursor and commits it in batches. A file that
    /// was replaced (new inode) or truncated below the cursor is read again from the start;
    /// an incomplete last line is left for the next call. Returns whether anything was read.
    pub fn sync_file(&mut self, path: &Path) -> Result<bool, TranscriptError> {
        let started = self.start_pipe();
        let read = self.sync_one(path);
        let written = if started { self.finish_pipe() } else { Ok(()) };
        let read = read?;
        written?;
        Ok(read)
    }

    /// [`Importer::sync_file`], leaving its batches to the writer thread if one is running.
    fn sync_one(&mut self, path: &Path) -> Result<bool, TranscriptError> {
        self.summary.files += 1;
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => {
                self.summary.errors.push(format!("{}: {e}", path.display()));
                return Ok(false);
            }
        };
        let (inode, size) = (meta.ino(), meta.len());
        let mtime_ns = meta
            .mtime()
            .saturating_mul(1_000_000_000)
            .saturating_add(meta.mtime_nsec());
        let key = path.display().to_string();
        if !self.files.contains_key(path) && self.in_flight.contains(&key) {
            // Its stored cursor may still be on its way.
            self.settle()?;
        }
        // (state, whether its mapper is current: kept in memory rather than new for a cursor)
        let known = match self.files.remove(path) {
            Some(state) => Some((state, true)),
            None => self.store.transcript_cursor(&key)?.map(|cursor| {
                (
                    FileState {
                        cursor,
                        mapper: FileMapper::new(path),
                    },
                    false,
                )
            }),
        };
        let fresh = || FileState {
            cursor: TranscriptCursor {
                path: key.clone(),
                inode,
                offset: 0,
                mtime_ns,
                size: 0,
                lines: 0,
            },
            mapper: FileMapper::new(path),
        };
        let (mut state, current) = match known {
            None => (fresh(), true),
            Some((s, _)) if s.cursor.inode != inode || size < s.cursor.offset => {
                self.summary.files_reread += 1;
                (fresh(), true)
            }
            // The session this file fed was deleted since: read the file again to restore it.
            Some((s, false))
                if s.cursor.lines > 0
                    && s.mapper
                        .file_session()
                        .is_some_and(|c| !self.sessions.contains_key(c)) =>
            {
                self.summary.files_reread += 1;
                (fresh(), true)
            }
            Some((s, _)) if s.cursor.size == size && s.cursor.mtime_ns == mtime_ns => {
                if s.cursor.offset < size {
                    self.summary.partial_lines += 1;
                }
                if self.keep_state {
                    self.files.insert(path.to_path_buf(), s);
                }
                return Ok(false);
            }
            Some((s, current)) => (s, current),
        };
        // A cursor from an earlier run: replay the read part to rebuild the mapping state.
        if !current && state.cursor.offset > 0 {
            let mut mapper = FileMapper::new(path);
            let lines = self.replay_prefix(path, &mut mapper, state.cursor.offset)?;
            if lines == Some(state.cursor.lines) {
                state.mapper = mapper;
            } else {
                self.summary.files_reread += 1;
                state = fresh();
            }
        }
        let read = self.read_from(path, &mut state, size, mtime_ns, inode)?;
        if self.keep_state {
            self.files.insert(path.to_path_buf(), state);
        }
        Ok(read)
    }

    /// Feeds the first `end` bytes of `path` to `mapper` without producing anything. Returns
    /// the number of complete lines, or `None` when the file no longer has them.
    fn replay_prefix(
        &mut self,
        path: &Path,
        mapper: &mut FileMapper,
        end: u64,
    ) -> Result<Option<u64>, TranscriptError> {
        let file = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut buf = Vec::new();
        let mut offset = 0u64;
        let mut lines = 0u64;
        mapper.dry = true;
        let mut scratch = ImportSummary::default();
        while offset < end {
            buf.clear();
            let n = reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| io_err(path, e))? as u64;
            if n == 0 || !buf.ends_with(b"\n") || offset + n > end {
                mapper.dry = false;
                return Ok(None);
            }
            offset += n;
            lines += 1;
            let mut ctx = MapCtx {
                store: &self.store,
                sessions: &mut self.sessions,
                summary: &mut scratch,
                writes: self.pipe.as_ref(),
                task_calls: &mut self.task_calls,
            };
            let _ = mapper.feed(&mut ctx, &buf);
        }
        mapper.discard_batch();
        mapper.dry = false;
        Ok(Some(lines))
    }

    fn read_from(
        &mut self,
        path: &Path,
        state: &mut FileState,
        size: u64,
        mtime_ns: i64,
        inode: u64,
    ) -> Result<bool, TranscriptError> {
        let mut file = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
        file.seek(SeekFrom::Start(state.cursor.offset))
            .map_err(|e| io_err(path, e))?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut buf = Vec::new();
        let mut since_flush = (0usize, 0u64);
        let mut read_any = false;
        let mut partial = false;
        loop {
            buf.clear();
            let n = reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| io_err(path, e))? as u64;
            if n == 0 {
                break;
            }
            if !buf.ends_with(b"\n") {
                partial = true;
                break;
            }
            if !read_any {
                read_any = true;
                self.summary.files_read += 1;
            }
            state.cursor.offset += n;
            state.cursor.lines += 1;
            self.summary.lines += 1;
            self.summary.bytes += n;
            let line_no = state.cursor.lines;
            let mut ctx = MapCtx {
                store: &self.store,
                sessions: &mut self.sessions,
                summary: &mut self.summary,
                writes: self.pipe.as_ref(),
                task_calls: &mut self.task_calls,
            };
            if let Err(reason) = state.mapper.feed(&mut ctx, &buf) {
                self.summary
                    .errors
                    .push(format!("{}:{line_no}: {reason}", path.display()));
            }
            since_flush.0 += 1;
            since_flush.1 += n;
            if since_flush.0 >= BATCH_LINES || since_flush.1 >= BATCH_BYTES {
                state.cursor.size = size.max(state.cursor.offset);
                state.cursor.mtime_ns = mtime_ns;
                state.cursor.inode = inode;
                self.flush(&mut state.mapper, &state.cursor)?;
                since_flush = (0, 0);
                self.report();
            }
        }
        if partial {
            self.summary.partial_lines += 1;
        }
        state.cursor.size = size.max(state.cursor.offset);
        state.cursor.mtime_ns = mtime_ns;
        state.cursor.inode = inode;
        // Always store the cursor (a new file with only a partial line gets one too).
        self.flush(&mut state.mapper, &state.cursor)?;
        if state.mapper.unplaced_summaries() > 0 && !partial {
            let n = state.mapper.unplaced_summaries() as u64;
            let key = "summary without any message in its session".to_string();
            let e = self.summary.skipped_by_reason.entry(key).or_insert(0);
            *e = (*e).max(n);
        }
        Ok(read_any)
    }

    /// Commits one batch and the cursor in one write transaction: handed to the writer thread
    /// when one is running (see [`WritePipe`]), else written here.
    fn flush(
        &mut self,
        mapper: &mut FileMapper,
        cursor: &TranscriptCursor,
    ) -> Result<(), TranscriptError> {
        let batch: Batch = mapper.take_batch();
        let job = WriteJob::new(batch, cursor.clone())?;
        match &self.pipe {
            Some(pipe) => {
                self.in_flight.insert(cursor.path.clone());
                pipe.send(job)?;
            }
            None => {
                let done = job.commit(&self.store)?;
                done.add_to(&mut self.summary);
            }
        }
        Ok(())
    }

    /// Starts a writer thread for the batches to come (unless one is running); returns
    /// whether it started one.
    fn start_pipe(&mut self) -> bool {
        if self.pipe.is_some() {
            return false;
        }
        self.pipe = WritePipe::start(self.store.clone());
        self.pipe.is_some()
    }

    /// Waits for every batch handed to the writer thread, stops it and adds what it wrote to
    /// the summary. The first write error, if any, is returned.
    fn finish_pipe(&mut self) -> Result<(), TranscriptError> {
        self.in_flight.clear();
        let Some(pipe) = self.pipe.take() else {
            return Ok(());
        };
        let (done, error) = pipe.finish();
        for d in done {
            d.add_to(&mut self.summary);
        }
        match error {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Waits until every batch handed to the writer thread is committed (before reading
    /// something from the store that one of them may write).
    fn settle(&mut self) -> Result<(), TranscriptError> {
        self.in_flight.clear();
        match &self.pipe {
            Some(pipe) => Ok(pipe.settle()?),
            None => Ok(()),
        }
    }
}

/// One batch of a file and the file's cursor after it: what one write transaction commits.
struct WriteJob {
    nodes: Vec<PreparedNode>,
    edges: Vec<crate::store::Edge>,
    decisions: Vec<crate::store::DecisionPoint>,
    sessions: BTreeMap<SessionId, SessionDelta>,
    cursor: TranscriptCursor,
}

/// What a committed [`WriteJob`] added, for the summary.
#[derive(Default)]
struct Committed {
    created: BTreeMap<String, u64>,
    updated: u64,
    sessions_created: u64,
    touched: Vec<SessionId>,
    edges: u64,
    decisions: u64,
}

impl Committed {
    fn add_to(self, summary: &mut ImportSummary) {
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
    /// Encodes and tokenizes the batch's nodes (the CPU work that needs no store).
    fn new(batch: Batch, cursor: TranscriptCursor) -> Result<Self, TranscriptError> {
        let nodes = batch
            .nodes
            .iter()
            .map(PreparedNode::new)
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(Self {
            nodes,
            edges: batch.edges,
            decisions: batch.decisions,
            sessions: batch.sessions,
            cursor,
        })
    }

    /// Writes the batch and the cursor in one transaction, so a crash keeps both or neither.
    fn commit(self, store: &Store) -> Result<Committed, StoreError> {
        store.write(|w| self.write_into(w))
    }

    /// Writes several batches, in order, in one transaction: fewer commits (each one syncs
    /// the file and rewrites the index blocks it touched), and a crash still keeps whole
    /// batches with their cursors or none of them.
    fn commit_all(jobs: &[WriteJob], store: &Store) -> Result<Vec<Committed>, StoreError> {
        store.write(|w| jobs.iter().map(|j| j.write_into(w)).collect())
    }

    /// Encoded size of the batch's nodes: what coalescing batches into one commit counts.
    fn weight(&self) -> usize {
        self.nodes.iter().map(PreparedNode::encoded_len).sum()
    }

    fn write_into(&self, w: &mut crate::store::Writer<'_>) -> Result<Committed, StoreError> {
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
            w.put_transcript_cursor(&self.cursor)?;
            Ok(done)
        }
    }
}

/// A writer thread that commits batches while the importing thread reads and maps the next
/// ones: parsing and mapping lines and writing them to the store take comparable time, so
/// doing both at once nearly halves an import on two cores. Batches are committed in the
/// order they were sent, each with its file's cursor; batches that queued up while the
/// previous commit ran share one transaction. So the store after a crash is the same as
/// without the thread: a prefix of the batches. After
/// a failed commit the later batches are dropped unwritten (their cursors must not move past
/// lines that were never stored), and the error is reported by `settle` and `finish`.
pub(crate) struct WritePipe {
    jobs: Option<std::sync::mpsc::SyncSender<WriteJob>>,
    thread: Option<std::thread::JoinHandle<()>>,
    state: std::sync::Arc<(std::sync::Mutex<PipeState>, std::sync::Condvar)>,
}

#[derive(Default)]
struct PipeState {
    sent: u64,
    finished: u64,
    done: Vec<Committed>,
    error: Option<StoreError>,
}

impl WritePipe {
    /// `None` when no thread can be started (the caller then writes batches itself).
    fn start(store: Store) -> Option<Self> {
        // A few batches may wait while one is written: they are then committed together, and
        // memory stays bounded.
        let (tx, rx) = std::sync::mpsc::sync_channel::<WriteJob>(QUEUED_BATCHES);
        let state = std::sync::Arc::new((
            std::sync::Mutex::new(PipeState::default()),
            std::sync::Condvar::new(),
        ));
        let shared = state.clone();
        let thread = std::thread::Builder::new()
            .name("import-writer".into())
            .spawn(move || {
                let (lock, cv) = &*shared;
                while let Ok(first) = rx.recv() {
                    // Whatever else is queued joins this commit, up to COMMIT_BYTES.
                    let mut weight = first.weight();
                    let mut jobs = vec![first];
                    while weight < COMMIT_BYTES {
                        let Ok(next) = rx.try_recv() else { break };
                        weight += next.weight();
                        jobs.push(next);
                    }
                    let failed = lock.lock().map(|s| s.error.is_some()).unwrap_or(true);
                    let result = if failed {
                        None
                    } else {
                        Some(WriteJob::commit_all(&jobs, &store))
                    };
                    let Ok(mut st) = lock.lock() else { return };
                    match result {
                        Some(Ok(done)) => st.done.extend(done),
                        Some(Err(e)) => st.error = Some(e),
                        None => {}
                    }
                    st.finished += jobs.len() as u64;
                    cv.notify_all();
                }
            })
            .ok()?;
        Some(Self {
            jobs: Some(tx),
            thread: Some(thread),
            state,
        })
    }

    fn send(&self, job: WriteJob) -> Result<(), TranscriptError> {
        let Some(tx) = &self.jobs else {
            return Err(TranscriptError::Store(StoreError::Io(
                "import writer stopped".into(),
            )));
        };
        {
            let (lock, _) = &*self.state;
            let mut st = lock.lock().map_err(|_| poisoned())?;
            if let Some(e) = &st.error {
                return Err(TranscriptError::Store(e.clone()));
            }
            st.sent += 1;
        }
        tx.send(job)
            .map_err(|_| TranscriptError::Store(StoreError::Io("import writer stopped".into())))
    }

    /// Blocks until every batch sent so far is committed; fails if one could not be.
    pub(crate) fn settle(&self) -> Result<(), StoreError> {
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

    /// Stops the thread once it has handled every batch; returns what was committed and the
    /// first error.
    fn finish(mut self) -> (Vec<Committed>, Option<StoreError>) {
        drop(self.jobs.take());
        let joined = self.thread.take().map(std::thread::JoinHandle::join);
        let (lock, _) = &*self.state;
        let Ok(mut st) = lock.lock() else {
            return (Vec::new(), Some(poisoned_store()));
        };
        let mut error = st.error.take();
        if matches!(joined, Some(Err(_))) && error.is_none() {
            error = Some(StoreError::Io("import writer thread panicked".into()));
        }
        (std::mem::take(&mut st.done), error)
    }
}

fn poisoned_store() -> StoreError {
    StoreError::Io("import writer thread panicked".into())
}

fn poisoned() -> TranscriptError {
    TranscriptError::Store(poisoned_store())
}

fn io_err(path: &Path, e: std::io::Error) -> TranscriptError {
    TranscriptError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// The first line of `text`, at most 80 characters.
fn title_excerpt(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("untitled");
    let mut t: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        t.push('…');
    }
    t
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
    if let Some(t) = summary {
        s.title = title_excerpt(&t);
    } else if s.title.is_empty()
        && let Some(q) = &d.first_query
    {
        s.title = title_excerpt(q);
    }
    s
}

/// The default transcript root: `${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects`.
pub fn default_root() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir).join("projects"));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| PathBuf::from(h).join(".claude").join("projects"))
}

/// The transcript files under `paths` (files are taken as given; folders are searched for
/// `*.jsonl`, subagent folders included), sorted so a session's main file comes before its
/// subagents. A missing path is an error; unreadable folders are reported in `errors`.
pub fn discover(
    paths: &[PathBuf],
    errors: &mut Vec<String>,
) -> Result<Vec<PathBuf>, TranscriptError> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| TranscriptError::Io {
            path: p.display().to_string(),
            reason: if e.kind() == std::io::ErrorKind::NotFound {
                "does not exist".into()
            } else {
                e.to_string()
            },
        })?;
        if meta.is_file() {
            out.push(std::path::absolute(p).unwrap_or_else(|_| p.clone()));
        } else {
            let root = std::path::absolute(p).unwrap_or_else(|_| p.clone());
            walk(&root, &mut out, errors);
        }
    }
    sort_transcripts(&mut out);
    out.dedup();
    Ok(out)
}

/// Sorts paths by their bytes, which puts `<session>.jsonl` before `<session>/subagents/…`
/// (component order would not), so a subagent's Task call is in the store before its thread.
pub fn sort_transcripts(paths: &mut [PathBuf]) {
    paths.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<String>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push(format!("{}: {e}", dir.display()));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        // Symlinked folders are not followed (no cycles); symlinked files are read.
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            walk(&path, out, errors);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

/// Parses `--since`: `YYYY-MM-DD`, an RFC 3339 time, or a span back from now (`90d`, `12h`).
pub fn parse_since(text: &str) -> Result<SystemTime, TranscriptError> {
    let t = text.trim();
    let bad = || {
        TranscriptError::Invalid(format!(
            "--since '{text}': expected YYYY-MM-DD, an RFC 3339 time or a span like 90d / 12h"
        ))
    };
    if let Some(n) = t.strip_suffix('d').or_else(|| t.strip_suffix('h')) {
        let n: u64 = n.parse().map_err(|_| bad())?;
        let secs = if t.ends_with('d') {
            n * 86_400
        } else {
            n * 3_600
        };
        return Ok(SystemTime::now() - std::time::Duration::from_secs(secs));
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Ok(SystemTime::from(dt.with_timezone(&Utc)));
    }
    let date = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").map_err(|_| bad())?;
    let dt = date.and_hms_opt(0, 0, 0).ok_or_else(bad)?.and_utc();
    Ok(SystemTime::from(dt))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn stable_ids_are_deterministic_and_time_ordered() {
        let t1 = DateTime::parse_from_rfc3339("2025-01-01T00:00:00.000Z")
            .unwrap()
            .with_timezone(&Utc);
        let t2 = DateTime::parse_from_rfc3339("2025-01-01T00:00:00.001Z")
            .unwrap()
            .with_timezone(&Utc);
        let a = stable_uuid(t1, 0, &[b"s", b"u"]);
        assert_eq!(a, stable_uuid(t1, 0, &[b"s", b"u"]));
        assert_ne!(a, stable_uuid(t1, 0, &[b"s", b"v"]));
        assert_ne!(
            stable_uuid(t1, 0, &[b"su"]),
            stable_uuid(t1, 0, &[b"s", b"u"])
        );
        assert!(stable_uuid(t2, 0, &[b"a"]) > stable_uuid(t1, 5, &[b"z"]));
        assert!(stable_uuid(t1, 2, &[b"a"]) > stable_uuid(t1, 1, &[b"z"]));
        assert_eq!(a.get_version_num(), 7);
    }

    #[test]
    fn since_accepts_dates_times_and_spans() {
        assert!(parse_since("2025-03-01").is_ok());
        assert!(parse_since("2025-03-01T10:00:00Z").is_ok());
        assert!(parse_since("90d").unwrap() < SystemTime::now());
        let err = parse_since("yesterday").unwrap_err().to_string();
        assert!(err.contains("--since 'yesterday'"), "{err}");
    }
}
