//! The import driver: which files have new bytes (per-file cursors, replaced and truncated
//! files, sessions deleted since), reading their lines into the mapper in batches, and
//! handing each batch with its cursor to the writer thread.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use super::claude_code::{Batch, FileMapper, MapCtx, RunTaskCalls};
use super::write::{Finished, WriteJob, WritePipe};
use super::{BATCH_BYTES, BATCH_LINES, ImportSummary, Progress, TranscriptError};
use crate::store::dict::DictFeed;
use crate::store::{SessionId, SessionSource, Store, TranscriptCursor};

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
    /// The dictionary feed of the last writer thread, for the next: a store without a
    /// dictionary gets one once the records of all its syncs add up to a training.
    dict_feed: Option<DictFeed>,
    /// Files whose cursor is in a batch the writer thread may not have committed yet.
    in_flight: HashSet<String>,
    task_calls: RunTaskCalls,
    /// The read buffer, kept from file to file (see [`Buffered`]).
    read_buf: Vec<u8>,
    /// Set from outside (Ctrl-C) to end [`Importer::import_files`] early (see
    /// [`Importer::stop_on`]).
    stop: Option<Arc<AtomicBool>>,
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
            dict_feed: None,
            in_flight: HashSet::new(),
            task_calls: RunTaskCalls::default(),
            read_buf: Vec::new(),
            stop: None,
        })
    }

    /// Keeps per-file mapping state in memory between syncs (for `--watch`).
    pub fn keep_state(mut self) -> Self {
        self.keep_state = true;
        self
    }

    /// Forgets what this importer holds in memory of files and sessions and reads it again
    /// from the store, after a write failed: what was committed stays, and each file is
    /// read again from its stored cursor, so nothing is lost or imported twice. The failed
    /// round's summary is dropped (its lines are counted when read again).
    pub fn resync(&mut self) -> Result<(), TranscriptError> {
        self.pipe = None;
        self.in_flight.clear();
        self.files.clear();
        self.summary = ImportSummary::default();
        let fresh = Importer::new(self.store.clone())?;
        self.sessions = fresh.sessions;
        Ok(())
    }

    /// Ends [`Importer::import_files`] before the next file once `flag` is set, the summary
    /// marked `interrupted`. It stops between files, never inside one: a file's cursor
    /// records the file read to its end, so a file left half-read would count as read on the
    /// next run. Every file read before the stop is committed whole; the next run goes on
    /// from the first file not read.
    pub fn stop_on(&mut self, flag: Arc<AtomicBool>) {
        self.stop = Some(flag);
    }

    /// Calls `f` as files and batches complete.
    pub fn on_progress(&mut self, f: impl FnMut(Progress) + Send + 'static) {
        self.progress = Some(Box::new(f));
    }

    /// The store, once the import is over (with its page cache still warm).
    pub fn into_store(mut self) -> Store {
        // An import that was not finished stops its writer thread here.
        self.pipe = None;
        self.store
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
            if self
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
            {
                self.summary.interrupted = true;
                break;
            }
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
            // Claude Code names a session's file (and a subagent's folder) by the session id;
            // a file named otherwise does not say which session it fed, and was read again on
            // every run.
            Some((s, false))
                if s.cursor.lines > 0
                    && s.mapper.file_session().is_some_and(|c| {
                        uuid::Uuid::parse_str(c).is_ok() && !self.sessions.contains_key(c)
                    }) =>
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
        // Resuming is rare: this buffer is not kept.
        let mut read_buf = Vec::new();
        let mut reader = Buffered::new(file, &mut read_buf);
        let mut buf = Vec::new();
        let mut offset = 0u64;
        let mut lines = 0u64;
        mapper.dry = true;
        let mut scratch = ImportSummary::default();
        while offset < end {
            let line =
                read_line(&mut reader, &mut buf, MAX_LINE_BYTES).map_err(|e| io_err(path, e))?;
            let n = line.len;
            if n == 0 || !line.complete || offset + n > end {
                mapper.dry = false;
                return Ok(None);
            }
            offset += n;
            lines += 1;
            if line.too_long {
                continue;
            }
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
        let mut read_buf = std::mem::take(&mut self.read_buf);
        let read = self.read_lines(
            path,
            state,
            &mut Buffered::new(file, &mut read_buf),
            (size, mtime_ns, inode),
        );
        self.read_buf = read_buf;
        read
    }

    /// [`Importer::read_from`] once the file is open at the cursor.
    fn read_lines(
        &mut self,
        path: &Path,
        state: &mut FileState,
        reader: &mut impl BufRead,
        (size, mtime_ns, inode): (u64, i64, u64),
    ) -> Result<bool, TranscriptError> {
        let mut buf = Vec::new();
        let mut since_flush = (0usize, 0u64);
        let mut read_any = false;
        let mut partial = false;
        loop {
            let line = read_line(reader, &mut buf, MAX_LINE_BYTES).map_err(|e| io_err(path, e))?;
            let n = line.len;
            if n == 0 {
                break;
            }
            if !line.complete {
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
            if line.too_long {
                ctx.summary.errors.push(format!(
                    "{}:{line_no}: line of {:.1} MB is longer than the {} MB a line may have; skipped",
                    path.display(),
                    n as f64 / 1e6,
                    MAX_LINE_BYTES >> 20
                ));
            } else if let Err(reason) = state.mapper.feed(&mut ctx, &buf) {
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
        if size == 0 {
            *self
                .summary
                .skipped_by_reason
                .entry("empty file".into())
                .or_insert(0) += 1;
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
        match &self.pipe {
            Some(pipe) => {
                self.in_flight.insert(cursor.path.clone());
                pipe.send(batch, cursor.clone())?;
            }
            None => {
                // Without the threads no dictionary is trained: the store's is used.
                let mut feed = DictFeed::existing(&self.store);
                let done = WriteJob::new(batch, cursor.clone(), &mut feed)?.commit(&self.store)?;
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
        // A feed still gathering is dropped once the store has a dictionary (another process
        // trained one): new records are compressed with that.
        let feed = match self.dict_feed.take() {
            Some(f) if f.dict().is_some() || self.store.record_dict().is_none() => f,
            _ => DictFeed::new(&self.store),
        };
        self.pipe = WritePipe::start(self.store.clone(), feed);
        self.pipe.is_some()
    }

    /// Waits for every batch handed to the writer thread, stops it and adds what it wrote to
    /// the summary. The first write error, if any, is returned.
    fn finish_pipe(&mut self) -> Result<(), TranscriptError> {
        self.in_flight.clear();
        let Some(pipe) = self.pipe.take() else {
            return Ok(());
        };
        let Finished { done, error, feed } = pipe.finish();
        self.dict_feed = feed;
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

/// Bytes read from a file at a time.
const READ_BUFFER_BYTES: usize = 1 << 20;

/// A buffered reader over a buffer the importer keeps: a fresh megabyte for each of thousands
/// of small files was memory the kernel had to clear every time.
struct Buffered<'b, R> {
    inner: R,
    buf: &'b mut Vec<u8>,
    pos: usize,
    end: usize,
}

impl<'b, R: Read> Buffered<'b, R> {
    fn new(inner: R, buf: &'b mut Vec<u8>) -> Self {
        if buf.len() != READ_BUFFER_BYTES {
            buf.resize(READ_BUFFER_BYTES, 0);
        }
        Self {
            inner,
            buf,
            pos: 0,
            end: 0,
        }
    }
}

impl<R: Read> Read for Buffered<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(out.len());
        out[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Buffered<'_, R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos >= self.end {
            self.end = self.inner.read(&mut self.buf[..])?;
            self.pos = 0;
        }
        Ok(&self.buf[self.pos..self.end])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.end);
    }
}

/// The longest transcript line read: a longer one is skipped with a `file:line` warning, and
/// never held in memory whole (Claude Code's largest lines, tool results with images, stay
/// far below this).
pub const MAX_LINE_BYTES: u64 = 32 << 20;

/// What [`read_line`] read.
struct Line {
    /// Bytes consumed, the newline included.
    len: u64,
    /// Whether the line ended with a newline (else the file ended first).
    complete: bool,
    /// Whether the line was longer than the cap: then `buf` is left empty.
    too_long: bool,
}

/// Reads the next line (up to and including its `\n`) into `buf`, keeping at most `cap`
/// bytes of it: the rest of a longer line is read past, not stored.
fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, cap: u64) -> std::io::Result<Line> {
    buf.clear();
    let mut len = 0u64;
    let mut too_long = false;
    loop {
        let avail = match reader.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(Line {
                len,
                complete: false,
                too_long,
            });
        }
        let (take, ends) = match find_newline(avail) {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        if !too_long {
            if len + take as u64 > cap {
                too_long = true;
                *buf = Vec::new();
            } else {
                buf.extend_from_slice(&avail[..take]);
            }
        }
        len += take as u64;
        reader.consume(take);
        if ends {
            return Ok(Line {
                len,
                complete: true,
                too_long,
            });
        }
    }
}

/// Where the first `\n` of `bytes` is: eight bytes at a time (a byte-by-byte search was a
/// tenth of the reading thread's time).
fn find_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const NEWLINES: u64 = u64::from_ne_bytes([b'\n'; 8]);
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        // A zero byte of `x` (a newline of the chunk) sets its high bit here; no other byte
        // can before the first zero one.
        let x = u64::from_ne_bytes(word) ^ NEWLINES;
        if x.wrapping_sub(ONES) & !x & HIGHS != 0 {
            return chunk.iter().position(|&b| b == b'\n').map(|i| at + i);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| at + i)
}

fn io_err(path: &Path, e: std::io::Error) -> TranscriptError {
    TranscriptError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    /// A reader that hands out at most `step` bytes a call.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn the_kept_buffer_reads_the_same_lines_file_after_file() {
        let mut kept = Vec::new();
        let texts: [&[u8]; 3] = [b"{\"a\":1}\n\nsecond\nlast", b"", b"one\n"];
        for text in texts {
            for step in [1, 5, 4096] {
                let mut want = Vec::new();
                let mut r = BufReader::new(text);
                let mut got = Vec::new();
                let mut b = Buffered::new(Trickle(text, step), &mut kept);
                let mut buf = Vec::new();
                loop {
                    let w = read_line(&mut r, &mut buf, 64).unwrap();
                    want.push((w.len, w.complete, buf.clone()));
                    let g = read_line(&mut b, &mut buf, 64).unwrap();
                    got.push((g.len, g.complete, buf.clone()));
                    if w.len == 0 {
                        break;
                    }
                }
                assert_eq!(got, want, "step {step}");
                let mut rest = Vec::new();
                b.read_to_end(&mut rest).unwrap();
                assert!(rest.is_empty());
            }
        }
        assert_eq!(kept.len(), READ_BUFFER_BYTES);
    }

    fn lines(text: &[u8], cap: u64, chunk: usize) -> Vec<(u64, bool, bool, Vec<u8>)> {
        let mut r = BufReader::with_capacity(chunk, text);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let l = read_line(&mut r, &mut buf, cap).unwrap();
            if l.len == 0 {
                return out;
            }
            out.push((l.len, l.complete, l.too_long, buf.clone()));
        }
    }

    #[test]
    fn a_line_over_the_cap_is_read_past_without_being_kept() {
        let mut text = b"{\"a\":1}\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', 100));
        text.extend_from_slice(b"\nlast");
        for chunk in [1, 3, 8, 4096] {
            let got = lines(&text, 16, chunk);
            assert_eq!(got.len(), 3, "chunk {chunk}");
            assert_eq!(got[0], (8, true, false, b"{\"a\":1}\n".to_vec()));
            assert_eq!(got[1], (101, true, true, Vec::new()));
            assert_eq!(got[2], (4, false, false, b"last".to_vec()));
        }
    }

    #[test]
    fn the_newline_search_finds_the_first_one() {
        for len in 0..40 {
            for nl in 0..=len {
                let mut bytes: Vec<u8> = (0..len).map(|i| b'a' + (i % 7) as u8).collect();
                // Bytes around a newline's value, which a word-at-a-time test might confuse.
                for (i, b) in bytes.iter_mut().enumerate() {
                    if i % 5 == 1 {
                        *b = [0x0b, 0x09, 0x8a, 0xff, 0x00][i % 4];
                    }
                }
                if nl < len {
                    bytes[nl] = b'\n';
                    if nl + 3 < len {
                        bytes[nl + 3] = b'\n';
                    }
                }
                let want = bytes.iter().position(|&b| b == b'\n');
                assert_eq!(find_newline(&bytes), want, "{bytes:?}");
            }
        }
    }

    #[test]
    fn a_line_exactly_at_the_cap_is_kept() {
        let got = lines(b"0123456\n", 8, 2);
        assert_eq!(got, vec![(8, true, false, b"0123456\n".to_vec())]);
    }
}
